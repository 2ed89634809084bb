//! The policy model: what a server may touch.
//!
//! A [`Scope`] is three sets of canonical absolute path prefixes — `read`, `write` (implies read)
//! and `exec` — plus deny globs and network rules. Everything that decides "is this path allowed"
//! goes through this module: the proxy's argument checks and the sandbox's kernel rules are both
//! generated from one Scope, so they cannot disagree.
//!
//! This module must not do I/O beyond reading the filesystem metadata needed to canonicalize
//! paths and reading policy files; it never spawns processes or talks MCP.

mod scope;

pub use scope::{NetRules, Scope, ScopeEntry, ScopeSource};
