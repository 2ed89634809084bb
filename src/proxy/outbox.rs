//! The outboxes: messages to the client, and to the server's stdin. The router never blocks on
//! a slow reader (blocking there could deadlock a server that is itself blocked writing to us):
//! what the pipe does not take at once goes through an unbounded channel to a writer task.
//!
//! A message is written at once, in the router's own turn, when nothing is queued before it and
//! the outbox has the pipe's descriptor ([`Outbox::start`]'s `direct`, a duplicate of the
//! writer's non-blocking pipe): a plain `write(2)` that takes what the pipe has room for, with
//! no task hop and no readiness bookkeeping (nothing is registered with the reactor, so the
//! writer task's wake-ups are untouched). What it does not take, and any error, goes through
//! the queue, where the writer task meets it: errors are handled in one place. The order holds
//! because nothing is written at once while anything is queued or being written (the writer
//! task counts a message off only after writing it, and both run on the runtime's one thread).
//!
//! The bytes queued are counted: past [`OUT_HIGH_WATER`] (of the client's outbox) the server is
//! not read (it blocks on its pipe instead of filling our memory), past
//! [`OUT_CLIENT_HIGH_WATER`] the client is not read either.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};

/// Above this many bytes queued for the client, the server is not read.
pub(crate) const OUT_HIGH_WATER: usize = 1024 * 1024;

/// Above this many bytes queued for the client, the client is not read either (its own
/// answers pile up otherwise). Reading resumes below [`OUT_HIGH_WATER`].
pub(crate) const OUT_CLIENT_HIGH_WATER: usize = 8 * 1024 * 1024;

/// Bytes queued for the client, shared by the router (adds) and the writer (subtracts).
#[derive(Clone)]
pub(crate) struct OutCounter {
    pub queued: Arc<AtomicUsize>,
    pub drained: Arc<Notify>,
}

impl OutCounter {
    pub fn backlogged(&self) -> bool {
        self.over(OUT_HIGH_WATER)
    }

    pub fn over(&self, mark: usize) -> bool {
        self.queued.load(Ordering::Relaxed) >= mark
    }

    pub fn written(&self, n: usize) {
        let before = self.queued.fetch_sub(n, Ordering::Relaxed);
        if before >= OUT_HIGH_WATER && before - n < OUT_HIGH_WATER {
            self.drained.notify_one();
        }
    }
}

/// The messages to one reader (the client, or the server's stdin).
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Bytes>,
    pub counter: OutCounter,
    /// The writer's pipe, non-blocking, for writing at once (see the module docs).
    direct: Option<OwnedFd>,
}

impl Outbox {
    pub fn send(&self, msg: Bytes) {
        let msg = match self.write_now(msg) {
            Some(rest) => rest,
            None => return,
        };
        let n = msg.len();
        self.counter.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.send(msg).is_err() {
            self.counter.queued.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// Write `msg` now if nothing is queued: what the pipe did not take (all of it on an
    /// error, `EAGAIN` included), or `None` once all of it is written.
    fn write_now(&self, msg: Bytes) -> Option<Bytes> {
        let Some(fd) = &self.direct else {
            return Some(msg);
        };
        if self.counter.queued.load(Ordering::Relaxed) != 0 || self.tx.is_closed() {
            return Some(msg);
        }
        match nix::unistd::write(fd, &msg) {
            Ok(n) if n >= msg.len() => None,
            Ok(n) => Some(msg.slice(n..)),
            Err(_) => Some(msg),
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    counter: OutCounter,
) {
    // A reader that stopped reading must not stall the session: writes fail, messages are
    // dropped, and the counter still goes down so the server keeps being read.
    let mut broken = false;
    while let Some(msg) = rx.recv().await {
        if !broken && w.write_all(&msg).await.is_err() {
            broken = true;
        }
        counter.written(msg.len());
        while let Ok(more) = rx.try_recv() {
            if !broken && w.write_all(&more).await.is_err() {
                broken = true;
            }
            counter.written(more.len());
        }
        if !broken && w.flush().await.is_err() {
            broken = true;
        }
    }
    let _ = w.flush().await;
}

/// A line with its terminator: frames at EOF may lack one, and the peer needs it.
pub(crate) fn terminated(line: Bytes) -> Bytes {
    if line.ends_with(b"\n") {
        line
    } else {
        let mut v = line.to_vec();
        v.push(b'\n');
        Bytes::from(v)
    }
}

impl Outbox {
    /// The outbox over `w`, and its writer task (which ends, dropping `w`, once the outbox is
    /// dropped and the queue is written). `direct`: a duplicate of `w`'s own pipe, in
    /// non-blocking mode, to write at once when nothing is queued; `None` (a terminal, a file,
    /// a test's in-memory stream) queues everything.
    pub fn start<W: AsyncWrite + Unpin + Send + 'static>(
        w: W,
        direct: Option<OwnedFd>,
    ) -> (Outbox, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
        let counter = OutCounter {
            queued: Arc::new(AtomicUsize::new(0)),
            drained: Arc::new(Notify::new()),
        };
        let writer = tokio::spawn(write_loop(w, rx, counter.clone()));
        (
            Outbox {
                tx,
                counter,
                direct,
            },
            writer,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A pipe whose write end is an outbox (writer task over tokio's pipe, `direct` a duplicate
    /// of it), the kernel's buffer shrunk to `size`; and the read end, non-blocking.
    fn outbox_over_pipe(size: libc::c_int) -> (Outbox, tokio::task::JoinHandle<()>, OwnedFd) {
        let (read, write) =
            nix::unistd::pipe2(nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_CLOEXEC)
                .expect("pipe");
        // SAFETY: fcntl on a descriptor we own, integer argument.
        unsafe { libc::fcntl(write.as_fd().as_raw_fd(), libc::F_SETPIPE_SZ, size) };
        let direct = write.try_clone().expect("dup");
        let sender = tokio::net::unix::pipe::Sender::from_owned_fd(write).expect("tokio pipe");
        let (out, task) = Outbox::start(sender, Some(direct));
        (out, task, read)
    }

    /// What the pipe holds right now, without waiting.
    fn available(read: &OwnedFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = nix::unistd::read(read, &mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    use std::os::fd::AsRawFd;

    #[tokio::test(flavor = "current_thread")]
    async fn an_idle_outbox_writes_at_once_without_its_task() {
        let (out, _task, read) = outbox_over_pipe(4096);
        out.send(Bytes::from_static(b"one\n"));
        // No yield: the writer task has not run, yet the bytes are in the pipe.
        assert_eq!(available(&read), b"one\n");
        assert_eq!(out.counter.queued.load(Ordering::Relaxed), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_the_pipe_does_not_take_is_queued_and_later_messages_keep_their_order() {
        let (out, task, read) = outbox_over_pipe(4096);
        // Longer than the pipe: written in part now, the rest queued; the next messages must
        // not overtake it, though the pipe has room for them once it is read.
        let long: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        out.send(Bytes::from(long.clone()));
        let first = available(&read);
        assert!(
            !first.is_empty() && first.len() < long.len(),
            "{}",
            first.len()
        );
        out.send(Bytes::from_static(b"second\n"));
        out.send(Bytes::from_static(b"third\n"));
        assert!(out.counter.queued.load(Ordering::Relaxed) > 0);
        drop(out);
        let mut got = first;
        let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(read).expect("tokio pipe");
        let mut reader = reader;
        tokio::io::AsyncReadExt::read_to_end(&mut reader, &mut got)
            .await
            .expect("read");
        task.await.expect("writer task");
        let mut want = long;
        want.extend_from_slice(b"second\nthird\n");
        assert_eq!(got, want);
    }
}
