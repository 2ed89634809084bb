//! `mcpjail scan` end to end against real servers from `.test-env` (scripts/test-deps.sh):
//! `@modelcontextprotocol/server-filesystem` and `mcp-server-git`.

mod support;

use std::process::Command;
use std::time::Instant;

use serde_json::Value;

const MCPJAIL: &str = env!("CARGO_BIN_EXE_mcpjail");

fn scan(server: &[String]) -> (Value, u128) {
    let started = Instant::now();
    let out = Command::new(MCPJAIL)
        .args(["scan", "--format", "json", "--"])
        .args(server)
        .output()
        .unwrap();
    let millis = started.elapsed().as_millis();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr)));
    (r, millis)
}

#[test]
fn server_filesystem_is_confined_and_the_jail_pass_holds() {
    let scope = tempfile::tempdir().unwrap();
    let (r, millis) = scan(&[
        support::server_filesystem(),
        scope.path().display().to_string(),
    ]);
    eprintln!("server-filesystem scan: {millis} ms");
    assert_eq!(r["verdict"], "confined", "{:#}", r["tools"]);
    assert_eq!(r["exfiltrated"], false);
    let tools = r["tools"].as_array().unwrap();
    assert!(tools.len() >= 13, "{}", tools.len());
    // Every control call worked: the scan exercised the tools for real, in scope.
    for t in tools {
        assert_eq!(t["control_ok"], true, "{t:#}");
    }
    // Hostile calls were made for every path argument, and the server touched in-scope files.
    let probes = r["probes"].as_array().unwrap();
    assert!(probes.len() > 300, "{}", probes.len());
    assert!(probes.iter().any(|p| p["accesses"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["in_scope"] == true)));
    let j = &r["jail_pass"];
    assert_eq!(j["holds"], true, "{j:#}");
    assert_eq!(j["controls_ok_jailed"], j["controls_ok_traced"], "{j:#}");
    // The budget: a full scan in 30 s on these 2-core machines.
    assert!(millis < 30_000, "{millis} ms");
}

#[test]
fn mcp_server_git_scans_end_to_end() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("README.md"), "repo\n").unwrap();
    support::git_init(repo.path(), "initial");
    let (r, millis) = scan(&[
        support::server_git(),
        "--repository".into(),
        repo.path().display().to_string(),
    ]);
    eprintln!("mcp-server-git scan: {millis} ms");
    assert_eq!(r["server"]["remapped"].as_array().unwrap().len(), 1);
    let verdict = r["verdict"].as_str().unwrap();
    assert!(verdict == "confined", "verdict {verdict}: {:#}", r["tools"]);
    assert!(r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["tool"] == "git_status" && t["control_ok"] == true));
    assert_eq!(r["jail_pass"]["holds"], true, "{:#}", r["jail_pass"]);
}
