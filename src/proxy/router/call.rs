//! One parse of a checked request's `params` (`tools/call`, `resources/read`): what the
//! checks need, read once, or why it cannot be judged.

use serde_json::{json, Value};

use super::super::message;
use super::Kind;

/// What a checked request asks for.
#[derive(Debug)]
pub(crate) enum Checked {
    /// `tools/call`: a tool and its arguments (an object; absent or `null` is `{}`).
    Tool { name: String, arguments: Value },
    /// `resources/read` of a `file:` URI.
    FileRead { uri: String },
    /// `resources/read` of any other URI: nothing for the proxy to check.
    OtherResource,
}

/// A parsed checked request.
#[derive(Debug)]
pub(crate) struct CheckedRequest {
    pub what: Checked,
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

/// Parse `params_text` (the raw `params`, `{}` when absent) of a request of `kind`.
pub(crate) fn parse(kind: Kind, params_text: &str) -> Result<CheckedRequest, Unjudgeable> {
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
            None | Some(Value::Null) => json!({}),
            Some(a) if a.is_object() => a,
            Some(_) => {
                return Err(Unjudgeable::Params(
                    "tools/call `arguments` must be an object".into(),
                ))
            }
        };
        Checked::Tool { name, arguments }
    } else {
        let Some(uri) = params.get("uri").and_then(Value::as_str) else {
            return Err(Unjudgeable::Params(
                "resources/read needs a string `uri`".into(),
            ));
        };
        if uri
            .get(..5)
            .is_some_and(|s| s.eq_ignore_ascii_case("file:"))
        {
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
        let r = parse(Kind::ToolsCall, r#"{"name":"t"}"#).unwrap();
        assert!(matches!(r.what, Checked::Tool { ref arguments, .. } if arguments == &json!({})));
        assert!(!r.stateless);
        let r = parse(
            Kind::ToolsCall,
            r#"{"name":"t","arguments":null,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        )
        .unwrap();
        assert!(r.stateless);
        assert!(matches!(
            parse(Kind::ToolsCall, r#"{"name":"t","arguments":[1]}"#),
            Err(Unjudgeable::Params(_))
        ));
        assert!(matches!(
            parse(Kind::ToolsCall, r#"{"name":"t","name":"u"}"#),
            Err(Unjudgeable::Params(_))
        ));
        assert!(matches!(
            parse(Kind::ToolsCall, r#"[1"#),
            Err(Unjudgeable::Malformed(_))
        ));
        assert!(matches!(
            parse(Kind::ResourcesRead, r#"{"uri":"FILE:///x"}"#)
                .unwrap()
                .what,
            Checked::FileRead { .. }
        ));
        assert!(matches!(
            parse(Kind::ResourcesRead, r#"{"uri":"mem://x"}"#)
                .unwrap()
                .what,
            Checked::OtherResource
        ));
    }
}
