//! The outbox: messages to the client go through an unbounded channel to a writer task, so
//! the router never blocks on a slow client (blocking there could deadlock a server that is
//! itself blocked writing to us). The bytes queued are counted: past [`OUT_HIGH_WATER`] the
//! server is not read (it blocks on its pipe instead of filling our memory), past
//! [`OUT_CLIENT_HIGH_WATER`] the client is not read either.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};

/// Above this many bytes queued for the client, the server is not read.
pub(super) const OUT_HIGH_WATER: usize = 1024 * 1024;

/// Above this many bytes queued for the client, the client is not read either (its own
/// answers pile up otherwise). Reading resumes below [`OUT_HIGH_WATER`].
pub(super) const OUT_CLIENT_HIGH_WATER: usize = 8 * 1024 * 1024;

/// Bytes queued for the client, shared by the router (adds) and the writer (subtracts).
#[derive(Clone)]
pub(super) struct OutCounter {
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

/// The queue of messages to the client.
pub(super) struct ClientOut {
    pub tx: mpsc::UnboundedSender<Bytes>,
    pub counter: OutCounter,
}

impl ClientOut {
    pub fn send(&self, msg: Bytes) {
        let n = msg.len();
        self.counter.queued.fetch_add(n, Ordering::Relaxed);
        if self.tx.send(msg).is_err() {
            self.counter.queued.fetch_sub(n, Ordering::Relaxed);
        }
    }
}

pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::UnboundedReceiver<Bytes>,
    counter: OutCounter,
) {
    // A client that stopped reading must not stall the session: writes fail, messages are
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
pub(super) fn terminated(line: Bytes) -> Bytes {
    if line.ends_with(b"\n") {
        line
    } else {
        let mut v = line.to_vec();
        v.push(b'\n');
        Bytes::from(v)
    }
}

impl ClientOut {
    /// The outbox over `w`, and its writer task (which ends once every sender is dropped and
    /// the queue is written).
    pub fn start<W: AsyncWrite + Unpin + Send + 'static>(
        w: W,
    ) -> (ClientOut, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
        let counter = OutCounter {
            queued: Arc::new(AtomicUsize::new(0)),
            drained: Arc::new(Notify::new()),
        };
        let writer = tokio::spawn(write_loop(w, rx, counter.clone()));
        (ClientOut { tx, counter }, writer)
    }
}
