//! How the jailed server's process is started: under its PID namespace's init, the server's own
//! process confines itself and calls `execvp` (std's `Command` does it only without a
//! namespace). Whatever stops it still fails the spawn with the `exec`'s own error, as an
//! unconfined spawn of the same program does; a program that starts gets its arguments, its
//! scrubbed environment and its working directory exactly as std would give them.

#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use mcpjail::policy::{Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, Enforcement, JailOptions};

fn scope_of(dir: &Path) -> Scope {
    let entry = ScopeEntry {
        path: dir.to_path_buf(),
        source: ScopeSource::Flag,
    };
    Scope {
        read: vec![entry.clone()],
        write: vec![entry],
        ..Scope::default()
    }
}

fn env(dir: &Path) -> Vec<(OsString, OsString)> {
    vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), dir.as_os_str().to_owned()),
        ("TERM".into(), "mcpjail-spawn-test".into()),
    ]
}

fn jail_for(dir: &Path, command: &[String], disabled: bool) -> sandbox::PreparedJail {
    let opts = JailOptions {
        disabled,
        ..JailOptions::default()
    };
    let jail =
        sandbox::prepare_with_env(&scope_of(dir), command, dir, &opts, &env(dir)).expect("prepare");
    if !disabled {
        let pid_ns = jail
            .report()
            .layers
            .iter()
            .find(|l| l.layer == "process_tree")
            .map(|l| l.enforcement);
        assert_eq!(
            pid_ns,
            Some(Enforcement::Fully),
            "the server does not get a PID namespace here: {}",
            jail.report()
        );
    }
    jail
}

/// The ways a server is started: unjailed; jailed (the server's process cloned by the init);
/// jailed and forked for later hooks (the scan's path). `(disabled, for_hooks)`.
const PATHS: [(bool, bool); 3] = [(true, false), (false, false), (false, true)];

fn command(jail: &sandbox::PreparedJail, for_hooks: bool) -> tokio::process::Command {
    let mut cmd = if for_hooks {
        jail.command_for_hooks()
    } else {
        jail.command()
    };
    cmd.stdin(std::process::Stdio::null());
    cmd
}

/// A program the jail prepared, made non-executable before the spawn: `execve` fails with
/// EACCES in the server's process, and the spawn reports exactly that, jailed as unjailed, with
/// the server's process cloned by the init or forked for later hooks.
#[tokio::test]
async fn a_failed_exec_fails_the_spawn_with_the_execs_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let program = dir.join("server");
    std::fs::copy("/bin/true", &program).unwrap();
    let argv = vec![program.display().to_string()];
    for (disabled, hooks) in PATHS {
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let jail = jail_for(&dir, &argv, disabled);
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = command(&jail, hooks)
            .spawn()
            .expect_err("a program without the execute bit cannot start");
        assert_eq!(
            err.raw_os_error(),
            Some(libc::EACCES),
            "disabled={disabled} hooks={hooks}: {err}"
        );
    }
}

/// The same program, once executable, runs: the spawn completes with the server's `exec`, and
/// the server sees the arguments (NUL-free bytes as given, spaces kept), the environment and the
/// working directory the jail prepared, as pid 2 under its namespace's init.
#[tokio::test]
async fn a_started_server_gets_its_arguments_environment_and_directory() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let script = "import json, os, sys; print(json.dumps({'argv': sys.argv[1:], \
                  'env': [k + '=' + v for k, v in os.environ.items()], 'cwd': os.getcwd(), \
                  'pid': os.getpid(), 'ppid': os.getppid()}))";
    let argv: Vec<String> = vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        script.into(),
        "two words".into(),
        "".into(),
        "ünï".into(),
    ];
    let mut seen = Vec::new();
    for (disabled, hooks) in PATHS {
        let jail = jail_for(&dir, &argv, disabled);
        let out = command(&jail, hooks).output().await.expect("spawn");
        assert!(
            out.status.success(),
            "disabled={disabled} hooks={hooks}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["argv"],
            serde_json::json!(["two words", "", "ünï"]),
            "disabled={disabled} hooks={hooks}"
        );
        // Exactly the prepared environment, in std's order (sorted by name), nothing more.
        let expected: Vec<String> = match jail.env() {
            Some(env) => env
                .iter()
                .cloned()
                .collect::<std::collections::BTreeMap<_, _>>()
                .into_iter()
                .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                .collect(),
            None => std::env::vars().map(|(k, v)| format!("{k}={v}")).collect(),
        };
        // Python adds LC_CTYPE under the C locale; compare what the jail controls.
        let got: Vec<String> = v["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap().to_owned())
            .filter(|e| !e.starts_with("LC_CTYPE="))
            .collect();
        assert_eq!(got, expected, "disabled={disabled} hooks={hooks}");
        assert!(
            got.contains(&"TERM=mcpjail-spawn-test".to_owned()),
            "disabled={disabled} hooks={hooks}: {got:?}"
        );
        assert_eq!(v["cwd"], dir.display().to_string(), "disabled={disabled}");
        seen.push((v["pid"].clone(), v["ppid"].clone()));
    }
    // Jailed: the server is pid 2 of its namespace, its parent the init (pid 1), either way.
    assert_eq!(seen[1], (serde_json::json!(2), serde_json::json!(1)));
    assert_eq!(seen[2], (serde_json::json!(2), serde_json::json!(1)));
    assert_ne!(
        seen[0].0,
        serde_json::json!(2),
        "the control runs in the host's namespace"
    );
}

/// A jailed script without `#!` runs under `/bin/sh` (`execvp` retries it so, as it did when
/// std's `Command` exec'd the jailed server), and glibc copies `argv` onto the stack to do it:
/// with 160 000 arguments (1.3 MB of pointers) the server's process, which runs on a stack of its
/// own until `exec`, must still have room. (Unjailed, std uses `posix_spawn`, which does not
/// retry: that spawn fails with ENOEXEC, here as before.)
#[tokio::test]
async fn a_script_without_an_interpreter_line_runs_under_sh_with_a_long_argv() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let script = dir.join("count.sh");
    std::fs::write(&script, "echo \"$#\"\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut argv = vec![script.display().to_string()];
    argv.extend(std::iter::repeat_n("x".to_owned(), 160_000));
    for (disabled, hooks) in PATHS.into_iter().filter(|(disabled, _)| !disabled) {
        let jail = jail_for(&dir, &argv, disabled);
        let out = command(&jail, hooks).output().await.expect("spawn");
        assert!(
            out.status.success(),
            "disabled={disabled} hooks={hooks}: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "160000",
            "disabled={disabled} hooks={hooks}"
        );
    }
}
