//! `mcpjail demo`: a fixture server behind the proxy with a scripted client.

use std::process::ExitCode;

use clap::Args;

use super::GlobalArgs;

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {}

pub fn run(args: DemoArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (args, global);
    anyhow::bail!("the demo is not built yet")
}
