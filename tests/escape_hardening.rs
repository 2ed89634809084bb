//! Hardening classes (issue 9): attacks the Landlock rules alone do not stop, each with a
//! control run showing the same attempt succeeds without the jail.
//!
//! The attacker is a small Python program (`/usr/bin/python3 -c PROBE`) started through
//! `sandbox::prepare_with_env(..).command()`; it prints one JSON object, attempt ->
//! `OK[:detail]` or `ERR:<errno name>`. Every scenario runs as root (the test's own uid: sessions
//! and CI run as root) and, where the uid matters, again as `nobody` through `setpriv` in a fresh
//! process (this test binary re-run with `--exact helper_run_in_another_process`). The process
//! classes run the real `mcpjail-proxy` binary in front of the server.

#![cfg(target_os = "linux")]

mod rerun;

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr, OsString};
use std::io::{BufRead, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpjail::policy::{Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};

const PYTHON: &str = "/usr/bin/python3";
const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");
const NOBODY: u32 = 65534;

/// Shared by every probe: `attempt(name, f)` records `OK[:result]` or `ERR:<errno>`.
const PRELUDE: &str = r#"
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
out = {}
def attempt(name, f):
    try:
        r = f()
        out[name] = "OK" + ("" if r is None else ":" + str(r))
    except OSError as e:
        out[name] = "ERR:" + errno.errorcode.get(e.errno, str(e.errno))
def check(rc):
    if rc == -1 or rc is None:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return rc
def read(p):
    with open(p) as f:
        return f.read()
"#;

#[derive(Clone, Copy, PartialEq, Debug)]
enum How {
    /// The same attempt without the jail (`JailOptions { disabled: true }`: a plain spawn).
    Control,
    Jailed,
}

type Results = BTreeMap<String, String>;

fn get<'a>(r: &'a Results, key: &str) -> &'a str {
    r.get(key)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no result for {key}: {r:?}"))
}

fn token() -> String {
    let mut buf = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .unwrap();
    format!("CANARY-{:016x}", u64::from_ne_bytes(buf))
}

/// A world: a write scope and an `outside` directory next to it, both under a fresh temp root.
struct World {
    _root: tempfile::TempDir,
    scope: PathBuf,
    outside: PathBuf,
    token: String,
    /// The jail's network rules (the default: network off).
    net: mcpjail::policy::NetRules,
}

fn world() -> World {
    let root = tempfile::Builder::new()
        .prefix("mcpjail-harden-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let base = std::fs::canonicalize(root.path()).unwrap();
    let scope = base.join("scope");
    let outside = base.join("outside");
    std::fs::create_dir_all(&scope).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    World {
        _root: root,
        scope,
        outside,
        token: token(),
        net: Default::default(),
    }
}

/// Run `PRELUDE + body` with `args` in `w.scope`, jailed (write scope = `w.scope`) or not.
/// `stdin`, when given, becomes the probe's standard input.
async fn probe(
    w: &World,
    how: How,
    body: &str,
    args: &[String],
    stdin: Option<OwnedFd>,
) -> Results {
    let (results, _) = probe_with_report(w, how, body, args, stdin).await;
    results
}

async fn probe_with_report(
    w: &World,
    how: How,
    body: &str,
    args: &[String],
    stdin: Option<OwnedFd>,
) -> (Results, String) {
    let scope = Scope {
        write: vec![ScopeEntry {
            path: w.scope.clone(),
            source: ScopeSource::Flag,
        }],
        net: w.net.clone(),
        ..Scope::default()
    };
    let opts = JailOptions {
        disabled: how == How::Control,
        // With a bind port the landlock_net layer is partial (listen()'s auto-bind, see
        // `the_landlock_net_layer_names_the_listen_autobind_it_cannot_close`).
        require_full: how == How::Jailed && w.net.tcp_bind_ports.is_empty(),
        ..JailOptions::default()
    };
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), w.outside.clone().into_os_string()),
    ];
    let mut command: Vec<String> = vec![
        PYTHON.into(),
        "-c".into(),
        format!("{PRELUDE}\n{body}\nprint(json.dumps(out))"),
    ];
    command.extend(args.iter().cloned());
    let jail = sandbox::prepare_with_env(&scope, &command, &w.scope, &opts, &env).unwrap();
    let mut cmd = jail.command();
    match stdin {
        Some(fd) => cmd.stdin(std::process::Stdio::from(fd)),
        None => cmd.stdin(std::process::Stdio::null()),
    };
    cmd.kill_on_drop(true);
    let out = cmd.output().await.expect("spawn the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{how:?} probe failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Results = serde_json::from_str(stdout.trim()).unwrap();
    println!("{how:?} (uid {}):", effective_uid());
    for (k, v) in &results {
        println!("  {k:<24} {v}");
    }
    (results, jail.report().to_string())
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

// ---------------------------------------------------------------------------------------------
// Scenarios: each runs as whoever runs it (root directly, nobody through the helper).

/// Class 1: a server handed a terminal pushes keystrokes into it with `TIOCSTI` (they run as the
/// user's shell input once the server exits). It tries its stdin, `/dev/tty`, and making the
/// terminal its controlling one first (which an unprivileged caller needs).
const TIOCSTI_PROBE: &str = r#"
import fcntl, termios
attempt("stdin_is_tty", lambda: str(os.isatty(0)))
attempt("tiocsti_stdin", lambda: fcntl.ioctl(0, termios.TIOCSTI, b"x") and None)
def dev_tty():
    fd = os.open("/dev/tty", os.O_RDWR)
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")
attempt("tiocsti_dev_tty", dev_tty)
def take_ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    fcntl.ioctl(0, termios.TIOCSTI, b"y")
attempt("tiocsti_after_setsid_ctty", take_ctty)
"#;

/// A fresh pty: `(master, slave)`.
fn open_pty() -> (OwnedFd, OwnedFd) {
    let mut master: libc::c_int = -1;
    let mut slave: libc::c_int = -1;
    // SAFETY: both out-pointers are valid; name, termios and winsize may be NULL.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty just returned both descriptors; nobody else owns them.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

async fn scenario_tiocsti(how: How) -> Results {
    let w = world();
    let (master, slave) = open_pty();
    let r = probe(&w, how, TIOCSTI_PROBE, &[], Some(slave)).await;
    drop(master);
    r
}

/// Class 2: a descriptor the parent leaked (no `O_CLOEXEC`) to a file outside the scope.
const FD_PROBE: &str = r#"
n = int(sys.argv[1])
attempt("read_fd", lambda: os.pread(n, 4096, 0).decode())
attempt("read_proc_self_fd", lambda: read("/proc/self/fd/%d" % n))
"#;

async fn scenario_leaked_fd(how: How) -> Results {
    let w = world();
    let secret = w.outside.join("secret");
    std::fs::write(&secret, format!("secret {}", w.token)).unwrap();
    let c = CString::new(secret.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is NUL-terminated; deliberately no O_CLOEXEC (the leak under test).
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY) };
    assert!(fd >= 0);
    // SAFETY: just opened, owned here; closed when the probe has run.
    let leaked = unsafe { OwnedFd::from_raw_fd(fd) };
    let r = probe(&w, how, FD_PROBE, &[fd.to_string()], None).await;
    drop(leaked);
    let leaked_token = r.values().any(|v| v.contains(&w.token));
    let mut r = r;
    r.insert("token_seen".into(), leaked_token.to_string());
    r
}

/// Class 3: reaching other processes of the same user without signals or ptrace: their
/// priority, resource limits, CPU affinity, and SysV shared memory.
const OTHERS_PROBE: &str = r#"
import resource
target, nice, shmid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
attempt("setpriority_other", lambda: os.setpriority(os.PRIO_PROCESS, target, nice))
attempt("getpriority_other", lambda: os.getpriority(os.PRIO_PROCESS, target))
attempt("prlimit_other", lambda: resource.prlimit(target, resource.RLIMIT_CORE))
attempt("setaffinity_other", lambda: os.sched_setaffinity(target, os.sched_getaffinity(target)))
libc.shmat.restype = ctypes.c_void_p
def shm():
    addr = libc.shmat(shmid, None, 0)
    if addr is None or addr == ctypes.c_void_p(-1).value:
        check(-1)
    return ctypes.string_at(addr, 40).split(b"\0")[0].decode()
attempt("shmat_outside_segment", shm)
# What the server may still do to itself.
attempt("setpriority_self", lambda: os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0)))
attempt("prlimit_self", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)))
attempt("setaffinity_self", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
"#;

async fn scenario_others(how: How) -> Results {
    let w = world();
    // SAFETY: plain syscalls with integer arguments; the segment is attached, written within
    // its 4096 bytes, detached, and removed after the probe.
    let shmid = unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600) };
    assert!(shmid >= 0, "shmget: {}", std::io::Error::last_os_error());
    unsafe {
        let addr = libc::shmat(shmid, std::ptr::null(), 0);
        assert_ne!(addr as isize, -1);
        let text = format!("shm {}\0", w.token);
        std::ptr::copy_nonoverlapping(text.as_ptr(), addr.cast::<u8>(), text.len());
        libc::shmdt(addr);
    }
    // SAFETY: getpriority takes integers only (errno is not checked: nice may be -1 legally).
    let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let args = [
        std::process::id().to_string(),
        nice.to_string(),
        shmid.to_string(),
    ];
    let r = probe(&w, how, OTHERS_PROBE, &args, None).await;
    // SAFETY: removes the segment created above.
    unsafe { libc::shmctl(shmid, libc::IPC_RMID, std::ptr::null_mut()) };
    r
}

/// Class 5: metadata of files outside the scope that the server's uid owns: mode (a set-uid
/// bit), ownership, times, extended attributes; and inside the scope, the same must work.
const METADATA_PROBE: &str = r#"
outside, inside = sys.argv[1], sys.argv[2]
uid, gid = os.getuid(), os.getgid()
for where, p in (("outside", outside), ("inside", inside)):
    attempt("chown_self_" + where, lambda: os.chown(p, uid, gid))
    attempt("utime_" + where, lambda: os.utime(p, (0, 0)))
    attempt("setxattr_" + where, lambda: os.setxattr(p, "user.mcpjail", b"x"))
    # A plain mode: set-uid bits are refused everywhere by seccomp (`set_id_modes` below), so
    # they would not show the read-only mount at work.
    attempt("chmod_" + where, lambda: os.chmod(p, 0o700))
def inotify():
    fd = check(libc.inotify_init1(0))
    return check(libc.inotify_add_watch(fd, os.path.dirname(outside).encode(), 0xfff))
attempt("inotify_watch_outside", inotify)
"#;

async fn scenario_metadata(how: How) -> Results {
    let w = world();
    let outside = w.outside.join("tool");
    let inside = w.scope.join("mine");
    for p in [&outside, &inside] {
        std::fs::write(p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let args = [outside.display().to_string(), inside.display().to_string()];
    let mut r = probe(&w, how, METADATA_PROBE, &args, None).await;
    use std::os::unix::fs::MetadataExt;
    let mode = std::fs::metadata(&outside).unwrap().mode() & 0o7777;
    r.insert("outside_mode_after".into(), format!("{mode:o}"));
    r
}

async fn scenario(name: &str, how: How) -> Results {
    match name {
        "tiocsti" => scenario_tiocsti(how).await,
        "leaked_fd" => scenario_leaked_fd(how).await,
        "others" => scenario_others(how).await,
        "metadata" => scenario_metadata(how).await,
        "unix_socket" => scenario_unix_socket(how, false).await,
        "unix_socket_tcp" => scenario_unix_socket(how, true).await,
        "proc_net" => scenario_proc_net(how).await,
        "tcp_connect_only" => scenario_tcp_past_landlock(how, false).await,
        "tcp_bind" => scenario_tcp_past_landlock(how, true).await,
        "set_id_modes" => scenario_set_id_modes(how).await,
        other => panic!("no scenario {other}"),
    }
}

const HELPER_CASE: &str = "MCPJAIL_HARDEN_HELPER_CASE";
const HELPER_HOW: &str = "MCPJAIL_HARDEN_HELPER_HOW";

/// Not a test on its own: runs one scenario in another process (as another uid) when the
/// variables are set; without them it does nothing.
#[tokio::test]
async fn helper_run_in_another_process() {
    let Ok(case) = std::env::var(HELPER_CASE) else {
        return;
    };
    let how = match std::env::var(HELPER_HOW).as_deref() {
        Ok("control") => How::Control,
        _ => How::Jailed,
    };
    let r = scenario(&case, how).await;
    println!("HARDEN-RESULT {}", serde_json::to_string(&r).unwrap());
}

/// Run `case` as nobody in a fresh process (TMPDIR must be one nobody can write: /tmp).
fn as_nobody(case: &str, how: How) -> Results {
    let how = if how == How::Control {
        "control"
    } else {
        "jailed"
    };
    let v = rerun::rerun(
        rerun::AS_NOBODY,
        "helper_run_in_another_process",
        &[
            (HELPER_CASE, case.as_ref()),
            (HELPER_HOW, how.as_ref()),
            ("TMPDIR", "/tmp".as_ref()),
        ],
        "HARDEN-RESULT ",
    );
    serde_json::from_value(v).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Class 1: terminal injection.

fn assert_tiocsti(control: &Results, jailed: &Results) {
    // Unjailed, one of the routes injects (root: any terminal; nobody: its controlling one).
    assert!(
        control.values().any(|v| v == "OK") && get(control, "tiocsti_after_setsid_ctty") == "OK",
        "control: {control:?}"
    );
    assert_eq!(get(control, "stdin_is_tty"), "OK:True");
    // Jailed: the terminal is gone from stdin, there is no controlling terminal, and the
    // session cannot be left to acquire one.
    assert_eq!(get(jailed, "stdin_is_tty"), "OK:False", "{jailed:?}");
    for key in [
        "tiocsti_stdin",
        "tiocsti_dev_tty",
        "tiocsti_after_setsid_ctty",
    ] {
        assert!(
            get(jailed, key).starts_with("ERR"),
            "jailed {key}: {jailed:?}"
        );
    }
    assert_eq!(get(jailed, "tiocsti_after_setsid_ctty"), "ERR:EPERM");
}

#[tokio::test]
async fn tiocsti_through_an_inherited_terminal_is_refused_as_root() {
    let control = scenario("tiocsti", How::Control).await;
    let jailed = scenario("tiocsti", How::Jailed).await;
    assert_eq!(
        get(&control, "tiocsti_stdin"),
        "OK",
        "root injects into any tty"
    );
    assert_tiocsti(&control, &jailed);
}

#[test]
fn tiocsti_through_an_inherited_terminal_is_refused_as_nobody() {
    let control = as_nobody("tiocsti", How::Control);
    let jailed = as_nobody("tiocsti", How::Jailed);
    assert_tiocsti(&control, &jailed);
}

// ---------------------------------------------------------------------------------------------
// Class 2: inherited descriptors.

fn assert_leaked_fd(control: &Results, jailed: &Results) {
    assert_eq!(get(control, "token_seen"), "true", "{control:?}");
    assert!(get(control, "read_fd").starts_with("OK:secret"));
    assert!(get(control, "read_proc_self_fd").starts_with("OK:secret"));
    assert_eq!(get(jailed, "token_seen"), "false", "{jailed:?}");
    assert_eq!(get(jailed, "read_fd"), "ERR:EBADF");
    assert!(get(jailed, "read_proc_self_fd").starts_with("ERR"));
}

#[tokio::test]
async fn a_leaked_descriptor_is_closed_before_exec_as_root() {
    let control = scenario("leaked_fd", How::Control).await;
    let jailed = scenario("leaked_fd", How::Jailed).await;
    assert_leaked_fd(&control, &jailed);
}

#[test]
fn a_leaked_descriptor_is_closed_before_exec_as_nobody() {
    let control = as_nobody("leaked_fd", How::Control);
    let jailed = as_nobody("leaked_fd", How::Jailed);
    assert_leaked_fd(&control, &jailed);
}

// ---------------------------------------------------------------------------------------------
// Class 3: other processes, SysV IPC.

fn assert_others(control: &Results, jailed: &Results, token_in_shm: bool) {
    for key in [
        "setpriority_other",
        "getpriority_other",
        "prlimit_other",
        "setaffinity_other",
    ] {
        assert!(
            get(control, key).starts_with("OK"),
            "control {key}: {control:?}"
        );
        // EPERM: refused (seccomp, capabilities); ESRCH: the target cannot even be named from
        // the server's PID namespace (where the kernel looks the pid up before any check).
        assert!(
            ["ERR:EPERM", "ERR:ESRCH"].contains(&get(jailed, key)),
            "jailed {key}: {jailed:?}"
        );
    }
    if token_in_shm {
        assert!(get(control, "shmat_outside_segment").starts_with("OK:shm CANARY-"));
    }
    assert_eq!(get(jailed, "shmat_outside_segment"), "ERR:EPERM");
    for key in ["setpriority_self", "prlimit_self", "setaffinity_self"] {
        assert_eq!(get(jailed, key), "OK", "jailed {key} (the server's own)");
    }
}

#[tokio::test]
async fn other_processes_and_sysv_shm_are_out_of_reach_as_root() {
    let control = scenario("others", How::Control).await;
    let jailed = scenario("others", How::Jailed).await;
    assert_others(&control, &jailed, true);
}

#[test]
fn other_processes_and_sysv_shm_are_out_of_reach_as_nobody() {
    let control = as_nobody("others", How::Control);
    let jailed = as_nobody("others", How::Jailed);
    assert_others(&control, &jailed, true);
}

/// A tiny MCP server for the proxy: it starts a plain child and a daemon (double fork, setsid,
/// own process group) that both sleep, writes their pids (and its own) to `<dir>/pids`, then
/// answers `initialize` and `tools/list` until stdin closes; with `linger` it then sleeps on.
const SPAWNER: &str = r#"
import json, os, subprocess, sys, time
d, linger = sys.argv[1], sys.argv[2] == "linger"
null = os.open("/dev/null", os.O_RDWR)
kid = subprocess.Popen(["/bin/sleep", "1000"], stdin=null, stdout=null, stderr=null).pid
r, w = os.pipe()
first = os.fork()
if first == 0:
    try:
        os.setsid()
    except OSError:
        pass
    if os.fork() == 0:
        try:
            os.setpgid(0, 0)
        except OSError:
            pass
        os.write(w, str(os.getpid()).encode())
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.execv("/bin/sleep", ["sleep", "1000"])
    os._exit(0)
os.waitpid(first, 0)
daemon = int(os.read(r, 32))
with open(os.path.join(d, "pids"), "w") as f:
    json.dump({"server": os.getpid(), "child": kid, "daemon": daemon}, f)
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "spawner", "version": "0"}}
    elif msg["method"] == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
while linger:
    time.sleep(1000)
"#;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"harden","version":"0"}}}"#;

struct Spawned {
    proxy: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    pids: BTreeMap<String, i32>,
    pidfds: BTreeMap<String, OwnedFd>,
}

/// Start the spawner behind the real proxy and wait for its `initialize` answer (by then the
/// pids file is written): returns the proxy and a pidfd for every process the server started.
fn spawn_behind_proxy(w: &World, how: How, linger: bool) -> Spawned {
    spawn_behind_proxy_as(w, how, linger, false)
}

/// [`spawn_behind_proxy`], the proxy run as `nobody` (through `setpriv`) when `as_nobody`: the
/// scope is then made writable for it, and its HOME is a fresh directory it owns.
fn spawn_behind_proxy_as(w: &World, how: How, linger: bool, as_nobody: bool) -> Spawned {
    let mut cmd = if as_nobody {
        let home = w.outside.join("nobody-home");
        std::fs::create_dir_all(&home).unwrap();
        for dir in [&w.scope, &home] {
            std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(PROXY)
            .env("HOME", &home)
            .env("TMPDIR", "/tmp");
        c
    } else {
        std::process::Command::new(PROXY)
    };
    cmd.arg("--allow-write").arg(&w.scope);
    cmd.arg(if how == How::Jailed {
        "--require-full"
    } else {
        "--no-jail"
    });
    cmd.arg("--")
        .arg(PYTHON)
        .arg("-c")
        .arg(SPAWNER)
        .arg(&w.scope)
        .arg(if linger { "linger" } else { "exit" });
    cmd.current_dir(&w.scope)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    let mut proxy = cmd.spawn().expect("start mcpjail-proxy");
    let mut stdin = proxy.stdin.take().unwrap();
    writeln!(stdin, "{INIT}").unwrap();
    stdin.flush().unwrap();
    let mut stdout = std::io::BufReader::new(proxy.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the proxy closed stdout"
        );
        if line.contains("spawner") {
            break;
        }
    }
    // Keep reading (and discarding) so the proxy never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let mut pids: BTreeMap<String, i32> =
        serde_json::from_str(&std::fs::read_to_string(w.scope.join("pids")).unwrap()).unwrap();
    // The pids are as the server saw them: jailed, it runs as pid 1 of a PID namespace of its
    // own (created for the children of the process the proxy spawned).
    let ns = std::fs::read_link(format!(
        "/proc/{}/ns/pid_for_children",
        child_of(proxy.id() as i32)
    ))
    .unwrap();
    for pid in pids.values_mut() {
        *pid = host_pid(*pid, &ns);
    }
    let pidfds = pids
        .iter()
        .map(|(k, pid)| {
            // SAFETY: pidfd_open takes integers only.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, *pid, 0u32) };
            assert!(fd >= 0, "pidfd_open({k} {pid})");
            // SAFETY: just returned by pidfd_open, owned here.
            (k.clone(), unsafe { OwnedFd::from_raw_fd(fd as i32) })
        })
        .collect();
    Spawned {
        proxy,
        stdin: Some(stdin),
        pids,
        pidfds,
    }
}

/// Every pid in `/proc`, as in this (the host's) PID namespace.
fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect()
}

/// The value of `key:` in `/proc/<pid>/status`, split at whitespace.
fn status_field(pid: i32, key: &str) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(|v| {
            v.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The live child of `parent` (the proxy has one: the server's process; probe children it
/// forked are gone or zombies).
fn child_of(parent: i32) -> i32 {
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
            !s.lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'))
        })
    };
    all_pids()
        .into_iter()
        .find(|p| status_field(*p, "PPid") == [parent] && alive(*p))
        .unwrap_or_else(|| panic!("{parent} has no child"))
}

/// The pid in this (the host's) namespace of the process that calls itself `ns_pid` in PID
/// namespace `ns` (a `/proc/<pid>/ns/pid` link), found through `/proc/<pid>/status`'s `NSpid`.
fn host_pid(ns_pid: i32, ns: &Path) -> i32 {
    all_pids()
        .into_iter()
        .find(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|l| l == ns)
                && status_field(*pid, "NSpid").last() == Some(&ns_pid)
        })
        .unwrap_or_else(|| panic!("no process {ns_pid} in {}", ns.display()))
}

/// Whether the process behind `pidfd` has exited within `wait` (a pidfd polls readable then).
fn exited_within(pidfd: &OwnedFd, wait: Duration) -> bool {
    let mut p = libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, wait.as_millis() as libc::c_int) };
    n == 1
}

fn kill_pidfd(pidfd: &OwnedFd) {
    // SAFETY: plain syscall on an open pidfd.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
}

fn wait_proxy(s: &mut Spawned) -> std::process::ExitStatus {
    s.proxy.wait().expect("wait for the proxy")
}

#[test]
fn descendants_do_not_outlive_the_session() {
    // Control: behind `--no-jail` the same server's child and daemon outlive the proxy.
    let w = world();
    let mut control = spawn_behind_proxy(&w, How::Control, false);
    drop(control.stdin.take());
    wait_proxy(&mut control);
    for key in ["child", "daemon"] {
        assert!(
            !exited_within(&control.pidfds[key], Duration::ZERO),
            "control: the {key} ({}) should outlive the proxy",
            control.pids[key]
        );
        kill_pidfd(&control.pidfds[key]);
    }

    let w = world();
    let mut jailed = spawn_behind_proxy(&w, How::Jailed, false);
    drop(jailed.stdin.take());
    let status = wait_proxy(&mut jailed);
    assert!(status.success(), "{status}");
    // Already gone when the proxy has exited: the process it spawned exits only after the
    // PID namespace's init, whose exit the kernel completes once everything inside is dead.
    for key in ["server", "child", "daemon"] {
        assert!(
            exited_within(&jailed.pidfds[key], Duration::ZERO),
            "jailed: the {key} ({}) outlived the proxy",
            jailed.pids[key]
        );
    }
}

/// SIGKILL the proxy (no cleanup runs) and report, per process the server started, whether it
/// was gone within `wait`. Every survivor is killed before returning.
fn killed_proxy_survivors(s: &mut Spawned, wait: Duration) -> Vec<String> {
    s.proxy.kill().unwrap();
    wait_proxy(s);
    let survivors = s
        .pidfds
        .iter()
        .filter(|(_, fd)| !exited_within(fd, wait))
        .map(|(k, _)| k.clone())
        .collect();
    for fd in s.pidfds.values() {
        kill_pidfd(fd);
    }
    survivors
}

/// The server ignores the end of its input and has started a child and a daemon (setsid, double
/// fork): killing the proxy with SIGKILL leaves all three running unjailed. Jailed,
/// PR_SET_PDEATHSIG takes the server down with the proxy, and the server's PID namespace takes
/// the child and the daemon down with the server.
fn assert_killed_proxy_takes_everything(as_nobody: bool) {
    let w = world();
    let mut control = spawn_behind_proxy_as(&w, How::Control, true, as_nobody);
    // A bounded wait: a survivor is expected here, so this is how long it is given to die.
    let survivors = killed_proxy_survivors(&mut control, Duration::from_millis(300));
    assert_eq!(
        survivors,
        ["child", "daemon", "server"],
        "control: everything the server started should survive a killed proxy"
    );

    let w = world();
    let mut jailed = spawn_behind_proxy_as(&w, How::Jailed, true, as_nobody);
    let survivors = killed_proxy_survivors(&mut jailed, Duration::from_secs(10));
    assert!(
        survivors.is_empty(),
        "jailed: {survivors:?} outlived a SIGKILLed proxy ({:?})",
        jailed.pids
    );
}

#[test]
fn the_server_and_its_daemons_die_with_a_killed_proxy() {
    assert_killed_proxy_takes_everything(false);
}

#[test]
fn the_server_and_its_daemons_die_with_a_killed_proxy_as_nobody() {
    assert_killed_proxy_takes_everything(true);
}

#[tokio::test]
async fn the_report_names_limits_capabilities_and_session() {
    let w = world();
    let (_, report) = probe_with_report(&w, How::Jailed, "", &[], None).await;
    for layer in ["capabilities", "rlimits", "session"] {
        assert!(report.contains(layer), "{report}");
    }
    assert!(report.contains("open files <= 4096"), "{report}");
}

/// The limits and capabilities the server really runs with.
const LIMITS_PROBE: &str = r#"
import resource
status = read("/proc/self/status")
for line in status.splitlines():
    k = line.split(":")[0]
    if k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"):
        out[k] = line.split()[1]
out["nofile"] = str(resource.getrlimit(resource.RLIMIT_NOFILE)[1])
out["fsize"] = str(resource.getrlimit(resource.RLIMIT_FSIZE)[1])
out["core"] = str(resource.getrlimit(resource.RLIMIT_CORE)[1])
# Process group, session and controlling terminal as the host sees them: the jail keeps the
# host's /proc, where getpgrp and getsid inside the server's PID namespace read 0.
stat = read("/proc/self/stat")
fields = stat[stat.rindex(")") + 2:].split()
out["pgrp"], out["session"], out["tty_nr"] = fields[2], fields[3], fields[4]
"#;

/// Set in the re-run below: this process leads a session of its own, with a terminal.
const OWN_SESSION: &str = "MCPJAIL_TEST_OWN_SESSION";

/// `(pgrp, session, tty_nr)` of this process, from the same `/proc` the probe reads.
fn own_group_session_tty() -> (String, String, String) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    (fields[2].into(), fields[3].into(), fields[4].into())
}

/// Run test `name` again as the leader of a new session whose controlling terminal is a fresh
/// pty (setsid(1) -c on it), through `then` (`exec "$0" "$@"`, or a wrapper ending that way).
/// In a container the test's session leader can sit outside its PID namespace, where its
/// session reads 0, and the test may have no terminal: in the re-run the caller's group,
/// session and terminal are all its own and visible.
fn rerun_with_a_terminal(then: &str, name: &str) {
    let (master, slave) = open_pty();
    let tty = std::fs::read_link(format!("/proc/self/fd/{}", slave.as_raw_fd())).unwrap();
    let v = rerun::rerun(
        &format!(
            "exec setsid -c sh -c '{then}' \"$0\" \"$@\" <{}",
            tty.display()
        ),
        name,
        &[
            (OWN_SESSION, OsStr::new("1")),
            ("TMPDIR", OsStr::new("/tmp")),
        ],
        "SESSION-RESULT ",
    );
    drop((master, slave));
    assert_eq!(v, serde_json::json!("checked"));
}

/// The server runs without capabilities, with lowered limits, in a process group of its own in
/// the caller's session, and without the caller's controlling terminal; the control keeps all
/// of the caller's.
async fn assert_group_session_terminal_and_limits() {
    let (pgrp, sid, tty) = own_group_session_tty();
    assert_ne!(tty, "0", "the re-run has a controlling terminal");
    let w = world();
    let control = probe(&w, How::Control, LIMITS_PROBE, &[], None).await;
    assert_eq!(
        (
            get(&control, "pgrp"),
            get(&control, "session"),
            get(&control, "tty_nr")
        ),
        (pgrp.as_str(), sid.as_str(), tty.as_str()),
        "control: the caller's group, session and terminal"
    );
    if effective_uid() == 0 {
        assert_ne!(
            get(&control, "CapEff"),
            "0000000000000000",
            "root's control"
        );
    }
    let (jailed, report) = probe_with_report(&w, How::Jailed, LIMITS_PROBE, &[], None).await;
    for key in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert_eq!(get(&jailed, key), "0000000000000000", "{key}");
    }
    assert_eq!(get(&jailed, "NoNewPrivs"), "1");
    assert!(get(&jailed, "nofile").parse::<u64>().unwrap() <= 4096);
    assert_eq!(get(&jailed, "fsize"), (4u64 << 30).to_string());
    assert_eq!(get(&jailed, "core"), "0");
    assert_eq!(
        get(&jailed, "tty_nr"),
        "0",
        "the controlling terminal was given up"
    );
    assert_ne!(get(&jailed, "pgrp"), pgrp, "a process group of its own");
    // Under the PID namespace the server stays in the caller's session: a session of its own
    // would put it in a scheduler autogroup of its own (the cost is in the README's benches).
    assert!(
        report
            .lines()
            .any(|l| l.trim_start().starts_with("process_tree") && l.contains("fully enforced")),
        "{report}"
    );
    assert_eq!(get(&jailed, "session"), sid, "the caller's session");
    println!("SESSION-RESULT \"checked\"");
}

#[tokio::test]
async fn the_server_runs_without_capabilities_or_a_terminal_in_its_own_group_with_lowered_limits() {
    if std::env::var_os(OWN_SESSION).is_none() {
        rerun_with_a_terminal(
            "exec \"$0\" \"$@\"",
            "the_server_runs_without_capabilities_or_a_terminal_in_its_own_group_with_lowered_limits",
        );
        return;
    }
    assert_group_session_terminal_and_limits().await;
}

#[tokio::test]
async fn the_server_runs_without_a_terminal_in_its_own_group_as_nobody() {
    if std::env::var_os(OWN_SESSION).is_none() {
        rerun_with_a_terminal(
            rerun::AS_NOBODY,
            "the_server_runs_without_a_terminal_in_its_own_group_as_nobody",
        );
        return;
    }
    assert_eq!(effective_uid(), NOBODY, "the re-run is nobody");
    assert_group_session_terminal_and_limits().await;
}

// ---------------------------------------------------------------------------------------------
// Class 4: run as root.

/// Root without capabilities: ownership and other users' files (in the scope); the machine's
/// private keys.
const ROOT_PROBE: &str = r#"
theirs, mine = sys.argv[1], sys.argv[2]
attempt("chown_to_nobody", lambda: os.chown(mine, 65534, 65534))
attempt("chmod_nobodys_file", lambda: os.chmod(theirs, 0o4777))
attempt("open_etc_ssl_private", lambda: ",".join(os.listdir("/etc/ssl/private")))
attempt("read_openssl_cnf", lambda: str(len(read("/etc/ssl/openssl.cnf")) > 0))
attempt("list_etc_ssl_certs", lambda: str(len(os.listdir("/etc/ssl/certs")) > 0))
"#;

#[tokio::test]
async fn root_without_capabilities_cannot_chown_or_chmod_others_files_nor_read_private_keys() {
    if effective_uid() != 0 {
        println!("not root: nothing to show");
        return;
    }
    let run = |how| async move {
        let w = world();
        // In the write scope, where the read-only mounts (metadata class) do not apply: what
        // stops root here is the missing capability alone.
        let theirs = w.scope.join("theirs");
        let mine = w.scope.join("mine");
        std::fs::write(&theirs, "x").unwrap();
        std::fs::write(&mine, "x").unwrap();
        std::os::unix::fs::chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
        let args = [theirs.display().to_string(), mine.display().to_string()];
        let r = probe(&w, how, ROOT_PROBE, &args, None).await;
        use std::os::unix::fs::MetadataExt;
        (r, std::fs::metadata(&mine).unwrap().uid(), {
            std::fs::metadata(&theirs).unwrap().mode() & 0o7777
        })
    };
    let (control, control_owner, control_mode) = run(How::Control).await;
    assert_eq!(get(&control, "chown_to_nobody"), "OK");
    assert_eq!(get(&control, "chmod_nobodys_file"), "OK");
    assert_eq!((control_owner, control_mode), (NOBODY, 0o4777));
    let (jailed, owner, mode) = run(How::Jailed).await;
    assert!(
        get(&jailed, "chown_to_nobody").starts_with("ERR"),
        "{jailed:?}"
    );
    assert!(
        get(&jailed, "chmod_nobodys_file").starts_with("ERR"),
        "{jailed:?}"
    );
    assert_eq!((owner, mode), (0, 0o644));
    if Path::new("/etc/ssl/private").is_dir() {
        assert!(get(&control, "open_etc_ssl_private").starts_with("OK"));
        assert_eq!(get(&jailed, "open_etc_ssl_private"), "ERR:EACCES");
    }
    if Path::new("/etc/ssl/openssl.cnf").is_file() {
        assert_eq!(
            get(&jailed, "read_openssl_cnf"),
            "OK:True",
            "TLS config stays"
        );
    }
    if Path::new("/etc/ssl/certs").is_dir() {
        assert_eq!(
            get(&jailed, "list_etc_ssl_certs"),
            "OK:True",
            "certificates stay"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Class 6: exec from the write scope.

/// The scope is writable but not executable: a binary written there cannot be `execve`d, nor
/// run from a memfd. The dynamic loader can still map it (`ld.so FILE`: Landlock does not
/// mediate `mmap(PROT_EXEC)`), and an interpreter can run a script from it: such code runs
/// inside the same jail, which is what the last attempt shows.
const EXEC_PROBE: &str = r#"
import shutil, subprocess
scope, secret = sys.argv[1], sys.argv[2]
evil = os.path.join(scope, "evil")
shutil.copy("/bin/cat", evil)
os.chmod(evil, 0o755)
def run(argv):
    p = subprocess.run(argv, capture_output=True)
    return "rc=%d %s%s" % (p.returncode, p.stdout.decode(), p.stderr.decode().strip()[-200:])
attempt("execve_from_scope", lambda: run([evil, "/etc/os-release"]).split()[0])
def memfd_exec():
    fd = os.memfd_create("evil", 0)
    with open("/bin/true", "rb") as f:
        os.write(fd, f.read())
    pid = os.fork()
    if pid == 0:
        try:
            os.execve(fd, ["true"], {})
        except OSError as e:
            os._exit(100 + e.errno)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code >= 100:
        raise OSError(code - 100, "execveat")
    return "rc=%d" % code
attempt("memfd_execveat", memfd_exec)
loader = "/lib64/ld-linux-x86-64.so.2"
attempt("ldso_runs_scope_file", lambda: run([loader, evil, "/etc/os-release"]).split()[0])
attempt("ldso_scope_file_reads_outside", lambda: run([loader, evil, secret]))
"#;

#[tokio::test]
async fn write_scope_binaries_cannot_be_execed_and_what_ldso_runs_stays_jailed() {
    if !Path::new("/lib64/ld-linux-x86-64.so.2").exists() {
        println!("no x86_64 loader here");
        return;
    }
    let run = |how| async move {
        let w = world();
        let secret = w.outside.join("secret");
        std::fs::write(&secret, format!("secret {}", w.token)).unwrap();
        let args = [w.scope.display().to_string(), secret.display().to_string()];
        (
            probe(&w, how, EXEC_PROBE, &args, None).await,
            w.token.clone(),
        )
    };
    let (control, token) = run(How::Control).await;
    assert_eq!(get(&control, "execve_from_scope"), "OK:rc=0");
    assert_eq!(get(&control, "memfd_execveat"), "OK:rc=0");
    assert!(get(&control, "ldso_scope_file_reads_outside").contains(&token));
    let (jailed, token) = run(How::Jailed).await;
    assert!(
        get(&jailed, "execve_from_scope").starts_with("ERR:EACCES"),
        "{jailed:?}"
    );
    // Landlock alone lets a memfd run (no rule covers its inode): seccomp refuses memfd_create.
    assert_eq!(get(&jailed, "memfd_execveat"), "ERR:EPERM");
    // Not closed (documented): the loader maps and runs the scope file...
    assert_eq!(get(&jailed, "ldso_runs_scope_file"), "OK:rc=0");
    // ...inside the jail.
    let leak = get(&jailed, "ldso_scope_file_reads_outside");
    assert!(!leak.contains(&token), "{leak}");
    assert!(leak.contains("Permission denied"), "{leak}");
}

// ---------------------------------------------------------------------------------------------
// Class 5: metadata outside the scope.

fn assert_metadata(control: &Results, jailed: &Results) {
    for op in ["chmod", "chown_self", "utime", "setxattr"] {
        let outside = format!("{op}_outside");
        let inside = format!("{op}_inside");
        if op == "setxattr" && get(control, &outside) == "ERR:ENOTSUP" {
            continue; // no user xattrs on this filesystem
        }
        assert_eq!(get(control, &outside), "OK", "control {outside}");
        assert_eq!(
            get(jailed, &outside),
            "ERR:EROFS",
            "jailed {outside}: {jailed:?}"
        );
        assert_eq!(get(jailed, &inside), "OK", "jailed {inside} (in scope)");
    }
    assert_eq!(get(control, "outside_mode_after"), "700");
    assert_eq!(get(jailed, "outside_mode_after"), "755");
    assert!(get(control, "inotify_watch_outside").starts_with("OK"));
    assert_eq!(get(jailed, "inotify_watch_outside"), "ERR:EPERM");
}

#[tokio::test]
async fn metadata_outside_the_scope_cannot_be_changed_as_root() {
    let control = scenario("metadata", How::Control).await;
    let jailed = scenario("metadata", How::Jailed).await;
    assert_metadata(&control, &jailed);
}

#[test]
fn metadata_outside_the_scope_cannot_be_changed_as_nobody() {
    let control = as_nobody("metadata", How::Control);
    let jailed = as_nobody("metadata", How::Jailed);
    assert_metadata(&control, &jailed);
}

// ---------------------------------------------------------------------------------------------
// Class 2: named UNIX sockets (ssh-agent, gpg-agent, tmux, dbus, docker.sock).

/// An "agent" listens on a named socket outside the scope and hands the token to whoever
/// connects (stream) or answers a datagram. The server learns the paths (here: argv; in life,
/// `/proc/net/unix`, `$SSH_AUTH_SOCK`) and tries a stream connect, a datagram to the agent's
/// datagram socket, and a connected datagram socketpair with a destination address.
/// `tcp`: with a TCP port open in the jail (as `--allow-tcp-connect` and the egress proxy do),
/// where `connect()` must stay allowed; the probe also connects to that port, to show TCP works.
async fn scenario_unix_socket(how: How, tcp: bool) -> Results {
    use std::os::unix::net::{UnixDatagram, UnixListener};
    let mut w = world();
    let tcp_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp_listener.local_addr().unwrap().port();
    if tcp {
        w.net.tcp_connect_ports = vec![tcp_port];
    }
    let dir = w.outside.join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    // nobody must be able to reach the sockets in the control run.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let stream_path = dir.join("agent.sock");
    let dgram_path = dir.join("log.sock");
    let listener = UnixListener::bind(&stream_path).unwrap();
    let dgram = UnixDatagram::bind(&dgram_path).unwrap();
    for p in [&stream_path, &dgram_path] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    listener.set_nonblocking(true).unwrap();
    dgram.set_nonblocking(true).unwrap();
    let token = w.token.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    // The agent: serves until the probe has finished (the flag), then reports whether a
    // datagram ever arrived.
    let serve = std::thread::spawn(move || {
        let mut got_datagram = false;
        let mut buf = [0u8; 64];
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok((mut conn, _)) = listener.accept() {
                let _ = conn.write_all(token.as_bytes());
            }
            if dgram.recv(&mut buf).is_ok() {
                got_datagram = true;
            }
            std::thread::yield_now();
        }
        // A datagram sent just before the probe exited is already queued.
        got_datagram || dgram.recv(&mut buf).is_ok()
    });
    let body = r#"
import socket
stream_path, dgram_path = sys.argv[1], sys.argv[2]
def stream():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(stream_path)
    return s.recv(64).decode()
def datagram():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendto(b"hi", dgram_path)
def pair_with_address():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"hi", dgram_path)
def pair_stream():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.sendall(b"x")
    return b.recv(1).decode()
# The kernel makes an AF_UNIX SOCK_RAW socket a datagram one (unix_create).
def raw_sendto():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_RAW | socket.SOCK_CLOEXEC)
    s.sendto(b"hi", dgram_path)
    return s.getsockopt(socket.SOL_SOCKET, socket.SO_TYPE)
def pair_raw_sendto():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_RAW)
    a.sendto(b"hi", dgram_path)
def pair_seqpacket():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    a.send(b"y")
    return b.recv(1).decode()
def tcp():
    s = socket.create_connection(("127.0.0.1", int(sys.argv[3])))
    s.close()
attempt("stream_connect", stream)
attempt("datagram_sendto", datagram)
attempt("socketpair_dgram_sendto", pair_with_address)
attempt("socketpair_stream", pair_stream)
attempt("raw_sendto", raw_sendto)
attempt("socketpair_raw_sendto", pair_raw_sendto)
attempt("socketpair_seqpacket", pair_seqpacket)
attempt("tcp_connect", tcp)
"#;
    let args = vec![
        stream_path.display().to_string(),
        dgram_path.display().to_string(),
        tcp_port.to_string(),
    ];
    let mut r = probe(&w, how, body, &args, None).await;
    drop(tcp_listener);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let got = serve.join().unwrap();
    r.insert("agent_got_datagram".into(), got.to_string());
    r.insert("token".into(), w.token.clone());
    r
}

fn assert_unix_socket(control: &Results, jailed: &Results) {
    // The control reaches the agent both ways: the attempt is real.
    assert_eq!(
        get(control, "stream_connect"),
        format!("OK:{}", get(control, "token"))
    );
    assert_eq!(get(control, "datagram_sendto"), "OK");
    assert_eq!(get(control, "agent_got_datagram"), "true");
    // SOCK_RAW reaches it too, as a datagram socket.
    assert_eq!(get(control, "raw_sendto"), "OK:2");
    assert_eq!(get(control, "socketpair_raw_sendto"), "OK");
    // Jailed: no route to a named socket, while a socketpair (which runtimes use) still works.
    assert!(
        get(jailed, "stream_connect").starts_with("ERR:"),
        "{jailed:?}"
    );
    assert!(
        get(jailed, "datagram_sendto").starts_with("ERR:"),
        "{jailed:?}"
    );
    for key in [
        "socketpair_dgram_sendto",
        "raw_sendto",
        "socketpair_raw_sendto",
    ] {
        assert_eq!(get(jailed, key), "ERR:EPERM", "{key}: {jailed:?}");
    }
    assert_eq!(get(jailed, "agent_got_datagram"), "false");
    assert_eq!(get(jailed, "socketpair_stream"), "OK:x");
    assert_eq!(get(jailed, "socketpair_seqpacket"), "OK:y");
}

#[tokio::test]
async fn named_unix_sockets_are_unreachable_as_root() {
    let control = scenario("unix_socket", How::Control).await;
    let jailed = scenario("unix_socket", How::Jailed).await;
    assert_unix_socket(&control, &jailed);
}

#[test]
fn named_unix_sockets_are_unreachable_as_nobody() {
    let control = as_nobody("unix_socket", How::Control);
    let jailed = as_nobody("unix_socket", How::Jailed);
    assert_unix_socket(&control, &jailed);
}

/// With a TCP port open, `connect()` must stay: the named-socket route is closed by refusing
/// `socket(AF_UNIX)` (and datagram socketpairs) instead, while TCP to the open port still works.
#[tokio::test]
async fn named_unix_sockets_stay_unreachable_with_a_tcp_port_open() {
    let control = scenario("unix_socket_tcp", How::Control).await;
    let jailed = scenario("unix_socket_tcp", How::Jailed).await;
    assert_unix_socket(&control, &jailed);
    assert_eq!(get(&control, "tcp_connect"), "OK");
    assert_eq!(get(&jailed, "tcp_connect"), "OK", "{jailed:?}");
}

#[test]
fn named_unix_sockets_stay_unreachable_with_a_tcp_port_open_as_nobody() {
    let control = as_nobody("unix_socket_tcp", How::Control);
    let jailed = as_nobody("unix_socket_tcp", How::Jailed);
    assert_unix_socket(&control, &jailed);
    assert_eq!(get(&jailed, "tcp_connect"), "OK", "{jailed:?}");
}

/// The `unix_sockets` layer is fully enforced with the network off and with TCP ports open
/// (so `--require-full` accepts both); only `--allow-net` opens it, and then it says so.
#[test]
fn the_unix_socket_layer_is_open_only_with_allow_net() {
    let env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let cwd = std::env::temp_dir();
    let strict = JailOptions {
        require_full: true,
        ..JailOptions::default()
    };
    let mut tcp = Scope::default();
    tcp.net.tcp_connect_ports = vec![443];
    for scope in [Scope::default(), tcp] {
        let jail = sandbox::prepare_with_env(&scope, &["true".into()], &cwd, &strict, &env)
            .expect("fully enforced");
        assert!(jail.report().to_string().contains("unix_sockets"));
    }
    let mut all = Scope::default();
    all.net.allow_all = true;
    let open =
        sandbox::prepare_with_env(&all, &["true".into()], &cwd, &JailOptions::default(), &env)
            .expect("--allow-net prepares");
    let layer = open
        .report()
        .layers
        .iter()
        .find(|l| l.layer == "unix_sockets")
        .expect("a unix_sockets layer")
        .clone();
    assert_ne!(layer.enforcement, sandbox::Enforcement::Fully, "{layer:?}");
    assert!(layer.detail.contains("OPEN"), "{layer:?}");
}

// ---------------------------------------------------------------------------------------------
// Class 2: socket paths listed in /proc/<pid>/net.

/// The server (and a child it forks) try every route to the network namespace's socket tables:
/// `/proc/net` (a link to `self/net`), `/proc/self/net`, its own pid directory by number, its
/// thread's `task/<tid>/net`, and, from a forked child, the server's pid directory. An agent
/// socket is listening outside the scope, so the control must find its path in the table. The
/// files runtimes read (`status`, `maps`, `cgroup`, `fd/`) must stay readable.
async fn scenario_proc_net(how: How) -> Results {
    use std::os::unix::net::UnixListener;
    let w = world();
    let sock = w.outside.join(format!("{}.sock", w.token));
    let _listener = UnixListener::bind(&sock).unwrap();
    let body = r#"
token = sys.argv[1]
def table(p):
    text = read(p)
    return "listed" if token in text else "unlisted"
# The pid /proc names it by (getpid() inside the jail's PID namespace is 2, which in /proc is
# another process, or none at all where /proc belongs to a container's namespace).
me = int(os.readlink("/proc/self"))
attempt("proc_net_unix", lambda: table("/proc/net/unix"))
attempt("proc_self_net_unix", lambda: table("/proc/self/net/unix"))
attempt("proc_pid_net_unix", lambda: table("/proc/%d/net/unix" % me))
attempt("proc_task_net_unix", lambda: table("/proc/thread-self/net/unix"))
attempt("proc_self_net_tcp", lambda: read("/proc/self/net/tcp") and None)
attempt("list_proc_self_net", lambda: len(os.listdir("/proc/self/net")) and None)
r, wfd = os.pipe()
kid = os.fork()
if kid == 0:
    try:
        os.write(wfd, table("/proc/%d/net/unix" % me).encode())
    except OSError as e:
        os.write(wfd, ("ERR:" + errno.errorcode.get(e.errno, str(e.errno))).encode())
    os._exit(0)
os.waitpid(kid, 0)
got = os.read(r, 64).decode()
out["child_reads_server_net_unix"] = got if got.startswith("ERR") else "OK:" + got
attempt("read_status", lambda: "Pid" in read("/proc/self/status"))
attempt("read_maps", lambda: len(read("/proc/self/maps")) > 0)
attempt("read_cgroup", lambda: read("/proc/self/cgroup") and None)
attempt("list_fds", lambda: len(os.listdir("/proc/self/fd")) > 0)
"#;
    let r = probe(&w, how, body, std::slice::from_ref(&w.token), None).await;
    drop(_listener);
    r
}

fn assert_proc_net(control: &Results, jailed: &Results) {
    // The control sees the agent's path in every table: the attempt is real.
    for key in [
        "proc_net_unix",
        "proc_self_net_unix",
        "proc_pid_net_unix",
        "proc_task_net_unix",
        "child_reads_server_net_unix",
    ] {
        assert_eq!(get(control, key), "OK:listed", "control {key}: {control:?}");
    }
    for key in [
        "proc_net_unix",
        "proc_self_net_unix",
        "proc_pid_net_unix",
        "proc_task_net_unix",
        "proc_self_net_tcp",
        "list_proc_self_net",
        "child_reads_server_net_unix",
    ] {
        assert_eq!(get(jailed, key), "ERR:EACCES", "jailed {key}: {jailed:?}");
    }
    // What runtimes read still works.
    for key in ["read_status", "read_maps", "list_fds"] {
        assert_eq!(get(jailed, key), "OK:True", "jailed {key}: {jailed:?}");
    }
    assert_eq!(get(jailed, "read_cgroup"), "OK", "{jailed:?}");
}

#[tokio::test]
async fn socket_tables_in_proc_net_are_unreadable_as_root() {
    let control = scenario("proc_net", How::Control).await;
    let jailed = scenario("proc_net", How::Jailed).await;
    assert_proc_net(&control, &jailed);
}

#[test]
fn socket_tables_in_proc_net_are_unreadable_as_nobody() {
    let control = as_nobody("proc_net", How::Control);
    let jailed = as_nobody("proc_net", How::Jailed);
    assert_proc_net(&control, &jailed);
}

// ---------------------------------------------------------------------------------------------
// Class 2: TCP calls that pass Landlock's port checks (with TCP ports open).

/// A loopback service on a port the jail does not allow hands the token to whoever connects.
/// The server tries a plain connect (Landlock's rule), the three sends with `MSG_FASTOPEN`
/// (which connect without Landlock's connect check, landlock-lsm issue 41), and `listen()` on an
/// unbound socket (which auto-binds an ephemeral port on every address without its bind check).
/// `bind`: the jail allows a bind port (`--allow-tcp-bind`) instead of a connect port, where
/// bind + listen on that port must work.
async fn scenario_tcp_past_landlock(how: How, bind: bool) -> Results {
    let mut w = world();
    let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = service.local_addr().unwrap().port();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let allowed_port = allowed.local_addr().unwrap().port();
    if bind {
        // Free it for the probe to bind.
        drop(allowed);
        w.net.tcp_bind_ports = vec![allowed_port];
    } else {
        w.net.tcp_connect_ports = vec![allowed_port];
    }
    service.set_nonblocking(true).unwrap();
    let token = w.token.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let serve = std::thread::spawn(move || {
        let mut served = 0;
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            if let Ok((mut conn, _)) = service.accept() {
                conn.set_nonblocking(false).unwrap();
                let _ = conn.write_all(token.as_bytes());
                served += 1;
            }
            std::thread::yield_now();
        }
        served
    });
    let body = r#"
import socket, struct
host, port, allowed = "127.0.0.1", int(sys.argv[1]), int(sys.argv[2])
def connect():
    return socket.create_connection((host, port)).recv(64).decode()
def fastopen_sendto():
    s = socket.socket()
    s.sendto(b"x", socket.MSG_FASTOPEN, (host, port))
    return s.recv(64).decode()
def fastopen_sendmsg():
    s = socket.socket()
    s.sendmsg([b"x"], [], socket.MSG_FASTOPEN, (host, port))
    return s.recv(64).decode()
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
class mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
def fastopen_sendmmsg():
    s = socket.socket()
    addr = ctypes.create_string_buffer(
        struct.pack("=H", socket.AF_INET) + struct.pack("!H", port)
        + socket.inet_aton(host) + bytes(8), 16)
    data = ctypes.create_string_buffer(b"x", 1)
    iov = iovec(ctypes.cast(data, ctypes.c_void_p), 1)
    m = mmsghdr()
    m.hdr.name = ctypes.cast(addr, ctypes.c_void_p)
    m.hdr.namelen = 16
    m.hdr.iov = ctypes.pointer(iov)
    m.hdr.iovlen = 1
    check(libc.sendmmsg(s.fileno(), ctypes.byref(m), 1, socket.MSG_FASTOPEN))
    return s.recv(64).decode()
def listen_unbound():
    s = socket.socket()
    s.listen(1)
    return "port" if s.getsockname()[1] else "none"
def bind_allowed_listen():
    s = socket.socket()
    s.bind((host, allowed))
    s.listen(1)
    return s.getsockname()[1] == allowed
attempt("connect", connect)
attempt("fastopen_sendto", fastopen_sendto)
attempt("fastopen_sendmsg", fastopen_sendmsg)
attempt("fastopen_sendmmsg", fastopen_sendmmsg)
attempt("listen_unbound", listen_unbound)
attempt("bind_allowed_listen", bind_allowed_listen)
"#;
    let args = [port.to_string(), allowed_port.to_string()];
    let mut r = probe(&w, how, body, &args, None).await;
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    r.insert("served".into(), serve.join().unwrap().to_string());
    r.insert("token".into(), w.token.clone());
    r
}

fn assert_tcp_past_landlock(control: &Results, jailed: &Results, bind: bool) {
    let token = format!("OK:{}", get(control, "token"));
    // Unjailed, each route reaches the service: the attempts are real (TCP Fast Open is on
    // for clients by default, net.ipv4.tcp_fastopen = 1).
    for key in [
        "connect",
        "fastopen_sendto",
        "fastopen_sendmsg",
        "fastopen_sendmmsg",
    ] {
        assert_eq!(get(control, key), token, "control {key}: {control:?}");
    }
    assert_eq!(get(control, "listen_unbound"), "OK:port");
    // Jailed: Landlock refuses the connect, seccomp the sends that would pass it; the service
    // is never reached.
    assert_eq!(get(jailed, "connect"), "ERR:EACCES", "{jailed:?}");
    for key in ["fastopen_sendto", "fastopen_sendmsg", "fastopen_sendmmsg"] {
        assert_eq!(get(jailed, key), "ERR:EPERM", "jailed {key}: {jailed:?}");
    }
    assert_eq!(get(jailed, "served"), "0", "{jailed:?}");
    if bind {
        // The allowed bind port still serves (the auto-bind of an unbound socket stays open
        // then: the landlock_net layer says so, see the test below).
        assert_eq!(get(jailed, "bind_allowed_listen"), "OK:True", "{jailed:?}");
    } else {
        assert_eq!(get(jailed, "listen_unbound"), "ERR:EPERM", "{jailed:?}");
    }
}

#[tokio::test]
async fn tcp_fast_open_and_listen_autobind_do_not_pass_landlock_with_a_connect_port() {
    let control = scenario("tcp_connect_only", How::Control).await;
    let jailed = scenario("tcp_connect_only", How::Jailed).await;
    assert_tcp_past_landlock(&control, &jailed, false);
}

#[test]
fn tcp_fast_open_and_listen_autobind_do_not_pass_landlock_with_a_connect_port_as_nobody() {
    let control = as_nobody("tcp_connect_only", How::Control);
    let jailed = as_nobody("tcp_connect_only", How::Jailed);
    assert_tcp_past_landlock(&control, &jailed, false);
}

#[tokio::test]
async fn tcp_fast_open_does_not_pass_landlock_with_a_bind_port() {
    let control = scenario("tcp_bind", How::Control).await;
    let jailed = scenario("tcp_bind", How::Jailed).await;
    assert_tcp_past_landlock(&control, &jailed, true);
}

#[test]
fn tcp_fast_open_does_not_pass_landlock_with_a_bind_port_as_nobody() {
    let control = as_nobody("tcp_bind", How::Control);
    let jailed = as_nobody("tcp_bind", How::Jailed);
    assert_tcp_past_landlock(&control, &jailed, true);
}

/// With a connect port only, `landlock_net` stays fully enforced (seccomp closes both routes);
/// with a bind port, `listen()` must stay and its auto-bind passes Landlock: partially, said.
#[test]
fn the_landlock_net_layer_names_the_listen_autobind_it_cannot_close() {
    let env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let cwd = std::env::temp_dir();
    let layer = |scope: &Scope| {
        let jail =
            sandbox::prepare_with_env(scope, &["true".into()], &cwd, &JailOptions::default(), &env)
                .expect("prepares");
        let layers = &jail.report().layers;
        layers
            .iter()
            .find(|l| l.layer == "landlock_net")
            .expect("a landlock_net layer")
            .clone()
    };
    let mut connect = Scope::default();
    connect.net.tcp_connect_ports = vec![443];
    let connect = layer(&connect);
    assert_eq!(
        connect.enforcement,
        sandbox::Enforcement::Fully,
        "{connect:?}"
    );
    assert!(connect.detail.contains("listen() refused"), "{connect:?}");
    let mut bind = Scope::default();
    bind.net.tcp_bind_ports = vec![8080];
    let bind = layer(&bind);
    assert_eq!(
        bind.enforcement,
        sandbox::Enforcement::Partially,
        "{bind:?}"
    );
    assert!(bind.detail.contains("ephemeral port"), "{bind:?}");
}

// ---------------------------------------------------------------------------------------------
// Class 3: set-uid/set-gid files planted in the write scope.

/// A server run as root owns what it creates, so it could give a file in the write scope
/// set-uid/set-gid bits with no capability; run on the host by another user later, it runs as
/// root. Every call that sets those bits is tried (the chmod family, creating with such a
/// mode, `openat2`), beside what ordinary use does: plain modes, and a directory created in a
/// set-gid directory (which inherits the bit from the kernel).
const SET_ID_PROBE: &str = r#"
import platform, stat, struct
d = sys.argv[1]
x86 = platform.machine() == "x86_64"
NR = {"fchmodat": 268 if x86 else 53, "fchmodat2": 452, "openat2": 437,
      "chmod": 90, "creat": 85}
AT_FDCWD = -100
def mode(p):
    return oct(os.stat(p).st_mode & 0o7777)
def mk(name):
    p = os.path.join(d, name)
    open(p, "w").close()
    os.chmod(p, 0o755)
    return p
def chmod(name, m):
    p = mk(name)
    os.chmod(p, m)
    return mode(p)
def fchmod():
    p = mk("fchmod")
    os.fchmod(os.open(p, os.O_RDONLY), 0o4755)
    return mode(p)
def syscall_chmod(name, *args):
    p = mk(name)
    check(libc.syscall(NR[name], *[p.encode() if a == "P" else a for a in args]))
    return mode(p)
def create(flags, m):
    p = os.path.join(d, "created-%o" % m)
    os.close(os.open(p, os.O_CREAT | os.O_WRONLY | flags, m))
    return mode(p)
def tmpfile():
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o4755)
    return oct(os.fstat(fd).st_mode & 0o7777)
def creat():
    p = os.path.join(d, "creat")
    check(libc.syscall(NR["creat"], p.encode(), 0o4755))
    return mode(p)
def mknod():
    p = os.path.join(d, "mknod")
    os.mknod(p, stat.S_IFREG | 0o2755)
    return mode(p)
def openat2():
    p = os.path.join(d, "openat2")
    how = struct.pack("QQQ", os.O_CREAT | os.O_WRONLY, 0o4755, 0)
    check(libc.syscall(NR["openat2"], AT_FDCWD, p.encode(), how, len(how)))
    return mode(p)
def mkdir_in_setgid_dir():
    p = os.path.join(d, "shared", "sub")
    os.mkdir(p, 0o775)
    return "inherited" if os.stat(p).st_mode & stat.S_ISGID else "not"
os.umask(0o022)
attempt("chmod_setuid", lambda: chmod("setuid", 0o4755))
attempt("chmod_setgid", lambda: chmod("setgid", 0o2755))
attempt("fchmod_setuid", fchmod)
attempt("fchmodat_setuid", lambda: syscall_chmod("fchmodat", AT_FDCWD, "P", 0o4755, 0))
attempt("fchmodat2_setgid", lambda: syscall_chmod("fchmodat2", AT_FDCWD, "P", 0o2755, 0))
if x86:
    attempt("chmod_syscall_setuid", lambda: syscall_chmod("chmod", "P", 0o4755))
    attempt("creat_setuid", creat)
attempt("open_creat_setuid", lambda: create(0, 0o4755))
attempt("open_creat_setgid", lambda: create(os.O_EXCL, 0o2755))
attempt("open_tmpfile_setuid", tmpfile)
attempt("mknod_setgid", mknod)
attempt("openat2_setuid", openat2)
attempt("chmod_plain", lambda: chmod("plain", 0o750))
attempt("open_creat_plain", lambda: create(0, 0o644))
# Without O_CREAT the kernel ignores the mode (and a libc may pass anything there).
def reopen():
    nr = 257 if x86 else 56
    os.close(check(libc.syscall(nr, AT_FDCWD, mk("existing").encode(), os.O_RDONLY, 0o4755)))
attempt("reopen_with_setuid_mode", reopen)
attempt("mkdir_in_setgid_dir", mkdir_in_setgid_dir)
"#;

async fn scenario_set_id_modes(how: How) -> Results {
    let w = world();
    let shared = w.scope.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o2775)).unwrap();
    probe(
        &w,
        how,
        SET_ID_PROBE,
        &[w.scope.display().to_string()],
        None,
    )
    .await
}

fn assert_set_id_modes(control: &Results, jailed: &Results) {
    let refused = [
        ("chmod_setuid", "OK:0o4755"),
        ("chmod_setgid", "OK:0o2755"),
        ("fchmod_setuid", "OK:0o4755"),
        ("fchmodat_setuid", "OK:0o4755"),
        ("fchmodat2_setgid", "OK:0o2755"),
        ("chmod_syscall_setuid", "OK:0o4755"),
        ("creat_setuid", "OK:0o4755"),
        ("open_creat_setuid", "OK:0o4755"),
        ("open_creat_setgid", "OK:0o2755"),
        ("open_tmpfile_setuid", "OK:0o4755"),
        ("mknod_setgid", "OK:0o2755"),
    ];
    for (key, planted) in refused {
        if !control.contains_key(key) {
            continue; // a legacy syscall this architecture does not have
        }
        // Unjailed the bits are set: the attempt is real.
        assert_eq!(get(control, key), planted, "control {key}: {control:?}");
        assert_eq!(get(jailed, key), "ERR:EPERM", "jailed {key}: {jailed:?}");
    }
    assert_eq!(get(control, "openat2_setuid"), "OK:0o4755");
    // openat2 carries its mode in a struct: ENOSYS, so a caller falls back to openat.
    assert_eq!(get(jailed, "openat2_setuid"), "ERR:ENOSYS", "{jailed:?}");
    // Ordinary use goes on.
    for r in [control, jailed] {
        assert_eq!(get(r, "chmod_plain"), "OK:0o750", "{r:?}");
        assert_eq!(get(r, "open_creat_plain"), "OK:0o644", "{r:?}");
        assert_eq!(get(r, "reopen_with_setuid_mode"), "OK", "{r:?}");
        assert_eq!(get(r, "mkdir_in_setgid_dir"), "OK:inherited", "{r:?}");
    }
}

#[tokio::test]
async fn set_id_bits_cannot_be_set_in_the_write_scope_as_root() {
    let control = scenario("set_id_modes", How::Control).await;
    let jailed = scenario("set_id_modes", How::Jailed).await;
    assert_set_id_modes(&control, &jailed);
}

#[test]
fn set_id_bits_cannot_be_set_in_the_write_scope_as_nobody() {
    let control = as_nobody("set_id_modes", How::Control);
    let jailed = as_nobody("set_id_modes", How::Jailed);
    assert_set_id_modes(&control, &jailed);
}
