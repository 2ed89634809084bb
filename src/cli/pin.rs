//! `mcpjail pin list|approve`.

use std::process::ExitCode;

use clap::Subcommand;

use super::GlobalArgs;

#[derive(Debug, Clone, Subcommand)]
pub enum PinCommand {
    /// List pinned tools.
    List,
}

pub fn run(cmd: PinCommand, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (cmd, global);
    anyhow::bail!("pinning is not built yet")
}
