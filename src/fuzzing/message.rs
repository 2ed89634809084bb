//! One client line through the proxy's inspection: envelope, request kind, params, and the
//! `tools/call` / `resources/read` check (`proxy::message`, `proxy::router::call`,
//! `proxy::check`).
//!
//! Invariants: nothing panics; the one-pass envelope scanner either defers a line or reads it
//! exactly as serde_json does; an ordinary `tools/call`'s params read without a `Value`
//! (`call::plain_reading_agrees`) are read exactly as the whole reading does, and flat arguments
//! read where they lie are judged exactly as their `Value` is; a line that is
//! not a JSON object is refused with -32700 or -32600; params with a duplicate key are never judged (the server could read the other
//! value); a call the check allows has every path argument resolved inside the scope for the
//! access its tool needs; the proxy's own answers (errors, denials) are valid JSON-RPC lines
//! that carry the request's id.

use std::path::PathBuf;

use serde_json::Value;

use crate::policy::{Access, Arguments, ResolveContext, Scope, ScopeEntry, ScopeSource, ToolInfo};
use crate::proxy::check::check_tool_call;
use crate::proxy::message::{self, code};
use crate::proxy::router::call::{self, Checked, ToolArguments};
use crate::proxy::router::Kind;

use super::NOWHERE;

pub fn run(data: &[u8]) {
    let content = crate::proxy::framing::Frame::content(data);
    let _ = message::recover_id(content);
    if let Ok(text) = std::str::from_utf8(content) {
        scanner_agrees(text);
        if let Err(why) = call::visited_reading_agrees(text) {
            panic!("{why}");
        }
    }
    let env = match message::parse_envelope(content) {
        Ok(env) => env,
        Err(m) => {
            assert!(matches!(
                m.code(),
                code::PARSE_ERROR | code::INVALID_REQUEST
            ));
            assert!(!m.message().is_empty());
            let line = message::error_line(None, m.code(), m.message(), None);
            assert_json_line(&line, None);
            return;
        }
    };
    let raw_id = env.id.map(|id| id.get().to_string());
    if let Some(id) = env.id {
        let _ = message::id_key(id);
    }
    let kind = match env.method.as_deref() {
        Some("tools/call") => Kind::ToolsCall,
        Some("resources/read") => Kind::ResourcesRead,
        _ => return,
    };
    let params = env.params.map(|p| p.get()).unwrap_or("{}");
    if kind == Kind::ToolsCall {
        if let Err(why) = call::plain_reading_agrees(params) {
            panic!("{why}");
        }
    }
    let duplicate = duplicate_key(params);
    let request = match call::parse(kind, params, None) {
        Ok(r) => r,
        Err(_) => return,
    };
    assert!(
        duplicate.is_none(),
        "params with a duplicate key {duplicate:?} were judged"
    );
    let (scope, ctx) = scope();
    match request.what {
        Checked::Tool { arguments, .. } => {
            // Learned from the call itself: a schema for its own argument names, so the schema
            // paths are exercised too. Read-only when the first argument name is short.
            let value = arguments.view().to_value();
            let tool = learned_tool(&value);
            for tool in [None, tool.as_ref()] {
                for kernel_stops_writes in [false, true] {
                    let check = |arguments| {
                        check_tool_call(&scope, &ctx, tool, false, kernel_stops_writes, arguments)
                    };
                    let verdict = check(arguments.view());
                    // Flat arguments, read where they lie, are judged as their `Value` is.
                    if let ToolArguments::Flat(_) = arguments {
                        let by_value = check(Arguments::Value(&value));
                        assert_eq!(
                            format!("{verdict:?}"),
                            format!("{by_value:?}"),
                            "flat arguments judged apart from their value: {params}"
                        );
                    }
                    check_verdict(&scope, &verdict, kernel_stops_writes, raw_id.as_deref());
                }
            }
        }
        Checked::FileRead { uri } => {
            let verdict = crate::proxy::check::check_resource_read(&scope, &ctx, &uri);
            check_verdict(&scope, &verdict, false, raw_id.as_deref());
        }
        Checked::OtherResource => {}
    }
}

/// The scanner answers only what serde_json would answer, member for member.
fn scanner_agrees(text: &str) {
    let Some(fast) = crate::proxy::envelope_scan::scan(text) else {
        return;
    };
    let reference = message::reference_envelope(text)
        .unwrap_or_else(|e| panic!("the scanner read a line serde_json refuses ({e}): {text:?}"));
    let method = reference.method.as_deref();
    assert_eq!(
        (fast.id, fast.method, fast.params, fast.result, fast.error),
        (
            reference.id.map(|r| r.get()),
            method,
            reference.params.map(|r| r.get()),
            reference.result.map(|r| r.get()),
            reference.error.map(|r| r.get())
        ),
        "the scanner and serde_json read {text:?} differently"
    );
}

fn scope() -> (Scope, ResolveContext) {
    let root = PathBuf::from(NOWHERE);
    let scope = Scope {
        write: vec![ScopeEntry {
            path: root.join("scope"),
            source: ScopeSource::Flag,
        }],
        read: vec![ScopeEntry {
            path: root.join("ro"),
            source: ScopeSource::Flag,
        }],
        deny: crate::policy::always_denied(Some(&root.join("home"))),
        ..Scope::default()
    };
    let ctx = ResolveContext {
        cwd: root.join("scope"),
        home: Some(root.join("home")),
    };
    (scope, ctx)
}

fn learned_tool(arguments: &Value) -> Option<ToolInfo> {
    let props: serde_json::Map<String, Value> = arguments
        .as_object()?
        .keys()
        .map(|k| (k.clone(), serde_json::json!({ "type": "string" })))
        .collect();
    let read_only = arguments
        .as_object()?
        .keys()
        .next()
        .is_some_and(|k| k.len() < 4);
    ToolInfo::from_tool(&serde_json::json!({
        "name": "fuzzed",
        "inputSchema": { "type": "object", "properties": props },
        "annotations": { "readOnlyHint": read_only },
    }))
}

fn check_verdict(
    scope: &Scope,
    verdict: &crate::proxy::check::Verdict,
    kernel_stops_writes: bool,
    id: Option<&str>,
) {
    match &verdict.refusal {
        None => {
            for p in &verdict.paths {
                let resolved = p.resolved.as_ref().expect("an allowed path is resolved");
                // With a fully enforcing jail, a write-tool's path under a read root is left
                // to the kernel: read scope is what the proxy vouches for then.
                let access = if kernel_stops_writes {
                    Access::Read
                } else {
                    p.access
                };
                assert!(
                    scope.check(resolved, access).is_ok(),
                    "allowed {:?} ({}) resolved to {} outside the scope",
                    p.raw,
                    p.argument,
                    resolved.display()
                );
            }
        }
        Some(refusal) => {
            assert!(!refusal.reason.is_empty());
            let result = refusal.as_tool_result();
            assert_eq!(result["isError"], Value::Bool(true));
            assert!(!refusal.text().is_empty());
            let line = message::result_line(id.unwrap_or("null"), result);
            assert_json_line(&line, id);
        }
    }
}

/// One JSON object on one line, answering `id` with the id's own text (even one no JSON value
/// can hold, such as 1e400).
fn assert_json_line(line: &[u8], id: Option<&str>) {
    #[derive(serde::Deserialize)]
    struct Reply<'a> {
        jsonrpc: &'a str,
        #[serde(borrow)]
        id: &'a serde_json::value::RawValue,
    }
    let (body, nl) = line.split_at(line.len().saturating_sub(1));
    assert_eq!(nl, b"\n", "a reply line ends with a newline");
    assert!(!body.contains(&b'\n'), "a reply is one line");
    serde_json::from_slice::<serde::de::IgnoredAny>(body).expect("a reply is JSON");
    let reply: Reply = serde_json::from_slice(body).expect("a reply has jsonrpc and id");
    assert_eq!(reply.jsonrpc, "2.0");
    assert_eq!(
        reply.id.get(),
        id.map_or("null", str::trim),
        "a reply carries the request's id as written"
    );
}

/// An oracle for the parser's duplicate-key refusal, written separately from it: the first key
/// any object of `json` has twice (keys compared unescaped), if `json` parses at all.
fn duplicate_key(json: &str) -> Option<String> {
    use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;

    struct Walk<'f>(&'f RefCell<Option<String>>);
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("JSON")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            while seq.next_element_seed(Walk(self.0))?.is_some() {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                if !seen.insert(key.clone()) && self.0.borrow().is_none() {
                    *self.0.borrow_mut() = Some(key);
                }
                map.next_value_seed(Walk(self.0))?;
            }
            Ok(())
        }
    }

    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(json);
    Walk(&found).deserialize(&mut de).ok()?;
    found.into_inner()
}
