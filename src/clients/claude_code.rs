//! Claude Code: `<project>/.mcp.json` (project scope), and `.claude.json` in HOME or
//! `$CLAUDE_CONFIG_DIR`: top-level `mcpServers` (user scope) and `projects["<abs path>"].mcpServers`
//! (local scope). `.claude.json` is a large state file Claude Code rewrites while running; every
//! other key must survive, and writes are refused while a `claude` process uses it.
//!
//! `managed-mcp.json` is the administrator's and is never listed or touched. Managed or user
//! settings with `allowedMcpServers` entries that match by `serverCommand` would refuse a wrapped
//! command, so Claude Code entries are skipped with a warning when such an allowlist exists.

use std::path::{Path, PathBuf};

use super::{
    classify_common, file, ClientId, ClientSpec, ConfigFile, Format, HostEnv, RewritingClient,
    Scope, Section,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::ClaudeCode,
    format: Format::Jsonc,
    files,
    sections,
    classify: classify_common,
};

fn files(host: &HostEnv, project: &Path) -> Vec<ConfigFile> {
    let mut user = file(
        ClientId::ClaudeCode,
        host.claude_json(),
        Format::Jsonc,
        Scope::User,
    );
    user.rewritten_by = Some(RewritingClient::ClaudeCode);
    vec![
        user,
        file(
            ClientId::ClaudeCode,
            project.join(".mcp.json"),
            Format::Jsonc,
            Scope::Project,
        ),
    ]
}

fn sections(doc: &serde_json::Value, f: &ConfigFile) -> Vec<Section> {
    let mut out = vec![Section {
        path: vec!["mcpServers".into()],
        scope: f.scope,
    }];
    if f.scope == Scope::User {
        if let Some(projects) = doc.get("projects").and_then(|p| p.as_object()) {
            for (dir, value) in projects {
                if value.get("mcpServers").is_some() {
                    out.push(Section {
                        path: vec!["projects".into(), dir.clone(), "mcpServers".into()],
                        scope: Scope::Local,
                    });
                }
            }
        }
    }
    out
}

/// The settings files whose `allowedMcpServers` Claude Code honours, most authoritative first.
pub fn settings_files(host: &HostEnv, project: &Path) -> Vec<PathBuf> {
    let mut out = host.claude_managed_settings.clone();
    out.push(host.claude_settings_dir().join("settings.json"));
    out.push(project.join(".claude").join("settings.json"));
    out.push(project.join(".claude").join("settings.local.json"));
    out
}

/// The first settings file with an `allowedMcpServers` entry matching by `serverCommand`.
pub fn command_allowlist(host: &HostEnv, project: &Path) -> Option<PathBuf> {
    settings_files(host, project).into_iter().find(|path| {
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        let Ok(value) = super::jsonc::parse_value(&text) else {
            return false;
        };
        value
            .get("allowedMcpServers")
            .and_then(|a| a.as_array())
            .is_some_and(|entries| entries.iter().any(|e| e.get("serverCommand").is_some()))
    })
}
