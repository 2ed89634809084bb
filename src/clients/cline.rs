//! Cline: `~/.cline/data/settings/cline_mcp_settings.json` (CLI / standalone) and the VS Code
//! extension's global storage copy; servers under `mcpServers`, with Cline's own `disabled`,
//! `autoApprove`, `timeout` and `type`/`transportType` fields (kept as they are).

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Scope,
};

pub const FILE_NAME: &str = "cline_mcp_settings.json";

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Cline,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("mcpServers", f),
    classify: classify_common,
};

fn files(host: &HostEnv, _project: &Path) -> Vec<ConfigFile> {
    let standalone = host
        .home
        .join(".cline")
        .join("data")
        .join("settings")
        .join(FILE_NAME);
    let extension = host
        .app_config_dir()
        .join("Code")
        .join("User")
        .join("globalStorage")
        .join("saoudrizwan.claude-dev")
        .join("settings")
        .join(FILE_NAME);
    [standalone, extension]
        .into_iter()
        .map(|p| file(ClientId::Cline, p, Format::Jsonc, Scope::User))
        .collect()
}
