//! MCP client configs: find them, wrap their local servers in `mcpjail-proxy`, undo exactly.
//!
//! One module per client (where its files live, which keys hold its servers, how it marks a
//! remote entry); shared modules do the rest:
//!
//! * [`host`] — HOME / XDG / APPDATA / CLAUDE_CONFIG_DIR, resolved once, so tests use a temp HOME;
//! * [`scan`] — read each file, list its servers (transport, wrapped or not, why skipped);
//! * [`edit`], [`jsonc`], [`tomlfmt`] — byte-range edits through a syntax tree (jsonc-parser,
//!   toml_edit): a user's file is never re-serialised, only the changed values' bytes differ;
//! * [`wrap`] — the wrapped command line and its inverse;
//! * [`apply`] — install and uninstall plans, verified before anything is written;
//! * [`atomic`], [`record`] — atomic writes (same mode and owner), timestamped backups and the
//!   sidecar records `uninstall` uses to restore the original bytes;
//! * [`procs`] — which running client would overwrite a file from memory;
//! * [`diff`] — the unified diff shown before writing.
//!
//! This module must not print or prompt; the CLI (`src/cli/install.rs`) does that.

pub mod apply;
pub mod atomic;
pub mod claude_code;
pub mod claude_desktop;
pub mod cline;
pub mod codex;
pub mod cursor;
pub mod diff;
pub mod edit;
pub mod gemini;
pub mod host;
pub mod jsonc;
pub mod listtools;
pub mod procs;
pub mod record;
pub mod scan;
pub mod startcheck;
pub mod tomlfmt;
pub mod vscode;
pub mod windsurf;
pub mod wrap;
pub mod zed;

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use host::{HostEnv, Os};

/// Errors of the clients library. Per-file problems (unparsable file, refused write) are
/// reported per file by [`scan`] and [`apply`]; these are the ones that stop an operation.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    #[error("neither HOME nor USERPROFILE is set\nhint: set HOME to your home directory")]
    NoHome,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} does not parse: {message}\nhint: fix the syntax error (mcpjail never rewrites a file it cannot parse)")]
    Parse { path: PathBuf, message: String },
    #[error("{path} changed while mcpjail was planning its edit; nothing written\nhint: run the command again")]
    Changed { path: PathBuf },
    #[error("unsupported entry: {0}")]
    Unsupported(String),
    #[error("install record {path} is unreadable: {message}")]
    Record { path: PathBuf, message: String },
    #[error("verification of {path} failed after writing: {message}")]
    Verify { path: PathBuf, message: String },
    #[error("internal error: {0}")]
    Internal(String),
}

/// Every client mcpjail knows, in the order `status` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ClientId {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    VscodeInsiders,
    Windsurf,
    Gemini,
    Cline,
    Zed,
    Codex,
}

impl ClientId {
    pub const ALL: [ClientId; 10] = [
        ClientId::ClaudeDesktop,
        ClientId::ClaudeCode,
        ClientId::Cursor,
        ClientId::Vscode,
        ClientId::VscodeInsiders,
        ClientId::Windsurf,
        ClientId::Gemini,
        ClientId::Cline,
        ClientId::Zed,
        ClientId::Codex,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ClientId::ClaudeDesktop => "claude-desktop",
            ClientId::ClaudeCode => "claude-code",
            ClientId::Cursor => "cursor",
            ClientId::Vscode => "vscode",
            ClientId::VscodeInsiders => "vscode-insiders",
            ClientId::Windsurf => "windsurf",
            ClientId::Gemini => "gemini",
            ClientId::Cline => "cline",
            ClientId::Zed => "zed",
            ClientId::Codex => "codex",
        }
    }

    /// Parse a `--client` value (the names above, plus a few obvious aliases).
    pub fn parse(name: &str) -> Option<ClientId> {
        let n = name.to_ascii_lowercase().replace('_', "-");
        let alias = match n.as_str() {
            "claude" | "claude-app" => "claude-desktop",
            "code" | "vs-code" => "vscode",
            "code-insiders" => "vscode-insiders",
            "gemini-cli" => "gemini",
            other => other,
        };
        ClientId::ALL.into_iter().find(|c| c.as_str() == alias)
    }

    fn spec(self) -> ClientSpec {
        match self {
            ClientId::ClaudeDesktop => claude_desktop::SPEC,
            ClientId::ClaudeCode => claude_code::SPEC,
            ClientId::Cursor => cursor::SPEC,
            ClientId::Vscode => vscode::SPEC,
            ClientId::VscodeInsiders => vscode::INSIDERS_SPEC,
            ClientId::Windsurf => windsurf::SPEC,
            ClientId::Gemini => gemini::SPEC,
            ClientId::Cline => cline::SPEC,
            ClientId::Zed => zed::SPEC,
            ClientId::Codex => codex::SPEC,
        }
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a server entry applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Every project of this user.
    User,
    /// A project's checked-in config (`.mcp.json`, `.vscode/mcp.json`…).
    Project,
    /// One project, stored in the user's file (Claude Code `projects[…]`).
    Local,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// JSON with comments and trailing commas allowed (a strict JSON file is JSONC too).
    Jsonc,
    Toml,
}

/// A client that rewrites a config file from its in-memory state while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RewritingClient {
    ClaudeDesktop,
    ClaudeCode,
}

/// One config file a client may read.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub client: ClientId,
    pub path: PathBuf,
    pub format: Format,
    /// The scope of the file's main section (Claude Code's `.claude.json` also has local ones).
    pub scope: Scope,
    /// The client that rewrites this file while running, if any.
    pub rewritten_by: Option<RewritingClient>,
}

/// A map of servers inside a file: the keys leading to it and the scope it has.
#[derive(Debug, Clone)]
pub struct Section {
    pub path: Vec<String>,
    pub scope: Scope,
}

/// How a server entry is reached, as far as wrapping is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A local process: `command` (or `path`) lives in the object at `holder` (relative to the
    /// entry), `args` beside it.
    Stdio {
        holder: Vec<String>,
        command_key: &'static str,
    },
    /// A remote server (http, sse, streamable http, ws…).
    Remote(String),
    /// A Zed extension-provided server (no command of its own in the file).
    Extension,
    /// Something we do not understand (no command, command not a string…).
    Unknown(String),
}

/// What a client module provides.
#[derive(Clone, Copy)]
pub struct ClientSpec {
    pub id: ClientId,
    pub format: Format,
    /// The files this client may read, given the host and the project directory.
    pub files: fn(&HostEnv, &Path) -> Vec<ConfigFile>,
    /// The server maps inside one parsed file.
    pub sections: fn(&serde_json::Value, &ConfigFile) -> Vec<Section>,
    /// How one entry is run.
    pub classify: fn(&serde_json::Value) -> Shape,
}

/// The usual case: one map under `key` with the file's scope.
pub fn single_section(key: &str, file: &ConfigFile) -> Vec<Section> {
    vec![Section {
        path: vec![key.to_string()],
        scope: file.scope,
    }]
}

/// Remote markers the clients use, in one place: `url`, `serverUrl` (Windsurf), `httpUrl`
/// (Gemini), `uri`, and a `type`/`transportType` naming a network transport.
pub fn classify_common(entry: &serde_json::Value) -> Shape {
    let Some(obj) = entry.as_object() else {
        return Shape::Unknown("entry is not an object".into());
    };
    let declared = ["type", "transportType", "transport"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(|v| v.as_str()))
        .map(|s| s.to_ascii_lowercase());
    if let Some(t) = &declared {
        let t = t.replace(['_', ' '], "-");
        if t == "http" || t == "sse" || t.starts_with("streamable") || t == "ws" || t == "websocket"
        {
            return Shape::Remote(t);
        }
    }
    for (key, transport) in [
        ("httpUrl", "http"),
        ("serverUrl", "http"),
        ("url", "http"),
        ("uri", "http"),
    ] {
        if obj.contains_key(key) {
            return Shape::Remote(declared.clone().unwrap_or_else(|| transport.to_string()));
        }
    }
    match obj.get("command") {
        Some(serde_json::Value::String(_)) => Shape::Stdio {
            holder: vec![],
            command_key: "command",
        },
        Some(_) => Shape::Unknown("`command` is not a string".into()),
        None => Shape::Unknown("no `command`".into()),
    }
}

/// The names of the entry's own `env` variables (what `--env-keep` must pass through).
pub fn env_keys(env: Option<&serde_json::Value>) -> Vec<String> {
    match env.and_then(|e| e.as_object()) {
        Some(map) => map.keys().cloned().collect(),
        None => vec![],
    }
}

/// Every config file of the selected clients (all when `clients` is empty), deduplicated by
/// path (a project dir equal to HOME would list `~/.cursor/mcp.json` twice).
pub fn config_files(host: &HostEnv, project: &Path, clients: &[ClientId]) -> Vec<ConfigFile> {
    let mut out: Vec<ConfigFile> = Vec::new();
    for id in ClientId::ALL {
        if !clients.is_empty() && !clients.contains(&id) {
            continue;
        }
        for file in (id.spec().files)(host, project) {
            if !out.iter().any(|f| f.path == file.path) {
                out.push(file);
            }
        }
    }
    out
}

pub(crate) fn file(client: ClientId, path: PathBuf, format: Format, scope: Scope) -> ConfigFile {
    ConfigFile {
        client,
        path,
        format,
        scope,
        rewritten_by: None,
    }
}

/// The [`ConfigFile`] an install record refers to (its project may not be the current one).
pub fn config_file_for_record(client: ClientId, path: PathBuf) -> ConfigFile {
    let spec = client.spec();
    let rewritten_by = match client {
        ClientId::ClaudeDesktop => Some(RewritingClient::ClaudeDesktop),
        ClientId::ClaudeCode if path.file_name().is_some_and(|n| n == ".claude.json") => {
            Some(RewritingClient::ClaudeCode)
        }
        _ => None,
    };
    ConfigFile {
        client,
        path,
        format: spec.format,
        scope: Scope::User,
        rewritten_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One source of truth: every config file any client reads is always denied by the policy
    /// (`policy::deny::CLIENT_CONFIGS`), for a project anywhere and a HOME anywhere.
    #[test]
    fn every_client_config_file_is_always_denied_by_the_policy() {
        for os in [Os::Linux, Os::MacOs] {
            let h = host(os, &[("HOME", "/h/u")]);
            let scope = crate::policy::Scope {
                write: vec![crate::policy::ScopeEntry {
                    path: PathBuf::from("/"),
                    source: crate::policy::ScopeSource::Flag,
                }],
                deny: crate::policy::always_denied(Some(Path::new("/h/u"))),
                ..Default::default()
            };
            let files = config_files(&h, Path::new("/w/proj"), &[]);
            assert!(files.len() >= ClientId::ALL.len());
            for f in files {
                assert!(
                    scope.check(&f.path, crate::policy::Access::Read).is_err(),
                    "{} config {} is not in policy::deny::CLIENT_CONFIGS",
                    f.client,
                    f.path.display()
                );
            }
        }
    }

    fn host(os: Os, vars: &[(&str, &str)]) -> HostEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        HostEnv::from_lookup(os, |k| {
            vars.iter().find(|(key, _)| key == k).map(|(_, v)| v.into())
        })
        .unwrap()
    }

    fn paths(h: &HostEnv, client: ClientId) -> Vec<String> {
        config_files(h, Path::new("/p"), &[client])
            .into_iter()
            .map(|f| f.path.to_string_lossy().replace('\\', "/"))
            .collect()
    }

    #[test]
    fn linux_paths_follow_xdg_and_overrides() {
        let h = host(
            Os::Linux,
            &[
                ("HOME", "/h"),
                ("XDG_CONFIG_HOME", "/x"),
                ("CLAUDE_CONFIG_DIR", "/c"),
                ("CODEX_HOME", "/cx"),
            ],
        );
        assert_eq!(
            paths(&h, ClientId::ClaudeDesktop),
            ["/x/Claude/claude_desktop_config.json"]
        );
        assert_eq!(
            paths(&h, ClientId::ClaudeCode),
            ["/c/.claude.json", "/p/.mcp.json"]
        );
        assert_eq!(
            paths(&h, ClientId::Vscode),
            ["/x/Code/User/mcp.json", "/p/.vscode/mcp.json"]
        );
        assert_eq!(
            paths(&h, ClientId::VscodeInsiders),
            ["/x/Code - Insiders/User/mcp.json"]
        );
        assert_eq!(
            paths(&h, ClientId::Zed),
            ["/x/zed/settings.json", "/p/.zed/settings.json"]
        );
        assert_eq!(paths(&h, ClientId::Codex), ["/cx/config.toml"]);
        assert_eq!(
            h.installs_dir(),
            Path::new("/h/.local/state/mcpjail/installs")
        );
        // A relative XDG value is ignored, as the XDG spec says.
        let h = host(Os::Linux, &[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")]);
        assert_eq!(
            paths(&h, ClientId::ClaudeDesktop),
            ["/h/.config/Claude/claude_desktop_config.json"]
        );
    }

    #[test]
    fn macos_paths() {
        let h = host(Os::MacOs, &[("HOME", "/Users/z")]);
        assert_eq!(
            paths(&h, ClientId::ClaudeDesktop),
            ["/Users/z/Library/Application Support/Claude/claude_desktop_config.json"]
        );
        assert_eq!(
            paths(&h, ClientId::Vscode)[0],
            "/Users/z/Library/Application Support/Code/User/mcp.json"
        );
        assert_eq!(
            paths(&h, ClientId::Zed)[0],
            "/Users/z/.config/zed/settings.json"
        );
        assert_eq!(paths(&h, ClientId::Cursor)[0], "/Users/z/.cursor/mcp.json");
        assert_eq!(paths(&h, ClientId::ClaudeCode)[0], "/Users/z/.claude.json");
    }

    #[test]
    fn windows_paths_include_msix() {
        let h = host(
            Os::Windows,
            &[
                ("USERPROFILE", "C:/Users/z"),
                ("APPDATA", "C:/Users/z/AppData/Roaming"),
                ("LOCALAPPDATA", "C:/Users/z/AppData/Local"),
            ],
        );
        assert_eq!(
            paths(&h, ClientId::ClaudeDesktop),
            [
                "C:/Users/z/AppData/Roaming/Claude/claude_desktop_config.json",
                "C:/Users/z/AppData/Local/Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude/claude_desktop_config.json"
            ]
        );
        assert_eq!(
            paths(&h, ClientId::Zed)[0],
            "C:/Users/z/AppData/Roaming/Zed/settings.json"
        );
        assert_eq!(
            paths(&h, ClientId::Windsurf),
            ["C:/Users/z/.codeium/windsurf/mcp_config.json"]
        );
    }

    #[test]
    fn remote_markers() {
        use serde_json::json;
        for remote in [
            json!({"url": "https://x"}),
            json!({"serverUrl": "https://x"}),
            json!({"httpUrl": "https://x"}),
            json!({"uri": "ws://x"}),
            json!({"type": "streamableHttp", "command": "x"}),
            json!({"transportType": "sse", "command": "x"}),
        ] {
            assert!(
                matches!(classify_common(&remote), Shape::Remote(_)),
                "{remote}"
            );
        }
        assert!(matches!(
            classify_common(&json!({"type": "stdio", "command": "x"})),
            Shape::Stdio { .. }
        ));
    }
}
