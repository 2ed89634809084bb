//! Descendants die with the server, even when nobody is left to end them (issue 9, class 8).
//!
//! The proxy ends the server's whole session when the server exits, but a proxy killed with
//! SIGKILL ends nothing: `PR_SET_PDEATHSIG` takes the server's process down with it, and the
//! server's own descendants (a daemon that double-forked, a build it started) would live on. So
//! the server's child, right after entering its mount (and, unprivileged, user) namespace,
//! unshares a PID namespace ([`super::sys::enter_pid_namespace`]): the process the proxy spawned
//! stays outside as a shim, a tiny init (pid 1) tied to it with `PR_SET_PDEATHSIG(SIGKILL)` reaps
//! orphans, and the server runs as pid 2, with everything it starts inside. When the server
//! exits, the init reports its status to the shim (which exits the same way) and exits; when the
//! shim dies (the proxy's SIGKILL, or its death signal when the proxy dies), the init dies. Either
//! way the kernel then kills every process left in the namespace; none can leave it (seccomp
//! refuses `setns`, `unshare` and namespace-creating `clone`).
//!
//! The death signals follow the *thread* that forked: the proxy spawns from its main thread (a
//! current-thread runtime), which lives as long as it does; the shim and the init are
//! single-threaded.
//!
//! Once the server runs, the shim and the init exec the [`super::reaper`], a freestanding
//! program of a kilobyte: they keep nothing of the proxy's memory (a few kB resident each, where
//! forks of the proxy kept megabytes). Where the kernel refuses an executable memfd they stay
//! forks, doing the same in-process.
//!
//! Costs: the server sees itself as pid 2 and its parent as pid 1 (`/proc` is the host's, so its
//! `/proc/self` still works); the pids it could name are only its own descendants'.

use crate::sandbox::{Enforcement, LayerReport};

/// The `process_tree` layer, given whether the PID namespace can be used here (or why not).
pub fn layer(available: &Result<(), String>) -> LayerReport {
    match available {
        Ok(()) => LayerReport {
            layer: "process_tree".into(),
            enforcement: Enforcement::Fully,
            detail: "the server runs as pid 2 of a PID namespace of its own, under an init tied \
                     to the process the proxy spawned: when the server ends, or that process dies \
                     with the proxy (PR_SET_PDEATHSIG, also on SIGKILL), the kernel kills every \
                     descendant, daemons included"
                .into(),
        },
        Err(why) => LayerReport {
            layer: "process_tree".into(),
            enforcement: Enforcement::Partially,
            detail: format!(
                "no PID namespace here ({why}): the proxy ends the server's session when the \
                 server exits, but if the proxy itself is SIGKILLed the server's descendants \
                 outlive it"
            ),
        },
    }
}

/// An errno from the probe, in words, with the usual causes.
pub fn describe(errno: i32) -> String {
    format!(
        "creating a PID namespace failed: {} (hint: user.max_pid_namespaces, or a container \
         without CAP_SYS_ADMIN)",
        std::io::Error::from_raw_os_error(errno)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_pid_namespace_the_layer_is_partial_and_says_why() {
        let l = layer(&Err(describe(libc::ENOSPC)));
        assert_eq!(l.enforcement, Enforcement::Partially);
        assert!(l.detail.contains("max_pid_namespaces"), "{}", l.detail);
        assert!(l.detail.contains("descendants outlive"), "{}", l.detail);
        assert_eq!(layer(&Ok(())).enforcement, Enforcement::Fully);
    }
}
