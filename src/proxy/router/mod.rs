//! The connection: both directions of one session, decided message by message — what to
//! forward, what to answer itself and what to learn. One owner ([`Router`]) holds all routing
//! state; each job has its own module:
//!
//! * [`session`] — the loop over both sides, and how the session ends;
//! * [`client`] — client → server: validation, judging checked requests (parsed once, in
//!   [`call`]), holding frames that must wait;
//! * [`records`] — audit records, opened and closed in one place each;
//! * [`catalogue`] — the tool schemas and the proxy's own `tools/list` fetch;
//! * [`roots`] — the client's roots, the narrower scope and respawn;
//! * [`server`] — server → client: matching answers, learning, streaming long answers;
//! * [`failure`] — a server that dies: every request it owes is answered with why.
//!
//! Every table and queue here has a limit (see [`super::integrity`]).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant;

use bytes::Bytes;
use compact_str::CompactString;
use serde_json::Value;

use super::audit::{CallLog, CallRecord};
use super::child::ServerChild;
use super::integrity::Violations;
use super::pinning::Pinning;
use super::ProxyConfig;
use crate::policy::{ResolveContext, Scope};
use crate::sandbox::PreparedJail;

pub(crate) mod call;
mod catalogue;
mod client;
mod failure;
mod records;
mod roots;
mod server;
mod session;
#[cfg(test)]
mod tests;

pub use session::{run, start_before_runtime, EarlyStart};

/// Longest text of a result without `isError: true` that is still read as an error message
/// for jail hints.
const MAX_UNFLAGGED_ERROR_TEXT: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
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
    /// The id as the client wrote it, where that differs from its key in the table (`None`:
    /// the key is the id as written, as it nearly always is).
    raw_id: Option<String>,
    kind: Kind,
    /// Its place among the requests forwarded: the unanswered are failed oldest first.
    order: u64,
    /// When it reached the proxy, for its record's latency: `None` when no record is kept
    /// (a clock read is not free, and a call is made of few).
    started: Option<Instant>,
    record: Option<Box<CallRecord>>,
    /// A request without side effects (a listing, a ping): its line, to send again to a
    /// server that replaces this one before it answered.
    replay: Option<Bytes>,
}

/// A client request's id: as a table key ([`crate::proxy::message::id_key`]) and, where it
/// differs, as the client wrote it (for answers); each made once.
#[derive(Debug)]
struct RequestId {
    raw: Option<String>,
    /// Inline up to 24 bytes (every id but an odd one): keying a call allocates nothing.
    key: CompactString,
}

impl RequestId {
    fn new(raw: &str, key: std::borrow::Cow<'_, str>) -> RequestId {
        RequestId {
            raw: (key != raw).then(|| raw.to_string()),
            key: CompactString::from(key),
        }
    }

    /// The id as the client wrote it.
    fn raw(&self) -> &str {
        self.raw.as_deref().unwrap_or(&self.key)
    }
}

/// What one of the proxy's own requests to the server was for. (Its one request to the
/// client, `roots/list`, is [`roots::Roots::asked`]: the two directions never share a table.)
#[derive(Debug, PartialEq, Eq)]
enum Own {
    /// A page of the proxy's `tools/list` fetch.
    ToolsList,
    /// The client's `initialize`, replayed to a respawned server.
    ReplayInit,
}

/// How a server is started from its prepared jail (the OS process in production; a task of
/// the test in the in-process tests).
type Launch = Box<dyn FnMut(&PreparedJail, usize) -> std::io::Result<ServerChild> + Send>;

/// Everything the router knows about the session.
struct Router {
    config: ProxyConfig,
    launch: Launch,
    /// The egress proxy (`--allow-domain`), kept for the whole session.
    egress: Option<crate::proxy::egress::EgressProxy>,
    ctx: ResolveContext,
    scope: Scope,
    log: CallLog,
    out: crate::proxy::outbox::Outbox,
    catalogue: catalogue::Catalogue,
    /// Client requests forwarded to the server, not answered yet (at most
    /// [`super::integrity::MAX_PENDING`]). The only ids a server response may carry.
    pending: foldhash::HashMap<CompactString, Pending>,
    /// Requests forwarded so far (see [`Pending::order`]).
    forwarded: u64,
    /// The proxy's own requests to the server, by id key (a fetch page, a replayed
    /// initialize: at most two at a time).
    own_to_server: foldhash::HashMap<String, Own>,
    /// Client requests no one waits for any more (cancelled by the client), oldest first, at
    /// most [`super::integrity::MAX_PENDING`]: the server need not answer them, and a late
    /// answer is dropped quietly instead of being counted as a violation.
    cancelled: VecDeque<String>,
    roots: roots::Roots,
    /// Server→client requests the client has not answered, by id key → "is a roots/list"
    /// (at most [`super::integrity::MAX_SERVER_REQUESTS`]). The only ids a client response
    /// may carry.
    server_requests: HashMap<String, bool>,
    /// Ids of requests of a server that was replaced: the client's late answers are dropped
    /// quietly (they are not violations; there is just no one left to give them to).
    stale_server_requests: HashSet<String>,
    /// Client frames held (in order) until the tool list is known, and their total size
    /// (at most [`super::integrity::MAX_HELD`] / [`super::integrity::MAX_HELD_BYTES`]).
    held: VecDeque<Bytes>,
    held_bytes: usize,
    violations: Violations,
    /// The `_meta` of the client's latest request, for stateless-era (2026-07-28) requests of
    /// our own, which must carry the protocol version and client capabilities.
    client_meta: Option<Value>,
    saw_initialize: bool,
    /// The client's `initialize` params, replayed to a respawned server.
    init_params: Option<Value>,
    /// A respawned server is being re-initialised: client messages wait.
    paused: bool,
    /// A narrower scope the client's roots asked for; the session loop respawns the server.
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

impl Router {
    fn reply(&self, line: Vec<u8>) {
        self.out.send(Bytes::from(line));
    }
}

fn enforcement_word(e: crate::sandbox::Enforcement) -> &'static str {
    match e {
        crate::sandbox::Enforcement::Fully => "fully enforced",
        crate::sandbox::Enforcement::Partially => "PARTIALLY enforced",
        crate::sandbox::Enforcement::NotEnforced => "NOT enforced",
    }
}

/// Every layer of `jail` on the live log.
fn note_jail(log: &CallLog, jail: &PreparedJail) {
    for layer in &jail.report().layers {
        log.note(&format!(
            "jail {}: {} ({})",
            layer.layer,
            enforcement_word(layer.enforcement),
            layer.detail
        ));
    }
}

/// Start the server under `jail` (or take `first`, the server already started under it), and
/// return the jail it runs under with the result.
///
/// The proxy's jails assume the kernel lets the server's child create its namespaces
/// ([`crate::sandbox::JailOptions::assume_namespaces`]) rather than probing in throwaway
/// children first. Where the kernel refuses one, that spawn fails before `exec`; the jail is then
/// prepared again with the kernel probed, the server started under what the kernel allows (the
/// live log shows the new layers), and the session's later jails are probed from the start.
fn start_server(
    launch: &mut Launch,
    jail: PreparedJail,
    first: Option<std::io::Result<ServerChild>>,
    scope: &Scope,
    config: &mut ProxyConfig,
    log: &CallLog,
) -> (PreparedJail, std::io::Result<ServerChild>) {
    let spawned = first.unwrap_or_else(|| launch(&jail, config.max_line_bytes));
    let refusal = match &spawned {
        Err(_) => jail.namespace_refusal(),
        Ok(_) => None,
    };
    let Some(why) = refusal else {
        return (jail, spawned);
    };
    tracing::info!("jail: {why}; probing what this kernel allows and starting the server again");
    log.note(&format!(
        "jail: {why}; prepared again with the kernel probed (layers below)"
    ));
    config.jail.assume_namespaces = false;
    match crate::sandbox::prepare(scope, &config.command, &config.cwd, &config.jail) {
        Ok(probed) => {
            note_jail(log, &probed);
            let spawned = launch(&probed, config.max_line_bytes);
            (probed, spawned)
        }
        Err(e) => (
            jail,
            Err(std::io::Error::other(format!(
                "{why}; preparing the jail again with the kernel probed failed: {e}"
            ))),
        ),
    }
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

/// After a spawn: serve the listener the server's child made in its network namespace (and
/// stop listening on the host's loopback). Without it the server has no way out at all: that is
/// reported, not papered over.
fn adopt_egress_listener(egress: Option<&crate::proxy::egress::EgressProxy>, jail: &PreparedJail) {
    let Some(egress) = egress.filter(|_| jail.egress_in_namespace()) else {
        return;
    };
    egress.close_host_listener();
    let why = match jail.take_egress_listener() {
        Some(Ok(listener)) => match egress.add_listener(listener) {
            Ok(()) => return,
            Err(e) => format!("cannot serve the server's listener: {e}"),
        },
        Some(Err(e)) => e.to_string(),
        None => "the server's child made no listener".to_string(),
    };
    tracing::error!("egress proxy: {why}; the server has no network");
}
