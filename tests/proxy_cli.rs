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

/// `mcpjail-proxy` starts at the C `main`, without std's runtime set-up (see its source for
/// why). Two things that set-up did matter to the proxy, and are checked here on the binary.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

/// SIGPIPE is ignored: a client that closed its end of the proxy's stdout makes the proxy's
/// write fail with EPIPE; the proxy is not killed by the signal, and still exits with the
/// server's status. (The server reads the `initialize` before the end of its input, so it
/// always answers, and the proxy always writes that answer to the closed pipe.)
#[test]
fn a_client_that_closed_the_proxys_stdout_does_not_kill_it_by_sigpipe() {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    let tree = Tree::new();
    let mut child = Command::new(PROXY)
        .args(["--pin", "off", "--", FIXTURE])
        .arg(tree.scope())
        .current_dir(tree.scope())
        .env("HOME", tree.root().join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{INITIALIZE}\n").as_bytes())
        .unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), None, "{status:?}");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// A closed stderr is opened on `/dev/null` before anything else: otherwise the first file the
/// proxy opens would take descriptor 2 and receive its diagnostics.
#[test]
fn a_proxy_started_with_stderr_closed_has_dev_null_there() {
    use std::os::unix::process::CommandExt;
    let tree = Tree::new();
    let mut cmd = Command::new(PROXY);
    cmd.args(["--pin", "off", "--", FIXTURE])
        .arg(tree.scope())
        .current_dir(tree.scope())
        .env("HOME", tree.root().join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: close(2) is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::close(2);
            Ok(())
        });
    }
    let mut s = Session::spawn(cmd);
    let init = s.initialize();
    assert!(init.get("result").is_some(), "{init}");
    // The session is running: everything the proxy opens at start-up is open now.
    let fd2 = std::fs::read_link(format!("/proc/{}/fd/2", s.pid())).unwrap();
    assert_eq!(fd2, std::path::Path::new("/dev/null"));
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
}

/// The log level: `-q`, the default, `-v`, `-vv`, and `MCPJAIL_LOG` over them (`init_tracing`
/// takes a plain level filter when no variable is set, an `EnvFilter` when one is).
#[test]
fn log_levels_follow_the_flags_and_mcpjail_log_overrides_them() {
    let tree = Tree::new();
    let stderr_of = |flags: &[&str], log: Option<&str>| -> String {
        let mut cmd = Command::new(PROXY);
        cmd.args(flags)
            .args(["--no-jail", "--pin", "off", "--", "true"])
            .current_dir(tree.scope())
            .env("HOME", tree.root().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        match log {
            Some(v) => cmd.env("MCPJAIL_LOG", v),
            None => cmd.env_remove("MCPJAIL_LOG"),
        };
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let warned = |s: &str| s.contains("WARN") && s.contains("--no-jail");
    // `server started` is logged at debug level on every start.
    let debugged = |s: &str| s.contains("DEBUG") && s.contains("server started");

    let quiet = stderr_of(&["-q"], None);
    assert!(!warned(&quiet) && !debugged(&quiet), "{quiet}");
    let default = stderr_of(&[], None);
    assert!(warned(&default) && !debugged(&default), "{default}");
    let v = stderr_of(&["-v"], None);
    assert!(warned(&v) && !debugged(&v), "{v}");
    let vv = stderr_of(&["-vv"], None);
    assert!(warned(&vv) && debugged(&vv), "{vv}");
    // The variable wins over the flags, both ways; one it cannot read leaves the flags' level.
    let env_debug = stderr_of(&["-q"], Some("debug"));
    assert!(debugged(&env_debug), "{env_debug}");
    let env_error = stderr_of(&["-vv"], Some("error"));
    assert!(!warned(&env_error) && !debugged(&env_error), "{env_error}");
    let unreadable = stderr_of(&["-vv"], Some("=bad["));
    assert!(warned(&unreadable) && debugged(&unreadable), "{unreadable}");
}

/// A grant of the home directory, an ancestor of it or one of its settings directories is said
/// loudly (a warning, shown by default): the server may plant startup files there. A narrower
/// directory gets no warning (the control).
#[test]
fn a_grant_of_home_or_its_settings_is_a_warning() {
    let tree = Tree::new();
    let home = tree.root().join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    std::fs::create_dir_all(home.join("notes")).unwrap();
    let stderr_of = |arg: &std::path::Path| {
        let out = Command::new(PROXY)
            .args(["--pin", "off", FIXTURE])
            .arg(arg)
            .current_dir(tree.scope())
            .env("HOME", &home)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for (dir, what) in [
        (home.clone(), "the home directory"),
        (
            home.join(".config"),
            "a settings directory of the home directory",
        ),
        (
            tree.root().to_path_buf(),
            "an ancestor of the home directory",
        ),
    ] {
        let err = stderr_of(&dir);
        assert!(
            err.contains("WARN") && err.contains("may read and write") && err.contains(what),
            "{}: {err}",
            dir.display()
        );
    }
    let err = stderr_of(&home.join("notes"));
    assert!(!err.contains("may read and write"), "{err}");
}
