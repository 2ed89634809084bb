//! The client's stdin/stdout as truly asynchronous pipes.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on the blocking thread pool: two
//! thread hand-offs per message per direction, which is most of the proxy's added latency, and
//! a stdin read that cannot be cancelled at shutdown. When our stdio are pipes or sockets (the
//! normal case: an MCP client spawned us), we put them in non-blocking mode and drive them
//! with the runtime's reactor instead. For a terminal or a regular file (manual use), the
//! tokio types are used as before.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub type ClientReader = Pin<Box<dyn AsyncRead + Send>>;
pub type ClientWriter = Pin<Box<dyn AsyncWrite + Send>>;

/// Our stdin and stdout, reactor-driven where possible, and (when stdout is a pipe or socket)
/// a duplicate of stdout's non-blocking descriptor, for writing at once when nothing is
/// queued (see `proxy::outbox`).
pub fn client_stdio() -> (ClientReader, ClientWriter, Option<OwnedFd>) {
    let reader: ClientReader = match reactor_fd(io::stdin().as_fd()) {
        Some(fd) => Box::pin(PipeReader(fd)),
        None => Box::pin(tokio::io::stdin()),
    };
    let (writer, direct): (ClientWriter, _) = match reactor_fd(io::stdout().as_fd()) {
        Some(fd) => {
            let direct = fd.get_ref().try_clone().ok();
            (Box::pin(PipeWriter(fd)), direct)
        }
        None => (Box::pin(tokio::io::stdout()), None),
    };
    (reader, writer, direct)
}

/// A non-blocking duplicate of `fd` registered with the reactor, if it is a pipe or socket.
/// Must be called inside the runtime (registration needs its reactor).
fn reactor_fd(fd: std::os::fd::BorrowedFd<'_>) -> Option<AsyncFd<OwnedFd>> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    use nix::sys::stat::{fstat, SFlag};

    let stat = fstat(fd).ok()?;
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    if kind != SFlag::S_IFIFO && kind != SFlag::S_IFSOCK {
        return None;
    }
    let owned = fd.try_clone_to_owned().ok()?;
    let flags = OFlag::from_bits_truncate(fcntl(&owned, FcntlArg::F_GETFL).ok()?);
    fcntl(&owned, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK)).ok()?;
    // SAFETY: `owned` is an open descriptor we own; the AsyncFd takes ownership of it, so it
    // stays open and refers to the same description until the AsyncFd is dropped, and an
    // OwnedFd always reports the same raw fd.
    unsafe { AsyncFd::register(owned) }.ok()
}

struct PipeReader(AsyncFd<OwnedFd>);

impl AsyncRead for PipeReader {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.0.poll_read_ready(cx))?;
            // Read straight into the caller's spare capacity, uninitialised: zeroing it first
            // (ReadBuf::initialize_unfilled) cost a memset of up to the whole buffer per
            // message, the largest single item in the proxy's per-call profile.
            // SAFETY: we only write into `unfilled` through read(2) and only mark as
            // initialised the `n` bytes it reports having written.
            let unfilled = unsafe { buf.unfilled_mut() };
            let want = unfilled.len().min(256 * 1024);
            let result = guard.try_io(|fd| {
                use std::os::fd::AsRawFd;
                // SAFETY: the pointer and length describe `want` writable bytes of `unfilled`.
                let n = unsafe {
                    libc::read(
                        fd.get_ref().as_raw_fd(),
                        unfilled.as_mut_ptr().cast::<libc::c_void>(),
                        want,
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            });
            match result {
                Ok(Ok(n)) => {
                    // A short read emptied the pipe: the reactor (edge-triggered epoll) will
                    // say when more arrives, so forget the readiness now rather than learn it
                    // from one more read that fails with EAGAIN (a syscall per message).
                    if n > 0 && n < want {
                        guard.clear_ready();
                    }
                    // SAFETY: read(2) wrote exactly `n` bytes at the start of `unfilled`.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(err)) => return Poll::Ready(Err(err)),
                Err(_would_block) => continue,
            }
        }
    }
}

struct PipeWriter(AsyncFd<OwnedFd>);

impl AsyncWrite for PipeWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.0.poll_write_ready(cx))?;
            match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(io::Error::from))
            {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
