//! `mcpjail doctor`: what this kernel can enforce.

use std::process::ExitCode;

use clap::Args;

use super::GlobalArgs;

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DoctorArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (args, global);
    anyhow::bail!("doctor is not built yet")
}
