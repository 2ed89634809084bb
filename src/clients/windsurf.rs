//! Windsurf: `~/.codeium/windsurf/mcp_config.json`, servers under `mcpServers`; remote entries
//! use `serverUrl`.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Scope,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Windsurf,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("mcpServers", f),
    classify: classify_common,
};

fn files(host: &HostEnv, _project: &Path) -> Vec<ConfigFile> {
    vec![file(
        ClientId::Windsurf,
        host.home
            .join(".codeium")
            .join("windsurf")
            .join("mcp_config.json"),
        Format::Jsonc,
        Scope::User,
    )]
}
