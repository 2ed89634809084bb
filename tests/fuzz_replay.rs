//! Replays the committed fuzz inputs on stable Rust: every file in `fuzz/corpus/<target>/` (the
//! minimised corpus of the last campaign) and `fuzz/regressions/<target>/` (inputs that once
//! crashed a target, kept after the fix) goes through the same body the fuzzer runs,
//! `mcpjail::fuzzing::<target>::run`, whose assertions are the target's invariants. So CI
//! checks every invariant on every input the fuzzer found interesting, without nightly.

use std::path::{Path, PathBuf};

fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("read a fuzz input entry").path())
        .filter(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"))
        .collect();
    files.sort();
    files
}

fn replay(target: &str) {
    let body = mcpjail::fuzzing::target(target).expect("a fuzz target of that name");
    let corpus = inputs("corpus", target);
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target}/ is empty; hint: scripts/fuzz.sh rebuilds it"
    );
    let regressions = inputs("regressions", target);
    let mut failed = Vec::new();
    for file in corpus.iter().chain(&regressions) {
        let data = std::fs::read(file).expect("read a fuzz input");
        if std::panic::catch_unwind(|| body(&data)).is_err() {
            failed.push(file.display().to_string());
        }
    }
    println!(
        "{target}: {} corpus and {} regression inputs replayed",
        corpus.len(),
        regressions.len()
    );
    assert!(
        failed.is_empty(),
        "{target}: {} inputs break an invariant (the panic is printed above each): {failed:#?}; \
         reproduce with: cargo +nightly fuzz run {target} FILE",
        failed.len()
    );
}

#[test]
fn every_target_has_a_replay_test() {
    let names: Vec<&str> = mcpjail::fuzzing::TARGETS.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        [
            "framing",
            "message",
            "resolve",
            "detect",
            "policy_file",
            "config_edit",
            "audit"
        ]
    );
}

#[test]
fn framing_inputs_keep_their_invariants() {
    replay("framing");
}

#[test]
fn message_inputs_keep_their_invariants() {
    replay("message");
}

#[test]
fn resolve_inputs_keep_their_invariants() {
    replay("resolve");
}

#[test]
fn detect_inputs_keep_their_invariants() {
    replay("detect");
}

#[test]
fn policy_file_inputs_keep_their_invariants() {
    replay("policy_file");
}

#[test]
fn config_edit_inputs_keep_their_invariants() {
    replay("config_edit");
}

#[test]
fn audit_inputs_keep_their_invariants() {
    replay("audit");
}
