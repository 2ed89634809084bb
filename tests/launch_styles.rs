//! The launch styles real configs use, started jailed with no flags beyond what
//! `mcpjail install` writes (`--name`, `--env-keep` for the entry's `env`): `npx -y` for four
//! npm servers, `uvx` for two PyPI servers, `uv --directory D run server.py` for a FastMCP-style
//! project, a project's own Node server outside `node_modules`, and an nvm-style Node install.
//!
//! Every row runs twice with a real MCP client (the Python SDK): direct (the control, which
//! also proves the caches are warm) and through `mcpjail-proxy`. Each must answer `tools/list`
//! and do one real in-scope call whose effect is checked on disk — in a project with a `.env`
//! at its root (so a write next to it must work), which the direct run can read and the jailed
//! one cannot.
//!
//! The servers come from `.test-env/runners` (npm and uv caches filled by
//! `scripts/test-deps.sh` from `tests/launch/pins.env`); HOME is fresh for every row, and the
//! runners are told to stay offline, so a row that needed the network would fail, not stall.

mod support;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use support::{call, list_tools, repo_root, run_client, test_env, Client, Run, PROXY};

const ENV_SECRET: &str = "DOTENV-SECRET-at-the-project-root";

/// The pinned package specs of `tests/launch/pins.env`.
fn pins(key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join("tests/launch/pins.env")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} missing from tests/launch/pins.env"));
    line.split_once('=')
        .unwrap()
        .1
        .trim_matches('"')
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn pin(key: &str, name: &str) -> String {
    pins(key)
        .into_iter()
        .find(|p| p.contains(name))
        .unwrap_or_else(|| panic!("no pin for {name} in {key}"))
}

/// A fresh HOME, a project with `.env` at its root, and the runners' warm caches.
struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    env: Vec<(&'static str, String)>,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("project/src")).unwrap();
        std::fs::write(root.join("project/.env"), format!("TOKEN={ENV_SECRET}\n")).unwrap();
        std::fs::write(root.join("project/README.md"), "a project\n").unwrap();
        let runners = test_env("runners");
        let uv_bin = test_env("uv/bin");
        let path = format!(
            "{}:{}",
            uv_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let env = vec![
            ("HOME", root.join("home").display().to_string()),
            ("PATH", path),
            (
                "npm_config_cache",
                runners.join("npm-cache").display().to_string(),
            ),
            (
                "UV_CACHE_DIR",
                runners.join("uv-cache").display().to_string(),
            ),
            ("UV_EXCLUDE_NEWER", pins("RESOLVE_BEFORE").join("")),
            // Tests use no network: the direct runs (the controls) and mcpjail's resolve step
            // must both start from the warm caches.
            ("UV_OFFLINE", "1".into()),
            ("npm_config_offline", "true".into()),
            // pyenv shims find their root through HOME, which is fresh here.
            (
                "PYENV_ROOT",
                std::env::var("PYENV_ROOT")
                    .unwrap_or_else(|_| std::env::var("HOME").unwrap_or_default() + "/.pyenv"),
            ),
        ];
        World {
            _dir: dir,
            root,
            env,
        }
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn p(&self, rel: &str) -> String {
        self.project().join(rel).display().to_string()
    }

    fn with_env(&self, extra: &[(&'static str, String)]) -> Vec<(&'static str, String)> {
        let mut env = self.env.clone();
        env.extend(extra.iter().cloned());
        env
    }
}

/// One launch style: the server command, extra env (and `--env-keep` for it, as install
/// writes), and the steps after `tools/list`.
struct Row<'a> {
    name: &'a str,
    command: Vec<String>,
    env: Vec<(&'static str, String)>,
    steps: Vec<Value>,
    /// Where the client starts the server (default: the project; Claude Desktop uses `/`).
    cwd: Option<PathBuf>,
}

/// Runs `row` direct (the control) and then jailed. `effect` runs right after each run: it
/// checks the run's effect on disk and undoes it, so the jailed run is judged on its own.
fn run_row(w: &World, row: &Row<'_>, effect: impl Fn(&Run)) -> (Run, Run) {
    let mut steps = vec![list_tools()];
    steps.extend(row.steps.iter().cloned());
    let script = json!({"timeout": 120, "steps": steps});
    let env = w.with_env(&row.env);
    let cwd = row.cwd.clone().unwrap_or_else(|| w.project());
    let direct = run_client(
        Client::Py,
        &format!("{} direct", row.name),
        &row.command,
        &script,
        &env,
        &cwd,
    );
    effect(&direct);
    let mut proxied = vec![PROXY.to_string(), "--name".into(), row.name.into()];
    for (k, _) in &row.env {
        proxied.extend(["--env-keep".to_string(), k.to_string()]);
    }
    proxied.push("--".into());
    proxied.extend(row.command.iter().cloned());
    let jailed = run_client(
        Client::Py,
        &format!("{} jailed", row.name),
        &proxied,
        &script,
        &env,
        &cwd,
    );
    for run in [&direct, &jailed] {
        let tools = run.tools(0).as_array().map_or(0, Vec::len);
        assert!(tools > 0, "{}: tools/list is empty", run.label);
    }
    effect(&jailed);
    (direct, jailed)
}

/// The file's text, or a panic that shows what the server answered.
fn read_or(p: &Path, answer: &str) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("read {}: {e}; the server answered: {answer}", p.display()))
}

#[test]
fn npx_server_filesystem_writes_next_to_a_dotenv_it_cannot_read() {
    let w = World::new();
    let row = Row {
        cwd: None,
        name: "files",
        command: vec![
            "npx".into(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-filesystem"),
            w.project().display().to_string(),
        ],
        env: vec![],
        steps: vec![
            call(
                "write_file",
                json!({"path": w.p("created.txt"), "content": "CREATED"}),
            ),
            call("read_text_file", json!({"path": w.p(".env")})),
        ],
    };
    let created = w.project().join("created.txt");
    let (direct, jailed) = run_row(&w, &row, |run| {
        let text = run.ok_text(1);
        assert_eq!(read_or(&created, &text), "CREATED", "{}", run.label);
        std::fs::remove_file(&created).unwrap();
    });
    // The control reads the secret: the attempt is real.
    assert!(direct.ok_text(2).contains(ENV_SECRET), "{}", direct.text(2));
    assert!(
        !jailed.text(2).contains(ENV_SECRET),
        "the jailed server read .env: {}",
        jailed.text(2)
    );
}

#[test]
fn npx_server_memory_keeps_its_graph_at_the_project_root() {
    let w = World::new();
    let memory = w.project().join("memory.jsonl");
    let row = Row {
        cwd: None,
        name: "memory",
        command: vec![
            "npx".into(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-memory"),
        ],
        env: vec![("MEMORY_FILE_PATH", memory.display().to_string())],
        steps: vec![call(
            "create_entities",
            json!({"entities": [{"name": "jailed-entity", "entityType": "test", "observations": ["o"]}]}),
        )],
    };
    run_row(&w, &row, |run| {
        let text = run.ok_text(1);
        assert!(
            read_or(&memory, &text).contains("jailed-entity"),
            "{}",
            run.label
        );
        std::fs::remove_file(&memory).unwrap();
    });
}

#[test]
fn npx_server_sequential_thinking_and_server_everything_answer() {
    let w = World::new();
    // Neither server touches files: the in-scope "effect" is the answer itself.
    let thinking = Row {
        cwd: None,
        name: "thinking",
        command: vec![
            "npx".into(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-sequential-thinking"),
        ],
        env: vec![],
        steps: vec![call(
            "sequentialthinking",
            json!({"thought": "one step", "nextThoughtNeeded": false, "thoughtNumber": 1, "totalThoughts": 1}),
        )],
    };
    let (direct, jailed) = run_row(&w, &thinking, |_| {});
    assert_eq!(direct.ok_text(1), jailed.ok_text(1));
    let everything = Row {
        cwd: None,
        name: "everything",
        command: vec![
            "npx".into(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-everything"),
            "stdio".into(),
        ],
        env: vec![],
        steps: vec![call("echo", json!({"message": "through the jail"}))],
    };
    let (direct, jailed) = run_row(&w, &everything, |_| {});
    assert!(direct.ok_text(1).contains("through the jail"));
    assert!(jailed.ok_text(1).contains("through the jail"));
}

#[test]
fn uvx_mcp_server_time_answers() {
    let w = World::new();
    let row = Row {
        cwd: None,
        name: "time",
        command: vec!["uvx".into(), pin("UVX_PACKAGES", "mcp-server-time")],
        env: vec![],
        steps: vec![call(
            "get_current_time",
            json!({"timezone": "Europe/Paris"}),
        )],
    };
    let (direct, jailed) = run_row(&w, &row, |_| {});
    assert!(direct.ok_text(1).contains("Europe/Paris"));
    assert!(
        jailed.ok_text(1).contains("Europe/Paris"),
        "{}",
        jailed.stderr
    );
}

#[test]
fn uvx_mcp_server_git_stages_a_file() {
    let w = World::new();
    let project = w.project();
    support::git_init(&project, "initial");
    std::fs::write(project.join("new.txt"), "new\n").unwrap();
    let row = Row {
        cwd: Some(PathBuf::from("/")),
        name: "git",
        command: vec![
            "uvx".into(),
            pin("UVX_PACKAGES", "mcp-server-git"),
            "--repository".into(),
            project.display().to_string(),
        ],
        env: vec![],
        // A relative file next to `repo_path`, with the server started in `/` as Claude
        // Desktop does: the file is the repository's, not `/new.txt`.
        steps: vec![call(
            "git_add",
            json!({"repo_path": project.display().to_string(), "files": ["new.txt"]}),
        )],
    };
    let staged = || support::git(&project, &["diff", "--cached", "--name-only"]);
    run_row(&w, &row, |run| {
        let text = run.ok_text(1);
        assert!(
            staged().contains("new.txt"),
            "{}: git_add answered {text}",
            run.label
        );
        support::git(&project, &["reset", "-q", "new.txt"]);
        assert!(!staged().contains("new.txt"));
    });
}

/// Step `step` read the project's `.env`: the direct run (the control) got the secret, the
/// jailed one did not.
fn assert_env_read_only_by_the_control(direct: &Run, jailed: &Run, step: usize) {
    assert!(
        direct.text(step).contains(ENV_SECRET),
        "{}: the control did not read .env: {}",
        direct.label,
        direct.text(step)
    );
    assert!(
        !jailed.text(step).contains(ENV_SECRET),
        "{}: the jailed server read .env: {}",
        jailed.label,
        jailed.text(step)
    );
}

/// Copy a fixture project into the world (tests must not write into the checkout).
fn copy_project(w: &World, fixture: &str) -> PathBuf {
    let src = repo_root().join("fixtures").join(fixture);
    let dst = w.root.join(fixture);
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&dst)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(dst.join(".env"), format!("TOKEN={ENV_SECRET}\n")).unwrap();
    dst
}

#[test]
fn uv_directory_run_of_a_fastmcp_project() {
    let w = World::new();
    let project = copy_project(&w, "uv-project");
    let row = Row {
        cwd: None,
        name: "notes-uv",
        command: vec![
            "uv".into(),
            "--directory".into(),
            project.display().to_string(),
            "run".into(),
            "server.py".into(),
            w.project().display().to_string(),
        ],
        env: vec![],
        steps: vec![
            call("add_note", json!({"name": "n.txt", "text": "from uv"})),
            // `.env` at the notes directory's root: a plain name the proxy forwards, so only
            // the kernel (the mask) stands between the server and the secret.
            call("read_note", json!({"name": ".env"})),
        ],
    };
    let note = w.project().join("n.txt");
    let (direct, jailed) = run_row(&w, &row, |run| {
        let text = run.ok_text(1);
        assert_eq!(read_or(&note, &text), "from uv\n", "{}", run.label);
        std::fs::remove_file(&note).unwrap();
    });
    assert_env_read_only_by_the_control(&direct, &jailed, 2);
}

#[test]
fn node_project_server_outside_node_modules() {
    let w = World::new();
    let project = copy_project(&w, "node-project");
    // The project's own node_modules (a link to the pinned install, as pnpm lays them out).
    std::os::unix::fs::symlink(test_env("node/node_modules"), project.join("node_modules"))
        .unwrap();
    let row = Row {
        cwd: None,
        name: "notes-node",
        command: vec![
            "node".into(),
            project.join("server.mjs").display().to_string(),
            w.project().display().to_string(),
        ],
        env: vec![],
        steps: vec![
            call("add_note", json!({"name": "n.txt", "text": "from node"})),
            // `.env` at the notes directory's root: a plain name the proxy forwards, so only
            // the kernel (the mask) stands between the server and the secret.
            call("read_note", json!({"name": ".env"})),
        ],
    };
    let note = w.project().join("n.txt");
    let (direct, jailed) = run_row(&w, &row, |run| {
        let text = run.ok_text(1);
        assert_eq!(read_or(&note, &text), "from node\n", "{}", run.label);
        std::fs::remove_file(&note).unwrap();
    });
    assert_env_read_only_by_the_control(&direct, &jailed, 2);
}

#[test]
fn npx_from_an_nvm_style_node_install() {
    let mut w = World::new();
    // ~/.nvm/versions/node/vX/{bin/node, bin/npx -> ../lib/node_modules/npm/bin/npx-cli.js}
    let version = String::from_utf8(
        std::process::Command::new("node")
            .arg("--version")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let prefix = w.root.join("home/.nvm/versions/node").join(version.trim());
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::fs::create_dir_all(prefix.join("lib/node_modules")).unwrap();
    let which = |name: &str| -> PathBuf {
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .unwrap();
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
            .canonicalize()
            .unwrap()
    };
    let node = which("node");
    std::fs::copy(&node, prefix.join("bin/node")).unwrap();
    // npx-cli.js lives in <npm>/bin; npm is its grandparent.
    let npm_dir = which("npx")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(&npm_dir)
        .arg(prefix.join("lib/node_modules/npm"))
        .status()
        .unwrap();
    assert!(status.success());
    std::os::unix::fs::symlink(
        "../lib/node_modules/npm/bin/npx-cli.js",
        prefix.join("bin/npx"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../lib/node_modules/npm/bin/npm-cli.js",
        prefix.join("bin/npm"),
    )
    .unwrap();
    for (k, v) in w.env.iter_mut() {
        if *k == "PATH" {
            *v = format!("{}:{v}", prefix.join("bin").display());
        }
    }
    let memory = w.project().join("memory.jsonl");
    let row = Row {
        cwd: None,
        name: "memory-nvm",
        command: vec![
            prefix.join("bin/npx").display().to_string(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-memory"),
        ],
        env: vec![("MEMORY_FILE_PATH", memory.display().to_string())],
        steps: vec![call(
            "create_entities",
            json!({"entities": [{"name": "nvm-entity", "entityType": "test", "observations": ["o"]}]}),
        )],
    };
    run_row(&w, &row, |run| {
        let text = run.ok_text(1);
        assert!(
            read_or(&memory, &text).contains("nvm-entity"),
            "{}",
            run.label
        );
        std::fs::remove_file(&memory).unwrap();
    });
}

/// `mcpjail install` on a realistic project config: it wraps every local server and then
/// launches each once, as the client would, and reports exactly which start — with the reason
/// for the ones that do not.
#[test]
fn install_reports_exactly_which_entries_start() {
    let w = World::new();
    let uv_project = copy_project(&w, "uv-project");
    let node_project = copy_project(&w, "node-project");
    std::os::unix::fs::symlink(
        test_env("node/node_modules"),
        node_project.join("node_modules"),
    )
    .unwrap();
    // A server that reads its settings from outside any scope at start-up, and one that is not
    // installed at all: neither can start, for different reasons.
    let settings = w.root.join("home/.config/acme/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{}").unwrap();
    let project = w.project().display().to_string();
    let memory = w.project().join("memory.jsonl").display().to_string();
    let config = json!({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", pin("NPX_PACKAGES", "server-filesystem"), project]},
        "memory": {"command": "npx", "args": ["-y", pin("NPX_PACKAGES", "server-memory")],
                   "env": {"MEMORY_FILE_PATH": memory}},
        "time": {"command": "uvx", "args": [pin("UVX_PACKAGES", "mcp-server-time")]},
        "git": {"command": "uvx", "args": [pin("UVX_PACKAGES", "mcp-server-git"), "--repository", project]},
        "notes-uv": {"command": "uv", "args": ["--directory", uv_project.display().to_string(), "run", "server.py", project]},
        "notes-node": {"command": "node", "args": [node_project.join("server.mjs").display().to_string(), project]},
        "acme": {"command": "node", "args": ["-e", format!(
            "require('fs').readFileSync({:?}); setInterval(() => {{}}, 1000)", settings.display().to_string())]},
        "missing": {"command": "mcp-server-not-installed-anywhere", "args": []}
    }});
    support::git_init(&w.project(), "initial");
    std::fs::write(
        w.project().join(".mcp.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .args(["install", "--yes", "--client", "claude-code"])
        .current_dir(w.project())
        .env_clear()
        .envs(w.env.iter().map(|(k, v)| (*k, v)))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let starts: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("starts"))
        .map(|l| l.trim().split(' ').nth(2).unwrap_or(""))
        .collect();
    let fails: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("does not start"))
        .map(|l| l.trim().split(' ').nth(2).unwrap_or(""))
        .collect();
    let mut starts_sorted = starts.clone();
    starts_sorted.sort_unstable();
    assert_eq!(
        starts_sorted,
        ["files", "git", "memory", "notes-node", "notes-uv", "time"],
        "{stderr}"
    );
    let mut fails_sorted = fails.clone();
    fails_sorted.sort_unstable();
    assert_eq!(fails_sorted, ["acme", "missing"], "{stderr}");
    assert!(stderr.contains("start check: 6 of 8 start"), "{stderr}");
    // Each failure says why and what fixes it: the jail refused the settings file (grant it
    // with --allow-read); the program is not on PATH.
    assert!(
        stderr.contains(&format!("--allow-read {}", settings.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("mcp-server-not-installed-anywhere"),
        "{stderr}"
    );
    // Some entries do not start: install says so in its exit status.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // `status --check` later: the same answer for the wrapped entries; an entry added by hand
    // afterwards (not wrapped) is listed but never started, since it would run unconfined.
    // Two more that only look wrapped: a `bin/mcpjail-proxy` shipped in the project (a
    // script), and the real proxy with `--no-jail`. Neither may be started by the check.
    let mut text = std::fs::read_to_string(w.project().join(".mcp.json")).unwrap();
    let marker = w.root.join("unwrapped-ran");
    let spoof_marker = w.root.join("spoof-ran");
    let nojail_marker = w.root.join("nojail-ran");
    let spoof = w.project().join("bin/mcpjail-proxy");
    std::fs::create_dir_all(spoof.parent().unwrap()).unwrap();
    std::fs::write(
        &spoof,
        format!("#!/bin/sh\ntouch {}\n", spoof_marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&spoof, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Control: the spoof does run, and leaves its marker, when started.
    assert!(std::process::Command::new(&spoof)
        .status()
        .unwrap()
        .success());
    assert!(spoof_marker.exists());
    std::fs::remove_file(&spoof_marker).unwrap();
    text = text.replacen(
        "\"mcpServers\": {",
        &format!(
            "\"mcpServers\": {{\"later\": {{\"command\": \"sh\", \"args\": [\"-c\", \"touch {}\"]}}, \
             \"spoof\": {{\"command\": \"./bin/mcpjail-proxy\", \"args\": [\"--name\", \"spoof\", \"--\", \"x\"]}}, \
             \"nojail\": {{\"command\": \"{}\", \"args\": [\"--no-jail\", \"--\", \"sh\", \"-c\", \"touch {}\"]}},",
            marker.display(),
            env!("CARGO_BIN_EXE_mcpjail-proxy"),
            nojail_marker.display()
        ),
        1,
    );
    std::fs::write(w.project().join(".mcp.json"), text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .args(["status", "--check"])
        .current_dir(w.project())
        .env_clear()
        .envs(w.env.iter().map(|(k, v)| (*k, v)))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(stderr.contains("start check: 6 of 8 start"), "{stderr}");
    assert!(
        stderr.contains("not checked") && stderr.contains("later"),
        "{stderr}"
    );
    assert!(!marker.exists(), "status --check ran an unwrapped server");
    assert!(
        !spoof_marker.exists(),
        "status --check ran a look-alike proxy"
    );
    assert!(
        !nojail_marker.exists(),
        "status --check ran a --no-jail entry"
    );
    assert!(
        stderr.contains("spoof") && stderr.contains("is not this mcpjail's proxy"),
        "{stderr}"
    );
    assert!(
        stderr.contains("nojail") && stderr.contains("it runs with --no-jail"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1), "{stderr}");
}

/// A server that writes its own dot-directory and an XDG cache at start-up (as
/// desktop-commander and platformdirs-based servers do): jailed with no policy it cannot start
/// and the reason names the path; with the documented policy line `state = ["~/.acme-server"]`
/// (in `~/.config/mcpjail/servers/acme.toml`, found by name) it starts, its settings land in the
/// real dot-directory, and its cache lands in its private state directory, not in `~/.cache`.
#[test]
fn server_state_dot_directory_and_xdg_cache() {
    use mcpjail::clients::startcheck::{check, StartOutcome, StartTarget};
    let w = World::new();
    let home = w.root.join("home");
    let server = vec![
        test_env("py/bin/python").display().to_string(),
        repo_root()
            .join("fixtures/state_server.py")
            .display()
            .to_string(),
    ];
    let target = |argv: Vec<String>| StartTarget {
        label: "acme".into(),
        argv,
        env: w
            .env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        cwd: w.project(),
    };
    let limit = std::time::Duration::from_secs(60);
    // Control: unjailed, it starts and writes both under HOME.
    assert!(check(&target(server.clone()), limit).started());
    assert!(home.join(".acme-server/config.json").is_file());
    assert!(home.join(".cache/acme/cache.txt").is_file());
    std::fs::remove_dir_all(home.join(".acme-server")).unwrap();
    std::fs::remove_dir_all(home.join(".cache")).unwrap();

    let mut proxied = vec![
        PROXY.to_string(),
        "--name".into(),
        "acme".into(),
        "--".into(),
    ];
    proxied.extend(server.iter().cloned());
    // Jailed, no policy: the dot-directory is outside every grant.
    match check(&target(proxied.clone()), limit) {
        StartOutcome::Failed { reason } => {
            assert!(reason.contains(".acme-server"), "{reason}")
        }
        other => panic!("started without a grant for its dot-directory: {other:?}"),
    }
    assert!(!home.join(".acme-server").exists());

    // The documented policy line.
    let policy = home.join(".config/mcpjail/servers/acme.toml");
    std::fs::create_dir_all(policy.parent().unwrap()).unwrap();
    std::fs::write(&policy, "state = [\"~/.acme-server\"]\n").unwrap();
    let outcome = check(&target(proxied), limit);
    assert!(outcome.started(), "{outcome:?}");
    assert!(home.join(".acme-server/config.json").is_file());
    assert!(
        !home.join(".cache").exists(),
        "the jailed server wrote the real ~/.cache"
    );
    // The private state directory is keyed by the name and the server's identity.
    let servers = home.join(".local/state/mcpjail-servers");
    let own: Vec<_> = std::fs::read_dir(&servers)
        .unwrap()
        .filter_map(|d| d.ok())
        .map(|d| d.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("acme-"))
        })
        .collect();
    assert_eq!(own.len(), 1, "{own:?}");
    assert!(own[0].join("cache/acme/cache.txt").is_file());
}

/// Ordinary strings are not paths (issue: false denials): `server-everything`'s enum city,
/// an inline `data:` URI (short and long), prose with `/` and `~` in a free-text field — all
/// forwarded and answered as the direct run answers them; while a real violation, a `file:`
/// URI outside the scope in the same field, is refused by the proxy only in the jailed run.
#[test]
fn ordinary_strings_pass_and_real_paths_do_not() {
    let w = World::new();
    let long_data = format!("data:text/plain;base64,{}", "aGVsbG8g".repeat(2000));
    let row = Row {
        cwd: None,
        name: "everything",
        command: vec![
            "npx".into(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-everything"),
            "stdio".into(),
        ],
        env: vec![],
        steps: vec![
            call("get-structured-content", json!({"location": "New York"})),
            call(
                "gzip-file-as-resource",
                json!({"name": "hi.gz", "data": "data:,hi"}),
            ),
            call(
                "gzip-file-as-resource",
                json!({"name": "long.gz", "data": long_data}),
            ),
            call("echo", json!({"message": "/ is the root and ~ is home"})),
            call(
                "gzip-file-as-resource",
                json!({"name": "p.gz", "data": "file:///etc/passwd"}),
            ),
        ],
    };
    let (direct, jailed) = run_row(&w, &row, |_| {});
    for step in 1..=4 {
        assert!(
            jailed.denial(step).is_none(),
            "step {step} was denied: {}",
            jailed.text(step)
        );
        assert_eq!(
            direct.result(step)["isError"],
            jailed.result(step)["isError"],
            "step {step}: direct {} / jailed {}",
            direct.text(step),
            jailed.text(step)
        );
    }
    assert_eq!(direct.ok_text(1), jailed.ok_text(1));
    assert!(jailed.ok_text(4).contains("/ is the root and ~ is home"));
    // The control: a real path outside the scope differs — the proxy refuses it.
    assert!(direct.denial(5).is_none());
    let denial = jailed.denial(5).expect("file:///etc/passwd was forwarded");
    assert_eq!(denial["path"], "/etc/passwd", "{denial}");
}

/// `uv run` syncs its project outside the jail at every start: a server whose write scope
/// holds its own project could plant code (a build hook in `pyproject.toml`) that runs
/// unjailed next time. The jail says so, and `--require-full` refuses to start it.
#[test]
fn a_server_that_may_write_its_own_uv_project_is_not_fully_confined() {
    use mcpjail::clients::startcheck::{check, StartOutcome, StartTarget};
    let w = World::new();
    let project = copy_project(&w, "uv-project");
    let p = project.display().to_string();
    let target = |extra: &[&str]| {
        let mut argv = vec![PROXY.to_string(), "--name".into(), "uvp".into()];
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv.extend(["--".into(), "uv".into(), "--directory".into(), p.clone()]);
        argv.extend(["run".into(), "server.py".into(), p.clone()]);
        StartTarget {
            label: "uvp".into(),
            argv,
            env: w
                .env
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            cwd: w.project(),
        }
    };
    let limit = std::time::Duration::from_secs(60);
    // It starts (the user chose this scope), with the warning in the log…
    assert!(check(&target(&["--log"]), limit).started());
    // …but it is not full confinement.
    match check(&target(&["--require-full"]), limit) {
        StartOutcome::Failed { reason } => {
            assert!(reason.contains("narrower write scope"), "{reason}")
        }
        other => panic!("--require-full accepted a self-writable project: {other:?}"),
    }
    // The control: the same project with the notes elsewhere is fully confined.
    let mut notes = target(&["--require-full"]);
    let last = notes.argv.len() - 1;
    notes.argv[last] = w.project().display().to_string();
    assert!(check(&notes, limit).started());
}

/// No package cache is writable from inside (issue 9 class 5): a jailed server must not be able
/// to change code that other programs run later. The jail for `npx -y` and `uvx` grants the
/// resolved package tree read+exec and nothing under either cache read-write.
#[test]
fn no_package_cache_is_writable_from_inside() {
    use mcpjail::sandbox::{self, GrantAccess, JailOptions};
    let w = World::new();
    let env: Vec<(std::ffi::OsString, std::ffi::OsString)> =
        w.env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    let caches = [
        test_env("runners/npm-cache").canonicalize().unwrap(),
        test_env("runners/uv-cache").canonicalize().unwrap(),
    ];
    for command in [
        vec![
            "npx".to_string(),
            "-y".into(),
            pin("NPX_PACKAGES", "server-memory"),
        ],
        vec!["uvx".to_string(), pin("UVX_PACKAGES", "mcp-server-time")],
    ] {
        let jail = sandbox::prepare_with_env(
            &mcpjail::policy::Scope::default(),
            &command,
            &w.project(),
            &JailOptions::default(),
            &env,
        )
        .unwrap();
        let in_cache: Vec<_> = jail
            .grants()
            .iter()
            .filter(|g| {
                caches
                    .iter()
                    .any(|c| g.path.starts_with(c) || c.starts_with(&g.path))
            })
            .collect();
        assert!(
            !in_cache.is_empty(),
            "{command:?}: the package tree is not granted"
        );
        for g in in_cache {
            assert!(
                matches!(g.access, GrantAccess::Read | GrantAccess::ReadExec),
                "{command:?}: {g:?} opens a cache for writing"
            );
        }
    }
}
