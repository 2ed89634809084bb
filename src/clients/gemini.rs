//! Gemini CLI: `~/.gemini/settings.json` and `<project>/.gemini/settings.json` (JSONC),
//! servers under `mcpServers`; remote entries use `url` (SSE) or `httpUrl` (streamable HTTP).
//! The same file holds all other CLI settings, which stay untouched.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Scope,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Gemini,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("mcpServers", f),
    classify: classify_common,
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
