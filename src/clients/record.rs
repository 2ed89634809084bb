//! Install records: a timestamped backup of the original bytes plus a sidecar JSON record of
//! every change, under `$XDG_STATE_HOME/mcpjail/installs/`. `uninstall` restores the backup when
//! the file still hashes to what we wrote, and otherwise reverses each recorded byte edit.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::atomic::{sha256_hex, write_atomic};
use super::ClientsError;

pub const RECORD_VERSION: u32 = 1;

/// The command line of an entry before or after wrapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandLine {
    pub command: String,
    /// `None`: the entry had no `args` key.
    pub args: Option<Vec<String>>,
}

/// One byte edit, positioned relative to the start of the entry's `command` value in the
/// written file (so it can be found again after unrelated edits moved the entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ByteEdit {
    pub offset: i64,
    pub old: String,
    pub new: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryChange {
    pub server: String,
    /// JSON pointer of the entry (TOML files use the same notation: `/mcp_servers/NAME`).
    pub pointer: String,
    /// Keys from the root to the object holding `command` (Zed's nested form adds `command`).
    pub holder: Vec<String>,
    pub command_key: String,
    pub old: CommandLine,
    pub new: CommandLine,
    pub edits: Vec<ByteEdit>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstallRecord {
    pub version: u32,
    pub client: String,
    pub file: PathBuf,
    pub created: String,
    pub backup: PathBuf,
    pub original_sha256: String,
    pub written_sha256: String,
    pub changes: Vec<EntryChange>,
    /// Set when `uninstall` reversed this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone: Option<String>,
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "unknown".into())
}

fn stamp() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:09}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.nanosecond()
    )
}

/// Write the backup of `original` and the record (before the config itself is touched, so a
/// crash mid-install still leaves a way back). Returns the record's path.
pub fn save(
    dir: &Path,
    client: &str,
    file: &Path,
    original: &[u8],
    written: &[u8],
    changes: Vec<EntryChange>,
) -> Result<(PathBuf, InstallRecord), ClientsError> {
    let err = |path: &Path, source| ClientsError::Write {
        path: path.to_path_buf(),
        source,
    };
    create_private_dir(dir).map_err(|e| err(dir, e))?;
    let tag = &sha256_hex(file.as_os_str().as_encoded_bytes())[..8];
    let mut base = format!("{}-{client}-{tag}", stamp());
    let mut n = 1;
    while dir.join(format!("{base}.json")).exists() {
        n += 1;
        base = format!("{}-{client}-{tag}-{n}", stamp());
    }
    let backup = dir.join(format!("{base}.bak"));
    let record_path = dir.join(format!("{base}.json"));
    write_new(&backup, original).map_err(|e| err(&backup, e))?;
    let record = InstallRecord {
        version: RECORD_VERSION,
        client: client.to_string(),
        file: file.to_path_buf(),
        created: now_rfc3339(),
        backup,
        original_sha256: sha256_hex(original),
        written_sha256: sha256_hex(written),
        changes,
        undone: None,
    };
    let json =
        serde_json::to_vec_pretty(&record).map_err(|e| ClientsError::Internal(e.to_string()))?;
    write_new(&record_path, &json).map_err(|e| err(&record_path, e))?;
    Ok((record_path, record))
}

/// The installs directory holds copies of configs (with their `env` secrets): owner-only.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Create a file that must not exist yet, private to the user (backups hold secrets from `env`).
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Remove a record and its backup (the install it describes did not happen).
pub fn discard(record_path: &Path, record: &InstallRecord) {
    let _ = fs::remove_file(record_path);
    let _ = fs::remove_file(&record.backup);
}

/// Every record in `dir`, oldest first.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, InstallRecord)>, ClientsError> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(source) => {
            return Err(ClientsError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let bytes = fs::read(&path).map_err(|source| ClientsError::Read {
            path: path.clone(),
            source,
        })?;
        let record: InstallRecord =
            serde_json::from_slice(&bytes).map_err(|e| ClientsError::Record {
                path: path.clone(),
                message: e.to_string(),
            })?;
        out.push((path, record));
    }
    Ok(out)
}

/// Mark a record as reversed (kept for the audit trail).
pub fn mark_undone(path: &Path, record: &InstallRecord) -> Result<(), ClientsError> {
    let mut r = record.clone();
    r.undone = Some(now_rfc3339());
    let json = serde_json::to_vec_pretty(&r).map_err(|e| ClientsError::Internal(e.to_string()))?;
    write_atomic(path, &json)
}

/// The original bytes of a record, checked against the recorded hash.
pub fn read_backup(record: &InstallRecord) -> Result<Vec<u8>, ClientsError> {
    let bytes = fs::read(&record.backup).map_err(|source| ClientsError::Read {
        path: record.backup.clone(),
        source,
    })?;
    if sha256_hex(&bytes) != record.original_sha256 {
        return Err(ClientsError::Record {
            path: record.backup.clone(),
            message: "backup does not match the recorded hash".into(),
        });
    }
    Ok(bytes)
}
