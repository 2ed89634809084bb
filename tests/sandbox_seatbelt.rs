//! Golden tests for the Seatbelt profile generator (pure code; runs on Linux).
//!
//! `MCPJAIL_BLESS=1 cargo test --test sandbox_seatbelt` rewrites the goldens; review the diff.
//! Paths are macOS-style and do not exist here, so every grant renders as a `subpath`.

use std::path::{Path, PathBuf};

use mcpjail::policy::{NetRules, Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::seatbelt;
use mcpjail::sandbox::{Grant, GrantAccess};

fn entry(p: &str) -> ScopeEntry {
    ScopeEntry {
        path: PathBuf::from(p),
        source: ScopeSource::Flag,
    }
}

fn grant(p: &str, access: GrantAccess) -> Grant {
    Grant {
        path: PathBuf::from(p),
        access,
        why: "test".into(),
    }
}

fn runtime() -> Vec<Grant> {
    vec![
        grant("/opt/homebrew/Cellar/node/22.1.0", GrantAccess::ReadExec),
        grant(
            "/Users/alice/proj/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
            GrantAccess::Read,
        ),
        grant("/Users/alice/.npm", GrantAccess::ReadWrite),
    ]
}

fn check(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/seatbelt")
        .join(format!("{name}.sb"));
    if std::env::var_os("MCPJAIL_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run with MCPJAIL_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .enumerate()
            .filter(|(_, (e, a))| e != a)
            .map(|(i, (e, a))| format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1))
            .collect();
        panic!(
            "{name}.sb differs (expected {} lines, got {}):\n{}\nrun with MCPJAIL_BLESS=1 to accept",
            expected.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}

#[test]
fn scope_with_read_write_exec_and_network_off() {
    let scope = Scope {
        read: vec![entry("/Users/alice/docs")],
        write: vec![entry("/Users/alice/proj")],
        exec: vec![entry("/Users/alice/proj/bin")],
        deny: vec![],
        net: NetRules::default(),
    };
    let profile = seatbelt::profile(
        &scope,
        &runtime(),
        Some(Path::new("/private/var/folders/xy/T/mcpjail-abc")),
    );
    assert!(profile.starts_with("(version 1)\n"));
    assert!(profile.contains("(deny default)"));
    assert!(profile.contains("(deny network*)"));
    assert!(!profile.contains("(allow network*)"));
    check("basic", &profile);
}

#[test]
fn allowed_tcp_ports() {
    let scope = Scope {
        write: vec![entry("/Users/alice/proj")],
        net: NetRules {
            allow_all: false,
            tcp_connect_ports: vec![443],
            tcp_bind_ports: vec![8080],
            ..NetRules::default()
        },
        ..Scope::default()
    };
    let profile = seatbelt::profile(&scope, &[], None);
    assert!(profile.contains(r#"(allow network-outbound (remote tcp "*:443"))"#));
    assert!(profile.contains(r#"(allow network-bind (local tcp "*:8080"))"#));
    check("tcp_ports", &profile);
}

#[test]
fn allow_net_turns_network_rules_off() {
    let scope = Scope {
        net: NetRules {
            allow_all: true,
            ..NetRules::default()
        },
        ..Scope::default()
    };
    let profile = seatbelt::profile(&scope, &[], None);
    assert!(profile.contains("(allow network*)"));
    check("allow_net", &profile);
}

#[test]
fn quotes_and_backslashes_in_paths_are_escaped() {
    let scope = Scope {
        write: vec![entry(r#"/Users/alice/we"ird\dir"#)],
        read: vec![entry("/Users/alice/new\nline")],
        ..Scope::default()
    };
    let profile = seatbelt::profile(&scope, &[], None);
    assert!(profile.contains(r#"(subpath "/Users/alice/we\"ird\\dir")"#));
    assert!(profile.contains(r#"(subpath "/Users/alice/new\nline")"#));
    // The raw quote never terminates the string early.
    assert!(!profile.contains(r#"we"ird"#));
    check("escaping", &profile);
}

#[test]
fn deny_patterns_are_denied_inside_allowed_subpaths() {
    // Seatbelt can deny a name inside an allowed directory itself (the last matching rule wins),
    // so the carve-out needs no mounts on macOS: the deny rules must come after the allows.
    let scope = Scope {
        write: vec![entry("/Users/alice/proj")],
        deny: vec!["**/.env*".into(), "~/.ssh".into()],
        ..Scope::default()
    };
    let profile = seatbelt::profile(&scope, &[], None);
    let allow = profile.find(r#"(subpath "/Users/alice/proj")"#).unwrap();
    let deny = profile.find("(deny file-read* file-write*").unwrap();
    assert!(deny > allow, "{profile}");
    assert!(
        profile.contains(r#"(regex #"^/?(.*/)?\.env[^/]*(/.*)?$")"#),
        "{profile}"
    );
    assert!(profile.contains(r#"(regex #"^/(Users/[^/]+|var/root)/\.ssh(/.*)?$")"#));
}
