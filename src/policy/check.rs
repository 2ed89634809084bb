//! One path argument against a Scope: resolve, pick the access, check. The proxy's call check.
//!
//! **Which access a path needs.** The proxy cannot know from a schema whether a tool reads or
//! writes a given argument (`source` of a move is written too: it disappears). So the rule is
//! conservative:
//! * a tool whose `readOnlyHint` is true (or that a policy file forces read-only) needs **read**
//!   scope for its paths: read roots or write roots;
//! * any other tool — and a tool with no known schema — needs **write** scope for its paths: a
//!   path that lies only under a read root is refused for it. (The proxy relaxes this when the
//!   jail fully enforces the filesystem, since the kernel then refuses the write itself: see
//!   `proxy::check::check_tool_call`.)
//!
//! An argument that cannot be resolved (NUL byte, `..` below a missing directory, a foreign
//! `file://` host, ...) is refused too, with the resolver's reason. An empty string given to a
//! schema-marked path argument is checked as the server's cwd (what `path.resolve("")` and
//! `os.path.abspath("")` give).

use std::path::PathBuf;

use super::detect::{PathArgument, ToolInfo};
use super::resolve::{resolve, ResolveContext, ResolveError};
use super::scope::{Access, Denial, Scope};

/// Why one path argument was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentDenial {
    /// The value cannot be resolved to a checkable path.
    #[error("argument {pointer} = {value:?} cannot be checked: {error}")]
    Unresolvable {
        pointer: String,
        value: String,
        error: ResolveError,
    },
    /// It resolves to a path the scope refuses.
    #[error("argument {pointer} = {value:?} resolves to {}, which is {}", denial.path.display(), describe(denial))]
    Denied {
        pointer: String,
        value: String,
        denial: Denial,
    },
}

fn describe(d: &Denial) -> String {
    use super::scope::DenyReason::*;
    let access = match d.access {
        Access::Read => "reading",
        Access::Write => "writing",
    };
    match &d.reason {
        OutsideScope => format!("outside the roots allowed for {access}"),
        DeniedPattern(p) => format!("always denied (matches {p})"),
        ReadOnlyTool => "a write by a read-only tool".to_string(),
        Protected(p) => format!("protected, read-only (matches {p})"),
    }
}

impl ArgumentDenial {
    /// The argument's JSON pointer.
    pub fn pointer(&self) -> &str {
        match self {
            ArgumentDenial::Unresolvable { pointer, .. }
            | ArgumentDenial::Denied { pointer, .. } => pointer,
        }
    }
    /// The raw value as sent.
    pub fn value(&self) -> &str {
        match self {
            ArgumentDenial::Unresolvable { value, .. } | ArgumentDenial::Denied { value, .. } => {
                value
            }
        }
    }
}

/// The access a tool's path arguments need (see the module docs).
pub fn access_for(tool: Option<&ToolInfo>, forced_read_only: bool) -> Access {
    if forced_read_only || tool.is_some_and(|t| t.read_only) {
        Access::Read
    } else {
        Access::Write
    }
}

/// Resolve `arg` and check it against `scope` with the access `tool` needs. Returns the
/// canonical path on success (for `--log`).
pub fn check_argument(
    scope: &Scope,
    tool: Option<&ToolInfo>,
    arg: &PathArgument,
    ctx: &ResolveContext,
) -> Result<PathBuf, ArgumentDenial> {
    check_argument_with(scope, access_for(tool, false), arg, ctx)
}

/// [`check_argument`] with the access already decided (e.g. [`access_for`] with a policy
/// file's read-only override).
pub fn check_argument_with(
    scope: &Scope,
    access: Access,
    arg: &PathArgument,
    ctx: &ResolveContext,
) -> Result<PathBuf, ArgumentDenial> {
    let raw = if arg.value.is_empty() {
        "."
    } else {
        arg.value.as_str()
    };
    let path = resolve(raw, ctx).map_err(|error| ArgumentDenial::Unresolvable {
        pointer: arg.pointer.clone(),
        value: arg.value.clone(),
        error,
    })?;
    scope
        .check(&path, access)
        .map_err(|denial| ArgumentDenial::Denied {
            pointer: arg.pointer.clone(),
            value: arg.value.clone(),
            denial,
        })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::detect::Detection;
    use crate::policy::{DenyReason, ScopeEntry, ScopeSource};

    fn arg(v: &str) -> PathArgument {
        PathArgument {
            pointer: "/path".into(),
            value: v.into(),
            detection: Detection::Schema,
        }
    }

    #[test]
    fn read_only_tools_need_read_others_need_write() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        std::fs::create_dir_all(root.join("ro")).unwrap();
        std::fs::create_dir_all(root.join("rw")).unwrap();
        let scope = Scope {
            read: vec![ScopeEntry {
                path: root.join("ro"),
                source: ScopeSource::Flag,
            }],
            write: vec![ScopeEntry {
                path: root.join("rw"),
                source: ScopeSource::Flag,
            }],
            ..Default::default()
        };
        let ctx = ResolveContext {
            cwd: root.join("rw"),
            home: None,
        };
        let ro_tool = ToolInfo {
            name: "read".into(),
            path_args: vec!["/path".into()],
            read_only: true,
            weak_path_args: vec![],
            ..Default::default()
        };
        let rw_tool = ToolInfo {
            read_only: false,
            ..ro_tool.clone()
        };
        let in_ro = root.join("ro/f").to_string_lossy().into_owned();
        assert!(check_argument(&scope, Some(&ro_tool), &arg(&in_ro), &ctx).is_ok());
        let err = check_argument(&scope, Some(&rw_tool), &arg(&in_ro), &ctx).unwrap_err();
        match &err {
            ArgumentDenial::Denied { denial, .. } => {
                assert_eq!(denial.access, Access::Write);
                assert_eq!(denial.reason, DenyReason::OutsideScope);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("writing"), "{err}");
        assert!(check_argument(&scope, None, &arg(&in_ro), &ctx).is_err());
        assert_eq!(
            check_argument(&scope, Some(&rw_tool), &arg("x/new.txt"), &ctx).unwrap(),
            root.join("rw/x/new.txt")
        );
        assert!(check_argument(&scope, Some(&rw_tool), &arg(""), &ctx).is_ok());
        assert!(check_argument(&scope, Some(&ro_tool), &arg("../../etc"), &ctx).is_err());
        let err = check_argument(&scope, Some(&rw_tool), &arg("a\0b"), &ctx).unwrap_err();
        assert!(matches!(
            err,
            ArgumentDenial::Unresolvable {
                error: ResolveError::NulByte,
                ..
            }
        ));
        assert_eq!(access_for(Some(&rw_tool), true), Access::Read);
    }
}
