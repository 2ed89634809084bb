//! `mcpjail policy derive|export`.
//!
//! `derive` runs the same derivation the proxy runs at start-up ([`crate::policy::derive_scope`]
//! and [`crate::policy::ToolInfo::from_tool`]), after asking the server itself for its tools:
//! it starts the server through [`crate::sandbox::prepare`] with its derived scope granted
//! read-only (servers such as `mcp-server-git` open their directories at start-up, so "no data
//! at all" would stop them before `tools/list`; nothing can be written), speaks MCP over the
//! child's stdio (initialize → notifications/initialized → tools/list, every page), and prints
//! the policy with the provenance of every entry.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::{GlobalArgs, UserError};
use crate::policy::{
    always_denied, default_policy_path, derive_scope_with_env, DeriveInputs, Derived, Scope,
    ScopeEntry, ScopeSource, ToolInfo,
};

#[derive(Debug, Clone, Subcommand)]
pub enum PolicyCommand {
    /// Start a server, read its tools and print the policy derived for it.
    Derive(DeriveArgs),
    /// Write the derived scope in another sandbox's format (srt, nono, landrun, seatbelt).
    Export(ExportArgs),
    /// Trace a server through start-up and benign calls and propose its policy lines.
    Learn(super::scan::LearnArgs),
}

/// What derivation takes, shared by `derive` and `export`.
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// Label for the server (default: derived from the command); names its policy file.
    #[arg(long)]
    pub name: Option<String>,
    /// Policy file (TOML: read = [...], write = [...], deny = [globs], [tools.NAME] read_only).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Also allow reading under PATH (repeatable).
    #[arg(long, value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,
    /// Also allow reading and writing under PATH (repeatable).
    #[arg(long, value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,
    /// Pass this environment variable to the server, as the proxy's --env-keep does; a kept
    /// variable that names a path (MEMORY_FILE_PATH, ...) adds it to the scope (repeatable).
    #[arg(long, value_name = "KEY")]
    pub env_keep: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct DeriveArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DeriveFormat::Toml)]
    pub format: DeriveFormat,
    /// Save the policy to $XDG_CONFIG_HOME/mcpjail/servers/NAME.toml (the proxy reads it).
    #[arg(long)]
    pub write: bool,
    /// Give up on the server after this many seconds.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub timeout: u64,
    /// The server command and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DeriveFormat {
    Toml,
    Json,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Target format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// The server command and its arguments (optional with --policy).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// Anthropic sandbox-runtime settings JSON (`srt --settings FILE`).
    Srt,
    /// A nono profile (JSON, for ~/.config/nono/profiles/NAME.json).
    Nono,
    /// A landrun command line.
    Landrun,
    /// A macOS Seatbelt profile (sandbox-exec).
    Seatbelt,
}

pub fn run(cmd: PolicyCommand, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    match cmd {
        PolicyCommand::Derive(args) => run_derive(args, global),
        PolicyCommand::Learn(args) => super::scan::run_learn(args, global),
        PolicyCommand::Export(args) => run_export(args, global),
    }
}

/// Resolved settings for derivation.
struct Settings {
    name: String,
    cwd: PathBuf,
    home: Option<PathBuf>,
}

fn settings(source: &SourceArgs, command: &[String]) -> anyhow::Result<Settings> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    // The proxy's own default, so `--write` saves where the proxy looks.
    let name = source
        .name
        .clone()
        .unwrap_or_else(|| crate::proxy::default_name(command));
    Ok(Settings { name, cwd, home })
}

fn derive(source: &SourceArgs, command: &[String], s: &Settings) -> anyhow::Result<Derived> {
    let kept: Vec<(String, String)> = source
        .env_keep
        .iter()
        .filter_map(|k| Some((k.clone(), std::env::var(k).ok()?)))
        .collect();
    derive_scope_with_env(
        &DeriveInputs {
            name: s.name.clone(),
            command: command.to_vec(),
            cwd: s.cwd.clone(),
            home: s.home.clone(),
            policy_file: source.policy.clone(),
            allow_read: source.allow_read.clone(),
            allow_write: source.allow_write.clone(),
        },
        &kept,
    )
    .map_err(|e| {
        UserError::new(format!("cannot derive the scope for `{}`: {e}", s.name))
            .with_hint("check the --policy file and the --allow-read/--allow-write paths")
            .into()
    })
}

fn run_derive(args: DeriveArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let s = settings(&args.source, &args.command)?;
    let derived = derive(&args.source, &args.command, &s)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let listing = runtime.block_on(fetch_tools(
        &derived.scope,
        &args.source.env_keep,
        &args.command,
        &s.cwd,
        Duration::from_secs(args.timeout),
    ))?;
    let report = Report::new(&s, &args.command, &derived, &listing.tools);
    let mut json_out = report.json();
    json_out["jail"] = listing.jail;
    if !global.quiet {
        for note in &derived.notes {
            eprintln!("note: {note}");
        }
    }
    let text = match args.format {
        DeriveFormat::Json => serde_json::to_string_pretty(&json_out)? + "\n",
        DeriveFormat::Toml => report.toml(),
    };
    if args.write {
        let path = default_policy_path(&s.name, s.home.as_deref()).ok_or_else(|| {
            UserError::new(format!("cannot save a policy for server name {:?}", s.name)).with_hint(
                "pass --name NAME with a plain name, and make sure HOME or XDG_CONFIG_HOME is set",
            )
        })?;
        let toml = report.toml();
        save_atomically(&path, &toml)
            .with_context(|| format!("cannot save the policy to {}", path.display()))?;
        if !global.quiet {
            eprintln!("saved {}", path.display());
        }
    }
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn save_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn run_export(args: ExportArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    if args.command.is_empty() && args.source.policy.is_none() {
        return Err(UserError::new("nothing to export from")
            .with_hint("pass --policy FILE, or the server command after `--`")
            .into());
    }
    let s = settings(&args.source, &args.command)?;
    let derived = derive(&args.source, &args.command, &s)?;
    if args.format == ExportFormat::Landrun && args.command.is_empty() {
        return Err(
            UserError::new("a landrun command line needs the server command")
                .with_hint(
                    "pass it after `--`: mcpjail policy export --format landrun -- COMMAND ARGS",
                )
                .into(),
        );
    }
    let (runtime, runtime_notes) =
        crate::policy::export::runtime_grants(&args.command, &s.cwd, derived.scope.net.allow_all);
    use crate::policy::export as ex;
    let mut export = match args.format {
        ExportFormat::Srt => ex::srt(&derived.scope, &runtime, s.home.as_deref()),
        ExportFormat::Nono => ex::nono(&derived.scope, &runtime, &s.name),
        ExportFormat::Landrun => ex::landrun(&derived.scope, &runtime, &args.command),
        ExportFormat::Seatbelt => ex::seatbelt(&derived.scope, &runtime),
    };
    export.notes.extend(runtime_notes);
    if !global.quiet {
        for note in derived.notes.iter().chain(&export.notes) {
            eprintln!("note: {note}");
        }
    }
    let mut out = std::io::stdout().lock();
    out.write_all(export.text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// What the server said about itself, and how it was jailed while saying it.
struct Listing {
    tools: Vec<Value>,
    /// The jail's enforcement report and grants (JSON), for the derive report.
    jail: Value,
}

/// Start the server and read every page of its `tools/list`.
async fn fetch_tools(
    derived: &Scope,
    env_keep: &[String],
    command: &[String],
    cwd: &Path,
    timeout: Duration,
) -> anyhow::Result<Listing> {
    // Read-only on its own scope: enough to start, nothing to change.
    let mut jail_scope = Scope {
        read: derived.read.clone(),
        write: Vec::new(),
        exec: derived.exec.clone(),
        deny: derived.deny.clone(),
        net: Default::default(),
    };
    for e in &derived.write {
        if !jail_scope.read.iter().any(|r| r.path == e.path) {
            jail_scope.read.push(e.clone());
        }
    }
    let opts = crate::sandbox::JailOptions {
        env_keep: env_keep.to_vec(),
        ..Default::default()
    };
    let jail = crate::sandbox::prepare(&jail_scope, command, cwd, &opts)
        .map_err(|e| UserError::new(format!("cannot start `{}`: {e}", command.join(" "))))?;
    let jail_info = json!({
        "note": "derive ran the server with its scope read-only",
        "report": jail.report(),
        "grants": jail.grants(),
    });
    let mut cmd = jail.command();
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        UserError::new(format!("cannot start `{}`: {e}", command.join(" ")))
            .with_hint("check that the command exists and is executable")
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        anyhow::bail!("the server's stdio was not piped");
    };
    // Keep the last few KiB of the server's stderr to explain a failure.
    let stderr_task = tokio::spawn(async move {
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = [0u8; 4096];
        let mut stderr = stderr;
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > 8192 {
                tail.drain(..tail.len() - 8192);
            }
        }
        String::from_utf8_lossy(&tail).into_owned()
    });

    let mut client = Client {
        stdin,
        lines: BufReader::new(stdout).lines(),
        next_id: 1,
    };
    let result = crate::proxy::timer::timeout(timeout, client.list_tools()).await;
    drop(client);
    // The server should exit on stdin EOF; give it a moment, then kill it.
    if crate::proxy::timer::timeout(Duration::from_secs(2), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
    let stderr_tail = match crate::proxy::timer::timeout(Duration::from_secs(1), stderr_task).await
    {
        Ok(Ok(t)) => t,
        _ => String::new(),
    };
    let explain = |msg: String| -> anyhow::Error {
        let mut text = msg;
        if !stderr_tail.trim().is_empty() {
            text.push_str("\nthe server's stderr ended with:\n");
            text.push_str(stderr_tail.trim_end());
        }
        UserError::new(text)
            .with_hint("run the command by hand to see whether it starts as an MCP stdio server")
            .into()
    };
    match result {
        Err(_) => Err(explain(format!(
            "the server `{}` did not answer tools/list within {}s",
            command.join(" "),
            timeout.as_secs()
        ))),
        Ok(Err(e)) => Err(explain(format!(
            "talking MCP to `{}`: {e}",
            command.join(" ")
        ))),
        Ok(Ok(tools)) => Ok(Listing {
            tools,
            jail: jail_info,
        }),
    }
}

/// A minimal newline-delimited JSON-RPC client: enough for initialize and tools/list.
struct Client {
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Client {
    async fn send(&mut self, msg: &Value) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(msg)?;
        line.push(b'\n');
        self.stdin
            .write_all(&line)
            .await
            .context("the server closed its stdin")?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// Send a request and wait for its response, answering anything the server asks meanwhile.
    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .context("reading the server's stdout")?
                .ok_or_else(|| anyhow::anyhow!("the server exited before answering {method}"))?;
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                tracing::debug!("ignoring a non-JSON line from the server: {line}");
                continue;
            };
            if msg.get("method").is_some() {
                if let Some(req_id) = msg.get("id") {
                    // A server→client request (roots/list, sampling, ...): we offer none.
                    let reply = json!({"jsonrpc": "2.0", "id": req_id,
                        "error": {"code": -32601, "message": "not supported by mcpjail policy derive"}});
                    self.send(&reply).await?;
                }
                continue;
            }
            if msg.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(err) = msg.get("error") {
                anyhow::bail!("{method} failed: {err}");
            }
            return msg.get("result").cloned().ok_or_else(|| {
                anyhow::anyhow!("{method}: a response with neither result nor error")
            });
        }
    }

    async fn list_tools(&mut self) -> anyhow::Result<Vec<Value>> {
        let init = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "mcpjail-policy-derive", "version": env!("CARGO_PKG_VERSION")}
                }),
            )
            .await?;
        if init
            .get("capabilities")
            .and_then(|c| c.get("tools"))
            .is_none()
        {
            tracing::warn!("the server does not declare the tools capability");
        }
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        // A server that keeps handing out cursors must not keep us here forever.
        for _ in 0..1000 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params).await?;
            if let Some(list) = page.get("tools").and_then(Value::as_array) {
                tools.extend(list.iter().cloned());
            }
            match page.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => return Ok(tools),
            }
        }
        anyhow::bail!("tools/list kept returning a nextCursor after 1000 pages")
    }
}

/// The derived policy in printable form.
struct Report<'a> {
    name: &'a str,
    /// The built-in deny list, to tell it apart from a policy file's own `deny`.
    builtin_deny: Vec<String>,
    command: &'a [String],
    derived: &'a Derived,
    tools: Vec<(ToolInfo, ReadOnlySource)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadOnlySource {
    No,
    Annotation,
    PolicyFile,
}

impl<'a> Report<'a> {
    fn new(s: &'a Settings, command: &'a [String], derived: &'a Derived, tools: &[Value]) -> Self {
        let tools = tools
            .iter()
            .filter_map(ToolInfo::from_tool)
            .map(|t| {
                let src = if derived.tool_forced_read_only(&t.name) {
                    ReadOnlySource::PolicyFile
                } else if t.read_only {
                    ReadOnlySource::Annotation
                } else {
                    ReadOnlySource::No
                };
                (t, src)
            })
            .collect();
        Report {
            name: &s.name,
            builtin_deny: always_denied(s.home.as_deref()),
            command,
            derived,
            tools,
        }
    }

    /// Hosts named by URLs in the server's argv, as `--allow-domain` rules.
    fn proposed_domains(&self) -> Vec<String> {
        crate::policy::net::urls_in(self.command.iter().skip(1).map(String::as_str))
    }

    fn json(&self) -> Value {
        let entries = |list: &[ScopeEntry]| -> Value {
            list.iter()
                .map(|e| json!({"path": e.path, "source": e.source}))
                .collect()
        };
        let scope = &self.derived.scope;
        let mut tools = serde_json::Map::new();
        for (t, src) in &self.tools {
            tools.insert(
                t.name.clone(),
                json!({
                    "path_args": t.path_args,
                    "weak_path_args": t.weak_path_args,
                    "read_only": *src != ReadOnlySource::No,
                    "read_only_source": match src {
                        ReadOnlySource::No => Value::Null,
                        ReadOnlySource::Annotation => json!("annotation"),
                        ReadOnlySource::PolicyFile => json!("policy_file"),
                    },
                }),
            );
        }
        json!({
            "server": self.name,
            "command": self.command,
            "net": {
                "allow_domains": scope.net.allow_domains.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "proposed_domains": self.proposed_domains(),
            },
            "policy_file": self.derived.policy_file,
            "scope": {
                "read": entries(&scope.read),
                "write": entries(&scope.write),
                "exec": entries(&scope.exec),
            },
            "deny": scope.deny,
            "net": scope.net,
            "tools": tools,
            "notes": self.derived.notes,
        })
    }

    /// A policy file the proxy can load (`--policy` or the default location), with the
    /// provenance of every entry as comments.
    fn toml(&self) -> String {
        let scope = &self.derived.scope;
        let mut out = String::new();
        out.push_str(&format!(
            "# mcpjail policy for MCP server `{}`\n# derived by `mcpjail policy derive` from: {}\n",
            self.name,
            self.command
                .iter()
                .map(|a| crate::policy::export::shell_quote(a))
                .collect::<Vec<_>>()
                .join(" ")
        ));
        out.push_str(
            "# Always denied whatever this file says: ~/.ssh, ~/.aws, ~/.gnupg, ~/.kube, ~/.docker,\n\
             # .env*, *.pem, SSH keys, MCP client configs, mcpjail's own state.\n",
        );
        for note in &self.derived.notes {
            out.push_str(&format!("# note: {note}\n"));
        }
        let list = |key: &str, entries: &[ScopeEntry], out: &mut String| {
            if entries.is_empty() {
                out.push_str(&format!("{key} = []\n"));
                return;
            }
            out.push_str(&format!("{key} = [\n"));
            for e in entries {
                out.push_str(&format!(
                    "  {},  # {}\n",
                    toml_string(&e.path.to_string_lossy()),
                    describe_source(&e.source)
                ));
            }
            out.push_str("]\n");
        };
        list("read", &scope.read, &mut out);
        list("write", &scope.write, &mut out);
        let file_denies: Vec<&String> = scope
            .deny
            .iter()
            .filter(|d| !self.builtin_deny.contains(d))
            .collect();
        out.push_str("deny = [");
        out.push_str(
            &file_denies
                .iter()
                .map(|d| toml_string(d))
                .collect::<Vec<_>>()
                .join(", "),
        );
        out.push_str("]\n");
        if !scope.exec.is_empty() {
            out.push_str("# runtime (read + exec, found from the command line; not data scope):\n");
            for e in &scope.exec {
                out.push_str(&format!("#   {}\n", e.path.display()));
            }
        }
        // Recorded now, checked whenever the proxy loads this file: a path of another kind then
        // (a file replaced by a directory or a symlink) is refused rather than granted.
        let kinds = crate::sandbox::observe_kinds(scope);
        if !kinds.is_empty() {
            out.push_str(
                "\n# What each scope path is now; the proxy refuses to start if one changes kind\n\
                 # (re-derive with `mcpjail policy derive --write` after checking the change).\n\
                 [kinds]\n",
            );
            for (path, kind) in &kinds {
                let name = match kind {
                    crate::sandbox::PathKind::File => "file",
                    crate::sandbox::PathKind::Directory => "directory",
                    crate::sandbox::PathKind::Symlink => "symlink",
                    crate::sandbox::PathKind::Other => "other",
                };
                out.push_str(&format!(
                    "{} = {}\n",
                    toml_string(&path.to_string_lossy()),
                    toml_string(name)
                ));
            }
        }
        // Kept from the policy file (a `--write` must not drop them); URLs in the server's
        // argv are proposed, commented, for the user to confirm.
        let allowed: Vec<String> = scope
            .net
            .allow_domains
            .iter()
            .map(ToString::to_string)
            .collect();
        let proposed: Vec<String> = self
            .proposed_domains()
            .into_iter()
            .filter(|r| !allowed.contains(r))
            .collect();
        if !allowed.is_empty() {
            out.push_str("\n# Network by name, through mcpjail-proxy's egress proxy.\n[net]\n");
            out.push_str(&format!(
                "allow_domains = [{}]\n",
                allowed
                    .iter()
                    .map(|d| toml_string(d))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !proposed.is_empty() {
            out.push_str(&format!(
                "\n# Proposed: hosts named by URLs in the server's arguments (not allowed until\n\
                 # listed under [net] allow_domains or given as --allow-domain):\n#   {}\n",
                proposed.join(", ")
            ));
        }
        out.push_str("\n# Tools (path arguments as JSON pointers; `*` = any index or key).\n");
        for (t, src) in &self.tools {
            let args = if t.path_args.is_empty() {
                "none".to_string()
            } else {
                t.path_args.join(", ")
            };
            match src {
                ReadOnlySource::No => {
                    out.push_str(&format!("# {}: path arguments {args}; may write\n", t.name))
                }
                _ => {
                    out.push_str(&format!("[tools.{}]\n", toml_key(&t.name)));
                    out.push_str(&format!(
                        "read_only = true  # {}; path arguments {args}\n",
                        if *src == ReadOnlySource::PolicyFile {
                            "from the policy file"
                        } else {
                            "annotations.readOnlyHint"
                        }
                    ));
                }
            }
        }
        out
    }
}

fn describe_source(s: &ScopeSource) -> String {
    match s {
        ScopeSource::PolicyFile(p) => format!("policy file {}", p.display()),
        ScopeSource::Argv(a) => format!("server argument {a}"),
        ScopeSource::Schema(t) => format!("schema of tool {t}"),
        ScopeSource::ClientRoots => "client roots".into(),
        ScopeSource::Flag => "--allow-read/--allow-write".into(),
        ScopeSource::Runtime => "runtime".into(),
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn toml_key(s: &str) -> String {
    let bare = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        s.to_string()
    } else {
        toml_string(s)
    }
}
