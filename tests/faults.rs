//! Fault injection: the server dies at each step of the handshake and mid-response, the client
//! goes away mid-response, either side is stopped and continued, the audit log cannot be
//! written, the policy file or pin store is damaged, the private TMPDIR is removed, two
//! proxies of one `--name` race. Each case checks: no hang (every wait has a hang detector),
//! a clear error, nothing lost, the right exit status, no process left behind, no temp dir
//! left behind.
//!
//! The server is `fixtures/fault_server.rs`, told where to fail by `FAULT`.

mod proxy_support;

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use proxy_support::{result_text, Session, PROXY};
use serde_json::{json, Value};

const FAULTY: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-fault");

/// A scratch HOME, state, config and TMPDIR for one proxy (or two sharing them).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["home", "state", "config", "tmp", "work"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        Scratch { dir }
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join(rel)
    }
    /// `mcpjail-proxy <args> -- fault-fixture` with `FAULT=fault`, in this scratch tree.
    fn command(&self, fault: &str, args: &[&str]) -> Command {
        let mut c = Command::new(PROXY);
        c.args(args)
            .args(["--env-keep", "FAULT", "--", FAULTY])
            .current_dir(self.p("work"))
            .env("HOME", self.p("home"))
            .env("XDG_STATE_HOME", self.p("state"))
            .env("XDG_CONFIG_HOME", self.p("config"))
            .env("TMPDIR", self.p("tmp"))
            .env("NO_COLOR", "1")
            .env("FAULT", fault)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
    fn start(&self, fault: &str, args: &[&str]) -> Session {
        Session::spawn(self.command(fault, args))
    }
    /// The proxy's private temp dirs still present (in the user's own directory under TMPDIR,
    /// or in TMPDIR itself).
    fn temp_dirs(&self) -> Vec<std::path::PathBuf> {
        // SAFETY: geteuid cannot fail.
        let own = format!("mcpjail-uid-{}", unsafe { libc::geteuid() });
        let mut dirs = Vec::new();
        for parent in [self.p("tmp"), self.p("tmp").join(&own)] {
            let Ok(entries) = std::fs::read_dir(&parent) else {
                continue;
            };
            dirs.extend(
                entries
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("mcpjail-") && *n != own)
                    .map(|n| parent.join(n)),
            );
        }
        dirs
    }
}

fn init(s: &mut Session) -> Value {
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "faults", "version": "0"}}),
    )
}

fn init_ok(s: &mut Session) {
    let r = init(s);
    assert!(r.get("result").is_some(), "{r}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

/// Every process below `pid` (children of each of its threads, recursively).
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

/// Pidfds of the processes below `pid`, taken while they run (so a reused pid is never
/// mistaken for one of them).
fn pidfds_below(pid: u32) -> Vec<(u32, OwnedFd)> {
    let found: Vec<(u32, OwnedFd)> = descendants(pid)
        .into_iter()
        .filter_map(|p| {
            // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, p as libc::pid_t, 0) };
            // SAFETY: a non-negative return is a fresh descriptor we own.
            (fd >= 0).then(|| (p, unsafe { OwnedFd::from_raw_fd(fd as i32) }))
        })
        .collect();
    assert!(!found.is_empty(), "the server runs below the proxy");
    found
}

/// Every process in `fds` exits (a pidfd polls readable once its process has exited); the
/// timeout only detects a hang.
fn assert_all_exit(fds: &[(u32, OwnedFd)]) {
    use std::os::fd::AsRawFd;
    for (pid, fd) in fds {
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, 20_000) };
        assert_eq!(n, 1, "process {pid} (below the proxy) is still running");
    }
}

/// No child of `pid` is a zombie (the proxy reaps what it started).
fn zombies_of(pid: u32) -> Vec<u32> {
    descendants(pid)
        .into_iter()
        .filter(|c| {
            std::fs::read_to_string(format!("/proc/{c}/stat"))
                .ok()
                .and_then(|s| {
                    s.rfind(')')
                        .map(|i| s[i + 1..].trim_start().starts_with('Z'))
                })
                .unwrap_or(false)
        })
        .collect()
}

/// Wait until the fault server runs below the proxy `pid` (it waits for `initialize`, so
/// before one is sent it cannot be gone), then take the pidfds of everything below the proxy.
fn pidfds_once_the_server_runs(pid: u32) -> Vec<(u32, OwnedFd)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while find_fault_server(pid).is_none() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started"
        );
        std::thread::yield_now();
    }
    pidfds_below(pid)
}

fn find_fault_server(pid: u32) -> Option<u32> {
    // `comm` (the name, cut to 15 bytes) needs no ptrace access, unlike `exe`; only the
    // exec'd server has it (the shim and init below the proxy are forks of the proxy).
    descendants(pid).into_iter().find(|p| {
        std::fs::read_to_string(format!("/proc/{p}/comm"))
            .is_ok_and(|c| c.trim_end() == "mcpjail-fixture")
    })
}

/// The pid (in our namespace) of the fault server running below the proxy `pid`.
fn fault_server_below(pid: u32) -> u32 {
    find_fault_server(pid).expect("the fault server below the proxy")
}

/// What the proxy has written to stderr so far.
fn stderr_text(s: &Session) -> String {
    s.stderr.lock().unwrap().join("\n")
}

/// Call after the proxy exited: all of its stderr.
fn stderr_all(s: &mut Session) -> String {
    s.stderr_closed()
}

fn no_panic(s: &mut Session) {
    let err = stderr_all(s);
    assert!(!err.contains("panicked"), "the proxy panicked:\n{err}");
}

/// The end every fault case shares: the client closes, the proxy exits with `status`, leaves
/// no process and no temp dir behind, and never panicked.
fn finish(scratch: &Scratch, s: &mut Session, below: &[(u32, OwnedFd)], status: i32) {
    s.close_stdin();
    assert_eq!(s.wait_exit(), status, "{}", stderr_text(s));
    assert_all_exit(below);
    assert_eq!(
        scratch.temp_dirs(),
        Vec::<std::path::PathBuf>::new(),
        "temp dir left behind"
    );
    no_panic(s);
}

fn assert_error_mentions(resp: &Value, needles: &[&str]) {
    let msg = resp["error"]["message"].as_str().unwrap_or_default();
    assert!(resp.get("error").is_some(), "expected an error: {resp}");
    for n in needles {
        assert!(msg.contains(n), "{n:?} not in {msg:?}");
    }
}

#[test]
fn server_exits_before_answering_initialize() {
    let sc = Scratch::new();
    let mut s = sc.start("exit-before-initialize", &[]);
    let below = pidfds_once_the_server_runs(s.pid());
    let r = init(&mut s);
    assert_error_mentions(&r, &["exited"]);
    assert!(zombies_of(s.pid()).is_empty());
    // A later request is answered too, not left hanging.
    let r = s.request("tools/list", json!({}));
    assert!(r.get("error").is_some(), "{r}");
    finish(&sc, &mut s, &below, 3);
}

#[test]
fn server_writes_half_its_initialize_answer_and_exits() {
    let sc = Scratch::new();
    let mut s = sc.start("half-initialize", &[]);
    let below = pidfds_once_the_server_runs(s.pid());
    // The half line is not an answer: the client gets a whole JSON-RPC error instead.
    let r = init(&mut s);
    assert_error_mentions(&r, &["exited"]);
    assert!(zombies_of(s.pid()).is_empty());
    finish(&sc, &mut s, &below, 3);
}

#[test]
fn server_exits_at_the_proxys_own_tools_list() {
    let sc = Scratch::new();
    let mut s = sc.start("exit-on-tools-list", &[]);
    let r = init(&mut s);
    assert!(r.get("result").is_some(), "{r}");
    let below = pidfds_below(s.pid());
    // One write: the call is in the proxy's hands before its own `tools/list` (sent once the
    // client's buffered messages are forwarded) ends the server, and so the proxy. Written
    // apart, the call could come after the proxy had ended, as it would after a direct server.
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let call = json!({"jsonrpc": "2.0", "id": "call", "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hi"}}});
    s.send_raw(format!("{initialized}\n{call}\n").as_bytes());
    let r = s.response_to(&json!("call"));
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == json!(true),
        "{r}"
    );
    finish(&sc, &mut s, &below, 3);
}

#[test]
fn server_dies_half_way_through_an_answer() {
    let sc = Scratch::new();
    let mut s = sc.start("half-call:3", &[]);
    init_ok(&mut s);
    let below = pidfds_below(s.pid());
    for i in 1..=2 {
        let r = s.call("echo", json!({"text": format!("n{i}")}));
        assert_eq!(result_text(&r), format!("n{i}"), "{r}");
    }
    let r = s.call("echo", json!({"text": "n3"}));
    assert_error_mentions(&r, &["exited"]);
    finish(&sc, &mut s, &below, 3);
}

#[test]
fn server_killed_with_a_call_in_flight() {
    let sc = Scratch::new();
    // The server kills itself on reading the second call: the call has surely reached it (a
    // kill from here could land before the proxy had even read it from its stdin).
    let mut s = sc.start("sigkill-on-call:2", &[]);
    init_ok(&mut s);
    assert_eq!(result_text(&s.call("echo", json!({"text": "one"}))), "one");
    let below = pidfds_below(s.pid());
    s.send(
        &json!({"jsonrpc": "2.0", "id": "inflight", "method": "tools/call",
                   "params": {"name": "echo", "arguments": {"text": "two"}}}),
    );
    let r = s.response_to(&json!("inflight"));
    assert_error_mentions(&r, &["exited (status 137: killed by SIGKILL)"]);
    assert!(zombies_of(s.pid()).is_empty());
    finish(&sc, &mut s, &below, 128 + 9);
}

#[test]
fn client_goes_away_in_the_middle_of_a_long_answer() {
    use std::io::{BufRead, BufReader, Read, Write};
    let sc = Scratch::new();
    let mut child = sc
        .command("", &[])
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "faults", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "big", "arguments": {"bytes": 8 << 20}}}),
    ];
    for l in &lines {
        writeln!(stdin, "{l}").unwrap();
    }
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert!(first.contains("\"id\":1"), "{first}");
    let below = pidfds_below(child.id());
    // Part of the long answer has arrived: the client goes away (both pipes closed).
    let mut part = vec![0u8; 1 << 20];
    stdout.read_exact(&mut part).unwrap();
    drop(stdout);
    drop(stdin);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the proxy exits in time")
        .unwrap();
    // The server saw its stdin close and exited 0; the proxy passes that on.
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_all_exit(&below);
    assert_eq!(sc.temp_dirs(), Vec::<std::path::PathBuf>::new());
}

#[test]
fn stopping_and_continuing_either_side_loses_nothing() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let sc = Scratch::new();
    let mut s = sc.start("", &[]);
    init_ok(&mut s);
    assert_eq!(
        result_text(&s.call("echo", json!({"text": "warm"}))),
        "warm"
    );
    let below = pidfds_below(s.pid());
    let server = fault_server_below(s.pid());
    for target in [server, s.pid()] {
        let pid = Pid::from_raw(target as i32);
        kill(pid, Signal::SIGSTOP).unwrap();
        for i in 0..50 {
            s.send(
                &json!({"jsonrpc": "2.0", "id": format!("s{target}-{i}"), "method": "tools/call",
                           "params": {"name": "echo", "arguments": {"text": format!("t{i}")}}}),
            );
        }
        kill(pid, Signal::SIGCONT).unwrap();
        for i in 0..50 {
            let r = s.response_to(&json!(format!("s{target}-{i}")));
            assert_eq!(result_text(&r), format!("t{i}"), "{r}");
        }
    }
    finish(&sc, &mut s, &below, 0);
}

#[test]
fn an_audit_log_that_cannot_be_written_at_start_refuses_the_session() {
    let sc = Scratch::new();
    let mut s = sc.start("", &["--log-file", "/dev/full"]);
    assert_eq!(s.wait_exit(), 1, "{}", stderr_text(&s));
    let err = stderr_all(&mut s);
    assert!(
        err.contains("/dev/full") && err.contains("hint:"),
        "names the file and the fix: {err}"
    );
    assert_eq!(sc.temp_dirs(), Vec::<std::path::PathBuf>::new());

    // A directory the proxy's user cannot write (root ignores modes, so run it as nobody).
    let ro = sc.p("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(sc.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(sc.p("tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let log = ro.join("audit.jsonl");
    let c = sc.command("", &["--log-file", log.to_str().unwrap()]);
    let inner = c.get_program().to_owned();
    let args: Vec<_> = c.get_args().map(|a| a.to_owned()).collect();
    let mut as_nobody = Command::new("setpriv");
    as_nobody
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(inner)
        .args(args)
        .current_dir("/")
        .envs(
            c.get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut s = Session::spawn(as_nobody);
    assert_eq!(s.wait_exit(), 1, "{}", stderr_text(&s));
    let err = stderr_all(&mut s);
    assert!(
        err.contains(log.to_str().unwrap()) && err.contains("hint:"),
        "{err}"
    );
    assert!(!log.exists());
}

#[test]
fn an_audit_log_that_fills_up_during_the_session_fails_closed_and_loses_no_record() {
    let sc = Scratch::new();
    let log = sc.p("audit.jsonl");
    // The file system is "full" past 64 KiB for this proxy: RLIMIT_FSIZE makes a write past it
    // fail with EFBIG (SIGXFSZ ignored, as a full disk's ENOSPC would). The pin file and the
    // first records fit; the filler takes the log to just under the limit.
    let limit = 64 * 1024;
    std::fs::write(&log, vec![b'\n'; limit - 1200]).unwrap();
    let mut c = sc.command("", &["--log-file", log.to_str().unwrap()]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit as libc::rlim_t,
                rlim_max: limit as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut s = Session::spawn(c);
    init_ok(&mut s);
    let below = pidfds_below(s.pid());
    // Pipelined, so answers to calls already forwarded arrive after the log has failed.
    for i in 0..40 {
        s.send(&json!({"jsonrpc": "2.0", "id": format!("c{i:02}"), "method": "tools/call",
                       "params": {"name": "echo",
                                  "arguments": {"text": format!("call-{i:02}-{}", "p".repeat(200))}}}));
    }
    let ids: Vec<Value> = (0..40).map(|i| json!(format!("c{i:02}"))).collect();
    let mut answered = Vec::new();
    for (i, r) in s.responses_to(&ids).into_iter().enumerate() {
        if r.get("result").is_some() {
            answered.push(i);
        }
    }
    assert!(!answered.is_empty(), "some records fit before the limit");
    let r = s.call("echo", json!({"text": "after"}));
    assert_error_mentions(&r, &["audit log", log.to_str().unwrap(), "hint:"]);
    // Non-call traffic still flows.
    let pong = s.request("ping", json!({}));
    assert!(pong.get("result").is_some(), "{pong}");
    finish(&sc, &mut s, &below, 0);
    // Nothing lost: every answered call is in the file or, the one that did not fit, on stderr.
    let text = std::fs::read_to_string(&log).unwrap();
    let err = stderr_all(&mut s);
    for k in answered {
        let id = format!("call-{k:02}-");
        assert!(
            text.contains(&id)
                || err
                    .lines()
                    .any(|l| l.contains("not written") && l.contains(&id)),
            "record of {id} lost"
        );
    }
    assert!(
        err.contains("not written"),
        "the record that did not fit is on stderr: {err}"
    );
    // What is in the file is whole lines only (the partial one was cut back off).
    for l in text.lines().filter(|l| !l.is_empty()) {
        serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"));
    }
}

#[test]
fn a_half_written_or_unreadable_policy_file_is_named_with_the_fix() {
    let sc = Scratch::new();
    let half = sc.p("half.toml");
    std::fs::write(&half, "[scope]\nread = [\"/srv/da").unwrap();
    let before = std::fs::read(&half).unwrap();
    let mut s = sc.start("", &["--policy", half.to_str().unwrap()]);
    assert_eq!(s.wait_exit(), 1);
    let err = stderr_all(&mut s);
    assert!(err.contains(half.to_str().unwrap()), "{err}");
    assert_eq!(std::fs::read(&half).unwrap(), before, "never rewritten");

    // Unreadable (a directory where the file should be: root reads any mode).
    let dir = sc.p("dir.toml");
    std::fs::create_dir(&dir).unwrap();
    let mut s = sc.start("", &["--policy", dir.to_str().unwrap()]);
    assert_eq!(s.wait_exit(), 1);
    let err = stderr_all(&mut s);
    assert!(err.contains(dir.to_str().unwrap()), "{err}");

    // The per-name policy file found by itself ($XDG_CONFIG_HOME/mcpjail/servers/NAME.toml).
    let named = sc.p("config/mcpjail/servers/fx.toml");
    std::fs::create_dir_all(named.parent().unwrap()).unwrap();
    std::fs::write(&named, "[scope]\nwrite = [").unwrap();
    let mut s = sc.start("", &["--name", "fx"]);
    assert_eq!(s.wait_exit(), 1);
    let err = stderr_all(&mut s);
    assert!(err.contains(named.to_str().unwrap()), "{err}");
    assert_eq!(std::fs::read(&named).unwrap(), b"[scope]\nwrite = [");
    assert_eq!(sc.temp_dirs(), Vec::<std::path::PathBuf>::new());
}

fn pin_files(sc: &Scratch) -> Vec<PathBuf> {
    let dir = sc.p("state/mcpjail/pins");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    rd.map(|e| e.unwrap().path()).collect()
}

#[test]
fn a_half_written_or_unreadable_pin_store_is_reported_and_never_overwritten() {
    let sc = Scratch::new();
    // First a good run writes the pins.
    let mut s = sc.start("", &["--name", "fx"]);
    init_ok(&mut s);
    let below = pidfds_below(s.pid());
    assert_eq!(result_text(&s.call("echo", json!({"text": "a"}))), "a");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let files = pin_files(&sc);
    assert_eq!(files.len(), 1, "{files:?}");
    let pin = files[0].clone();
    let good = std::fs::read(&pin).unwrap();
    let half = &good[..good.len() / 2];
    std::fs::write(&pin, half).unwrap();

    // Warn mode: the server still runs, the damage is named with the fix, the file is kept.
    let mut s = sc.start("", &["--name", "fx"]);
    init_ok(&mut s);
    assert_eq!(result_text(&s.call("echo", json!({"text": "b"}))), "b");
    finish(&sc, &mut s, &below, 0);
    let err = stderr_all(&mut s);
    assert!(
        err.contains(pin.to_str().unwrap()) && err.contains("hint:"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&pin).unwrap(),
        half,
        "the damaged file is not overwritten"
    );

    // Block mode refuses to start on it.
    let mut s = sc.start("", &["--name", "fx", "--pin", "block"]);
    assert_eq!(s.wait_exit(), 1);
    assert!(stderr_all(&mut s).contains(pin.to_str().unwrap()));
    assert_eq!(std::fs::read(&pin).unwrap(), half);

    // Unreadable (a directory in the file's place): the same, and it stays as it is.
    std::fs::remove_file(&pin).unwrap();
    std::fs::create_dir(&pin).unwrap();
    let mut s = sc.start("", &["--name", "fx"]);
    init_ok(&mut s);
    assert_eq!(result_text(&s.call("echo", json!({"text": "c"}))), "c");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let err = stderr_all(&mut s);
    assert!(
        err.contains(pin.to_str().unwrap()) && err.contains("hint:"),
        "{err}"
    );
    assert!(pin.is_dir());
}

#[test]
fn the_private_tmpdir_removed_under_the_proxy_ends_cleanly() {
    let sc = Scratch::new();
    let mut s = sc.start("", &[]);
    init_ok(&mut s);
    let below = pidfds_below(s.pid());
    let dirs = sc.temp_dirs();
    assert_eq!(dirs.len(), 1);
    std::fs::remove_dir_all(&dirs[0]).unwrap();
    assert_eq!(
        result_text(&s.call("echo", json!({"text": "still"}))),
        "still"
    );
    finish(&sc, &mut s, &below, 0);
}

#[test]
fn two_proxies_of_one_name_write_whole_pin_files() {
    let sc = Scratch::new();
    for round in 0..5 {
        let mut a = sc.start("", &["--name", "twin"]);
        let mut b = sc.start("", &["--name", "twin"]);
        init_ok(&mut a);
        init_ok(&mut b);
        let ra = a.call("echo", json!({"text": "a"}));
        let rb = b.call("echo", json!({"text": "b"}));
        assert_eq!(
            (result_text(&ra), result_text(&rb)),
            ("a".into(), "b".into())
        );
        a.close_stdin();
        b.close_stdin();
        assert_eq!(a.wait_exit(), 0);
        assert_eq!(b.wait_exit(), 0);
        let files = pin_files(&sc);
        assert_eq!(
            files.len(),
            1,
            "round {round}: one pin file, no temp file left: {files:?}"
        );
        let pins: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap())
            .unwrap_or_else(|e| panic!("round {round}: the pin file does not parse: {e}"));
        let tools = pins["tools"].as_object().expect("a tools map");
        let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["big", "echo", "flood", "storm"], "{pins}");
    }
    assert_eq!(sc.temp_dirs(), Vec::<std::path::PathBuf>::new());
}
