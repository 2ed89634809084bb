//! Protocol integrity (issue 9, class 7): a jailed server cannot answer the proxy's own
//! requests or answer a client request twice, the proxy's ids cannot be guessed, and a
//! `tools/list_changed` storm costs bounded memory and a bounded number of refetches.
//!
//! The fixture server misbehaves on demand (`FIXTURE_MISBEHAVE=1`): `forge_response` writes a
//! response with an id the test chooses before its own answer, `list_changed_storm` writes N
//! notifications before its answer. Because the fixture answers in order, the tool's own
//! answer arriving at the client proves the forged line before it was processed: no sleeps.

mod proxy_support;

use proxy_support::*;
use serde_json::{json, Value};

fn start(t: &Tree, proxy_args: &[&str]) -> Session {
    let mut opts = Opts::new(t);
    opts.proxy_args = proxy_args.iter().map(|a| a.to_string()).collect();
    opts.env.push(("FIXTURE_MISBEHAVE", "1".into()));
    opts.env.push(("FIXTURE_LOG_LISTS", "1".into()));
    // Tool pins go to the scratch tree, never to the real state directory.
    opts.env.push((
        "XDG_STATE_HOME",
        t.root().join("state").display().to_string(),
    ));
    Session::start(t, opts)
}

/// `initialize` with the `roots` capability, `notifications/initialized`, then a `pid` call
/// (id "first"), the first moment the proxy needs the roots; returns the id of the proxy's own
/// `roots/list` to the client (left unanswered: the call waits for it).
fn initialize_with_roots(s: &mut Session) -> Value {
    s.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"roots": {"listChanged": true}},
        "clientInfo": {"name": "integrity-test", "version": "0"}}}),
    );
    let init = s.response_to(&json!("init"));
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send(
        &json!({"jsonrpc": "2.0", "id": "first", "method": "tools/call",
                   "params": {"name": "pid", "arguments": {}}}),
    );
    let m = s.recv();
    assert_eq!(m["method"], json!("roots/list"), "{m}");
    m["id"].clone()
}

fn answer_roots(s: &mut Session, id: &Value, roots: &[String]) {
    let list: Vec<Value> = roots
        .iter()
        .map(|r| json!({"uri": format!("file://{r}"), "name": "r"}))
        .collect();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "result": {"roots": list}}));
}

/// Send a `tools/call` and collect every message up to and including its response.
fn call_collect(s: &mut Session, id: &str, tool: &str, args: Value) -> Vec<Value> {
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}));
    let mut seen = Vec::new();
    loop {
        let m = s.recv();
        let done = m.get("id") == Some(&json!(id)) && m.get("method").is_none();
        seen.push(m);
        if done {
            return seen;
        }
    }
}

fn pid_of(s: &mut Session) -> u32 {
    let r = s.call("pid", json!({}));
    result_text(&r)
        .parse()
        .unwrap_or_else(|_| panic!("pid: {r}"))
}

fn is_own_id(id: &Value) -> bool {
    id.as_str()
        .and_then(|s| s.strip_prefix("mcpjail-"))
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The ids of the `tools/list` requests the fixture got, in order.
fn tools_list_ids(s: &Session) -> Vec<Value> {
    s.stderr
        .lock()
        .unwrap()
        .iter()
        .filter_map(|l| l.strip_prefix("FIXTURE-TOOLS-LIST "))
        .map(|id| serde_json::from_str(id).unwrap_or(Value::Null))
        .collect()
}

#[test]
fn a_forged_roots_answer_from_the_server_is_dropped_and_the_clients_roots_still_narrow() {
    let t = Tree::new();
    let mut s = start(&t, &["--log"]);
    let roots_id = initialize_with_roots(&mut s);
    // The client's answer narrows the scope; the server is respawned under the narrower jail
    // before the waiting call reaches it.
    answer_roots(&mut s, &roots_id, &[t.p("scope/sub")]);
    let r = s.response_to(&json!("first"));
    let pid1: u32 = result_text(&r).parse().expect("pid");
    s.wait_stderr("respawning the server under a narrower jail");

    // The server answers the proxy's roots/list — which went to the client — claiming `/`.
    // (It is told the id here; a real server never sees it, and could not guess it.)
    let r = s.call("forge_response", json!({"id": roots_id, "kind": "roots"}));
    assert_eq!(result_text(&r), "forged", "{r}");
    s.wait_stderr("PROTOCOL VIOLATION by the server");

    let r = s.call("read_file", json!({"path": t.p("scope/a.txt")}));
    assert!(is_denial(&r), "outside the client's root, yet allowed: {r}");
    let r = s.call("read_file", json!({"path": t.p("scope/sub/b.txt")}));
    assert_eq!(result_text(&r), "beta", "{r}");
    assert_eq!(
        pid_of(&mut s),
        pid1,
        "the forged answer respawned the server"
    );
}

/// Control: had the forged answer been taken for the client's, the scope would not have
/// narrowed — roots of `/` leave the whole argv scope readable and the server where it was.
#[test]
fn control_the_forged_roots_would_leave_the_scope_wide() {
    let t = Tree::new();
    let mut s = start(&t, &["--log"]);
    let roots_id = initialize_with_roots(&mut s);
    answer_roots(&mut s, &roots_id, &["/".to_string()]);
    let r = s.response_to(&json!("first"));
    let pid1: u32 = result_text(&r).parse().expect("pid");
    let r = s.call("read_file", json!({"path": t.p("scope/a.txt")}));
    assert_eq!(result_text(&r), "alpha", "{r}");
    assert_eq!(pid_of(&mut s), pid1);
    assert!(
        !s.stderr
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains("respawning")),
        "no respawn for roots of /"
    );
}

#[test]
fn the_proxys_own_ids_are_random_and_differ_between_sessions() {
    let t = Tree::new();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let mut s = start(&t, &[]);
        ids.push(initialize_with_roots(&mut s));
        // The prefetch the server got (the fixture logs each tools/list id).
        s.wait_stderr("FIXTURE-TOOLS-LIST");
        ids.extend(tools_list_ids(&s));
    }
    assert_eq!(ids.len(), 4, "{ids:?}");
    for id in &ids {
        assert!(is_own_id(id), "not mcpjail-<32 hex digits>: {id}");
        assert!(!id.is_number(), "{id}");
    }
    let mut unique = ids.clone();
    unique.sort_by_key(|v| v.to_string());
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "an id repeated: {ids:?}");
}

#[test]
fn forged_answers_to_denied_unsent_or_answered_requests_never_reach_the_client() {
    let t = Tree::new();
    let mut s = start(&t, &["--log"]);
    s.initialize();
    s.barrier();

    // A call the proxy denies is answered by the proxy, once.
    let seen = call_collect(
        &mut s,
        "denied-1",
        "read_file",
        json!({"path": t.p("outside/secret.txt")}),
    );
    assert!(is_denial(seen.last().unwrap()), "{seen:?}");

    let mut after = Vec::new();
    // The server forges an answer to it (plain, and hidden behind a duplicate `id` key that
    // a client's parser would read last-wins), and to an id it was never sent.
    for (n, (id, kind)) in [
        ("denied-1", "result"),
        ("denied-1", "dupkey"),
        ("never-sent-7", "result"),
    ]
    .into_iter()
    .enumerate()
    {
        let seen = call_collect(
            &mut s,
            &format!("forge-{n}"),
            "forge_response",
            json!({"id": id, "kind": kind}),
        );
        assert_eq!(result_text(seen.last().unwrap()), "forged", "{seen:?}");
        after.extend(seen);
    }
    // A request still in flight may be answered by the server — once. Here the forged line
    // answers the forge call itself, so the tool's real answer is the second one.
    s.send(&json!({"jsonrpc": "2.0", "id": "self-1", "method": "tools/call",
                   "params": {"name": "forge_response", "arguments": {"id": "self-1", "kind": "result"}}}));
    // A round trip behind it: the second answer, if it passed, would arrive before this one.
    after.extend(call_collect(
        &mut s,
        "after",
        "echo",
        json!({"text": "after"}),
    ));
    let with_id = |id: &str| {
        after
            .iter()
            .filter(|m| m.get("id") == Some(&json!(id)))
            .collect::<Vec<_>>()
    };
    assert!(with_id("denied-1").is_empty(), "{after:?}");
    assert!(with_id("never-sent-7").is_empty(), "{after:?}");
    let answers = with_id("self-1");
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(result_text(answers[0]), "FORGED");
    assert!(
        !after
            .iter()
            .any(|m| m.to_string().contains("fixture-decoy")),
        "{after:?}"
    );
    // The proxy's stderr is read on another thread: wait for the fourth report, then check
    // there is no fifth.
    s.wait_stderr("PROTOCOL VIOLATION by the server (#4)");
    let violations = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("PROTOCOL VIOLATION by the server"))
        .count();
    assert_eq!(violations, 4, "three forged lines and one second answer");
}

#[test]
fn a_client_answer_to_the_proxys_tools_list_never_reaches_the_server() {
    let t = Tree::new();
    let mut s = start(&t, &["--log"]);
    s.initialize();
    s.barrier();
    let fetch_id = tools_list_ids(&s).into_iter().next().expect("a prefetch");
    assert!(is_own_id(&fetch_id), "{fetch_id}");
    s.send(&json!({"jsonrpc": "2.0", "id": fetch_id, "result": {"tools": []}}));
    s.send(&json!({"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}));
    s.barrier();
    let stderr = s.stderr.lock().unwrap().clone();
    let violations = stderr
        .iter()
        .filter(|l| l.contains("PROTOCOL VIOLATION by the client"))
        .count();
    assert_eq!(violations, 2, "{stderr:?}");
    assert!(
        !stderr.iter().any(|l| l.starts_with("FIXTURE-RESPONSE")),
        "a client response reached the server: {stderr:?}"
    );
    // The tool list learned from the server still stands: a write outside is refused.
    let r = s.call(
        "write_file",
        json!({"path": t.p("outside/x.txt"), "content": "x"}),
    );
    assert!(is_denial(&r), "{r}");
}

/// Peak resident set of a process, in KiB.
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[test]
fn a_list_changed_storm_costs_bounded_memory_and_two_refetches() {
    const STORM: usize = 100_000;
    let t = Tree::new();
    let mut s = start(&t, &[]);
    s.initialize();
    s.barrier();
    let lists_before = tools_list_ids(&s).len();
    assert_eq!(lists_before, 1, "the prefetch");
    let baseline = vm_hwm_kib(s.pid());

    s.send(
        &json!({"jsonrpc": "2.0", "id": "storm", "method": "tools/call",
                   "params": {"name": "list_changed_storm", "arguments": {"count": STORM}}}),
    );
    let mut notes = 0;
    let answer = loop {
        let m = s.recv();
        if m["method"] == json!("notifications/tools/list_changed") {
            notes += 1;
        } else if m.get("id") == Some(&json!("storm")) {
            break m;
        }
    };
    assert_eq!(result_text(&answer), format!("sent {STORM}"), "{answer}");
    // Notifications are not dropped: the server is slowed down (backpressure) instead.
    assert_eq!(notes, STORM);

    // One fetch for the first notification, one more for all that came during it.
    s.wait_stderr("FIXTURE-TOOLS-LIST");
    s.wait_stderr("FIXTURE-TOOLS-LIST");
    // Two round trips: any further fetch the second answer triggered would be queued at the
    // server before the second barrier's call.
    s.barrier();
    s.barrier();
    let refetches = tools_list_ids(&s).len() - lists_before;
    assert_eq!(refetches, 2, "{:?}", tools_list_ids(&s));

    let peak = vm_hwm_kib(s.pid());
    let grown_mib = peak.saturating_sub(baseline) as f64 / 1024.0;
    eprintln!(
        "proxy VmHWM: {baseline} KiB before, {peak} KiB after the storm (+{grown_mib:.1} MiB)"
    );
    assert!(
        grown_mib <= 32.0,
        "the storm grew the proxy by {grown_mib:.1} MiB"
    );

    // And the session still works.
    let r = s.call("read_file", json!({"path": t.p("scope/a.txt")}));
    assert_eq!(result_text(&r), "alpha", "{r}");
}

#[test]
fn requests_past_the_in_flight_limit_are_refused_not_queued() {
    const LIMIT: usize = 4096;
    let t = Tree::new();
    let mut s = start(&t, &[]);
    s.initialize();
    s.barrier();
    // `block` never answers and stops the single-threaded fixture: everything after it stays
    // in flight.
    s.send(
        &json!({"jsonrpc": "2.0", "id": "blk", "method": "tools/call",
                   "params": {"name": "block", "arguments": {}}}),
    );
    s.wait_stderr("\"tool\":\"block\"");
    for i in 1..LIMIT {
        s.send(&json!({"jsonrpc": "2.0", "id": i, "method": "ping"}));
    }
    // A request id still in flight cannot be reused.
    s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    let r = s.response_to(&json!(1));
    assert_eq!(r["error"]["code"], json!(-32600), "{r}");
    s.send(&json!({"jsonrpc": "2.0", "id": "one-too-many", "method": "ping"}));
    let r = s.response_to(&json!("one-too-many"));
    assert_eq!(r["error"]["code"], json!(-32603), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("in flight"),
        "{r}"
    );
}

#[test]
fn a_streamed_answer_with_a_second_id_in_its_tail_is_cut_off() {
    let t = Tree::new();
    let mut s = start(&t, &["--log"]);
    s.initialize();
    s.barrier();
    let seen = call_collect(
        &mut s,
        "denied-2",
        "read_file",
        json!({"path": t.p("outside/secret.txt")}),
    );
    assert!(is_denial(seen.last().unwrap()), "{seen:?}");

    // 300 KiB: streamed through. It begins as the answer to `long-1` and ends with
    // `"id":"denied-2"`, which a last-key-wins client would read as a second answer.
    s.send(&json!({"jsonrpc": "2.0", "id": "long-1", "method": "tools/call",
                   "params": {"name": "forge_response", "arguments": {"id": "denied-2", "kind": "longdup"}}}));
    s.send(
        &json!({"jsonrpc": "2.0", "id": "after", "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "after"}}}),
    );
    let mut parsed = Vec::new();
    let mut broken = 0;
    loop {
        let line = s.recv_raw();
        match serde_json::from_str::<Value>(&line) {
            Ok(m) => {
                let done = m["id"] == json!("after");
                parsed.push(m);
                if done {
                    break;
                }
            }
            Err(_) => broken += 1,
        }
    }
    assert_eq!(broken, 1, "the cut-off line");
    assert!(
        !parsed.iter().any(|m| m["id"] == json!("denied-2")),
        "{parsed:?}"
    );
    let long: Vec<&Value> = parsed
        .iter()
        .filter(|m| m["id"] == json!("long-1"))
        .collect();
    assert_eq!(long.len(), 1, "{long:?}");
    assert_eq!(long[0]["error"]["code"], json!(-32603), "{}", long[0]);
    assert!(
        long[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cut off"),
        "{}",
        long[0]
    );
    s.wait_stderr("a streamed response to id \"long-1\"");
}

#[test]
fn cancelled_requests_free_their_in_flight_slots() {
    const LIMIT: usize = 4096;
    let t = Tree::new();
    let mut s = start(&t, &[]);
    s.initialize();
    s.barrier();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "blk", "method": "tools/call",
                   "params": {"name": "block", "arguments": {}}}),
    );
    s.wait_stderr("\"tool\":\"block\"");
    for i in 1..LIMIT {
        s.send(&json!({"jsonrpc": "2.0", "id": i, "method": "ping"}));
    }
    // The client gives up on ten of them: the server need not answer those.
    for i in 1..=10 {
        s.send(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": i, "reason": "test"}}),
        );
    }
    for i in 0..10 {
        s.send(&json!({"jsonrpc": "2.0", "id": format!("new-{i}"), "method": "ping"}));
    }
    s.send(&json!({"jsonrpc": "2.0", "id": "one-too-many", "method": "ping"}));
    let mut seen = Vec::new();
    loop {
        let m = s.recv();
        let done = m["id"] == json!("one-too-many");
        seen.push(m);
        if done {
            break;
        }
    }
    let last = seen.last().unwrap();
    assert_eq!(last["error"]["code"], json!(-32603), "{last}");
    assert_eq!(
        seen.len(),
        1,
        "a new request in a freed slot was refused: {seen:?}"
    );
}
