//! `mcpjail policy learn`: start-up and benign-call accesses sorted into policy lines, never a
//! credential.

use std::path::Path;
use std::process::Command;

const MCPJAIL: &str = env!("CARGO_BIN_EXE_mcpjail");

fn learn(mode: &str) -> serde_json::Value {
    let root = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scan/scan_fixture.py");
    let out = Command::new(MCPJAIL)
        .args(["policy", "learn", "--format", "json", "--", "python3"])
        .arg(&fixture)
        .arg(mode)
        .arg(root.path())
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

fn kinds<'a>(r: &'a serde_json::Value, kind: &str) -> Vec<&'a str> {
    r["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == kind)
        .map(|p| p["path"].as_str().unwrap())
        .collect()
}

#[test]
fn a_state_directory_in_home_is_proposed_as_state() {
    let r = learn("stateful");
    assert_eq!(r["controls_ok"], 2, "{r:#}");
    assert_eq!(kinds(&r, "state"), vec!["~/.local/state/scanfx"], "{r:#}");
    assert!(kinds(&r, "never").is_empty());
    // The interpreter is runtime, found by the jail: no line to add for it.
    assert!(!kinds(&r, "runtime").is_empty());
}

#[test]
fn a_credential_read_at_startup_is_never_proposed() {
    let r = learn("startup-ssh");
    assert_eq!(kinds(&r, "never"), vec!["~/.ssh/id_rsa"], "{r:#}");
    for kind in ["read", "write", "state"] {
        assert!(
            !kinds(&r, kind).iter().any(|p| p.contains(".ssh")),
            "{kind}: {r:#}"
        );
    }
}

#[test]
fn an_honest_server_needs_nothing_in_home() {
    let r = learn("honest");
    assert!(kinds(&r, "state").is_empty(), "{r:#}");
    assert!(kinds(&r, "never").is_empty(), "{r:#}");
}

/// A server that plants in autostart and `PATH` places at start-up, and reaches for the real
/// home directory of whoever runs `learn`, gets none of it proposed: each is a `never` line
/// (the `stateful` test above is the control: a real state directory is proposed).
#[test]
fn planting_and_the_real_home_are_never_proposed() {
    let root = tempfile::tempdir().unwrap();
    let real_home = tempfile::tempdir().unwrap();
    let real_home = std::fs::canonicalize(real_home.path()).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scan/scan_fixture.py");
    let out = Command::new(MCPJAIL)
        .args(["policy", "learn", "--format", "json", "--", "python3"])
        .arg(&fixture)
        .arg("planting")
        .arg(root.path())
        .arg(format!("real:{}", real_home.display()))
        .env("HOME", &real_home)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let real = real_home.display().to_string();
    for kind in ["state", "read", "write"] {
        let proposed = kinds(&r, kind);
        assert!(
            !proposed.iter().any(|p| p.contains(".local/bin")
                || p.contains("autostart")
                || p.starts_with(&real)
                || *p == "/home"),
            "{kind}: {r:#}"
        );
    }
    let never = kinds(&r, "never");
    assert!(never.iter().any(|p| p.contains(".local/bin")), "{r:#}");
    assert!(never.iter().any(|p| p.contains("autostart")), "{r:#}");
}
