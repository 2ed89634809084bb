//! The machine's layout as far as client configs are concerned: OS, HOME and the XDG /
//! APPDATA / CLAUDE_CONFIG_DIR overrides. Resolved once from the environment by the CLI; the
//! library only sees this struct, so tests point everything at a temp HOME.

use std::path::{Path, PathBuf};

use super::ClientsError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Windows,
}

impl Os {
    pub fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }
}

#[derive(Debug, Clone)]
pub struct HostEnv {
    pub os: Os,
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME`, default `~/.config`.
    pub xdg_config_home: PathBuf,
    /// `$XDG_STATE_HOME`, default `~/.local/state` (`%LOCALAPPDATA%` on Windows).
    pub xdg_state_home: PathBuf,
    /// `%APPDATA%` (Windows roaming profile).
    pub appdata: Option<PathBuf>,
    /// `%LOCALAPPDATA%` (Windows; holds the MSIX Claude Desktop path).
    pub localappdata: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`: where Claude Code keeps `.claude.json` and `settings.json`.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`, default `~/.codex`.
    pub codex_home: PathBuf,
    /// Claude Code managed settings files (system-wide, read only: `allowedMcpServers`).
    pub claude_managed_settings: Vec<PathBuf>,
}

fn non_empty(value: Option<std::ffi::OsString>) -> Option<PathBuf> {
    value.filter(|v| !v.is_empty()).map(PathBuf::from)
}

impl HostEnv {
    /// Build from an environment lookup (the CLI passes `std::env::var_os`).
    pub fn from_lookup(
        os: Os,
        get: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<HostEnv, ClientsError> {
        let home = non_empty(get("HOME"))
            .or_else(|| non_empty(get("USERPROFILE")))
            .ok_or(ClientsError::NoHome)?;
        let xdg_config_home = non_empty(get("XDG_CONFIG_HOME"))
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        let appdata = non_empty(get("APPDATA"));
        let localappdata = non_empty(get("LOCALAPPDATA"));
        let xdg_state_home = non_empty(get("XDG_STATE_HOME"))
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| match (os, &localappdata) {
                (Os::Windows, Some(local)) => local.clone(),
                _ => home.join(".local").join("state"),
            });
        let claude_managed_settings = match os {
            Os::Linux => vec![PathBuf::from("/etc/claude-code/managed-settings.json")],
            Os::MacOs => vec![PathBuf::from(
                "/Library/Application Support/ClaudeCode/managed-settings.json",
            )],
            Os::Windows => vec![
                PathBuf::from(r"C:\Program Files\ClaudeCode\managed-settings.json"),
                PathBuf::from(r"C:\ProgramData\ClaudeCode\managed-settings.json"),
            ],
        };
        let codex_home = non_empty(get("CODEX_HOME")).unwrap_or_else(|| home.join(".codex"));
        Ok(HostEnv {
            os,
            home,
            xdg_config_home,
            xdg_state_home,
            appdata,
            localappdata,
            claude_config_dir: non_empty(get("CLAUDE_CONFIG_DIR")),
            codex_home,
            claude_managed_settings,
        })
    }

    pub fn from_env() -> Result<HostEnv, ClientsError> {
        Self::from_lookup(Os::current(), |k| std::env::var_os(k))
    }

    /// The per-OS application-data directory (`~/Library/Application Support`, `%APPDATA%`,
    /// `$XDG_CONFIG_HOME`), where Electron apps keep their settings.
    pub fn app_config_dir(&self) -> PathBuf {
        match self.os {
            Os::MacOs => self.home.join("Library").join("Application Support"),
            Os::Windows => self
                .appdata
                .clone()
                .unwrap_or_else(|| self.home.join("AppData").join("Roaming")),
            Os::Linux => self.xdg_config_home.clone(),
        }
    }

    /// Where Claude Code keeps `.claude.json` (`$CLAUDE_CONFIG_DIR` or HOME).
    pub fn claude_json(&self) -> PathBuf {
        match &self.claude_config_dir {
            Some(dir) => dir.join(".claude.json"),
            None => self.home.join(".claude.json"),
        }
    }

    /// Claude Code's own settings directory (`$CLAUDE_CONFIG_DIR` or `~/.claude`).
    pub fn claude_settings_dir(&self) -> PathBuf {
        match &self.claude_config_dir {
            Some(dir) => dir.clone(),
            None => self.home.join(".claude"),
        }
    }

    /// mcpjail's install records and backups.
    pub fn installs_dir(&self) -> PathBuf {
        self.xdg_state_home.join("mcpjail").join("installs")
    }

    pub fn home(&self) -> &Path {
        &self.home
    }
}
