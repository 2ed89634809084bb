//! The server child: spawned through the jail, its stdin fed by a writer task, its stdout read
//! as frames by the router, its stderr inherited (the server's own diagnostics reach the user).

use std::process::{ExitStatus, Stdio};

use bytes::Bytes;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdout, Command};
use tokio::sync::mpsc;

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
}

impl ServerChild {
    /// Start `cmd` (from `PreparedJail::command`, so the jail applies) with piped stdin/stdout.
    pub fn spawn(mut cmd: Command, max_line: usize) -> std::io::Result<ServerChild> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
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
        })
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
