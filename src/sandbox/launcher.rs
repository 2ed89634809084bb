//! Package runners resolved outside the jail.
//!
//! `npx -y pkg`, `uvx pkg` and `uv run server.py` do two things: the package manager resolves
//! (and on a first run downloads) a package into its cache, then runs one program from it. The
//! first step is the user's trusted tool doing what the user's config asked for — it needs the
//! network, the registry credentials and write access to the cache. The second step is the
//! server. mcpjail splits them: the runner's resolve step runs here, unjailed, with the user's
//! own environment, cache and registry (exactly as the config would run it), with a probe
//! command (`env -0`) in place of the server; from what the runner put on the probe's `PATH`
//! the installed program is found, and only that program is started in the jail, with read and
//! exec on its own installed tree and no write on any cache (a jailed server must not be able to
//! change code that other programs run later).
//!
//! Cache hits do not touch the network: npm is asked with `--prefer-offline`, uv with
//! `--offline` first (and without it only when the package is not cached yet).
//!
//! Also here: `--env-file F` of `node`/`deno`/`uv run` is read by the launcher, not the server;
//! F is usually a `.env`, which the jail denies. It is read here and its variables are given to
//! the server, and the option is removed from the jailed command line. The read happens outside
//! the jail, so F is read only as the user could have placed it: a symbolic link on its way
//! that lies where the server may write (a server of an earlier session could have planted it,
//! to have any `KEY=VALUE` file the user can read handed to it) is refused, and so is anything
//! but a regular file. Its variables are kept apart ([`Launch::env_file`]): they are the
//! server's, never the jail's — they do not steer how the program is found or what is granted,
//! and `sandbox::prepare` applies them the way Node does (see `apply_env_file` there).

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::policy::{package_name, Launcher, Runner, ServerCommand};

/// How long a runner's resolve step may take (a first run downloads the package).
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(180);

/// The command to start in the jail, after the runner's resolve step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// Program (absolute after resolution) and the server's arguments.
    pub command: Vec<String>,
    /// Where the server runs (`uv --directory D` moves it to D).
    pub cwd: PathBuf,
    /// Variables the launcher would have set for the server (its `PATH`, `VIRTUAL_ENV`, the
    /// contents of `--env-file`): passed to the jailed server past the environment scrub.
    pub env: Vec<(String, String)>,
    /// The variables of the command's `--env-file` (`node --env-file .env`): data for the
    /// server only, kept out of `env` so that a file the server may have written never decides
    /// how the program is resolved or what the jail grants.
    pub env_file: Vec<(String, String)>,
    /// The installed package tree (`…/_npx/<hash>/node_modules`, a uv environment).
    pub package_root: Option<PathBuf>,
    /// The project a runner syncs outside the jail at every start (`uv run`'s directory): its
    /// `pyproject.toml`, lock and build hooks run unjailed, so the server must not be able to
    /// write them.
    pub project_dir: Option<PathBuf>,
    /// What was resolved and how, for `--log`.
    pub notes: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("{message}\nhint: {hint}")]
    Resolve { message: String, hint: String },
}

fn err(message: impl Into<String>, hint: impl Into<String>) -> LaunchError {
    LaunchError::Resolve {
        message: message.into(),
        hint: hint.into(),
    }
}

/// Resolve `command` run in `cwd` with the user's environment `env` into what the jail starts.
/// Commands that are not package runners and carry no `--env-file` come back unchanged. For
/// callers that start nothing (exports, records): no directory counts as the server's, so an
/// env file is read through any link; the jail uses [`resolve_for_jail`].
pub fn resolve(
    command: &[String],
    cwd: &Path,
    env: &[(OsString, OsString)],
) -> Result<Launch, LaunchError> {
    resolve_for_jail(command, cwd, env, &[])
}

/// [`resolve`] for a server that may write under `server_writes` (canonical directories): an
/// env file reached through a symbolic link that lies under one of them is refused.
pub fn resolve_for_jail(
    command: &[String],
    cwd: &Path,
    env: &[(OsString, OsString)],
    server_writes: &[PathBuf],
) -> Result<Launch, LaunchError> {
    let parsed = ServerCommand::parse(command);
    let mut launch = Launch {
        command: command.to_vec(),
        cwd: cwd.to_path_buf(),
        env: Vec::new(),
        env_file: Vec::new(),
        package_root: None,
        project_dir: None,
        notes: Vec::new(),
    };
    match parsed.runner() {
        Some(runner) if runner.is_node() => resolve_node_runner(&parsed, runner, env, &mut launch)?,
        Some(Runner::Uvx) => resolve_uvx(&parsed, env, &mut launch)?,
        Some(Runner::UvRun) => resolve_uv_run(&parsed, env, &mut launch)?,
        Some(Runner::PipxRun) => return Err(err(
            "`pipx run` cannot be started under the jail yet: mcpjail does not know where pipx \
                 keeps the package",
            "install it once with `pipx install PKG` and put the installed program's path \
                 (`~/.local/bin/PROGRAM`) in the config instead of `pipx run`, or use `uvx PKG`",
        )),
        Some(_) | None => {}
    }
    if !parsed.env_files.is_empty()
        && matches!(
            parsed.launcher,
            Launcher::Node | Launcher::Deno | Launcher::Bun
        )
    {
        take_env_files(&parsed, &mut launch, server_writes)?;
    }
    Ok(launch)
}

/// `node --env-file .env server.js`: read the file here, drop the option.
fn take_env_files(
    parsed: &ServerCommand,
    launch: &mut Launch,
    server_writes: &[PathBuf],
) -> Result<(), LaunchError> {
    let mut drop = Vec::new();
    for &i in &parsed.env_files {
        let Some(arg) = parsed.argv.get(i) else {
            continue;
        };
        let (file, option_at) = match arg.split_once('=') {
            Some((opt, v)) if opt.starts_with("--") => (v.to_string(), i),
            _ => (arg.clone(), i - 1),
        };
        let optional = parsed
            .argv
            .get(option_at)
            .is_some_and(|o| o.starts_with("--env-file-if-exists"));
        let path = launch.cwd.join(&file);
        match read_env_file(&path, server_writes) {
            Ok(text) => {
                let vars = parse_env_file(&text);
                launch.notes.push(format!(
                    "{} read outside the jail (the jail denies .env files) for the server: {} \
                     variable(s) ({})",
                    path.display(),
                    vars.len(),
                    vars.iter()
                        .map(|(k, _)| k.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                launch.env_file.extend(vars);
            }
            Err(EnvFileError::Io(e)) if optional && e.kind() == std::io::ErrorKind::NotFound => {}
            Err(EnvFileError::Io(e)) => {
                return Err(err(
                    format!("cannot read the env file {}: {e}", path.display()),
                    "create it or remove the --env-file option from the server's command",
                ))
            }
            Err(EnvFileError::Refused(why)) => {
                return Err(err(
                    format!("the env file {} is not read: {why}", path.display()),
                    "make it a regular file reached without links in the directories the server \
                     may write (remove a link a server may have put there), or keep the env file \
                     outside them and name that path in --env-file",
                ))
            }
        }
        drop.extend([option_at, i]);
    }
    let mut kept = Vec::new();
    for (i, a) in launch.command.iter().enumerate() {
        if !drop.contains(&i) {
            kept.push(a.clone());
        }
    }
    launch.command = kept;
    Ok(())
}

enum EnvFileError {
    Io(std::io::Error),
    /// Not read, on purpose: why.
    Refused(String),
}

/// Read an env file outside the jail, only as the user could have placed it: no component of
/// `path` may be a symbolic link that lies under `server_writes` (a link the server could have
/// made; links elsewhere are the user's own), and the file must be a regular file (a FIFO the
/// server made must not block the start, a device is no env file).
fn read_env_file(path: &Path, server_writes: &[PathBuf]) -> Result<String, EnvFileError> {
    use std::path::Component;
    let mut walked = PathBuf::new();
    for part in path.components() {
        walked.push(part);
        let Component::Normal(name) = part else {
            continue;
        };
        let is_link = std::fs::symlink_metadata(&walked).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            continue;
        }
        let dir = walked.parent().unwrap_or(Path::new("/"));
        let place = std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .join(name);
        if let Some(root) = server_writes.iter().find(|r| place.starts_with(r)) {
            return Err(EnvFileError::Refused(format!(
                "{} is a symbolic link in {}, which the server may write (a server could have \
                 planted it to have the proxy read a file outside its jail for it)",
                walked.display(),
                root.display()
            )));
        }
    }
    let mut file = open_nonblocking(path).map_err(EnvFileError::Io)?;
    let meta = file.metadata().map_err(EnvFileError::Io)?;
    if !meta.file_type().is_file() {
        return Err(EnvFileError::Refused("it is not a regular file".into()));
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(EnvFileError::Io)?;
    Ok(text)
}

fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC);
    }
    options.open(path)
}

/// `KEY=VALUE` lines (`export ` prefix, `#` comments, single or double quotes), as Node's
/// `--env-file` and python-dotenv read them.
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let key = k.trim();
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let v = v.trim();
        let value = if v.len() >= 2
            && ((v.starts_with('"') && v.ends_with('"'))
                || (v.starts_with('\'') && v.ends_with('\'')))
        {
            v[1..v.len() - 1].to_string()
        } else {
            // An unquoted value ends at an inline comment.
            v.split(" #").next().unwrap_or(v).trim_end().to_string()
        };
        out.push((key.to_string(), value));
    }
    out
}

/// The probe's output: the environment the runner gives the program it runs.
struct Probe {
    env: Vec<(String, String)>,
    elapsed: Duration,
}

impl Probe {
    fn get(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    fn path_dirs(&self) -> Vec<PathBuf> {
        self.get("PATH")
            .map(|p| std::env::split_paths(p).collect())
            .unwrap_or_default()
    }
}

/// Run `argv` (a runner with `env -0` as the program it runs) with the user's environment and
/// read what it printed.
fn run_probe(
    argv: &[String],
    cwd: &Path,
    env: &[(OsString, OsString)],
    label: &str,
) -> Result<Probe, String> {
    let (program, args) = argv.split_first().ok_or("empty probe command")?;
    let started = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    let pid = child.id();
    let mut stdout = child
        .stdout
        .take()
        .ok_or("the probe's stdout was not piped")?;
    let mut stderr = child
        .stderr
        .take()
        .ok_or("the probe's stderr was not piped")?;
    // Read both pipes to the end on threads; the main thread enforces the time limit.
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        let status = child.wait();
        let _ = tx.send((buf, status));
    });
    let (out, status) = match rx.recv_timeout(RESOLVE_TIMEOUT) {
        Ok(r) => r,
        Err(_) => {
            #[cfg(unix)]
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            return Err(format!(
                "{label} did not finish within {} s",
                RESOLVE_TIMEOUT.as_secs()
            ));
        }
    };
    let err_text = err_reader.join().unwrap_or_default();
    let status = status.map_err(|e| format!("cannot wait for `{program}`: {e}"))?;
    if !status.success() {
        let tail = String::from_utf8_lossy(&err_text);
        let tail: Vec<&str> = tail.lines().rev().take(6).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "{label} failed ({status}): {}",
            if tail.is_empty() {
                "no output".to_string()
            } else {
                tail.join(" | ")
            }
        ));
    }
    let mut vars = Vec::new();
    for entry in out.split(|b| *b == 0) {
        let text = String::from_utf8_lossy(entry);
        if let Some((k, v)) = text.split_once('=') {
            vars.push((k.to_string(), v.to_string()));
        }
    }
    if !vars.iter().any(|(k, _)| k == "PATH") {
        return Err(format!("{label} printed no PATH"));
    }
    Ok(Probe {
        env: vars,
        elapsed: started.elapsed(),
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The arguments before the package (or command) positional, without `--`.
fn runner_options(parsed: &ServerCommand) -> Vec<String> {
    let has_positional = !parsed.packages.is_empty() && parsed.package_command.is_none()
        || parsed.package_command.is_some()
        || parsed.script.is_some();
    let end = if has_positional {
        parsed.server_args_start.saturating_sub(1)
    } else {
        parsed.server_args_start
    };
    parsed.argv[..end.min(parsed.argv.len())]
        .iter()
        .filter(|a| a.as_str() != "--")
        .cloned()
        .collect()
}

/// `npx`, `npm exec`, `pnpm dlx`, `bunx`, `yarn dlx`.
fn resolve_node_runner(
    parsed: &ServerCommand,
    runner: Runner,
    env: &[(OsString, OsString)],
    launch: &mut Launch,
) -> Result<(), LaunchError> {
    if !matches!(runner, Runner::Npx | Runner::NpmExec) {
        return Err(err(
            format!("`{}` cannot be started under the jail yet", runner.label()),
            "use `npx -y PKG` for the same package (mcpjail resolves npx outside the jail), or \
             install the package and give the config its program's path",
        ));
    }
    let Some(spec) = parsed.packages.first() else {
        return Err(err(
            format!("`{}` names no package", parsed.argv.join(" ")),
            "write the package after npx: `npx -y PKG ARGS…`",
        ));
    };
    let mut probe_argv = runner_options(parsed);
    let explicit = parsed.package_command.is_some();
    if !explicit {
        probe_argv.push(format!("--package={spec}"));
    }
    probe_argv.extend(["--yes".into(), "--prefer-offline".into(), "--".into()]);
    probe_argv.extend(["env".into(), "-0".into()]);
    let label = format!(
        "`{}` (resolving the package outside the jail)",
        runner.label()
    );
    let probe = run_probe(&probe_argv, &launch.cwd, env, &label).map_err(|e| {
        err(
            e,
            format!(
                "run the server once without mcpjail (`{}`) to see npm's own error; mcpjail runs \
                 the same resolve step with your environment and npm cache",
                parsed.argv.join(" ")
            ),
        )
    })?;
    let bin_dirs: Vec<PathBuf> = probe
        .path_dirs()
        .into_iter()
        .filter(|d| d.ends_with("node_modules/.bin"))
        .collect();
    let (program, root) = match &parsed.package_command {
        Some(cmd) => bin_dirs
            .iter()
            .map(|d| (d.join(cmd), d.parent().map(Path::to_path_buf)))
            .find(|(p, _)| is_executable(p))
            .ok_or_else(|| {
                err(
                    format!("npm resolved {spec} but no program `{cmd}` is on its PATH"),
                    "check the command name; the package's programs are in its package.json `bin`"
                        .to_string(),
                )
            })?,
        None => {
            let name = package_name(spec);
            let found = bin_dirs.iter().find_map(|d| {
                let nm = d.parent()?;
                let bin = default_bin(&nm.join(&name).join("package.json"), &name)?;
                let p = d.join(&bin);
                is_executable(&p).then(|| (p, Some(nm.to_path_buf())))
            });
            found.ok_or_else(|| {
                err(
                    format!(
                        "npm resolved {spec} but mcpjail cannot tell which of its programs npx would run"
                    ),
                    format!("name it: `npx -y -p {spec} PROGRAM ARGS…`"),
                )
            })?
        }
    };
    let cache_hit = probe.elapsed < Duration::from_secs(3);
    launch.notes.push(format!(
        "{} {spec} resolved outside the jail in {} ms{} to {}; the jail runs it with read+exec on \
         {} (never write)",
        runner.label(),
        probe.elapsed.as_millis(),
        if cache_hit { "" } else { " (downloaded)" },
        program.display(),
        root.as_deref()
            .map(|r| r.display().to_string())
            .unwrap_or_default()
    ));
    adopt(launch, parsed, &program, root, &probe, &["PATH"]);
    Ok(())
}

/// The program `npx PKG` runs: the package's only `bin`, or the one named like the package.
fn default_bin(package_json: &Path, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(package_json).ok()?;
    let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
    let unscoped = name.rsplit('/').next().unwrap_or(name).to_string();
    match manifest.get("bin")? {
        serde_json::Value::String(_) => Some(unscoped),
        serde_json::Value::Object(map) if map.len() == 1 => map.keys().next().cloned(),
        serde_json::Value::Object(map) => map.contains_key(&unscoped).then_some(unscoped),
        _ => None,
    }
}

/// Run a uv probe offline first (a cache hit needs no network), then online.
fn run_uv_probe(
    argv: &[String],
    offline_at: usize,
    cwd: &Path,
    env: &[(OsString, OsString)],
    label: &str,
) -> Result<(Probe, bool), String> {
    let mut offline = argv.to_vec();
    offline.insert(offline_at.min(offline.len()), "--offline".into());
    if let Ok(p) = run_probe(&offline, cwd, env, label) {
        return Ok((p, true));
    }
    run_probe(argv, cwd, env, label).map(|p| (p, false))
}

/// `uvx [opts] PKG args`, `uvx --from SPEC CMD args`, `uv tool run …`.
fn resolve_uvx(
    parsed: &ServerCommand,
    env: &[(OsString, OsString)],
    launch: &mut Launch,
) -> Result<(), LaunchError> {
    let Some(spec) = parsed.packages.first() else {
        return Err(err(
            format!("`{}` names no package", parsed.argv.join(" ")),
            "write the package after uvx: `uvx PKG ARGS…`",
        ));
    };
    let command_name = parsed
        .package_command
        .clone()
        .unwrap_or_else(|| package_name(spec));
    let mut probe_argv: Vec<String> = Vec::new();
    let mut skip = false;
    for a in runner_options(parsed) {
        // `--from X` is re-added below, once.
        if skip {
            skip = false;
            continue;
        }
        if a == "--from" {
            skip = true;
            continue;
        }
        if a.starts_with("--from=") {
            continue;
        }
        probe_argv.push(a);
    }
    probe_argv.extend([format!("--from={spec}"), "env".into(), "-0".into()]);
    let label = "`uvx` (resolving the package outside the jail)".to_string();
    let (probe, offline) = run_uv_probe(&probe_argv, 1, &launch.cwd, env, &label).map_err(|e| {
        err(
            e,
            format!(
                "run the server once without mcpjail (`{}`) to see uv's own error",
                parsed.argv.join(" ")
            ),
        )
    })?;
    let dirs = probe.path_dirs();
    let program = dirs
        .iter()
        .map(|d| d.join(&command_name))
        .find(|p| is_executable(p))
        .ok_or_else(|| {
            err(
                format!("uv resolved {spec} but no program `{command_name}` is on its PATH"),
                format!("name the program: `uvx --from {spec} PROGRAM ARGS…`"),
            )
        })?;
    let root = program
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf);
    launch.notes.push(format!(
        "uvx {spec} resolved outside the jail in {} ms ({}) to {}; the jail runs it with \
         read+exec on its environment {} (never write)",
        probe.elapsed.as_millis(),
        if offline { "from the cache" } else { "online" },
        program.display(),
        root.as_deref()
            .map(|r| r.display().to_string())
            .unwrap_or_default()
    ));
    adopt(
        launch,
        parsed,
        &program,
        root,
        &probe,
        &["PATH", "VIRTUAL_ENV"],
    );
    Ok(())
}

/// Run `program` with the server's own arguments, from the package tree `root`, with the
/// runner's variables `keys` as the probe saw them.
fn adopt(
    launch: &mut Launch,
    parsed: &ServerCommand,
    program: &Path,
    root: Option<PathBuf>,
    probe: &Probe,
    keys: &[&str],
) {
    let mut command = vec![program.to_string_lossy().into_owned()];
    command.extend(parsed.server_args().iter().cloned());
    launch.command = command;
    launch.package_root = root;
    for key in keys {
        if let Some(v) = probe.get(key) {
            launch.env.push((key.to_string(), v.to_string()));
        }
    }
}

/// `uv [--directory D] run [opts] script.py|command args`: the project's `.venv`, synced by uv
/// outside the jail.
fn resolve_uv_run(
    parsed: &ServerCommand,
    env: &[(OsString, OsString)],
    launch: &mut Launch,
) -> Result<(), LaunchError> {
    // The probe runs where the original command ran (uv applies `--directory` itself); the
    // server then runs in that directory.
    let probe_cwd = launch.cwd.clone();
    if let Some(d) = &parsed.directory {
        launch.cwd = launch.cwd.join(d);
    }
    let mut probe_argv = runner_options(parsed);
    probe_argv.extend(["env".into(), "-0".into()]);
    let label = "`uv run` (syncing the project outside the jail)".to_string();
    // `uv --offline run …`: the global flag goes right after the program.
    let (probe, _) = run_uv_probe(&probe_argv, 1, &probe_cwd, env, &label).map_err(|e| {
        err(
            e,
            format!(
                "run the server once without mcpjail (`{}`) to see uv's own error",
                parsed.argv.join(" ")
            ),
        )
    })?;
    let dirs = probe.path_dirs();
    let find = |name: &str| dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p));
    let mut command = Vec::new();
    if let Some(script) = parsed.script() {
        let python = find("python").or_else(|| find("python3")).ok_or_else(|| {
            err(
                "uv run gave no python on its PATH",
                "check the project's Python with `uv run python --version`",
            )
        })?;
        command.push(python.to_string_lossy().into_owned());
        command.push(launch.cwd.join(script).to_string_lossy().into_owned());
    } else if let Some(name) = &parsed.package_command {
        let program = find(name).ok_or_else(|| {
            err(
                format!("uv run found no program `{name}` on the project's PATH"),
                "check the name with `uv run which NAME`",
            )
        })?;
        command.push(program.to_string_lossy().into_owned());
    } else {
        return Err(err(
            "`uv run` names nothing to run",
            "write the script or command after `run`",
        ));
    }
    command.extend(parsed.server_args().iter().cloned());
    let venv = probe.get("VIRTUAL_ENV").map(PathBuf::from);
    launch.notes.push(format!(
        "uv run: project synced outside the jail in {} ms; the jail runs {} in {} with read+exec \
         on {}",
        probe.elapsed.as_millis(),
        command.join(" "),
        launch.cwd.display(),
        venv.as_deref()
            .map(|v| v.display().to_string())
            .unwrap_or_else(|| "the interpreter".into())
    ));
    launch.command = command;
    launch.package_root = venv;
    launch.project_dir = Some(launch.cwd.clone());
    for key in ["PATH", "VIRTUAL_ENV"] {
        if let Some(v) = probe.get(key) {
            launch.env.push((key.into(), v.to_string()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_file_lines() {
        let vars = parse_env_file(
            "# comment\nexport A=1\nB = \"two words\"\nC='x#y'\nD=plain # trailing\nnot a line\n\n",
        );
        assert_eq!(
            vars,
            vec![
                ("A".into(), "1".into()),
                ("B".into(), "two words".into()),
                ("C".into(), "x#y".into()),
                ("D".into(), "plain".into()),
            ]
        );
    }

    #[test]
    fn env_file_option_is_read_here_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".env"), "TOKEN=abc\n").unwrap();
        let argv: Vec<String> = ["node", "--env-file", ".env", "server.js", "/d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let l = resolve(&argv, dir.path(), &[]).unwrap();
        assert_eq!(l.command, ["node", "server.js", "/d"]);
        assert_eq!(l.env_file, vec![("TOKEN".to_string(), "abc".to_string())]);
        assert!(
            l.env.is_empty(),
            "the file's variables are the server's only"
        );
        let argv: Vec<String> = ["node", "--env-file=.missing", "server.js"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert!(resolve(&argv, dir.path(), &[]).is_err());
    }

    #[test]
    fn default_bin_follows_npx_rules() {
        let dir = tempfile::tempdir().unwrap();
        let pj = dir.path().join("package.json");
        std::fs::write(&pj, r#"{"bin":"dist/index.js"}"#).unwrap();
        assert_eq!(default_bin(&pj, "@s/server-x").as_deref(), Some("server-x"));
        std::fs::write(&pj, r#"{"bin":{"mcp-server-x":"d.js"}}"#).unwrap();
        assert_eq!(
            default_bin(&pj, "@s/server-x").as_deref(),
            Some("mcp-server-x")
        );
        std::fs::write(&pj, r#"{"bin":{"a":"a.js","server-x":"b.js"}}"#).unwrap();
        assert_eq!(default_bin(&pj, "@s/server-x").as_deref(), Some("server-x"));
        std::fs::write(&pj, r#"{"bin":{"a":"a.js","b":"b.js"}}"#).unwrap();
        assert_eq!(default_bin(&pj, "@s/server-x"), None);
    }
}
