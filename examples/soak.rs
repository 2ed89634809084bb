//! The soak (issue 14): `CALLS` (default 1 000 000) echo calls through the jailed
//! `mcpjail-proxy` against the quiet files fixture, pipelined, with the proxy's RSS, open
//! descriptors and latency percentiles per window; then a notification storm and a server
//! writing a line that never ends, with the proxy's peak memory. Prints a table and a verdict;
//! exits 1 if memory or descriptors fail it (latency is reported, not judged: these machines
//! are shared). Run through `scripts/soak.sh`, which builds what it needs.
//!
//! Knobs (environment): `SOAK_WINDOW` answers per sample (50 000), `SOAK_IN_FLIGHT`
//! unanswered calls at most (32), `SOAK_WARMUP` windows before the baseline (2),
//! `SOAK_STORM` notifications of each kind (100 000), `SOAK_FLOOD_MIB` bytes of the endless
//! line (512), `SOAK_MAX_LINE` the proxy's `--max-line-bytes` for it (1 MiB; the proxy's
//! default is 64 MiB, which the line's buffer reaches before it is dropped).

#[path = "../tests/soak_support/mod.rs"]
mod soak_support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde_json::json;
use soak_support::{memory_case, run_calls, verdict, Window};

fn knob(name: &str, default: usize) -> Result<usize, String> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a number (hint: e.g. {name}={default})")),
        Err(_) => Ok(default),
    }
}

/// The binaries next to this example (`target/<profile>/examples/soak` →
/// `target/<profile>/`).
fn bin(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot find the target directory")?;
    let p = dir.join(name);
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "{} is missing (hint: cargo build --bins first, or run scripts/soak.sh)",
            p.display()
        ))
    }
}

fn proxy_over(
    server: &Path,
    scratch: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<Command, String> {
    let mut c = Command::new(bin("mcpjail-proxy")?);
    c.args(extra);
    for (k, _) in env {
        c.args(["--env-keep", k]);
    }
    c.arg("--").arg(server).arg(scratch.join("scope"));
    c.current_dir(scratch.join("scope"))
        .env("HOME", scratch.join("home"))
        .env("XDG_STATE_HOME", scratch.join("state"))
        .env("XDG_CONFIG_HOME", scratch.join("config"))
        .env("NO_COLOR", "1")
        .stderr(Stdio::inherit());
    for (k, v) in env {
        c.env(k, v);
    }
    Ok(c)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, String> {
    let calls: usize = match std::env::args().nth(1) {
        Some(a) => a
            .replace('_', "")
            .parse()
            .map_err(|_| format!("CALLS {a:?} is not a number (hint: soak 1000000)"))?,
        None => 1_000_000,
    };
    let window = knob("SOAK_WINDOW", 50_000)?.min(calls).max(1);
    let in_flight = knob("SOAK_IN_FLIGHT", 32)?;
    let warmup = knob("SOAK_WARMUP", 2)?;
    let storm = knob("SOAK_STORM", 100_000)?;
    let flood_mib = knob("SOAK_FLOOD_MIB", 512)?;

    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    for sub in ["scope", "home", "state", "config"] {
        std::fs::create_dir(scratch.path().join(sub)).map_err(|e| e.to_string())?;
    }
    let files = bin("mcpjail-fixture-files")?;
    let fault = bin("mcpjail-fixture-fault")?;

    println!(
        "soak: {calls} calls through the jailed proxy, {in_flight} in flight, a sample every \
         {window} answers (warm-up: {warmup} windows)"
    );
    println!(
        "{:>9} {:>9} {:>5} {:>8} {:>8} {:>8}",
        "calls", "RSS KiB", "fds", "p50 µs", "p99 µs", "max µs"
    );
    let cmd = proxy_over(&files, scratch.path(), &[], &[("FIXTURE_QUIET_CALLS", "1")])?;
    let started = std::time::Instant::now();
    let (samples, status) = run_calls(cmd, calls, window, in_flight, |w: &Window| {
        println!(
            "{:>9} {:>9} {:>5} {:>8} {:>8} {:>8}",
            w.calls, w.rss_kib, w.fds, w.p50_us, w.p99_us, w.max_us
        )
    })?;
    let wall = started.elapsed();
    let v = verdict(&samples, warmup, 1024);
    println!(
        "{calls} calls in {:.1} s ({:.0} calls/s); proxy exit status {status}",
        wall.as_secs_f64(),
        calls as f64 / wall.as_secs_f64()
    );
    let mark = |ok: bool| if ok { "PASS" } else { "FAIL" };
    println!(
        "  RSS after warm-up within ±1 MiB: {} (largest deviation {} KiB)",
        mark(v.rss_ok),
        v.rss_spread_kib
    );
    println!(
        "  no descriptor growth: {} (largest growth {})",
        mark(v.fds_ok),
        v.fd_growth
    );
    println!(
        "  p99 last window / first after warm-up: {:.2}x (reported, not judged: shared machine)",
        v.p99_ratio
    );

    let s = memory_case(
        proxy_over(&fault, scratch.path(), &[], &[])?,
        "storm",
        json!({ "count": storm }),
    )?;
    let storm_growth = s.peak_kib.saturating_sub(s.before_kib);
    let lists = s
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("FIXTURE-FAULT-LISTS "))
        .unwrap_or("?")
        .to_string();
    let storm_ok = storm_growth <= 32 * 1024 && s.notifications == 2 * storm;
    println!(
        "storm: {storm} tools/list_changed + {storm} notifications/message: RSS {} KiB before, \
         peak {} KiB (+{storm_growth} KiB), {} KiB after; client got {} notifications; the \
         server was listed {lists} times: {}",
        s.before_kib,
        s.peak_kib,
        s.after_kib,
        s.notifications,
        mark(storm_ok)
    );

    let max_line = knob("SOAK_MAX_LINE", 1 << 20)?;
    let f = memory_case(
        proxy_over(
            &fault,
            scratch.path(),
            &["--max-line-bytes", &max_line.to_string()],
            &[],
        )?,
        "flood",
        json!({ "bytes": (flood_mib as u64) << 20 }),
    )?;
    let flood_growth = f.peak_kib.saturating_sub(f.before_kib);
    let named = f.stderr.contains("longer than --max-line-bytes");
    let failed = f.answer.get("error").is_some();
    // Bounded by the maximum a line may be buffered to (twice it, for the buffer's growth).
    let flood_ok = flood_growth as usize <= 16 * 1024 + 2 * max_line / 1024 && named && failed;
    println!(
        "endless line: {flood_mib} MiB without a newline, --max-line-bytes {max_line}: RSS {} KiB \
         before, peak {} KiB (+{flood_growth} KiB); named on stderr while it lasted: {named}; \
         the call failed with an error: {failed}: {}",
        f.before_kib,
        f.peak_kib,
        mark(flood_ok)
    );
    Ok(v.rss_ok && v.fds_ok && storm_ok && flood_ok)
}
