//! The two protocol eras, as far as the proxy's own answers are concerned.
//!
//! A 2026-07-28 (stateless) request carries its protocol version in its own
//! `params._meta["io.modelcontextprotocol/protocolVersion"]` (there is no `initialize` to
//! remember it from), and every result in that era must say what kind of result it is:
//! `"resultType": "complete"` (or `"input_required"` for multi-round-trip requests). Clients of
//! that era reject a result without it, so a refusal the proxy writes itself would be thrown
//! away instead of shown. Older-era results have no such member and are left exactly as they
//! were, so an older client sees nothing new.
//!
//! The era is decided per request, not per session: the stateless era has no session, and a
//! request is the only thing that says which era it speaks.

use serde_json::Value;

/// The `_meta` key a 2026-07-28 request names its protocol version under.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// Is this request (its parsed `params`) from the stateless era? Older requests never carry
/// the key, so its presence alone decides (later revisions keep it).
pub fn is_stateless(params: &Value) -> bool {
    params.get("_meta").is_some_and(meta_is_stateless)
}

/// [`is_stateless`], given the request's `params._meta`.
pub fn meta_is_stateless(meta: &Value) -> bool {
    meta.get(PROTOCOL_VERSION_META)
        .is_some_and(Value::is_string)
}

/// A result the proxy answers in place of the server, shaped for the request's era.
pub fn own_result(mut result: Value, stateless: bool) -> Value {
    if stateless {
        if let Some(obj) = result.as_object_mut() {
            obj.entry("resultType")
                .or_insert_with(|| Value::String("complete".into()));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamps_only_stateless_results() {
        let modern = json!({"name": "t", "_meta": {PROTOCOL_VERSION_META: "2026-07-28"}});
        let old = json!({"name": "t", "_meta": {"progressToken": 1}});
        assert!(is_stateless(&modern));
        assert!(!is_stateless(&old));
        assert!(!is_stateless(&json!({"name": "t"})));
        let r = json!({"content": [], "isError": true});
        assert_eq!(
            own_result(r.clone(), true),
            json!({"content": [], "isError": true, "resultType": "complete"})
        );
        assert_eq!(own_result(r.clone(), false), r);
    }
}
