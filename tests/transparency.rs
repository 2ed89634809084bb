//! Transparency (issue 10): every exchange runs **direct and through `mcpjail-proxy`** (jailed,
//! default flags plus `--pin off`, a fresh HOME so no state leaks), with the Python SDK client,
//! the TypeScript SDK client and raw JSON-RPC lines, against `@modelcontextprotocol/server-everything`
//! (from the offline npx cache of `scripts/test-deps.sh`) and our own `mcpjail-fixture-files`.
//! What the client sees must be equal after normalising what legitimately varies (the temp
//! root, timestamps, server-everything's random weather values).
//!
//! The intended differences are asserted exactly and explained where they occur:
//! - the proxy fails closed on a line it cannot judge (not UTF-8, a byte-order mark: answered
//!   with the request's own id; a batch: one -32600 with `id: null` that says "batch");
//! - a request the server never answers (the fixture cannot parse a lone surrogate) gets a
//!   -32603 `mcpjail/server_failure` from the proxy when the server ends; never a cancelled one;
//! - the proxy asks a client for its roots once itself when the server has not asked yet by
//!   the first stateful request (raw server-everything session), never twice;
//! - the **controls**: real path violations the proxy denies while the direct server tries them.
//!
//! No sleeps: every wait is on a message, a stderr line or an exit, with a bounded deadline.

mod proxy_support;
mod support;

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};
use support::{call, list_tools, read_resource, repo_root, run_client, test_env, Client, Run};

const PROXY: &str = support::PROXY;
const FIXTURE: &str = support::FIXTURE;

/// Direct, or through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Direct,
    Proxied,
}

const MODES: [Mode; 2] = [Mode::Direct, Mode::Proxied];

/// A scratch world: a scope, a secret outside it, a fresh HOME with an SSH key, a project dir.
///
/// ```text
/// T/scope/a.txt          "alpha"
/// T/scope/sub/b.txt      "beta"
/// T/outside/secret.txt   SECRET
/// T/home/.ssh/id_rsa     SSH_KEY     (HOME of every process)
/// T/project/             cwd of server-everything
/// ```
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

const SECRET: &str = "TOP-SECRET-outside-the-scope";
const SSH_KEY: &str = "SSH-PRIVATE-KEY-in-home";

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (rel, text) in [
            ("scope/a.txt", "alpha"),
            ("scope/sub/b.txt", "beta"),
            ("outside/secret.txt", SECRET),
            ("home/.ssh/id_rsa", SSH_KEY),
            ("project/README.md", "a project"),
        ] {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        World { _dir: dir, root }
    }

    fn p(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    Everything,
    Fixture,
}

/// The pinned `server-everything` spec of `tests/launch/pins.env`.
fn everything_pin() -> String {
    let text = std::fs::read_to_string(repo_root().join("tests/launch/pins.env")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("NPX_PACKAGES="))
        .expect("NPX_PACKAGES in pins.env")
        .trim_matches('"')
        .split_whitespace()
        .find(|p| p.contains("server-everything"))
        .expect("a server-everything pin")
        .to_string()
}

/// The server's argv, cwd and environment (beyond PATH).
struct Launch {
    argv: Vec<String>,
    cwd: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl Server {
    fn launch(self, w: &World, mode: Mode, extra_env: &[(&'static str, &str)]) -> Launch {
        let mut env = vec![("HOME", w.p("home")), ("NO_COLOR", "1".into())];
        let (server, cwd) = match self {
            Server::Everything => {
                let runners = test_env("runners");
                env.extend([
                    (
                        "npm_config_cache",
                        runners.join("npm-cache").display().to_string(),
                    ),
                    // No network: a miss in the warm cache fails instead of stalling.
                    ("npm_config_offline", "true".into()),
                    ("npm_config_update_notifier", "false".into()),
                ]);
                (
                    vec![
                        "npx".to_string(),
                        "-y".into(),
                        everything_pin(),
                        "stdio".into(),
                    ],
                    w.path("project"),
                )
            }
            // cwd `/`, as Claude Desktop starts servers: a relative path means nothing
            // without its base argument.
            Server::Fixture => (vec![FIXTURE.to_string(), w.p("scope")], PathBuf::from("/")),
        };
        env.extend(extra_env.iter().map(|(k, v)| (*k, v.to_string())));
        let argv = match mode {
            Mode::Direct => server,
            Mode::Proxied => {
                // Default flags; `--pin off` so nothing is recorded. The jail scrubs the
                // environment: pass the fixture's knobs through as `mcpjail install` would.
                let mut a = vec![PROXY.to_string(), "--pin".into(), "off".into()];
                for (k, _) in extra_env {
                    a.extend(["--env-keep".to_string(), k.to_string()]);
                }
                a.push("--".into());
                a.extend(server);
                a
            }
        };
        Launch { argv, cwd, env }
    }
}

// ---------------------------------------------------------------------------------------------
// Normalisation

/// Replaces what legitimately varies between two runs of the same exchange: the temp root,
/// timestamps, and random ids/hex tokens.
fn normalise(v: &Value, w: &World) -> Value {
    match v {
        Value::String(s) => Value::String(normalise_str(s, w)),
        Value::Array(a) => Value::Array(a.iter().map(|x| normalise(x, w)).collect()),
        // server-everything's weather (`get-structured-content`) is random: keep its shape.
        Value::Object(o)
            if o.get("structuredContent")
                .is_some_and(|c| c.get("temperature").is_some()) =>
        {
            let keys: Vec<&String> = o["structuredContent"].as_object().unwrap().keys().collect();
            json!({"weather": keys, "isError": o.get("isError"), "content": o["content"].as_array().map(Vec::len)})
        }
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), normalise(x, w)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The temp root as `<T>`, ISO-8601 timestamps (`2026-12-01T02:50:00.123Z`) as `<TS>`.
fn normalise_str(s: &str, w: &World) -> String {
    let text = s.replace(&w.root.display().to_string(), "<T>");
    {
        let b = text.as_bytes();
        let mut res = String::new();
        let mut i = 0;
        while i < b.len() {
            let is_ts = b.len() - i >= 19
                && b[i..i + 4].iter().all(u8::is_ascii_digit)
                && b[i + 4] == b'-'
                && b[i + 7] == b'-'
                && (b[i + 10] == b'T' || b[i + 10] == b' ')
                && b[i + 13] == b':'
                && b[i + 16] == b':';
            if is_ts {
                let mut j = i + 19;
                while j < b.len() && (b[j].is_ascii_digit() || b"._Z+-:".contains(&b[j])) {
                    j += 1;
                }
                res.push_str("<TS>");
                i = j;
            } else {
                let ch = text[i..].chars().next().unwrap();
                res.push(ch);
                i += ch.len_utf8();
            }
        }
        res
    }
}

// ---------------------------------------------------------------------------------------------
// SDK clients

/// Runs `script` with `client` against `server` in both modes; returns (direct, proxied).
fn both(
    w: &World,
    server: Server,
    client: Client,
    script: &Value,
    extra_env: &[(&'static str, &str)],
) -> (Run, Run) {
    let mut runs = MODES.iter().map(|&mode| {
        let l = server.launch(w, mode, extra_env);
        run_client(
            client,
            &format!("{server:?} {mode:?}"),
            &l.argv,
            script,
            &l.env,
            &l.cwd,
        )
    });
    (runs.next().unwrap(), runs.next().unwrap())
}

/// Steps `0..n` (and the handshake and `done`, which carries the roots/list count) are equal
/// after normalisation.
fn assert_same(w: &World, d: &Run, p: &Run, steps: std::ops::Range<usize>) {
    assert_eq!(
        normalise(&d.init, w),
        normalise(&p.init, w),
        "{}: the handshake differs",
        p.label
    );
    for i in steps {
        let (dv, pv) = (normalise(&d.steps[i], w), normalise(&p.steps[i], w));
        assert!(
            dv == pv,
            "{}: step {i} differs\n--- direct:\n{dv}\n--- proxied:\n{pv}\n--- proxied stderr:\n{}",
            p.label,
            p.stderr
        );
    }
    // No extra roots/list: the client answered as many in both modes (each server asks once).
    assert_eq!(
        d.done["roots_requests"], p.done["roots_requests"],
        "{}: roots/list requests differ",
        p.label
    );
    assert_eq!(d.done["roots_requests"], json!(1), "{}", d.label);
}

/// A control: step `i` is attempted by the direct server and denied by the proxy.
fn assert_control(d: &Run, p: &Run, i: usize, path: &str) {
    assert!(d.denial(i).is_none(), "{}: step {i}", d.label);
    let denial = p
        .denial(i)
        .unwrap_or_else(|| panic!("{}: step {i} was not denied: {}", p.label, p.steps[i]));
    assert_eq!(denial["path"], json!(path), "{}: {denial}", p.label);
    assert!(p.is_error(i));
}

fn fixture_script(w: &World) -> (Value, usize) {
    let long_data = format!("data:text/plain;base64,{}", "aGVsbG8g".repeat(2000));
    let steps = vec![
        list_tools(),
        // Free text with `/` and `~`.
        call("echo", json!({"text": "/ is the root and ~ is home"})),
        // data: URIs, short and long.
        call("echo", json!({"text": "data:,hi"})),
        call("echo", json!({"text": long_data})),
        // An in-scope file.
        call("read_file", json!({"path": w.p("scope/a.txt")})),
        // A relative path next to its base argument: `scope/a.txt`, not `/a.txt` (cwd is `/`).
        // The fixture itself ignores the base, so both runs get its ENOENT for `a.txt`; what
        // matters is that the proxy forwards it rather than denying `/a.txt`.
        call(
            "read_many",
            json!({"repo_path": w.p("scope"), "paths": ["a.txt", "sub/b.txt"]}),
        ),
        read_resource(&format!("file://{}", w.p("scope/sub/b.txt"))),
        json!({"call": "ping"}),
    ];
    let n = steps.len();
    let mut steps = steps;
    // Controls (must differ).
    steps.push(call(
        "read_file",
        json!({"path": w.p("outside/secret.txt")}),
    ));
    steps.push(call("read_file", json!({"path": w.p("home/.ssh/id_rsa")})));
    steps.push(call("read_file", json!({"path": "/etc/shadow"})));
    // `~` is the home directory to the proxy (the fixture reads a literal `~` dir under `/`).
    steps.push(call("read_file", json!({"path": "~/.ssh/id_rsa"})));
    // Without a base argument a relative path is relative to the server's cwd, `/`.
    steps.push(call("read_many", json!({"paths": ["a.txt"]})));
    let script = json!({"timeout": 30, "roots": [w.p("scope")], "steps": steps});
    (script, n)
}

fn fixture_sdk(client: Client) {
    let w = World::new();
    let (script, n) = fixture_script(&w);
    // The fixture asks for roots once (after `initialized`), as many servers do: the client
    // must see exactly that one request in both modes.
    let (d, p) = both(
        &w,
        Server::Fixture,
        client,
        &script,
        &[("FIXTURE_ASK_ROOTS", "1")],
    );
    assert_same(&w, &d, &p, 0..n);
    assert_eq!(d.done["roots_requests"], json!(1), "{}", d.label);
    assert_eq!(d.ok_text(4), "alpha");
    assert_control(&d, &p, n, &w.p("outside/secret.txt"));
    assert_eq!(d.ok_text(n), SECRET);
    assert_control(&d, &p, n + 1, &w.p("home/.ssh/id_rsa"));
    assert_eq!(d.ok_text(n + 1), SSH_KEY);
    // /etc/shadow: the direct server tried (it may or may not be readable here).
    assert_control(&d, &p, n + 2, "/etc/shadow");
    assert!(d
        .fixture_calls()
        .iter()
        .any(|c| c["arguments"]["path"] == "/etc/shadow"));
    assert_control(&d, &p, n + 3, &w.p("home/.ssh/id_rsa"));
    assert_control(&d, &p, n + 4, "/a.txt");
    // Denied calls never reached the jailed server.
    for c in p.fixture_calls() {
        let path = c["arguments"]["path"].as_str().unwrap_or("");
        assert!(
            !path.contains("outside") && !path.contains(".ssh") && path != "/etc/shadow",
            "forwarded: {c}"
        );
    }
}

#[test]
fn fixture_python_sdk() {
    fixture_sdk(Client::Py);
}

#[test]
fn fixture_typescript_sdk() {
    fixture_sdk(Client::Ts);
}

fn everything_script() -> (Value, usize) {
    let long_data = format!("data:text/plain;base64,{}", "aGVsbG8g".repeat(2000));
    let steps = vec![
        list_tools(),
        // Enum values of the schema.
        call("get-structured-content", json!({"location": "New York"})),
        call("get-structured-content", json!({"location": "Los Angeles"})),
        // data: URIs.
        call(
            "gzip-file-as-resource",
            json!({"name": "hi.gz", "data": "data:,hi"}),
        ),
        call(
            "gzip-file-as-resource",
            json!({"name": "long.gz", "data": long_data}),
        ),
        // Free text with `/` and `~`.
        call("echo", json!({"message": "/ is the root and ~ is home"})),
        call("echo", json!({"message": "~/notes and a/b/c"})),
        // A lone surrogate (the TypeScript SDK sends it as `\ud800`).
        call("echo", json!({"message": "a\u{fffd}b"})),
        json!({"call": "ping"}),
    ];
    let n = steps.len();
    let mut steps = steps;
    // Control: a real path in the same field.
    steps.push(call(
        "gzip-file-as-resource",
        json!({"name": "p.gz", "data": "file:///etc/shadow"}),
    ));
    // server-everything asks for roots after an await in its `initialized` handler: wait for
    // that question, or direct a short session ends first and the server, its question still
    // open, takes its SDK's 60 s request timeout to exit (through the proxy it would not: the
    // proxy answers the late question with the roots the client already gave it).
    let script =
        json!({"timeout": 60, "roots": ["/tmp"], "wait_initial_roots": true, "steps": steps});
    (script, n)
}

fn everything_sdk(client: Client) {
    let w = World::new();
    let (mut script, n) = everything_script();
    script["roots"] = json!([w.p("project")]);
    // A lone surrogate: the script's JSON text carries `\ud800`, which each client's JSON
    // reader turns into its own string type (JS keeps it; Python keeps the surrogate).
    // The Python SDK cannot send one at all (its driver fails writing the request, direct as
    // much as proxied), so it sends the replacement character instead.
    let mut text = serde_json::to_string(&script).unwrap();
    if client == Client::Ts {
        text = text.replace("a\u{fffd}b", "a\\ud800b");
    }
    let script = RawScript(text, script["steps"].as_array().unwrap().len());
    let (d, p) = both_raw_script(&w, Server::Everything, client, &script);
    assert_same(&w, &d, &p, 0..n);
    assert_eq!(d.ok_text(5), p.ok_text(5));
    assert!(p.ok_text(5).contains("/ is the root and ~ is home"));
    assert_control(&d, &p, n, "/etc/shadow");
}

#[test]
fn everything_python_sdk() {
    everything_sdk(Client::Py);
}

#[test]
fn everything_typescript_sdk() {
    everything_sdk(Client::Ts);
}

/// A script kept as text (serde_json cannot hold a lone surrogate).
struct RawScript(String, usize);

fn both_raw_script(w: &World, server: Server, client: Client, script: &RawScript) -> (Run, Run) {
    let mut runs = MODES.iter().map(|&mode| {
        let l = server.launch(w, mode, &[]);
        support::run_client_text(
            client,
            &format!("{server:?} {mode:?}"),
            &l.argv,
            &script.0,
            script.1,
            &l.env,
            &l.cwd,
        )
    });
    let (d, p) = (runs.next().unwrap(), runs.next().unwrap());
    eprintln!("{}: {} ms; {}: {} ms", d.label, d.millis, p.label, p.millis);
    (d, p)
}

// ---------------------------------------------------------------------------------------------
// Raw JSON-RPC lines

use proxy_support::Session;

fn raw(w: &World, server: Server, mode: Mode, extra_env: &[(&'static str, &str)]) -> Session {
    let l = server.launch(w, mode, extra_env);
    let mut cmd = Command::new(&l.argv[0]);
    cmd.args(&l.argv[1..])
        .current_dir(&l.cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in &l.env {
        cmd.env(k, v);
    }
    Session::spawn(cmd)
}

/// `initialize` (advertising roots if `roots`) and `initialized`; the initialize result.
fn handshake(s: &mut Session, roots: bool) -> Value {
    let capabilities = if roots {
        json!({"roots": {"listChanged": true}})
    } else {
        json!({})
    };
    s.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "raw", "version": "0"}}}));
    let init = s.response_to(&json!(0));
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    init
}

/// Reads until the answer to `id`, answering roots/list requests (counted into `roots`) and
/// keeping everything else the server sent (notifications), normalised.
fn until_answer(s: &mut Session, id: &Value, roots: &mut usize, seen: &mut Vec<Value>) -> Value {
    loop {
        let msg = s.recv();
        if msg.get("method") == Some(&json!("roots/list")) {
            *roots += 1;
            s.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}));
            continue;
        }
        if msg.get("id") == Some(id) && msg.get("method").is_none() {
            return msg;
        }
        seen.push(msg);
    }
}

/// What one raw session saw for the line-level exchanges that both modes must agree on.
#[derive(Debug, PartialEq)]
struct RawOutcome {
    init: Value,
    surrogate: Value,
    roots_requests: usize,
    after_cancel: Value,
    exit: i32,
    tail: Vec<Value>,
}

fn lines_session(w: &World, server: Server, mode: Mode) -> RawOutcome {
    let env: &[(&'static str, &str)] = match server {
        Server::Fixture => &[("FIXTURE_ASK_ROOTS", "1")],
        Server::Everything => &[],
    };
    let mut s = raw(w, server, mode, env);
    let init = handshake(&mut s, true);
    let mut roots = 0;
    let mut seen = Vec::new();
    // A lone surrogate escape is valid JSON: forwarded byte for byte. server-everything echoes
    // it back; our fixture's own JSON parser (serde_json) refuses the line and logs it — the
    // same in both modes, so the ping that follows is the next answer.
    s.send_raw(
        b"{\"jsonrpc\":\"2.0\",\"id\":\"sur\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"a\\ud800b\",\"text\":\"a\\ud800b\"}}}\n",
    );
    s.send(&json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}));
    let surrogate = if server == Server::Fixture {
        let pong = until_answer(&mut s, &json!("p1"), &mut roots, &mut seen);
        assert!(
            seen.iter().all(|m| m.get("id") != Some(&json!("sur"))),
            "{seen:?}"
        );
        s.wait_stderr("FIXTURE-BAD-LINE");
        pong
    } else {
        // The echo carries the lone surrogate back as `\ud800`, which serde_json cannot hold:
        // compare its raw line. server-everything answers the ping first (tools run async).
        let (mut echo, mut pong) = (None, false);
        while echo.is_none() || !pong {
            let line = s.recv_raw();
            if line.contains("\"sur\"") {
                echo = Some(Value::String(line));
                continue;
            }
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg.get("method") == Some(&json!("roots/list")) {
                roots += 1;
                s.send(&json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"roots": []}}));
            }
            pong |= msg.get("id") == Some(&json!("p1"));
        }
        echo.unwrap()
    };
    // A cancelled request gets no answer fabricated by anyone: the fixture's `block` never
    // answers; server-everything's long-running operation is aborted by its SDK on cancel.
    let (tool, args) = match server {
        Server::Fixture => ("block", json!({})),
        Server::Everything => (
            "trigger-long-running-operation",
            json!({"duration": 30, "steps": 30}),
        ),
    };
    s.send(
        &json!({"jsonrpc": "2.0", "id": "long", "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}),
    );
    if server == Server::Fixture {
        s.wait_stderr("\"tool\":\"block\"");
    }
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": "long", "reason": "user"}}),
    );
    // The fixture serves one request at a time and `block` holds it: only server-everything
    // can answer a ping after the cancel (which proves the cancel was handled, not answered).
    let after_cancel = if server == Server::Everything {
        s.send(&json!({"jsonrpc": "2.0", "id": "p2", "method": "ping"}));
        until_answer(&mut s, &json!("p2"), &mut roots, &mut seen)
    } else {
        Value::Null
    };
    assert!(
        seen.iter().all(|m| m.get("id") != Some(&json!("long"))),
        "{mode:?}: an answer to the cancelled request: {seen:?}"
    );
    // Then end the session by SIGTERM (direct: to the server; proxied: to the proxy, which
    // passes it on): the client sees the same tail and the same status.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let tail: Vec<Value> = s
        .rest()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .collect();
    assert!(
        tail.iter().all(|m| m.get("id") != Some(&json!("long"))),
        "{mode:?}: an answer to the cancelled request: {tail:?}"
    );
    let exit = s.wait_exit();
    RawOutcome {
        init: normalise(&init, w),
        surrogate: normalise(&surrogate, w),
        roots_requests: roots,
        after_cancel,
        exit,
        tail,
    }
}

fn raw_lines(server: Server) {
    let w = World::new();
    let direct = lines_session(&w, server, Mode::Direct);
    let mut proxied = lines_session(&w, server, Mode::Proxied);
    // No extra roots/list: the fixture asks once after `initialized`, and through the proxy
    // the client sees that one question. server-everything asks once too, but later (after
    // an await in its `initialized` handler), so direct a short session may end before it
    // asks; the proxy, which must narrow the jail to the client's roots before the server has
    // state (issue 10, "respawn that loses state"), asks at the first request that can give
    // the server state if the server has not asked yet, and answers the server's own later
    // question itself. So the client is asked exactly once through the proxy, never twice.
    match server {
        Server::Fixture => assert_eq!((direct.roots_requests, proxied.roots_requests), (1, 1)),
        Server::Everything => {
            assert!(direct.roots_requests <= 1, "{direct:?}");
            assert_eq!(proxied.roots_requests, 1, "{proxied:?}");
        }
    }
    // When the server ends with requests unanswered, the proxy answers them (-32603 with
    // `mcpjail/server_failure`) so no client waits forever; direct, the client just sees the
    // pipe close. That is intended. The only such request here is the fixture's lone-surrogate
    // call, which the fixture could not parse (never the cancelled one: checked above).
    let owed: Vec<&Value> = proxied
        .tail
        .iter()
        .filter(|m| m["error"]["data"]["mcpjail/server_failure"].is_object())
        .map(|m| &m["id"])
        .collect();
    let expect_owed: Vec<Value> = match server {
        Server::Fixture => vec![json!("sur")],
        Server::Everything => vec![],
    };
    assert_eq!(
        owed,
        expect_owed.iter().collect::<Vec<_>>(),
        "{:?}",
        proxied.tail
    );
    proxied
        .tail
        .retain(|m| !m["error"]["data"]["mcpjail/server_failure"].is_object());
    fn same(o: &RawOutcome) -> (&Value, &Value, &Value, i32, &Vec<Value>) {
        (&o.init, &o.surrogate, &o.after_cancel, o.exit, &o.tail)
    }
    assert_eq!(same(&proxied), same(&direct), "{server:?}");
    assert_eq!(direct.exit, 128 + 15, "{server:?}");
}

#[test]
fn fixture_raw_lines_surrogate_roots_cancel_sigterm() {
    raw_lines(Server::Fixture);
}

#[test]
fn everything_raw_lines_surrogate_roots_cancel_sigterm() {
    raw_lines(Server::Everything);
}

/// Lines the proxy cannot judge. Direct, each server does what its parser does (the fixture
/// drops the line silently, server-everything's SDK reports a parse error or decodes the bytes
/// lossily); through the proxy each is refused — fail closed, nothing reaches the server — but
/// answered with the request's **own id**, so the client is not left waiting. This difference
/// is intended.
fn unjudgeable(server: Server, mode: Mode) -> Vec<Value> {
    let w = World::new();
    let mut s = raw(&w, server, mode, &[]);
    handshake(&mut s, false);
    let mut roots = 0;
    let mut answers = Vec::new();
    let mut bad = b"{\"jsonrpc\":\"2.0\",\"id\":\"utf8\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"message\":\"".to_vec();
    bad.push(0xff);
    bad.extend_from_slice(b"\",\"text\":\"x\"}}}\n");
    let bom = "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":\"bom\",\"method\":\"ping\"}\n";
    let batch = "[{\"jsonrpc\":\"2.0\",\"id\":\"batch\",\"method\":\"ping\"}]\n";
    for (i, line) in [bad.as_slice(), bom.as_bytes(), batch.as_bytes()]
        .into_iter()
        .enumerate()
    {
        s.send_raw(line);
        let id = json!(format!("after{i}"));
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        let mut seen = Vec::new();
        until_answer(&mut s, &id, &mut roots, &mut seen);
        answers.extend(seen.into_iter().filter(|m| m.get("method").is_none()));
    }
    answers
}

#[test]
fn lines_the_proxy_cannot_judge_fail_closed_with_their_own_id() {
    for server in [Server::Fixture, Server::Everything] {
        let proxied = unjudgeable(server, Mode::Proxied);
        // A batch is answered once with `id: null`, as JSON-RPC 2.0 answers an invalid batch.
        let ids: Vec<&Value> = proxied.iter().map(|m| &m["id"]).collect();
        assert_eq!(
            ids,
            [&json!("utf8"), &json!("bom"), &Value::Null],
            "{server:?}: {proxied:?}"
        );
        assert_eq!(proxied[0]["error"]["code"], json!(-32700), "{proxied:?}");
        assert_eq!(proxied[1]["error"]["code"], json!(-32700), "{proxied:?}");
        assert!(proxied[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("byte-order mark"));
        assert_eq!(proxied[2]["error"]["code"], json!(-32600), "{proxied:?}");
        assert!(
            proxied[2]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("batches"),
            "{proxied:?}"
        );
        // Direct, for the record: the fixture answers none of them.
        let direct = unjudgeable(server, Mode::Direct);
        if server == Server::Fixture {
            assert_eq!(direct, Vec::<Value>::new());
        }
    }
}

/// Closing stdin while a call is in flight: direct, the server finishes the call and exits;
/// through the proxy the same answer arrives and the status is the same.
fn eof_mid_call(server: Server, mode: Mode) -> (Vec<Value>, i32) {
    let w = World::new();
    let mut s = raw(&w, server, mode, &[]);
    handshake(&mut s, false);
    let (tool, args) = match server {
        Server::Fixture => ("after_eof", json!({})),
        Server::Everything => (
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 1}),
        ),
    };
    s.send(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}),
    );
    if server == Server::Fixture {
        s.wait_stderr("\"tool\":\"after_eof\"");
    }
    s.close_stdin();
    let rest = s
        .rest()
        .into_iter()
        .map(|m| normalise(&m, &w))
        .collect::<Vec<_>>();
    (rest, s.wait_exit())
}

#[test]
fn closing_stdin_mid_call_ends_as_direct_fixture() {
    let direct = eof_mid_call(Server::Fixture, Mode::Direct);
    assert_eq!(direct.1, 0);
    assert_eq!(eof_mid_call(Server::Fixture, Mode::Proxied), direct);
}

/// server-everything, with the call sent right before EOF: direct, the server reads the call,
/// then EOF, finishes it and answers (exit 0). The proxy used to close the server's stdin at
/// the client's EOF while it still held the call (waiting for its own `tools/list` prefetch),
/// so the server exited 0 without ever seeing it and the client got -32603 instead.
#[test]
fn closing_stdin_mid_call_ends_as_direct_everything() {
    let direct = eof_mid_call(Server::Everything, Mode::Direct);
    assert_eq!(direct.1, 0);
    assert_eq!(eof_mid_call(Server::Everything, Mode::Proxied), direct);
}
