//! Scope paths that changed kind since the scope was derived (issue 9, class 3).
//!
//! A scope path is granted as what it is when the jail is prepared: a directory as a tree, a
//! file (in write scope) as the file plus, where safe, its directory. If a path derived as a
//! directory is a file now (or the reverse, or either became a symlink), granting the new kind
//! would grant something nobody looked at: a file's directory instead of the directory, a link's
//! target instead of the path. Whoever derives the scope records each path's kind
//! ([`observe`], into [`super::JailOptions::derived_kinds`]); every jail prepared from it —
//! the first start and each respawn — checks them again ([`check`]) and refuses to start.
//! A path that did not exist when the scope was derived is not recorded (the jail grants only
//! what exists, and symlinks are refused by [`super::planted`] anyway).
//!
//! The kinds also persist with the policy: `mcpjail policy derive --write` writes them into the
//! policy file (`[kinds]`), and the proxy checks them ([`check_recorded`]) on the paths as
//! recorded, before derivation resolves (and would follow) them, at start and on every respawn.

use std::fmt;
use std::path::{Path, PathBuf};

use super::SandboxError;
use crate::policy::{Scope, ScopeSource};

/// What a path is, without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    File,
    Directory,
    Symlink,
    /// A socket, fifo or device.
    Other,
}

impl fmt::Display for PathKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathKind::File => "a file",
            PathKind::Directory => "a directory",
            PathKind::Symlink => "a symlink",
            PathKind::Other => "a special file",
        })
    }
}

/// The kind of `path` now, or `None` if it does not exist.
pub fn kind_of(path: &Path) -> Option<PathKind> {
    let t = std::fs::symlink_metadata(path).ok()?.file_type();
    Some(if t.is_symlink() {
        PathKind::Symlink
    } else if t.is_dir() {
        PathKind::Directory
    } else if t.is_file() {
        PathKind::File
    } else {
        PathKind::Other
    })
}

fn data_entries(scope: &Scope) -> impl Iterator<Item = &Path> {
    scope
        .read
        .iter()
        .chain(&scope.write)
        .chain(&scope.exec)
        .filter(|e| e.source != ScopeSource::Runtime)
        .map(|e| e.path.as_path())
}

/// Record the kind of every scope path that exists (call where the scope is derived).
pub fn observe(scope: &Scope) -> Vec<(PathBuf, PathKind)> {
    let mut kinds: Vec<(PathBuf, PathKind)> = Vec::new();
    for path in data_entries(scope) {
        if kinds.iter().any(|(p, _)| p == path) {
            continue;
        }
        if let Some(kind) = kind_of(path) {
            kinds.push((path.to_path_buf(), kind));
        }
    }
    kinds
}

/// Refuse if a recorded scope path of `scope` is now of another kind (or gone to a symlink).
pub fn check(scope: &Scope, recorded: &[(PathBuf, PathKind)]) -> Result<(), SandboxError> {
    for path in data_entries(scope) {
        let Some((_, was)) = recorded.iter().find(|(p, _)| p == path) else {
            continue;
        };
        let Some(now) = kind_of(path) else {
            continue;
        };
        if now != *was {
            return Err(SandboxError::ScopeKindChanged {
                path: path.to_path_buf(),
                was: *was,
                now,
                recorded_in: None,
            });
        }
    }
    Ok(())
}

/// Refuse if a path whose kind a policy file records (`[kinds]`, written by
/// `mcpjail policy derive --write`) is now of another kind. Checked on the recorded path
/// itself, before anything resolves it: a file scope replaced by a symlink to a directory
/// elsewhere would otherwise be derived as that directory. A recorded path that is not
/// canonical any more (a directory on the way became a symlink) counts as a symlink now. A
/// path that does not exist now is not refused here (the jail grants only what exists).
pub fn check_recorded(
    policy_file: &Path,
    recorded: &[(PathBuf, PathKind)],
) -> Result<(), SandboxError> {
    for (path, was) in recorded {
        let Some(mut now) = kind_of(path) else {
            continue;
        };
        if now != PathKind::Symlink && std::fs::canonicalize(path).is_ok_and(|c| c != *path) {
            now = PathKind::Symlink;
        }
        if now != *was {
            return Err(SandboxError::ScopeKindChanged {
                path: path.clone(),
                was: *was,
                now,
                recorded_in: Some(policy_file.to_path_buf()),
            });
        }
    }
    Ok(())
}

/// The hint of [`SandboxError::ScopeKindChanged`]: what to do if the change is intended.
pub(super) fn changed_hint(recorded_in: &Option<PathBuf>) -> String {
    match recorded_in {
        Some(file) => format!(
            "the kind was recorded in the policy file {}; if the change is intended, check              it and re-derive with `mcpjail policy derive --write`",
            file.display()
        ),
        None => "if the change is intended, restart mcpjail so the scope is derived again, or                  name the path you mean with --allow-read/--allow-write"
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ScopeEntry;

    fn scope_of(p: &Path) -> Scope {
        Scope {
            write: vec![ScopeEntry {
                path: p.to_path_buf(),
                source: ScopeSource::Flag,
            }],
            ..Scope::default()
        }
    }

    #[test]
    fn a_directory_that_became_a_file_is_refused_with_its_path() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("data");
        std::fs::create_dir(&p).unwrap();
        let scope = scope_of(&p);
        let recorded = observe(&scope);
        assert_eq!(recorded, vec![(p.clone(), PathKind::Directory)]);
        assert!(check(&scope, &recorded).is_ok());
        std::fs::remove_dir(&p).unwrap();
        std::fs::write(&p, "x").unwrap();
        let err = check(&scope, &recorded).unwrap_err().to_string();
        assert!(err.contains(&p.display().to_string()), "{err}");
        assert!(
            err.contains("was a directory") && err.contains("is a file now"),
            "{err}"
        );
        assert!(err.contains("hint:"), "{err}");
    }

    #[test]
    fn missing_paths_and_runtime_entries_are_not_recorded() {
        let t = tempfile::tempdir().unwrap();
        let mut scope = scope_of(&t.path().join("later"));
        scope.exec.push(ScopeEntry {
            path: t.path().to_path_buf(),
            source: ScopeSource::Runtime,
        });
        assert!(observe(&scope).is_empty());
    }

    #[test]
    fn recorded_kinds_refuse_a_symlink_in_place_or_above_and_accept_unchanged_or_missing() {
        let t = tempfile::tempdir().unwrap();
        let r = std::fs::canonicalize(t.path()).unwrap();
        let policy = r.join("p.toml");
        let file = r.join("proj/data.jsonl");
        std::fs::create_dir_all(r.join("proj")).unwrap();
        std::fs::create_dir_all(r.join("elsewhere")).unwrap();
        std::fs::write(&file, "x").unwrap();
        std::fs::write(r.join("elsewhere/data.jsonl"), "y").unwrap();
        let recorded = vec![(file.clone(), PathKind::File)];
        assert!(check_recorded(&policy, &recorded).is_ok());
        // Missing now: nothing to grant, nothing refused.
        assert!(check_recorded(&policy, &[(r.join("gone"), PathKind::File)]).is_ok());
        // A directory on the way became a symlink: the path still names a file, elsewhere.
        std::fs::rename(r.join("proj"), r.join("proj.orig")).unwrap();
        std::os::unix::fs::symlink(r.join("elsewhere"), r.join("proj")).unwrap();
        assert_eq!(kind_of(&file), Some(PathKind::File));
        let err = check_recorded(&policy, &recorded).unwrap_err().to_string();
        assert!(
            err.contains("was a file") && err.contains("is a symlink now"),
            "{err}"
        );
        assert!(
            err.contains(&policy.display().to_string())
                && err.contains("mcpjail policy derive --write"),
            "{err}"
        );
    }
}
