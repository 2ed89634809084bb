//! The log subscriber, built when the first event or span reaches it.
//!
//! `tracing_subscriber`'s `fmt` subscriber allocates its span registry up front: a slab with a
//! shard per possible thread, ~28 KiB it writes at once (7 page faults) and ~28 k instructions,
//! measured at ~0.03 ms of every proxy start here. Most sessions log nothing at the default level
//! (warnings), so that cost is deferred: until something is logged, the level alone answers
//! whether a call site is on, which is all `tracing` asks before the first event.

use std::sync::OnceLock;

use tracing::span;
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_subscriber::filter::LevelFilter;

type Built = Box<dyn Subscriber + Send + Sync>;

/// A subscriber that judges call sites by `max` and hands everything else to the subscriber
/// `build` makes, built once, on first use.
pub struct Deferred<F> {
    max: LevelFilter,
    build: F,
    built: OnceLock<Built>,
}

impl<F: Fn() -> Built + Send + Sync + 'static> Deferred<F> {
    /// `build` must make a subscriber that enables exactly the levels up to `max`: call sites are
    /// judged here, by `max`, before it exists.
    pub fn new(max: LevelFilter, build: F) -> Self {
        Deferred {
            max,
            build,
            built: OnceLock::new(),
        }
    }

    fn inner(&self) -> &(dyn Subscriber + Send + Sync) {
        self.built.get_or_init(&self.build).as_ref()
    }

    fn on(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= self.max
    }
}

impl<F: Fn() -> Built + Send + Sync + 'static> Subscriber for Deferred<F> {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if self.on(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        self.on(metadata)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(self.max)
    }

    fn new_span(&self, attrs: &span::Attributes<'_>) -> span::Id {
        self.inner().new_span(attrs)
    }

    fn record(&self, span: &span::Id, values: &span::Record<'_>) {
        self.inner().record(span, values)
    }

    fn record_follows_from(&self, span: &span::Id, follows: &span::Id) {
        self.inner().record_follows_from(span, follows)
    }

    fn event(&self, event: &Event<'_>) {
        self.inner().event(event)
    }

    fn enter(&self, span: &span::Id) {
        self.inner().enter(span)
    }

    fn exit(&self, span: &span::Id) {
        self.inner().exit(span)
    }

    fn clone_span(&self, id: &span::Id) -> span::Id {
        self.inner().clone_span(id)
    }

    fn try_close(&self, id: span::Id) -> bool {
        self.inner().try_close(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tests::Captured;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// Nothing is built while only call sites below the level are reached; the first event at
    /// the level builds the subscriber once, and every event at the level reaches it, spans
    /// included, in the form the subscriber itself writes.
    #[test]
    fn builds_on_the_first_event_at_its_level_and_forwards_everything() {
        let out = Captured::default();
        let builds = Arc::new(AtomicUsize::new(0));
        let (writer, counter) = (out.clone(), builds.clone());
        let deferred = Deferred::new(LevelFilter::WARN, move || -> Built {
            counter.fetch_add(1, Ordering::SeqCst);
            let writer = writer.clone();
            Box::new(
                tracing_subscriber::fmt()
                    .with_writer(move || writer.clone())
                    .with_ansi(false)
                    .with_target(false)
                    .without_time()
                    .with_max_level(LevelFilter::WARN)
                    .finish(),
            )
        });
        tracing::subscriber::with_default(deferred, || {
            tracing::info!("below the level");
            tracing::debug!("below the level");
            assert_eq!(builds.load(Ordering::SeqCst), 0, "built for nothing");
            let span = tracing::warn_span!("outer", server = "fs");
            let _entered = span.enter();
            tracing::warn!(tool = "read_file", "first warning");
            tracing::error!("second");
            tracing::info!("still below");
        });
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].contains("WARN") && lines[0].contains("outer{server=\"fs\"}"),
            "{text}"
        );
        assert!(
            lines[0].ends_with("first warning tool=\"read_file\""),
            "{text}"
        );
        assert!(
            lines[1].contains("ERROR") && lines[1].ends_with("second"),
            "{text}"
        );
    }

    /// A quiet run (errors only) judges warnings off without building anything.
    #[test]
    fn a_level_below_every_event_builds_nothing() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = builds.clone();
        let deferred = Deferred::new(LevelFilter::ERROR, move || -> Built {
            counter.fetch_add(1, Ordering::SeqCst);
            Box::new(tracing_subscriber::fmt().finish())
        });
        tracing::subscriber::with_default(deferred, || {
            tracing::warn!("not shown");
            tracing::info!("not shown");
        });
        assert_eq!(builds.load(Ordering::SeqCst), 0);
    }
}
