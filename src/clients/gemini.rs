//! Gemini CLI: `~/.gemini/settings.json` and `<project>/.gemini/settings.json` (JSONC),
//! servers under `mcpServers`; remote entries use `url` (SSE) or `httpUrl` (streamable HTTP).
//! The same file holds all other CLI settings, which stay untouched.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv,
    Scope, Shape,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Gemini,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("mcpServers", f),
    classify,
};

fn files(host: &HostEnv, project: &Path) -> Vec<ConfigFile> {
    vec![
        file(
            ClientId::Gemini,
            host.home.join(".gemini").join("settings.json"),
            Format::Jsonc,
            Scope::User,
        ),
        file(
            ClientId::Gemini,
            project.join(".gemini").join("settings.json"),
            Format::Jsonc,
            Scope::Project,
        ),
    ]
}

/// Gemini's `url` means SSE (`httpUrl` is streamable HTTP).
fn classify(entry: &serde_json::Value) -> Shape {
    match classify_common(entry) {
        Shape::Remote(t)
            if t == "http" && entry.get("url").is_some() && entry.get("type").is_none() =>
        {
            Shape::Remote("sse".into())
        }
        other => other,
    }
}
