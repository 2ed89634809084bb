//! Runtime discovery: what a server needs to *run*, found from its command line.
//!
//! The program is resolved through `PATH` and canonicalized; scripts are followed through their
//! `#!` line to the interpreter; interpreters bring their install prefix (a Python venv and its
//! base prefix from `pyvenv.cfg`, a Node prefix and the script's `node_modules` tree); `npx`/`uvx`
//! bring their package caches; a compiled binary brings its own directory.
//!
//! pyenv shims are bash scripts that run `pyenv exec`, which needs the whole pyenv tree plus its
//! version files. Instead of granting all of `$PYENV_ROOT`, the shim is resolved here the way
//! pyenv would (`PYENV_VERSION`, then `.python-version` up from the cwd, then
//! `$PYENV_ROOT/version`) and the real interpreter is executed directly; only that version's
//! prefix is granted. Everything else under `$HOME` stays unreadable.
//!
//! Nothing here grants `/`, `$HOME` itself or an ancestor of `$HOME`: a prefix that would be that
//! wide is replaced by the single file it was derived from.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Grant, GrantAccess, SandboxError};
use crate::policy::{Launcher, ServerCommand};

/// The result of discovery.
#[derive(Debug, Clone, Default)]
pub struct Runtime {
    /// What to execute (absolute). Differs from argv[0] when a pyenv shim was resolved.
    pub program: PathBuf,
    /// The `bin` directory of a resolved pyenv version: the jailed `PATH` puts it first and drops
    /// the shims (which would need the whole pyenv tree), as `pyenv exec` itself does.
    pub pyenv_bin: Option<PathBuf>,
    pub grants: Vec<Grant>,
    pub notes: Vec<String>,
    /// Grants whose path was read out of a file rather than found on disk (`pyvenv.cfg`'s
    /// `home`): `(granted path, the file it came from)`. The jail refuses them when that file
    /// lies in write scope, where the server could have rewritten it.
    pub from_files: Vec<(PathBuf, PathBuf)>,
}

/// Read-only system locations a dynamically linked program and its TLS stack need.
pub const SYSTEM_EXEC_DIRS: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
];
pub const SYSTEM_READ_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    // Certificates and TLS configuration only: never `/etc/ssl/private` or
    // `/etc/pki/tls/private`, where the machine's private keys live.
    "/etc/ssl/certs",
    "/etc/ssl/openssl.cnf",
    "/etc/ssl/cert.pem",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/openssl.cnf",
    "/etc/pki/tls/cert.pem",
    "/etc/pki/ca-trust",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    // Read by runtimes at start or on common calls; none holds a credential.
    "/etc/mime.types",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/os-release",
    "/etc/passwd",
    "/etc/group",
];
/// Name resolution files, granted only when the network is allowed.
pub const NETWORK_READ_FILES: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/services",
    "/etc/protocols",
];
pub const DEVICES_RW: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/urandom",
    "/dev/random",
];

/// The environment discovery reads (PATH, HOME, PYENV_*), passed in so tests stay hermetic.
pub struct DiscoverEnv<'a> {
    pub vars: &'a [(OsString, OsString)],
}

impl DiscoverEnv<'_> {
    fn get(&self, key: &str) -> Option<&OsString> {
        self.vars.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

const MAX_SHEBANG_DEPTH: usize = 4;

pub fn discover(
    command: &[String],
    cwd: &Path,
    env: &DiscoverEnv<'_>,
) -> Result<Runtime, SandboxError> {
    let argv0 = command
        .first()
        .ok_or_else(|| SandboxError::Prepare("no server command given".into()))?;
    let home = env.get("HOME").map(PathBuf::from);
    let mut rt = Runtime::default();

    let mut program = resolve_program(argv0, cwd, env.get("PATH"))?;
    if let Some(real) = resolve_pyenv_shim(&program, cwd, env)? {
        rt.notes.push(format!(
            "pyenv shim {} resolved to {} (executed directly; only its prefix is granted)",
            program.display(),
            real.display()
        ));
        rt.pyenv_bin = real.parent().map(Path::to_path_buf);
        program = real;
    }
    rt.program = program.clone();

    // Follow the chain: script -> interpreter -> ... -> binary.
    let mut current = program;
    let mut first = true;
    for _ in 0..MAX_SHEBANG_DEPTH {
        let canonical = std::fs::canonicalize(&current).map_err(|e| {
            SandboxError::Prepare(format!(
                "cannot resolve the server program {}: {e}",
                current.display()
            ))
        })?;
        match read_shebang(&canonical) {
            Some((interp, interp_arg)) => {
                rt.grants
                    .push(grant(&canonical, GrantAccess::Read, "server script"));
                add_node_modules_tree(&current, home.as_deref(), &mut rt);
                add_node_modules_tree(&canonical, home.as_deref(), &mut rt);
                add_venv(&current, home.as_deref(), &mut rt);
                // `#!/usr/bin/env node` names the interpreter through PATH.
                let next = if Path::new(&interp).file_name().is_some_and(|n| n == "env") {
                    match interp_arg
                        .as_deref()
                        .map(|a| a.trim_start_matches("-S ").trim())
                    {
                        Some(a) if !a.is_empty() => {
                            let exe = a.split_whitespace().next().unwrap_or(a);
                            rt.grants
                                .push(grant(Path::new(&interp), GrantAccess::ReadExec, "env"));
                            resolve_program(exe, cwd, env.get("PATH"))?
                        }
                        _ => PathBuf::from(interp),
                    }
                } else {
                    PathBuf::from(interp)
                };
                let next = match resolve_pyenv_shim(&next, cwd, env)? {
                    Some(real) => {
                        rt.notes.push(format!(
                            "pyenv shim {} (named by a #! line) resolved to {}",
                            next.display(),
                            real.display()
                        ));
                        if rt.pyenv_bin.is_none() {
                            rt.pyenv_bin = real.parent().map(Path::to_path_buf);
                        }
                        real
                    }
                    None => next,
                };
                current = next;
                first = false;
            }
            None => {
                add_binary(&current, &canonical, home.as_deref(), &mut rt);
                if first {
                    add_script_argument(
                        &ServerCommand::parse(command),
                        cwd,
                        home.as_deref(),
                        &mut rt,
                    );
                }
                break;
            }
        }
    }
    Ok(rt)
}

fn grant(path: &Path, access: GrantAccess, why: &str) -> Grant {
    Grant {
        path: path.to_path_buf(),
        access,
        why: why.to_string(),
    }
}

fn is_executable_file(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `argv0` as the kernel would find it: a path (relative to `cwd`) or a `PATH` lookup.
pub fn resolve_program(
    argv0: &str,
    cwd: &Path,
    path: Option<&OsString>,
) -> Result<PathBuf, SandboxError> {
    if argv0.contains('/') {
        let p = cwd.join(argv0);
        return if p.exists() {
            Ok(p)
        } else {
            Err(SandboxError::Prepare(format!(
                "the server program {} does not exist",
                p.display()
            )))
        };
    }
    if let Some(path) = path {
        for dir in std::env::split_paths(path) {
            let dir = if dir.is_relative() {
                cwd.join(dir)
            } else {
                dir
            };
            let candidate = dir.join(argv0);
            if is_executable_file(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(SandboxError::Prepare(format!(
        "cannot find the server program `{argv0}` on PATH (hint: give its absolute path)"
    )))
}

/// First line of a file, if it is a `#!` line: (interpreter, optional single argument).
fn read_shebang(path: &Path) -> Option<(String, Option<String>)> {
    let mut file = std::fs::File::open(path).ok()?;
    let mut buf = [0u8; 256];
    let n = file.read(&mut buf).ok()?;
    let head = &buf[..n];
    if !head.starts_with(b"#!") {
        return None;
    }
    let line_end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    let line = std::str::from_utf8(&head[2..line_end]).ok()?.trim();
    let mut parts = line.splitn(2, char::is_whitespace);
    let interp = parts.next()?.to_string();
    let arg = parts
        .next()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Some((interp, arg))
}

/// Is `dir` a pyenv shims directory (on `PATH`)?
pub fn is_pyenv_shims_dir(dir: &Path) -> bool {
    dir.file_name().is_some_and(|n| n == "shims") && dir.to_string_lossy().contains("pyenv")
}

fn is_pyenv_shim(path: &Path) -> bool {
    let in_shims_dir = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "shims");
    if !in_shims_dir {
        return false;
    }
    let mut buf = [0u8; 1024];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut buf))
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]);
    text.starts_with("#!") && text.contains("pyenv") && text.contains("exec")
}

/// The interpreter a pyenv shim would run, without running pyenv.
fn resolve_pyenv_shim(
    program: &Path,
    cwd: &Path,
    env: &DiscoverEnv<'_>,
) -> Result<Option<PathBuf>, SandboxError> {
    if !is_pyenv_shim(program) {
        return Ok(None);
    }
    let shims = program.parent().unwrap_or(Path::new("/"));
    let root = env
        .get("PYENV_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| shims.parent().unwrap_or(Path::new("/")).to_path_buf());
    let name = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let versions = pyenv_versions(&root, cwd, env);
    for version in &versions {
        if version == "system" {
            // The first match on PATH that is not a shim.
            if let Some(path) = env.get("PATH") {
                let rest: Vec<PathBuf> =
                    std::env::split_paths(path).filter(|d| d != shims).collect();
                if let Ok(joined) = std::env::join_paths(rest) {
                    if let Ok(p) = resolve_program(&name, cwd, Some(&joined)) {
                        return Ok(Some(p));
                    }
                }
            }
            continue;
        }
        let candidate = root.join("versions").join(version).join("bin").join(&name);
        if is_executable_file(&candidate) {
            return Ok(Some(candidate));
        }
    }
    Err(SandboxError::Prepare(format!(
        "cannot resolve the pyenv shim {} (versions tried: {}); hint: run the interpreter by its \
         real path (`pyenv which {name}`)",
        program.display(),
        versions.join(", ")
    )))
}

fn pyenv_versions(root: &Path, cwd: &Path, env: &DiscoverEnv<'_>) -> Vec<String> {
    let split = |s: &str| -> Vec<String> {
        s.split([':', '\n', ' '])
            .map(str::trim)
            .filter(|v| !v.is_empty() && !v.starts_with('#'))
            .map(String::from)
            .collect()
    };
    if let Some(v) = env.get("PYENV_VERSION") {
        return split(&v.to_string_lossy());
    }
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        if let Ok(text) = std::fs::read_to_string(d.join(".python-version")) {
            return split(&text);
        }
        dir = d.parent();
    }
    match std::fs::read_to_string(root.join("version")) {
        Ok(text) => split(&text),
        Err(_) => vec!["system".into()],
    }
}

/// Would granting `dir` expose too much (`/`, `$HOME` or an ancestor of it)?
pub(crate) fn too_wide(dir: &Path, home: Option<&Path>) -> bool {
    if dir == Path::new("/") || dir.components().count() < 2 {
        return true;
    }
    match home {
        Some(h) => h.starts_with(dir),
        None => false,
    }
}

fn is_system(path: &Path) -> bool {
    SYSTEM_EXEC_DIRS.iter().any(|d| path.starts_with(d))
}

/// Why the program the command names is granted (the one runtime grant that keeps exec inside
/// a write grant, see `sandbox::prepare`).
pub const WHY_PROGRAM: &str = "server program";

/// A native binary (or the interpreter at the end of a chain).
fn add_binary(as_called: &Path, canonical: &Path, home: Option<&Path>, rt: &mut Runtime) {
    rt.grants
        .push(grant(canonical, GrantAccess::ReadExec, WHY_PROGRAM));
    let name = canonical
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let interpreter = name.starts_with("python")
        || name == "node"
        || name == "nodejs"
        || name == "bun"
        || name == "deno";
    if interpreter {
        // <prefix>/bin/<interp>: the prefix holds the standard library / bundled modules.
        if let Some(prefix) = bin_prefix(canonical) {
            if !is_system(&prefix) && !too_wide(&prefix, home) {
                rt.grants
                    .push(grant(&prefix, GrantAccess::ReadExec, "interpreter prefix"));
            }
        }
        if name.starts_with("python") {
            add_venv(as_called, home, rt);
        }
    } else if let Some(dir) = canonical.parent() {
        if !is_system(dir) && !too_wide(dir, home) {
            rt.grants.push(grant(
                dir,
                GrantAccess::ReadExec,
                "the binary's own directory",
            ));
        }
    }
}

fn bin_prefix(exe: &Path) -> Option<PathBuf> {
    let bin = exe.parent()?;
    if bin.file_name()? != "bin" {
        return None;
    }
    Some(bin.parent()?.to_path_buf())
}

/// A venv: `<venv>/bin/python` with `<venv>/pyvenv.cfg`, whose `home =` names the base's bin.
fn add_venv(as_called: &Path, home: Option<&Path>, rt: &mut Runtime) {
    let Some(venv) = bin_prefix(as_called) else {
        return;
    };
    let Ok(cfg) = std::fs::read_to_string(venv.join("pyvenv.cfg")) else {
        return;
    };
    let venv = std::fs::canonicalize(&venv).unwrap_or(venv);
    if !too_wide(&venv, home) && !rt.grants.iter().any(|g| g.path == venv) {
        rt.grants
            .push(grant(&venv, GrantAccess::ReadExec, "python venv"));
    }
    // Only the first `home` counts, as for CPython (its getpath stops at it): later lines are
    // not the interpreter's, only a way to be granted more. And the base must hold a Python:
    // a `pyvenv.cfg` ships with code the user did not write.
    let Some(base_bin) = pyvenv_home(&cfg) else {
        return;
    };
    let base_bin = std::fs::canonicalize(&base_bin).unwrap_or(base_bin);
    let Some(base) = base_bin.parent() else {
        return;
    };
    if is_system(base) {
        return;
    }
    if too_wide(base, home) || !holds_a_python(&base_bin) {
        rt.notes.push(format!(
            "{}: home = {} is not granted ({}); the venv may not start (hint: its first \
             `home =` line must name the bin directory of the Python the venv was made from; \
             recreate the venv if it does not)",
            venv.join("pyvenv.cfg").display(),
            base_bin.display(),
            if too_wide(base, home) {
                "its parent is HOME, an ancestor of it, or /"
            } else {
                "it holds no python executable"
            }
        ));
        return;
    }
    rt.grants.push(grant(
        base,
        GrantAccess::ReadExec,
        "python base prefix (pyvenv.cfg home)",
    ));
    rt.notes.push(format!(
        "python base prefix {} granted read+exec: named by home = in {}",
        base.display(),
        venv.join("pyvenv.cfg").display()
    ));
    rt.from_files
        .push((base.to_path_buf(), venv.join("pyvenv.cfg")));
}

/// The first `home = DIR` of a `pyvenv.cfg` (keys compared without case, as CPython does).
fn pyvenv_home(cfg: &str) -> Option<PathBuf> {
    cfg.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("home")
            .then(|| PathBuf::from(v.trim()))
    })
}

/// Does `bin` hold a Python interpreter (`python`, `python3`, `python3.N`)?
fn holds_a_python(bin: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(bin) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let versioned = name
            .strip_prefix("python3.")
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
        (name == "python" || name == "python3" || versioned) && is_executable_file(&e.path())
    })
}

/// For a script inside a Node project: the outermost `node_modules` up from it, plus the
/// `package.json` files Node reads on the way (module type lookup).
fn add_node_modules_tree(script: &Path, home: Option<&Path>, rt: &mut Runtime) {
    let mut outermost: Option<PathBuf> = None;
    let mut dir = script.parent();
    while let Some(d) = dir {
        if d.file_name().is_some_and(|n| n == "node_modules") {
            outermost = Some(d.to_path_buf());
        }
        dir = d.parent();
    }
    let Some(nm) = outermost else {
        return;
    };
    if too_wide(&nm, home) || rt.grants.iter().any(|g| g.path == nm) {
        return;
    }
    rt.grants
        .push(grant(&nm, GrantAccess::ReadExec, "node_modules tree"));
    if let Some(project) = nm.parent() {
        let pj = project.join("package.json");
        if pj.exists() {
            rt.grants
                .push(grant(&pj, GrantAccess::Read, "node project package.json"));
        }
    }
}

/// `python script.py` / `node script.js` / `deno run main.ts`: the script is runtime
/// (read-only), with what the interpreter loads next to it: the script's own directory (sibling
/// modules), and for Node every `node_modules` up from it plus the nearest `package.json`
/// (module type, `imports`). The command line is parsed once, by [`ServerCommand`].
fn add_script_argument(parsed: &ServerCommand, cwd: &Path, home: Option<&Path>, rt: &mut Runtime) {
    let is_node = matches!(
        parsed.launcher,
        Launcher::Node | Launcher::Deno | Launcher::Bun
    );
    if !is_node && !matches!(parsed.launcher, Launcher::Python | Launcher::Shell) {
        return;
    }
    let Some(script) = parsed.script() else {
        return;
    };
    let Ok(canon) = std::fs::canonicalize(cwd.join(script)) else {
        return;
    };
    if !canon.is_file() {
        return;
    }
    rt.grants.push(grant(
        &canon,
        GrantAccess::Read,
        "script the interpreter runs",
    ));
    add_node_modules_tree(&canon, home, rt);
    let Some(dir) = canon.parent() else {
        return;
    };
    if !too_wide(dir, home)
        && !is_system(dir)
        && !rt.grants.iter().any(|g| dir.starts_with(&g.path))
    {
        add_script_directory(dir, &canon, rt);
    }
    if is_node {
        add_node_resolution_paths(dir, home, rt);
    }
}

/// Files that mark a directory as a project root: its own source tree, fine to read whole.
const PROJECT_MARKERS: &[&str] = &[
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "uv.lock",
    "deno.json",
    "deno.jsonc",
    ".git",
];

/// Source files a script may import from its own directory.
/// (Not `.json`: credentials are often kept as JSON.)
const SOURCE_EXTENSIONS: &[&str] = &["py", "js", "mjs", "cjs", "ts", "mts", "cts"];

/// The script's directory, for the sibling modules it imports. A project root (it holds a
/// `package.json`, `pyproject.toml`, `.git`…) is granted read-only as a whole (denied names in
/// it are masked like in scope directories). Any other directory — `~/bin`, `~/projects`
/// holding a loose `server.py` — is not: only its source files are, one by one, so a script
/// kept beside other people's projects does not open them all.
fn add_script_directory(dir: &Path, script: &Path, rt: &mut Runtime) {
    if PROJECT_MARKERS.iter().any(|m| dir.join(m).exists()) {
        rt.grants.push(grant(
            dir,
            GrantAccess::Read,
            "the script's project directory (modules it imports)",
        ));
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files = 0usize;
    for entry in entries.flatten() {
        let p = entry.path();
        let is_source = p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e));
        if p == script || !is_source || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        rt.grants.push(grant(
            &p,
            GrantAccess::Read,
            "a source file next to the script",
        ));
        files += 1;
    }
    rt.notes.push(format!(
        "{} is not a project root (no {}): only the script and its {files} sibling source \
         file(s) are readable, not the whole directory (hint: --allow-read {} if the server \
         needs more of it)",
        dir.display(),
        PROJECT_MARKERS.join(", "),
        dir.display()
    ));
}

/// Node looks for packages in `node_modules` of every ancestor of the script's directory and
/// reads the nearest `package.json`: a project's own `server.mjs` next to its `node_modules`.
fn add_node_resolution_paths(dir: &Path, home: Option<&Path>, rt: &mut Runtime) {
    let mut package_json_found = false;
    for anc in dir.ancestors() {
        let nm = anc.join("node_modules");
        // A read grant on the script's directory is not enough: packages need exec (native
        // addons), and a linked `node_modules` (pnpm, a symlink) lies elsewhere.
        let covered = rt
            .grants
            .iter()
            .any(|g| g.access == GrantAccess::ReadExec && nm.starts_with(&g.path));
        if nm.is_dir() && !covered {
            rt.grants.push(grant(
                &nm,
                GrantAccess::ReadExec,
                "node_modules the script resolves from",
            ));
        }
        let pj = anc.join("package.json");
        if !package_json_found && pj.is_file() {
            package_json_found = true;
            if !rt.grants.iter().any(|g| pj.starts_with(&g.path)) {
                rt.grants
                    .push(grant(&pj, GrantAccess::Read, "the script's package.json"));
            }
        }
        if too_wide(anc, home) {
            break;
        }
    }
}

/// The system part every program needs.
pub fn system_grants(network: bool) -> Vec<Grant> {
    let mut grants = Vec::new();
    for d in SYSTEM_EXEC_DIRS {
        grants.push(grant(
            Path::new(d),
            GrantAccess::ReadExec,
            "system libraries and tools",
        ));
    }
    for f in SYSTEM_READ_FILES {
        grants.push(grant(
            Path::new(f),
            GrantAccess::Read,
            "loader, certificates, time zone",
        ));
    }
    if network {
        for f in NETWORK_READ_FILES {
            grants.push(grant(
                Path::new(f),
                GrantAccess::Read,
                "name resolution (--allow-net)",
            ));
        }
    }
    for d in DEVICES_RW {
        grants.push(grant(
            Path::new(d),
            GrantAccess::ReadWrite,
            "standard device",
        ));
    }
    grants
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn system_grants_never_open_private_keys() {
        for g in system_grants(true) {
            for private in ["/etc/ssl/private", "/etc/pki/tls/private"] {
                assert!(
                    !Path::new(private).starts_with(&g.path),
                    "{} covers {private}",
                    g.path.display()
                );
            }
        }
    }

    fn exe(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn env_with_path(path: &Path, home: &Path) -> Vec<(OsString, OsString)> {
        vec![
            ("PATH".into(), path.as_os_str().to_owned()),
            ("HOME".into(), home.as_os_str().to_owned()),
        ]
    }

    fn has(rt: &Runtime, p: &Path, access: GrantAccess) -> bool {
        rt.grants.iter().any(|g| g.path == p && g.access == access)
    }

    #[test]
    fn node_bin_script_brings_its_node_modules_tree() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let pkg = base.join("proj/node_modules/@scope/server/dist/index.js");
        exe(&pkg, "#!/usr/bin/env node\nconsole.log(1)\n");
        std::fs::write(base.join("proj/package.json"), "{}").unwrap();
        let bin = base.join("proj/node_modules/.bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(&pkg, bin.join("server")).unwrap();
        let vars = env_with_path(Path::new("/usr/bin:/bin"), &base.join("home"));
        let rt = discover(
            &[bin.join("server").to_string_lossy().into_owned()],
            &base,
            &DiscoverEnv { vars: &vars },
        )
        .unwrap();
        assert!(has(&rt, &pkg, GrantAccess::Read), "{:?}", rt.grants);
        assert!(has(
            &rt,
            &base.join("proj/node_modules"),
            GrantAccess::ReadExec
        ));
        assert!(has(&rt, &base.join("proj/package.json"), GrantAccess::Read));
        // The project itself (where data may live) is not runtime.
        assert!(!rt.grants.iter().any(|g| g.path == base.join("proj")));
    }

    #[test]
    fn venv_brings_itself_and_its_base_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let real = base.join("pythons/3.12/bin/python3.12");
        exe(&real, "\x7fELF");
        let venv = base.join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::os::unix::fs::symlink(&real, venv.join("bin/python")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!(
                "home = {}\nversion = 3.12\n",
                real.parent().unwrap().display()
            ),
        )
        .unwrap();
        // A console script of the venv: `#!<venv>/bin/python`.
        exe(
            &venv.join("bin/mcp-server-x"),
            &format!("#!{}\nimport x\n", venv.join("bin/python").display()),
        );
        let vars = env_with_path(&venv.join("bin"), &base.join("home"));
        let rt = discover(
            &["mcp-server-x".into()],
            &base,
            &DiscoverEnv { vars: &vars },
        )
        .unwrap();
        assert!(has(&rt, &venv, GrantAccess::ReadExec), "{:?}", rt.grants);
        assert!(has(&rt, &base.join("pythons/3.12"), GrantAccess::ReadExec));
        assert!(has(&rt, &real, GrantAccess::ReadExec));
    }

    /// A `pyvenv.cfg` ships with code the user did not write: only its first `home` counts (as
    /// for CPython), and only a directory that holds a Python. Later `home` lines and a `home`
    /// without a Python are not granted, and the notes say so.
    #[test]
    fn a_shipped_pyvenv_cfg_grants_only_its_first_home_and_only_a_python() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let real = base.join("pythons/3.12/bin/python3.12");
        exe(&real, "\x7fELF");
        let other = base.join("other-user/bin");
        exe(&other.join("python3"), "\x7fELF");
        let config = base.join("home/.config/systemd");
        std::fs::create_dir_all(config.join("bin")).unwrap();
        let discover_with = |cfg: String| {
            let venv = base.join("venv");
            let _ = std::fs::remove_dir_all(&venv);
            std::fs::create_dir_all(venv.join("bin")).unwrap();
            std::os::unix::fs::symlink(&real, venv.join("bin/python")).unwrap();
            std::fs::write(venv.join("pyvenv.cfg"), cfg).unwrap();
            let vars = env_with_path(&venv.join("bin"), &base.join("home"));
            discover(&["python".into()], &base, &DiscoverEnv { vars: &vars }).unwrap()
        };
        let rt = discover_with(format!(
            "home = {}\nHOME = {}\nhome = {}\n",
            real.parent().unwrap().display(),
            other.display(),
            config.join("bin").display()
        ));
        assert!(has(&rt, &base.join("pythons/3.12"), GrantAccess::ReadExec));
        assert!(!rt.grants.iter().any(|g| g.path == base.join("other-user")));
        assert!(!rt.grants.iter().any(|g| g.path == config));
        // A first `home` without a Python in it is not granted either, and said so.
        let rt = discover_with(format!("home = {}\n", config.join("bin").display()));
        assert!(
            !rt.grants.iter().any(|g| g.path == config),
            "{:?}",
            rt.grants
        );
        assert!(
            rt.notes.iter().any(|n| n.contains("holds no python")),
            "{:?}",
            rt.notes
        );
    }

    #[test]
    fn pyenv_shim_resolves_to_the_version_prefix_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        let root = home.join(".pyenv");
        exe(
            &root.join("shims/python3"),
            "#!/usr/bin/env bash\nset -e\nexec \"/x/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n",
        );
        let real = root.join("versions/3.11.7/bin/python3");
        exe(&real, "\x7fELF");
        std::fs::write(root.join("version"), "3.11.7\n").unwrap();
        let vars = env_with_path(&root.join("shims"), &home);
        let rt = discover(
            &["python3".into(), "-c".into(), "0".into()],
            &home,
            &DiscoverEnv { vars: &vars },
        )
        .unwrap();
        assert_eq!(rt.program, real);
        assert!(
            has(&rt, &root.join("versions/3.11.7"), GrantAccess::ReadExec),
            "{:?}",
            rt.grants
        );
        assert!(!rt.grants.iter().any(|g| g.path == root || g.path == home));
        assert_eq!(
            rt.pyenv_bin.as_deref(),
            Some(root.join("versions/3.11.7/bin").as_path())
        );
    }

    #[test]
    fn a_loose_script_opens_its_sibling_sources_only_a_project_opens_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let loose = base.join("projects");
        exe(&loose.join("server.py"), "import helper\n");
        std::fs::write(loose.join("helper.py"), "").unwrap();
        std::fs::write(loose.join("gcloud-key.json"), "{}").unwrap();
        std::fs::create_dir_all(loose.join("other-project")).unwrap();
        let py = which_python();
        let vars = env_with_path(Path::new("/usr/bin:/bin"), &base.join("home"));
        let cmd = |script: &Path| {
            vec![
                py.to_string_lossy().into_owned(),
                script.to_string_lossy().into_owned(),
            ]
        };
        let rt = discover(
            &cmd(&loose.join("server.py")),
            &base,
            &DiscoverEnv { vars: &vars },
        )
        .unwrap();
        assert!(has(&rt, &loose.join("server.py"), GrantAccess::Read));
        assert!(has(&rt, &loose.join("helper.py"), GrantAccess::Read));
        assert!(
            !rt.grants.iter().any(|g| g.path == loose),
            "{:?}",
            rt.grants
        );
        assert!(!rt
            .grants
            .iter()
            .any(|g| g.path == loose.join("gcloud-key.json")));
        assert!(rt.notes.iter().any(|n| n.contains("not a project root")));

        let project = base.join("proj");
        exe(&project.join("server.py"), "");
        std::fs::write(project.join("pyproject.toml"), "").unwrap();
        let rt = discover(
            &cmd(&project.join("server.py")),
            &base,
            &DiscoverEnv { vars: &vars },
        )
        .unwrap();
        assert!(has(&rt, &project, GrantAccess::Read), "{:?}", rt.grants);
    }

    /// A real interpreter named `python3…` (discovery keys on the name).
    fn which_python() -> PathBuf {
        ["/usr/bin/python3", "/usr/local/bin/python3"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .expect("a python3 in /usr/bin or /usr/local/bin")
    }

    #[test]
    fn a_binary_directly_in_home_does_not_grant_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        let bin = home.join("server");
        exe(&bin, "\x7fELF");
        let vars = env_with_path(Path::new("/usr/bin"), &home);
        let rt = discover(
            &[bin.to_string_lossy().into_owned()],
            &home,
            &DiscoverEnv { vars: &vars },
        )
        .unwrap();
        assert!(has(&rt, &bin, GrantAccess::ReadExec));
        assert!(!rt.grants.iter().any(|g| g.path == home), "{:?}", rt.grants);
    }
}
