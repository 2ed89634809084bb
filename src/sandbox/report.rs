//! Enforcement reports: what each layer really enforces, and what the machine could enforce.

use std::fmt;

use super::{Enforcement, EnforcementReport, LayerReport};

/// Every layer, not enforced, for `reason`.
pub(super) fn all_off(reason: &str) -> Vec<LayerReport> {
    ["landlock", "seccomp", "no_new_privs", "env_scrub", "tmpdir"]
        .iter()
        .map(|layer| LayerReport {
            layer: (*layer).into(),
            enforcement: Enforcement::NotEnforced,
            detail: reason.into(),
        })
        .collect()
}

impl EnforcementReport {
    /// Fully only if every layer is; not enforced if none is.
    pub fn overall(&self) -> Enforcement {
        if self.layers.is_empty()
            || self
                .layers
                .iter()
                .all(|l| l.enforcement == Enforcement::NotEnforced)
        {
            Enforcement::NotEnforced
        } else if self
            .layers
            .iter()
            .all(|l| l.enforcement == Enforcement::Fully)
        {
            Enforcement::Fully
        } else {
            Enforcement::Partially
        }
    }

    /// The layers that are not fully enforced, for error messages.
    pub fn not_full_summary(&self) -> String {
        self.layers
            .iter()
            .filter(|l| l.enforcement != Enforcement::Fully)
            .map(|l| format!("{}: {}", l.layer, l.detail))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Enforcement::Fully => "fully enforced",
            Enforcement::Partially => "PARTIALLY enforced",
            Enforcement::NotEnforced => "NOT enforced",
        })
    }
}

impl fmt::Display for EnforcementReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "jail: {}", self.overall())?;
        for l in &self.layers {
            writeln!(
                f,
                "  {:<15} {:<19} {}",
                l.layer,
                l.enforcement.to_string(),
                l.detail
            )?;
        }
        Ok(())
    }
}

/// What this machine can enforce, for `mcpjail doctor`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KernelSupport {
    pub os: String,
    pub kernel_release: String,
    /// `None` off Linux; `Some(0)` when Landlock is absent or disabled.
    pub landlock_abi: Option<i64>,
    pub landlock_fs_rights: Vec<String>,
    pub landlock_tcp: bool,
    pub landlock_scoping: bool,
    pub seccomp_filter: bool,
    pub seccomp_arch_supported: bool,
    pub no_new_privs_settable: bool,
    pub no_new_privs_already_set: bool,
    /// macOS only: whether `/usr/bin/sandbox-exec` exists.
    pub sandbox_exec: Option<bool>,
    /// Linux only: whether denied entries inside granted directories can be masked in a private
    /// mount namespace (and which), or why not.
    pub mount_masks: Option<String>,
}

#[cfg(not(target_os = "linux"))]
pub(super) fn probe_other() -> KernelSupport {
    let release = std::process::Command::new("uname")
        .arg("-r")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    KernelSupport {
        os: std::env::consts::OS.into(),
        kernel_release: release,
        landlock_abi: None,
        landlock_fs_rights: Vec::new(),
        landlock_tcp: false,
        landlock_scoping: false,
        seccomp_filter: false,
        seccomp_arch_supported: false,
        no_new_privs_settable: false,
        no_new_privs_already_set: false,
        sandbox_exec: Some(std::path::Path::new("/usr/bin/sandbox-exec").exists()),
        mount_masks: None,
    }
}
