//! ed25519 signing keys: generation, the two key files, and the trusted-key directory.
//!
//! Files are one line of text so they survive copy and paste and show up readably in a diff:
//! `mcpjail-ed25519-secret-v1 <64 hex digits of the seed>` (mode 0600, in a 0700 directory) and
//! `mcpjail-ed25519-public-v1 <64 hex digits>`. A key's id is `ed25519:` followed by the first
//! 16 hex digits of the SHA-256 of the public key: short enough to read in a table, long enough
//! that two keys in one registry do not collide by accident.

use std::path::{Path, PathBuf};

use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

const SECRET_TAG: &str = "mcpjail-ed25519-secret-v1";
const PUBLIC_TAG: &str = "mcpjail-ed25519-public-v1";
pub const SECRET_FILE: &str = "mcpjail-signing.key";
pub const PUBLIC_FILE: &str = "mcpjail-signing.pub";

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("{0} already exists; keygen never overwrites a key (choose another --out, or move the old key away first)")]
    Exists(PathBuf),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not an mcpjail {kind} key (expected one line `{tag} <64 hex digits>`)")]
    Malformed {
        path: PathBuf,
        kind: &'static str,
        tag: &'static str,
    },
    #[error(
        "{0} is readable by other users (mode {1:o}); run `chmod 600 {0}` before signing with it"
    )]
    Exposed(PathBuf, u32),
    #[error("cannot read random bytes for a new key: {0}")]
    Random(String),
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> KeyError + 'a {
    move |source| KeyError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// `ed25519:<16 hex>` for a public key.
pub fn key_id(key: &VerifyingKey) -> String {
    let digest = Sha256::digest(key.as_bytes());
    format!("ed25519:{}", &hex::encode(digest)[..16])
}

pub fn public_key_text(key: &VerifyingKey) -> String {
    format!("{PUBLIC_TAG} {}\n", hex::encode(key.as_bytes()))
}

/// Make a new keypair in `dir` (created 0700 if missing). Returns the two file paths.
pub fn generate(dir: &Path) -> Result<(PathBuf, PathBuf, VerifyingKey), KeyError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

    let secret_path = dir.join(SECRET_FILE);
    let public_path = dir.join(PUBLIC_FILE);
    for path in [&secret_path, &public_path] {
        if path.symlink_metadata().is_ok() {
            return Err(KeyError::Exists(path.clone()));
        }
    }
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io("create", dir))?;
    }
    // An existing directory is tightened too: the secret must not sit where others can list
    // or replace it.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(io("restrict", dir))?;
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
    let signing = SigningKey::from_bytes(&seed);
    let verifying = signing.verifying_key();
    // create_new: a file that appeared since the check above is not overwritten either.
    let mut secret = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&secret_path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => KeyError::Exists(secret_path.clone()),
            _ => KeyError::Io {
                what: "create",
                path: secret_path.clone(),
                source: e,
            },
        })?;
    secret
        .write_all(format!("{SECRET_TAG} {}\n", hex::encode(seed)).as_bytes())
        .and_then(|()| secret.sync_all())
        .map_err(io("write", &secret_path))?;
    let mut public = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&public_path)
        .map_err(io("create", &public_path))?;
    public
        .write_all(public_key_text(&verifying).as_bytes())
        .map_err(io("write", &public_path))?;
    Ok((secret_path, public_path, verifying))
}

fn parse_line<'a>(text: &'a str, tag: &str) -> Option<[u8; 32]> {
    let rest: &'a str = text.trim().strip_prefix(tag)?.strip_prefix(' ')?;
    let bytes = hex::decode(rest.trim()).ok()?;
    bytes.try_into().ok()
}

/// Load a secret key file, refusing one that others can read.
pub fn load_signing(path: &Path) -> Result<SigningKey, KeyError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(io("read", path))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(KeyError::Exposed(path.to_path_buf(), mode & 0o777));
    }
    let text = std::fs::read_to_string(path).map_err(io("read", path))?;
    let seed = parse_line(&text, SECRET_TAG).ok_or_else(|| KeyError::Malformed {
        path: path.to_path_buf(),
        kind: "secret",
        tag: SECRET_TAG,
    })?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Parse a public key from its file text.
pub fn parse_public(text: &str) -> Option<VerifyingKey> {
    VerifyingKey::from_bytes(&parse_line(text, PUBLIC_TAG)?).ok()
}

pub fn load_public(path: &Path) -> Result<VerifyingKey, KeyError> {
    let text = std::fs::read_to_string(path).map_err(io("read", path))?;
    parse_public(&text).ok_or_else(|| KeyError::Malformed {
        path: path.to_path_buf(),
        kind: "public",
        tag: PUBLIC_TAG,
    })
}

/// The keys a registry trusts: every `*.pub` file in `dir`, by key id.
pub fn trusted_keys(dir: &Path) -> Result<Vec<(String, VerifyingKey)>, KeyError> {
    let mut keys = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(keys),
        Err(e) => return Err(io("list", dir)(e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pub"))
        .collect();
    paths.sort();
    for path in paths {
        let key = load_public(&path)?;
        keys.push((key_id(&key), key));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keygen_writes_private_files_and_refuses_to_overwrite() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("keys");
        let (secret, public, verifying) = generate(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&secret), 0o600);
        assert_eq!(load_signing(&secret).unwrap().verifying_key(), verifying);
        assert_eq!(load_public(&public).unwrap(), verifying);
        let before = std::fs::read(&secret).unwrap();
        assert!(matches!(generate(&dir), Err(KeyError::Exists(_))));
        assert_eq!(std::fs::read(&secret).unwrap(), before);
    }

    #[test]
    fn a_readable_secret_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let (secret, _, _) = generate(tmp.path()).unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(load_signing(&secret), Err(KeyError::Exposed(..))));
    }
}
