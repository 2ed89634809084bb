//! Explaining what the jail refused: a server that failed to start (or died before answering),
//! and a tool result that reports a permission error.
//!
//! Landlock denials are not reported to the process that caused them (the audit log needs
//! privileges and is not available here), so an explanation is a reasoned guess, and says so.
//! The evidence is what the server wrote: lines with a permission error (Node's
//! `EACCES: permission denied, open '/x'`, Python's `PermissionError: [Errno 13] Permission
//! denied: '/x'`, a shell's `sh: 1: /x: Permission denied`, Go's and Rust's wordings) and
//! module-not-found errors that name a file which exists but lies outside every grant (the
//! jail hides it). Each path is then judged against the jail's grants for the access it most
//! likely needed:
//!
//! * inside the grants for that access: not the jail (the server's own error) — never blamed;
//! * matching a deny glob (credentials, client configs, mcpjail's state, a policy `deny`):
//!   mcpjail will not grant it, and no flag is offered;
//! * needing exec: `--allow-read`/`--allow-write` never grant exec, and a policy file has no
//!   exec key — only runtime discovery does; the hint says so;
//! * a write to a file that does not exist, in a directory the jail lets it read (a create,
//!   such as a temp file written beside the real one and renamed over it): its directory, the one thing a grant can name for it (Landlock
//!   grants existing inodes); when that directory is one mcpjail does not open for writing
//!   (HOME or above, `~/.config` and the like), the hint says to give the server a directory of
//!   its own instead of naming a file that will never exist under that name again;
//! * otherwise: `--allow-read PATH` / `--allow-write PATH`, or the policy line.
//!
//! A server that exited with no permission error at all is most likely not stopped by the jail:
//! the explanation says so, and suggests `--no-jail` once to confirm — never as a fix.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{GrantAccess, PreparedJail};
use crate::policy::Scope;

/// The access a refused operation needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Needed {
    Read,
    Write,
    Exec,
    /// An `open` of a path that is gone now and was not readable: a read of a file that
    /// existed then, or a create.
    ReadOrWrite,
}

impl Needed {
    pub fn word(self) -> &'static str {
        match self {
            Needed::Read => "read",
            Needed::Write => "write",
            Needed::Exec => "exec",
            Needed::ReadOrWrite => "read or write",
        }
    }
}

/// What would allow a refused access (or why nothing will).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Fix {
    /// A flag for this run, or a line for the server's policy file.
    Grant { flag: String, policy_line: String },
    /// The path matches a deny glob: mcpjail will not grant it.
    NeverGranted { pattern: String },
    /// Exec is granted only by runtime discovery; no flag or policy line grants it.
    NeedsExec,
    /// A file that does not exist can be created only through its directory, and mcpjail does
    /// not grant write access to this one (`why`).
    OwnDirectoryNeeded { dir: PathBuf, why: String },
}

/// One access the jail most likely refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refused {
    pub path: PathBuf,
    pub access: Needed,
    pub fix: Fix,
    /// The line the server wrote that reported it.
    pub evidence: String,
}

impl Refused {
    /// `the jail refused read access to /x`
    pub fn sentence(&self) -> String {
        format!(
            "the jail refused {} access to {}",
            self.access.word(),
            self.path.display()
        )
    }

    /// What to do about it, starting with `hint:`.
    pub fn hint(&self) -> String {
        let p = self.path.display();
        match &self.fix {
            Fix::Grant { flag, policy_line } => format!(
                "hint: if the server needs it, run with {flag} (or add {policy_line} to the \
                 server's policy file)"
            ),
            Fix::NeverGranted { pattern } => format!(
                "{p} matches the deny pattern `{pattern}` (credentials, MCP client configs and \
                 mcpjail's own state are always denied, plus a policy file's `deny`): mcpjail \
                 will not grant it, whatever the flags; give the server what it needs another \
                 way (e.g. a token in a variable passed with --env-keep)"
            ),
            Fix::OwnDirectoryNeeded { dir, why } => format!(
                "hint: {p} does not exist yet, and the jail can let the server create a file \
                 only through write access to its directory, {}, which mcpjail does not grant \
                 ({why}); give the server a directory of its own: point the argument or \
                 variable that names the file at a file in a dedicated directory (e.g. \
                 ~/.local/share/<server>/) and grant that directory with --allow-write",
                dir.display()
            ),
            Fix::NeedsExec => format!(
                "hint: {p} needs exec, which --allow-read and --allow-write never grant and a \
                 policy file cannot grant (it has read, write and deny, no exec): mcpjail lets a \
                 server execute only its runtime, found from its command line (the program, its \
                 interpreter and install tree such as a venv or node_modules) and the system \
                 directories (/usr, /bin, /lib); install {p} inside the server's install tree or \
                 a system directory, or make it the server's program"
            ),
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path.display().to_string(),
            "access": self.access.word(),
            "fix": self.fix,
            "evidence": self.evidence,
            "hint": self.hint(),
        })
    }
}

/// What most likely caused a server to fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// `--no-jail`: the jail cannot be the cause.
    Unconfined,
    /// The jail refused one or more accesses (see [`Explanation::refused`]).
    Jail,
    /// The jail refused to execute the program itself.
    ProgramNotExecutable,
    /// The program could not be started for a reason of its own (not executable, a bad `#!`
    /// line), though the jail lets it run.
    SpawnFailed,
    /// The jail could not be applied in the child.
    JailNotApplied,
    /// The server reported a permission error, but on no path outside the jail's grants.
    Unclear,
    /// No permission error at all: the jail is most likely not the cause.
    NotJail,
}

/// Why a server failed, for the client, `--log` and stderr.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub cause: Cause,
    pub refused: Vec<Refused>,
    /// A line worth quoting: the spawn error, the permission error without a path, or the
    /// server's last stderr line.
    pub detail: Option<String>,
}

/// Longest quoted stderr line.
const QUOTE_MAX: usize = 240;

impl Explanation {
    /// One paragraph (no newlines) that continues a sentence such as "the MCP server exited
    /// (status 1) before answering: ".
    pub fn text(&self) -> String {
        match self.cause {
            Cause::Unconfined => {
                "it ran without the jail (--no-jail), so the jail is not the cause".to_string()
            }
            Cause::Jail => self
                .refused
                .iter()
                .map(|r| {
                    format!(
                        "{} (the server wrote: `{}`); {}",
                        r.sentence().replacen("the jail", "the jail likely", 1),
                        quote(&r.evidence),
                        r.hint()
                    )
                })
                .collect::<Vec<_>>()
                .join("; also, "),
            Cause::ProgramNotExecutable => format!(
                "the jail refused to execute the program ({}); {}",
                self.detail.as_deref().unwrap_or("permission denied"),
                self.refused.first().map(Refused::hint).unwrap_or_default()
            ),
            Cause::SpawnFailed => format!(
                "it could not be started (`{}`), though the jail lets it run: check that the \
                 program exists, is executable (chmod +x) and has a working #! line; to confirm, \
                 run it once with --no-jail (for diagnosis only, not as a fix)",
                quote(self.detail.as_deref().unwrap_or(""))
            ),
            Cause::JailNotApplied => format!(
                "the jail could not be applied, so the server was not started ({}); run with -v \
                 to see each jail layer",
                self.detail.as_deref().unwrap_or("unknown error")
            ),
            Cause::Unclear => format!(
                "it reported a permission error (`{}`) but on no file outside the jail's grants: \
                 the jail may have refused something else (the network: --allow-tcp-connect PORT \
                 or --allow-net; a blocked system call), or the error is the server's own; to \
                 confirm, run it once with --no-jail (for diagnosis only, not as a fix)",
                quote(self.detail.as_deref().unwrap_or(""))
            ),
            Cause::NotJail => {
                let said = match &self.detail {
                    Some(line) => format!("its last stderr line: `{}`", quote(line)),
                    None => "it wrote nothing to stderr".to_string(),
                };
                format!(
                    "it reported no permission error ({said}), so the jail is likely not the \
                     cause; to confirm, run it once with --no-jail (for diagnosis only, not as a \
                     fix)"
                )
            }
        }
    }

    /// Structured details (JSON-RPC `error.data`, the audit log).
    pub fn to_json(&self) -> Value {
        json!({
            "cause": self.cause,
            "refused": self.refused.iter().map(Refused::to_json).collect::<Vec<_>>(),
            "detail": self.detail,
            "text": self.text(),
        })
    }
}

fn quote(line: &str) -> String {
    let line = line.trim();
    if line.len() <= QUOTE_MAX {
        return line.replace('`', "'");
    }
    let mut end = QUOTE_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end]).replace('`', "'")
}

/// A message for a server that could not start (spawn error) or exited right away (`stderr_tail`
/// is the last part of what it wrote). Deny globs are the always-denied set for the server's
/// `HOME`; the proxy, which knows the full Scope, uses [`explain_failure`].
pub fn explain_start_failure(
    jail: &PreparedJail,
    spawn_error: Option<&std::io::Error>,
    stderr_tail: &str,
) -> String {
    let home = jail.home();
    let scope = Scope {
        deny: crate::policy::derive::always_denied(home.as_deref()),
        ..Default::default()
    };
    explain_failure(jail, &scope, spawn_error, stderr_tail).text()
}

/// Why a server failed to start or died: `spawn_error` if it could not be started, else
/// `stderr_tail`, the last part of what it wrote.
pub fn explain_failure(
    jail: &PreparedJail,
    scope: &Scope,
    spawn_error: Option<&std::io::Error>,
    stderr_tail: &str,
) -> Explanation {
    if !jail.is_confined() {
        return Explanation {
            cause: Cause::Unconfined,
            refused: Vec::new(),
            detail: spawn_error.map(|e| e.to_string()),
        };
    }
    if let Some(err) = spawn_error {
        if err.raw_os_error() == Some(libc::ENOTRECOVERABLE) {
            return Explanation {
                cause: Cause::JailNotApplied,
                refused: Vec::new(),
                detail: Some(err.to_string()),
            };
        }
        if err.kind() == std::io::ErrorKind::PermissionDenied {
            let program = jail.program().to_path_buf();
            let refused = judge(
                jail,
                scope,
                Reported {
                    path: program,
                    op: Op::Exec,
                    line: err.to_string(),
                },
            );
            let detail = Some(format!("{}: {err}", jail.program().display()));
            return match refused {
                Some(r) => Explanation {
                    cause: Cause::ProgramNotExecutable,
                    refused: vec![r],
                    detail,
                },
                None => Explanation {
                    cause: Cause::SpawnFailed,
                    refused: Vec::new(),
                    detail,
                },
            };
        }
        return Explanation {
            cause: Cause::SpawnFailed,
            refused: Vec::new(),
            detail: Some(format!("{}: {err}", jail.program().display())),
        };
    }
    let refused = refused_in(jail, scope, stderr_tail);
    if !refused.is_empty() {
        return Explanation {
            cause: Cause::Jail,
            refused,
            detail: None,
        };
    }
    let lines: Vec<&str> = stderr_tail
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(line) = lines.iter().find(|l| is_permission_line(l)) {
        return Explanation {
            cause: Cause::Unclear,
            refused: Vec::new(),
            detail: Some((*line).to_string()),
        };
    }
    Explanation {
        cause: Cause::NotJail,
        refused: Vec::new(),
        detail: lines.last().map(|l| (*l).to_string()),
    }
}

/// The accesses `text` (what a server wrote: stderr, a tool result) reports as refused that lie
/// outside the jail's grants — never a path the jail allows, so a server's own permission error
/// inside its scope is not blamed on the jail. Empty when the server runs unconfined.
pub fn refused_in(jail: &PreparedJail, scope: &Scope, text: &str) -> Vec<Refused> {
    if !jail.is_confined() {
        return Vec::new();
    }
    let mut out: Vec<Refused> = Vec::new();
    for reported in reported_paths(text) {
        if let Some(r) = judge(jail, scope, reported) {
            if !out.iter().any(|o| o.path == r.path && o.access == r.access) {
                out.push(r);
            }
        }
    }
    out
}

/// Can a raw JSON line name an absolute path at all? Only absolute paths are judged (see
/// [`refused_in`]), and one needs a `/` in the line, or a `\` if the server escaped it
/// (`\u002f`). One vector pass, before the automaton's table step per byte: most results (of
/// a tool that does not deal in paths) stop here.
pub fn may_name_a_path(line: &[u8]) -> bool {
    memchr::memchr2(b'/', b'\\', line).is_some()
}

/// Does `text` mention a permission error at all (cheap, before any parsing)? This runs on
/// every `tools/call` result, so all needles are searched in one pass of one automaton (a
/// search per needle rescanned every `e` of an ordinary answer six times).
pub fn mentions_permission_error(text: &[u8]) -> bool {
    static NEEDLES: std::sync::LazyLock<Option<aho_corasick::AhoCorasick>> =
        std::sync::LazyLock::new(|| {
            aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                // Six short needles make a small DFA: one table step per byte.
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                // The prefilter skips to rare bytes, but these needles start with common
                // letters; it only adds restarts.
                .prefilter(false)
                .build([
                    "eacces",
                    "eperm",
                    "permission denied",
                    "operation not permitted",
                    // Outside the write grants the jail's mounts are read-only (the metadata
                    // class).
                    "erofs",
                    "read-only file system",
                ])
                .ok()
        });
    match &*NEEDLES {
        Some(needles) => needles.is_match(text),
        // The automaton is built from constants and cannot fail; if it ever did, every result
        // is looked at rather than none.
        None => true,
    }
}

/// What a line says was attempted on the path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    Write,
    Exec,
    /// `open` and friends: read or write.
    Unknown,
    /// "Cannot find module": only the jail's doing if the file exists.
    Missing,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Reported {
    path: PathBuf,
    op: Op,
    line: String,
}

fn is_permission_line(line: &str) -> bool {
    mentions_permission_error(line.as_bytes())
        || line.contains("[Errno 13]")
        || line.contains("[Errno 1]")
}

fn is_missing_module_line(line: &str) -> bool {
    line.contains("Cannot find module")
        || line.contains("ERR_MODULE_NOT_FOUND")
        || line.contains("Cannot find package")
}

const EXEC_VERBS: &[&str] = &[
    "spawn",
    "spawnsync",
    "exec",
    "execve",
    "execvp",
    "posix_spawn",
];
const WRITE_VERBS: &[&str] = &[
    "mkdir",
    "mkdtemp",
    "rmdir",
    "unlink",
    "rename",
    "copyfile",
    "cp",
    "mv",
    "rm",
    "symlink",
    "link",
    "ln",
    "chmod",
    "chown",
    "utime",
    "futime",
    "write",
    "writefile",
    "appendfile",
    "truncate",
    "touch",
    "create",
    "tee",
    "install",
];
const READ_VERBS: &[&str] = &[
    "read", "readfile", "readdir", "scandir", "opendir", "stat", "lstat", "access", "readlink",
    "realpath", "cat", "ls", "head", "tail", "grep", "cd",
];
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash", "env"];

/// The operation a permission line reports, from its words.
fn op_of(line: &str) -> Op {
    let lower = line.to_ascii_lowercase();
    // Only a change can meet a read-only mount (and "read-only" is not a read).
    if lower.contains("erofs") || lower.contains("read-only file system") {
        return Op::Write;
    }
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let has = |set: &[&str]| words.iter().any(|w| set.contains(w));
    // `sh: 1: /x: Permission denied` is a refused exec; `sh: 1: cannot create /x: …` a
    // refused write (redirection); `sh: 1: cannot open /x: …` a refused read.
    let first = line.split(':').next().unwrap_or("").trim();
    let first = first.rsplit('/').next().unwrap_or(first);
    if SHELLS.contains(&first) {
        if has(&["create"]) {
            return Op::Write;
        }
        if has(&["open", "cd"]) {
            return Op::Read;
        }
        return Op::Exec;
    }
    if has(EXEC_VERBS) {
        Op::Exec
    } else if has(WRITE_VERBS) {
        Op::Write
    } else if has(READ_VERBS) {
        Op::Read
    } else {
        Op::Unknown
    }
}

/// Absolute paths on lines that report a permission error or a missing module.
fn reported_paths(text: &str) -> Vec<Reported> {
    let mut out = Vec::new();
    for line in text.lines() {
        let op = if is_permission_line(line) {
            op_of(line)
        } else if is_missing_module_line(line) {
            Op::Missing
        } else {
            continue;
        };
        for path in paths_in(line) {
            out.push(Reported {
                path,
                op,
                line: line.trim().to_string(),
            });
        }
    }
    out
}

/// Absolute paths in a line: quoted ones whole (they may hold spaces), others as tokens.
fn paths_in(line: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut rest = line;
    let mut unquoted = String::new();
    while let Some(start) = rest.find(['\'', '"', '`']) {
        unquoted.push_str(&rest[..start]);
        unquoted.push(' ');
        let quote = rest[start..].chars().next().unwrap_or('\'');
        let after = &rest[start + 1..];
        match after.find(quote) {
            Some(end) => {
                push_path(&after[..end], &mut out);
                rest = &after[end + 1..];
            }
            None => {
                rest = after;
                break;
            }
        }
    }
    unquoted.push_str(rest);
    for token in unquoted.split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')')) {
        push_path(token.trim_end_matches([':', '.', ';']), &mut out);
    }
    out
}

fn push_path(candidate: &str, out: &mut Vec<PathBuf>) {
    let candidate = candidate.strip_prefix("file://").unwrap_or(candidate);
    if candidate.starts_with('/')
        && candidate.len() > 1
        && !candidate.starts_with("//")
        && !candidate.contains('\0')
    {
        let p = PathBuf::from(candidate);
        if !out.contains(&p) {
            out.push(p);
        }
    }
}

/// Canonical form for comparing with grants: the path itself if it exists, else its deepest
/// existing ancestor canonicalized with the rest appended.
fn canonical(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let mut tail = Vec::new();
    let mut cur = path;
    while let Some(parent) = cur.parent() {
        if let Some(name) = cur.file_name() {
            tail.push(name.to_os_string());
        }
        if let Ok(mut base) = std::fs::canonicalize(parent) {
            for name in tail.iter().rev() {
                base.push(name);
            }
            return base;
        }
        cur = parent;
    }
    path.to_path_buf()
}

fn allows(jail: &PreparedJail, path: &Path, needed: Needed) -> bool {
    jail.grants().iter().any(|g| match g.access {
        GrantAccess::List => needed == Needed::Read && path == g.path,
        GrantAccess::Read => needed == Needed::Read && path.starts_with(&g.path),
        GrantAccess::ReadExec => {
            matches!(needed, Needed::Read | Needed::Exec) && path.starts_with(&g.path)
        }
        GrantAccess::ReadWrite => needed != Needed::Exec && path.starts_with(&g.path),
    })
}

fn is_executable_file(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Is a reported path one the jail refused, and what would allow it?
fn judge(jail: &PreparedJail, scope: &Scope, reported: Reported) -> Option<Refused> {
    // The kernel's own view of a process (`/proc/self`) is granted in the child, not listed.
    if reported.path.starts_with("/proc") {
        return None;
    }
    let path = canonical(&reported.path);
    let exists = std::fs::symlink_metadata(&path).is_ok();
    let needed = match reported.op {
        Op::Read => Needed::Read,
        Op::Write => Needed::Write,
        Op::Exec => Needed::Exec,
        Op::Missing if exists => Needed::Read,
        Op::Missing => return None,
        // A refused open of a file that does not exist was a create (a read would have been
        // ENOENT) — or a read of a file removed since, if the jail does not let it read there;
        // of one the jail does not let it read, a read; of a program it may read but not run,
        // an exec; else a write.
        Op::Unknown if !exists && allows(jail, &path, Needed::Read) => Needed::Write,
        Op::Unknown if !exists => Needed::ReadOrWrite,
        Op::Unknown if !allows(jail, &path, Needed::Read) => Needed::Read,
        Op::Unknown if is_executable_file(&path) && !allows(jail, &path, Needed::Exec) => {
            Needed::Exec
        }
        Op::Unknown => Needed::Write,
    };
    if allows(jail, &path, needed) {
        return None;
    }
    let fix = if let Some(pattern) = scope.denied_by(&path) {
        Fix::NeverGranted { pattern }
    } else if !exists && needed == Needed::Write {
        // A create, certainly (the jail lets it read there). `ReadOrWrite` may be a read of a
        // file removed since: that hint keeps naming the file.
        new_file_fix(jail, &path)
    } else {
        grant_fix(&path, needed)
    };
    Some(Refused {
        path,
        access: needed,
        fix,
        evidence: reported.line,
    })
}

/// The flag and policy line that grant `path` for `needed`. The path comes from the server's
/// own error text, so the flag shows it shell-quoted: a user who pastes the hint must not run a
/// `$(…)` the server put in a file name.
fn grant_fix(path: &Path, needed: Needed) -> Fix {
    let raw = path.display().to_string();
    let quoted = serde_json::to_string(&raw).unwrap_or_else(|_| format!("\"{raw}\""));
    let shown = crate::policy::export::shell_quote(&raw);
    match needed {
        Needed::Read => Fix::Grant {
            flag: format!("--allow-read {shown}"),
            policy_line: format!("read = [{quoted}]"),
        },
        Needed::Write => Fix::Grant {
            flag: format!("--allow-write {shown}"),
            policy_line: format!("write = [{quoted}]"),
        },
        Needed::Exec => Fix::NeedsExec,
        Needed::ReadOrWrite => Fix::Grant {
            flag: format!(
                "--allow-read {shown} (to read it) or --allow-write {shown} (to create or \
                 change it)"
            ),
            policy_line: format!("read = [{quoted}] or write = [{quoted}]"),
        },
    }
}

/// A refused create of `path`, which does not exist: the grant names its directory (a grant of
/// the file itself turns into that too, see `prepare`), unless mcpjail does not open that
/// directory for writing, by the same rule `prepare` applies.
fn new_file_fix(jail: &PreparedJail, path: &Path) -> Fix {
    let Some(dir) = path.parent() else {
        return grant_fix(path, Needed::Write);
    };
    let refused = if dir.is_dir() {
        let env = jail.env().unwrap_or_default();
        super::planted::sensitive_dir(dir, jail.home().as_deref(), env)
    } else {
        Some("it does not exist".into())
    };
    match refused {
        Some(why) => Fix::OwnDirectoryNeeded {
            dir: dir.to_path_buf(),
            why,
        },
        None => grant_fix(dir, Needed::Write),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(text: &str) -> Vec<(String, Op)> {
        reported_paths(text)
            .into_iter()
            .map(|r| (r.path.display().to_string(), r.op))
            .collect()
    }

    #[test]
    fn finds_paths_next_to_permission_errors() {
        let text =
            "Error: EACCES: permission denied, open '/home/u/.config/x.json'\nok /not/this\n\
                    PermissionError: [Errno 13] Permission denied: '/opt/data/f'";
        assert_eq!(
            ops(text),
            vec![
                ("/home/u/.config/x.json".to_string(), Op::Unknown),
                ("/opt/data/f".to_string(), Op::Unknown)
            ]
        );
    }

    #[test]
    fn recognises_runtime_wordings_and_their_operation() {
        let cases: &[(&str, &str, Op)] = &[
            (
                "Error: EPERM: operation not permitted, mkdir '/srv/cache dir'",
                "/srv/cache dir",
                Op::Write,
            ),
            (
                "Error: EACCES: permission denied, scandir '/data'",
                "/data",
                Op::Read,
            ),
            (
                "PermissionError: [Errno 1] Operation not permitted: '/x/y'",
                "/x/y",
                Op::Unknown,
            ),
            ("sh: 1: /opt/tool: Permission denied", "/opt/tool", Op::Exec),
            (
                "/bin/sh: 1: cannot create /out/log: Permission denied",
                "/out/log",
                Op::Write,
            ),
            ("cat: /etc/shadow: Permission denied", "/etc/shadow", Op::Read),
            ("Error: spawn /usr/local/bin/rg EACCES", "/usr/local/bin/rg", Op::Exec),
            (
                "open /var/lib/x: permission denied",
                "/var/lib/x",
                Op::Unknown,
            ),
            (
                "Error [ERR_MODULE_NOT_FOUND]: Cannot find module '/opt/app/lib.js' imported from /opt/app/main.js",
                "/opt/app/lib.js",
                Op::Missing,
            ),
            (
                "Error: Cannot find module 'file:///opt/app/x.js'",
                "/opt/app/x.js",
                Op::Missing,
            ),
        ];
        for (line, path, op) in cases {
            let found = ops(line);
            assert!(
                found.contains(&(path.to_string(), *op)),
                "{line}: {found:?}"
            );
        }
        assert!(ops("Error: ENOENT: no such file or directory, open '/x'").is_empty());
    }

    #[test]
    fn a_permission_error_is_noticed_in_any_case() {
        assert!(may_name_a_path(br#"{"text":"EACCES: open '/etc/x'"}"#));
        assert!(may_name_a_path(
            br#"{"text":"EACCES: open '\u002fetc\u002fx'"}"#
        ));
        assert!(!may_name_a_path(br#"{"text":"EACCES: permission denied"}"#));
        assert!(mentions_permission_error(b"x EACCES y"));
        assert!(mentions_permission_error(b"Operation Not Permitted"));
        assert!(!mentions_permission_error(b"No such file or directory"));
        assert!(mentions_permission_error(b"EROFS"));
        assert!(mentions_permission_error(b"...read-only FILE system"));
        assert!(!mentions_permission_error(b"eacce"));
        assert!(!mentions_permission_error(b""));
    }

    #[test]
    fn a_server_chosen_path_in_a_hint_is_shell_quoted() {
        // The path comes from the server's error text and ends up in a hint the user pastes
        // (and in the audit log): a `$(…)` in it must stay a file name.
        let path = Path::new("/srv/$(id>/tmp/pwned)/it's");
        for needed in [Needed::Read, Needed::Write, Needed::ReadOrWrite] {
            let Fix::Grant { flag, .. } = grant_fix(path, needed) else {
                panic!("a grant for {needed:?}");
            };
            assert!(flag.contains("'/srv/$(id>/tmp/pwned)/it'\\''s'"), "{flag}");
        }
        // Control: a plain path stays bare.
        let Fix::Grant { flag, .. } = grant_fix(Path::new("/srv/data"), Needed::Read) else {
            panic!("a grant");
        };
        assert_eq!(flag, "--allow-read /srv/data");
    }

    #[test]
    fn long_quotes_are_cut_on_a_char_boundary() {
        let line = "é".repeat(400);
        let q = quote(&line);
        assert!(q.ends_with('…'));
        assert!(q.len() <= QUOTE_MAX + '…'.len_utf8());
    }
}
