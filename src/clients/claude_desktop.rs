//! Claude Desktop: `claude_desktop_config.json`, servers under `mcpServers`.
//!
//! Paths: macOS `~/Library/Application Support/Claude/`, Windows `%APPDATA%\Claude\` and the
//! MSIX (Store) install's `%LOCALAPPDATA%\Packages\Claude_pzs8sxrjxfjjc\LocalCache\Roaming\Claude\`,
//! Linux `$XDG_CONFIG_HOME/Claude/`. The app keeps other keys (`preferences`…) in the same file
//! and rewrites it from memory while running, so writes are refused while it runs.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Os,
    RewritingClient, Scope,
};

pub const FILE_NAME: &str = "claude_desktop_config.json";

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::ClaudeDesktop,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("mcpServers", f),
    classify: classify_common,
};

fn files(host: &HostEnv, _project: &Path) -> Vec<ConfigFile> {
    let mut paths = vec![host.app_config_dir().join("Claude").join(FILE_NAME)];
    if host.os == Os::Windows {
        if let Some(local) = &host.localappdata {
            paths.push(
                local
                    .join("Packages")
                    .join("Claude_pzs8sxrjxfjjc")
                    .join("LocalCache")
                    .join("Roaming")
                    .join("Claude")
                    .join(FILE_NAME),
            );
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let mut f = file(ClientId::ClaudeDesktop, p, Format::Jsonc, Scope::User);
            f.rewritten_by = Some(RewritingClient::ClaudeDesktop);
            f
        })
        .collect()
}
