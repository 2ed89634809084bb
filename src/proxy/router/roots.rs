//! Client roots: the proxy learns them (from its own `roots/list` to a client that has
//! roots, and from the client's answers to the server's), narrows the scope to them, and
//! restarts the server under the narrower jail when the running one is too wide.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

use super::super::child::ServerChild;
use super::super::integrity;
use super::catalogue::Fetch;
use super::client::is_listing;
use super::records::Outcome;
use super::{kernel_stops_writes, Kind, Own, Pending, Router};
use crate::policy::Scope;

/// What the proxy knows of the client's roots and its own questions about them.
///
/// The proxy learns the roots from the server's own `roots/list` exchange when there is one,
/// and asks the client itself only when it needs them and no question is outstanding: at the
/// first client request that can give the server state (not the handshake, not a listing),
/// and, after `notifications/roots/list_changed`, at the next checked call. So a client never
/// gets a `roots/list` it would not have got directly, unless the server never asks.
#[derive(Debug, Default)]
pub(super) struct Roots {
    /// The client advertised the `roots` capability: the proxy may ask it for its roots.
    pub client_has_roots: bool,
    /// The id key of the proxy's own `roots/list` to the client, while it is unanswered.
    pub asked: Option<String>,
    /// A roots answer (the proxy's or the server's) has been seen.
    pub learned: bool,
    /// The client said its roots changed since the last answer.
    pub stale: bool,
    /// They changed while a question was outstanding: its answer may predate the change.
    pub changed_while_asking: bool,
    /// The client's latest roots answer (`result`, raw), while it is current.
    pub last_result: Option<String>,
    /// The server's next `roots/list` would be a second question about the same roots (the
    /// client already answered the proxy's, or a respawned server asks again): the proxy
    /// answers it with [`Roots::last_result`] itself.
    pub answer_next_ask: bool,
    /// The server's own `roots/list` requests (raw ids) that arrived while the proxy's was
    /// outstanding: answered with the client's answer to ours, so the client is asked once.
    pub parked: Vec<String>,
}

impl Router {
    /// Must this client request (`kind`, `method`; it has an id) wait for the client's roots?
    /// If so, and no `roots/list` (the server's or ours) is outstanding, the proxy asks.
    pub(super) fn waits_for_roots(&mut self, kind: Kind, method: &str) -> bool {
        let r = &self.roots;
        if !r.client_has_roots || (r.learned && !r.stale) {
            return false;
        }
        // The handshake and listings give the server no state and need no check.
        if matches!(kind, Kind::Initialize | Kind::Discover) || is_listing(method) {
            return false;
        }
        // A change after the first answer matters to the proxy's checks only.
        if r.learned && !matches!(kind, Kind::ToolsCall | Kind::ResourcesRead) {
            return false;
        }
        let server_asking = self.server_requests.values().any(|is_roots| *is_roots);
        if r.asked.is_none() && !server_asking {
            self.ask_roots();
        }
        true
    }

    /// `notifications/roots/list_changed` from the client: the roots are asked again when
    /// they are next needed (or learnt from the server's own question, if it asks first).
    pub(super) fn on_roots_changed(&mut self) {
        if self.roots.learned {
            self.roots.stale = true;
        }
        self.roots.last_result = None;
        self.roots.answer_next_ask = false;
        if self.roots.asked.is_some() || self.server_requests.values().any(|r| *r) {
            self.roots.changed_while_asking = true;
        }
    }

    /// A `roots/list` (ours or the server's) was answered (`result`: `None` for an error):
    /// learn from it, and let waiting requests go — after a respawn it asks for, if any.
    pub(super) fn on_roots_answer(&mut self, result: Option<&str>, child: &mut ServerChild) {
        if let Some(result) = result {
            self.on_roots(result);
        }
        self.roots.last_result = result.map(str::to_string);
        self.roots.learned = true;
        self.roots.stale = std::mem::take(&mut self.roots.changed_while_asking);
        if self.respawn.is_none() {
            self.release_held(child);
        }
    }

    /// A server's `roots/list` the client already answered (see [`Roots::answer_next_ask`]):
    /// answered by the proxy with the roots the client gave (`true`), once; otherwise
    /// (`false`) it goes to the client.
    pub(super) fn answer_known_roots(
        &mut self,
        id: crate::proxy::message::RawJson<'_>,
        child: &mut ServerChild,
    ) -> bool {
        if !std::mem::take(&mut self.roots.answer_next_ask) {
            return false;
        }
        let Some(result) = &self.roots.last_result else {
            return false;
        };
        child.send(Bytes::from(format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{result}}}\n",
            id.get()
        )));
        tracing::debug!("answered the server's roots/list with the roots the client just gave");
        true
    }

    /// A server's `roots/list` while the proxy's own is outstanding: parked (`true`), to be
    /// answered with the client's answer to the proxy's question.
    pub(super) fn park_server_roots(&mut self, id: crate::proxy::message::RawJson<'_>) -> bool {
        if self.roots.asked.is_none()
            || self.roots.parked.len() >= super::super::integrity::MAX_SERVER_REQUESTS
        {
            return false;
        }
        self.roots.parked.push(id.get().to_string());
        true
    }

    /// The client answered the proxy's `roots/list` (`outcome`: the raw `"result":…` or
    /// `"error":…` member): the server's parked questions get the same answer.
    pub(super) fn answer_parked_roots(&mut self, outcome: &str, child: &mut ServerChild) {
        for id in std::mem::take(&mut self.roots.parked) {
            child.send(Bytes::from(format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},{outcome}}}\n"
            )));
        }
    }

    /// Ask the client for its roots with a proxy-owned id.
    fn ask_roots(&mut self) {
        let id = integrity::own_id();
        self.roots.asked = Some(Value::String(id.clone()).to_string());
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
    pub(super) fn on_roots(&mut self, result: &str) {
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
        let shown = shown.join(", ");
        // Only a server without state can be replaced invisibly: before the first answer every
        // request that could give it state waits (see `waits_for_roots`).
        let stateless = self.pending.values().all(|p| p.replay.is_some());
        if !self.roots.learned && stateless {
            self.log.note(&format!(
                "client roots {shown} narrow the scope: respawning the server under a narrower \
                 jail before it has state"
            ));
            self.respawn = Some(narrowed.clone());
        } else {
            self.log.note(&format!(
                "client roots {shown} narrow the scope: the proxy's checks narrow now; the \
                 server keeps its state and its jail until its next start"
            ));
        }
        self.scope = narrowed;
    }

    /// Start a new server under `scope`'s jail, replay the client's handshake to it, and hand
    /// back the old one for reaping. This happens only at the first roots, before the server
    /// has state: listings it had not answered are sent again to the new one; anything else
    /// it had not answered gets an error (replaying could repeat side effects).
    pub(super) fn respawn_server(
        &mut self,
        scope: Scope,
        child: &mut ServerChild,
    ) -> Option<ServerChild> {
        let cfg = &self.config;
        let spawned = crate::sandbox::prepare(&scope, &cfg.command, &cfg.cwd, &cfg.jail)
            .map_err(|e| e.to_string())
            .and_then(|jail| {
                super::note_jail(&self.log, &jail);
                let (jail, spawned) = super::start_server(
                    &mut self.launch,
                    jail,
                    None,
                    &scope,
                    &mut self.config,
                    &self.log,
                );
                let mut child = spawned.map_err(|e| e.to_string())?;
                super::adopt_egress_listener(self.egress.as_ref(), &jail);
                child.jail = Some(jail);
                Ok(child)
            });
        let new_child = match spawned {
            Ok(c) => c,
            Err(err) => {
                // The checks already use the narrower scope; the old jail stays (it is wider,
                // never narrower than what is checked).
                tracing::error!("cannot respawn the server under the narrower jail: {err}");
                self.release_held(child);
                return None;
            }
        };
        self.kernel_stops_writes = new_child.jail.as_ref().is_some_and(kernel_stops_writes);
        let old = std::mem::replace(child, new_child);
        self.log.note(&format!(
            "server pid {} replaced by pid {}",
            old.pid, child.pid
        ));
        // Listings in flight are sent again to the new server, ahead of the held requests;
        // anything else (there is nothing else before the first roots) is failed.
        let mut again: Vec<Pending> = Vec::new();
        let keys: Vec<_> = self
            .pending
            .iter()
            .filter(|(_, p)| p.replay.is_some())
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            if let Some(p) = self.pending.remove(key.as_str()) {
                again.push(p);
            }
        }
        again.sort_by_key(|p| std::cmp::Reverse(p.order));
        for p in again {
            if let Some(line) = p.replay {
                self.held_bytes += line.len();
                self.held.push_front(line);
            }
        }
        let msg = "mcpjail restarted the MCP server under a narrower jail (the client's roots \
                   changed) before it answered; retry the request";
        self.fail_pending(Outcome::ServerRestarted, msg, None);
        // The old server's own requests (roots/list) and our fetches to it are void.
        let voided: Vec<String> = self.server_requests.drain().map(|(k, _)| k).collect();
        for key in voided {
            self.remember_stale(key);
        }
        self.cancelled.clear();
        self.roots.answer_next_ask = self.roots.last_result.is_some();
        self.roots.parked.clear();
        let refetch = self.catalogue.in_flight();
        self.own_to_server.clear();
        if refetch {
            self.catalogue.fetch = Fetch::Unknown;
        }
        if let Some(params) = self.init_params.clone() {
            let id = integrity::own_id();
            self.own_to_server
                .insert(Value::String(id.clone()).to_string(), Own::ReplayInit);
            let req = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params});
            child.send(Bytes::from(format!("{req}\n").into_bytes()));
            self.paused = true;
            self.refetch_after_replay = refetch;
        } else {
            if refetch {
                self.start_fetch(child);
            }
            self.release_held(child);
        }
        Some(old)
    }
}

/// End a replaced server: close its input, SIGTERM, and SIGKILL if it lingers; always reap.
pub(super) async fn reap(mut old: ServerChild, grace: Duration) {
    old.close_stdin();
    old.terminate();
    match crate::proxy::timer::timeout(grace, old.process.wait()).await {
        Ok(_) => {}
        Err(_) => {
            let _ = old.process.start_kill();
            let _ = old.process.wait().await;
        }
    }
}
