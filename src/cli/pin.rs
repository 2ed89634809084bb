//! `mcpjail pin list|approve`: inspect and approve pinned tool definitions.
//!
//! The proxy pins every tool on first sight and records a changed definition as pending
//! ([`crate::policy::pins`]); these commands read and update the same files in
//! `$XDG_STATE_HOME/mcpjail/pins/`.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use super::{GlobalArgs, UserError};
use crate::policy::pins::{list_servers, pins_dir, resolve_name, PinError, PinStore};
use crate::shown::shown;

#[derive(Debug, Clone, Subcommand)]
pub enum PinCommand {
    /// List pinned tools (of one server, or of all) and any unapproved changes.
    List {
        /// Only this server.
        name: Option<String>,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Accept a changed tool definition (all of the server's changed tools without TOOL).
    Approve {
        /// The server's pin key (as in `mcpjail pin list`), or its name when only one server
        /// has it.
        name: String,
        /// Only this tool.
        tool: Option<String>,
    },
}

pub fn run(cmd: PinCommand, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let dir = pins_dir(home.as_deref()).ok_or_else(|| {
        UserError::new("cannot find the pin directory").with_hint("set HOME or XDG_STATE_HOME")
    })?;
    match cmd {
        PinCommand::List { name, json } => {
            let servers = match name.map(|n| resolve_name(&dir, &n)) {
                Some(n) => {
                    if !dir.join(format!("{n}.json")).is_file() {
                        return Err(UserError::new(format!("no pins for server {n:?} in {}", dir.display()))
                            .with_hint("run `mcpjail pin list` to see the pinned servers; pins are made when the proxy first sees a server's tools")
                            .into());
                    }
                    vec![n]
                }
                None => list_servers(&dir).map_err(user)?,
            };
            let mut stores = Vec::new();
            for s in &servers {
                stores.push(PinStore::load_in(s, &dir).map_err(user)?);
            }
            let mut out = std::io::stdout().lock();
            if json {
                let v: Vec<_> = stores.iter().map(|s| json!(s.file())).collect();
                writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
            } else if stores.is_empty() {
                if !global.quiet {
                    eprintln!("no pinned servers in {}", dir.display());
                }
            } else {
                for store in &stores {
                    let f = store.file();
                    // Tool names are the servers' choice: shown, not obeyed by the terminal.
                    let server = shown(&f.server);
                    let pending = f.tools.values().filter(|p| p.pending.is_some()).count();
                    writeln!(
                        out,
                        "{}  ({} tools{})",
                        server,
                        f.tools.len(),
                        if pending > 0 {
                            format!(", {pending} CHANGED")
                        } else {
                            String::new()
                        }
                    )?;
                    for (tool, pin) in &f.tools {
                        let tool = shown(tool);
                        match &pin.pending {
                            Some(p) => writeln!(
                                out,
                                "  {tool:<32} CHANGED  pinned {}  now {}  (seen {}; `mcpjail pin approve {} {tool}`)",
                                &pin.hash[..12.min(pin.hash.len())],
                                &p.hash[..12.min(p.hash.len())],
                                p.seen,
                                server
                            )?,
                            None => writeln!(
                                out,
                                "  {tool:<32} pinned   {}  (since {})",
                                &pin.hash[..12.min(pin.hash.len())],
                                pin.first_seen
                            )?,
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        PinCommand::Approve { name, tool } => {
            let name = resolve_name(&dir, &name);
            if !dir.join(format!("{name}.json")).is_file() {
                return Err(UserError::new(format!(
                    "no pins for server {name:?} in {}",
                    dir.display()
                ))
                .with_hint("run `mcpjail pin list` to see the pinned servers")
                .into());
            }
            let mut store = PinStore::load_in(&name, &dir).map_err(user)?;
            let approved = store.approve(tool.as_deref()).map_err(user)?;
            if approved.is_empty() {
                return Err(UserError::new(format!(
                    "nothing to approve: {} has no changed tool{}",
                    name,
                    tool.map(|t| format!(" named {t}")).unwrap_or_default()
                ))
                .with_hint("`mcpjail pin list NAME` shows which tools changed")
                .into());
            }
            if !global.quiet {
                for t in &approved {
                    eprintln!("approved {} {}", shown(&name), shown(t));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn user(e: PinError) -> anyhow::Error {
    let hint = match &e {
        PinError::Read { .. } => "the file may be damaged; delete it to pin the server afresh",
        PinError::BadName(_) => "server names are letters, digits, `-`, `_`, `.`",
        _ => "check the permissions of $XDG_STATE_HOME/mcpjail",
    };
    UserError::new(e.to_string()).with_hint(hint).into()
}
