//! Path-argument detection (`policy::detect`) over a generated schema and arguments.
//!
//! Input: a JSON array `[tool, arguments]` (a `tools/list` entry and a call's arguments; other
//! shapes are skipped). Invariants: nothing panics, whatever the schema (`$ref` cycles,
//! `anyOf` nests); every argument reported is a real string in the arguments at its JSON
//! pointer, with that value (or that value trimmed); with no schema, every string anywhere in the arguments that looks
//! like a path is reported (value heuristics apply to everything); past the caps, the scan
//! says so instead of returning a partial list (the proxy then refuses the call).

use std::collections::HashSet;

use serde_json::Value;

use crate::policy::detect::{looks_like_path, scan_arguments, ToolInfo};

pub fn run(data: &[u8]) {
    let Ok(Value::Array(pair)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let [tool, args] = pair.as_slice() else {
        return;
    };
    // `tools/call` arguments are an object (`proxy::router::call` refuses anything else).
    if !args.is_object() {
        return;
    }
    let info = ToolInfo::from_tool(tool);
    let Ok(unschema) = scan_arguments(None, args) else {
        return;
    };
    let reported: HashSet<String> = unschema.iter().map(|a| a.pointer.clone()).collect();
    for (pointer, value) in strings(args) {
        if looks_like_path(&value) {
            assert!(
                reported.contains(&pointer),
                "path-like {value:?} at {pointer} not reported without a schema"
            );
        }
    }
    for arg in &unschema {
        assert_at_pointer(args, &arg.pointer, &arg.value);
    }
    let Some(info) = info else {
        return;
    };
    let Ok(found) = scan_arguments(Some(&info), args) else {
        return;
    };
    for arg in &found {
        assert_at_pointer(args, &arg.pointer, &arg.value);
    }
}

/// The value reported is the string at its pointer, or that string trimmed (detection checks
/// the trimmed form too, for servers that trim their input).
fn assert_at_pointer(args: &Value, pointer: &str, value: &str) {
    let held = args.pointer(pointer).and_then(Value::as_str);
    assert!(
        held.is_some_and(|h| h == value || h.trim() == value),
        "reported {value:?} at {pointer}, which holds {held:?}"
    );
}

/// Every string in `v` with its JSON pointer.
fn strings(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), v)];
    while let Some((ptr, v)) = stack.pop() {
        match v {
            Value::String(s) => out.push((ptr, s.clone())),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    stack.push((format!("{ptr}/{i}"), item));
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    stack.push((format!("{ptr}/{k}"), item));
                }
            }
            _ => {}
        }
    }
    out
}
