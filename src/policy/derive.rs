//! Building a Scope: policy file → server argv → flags, plus the always-denied set.
//!
//! INTERFACE FIXED — bodies to be written by the policy work.

use std::path::PathBuf;

use super::Scope;

/// Everything derivation looks at.
#[derive(Debug, Clone, Default)]
pub struct DeriveInputs {
    /// Server name (for `$XDG_CONFIG_HOME/mcpjail/servers/<name>.toml`).
    pub name: String,
    /// The server command and arguments as the client would run it.
    pub command: Vec<String>,
    /// The server's working directory.
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// `--policy FILE`.
    pub policy_file: Option<PathBuf>,
    /// `--allow-read` / `--allow-write` (ephemeral).
    pub allow_read: Vec<PathBuf>,
    pub allow_write: Vec<PathBuf>,
}

/// The derived scope plus notes worth telling the user (argv paths that do not exist, ...).
#[derive(Debug, Clone)]
pub struct Derived {
    pub scope: Scope,
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    #[error("policy file {path}: {message}")]
    PolicyFile { path: PathBuf, message: String },
    #[error("{0}")]
    Resolve(#[from] super::ResolveError),
}

/// Derive the Scope for a server (see DESIGN.md "Derivation").
pub fn derive_scope(inputs: &DeriveInputs) -> Result<Derived, DeriveError> {
    let _ = inputs;
    todo!("policy work")
}
