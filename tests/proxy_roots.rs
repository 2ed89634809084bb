//! Client roots narrow the scope; a narrower scope respawns the server under a narrower jail,
//! invisibly to the client; the jail is never widened in place.

mod proxy_support;

use proxy_support::*;
use serde_json::{json, Value};

/// Read until the response to `id`, answering every `roots/list` request with `roots`
/// (`None`: keep them in `unanswered` to answer later).
fn until_response(
    s: &mut Session,
    id: &Value,
    roots: Option<&[String]>,
    unanswered: &mut Vec<Value>,
) -> Value {
    loop {
        let m = s.recv();
        if m["method"] == json!("roots/list") {
            match roots {
                Some(r) => answer_roots(s, &m["id"], r),
                None => unanswered.push(m["id"].clone()),
            }
            continue;
        }
        if m.get("id") == Some(id) && m.get("method").is_none() {
            return m;
        }
    }
}

fn answer_roots(s: &mut Session, id: &Value, roots: &[String]) {
    let list: Vec<Value> = roots
        .iter()
        .map(|r| json!({"uri": format!("file://{r}"), "name": "r"}))
        .collect();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"roots": list}}));
}

fn call(
    s: &mut Session,
    id: &str,
    tool: &str,
    args: Value,
    roots: Option<&[String]>,
    stash: &mut Vec<Value>,
) -> Value {
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}));
    until_response(s, &json!(id), roots, stash)
}

#[test]
fn narrower_roots_respawn_the_server_and_wider_roots_do_not_widen_it() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_ASK_ROOTS", "1".into()));
    opts.proxy_args = vec!["--log".into()];
    let mut s = Session::start(&t, opts);
    let mut stash = Vec::new();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "roots-test", "version": "0"}}}),
    );
    let init = until_response(&mut s, &json!("init"), None, &mut stash);
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    // Before the roots are known, the whole argv scope applies.
    let r = call(&mut s, "pid1", "pid", json!({}), None, &mut stash);
    let pid1: u32 = result_text(&r).parse().unwrap();
    let r = call(
        &mut s,
        "a1",
        "read_file",
        json!({"path": t.p("scope/a.txt")}),
        None,
        &mut stash,
    );
    assert_eq!(result_text(&r), "alpha", "{r}");

    // A call in flight at the old server when the roots arrive.
    s.send(&json!({"jsonrpc": "2.0", "id": "blk", "method": "tools/call", "params": {"name": "block", "arguments": {}}}));
    s.wait_stderr("\"tool\":\"block\"");
    // Both the server and the proxy asked for the roots.
    while stash.len() < 2 {
        let m = s.recv();
        assert_eq!(m["method"], json!("roots/list"), "{m}");
        stash.push(m["id"].clone());
    }
    let sub = vec![t.p("scope/sub")];
    for id in std::mem::take(&mut stash) {
        answer_roots(&mut s, &id, &sub);
    }
    let r = until_response(&mut s, &json!("blk"), Some(&sub), &mut stash);
    assert_eq!(r["error"]["code"], json!(-32603), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("narrower jail"),
        "{r}"
    );

    let r = call(&mut s, "pid2", "pid", json!({}), Some(&sub), &mut stash);
    let pid2: u32 = result_text(&r).parse().unwrap();
    assert_ne!(pid1, pid2, "the server was not respawned");
    s.wait_stderr("respawning the server under a narrower jail");

    // The proxy's checks follow the narrower scope at once.
    let r = call(
        &mut s,
        "a2",
        "read_file",
        json!({"path": t.p("scope/a.txt")}),
        Some(&sub),
        &mut stash,
    );
    assert!(is_denial(&r), "{r}");
    let r = call(
        &mut s,
        "b2",
        "read_file",
        json!({"path": t.p("scope/sub/b.txt")}),
        Some(&sub),
        &mut stash,
    );
    assert_eq!(result_text(&r), "beta", "{r}");

    // Wider roots later: nothing widens.
    let wide = vec![t.p("scope")];
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    // The proxy asks again; its answer is processed before the next call (client order).
    loop {
        let m = s.recv();
        if m["method"] == json!("roots/list") {
            answer_roots(&mut s, &m["id"], &wide);
            break;
        }
    }
    let r = call(
        &mut s,
        "a3",
        "read_file",
        json!({"path": t.p("scope/a.txt")}),
        Some(&wide),
        &mut stash,
    );
    assert!(is_denial(&r), "wider roots widened the scope: {r}");
    let r = call(&mut s, "pid3", "pid", json!({}), Some(&wide), &mut stash);
    assert_eq!(
        result_text(&r).parse::<u32>().unwrap(),
        pid2,
        "no respawn for wider roots"
    );

    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    for pid in [pid1, pid2] {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "server {pid} left behind"
        );
    }
}
