//! Log redaction (`proxy::audit::redact`, `redact_str`), which every `--log` and `--log-file`
//! line goes through.
//!
//! Input: a JSON value (the call's arguments as logged), or raw text. Invariants: nothing
//! panics on any UTF-8 (multi-byte characters next to `Bearer`, `/`, `=`...); redaction keeps
//! the shape (same keys, same array lengths, same numbers and booleans) and is idempotent;
//! text without a secret comes back unchanged; a credential-shaped token planted as its own
//! word in any text never survives (the input's own copies inside longer words may).

use serde_json::Value;

use crate::proxy::audit::{redact, redact_str};

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let once = redact_str(text);
    assert_eq!(redact_str(&once), once, "redact_str is not idempotent");
    if !once.contains("[REDACTED]") {
        assert_eq!(once, text, "text without a secret was changed");
    }
    // A GitHub token made from the input's own bytes, as a word between two halves of it.
    let body: String = text
        .bytes()
        .filter(u8::is_ascii_alphanumeric)
        .map(char::from)
        .chain(std::iter::repeat('x'))
        .take(36)
        .collect();
    let token = format!("ghp_{body}");
    let (a, b) = text.split_at(
        text.char_indices()
            .nth(text.chars().count() / 2)
            .map_or(0, |(i, _)| i),
    );
    let planted = format!("{a} {token} {b}");
    let red = redact_str(&planted);
    // The planted word must go. The input may hold the same characters inside a longer word
    // of its own (`4ghp_…`), which is not a token and stays: count, do not just search.
    let before = text.matches(token.as_str()).count();
    assert!(
        red.matches(token.as_str()).count() <= before,
        "a planted token survived: {red}"
    );

    if let Ok(value) = serde_json::from_str::<Value>(text) {
        let r = redact(&value);
        assert_same_shape(&value, &r);
        assert_eq!(redact(&r), r, "redact is not idempotent");
    }
}

fn assert_same_shape(a: &Value, b: &Value) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            assert!(x.keys().eq(y.keys()), "redaction changed the keys");
            for (k, v) in x {
                assert_same_shape(v, &y[k]);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "redaction changed an array's length");
            for (v, w) in x.iter().zip(y) {
                assert_same_shape(v, w);
            }
        }
        // A secret-named scalar becomes "[REDACTED]"; any other scalar stays as it is.
        (_, Value::String(s)) if s == "[REDACTED]" => {}
        (Value::String(_), Value::String(_)) => {}
        (x, y) => assert_eq!(x, y, "redaction changed a non-string value"),
    }
}
