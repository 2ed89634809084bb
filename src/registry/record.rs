//! A signed scan record: who was scanned, what it listed, what the scan found, who says so.
//!
//! The schema is `mcpjail.scan-record.v1` (documented field by field in
//! `docs/scan-record.md`). The signature is ed25519 over the canonical encoding
//! ([`super::canonical`]) of the whole record object *as stored* minus its `signature` member,
//! so a field added, removed or changed anywhere — including one this version does not know —
//! breaks it.

use ed25519_dalek::{Signature, Signer as _, SigningKey, Verifier as _, VerifyingKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::canonical::{to_canonical, CanonicalError};
use super::keys::key_id;
use crate::policy::command::{package_name, Launcher, Runner, ServerCommand};
pub use crate::scan::tools_digest;
pub use crate::scan::verdict::Verdict;

pub const SCHEMA: &str = "mcpjail.scan-record.v1";

/// At most this many evidence items are kept in a record (the full list is in the scan report).
pub const MAX_EVIDENCE: usize = 20;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    pub schema: String,
    pub server: ServerIdentity,
    /// Hex SHA-256 over the server's `tools/list`: the scan report's digest ([`tools_digest`]).
    pub tools_digest: String,
    pub tool_count: u64,
    pub verdict: Verdict,
    /// A canary token came back in a tool result.
    pub exfiltrated: bool,
    pub tools: Vec<ToolVerdict>,
    pub evidence: Vec<Evidence>,
    pub scanner: Scanner,
    /// `uname -sr` of the scanning machine.
    pub kernel: String,
    /// RFC 3339, UTC.
    pub date: String,
    pub signer: Signer,
    /// Hex ed25519 signature; absent only while the record is being built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerIdentity {
    /// What the registry files the record under: the package name, or the command's name.
    pub name: String,
    /// `npm`, `pypi`, or `command` (no package: identified by its command line and entry hash).
    pub ecosystem: String,
    /// The version the command pins, when it pins one.
    pub version: Option<String>,
    /// The command line as scanned (scan-sandbox paths replaced by placeholders).
    pub command: Vec<String>,
    /// SHA-256 of the resolved entry file (the script or program that ran), when known.
    pub entry_sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolVerdict {
    pub name: String,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// The verdict this evidence supports (`launders`, `undeclared`) or `exfiltrated`.
    pub kind: String,
    pub tool: Option<String>,
    pub argument: Option<String>,
    pub value: Option<String>,
    pub syscall: Option<String>,
    pub path: Option<String>,
    pub result: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scanner {
    pub name: String,
    pub version: String,
}

impl Scanner {
    pub fn this() -> Scanner {
        Scanner {
            name: "mcpjail".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signer {
    pub key_id: String,
    /// Hex of the 32-byte ed25519 public key.
    pub public_key: String,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not a scan record: {0}")]
    Schema(String),
    #[error("unsupported record schema {0:?} (this mcpjail reads {SCHEMA:?})")]
    Version(String),
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    #[error("the record is not signed")]
    Unsigned,
    #[error("the signer block is inconsistent: key id {claimed} does not belong to public key {public_key}")]
    SignerMismatch { claimed: String, public_key: String },
    #[error("signed by {0}, which is not one of the registry's trusted keys (add its .pub file to keys/ if you trust it)")]
    Untrusted(String),
    #[error("the signature does not match the record's contents (it was changed after signing, or signed by another key)")]
    BadSignature,
}

impl ServerIdentity {
    /// The identity a command line names: its first package (and the version it pins) for a
    /// package runner, else the command itself.
    pub fn from_command(argv: &[String], entry_sha256: Option<String>) -> ServerIdentity {
        let cmd = ServerCommand::parse(argv);
        let ecosystem = match cmd.launcher {
            Launcher::Runner(Runner::Uvx | Runner::PipxRun) => Some("pypi"),
            Launcher::Runner(Runner::UvRun) => None,
            Launcher::Runner(_) => Some("npm"),
            _ => None,
        };
        match (ecosystem, cmd.packages.first()) {
            (Some(eco), Some(spec)) => ServerIdentity {
                name: package_name(spec),
                ecosystem: eco.into(),
                version: pinned_version(spec),
                command: argv.to_vec(),
                entry_sha256,
            },
            _ => ServerIdentity {
                name: cmd.default_name(),
                ecosystem: "command".into(),
                version: None,
                command: argv.to_vec(),
                entry_sha256,
            },
        }
    }

    /// The version label records are filed under: the pinned version, else `unversioned`.
    pub fn version_label(&self) -> &str {
        self.version.as_deref().unwrap_or("unversioned")
    }
}

/// `@scope/pkg@1.2.3` → `1.2.3`, `pkg==1.0` → `1.0`; ranges and tags are not versions.
fn pinned_version(spec: &str) -> Option<String> {
    let name = package_name(spec);
    let rest = spec.get(name.len()..)?;
    let version = rest.strip_prefix("==").or_else(|| rest.strip_prefix('@'))?;
    let exact = !version.is_empty()
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+'));
    exact.then(|| version.to_string())
}

impl Record {
    /// Sign: fill the signer block for `key` and the signature over everything else.
    pub fn sign(mut self, key: &SigningKey) -> Result<Record, RecordError> {
        let public = key.verifying_key();
        self.signer = Signer {
            key_id: key_id(&public),
            public_key: hex::encode(public.as_bytes()),
        };
        self.signature = None;
        let body = serde_json::to_value(&self).map_err(|e| RecordError::Schema(e.to_string()))?;
        let signature = key.sign(&to_canonical(&body)?);
        self.signature = Some(hex::encode(signature.to_bytes()));
        Ok(self)
    }

    pub fn to_pretty_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }
}

impl Record {
    /// The unsigned record of a scan: identity from the command as configured (not the
    /// scan-sandbox remapping), the report's tools digest and verdicts, and up to
    /// [`MAX_EVIDENCE`] evidence items (start-up first, then per tool).
    pub fn from_report(report: &crate::scan::ScanReport, entry_sha256: Option<String>) -> Record {
        let evidence = report
            .startup
            .iter()
            .chain(report.tools.iter().flat_map(|t| t.evidence.iter()))
            .take(MAX_EVIDENCE)
            .map(|e| Evidence {
                kind: e.kind.as_str().into(),
                tool: e.tool.clone(),
                argument: e.argument.clone(),
                value: e.value.clone(),
                syscall: Some(e.syscall.clone()),
                path: Some(e.resolved.to_string_lossy().into_owned()),
                result: Some(e.result.clone()),
            });
        let leaked = report
            .tools
            .iter()
            .filter(|t| t.exfiltrated)
            .map(|t| Evidence {
                kind: "exfiltrated".into(),
                tool: Some(t.tool.clone()),
                argument: None,
                value: None,
                syscall: None,
                path: None,
                result: Some("a canary token came back in the result".into()),
            });
        Record {
            schema: SCHEMA.into(),
            server: ServerIdentity::from_command(&report.server.command, entry_sha256),
            tools_digest: report.server.tools_digest.clone(),
            tool_count: report.tools.len() as u64,
            verdict: report.verdict,
            exfiltrated: report.exfiltrated,
            tools: report
                .tools
                .iter()
                .map(|t| ToolVerdict {
                    name: t.tool.clone(),
                    verdict: t.verdict,
                })
                .collect(),
            evidence: leaked.chain(evidence).take(MAX_EVIDENCE).collect(),
            scanner: Scanner::this(),
            kernel: kernel_release(),
            date: now_rfc3339(),
            signer: Signer {
                key_id: String::new(),
                public_key: String::new(),
            },
            signature: None,
        }
    }
}

/// Parse and check a stored record: schema, signer consistency, signature, and that the signer
/// is one of `trusted` (key id, key). Checks run over the JSON as stored, not a re-encoding.
pub fn verify(text: &str, trusted: &[(String, VerifyingKey)]) -> Result<Record, RecordError> {
    let stored: Value = serde_json::from_str(text)
        .map_err(|e| RecordError::Schema(format!("invalid JSON: {e}")))?;
    match stored.get("schema").and_then(Value::as_str) {
        Some(SCHEMA) => {}
        Some(other) => return Err(RecordError::Version(other.to_string())),
        None => return Err(RecordError::Schema("no \"schema\" member".into())),
    }
    let record: Record =
        serde_json::from_value(stored.clone()).map_err(|e| RecordError::Schema(e.to_string()))?;
    let signature_hex = record.signature.as_deref().ok_or(RecordError::Unsigned)?;
    let public = hex::decode(&record.signer.public_key)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
        .ok_or_else(|| RecordError::Schema("signer.public_key is not an ed25519 key".into()))?;
    if key_id(&public) != record.signer.key_id {
        return Err(RecordError::SignerMismatch {
            claimed: record.signer.key_id.clone(),
            public_key: record.signer.public_key.clone(),
        });
    }
    if !trusted.iter().any(|(_, k)| *k == public) {
        return Err(RecordError::Untrusted(record.signer.key_id.clone()));
    }
    let signature = hex::decode(signature_hex)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| Signature::from_bytes(&b))
        .ok_or(RecordError::BadSignature)?;
    let mut body = stored;
    if let Some(map) = body.as_object_mut() {
        map.remove("signature");
    }
    public
        .verify(&to_canonical(&body)?, &signature)
        .map_err(|_| RecordError::BadSignature)?;
    Ok(record)
}

/// SHA-256 of the file the command really runs: the script an interpreter is given, else the
/// program a package runner resolves to (its installed bin), else the program on PATH.
pub fn entry_sha256(command: &[String], cwd: &std::path::Path) -> Option<String> {
    use crate::policy::command::ServerCommand;
    use sha2::{Digest, Sha256};
    let env: Vec<_> = std::env::vars_os().collect();
    let launch = crate::sandbox::launcher::resolve(command, cwd, &env).ok()?;
    let parsed = ServerCommand::parse(&launch.command);
    let file = match parsed.script() {
        Some(script) => launch.cwd.join(script),
        None => {
            let program = std::path::Path::new(parsed.program());
            if program.components().count() > 1 {
                launch.cwd.join(program)
            } else {
                std::env::split_paths(&std::env::var_os("PATH")?)
                    .map(|dir| dir.join(program))
                    .find(|p| p.is_file())?
            }
        }
    };
    let bytes = std::fs::read(file).ok()?;
    Some(hex::encode(Sha256::digest(&bytes)))
}

/// The kernel line records carry (`Linux 6.18.0-…`).
pub fn kernel_release() -> String {
    match nix::sys::utsname::uname() {
        Ok(u) => format!(
            "{} {}",
            u.sysname().to_string_lossy(),
            u.release().to_string_lossy()
        ),
        Err(_) => "unknown".into(),
    }
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".into())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub fn sample(date: &str) -> Record {
        let argv: Vec<String> = [
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem@2025.8.21",
            "/scope",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        Record {
            schema: SCHEMA.into(),
            server: ServerIdentity::from_command(&argv, None),
            tools_digest: tools_digest(&[json!({"name": "read_file"})]),
            tool_count: 1,
            verdict: Verdict::Confined,
            exfiltrated: false,
            tools: vec![ToolVerdict {
                name: "read_file".into(),
                verdict: Verdict::Confined,
            }],
            evidence: vec![],
            scanner: Scanner::this(),
            kernel: "Linux 6.18".into(),
            date: date.into(),
            signer: Signer {
                key_id: String::new(),
                public_key: String::new(),
            },
            signature: None,
        }
    }

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    fn trust(k: &SigningKey) -> Vec<(String, VerifyingKey)> {
        vec![(key_id(&k.verifying_key()), k.verifying_key())]
    }

    #[test]
    fn identity_names_the_package_and_its_pinned_version() {
        let r = sample("2026-12-01T00:00:00Z");
        assert_eq!(r.server.name, "@modelcontextprotocol/server-filesystem");
        assert_eq!(r.server.ecosystem, "npm");
        assert_eq!(r.server.version.as_deref(), Some("2025.8.21"));
        let uvx: Vec<String> = ["uvx", "mcp-server-git==2025.1.14"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let id = ServerIdentity::from_command(&uvx, None);
        assert_eq!(
            (
                id.name.as_str(),
                id.ecosystem.as_str(),
                id.version.as_deref()
            ),
            ("mcp-server-git", "pypi", Some("2025.1.14"))
        );
        let latest: Vec<String> = ["npx", "pkg@latest"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(ServerIdentity::from_command(&latest, None).version, None);
    }

    #[test]
    fn a_signed_record_verifies_and_any_change_breaks_it() {
        let k = key(7);
        let signed = sample("2026-12-01T00:00:00Z").sign(&k).unwrap();
        let text = signed.to_pretty_json();
        assert_eq!(verify(&text, &trust(&k)).unwrap(), signed);
        // Re-encoding (whitespace, member order) does not matter: the canonical form does.
        let compact =
            serde_json::to_string(&serde_json::from_str::<Value>(&text).unwrap()).unwrap();
        assert!(verify(&compact, &trust(&k)).is_ok());
        let tampered = text.replace("\"confined\"", "\"launders\"");
        assert!(matches!(
            verify(&tampered, &trust(&k)),
            Err(RecordError::BadSignature)
        ));
        assert!(matches!(
            verify(&text, &trust(&key(8))),
            Err(RecordError::Untrusted(_))
        ));
        // Another key re-signing with the original's signer block claims a key it does not hold.
        let mut forged: Value = serde_json::from_str(&text).unwrap();
        let other = sample("2026-12-01T00:00:00Z").sign(&key(8)).unwrap();
        forged["signature"] = json!(other.signature);
        assert!(matches!(
            verify(&forged.to_string(), &trust(&k)),
            Err(RecordError::BadSignature)
        ));
        // A member this version does not know is refused, not silently dropped.
        let mut extra: Value = serde_json::from_str(&text).unwrap();
        extra["note"] = json!("x");
        assert!(matches!(
            verify(&extra.to_string(), &trust(&k)),
            Err(RecordError::Schema(_))
        ));
    }

    #[test]
    fn tools_digest_ignores_order_and_sees_changes() {
        let a = json!({"name": "a", "description": "x"});
        let b = json!({"name": "b"});
        assert_eq!(
            tools_digest(&[a.clone(), b.clone()]),
            tools_digest(&[b.clone(), a])
        );
        let a2 = json!({"name": "a", "description": "y"});
        assert_ne!(
            tools_digest(&[a2, b.clone()]),
            tools_digest(&[json!({"name": "a", "description": "x"}), b])
        );
    }
}
