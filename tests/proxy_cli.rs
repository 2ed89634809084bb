//! The proxy's command line as clients write it: the server command may follow the proxy's
//! flags with or without `--` (MCP Inspector CLI v1 cannot insert one), everything from the
//! first non-flag word on belongs to the server, and a mistyped proxy flag is an error rather
//! than a program name.

mod proxy_support;

use std::process::{Command, Stdio};

use proxy_support::*;
use serde_json::json;

fn session(tree: &Tree, args: &[&str]) -> Session {
    let mut cmd = Command::new(PROXY);
    cmd.args(args)
        .current_dir(tree.scope())
        .env("HOME", tree.root().join("home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Session::spawn(cmd)
}

#[test]
fn the_server_command_needs_no_double_dash() {
    let tree = Tree::new();
    let scope = tree.scope().display().to_string();
    for args in [
        vec!["--pin", "off", FIXTURE, scope.as_str()],
        vec!["--pin", "off", "--", FIXTURE, scope.as_str()],
    ] {
        let mut s = session(&tree, &args);
        let init = s.initialize();
        assert!(init.get("result").is_some(), "{args:?}: {init}");
        // The scope still comes from the server's own argv: a file outside it is refused.
        let r = s.call("read_file", json!({"path": tree.p("outside/secret.txt")}));
        assert!(is_denial(&r), "{args:?}: {r}");
        let r = s.call("read_file", json!({"path": tree.p("scope/a.txt")}));
        assert!(!is_denial(&r), "{args:?}: {r}");
    }
}

#[test]
fn a_mistyped_proxy_flag_is_an_error_not_a_program() {
    let tree = Tree::new();
    let out = Command::new(PROXY)
        .args(["--lgo", FIXTURE])
        .current_dir(tree.scope())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unexpected argument '--lgo'"), "{stderr}");
}
