//! Client roots: the proxy learns them (from its own `roots/list` to a client that has
//! roots, and from the client's answers to the server's), narrows the scope to them, and
//! restarts the server under the narrower jail when the running one is too wide.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

use super::super::child::ServerChild;
use super::super::integrity;
use super::catalogue::Fetch;
use super::records::Outcome;
use super::session::{enforcement_word, kernel_stops_writes};
use super::{Own, Router};
use crate::policy::Scope;

/// What the proxy knows of the client's roots and its own questions about them.
#[derive(Debug, Default)]
pub(super) struct Roots {
    /// The client advertised the `roots` capability: the proxy may ask it for its roots.
    pub client_has_roots: bool,
    /// The id key of the proxy's own `roots/list` to the client, while it is unanswered.
    pub asked: Option<String>,
    /// The roots changed while our `roots/list` was unanswered: ask once more.
    pub ask_again: bool,
}

impl Router {
    /// Ask the client for its roots (only if it said it has them), with a proxy-owned id —
    /// once at a time: asked again while unanswered, it asks once more after the answer.
    pub(super) fn ask_roots(&mut self) {
        if !self.roots.client_has_roots {
            return;
        }
        if self.roots.asked.is_some() {
            self.roots.ask_again = true;
            return;
        }
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
    pub(super) fn respawn_server(
        &mut self,
        scope: Scope,
        child: &mut ServerChild,
    ) -> Option<ServerChild> {
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
                let mut child =
                    (self.launch)(&jail, cfg.max_line_bytes).map_err(|e| e.to_string())?;
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
        self.fail_pending(Outcome::ServerRestarted, msg, None);
        // The old server's own requests (roots/list) and our fetches to it are void.
        let voided: Vec<String> = self.server_requests.drain().map(|(k, _)| k).collect();
        for key in voided {
            self.remember_stale(key);
        }
        self.cancelled.clear();
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
        } else if refetch {
            self.start_fetch(child);
        }
        Some(old)
    }
}

/// End a replaced server: close its input, SIGTERM, and SIGKILL if it lingers; always reap.
pub(super) async fn reap(mut old: ServerChild, grace: Duration) {
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
