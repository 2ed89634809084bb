//! The proxy's own results in both protocol eras: in the 2026-07-28 stateless era every result
//! must carry `"resultType": "complete"` (clients of that era reject one without it, so a
//! refusal would be lost), while an older-era result is left exactly as before. Results the
//! server writes are forwarded untouched in both eras (control: the fixture's own results never
//! gain a `resultType`).

mod proxy_support;

use proxy_support::*;
use serde_json::{json, Value};

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
           "io.modelcontextprotocol/clientCapabilities": {}})
}

fn stateless_call(s: &mut Session, id: i64, tool: &str, args: Value) -> Value {
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": tool, "arguments": args, "_meta": meta()}}));
    s.response_to(&json!(id))
}

#[test]
fn a_stateless_denial_is_a_complete_result() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}));
    s.response_to(&json!(1));

    let r = stateless_call(
        &mut s,
        2,
        "read_file",
        json!({"path": t.p("outside/secret.txt")}),
    );
    assert!(is_denial(&r), "{r}");
    assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");

    // Control: the server's own result passes as the server wrote it (no resultType added).
    let r = stateless_call(&mut s, 3, "read_file", json!({"path": t.p("scope/a.txt")}));
    assert_eq!(result_text(&r), "alpha", "{r}");
    assert!(r["result"].get("resultType").is_none(), "{r}");

    // A JSON-RPC error is not a result: nothing to stamp.
    let mut opts = Opts::new(&t);
    opts.proxy_args = vec!["--deny-as".into(), "error".into()];
    let mut s = Session::start(&t, opts);
    let r = stateless_call(
        &mut s,
        4,
        "read_file",
        json!({"path": t.p("outside/secret.txt")}),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(r.get("result").is_none(), "{r}");
}

#[test]
fn an_older_era_denial_is_unchanged() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let r = s.call("read_file", json!({"path": t.p("outside/secret.txt")}));
    assert!(is_denial(&r), "{r}");
    let keys: Vec<&String> = r["result"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["_meta", "content", "isError"], "{r}");
}
