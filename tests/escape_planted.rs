//! Issue 9, classes 3 and 4: what a server can plant in the files it may write.
//!
//! * Class 3 — grants decided by files the server controls: a symlink planted in scope, a
//!   rewritten `.venv/pyvenv.cfg`, a file scope replaced by a symlink, a file scope whose
//!   directory is `~/.config`. None of them may widen the next jail.
//! * Class 4 — code that runs later: git hooks and `.git/config`, shell rc files, editor and
//!   agent settings inside write scope stay readable but not writable (proxy and kernel), and
//!   credentials below the first level of a scope directory are unreadable.
//!
//! Every jailed claim has a control: the same attempt unjailed (or without the fix's trigger)
//! reaches the target. The server is `/usr/bin/python3 -c PROBE` run in a fresh child; the
//! class-4 test also runs the whole jail as an unprivileged uid (nobody) through `setpriv`.

#![cfg(target_os = "linux")]

mod rerun;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use mcpjail::policy::{self, Access, DenyReason, Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};

/// argv[1] is a JSON list of `[name, op, path]`: op is `read`, `append`, `create`, `replace`
/// (temp sibling + rename), `move` (rename to `<path>.moved`) or `list`. Prints `{name: "OK[:content]" | "ERR:<errno>"}`.
const PROBE: &str = r##"
import errno, json, os, sys
out = {}
for name, op, p in json.loads(sys.argv[1]):
    try:
        if op == "read":
            with open(p) as f:
                r = f.read()
        elif op == "append":
            with open(p, "a") as f:
                f.write("\n# planted\n")
            r = None
        elif op == "create":
            with open(p, "x") as f:
                f.write("#!/bin/sh\necho planted\n")
            r = None
        elif op == "replace":
            with open(p + ".tmp", "w") as f:
                f.write("replaced")
            os.rename(p + ".tmp", p)
            r = None
        elif op == "move":
            os.rename(p, p + ".moved")
            r = None
        elif op == "list":
            r = ",".join(sorted(os.listdir(p)))
        out[name] = "OK" + ("" if r is None else ":" + r)
    except OSError as e:
        out[name] = "ERR:" + errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"##;

const NOBODY: u32 = 65534;

fn token() -> String {
    let mut buf = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .unwrap();
    format!("CANARY-{:016x}", u64::from_ne_bytes(buf))
}

/// A temp root traversable by anyone (for the runs as nobody); canonical.
fn root() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::Builder::new()
        .prefix("mcpjail-planted-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let p = std::fs::canonicalize(t.path()).unwrap();
    (t, p)
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn chown_tree(p: &Path, uid: u32) {
    std::os::unix::fs::lchown(p, Some(uid), Some(uid)).unwrap();
    if std::fs::symlink_metadata(p).unwrap().is_dir() {
        for e in std::fs::read_dir(p).unwrap() {
            chown_tree(&e.unwrap().path(), uid);
        }
    }
}

fn entry(p: &Path) -> ScopeEntry {
    ScopeEntry {
        path: p.to_path_buf(),
        source: ScopeSource::Flag,
    }
}

struct Run {
    results: BTreeMap<String, String>,
    notes: Vec<String>,
}

impl Run {
    fn get(&self, key: &str) -> &str {
        self.results
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("no result for {key}: {:?}", self.results))
    }
}

/// Run the probe with `ops` under `scope` (jailed unless `control`), program `python`.
async fn run_with(
    scope: &Scope,
    python: &Path,
    cwd: &Path,
    home: &Path,
    control: bool,
    ops: &serde_json::Value,
) -> Run {
    let opts = JailOptions {
        disabled: control,
        ..JailOptions::default()
    };
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), home.as_os_str().to_owned()),
    ];
    let command: Vec<String> = vec![
        python.to_string_lossy().into_owned(),
        "-c".into(),
        PROBE.into(),
        ops.to_string(),
    ];
    let jail = sandbox::prepare_with_env(scope, &command, cwd, &opts, &env).unwrap();
    if !control {
        assert!(
            jail.report().overall() == sandbox::Enforcement::Fully,
            "{}",
            jail.report()
        );
    }
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = cmd.output().await.expect("spawn the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "probe failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let results: BTreeMap<String, String> = serde_json::from_str(stdout.trim()).unwrap();
    println!("{}:", if control { "control" } else { "jailed" });
    for (k, v) in &results {
        println!("  {k:<24} {v}");
    }
    for n in jail.notes() {
        println!("  note: {n}");
    }
    Run {
        results,
        notes: jail.notes().to_vec(),
    }
}

// ---------------------------------------------------------------------------------------------
// Class 4: protected names and deep credentials.

/// A project with git metadata (its own and a nested repo's, two levels down), shell rc and
/// editor files, and a credential three levels down.
fn planted_project(owner: Option<u32>) -> (tempfile::TempDir, PathBuf, String) {
    let (t, r) = root();
    let d = r.join("proj");
    let secret = token();
    write(&d.join(".git/config"), "[core]\n\tbare = false\n");
    write(&d.join(".git/hooks/pre-commit.sample"), "#!/bin/sh\n");
    write(&d.join("libs/vendored/.git/config"), "[core]\n");
    std::fs::create_dir_all(d.join("libs/vendored/.git/hooks")).unwrap();
    // A submodule's git directory, which git uses when it works in the submodule.
    write(
        &d.join(".git/modules/vendor/HEAD"),
        "ref: refs/heads/main\n",
    );
    write(&d.join(".git/modules/vendor/config"), "[core]\n");
    std::fs::create_dir_all(d.join(".git/modules/vendor/hooks")).unwrap();
    write(&d.join(".bashrc"), "# rc\n");
    write(&d.join(".vscode/settings.json"), "{}\n");
    write(&d.join("pkg/.envrc"), "export X=1\n");
    write(&d.join("a/b/.env"), &format!("API_KEY={secret}"));
    write(&d.join("a/b/c/deeper.pem"), "not reached by the walk");
    write(&d.join("main.txt"), "original");
    if let Some(uid) = owner {
        chown_tree(&d, uid);
    }
    (t, d, secret)
}

fn planted_ops(d: &Path) -> serde_json::Value {
    let p = |rel: &str| d.join(rel).to_string_lossy().into_owned();
    serde_json::json!([
        ["read_git_config", "read", p(".git/config")],
        ["append_git_config", "append", p(".git/config")],
        ["replace_git_config", "replace", p(".git/config")],
        ["create_hook", "create", p(".git/hooks/pre-commit")],
        [
            "create_nested_hook",
            "create",
            p("libs/vendored/.git/hooks/post-checkout")
        ],
        [
            "append_nested_git_config",
            "append",
            p("libs/vendored/.git/config")
        ],
        [
            "create_submodule_hook",
            "create",
            p(".git/modules/vendor/hooks/post-checkout")
        ],
        [
            "append_submodule_config",
            "append",
            p(".git/modules/vendor/config")
        ],
        [
            "create_submodule_object",
            "create",
            p(".git/modules/vendor/objects-probe")
        ],
        ["append_bashrc", "append", p(".bashrc")],
        ["read_bashrc", "read", p(".bashrc")],
        [
            "append_vscode_settings",
            "append",
            p(".vscode/settings.json")
        ],
        ["create_vscode_tasks", "create", p(".vscode/tasks.json")],
        ["append_deep_envrc", "append", p("pkg/.envrc")],
        ["read_deep_env", "read", p("a/b/.env")],
        ["create_file", "create", p("new.txt")],
        ["replace_file", "replace", p("main.txt")],
        ["create_git_object", "create", p(".git/objects-probe")],
        // Last: moving a directory above a protected name away, to make the name again
        // (writable) in its place for the host's git, shell or editor to run later.
        ["move_git_dir", "move", p(".git")],
        ["move_nested_repo", "move", p("libs/vendored")],
        ["move_nested_repo_parent", "move", p("libs")],
        ["move_envrc_dir", "move", p("pkg")],
    ])
}

const PROTECTED_WRITES: &[&str] = &[
    "append_git_config",
    "replace_git_config",
    "create_hook",
    "create_nested_hook",
    "append_nested_git_config",
    "create_submodule_hook",
    "append_submodule_config",
    "append_bashrc",
    "append_vscode_settings",
    "create_vscode_tasks",
    "append_deep_envrc",
    "move_git_dir",
    "move_nested_repo",
    "move_nested_repo_parent",
    "move_envrc_dir",
];

fn planted_scope(d: &Path) -> Scope {
    Scope {
        write: vec![entry(d)],
        deny: policy::always_denied(None),
        ..Scope::default()
    }
}

fn assert_planted_control(run: &Run, secret: &str) {
    for key in PROTECTED_WRITES {
        assert_eq!(run.get(key), "OK", "control {key}");
    }
    assert!(run.get("read_deep_env").contains(secret));
}

fn assert_planted_jailed(run: &Run, secret: &str) {
    for key in PROTECTED_WRITES {
        assert!(
            run.get(key).starts_with("ERR"),
            "jailed {key}: {:?}",
            run.results
        );
    }
    assert!(run.get("read_git_config").starts_with("OK:[core]"));
    assert!(run.get("read_bashrc").starts_with("OK"));
    assert!(run.get("read_deep_env").starts_with("ERR"));
    assert!(!run.results.values().any(|v| v.contains(secret)));
    // The rest of the project, and the rest of `.git`, stay writable.
    assert_eq!(run.get("create_file"), "OK");
    assert_eq!(run.get("replace_file"), "OK");
    assert_eq!(run.get("create_git_object"), "OK");
    assert_eq!(run.get("create_submodule_object"), "OK");
}

#[tokio::test]
async fn planted_hooks_rc_files_and_editor_settings_are_read_only_in_the_jail() {
    let (_t, d, secret) = planted_project(None);
    let scope = planted_scope(&d);
    let python = Path::new("/usr/bin/python3");
    let control = run_with(&scope, python, &d, &d, true, &planted_ops(&d)).await;
    assert_planted_control(&control, &secret);

    let (_t, d, secret) = planted_project(None);
    let scope = planted_scope(&d);
    let jailed = run_with(&scope, python, &d, &d, false, &planted_ops(&d)).await;
    assert_planted_jailed(&jailed, &secret);
    assert_eq!(
        std::fs::read_to_string(d.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(!d.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(d.join("main.txt")).unwrap(),
        "replaced"
    );
    assert!(jailed
        .notes
        .iter()
        .any(|n| n.contains(".git/hooks (read-only bind of itself)")));
}

const HELPER_DIR: &str = "MCPJAIL_PLANTED_HELPER_DIR";
const HELPER_CONTROL: &str = "MCPJAIL_PLANTED_HELPER_CONTROL";

/// Not a test on its own: the jail run as another uid (started through `setpriv` by the test
/// below). Without the variables it does nothing.
#[tokio::test]
async fn helper_run_as_another_uid() {
    let Some(dir) = std::env::var_os(HELPER_DIR) else {
        return;
    };
    let d = PathBuf::from(dir);
    let control = std::env::var_os(HELPER_CONTROL).is_some();
    let run = run_with(
        &planted_scope(&d),
        Path::new("/usr/bin/python3"),
        &d,
        &d,
        control,
        &planted_ops(&d),
    )
    .await;
    let out = serde_json::json!({"results": run.results, "notes": run.notes});
    println!("PLANTED-RESULT {out}");
}

fn run_as_nobody(d: &Path, control: bool) -> Run {
    let mut env = vec![(HELPER_DIR, d.as_os_str())];
    if control {
        env.push((HELPER_CONTROL, "1".as_ref()));
    }
    let v = rerun::rerun(
        rerun::AS_NOBODY,
        "helper_run_as_another_uid",
        &env,
        "PLANTED-RESULT ",
    );
    Run {
        results: serde_json::from_value(v["results"].clone()).unwrap(),
        notes: serde_json::from_value(v["notes"].clone()).unwrap(),
    }
}

#[test]
fn planted_names_are_read_only_for_an_unprivileged_server_too() {
    let (_t, d, secret) = planted_project(Some(NOBODY));
    let control = run_as_nobody(&d, true);
    assert_planted_control(&control, &secret);

    let (_t, d, secret) = planted_project(Some(NOBODY));
    let jailed = run_as_nobody(&d, false);
    if jailed
        .notes
        .iter()
        .any(|n| n.contains("the kernel refuses a user namespace"))
    {
        // List-only fallback: first-level protected names are read-only by Landlock; deeper
        // ones are proxy-only and the notes must say so.
        assert!(jailed.get("append_bashrc").starts_with("ERR"));
        assert!(jailed.notes.iter().any(|n| n.contains("NOT covered")));
        return;
    }
    assert_planted_jailed(&jailed, &secret);
}

#[test]
fn the_proxy_refuses_writes_to_protected_names_and_allows_reads() {
    let (_t, d, _) = planted_project(None);
    let scope = planted_scope(&d);
    for rel in [
        ".git/hooks/pre-commit",
        ".git/config",
        "libs/vendored/.git/hooks/x",
        ".git/modules/vendor/hooks/post-checkout",
        ".git/modules/vendor/config",
        ".git/modules/libs/nested/modules/inner/hooks/pre-push",
        ".bashrc",
        ".vscode/tasks.json",
        ".idea/workspace.xml",
        ".claude/commands/deploy.md",
        "deep/er/.zshrc",
    ] {
        let p = d.join(rel);
        let denial = scope.check(&p, Access::Write).unwrap_err();
        assert!(
            matches!(denial.reason, DenyReason::Protected(_)),
            "{rel}: {denial:?}"
        );
        assert!(scope.check(&p, Access::Read).is_ok(), "{rel} readable");
    }
    // Control: ordinary files and the rest of `.git` are writable.
    for rel in [
        "src/main.rs",
        ".git/HEAD",
        ".git/refs/heads/main",
        ".git/modules/vendor/objects/ab/cdef",
        ".gitignore",
    ] {
        assert!(scope.check(&d.join(rel), Access::Write).is_ok(), "{rel}");
    }
}

// ---------------------------------------------------------------------------------------------
// Class 3: grants decided by files the server controls.

#[tokio::test]
async fn a_file_scope_in_dot_config_does_not_open_its_siblings() {
    // MEMORY_FILE_PATH=~/.config/memory.jsonl must not make ~/.config writable.
    let (_t, r) = root();
    let home = r.join("home");
    let memory = home.join(".config/memory.jsonl");
    write(&memory, "{}\n");
    write(&home.join(".config/git/config"), "[user]\n");
    let scope = Scope {
        write: vec![entry(&memory)],
        ..Scope::default()
    };
    let p = |p: &Path| p.to_string_lossy().into_owned();
    let ops = serde_json::json!([
        [
            "append_git_config",
            "append",
            p(&home.join(".config/git/config"))
        ],
        [
            "create_sibling",
            "create",
            p(&home.join(".config/autostart.desktop"))
        ],
        ["append_memory", "append", p(&memory)],
    ]);
    let python = Path::new("/usr/bin/python3");
    let control = run_with(&scope, python, &r, &home, true, &ops).await;
    assert_eq!(control.get("append_git_config"), "OK");
    assert_eq!(control.get("create_sibling"), "OK");
    std::fs::remove_file(home.join(".config/autostart.desktop")).unwrap();

    let jailed = run_with(&scope, python, &r, &home, false, &ops).await;
    assert!(jailed.get("append_git_config").starts_with("ERR"));
    assert!(jailed.get("create_sibling").starts_with("ERR"));
    assert_eq!(jailed.get("append_memory"), "OK");
    assert!(jailed
        .notes
        .iter()
        .any(|n| n.contains("memory.jsonl is a file in") && n.contains("XDG base directory")));

    // Control for the fix: a file in a directory of its own still gets its directory (atomic
    // replace works there).
    let own = r.join("data/memory.jsonl");
    write(&own, "{}\n");
    let scope = Scope {
        write: vec![entry(&own)],
        ..Scope::default()
    };
    let ops = serde_json::json!([["replace_memory", "replace", p(&own)]]);
    let jailed = run_with(&scope, python, &r, &home, false, &ops).await;
    assert_eq!(jailed.get("replace_memory"), "OK");
}

#[tokio::test]
async fn a_rewritten_pyvenv_cfg_in_write_scope_grants_nothing() {
    // The server rewrites its project's `.venv/pyvenv.cfg` to `home = <secret dir>/bin`; the
    // next start would grant `<secret dir>` read+exec.
    let (_t, r) = root();
    let secret = token();
    let secret_dir = r.join("secrets");
    write(&secret_dir.join("bin/README"), "");
    // A home must hold a Python to be granted at all (`sandbox::runtime`): the planted one
    // does, so only the write-scope rule stands between it and the grant.
    write(&secret_dir.join("bin/python3"), "#!/bin/sh\n");
    std::fs::set_permissions(
        secret_dir.join("bin/python3"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(&secret_dir.join("id_token"), &secret);
    let proj = r.join("proj");
    let venv = proj.join(".venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::os::unix::fs::symlink("/usr/bin/python3", venv.join("bin/python")).unwrap();
    write(
        &venv.join("pyvenv.cfg"),
        &format!("home = {}\n", secret_dir.join("bin").display()),
    );
    let ops = serde_json::json!([[
        "read_secret",
        "read",
        secret_dir.join("id_token").to_string_lossy()
    ]]);
    let python = venv.join("bin/python");

    let control = run_with(
        &Scope {
            write: vec![entry(&proj)],
            ..Scope::default()
        },
        &python,
        &proj,
        &r,
        true,
        &ops,
    )
    .await;
    assert!(control.get("read_secret").contains(&secret));

    // Control for the fix: with the venv outside write scope, the cfg is trusted and its home
    // granted — the secret is reachable, which is exactly what a planted cfg would buy.
    let trusted = run_with(
        &Scope {
            read: vec![entry(&proj)],
            ..Scope::default()
        },
        &python,
        &proj,
        &r,
        false,
        &ops,
    )
    .await;
    assert!(trusted.get("read_secret").contains(&secret));

    let jailed = run_with(
        &Scope {
            write: vec![entry(&proj)],
            ..Scope::default()
        },
        &python,
        &proj,
        &r,
        false,
        &ops,
    )
    .await;
    assert!(jailed.get("read_secret").starts_with("ERR"));
    assert!(jailed
        .notes
        .iter()
        .any(|n| n.contains("pyvenv.cfg") && n.contains("write scope")));
}

#[tokio::test]
async fn a_scope_directory_replaced_by_a_symlink_is_not_granted() {
    // Derived as a real directory; before the respawn the server replaced it with a link.
    let (_t, r) = root();
    let secret = token();
    write(&r.join("elsewhere/secret.txt"), &secret);
    let data = r.join("proj/data");
    write(&data.join("notes.txt"), "notes");
    let scope = Scope {
        write: vec![entry(&data)],
        ..Scope::default()
    };
    std::fs::rename(&data, r.join("proj/data.old")).unwrap();
    std::os::unix::fs::symlink(r.join("elsewhere"), &data).unwrap();
    let ops = serde_json::json!([[
        "read_through_link",
        "read",
        data.join("secret.txt").to_string_lossy()
    ]]);
    let python = Path::new("/usr/bin/python3");
    let control = run_with(&scope, python, &r, &r, true, &ops).await;
    assert!(control.get("read_through_link").contains(&secret));
    let jailed = run_with(&scope, python, &r, &r, false, &ops).await;
    assert!(jailed.get("read_through_link").starts_with("ERR"));
    assert!(jailed
        .notes
        .iter()
        .any(|n| n.contains("changed since it was derived")));
}

#[tokio::test]
async fn list_only_carving_does_not_grant_a_planted_symlink_target() {
    // A denied name forces carving; the fallback grants the other entries one by one, and a
    // planted `link -> elsewhere` must not become a grant of `elsewhere`.
    let (_t, r) = root();
    let secret = token();
    write(&r.join("elsewhere/secret.txt"), &secret);
    let proj = r.join("proj");
    write(&proj.join(".env"), "X=1");
    write(&proj.join("main.txt"), "main");
    std::os::unix::fs::symlink(r.join("elsewhere"), proj.join("link")).unwrap();
    let scope = Scope {
        write: vec![entry(&proj)],
        deny: vec!["**/.env*".into()],
        ..Scope::default()
    };
    let p = |rel: &str| proj.join(rel).to_string_lossy().into_owned();
    let ops = serde_json::json!([
        ["read_through_link", "read", p("link/secret.txt")],
        ["read_main", "read", p("main.txt")],
    ]);
    let env: Vec<(OsString, OsString)> = vec![("PATH".into(), "/usr/bin:/bin".into())];
    let command: Vec<String> = vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        PROBE.into(),
        ops.to_string(),
    ];
    let mut results = Vec::new();
    for control in [true, false] {
        let opts = JailOptions {
            disabled: control,
            force_list_only_carve: true,
            ..JailOptions::default()
        };
        let jail = sandbox::prepare_with_env(&scope, &command, &proj, &opts, &env).unwrap();
        let out = jail.command().output().await.unwrap();
        let v: BTreeMap<String, String> =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
        println!("control={control}: {v:?}");
        results.push(v);
    }
    assert!(results[0]["read_through_link"].contains(&secret));
    assert!(results[1]["read_through_link"].starts_with("ERR"));
    assert_eq!(results[1]["read_main"], "OK:main");
}

#[test]
fn a_memory_file_replaced_by_a_symlink_is_not_derived_as_scope() {
    let (_t, r) = root();
    let home = r.join("home");
    write(&home.join("Documents/private.txt"), "private");
    std::fs::create_dir_all(home.join(".local/share/memory")).unwrap();
    let link = home.join(".local/share/memory/memory.jsonl");
    std::os::unix::fs::symlink(home.join("Documents/private.txt"), &link).unwrap();
    let inputs = policy::DeriveInputs {
        name: "memory".into(),
        command: vec!["/bin/true".into()],
        cwd: r.clone(),
        home: Some(home.clone()),
        policy_file: None,
        allow_read: vec![],
        allow_write: vec![],
    };
    let env = |v: &Path| vec![("MEMORY_FILE_PATH".to_string(), v.to_string_lossy().into())];
    let d = policy::derive_scope_with_env(&inputs, &env(&link)).unwrap();
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("MEMORY_FILE_PATH") && n.contains("is a symlink to")),
        "{:?}",
        d.notes
    );
    assert!(
        !d.scope
            .write
            .iter()
            .any(|e| e.path.starts_with(home.join("Documents"))),
        "{:?}",
        d.scope.write
    );
    // Control: a real file there is granted (the file itself, not its directory).
    let real = home.join(".local/share/memory/real.jsonl");
    write(&real, "{}\n");
    let d = policy::derive_scope_with_env(&inputs, &env(&real)).unwrap();
    assert!(
        d.scope.write.iter().any(|e| e.path == real),
        "{:?}",
        d.scope.write
    );

    // The same through an argv path.
    let argv = policy::DeriveInputs {
        command: vec!["/bin/true".into(), link.to_string_lossy().into()],
        ..inputs
    };
    let d = policy::derive_scope(&argv).unwrap();
    let all: Vec<_> = d.scope.write.iter().chain(&d.scope.read).collect();
    assert!(
        !all.iter()
            .any(|e| e.path.starts_with(home.join("Documents"))),
        "{all:?}"
    );
    assert!(d.notes.iter().any(|n| n.contains("is a symlink to")));
}

/// A directory argument that is a symlink into the home directory's settings (`data/cache ->
/// ~/.config` in a cloned repository) is not granted, nor one to HOME or above it; a linked
/// directory elsewhere (`~/proj -> /data/proj`, the user's own layout) and the target named
/// directly still are (the controls).
#[test]
fn a_directory_argument_linked_into_home_settings_is_not_granted() {
    let (_t, r) = root();
    let home = r.join("home");
    write(&home.join(".config/rclone/rclone.conf"), "token=SECRET");
    write(&r.join("data/proj/notes.txt"), "notes");
    let repo = r.join("repo");
    std::fs::create_dir_all(repo.join("data")).unwrap();
    let links = [
        ("data/cache", home.join(".config")),
        ("data/home", home.clone()),
        ("data/above", r.clone()),
        ("data/proj", r.join("data/proj")),
    ];
    for (link, target) in &links {
        std::os::unix::fs::symlink(target, repo.join(link)).unwrap();
    }
    let derive = |arg: &str| {
        policy::derive_scope(&policy::DeriveInputs {
            name: "srv".into(),
            command: vec!["/bin/true".into(), arg.into()],
            cwd: repo.clone(),
            home: Some(home.clone()),
            policy_file: None,
            allow_read: vec![],
            allow_write: vec![],
        })
        .unwrap()
    };
    for (link, target) in &links[..3] {
        let d = derive(link);
        let all: Vec<_> = d.scope.write.iter().chain(&d.scope.read).collect();
        assert!(!all.iter().any(|e| e.path == *target), "{link}: {all:?}");
        assert!(
            d.notes
                .iter()
                .any(|n| n.contains("is a symlink to") && n.contains("home directory")),
            "{link}: {:?}",
            d.notes
        );
    }
    // Controls: a link elsewhere is the user's layout, and the target named directly is a
    // choice.
    let d = derive("data/proj");
    assert!(
        d.scope.write.iter().any(|e| e.path == r.join("data/proj")),
        "{:?}",
        d.scope.write
    );
    let d = derive(&home.join(".config").to_string_lossy());
    assert!(
        d.scope.write.iter().any(|e| e.path == home.join(".config")),
        "{:?}",
        d.scope.write
    );
}

/// [`run_with`] with explicit jail options (`disabled` is taken from `control`).
async fn run_with_opts(
    scope: &Scope,
    cwd: &Path,
    home: &Path,
    control: bool,
    mut opts: JailOptions,
    ops: &serde_json::Value,
) -> Result<Run, sandbox::SandboxError> {
    opts.disabled = control;
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), home.as_os_str().to_owned()),
    ];
    let command: Vec<String> = vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        PROBE.into(),
        ops.to_string(),
    ];
    let jail = sandbox::prepare_with_env(scope, &command, cwd, &opts, &env)?;
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = cmd.output().await.expect("spawn the probe");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "probe failed: {}", out.status);
    let results: BTreeMap<String, String> = serde_json::from_str(stdout.trim()).unwrap();
    println!(
        "{}: {results:?}",
        if control { "control" } else { "jailed" }
    );
    Ok(Run {
        results,
        notes: jail.notes().to_vec(),
    })
}

#[tokio::test]
async fn a_scope_path_that_changed_kind_since_it_was_derived_is_refused() {
    // Derived as a directory (`proj/data`); before the next jail (a respawn) it became a file.
    // Granted as what it is now, a write-scope file brings its directory: all of `proj`.
    let (_t, r) = root();
    let data = r.join("proj/data");
    std::fs::create_dir_all(&data).unwrap();
    write(&r.join("proj/notes.txt"), "mine");
    let scope = Scope {
        write: vec![entry(&data)],
        ..Scope::default()
    };
    let recorded = sandbox::observe_kinds(&scope);
    assert_eq!(recorded, vec![(data.clone(), sandbox::PathKind::Directory)]);
    std::fs::remove_dir(&data).unwrap();
    write(&data, "now a file");
    let ops = serde_json::json!([[
        "append_sibling",
        "append",
        r.join("proj/notes.txt").to_string_lossy()
    ]]);
    // Control: nothing recorded, so the jail grants the new kind, and the sibling is writable.
    let control = run_with_opts(&scope, &r, &r, false, JailOptions::default(), &ops)
        .await
        .expect("without a record the jail starts");
    assert_eq!(control.get("append_sibling"), "OK");
    // With the kinds recorded at derivation, the jail refuses to start and says why.
    let opts = JailOptions {
        derived_kinds: recorded,
        ..JailOptions::default()
    };
    let err = match run_with_opts(&scope, &r, &r, false, opts, &ops).await {
        Ok(run) => panic!("the jail started: {:?}", run.results),
        Err(e) => e.to_string(),
    };
    assert!(err.contains(&data.display().to_string()), "{err}");
    assert!(
        err.contains("was a directory") && err.contains("is a file now"),
        "{err}"
    );
    assert!(err.contains("hint:"), "{err}");
}

#[tokio::test]
async fn a_state_directory_that_is_a_symlink_is_not_granted_as_its_target() {
    // The grant is opened without following links: a state directory that is a symlink (here
    // to a directory holding a secret) gives the server nothing.
    let (_t, r) = root();
    let secret = token();
    write(&r.join("elsewhere/secret.txt"), &secret);
    let state = r.join("state/mcpjail-servers/probe");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(r.join("elsewhere"), &state).unwrap();
    let scope = Scope::default();
    let ops = serde_json::json!([[
        "read_through_state",
        "read",
        state.join("secret.txt").to_string_lossy()
    ]]);
    let opts = || JailOptions {
        state_dir: Some(state.clone()),
        ..JailOptions::default()
    };
    let control = run_with_opts(&scope, &r, &r, true, opts(), &ops)
        .await
        .unwrap();
    assert!(control.get("read_through_state").contains(&secret));
    let jailed = run_with_opts(&scope, &r, &r, false, opts(), &ops)
        .await
        .unwrap();
    assert!(
        jailed.get("read_through_state").starts_with("ERR"),
        "{:?}",
        jailed.results
    );
    assert!(
        jailed
            .notes
            .iter()
            .any(|n| n.contains("no private state directory") && n.contains("symlink")),
        "{:?}",
        jailed.notes
    );
}

/// `mcpjail` with an isolated HOME and XDG config under `r`.
fn mcpjail_cli(r: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_mcpjail"));
    c.current_dir(r)
        .env("HOME", r.join("home"))
        .env("XDG_CONFIG_HOME", r.join("config"))
        .env("XDG_STATE_HOME", r.join("state"))
        .env("NO_COLOR", "1")
        .env_remove("MCPJAIL_LOG")
        .env_remove("RUST_LOG");
    c
}

/// Start the proxy on `serve_tools.py FILE` (its policy found by name), send `initialize`,
/// close stdin: (exit success, stdout, stderr).
fn proxy_initialize(r: &Path, serve: &Path, file: &Path) -> (bool, String, String) {
    use std::io::Write as _;
    let mut child = mcpjail_cli(r)
        .args(["proxy", "--name", "kinds", "--pin", "off", "--", "python3"])
        .arg(serve)
        .arg(file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the proxy");
    if let Some(mut stdin) = child.stdin.take() {
        // A proxy that refused to start may already be gone: a failed write is part of that.
        let _ = stdin.write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":\
              {\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\
              \"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}\n",
        );
    }
    let out = child.wait_with_output().expect("wait for the proxy");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[derive(Clone, Copy, Debug)]
enum KindSwap {
    Unchanged,
    Directory,
    SymlinkOutside,
}

/// Issue 9 class 3, kinds persisted with the policy: `policy derive --write` records that the
/// server's file scope is a file; if it is then replaced, the proxy refuses to start.
fn policy_kinds_case(
    swap: KindSwap,
) -> (tempfile::TempDir, PathBuf, PathBuf, (bool, String, String)) {
    let (t, r) = root();
    std::fs::create_dir_all(r.join("home")).unwrap();
    let serve = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/schemas/serve_tools.py");
    let file = r.join("proj/tools.json");
    write(
        &file,
        r#"[{"name": "echo", "inputSchema": {"type": "object"}}]"#,
    );
    write(&r.join("outside/secret.txt"), &token());
    let out = mcpjail_cli(&r)
        .args([
            "policy", "derive", "--write", "--name", "kinds", "--", "python3",
        ])
        .arg(&serve)
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "derive: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = r.join("config/mcpjail/servers/kinds.toml");
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(
        text.contains(&format!("[kinds]\n\"{}\" = \"file\"", file.display())),
        "{text}"
    );
    match swap {
        KindSwap::Unchanged => {}
        KindSwap::Directory => {
            std::fs::remove_file(&file).unwrap();
            std::fs::create_dir(&file).unwrap();
        }
        KindSwap::SymlinkOutside => {
            std::fs::remove_file(&file).unwrap();
            std::os::unix::fs::symlink(r.join("outside"), &file).unwrap();
        }
    }
    let run = proxy_initialize(&r, &serve, &file);
    (t, r, saved, run)
}

#[test]
fn a_policy_file_records_scope_kinds_and_an_unchanged_scope_starts() {
    let (_t, _r, _saved, (ok, stdout, stderr)) = policy_kinds_case(KindSwap::Unchanged);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("serve-tools"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("refusing to start"), "{stderr}");
}

#[test]
fn a_policy_file_scope_replaced_by_a_directory_is_refused() {
    let (_t, r, saved, (ok, stdout, stderr)) = policy_kinds_case(KindSwap::Directory);
    let file = r.join("proj/tools.json");
    assert!(!ok, "the proxy started: {stdout}");
    assert!(!stdout.contains("serve-tools"), "{stdout}");
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(
        stderr.contains("was a file") && stderr.contains("is a directory now"),
        "{stderr}"
    );
    assert!(
        stderr.contains("mcpjail policy derive --write")
            && stderr.contains(&saved.display().to_string()),
        "{stderr}"
    );
}

#[test]
fn a_policy_file_scope_replaced_by_a_symlink_outside_is_refused() {
    let (_t, r, saved, (ok, stdout, stderr)) = policy_kinds_case(KindSwap::SymlinkOutside);
    let file = r.join("proj/tools.json");
    assert!(!ok, "the proxy started: {stdout}");
    assert!(
        stderr.contains(&file.display().to_string())
            && stderr.contains("was a file")
            && stderr.contains("is a symlink now")
            && stderr.contains("mcpjail policy derive --write"),
        "{stderr}"
    );
    // Control: the same policy without its `[kinds]` table (a file written before kinds were
    // recorded) still loads, and derives the planted link as the outside directory, writable.
    let text = std::fs::read_to_string(&saved).unwrap();
    let start = text.find("\n# What each scope path is now").unwrap();
    let end = text[start..].find("\n# Tools").map(|i| start + i).unwrap();
    let old = format!("{}{}", &text[..start], &text[end..]);
    assert!(!old.contains("[kinds]"));
    let old_file = r.join("old.toml");
    std::fs::write(&old_file, old).unwrap();
    let out = mcpjail_cli(&r)
        .args(["policy", "export", "--format", "srt", "--policy"])
        .arg(&old_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let srt: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        srt["filesystem"]["allowWrite"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!(r.join("outside").to_string_lossy())),
        "{srt}"
    );
}

// ---------------------------------------------------------------------------------------------
// Mounts made on descriptors: a link planted between `prepare` and the child's start.

/// argv[1]: JSON list of `[name, op, path]`, op `chmod` (to 04777) or `write` (create/append).
const SWAP_PROBE: &str = r##"
import errno, json, os, sys
out = {}
for name, op, p in json.loads(sys.argv[1]):
    try:
        if op == "chmod":
            os.chmod(p, 0o4777)
        elif op == "write":
            with open(p, "a") as f:
                f.write("planted\n")
        out[name] = "OK"
    except OSError as e:
        out[name] = "ERR:" + errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"##;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SwapCase {
    /// A write grant (`proj/data`) replaced by a symlink to `outside`.
    WriteGrant,
    /// A protected name bound read-only over itself (`repo/.git/hooks`) replaced by a symlink
    /// to `outside` (the real hooks directory moved to `repo/.git/h`).
    CarveTarget,
}

/// A fresh tree for `case` under `r`, owned by `owner` (None: the caller).
fn swap_tree(r: &Path, case: SwapCase, owner: Option<u32>) {
    write(&r.join("outside/secret.txt"), "secret");
    std::fs::set_permissions(
        r.join("outside/secret.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    match case {
        SwapCase::WriteGrant => write(&r.join("proj/data/mine.txt"), "mine"),
        SwapCase::CarveTarget => {
            write(&r.join("repo/.git/hooks/pre-commit.sample"), "#!/bin/sh\n");
            write(&r.join("repo/README"), "readme");
        }
    }
    if let Some(uid) = owner {
        let st = std::process::Command::new("chown")
            .args(["-R", &format!("{uid}:{uid}")])
            .arg(r)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

fn swap_scope(r: &Path, case: SwapCase) -> Scope {
    Scope {
        write: vec![entry(&match case {
            SwapCase::WriteGrant => r.join("proj/data"),
            SwapCase::CarveTarget => r.join("repo"),
        })],
        ..Scope::default()
    }
}

fn swap_ops(r: &Path, case: SwapCase) -> serde_json::Value {
    let s = |p: PathBuf| p.to_string_lossy().into_owned();
    match case {
        SwapCase::WriteGrant => serde_json::json!([
            [
                "chmod_via_grant",
                "chmod",
                s(r.join("proj/data/secret.txt"))
            ],
            ["chmod_outside", "chmod", s(r.join("outside/secret.txt"))],
            ["write_via_grant", "write", s(r.join("proj/data/new.txt"))],
        ]),
        SwapCase::CarveTarget => serde_json::json!([
            [
                "plant_in_moved_hooks",
                "write",
                s(r.join("repo/.git/h/post-commit"))
            ],
            ["write_via_hooks", "write", s(r.join("repo/.git/hooks/x"))],
        ]),
    }
}

/// Prepare the jail for `case`, then swap its target for a symlink to `outside`, then spawn.
/// `Err`: the spawn was refused (the message).
async fn prepare_swap_spawn(
    r: &Path,
    case: SwapCase,
    control: bool,
) -> Result<BTreeMap<String, String>, String> {
    let opts = JailOptions {
        disabled: control,
        ..JailOptions::default()
    };
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), "/usr/bin:/bin".into()),
        ("HOME".into(), r.as_os_str().to_owned()),
    ];
    let command: Vec<String> = vec![
        "/usr/bin/python3".into(),
        "-c".into(),
        SWAP_PROBE.into(),
        swap_ops(r, case).to_string(),
    ];
    let scope = swap_scope(r, case);
    let jail = sandbox::prepare_with_env(&scope, &command, r, &opts, &env)
        .map_err(|e| format!("prepare: {e}"))?;
    if !control {
        assert!(
            jail.report()
                .layers
                .iter()
                .any(|l| l.layer == "metadata" && l.enforcement == sandbox::Enforcement::Fully),
            "the mount namespace is not used here: {:?}",
            jail.report()
        );
    }
    // The swap, after `prepare` and before the child starts.
    let (target, moved) = match case {
        SwapCase::WriteGrant => (r.join("proj/data"), r.join("proj/data.orig")),
        SwapCase::CarveTarget => (r.join("repo/.git/hooks"), r.join("repo/.git/h")),
    };
    std::fs::rename(&target, &moved).unwrap();
    std::os::unix::fs::symlink(r.join("outside"), &target).unwrap();
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = cmd.output().await.map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "probe failed: {}", out.status);
    Ok(serde_json::from_str(stdout.trim()).unwrap())
}

const SWAP_DIR: &str = "MCPJAIL_SWAP_HELPER_DIR";
const SWAP_CASE: &str = "MCPJAIL_SWAP_HELPER_CASE";
const SWAP_CONTROL: &str = "MCPJAIL_SWAP_HELPER_CONTROL";

/// Not a test on its own: [`prepare_swap_spawn`] as another uid (started through `setpriv`).
#[tokio::test]
async fn helper_swap_as_another_uid() {
    let Some(dir) = std::env::var_os(SWAP_DIR) else {
        return;
    };
    let case = match std::env::var(SWAP_CASE).as_deref() {
        Ok("carve") => SwapCase::CarveTarget,
        _ => SwapCase::WriteGrant,
    };
    let control = std::env::var_os(SWAP_CONTROL).is_some();
    let out = match prepare_swap_spawn(Path::new(&dir), case, control).await {
        Ok(results) => serde_json::json!({"results": results}),
        Err(e) => serde_json::json!({"refused": e}),
    };
    println!("SWAP-RESULT {out}");
}

/// One run of `case`, in a fresh tree, as the caller (`None`) or as `nobody`.
async fn swap_run(
    case: SwapCase,
    nobody: bool,
    control: bool,
) -> (
    tempfile::TempDir,
    PathBuf,
    Result<BTreeMap<String, String>, String>,
) {
    let (t, r) = root();
    swap_tree(&r, case, nobody.then_some(NOBODY));
    if !nobody {
        let res = prepare_swap_spawn(&r, case, control).await;
        return (t, r, res);
    }
    let case_name = if case == SwapCase::CarveTarget {
        "carve"
    } else {
        "grant"
    };
    let mut env = vec![
        (SWAP_DIR, r.as_os_str()),
        (SWAP_CASE, case_name.as_ref()),
        ("TMPDIR", "/tmp".as_ref()),
    ];
    if control {
        env.push((SWAP_CONTROL, "1".as_ref()));
    }
    let v = rerun::rerun(
        rerun::AS_NOBODY,
        "helper_swap_as_another_uid",
        &env,
        "SWAP-RESULT ",
    );
    let res = match v.get("refused").and_then(|e| e.as_str()) {
        Some(e) => Err(e.to_string()),
        None => Ok(serde_json::from_value(v["results"].clone()).unwrap()),
    };
    (t, r, res)
}

fn mode_of(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

async fn write_grant_swap(nobody: bool) {
    // Control: unjailed, the swapped grant path leads outside — a bind made by path would be
    // made there (and that mount made writable: chmod outside would then work).
    let (_t, r, control) = swap_run(SwapCase::WriteGrant, nobody, true).await;
    let control = control.expect("the unjailed run starts");
    println!("control: {control:?}");
    assert_eq!(
        control.get("chmod_via_grant").map(String::as_str),
        Some("OK")
    );
    assert_eq!(mode_of(&r.join("outside/secret.txt")), 0o4777);
    assert!(r.join("outside/new.txt").exists());
    // Jailed: the grant is opened without following links in the child: the start is refused,
    // and nothing outside changed.
    let (_t, r, jailed) = swap_run(SwapCase::WriteGrant, nobody, false).await;
    match &jailed {
        Err(e) => assert!(e.contains("symbolic links"), "{e}"),
        Ok(res) => {
            assert!(
                res.values().all(|v| v.starts_with("ERR")),
                "jailed: {res:?}"
            );
        }
    }
    println!("jailed: {jailed:?}");
    assert_eq!(mode_of(&r.join("outside/secret.txt")), 0o644);
    assert!(!r.join("outside/new.txt").exists());
}

async fn carve_target_swap(nobody: bool) {
    // Control: unjailed, the swapped `.git/hooks` leads outside (a read-only bind made by path
    // would land there, leaving the moved real hooks directory writable).
    let (_t, r, control) = swap_run(SwapCase::CarveTarget, nobody, true).await;
    let control = control.expect("the unjailed run starts");
    println!("control: {control:?}");
    assert_eq!(
        control.get("write_via_hooks").map(String::as_str),
        Some("OK")
    );
    assert!(r.join("outside/x").exists());
    assert_eq!(
        control.get("plant_in_moved_hooks").map(String::as_str),
        Some("OK")
    );
    // Jailed: refused at the start; no hook planted in the moved directory.
    let (_t, r, jailed) = swap_run(SwapCase::CarveTarget, nobody, false).await;
    println!("jailed: {jailed:?}");
    match &jailed {
        Err(e) => assert!(e.contains("symbolic links"), "{e}"),
        Ok(res) => assert!(
            res.values().all(|v| v.starts_with("ERR")),
            "jailed: {res:?}"
        ),
    }
    assert!(!r.join("repo/.git/h/post-commit").exists());
    assert!(!r.join("outside/x").exists());
}

#[tokio::test]
async fn a_write_grant_swapped_for_a_symlink_after_prepare_is_not_followed() {
    write_grant_swap(false).await;
}

#[tokio::test]
async fn a_write_grant_swapped_for_a_symlink_after_prepare_is_not_followed_as_nobody() {
    write_grant_swap(true).await;
}

#[tokio::test]
async fn a_carve_target_swapped_for_a_symlink_after_prepare_is_not_followed() {
    carve_target_swap(false).await;
}

#[tokio::test]
async fn a_carve_target_swapped_for_a_symlink_after_prepare_is_not_followed_as_nobody() {
    carve_target_swap(true).await;
}

// ---------------------------------------------------------------------------------------------
// Class 3: `node --env-file .env` — the env file is read outside the jail, by the launcher.

/// The directory of the `node` on this machine's PATH (the tests resolve `node` by name, as a
/// client's config does, so a PATH the env file sets would be the one that picks it).
fn node_dir() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p).find(|d| {
                std::fs::metadata(d.join("node")).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
            })
        })
        .expect("node on PATH (the env-file tests start `node --env-file …`)")
}

/// Prepare (not start) `node --env-file-if-exists=ENV server.js PROJ` in `proj`, which is the
/// write scope, with `path` as the user's PATH.
fn prepare_env_file(
    r: &Path,
    proj: &Path,
    env_arg: &str,
    path: &str,
) -> Result<sandbox::PreparedJail, String> {
    let scope = Scope {
        write: vec![entry(proj)],
        deny: policy::always_denied(Some(&r.join("home"))),
        ..Scope::default()
    };
    let env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), path.into()),
        ("HOME".into(), r.join("home").into_os_string()),
    ];
    let command: Vec<String> = vec![
        "node".into(),
        format!("--env-file-if-exists={env_arg}"),
        proj.join("server.js").to_string_lossy().into_owned(),
        proj.to_string_lossy().into_owned(),
    ];
    sandbox::prepare_with_env(&scope, &command, proj, &JailOptions::default(), &env)
        .map_err(|e| e.to_string())
}

fn jail_env(jail: &sandbox::PreparedJail, key: &str) -> Option<String> {
    jail.env()
        .unwrap_or_default()
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.to_string_lossy().into_owned())
}

#[test]
fn an_env_file_link_the_server_planted_is_not_read_outside_the_jail() {
    let (_t, r) = root();
    let proj = r.join("proj");
    let secret = token();
    write(&proj.join("server.js"), "");
    write(
        &r.join("outside/credentials"),
        &format!("aws_secret = {secret}\n"),
    );
    let path = node_dir().to_string_lossy().into_owned() + ":/usr/bin:/bin";

    // What a server of an earlier session leaves in its write scope: `.env` -> a file outside.
    std::os::unix::fs::symlink(r.join("outside/credentials"), proj.join(".env")).unwrap();
    let Err(err) = prepare_env_file(&r, &proj, ".env", &path) else {
        panic!("refused");
    };
    assert!(
        err.contains("symbolic link") && err.contains("hint:"),
        "{err}"
    );
    assert!(!err.contains(&secret), "{err}");
    // A directory link on the way counts the same (`sub` -> outside, `--env-file sub/credentials`).
    std::os::unix::fs::symlink(r.join("outside"), proj.join("sub")).unwrap();
    let Err(err) = prepare_env_file(&r, &proj, "sub/credentials", &path) else {
        panic!("refused");
    };
    assert!(err.contains("symbolic link"), "{err}");
    // Nor is anything but a regular file read (a FIFO would block the start).
    std::fs::remove_file(proj.join(".env")).unwrap();
    nix::unistd::mkfifo(&proj.join(".env"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let Err(err) = prepare_env_file(&r, &proj, ".env", &path) else {
        panic!("refused");
    };
    assert!(err.contains("not a regular file"), "{err}");

    // Controls: the user's own link, outside what the server may write, is followed; a regular
    // .env in the project is read; both hand their variables to the server.
    std::os::unix::fs::symlink(r.join("outside/credentials"), r.join("user.env")).unwrap();
    let jail = prepare_env_file(&r, &proj, "../user.env", &path).unwrap();
    assert_eq!(
        jail_env(&jail, "aws_secret").as_deref(),
        Some(secret.as_str())
    );
    std::fs::remove_file(proj.join(".env")).unwrap();
    std::fs::copy(r.join("outside/credentials"), proj.join(".env")).unwrap();
    let jail = prepare_env_file(&r, &proj, ".env", &path).unwrap();
    assert_eq!(
        jail_env(&jail, "aws_secret").as_deref(),
        Some(secret.as_str())
    );
}

#[test]
fn env_file_variables_steer_neither_the_program_nor_the_loader() {
    let (_t, r) = root();
    let proj = r.join("proj");
    write(&proj.join("server.js"), "");
    // An executable outside the scope, and a `node` in the scope that points at it.
    let tree = r.join("outside/tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::copy("/bin/true", tree.join("tool")).unwrap();
    write(&tree.join("secret2.txt"), "TREE-SECRET");
    let bin = proj.join(".cache-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(tree.join("tool"), bin.join("node")).unwrap();
    let planted_path = format!("{}:/usr/bin:/bin", bin.display());
    write(
        &proj.join(".env"),
        &format!(
            "PATH={planted_path}\nLD_PRELOAD={}\nHOME={}\nAPP_MODE=ok\n",
            bin.join("libpre.so").display(),
            tree.display()
        ),
    );
    let user_path = node_dir().to_string_lossy().into_owned() + ":/usr/bin:/bin";
    let granted_outside =
        |jail: &sandbox::PreparedJail| jail.grants().iter().any(|g| g.path.starts_with(&tree));

    let jail = prepare_env_file(&r, &proj, ".env", &user_path).unwrap();
    assert!(
        !granted_outside(&jail),
        "the env file's PATH picked the program: {:?}",
        jail.grants()
    );
    assert_ne!(jail.program(), bin.join("node").as_path());
    assert_eq!(jail_env(&jail, "LD_PRELOAD"), None, "a loader variable");
    assert_ne!(
        jail_env(&jail, "PATH").as_deref(),
        Some(planted_path.as_str())
    );
    assert_eq!(
        jail_env(&jail, "HOME"),
        Some(r.join("home").display().to_string())
    );
    // The file's ordinary variables still reach the server.
    assert_eq!(jail_env(&jail, "APP_MODE").as_deref(), Some("ok"));

    // Control: the same PATH as the user's real environment does pick the planted `node` (and
    // grants its directory), so the case above is the env file being kept out of it.
    let jail = prepare_env_file(&r, &proj, ".env", &planted_path).unwrap();
    assert!(granted_outside(&jail), "{:?}", jail.grants());
}

// ---------------------------------------------------------------------------------------------
// Class 3: a `node_modules` the server made in its own write scope is not made executable.

const NM_DIR: &str = "MCPJAIL_TEST_NM_DIR";
const NM_CONTROL: &str = "MCPJAIL_TEST_NM_CONTROL";

/// The server: require a package from its `node_modules` (reading is all that needs), then
/// run a program it planted there. Prints `{"require": …, "exec": …}`.
const NM_SERVER: &str = r#"
const cp = require("child_process");
const out = {};
try { out.require = require("pkg").word; } catch (e) { out.require = "ERR:" + e.code; }
const r = cp.spawnSync(__dirname + "/node_modules/.bin/planted", []);
out.exec = r.error ? "ERR:" + r.error.code : "OK:" + String(r.stdout).trim();
console.log(JSON.stringify(out));
"#;

/// A project (the write scope) holding what a server of an earlier session wrote into it: a
/// `node_modules` with a package and a program.
fn nm_project(r: &Path, owner: Option<u32>) -> PathBuf {
    let proj = r.join("proj");
    write(&proj.join("server.js"), NM_SERVER);
    write(
        &proj.join("node_modules/pkg/index.js"),
        "exports.word = 'from-pkg';\n",
    );
    let planted = proj.join("node_modules/.bin/planted");
    write(&planted, "");
    std::fs::copy("/bin/echo", &planted).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(uid) = owner {
        chown_tree(&proj, uid);
    }
    proj
}

/// Prepare and run the server in `proj` (jailed unless `control`): its printed results.
async fn nm_run(proj: &Path, control: bool) -> BTreeMap<String, String> {
    let scope = Scope {
        write: vec![entry(proj)],
        ..Scope::default()
    };
    let opts = JailOptions {
        disabled: control,
        ..JailOptions::default()
    };
    let path = node_dir().to_string_lossy().into_owned() + ":/usr/bin:/bin";
    let env: Vec<(OsString, OsString)> = vec![("PATH".into(), path.into())];
    let command: Vec<String> = vec![
        "node".into(),
        proj.join("server.js").to_string_lossy().into_owned(),
        proj.to_string_lossy().into_owned(),
    ];
    let jail = sandbox::prepare_with_env(&scope, &command, proj, &opts, &env).unwrap();
    for n in jail.notes() {
        println!("  note: {n}");
    }
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
    let out = cmd.output().await.expect("spawn node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

/// Not a test on its own: [`nm_run`] as another uid (started through `setpriv`).
#[tokio::test]
async fn helper_nm_as_another_uid() {
    let Some(dir) = std::env::var_os(NM_DIR) else {
        return;
    };
    let control = std::env::var_os(NM_CONTROL).is_some();
    let res = nm_run(Path::new(&dir), control).await;
    println!("NM-RESULT {}", serde_json::json!(res));
}

async fn nm_case(nobody: bool, control: bool) -> BTreeMap<String, String> {
    let (_t, r) = root();
    let proj = nm_project(&r, nobody.then_some(NOBODY));
    if !nobody {
        return nm_run(&proj, control).await;
    }
    let mut env = vec![(NM_DIR, proj.as_os_str()), ("TMPDIR", "/tmp".as_ref())];
    if control {
        env.push((NM_CONTROL, "1".as_ref()));
    }
    let v = rerun::rerun(
        rerun::AS_NOBODY,
        "helper_nm_as_another_uid",
        &env,
        "NM-RESULT ",
    );
    serde_json::from_value(v).unwrap()
}

async fn node_modules_in_scope(nobody: bool) {
    // Control: unjailed, the planted program runs.
    let control = nm_case(nobody, true).await;
    assert_eq!(control["exec"], "OK:", "{control:?}");
    assert_eq!(control["require"], "from-pkg");
    // Jailed: the package still loads (read), the planted program does not run.
    let jailed = nm_case(nobody, false).await;
    assert_eq!(jailed["require"], "from-pkg", "{jailed:?}");
    assert_eq!(jailed["exec"], "ERR:EACCES", "{jailed:?}");
}

#[tokio::test]
async fn a_node_modules_in_the_write_scope_is_read_but_not_executable() {
    node_modules_in_scope(false).await;
}

#[tokio::test]
async fn a_node_modules_in_the_write_scope_is_read_but_not_executable_as_nobody() {
    node_modules_in_scope(true).await;
}
