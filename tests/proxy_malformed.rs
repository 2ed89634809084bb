//! Malformed client input: each bad line gets the right JSON-RPC error, nothing is forwarded,
//! and the proxy keeps serving.

mod proxy_support;

use proxy_support::*;
use serde_json::json;

fn session(t: &Tree) -> Session {
    let mut opts = Opts::new(t);
    opts.proxy_args = vec!["--max-line-bytes".into(), "4096".into()];
    let mut s = Session::start(t, opts);
    s.initialize();
    s
}

fn expect_error(s: &mut Session, line: &[u8], code: i64) -> serde_json::Value {
    s.send_raw(line);
    let r = s.recv();
    assert_eq!(
        r["error"]["code"],
        json!(code),
        "for {:?}: {r}",
        String::from_utf8_lossy(line)
    );
    // Still serving.
    let pong = s.request("ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
    r
}

#[test]
fn malformed_lines_get_errors_and_are_not_forwarded() {
    let t = Tree::new();
    let mut s = session(&t);
    let secret = t.p("outside/secret.txt");
    let r = expect_error(&mut s, b"this is not json\n", -32700);
    assert_eq!(r["id"], json!(null));
    expect_error(
        &mut s,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"\n",
        -32700,
    );
    // Not UTF-8 (a lone 0xff inside a string).
    let mut bad = format!("{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"{secret}").into_bytes();
    bad.push(0xff);
    bad.extend_from_slice(b"\"}}}\n");
    expect_error(&mut s, &bad, -32700);
    // Batches are refused whole, even if each element would pass.
    let batch = format!("[{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"{secret}\"}}}}}}]\n");
    expect_error(&mut s, batch.as_bytes(), -32600);
    for scalar in ["42\n", "\"tools/call\"\n", "null\n", "true\n"] {
        expect_error(&mut s, scalar.as_bytes(), -32600);
    }
    // Duplicate keys: serde_json would keep the last (in scope), a server may keep the first.
    let dup = format!("{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"{secret}\",\"path\":\"{}\"}}}}}}\n", t.p("scope/a.txt"));
    let r = expect_error(&mut s, dup.as_bytes(), -32602);
    assert_eq!(r["id"], json!(4));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("duplicate key"),
        "{r}"
    );
    // Duplicate top-level members are refused too.
    let dup_top = format!("{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"{secret}\"}}}},\"params\":{{\"name\":\"echo\",\"arguments\":{{}}}}}}\n");
    expect_error(&mut s, dup_top.as_bytes(), -32600);
    // Over-long: consumed up to its newline, answered, and the stream continues.
    let long = format!("{{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"{secret}\",\"pad\":\"{}\"}}}}}}\n", "x".repeat(10_000));
    expect_error(&mut s, long.as_bytes(), -32600);
    // Bad shapes of a tools/call.
    expect_error(
        &mut s,
        b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"arguments\":{}}}\n",
        -32602,
    );
    expect_error(&mut s, b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"read_file\",\"arguments\":[\"/etc/passwd\"]}}\n", -32602);
    // A message without method that is not a response.
    expect_error(&mut s, b"{\"jsonrpc\":\"2.0\",\"id\":9}\n", -32600);
    // An escaped method name is still a tools/call.
    let escaped = format!("{{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools\\/call\",\"params\":{{\"name\":\"read_file\",\"arguments\":{{\"path\":\"{secret}\"}}}}}}\n");
    s.send_raw(escaped.as_bytes());
    let r = s.recv();
    assert!(is_denial(&r), "{r}");
    s.barrier();
    let calls = s.fixture_calls();
    assert!(
        calls.iter().all(|c| c.contains("barrier-")),
        "forwarded: {calls:?}"
    );
}

#[test]
fn crlf_lines_are_accepted() {
    let t = Tree::new();
    let mut s = session(&t);
    s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r\n");
    let r = s.recv();
    assert_eq!(r["id"], json!("crlf"), "{r}");
}

/// What JSON allows is forwarded (a lone UTF-16 surrogate escape, as the TypeScript SDK sends
/// for such JavaScript strings), and a line that must be refused still answers its own id when
/// it can be read (not UTF-8; a byte-order mark), so no client is left waiting.
#[test]
fn valid_json_is_forwarded_and_refusals_answer_their_own_id() {
    let t = Tree::new();
    let mut s = session(&t);
    s.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"a\\ud800b\"}}}\n",
    );
    // The proxy judged it (the argument holds no path) and forwarded it: the fixture, whose
    // JSON parser cannot hold a lone surrogate either, reports the line as its own problem —
    // exactly what it does when the client talks to it directly. The proxy sent no refusal:
    // the next answer the client reads is the barrier's.
    s.wait_stderr("FIXTURE-BAD-LINE");
    let next = s.recv_next_answer_after_ping();
    assert_ne!(
        next["id"],
        json!(21),
        "the proxy refused the lone surrogate: {next}"
    );
    // Not UTF-8: refused, but with the request's id.
    let mut bad = b"{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"".to_vec();
    bad.push(0xff);
    bad.extend_from_slice(b"\"}}}\n");
    let r = expect_error(&mut s, &bad, -32700);
    assert_eq!(r["id"], json!(22), "{r}");
    // A byte-order mark: refused with a message that says so, with the request's id.
    let r = expect_error(
        &mut s,
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"ping\"}\n".as_bytes(),
        -32700,
    );
    assert_eq!(r["id"], json!("b"), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("byte-order mark")),
        "{r}"
    );
}
