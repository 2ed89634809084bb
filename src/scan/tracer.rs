//! The syscall tracer: ptrace plus a seccomp-bpf filter, so only the interesting calls stop.
//!
//! The server is spawned (inside the safety jail) with one more child-side hook, registered
//! after the jail's own: the child writes its pid to a pipe and blocks reading a "go" byte; the
//! tracer thread seizes it (`PTRACE_SEIZE` with fork/vfork/clone/exec/seccomp tracing and
//! `EXITKILL`), writes the byte, and the child installs a filter that answers
//! `SECCOMP_RET_TRACE` for file, exec and network calls and `ALLOW` for everything else, then
//! execs. Forks, vforks, clones (threads) and execs are followed automatically.
//!
//! At each seccomp stop the tracer reads the path arguments from the tracee's memory
//! (`process_vm_readv`), notes the cwd or dirfd they are relative to (`/proc/<tid>/cwd`,
//! `/proc/<tid>/fd/<n>`) and the current phase (start-up or call N); it resumes with
//! `PTRACE_SYSCALL` to see the result at syscall exit (for an exec, after its exec event stop). An attempt the safety jail refuses is
//! still recorded (Landlock refuses after the seccomp stop). A call the jail's own seccomp layer
//! refuses with an error (e.g. `connect` to a named UNIX socket with the network off) never
//! reaches this filter: seccomp returns the most restrictive action of all filters.
//!
//! ptrace is per thread: the tracer runs on one dedicated thread and hands its records over in
//! a shared list. A tracee stops synchronously at each traced syscall and the record is stored
//! before it is resumed, so by the time the server answers a call every access that call made
//! is already in the list.
//!
//! **Scope hint** (not used by the scan: see below). Each stop costs a few microseconds of kernel work and two context switches,
//! which on a file-heavy call outweighs the file work itself. The scan passes its declared
//! scope directory as a hint, and one kind of access skips the syscall-exit stop: an `open`,
//! `openat` or `openat2` *for reading* (no write access mode, no `O_CREAT`/`O_TRUNC`) whose
//! absolute path (as joined above) lies, lexically, under the scope and exists with no symlink
//! at all on the way — checked at entry with one `openat2(O_PATH, RESOLVE_NO_SYMLINKS)` of that
//! path. Such an access is recorded at entry with its path (the lexical path is then the real
//! one) and `result_skipped`, its result not recorded ("not recorded: in scope"); the tracee is
//! resumed with `PTRACE_CONT`. Nothing the scan decides depends on that result: an in-scope
//! access is never a violation, and only a *modifying* in-scope access that succeeded matters
//! (the scope is then reset), which is never skipped. Everything else keeps both stops and its result: writes and creations in scope,
//! out-of-scope paths, names that go through a symlink (even one that stays inside), missing
//! names, execs, network calls, anything whose path cannot be read or joined. Limit: the check
//! and the kernel's own lookup are two lookups; another thread of the server that swaps the
//! path's memory or plants a symlink in between could make a read look in scope. A red-team
//! run did exactly that to read a scan canary (the scan's safety jail grants the whole
//! sandbox, canaries included, so no kernel rule backs the check there), so the scan traces in
//! full: a successful open is then resolved from its descriptor at exit. A full trace keeps
//! the race only for a failed open (its path is resolved after the fact), which reads nothing.
//!
//! x86_64 only (syscall numbers and registers); elsewhere [`supported`] is false.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// What an access does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AccessKind {
    Read,
    Write,
    Create,
    Delete,
    Exec,
    /// chmod / chown: metadata changes.
    Metadata,
    Network,
}

impl AccessKind {
    /// Everything but reads and execs changes something.
    pub fn modifies(self) -> bool {
        matches!(
            self,
            AccessKind::Write | AccessKind::Create | AccessKind::Delete | AccessKind::Metadata
        )
    }
}

/// The phase of a traced access: the server's start-up, or the Nth probe call (1-based).
pub const PHASE_STARTUP: u32 = 0;

/// One traced access.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Access {
    /// [`PHASE_STARTUP`] or the probe number.
    pub phase: u32,
    pub tid: i32,
    pub syscall: &'static str,
    pub kind: AccessKind,
    /// The path (or socket address) as the tracee passed it.
    pub path: String,
    /// Absolute, symlinks resolved: for a successful open the file actually opened
    /// (`/proc/<tid>/fd/<n>`), otherwise the deepest existing ancestor canonicalized.
    pub resolved: PathBuf,
    /// The syscall's return value: `>= 0` success, `< 0` `-errno`; `None` if the tracee never
    /// returned from it (killed, or a successful exec of another thread), or if the result was
    /// not recorded ([`Access::result_skipped`]).
    pub result: Option<i64>,
    /// The result was not recorded because it cannot change a verdict: a read of a path that
    /// resolved, without a symlink, inside the scope hint (see the module doc). Serialized
    /// only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub result_skipped: bool,
}

impl Access {
    pub fn succeeded(&self) -> bool {
        matches!(self.result, Some(r) if r >= 0)
    }

    /// `ok`, or the errno name (`EACCES`, `ENOENT`, ...).
    pub fn result_text(&self) -> String {
        if self.result_skipped {
            return "not recorded: in scope".into();
        }
        match self.result {
            None => "no return".into(),
            Some(r) if r >= 0 => "ok".into(),
            Some(r) => errno_name(-r as i32),
        }
    }
}

fn errno_name(e: i32) -> String {
    let name = nix::errno::Errno::from_raw(e);
    format!("{name:?}")
}

/// Whether this build can trace (Linux x86_64).
pub fn supported() -> bool {
    cfg!(all(target_os = "linux", target_arch = "x86_64"))
}

/// Shared between the tracer thread and the scan driver.
#[derive(Debug, Default)]
pub struct TraceLog {
    phase: AtomicU32,
    accesses: Mutex<Vec<Access>>,
}

impl TraceLog {
    pub fn set_phase(&self, phase: u32) {
        self.phase.store(phase, Ordering::SeqCst);
    }

    /// Everything recorded so far.
    pub fn snapshot(&self) -> Vec<Access> {
        self.accesses.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Accesses of one phase.
    pub fn phase(&self, phase: u32) -> Vec<Access> {
        self.accesses
            .lock()
            .map(|a| a.iter().filter(|x| x.phase == phase).cloned().collect())
            .unwrap_or_default()
    }

    fn push(&self, a: Access) {
        if let Ok(mut v) = self.accesses.lock() {
            v.push(a);
        }
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use imp::{spawn_traced, Traced};

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp {
    use super::*;
    use std::collections::HashMap;
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::process::CommandExt;
    use std::process::Child;
    use std::sync::mpsc;

    const PTRACE_EVENT_STOP: i32 = 128;
    const SYS_FCHMODAT2: i64 = 452;

    /// A server running under the tracer.
    pub struct Traced {
        pub child_stdin: Option<std::process::ChildStdin>,
        pub child_stdout: Option<std::process::ChildStdout>,
        pub child_stderr: Option<std::process::ChildStderr>,
        pub pid: u32,
        pub log: Arc<TraceLog>,
        /// Dropping it ends the keeper thread, which kills the server's session and reaps it.
        release: Option<mpsc::Sender<()>>,
        keeper: Option<std::thread::JoinHandle<()>>,
        tracer: Option<std::thread::JoinHandle<()>>,
    }

    impl Traced {
        /// Kill the server (its whole session) and wait for both threads.
        pub fn finish(mut self) {
            self.stop();
        }

        fn stop(&mut self) {
            drop(self.release.take());
            if let Some(k) = self.keeper.take() {
                let _ = k.join();
            }
            if let Some(t) = self.tracer.take() {
                let _ = t.join();
            }
        }
    }

    impl Drop for Traced {
        fn drop(&mut self) {
            self.stop();
        }
    }

    /// The syscalls that stop, with their names.
    const TRACED: &[(i64, &str)] = &[
        (libc::SYS_open, "open"),
        (libc::SYS_openat, "openat"),
        (libc::SYS_openat2, "openat2"),
        (libc::SYS_creat, "creat"),
        (libc::SYS_execve, "execve"),
        (libc::SYS_execveat, "execveat"),
        (libc::SYS_link, "link"),
        (libc::SYS_linkat, "linkat"),
        (libc::SYS_symlink, "symlink"),
        (libc::SYS_symlinkat, "symlinkat"),
        (libc::SYS_rename, "rename"),
        (libc::SYS_renameat, "renameat"),
        (libc::SYS_renameat2, "renameat2"),
        (libc::SYS_unlink, "unlink"),
        (libc::SYS_unlinkat, "unlinkat"),
        (libc::SYS_mkdir, "mkdir"),
        (libc::SYS_mkdirat, "mkdirat"),
        (libc::SYS_rmdir, "rmdir"),
        (libc::SYS_truncate, "truncate"),
        (libc::SYS_chmod, "chmod"),
        (libc::SYS_fchmodat, "fchmodat"),
        (SYS_FCHMODAT2, "fchmodat2"),
        (libc::SYS_chown, "chown"),
        (libc::SYS_lchown, "lchown"),
        (libc::SYS_fchownat, "fchownat"),
        // Creation without an open (a FIFO, or a regular file by `mknod`) and metadata by path:
        // they change nothing's content, but a scan that missed them would call a server that
        // plants `~/.ssh/authorized_keys` with `mknod` confined.
        (libc::SYS_mknod, "mknod"),
        (libc::SYS_mknodat, "mknodat"),
        (libc::SYS_utime, "utime"),
        (libc::SYS_utimes, "utimes"),
        (libc::SYS_utimensat, "utimensat"),
        (libc::SYS_futimesat, "futimesat"),
        (libc::SYS_setxattr, "setxattr"),
        (libc::SYS_lsetxattr, "lsetxattr"),
        (libc::SYS_removexattr, "removexattr"),
        (libc::SYS_lremovexattr, "lremovexattr"),
        (libc::SYS_connect, "connect"),
        (libc::SYS_bind, "bind"),
        (libc::SYS_sendto, "sendto"),
        (libc::SYS_sendmsg, "sendmsg"),
    ];

    fn syscall_name(nr: i64) -> &'static str {
        TRACED
            .iter()
            .find(|(n, _)| *n == nr)
            .map(|(_, s)| *s)
            .unwrap_or("?")
    }

    /// The filter: architecture check, then `TRACE` for [`TRACED`], `ALLOW` otherwise.
    fn filter() -> Vec<libc::sock_filter> {
        const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
        const RET_ALLOW: u32 = 0x7fff_0000;
        const RET_TRACE: u32 = 0x7ff0_0000;
        let stmt = |code: u16, k: u32| libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        };
        let ld_abs = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
        let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
        let ret = (libc::BPF_RET | libc::BPF_K) as u16;
        let n = TRACED.len();
        let mut prog = vec![
            stmt(ld_abs, 4), // seccomp_data.arch
            libc::sock_filter {
                code: jeq,
                jt: 1,
                jf: 0,
                k: AUDIT_ARCH_X86_64,
            },
            stmt(ret, RET_ALLOW),
            stmt(ld_abs, 0), // seccomp_data.nr
        ];
        for (i, (nr, _)) in TRACED.iter().enumerate() {
            prog.push(libc::sock_filter {
                code: jeq,
                jt: (n - i) as u8,
                jf: 0,
                k: *nr as u32,
            });
        }
        prog.push(stmt(ret, RET_ALLOW));
        prog.push(stmt(ret, RET_TRACE));
        prog
    }

    /// Our pid as the tracer names it. The jail runs the server as pid 2 of its own PID
    /// namespace, where `getpid()` answers 2; `/proc` is the host's mount, so `/proc/self`
    /// names the pid in the tracer's namespace. Called in the forked child: raw syscalls only.
    fn host_pid() -> i32 {
        let mut buf = [0u8; 16];
        // SAFETY: readlink writes at most buf.len() bytes into buf.
        let n =
            unsafe { libc::readlink(c"/proc/self".as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            // SAFETY: getpid has no preconditions.
            return unsafe { libc::getpid() };
        }
        let mut pid: i32 = 0;
        for &b in &buf[..n as usize] {
            if !b.is_ascii_digit() {
                // SAFETY: as above.
                return unsafe { libc::getpid() };
            }
            pid = pid.saturating_mul(10).saturating_add(i32::from(b - b'0'));
        }
        pid
    }

    fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
    }

    /// The scope hint: the scope directory, canonicalized once.
    struct ScopeHint {
        root: PathBuf,
    }

    impl ScopeHint {
        fn open(scope: &Path) -> Option<ScopeHint> {
            let root = std::fs::canonicalize(scope).ok()?;
            Some(ScopeHint { root })
        }

        /// `path` (absolute, as the tracee named it, made lexical) if it lies inside the scope
        /// and exists with no symlink at all on the way from `/`: the name is then the object,
        /// and a read of it cannot change a verdict. One `openat2(O_PATH,
        /// RESOLVE_NO_SYMLINKS)` of the path decides (from `/`, not from a descriptor of the
        /// scope held open: the server may rename the scope directory itself); any failure (a
        /// symlink, a missing name, a file used as a directory, an old kernel) answers `None`.
        fn plain_inside(&self, path: &Path) -> Option<PathBuf> {
            if !path.is_absolute() {
                return None;
            }
            // Without symlinks on the way, the lexical path is the real one.
            let mut lexical = PathBuf::from("/");
            for c in path.components() {
                match c {
                    Component::ParentDir => {
                        lexical.pop();
                    }
                    Component::Normal(n) => lexical.push(n),
                    _ => {}
                }
            }
            if !lexical.starts_with(&self.root) {
                return None;
            }
            let name = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
            // No fallback where openat2 is missing (ENOSYS): then nothing counts as in scope.
            crate::sandbox::open_without_symlinks(&name).ok()?;
            Some(lexical)
        }
    }

    /// Spawn `cmd` (stdio must be piped by the caller) under the tracer. The child-side hook is
    /// added after any the command already has (the jail's), so the filter is installed inside
    /// the jail and the jail's own setup is not traced.
    ///
    /// `scope`: the scan's declared scope directory, a hint that lets reads inside it skip the
    /// syscall-exit stop (see the module doc); `None` traces every access in full.
    pub fn spawn_traced(
        mut cmd: std::process::Command,
        scope: Option<&Path>,
    ) -> io::Result<Traced> {
        let scope = scope.and_then(ScopeHint::open);
        let (pid_r, pid_w) = pipe()?;
        let (go_r, go_w) = pipe()?;
        let prog = filter();
        let pid_w_raw = pid_w.as_raw_fd();
        let go_r_raw = go_r.as_raw_fd();
        // SAFETY: the hook runs in the forked child before exec and only makes raw syscalls
        // (getpid, write, read, prctl, seccomp) on data allocated before the fork.
        unsafe {
            cmd.pre_exec(move || {
                let pid: i32 = host_pid();
                let bytes = pid.to_ne_bytes();
                if libc::write(pid_w_raw, bytes.as_ptr().cast(), 4) != 4 {
                    return Err(io::Error::last_os_error());
                }
                let mut b = 0u8;
                if libc::read(go_r_raw, (&mut b as *mut u8).cast(), 1) != 1 {
                    return Err(io::Error::other("tracer did not attach"));
                }
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                let fprog = libc::sock_fprog {
                    len: prog.len() as u16,
                    filter: prog.as_ptr() as *mut libc::sock_filter,
                };
                if libc::syscall(
                    libc::SYS_seccomp,
                    1, /* SECCOMP_SET_MODE_FILTER */
                    0,
                    &fprog as *const libc::sock_fprog,
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }

        let log = Arc::new(TraceLog::default());
        let tracer_log = log.clone();
        let (attached_tx, attached_rx) = mpsc::channel::<io::Result<()>>();
        let tracer = std::thread::Builder::new()
            .name("mcpjail-scan-tracer".into())
            .spawn(move || tracer_main(pid_r, go_w, tracer_log, scope, attached_tx))?;

        // The keeper spawns the child and lives as long as it: the jail makes the child die with
        // its parent *thread*.
        let (child_tx, child_rx) = mpsc::channel::<io::Result<Pipes>>();
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let keeper = std::thread::Builder::new()
            .name("mcpjail-scan-keeper".into())
            .spawn(move || {
                let spawned = cmd.spawn();
                drop(cmd);
                // The child has exec'd (or failed): the tracer's pid read must not wait on us.
                drop(pid_w);
                drop(go_r);
                match spawned {
                    Err(e) => {
                        let _ = child_tx.send(Err(e));
                    }
                    Ok(mut child) => {
                        let pid = child.id();
                        let pipes = match (child.stdin.take(), child.stdout.take()) {
                            (Some(i), Some(o)) => Ok((pid, i, o, child.stderr.take())),
                            _ => Err(io::Error::other("the server's stdin/stdout are not piped")),
                        };
                        let _ = child_tx.send(pipes);
                        // Wait for the release (the sender is dropped), then end everything.
                        let _ = release_rx.recv();
                        end_child(pid, &mut child);
                    }
                }
            })?;

        let (pid, stdin, stdout, stderr) = match child_rx.recv() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                drop(release_tx);
                let _ = keeper.join();
                let _ = tracer.join();
                return Err(e);
            }
            Err(_) => return Err(io::Error::other("the spawning thread ended")),
        };
        let mut traced = Traced {
            child_stdin: Some(stdin),
            child_stdout: Some(stdout),
            child_stderr: stderr,
            pid,
            log,
            release: Some(release_tx),
            keeper: Some(keeper),
            tracer: Some(tracer),
        };
        match attached_rx.recv() {
            Ok(Ok(())) => Ok(traced),
            Ok(Err(e)) => {
                traced.stop();
                Err(e)
            }
            Err(_) => {
                traced.stop();
                Err(io::Error::other("the tracer thread ended"))
            }
        }
    }

    type Pipes = (
        u32,
        std::process::ChildStdin,
        std::process::ChildStdout,
        Option<std::process::ChildStderr>,
    );

    fn end_child(pid: u32, child: &mut Child) {
        // Before the child is reaped, while a process group's id is still its pid.
        if let Some(group) = crate::sandbox::server_group(pid) {
            group.signal(libc::SIGKILL);
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    fn tracer_main(
        pid_r: OwnedFd,
        go_w: OwnedFd,
        log: Arc<TraceLog>,
        scope: Option<ScopeHint>,
        attached: mpsc::Sender<io::Result<()>>,
    ) {
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            // SAFETY: reads into a local buffer from an owned descriptor.
            let n =
                unsafe { libc::read(pid_r.as_raw_fd(), buf[got..].as_mut_ptr().cast(), 4 - got) };
            if n <= 0 {
                let _ = attached.send(Err(io::Error::other(
                    "the server exited before the tracer could attach",
                )));
                return;
            }
            got += n as usize;
        }
        let pid = i32::from_ne_bytes(buf);
        let opts = libc::PTRACE_O_TRACESECCOMP
            | libc::PTRACE_O_TRACEFORK
            | libc::PTRACE_O_TRACEVFORK
            | libc::PTRACE_O_TRACECLONE
            | libc::PTRACE_O_TRACEEXEC
            | libc::PTRACE_O_TRACESYSGOOD
            | libc::PTRACE_O_EXITKILL;
        // SAFETY: PTRACE_SEIZE with integer arguments.
        let rc = unsafe { libc::ptrace(libc::PTRACE_SEIZE, pid, 0, opts as libc::c_long) };
        if rc != 0 {
            let _ = attached.send(Err(io::Error::other(format!(
                "cannot trace the server (PTRACE_SEIZE): {}",
                io::Error::last_os_error()
            ))));
            return;
        }
        share_one_cpu(pid);
        // SAFETY: one byte from a local to an owned descriptor.
        unsafe { libc::write(go_w.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
        drop(go_w);
        drop(pid_r);
        let _ = attached.send(Ok(()));
        trace_loop(&log, scope.as_ref());
    }

    /// Put the tracer thread and the server (and, by inheritance, every thread and process it
    /// starts) on the CPU the tracer runs on. Each traced syscall stops the server and wakes the
    /// tracer, then the other way round; across CPUs every such wake-up is an inter-processor
    /// interrupt that, on an idle virtual machine, also brings a CPU out of its idle state
    /// (measured: ~73 µs per traced access idle, ~25 µs pinned). On one CPU a stop is a plain
    /// context switch. Best effort: it changes speed, never what the server can do.
    fn share_one_cpu(pid: i32) {
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu < 0 {
            return;
        }
        // SAFETY: cpu_set_t is plain data; CPU_SET writes a bit inside it (cpu < CPU_SETSIZE,
        // as the kernel numbers it).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: the set lives on our stack for both calls; pid 0 is this thread only.
        unsafe {
            libc::sched_setaffinity(0, size, &set);
            libc::sched_setaffinity(pid, size, &set);
        }
    }

    fn resume(tid: i32, request: libc::c_uint, sig: i32) {
        // SAFETY: ptrace restart request with integer arguments; fails harmlessly (ESRCH) when
        // the tracee is gone.
        unsafe { libc::ptrace(request, tid, 0, sig as libc::c_long) };
    }

    fn regs(tid: i32) -> Option<libc::user_regs_struct> {
        // SAFETY: zeroed plain-old-data struct, filled by the kernel.
        let mut r: libc::user_regs_struct = unsafe { std::mem::zeroed() };
        // SAFETY: PTRACE_GETREGS writes one user_regs_struct to the pointer.
        let rc = unsafe {
            libc::ptrace(
                libc::PTRACE_GETREGS,
                tid,
                0,
                &mut r as *mut libc::user_regs_struct,
            )
        };
        (rc == 0).then_some(r)
    }

    /// The syscall's return value at syscall-exit (one word, not the whole register set).
    fn return_value(tid: i32) -> Option<i64> {
        let offset = std::mem::offset_of!(libc::user_regs_struct, rax);
        // SAFETY: PTRACE_PEEKUSER reads one word of the stopped tracee's user area; errors
        // are told apart from a -1 value through errno.
        unsafe {
            *libc::__errno_location() = 0;
            let v = libc::ptrace(libc::PTRACE_PEEKUSER, tid, offset, 0);
            if v == -1 && *libc::__errno_location() != 0 {
                return None;
            }
            Some(v)
        }
    }

    struct Pending {
        accesses: Vec<Access>,
        /// Whether the return value is a descriptor for the (single) path.
        returns_fd: bool,
        /// Whether the result is recorded (a syscall-exit stop); `false` only for an in-scope
        /// read (see [`ScopeHint::plain_inside`]), whose access is complete at entry.
        exit: bool,
    }

    fn trace_loop(log: &TraceLog, scope: Option<&ScopeHint>) {
        let mut pending: HashMap<i32, Pending> = HashMap::new();
        loop {
            let mut status: i32 = 0;
            // SAFETY: waitpid into a local.
            let tid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL | libc::__WNOTHREAD) };
            if tid < 0 {
                match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EINTR) => continue,
                    _ => break, // ECHILD: every tracee is gone
                }
            }
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                if let Some(p) = pending.remove(&tid) {
                    for a in p.accesses {
                        log.push(a);
                    }
                }
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let event = status >> 16;
            if sig == (libc::SIGTRAP | 0x80) {
                // Syscall-exit stop after a seccomp stop.
                if let Some(p) = pending.remove(&tid) {
                    let ret = return_value(tid);
                    finish(tid, p, ret, log);
                }
                resume(tid, libc::PTRACE_CONT, 0);
            } else if sig == libc::SIGTRAP && event == libc::PTRACE_EVENT_SECCOMP {
                match regs(tid).and_then(|r| entry(tid, &r, log, scope)) {
                    Some(p) if p.exit => {
                        pending.insert(tid, p);
                        resume(tid, libc::PTRACE_SYSCALL, 0);
                    }
                    Some(p) => {
                        // Stored while the tracee is stopped, as at an exit stop.
                        for a in p.accesses {
                            log.push(a);
                        }
                        resume(tid, libc::PTRACE_CONT, 0);
                    }
                    None => resume(tid, libc::PTRACE_CONT, 0),
                }
            } else if sig == libc::SIGTRAP && event != 0 {
                // fork / vfork / clone / exec events: the new tracee is auto-attached. The exec
                // event stops inside the traced execve: resuming with PTRACE_CONT would cancel
                // its syscall-exit stop, and with it the exec's result.
                let request = if pending.contains_key(&tid) {
                    libc::PTRACE_SYSCALL
                } else {
                    libc::PTRACE_CONT
                };
                resume(tid, request, 0);
            } else if event == PTRACE_EVENT_STOP {
                // A new tracee's first stop, or a group stop: keep it running.
                resume(tid, libc::PTRACE_CONT, 0);
            } else {
                // A signal for the tracee: deliver it.
                resume(tid, libc::PTRACE_CONT, sig);
            }
        }
        for (_, p) in pending {
            for a in p.accesses {
                log.push(a);
            }
        }
    }

    fn finish(tid: i32, p: Pending, ret: Option<i64>, log: &TraceLog) {
        for mut a in p.accesses {
            a.result = ret;
            a.resolved = match ret {
                Some(fd) if fd >= 0 && p.returns_fd => {
                    std::fs::read_link(format!("/proc/{tid}/fd/{fd}"))
                        .unwrap_or_else(|_| resolve_lossy(&a.resolved))
                }
                _ if a.kind == AccessKind::Network && !a.resolved.is_absolute() => a.resolved,
                // rename, unlink, mkdir, link, symlink, rmdir act on the name itself: a
                // final symlink is not followed.
                _ if !p.returns_fd && !follows_final(a.syscall) => resolve_nofollow(&a.resolved),
                _ => resolve_lossy(&a.resolved),
            };
            log.push(a);
        }
    }

    /// Read a NUL-terminated string from the tracee (at most 8 KiB).
    fn read_cstr(tid: i32, addr: u64) -> Option<Vec<u8>> {
        if addr == 0 {
            return None;
        }
        let mut out = Vec::new();
        let mut at = addr;
        let mut buf = [0u8; 4096];
        while out.len() < 8192 {
            // Paths are short: read 256 bytes at a time, never across a page boundary (a
            // partial read at an unmapped page would fail the whole read).
            let page_left = 4096 - (at % 4096) as usize;
            let chunk = page_left.min(256);
            let buf = &mut buf[..chunk];
            let n = read_mem(tid, at, buf)?;
            if n == 0 {
                break;
            }
            if let Some(end) = buf[..n].iter().position(|b| *b == 0) {
                out.extend_from_slice(&buf[..end]);
                return Some(out);
            }
            out.extend_from_slice(&buf[..n]);
            at += n as u64;
        }
        Some(out)
    }

    fn read_mem(tid: i32, addr: u64, buf: &mut [u8]) -> Option<usize> {
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: reads into our own buffer of the stated length; the remote side is checked
        // by the kernel.
        let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
        (n >= 0).then_some(n as usize)
    }

    fn base_dir(tid: i32, dirfd: i64) -> PathBuf {
        let link = if dirfd as i32 == libc::AT_FDCWD {
            format!("/proc/{tid}/cwd")
        } else {
            format!("/proc/{tid}/fd/{}", dirfd as i32)
        };
        std::fs::read_link(link).unwrap_or_default()
    }

    /// The path argument at `addr`, relative to `dirfd`: (as given, joined absolute).
    fn path_arg(tid: i32, dirfd: i64, addr: u64) -> (String, PathBuf) {
        let Some(raw) = read_cstr(tid, addr) else {
            return ("<unreadable>".into(), PathBuf::new());
        };
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let p = PathBuf::from(OsString::from_vec(raw));
        let joined = if p.is_absolute() {
            p
        } else {
            base_dir(tid, dirfd).join(p)
        };
        (shown, proc_self_for(tid, &joined))
    }

    /// `/proc/self` and `/proc/thread-self` name the tracee, not the tracer.
    fn proc_self_for(tid: i32, p: &Path) -> PathBuf {
        for prefix in ["/proc/self", "/proc/thread-self"] {
            if let Ok(rest) = p.strip_prefix(prefix) {
                return Path::new(&format!("/proc/{tid}")).join(rest);
            }
        }
        p.to_path_buf()
    }

    fn access(
        log: &TraceLog,
        tid: i32,
        syscall: &'static str,
        kind: AccessKind,
        (path, joined): (String, PathBuf),
    ) -> Access {
        Access {
            phase: log.phase.load(Ordering::SeqCst),
            tid,
            syscall,
            kind,
            path,
            resolved: joined,
            result: None,
            result_skipped: false,
        }
    }

    fn open_kind(flags: u64) -> AccessKind {
        let flags = flags as i32;
        if flags & libc::O_CREAT != 0 {
            AccessKind::Create
        } else if flags & libc::O_ACCMODE != libc::O_RDONLY || flags & libc::O_TRUNC != 0 {
            AccessKind::Write
        } else {
            AccessKind::Read
        }
    }

    /// An open: its access, with the exit stop skipped for an in-scope read.
    fn open_access(
        log: &TraceLog,
        tid: i32,
        name: &'static str,
        kind: AccessKind,
        p: (String, PathBuf),
        scope: Option<&ScopeHint>,
    ) -> Option<Pending> {
        let mut a = access(log, tid, name, kind, p);
        let inside = match scope {
            Some(s) if kind == AccessKind::Read => s.plain_inside(&a.resolved),
            _ => None,
        };
        let exit = match inside {
            Some(resolved) => {
                a.resolved = resolved;
                a.result_skipped = true;
                false
            }
            None => true,
        };
        Some(Pending {
            accesses: vec![a],
            returns_fd: true,
            exit,
        })
    }

    fn entry(
        tid: i32,
        r: &libc::user_regs_struct,
        log: &TraceLog,
        scope: Option<&ScopeHint>,
    ) -> Option<Pending> {
        let nr = r.orig_rax as i64;
        let name = syscall_name(nr);
        let cwd = libc::AT_FDCWD as i64;
        let (a0, a1, a2, a3, a4) = (r.rdi, r.rsi, r.rdx, r.r10, r.r8);
        let one = |kind, p| {
            Some(Pending {
                accesses: vec![access(log, tid, name, kind, p)],
                returns_fd: false,
                exit: true,
            })
        };
        let two = |k1, p1, k2, p2| {
            Some(Pending {
                accesses: vec![
                    access(log, tid, name, k1, p1),
                    access(log, tid, name, k2, p2),
                ],
                returns_fd: false,
                exit: true,
            })
        };
        match nr {
            libc::SYS_open => {
                open_access(log, tid, name, open_kind(a1), path_arg(tid, cwd, a0), scope)
            }
            libc::SYS_openat => open_access(
                log,
                tid,
                name,
                open_kind(a2),
                path_arg(tid, a0 as i64, a1),
                scope,
            ),
            libc::SYS_openat2 => {
                let mut how = [0u8; 8];
                let flags = read_mem(tid, a2, &mut how)
                    .filter(|n| *n == how.len())
                    .map(|_| u64::from_ne_bytes(how));
                open_access(
                    log,
                    tid,
                    name,
                    open_kind(flags.unwrap_or(0)),
                    path_arg(tid, a0 as i64, a1),
                    // Flags not read: never taken for a read.
                    scope.filter(|_| flags.is_some()),
                )
            }
            libc::SYS_creat => Some(Pending {
                accesses: vec![access(
                    log,
                    tid,
                    name,
                    AccessKind::Create,
                    path_arg(tid, cwd, a0),
                )],
                returns_fd: true,
                exit: true,
            }),
            libc::SYS_execve => one(AccessKind::Exec, path_arg(tid, cwd, a0)),
            libc::SYS_execveat => one(AccessKind::Exec, path_arg(tid, a0 as i64, a1)),
            libc::SYS_link => two(
                AccessKind::Read,
                path_arg(tid, cwd, a0),
                AccessKind::Create,
                path_arg(tid, cwd, a1),
            ),
            libc::SYS_linkat => two(
                AccessKind::Read,
                path_arg(tid, a0 as i64, a1),
                AccessKind::Create,
                path_arg(tid, a2 as i64, a3),
            ),
            libc::SYS_symlink => one(AccessKind::Create, path_arg(tid, cwd, a1)),
            libc::SYS_symlinkat => one(AccessKind::Create, path_arg(tid, a1 as i64, a2)),
            libc::SYS_rename => two(
                AccessKind::Delete,
                path_arg(tid, cwd, a0),
                AccessKind::Create,
                path_arg(tid, cwd, a1),
            ),
            libc::SYS_renameat | libc::SYS_renameat2 => two(
                AccessKind::Delete,
                path_arg(tid, a0 as i64, a1),
                AccessKind::Create,
                path_arg(tid, a2 as i64, a3),
            ),
            libc::SYS_unlink | libc::SYS_rmdir => one(AccessKind::Delete, path_arg(tid, cwd, a0)),
            libc::SYS_unlinkat => one(AccessKind::Delete, path_arg(tid, a0 as i64, a1)),
            libc::SYS_mkdir => one(AccessKind::Create, path_arg(tid, cwd, a0)),
            libc::SYS_mkdirat => one(AccessKind::Create, path_arg(tid, a0 as i64, a1)),
            libc::SYS_truncate => one(AccessKind::Write, path_arg(tid, cwd, a0)),
            libc::SYS_chmod | libc::SYS_chown | libc::SYS_lchown => {
                one(AccessKind::Metadata, path_arg(tid, cwd, a0))
            }
            libc::SYS_fchmodat | SYS_FCHMODAT2 | libc::SYS_fchownat => {
                one(AccessKind::Metadata, path_arg(tid, a0 as i64, a1))
            }
            libc::SYS_mknod => one(AccessKind::Create, path_arg(tid, cwd, a0)),
            libc::SYS_mknodat => one(AccessKind::Create, path_arg(tid, a0 as i64, a1)),
            libc::SYS_utime
            | libc::SYS_utimes
            | libc::SYS_setxattr
            | libc::SYS_lsetxattr
            | libc::SYS_removexattr
            | libc::SYS_lremovexattr => one(AccessKind::Metadata, path_arg(tid, cwd, a0)),
            // A null path names the descriptor itself (`futimens`).
            libc::SYS_utimensat | libc::SYS_futimesat if a1 == 0 => {
                let p = base_dir(tid, a0 as i64);
                one(AccessKind::Metadata, (p.display().to_string(), p))
            }
            libc::SYS_utimensat | libc::SYS_futimesat => {
                one(AccessKind::Metadata, path_arg(tid, a0 as i64, a1))
            }
            libc::SYS_connect | libc::SYS_bind => {
                let addr = sockaddr(tid, a1, a2 as usize)?;
                one(AccessKind::Network, addr)
            }
            libc::SYS_sendto => {
                let addr = sockaddr(tid, a4, r.r9 as usize)?;
                one(AccessKind::Network, addr)
            }
            libc::SYS_sendmsg => {
                let mut hdr = [0u8; 12];
                read_mem(tid, a1, &mut hdr)?;
                let name_ptr = u64::from_ne_bytes(hdr[0..8].try_into().ok()?);
                let name_len = u32::from_ne_bytes(hdr[8..12].try_into().ok()?);
                let addr = sockaddr(tid, name_ptr, name_len as usize)?;
                one(AccessKind::Network, addr)
            }
            _ => None,
        }
    }

    /// A socket address as text (`unix:/path`, `tcp:1.2.3.4:80`); `None` for none at all.
    fn sockaddr(tid: i32, addr: u64, len: usize) -> Option<(String, PathBuf)> {
        if addr == 0 || len < 2 {
            return None;
        }
        let mut buf = vec![0u8; len.min(128)];
        let n = read_mem(tid, addr, &mut buf)?;
        buf.truncate(n);
        let family = u16::from_ne_bytes([buf[0], *buf.get(1)?]) as i32;
        match family {
            libc::AF_UNIX => {
                let path = &buf[2..];
                if path.first() == Some(&0) {
                    let name: Vec<u8> = path[1..].iter().copied().take_while(|b| *b != 0).collect();
                    let s = format!("unix:@{}", String::from_utf8_lossy(&name));
                    return Some((s.clone(), PathBuf::from(s)));
                }
                let end = path.iter().position(|b| *b == 0).unwrap_or(path.len());
                let p = PathBuf::from(OsString::from_vec(path[..end].to_vec()));
                let joined = if p.is_absolute() {
                    p.clone()
                } else {
                    base_dir(tid, libc::AT_FDCWD as i64).join(&p)
                };
                Some((format!("unix:{}", p.display()), joined))
            }
            libc::AF_INET if buf.len() >= 8 => {
                let port = u16::from_be_bytes([buf[2], buf[3]]);
                let ip = std::net::Ipv4Addr::new(buf[4], buf[5], buf[6], buf[7]);
                let s = format!("inet:{ip}:{port}");
                Some((s.clone(), PathBuf::from(s)))
            }
            libc::AF_INET6 if buf.len() >= 24 => {
                let port = u16::from_be_bytes([buf[2], buf[3]]);
                let octets: [u8; 16] = buf[8..24].try_into().ok()?;
                let ip = std::net::Ipv6Addr::from(octets);
                let s = format!("inet6:[{ip}]:{port}");
                Some((s.clone(), PathBuf::from(s)))
            }
            // Netlink and friends: not a path or a peer we classify.
            _ => None,
        }
    }
}

/// Syscalls that follow a final symlink (the rest act on the name itself).
fn follows_final(syscall: &str) -> bool {
    matches!(
        syscall,
        "execve"
            | "execveat"
            | "truncate"
            | "chmod"
            | "fchmodat"
            | "fchmodat2"
            | "chown"
            | "fchownat"
            | "connect"
            | "bind"
            | "sendto"
            | "sendmsg"
    )
}

/// [`resolve_lossy`] of the parent, with the final name appended as it is (not followed).
pub fn resolve_nofollow(p: &Path) -> PathBuf {
    match (p.parent(), p.file_name()) {
        (Some(parent), Some(name)) => resolve_lossy(parent).join(name),
        _ => resolve_lossy(p),
    }
}

/// Absolute `p` with symlinks resolved as far as it exists; the rest appended lexically
/// (`..` pops).
pub fn resolve_lossy(p: &Path) -> PathBuf {
    if p.as_os_str().is_empty() {
        return PathBuf::new();
    }
    let mut existing = p.to_path_buf();
    let mut rest: Vec<OsString> = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&existing) {
            let mut out = c;
            for part in rest.iter().rev() {
                match Path::new(part).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) | None => {}
                    _ => out.push(part),
                }
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            (Some(parent), None) => {
                // Ends in `..`: keep it for the lexical pass.
                rest.push(OsString::from(".."));
                existing = parent.to_path_buf();
            }
            _ => return p.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_lossy_follows_existing_symlinks_and_appends_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("out")).unwrap();
        std::fs::create_dir_all(root.join("scope")).unwrap();
        std::os::unix::fs::symlink("../out", root.join("scope/link")).unwrap();
        assert_eq!(
            resolve_lossy(&root.join("scope/link/missing/x")),
            root.join("out/missing/x")
        );
        assert_eq!(
            resolve_lossy(&root.join("scope/../out/./y")),
            root.join("out/y")
        );
        assert_eq!(
            resolve_lossy(&root.join("scope/nope/../../out")),
            root.join("out")
        );
        // The name itself, not its target, for rename/unlink/mkdir.
        assert_eq!(
            resolve_nofollow(&root.join("scope/link")),
            root.join("scope/link")
        );
        assert_eq!(
            resolve_nofollow(&root.join("scope/link/z")),
            root.join("out/z")
        );
    }

    /// Runs `cat` on four files and a write into the scope, traced with `scope` as the hint.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn trace_cat(scope: Option<&Path>, files: &[&Path], write: &Path) -> Vec<Access> {
        use std::io::Read;
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(r#"cat "$1" "$2" "$3" "$4" 2>/dev/null; echo x > "$5""#)
            .arg("sh")
            .args(files)
            .arg(write)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut traced = spawn_traced(cmd, scope).expect("spawn traced");
        let log = traced.log.clone();
        let mut out = String::new();
        let _ = traced
            .child_stdout
            .take()
            .expect("stdout piped")
            .read_to_string(&mut out);
        traced.finish();
        log.snapshot()
    }

    /// The open of `p` (as passed) that `cat` or the shell made.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn open_of<'a>(accesses: &'a [Access], p: &Path) -> &'a Access {
        let shown = p.display().to_string();
        let found = accesses
            .iter()
            .find(|a| a.syscall.starts_with("open") && a.path == shown);
        found.unwrap_or_else(|| panic!("no open of {shown} in {accesses:#?}"))
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_scope_hint_skips_only_plain_in_scope_reads() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical tempdir");
        let scope = root.join("scope");
        std::fs::create_dir_all(scope.join("sub")).expect("mkdir");
        std::fs::write(scope.join("sub/in.txt"), "in\n").expect("write");
        let outside = root.join("outside.txt");
        std::fs::write(&outside, "out\n").expect("write");
        std::os::unix::fs::symlink(&outside, scope.join("link.txt")).expect("symlink");
        let in_file = scope.join("sub/../sub/in.txt");
        let link = scope.join("link.txt");
        let missing = scope.join("missing.txt");
        let written = scope.join("written.txt");
        let files = [in_file.as_path(), &outside, &link, &missing];

        let hinted = trace_cat(Some(&scope), &files, &written);
        // In scope, no symlink on the way: recorded with its path, the result not.
        let a = open_of(&hinted, &in_file);
        assert_eq!(a.kind, AccessKind::Read);
        assert_eq!(a.resolved, scope.join("sub/in.txt"));
        assert!(a.result_skipped);
        assert_eq!(a.result, None);
        assert_eq!(a.result_text(), "not recorded: in scope");
        // Out of scope: the result is recorded.
        let a = open_of(&hinted, &outside);
        assert!(!a.result_skipped);
        assert!(a.succeeded(), "{a:?}");
        assert_eq!(a.resolved, outside);
        // Named in scope, resolves outside through a symlink: traced in full, and resolved
        // to the file actually opened.
        let a = open_of(&hinted, &link);
        assert!(!a.result_skipped);
        assert!(a.succeeded(), "{a:?}");
        assert_eq!(a.resolved, outside);
        // A missing in-scope name keeps its result.
        let a = open_of(&hinted, &missing);
        assert!(!a.result_skipped);
        assert_eq!(a.result, Some(-(libc::ENOENT as i64)));
        // A write in scope keeps its result (the scan resets a scope a call changed).
        let a = open_of(&hinted, &written);
        assert!(a.kind.modifies());
        assert!(!a.result_skipped);
        assert!(a.succeeded(), "{a:?}");
        // Execs are never skipped.
        assert!(hinted
            .iter()
            .any(|a| a.kind == AccessKind::Exec && a.result.is_some()));

        // Without the hint every result is recorded.
        let full = trace_cat(None, &files, &written);
        let a = open_of(&full, &in_file);
        assert!(!a.result_skipped);
        assert!(a.succeeded(), "{a:?}");
        assert_eq!(a.resolved, scope.join("sub/in.txt"));
    }

    /// Creation by `mknod` and metadata changes by path are traced, with their kind and the
    /// path (a futimens-style `utimensat` with a null path names its descriptor's file).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn mknod_and_metadata_calls_are_traced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = std::fs::canonicalize(dir.path()).expect("canonical");
        let (fifo, planted, touched, xattr) = (
            d.join("fifo"),
            d.join("authorized_keys"),
            d.join("touched"),
            d.join("xattr"),
        );
        for p in [&touched, &xattr] {
            std::fs::write(p, "x").expect("write");
        }
        let script = r#"
import os, sys
fifo, planted, touched, xattr = sys.argv[1:5]
os.mkfifo(fifo)
os.mknod(planted, 0o600 | 0o100000)
os.utime(touched, (0, 0))
fd = os.open(touched, os.O_RDONLY)
os.utime(fd, (1, 1))
try:
    os.setxattr(xattr, "user.mcpjail", b"1")
    os.removexattr(xattr, "user.mcpjail")
except OSError:
    pass
"#;
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c")
            .arg(script)
            .args([&fifo, &planted, &touched, &xattr])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut traced = spawn_traced(cmd, None).expect("spawn traced");
        let log = traced.log.clone();
        let mut out = String::new();
        let _ = std::io::Read::read_to_string(
            &mut traced.child_stdout.take().expect("stdout piped"),
            &mut out,
        );
        traced.finish();
        let all = log.snapshot();
        let of = |syscall: &str, p: &Path| {
            all.iter()
                .find(|a| a.syscall == syscall && a.resolved == p)
                .unwrap_or_else(|| panic!("no {syscall} of {} in {all:#?}", p.display()))
        };
        // Control: the calls really happened.
        assert!(planted.is_file() && fifo.exists());
        assert_eq!(of("mknodat", &fifo).kind, AccessKind::Create);
        assert_eq!(of("mknodat", &planted).kind, AccessKind::Create);
        let times: Vec<_> = all
            .iter()
            .filter(|a| a.syscall == "utimensat" && a.resolved == touched)
            .collect();
        assert_eq!(times.len(), 2, "by path and by descriptor: {all:#?}");
        assert!(times.iter().all(|a| a.kind == AccessKind::Metadata));
        assert_eq!(of("setxattr", &xattr).kind, AccessKind::Metadata);
    }

    #[test]
    fn kinds_that_modify() {
        assert!(AccessKind::Create.modifies());
        assert!(AccessKind::Delete.modifies());
        assert!(!AccessKind::Read.modifies());
        assert!(!AccessKind::Exec.modifies());
    }
}
