//! Lifecycle: the session ends the way it would have ended directly — the proxy mirrors the
//! client (a closed stdin closes the server's, a signal is passed on), adds no timers, exits
//! with the server's status, and leaves no process behind. Each case runs direct and through
//! the proxy and compares what the client got and the exit status.

mod proxy_support;

use proxy_support::*;
use serde_json::{json, Value};

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry: only a reaped process is gone.
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn server_pid(s: &mut Session) -> u32 {
    let r = s.call("pid", json!({}));
    result_text(&r).parse().expect("pid")
}

fn start(t: &Tree, direct: bool, env: &[(&'static str, &str)]) -> Session {
    let mut opts = Opts::new(t);
    opts.direct = direct;
    for (k, v) in env {
        opts.env.push((k, v.to_string()));
    }
    Session::start(t, opts)
}

fn signal(s: &Session, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(s.pid() as i32), sig).unwrap();
}

/// Close stdin while a call is in flight; the server answers it after EOF. What the client
/// got after closing, and the exit status.
fn eof_mid_call(direct: bool) -> (Vec<Value>, i32) {
    let t = Tree::new();
    let mut s = start(&t, direct, &[]);
    s.initialize();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                   "params": {"name": "after_eof", "arguments": {}}}),
    );
    s.wait_stderr("\"tool\":\"after_eof\"");
    s.close_stdin();
    let rest = s.rest();
    (rest, s.wait_exit())
}

#[test]
fn client_eof_mid_call_lets_the_server_finish_as_direct() {
    let direct = eof_mid_call(true);
    let proxied = eof_mid_call(false);
    assert_eq!(direct.1, 0);
    assert_eq!(proxied, direct);
}

#[test]
fn client_eof_ends_the_session_with_the_servers_status() {
    let t = Tree::new();
    let mut s = start(&t, false, &[]);
    s.initialize();
    let pid = server_pid(&mut s);
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    assert!(!alive(pid), "server {pid} still exists");
}

/// SIGTERM with stdin open: the exit status.
fn sigterm_while_idle(direct: bool) -> i32 {
    let t = Tree::new();
    let mut s = start(&t, direct, &[]);
    s.initialize();
    signal(&s, nix::sys::signal::Signal::SIGTERM);
    s.wait_exit()
}

#[test]
fn sigterm_is_passed_on_and_the_status_is_the_servers_as_direct() {
    let direct = sigterm_while_idle(true);
    assert_eq!(direct, 128 + 15);
    assert_eq!(sigterm_while_idle(false), direct);
}

/// A server that keeps running after EOF: closing stdin does not end it (directly or not);
/// the client's SIGTERM then does.
fn lingering_then_sigterm(direct: bool) -> i32 {
    let t = Tree::new();
    let mut s = start(&t, direct, &[("FIXTURE_LINGER", "1")]);
    s.initialize();
    s.close_stdin();
    s.wait_stderr("FIXTURE-LINGERING");
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "ended by closing stdin alone"
    );
    signal(&s, nix::sys::signal::Signal::SIGTERM);
    s.wait_exit()
}

#[test]
fn a_server_that_lingers_after_eof_ends_at_the_clients_signal_as_direct() {
    let direct = lingering_then_sigterm(true);
    assert_eq!(direct, 128 + 15);
    assert_eq!(lingering_then_sigterm(false), direct);
}

#[test]
fn a_crash_mid_call_answers_in_flight_requests_and_exits_with_its_status() {
    let t = Tree::new();
    let mut s = start(&t, false, &[]);
    s.initialize();
    let pid = server_pid(&mut s);
    s.send(
        &json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
                   "params": {"name": "crash", "arguments": {"code": 7}}}),
    );
    let r = s.recv();
    assert_eq!(r["id"], json!("c1"), "{r}");
    assert_eq!(r["error"]["code"], json!(-32603), "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("exited"),
        "{r}"
    );
    assert_eq!(s.wait_exit(), 7);
    assert!(!alive(pid));
}

#[test]
fn sigterm_to_the_proxy_leaves_no_server_behind() {
    let t = Tree::new();
    let mut s = start(&t, false, &[("FIXTURE_LINGER", "1")]);
    s.initialize();
    let pid = server_pid(&mut s);
    signal(&s, nix::sys::signal::Signal::SIGTERM);
    // stdin is still open: only the signal can have ended the session.
    assert_eq!(s.wait_exit(), 128 + 15);
    assert!(!alive(pid), "server {pid} left behind");
}

/// A server that writes its own signal dispositions and mask (from `/proc/self/status`, read by
/// the shell itself) to stderr, then answers `initialize`.
const SIGNAL_REPORT: &str = r#"read -r line
while IFS= read -r l; do
  case "$l" in SigIgn*|SigBlk*) echo "$l" >&2;; esac
done < /proc/self/status
echo '{"jsonrpc":"2.0","id":0,"result":{}}'
"#;

/// Run `SIGNAL_REPORT` from a launcher that ignores `ignored` (`trap '' …`, then `exec`), direct
/// or through the proxy (`proxy_args` before `--`). The server's `SigIgn`/`SigBlk` lines, and
/// (through the proxy) the proxy's own `SigIgn` mask read while it runs.
fn signal_report(ignored: &str, proxy_args: Option<&[&str]>) -> (Vec<String>, Option<u64>) {
    use std::io::{BufRead, Read, Write};
    let t = Tree::new();
    let launcher = format!("trap '' {ignored}; exec \"$@\"");
    let mut c = std::process::Command::new("sh");
    c.args(["-c", &launcher, "launcher"]);
    if let Some(args) = proxy_args {
        c.arg(PROXY).args(args).arg("--");
    }
    c.args(["sh", "-c", SIGNAL_REPORT])
        .current_dir(t.scope())
        .env("HOME", t.root().join("home"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("start");
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"0"}}}}}}"#
    )
    .expect("write");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut answer = String::new();
    stdout.read_line(&mut answer).expect("read the answer");
    assert!(answer.contains(r#""id":0"#), "answered: {answer:?}");
    // The launcher exec'd: the child's pid is the proxy's (or the server's, direct).
    let own_ignored = proxy_args.map(|_| {
        let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
            .expect("the proxy's status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:\t"))
            .and_then(|m| u64::from_str_radix(m, 16).ok())
            .expect("SigIgn")
    });
    drop(stdin);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut stderr)
        .expect("stderr");
    assert!(child.wait().expect("wait").success(), "{stderr}");
    let lines = stderr
        .lines()
        .filter(|l| l.starts_with("SigIgn") || l.starts_with("SigBlk"))
        .map(str::to_string)
        .collect();
    (lines, own_ignored)
}

/// Bit of signal `n` in a `/proc` signal mask.
fn bit(n: i32) -> u64 {
    1 << (n - 1)
}

#[test]
fn signals_the_launcher_ignored_stay_ignored_for_the_server_as_direct() {
    let int_term = bit(libc::SIGINT) | bit(libc::SIGTERM);
    for ignored in ["INT TERM", "HUP"] {
        let (direct, _) = signal_report(ignored, None);
        assert_eq!(direct.len(), 2, "{direct:?}");
        for args in [&["--pin", "off"][..], &["--pin", "off", "--no-jail"][..]] {
            let (proxied, proxy_ignores) = signal_report(ignored, Some(args));
            assert_eq!(
                proxied, direct,
                "the server's signal mask and dispositions are those of a direct start \
                 (launcher ignoring {ignored}, proxy {args:?})"
            );
            let proxy_ignores = proxy_ignores.expect("the proxy's mask");
            let passed_on = int_term | bit(libc::SIGHUP);
            let expected = if ignored == "INT TERM" {
                int_term
            } else {
                bit(libc::SIGHUP)
            };
            assert_eq!(
                proxy_ignores & passed_on,
                expected,
                "the proxy itself ignores a signal it passes on exactly when it was started so \
                 ({ignored}): {proxy_ignores:x}"
            );
        }
    }
}

/// SIGUSR1, SIGUSR2, SIGHUP and SIGQUIT to the process the client started: each reaches the
/// server (which reports it and goes on), and the session ends at EOF with the server's status.
fn other_signals(direct: bool) -> i32 {
    use nix::sys::signal::Signal;
    let t = Tree::new();
    let mut s = start(&t, direct, &[("FIXTURE_REPORT_SIGNALS", "1")]);
    s.initialize();
    for sig in [
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGHUP,
        Signal::SIGQUIT,
    ] {
        signal(&s, sig);
        s.wait_stderr(&format!("FIXTURE-SIGNAL {:02}", sig as i32));
    }
    let pid = server_pid(&mut s);
    assert!(alive(pid), "the server goes on after the signals");
    s.close_stdin();
    s.wait_exit()
}

#[test]
fn signals_for_the_server_reach_it_and_do_not_end_the_proxy_as_direct() {
    assert_eq!(other_signals(true), 0);
    assert_eq!(other_signals(false), 0);
}

/// The wait status of the process the client started, once the server was ended by `signal`:
/// sent to that process by the client (passed on by the proxy), or, with `to_server`, sent to
/// the server itself (a crash, as the client sees it).
fn ended_by(direct: bool, signal: nix::sys::signal::Signal, to_server: bool) -> String {
    let t = Tree::new();
    let mut s = start(&t, direct, &[]);
    s.initialize();
    let pid = server_pid(&mut s);
    let target = if to_server { pid } else { s.pid() };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(target as i32), signal).unwrap();
    match s.wait_status() {
        nix::sys::wait::WaitStatus::Signaled(_, sig, _) => format!("killed by {sig}"),
        nix::sys::wait::WaitStatus::Exited(_, code) => format!("exited {code}"),
        other => format!("{other:?}"),
    }
}

#[test]
fn a_server_ended_by_a_signal_ends_the_proxy_by_the_same_signal_as_direct() {
    use nix::sys::signal::Signal;
    for (signal, to_server) in [
        (Signal::SIGTERM, false),
        (Signal::SIGKILL, true),
        (Signal::SIGABRT, true),
    ] {
        let direct = ended_by(true, signal, to_server);
        assert_eq!(direct, format!("killed by {signal}"));
        assert_eq!(
            ended_by(false, signal, to_server),
            direct,
            "the client sees the signal, not an exit code of 128+signal"
        );
    }
}
