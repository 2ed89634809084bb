//! Codex CLI: `$CODEX_HOME/config.toml` (default `~/.codex/config.toml`), servers as
//! `[mcp_servers.NAME]` tables (or inline/dotted forms). TOML through toml_edit spans. Codex
//! rejects unknown fields, so only `command` and `args` are ever written. Remote entries use
//! `url`. Besides `env`, `env_vars` lists variables Codex forwards from its own environment; both
//! become `--env-keep`.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Scope,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Codex,
    format: Format::Toml,
    files,
    sections: |_, f| single_section("mcp_servers", f),
    classify: classify_common,
};

fn files(host: &HostEnv, _project: &Path) -> Vec<ConfigFile> {
    vec![file(
        ClientId::Codex,
        host.codex_home.join("config.toml"),
        Format::Toml,
        Scope::User,
    )]
}

/// Names in `env_vars` (strings, or `{ name = "…" }` tables in newer Codex versions).
pub fn env_vars(entry: &serde_json::Value) -> Vec<String> {
    entry
        .get("env_vars")
        .and_then(|v| v.as_array())
        .map(|items| {
            items
                .iter()
                .filter_map(|i| {
                    i.as_str()
                        .or_else(|| i.get("name").and_then(|n| n.as_str()))
                        .map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}
