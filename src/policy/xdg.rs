//! Where mcpjail keeps its own files: `$XDG_CONFIG_HOME/mcpjail` (policy files),
//! `$XDG_STATE_HOME/mcpjail` (pins, install records) and each server's private state directory.

use std::path::{Path, PathBuf};

/// `$XDG_CONFIG_HOME/mcpjail` (default `~/.config/mcpjail`).
pub fn config_dir(home: Option<&Path>) -> Option<PathBuf> {
    xdg_dir("XDG_CONFIG_HOME", home, ".config").map(|d| d.join("mcpjail"))
}

/// `$XDG_STATE_HOME/mcpjail` (default `~/.local/state/mcpjail`).
pub fn state_dir(home: Option<&Path>) -> Option<PathBuf> {
    xdg_dir("XDG_STATE_HOME", home, ".local/state").map(|d| d.join("mcpjail"))
}

/// `$XDG_DATA_HOME/mcpjail` (default `~/.local/share/mcpjail`): the default registry lives in
/// its `registry/` directory.
pub fn data_dir(home: Option<&Path>) -> Option<PathBuf> {
    xdg_dir("XDG_DATA_HOME", home, ".local/share").map(|d| d.join("mcpjail"))
}

/// `$XDG_STATE_HOME/mcpjail-servers` (default `~/.local/state/mcpjail-servers`): where the
/// private state directories the jail gives servers live. Kept apart from mcpjail's own state
/// (pins, install records), which every server is denied.
pub fn server_state_root(home: Option<&Path>) -> Option<PathBuf> {
    xdg_dir("XDG_STATE_HOME", home, ".local/state").map(|d| d.join("mcpjail-servers"))
}

/// `<server_state_root>/<key>`: one server's private state directory, keyed like its pins
/// (`<label>-<12 hex digits of SHA-256(identity)>`, [`super::pins::PinKey`]), so two different
/// servers that share a name (`python3 a/srv/server.py` and `python3 b/srv/server.py`, both
/// `srv`; `@x/server-foo` and `@evil/server-foo`) never share one, and the same command keeps
/// its directory across restarts.
pub fn server_state_dir(key: &super::pins::PinKey, home: Option<&Path>) -> Option<PathBuf> {
    server_state_root(home).map(|d| d.join(&key.key))
}

/// `<server_state_root>/<name>`: where earlier versions kept a server's state, keyed by the
/// name alone (and possibly shared by every server of that name). See
/// `cli::proxy::state_dir_for` for when one is still used.
pub fn legacy_server_state_dir(name: &str, home: Option<&Path>) -> Option<PathBuf> {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = if safe.is_empty() || safe.starts_with('.') {
        format!("_{safe}")
    } else {
        safe
    };
    server_state_root(home).map(|d| d.join(safe))
}

fn xdg_dir(var: &str, home: Option<&Path>, default: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        // The XDG spec says relative values are invalid and must be ignored.
        Some(p) if p.is_absolute() => Some(p),
        _ => home.map(|h| h.join(default)),
    }
}

/// Where `policy derive --write` saves and derivation looks for a server's policy file.
/// `None` if `name` is not a plain file name or the config directory is unknown.
pub fn default_policy_path(name: &str, home: Option<&Path>) -> Option<PathBuf> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\0');
    if !plain {
        return None;
    }
    config_dir(home).map(|d| d.join("servers").join(format!("{name}.toml")))
}
