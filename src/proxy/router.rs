//! The connection: one task that reads frames from both sides and decides, message by message,
//! what to forward, what to answer itself and what to learn.
//!
//! Reading both directions in one `select!` (the framed readers are cancel-safe) keeps all
//! routing state in one owner, with no locks. Writing happens in two small writer tasks fed by
//! unbounded channels, so the router never blocks on a slow peer — blocking there could
//! deadlock a server that is itself blocked writing to us.
//!
//! client → server: every line is parsed as an envelope; `tools/call` and `resources/read` are
//! judged before they are forwarded; anything that cannot be parsed or judged is answered with
//! an error and never forwarded.
//! server → client: responses are matched to pending requests (for learning `tools/list`,
//! logging and answering in-flight requests if the server dies); a response that matches no
//! request the server was sent, and a line that is not a JSON-RPC message, is dropped and
//! reported (see [`super::integrity`]); requests and notifications pass through.
//!
//! Every table and queue here has a limit (see [`super::integrity`]); the queue to the client
//! is bounded in bytes by backpressure (the server, then the client, is not read while it is
//! full).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use super::audit::{CallLog, CallRecord};
use super::check::{self, Refusal, Verdict};
use super::child::{exit_code, ServerChild};
use super::framing::{Frame, FramedReader};
use super::integrity::{self, Side, Violations};
use super::message::{self, code, Envelope, Malformed};
use super::pinning::Pinning;
use super::{DenyMode, ProxyConfig, ProxyError};
use crate::policy::{ResolveContext, Scope, ToolInfo};

/// How long, after the server exited, its stderr copy may take to reach the end of the pipe
/// (longer only if a descendant still holds it open).
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// Longest text of a result without `isError: true` that is still read as an error message
/// for jail hints.
const MAX_UNFLAGGED_ERROR_TEXT: usize = 1024;

/// How long a `tools/call` may wait for the proxy's own `tools/list` before it is judged with
/// value heuristics alone.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Initialize,
    Discover,
    ToolsList,
    ToolsCall,
    ResourcesRead,
    Other,
}

/// A client request forwarded to the server and not answered yet.
#[derive(Debug)]
struct Pending {
    raw_id: String,
    kind: Kind,
    started: Instant,
    record: Option<CallRecord>,
}

/// What one of the proxy's own requests to the server was for. (Its one request to the
/// client, `roots/list`, is [`Router::own_roots`]: the two directions never share a table.)
#[derive(Debug, PartialEq, Eq)]
enum Own {
    /// A page of the proxy's `tools/list` fetch.
    ToolsList,
    /// The client's `initialize`, replayed to a respawned server.
    ReplayInit,
}

/// Everything the router knows about the session.
struct Router {
    config: ProxyConfig,
    ctx: ResolveContext,
    scope: Scope,
    log: CallLog,
    out: ClientOut,
    tools: HashMap<String, ToolInfo>,
    /// A `tools/list` result (ours or the client's) has been seen.
    tools_learned: bool,
    /// Calls wait for our own fetch (since when: the first page of the first fetch, so a
    /// server that keeps changing its list cannot hold calls past [`FETCH_TIMEOUT`]).
    fetching: Option<Instant>,
    /// Our fetch failed: judge by value heuristics rather than wait again.
    fetch_failed: bool,
    /// `tools/list_changed` arrived while our fetch was in flight: fetch once more after it
    /// (however many arrived — a storm costs two fetches, not one per notification).
    tools_dirty: bool,
    /// How many `tools/list_changed` the current fetch absorbed (for one loud log line).
    coalesced: u64,
    /// Pages of the current fetch (at most [`integrity::MAX_FETCH_PAGES`]).
    fetch_pages: usize,
    /// Client requests forwarded to the server, not answered yet (at most
    /// [`integrity::MAX_PENDING`]). The only ids a server response may carry.
    pending: HashMap<String, Pending>,
    /// The proxy's own requests to the server, by id key (a fetch page, a replayed
    /// initialize: at most two at a time).
    own_to_server: HashMap<String, Own>,
    /// Client requests the client cancelled (`notifications/cancelled`), oldest first, at most
    /// [`integrity::MAX_PENDING`]: the server need not answer them, and a late answer is
    /// dropped quietly instead of being counted as a violation.
    cancelled: VecDeque<String>,
    /// The id key of the proxy's own `roots/list` to the client, while it is unanswered.
    own_roots: Option<String>,
    /// The client's roots changed while our `roots/list` was unanswered: ask once more.
    roots_dirty: bool,
    /// Server→client requests the client has not answered, by id key → "is a roots/list"
    /// (at most [`integrity::MAX_SERVER_REQUESTS`]). The only ids a client response may carry.
    server_requests: HashMap<String, bool>,
    /// Ids of requests of a server that was replaced: the client's late answers are dropped
    /// quietly (they are not violations; there is just no one left to give them to).
    stale_server_requests: std::collections::HashSet<String>,
    /// Client frames held (in order) until the tool list is known, and their total size
    /// (at most [`integrity::MAX_HELD`] / [`integrity::MAX_HELD_BYTES`]).
    held: VecDeque<Bytes>,
    held_bytes: usize,
    violations: Violations,
    /// The `_meta` of the client's latest request, for stateless-era (2026-07-28) requests of
    /// our own, which must carry the protocol version and client capabilities.
    client_meta: Option<Value>,
    saw_initialize: bool,
    /// The client's `initialize` params, replayed to a respawned server.
    init_params: Option<Value>,
    /// The client advertised the `roots` capability: the proxy may ask it for its roots.
    client_roots: bool,
    /// A respawned server is being re-initialised: client messages wait.
    paused: bool,
    /// A narrower scope the client's roots asked for; the run loop respawns the server.
    respawn: Option<Scope>,
    /// Our tools/list fetch was cut short by a respawn: redo it once the new server is ready.
    refetch_after_replay: bool,
    /// Tool pins (`--pin`): fed by every tools/list page, consulted by tools/call.
    pinning: Pinning,
    /// A long server response being forwarded piecewise.
    streaming: Option<Streaming>,
    /// The server has sent something: a failure from now on is not a start failure.
    server_spoke: bool,
    /// The jail's filesystem layer is fully enforced, so the kernel refuses writes under
    /// read-only roots whatever the proxy forwards (see `check::check_tool_call`).
    kernel_stops_writes: bool,
}

/// A server response being streamed through: its id, how much of it went out, and a watch
/// on its top-level keys (a second `id` in its tail cuts it off).
struct Streaming {
    key: String,
    bytes: usize,
    guard: super::stream_guard::KeyGuard,
    /// The line broke the protocol part-way: the rest is dropped and the request is answered
    /// by the proxy.
    cut: bool,
}

/// Run the proxy over the given client streams until the session ends; the result is the exit
/// code (the server's status). `shutdown` is the SIGINT/SIGTERM trigger (a parameter so tests
/// can pull it).
pub async fn run<R, W>(
    config: ProxyConfig,
    client_in: R,
    client_out: W,
    shutdown: CancellationToken,
) -> Result<i32, ProxyError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let jail = crate::sandbox::prepare(&config.scope, &config.command, &config.cwd, &config.jail)
        .map_err(ProxyError::Jail)?;
    let log = CallLog::new(
        &config.name,
        config.live_log,
        config.color,
        config.log_file.as_deref(),
    )
    .map_err(ProxyError::AuditLog)?;
    if log.live() {
        for layer in &jail.report().layers {
            log.note(&format!(
                "jail {}: {} ({})",
                layer.layer,
                enforcement_word(layer.enforcement),
                layer.detail
            ));
        }
        if config.jail.disabled {
            log.note("WARNING: --no-jail: the server runs unconfined (diagnosis only)");
        }
    }
    let spawned = ServerChild::spawn(jail.command(), config.max_line_bytes);

    let (out_tx, out_rx) = mpsc::unbounded_channel::<Bytes>();
    let counter = OutCounter {
        queued: Arc::new(AtomicUsize::new(0)),
        drained: Arc::new(Notify::new()),
    };
    let out = ClientOut {
        tx: out_tx,
        counter: counter.clone(),
    };
    let writer = tokio::spawn(write_loop(client_out, out_rx, counter.clone()));
    let mut client = FramedReader::new(client_in, config.max_line_bytes);
    let command_line = config.command.join(" ");

    let mut router = Router {
        ctx: ResolveContext {
            cwd: config.cwd.clone(),
            home: config.home.clone(),
        },
        scope: config.scope.clone(),
        pinning: Pinning::new(config.pin, &config.name, config.home.clone()),
        config,
        log,
        out,
        tools: HashMap::new(),
        tools_learned: false,
        fetching: None,
        fetch_failed: false,
        tools_dirty: false,
        coalesced: 0,
        fetch_pages: 0,
        pending: HashMap::new(),
        own_to_server: HashMap::new(),
        cancelled: VecDeque::new(),
        own_roots: None,
        roots_dirty: false,
        server_requests: HashMap::new(),
        stale_server_requests: Default::default(),
        held: VecDeque::new(),
        held_bytes: 0,
        violations: Violations::default(),
        client_meta: None,
        saw_initialize: false,
        init_params: None,
        client_roots: false,
        paused: false,
        respawn: None,
        refetch_after_replay: false,
        streaming: None,
        server_spoke: false,
        kernel_stops_writes: false,
    };
    let mut child = match spawned {
        Ok(mut child) => {
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
                .serve_dead_server(&mut client, &msg, &explanation, &shutdown)
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
    // Once the session is ending: when to escalate to SIGTERM, then SIGKILL.
    let mut deadline: Option<(Instant, u8)> = None;
    let grace = router.config.grace;

    loop {
        let fetch_deadline = router.fetching.map(|t| t + FETCH_TIMEOUT);
        tokio::select! {
            _ = shutdown.cancelled(), if deadline.is_none() => {
                tracing::info!("signal received: shutting the server down");
                client_eof = true;
                child.close_stdin();
                deadline = Some((Instant::now() + grace, 0));
            }
            // A client that sends but does not read is not read either, past a larger mark:
            // the proxy's own answers to it are queued too.
            frame = client.next_frame(), if !client_eof && !counter.over(OUT_CLIENT_HIGH_WATER) => {
                match frame {
                    Ok(Some(frame)) => router.on_client_frame(frame, &mut child),
                    Ok(None) | Err(_) => {
                        tracing::debug!("client closed its side: closing the server's stdin");
                        client_eof = true;
                        child.close_stdin();
                        if deadline.is_none() {
                            deadline = Some((Instant::now() + grace, 0));
                        }
                    }
                }
            }
            // Backpressure: while the client is slow to read, stop reading the server (it
            // blocks on its pipe) instead of queueing its output in our memory.
            _ = counter.drained.notified(), if counter.backlogged() => {}
            frame = child.stdout.next_frame(), if !child.stdout_eof && !counter.backlogged() => {
                match frame {
                    Ok(Some(frame)) => router.on_server_frame(frame, &mut child),
                    Ok(None) | Err(_) => {
                        child.stdout_eof = true;
                        if deadline.is_none() {
                            deadline = Some((Instant::now() + grace, 0));
                        }
                    }
                }
            }
            status = child.process.wait(), if child.stdout_eof && child.status.is_none() => {
                match status {
                    Ok(status) => child.status = Some(status),
                    Err(err) => return Err(ProxyError::Wait(err)),
                }
            }
            _ = sleep_until_opt(fetch_deadline) => {
                tracing::warn!("the server did not answer the proxy's tools/list in time; judging calls by their values");
                router.fetching = None;
                router.fetch_failed = true;
                router.release_held(&mut child);
            }
            _ = sleep_until_opt(deadline.map(|d| d.0)) => {
                if let Some((_, stage)) = deadline {
                    if stage == 0 {
                        tracing::info!(pid = child.pid, "server still running: SIGTERM");
                        child.terminate();
                        deadline = Some((Instant::now() + grace, 1));
                    } else {
                        tracing::warn!(pid = child.pid, "server ignored SIGTERM: SIGKILL");
                        let _ = child.process.start_kill();
                        deadline = Some((Instant::now() + Duration::from_secs(3600), 2));
                    }
                }
            }
        }
        if let Some(scope) = router.respawn.take() {
            if let Some(old) = router.respawn_server(scope, &mut child) {
                reapers.retain(|r: &tokio::task::JoinHandle<()>| !r.is_finished());
                reapers.push(tokio::spawn(reap(old, grace)));
            }
        }
        if child.status.is_some() {
            break;
        }
        // The server's stdout closed but it has not exited: keep waiting (escalation above).
        // The client may still be talking: its requests get errors once the server is gone.
    }

    let status = child.status.map(exit_code).unwrap_or(1);
    let owed = router.owes_answers();
    let start_failure = !router.server_spoke && !client_eof;
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
        let msg = format!(
            "the MCP server exited (status {status}) before answering: {}",
            explanation.text()
        );
        router.report_failure(&msg, Some(status), &explanation);
        router.fail_in_flight(&msg, &explanation);
        if start_failure {
            // A server that died before it said anything: the client's first request may not
            // have arrived yet. Answer it (and anything after) instead of leaving the client
            // with a closed pipe and no reason.
            router
                .serve_dead_server(&mut client, &msg, &explanation, &shutdown)
                .await;
        }
    }
    drop(router);
    for reaper in reapers {
        let _ = reaper.await;
    }
    let _ = writer.await;
    Ok(status)
}

fn enforcement_word(e: crate::sandbox::Enforcement) -> &'static str {
    match e {
        crate::sandbox::Enforcement::Fully => "fully enforced",
        crate::sandbox::Enforcement::Partially => "PARTIALLY enforced",
        crate::sandbox::Enforcement::NotEnforced => "NOT enforced",
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Above this many bytes queued for the client, the server is not read.
const OUT_HIGH_WATER: usize = 1024 * 1024;

/// Above this many bytes queued for the client, the client is not read either (its own
/// answers pile up otherwise). Reading resumes below [`OUT_HIGH_WATER`].
const OUT_CLIENT_HIGH_WATER: usize = 8 * 1024 * 1024;

/// Bytes queued for the client, shared by the router (adds) and the writer (subtracts).
#[derive(Clone)]
struct OutCounter {
    queued: Arc<AtomicUsize>,
    drained: Arc<Notify>,
}

impl OutCounter {
    fn backlogged(&self) -> bool {
        self.over(OUT_HIGH_WATER)
    }

    fn over(&self, mark: usize) -> bool {
        self.queued.load(Ordering::Relaxed) >= mark
    }

    fn written(&self, n: usize) {
        let before = self.queued.fetch_sub(n, Ordering::Relaxed);
        if before >= OUT_HIGH_WATER && before - n < OUT_HIGH_WATER {
            self.drained.notify_one();
        }
    }
}

/// The queue of messages to the client.
struct ClientOut {
    tx: mpsc::UnboundedSender<Bytes>,
    counter: OutCounter,
}

impl ClientOut {
    fn send(&self, msg: Bytes) {
        let n = msg.len();
        self.counter.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.send(msg).is_err() {
            self.counter.queued.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    counter: OutCounter,
) {
    // A client that stopped reading must not stall the session: writes fail, messages are
    // dropped, and the counter still goes down so the server keeps being read.
    let mut broken = false;
    while let Some(msg) = rx.recv().await {
        if !broken && w.write_all(&msg).await.is_err() {
            broken = true;
        }
        counter.written(msg.len());
        while let Ok(more) = rx.try_recv() {
            if !broken && w.write_all(&more).await.is_err() {
                broken = true;
            }
            counter.written(more.len());
        }
        if !broken && w.flush().await.is_err() {
            broken = true;
        }
    }
    let _ = w.flush().await;
}

/// A line with its terminator: frames at EOF may lack one, and the peer needs it.
fn terminated(line: Bytes) -> Bytes {
    if line.ends_with(b"\n") {
        line
    } else {
        let mut v = line.to_vec();
        v.push(b'\n');
        Bytes::from(v)
    }
}

impl Router {
    fn reply(&self, line: Vec<u8>) {
        self.out.send(Bytes::from(line));
    }

    /// Keep a client frame for later, in order; a full queue refuses it (fail closed).
    fn hold(&mut self, line: Bytes) {
        if self.held.len() >= integrity::MAX_HELD
            || self.held_bytes + line.len() > integrity::MAX_HELD_BYTES
        {
            let msg = format!(
                "mcpjail is holding {} messages ({} bytes) while it learns the server's tools \
                 or restarts it, its limit; this one was refused: retry it later",
                self.held.len(),
                self.held_bytes
            );
            match message::parse_envelope(Frame::content(&line)) {
                Ok(env) if env.method.is_some() && env.id.is_some() => {
                    tracing::warn!("{msg}");
                    self.reply(message::error_line(
                        env.id.map(|id| id.get()),
                        code::INTERNAL_ERROR,
                        &msg,
                        None,
                    ));
                }
                _ => tracing::error!("{msg} (a notification or response: dropped)"),
            }
            return;
        }
        self.held_bytes += line.len();
        self.held.push_back(line);
    }

    fn take_held(&mut self) -> Vec<Bytes> {
        self.held_bytes = 0;
        self.held.drain(..).collect()
    }

    /// Is one of our `tools/list` pages in flight at the server?
    fn fetch_in_flight(&self) -> bool {
        self.own_to_server.values().any(|o| *o == Own::ToolsList)
    }

    // ---------------------------------------------------------------- client → server

    fn on_client_frame(&mut self, frame: Frame, child: &mut ServerChild) {
        let line = match frame {
            Frame::TooLong { len } => {
                tracing::warn!(len, "client message over --max-line-bytes refused");
                self.reply(message::error_line(
                    None,
                    code::INVALID_REQUEST,
                    &format!(
                        "message of {len} bytes is over the proxy's limit of {} bytes (--max-line-bytes)",
                        self.config.max_line_bytes
                    ),
                    None,
                ));
                return;
            }
            Frame::Line(line) => line,
            // The client reader has no streaming threshold: every client message is judged
            // whole, so these never occur.
            Frame::LongLine | Frame::Chunk(_) | Frame::ChunkEnd(_) => return,
        };
        if self.paused || !self.held.is_empty() {
            // Keep the client's order: nothing overtakes a held call, and nothing reaches a
            // server that is still being re-initialised after a respawn.
            self.hold(line);
            return;
        }
        let content = Frame::content(&line);
        let env = match message::parse_envelope(content) {
            Ok(env) => env,
            Err(bad) => {
                // Fail closed, but answer the request's own id when it can be read.
                self.refuse_malformed(&bad, message::recover_id(content).as_deref());
                return;
            }
        };
        let raw_id = env.id.map(|id| id.get().to_string());
        let Some(method) = env.method.as_deref() else {
            // A response to a server→client request (roots/list, sampling, elicitation).
            if env.id.is_none() || (env.result.is_none() && env.error.is_none()) {
                self.refuse_malformed(
                    &Malformed::Invalid("a message without a method must be a response".into()),
                    raw_id.as_deref(),
                );
                return;
            }
            let key = env.id.map(message::id_key).unwrap_or_default();
            if self.own_roots.as_deref() == Some(key.as_str()) {
                // The answer to the proxy's own roots/list (which only the client was sent).
                self.own_roots = None;
                if let Some(result) = env.result {
                    self.on_roots(result.get());
                }
                if std::mem::take(&mut self.roots_dirty) {
                    self.ask_roots();
                }
                return;
            }
            match self.server_requests.remove(&key) {
                Some(is_roots) => {
                    child.send(terminated(line.clone()));
                    if is_roots {
                        if let Some(result) = env.result {
                            self.on_roots(result.get());
                        }
                    }
                }
                None if self.stale_server_requests.remove(&key) => {
                    tracing::debug!("the client answered a request of a replaced server: dropped");
                }
                None => {
                    let id = integrity::shown_id(raw_id.as_deref().unwrap_or("null"));
                    self.violations.report(
                        &self.log,
                        Side::Client,
                        &format!("a response to id {id}, which no server request is waiting for: dropped"),
                    );
                }
            }
            return;
        };
        let method = method.to_string();
        if let Some(id) = env.id {
            // A response from the server is matched by id alone: an id that is already in
            // flight (ours or the client's), or too long to keep, cannot be told apart.
            let refused = if id.get().len() > integrity::MAX_ID_BYTES {
                Some(format!(
                    "a request id of {} bytes is over the proxy's limit of {} bytes",
                    id.get().len(),
                    integrity::MAX_ID_BYTES
                ))
            } else {
                let key = message::id_key(id);
                if self.own_to_server.contains_key(&key) {
                    Some(format!(
                        "request id {} is in use by the proxy; use another id",
                        id.get()
                    ))
                } else if self.pending.contains_key(&key) {
                    Some(format!(
                        "request id {} is still in flight; use another id",
                        id.get()
                    ))
                } else {
                    None
                }
            };
            if let Some(why) = refused {
                self.refuse_malformed(&Malformed::Invalid(why), raw_id.as_deref());
                return;
            }
            if self.pending.len() >= integrity::MAX_PENDING {
                let msg = format!(
                    "mcpjail has {} requests in flight at the server, its limit; this one was \
                     refused: retry it once earlier ones are answered",
                    self.pending.len()
                );
                tracing::warn!("{msg}");
                self.reply(message::error_line(
                    raw_id.as_deref(),
                    code::INTERNAL_ERROR,
                    &msg,
                    None,
                ));
                return;
            }
        }
        let kind = match method.as_str() {
            "initialize" => Kind::Initialize,
            "server/discover" => Kind::Discover,
            "tools/list" => Kind::ToolsList,
            "tools/call" => Kind::ToolsCall,
            "resources/read" => Kind::ResourcesRead,
            _ => Kind::Other,
        };
        if !self.saw_initialize {
            if let Some(meta) = env
                .params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| p.get("_meta").cloned())
            {
                self.client_meta = Some(meta);
            }
        }
        match kind {
            Kind::ToolsCall | Kind::ResourcesRead => {
                self.on_checked_request(line.clone(), &env, kind, child);
            }
            _ => {
                if kind == Kind::Initialize {
                    self.saw_initialize = true;
                    let params: Option<Value> =
                        env.params.and_then(|p| serde_json::from_str(p.get()).ok());
                    self.client_roots = params
                        .as_ref()
                        .and_then(|p| p.pointer("/capabilities/roots"))
                        .is_some_and(|r| !r.is_null());
                    self.init_params = params;
                }
                child.send(terminated(line.clone()));
                if let Some(id) = env.id {
                    self.pending.insert(
                        message::id_key(id),
                        Pending {
                            raw_id: id.get().to_string(),
                            kind,
                            started: Instant::now(),
                            record: None,
                        },
                    );
                }
                if method == "notifications/initialized" {
                    self.start_fetch(child);
                    self.ask_roots();
                }
                if method == "notifications/roots/list_changed" {
                    self.ask_roots();
                }
                if method == "notifications/cancelled" {
                    if let Some(key) = cancelled_request(env.params) {
                        self.on_client_cancelled(key);
                    }
                }
            }
        }
    }

    /// The client cancelled a request: the server may never answer it, so it no longer
    /// counts against the in-flight limit.
    fn on_client_cancelled(&mut self, key: String) {
        let Some(p) = self.pending.remove(&key) else {
            return;
        };
        if let Some(mut rec) = p.record {
            rec.latency = p.started.elapsed();
            rec.outcome = "cancelled";
            self.log.record(&rec);
        }
        if self.cancelled.len() >= integrity::MAX_PENDING {
            self.cancelled.pop_front();
        }
        self.cancelled.push_back(key);
    }

    fn refuse_malformed(&self, bad: &Malformed, id: Option<&str>) {
        tracing::warn!("refused a client message: {}", bad.message());
        self.reply(message::error_line(id, bad.code(), bad.message(), None));
    }

    fn on_checked_request(
        &mut self,
        line: Bytes,
        env: &Envelope<'_>,
        kind: Kind,
        child: &mut ServerChild,
    ) {
        let raw_id = env.id.map(|id| id.get().to_string());
        let started = Instant::now();
        let params_text = env.params.map(|p| p.get()).unwrap_or("{}");
        // Two equal keys could be read one way here and another way by the server.
        let params: Value = match message::parse_params(params_text) {
            Ok(v) => v,
            Err(message::ParamsError::DuplicateKey(key)) => {
                let msg = format!("duplicate key `{key}` in params: refused, because the proxy and the server could read different values");
                self.answer_invalid_params(raw_id.as_deref(), &msg, kind, started);
                return;
            }
            Err(message::ParamsError::Invalid(e)) => {
                self.refuse_malformed(
                    &Malformed::Invalid(format!("bad params: {e}")),
                    raw_id.as_deref(),
                );
                return;
            }
        };
        let (verdict, tool, arguments) = if kind == Kind::ToolsCall {
            let Some(name) = params.get("name").and_then(Value::as_str) else {
                self.answer_invalid_params(
                    raw_id.as_deref(),
                    "tools/call needs a string `name`",
                    kind,
                    started,
                );
                return;
            };
            let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
            let arguments = if arguments.is_null() {
                json!({})
            } else {
                arguments
            };
            if !arguments.is_object() {
                self.answer_invalid_params(
                    raw_id.as_deref(),
                    "tools/call `arguments` must be an object",
                    kind,
                    started,
                );
                return;
            }
            let known = self.tools.get(name);
            if (known.is_none() || self.pinning.judges_calls_after_listing())
                && !self.fetch_failed
                && (self.fetching.is_some() || !self.tools_learned)
            {
                // Judge it with the schema, not guesses: wait for the tool list.
                self.hold(line);
                self.start_fetch(child);
                return;
            }
            let forced = self.config.read_only_tools.iter().any(|t| t == name);
            let verdict = match self.pinning.refusal(name) {
                Some(refusal) => Verdict {
                    paths: Vec::new(),
                    refusal: Some(refusal),
                },
                None => check::check_tool_call(
                    &self.scope,
                    &self.ctx,
                    known,
                    forced,
                    self.kernel_stops_writes,
                    &arguments,
                ),
            };
            (verdict, Some(name.to_string()), Some(arguments))
        } else {
            let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                self.answer_invalid_params(
                    raw_id.as_deref(),
                    "resources/read needs a string `uri`",
                    kind,
                    started,
                );
                return;
            };
            if !uri
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("file:"))
            {
                // Not a file: the proxy has nothing to check; the server answers.
                self.forward_request(line, env, kind, started, None, child);
                return;
            }
            (
                check::check_resource_read(&self.scope, &self.ctx, uri),
                None,
                Some(json!({ "uri": uri })),
            )
        };
        let record = self.record_for(&raw_id, kind, tool, &verdict, arguments);
        match verdict.refusal {
            None => self.forward_request(line, env, kind, started, record, child),
            Some(refusal) => {
                let stateless = super::era::is_stateless(&params);
                self.answer_denial(
                    raw_id.as_deref(),
                    &refusal,
                    kind,
                    started,
                    record,
                    stateless,
                )
            }
        }
    }

    fn record_for(
        &self,
        raw_id: &Option<String>,
        kind: Kind,
        tool: Option<String>,
        verdict: &Verdict,
        arguments: Option<Value>,
    ) -> Option<CallRecord> {
        if !self.log.enabled() {
            return None;
        }
        Some(CallRecord {
            id: raw_id.clone().unwrap_or_default(),
            method: if kind == Kind::ToolsCall {
                "tools/call".into()
            } else {
                "resources/read".into()
            },
            tool,
            paths: verdict
                .paths
                .iter()
                .map(|p| {
                    p.resolved
                        .as_ref()
                        .map(|r| r.display().to_string())
                        .unwrap_or_else(|| p.raw.clone())
                })
                .collect(),
            allowed: verdict.allowed(),
            reason: verdict.refusal.as_ref().map(|r| r.reason.clone()),
            latency: Duration::ZERO,
            result_bytes: 0,
            arguments,
            outcome: "ok",
            jail_hint: None,
        })
    }

    fn forward_request(
        &mut self,
        line: Bytes,
        env: &Envelope<'_>,
        kind: Kind,
        started: Instant,
        record: Option<CallRecord>,
        child: &mut ServerChild,
    ) {
        child.send(terminated(line));
        if let Some(id) = env.id {
            self.pending.insert(
                message::id_key(id),
                Pending {
                    raw_id: id.get().to_string(),
                    kind,
                    started,
                    record,
                },
            );
        }
    }

    fn answer_denial(
        &mut self,
        raw_id: Option<&str>,
        refusal: &Refusal,
        kind: Kind,
        started: Instant,
        record: Option<CallRecord>,
        stateless: bool,
    ) {
        tracing::info!("denied: {}", refusal.text());
        let Some(id) = raw_id else {
            // A notification cannot be answered; it is simply not forwarded.
            return;
        };
        let line = if kind == Kind::ToolsCall && self.config.deny_as == DenyMode::Result {
            message::result_line(
                id,
                super::era::own_result(refusal.as_tool_result(), stateless),
            )
        } else {
            message::error_line(
                Some(id),
                code::INVALID_PARAMS,
                &refusal.text(),
                Some(json!({"mcpjail/denial": refusal.details()})),
            )
        };
        if let Some(mut rec) = record {
            rec.latency = started.elapsed();
            rec.result_bytes = line.len();
            rec.outcome = "denied";
            self.log.record(&rec);
        }
        self.reply(line);
    }

    fn answer_invalid_params(
        &mut self,
        raw_id: Option<&str>,
        msg: &str,
        kind: Kind,
        started: Instant,
    ) {
        let refusal = check::unjudgeable(msg);
        let line = message::error_line(
            raw_id,
            code::INVALID_PARAMS,
            &refusal.text(),
            Some(json!({"mcpjail/denial": refusal.details()})),
        );
        if self.log.enabled() {
            self.log.record(&CallRecord {
                id: raw_id.unwrap_or_default().to_string(),
                method: if kind == Kind::ToolsCall {
                    "tools/call"
                } else {
                    "resources/read"
                }
                .into(),
                tool: None,
                paths: Vec::new(),
                allowed: false,
                reason: Some(msg.to_string()),
                latency: started.elapsed(),
                result_bytes: line.len(),
                arguments: None,
                outcome: "denied",
                jail_hint: None,
            });
        }
        tracing::warn!("refused a call: {msg}");
        self.reply(line);
    }

    /// Ask the server for its tools with a proxy-owned id (answered to the proxy only),
    /// unless a fetch is already in flight: there is never more than one.
    fn start_fetch(&mut self, child: &mut ServerChild) {
        if self.fetch_in_flight() {
            return;
        }
        self.fetch_page(None, child);
    }

    fn fetch_page(&mut self, cursor: Option<Value>, child: &mut ServerChild) {
        if cursor.is_none() {
            self.pinning.begin_own_listing();
            self.fetch_pages = 0;
        }
        self.fetch_pages += 1;
        let id = integrity::own_id();
        let mut params = serde_json::Map::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), cursor);
        }
        if !self.saw_initialize {
            if let Some(meta) = &self.client_meta {
                params.insert("_meta".into(), meta.clone());
            }
        }
        let req = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params});
        let mut line = req.to_string().into_bytes();
        line.push(b'\n');
        self.own_to_server
            .insert(Value::String(id).to_string(), Own::ToolsList);
        self.fetching.get_or_insert_with(Instant::now);
        child.send(Bytes::from(line));
    }

    /// Re-run held client frames now that the tool list is known (or will not be).
    fn release_held(&mut self, child: &mut ServerChild) {
        let held = self.take_held();
        // Each frame is judged again; one that still has to wait goes back into the queue, and
        // everything after it queues behind it, so the client's order is kept.
        for line in held {
            self.on_client_frame(Frame::Line(line), child);
        }
    }

    /// Learn one `tools/list` page (`own`: the proxy's fetch, else the client's request).
    fn learn_tools(&mut self, result: &str, own: bool) -> Option<Value> {
        let result: Value = serde_json::from_str(result).ok()?;
        let next = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if let Some(tools) = result.get("tools").and_then(Value::as_array) {
            self.pinning
                .observe_page(tools, own, next.is_none(), &self.log);
            for tool in tools {
                if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    if self.tools.len() >= integrity::MAX_TOOLS && !self.tools.contains_key(name) {
                        self.violations.report(
                            &self.log,
                            Side::Server,
                            &format!(
                                "more than {} tools listed; `{}` and later new tools are \
                                 judged by their values only",
                                integrity::MAX_TOOLS,
                                integrity::shown_id(name)
                            ),
                        );
                        continue;
                    }
                }
                if let Some(mut info) = ToolInfo::from_tool(tool) {
                    // A policy file's read-only marking holds whatever the server says.
                    if self.config.read_only_tools.contains(&info.name) {
                        info.read_only = true;
                    }
                    self.tools.insert(info.name.clone(), info);
                } else if let Some(name) = tool.get("name").and_then(Value::as_str) {
                    // A tool we cannot read the schema of is judged by value heuristics.
                    self.tools.remove(name);
                }
            }
            self.tools_learned = true;
        }
        next
    }

    // ---------------------------------------------------------------- client roots

    /// Ask the client for its roots (only if it said it has them), with a proxy-owned id —
    /// once at a time: asked again while unanswered, it asks once more after the answer.
    fn ask_roots(&mut self) {
        if !self.client_roots {
            return;
        }
        if self.own_roots.is_some() {
            self.roots_dirty = true;
            return;
        }
        let id = integrity::own_id();
        self.own_roots = Some(Value::String(id.clone()).to_string());
        self.reply(
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"})
            )
            .into_bytes(),
        );
    }

    /// The client's roots: narrow the scope to them, and ask for a respawn when that makes the
    /// running jail too wide. Narrowing starts from the current scope, so a later, wider set
    /// of roots can never widen it (that takes a restart the user asks for). An empty list
    /// means the client has no workspace to offer, not "allow nothing", and changes nothing.
    fn on_roots(&mut self, result: &str) {
        let Ok(result) = serde_json::from_str::<Value>(result) else {
            return;
        };
        let Some(list) = result.get("roots").and_then(Value::as_array) else {
            return;
        };
        let mut roots = Vec::new();
        for root in list {
            let Some(uri) = root.get("uri").and_then(Value::as_str) else {
                continue;
            };
            match crate::policy::resolve(uri, &self.ctx) {
                Ok(path) => roots.push(path),
                Err(err) => tracing::warn!("ignoring client root {uri}: {err}"),
            }
        }
        if roots.is_empty() {
            return;
        }
        let narrowed = self.scope.narrowed_to(&roots);
        if narrowed == self.scope || !self.scope.covers(&narrowed) {
            return;
        }
        let shown: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        self.log.note(&format!(
            "client roots {} narrow the scope: respawning the server under a narrower jail",
            shown.join(", ")
        ));
        self.scope = narrowed.clone();
        self.respawn = Some(narrowed);
    }

    /// Start a new server under `scope`'s jail, replay the client's handshake to it, and hand
    /// back the old one for reaping. Requests the old server had not answered get an error
    /// (it is killed; replaying them could repeat side effects the old server already had).
    fn respawn_server(&mut self, scope: Scope, child: &mut ServerChild) -> Option<ServerChild> {
        let cfg = &self.config;
        let spawned = crate::sandbox::prepare(&scope, &cfg.command, &cfg.cwd, &cfg.jail)
            .map_err(|e| e.to_string())
            .and_then(|jail| {
                for layer in &jail.report().layers {
                    self.log.note(&format!(
                        "jail {}: {} ({})",
                        layer.layer,
                        enforcement_word(layer.enforcement),
                        layer.detail
                    ));
                }
                let mut child = ServerChild::spawn(jail.command(), cfg.max_line_bytes)
                    .map_err(|e| e.to_string())?;
                child.jail = Some(jail);
                Ok(child)
            });
        let new_child = match spawned {
            Ok(c) => c,
            Err(err) => {
                // The checks already use the narrower scope; the old jail stays (it is wider,
                // never narrower than what is checked).
                tracing::error!("cannot respawn the server under the narrower jail: {err}");
                return None;
            }
        };
        self.kernel_stops_writes = new_child.jail.as_ref().is_some_and(kernel_stops_writes);
        let old = std::mem::replace(child, new_child);
        self.log.note(&format!(
            "server pid {} replaced by pid {}",
            old.pid, child.pid
        ));
        let msg = "mcpjail restarted the MCP server under a narrower jail (the client's roots \
                   changed) before it answered; retry the request";
        self.fail_pending("server_restarted", msg, None);
        // The old server's own requests (roots/list) and our fetches to it are void.
        let voided: Vec<String> = self.server_requests.drain().map(|(k, _)| k).collect();
        for key in voided {
            self.remember_stale(key);
        }
        self.cancelled.clear();
        let refetch = self.fetch_in_flight() || self.fetching.is_some();
        self.own_to_server.clear();
        self.fetching = None;
        self.tools_dirty = false;
        if let Some(params) = self.init_params.clone() {
            let id = integrity::own_id();
            self.own_to_server
                .insert(Value::String(id.clone()).to_string(), Own::ReplayInit);
            let req = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params});
            child.send(Bytes::from(format!("{req}\n").into_bytes()));
            self.paused = true;
            self.refetch_after_replay = refetch;
        } else if refetch {
            self.fetch_page(None, child);
        }
        Some(old)
    }

    // ---------------------------------------------------------------- server → client

    fn on_server_frame(&mut self, frame: Frame, child: &mut ServerChild) {
        self.server_spoke = true;
        // What the server wrote to stderr before this message goes out before it.
        child.sync_stderr();
        let line = match frame {
            Frame::TooLong { len } => {
                tracing::error!(
                    len,
                    "the server sent a message over --max-line-bytes; it was dropped"
                );
                return;
            }
            Frame::LongLine => {
                self.maybe_stream(child);
                return;
            }
            Frame::Chunk(piece) => {
                self.forward_streamed(piece);
                return;
            }
            Frame::ChunkEnd(piece) => {
                self.forward_streamed(terminated(piece));
                let Some(st) = self.streaming.take() else {
                    return;
                };
                if let Some(p) = self.pending.remove(&st.key) {
                    if let Some(mut rec) = p.record {
                        rec.latency = p.started.elapsed();
                        rec.result_bytes = st.bytes;
                        if st.cut {
                            rec.outcome = "error";
                        }
                        self.log.record(&rec);
                    }
                    if st.cut {
                        self.reply(message::error_line(
                            Some(&p.raw_id),
                            code::INTERNAL_ERROR,
                            "mcpjail cut off the server's answer: it was not a well-formed \
                             JSON-RPC response (a second `id` or a `method` key)",
                            None,
                        ));
                    }
                }
                return;
            }
            Frame::Line(line) => line,
        };
        let env = match message::parse_envelope(Frame::content(&line)) {
            Ok(env) => env,
            Err(bad) => {
                // A line the proxy cannot route could still be read by the client as an
                // answer (two `id` keys, say): it does not pass.
                self.violations.report(
                    &self.log,
                    Side::Server,
                    &format!(
                        "a line that is not a JSON-RPC message ({}): dropped",
                        bad.message()
                    ),
                );
                return;
            }
        };
        if let Some(method) = env.method.as_deref() {
            if method == "notifications/tools/list_changed" {
                self.out.send(terminated(line.clone()));
                self.on_tools_changed(child);
                return;
            }
            if method == "notifications/cancelled" {
                // The server gave up on one of its requests: the client need not answer it.
                if let Some(key) = cancelled_request(env.params) {
                    if self.server_requests.remove(&key).is_some() {
                        self.remember_stale(key);
                    }
                }
            }
            if let Some(id) = env.id {
                let is_roots = method == "roots/list";
                if !self.track_server_request(id, is_roots, child) {
                    return;
                }
            }
            self.out.send(terminated(line.clone()));
            return;
        }
        let Some(id) = env.id else {
            self.violations.report(
                &self.log,
                Side::Server,
                "a message with neither a method nor an id: dropped",
            );
            return;
        };
        let key = message::id_key(id);
        if let Some(own) = self.own_to_server.remove(&key) {
            match own {
                Own::ToolsList => self.on_own_tools_page(env.result.map(|r| r.get()), child),
                Own::ReplayInit => {
                    if env.error.is_some() {
                        tracing::error!("the respawned server refused the replayed initialize");
                    }
                    let mut note =
                        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
                    note.push(b'\n');
                    child.send(Bytes::from(note));
                    self.paused = false;
                    if std::mem::take(&mut self.refetch_after_replay) {
                        self.start_fetch(child);
                    }
                    self.release_held(child);
                }
            }
            return;
        }
        let Some(p) = self.pending.remove(&key) else {
            if let Some(i) = self.cancelled.iter().position(|k| *k == key) {
                // Cancelled by the client: the answer is too late to matter (clients ignore
                // it too).
                self.cancelled.remove(i);
                tracing::debug!("the server answered a cancelled request: dropped");
                return;
            }
            // Not a request the server was sent, or one it answered already: a forged or
            // duplicate answer (to a call the proxy denied or still holds, to the proxy's
            // roots/list, which went to the client) never reaches the client.
            self.violations.report(
                &self.log,
                Side::Server,
                &format!(
                    "a response to id {}, which is not a request the server was sent and has \
                     not answered: dropped",
                    integrity::shown_id(id.get())
                ),
            );
            return;
        };
        let discover_done = p.kind == Kind::Discover;
        let mut rewritten = None;
        {
            if p.kind == Kind::ToolsList {
                if let Some(result) = env.result {
                    let _ = self.learn_tools(result.get(), false);
                }
                // --pin block: a changed tool must be hidden (see Pinning::hide_unapproved).
                rewritten = self.pinning.hide_unapproved(Frame::content(&line));
            }
            let mut jail_hint = None;
            if p.kind == Kind::ToolsCall && env.result.is_some() {
                // A result that reports a permission error on a path outside the jail gets the
                // fix appended (see `explain_jail_refusals`); every other result passes as is.
                if let Some((line, hint)) = self.explain_jail_refusals(&line, child) {
                    rewritten = Some(line);
                    jail_hint = Some(hint);
                }
            }
            if let Some(mut rec) = p.record {
                rec.jail_hint = jail_hint;
                rec.latency = p.started.elapsed();
                rec.result_bytes = rewritten.as_ref().map_or(line.len(), |r| r.len());
                if env.error.is_some() {
                    rec.outcome = "error";
                }
                self.log.record(&rec);
            }
        }
        self.out.send(rewritten.unwrap_or_else(|| terminated(line)));
        if discover_done && !self.saw_initialize && !self.tools_learned {
            self.start_fetch(child);
        }
    }

    /// `notifications/tools/list_changed`: fetch the list again — or, with a fetch in flight,
    /// once more after it, however many notifications arrive meanwhile.
    fn on_tools_changed(&mut self, child: &mut ServerChild) {
        self.fetch_failed = false;
        if self.fetch_in_flight() {
            self.tools_dirty = true;
            self.coalesced += 1;
            return;
        }
        self.fetching = None;
        self.fetch_page(None, child);
    }

    /// A page of our own tools/list (`None`: the server refused it).
    fn on_own_tools_page(&mut self, result: Option<&str>, child: &mut ServerChild) {
        let next = match result {
            Some(result) => self.learn_tools(result, true),
            None => {
                tracing::warn!(
                    "the server refused the proxy's tools/list; judging calls by their values"
                );
                self.fetch_failed = true;
                None
            }
        };
        if std::mem::take(&mut self.tools_dirty) {
            // The list changed while this fetch was in flight: start over, once. Calls keep
            // waiting, but no longer than FETCH_TIMEOUT from the first fetch.
            if self.coalesced >= 1000 {
                self.violations.report(
                    &self.log,
                    Side::Server,
                    &format!(
                        "{} tools/list_changed notifications during one tools/list fetch \
                         (coalesced into one more fetch)",
                        self.coalesced
                    ),
                );
            }
            self.coalesced = 0;
            self.fetch_failed = false;
            self.fetch_page(None, child);
            return;
        }
        match next {
            Some(_) if self.fetch_pages >= integrity::MAX_FETCH_PAGES => {
                self.violations.report(
                    &self.log,
                    Side::Server,
                    &format!(
                        "its tool list goes on past {} pages: the rest is not fetched",
                        integrity::MAX_FETCH_PAGES
                    ),
                );
                self.fetching = None;
                self.release_held(child);
            }
            Some(cursor) if !self.fetch_failed => self.fetch_page(Some(cursor), child),
            _ => {
                self.fetching = None;
                self.release_held(child);
            }
        }
    }

    /// A server→client request: remember its id so only the client's answer to it goes back.
    /// `false`: it was refused (and reported) and must not be forwarded.
    fn track_server_request(
        &mut self,
        id: &serde_json::value::RawValue,
        is_roots: bool,
        child: &mut ServerChild,
    ) -> bool {
        if id.get().len() > integrity::MAX_ID_BYTES {
            self.violations.report(
                &self.log,
                Side::Server,
                &format!(
                    "a request id of {} bytes (limit {}): dropped",
                    id.get().len(),
                    integrity::MAX_ID_BYTES
                ),
            );
            return false;
        }
        let key = message::id_key(id);
        if self.server_requests.contains_key(&key) || self.own_roots.as_ref() == Some(&key) {
            self.violations.report(
                &self.log,
                Side::Server,
                &format!(
                    "a request with id {}, which is already in flight to the client: dropped",
                    integrity::shown_id(id.get())
                ),
            );
            return false;
        }
        if self.server_requests.len() >= integrity::MAX_SERVER_REQUESTS {
            self.violations.report(
                &self.log,
                Side::Server,
                &format!(
                    "more than {} requests to the client unanswered: refused",
                    integrity::MAX_SERVER_REQUESTS
                ),
            );
            child.send(Bytes::from(message::error_line(
                Some(id.get()),
                code::INTERNAL_ERROR,
                "mcpjail: too many requests to the client are unanswered; retry later",
                None,
            )));
            return false;
        }
        self.stale_server_requests.remove(&key);
        self.server_requests.insert(key, is_roots);
        true
    }

    /// A server request the client may still answer, though no one is waiting any more.
    fn remember_stale(&mut self, key: String) {
        if self.stale_server_requests.len() >= integrity::MAX_SERVER_REQUESTS {
            self.stale_server_requests.clear();
        }
        self.stale_server_requests.insert(key);
    }

    /// A `tools/call` result whose text reports a permission error on a path the jail does not
    /// grant (for the access it needed): the same result with one text item appended,
    /// "mcpjail: the jail refused <access> to <path>; <hint>", re-serialised, and the hints for
    /// the log. `None` — forward the original bytes — for every other result, including
    /// permission errors on paths inside the jail's grants (the server's own, not the jail's).
    fn explain_jail_refusals(&self, line: &[u8], child: &ServerChild) -> Option<(Bytes, String)> {
        let jail = child.jail.as_ref()?;
        if !crate::sandbox::mentions_permission_error(line) {
            return None;
        }
        let mut msg: Value = serde_json::from_slice(Frame::content(line)).ok()?;
        let is_error = msg.pointer("/result/isError") == Some(&Value::Bool(true));
        let content = msg.pointer_mut("/result/content")?.as_array_mut()?;
        let text = content
            .iter()
            .filter(|item| item.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|item| item.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        // Many servers report errors as plain text without `isError`, but a long successful
        // result is data (a log file that quotes someone else's permission error), not a
        // message about this call.
        if !is_error && text.len() > MAX_UNFLAGGED_ERROR_TEXT {
            return None;
        }
        let refused = crate::sandbox::refused_in(jail, &self.scope, &text);
        if refused.is_empty() {
            return None;
        }
        let mut hints = Vec::new();
        for r in &refused {
            let hint = format!("mcpjail: {}; {}", r.sentence(), r.hint());
            content.push(json!({"type": "text", "text": hint}));
            hints.push(hint);
        }
        let hints = hints.join(" | ");
        let mut out = serde_json::to_vec(&msg).ok()?;
        out.push(b'\n');
        Some((Bytes::from(out), hints))
    }

    /// Answer every request the server has not answered with an internal error (oldest first)
    /// and log each as `outcome`: the server that owed the answers is gone.
    fn fail_pending(&mut self, outcome: &'static str, msg: &str, data: Option<Value>) {
        let mut pending: Vec<Pending> = self.pending.drain().map(|(_, p)| p).collect();
        pending.sort_by_key(|p| p.started);
        for p in pending {
            if let Some(mut rec) = p.record {
                rec.latency = p.started.elapsed();
                rec.outcome = outcome;
                self.log.record(&rec);
            }
            self.reply(message::error_line(
                Some(&p.raw_id),
                code::INTERNAL_ERROR,
                msg,
                data.clone(),
            ));
        }
    }

    /// A server line is long and still arriving. If its beginning already shows it is a
    /// response to a client request (not to the proxy's own, not a tools/list to learn from),
    /// forward it piece by piece as it arrives instead of holding all of it: a 10 MiB result
    /// then costs neither 10 MiB of proxy memory nor a store-and-forward delay.
    fn maybe_stream(&mut self, child: &mut ServerChild) {
        let peek = message::peek_prefix(child.stdout.buffered());
        let (Some(raw_id), true, false) = (peek.id, peek.response, peek.method) else {
            return;
        };
        let key = match serde_json::from_str::<Value>(&raw_id) {
            Ok(v) => v.to_string(),
            Err(_) => return,
        };
        // Only an answer to a client request the server was sent streams; anything else
        // (ours, a tools/list to learn from, an id nobody is waiting for) is read whole.
        if !matches!(self.pending.get(&key), Some(p) if p.kind != Kind::ToolsList) {
            return;
        }
        let first = child.stdout.stream();
        self.streaming = Some(Streaming {
            key,
            bytes: 0,
            guard: Default::default(),
            cut: false,
        });
        self.forward_streamed(first);
    }

    /// Forward the next piece of a streamed response, unless its top-level keys show it is
    /// not one answer to the request it began as: then end the line the client has part of
    /// and drop the rest (the request is answered with an error when the line ends).
    fn forward_streamed(&mut self, piece: Bytes) {
        let Some(st) = self.streaming.as_mut() else {
            self.out.send(piece);
            return;
        };
        if st.cut {
            return;
        }
        if let Err(why) = st.guard.feed(&piece) {
            st.cut = true;
            let started = st.bytes > 0;
            let what = format!(
                "a streamed response to id {} with {why}: cut off after {} bytes",
                integrity::shown_id(&st.key),
                st.bytes
            );
            if started {
                self.out.send(Bytes::from_static(b"\n"));
            }
            self.violations.report(&self.log, Side::Server, &what);
            return;
        }
        st.bytes += piece.len();
        self.out.send(piece);
    }

    /// The server is gone: every request it will never answer gets an error carrying `msg`
    /// and, under `data`, the explanation's details.
    fn fail_in_flight(&mut self, msg: &str, explanation: &crate::sandbox::Explanation) {
        let data = failure_data(explanation);
        let held = self.take_held();
        for line in held {
            if let Ok(env) = message::parse_envelope(Frame::content(&line)) {
                if let (Some(id), Some(_)) = (env.id, env.method.as_deref()) {
                    self.reply(message::error_line(
                        Some(id.get()),
                        code::INTERNAL_ERROR,
                        msg,
                        Some(data.clone()),
                    ));
                }
            }
        }
        self.fail_pending("server_exited", msg, Some(data));
    }

    /// Are there client requests the server has not answered (forwarded or held)?
    fn owes_answers(&self) -> bool {
        !self.pending.is_empty() || !self.held.is_empty()
    }

    /// Tell the user why the server failed: `--log` (or stderr, through tracing, without it)
    /// and the audit log.
    fn report_failure(
        &self,
        msg: &str,
        status: Option<i32>,
        explanation: &crate::sandbox::Explanation,
    ) {
        if self.log.live() {
            self.log.note(msg);
        } else {
            tracing::warn!("{msg}");
        }
        let mut fields = explanation.to_json();
        if let Value::Object(map) = &mut fields {
            map.insert("status".into(), json!(status));
            map.insert("message".into(), json!(msg));
        }
        self.log.event("server_failed", fields);
    }

    /// The server is gone and never spoke: answer every request the client sends with `msg`
    /// until it closes its side (or a signal arrives). Notifications need no answer.
    async fn serve_dead_server<R: AsyncRead + Unpin>(
        &mut self,
        client: &mut FramedReader<R>,
        msg: &str,
        explanation: &crate::sandbox::Explanation,
        shutdown: &CancellationToken,
    ) {
        let data = failure_data(explanation);
        loop {
            // A client that sends without reading: wait until it has read its answers.
            while self.out.counter.over(OUT_CLIENT_HIGH_WATER) {
                self.out.counter.drained.notified().await;
            }
            let frame = tokio::select! {
                _ = shutdown.cancelled() => return,
                frame = client.next_frame() => frame,
            };
            let line = match frame {
                Ok(Some(Frame::Line(line))) => line,
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => return,
            };
            let Ok(env) = message::parse_envelope(Frame::content(&line)) else {
                continue;
            };
            if let (Some(id), Some(_)) = (env.id, env.method.as_deref()) {
                self.reply(message::error_line(
                    Some(id.get()),
                    code::INTERNAL_ERROR,
                    msg,
                    Some(data.clone()),
                ));
            }
        }
    }
}

/// The id key of the request a `notifications/cancelled` names (`params.requestId`).
fn cancelled_request(params: Option<&serde_json::value::RawValue>) -> Option<String> {
    let params: Value = serde_json::from_str(params?.get()).ok()?;
    let id = params.get("requestId")?;
    (id.is_string() || id.is_number()).then(|| id.to_string())
}

/// `error.data` for a request the failed server will never answer.
fn failure_data(explanation: &crate::sandbox::Explanation) -> Value {
    json!({ "mcpjail/server_failure": explanation.to_json() })
}

/// Is the jail's filesystem layer fully enforced (so the kernel refuses any write the scope's
/// write roots do not cover)?
fn kernel_stops_writes(jail: &crate::sandbox::PreparedJail) -> bool {
    jail.is_confined()
        && jail.report().layers.iter().any(|l| {
            (l.layer == "landlock_fs" || l.layer == "seatbelt")
                && l.enforcement == crate::sandbox::Enforcement::Fully
        })
}

/// End a replaced server: close its input, SIGTERM, and SIGKILL if it lingers; always reap.
async fn reap(mut old: ServerChild, grace: Duration) {
    old.close_stdin();
    old.terminate();
    match tokio::time::timeout(grace, old.process.wait()).await {
        Ok(_) => {}
        Err(_) => {
            let _ = old.process.start_kill();
            let _ = old.process.wait().await;
        }
    }
}
