//! `mcpjail install`, `uninstall` and `status`: the clap arguments and the command functions.
//!
//! The library (`crate::clients`) finds, plans, verifies and writes; this file resolves the
//! settings (HOME, project dir, proxy path, TTY), prints diffs and tables, asks for
//! confirmation and maps outcomes to exit codes (0 ok, 1 something was refused or left
//! untouched).

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;

use super::{GlobalArgs, UserError};
use crate::clients::apply::{self, FilePlan, Problem};
use crate::clients::scan::{self, FileScan, ServerEntry};
use crate::clients::startcheck::{self, StartOutcome, StartTarget};
use crate::clients::{self, diff, record, ClientId, HostEnv};
use crate::shown::shown;

#[derive(Debug, Clone, Args)]
pub struct InstallArgs {
    /// Only this client (repeatable): claude-desktop, claude-code, cursor, vscode,
    /// vscode-insiders, windsurf, gemini, cline, zed, codex.
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Project directory whose project-scoped configs are included (default: the cwd).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Show the diff and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Write even where a running client may overwrite the file.
    #[arg(long)]
    pub force: bool,
    /// The mcpjail-proxy binary to put in the configs (default: the one next to this mcpjail).
    #[arg(long, value_name = "PATH")]
    pub proxy: Option<PathBuf>,
    /// Do not launch each wrapped entry once to check that it starts.
    #[arg(long)]
    pub no_check: bool,
    /// How long each entry may take to answer `initialize` in the start check.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub check_timeout: u64,
}

#[derive(Debug, Clone, Args)]
pub struct UninstallArgs {
    /// Only this client (repeatable).
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Project whose configs are checked for wrapped entries without a record (default: the
    /// cwd). Every recorded install is undone, whatever project it was made in.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Show the diff and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask for confirmation.
    #[arg(long)]
    pub yes: bool,
    /// Write even where a running client may overwrite the file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    /// Project directory whose project-scoped configs are included (default: the cwd).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Launch each wrapped server once, as its client would, and report whether it starts
    /// (unwrapped ones are listed, never started: they would run unconfined).
    #[arg(long)]
    pub check: bool,
    /// How long each entry may take to answer `initialize` with `--check`.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub check_timeout: u64,
}

fn parse_clients(names: &[String]) -> anyhow::Result<Vec<ClientId>> {
    names
        .iter()
        .map(|n| {
            ClientId::parse(n).ok_or_else(|| {
                let known: Vec<&str> = ClientId::ALL.iter().map(|c| c.as_str()).collect();
                UserError::new(format!("unknown client `{n}`"))
                    .with_hint(format!("use one of: {}", known.join(", ")))
                    .into()
            })
        })
        .collect()
}

pub(super) fn project_dir(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = match arg {
        Some(d) => d,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    std::fs::canonicalize(&dir).map_err(|e| {
        UserError::new(format!("project directory {}: {e}", dir.display()))
            .with_hint("pass an existing directory with --project DIR")
            .into()
    })
}

pub(super) fn host() -> anyhow::Result<HostEnv> {
    Ok(HostEnv::from_env()?)
}

/// `~/…` for paths under HOME (shorter tables and diffs).
pub(super) fn display_path(host: &HostEnv, path: &Path) -> String {
    match path.strip_prefix(&host.home) {
        Ok(rest) => format!("~/{}", rest.display()),
        Err(_) => path.display().to_string(),
    }
}

fn stdout_color(global: &GlobalArgs) -> bool {
    match global.color {
        super::ColorChoice::Always => true,
        super::ColorChoice::Never => false,
        super::ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none() && std::io::stdout().is_terminal()
        }
    }
}

pub(super) fn resolve_proxy(arg: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let path = match arg {
        Some(p) => std::path::absolute(&p)
            .with_context(|| format!("cannot make {} absolute", p.display()))?,
        None => {
            let exe = std::env::current_exe().context("cannot find the running mcpjail binary")?;
            let name = if cfg!(windows) {
                "mcpjail-proxy.exe"
            } else {
                "mcpjail-proxy"
            };
            exe.with_file_name(name)
        }
    };
    if !path.is_file() {
        return Err(UserError::new(format!(
            "mcpjail-proxy not found at {}",
            path.display()
        ))
        .with_hint(
            "install both binaries side by side (cargo install puts them together), or pass --proxy PATH",
        )
        .into());
    }
    Ok(path)
}

fn print_problems(host: &HostEnv, problems: &[Problem]) {
    for p in problems {
        match &p.server {
            // Names and parse errors quote config files a cloned project may have written.
            Some(s) => eprintln!(
                "warning: {}: server `{}`: {}",
                crate::shown::shown(&display_path(host, &p.file)),
                crate::shown::shown(s),
                crate::shown::shown_text(&p.message)
            ),
            None => eprintln!(
                "warning: {}: {}",
                crate::shown::shown(&display_path(host, &p.file)),
                crate::shown::shown_text(&p.message)
            ),
        }
    }
}

fn print_diffs(host: &HostEnv, plans: &[FilePlan], color: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for plan in plans {
        let shown = display_path(host, &plan.file.path);
        let d = diff::unified(
            &format!("/{}", shown.trim_start_matches('/')),
            &plan.original,
            &plan.new,
        );
        // A config file may hold C1 controls or bidi marks inside its strings (JSON and TOML
        // allow them raw): the diff shows them, before its own colour is added.
        let d = crate::shown::shown_text(&d).into_owned();
        let d = if color { diff::colorize(&d) } else { d };
        writeln!(out, "# {} ({})", shown, plan.file.client)?;
        out.write_all(d.as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

/// Ask on a terminal; refuse without one unless `--yes`.
fn confirm(yes: bool, what: &str) -> anyhow::Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(UserError::new(format!(
            "not {what} without confirmation: stdin is not a terminal"
        ))
        .with_hint("review the diff above (or run with --dry-run), then re-run with --yes")
        .into());
    }
    eprint!("Go ahead and {what} these files? [y/N] ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes"))
}

/// Which plans a running client forbids writing now (checked before asking, and again
/// right before writing).
fn print_refusals(host: &HostEnv, plans: &[FilePlan], force: bool) {
    for plan in plans {
        if let Some(why) = apply::refusal(plan) {
            let shown = display_path(host, &plan.file.path);
            if force {
                eprintln!("warning: {shown}: {why}; will write anyway (--force)");
            } else {
                eprintln!("warning: {shown} will be refused: {why}");
            }
        }
    }
}

/// Write each plan unless refused; returns how many failed or were refused.
fn commit_all(
    host: &HostEnv,
    plans: &[FilePlan],
    force: bool,
    quiet: bool,
    verb: &str,
    commit: impl Fn(&FilePlan) -> Result<(), clients::ClientsError>,
) -> usize {
    let mut failed = 0;
    for plan in plans {
        let shown = display_path(host, &plan.file.path);
        if let Some(why) = apply::refusal(plan) {
            if force {
                eprintln!("warning: {why}; writing anyway (--force)");
            } else {
                eprintln!(
                    "refused: {shown}: {why}\nhint: quit {} first, or re-run with --force",
                    plan.file.client
                );
                failed += 1;
                continue;
            }
        }
        match commit(plan) {
            Ok(()) => {
                for note in &plan.notes {
                    eprintln!("note: {shown}: {note}");
                }
                if !quiet {
                    eprintln!("{verb} {shown} ({} servers)", plan.changes.len());
                }
            }
            Err(e) => {
                eprintln!("error: {shown}: {e}");
                failed += 1;
            }
        }
    }
    failed
}

pub fn run_install(args: InstallArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let host = host()?;
    let clients = parse_clients(&args.clients)?;
    let project = project_dir(args.project)?;
    let proxy = resolve_proxy(args.proxy)?;
    let scans = scan::scan_all(&host, &project, &clients);
    for scan in scans.iter().filter(|_| !global.quiet) {
        for e in &scan.entries {
            if let (Some(why), false) = (&e.skipped, e.wrapped) {
                eprintln!(
                    "skipped: {} `{}` ({}): {why}",
                    display_path(&host, &e.file),
                    e.name,
                    e.transport
                );
            }
            for w in e.warnings.iter().filter(|_| e.wrappable()) {
                eprintln!(
                    "warning: {} `{}`: {w}",
                    display_path(&host, &e.file),
                    e.name
                );
            }
        }
    }
    let (plans, problems) = apply::plan_install(&scans, &proxy);
    print_problems(&host, &problems);
    if plans.is_empty() {
        eprintln!("nothing to wrap: every local server is already wrapped or skipped");
        return Ok(exit_for(problems.len()));
    }
    let review = Review {
        dry_run: args.dry_run,
        yes: args.yes,
        force: args.force,
    };
    let check = (!args.no_check).then(|| Duration::from_secs(args.check_timeout));
    if let Some(code) = review_plans(&host, &plans, problems.len(), &review, global)? {
        // A dry run starts nothing: the entries may come from a project just cloned, and
        // "change nothing" should not mean "run its servers" (jailed or not).
        if args.dry_run && check.is_some() && !global.quiet {
            eprintln!(
                "dry run: no server started (`mcpjail install` checks that each one starts; \
                 `mcpjail status --check` does it later)"
            );
        }
        return Ok(code);
    }
    let installs = host.installs_dir();
    let failed = commit_all(&host, &plans, args.force, global.quiet, "wrapped", |plan| {
        apply::commit_install(plan, &installs).map(|_| ())
    });
    if failed == 0 && problems.is_empty() && !global.quiet {
        eprintln!(
            "done: backups and records in {}; undo with `mcpjail uninstall`",
            display_path(&host, &installs)
        );
    }
    let mut failing = 0;
    if let Some(limit) = check {
        let targets = planned_targets(&host, &project, &scans, &plans);
        failing = report_starts(&targets, limit, "written");
    }
    Ok(exit_for(failed + problems.len() + failing))
}

/// The flags that decide whether planned edits are written.
struct Review {
    dry_run: bool,
    yes: bool,
    force: bool,
}

/// Show what install/uninstall would write (diffs, then what a running client forbids), then
/// stop for `--dry-run` or a "no" at the prompt. `Some(code)` means stop with that status.
fn review_plans(
    host: &HostEnv,
    plans: &[FilePlan],
    problems: usize,
    review: &Review,
    global: &GlobalArgs,
) -> anyhow::Result<Option<ExitCode>> {
    print_diffs(host, plans, stdout_color(global))?;
    print_refusals(host, plans, review.force);
    if review.dry_run {
        return Ok(Some(exit_for(problems)));
    }
    if !confirm(review.yes, "write")? {
        eprintln!("nothing written");
        return Ok(Some(ExitCode::from(1)));
    }
    Ok(None)
}

/// Where a client starts this entry's server: the entry's `cwd`, else the project for a
/// project's config, else HOME (clients differ; HOME is the common choice).
fn entry_cwd(host: &HostEnv, project: &Path, entry: &ServerEntry) -> PathBuf {
    match (&entry.cwd, entry.scope) {
        (Some(cwd), _) => project.join(cwd),
        (None, clients::Scope::Project | clients::Scope::Local) => project.to_path_buf(),
        (None, clients::Scope::User) => host.home.clone(),
    }
}

/// Why starting a wrapped-looking entry could run its server unconfined, if it could: only
/// this installation's own proxy binary (the same file, wherever the entry names it from) with
/// the jail on is started by a check. A `bin/mcpjail-proxy` shipped in a cloned project looks
/// wrapped by its name alone, and `--no-jail` turns the jail off.
fn unconfined_start(host: &HostEnv, project: &Path, entry: &ServerEntry) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let command = entry.command.as_deref()?;
    let ours = if crate::clients::wrap::file_name(command)
        .starts_with(crate::clients::wrap::PROXY_FILE_STEM)
    {
        resolve_proxy(None).ok()
    } else {
        std::env::current_exe().ok()
    };
    let path = entry
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PATH"));
    let cwd = entry_cwd(host, project, entry);
    let theirs = crate::sandbox::runtime::resolve_program(command, &cwd, path.as_ref()).ok();
    let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let same = match (&ours, &theirs) {
        (Some(ours), Some(theirs)) => id(ours).is_some() && id(ours) == id(theirs),
        _ => false,
    };
    if !same {
        return Some(format!(
            "its command {} is not this mcpjail's proxy{}",
            theirs.as_deref().unwrap_or(Path::new(command)).display(),
            ours.map(|o| format!(" ({})", o.display()))
                .unwrap_or_default()
        ));
    }
    let flags = crate::clients::wrap::proxy_flags(command, &entry.args);
    flags
        .iter()
        .any(|f| f == "--no-jail")
        .then(|| "it runs with --no-jail".to_string())
}

pub(super) fn target_for(
    host: &HostEnv,
    project: &Path,
    entry: &ServerEntry,
    argv: Vec<String>,
) -> StartTarget {
    StartTarget {
        label: format!("{} › {}", display_path(host, &entry.file), entry.name),
        argv,
        env: entry.env.clone(),
        cwd: entry_cwd(host, project, entry),
    }
}

/// The wrapped command line of every entry the plans write.
fn planned_targets(
    host: &HostEnv,
    project: &Path,
    scans: &[FileScan],
    plans: &[FilePlan],
) -> Vec<StartTarget> {
    let mut out = Vec::new();
    for plan in plans {
        for change in &plan.changes {
            let Some(entry) = scans
                .iter()
                .flat_map(|s| s.entries.iter())
                .find(|e| e.file == plan.file.path && e.pointer == change.pointer)
            else {
                continue;
            };
            let mut argv = vec![change.new.command.clone()];
            argv.extend(change.new.args.clone().unwrap_or_default());
            out.push(target_for(host, project, entry, argv));
        }
    }
    out
}

/// Launch every target once and print which start, with the reason (and fix) for each that
/// does not. Returns how many do not start.
fn report_starts(targets: &[StartTarget], limit: Duration, what: &str) -> usize {
    if targets.is_empty() {
        return 0;
    }
    eprintln!(
        "start check: launching each entry {what} once, as its client would (limit {} s each)…",
        limit.as_secs()
    );
    let outcomes = startcheck::check_all(targets, limit);
    let mut failing = 0;
    for (t, o) in targets.iter().zip(&outcomes) {
        match o {
            StartOutcome::Started { millis } => {
                eprintln!("  starts          {} ({} ms)", shown(&t.label), millis)
            }
            StartOutcome::Failed { reason } => {
                failing += 1;
                eprintln!("  does not start  {}", shown(&t.label));
                // The reason quotes the server's stderr.
                for line in reason.lines() {
                    eprintln!("                  {}", shown(line));
                }
            }
            StartOutcome::TimedOut { limit } => {
                failing += 1;
                eprintln!(
                    "  does not start  {}\n                  no answer to initialize within {} s \
                     (a first run may still be downloading; hint: --check-timeout SECONDS)",
                    shown(&t.label),
                    limit.as_secs()
                );
            }
        }
    }
    eprintln!(
        "start check: {} of {} start{}",
        outcomes.len() - failing,
        outcomes.len(),
        if failing > 0 {
            "; the lines above name what stops the others and the flag or policy line that fixes it"
        } else {
            ""
        }
    );
    failing
}

fn exit_for(failures: usize) -> ExitCode {
    if failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

pub fn run_uninstall(args: UninstallArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let host = host()?;
    let clients = parse_clients(&args.clients)?;
    let records = record::load_all(&host.installs_dir())?;
    let mut files: Vec<clients::ConfigFile> = Vec::new();
    for (_, rec) in &records {
        let Some(client) = ClientId::parse(&rec.client) else {
            continue;
        };
        if rec.undone.is_some() || (!clients.is_empty() && !clients.contains(&client)) {
            continue;
        }
        if !files.iter().any(|f| f.path == rec.file) {
            files.push(clients::config_file_for_record(client, rec.file.clone()));
        }
    }
    let project = project_dir(args.project)?;
    warn_unrecorded(&host, &project, &clients, &records);
    let (plans, problems) = apply::plan_uninstall(records, &files);
    print_problems(&host, &problems);
    if plans.is_empty() {
        eprintln!(
            "nothing to undo: no install records in {}",
            display_path(&host, &host.installs_dir())
        );
        return Ok(exit_for(problems.len()));
    }
    let review = Review {
        dry_run: args.dry_run,
        yes: args.yes,
        force: args.force,
    };
    if let Some(code) = review_plans(&host, &plans, problems.len(), &review, global)? {
        return Ok(code);
    }
    let failed = commit_all(
        &host,
        &plans,
        args.force,
        global.quiet,
        "restored",
        apply::commit_uninstall,
    );
    Ok(exit_for(failed + problems.len()))
}

/// Wrapped entries no record covers (wrapped by hand, or the config came from another machine)
/// cannot be restored exactly; say so and show the original command line.
fn warn_unrecorded(
    host: &HostEnv,
    project: &Path,
    clients: &[ClientId],
    records: &[(PathBuf, record::InstallRecord)],
) {
    let recorded = |file: &Path, pointer: &str| {
        records.iter().any(|(_, r)| {
            r.undone.is_none() && r.file == file && r.changes.iter().any(|c| c.pointer == pointer)
        })
    };
    for scan in scan::scan_all(host, project, clients) {
        for e in scan.entries.iter().filter(|e| e.wrapped) {
            if recorded(&e.file, &e.pointer) {
                continue;
            }
            let original = e
                .command
                .as_deref()
                .and_then(|c| clients::wrap::unwrap_args(c, &e.args))
                .map(|(cmd, args)| {
                    std::iter::once(cmd)
                        .chain(args)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_default();
            eprintln!(
                "warning: {} `{}` is wrapped but has no install record; left as it is\nhint: to unwrap it, set its command line back to `{original}` by hand",
                display_path(host, &e.file),
                e.name
            );
        }
    }
}

#[derive(serde::Serialize)]
struct StatusJson<'a> {
    files: Vec<FileJson<'a>>,
    servers: Vec<&'a scan::ServerEntry>,
}

#[derive(serde::Serialize)]
struct FileJson<'a> {
    client: ClientId,
    file: &'a Path,
    scope: clients::Scope,
    error: Option<&'a str>,
    servers: usize,
}

pub fn run_status(args: StatusArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let host = host()?;
    let project = project_dir(args.project)?;
    let scans: Vec<FileScan> = scan::scan_all(&host, &project, &[])
        .into_iter()
        .filter(|s| s.text.is_some() || s.error.is_some())
        .collect();
    if args.check {
        let targets: Vec<StartTarget> = scans
            .iter()
            .flat_map(|s| s.entries.iter())
            // Only wrapped entries: an unwrapped one would run unconfined, which a status
            // check must not do behind the user's back.
            .filter(|e| e.skipped.is_none() && e.wrapped)
            .filter(|e| match unconfined_start(&host, &project, e) {
                None => true,
                Some(why) => {
                    eprintln!(
                        "  not checked     {} › {} ({why}: starting it could run it unconfined)",
                        shown(&display_path(&host, &e.file)),
                        shown(&e.name)
                    );
                    false
                }
            })
            .filter_map(|e| {
                let mut argv = vec![e.command.clone()?];
                argv.extend(e.args.iter().cloned());
                Some(target_for(&host, &project, e, argv))
            })
            .collect();
        let unwrapped: Vec<String> = scans
            .iter()
            .flat_map(|s| s.entries.iter())
            .filter(|e| e.skipped.is_none() && !e.wrapped)
            .map(|e| format!("{} › {}", display_path(&host, &e.file), e.name))
            .collect();
        for u in &unwrapped {
            eprintln!("  not checked     {u} (not wrapped: starting it would run it unconfined; `mcpjail install` first)");
        }
        let failing = report_starts(
            &targets,
            Duration::from_secs(args.check_timeout),
            "configured",
        );
        return Ok(exit_for(failing));
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let status = StatusJson {
            files: scans
                .iter()
                .map(|s| FileJson {
                    client: s.file.client,
                    file: &s.file.path,
                    scope: s.file.scope,
                    error: s.error.as_deref(),
                    servers: s.entries.len(),
                })
                .collect(),
            servers: scans.iter().flat_map(|s| s.entries.iter()).collect(),
        };
        serde_json::to_writer_pretty(&mut out, &status)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in &scans {
        if let Some(err) = &s.error {
            eprintln!("warning: {}: {err}", display_path(&host, &s.file.path));
        }
    }
    let color = stdout_color(global);
    let header = ["CLIENT", "FILE", "SCOPE", "SERVER", "TRANSPORT", "WRAPPED"];
    let mut rows: Vec<[String; 6]> = Vec::new();
    for s in &scans {
        for e in &s.entries {
            let wrapped = if e.wrapped && unconfined_start(&host, &project, e).is_some() {
                // Wrapped in form only: not this installation's proxy, or `--no-jail`.
                "unverified".to_string()
            } else if e.wrapped {
                "yes".to_string()
            } else if e.skipped.is_some() {
                "skipped".to_string()
            } else {
                "no".to_string()
            };
            // Names and paths come from config files a cloned project may have written: shown
            // with terminal controls escaped (before the widths are measured).
            rows.push([
                e.client.to_string(),
                shown(&display_path(&host, &e.file)).into_owned(),
                e.scope.to_string(),
                shown(&e.name).into_owned(),
                shown(&e.transport).into_owned(),
                wrapped,
            ]);
        }
    }
    if rows.is_empty() {
        eprintln!("no MCP servers found in any known client config");
        return Ok(ExitCode::SUCCESS);
    }
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String; 6]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == 5 {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s
    };
    let head = line(&header.map(String::from));
    if color {
        writeln!(out, "\x1b[1m{head}\x1b[0m")?;
    } else {
        writeln!(out, "{head}")?;
    }
    for r in &rows {
        let text = line(r);
        let text = match (color, r[5].as_str()) {
            (true, "yes") => format!("\x1b[32m{text}\x1b[0m"),
            (true, "no") => format!("\x1b[33m{text}\x1b[0m"),
            (true, _) => format!("\x1b[2m{text}\x1b[0m"),
            _ => text,
        };
        writeln!(out, "{text}")?;
    }
    Ok(ExitCode::SUCCESS)
}
