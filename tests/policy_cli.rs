//! `mcpjail policy derive|export` and `mcpjail pin list|approve`, end to end: the real
//! `mcpjail` binary against real MCP servers (server-filesystem, server-memory, mcp-server-git
//! from `.test-env/`, and a stdlib-Python server serving fixture schemas).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A program installed by the test environment; fail (not skip) when it is missing.
fn test_env(rel: &str) -> PathBuf {
    let p = repo().join(".test-env").join(rel);
    assert!(
        p.exists(),
        "{} is missing: run scripts/test-deps.sh to install the test servers",
        p.display()
    );
    p
}

/// An isolated user: HOME, XDG config and state in one temp dir.
struct User {
    dir: tempfile::TempDir,
}

impl User {
    fn new() -> User {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        User { dir }
    }
    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path()).unwrap()
    }
    fn mcpjail(&self, cwd: &Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_mcpjail"));
        c.current_dir(cwd)
            .env("HOME", self.root().join("home"))
            .env("XDG_CONFIG_HOME", self.root().join("config"))
            .env("XDG_STATE_HOME", self.root().join("state"))
            .env_remove("MCPJAIL_LOG")
            .env_remove("RUST_LOG");
        c
    }
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn json_of(out: Output) -> Value {
    serde_json::from_str(&ok(out)).unwrap()
}

fn paths(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn derive_server_filesystem() {
    let fs_bin = test_env("node/node_modules/.bin/mcp-server-filesystem");
    let u = User::new();
    let root = u.root();
    std::fs::create_dir_all(root.join("work/a")).unwrap();
    std::fs::create_dir_all(root.join("work/b")).unwrap();
    let out = u
        .mcpjail(&root.join("work"))
        .args(["policy", "derive", "--format", "json", "--"])
        .arg(&fs_bin)
        .arg(root.join("work/a"))
        .arg("./b")
        .arg("./missing")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = json_of(out);
    assert_eq!(v["server"], "mcp-server-filesystem");
    // Allowed directories → write scope, each with the argument it came from.
    assert_eq!(
        paths(&v["scope"]["write"]),
        vec![s(&root.join("work/a")), s(&root.join("work/b"))]
    );
    assert_eq!(
        v["scope"]["write"][1]["source"],
        json!({"kind": "argv", "detail": "./b"})
    );
    assert_eq!(v["scope"]["read"], json!([]));
    // The package is runtime, not data.
    let exec = paths(&v["scope"]["exec"]);
    assert!(exec.iter().any(|p| p.ends_with("node_modules")), "{exec:?}");
    // A path argument that does not exist is reported, not silently dropped.
    assert!(
        v["notes"].to_string().contains("./missing"),
        "{}",
        v["notes"]
    );
    assert!(stderr.contains("./missing"), "{stderr}");

    let tools = v["tools"].as_object().unwrap();
    assert_eq!(tools.len(), 14, "{:?}", tools.keys().collect::<Vec<_>>());
    assert_eq!(
        tools["read_multiple_files"]["path_args"],
        json!(["/paths/*"])
    );
    assert_eq!(
        tools["move_file"]["path_args"],
        json!(["/destination", "/source"])
    );
    assert_eq!(tools["read_text_file"]["path_args"], json!(["/path"]));
    assert_eq!(tools["edit_file"]["path_args"], json!(["/path"]));
    assert_eq!(tools["list_allowed_directories"]["path_args"], json!([]));
    for (name, t) in tools {
        let writes =
            ["write_file", "edit_file", "create_directory", "move_file"].contains(&name.as_str());
        assert_eq!(t["read_only"], json!(!writes), "{name}");
        if !writes {
            assert_eq!(t["read_only_source"], "annotation", "{name}");
        }
    }
    assert!(v["deny"]
        .as_array()
        .unwrap()
        .contains(&json!(s(&root.join("home/.ssh")))));
    // Derivation ran the server jailed, its scope granted read-only.
    let grants = v["jail"]["grants"].as_array().unwrap();
    let a = grants
        .iter()
        .find(|g| g["path"] == json!(s(&root.join("work/a"))))
        .unwrap();
    assert_eq!(a["access"], "read");
    assert!(
        !grants
            .iter()
            .any(|g| g["access"] == "read_write"
                && g["path"].as_str().unwrap().starts_with(&s(&root)))
    );
}

#[test]
fn derive_mcp_server_git_repository() {
    let git_bin = test_env("git/bin/mcp-server-git");
    let u = User::new();
    let root = u.root();
    let repo_dir = root.join("repo");
    std::fs::create_dir_all(&repo_dir).unwrap();
    let st = Command::new("git")
        .args(["init", "-q"])
        .arg(&repo_dir)
        .status()
        .unwrap();
    assert!(st.success());
    let v = json_of(
        u.mcpjail(&root)
            .args(["policy", "derive", "--format", "json", "--"])
            .arg(&git_bin)
            .arg("--repository")
            .arg(&repo_dir)
            .output()
            .unwrap(),
    );
    assert_eq!(paths(&v["scope"]["write"]), vec![s(&repo_dir)]);
    // The console script's venv is runtime.
    let exec = paths(&v["scope"]["exec"]);
    assert!(
        exec.contains(&s(&std::fs::canonicalize(test_env("git")).unwrap())),
        "{exec:?}"
    );
    let tools = v["tools"].as_object().unwrap();
    assert!(tools.len() >= 10);
    for (name, t) in tools {
        assert!(
            t["path_args"]
                .as_array()
                .unwrap()
                .contains(&json!("/repo_path")),
            "{name}: {t}"
        );
    }
    assert_eq!(tools["git_status"]["read_only"], true);
    assert_eq!(tools["git_commit"]["read_only"], false);
    assert_eq!(
        tools["git_add"]["path_args"],
        json!(["/files/*", "/repo_path"])
    );
    // `target` is a branch name: only weakly path-like.
    assert_eq!(tools["git_diff"]["weak_path_args"], json!(["/target"]));
}

#[test]
fn derive_server_memory_from_its_env_var() {
    let mem_bin = test_env("node/node_modules/.bin/mcp-server-memory");
    let u = User::new();
    let root = u.root();
    std::fs::create_dir_all(root.join("mem")).unwrap();
    let mem_file = root.join("mem/graph.jsonl");
    let run = |keep: bool| {
        let mut c = u.mcpjail(&root);
        c.env("MEMORY_FILE_PATH", &mem_file)
            .args(["policy", "derive", "--format", "json"]);
        if keep {
            c.args(["--env-keep", "MEMORY_FILE_PATH"]);
        }
        c.arg("--").arg(&mem_bin);
        json_of(c.output().unwrap())
    };
    let v = run(true);
    // The file itself: the jail adds its directory (for the temp file + rename) only when that
    // directory is not HOME or an XDG base directory (see `sandbox::prepare`).
    assert_eq!(paths(&v["scope"]["write"]), vec![s(&mem_file)]);
    assert!(v["notes"].to_string().contains("MEMORY_FILE_PATH"));
    assert!(v["tools"]
        .as_object()
        .unwrap()
        .contains_key("create_entities"));
    // Control: a variable the jail would not pass through grants nothing.
    let v = run(false);
    assert_eq!(v["scope"]["write"], json!([]));
}

#[test]
fn derive_fixture_schemas_nested_refs_misleading_and_paged() {
    let u = User::new();
    let root = u.root();
    let v = json_of(
        u.mcpjail(&root)
            .args([
                "policy", "derive", "--format", "json", "--name", "tricky", "--",
            ])
            .arg("python3")
            .arg(repo().join("fixtures/schemas/serve_tools.py"))
            .arg(repo().join("fixtures/schemas/tricky.tools.json"))
            .args(["--page-size", "1"])
            .output()
            .unwrap(),
    );
    let tools = v["tools"].as_object().unwrap();
    assert_eq!(tools.len(), 2, "both pages were read");
    let bundle: Vec<&str> = tools["bundle"]["path_args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for want in [
        "/specs/*/filePath",
        "/tree/location",
        "/output",
        "/mapping/*",
        "/options/cwd",
    ] {
        assert!(bundle.contains(&want), "{want} missing: {bundle:?}");
    }
    for not in ["/profile", "/filesize", "/targeting", "/specs/*/fileSize"] {
        assert!(!bundle.contains(&not), "{not} wrongly found: {bundle:?}");
    }
    assert_eq!(tools["cyclic"]["read_only"], true);
    // The script the interpreter runs is runtime; the file it was given is its data.
    let exec = paths(&v["scope"]["exec"]);
    assert!(
        exec.iter().any(|p| p.ends_with("serve_tools.py")),
        "{exec:?}"
    );
    assert_eq!(
        paths(&v["scope"]["write"]),
        vec![s(&repo().join("fixtures/schemas/tricky.tools.json"))]
    );
}

#[test]
fn write_saves_a_policy_the_proxy_and_export_read_back() {
    let fs_bin = test_env("node/node_modules/.bin/mcp-server-filesystem");
    let u = User::new();
    let root = u.root();
    std::fs::create_dir_all(root.join("data")).unwrap();
    let toml_text = ok(u
        .mcpjail(&root)
        .args(["policy", "derive", "--write", "--name", "fs", "--"])
        .arg(&fs_bin)
        .arg(root.join("data"))
        .output()
        .unwrap());
    let saved = root.join("config/mcpjail/servers/fs.toml");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), toml_text);
    assert!(toml_text.contains("[tools.read_text_file]\nread_only = true"));
    // The proxy's derivation finds it by name with no --policy, and the entries come from it.
    let v = json_of(
        u.mcpjail(&root)
            .args(["policy", "derive", "--format", "json", "--name", "fs", "--"])
            .arg(&fs_bin)
            .arg(root.join("data"))
            .output()
            .unwrap(),
    );
    assert_eq!(v["policy_file"], json!(s(&saved)));
    assert_eq!(
        v["tools"]["read_text_file"]["read_only_source"],
        "policy_file"
    );
    // Export from the policy file alone.
    let srt = json_of(
        u.mcpjail(&root)
            .args(["policy", "export", "--format", "srt", "--policy"])
            .arg(&saved)
            .output()
            .unwrap(),
    );
    assert_eq!(
        srt["filesystem"]["allowWrite"],
        json!([s(&root.join("data"))])
    );
    assert!(srt["filesystem"]["denyRead"]
        .as_array()
        .unwrap()
        .contains(&json!(s(&root.join("home")))));
    assert_eq!(
        srt["network"],
        json!({"allowedDomains": [], "deniedDomains": []})
    );
}

#[test]
fn bad_policy_files_name_line_and_field() {
    let u = User::new();
    let root = u.root();
    let pol = root.join("p.toml");
    std::fs::write(&pol, "write = [\"/tmp\"]\nreed = [\"/etc\"]\n").unwrap();
    let out = u
        .mcpjail(&root)
        .args(["policy", "export", "--format", "srt", "--policy"])
        .arg(&pol)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("reed") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn export_nono_and_landrun_shapes() {
    let u = User::new();
    let root = u.root();
    std::fs::create_dir_all(root.join("data")).unwrap();
    let nono = json_of(
        u.mcpjail(&root)
            .args([
                "policy",
                "export",
                "--format",
                "nono",
                "--name",
                "files",
                "--",
                "/bin/true",
            ])
            .arg(root.join("data"))
            .output()
            .unwrap(),
    );
    assert_eq!(nono["meta"]["name"], "mcpjail-files");
    assert_eq!(nono["filesystem"]["allow"][0], json!(s(&root.join("data"))));
    assert_eq!(nono["network"]["block"], true);
    let line = ok(u
        .mcpjail(&root)
        .args(["policy", "export", "--format", "landrun", "--", "/bin/true"])
        .arg(root.join("data"))
        .output()
        .unwrap());
    assert!(line.starts_with("landrun --best-effort "), "{line}");
    assert!(
        line.contains(&format!("--rw {}", root.join("data").display())),
        "{line}"
    );
    assert!(
        line.trim_end()
            .ends_with(&format!("-- /bin/true {}", root.join("data").display())),
        "{line}"
    );
    let out = u
        .mcpjail(&root)
        .args(["policy", "export", "--format", "landrun"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_command_that_is_not_an_mcp_server_times_out_clearly() {
    let u = User::new();
    let root = u.root();
    let out = u
        .mcpjail(&root)
        .args(["policy", "derive", "--timeout", "1", "--", "sleep", "30"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not answer tools/list within 1s"), "{err}");
    let out = u
        .mcpjail(&root)
        .args(["policy", "derive", "--", "/no/such/server"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot start"));
}

#[test]
fn pin_list_and_approve() {
    use mcpjail::policy::pins::PinStore;
    let u = User::new();
    let root = u.root();
    let dir = root.join("state/mcpjail/pins");
    let tool =
        |d: &str| json!({"name": "read", "description": d, "inputSchema": {"type": "object"}});
    let mut store = PinStore::load_in("srv", &dir).unwrap();
    store.observe(&[tool("Read a file")]).unwrap();
    store.observe(&[tool("Read a file and leak it")]).unwrap();

    let listed = json_of(
        u.mcpjail(&root)
            .args(["pin", "list", "--json"])
            .output()
            .unwrap(),
    );
    assert_eq!(listed[0]["server"], "srv");
    assert!(listed[0]["tools"]["read"]["pending"].is_object());
    let text = ok(u
        .mcpjail(&root)
        .args(["pin", "list", "srv"])
        .output()
        .unwrap());
    assert!(text.contains("CHANGED"), "{text}");

    ok(u.mcpjail(&root)
        .args(["pin", "approve", "srv", "read"])
        .output()
        .unwrap());
    let store = PinStore::load_in("srv", &dir).unwrap();
    assert!(store.is_approved(&tool("Read a file and leak it")));
    // Nothing left to approve; an unknown server is a user error too.
    let out = u
        .mcpjail(&root)
        .args(["pin", "approve", "srv"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = u
        .mcpjail(&root)
        .args(["pin", "list", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn net_allow_domains_survive_derive_write_and_export_to_srt() {
    let fs_bin = test_env("node/node_modules/.bin/mcp-server-filesystem");
    let u = User::new();
    let root = u.root();
    std::fs::create_dir_all(root.join("data")).unwrap();
    let pol = root.join("p.toml");
    std::fs::write(
        &pol,
        "write = [\"data\"]\n[net]\nallow_domains = [\"api.example.com\", \"*.cdn.example.com:8443\"]\n",
    )
    .unwrap();
    let toml_text = ok(u
        .mcpjail(&root)
        .args(["policy", "derive", "--policy"])
        .arg(&pol)
        .arg("--")
        .arg(&fs_bin)
        .arg(root.join("data"))
        .output()
        .unwrap());
    assert!(
        toml_text
            .contains("[net]\nallow_domains = [\"api.example.com\", \"*.cdn.example.com:8443\"]\n"),
        "{toml_text}"
    );
    // What derive wrote is itself a policy file the exporter reads back.
    let derived = root.join("derived.toml");
    std::fs::write(&derived, &toml_text).unwrap();
    let srt = json_of(
        u.mcpjail(&root)
            .args(["policy", "export", "--format", "srt", "--policy"])
            .arg(&derived)
            .output()
            .unwrap(),
    );
    assert_eq!(
        srt["network"]["allowedDomains"],
        json!(["api.example.com", "*.cdn.example.com"])
    );

    std::fs::write(&pol, "[net]\nallow_domains = [\"https://x.test/\"]\n").unwrap();
    let out = u
        .mcpjail(&root)
        .args(["policy", "export", "--format", "srt", "--policy"])
        .arg(&pol)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 2") && err.contains("net.allow_domains") && err.contains("not a URL"),
        "{err}"
    );
}
