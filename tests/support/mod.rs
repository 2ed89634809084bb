//! Shared helpers for the real-client tests (`real_clients`, `functional_jailed`): where the
//! pinned servers and clients of `scripts/test-deps.sh` live, a scratch tree with a scope and
//! secrets around it, git repositories, and one function that runs a real SDK client (Python
//! or TypeScript driver) against a server command with a JSON step script.
//!
//! A missing `.test-env` is a failure with a hint, never a skip: a suite that silently skips its
//! real-server tests would report green without testing anything.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

pub const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");
pub const FIXTURE: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-files");

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file or program installed by `scripts/test-deps.sh`, or a panic saying how to get it.
pub fn test_env(rel: &str) -> PathBuf {
    let path = repo_root().join(".test-env").join(rel);
    assert!(
        path.exists(),
        "{} is missing: the real MCP servers and clients are not installed.\n\
         hint: run scripts/test-deps.sh (or scripts/test.sh, which runs it first)",
        path.display()
    );
    path
}

pub fn server_filesystem() -> String {
    test_env("node/node_modules/.bin/mcp-server-filesystem")
        .display()
        .to_string()
}

pub fn server_memory() -> String {
    test_env("node/node_modules/.bin/mcp-server-memory")
        .display()
        .to_string()
}

pub fn server_git() -> String {
    test_env("git/bin/mcp-server-git").display().to_string()
}

/// `mcpjail-proxy PROXY_ARGS -- SERVER...`
pub fn proxied(proxy_args: &[&str], server: &[String]) -> Vec<String> {
    let mut cmd = vec![PROXY.to_string()];
    cmd.extend(proxy_args.iter().map(|a| a.to_string()));
    cmd.push("--".to_string());
    cmd.extend(server.iter().cloned());
    cmd
}

/// The two real SDK clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// The Python `mcp` SDK (`ClientSession` + `stdio_client`), tests/py/client.py.
    Py,
    /// The TypeScript `@modelcontextprotocol/sdk` (`Client` + `StdioClientTransport`), tests/js/client.mjs.
    Ts,
}

impl Client {
    pub const ALL: [Client; 2] = [Client::Py, Client::Ts];

    pub fn name(self) -> &'static str {
        match self {
            Client::Py => "py",
            Client::Ts => "ts",
        }
    }

    fn command(self) -> Command {
        match self {
            Client::Py => {
                let mut c = Command::new(test_env("py/bin/python"));
                c.arg(repo_root().join("tests/py/client.py"));
                c
            }
            Client::Ts => {
                // The driver imports the SDK from .test-env/node; check it is there for a clear error.
                test_env("node/node_modules/@modelcontextprotocol/sdk/package.json");
                let mut c = Command::new("node");
                c.arg(repo_root().join("tests/js/client.mjs"));
                c
            }
        }
    }
}

/// What one client run printed.
#[derive(Debug)]
pub struct Run {
    pub label: String,
    pub init: Value,
    /// One entry per script step, in order.
    pub steps: Vec<Value>,
    pub done: Value,
    /// The driver's stderr, which includes the server's (and the proxy's) stderr.
    pub stderr: String,
    pub millis: u128,
}

/// Runs `client` against `server` (argv) in `cwd` with exactly `env` (plus PATH), feeding it
/// `script`. Panics with both output streams if the driver fails.
pub fn run_client(
    client: Client,
    label: &str,
    server: &[String],
    script: &Value,
    env: &[(&str, String)],
    cwd: &Path,
) -> Run {
    let steps = script["steps"].as_array().map_or(0, Vec::len);
    let text = serde_json::to_string(script).unwrap();
    run_client_text(client, label, server, &text, steps, env, cwd)
}

/// [`run_client`] with the script as JSON text of `steps` steps: a script may hold what
/// `serde_json` cannot (a lone surrogate escape, `\ud800`). Such an escape in the driver's
/// output reads back as the text `<U+D800>`.
pub fn run_client_text(
    client: Client,
    label: &str,
    server: &[String],
    script: &str,
    expected: usize,
    env: &[(&str, String)],
    cwd: &Path,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let script_file = dir.path().join("script.json");
    std::fs::write(&script_file, script).unwrap();
    let mut cmd = client.command();
    cmd.arg("--script")
        .arg(&script_file)
        .arg("--")
        .args(server)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let label = format!("{label} [{} client]", client.name());
    let started = Instant::now();
    // The drivers bound themselves (script "timeout"), so waiting here cannot hang forever.
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{label}: cannot start the client: {e}"));
    let millis = started.elapsed().as_millis();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let fail = |why: &str| -> ! {
        panic!(
            "{label}: {why}\n--- exit: {:?}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
            out.status
        )
    };
    if !out.status.success() {
        fail("the client driver failed");
    }
    let mut init = Value::Null;
    let mut steps = Vec::new();
    let mut done = Value::Null;
    for line in stdout.lines() {
        let line = line.replace("\\ud800", "<U+D800>");
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| fail("non-JSON line on stdout"));
        if let Some(i) = v.get("initialize") {
            init = i.clone();
        } else if v.get("done").is_some() {
            done = v;
        } else if let Some(n) = v.get("step").and_then(Value::as_u64) {
            if n as usize != steps.len() {
                fail("steps out of order");
            }
            steps.push(v);
        } else {
            fail("unexpected line on stdout");
        }
    }
    if init.is_null() || done.is_null() || steps.len() != expected {
        fail("the client did not finish every step");
    }
    Run {
        label,
        init,
        steps,
        done,
        stderr,
        millis,
    }
}

impl Run {
    fn step(&self, i: usize) -> &Value {
        &self.steps[i]
    }

    /// The `CallToolResult` (or other result) of step `i`; panics if the step got a JSON-RPC error.
    pub fn result(&self, i: usize) -> &Value {
        match self.step(i).get("result") {
            Some(r) => r,
            None => panic!(
                "{}: step {i} has no result: {}\n--- stderr:\n{}",
                self.label,
                self.step(i),
                self.stderr
            ),
        }
    }

    pub fn tools(&self, i: usize) -> &Value {
        match self.step(i).get("tools") {
            Some(r) => r,
            None => panic!("{}: step {i} has no tools: {}", self.label, self.step(i)),
        }
    }

    pub fn is_error(&self, i: usize) -> bool {
        self.result(i)["isError"].as_bool().unwrap_or(false)
    }

    /// All text content of step `i`'s result, joined by newlines.
    pub fn text(&self, i: usize) -> String {
        let content = self.result(i)["content"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        content
            .iter()
            .filter_map(|c| c["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Step `i` succeeded (no error result); returns its text.
    pub fn ok_text(&self, i: usize) -> String {
        assert!(
            !self.is_error(i),
            "{}: step {i} failed: {}\n--- stderr:\n{}",
            self.label,
            self.step(i),
            self.stderr
        );
        self.text(i)
    }

    /// The proxy's structured denial of step `i`, if the proxy (not the server) refused it.
    pub fn denial(&self, i: usize) -> Option<&Value> {
        self.step(i)
            .get("result")
            .and_then(|r| r.get("_meta"))
            .and_then(|m| m.get("mcpjail/denial"))
    }

    /// The JSON-RPC error step `i` got, if any.
    pub fn error(&self, i: usize) -> Option<&Value> {
        self.step(i).get("error")
    }

    /// Every `FIXTURE-READ {json}` line (a `resources/read` that reached the fixture), parsed.
    pub fn fixture_reads(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("FIXTURE-READ "))
            .map(|j| serde_json::from_str(j).expect("FIXTURE-READ line is JSON"))
            .collect()
    }

    /// Every `FIXTURE-CALL {json}` line the fixture server printed, parsed.
    pub fn fixture_calls(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter_map(|l| l.strip_prefix("FIXTURE-CALL "))
            .map(|j| serde_json::from_str(j).expect("FIXTURE-CALL line is JSON"))
            .collect()
    }
}

/// A tool call step.
pub fn call(tool: &str, arguments: Value) -> Value {
    json!({"tool": tool, "arguments": arguments})
}

pub fn list_tools() -> Value {
    json!({"call": "tools/list"})
}

pub fn read_resource(uri: &str) -> Value {
    json!({"call": "resources/read", "uri": uri})
}

/// A scratch tree around a scope, with things outside it worth stealing.
///
/// ```text
/// T/scope/a.txt              "alpha"           (a git repo when built with `with_git`)
/// T/scope/sub/b.txt          "beta"
/// T/scope/link      -> T/outside/secret.txt   (a symlink inside the scope pointing out)
/// T/scope/link-dir  -> T/outside
/// T/outside/secret.txt       SECRET            (a git repo with a secret commit, `with_git`)
/// T/scope-evil/x.txt         EVIL              (sibling whose name starts with the scope's)
/// T/home/secret.txt          HOME_SECRET       (HOME of every process in the test)
/// ```
pub struct Tree {
    pub dir: tempfile::TempDir,
    root: PathBuf,
}

pub const SECRET: &str = "TOP-SECRET-outside-the-scope";
pub const EVIL: &str = "EVIL-sibling-prefix";
pub const HOME_SECRET: &str = "HOME-SECRET-in-home";

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (rel, text) in [
            ("scope/a.txt", "alpha"),
            ("scope/sub/b.txt", "beta"),
            ("outside/secret.txt", SECRET),
            ("scope-evil/x.txt", EVIL),
            ("home/secret.txt", HOME_SECRET),
        ] {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        std::os::unix::fs::symlink(root.join("outside/secret.txt"), root.join("scope/link"))
            .unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("scope/link-dir")).unwrap();
        Tree { dir, root }
    }

    /// The same tree with `scope`, `outside` and `scope-evil` as git repositories.
    pub fn with_git() -> Tree {
        let tree = Tree::new();
        for (rel, message) in [
            ("scope", "initial scope commit"),
            ("outside", SECRET),
            ("scope-evil", EVIL),
        ] {
            git_init(&tree.path(rel), message);
        }
        tree
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// `T/rel` as a string, for arguments.
    pub fn p(&self, rel: &str) -> String {
        self.path(rel).display().to_string()
    }

    pub fn scope(&self) -> String {
        self.p("scope")
    }

    pub fn home(&self) -> String {
        self.p("home")
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel))
            .unwrap_or_else(|e| panic!("read {}: {e}", self.p(rel)))
    }
}

/// Runs git in `dir` (a test helper: panics with git's output on failure).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git is installed");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Makes `dir` a git repository whose files are committed with `message`. Identity is set in
/// the repository's own config, so the server's commits work without any global git config.
pub fn git_init(dir: &Path, message: &str) {
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.email", "tests@mcpjail.invalid"]);
    git(dir, &["config", "user.name", "mcpjail tests"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
}

/// The out-of-scope forms every path-taking tool is attacked with, as `(name, value)`.
/// `target` is what the attack wants (a file or directory outside the scope, under `T/outside`).
/// `rel_target` names it relative to `T/outside`, e.g. `secret.txt`, or `` for the directory.
pub fn hostile_paths(tree: &Tree, rel_target: &str) -> Vec<(&'static str, String)> {
    let join = |base: String| {
        if rel_target.is_empty() {
            base
        } else {
            format!("{base}/{rel_target}")
        }
    };
    let scope = tree.scope();
    let outside = tree.p("outside");
    vec![
        ("absolute path outside the scope", join(outside.clone())),
        (
            "../ traversal from inside the scope",
            join(format!("{scope}/sub/../../outside")),
        ),
        (
            "relative ../ traversal from the server's cwd",
            join("../outside".to_string()),
        ),
        (
            "symlink inside the scope pointing out",
            if rel_target == "secret.txt" {
                format!("{scope}/link")
            } else {
                join(format!("{scope}/link-dir"))
            },
        ),
        (
            "sibling prefix <scope>-evil",
            if rel_target.is_empty() {
                format!("{scope}-evil")
            } else {
                format!("{scope}-evil/x.txt")
            },
        ),
        ("file:// URI", join(format!("file://{outside}"))),
        ("~ (home directory)", "~/secret.txt".to_string()),
        (
            "percent-encoded %2e%2e in a file:// URI",
            join(format!("file://{scope}/%2e%2e/outside")),
        ),
        (
            "NUL byte",
            format!("{scope}/a.txt\u{0}/../../outside/secret.txt"),
        ),
        (
            "/proc/self/root prefix",
            join(format!("/proc/self/root{outside}")),
        ),
        (
            "// and /. segments",
            join(format!("{scope}//./..//outside/.")),
        ),
    ]
}
