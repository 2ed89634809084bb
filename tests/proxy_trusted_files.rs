//! Files the proxy trusts across sessions, which a jailed server must not be able to rewrite:
//! the audit log (`--log-file`) and the policy file (`--policy`). The proxy runs outside the
//! jail, so a log the server replaced by a symlink would make it append, with text partly of the
//! server's choosing, to any file the user can write; a policy the server rewrote would decide
//! the next jail's grants.
//!
//! Each test plants what a server of an earlier session could have planted (it had the scope
//! read-write), then starts the proxy; the control is the same start with the file placed
//! outside the scope, which works.

mod proxy_support;

use proxy_support::*;
use serde_json::json;

fn refused(t: &Tree, args: &[String]) -> String {
    let mut opts = Opts::new(t);
    opts.proxy_args = args.to_vec();
    let mut s = Session::start(t, opts);
    let code = s.wait_exit();
    let err = s.stderr_closed();
    assert_eq!(code, 1, "the proxy must refuse to start: {err}");
    assert!(
        s.fixture_calls().is_empty(),
        "the server must not run: {err}"
    );
    err
}

fn serves(t: &Tree, args: &[String]) {
    let mut opts = Opts::new(t);
    opts.proxy_args = args.to_vec();
    let mut s = Session::start(t, opts);
    s.initialize();
    let r = s.call("read_file", json!({"path": t.p("scope/a.txt")}));
    assert_eq!(result_text(&r), "alpha");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0, "{}", s.stderr_closed());
}

#[test]
fn an_audit_log_inside_the_write_scope_is_refused() {
    let t = Tree::new();
    // Relative to the proxy's cwd (the scope), as `cd project && mcpjail-proxy --log-file
    // audit.jsonl -- server .` would give it.
    let err = refused(&t, &["--log-file".into(), "audit.jsonl".into()]);
    assert!(
        err.contains("audit.jsonl") && err.contains(&t.p("scope")) && err.contains("hint:"),
        "names the file, the grant and the fix: {err}"
    );
    assert!(!t.scope().join("audit.jsonl").exists(), "{err}");

    // Control: the same log outside the scope is written.
    let outside = t.p("audit.jsonl");
    serves(&t, &["--log-file".into(), outside.clone()]);
    let text = std::fs::read_to_string(&outside).unwrap();
    assert!(text.contains("session_start"), "{text}");
}

#[test]
fn an_audit_log_replaced_by_a_symlink_is_not_followed() {
    let t = Tree::new();
    // Outside the scope, so only the link check stands between the proxy and the target.
    let victim = t.root().join("outside/victim.rc");
    std::fs::write(&victim, "# rc file\n").unwrap();
    let log = t.root().join("audit.jsonl");
    std::os::unix::fs::symlink(&victim, &log).unwrap();
    let err = refused(&t, &["--log-file".into(), log.display().to_string()]);
    assert!(
        err.contains(&log.display().to_string()) && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# rc file\n");

    // A FIFO is not a log either (and the open must not hang on it).
    let fifo = t.root().join("audit.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let err = refused(&t, &["--log-file".into(), fifo.display().to_string()]);
    assert!(err.contains("not a regular file"), "{err}");

    // Control: the link's place, as a plain file, is appended to.
    std::fs::remove_file(&log).unwrap();
    std::fs::write(&log, "").unwrap();
    serves(&t, &["--log-file".into(), log.display().to_string()]);
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("session_start"));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "# rc file\n");
}

#[test]
fn a_policy_file_inside_the_write_scope_it_grants_is_refused() {
    let t = Tree::new();
    // The policy lies in the scope and grants it (its paths are relative to the file): the
    // server of one session could rewrite it to `read = ["/"]` for the next.
    let policy = t.scope().join("mcpjail.toml");
    std::fs::write(&policy, "write = [\".\"]\n").unwrap();
    let err = refused(&t, &["--policy".into(), "mcpjail.toml".into()]);
    assert!(
        err.contains("mcpjail.toml") && err.contains("may write") && err.contains("hint:"),
        "{err}"
    );
    // Also when only the argv grants the directory the policy is in.
    std::fs::write(&policy, "read = []\n").unwrap();
    let err = refused(&t, &["--policy".into(), policy.display().to_string()]);
    assert!(err.contains("may write"), "{err}");
    // And through a link whose target the server may write.
    let link = t.root().join("policy-link.toml");
    std::os::unix::fs::symlink(&policy, &link).unwrap();
    let err = refused(&t, &["--policy".into(), link.display().to_string()]);
    assert!(err.contains("may write"), "{err}");

    // Control: the same policy next to, not inside, the scope is used.
    let outside = t.root().join("mcpjail.toml");
    std::fs::write(&outside, "write = [\"scope\"]\n").unwrap();
    serves(&t, &["--policy".into(), outside.display().to_string()]);
}
