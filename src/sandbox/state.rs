//! The server's private state directory.
//!
//! Servers keep caches, settings and data under XDG directories (`~/.cache/<app>`,
//! `~/.local/share/<app>`), which the jail denies: many would fail at start-up trying to create
//! them. Each server instead gets one directory of its own (chosen by the caller, normally
//! `$XDG_STATE_HOME/mcpjail-servers/<name>-<identity digest>`), with `state/`, `data/`, `cache/` and `config/`
//! inside, and its `XDG_*_HOME` variables pointing there. It persists across runs (a server's
//! cache stays warm) and is never shared with another server.

use std::ffi::OsString;
use std::path::Path;

const SUBDIRS: &[(&str, &str)] = &[
    ("XDG_STATE_HOME", "state"),
    ("XDG_DATA_HOME", "data"),
    ("XDG_CACHE_HOME", "cache"),
    ("XDG_CONFIG_HOME", "config"),
];

/// Create `dir` (0700) and its XDG subdirectories; return the variables that point into them.
pub fn prepare(dir: &Path) -> std::io::Result<Vec<(OsString, OsString)>> {
    use std::os::unix::fs::DirBuilderExt;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true).mode(0o700);
    builder.create(dir)?;
    let mut vars = Vec::new();
    for (var, sub) in SUBDIRS {
        let p = dir.join(sub);
        builder.create(&p)?;
        vars.push((OsString::from(var), p.into_os_string()));
    }
    Ok(vars)
}

/// `dir` as the jail grants it: its parent canonicalised (a HOME reached through a symlink
/// works), its own name as it is. A state directory that is itself a symlink is refused: the
/// jail would grant wherever it points.
pub fn exact_path(dir: &Path) -> std::io::Result<std::path::PathBuf> {
    let invalid = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: {why}", dir.display()),
        )
    };
    if std::fs::symlink_metadata(dir)?.file_type().is_symlink() {
        return Err(invalid(
            "is a symlink (hint: remove it; mcpjail creates the directory itself)",
        ));
    }
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(invalid("has no parent directory"));
    };
    Ok(std::fs::canonicalize(parent)?.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_private_xdg_dirs() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("state/mcpjail-servers/memory");
        let vars = prepare(&dir).unwrap();
        assert_eq!(vars.len(), 4);
        for (_, v) in &vars {
            assert!(Path::new(v).is_dir());
        }
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Idempotent: a second start reuses it.
        assert_eq!(prepare(&dir).unwrap(), vars);
    }
}
