//! Run one test of the current test binary again in another process — as `nobody`, or under a
//! wrapper that takes namespaces or capabilities away — and read the JSON it prints after a
//! marker. The jail tests use this where the uid or the kernel's refusals matter: a Landlock
//! ruleset cannot be lifted from a process, and a uid cannot be dropped and regained.

use std::ffi::OsStr;

/// `sh -c` wrapper: this test binary as `nobody` (setpriv(1) from util-linux).
pub const AS_NOBODY: &str =
    "exec setpriv --reuid=65534 --regid=65534 --clear-groups -- \"$0\" \"$@\"";

/// Run test `name` of this binary through `wrapper` (a `sh -c` line ending in `"$0" "$@"`, which
/// become this binary and its arguments) with `env` added, and return the JSON that follows
/// `marker` on a line of its stdout. The helper's output is echoed for failing tests.
pub fn rerun(wrapper: &str, name: &str, env: &[(&str, &OsStr)], marker: &str) -> serde_json::Value {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .args(["-c", wrapper])
        .arg(&exe)
        .args([name, "--exact", "--nocapture"])
        .envs(env.iter().copied())
        .output()
        .expect("run the helper (setpriv(1) and unshare(1) come from util-linux)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "helper failed: {}", out.status);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(marker))
        .expect("the helper's result line");
    serde_json::from_str(line).unwrap()
}
