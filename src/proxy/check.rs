//! Deciding one call: which arguments are paths, what they resolve to, and whether the Scope
//! allows them — plus the denial the proxy answers with.
//!
//! The decision itself belongs to [`crate::policy`]; this module only gathers the inputs
//! (learned [`ToolInfo`], the call's arguments) and shapes the answer a client sees. A path
//! that cannot be resolved is a denial, never a pass: if the proxy cannot say where a path
//! points, it cannot say it is in scope.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::policy::{
    access_for, check_argument_with, scan_arguments, Access, ArgumentDenial, Arguments, DenyReason,
    Detection, PathArgument, ResolveContext, Scope, ToolInfo,
};

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

/// Check a `tools/call`: `tool` is what `tools/list` taught us (`None`: value heuristics only);
/// `forced_read_only` is a policy file's `[tools.NAME] read_only = true`.
///
/// `kernel_stops_writes`: the jail's filesystem layer is fully enforced. Then a tool that is
/// not known to be read-only may still be given a path that is only under a read root (so
/// `--allow-read DIR` does what users expect for a server whose tools carry no annotations):
/// if the tool only reads it, that works; if it writes, the kernel refuses the write, and the
/// refusal is explained in the result. Without that guarantee (`--no-jail`, a partially
/// enforced jail) the proxy is the only layer and keeps asking for write scope.
pub fn check_tool_call<'a>(
    scope: &Scope,
    ctx: &ResolveContext,
    tool: Option<&ToolInfo>,
    forced_read_only: bool,
    kernel_stops_writes: bool,
    arguments: impl Into<Arguments<'a>>,
) -> Verdict {
    let arguments = arguments.into();
    // A read-only tool only ever gets read scope; any other tool may write through any path
    // argument it has (the schema does not say which ones it only reads), so it needs write
    // scope for each. The rule lives in the policy module so every checker applies it alike.
    let access = access_for(tool, forced_read_only);
    let mut verdict = Verdict {
        paths: Vec::new(),
        refusal: None,
    };
    let args = match scan_arguments(tool, arguments) {
        Ok(args) => args,
        Err(too_complex) => {
            // Past the walker's caps something would go unchecked: refuse the whole call.
            verdict.refusal = Some(unjudgeable(format!(
                "the arguments are too complex to check ({too_complex})"
            )));
            return verdict;
        }
    };
    for arg in &args {
        // A relative path next to a base argument (`repo_path`, `cwd`) is relative to it, as
        // the server reads it; an absolute one, or one without a base, to the server's cwd.
        let based = crate::policy::base_argument(arguments, &arg.pointer)
            .filter(|_| !is_absolute_form(&arg.value))
            .and_then(|base| crate::policy::resolve(base, ctx).ok())
            .map(|dir| ResolveContext {
                cwd: dir,
                home: ctx.home.clone(),
            });
        let ctx = based.as_ref().unwrap_or(ctx);
        let mut outcome = check_one(scope, ctx, arg, access);
        let outside_write_scope =
            matches!(&outcome.1, Some(r) if r.kind == "outside_scope" && r.access == Access::Write);
        if kernel_stops_writes && outside_write_scope {
            // Under a read root only: the jail, not the proxy, stops a write there.
            let as_read = check_one(scope, ctx, arg, Access::Read);
            if as_read.1.is_none() {
                outcome = as_read;
            }
        }
        verdict.paths.push(outcome.0);
        if verdict.refusal.is_none() {
            verdict.refusal = outcome.1;
        }
    }
    verdict
}

/// A path that does not depend on any directory: absolute, home-relative or a URI.
fn is_absolute_form(value: &str) -> bool {
    let v = value.trim();
    v.starts_with('/')
        || v.starts_with('~')
        || v.starts_with("$HOME")
        || v.starts_with("${HOME}")
        || v.contains("://")
        || crate::policy::file_url::is_file_url(value)
}

/// Check a `resources/read` of a `file://` URI (read access).
pub fn check_resource_read(scope: &Scope, ctx: &ResolveContext, uri: &str) -> Verdict {
    let arg = PathArgument {
        pointer: "uri".into(),
        value: uri.to_string(),
        detection: Detection::Schema,
    };
    let (path, refusal) = check_one(scope, ctx, &arg, Access::Read);
    Verdict {
        paths: vec![path],
        refusal,
    }
}

fn check_one(
    scope: &Scope,
    ctx: &ResolveContext,
    arg: &PathArgument,
    access: Access,
) -> (CheckedPath, Option<Refusal>) {
    let mut checked = CheckedPath {
        argument: arg.pointer.clone(),
        raw: arg.value.clone(),
        resolved: None,
        access,
    };
    let refusal = match check_argument_with(scope, access, arg, ctx) {
        Ok(path) => {
            checked.resolved = Some(path);
            None
        }
        Err(ArgumentDenial::Unresolvable { error, .. }) => Some(Refusal {
            argument: arg.pointer.clone(),
            path: arg.value.clone(),
            access,
            reason: format!("the path cannot be checked: {error}"),
            kind: "unresolvable",
            roots: scope.roots(access),
        }),
        Err(ArgumentDenial::Denied { denial, .. }) => {
            checked.resolved = Some(denial.path.clone());
            let (reason, kind) = match &denial.reason {
                DenyReason::OutsideScope => (
                    format!("outside the allowed roots for {}", access_word(access)),
                    "outside_scope",
                ),
                DenyReason::DeniedPattern(p) => (
                    format!("matches the always-denied pattern `{p}`"),
                    "denied_pattern",
                ),
                DenyReason::ReadOnlyTool => (
                    "the tool is declared read-only and cannot write".to_string(),
                    "read_only_tool",
                ),
                DenyReason::Protected(p) => (
                    format!(
                        "matches the protected pattern `{p}`: code or settings that run later \
                         (git hooks and config, shell rc files, editor and agent settings) are \
                         readable but never writable"
                    ),
                    "protected",
                ),
            };
            Some(Refusal {
                argument: arg.pointer.clone(),
                path: denial.path.display().to_string(),
                access: denial.access,
                reason,
                kind,
                roots: scope.roots(denial.access),
            })
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
