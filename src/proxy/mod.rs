//! The stdio MCP proxy: frame → inspect → decide → forward.
//!
//! It sits between an MCP client (our stdin/stdout) and a server child process, forwards the
//! original bytes of every message, learns tool schemas from `tools/list`, and checks each
//! `tools/call` / `resources/read` against the [`crate::policy::Scope`] before forwarding.
//! It never re-serialises a message it forwards, and never forwards what it could not check.
//!
//! Reading order, top to bottom:
//! * [`framing`] — newline-delimited frames over bytes (pure), and a cancel-safe async reader;
//! * [`message`] — the JSON-RPC envelope, request ids, duplicate keys, error replies;
//!   `envelope_scan` — the envelope of an ordinary line in one pass, held to serde's reading;
//! * [`check`] — one call's path arguments resolved and checked; the denial a client sees;
//! * [`audit`] — `--log` lines and `--log-file` JSON lines, with secrets redacted;
//! * `child` — the server process behind the jail, its stderr copied to ours and its tail kept
//!   for [`crate::sandbox::explain_failure`]; [`stdio`] — our stdin/stdout on the reactor;
//!   `outbox` — messages to the client and to the server, written at once or queued, and the
//!   backpressure on the client's side;
//! * [`egress`] — the egress proxy a jailed server reaches the network through, by name
//!   (`--allow-domain`), with every request logged;
//! * [`pinning`] — tool pins: changed tools reported, hidden and refused (`--pin`);
//! * `era` — what the proxy's own results must carry in each protocol era;
//! * `integrity` — the proxy's own (random) request ids, the limits on every table and queue,
//!   and how a peer that breaks the protocol is reported; `stream_guard` — the top-level keys
//!   of a long answer forwarded while it arrives;
//! * `router` — the connection: both directions, learning, holding, lifecycle; a server that
//!   dies before answering gets every pending request answered with why (what the jail likely
//!   refused and the flag for it), and a tool result that reports a permission error on a path
//!   outside the jail gets the fix appended — the only results it re-serialises. The session
//!   ends as it would directly: a closed stdin closes the server's, a signal is passed on, and
//!   the proxy exits with the server's status (no timers of its own);
//! * [`timer`] — its few timers, on the IO driver: the runtime has no time driver to run at
//!   every park.

pub mod audit;
pub mod check;
mod child;
pub mod egress;
pub(crate) mod envelope_scan;
mod era;
pub mod framing;
mod integrity;
pub mod message;
mod outbox;
pub mod pinning;
pub(crate) mod router;
#[cfg(unix)]
pub mod stdio;
mod stream_guard;
pub mod timer;

use std::path::PathBuf;
use std::time::Duration;

use crate::policy::Scope;
use crate::sandbox::JailOptions;

pub use router::{run, start_before_runtime, EarlyStart};

/// The signals the proxy passes on to the server (see `cli::proxy`): the two that end a session
/// first, then those a terminal or a runtime's user sends.
#[cfg(unix)]
pub const PASSED_ON_SIGNALS: [i32; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// How a denied call is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DenyMode {
    /// A `CallToolResult` with `isError: true` (the model reads why and can self-correct).
    Result,
    /// A JSON-RPC error (-32602) with the same details in `data`.
    Error,
}

/// Resolved settings for one proxy session (no clap types: the CLI builds this).
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Label in logs.
    pub name: String,
    /// The server command and arguments.
    pub command: Vec<String>,
    /// The server's working directory (relative path arguments resolve against it).
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    pub scope: Scope,
    /// Tools a policy file forces read-only (`[tools.NAME] read_only = true`).
    pub read_only_tools: Vec<String>,
    pub jail: JailOptions,
    pub deny_as: DenyMode,
    pub max_line_bytes: usize,
    /// `--log`: one line per call on stderr.
    pub live_log: bool,
    /// Colour in the live log (resolved once by the CLI).
    pub color: bool,
    /// `--log-file`: JSON lines appended.
    pub log_file: Option<PathBuf>,
    /// How long a server replaced by a respawn may take to exit after SIGTERM before SIGKILL.
    /// (The session's own end has no timer: it mirrors the client.)
    pub grace: Duration,
    /// How long a `tools/call` of a tool not yet listed waits for the proxy's own `tools/list`
    /// before it is judged by its values alone ([`FETCH_TIMEOUT`]; shorter in tests).
    pub fetch_timeout: Duration,
    /// `--pin`: what to do when a tool changes after it was pinned.
    pub pin: crate::policy::pins::PinMode,
    /// How the egress proxy resolves names (a test-only name map, or the system's).
    pub egress_resolver: egress::Resolver,
}

/// How long calls wait for the proxy's own `tools/list` (see [`ProxyConfig::fetch_timeout`]).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    Jail(crate::sandbox::SandboxError),
    #[error("cannot start the server `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    AuditLog(audit::AuditOpenError),
    #[error("cannot start the egress proxy for --allow-domain: {0} (hint: the proxy needs a loopback TCP port on 127.0.0.1)")]
    Egress(std::io::Error),
    #[error("cannot wait for the server: {0}")]
    Wait(std::io::Error),
}

/// A label for a server command: `server-filesystem` for
/// `npx -y @modelcontextprotocol/server-filesystem /dir`, the script's stem for
/// `python server.py`, the binary's name otherwise (see [`crate::policy::ServerCommand`]).
pub fn default_name(command: &[String]) -> String {
    crate::policy::ServerCommand::parse(command).default_name()
}

/// The key of a server's tool pins: its label and its identity (see
/// [`crate::policy::pins::PinKey`]).
pub fn pin_key(
    name: &str,
    command: &[String],
    cwd: &std::path::Path,
) -> crate::policy::pins::PinKey {
    crate::policy::pins::PinKey::new(name, &pin_identity(command, cwd))
}

/// The server's identity its pin key is made from ([`crate::policy::ServerCommand::identity`]).
pub fn pin_identity(command: &[String], cwd: &std::path::Path) -> String {
    crate::policy::ServerCommand::parse(command).identity(cwd)
}

#[cfg(test)]
mod tests {
    use super::default_name;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn names_servers_after_their_package_or_script() {
        assert_eq!(
            default_name(&v("npx -y @modelcontextprotocol/server-filesystem /tmp")),
            "server-filesystem"
        );
        assert_eq!(
            default_name(&v("uvx mcp-server-git --repository .")),
            "mcp-server-git"
        );
        assert_eq!(default_name(&v("python3 /opt/srv/server.py")), "srv");
        assert_eq!(default_name(&v("/usr/local/bin/my-mcp --x")), "my-mcp");
        assert_eq!(default_name(&v("npx -y pkg@1.2.3")), "pkg");
    }
}
