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
fn the_first_roots_narrow_the_jail_before_the_server_has_state_and_wider_roots_do_not_widen_it() {
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

    // The first call waits for the roots. The server asks too; whichever question reaches the
    // proxy first is the only one the client gets (the other is answered with its answer).
    s.send(&json!({"jsonrpc": "2.0", "id": "pid1", "method": "tools/call", "params": {"name": "pid", "arguments": {}}}));
    let ask = s.recv();
    assert_eq!(ask["method"], json!("roots/list"), "{ask}");
    let sub = vec![t.p("scope/sub")];
    answer_roots(&mut s, &ask["id"], &sub);
    s.wait_stderr("respawning the server under a narrower jail");
    // The respawned server asks again; the proxy answers it with the client's roots.
    let got = s.wait_stderr("FIXTURE-RESPONSE");
    assert!(
        got.contains("fx-roots-1") && got.contains("scope/sub"),
        "{got}"
    );
    // Respawned under the narrower jail before the call reached any server: the call is
    // answered (not failed), and the new server's own roots/list is answered by the proxy.
    let r = until_response(&mut s, &json!("pid1"), None, &mut stash);
    let pid1: u32 = result_text(&r).parse().unwrap();

    let r = call(
        &mut s,
        "a2",
        "read_file",
        json!({"path": t.p("scope/a.txt")}),
        None,
        &mut stash,
    );
    assert!(is_denial(&r), "{r}");
    let r = call(
        &mut s,
        "b2",
        "read_file",
        json!({"path": t.p("scope/sub/b.txt")}),
        None,
        &mut stash,
    );
    assert_eq!(result_text(&r), "beta", "{r}");
    assert!(
        stash.is_empty(),
        "roots/list the server never sent: {stash:?}"
    );

    // Wider roots later: nothing widens. The proxy asks when the next call needs them, once.
    let wide = vec![t.p("scope")];
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    s.send(
        &json!({"jsonrpc": "2.0", "id": "a3", "method": "tools/call",
                   "params": {"name": "read_file", "arguments": {"path": t.p("scope/a.txt")}}}),
    );
    let ask = s.recv();
    assert_eq!(ask["method"], json!("roots/list"), "{ask}");
    answer_roots(&mut s, &ask["id"], &wide);
    let r = until_response(&mut s, &json!("a3"), None, &mut stash);
    assert!(is_denial(&r), "wider roots widened the scope: {r}");
    let r = call(&mut s, "pid3", "pid", json!({}), None, &mut stash);
    assert_eq!(
        result_text(&r).parse::<u32>().unwrap(),
        pid1,
        "no respawn for wider roots"
    );
    assert!(stash.is_empty(), "asked twice: {stash:?}");

    // Narrower roots later: the server has state now, so only the proxy's checks narrow.
    std::fs::create_dir(t.root().join("scope/sub/deep")).unwrap();
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    s.send(
        &json!({"jsonrpc": "2.0", "id": "b4", "method": "tools/call",
                   "params": {"name": "read_file", "arguments": {"path": t.p("scope/sub/b.txt")}}}),
    );
    let ask = s.recv();
    assert_eq!(ask["method"], json!("roots/list"), "{ask}");
    answer_roots(&mut s, &ask["id"], &[t.p("scope/sub/deep")]);
    let r = until_response(&mut s, &json!("b4"), None, &mut stash);
    assert!(is_denial(&r), "later roots did not narrow the checks: {r}");
    s.wait_stderr("the proxy's checks narrow now");
    let r = call(&mut s, "pid4", "pid", json!({}), None, &mut stash);
    assert_eq!(
        result_text(&r).parse::<u32>().unwrap(),
        pid1,
        "a server with state was respawned"
    );

    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid1}")).exists(),
        "server {pid1} left behind"
    );
}
