//! Path-argument detection: which parts of a `tools/call`'s arguments are paths.
//!
//! INTERFACE FIXED — bodies to be written by the policy work.

use serde_json::Value;

/// What the proxy learned about one tool from `tools/list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    /// JSON-pointer-like patterns of path arguments found in the input schema, e.g. `/path`,
    /// `/paths/*`, `/edits/*/file` (`*` = any array index or map key).
    pub path_args: Vec<String>,
    /// `annotations.readOnlyHint == true`: only read scope is granted to this tool.
    pub read_only: bool,
}

impl ToolInfo {
    /// Learn from one entry of a `tools/list` result (`{"name", "inputSchema", "annotations", ...}`).
    /// Follows `$ref`, `anyOf`/`oneOf`/`allOf`, nested objects and arrays.
    pub fn from_tool(tool: &Value) -> Option<ToolInfo> {
        let _ = tool;
        todo!("policy work")
    }
}

/// Why an argument was taken to be a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Detection {
    /// The schema marks it (name, title, description or `format`).
    Schema,
    /// Its value looks like a path (`/…`, `~…`, `./…`, `../…`, `file://…`, `C:\…`).
    Value,
}

/// One path-valued argument found in a call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathArgument {
    /// JSON pointer into the arguments object, e.g. `/paths/1`.
    pub pointer: String,
    /// The raw string value as sent.
    pub value: String,
    pub detection: Detection,
}

/// Every path argument in `args` (the `tools/call` `arguments` object): those the tool's schema
/// marks plus every string whose value looks like a path, anywhere in the tree. `tool` is `None`
/// when no schema is known (value heuristics only).
pub fn find_path_arguments(tool: Option<&ToolInfo>, args: &Value) -> Vec<PathArgument> {
    let _ = (tool, args);
    todo!("policy work")
}
