//! `mcpjail policy derive|export`.

use std::process::ExitCode;

use clap::Subcommand;

use super::GlobalArgs;

#[derive(Debug, Clone, Subcommand)]
pub enum PolicyCommand {
    /// Print the policy derived for a server command.
    Derive {
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
}

pub fn run(cmd: PolicyCommand, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (cmd, global);
    anyhow::bail!("policy is not built yet")
}
