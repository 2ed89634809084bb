//! The hostile-input corpus and the benign control arguments.
//!
//! The probes live in a documented data file, `src/scan/corpus.toml`, compiled in. For every
//! tool the scan sends one control call (every argument benign: path arguments point at real
//! in-scope content, other required arguments are filled from the schema) and, for every
//! path-like argument ([`crate::policy::detect`]), one call per probe with only that argument
//! replaced.

use serde_json::{json, Map, Value};

use super::sandbox::ScanSandbox;
use crate::policy::detect::ToolInfo;

const CORPUS: &str = include_str!("corpus.toml");

/// One hostile value template.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Probe {
    pub id: String,
    pub value: String,
    pub targets: String,
}

#[derive(Debug, serde::Deserialize)]
struct CorpusFile {
    probe: Vec<Probe>,
}

/// The built-in corpus.
pub fn probes() -> Vec<Probe> {
    // The file is compiled in and covered by a unit test: a parse failure is a build bug.
    toml::from_str::<CorpusFile>(CORPUS)
        .map(|c| c.probe)
        .unwrap_or_default()
}

impl Probe {
    /// The value with the sandbox's paths substituted.
    pub fn render(&self, sb: &ScanSandbox) -> String {
        self.value
            .replace("{scope}", &sb.scope.display().to_string())
            .replace("{root}", &sb.root.display().to_string())
            .replace("{home}", &sb.home.display().to_string())
            .replace("{long}", &"a".repeat(4200))
    }
}

/// What a path argument wants as its benign value.
fn control_path(tool: &str, arg: &str, sb: &ScanSandbox, fresh: &mut u32) -> String {
    let arg_l = arg.to_ascii_lowercase();
    let tool_l = tool.to_ascii_lowercase();
    // An argument named for a directory is the scope, whatever the tool creates in it.
    if [
        "dir",
        "folder",
        "root",
        "repo",
        "cwd",
        "workspace",
        "project",
    ]
    .iter()
    .any(|w| arg_l.contains(w))
        && !arg_l.contains("new")
    {
        return sb.scope.display().to_string();
    }
    let creates = ["dest", "target", "new", "to", "output", "out"]
        .iter()
        .any(|w| arg_l.contains(w))
        || ["create", "write", "mkdir", "make", "new", "save", "init"]
            .iter()
            .any(|w| tool_l.contains(w));
    if creates && !arg_l.contains("source") && !arg_l.starts_with("src") {
        *fresh += 1;
        return sb
            .scope
            .join(format!("scan-new-{fresh}"))
            .display()
            .to_string();
    }
    let wants_dir = [
        "dir",
        "folder",
        "root",
        "repo",
        "cwd",
        "workspace",
        "project",
    ]
    .iter()
    .any(|w| arg_l.contains(w))
        || [
            "dir", "list", "tree", "search", "find", "glob", "git", "repo",
        ]
        .iter()
        .any(|w| tool_l.contains(w));
    if wants_dir {
        sb.scope.display().to_string()
    } else {
        sb.scope_file().display().to_string()
    }
}

/// A benign value for a non-path schema node.
fn fill(schema: &Value, name: &str, depth: usize) -> Value {
    if depth > 8 {
        return Value::Null;
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return first.clone();
    }
    if let Some(d) = schema.get("default") {
        return d.clone();
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.iter().find(|s| s.get("type") != Some(&json!("null"))))
        {
            return fill(first, name, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::String(s)) => s.as_str(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    let n = name.to_ascii_lowercase();
    match ty {
        "integer" | "number" => schema.get("minimum").cloned().unwrap_or(json!(1)),
        "boolean" => json!(false),
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            json!([fill(&items, name, depth + 1)])
        }
        "object" => {
            let mut out = Map::new();
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    if required.contains(&k.as_str()) {
                        out.insert(k.clone(), fill(v, k, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        // Strings: something the in-scope content matches, where the name suggests a search
        // or an edit (so a control call can succeed), else a plain word.
        _ if n.contains("old") || n.contains("search") || n.contains("find") => {
            json!("line two")
        }
        _ if n.contains("new") || n.contains("replace") => json!("line 2"),
        _ if n.contains("pattern") || n.contains("query") || n.contains("glob") => json!("notes"),
        _ if n.contains("message") => json!("mcpjail scan"),
        _ if n.contains("revision")
            || n.contains("target")
            || n == "ref"
            || n.contains("commit") =>
        {
            json!("HEAD")
        }
        _ if n.contains("branch_type") => json!("local"),
        _ if n.contains("branch") => json!("main"),
        _ if n.contains("content") || n.contains("text") || n.contains("data") => {
            json!("written by mcpjail scan\n")
        }
        _ => json!("notes"),
    }
}

/// Set `value` at a path-argument pattern (`/a`, `/a/*`, `/a/*/b`), creating what is missing.
/// `*` means the first element of an array (or of a single-element array made here).
fn set_at(root: &mut Value, pattern: &str, value: Value) {
    let segs: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    let mut cur = root;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        if *seg == "*" {
            if !cur.is_array() {
                *cur = json!([]);
            }
            let arr = cur.as_array_mut().expect("array");
            if arr.is_empty() {
                arr.push(Value::Null);
            }
            arr.truncate(1);
            if last {
                arr[0] = value;
                return;
            }
            if !arr[0].is_object() {
                arr[0] = json!({});
            }
            cur = &mut arr[0];
        } else {
            if !cur.is_object() {
                *cur = json!({});
            }
            let obj = cur.as_object_mut().expect("object");
            if last {
                obj.insert(seg.to_string(), value);
                return;
            }
            cur = obj.entry(seg.to_string()).or_insert(Value::Null);
        }
    }
}

/// The last named segment of a pattern (`/edits/*/file` → `file`).
pub fn arg_name(pattern: &str) -> &str {
    pattern
        .rsplit('/')
        .find(|s| *s != "*" && !s.is_empty())
        .unwrap_or(pattern)
}

/// The control arguments of `tool` and its path-argument patterns.
pub fn control_arguments(tool: &Value, sb: &ScanSandbox) -> (Value, Vec<String>) {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("");
    let schema = tool.get("inputSchema").cloned().unwrap_or(json!({}));
    let info = ToolInfo::from_tool(tool).unwrap_or_default();
    let mut args = fill(&schema, "", 0);
    if !args.is_object() {
        args = json!({});
    }
    let mut fresh = 0;
    let mut path_args = Vec::new();
    let guessed = guessed_path_args(tool);
    if let Some(g) = &guessed {
        // Other arguments such tools conventionally take, so the call gets past validation.
        let obj = args.as_object_mut().expect("object");
        let lname = name.to_ascii_lowercase();
        if lname.contains("write") || lname.contains("create_file") {
            obj.insert("content".into(), json!("written by mcpjail scan\n"));
        }
        if lname.contains("search") || lname.contains("find") {
            obj.insert("pattern".into(), json!("notes"));
        }
        let _ = g;
    }
    let patterns = guessed.unwrap_or_else(|| info.path_args.clone());
    for pattern in &patterns {
        // Optional path arguments are probed too: they are where laundering hides. A weak
        // name that reads as a git ref (`target`, `revision`) keeps its filled control value
        // `HEAD`: a ref more often than a file.
        let weak = info.weak_path_args.contains(pattern);
        let filled = args.pointer(pattern).is_some_and(|v| v == "HEAD");
        if !(weak && filled) {
            let value = control_path(name, arg_name(pattern), sb, &mut fresh);
            set_at(&mut args, pattern, json!(value));
        }
        path_args.push(pattern.clone());
    }
    (args, path_args)
}

/// A tool whose input schema declares no properties at all (some servers publish an empty
/// schema by mistake and still read `arguments.path`): the conventional path argument names,
/// when its name or description is about files. `None` when the schema declares properties.
pub fn guessed_path_args(tool: &Value) -> Option<Vec<String>> {
    let schema = tool.get("inputSchema");
    let has_props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if has_props {
        return None;
    }
    let name = tool
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let desc = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let about_files = ["file", "dir", "path", "folder"]
        .iter()
        .any(|w| name.contains(w) || desc.contains(w));
    if !about_files || name.contains("allowed") {
        return None;
    }
    Some(
        if name.contains("move") || name.contains("rename") || name.contains("copy") {
            vec!["/source".into(), "/destination".into()]
        } else if name.contains("multiple") {
            vec!["/paths/*".into()]
        } else {
            vec!["/path".into()]
        },
    )
}

/// The control arguments with one path argument replaced by `value`.
pub fn hostile_arguments(control: &Value, pattern: &str, value: &str) -> Value {
    let mut args = control.clone();
    set_at(&mut args, pattern, json!(value));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_parses_and_ids_are_unique() {
        let p = probes();
        assert!(p.len() >= 20, "{}", p.len());
        let mut ids: Vec<&str> = p.iter().map(|x| x.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), p.len());
        assert!(p.iter().any(|x| x.value.contains('\0')));
    }

    #[test]
    fn set_at_builds_nested_values() {
        let mut v = json!({"edits": [{"oldText": "a"}]});
        set_at(&mut v, "/edits/*/file", json!("/x"));
        assert_eq!(v, json!({"edits": [{"oldText": "a", "file": "/x"}]}));
        let mut v = json!({});
        set_at(&mut v, "/paths/*", json!("/y"));
        assert_eq!(v, json!({"paths": ["/y"]}));
    }
}
