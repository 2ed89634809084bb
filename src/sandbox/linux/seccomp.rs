//! The seccomp-bpf layer: syscalls a confined MCP server never needs, answered with an error.
//!
//! Landlock governs paths, TCP ports, signals and abstract sockets; it does not see UDP, raw or
//! netlink sockets, kernel attack surface such as `bpf` or `io_uring`, or cross-process memory
//! access. This filter closes those. Denied calls fail with `EPERM` (never kill): a server that
//! probes for a feature should get an error it can handle, not die.
//!
//! The program is compiled once in the parent; the child only installs the finished bytes.
//! `clone3` and `openat2` fail with `ENOSYS` so libc falls back to `clone` and `openat`, whose
//! flags *can* be inspected (namespace creation, and set-uid/set-gid modes, are refused there):
//! their own arguments are structs in the caller's memory, which seccomp cannot read. On x86_64
//! it is one program with a search over the syscall numbers in front and a block of argument
//! tests per syscall behind it ([`dispatched`], see [`super::bpf`]: short, so cheap to attach);
//! elsewhere seccompiler's chain and a second tiny program for `clone3` and `openat2`
//! ([`chains`]), which the tests also hold the x86_64 program to.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::bpf::{ArgOp, ArgTest};
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
    /// Whether `listen()` is refused (TCP judged by Landlock, no bind port allowed): its
    /// auto-bind of an unbound socket never meets Landlock's bind check. With a bind port it
    /// must stay, and that auto-bind stays open.
    pub listen_refused: bool,
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

/// Refused syscalls by number: refused when any of its rules holds (a rule holds when all its
/// tests do); an empty list refuses the syscall whatever its arguments.
type Rules = BTreeMap<i64, Vec<Rule>>;
type Rule = Vec<ArgTest>;

impl SeccompPlan {
    /// Compile the filters for `net`: on x86_64 one program with a search in front and blocks
    /// of argument tests behind it ([`dispatched`]), elsewhere (or if the search or a block does
    /// not fit) the two chains seccompiler builds.
    pub fn compile(net: &NetRules) -> Result<Self, SeccompError> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|_| SeccompError::UnsupportedArch(std::env::consts::ARCH))?;
        let (rules, denied, sockets_unix_only) = rules_for(net);
        let programs = match dispatched(&rules) {
            Some(one) => vec![one],
            None => chains(&rules, arch)?,
        };
        let tcp_judged = tcp_judged_by_landlock(net);
        Ok(SeccompPlan {
            programs,
            denied,
            sockets_unix_only,
            named_unix_closed: !net.allow_all,
            listen_refused: tcp_judged && net.tcp_bind_ports.is_empty(),
        })
    }
}

/// Whether TCP sockets may be made and Landlock's port rules are what confine them (TCP ports
/// open, without `--allow-net`).
fn tcp_judged_by_landlock(net: &NetRules) -> bool {
    !net.allow_all && (!net.connect_ports().is_empty() || !net.tcp_bind_ports.is_empty())
}

/// Syscalls answered with `ENOSYS`, so that libc falls back to an older call whose arguments
/// this filter can read: `clone3` and `openat2` take a struct in the caller's memory (namespace
/// flags; the new file's mode), which seccomp cannot look into. Both are young (Linux 5.3 and
/// 5.6), so every caller already falls back on `ENOSYS`.
const ANSWERED_ENOSYS: &[(&str, libc::c_long)] =
    &[("clone3", libc::SYS_clone3), ("openat2", libc::SYS_openat2)];

/// The rules for `net` (by syscall number; an empty list refuses the syscall whatever its
/// arguments), the names for the report, and whether only UNIX sockets may be made.
fn rules_for(net: &NetRules) -> (Rules, Vec<&'static str>, bool) {
    let mut rules = Rules::new();
    let mut denied = Vec::new();
    for (name, nr) in ALWAYS_DENIED {
        // An empty rule list matches the syscall unconditionally.
        rules.insert(*nr, Vec::new());
        denied.push(*name);
    }
    let mut clone_rules = Vec::new();
    for flag in CLONE_NAMESPACE_FLAGS {
        clone_rules.push(vec![ArgTest {
            arg: 0,
            wide: true,
            op: ArgOp::MaskedEq {
                mask: *flag,
                value: *flag,
            },
        }]);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    denied.push("clone(CLONE_NEW*)");

    for (name, nr, rules_for) in ARGUMENT_RULES {
        rules.insert(*nr, rules_for());
        denied.push(*name);
    }
    for (nr, args) in SET_ID_MODES {
        rules.insert(*nr, set_id_mode_rules(args));
    }
    denied.push("chmod/fchmod/fchmodat/fchmodat2/open/openat/creat/mknod/mknodat(S_ISUID|S_ISGID)");

    let tcp_ports = tcp_judged_by_landlock(net);
    let sockets_unix_only = !net.allow_all && !tcp_ports;
    if !net.allow_all {
        // UDP, raw, netlink, packet, vsock...: Landlock has no rule for them (UDP needs ABI
        // 10), so with the network off only local UNIX sockets may be created. With TCP
        // ports allowed, plain TCP sockets are let through for Landlock's port rules to judge.
        // Types are allowed by list, never refused by list: the kernel turns some types into
        // others (`socket(AF_UNIX, SOCK_RAW)` is a datagram socket).
        rules.insert(libc::SYS_socket, socket_rules(tcp_ports));
        rules.insert(
            libc::SYS_socketpair,
            vec![
                vec![ne(0, libc::AF_UNIX as u64)],
                unix_type_not_connected_rule(),
            ],
        );
        denied.push(if tcp_ports {
            "socket(!TCP)"
        } else {
            "socket(!AF_UNIX)"
        });
        // A socketpair's stream or seqpacket ends are connected to each other for good
        // (runtimes use them); a datagram end can `sendto` any named socket, and SOCK_RAW is
        // made a datagram one by the kernel.
        denied.push("socketpair(!AF_UNIX, or a type but SOCK_STREAM/SOCK_SEQPACKET)");
    }
    if tcp_ports {
        // connect() must stay for TCP, and Landlock (ABI 7) cannot judge a UNIX socket's
        // path, so the named-socket route is closed one step earlier: `socket_rules` makes
        // `socket()` refuse AF_UNIX altogether (only an unconnected socket can connect to
        // a path); a socketpair is never a datagram one (above).
        denied.push("socket(AF_UNIX)");
        // TCP Fast Open: `sendto`/`sendmsg`/`sendmmsg` with MSG_FASTOPEN connect a TCP socket
        // without passing the LSM connect hook (landlock-lsm issue 41), so Landlock's connect
        // rule would not be asked and any port of any host would be reachable. No runtime sends
        // with it unasked. (TCP_FASTOPEN_CONNECT is harmless: its connect() is checked.)
        for (nr, flags_arg) in SEND_FLAGS {
            rules.insert(*nr, vec![vec![has_bit(*flags_arg, MSG_FASTOPEN)]]);
        }
        denied.push("sendto/sendmsg/sendmmsg(MSG_FASTOPEN)");
        if net.tcp_bind_ports.is_empty() {
            // listen() on an unbound socket binds it to an ephemeral port on every address
            // (inet_autobind), past Landlock's bind check. Without a bind port there is nothing
            // a server may legitimately listen on (socket() makes no AF_UNIX socket here).
            rules.insert(libc::SYS_listen, Vec::new());
            denied.push("listen");
        }
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
        if let Some(list) = rules.get_mut(&libc::SYS_socket) {
            list.push(unix_type_not_connected_rule());
        }
        denied.push("socket(AF_UNIX, a type but SOCK_STREAM/SOCK_SEQPACKET)");
    }

    (rules, denied, sockets_unix_only)
}

/// The main chain behind the x32 guard, and a second program answering [`ANSWERED_ENOSYS`]'s
/// calls with `ENOSYS` (so libc falls back to calls whose arguments the main one inspects).
fn chains(rules: &Rules, arch: TargetArch) -> Result<Vec<Vec<libc::sock_filter>>, SeccompError> {
    let main = refusing(in_seccompiler_terms(rules)?, libc::EPERM, arch)?;
    let mut fallbacks = BTreeMap::new();
    for (_, nr) in ANSWERED_ENOSYS {
        fallbacks.insert(*nr, Vec::new());
    }
    Ok(vec![
        with_x32_guard(main),
        refusing(fallbacks, libc::ENOSYS, arch)?,
    ])
}

/// `rules` as seccompiler's conditions.
fn in_seccompiler_terms(rules: &Rules) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SeccompError> {
    let mut out = BTreeMap::new();
    for (nr, list) in rules {
        let mut converted = Vec::with_capacity(list.len());
        for rule in list {
            let mut conditions = Vec::with_capacity(rule.len());
            for test in rule {
                let (op, value) = match test.op {
                    ArgOp::Eq(v) => (SeccompCmpOp::Eq, v),
                    ArgOp::Ne(v) => (SeccompCmpOp::Ne, v),
                    ArgOp::MaskedEq { mask, value } => (SeccompCmpOp::MaskedEq(mask), value),
                };
                let len = if test.wide {
                    SeccompCmpArgLen::Qword
                } else {
                    SeccompCmpArgLen::Dword
                };
                conditions.push(SeccompCondition::new(test.arg, len, op, value)?);
            }
            converted.push(SeccompRule::new(conditions)?);
        }
        out.insert(*nr, converted);
    }
    Ok(out)
}

/// seccompiler's program for `rules`: a matching call fails with `errno`, the rest is allowed.
fn refusing(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
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
/// syscalls (`EPERM`) and [`ANSWERED_ENOSYS`]'s (`ENOSYS`) at its leaves, lets every other
/// syscall without a rule through after a few comparisons, and sends each syscall with argument
/// rules to a block of its own tests. Another architecture is killed, as seccompiler's chain
/// does. `None` elsewhere, or if the search or a block does not fit: the caller uses the chains.
fn dispatched(rules: &Rules) -> Option<Vec<libc::sock_filter>> {
    use super::bpf::{rules_block, with_dispatch, Leaf};
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    let allow = libc::SECCOMP_RET_ALLOW;
    let mut leaves = Vec::with_capacity(rules.len() + ANSWERED_ENOSYS.len());
    let mut blocks: Vec<Vec<libc::sock_filter>> = Vec::new();
    // The rules each block was written for: syscalls with the same rules (the chmod family,
    // the `pid` checks) share one block.
    let mut written: Vec<&Vec<Rule>> = Vec::new();
    for (nr, list) in rules {
        let number = u32::try_from(*nr).ok()?;
        if list.is_empty() {
            leaves.push((number, Leaf::Return(eperm)));
            continue;
        }
        let index = match written.iter().position(|w| *w == list) {
            Some(index) => index,
            None => {
                blocks.push(rules_block(list, eperm, allow)?);
                written.push(list);
                blocks.len() - 1
            }
        };
        leaves.push((number, Leaf::Block(index)));
    }
    for (_, nr) in ANSWERED_ENOSYS {
        leaves.push((
            u32::try_from(*nr).ok()?,
            Leaf::Return(libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
        ));
    }
    let other_arch = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_KILL_PROCESS,
    }];
    with_dispatch(
        &other_arch,
        AUDIT_ARCH_X86_64,
        (X32_SYSCALL_BIT, eperm),
        &leaves,
        &blocks,
        allow,
    )
}

/// Syscalls refused only for some arguments (for the report, a name saying which).
type RulesFor = fn() -> Vec<Rule>;
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
fn terminal_injection() -> Vec<Rule> {
    vec![
        vec![eq(1, libc::TIOCSTI as u64)],
        vec![eq(1, libc::TIOCLINUX as u64)],
    ]
}

/// A pid argument other than 0 (the caller itself): another process of the same user.
fn arg0_not_self() -> Vec<Rule> {
    vec![vec![ne(0, 0)]]
}

/// `{get,set}priority(which, who)`: only `PRIO_PROCESS` with `who == 0` names the caller alone
/// (`PRIO_PGRP`/`PRIO_USER` with 0 mean the caller's group or user, i.e. other processes).
fn priority_other() -> Vec<Rule> {
    vec![vec![ne(0, libc::PRIO_PROCESS as u64)], vec![ne(1, 0)]]
}

/// `ioprio_set(which, who)`: as for priorities, only `IOPRIO_WHO_PROCESS` (1) with `who == 0`.
fn ioprio_other() -> Vec<Rule> {
    vec![vec![ne(0, 1)], vec![ne(1, 0)]]
}

/// Argument `arg`'s low 32 bits (an `int`) equal `value`.
fn eq(arg: u8, value: u64) -> ArgTest {
    ArgTest {
        arg,
        wide: false,
        op: ArgOp::Eq(value),
    }
}

/// Argument `arg`'s low 32 bits differ from `value`.
fn ne(arg: u8, value: u64) -> ArgTest {
    ArgTest {
        arg,
        wide: false,
        op: ArgOp::Ne(value),
    }
}

/// Argument `arg`'s low 32 bits have every bit of `bits` set.
fn has_bit(arg: u8, bits: u64) -> ArgTest {
    ArgTest {
        arg,
        wide: false,
        op: ArgOp::MaskedEq {
            mask: bits,
            value: bits,
        },
    }
}

/// The `type` argument's values a socket of one of `types` may be asked with: the type and any
/// of the two flags the kernel accepts beside it (any other bit is `EINVAL`). Compared as the
/// full 32-bit `int`, so an allow-list of these is exact.
fn type_values(types: &[libc::c_int]) -> Vec<u64> {
    let mut values = Vec::new();
    for ty in types {
        for flags in [
            0,
            libc::SOCK_NONBLOCK,
            libc::SOCK_CLOEXEC,
            libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
        ] {
            values.push((ty | flags) as u32 as u64);
        }
    }
    values
}

/// An `AF_UNIX` socket of a connection-oriented type is all a jailed server may make: a
/// `SOCK_STREAM` or `SOCK_SEQPACKET` socket reaches a named socket only through `connect()`
/// (refused, or never given an unconnected AF_UNIX socket), while a datagram one reaches it by
/// `sendto`. The rule matches every other type: `SOCK_DGRAM`, and `SOCK_RAW`, which the kernel
/// quietly makes a datagram socket (`unix_create`).
fn unix_type_not_connected_rule() -> Rule {
    let mut tests = vec![eq(0, libc::AF_UNIX as u64)];
    for value in type_values(&[libc::SOCK_STREAM, libc::SOCK_SEQPACKET]) {
        tests.push(ne(1, value));
    }
    tests
}

/// Rules matching the `socket()` calls to refuse. Rules are OR-ed, conditions inside one AND-ed.
fn socket_rules(allow_tcp: bool) -> Vec<Rule> {
    let unix = libc::AF_UNIX as u64;
    if !allow_tcp {
        return vec![vec![ne(0, unix)]];
    }
    let inet = [libc::AF_INET as u64, libc::AF_INET6 as u64];
    // Only TCP: an AF_UNIX socket from `socket()` could connect() to a named socket, which
    // Landlock cannot judge here (the caller explains).
    let mut rules = vec![vec![ne(0, inet[0]), ne(0, inet[1])]];
    for family in inet {
        // Any type but SOCK_STREAM (with its flags): UDP, raw, SCTP's seqpacket, and whatever
        // a later kernel maps a type number to.
        let mut not_stream = vec![eq(0, family)];
        for value in type_values(&[libc::SOCK_STREAM]) {
            not_stream.push(ne(1, value));
        }
        rules.push(not_stream);
        // SOCK_STREAM with another protocol (SCTP, MPTCP) would not be a TCP socket for
        // Landlock's port rules.
        rules.push(vec![
            eq(0, family),
            ne(2, 0),
            ne(2, libc::IPPROTO_TCP as u64),
        ]);
    }
    rules
}

/// `MSG_FASTOPEN` (uapi `linux/socket.h`; not in every libc).
const MSG_FASTOPEN: u64 = 0x2000_0000;

/// The send calls that take flags, and which argument holds them. (`send` is `sendto` on the
/// architectures we build for; a `sendmmsg`'s per-message `msg_flags` are ignored on send.)
const SEND_FLAGS: &[(libc::c_long, u8)] = &[
    (libc::SYS_sendto, 3),
    (libc::SYS_sendmsg, 2),
    (libc::SYS_sendmmsg, 3),
];

/// Where a mode argument can give a file set-uid or set-gid bits: the syscall, the mode's
/// argument, and the flags' argument when the mode only counts with `O_CREAT`/`O_TMPFILE`.
struct ModeArgs {
    mode: u8,
    open_flags: Option<u8>,
}

/// `fchmodat2` (Linux 6.6): one number on every architecture; not in every libc.
const SYS_FCHMODAT2: libc::c_long = 452;

/// A server run as root owns what it creates, so it may give its file set-uid or set-gid bits
/// without any capability; in the write scope that file outlives the session, and run on the
/// host by another user (whose exec knows nothing of the jail's `no_new_privs`) it runs as
/// root. Inside the jail no server needs those bits, so setting them fails with `EPERM`:
/// - the chmod family;
/// - creating with such a mode: `open`/`openat` with `O_CREAT` or `O_TMPFILE` (then linked in
///   place), `creat`, `mknod`/`mknodat` (which make regular files too);
/// - `openat2` carries its mode in a struct: answered `ENOSYS` ([`ANSWERED_ENOSYS`]).
///
/// `mkdir`/`mkdirat` are not filtered: the kernel ignores set-uid/set-gid in their mode
/// (`vfs_mkdir` keeps only the permission and sticky bits), and a new directory's set-gid bit,
/// inherited from its parent, is the kernel's doing, which stays. A write to a set-uid file
/// clears the bit (the server has no `CAP_FSETID`), and `chown` needs `CAP_CHOWN`.
const SET_ID_MODES: &[(libc::c_long, ModeArgs)] = &[
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_chmod,
        ModeArgs {
            mode: 1,
            open_flags: None,
        },
    ),
    (
        libc::SYS_fchmod,
        ModeArgs {
            mode: 1,
            open_flags: None,
        },
    ),
    (
        libc::SYS_fchmodat,
        ModeArgs {
            mode: 2,
            open_flags: None,
        },
    ),
    (
        SYS_FCHMODAT2,
        ModeArgs {
            mode: 2,
            open_flags: None,
        },
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_open,
        ModeArgs {
            mode: 2,
            open_flags: Some(1),
        },
    ),
    (
        libc::SYS_openat,
        ModeArgs {
            mode: 3,
            open_flags: Some(2),
        },
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_creat,
        ModeArgs {
            mode: 1,
            open_flags: None,
        },
    ),
    #[cfg(target_arch = "x86_64")]
    (
        libc::SYS_mknod,
        ModeArgs {
            mode: 1,
            open_flags: None,
        },
    ),
    (
        libc::SYS_mknodat,
        ModeArgs {
            mode: 2,
            open_flags: None,
        },
    ),
];

/// Rules matching a call of [`SET_ID_MODES`] that asks for S_ISUID or S_ISGID. An open's mode is
/// looked at only when it creates (otherwise the kernel ignores it, and libcs pass junk there).
fn set_id_mode_rules(args: &ModeArgs) -> Vec<Rule> {
    // O_TMPFILE without its O_DIRECTORY part: the bit that makes the open create.
    let creating = [
        libc::O_CREAT as u64,
        (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64,
    ];
    let mut rules = Vec::new();
    for bit in [libc::S_ISUID as u64, libc::S_ISGID as u64] {
        let asks = has_bit(args.mode, bit);
        match args.open_flags {
            None => rules.push(vec![asks]),
            Some(at) => {
                for flag in creating {
                    rules.push(vec![asks, has_bit(at, flag)]);
                }
            }
        }
    }
    rules
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
            for flags in [0, libc::O_CREAT as u64, libc::O_TMPFILE as u64] {
                for mode in [0o755u64, 0o4755, 0o2755, 0o6000 | (1 << 32)] {
                    v.push([0, flags, mode, mode, 0, 0]);
                    v.push([0, mode, flags, mode, 0, 0]);
                }
            }
            v.push([3, 0, MSG_FASTOPEN, MSG_FASTOPEN, 0, 0]);
            v.push([3, 0, 0, libc::MSG_DONTWAIT as u64, 0, 0]);
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
        let connect = NetRules {
            tcp_connect_ports: vec![443],
            ..NetRules::default()
        };
        for net in [off, tcp, connect, all] {
            let arch = TargetArch::x86_64;
            let rules = rules_for(&net).0;
            let chains = chains(&rules, arch).unwrap();
            let plan = SeccompPlan::compile(&net).unwrap();
            assert_eq!(plan.programs.len(), 1, "one program on x86_64");
            // The point of it: the kernel compiles every instruction at each attach.
            assert!(
                plan.programs[0].len() * 2 < chains[0].len(),
                "{} instructions, the chain {}",
                plan.programs[0].len(),
                chains[0].len()
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
            // Each ruled syscall with arguments made of its rules' own constants, their
            // neighbours and their high words: every test both holds and fails.
            for (nr, list) in &rules {
                let mut pool = vec![0, u64::MAX, 1 << 32];
                for test in list.iter().flatten() {
                    let (ArgOp::Eq(v) | ArgOp::Ne(v) | ArgOp::MaskedEq { value: v, .. }) = test.op;
                    let mask = match test.op {
                        ArgOp::MaskedEq { mask, .. } => mask,
                        _ => v,
                    };
                    for x in [v, mask, v ^ 1, v.wrapping_add(1), v | 1 << 32, !mask] {
                        if !pool.contains(&x) {
                            pool.push(x);
                        }
                    }
                }
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ (*nr as u64);
                let mut next = |n: usize| {
                    // xorshift: the same arguments on every run.
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % n as u64) as usize
                };
                for _ in 0..3000 {
                    let args: [u64; 6] = std::array::from_fn(|_| pool[next(pool.len())]);
                    assert_eq!(
                        answer(&plan.programs, *nr as u32, 0xc000_003e, args),
                        answer(&chains, *nr as u32, 0xc000_003e, args),
                        "nr {nr} args {args:x?}"
                    );
                }
            }
        }
    }

    /// What the compiled filter answers for one call: `Ok(())` allowed, `Err(errno)` refused.
    fn verdict(net: &NetRules, nr: libc::c_long, args: [u64; 6]) -> Result<(), u32> {
        let plan = SeccompPlan::compile(net).unwrap();
        let native = if cfg!(target_arch = "x86_64") {
            0xc000_003e
        } else {
            0xc000_00b7 // aarch64
        };
        match answer(&plan.programs, nr as u32, native, args) {
            libc::SECCOMP_RET_ALLOW => Ok(()),
            ret => Err(ret & libc::SECCOMP_RET_DATA),
        }
    }

    fn nets() -> [(&'static str, NetRules); 4] {
        [
            ("off", NetRules::default()),
            (
                "connect",
                NetRules {
                    tcp_connect_ports: vec![443],
                    ..NetRules::default()
                },
            ),
            (
                "bind",
                NetRules {
                    tcp_bind_ports: vec![8080],
                    ..NetRules::default()
                },
            ),
            (
                "all",
                NetRules {
                    allow_all: true,
                    ..NetRules::default()
                },
            ),
        ]
    }

    /// AF_UNIX socket types are allowed by list: SOCK_RAW (a datagram socket in the kernel's
    /// eyes), SOCK_DGRAM and every unknown type are refused wherever the network is judged;
    /// `socket()` keeps stream and seqpacket only with the network off, `socketpair()` in
    /// every judged mode.
    #[test]
    fn unix_socket_types_are_allowed_by_list() {
        let unix = libc::AF_UNIX as u64;
        for (name, net) in nets() {
            for ty in 0..16u64 {
                for flags in [0, libc::SOCK_CLOEXEC as u64 | libc::SOCK_NONBLOCK as u64] {
                    let connected = ty == libc::SOCK_STREAM as u64 || ty == 5;
                    let args = [unix, ty | flags, 0, 0, 0, 0];
                    let socket = verdict(&net, libc::SYS_socket, args);
                    let pair = verdict(&net, libc::SYS_socketpair, args);
                    let (want_socket, want_pair) = match name {
                        "all" => (Ok(()), Ok(())),
                        "off" if connected => (Ok(()), Ok(())),
                        _ if connected => (Err(libc::EPERM as u32), Ok(())),
                        _ => (Err(libc::EPERM as u32), Err(libc::EPERM as u32)),
                    };
                    assert_eq!(socket, want_socket, "{name} socket type {ty} {flags:#x}");
                    assert_eq!(pair, want_pair, "{name} socketpair type {ty} {flags:#x}");
                }
            }
        }
    }

    /// With TCP ports open, only a TCP socket: `SOCK_STREAM` (flags aside) with protocol 0 or
    /// TCP; any other type number, known or not, is refused.
    #[test]
    fn inet_socket_types_are_allowed_by_list() {
        let (_, connect) = nets()[1].clone();
        for family in [libc::AF_INET as u64, libc::AF_INET6 as u64] {
            for ty in 0..16u64 {
                for proto in [0, libc::IPPROTO_TCP as u64, 262] {
                    let stream = ty == libc::SOCK_STREAM as u64 && proto != 262; // IPPROTO_MPTCP
                    let got = verdict(
                        &connect,
                        libc::SYS_socket,
                        [family, ty | libc::SOCK_CLOEXEC as u64, proto, 0, 0, 0],
                    );
                    let want = if stream {
                        Ok(())
                    } else {
                        Err(libc::EPERM as u32)
                    };
                    assert_eq!(got, want, "family {family} type {ty} proto {proto}");
                }
            }
        }
    }

    /// MSG_FASTOPEN connects past Landlock's connect check: refused wherever TCP is judged by
    /// port; `listen()` (whose auto-bind passes the bind check) where no bind port is allowed.
    #[test]
    fn fast_open_and_listen_are_refused_where_landlock_judges_tcp() {
        let eperm = Err(libc::EPERM as u32);
        for (name, net) in nets() {
            let judged = name == "connect" || name == "bind";
            for (nr, at) in SEND_FLAGS {
                let mut args = [3, 0, 0, 0, 0, 0];
                args[usize::from(*at)] = MSG_FASTOPEN | libc::MSG_NOSIGNAL as u64;
                let want = if judged { eperm } else { Ok(()) };
                assert_eq!(verdict(&net, *nr, args), want, "{name} {nr} fast open");
                args[usize::from(*at)] = libc::MSG_NOSIGNAL as u64;
                assert_eq!(verdict(&net, *nr, args), Ok(()), "{name} {nr} plain");
            }
            let want = if name == "connect" { eperm } else { Ok(()) };
            assert_eq!(
                verdict(&net, libc::SYS_listen, [3, 128, 0, 0, 0, 0]),
                want,
                "{name} listen"
            );
        }
    }

    /// Set-uid/set-gid modes are refused in the chmod family and when creating; a mode beside
    /// no O_CREAT/O_TMPFILE (ignored by the kernel), plain modes and mkdir are let through;
    /// openat2 answers ENOSYS.
    #[test]
    fn set_id_modes_are_refused() {
        let eperm = Err(libc::EPERM as u32);
        let net = NetRules::default();
        let at = libc::AT_FDCWD as u32 as u64;
        let creat = libc::O_CREAT as u64 | libc::O_WRONLY as u64;
        let tmpfile = libc::O_TMPFILE as u64 | libc::O_RDWR as u64;
        for (nr, args, want) in [
            (libc::SYS_fchmod, [3, 0o4755, 0, 0, 0, 0], eperm),
            (libc::SYS_fchmod, [3, 0o2750, 0, 0, 0, 0], eperm),
            (libc::SYS_fchmod, [3, 0o1777, 0, 0, 0, 0], Ok(())),
            (libc::SYS_fchmodat, [at, 0, 0o6755, 0, 0, 0], eperm),
            (libc::SYS_fchmodat, [at, 0, 0o755, 0, 0, 0], Ok(())),
            (SYS_FCHMODAT2, [at, 0, 0o4700, 0, 0, 0], eperm),
            (libc::SYS_openat, [at, 0, creat, 0o4755, 0, 0], eperm),
            (libc::SYS_openat, [at, 0, tmpfile, 0o2700, 0, 0], eperm),
            (libc::SYS_openat, [at, 0, creat, 0o644, 0, 0], Ok(())),
            (
                libc::SYS_openat,
                [at, 0, libc::O_RDONLY as u64, 0o4755, 0, 0],
                Ok(()),
            ),
            (
                libc::SYS_mknodat,
                [at, 0, libc::S_IFREG as u64 | 0o4755, 0, 0, 0],
                eperm,
            ),
            (
                libc::SYS_mknodat,
                [at, 0, libc::S_IFIFO as u64 | 0o644, 0, 0, 0],
                Ok(()),
            ),
            (libc::SYS_mkdirat, [at, 0, 0o2775, 0, 0, 0], Ok(())),
            (
                libc::SYS_openat2,
                [at, 0, 0, 24, 0, 0],
                Err(libc::ENOSYS as u32),
            ),
        ] {
            assert_eq!(verdict(&net, nr, args), want, "nr {nr} args {args:?}");
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
