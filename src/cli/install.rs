//! `mcpjail install`, `uninstall` and `status`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::GlobalArgs;

#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// Only this client (repeatable).
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Project directory whose project-scoped configs are included (default: the cwd).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Show the diff and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Write even where a running client may overwrite the file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct UninstallArgs {
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub yes: bool,
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run_install(args: InstallArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (args, global);
    anyhow::bail!("install is not built yet")
}

pub fn run_uninstall(args: UninstallArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (args, global);
    anyhow::bail!("uninstall is not built yet")
}

pub fn run_status(args: StatusArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (args, global);
    anyhow::bail!("status is not built yet")
}
