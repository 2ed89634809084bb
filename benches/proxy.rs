//! Proxy overhead, in one run (`cargo bench --bench proxy`): 10 000 sequential `echo`
//! round-trips and one 10 MiB `big` result against the fixture server, direct vs through a
//! zero-parse byte relay (`fixtures/byte_relay.rs`, the floor for anything in the middle) vs
//! through `mcpjail-proxy --no-jail` vs through the jailed proxy. Prints the median added
//! latency per round-trip, the wall ratios against direct and against the relay, and the
//! proxy's peak RSS (VmHWM).
//!
//! Targets (issue 10): ≤ 1.15× the byte relay's wall for the 10 000 calls, ≤ 1.3× direct for
//! the 10 MiB result, ≤ 15 MiB proxy peak RSS. The relay and proxy runs alternate (relay,
//! proxy, relay, proxy…) and each ratio uses the median of its rounds, so a burst of load from
//! elsewhere on the machine lands on both sides instead of on one.
//!
//! A second table does the same sequential-call measurement against the real
//! `@modelcontextprotocol/server-filesystem` (`read_text_file` of a small file in scope), where the
//! server does real work per call: the ratio a user of a real server sees. It needs
//! `scripts/test-deps.sh` and says so if `.test-env` is missing.
//!
//! Hand-rolled (`harness = false`) rather than criterion: the quantities are whole-process
//! figures (a session's wall time, a child's peak RSS) that must come from the same run.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");
const FIXTURE: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-files");
const RELAY: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-relay");
const CALLS: usize = 10_000;
const BIG: usize = 10 * 1024 * 1024;

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Session {
    fn start(mut cmd: Command) -> Session {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("start");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().unwrap());
        let mut s = Session {
            child,
            stdin,
            stdout,
            line: String::with_capacity(BIG + 1024),
        };
        s.roundtrip(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
        );
        s.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send one request and read lines until its answer (the only line expected here).
    fn roundtrip(&mut self, line: &str) -> usize {
        self.send(line);
        self.line.clear();
        let n = self.stdout.read_line(&mut self.line).unwrap();
        assert!(n > 0, "EOF from the server");
        assert!(
            !self.line.contains("\"error\""),
            "error answer: {}",
            &self.line[..self.line.len().min(300)]
        );
        n
    }

    fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

struct Figures {
    median: Duration,
    p99: Duration,
    calls_wall: Duration,
    big_wall: Duration,
    rss_kib: Option<u64>,
    /// Peak RSS after the 10 000 calls, before the 10 MiB result.
    rss_calls_kib: Option<u64>,
}

fn measure(cmd: Command) -> Figures {
    let mut s = Session::start(cmd);
    let echo = |i: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello {i}"}}}}}}"#
        )
    };
    for i in 1..=200 {
        s.roundtrip(&echo(i));
    }
    let mut lat = Vec::with_capacity(CALLS);
    let start = Instant::now();
    for i in 0..CALLS {
        let msg = echo(1000 + i);
        let t = Instant::now();
        s.roundtrip(&msg);
        lat.push(t.elapsed());
    }
    let calls_wall = start.elapsed();
    lat.sort_unstable();
    let rss_calls_kib = s.peak_rss_kib();
    let big_req = format!(
        r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"big","arguments":{{"bytes":{BIG}}}}}}}"#
    );
    let t = Instant::now();
    let n = s.roundtrip(&big_req);
    let big_wall = t.elapsed();
    assert!(n > BIG, "short big answer: {n}");
    let rss_kib = s.peak_rss_kib();
    s.finish();
    Figures {
        median: lat[lat.len() / 2],
        p99: lat[lat.len() * 99 / 100],
        calls_wall,
        big_wall,
        rss_kib,
        rss_calls_kib,
    }
}

fn proxy_cmd(scope: &std::path::Path, extra: &[&str]) -> Command {
    let mut c = Command::new(PROXY);
    // `--pin off`: a benchmark must not write tool pins into the user's state directory.
    c.args(extra)
        .args(["--pin", "off", "--"])
        .arg(FIXTURE)
        .arg(scope);
    c
}

const ROUNDS: usize = 3;

fn relay_cmd(scope: &std::path::Path) -> Command {
    let mut c = Command::new(RELAY);
    c.arg(FIXTURE).arg(scope);
    c
}

fn direct_cmd(scope: &std::path::Path) -> Command {
    let mut c = Command::new(FIXTURE);
    c.arg(scope);
    c
}

type Mode = (&'static str, fn(&std::path::Path) -> Command);

/// What every table compares, in the order it is run (and printed): the first is the baseline.
fn modes() -> [Mode; 4] {
    [
        ("direct", direct_cmd),
        ("byte relay", relay_cmd),
        ("proxy --no-jail", |scope| proxy_cmd(scope, &["--no-jail"])),
        ("proxy (jailed)", |scope| proxy_cmd(scope, &[])),
    ]
}

/// The round whose 10k-call wall is the median of `rounds` (its other figures come with it).
fn median_round(mut rounds: Vec<Figures>) -> Figures {
    rounds.sort_by_key(|f| f.calls_wall);
    rounds.swap_remove(rounds.len() / 2)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs with no args: keep that quick.
    if !std::env::args().any(|a| a == "--bench") {
        println!("proxy bench: run with `cargo bench --bench proxy`");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scope = dir.path().canonicalize().unwrap();
    let modes = modes();
    let mut rounds: Vec<Vec<Figures>> = modes.iter().map(|_| Vec::new()).collect();
    for _ in 0..ROUNDS {
        for (i, (_, cmd)) in modes.iter().enumerate() {
            rounds[i].push(measure(cmd(&scope)));
        }
    }
    let figures: Vec<Figures> = rounds.into_iter().map(median_round).collect();
    let (d, relay) = (&figures[0], &figures[1]);
    println!(
        "\n{ROUNDS} alternating rounds of {CALLS} echo calls + one 10 MiB result; median round shown"
    );
    println!(
        "{:<18} {:>8} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "mode",
        "median",
        "p99",
        "added",
        "10k wall",
        "/direct",
        "/relay",
        "10MiB",
        "/direct",
        "RSS"
    );
    let mib = |k: Option<u64>| {
        k.map(|k| format!("{:.1}MiB", k as f64 / 1024.0))
            .unwrap_or_else(|| "?".into())
    };
    for ((name, _), p) in modes.iter().zip(&figures) {
        let added = p.median.as_secs_f64() * 1e6 - d.median.as_secs_f64() * 1e6;
        let ratio = p.calls_wall.as_secs_f64() / d.calls_wall.as_secs_f64();
        let relay_ratio = p.calls_wall.as_secs_f64() / relay.calls_wall.as_secs_f64();
        let big_ratio = p.big_wall.as_secs_f64() / d.big_wall.as_secs_f64();
        println!(
            "{:<18} {:>6}µs {:>6}µs {:>8.1}µs {:>8}ms {:>8.3}x {:>8.3}x {:>7}ms {:>8.3}x {:>10}",
            name,
            p.median.as_micros(),
            p.p99.as_micros(),
            added,
            p.calls_wall.as_millis(),
            ratio,
            relay_ratio,
            p.big_wall.as_millis(),
            big_ratio,
            mib(p.rss_kib)
        );
    }
    for ((name, _), p) in modes.iter().zip(&figures).skip(2) {
        let relay_ratio = p.calls_wall.as_secs_f64() / relay.calls_wall.as_secs_f64();
        let big_ratio = p.big_wall.as_secs_f64() / d.big_wall.as_secs_f64();
        let rss_ok = p.rss_kib.is_some_and(|k| k <= 15 * 1024);
        println!(
            "  {name}: 10k ≤ 1.15× relay {} | 10MiB ≤ 1.3× direct {} | RSS ≤ 15MiB {} (after the calls, before the 10 MiB result: {})",
            verdict(relay_ratio <= 1.15),
            verdict(big_ratio <= 1.3),
            verdict(rss_ok),
            mib(p.rss_calls_kib)
        );
    }
    quiet_table(&scope);
    startup_table(&scope);
    real_server_table();
}

/// The 10 000 calls again against the fixture with `FIXTURE_QUIET_CALLS` (no stderr line per
/// call): what the proxy costs when it has no server stderr to copy.
fn quiet_table(scope: &std::path::Path) {
    let modes = modes();
    let mut walls: Vec<Vec<Duration>> = modes.iter().map(|_| Vec::new()).collect();
    for _ in 0..ROUNDS {
        for (i, (_, cmd)) in modes.iter().enumerate() {
            let mut cmd = cmd(scope);
            // The jailed proxy scrubs the environment: keep the one variable the fixture reads.
            cmd.env("FIXTURE_QUIET_CALLS", "1");
            if i >= 2 {
                let args: Vec<_> = cmd.get_args().map(|a| a.to_os_string()).collect();
                cmd = Command::new(PROXY);
                cmd.args(["--env-keep", "FIXTURE_QUIET_CALLS"]).args(args);
                cmd.env("FIXTURE_QUIET_CALLS", "1");
            }
            walls[i].push(measure(cmd).calls_wall);
        }
    }
    let medians: Vec<Duration> = walls
        .iter_mut()
        .map(|w| {
            w.sort_unstable();
            w[w.len() / 2]
        })
        .collect();
    println!("\nquiet server (no stderr line per call): {CALLS} echo calls, median of {ROUNDS} alternating rounds");
    println!("{:<18} {:>10} {:>10}", "mode", "10k wall", "/relay");
    for ((name, _), m) in modes.iter().zip(&medians) {
        println!(
            "{:<18} {:>8}ms {:>9.3}x",
            name,
            m.as_millis(),
            m.as_secs_f64() / medians[1].as_secs_f64()
        );
    }
}

const STARTS: usize = 30;

/// Spawn → `initialize` answer → `tools/list` answer, alternating direct / relay / proxy starts
/// so drift lands on all alike; medians and the time each adds over direct.
fn startup_table(scope: &std::path::Path) {
    let modes = modes();
    let mut times: Vec<Vec<Duration>> = modes.iter().map(|_| Vec::new()).collect();
    for _ in 0..STARTS {
        for (i, (_, cmd)) in modes.iter().enumerate() {
            let t = Instant::now();
            let mut s = Session::start(cmd(scope));
            s.roundtrip(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
            times[i].push(t.elapsed());
            s.finish();
        }
    }
    let medians: Vec<Duration> = times
        .iter_mut()
        .map(|t| {
            t.sort_unstable();
            t[t.len() / 2]
        })
        .collect();
    println!("\nstart-up: spawn → initialize → tools/list answered, median of {STARTS} alternating starts");
    println!("{:<18} {:>10} {:>10}", "mode", "median", "added");
    for ((name, _), m) in modes.iter().zip(&medians) {
        let added = m.as_secs_f64() * 1e3 - medians[0].as_secs_f64() * 1e3;
        println!(
            "{:<18} {:>8.2}ms {:>8.2}ms",
            name,
            m.as_secs_f64() * 1e3,
            added
        );
    }
    let jailed_added = medians[3].as_secs_f64() * 1e3 - medians[0].as_secs_f64() * 1e3;
    println!(
        "  target: jailed proxy adds ≤ 3 ms {}",
        verdict(jailed_added <= 3.0)
    );
}

const REAL_CALLS: usize = 2_000;

/// Sequential `read_text_file` round-trips against a real server: (median, wall of all calls).
fn measure_reads(cmd: Command, file: &std::path::Path) -> (Duration, Duration) {
    let mut s = Session::start(cmd);
    let read = |i: usize| {
        serde_json::json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "read_text_file", "arguments": {"path": file}}})
        .to_string()
    };
    // Warm-up (also lets the proxy's own tools/list prefetch finish).
    for i in 1..=100 {
        s.roundtrip(&read(i));
    }
    let mut lat = Vec::with_capacity(REAL_CALLS);
    let start = Instant::now();
    for i in 0..REAL_CALLS {
        let msg = read(1000 + i);
        let t = Instant::now();
        s.roundtrip(&msg);
        lat.push(t.elapsed());
    }
    let wall = start.elapsed();
    s.finish();
    lat.sort_unstable();
    (lat[lat.len() / 2], wall)
}

fn real_server_table() {
    let server = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/.test-env/node/node_modules/.bin/mcp-server-filesystem"
    );
    if !std::path::Path::new(server).exists() {
        println!("\nserver-filesystem table: {server} is missing; run scripts/test-deps.sh");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scope = dir.path().canonicalize().unwrap();
    let file = scope.join("note.txt");
    std::fs::write(&file, "a short note\n").unwrap();
    let mut direct = Command::new(server);
    direct.arg(&scope);
    let real_proxy = |extra: &[&str]| {
        let mut c = Command::new(PROXY);
        c.args(extra)
            .args(["--pin", "off", "--", server])
            .arg(&scope);
        c
    };
    println!(
        "\nreal server: @modelcontextprotocol/server-filesystem, {REAL_CALLS} sequential read_text_file calls"
    );
    println!(
        "{:<18} {:>10} {:>10} {:>12} {:>10}",
        "mode", "median", "added", "wall", "ratio"
    );
    let (d_median, d_wall) = measure_reads(direct, &file);
    println!(
        "{:<18} {:>8}µs {:>10} {:>10}ms {:>10}",
        "direct",
        d_median.as_micros(),
        "-",
        d_wall.as_millis(),
        "-"
    );
    for (name, cmd) in [
        ("proxy --no-jail", real_proxy(&["--no-jail"])),
        ("proxy (jailed)", real_proxy(&[])),
    ] {
        let (median, wall) = measure_reads(cmd, &file);
        let added = median.as_secs_f64() * 1e6 - d_median.as_secs_f64() * 1e6;
        println!(
            "{:<18} {:>8}µs {:>8.1}µs {:>10}ms {:>9.3}x",
            name,
            median.as_micros(),
            added,
            wall.as_millis(),
            wall.as_secs_f64() / d_wall.as_secs_f64()
        );
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "MISSED"
    }
}
