//! A registry directory: trusted keys and one signed record per server and version.
//!
//! ```text
//! DIR/keys/*.pub                       the keys whose records this registry accepts
//! DIR/records/<server>/<version>.json  one record each, as signed (never re-encoded)
//! ```
//!
//! Records are stored byte for byte as they arrived, so what `verify` checks is exactly what
//! the signer signed. A record's place in the tree is derived from its signed identity, and
//! `verify` checks that too: a record copied over another server's file is caught.

use std::path::{Path, PathBuf};

use ed25519_dalek::VerifyingKey;

use super::keys::{trusted_keys, KeyError};
use super::record::{verify, Record, RecordError};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0} trusts no keys: put the signers' .pub files (from `mcpjail keygen`) in {1}")]
    NoKeys(PathBuf, PathBuf),
}

pub struct Registry {
    pub root: PathBuf,
    pub keys: Vec<(String, VerifyingKey)>,
}

/// What happened to one record given to `add`.
#[derive(Debug, PartialEq, Eq)]
pub enum Added {
    /// Stored (no earlier record for this server and version).
    New(PathBuf),
    /// Stored, replacing an older record (its date).
    Superseded { path: PathBuf, previous: String },
    /// Not stored: the registry's record is the same age or newer (its date).
    Skipped { path: PathBuf, kept: String },
    /// Not stored: the record failed a check.
    Rejected(String),
}

/// `verify_all`'s answer: the records that verified (with their files), and the failures.
pub type Checked = (Vec<(PathBuf, Record)>, Vec<Failure>);

/// One stored record that failed verification.
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    pub path: PathBuf,
    pub reason: String,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |source| StoreError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// A file-name-safe form of a server name or version (`@scope/pkg` → `scope__pkg`).
pub fn slug(s: &str) -> String {
    let s = s.strip_prefix('@').unwrap_or(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '/' => out.push_str("__"),
            c if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+') => out.push(c),
            _ => out.push('_'),
        }
    }
    if out.is_empty() || out.starts_with('.') {
        out.insert(0, '_');
    }
    out
}

impl Registry {
    /// Open `root`, loading its trusted keys. A registry must trust at least one key.
    pub fn open(root: &Path) -> Result<Registry, StoreError> {
        let keys_dir = root.join("keys");
        let keys = trusted_keys(&keys_dir)?;
        if keys.is_empty() {
            return Err(StoreError::NoKeys(root.to_path_buf(), keys_dir));
        }
        Ok(Registry {
            root: root.to_path_buf(),
            keys,
        })
    }

    pub fn records_dir(&self) -> PathBuf {
        self.root.join("records")
    }

    /// Where a record for this identity lives.
    pub fn path_for(&self, record: &Record) -> PathBuf {
        self.records_dir()
            .join(slug(&record.server.name))
            .join(format!("{}.json", slug(record.server.version_label())))
    }

    /// Validate `text` and store it, unless an equal-or-newer record is already there.
    pub fn add(&self, text: &str) -> Result<Added, StoreError> {
        let record = match verify(text, &self.keys) {
            Ok(r) => r,
            Err(e) => return Ok(Added::Rejected(e.to_string())),
        };
        let path = self.path_for(&record);
        let previous = match std::fs::read_to_string(&path) {
            Ok(old) => match verify(&old, &self.keys) {
                Ok(old) if old.server.name != record.server.name => {
                    return Ok(Added::Rejected(format!(
                        "{} is already taken by {:?} (a different server whose name files to the same place)",
                        path.display(),
                        old.server.name
                    )));
                }
                Ok(old) if old.date >= record.date => {
                    return Ok(Added::Skipped {
                        path,
                        kept: old.date,
                    });
                }
                Ok(old) => Some(old.date),
                // A stored record that no longer verifies is replaced by a valid one.
                Err(_) => Some("an invalid record".into()),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io("read", &path)(e)),
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        }
        crate::clients::atomic::write_atomic(&path, text.as_bytes())
            .map_err(|e| io("write", &path)(std::io::Error::other(e.to_string())))?;
        Ok(match previous {
            Some(previous) => Added::Superseded { path, previous },
            None => Added::New(path),
        })
    }

    /// Every stored record file, sorted.
    pub fn record_files(&self) -> Result<Vec<PathBuf>, StoreError> {
        let dir = self.records_dir();
        let mut files = Vec::new();
        let servers = match std::fs::read_dir(&dir) {
            Ok(s) => s,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(files),
            Err(e) => return Err(io("list", &dir)(e)),
        };
        for server in servers.filter_map(Result::ok) {
            let Ok(versions) = std::fs::read_dir(server.path()) else {
                continue;
            };
            files.extend(
                versions
                    .filter_map(Result::ok)
                    .map(|v| v.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "json")),
            );
        }
        files.sort();
        Ok(files)
    }

    /// Verify every stored record: the good ones and the failures, each failure naming its
    /// file and what failed.
    pub fn verify_all(&self) -> Result<Checked, StoreError> {
        let mut good = Vec::new();
        let mut bad = Vec::new();
        for path in self.record_files()? {
            let outcome = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read it: {e}"))
                .and_then(|text| verify(&text, &self.keys).map_err(|e| describe(&e)))
                .and_then(|record| {
                    let expected = self.path_for(&record);
                    if expected == path {
                        Ok(record)
                    } else {
                        Err(format!(
                            "it is signed for {} {} but stored as {} (moved or copied over another record)",
                            record.server.name,
                            record.server.version_label(),
                            path.display()
                        ))
                    }
                });
            match outcome {
                Ok(record) => good.push((path, record)),
                Err(reason) => bad.push(Failure { path, reason }),
            }
        }
        Ok((good, bad))
    }

    /// The record for a server name and version label, verified.
    pub fn lookup(&self, name: &str, version: &str) -> Option<Result<Record, String>> {
        let path = self
            .records_dir()
            .join(slug(name))
            .join(format!("{}.json", slug(version)));
        let text = std::fs::read_to_string(&path).ok()?;
        Some(verify(&text, &self.keys).map_err(|e| describe(&e)))
    }
}

fn describe(e: &RecordError) -> String {
    e.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::keys;
    use crate::registry::record::tests::sample;

    fn registry_with_key() -> (tempfile::TempDir, Registry, ed25519_dalek::SigningKey) {
        let tmp = tempfile::tempdir().unwrap();
        let (secret, public, _) = keys::generate(&tmp.path().join("me")).unwrap();
        let keys_dir = tmp.path().join("reg/keys");
        std::fs::create_dir_all(&keys_dir).unwrap();
        std::fs::copy(&public, keys_dir.join("me.pub")).unwrap();
        let reg = Registry::open(&tmp.path().join("reg")).unwrap();
        (tmp, reg, keys::load_signing(&secret).unwrap())
    }

    #[test]
    fn newer_supersedes_older_and_duplicates_are_skipped() {
        let (_tmp, reg, key) = registry_with_key();
        let old = sample("2026-11-01T00:00:00Z")
            .sign(&key)
            .unwrap()
            .to_pretty_json();
        let new = sample("2026-12-01T00:00:00Z")
            .sign(&key)
            .unwrap()
            .to_pretty_json();
        assert!(matches!(reg.add(&old).unwrap(), Added::New(_)));
        assert!(matches!(reg.add(&new).unwrap(), Added::Superseded { .. }));
        assert!(matches!(reg.add(&old).unwrap(), Added::Skipped { .. }));
        assert!(matches!(reg.add(&new).unwrap(), Added::Skipped { .. }));
        let (good, bad) = reg.verify_all().unwrap();
        assert_eq!((good.len(), bad.len()), (1, 0));
        assert_eq!(std::fs::read_to_string(&good[0].0).unwrap(), new);
    }

    #[test]
    fn any_changed_byte_of_meaning_fails_verify_naming_the_file() {
        let (_tmp, reg, key) = registry_with_key();
        let text = sample("2026-12-01T00:00:00Z")
            .sign(&key)
            .unwrap()
            .to_pretty_json();
        let Added::New(path) = reg.add(&text).unwrap() else {
            panic!("not added")
        };
        std::fs::write(&path, text.replace("Linux 6.18", "Linux 6.19")).unwrap();
        let (_, bad) = reg.verify_all().unwrap();
        assert_eq!(bad.len(), 1);
        assert_eq!(bad[0].path, path);
        assert!(
            bad[0].reason.contains("signature does not match"),
            "{}",
            bad[0].reason
        );
    }

    #[test]
    fn an_unsigned_or_untrusted_record_is_rejected() {
        let (_tmp, reg, _key) = registry_with_key();
        let stranger = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
        let text = sample("2026-12-01T00:00:00Z")
            .sign(&stranger)
            .unwrap()
            .to_pretty_json();
        match reg.add(&text).unwrap() {
            Added::Rejected(why) => assert!(
                why.contains("not one of the registry's trusted keys"),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(reg.record_files().unwrap().is_empty());
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(
            slug("@modelcontextprotocol/server-filesystem"),
            "modelcontextprotocol__server-filesystem"
        );
        assert_eq!(slug("../x"), "_..__x");
        assert_eq!(slug(""), "_");
    }
}
