//! Zed: `settings.json` (`$XDG_CONFIG_HOME/zed/` on Linux, `~/.config/zed/` on macOS,
//! `%APPDATA%\Zed\` on Windows) and `<project>/.zed/settings.json`; servers under
//! `context_servers` (JSONC). Only stdio entries are wrapped: the current flat form
//! (`"command": "…", "args": […]`) and the older nested one (`"command": {"path", "args", "env"}`).
//! Extension-provided servers (`"source": "extension"`, or only `settings`) have no command in
//! the file and are listed as skipped.

use std::path::Path;

use super::{
    classify_common, file, single_section, ClientId, ClientSpec, ConfigFile, Format, HostEnv, Os,
    Scope, Shape,
};

pub const SPEC: ClientSpec = ClientSpec {
    id: ClientId::Zed,
    format: Format::Jsonc,
    files,
    sections: |_, f| single_section("context_servers", f),
    classify,
};

fn files(host: &HostEnv, project: &Path) -> Vec<ConfigFile> {
    let user_dir = match host.os {
        Os::Linux => host.xdg_config_home.join("zed"),
        Os::MacOs => host.home.join(".config").join("zed"),
        Os::Windows => host.app_config_dir().join("Zed"),
    };
    vec![
        file(
            ClientId::Zed,
            user_dir.join("settings.json"),
            Format::Jsonc,
            Scope::User,
        ),
        file(
            ClientId::Zed,
            project.join(".zed").join("settings.json"),
            Format::Jsonc,
            Scope::Project,
        ),
    ]
}

fn classify(entry: &serde_json::Value) -> Shape {
    if entry.get("source").and_then(|s| s.as_str()) == Some("extension") {
        return Shape::Extension;
    }
    match entry.get("command") {
        Some(serde_json::Value::Object(nested)) => match nested.get("path") {
            Some(serde_json::Value::String(_)) => Shape::Stdio {
                holder: vec!["command".into()],
                command_key: "path",
            },
            _ => Shape::Unknown("`command.path` is not a string".into()),
        },
        None if entry.get("url").is_none() => Shape::Extension,
        _ => classify_common(entry),
    }
}

/// The env map of an entry in either form.
pub fn env_of(entry: &serde_json::Value) -> Option<&serde_json::Value> {
    entry
        .get("env")
        .or_else(|| entry.get("command").and_then(|c| c.get("env")))
}
