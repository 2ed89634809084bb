//! `scripts/rustc-pgo`, the repository's rustc wrapper: it must add the committed profile to an
//! optimised compile by the rustc the profile was made with, and leave every other compile
//! exactly as cargo asked (a debug build, `cargo fuzz`, the instrumented build of
//! `scripts/pgo-build.sh`, another target, another rustc, `MCPJAIL_PGO=0`).
//!
//! The wrapper runs a stand-in rustc that records the arguments it was given and answers `-vV`
//! with a chosen text, so each case shows what the real rustc would have been asked to do.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

struct FakeRustc {
    dir: tempfile::TempDir,
}

impl FakeRustc {
    fn new(version_text: &str) -> FakeRustc {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("vV"), version_text).unwrap();
        let script = dir.path().join("rustc");
        std::fs::write(
            &script,
            format!(
                "#!/usr/bin/env bash\nif [ \"$1\" = -vV ]; then cat '{0}/vV'; exit 0; fi\n\
                 printf '%s\\n' \"$@\" > '{0}/args'\nenv > '{0}/env'\n",
                dir.path().display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakeRustc { dir }
    }

    /// The arguments the stand-in rustc got when the wrapper was run with `args`.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
        let status = Command::new(Path::new(ROOT).join("scripts/rustc-pgo"))
            .arg(self.dir.path().join("rustc"))
            .args(args)
            .env_remove("MCPJAIL_PGO")
            .envs(env.iter().copied())
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read_to_string(self.dir.path().join("args"))
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }
}

/// The `-vV` lines the committed profile was made with (`pgo/rustc`), as that rustc prints them.
fn profile_rustc() -> String {
    let recorded = std::fs::read_to_string(Path::new(ROOT).join("pgo/rustc")).unwrap();
    format!(
        "rustc 1.95.0 (x 2026-01-01)\nbinary: rustc\n{recorded}host: x86_64-unknown-linux-gnu\n"
    )
}

fn profile() -> PathBuf {
    Path::new(ROOT)
        .join("pgo/mcpjail-proxy.profdata")
        .canonicalize()
        .unwrap()
}

const RELEASE: &[&str] = &["--crate-name", "mcpjail", "-C", "opt-level=3", "src/lib.rs"];

#[test]
fn an_optimised_compile_by_the_profiles_rustc_is_laid_out_by_it() {
    let rustc = FakeRustc::new(&profile_rustc());
    let args = rustc.run(RELEASE, &[]);
    let mut expected: Vec<String> = RELEASE.iter().map(|a| a.to_string()).collect();
    expected.extend([
        format!("-Cprofile-use={}", profile().display()),
        "-Cllvm-args=-no-pgo-warn-mismatch".into(),
        "--cfg".into(),
        "mcpjail_pgo".into(),
    ]);
    assert_eq!(args, expected);
}

#[test]
fn every_other_compile_is_left_as_cargo_asked() {
    let rustc = FakeRustc::new(&profile_rustc());
    type Case<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: &[Case] = &[
        (
            "a debug build",
            &["--crate-name", "mcpjail", "-C", "debuginfo=2", "src/lib.rs"],
            &[],
        ),
        ("turned off", RELEASE, &[("MCPJAIL_PGO", "0")]),
        (
            "cargo fuzz",
            &[
                "-C",
                "opt-level=3",
                "--cfg",
                "fuzzing",
                "-Cpasses=sancov-module",
                "x.rs",
            ],
            &[],
        ),
        (
            "the instrumented build",
            &["-C", "opt-level=3", "-Cprofile-generate=/tmp/raw", "x.rs"],
            &[],
        ),
        (
            "coverage",
            &["-C", "opt-level=3", "-C", "instrument-coverage", "x.rs"],
            &[],
        ),
        (
            "another target",
            &[
                "-C",
                "opt-level=3",
                "--target",
                "aarch64-unknown-linux-gnu",
                "x.rs",
            ],
            &[],
        ),
        (
            "another target, one argument",
            &["-C", "opt-level=3", "--target=x86_64-apple-darwin", "x.rs"],
            &[],
        ),
    ];
    for (what, args, env) in cases {
        assert_eq!(
            rustc.run(args, env),
            args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
            "{what}: the wrapper changed the compile"
        );
    }
    // The control: the same wrapper and rustc do add the profile to a release compile.
    assert!(rustc.run(RELEASE, &[]).len() > RELEASE.len());
}

/// Cargo hands each test the path of each binary in `CARGO_BIN_EXE_<name>`, and the names have
/// hyphens: a wrapper run by a shell that drops such variables (dash does) breaks every test that
/// reads one at compile time.
#[test]
fn the_compile_keeps_every_variable_cargo_set() {
    let rustc = FakeRustc::new(&profile_rustc());
    for args in [RELEASE, &["--crate-name", "x", "x.rs"]] {
        rustc.run(args, &[("CARGO_BIN_EXE_mcpjail-proxy", "/p")]);
        let env = std::fs::read_to_string(rustc.dir.path().join("env")).unwrap();
        assert!(
            env.lines().any(|l| l == "CARGO_BIN_EXE_mcpjail-proxy=/p"),
            "{args:?}: the variable was lost"
        );
    }
}

#[test]
fn another_rustc_builds_without_the_profile() {
    let other = profile_rustc().replace("commit-hash: ", "commit-hash: 0");
    let rustc = FakeRustc::new(&other);
    assert_eq!(
        rustc.run(RELEASE, &[]),
        RELEASE.iter().map(|a| a.to_string()).collect::<Vec<_>>()
    );
}
