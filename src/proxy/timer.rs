//! The proxy's few timers ([`sleep_until`], [`timeout`]), kept on the runtime's IO driver.
//!
//! Why not `tokio::time`: its time driver runs at every park of the runtime, whether or not a
//! timer is set — two clock reads and a pass over its wheel, ~0.55 k instructions of the
//! ~11.7 k the proxy spent on a call (`callgrind`, issue 10). The proxy's timers are rare
//! (a tools fetch in flight, a partial stderr line, a server being ended, an egress
//! connection's head), so on Linux each is a one-shot `timerfd` the IO driver waits on like
//! any pipe, and the proxy's runtime is built without a time driver ([`runtime`]). Elsewhere
//! they are `tokio::time`'s, on a runtime that has one.
//!
//! A timer that cannot be made (no descriptor left) counts as already elapsed, with a warning:
//! every timer here bounds a wait, and giving up the wait is the side that fails closed.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The proxy's runtime: a current-thread runtime with the IO driver (and, where [`Sleep`] is
/// `tokio::time`'s, the time driver).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_io();
    #[cfg(not(target_os = "linux"))]
    builder.enable_time();
    builder.build()
}

/// The wait of [`timeout`] outlasted its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Elapsed;

/// `future`'s output, or [`Elapsed`] when `bound` passes first. `future` is polled first, so
/// one that is ready is not lost to a bound that also passed; and its timer is made only when
/// it is not ready at once (a `timerfd` is four syscalls to make, arm, register and close).
pub async fn timeout<F: Future>(bound: Duration, future: F) -> Result<F::Output, Elapsed> {
    let at = Instant::now() + bound;
    let mut future = pin!(future);
    let mut sleep = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let sleep = sleep.get_or_insert_with(|| sleep_until(at));
        Pin::new(sleep).poll(cx).map(|()| Err(Elapsed))
    })
    .await
}

/// A future that is ready at `at` (at once when `at` has passed).
pub fn sleep_until(at: Instant) -> Sleep {
    Sleep::until(at)
}

pub use imp::Sleep;

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use nix::sys::time::TimeSpec;
    use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
    use tokio::io::unix::AsyncFd;

    /// A one-shot `timerfd` on `CLOCK_MONOTONIC` (the clock of [`Instant`]), set to an
    /// absolute time: one that has passed by the time it is set fires at once, where a
    /// relative time of zero would disarm the timer and wait forever.
    pub struct Sleep {
        armed: Option<AsyncFd<Timer>>,
    }

    /// The timer's descriptor as the IO driver wants it (`TimerFd` has no `AsRawFd`).
    struct Timer(TimerFd);

    impl std::os::fd::AsRawFd for Timer {
        fn as_raw_fd(&self) -> std::os::fd::RawFd {
            use std::os::fd::AsFd;
            self.0.as_fd().as_raw_fd()
        }
    }

    impl Sleep {
        pub(super) fn until(at: Instant) -> Sleep {
            if at <= Instant::now() {
                return Sleep { armed: None };
            }
            match arm(at) {
                Ok(fd) => Sleep { armed: Some(fd) },
                Err(err) => {
                    tracing::warn!(
                        "cannot set a timer ({err}): the wait it bounds is given up now \
                         (hint: raise the open-file limit, `ulimit -n`)"
                    );
                    Sleep { armed: None }
                }
            }
        }
    }

    fn arm(at: Instant) -> std::io::Result<AsyncFd<Timer>> {
        let fd = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )?;
        // An `Instant` holds `CLOCK_MONOTONIC`'s reading; the timer wants the same reading as
        // a `timespec`: now's reading plus what is left until `at`.
        let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)?;
        let left = at.saturating_duration_since(Instant::now());
        let when = now + TimeSpec::from_duration(left);
        fd.set(
            Expiration::OneShot(when),
            TimerSetTimeFlags::TFD_TIMER_ABSTIME,
        )?;
        // SAFETY: the `TimerFd` owns its open descriptor and the AsyncFd takes ownership of it,
        // so it stays open and refers to this timer until the AsyncFd is dropped.
        Ok(unsafe { AsyncFd::register_with_interest(Timer(fd), tokio::io::Interest::READABLE) }?)
    }

    impl Future for Sleep {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            loop {
                let Some(fd) = &self.armed else {
                    return Poll::Ready(());
                };
                let mut ready = match fd.poll_read_ready(cx) {
                    Poll::Ready(Ok(ready)) => ready,
                    // The driver lost the descriptor: end the wait rather than hang on it.
                    Poll::Ready(Err(_)) => {
                        self.armed = None;
                        return Poll::Ready(());
                    }
                    Poll::Pending => return Poll::Pending,
                };
                // Readable means expired; a read that would block means the readiness was
                // stale, so wait again.
                match ready.get_inner().0.wait() {
                    Err(nix::errno::Errno::EAGAIN) => ready.clear_ready(),
                    _ => {
                        self.armed = None;
                        return Poll::Ready(());
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    /// `tokio::time`'s sleep, boxed so [`Sleep`] is `Unpin` as on Linux.
    pub struct Sleep(Pin<Box<tokio::time::Sleep>>);

    impl Sleep {
        pub(super) fn until(at: Instant) -> Sleep {
            #[allow(clippy::disallowed_methods)]
            Sleep(Box::pin(tokio::time::sleep_until(at.into())))
        }
    }

    impl Future for Sleep {
        type Output = ();

        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            self.0.as_mut().poll(cx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The runtime the proxy runs on: no time driver on Linux, so these timers are what work.
    fn on_proxy_runtime<F: Future>(future: F) -> F::Output {
        runtime().expect("runtime").block_on(future)
    }

    /// What the module is for: on Linux nothing runs a time driver at the runtime's parks, so
    /// a `tokio::time` timer cannot even be made there.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_proxy_runtime_has_no_time_driver() {
        let runtime = runtime().expect("runtime");
        let made = std::panic::catch_unwind(|| {
            runtime.block_on(async {
                #[allow(clippy::disallowed_methods)]
                drop(tokio::time::sleep(Duration::from_millis(1)));
            })
        });
        assert!(
            made.is_err(),
            "a tokio::time timer was made: the time driver is on"
        );
    }

    #[test]
    fn a_sleep_ends_no_earlier_than_its_time() {
        on_proxy_runtime(async {
            let at = Instant::now() + Duration::from_millis(30);
            sleep_until(at).await;
            assert!(Instant::now() >= at);
        });
    }

    #[test]
    fn a_time_already_passed_is_ready_at_once() {
        let passed = Instant::now();
        let mut sleep = sleep_until(passed);
        let waker = std::task::Waker::noop();
        // No runtime at all: a passed time makes no timer.
        assert_eq!(
            Pin::new(&mut sleep).poll(&mut Context::from_waker(waker)),
            Poll::Ready(())
        );
    }

    #[test]
    fn a_timeout_gives_the_output_of_a_future_that_ends_in_time() {
        let got = on_proxy_runtime(timeout(Duration::from_secs(60), async { 7 }));
        assert_eq!(got, Ok(7));
    }

    #[test]
    fn a_timeout_ends_a_wait_that_outlasts_it() {
        on_proxy_runtime(async {
            let start = Instant::now();
            let bound = Duration::from_millis(30);
            let got = timeout(bound, std::future::pending::<()>()).await;
            assert_eq!(got, Err(Elapsed));
            assert!(start.elapsed() >= bound);
        });
    }

    /// Two timers, the later made first: each wakes its own waiter, in time order.
    #[test]
    fn timers_made_out_of_order_end_in_time_order() {
        on_proxy_runtime(async {
            let start = Instant::now();
            let late = tokio::spawn(async move {
                sleep_until(start + Duration::from_millis(60)).await;
                Instant::now()
            });
            let early = tokio::spawn(async move {
                sleep_until(start + Duration::from_millis(20)).await;
                Instant::now()
            });
            let (late, early) = (late.await.expect("late"), early.await.expect("early"));
            assert!(early >= start + Duration::from_millis(20));
            assert!(late >= start + Duration::from_millis(60));
            assert!(early < late);
        });
    }
}
