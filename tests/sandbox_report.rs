//! The jail says what it enforces, refuses `--require-full` when it cannot, and explains a
//! server that died at start-up because of it.

#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::PathBuf;

use mcpjail::policy::Scope;
use mcpjail::sandbox::{self, Enforcement, JailOptions};

fn env() -> Vec<(OsString, OsString)> {
    std::env::vars_os().collect()
}

#[test]
fn no_jail_is_reported_as_not_enforced_and_refused_with_require_full() {
    let cwd = std::env::temp_dir();
    let opts = JailOptions {
        disabled: true,
        ..JailOptions::default()
    };
    let jail = sandbox::prepare_with_env(&Scope::default(), &["true".into()], &cwd, &opts, &env())
        .unwrap();
    assert!(!jail.is_confined());
    assert_eq!(jail.report().overall(), Enforcement::NotEnforced);
    assert!(jail
        .report()
        .layers
        .iter()
        .all(|l| l.enforcement == Enforcement::NotEnforced));

    let strict = JailOptions {
        disabled: true,
        require_full: true,
        ..JailOptions::default()
    };
    let err = sandbox::prepare_with_env(&Scope::default(), &["true".into()], &cwd, &strict, &env())
        .unwrap_err();
    assert!(err.to_string().contains("--require-full"), "{err}");
}

#[test]
fn this_kernel_enforces_every_layer_fully() {
    // NOTES.md: these machines run Landlock ABI 7. If this fails on another kernel, the report
    // is doing its job: read the layer details.
    let cwd = std::env::temp_dir();
    let jail = sandbox::prepare_with_env(
        &Scope::default(),
        &["true".into()],
        &cwd,
        &JailOptions {
            require_full: true,
            ..JailOptions::default()
        },
        &env(),
    )
    .unwrap();
    let report = jail.report();
    println!("{report}");
    assert_eq!(report.overall(), Enforcement::Fully);
    for layer in [
        "landlock_fs",
        "landlock_net",
        "landlock_scope",
        "seccomp",
        "no_new_privs",
        "env_scrub",
        "tmpdir",
    ] {
        assert!(
            report.layers.iter().any(|l| l.layer == layer),
            "missing layer {layer}"
        );
    }
    let tmp = jail.tmpdir().unwrap().to_path_buf();
    assert!(tmp.is_dir());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&tmp).unwrap().permissions().mode() & 0o777,
        0o700
    );
    drop(jail);
    assert!(!tmp.exists(), "the private TMPDIR is removed with the jail");
}

#[tokio::test]
async fn a_server_that_dies_on_a_denied_read_gets_a_hint_naming_the_path() {
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let config = home.join(format!(".mcpjail-report-config-{}", std::process::id()));
    std::fs::write(&config, "{}").unwrap();
    let script = format!("open({:?}).read()", config.to_string_lossy());
    let cmd = vec!["/usr/bin/python3".to_string(), "-c".to_string(), script];
    let cwd = std::env::temp_dir();

    // Control: unjailed it starts fine.
    let control = std::process::Command::new(&cmd[0])
        .args(&cmd[1..])
        .status()
        .unwrap();
    assert!(control.success());

    let jail = sandbox::prepare_with_env(
        &Scope::default(),
        &cmd,
        &cwd,
        &JailOptions::default(),
        &env(),
    )
    .unwrap();
    let out = jail
        .command()
        .stderr(std::process::Stdio::piped())
        .output()
        .await
        .unwrap();
    let _ = std::fs::remove_file(&config);
    assert!(!out.status.success(), "the jailed read must fail");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let message = sandbox::explain_start_failure(&jail, None, &stderr);
    println!("{message}");
    assert!(
        message.contains(&format!("--allow-read {}", config.display())),
        "{message}"
    );
}

#[test]
fn doctor_json_reports_the_kernel_abi() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let abi = v["kernel"]["landlock_abi"].as_i64().unwrap();
    assert!(abi >= 1, "{v}");
    assert_eq!(v["kernel"]["seccomp_filter"], true);
    assert_eq!(v["jail"]["layers"][0]["layer"], "landlock_fs");
}
