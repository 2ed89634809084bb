//! Audit records of checked requests: opened once when a request is judged, closed once when
//! it is answered (by the server, by the proxy, or by no one), in one place each.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::super::audit::{CallLog, CallRecord};
use super::super::check::Verdict;
use super::Kind;

/// How a checked request ended, as the audit log words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Ok,
    Error,
    Denied,
    Cancelled,
    ServerExited,
    ServerRestarted,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Cancelled => "cancelled",
            Outcome::ServerExited => "server_exited",
            Outcome::ServerRestarted => "server_restarted",
        }
    }
}

/// A new record for a checked request (`None` when nothing is logged). `verdict` is `None`
/// for a request refused before it could be judged (`reason` says why). Boxed: a record waits
/// in its request's pending entry, which moves several times a call (into and out of the
/// table), and a large entry is copied with `memcpy` each time even when nothing is logged.
pub(super) fn open(
    log: &CallLog,
    id: Option<&str>,
    kind: Kind,
    tool: Option<&str>,
    verdict: Option<&Verdict>,
    arguments: Option<Value>,
    reason: Option<String>,
) -> Option<Box<CallRecord>> {
    if !log.enabled() {
        return None;
    }
    let (paths, allowed, reason) = match verdict {
        Some(v) => (
            v.paths
                .iter()
                .map(|p| {
                    p.resolved
                        .as_ref()
                        .map(|r| r.display().to_string())
                        .unwrap_or_else(|| p.raw.clone())
                })
                .collect(),
            v.allowed(),
            v.refusal.as_ref().map(|r| r.reason.clone()).or(reason),
        ),
        None => (Vec::new(), false, reason),
    };
    Some(Box::new(CallRecord {
        id: id.unwrap_or_default().to_string(),
        method: if kind == Kind::ToolsCall {
            "tools/call".into()
        } else {
            "resources/read".into()
        },
        tool: tool.map(str::to_owned),
        paths,
        allowed,
        reason,
        latency: Duration::ZERO,
        result_bytes: 0,
        arguments,
        outcome: Outcome::Ok.word(),
        jail_hint: None,
    }))
}

/// Close a record: how long it took, how it ended, how big the answer was (`None`: keep what
/// the record has), what the jail refused; then write it.
pub(super) fn close(
    log: &mut CallLog,
    record: Option<Box<CallRecord>>,
    started: Option<Instant>,
    outcome: Outcome,
    result_bytes: Option<usize>,
    jail_hint: Option<String>,
) {
    let Some(mut rec) = record else {
        return;
    };
    rec.latency = started.map(|at| at.elapsed()).unwrap_or_default();
    rec.outcome = outcome.word();
    if let Some(n) = result_bytes {
        rec.result_bytes = n;
    }
    if jail_hint.is_some() {
        rec.jail_hint = jail_hint;
    }
    log.record(&rec);
}
