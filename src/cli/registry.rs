//! `mcpjail keygen`, `mcpjail registry add|build|verify|serve` and `mcpjail verify`.
//!
//! Signing a record is part of `mcpjail scan --sign KEY --record OUT` (the scan knows what it
//! found); everything here reads records, never runs a scan.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde_json::json;

use super::install::{display_path, host, project_dir, resolve_proxy, target_for};
use super::{GlobalArgs, UserError};
use crate::clients::listtools::list_tools;
use crate::clients::scan::{self, ServerEntry};
use crate::clients::wrap::unwrap_args;
use crate::registry::keys;
use crate::registry::record::{tools_digest, Record, ServerIdentity};
use crate::registry::site;
use crate::registry::store::{Added, Registry};
use crate::shown::shown;

#[derive(Debug, Clone, Args)]
pub struct KeygenArgs {
    /// Directory for the keypair (created 0700): `mcpjail-signing.key` (0600) and
    /// `mcpjail-signing.pub`. Existing key files are never overwritten.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Subcommand)]
pub enum RegistryCommand {
    /// Check records (schema, signature, trusted signer) and store them, newest per server/version.
    Add {
        #[arg(required = true, value_name = "RECORD")]
        records: Vec<PathBuf>,
        #[command(flatten)]
        registry: RegistryDir,
    },
    /// Write the static site: index, a page per record, badges, shields endpoints, index.json.
    Build {
        #[command(flatten)]
        registry: RegistryDir,
        #[arg(long, value_name = "SITE")]
        out: PathBuf,
    },
    /// Check every stored record's schema, signature and signer; non-zero exit on any failure.
    Verify {
        #[command(flatten)]
        registry: RegistryDir,
        #[arg(long)]
        json: bool,
    },
    /// Build the site into a temporary directory and preview it on localhost.
    Serve {
        #[command(flatten)]
        registry: RegistryDir,
        #[arg(long, default_value = "127.0.0.1:8780")]
        addr: String,
    },
}

#[derive(Debug, Clone, Args)]
pub struct RegistryDir {
    /// The registry directory (`keys/`, `records/`); default `$XDG_DATA_HOME/mcpjail/registry`.
    #[arg(long = "registry", value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub registry: RegistryDir,
    /// Project directory for project-scoped configs (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Exit non-zero when any server's record is missing, invalid or stale (default: only
    /// invalid records and changed tools fail).
    #[arg(long)]
    pub strict: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Seconds to wait for each server's `tools/list`.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub timeout: u64,
}

fn registry_dir(arg: &RegistryDir) -> anyhow::Result<PathBuf> {
    if let Some(dir) = &arg.dir {
        return Ok(dir.clone());
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    crate::policy::xdg::data_dir(home.as_deref())
        .map(|d| d.join("registry"))
        .ok_or_else(|| {
            UserError::new("cannot find the default registry directory")
                .with_hint("pass --registry DIR, or set HOME or XDG_DATA_HOME")
                .into()
        })
}

fn open(arg: &RegistryDir) -> anyhow::Result<Registry> {
    let dir = registry_dir(arg)?;
    Registry::open(&dir).map_err(|e| {
        UserError::new(e.to_string())
            .with_hint(format!(
                "copy a signer's mcpjail-signing.pub (from `mcpjail keygen --out DIR`) into {}",
                dir.join("keys").display()
            ))
            .into()
    })
}

pub fn run_keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    let (secret, public, key) =
        keys::generate(&args.out).map_err(|e| UserError::new(e.to_string()))?;
    println!("key id      {}", keys::key_id(&key));
    println!(
        "secret key  {} (keep it private: sign with `mcpjail scan --sign {}`)",
        secret.display(),
        secret.display()
    );
    println!(
        "public key  {} (registries trust it from their keys/ directory)",
        public.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn run_registry(cmd: RegistryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        RegistryCommand::Add { records, registry } => {
            let reg = open(&registry)?;
            let mut rejected = 0;
            for path in &records {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                match reg.add(&text)? {
                    Added::New(to) => println!("added       {} → {}", path.display(), to.display()),
                    Added::Superseded { path: to, previous } => println!(
                        "superseded  {} → {} (replaces the record of {previous})",
                        path.display(),
                        to.display()
                    ),
                    Added::Skipped { path: at, kept } => println!(
                        "skipped     {} ({} already holds a record of {kept}, as new or newer)",
                        path.display(),
                        at.display()
                    ),
                    Added::Rejected(why) => {
                        rejected += 1;
                        eprintln!("rejected    {}: {why}", path.display());
                    }
                }
            }
            Ok(if rejected > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        RegistryCommand::Build { registry, out } => {
            let reg = open(&registry)?;
            let (good, bad) = reg.verify_all()?;
            for f in &bad {
                eprintln!("left out   {}: {}", f.path.display(), f.reason);
            }
            let records: Vec<Record> = good.into_iter().map(|(_, r)| r).collect();
            let written = site::build(&records, &out)
                .with_context(|| format!("cannot write the site to {}", out.display()))?;
            println!(
                "built {} ({} records, {} files); open {}",
                out.display(),
                records.len(),
                written.len(),
                out.join("index.html").display()
            );
            Ok(if bad.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        RegistryCommand::Verify { registry, json } => {
            let reg = open(&registry)?;
            let (good, bad) = reg.verify_all()?;
            if json {
                let out = json!({
                    "ok": bad.is_empty(),
                    "verified": good.iter().map(|(p, r)| json!({"path": p, "server": r.server.name, "version": r.server.version, "signer": r.signer.key_id})).collect::<Vec<_>>(),
                    "failed": bad.iter().map(|f| json!({"path": f.path, "reason": f.reason})).collect::<Vec<_>>(),
                });
                println!("{out:#}");
            } else {
                // A record's names are its author's choice: shown, not obeyed by the terminal.
                for (path, r) in &good {
                    println!(
                        "ok      {} ({} {}, signed by {})",
                        shown(&path.display().to_string()),
                        shown(&r.server.name),
                        shown(r.server.version_label()),
                        shown(&r.signer.key_id)
                    );
                }
                for f in &bad {
                    println!(
                        "FAILED  {}: {}",
                        shown(&f.path.display().to_string()),
                        shown(&f.reason)
                    );
                }
                println!("{} verified, {} failed", good.len(), bad.len());
            }
            Ok(if bad.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        RegistryCommand::Serve { registry, addr } => {
            let reg = open(&registry)?;
            let (good, bad) = reg.verify_all()?;
            for f in &bad {
                eprintln!("left out   {}: {}", f.path.display(), f.reason);
            }
            let records: Vec<Record> = good.into_iter().map(|(_, r)| r).collect();
            let site_dir = tempfile::tempdir().context("cannot make a directory for the site")?;
            site::build(&records, site_dir.path())?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .context("cannot start the async runtime")?;
            runtime.block_on(async {
                let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| {
                    UserError::new(format!("cannot listen on {addr}: {e}"))
                        .with_hint("pass another --addr, e.g. 127.0.0.1:0 for any free port")
                })?;
                let bound = listener.local_addr()?;
                println!(
                    "serving {} records at http://{bound}/ (Ctrl-C stops)",
                    records.len()
                );
                let _ = std::io::stdout().flush();
                crate::registry::serve::serve(listener, site_dir.path().to_path_buf()).await?;
                anyhow::Ok(())
            })?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// One configured server, as `verify` judged it.
#[derive(Debug, serde::Serialize)]
struct Judged {
    client_file: String,
    name: String,
    server: String,
    version: String,
    /// `ok`, `missing`, `invalid`, `stale`, `unlisted` (could not list its tools now).
    status: &'static str,
    verdict: Option<String>,
    signer: Option<String>,
    detail: String,
}

pub fn run_verify(args: VerifyArgs, _global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let host = host()?;
    let project = project_dir(args.project.clone())?;
    let dir = registry_dir(&args.registry)?;
    let reg = open(&args.registry)?;
    let proxy = resolve_proxy(None)?;
    let scans = scan::scan_all(&host, &project, &[]);
    let entries: Vec<&ServerEntry> = scans
        .iter()
        .flat_map(|s| s.entries.iter())
        .filter(|e| e.transport == "stdio" && e.command.is_some())
        .collect();
    let mut judged = Vec::new();
    for entry in entries {
        judged.push(judge(
            &host,
            &project,
            &reg,
            &proxy,
            entry,
            Duration::from_secs(args.timeout),
        ));
    }
    let failing = judged
        .iter()
        .filter(|j| match j.status {
            "ok" => false,
            "invalid" | "stale" => true,
            _ => args.strict,
        })
        .count();
    if args.json {
        println!(
            "{:#}",
            json!({"registry": dir, "servers": judged, "failing": failing})
        );
    } else {
        if judged.is_empty() {
            println!("no local (stdio) servers in any client config");
        }
        // Names come from client configs (a cloned project's) and registry records.
        for j in &judged {
            println!(
                "{:<9} {} › {} ({} {}){}",
                j.status,
                shown(&j.client_file),
                shown(&j.name),
                shown(&j.server),
                shown(&j.version),
                j.verdict
                    .as_deref()
                    .map(|v| format!(": {}", shown(v)))
                    .unwrap_or_default()
            );
            if !j.detail.is_empty() {
                println!("          {}", shown(&j.detail));
            }
        }
    }
    Ok(if failing > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn judge(
    host: &crate::clients::host::HostEnv,
    project: &Path,
    reg: &Registry,
    proxy: &Path,
    entry: &ServerEntry,
    limit: Duration,
) -> Judged {
    let command = entry.command.clone().unwrap_or_default();
    // A wrapped entry is judged by the server it wraps.
    let (program, args) =
        unwrap_args(&command, &entry.args).unwrap_or((command, entry.args.clone()));
    let mut argv = vec![program];
    argv.extend(args);
    let identity = ServerIdentity::from_command(&argv, None);
    let mut judged = Judged {
        client_file: display_path(host, &entry.file),
        name: entry.name.clone(),
        server: identity.name.clone(),
        version: identity.version_label().to_string(),
        status: "missing",
        verdict: None,
        signer: None,
        detail: String::new(),
    };
    let record = match reg.lookup(&identity.name, identity.version_label()) {
        None => {
            judged.detail = format!(
                "no record for {} {} in the registry",
                identity.name,
                identity.version_label()
            );
            return judged;
        }
        Some(Err(why)) => {
            judged.status = "invalid";
            judged.detail = why;
            return judged;
        }
        Some(Ok(record)) => record,
    };
    // Records are filed by a slug of the name and version: `x/y` and `@x/y`, or a PyPI `foo`
    // and an npm `foo`, land in one place. A record speaks only for the server it names.
    if record.server.name != identity.name || record.server.ecosystem != identity.ecosystem {
        judged.status = "invalid";
        judged.detail = format!(
            "the record filed under this name is for {} {} ({}), not for this server, {} {} \
             ({}): it says nothing about it",
            record.server.ecosystem,
            record.server.name,
            record.server.version.as_deref().unwrap_or("any version"),
            identity.ecosystem,
            identity.name,
            identity.version_label()
        );
        return judged;
    }
    judged.verdict = Some(record.verdict.as_str().to_string());
    judged.signer = Some(record.signer.key_id.clone());
    // The tools are listed through the jail, so verifying a server never runs it unconfined.
    let mut jailed = vec![
        proxy.to_string_lossy().into_owned(),
        "--pin".into(),
        "off".into(),
        "--name".into(),
        entry.name.clone(),
        "--".into(),
    ];
    let argv_for_entry = argv.clone();
    jailed.extend(argv);
    let target = target_for(host, project, entry, jailed);
    match list_tools(&target, limit) {
        Err(why) => {
            judged.status = "unlisted";
            judged.detail = format!("could not list its tools now: {why}");
        }
        Ok(tools) => {
            let now = tools_digest(&tools);
            let entry_now = crate::registry::record::entry_sha256(&argv_for_entry, &target.cwd);
            let entry_changed = matches!(
                (&record.server.entry_sha256, &entry_now),
                (Some(then), Some(now)) if then != now
            );
            if now == record.tools_digest && !entry_changed {
                judged.status = "ok";
            } else if now == record.tools_digest {
                judged.status = "stale";
                judged.detail = format!(
                    "its entry file changed since the record of {} (same tools, different code): the badge no longer describes this server",
                    record.date
                );
            } else {
                judged.status = "stale";
                judged.detail = format!(
                    "its tools changed since the record of {} ({} tools then, {} now): the badge no longer describes this server",
                    record.date,
                    record.tool_count,
                    tools.len()
                );
            }
        }
    }
    judged
}
