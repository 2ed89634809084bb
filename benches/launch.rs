//! Start-up of package-runner launches, direct vs through `mcpjail-proxy` (jailed), in one run.
//!
//! For `npx -y <server>` and `uvx <server>` from a warm cache (the caches `scripts/test-deps.sh`
//! fills in `.test-env/runners`, used offline), the bench alternates a direct start and a
//! proxied one — spawn, send `initialize`, wait for the answer — and prints the medians, the
//! difference and the ratio. The proxied start includes mcpjail's resolve step (the runner's
//! probe, outside the jail), the scope derivation, the jail, and the server's own start.
//!
//! `cargo bench --bench launch` (`MCPJAIL_BENCH_ITERS` sets the count; under `cargo test` it runs
//! each once as a smoke check).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;

fn pins(root: &Path, key: &str) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("tests/launch/pins.env")).expect("pins.env");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(|v| {
            v.trim_matches('"')
                .split_whitespace()
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Spawn, send initialize, return the time to the answer (then close stdin and reap).
fn start_once(argv: &[String], env: &[(String, String)], cwd: &Path) -> Duration {
    let t0 = Instant::now();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{INIT}").expect("write initialize");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("read");
        assert!(
            n > 0,
            "{} exited before answering initialize",
            argv.join(" ")
        );
        if line.contains("\"result\"") {
            break;
        }
    }
    let elapsed = t0.elapsed();
    drop(stdin);
    let _ = child.wait();
    elapsed
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let runners = root.join(".test-env/runners");
    let uv_bin = root.join(".test-env/uv/bin");
    if !runners.join(".mcpjail-stamp").exists() || !uv_bin.exists() {
        eprintln!("launch bench: .test-env/runners is missing; run scripts/test-deps.sh first");
        std::process::exit(1);
    }
    let benching = std::env::args().any(|a| a == "--bench");
    let iters: usize = std::env::var("MCPJAIL_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if benching { 15 } else { 1 });
    let home = tempfile::tempdir().expect("tempdir");
    let env: Vec<(String, String)> = vec![
        ("HOME".into(), home.path().display().to_string()),
        (
            "PATH".into(),
            format!(
                "{}:{}",
                uv_bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        ),
        (
            "npm_config_cache".into(),
            runners.join("npm-cache").display().to_string(),
        ),
        ("npm_config_offline".into(), "true".into()),
        (
            "UV_CACHE_DIR".into(),
            runners.join("uv-cache").display().to_string(),
        ),
        ("UV_OFFLINE".into(), "1".into()),
        (
            "UV_EXCLUDE_NEWER".into(),
            pins(&root, "RESOLVE_BEFORE").join(""),
        ),
        (
            "PYENV_ROOT".into(),
            std::env::var("PYENV_ROOT")
                .unwrap_or_else(|_| std::env::var("HOME").unwrap_or_default() + "/.pyenv"),
        ),
    ];
    // The projects of the `uv run` and Node rows, and a repository for mcp-server-git.
    let work = tempfile::tempdir().expect("tempdir");
    let copy = |name: &str| -> PathBuf {
        let dst = work.path().join(name);
        let ok = Command::new("cp")
            .arg("-r")
            .arg(root.join("fixtures").join(name))
            .arg(&dst)
            .status()
            .expect("cp")
            .success();
        assert!(ok, "cannot copy fixtures/{name}");
        dst
    };
    let uv_project = copy("uv-project");
    let node_project = copy("node-project");
    std::os::unix::fs::symlink(
        root.join(".test-env/node/node_modules"),
        node_project.join("node_modules"),
    )
    .expect("symlink node_modules");
    let repo = work.path().join("repo");
    std::fs::create_dir_all(&repo).expect("mkdir repo");
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git init failed");
    let npx = pins(&root, "NPX_PACKAGES");
    let uvx = pins(&root, "UVX_PACKAGES");
    let pick = |list: &[String], name: &str| -> String {
        list.iter()
            .find(|p| p.contains(name))
            .cloned()
            .expect("pin")
    };
    let rows: Vec<(&str, Vec<String>)> = vec![
        (
            "npx -y server-memory",
            vec!["npx".into(), "-y".into(), pick(&npx, "server-memory")],
        ),
        (
            "npx -y server-filesystem",
            vec![
                "npx".into(),
                "-y".into(),
                pick(&npx, "server-filesystem"),
                home.path().display().to_string(),
            ],
        ),
        (
            "uvx mcp-server-time",
            vec!["uvx".into(), pick(&uvx, "mcp-server-time")],
        ),
        (
            "npx -y server-seq-thinking",
            vec![
                "npx".into(),
                "-y".into(),
                pick(&npx, "server-sequential-thinking"),
            ],
        ),
        (
            "npx -y server-everything",
            vec![
                "npx".into(),
                "-y".into(),
                pick(&npx, "server-everything"),
                "stdio".into(),
            ],
        ),
        (
            "uvx mcp-server-git",
            vec![
                "uvx".into(),
                pick(&uvx, "mcp-server-git"),
                "--repository".into(),
                repo.display().to_string(),
            ],
        ),
        (
            "uv --directory D run",
            vec![
                "uv".into(),
                "--directory".into(),
                uv_project.display().to_string(),
                "run".into(),
                "server.py".into(),
                home.path().display().to_string(),
            ],
        ),
        (
            "node project/server.mjs",
            vec![
                "node".into(),
                node_project.join("server.mjs").display().to_string(),
                home.path().display().to_string(),
            ],
        ),
    ];
    let proxy = env!("CARGO_BIN_EXE_mcpjail-proxy");
    println!("start-up to the initialize answer, warm cache, {iters} alternating runs each");
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>7}",
        "launch", "direct", "jailed", "added", "ratio"
    );
    for (label, argv) in rows {
        let mut proxied = vec![
            proxy.to_string(),
            "--name".into(),
            "bench".into(),
            "--pin".into(),
            "off".into(),
            "--".into(),
        ];
        proxied.extend(argv.iter().cloned());
        // One unmeasured start each: the first run pays for disk caches.
        start_once(&argv, &env, home.path());
        start_once(&proxied, &env, home.path());
        let (mut direct, mut jailed) = (Vec::new(), Vec::new());
        for _ in 0..iters {
            direct.push(start_once(&argv, &env, home.path()));
            jailed.push(start_once(&proxied, &env, home.path()));
        }
        let (d, j) = (median(&mut direct), median(&mut jailed));
        let added = j.as_secs_f64() - d.as_secs_f64();
        println!(
            "{:<28} {:>8.0}ms {:>8.0}ms {:>+8.0}ms {:>6.2}x",
            label,
            d.as_secs_f64() * 1e3,
            j.as_secs_f64() * 1e3,
            added * 1e3,
            j.as_secs_f64() / d.as_secs_f64()
        );
    }
}
