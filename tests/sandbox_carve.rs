//! Carve-outs that don't break writes: a denied name (`.env`, `.ssh`) directly inside a write
//! scope stays unreadable and unwritable, while creating, atomically replacing and deleting files
//! next to it keep working.
//!
//! The server is a small Python program (`/usr/bin/python3 -c PROBE`) that tries every way it
//! knows to read, write, move or unmask the denied entries and to work in the directory, and
//! prints one JSON object: attempt -> `OK[:content]` or `ERR:<errno name>`. Each run gets a fresh
//! project (the control runs really do overwrite and move `.env`) and a fresh child process.
//! Every jailed claim has a control run showing the same attempt reaches the secret unjailed.

#![cfg(target_os = "linux")]

mod rerun;

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mcpjail::policy::{Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};

const PROBE: &str = r#"
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
mode, handle = sys.argv[1], sys.argv[2]
out = {}

def attempt(name, f):
    try:
        r = f()
        out[name] = "OK" + ("" if r is None else ":" + r)
    except OSError as e:
        out[name] = "ERR:" + errno.errorcode.get(e.errno, str(e.errno))

def read(p):
    with open(p) as f:
        return f.read()

def write(p, text):
    with open(p, "w") as f:
        f.write(text)

def check(rc):
    if rc != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

def openat():
    d = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    return os.read(os.open(".env", os.O_RDONLY, dir_fd=d), 4096).decode()

def by_handle():
    raw = bytes.fromhex(handle)
    buf = ctypes.create_string_buffer(raw, len(raw))
    fd = libc.open_by_handle_at(os.open(".", os.O_RDONLY | os.O_DIRECTORY), buf, os.O_RDONLY)
    if fd < 0:
        check(-1)
    return os.read(fd, 4096).decode()

attempt("read_env", lambda: read(".env"))
attempt("read_proc_cwd", lambda: read("/proc/self/cwd/.env"))
attempt("read_openat", openat)
attempt("read_ssh_key", lambda: read(".ssh/id_rsa"))
attempt("list_ssh", lambda: ",".join(sorted(os.listdir(".ssh"))))
if handle:
    attempt("read_by_handle", by_handle)
if mode == "all":
    attempt("create", lambda: write("new.txt", "new"))
    def replace():
        write("main.txt.tmp", "replaced")
        os.rename("main.txt.tmp", "main.txt")
        return read("main.txt")
    attempt("atomic_replace", replace)
    attempt("delete", lambda: os.unlink("delete_me.txt"))
    def mkdir():
        os.mkdir("subdir")
        write("subdir/inner.txt", "inner")
    attempt("mkdir", mkdir)
    def hardlink():
        os.link(".env", "env_link")
        return read("env_link")
    attempt("hardlink_env", hardlink)
    def umount():
        check(libc.umount2(b".env", 2))
        return read(".env")
    attempt("umount_env", umount)
    def unshare_and_umount():
        check(libc.unshare(0x10020000))
        check(libc.umount2(b".env", 2))
        return read(".env")
    attempt("unshare_umount_env", unshare_and_umount)
    def rename():
        os.rename(".env", "env_moved")
        return read("env_moved")
    attempt("rename_env", rename)
    attempt("write_env", lambda: write(".env", "overwritten"))
print(json.dumps(out))
"#;

const DENY: &[&str] = &["**/.env*", "**/.ssh"];
const NOBODY: u32 = 65534;

struct Project {
    _root: tempfile::TempDir,
    dir: PathBuf,
    token: String,
}

fn token() -> String {
    let mut buf = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .unwrap();
    format!("CANARY-{:016x}", u64::from_ne_bytes(buf))
}

/// A project with `.env` and `.ssh/id_rsa` (the secret) and ordinary files at its root, owned
/// by `owner` when given (the temp root is made traversable for it).
fn project(owner: Option<u32>) -> Project {
    let root = tempfile::Builder::new()
        .prefix("mcpjail-carve-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = std::fs::canonicalize(root.path()).unwrap().join("proj");
    let token = token();
    std::fs::create_dir_all(dir.join(".ssh")).unwrap();
    std::fs::write(dir.join(".env"), format!("API_KEY={token}")).unwrap();
    std::fs::write(dir.join(".ssh/id_rsa"), format!("ssh-key {token}")).unwrap();
    std::fs::write(dir.join("main.txt"), "original").unwrap();
    std::fs::write(dir.join("delete_me.txt"), "bye").unwrap();
    if let Some(uid) = owner {
        for p in [
            dir.clone(),
            dir.join(".ssh"),
            dir.join(".env"),
            dir.join(".ssh/id_rsa"),
            dir.join("main.txt"),
            dir.join("delete_me.txt"),
        ] {
            std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
        }
    }
    Project {
        _root: root,
        dir,
        token,
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum How {
    /// `--no-jail`: the same attempts, unconfined.
    Control,
    Jailed,
    /// Jailed with masking turned off: list-only carving.
    ListOnly,
}

struct Run {
    results: BTreeMap<String, String>,
    notes: Vec<String>,
    report: String,
}

impl Run {
    fn get(&self, key: &str) -> &str {
        self.results
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no result for {key}: {:?}", self.results))
    }
}

/// Start the probe in `p.dir` and collect what it saw.
async fn run(p: &Project, how: How, mode: &str, handle: &str) -> Run {
    let scope = Scope {
        write: vec![ScopeEntry {
            path: p.dir.clone(),
            source: ScopeSource::Flag,
        }],
        deny: DENY.iter().map(|d| d.to_string()).collect(),
        ..Scope::default()
    };
    let opts = JailOptions {
        disabled: how == How::Control,
        // Where namespaces are refused the metadata layer is not enforced, and says so.
        require_full: how != How::Control && std::env::var_os("MCPJAIL_CARVE_NOT_FULL").is_none(),
        force_list_only_carve: how == How::ListOnly,
        ..JailOptions::default()
    };
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), p.dir.join("..").into_os_string()),
    ];
    let command: Vec<String> = vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        PROBE.into(),
        mode.into(),
        handle.into(),
    ];
    let jail = sandbox::prepare_with_env(&scope, &command, &p.dir, &opts, &env).unwrap();
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = cmd.output().await.expect("spawn the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{how:?} probe failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let results: BTreeMap<String, String> = serde_json::from_str(stdout.trim()).unwrap();
    let run = Run {
        results,
        notes: jail.notes().to_vec(),
        report: jail.report().to_string(),
    };
    println!("{how:?}:");
    for (k, v) in &run.results {
        println!("  {k:<20} {v}");
    }
    run
}

/// A handle for `path` from `name_to_handle_at`, hex-encoded as `struct file_handle`; `None`
/// when the filesystem cannot export handles.
fn file_handle_hex(path: &Path) -> Option<String> {
    let c = CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut buf = [0u8; 8 + 128];
    buf[..4].copy_from_slice(&128u32.to_ne_bytes());
    let mut mount_id: libc::c_int = 0;
    // SAFETY: `c` is NUL-terminated; `buf` is a file_handle with room for 128 handle bytes;
    // `mount_id` is a valid out-pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_name_to_handle_at,
            libc::AT_FDCWD,
            c.as_ptr(),
            buf.as_mut_ptr(),
            &mut mount_id as *mut libc::c_int,
            0,
        )
    };
    if rc != 0 {
        println!(
            "name_to_handle_at({}) failed: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
        return None;
    }
    let n = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    Some(buf[..8 + n].iter().map(|b| format!("{b:02x}")).collect())
}

fn mountinfo() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap()
}

/// The reads of the secrets that the mask must stop (all of them reach it unjailed).
const SECRET_READS: &[&str] = &["read_env", "read_proc_cwd", "read_openat", "read_ssh_key"];

fn assert_no_leak(run: &Run, token: &str) {
    for (k, v) in &run.results {
        assert!(!v.contains(token), "{k} leaked the secret: {v}");
    }
}

#[tokio::test]
async fn a_masked_env_is_unreadable_and_unwritable_while_its_directory_stays_writable() {
    let control_project = project(None);
    let handle = file_handle_hex(&control_project.dir.join(".env")).unwrap_or_default();
    let control = run(&control_project, How::Control, "all", &handle).await;
    let token = &control_project.token;
    for key in SECRET_READS {
        assert!(control.get(key).contains(token), "control {key}");
    }
    assert!(control.get("hardlink_env").contains(token));
    assert!(control.get("rename_env").contains(token));
    assert_eq!(control.get("write_env"), "OK");
    if !handle.is_empty() {
        assert!(control.get("read_by_handle").contains(token));
    }

    let p = project(None);
    let handle = file_handle_hex(&p.dir.join(".env")).unwrap_or_default();
    let mounts_before = mountinfo();
    let jailed = run(&p, How::Jailed, "all", &handle).await;
    assert_no_leak(&jailed, &p.token);
    for key in SECRET_READS {
        assert!(jailed.get(key).starts_with("ERR"), "jailed {key}");
    }
    // Root may list the mode-000 tmpfs (DAC override); it is empty.
    assert!(!jailed.get("list_ssh").contains("id_rsa"));
    assert!(jailed.get("write_env").starts_with("ERR"));
    assert_eq!(jailed.get("create"), "OK");
    assert_eq!(jailed.get("atomic_replace"), "OK:replaced");
    assert_eq!(jailed.get("delete"), "OK");
    assert_eq!(jailed.get("mkdir"), "OK");
    assert_eq!(jailed.get("hardlink_env"), "ERR:EXDEV");
    assert_eq!(jailed.get("rename_env"), "ERR:EBUSY");
    assert_eq!(
        jailed.get("umount_env"),
        "ERR:EPERM",
        "seccomp denies umount2"
    );
    assert_eq!(jailed.get("unshare_umount_env"), "ERR:EPERM");
    if !handle.is_empty() {
        assert_eq!(jailed.get("read_by_handle"), "ERR:EPERM");
    }

    // The work done next to the mask reached the real directory; the mask did not leave the
    // child: the host still sees the secret, and no mount was added here.
    assert_eq!(
        std::fs::read_to_string(p.dir.join("main.txt")).unwrap(),
        "replaced"
    );
    assert_eq!(
        std::fs::read_to_string(p.dir.join("new.txt")).unwrap(),
        "new"
    );
    assert!(!p.dir.join("delete_me.txt").exists());
    assert!(p.dir.join("subdir/inner.txt").is_file());
    assert_eq!(
        std::fs::read_to_string(p.dir.join(".env")).unwrap(),
        format!("API_KEY={}", p.token)
    );
    assert!(std::fs::read_to_string(p.dir.join(".ssh/id_rsa"))
        .unwrap()
        .contains(&p.token));
    assert_eq!(mountinfo(), mounts_before);

    let env = p.dir.join(".env").display().to_string();
    assert!(
        jailed.notes.iter().any(|n| n.contains(&format!(
            "masked in the server's view: {env} (read-only /dev/null bind)"
        )) && n.contains("stays read-write")),
        "{:?}",
        jailed.notes
    );
    assert!(jailed.report.contains("carve"), "{}", jailed.report);
    assert!(jailed.report.contains("masked"), "{}", jailed.report);
}

#[tokio::test]
async fn forced_list_only_carving_keeps_env_unreadable_and_says_top_level_creates_fail() {
    let p = project(None);
    let run = run(&p, How::ListOnly, "all", "").await;
    assert_list_only_fallback(&run, &p.token);
    // The cost the mask avoids, measured: nothing can be created, replaced or deleted at the
    // top level.
    assert!(refused(run.get("atomic_replace")));
    assert!(refused(run.get("delete")));
    assert!(run.report.contains("list-only carving"), "{}", run.report);
    assert_eq!(
        std::fs::read_to_string(p.dir.join(".env")).unwrap(),
        format!("API_KEY={}", p.token)
    );
}

const HELPER_DIR: &str = "MCPJAIL_CARVE_HELPER_DIR";
const HELPER_HOW: &str = "MCPJAIL_CARVE_HELPER_HOW";

/// Not a test on its own: the body of the tests below that need the *whole* jail (probe
/// included) to run in another process — as another uid, or where namespaces are refused. They
/// start this test binary with `--exact` through a wrapper (`setpriv`, `unshare`). Without the
/// variables it does nothing.
#[tokio::test]
async fn helper_run_in_another_process() {
    let Some(dir) = std::env::var_os(HELPER_DIR) else {
        return;
    };
    let how = match std::env::var(HELPER_HOW).as_deref() {
        Ok("control") => How::Control,
        _ => How::Jailed,
    };
    let p = Project {
        _root: tempfile::tempdir().unwrap(),
        dir: PathBuf::from(dir),
        token: String::new(),
    };
    let run = run(&p, how, "all", "").await;
    let out = serde_json::json!({"results": run.results, "notes": run.notes, "report": run.report});
    println!("CARVE-RESULT {out}");
}

/// Run [`helper_run_in_another_process`] on `p` through `wrapper` (a shell command line
/// ending in `"$0" "$@"`, which become this test binary and its arguments).
fn run_helper(p: &Project, how: How, wrapper: &str) -> Run {
    let how = if how == How::Control {
        "control"
    } else {
        "jailed"
    };
    let v = rerun::rerun(
        wrapper,
        "helper_run_in_another_process",
        &[(HELPER_DIR, p.dir.as_os_str()), (HELPER_HOW, how.as_ref())],
        "CARVE-RESULT ",
    );
    Run {
        results: serde_json::from_value(v["results"].clone()).unwrap(),
        notes: serde_json::from_value(v["notes"].clone()).unwrap(),
        report: v["report"].as_str().unwrap_or_default().to_string(),
    }
}

fn refused(result: &str) -> bool {
    matches!(result, "ERR:EACCES" | "ERR:EROFS")
}

/// What list-only carving (the fallback) must still hold, and the cost it must admit.
fn assert_list_only_fallback(run: &Run, token: &str) {
    assert_no_leak(run, token);
    for key in SECRET_READS {
        assert!(run.get(key).starts_with("ERR"), "{key}");
    }
    assert!(run.get("write_env").starts_with("ERR"));
    // EROFS where the rest of the filesystem is mounted read-only (the metadata class), EACCES
    // (Landlock) where namespaces are refused.
    assert!(refused(run.get("create")), "{}", run.get("create"));
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("list-only carving") && n.contains("cannot be created")),
        "{:?}",
        run.notes
    );
}

#[test]
fn an_unprivileged_proxy_masks_through_a_user_namespace() {
    // The whole jail (probe included) runs as nobody: it may not create a mount namespace by
    // itself, so it enters a user namespace first. Where the kernel refuses that to nobody, the
    // fallback must hold instead.
    let control_project = project(Some(NOBODY));
    let control = run_helper(&control_project, How::Control, rerun::AS_NOBODY);
    let token = &control_project.token;
    for key in SECRET_READS {
        assert!(control.get(key).contains(token), "control {key}");
    }

    let p = project(Some(NOBODY));
    let mounts_before = mountinfo();
    let jailed = run_helper(&p, How::Jailed, rerun::AS_NOBODY);
    assert_eq!(mountinfo(), mounts_before);
    assert!(std::fs::read_to_string(p.dir.join(".env"))
        .unwrap()
        .contains(&p.token));
    if !jailed
        .notes
        .iter()
        .any(|n| n.contains("masked in the server's view"))
    {
        println!("this kernel refuses nobody a user namespace: checking the fallback");
        assert_list_only_fallback(&jailed, &p.token);
        return;
    }
    assert!(
        jailed
            .notes
            .iter()
            .any(|n| n.contains("private user + mount namespace")),
        "{:?}",
        jailed.notes
    );
    assert_no_leak(&jailed, &p.token);
    for key in SECRET_READS {
        assert!(jailed.get(key).starts_with("ERR"), "jailed {key}");
    }
    assert_eq!(jailed.get("list_ssh"), "ERR:EACCES", "mode 000 tmpfs");
    assert!(jailed.get("write_env").starts_with("ERR"));
    assert_eq!(jailed.get("create"), "OK");
    assert_eq!(jailed.get("atomic_replace"), "OK:replaced");
    assert_eq!(jailed.get("delete"), "OK");
    assert_eq!(jailed.get("mkdir"), "OK");
    assert_eq!(jailed.get("hardlink_env"), "ERR:EXDEV");
    assert_eq!(jailed.get("rename_env"), "ERR:EBUSY");
    assert_eq!(jailed.get("umount_env"), "ERR:EPERM");
    assert_eq!(jailed.get("unshare_umount_env"), "ERR:EPERM");
    // Files the server created belong to the real uid (the user namespace maps it to itself).
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(p.dir.join("new.txt")).unwrap().uid(),
        NOBODY
    );
    assert_eq!(
        std::fs::read_to_string(p.dir.join("main.txt")).unwrap(),
        "replaced"
    );
}

#[test]
fn when_the_kernel_refuses_namespaces_the_jail_falls_back_to_list_only() {
    // A user namespace of our own where user namespaces are used up (max_user_namespaces=0,
    // like the sysctl on a locked-down host) and capabilities are dropped (like a container
    // without CAP_SYS_ADMIN): neither a mount namespace nor a user namespace can be created.
    let p = project(None);
    let run = run_helper(
        &p,
        How::Jailed,
        "MCPJAIL_CARVE_NOT_FULL=1 exec unshare -U -r sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && \
         exec setpriv --bounding-set=-all --inh-caps=-all -- \"$0\" \"$@\"' \"$0\" \"$@\"",
    );
    assert_list_only_fallback(&run, &p.token);
    assert!(
        run.notes
            .iter()
            .any(|n| n.contains("the kernel refuses a user namespace")),
        "{:?}",
        run.notes
    );
    assert!(run.report.contains("list-only carving"), "{}", run.report);
    assert!(
        run.report.contains("metadata") && run.report.contains("cannot mount the rest read-only"),
        "{}",
        run.report
    );
}

#[test]
fn without_denied_names_no_carve_layer_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(d.join("main.txt"), "x").unwrap();
    let scope = Scope {
        write: vec![ScopeEntry {
            path: d.clone(),
            source: ScopeSource::Flag,
        }],
        deny: DENY.iter().map(|s| s.to_string()).collect(),
        ..Scope::default()
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let jail =
        sandbox::prepare_with_env(&scope, &["true".into()], &d, &JailOptions::default(), &env)
            .unwrap();
    assert!(!jail.report().layers.iter().any(|l| l.layer == "carve"));
    assert!(jail
        .grants()
        .iter()
        .any(|g| g.path == d && g.access == sandbox::GrantAccess::ReadWrite));
}
