//! Building a Scope: policy file → server argv (and path-naming env vars) → flags, plus the
//! always-denied set.
//!
//! Sources, each adding to the scope (DESIGN.md "Derivation"):
//! 1. a policy file: `--policy FILE`, else `$XDG_CONFIG_HOME/mcpjail/servers/<name>.toml` if it
//!    exists (see [`PolicyFile`] for the schema; relative paths in it are relative to the file's
//!    directory; unknown keys are errors with their line);
//! 2. the server's argv: positional arguments and `--flag=VALUE` values that name existing files
//!    or directories become **write** scope (that is what the server was told it may use), except
//!    the program, the script an interpreter runs, a package an `npx`/`uvx` runs, and anything
//!    inside the server's install tree (`node_modules`, a venv, `site-packages`), which are
//!    runtime and go to `exec`. Arguments that look like paths but do not exist are reported in
//!    `notes` and not granted. A policy file with `ignore_argv = true` skips this step;
//! 3. with [`derive_scope_with_env`], the environment variables the jail passes to the server
//!    (`--env-keep`) whose *names* say they hold a path (`MEMORY_FILE_PATH`, `DATA_DIR`, …;
//!    ambient ones like `HOME`, `PATH`, `XDG_*` and anything under `/etc`, `/usr`, … are
//!    ignored): a directory is granted, a file grants its directory (servers write a temp file
//!    next to it and rename) unless that directory is `/` or the home directory, then only the
//!    file. The ambient environment is never used: a shell's `NIX_SSL_CERT_FILE` must not grant
//!    `/etc/ssl/certs`;
//! 4. `--allow-read` / `--allow-write` ([`ScopeSource::Flag`]).
//!
//! Tool schemas and client roots are applied later by the proxy (`ToolInfo`, `Scope::narrowed_to`).
//! Always denied, whatever the sources say: see [`always_denied`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::command::ServerCommand;
use super::detect::{looks_like_path, words, ToolInfo};
use super::resolve::{resolve, ResolveContext};
use super::scope::{ScopeEntry, ScopeSource};
use super::Scope;

// The policy file format, the XDG paths and the deny list live in their own modules; they are
// re-exported here so `policy::derive::X` keeps working.
pub use super::deny::always_denied;
use super::file::line_of;
pub use super::file::{parse_policy_file, PolicyFile, ToolPolicy};
pub use super::xdg::{config_dir, default_policy_path, server_state_dir, state_dir};

/// Everything derivation looks at.
#[derive(Debug, Clone, Default)]
pub struct DeriveInputs {
    /// Server name (for `$XDG_CONFIG_HOME/mcpjail/servers/<name>.toml`).
    pub name: String,
    /// The server command and arguments as the client would run it.
    pub command: Vec<String>,
    /// The server's working directory.
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    /// `--policy FILE`.
    pub policy_file: Option<PathBuf>,
    /// `--allow-read` / `--allow-write` (ephemeral).
    pub allow_read: Vec<PathBuf>,
    pub allow_write: Vec<PathBuf>,
}

/// The derived scope plus notes worth telling the user (argv paths that do not exist, ...).
#[derive(Debug, Clone)]
pub struct Derived {
    pub scope: Scope,
    pub notes: Vec<String>,
    /// The policy file that was read, if any.
    pub policy_file: Option<PathBuf>,
    /// Per-tool settings from the policy file (`[tools.NAME] read_only = true`).
    pub tools: BTreeMap<String, ToolPolicy>,
    /// The policy file's `state` directories (also in the write scope): whoever starts the
    /// server creates the missing ones first.
    pub state_dirs: Vec<PathBuf>,
    /// The policy file's `[kinds]`: what each scope path was when the file was written (paths
    /// absolute, not resolved: a link planted since must not be followed). Whoever starts the
    /// server refuses if one changed ([`crate::sandbox::check_recorded_kinds`]).
    pub recorded_kinds: Vec<(PathBuf, crate::sandbox::PathKind)>,
}

impl Derived {
    /// Does the policy file force `tool` read-only (whatever its annotations say)?
    pub fn tool_forced_read_only(&self, tool: &str) -> bool {
        self.tools.get(tool).is_some_and(|t| t.read_only)
    }

    /// Apply the policy file's per-tool settings to what `tools/list` said: a tool the file
    /// marks read-only stays read-only even if the server stops saying so (call this on every
    /// [`ToolInfo`] the proxy learns).
    pub fn apply_tool_policy(&self, info: &mut ToolInfo) {
        if self.tool_forced_read_only(&info.name) {
            info.read_only = true;
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    #[error("policy file {path}: {message}")]
    PolicyFile { path: PathBuf, message: String },
    #[error("{0}")]
    Resolve(#[from] super::ResolveError),
}

/// Derive the Scope for a server (see DESIGN.md "Derivation" and the module docs), without
/// looking at environment variables: the jail scrubs the server's environment, so only the
/// variables it passes through (`--env-keep`) can name paths; give those to
/// [`derive_scope_with_env`].
pub fn derive_scope(inputs: &DeriveInputs) -> Result<Derived, DeriveError> {
    derive_scope_with_env(inputs, &[])
}

/// [`derive_scope`] plus the environment variables the server will really get (those the jail
/// passes through). Only variables whose names say they hold a path are looked at (see the
/// module docs); paths under system directories are never granted from the environment.
pub fn derive_scope_with_env(
    inputs: &DeriveInputs,
    env: &[(String, String)],
) -> Result<Derived, DeriveError> {
    let ctx = ResolveContext {
        cwd: inputs.cwd.clone(),
        home: inputs.home.clone(),
    };
    let mut scope = Scope::default();
    let mut notes = Vec::new();

    // 1. Policy file.
    let policy_path = match &inputs.policy_file {
        Some(p) => Some(ctx.cwd.join(p)),
        None => default_policy_path(&inputs.name, inputs.home.as_deref()).filter(|p| p.is_file()),
    };
    let mut policy = PolicyFile::default();
    let mut state_dirs = Vec::new();
    let mut recorded_kinds = Vec::new();
    if let Some(path) = &policy_path {
        let text = std::fs::read_to_string(path).map_err(|e| DeriveError::PolicyFile {
            path: path.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        policy = parse_policy_file(path, &text)?;
        let file_ctx = ResolveContext {
            cwd: path.parent().map(Path::to_path_buf).unwrap_or_default(),
            home: inputs.home.clone(),
        };
        for (list, field) in [
            (&policy.read, "read"),
            (&policy.write, "write"),
            (&policy.state, "state"),
        ] {
            let write = field != "read";
            for raw in list {
                let resolved = resolve(raw, &file_ctx).map_err(|e| DeriveError::PolicyFile {
                    path: path.clone(),
                    message: format!("line {}: field `{field}`: {raw}: {e}", line_of(&text, raw)),
                })?;
                if field == "state" {
                    state_dirs.push(resolved.clone());
                } else if !resolved.exists() {
                    notes.push(format!(
                        "policy file entry {raw} ({}) does not exist yet",
                        resolved.display()
                    ));
                }
                let entry = ScopeEntry {
                    path: resolved,
                    source: ScopeSource::PolicyFile(path.clone()),
                };
                push_read_or_write(&mut scope, write, entry);
            }
        }
        for (raw, kind) in &policy.kinds {
            if raw.is_empty() || raw.contains('\0') {
                return Err(DeriveError::PolicyFile {
                    path: path.clone(),
                    message: format!(
                        "line {}: table `kinds`: {raw:?} is not a path",
                        line_of(&text, raw)
                    ),
                });
            }
            recorded_kinds.push((file_ctx.cwd.join(raw), *kind));
        }
    }

    // 2. Argv.
    let analysis = analyse_command(&inputs.command, &ctx);
    for p in &analysis.runtime {
        push_entry(
            &mut scope.exec,
            ScopeEntry {
                path: p.clone(),
                source: ScopeSource::Runtime,
            },
        );
    }
    if policy.ignore_argv {
        if !analysis.data.is_empty() {
            notes.push("the policy file sets ignore_argv: paths in the server's arguments were not granted".into());
        }
    } else {
        for (raw, path) in &analysis.data {
            if inputs
                .home
                .as_deref()
                .is_some_and(|h| canonical_eq(h, path))
                || path == Path::new("/")
            {
                notes.push(format!(
                    "argument {raw} grants the whole of {} to the server",
                    path.display()
                ));
            }
            push_entry(
                &mut scope.write,
                ScopeEntry {
                    path: path.clone(),
                    source: ScopeSource::Argv(raw.clone()),
                },
            );
        }
    }
    notes.extend(analysis.notes);

    // 3. Environment variables that name paths.
    for (key, value) in env {
        if let Some((path, note)) = env_path(key, value, &ctx, &mut notes) {
            notes.push(note);
            push_entry(
                &mut scope.write,
                ScopeEntry {
                    path,
                    source: ScopeSource::Argv(format!("{key}={value}")),
                },
            );
        }
    }

    // 4. Flags.
    for (list, write) in [(&inputs.allow_read, false), (&inputs.allow_write, true)] {
        for p in list {
            let raw = p.to_string_lossy();
            let resolved = resolve(&raw, &ctx)?;
            if !resolved.exists() {
                notes.push(format!(
                    "--allow-{} {} does not exist yet",
                    if write { "write" } else { "read" },
                    resolved.display()
                ));
            }
            let entry = ScopeEntry {
                path: resolved,
                source: ScopeSource::Flag,
            };
            push_read_or_write(&mut scope, write, entry);
        }
    }

    // Validated when the file was parsed.
    scope.net.allow_domains = policy
        .net
        .allow_domains
        .iter()
        .filter_map(|r| super::net::DomainRule::parse(r).ok())
        .collect();
    scope.deny = always_denied(inputs.home.as_deref());
    for d in &policy.deny {
        if !scope.deny.contains(d) {
            scope.deny.push(d.clone());
        }
    }

    Ok(Derived {
        scope,
        notes,
        policy_file: policy_path,
        tools: policy.tools,
        state_dirs,
        recorded_kinds,
    })
}

fn canonical_eq(a: &Path, b: &Path) -> bool {
    std::fs::canonicalize(a).map(|a| a == b).unwrap_or(a == b)
}

/// Add `entry` to the write scope or, when `write` is false, to the read scope.
fn push_read_or_write(scope: &mut Scope, write: bool, entry: ScopeEntry) {
    push_entry(
        if write {
            &mut scope.write
        } else {
            &mut scope.read
        },
        entry,
    );
}

fn push_entry(list: &mut Vec<ScopeEntry>, entry: ScopeEntry) {
    if !list.iter().any(|e| e.path == entry.path) {
        list.push(entry);
    }
}

/// Ambient variables that name paths but are not the server's data.
fn is_ambient_env(key: &str) -> bool {
    const EXACT: &[&str] = &[
        "HOME",
        "PATH",
        "PWD",
        "OLDPWD",
        "TMPDIR",
        "TMP",
        "TEMP",
        "SHELL",
        "USER",
        "LOGNAME",
        "NODE_PATH",
        "PYTHONPATH",
        "PYTHONHOME",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "MANPATH",
        "INFOPATH",
        "CDPATH",
        "GOPATH",
        "GOROOT",
        "JAVA_HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "NVM_DIR",
        "PYENV_ROOT",
        "UV_CACHE_DIR",
        "NPM_CONFIG_CACHE",
        "SSH_AUTH_SOCK",
        "KUBECONFIG",
        "DOCKER_CONFIG",
        "GNUPGHOME",
        "XAUTHORITY",
        "TERMINFO",
        "TERMINFO_DIRS",
        "MAIL",
        "EDITOR",
        "VISUAL",
        "PAGER",
    ];
    const PREFIXES: &[&str] = &[
        "XDG_", "LD_", "DYLD_", "NPM_", "CARGO_", "RUSTUP_", "PYENV_", "NVM_", "SSL_", "GIT_",
        "MCPJAIL_",
    ];
    EXACT.contains(&key) || PREFIXES.iter().any(|p| key.starts_with(p))
}

/// A path an env var gives the server, and the note explaining the grant.
fn env_path(
    key: &str,
    value: &str,
    ctx: &ResolveContext,
    notes: &mut Vec<String>,
) -> Option<(PathBuf, String)> {
    if is_ambient_env(key) {
        return None;
    }
    let key_words = words(key);
    let says_path = key_words.iter().any(|w| {
        matches!(
            w.as_str(),
            "path" | "file" | "dir" | "directory" | "folder" | "root" | "db" | "database"
        )
    });
    if !says_path || value.is_empty() || value.contains(':') && !value.starts_with("file:") {
        return None;
    }
    if !(value.starts_with('/') || value.starts_with('~') || value.starts_with("$HOME")) {
        return None;
    }
    let path = resolve(value, ctx).ok()?;
    if let Some(why) = file_symlink_escape(value, &path, ctx) {
        notes.push(format!("environment {key}={value}: {why}"));
        return None;
    }
    const SYSTEM: &[&str] = &[
        "/etc", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/proc", "/sys", "/dev", "/boot",
        "/run", "/var/lib", "/opt",
    ];
    if SYSTEM.iter().any(|d| path.starts_with(d)) || path == Path::new("/") {
        return None;
    }
    let names_file = path.is_file()
        || (!path.exists()
            && key_words
                .iter()
                .any(|w| w == "file" || w == "db" || w == "database"));
    if !names_file {
        return Some((
            path.clone(),
            format!(
                "environment {key}={value}: the server may use {}",
                path.display()
            ),
        ));
    }
    // The file itself, never its directory: that directory may be `~/.config` or HOME, full of
    // other programs' files. The jail adds the directory for temp-file-and-rename writes only
    // where that exposes nothing (see `sandbox::prepare`).
    Some((
        path.clone(),
        format!(
            "environment {key}={value}: the server may use the file {} (its directory only \
             where the jail finds it safe to grant, for temporary files and renames)",
            path.display()
        ),
    ))
}

/// What the command line says about the server.
#[derive(Debug, Default)]
struct CommandAnalysis {
    /// Program, script, package install trees (canonical).
    runtime: Vec<PathBuf>,
    /// (argument as written, canonical existing path) for data scope.
    data: Vec<(String, PathBuf)>,
    notes: Vec<String>,
}

/// The server's runtime paths as seen from its command line, canonical: the program (found on
/// `PATH` when it has no `/`), the script an interpreter runs, and the install tree around
/// either (the outermost `node_modules`, a venv root with `pyvenv.cfg`, or a `site-packages`
/// directory). Cheap: a few `stat`s, no process is run. It does not list system libraries,
/// interpreter prefixes beyond the program's own venv, or package caches (`npx`/`uvx`
/// downloads); the sandbox's runtime discovery adds those.
pub fn runtime_paths(command: &[String], cwd: &Path) -> Vec<PathBuf> {
    let ctx = ResolveContext {
        cwd: cwd.to_path_buf(),
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
    };
    analyse_command(command, &ctx).runtime
}

fn analyse_command(command: &[String], ctx: &ResolveContext) -> CommandAnalysis {
    let mut out = CommandAnalysis::default();
    let Some((program, args)) = command.split_first() else {
        return out;
    };
    let program_path = find_program(program, &ctx.cwd);
    if let Some(p) = &program_path {
        add_runtime(&mut out.runtime, p, ctx.home.as_deref());
    }
    // One parse of the command line (the same one the jail and the proxy use).
    let parsed = ServerCommand::parse(command);
    for i in parsed.runtime_arg_indexes() {
        let Some(raw) = command.get(i) else { continue };
        // `--require=./hook.cjs`: the value after `=`.
        let value = raw
            .split_once('=')
            .filter(|_| raw.starts_with("--"))
            .map_or(raw.as_str(), |(_, v)| v);
        let base = match &parsed.directory {
            Some(d) => ResolveContext {
                cwd: ctx.cwd.join(d),
                home: ctx.home.clone(),
            },
            None => ctx.clone(),
        };
        if let Ok(p) = resolve(value, &base) {
            if p.exists() {
                add_runtime(&mut out.runtime, &p, ctx.home.as_deref());
            }
        }
    }
    let server_args_start = parsed.server_args_start.saturating_sub(1);

    for a in args.iter().skip(server_args_start) {
        let value = if a.starts_with('-') {
            match a.split_once('=') {
                Some((_, v)) if !v.is_empty() => v,
                _ => continue,
            }
        } else {
            a.as_str()
        };
        let Ok(path) = resolve(value, ctx) else {
            if looks_like_path(value) {
                out.notes
                    .push(format!("argument {a} cannot be resolved; not granted"));
            }
            continue;
        };
        if !path.exists() {
            if looks_like_path(value) {
                out.notes.push(format!(
                    "argument {a} looks like a path but {} does not exist; not granted \
                     (hint: create it, or pass --allow-write {})",
                    path.display(),
                    path.display()
                ));
            }
            continue;
        }
        if let Some(why) = file_symlink_escape(value, &path, ctx) {
            out.notes.push(format!("argument {a}: {why}"));
            continue;
        }
        if out.runtime.iter().any(|r| path.starts_with(r)) {
            out.notes.push(format!(
                "argument {a} is inside the server's runtime ({}); not data scope",
                path.display()
            ));
            continue;
        }
        if !out.data.iter().any(|(_, p)| *p == path) {
            out.data.push((a.clone(), path));
        }
    }
    out
}

/// A file scope named as `value` whose last component is a symlink to a file in another
/// directory: a server that can write next to its file could have replaced the file with a link
/// (`memory.jsonl -> ~/.bashrc`), and following it would grant the link's target at the next
/// start. Refused, with the reason. A symlinked *directory* (`~/proj -> /data/proj`) is the
/// user's own layout and is followed as before — unless it leads into the home directory's
/// own settings (HOME itself, one of its ancestors, or anything under a dot-directory of it:
/// `~/.config`, `~/.local`): a link like `data/cache -> ~/.config` in a cloned repository
/// would otherwise hand the server the user's settings and autostart files behind a name that
/// looks like the project's.
fn file_symlink_escape(value: &str, canonical: &Path, ctx: &ResolveContext) -> Option<String> {
    let value = value.strip_prefix("file://").unwrap_or(value);
    let lexical = match (value.strip_prefix("~/"), ctx.home.as_deref()) {
        (Some(rest), Some(h)) => h.join(rest),
        _ => match (value.strip_prefix("$HOME/"), ctx.home.as_deref()) {
            (Some(rest), Some(h)) => h.join(rest),
            _ => ctx.cwd.join(value),
        },
    };
    let meta = std::fs::symlink_metadata(&lexical).ok()?;
    if !meta.file_type().is_symlink() {
        return None;
    }
    if canonical.is_dir() {
        return dir_symlink_into_home_settings(&lexical, canonical, ctx.home.as_deref());
    }
    let declared = lexical
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())?;
    if canonical.parent() == Some(declared.as_path()) {
        return None;
    }
    Some(format!(
        "{} is a symlink to {}, outside its directory {}; not granted (a file scope must be the \
         file itself: a server could have replaced its file with a link; hint: name the target \
         directly if you mean it)",
        lexical.display(),
        canonical.display(),
        declared.display()
    ))
}

/// See [`file_symlink_escape`]: a directory link whose target is HOME, an ancestor of it, or
/// lies under one of HOME's dot-directories.
fn dir_symlink_into_home_settings(
    lexical: &Path,
    canonical: &Path,
    home: Option<&Path>,
) -> Option<String> {
    let home = home.and_then(|h| std::fs::canonicalize(h).ok())?;
    let into_settings = canonical
        .strip_prefix(&home)
        .ok()
        .and_then(|rest| rest.components().next())
        .is_some_and(|first| first.as_os_str().to_string_lossy().starts_with('.'));
    if !home.starts_with(canonical) && !into_settings {
        return None;
    }
    Some(format!(
        "{} is a symlink to {}, the home directory's own {}; not granted (a link in a project \
         must not open the user's settings behind the project's name; hint: name the target \
         directly, e.g. --allow-write {}, if you mean it)",
        lexical.display(),
        canonical.display(),
        if home.starts_with(canonical) {
            "tree"
        } else {
            "settings"
        },
        canonical.display()
    ))
}

/// `program` as the OS would find it: a path if it has a `/`, else the first match on `PATH`.
fn find_program(program: &str, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return p.exists().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        let candidate = cwd.join(dir).join(program);
        if candidate.is_file() {
            return Some(candidate);
        }
    }
    None
}

/// Record `p` (as typed and canonical), the install tree around it, the prefix of an interpreter
/// install (`/opt/py/bin/python3` → `/opt/py`, where its standard library lives; see
/// [`interpreter_prefix`]) and the interpreter of a `#!` script.
///
/// Never `/`, the home directory or one of its ancestors: a prefix that wide (`~/bin/server`
/// gives `~`) is replaced by the file it came from.
fn add_runtime(runtime: &mut Vec<PathBuf>, p: &Path, home: Option<&Path>) {
    let home = home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()));
    add_runtime_depth(runtime, p, home.as_deref(), 0);
}

fn add_runtime_depth(runtime: &mut Vec<PathBuf>, p: &Path, home: Option<&Path>, depth: usize) {
    let resolved = std::fs::canonicalize(p).ok();
    let canonical = resolved.clone().unwrap_or_else(|| p.to_path_buf());
    let mut roots = Vec::new();
    // The path as written, then the canonical one: the same path once when `p` is canonical.
    let candidates = if canonical == p {
        vec![canonical.clone()]
    } else {
        vec![p.to_path_buf(), canonical.clone()]
    };
    for candidate in candidates {
        roots.push(install_root(&candidate).unwrap_or_else(|| candidate.clone()));
    }
    if let Some(prefix) = interpreter_prefix(&canonical) {
        roots.push(prefix);
    }
    for root in roots {
        // An ancestor of a canonical path (every root found from it) is canonical already.
        let root = if resolved.is_some() && canonical.starts_with(&root) {
            root
        } else {
            std::fs::canonicalize(&root).unwrap_or(root)
        };
        let too_wide = root.parent().is_none() || home.is_some_and(|h| h.starts_with(&root));
        let root = if too_wide { canonical.clone() } else { root };
        if !runtime.iter().any(|r| root.starts_with(r)) {
            runtime.retain(|r| !r.starts_with(&root));
            runtime.push(root);
        }
    }
    // `#!/path/to/python` scripts (console entry points in a venv, `.bin/` shims): the
    // interpreter is runtime too. One level is enough; a shebang chain is not followed further.
    if depth == 0 {
        if let Some(interp) = shebang_interpreter(&canonical) {
            add_runtime_depth(runtime, &interp, home, depth + 1);
        }
    }
}

/// `<prefix>/bin/<interpreter>` → `<prefix>`, where the interpreter's standard library or
/// bundled modules live — only for an interpreter (the names the jail's runtime discovery treats
/// as one) whose prefix really is an install (`pyvenv.cfg`, `lib/pythonX.Y`, `lib/node_modules`).
///
/// Any other `<prefix>/bin/<program>` gives nothing: `~/.cargo/bin/server` must not report all
/// of `~/.cargo` (with `credentials.toml`), nor `~/.local/bin/x` all of `~/.local`. Never `/`.
fn interpreter_prefix(program: &Path) -> Option<PathBuf> {
    let bin = program.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    let prefix = bin.parent()?;
    prefix.parent()?;
    let name = program.file_name()?.to_string_lossy();
    let interpreter = name.starts_with("python")
        || name.starts_with("pypy")
        || matches!(&*name, "node" | "nodejs" | "bun" | "deno");
    (interpreter && is_interpreter_install(prefix)).then(|| prefix.to_path_buf())
}

/// Does `prefix` hold an interpreter installation (a venv, a Python or Node prefix)?
fn is_interpreter_install(prefix: &Path) -> bool {
    if prefix.join("pyvenv.cfg").is_file() || prefix.join("lib/node_modules").is_dir() {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(prefix.join("lib")) else {
        return false;
    };
    entries.flatten().any(|e| {
        let n = e.file_name();
        let n = n.to_string_lossy();
        (n.starts_with("python") || n.starts_with("pypy")) && e.path().is_dir()
    })
}

/// The interpreter of a `#!` script: its absolute path, or for `#!/usr/bin/env NAME` the
/// `NAME` found on `PATH`.
fn shebang_interpreter(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let end = line.iter().position(|&b| b == b'\n').unwrap_or(line.len());
    let line = std::str::from_utf8(&line[..end]).ok()?.trim();
    let mut words = line.split_whitespace();
    let interp = words.next()?;
    if interp.ends_with("/env") {
        // `#!/usr/bin/env [-S] node`: the program is looked up on PATH.
        let name = words.find(|w| !w.starts_with('-'))?;
        return find_program(name, Path::new("/"));
    }
    let path = PathBuf::from(interp);
    (path.is_absolute() && path.exists()).then_some(path)
}

/// The install tree a program or script lives in: the outermost `node_modules`, a venv (an
/// ancestor with `pyvenv.cfg`), or a `site-packages`/`dist-packages` directory.
fn install_root(p: &Path) -> Option<PathBuf> {
    let mut found = None;
    for anc in p.ancestors().skip(1) {
        let name = anc.file_name().map(|n| n.to_string_lossy().into_owned());
        match name.as_deref() {
            Some("node_modules") => found = Some(anc.to_path_buf()),
            Some("site-packages" | "dist-packages") if found.is_none() => {
                found = Some(anc.to_path_buf())
            }
            _ => {}
        }
        if anc.join("pyvenv.cfg").is_file() {
            return Some(anc.to_path_buf());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    struct Fx {
        _d: tempfile::TempDir,
        root: PathBuf,
    }

    fn fx() -> Fx {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        for dir in [
            "home",
            "proj",
            "data",
            "app/node_modules/@x/server/dist",
            "app/node_modules/.bin",
            "venv/bin",
            "venv/lib/python3.12/site-packages/srv",
        ] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("app/node_modules/@x/server/dist/index.js"), "").unwrap();
        symlink(
            "../@x/server/dist/index.js",
            root.join("app/node_modules/.bin/server"),
        )
        .unwrap();
        std::fs::write(root.join("venv/pyvenv.cfg"), "").unwrap();
        std::fs::write(root.join("venv/bin/python"), "").unwrap();
        std::fs::write(root.join("proj/server.py"), "").unwrap();
        std::fs::write(root.join("data/notes.txt"), "").unwrap();
        Fx { _d: d, root }
    }

    fn inputs(f: &Fx, cmd: Vec<String>) -> DeriveInputs {
        DeriveInputs {
            name: "t".into(),
            command: cmd,
            cwd: f.root.join("proj"),
            home: Some(f.root.join("home")),
            ..Default::default()
        }
    }

    /// Derivation without this test process's environment.
    fn derive(i: &DeriveInputs) -> Result<Derived, DeriveError> {
        derive_scope_with_env(i, &[])
    }

    fn paths(entries: &[ScopeEntry]) -> Vec<PathBuf> {
        entries.iter().map(|e| e.path.clone()).collect()
    }

    #[test]
    fn node_server_dirs_become_write_scope_runtime_does_not() {
        let f = fx();
        let bin = f.root.join("app/node_modules/.bin/server");
        let d = derive(&inputs(
            &f,
            vec![
                "node".into(),
                bin.to_string_lossy().into(),
                f.root.join("data").to_string_lossy().into(),
                "--root=../proj".into(),
                "--config".into(),
                "./missing.json".into(),
                f.root.join("app/node_modules/@x").to_string_lossy().into(),
                "stdio".into(),
                "8080".into(),
            ],
        ))
        .unwrap();
        assert_eq!(
            paths(&d.scope.write),
            vec![f.root.join("data"), f.root.join("proj")]
        );
        assert_eq!(
            d.scope.write[1].source,
            ScopeSource::Argv("--root=../proj".into())
        );
        assert!(paths(&d.scope.exec).contains(&f.root.join("app/node_modules")));
        assert!(
            d.notes.iter().any(|n| n.contains("./missing.json")),
            "{:?}",
            d.notes
        );
        assert!(
            d.notes.iter().any(|n| n.contains("runtime")),
            "{:?}",
            d.notes
        );
        assert!(d.scope.read.is_empty());
    }

    #[test]
    fn python_script_and_module_forms() {
        let f = fx();
        let py = f
            .root
            .join("venv/bin/python")
            .to_string_lossy()
            .into_owned();
        let d = derive(&inputs(
            &f,
            vec![py.clone(), "server.py".into(), "../data".into()],
        ))
        .unwrap();
        assert_eq!(paths(&d.scope.write), vec![f.root.join("data")]);
        let exec = paths(&d.scope.exec);
        assert!(exec.contains(&f.root.join("venv")), "{exec:?}");
        assert!(exec.contains(&f.root.join("proj/server.py")), "{exec:?}");
        // `-m module`: the next word is a module, the rest are server args.
        let d = derive(&inputs(
            &f,
            vec![
                py,
                "-m".into(),
                "srv".into(),
                "--repository".into(),
                "../data".into(),
            ],
        ))
        .unwrap();
        assert_eq!(paths(&d.scope.write), vec![f.root.join("data")]);
    }

    #[test]
    fn package_runners_and_native_programs() {
        let f = fx();
        let d = derive(&inputs(
            &f,
            s(&[
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "../data",
            ]),
        ))
        .unwrap();
        assert_eq!(paths(&d.scope.write), vec![f.root.join("data")]);
        let d = derive(&inputs(
            &f,
            s(&["uvx", "--from", "x", "mcp-server-git", "--repository", "."]),
        ))
        .unwrap();
        assert_eq!(paths(&d.scope.write), vec![f.root.join("proj")]);
        // A native program: every argument is the server's.
        let d = derive(&inputs(&f, s(&["/bin/true", "../data/notes.txt"]))).unwrap();
        assert_eq!(paths(&d.scope.write), vec![f.root.join("data/notes.txt")]);
        let true_bin = std::fs::canonicalize("/bin/true").unwrap();
        assert!(paths(&d.scope.exec).iter().any(|p| true_bin.starts_with(p)));
    }

    #[test]
    fn policy_file_flags_and_deny() {
        let f = fx();
        let pol = f.root.join("pol.toml");
        std::fs::write(
            &pol,
            "read = [\"data\"]\nwrite = [\"~/w\"]\ndeny = [\"**/*.db\"]\nignore_argv = true\n[tools.write_file]\nread_only = true\n",
        )
        .unwrap();
        let mut i = inputs(&f, s(&["/bin/true", "."]));
        i.policy_file = Some(pol.clone());
        i.allow_read = vec![PathBuf::from("../app")];
        let d = derive(&i).unwrap();
        assert_eq!(
            paths(&d.scope.read),
            vec![f.root.join("data"), f.root.join("app")]
        );
        assert_eq!(d.scope.read[0].source, ScopeSource::PolicyFile(pol.clone()));
        assert_eq!(d.scope.read[1].source, ScopeSource::Flag);
        assert_eq!(paths(&d.scope.write), vec![f.root.join("home/w")]);
        assert!(d.scope.deny.contains(&"**/*.db".to_string()));
        assert!(d.tool_forced_read_only("write_file"));
        let mut t = ToolInfo {
            name: "write_file".into(),
            path_args: vec!["/path".into()],
            read_only: false,
            weak_path_args: vec![],
            ..Default::default()
        };
        d.apply_tool_policy(&mut t);
        assert!(t.read_only);
        assert!(d.notes.iter().any(|n| n.contains("ignore_argv")));
        assert!(d.notes.iter().any(|n| n.contains("does not exist yet")));
    }

    #[test]
    fn policy_file_kinds_are_optional_and_checked_for_values() {
        let p = Path::new("/x/p.toml");
        let old = parse_policy_file(p, "write = [\"/d\"]\n").unwrap();
        assert!(old.kinds.is_empty());
        let new =
            parse_policy_file(p, "write = [\"/d\"]\n[kinds]\n\"/d\" = \"directory\"\n").unwrap();
        assert_eq!(
            new.kinds.get("/d"),
            Some(&crate::sandbox::PathKind::Directory)
        );
        let err = parse_policy_file(p, "[kinds]\n\"/d\" = \"folder\"\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn policy_file_errors_name_line_and_field() {
        let p = Path::new("/x/p.toml");
        let err = parse_policy_file(p, "read = []\n\nwrtie = [\"a\"]\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("line 3") && msg.contains("wrtie"), "{msg}");
        let err = parse_policy_file(p, "read = \"notalist\"\n").unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
        let err = parse_policy_file(p, "deny = [\"ok\",\n  \"[bad\"]\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        let err = parse_policy_file(p, "[tools.x]\nreadonly = true\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn default_policy_file_is_found_by_name() {
        let f = fx();
        let path = default_policy_path("srv", Some(&f.root.join("home"))).unwrap();
        // The test must not depend on the caller's XDG_CONFIG_HOME.
        if std::env::var_os("XDG_CONFIG_HOME").is_some() {
            return;
        }
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "write = [\"/tmp\"]\n").unwrap();
        let mut i = inputs(&f, s(&["/bin/true"]));
        i.name = "srv".into();
        let d = derive(&i).unwrap();
        assert_eq!(d.policy_file, Some(path));
        assert_eq!(
            paths(&d.scope.write),
            vec![std::fs::canonicalize("/tmp").unwrap()]
        );
        assert!(default_policy_path("../x", None).is_none());
        assert!(default_policy_path("a/b", Some(Path::new("/h"))).is_none());
    }

    #[test]
    fn env_paths() {
        let f = fx();
        let i = inputs(&f, s(&["/bin/true"]));
        let mem = f.root.join("data/memory.json");
        let env: Vec<(String, String)> = vec![
            ("MEMORY_FILE_PATH".into(), mem.to_string_lossy().into()),
            ("HOME".into(), f.root.join("home").to_string_lossy().into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("API_TOKEN".into(), "/not/a/path".into()),
            (
                "NIX_SSL_CERT_FILE".into(),
                "/etc/ssl/certs/ca-certificates.crt".into(),
            ),
            (
                "NOTES_FILE".into(),
                f.root.join("home/notes.md").to_string_lossy().into(),
            ),
        ];
        let d = derive_scope_with_env(&i, &env).unwrap();
        assert_eq!(
            paths(&d.scope.write),
            vec![
                f.root.join("data/memory.json"),
                f.root.join("home/notes.md")
            ]
        );
        assert!(d.notes.iter().any(|n| n.contains("MEMORY_FILE_PATH")));
    }

    #[test]
    fn always_denied_covers_credentials_and_configs() {
        let f = fx();
        let home = f.root.join("home");
        let scope = Scope {
            write: vec![ScopeEntry {
                path: PathBuf::from("/"),
                source: ScopeSource::Flag,
            }],
            deny: always_denied(Some(&home)),
            ..Default::default()
        };
        for bad in [
            home.join(".ssh/id_rsa"),
            home.join(".aws/credentials"),
            home.join(".gnupg/x"),
            home.join(".kube/config"),
            home.join(".docker/config.json"),
            home.join(".claude.json"),
            home.join(".cursor/mcp.json"),
            home.join(".codex/config.toml"),
            PathBuf::from("/p/.env"),
            PathBuf::from("/p/.env.local"),
            PathBuf::from("/p/key.pem"),
            PathBuf::from("/p/id_ed25519"),
            PathBuf::from("/p/.mcp.json"),
            PathBuf::from("/p/.vscode/mcp.json"),
            PathBuf::from("/x/claude_desktop_config.json"),
            home.join(".config/mcpjail/servers/a.toml"),
            home.join(".local/state/mcpjail/pins/a.json"),
            home.join(".local/share/mcpjail/registry/keys/me.pub"),
        ] {
            if std::env::var_os("XDG_CONFIG_HOME").is_some()
                && bad.to_string_lossy().contains("mcpjail")
            {
                continue;
            }
            assert!(
                scope.check(&bad, super::super::Access::Read).is_err(),
                "{} should be denied",
                bad.display()
            );
        }
        for ok in ["/p/src/id_utils.rs", "/p/environment.md", "/p/profile.json"] {
            assert!(
                scope
                    .check(Path::new(ok), super::super::Access::Write)
                    .is_ok(),
                "{ok}"
            );
        }
    }

    #[test]
    fn shebang_interpreter_and_prefix_are_runtime() {
        let f = fx();
        std::fs::create_dir_all(f.root.join("py/bin")).unwrap();
        // A real prefix: the standard library makes it an interpreter install.
        std::fs::create_dir_all(f.root.join("py/lib/python3.12")).unwrap();
        std::fs::write(f.root.join("py/bin/python3"), "").unwrap();
        std::fs::write(
            f.root.join("venv/bin/mcp-server-x"),
            format!("#!{}\nimport x\n", f.root.join("py/bin/python3").display()),
        )
        .unwrap();
        let rt = runtime_paths(
            &[f.root
                .join("venv/bin/mcp-server-x")
                .to_string_lossy()
                .into()],
            &f.root,
        );
        assert!(rt.contains(&f.root.join("venv")), "{rt:?}");
        assert!(rt.contains(&f.root.join("py")), "{rt:?}");
    }

    #[test]
    fn runtime_never_covers_home_or_root() {
        let f = fx();
        let home = f.root.join("home");
        std::fs::create_dir_all(home.join("bin")).unwrap();
        std::fs::write(home.join("bin/server"), "").unwrap();
        let i = DeriveInputs {
            command: vec![home.join("bin/server").to_string_lossy().into()],
            ..inputs(&f, vec![])
        };
        let d = derive(&i).unwrap();
        assert_eq!(paths(&d.scope.exec), vec![home.join("bin/server")]);
    }

    #[test]
    fn runtime_paths_lists_program_and_tree() {
        let f = fx();
        let bin = f.root.join("app/node_modules/.bin/server");
        let rt = runtime_paths(&[bin.to_string_lossy().into(), "/tmp".into()], &f.root);
        assert_eq!(rt, vec![f.root.join("app/node_modules")]);
    }
}
