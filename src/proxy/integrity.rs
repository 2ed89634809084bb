//! Protocol integrity: the proxy's own request ids, the limits on everything the router keeps
//! per message, and how a peer that breaks the protocol is reported.
//!
//! The proxy speaks in two directions with its own requests — `tools/list` to the server,
//! `roots/list` to the client — and a jailed server is not trusted to stay in its lane. So:
//! * each direction has its own id space: a response is matched only against requests that
//!   were sent to the side it came from (a server line can never answer the proxy's
//!   `roots/list`, which went to the client, nor a client request the server never got);
//! * the proxy's ids are random ([`own_id`]), so no side can guess one it was not shown;
//! * every table and queue the router keeps has a limit (the constants below) and a stated
//!   behaviour when it is reached: requests fail closed with a JSON-RPC error, unsolicited
//!   lines are dropped and reported through [`Violations`].

use serde_json::json;

use super::audit::CallLog;
use crate::shown::shown;

/// Client requests forwarded to the server and not answered yet. Past this, new requests are
/// answered by the proxy with an error and not forwarded.
pub const MAX_PENDING: usize = 4096;

/// Server→client requests the client has not answered yet. Past this, the server gets an
/// error for a new request instead of it being forwarded.
pub const MAX_SERVER_REQUESTS: usize = 1024;

/// Client messages held while the tool list is being learned (or a respawned server is being
/// re-initialised), by count and by bytes. Past either, a request gets an error and a
/// notification or response is dropped (logged).
pub const MAX_HELD: usize = 1024;
pub const MAX_HELD_BYTES: usize = 16 * 1024 * 1024;

/// Longest request id the proxy keeps in a table (ids are keys of maps that live as long as
/// the request). Longer ids are refused.
pub const MAX_ID_BYTES: usize = 1024;

/// Pages of one `tools/list` fetch; a server whose cursor never ends is not followed further.
pub const MAX_FETCH_PAGES: usize = 1000;

/// Tools the proxy learns schemas for; past this, a new tool is judged by value heuristics.
pub const MAX_TOOLS: usize = 10_000;

/// A fresh id for one of the proxy's own requests: `mcpjail-` and 128 random bits in hex.
/// A peer that was not sent the request cannot guess it.
pub fn own_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness (should not happen on a supported system): SipHash keyed by std's
        // per-process random keys over a counter and the time is still not guessable.
        fallback_random(&mut bytes);
    }
    let mut id = String::with_capacity(8 + 32);
    id.push_str("mcpjail-");
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

fn fallback_random(bytes: &mut [u8; 16]) {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(n);
        h.write_u128(now);
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
}

/// Which peer broke the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

impl Side {
    fn word(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// The first this many violations are reported one by one; after that, only the 2^n-th, so a
/// flood cannot flood stderr or the audit log in turn.
const REPORT_EACH: u64 = 20;

/// Counts and reports protocol violations: stderr (the live log with `--log`, else a
/// `tracing` warning) and a `protocol_violation` event in the audit log (`--log-file`).
#[derive(Debug, Default)]
pub struct Violations {
    server: u64,
    client: u64,
}

impl Violations {
    /// One violation by `from`: `what` happened and the line was dropped (or refused).
    pub fn report(&mut self, log: &mut CallLog, from: Side, what: &str) {
        let n = match from {
            Side::Server => &mut self.server,
            Side::Client => &mut self.client,
        };
        *n += 1;
        let n = *n;
        if n > REPORT_EACH && !n.is_power_of_two() {
            return;
        }
        let text = format!(
            "PROTOCOL VIOLATION by the {} (#{n}): {what}{}",
            from.word(),
            if n == REPORT_EACH {
                "; further violations are reported at #32, #64, …"
            } else {
                ""
            }
        );
        if log.live() {
            log.note(&text);
        } else {
            tracing::warn!("{text}");
        }
        log.event(
            "protocol_violation",
            json!({"from": from.word(), "count": n, "what": what}),
        );
    }
}

/// A request id as shown in a log line: at most 64 bytes of it, terminal controls escaped
/// (either side chooses its ids; see [`crate::shown`]).
pub fn shown_id(raw: &str) -> String {
    if raw.len() <= 64 {
        return shown(raw).into_owned();
    }
    let mut end = 64;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", shown(&raw[..end]), raw.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_are_random_128_bit_hex() {
        let a = own_id();
        let b = own_id();
        assert_ne!(a, b);
        let hex = a.strip_prefix("mcpjail-").unwrap();
        assert_eq!(hex.len(), 32);
        assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn fallback_is_not_constant() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        fallback_random(&mut a);
        fallback_random(&mut b);
        assert_ne!(a, b);
    }

    #[test]
    fn long_ids_are_shortened_for_logs() {
        assert_eq!(shown_id("\"a\""), "\"a\"");
        let long = "é".repeat(100);
        let s = shown_id(&long);
        assert!(s.contains("… (200 bytes)"), "{s}");
        assert_eq!(shown_id("\"\x1b]0;T\x07\""), r#""\x1b]0;T\x07""#);
    }
}
