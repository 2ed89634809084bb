//! Deciding one call: which arguments are paths, what they resolve to, and whether the Scope
//! allows them — plus the denial the proxy answers with.
//!
//! The decision itself belongs to [`crate::policy`]; this module only gathers the inputs
//! (learned [`ToolInfo`], the call's arguments) and shapes the answer a client sees. A path
//! that cannot be resolved is a denial, never a pass: if the proxy cannot say where a path
//! points, it cannot say it is in scope.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::policy::{find_path_arguments, resolve, Access, ResolveContext, Scope, ToolInfo};

/// One path the call would touch.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CheckedPath {
    /// JSON pointer of the argument (`/path`, `/edits/0/file`), or `uri` for resources/read.
    pub argument: String,
    /// The value as sent.
    pub raw: String,
    /// Where it resolves to (absent when resolution failed).
    pub resolved: Option<PathBuf>,
    pub access: Access,
}

/// Why a call is refused, with what a model needs to self-correct.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub argument: String,
    /// The path as resolved, or the raw value when it could not be resolved.
    pub path: String,
    pub access: Access,
    /// Human reason ("outside the allowed roots", "the path contains a NUL byte", ...).
    pub reason: String,
    /// Machine-readable reason kind.
    pub kind: &'static str,
    pub roots: Vec<PathBuf>,
}

/// The outcome of checking one call.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub paths: Vec<CheckedPath>,
    pub refusal: Option<Refusal>,
}

impl Verdict {
    pub fn allowed(&self) -> bool {
        self.refusal.is_none()
    }
}

/// Check a `tools/call`: `tool` is what `tools/list` taught us (`None`: value heuristics only).
pub fn check_tool_call(
    scope: &Scope,
    ctx: &ResolveContext,
    tool: Option<&ToolInfo>,
    arguments: &Value,
) -> Verdict {
    // A read-only tool only ever gets read scope. Any other tool may write through any path
    // argument it has, so it needs write scope for each: the schema does not say which
    // arguments a tool only reads.
    let access = match tool {
        Some(t) if t.read_only => Access::Read,
        _ => Access::Write,
    };
    let mut verdict = Verdict {
        paths: Vec::new(),
        refusal: None,
    };
    for arg in find_path_arguments(tool, arguments) {
        let outcome = check_one(scope, ctx, &arg.pointer, &arg.value, access);
        verdict.paths.push(outcome.0);
        if verdict.refusal.is_none() {
            verdict.refusal = outcome.1;
        }
    }
    verdict
}

/// Check a `resources/read` of a `file://` URI (read access).
pub fn check_resource_read(scope: &Scope, ctx: &ResolveContext, uri: &str) -> Verdict {
    let (path, refusal) = check_one(scope, ctx, "uri", uri, Access::Read);
    Verdict {
        paths: vec![path],
        refusal,
    }
}

fn check_one(
    scope: &Scope,
    ctx: &ResolveContext,
    argument: &str,
    raw: &str,
    access: Access,
) -> (CheckedPath, Option<Refusal>) {
    let mut checked = CheckedPath {
        argument: argument.to_string(),
        raw: raw.to_string(),
        resolved: None,
        access,
    };
    let refusal = match resolve(raw, ctx) {
        Err(err) => Some(Refusal {
            argument: argument.to_string(),
            path: raw.to_string(),
            access,
            reason: format!("the path cannot be checked: {err}"),
            kind: "unresolvable",
            roots: scope.roots(access),
        }),
        Ok(path) => {
            checked.resolved = Some(path.clone());
            match scope.check(&path, access) {
                Ok(()) => None,
                Err(denial) => {
                    let (reason, kind) = match &denial.reason {
                        crate::policy::DenyReason::OutsideScope => (
                            format!("outside the allowed roots for {}", access_word(access)),
                            "outside_scope",
                        ),
                        crate::policy::DenyReason::DeniedPattern(p) => (
                            format!("matches the always-denied pattern `{p}`"),
                            "denied_pattern",
                        ),
                        crate::policy::DenyReason::ReadOnlyTool => (
                            "the tool is declared read-only and cannot write".to_string(),
                            "read_only_tool",
                        ),
                    };
                    Some(Refusal {
                        argument: argument.to_string(),
                        path: denial.path.display().to_string(),
                        access: denial.access,
                        reason,
                        kind,
                        roots: scope.roots(denial.access),
                    })
                }
            }
        }
    };
    (checked, refusal)
}

pub fn access_word(access: Access) -> &'static str {
    match access {
        Access::Read => "read",
        Access::Write => "write",
    }
}

/// A refusal for a call whose shape cannot be judged at all (no tool name, arguments that are
/// not an object, duplicate keys).
pub fn unjudgeable(reason: impl Into<String>) -> Refusal {
    Refusal {
        argument: String::new(),
        path: String::new(),
        access: Access::Write,
        reason: reason.into(),
        kind: "unjudgeable",
        roots: Vec::new(),
    }
}

impl Refusal {
    /// The sentence a model reads: the path, why, and where it may go instead.
    pub fn text(&self) -> String {
        let roots = if self.roots.is_empty() {
            "none".to_string()
        } else {
            self.roots
                .iter()
                .map(|r| r.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if self.path.is_empty() {
            return format!("mcpjail denied this call: {}.", self.reason);
        }
        format!(
            "mcpjail denied {} access to {} (argument `{}`): {}. Allowed roots for {}: {}. \
             Use a path under one of those roots.",
            access_word(self.access),
            self.path,
            self.argument,
            self.reason,
            access_word(self.access),
            roots
        )
    }

    /// Structured details, the same under `_meta` (result) and `data` (error).
    pub fn details(&self) -> Value {
        json!({
            "path": self.path,
            "access": access_word(self.access),
            "reason": self.reason,
            "kind": self.kind,
            "roots": self.roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>(),
            "argument": self.argument,
        })
    }

    /// The `CallToolResult` answered in place of the server.
    pub fn as_tool_result(&self) -> Value {
        json!({
            "content": [{"type": "text", "text": self.text()}],
            "isError": true,
            "_meta": {"mcpjail/denial": self.details()},
        })
    }
}
