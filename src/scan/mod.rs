//! The Laundering Scan: run a server, call every tool with hostile path arguments, trace the
//! syscalls it really makes, and compare what it declares with what it does.
//!
//! ```text
//!   sandbox (canaries, scope) ─► safety jail + tracer ─► client: control + hostile calls
//!                                        │                         │
//!                                        └── accesses per phase ───┴─► verdict ─► report
//! ```
//!
//! * [`sandbox`] builds the throwaway tree (HOME with canaries, a scope with an escaping
//!   symlink) and remaps the server's argv paths into it.
//! * [`tracer`] is the ptrace + seccomp-bpf tracer (Linux x86_64).
//! * [`corpus`] holds the hostile values (`corpus.toml`) and fills control arguments.
//! * [`verdict`] classifies accesses and decides; [`report`] renders text, JSON, SARIF and
//!   the badge.
//!
//! Safety: the traced run is inside the jail ([`crate::sandbox::prepare_with_env`]) with a
//! scope of exactly the scan sandbox, read-write: destructive tools are called too, and their
//! writes can only land there; the real HOME is not granted (unreadable), the network is off.
//! The optional jail pass runs the same calls through `mcpjail proxy` (the product as users
//! run it), traced too, and checks that no out-of-scope access succeeds and that the control
//! calls still work.
//!
//! This module owns no CLI types; `cli::scan` resolves settings into [`ScanOptions`].

pub mod badge;
pub mod client;
pub mod corpus;
pub mod learn;
pub mod report;
pub mod sandbox;
pub mod tracer;
pub mod verdict;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::policy::{Scope, ScopeEntry, ScopeSource, ServerCommand};
use client::{CallOutcome, McpClient};
use sandbox::ScanSandbox;
use tracer::Access;
use verdict::{Classifier, Evidence, ProbeRecord, ToolVerdict, Verdict};

/// What to scan and how.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// The server command (program first).
    pub command: Vec<String>,
    /// Where relative parts of the command are resolved.
    pub cwd: PathBuf,
    /// A display name (default: derived from the command).
    pub name: Option<String>,
    /// Per call (and for start-up).
    pub timeout: Duration,
    /// The environment the server would get from its client (scrubbed by the jail).
    pub env: Vec<(OsString, OsString)>,
    /// Extra variables for the server (a client config's `env`), kept through the scrub.
    pub server_env: Vec<(String, String)>,
    /// `mcpjail` to run the jail pass with (`None`: no jail pass).
    pub jail_pass_with: Option<PathBuf>,
    /// Only the first N probes per path argument (`None`: all).
    pub max_probes: Option<usize>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    #[error("syscall tracing is only supported on Linux x86_64")]
    Unsupported,
    #[error("cannot build the scan sandbox: {0}")]
    Sandbox(std::io::Error),
    #[error("cannot jail the server for the scan: {0}")]
    Jail(#[from] crate::sandbox::SandboxError),
    #[error("cannot start the server under the tracer: {0}")]
    Spawn(std::io::Error),
    #[error("the server did not start: {0}\n{stderr}", stderr = tail(.1, 2000))]
    Start(String, String),
}

fn tail(s: &str, n: usize) -> &str {
    let mut start = s.len().saturating_sub(n);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Who was scanned.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ServerIdentity {
    pub name: String,
    pub command: Vec<String>,
    /// The command as run (argv paths remapped into the scan scope).
    pub scanned_command: Vec<String>,
    pub remapped: Vec<String>,
    /// `serverInfo` from `initialize`.
    pub server_info: Value,
    /// SHA-256 over the sorted `name:pin-hash` lines of every tool (the pin digest of
    /// `mcpjail pin`), so a scan names exactly the tool definitions it judged.
    pub tools_digest: String,
}

/// The jail pass: the same calls through `mcpjail proxy`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JailPass {
    /// Every out-of-scope access blocked and no canary leaked.
    pub holds: bool,
    pub calls: usize,
    /// Out-of-scope attempts refused (by the proxy or the kernel): the ones the tracer saw
    /// refused by the kernel.
    pub blocked_attempts: usize,
    /// Hostile calls answered with an error (by the proxy's argument check or the server).
    pub refused_calls: usize,
    /// Out-of-scope accesses that succeeded through the jail (must be empty).
    pub escaped: Vec<Evidence>,
    /// Calls whose result carried a canary token (must be empty).
    pub leaked: Vec<String>,
    /// Control calls that worked in the traced run.
    pub controls_ok_traced: usize,
    /// ...and through the jail.
    pub controls_ok_jailed: usize,
    /// Tools whose control call worked traced but failed jailed.
    pub controls_broken_by_jail: Vec<String>,
    pub error: Option<String>,
}

/// The whole scan result: what `--format json` prints (see docs/scan-report.md).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ScanReport {
    pub schema: &'static str,
    pub scanner: String,
    pub server: ServerIdentity,
    pub verdict: Verdict,
    pub exfiltrated: bool,
    pub tools: Vec<ToolVerdict>,
    /// Out-of-scope accesses at start-up.
    pub startup: Vec<Evidence>,
    pub startup_accesses: usize,
    pub traced_accesses: usize,
    pub jail_pass: Option<JailPass>,
    pub probes: Vec<ProbeRecord>,
    /// The server's stderr (last 64 KiB), kept here rather than on the terminal.
    pub stderr: String,
    pub sandbox: SandboxInfo,
    pub duration_ms: u128,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SandboxInfo {
    pub root: PathBuf,
    pub scope: PathBuf,
    pub home: PathBuf,
    pub canaries: Vec<sandbox::Canary>,
}

/// Progress callbacks for a terminal progress bar.
pub trait Progress: Send {
    fn start(&mut self, total: u64);
    fn step(&mut self, label: &str);
    fn finish(&mut self);
}

/// No progress output.
pub struct NoProgress;
impl Progress for NoProgress {
    fn start(&mut self, _: u64) {}
    fn step(&mut self, _: &str) {}
    fn finish(&mut self) {}
}

/// One planned call.
#[derive(Debug, Clone)]
struct Planned {
    tool: String,
    argument: Option<String>,
    probe: String,
    value: Option<String>,
    args: Value,
}

/// The tools digest (see [`ServerIdentity::tools_digest`]).
pub fn tools_digest(tools: &[Value]) -> String {
    let mut lines: Vec<String> = tools
        .iter()
        .map(|t| {
            format!(
                "{}:{}",
                t.get("name").and_then(Value::as_str).unwrap_or(""),
                crate::policy::pins::tool_hash(t)
            )
        })
        .collect();
    lines.sort();
    hex::encode(Sha256::digest(lines.join("\n").as_bytes()))
}

fn plan(tools: &[Value], sb: &ScanSandbox, max_probes: Option<usize>) -> Vec<Planned> {
    let probes = corpus::probes();
    let take = max_probes.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for tool in tools {
        let name = tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (control, path_args) = corpus::control_arguments(tool, sb);
        out.push(Planned {
            tool: name.clone(),
            argument: None,
            probe: "control".into(),
            value: None,
            args: control.clone(),
        });
        for pattern in &path_args {
            for p in probes.iter().take(take) {
                let value = p.render(sb);
                out.push(Planned {
                    tool: name.clone(),
                    argument: Some(pattern.clone()),
                    probe: p.id.clone(),
                    args: corpus::hostile_arguments(&control, pattern, &value),
                    value: Some(value),
                });
            }
        }
    }
    out
}

fn path_args_of(tools: &[Value], sb: &ScanSandbox) -> Vec<(String, Vec<String>)> {
    tools
        .iter()
        .map(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or("").into();
            (name, corpus::control_arguments(t, sb).1)
        })
        .collect()
}

/// Program and script paths made absolute: the server runs with the scope as its cwd.
fn absolutize(argv: &[String], cwd: &Path) -> Vec<String> {
    let cmd = ServerCommand::parse(argv);
    let mut runtime = cmd.runtime_arg_indexes();
    runtime.push(0);
    argv.iter()
        .enumerate()
        .map(|(i, a)| {
            if runtime.contains(&i) && a.contains('/') && !Path::new(a).is_absolute() {
                cwd.join(a).display().to_string()
            } else {
                a.clone()
            }
        })
        .collect()
}

/// A running server (traced) with its client.
struct Session {
    traced: tracer::Traced,
    client: McpClient<tokio::process::ChildStdin, tokio::process::ChildStdout>,
    stderr: tokio::task::JoinHandle<String>,
    /// Keeps the jail's private TMPDIR alive.
    _jail: Option<crate::sandbox::PreparedJail>,
}

async fn collect_stderr(s: Option<std::process::ChildStderr>) -> String {
    let Some(s) = s else { return String::new() };
    let Ok(mut s) = tokio::process::ChildStderr::from_std(s) else {
        return String::new();
    };
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > 128 * 1024 {
                    buf.drain(..buf.len() - 64 * 1024);
                }
            }
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

fn start_traced(
    mut cmd: std::process::Command,
    jail: Option<crate::sandbox::PreparedJail>,
    roots: Vec<PathBuf>,
) -> Result<Session, ScanError> {
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        // No scope hint (see `tracer`): with it, an in-scope read is recorded at entry only, and
        // another thread of the server can swap the path's memory between the tracer's check
        // and the kernel's lookup — a red-team run read a canary that way and was called
        // confined. A full trace resolves every successful open to the file actually opened;
        // on the scan's small sandbox it measured no slower.
        let mut traced = tracer::spawn_traced(cmd, None).map_err(ScanError::Spawn)?;
        let missing = || ScanError::Spawn(std::io::Error::other("the server's stdio is not piped"));
        let stdin = traced.child_stdin.take().ok_or_else(missing)?;
        let stdout = traced.child_stdout.take().ok_or_else(missing)?;
        let stdin = tokio::process::ChildStdin::from_std(stdin).map_err(ScanError::Spawn)?;
        let stdout = tokio::process::ChildStdout::from_std(stdout).map_err(ScanError::Spawn)?;
        let stderr = tokio::spawn(collect_stderr(traced.child_stderr.take()));
        Ok(Session {
            traced,
            client: McpClient::new(stdin, stdout, roots),
            stderr,
            _jail: jail,
        })
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = (cmd, jail, roots, scope);
        Err(ScanError::Unsupported)
    }
}

/// The server's environment: the caller's, with HOME and TMPDIR moved into the sandbox and
/// XDG directories outside the canary HOME.
fn scan_env(opts: &ScanOptions, sb: &ScanSandbox) -> Vec<(OsString, OsString)> {
    let overridden = [
        "HOME",
        "TMPDIR",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_STATE_HOME",
        "XDG_CACHE_HOME",
        "XDG_RUNTIME_DIR",
    ];
    let mut env: Vec<(OsString, OsString)> = opts
        .env
        .iter()
        .filter(|(k, _)| !overridden.iter().any(|o| k == o))
        .filter(|(k, _)| !opts.server_env.iter().any(|(sk, _)| k == sk.as_str()))
        .cloned()
        .collect();
    env.push(("HOME".into(), sb.home.clone().into()));
    env.push(("TMPDIR".into(), sb.tmp.clone().into()));
    for (k, d) in [
        ("XDG_CONFIG_HOME", "xdg/config"),
        ("XDG_DATA_HOME", "xdg/data"),
        ("XDG_STATE_HOME", "xdg/state"),
        ("XDG_CACHE_HOME", "xdg/cache"),
    ] {
        env.push((k.into(), sb.root.join(d).into()));
    }
    for (k, v) in &opts.server_env {
        env.push((k.into(), v.into()));
    }
    env
}

/// Run the scan. `progress` is told about every call.
pub async fn scan(
    opts: &ScanOptions,
    progress: &mut dyn Progress,
) -> Result<ScanReport, ScanError> {
    Ok(scan_full(opts, progress).await?.report)
}

/// A scan with everything it saw, for `policy learn`.
pub(crate) struct FullRun {
    pub report: ScanReport,
    pub accesses: Vec<Access>,
    pub sandbox: ScanSandbox,
    pub grants: Vec<crate::sandbox::Grant>,
}

/// What `policy learn` needs: a traced run with the control calls only.
pub(crate) struct BenignRun {
    pub name: String,
    pub accesses: Vec<Access>,
    pub sandbox: ScanSandbox,
    pub grants: Vec<crate::sandbox::Grant>,
    pub calls: usize,
    pub controls_ok: usize,
    pub duration_ms: u128,
}

pub(crate) async fn traced_benign_run(opts: &ScanOptions) -> Result<BenignRun, ScanError> {
    let opts = ScanOptions {
        max_probes: Some(0),
        jail_pass_with: None,
        ..opts.clone()
    };
    let run = scan_full(&opts, &mut NoProgress).await?;
    Ok(BenignRun {
        name: run.report.server.name.clone(),
        calls: run.report.probes.len(),
        controls_ok: run.report.probes.iter().filter(|p| p.ok).count(),
        duration_ms: run.report.duration_ms,
        accesses: run.accesses,
        sandbox: run.sandbox,
        grants: run.grants,
    })
}

async fn scan_full(opts: &ScanOptions, progress: &mut dyn Progress) -> Result<FullRun, ScanError> {
    if !tracer::supported() {
        return Err(ScanError::Unsupported);
    }
    let started = Instant::now();
    let sb = ScanSandbox::create().map_err(ScanError::Sandbox)?;
    let mut notes = Vec::new();
    let absolute = absolutize(&opts.command, &opts.cwd);
    let (argv, remapped) = sandbox::remap_argv(&absolute, &sb.scope, &opts.cwd);
    if remapped.is_empty() {
        notes.push(
            "no argument of the command is an existing file or directory: nothing was remapped \
             into the scan scope, so the server's own scope lies outside the scan sandbox and the \
             verdict means little (pass the scope as an existing directory)"
                .to_string(),
        );
    }
    let name = opts
        .name
        .clone()
        .unwrap_or_else(|| ServerCommand::parse(&opts.command).default_name());
    let env = scan_env(opts, &sb);
    for d in ["xdg/config", "xdg/data", "xdg/state", "xdg/cache"] {
        std::fs::create_dir_all(sb.root.join(d)).map_err(ScanError::Sandbox)?;
    }

    // The safety jail: the scan sandbox read-write, nothing else of the user's, no network.
    let safety = Scope {
        write: vec![ScopeEntry {
            path: sb.root.clone(),
            source: ScopeSource::Flag,
        }],
        ..Scope::default()
    };
    let jail_opts = crate::sandbox::JailOptions {
        env_keep: opts.server_env.iter().map(|(k, _)| k.clone()).collect(),
        ..Default::default()
    };
    let grants: Vec<crate::sandbox::Grant> =
        crate::sandbox::prepare_with_env(&safety, &argv, &sb.scope, &jail_opts, &env)?
            .grants()
            .iter()
            .filter(|g| !g.why.starts_with("scope"))
            .cloned()
            .collect();
    let runtime: Vec<PathBuf> = grants.iter().map(|g| g.path.clone()).collect();
    // The script's own directory (and, for `uv run`-style commands, nothing more): see
    // Classifier::runtime_dirs.
    let runtime_dirs: Vec<PathBuf> = ServerCommand::parse(&argv)
        .script()
        .map(|s| opts.cwd.join(s))
        .and_then(|s| s.parent().map(Path::to_path_buf))
        .into_iter()
        .collect();
    let classifier = Classifier {
        runtime,
        runtime_dirs,
        sandbox: &sb,
        real_home: opts
            .env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v))
            .filter(|h| h.is_absolute() && h != Path::new("/")),
    };

    let start_session = || -> Result<Session, ScanError> {
        let jail = crate::sandbox::prepare_with_env(&safety, &argv, &sb.scope, &jail_opts, &env)?;
        let cmd = jail.command_for_hooks().into_std();
        start_traced(cmd, Some(jail), vec![sb.scope.clone()])
    };

    let mut session = start_session()?;
    session.traced.log.set_phase(tracer::PHASE_STARTUP);
    let (server_info, tools) = match initialize(&mut session.client, opts.timeout).await {
        Ok(x) => x,
        Err(e) => {
            let stderr = end_session(session).await.1;
            return Err(ScanError::Start(e, stderr));
        }
    };
    for t in &tools {
        if let Some(g) = corpus::guessed_path_args(t) {
            notes.push(format!(
                "tool {} declares no input schema properties: probed the conventional \
                 argument(s) {}",
                t.get("name").and_then(Value::as_str).unwrap_or("?"),
                g.join(", ")
            ));
        }
    }
    let plan = plan(&tools, &sb, opts.max_probes);
    progress.start(plan.len() as u64);
    let mut records = Vec::new();
    let mut all_accesses: Vec<Access> = Vec::new();
    let mut stderr_all = String::new();
    let mut current = Some(session);
    for (i, call) in plan.iter().enumerate() {
        let Some(session) = current.as_mut() else {
            break;
        };
        let phase = i as u32 + 1;
        progress.step(&format!("{} {}", call.tool, call.probe));
        session.traced.log.set_phase(phase);
        let outcome = session
            .client
            .call_tool(&call.tool, &call.args, opts.timeout)
            .await;
        // Nothing of this call may be recorded under the next one.
        session.traced.log.set_phase(u32::MAX);
        let accesses = session.traced.log.phase(phase);
        records.push(verdict::record(
            &classifier,
            phase,
            &call.tool,
            call.argument.as_deref(),
            &call.probe,
            call.value.as_deref(),
            &outcome,
            &accesses,
        ));
        let changed_scope = accesses
            .iter()
            .any(|a| a.kind.modifies() && a.succeeded() && a.resolved.starts_with(&sb.scope));
        if changed_scope {
            sb.reset_scope().map_err(ScanError::Sandbox)?;
        }
        if accesses
            .iter()
            .any(|a| a.kind.modifies() && a.succeeded() && sb.is_outside(&a.resolved))
        {
            sb.restore_canaries().map_err(ScanError::Sandbox)?;
        }
        if outcome.server_exited || outcome.timed_out {
            // Start a fresh server for the remaining calls.
            if let Some(old) = current.take() {
                let (acc, err) = end_session(old).await;
                all_accesses.extend(acc);
                stderr_all.push_str(&err);
            }
            notes.push(format!(
                "the server {} during {} / {}: restarted for the remaining calls",
                if outcome.timed_out {
                    "timed out"
                } else {
                    "exited"
                },
                call.tool,
                call.probe
            ));
            let mut fresh = start_session()?;
            fresh.traced.log.set_phase(u32::MAX - 1);
            match initialize(&mut fresh.client, opts.timeout).await {
                Ok(_) => current = Some(fresh),
                Err(e) => {
                    let (acc, err) = end_session(fresh).await;
                    all_accesses.extend(acc);
                    stderr_all.push_str(&err);
                    notes.push(format!("the restarted server did not start: {e}"));
                }
            }
        }
    }
    progress.finish();
    if let Some(session) = current.take() {
        let (acc, err) = end_session(session).await;
        all_accesses.extend(acc);
        stderr_all.push_str(&err);
    }
    let startup = classifier.startup_evidence(&all_accesses);
    let startup_accesses = all_accesses
        .iter()
        .filter(|a| a.phase == tracer::PHASE_STARTUP)
        .count();
    let tool_list = path_args_of(&tools, &sb);
    let tool_verdicts = verdict::tool_verdicts(&tool_list, &records);
    let verdict = verdict::server_verdict(&tool_verdicts, &startup);
    let exfiltrated = records.iter().any(|r| !r.leaked.is_empty());

    let jail_pass = match &opts.jail_pass_with {
        Some(mcpjail) => Some(
            run_jail_pass(
                mcpjail,
                &absolute,
                &env,
                &plan,
                &records,
                &classifier,
                opts,
                &sb,
            )
            .await,
        ),
        None => None,
    };

    let report = ScanReport {
        schema: verdict::SCHEMA,
        scanner: format!("mcpjail {}", env!("CARGO_PKG_VERSION")),
        server: ServerIdentity {
            name,
            command: opts.command.clone(),
            scanned_command: argv,
            remapped,
            server_info,
            tools_digest: tools_digest(&tools),
        },
        verdict,
        exfiltrated,
        tools: tool_verdicts,
        startup,
        startup_accesses,
        traced_accesses: all_accesses.len(),
        jail_pass,
        probes: records,
        stderr: tail(&stderr_all, 64 * 1024).to_string(),
        sandbox: SandboxInfo {
            root: sb.root.clone(),
            scope: sb.scope.clone(),
            home: sb.home.clone(),
            canaries: sb.canaries.clone(),
        },
        duration_ms: started.elapsed().as_millis(),
        notes,
    };
    drop(classifier);
    Ok(FullRun {
        report,
        accesses: all_accesses,
        sandbox: sb,
        grants,
    })
}

async fn initialize<W, R>(
    client: &mut McpClient<W, R>,
    timeout: Duration,
) -> Result<(Value, Vec<Value>), String>
where
    W: tokio::io::AsyncWrite + Unpin,
    R: tokio::io::AsyncRead + Unpin,
{
    // Start-up (interpreter, module loading) can take longer than a call.
    let start_timeout = timeout.max(Duration::from_secs(30));
    let init = client
        .initialize(start_timeout)
        .await
        .map_err(|e| e.to_string())?;
    let tools = client
        .list_tools(start_timeout)
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        init.get("serverInfo").cloned().unwrap_or(Value::Null),
        tools,
    ))
}

/// Kill the server, wait for the tracer, return every access and the stderr.
async fn end_session(session: Session) -> (Vec<Access>, String) {
    let Session {
        traced,
        client,
        stderr,
        _jail,
    } = session;
    drop(client);
    let log = traced.log.clone();
    let _ = tokio::task::spawn_blocking(move || traced.finish()).await;
    let err = stderr.await.unwrap_or_default();
    (log.snapshot(), err)
}

#[allow(clippy::too_many_arguments)]
async fn run_jail_pass(
    mcpjail: &Path,
    argv: &[String],
    env: &[(OsString, OsString)],
    plan: &[Planned],
    traced_records: &[ProbeRecord],
    classifier: &Classifier<'_>,
    opts: &ScanOptions,
    sb: &ScanSandbox,
) -> JailPass {
    let mut pass = JailPass {
        holds: false,
        calls: 0,
        blocked_attempts: 0,
        refused_calls: 0,
        escaped: Vec::new(),
        leaked: Vec::new(),
        controls_ok_traced: traced_records
            .iter()
            .filter(|r| r.probe == "control" && r.ok)
            .count(),
        controls_ok_jailed: 0,
        controls_broken_by_jail: Vec::new(),
        error: None,
    };
    if let Err(e) = sb.reset_scope() {
        pass.error = Some(e.to_string());
        return pass;
    }
    // The product as a user runs it: `mcpjail proxy -- SERVER`, with the server's argv paths
    // remapped to the scope (its declared scope), the fake HOME, and the client's roots.
    let (server_argv, _) = sandbox::remap_argv(argv, &sb.scope, &opts.cwd);
    let mut cmd = std::process::Command::new(mcpjail);
    cmd.arg("proxy");
    for (k, _) in &opts.server_env {
        cmd.arg("--env-keep").arg(k);
    }
    cmd.arg("--").args(&server_argv);
    cmd.current_dir(&sb.scope)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("MCPJAIL_LOG", "warn");
    let mut session = match start_traced(cmd, None, vec![sb.scope.clone()]) {
        Ok(s) => s,
        Err(e) => {
            pass.error = Some(e.to_string());
            return pass;
        }
    };
    session.traced.log.set_phase(tracer::PHASE_STARTUP);
    if let Err(e) = initialize(&mut session.client, opts.timeout).await {
        let (_, stderr) = end_session(session).await;
        pass.error = Some(format!("{e}; stderr: {}", tail(&stderr, 1000)));
        return pass;
    }
    let mut outcomes: Vec<(usize, CallOutcome)> = Vec::new();
    for (i, call) in plan.iter().enumerate() {
        let phase = i as u32 + 1;
        session.traced.log.set_phase(phase);
        let outcome = session
            .client
            .call_tool(&call.tool, &call.args, opts.timeout)
            .await;
        session.traced.log.set_phase(u32::MAX);
        let changed_scope = session
            .traced
            .log
            .phase(phase)
            .iter()
            .any(|a| a.kind.modifies() && a.succeeded() && a.resolved.starts_with(&sb.scope));
        if changed_scope {
            let _ = sb.reset_scope();
        }
        pass.calls += 1;
        let exited = outcome.server_exited;
        outcomes.push((i, outcome));
        if exited {
            pass.error = Some(format!(
                "the proxy exited during {} / {}",
                call.tool, call.probe
            ));
            break;
        }
    }
    let (accesses, _) = end_session(session).await;
    // The proxy itself runs unjailed and reads its launcher's files in the real HOME (a pyenv
    // shim, an npx cache) before it jails the server: only the canary places are judged here.
    let classifier = Classifier {
        sandbox: classifier.sandbox,
        real_home: None,
        runtime: Vec::new(),
        runtime_dirs: Vec::new(),
    };
    for a in &accesses {
        if classifier.is_violation(a) {
            if a.succeeded() {
                let call = plan.get((a.phase as usize).wrapping_sub(1));
                pass.escaped.push(Evidence {
                    kind: if call.is_some_and(|c| c.value.is_some()) {
                        Verdict::Launders
                    } else {
                        Verdict::Undeclared
                    },
                    tool: call.map(|c| c.tool.clone()),
                    argument: call.and_then(|c| c.argument.clone()),
                    probe: call.map(|c| c.probe.clone()),
                    value: call.and_then(|c| c.value.as_deref().map(|v| verdict::shorten(v, 200))),
                    syscall: a.syscall.into(),
                    access: a.kind,
                    path: a.path.clone(),
                    resolved: a.resolved.clone(),
                    result: a.result_text(),
                });
            } else {
                pass.blocked_attempts += 1;
            }
        }
    }
    for (i, outcome) in &outcomes {
        let call = &plan[*i];
        if call.value.is_some() && !outcome.ok {
            pass.refused_calls += 1;
        }
        if !sb.leaked_in(&outcome.text).is_empty() {
            pass.leaked.push(format!("{} / {}", call.tool, call.probe));
        }
        if call.value.is_none() {
            let traced_ok = traced_records
                .iter()
                .any(|r| r.tool == call.tool && r.probe == "control" && r.ok);
            if outcome.ok {
                pass.controls_ok_jailed += 1;
            } else if traced_ok {
                pass.controls_broken_by_jail.push(format!(
                    "{}: {}",
                    call.tool,
                    verdict::shorten(&outcome.text, 300)
                ));
            }
        }
    }
    pass.holds = pass.error.is_none() && pass.escaped.is_empty() && pass.leaked.is_empty();
    pass
}
