//! `--log` (live lines on stderr) and `--log-file` (JSON lines), including secret redaction.

mod proxy_support;

use proxy_support::*;
use serde_json::{json, Value};

#[test]
fn live_log_and_audit_file_record_every_call_with_secrets_redacted() {
    let t = Tree::new();
    let audit = t.root().join("audit.jsonl");
    let mut opts = Opts::new(&t);
    opts.proxy_args = vec![
        "--log".into(),
        "--name".into(),
        "files".into(),
        "--log-file".into(),
        audit.display().to_string(),
    ];
    let mut s = Session::start(&t, opts);
    // The jail's enforcement report is on the live log before any call.
    s.wait_stderr("jail ");
    s.initialize();
    let r = s.call(
        "read_file",
        json!({"path": t.p("scope/a.txt"), "api_key": "plain-value", "note": "sk-live0123456789abcdef"}),
    );
    assert_eq!(result_text(&r), "alpha");
    let allow = s.wait_stderr("ALLOW");
    assert!(allow.contains(" files read_file "), "{allow}");
    assert!(allow.contains(&t.p("scope/a.txt")), "{allow}");
    assert!(allow.contains("µs") || allow.contains("ms"), "{allow}");
    let r = s.call(
        "read_file",
        json!({"path": "../outside/secret.txt", "token": "ghp_abcdefghijklmnop1234"}),
    );
    assert!(is_denial(&r));
    let deny = s.wait_stderr("DENY");
    assert!(deny.contains(&t.p("outside/secret.txt")), "{deny}");
    assert!(deny.contains("outside the allowed roots"), "{deny}");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);

    let text = std::fs::read_to_string(&audit).unwrap();
    for secret in ["plain-value", "sk-live", "ghp_"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the audit log:\n{text}"
        );
    }
    let stderr = s.stderr.lock().unwrap().join("\n");
    for secret in ["plain-value", "sk-live", "ghp_"] {
        let in_log: Vec<&str> = stderr
            .lines()
            .filter(|l| !l.starts_with("FIXTURE-CALL"))
            .filter(|l| l.contains(secret))
            .collect();
        assert!(in_log.is_empty(), "{secret} leaked into --log: {in_log:?}");
    }
    // One line per call; session events (the tool pins of the first sight) are lines of
    // their own, with an `event` member.
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e.get("event").is_none())
        .collect();
    assert_eq!(entries.len(), 2, "{text}");
    let e = &entries[0];
    for field in [
        "ts",
        "server",
        "id",
        "method",
        "tool",
        "paths",
        "decision",
        "reason",
        "latency_us",
        "result_bytes",
    ] {
        assert!(e.get(field).is_some(), "missing {field} in {e}");
    }
    assert_eq!(e["server"], json!("files"));
    assert_eq!(e["decision"], json!("allow"));
    assert_eq!(e["tool"], json!("read_file"));
    assert_eq!(e["paths"], json!([t.p("scope/a.txt")]));
    assert!(e["result_bytes"].as_u64().unwrap() > 0);
    assert_eq!(e["arguments"]["api_key"], json!("[REDACTED]"));
    assert_eq!(entries[1]["decision"], json!("deny"));
    assert_eq!(entries[1]["paths"], json!([t.p("outside/secret.txt")]));
}

#[test]
fn without_log_flags_nothing_is_logged_per_call() {
    let t = Tree::new();
    let mut s = Session::start(&t, Opts::new(&t));
    s.initialize();
    s.call("read_file", json!({"path": t.p("scope/a.txt")}));
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let stderr = s.stderr.lock().unwrap().join("\n");
    assert!(!stderr.contains("ALLOW"), "{stderr}");
}
