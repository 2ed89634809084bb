//! Shared helpers for the proxy integration tests: a scratch tree with a scope, secrets outside
//! it and an escaping symlink; and a session that drives a real `mcpjail-proxy` (or the fixture
//! server directly, for control runs) with raw JSON-RPC lines over pipes.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

pub const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");
pub const FIXTURE: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-files");

/// Upper bound for one expected line: a hang fails the test instead of blocking CI forever.
const LINE_TIMEOUT: Duration = Duration::from_secs(20);

/// ```text
/// T/scope/a.txt            "alpha"
/// T/scope/sub/b.txt        "beta"
/// T/scope/link -> T/outside/secret.txt
/// T/outside/secret.txt     "TOP-SECRET"
/// T/scope-evil/x.txt       "evil"       (sibling whose name starts with the scope's)
/// T/home/.ssh/id_rsa       "SSH-KEY"    (HOME for the proxy)
/// T/ro/r.txt               "read-only"  (given with --allow-read in some tests)
/// ```
pub struct Tree {
    pub dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path();
        for (rel, text) in [
            ("scope/a.txt", "alpha"),
            ("scope/sub/b.txt", "beta"),
            ("outside/secret.txt", "TOP-SECRET"),
            ("scope-evil/x.txt", "evil"),
            ("home/.ssh/id_rsa", "SSH-KEY"),
            ("ro/r.txt", "read-only"),
        ] {
            let p = t.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        std::os::unix::fs::symlink(t.join("outside/secret.txt"), t.join("scope/link")).unwrap();
        Tree { dir }
    }
    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }
    pub fn scope(&self) -> PathBuf {
        self.root().join("scope")
    }
    pub fn p(&self, rel: &str) -> String {
        self.root().join(rel).display().to_string()
    }
}

/// A running proxy (or bare fixture) with line-oriented access to its stdio.
pub struct Session {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: Receiver<String>,
    stderr_rx: Receiver<String>,
    pub stderr: Arc<Mutex<Vec<String>>>,
    next_id: i64,
    reaped: bool,
}

pub struct Opts<'a> {
    pub proxy_args: Vec<String>,
    pub cwd: PathBuf,
    pub home: PathBuf,
    pub env: Vec<(&'a str, String)>,
    /// Run the fixture directly (control run), not behind the proxy.
    pub direct: bool,
}

impl<'a> Opts<'a> {
    pub fn new(tree: &Tree) -> Opts<'a> {
        Opts {
            proxy_args: Vec::new(),
            cwd: tree.scope(),
            home: tree.root().join("home"),
            env: Vec::new(),
            direct: false,
        }
    }
}

impl Session {
    /// Start `mcpjail-proxy <proxy_args> -- <fixture> <scope>` in `cwd`.
    pub fn start(tree: &Tree, opts: Opts<'_>) -> Session {
        let scope = tree.scope().display().to_string();
        let mut cmd = if opts.direct {
            let mut c = Command::new(FIXTURE);
            c.arg(&scope);
            c
        } else {
            let mut c = Command::new(PROXY);
            c.args(&opts.proxy_args);
            // The jail scrubs the server's environment: pass the fixture's knobs through.
            for (k, _) in &opts.env {
                c.arg("--env-keep").arg(k);
            }
            c.arg("--").arg(FIXTURE).arg(&scope);
            c
        };
        cmd.current_dir(&opts.cwd)
            .env("HOME", &opts.home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &opts.env {
            cmd.env(k, v);
        }
        Session::spawn(cmd)
    }

    pub fn spawn(mut cmd: Command) -> Session {
        let mut child = cmd.spawn().expect("start the proxy");
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        // Not piped only where a test starts the proxy with its stderr closed.
        let err = child.stderr.take();
        let (tx, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (etx, stderr_rx) = mpsc::channel();
        let sink = stderr.clone();
        if let Some(err) = err {
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[proxy stderr] {line}");
                    sink.lock().unwrap().push(line.clone());
                    let _ = etx.send(line);
                }
            });
        }
        Session {
            child,
            stdin,
            stdout,
            stderr_rx,
            stderr,
            next_id: 100,
            reaped: false,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn send(&mut self, msg: &Value) {
        let mut line = serde_json::to_vec(msg).unwrap();
        line.push(b'\n');
        self.send_raw(&line);
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next line the proxy writes to stdout, parsed.
    pub fn recv(&mut self) -> Value {
        let line = self
            .stdout
            .recv_timeout(LINE_TIMEOUT)
            .expect("a line from the proxy in time");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad JSON from proxy: {e}: {line}"))
    }

    pub fn recv_raw(&mut self) -> String {
        self.stdout
            .recv_timeout(LINE_TIMEOUT)
            .expect("a line from the proxy in time")
    }

    /// Is stdout at EOF (or silent) — used after the proxy exits.
    pub fn stdout_closed(&mut self) -> bool {
        matches!(
            self.stdout.recv_timeout(LINE_TIMEOUT),
            Err(mpsc::RecvTimeoutError::Disconnected)
        )
    }

    /// Every line still to come on stdout, parsed, until it closes.
    pub fn rest(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        while let Ok(line) = self.stdout.recv_timeout(LINE_TIMEOUT) {
            all.push(
                serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("bad JSON from proxy: {e}: {line}")),
            );
        }
        all
    }

    /// Everything the proxy wrote to stderr, once its stderr has closed (after it exits: the
    /// reader thread may still be behind when `wait_exit` returns).
    pub fn stderr_closed(&mut self) -> String {
        while self.stderr_rx.recv_timeout(LINE_TIMEOUT).is_ok() {}
        self.stderr.lock().unwrap().join("\n")
    }

    /// Wait until a stderr line contains `needle`.
    pub fn wait_stderr(&mut self, needle: &str) -> String {
        loop {
            let line = self
                .stderr_rx
                .recv_timeout(LINE_TIMEOUT)
                .unwrap_or_else(|_| panic!("no stderr line containing {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// Send a request and return its response (skipping notifications and server requests).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response_to(&json!(id))
    }

    /// The responses to all of `ids`, in whatever order they come: an answer the proxy gives
    /// itself (a refusal) may overtake the server's answer to an earlier request, as JSON-RPC
    /// allows. Other messages are skipped.
    pub fn responses_to(&mut self, ids: &[Value]) -> Vec<Value> {
        let mut got: Vec<Option<Value>> = vec![None; ids.len()];
        while got.iter().any(Option::is_none) {
            let msg = self.recv();
            if msg.get("method").is_some() {
                continue;
            }
            if let Some(i) = ids.iter().position(|id| msg.get("id") == Some(id)) {
                got[i] = Some(msg);
            }
        }
        got.into_iter().flatten().collect()
    }

    pub fn response_to(&mut self, id: &Value) -> Value {
        loop {
            let msg = self.recv();
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return msg;
            }
        }
    }

    pub fn initialize(&mut self) -> Value {
        let resp = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "proxy-tests", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        resp
    }

    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// Send a ping and return the first answer the client reads after it (a test checks no
    /// other answer came first).
    pub fn recv_next_answer_after_ping(&mut self) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
        loop {
            let msg = self.recv();
            if msg.get("method").is_none() {
                return msg;
            }
        }
    }

    /// Prove the server is still serving and everything sent before has been processed by it:
    /// the fixture handles requests in order and logs each call before answering.
    pub fn barrier(&mut self) -> String {
        self.next_id += 1;
        let marker = format!("barrier-{}", self.next_id);
        let resp = self.call("echo", json!({ "text": marker }));
        assert_eq!(result_text(&resp), marker, "echo through the proxy: {resp}");
        self.wait_stderr(&marker);
        marker
    }

    /// The FIXTURE-CALL lines seen so far.
    pub fn fixture_calls(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("FIXTURE-CALL "))
            .cloned()
            .collect()
    }

    /// Wait for the proxy to exit (reaping it) and return its exit code, 128+n for a signal.
    pub fn wait_exit(&mut self) -> i32 {
        use nix::sys::wait::WaitStatus;
        match self.wait_status() {
            WaitStatus::Exited(_, code) => code,
            WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
            other => panic!("unexpected wait status {other:?}"),
        }
    }

    /// Wait for the process to end (bounded): its wait status as the kernel reports it, so a
    /// signal is told apart from an exit code of 128+signal.
    pub fn wait_status(&mut self) -> nix::sys::wait::WaitStatus {
        use nix::sys::wait::waitpid;
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(waitpid(pid, None));
        });
        let status = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the proxy exits in time")
            .expect("waitpid");
        self.reaped = true;
        status
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stdin = None;
        if !self.reaped && self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The text of a CallToolResult.
pub fn result_text(resp: &Value) -> String {
    resp["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

pub fn is_denial(resp: &Value) -> bool {
    resp["result"]["isError"] == json!(true)
        && resp["result"]["_meta"]["mcpjail/denial"].is_object()
}

pub fn path_str(p: &Path) -> String {
    p.display().to_string()
}
