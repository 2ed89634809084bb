//! `mcpjail policy derive` reports the server's runtime as exec scope. A program in some
//! `<prefix>/bin` must not make all of `<prefix>` runtime: `~/.cargo/bin/server` is not a
//! reason to report `~/.cargo` (which holds `credentials.toml`). Controls: an interpreter
//! prefix (a pyenv-style Python under HOME, the real venv in `.test-env/git`) still is runtime.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mcpjail::policy::{derive_scope_with_env, Access, DeriveInputs, Derived};

struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("home/proj")).unwrap();
    Home { _dir: dir, root }
}

fn write_exec(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn derive(h: &Home, command: Vec<String>) -> Derived {
    let inputs = DeriveInputs {
        // No policy file of this name exists in any config dir.
        name: "policy-runtime-test-no-such-server".into(),
        command,
        cwd: h.root.join("home/proj"),
        home: Some(h.root.join("home")),
        ..Default::default()
    };
    derive_scope_with_env(&inputs, &[]).unwrap()
}

fn exec_covers(d: &Derived, path: &Path) -> bool {
    d.scope.exec.iter().any(|e| path.starts_with(&e.path))
}

fn assert_not_granted(d: &Derived, secret: &Path) {
    let all: Vec<_> = d
        .scope
        .exec
        .iter()
        .chain(&d.scope.read)
        .chain(&d.scope.write)
        .map(|e| e.path.clone())
        .collect();
    assert!(
        !all.iter().any(|p| secret.starts_with(p)),
        "{} is covered by the derived scope {all:?}",
        secret.display()
    );
    assert!(d.scope.check(secret, Access::Read).is_err());
    assert!(d.scope.check(secret, Access::Write).is_err());
}

#[test]
fn cargo_bin_program_does_not_report_cargo_home_as_runtime() {
    let h = home();
    let program = h.root.join("home/.cargo/bin/server");
    write_exec(&program, "not a script, a stand-in for a compiled binary\n");
    let secret = h.root.join("home/.cargo/credentials.toml");
    std::fs::write(&secret, "[registry]\ntoken = \"x\"\n").unwrap();

    let d = derive(&h, vec![program.to_string_lossy().into()]);
    // Derivation did look at the program: it is runtime itself.
    assert!(exec_covers(&d, &program), "exec: {:?}", d.scope.exec);
    assert_not_granted(&d, &secret);
}

#[test]
fn local_bin_program_does_not_report_local_share_as_runtime() {
    let h = home();
    let program = h.root.join("home/.local/bin/tool");
    write_exec(&program, "stand-in binary\n");
    let secret = h.root.join("home/.local/share/keyrings/login.keyring");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "secret").unwrap();

    let d = derive(&h, vec![program.to_string_lossy().into()]);
    assert!(exec_covers(&d, &program), "exec: {:?}", d.scope.exec);
    assert_not_granted(&d, &secret);
}

/// Control: a Python install under HOME (pyenv layout) is an interpreter prefix; its standard
/// library is runtime.
#[test]
fn interpreter_prefix_under_home_is_still_runtime() {
    let h = home();
    let prefix = h.root.join("home/.pyenv/versions/3.12.1");
    let python = prefix.join("bin/python3.12");
    write_exec(&python, "stand-in interpreter\n");
    let stdlib = prefix.join("lib/python3.12/os.py");
    std::fs::create_dir_all(stdlib.parent().unwrap()).unwrap();
    std::fs::write(&stdlib, "").unwrap();

    let d = derive(
        &h,
        vec![python.to_string_lossy().into(), "-c".into(), "pass".into()],
    );
    assert!(
        d.scope.exec.iter().any(|e| e.path == prefix),
        "the interpreter prefix {} is not runtime: {:?}",
        prefix.display(),
        d.scope.exec
    );
    assert!(exec_covers(&d, &stdlib));
}

/// Control on a real install: the `mcp-server-git` venv from `scripts/test-deps.sh`.
#[test]
fn real_venv_is_still_runtime() {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".test-env/git");
    let program = venv.join("bin/mcp-server-git");
    assert!(
        program.exists(),
        "{} is missing\nhint: run scripts/test-deps.sh",
        program.display()
    );
    let venv = std::fs::canonicalize(&venv).unwrap();
    let h = home();
    let d = derive(&h, vec![program.to_string_lossy().into()]);
    assert!(
        exec_covers(&d, &venv.join("pyvenv.cfg")),
        "the venv {} is not runtime: {:?}",
        venv.display(),
        d.scope.exec
    );
}
