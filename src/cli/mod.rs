//! Command-line definitions and the command functions the binaries call.
//!
//! Three layers, as in uv: clap structs (here) → resolved settings → a command function that
//! calls the library. Each subcommand lives in its own file and owns its `Args` struct and its
//! `run` function; the library modules never see clap types.
//!
//! Exit codes: 0 ok, 1 refused or user error ([`UserError`] anywhere in the error chain),
//! 2 internal error, or the server child's own status for the proxy.

mod deferred_log;
pub mod demo;
pub mod doctor;
pub mod install;
pub mod pin;
pub mod policy;
pub mod proxy;
pub mod proxy_argv;
pub mod registry;
pub mod scan;

use std::fmt;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tracing_subscriber::filter::LevelFilter;

/// Flags every command accepts.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// More diagnostics on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// When to use colour on stderr.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Resolve once: `auto` means "only when stderr is a terminal and NO_COLOR is unset".
    pub fn use_color_on_stderr(self) -> bool {
        use std::io::IsTerminal;
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
            }
        }
    }
}

/// The version `--version` prints, and whether this build was laid out by the committed profile
/// (`scripts/rustc-pgo` sets `mcpjail_pgo` when it applies it): the one-CPU per-call cost
/// depends on it.
pub const BUILD_VERSION: &str = if cfg!(mcpjail_pgo) {
    concat!(env!("CARGO_PKG_VERSION"), " (profile-guided)")
} else {
    concat!(env!("CARGO_PKG_VERSION"), " (not profile-guided)")
};

#[derive(Debug, Parser)]
#[command(
    name = "mcpjail",
    version = BUILD_VERSION,
    about = "Confine local MCP servers to the files their tools declare"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a server behind the checking, jailing proxy (same as `mcpjail-proxy`).
    Proxy(proxy::ProxyArgs),
    /// Show the proxy allowing and denying calls against a built-in server (needs nothing external).
    Demo(demo::DemoArgs),
    /// Report what this kernel can enforce (Landlock ABI, seccomp, ...).
    Doctor(doctor::DoctorArgs),
    /// Wrap every local MCP server in every client config in `mcpjail-proxy`.
    Install(install::InstallArgs),
    /// Undo `mcpjail install` exactly.
    Uninstall(install::UninstallArgs),
    /// List every MCP server in every client config and whether it is wrapped.
    Status(install::StatusArgs),
    /// Derive, show and export policies.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// List and approve pinned tool definitions (rug-pull detection).
    #[command(subcommand)]
    Pin(pin::PinCommand),
    /// The Laundering Scan: call every tool with hostile paths, trace what the server really
    /// opens, and give a verdict (confined, launders, undeclared, broken).
    Scan(scan::ScanArgs),
    /// Make an ed25519 keypair for signing scan records.
    Keygen(registry::KeygenArgs),
    /// Keep signed scan records and build the static registry site from them.
    #[command(subcommand)]
    Registry(registry::RegistryCommand),
    /// Check the servers in your client configs against their signed scan records.
    Verify(registry::VerifyArgs),
}

/// The `mcpjail-proxy` binary: the proxy arguments at top level.
#[derive(Debug, Parser)]
#[command(
    name = "mcpjail-proxy",
    version = BUILD_VERSION,
    about = "Run an MCP server behind the checking, jailing proxy"
)]
pub struct ProxyCli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(flatten)]
    pub args: proxy::ProxyArgs,
}

/// An error that is the user's to fix (bad flag, bad file, refused action): exit status 1.
#[derive(Debug)]
pub struct UserError {
    pub message: String,
    pub hint: Option<String>,
}

impl UserError {
    pub fn new(message: impl Into<String>) -> Self {
        UserError {
            message: message.into(),
            hint: None,
        }
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UserError {}

/// Set up `tracing` on stderr. `MCPJAIL_LOG` (then `RUST_LOG`) overrides the `-v/-q` default.
pub fn init_tracing(global: &GlobalArgs) {
    let default = if global.quiet {
        LevelFilter::ERROR
    } else {
        match global.verbose {
            0 => LevelFilter::WARN,
            1 => LevelFilter::INFO,
            2 => LevelFilter::DEBUG,
            _ => LevelFilter::TRACE,
        }
    };
    let ansi = global.color.use_color_on_stderr();
    // Without a variable, a plain level filter: an `EnvFilter` for one bare level still builds
    // its directive tables and judges every call site as it is first reached, which cost every
    // proxy start ~0.05–0.09 ms (paired A/B, 500 starts each way). And the subscriber itself is
    // built only when something is logged ([`deferred_log`]).
    use tracing_subscriber::util::SubscriberInitExt as _;
    let _ = match std::env::var("MCPJAIL_LOG").or_else(|_| std::env::var("RUST_LOG")) {
        Ok(directives) => {
            let filter = tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::default().add_directive(default.into())
            });
            log_subscriber(ansi, Some(filter), default).try_init()
        }
        Err(_) => deferred_log::Deferred::new(default, move || log_subscriber(ansi, None, default))
            .try_init(),
    };
}

/// mcpjail's log: lines on stderr, no target, every field escaped ([`shown_field`]); filtered by
/// `env` (`MCPJAIL_LOG`, `RUST_LOG`) when given, by `max` otherwise.
fn log_subscriber(
    ansi: bool,
    env: Option<tracing_subscriber::EnvFilter>,
    max: LevelFilter,
) -> Box<dyn tracing::Subscriber + Send + Sync> {
    use tracing_subscriber::field::MakeExt as _;
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(false)
        .fmt_fields(tracing_subscriber::fmt::format::debug_fn(shown_field).delimited(" "));
    match env {
        Some(filter) => Box::new(builder.with_env_filter(filter).finish()),
        None => Box::new(builder.with_max_level(max).finish()),
    }
}

/// One field of a log event, written the way tracing's default does (`message` bare, others
/// `name=value`), with terminal controls escaped ([`crate::shown`]): messages quote servers
/// and clients (tool names, stderr tails, ids), and tracing's own sanitising leaves `\r`,
/// most C0 controls and the bidi marks through. `\n` is kept: hints are lines of their own.
fn shown_field(
    writer: &mut tracing_subscriber::fmt::format::Writer<'_>,
    field: &tracing::field::Field,
    value: &dyn fmt::Debug,
) -> fmt::Result {
    let text = format!("{value:?}");
    let text = crate::shown::shown_text(&text);
    if field.name() == "message" {
        write!(writer, "{text}")
    } else {
        write!(writer, "{}={text}", field.name())
    }
}

/// Print an error chain once, the way ripgrep does, and pick the exit status.
pub fn report_error(program: &str, err: &anyhow::Error) -> ExitCode {
    ExitCode::from(error_status(program, err))
}

/// [`report_error`]'s work: the chain printed, the exit status picked.
fn error_status(program: &str, err: &anyhow::Error) -> u8 {
    // A closed stdout (e.g. piped into `head`) is not a failure.
    for cause in err.chain() {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::BrokenPipe {
                return 0;
            }
        }
    }
    let mut text = format!("{program}: {err}");
    for cause in err.chain().skip(1) {
        text.push_str(&format!("\n  caused by: {cause}"));
    }
    // Errors quote servers and files (a stderr tail, a tool name): shown, not obeyed.
    eprintln!("{}", crate::shown::shown_text(&text));
    if err.chain().any(|c| c.downcast_ref::<UserError>().is_some()) {
        1
    } else {
        2
    }
}

/// Entry point of the `mcpjail` binary.
pub fn main_mcpjail() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(&cli.global);
    let result = match cli.command {
        Command::Proxy(args) => proxy::run(args, &cli.global),
        Command::Demo(args) => demo::run(args, &cli.global),
        Command::Doctor(args) => doctor::run(args, &cli.global),
        Command::Install(args) => install::run_install(args, &cli.global),
        Command::Uninstall(args) => install::run_uninstall(args, &cli.global),
        Command::Status(args) => install::run_status(args, &cli.global),
        Command::Policy(cmd) => policy::run(cmd, &cli.global),
        Command::Pin(cmd) => pin::run(cmd, &cli.global),
        Command::Keygen(args) => registry::run_keygen(args),
        Command::Registry(cmd) => registry::run_registry(cmd),
        Command::Verify(args) => registry::run_verify(args, &cli.global),
        Command::Scan(args) => scan::run(args, &cli.global),
    };
    match result {
        Ok(code) => code,
        Err(err) => report_error("mcpjail", &err),
    }
}

/// Entry point of the `mcpjail-proxy` binary, called from its C `main` (see
/// `src/bin/mcpjail-proxy.rs` for why it has no Rust `main`). Does first what std's runtime
/// would have done before `main` and the proxy relies on, then the proxy's work (as
/// [`main_proxy`] does); never returns. A panic ends the proxy with status 101, as from a Rust
/// `main`.
#[cfg(unix)]
pub fn main_proxy_from_c() -> ! {
    open_closed_stdio();
    // A write to a client or server that closed its pipe must fail with EPIPE (and end the
    // session as a closed pipe does), not kill the proxy. std's `Command` still resets it in its
    // children, and the jail's own spawn does too.
    // SAFETY: setting a signal's disposition to "ignore" runs no code of ours.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let status = std::panic::catch_unwind(main_proxy_status).unwrap_or(101);
    // std's exit path (stdout flushed), as returning from a Rust `main` takes.
    std::process::exit(i32::from(status))
}

/// A closed stdin, stdout or stderr is opened on `/dev/null`, as std's runtime does before
/// `main`: otherwise the first file the proxy opens would take its number, and protocol
/// messages or diagnostics meant for the client would be written into it. Aborts if
/// `/dev/null` cannot be opened (nothing safe is left to do).
#[cfg(unix)]
fn open_closed_stdio() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of three pollfd; a zero timeout never blocks.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    if polled < 0 {
        // No answer (EINTR, EAGAIN): ask each descriptor instead.
        for fd in &mut fds {
            // SAFETY: F_GETFD on a number is a query only.
            if unsafe { libc::fcntl(fd.fd, libc::F_GETFD) } < 0 {
                fd.revents = libc::POLLNVAL;
            }
        }
    }
    for fd in fds {
        if fd.revents & libc::POLLNVAL != 0 {
            // SAFETY: a NUL-terminated path; the lowest free number is this closed one, since
            // the lower ones are open (checked or reopened in order).
            let opened = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if opened != fd.fd {
                std::process::abort();
            }
        }
    }
}

/// Entry point of the `mcpjail-proxy` binary where it has a Rust `main` (see
/// [`main_proxy_from_c`]).
pub fn main_proxy() -> ExitCode {
    ExitCode::from(main_proxy_status())
}

/// The `mcpjail-proxy` binary's work; its exit status.
fn main_proxy_status() -> u8 {
    let cli = proxy_argv::read_plain(std::env::args_os()).unwrap_or_else(ProxyCli::parse);
    init_tracing(&cli.global);
    match proxy::run_status(cli.args, &cli.global) {
        Ok(status) => status,
        Err(err) => error_status("mcpjail-proxy", &err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A `tracing` writer into a shared buffer.
    #[derive(Clone, Default)]
    pub(super) struct Captured(pub(super) Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A warning that quotes a server (a tool name, a stderr tail) reaches the terminal with
    /// every terminal control shown, the `\r`, C0 and bidi marks tracing's own sanitising
    /// leaves through included; its own line breaks (a `hint:` line) stay.
    #[test]
    fn log_events_show_terminal_controls_in_messages_and_fields() {
        use tracing_subscriber::field::MakeExt as _;
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .fmt_fields(tracing_subscriber::fmt::format::debug_fn(shown_field).delimited(" "))
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let name = "t\x1b]52;c;eA==\x07\r\u{202e}\x0e";
            tracing::warn!(tool = name, "tool {name} changed\nhint: approve it");
        });
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && crate::shown::acts_on_terminal(c)),
            "{text:?}"
        );
        assert!(
            text.contains(r"tool t\x1b]52;c;eA==\x07\r\u{202e}\x0e changed"),
            "{text:?}"
        );
        assert!(text.contains("\nhint: approve it"), "{text:?}");
        assert!(text.contains("tool=\"t\\u{1b}"), "{text:?}");
    }
}
