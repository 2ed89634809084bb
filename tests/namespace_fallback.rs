//! The proxy assumes the kernel lets the server's child create its namespaces instead of
//! probing in throwaway children first (the probes were most of a jailed start-up). Where the
//! kernel refuses, the start must still end where probing would have: the jail prepared again
//! with the kernel probed, the server running under what the kernel allows, the live log saying
//! so, and `--require-full` refusing — never a failed start, never a silent downgrade.
//!
//! The refusing kernel is a real one: a user namespace of the test's own where user namespaces
//! are used up (`max_user_namespaces=0`) and every capability is dropped (a container without
//! CAP_SYS_ADMIN), as `sandbox_carve` does for the library.

mod proxy_support;

use std::process::{Command, Stdio};

use proxy_support::*;
use serde_json::json;

/// `mcpjail-proxy --log <extra> -- fixture <scope>`, run inside a fresh user namespace; with
/// `refuse`, one where no namespace can be created.
fn proxy_in_userns(tree: &Tree, refuse: bool, extra: &[&str]) -> Session {
    let mut c = Command::new("unshare");
    c.args(["-U", "-r"]);
    if refuse {
        c.args([
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces && \
             exec setpriv --bounding-set=-all --inh-caps=-all -- \"$0\" \"$@\"",
        ]);
    }
    c.arg(PROXY)
        .arg("--log")
        .args(extra)
        .args(["--", FIXTURE])
        .arg(tree.scope())
        .current_dir(tree.scope())
        .env("HOME", tree.root().join("home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Session::spawn(c)
}

/// `(pgrp, session)` of `pid`, from `/proc/<pid>/stat` (counted from the last `)`: the command
/// name may hold anything).
fn group_and_session(pid: u32) -> (u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<u32> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .skip(2)
        .take(2)
        .map(|v| v.parse().unwrap())
        .collect();
    (f[0], f[1])
}

/// The pid of the fixture server running below `proxy` (directly, or under the PID
/// namespace's shim and init).
fn server_below(proxy: u32) -> u32 {
    let fixture = std::fs::canonicalize(FIXTURE).unwrap();
    let mut parents = vec![proxy];
    while let Some(parent) = parents.pop() {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
                continue;
            };
            let ppid = status
                .lines()
                .find_map(|l| l.strip_prefix("PPid:"))
                .and_then(|v| v.trim().parse::<u32>().ok());
            if ppid != Some(parent) {
                continue;
            }
            if std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == fixture) {
                return pid;
            }
            parents.push(pid);
        }
    }
    panic!("no fixture server below the proxy ({proxy})");
}

fn echo_works(s: &mut Session) {
    s.initialize();
    let r = s.call("echo", json!({"text": "through"}));
    assert_eq!(
        r["result"]["content"][0]["text"], "through",
        "the server answers: {r}"
    );
}

#[test]
fn a_kernel_that_refuses_namespaces_gets_the_probed_jail_and_the_server_still_starts() {
    let tree = Tree::new();
    let mut s = proxy_in_userns(&tree, true, &[]);
    echo_works(&mut s);
    // Without a PID namespace to hold its descendants, the server leads a session of its own,
    // by which the proxy finds and ends everything it starts.
    let server = server_below(s.pid());
    assert_eq!(
        group_and_session(server),
        (server, server),
        "the server leads its own session"
    );
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let log = s.stderr_closed();
    assert!(
        log.contains("prepared again with the kernel probed"),
        "the log says the assumption failed and what was done:\n{log}"
    );
    assert!(
        log.contains("the kernel refuses a user namespace"),
        "and why:\n{log}"
    );
    assert!(
        log.contains("jail metadata: NOT enforced (cannot mount the rest read-only"),
        "the layers after the probe say what is not enforced:\n{log}"
    );
    assert!(
        log.contains("jail landlock_fs: fully enforced"),
        "Landlock needs no namespace and stays:\n{log}"
    );
}

#[test]
fn control_where_namespaces_work_the_assumption_holds_and_nothing_is_probed_again() {
    let tree = Tree::new();
    let mut s = proxy_in_userns(&tree, false, &[]);
    echo_works(&mut s);
    // With one, the server stays in the proxy's session, in a process group of its own.
    let server = server_below(s.pid());
    let (proxy_group, proxy_session) = group_and_session(s.pid());
    let (group, session) = group_and_session(server);
    assert_eq!(session, proxy_session, "the proxy's session");
    assert_ne!(group, proxy_group, "a process group of its own");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let log = s.stderr_closed();
    assert!(!log.contains("prepared again"), "{log}");
    assert!(log.contains("jail metadata: fully enforced"), "{log}");
    assert!(log.contains("jail process_tree: fully enforced"), "{log}");
}

#[test]
fn require_full_refuses_when_the_probed_jail_is_not_full() {
    let tree = Tree::new();
    let mut s = proxy_in_userns(&tree, true, &["--require-full"]);
    s.close_stdin();
    let status = s.wait_exit();
    let log = s.stderr_closed();
    assert_ne!(
        status, 0,
        "a partial jail under --require-full must not run:\n{log}"
    );
    assert!(
        log.contains("not fully enforced") || log.contains("NOT enforced"),
        "{log}"
    );
    assert!(
        s.fixture_calls().is_empty(),
        "the server never ran a call under a partial jail"
    );
}
