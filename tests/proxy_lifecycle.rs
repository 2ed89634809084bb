//! Lifecycle: the proxy ends with its server, with the server's status, and leaves no process
//! behind.

mod proxy_support;

use proxy_support::*;
use serde_json::json;

fn alive(pid: u32) -> bool {
    // A zombie still has a /proc entry: only a reaped process is gone.
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn server_pid(s: &mut Session) -> u32 {
    let r = s.call("pid", json!({}));
    result_text(&r).parse().expect("pid")
}

#[test]
fn client_eof_ends_the_session_with_the_servers_status() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    let pid = server_pid(&mut s);
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    assert!(!alive(pid), "server {pid} still exists");
}

#[test]
fn a_server_that_lingers_after_eof_is_terminated() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_LINGER", "1".into()));
    let mut s = Session::start(&t, opts);
    s.initialize();
    let pid = server_pid(&mut s);
    s.close_stdin();
    s.wait_stderr("FIXTURE-LINGERING");
    assert_eq!(s.wait_exit(), 128 + 15, "SIGTERM status expected");
    assert!(!alive(pid));
}

#[test]
fn a_server_that_ignores_sigterm_is_killed() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_LINGER", "ignore-term".into()));
    let mut s = Session::start(&t, opts);
    s.initialize();
    let pid = server_pid(&mut s);
    s.close_stdin();
    assert_eq!(s.wait_exit(), 128 + 9, "SIGKILL status expected");
    assert!(!alive(pid));
}

#[test]
fn a_crash_mid_call_answers_in_flight_requests_and_exits_with_its_status() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
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
fn sigterm_to_the_proxy_shuts_the_server_down() {
    let t = Tree::new();
    let mut opts = Opts::new(&t);
    opts.env.push(("FIXTURE_LINGER", "1".into()));
    let mut s = Session::start(&t, opts);
    s.initialize();
    let pid = server_pid(&mut s);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(s.pid() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    // stdin is still open: only the signal can have ended the session.
    assert_eq!(s.wait_exit(), 128 + 15);
    assert!(!alive(pid), "server {pid} left behind");
}
