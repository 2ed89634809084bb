//! The exact bytes a record's signature covers.
//!
//! RFC 8785 (JSON Canonicalization Scheme) restricted to what records contain: objects with
//! members sorted by their names' UTF-16 code units, no whitespace, strings escaped as
//! ECMAScript's `JSON.stringify` does (`\b \t \n \f \r \" \\` short forms, other control
//! characters as `\u00xx` in lower-case hex, everything else literal), `true`/`false`/`null`,
//! and integers in `i64`/`u64` range written in decimal. A record holding any other number is
//! refused rather than canonicalised approximately, because RFC 8785's float formatting is not
//! something two implementations should be trusted to agree on for a signature.

use serde_json::Value;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CanonicalError {
    #[error("the number {0} at {1} is not an integer; signed records hold integers only")]
    NonInteger(String, String),
}

/// The canonical encoding of `value`.
pub fn to_canonical(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(1024);
    write(value, "", &mut out)?;
    Ok(out)
}

fn write(value: &Value, at: &str, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.extend_from_slice(i.to_string().as_bytes());
            } else if let Some(u) = n.as_u64() {
                out.extend_from_slice(u.to_string().as_bytes());
            } else {
                let at = if at.is_empty() { "/" } else { at };
                return Err(CanonicalError::NonInteger(n.to_string(), at.to_string()));
            }
        }
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item, &format!("{at}/{i}"), out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push(b'{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write(&map[key], &format!("{at}/{key}"), out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            '\r' => out.extend_from_slice(b"\\r"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(v: Value) -> String {
        String::from_utf8(to_canonical(&v).unwrap()).unwrap()
    }

    #[test]
    fn members_sort_by_utf16_and_whitespace_goes() {
        assert_eq!(
            canon(json!({"b": [1, {"z": null, "a": true}], "a": "x"})),
            r#"{"a":"x","b":[1,{"a":true,"z":null}]}"#
        );
        // U+E000 sorts after U+1F600 in UTF-16 (surrogates D83D…) but before it in UTF-8.
        assert_eq!(
            canon(json!({"\u{1F600}": 1, "\u{E000}": 2})),
            "{\"\u{1F600}\":1,\"\u{E000}\":2}"
        );
    }

    #[test]
    fn strings_escape_as_json_stringify() {
        assert_eq!(
            canon(json!("a\"\\\u{8}\t\n\u{c}\r\u{1}\u{1f}/é")),
            "\"a\\\"\\\\\\b\\t\\n\\f\\r\\u0001\\u001f/é\""
        );
    }

    #[test]
    fn numbers_are_integers_or_refused() {
        assert_eq!(
            canon(json!([-3, 0, 18446744073709551615u64])),
            "[-3,0,18446744073709551615]"
        );
        let err = to_canonical(&json!({"a": [1.5]})).unwrap_err();
        assert_eq!(err, CanonicalError::NonInteger("1.5".into(), "/a/0".into()));
    }
}
