//! Grants decided by files the server controls (issue 9, class 3): checks that keep anything
//! the server could have written from widening the next jail (the next start or a respawn).
//!
//! * a scope path that no longer resolves to itself (a symlink planted in its place or above
//!   it since it was derived) is not granted;
//! * a runtime grant read out of a `pyvenv.cfg` that lies in write scope is not granted;
//! * a file scope's directory is granted (for temp-file-then-rename writes) only when it is not
//!   HOME or above and not an XDG base directory.
//!
//! The checks run when the jail is prepared. The Landlock rules are then made from descriptors
//! opened without following any link (`linux::landlock`), so a link planted after these checks
//! is refused rather than followed; the masks and write-grant binds are mounted on descriptors
//! opened in the child the same way (`linux::mask`); a scope path that changed kind since the
//! scope was derived (in this run, or since a policy file recorded it) is refused by
//! [`super::kinds`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{runtime, Grant, GrantAccess};
use crate::policy::Scope;

/// A runtime grant read out of a file the server can write (a `pyvenv.cfg` in write scope):
/// whatever the server wrote there would become a read+exec grant at the next start. Refused.
pub(super) fn runtime_grant(
    g: &Grant,
    from_files: &[(PathBuf, PathBuf)],
    scope: &Scope,
) -> Option<String> {
    if g.access != GrantAccess::ReadExec || !g.why.contains("pyvenv.cfg") {
        return None;
    }
    let (_, file) = from_files.iter().find(|(p, _)| *p == g.path)?;
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
    let root = scope.write.iter().find(|e| file.starts_with(&e.path))?;
    Some(format!(
        "{} ({}) not granted: it was read from {}, which lies in write scope {} where the server \
         could have rewritten it (hint: if the interpreter really lives there, --allow-read {})",
        g.path.display(),
        g.why,
        file.display(),
        root.path.display(),
        // Read from a file the server could write: shell-quoted, for pasting.
        crate::policy::export::shell_quote(&g.path.display().to_string())
    ))
}

/// A scope entry is canonical when derived. If it no longer is — the path, or a directory on
/// the way, was replaced by a symlink since (a respawn, or a server that rewrote its own scope
/// between starts) — granting it would grant wherever the link now points: refuse it.
pub(super) fn changed_since_derived(path: &Path) -> Option<String> {
    let now = std::fs::canonicalize(path).ok()?;
    if now == path {
        return None;
    }
    Some(format!(
        "scope path {} changed since it was derived: it now resolves to {} (a symlink was \
         planted in its place or above it); not granted (hint: remove the symlink, or name the \
         target itself with --allow-read/--allow-write)",
        path.display(),
        now.display()
    ))
}

/// Why a file scope's directory must not be granted read-write for atomic replaces, if it must
/// not: the filesystem root or an ancestor of HOME, HOME itself, or an XDG base directory (every
/// other program's settings, data or state, most of them matching no deny pattern). A directory
/// granted this way is carved like any scope directory (denied names masked, protected names
/// read-only).
pub(super) fn sensitive_dir(
    dir: &Path,
    home: Option<&Path>,
    env: &[(OsString, OsString)],
) -> Option<String> {
    if runtime::too_wide(dir, home) {
        return Some("too wide: HOME or above".into());
    }
    let var = |k: &str| {
        env.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| PathBuf::from(v))
    };
    let mut bases: Vec<PathBuf> = [
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
    ]
    .iter()
    .filter_map(|k| var(k))
    .collect();
    if let Some(h) = home {
        for rel in [
            ".config",
            ".local",
            ".local/share",
            ".local/state",
            ".local/bin",
            ".cache",
        ] {
            bases.push(h.join(rel));
        }
    }
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    bases
        .iter()
        .any(|b| canon(b) == dir)
        .then(|| "an XDG base directory: other programs' files live there".into())
}
