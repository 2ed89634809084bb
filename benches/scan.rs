//! Tracer overhead on file-heavy calls: the same `tools/call` against an untraced and a traced
//! server, alternating, in one run. Two servers: a stdlib Python fixture whose call opens and
//! reads 1000 small files (the worst case: almost nothing but traced opens), and
//! `@modelcontextprotocol/server-filesystem` (from `.test-env`) reading 200 files with
//! `read_multiple_files`. The budget is ≤ 2× (`cargo bench --bench scan`;
//! `MCPJAIL_BENCH_ITERS`). The traced server gets the scope hint the scan passes (the files
//! lie in its scope, so their reads skip the syscall-exit stop); `MCPJAIL_BENCH_NO_HINT=1`
//! traces every access in full.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcpjail::scan::client::McpClient;
use serde_json::json;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

type Client = McpClient<tokio::process::ChildStdin, tokio::process::ChildStdout>;

fn command(server: &[String]) -> Command {
    let mut c = Command::new(&server[0]);
    c.args(&server[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

async fn call(client: &mut Client, tool: &str, args: &serde_json::Value) -> Duration {
    let started = Instant::now();
    let out = client.call_tool(tool, args, Duration::from_secs(60)).await;
    assert!(out.ok, "{}", out.text);
    started.elapsed()
}

fn main() {
    let iters: usize = std::env::var("MCPJAIL_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scan/scan_fixture.py");
    let root = tempfile::tempdir().unwrap();
    for d in 0..20 {
        let dir = root.path().join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..50 {
            std::fs::write(dir.join(format!("f{f}.txt")), "some content\n").unwrap();
        }
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let py = vec![
        "python3".to_string(),
        fixture.display().to_string(),
        "tree".into(),
        root.path().display().to_string(),
    ];
    rt.block_on(compare(
        "python fixture, 1000 opens",
        &py,
        root.path(),
        "list_directory",
        json!({"path": "."}),
        iters,
    ));
    let fs_server = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".test-env/node/node_modules/.bin/mcp-server-filesystem");
    if fs_server.exists() {
        let paths: Vec<String> = (0..200)
            .map(|i| {
                root.path()
                    .join(format!("d{}/f{}.txt", i / 50, i % 50))
                    .display()
                    .to_string()
            })
            .collect();
        let node = vec![
            fs_server.display().to_string(),
            root.path().display().to_string(),
        ];
        rt.block_on(compare(
            "server-filesystem read_multiple_files, 200 files",
            &node,
            root.path(),
            "read_multiple_files",
            json!({ "paths": paths }),
            iters,
        ));
    } else {
        println!("server-filesystem: .test-env missing (scripts/test-deps.sh), skipped");
    }
}

async fn compare(
    label: &str,
    server: &[String],
    scope: &Path,
    tool: &str,
    args: serde_json::Value,
    iters: usize,
) {
    let mut child = command(server).spawn().unwrap();
    let stdin = tokio::process::ChildStdin::from_std(child.stdin.take().unwrap()).unwrap();
    let stdout = tokio::process::ChildStdout::from_std(child.stdout.take().unwrap()).unwrap();
    let mut plain: Client = McpClient::new(stdin, stdout, vec![]);
    plain.initialize(Duration::from_secs(30)).await.unwrap();
    // The scan's hint: both servers' files lie in their scope directory
    // (`MCPJAIL_BENCH_NO_HINT=1`: every access traced in full, for comparison).
    let hint = std::env::var_os("MCPJAIL_BENCH_NO_HINT").is_none();
    let mut traced =
        mcpjail::scan::tracer::spawn_traced(command(server), hint.then_some(scope)).unwrap();
    let stdin = tokio::process::ChildStdin::from_std(traced.child_stdin.take().unwrap()).unwrap();
    let stdout =
        tokio::process::ChildStdout::from_std(traced.child_stdout.take().unwrap()).unwrap();
    let mut tclient: Client = McpClient::new(stdin, stdout, vec![]);
    tclient.initialize(Duration::from_secs(30)).await.unwrap();

    let (mut a, mut b) = (Vec::new(), Vec::new());
    call(&mut plain, tool, &args).await;
    call(&mut tclient, tool, &args).await;
    for _ in 0..iters {
        a.push(call(&mut plain, tool, &args).await);
        b.push(call(&mut tclient, tool, &args).await);
    }
    let (ma, mb) = (median(a), median(b));
    println!(
        "{label}: untraced {:.1} ms, traced {:.1} ms, ratio {:.2}x ({} accesses traced, {iters} iterations)",
        ma.as_secs_f64() * 1000.0,
        mb.as_secs_f64() * 1000.0,
        mb.as_secs_f64() / ma.as_secs_f64(),
        traced.log.snapshot().len(),
    );
    let _ = child.kill();
    let _ = child.wait();
    traced.finish();
}
