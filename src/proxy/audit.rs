//! Live call inspection (`--log`) and the JSON-lines audit log (`--log-file`).
//!
//! One record per checked call (`tools/call`, `resources/read`): written when the server's
//! answer arrives (so latency and result size are known), or at once for a denial. The live
//! line goes to stderr, coloured only when asked; the audit line is appended to a file. Both
//! go through [`redact`] first: a log must not become the place where a token leaks.
//!
//! The audit log must not lose records silently. A log that cannot be opened *or written* at
//! start (a read-only directory, a full disk, `/dev/full`) refuses the session: the first line,
//! a `session_start` event, is written before the server starts. A write that fails later (the
//! disk filled up) stops writing to the file, prints the lost line on stderr, and from then on
//! the proxy refuses every checked call ([`CallLog::audit_failure`]) rather than let one go
//! unrecorded; the session otherwise goes on (pings, listings, answers already in flight).
//!
//! Most of what a line shows was chosen by others: the tool name and paths by the client (a
//! model), reasons and notes quote the server. On stderr every such field goes through
//! [`crate::shown`] (a one-line record's fields with their newlines escaped too), so a name
//! like `read\x1b]52;c;…\x07` is printed, not obeyed by the user's terminal; the colour of
//! `ALLOW`/`DENY` is added after. In the audit file, JSON escapes the C0 controls and
//! [`TerminalSafeJson`] the C1 controls and bidi marks, so `tail -f` on it is safe as well.
//!
//! The proxy runs outside the jail, so the file it appends to must be the file the user named:
//! the last component is opened without following a symbolic link, and only a regular file is
//! accepted ([`open_append_regular`]). A log the server could replace by a link (one inside its
//! write scope) would otherwise make the proxy append, with text partly of the server's choosing,
//! to any file the user can write (`~/.bashrc`); whoever starts the proxy also refuses a log
//! file that lies in a write grant (`cli::proxy`), since the server could rewrite its own record.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::shown::{shown, shown_text};

/// One call, as logged.
#[derive(Debug, Clone)]
pub struct CallRecord {
    pub id: String,
    pub method: String,
    pub tool: Option<String>,
    /// Resolved paths (or raw values when unresolvable).
    pub paths: Vec<String>,
    pub allowed: bool,
    pub reason: Option<String>,
    pub latency: Duration,
    /// Bytes of the answer line (the server's, or the proxy's own denial).
    pub result_bytes: usize,
    /// The call's arguments (redacted before they are written anywhere).
    pub arguments: Option<Value>,
    /// The answer was a JSON-RPC error / the server went away before answering.
    pub outcome: &'static str,
    /// The result reported a permission error on a path outside the jail: what the jail
    /// refused and the fix (also appended to the result the client sees).
    pub jail_hint: Option<String>,
}

/// `ALLOW` / `DENY` for the live log, green or red on a terminal.
fn verdict_word(allowed: bool, color: bool) -> &'static str {
    match (allowed, color) {
        (true, true) => "\x1b[32mALLOW\x1b[0m",
        (true, false) => "ALLOW",
        (false, true) => "\x1b[31mDENY\x1b[0m",
        (false, false) => "DENY",
    }
}

/// Where the egress proxy's connections send their [`NetRecord`]s: the session loop writes
/// them with its one [`CallLog`], so the audit log has one writer and one `session_start`.
pub type NetRecords = tokio::sync::mpsc::UnboundedSender<NetRecord>;

/// One egress-proxy request, allowed or denied (see `proxy::egress`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetRecord {
    pub allowed: bool,
    /// As the server asked for it (a name or an address).
    pub host: String,
    pub port: u16,
    /// `CONNECT`, `HTTP GET`, `SOCKS5`...
    pub kind: String,
    /// The rule that allowed it.
    pub rule: Option<String>,
    /// Server → destination, destination → server.
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub elapsed: Duration,
    /// Why it was denied or failed, with the hint.
    pub reason: Option<String>,
}

/// Open `path` for appending (created 0600 if missing) without following a symbolic link in
/// its last component, and only if it is a regular file: a FIFO or device is refused before
/// anything is written to it (`O_NONBLOCK` keeps the open of a FIFO without a reader from
/// hanging; it changes nothing for a regular file).
pub fn open_append_regular(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    let file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => std::io::Error::other(
                    "it is a symbolic link, which the proxy does not follow (a link put in place \
                     of the log would make it append to the link's target); name the file itself",
                ),
                // A FIFO without a reader (the non-blocking open of one for writing).
                Some(libc::ENXIO) => not_regular(),
                _ => e,
            })?
    };
    #[cfg(not(unix))]
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(not_regular());
    }
    Ok(file)
}

fn not_regular() -> std::io::Error {
    std::io::Error::other(
        "it is not a regular file (an audit log must be a plain file the proxy appends to)",
    )
}

/// Where call records go.
#[derive(Debug)]
pub struct CallLog {
    server: String,
    live: bool,
    color: bool,
    file: Option<std::fs::File>,
    path: Option<PathBuf>,
    /// Why the audit log stopped being written (the file is no longer written once set).
    failed: Option<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot open the audit log {path}: {source}")]
pub struct AuditOpenError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

impl CallLog {
    pub fn new(
        server: &str,
        live: bool,
        color: bool,
        file: Option<&Path>,
    ) -> Result<CallLog, AuditOpenError> {
        let file_arg = file;
        let file = match file {
            None => None,
            Some(path) => Some(open_append_regular(path).map_err(|source| AuditOpenError {
                path: path.to_path_buf(),
                source,
            })?),
        };
        let mut log = CallLog {
            server: server.to_string(),
            live,
            color,
            file,
            path: file_arg.map(Path::to_path_buf),
            failed: None,
        };
        if let (Some(file), Some(path)) = (log.file.as_mut(), file_arg) {
            // Opening proves little (`/dev/full` opens): the first line must be written.
            let line = json!({"ts": now(), "server": server, "event": "session_start",
                              "pid": std::process::id(), "version": env!("CARGO_PKG_VERSION")});
            file.write_all(json_line(&line).as_bytes())
                .map_err(|source| AuditOpenError {
                    path: path.to_path_buf(),
                    source,
                })?;
        }
        Ok(log)
    }

    /// Set once a write to the audit log failed: checked calls are refused from then on.
    pub fn audit_failure(&self) -> Option<String> {
        let why = self.failed.as_ref()?;
        let path = self.path.as_ref()?;
        Some(format!(
            "cannot write the audit log {}: {why}",
            path.display()
        ))
    }

    /// Append one line to the audit log; on failure, stop using the file and keep the line on
    /// stderr so the record is not lost (and so for every line after it).
    fn append(&mut self, line: &str) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let path = path.display();
        if let Some(file) = self.file.as_mut() {
            let before = file.metadata().map(|m| m.len());
            let Err(err) = file.write_all(line.as_bytes()) else {
                return;
            };
            // A partial line would leave the log unparseable at its end: cut it back off.
            if let Ok(len) = before {
                let _ = file.set_len(len);
            }
            tracing::error!(
                "cannot append to the audit log {path}: {err}; checked calls are refused from \
                 now on (hint: free space on its file system or fix its permissions, then \
                 restart the server). The record that was not written: {}",
                line.trim_end()
            );
            self.file = None;
            self.failed = Some(err.to_string());
            return;
        }
        // The log failed earlier (answers to calls already in flight still arrive).
        tracing::error!(
            "audit record not written to {path} (the log failed earlier): {}",
            line.trim_end()
        );
    }

    pub fn enabled(&self) -> bool {
        self.live || self.path.is_some()
    }

    pub fn live(&self) -> bool {
        self.live
    }

    /// A free-form line on the live log (start-up report, respawns). The text often quotes a
    /// server or client: it is shown with terminal controls escaped.
    pub fn note(&self, text: &str) {
        if self.live {
            let line = format!("{} {} {}", now(), self.server, text);
            write_stderr_line(&shown_text(&line));
        }
    }

    /// A session event that is not a call (tool pinning changes) as one JSON line in the audit
    /// log: `{"ts", "server", "event", ...fields}`. The live log gets its own [`Self::note`].
    pub fn event(&mut self, event: &str, fields: Value) {
        if self.path.is_none() {
            return;
        }
        let mut entry = Map::new();
        entry.insert("ts".into(), Value::String(now()));
        entry.insert("server".into(), Value::String(self.server.clone()));
        entry.insert("event".into(), Value::String(event.to_string()));
        if let Value::Object(fields) = fields {
            entry.extend(fields);
        }
        let line = json_line(&Value::Object(entry));
        self.append(&line);
    }

    /// One egress-proxy decision: `NET ALLOW host:port KIND 12.3 KiB 45 ms` on the live log,
    /// a `"event": "net"` JSON line in the audit log.
    pub fn net(&mut self, rec: &NetRecord) {
        if self.live {
            let verdict = verdict_word(rec.allowed, self.color);
            let mut line = format!(
                "{} {} NET {verdict} {}:{} {}",
                now(),
                shown(&self.server),
                shown(&rec.host),
                rec.port,
                shown(&rec.kind)
            );
            if rec.allowed {
                line.push_str(&format!(
                    " {} up {} down {}",
                    human_bytes(rec.bytes_up),
                    human_bytes(rec.bytes_down),
                    human_latency(rec.elapsed)
                ));
            }
            if let Some(reason) = &rec.reason {
                line.push_str(&format!(" ({})", shown(reason)));
            }
            write_stderr_line(&line);
        }
        self.event(
            "net",
            json!({
                "decision": if rec.allowed { "allow" } else { "deny" },
                "host": rec.host,
                "port": rec.port,
                "kind": rec.kind,
                "rule": rec.rule,
                "bytes_up": rec.bytes_up,
                "bytes_down": rec.bytes_down,
                "elapsed_us": rec.elapsed.as_micros() as u64,
                "reason": rec.reason,
            }),
        );
    }

    pub fn record(&mut self, rec: &CallRecord) {
        if self.live {
            let verdict = verdict_word(rec.allowed, self.color);
            let what = rec.tool.as_deref().unwrap_or(&rec.method);
            let paths = if rec.paths.is_empty() {
                "-".to_string()
            } else {
                rec.paths
                    .iter()
                    .map(|p| shown(&redact_str(p)).into_owned())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            let mut line = format!(
                "{} {} {} {} {} {} {}B",
                now(),
                shown(&self.server),
                shown(what),
                paths,
                verdict,
                human_latency(rec.latency),
                rec.result_bytes
            );
            if let Some(reason) = &rec.reason {
                line.push_str(&format!(" ({})", shown(&redact_str(reason))));
            }
            if rec.outcome != "ok" && rec.outcome != "denied" {
                line.push_str(&format!(" [{}]", rec.outcome));
            }
            if let Some(hint) = &rec.jail_hint {
                line.push_str(&format!(" ({})", shown(&redact_str(hint))));
            }
            write_stderr_line(&line);
        }
        if self.path.is_some() {
            let entry = json!({
                "ts": now(),
                "server": self.server,
                "id": rec.id,
                "method": rec.method,
                "tool": rec.tool,
                "paths": rec.paths.iter().map(|p| redact_str(p)).collect::<Vec<_>>(),
                "decision": if rec.allowed { "allow" } else { "deny" },
                "reason": rec.reason.as_deref().map(redact_str),
                "latency_us": rec.latency.as_micros() as u64,
                "result_bytes": rec.result_bytes,
                "outcome": rec.outcome,
                "arguments": rec.arguments.as_ref().map(redact),
            });
            let mut entry = entry;
            if let Some(hint) = &rec.jail_hint {
                entry["jail_hint"] = Value::String(redact_str(hint));
            }
            let line = json_line(&entry);
            self.append(&line);
        }
    }
}

/// One audit record as a JSON line. serde_json escapes the C0 controls in strings; the C1
/// controls and bidi marks it leaves raw are escaped as well ([`TerminalSafeJson`]).
fn json_line(value: &Value) -> String {
    use serde::Serialize as _;
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, TerminalSafeJson);
    // Serialising a `Value` into a Vec does not fail (its keys are strings).
    let _ = value.serialize(&mut ser);
    out.push(b'\n');
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// serde_json's compact output, with every character [`crate::shown`] would escape written
/// as a `\uXXXX` escape: the same JSON value, and no byte in the file that a terminal obeys.
struct TerminalSafeJson;

impl serde_json::ser::Formatter for TerminalSafeJson {
    fn write_string_fragment<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if crate::shown::acts_on_terminal(c) {
                writer.write_all(&fragment.as_bytes()[start..i])?;
                write!(writer, "\\u{:04x}", u32::from(c))?;
                start = i + c.len_utf8();
            }
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// One line in one `write`, so it does not interleave with the server's own stderr (shared).
fn write_stderr_line(line: &str) {
    let mut buf = String::with_capacity(line.len() + 1);
    buf.push_str(line);
    buf.push('\n');
    let _ = std::io::stderr().write_all(buf.as_bytes());
}

fn now() -> String {
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time::OffsetDateTime::now_utc()
        .format(&fmt)
        .unwrap_or_default()
}

fn human_bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..1_048_576 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

fn human_latency(d: Duration) -> String {
    let us = d.as_micros();
    if us < 10_000 {
        format!("{us}µs")
    } else {
        format!("{}ms", us / 1000)
    }
}

const SECRET_NAMES: &[&str] = &[
    "token",
    "key",
    "secret",
    "password",
    "passwd",
    "auth",
    "apikey",
    "credential",
    "cookie",
    "session",
];

/// Is an argument with this name likely to carry a secret?
fn secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAMES.iter().any(|s| lower.contains(s))
}

/// Does this value look like a credential, whatever its name?
fn secret_value(value: &str) -> bool {
    let v = value.trim();
    let prefixed = [
        "sk-",
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "ASIA",
    ]
    .iter()
    .any(|p| {
        // At the start, or glued to punctuation (`'ghp_…'`, `(sk-…)`, `;AKIA…`: the word
        // splitting above keeps quotes and brackets), but not inside a longer identifier
        // (`task-manager-…` is not an `sk-` key).
        v.match_indices(p).any(|(i, _)| {
            let inside_word = v[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            !inside_word && v.len() - i >= p.len() + 8
        })
    });
    // `get`, not `[..7]`: byte 7 may fall inside a multi-byte character (`résumé.txt`).
    let bearer = v.len() > 7
        && v.get(..7)
            .is_some_and(|head| head.eq_ignore_ascii_case("bearer "));
    let jwt = {
        let parts: Vec<&str> = v.split('.').collect();
        parts.len() == 3
            && v.starts_with("eyJ")
            && parts.iter().all(|p| {
                !p.is_empty()
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'=')
            })
    };
    prefixed || bearer || jwt
}

const REDACTED: &str = "[REDACTED]";

/// Redact secret-looking substrings in free text (paths and reasons may embed a token).
pub fn redact_str(text: &str) -> String {
    if !text
        .split(|c: char| c.is_whitespace() || c == '/' || c == '=' || c == ':' || c == ',')
        .any(secret_value)
        && !secret_value(text)
    {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        if secret_value(token) {
            out.push_str(REDACTED);
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '/' || c == '=' || c == ':' || c == ',' || c == '"' {
            flush(&mut token, &mut out);
            out.push(c);
        } else if c.is_whitespace() {
            // Keep "Bearer xyz" together so the scheme and token are redacted as one.
            if token.eq_ignore_ascii_case("bearer") {
                token.push(c);
                continue;
            }
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
        let _ = chars.peek();
    }
    flush(&mut token, &mut out);
    out
}

/// A copy of `value` with secret-named members and secret-looking strings replaced.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                if secret_name(k) && !matches!(v, Value::Object(_) | Value::Array(_)) {
                    out.insert(k.clone(), Value::String(REDACTED.into()));
                } else {
                    out.insert(k.clone(), redact(v));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::String(s) => Value::String(redact_str(s)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// No text a client or server sends can panic the log: every formatting and redaction
        /// path over arbitrary UTF-8 (file names like `résumé.txt`, `Bearer` + multi-byte).
        #[test]
        fn any_utf8_formats_and_redacts_without_panicking(
            a in "\\PC*",
            b in "(?s).{0,40}",
            prefix in prop::sample::select(vec!["", "Bearer ", "bearer\u{e9}", "sk-", "eyJ", "ghp_"]),
        ) {
            let text = format!("{prefix}{a}");
            let _ = secret_value(&text);
            let _ = redact_str(&text);
            let _ = redact_str(&b);
            let v = json!({ text.clone(): b.clone(), "path": text.clone(), "nested": [b.clone(), {"k": text.clone()}] });
            let _ = redact(&v);
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("audit.jsonl");
            let mut log = CallLog::new(&b, false, false, Some(&file)).unwrap();
            log.record(&CallRecord {
                id: text.clone(),
                method: "tools/call".into(),
                tool: Some(b.clone()),
                paths: vec![text.clone(), b.clone()],
                allowed: true,
                reason: Some(text.clone()),
                latency: Duration::from_micros(7),
                result_bytes: 1,
                arguments: Some(v),
                outcome: "ok",
                jail_hint: Some(b.clone()),
            });
            let written = std::fs::read_to_string(&file).unwrap();
            prop_assert!(written.ends_with('\n'));
        }
    }

    /// The audit log is exact JSON a terminal cannot act on: C0 (serde_json's) and C1
    /// controls and bidi marks are `\u` escapes, and the record reads back unchanged.
    #[test]
    fn audit_lines_escape_c1_and_bidi_and_keep_the_value() {
        let value = json!({"tool": "a\u{1b}]0;T\u{7}\u{9b}2J\u{202e}\u{2066}é", "\u{85}key": 1});
        let line = json_line(&value);
        assert!(line.ends_with('\n'));
        assert!(line.contains(r"\u001b") && line.contains(r"\u009b") && line.contains(r"\u202e"));
        assert!(line.contains(r"\u2066") && line.contains(r"\u0085") && line.contains('é'));
        assert!(
            !line.trim_end().chars().any(crate::shown::acts_on_terminal),
            "{line}"
        );
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap(), value);
    }

    #[test]
    fn a_multibyte_character_at_byte_seven_is_not_a_panic() {
        assert_eq!(redact_str("résumé.txt"), "résumé.txt");
        assert!(!secret_value("bearer\u{e9}x"));
        assert!(secret_value("Bearer abcdefgh"));
    }

    #[test]
    fn redacts_names_and_values() {
        let v = json!({
            "path": "/tmp/a",
            "api_key": "abc",
            "Authorization": "whatever",
            "nested": [{"password": "hunter2", "note": "sk-abcdefghijklmnop"}],
            "header": "Bearer abc.def.ghi",
            "gh": "ghp_0123456789abcdef",
            "aws": "AKIAABCDEFGHIJKLMNOP",
            "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        });
        let r = redact(&v).to_string();
        for secret in [
            "abc\"",
            "whatever",
            "hunter2",
            "sk-abc",
            "Bearer abc",
            "ghp_",
            "AKIA",
            "eyJ",
        ] {
            assert!(!r.contains(secret), "{secret} leaked in {r}");
        }
        assert!(r.contains("/tmp/a"));
        assert_eq!(
            redact_str("/tmp/sk-abcdefghijklmnop/x"),
            "/tmp/[REDACTED]/x"
        );
        assert_eq!(redact_str("/tmp/skeleton/x"), "/tmp/skeleton/x");
    }

    /// A token glued to punctuation the word splitting keeps (shell quotes, brackets, `;`) is
    /// still a token; a prefix inside a longer identifier is not.
    #[test]
    fn tokens_in_quotes_and_brackets_are_redacted_but_not_inside_identifiers() {
        let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";
        for glued in [
            format!("curl -H 'Authorization: token' '{token}'"),
            format!("({token})"),
            format!("[{token}]"),
            format!("x;{token}"),
            format!("<{token}>"),
        ] {
            let r = redact_str(&glued);
            assert!(!r.contains(token), "{glued} -> {r}");
        }
        for plain in [
            "task-manager-12345678",
            "mask-abcdefghijkl",
            "xASIA12345678901",
            "my_ghp_0123456789",
        ] {
            assert_eq!(redact_str(plain), plain);
        }
    }
}
