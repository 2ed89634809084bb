//! `mcpjail demo` runs end to end: the allowed calls pass, every escape is denied, the hostile
//! server's own reads escape without the jail (the control) and are blocked with it, exit 0.

use std::process::Command;

#[test]
fn demo_shows_allowed_and_denied_calls_and_exits_zero() {
    let state = tempfile::tempdir().expect("temp state dir");
    let out = Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .args(["demo", "--color", "never"])
        .env("XDG_STATE_HOME", state.path())
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
    // Act 2: the hostile server reads by itself. Unjailed (the control) it gets the key and the
    // secret; jailed, the kernel refuses both. The secret appears only on the control's line.
    assert_eq!(
        stdout
            .matches("without the jail (--no-jail) → ESCAPED")
            .count(),
        2,
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("jailed                       → BLOCKED")
            .count(),
        2,
        "{stdout}"
    );
    let leaks: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("DEMO-SECRET"))
        .collect();
    assert_eq!(leaks.len(), 1, "{stdout}");
    assert!(leaks[0].contains("without the jail"), "{stdout}");
    // The demo leaves no tool pins behind in the user's state directory.
    let left: Vec<_> = walk(state.path());
    assert!(left.is_empty(), "the demo wrote {left:?}");
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

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read state dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
