//! The jail: turns a [`crate::policy::Scope`] into kernel enforcement.
//!
//! Linux: Landlock (filesystem, TCP, scoping) plus a seccomp filter and an environment scrub,
//! applied in the child before exec. macOS: a Seatbelt profile run with `sandbox-exec`.
//! Every layer reports what it actually enforced (fully / partially / not at all); nothing here
//! silently degrades to "unconfined".
//!
//! INTERFACE FIXED (`JailOptions`, `prepare`, `PreparedJail::command`, `PreparedJail::report`) —
//! the body below is the unjailed placeholder the sandbox work replaces.

use std::path::{Path, PathBuf};

use crate::policy::Scope;

/// How the proxy wants the server jailed.
#[derive(Debug, Clone, Default)]
pub struct JailOptions {
    /// `--no-jail`: run unconfined (diagnosis only).
    pub disabled: bool,
    /// `--require-full`: refuse unless every layer is fully enforced.
    pub require_full: bool,
    /// `--env-keep KEY`: extra environment variables passed to the server.
    pub env_keep: Vec<String>,
}

/// How well one layer is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    Fully,
    Partially,
    NotEnforced,
}

/// What the jail actually enforces, per layer, for `--log`, `doctor` and `--require-full`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EnforcementReport {
    pub layers: Vec<LayerReport>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LayerReport {
    /// "landlock", "seccomp", "no_new_privs", "env_scrub", ...
    pub layer: String,
    pub enforcement: Enforcement,
    /// Free-form detail: ABI version, what was carved out or could not be.
    pub detail: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the jail is not fully enforced here ({0}) and --require-full was given")]
    NotFullyEnforced(String),
    #[error("cannot prepare the jail: {0}")]
    Prepare(String),
}

/// A jail built in the parent, ready to spawn one child (or several, for respawns).
#[derive(Debug)]
pub struct PreparedJail {
    program: String,
    args: Vec<String>,
    cwd: PathBuf,
    report: EnforcementReport,
}

/// Build the jail for `command` (program + args) run in `cwd` under `scope`.
pub fn prepare(
    scope: &Scope,
    command: &[String],
    cwd: &Path,
    opts: &JailOptions,
) -> Result<PreparedJail, SandboxError> {
    let _ = scope;
    let (program, args) = command
        .split_first()
        .ok_or_else(|| SandboxError::Prepare("no server command given".into()))?;
    let report = EnforcementReport {
        layers: vec![LayerReport {
            layer: "landlock".into(),
            enforcement: Enforcement::NotEnforced,
            detail: "jail not implemented yet".into(),
        }],
    };
    if opts.require_full {
        return Err(SandboxError::NotFullyEnforced(
            "jail not implemented yet".into(),
        ));
    }
    Ok(PreparedJail {
        program: program.clone(),
        args: args.to_vec(),
        cwd: cwd.to_path_buf(),
        report,
    })
}

impl PreparedJail {
    /// A command that starts the server inside the jail (environment scrubbed, rules applied in
    /// the child before exec). Stdio is left for the caller to set.
    pub fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args).current_dir(&self.cwd);
        cmd
    }

    pub fn report(&self) -> &EnforcementReport {
        &self.report
    }
}
