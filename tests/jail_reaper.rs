//! The jail's shim and init become the reaper (`src/sandbox/linux/reaper/main.rs`) once the
//! server runs: two processes of a few kilobytes that hold nothing of the proxy's memory, where
//! they used to be forks of the proxy. Where the kernel refuses an executable memfd
//! (`vm.memfd_noexec = 2`) they stay forks, and the server runs and ends the same either way.
//!
//! Linux, as root (the fallback run sets `vm.memfd_noexec` in a PID namespace of its own).

#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");

/// A server that says it runs, waits for the end of its input, and exits 7.
const SERVER: &str = "echo server-ready >&2; read line; exit 7";

fn status_field(pid: u32, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

/// A process as seen from outside.
#[derive(Debug)]
struct Seen {
    /// `/proc/PID/exe`.
    exe: PathBuf,
    /// Resident memory, kB.
    rss: u64,
    /// Its `/proc/PID/maps`.
    maps: String,
}

/// Every process below `root`, nearest first.
fn descendants(root: u32) -> Vec<Seen> {
    let all: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for &pid in &all {
            if status_field(pid, "PPid").and_then(|p| p.parse().ok()) == Some(parent) {
                let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
                let rss = status_field(pid, "VmRSS")
                    .and_then(|v| v.trim_end_matches(" kB").parse().ok())
                    .unwrap_or(0);
                let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
                found.push(Seen { exe, rss, maps });
                parents.push(pid);
            }
        }
    }
    found
}

/// Start `cmd` (the proxy, possibly behind a wrapper), wait until the server says it runs, take
/// the process tree below `cmd`, close the proxy's input, and return the tree and the exit code.
fn run(mut cmd: Command, dir: &Path) -> (Vec<Seen>, Option<i32>) {
    cmd.args(["--pin", "off", "--allow-write"])
        .arg(dir)
        .args(["--", "/bin/sh", "-c", SERVER])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut proxy = cmd.spawn().expect("start the proxy");
    let mut stderr = BufReader::new(proxy.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the proxy ended before the server ran"
        );
        if line.contains("server-ready") {
            break;
        }
    }
    let tree = descendants(proxy.id());
    drop(proxy.stdin.take());
    let status = proxy.wait().unwrap();
    (tree, status.code())
}

fn is_reaper(exe: &Path) -> bool {
    exe.to_string_lossy().contains("memfd:mcpjail-reaper")
}

#[test]
fn the_shim_and_init_become_the_reaper_and_hold_nothing_of_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let (tree, code) = run(Command::new(PROXY), dir.path());
    // The proxy's descendants: the shim, the init, the server (`sh`).
    assert_eq!(tree.len(), 3, "{tree:#?}");
    for reaper in &tree[..2] {
        assert!(is_reaper(&reaper.exe), "{tree:#?}");
        assert!(reaper.rss < 200, "{reaper:#?}");
        assert!(
            !reaper.maps.contains("mcpjail-proxy") && !reaper.maps.contains("libc"),
            "the reaper maps the proxy's files: {reaper:#?}"
        );
    }
    assert!(
        tree[2].exe.ends_with("sh") || tree[2].exe.ends_with("dash"),
        "{tree:#?}"
    );
    assert_eq!(code, Some(7), "the proxy ends as the server did");
}

#[test]
fn without_an_executable_memfd_they_stay_forks_and_the_server_runs_the_same() {
    // Control for the test above: the same run where the kernel refuses executable memfds
    // (`vm.memfd_noexec = 2`, set in a PID namespace of its own, where the setting is local).
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--mount-proc", "sh", "-c"])
        .arg("echo 2 > /proc/sys/vm/memfd_noexec && exec \"$@\"")
        .args(["sh", PROXY]);
    let (tree, code) = run(cmd, dir.path());
    // unshare's child (the proxy, exec'd by sh), then the shim, the init, the server.
    assert_eq!(tree.len(), 4, "{tree:#?}");
    for fork in &tree[..3] {
        assert!(fork.exe.ends_with("mcpjail-proxy"), "{tree:#?}");
        assert!(fork.maps.contains("mcpjail-proxy"), "{fork:#?}");
    }
    assert_eq!(code, Some(7), "the proxy ends as the server did");
}
