//! Fuzz target bodies, one `fn(&[u8])` per target, each asserting its target's invariants (a
//! broken invariant panics, which the fuzzer reports as a crash).
//!
//! They live in the library so the cargo-fuzz crate (`fuzz/`, nightly, its own workspace) and
//! the stable replay test (`tests/fuzz_replay.rs`, which runs every committed corpus and
//! regression input through them) share one body. Not a public API: hidden, and free to change.
//!
//! Every body must stay deterministic and must not write outside memory (the config-edit
//! target plans edits in memory only); paths it resolves lie under a directory that does not
//! exist, so the filesystem it reads (`lstat`) does not change between runs.

pub mod audit;
pub mod config_edit;
pub mod detect;
pub mod framing;
pub mod message;
pub mod policy_file;
pub mod resolve;

/// One target's body: panics when an invariant breaks.
pub type Body = fn(&[u8]);

/// `(name, body)` for every target, in the order `scripts/fuzz.sh` runs them. The name is the
/// cargo-fuzz target and the folder under `fuzz/corpus/` and `fuzz/regressions/`.
pub const TARGETS: &[(&str, Body)] = &[
    ("framing", framing::run),
    ("message", message::run),
    ("resolve", resolve::run),
    ("detect", detect::run),
    ("policy_file", policy_file::run),
    ("config_edit", config_edit::run),
    ("audit", audit::run),
];

/// The body of target `name`.
pub fn target(name: &str) -> Option<Body> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// A directory that does not exist: the fuzzed resolver and checks work under it, so their
/// answers depend on the input only.
const NOWHERE: &str = "/nonexistent-mcpjail-fuzz";
