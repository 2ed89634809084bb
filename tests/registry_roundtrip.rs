//! The registry end to end through the `mcpjail` binary: `keygen` → a signed record →
//! `registry add` (trusted, superseded, untrusted) → `registry verify` (clean, then a changed
//! byte and a swapped key each fail it, naming the file) → `registry build` (the site's files)
//! → `mcpjail verify` against a project whose `.mcp.json` runs the real fixture server: `ok`
//! while its tools match the record, `stale` (exit 1) once they do not.
//!
//! Records here are signed through the library (`Record::sign`); `tests/scan_*.rs` covers
//! `mcpjail scan --sign --record`, which produces them from a real scan.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use mcpjail::clients::listtools::list_tools;
use mcpjail::clients::startcheck::StartTarget;
use mcpjail::registry::keys;
use mcpjail::registry::record::{
    tools_digest, Record, Scanner, ServerIdentity, Signer, ToolVerdict, Verdict, SCHEMA,
};

const MCPJAIL: &str = env!("CARGO_BIN_EXE_mcpjail");
const SERVER: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-files");

struct Env {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    registry: PathBuf,
    key: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let registry = tmp.path().join("registry");
        let env = Env {
            home,
            registry,
            key: tmp.path().join("signer/mcpjail-signing.key"),
            _tmp: tmp,
        };
        let out = env.run(&[
            "keygen",
            "--out",
            env.key.parent().unwrap().to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        std::fs::create_dir_all(env.registry.join("keys")).unwrap();
        std::fs::copy(
            env.key.with_file_name("mcpjail-signing.pub"),
            env.registry.join("keys/signer.pub"),
        )
        .unwrap();
        env
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_in(args, &self.home)
    }

    fn run_in(&self, args: &[&str], cwd: &Path) -> Output {
        Command::new(MCPJAIL)
            .args(args)
            .current_dir(cwd)
            .env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_DATA_HOME")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }

    fn reg(&self) -> &str {
        self.registry.to_str().unwrap()
    }

    /// `mcpjail registry add FILE…`, which must succeed.
    fn add(&self, files: &[&Path]) -> Output {
        let mut args = vec!["registry", "add"];
        args.extend(files.iter().map(|f| f.to_str().unwrap()));
        args.extend(["--registry", self.reg()]);
        let out = self.run(&args);
        assert!(out.status.success(), "{}", text(&out));
        out
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn record(argv: &[String], digest: String, date: &str) -> Record {
    Record {
        schema: SCHEMA.into(),
        server: ServerIdentity::from_command(argv, None),
        tools_digest: digest,
        tool_count: 3,
        verdict: Verdict::Confined,
        exfiltrated: false,
        tools: vec![ToolVerdict {
            name: "read_file".into(),
            verdict: Verdict::Confined,
        }],
        evidence: vec![],
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

fn write_signed(env: &Env, name: &str, r: Record) -> PathBuf {
    let key = keys::load_signing(&env.key).unwrap();
    let path = env.home.join(name);
    std::fs::write(&path, r.sign(&key).unwrap().to_pretty_json()).unwrap();
    path
}

fn npx_argv() -> Vec<String> {
    [
        "npx",
        "-y",
        "@modelcontextprotocol/server-filesystem@2025.8.21",
        "/srv",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn add_supersede_verify_tamper_and_build() {
    let env = Env::new();
    let old = write_signed(
        &env,
        "old.json",
        record(&npx_argv(), "sha256:aa".into(), "2026-11-01T00:00:00Z"),
    );
    let new = write_signed(
        &env,
        "new.json",
        record(&npx_argv(), "sha256:bb".into(), "2026-12-01T00:00:00Z"),
    );
    let out = env.add(&[&old]);
    assert!(text(&out).contains("added"), "{}", text(&out));
    let out = env.add(&[&new, &old]);
    assert!(
        text(&out).contains("superseded") && text(&out).contains("skipped"),
        "{}",
        text(&out)
    );

    // A record signed by a key the registry does not trust is rejected (exit 1), not stored.
    let stranger = tempfile::tempdir().unwrap();
    let (stranger_key, _, _) = keys::generate(&stranger.path().join("k")).unwrap();
    let foreign = env.home.join("foreign.json");
    let mut r = record(&npx_argv(), "sha256:cc".into(), "2026-12-02T00:00:00Z");
    r.server.name = "other-server".into();
    std::fs::write(
        &foreign,
        r.sign(&keys::load_signing(&stranger_key).unwrap())
            .unwrap()
            .to_pretty_json(),
    )
    .unwrap();
    let out = env.run(&[
        "registry",
        "add",
        foreign.to_str().unwrap(),
        "--registry",
        env.reg(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("not one of the registry's trusted keys"),
        "{}",
        text(&out)
    );

    let out = env.run(&["registry", "verify", "--registry", env.reg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("1 verified, 0 failed"),
        "{}",
        text(&out)
    );

    let site = env.home.join("site");
    let out = env.run(&[
        "registry",
        "build",
        "--registry",
        env.reg(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let index = std::fs::read_to_string(site.join("index.html")).unwrap();
    assert!(
        index.contains("@modelcontextprotocol/server-filesystem") && index.contains("2025.8.21")
    );
    assert!(site
        .join("badges/modelcontextprotocol__server-filesystem.svg")
        .is_file());
    let endpoint: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            site.join("endpoints/modelcontextprotocol__server-filesystem.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(endpoint["message"], "confined");
    let machine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(site.join("index.json")).unwrap()).unwrap();
    assert_eq!(machine["records"][0]["tools_digest"], "sha256:bb");

    // Change one value in the stored record: verify fails and names the file.
    let stored = env
        .registry
        .join("records/modelcontextprotocol__server-filesystem/2025.8.21.json");
    let original = std::fs::read_to_string(&stored).unwrap();
    std::fs::write(&stored, original.replace("sha256:bb", "sha256:bc")).unwrap();
    let out = env.run(&["registry", "verify", "--registry", env.reg()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(stored.to_str().unwrap())
            && text(&out).contains("signature does not match"),
        "{}",
        text(&out)
    );

    // Swap the key: the same record re-signed by the stranger, stored in place.
    let swapped: Record = serde_json::from_str(&original).unwrap();
    std::fs::write(
        &stored,
        swapped
            .sign(&keys::load_signing(&stranger_key).unwrap())
            .unwrap()
            .to_pretty_json(),
    )
    .unwrap();
    let out = env.run(&["registry", "verify", "--registry", env.reg()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("not one of the registry's trusted keys"),
        "{}",
        text(&out)
    );

    // The original bytes verify again (the control for both failures).
    std::fs::write(&stored, &original).unwrap();
    assert!(env
        .run(&["registry", "verify", "--registry", env.reg()])
        .status
        .success());
}

#[test]
fn verify_checks_configured_servers_against_their_records() {
    let env = Env::new();
    let project = env.home.join("project");
    let scope = project.join("scope");
    std::fs::create_dir_all(&scope).unwrap();
    let argv = vec![SERVER.to_string(), scope.to_string_lossy().into_owned()];
    std::fs::write(
        project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"files": {"command": argv[0], "args": [argv[1]]}}})
            .to_string(),
    )
    .unwrap();
    let live = list_tools(
        &StartTarget {
            label: "files".into(),
            argv: argv.clone(),
            env: vec![],
            cwd: project.clone(),
        },
        Duration::from_secs(30),
    )
    .unwrap();
    assert!(!live.is_empty());
    let verify = |env: &Env| env.run_in(&["verify", "--registry", env.reg(), "--json"], &project);

    // No record yet: reported as missing; only --strict fails on it.
    let out = verify(&env);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("\"missing\""), "{}", text(&out));
    let strict = env.run_in(&["verify", "--registry", env.reg(), "--strict"], &project);
    assert_eq!(strict.status.code(), Some(1), "{}", text(&strict));

    let good = write_signed(
        &env,
        "good.json",
        record(&argv, tools_digest(&live), "2026-12-01T00:00:00Z"),
    );
    env.add(&[&good]);
    let out = verify(&env);
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["servers"][0]["status"], "ok", "{report:#}");
    assert_eq!(report["servers"][0]["verdict"], "confined");

    // The server's tools are no longer what was scanned: a newer record with another digest
    // stands in for "the server changed after its record" (the fixture's tools are fixed).
    let mut changed = live.clone();
    changed[0]["description"] = serde_json::json!("rewritten after the scan");
    let stale = write_signed(
        &env,
        "stale.json",
        record(&argv, tools_digest(&changed), "2026-12-02T00:00:00Z"),
    );
    env.add(&[&stale]);
    let out = verify(&env);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["servers"][0]["status"], "stale", "{report:#}");

    // A record filed under the same name and version for another ecosystem's package (a slug
    // collision: an npm `files` and this command's `files`) says nothing about this server,
    // however good its verdict and digest (the `good` record above is the control).
    let mut other = record(&argv, tools_digest(&live), "2026-12-03T00:00:00Z");
    other.server.ecosystem = "npm".into();
    let other = write_signed(&env, "other.json", other);
    env.add(&[&other]);
    let out = verify(&env);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["servers"][0]["status"], "invalid", "{report:#}");
    assert!(
        report["servers"][0]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("not for this server")),
        "{report:#}"
    );
}

#[test]
fn serve_previews_the_site_on_localhost_and_nothing_outside_it() {
    use std::io::{BufRead, BufReader, Read, Write};
    let env = Env::new();
    let rec = write_signed(
        &env,
        "r.json",
        record(&npx_argv(), "sha256:aa".into(), "2026-12-01T00:00:00Z"),
    );
    env.add(&[&rec]);
    let mut child = Command::new(MCPJAIL)
        .args([
            "registry",
            "serve",
            "--registry",
            env.reg(),
            "--addr",
            "127.0.0.1:0",
        ])
        .env("HOME", &env.home)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {first:?}"))
        .to_string();
    let get = |path: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        answer
    };
    let index = get("/");
    let svg = get("/badges/modelcontextprotocol__server-filesystem.svg");
    let escape = get("/..%2f..%2fetc/passwd");
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        index.starts_with("HTTP/1.1 200") && index.contains("server-filesystem"),
        "{index}"
    );
    assert!(
        svg.contains("image/svg+xml") && svg.contains("confined"),
        "{svg}"
    );
    assert!(escape.starts_with("HTTP/1.1 404"), "{escape}");
}

/// The whole path a server author and a user take: keygen → `scan --sign --record` of the
/// honest scan fixture → `registry add` → `registry build` → `registry verify` → `mcpjail
/// verify` of a project that runs that server (`ok`), then the server's file is edited so one
/// tool's description changes (same command): `verify` reports it `stale` and exits 1.
#[test]
fn keygen_scan_sign_add_build_verify_round_trip() {
    let env = Env::new();
    let project = env.home.join("project");
    let scope = project.join("data");
    std::fs::create_dir_all(&scope).unwrap();
    std::fs::write(scope.join("note.txt"), "hello\n").unwrap();
    // A copy of the fixture the test may edit later (its own file, so its own entry hash).
    let server = project.join("server.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scan/scan_fixture.py"),
        &server,
    )
    .unwrap();
    let argv = [
        "python3".to_string(),
        server.to_string_lossy().into_owned(),
        "honest".to_string(),
        scope.to_string_lossy().into_owned(),
    ];
    let record_path = env.home.join("record.json");
    let mut scan = vec![
        "scan",
        "--no-jail-pass",
        "--format",
        "json",
        "--sign",
        env.key.to_str().unwrap(),
        "--record",
        record_path.to_str().unwrap(),
        "--",
    ];
    scan.extend(argv.iter().map(String::as_str));
    let out = env.run_in(&scan, &project);
    assert!(out.status.success(), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    assert_eq!(record["verdict"], "confined");
    assert_eq!(record["tools_digest"], report["server"]["tools_digest"]);
    assert_eq!(record["server"]["ecosystem"], "command");
    assert!(record["server"]["entry_sha256"].is_string(), "{record:#}");
    assert!(record["signature"].as_str().unwrap().len() == 128);

    let out = env.run(&[
        "registry",
        "add",
        record_path.to_str().unwrap(),
        "--registry",
        env.reg(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let site = env.home.join("site");
    let out = env.run(&[
        "registry",
        "build",
        "--registry",
        env.reg(),
        "--out",
        site.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::read_to_string(site.join("index.html"))
        .unwrap()
        .contains("confined"));
    assert!(env
        .run(&["registry", "verify", "--registry", env.reg()])
        .status
        .success());

    std::fs::write(
        project.join(".mcp.json"),
        serde_json::json!({"mcpServers": {"notes": {"command": argv[0], "args": argv[1..]}}})
            .to_string(),
    )
    .unwrap();
    let verify = || env.run_in(&["verify", "--registry", env.reg(), "--json"], &project);
    let out = verify();
    assert!(out.status.success(), "{}", text(&out));
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(judged["servers"][0]["status"], "ok", "{judged:#}");

    // The server changes after its record: one description reworded.
    let code = std::fs::read_to_string(&server).unwrap();
    let edited = code.replacen("Read a file under the root", "Read any file you like", 1);
    assert_ne!(code, edited);
    std::fs::write(&server, edited).unwrap();
    let out = verify();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let judged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(judged["servers"][0]["status"], "stale", "{judged:#}");
    assert!(judged["servers"][0]["detail"]
        .as_str()
        .unwrap()
        .contains("tools changed"));
}
