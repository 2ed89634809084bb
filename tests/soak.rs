//! The soak, bounded for CI (the million-call run is `scripts/soak.sh`): pipelined calls
//! through the jailed proxy with flat memory and no descriptor growth; a notification storm
//! and a server writing a line that never ends, with the proxy's peak memory bounded and the
//! endless line failed with a clear error.

#[path = "soak_support/mod.rs"]
mod soak_support;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;
use soak_support::{memory_case, run_calls, verdict};

const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");
const FILES: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-files");
const FAULTY: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-fault");

fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["scope", "home", "state", "config"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    dir
}

fn proxy_over(server: &str, dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(PROXY);
    c.args(extra);
    for (k, _) in env {
        c.args(["--env-keep", k]);
    }
    c.arg("--").arg(server).arg(dir.join("scope"));
    c.current_dir(dir.join("scope"))
        .env("HOME", dir.join("home"))
        .env("XDG_STATE_HOME", dir.join("state"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("NO_COLOR", "1")
        .stderr(Stdio::inherit());
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

#[test]
fn twenty_thousand_pipelined_calls_keep_memory_flat_and_descriptors_constant() {
    let dir = scratch();
    let cmd = proxy_over(FILES, dir.path(), &[], &[("FIXTURE_QUIET_CALLS", "1")]);
    let (samples, status) = run_calls(cmd, 20_000, 4_000, 32, |w| println!("{w:?}")).unwrap();
    assert_eq!(status, 0);
    assert_eq!(samples.len(), 5);
    assert!(
        samples.iter().all(|w| w.rss_kib > 0 && w.fds > 0),
        "{samples:?}"
    );
    let v = verdict(&samples, 1, 1024);
    assert!(v.fds_ok, "descriptors grew by {}: {samples:?}", v.fd_growth);
    assert!(
        v.rss_ok,
        "RSS moved {} KiB after warm-up: {samples:?}",
        v.rss_spread_kib
    );
}

#[test]
fn a_list_changed_storm_is_coalesced_and_memory_stays_bounded() {
    let dir = scratch();
    let storm = 20_000;
    let s = memory_case(
        proxy_over(FAULTY, dir.path(), &[], &[]),
        "storm",
        json!({ "count": storm }),
    )
    .unwrap();
    println!("{s:?}");
    assert_eq!(s.status, 0);
    assert_eq!(s.answer["result"]["content"][0]["text"], "storm done");
    // Every notification reaches the client: nothing is dropped to save memory.
    assert_eq!(s.notifications, 2 * storm);
    // The proxy lists the tools again on list_changed, but one fetch in flight at a time and
    // one more after it: a handful of listings, not one per notification.
    let lists: usize = s
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("FIXTURE-FAULT-LISTS "))
        .and_then(|n| n.parse().ok())
        .expect("the fixture reports its listings");
    assert!(
        (2..=50).contains(&lists),
        "{lists} listings for {storm} notifications"
    );
    let growth = s.peak_kib.saturating_sub(s.before_kib);
    assert!(
        growth <= 16 * 1024,
        "peak grew by {growth} KiB during the storm"
    );
}

#[test]
fn an_endless_line_is_dropped_as_it_arrives_and_the_call_fails_with_a_clear_error() {
    let dir = scratch();
    let max = 1 << 20;
    let f = memory_case(
        proxy_over(
            FAULTY,
            dir.path(),
            &["--max-line-bytes", &max.to_string()],
            &[],
        ),
        "flood",
        json!({ "bytes": 64u64 << 20 }),
    )
    .unwrap();
    let growth = f.peak_kib.saturating_sub(f.before_kib);
    println!("growth {growth} KiB; answer {}", f.answer);
    assert!(growth <= 8 * 1024, "peak grew by {growth} KiB for 64 MiB");
    assert!(
        f.stderr.contains("longer than --max-line-bytes") && f.stderr.contains("hint:"),
        "{}",
        f.stderr
    );
    assert!(f.answer.get("error").is_some(), "{}", f.answer);
    assert_eq!(f.status, 0);

    // Control: the same measure sees a line that *is* kept (under a 24 MiB maximum) grow it.
    let big = 24 << 20;
    let c = memory_case(
        proxy_over(
            FAULTY,
            dir.path(),
            &["--max-line-bytes", &big.to_string()],
            &[],
        ),
        "flood",
        json!({ "bytes": 20u64 << 20 }),
    )
    .unwrap();
    let kept = c.peak_kib.saturating_sub(c.before_kib);
    assert!(
        kept >= 16 * 1024,
        "a 20 MiB line buffered shows as {kept} KiB"
    );
}

#[test]
fn a_client_line_that_never_ends_is_dropped_as_it_arrives_and_refused_at_its_end() {
    use std::io::{BufRead, BufReader, Write};
    let dir = scratch();
    let mut cmd = proxy_over(FAULTY, dir.path(), &["--max-line-bytes", "1048576"], &[]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    )
    .unwrap();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    let before = soak_support::status_kib(pid, "VmRSS").unwrap();
    // 64 MiB of one line; each write returns only once the proxy has read the pipe's share.
    let chunk = vec![b'y'; 1 << 20];
    for _ in 0..64 {
        stdin.write_all(&chunk).unwrap();
    }
    let peak = soak_support::status_kib(pid, "VmHWM").unwrap();
    stdin.write_all(b"\n").unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    )
    .unwrap();
    line.clear();
    stdout.read_line(&mut line).unwrap();
    let refusal: serde_json::Value = serde_json::from_str(&line).unwrap();
    let msg = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("over the proxy's limit"), "{line}");
    line.clear();
    stdout.read_line(&mut line).unwrap();
    assert!(
        line.contains("\"id\":2") && line.contains("result"),
        "{line}"
    );
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let growth = peak.saturating_sub(before);
    assert!(
        growth <= 8 * 1024,
        "peak grew by {growth} KiB for a 64 MiB line"
    );
}

#[test]
fn a_client_that_stops_reading_during_a_storm_bounds_memory_and_loses_nothing() {
    use std::io::{BufRead, BufReader, Write};
    use std::os::fd::AsRawFd;
    let dir = scratch();
    let mut cmd = proxy_over(FAULTY, dir.path(), &[], &[]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let out = child.stdout.take().unwrap();
    let fd = out.as_raw_fd();
    let mut stdout = BufReader::new(out);
    soak_support::initialize(&mut stdin, &mut stdout).unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    )
    .unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let before = soak_support::status_kib(pid, "VmRSS").unwrap();
    let storm = 50_000; // 100 000 notifications, about 10 MiB: more than every queue holds
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "storm", "arguments": {"count": storm}}})
    )
    .unwrap();
    // The client is stalled: it reads nothing until the proxy has filled the pipe to it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let mut queued: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        assert_eq!(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut queued) }, 0);
        // (A full pipe holds a little under its 64 KiB: whole lines do not fill every page.)
        if queued >= 56 * 1024 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the pipe never filled: {queued} bytes in it"
        );
        std::thread::yield_now();
    }
    let stalled_peak = soak_support::status_kib(pid, "VmHWM").unwrap();
    // Now it reads again: every notification and the answer arrive.
    let mut notifications = 0;
    loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "stdout closed early"
        );
        if line.contains("\"id\":2") {
            break;
        }
        notifications += 1;
    }
    assert!(line.contains("storm done"), "{line}");
    assert_eq!(notifications, 2 * storm);
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let growth = stalled_peak.saturating_sub(before);
    // The outbox stops reading the server at 1 MiB queued (8 MiB for the client's own).
    assert!(
        growth <= 12 * 1024,
        "peak grew by {growth} KiB while the client was stalled"
    );
}
