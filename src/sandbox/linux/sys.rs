//! Raw system calls the jail needs, each in a small safe wrapper.
//!
//! Most of these run in the child between `fork` and `exec` (inside `pre_exec`), where only
//! async-signal-safe work is allowed: no allocation, no locks. Every wrapper here is a plain
//! syscall on memory prepared by the caller and returns `io::Result` built from `errno` (which
//! does not allocate).

use std::ffi::CStr;
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

/// `unshare(flags)`. Async-signal-safe.
pub fn unshare(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: unshare takes an integer only.
    let rc = unsafe { libc::unshare(flags) };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `mount(2)`; `None` arguments are passed as NULL. Async-signal-safe.
pub fn mount(
    source: Option<&CStr>,
    target: &CStr,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> io::Result<()> {
    let ptr = |s: Option<&CStr>| s.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: every pointer is NULL or a NUL-terminated string that lives for the call; the
    // kernel only reads them.
    let rc = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast::<libc::c_void>(),
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Write `bytes` to `path` in a single `write` (the `/proc/self/{setgroups,uid_map,gid_map}`
/// files accept exactly one). Async-signal-safe.
pub fn write_file(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and lives for the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `bytes` is valid for `bytes.len()` bytes during the call.
    let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else if n as usize != bytes.len() {
        Err(io::Error::from_raw_os_error(libc::EIO))
    } else {
        Ok(())
    }
}

/// The calling thread's effective uid and gid. Async-signal-safe.
pub fn effective_ids() -> (u32, u32) {
    // SAFETY: geteuid and getegid take nothing and cannot fail.
    unsafe { (libc::geteuid(), libc::getegid()) }
}

/// `"<id> <id> 1"`, a one-line uid/gid map naming the same id inside and outside, formatted into
/// `buf` without allocating (so it can run after `fork`).
pub fn id_map_line(id: u32, buf: &mut [u8; 32]) -> &[u8] {
    let mut digits = [0u8; 10];
    let mut n = id;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut at = 0;
    for _ in 0..2 {
        for i in (0..len).rev() {
            buf[at] = digits[i];
            at += 1;
        }
        buf[at] = b' ';
        at += 1;
    }
    buf[at] = b'1';
    &buf[..at + 1]
}

/// Fork; the child runs `f` and sends its answer back over a pipe, then exits without running
/// any destructor. `f` must be async-signal-safe (the caller may be multi-threaded). Used to try
/// something irreversible (entering namespaces) in a throwaway process.
pub fn in_forked_child<const N: usize>(f: &dyn Fn() -> [u8; N]) -> io::Result<[u8; N]> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: after fork the child only runs `f` (async-signal-safe by contract), write and
    // _exit; it never returns into Rust code that could touch locks held by other threads.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        let answer = f();
        // SAFETY: `answer` lives on this stack for the call; _exit never returns.
        unsafe {
            libc::write(write_end.as_raw_fd(), answer.as_ptr().cast(), N);
            libc::_exit(0);
        }
    }
    drop(write_end);
    let mut answer = [0u8; N];
    let mut got = 0;
    let read_result = loop {
        if got == N {
            break Ok(());
        }
        // SAFETY: the destination range lies inside `answer`.
        let n = unsafe {
            libc::read(
                read_end.as_raw_fd(),
                answer[got..].as_mut_ptr().cast(),
                N - got,
            )
        };
        match n {
            n if n > 0 => got += n as usize,
            0 => break Err(io::Error::from_raw_os_error(libc::EPIPE)),
            _ => {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    break Err(err);
                }
            }
        }
    };
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-pointer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
    }
    read_result.map(|()| answer)
}
