//! The proxy's argument checks, end to end: a real `mcpjail-proxy` in front of the real fixture
//! server, driven with raw JSON-RPC lines. Every denial is shown to (a) come back from the proxy
//! with the path in the message and (b) never reach the server (no FIXTURE-CALL for it), and the
//! same attempts succeed in a control run against the server directly.

mod proxy_support;

use proxy_support::*;
use serde_json::{json, Value};

/// The out-of-scope forms, as `read_file` path arguments, with the text the denial must name.
fn escape_forms(t: &Tree) -> Vec<(&'static str, String, String)> {
    let secret = t.p("outside/secret.txt");
    vec![
        ("absolute", secret.clone(), secret.clone()),
        ("dotdot", "../outside/secret.txt".into(), secret.clone()),
        (
            "dotdot-inside",
            "sub/../../outside/secret.txt".into(),
            secret.clone(),
        ),
        ("symlink", t.p("scope/link"), secret.clone()),
        (
            "sibling-prefix",
            t.p("scope-evil/x.txt"),
            t.p("scope-evil/x.txt"),
        ),
        ("file-uri", format!("file://{secret}"), secret.clone()),
        (
            "percent-encoded",
            format!("file://{}", secret.replace("secret", "%73ecret")),
            secret.clone(),
        ),
        (
            "percent-dotdot",
            format!("file://{}/%2e%2e/outside/secret.txt", t.p("scope")),
            secret.clone(),
        ),
        ("tilde", "~/.ssh/id_rsa".into(), t.p("home/.ssh/id_rsa")),
    ]
}

#[test]
fn in_scope_read_and_write_succeed_through_the_proxy() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let r = s.call("read_file", json!({"path": t.p("scope/a.txt")}));
    assert_eq!(result_text(&r), "alpha", "{r}");
    let r = s.call("read_file", json!({"path": "sub/b.txt"}));
    assert_eq!(result_text(&r), "beta", "{r}");
    let r = s.call(
        "write_file",
        json!({"path": t.p("scope/new.txt"), "content": "written"}),
    );
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    assert_eq!(
        std::fs::read_to_string(t.p("scope/new.txt")).unwrap(),
        "written"
    );
    let r = s.call("list_directory", json!({"path": t.p("scope")}));
    assert!(result_text(&r).contains("a.txt"), "{r}");
}

#[test]
fn every_out_of_scope_form_is_denied_and_never_reaches_the_server() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    for (label, raw, named) in escape_forms(&t) {
        let r = s.call("read_file", json!({ "path": raw }));
        assert!(is_denial(&r), "{label}: not denied: {r}");
        let text = result_text(&r);
        assert!(
            text.contains(&named),
            "{label}: the message must name {named}: {text}"
        );
        assert!(
            text.contains(&t.p("scope")),
            "{label}: the message must name the allowed root: {text}"
        );
        assert_eq!(
            r["result"]["_meta"]["mcpjail/denial"]["argument"],
            json!("/path"),
            "{label}"
        );
    }
    // NUL byte: refused as unresolvable, with the raw value in the message.
    let r = s.call(
        "read_file",
        json!({"path": format!("{}\u{0}x", t.p("scope/a.txt"))}),
    );
    assert!(is_denial(&r), "NUL: {r}");
    assert!(result_text(&r).contains("NUL"), "{r}");
    s.barrier();
    let calls = s.fixture_calls();
    assert!(
        calls.iter().all(|c| c.contains("barrier-")),
        "a denied call reached the server: {calls:?}"
    );

    // Control: the same calls straight to the server do reach the secrets.
    let mut direct = Session::start(
        &t,
        Opts {
            direct: true,
            ..Opts::new(&t)
        },
    );
    direct.initialize();
    for (label, raw, _) in escape_forms(&t) {
        if label.contains("uri") || label.starts_with("percent") || label == "tilde" {
            continue; // the fixture itself does not expand these forms
        }
        let r = direct.call("read_file", json!({ "path": raw }));
        let text = result_text(&r);
        assert!(
            text == "TOP-SECRET" || text == "evil",
            "control {label}: {r}"
        );
    }
}

#[test]
fn nested_path_arrays_are_checked_element_by_element() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let ok = s.call(
        "read_many",
        json!({"paths": [t.p("scope/a.txt"), t.p("scope/sub/b.txt")]}),
    );
    assert_eq!(result_text(&ok), "alpha\n---\nbeta", "{ok}");
    let r = s.call(
        "read_many",
        json!({"paths": [t.p("scope/a.txt"), t.p("outside/secret.txt")]}),
    );
    assert!(is_denial(&r), "{r}");
    assert_eq!(
        r["result"]["_meta"]["mcpjail/denial"]["argument"],
        json!("/paths/1")
    );
    let r = s.call(
        "batch_edit",
        json!({"edits": [{"file": t.p("scope/e1.txt"), "text": "1"},
                          {"file": t.p("outside/e2.txt"), "text": "2"}]}),
    );
    assert!(is_denial(&r), "{r}");
    assert_eq!(
        r["result"]["_meta"]["mcpjail/denial"]["argument"],
        json!("/edits/1/file")
    );
    assert!(
        !std::path::Path::new(&t.p("scope/e1.txt")).exists(),
        "a denied call ran partly"
    );
    assert!(!std::path::Path::new(&t.p("outside/e2.txt")).exists());
    let r = s.call(
        "move_file",
        json!({"source": t.p("scope/a.txt"), "destination": t.p("outside/moved.txt")}),
    );
    assert!(is_denial(&r), "{r}");
    assert!(std::path::Path::new(&t.p("scope/a.txt")).exists());
    s.barrier();
    assert_eq!(s.fixture_calls().len(), 2, "{:?}", s.fixture_calls());
}

/// A read-only root is readable by every tool; a write there is refused by the kernel (the
/// proxy forwards a tool without `readOnlyHint`, since it may only read: issue 8, item 5).
#[test]
fn read_only_roots_allow_reads_and_the_jail_refuses_writes() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.proxy_args = vec!["--allow-read".into(), t.p("ro")];
    let mut s = Session::start(&t, opts);
    s.initialize();
    let r = s.call("read_file", json!({"path": t.p("ro/r.txt")}));
    assert_eq!(result_text(&r), "read-only", "{r}");
    let r = s.call(
        "write_file",
        json!({"path": t.p("ro/r.txt"), "content": "changed"}),
    );
    assert!(!is_denial(&r), "{r}");
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert_eq!(
        std::fs::read_to_string(t.p("ro/r.txt")).unwrap(),
        "read-only"
    );
}

#[test]
fn unknown_tools_are_judged_by_value() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let r = s.call(
        "no_such_tool",
        json!({"whatever": t.p("outside/secret.txt")}),
    );
    assert!(is_denial(&r), "{r}");
    let r = s.call(
        "no_such_tool",
        json!({"nested": {"deep": ["../outside/secret.txt"]}}),
    );
    assert!(is_denial(&r), "{r}");
    // Nothing path-like: forwarded (the fixture answers that it has no such tool).
    let r = s.call("no_such_tool", json!({"note": "hello"}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    s.barrier();
    let calls = s.fixture_calls();
    assert_eq!(
        calls.iter().filter(|c| c.contains("no_such_tool")).count(),
        1,
        "{calls:?}"
    );
}

#[test]
fn tools_list_through_the_proxy_is_identical_to_direct() {
    let t = Tree::new();
    let mut direct = Session::start(
        &t,
        Opts {
            direct: true,
            ..Opts::new(&t)
        },
    );
    direct.initialize();
    let d = direct.request("tools/list", json!({}));
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let p = s.request("tools/list", json!({}));
    assert_eq!(d["result"], p["result"]);
    assert!(p["result"]["tools"].as_array().unwrap().len() > 5);
}

#[test]
fn the_proxys_own_tools_list_is_never_forwarded() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    // The proxy sends its tools/list right after notifications/initialized; a call needing it
    // (schema-only path argument) proves it was answered.
    let r = s.call("read_file", json!({"path": "../outside/secret.txt"}));
    assert!(is_denial(&r), "{r}");
    s.send(&json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}));
    let next = s.recv();
    assert_eq!(
        next["id"],
        json!("p1"),
        "unexpected line before the ping answer: {next}"
    );
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    // Nothing else was written after the ping answer.
    assert!(s.stdout_closed());
}

#[test]
fn client_ids_that_look_like_the_proxys_are_routed_to_the_client() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.send(&json!({"jsonrpc": "2.0", "id": "mcpjail-1", "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}}));
    let r = s.recv();
    assert_eq!(r["id"], json!("mcpjail-1"));
    assert!(r["result"]["serverInfo"].is_object(), "{r}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send(&json!({"jsonrpc": "2.0", "id": "mcpjail-2", "method": "tools/list"}));
    let r = s.recv();
    assert_eq!(r["id"], json!("mcpjail-2"), "{r}");
    assert!(r["result"]["tools"].is_array());
}

#[test]
fn list_changed_refetches_and_a_new_tool_is_checked_by_its_schema() {
    let t = Tree::new();
    // The server runs in T (not the scope), so a bare relative name like `late.txt` lands outside
    // the scope without looking like a path: only the schema says it is one.
    let mut opts = Opts::new(&t);
    opts.cwd = t.root();
    let mut s = Session::start(&t, opts);
    s.initialize();
    // Control: before the tool exists, the same call is not recognised as a path and reaches
    // the server (which does not know the tool yet).
    let r = s.call("late_tool", json!({"file": "late.txt"}));
    assert!(r.get("error").is_some(), "{r}");
    // The fixture's stderr may lag behind its answer on stdout: wait until it caught up.
    s.barrier();
    assert_eq!(
        s.fixture_calls()
            .iter()
            .filter(|c| c.contains("late_tool"))
            .count(),
        1
    );

    let id = json!("lc");
    s.send(
        &json!({"jsonrpc": "2.0", "id": "lc", "method": "tools/call",
                   "params": {"name": "trigger_list_changed", "arguments": {}}}),
    );
    let mut saw_note = false;
    loop {
        let m = s.recv();
        if m["method"] == json!("notifications/tools/list_changed") {
            saw_note = true;
        }
        if m.get("id") == Some(&id) {
            break;
        }
    }
    if !saw_note {
        let m = s.recv();
        assert_eq!(
            m["method"],
            json!("notifications/tools/list_changed"),
            "{m}"
        );
    }
    let r = s.call("late_tool", json!({"file": "late.txt"}));
    assert!(
        is_denial(&r),
        "late_tool must be judged by its new schema: {r}"
    );
    assert!(result_text(&r).contains(&t.p("late.txt")), "{r}");
    assert!(!std::path::Path::new(&t.p("late.txt")).exists());
    s.barrier();
    assert_eq!(
        s.fixture_calls()
            .iter()
            .filter(|c| c.contains("late_tool"))
            .count(),
        1
    );
}

#[test]
fn tool_lists_are_learned_across_pages() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.cwd = t.root();
    opts.env.push(("FIXTURE_PAGE_SIZE", "2".into()));
    let mut s = Session::start(&t, opts);
    s.initialize();
    // batch_edit is on page 3; `x.txt` is only a path because its schema says so.
    let r = s.call(
        "batch_edit",
        json!({"edits": [{"file": "x.txt", "text": "1"}]}),
    );
    assert!(is_denial(&r), "{r}");
    assert!(!std::path::Path::new(&t.p("x.txt")).exists());
}

#[test]
fn deny_as_error_answers_with_a_json_rpc_error() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.proxy_args = vec!["--deny-as".into(), "error".into()];
    let mut s = Session::start(&t, opts);
    s.initialize();
    let r = s.call("read_file", json!({"path": t.p("outside/secret.txt")}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&t.p("outside/secret.txt")));
    assert_eq!(
        r["error"]["data"]["mcpjail/denial"]["path"],
        json!(t.p("outside/secret.txt"))
    );
    assert!(r.get("result").is_none());
}

#[test]
fn resources_read_of_file_uris_is_checked() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let r = s.request(
        "resources/read",
        json!({"uri": format!("file://{}", t.p("scope/a.txt"))}),
    );
    assert_eq!(r["result"]["contents"][0]["text"], json!("alpha"), "{r}");
    let r = s.request(
        "resources/read",
        json!({"uri": format!("file://{}", t.p("outside/secret.txt"))}),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains(&t.p("outside/secret.txt")));
    s.barrier();
    let reads: Vec<String> = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("FIXTURE-READ"))
        .cloned()
        .collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
    let _: Value = json!(null);
}

#[test]
fn big_results_pass_through_byte_for_byte_and_are_logged() {
    let t = Tree::new();
    let audit = t.root().join("audit.jsonl");
    let mut direct = Session::start(
        &t,
        Opts {
            direct: true,
            ..Opts::new(&t)
        },
    );
    direct.initialize();
    let mut opts = Opts::new(&t);
    opts.proxy_args = vec!["--log-file".into(), audit.display().to_string()];
    let mut s = Session::start(&t, opts);
    s.initialize();
    // 3 MiB: far over the proxy's streaming threshold, so it is forwarded piecewise.
    let req = json!({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
                     "params": {"name": "big", "arguments": {"bytes": 3 * 1024 * 1024}}});
    direct.send(&req);
    let want = direct.recv_raw();
    s.send(&req);
    let got = s.recv_raw();
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "the big result changed on its way through the proxy"
    );
    // The next message is framed correctly after a streamed one.
    let r = s.call("echo", json!({"text": "after"}));
    assert_eq!(result_text(&r), "after");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let log = std::fs::read_to_string(&audit).unwrap();
    let entry: Value = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["tool"] == json!("big"))
        .expect("a log entry for the big call");
    assert_eq!(entry["result_bytes"], json!(want.len() + 1), "{entry}");
}

/// `tests/js/uri_server.mjs` (Node: `fileURLToPath(new URL(uri))`) on the tree's scope, behind
/// the jailed proxy or run directly (the control).
fn uri_server(t: &Tree, direct: bool) -> Session {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/uri_server.mjs");
    let mut cmd = if direct {
        std::process::Command::new("node")
    } else {
        let mut c = std::process::Command::new(PROXY);
        c.args(["--", "node"]);
        c
    };
    cmd.arg(script)
        .arg(t.scope())
        .current_dir(t.scope())
        .env("HOME", t.root().join("home"))
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut s = Session::spawn(cmd);
    s.initialize();
    s
}

/// The text a `read_uri` call or a `resources/read` came back with (empty for a refusal).
fn read_text(resp: &Value) -> String {
    let r = &resp["result"];
    r["contents"][0]["text"]
        .as_str()
        .or(r["content"][0]["text"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// `file:` URIs a WHATWG parser (Node, the `url` crate behind pydantic's `AnyUrl`) reads
/// differently from a prefix strip: `\` is `/` and removes the `..` it delimits, tabs and
/// newlines vanish, leading spaces and controls are stripped. (A `..` after a directory that
/// does not exist is refused as such; after one that does, by the name it leads to.) Each names a credential deeper
/// than the jail's mask walk, or a protected name that does not exist yet: files only the proxy
/// guards. Behind the proxy each is refused; run directly (the control) the same server reads
/// the secret and plants the files.
#[test]
fn file_uris_are_read_as_the_servers_url_parser_reads_them() {
    let t = Tree::new();
    let scope = t.scope();
    let deep = scope.join("l1/l2/l3/l4");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join(".env"), "DEEP_SECRET=hunter2").unwrap();
    let s = scope.display();
    let reads = [
        ("tools/call", format!("file://{s}/l1/l2/l3/l4/x\\..\\.env")),
        ("tools/call", format!("file://{s}/l1/l2/l3/l4/.%2e/l4/.env")),
        ("resources/read", format!(" file://{s}/l1/l2/l3/l4/.env")),
        ("resources/read", format!("fi\tle://{s}/l1/l2/l3/l4/.env")),
        (
            "resources/read",
            format!("file://{s}/l1/l2\\l3\\l4\\.e\nnv"),
        ),
    ];
    let writes = [
        (
            format!("file://{s}/x\\..\\.vscode\\tasks.json"),
            ".vscode/tasks.json",
        ),
        (
            format!("file://{s}/sub\\..\\.vscode\\settings.json"),
            ".vscode/settings.json",
        ),
        (
            format!("file://{s}/.clau\tde/settings.json"),
            ".claude/settings.json",
        ),
        (format!("file://{s}/.mc\np.json"), ".mcp.json"),
    ];
    let attempt = |s: &mut Session| -> (Vec<Value>, Vec<Value>) {
        let r = reads
            .iter()
            .map(|(method, uri)| match *method {
                "tools/call" => s.call("read_uri", json!({ "uri": uri })),
                _ => s.request("resources/read", json!({ "uri": uri })),
            })
            .collect();
        let w = writes
            .iter()
            .map(|(uri, _)| s.call("write_uri", json!({"uri": uri, "content": "{}"})))
            .collect();
        (r, w)
    };

    let mut jailed = uri_server(&t, false);
    // Ordinary and odd-but-in-scope URIs still reach the server.
    let r = jailed.call("read_uri", json!({"uri": format!("file://{s}/a.txt")}));
    assert_eq!(read_text(&r), "alpha", "{r}");
    let r = jailed.request(
        "resources/read",
        json!({"uri": format!("fi\tle://{s}/sub\\b.txt")}),
    );
    assert_eq!(read_text(&r), "beta", "{r}");
    let (r, w) = attempt(&mut jailed);
    for (resp, (method, uri)) in r.iter().zip(&reads) {
        assert!(
            !read_text(resp).contains("DEEP"),
            "{method} {uri:?} leaked: {resp}"
        );
        let refused = is_denial(resp) || resp["error"]["code"] == json!(-32602);
        assert!(refused, "{method} {uri:?} not refused: {resp}");
        assert!(resp.to_string().contains(".env"), "{resp}");
    }
    for (resp, (uri, name)) in w.iter().zip(&writes) {
        assert!(is_denial(resp), "{uri:?}: {resp}");
        assert!(result_text(resp).contains(name), "{resp}");
        assert!(!scope.join(name).exists(), "{uri:?} planted {name}");
    }
    drop(jailed);

    let mut direct = uri_server(&t, true);
    let (r, w) = attempt(&mut direct);
    for (resp, (method, uri)) in r.iter().zip(&reads) {
        assert_eq!(
            read_text(resp),
            "DEEP_SECRET=hunter2",
            "{method} {uri:?}: {resp}"
        );
    }
    for (resp, (uri, name)) in w.iter().zip(&writes) {
        assert!(
            scope.join(name).exists(),
            "{uri:?} did not write {name}: {resp}"
        );
    }
}
