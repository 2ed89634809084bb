//! The [`Scope`] data type shared by the proxy and the sandbox.

use std::path::PathBuf;

/// Where a scope entry came from, so `--log` and `policy derive` can explain every grant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum ScopeSource {
    /// An explicit policy file (path of the file).
    PolicyFile(PathBuf),
    /// A path in the server's own argv (the argument as written).
    Argv(String),
    /// Derived from a tool schema (tool name).
    Schema(String),
    /// The client's `roots/list` reply.
    ClientRoots,
    /// `--allow-read` / `--allow-write` on this process only.
    Flag,
    /// The server's runtime (interpreter, install tree, system libraries).
    Runtime,
}

/// One canonical absolute path prefix and why it is granted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScopeEntry {
    pub path: PathBuf,
    pub source: ScopeSource,
}

/// Network rules. Off (deny all) by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetRules {
    /// `--allow-net`: turn every network rule off (documented trade-off).
    pub allow_all: bool,
    pub tcp_connect_ports: Vec<u16>,
    pub tcp_bind_ports: Vec<u16>,
}

/// What a server may touch. `write` implies read. Paths are canonical and absolute.
///
/// Allow checks are component-wise prefix checks (`/home/u/proj` does not cover `/home/u/projX`);
/// `deny` globs always win over allows.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Scope {
    pub read: Vec<ScopeEntry>,
    pub write: Vec<ScopeEntry>,
    pub exec: Vec<ScopeEntry>,
    /// Deny glob patterns (always-denied credentials plus policy-file `deny`).
    pub deny: Vec<String>,
    pub net: NetRules,
}

/// What an access needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum DenyReason {
    /// Outside every allowed root for this access.
    OutsideScope,
    /// Matches an always-denied or policy deny glob (the pattern).
    DeniedPattern(String),
    /// A write by a tool the server declares read-only.
    ReadOnlyTool,
}

/// A refused path, with everything a message to the model needs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Denial {
    pub path: PathBuf,
    pub access: Access,
    pub reason: DenyReason,
}

impl Scope {
    /// Is `path` (already resolved, canonical) allowed for `access`? Deny globs win over allows;
    /// allow checks are component-wise prefix checks.
    pub fn check(&self, path: &std::path::Path, access: Access) -> Result<(), Denial> {
        let _ = (path, access);
        todo!("policy work")
    }

    /// The roots a model may use for `access`, for denial messages.
    pub fn roots(&self, access: Access) -> Vec<PathBuf> {
        let _ = access;
        todo!("policy work")
    }

    /// A copy narrowed to what lies under `roots` (the client's `roots/list`): never wider.
    pub fn narrowed_to(&self, roots: &[PathBuf]) -> Scope {
        let _ = roots;
        todo!("policy work")
    }

    /// Is `other` strictly narrower than or equal to `self` (so a respawn would narrow)?
    pub fn covers(&self, other: &Scope) -> bool {
        let _ = other;
        todo!("policy work")
    }
}
