//! The server child: spawned through the jail, its stdin fed by a writer task, its stdout read
//! as frames by the router, its stderr copied to ours line by line by a task that also keeps
//! the last [`STDERR_TAIL_BYTES`] of it, so a server that dies can be explained from what it
//! wrote (see [`crate::sandbox::explain_failure`]).

use std::collections::VecDeque;
use std::io::Write;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdout, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::framing::FramedReader;

/// A running server.
#[derive(Debug)]
pub struct ServerChild {
    pub process: tokio::process::Child,
    pub pid: u32,
    /// Messages to the server. Dropping it closes the server's stdin once queued writes are done.
    pub stdin: Option<mpsc::UnboundedSender<Bytes>>,
    pub stdout: FramedReader<ChildStdout>,
    pub stdout_eof: bool,
    pub status: Option<ExitStatus>,
    /// The jail this server runs in. Kept as long as the server: it owns the private TMPDIR,
    /// which is removed when it drops (after the server is reaped, as fields drop in order).
    pub jail: Option<crate::sandbox::PreparedJail>,
    /// The last bytes the server wrote to stderr.
    pub stderr_tail: StderrTail,
    /// The task copying the server's stderr to ours (ends at the pipe's EOF).
    stderr_copy: Option<JoinHandle<()>>,
}

impl ServerChild {
    /// Start `cmd` (from `PreparedJail::command`, so the jail applies) with piped stdin/stdout.
    pub fn spawn(mut cmd: Command, max_line: usize) -> std::io::Result<ServerChild> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut process = cmd.spawn()?;
        let pid = process.id().unwrap_or(0);
        let stdout = process
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("the server's stdout was not piped"))?;
        let mut stdin = process
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the server's stdin was not piped"))?;
        let stderr = process
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("the server's stderr was not piped"))?;
        let stderr_tail = StderrTail::default();
        let stderr_copy = tokio::spawn(copy_stderr(stderr, stderr_tail.clone(), |line| {
            // One line in one write, so it does not interleave with the proxy's own log lines.
            let _ = std::io::stderr().write_all(line);
        }));
        let (tx, mut rx) = mpsc::unbounded_channel::<Bytes>();
        tokio::spawn(async move {
            while let Some(msg) = rx.recv().await {
                if stdin.write_all(&msg).await.is_err() {
                    break;
                }
                while let Ok(more) = rx.try_recv() {
                    if stdin.write_all(&more).await.is_err() {
                        return;
                    }
                }
                if stdin.flush().await.is_err() {
                    break;
                }
            }
            // Dropping `stdin` here is what closes the server's input.
        });
        Ok(ServerChild {
            process,
            pid,
            stdin: Some(tx),
            // Server lines past 256 KiB may be streamed through (see the router).
            stdout: FramedReader::new(stdout, max_line).with_stream_threshold(256 * 1024),
            stdout_eof: false,
            status: None,
            jail: None,
            stderr_tail,
            stderr_copy: Some(stderr_copy),
        })
    }

    /// Once the server has exited: wait (at most `bound`) for the stderr copy to reach the end
    /// of the pipe, so the tail holds everything the server wrote, then return the tail. A
    /// descendant that keeps the pipe open past `bound` is not waited for: the copy stops here.
    pub async fn finish_stderr(&mut self, bound: Duration) -> String {
        if let Some(mut copy) = self.stderr_copy.take() {
            if tokio::time::timeout(bound, &mut copy).await.is_err() {
                copy.abort();
            }
        }
        self.stderr_tail.text()
    }

    /// Queue one message for the server (dropped silently if its stdin is already closed: the
    /// router learns about a dead server from its stdout and exit status).
    pub fn send(&self, msg: Bytes) {
        if let Some(tx) = &self.stdin {
            let _ = tx.send(msg);
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// SIGTERM, politely (the next step is SIGKILL via `start_kill`).
    pub fn terminate(&self) {
        #[cfg(unix)]
        if self.status.is_none() && self.pid > 0 {
            if let Ok(pid) = i32::try_from(self.pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGTERM,
                );
            }
        }
    }
}

/// How much of the server's stderr is kept for explaining its failure.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// A partial line (no newline yet) is passed on after this long without more input, so a
/// prompt-like write is not held back.
const PARTIAL_LINE_WAIT: Duration = Duration::from_millis(50);

/// Longest partial line held back waiting for its newline.
const MAX_PARTIAL_LINE: usize = 64 * 1024;

/// The last [`STDERR_TAIL_BYTES`] a server wrote to stderr (a ring of bytes).
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<u8>>>);

impl StderrTail {
    fn push(&self, bytes: &[u8]) {
        // A poisoned lock only means a copy task panicked mid-push; the bytes are still bytes.
        let mut ring = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let keep = bytes.len().min(STDERR_TAIL_BYTES);
        ring.extend(&bytes[bytes.len() - keep..]);
        let over = ring.len().saturating_sub(STDERR_TAIL_BYTES);
        ring.drain(..over);
    }

    /// The tail as text; a first line cut by the ring's start is dropped.
    pub fn text(&self) -> String {
        let ring = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = ring.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if bytes.len() >= STDERR_TAIL_BYTES {
            if let Some(i) = text.find('\n') {
                return text[i + 1..].to_string();
            }
        }
        text
    }
}

/// Copy `from` to `emit` line by line (each complete line in one call, in order), keeping the
/// tail. A partial line is emitted when no more input arrives for [`PARTIAL_LINE_WAIT`], and
/// whatever is left at EOF is emitted too: nothing is lost, nothing waits for a newline that
/// may never come.
pub async fn copy_stderr<R, F>(mut from: R, tail: StderrTail, mut emit: F)
where
    R: AsyncRead + Unpin,
    F: FnMut(&[u8]),
{
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = if pending.is_empty() {
            from.read(&mut buf).await
        } else {
            match tokio::time::timeout(PARTIAL_LINE_WAIT, from.read(&mut buf)).await {
                Ok(r) => r,
                Err(_) => {
                    emit(&pending);
                    tail.push(&pending);
                    pending.clear();
                    continue;
                }
            }
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        if pending.len() > MAX_PARTIAL_LINE {
            // A very long line without a newline: pass it on in pieces rather than hold it.
            emit(&pending);
            tail.push(&pending);
            pending.clear();
            continue;
        }
        if let Some(last_nl) = pending.iter().rposition(|&b| b == b'\n') {
            let rest = pending.split_off(last_nl + 1);
            for line in pending.split_inclusive(|&b| b == b'\n') {
                emit(line);
            }
            tail.push(&pending);
            pending = rest;
        }
    }
    if !pending.is_empty() {
        emit(&pending);
        tail.push(&pending);
    }
}

/// The proxy's exit code for a server's exit status: its code, or 128+signal.
pub fn exit_code(status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    1
}
