//! Path resolution: the one function that turns a raw argument string into a canonical path.
//!
//! INTERFACE FIXED — bodies to be written by the policy work.

use std::path::PathBuf;

/// What a raw path is resolved against: the server's cwd and the user's home.
#[derive(Debug, Clone)]
pub struct ResolveContext {
    /// The server child's working directory (absolute).
    pub cwd: PathBuf,
    /// The home directory `~` and `$HOME` expand to; `None` refuses `~` forms.
    pub home: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("the path is empty")]
    Empty,
    #[error("the path contains a NUL byte")]
    NulByte,
    #[error("the path is {len} bytes long, over the {max}-byte limit")]
    TooLong { len: usize, max: usize },
    #[error("`..` after a component that does not exist: {0}")]
    DotDotInMissingPart(String),
    #[error("not a file:// URI this proxy can check: {0}")]
    BadUri(String),
    #[error("`~` cannot be expanded: the home directory is unknown")]
    NoHome,
    #[error("cannot resolve {path}: {reason}")]
    Io { path: String, reason: String },
}

/// Resolve `raw` to a canonical absolute path: percent-decode `file://` URIs; expand `~` and
/// `$HOME`; resolve relative paths against `ctx.cwd`; canonicalize resolving symlinks; for a
/// target that does not exist yet, canonicalize the deepest existing ancestor and append the
/// rest (rejecting `..` in the missing part); reject NUL bytes and overlong paths.
pub fn resolve(raw: &str, ctx: &ResolveContext) -> Result<PathBuf, ResolveError> {
    let _ = (raw, ctx);
    todo!("policy work")
}
