//! Real interpreters start and work jailed with only what runtime discovery grants, and still
//! cannot read the user's HOME — even the parts right next to their own install tree.
//!
//! A Python server (`python3 -c`, stdlib only, resolved through the pyenv shim on PATH) and a
//! Node script (`/usr/bin/node server.js`) speak newline-delimited JSON-RPC: `initialize`, then a
//! `tools/call` of `read` that reads a path and answers ESCAPED/BLOCKED. Each is run as a control
//! (`--no-jail`) and jailed; each run is a fresh child process.

#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use mcpjail::policy::{Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const PY_SERVER: &str = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "py", "version": "0"}}
    else:
        path = msg["params"]["arguments"]["path"]
        try:
            with open(path) as f:
                text = "ESCAPED: " + f.read()
        except OSError as e:
            text = "BLOCKED: " + repr(e)
        result = {"content": [{"type": "text", "text": text}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

const NODE_SERVER: &str = r#"
const fs = require('fs');
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const msg = JSON.parse(line);
  if (msg.id === undefined) return;
  let result;
  if (msg.method === 'initialize') {
    result = { protocolVersion: '2025-06-18', capabilities: { tools: {} },
               serverInfo: { name: 'node', version: '0' } };
  } else {
    let text;
    try { text = 'ESCAPED: ' + fs.readFileSync(msg.params.arguments.path, 'utf8'); }
    catch (e) { text = 'BLOCKED: ' + e.code + ' ' + e.message; }
    result = { content: [{ type: 'text', text }] };
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, result }) + '\n');
});
"#;

struct Canaries {
    token: String,
    paths: Vec<PathBuf>,
}

impl Drop for Canaries {
    fn drop(&mut self) {
        for p in &self.paths {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn token() -> String {
    let mut buf = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .unwrap();
    format!("CANARY-{:016x}", u64::from_ne_bytes(buf))
}

/// Canaries in the real HOME: one at its top, one inside the pyenv root next to `versions/`.
fn home_canaries() -> Canaries {
    let token = token();
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let mut paths = vec![home.join(format!(".mcpjail-rt-canary-{}", &token[7..15]))];
    let pyenv = home.join(".pyenv");
    if pyenv.is_dir() {
        paths.push(pyenv.join(format!("mcpjail-canary-{}", &token[7..15])));
    }
    for p in &paths {
        std::fs::write(p, format!("home secret {token}")).unwrap();
    }
    Canaries { token, paths }
}

/// Run `command` (jailed or not) in `scope_dir`, initialize, then read each of `paths`.
async fn run(command: &[String], scope_dir: &Path, jailed: bool, paths: &[PathBuf]) -> Vec<String> {
    run_with_deny(command, scope_dir, jailed, paths, &[]).await
}

async fn run_with_deny(
    command: &[String],
    scope_dir: &Path,
    jailed: bool,
    paths: &[PathBuf],
    deny: &[&str],
) -> Vec<String> {
    let scope = Scope {
        write: vec![ScopeEntry {
            path: scope_dir.to_path_buf(),
            source: ScopeSource::Flag,
        }],
        deny: deny.iter().map(|d| d.to_string()).collect(),
        ..Scope::default()
    };
    let opts = JailOptions {
        disabled: !jailed,
        require_full: jailed,
        env_keep: vec![],
        ..JailOptions::default()
    };
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let jail = sandbox::prepare_with_env(&scope, command, scope_dir, &opts, &env).unwrap();
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn the server");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();

    let call = |id: u64, method: &str, params: Value| {
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
    };
    stdin
        .write_all(call(0, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})).as_bytes())
        .await
        .unwrap();
    let init: Value = serde_json::from_str(
        &stdout
            .next_line()
            .await
            .unwrap()
            .expect("the server answers initialize"),
    )
    .unwrap();
    assert!(init["result"]["serverInfo"].is_object(), "{init}");

    let mut out = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        stdin
            .write_all(
                call(
                    i as u64 + 1,
                    "tools/call",
                    json!({"name": "read", "arguments": {"path": p}}),
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        let resp: Value =
            serde_json::from_str(&stdout.next_line().await.unwrap().expect("an answer")).unwrap();
        out.push(
            resp["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        );
    }
    drop(stdin);
    let _ = child.wait().await;
    out
}

async fn check_runtime(command: Vec<String>, scope_dir: &Path) {
    let canaries = home_canaries();
    let in_scope = scope_dir.join("in-scope.txt");
    std::fs::write(&in_scope, "hello from the scope").unwrap();
    let mut paths = vec![in_scope];
    paths.extend(canaries.paths.iter().cloned());

    let control = run(&command, scope_dir, false, &paths).await;
    let jailed = run(&command, scope_dir, true, &paths).await;
    println!("{command:?}\n  control: {control:?}\n  jailed:  {jailed:?}");

    assert!(
        control.iter().all(|t| t.starts_with("ESCAPED")),
        "{control:?}"
    );
    assert_eq!(
        jailed[0], "ESCAPED: hello from the scope",
        "in-scope read works jailed"
    );
    for (p, t) in paths.iter().zip(&jailed).skip(1) {
        assert!(
            t.starts_with("BLOCKED"),
            "{} readable jailed: {t}",
            p.display()
        );
        assert!(!t.contains(&canaries.token));
    }
}

#[tokio::test]
async fn python_via_pyenv_shim_runs_jailed_and_cannot_read_home() {
    let dir = tempfile::tempdir().unwrap();
    let scope = std::fs::canonicalize(dir.path()).unwrap();
    let cmd = vec![
        "python3".to_string(),
        "-c".to_string(),
        PY_SERVER.to_string(),
    ];
    // The program on PATH is a pyenv shim here; the jail must resolve it, not grant ~/.pyenv.
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let jail = sandbox::prepare_with_env(
        &Scope::default(),
        &cmd,
        &scope,
        &JailOptions::default(),
        &env,
    )
    .unwrap();
    println!("python program: {}", jail.program().display());
    for g in jail.grants() {
        println!("  grant {:?} {} ({})", g.access, g.path.display(), g.why);
    }
    check_runtime(cmd, &scope).await;
}

#[tokio::test]
async fn system_python_runs_jailed() {
    if !Path::new("/usr/bin/python3").exists() {
        panic!("/usr/bin/python3 is missing on this machine");
    }
    let dir = tempfile::tempdir().unwrap();
    let scope = std::fs::canonicalize(dir.path()).unwrap();
    let cmd = vec![
        "/usr/bin/python3".to_string(),
        "-c".to_string(),
        PY_SERVER.to_string(),
    ];
    check_runtime(cmd, &scope).await;
}

#[tokio::test]
async fn node_script_runs_jailed_and_cannot_read_home() {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    // The script lives outside the scope: it is runtime (read-only), not data.
    let script_dir = base.join("app");
    std::fs::create_dir_all(&script_dir).unwrap();
    let script = script_dir.join("server.js");
    std::fs::write(&script, NODE_SERVER).unwrap();
    let scope = base.join("data");
    std::fs::create_dir_all(&scope).unwrap();
    let cmd = vec![
        "/usr/bin/node".to_string(),
        script.to_string_lossy().into_owned(),
    ];
    check_runtime(cmd, &scope).await;
}

/// Landlock cannot deny a file inside an allowed directory; the jail masks denied names in the
/// server's mount namespace (or, where that is refused, carves them out list-only). Either way
/// the rest of the scope stays readable. (tests/sandbox_carve.rs covers writes next to them.)
#[tokio::test]
async fn denied_names_inside_the_scope_are_carved_out() {
    let dir = tempfile::tempdir().unwrap();
    let scope = std::fs::canonicalize(dir.path()).unwrap();
    let tok = token();
    std::fs::write(scope.join(".env"), format!("API_KEY={tok}")).unwrap();
    std::fs::write(scope.join("notes.txt"), "in scope").unwrap();
    std::fs::create_dir(scope.join("sub")).unwrap();
    std::fs::write(scope.join("sub/deep.txt"), "deeper").unwrap();
    let cmd = vec![
        "/usr/bin/python3".to_string(),
        "-c".to_string(),
        PY_SERVER.to_string(),
    ];
    let paths = vec![
        scope.join("notes.txt"),
        scope.join("sub/deep.txt"),
        scope.join(".env"),
    ];
    let deny = ["**/.env*"];
    let control = run_with_deny(&cmd, &scope, false, &paths, &deny).await;
    let jailed = run_with_deny(&cmd, &scope, true, &paths, &deny).await;
    println!("control: {control:?}\njailed:  {jailed:?}");
    assert!(control[2].contains(&tok), "control reads .env: {control:?}");
    assert_eq!(jailed[0], "ESCAPED: in scope");
    assert_eq!(jailed[1], "ESCAPED: deeper");
    assert!(jailed[2].starts_with("BLOCKED"), "{jailed:?}");
    assert!(!jailed[2].contains(&tok));
}
