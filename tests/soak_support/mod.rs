//! The soak driver, shared by `examples/soak.rs` (one million calls, `scripts/soak.sh`) and
//! `tests/soak.rs` (a bounded run in CI): drives a real `mcpjail-proxy` with pipelined
//! `tools/call`s (at most `in_flight` unanswered), and after every `window` answers samples the
//! proxy's resident memory (`/proc/PID/status` VmRSS) and open descriptors (`/proc/PID/fd`)
//! and the window's latency percentiles. Also the two memory-bound cases: a notification
//! storm (`notifications/tools/list_changed`, which makes the proxy list the tools again, and
//! `notifications/message`) and a server writing a line that never ends.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// One sample, taken after a window of answers.
#[derive(Debug, Clone)]
pub struct Window {
    /// Answers so far.
    pub calls: usize,
    pub rss_kib: u64,
    pub fds: usize,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

pub fn initialize(
    stdin: &mut impl Write,
    stdout: &mut BufReader<ChildStdout>,
) -> Result<(), String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "soak", "version": "0"}}});
    writeln!(stdin, "{init}").map_err(|e| e.to_string())?;
    stdin.flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    stdout.read_line(&mut line).map_err(|e| e.to_string())?;
    if !line.contains("\"result\"") {
        return Err(format!("initialize failed: {line}"));
    }
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .map_err(|e| e.to_string())?;
    Ok(())
}

fn spawn(mut cmd: Command) -> Result<Child, String> {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    cmd.spawn()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))
}

/// `calls` echo calls through the proxy `cmd` starts (its server must have an `echo` tool),
/// at most `in_flight` unanswered; `on_window` sees each sample as it is taken. Returns the
/// samples and the proxy's exit status after the client closes.
pub fn run_calls(
    cmd: Command,
    calls: usize,
    window: usize,
    in_flight: usize,
    mut on_window: impl FnMut(&Window),
) -> Result<(Vec<Window>, i32), String> {
    let mut child = spawn(cmd)?;
    let pid = child.id();
    let mut stdin = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    initialize(&mut stdin, &mut stdout)?;

    let start = Instant::now();
    let sent: Arc<Vec<AtomicU64>> = Arc::new((0..calls).map(|_| AtomicU64::new(0)).collect());
    let (credit_tx, credit_rx) = mpsc::channel::<()>();
    for _ in 0..in_flight.max(1) {
        credit_tx.send(()).map_err(|e| e.to_string())?;
    }
    let writer_sent = sent.clone();
    let writer = std::thread::spawn(move || -> Result<(), String> {
        for i in 0..calls {
            // Flush only when about to wait for a credit: one write per burst, and never a
            // call left sitting in the buffer while the window is full.
            match credit_rx.try_recv() {
                Ok(()) => {}
                Err(mpsc::TryRecvError::Empty) => {
                    stdin.flush().map_err(|e| e.to_string())?;
                    credit_rx
                        .recv()
                        .map_err(|_| "the reader stopped".to_string())?;
                }
                Err(mpsc::TryRecvError::Disconnected) => return Err("the reader stopped".into()),
            }
            writer_sent[i].store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let msg = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"soak-{i}\"}}}}}}\n",
                i + 1
            );
            stdin.write_all(msg.as_bytes()).map_err(|e| e.to_string())?;
        }
        stdin.flush().map_err(|e| e.to_string())?;
        // Keep stdin open until the reader has every answer (it then drops the sender):
        // closing it ends the session.
        while credit_rx.recv().is_ok() {}
        drop(stdin);
        Ok(())
    });

    let mut samples = Vec::new();
    let mut lat: Vec<u64> = Vec::with_capacity(window);
    let mut answered = 0usize;
    let mut line = String::new();
    while answered < calls {
        line.clear();
        let n = stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!("the proxy closed stdout after {answered} answers"));
        }
        let now = start.elapsed().as_nanos() as u64;
        let msg: Value =
            serde_json::from_str(&line).map_err(|e| format!("bad JSON {e}: {line}"))?;
        let Some(id) = msg.get("id").and_then(Value::as_u64) else {
            continue; // a notification
        };
        let i = (id as usize)
            .checked_sub(1)
            .filter(|&i| i < calls)
            .ok_or_else(|| format!("an answer to an id never sent: {line}"))?;
        let want = format!("soak-{i}");
        if msg
            .pointer("/result/content/0/text")
            .and_then(Value::as_str)
            != Some(&want)
        {
            return Err(format!("wrong answer to call {i}: {line}"));
        }
        lat.push(now.saturating_sub(sent[i].load(Ordering::Relaxed)) / 1000);
        answered += 1;
        let _ = credit_tx.send(());
        if lat.len() == window || answered == calls {
            lat.sort_unstable();
            let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
            let w = Window {
                calls: answered,
                rss_kib: status_kib(pid, "VmRSS").unwrap_or(0),
                fds: fd_count(pid),
                p50_us: pct(0.50),
                p99_us: pct(0.99),
                max_us: *lat.last().unwrap_or(&0),
            };
            on_window(&w);
            samples.push(w);
            lat.clear();
        }
    }
    drop(credit_tx);
    writer
        .join()
        .map_err(|_| "the writer panicked".to_string())??;
    let status = child.wait().map_err(|e| e.to_string())?;
    Ok((samples, status.code().unwrap_or(-1)))
}

/// The verdict on a run's samples after `warmup` windows: RSS within `rss_band_kib` of its
/// first post-warm-up value, descriptors never above it, and the last window's p99 against
/// the first post-warm-up window's (reported, not judged: the machine may be shared).
pub struct Verdict {
    pub rss_spread_kib: i64,
    pub rss_ok: bool,
    pub fd_growth: i64,
    pub fds_ok: bool,
    pub p99_ratio: f64,
}

pub fn verdict(samples: &[Window], warmup: usize, rss_band_kib: i64) -> Verdict {
    let after = &samples[warmup.min(samples.len().saturating_sub(1))..];
    let base = &after[0];
    let rss_spread_kib = after
        .iter()
        .map(|w| (w.rss_kib as i64 - base.rss_kib as i64).abs())
        .max()
        .unwrap_or(0);
    let fd_growth = after
        .iter()
        .map(|w| w.fds as i64 - base.fds as i64)
        .max()
        .unwrap_or(0);
    let last = after.last().unwrap_or(base);
    Verdict {
        rss_spread_kib,
        rss_ok: rss_spread_kib <= rss_band_kib,
        fd_growth,
        fds_ok: fd_growth <= 0,
        p99_ratio: last.p99_us as f64 / base.p99_us.max(1) as f64,
    }
}

/// What a storm or an endless line did to the proxy's memory.
#[derive(Debug)]
pub struct MemoryCase {
    /// VmRSS after the handshake and one call.
    pub before_kib: u64,
    /// VmHWM (peak) after the case.
    pub peak_kib: u64,
    pub after_kib: u64,
    /// Notifications the client received (storm).
    pub notifications: usize,
    /// The proxy's stderr (the server's passes through it).
    pub stderr: String,
    /// The answer to the storm / flood call.
    pub answer: Value,
    pub status: i32,
}

/// Start `cmd` (a proxy over the fault fixture), handshake, one echo, then call `tool` with
/// `args`; after the answer (or, for `flood`, once the server reports the line written)
/// sample the memory, then close the client's side.
pub fn memory_case(mut cmd: Command, tool: &str, args: Value) -> Result<MemoryCase, String> {
    cmd.stderr(Stdio::piped());
    let mut child = spawn(cmd)?;
    let pid = child.id();
    let mut stdin = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (etx, erx) = mpsc::channel::<String>();
    let err_thread = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            all.push_str(&line);
            all.push('\n');
            let _ = etx.send(line);
        }
        all
    });
    initialize(&mut stdin, &mut stdout)?;
    let call = |id: u64, tool: &str, args: &Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": args}})
    };
    writeln!(stdin, "{}", call(1, "echo", &json!({"text": "warm"}))).map_err(|e| e.to_string())?;
    stdin.flush().map_err(|e| e.to_string())?;
    let mut notifications = 0;
    let mut answer_to = |want: u64, stdout: &mut BufReader<ChildStdout>| -> Result<Value, String> {
        let mut line = String::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err(format!("stdout closed before the answer to {want}"));
            }
            let msg: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if msg.get("id").and_then(Value::as_u64) == Some(want) {
                return Ok(msg);
            }
            if msg.get("method").is_some() {
                notifications += 1;
            }
        }
    };
    answer_to(1, &mut stdout)?;
    let before_kib = status_kib(pid, "VmRSS").unwrap_or(0);
    writeln!(stdin, "{}", call(2, tool, &args)).map_err(|e| e.to_string())?;
    stdin.flush().map_err(|e| e.to_string())?;
    // Memory is sampled while the client's side is still open, so the proxy is surely alive:
    // once it has exited its /proc status has no memory lines, and a zero read there would
    // pass every bound (a race CI once lost: the proxy answered and exited before the read).
    let sample = |field: &str| {
        status_kib(pid, field).ok_or_else(|| format!("no {field} for the proxy: it has exited"))
    };
    let (answer, peak_kib, after_kib) = if tool == "flood" {
        // The line never ends: wait until the server has written all of it (so the proxy has
        // read all but what one pipe holds), then end the session; the flood call must then be
        // answered with an error.
        let hang = Duration::from_secs(120);
        loop {
            let line = erx
                .recv_timeout(hang)
                .map_err(|_| "the server never reported the flood written".to_string())?;
            if line.contains("FIXTURE-FLOOD-DONE") {
                break;
            }
        }
        let (peak, after) = (sample("VmHWM")?, sample("VmRSS")?);
        drop(stdin);
        let answer = answer_to(2, &mut stdout)?;
        // The pipe's last bytes may have been read since: a later peak, if there still is one.
        let peak = status_kib(pid, "VmHWM").map_or(peak, |later| later.max(peak));
        (answer, peak, after)
    } else {
        let answer = answer_to(2, &mut stdout)?;
        let (peak, after) = (sample("VmHWM")?, sample("VmRSS")?);
        drop(stdin);
        (answer, peak, after)
    };
    // Notifications still queued behind the answer.
    let mut rest = String::new();
    loop {
        rest.clear();
        if stdout.read_line(&mut rest).map_err(|e| e.to_string())? == 0 {
            break;
        }
        if rest.contains("\"method\"") {
            notifications += 1;
        }
    }
    let status = child
        .wait()
        .map_err(|e| e.to_string())?
        .code()
        .unwrap_or(-1);
    let stderr = err_thread.join().unwrap_or_default();
    Ok(MemoryCase {
        before_kib,
        peak_kib,
        after_kib,
        notifications,
        stderr,
        answer,
        status,
    })
}
