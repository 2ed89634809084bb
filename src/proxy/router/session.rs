//! The session loop: one task reads frames from both sides and hands each to the router,
//! until the server has exited; then the server's failure (if any) is explained to the
//! client, and the proxy's exit code is the server's status.
//!
//! Reading both directions in one task (the framed readers are cancel-safe) keeps all routing
//! state in one owner, with no locks. The loop's one wait is a `poll_fn` over its sources rather
//! than `tokio::select!`: with seven branches the macro's random start, its branch masks and
//! its output enum cost ~300 instructions a call (`callgrind`), and two peers taking turns are
//! as fair as a random start.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::pin::{pin, Pin};
use std::process::ExitStatus;
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

use super::super::audit::CallLog;
use super::super::child::{describe_exit, ServerChild, ServerEnd};
use super::super::framing::{Frame, FramedReader};
use super::super::integrity::Violations;
use super::super::pinning::Pinning;
use super::super::{ProxyConfig, ProxyError};
use super::catalogue::Catalogue;
use super::roots::{reap, Roots};
use super::{kernel_stops_writes, note_jail, start_server, Launch, Router};
use crate::policy::ResolveContext;
use crate::proxy::outbox::{Outbox, OUT_CLIENT_HIGH_WATER};

/// How long, after the server exited, its stderr copy may take to reach the end of the pipe
/// (longer only if a descendant still holds it open).
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// How far the session's end has come. The proxy adds no timers of its own: it mirrors
/// what the client does — a closed stdin closes the server's, a signal is passed on — and
/// waits for the server, as the client would have waited for it directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shutdown {
    /// Both sides are talking.
    Running,
    /// The client closed its side; the server's stdin is closed and it finishes on its own.
    ClientClosed,
    /// `n` signals were passed on to the server.
    Signalled(u8),
}

/// What one turn of the session loop woke for.
enum Turn {
    /// A signal the proxy received (`None`: no more will come).
    Signal(Option<i32>),
    /// The client's next frame (`Ok(None)`: it closed its side).
    Client(std::io::Result<Option<Frame>>),
    /// The client's outbox fell below its high-water mark: the server may be read again.
    Drained,
    /// The server's next frame (`Ok(None)`: it closed its stdout).
    Server(std::io::Result<Option<Frame>>),
    /// The server exited (waited for once its stdout closed).
    Exited(std::io::Result<ExitStatus>),
    /// The proxy's own `tools/list` took too long (see `Catalogue::deadline`).
    FetchTimedOut,
    /// A decision of the egress proxy, to log (`None`: there will be no more).
    Net(Option<crate::proxy::audit::NetRecord>),
}

/// A signal the proxy received, passed on to the server: the session's new stage when it is
/// one that ends the session (a repeat past [`SIGNALS_FORWARDED`] kills the server), `None`
/// for one meant for the server's own use (SIGUSR1 opens Node's inspector), after which the
/// session goes on as it would have direct.
#[cold]
#[inline(never)]
fn on_signal(sig: i32, stage: Shutdown, child: &mut ServerChild) -> Option<Shutdown> {
    if !ends_session(sig) {
        tracing::info!(pid = child.pid, "signal {sig}: passed on to the server");
        child.signal(sig);
        return None;
    }
    let n = match stage {
        Shutdown::Signalled(n) => n.saturating_add(1),
        _ => 1,
    };
    if n > SIGNALS_FORWARDED {
        tracing::warn!(pid = child.pid, "signal {sig} again: killing the server");
        child.kill();
    } else {
        tracing::info!(pid = child.pid, "signal {sig}: passed on to the server");
        child.signal(sig);
    }
    Some(Shutdown::Signalled(n))
}

/// Whether `sig` is one that asks the session to end (SIGTERM, SIGINT, SIGHUP, SIGQUIT), as
/// opposed to one for the server's own use (SIGUSR1, SIGUSR2): only the first kind counts toward
/// [`SIGNALS_FORWARDED`].
fn ends_session(sig: i32) -> bool {
    ![libc::SIGUSR1, libc::SIGUSR2].contains(&sig)
}

/// Signals passed on as they are; past this many the server's session is killed (the
/// safety net for a server that ignores a repeated signal, which direct would not have: a
/// client that insists that often means it).
const SIGNALS_FORWARDED: u8 = 2;

/// Run the proxy over the given client streams until the session ends; the result is how the
/// server ended (its exit code, and the signal that ended it, if one did). `signals` carries the
/// signals the proxy received (see [`crate::proxy::PASSED_ON_SIGNALS`]; a parameter so tests can
/// send them); each is passed on to the server.
/// `client_direct` is `client_out`'s own pipe in non-blocking mode, if it is one (see
/// [`crate::proxy::stdio::client_stdio`]): answers are then written at once when nothing is
/// queued (see `outbox`). `early`: the jail and server [`start_before_runtime`] started, if it
/// did; otherwise the session prepares and starts them itself.
pub async fn run<R, W>(
    early: Option<EarlyStart>,
    config: ProxyConfig,
    client_in: R,
    client_out: W,
    client_direct: Option<std::os::fd::OwnedFd>,
    signals: mpsc::UnboundedReceiver<i32>,
) -> Result<ServerEnd, ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let launch: Launch = Box::new(ServerChild::spawn_in);
    run_with(
        early,
        config,
        client_in,
        client_out,
        client_direct,
        signals,
        launch,
    )
    .await
}

/// What [`start_before_runtime`] did: the jail, the call log, and the server if the jail could
/// start it on its own.
pub struct EarlyStart {
    jail: crate::sandbox::PreparedJail,
    log: CallLog,
    #[cfg(target_os = "linux")]
    pub(super) spawned: Option<std::io::Result<crate::sandbox::SpawnedServer>>,
}

/// Prepare the jail, open the call log and start the server, before the async runtime exists.
///
/// Why: the server's start is the longest step of a session's start, and the runtime, the
/// signal listener and the client's stdio are not needed for it. Built first, they delayed the
/// server's `exec` (~0.13 ms of work in a slow hour); built after, they are ready long before
/// the server reads its first line. A session's first answer came 0.14–0.41 ms sooner at the
/// paired median (README, the twentieth pass).
///
/// `None` where the order cannot change: with `--allow-domain` rules the egress proxy (which
/// needs the runtime) must listen before the jail is prepared, since the jail routes the server
/// to its port. The caller holds the signals it passes on blocked until its listener is
/// installed (see `cli::proxy`).
pub fn start_before_runtime(config: &ProxyConfig) -> Option<Result<EarlyStart, ProxyError>> {
    (!needs_egress(config)).then(|| start_now(config))
}

fn start_now(config: &ProxyConfig) -> Result<EarlyStart, ProxyError> {
    let jail = prepare_jail(config)?;
    let log = open_log(config)?;
    Ok(EarlyStart {
        #[cfg(target_os = "linux")]
        spawned: jail.spawn_piped(),
        jail,
        log,
    })
}

/// The jail for the session's scope (a respawn prepares one for a narrower scope).
fn prepare_jail(config: &ProxyConfig) -> Result<crate::sandbox::PreparedJail, ProxyError> {
    crate::sandbox::prepare(&config.scope, &config.command, &config.cwd, &config.jail)
        .map_err(ProxyError::Jail)
}

fn open_log(config: &ProxyConfig) -> Result<CallLog, ProxyError> {
    CallLog::new(
        &config.name,
        config.live_log,
        config.color,
        config.log_file.as_deref(),
    )
    .map_err(ProxyError::AuditLog)
}

/// Whether the session has `--allow-domain` rules, which [`start_egress`] starts an egress
/// proxy for (or warns why it does not).
fn needs_egress(config: &ProxyConfig) -> bool {
    !config.scope.net.allow_domains.is_empty()
}

/// With `--allow-domain` rules and a jail, start the egress proxy and point the jail at it: the
/// one TCP port the server may connect to, and its `HTTP_PROXY` family. `--allow-net` (no
/// network rules) and `--no-jail` (no jail to route through it) start none.
async fn start_egress(
    config: &mut ProxyConfig,
    records: crate::proxy::audit::NetRecords,
) -> Result<Option<crate::proxy::egress::EgressProxy>, ProxyError> {
    let net = &config.scope.net;
    if net.allow_domains.is_empty() {
        return Ok(None);
    }
    if net.allow_all {
        tracing::warn!(
            "--allow-net: the server reaches every host and port directly; the --allow-domain \
             rules are not applied"
        );
        return Ok(None);
    }
    if config.jail.disabled {
        tracing::warn!(
            "--no-jail: no egress proxy; the server reaches the network directly, unfiltered"
        );
        return Ok(None);
    }
    let egress = crate::proxy::egress::EgressProxy::start(
        net.allow_domains.clone(),
        config.egress_resolver.clone(),
        records,
    )
    .await
    .map_err(ProxyError::Egress)?;
    config.scope.net.egress_port = Some(egress.port());
    config.jail.egress_env = crate::proxy::egress::server_env(egress.port());
    Ok(Some(egress))
}

/// [`run`], with the way the server is started given (tests start a task instead).
pub(super) async fn run_with<R, W>(
    early: Option<EarlyStart>,
    config: ProxyConfig,
    client_in: R,
    client_out: W,
    client_direct: Option<std::os::fd::OwnedFd>,
    mut signals: mpsc::UnboundedReceiver<i32>,
    mut launch: Launch,
) -> Result<ServerEnd, ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut config = config;
    // Kept for the whole session: dropping it stops the listener and its connections.
    // The egress proxy's decisions come back here and are written with the session's one
    // audit log (one writer, one `session_start`, one failure rule).
    let (net_records, mut net_decisions) = mpsc::unbounded_channel();
    let (egress, jail, log, first) = match early {
        Some(early) => {
            #[cfg(target_os = "linux")]
            let first = early
                .spawned
                .map(|s| s.and_then(|s| ServerChild::from_spawned(s, config.max_line_bytes)));
            #[cfg(not(target_os = "linux"))]
            let first = None;
            // No egress proxy: nothing will send on the channel, which closes here, and the
            // session stops polling it.
            drop(net_records);
            (None, early.jail, early.log, first)
        }
        None => {
            let egress = start_egress(&mut config, net_records).await?;
            (egress, prepare_jail(&config)?, open_log(&config)?, None)
        }
    };
    if log.live() {
        note_jail(&log, &jail);
        if config.jail.disabled {
            log.note("WARNING: --no-jail: the server runs unconfined (diagnosis only)");
        }
        if let Some(egress) = &egress {
            log.note(&format!(
                "egress proxy on 127.0.0.1:{} (HTTP CONNECT, HTTP, SOCKS5); allowed: {}",
                egress.port(),
                config
                    .scope
                    .net
                    .allow_domains
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let scope = config.scope.clone();
    let (jail, spawned) = start_server(&mut launch, jail, first, &scope, &mut config, &log);

    let (out, writer) = Outbox::start(client_out, client_direct);
    let counter = out.counter.clone();
    let mut client = FramedReader::new(client_in, config.max_line_bytes);
    let command_line = config.command.join(" ");

    let mut router = Router {
        egress,
        ctx: ResolveContext {
            cwd: config.cwd.clone(),
            home: config.home.clone(),
        },
        scope: config.scope.clone(),
        pinning: Pinning::new(
            config.pin,
            &config.name,
            super::super::pin_identity(&config.command, &config.cwd),
            config.home.clone(),
        ),
        config,
        launch,
        log,
        out,
        catalogue: Catalogue::new(),
        pending: foldhash::HashMap::default(),
        forwarded: 0,
        own_to_server: foldhash::HashMap::default(),
        cancelled: VecDeque::new(),
        roots: Roots::default(),
        server_requests: HashMap::new(),
        stale_server_requests: HashSet::new(),
        held: VecDeque::new(),
        held_bytes: 0,
        violations: Violations::default(),
        client_meta: None,
        saw_initialize: false,
        init_params: None,
        paused: false,
        respawn: None,
        refetch_after_replay: false,
        streaming: None,
        server_spoke: false,
        kernel_stops_writes: false,
    };
    let mut child = match spawned {
        Ok(mut child) => {
            super::adopt_egress_listener(router.egress.as_ref(), &jail);
            router.kernel_stops_writes = kernel_stops_writes(&jail);
            child.jail = Some(jail);
            child
        }
        Err(source) => {
            // The client still deserves to hear why: answer every request it sends with the
            // explanation until it goes away, then fail as before.
            let explanation =
                crate::sandbox::explain_failure(&jail, &router.scope, Some(&source), "");
            let msg = format!(
                "mcpjail could not start the MCP server: {}",
                explanation.text()
            );
            router.report_failure(&msg, None, &explanation);
            router
                .serve_dead_server(&mut client, &msg, &explanation, &mut signals)
                .await;
            drop(router);
            let _ = writer.await;
            return Err(ProxyError::Spawn {
                command: command_line,
                source,
            });
        }
    };
    tracing::debug!(pid = child.pid, "server started");
    let mut reapers = Vec::new();

    let mut client_eof = false;
    let mut stage = Shutdown::Running;
    let mut signals_open = true;
    // Whether the signal channel holds this task's waker (see `next_signal`).
    let mut signals_armed = false;
    // Without an egress proxy nothing sends on it: not polled once it says so.
    let mut net_open = true;
    let grace = router.config.grace;

    // Which side goes first when both have a frame ready: they take turns, so neither a
    // flooding client nor a flooding server starves the other.
    let mut client_first = true;
    // The fetch's deadline, kept across turns: each timer is a descriptor to make and close.
    let mut fetch_timer: Option<(Instant, crate::proxy::timer::Sleep)> = None;

    loop {
        match router.catalogue.deadline(router.config.fetch_timeout) {
            Some(at) if fetch_timer.as_ref().is_some_and(|(set, _)| *set == at) => {}
            Some(at) => fetch_timer = Some((at, crate::proxy::timer::sleep_until(at))),
            None => fetch_timer = None,
        }
        let turn = {
            // The sources the loop waits on, in one poll (see `Turn`). Each is cancel-safe: a
            // future dropped unfinished loses nothing. The rare ones are made only when enabled.
            // A client that sends but does not read is not read either, past a larger mark:
            // the proxy's own answers to it are queued too.
            let reading_client = !client_eof && !counter.over(OUT_CLIENT_HIGH_WATER);
            // Backpressure: while the client is slow to read, stop reading the server (it
            // blocks on its pipe) instead of queueing its output in our memory.
            let backlogged = counter.backlogged();
            let reading_server = !child.stdout_eof && !backlogged;
            let mut signal = pin!(next_signal(&mut signals, &mut signals_armed));
            let mut from_client = pin!(client.next_frame());
            let mut from_server = pin!(child.stdout.next_frame());
            let mut drained = pin!(backlogged.then(|| counter.drained.notified()));
            let mut exited =
                pin!((child.stdout_eof && child.status.is_none()).then(|| child.process.wait()));
            let mut net = pin!(net_open.then(|| net_decisions.recv()));
            // The rare sources first (each is off unless its event can come), so a busy pair of
            // peers does not starve them; then the two peers, taking turns.
            std::future::poll_fn(|cx| {
                if signals_open {
                    if let Poll::Ready(sig) = signal.as_mut().poll(cx) {
                        return Poll::Ready(Turn::Signal(sig));
                    }
                }
                if let Some(drained) = drained.as_mut().as_pin_mut() {
                    if drained.poll(cx).is_ready() {
                        return Poll::Ready(Turn::Drained);
                    }
                }
                if let Some(exited) = exited.as_mut().as_pin_mut() {
                    if let Poll::Ready(status) = exited.poll(cx) {
                        return Poll::Ready(Turn::Exited(status));
                    }
                }
                if let Some((_, fetch_due)) = &mut fetch_timer {
                    if Pin::new(fetch_due).poll(cx).is_ready() {
                        return Poll::Ready(Turn::FetchTimedOut);
                    }
                }
                if let Some(net) = net.as_mut().as_pin_mut() {
                    if let Poll::Ready(rec) = net.poll(cx) {
                        return Poll::Ready(Turn::Net(rec));
                    }
                }
                for side in [client_first, !client_first] {
                    if side && reading_client {
                        if let Poll::Ready(frame) = from_client.as_mut().poll(cx) {
                            return Poll::Ready(Turn::Client(frame));
                        }
                    }
                    if !side && reading_server {
                        if let Poll::Ready(frame) = from_server.as_mut().poll(cx) {
                            return Poll::Ready(Turn::Server(frame));
                        }
                    }
                }
                Poll::Pending
            })
            .await
        };
        client_first = !client_first;
        match turn {
            Turn::Signal(None) => signals_open = false,
            Turn::Signal(Some(sig)) => {
                if let Some(signalled) = on_signal(sig, stage, &mut child) {
                    stage = signalled;
                } else {
                    continue;
                }
            }
            Turn::Client(Ok(Some(frame))) => router.on_client_frame(frame, &mut child),
            Turn::Client(Ok(None) | Err(_)) => {
                client_eof = true;
                // As direct: the server reads every line the client sent, then EOF. A
                // request still held (for the tool list, or a respawn) goes first.
                if router.holds_for_server() {
                    tracing::debug!("client closed its side: closing the server's stdin after the held requests");
                } else {
                    tracing::debug!("client closed its side: closing the server's stdin");
                    child.close_stdin();
                }
                if stage == Shutdown::Running {
                    stage = Shutdown::ClientClosed;
                }
            }
            Turn::Drained => {}
            Turn::Server(Ok(Some(frame))) => router.on_server_frame(frame, &mut child),
            Turn::Server(Ok(None) | Err(_)) => child.stdout_eof = true,
            Turn::Exited(Ok(status)) => child.status = Some(status),
            Turn::Exited(Err(err)) => return Err(ProxyError::Wait(err)),
            Turn::FetchTimedOut => router.fetch_timed_out(&mut child),
            Turn::Net(Some(rec)) => router.log.net(&rec),
            Turn::Net(None) => net_open = false,
        }
        if router.catalogue.fetch_due() && !client.has_line() {
            router.start_fetch(&mut child);
        }
        if let Some(scope) = router.respawn.take() {
            if let Some(old) = router.respawn_server(scope, &mut child) {
                reapers.retain(|r: &tokio::task::JoinHandle<()>| !r.is_finished());
                reapers.push(tokio::spawn(reap(old, grace)));
            }
        }
        if client_eof && child.stdin.is_some() && !router.holds_for_server() {
            tracing::debug!("held requests forwarded: closing the server's stdin");
            child.close_stdin();
        }
        if child.status.is_some() {
            break;
        }
        // The server's stdout closed but it has not exited: keep waiting, as a client would.
        // The client may still be talking: its requests get errors once the server is gone.
    }

    // Decisions the egress proxy made while the loop was ending.
    while let Ok(rec) = net_decisions.try_recv() {
        router.log.net(&rec);
    }
    let end = child
        .status
        .map(ServerEnd::of)
        .unwrap_or(ServerEnd::UNKNOWN);
    let status = end.code;
    let owed = router.owes_answers();
    let signalled = matches!(stage, Shutdown::Signalled(_));
    let start_failure = !router.server_spoke && !client_eof && !signalled;
    if owed || start_failure {
        // Everything the server wrote is needed to explain its end.
        let tail = child.finish_stderr(STDERR_DRAIN).await;
        let explanation = match &child.jail {
            Some(jail) => crate::sandbox::explain_failure(jail, &router.scope, None, &tail),
            None => crate::sandbox::Explanation {
                cause: crate::sandbox::Cause::NotJail,
                refused: Vec::new(),
                detail: None,
            },
        };
        let how = child
            .status
            .map(describe_exit)
            .unwrap_or_else(|| format!("exited (status {status})"));
        let msg = format!(
            "the MCP server {how} before answering: {}",
            explanation.text()
        );
        router.report_failure(&msg, Some(status), &explanation);
        router.fail_in_flight(&msg, &explanation);
        if start_failure {
            // A server that died before it said anything: the client's first request may not
            // have arrived yet. Answer it (and anything after) instead of leaving the client
            // with a closed pipe and no reason.
            router
                .serve_dead_server(&mut client, &msg, &explanation, &mut signals)
                .await;
        }
    }
    drop(router);
    for reaper in reapers {
        let _ = reaper.await;
    }
    let _ = writer.await;
    Ok(end)
}

/// The next signal, as `signals.recv()` gives it, but read only when the channel holds one or is
/// closed: once a read found it empty, the channel keeps this task's waker (`armed`) and a send
/// or the sender's drop wakes the task, so the turns in between need not read it. (Reading it
/// on every turn of the session loop cost ~250 instructions a turn, two turns a call.)
/// `unconstrained`: a read refused by tokio's budget would be Pending without the waker kept.
async fn next_signal(signals: &mut mpsc::UnboundedReceiver<i32>, armed: &mut bool) -> Option<i32> {
    tokio::task::unconstrained(std::future::poll_fn(|cx| {
        if *armed && signals.is_empty() && !signals.is_closed() {
            return std::task::Poll::Pending;
        }
        let read = signals.poll_recv(cx);
        *armed = read.is_pending();
        read
    }))
    .await
}
