//! Does a config entry start? Launch it once as the client would and wait for `initialize`.
//!
//! `install` (after writing, and in `--dry-run` for what it would write) and `status --check`
//! use this so a user learns which wrapped servers start before their client tries them. The
//! entry's command runs with the user's environment plus the entry's own `env`, in the
//! directory the client would use, with stdin and stdout piped; it gets one `initialize`
//! request. An answer with a `result` means it starts; an error answer (the proxy's explains
//! which access the jail refused and the flag that fixes it), an exit, or no answer within the
//! time limit means it does not, and the reason is kept for the summary.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One entry to check.
#[derive(Debug, Clone)]
pub struct StartTarget {
    /// `client file › server`, for the summary.
    pub label: String,
    pub argv: Vec<String>,
    /// The entry's own `env` (added to the user's environment, as clients do).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    /// It answered `initialize`.
    Started { millis: u128 },
    /// It answered with an error, exited, or could not be run: why, in the server's or the
    /// proxy's own words.
    Failed { reason: String },
    /// No answer within the limit.
    TimedOut { limit: Duration },
}

impl StartOutcome {
    pub fn started(&self) -> bool {
        matches!(self, StartOutcome::Started { .. })
    }
}

const REQUEST_ID: &str = "mcpjail-start-check";

/// Check every target, a few at a time (each may start a Node or Python runtime).
pub fn check_all(targets: &[StartTarget], limit: Duration) -> Vec<StartOutcome> {
    const AT_ONCE: usize = 4;
    let mut out = Vec::with_capacity(targets.len());
    for chunk in targets.chunks(AT_ONCE) {
        let handles: Vec<_> = chunk
            .iter()
            .cloned()
            .map(|t| std::thread::spawn(move || check(&t, limit)))
            .collect();
        for h in handles {
            out.push(h.join().unwrap_or_else(|_| StartOutcome::Failed {
                reason: "the check itself panicked".into(),
            }));
        }
    }
    out
}

/// Launch one entry and wait for its answer to `initialize`.
pub fn check(target: &StartTarget, limit: Duration) -> StartOutcome {
    let Some((program, args)) = target.argv.split_first() else {
        return StartOutcome::Failed {
            reason: "the entry has no command".into(),
        };
    };
    let started = Instant::now();
    let mut child = match Command::new(program)
        .args(args)
        .envs(target.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&target.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return StartOutcome::Failed {
                reason: format!("cannot run `{program}`: {e}"),
            }
        }
    };
    let request = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":\"{REQUEST_ID}\",\"method\":\"initialize\",\"params\":{{\
         \"protocolVersion\":\"2025-06-18\",\"capabilities\":{{}},\"clientInfo\":{{\"name\":\
         \"mcpjail-start-check\",\"version\":\"{}\"}}}}}}\n",
        env!("CARGO_PKG_VERSION")
    );
    let mut stdin = child.stdin.take();
    if let Some(s) = stdin.as_mut() {
        let _ = s.write_all(request.as_bytes());
        let _ = s.flush();
    }
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return StartOutcome::Failed {
            reason: "the entry's output could not be piped".into(),
        };
    };
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let answer = first_answer(BufReader::new(stdout));
        let _ = tx.send(answer);
    });
    let outcome = match rx.recv_timeout(limit) {
        Ok(Some(answer)) => judge(&answer, started.elapsed().as_millis()),
        Ok(None) => StartOutcome::Failed {
            reason: "it exited before answering initialize".into(),
        },
        Err(_) => StartOutcome::TimedOut { limit },
    };
    // Closing stdin is how clients stop a stdio server (the proxy then stops its server); one
    // that does not go within a few seconds, or never answered, is killed.
    drop(stdin);
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = child.wait();
        let _ = done_tx.send(());
    });
    let grace = if outcome.started() {
        Duration::from_secs(5)
    } else {
        Duration::from_millis(500)
    };
    if done_rx.recv_timeout(grace).is_err() {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = done_rx.recv_timeout(Duration::from_secs(5));
    }
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    match outcome {
        StartOutcome::Failed { reason } => StartOutcome::Failed {
            reason: with_stderr_tail(reason, &stderr),
        },
        other => other,
    }
}

/// The first line on stdout that answers our request (servers may log or notify first).
fn first_answer(mut out: impl BufRead) -> Option<serde_json::Value> {
    let mut line = String::new();
    loop {
        line.clear();
        match out.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line.trim()) else {
            continue;
        };
        if v.get("id").and_then(|i| i.as_str()) == Some(REQUEST_ID) {
            return Some(v);
        }
    }
}

fn judge(answer: &serde_json::Value, millis: u128) -> StartOutcome {
    if answer.get("result").is_some() {
        return StartOutcome::Started { millis };
    }
    let message = answer
        .pointer("/error/message")
        .and_then(|m| m.as_str())
        .unwrap_or("an answer without a result");
    StartOutcome::Failed {
        reason: message.to_string(),
    }
}

/// The reason, plus the last lines the entry wrote on stderr (where the proxy's hints and the
/// server's own error are), without repeating what the reason already says.
fn with_stderr_tail(reason: String, stderr: &str) -> String {
    let tail: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !reason.contains(l.trim()))
        .collect();
    let tail = &tail[tail.len().saturating_sub(8)..];
    if tail.is_empty() {
        reason
    } else {
        format!("{reason}\n{}", tail.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(script: &str) -> StartTarget {
        StartTarget {
            label: "t".into(),
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: vec![],
            cwd: std::env::temp_dir(),
        }
    }

    #[test]
    fn an_answer_with_a_result_starts() {
        let t = target(
            r#"read line; echo '{"jsonrpc":"2.0","method":"log"}'; echo '{"jsonrpc":"2.0","id":"mcpjail-start-check","result":{}}'; cat >/dev/null"#,
        );
        assert!(check(&t, Duration::from_secs(10)).started());
    }

    #[test]
    fn an_error_answer_or_an_exit_does_not_and_says_why() {
        let t = target(
            r#"read line; echo '{"jsonrpc":"2.0","id":"mcpjail-start-check","error":{"code":-32603,"message":"the jail refused /x; hint: --allow-read /x"}}'"#,
        );
        match check(&t, Duration::from_secs(10)) {
            StartOutcome::Failed { reason } => assert!(reason.contains("--allow-read /x")),
            other => panic!("{other:?}"),
        }
        let t = target("echo 'boom: missing module' >&2; exit 3");
        match check(&t, Duration::from_secs(10)) {
            StartOutcome::Failed { reason } => {
                assert!(reason.contains("exited before answering"), "{reason}");
                assert!(reason.contains("boom: missing module"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn silence_times_out() {
        let t = target("exec sleep 30");
        assert_eq!(
            check(&t, Duration::from_millis(300)),
            StartOutcome::TimedOut {
                limit: Duration::from_millis(300)
            }
        );
    }
}
