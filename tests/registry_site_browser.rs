//! The registry site in a real browser: `registry build` from three signed records (one per
//! verdict colour that matters), then Debian's headless Chromium, driven by playwright-core
//! (`tests/js/site_check.mjs`), opens `index.html` from `file://`: every record is listed,
//! typing in the search box filters the rows, the header buttons sort both ways from the
//! keyboard, every badge image loads, and a record page opens with its evidence. The
//! screenshot is kept at `target/test-artifacts/registry-index.png`.
//!
//! Needs `scripts/test-deps.sh` (chromium, playwright-core); says so when they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use mcpjail::registry::keys;
use mcpjail::registry::record::{
    tools_digest, Evidence, Record, Scanner, ServerIdentity, Signer, ToolVerdict, Verdict, SCHEMA,
};

const MCPJAIL: &str = env!("CARGO_BIN_EXE_mcpjail");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn record(package: &str, verdict: Verdict, date: &str) -> Record {
    let argv: Vec<String> = ["npx", "-y", package, "/srv"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let evidence = match verdict {
        Verdict::Launders => vec![Evidence {
            kind: "launders".into(),
            tool: Some("read_file".into()),
            argument: Some("path".into()),
            value: Some("../../.ssh/id_rsa".into()),
            syscall: Some("openat".into()),
            path: Some("/home/scan/.ssh/id_rsa".into()),
            result: Some("ok".into()),
        }],
        _ => vec![],
    };
    Record {
        schema: SCHEMA.into(),
        server: ServerIdentity::from_command(&argv, None),
        tools_digest: tools_digest(&[serde_json::json!({"name": "read_file"})]),
        tool_count: 1,
        verdict,
        exfiltrated: false,
        tools: vec![ToolVerdict {
            name: "read_file".into(),
            verdict,
        }],
        evidence,
        scanner: Scanner::this(),
        kernel: "Linux test".into(),
        date: date.into(),
        signer: Signer {
            key_id: String::new(),
            public_key: String::new(),
        },
        signature: None,
    }
}

fn mcpjail(args: &[&str], home: &Path) {
    let out = Command::new(MCPJAIL)
        .args(args)
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mcpjail {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_built_site_lists_searches_sorts_and_renders_badges_in_chromium() {
    let chromium =
        std::env::var("MCPJAIL_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let playwright = repo().join(".test-env/node/node_modules/playwright-core/package.json");
    assert!(
        Path::new(&chromium).exists() && playwright.exists(),
        "{chromium} or {} is missing: run scripts/test-deps.sh",
        playwright.display()
    );
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (secret, public, _) = keys::generate(&home.join("signer")).unwrap();
    let registry = home.join("registry");
    std::fs::create_dir_all(registry.join("keys")).unwrap();
    std::fs::copy(&public, registry.join("keys/signer.pub")).unwrap();
    let key = keys::load_signing(&secret).unwrap();
    let records = [
        record(
            "@example/files-server@1.0.0",
            Verdict::Confined,
            "2026-11-03T00:00:00Z",
        ),
        record(
            "naive-files@0.3.1",
            Verdict::Launders,
            "2026-11-02T00:00:00Z",
        ),
        record(
            "zeta-notes@2.0.0",
            Verdict::Undeclared,
            "2026-11-01T00:00:00Z",
        ),
    ];
    for (i, r) in records.iter().enumerate() {
        let path = home.join(format!("r{i}.json"));
        std::fs::write(&path, r.clone().sign(&key).unwrap().to_pretty_json()).unwrap();
        mcpjail(
            &[
                "registry",
                "add",
                path.to_str().unwrap(),
                "--registry",
                registry.to_str().unwrap(),
            ],
            home,
        );
    }
    let site = home.join("site");
    mcpjail(
        &[
            "registry",
            "build",
            "--registry",
            registry.to_str().unwrap(),
            "--out",
            site.to_str().unwrap(),
        ],
        home,
    );

    let artifacts = repo().join("target/test-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join("registry-index.png");
    let _ = std::fs::remove_file(&shot);
    let out = Command::new("node")
        .arg(repo().join("tests/js/site_check.mjs"))
        .arg(&site)
        .arg(&shot)
        .arg(&chromium)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "site_check failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: serde_json::Value =
        serde_json::from_str(stdout.trim().lines().last().unwrap_or("")).unwrap();
    let names = |k: &str| -> Vec<String> {
        found[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let all = ["@example/files-server", "naive-files", "zeta-notes"];
    assert_eq!(names("rows"), all, "{found:#}");
    assert_eq!(found["count"], "3 records");
    assert_eq!(names("searched"), ["naive-files"], "{found:#}");
    assert_eq!(found["searchedCount"], "1 record");
    assert_eq!(names("sortedAsc"), all);
    assert_eq!(found["ariaSortAsc"], "ascending");
    let mut desc = all.to_vec();
    desc.reverse();
    assert_eq!(names("sortedDesc"), desc);
    let badges = found["badges"].as_array().unwrap();
    assert_eq!(badges.len(), 3);
    assert!(
        badges.iter().all(|b| b["ok"] == true),
        "a badge did not render: {found:#}"
    );
    assert!(
        found["recordTitle"]
            .as_str()
            .unwrap()
            .contains("naive-files"),
        "{found:#}"
    );
    let evidence = found["evidence"].as_array().unwrap();
    assert_eq!(evidence.len(), 1, "{found:#}");
    assert!(evidence[0].as_str().unwrap().contains("../../.ssh/id_rsa"));
    assert_eq!(
        found["errors"].as_array().unwrap().len(),
        0,
        "page errors: {found:#}"
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 5_000,
        "screenshot missing or empty"
    );
}
