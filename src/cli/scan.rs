//! `mcpjail scan`: the Laundering Scan of one server, a server from a client config, or every
//! local server the user's clients run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{GlobalArgs, UserError};
use crate::clients::{self, ClientId, ConfigFile, Format};
use crate::scan::{self, report, ScanOptions, ScanReport};

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Examples:\n  mcpjail scan -- npx -y @modelcontextprotocol/server-filesystem ~/project\n  \
    mcpjail scan --format sarif --badge badge.svg --fail-on launders -- python server.py .\n  \
    mcpjail scan --config ~/.cursor/mcp.json --server files\n  mcpjail scan --installed"
)]
pub struct ScanArgs {
    /// Report format on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
    /// Also write the SVG badge (`mcpjail | confined`, `launders paths`…) to FILE.
    #[arg(long, value_name = "FILE")]
    pub badge: Option<PathBuf>,
    /// Also write the report to FILE (in --format) instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit with status 3 when the verdict is at least this bad (repeatable).
    #[arg(long, value_enum, value_name = "KIND")]
    pub fail_on: Vec<FailOn>,
    /// Seconds to wait for each call.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub timeout: u64,
    /// Skip the second pass through `mcpjail proxy`'s jail.
    #[arg(long)]
    pub no_jail_pass: bool,
    /// Only the first N corpus probes per path argument (quick runs).
    #[arg(long, value_name = "N")]
    pub max_probes: Option<usize>,
    /// Scan a server from this client config file (with --server).
    #[arg(long, value_name = "FILE", requires = "server")]
    pub config: Option<PathBuf>,
    /// The server's name in --config.
    #[arg(long, value_name = "NAME")]
    pub server: Option<String>,
    /// The client whose format --config is in (default: the first that reads it).
    #[arg(long, value_name = "CLIENT")]
    pub client: Option<String>,
    /// Scan every local server in the user's client configs (one report each).
    #[arg(long, conflicts_with_all = ["config", "command"])]
    pub installed: bool,
    /// Sign a scan record with this secret key (from `mcpjail keygen`); needs --record.
    #[arg(
        long,
        value_name = "KEY",
        requires = "record",
        conflicts_with = "installed"
    )]
    pub sign: Option<PathBuf>,
    /// Write the signed scan record (`mcpjail.scan-record.v1`, for `mcpjail registry add`).
    #[arg(long, value_name = "OUT", requires = "sign")]
    pub record: Option<PathBuf>,
    /// The server command (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Launders,
    Undeclared,
    Exfiltrated,
    Broken,
}

/// Exit status when a `--fail-on` condition holds.
pub const EXIT_FINDING: u8 = 3;

/// One server to scan.
struct Target {
    name: Option<String>,
    command: Vec<String>,
    env: Vec<(String, String)>,
    cwd: PathBuf,
}

pub fn run(args: ScanArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    // A key that cannot sign is found out before the scan, not after it.
    let signing_key = match &args.sign {
        Some(path) => Some(crate::registry::keys::load_signing(path).map_err(|e| {
            UserError::new(e.to_string()).with_hint(
                "make a key with `mcpjail keygen --out DIR` and pass DIR/mcpjail-signing.key",
            )
        })?),
        None => None,
    };
    let targets = targets(&args, &cwd)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mcpjail = if args.no_jail_pass {
        None
    } else {
        Some(std::env::current_exe().context("cannot find the mcpjail executable")?)
    };
    let mut worst = ExitCode::SUCCESS;
    let mut reports = Vec::new();
    for target in targets {
        let opts = ScanOptions {
            command: target.command.clone(),
            cwd: target.cwd.clone(),
            name: target.name.clone(),
            timeout: Duration::from_secs(args.timeout.max(1)),
            env: std::env::vars_os().collect(),
            server_env: target.env.clone(),
            jail_pass_with: mcpjail.clone(),
            max_probes: args.max_probes,
        };
        let mut progress = progress_for(global);
        let result = runtime.block_on(scan::scan(&opts, progress.as_mut()));
        let report = match result {
            Ok(r) => r,
            Err(e) if args.installed => {
                tracing::error!("{}: {e}", target.command.join(" "));
                worst = ExitCode::from(2);
                continue;
            }
            Err(e) => {
                return Err(
                    anyhow::Error::new(e).context(format!("scanning {}", target.command.join(" ")))
                )
            }
        };
        if fails(&report, &args.fail_on) {
            worst = ExitCode::from(EXIT_FINDING);
        }
        if let (Some(key), Some(out)) = (&signing_key, &args.record) {
            write_record(&report, &target, key, out)?;
        }
        reports.push(report);
    }
    runtime.shutdown_background();
    emit(&args, &reports)?;
    Ok(worst)
}

/// Sign the scan's record and write it (atomically: a half-written record would fail verify).
fn write_record(
    report: &ScanReport,
    target: &Target,
    key: &ed25519_dalek::SigningKey,
    out: &Path,
) -> anyhow::Result<()> {
    use crate::registry::record::Record;
    let entry = crate::registry::record::entry_sha256(&target.command, &target.cwd);
    let record = Record::from_report(report, entry).sign(key)?;
    crate::clients::atomic::write_atomic(out, record.to_pretty_json().as_bytes())
        .with_context(|| format!("cannot write the record to {}", out.display()))?;
    tracing::info!(
        "signed record for {} {} ({}) written to {}",
        record.server.name,
        record.server.version_label(),
        record.signer.key_id,
        out.display()
    );
    Ok(())
}

fn fails(report: &ScanReport, fail_on: &[FailOn]) -> bool {
    use crate::scan::verdict::Verdict;
    fail_on.iter().any(|f| match f {
        FailOn::Launders => report.verdict == Verdict::Launders,
        FailOn::Undeclared => matches!(report.verdict, Verdict::Launders | Verdict::Undeclared),
        FailOn::Exfiltrated => report.exfiltrated,
        FailOn::Broken => report.verdict == Verdict::Broken,
    })
}

fn emit(args: &ScanArgs, reports: &[ScanReport]) -> anyhow::Result<()> {
    let body = match args.format {
        OutputFormat::Text => reports
            .iter()
            .map(report::text)
            .collect::<Vec<_>>()
            .join("\n"),
        OutputFormat::Json => {
            let v = if reports.len() == 1 && !args.installed {
                serde_json::to_value(&reports[0])?
            } else {
                serde_json::to_value(reports)?
            };
            serde_json::to_string_pretty(&v)? + "\n"
        }
        OutputFormat::Sarif => {
            let mut runs = Vec::new();
            for r in reports {
                let s = report::sarif(r);
                runs.extend(s["runs"].as_array().cloned().unwrap_or_default());
            }
            let mut doc = reports.first().map(report::sarif).unwrap_or_default();
            doc["runs"] = serde_json::Value::Array(runs);
            serde_json::to_string_pretty(&doc)? + "\n"
        }
    };
    match &args.output {
        Some(path) => std::fs::write(path, body)
            .with_context(|| format!("cannot write the report to {}", path.display()))?,
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(body.as_bytes())?;
            out.flush()?;
        }
    }
    if let Some(badge) = &args.badge {
        // One badge: the worst verdict when several servers were scanned.
        if let Some(worst) = reports.iter().max_by_key(|r| r.verdict) {
            std::fs::write(badge, report::badge_svg(worst))
                .with_context(|| format!("cannot write the badge to {}", badge.display()))?;
        }
    }
    Ok(())
}

fn targets(args: &ScanArgs, cwd: &Path) -> anyhow::Result<Vec<Target>> {
    if args.installed {
        return installed_targets(cwd);
    }
    if let Some(config) = &args.config {
        let name = args.server.as_deref().unwrap_or_default();
        return Ok(vec![config_target(config, name, args.client.as_deref())?]);
    }
    if args.command.is_empty() {
        return Err(UserError::new("no server to scan")
            .with_hint(
                "mcpjail scan -- COMMAND [ARGS...], --config FILE --server NAME, or --installed",
            )
            .into());
    }
    Ok(vec![Target {
        name: None,
        command: args.command.clone(),
        env: Vec::new(),
        cwd: cwd.to_path_buf(),
    }])
}

fn entry_target(e: &clients::scan::ServerEntry, cwd: &Path) -> Option<Target> {
    let command = e.command.clone()?;
    let (command, args) = clients::wrap::unwrap_args(&command, &e.args)
        .unwrap_or_else(|| (command.clone(), e.args.clone()));
    let mut argv = vec![command];
    argv.extend(args);
    Some(Target {
        name: Some(e.name.clone()),
        command: argv,
        env: e.env.clone(),
        cwd: e
            .cwd
            .as_ref()
            .map(PathBuf::from)
            .unwrap_or(cwd.to_path_buf()),
    })
}

fn config_target(path: &Path, server: &str, client: Option<&str>) -> anyhow::Result<Target> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let format = if path.extension().is_some_and(|e| e == "toml") {
        Format::Toml
    } else {
        Format::Jsonc
    };
    let candidates: Vec<ClientId> = match client {
        Some(c) => vec![ClientId::parse(c).ok_or_else(|| {
            UserError::new(format!("unknown client {c:?}"))
                .with_hint("one of: claude-desktop, claude-code, cursor, vscode, windsurf, cline, gemini, zed, codex")
        })?],
        None => ClientId::ALL.to_vec(),
    };
    let mut names = Vec::new();
    for id in candidates {
        let file = clients::config_file_for_record(id, path.to_path_buf());
        if file.format != format {
            continue;
        }
        let file = ConfigFile { format, ..file };
        let Ok(entries) = clients::scan::entries_of(&file, &text) else {
            continue;
        };
        for e in &entries {
            if e.name == server {
                if e.transport != "stdio" {
                    return Err(UserError::new(format!(
                        "server {server:?} in {} is not a local (stdio) server ({})",
                        path.display(),
                        e.transport
                    ))
                    .into());
                }
                let cwd = path.parent().unwrap_or(Path::new("."));
                return entry_target(e, cwd).ok_or_else(|| {
                    UserError::new(format!("server {server:?} has no command")).into()
                });
            }
            names.push(e.name.clone());
        }
    }
    names.sort();
    names.dedup();
    Err(
        UserError::new(format!("no server named {server:?} in {}", path.display()))
            .with_hint(if names.is_empty() {
                "the file lists no servers a known client reads (try --client)".to_string()
            } else {
                format!("servers there: {}", names.join(", "))
            })
            .into(),
    )
}

fn installed_targets(cwd: &Path) -> anyhow::Result<Vec<Target>> {
    let host = clients::host::HostEnv::from_env()?;
    let mut out: Vec<Target> = Vec::new();
    for file in clients::scan::scan_all(&host, cwd, &[]) {
        for e in &file.entries {
            if e.transport != "stdio" {
                continue;
            }
            if let Some(t) = entry_target(e, cwd) {
                if !out.iter().any(|o| o.command == t.command) {
                    out.push(t);
                }
            }
        }
    }
    if out.is_empty() {
        return Err(
            UserError::new("no local MCP servers found in any client config")
                .with_hint("mcpjail status lists what the configs hold")
                .into(),
        );
    }
    Ok(out)
}

/// A progress bar on a terminal (stderr), nothing otherwise.
fn progress_for(global: &GlobalArgs) -> Box<dyn scan::Progress> {
    use std::io::IsTerminal;
    if global.quiet || !std::io::stderr().is_terminal() {
        return Box::new(scan::NoProgress);
    }
    Box::new(Bar(None))
}

struct Bar(Option<indicatif::ProgressBar>);

impl scan::Progress for Bar {
    fn start(&mut self, total: u64) {
        let bar = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{spinner} scanning [{bar:30}] {pos}/{len} {msg}",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        self.0 = Some(bar);
    }
    fn step(&mut self, label: &str) {
        if let Some(b) = &self.0 {
            b.set_message(label.to_string());
            b.inc(1);
        }
    }
    fn finish(&mut self) {
        if let Some(b) = self.0.take() {
            b.finish_and_clear();
        }
    }
}

#[derive(Debug, Clone, Args)]
#[command(
    after_help = "Example:\n  mcpjail policy learn -- npx -y @modelcontextprotocol/server-filesystem ~/project"
)]
pub struct LearnArgs {
    /// Label for the server (default: derived from the command).
    #[arg(long)]
    pub name: Option<String>,
    /// Output: a commented policy file (toml) or JSON.
    #[arg(long, value_enum, default_value_t = LearnFormat::Toml)]
    pub format: LearnFormat,
    /// Seconds to wait for each call.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub timeout: u64,
    /// Instead of running the server: propose `[net] allow_domains` from the destinations
    /// the egress proxy refused, read from a `mcpjail-proxy --log-file` audit log (for the
    /// server `--name`, if given).
    #[arg(long, value_name = "FILE")]
    pub from_log: Option<PathBuf>,
    /// The server command (after `--`).
    #[arg(
        last = true,
        required_unless_present = "from_log",
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LearnFormat {
    Toml,
    Json,
}

/// `mcpjail policy learn`.
pub fn run_learn(args: LearnArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = global;
    if let Some(log) = &args.from_log {
        return learn_domains_from_log(log, &args);
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let opts = ScanOptions {
        command: args.command.clone(),
        cwd,
        name: args.name.clone(),
        timeout: Duration::from_secs(args.timeout.max(1)),
        env: std::env::vars_os().collect(),
        server_env: Vec::new(),
        jail_pass_with: None,
        max_probes: Some(0),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(crate::scan::learn::learn(&opts));
    runtime.shutdown_background();
    let report = result.with_context(|| format!("learning {}", args.command.join(" ")))?;
    let body = match args.format {
        LearnFormat::Toml => crate::scan::learn::render_toml(&report),
        LearnFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
    };
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(body.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `policy learn --from-log FILE`: the egress proxy's refusals as proposed domain rules.
fn learn_domains_from_log(log: &std::path::Path, args: &LearnArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(log).map_err(|e| {
        super::UserError::new(format!("cannot read the audit log {}: {e}", log.display()))
            .with_hint("pass the file given to mcpjail-proxy --log-file")
    })?;
    let proposals = crate::policy::net::propose_from_audit(&text, args.name.as_deref());
    let body = match args.format {
        LearnFormat::Json => serde_json::to_string_pretty(&proposals)? + "\n",
        LearnFormat::Toml => {
            let mut out = format!(
                "# Destinations the egress proxy refused, from {}{}.\n# Keep only those the \
                 server needs, then put them in its policy file (or pass --allow-domain).\n",
                log.display(),
                args.name
                    .as_deref()
                    .map(|n| format!(" (server `{n}`)"))
                    .unwrap_or_default()
            );
            if proposals.is_empty() {
                out.push_str("# (none refused)\n");
            } else {
                out.push_str("[net]\nallow_domains = [\n");
                for p in &proposals {
                    out.push_str(&format!(
                        "  {},  # refused {} time(s){}\n",
                        toml::Value::String(p.rule.clone()),
                        p.denied,
                        if p.address {
                            "; an address: prefer the name if it has one"
                        } else {
                            ""
                        }
                    ));
                }
                out.push_str("]\n");
            }
            out
        }
    };
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(body.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
