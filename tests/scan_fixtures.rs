//! `mcpjail scan` against the fixture servers of `fixtures/scan/scan_fixture.py`: one verdict
//! per way of handling (or not handling) path arguments. Every test asserts on the verdict
//! *and* on the evidence that produced it, so a scan that guesses cannot pass.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const MCPJAIL: &str = env!("CARGO_BIN_EXE_mcpjail");

fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/scan/scan_fixture.py")
        .display()
        .to_string()
}

/// Scan the fixture in `mode` (JSON report); `extra` goes before `--`.
fn scan(mode: &str, extra: &[&str]) -> (Value, i32) {
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(MCPJAIL)
        .args(["scan", "--format", "json"])
        .args(extra)
        .arg("--")
        .args(["python3", &fixture(), mode])
        .arg(root.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON report ({e}); stdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (report, out.status.code().unwrap_or(-1))
}

fn evidence(report: &Value) -> Vec<&Value> {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["evidence"].as_array().unwrap().iter())
        .collect()
}

fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[test]
fn honest_server_is_confined() {
    let (r, code) = scan("honest", &["--no-jail-pass", "--fail-on", "launders"]);
    assert_eq!(r["verdict"], "confined", "{r:#}");
    assert_eq!(code, 0);
    assert_eq!(r["exfiltrated"], false);
    assert!(evidence(&r).is_empty());
    assert!(r["startup"].as_array().unwrap().is_empty());
    for t in r["tools"].as_array().unwrap() {
        assert_eq!(t["control_ok"], true, "{t:#}");
        assert_eq!(t["verdict"], "confined");
    }
    // The control calls really ran in scope: the tracer saw the in-scope reads (with their
    // result, or — a plain read in scope, the tracer's scope hint — recorded without it).
    let control = r["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tool"] == "read_file" && p["probe"] == "control")
        .unwrap();
    let scope = r["sandbox"]["scope"].as_str().unwrap();
    assert!(
        control["accesses"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["in_scope"] == true
                && a["resolved"].as_str().unwrap().starts_with(scope)
                && (a["result"].as_i64().is_some_and(|r| r >= 0)
                    || (a["result_skipped"] == true && a["kind"] == "read"))),
        "{control:#}"
    );
}

#[test]
fn naive_join_launders_via_dotdot() {
    let (r, code) = scan("naive", &["--no-jail-pass", "--fail-on", "launders"]);
    assert_eq!(r["verdict"], "launders");
    assert_eq!(code, 3, "--fail-on launders exits 3");
    assert_eq!(r["exfiltrated"], false, "naive returns sizes, not content");
    let home = r["sandbox"]["home"].as_str().unwrap();
    let e = evidence(&r)
        .into_iter()
        .find(|e| e["tool"] == "read_file" && e["probe"] == "dotdot-relative")
        .expect("evidence for ../");
    assert_eq!(e["kind"], "launders");
    assert_eq!(e["argument"], "/path");
    assert_eq!(e["value"], "../home/.ssh/id_rsa");
    assert_eq!(e["syscall"], "openat");
    assert_eq!(e["access"], "read");
    assert_eq!(e["result"], "ok");
    assert_eq!(e["resolved"], format!("{home}/.ssh/id_rsa"));
}

#[test]
fn symlink_follower_launders_via_the_symlink_only() {
    let (r, _) = scan("symlink", &["--no-jail-pass"]);
    assert_eq!(r["verdict"], "launders");
    let ev = evidence(&r);
    assert!(!ev.is_empty());
    for e in &ev {
        let probe = e["probe"].as_str().unwrap();
        assert!(
            probe.starts_with("symlink-"),
            "only the escaping symlink gets out of a lexical check, not {probe}: {e:#}"
        );
    }
    assert!(ev.iter().any(|e| e["probe"] == "symlink-escape"
        && e["resolved"]
            .as_str()
            .unwrap()
            .ends_with("/home/.aws/credentials")));
}

#[test]
fn reading_ssh_at_startup_is_undeclared() {
    let (r, code) = scan(
        "startup-ssh",
        &["--no-jail-pass", "--fail-on", "undeclared"],
    );
    assert_eq!(r["verdict"], "undeclared");
    assert_eq!(code, 3);
    let startup = r["startup"].as_array().unwrap();
    assert_eq!(startup.len(), 1, "{startup:#?}");
    assert!(startup[0]["resolved"]
        .as_str()
        .unwrap()
        .ends_with("/home/.ssh/id_rsa"));
    assert!(startup[0]["tool"].is_null());
    // Its tools themselves are honest.
    assert!(evidence(&r).is_empty());
}

#[test]
fn returning_a_canary_is_exfiltrated() {
    let (r, code) = scan("exfil", &["--no-jail-pass", "--fail-on", "exfiltrated"]);
    assert_eq!(r["exfiltrated"], true);
    assert_eq!(code, 3);
    assert_eq!(tool(&r, "read_file")["exfiltrated"], true);
    assert_eq!(tool(&r, "list_directory")["exfiltrated"], false);
    let leak = r["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["probe"] == "absolute-ssh" && p["tool"] == "read_file")
        .unwrap();
    assert_eq!(leak["leaked"], serde_json::json!(["ssh_key"]));
}

#[test]
fn refusing_everything_is_broken_not_confined() {
    let (r, code) = scan("broken", &["--no-jail-pass", "--fail-on", "launders"]);
    assert_eq!(r["verdict"], "broken");
    assert_eq!(code, 0, "broken is not a --fail-on launders finding");
    for t in r["tools"].as_array().unwrap() {
        assert_eq!(t["control_ok"], false);
        assert_eq!(t["verdict"], "broken");
    }
}

#[test]
fn tracer_follows_fork_exec_and_threads() {
    // In these modes the server process never opens the file itself: `/bin/cat` in a child
    // (fork + exec) or a second thread (clone) does. Evidence exists only if the tracer
    // followed them.
    for mode in ["subprocess", "threaded"] {
        let (r, _) = scan(mode, &["--no-jail-pass", "--max-probes", "1"]);
        assert_eq!(r["verdict"], "launders", "{mode}");
        let e = evidence(&r)
            .into_iter()
            .find(|e| e["tool"] == "read_file" && e["probe"] == "dotdot-relative")
            .unwrap_or_else(|| panic!("{mode}: no evidence"));
        assert!(e["resolved"]
            .as_str()
            .unwrap()
            .ends_with("/home/.ssh/id_rsa"));
        assert_eq!(e["result"], "ok");
    }
}

#[test]
fn jail_pass_blocks_what_the_naive_server_launders() {
    let (r, _) = scan("naive", &[]);
    assert_eq!(r["verdict"], "launders");
    let j = &r["jail_pass"];
    assert_eq!(j["holds"], true, "{j:#}");
    assert!(j["escaped"].as_array().unwrap().is_empty());
    assert!(j["leaked"].as_array().unwrap().is_empty());
    assert_eq!(j["controls_ok_jailed"], j["controls_ok_traced"]);
    assert_eq!(j["controls_ok_jailed"], 2);
    assert!(j["refused_calls"].as_u64().unwrap() > 0);
}

#[test]
fn exfil_jail_pass_leaks_nothing() {
    let (r, _) = scan("exfil", &["--max-probes", "6"]);
    assert_eq!(r["exfiltrated"], true, "the traced run shows the leak");
    assert!(r["jail_pass"]["leaked"].as_array().unwrap().is_empty());
    assert_eq!(r["jail_pass"]["holds"], true);
}

#[test]
fn a_call_that_hangs_times_out_and_the_scan_goes_on() {
    let (r, _) = scan("hang", &["--no-jail-pass", "--timeout", "1"]);
    let nul: Vec<&Value> = r["probes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["probe"] == "nul-byte")
        .collect();
    assert_eq!(nul.len(), 2, "one per tool");
    assert!(nul.iter().all(|p| p["timed_out"] == true), "{nul:#?}");
    // The probes after the hang ran against a restarted server and worked.
    let after = r["probes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tool"] == "list_directory" && p["probe"] == "control")
        .unwrap();
    assert_eq!(after["ok"], true);
    assert!(r["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("timed out")));
    assert_eq!(r["verdict"], "confined");
}
