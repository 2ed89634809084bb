//! Raw system calls the jail needs, each in a small safe wrapper.
//!
//! Most of these run in the child between `fork` and `exec` (inside `pre_exec`), where only
//! async-signal-safe work is allowed: no allocation, no locks. Every wrapper here is a plain
//! syscall on memory prepared by the caller and returns `io::Result` built from `errno` (which
//! does not allocate).

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

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

/// `open(path, O_PATH | O_CLOEXEC)` for a NUL-terminated path. Async-signal-safe.
pub fn open_path(path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    open_path_at(None, path)
}

/// `open(path, O_PATH | O_CLOEXEC)` relative to `dir` (or the working directory). Async-signal-safe.
pub fn open_path_at(dir: Option<BorrowedFd<'_>>, path: &std::ffi::CStr) -> io::Result<OwnedFd> {
    let dir = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    // SAFETY: `path` is NUL-terminated and lives for the call; `dir` is open or AT_FDCWD.
    let fd = unsafe { libc::openat(dir, path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
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
    let mut at = 0;
    for _ in 0..2 {
        at += write_decimal(id, &mut buf[at..]);
        buf[at] = b' ';
        at += 1;
    }
    buf[at] = b'1';
    &buf[..at + 1]
}

/// `n` in decimal at the start of `out` (which has room for 10 digits); how many bytes.
/// Async-signal-safe.
pub fn write_decimal(mut n: u32, out: &mut [u8]) -> usize {
    let mut digits = [0u8; 10];
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..len {
        out[i] = digits[len - 1 - i];
    }
    len
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
    let reap = move || {
        let mut status = 0;
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                break;
            }
        }
    };
    // The answer is in; the child's exit tears down whatever namespaces it entered, which waits
    // for an RCU grace period (about 2 ms here). Nobody needs to wait for that: reap it aside.
    if read_result.is_err()
        || std::thread::Builder::new()
            .name("mcpjail-probe-reaper".into())
            .spawn(reap)
            .is_err()
    {
        reap();
    }
    read_result.map(|()| answer)
}

/// Start a new session (and process group) led by the calling process: it loses its controlling
/// terminal, and everything it starts can be found (and ended) by session id. Async-signal-safe.
pub fn setsid() -> io::Result<()> {
    // SAFETY: setsid takes nothing.
    if unsafe { libc::setsid() } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Make the calling process the leader of a process group of its own, in the same session:
/// the proxy reaches it and everything it starts with one `kill(-pgid)`, and a terminal's
/// job-control signals (Ctrl-C, sent to the foreground group) reach the proxy, which passes them
/// on, not the server a second time. Async-signal-safe.
pub fn own_process_group() -> io::Result<()> {
    // SAFETY: setpgid takes integers only.
    if unsafe { libc::setpgid(0, 0) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Give up the controlling terminal, if there is one, without leaving the session:
/// `TIOCNOTTY` on `dev_tty` (`/dev/tty`), which for a process that leads no session clears its
/// own tie only. Afterwards `/dev/tty` cannot be opened (ENXIO), and the process cannot take a
/// terminal again without leading a session (seccomp refuses `setsid`). Async-signal-safe.
pub fn drop_controlling_terminal(dev_tty: &CStr) -> io::Result<()> {
    // SAFETY: `dev_tty` is NUL-terminated and lives for the call.
    let fd = unsafe {
        libc::open(
            dev_tty.as_ptr(),
            // O_NONBLOCK: a serial line's open may otherwise wait for its carrier.
            libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let err = io::Error::last_os_error();
        // No controlling terminal (ENXIO), no `/dev/tty` to reach one by (ENOENT), or one that
        // was hung up (EIO): nothing is left to give up or to inject into.
        return match err.raw_os_error() {
            Some(libc::ENXIO | libc::ENOENT | libc::EIO) => Ok(()),
            _ => Err(err),
        };
    }
    // SAFETY: `fd` was just opened; TIOCNOTTY takes no argument.
    let rc = unsafe { libc::ioctl(fd, libc::TIOCNOTTY) };
    let err = io::Error::last_os_error();
    // SAFETY: `fd` was opened above and is not used again.
    unsafe { libc::close(fd) };
    if rc < 0 {
        return Err(err);
    }
    Ok(())
}

/// `PR_SET_PDEATHSIG(SIGKILL)`: SIGKILL the calling process when the thread that started it
/// exits. Async-signal-safe.
fn set_death_signal() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// SIGKILL the calling process when the thread that forked it exits, and fail with `ESRCH` if
/// that parent (`parent_pid`) is already gone. Async-signal-safe.
pub fn die_with_parent(parent_pid: libc::pid_t) -> io::Result<()> {
    set_death_signal()?;
    // SAFETY: getppid takes nothing and cannot fail.
    if unsafe { libc::getppid() } != parent_pid {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Make every descriptor from 3 up close at `exec` (`close_range(3, ~0, CLOSE_RANGE_CLOEXEC)`,
/// falling back to `fcntl` one by one below the descriptor limit). Marked rather than closed:
/// the spawner's own error pipe must stay open until the `exec` succeeds. Async-signal-safe.
pub fn cloexec_from_3() -> io::Result<()> {
    // SAFETY: close_range takes integers only.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let top = lim.rlim_cur.min(1 << 20) as libc::c_int;
    for fd in 3..top {
        // SAFETY: fcntl on an integer fd; a closed fd answers EBADF, which is skipped.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            // SAFETY: as above.
            unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) };
        }
    }
    Ok(())
}

/// Whether `fd` is a terminal (`TCGETS` succeeds). Async-signal-safe.
pub fn is_terminal(fd: libc::c_int) -> bool {
    // SAFETY: `t` is a valid termios the kernel writes into during the call.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        libc::ioctl(fd, libc::TCGETS, &mut t) == 0
    }
}

/// Put `/dev/null` in place of every standard descriptor that is a terminal: a jailed server
/// never holds one (no `TIOCSTI` keystroke injection, no escape sequences written straight
/// to the user's terminal; what it writes to the stderr pipe the proxy copies with its
/// terminal controls shown, see `proxy::child`). Async-signal-safe.
pub fn stdio_off_terminals(dev_null: &CStr) -> io::Result<()> {
    for fd in 0..3 {
        if !is_terminal(fd) {
            continue;
        }
        // SAFETY: `dev_null` is NUL-terminated and lives for the call.
        let null = unsafe { libc::open(dev_null.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if null < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: both are open descriptors of this process; dup2 clears CLOEXEC on `fd`.
        let rc = unsafe { libc::dup2(null, fd) };
        // SAFETY: `null` was opened above and is not used again.
        unsafe { libc::close(null) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A resource limit the jail lowers.
#[derive(Debug, Clone, Copy)]
pub enum Limit {
    Core,
    OpenFiles,
    FileSize,
}

/// Lower a resource limit to at most `max` (soft and hard); never raises one. Async-signal-safe.
pub fn lower_rlimit(limit: Limit, max: u64) -> io::Result<()> {
    let resource = match limit {
        Limit::Core => libc::RLIMIT_CORE,
        Limit::OpenFiles => libc::RLIMIT_NOFILE,
        Limit::FileSize => libc::RLIMIT_FSIZE,
    };
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid out-pointer for the call.
    if unsafe { libc::getrlimit(resource, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let hard = lim.rlim_max.min(max);
    let new = libc::rlimit {
        rlim_cur: lim.rlim_cur.min(hard),
        rlim_max: hard,
    };
    // SAFETY: `new` is a valid rlimit read by the kernel during the call.
    if unsafe { libc::setrlimit(resource, &new) } != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_SETPCAP: u32 = 8;

/// The highest capability number this kernel knows, asked in the parent: `PR_CAPBSET_READ`
/// answers `EINVAL` past it, so a binary search over 0..=63 takes six `prctl`s, where reading
/// `/proc/sys/kernel/cap_last_cap` (a first lookup in this process's `/proc`) took ~20–40 µs of
/// every start. Any other answer (a filter refusing `prctl`) falls back to that file, and 63
/// when it cannot be read either (dropping unknown capabilities fails harmlessly; dropping too
/// few would not, so an error is never taken for "unknown").
pub fn cap_last_cap() -> u32 {
    let known = |cap: u32| {
        // SAFETY: PR_CAPBSET_READ reads one bit of this process's bounding set.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_READ, libc::c_ulong::from(cap), 0, 0, 0) };
        match rc {
            0.. => Some(true),
            _ if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) => Some(false),
            _ => None,
        }
    };
    let searched = (|| {
        if !known(0)? {
            return None;
        }
        // `low` is known, `high` is not (a bounding set has 64 bits).
        let (mut low, mut high) = (0u32, 64u32);
        while high - low > 1 {
            let mid = (low + high) / 2;
            if known(mid)? {
                low = mid;
            } else {
                high = mid;
            }
        }
        Some(low)
    })();
    searched.unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63)
    })
}

/// The effective capabilities numbered below 32 (`capget`, v3). Async-signal-safe.
fn effective_caps_low() -> io::Result<u32> {
    let mut header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: `header` and `data` are the v3 structures capget expects (two data words).
    if unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(data[0].effective)
}

/// Drop every capability: the bounding set (when the process may: `CAP_SETPCAP`), the ambient
/// set, and the effective, permitted and inheritable sets. After this (and with no_new_privs)
/// not even uid 0 regains a capability at `exec`. Async-signal-safe.
pub fn drop_all_capabilities(last_cap: u32) -> io::Result<()> {
    if effective_caps_low()? & (1 << CAP_SETPCAP) != 0 {
        for cap in 0..=last_cap {
            // SAFETY: prctl with integer arguments only.
            let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
            if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return Err(io::Error::last_os_error());
            }
        }
    }
    // SAFETY: prctl with integer arguments only. EINVAL: a kernel without ambient capabilities.
    let rc = unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
        return Err(io::Error::last_os_error());
    }
    let zero = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    // SAFETY: as for capget; the kernel only reads `zero`.
    if unsafe { libc::syscall(libc::SYS_capset, &header, zero.as_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Send `signal` to every process whose session id is `sid` (the server's session: see
/// [`setsid`]); returns how many were signalled. Each candidate found in `/proc` is pinned with
/// a pidfd and its session checked again through it, so a pid reused in between is never hit.
pub fn signal_session(sid: libc::pid_t, signal: libc::c_int) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut hit = 0;
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<libc::pid_t>().ok())
        else {
            continue;
        };
        if session_of(pid) != Some(sid) {
            continue;
        }
        // SAFETY: pidfd_open takes integers only.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
        if fd < 0 {
            continue;
        }
        // SAFETY: `fd` was just returned by pidfd_open and is owned by nobody else.
        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        // The pidfd now names this process for good: if the pid was reused before it was
        // opened, the session check below reads the new process and fails.
        if session_of(pid) != Some(sid) {
            continue;
        }
        // SAFETY: plain syscall on an open pidfd; no siginfo (NULL), flags 0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                signal,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        if rc == 0 {
            hit += 1;
        }
    }
    hit
}

/// The session id of `pid`, from `/proc/<pid>/stat` (the sixth field; the second, the command
/// name, may hold spaces and parentheses, so fields are counted from the last `)`).
fn session_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // state ppid pgrp session
    rest.split_whitespace().nth(3)?.parse().ok()
}

/// Send `signal` to process group `pgid`; whether any process got it.
pub fn killpg(pgid: libc::pid_t, signal: libc::c_int) -> bool {
    // SAFETY: killpg takes integers only.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// The process group of `pid` as the kernel answers `getpgid`, or `None` if it is gone.
pub fn getpgid(pid: libc::pid_t) -> Option<libc::pid_t> {
    // SAFETY: getpgid takes an integer only.
    let pgid = unsafe { libc::getpgid(pid) };
    (pgid >= 0).then_some(pgid)
}

/// The session id of `pid` as the kernel answers `getsid`, or `None` if it is gone.
pub fn getsid(pid: libc::pid_t) -> Option<libc::pid_t> {
    // SAFETY: getsid takes an integer only.
    let sid = unsafe { libc::getsid(pid) };
    (sid >= 0).then_some(sid)
}

/// `struct mount_attr` (uapi `linux/mount.h`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;

/// Make the mount at `path` read-only (`readonly`) or writable again, and with `recursive` every
/// mount below it too (`mount_setattr`, Linux 5.12). Async-signal-safe.
pub fn set_mount_readonly(path: &CStr, readonly: bool, recursive: bool) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: if readonly { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if readonly { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: `path` is NUL-terminated and `attr` a valid mount_attr; both live for the call and
    // the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `chdir(path)`. Async-signal-safe.
pub fn chdir(path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and lives for the call.
    if unsafe { libc::chdir(path.as_ptr()) } != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `fork()` as a raw `clone(SIGCHLD)`: in a child forked from a multi-threaded process (inside
/// `pre_exec`), glibc's `fork` would run the `atfork` handlers and take the malloc locks, which
/// another thread of the parent may have held at the first fork. Returns 0 in the child and the
/// child's pid in the parent. Async-signal-safe.
pub fn raw_fork() -> io::Result<libc::pid_t> {
    // SAFETY: clone without CLONE_VM and with a NULL stack behaves as fork: the child runs on a
    // copy-on-write copy of this stack. No pointer argument is passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as libc::pid_t)
    }
}

/// A pipe, both ends close-on-exec. Async-signal-safe.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Signals the shim and the init ignore: the proxy's graceful shutdown (SIGTERM to the whole
/// session) is for the server itself; they only report how it ended.
const RELAY_IGNORES: &[libc::c_int] = &[
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGPIPE,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// Close every descriptor except `keep`. Async-signal-safe.
fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range takes integers only; the ranges exclude `keep`.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
    }
}

/// Ignore [`RELAY_IGNORES`]. Async-signal-safe.
fn ignore_relay_signals() {
    for sig in RELAY_IGNORES {
        // SAFETY: setting a standard signal's disposition to SIG_IGN.
        unsafe { libc::signal(*sig, libc::SIG_IGN) };
    }
}

/// Ignore [`RELAY_IGNORES`], close every descriptor but `keep`. Async-signal-safe.
fn become_relay(keep: libc::c_int) {
    ignore_relay_signals();
    close_all_but(keep);
}

/// `waitpid(pid)` until it answers; the wait status, or `None` on an error other than EINTR.
/// Async-signal-safe.
fn wait_status(pid: libc::pid_t) -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got >= 0 {
            return Some((got, status));
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return None;
        }
    }
}

/// Reap `pid`, a child that exited or is about to. Async-signal-safe.
pub fn reap(pid: libc::pid_t) {
    wait_status(pid);
}

/// A pidfd for `pid` (`pidfd_open`, Linux 5.3), close-on-exec.
pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes integers only.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    fd_result(fd)
}

/// The calling thread's signal mask, saved by [`SignalMask::block_all`] and restored on drop.
pub struct SignalMask(libc::sigset_t);

impl SignalMask {
    /// Block every signal in the calling thread until the value drops.
    pub fn block_all() -> io::Result<SignalMask> {
        // SAFETY: both sets are valid for the calls; sigfillset initialises `all`.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            match libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) {
                0 => Ok(SignalMask(old)),
                e => Err(io::Error::from_raw_os_error(e)),
            }
        }
    }

    /// Unblock every signal in the calling thread, as std's `Command` does in its child.
    /// Async-signal-safe.
    pub fn clear() -> io::Result<()> {
        // SAFETY: an empty set, valid for the call.
        unsafe {
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            match libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut()) {
                0 => Ok(()),
                e => Err(io::Error::from_raw_os_error(e)),
            }
        }
    }
}

impl Drop for SignalMask {
    fn drop(&mut self) {
        // SAFETY: the set saved by `block_all`.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut()) };
    }
}

/// Set every signal that has a handler back to its default (an ignored one stays ignored, as
/// across `exec`), and `SIGPIPE` to its default, as std's `Command` does in its child. For a
/// child that shares its parent's memory, where the parent's handlers must not run.
/// Async-signal-safe.
pub fn reset_signal_handlers() {
    for sig in 1..=libc::SIGRTMAX() {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: `old` is a valid out-pointer; a query changes nothing.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
            continue;
        }
        if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            // SAFETY: setting a signal's disposition to its default.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
    // SAFETY: as above.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// End the calling process the way `status` (a wait status) says a process ended: the same exit
/// code, or killed by the same signal. Never returns. Async-signal-safe.
fn exit_like(status: libc::c_int) -> ! {
    // SAFETY: raw signal and exit calls; `set` is a valid sigset on this stack.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Why [`enter_pid_namespace`] came back instead of the server running.
pub enum PidNsFailure {
    /// The namespace, its init or the server's process could not be made (the kernel refused).
    Namespace(io::Error),
    /// The server's process was made but failed before `exec`, or `exec` failed.
    Server(io::Error),
}

/// Start the server in a new PID namespace, under a tiny init. Async-signal-safe (runs in
/// `pre_exec`). With `start`, never returns when the server starts: it comes back, in the shim
/// or the init, only with the error that stopped it, for the spawner to report. Without, it
/// returns `Ok(())` in the server's process, forked by the init, which goes on to be confined and
/// exec'd by the spawner (so hooks the caller added after the jail's run in it).
///
/// A process cannot enter the PID namespace it unshares (only its children are created there,
/// and it could no longer start threads), and the namespace's pid 1 ignores every signal it has
/// no handler for, SIGTERM included. So three processes:
///
/// * the **shim** (the caller: the process the proxy spawned and waits for) stays outside;
/// * the **init** (pid 1), tied to the shim with `PR_SET_PDEATHSIG(SIGKILL)`, reaps every
///   orphan, and when the server exits sends its wait status to the shim and exits — which makes
///   the kernel kill whatever is left in the namespace;
/// * the **server** (pid 2) runs `start.run` (its confinement, then `exec`; it returns only the
///   error that stopped it) and gets signals as usual.
///
/// With `start`, the init starts the server with a `vfork`-style clone (`CLONE_VM |
/// CLONE_VFORK`, on a stack of its own): the init is suspended until the server's `exec`, and no
/// copy of the address space is made only to be thrown away by that `exec` (a fork here costs
/// ~0.1 ms more, see README, Benchmarks). Until its `exec` the server's process shares the
/// init's memory, so `start.run` must be async-signal-safe and must not allocate; it has its own
/// credentials, descriptor table, signal dispositions and limits, which is where the confinement
/// goes.
///
/// The shim and the init hold no descriptor but their status pipe (the spawner's error pipe is
/// closed, so the spawn completes with the server's `exec`) and ignore the terminating signals;
/// the shim ends the way the server did. A SIGKILL to the shim (or its death signal when the
/// proxy dies) kills the init, and so every process in the namespace.
pub fn enter_pid_namespace(start: Option<&ServerStart>) -> Result<(), PidNsFailure> {
    let ns = |e| Err(PidNsFailure::Namespace(e));
    if let Err(e) = unshare(libc::CLONE_NEWPID) {
        return ns(e);
    }
    if let Some(start) = start {
        if let Some(reaper) = start.reaper {
            return Err(start_under_reaper(start, reaper));
        }
    }
    // `alive`: its write end is held only by the shim, so the init can tell whether the shim
    // died before PR_SET_PDEATHSIG took effect (getppid cannot: the shim lies outside the
    // namespace, so it reads 0 either way). `ready`: the init says it is tied. `status`: the
    // server's wait status, from the init to the shim.
    let pipes = (|| Ok::<_, io::Error>((pipe()?, pipe()?, pipe()?)))();
    let ((alive_r, alive_w), (ready_r, ready_w), (status_r, status_w)) = match pipes {
        Ok(p) => p,
        Err(e) => return ns(e),
    };
    let init = match raw_fork() {
        Ok(pid) => pid,
        Err(e) => return ns(e),
    };
    if init == 0 {
        drop((alive_w, ready_r, status_r));
        if let Err(e) = tie_to_shim(alive_r.as_raw_fd()) {
            return ns(e);
        }
        // SAFETY: one byte from a static buffer to an open pipe.
        unsafe { libc::write(ready_w.as_raw_fd(), b"1".as_ptr().cast(), 1) };
        drop((alive_r, ready_w));
        let server = match start {
            Some(start) => vfork_run(start)?,
            None => match raw_fork() {
                Ok(0) => {
                    drop(status_w);
                    return Ok(());
                }
                Ok(pid) => pid,
                Err(e) => return ns(e),
            },
        };
        become_relay(status_w.as_raw_fd());
        loop {
            match wait_status(-1) {
                Some((pid, status)) if pid == server => {
                    let bytes = status.to_ne_bytes();
                    // SAFETY: four bytes from `bytes` to an open pipe.
                    unsafe { libc::write(status_w.as_raw_fd(), bytes.as_ptr().cast(), 4) };
                    // SAFETY: _exit never returns; the kernel then ends the namespace.
                    unsafe { libc::_exit(0) };
                }
                Some(_) => continue,
                // SAFETY: as above (no child left: the server is gone).
                None => unsafe { libc::_exit(127) },
            }
        }
    }
    drop((alive_r, ready_w, status_w));
    let mut byte = [0u8; 1];
    // SAFETY: one byte into `byte`, which lives for the call. Whatever it answers (the init may
    // have failed before saying it is tied), the shim waits for it below.
    while unsafe { libc::read(ready_r.as_raw_fd(), byte.as_mut_ptr().cast(), 1) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
    drop((ready_r, alive_w));
    become_relay(status_r.as_raw_fd());
    relay_as_shim(init, status_r.as_raw_fd())
}

/// The shim's last part, once the init runs: wait for the init, then end the way the server did
/// (the status the init sent on `status_r`, or the init's own). Never returns. Async-signal-safe.
fn relay_as_shim(init: libc::pid_t, status_r: libc::c_int) -> ! {
    let Some((_, init_status)) = wait_status(init) else {
        // SAFETY: _exit never returns.
        unsafe { libc::_exit(127) }
    };
    let mut bytes = [0u8; 4];
    // SAFETY: four bytes into `bytes`; the init has exited, so this does not block.
    let n = unsafe { libc::read(status_r, bytes.as_mut_ptr().cast(), 4) };
    exit_like(if n == 4 {
        libc::c_int::from_ne_bytes(bytes)
    } else {
        init_status
    })
}

/// [`enter_pid_namespace`] with the reaper (see [`super::reaper`]), called in the shim right
/// after it unshared the PID namespace; returns only the failure that stopped the server.
///
/// The init is not a fork: the shim starts it with a `vfork`-style clone (it is suspended until
/// the init's `exec`), the init ties itself to the shim, starts the server the same way, and
/// execs the reaper in its `init` mode; then the shim execs the reaper in its `shim` mode. Both
/// then hold nothing of the proxy's memory (and, started by [`super::spawn`], never held a copy
/// of it). What crosses each `exec`: the ignored signals ([`RELAY_IGNORES`]), the init's death
/// signal, the status pipe's end; every other descriptor is closed (std's error pipe, on the
/// forked path, by its close-on-exec flag at the shim's `exec`).
///
/// If the shim's `exec` fails it goes on as the in-process shim does (or, sharing the proxy's
/// memory, fails the spawn). If the init's fails, the server (already running) dies with the
/// namespace and the spawn fails with that error: the init cannot go on in memory it shares
/// with the suspended shim.
fn start_under_reaper(start: &ServerStart, reaper: libc::c_int) -> PidNsFailure {
    let pipes = (|| Ok::<_, io::Error>((pipe()?, pipe()?)))();
    let ((alive_r, alive_w), (status_r, status_w)) = match pipes {
        Ok(p) => p,
        Err(e) => return PidNsFailure::Namespace(e),
    };
    let mut shared = InitShared {
        start,
        reaper,
        alive_r: alive_r.as_raw_fd(),
        alive_w: alive_w.as_raw_fd(),
        status_r: status_r.as_raw_fd(),
        status_w: status_w.as_raw_fd(),
        failure: None,
    };
    let init = match clone_vm_vfork(
        init_entry,
        (&mut shared as *mut InitShared).cast(),
        HOOK_STACK,
    ) {
        Ok(pid) => pid,
        Err(e) => return PidNsFailure::Namespace(e),
    };
    // SAFETY: written by the init (same memory) before its exit; it has exec'd or exited now.
    let failure = unsafe { std::ptr::read_volatile(&shared.failure) };
    if let Some((server_failed, errno)) = failure {
        wait_status(init);
        let err = io::Error::from_raw_os_error(errno);
        return match server_failed {
            true => PidNsFailure::Server(err),
            false => PidNsFailure::Namespace(err),
        };
    }
    drop((alive_r, alive_w, status_w));
    ignore_relay_signals();
    keep_only_across_exec(status_r.as_raw_fd());
    let err = super::reaper::exec(reaper, c"shim", init as u32, status_r.as_raw_fd() as u32);
    if start.shim_shares_memory {
        // The proxy is suspended until this process execs or exits: it cannot stay as the
        // shim. Its exit takes the init (death signal) and so the server with it.
        return PidNsFailure::Server(err);
    }
    become_relay(status_r.as_raw_fd());
    relay_as_shim(init, status_r.as_raw_fd())
}

/// What the init shares with the shim that cloned it: its inputs, and why it stopped if it did
/// (whether the server's process failed, and the errno).
struct InitShared<'a> {
    start: &'a ServerStart<'a>,
    reaper: libc::c_int,
    alive_r: libc::c_int,
    alive_w: libc::c_int,
    status_r: libc::c_int,
    status_w: libc::c_int,
    failure: Option<(bool, libc::c_int)>,
}

extern "C" fn init_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `InitShared` of `start_under_reaper`, whose frame lives (suspended)
    // until this process execs or exits.
    let shared = unsafe { &mut *arg.cast::<InitShared>() };
    let failure = match init_until_reaper(shared) {
        PidNsFailure::Namespace(e) => (false, e),
        PidNsFailure::Server(e) => (true, e),
    };
    shared.failure = Some((failure.0, failure.1.raw_os_error().unwrap_or(libc::EIO)));
    // SAFETY: _exit never returns and runs nothing of the shared memory's owner. The server, if
    // it runs, dies with the namespace.
    unsafe { libc::_exit(127) }
}

/// The init (pid 1 of the new namespace, sharing the shim's memory): tie itself to the shim,
/// start the server, exec the reaper. Returns only what stopped it. Async-signal-safe.
fn init_until_reaper(shared: &InitShared) -> PidNsFailure {
    let ns = PidNsFailure::Namespace;
    // SAFETY: closing this process's own copies (its descriptor table is not shared).
    unsafe {
        libc::close(shared.alive_w);
        libc::close(shared.status_r);
    }
    if let Err(e) = tie_to_shim(shared.alive_r) {
        return ns(e);
    }
    let server = match vfork_run(shared.start) {
        Ok(pid) => pid,
        Err(failure) => return failure,
    };
    ignore_relay_signals();
    keep_only_across_exec(shared.status_w);
    PidNsFailure::Server(super::reaper::exec(
        shared.reaper,
        c"init",
        shared.status_w as u32,
        server as u32,
    ))
}

/// The init ties itself to the shim: SIGKILL when the shim dies, and `ESRCH` if it already has
/// (`alive_r`: the read end of a pipe whose only writer is the shim, so the init can tell
/// whether the shim died before the death signal took effect; `getppid` cannot, the shim lying
/// outside the namespace). Async-signal-safe.
fn tie_to_shim(alive_r: libc::c_int) -> io::Result<()> {
    set_death_signal()?;
    let mut p = libc::pollfd {
        fd: alive_r,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    if unsafe { libc::poll(&mut p, 1, 0) } != 0 {
        // The only writer is gone: the shim (and so the proxy) died.
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Before an `exec` that must keep only `keep`: close stdio, mark every other descriptor
/// close-on-exec, clear it on `keep`. Async-signal-safe.
fn keep_only_across_exec(keep: libc::c_int) {
    // SAFETY: close_range and fcntl take integers only; `keep` is above 2 (stdio is open).
    unsafe {
        libc::syscall(libc::SYS_close_range, 0u32, 2u32, 0u32);
    }
    let _ = cloexec_from_3();
    // SAFETY: as above.
    unsafe { libc::fcntl(keep, libc::F_SETFD, 0) };
}

/// The server's process, started by the init: `run` confines it and execs, returning only the
/// error that stopped it; `argc` sizes its stack.
pub struct ServerStart<'a> {
    pub run: &'a dyn Fn() -> io::Error,
    pub argc: usize,
    /// The reaper's memfd ([`super::reaper::Reaper`]), for the shim and the init to become.
    pub reaper: Option<libc::c_int>,
    /// The shim shares the proxy's memory (see [`super::spawn`]): it must `exec` or fail.
    pub shim_shares_memory: bool,
}

/// The stack of a `vfork`-style shim or init: the jail's hook and the clones it makes need a few
/// KiB (the server's process gets a stack of its own, [`VFORK_STACK`]).
pub const HOOK_STACK: usize = 1 << 18;

/// The stack of the `vfork`-style child beyond `argv`: its confinement needs a few KiB, glibc's
/// `execvp` puts the `PATH` candidates on it, and for a script without `#!` a copy of `argv`
/// (one pointer per argument, added on top: up to ~2 MB of them fit in `ARG_MAX`).
const VFORK_STACK: usize = 1 << 20;

/// What the `vfork`-style child shares with its parent: what to run, and the errno it failed
/// with (0 until then).
struct VforkShared<'a> {
    run: &'a dyn Fn() -> io::Error,
    errno: libc::c_int,
}

extern "C" fn vfork_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `VforkShared` of `vfork_run`, whose frame lives (suspended) until
    // this process execs or exits.
    let shared = unsafe { &mut *arg.cast::<VforkShared>() };
    let err = (shared.run)();
    shared.errno = err.raw_os_error().unwrap_or(libc::EIO);
    // SAFETY: _exit never returns and runs nothing of the shared memory's owner.
    unsafe { libc::_exit(127) }
}

/// Run `start` in a child that shares this process's memory until its `exec`, this process
/// suspended meanwhile (what glibc's `posix_spawn` does). The child's pid once it has exec'd;
/// its error otherwise (the child reaped). Async-signal-safe.
fn vfork_run(start: &ServerStart) -> Result<libc::pid_t, PidNsFailure> {
    let stack = VFORK_STACK + (start.argc + 2) * std::mem::size_of::<usize>();
    let mut shared = VforkShared {
        run: start.run,
        errno: 0,
    };
    let pid = clone_vm_vfork(vfork_child, (&mut shared as *mut VforkShared).cast(), stack)
        .map_err(PidNsFailure::Namespace)?;
    // SAFETY: written by the child (same memory) before its _exit; it is gone or exec'd now.
    let errno = unsafe { std::ptr::read_volatile(&shared.errno) };
    if errno != 0 {
        wait_status(pid);
        return Err(PidNsFailure::Server(io::Error::from_raw_os_error(errno)));
    }
    Ok(pid)
}

/// `clone(CLONE_VM | CLONE_VFORK)`: `entry(arg)` runs in a child that shares this process's
/// memory, on a stack of its own (`stack_size` bytes and a guard page below), this process
/// suspended until the child execs or exits. The child's pid. Async-signal-safe.
pub fn clone_vm_vfork(
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
    stack_size: usize,
) -> io::Result<libc::pid_t> {
    let page = 4096;
    let size = stack_size.next_multiple_of(page);
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // The lowest page is the guard: an overflow faults instead of writing below the mapping.
    // SAFETY: the first page of the mapping made above.
    if unsafe { libc::mprotect(stack, page, libc::PROT_NONE) } != 0 {
        let err = io::Error::last_os_error();
        // SAFETY: the mapping made above, not used by anything yet.
        unsafe { libc::munmap(stack, size + page) };
        return Err(err);
    }
    // SAFETY: the stack grows down from the mapping's end (16-byte aligned: page aligned);
    // `arg` outlives the child's use of it, since CLONE_VFORK suspends this process until the
    // child execs or exits. No CLONE_SETTLS: the child runs on this thread's TLS, which nothing
    // here touches meanwhile (errno aside, read below only when no child ran).
    let pid = unsafe {
        libc::clone(
            entry,
            stack.cast::<u8>().add(size + page).cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            arg,
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: the mapping made above; after an exec or exit no process runs on it.
    unsafe { libc::munmap(stack, size + page) };
    if pid < 0 {
        return Err(clone_error);
    }
    Ok(pid)
}

/// Whether this process may create a PID namespace and start its init: tried in a throwaway
/// child (after the same namespaces the server's child enters). `Err(errno)` if not.
/// Async-signal-safe.
pub fn try_pid_namespace() -> Result<(), i32> {
    let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    unshare(libc::CLONE_NEWPID).map_err(errno)?;
    let pid = raw_fork().map_err(errno)?;
    if pid == 0 {
        // SAFETY: _exit never returns and runs no destructor.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-pointer.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(errno(err));
        }
    }
    Ok(())
}

/// `struct open_how` (uapi `linux/openat2.h`).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;

/// Open `path` (absolute, canonical) with `O_PATH`, refusing with `ELOOP` if it or any
/// directory on the way is a symlink at the moment of the open: the object opened is the one
/// the path names, never a link's target. `openat2(RESOLVE_NO_SYMLINKS)` (Linux 5.6); before
/// that, `O_PATH | O_NOFOLLOW` and a check through `/proc/self/fd` that the opened object's path
/// is `path` itself.
pub fn open_exact(path: &CStr) -> io::Result<OwnedFd> {
    match openat2_no_symlinks(path) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {}
        opened => return opened,
    }
    // SAFETY: `path` is NUL-terminated and lives for the call.
    let fd = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: `st` is a valid out-pointer; fstat on an O_PATH descriptor is allowed (3.6+).
    let is_link = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd.as_raw_fd(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        st.st_mode & libc::S_IFMT == libc::S_IFLNK
    };
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
    if is_link || std::os::unix::ffi::OsStrExt::as_bytes(opened.as_os_str()) != path.to_bytes() {
        return Err(io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(fd)
}

// The new mount API (Linux 5.2): mounts made on descriptors, not re-walked paths.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const FSOPEN_CLOEXEC: libc::c_uint = 1;
const FSMOUNT_CLOEXEC: libc::c_uint = 1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
/// `MOUNT_ATTR_RDONLY | NOSUID | NODEV | NOEXEC`: every mask is sealed with these. Adding
/// them also keeps any that are locked on the source mount; the atime mode is left alone.
pub const MOUNT_ATTR_SEALED: u64 = 0x1 | 0x2 | 0x4 | 0x8;

fn fd_result(rc: libc::c_long) -> io::Result<OwnedFd> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: `rc` is a descriptor the kernel just returned, owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(rc as libc::c_int) })
    }
}

fn unit_result(rc: libc::c_long) -> io::Result<()> {
    if rc != 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `openat2(path, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: `ENOSYS` before Linux
/// 5.6, for the callers' own fallbacks. Async-signal-safe (one syscall).
pub fn openat2_no_symlinks(path: &CStr) -> io::Result<OwnedFd> {
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: `path` is NUL-terminated and `how` a valid open_how; both live for the call and
    // the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    fd_result(rc)
}

/// Open `path` with `O_PATH`, refusing with `ELOOP` if it or any directory on the way is a
/// symlink now (`openat2(RESOLVE_NO_SYMLINKS)`; before Linux 5.6, `O_NOFOLLOW`: the last
/// component only). For the forked child: async-signal-safe, unlike [`open_exact`].
pub fn open_no_symlinks(path: &CStr) -> io::Result<OwnedFd> {
    match openat2_no_symlinks(path) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            // SAFETY: `path` is NUL-terminated and lives for the call.
            let fd = unsafe {
                libc::open(
                    path.as_ptr(),
                    libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            fd_result(fd as libc::c_long)
        }
        other => other,
    }
}

/// `open_tree(fd, "", OPEN_TREE_CLONE | AT_EMPTY_PATH [| AT_RECURSIVE])`: a detached copy of
/// the mount (tree) at the object `fd` names. Async-signal-safe.
pub fn clone_tree_of(fd: BorrowedFd<'_>, recursive: bool) -> io::Result<OwnedFd> {
    let flags = OPEN_TREE_CLONE
        | libc::O_CLOEXEC as libc::c_uint
        | libc::AT_EMPTY_PATH as libc::c_uint
        | if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: the path is a static empty C string; the kernel only reads it.
    let rc = unsafe { libc::syscall(libc::SYS_open_tree, fd.as_raw_fd(), c"".as_ptr(), flags) };
    fd_result(rc)
}

/// `open_tree(AT_FDCWD, path, OPEN_TREE_CLONE)`. Async-signal-safe.
pub fn clone_tree_at(path: &CStr) -> io::Result<OwnedFd> {
    let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint;
    // SAFETY: `path` is NUL-terminated and lives for the call.
    let rc = unsafe { libc::syscall(libc::SYS_open_tree, libc::AT_FDCWD, path.as_ptr(), flags) };
    fd_result(rc)
}

/// `mount_setattr(fd, "", AT_EMPTY_PATH, {set, clr})` on the mount `fd` is (a detached tree
/// from [`clone_tree_of`] included), not recursive. Async-signal-safe.
pub fn set_mount_attr_fd(fd: BorrowedFd<'_>, set: u64, clear: u64) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: the path is a static empty C string and `attr` a valid mount_attr; both live for
    // the call and the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    unit_result(rc)
}

/// `move_mount(tree, "", target, "", F_EMPTY_PATH | T_EMPTY_PATH)`: attach the detached `tree`
/// on the object `target` names (the opened object, never a path walked again).
/// Async-signal-safe.
pub fn attach_tree(tree: BorrowedFd<'_>, target: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: both paths are static empty C strings; the kernel only reads them.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            target.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    unit_result(rc)
}

/// A new detached tmpfs (`fsopen`/`fsconfig`/`fsmount`) with one string option and the mount
/// attributes `attrs`. Async-signal-safe.
pub fn detached_tmpfs(key: &CStr, value: &CStr, attrs: u64) -> io::Result<OwnedFd> {
    // SAFETY: static NUL-terminated name.
    let fs =
        fd_result(unsafe { libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) })?;
    // SAFETY: `key` and `value` are NUL-terminated and live for the call.
    unit_result(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_SET_STRING,
            key.as_ptr(),
            value.as_ptr(),
            0,
        )
    })?;
    // SAFETY: no pointer arguments.
    unit_result(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            fs.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    })?;
    // SAFETY: no pointer arguments.
    fd_result(unsafe { libc::syscall(libc::SYS_fsmount, fs.as_raw_fd(), FSMOUNT_CLOEXEC, attrs) })
}

/// Move this process into a network namespace of its own, which holds only a loopback
/// interface, bring loopback up, and hand a TCP listener on `127.0.0.1:port` there to the proxy
/// over `to_proxy` (a UNIX socket; `SCM_RIGHTS`). The proxy accepts on it from outside and
/// dials out from its own namespace: the server can reach the egress proxy and nothing else.
/// Async-signal-safe (runs in `pre_exec`): raw syscalls on stack memory only.
pub fn enter_net_namespace(port: u16, to_proxy: BorrowedFd<'_>) -> io::Result<()> {
    unshare(libc::CLONE_NEWNET)?;
    loopback_up()?;
    let listener = loopback_listener(port)?;
    send_fd(to_proxy, listener.as_fd())
}

/// Whether this process may create a network namespace and listen on its loopback: tried in a
/// throwaway child (after the same namespaces the server's child enters). Async-signal-safe.
pub fn try_net_namespace() -> Result<(), i32> {
    let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EIO);
    unshare(libc::CLONE_NEWNET).map_err(errno)?;
    loopback_up().map_err(errno)?;
    loopback_listener(0).map(drop).map_err(errno)
}

fn socket(domain: libc::c_int, kind: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket takes integers; a non-negative result is a new descriptor we own.
    let fd = unsafe { libc::socket(domain, kind | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `ip link set lo up`, with the SIOCGIFFLAGS/SIOCSIFFLAGS ioctls.
fn loopback_up() -> io::Result<()> {
    let s = socket(libc::AF_INET, libc::SOCK_DGRAM)?;
    // SAFETY: ifreq is plain data; all-zero is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in ifr.ifr_name.iter_mut().zip(b"lo") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: `ifr` is a valid ifreq the kernel reads and writes; `s` is an open socket.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut ifr) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    unsafe {
        ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: as above.
    if unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &ifr) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn loopback_listener(port: u16) -> io::Result<OwnedFd> {
    let fd = socket(libc::AF_INET, libc::SOCK_STREAM)?;
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: `addr` is a valid sockaddr_in of the given length.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen takes integers.
    if unsafe { libc::listen(fd.as_raw_fd(), 128) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

/// Send one descriptor over a UNIX socket (`SCM_RIGHTS`), with one byte of data.
fn send_fd(sock: BorrowedFd<'_>, fd: BorrowedFd<'_>) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // u64s for the alignment cmsghdr needs; 32 bytes >= CMSG_SPACE(sizeof(int)).
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; all-zero is valid (no name, no flags).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is arithmetic.
    msg.msg_controllen =
        unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as _;
    // SAFETY: `msg` points at `control`, which is large enough for one header plus an int, so
    // CMSG_FIRSTHDR is non-null and CMSG_DATA lies inside `control`.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), fd.as_raw_fd());
    }
    // SAFETY: `msg` and everything it points to are valid for the call.
    if unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receive a descriptor sent by [`send_fd`], without waiting: `Ok(None)` if none is there.
pub fn recv_fd(sock: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; all-zero is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: `msg` and its buffers are valid for the call.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        )
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(err),
        };
    }
    // SAFETY: the kernel filled `msg`; the CMSG macros walk only within msg_controllen.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let fd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                return Ok(Some(OwnedFd::from_raw_fd(fd)));
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok(None)
}

/// Whether this process holds `CAP_SYS_ADMIN` in its effective set: it can then create a mount
/// namespace by itself (otherwise the jail creates a user namespace first).
pub fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    effective_caps_low().is_ok_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// One word of memory shared with every process forked after it was made (`MAP_SHARED`): how a
/// child between `fork` and `exec` tells the parent *which* step failed, which the errno the
/// spawner passes back cannot say. Zero until a child writes.
#[derive(Debug)]
pub struct SharedWord {
    word: std::ptr::NonNull<std::sync::atomic::AtomicU64>,
}

// SAFETY: the mapping is only accessed through an atomic, and lives until Drop.
unsafe impl Send for SharedWord {}
// SAFETY: as above.
unsafe impl Sync for SharedWord {}

impl SharedWord {
    pub fn new() -> io::Result<Self> {
        // SAFETY: a fresh anonymous shared mapping of one page; no pointer argument.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let word = std::ptr::NonNull::new(ptr.cast::<std::sync::atomic::AtomicU64>())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(SharedWord { word })
    }

    /// Async-signal-safe (a plain atomic store).
    pub fn set(&self, value: u64) {
        // SAFETY: the page is mapped, zero-initialised and aligned for an AtomicU64.
        unsafe { self.word.as_ref() }.store(value, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn get(&self) -> u64 {
        // SAFETY: as for `set`.
        unsafe { self.word.as_ref() }.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for SharedWord {
    fn drop(&mut self) {
        // SAFETY: the page mapped in `new`, unmapped once.
        unsafe { libc::munmap(self.word.as_ptr().cast(), 4096) };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_last_capability_found_by_prctl_is_the_one_proc_names() {
        let named: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .expect("/proc is mounted")
            .trim()
            .parse()
            .expect("a number");
        assert_eq!(super::cap_last_cap(), named);
    }
}
