//! Golden round-trip tests for every client config format: install changes only the wrapped
//! `command`/`args` values (checked three ways: against a reviewed golden file, by an
//! independent byte-range check, and semantically), uninstall restores the original bytes,
//! a second install changes nothing, and an unparsable file is left untouched.

mod install_support;

use install_support::*;

const PLACEHOLDER: &str = "@PROXY@";

fn golden_path(f: &Fixture) -> std::path::PathBuf {
    repo()
        .join("tests/golden/install")
        .join(format!("{}.wrapped", f.source))
}

/// Check (or with MCPJAIL_BLESS=1, write) the golden file of an installed fixture.
fn check_golden(f: &Fixture, installed: &str) {
    let normalised = installed.replace(PROXY, PLACEHOLDER);
    let path = golden_path(f);
    if std::env::var_os("MCPJAIL_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &normalised).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with MCPJAIL_BLESS=1 to create)",
            path.display()
        )
    });
    if expected != normalised {
        let d = similar::TextDiff::from_lines(&expected, &normalised)
            .unified_diff()
            .header("golden", "actual")
            .to_string();
        panic!("{} differs from its golden file:\n{d}", f.source);
    }
}

fn round_trip(f: &Fixture) {
    let sb = Sandbox::new();
    let original = sb.place(f);
    let original_text = String::from_utf8(original.clone()).unwrap();

    let out = sb.install(&["--client", f.client]);
    assert_ok(&out);
    let installed = String::from_utf8(sb.read(f.dest)).unwrap();
    assert_ne!(
        installed, original_text,
        "{}: nothing was wrapped",
        f.source
    );

    // 1. exactly the reviewed bytes
    check_golden(f, &installed);
    // 2. only command/args values differ (independent byte-range check)
    let regions = assert_only_values_changed(f.toml, &original_text, &installed);
    assert!(regions > 0);
    // 3. semantically: the same document except for wrapped command lines
    let wrapped = same_except_wrapping(
        &parse(f.toml, &original_text),
        &parse(f.toml, &installed),
        PROXY,
    )
    .unwrap_or_else(|e| panic!("{}: {e}", f.source));
    assert!(wrapped > 0);
    // The diff was shown on stdout.
    assert!(text(&out.stdout).contains("+++ "), "no diff shown");

    // Install twice: no change, no new record.
    let records_before = std::fs::read_dir(sb.state_dir()).unwrap().count();
    let again = sb.install(&["--client", f.client]);
    assert_ok(&again);
    assert_eq!(
        sb.read(f.dest),
        installed.as_bytes(),
        "{}: second install changed the file",
        f.source
    );
    assert_eq!(
        std::fs::read_dir(sb.state_dir()).unwrap().count(),
        records_before
    );
    assert!(text(&again.stderr).contains("nothing to wrap"));

    // Uninstall: byte-identical.
    let out = sb.run(&["uninstall", "--yes", "--client", f.client]);
    assert_ok(&out);
    assert_eq!(
        text(&sb.read(f.dest)),
        original_text,
        "{}: uninstall did not restore the original bytes",
        f.source
    );
    // And a second uninstall has nothing left to do.
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    assert_eq!(sb.read(f.dest), original);
}

#[test]
fn claude_desktop_round_trip() {
    round_trip(&FIXTURES[0]);
}
#[test]
fn claude_code_user_file_round_trip() {
    round_trip(&FIXTURES[1]);
}
#[test]
fn claude_code_project_file_round_trip() {
    round_trip(&FIXTURES[2]);
}
#[test]
fn cursor_round_trip() {
    round_trip(&FIXTURES[3]);
}
#[test]
fn vscode_user_crlf_jsonc_round_trip() {
    round_trip(&FIXTURES[4]);
}
#[test]
fn vscode_workspace_round_trip() {
    round_trip(&FIXTURES[5]);
}
#[test]
fn windsurf_round_trip() {
    round_trip(&FIXTURES[6]);
}
#[test]
fn gemini_round_trip() {
    round_trip(&FIXTURES[7]);
}
#[test]
fn cline_round_trip() {
    round_trip(&FIXTURES[8]);
}
#[test]
fn zed_round_trip() {
    round_trip(&FIXTURES[9]);
}
#[test]
fn codex_toml_round_trip() {
    round_trip(&FIXTURES[10]);
}

/// All clients at once (the way a user runs it), then one uninstall restores every file.
#[test]
fn all_clients_at_once_round_trip() {
    let sb = Sandbox::new();
    let originals: Vec<Vec<u8>> = FIXTURES.iter().map(|f| sb.place(f)).collect();
    let out = sb.install(&[]);
    assert_ok(&out);
    for (f, orig) in FIXTURES.iter().zip(&originals) {
        assert_ne!(&sb.read(f.dest), orig, "{} not wrapped", f.source);
    }
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    for (f, orig) in FIXTURES.iter().zip(&originals) {
        assert_eq!(&sb.read(f.dest), orig, "{} not restored", f.source);
    }
}

fn unparsable(client: &str, source: &str, dest: &str, expected: &str) {
    let sb = Sandbox::new();
    let broken = std::fs::read(repo().join("fixtures/configs/broken").join(source)).unwrap();
    sb.write(dest, &broken);
    // A healthy file of another client is still wrapped.
    let windsurf = &FIXTURES[6];
    let healthy = sb.place(windsurf);
    let out = sb.install(&[]);
    assert_eq!(out.status.code(), Some(1), "stderr: {}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(
            &sb.path(dest)
                .strip_prefix(&sb.home)
                .unwrap()
                .display()
                .to_string()
        ),
        "{err}"
    );
    assert!(
        err.contains("does not parse") && err.contains(expected),
        "{client}: {err}"
    );
    assert!(err.contains("left untouched"), "{err}");
    assert_eq!(sb.read(dest), broken, "broken file was modified");
    assert!(!sb.path(dest).with_extension("json.bak").exists());
    assert_ne!(
        sb.read(windsurf.dest),
        healthy,
        "the healthy file was not wrapped"
    );
    // No sibling files were created next to the broken one (no renames, no temp leftovers).
    let siblings = std::fs::read_dir(sb.path(dest).parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(siblings, 1);
}

#[test]
fn unparsable_json_is_left_untouched_with_a_clear_error() {
    unparsable(
        "cursor",
        "missing-comma.json",
        "~/.cursor/mcp.json",
        "line 4",
    );
}

#[test]
fn unparsable_toml_is_left_untouched_with_a_clear_error() {
    unparsable("codex", "bad.toml", "~/.codex/config.toml", "line 2");
}

/// Control for the byte-range checker: a re-serialised file (what other tools do) fails it.
#[test]
fn byte_range_check_catches_a_reserialised_file() {
    let f = &FIXTURES[7];
    let orig = std::fs::read_to_string(repo().join("fixtures/configs").join(f.source)).unwrap();
    let reserialised = serde_json::to_string_pretty(&parse(false, &orig)).unwrap();
    let result =
        std::panic::catch_unwind(|| assert_only_values_changed(false, &orig, &reserialised));
    assert!(result.is_err(), "the checker accepted a re-serialised file");
}

/// A multi-megabyte `.claude.json` (long histories, many projects, some with local servers)
/// round-trips byte for byte, with every other key intact.
#[test]
fn large_claude_json_round_trip() {
    let sb = Sandbox::new();
    let mut projects = serde_json::Map::new();
    for i in 0..150 {
        let history: Vec<serde_json::Value> = (0..30)
            .map(|j| serde_json::json!({"display": format!("prompt {j} — ünïcode ✓ {}", "x".repeat(300)), "pastedContents": {}}))
            .collect();
        let mut p = serde_json::json!({"allowedTools": [], "history": history, "hasTrustDialogAccepted": true});
        if i % 5 == 0 {
            p["mcpServers"] = serde_json::json!({
                "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git", "--repository", format!("/home/u/p{i}")]},
                "db": {"command": "/opt/db-mcp", "env": {"DB_URL": "postgres://x"}}
            });
        }
        projects.insert(format!("/home/u/p{i}"), p);
    }
    let doc = serde_json::json!({"numStartups": 9, "projects": projects, "mcpServers": {}});
    let original = serde_json::to_string_pretty(&doc).unwrap();
    assert!(original.len() > 1_500_000, "{}", original.len());
    sb.write("~/.claude.json", original.as_bytes());
    assert_ok(&sb.install(&[]));
    let installed = text(&sb.read("~/.claude.json"));
    let wrapped =
        same_except_wrapping(&parse(false, &original), &parse(false, &installed), PROXY).unwrap();
    assert_eq!(wrapped, 60);
    assert_only_values_changed(false, &original, &installed);
    assert_ok(&sb.run(&["uninstall", "--yes"]));
    assert_eq!(text(&sb.read("~/.claude.json")), original);
}

/// Control for the byte-range checker: one flipped value outside command/args is caught, and
/// an edit inside an args array is accepted.
#[test]
fn byte_range_check_catches_a_single_byte_outside() {
    let f = &FIXTURES[8]; // cline
    let orig = std::fs::read_to_string(repo().join("fixtures/configs").join(f.source)).unwrap();
    let flipped = orig.replacen("\"disabled\": true", "\"disabled\": false", 1);
    assert_ne!(flipped, orig);
    let result = std::panic::catch_unwind(|| assert_only_values_changed(false, &orig, &flipped));
    assert!(result.is_err(), "the checker missed a flipped `disabled`");
    let inside = orig.replacen(
        "\"-y\", \"@modelcontextprotocol/server-everything\"",
        "\"-y\", \"@modelcontextprotocol/server-everything\", \"x\"",
        1,
    );
    assert_ne!(inside, orig);
    assert_eq!(assert_only_values_changed(false, &orig, &inside), 1);
}
