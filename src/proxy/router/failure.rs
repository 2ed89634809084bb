//! When the server fails: every request it will never answer gets an error saying why (what
//! the jail likely refused and the flag for it), the user is told, and a server that died
//! before it spoke leaves the proxy answering the client's requests until the client leaves.

use serde_json::{json, Value};
use tokio::io::AsyncRead;

use super::super::framing::{Frame, FramedReader};
use super::super::message::{self, code};
use super::records::{self, Outcome};
use super::Router;
use crate::proxy::outbox;

impl Router {
    /// Answer every request the server has not answered with an internal error (oldest first)
    /// and log each as `outcome`: the server that owed the answers is gone.
    pub(super) fn fail_pending(&mut self, outcome: Outcome, msg: &str, data: Option<Value>) {
        let mut pending: Vec<_> = self.pending.drain().collect();
        pending.sort_by_key(|(_, p)| p.order);
        for (key, p) in pending {
            records::close(&mut self.log, p.record, p.started, outcome, None, None);
            self.reply(message::error_line(
                Some(p.raw_id.as_deref().unwrap_or(&key)),
                code::INTERNAL_ERROR,
                msg,
                data.clone(),
            ));
        }
    }

    /// The server is gone: every request it will never answer gets an error carrying `msg`
    /// and, under `data`, the explanation's details.
    pub(super) fn fail_in_flight(&mut self, msg: &str, explanation: &crate::sandbox::Explanation) {
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
        self.fail_pending(Outcome::ServerExited, msg, Some(data));
    }

    /// Are there client requests the server has not answered (forwarded or held)?
    pub(super) fn owes_answers(&self) -> bool {
        !self.pending.is_empty() || !self.held.is_empty()
    }

    /// Tell the user why the server failed: `--log` (or stderr, through tracing, without it)
    /// and the audit log.
    pub(super) fn report_failure(
        &mut self,
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
    pub(super) async fn serve_dead_server<R: AsyncRead + Unpin>(
        &mut self,
        client: &mut FramedReader<R>,
        msg: &str,
        explanation: &crate::sandbox::Explanation,
        signals: &mut tokio::sync::mpsc::UnboundedReceiver<i32>,
    ) {
        let data = failure_data(explanation);
        loop {
            // A client that sends without reading: wait until it has read its answers.
            while self.out.counter.over(outbox::OUT_CLIENT_HIGH_WATER) {
                self.out.counter.drained.notified().await;
            }
            let frame = tokio::select! {
                _ = signals.recv() => return,
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

/// `error.data` for a request the failed server will never answer.
pub(super) fn failure_data(explanation: &crate::sandbox::Explanation) -> Value {
    json!({ "mcpjail/server_failure": explanation.to_json() })
}
