//! One parse of a checked request's `params` (`tools/call`, `resources/read`): what the
//! checks need, read once, or why it cannot be judged.

use std::borrow::Cow;

use serde_json::Value;

use super::super::{envelope_scan, message};
use super::Kind;
use crate::policy::{Arguments, FlatArguments};

/// What a checked request asks for, borrowing from its line where it can.
#[derive(Debug)]
pub(crate) enum Checked<'a> {
    /// `tools/call`: a tool and its arguments (an object; absent or `null` is `{}`).
    Tool {
        name: Cow<'a, str>,
        arguments: ToolArguments<'a>,
    },
    /// `resources/read` of a `file:` URI (as WHATWG URL parsers read it).
    FileRead { uri: String },
    /// `resources/read` of any other URI: nothing for the proxy to check.
    OtherResource,
}

/// A `tools/call`'s arguments: flat ones as they lie in the line, any other as a `Value`.
#[derive(Debug)]
pub(crate) enum ToolArguments<'a> {
    Flat(FlatArguments<'a>),
    Value(Value),
}

impl ToolArguments<'_> {
    /// For the checks, which walk either form alike.
    pub(crate) fn view(&self) -> Arguments<'_> {
        match self {
            ToolArguments::Flat(flat) => Arguments::Flat(flat),
            ToolArguments::Value(value) => Arguments::Value(value),
        }
    }
}

/// A parsed checked request.
#[derive(Debug)]
pub(crate) struct CheckedRequest<'a> {
    pub what: Checked<'a>,
    /// A 2026-07-28 request: the proxy's own answers carry `resultType`.
    pub stateless: bool,
    /// Its `params._meta` (for the proxy's own requests in that era).
    pub meta: Option<Value>,
}

/// Why a checked request cannot be judged.
#[derive(Debug)]
pub(crate) enum Unjudgeable {
    /// Answered as invalid params (-32602, logged as a denial).
    Params(String),
    /// Not JSON params at all (-32600).
    Malformed(String),
}

/// Parse `params_text` (the raw `params`, `{}` when absent) of a request of `kind`. `plain` is
/// what the envelope scan already read of the params' members, when it could (see
/// [`PlainParams`]).
pub(crate) fn parse<'a>(
    kind: Kind,
    params_text: &'a str,
    plain: Option<&PlainParams<'a>>,
) -> Result<CheckedRequest<'a>, Unjudgeable> {
    if kind == Kind::ToolsCall {
        let request = match plain {
            Some(plain) => plain.request(),
            None => plain_tool_call(params_text),
        };
        if let Some(request) = request {
            return Ok(request);
        }
    }
    parse_whole(kind, params_text)
}

/// Most keys a `tools/call`'s params may have for [`plain_tool_call`] to read it.
const MAX_PLAIN_MEMBERS: usize = 16;

/// The members of a `tools/call`'s params that [`plain_tool_call`] reads, gathered one at a
/// time: by the envelope scan as it walks the line
/// (`envelope_scan::scan_visiting_params`), or by walking the params again.
///
/// Every client line starts one, so it is small: the three members it reads are their own
/// fields (a second one of each is a key given twice), and only the rare other keys are kept in
/// a list (a 16-key array here was 32 stores a line).
#[derive(Debug, Default)]
pub(crate) struct PlainParams<'a> {
    count: usize,
    name: Option<&'a str>,
    arguments: Option<&'a str>,
    meta: Option<&'a str>,
    others: Vec<&'a str>,
    /// Something [`plain_tool_call`] leaves to [`parse_whole`] was met.
    unusual: bool,
}

impl<'a> PlainParams<'a> {
    /// One member of the params, in the order they are written.
    pub(crate) fn visit(&mut self, key: &'a str, value: &'a str) {
        if !self.unusual && self.take(key, value).is_none() {
            self.unusual = true;
        }
    }

    fn take(&mut self, key: &'a str, value: &'a str) -> Option<()> {
        if self.count == MAX_PLAIN_MEMBERS {
            return None;
        }
        self.count += 1;
        match key {
            "name" if self.name.is_none() => self.name = Some(envelope_scan::plain_string(value)?),
            "arguments" if self.arguments.is_none() => self.arguments = Some(value),
            "_meta" if self.meta.is_none() => self.meta = Some(value),
            // Given twice.
            "name" | "arguments" | "_meta" => return None,
            _ if !plain_scalar(value) || self.others.contains(&key) => return None,
            _ => self.others.push(key),
        }
        Some(())
    }

    /// The request the visited members make (see [`plain_tool_call`]).
    fn request(&self) -> Option<CheckedRequest<'a>> {
        if self.unusual {
            return None;
        }
        let name = self.name?;
        let arguments = match self.arguments {
            None | Some("null") => ToolArguments::Flat(FlatArguments::default()),
            Some(raw) if raw.starts_with('{') => match flat_arguments(raw) {
                Some(flat) => ToolArguments::Flat(flat),
                None => ToolArguments::Value(message::parse_params(raw).ok()?),
            },
            Some(_) => return None,
        };
        let meta = match self.meta {
            Some(raw) => Some(message::parse_params(raw).ok()?),
            None => None,
        };
        let stateless = meta
            .as_ref()
            .is_some_and(super::super::era::meta_is_stateless);
        Some(CheckedRequest {
            what: Checked::Tool {
                name: Cow::Borrowed(name),
                arguments,
            },
            stateless,
            meta,
        })
    }
}

/// An ordinary `tools/call` read without a `Value` for its params: only `arguments` (and a
/// `_meta`, if there is one) are parsed, the rest is looked at where it lies. `None` sends
/// the params to [`parse_whole`], which decides and words every refusal: anything unusual (a
/// key given twice or with an escape, a `name` that is not a plain string, `arguments` that
/// are not an object, another member that is not a [`plain_scalar`]) and anything it would
/// refuse.
fn plain_tool_call(params_text: &str) -> Option<CheckedRequest<'_>> {
    let mut plain = PlainParams::default();
    envelope_scan::members(params_text, |key, value| {
        plain.visit(key, value);
        Some(())
    })?;
    plain.request()
}

/// `arguments` that are flat (see [`FlatArguments`]), read where they lie: serde's whole
/// machinery (and the lone-surrogate pass, which has nothing to repair without escapes) cost
/// ~1.2 k instructions for an ordinary call's `{"text":"hello"}`, and a `Value` of it ~1.1 k
/// to build and drop. `None` for anything else (a nested value, a key given twice, an
/// escape), which serde reads; `plain_reading_agrees` holds the two readings equal.
fn flat_arguments(raw: &str) -> Option<FlatArguments<'_>> {
    let mut flat = FlatArguments::default();
    envelope_scan::members(raw, |key, value| flat.push(key, value).then_some(()))?;
    flat.sorted()
}

/// A member value the whole reading is sure to take as it is: a string (its escapes were
/// checked by the scan, and a lone surrogate is repaired either way), `true`, `false`, `null`,
/// or an integer of at most 18 digits. Not an object or an array (a duplicate key could hide
/// in it), and not any other number: `1e999` is out of serde_json's range, and the whole
/// reading refuses it.
fn plain_scalar(value: &str) -> bool {
    match value.as_bytes().first() {
        Some(b'"' | b't' | b'f' | b'n') => true,
        Some(b'-' | b'0'..=b'9') => {
            let digits = value.strip_prefix('-').unwrap_or(value);
            digits.len() <= 18 && digits.bytes().all(|b| b.is_ascii_digit())
        }
        _ => false,
    }
}

/// Whether [`plain_tool_call`] reads `params` as [`parse_whole`] does, or defers: `Err` with
/// both readings when it does not. For the tests and the `message` fuzz target.
pub(crate) fn plain_reading_agrees(params: &str) -> Result<(), String> {
    let Some(fast) = plain_tool_call(params) else {
        return Ok(());
    };
    let fast = shown(&Ok(fast));
    let whole = shown(&parse_whole(Kind::ToolsCall, params));
    if fast == whole {
        Ok(())
    } else {
        Err(format!(
            "params {params:?}: read without a Value as {fast}, whole as {whole}"
        ))
    }
}

/// A reading as [`plain_reading_agrees`] compares it: the arguments as a `Value`, whichever
/// form they were read in.
fn shown(reading: &Result<CheckedRequest<'_>, Unjudgeable>) -> String {
    match reading {
        Ok(CheckedRequest {
            what: Checked::Tool { name, arguments },
            stateless,
            meta,
        }) => format!(
            "Ok(Tool {{ name: {name:?}, arguments: {:?}, stateless: {stateless}, meta: {meta:?} }})",
            arguments.view().to_value()
        ),
        other => format!("{other:?}"),
    }
}

/// Whether the members of `line`'s params, as the envelope scan hands them over while it walks
/// the line, read as walking the scanned params again reads them (`Err` with both readings when
/// not). For the tests and the `message` fuzz target.
pub(crate) fn visited_reading_agrees(line: &str) -> Result<(), String> {
    let mut plain = PlainParams::default();
    let Some((scanned, visited)) =
        envelope_scan::scan_visiting_params(line, |key, value| plain.visit(key, value))
    else {
        return Ok(());
    };
    let object = scanned.params.filter(|p| p.starts_with('{'));
    match object {
        Some(params) if visited => {
            let seen = format!("{:?}", plain.request());
            let again = format!("{:?}", plain_tool_call(params));
            if seen == again {
                Ok(())
            } else {
                Err(format!(
                    "line {line:?}: params read from the scan's visits as {seen}, walked again as {again}"
                ))
            }
        }
        None if !visited => Ok(()),
        _ => Err(format!(
            "line {line:?}: params {:?}, but the scan says it visited them: {visited}",
            scanned.params
        )),
    }
}

/// [`parse`] by way of one `Value` for all of `params_text`.
fn parse_whole(kind: Kind, params_text: &str) -> Result<CheckedRequest<'static>, Unjudgeable> {
    // Two equal keys could be read one way here and another way by the server.
    let mut params: Value = match message::parse_params(params_text) {
        Ok(v) => v,
        Err(message::ParamsError::DuplicateKey(key)) => {
            return Err(Unjudgeable::Params(format!(
                "duplicate key `{key}` in params: refused, because the proxy and the server could read different values"
            )))
        }
        Err(message::ParamsError::Invalid(e)) => {
            return Err(Unjudgeable::Malformed(format!("bad params: {e}")))
        }
    };
    let stateless = super::super::era::is_stateless(&params);
    let meta = params.get("_meta").cloned();
    let what = if kind == Kind::ToolsCall {
        let Some(name) = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return Err(Unjudgeable::Params(
                "tools/call needs a string `name`".into(),
            ));
        };
        // Moved out, not cloned: `params` is not looked at again.
        let arguments = match params.get_mut("arguments").map(Value::take) {
            None | Some(Value::Null) => Value::Object(serde_json::Map::new()),
            Some(a) if a.is_object() => a,
            Some(_) => {
                return Err(Unjudgeable::Params(
                    "tools/call `arguments` must be an object".into(),
                ))
            }
        };
        Checked::Tool {
            name: Cow::Owned(name),
            arguments: ToolArguments::Value(arguments),
        }
    } else {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(Unjudgeable::Params(
                "resources/read needs a string `uri`".into(),
            ));
        };
        // As the server's URL parser reads it: `" file:…"` and `"fi\tle:…"` are file URLs too.
        if crate::policy::file_url::is_file_url(uri) {
            Checked::FileRead {
                uri: uri.to_string(),
            }
        } else {
            Checked::OtherResource
        }
    };
    Ok(CheckedRequest {
        what,
        stateless,
        meta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_call_once_and_says_why_it_cannot() {
        let r = parse_both(Kind::ToolsCall, r#"{"name":"t"}"#).unwrap();
        assert!(
            matches!(r.what, Checked::Tool { ref arguments, .. } if arguments.view().to_value() == serde_json::json!({}))
        );
        assert!(!r.stateless);
        let r = parse_both(
            Kind::ToolsCall,
            r#"{"name":"t","arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        )
        .unwrap();
        assert!(r.stateless);
        assert!(matches!(
            parse_both(Kind::ToolsCall, r#"{"name":"t","arguments":[1]}"#),
            Err(Unjudgeable::Params(_))
        ));
        assert!(matches!(
            parse_both(Kind::ToolsCall, r#"{"name":"t","name":"u"}"#),
            Err(Unjudgeable::Params(_))
        ));
        assert!(matches!(
            parse_both(Kind::ToolsCall, r#"[1"#),
            Err(Unjudgeable::Malformed(_))
        ));
        assert!(matches!(
            parse_both(Kind::ResourcesRead, r#"{"uri":"FILE:///x"}"#)
                .unwrap()
                .what,
            Checked::FileRead { .. }
        ));
        // What the server's URL parser reads as `file:` is checked as a file read.
        for uri in [r#"" file:///x""#, r#""fi\tle:///x""#, r#""\u0001FILE:/x""#] {
            assert!(matches!(
                parse_both(Kind::ResourcesRead, &format!(r#"{{"uri":{uri}}}"#))
                    .unwrap()
                    .what,
                Checked::FileRead { .. }
            ));
        }
        assert!(matches!(
            parse_both(Kind::ResourcesRead, r#"{"uri":"mem://x"}"#)
                .unwrap()
                .what,
            Checked::OtherResource
        ));
    }

    /// The fast reading either defers or is exactly the whole one, and the params' members as
    /// the envelope scan visits them read as the params themselves.
    fn agrees(params: &str) {
        if let Err(why) = plain_reading_agrees(params) {
            panic!("{why}");
        }
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#);
        if let Err(why) = visited_reading_agrees(&line) {
            panic!("{why}");
        }
    }

    /// [`parse`] as the router calls it, with the members the envelope scan visited, and with
    /// none: the two give the same answer, which is returned.
    fn parse_both(kind: Kind, params: &str) -> Result<CheckedRequest<'_>, Unjudgeable> {
        let alone = parse(kind, params, None);
        let line = format!(r#"{{"id":1,"method":"m","params":{params}}}"#);
        let mut plain = PlainParams::default();
        if let Some((_, true)) =
            envelope_scan::scan_visiting_params(&line, |key, value| plain.visit(key, value))
        {
            let visited = parse(kind, params, Some(&plain));
            assert_eq!(format!("{visited:?}"), format!("{alone:?}"), "{params}");
        }
        alone
    }

    #[test]
    fn reads_ordinary_calls_without_a_value_for_their_params() {
        for params in [
            r#"{"name":"echo","arguments":{"text":"hello 7"}}"#,
            r#"{"arguments":{"path":"/tmp/a","n":[1,{"x":null}]},"name":"read_file"}"#,
            r#"{"name":"t"}"#,
            r#"{"name":"t","arguments":null}"#,
            r#"{"name":"t","arguments":{"s":"a\ud800b"},"_meta":{"progressToken":1}}"#,
            r#"{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            r#"{"name":"t","_meta":null,"task":true,"ttl":5,"n":-123456789012345678,"s":"x"}"#,
            r#"{"name":"t","arguments":{"s":"x","u":"é/ü","n":0,"m":-7,"b":true,"f":false,"z":null}}"#,
            r#"{"name":"t","arguments":{"n":999999999999999999,"m":-999999999999999999}}"#,
            r#"{"name":"t","arguments":{}}"#,
            // Each of these leaves the flat build to serde.
            r#"{"name":"t","arguments":{"n":-0}}"#,
            r#"{"name":"t","arguments":{"x":1.5}}"#,
            r#"{"name":"t","arguments":{"y":1e2}}"#,
            r#"{"name":"t","arguments":{"s":"a\\b"}}"#,
            r#"{"name":"t","arguments":{"s":"a\ud800b"}}"#,
        ] {
            assert!(plain_tool_call(params).is_some(), "deferred {params}");
            agrees(params);
        }
    }

    #[test]
    fn leaves_every_refusal_and_oddity_to_the_whole_reading() {
        for params in [
            r#"{"name":"t","name":"u"}"#,
            r#"{"name":"t","arguments":{"a":1,"a":2}}"#,
            r#"{"name":"t","arguments":{"a":"x","a":"y"}}"#,
            r#"{"name":"t","extra":{"a":1,"a":2}}"#,
            r#"{"name":"t","big":55555515555155555.5E555}"#,
            r#"{"name":"t","n":1.5}"#,
            r#"{"name":"t","n":1234567890123456789}"#,
            r#"{"name":"t","_meta":{"a":1,"a":2}}"#,
            r#"{"name":"t","arguments":[1]}"#,
            r#"{"name":"t","arguments":"x"}"#,
            r#"{"name":"t\u0041"}"#,
            r#"{"n\u0061me":"t"}"#,
            r#"{"name":5}"#,
            r#"{"arguments":{}}"#,
            r#"[1"#,
            "[]",
            "{}",
        ] {
            assert!(plain_tool_call(params).is_none(), "{params}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]

        #[test]
        fn the_fast_reading_defers_or_agrees(params in crate::proxy::envelope_scan::tests::spliced_into(vec![
            r#"{"name":"echo","arguments":{"text":"hello","n":[1,{"u":null}]}}"#,
            r#"{"arguments":{"p":"/a"},"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
            r#"{"name":"t","arguments":null,"_meta":{"progressToken":"x"}}"#,
            r#"{"name":"t","arguments":{"s":"x","n":10,"m":-7,"b":true,"z":null,"f":false}}"#,
        ])) {
            agrees(&params);
        }
    }
}
