//! The private per-session temporary directory.
//!
//! Created mode 0700 under the system temp dir, granted read-write to the server (and nothing
//! else under `/tmp` is), exported as `TMPDIR`/`TMP`/`TEMP`, and removed with everything in it
//! when the [`super::PreparedJail`] is dropped.

use std::path::Path;

use super::SandboxError;

#[derive(Debug)]
pub struct PrivateTmp {
    /// Held for its Drop: removes the directory and everything in it.
    _dir: tempfile::TempDir,
    /// Canonical: rules match real paths (on macOS `/var` is a symlink to `/private/var`).
    canonical: std::path::PathBuf,
}

impl PrivateTmp {
    pub fn create() -> Result<Self, SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("mcpjail-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| {
                SandboxError::Prepare(format!(
                    "cannot create the private temporary directory under {}: {e} (hint: set TMPDIR to a writable directory)",
                    std::env::temp_dir().display()
                ))
            })?;
        let canonical =
            std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
        Ok(PrivateTmp {
            _dir: dir,
            canonical,
        })
    }

    pub fn path(&self) -> &Path {
        &self.canonical
    }
}
