//! Cursor: `~/.cursor/mcp.json` (user) and `<project>/.cursor/mcp.json`, servers under `mcpServers`.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Scope,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Cursor,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("mcpServers", f),
    classify: classify_common,
};

fn files(host: &HostEnv, project: &Path) -> Vec<ConfigFile> {
    vec![
        file(
            ClientId::Cursor,
            host.home.join(".cursor").join("mcp.json"),
            Format::Jsonc,
            Scope::User,
        ),
        file(
            ClientId::Cursor,
            project.join(".cursor").join("mcp.json"),
            Format::Jsonc,
            Scope::Project,
        ),
    ]
}
