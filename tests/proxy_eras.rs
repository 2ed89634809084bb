//! Both protocol eras: the 2026-07-28 stateless core (`server/discover`, per-request `_meta`,
//! no `initialize`) is forwarded unchanged and its calls are still checked.

mod proxy_support;

use proxy_support::*;
use serde_json::json;

fn meta() -> serde_json::Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

#[test]
fn stateless_discover_is_forwarded_unchanged_and_calls_are_checked() {
    let t = Tree::new();
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}});
    let mut direct = Session::start(
        &t,
        Opts {
            direct: true,
            ..Opts::new(&t)
        },
    );
    direct.send(&discover);
    let want = direct.recv_raw();
    let mut s = Session::start(&t, Opts::new(&t));
    s.send(&discover);
    assert_eq!(
        s.recv_raw(),
        want,
        "server/discover must pass byte for byte"
    );

    let call = |id: i64, path: String| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "read_file", "arguments": {"path": path}, "_meta": meta()}})
    };
    s.send(&call(2, "../outside/secret.txt".into()));
    let r = s.response_to(&json!(2));
    assert!(is_denial(&r), "{r}");
    s.send(&call(3, t.p("scope/a.txt")));
    let r = s.response_to(&json!(3));
    assert_eq!(result_text(&r), "alpha", "{r}");
    assert!(s.fixture_calls().iter().all(|c| !c.contains("secret")));
}

#[test]
fn a_call_before_any_handshake_waits_for_the_tool_list() {
    let t = Tree::new();
    // The cwd is T, so `x.txt` is outside the scope and only the schema marks it as a path:
    // if the call were judged before the tool list arrived, it would pass.
    let mut opts = Opts::new(&t);
    opts.cwd = t.root();
    let mut s = Session::start(&t, opts);
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "write_file", "arguments": {"path": "x.txt", "content": "c"}, "_meta": meta()}}));
    let r = s.response_to(&json!(1));
    assert!(is_denial(&r), "{r}");
    assert!(!std::path::Path::new(&t.p("x.txt")).exists());
}

#[test]
fn server_requests_progress_and_cancellation_pass_through_untouched() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_ASK_ROOTS", "1".into()));
    let mut s = Session::start(&t, opts);
    // No roots capability: the proxy itself never asks, only the server does.
    s.initialize();
    let ask = s.recv();
    assert_eq!(ask["method"], json!("roots/list"), "{ask}");
    assert_eq!(ask["id"], json!("fx-roots-1"));
    let answer =
        r#"{"jsonrpc":"2.0","id":"fx-roots-1","result":{"roots":[],"_meta":{"vendor/x":1}}}"#;
    s.send_raw(format!("{answer}\n").as_bytes());
    let got = s.wait_stderr("FIXTURE-RESPONSE");
    assert!(got.contains("vendor/x"), "{got}");
    for note in [
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user","_meta":{"v":1}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":2}}"#,
    ] {
        s.send_raw(format!("{note}\n").as_bytes());
        let line = s.wait_stderr("FIXTURE-NOTIFICATION");
        assert_eq!(
            line,
            format!("FIXTURE-NOTIFICATION {note}"),
            "not byte for byte"
        );
    }
}
