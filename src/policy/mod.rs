//! The policy model: what a server may touch.
//!
//! A [`Scope`] is three sets of canonical absolute path prefixes — `read`, `write` (implies read)
//! and `exec` — plus deny globs and network rules. Everything that decides "is this path allowed"
//! goes through this module: the proxy's argument checks and the sandbox's kernel rules are both
//! generated from one Scope, so they cannot disagree.
//!
//! * [`resolve`] — the one path-resolution function everything uses (`file://`, `~`, relative,
//!   symlinks, not-yet-existing targets, `..`, NUL).
//! * [`file_url`] — `file:` URLs read as servers' WHATWG parsers read them.
//! * [`arguments`] — a call's arguments as the checks read them (a `Value`, or flat members
//!   borrowed from the line).
//! * [`detect`] — which tool arguments carry paths (schema names, `format`, value heuristics).
//! * [`scope`] — the Scope type and its allow/deny checks.
//! * [`command`] — the server command line, parsed once (launcher, script, package, args).
//! * [`deny`] — the fixed lists: MCP client configs (denied) and protected names (read-only).
//! * [`derive`] — building a Scope from policy file, argv, flags and client roots.
//! * [`file`] — the policy file format; [`xdg`] — mcpjail's config and state paths.
//! * [`check`] — one path argument against a Scope (resolve, pick the access, check).
//! * [`pins`] — tool pinning (rug-pull detection) and its state files.
//! * [`export`] — the Scope in srt, nono and landrun formats.
//!
//! This module must not do I/O beyond filesystem metadata needed to canonicalize paths,
//! reading policy files and reading/writing pin files; it never spawns processes or talks MCP.

pub mod arguments;
pub mod check;
pub mod command;
pub mod deny;
pub mod derive;
pub mod detect;
pub mod export;
pub mod file;
pub mod file_url;
pub mod globs;
pub mod net;
pub mod pins;
pub mod resolve;
pub mod scope;
pub mod xdg;

pub use arguments::{Arguments, FlatArguments};
pub use check::{access_for, check_argument, check_argument_with, ArgumentDenial};
pub use command::{package_name, Launcher, Runner, ServerCommand};
pub use deny::{is_protected_name, CLIENT_CONFIGS, PROTECTED, PROTECTED_NAMES};
pub use derive::{
    always_denied, default_policy_path, derive_scope, derive_scope_with_env, runtime_paths,
    server_state_dir, DeriveError, DeriveInputs, Derived, PolicyFile, ToolPolicy,
};
pub use detect::{
    base_argument, find_path_arguments, scan_arguments, ArgsTooComplex, Detection, PathArgument,
    ToolInfo,
};
pub use net::{DomainRule, DomainRuleError, Host, HostPattern};
pub use resolve::{resolve, ResolveContext, ResolveError};
pub use scope::{Access, Denial, DenyReason, NetRules, Scope, ScopeEntry, ScopeSource};
