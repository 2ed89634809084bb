//! The proxy's own start of a jailed server, without a fork: the shim is started with a
//! `vfork`-style clone (`CLONE_VM | CLONE_VFORK`, as glibc's `posix_spawn` does), and runs the
//! same [`child_confine`] as the forked path until it execs the reaper
//! (see [`super::sys::enter_pid_namespace`]); only then does the proxy go on.
//!
//! Why: std's `Command` forks when a `pre_exec` hook is set, and a fork of the proxy costs it
//! twice: copying its page tables (~0.2 ms here), and one write-protect fault for each page it
//! writes afterwards while the fork still shares it (~60 faults, ~3.5 µs each in this VM). With
//! the reaper, no process of the chain keeps the proxy's memory, so nothing needs a copy of it.
//!
//! Only where the reaper runs and the server gets a PID namespace (the chain then ends in an
//! `exec` the shim cannot go on without); otherwise the caller uses std's `Command`. The shim
//! starts as std's child does: the server's pipes on its stdio, the working directory, the
//! signal mask empty and `SIGPIPE` at its default; and, because it runs in the proxy's memory,
//! every signal the proxy handles is reset to its default before anything can be delivered
//! (a handler run there would write the proxy's own state). For the same reason nothing in the
//! chain may write memory the proxy reads afterwards: the one write, the server's environment
//! put in `environ` for `execvp`, is undone here once the chain has exec'd.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use super::{child_confine, sys, ChildPlan};

/// A server the proxy started itself: the shim's pid and pidfd, and the proxy's ends of the
/// server's stdin, stdout and stderr (close-on-exec, blocking).
#[derive(Debug)]
pub struct Spawned {
    pub pid: u32,
    pub pidfd: OwnedFd,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// What the shim shares with the proxy, suspended until the shim's `exec`.
struct ShimShared<'a> {
    plan: &'a ChildPlan,
    cwd: &'a CStr,
    /// The server's ends of its stdin, stdout and stderr, to become the shim's 0, 1 and 2.
    stdio: [RawFd; 3],
    /// Why the shim stopped before its `exec` (0 until then).
    errno: libc::c_int,
}

/// A pipe whose two ends are above 2, so that placing one on the child's stdio cannot overwrite
/// another (the proxy's own stdio may have been closed by whoever started it).
fn pipe_above_stdio() -> io::Result<(OwnedFd, OwnedFd)> {
    let (r, w) = sys::pipe()?;
    let lift = |fd: OwnedFd| -> io::Result<OwnedFd> {
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        // SAFETY: F_DUPFD_CLOEXEC on a descriptor we own; the result is owned by nobody else.
        let dup = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
        if dup < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just created.
        Ok(unsafe { OwnedFd::from_raw_fd(dup) })
    };
    Ok((lift(r)?, lift(w)?))
}

/// Start the shim on `plan` (which must have the reaper and its own `exec`), in its working
/// directory.
pub(super) fn spawn(plan: &ChildPlan) -> io::Result<Spawned> {
    let (Some(cwd), Some(Some(_))) = (plan.cwd.as_deref(), &plan.exec) else {
        // A string held a NUL byte: std's spawn fails the same way.
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    };
    let (stdin_r, stdin_w) = pipe_above_stdio()?;
    let (stdout_r, stdout_w) = pipe_above_stdio()?;
    let (stderr_r, stderr_w) = pipe_above_stdio()?;
    let mut shared = ShimShared {
        plan,
        cwd,
        stdio: [
            stdin_r.as_raw_fd(),
            stdout_w.as_raw_fd(),
            stderr_w.as_raw_fd(),
        ],
        errno: 0,
    };
    // Nothing may be delivered to the shim before it has reset the proxy's handlers: every
    // signal is blocked across the clone (the shim inherits the mask), and restored here after.
    let all = sys::SignalMask::block_all()?;
    // The server's process installs its environment in `environ` before `execvp` (see
    // `ExecPlan::exec`), and here that is this process's own variable: put it back after.
    // SAFETY: a read of the pointer; nothing else in this process writes it.
    let environment = unsafe { super::environ };
    let cloned = sys::clone_vm_vfork(
        shim_entry,
        (&mut shared as *mut ShimShared).cast(),
        sys::HOOK_STACK,
    );
    // SAFETY: as above; the value it had before the clone.
    unsafe { super::environ = environment };
    drop(all);
    let pid = cloned?;
    // SAFETY: written by the shim (same memory) before its exit; it has exec'd or exited now.
    let errno = unsafe { std::ptr::read_volatile(&shared.errno) };
    if errno != 0 {
        sys::reap(pid);
        return Err(io::Error::from_raw_os_error(errno));
    }
    let pidfd = sys::pidfd_open(pid)?;
    Ok(Spawned {
        pid: pid as u32,
        pidfd,
        stdin: stdin_w,
        stdout: stdout_r,
        stderr: stderr_r,
    })
}

extern "C" fn shim_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `ShimShared` of `spawn`, whose frame lives (suspended) until this
    // process execs or exits.
    let shared = unsafe { &mut *arg.cast::<ShimShared>() };
    let err = shim_start(shared);
    shared.errno = err.raw_os_error().unwrap_or(libc::EIO);
    // SAFETY: _exit never returns and runs nothing of the shared memory's owner.
    unsafe { libc::_exit(127) }
}

/// The shim: what std's child does before its hooks, then the jail's hook, which ends in the
/// reaper's `exec`. Returns only what stopped it. Async-signal-safe, allocates nothing.
fn shim_start(shared: &ShimShared) -> io::Error {
    sys::reset_signal_handlers();
    for (target, fd) in shared.stdio.iter().enumerate() {
        // SAFETY: dup2 on descriptors this process holds (its own table: no CLONE_FILES).
        if unsafe { libc::dup2(*fd, target as libc::c_int) } < 0 {
            return io::Error::last_os_error();
        }
    }
    if let Err(err) = sys::chdir(shared.cwd) {
        return err;
    }
    if let Err(err) = sys::SignalMask::clear() {
        return err;
    }
    match child_confine(shared.plan) {
        // With the reaper the shim's hook does not return unless it failed.
        Ok(()) => io::Error::from_raw_os_error(libc::EINVAL),
        Err(err) => err,
    }
}
