//! `mcpjail-proxy [OPTIONS] -- COMMAND [ARGS…]` (also `mcpjail proxy`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::GlobalArgs;

#[derive(Debug, Clone, Args)]
pub struct ProxyArgs {
    /// Label for the server in logs, pins and policy files (default: derived from the command).
    #[arg(long)]
    pub name: Option<String>,
    /// Policy file (TOML: read = [...], write = [...], deny = [globs]).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Also allow reading under PATH, for this process only (repeatable).
    #[arg(long, value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,
    /// Also allow reading and writing under PATH, for this process only (repeatable).
    #[arg(long, value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// How a denied call is answered.
    #[arg(long, value_enum, default_value_t = DenyAs::Result)]
    pub deny_as: DenyAs,
    /// Largest accepted JSON-RPC line, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    pub max_line_bytes: usize,
    /// Live call inspection on stderr: one line per call.
    #[arg(long)]
    pub log: bool,
    /// Audit log: every call as a JSON line appended to FILE.
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Run the server without the kernel jail (diagnosis only; loudly logged).
    #[arg(long)]
    pub no_jail: bool,
    /// Refuse to start unless every jail layer is fully enforced.
    #[arg(long)]
    pub require_full: bool,
    /// Allow TCP connect to PORT (repeatable).
    #[arg(long, value_name = "PORT")]
    pub allow_tcp_connect: Vec<u16>,
    /// Allow TCP bind on PORT (repeatable).
    #[arg(long, value_name = "PORT")]
    pub allow_tcp_bind: Vec<u16>,
    /// Turn all network restrictions off (for servers that need the internet).
    #[arg(long)]
    pub allow_net: bool,
    /// Pass this environment variable through to the server (repeatable).
    #[arg(long, value_name = "KEY")]
    pub env_keep: Vec<String>,
    /// What to do when a tool definition changes after it was pinned.
    #[arg(long, value_enum, default_value_t = PinMode::Warn)]
    pub pin: PinMode,
    /// The server command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DenyAs {
    /// A CallToolResult with isError: true (the model sees why and can self-correct).
    Result,
    /// A JSON-RPC error response.
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PinMode {
    Warn,
    Block,
    Off,
}

pub fn run(args: ProxyArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = (args, global);
    anyhow::bail!("the proxy is not built yet")
}
