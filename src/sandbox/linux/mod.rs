//! Linux enforcement, applied in the child right before `exec`: its own process group (no
//! controlling terminal, no terminal on stdio), masks and read-only mounts outside the write
//! grants in a private mount namespace, resource limits, no_new_privs, every capability dropped,
//! Landlock, seccomp, and every descriptor above 2 closed at `exec`.
//!
//! Everything that allocates or can fail in interesting ways happens in the parent: paths are
//! opened in `prepare`, the seccomp program is compiled there, and a fresh Landlock ruleset is
//! created for each command. The `pre_exec` hook runs after `fork` in a multi-threaded process,
//! so it only issues syscalls on memory prepared beforehand (see [`sys`]). The proxy does not
//! even fork where it can: [`spawn`] runs the same hook in a `vfork`-style child that shares
//! its memory, which ends by exec'ing the [`reaper`].

mod bpf;
mod landlock;
mod mask;
mod pidns;
mod reaper;
mod seccomp;
mod spawn;
pub mod sys;

use std::ffi::{CStr, OsString};
use std::os::fd::{AsFd, OwnedFd};

use crate::policy::NetRules;
use crate::sandbox::carve::{Mask, MaskSupport};
use crate::sandbox::{Enforcement, Grant, GrantAccess, LayerReport, SandboxError};

pub use self::landlock::fs_rights_names;
use self::landlock::{LandlockPlan, ProcSelfAccess, PROC_SELF_ENTRIES};
use self::mask::MaskPlan;
use self::seccomp::SeccompPlan;
pub use self::spawn::Spawned;

/// Error the child reports when the parent could not build the ruleset (so the spawn fails
/// instead of running unconfined).
const RULESET_BUILD_FAILED: i32 = libc::ENOTRECOVERABLE;

/// `RLIMIT_NOFILE` ceiling for a server: ample for an MCP server, a bound on what one can pin.
const OPEN_FILES_MAX: u64 = 4096;
/// `RLIMIT_FSIZE` ceiling: one runaway write cannot fill the disk past this per file.
const FILE_SIZE_MAX: u64 = 4 << 30;

#[derive(Debug)]
pub struct LinuxJail {
    masks: MaskPlan,
    landlock: LandlockPlan,
    seccomp: Option<SeccompPlan>,
    /// The highest capability number, read in the parent for the child's bounding-set drop.
    last_cap: u32,
    /// Start the server's descendants in a PID namespace of their own (see [`pidns`]).
    pid_ns: bool,
    /// What the namespace's shim and init exec once the server runs (see [`reaper`]); `None`
    /// keeps them as forks of the proxy.
    reaper: Option<std::sync::Arc<reaper::Reaper>>,
    /// The egress proxy's port inside the server's own network namespace, when it gets one.
    net_ns: Option<u16>,
    /// Our end of the socket the latest child sends its namespace's listener over.
    egress_rx: std::sync::Mutex<Option<OwnedFd>>,
    /// Set when the namespaces were assumed rather than probed: where the child writes which
    /// one the kernel refused (see [`LinuxJail::namespace_refusal`]).
    refusal: Option<std::sync::Arc<sys::SharedWord>>,
    report: Vec<LayerReport>,
    pub notes: Vec<String>,
}

impl LinuxJail {
    /// `masks` come from [`mask_support`] having answered `Mounts`. `assume_namespaces`: skip
    /// the probes (each forks a throwaway child) and plan as if the kernel lets the server's
    /// child create its namespaces; if it then does not, the spawn fails and
    /// [`LinuxJail::namespace_refusal`] says why, so the caller can prepare again with probes.
    pub fn new(
        grants: &[Grant],
        masks: &[Mask],
        net: &NetRules,
        assume_namespaces: bool,
    ) -> Result<Self, SandboxError> {
        let abi = sys::landlock_abi();
        let (landlock, notes) = LandlockPlan::open(grants, net, abi)
            .map_err(|e| SandboxError::Prepare(e.to_string()))?;
        let mut report = landlock.report();
        let (masks, metadata, pid_ns) =
            read_only_outside_writes(MaskPlan::new(masks)?, grants, assume_namespaces)?;
        report.push(metadata);
        let net_ns = egress_namespace(&masks, net, &mut report, assume_namespaces);

        let seccomp = if sys::seccomp_filter_available() {
            let plan =
                SeccompPlan::compile(net).map_err(|e| SandboxError::Prepare(e.to_string()))?;
            report.push(LayerReport {
                layer: "seccomp".into(),
                enforcement: Enforcement::Fully,
                detail: format!(
                    "EPERM for {}; clone3, openat2 -> ENOSYS; {}",
                    plan.denied.join(","),
                    if plan.sockets_unix_only {
                        "only AF_UNIX sockets may be created (UDP/raw/netlink closed)"
                    } else if net.allow_all {
                        "all socket families allowed (--allow-net)"
                    } else {
                        "TCP sockets only from socket(), stream/seqpacket socketpair() (UDP/raw/netlink and AF_UNIX sockets closed; TCP ports judged by Landlock)"
                    }
                ),
            });
            Some(plan)
        } else {
            report.push(LayerReport {
                layer: "seccomp".into(),
                enforcement: Enforcement::NotEnforced,
                detail:
                    "the kernel refuses seccomp filters: UDP, io_uring, ptrace... are not filtered"
                        .into(),
            });
            None
        };
        tcp_past_landlock(net, seccomp.as_ref(), &mut report);
        // Named UNIX sockets (ssh-agent, gpg-agent, tmux, the session bus, docker.sock): Landlock
        // ABI 7 does not mediate connect() to them (LANDLOCK_ACCESS_FS_RESOLVE_UNIX is newer), so
        // the only closure here is seccomp's, and only with the network off.
        let unix_closed = seccomp.as_ref().is_some_and(|p| p.named_unix_closed);
        let tcp_open = seccomp
            .as_ref()
            .is_some_and(|p| p.named_unix_closed && !p.sockets_unix_only);
        report.push(LayerReport {
            layer: "unix_sockets".into(),
            enforcement: if unix_closed {
                Enforcement::Fully
            } else {
                Enforcement::Partially
            },
            detail: if tcp_open {
                "connect() stays for TCP, but socket() cannot make an AF_UNIX socket and a \
                 socketpair() only a stream or seqpacket one (allowed by list: SOCK_RAW is a \
                 datagram socket too), so no socket can reach a named socket outside the jail \
                 (ssh-agent, gpg-agent, tmux, dbus, docker.sock, X11); stream socketpair() \
                 works; abstract sockets are scoped by Landlock"
                    .into()
            } else if unix_closed {
                "connect() refused and no datagram UNIX sockets (only SOCK_STREAM and \
                 SOCK_SEQPACKET may be made, by list: SOCK_RAW is a datagram socket too): named \
                 sockets outside the jail (ssh-agent, gpg-agent, tmux, dbus, docker.sock, X11) \
                 are unreachable; abstract ones are scoped by Landlock"
                    .into()
            } else {
                "OPEN: with all network allowed (--allow-net) every socket call stays, and this \
                 kernel's Landlock cannot judge a UNIX socket's path, so the server can reach any \
                 named socket whose path it learns (ssh-agent, dbus, docker.sock…); use \
                 --allow-domain or --allow-tcp-connect instead of --allow-net to close it"
                    .into()
            },
        });
        report.push(LayerReport {
            layer: "no_new_privs".into(),
            enforcement: Enforcement::Fully,
            detail: "set before exec: set-uid/set-gid binaries gain nothing".into(),
        });
        report.push(LayerReport {
            layer: "capabilities".into(),
            enforcement: Enforcement::Fully,
            detail:
                "all dropped before exec (effective, permitted, inheritable, ambient and, when \
                     held, the bounding set): a server run as root keeps uid 0 but no privilege"
                    .into(),
        });
        report.push(LayerReport {
            layer: "rlimits".into(),
            enforcement: Enforcement::Fully,
            detail: format!(
                "core dumps off; open files <= {OPEN_FILES_MAX}; file size <= {} GiB (lowered, \
                 never raised); no process-count limit (RLIMIT_NPROC counts all of the user's \
                 processes: use a cgroup's pids.max)",
                FILE_SIZE_MAX >> 30
            ),
        });
        report.push(LayerReport {
            layer: "session".into(),
            enforcement: if seccomp.is_some() {
                Enforcement::Fully
            } else {
                Enforcement::Partially
            },
            detail: session_detail(seccomp.is_some(), pid_ns.is_ok()).into(),
        });
        report.push(pidns::layer(&pid_ns));
        let refusal = match assume_namespaces && !masks.is_empty() {
            true => Some(std::sync::Arc::new(sys::SharedWord::new().map_err(
                |e| SandboxError::Prepare(format!("cannot map the spawn's status page: {e}")),
            )?)),
            false => None,
        };
        let reaper = match pid_ns.is_ok() {
            true => reaper::Reaper::load()
                .inspect_err(|e| {
                    tracing::debug!("jail: no reaper ({e}): the shim and init stay forks")
                })
                .ok()
                .map(std::sync::Arc::new),
            false => None,
        };
        Ok(LinuxJail {
            masks,
            landlock,
            seccomp,
            last_cap: sys::cap_last_cap(),
            pid_ns: pid_ns.is_ok(),
            reaper,
            net_ns,
            egress_rx: std::sync::Mutex::new(None),
            refusal,
            report,
            notes,
        })
    }

    /// Whether the server gets a network namespace of its own (see [`egress_namespace`]).
    pub fn egress_in_namespace(&self) -> bool {
        self.net_ns.is_some()
    }

    /// The listener the latest child made in its network namespace, once it has been spawned
    /// (it sends it before `exec`, so a spawn that succeeded has sent it). `None` without a
    /// network namespace.
    pub fn take_egress_listener(&self) -> Option<std::io::Result<std::net::TcpListener>> {
        let rx = self.egress_rx.lock().ok()?.take()?;
        Some(match sys::recv_fd(rx.as_fd()) {
            Ok(Some(fd)) => Ok(std::net::TcpListener::from(fd)),
            Ok(None) => Err(std::io::Error::other(
                "the server's child sent no listener for the egress proxy",
            )),
            Err(e) => Err(e),
        })
    }

    pub fn report(&self) -> &[LayerReport] {
        &self.report
    }

    /// Install the child-side hook on `cmd`, which runs in `cwd`.
    pub fn apply(
        &self,
        cmd: &mut tokio::process::Command,
        cwd: &std::path::Path,
        exec: Option<ServerExec<'_>>,
    ) {
        let plan = self.child_plan(cwd, exec, false);
        // SAFETY: the closure runs in the forked child before exec. It only performs raw
        // syscalls (setsid, prctl, ioctl/open/dup2 on stdio, unshare, open/write on /proc/self,
        // mount, raw clone and waitpid for the PID namespace, setrlimit, capget/capset,
        // landlock_*, seccomp, close_range) on data allocated before the fork; it takes no locks
        // and does not allocate (errors come from errno).
        unsafe {
            cmd.pre_exec(move || child_confine(&plan));
        }
    }

    /// Start the server in `cwd` with piped stdio, without forking the proxy (see [`spawn`]):
    /// `None` where this jail cannot (no reaper, or no PID namespace), for the caller to use
    /// [`Self::apply`] on a `Command` instead.
    pub fn spawn_piped(
        &self,
        cwd: &std::path::Path,
        exec: ServerExec<'_>,
    ) -> Option<std::io::Result<spawn::Spawned>> {
        if !self.pid_ns || self.reaper.is_none() {
            return None;
        }
        let plan = self.child_plan(cwd, Some(exec), true);
        Some(spawn::spawn(&plan))
    }

    /// Everything the server's child needs, prepared here before it starts.
    fn child_plan(
        &self,
        cwd: &std::path::Path,
        exec: Option<ServerExec<'_>>,
        shim_shares_memory: bool,
    ) -> ChildPlan {
        // The working directory is entered before the hook runs, on the mounts as they were:
        // once the write grants are bound onto themselves it must be entered again, or relative
        // paths would reach the covered (read-only, unmasked) mount underneath.
        let cwd =
            std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(cwd.as_os_str())).ok();
        let ruleset: Result<Option<OwnedFd>, i32> = match self.landlock.build_ruleset() {
            Ok(fd) => Ok(fd),
            Err(err) => {
                tracing::error!("jail: {err}; the server will not be started");
                Err(RULESET_BUILD_FAILED)
            }
        };
        let proc_access = self.landlock.proc_self_access;
        let programs: Vec<Vec<libc::sock_filter>> = self
            .seccomp
            .as_ref()
            .map(|s| s.programs.clone())
            .unwrap_or_default();
        let net_ns = match self.net_ns {
            None => Ok(None),
            Some(port) => {
                use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
                match socketpair(
                    AddressFamily::Unix,
                    SockType::SeqPacket,
                    None,
                    SockFlag::SOCK_CLOEXEC,
                ) {
                    Ok((ours, theirs)) => {
                        if let Ok(mut rx) = self.egress_rx.lock() {
                            *rx = Some(ours);
                        }
                        Ok(Some((port, theirs)))
                    }
                    Err(err) => {
                        tracing::error!(
                            "jail: cannot create the socket for the egress listener: {err}; the \
                             server will not be started"
                        );
                        Err(err as i32)
                    }
                }
            }
        };
        if let Some(word) = &self.refusal {
            word.set(0);
        }
        ChildPlan {
            exec: exec.map(|e| ExecPlan::new(e.program, e.args, e.env)),
            refusal: self.refusal.clone(),
            net_ns,
            masks: self.masks.clone(),
            cwd,
            ruleset,
            proc_access,
            programs,
            last_cap: self.last_cap,
            pid_ns: self.pid_ns,
            reaper: self.reaper.clone(),
            shim_shares_memory,
            parent: std::process::id() as libc::pid_t,
        }
    }
}

/// What the server's process execs by itself under a PID namespace (see [`ExecPlan`]): the
/// command std's `Command` was given.
pub struct ServerExec<'a> {
    pub program: &'a std::path::Path,
    pub args: &'a [String],
    /// The whole environment (`None`: the process's own).
    pub env: Option<&'a [(OsString, OsString)]>,
}

/// The server's `exec`, as std's `Command` makes it, prepared in the parent so the child only
/// reads it: with a PID namespace the server's process execs by itself
/// ([`sys::enter_pid_namespace`]). Like std: the program as given (also `argv[0]`), the
/// environment (when the jail sets one) sorted by name with the last value of a name kept, and
/// `execvp` with that environment installed, so a program without a `/` is searched in its
/// `PATH` and a script without `#!` runs under `/bin/sh`. `None` if a string holds a NUL byte
/// (std's spawn then fails before it forks).
struct ExecPlan {
    program: std::ffi::CString,
    /// The strings `argv` and `envp` point into (heap data, which does not move with the
    /// struct).
    _strings: Vec<std::ffi::CString>,
    /// The program, the arguments, a null.
    argv: Vec<*const libc::c_char>,
    /// `NAME=value` for each variable, a null; `None` keeps the process's own.
    envp: Option<Vec<*const libc::c_char>>,
}

// SAFETY: the pointers in `argv` and `envp` point into strings owned by the same value, never
// mutated after construction; once built the value is only read (in the child).
unsafe impl Send for ExecPlan {}
// SAFETY: as above.
unsafe impl Sync for ExecPlan {}

extern "C" {
    /// glibc's environment, which `execvp` passes on and searches `PATH` in.
    pub(super) static mut environ: *const *const libc::c_char;
}

impl ExecPlan {
    fn new(
        program: &std::path::Path,
        args: &[String],
        env: Option<&[(OsString, OsString)]>,
    ) -> Option<ExecPlan> {
        use std::os::unix::ffi::OsStrExt;
        let c = |bytes: &[u8]| std::ffi::CString::new(bytes).ok();
        let program = c(program.as_os_str().as_bytes())?;
        let mut strings = Vec::new();
        for arg in args {
            strings.push(c(arg.as_bytes())?);
        }
        let argc = strings.len();
        if let Some(env) = env {
            let sorted: std::collections::BTreeMap<_, _> = env.iter().cloned().collect();
            for (name, value) in sorted {
                let mut pair = name.as_bytes().to_vec();
                pair.push(b'=');
                pair.extend_from_slice(value.as_bytes());
                strings.push(c(&pair)?);
            }
        }
        let mut argv = Vec::with_capacity(argc + 2);
        argv.push(program.as_ptr());
        argv.extend(strings[..argc].iter().map(|a| a.as_ptr()));
        argv.push(std::ptr::null());
        let envp = env.map(|_| {
            let mut envp: Vec<_> = strings[argc..].iter().map(|v| v.as_ptr()).collect();
            envp.push(std::ptr::null());
            envp
        });
        Some(ExecPlan {
            program,
            _strings: strings,
            argv,
            envp,
        })
    }

    /// Install the environment and `execvp`, as std's `Command` ends: returns only the error it
    /// failed with. Async-signal-safe. Meant for the server's own process: the environment
    /// pointer it sets is the process's (or, sharing memory until `exec`, the init's, which reads
    /// no variable afterwards).
    fn exec(&self) -> std::io::Error {
        // SAFETY: `envp` is a null-terminated array of NUL-terminated strings that outlives the
        // `exec`; a NUL-terminated program and a null-terminated `argv`, alive for the call.
        unsafe {
            if let Some(envp) = &self.envp {
                environ = envp.as_ptr();
            }
            libc::execvp(self.program.as_ptr(), self.argv.as_ptr());
        }
        std::io::Error::last_os_error()
    }
}

/// Everything the child needs, prepared in the parent before the fork.
struct ChildPlan {
    /// With a PID namespace: the server's process execs by itself (`Some`; inner `None` when a
    /// string held a NUL byte), or is forked and left to std's `Command` (`None`).
    exec: Option<Option<ExecPlan>>,
    /// With assumed namespaces: where to say which one the kernel refused.
    refusal: Option<std::sync::Arc<sys::SharedWord>>,
    /// The egress port and the socket to send the namespace's listener over, or the errno
    /// that fails the spawn.
    net_ns: Result<Option<(u16, OwnedFd)>, i32>,
    masks: MaskPlan,
    cwd: Option<std::ffi::CString>,
    ruleset: Result<Option<OwnedFd>, i32>,
    proc_access: ProcSelfAccess,
    programs: Vec<Vec<libc::sock_filter>>,
    /// The highest capability number (for the bounding-set drop).
    last_cap: u32,
    /// Run the server in a PID namespace of its own ([`pidns`]).
    pid_ns: bool,
    reaper: Option<std::sync::Arc<reaper::Reaper>>,
    /// The shim runs in the proxy's memory ([`spawn`]), not in a fork of it.
    shim_shares_memory: bool,
    /// The proxy's pid, to check the death signal was set in time.
    parent: libc::pid_t,
}

/// The `session` layer's detail: with a PID namespace, the server keeps the caller's session
/// (see [`child_confine`]); without one, its own session is how its descendants are found.
fn session_detail(seccomp: bool, pid_ns: bool) -> &'static str {
    match (seccomp, pid_ns) {
        (true, true) => {
            "own process group in the caller's session (not a session of its own, which would \
             give it a scheduler autogroup of its own), no controlling terminal (given up with \
             TIOCNOTTY; setsid denied, so none can be taken again), stdio never a terminal, \
             descriptors above 2 closed at exec; the server's group is signalled with it and \
             ended with its PID namespace; the server gets SIGKILL if the proxy dies (its \
             descendants: see process_tree)"
        }
        (false, true) => {
            "own process group in the caller's session, no controlling terminal, descriptors \
             above 2 closed at exec; without seccomp a descendant can setsid() and take a \
             terminal it can open, and TIOCSTI is not filtered"
        }
        (true, false) => {
            "own session, no controlling terminal, stdio never a terminal, descriptors above 2 \
             closed at exec; every process of the session is killed when the server ends \
             (setsid denied to it); the server gets SIGKILL if the proxy dies (its \
             descendants: see process_tree)"
        }
        (false, false) => {
            "own session, no controlling terminal, descriptors above 2 closed at exec; without \
             seccomp a descendant can setsid() out of the session and outlive it, and TIOCSTI \
             is not filtered"
        }
    }
}

const DEV_NULL: &CStr = c"/dev/null";
const DEV_TTY: &CStr = c"/dev/tty";

/// Runs in the child between fork and exec. Async-signal-safe only.
///
/// Masks first: they need mount rights that no_new_privs, Landlock (which refuses mount changes
/// to a restricted process) and seccomp take away. A masking failure fails the spawn: the server
/// never runs with a denied entry uncovered.
///
/// The process group comes first (its own, or its own session without a PID namespace; no
/// controlling terminal; a terminal on stdio is replaced by `/dev/null`), capabilities go after
/// the masks (which need them), and descriptors above 2 are marked close-on-exec last (the
/// ruleset fd is still used until then, and the spawner's error pipe must survive until
/// `exec`). The PID namespace comes right after the masks; the rest ([`confine_server`], then
/// `exec`) happens in the server's own process, which the namespace's init starts (see
/// [`pidns`]), or here without a namespace.
fn child_confine(plan: &ChildPlan) -> std::io::Result<()> {
    let ChildPlan {
        exec,
        refusal,
        net_ns,
        masks,
        cwd,
        pid_ns,
        parent,
        ..
    } = plan;
    if *pid_ns {
        // The PID namespace ends everything the server starts, so it needs no session of its
        // own to be found by: a new session would also put it in a scheduler autogroup of its
        // own (with `sched_autogroup_enabled`), which made every wake-up between the proxy and
        // the server cross task groups, ~0.7 µs a call here, and gave the server its own share
        // of the CPU next to the client's. The controlling terminal goes all the same.
        sys::own_process_group()?;
        sys::drop_controlling_terminal(DEV_TTY)?;
    } else {
        sys::setsid()?;
    }
    sys::die_with_parent(*parent)?;
    sys::stdio_off_terminals(DEV_NULL)?;
    if !masks.is_empty() {
        masks.enter().map_err(|f| {
            if f.step.is_refusal() {
                tell_refusal(refusal, Refused::Mount, f.step as u8, f.index, f.errno);
            }
            std::io::Error::from_raw_os_error(f.errno)
        })?;
        if let Some(cwd) = cwd {
            sys::chdir(cwd)?;
        }
    }
    match net_ns {
        Err(code) => return Err(std::io::Error::from_raw_os_error(*code)),
        // Needs CAP_SYS_ADMIN like the PID namespace, and comes before it, so the server's
        // init and every descendant live in it too.
        Ok(Some((port, to_proxy))) => sys::enter_net_namespace(*port, to_proxy.as_fd())
            .inspect_err(|e| tell_refusal(refusal, Refused::Net, 0, 0, errno_of(e)))?,
        Ok(None) => {}
    }
    if !*pid_ns {
        // std's `Command` execs once this returns.
        return confine_server(plan);
    }
    // Needs CAP_SYS_ADMIN (root's, or the new user namespace's): before capabilities go, and
    // before the rules for `/proc/self`, which must name the process that will exec.
    let failure = match exec {
        // The server's process confines itself and execs there; only a failure comes back.
        Some(exec) => {
            let Some(exec) = exec else {
                return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
            };
            let run = || match confine_server(plan) {
                Ok(()) => exec.exec(),
                Err(err) => err,
            };
            let start = sys::ServerStart {
                run: &run,
                argc: exec.argv.len(),
                reaper: plan.reaper.as_ref().map(|r| r.fd()),
                shim_shares_memory: plan.shim_shares_memory,
            };
            match sys::enter_pid_namespace(Some(&start)) {
                Ok(()) => return Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
                Err(failure) => failure,
            }
        }
        // This returns in the server's process, for std's `Command` to exec.
        None => match sys::enter_pid_namespace(None) {
            Ok(()) => return confine_server(plan),
            Err(failure) => failure,
        },
    };
    Err(match failure {
        sys::PidNsFailure::Namespace(err) => {
            tell_refusal(refusal, Refused::Pid, 0, 0, errno_of(&err));
            err
        }
        sys::PidNsFailure::Server(err) => err,
    })
}

/// The server's own process, right before `exec`: limits, no_new_privs, capabilities, Landlock
/// (with the rules for its own `/proc/self`), seccomp, and descriptors above 2 closed at `exec`.
/// Async-signal-safe, allocates nothing.
fn confine_server(plan: &ChildPlan) -> std::io::Result<()> {
    let ChildPlan {
        ruleset,
        proc_access,
        programs,
        last_cap,
        ..
    } = plan;
    sys::lower_rlimit(sys::Limit::Core, 0)?;
    sys::lower_rlimit(sys::Limit::OpenFiles, OPEN_FILES_MAX)?;
    sys::lower_rlimit(sys::Limit::FileSize, FILE_SIZE_MAX)?;
    sys::set_no_new_privs()?;
    sys::drop_all_capabilities(*last_cap)?;
    match ruleset {
        Err(code) => return Err(std::io::Error::from_raw_os_error(*code)),
        Ok(None) => {}
        Ok(Some(fd)) => {
            // Resolved now, in the child: these are the child's own pid directory's entries.
            // One the kernel does not have (`smaps_rollup` before 4.14) is skipped.
            let proc_self = sys::open_path(c"/proc/self")?;
            for (name, is_dir) in PROC_SELF_ENTRIES {
                let entry = match sys::open_path_at(Some(proc_self.as_fd()), name) {
                    Ok(fd) => fd,
                    Err(err) if err.raw_os_error() == Some(libc::ENOENT) => continue,
                    Err(err) => return Err(err),
                };
                let access = if *is_dir {
                    proc_access.dir
                } else {
                    proc_access.file
                };
                sys::landlock_add_path_rule(fd.as_fd(), entry.as_fd(), access)?;
            }
            sys::landlock_restrict_self(fd.as_fd())?;
        }
    }
    for program in programs {
        sys::install_seccomp(program)?;
    }
    sys::cloexec_from_3()?;
    Ok(())
}

/// Landlock does not mediate chmod, chown, utimes or xattr changes: outside the write grants,
/// the mounts are made read-only in the server's own mount namespace (probed here in a
/// throwaway child, or assumed: see [`LinuxJail::new`]). Where the kernel refuses that, the
/// class is reported as not enforced and only the masks (if any) are kept.
///
/// The same probe child tries the PID namespace ([`pidns`]) inside those namespaces; the third
/// value says whether the server's child can create one, or why not.
fn read_only_outside_writes(
    masks: MaskPlan,
    grants: &[Grant],
    assume_namespaces: bool,
) -> Result<(MaskPlan, LayerReport, Result<(), String>), SandboxError> {
    let writable: Vec<std::path::PathBuf> = grants
        .iter()
        .filter(|g| g.access == GrantAccess::ReadWrite)
        .filter(|g| {
            // Devices stay writable on a read-only mount; only files and directories need a
            // writable mount of their own.
            std::fs::metadata(&g.path).is_ok_and(|m| m.is_dir() || m.is_file())
        })
        .map(|g| g.path.clone())
        .collect();
    let plan = masks.clone().read_only_outside(&writable)?;
    if !sys::seccomp_filter_available() {
        return Ok((
            masks,
            LayerReport {
                layer: "metadata".into(),
                enforcement: Enforcement::NotEnforced,
                detail: "without seccomp the server could undo read-only mounts: chmod, chown, \
                         utimes and xattr changes outside the scope are NOT stopped (Landlock does \
                         not mediate them)"
                    .into(),
            },
            Err("without seccomp the jail sets up no namespaces".into()),
        ));
    }
    let probed = if assume_namespaces {
        Ok((mask::Namespaces::expected(), Ok(())))
    } else {
        plan.probe_then(&sys::try_pid_namespace)
    };
    Ok(match probed {
        Ok((ns, pid_ns)) => (
            plan,
            LayerReport {
                layer: "metadata".into(),
                enforcement: Enforcement::Fully,
                detail: format!(
                    "{ns}: every mount read-only except the {} write grant(s), so chmod (set-uid \
                     bits included), chown, utimes and xattr changes outside them fail (EROFS); \
                     inotify watches denied by seccomp",
                    writable.len()
                ),
            },
            pid_ns.map_err(pidns::describe),
        ),
        Err(why) => (
            masks,
            LayerReport {
                layer: "metadata".into(),
                enforcement: Enforcement::NotEnforced,
                detail: format!(
                    "cannot mount the rest read-only ({why}): chmod, chown, utimes and xattr \
                     changes on the server's own files outside the scope are NOT stopped \
                     (Landlock does not mediate them)"
                ),
            },
            Err(format!("no namespaces here: {why}")),
        ),
    })
}

/// With only `--allow-domain` rules (TCP ports by number need the host's network), the server
/// gets a network namespace of its own with nothing in it but loopback and the egress proxy's
/// listener: a connection to any other address fails (ENETUNREACH), and the port-only Landlock
/// rule no longer reaches other hosts. Probed in a throwaway child inside the same namespaces;
/// where the kernel refuses, the port-only jail stays and its layer says so. Its port, if used.
fn egress_namespace(
    masks: &MaskPlan,
    net: &NetRules,
    report: &mut [LayerReport],
    assume_namespaces: bool,
) -> Option<u16> {
    let port = net.egress_port?;
    let why_not = if net.allow_all {
        return None;
    } else if !net.tcp_connect_ports.is_empty() || !net.tcp_bind_ports.is_empty() {
        "--allow-tcp-connect/--allow-tcp-bind need the host's network".to_string()
    } else if masks.is_empty() || !sys::seccomp_filter_available() {
        "the jail makes no namespaces here".to_string()
    } else {
        let probed = if assume_namespaces {
            Ok((mask::Namespaces::expected(), Ok(())))
        } else {
            masks.probe_then(&sys::try_net_namespace)
        };
        match probed {
            Ok((_, Ok(()))) => {
                if let Some(layer) = report.iter_mut().find(|l| l.layer == "landlock_net") {
                    layer.enforcement = Enforcement::Fully;
                    layer.detail = format!(
                        "the server has a network namespace of its own: loopback only, holding \
                         just the egress proxy's listener 127.0.0.1:{port} (names are judged \
                         there); any other address is unreachable (ENETUNREACH), and Landlock \
                         denies TCP bind and every connect port but {port}"
                    );
                }
                return Some(port);
            }
            Ok((_, Err(errno))) => format!(
                "creating a network namespace failed: {}",
                std::io::Error::from_raw_os_error(errno)
            ),
            Err(why) => why,
        }
    };
    if let Some(layer) = report.iter_mut().find(|l| l.layer == "landlock_net") {
        layer.detail.push_str(&format!(
            " (no network namespace of its own, which would close that: {why_not})"
        ));
    }
    None
}

/// Two TCP calls pass Landlock's port checks (ABI 7): a send with `MSG_FASTOPEN` connects
/// without the connect hook (landlock-lsm issue 41), and `listen()` on an unbound socket
/// auto-binds an ephemeral port on every address without the bind hook (Landlock has no listen
/// right). seccomp refuses the first whenever TCP is judged by port, and `listen()` where no bind
/// port is allowed; what stays open makes the `landlock_net` layer partial, and says so.
fn tcp_past_landlock(net: &NetRules, seccomp: Option<&SeccompPlan>, report: &mut [LayerReport]) {
    if net.allow_all {
        return;
    }
    let tcp_judged = !net.connect_ports().is_empty() || !net.tcp_bind_ports.is_empty();
    let Some(layer) = report.iter_mut().find(|l| l.layer == "landlock_net") else {
        return;
    };
    if !tcp_judged || layer.enforcement == Enforcement::NotEnforced {
        return;
    }
    match seccomp {
        None => {
            layer.enforcement = Enforcement::Partially;
            layer.detail.push_str(
                "; BUT without seccomp a send with MSG_FASTOPEN connects to any port of any \
                 host, and listen() on an unbound socket listens on an ephemeral port of every \
                 address: both pass Landlock's checks",
            );
        }
        Some(plan) if plan.listen_refused => layer.detail.push_str(
            "; TCP Fast Open sends and listen() refused by seccomp (both would pass Landlock's \
             checks)",
        ),
        Some(_) => {
            layer.enforcement = Enforcement::Partially;
            layer.detail.push_str(
                "; TCP Fast Open sends refused by seccomp, BUT listen() must stay for the bind \
                 port, and on a socket not bound first it listens on an ephemeral port of every \
                 address, which Landlock does not check (it has no listen right yet)",
            );
        }
    }
}

/// Which namespace the server's child could not create (see [`LinuxJail::namespace_refusal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Refused {
    Mount = 1,
    Net,
    Pid,
}

/// Written by the child, async-signal-safe: bit 63 set, the namespace, the mask step and index,
/// and the errno, in one word.
fn tell_refusal(
    word: &Option<std::sync::Arc<sys::SharedWord>>,
    what: Refused,
    step: u8,
    index: u32,
    errno: i32,
) {
    if let Some(word) = word {
        word.set(
            1 << 63
                | (what as u64) << 56
                | u64::from(step) << 48
                | u64::from(index & 0xffff) << 32
                | u64::from(errno as u32),
        );
    }
}

fn errno_of(err: &std::io::Error) -> i32 {
    err.raw_os_error().unwrap_or(libc::EIO)
}

impl LinuxJail {
    /// After a spawn failed: the namespace the kernel refused the server's child, in words, when
    /// the jail assumed it could be created (the caller then prepares the jail again with the
    /// kernel probed). `None` when nothing was assumed or the failure was something else.
    pub fn namespace_refusal(&self) -> Option<String> {
        let word = self.refusal.as_ref()?.get();
        if word >> 63 == 0 {
            return None;
        }
        let errno = (word & 0xffff_ffff) as u32 as i32;
        let err = std::io::Error::from_raw_os_error(errno);
        Some(match (word >> 56) & 0x7f {
            1 => {
                let step = mask::MaskStep::from_u8(((word >> 48) & 0xff) as u8)
                    .unwrap_or(mask::MaskStep::Unshare);
                let index = ((word >> 32) & 0xffff) as u32;
                self.masks
                    .describe(mask::MaskFailure { step, index, errno })
            }
            2 => format!("creating the server's network namespace failed: {err}"),
            _ => pidns::describe(errno),
        })
    }
}

/// Send `signal` to every process in session `sid` (the server's own session); how many.
pub fn signal_session(sid: u32, signal: i32) -> usize {
    match libc::pid_t::try_from(sid) {
        Ok(sid) if sid > 1 => sys::signal_session(sid, signal),
        _ => 0,
    }
}

/// Send `signal` to process group `pgid`; whether any process got it.
pub fn signal_process_group(pgid: u32, signal: i32) -> bool {
    match libc::pid_t::try_from(pgid) {
        Ok(pgid) if pgid > 1 => sys::killpg(pgid, signal),
        _ => false,
    }
}

/// What the jail made of the process `pid` it spawned: the leader of a session, or of a
/// process group (see [`crate::sandbox::ServerGroup`]); neither for a server it did not jail.
pub fn server_group(pid: u32) -> Option<crate::sandbox::ServerGroup> {
    use crate::sandbox::ServerGroup;
    let pid = libc::pid_t::try_from(pid).ok().filter(|p| *p > 1)?;
    if sys::getsid(pid)? == pid {
        return Some(ServerGroup::Session(pid as u32));
    }
    (sys::getpgid(pid)? == pid).then_some(ServerGroup::ProcessGroup(pid as u32))
}

/// Whether denied entries inside granted directories can be masked here (probed with `masks`
/// themselves in a throwaway child), or why not.
pub fn mask_support(
    masks: &[Mask],
    force_list_only: bool,
    assume_namespaces: bool,
) -> Result<MaskSupport, SandboxError> {
    if force_list_only {
        return Ok(MaskSupport::Unavailable {
            why: "masking was turned off (JailOptions::force_list_only_carve)".into(),
        });
    }
    if !sys::seccomp_filter_available() {
        return Ok(MaskSupport::Unavailable {
            why: "the kernel refuses seccomp filters, and without one the server could unmount \
                  a mask"
                .into(),
        });
    }
    let plan = MaskPlan::new(masks)?;
    let probed = if assume_namespaces {
        Ok(mask::Namespaces::expected())
    } else {
        plan.probe()
    };
    Ok(match probed {
        Ok(ns) => MaskSupport::Mounts {
            how: format!("{ns}; mount, umount2 and the new mount API are denied by seccomp"),
        },
        Err(why) => MaskSupport::Unavailable { why },
    })
}

/// What `doctor` needs to know about this kernel.
pub fn probe() -> crate::sandbox::KernelSupport {
    let abi = sys::landlock_abi();
    crate::sandbox::KernelSupport {
        os: "linux".into(),
        kernel_release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into()),
        landlock_abi: Some(abi),
        landlock_fs_rights: fs_rights_names(abi).iter().map(|s| s.to_string()).collect(),
        landlock_tcp: abi >= 4,
        landlock_scoping: abi >= 6,
        seccomp_filter: sys::seccomp_filter_available(),
        seccomp_arch_supported: matches!(std::env::consts::ARCH, "x86_64" | "aarch64" | "riscv64"),
        no_new_privs_settable: true,
        no_new_privs_already_set: sys::no_new_privs().unwrap_or(false),
        sandbox_exec: None,
        mount_masks: Some(match mask::probe_support() {
            Ok(ns) => format!("yes ({ns})"),
            Err(why) => format!(
                "NO: {why}; denied names inside granted directories fall back to list-only carving"
            ),
        }),
    }
}
