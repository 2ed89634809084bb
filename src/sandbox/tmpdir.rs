//! The private per-session temporary directory.
//!
//! Created mode 0700 under the system temp dir, granted read-write to the server (and nothing
//! else under `/tmp` is), exported as `TMPDIR`/`TMP`/`TEMP`, and removed with everything in it
//! when the [`super::PreparedJail`] is dropped.

use std::path::Path;

use super::SandboxError;

#[derive(Debug)]
pub struct PrivateTmp {
    dir: tempfile::TempDir,
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
        Ok(PrivateTmp { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}
