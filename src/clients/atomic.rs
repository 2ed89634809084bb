//! Atomic replacement of a file: a temp file in the same directory, the same permissions and
//! owner as the file it replaces, fsync, rename over, fsync the directory. A reader (or a crash)
//! sees either the old bytes or the new ones, never a mix. A symlinked config (dotfile managers)
//! is written through to its target so the link survives.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::ClientsError;

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The path a write to `path` should replace: the symlink's target, if it is one.
pub fn write_target(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Replace `path`'s contents with `bytes` atomically, keeping mode and owner.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ClientsError> {
    let target = write_target(path);
    let err = |source: std::io::Error| ClientsError::Write {
        path: target.clone(),
        source,
    };
    let dir = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let existing = fs::metadata(&target).ok();
    let mut tmp = tempfile::Builder::new()
        .prefix(".mcpjail-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    if let Some(meta) = &existing {
        fs::set_permissions(tmp.path(), meta.permissions()).map_err(err)?;
        keep_owner(tmp.as_file(), meta).map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(&target).map_err(|e| err(e.error))?;
    // The rename itself is durable only once the directory entry is on disk.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(unix)]
fn keep_owner(file: &fs::File, meta: &fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let current = file.metadata()?;
    if current.uid() == meta.uid() && current.gid() == meta.gid() {
        return Ok(());
    }
    match std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid())) {
        Ok(()) => Ok(()),
        // Not root and not the owner: we could not have changed the owner anyway; the file
        // keeps our uid, which is the only one we can give it.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(not(unix))]
fn keep_owner(_file: &fs::File, _meta: &fs::Metadata) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn keeps_mode_and_replaces_through_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, b"old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".mcpjail-"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
