//! The outboxes: messages to the client, and to the server's stdin. The router never blocks on
//! a slow reader (blocking there could deadlock a server that is itself blocked writing to us):
//! a message is written at once when the pipe takes it and nothing is queued before it, and
//! otherwise goes through an unbounded channel to a writer task. Writing at once saves a task
//! hop per message (two per call: ~1–2 µs of the proxy's per-call cost); the order is kept
//! because nothing is written directly while anything is queued or being written.
//!
//! The bytes queued are counted: past [`OUT_HIGH_WATER`] (of the client's outbox) the server
//! is not read (it blocks on its pipe instead of filling our memory), past
//! [`OUT_CLIENT_HIGH_WATER`] the client is not read either.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Mutex, Notify};

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

type Writer = Arc<Mutex<Pin<Box<dyn AsyncWrite + Send>>>>;

/// A queue of messages to one reader (the client, or the server's stdin).
pub(crate) struct Outbox {
    tx: mpsc::UnboundedSender<Bytes>,
    pub counter: OutCounter,
    writer: Writer,
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

    /// Write `msg` now if nothing is queued and the writer takes bytes without waiting: what it
    /// did not take (all of it if it took none), or `None` once all of it is written. Errors
    /// are left for the writer task to meet again, so they are handled in one place.
    fn write_now(&self, msg: Bytes) -> Option<Bytes> {
        if self.counter.queued.load(Ordering::Relaxed) != 0 {
            return Some(msg);
        }
        // Held by the writer task only while it writes what was queued (so never here, with
        // nothing queued, in the router's one thread); a miss just queues.
        let Ok(mut writer) = self.writer.try_lock() else {
            return Some(msg);
        };
        let mut cx = Context::from_waker(Waker::noop());
        let mut done = 0;
        while done < msg.len() {
            match writer.as_mut().poll_write(&mut cx, &msg[done..]) {
                Poll::Ready(Ok(n)) if n > 0 => done += n,
                _ => break,
            }
        }
        if done == msg.len() {
            None
        } else {
            Some(msg.slice(done..))
        }
    }
}

async fn write_loop(w: Writer, mut rx: mpsc::UnboundedReceiver<Bytes>, counter: OutCounter) {
    // A reader that stopped reading must not stall the session: writes fail, messages are
    // dropped, and the counter still goes down so the server keeps being read.
    let mut broken = false;
    while let Some(msg) = rx.recv().await {
        let mut w = w.lock().await;
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
    let _ = w.lock().await.flush().await;
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
    /// dropped and the queue is written).
    pub fn start<W: AsyncWrite + Send + 'static>(w: W) -> (Outbox, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
        let counter = OutCounter {
            queued: Arc::new(AtomicUsize::new(0)),
            drained: Arc::new(Notify::new()),
        };
        let writer: Writer = Arc::new(Mutex::new(Box::pin(w)));
        let task = tokio::spawn(write_loop(writer.clone(), rx, counter.clone()));
        (
            Outbox {
                tx,
                counter,
                writer,
            },
            task,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncRead, AsyncReadExt};

    /// What `reader` holds right now, without waiting for anything to be written.
    fn available(reader: &mut tokio::io::DuplexStream) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            let mut read = tokio::io::ReadBuf::new(&mut buf);
            match Pin::new(&mut *reader).poll_read(&mut cx, &mut read) {
                Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    out.extend_from_slice(read.filled())
                }
                _ => return out,
            }
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_idle_outbox_writes_at_once_without_its_task() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let (out, _task) = Outbox::start(ours);
        out.send(Bytes::from_static(b"one\n"));
        // No yield: the writer task has not run, yet the bytes are there.
        assert_eq!(available(&mut theirs), b"one\n");
        assert_eq!(out.counter.queued.load(Ordering::Relaxed), 0);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_the_pipe_does_not_take_is_queued_and_later_messages_keep_their_order() {
        // A pipe that takes 8 bytes: the first message is written in part, its rest queued;
        // the next ones must not overtake it.
        let (ours, mut theirs) = tokio::io::duplex(8);
        let (out, task) = Outbox::start(ours);
        out.send(Bytes::from_static(b"0123456789abcdef\n"));
        assert_eq!(available(&mut theirs), b"01234567");
        out.send(Bytes::from_static(b"second\n"));
        out.send(Bytes::from_static(b"third\n"));
        assert!(out.counter.queued.load(Ordering::Relaxed) > 0);
        drop(out);
        let mut rest = Vec::new();
        theirs.read_to_end(&mut rest).await.unwrap();
        task.await.unwrap();
        assert_eq!(rest, b"89abcdef\nsecond\nthird\n");
    }
}
