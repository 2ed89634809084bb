//! Just enough JSON-RPC to route a line: its envelope, request ids, and the error replies the
//! proxy writes itself.
//!
//! The proxy never re-serialises a message it forwards. It reads the envelope (`id`, `method`,
//! and the raw `params` / `result`) as borrowed raw JSON text ([`RawJson`]), so even a 10 MiB
//! result is only validated, not copied. An ordinary line is read by
//! [`super::envelope_scan`] in one pass; anything else by serde_json, which also words the
//! errors. Only the `params` of messages the proxy must judge are parsed
//! into a `serde_json::Value`, after a duplicate-key check over their raw bytes: serde_json
//! keeps the last of two equal keys, while a server's parser may keep the first, so a message
//! with duplicates could be checked as one thing and executed as another.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// JSON-RPC error codes the proxy answers with.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
}

/// The routing-relevant part of one message. Unknown fields are skipped without copying.
/// Derived `Deserialize` refuses a duplicate `id`/`method`/`params`, which is what we want.
#[derive(Debug, Deserialize)]
pub struct Envelope<'a> {
    #[serde(borrow, default)]
    pub id: Option<RawJson<'a>>,
    #[serde(borrow, default)]
    pub method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub params: Option<RawJson<'a>>,
    #[serde(borrow, default)]
    pub result: Option<RawJson<'a>>,
    #[serde(borrow, default)]
    pub error: Option<RawJson<'a>>,
}

/// One JSON value's text as it appears in the line (validated, never copied): what serde's
/// borrowed `RawValue` is, in a form the one-pass scanner can make too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawJson<'a>(&'a str);

impl<'a> RawJson<'a> {
    pub fn get(self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de RawValue>::deserialize(d).map(|raw| RawJson(raw.get()))
    }
}

/// serde_json's reading of a line's envelope: the reference the one-pass scanner is held to,
/// and the reader of every line it leaves (see [`super::envelope_scan`]).
pub(crate) fn reference_envelope(text: &str) -> Result<Envelope<'_>, serde_json::Error> {
    serde_json::from_str::<Envelope<'_>>(text)
}

/// The envelope of a line that is valid UTF-8, and whether `visit` was handed every member of
/// its `params` (see [`parse_envelope_visiting`]).
fn read_envelope<'a>(
    text: &'a str,
    visit: impl FnMut(&'a str, &'a str),
) -> Result<(Envelope<'a>, bool), serde_json::Error> {
    match super::envelope_scan::scan_visiting_params(text, visit) {
        Some((s, visited)) => Ok((
            Envelope {
                id: s.id.map(RawJson),
                method: s.method.map(Cow::Borrowed),
                params: s.params.map(RawJson),
                result: s.result.map(RawJson),
                error: s.error.map(RawJson),
            },
            visited,
        )),
        None => reference_envelope(text).map(|env| (env, false)),
    }
}

/// Why a client line could not even be routed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// Not UTF-8 or not JSON: -32700.
    Parse(String),
    /// JSON, but not a single request object (array batch, scalar, bad member types): -32600.
    Invalid(String),
}

impl Malformed {
    pub fn code(&self) -> i64 {
        match self {
            Malformed::Parse(_) => code::PARSE_ERROR,
            Malformed::Invalid(_) => code::INVALID_REQUEST,
        }
    }
    pub fn message(&self) -> &str {
        match self {
            Malformed::Parse(m) | Malformed::Invalid(m) => m,
        }
    }
}

const BATCH: &str = "JSON-RPC batches (arrays) are not part of MCP since 2025-06-18 and mcpjail \
                     does not accept them; send one message per line";

/// Read the envelope of one line, classifying failures as parse errors or invalid requests.
pub fn parse_envelope(content: &[u8]) -> Result<Envelope<'_>, Malformed> {
    parse_envelope_visiting(content, |_, _| {}).map(|(env, _)| env)
}

/// [`parse_envelope`], handing each member of `params` (its key, and its value's raw text) to
/// `visit` in the same walk when `params` is an object. The second value says whether every
/// member was handed over; when it is `false` (a line the one-pass scan left to the reference
/// reader, or params that are not an object) the visits, if any, mean nothing.
pub fn parse_envelope_visiting<'a>(
    content: &'a [u8],
    visit: impl FnMut(&'a str, &'a str),
) -> Result<(Envelope<'a>, bool), Malformed> {
    // Serde reads a struct from an array too (its members in field order), so a batch would
    // parse as an envelope whose `id` is the first request: say what it is before that.
    let first = content.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'[') && serde_json::from_slice::<IgnoredAny>(content).is_ok() {
        return Err(Malformed::Invalid(BATCH.into()));
    }
    // One UTF-8 check of the whole line, then a parse that need not check each string again:
    // `from_slice` validates every key, string and raw value it meets on its own.
    let parsed = match std::str::from_utf8(content) {
        Ok(text) => read_envelope(text, visit).map_err(Some),
        Err(_) => Err(None),
    };
    match parsed {
        Ok((env, visited)) => {
            if let Some(id) = env.id {
                let first = id.get().as_bytes().first().copied();
                // JSON-RPC ids are strings, numbers or null; objects/arrays are refused so
                // they cannot be used to confuse id matching.
                if matches!(first, Some(b'{') | Some(b'[')) {
                    return Err(Malformed::Invalid(
                        "the request id must be a string, a number or null".into(),
                    ));
                }
            }
            Ok((env, visited))
        }
        Err(err) => {
            if content.starts_with("\u{feff}".as_bytes()) {
                return Err(Malformed::Parse(
                    "the line starts with a byte-order mark (U+FEFF); JSON-RPC messages on stdio \
                     must start with `{`"
                        .into(),
                ));
            }
            if std::str::from_utf8(content).is_err() {
                return Err(Malformed::Parse("the message is not valid UTF-8".into()));
            }
            let err = err.map(|e| e.to_string()).unwrap_or_default();
            match serde_json::from_slice::<IgnoredAny>(content) {
                Err(_) => Err(Malformed::Parse(format!("the message is not JSON: {err}"))),
                Ok(_) => {
                    let first = content
                        .iter()
                        .find(|b| !b.is_ascii_whitespace())
                        .copied()
                        .unwrap_or(b' ');
                    Err(Malformed::Invalid(if first == b'[' {
                        BATCH.into()
                    } else if first != b'{' {
                        "a JSON-RPC message must be a JSON object".into()
                    } else {
                        format!("not a valid JSON-RPC message: {err}")
                    }))
                }
            }
        }
    }
}

/// The id of a line that could not be parsed as it is (not UTF-8, a byte-order mark), so the
/// refusal answers the request the client is waiting for instead of `id: null`. `None` when
/// no id can be read even from a repaired copy.
pub fn recover_id(content: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(content);
    let text = text.trim_start_matches('\u{feff}');
    let env = reference_envelope(text).ok()?;
    let id = env.id?.get();
    // The same rule as for parsed lines: ids are strings, numbers or null.
    (!id.starts_with('{') && !id.starts_with('[')).then(|| id.to_string())
}

/// The table key of the id a line that could not be parsed answers, when it can be read (see
/// [`recover_id`]) and the line is not a request of its own (no `method`): the request it was
/// meant to answer can then be failed at once instead of when the server exits.
pub fn recover_answer_key(content: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(content);
    let text = text.trim_start_matches('\u{feff}');
    let env = reference_envelope(text).ok()?;
    if env.method.is_some() {
        return None;
    }
    let id = env.id?;
    (!id.get().starts_with('{') && !id.get().starts_with('[')).then(|| id_key(id).into_owned())
}

/// Why a request's `params` cannot be judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamsError {
    /// The same key twice in one object: the proxy and the server could read different values.
    DuplicateKey(String),
    /// Not JSON.
    Invalid(String),
}

/// Parse `params` for inspection (the original bytes are what is forwarded).
///
/// JSON allows a lone UTF-16 surrogate escape (`"a\ud800b"`, which the TypeScript SDK sends
/// for such JavaScript strings); a Rust string cannot hold one. The copy inspected has U+FFFD
/// in its place — what Node writes when such a string becomes a file name (Python refuses to
/// encode it at all), so a path check sees the name the server would use.
pub fn parse_params(text: &str) -> Result<Value, ParamsError> {
    let text = replace_lone_surrogates(text);
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(&text);
    let parsed = UniqueKeys(&duplicate)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    match (parsed, duplicate.into_inner()) {
        (_, Some(key)) => Err(ParamsError::DuplicateKey(key)),
        (Ok(v), None) => Ok(v),
        (Err(e), None) => Err(ParamsError::Invalid(e.to_string())),
    }
}

/// `text` with every `\uD800`–`\uDFFF` escape that is not half of a surrogate pair replaced by
/// `\uFFFD`. Borrowed when there is none (the common case costs one scan).
pub(crate) fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    let b = text.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let digits = text.get(at..at + 4)?;
        u16::from_str_radix(digits, 16).ok()
    };
    let escape_at = |at: usize| -> Option<u16> {
        (b.get(at) == Some(&b'\\') && b.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut lone: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(0xD800..=0xDBFF) => match escape_at(i + 6) {
                Some(0xDC00..=0xDFFF) => i += 12,
                _ => {
                    lone.push(i);
                    i += 6;
                }
            },
            Some(0xDC00..=0xDFFF) => {
                lone.push(i);
                i += 6;
            }
            Some(_) => i += 6,
            // `\\`, `\"`, `\n`…: skip the escaped character.
            None => i += 2,
        }
    }
    if lone.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for at in lone {
        out.push_str(&text[last..at]);
        out.push_str("\\ufffd");
        last = at + 6;
    }
    out.push_str(&text[last..]);
    Cow::Owned(out)
}

/// A request id normalised for map lookups: the id re-serialised from its parsed value, so
/// `"a"` and `"\u0061"` (which a server may echo back either way) match. Borrowed from the
/// line where its raw text already is that form (nearly always): a lookup allocates nothing.
pub fn id_key(id: RawJson<'_>) -> Cow<'_, str> {
    // Every call has two ids to key (the request's and the answer's), and nearly all are small
    // integers or plain strings, whose raw text already is the canonical form: a JSON string
    // without a backslash has nothing to unescape, and digits without a leading zero print as
    // themselves. Anything else goes through a full parse.
    let raw = id.get();
    let digits = |t: &str| {
        !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) && (t == "0" || !t.starts_with('0'))
    };
    let plain_string =
        raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') && !raw.contains('\\');
    let integer = match raw.strip_prefix('-') {
        Some(magnitude) => magnitude != "0" && digits(magnitude),
        None => digits(raw),
    };
    if plain_string || (raw.len() <= 18 && integer) {
        return Cow::Borrowed(raw);
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v) => Cow::Owned(v.to_string()),
        Err(_) => Cow::Borrowed(raw),
    }
}

/// Builds the `Value` and refuses, in the same pass, an object that has a key twice (serde's
/// own `Value` keeps the last, while a server may read the first). The key is left in the cell:
/// the error serde reports for it would not say which key it was.
struct UniqueKeys<'f>(&'f RefCell<Option<String>>);

impl<'de> DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueKeys<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(UniqueKeys(self.0))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = serde_json::Map::new();
        // Keys are unescaped by serde_json, so `"a"` and `"\u0061"` count as the same key.
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                *self.0.borrow_mut() = Some(key);
                return Err(de::Error::custom("duplicate key"));
            }
            let value = map.next_value_seed(UniqueKeys(self.0))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// What the first part of a long, still incomplete line says about itself.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PrefixPeek {
    /// The raw text of a top-level `id` member, if it was complete in the prefix.
    pub id: Option<String>,
    /// A top-level `result` or `error` key was reached: the message is a response.
    pub response: bool,
    /// A top-level `method` key was reached.
    pub method: bool,
}

/// Read the top-level members of a truncated JSON object until the data runs out. Used to
/// route a huge server response before all of it has arrived, so it can be streamed through.
pub fn peek_prefix(prefix: &[u8]) -> PrefixPeek {
    let found = RefCell::new(PrefixPeek::default());
    let mut de = serde_json::Deserializer::from_slice(prefix);
    // The error at the truncation point is expected; what was seen before it is kept.
    let _ = de::Deserializer::deserialize_map(&mut de, Peek(&found));
    found.into_inner()
}

struct Peek<'f>(&'f RefCell<PrefixPeek>);

impl<'de> Visitor<'de> for Peek<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match key.as_ref() {
                "id" => {
                    let id: Box<RawValue> = map.next_value()?;
                    self.0.borrow_mut().id = Some(id.get().to_string());
                }
                "result" | "error" => {
                    self.0.borrow_mut().response = true;
                    map.next_value::<IgnoredAny>()?;
                }
                "method" => {
                    self.0.borrow_mut().method = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A JSON-RPC error response line (with trailing newline). `id` is the raw id text or `null`.
pub fn error_line(id: Option<&str>, code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    // Fields in the order `json!` would give them (sorted), so lines look as they always did.
    #[derive(serde::Serialize)]
    struct Line<'a> {
        error: Value,
        id: &'a RawValue,
        jsonrpc: &'static str,
    }
    to_line(&Line {
        error,
        id: raw_id(id),
        jsonrpc: "2.0",
    })
}

/// A JSON-RPC success response line (with trailing newline).
pub fn result_line(id: &str, result: Value) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        id: &'a RawValue,
        jsonrpc: &'static str,
        result: Value,
    }
    to_line(&Line {
        id: raw_id(Some(id)),
        jsonrpc: "2.0",
        result,
    })
}

/// The request's id as the client wrote it: an id that is valid JSON but that no `Value` holds
/// (`1e400` overflows a float) still comes back as its own id, not `null`, so the client is
/// never left without an answer it can match. `null` when there is none.
fn raw_id(id: Option<&str>) -> &RawValue {
    let null: &'static RawValue = serde_json::from_str("null").unwrap_or_else(|_| unreachable!());
    id.and_then(|raw| serde_json::from_str::<&RawValue>(raw.trim()).ok())
        .unwrap_or(null)
}

fn to_line(line: &impl serde::Serialize) -> Vec<u8> {
    let mut out = serde_json::to_vec(line).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_malformed_lines() {
        assert!(matches!(
            parse_envelope(b"garbage"),
            Err(Malformed::Parse(_))
        ));
        assert!(matches!(
            parse_envelope(b"{\"a\": \xff}"),
            Err(Malformed::Parse(_))
        ));
        assert!(matches!(
            parse_envelope(b"[{\"jsonrpc\":\"2.0\"}]"),
            Err(Malformed::Invalid(_))
        ));
        assert!(matches!(parse_envelope(b"42"), Err(Malformed::Invalid(_))));
        assert!(matches!(
            parse_envelope(br#"{"method":"a","method":"b"}"#),
            Err(Malformed::Invalid(_))
        ));
        assert!(matches!(
            parse_envelope(br#"{"id":{"x":1},"method":"a"}"#),
            Err(Malformed::Invalid(_))
        ));
        let env =
            parse_envelope(br#"{"jsonrpc":"2.0","id":7,"method":"tools\/call","params":{"x":1}}"#)
                .unwrap();
        assert_eq!(env.method.as_deref(), Some("tools/call"));
        assert_eq!(env.params.unwrap().get(), r#"{"x":1}"#);
    }

    /// A batch of requests is named as a batch, not as "a request id that is an object" (serde
    /// reads a struct from an array, so the first request would otherwise be taken as the id).
    #[test]
    fn a_batch_is_refused_as_a_batch() {
        for line in [
            &br#"[{"jsonrpc":"2.0","id":"b","method":"ping"}]"#[..],
            br#" [{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#,
            b"[]",
        ] {
            let err = parse_envelope(line).unwrap_err();
            assert_eq!(err, Malformed::Invalid(BATCH.into()));
        }
    }

    #[test]
    fn finds_duplicate_keys_at_any_depth_and_through_escapes() {
        let dup = |json| match parse_params(json) {
            Err(ParamsError::DuplicateKey(k)) => Some(k),
            _ => None,
        };
        assert_eq!(dup(r#"{"a":1,"b":2}"#), None);
        assert_eq!(dup(r#"{"a":{"p":"x","p":"y"}}"#), Some("p".into()));
        assert_eq!(dup(r#"{"l":[{"q":1,"\u0071":2}]}"#), Some("q".into()));
        assert_eq!(dup(r#"[{"k":1},{"k":2}]"#), None);
        // The same value serde's own Value gives, numbers and nesting included.
        let text =
            r#"{"n":-1,"u":18446744073709551615,"f":1.5e3,"s":"\u00e9","z":null,"t":[true,{}]}"#;
        assert_eq!(
            parse_params(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn peeks_into_truncated_responses() {
        let p = peek_prefix(br#"{"jsonrpc":"2.0","id":"big-1","result":{"content":[{"text":"xxxx"#);
        assert_eq!(p.id.as_deref(), Some(r#""big-1""#));
        assert!(p.response && !p.method);
        let p = peek_prefix(br#"{"result":{"content":[{"text":"xxxx"#);
        assert_eq!(
            p,
            PrefixPeek {
                id: None,
                response: true,
                method: false
            }
        );
        let p = peek_prefix(br#"{"id":3,"method":"sampling/createMessage","params":{"x":"#);
        assert!(p.method && !p.response);
    }

    #[test]
    fn answers_carry_the_id_as_the_client_wrote_it() {
        for raw in ["1e400", "7", r#""\u0061b""#, "-0.5"] {
            let line = error_line(Some(raw), code::INTERNAL_ERROR, "x", None);
            let text = String::from_utf8(line).unwrap();
            assert!(text.contains(&format!(r#""id":{raw},"#)), "{text}");
            let line = result_line(raw, json!({}));
            assert!(String::from_utf8(line)
                .unwrap()
                .contains(&format!(r#""id":{raw},"#)));
        }
        let none = String::from_utf8(error_line(None, code::PARSE_ERROR, "x", None)).unwrap();
        assert_eq!(
            none,
            "{\"error\":{\"code\":-32700,\"message\":\"x\"},\"id\":null,\"jsonrpc\":\"2.0\"}\n"
        );
    }

    #[test]
    fn id_keys_take_the_raw_text_only_where_it_is_canonical() {
        for raw in [
            "1",
            "0",
            "-7",
            "123456789012345678",
            r#""a""#,
            r#""""#,
            r#""é""#,
            "-0",
            "1.0",
            "1e3",
            "12345678901234567890",
            r#""\u0061""#,
            r#""a\"b""#,
            "null",
        ] {
            let id = RawJson(raw);
            let full = serde_json::from_str::<Value>(raw).unwrap().to_string();
            assert_eq!(id_key(id), full, "{raw}");
        }
    }

    #[test]
    fn id_keys_normalise_escapes() {
        let (a, b) = (RawJson(r#""a""#), RawJson(r#""\u0061""#));
        assert_eq!(id_key(a), id_key(b));
    }

    #[test]
    fn lone_surrogates_are_inspected_as_replacement_characters() {
        let v = parse_params(
            r#"{"arguments":{"m":"a\ud800b","p":"\udc00","ok":"\ud83d\ude00","esc":"\\ud800"}}"#,
        )
        .unwrap();
        assert_eq!(v["arguments"]["m"], "a\u{fffd}b");
        assert_eq!(v["arguments"]["p"], "\u{fffd}");
        assert_eq!(v["arguments"]["ok"], "\u{1f600}");
        // An escaped backslash followed by `ud800` is plain text, not an escape.
        assert_eq!(v["arguments"]["esc"], "\\ud800");
        assert_eq!(
            parse_params(r#"{"a":1,"a":2}"#),
            Err(ParamsError::DuplicateKey("a".into()))
        );
        assert!(matches!(parse_params("{"), Err(ParamsError::Invalid(_))));
    }

    #[test]
    fn an_id_is_recovered_from_a_line_that_is_not_utf8_or_starts_with_a_bom() {
        let mut line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"p":""#.to_vec();
        line.extend_from_slice(&[0xff, 0xfe]);
        line.extend_from_slice(br#""}}"#);
        assert!(matches!(parse_envelope(&line), Err(Malformed::Parse(_))));
        assert_eq!(recover_id(&line).as_deref(), Some("7"));
        let bom = "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"ping\"}";
        match parse_envelope(bom.as_bytes()) {
            Err(Malformed::Parse(m)) => assert!(m.contains("byte-order mark"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(recover_id(bom.as_bytes()).as_deref(), Some("\"x\""));
        assert_eq!(recover_id(b"not json"), None);
    }
}
