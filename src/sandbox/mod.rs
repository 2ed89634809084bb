//! The jail: turns a [`crate::policy::Scope`] into kernel enforcement.
//!
//! Linux: Landlock (filesystem, TCP, scoping) plus a seccomp filter, no_new_privs, no
//! capabilities, resource limits, its own session, read-only mounts outside the write grants and
//! an environment scrub, applied in the child before exec. macOS: a Seatbelt profile run
//! with `sandbox-exec`. Every layer reports what it actually enforced (fully / partially / not
//! at all); nothing here silently degrades to "unconfined".
//!
//! What the server may touch is the union of: the Scope (read, write, exec); its runtime,
//! discovered from the command line ([`runtime`]); the system loader, library and certificate
//! paths and a few devices; its own `/proc/<pid>`; and a private per-session `TMPDIR`
//! ([`tmpdir`]), removed when the [`PreparedJail`] is dropped.
//!
//! INTERFACE FIXED (`JailOptions`, `prepare`, `PreparedJail::command`, `PreparedJail::report`).
//! Platform code lives behind module boundaries; callers never write `cfg`.

mod carve;
mod env;
mod explain;
mod kinds;
pub mod launcher;
mod planted;
mod report;
pub mod runtime;
pub mod seatbelt;
mod state;
mod tmpdir;

#[cfg(target_os = "linux")]
mod linux;
/// `openat2(O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, with no fallback (`ENOSYS`
/// before Linux 5.6): the scan tracer's in-scope check.
#[cfg(target_os = "linux")]
pub(crate) use linux::sys::openat2_no_symlinks as open_without_symlinks;
#[cfg(target_os = "linux")]
pub use linux::Spawned as SpawnedServer;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::policy::{Scope, ScopeSource};

pub use explain::{
    explain_failure, explain_start_failure, may_name_a_path, mentions_permission_error, refused_in,
    Cause, Explanation, Fix, Needed, Refused,
};
pub use kinds::{
    check_recorded as check_recorded_kinds, kind_of, observe as observe_kinds, PathKind,
};
pub use report::KernelSupport;

/// How the proxy wants the server jailed.
#[derive(Debug, Clone, Default)]
pub struct JailOptions {
    /// `--no-jail`: run unconfined (diagnosis only).
    pub disabled: bool,
    /// `--require-full`: refuse unless every layer is fully enforced.
    pub require_full: bool,
    /// `--env-keep KEY`: extra environment variables passed to the server.
    pub env_keep: Vec<String>,
    /// The server's private state directory (see `policy::server_state_dir`): created 0700,
    /// granted read-write, and the server's `XDG_{STATE,DATA,CACHE,CONFIG}_HOME` point into it,
    /// so a server that keeps state, caches or settings "in its home" writes there instead of
    /// failing on the real ones it is denied.
    pub state_dir: Option<PathBuf>,
    /// Tests and diagnosis: do not mask denied names inside granted directories in a private
    /// mount namespace; carve them out list-only, as when the kernel refuses the namespace.
    pub force_list_only_carve: bool,
    /// What each scope path was when the scope was derived ([`observe_kinds`]): a jail prepared
    /// later (a respawn) refuses to start if one of them changed kind since (file ↔ directory,
    /// or became a symlink). Empty: nothing recorded, nothing checked.
    pub derived_kinds: Vec<(PathBuf, PathKind)>,
    /// The kinds a policy file records (`[kinds]`) and that file: checked on every jail
    /// prepared from this scope too ([`kinds::check_recorded`]).
    pub policy_kinds: Option<(PathBuf, Vec<(PathBuf, PathKind)>)>,
    /// Variables set for the jailed server over its scrubbed environment: the egress proxy's
    /// `HTTP_PROXY` family (see `proxy::egress::server_env`). Not set under `--no-jail`.
    pub egress_env: Vec<(String, String)>,
    /// Plan as if the kernel lets the server's child create its namespaces instead of probing
    /// (each probe forks a throwaway child: most of a start-up's cost). If the kernel refuses,
    /// the spawn fails and [`PreparedJail::namespace_refusal`] says why: prepare again without
    /// this, and the probes decide what the jail can do. The proxy sets it.
    pub assume_namespaces: bool,
}

/// How well one layer is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    Fully,
    Partially,
    NotEnforced,
}

/// What the jail actually enforces, per layer, for `--log`, `doctor` and `--require-full`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct EnforcementReport {
    pub layers: Vec<LayerReport>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LayerReport {
    /// "landlock", "seccomp", "no_new_privs", "env_scrub", ...
    pub layer: String,
    pub enforcement: Enforcement,
    /// Free-form detail: ABI version, what was carved out or could not be.
    pub detail: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the jail is not fully enforced here ({0}) and --require-full was given")]
    NotFullyEnforced(String),
    #[error("cannot prepare the jail: {0}")]
    Prepare(String),
    #[error(
        "scope path {} was {was} when the scope was derived and is {now} now: refusing to start \
         the server rather than grant what it has become (hint: find out who replaced it; {})",
        path.display(),
        kinds::changed_hint(recorded_in)
    )]
    ScopeKindChanged {
        path: PathBuf,
        was: PathKind,
        now: PathKind,
        /// The policy file that recorded the kind (`None`: recorded when this run derived it).
        recorded_in: Option<PathBuf>,
    },
}

/// The access a path is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantAccess {
    /// List a directory only (its entries are granted separately): used to carve denied names
    /// out of a scope directory.
    List,
    Read,
    ReadExec,
    /// Read and write (create, remove, rename within granted trees), never exec.
    ReadWrite,
}

/// One path the jail opens up, and why (shown in `--log` and failure hints).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Grant {
    pub path: PathBuf,
    pub access: GrantAccess,
    pub why: String,
}

impl Grant {
    /// Whether the grant must name its path exactly, never through a symlink: grants made from
    /// the user's data (scope entries, the private TMPDIR, the state directory), which the
    /// server may be able to replace with a link. System and runtime grants are opened at their
    /// canonical path (`/bin` is a link to `/usr/bin` on merged-usr systems), still without
    /// following a link swapped in after that.
    pub fn names_exact_path(&self) -> bool {
        self.why.starts_with("scope") || self.why == WHY_TMPDIR || self.why == WHY_STATE_DIR
    }
}

const WHY_TMPDIR: &str = "private TMPDIR";
const WHY_STATE_DIR: &str = "the server's private state directory";

#[derive(Debug)]
enum Platform {
    /// `--no-jail`, or a platform without a jail.
    Unconfined,
    #[cfg(target_os = "linux")]
    Linux(Box<linux::LinuxJail>),
    /// The Seatbelt profile, run with `sandbox-exec -p`.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    Seatbelt(String),
}

/// A jail built in the parent, ready to spawn one child (or several, for respawns).
#[derive(Debug)]
pub struct PreparedJail {
    program: PathBuf,
    args: Vec<String>,
    cwd: PathBuf,
    /// `None` = inherit the proxy's environment (`--no-jail` only).
    env: Option<Vec<(OsString, OsString)>>,
    grants: Vec<Grant>,
    notes: Vec<String>,
    platform: Platform,
    report: EnforcementReport,
    /// Declared last so it is removed after everything that refers to it.
    tmp: Option<tmpdir::PrivateTmp>,
}

/// Build the jail for `command` (program + args) run in `cwd` under `scope`.
pub fn prepare(
    scope: &Scope,
    command: &[String],
    cwd: &Path,
    opts: &JailOptions,
) -> Result<PreparedJail, SandboxError> {
    let base: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    prepare_with_env(scope, command, cwd, opts, &base)
}

/// Where the server may write, as far as the launcher must know (a link there may have been
/// planted by it): the write scope, the directory of a write scope that is a file (the jail
/// grants that, see below), and the server's state directory. Wider than the final grants,
/// never narrower.
fn server_writes(scope: &Scope, opts: &JailOptions) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in &scope.write {
        out.push(entry.path.clone());
        if !entry.path.is_dir() {
            if let Some(parent) = entry.path.parent() {
                out.push(parent.to_path_buf());
            }
        }
    }
    if let Some(dir) = &opts.state_dir {
        out.push(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()));
    }
    out
}

/// A runtime directory found where the server may write (a project's own `node_modules` or
/// venv, the directory of a server binary that lies in its own write scope) is granted
/// read-only, not read+exec: the server could have created or filled it, and exec there would
/// let it run programs it wrote itself — at once, since the write grant covers the same files,
/// or at the next start, when discovery finds the directory it made. Reading is all a script's
/// packages need (`require`/`import`; a native addon is mapped, not executed); only spawning a
/// program from there is refused. The program the command names keeps exec: it is what the
/// user asked to run.
fn no_exec_where_the_server_writes(
    mut g: Grant,
    server_writes: &[PathBuf],
    notes: &mut Vec<String>,
) -> Grant {
    if g.access != GrantAccess::ReadExec || g.why == runtime::WHY_PROGRAM {
        return g;
    }
    let Some(root) = server_writes.iter().find(|w| g.path.starts_with(w)) else {
        return g;
    };
    notes.push(format!(
        "{} ({}) lies in {}, which the server may write: granted read-only, not executable, \
         since the server could have put programs there (hint: no flag grants exec where the \
         server writes; a server that must run programs from its install tree needs that tree \
         outside its write grants: grant it only its data directory, e.g. a policy file with \
         `ignore_argv = true` and `write = [\"DATA-DIR\"]`, or install the server elsewhere)",
        g.path.display(),
        g.why,
        root.display()
    ));
    g.access = GrantAccess::Read;
    g
}

/// Add the variables of the command's `--env-file` to the server's environment as Node applies
/// them: after start, under the environment the server already has. A variable already set
/// keeps its value (Node: "the value from the environment takes precedence"), so the file
/// cannot move `PATH`, `HOME`, `TMPDIR` or the jail's own variables. A loader variable (`LD_*`,
/// `DYLD_*`) is left out: Node sets the file's variables in `process.env` after its own loader
/// ran, so they never shape the runtime itself, whereas on the jailed command's environment
/// they would (`LD_PRELOAD` of a library the server wrote). Differences from a direct start:
/// the server's own children do not get such a loader variable, and a variable the jail
/// scrubbed from the environment is taken from the file instead of the environment.
fn apply_env_file(
    env: &mut Vec<(OsString, OsString)>,
    vars: &[(String, String)],
    notes: &mut Vec<String>,
) {
    let mut left_out = Vec::new();
    for (key, value) in vars {
        let loader = key.starts_with("LD_") || key.starts_with("DYLD_");
        if loader || env.iter().any(|(k, _)| k == key.as_str()) {
            left_out.push(key.as_str());
            continue;
        }
        env.push((OsString::from(key), OsString::from(value)));
    }
    if !left_out.is_empty() {
        notes.push(format!(
            "env file variable(s) not given to the server: {} (already set in its environment, \
             which wins as with Node's --env-file, or a loader variable, which Node would not \
             apply to itself)",
            left_out.join(", ")
        ));
    }
}

/// [`prepare`] with an explicit base environment instead of the proxy's own (tests, and callers
/// that build the server's environment themselves).
pub fn prepare_with_env(
    scope: &Scope,
    command: &[String],
    cwd: &Path,
    opts: &JailOptions,
    base_env: &[(OsString, OsString)],
) -> Result<PreparedJail, SandboxError> {
    let (argv0, args) = command
        .split_first()
        .ok_or_else(|| SandboxError::Prepare("no server command given".into()))?;

    if opts.disabled {
        tracing::warn!(
            "--no-jail: the server runs UNCONFINED (no Landlock, no seccomp, full environment); \
             use this for diagnosis only"
        );
        let report = EnforcementReport {
            layers: report::all_off("disabled by --no-jail"),
        };
        if opts.require_full {
            return Err(SandboxError::NotFullyEnforced("--no-jail".into()));
        }
        return Ok(PreparedJail {
            program: PathBuf::from(argv0),
            args: args.to_vec(),
            cwd: cwd.to_path_buf(),
            env: Some(base_env.to_vec()),
            grants: Vec::new(),
            notes: Vec::new(),
            platform: Platform::Unconfined,
            report,
            tmp: None,
        });
    }

    if let Some((file, recorded)) = &opts.policy_kinds {
        kinds::check_recorded(file, recorded)?;
    }
    kinds::check(scope, &opts.derived_kinds)?;

    // A package runner's resolve step runs here, outside the jail, with the user's own
    // environment; only the program it resolves to is jailed.
    let server_writes = server_writes(scope, opts);
    let launch = launcher::resolve_for_jail(command, cwd, base_env, &server_writes)
        .map_err(|e| SandboxError::Prepare(e.to_string()))?;
    // Variables the launcher sets for the server (its PATH, VIRTUAL_ENV, an --env-file's):
    // set over the base environment and kept through the scrub.
    let launch_env = &launch.env;
    let mut with_launch: Vec<(OsString, OsString)> = base_env
        .iter()
        .filter(|(k, _)| !launch_env.iter().any(|(lk, _)| k == lk.as_str()))
        .cloned()
        .collect();
    with_launch.extend(
        launch_env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    let base_env = &with_launch[..];
    let cwd = launch.cwd.as_path();
    let args = launch.command.get(1..).unwrap_or_default();
    let discover_env = runtime::DiscoverEnv { vars: base_env };
    let rt = runtime::discover(&launch.command, cwd, &discover_env)?;
    let tmp = tmpdir::PrivateTmp::create()?;

    let mut notes = launch.notes.clone();
    notes.extend(rt.notes.iter().cloned());
    let home = base_env
        .iter()
        .find(|(k, _)| k == "HOME")
        .map(|(_, v)| PathBuf::from(v));
    let compiled_deny = carve::deny_set(&scope.deny, home.as_deref(), &mut notes);
    let deny = compiled_deny.as_deref();
    let mut carved = carve::CarvePlan::default();
    let mut grants = runtime::system_grants(scope.net.allow_all);
    // Runtime grants can be a project's own directory (a script's siblings): denied names in it
    // (`.env`) are carved out as in scope directories.
    for g in rt.grants.iter().cloned() {
        let g = no_exec_where_the_server_writes(g, &server_writes, &mut notes);
        if let Some(note) = planted::runtime_grant(&g, &rt.from_files, scope) {
            tracing::warn!("jail: {note}");
            notes.push(note);
            continue;
        }
        if let Some(set) = deny {
            if g.path.ancestors().any(|a| set.is_match(a)) {
                notes.push(format!(
                    "runtime path {} matches a deny pattern: not granted",
                    g.path.display()
                ));
                continue;
            }
        }
        match deny {
            Some(set) if g.access == GrantAccess::Read => carved.add(g, Some(set), &mut notes),
            _ => grants.push(g),
        }
    }
    grants.push(Grant {
        path: tmp.path().to_path_buf(),
        access: GrantAccess::ReadWrite,
        why: WHY_TMPDIR.into(),
    });
    let mut xdg_env: Vec<(OsString, OsString)> = Vec::new();
    let mut state_ready = false;
    if let Some(dir) = &opts.state_dir {
        match state::prepare(dir).and_then(|vars| Ok((state::exact_path(dir)?, vars))) {
            Ok((dir, vars)) => {
                notes.push(format!(
                    "private state directory {} (read-write; the server's XDG_STATE_HOME, \
                     XDG_DATA_HOME, XDG_CACHE_HOME and XDG_CONFIG_HOME point into it)",
                    dir.display()
                ));
                grants.push(Grant {
                    path: dir,
                    access: GrantAccess::ReadWrite,
                    why: WHY_STATE_DIR.into(),
                });
                xdg_env = vars;
                state_ready = true;
            }
            Err(e) => notes.push(format!(
                "no private state directory: cannot create {}: {e}",
                dir.display()
            )),
        }
    }
    let scope_grants = scope
        .read
        .iter()
        .map(|e| (e, GrantAccess::Read, "scope (read)"))
        .chain(
            scope
                .write
                .iter()
                .map(|e| (e, GrantAccess::ReadWrite, "scope (write)")),
        )
        .chain(
            scope
                .exec
                .iter()
                .map(|e| (e, GrantAccess::ReadExec, "scope (exec)")),
        );
    for (entry, access, why) in scope_grants {
        if entry.source != ScopeSource::Runtime {
            if let Some(changed) = planted::changed_since_derived(&entry.path) {
                tracing::warn!("jail: {changed}");
                notes.push(changed);
                continue;
            }
        }
        // The jail's own runtime discovery is the authority for runtime paths: it is narrower
        // than a prefix guess (`<prefix>/bin/server` must not open all of `<prefix>`, which for
        // `~/.local/bin` or `~/.cargo/bin` would expose `~/.local/share` or cargo credentials).
        // (Discovery's read grants may sit in the carve plan rather than in `grants`.)
        if entry.source == ScopeSource::Runtime
            && !grants
                .iter()
                .chain(rt.grants.iter())
                .any(|g| entry.path.starts_with(&g.path))
        {
            notes.push(format!(
                "runtime path {} from the policy not granted: the jail's runtime discovery does not \
                 need it (hint: --allow-read {} if the server does)",
                entry.path.display(),
                entry.path.display()
            ));
            continue;
        }
        let mut g = Grant {
            path: entry.path.clone(),
            access,
            why: why.into(),
        };
        if access == GrantAccess::ReadWrite && !entry.path.is_dir() {
            // Landlock grants existing inodes: a file that does not exist yet cannot be granted,
            // and an existing one cannot be replaced atomically (write a temp sibling, rename)
            // without rights on its directory. Grant the directory, unless that is too wide.
            match entry.path.parent() {
                Some(parent)
                    if parent.is_dir()
                        && planted::sensitive_dir(parent, home.as_deref(), base_env).is_none() =>
                {
                    notes.push(format!(
                        "write scope {} is a file: its directory {} is granted read-write (Landlock \
                         cannot grant creating or atomically replacing a single file)",
                        entry.path.display(),
                        parent.display()
                    ));
                    g.path = parent.to_path_buf();
                    g.why = format!("scope (write): directory of {}", entry.path.display());
                }
                Some(parent) => {
                    let why = planted::sensitive_dir(parent, home.as_deref(), base_env)
                        .unwrap_or_else(|| "it does not exist".into());
                    notes.push(format!(
                        "write scope {} is a file in {}, which is not granted ({why}): only the \
                         existing file is writable; the server cannot create it or replace it \
                         atomically (temp file + rename) there (hint: give the server a \
                         directory of its own, e.g. point the variable or argument at a file in \
                         a dedicated directory such as ~/.local/share/<server>/)",
                        entry.path.display(),
                        parent.display()
                    ));
                }
                None => {}
            }
        }
        carved.add(g, deny, &mut notes);
    }
    let masks = carved.masks();
    let support = if masks.is_empty() {
        carve::MaskSupport::Unavailable {
            why: "nothing to mask".into(),
        }
    } else {
        mask_support(&masks, opts)?
    };
    let settled = carved.settle(&support, &mut notes);
    grants.extend(settled.grants);

    let mut keep = opts.env_keep.clone();
    keep.extend(launch_env.iter().map(|(k, _)| k.clone()));
    let mut env = env::scrub(base_env, &keep, Some(tmp.path()));
    apply_env_file(&mut env, &launch.env_file, &mut notes);
    env.retain(|(k, _)| !xdg_env.iter().any(|(x, _)| x == k));
    env.extend(xdg_env);
    env.retain(|(k, _)| !opts.egress_env.iter().any(|(e, _)| k == e.as_str()));
    env.extend(
        opts.egress_env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    jailed_path(&mut env, rt.pyenv_bin.as_deref());
    let dropped = env::dropped(base_env, &env);

    let (platform, mut layers) = platform_jail(
        scope,
        &grants,
        &settled.masks,
        tmp.path(),
        opts.assume_namespaces,
        &mut notes,
    )?;
    layers.extend(settled.layer);
    layers.push(LayerReport {
        layer: "env_scrub".into(),
        enforcement: Enforcement::Fully,
        detail: format!(
            "kept {}; dropped {} variable(s)",
            env.iter()
                .map(|(k, _)| k.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(","),
            dropped.len()
        ),
    });
    layers.push(LayerReport {
        layer: "tmpdir".into(),
        enforcement: Enforcement::Fully,
        detail: format!(
            "private TMPDIR {} (0700, removed at exit)",
            tmp.path().display()
        ),
    });
    if let Some(dir) = opts.state_dir.as_ref().filter(|_| state_ready) {
        layers.push(LayerReport {
            layer: "state_dir".into(),
            enforcement: Enforcement::Fully,
            detail: format!(
                "private state directory {} (read-write, 0700, kept across runs; the server's \
                 XDG_STATE_HOME, XDG_DATA_HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME point into it)",
                dir.display()
            ),
        });
    }
    if !launch.notes.is_empty() {
        // What the launcher resolved outside the jail: shown with the layers in `--log`. If the
        // server may write the code or the project the runner uses unjailed at the next start,
        // the jail does not hold across restarts: say so, and let --require-full refuse.
        let writable: Vec<&Path> = [
            launch.package_root.as_deref(),
            launch.project_dir.as_deref(),
        ]
        .into_iter()
        .flatten()
        .filter(|root| {
            let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
            scope.write.iter().any(|w| root.starts_with(&w.path))
        })
        .collect();
        let (enforcement, detail) = if writable.is_empty() {
            (Enforcement::Fully, launch.notes.join("; "))
        } else {
            (
                Enforcement::Partially,
                format!(
                    "{}; BUT the server may write {} (inside its write scope), which the runner \
                     uses outside the jail at the next start: give the server a narrower write \
                     scope that leaves its own code and project files out",
                    launch.notes.join("; "),
                    writable
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        };
        layers.push(LayerReport {
            layer: "launcher".into(),
            enforcement,
            detail,
        });
    }
    let report = EnforcementReport { layers };
    if report.overall() != Enforcement::Fully {
        if opts.require_full {
            return Err(SandboxError::NotFullyEnforced(report.not_full_summary()));
        }
        tracing::warn!(
            "the jail is {} here: {}",
            report.overall(),
            report.not_full_summary()
        );
    }
    for note in &notes {
        tracing::info!("jail: {note}");
    }
    for g in &grants {
        tracing::debug!(
            "jail grant: {:?} {} ({})",
            g.access,
            g.path.display(),
            g.why
        );
    }

    Ok(PreparedJail {
        program: rt.program,
        args: args.to_vec(),
        cwd: cwd.to_path_buf(),
        env: Some(env),
        grants,
        notes,
        platform,
        report,
        tmp: Some(tmp),
    })
}

/// Inside the jail, pyenv shims cannot run (they need the whole pyenv tree): drop them from
/// `PATH` and put the resolved version's `bin` first, as `pyenv exec` would.
fn jailed_path(env: &mut [(OsString, OsString)], pyenv_bin: Option<&Path>) {
    for (k, v) in env.iter_mut() {
        if k != "PATH" {
            continue;
        }
        let mut dirs: Vec<PathBuf> = std::env::split_paths(v)
            .filter(|d| !runtime::is_pyenv_shims_dir(d))
            .collect();
        if let Some(bin) = pyenv_bin {
            dirs.insert(0, bin.to_path_buf());
        }
        if let Ok(joined) = std::env::join_paths(dirs) {
            *v = joined;
        }
    }
}

/// What this platform can do about denied entries inside granted directories.
#[cfg(target_os = "linux")]
fn mask_support(
    masks: &[carve::Mask],
    opts: &JailOptions,
) -> Result<carve::MaskSupport, SandboxError> {
    linux::mask_support(masks, opts.force_list_only_carve, opts.assume_namespaces)
}

/// Seatbelt denies the deny patterns itself (see [`seatbelt::profile`]).
#[cfg(target_os = "macos")]
fn mask_support(
    _masks: &[carve::Mask],
    _opts: &JailOptions,
) -> Result<carve::MaskSupport, SandboxError> {
    Ok(carve::MaskSupport::Native {
        how: "Seatbelt deny rules".into(),
    })
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn mask_support(
    _masks: &[carve::Mask],
    _opts: &JailOptions,
) -> Result<carve::MaskSupport, SandboxError> {
    Ok(carve::MaskSupport::Unavailable {
        why: "no jail on this operating system".into(),
    })
}

#[cfg(target_os = "linux")]
fn platform_jail(
    scope: &Scope,
    grants: &[Grant],
    masks: &[carve::Mask],
    _tmp: &Path,
    assume_namespaces: bool,
    notes: &mut Vec<String>,
) -> Result<(Platform, Vec<LayerReport>), SandboxError> {
    let jail = linux::LinuxJail::new(grants, masks, &scope.net, assume_namespaces)?;
    notes.extend(jail.notes.iter().cloned());
    let layers = jail.report().to_vec();
    Ok((Platform::Linux(Box::new(jail)), layers))
}

#[cfg(target_os = "macos")]
fn platform_jail(
    scope: &Scope,
    grants: &[Grant],
    _masks: &[carve::Mask],
    tmp: &Path,
    _assume_namespaces: bool,
    _notes: &mut Vec<String>,
) -> Result<(Platform, Vec<LayerReport>), SandboxError> {
    let runtime: Vec<Grant> = grants
        .iter()
        .filter(|g| !g.why.starts_with("scope"))
        .cloned()
        .collect();
    let profile = seatbelt::profile(scope, &runtime, Some(tmp));
    let available = Path::new("/usr/bin/sandbox-exec").exists();
    let layers = vec![LayerReport {
        layer: "seatbelt".into(),
        enforcement: if available {
            Enforcement::Fully
        } else {
            Enforcement::NotEnforced
        },
        detail: if available {
            "sandbox-exec profile: deny default, scope + runtime subpaths".into()
        } else {
            "/usr/bin/sandbox-exec not found: NOT confined".into()
        },
    }];
    if !available {
        return Ok((Platform::Unconfined, layers));
    }
    Ok((Platform::Seatbelt(profile), layers))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn platform_jail(
    _scope: &Scope,
    _grants: &[Grant],
    _masks: &[carve::Mask],
    _tmp: &Path,
    _assume_namespaces: bool,
    _notes: &mut Vec<String>,
) -> Result<(Platform, Vec<LayerReport>), SandboxError> {
    Ok((
        Platform::Unconfined,
        report::all_off("no jail on this operating system"),
    ))
}

/// How the proxy reaches everything a jailed server starts, to pass a signal on or to end it
/// (Linux).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerGroup {
    /// Under a PID namespace: the process the proxy spawned leads a process group in the
    /// proxy's session, which one `kill(-pgid)` reaches while that process is unreaped (its pid
    /// is the group's id until then). A descendant that moved to another group misses a
    /// passed-on signal but not its end: the namespace's end kills it.
    ProcessGroup(u32),
    /// Without one: the server leads a session of its own, which no descendant can leave
    /// (seccomp refuses `setsid`); its members are found in `/proc`.
    Session(u32),
}

impl ServerGroup {
    /// Send `signal` to everything in the group; how many processes of a session got it (a
    /// process group does not say: 0). A process group only while the spawned process is
    /// unreaped.
    pub fn signal(self, signal: i32) -> usize {
        #[cfg(target_os = "linux")]
        match self {
            ServerGroup::Session(sid) => linux::signal_session(sid, signal),
            ServerGroup::ProcessGroup(pgid) => {
                linux::signal_process_group(pgid, signal);
                0
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = signal;
            0
        }
    }
}

/// What the jail made of the process `pid` it spawned, if it jailed it (Linux).
pub fn server_group(pid: u32) -> Option<ServerGroup> {
    #[cfg(target_os = "linux")]
    {
        linux::server_group(pid)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// What this machine can enforce (for `mcpjail doctor`).
pub fn probe() -> KernelSupport {
    #[cfg(target_os = "linux")]
    {
        linux::probe()
    }
    #[cfg(not(target_os = "linux"))]
    {
        report::probe_other()
    }
}

impl PreparedJail {
    /// A command that starts the server inside the jail (environment scrubbed, rules applied in
    /// the child before exec). Stdio is left for the caller to set.
    ///
    /// Under a PID namespace the server's own process execs from within the jail's hook (see
    /// `linux::sys::enter_pid_namespace`: a fork less per start), so a `pre_exec` hook added to
    /// this command would not run in the server; use [`Self::command_for_hooks`] to add one.
    ///
    /// Call this once per spawn (a respawn calls it again): each call builds a fresh Landlock
    /// ruleset, to which the child adds its own `/proc/<pid>`; spawning one `Command` twice
    /// would let the second child read the first one's `/proc/<pid>` too. If the ruleset cannot
    /// be built, the spawn fails (ENOTRECOVERABLE) rather than running unconfined.
    pub fn command(&self) -> tokio::process::Command {
        self.build_command(true)
    }

    /// [`Self::command`] for a caller that adds `pre_exec` hooks of its own (the scan's tracer):
    /// the server's process is forked and exec'd by std's `Command`, after every hook, the
    /// jail's first.
    pub fn command_for_hooks(&self) -> tokio::process::Command {
        self.build_command(false)
    }

    fn build_command(&self, own_exec: bool) -> tokio::process::Command {
        let mut cmd = match &self.platform {
            Platform::Seatbelt(profile) => {
                let mut c = tokio::process::Command::new("/usr/bin/sandbox-exec");
                c.arg("-p").arg(profile).arg("--").arg(&self.program);
                c
            }
            _ => tokio::process::Command::new(&self.program),
        };
        cmd.args(&self.args).current_dir(&self.cwd);
        if let Some(env) = &self.env {
            cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
        }
        #[cfg(target_os = "linux")]
        if let Platform::Linux(jail) = &self.platform {
            let exec = own_exec.then_some(linux::ServerExec {
                program: &self.program,
                args: &self.args,
                env: self.env.as_deref(),
            });
            jail.apply(&mut cmd, &self.cwd, exec);
        }
        #[cfg(not(target_os = "linux"))]
        let _ = own_exec;
        cmd
    }

    /// Start the server with piped stdio, without forking this process, where the jail can
    /// (Linux, with the reaper and a PID namespace; see `linux::spawn`): `None` where it cannot,
    /// for the caller to spawn [`Self::command`] instead. Like `command`, once per spawn.
    #[cfg(target_os = "linux")]
    pub fn spawn_piped(&self) -> Option<std::io::Result<SpawnedServer>> {
        let Platform::Linux(jail) = &self.platform else {
            return None;
        };
        let exec = linux::ServerExec {
            program: &self.program,
            args: &self.args,
            env: self.env.as_deref(),
        };
        jail.spawn_piped(&self.cwd, exec)
    }

    pub fn report(&self) -> &EnforcementReport {
        &self.report
    }

    /// Whether the server gets a network namespace of its own, reached only through the
    /// egress proxy's listener in it (see `linux::egress_namespace`).
    pub fn egress_in_namespace(&self) -> bool {
        match &self.platform {
            #[cfg(target_os = "linux")]
            Platform::Linux(jail) => jail.egress_in_namespace(),
            _ => false,
        }
    }

    /// After a spawn: the egress listener the child made in its network namespace, for the
    /// egress proxy to accept on. `None` without one.
    pub fn take_egress_listener(&self) -> Option<std::io::Result<std::net::TcpListener>> {
        match &self.platform {
            #[cfg(target_os = "linux")]
            Platform::Linux(jail) => jail.take_egress_listener(),
            _ => None,
        }
    }

    /// After a spawn failed: why, when the jail assumed namespaces the kernel then refused
    /// ([`JailOptions::assume_namespaces`]); prepare it again without the assumption.
    pub fn namespace_refusal(&self) -> Option<String> {
        match &self.platform {
            #[cfg(target_os = "linux")]
            Platform::Linux(jail) => jail.namespace_refusal(),
            _ => None,
        }
    }

    /// Every path the jail opens up, and why.
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Discovery and carve-out notes (pyenv resolution, grants skipped because absent).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The program actually executed (after PATH and pyenv-shim resolution).
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The environment the server gets (`None`: inherited unchanged, `--no-jail` only).
    pub fn env(&self) -> Option<&[(OsString, OsString)]> {
        self.env.as_deref()
    }

    /// The server's `HOME`, if its environment has one.
    pub fn home(&self) -> Option<PathBuf> {
        self.env()?
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| PathBuf::from(v))
    }

    /// The arguments after the program.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The private TMPDIR, when jailed.
    pub fn tmpdir(&self) -> Option<&Path> {
        self.tmp.as_ref().map(|t| t.path())
    }

    /// Whether the server runs confined at all.
    pub fn is_confined(&self) -> bool {
        !matches!(self.platform, Platform::Unconfined)
    }
}
