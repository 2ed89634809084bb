//! The probe: a small Python program run as the "server" — jailed with the same
//! `sandbox::prepare_with_env` the proxy uses, or unjailed for the control — that opens each
//! path of a batch for read and for write and reports the errno of each attempt.
//!
//! * read: `open(O_RDONLY | O_NONBLOCK)` (non-blocking, so a pipe under `/proc/self/fd` cannot
//!   hang it);
//! * write: for an existing directory, create and remove a file inside it (what write access to
//!   a directory argument means); otherwise `open(O_WRONLY | O_CREAT | O_NONBLOCK)` without
//!   truncation, and a file the open created is removed again (through `realpath`, so a dangling
//!   link's new target is the one removed), so the tree does not drift between paths.
//!
//! Paths travel hex-encoded, so any byte string reaches `open` exactly as generated.

use std::ffi::OsString;
use std::path::Path;

use mcpjail::policy::Scope;
use mcpjail::sandbox::{self, Grant, JailOptions};
use tokio::io::AsyncWriteExt;

const PROBE: &str = r#"
import errno, json, os, sys
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))
out = []
for line in sys.stdin:
    p = bytes.fromhex(line.strip())
    r = {}
    try:
        os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
        r["read"] = "OK"
        if os.path.isdir(p):
            r["entries"] = len(os.listdir(p))
    except OSError as e:
        r["read"] = err(e)
    try:
        is_dir = os.path.isdir(p)
    except (OSError, ValueError):
        is_dir = False
    if is_dir:
        inner = os.path.join(p, b".mcpjail-diff-probe")
        try:
            os.close(os.open(inner, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(inner)
            r["write"] = "OK"
        except OSError as e:
            r["write"] = err(e)
    else:
        try:
            existed = os.path.exists(p)
        except (OSError, ValueError):
            existed = True
        try:
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o600))
            if not existed:
                os.unlink(os.path.realpath(p))
            r["write"] = "OK"
        except OSError as e:
            r["write"] = err(e)
    out.append(r)
print(json.dumps(out))
"#;

/// What the kernel said to one open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kernel {
    Allowed,
    /// EACCES, EPERM, EROFS: a permission decision (Landlock, a mask, a read-only mount).
    Denied(String),
    /// Any other errno (ENOENT, ENOTDIR, EISDIR, ELOOP, ENAMETOOLONG...): the open failed before
    /// or apart from any permission decision, so it says nothing about either layer.
    Inconclusive(String),
}

impl Kernel {
    fn from_word(w: &str) -> Kernel {
        match w {
            "OK" => Kernel::Allowed,
            "EACCES" | "EPERM" | "EROFS" => Kernel::Denied(w.to_string()),
            other => Kernel::Inconclusive(other.to_string()),
        }
    }
    pub fn word(&self) -> &str {
        match self {
            Kernel::Allowed => "OK",
            Kernel::Denied(w) | Kernel::Inconclusive(w) => w,
        }
    }
}

pub struct Outcome {
    pub read: Kernel,
    pub write: Kernel,
    /// For a directory the probe could open for reading: how many entries it saw in it.
    pub entries: Option<usize>,
}

/// A prepared probe (jailed or not) and what the jail granted.
pub struct Probe {
    jail: sandbox::PreparedJail,
}

impl Probe {
    /// `require_full`: refuse to run unless every layer is enforced (as root here; as nobody
    /// the masks need a user namespace the kernel may refuse, and the jail falls back to
    /// list-only carving, which the caller accounts for).
    pub fn prepare(
        scope: &Scope,
        cwd: &Path,
        home: &Path,
        jailed: bool,
        require_full: bool,
    ) -> Probe {
        let opts = JailOptions {
            disabled: !jailed,
            require_full: jailed && require_full,
            ..JailOptions::default()
        };
        let env: Vec<(OsString, OsString)> = vec![
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("HOME".into(), home.as_os_str().to_owned()),
        ];
        let command: Vec<String> = vec!["/usr/bin/python3".into(), "-c".into(), PROBE.into()];
        let jail = sandbox::prepare_with_env(scope, &command, cwd, &opts, &env)
            .unwrap_or_else(|e| panic!("prepare the probe (jailed: {jailed}): {e}"));
        Probe { jail }
    }

    pub fn grants(&self) -> &[Grant] {
        self.jail.grants()
    }

    pub fn notes(&self) -> &[String] {
        self.jail.notes()
    }

    /// Open every path of `batch` in one probe process.
    pub async fn run(&self, batch: &[Vec<u8>]) -> Vec<Outcome> {
        let mut cmd = self.jail.command();
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn the probe");
        let mut input = String::new();
        for p in batch {
            input.push_str(&hex::encode(p));
            input.push('\n');
        }
        let mut stdin = child.stdin.take().expect("probe stdin");
        stdin
            .write_all(input.as_bytes())
            .await
            .expect("write the batch");
        drop(stdin);
        let out = child.wait_with_output().await.expect("wait for the probe");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "probe failed: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let rows: Vec<std::collections::BTreeMap<String, serde_json::Value>> =
            serde_json::from_str(stdout.trim()).expect("probe output is JSON");
        assert_eq!(rows.len(), batch.len(), "one result per path");
        rows.iter()
            .map(|r| Outcome {
                read: Kernel::from_word(r["read"].as_str().unwrap_or("?")),
                write: Kernel::from_word(r["write"].as_str().unwrap_or("?")),
                entries: r
                    .get("entries")
                    .and_then(|n| n.as_u64())
                    .map(|n| n as usize),
            })
            .collect()
    }
}
