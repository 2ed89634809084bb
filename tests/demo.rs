//! `mcpjail demo` runs end to end: the allowed calls pass, every escape is denied, exit 0.

use std::process::Command;

#[test]
fn demo_shows_allowed_and_denied_calls_and_exits_zero() {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .args(["demo", "--color", "never"])
        .output()
        .expect("run mcpjail demo");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "demo failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert_eq!(stdout.matches("[ok ] ALLOWED").count(), 2, "{stdout}");
    assert_eq!(stdout.matches("[ok ] DENIED").count(), 5, "{stdout}");
    assert!(!stdout.contains("DEMO-SECRET"), "{stdout}");
    // The proxy's live log: one line per call, with the decision and the reason.
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains(" demo read_file ") && l.contains("DENY"))
            .count(),
        5,
        "{stderr}"
    );
    assert!(stderr.contains(" demo write_file "), "{stderr}");
    assert!(stderr.contains("ALLOW"), "{stderr}");
    // Denied calls never reached the server.
    let reached: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("FIXTURE-CALL"))
        .collect();
    assert_eq!(reached.len(), 2, "{reached:?}");
}
