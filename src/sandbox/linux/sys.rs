//! Raw system calls the jail needs, each in a small safe wrapper.
//!
//! Most of these run in the child between `fork` and `exec` (inside `pre_exec`), where only
//! async-signal-safe work is allowed: no allocation, no locks. Every wrapper here is a plain
//! syscall on memory prepared by the caller and returns `io::Result` built from `errno` (which
//! does not allocate).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1 << 0;
const LANDLOCK_RULE_PATH_BENEATH: libc::c_uint = 1;

/// `struct landlock_path_beneath_attr` (packed in the uapi header).
#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the running kernel offers; 0 when Landlock is absent or disabled.
pub fn landlock_abi() -> i64 {
    // SAFETY: with a NULL attr and size 0, LANDLOCK_CREATE_RULESET_VERSION only returns the ABI
    // version (or -1/errno); no memory is read or written.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if rc < 0 {
        0
    } else {
        rc as i64
    }
}

/// Add a path-beneath rule for `dir` to `ruleset`. Async-signal-safe.
pub fn landlock_add_path_rule(
    ruleset: BorrowedFd<'_>,
    dir: BorrowedFd<'_>,
    access: u64,
) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: dir.as_raw_fd(),
    };
    // SAFETY: `attr` is a valid, initialised landlock_path_beneath_attr on our stack that the
    // kernel only reads during the call; both fds are borrowed and stay open.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Enforce `ruleset` on the calling thread (and what it execs). Async-signal-safe.
pub fn landlock_restrict_self(ruleset: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain syscall on a borrowed, open ruleset fd; flags 0.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `prctl(PR_SET_NO_NEW_PRIVS, 1)`: required before an unprivileged seccomp filter and Landlock,
/// and stops set-uid binaries from regaining privileges. Async-signal-safe.
pub fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Whether `PR_SET_NO_NEW_PRIVS` is set on the calling thread (for `doctor`).
pub fn no_new_privs() -> io::Result<bool> {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe { libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc == 1)
    }
}

/// Whether the kernel accepts seccomp filters (`SECCOMP_GET_ACTION_AVAIL` for ERRNO).
pub fn seccomp_filter_available() -> bool {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: the kernel reads one u32 from `action`, which lives for the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &action as *const u32,
        )
    };
    rc == 0
}

/// Install a classic BPF seccomp program on the calling thread. Async-signal-safe: the program
/// was compiled in the parent; this only passes a pointer to it.
pub fn install_seccomp(program: &[libc::sock_filter]) -> io::Result<()> {
    let len =
        u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?;
    let prog = libc::sock_fprog {
        len,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `prog` points at `program`, which outlives the call; the kernel copies it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// No core dumps: a crashing server must not write its memory (which may hold secrets it read
/// in scope) to disk. Async-signal-safe.
pub fn disable_core_dumps() -> io::Result<()> {
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `zero` is a valid rlimit read by the kernel during the call.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `open(path, O_PATH | O_CLOEXEC)` for a NUL-terminated path. Async-signal-safe.
pub fn open_path(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated and lives for the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: `fd` was just returned by open and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}
