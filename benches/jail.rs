//! Jail start-up overhead: spawn → first `initialize` answer, direct vs jailed, in one run.
//!
//! For each server (the Rust hostile fixture, a stdlib Python server, a Node script) the bench
//! alternates direct and jailed starts (so drift affects both alike), and prints medians and the
//! added milliseconds. "jailed" includes `sandbox::prepare` (runtime discovery, opening the
//! rule paths, the private TMPDIR) as well as the ruleset/seccomp work at spawn.
//!
//! `cargo bench --bench jail` (set `MCPJAIL_BENCH_ITERS` to change the iteration count).

use std::ffi::OsString;
use std::path::Path;
use std::time::{Duration, Instant};

use mcpjail::policy::{Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

const PY_SERVER: &str = r#"
import sys, json
for line in sys.stdin:
    msg = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": msg.get("id"), "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "py", "version": "0"}}}), flush=True)
"#;

const NODE_SERVER: &str = r#"
require('readline').createInterface({ input: process.stdin }).on('line', (l) => {
  const m = JSON.parse(l);
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'node', version: '0' } } }) + '\n');
});
"#;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// The command as given, with the full environment (what the user ran before mcpjail).
    AsGiven,
    /// The same resolved program and scrubbed environment as the jail, without confinement:
    /// the difference to `Jailed` is exactly what Landlock + seccomp + prepare cost.
    Equivalent,
    /// `sandbox::prepare` + spawn under the jail.
    Jailed,
}

async fn start_once(command: &[String], scope: &Scope, dir: &Path, mode: Mode) -> Duration {
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let prepare = || {
        sandbox::prepare_with_env(scope, command, dir, &JailOptions::default(), &env)
            .expect("prepare")
    };
    // For Equivalent, the preparation is done before the clock starts.
    let pre = (mode == Mode::Equivalent).then(prepare);
    let t0 = Instant::now();
    let jail = (mode == Mode::Jailed).then(prepare);
    let mut cmd = match (mode, &jail, &pre) {
        (Mode::Jailed, Some(j), _) => j.command(),
        (Mode::Equivalent, _, Some(p)) => {
            let mut c = tokio::process::Command::new(p.program());
            c.args(p.args()).current_dir(dir).env_clear();
            c.envs(p.env().unwrap_or_default().iter().map(|(k, v)| (k, v)));
            c
        }
        _ => {
            let mut c = tokio::process::Command::new(&command[0]);
            c.args(&command[1..]).current_dir(dir);
            c
        }
    };
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    stdin.write_all(INIT.as_bytes()).await.expect("write");
    stdin.write_all(b"\n").await.expect("write");
    let line = lines.next_line().await.expect("read").expect("an answer");
    let elapsed = t0.elapsed();
    assert!(line.contains("\"result\""), "unexpected answer: {line}");
    drop(stdin);
    let _ = child.wait().await;
    elapsed
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let iters: usize = std::env::var("MCPJAIL_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let dir = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(dir.path()).expect("canonicalize");
    let scope_dir = base.join("data");
    std::fs::create_dir_all(&scope_dir).expect("mkdir");
    let script = base.join("server.js");
    std::fs::write(&script, NODE_SERVER).expect("write script");
    let scope = Scope {
        write: vec![ScopeEntry {
            path: scope_dir.clone(),
            source: ScopeSource::Flag,
        }],
        ..Scope::default()
    };

    let fixture = env!("CARGO_BIN_EXE_mcpjail-fixture-hostile").to_string();
    let servers: Vec<(&str, Vec<String>)> = vec![
        ("rust fixture (rmcp)", vec![fixture]),
        (
            "python3 (pyenv) stdlib",
            vec!["python3".into(), "-c".into(), PY_SERVER.into()],
        ),
        (
            "node script",
            vec![
                "/usr/bin/node".into(),
                script.to_string_lossy().into_owned(),
            ],
        ),
    ];

    println!("jail start-up: spawn -> first initialize answer, median of {iters} (interleaved)");
    println!(
        "{:<24} {:>14} {:>14} {:>12} {:>10}",
        "server", "as given ms", "equivalent ms", "jailed ms", "added ms"
    );
    for (name, command) in &servers {
        // Warm the page cache once per mode.
        for mode in [Mode::AsGiven, Mode::Equivalent, Mode::Jailed] {
            start_once(command, &scope, &scope_dir, mode).await;
        }
        let (mut given, mut equiv, mut jailed) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..iters {
            given.push(start_once(command, &scope, &scope_dir, Mode::AsGiven).await);
            equiv.push(start_once(command, &scope, &scope_dir, Mode::Equivalent).await);
            jailed.push(start_once(command, &scope, &scope_dir, Mode::Jailed).await);
        }
        let (g, e, j) = (median(given), median(equiv), median(jailed));
        println!(
            "{:<24} {:>14.2} {:>14.2} {:>12.2} {:>10.2}",
            name,
            g,
            e,
            j,
            j - e
        );
    }
    println!("added = jailed - equivalent (same program and environment, no confinement).");
    println!(
        "'as given' differs where the jail itself changes the start: a pyenv shim is resolved"
    );
    println!("(no bash+pyenv per start) and variables such as NODE_EXTRA_CA_CERTS are scrubbed.");

    // The parts of the jailed path, to see where the time goes.
    let command = vec!["python3".to_string(), "-c".to_string(), "0".to_string()];
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let mut prep = Vec::new();
    for _ in 0..iters {
        let t0 = Instant::now();
        let jail =
            sandbox::prepare_with_env(&scope, &command, &scope_dir, &JailOptions::default(), &env)
                .expect("prepare");
        prep.push(t0.elapsed());
        drop(jail);
    }
    println!(
        "sandbox::prepare alone (python3): median {:.2} ms",
        median(prep)
    );
}
