//! VS Code and VS Code Insiders: the user `mcp.json` (`<app config>/Code/User/mcp.json`,
//! `Code - Insiders` for Insiders) and `<project>/.vscode/mcp.json` (listed once, under `vscode`).
//! Servers live under `servers`; `inputs` and `${input:…}` / `${workspaceFolder}` references are
//! strings we copy verbatim (they end up after `--` in the wrapped args, where VS Code still
//! substitutes them). JSONC with comments and trailing commas.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Scope,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Vscode,
    format: Format::Jsonc,
    files: files_stable,
    sections: |_, f| single_section("servers", f),
    classify: classify_common,
};

pub const INSIDERS_SPEC: ClientSpec = ClientSpec {
    id: ClientId::VscodeInsiders,
    format: Format::Jsonc,
    files: files_insiders,
    sections: |_, f| single_section("servers", f),
    classify: classify_common,
};

fn files_stable(host: &HostEnv, project: &Path) -> Vec<ConfigFile> {
    vec![
        file(
            ClientId::Vscode,
            host.app_config_dir()
                .join("Code")
                .join("User")
                .join("mcp.json"),
            Format::Jsonc,
            Scope::User,
        ),
        file(
            ClientId::Vscode,
            project.join(".vscode").join("mcp.json"),
            Format::Jsonc,
            Scope::Project,
        ),
    ]
}

fn files_insiders(host: &HostEnv, _project: &Path) -> Vec<ConfigFile> {
    vec![file(
        ClientId::VscodeInsiders,
        host.app_config_dir()
            .join("Code - Insiders")
            .join("User")
            .join("mcp.json"),
        Format::Jsonc,
        Scope::User,
    )]
}
