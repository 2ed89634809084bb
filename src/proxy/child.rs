//! The server child: spawned through the jail, its stdin fed through an [`Outbox`], its stdout read
//! as frames by the router, its stderr copied to ours line by line (see [`StderrCopy`]) while
//! the last [`STDERR_TAIL_BYTES`] of it are kept, so a server that dies can be explained from
//! what it wrote (see [`crate::sandbox::explain_failure`]).
//!
//! The copy is not byte for byte: escape sequences and other terminal controls in the
//! server's stderr are shown, not obeyed (see [`emit`] and [`crate::shown`]). The jail keeps
//! the user's terminal away from the server's own stdio; without this the proxy would hand
//! the server's bytes to that terminal itself (clipboard writes by OSC 52, a new window
//! title, a cleared screen, a `\r` that rewrites one of the proxy's `ALLOW` lines).

use std::collections::VecDeque;
use std::io::Write;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncRead;
use tokio::net::unix::pipe;
use tokio::process::Command;
#[cfg(test)]
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::framing::FramedReader;
use super::outbox::Outbox;

/// The server's stdout, as the router reads it.
pub type ServerStdout = Box<dyn AsyncRead + Unpin + Send>;

/// The server as a process: an OS child, or (in tests) a task in this process whose exit
/// status the test decides.
#[derive(Debug)]
pub enum Process {
    Os(tokio::process::Child),
    /// Started by the jail itself, without std's `Command` (see `PreparedJail::spawn_piped`).
    #[cfg(target_os = "linux")]
    Pidfd(PidfdChild),
    #[cfg(test)]
    Fake(tokio::sync::oneshot::Receiver<ExitStatus>),
}

impl Process {
    /// Wait for the server to exit (cancel-safe).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        match self {
            Process::Os(child) => child.wait().await,
            #[cfg(target_os = "linux")]
            Process::Pidfd(child) => child.wait().await,
            #[cfg(test)]
            Process::Fake(rx) => match rx.await {
                Ok(status) => Ok(status),
                Err(_) => std::future::pending().await,
            },
        }
    }

    /// Whether the process has been reaped: its pid may then name another process.
    fn reaped(&self) -> bool {
        match self {
            // tokio forgets the pid once the child has been waited for.
            Process::Os(child) => child.id().is_none(),
            #[cfg(target_os = "linux")]
            Process::Pidfd(child) => child.status.is_some(),
            #[cfg(test)]
            Process::Fake(_) => false,
        }
    }

    /// SIGKILL, without waiting.
    pub fn start_kill(&mut self) -> std::io::Result<()> {
        match self {
            Process::Os(child) => child.start_kill(),
            #[cfg(target_os = "linux")]
            Process::Pidfd(child) => child.start_kill(),
            #[cfg(test)]
            Process::Fake(_) => Ok(()),
        }
    }
}

/// A child known by its pidfd: waited for when the pidfd says it exited, killed through it
/// (so never a recycled pid), and killed and reaped when dropped, like tokio's `kill_on_drop`.
#[cfg(target_os = "linux")]
#[derive(Debug)]
pub struct PidfdChild {
    pid: libc::pid_t,
    pidfd: tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>,
    status: Option<ExitStatus>,
}

#[cfg(target_os = "linux")]
impl PidfdChild {
    fn new(pid: u32, pidfd: std::os::fd::OwnedFd) -> std::io::Result<PidfdChild> {
        let pid = libc::pid_t::try_from(pid).map_err(std::io::Error::other)?;
        // SAFETY: `pidfd` is an open descriptor we own; the AsyncFd takes ownership of it, so it
        // stays open and refers to the same process until the AsyncFd is dropped.
        let pidfd = unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
        }?;
        Ok(PidfdChild {
            pid,
            pidfd,
            status: None,
        })
    }

    /// Wait for the child to exit and reap it (cancel-safe).
    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        loop {
            if let Some(status) = self.try_reap()? {
                return Ok(status);
            }
            self.pidfd.readable().await?.clear_ready();
        }
    }

    /// Reap the child if it has exited.
    fn try_reap(&mut self) -> std::io::Result<Option<ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        if self.status.is_none() {
            let mut raw = 0;
            // SAFETY: our own child's pid (not reaped yet, so not recycled); a valid
            // out-pointer.
            match unsafe { libc::waitpid(self.pid, &mut raw, libc::WNOHANG) } {
                0 => {}
                pid if pid == self.pid => self.status = Some(ExitStatus::from_raw(raw)),
                _ => return Err(std::io::Error::last_os_error()),
            }
        }
        Ok(self.status)
    }

    /// SIGKILL, without waiting.
    fn start_kill(&mut self) -> std::io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        use std::os::fd::AsRawFd;
        // SAFETY: pidfd_send_signal on our pidfd, no siginfo.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                self.pidfd.get_ref().as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
impl Drop for PidfdChild {
    /// Killed if it still runs, and reaped: at once if it is gone already, otherwise by a task
    /// (a zombie is not left for the proxy's lifetime).
    fn drop(&mut self) {
        if matches!(self.try_reap(), Ok(Some(_))) {
            return;
        }
        let _ = self.start_kill();
        let pid = self.pid;
        let Ok(fd) = self.pidfd.get_ref().try_clone() else {
            return;
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Ok(mut child) = PidfdChild::new(pid as u32, fd) {
                    let _ = child.wait().await;
                }
            });
        }
    }
}

/// A running server.
pub struct ServerChild {
    pub process: Process,
    pub pid: u32,
    /// Messages to the server. Dropping it closes the server's stdin once queued writes are done.
    pub stdin: Option<Outbox>,
    pub stdout: FramedReader<ServerStdout>,
    pub stdout_eof: bool,
    pub status: Option<ExitStatus>,
    /// The jail this server runs in. Kept as long as the server: it owns the private TMPDIR,
    /// which is removed when it drops (after the server is reaped, as fields drop in order).
    pub jail: Option<crate::sandbox::PreparedJail>,
    /// How everything the server starts is reached (a jailed server leads a process group or
    /// a session): signalled with it, and ended with it.
    group: Option<crate::sandbox::ServerGroup>,
    /// The server's stderr, copied to ours (none for a fake server).
    stderr: Option<Arc<StderrCopy>>,
    /// The task that copies it as it arrives (ends at the pipe's EOF).
    stderr_task: Option<JoinHandle<()>>,
    /// A fake server's signals, for the test to see.
    #[cfg(test)]
    signals: Option<mpsc::UnboundedSender<i32>>,
}

impl std::fmt::Debug for ServerChild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerChild")
            .field("pid", &self.pid)
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// The other ends of a [`ServerChild::fake`].
#[cfg(test)]
pub struct FakeServer {
    pub stdin: mpsc::UnboundedReceiver<Bytes>,
    /// Dropping it is the server closing its stdout.
    pub stdout: Option<tokio::io::DuplexStream>,
    pub exit: Option<tokio::sync::oneshot::Sender<ExitStatus>>,
    pub signals: mpsc::UnboundedReceiver<i32>,
}

/// Server lines past 256 KiB may be streamed through (see the router).
fn server_reader(stdout: ServerStdout, max_line: usize) -> FramedReader<ServerStdout> {
    FramedReader::new(stdout, max_line).with_stream_threshold(256 * 1024)
}

/// The fake server's stdin: each write arrives as one message on the test's channel.
#[cfg(test)]
struct ChannelWriter(mpsc::UnboundedSender<Bytes>);

#[cfg(test)]
impl tokio::io::AsyncWrite for ChannelWriter {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let sent = self.0.send(Bytes::copy_from_slice(buf));
        std::task::Poll::Ready(match sent {
            Ok(()) => Ok(buf.len()),
            Err(_) => Err(std::io::ErrorKind::BrokenPipe.into()),
        })
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl ServerChild {
    /// Start the server in `jail`, with piped stdio: by the jail itself where it can (no fork of
    /// the proxy, see `PreparedJail::spawn_piped`), through its `Command` otherwise.
    pub fn spawn_in(
        jail: &crate::sandbox::PreparedJail,
        max_line: usize,
    ) -> std::io::Result<ServerChild> {
        #[cfg(target_os = "linux")]
        if let Some(spawned) = jail.spawn_piped() {
            return ServerChild::from_spawned(spawned?, max_line);
        }
        ServerChild::spawn(jail.command(), max_line)
    }

    /// A server the jail started on its own (`PreparedJail::spawn_piped`), taken into this
    /// runtime.
    #[cfg(target_os = "linux")]
    pub fn from_spawned(
        spawned: crate::sandbox::SpawnedServer,
        max_line: usize,
    ) -> std::io::Result<ServerChild> {
        let process = Process::Pidfd(PidfdChild::new(spawned.pid, spawned.pidfd)?);
        let stdout = pipe::Receiver::from_owned_fd(spawned.stdout)?;
        let stdin = pipe::Sender::from_owned_fd(spawned.stdin)?;
        ServerChild::started(
            process,
            spawned.pid,
            stdin,
            Box::new(stdout),
            spawned.stderr,
            max_line,
        )
    }

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
        let stdin = process
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("the server's stdin was not piped"))?;
        let stderr = process
            .stderr
            .take()
            .ok_or_else(|| std::io::Error::other("the server's stderr was not piped"))?;
        ServerChild::started(
            Process::Os(process),
            pid,
            stdin,
            Box::new(stdout),
            stderr.into_owned_fd()?,
            max_line,
        )
    }

    /// A server just started: its stdin fed through an outbox, its stderr copied.
    fn started<W>(
        process: Process,
        pid: u32,
        stdin: W,
        stdout: ServerStdout,
        stderr: std::os::fd::OwnedFd,
        max_line: usize,
    ) -> std::io::Result<ServerChild>
    where
        W: tokio::io::AsyncWrite + std::os::fd::AsFd + Unpin + Send + 'static,
    {
        // Asked now, while the server cannot have exited unreaped: its pid is still its own.
        let group = crate::sandbox::server_group(pid);
        let stderr = Arc::new(StderrCopy::new(pipe::Receiver::from_owned_fd(stderr)?));
        let stderr_task = tokio::spawn(copy_stderr(stderr.clone()));
        // tokio's pipe is non-blocking; the duplicate shares that. It closes with the outbox,
        // the writer task's with the task: the server sees EOF once both are gone.
        let direct = stdin.as_fd().try_clone_to_owned().ok();
        // Its writer task ends (closing the server's input) once the outbox is dropped.
        let (stdin, _) = Outbox::start(stdin, direct);
        Ok(ServerChild {
            process,
            pid,
            stdin: Some(stdin),
            stdout: server_reader(stdout, max_line),
            stdout_eof: false,
            status: None,
            jail: None,
            group,
            stderr: Some(stderr),
            stderr_task: Some(stderr_task),
            #[cfg(test)]
            signals: None,
        })
    }

    /// A server that is a task of the test: what the proxy sends it arrives on
    /// [`FakeServer::stdin`], what the test writes to [`FakeServer::stdout`] is its output, the
    /// status sent on [`FakeServer::exit`] its exit, and signals show on
    /// [`FakeServer::signals`].
    #[cfg(test)]
    pub fn fake(max_line: usize) -> (ServerChild, FakeServer) {
        let (tx, stdin) = mpsc::unbounded_channel::<Bytes>();
        let (tx, _) = Outbox::start(ChannelWriter(tx), None);
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (exit, exit_rx) = tokio::sync::oneshot::channel();
        let (sig_tx, signals) = mpsc::unbounded_channel();
        let child = ServerChild {
            process: Process::Fake(exit_rx),
            pid: 0,
            stdin: Some(tx),
            stdout: server_reader(Box::new(ours), max_line),
            stdout_eof: false,
            status: None,
            jail: None,
            group: None,
            stderr: None,
            stderr_task: None,
            signals: Some(sig_tx),
        };
        let fake = FakeServer {
            stdin,
            stdout: Some(theirs),
            exit: Some(exit),
            signals,
        };
        (child, fake)
    }

    /// Copy what the server has written to stderr so far, now. The router calls this before
    /// it forwards each server message, so a line the server wrote before its answer reaches
    /// our stderr before the answer reaches the client — the order an inherited stderr had.
    pub fn sync_stderr(&self) {
        if let Some(stderr) = &self.stderr {
            stderr.drain_now();
        }
    }

    /// Once the server has exited: wait (at most `bound`) for the stderr copy to reach the end
    /// of the pipe, so the tail holds everything the server wrote, then return the tail. A
    /// descendant that keeps the pipe open past `bound` is not waited for: the copy stops here.
    pub async fn finish_stderr(&mut self, bound: Duration) -> String {
        let Some(stderr) = &self.stderr else {
            return String::new();
        };
        if let Some(mut task) = self.stderr_task.take() {
            if super::timer::timeout(bound, &mut task).await.is_err() {
                task.abort();
                stderr.drain_now();
            }
        }
        stderr.flush_partial();
        stderr.tail.text()
    }

    /// Queue one message for the server (dropped silently if its stdin is already closed: the
    /// router learns about a dead server from its stdout and exit status).
    pub fn send(&self, msg: Bytes) {
        if let Some(stdin) = &self.stdin {
            stdin.send(msg);
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// SIGTERM, politely, to the server and everything in its group (the next step is SIGKILL
    /// via `start_kill`; what is left of it gets SIGKILL when this drops).
    pub fn terminate(&self) {
        self.signal(libc::SIGTERM);
    }

    /// SIGKILL to the server and everything in its group.
    pub fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.process.start_kill();
    }

    /// Send `sig` to the server and everything in its group.
    pub fn signal(&self, sig: i32) {
        #[cfg(test)]
        if let Some(tx) = &self.signals {
            let _ = tx.send(sig);
        }
        self.signal_group(sig);
        #[cfg(unix)]
        if self.status.is_none() && self.pid > 0 {
            if let (Ok(pid), Ok(sig)) = (
                i32::try_from(self.pid),
                nix::sys::signal::Signal::try_from(sig),
            ) {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
            }
        }
    }

    /// Send `sig` to everything in the server's group; how many processes of a session got
    /// it (a process group does not say: 0).
    fn signal_group(&self, sig: i32) -> usize {
        match self.group {
            // The group's id is the spawned process's pid, held only until it is reaped; by
            // then the PID namespace has ended everything in the group.
            Some(crate::sandbox::ServerGroup::ProcessGroup(_)) if self.process.reaped() => 0,
            Some(group) => group.signal(sig),
            None => 0,
        }
    }
}

impl Drop for ServerChild {
    /// Descendants do not outlive the server: whatever is left of its session is killed. The
    /// server itself is killed by `kill_on_drop` if it still runs.
    fn drop(&mut self) {
        // Once the process the proxy spawned has exited under a PID namespace, the kernel has
        // ended (or is ending) everything inside it, and nothing can leave it: no scan of
        // every process on the machine for stragglers (it was a fifth of a short session's
        // CPU on a busy machine).
        if self.status.is_some() && self.jail.as_ref().is_some_and(pid_namespace_enforced) {
            return;
        }
        let n = self.signal_group(libc::SIGKILL);
        if n > 0 {
            tracing::info!("killed {n} process(es) left in the server's session");
        }
    }
}

fn pid_namespace_enforced(jail: &crate::sandbox::PreparedJail) -> bool {
    jail.report()
        .layers
        .iter()
        .any(|l| l.layer == "process_tree" && l.enforcement == crate::sandbox::Enforcement::Fully)
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

    /// The tail as text, terminal controls shown as [`emit`] shows them (it is quoted in
    /// messages that reach a terminal); a first line cut by the ring's start is dropped.
    pub fn text(&self) -> String {
        let ring = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = ring.iter().copied().collect();
        let shown = crate::shown::neutralise(&bytes, crate::shown::Keep::Lines);
        let text = String::from_utf8_lossy(&shown).into_owned();
        if bytes.len() >= STDERR_TAIL_BYTES {
            if let Some(i) = text.find('\n') {
                return text[i + 1..].to_string();
            }
        }
        text
    }
}

/// The server's stderr pipe, copied to our stderr line by line (each complete line in one
/// write, so it does not interleave with the proxy's own log lines) and kept in a tail.
///
/// Two parties copy: the task in [`copy_stderr`] as bytes arrive, and the router through
/// [`ServerChild::sync_stderr`] before each server message. Both take the same lock, so bytes
/// go out once and in order. A partial line is passed on when no more input arrives for
/// [`PARTIAL_LINE_WAIT`] (a prompt-like write is not held back), when it grows past
/// [`MAX_PARTIAL_LINE`], and at the end: nothing is lost, nothing waits for a newline that may
/// never come.
#[derive(Debug)]
pub struct StderrCopy {
    pipe: pipe::Receiver,
    state: Mutex<CopyState>,
    pub tail: StderrTail,
}

/// What one `read` of the stderr pipe found.
enum Read {
    /// The end of the pipe: every writer closed it.
    End,
    /// As many bytes as there was room for: the pipe may hold more.
    Filled,
    /// Fewer: the pipe is empty now.
    Emptied,
}

#[derive(Debug, Default)]
struct CopyState {
    /// Bytes of a line whose newline has not arrived yet.
    partial: Vec<u8>,
    /// The read buffer, kept between reads: the router drains before every server message,
    /// and a fresh zeroed buffer each time was the largest item in a quiet call's profile.
    chunk: Vec<u8>,
    eof: bool,
}

impl StderrCopy {
    fn new(pipe: pipe::Receiver) -> StderrCopy {
        StderrCopy {
            pipe,
            state: Mutex::new(CopyState::default()),
            tail: StderrTail::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CopyState> {
        // A poisoned lock only means a copy panicked mid-line; the bytes are still bytes.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Copy everything the pipe holds now, without waiting. `false` once the pipe is at EOF.
    fn drain_now(&self) -> bool {
        let mut st = self.lock();
        if st.eof {
            return false;
        }
        let mut chunk = std::mem::take(&mut st.chunk);
        let more = loop {
            chunk.clear();
            chunk.reserve(16 * 1024);
            match self.read_once(&mut chunk) {
                Ok(Read::End) => {
                    st.eof = true;
                    self.emit_partial(&mut st);
                    break false;
                }
                Ok(Read::Filled) => self.take(&mut st, &chunk),
                Ok(Read::Emptied) => {
                    self.take(&mut st, &chunk);
                    break true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    st.eof = true;
                    self.emit_partial(&mut st);
                    break false;
                }
            }
        };
        st.chunk = chunk;
        more
    }

    /// One `read` of the pipe into `chunk`'s spare capacity (nothing is zeroed first). A read
    /// shorter than the room it had emptied the pipe: the reactor's readiness is forgotten with
    /// it (edge-triggered epoll says when more arrives), instead of being learnt from one more
    /// `read` that fails with `EAGAIN`, a syscall for every line a server writes to stderr.
    fn read_once(&self, chunk: &mut Vec<u8>) -> std::io::Result<Read> {
        use std::os::fd::AsRawFd;
        let room = chunk.spare_capacity_mut();
        let (ptr, want) = (room.as_mut_ptr(), room.len());
        let mut emptied_by = 0;
        let result = self.pipe.try_io(|| {
            // SAFETY: `ptr` and `want` describe `chunk`'s spare capacity, which read(2) only
            // writes into; it stays allocated for the call.
            let n = unsafe { libc::read(self.pipe.as_raw_fd(), ptr.cast(), want) };
            match n {
                n if n < 0 => Err(std::io::Error::last_os_error()),
                n if n > 0 && (n as usize) < want => {
                    // WouldBlock makes tokio clear the readiness it had: the bytes are kept.
                    emptied_by = n as usize;
                    Err(std::io::ErrorKind::WouldBlock.into())
                }
                n => Ok(n as usize),
            }
        });
        let (n, read) = match result {
            Ok(0) => return Ok(Read::End),
            Ok(n) => (n, Read::Filled),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && emptied_by > 0 => {
                (emptied_by, Read::Emptied)
            }
            Err(e) => return Err(e),
        };
        // SAFETY: read(2) wrote `n` bytes at the start of the spare capacity.
        unsafe { chunk.set_len(n) };
        Ok(read)
    }

    /// New bytes: emit the complete lines, keep the rest. Lines that arrive whole (the usual
    /// case: a server's logger writes a line at a time) go out from `bytes` itself.
    fn take(&self, st: &mut CopyState, mut bytes: &[u8]) {
        if !st.partial.is_empty() {
            // The line under way ends at the first newline, if one came.
            let Some(nl) = bytes.iter().position(|&b| b == b'\n') else {
                self.keep_partial(st, bytes);
                return;
            };
            st.partial.extend_from_slice(&bytes[..=nl]);
            self.emit_lines(&st.partial);
            st.partial.clear();
            bytes = &bytes[nl + 1..];
        }
        let complete = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last_nl) => &bytes[..=last_nl],
            None => &bytes[..0],
        };
        self.emit_lines(complete);
        self.keep_partial(st, &bytes[complete.len()..]);
    }

    /// Complete lines, each in one write, into the tail too.
    fn emit_lines(&self, complete: &[u8]) {
        if complete.is_empty() {
            return;
        }
        for line in complete.split_inclusive(|&b| b == b'\n') {
            emit(line);
        }
        self.tail.push(complete);
    }

    /// The start of a line whose newline has not arrived yet (passed on at once if it is
    /// already too long to hold).
    fn keep_partial(&self, st: &mut CopyState, rest: &[u8]) {
        st.partial.extend_from_slice(rest);
        if st.partial.len() > MAX_PARTIAL_LINE {
            self.emit_partial(st);
        }
    }

    fn emit_partial(&self, st: &mut CopyState) {
        if !st.partial.is_empty() {
            emit(&st.partial);
            self.tail.push(&st.partial);
            st.partial.clear();
        }
    }

    fn flush_partial(&self) {
        let mut st = self.lock();
        self.emit_partial(&mut st);
    }

    fn has_partial(&self) -> bool {
        !self.lock().partial.is_empty()
    }
}

/// One line (or a partial one) of the server's stderr onto ours, with every character that
/// could act on a terminal written out visibly ([`crate::shown`]). Always, not only when our
/// stderr is a terminal: a client that captures it into a log file puts the same bytes in
/// front of a user who runs `tail -f` on that file, and a line is judged on its own, so a
/// sequence cannot be assembled from pieces of separate writes.
fn emit(bytes: &[u8]) {
    let shown = crate::shown::neutralise(bytes, crate::shown::Keep::Lines);
    let _ = std::io::stderr().write_all(&shown);
}

/// Copy the server's stderr as it arrives, until the pipe's EOF.
async fn copy_stderr(copy: Arc<StderrCopy>) {
    loop {
        let ready = if copy.has_partial() {
            match super::timer::timeout(PARTIAL_LINE_WAIT, copy.pipe.readable()).await {
                Ok(ready) => ready,
                Err(_) => {
                    copy.flush_partial();
                    continue;
                }
            }
        } else {
            copy.pipe.readable().await
        };
        if ready.is_err() || !copy.drain_now() {
            copy.flush_partial();
            return;
        }
    }
}

/// How a server's end reads in a message: `exited (status 3)`, or, for a signal,
/// `exited (status 137: killed by SIGKILL)` — a bare 137 does not say who or what.
pub fn describe_exit(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = nix::sys::signal::Signal::try_from(sig)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| format!("signal {sig}"));
            return format!("exited (status {}: killed by {name})", 128 + sig);
        }
    }
    format!("exited (status {})", exit_code(status))
}

/// How the server ended, as the proxy ends the same way: its exit code (128+signal when a
/// signal ended it, what a shell reports) and, when a signal ended it, which one: the proxy
/// then ends by the same signal, so the client sees what it would have seen direct (Node's
/// `signal: 'SIGTERM'`, Python's `returncode == -15`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerEnd {
    pub code: i32,
    pub signal: Option<i32>,
}

impl ServerEnd {
    /// A server whose status is unknown (it could not be waited for).
    pub const UNKNOWN: ServerEnd = ServerEnd {
        code: 1,
        signal: None,
    };

    pub fn of(status: ExitStatus) -> ServerEnd {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(not(unix))]
        let signal = None;
        ServerEnd {
            code: exit_code(status),
            signal,
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

#[cfg(test)]
mod stderr_tests {
    use super::*;
    use std::os::fd::OwnedFd;

    /// A pipe whose read end a [`StderrCopy`] copies from, and its write end.
    fn copy_over_pipe() -> (Arc<StderrCopy>, OwnedFd) {
        let (read, write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC)
                .expect("pipe");
        let receiver = pipe::Receiver::from_owned_fd(read).expect("tokio pipe");
        (Arc::new(StderrCopy::new(receiver)), write)
    }

    /// Yield until the tail reads `want` (the copy task runs between the yields).
    async fn tail_becomes(copy: &StderrCopy, want: &str) {
        let waited = crate::proxy::timer::timeout(Duration::from_secs(10), async {
            while copy.tail.text() != want {
                tokio::task::yield_now().await;
            }
        })
        .await;
        assert!(
            waited.is_ok(),
            "the tail is {:?}, not {want:?}",
            copy.tail.text()
        );
    }

    /// Close the pipe's write end: the copy task must end, without a panic.
    async fn ends_at_eof(write: OwnedFd, task: tokio::task::JoinHandle<()>) {
        drop(write);
        crate::proxy::timer::timeout(Duration::from_secs(10), task)
            .await
            .expect("the copy ends at EOF")
            .expect("no panic");
    }

    /// Each read empties the pipe with a short read, after which the copy forgets the pipe's
    /// readiness without a further `read`: every later write must still wake it, and lines
    /// split across writes, and a last line without a newline, come out whole and in order.
    #[tokio::test(flavor = "current_thread")]
    async fn every_write_is_copied_after_the_pipe_was_emptied() {
        let (copy, write) = copy_over_pipe();
        let task = tokio::spawn(copy_stderr(copy.clone()));
        nix::unistd::write(&write, b"one\n").expect("write");
        tail_becomes(&copy, "one\n").await;
        nix::unistd::write(&write, b"two\nthr").expect("write");
        tail_becomes(&copy, "one\ntwo\n").await;
        nix::unistd::write(&write, b"ee\nfour\nfi").expect("write");
        tail_becomes(&copy, "one\ntwo\nthree\nfour\n").await;
        ends_at_eof(write, task).await;
        assert_eq!(copy.tail.text(), "one\ntwo\nthree\nfour\nfi");
    }

    /// A partial line (a prompt, say) is passed on [`PARTIAL_LINE_WAIT`] after it stopped
    /// growing, while the pipe stays open: on the proxy's own runtime, which has no time
    /// driver, so the wait is [`crate::proxy::timer`]'s.
    #[test]
    fn a_partial_line_is_passed_on_while_the_pipe_stays_open() {
        let runtime = crate::proxy::timer::runtime().expect("runtime");
        runtime.block_on(async {
            let (copy, write) = copy_over_pipe();
            let task = tokio::spawn(copy_stderr(copy.clone()));
            let written = std::time::Instant::now();
            nix::unistd::write(&write, b"password: ").expect("write");
            tail_becomes(&copy, "password: ").await;
            assert!(written.elapsed() >= PARTIAL_LINE_WAIT);
            nix::unistd::write(&write, b"x\n").expect("write");
            tail_becomes(&copy, "password: x\n").await;
            ends_at_eof(write, task).await;
        });
    }

    /// More than one read's room (16 KiB) waiting at once is all copied by one drain, lines cut
    /// at the read's edge put back together.
    #[tokio::test(flavor = "current_thread")]
    async fn a_drain_copies_more_than_one_read_holds() {
        let (copy, write) = copy_over_pipe();
        let all: String = (0..40)
            .map(|i| format!("{i:04}{}\n", "x".repeat(995)))
            .collect();
        let mut written = 0;
        while written < all.len() {
            written += nix::unistd::write(&write, &all.as_bytes()[written..]).expect("write");
        }
        tokio::task::yield_now().await;
        // Readiness comes from the reactor: wait for it as the copy task would.
        copy.pipe.readable().await.expect("readable");
        assert!(copy.drain_now(), "the pipe is still open");
        // The tail: the last 8 KiB, less the line its start cuts: lines 32 to 39.
        assert_eq!(copy.tail.text(), all[32 * 1000..]);
    }
}
