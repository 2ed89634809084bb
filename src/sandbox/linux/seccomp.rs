//! The seccomp-bpf layer: syscalls a confined MCP server never needs, answered with an error.
//!
//! Landlock governs paths, TCP ports, signals and abstract sockets; it does not see UDP, raw or
//! netlink sockets, kernel attack surface such as `bpf` or `io_uring`, or cross-process memory
//! access. This filter closes those. Denied calls fail with `EPERM` (never kill): a server that
//! probes for a feature should get an error it can handle, not die.
//!
//! The program is compiled once in the parent; the child only installs the finished bytes.
//! `clone3` fails with `ENOSYS` so libc falls back to `clone`, whose flags *can* be inspected
//! (namespace creation is refused there). On x86_64 it is one program with a search over the
//! syscall numbers in front ([`dispatched`], see [`super::bpf`]: cheap to attach); elsewhere
//! seccompiler's chain and a second tiny program for `clone3` ([`chains`]).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::policy::NetRules;

/// The compiled filters, ready for the child to install (in this order).
#[derive(Debug, Clone)]
pub struct SeccompPlan {
    pub programs: Vec<Vec<libc::sock_filter>>,
    /// Names of the syscalls answered with EPERM, for the report.
    pub denied: Vec<&'static str>,
    /// Whether non-UNIX `socket()` is refused (network off).
    pub sockets_unix_only: bool,
    /// Whether no socket can reach a named UNIX socket: with the network off `connect()` is
    /// refused; with TCP ports open no AF_UNIX socket can be made with `socket()` at all.
    pub named_unix_closed: bool,
}

/// Syscalls no MCP server needs and that widen the kernel surface or reach other processes.
const ALWAYS_DENIED: &[(&str, libc::c_long)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("process_madvise", libc::SYS_process_madvise),
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("kcmp", libc::SYS_kcmp),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("name_to_handle_at", libc::SYS_name_to_handle_at),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("reboot", libc::SYS_reboot),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("syslog", libc::SYS_syslog),
    ("acct", libc::SYS_acct),
    ("quotactl", libc::SYS_quotactl),
    ("settimeofday", libc::SYS_settimeofday),
    ("clock_settime", libc::SYS_clock_settime),
    ("clock_adjtime", libc::SYS_clock_adjtime),
    ("adjtimex", libc::SYS_adjtimex),
    ("sethostname", libc::SYS_sethostname),
    ("setdomainname", libc::SYS_setdomainname),
    ("fanotify_init", libc::SYS_fanotify_init),
    // SysV IPC and POSIX message queues: keyed by numbers and names outside the filesystem, so
    // Landlock does not see them; a server could attach to another process's shared memory or
    // read its queue. No runtime we jail uses them (POSIX shared memory lives in /dev/shm,
    // which is a path and is not granted).
    ("shmget", libc::SYS_shmget),
    ("shmat", libc::SYS_shmat),
    ("shmctl", libc::SYS_shmctl),
    ("shmdt", libc::SYS_shmdt),
    ("msgget", libc::SYS_msgget),
    ("msgsnd", libc::SYS_msgsnd),
    ("msgrcv", libc::SYS_msgrcv),
    ("msgctl", libc::SYS_msgctl),
    ("semget", libc::SYS_semget),
    ("semop", libc::SYS_semop),
    ("semctl", libc::SYS_semctl),
    ("semtimedop", libc::SYS_semtimedop),
    ("mq_open", libc::SYS_mq_open),
    ("mq_unlink", libc::SYS_mq_unlink),
    ("mq_timedsend", libc::SYS_mq_timedsend),
    ("mq_timedreceive", libc::SYS_mq_timedreceive),
    ("mq_notify", libc::SYS_mq_notify),
    ("mq_getsetattr", libc::SYS_mq_getsetattr),
    // A process that leads no session cannot take a controlling terminal; and without a PID
    // namespace the server leads a session of its own, by which the proxy ends everything it
    // starts, so a descendant must not leave it.
    ("setsid", libc::SYS_setsid),
    // Landlock's execute right does not cover a memfd (an internal inode beneath no rule): a
    // memfd written and run with execveat(AT_EMPTY_PATH) or /proc/self/fd/N would run code the
    // jail never allowed to be executed. Neither Node nor Python needs one.
    ("memfd_create", libc::SYS_memfd_create),
    // Landlock does not mediate inotify: a watch on a directory outside the scope (~/.ssh)
    // reports the names of entries created, opened and read there.
    ("inotify_add_watch", libc::SYS_inotify_add_watch),
    #[cfg(target_arch = "x86_64")]
    ("iopl", libc::SYS_iopl),
    #[cfg(target_arch = "x86_64")]
    ("ioperm", libc::SYS_ioperm),
];

/// Namespace-creating `clone` flags: a new user namespace would hand the server a fresh set of
/// capabilities to probe the kernel with; it never needs one.
const CLONE_NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    0x80, // CLONE_NEWTIME
];

#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("seccomp filters are not supported on this architecture ({0})")]
    UnsupportedArch(&'static str),
    #[error("cannot build the seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

impl SeccompPlan {
    /// Compile the filters for `net`: on x86_64 one program with a search in front
    /// ([`dispatched`]), elsewhere (or if the search does not fit) the two chains seccompiler
    /// builds.
    pub fn compile(net: &NetRules) -> Result<Self, SeccompError> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|_| SeccompError::UnsupportedArch(std::env::consts::ARCH))?;
        let (rules, denied, sockets_unix_only) = rules_for(net)?;
        let programs = match dispatched(rules.clone(), arch)? {
            Some(one) => vec![one],
            None => chains(rules, arch)?,
        };
        Ok(SeccompPlan {
            programs,
            denied,
            sockets_unix_only,
            named_unix_closed: !net.allow_all,
        })
    }
}

/// The rules for `net` (by syscall number; an empty list refuses the syscall whatever its
/// arguments), the names for the report, and whether only UNIX sockets may be made.
fn rules_for(net: &NetRules) -> Result<(Rules, Vec<&'static str>, bool), SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let mut denied = Vec::new();
    for (name, nr) in ALWAYS_DENIED {
        // An empty rule list matches the syscall unconditionally.
        rules.insert(*nr, Vec::new());
        denied.push(*name);
    }
    let mut clone_rules = Vec::new();
    for flag in CLONE_NAMESPACE_FLAGS {
        clone_rules.push(SeccompRule::new(vec![SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(*flag),
            *flag,
        )?])?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    denied.push("clone(CLONE_NEW*)");

    for (name, nr, rules_for) in ARGUMENT_RULES {
        rules.insert(*nr, rules_for()?);
        denied.push(*name);
    }

    let tcp_ports = !net.connect_ports().is_empty() || !net.tcp_bind_ports.is_empty();
    let sockets_unix_only = !net.allow_all && !tcp_ports;
    if !net.allow_all {
        // UDP, raw, netlink, packet, vsock...: Landlock has no rule for them (UDP needs ABI
        // 10), so with the network off only local UNIX sockets may be created. With TCP
        // ports allowed, plain TCP sockets are let through for Landlock's port rules to judge.
        rules.insert(libc::SYS_socket, socket_rules(tcp_ports)?);
        rules.insert(libc::SYS_socketpair, socket_rules(false)?);
        denied.push(if tcp_ports {
            "socket(!TCP)"
        } else {
            "socket(!AF_UNIX)"
        });
    }
    if tcp_ports && !net.allow_all {
        // connect() must stay for TCP, and Landlock (ABI 7) cannot judge a UNIX socket's
        // path, so the named-socket route is closed one step earlier: `socket_rules` makes
        // `socket()` refuse AF_UNIX altogether (only an unconnected socket can connect to
        // a path), and a datagram socketpair (which can `sendto` a path) is refused too. A
        // stream `socketpair()`, which runtimes use, stays: its ends are connected to each
        // other for good.
        if let Some(list) = rules.get_mut(&libc::SYS_socketpair) {
            list.push(unix_datagram_rule()?);
        }
        denied.push("socket(AF_UNIX), socketpair(AF_UNIX, SOCK_DGRAM)");
    }
    if sockets_unix_only {
        // Landlock (ABI 7) does not mediate connect() to a named UNIX socket, so a server
        // could talk to ssh-agent, gpg-agent, tmux, the session bus or docker.sock. With the
        // network off every socket is AF_UNIX, and a server never needs to connect one:
        // socketpair() needs no connect. So connect() is refused outright, and datagram
        // UNIX sockets (which reach a named socket through sendto/sendmsg without connect)
        // cannot be created.
        rules.insert(libc::SYS_connect, Vec::new());
        denied.push("connect");
        for nr in [libc::SYS_socket, libc::SYS_socketpair] {
            if let Some(list) = rules.get_mut(&nr) {
                list.push(unix_datagram_rule()?);
            }
        }
        denied.push("socket/socketpair(AF_UNIX, SOCK_DGRAM)");
    }

    Ok((rules, denied, sockets_unix_only))
}

/// The main chain behind the x32 guard, and a second program answering `clone3` with `ENOSYS`
/// (so libc falls back to `clone`, whose flags the main one inspects).
fn chains(rules: Rules, arch: TargetArch) -> Result<Vec<Vec<libc::sock_filter>>, SeccompError> {
    let main = refusing(rules, libc::EPERM, arch)?;
    let mut clone3 = Rules::new();
    clone3.insert(libc::SYS_clone3, Vec::new());
    Ok(vec![
        with_x32_guard(main),
        refusing(clone3, libc::ENOSYS, arch)?,
    ])
}

/// seccompiler's program for `rules`: a matching call fails with `errno`, the rest is allowed.
fn refusing(
    rules: Rules,
    errno: i32,
    arch: TargetArch,
) -> Result<Vec<libc::sock_filter>, SeccompError> {
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )?;
    let program: BpfProgram = filter.try_into()?;
    Ok(to_libc(&program))
}

/// On x86_64, one program that answers as [`chains`] does, built so the kernel attaches it
/// quickly (see [`super::bpf`]: attaching the plain chain cost ~300 µs per server start): a
/// search over the syscall numbers in front refuses x32's numbers, the unconditionally refused
/// syscalls (`EPERM`) and `clone3` (`ENOSYS`) at its leaves, lets every other syscall without
/// a rule through after a few comparisons, and sends only the few with argument rules on to a
/// seccompiler chain of those rules. `None` elsewhere, or if the search does not fit.
fn dispatched(
    rules: Rules,
    arch: TargetArch,
) -> Result<Option<Vec<libc::sock_filter>>, SeccompError> {
    use super::bpf::{with_dispatch, Leaf};
    if !cfg!(target_arch = "x86_64") {
        return Ok(None);
    }
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let mut leaves = Vec::with_capacity(rules.len() + 1);
    let mut conditional = Rules::new();
    for (nr, list) in rules {
        let Ok(number) = u32::try_from(nr) else {
            return Ok(None);
        };
        if list.is_empty() {
            leaves.push((number, Leaf::Return(eperm)));
        } else {
            leaves.push((number, Leaf::Program));
            conditional.insert(nr, list);
        }
    }
    leaves.push((
        libc::SYS_clone3 as u32,
        Leaf::Return(libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ));
    let main = refusing(conditional, libc::EPERM, arch)?;
    Ok(with_dispatch(
        &main,
        AUDIT_ARCH_X86_64,
        (X32_SYSCALL_BIT, eperm),
        &leaves,
        libc::SECCOMP_RET_ALLOW,
    ))
}

/// Syscalls refused only for some arguments (for the report, a name saying which).
type RulesFor = fn() -> Result<Vec<SeccompRule>, SeccompError>;
const ARGUMENT_RULES: &[(&str, libc::c_long, RulesFor)] = &[
    (
        "ioctl(TIOCSTI|TIOCLINUX)",
        libc::SYS_ioctl,
        terminal_injection,
    ),
    ("prlimit64(pid!=0)", libc::SYS_prlimit64, arg0_not_self),
    ("setpriority(other)", libc::SYS_setpriority, priority_other),
    ("getpriority(other)", libc::SYS_getpriority, priority_other),
    (
        "sched_setaffinity(pid!=0)",
        libc::SYS_sched_setaffinity,
        arg0_not_self,
    ),
    (
        "sched_setscheduler(pid!=0)",
        libc::SYS_sched_setscheduler,
        arg0_not_self,
    ),
    (
        "sched_setparam(pid!=0)",
        libc::SYS_sched_setparam,
        arg0_not_self,
    ),
    (
        "sched_setattr(pid!=0)",
        libc::SYS_sched_setattr,
        arg0_not_self,
    ),
    ("ioprio_set(other)", libc::SYS_ioprio_set, ioprio_other),
];

/// `ioctl(fd, TIOCSTI | TIOCLINUX)`: pushing keystrokes into a terminal's input (run as the
/// user once the server exits), or console selection tricks. The request is an `unsigned int`,
/// so only the low 32 bits are compared.
// `libc::Ioctl` is `c_ulong` with glibc and `c_int` with musl.
#[allow(clippy::unnecessary_cast)]
fn terminal_injection() -> Result<Vec<SeccompRule>, SeccompError> {
    Ok(vec![
        SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCSTI as u64)?])?,
        SeccompRule::new(vec![cond(1, SeccompCmpOp::Eq, libc::TIOCLINUX as u64)?])?,
    ])
}

/// A pid argument other than 0 (the caller itself): another process of the same user.
fn arg0_not_self() -> Result<Vec<SeccompRule>, SeccompError> {
    Ok(vec![SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, 0)?])?])
}

/// `{get,set}priority(which, who)`: only `PRIO_PROCESS` with `who == 0` names the caller alone
/// (`PRIO_PGRP`/`PRIO_USER` with 0 mean the caller's group or user, i.e. other processes).
fn priority_other() -> Result<Vec<SeccompRule>, SeccompError> {
    Ok(vec![
        SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, libc::PRIO_PROCESS as u64)?])?,
        SeccompRule::new(vec![cond(1, SeccompCmpOp::Ne, 0)?])?,
    ])
}

/// `ioprio_set(which, who)`: as for priorities, only `IOPRIO_WHO_PROCESS` (1) with `who == 0`.
fn ioprio_other() -> Result<Vec<SeccompRule>, SeccompError> {
    Ok(vec![
        SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, 1)?])?,
        SeccompRule::new(vec![cond(1, SeccompCmpOp::Ne, 0)?])?,
    ])
}

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, SeccompError> {
    Ok(SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

/// `socket(AF_UNIX, SOCK_DGRAM…)` (flags such as SOCK_CLOEXEC ignored).
fn unix_datagram_rule() -> Result<SeccompRule, SeccompError> {
    Ok(SeccompRule::new(vec![
        cond(0, SeccompCmpOp::Eq, libc::AF_UNIX as u64)?,
        cond(1, SeccompCmpOp::MaskedEq(0xf), libc::SOCK_DGRAM as u64)?,
    ])?)
}

/// Rules matching the `socket()` calls to refuse. Rules are OR-ed, conditions inside one AND-ed.
fn socket_rules(allow_tcp: bool) -> Result<Vec<SeccompRule>, SeccompError> {
    let unix = libc::AF_UNIX as u64;
    if !allow_tcp {
        return Ok(vec![SeccompRule::new(vec![cond(
            0,
            SeccompCmpOp::Ne,
            unix,
        )?])?]);
    }
    let inet = [libc::AF_INET as u64, libc::AF_INET6 as u64];
    // Only TCP: an AF_UNIX socket from `socket()` could connect() to a named socket, which
    // Landlock cannot judge here (the caller explains).
    let mut rules = vec![SeccompRule::new(vec![
        cond(0, SeccompCmpOp::Ne, inet[0])?,
        cond(0, SeccompCmpOp::Ne, inet[1])?,
    ])?];
    // The socket type's low bits, ignoring SOCK_NONBLOCK/SOCK_CLOEXEC.
    const NOT_STREAM: &[u64] = &[2, 3, 4, 5, 6, 10]; // DGRAM RAW RDM SEQPACKET DCCP PACKET
    for family in inet {
        for ty in NOT_STREAM {
            rules.push(SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Eq, family)?,
                cond(1, SeccompCmpOp::MaskedEq(0xf), *ty)?,
            ])?);
        }
        // SOCK_STREAM with another protocol (SCTP, MPTCP) would not be a TCP socket for
        // Landlock's port rules.
        rules.push(SeccompRule::new(vec![
            cond(0, SeccompCmpOp::Eq, family)?,
            cond(2, SeccompCmpOp::Ne, 0)?,
            cond(2, SeccompCmpOp::Ne, libc::IPPROTO_TCP as u64)?,
        ])?);
    }
    Ok(rules)
}

fn to_libc(program: &BpfProgram) -> Vec<libc::sock_filter> {
    program
        .iter()
        .map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        })
        .collect()
}

/// x32 syscall numbers have this bit set (x86_64's audit arch, numbers offset by it).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// On x86_64 the x32 ABI reuses the x86_64 audit arch with syscall numbers offset by
/// `0x4000_0000`, which a number-by-number filter would miss. Refuse every x32 call up front
/// (kernels without x32 support reject them anyway).
fn with_x32_guard(program: Vec<libc::sock_filter>) -> Vec<libc::sock_filter> {
    if !cfg!(target_arch = "x86_64") {
        return program;
    }
    const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    let mut out = vec![
        // Load seccomp_data.nr (offset 0).
        libc::sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: BPF_JGE_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        libc::sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
    ];
    out.extend(program);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::linux::sys;

    /// What the kernel answers with `programs` attached in order: the most restrictive action,
    /// and among equal ones the last attached filter's (seccomp's precedence).
    fn answer(programs: &[Vec<libc::sock_filter>], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
        let mut best: Option<u32> = None;
        for p in programs.iter().rev() {
            let (ret, _) = super::super::bpf::evaluate(p, nr, arch, args);
            let action = ret & libc::SECCOMP_RET_ACTION_FULL;
            if best.is_none_or(|b| (action as i32) < ((b & libc::SECCOMP_RET_ACTION_FULL) as i32)) {
                best = Some(ret);
            }
        }
        best.unwrap_or(libc::SECCOMP_RET_ALLOW)
    }

    /// The one dispatched program answers exactly as the two chains did, for every syscall
    /// number (x32's included), both architectures, and arguments that hit each rule.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_dispatched_program_answers_like_the_chains() {
        let arg_sets: Vec<[u64; 6]> = {
            let mut v = vec![[0; 6], [u64::MAX; 6], [1, 1, 1, 0, 0, 0]];
            for flag in CLONE_NAMESPACE_FLAGS {
                v.push([*flag | libc::SIGCHLD as u64, 0, 0, 0, 0, 0]);
            }
            #[allow(clippy::unnecessary_cast)]
            for request in [
                libc::TIOCSTI as u64,
                libc::TIOCLINUX as u64,
                libc::FIONREAD as u64,
            ] {
                v.push([0, request, 0, 0, 0, 0]);
                v.push([0, request | (1 << 32), 0, 0, 0, 0]);
            }
            for family in [
                libc::AF_UNIX,
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
            ] {
                for ty in [1u64, 2, 3, 5, 1 | libc::SOCK_CLOEXEC as u64] {
                    for proto in [0u64, libc::IPPROTO_TCP as u64, 132] {
                        v.push([family as u64, ty, proto, 0, 0, 0]);
                    }
                }
            }
            v.push([libc::PRIO_PROCESS as u64, 0, 0, 0, 0, 0]);
            v.push([libc::PRIO_USER as u64, 0, 0, 0, 0, 0]);
            v.push([1, 7, 0, 0, 0, 0]);
            v
        };
        let off = NetRules::default();
        let tcp = NetRules {
            tcp_bind_ports: vec![8080],
            ..NetRules::default()
        };
        let all = NetRules {
            allow_all: true,
            ..NetRules::default()
        };
        for net in [off, tcp, all] {
            let arch = TargetArch::x86_64;
            let chains = chains(rules_for(&net).unwrap().0, arch).unwrap();
            let plan = SeccompPlan::compile(&net).unwrap();
            assert_eq!(plan.programs.len(), 1, "one program on x86_64");
            assert!(
                plan.programs[0].len() < chains[0].len(),
                "{}",
                plan.programs[0].len()
            );
            for arch in [0xc000_003e, 0x4000_0003] {
                for nr in (0..600).chain(X32_SYSCALL_BIT..X32_SYSCALL_BIT + 600) {
                    for args in &arg_sets {
                        assert_eq!(
                            answer(&plan.programs, nr, arch, *args),
                            answer(&chains, nr, arch, *args),
                            "nr {nr} arch {arch:#x} args {args:x?}"
                        );
                    }
                }
            }
        }
    }

    /// `TIOCSTI` on a terminal the process holds: allowed before the filter (root may inject
    /// into any terminal; this kernel has dev.tty.legacy_tiocsti = 1), EPERM after it. The
    /// integration tests cannot reach this rule (a jailed server never holds a terminal), so
    /// the filter is tried on its own here, in a throwaway child.
    #[test]
    fn tiocsti_and_tioclinux_are_refused_by_the_filter() {
        let plan = SeccompPlan::compile(&NetRules::default()).unwrap();
        let mut master: libc::c_int = -1;
        let mut slave: libc::c_int = -1;
        // SAFETY: valid out-pointers; the other arguments may be NULL.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(rc, 0);
        let inject = |slave: libc::c_int| -> i32 {
            let c: u8 = b'x';
            // SAFETY: TIOCSTI reads one byte from `c`, which lives for the call.
            if unsafe { libc::ioctl(slave, libc::TIOCSTI, &c) } == 0 {
                0
            } else {
                std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
            }
        };
        let answer = sys::in_forked_child::<8>(&|| {
            let before = inject(slave);
            let mut after = -1;
            if sys::set_no_new_privs().is_ok()
                && plan
                    .programs
                    .iter()
                    .all(|p| sys::install_seccomp(p).is_ok())
            {
                after = inject(slave);
            }
            let mut out = [0u8; 8];
            out[..4].copy_from_slice(&before.to_le_bytes());
            out[4..].copy_from_slice(&after.to_le_bytes());
            out
        })
        .unwrap();
        // SAFETY: both were opened above and are not used again.
        unsafe {
            libc::close(master);
            libc::close(slave);
        }
        let before = i32::from_le_bytes([answer[0], answer[1], answer[2], answer[3]]);
        let after = i32::from_le_bytes([answer[4], answer[5], answer[6], answer[7]]);
        if sys::effective_ids().0 == 0 {
            assert_eq!(before, 0, "control: root injects into a terminal it holds");
        }
        assert_eq!(after, libc::EPERM);
    }
}
