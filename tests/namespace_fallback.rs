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
