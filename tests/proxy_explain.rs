//! "Every failure names its fix" (issue 8, item 5), end to end: the real `mcpjail-proxy` in
//! front of the fixture server (or a real shell / Python), the real kernel jail.
//!
//! - A server that dies at start-up because the jail refused a file: the client's error for
//!   `initialize` names the path and the flag that allows it (control: with the flag it starts);
//!   a credential gets "mcpjail will not grant it" and no flag; a server that fails for its own
//!   reasons gets "the jail is likely not the cause" and `--no-jail` to confirm.
//! - A tool result reporting a permission error on a path outside the jail gets one appended
//!   hint; an error inside the scope gets none, and a normal result stays byte-identical.
//! - A tool without `readOnlyHint` may take a path under `--allow-read` (the kernel stops the
//!   write); a path outside every root is still denied.
//! - The server's stderr still reaches the proxy's stderr, every line, in order.

mod proxy_support;

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use proxy_support::*;
use serde_json::{json, Value};

/// Send `initialize` and return the error the proxy answers it with (the server died).
fn initialize_error(s: &mut Session) -> (i64, String, Value) {
    let r = s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "explain-tests", "version": "0"}}),
    );
    let err = r
        .get("error")
        .unwrap_or_else(|| panic!("initialize must fail: {r}"));
    (
        err["code"].as_i64().unwrap_or_default(),
        err["message"].as_str().unwrap_or_default().to_string(),
        err["data"].clone(),
    )
}

/// `mcpjail-proxy <args> -- <command>` in the tree's scope, HOME = T/home.
fn proxied_command(t: &Tree, proxy_args: &[String], command: &[&str]) -> Session {
    let mut c = Command::new(PROXY);
    c.args(proxy_args)
        .arg("--")
        .args(command)
        .current_dir(t.scope())
        .env("HOME", t.root().join("home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Session::spawn(c)
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_config_read_refused_at_start_names_the_path_and_the_flag() {
    let t = Tree::new();
    let config = t.p("outside/config.json");
    std::fs::write(&config, "{}").unwrap();

    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_READ_AT_START", config.clone()));
    let mut s = Session::start(&t, opts);
    let (code, msg, data) = initialize_error(&mut s);
    assert_eq!(code, -32603, "{msg}");
    assert!(msg.contains("exited (status 1)"), "{msg}");
    assert!(msg.contains(&format!("read access to {config}")), "{msg}");
    assert!(msg.contains(&format!("--allow-read {config}")), "{msg}");
    assert!(msg.contains(&format!("read = [\"{config}\"]")), "{msg}");
    let failure = &data["mcpjail/server_failure"];
    assert_eq!(failure["cause"], "jail", "{data}");
    assert_eq!(failure["refused"][0]["path"], json!(config), "{data}");
    // The same explanation on the proxy's stderr.
    s.wait_stderr(&format!("--allow-read {config}"));
    s.close_stdin();
    assert_eq!(s.wait_exit(), 1);

    // Control: granted, the same server starts and answers.
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_READ_AT_START", config.clone()));
    opts.proxy_args = args(&["--allow-read", &config]);
    let mut s = Session::start(&t, opts);
    let r = s.initialize();
    assert_eq!(
        r["result"]["serverInfo"]["name"], "mcpjail-fixture-files",
        "{r}"
    );
    s.barrier();
}

#[test]
fn a_python_permission_error_at_start_is_recognised() {
    let t = Tree::new();
    let config = t.p("outside/settings.toml");
    std::fs::write(&config, "x = 1").unwrap();
    let script = format!("open({config:?}).read()");
    let mut s = proxied_command(&t, &[], &["/usr/bin/python3", "-c", &script]);
    let (code, msg, _) = initialize_error(&mut s);
    assert_eq!(code, -32603, "{msg}");
    assert!(
        msg.contains("PermissionError"),
        "quotes the evidence: {msg}"
    );
    assert!(msg.contains(&format!("--allow-read {config}")), "{msg}");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 1);
}

#[test]
fn a_credential_read_at_start_is_never_offered_as_a_grant() {
    let t = Tree::new();
    let key = t.p("home/.ssh/id_rsa");
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_READ_AT_START", key.clone()));
    let mut s = Session::start(&t, opts);
    let (code, msg, data) = initialize_error(&mut s);
    assert_eq!(code, -32603, "{msg}");
    assert!(msg.contains(&key), "{msg}");
    assert!(msg.contains("mcpjail will not grant it"), "{msg}");
    assert!(
        !msg.contains("--allow-read"),
        "no flag for a credential: {msg}"
    );
    assert_eq!(
        data["mcpjail/server_failure"]["refused"][0]["fix"]["kind"], "never_granted",
        "{data}"
    );
}

#[test]
fn a_server_failing_on_its_own_is_not_blamed_on_the_jail() {
    let t = Tree::new();
    let mut s = proxied_command(
        &t,
        &[],
        &[
            "/bin/sh",
            "-c",
            "echo 'fatal: no API key configured' >&2; exit 3",
        ],
    );
    let (code, msg, data) = initialize_error(&mut s);
    assert_eq!(code, -32603, "{msg}");
    assert!(msg.contains("exited (status 3)"), "{msg}");
    assert!(msg.contains("the jail is likely not the cause"), "{msg}");
    assert!(msg.contains("--no-jail"), "{msg}");
    assert!(msg.contains("not as a fix"), "{msg}");
    assert!(msg.contains("fatal: no API key configured"), "{msg}");
    assert!(!msg.contains("--allow-"), "{msg}");
    assert_eq!(
        data["mcpjail/server_failure"]["cause"], "not_jail",
        "{data}"
    );
    // The client may keep asking: every request gets the same answer until it hangs up.
    let (_, again, _) = initialize_error(&mut s);
    assert_eq!(again, msg);
    s.close_stdin();
    assert_eq!(s.wait_exit(), 3);
}

#[test]
fn a_refused_exec_says_read_is_not_enough() {
    let t = Tree::new();
    let tool = t.p("outside/tool.sh");
    std::fs::write(&tool, "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Control: the script runs outside the jail.
    assert!(Command::new(&tool).status().unwrap().success());

    let mut s = proxied_command(
        &t,
        &args(&["--allow-read", &t.p("outside")]),
        &["/bin/sh", "-c", &format!("{tool}; exit 126")],
    );
    let (_, msg, data) = initialize_error(&mut s);
    assert!(msg.contains(&format!("exec access to {tool}")), "{msg}");
    assert!(
        msg.contains("--allow-read and --allow-write never grant"),
        "{msg}"
    );
    assert_eq!(
        data["mcpjail/server_failure"]["refused"][0]["fix"]["kind"], "needs_exec",
        "{data}"
    );
}

#[test]
fn a_result_reporting_a_refused_write_gets_the_fix_appended() {
    let t = Tree::new();
    let audit = t.root().join("audit.jsonl");
    let target = t.p("ro/new.txt");
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_ERRORS", "node".into()));
    opts.proxy_args = args(&[
        "--allow-read",
        &t.p("ro"),
        "--log",
        "--log-file",
        &audit.display().to_string(),
    ]);
    let mut s = Session::start(&t, opts);
    s.initialize();
    // write_file has no annotations: the path under the read-only root is forwarded, and the
    // kernel refuses the write.
    let r = s.call("write_file", json!({"path": target, "content": "x"}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let content = r["result"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{r}");
    // EROFS: outside the write grants the jail's mounts are read-only (the metadata class).
    let own = content[0]["text"].as_str().unwrap();
    assert!(
        own.starts_with("EACCES") || own.starts_with("EROFS"),
        "the server's own text is kept first: {r}"
    );
    let hint = content[1]["text"].as_str().unwrap();
    assert!(
        hint.starts_with(&format!(
            "mcpjail: the jail refused write access to {target}; hint:"
        )),
        "{hint}"
    );
    // The file does not exist: the grant that lets it be created names its directory.
    let dir = t.p("ro");
    assert!(hint.contains(&format!("--allow-write {dir} ")), "{hint}");
    assert!(!hint.contains(&format!("--allow-write {target}")), "{hint}");
    s.wait_stderr(&format!(r#""path":"{target}"}},"tool":"write_file""#));
    assert!(!std::path::Path::new(&target).exists());
    s.wait_stderr("mcpjail: the jail refused write access");

    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let audit_text = std::fs::read_to_string(&audit).unwrap();
    let entry: Value = audit_text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["tool"] == "write_file")
        .unwrap_or_else(|| panic!("no write_file entry: {audit_text}"));
    assert!(
        entry["jail_hint"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("--allow-write {dir} ")),
        "{entry}"
    );
}

/// A refused create in a directory mcpjail never opens for writing (here `~/.config`; the same
/// goes for HOME itself, where a server's temp file beside `MEMORY_FILE_PATH` lands): the hint
/// does not name the file, which does not exist (and a temp file's name changes every time),
/// nor a flag for the directory, which would not be granted; it says to give the server a
/// directory of its own. Control: the same call to the server directly creates the file.
#[test]
fn a_refused_create_in_a_directory_never_granted_asks_for_a_directory_of_its_own() {
    let t = Tree::new();
    let config = t.root().join("home/.config");
    std::fs::create_dir_all(&config).unwrap();
    let target = config.join("notes.jsonl.4f2a.tmp").display().to_string();
    let call = |jail: bool| {
        let mut opts = Opts::new(&t);
        opts.env.push(("FIXTURE_ERRORS", "node".into()));
        opts.proxy_args = args(&["--allow-read", &config.display().to_string()]);
        opts.direct = !jail;
        let mut s = Session::start(&t, opts);
        s.initialize();
        let r = s.call("write_file", json!({"path": target, "content": "x"}));
        s.close_stdin();
        assert_eq!(s.wait_exit(), 0);
        r
    };

    let r = call(true);
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(!std::path::Path::new(&target).exists());
    let content = r["result"]["content"].as_array().unwrap();
    let hint = content
        .last()
        .and_then(|c| c["text"].as_str())
        .unwrap_or_default();
    assert!(
        hint.starts_with(&format!(
            "mcpjail: the jail refused write access to {target}; hint: {target} does not exist yet"
        )),
        "{hint}"
    );
    assert!(
        hint.contains(&format!(
            "its directory, {}, which mcpjail does not grant",
            config.display()
        )),
        "{hint}"
    );
    assert!(hint.contains("a directory of its own"), "{hint}");
    assert!(
        !hint.contains("hint: if the server needs it, run with"),
        "{hint}"
    );

    let r = call(false);
    assert_ne!(r["result"]["isError"], json!(true), "{r}");
    assert!(
        std::path::Path::new(&target).exists(),
        "control: directly, it is created"
    );
}

/// The raw answer lines to the same requests, through the proxy and from the server directly.
fn raw_answers(t: &Tree, direct: bool, calls: &[Value]) -> Vec<String> {
    let mut opts = Opts::new(t);
    opts.env.push(("FIXTURE_ERRORS", "node".into()));
    opts.direct = direct;
    let mut s = Session::start(t, opts);
    s.initialize();
    let mut out = Vec::new();
    for (i, params) in calls.iter().enumerate() {
        let id = format!("raw-{i}");
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
        loop {
            let line = s.recv_raw();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                out.push(line);
                break;
            }
        }
    }
    out
}

#[test]
fn errors_inside_the_scope_and_normal_results_pass_byte_for_byte() {
    let t = Tree::new();
    let in_scope = t.p("scope/a.txt");
    let calls = vec![
        // A normal result.
        json!({"name": "read_file", "arguments": {"path": in_scope}}),
        // ENOENT inside the scope: the server's own error.
        json!({"name": "read_file", "arguments": {"path": t.p("scope/missing.txt")}}),
        // A permission error the server reports on a path the jail grants: not the jail's.
        json!({"name": "echo", "arguments":
            {"text": format!("EACCES: permission denied, open '{in_scope}'")}}),
    ];
    let proxied = raw_answers(&t, false, &calls);
    let direct = raw_answers(&t, true, &calls);
    assert_eq!(proxied, direct);
    assert!(proxied[1].contains("ENOENT"), "{}", proxied[1]);
    assert!(!proxied.iter().any(|l| l.contains("mcpjail:")));
}

#[test]
fn a_tool_without_annotations_may_take_a_path_under_a_read_root() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.proxy_args = args(&["--allow-read", &t.p("ro")]);
    let mut s = Session::start(&t, opts);
    s.initialize();
    let inside = t.p("ro/r.txt");
    let r = s.call("write_file", json!({"path": inside, "content": "changed"}));
    assert!(!is_denial(&r), "forwarded, not denied by the proxy: {r}");
    s.wait_stderr(&format!(r#""path":"{inside}"}},"tool":"write_file""#));
    assert_eq!(
        std::fs::read_to_string(&inside).unwrap(),
        "read-only",
        "the kernel refused the write"
    );
    // Control: outside every root, still denied and never forwarded.
    let outside = t.p("outside/new.txt");
    let r = s.call("write_file", json!({"path": outside, "content": "x"}));
    assert!(is_denial(&r), "{r}");
    s.barrier();
    assert!(!s.fixture_calls().iter().any(|c| c.contains(&outside)));
}

#[test]
fn without_the_jail_a_read_root_is_still_not_writable_through_the_proxy() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.proxy_args = args(&["--no-jail", "--allow-read", &t.p("ro")]);
    let mut s = Session::start(&t, opts);
    s.initialize();
    let inside = t.p("ro/r.txt");
    let r = s.call("write_file", json!({"path": inside, "content": "changed"}));
    assert!(is_denial(&r), "the proxy is the only layer: {r}");
    // A read-only tool may still read there.
    let r = s.call("read_file", json!({"path": inside}));
    assert_eq!(result_text(&r), "read-only", "{r}");
}

#[test]
fn the_servers_stderr_reaches_ours_whole_and_in_order() {
    let t = Tree::new();
    let n = 2000;
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_STDERR_LINES", n.to_string()));
    let mut s = Session::start(&t, opts);
    s.initialize();
    s.wait_stderr(&format!("FIXTURE-STDERR {}", n - 1));
    let lines: Vec<String> = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("FIXTURE-STDERR "))
        .cloned()
        .collect();
    let expected: Vec<String> = (0..n).map(|i| format!("FIXTURE-STDERR {i}")).collect();
    assert_eq!(lines, expected);
}

#[test]
fn a_last_line_without_a_newline_is_passed_through_and_quoted() {
    let t = Tree::new();
    let mut s = proxied_command(
        &t,
        &[],
        &[
            "/bin/sh",
            "-c",
            "echo first >&2; printf 'last words' >&2; exit 4",
        ],
    );
    let (_, msg, _) = initialize_error(&mut s);
    assert!(msg.contains("last words"), "{msg}");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 4);
    // The test reads the proxy's stderr on its own thread: wait for it to get there.
    s.wait_stderr("last words");
    let stderr = s.stderr.lock().unwrap().clone();
    let first = stderr.iter().position(|l| l == "first");
    let last = stderr.iter().position(|l| l.starts_with("last words"));
    assert!(first.is_some() && last > first, "{stderr:?}");
}

#[test]
fn a_program_that_cannot_be_started_is_answered_and_not_blamed_on_the_jail() {
    let t = Tree::new();
    let program = t.p("outside/server.sh");
    std::fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut s = proxied_command(&t, &[], &[&program]);
    let (code, msg, data) = initialize_error(&mut s);
    assert_eq!(code, -32603, "{msg}");
    assert!(
        msg.starts_with("mcpjail could not start the MCP server"),
        "{msg}"
    );
    assert!(msg.contains("chmod +x"), "{msg}");
    assert!(!msg.contains("the jail refused"), "{msg}");
    assert_eq!(
        data["mcpjail/server_failure"]["cause"], "spawn_failed",
        "{data}"
    );
    s.close_stdin();
    assert_ne!(s.wait_exit(), 0);
}

#[test]
fn long_successful_results_are_data_not_error_messages() {
    let t = Tree::new();
    let secret = t.p("outside/secret.txt");
    // A log in the scope that quotes someone else's permission error on a path outside.
    let log = format!(
        "{}\nEACCES: permission denied, open '{secret}'\n",
        "previous log line\n".repeat(100)
    );
    std::fs::write(t.p("scope/app.log"), &log).unwrap();
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_ERRORS", "node".into()));
    let mut s = Session::start(&t, opts);
    s.initialize();
    let r = s.call("read_file", json!({"path": t.p("scope/app.log")}));
    assert_eq!(result_text(&r), log);
    assert_eq!(r["result"]["content"].as_array().unwrap().len(), 1, "{r}");
    // The same line as a short unflagged message is read as one.
    let r = s.call(
        "echo",
        json!({"text": format!("EACCES: permission denied, open '{secret}'")}),
    );
    let content = r["result"]["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{r}");
    assert!(content[1]["text"]
        .as_str()
        .unwrap()
        .contains(&format!("--allow-read {secret}")));
}
