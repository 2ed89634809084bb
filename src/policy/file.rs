//! The policy file format (`--policy FILE`, `$XDG_CONFIG_HOME/mcpjail/servers/<name>.toml`):
//! its schema and its parser. Reading the file and applying it is derivation's job
//! ([`super::derive`]).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::derive::DeriveError;
use super::scope::validate_deny_globs;
use crate::sandbox::PathKind;

/// The policy file schema (TOML):
///
/// ```toml
/// read  = ["~/docs", "/srv/shared"]       # read-only roots
/// write = ["./data"]                      # read-write roots (relative to this file)
/// deny  = ["**/*.sqlite-journal"]         # extra deny globs (absolute or **/ patterns)
/// state = ["~/.claude-server-commander"]  # the server's own state dirs: read-write, created
/// ignore_argv = false                     # true: do not add paths from the server's argv
///
/// [kinds]                                 # written by `policy derive --write`:
/// "/home/u/data" = "directory"            # what each scope path was (file, directory,
///                                         # symlink, other); the proxy refuses to start if
///                                         # one is of another kind now
///
/// [tools.write_file]
/// read_only = true                        # this tool only gets read scope
///
/// [net]
/// allow_domains = ["api.example.com", "*.cdn.example.com:8443"]  # via the egress proxy
/// ```
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
    /// The server's own state directories (`~/.claude-server-commander`): read-write, and
    /// created (0700) before the server starts when missing, since the jail can only grant
    /// what exists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub state: Vec<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_argv: bool,
    /// What each scope path was when the policy was derived (keys: paths, relative ones to
    /// this file). Optional: files written before kinds were recorded load without it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<String, PathKind>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, ToolPolicy>,
    /// Network by name: reached through the egress proxy (see [`super::net`]).
    #[serde(default, skip_serializing_if = "NetPolicy::is_empty")]
    pub net: NetPolicy,
}

/// `[net]` in a policy file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NetPolicy {
    /// `["example.com", "*.example.com", "api.example.com:8443"]`: ports 80/443 unless written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_domains: Vec<String>,
}

impl NetPolicy {
    pub fn is_empty(&self) -> bool {
        self.allow_domains.is_empty()
    }
}

/// Per-tool settings in a policy file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolPolicy {
    #[serde(default)]
    pub read_only: bool,
}

/// Parse a policy file's text. Errors carry the line, column and field (toml's own message).
pub fn parse_policy_file(path: &Path, text: &str) -> Result<PolicyFile, DeriveError> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| DeriveError::PolicyFile {
        path: path.to_path_buf(),
        message: describe_toml_error(text, &e),
    })?;
    for rule in &file.net.allow_domains {
        super::net::DomainRule::parse(rule).map_err(|e| DeriveError::PolicyFile {
            path: path.to_path_buf(),
            message: format!(
                "line {}: field `net.allow_domains`: {e}",
                line_of(text, rule)
            ),
        })?;
    }
    validate_deny_globs(&file.deny).map_err(|(pattern, why)| DeriveError::PolicyFile {
        path: path.to_path_buf(),
        message: format!(
            "line {}: field `deny`: `{pattern}` is not a valid glob: {why}",
            line_of(text, &pattern)
        ),
    })?;
    Ok(file)
}

fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let snippet = text.lines().nth(line - 1).unwrap_or("").trim();
            format!("line {line}: {msg} (`{snippet}`)")
        }
        None => msg,
    }
}

pub(crate) fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .unwrap_or(0)
}
