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
