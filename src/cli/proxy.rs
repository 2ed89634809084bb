//! `mcpjail-proxy [OPTIONS] -- COMMAND [ARGS…]` (also `mcpjail proxy`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::GlobalArgs;
use crate::policy::pins::PinMode;

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
    #[arg(long, default_value_t = DEFAULT_MAX_LINE_BYTES)]
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
    /// Let the server reach DOMAIN through the egress proxy (repeatable): `example.com`,
    /// `*.example.com`, `example.com:8443` (ports 80/443 unless written), or a listed IP
    /// address `203.0.113.7:443`. Loopback only when named (`localhost:PORT`).
    #[arg(long, value_name = "DOMAIN", value_parser = parse_domain_rule)]
    pub allow_domain: Vec<crate::policy::DomainRule>,
    /// Turn all network restrictions off (for servers that need the internet).
    #[arg(long)]
    pub allow_net: bool,
    /// Pass this environment variable through to the server (repeatable).
    #[arg(long, value_name = "KEY")]
    pub env_keep: Vec<String>,
    /// What to do when a tool definition changes after it was pinned.
    #[arg(long, value_enum, default_value_t = PinMode::Warn)]
    pub pin: PinMode,
    /// The server command and its arguments, after the proxy's own flags (`--` before it is
    /// optional: `mcpjail-proxy --log node server.js` and `… --log -- node server.js` are the
    /// same; everything from the first non-flag word on is the server's).
    #[arg(trailing_var_arg = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `--max-line-bytes` when not given.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DenyAs {
    /// A CallToolResult with isError: true (the model sees why and can self-correct).
    Result,
    /// A JSON-RPC error response.
    Error,
}

/// `--pin` parses straight into the pin store's own mode (one enum for the CLI and the proxy).
impl ValueEnum for PinMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[PinMode::Warn, PinMode::Block, PinMode::Off]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        use clap::builder::PossibleValue;
        Some(match self {
            PinMode::Warn => PossibleValue::new("warn")
                .help("Report added, changed and removed tools in the log (the default)"),
            PinMode::Block => PossibleValue::new("block").help(
                "Also hide changed tools from tools/list and refuse calls to them until approved",
            ),
            PinMode::Off => PossibleValue::new("off").help("No pinning: nothing is recorded"),
        })
    }
}

pub fn run(args: ProxyArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    run_status(args, global).map(ExitCode::from)
}

/// [`run`], with the exit status as a number (for `mcpjail-proxy`'s C `main`).
pub fn run_status(args: ProxyArgs, global: &GlobalArgs) -> anyhow::Result<u8> {
    use anyhow::Context;

    let config = resolve_settings(&args, global)?;
    // The server starts before the runtime is built (see `proxy::start_before_runtime`). A
    // signal the proxy passes on waits, blocked, until the listener that passes it on is
    // installed: until then it would end the proxy by its default action.
    let held = HeldSignals::hold();
    let early = crate::proxy::start_before_runtime(&config)
        .transpose()
        .map_err(user_facing)?;
    let runtime = crate::proxy::timer::runtime().context("cannot start the async runtime")?;
    let result = runtime.block_on(async {
        let (signal_tx, signals) = tokio::sync::mpsc::unbounded_channel();
        spawn_signal_listener(signal_tx)?;
        drop(held);
        let (client_in, client_out, client_direct) = crate::proxy::stdio::client_stdio();
        crate::proxy::run(early, config, client_in, client_out, client_direct, signals)
            .await
            .map_err(user_facing)
    });
    // tokio's stdin reads on a blocking thread that cannot be interrupted; the child is
    // already reaped and stdout flushed here, so nothing is lost by not waiting for it.
    runtime.shutdown_background();
    let end = result?;
    #[cfg(unix)]
    if let Some(signal) = end.signal {
        end_by_signal(signal);
    }
    Ok(u8::try_from(end.code).unwrap_or(1))
}

/// A proxy error as the user reads it: a call log that cannot be written says what to do.
fn user_facing(e: crate::proxy::ProxyError) -> anyhow::Error {
    match e {
        crate::proxy::ProxyError::AuditLog(e) => {
            anyhow::Error::new(super::UserError::new(e.to_string()).with_hint(
                "give --log-file a file in a writable directory on a file system with free \
                 space, or leave --log-file out (a server whose calls cannot be recorded is not \
                 started)",
            ))
        }
        other => anyhow::Error::from(other),
    }
}

/// The signals the proxy passes on, blocked from [`HeldSignals::hold`] until the value is
/// dropped; then the thread's mask is what it was (a signal the proxy's parent blocked stays
/// blocked), and one that arrived meanwhile is delivered.
struct HeldSignals {
    #[cfg(unix)]
    before: libc::sigset_t,
}

impl HeldSignals {
    fn hold() -> HeldSignals {
        #[cfg(unix)]
        {
            // SAFETY: sigemptyset/sigaddset on a set on this stack, and pthread_sigmask with
            // valid sets; blocking signals runs no code of ours.
            unsafe {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                for number in crate::proxy::PASSED_ON_SIGNALS {
                    libc::sigaddset(&mut set, number);
                }
                let mut before: libc::sigset_t = std::mem::zeroed();
                libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut before);
                HeldSignals { before }
            }
        }
        #[cfg(not(unix))]
        HeldSignals {}
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        // SAFETY: restoring the mask saved by `hold`.
        #[cfg(unix)]
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.before, std::ptr::null_mut());
        }
    }
}

/// End this process by `signal`, the way the server ended, so the client's wait reports the
/// same signal it would have direct (not an exit code of 128+signal). No core file is written
/// for the proxy (the server's own, if any, is the server's). Returns only if the signal does
/// not end a process (a server cannot have been ended by one of those); the caller then exits
/// with 128+signal.
#[cfg(unix)]
fn end_by_signal(signal: libc::c_int) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit with a valid struct; signal, pthread_sigmask and raise with a signal
    // number a wait status reported, and a valid one-signal set on this stack.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
}

/// Flags + environment → the plain settings the proxy library takes.
pub fn resolve_settings(
    args: &ProxyArgs,
    global: &GlobalArgs,
) -> anyhow::Result<crate::proxy::ProxyConfig> {
    use anyhow::Context;

    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let name = args
        .name
        .clone()
        .unwrap_or_else(|| crate::proxy::default_name(&args.command));
    // `..Default::default()`: DeriveInputs grows fields (e.g. the server's environment) that
    // the proxy need not know about.
    #[allow(clippy::needless_update)]
    let inputs = crate::policy::DeriveInputs {
        name: name.clone(),
        command: args.command.clone(),
        cwd: cwd.clone(),
        home: home.clone(),
        policy_file: args.policy.clone(),
        allow_read: args.allow_read.clone(),
        allow_write: args.allow_write.clone(),
        ..Default::default()
    };
    // Only the variables the jail passes through can name paths the server will use.
    let kept_env: Vec<(String, String)> = args
        .env_keep
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.clone(), v)))
        .collect();
    let derived = crate::policy::derive_scope_with_env(&inputs, &kept_env).map_err(|e| {
        super::UserError::new(format!("cannot derive the scope for `{name}`: {e}"))
            .with_hint("check the --policy file and the --allow-read/--allow-write paths")
    })?;
    // What the policy file recorded (`policy derive --write`) is checked first, on the paths
    // as recorded: a file scope replaced by a symlink was derived above as its target.
    let policy_kinds = match &derived.policy_file {
        Some(file) if !derived.recorded_kinds.is_empty() => {
            crate::sandbox::check_recorded_kinds(file, &derived.recorded_kinds)
                .map_err(|e| super::UserError::new(e.to_string()))?;
            Some((file.clone(), derived.recorded_kinds.clone()))
        }
        _ => None,
    };
    for note in &derived.notes {
        tracing::info!("{note}");
    }
    // The policy file's `state` directories: the jail can only grant what exists.
    for dir in &derived.state_dirs {
        if !dir.exists() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| {
                    super::UserError::new(format!(
                        "cannot create the state directory {} named in the policy file: {e}",
                        dir.display()
                    ))
                    .with_hint("create it yourself, or fix the `state` line of the policy file")
                })?;
            tracing::info!(
                "created the state directory {} (policy file `state`)",
                dir.display()
            );
        }
    }
    let pin_key = || crate::proxy::pin_key(&name, &args.command, &cwd);
    crate::proxy::pinning::check_settings(args.pin, pin_key, home.as_deref()).map_err(|e| {
        super::UserError::new(format!("--pin block cannot work for `{name}`: {e}")).with_hint(
            "pick a plain --name (letters, digits, `-`, `_`, `.`), set XDG_STATE_HOME or HOME, \
             fix or remove the pin file, or run with --pin warn",
        )
    })?;
    let mut scope = derived.scope;
    for (entry, access) in scope
        .write
        .iter()
        .map(|e| (e, "read and write"))
        .chain(scope.read.iter().map(|e| (e, "read")))
    {
        if let Some(what) = wide_grant(&entry.path, home.as_deref()) {
            tracing::warn!(
                "the server may {access} {} ({what}, from {}): everything under it that is not \
                 masked{}; give it a narrower directory if you can",
                entry.path.display(),
                match &entry.source {
                    crate::policy::ScopeSource::PolicyFile(f) =>
                        format!("the policy file {}", f.display()),
                    crate::policy::ScopeSource::Argv(a) => format!("the server's argument {a}"),
                    crate::policy::ScopeSource::Schema(t) => format!("tool {t}"),
                    crate::policy::ScopeSource::ClientRoots => "the client's roots".into(),
                    crate::policy::ScopeSource::Flag => "a flag".into(),
                    crate::policy::ScopeSource::Runtime => "the runtime".into(),
                },
                if access == "read" {
                    ""
                } else {
                    ", settings and autostart files included"
                }
            );
        }
    }
    let mut allow_domains = std::mem::take(&mut scope.net.allow_domains);
    for rule in &args.allow_domain {
        if !allow_domains.contains(rule) {
            allow_domains.push(rule.clone());
        }
    }
    if args.allow_net {
        tracing::warn!(
            "--allow-net: the server may reach EVERY host and port (no Landlock network rules, \
             all socket families, no egress filtering); prefer --allow-domain"
        );
    }
    scope.net = crate::policy::NetRules {
        allow_all: args.allow_net,
        tcp_connect_ports: args.allow_tcp_connect.clone(),
        tcp_bind_ports: args.allow_tcp_bind.clone(),
        allow_domains,
        egress_port: None,
    };
    let egress_resolver = match std::env::var(crate::proxy::egress::resolve::TEST_RESOLVE_ENV) {
        Ok(map) if !map.is_empty() => {
            let names = crate::proxy::egress::Resolver::parse_test_names(&map).map_err(|e| {
                super::UserError::new(format!(
                    "{} is set but cannot be read: {e}",
                    crate::proxy::egress::resolve::TEST_RESOLVE_ENV
                ))
                .with_hint("it is a test-only setting: unset it")
            })?;
            tracing::warn!(
                "{} is set: the egress proxy answers {} from this test-only map instead of DNS",
                crate::proxy::egress::resolve::TEST_RESOLVE_ENV,
                names
                    .iter()
                    .map(|(n, ip)| format!("{n}={ip}"))
                    .collect::<Vec<_>>()
                    .join(",")
            );
            crate::proxy::egress::Resolver::with_test_names(names)
        }
        _ => crate::proxy::egress::Resolver::system(),
    };
    let state_dir = state_dir_for(&pin_key(), &name, home.as_deref());
    refuse_rewritable_inputs(
        &cwd,
        derived.policy_file.as_deref(),
        args.log_file.as_deref(),
        &scope,
        state_dir.as_deref(),
        home.as_deref(),
    )?;
    // Recorded now, checked by every jail prepared from this scope (respawns included).
    let derived_kinds = crate::sandbox::observe_kinds(&scope);
    Ok(crate::proxy::ProxyConfig {
        name,
        command: args.command.clone(),
        cwd,
        home,
        scope,
        read_only_tools: derived
            .tools
            .iter()
            .filter(|(_, t)| t.read_only)
            .map(|(name, _)| name.clone())
            .collect(),
        jail: crate::sandbox::JailOptions {
            disabled: args.no_jail,
            require_full: args.require_full,
            env_keep: args.env_keep.clone(),
            state_dir,
            derived_kinds,
            policy_kinds,
            // The probes fork throwaway children: most of a start-up's cost. A refusal at
            // spawn prepares the jail again with them (see `router::start_server`).
            assume_namespaces: true,
            ..Default::default()
        },
        deny_as: match args.deny_as {
            DenyAs::Result => crate::proxy::DenyMode::Result,
            DenyAs::Error => crate::proxy::DenyMode::Error,
        },
        max_line_bytes: args.max_line_bytes,
        live_log: args.log,
        color: global.color.use_color_on_stderr(),
        log_file: args.log_file.clone(),
        grace: std::time::Duration::from_secs(2),
        fetch_timeout: crate::proxy::FETCH_TIMEOUT,
        pin: args.pin,
        egress_resolver,
    })
}

/// The server's private state directory, keyed by its identity ([`crate::policy::server_state_dir`]).
/// A directory an earlier version keyed by the name alone is moved to the new place only when
/// the pin store shows that no other server ever ran under this name: a pin file is written for
/// every server identity that ran with pinning on, in mcpjail's own state, which no server can
/// write. Otherwise (another identity pinned under the name, or no pins at all) the directory
/// may hold another server's data or data planted for this one, so it is left where it is and
/// the log says where, and how to move it if it is this server's.
/// Whether `path` is a grant wide enough to say so loudly: HOME, one of its ancestors, or one
/// of HOME's dot-directories (`~/.config`, `~/.local`: settings, autostart, `~/.local/bin`).
fn wide_grant(path: &std::path::Path, home: Option<&std::path::Path>) -> Option<&'static str> {
    let home = home?;
    if path == home {
        return Some("the home directory");
    }
    if home.starts_with(path) {
        return Some("an ancestor of the home directory");
    }
    let rest = path.strip_prefix(home).ok()?;
    let mut parts = rest.components();
    let first = parts.next()?.as_os_str().to_string_lossy();
    (first.starts_with('.') && parts.next().is_none())
        .then_some("a settings directory of the home directory")
}

fn state_dir_for(
    key: &crate::policy::pins::PinKey,
    name: &str,
    home: Option<&std::path::Path>,
) -> Option<PathBuf> {
    let dir = crate::policy::server_state_dir(key, home)?;
    let legacy = crate::policy::xdg::legacy_server_state_dir(name, home)?;
    let is_real_dir = |p: &std::path::Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    if legacy == dir || !is_real_dir(&legacy) || std::fs::symlink_metadata(&dir).is_ok() {
        return Some(dir);
    }
    let pinned: Vec<String> = crate::policy::pins::pins_dir(home)
        .and_then(|pins| crate::policy::pins::list_servers(&pins).ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|k| {
            k.strip_prefix(&key.label)
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|d| d.len() == 12 && d.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .collect();
    if pinned == [key.key.clone()] {
        match std::fs::rename(&legacy, &dir) {
            Ok(()) => {
                tracing::info!(
                    "moved the state directory {} (kept by name by an earlier mcpjail) to {}: \
                     the pins show no other server ran as `{name}`",
                    legacy.display(),
                    dir.display()
                );
                return Some(dir);
            }
            Err(e) => tracing::warn!(
                "cannot move the state directory {} to {}: {e}",
                legacy.display(),
                dir.display()
            ),
        }
    }
    tracing::warn!(
        "the state directory {} was kept by name by an earlier mcpjail and may have been shared \
         by every server named `{name}`; this server gets {} instead (hint: if the old one is \
         this server's alone, move it there: mv {} {})",
        legacy.display(),
        dir.display(),
        crate::policy::export::shell_quote(&legacy.display().to_string()),
        crate::policy::export::shell_quote(&dir.display().to_string())
    );
    Some(dir)
}

/// Refuse a policy file or an audit log the jailed server could rewrite: both are trusted by
/// the proxy, outside the jail, at the next start (the policy decides the next jail's grants,
/// the log is the record of what the server did, and a link planted in its place would make the
/// proxy append elsewhere). "Could rewrite" is: the file, its directory or, for a link, its
/// target lies under a write grant (not masked by a deny glob) or in the server's own state
/// directory.
fn refuse_rewritable_inputs(
    cwd: &std::path::Path,
    policy_file: Option<&std::path::Path>,
    log_file: Option<&std::path::Path>,
    scope: &crate::policy::Scope,
    state_dir: Option<&std::path::Path>,
    home: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    if let Some(file) = policy_file {
        if let Some(root) = server_can_rewrite(&cwd.join(file), scope, state_dir) {
            return Err(super::UserError::new(format!(
                "the policy file {} lies in {}, which the server may write: a jailed server \
                 could rewrite its own policy and the next start would grant what it wrote",
                file.display(),
                root.display()
            ))
            .with_hint(
                "move the policy file out of every directory the server may write (e.g. to \
                 $XDG_CONFIG_HOME/mcpjail/servers/<name>.toml, found by --name without \
                 --policy, where no server can write) and write its paths absolute or relative \
                 to its new place",
            )
            .into());
        }
    }
    if let Some(file) = log_file {
        if let Some(root) = server_can_rewrite(&cwd.join(file), scope, state_dir) {
            let suggested = crate::policy::xdg::state_dir(home)
                .map(|d| {
                    format!(
                        " (e.g. in {}, which no server may read or write)",
                        d.display()
                    )
                })
                .unwrap_or_default();
            return Err(super::UserError::new(format!(
                "the audit log {} lies in {}, which the server may write: a jailed server could \
                 rewrite its own record, or put a link in its place that the proxy would append \
                 through",
                file.display(),
                root.display()
            ))
            .with_hint(format!(
                "give --log-file a file outside every directory the server may write{suggested}"
            ))
            .into());
        }
    }
    Ok(())
}

/// The write grant (or the server's state directory) under which the server could replace or
/// rewrite `path`: checked for its directory plus its name (a replacement) and, if it exists,
/// its canonical target (a rewrite through a link).
fn server_can_rewrite(
    path: &std::path::Path,
    scope: &crate::policy::Scope,
    state_dir: Option<&std::path::Path>,
) -> Option<PathBuf> {
    let canonical =
        |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut places = Vec::new();
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        places.push(canonical(dir).join(name));
    }
    if let Ok(target) = std::fs::canonicalize(path) {
        places.push(target);
    }
    let state_dir = state_dir.map(canonical);
    places.iter().find_map(|place| {
        scope
            .write_root_over(place)
            .map(std::path::Path::to_path_buf)
            .or_else(|| state_dir.clone().filter(|d| place.starts_with(d)))
    })
}

/// Whether `signal` is ignored in this process, asked before any handler of ours is installed:
/// how the launcher left it.
#[cfg(unix)]
fn ignored_from_start(signal: libc::c_int) -> bool {
    // SAFETY: a query only (no new action); `current` is a valid out-pointer.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

fn parse_domain_rule(text: &str) -> Result<crate::policy::DomainRule, String> {
    crate::policy::DomainRule::parse(text).map_err(|e| e.why)
}

/// The signals a client (or its terminal) sends a server, passed to the session, which passes
/// each on to the server as the client would have signalled it directly: SIGTERM and SIGINT
/// (which end a session), SIGHUP and SIGQUIT (a hung-up terminal, a quit key), SIGUSR1 and
/// SIGUSR2 (a runtime's own: Node opens its inspector on SIGUSR1). Left to their default, each of
/// these would end the proxy instead and the server with it, by SIGKILL. A signal the proxy was
/// started with ignored (a launcher's `nohup`, `trap '' INT`, a shell's background job) stays
/// ignored: no handler is installed for it, so the server inherits it ignored, as it would have
/// started directly, and a signal that would not have reached the server direct is not passed on.
fn spawn_signal_listener(tx: tokio::sync::mpsc::UnboundedSender<i32>) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut streams = Vec::new();
        for number in crate::proxy::PASSED_ON_SIGNALS {
            if !ignored_from_start(number) {
                streams.push((number, signal(SignalKind::from_raw(number))?));
            }
        }
        for (number, mut stream) in streams {
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(number).is_err() {
                        return;
                    }
                }
            });
        }
    }
    #[cfg(not(unix))]
    {
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if tx.send(2).is_err() {
                    return;
                }
            }
        });
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::HeldSignals;
    use std::sync::atomic::{AtomicBool, Ordering};

    static DELIVERED: AtomicBool = AtomicBool::new(false);

    extern "C" fn note_delivery(_: libc::c_int) {
        DELIVERED.store(true, Ordering::SeqCst);
    }

    fn blocked(signal: libc::c_int) -> bool {
        // SAFETY: a query of this thread's mask into a set on this stack.
        unsafe {
            let mut now: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut now);
            libc::sigismember(&now, signal) == 1
        }
    }

    /// A signal the proxy passes on that arrives while the server starts (before the listener
    /// exists) waits, and is delivered once the hold ends; a signal the proxy's parent had
    /// blocked stays blocked after it. Without the hold the signal's default action would end
    /// the proxy in that window (here the handler runs at once, and the first check fails).
    #[test]
    fn a_signal_held_during_the_start_is_delivered_after_it() {
        // SAFETY: a handler that only stores to an atomic; raise and pthread_sigmask on this
        // thread with valid sets.
        unsafe {
            let handler: extern "C" fn(libc::c_int) = note_delivery;
            libc::signal(libc::SIGUSR2, handler as *const () as libc::sighandler_t);
            let mut parent: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut parent);
            libc::sigaddset(&mut parent, libc::SIGUSR1);
            libc::pthread_sigmask(libc::SIG_BLOCK, &parent, std::ptr::null_mut());

            let held = HeldSignals::hold();
            assert!(blocked(libc::SIGTERM) && blocked(libc::SIGINT) && blocked(libc::SIGUSR2));
            libc::raise(libc::SIGUSR2);
            assert!(!DELIVERED.load(Ordering::SeqCst), "delivered while held");
            drop(held);
            assert!(
                DELIVERED.load(Ordering::SeqCst),
                "not delivered after the hold"
            );
            assert!(!blocked(libc::SIGTERM) && !blocked(libc::SIGUSR2));
            assert!(blocked(libc::SIGUSR1), "the parent's mask is not restored");
        }
    }
}
