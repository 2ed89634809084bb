//! Server → client: responses are matched to pending requests (for learning `tools/list`,
//! logging, and answering in-flight requests if the server dies); a response that matches no
//! request the server was sent, and a line that is not a JSON-RPC message, is dropped and
//! reported (see [`super::super::integrity`]; the request such a line answers, when its id can
//! be read, is failed at once); requests and notifications pass through. A long
//! answer to a client request is streamed through piece by piece.

use bytes::Bytes;
use serde_json::{json, Value};

use super::super::child::ServerChild;
use super::super::framing::Frame;
use super::super::integrity::{self, Side};
use super::super::message::{self, code};
use super::records::{self, Outcome};
use super::{Kind, Own, Router, Streaming, MAX_UNFLAGGED_ERROR_TEXT};
use crate::proxy::outbox::terminated;
use crate::proxy::pinning::Pinning;

impl Router {
    pub(super) fn on_server_frame(&mut self, frame: Frame, child: &mut ServerChild) {
        self.server_spoke = true;
        // What the server wrote to stderr before this message goes out before it.
        child.sync_stderr();
        let Frame::Line(line) = frame else {
            self.on_odd_server_frame(frame, child);
            return;
        };
        let env = match message::parse_envelope(Frame::content(&line)) {
            Ok(env) => env,
            Err(bad) => {
                self.on_unroutable_server_line(&line, &bad);
                return;
            }
        };
        if let Some(method) = env.method.as_deref() {
            self.on_server_message(&line, &env, method, child);
            return;
        }
        let Some(id) = env.id else {
            self.violations.report(
                &mut self.log,
                Side::Server,
                "a message with neither a method nor an id: dropped",
            );
            return;
        };
        let key = message::id_key(id);
        if let Some(own) = self.own_to_server.remove(&*key) {
            self.on_own_answer(own, &env, child);
            return;
        }
        let Some(p) = self.pending.remove(&*key) else {
            self.on_unexpected_answer(&key, id);
            return;
        };
        // A listing the client gets unchanged is written to it first (at once, see `outbox`) and
        // learnt right after, before the next message is read: the client does not wait for
        // the proxy to derive every schema.
        let mut learn_after = None;
        let mut withheld = false;
        let mut rewritten = None;
        if p.kind == Kind::ToolsList {
            (rewritten, learn_after, withheld) =
                self.on_listing_answer(&line, &env, p.raw_id.as_deref().unwrap_or(&key));
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
        let outcome = if env.error.is_some() || withheld {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        records::close(
            &mut self.log,
            p.record,
            p.started,
            outcome,
            Some(rewritten.as_ref().map_or(line.len(), |r| r.len())),
            jail_hint,
        );
        self.out
            .send(rewritten.unwrap_or_else(|| terminated(line.clone())));
        if let Some(result) = learn_after {
            let _ = self.learn_tools(result.get(), false);
        }
    }

    /// The server's answer to a client's `tools/list`: with `--pin block` it is learnt now and
    /// may be rewritten (a changed tool hidden) or withheld; otherwise it is learnt after the
    /// client has it. Gives the rewritten line, the result to learn after, and whether it was
    /// withheld.
    #[inline(never)]
    fn on_listing_answer<'a>(
        &mut self,
        line: &Bytes,
        env: &message::Envelope<'a>,
        answered_id: &str,
    ) -> (Option<Bytes>, Option<message::RawJson<'a>>, bool) {
        if !self.pinning.rewrites_listings() {
            return (None, env.result, false);
        }
        let unreadable = env
            .result
            .and_then(|result| self.learn_tools(result.get(), false).err());
        let withheld = unreadable.is_some();
        let rewritten = match unreadable {
            // --pin block fails closed: a listing that could not be compared with
            // the pins may hold a changed tool, so the client gets an error instead.
            Some(why) => Some(Bytes::from(message::error_line(
                Some(answered_id),
                code::INTERNAL_ERROR,
                &Pinning::withheld_message(&why),
                None,
            ))),
            // A changed tool must be hidden (see Pinning::hide_unapproved).
            None => self.pinning.hide_unapproved(Frame::content(line)),
        };
        (rewritten, None, withheld)
    }

    /// A server frame that is not a whole line: a long answer streamed piece by piece, or a
    /// line over `--max-line-bytes`.
    #[cold]
    #[inline(never)]
    fn on_odd_server_frame(&mut self, frame: Frame, child: &mut ServerChild) {
        match frame {
            Frame::TooLong { len } => {
                tracing::error!(
                    len,
                    "the server sent a message over --max-line-bytes; it was dropped"
                );
            }
            Frame::Overlong { so_far } => {
                tracing::error!(
                    "the server is writing a line longer than --max-line-bytes ({} bytes; \
                     {so_far} so far) that is not an answer the proxy can stream: it is \
                     dropped as it arrives; a request it was meant to answer gets an error if \
                     the server exits without answering (hint: raise --max-line-bytes if the \
                     server's messages really are this long)",
                    self.config.max_line_bytes
                );
            }
            Frame::LongLine => self.maybe_stream(child),
            Frame::Chunk(piece) => self.forward_streamed(piece),
            Frame::ChunkEnd(piece) => {
                self.forward_streamed(terminated(piece));
                let Some(st) = self.streaming.take() else {
                    return;
                };
                if let Some(p) = self.pending.remove(st.key.as_str()) {
                    let outcome = if st.cut { Outcome::Error } else { Outcome::Ok };
                    records::close(
                        &mut self.log,
                        p.record,
                        p.started,
                        outcome,
                        Some(st.bytes),
                        None,
                    );
                    if st.cut {
                        self.reply(message::error_line(
                            Some(p.raw_id.as_deref().unwrap_or(&st.key)),
                            code::INTERNAL_ERROR,
                            "mcpjail cut off the server's answer: it was not a well-formed \
                             JSON-RPC response (a second `id` or a `method` key)",
                            None,
                        ));
                    }
                }
            }
            // Handled by the caller.
            Frame::Line(_) => {}
        }
    }

    /// A line the proxy cannot route could still be read by the client as an answer (two `id`
    /// keys, say): it does not pass.
    #[cold]
    #[inline(never)]
    fn on_unroutable_server_line(&mut self, line: &Bytes, bad: &message::Malformed) {
        self.violations.report(
            &mut self.log,
            Side::Server,
            &format!(
                "a line that is not a JSON-RPC message ({}): dropped",
                bad.message()
            ),
        );
        // Direct, the client would have got the line; here it gets an error for the
        // request the line answers, now rather than when the server exits.
        let pending = message::recover_answer_key(Frame::content(line))
            .and_then(|key| self.pending.remove(key.as_str()).map(|p| (key, p)));
        if let Some((key, p)) = pending {
            records::close(
                &mut self.log,
                p.record,
                p.started,
                Outcome::Error,
                None,
                None,
            );
            self.reply(message::error_line(
                Some(p.raw_id.as_deref().unwrap_or(&key)),
                code::INTERNAL_ERROR,
                &format!(
                    "mcpjail dropped the server's answer: it is not a JSON-RPC message \
                     the proxy can check ({})",
                    bad.message()
                ),
                None,
            ));
        }
    }

    /// A request or notification from the server: passed to the client, after noting what
    /// the session needs from it.
    #[inline(never)]
    fn on_server_message(
        &mut self,
        line: &Bytes,
        env: &message::Envelope<'_>,
        method: &str,
        child: &mut ServerChild,
    ) {
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
            if is_roots && (self.answer_known_roots(id, child) || self.park_server_roots(id)) {
                return;
            }
            if !self.track_server_request(id, is_roots, child) {
                return;
            }
        }
        self.out.send(terminated(line.clone()));
    }

    /// The server's answer to one of the proxy's own requests.
    #[cold]
    #[inline(never)]
    fn on_own_answer(&mut self, own: Own, env: &message::Envelope<'_>, child: &mut ServerChild) {
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
    }

    /// An answer to no request in flight: late for a cancelled one (dropped quietly), or
    /// forged or duplicate (dropped and reported).
    #[cold]
    #[inline(never)]
    fn on_unexpected_answer(&mut self, key: &str, id: message::RawJson<'_>) {
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
            &mut self.log,
            Side::Server,
            &format!(
                "a response to id {}, which is not a request the server was sent and has \
                 not answered: dropped",
                integrity::shown_id(id.get())
            ),
        );
    }

    /// A server→client request: remember its id so only the client's answer to it goes back.
    /// `false`: it was refused (and reported) and must not be forwarded.
    pub(super) fn track_server_request(
        &mut self,
        id: crate::proxy::message::RawJson<'_>,
        is_roots: bool,
        child: &mut ServerChild,
    ) -> bool {
        if id.get().len() > integrity::MAX_ID_BYTES {
            self.violations.report(
                &mut self.log,
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
        if self.server_requests.contains_key(&*key) || self.roots.asked.as_deref() == Some(&*key) {
            self.violations.report(
                &mut self.log,
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
                &mut self.log,
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
        self.stale_server_requests.remove(&*key);
        self.server_requests.insert(key.into_owned(), is_roots);
        true
    }

    /// A server request the client may still answer, though no one is waiting any more.
    pub(super) fn remember_stale(&mut self, key: String) {
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
    pub(super) fn explain_jail_refusals(
        &self,
        line: &[u8],
        child: &ServerChild,
    ) -> Option<(Bytes, String)> {
        let jail = child.jail.as_ref()?;
        if !crate::sandbox::may_name_a_path(line)
            || !crate::sandbox::mentions_permission_error(line)
        {
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

    /// A server line is long and still arriving. If its beginning already shows it is a
    /// response to a client request (not to the proxy's own, not a tools/list to learn from),
    /// forward it piece by piece as it arrives instead of holding all of it: a 10 MiB result
    /// then costs neither 10 MiB of proxy memory nor a store-and-forward delay.
    pub(super) fn maybe_stream(&mut self, child: &mut ServerChild) {
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
        if !matches!(self.pending.get(key.as_str()), Some(p) if p.kind != Kind::ToolsList) {
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
    pub(super) fn forward_streamed(&mut self, piece: Bytes) {
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
            self.violations.report(&mut self.log, Side::Server, &what);
            return;
        }
        st.bytes += piece.len();
        self.out.send(piece);
    }
}

/// The id key of the request a `notifications/cancelled` names (`params.requestId`).
pub(super) fn cancelled_request(
    params: Option<crate::proxy::message::RawJson<'_>>,
) -> Option<String> {
    let params: Value = serde_json::from_str(params?.get()).ok()?;
    let id = params.get("requestId")?;
    (id.is_string() || id.is_number()).then(|| id.to_string())
}
