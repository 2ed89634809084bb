//! Client → server: every line is parsed as an envelope; `tools/call` and `resources/read`
//! are judged before they are forwarded (see [`super::call`] for their one parse); anything
//! that cannot be parsed or judged is answered with an error and never forwarded. Frames that
//! must wait (for the tool list, or for a respawned server) are held in order.

use std::time::Instant;

use bytes::Bytes;
use serde_json::{json, Value};

use super::super::audit::CallRecord;
use super::super::check::{self, Refusal, Verdict};
use super::super::child::ServerChild;
use super::super::framing::Frame;
use super::super::integrity::{self, Side};
use super::super::message::{self, code, Envelope, Malformed};
use super::super::DenyMode;
use super::call::{self, Checked, Unjudgeable};
use super::records::{self, Outcome};
use super::server::cancelled_request;
use super::{Kind, Pending, RequestId, Router};
use crate::proxy::outbox::terminated;

impl Router {
    /// Keep a client frame for later, in order; a full queue refuses it (fail closed).
    #[cold]
    #[inline(never)]
    pub(super) fn hold(&mut self, line: Bytes) {
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

    /// Take the held request with id key `key` out of the queue; `false` if none is held.
    fn drop_held_request(&mut self, key: &str) -> bool {
        let found = self.held.iter().position(|line| {
            message::parse_envelope(Frame::content(line)).is_ok_and(|env| {
                env.method.is_some() && env.id.is_some_and(|id| message::id_key(id) == key)
            })
        });
        let Some(i) = found else {
            return false;
        };
        if let Some(line) = self.held.remove(i) {
            self.held_bytes -= line.len();
        }
        tracing::debug!("the client cancelled a request the proxy held: dropped");
        true
    }

    pub(super) fn take_held(&mut self) -> Vec<Bytes> {
        self.held_bytes = 0;
        self.held.drain(..).collect()
    }

    pub(super) fn on_client_frame(&mut self, frame: Frame, child: &mut ServerChild) {
        // The common path (a line, judged at once) stays short; everything else is out of line,
        // so the code every call runs is packed together (the per-call cost is mostly the
        // instruction cache, see the README's twenty-sixth pass).
        let Frame::Line(mut line) = frame else {
            self.on_odd_client_frame(frame);
            return;
        };
        if self.paused || !self.held.is_empty() {
            match self.hold_unless_response(line) {
                Some(response) => line = response,
                None => return,
            }
        }
        let content = Frame::content(&line);
        // A `tools/call`'s params are read as the envelope's walk passes them (see `call`).
        let mut plain = call::PlainParams::default();
        let (env, visited) =
            match message::parse_envelope_visiting(content, |key, value| plain.visit(key, value)) {
                Ok(read) => read,
                Err(bad) => {
                    self.refuse_unparsed(&bad, content);
                    return;
                }
            };
        let Some(method) = env.method.as_deref() else {
            self.on_client_response(&line, &env, child);
            return;
        };
        // The id as a table key, made once: the checks below, and the pending entry.
        let key = env
            .id
            .filter(|id| id.get().len() <= integrity::MAX_ID_BYTES)
            .map(message::id_key);
        if let Some(id) = env.id {
            // A response from the server is matched by id alone: an id that is already in
            // flight (ours or the client's), or too long to keep, cannot be told apart.
            let problem = match key.as_deref() {
                None => Some(IdProblem::TooLong),
                Some(key) if self.own_to_server.contains_key(key) => Some(IdProblem::OwnInUse),
                Some(key) if self.pending.contains_key(key) => Some(IdProblem::InFlight),
                Some(_) if self.pending.len() >= integrity::MAX_PENDING => {
                    Some(IdProblem::TooManyInFlight)
                }
                Some(_) => None,
            };
            if let Some(problem) = problem {
                self.refuse_request_id(id.get(), problem);
                return;
            }
        }
        // Past the checks above a request's id has its key: both move into its pending entry.
        let id = env
            .id
            .map(|id| id.get())
            .zip(key)
            .map(|(raw, key)| RequestId::new(raw, key));
        let kind = match method {
            "initialize" => Kind::Initialize,
            "server/discover" => Kind::Discover,
            "tools/list" => Kind::ToolsList,
            "tools/call" => Kind::ToolsCall,
            "resources/read" => Kind::ResourcesRead,
            _ => Kind::Other,
        };
        if env.id.is_some() && self.waits_for_roots(kind, method) {
            // Narrow to the client's roots before the server has state (see `roots`).
            self.hold(line);
            return;
        }
        match kind {
            Kind::ToolsCall | Kind::ResourcesRead => {
                // (A checked request's `_meta` is taken from its one parse, in
                // `on_checked_request`.)
                let plain = visited.then_some(&plain);
                self.on_checked_request(line.clone(), &env, plain, kind, id, child);
            }
            _ => self.forward_unchecked(&line, &env, method, kind, id, child),
        }
    }

    /// A client frame that is not a whole line within `--max-line-bytes`.
    #[cold]
    #[inline(never)]
    fn on_odd_client_frame(&mut self, frame: Frame) {
        match frame {
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
            }
            Frame::Overlong { so_far } => {
                tracing::warn!(
                    "the client is sending a message longer than --max-line-bytes ({} bytes; \
                     {so_far} so far): it is dropped as it arrives and refused at its end",
                    self.config.max_line_bytes
                );
            }
            // A line is the caller's. The client reader has no streaming threshold: every
            // client message is judged whole, so the pieces of a long one never occur.
            Frame::Line(_) | Frame::LongLine | Frame::Chunk(_) | Frame::ChunkEnd(_) => {}
        }
    }

    /// While requests are held or the server is paused: keep the client's order. Nothing
    /// overtakes a held request, and nothing reaches a server that is still being
    /// re-initialised after a respawn. Responses are not held (what the requests wait for may
    /// be one of them: the roots), and come back to be handled now; a cancellation of a held
    /// request takes it out of the queue (the server never saw it).
    #[cold]
    #[inline(never)]
    fn hold_unless_response(&mut self, line: Bytes) -> Option<Bytes> {
        match message::parse_envelope(Frame::content(&line)) {
            Ok(env) if env.method.is_none() && env.id.is_some() => return Some(line),
            Ok(env) if env.method.as_deref() == Some("notifications/cancelled") => {
                let key = cancelled_request(env.params);
                if !key.is_some_and(|key| self.drop_held_request(&key)) {
                    self.hold(line);
                }
            }
            _ => self.hold(line),
        }
        None
    }

    /// Fail closed, but answer the request's own id when it can be read.
    #[cold]
    #[inline(never)]
    fn refuse_unparsed(&self, bad: &Malformed, content: &[u8]) {
        self.refuse_malformed(bad, message::recover_id(content).as_deref());
    }

    /// A request whose id cannot be kept in flight is refused, never forwarded.
    #[cold]
    #[inline(never)]
    fn refuse_request_id(&self, id: &str, problem: IdProblem) {
        let why = match problem {
            IdProblem::OwnInUse => {
                format!("request id {id} is in use by the proxy; use another id")
            }
            IdProblem::InFlight => format!("request id {id} is still in flight; use another id"),
            IdProblem::TooLong => format!(
                "a request id of {} bytes is over the proxy's limit of {} bytes",
                id.len(),
                integrity::MAX_ID_BYTES
            ),
            IdProblem::TooManyInFlight => {
                let msg = format!(
                    "mcpjail has {} requests in flight at the server, its limit; this one was \
                     refused: retry it once earlier ones are answered",
                    self.pending.len()
                );
                tracing::warn!("{msg}");
                self.reply(message::error_line(
                    Some(id),
                    code::INTERNAL_ERROR,
                    &msg,
                    None,
                ));
                return;
            }
        };
        self.refuse_malformed(&Malformed::Invalid(why), Some(id));
    }

    /// A response to a server→client request (roots/list, sampling, elicitation).
    #[cold]
    #[inline(never)]
    fn on_client_response(&mut self, line: &Bytes, env: &Envelope<'_>, child: &mut ServerChild) {
        let raw_id = env.id.map(|id| id.get());
        if env.id.is_none() || (env.result.is_none() && env.error.is_none()) {
            self.refuse_malformed(
                &Malformed::Invalid("a message without a method must be a response".into()),
                raw_id,
            );
            return;
        }
        let key = env.id.map(message::id_key).unwrap_or_default();
        let key: &str = &key;
        if self.roots.asked.as_deref() == Some(key) {
            // The answer to the proxy's own roots/list (which only the client was sent).
            self.roots.asked = None;
            let outcome = match (env.result, env.error) {
                (Some(r), _) => format!("\"result\":{}", r.get()),
                (None, Some(e)) => format!("\"error\":{}", e.get()),
                (None, None) => String::new(),
            };
            if !outcome.is_empty() {
                self.answer_parked_roots(&outcome, child);
            }
            self.on_roots_answer(env.result.map(|r| r.get()), child);
            // The server may still ask (its question crossed ours on the way): the client
            // answered once, that answer is its answer.
            self.roots.answer_next_ask = self.roots.last_result.is_some();
            return;
        }
        match self.server_requests.remove(key) {
            Some(is_roots) => {
                child.send(terminated(line.clone()));
                if is_roots {
                    self.on_roots_answer(env.result.map(|r| r.get()), child);
                }
            }
            None if self.stale_server_requests.remove(key) => {
                tracing::debug!("the client answered a request of a replaced server: dropped");
            }
            None => {
                let id = integrity::shown_id(raw_id.unwrap_or("null"));
                self.violations.report(
                    &mut self.log,
                    Side::Client,
                    &format!(
                        "a response to id {id}, which no server request is waiting for: dropped"
                    ),
                );
            }
        }
    }

    /// A request or notification the proxy does not judge: forwarded, after noting what the
    /// session needs from it (the client's capabilities, a change of roots, a cancellation).
    #[inline(never)]
    fn forward_unchecked(
        &mut self,
        line: &Bytes,
        env: &Envelope<'_>,
        method: &str,
        kind: Kind,
        id: Option<RequestId>,
        child: &mut ServerChild,
    ) {
        if !self.saw_initialize {
            if let Some(meta) = env
                .params
                .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                .and_then(|p| p.get("_meta").cloned())
            {
                self.client_meta = Some(meta);
            }
        }
        if kind == Kind::Initialize {
            self.saw_initialize = true;
            let params: Option<Value> = env.params.and_then(|p| serde_json::from_str(p.get()).ok());
            self.roots.client_has_roots = params
                .as_ref()
                .and_then(|p| p.pointer("/capabilities/roots"))
                .is_some_and(|r| !r.is_null());
            self.init_params = params;
        }
        child.send(terminated(line.clone()));
        if let Some(id) = id {
            let replay = is_listing(method).then(|| line.clone());
            self.await_answer(id, kind, None, None, replay);
        }
        if method == "notifications/initialized" {
            self.catalogue.fetch_when_client_paused();
        }
        if method == "notifications/roots/list_changed" {
            self.on_roots_changed();
        }
        if method == "notifications/cancelled" {
            if let Some(key) = cancelled_request(env.params) {
                self.on_client_cancelled(key);
            }
        }
    }

    /// The place of a request forwarded now, among all forwarded (see `Pending::order`).
    fn next_forwarded(&mut self) -> u64 {
        self.forwarded += 1;
        self.forwarded
    }

    /// The client cancelled a request: the server may never answer it, so it no longer
    /// counts against the in-flight limit.
    pub(super) fn on_client_cancelled(&mut self, key: String) {
        let Some(p) = self.pending.remove(key.as_str()) else {
            return;
        };
        records::close(
            &mut self.log,
            p.record,
            p.started,
            Outcome::Cancelled,
            None,
            None,
        );
        self.remember_cancelled(key);
    }

    /// A request no one waits for an answer to any more (at most [`integrity::MAX_PENDING`],
    /// oldest forgotten first): a late answer is dropped quietly, not reported as forged.
    pub(super) fn remember_cancelled(&mut self, key: String) {
        if self.cancelled.len() >= integrity::MAX_PENDING {
            self.cancelled.pop_front();
        }
        self.cancelled.push_back(key);
    }

    #[cold]
    #[inline(never)]
    pub(super) fn refuse_malformed(&self, bad: &Malformed, id: Option<&str>) {
        tracing::warn!("refused a client message: {}", bad.message());
        self.reply(message::error_line(id, bad.code(), bad.message(), None));
    }

    pub(super) fn on_checked_request(
        &mut self,
        line: Bytes,
        env: &Envelope<'_>,
        plain: Option<&call::PlainParams<'_>>,
        kind: Kind,
        id: Option<RequestId>,
        child: &mut ServerChild,
    ) {
        let raw_id = id.as_ref().map(RequestId::raw);
        let started = self.log.enabled().then(Instant::now);
        // Fail closed: a call that could not be recorded is not made (see `audit`).
        if let Some(why) = self.log.audit_failure() {
            self.refuse_unrecorded(env, raw_id, &why);
            return;
        }
        let request = match call::parse(kind, env.params.map(|p| p.get()).unwrap_or("{}"), plain) {
            Ok(mut request) => {
                if !self.saw_initialize {
                    if let Some(meta) = request.meta.take() {
                        self.client_meta = Some(meta);
                    }
                }
                request
            }
            Err(Unjudgeable::Params(msg)) => {
                self.answer_invalid_params(raw_id, &msg, kind, started);
                return;
            }
            Err(Unjudgeable::Malformed(msg)) => {
                self.refuse_malformed(&Malformed::Invalid(msg), raw_id);
                return;
            }
        };
        // Only a kept record needs the arguments as a `Value`.
        let logged = self.log.enabled();
        let (verdict, tool, logged_arguments) = match &request.what {
            Checked::Tool { name, arguments } => {
                let known = self.catalogue.tools.get(name.as_ref());
                if self
                    .catalogue
                    .call_waits(known.is_some(), self.pinning.judges_calls_after_listing())
                {
                    self.hold_for_tool_list(line, child);
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
                        arguments.view(),
                    ),
                };
                let logged_arguments = logged.then(|| arguments.view().to_value());
                (verdict, Some(name.as_ref()), logged_arguments)
            }
            Checked::FileRead { uri } => (
                check::check_resource_read(&self.scope, &self.ctx, uri),
                None,
                logged.then(|| json!({ "uri": uri })),
            ),
            Checked::OtherResource => {
                // Not a file: the proxy has nothing to check; the server answers.
                self.forward_request(line, kind, started, None, id, child);
                return;
            }
        };
        let record = records::open(
            &self.log,
            raw_id,
            kind,
            tool,
            Some(&verdict),
            logged_arguments,
            None,
        );
        match verdict.refusal {
            None => self.forward_request(line, kind, started, record, id, child),
            Some(refusal) => {
                self.answer_denial(raw_id, &refusal, kind, started, record, request.stateless)
            }
        }
    }

    /// A call the audit log could not record is refused (see `audit`).
    #[cold]
    #[inline(never)]
    fn refuse_unrecorded(&self, env: &Envelope<'_>, raw_id: Option<&str>, why: &str) {
        tracing::error!(
            "refused {} (id {}): {why}",
            env.method.as_deref().unwrap_or("?"),
            raw_id.unwrap_or("none")
        );
        if raw_id.is_some() {
            self.reply(message::error_line(
                raw_id,
                code::INTERNAL_ERROR,
                &format!(
                    "mcpjail refused this call because it {why}; no call goes unrecorded \
                     (hint: free space on its file system or fix its permissions, then \
                     restart the server)"
                ),
                None,
            ));
        }
    }

    /// Judge a call with the schema, not guesses: it waits for the tool list.
    #[cold]
    #[inline(never)]
    fn hold_for_tool_list(&mut self, line: Bytes, child: &mut ServerChild) {
        self.hold(line);
        self.start_fetch(child);
    }

    /// Forward a judged request; one with an id waits in `pending` for its answer.
    pub(super) fn forward_request(
        &mut self,
        line: Bytes,
        kind: Kind,
        started: Option<Instant>,
        record: Option<Box<CallRecord>>,
        id: Option<RequestId>,
        child: &mut ServerChild,
    ) {
        child.send(terminated(line));
        if let Some(id) = id {
            self.await_answer(id, kind, started, record, None);
        }
    }

    /// A request just forwarded waits in `pending` for its answer, in its place among all
    /// forwarded (see `Pending::order`).
    fn await_answer(
        &mut self,
        id: RequestId,
        kind: Kind,
        started: Option<Instant>,
        record: Option<Box<CallRecord>>,
        replay: Option<Bytes>,
    ) {
        let order = self.next_forwarded();
        self.pending.insert(
            id.key,
            Pending {
                raw_id: id.raw,
                kind,
                order,
                started,
                record,
                replay,
            },
        );
    }

    #[cold]
    #[inline(never)]
    pub(super) fn answer_denial(
        &mut self,
        raw_id: Option<&str>,
        refusal: &Refusal,
        kind: Kind,
        started: Option<Instant>,
        record: Option<Box<CallRecord>>,
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
                super::super::era::own_result(refusal.as_tool_result(), stateless),
            )
        } else {
            message::error_line(
                Some(id),
                code::INVALID_PARAMS,
                &refusal.text(),
                Some(json!({"mcpjail/denial": refusal.details()})),
            )
        };
        records::close(
            &mut self.log,
            record,
            started,
            Outcome::Denied,
            Some(line.len()),
            None,
        );
        self.reply(line);
    }

    #[cold]
    #[inline(never)]
    pub(super) fn answer_invalid_params(
        &mut self,
        raw_id: Option<&str>,
        msg: &str,
        kind: Kind,
        started: Option<Instant>,
    ) {
        let refusal = check::unjudgeable(msg);
        let line = message::error_line(
            raw_id,
            code::INVALID_PARAMS,
            &refusal.text(),
            Some(json!({"mcpjail/denial": refusal.details()})),
        );
        let record = records::open(
            &self.log,
            raw_id,
            kind,
            None,
            None,
            None,
            Some(msg.to_string()),
        );
        records::close(
            &mut self.log,
            record,
            started,
            Outcome::Denied,
            Some(line.len()),
            None,
        );
        tracing::warn!("refused a call: {msg}");
        self.reply(line);
    }

    /// Client requests are held for something the server (not the client) will bring: the
    /// tool list, or a respawned server's handshake. After the client's EOF the server's stdin
    /// stays open until they are forwarded. Held for the client's own roots answer, they never
    /// will be (the client has closed): then not.
    pub(super) fn holds_for_server(&self) -> bool {
        (self.paused || !self.held.is_empty()) && self.roots.asked.is_none()
    }

    /// Re-run held client frames now that the tool list is known (or will not be).
    pub(super) fn release_held(&mut self, child: &mut ServerChild) {
        let held = self.take_held();
        // Each frame is judged again; one that still has to wait goes back into the queue, and
        // everything after it queues behind it, so the client's order is kept.
        for line in held {
            self.on_client_frame(Frame::Line(line), child);
        }
    }
}

/// Why a request's id cannot be kept in flight.
#[derive(Clone, Copy)]
enum IdProblem {
    /// The proxy's own request to the server has this id.
    OwnInUse,
    /// A request of the client's with this id is still unanswered.
    InFlight,
    /// Over [`integrity::MAX_ID_BYTES`].
    TooLong,
    /// [`integrity::MAX_PENDING`] requests are in flight already.
    TooManyInFlight,
}

/// A request that gives a server no state and has no side effects: a listing or a ping.
pub(super) fn is_listing(method: &str) -> bool {
    method == "ping" || method.ends_with("/list")
}
