//! `mcpjail scan` output: SARIF 2.1.0 structure, the SVG badge, `--output`, `--config`.
//!
//! SARIF is validated against the official OASIS SARIF 2.1.0 JSON schema (Errata 01, JSON
//! Schema draft-04), vendored under `tests/schemas/` (see the README there), with formats
//! checked; on top, what the schema cannot say: ruleId/ruleIndex consistent with the
//! driver's rules, unique rule ids, a non-empty message, the tool as the logical location.

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

fn run(args: &[&str], mode: &str) -> (String, String, i32) {
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(MCPJAIL)
        .arg("scan")
        .args(args)
        .arg("--")
        .args(["python3", &fixture(), mode])
        .arg(root.path())
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// The vendored official schema, compiled with format checks (`uri`, `date-time`).
fn sarif_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-04/schema#");
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every schema error of `doc`, as `instance path: message` lines.
fn sarif_schema_errors(doc: &Value) -> Vec<String> {
    sarif_validator()
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn check_sarif(doc: &Value) {
    let errors = sarif_schema_errors(doc);
    assert!(
        errors.is_empty(),
        "SARIF fails the 2.1.0 schema:\n{}\n{doc:#}",
        errors.join("\n")
    );
    assert_eq!(doc["version"], "2.1.0");
    assert!(doc["$schema"].as_str().unwrap().contains("sarif-2.1.0"));
    let runs = doc["runs"].as_array().expect("runs is an array");
    assert!(!runs.is_empty());
    for run in runs {
        let driver = &run["tool"]["driver"];
        assert!(driver["name"].is_string(), "tool.driver.name is required");
        let rules = driver["rules"].as_array().unwrap();
        let ids: Vec<&str> = rules.iter().map(|r| r["id"].as_str().unwrap()).collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "rule ids are unique");
        for r in rules {
            assert!(r["shortDescription"]["text"].is_string());
            let level = r["defaultConfiguration"]["level"].as_str().unwrap();
            assert!(["none", "note", "warning", "error"].contains(&level));
        }
        for result in run["results"].as_array().expect("results is an array") {
            assert!(
                result["message"]["text"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty()),
                "result.message.text is required: {result:#}"
            );
            let id = result["ruleId"].as_str().unwrap();
            let index = result["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(ids[index], id, "ruleIndex points at ruleId");
            let level = result["level"].as_str().unwrap();
            assert!(["none", "note", "warning", "error"].contains(&level));
            for loc in result["locations"].as_array().unwrap() {
                let logical = loc["logicalLocations"].as_array().unwrap();
                assert!(logical[0]["name"].is_string());
                assert!(loc["physicalLocation"]["artifactLocation"]["uri"].is_string());
            }
        }
    }
}

#[test]
fn sarif_has_one_result_per_violation_and_a_rule_per_kind() {
    let (out, err, code) = run(&["--format", "sarif", "--no-jail-pass"], "exfil");
    assert_eq!(code, 0, "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    check_sarif(&doc);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let launders = results
        .iter()
        .filter(|r| r["ruleId"] == "MCPJAIL-LAUNDERS")
        .count();
    let exfil = results
        .iter()
        .filter(|r| r["ruleId"] == "MCPJAIL-EXFILTRATED")
        .count();
    assert!(launders > 0 && exfil > 0, "{results:#?}");
    let first = results
        .iter()
        .find(|r| r["ruleId"] == "MCPJAIL-LAUNDERS")
        .unwrap();
    assert_eq!(
        first["locations"][0]["logicalLocations"][0]["name"],
        "read_file"
    );
    assert!(first["properties"]["resolved"].is_string());
    assert_eq!(doc["runs"][0]["properties"]["verdict"], "launders");
}

#[test]
fn sarif_of_a_confined_server_has_no_results() {
    let (out, _, _) = run(&["--format", "sarif", "--no-jail-pass"], "honest");
    let doc: Value = serde_json::from_str(&out).unwrap();
    check_sarif(&doc);
    assert!(doc["runs"][0]["results"].as_array().unwrap().is_empty());
}

#[test]
fn sarif_of_every_verdict_validates_against_the_schema() {
    // exfil (launders + exfiltrated) and honest are covered above; these add the
    // MCPJAIL-LAUNDERS-only, MCPJAIL-UNDECLARED (start-up) and MCPJAIL-BROKEN results.
    for (mode, rule) in [
        ("naive", "MCPJAIL-LAUNDERS"),
        ("startup-ssh", "MCPJAIL-UNDECLARED"),
        ("broken", "MCPJAIL-BROKEN"),
    ] {
        let (out, err, _) = run(
            &["--format", "sarif", "--no-jail-pass", "--max-probes", "2"],
            mode,
        );
        let doc: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{mode}: {e}\n{err}"));
        check_sarif(&doc);
        let results = doc["runs"][0]["results"].as_array().unwrap();
        assert!(
            results.iter().any(|r| r["ruleId"] == rule),
            "{mode}: no {rule} result: {results:#?}"
        );
    }
}

#[test]
fn the_sarif_schema_rejects_a_broken_document() {
    // The validation above can fail: a result without its required `message`, a level
    // outside the enum, a run without `tool`, a wrong version are all caught.
    let good = serde_json::json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "mcpjail-scan", "rules": [{"id": "MCPJAIL-LAUNDERS"}]}},
            "results": [{
                "ruleId": "MCPJAIL-LAUNDERS", "ruleIndex": 0, "level": "error",
                "message": {"text": "read_file: openat ../home/.ssh/id_rsa"},
            }],
        }],
    });
    assert!(
        sarif_schema_errors(&good).is_empty(),
        "{:?}",
        sarif_schema_errors(&good)
    );
    type Mutation = (&'static str, fn(&mut Value));
    let mutations: [Mutation; 5] = [
        ("result without message", |d| {
            d["runs"][0]["results"][0]
                .as_object_mut()
                .unwrap()
                .remove("message");
        }),
        ("level outside the enum", |d| {
            d["runs"][0]["results"][0]["level"] = "fatal".into();
        }),
        ("run without tool", |d| {
            d["runs"][0].as_object_mut().unwrap().remove("tool");
        }),
        ("version 2.0.0", |d| d["version"] = "2.0.0".into()),
        ("unknown property on a result", |d| {
            d["runs"][0]["results"][0]["evidence"] = "x".into();
        }),
    ];
    for (what, mutate) in mutations {
        let mut doc = good.clone();
        mutate(&mut doc);
        let errors = sarif_schema_errors(&doc);
        assert!(!errors.is_empty(), "{what}: accepted:\n{doc:#}");
    }
}

#[test]
fn badge_names_the_verdict_in_its_colour() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, label, colour) in [
        ("honest", "confined", "#1a7f37"),
        ("naive", "launders paths", "#cf222e"),
        ("startup-ssh", "undeclared access", "#a34a00"),
        ("broken", "broken", "#57606a"),
    ] {
        let badge = dir.path().join(format!("{mode}.svg"));
        let (_, err, _) = run(
            &[
                "--no-jail-pass",
                "--max-probes",
                "2",
                "--badge",
                badge.to_str().unwrap(),
            ],
            mode,
        );
        let svg = std::fs::read_to_string(&badge).unwrap_or_else(|e| panic!("{mode}: {e}\n{err}"));
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains(&format!(">{label}</text>")), "{mode}: {svg}");
        assert!(svg.contains(&format!("fill=\"{colour}\"")), "{mode}: {svg}");
        assert!(svg.contains(">mcpjail</text>"));
    }
}

#[test]
fn text_report_has_a_tool_table_and_the_verdict() {
    let (out, err, _) = run(&["--no-jail-pass"], "naive");
    assert!(out.contains("TOOL"), "{out}");
    assert!(out.contains("read_file       launders"), "{out}");
    assert!(out.contains("VERDICT: launders"), "{out}");
    assert!(out.contains("[dotdot-relative]"), "{out}");
    // Not a terminal: no progress bar, and the server's stderr is not passed through.
    assert!(!err.contains("scanning ["), "{err}");
}

/// The text report quotes the server (its name, its command line, tool names): terminal
/// commands in them are shown, not passed to the terminal. The control: the same server's
/// JSON report carries its name exactly, escape character and all.
#[test]
fn text_report_shows_terminal_commands_from_the_server_as_text() {
    // The fixture names itself `scan-fixture-<mode>`: a mode that is a terminal command.
    let mode = "x\u{1b}]52;c;aGk=\u{7}\u{9b}2J\u{202e}";
    let (out, _, _) = run(&["--no-jail-pass"], mode);
    assert!(
        !out.chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{out:?}"
    );
    assert!(
        out.contains(r"scan-fixture-x\x1b]52;c;aGk=\x07\u{9b}2J\u{202e}"),
        "{out}"
    );
    let (json, _, _) = run(&["--no-jail-pass", "--format", "json"], mode);
    let report: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        report
            .pointer("/server/server_info/name")
            .and_then(Value::as_str),
        Some(format!("scan-fixture-{mode}").as_str()),
        "{json}"
    );
}

#[test]
fn a_scope_that_does_not_exist_is_noted() {
    // Nothing to remap: the verdict cannot speak for the server's scope, and the report says so.
    let out = Command::new(MCPJAIL)
        .args([
            "scan",
            "--format",
            "json",
            "--no-jail-pass",
            "--max-probes",
            "1",
        ])
        .args([
            "--",
            "python3",
            &fixture(),
            "naive",
            "/nonexistent/mcpjail-scope",
        ])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert!(r["server"]["remapped"].as_array().unwrap().is_empty());
    let notes = r["notes"].to_string();
    assert!(notes.contains("nothing was remapped"), "{notes}");
    // With a scope that exists, no such note.
    let (out, _, _) = run(
        &["--format", "json", "--no-jail-pass", "--max-probes", "1"],
        "naive",
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    assert!(!r["notes"].to_string().contains("nothing was remapped"));
}

#[test]
fn json_report_is_versioned_and_keeps_the_server_stderr() {
    let (out, _, _) = run(
        &["--format", "json", "--no-jail-pass", "--max-probes", "1"],
        "honest",
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["schema"], "mcpjail.scan/v1");
    assert_eq!(r["server"]["name"], "scan_fixture");
    assert_eq!(r["server"]["server_info"]["name"], "scan-fixture-honest");
    assert_eq!(r["server"]["tools_digest"].as_str().unwrap().len(), 64);
    assert!(r["stderr"].is_string());
    assert!(r["sandbox"]["canaries"].as_array().unwrap().len() >= 8);
}

#[test]
fn scans_a_server_from_a_client_config() {
    let dir = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let body = serde_json::json!({"mcpServers": {
        "naive-files": {"command": "python3", "args": [fixture(), "naive", data.path()]},
        "other": {"url": "https://example.invalid/mcp"},
    }});
    std::fs::write(&config, body.to_string()).unwrap();
    let out = Command::new(MCPJAIL)
        .args([
            "scan",
            "--format",
            "json",
            "--no-jail-pass",
            "--max-probes",
            "1",
        ])
        .arg("--config")
        .arg(&config)
        .args(["--server", "naive-files"])
        .output()
        .unwrap();
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(r["server"]["name"], "naive-files");
    assert_eq!(r["verdict"], "launders");

    let out = Command::new(MCPJAIL)
        .args(["scan", "--config"])
        .arg(&config)
        .args(["--server", "missing"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("naive-files"),
        "the hint lists the servers: {err}"
    );
}

#[test]
fn installed_scans_every_local_server_in_the_client_configs() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("proj");
    std::fs::create_dir_all(home.path().join(".cursor")).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let body = serde_json::json!({"mcpServers": {
        "fx-honest": {"command": "python3", "args": [fixture(), "honest", &data]},
        "fx-naive": {"command": "python3", "args": [fixture(), "naive", &data]},
        "remote": {"url": "https://example.invalid/mcp"},
    }});
    std::fs::write(home.path().join(".cursor/mcp.json"), body.to_string()).unwrap();
    let out = Command::new(MCPJAIL)
        .args(["scan", "--installed", "--format", "json", "--no-jail-pass"])
        .args(["--max-probes", "1", "--fail-on", "launders"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .env("HOME", home.path())
        .current_dir(home.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut verdicts: Vec<(String, String)> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["server"]["name"].as_str().unwrap().to_string(),
                r["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    verdicts.sort();
    assert_eq!(
        verdicts,
        vec![
            ("fx-honest".to_string(), "confined".to_string()),
            ("fx-naive".to_string(), "launders".to_string())
        ]
    );
}

/// `scripts/scan-ci.sh`, the CI recipe of docs/scan.md, run the way the doc runs it:
/// `sh scan-ci.sh [--fail-on KIND] -- COMMAND … {scope}` in the project's directory, with
/// `mcpjail` found on PATH.
fn scan_ci(args: &[&str], cwd: &Path) -> (i32, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/scan-ci.sh");
    let bin_dir = Path::new(MCPJAIL).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg(&script)
        .args(args)
        .current_dir(cwd)
        .env("PATH", path)
        .env_remove("MCPJAIL")
        .env_remove("MCPJAIL_SARIF")
        .env_remove("MCPJAIL_BADGE")
        .output()
        .unwrap();
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), log)
}

#[test]
fn the_documented_ci_script_runs() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scan.md"))
        .unwrap();
    // The doc's two recipes call the script, with this form and these file names.
    assert!(
        doc.contains("sh scan-ci.sh -- npx -y @scope/your-server@VERSION {scope}"),
        "the shell recipe"
    );
    assert!(
        doc.contains("sh .mcpjail/scripts/scan-ci.sh -- node dist/index.js {scope}"),
        "the GitHub Actions recipe"
    );
    assert!(doc.contains("sarif_file: mcpjail.sarif") && doc.contains("path: mcpjail.svg"));

    let fixture = fixture();
    let project = tempfile::tempdir().unwrap();
    let (code, log) = scan_ci(
        &["--", "python3", &fixture, "honest", "{scope}"],
        project.path(),
    );
    assert_eq!(code, 0, "{log}");
    assert!(log.contains("no findings"), "{log}");
    let sarif: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join("mcpjail.sarif")).unwrap(),
    )
    .unwrap();
    check_sarif(&sarif);
    assert_eq!(sarif["runs"][0]["properties"]["verdict"], "confined");
    let svg = std::fs::read_to_string(project.path().join("mcpjail.svg")).unwrap();
    assert!(svg.contains(">confined</text>"), "{svg}");

    for args in [
        &["--fail-on", "launders", "--"][..],
        &["--"][..], // the defaults: --fail-on launders --fail-on exfiltrated
    ] {
        let project = tempfile::tempdir().unwrap();
        let mut argv = args.to_vec();
        argv.extend(["python3", &fixture, "naive", "{scope}"]);
        let (code, log) = scan_ci(&argv, project.path());
        assert_eq!(code, 1, "{argv:?}: {log}");
        assert!(log.contains("findings, see mcpjail.sarif"), "{log}");
        let sarif: Value = serde_json::from_str(
            &std::fs::read_to_string(project.path().join("mcpjail.sarif")).unwrap(),
        )
        .unwrap();
        check_sarif(&sarif);
        assert_eq!(sarif["runs"][0]["properties"]["verdict"], "launders");
        let svg = std::fs::read_to_string(project.path().join("mcpjail.svg")).unwrap();
        assert!(svg.contains(">launders paths</text>"), "{svg}");
    }

    // A scan that cannot run is not "findings": 2.
    let project = tempfile::tempdir().unwrap();
    let (code, log) = scan_ci(
        &["--", "/nonexistent/mcp-server", "{scope}"],
        project.path(),
    );
    assert_eq!(code, 2, "{log}");
    let (code, log) = scan_ci(&["--fail-on", "launders"], project.path());
    assert_eq!(code, 2, "usage: {log}");
}
