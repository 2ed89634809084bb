//! Export a derived [`Scope`] in other sandboxes' own formats, so their users gain the derived
//! allowlist too (`mcpjail policy export --format srt|nono|landrun|seatbelt`).
//!
//! Every export takes the server's runtime as the jail sees it — the sandbox's own
//! [`crate::sandbox::Grant`]s from its runtime discovery and system list ([`runtime_grants`]) —
//! so the exported policy runs the server the way mcpjail's jail does. (This is the one place
//! the policy module looks at the sandbox: the formats need the runtime, and the runtime is the
//! sandbox's to discover.)
//!
//! * **srt** (Anthropic's sandbox-runtime) settings JSON. srt leaves reads open unless denied,
//!   so the home directory, `/root` and the shadow files go to `denyRead`, and the scope (and
//!   runtime) paths inside them are re-allowed with `allowRead`; `allowWrite` is the write scope;
//!   `denyWrite` (and `denyRead`) carry the deny list. Network: no domains (all blocked) unless
//!   the scope allows all network, which srt cannot express — then `allowedDomains` is `["*"]`.
//! * **nono** profile JSON (`~/.config/nono/profiles/<name>.json`): `filesystem.allow`/`read`
//!   (directories) and `allow_file`/`read_file` (files), `filesystem.deny` for absolute deny
//!   paths, `network.block`.
//! * **landrun** command line: `--rox` runtime, `--ro` read scope, `--rw` write scope,
//!   `--connect-tcp`/`--bind-tcp` ports (or `--unrestricted-network`), `--env PATH --env HOME`,
//!   `--best-effort` (landrun targets a newer Landlock ABI than most kernels have).
//! * **seatbelt**: the macOS `sandbox-exec` profile from [`crate::sandbox::seatbelt::profile`],
//!   the same generator the jail uses on macOS.
//!
//! Landlock-based tools (nono, landrun) cannot deny a path inside an allowed directory, so `**/`
//! deny globs (`.env`, `*.pem`) are not expressible there; the export says so in `notes`.
//! Only paths that exist are emitted: these tools refuse missing paths.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::scope::{Scope, ScopeEntry};
use crate::sandbox::{Grant, GrantAccess};

/// The runtime the jail would grant `command` (system paths, plus what runtime discovery finds
/// from the command line when there is one), and discovery's notes.
pub fn runtime_grants(
    command: &[String],
    cwd: &Path,
    allow_net: bool,
) -> (Vec<Grant>, Vec<String>) {
    let mut grants = crate::sandbox::runtime::system_grants(allow_net);
    let mut notes = Vec::new();
    if !command.is_empty() {
        let vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
        // A package runner (`npx -y pkg`) is resolved as the jail resolves it: the grants are
        // the resolved program's, and the other sandbox should run that program, not the
        // runner (which needs its cache writable and the network).
        let (command, cwd) = match crate::sandbox::launcher::resolve(command, cwd, &vars) {
            Ok(launch) => {
                if launch.command != command {
                    notes.push(format!(
                        "`{}` was resolved outside the sandbox to `{}`: run that command in the \
                         exported sandbox (the runner itself would need its cache writable)",
                        command.join(" "),
                        launch.command.join(" ")
                    ));
                }
                (launch.command, launch.cwd)
            }
            Err(e) => {
                notes.push(format!("cannot resolve the launcher: {e}"));
                (command.to_vec(), cwd.to_path_buf())
            }
        };
        let env = crate::sandbox::runtime::DiscoverEnv { vars: &vars };
        match crate::sandbox::runtime::discover(&command, &cwd, &env) {
            Ok(rt) => {
                grants.extend(rt.grants);
                notes.extend(rt.notes);
            }
            Err(e) => notes.push(format!(
                "runtime discovery failed ({e}); only system paths are granted"
            )),
        }
    }
    (grants, notes)
}

fn grant_paths(runtime: &[Grant], access: GrantAccess) -> Vec<PathBuf> {
    runtime
        .iter()
        .filter(|g| g.access == access)
        .map(|g| g.path.clone())
        .collect()
}

/// An exported policy plus what could not be expressed.
#[derive(Debug, Clone)]
pub struct Export {
    /// The text to write (JSON or a shell command line).
    pub text: String,
    /// What the target format cannot express, to print on stderr.
    pub notes: Vec<String>,
}

fn existing(paths: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if p.exists() && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn entry_paths(entries: &[ScopeEntry]) -> Vec<PathBuf> {
    entries.iter().map(|e| e.path.clone()).collect()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Deny patterns that are plain absolute paths (no glob metacharacters), unescaped.
fn absolute_denies(scope: &Scope) -> Vec<PathBuf> {
    scope
        .deny
        .iter()
        .filter(|d| d.starts_with('/') && !d.contains(['*', '?', '[', '{']))
        .map(|d| PathBuf::from(d.replace('\\', "")))
        .collect()
}

fn glob_denies(scope: &Scope) -> Vec<String> {
    scope
        .deny
        .iter()
        .filter(|d| !d.starts_with('/') || d.contains(['*', '?', '[', '{']))
        .cloned()
        .collect()
}

/// srt settings JSON.
pub fn srt(scope: &Scope, runtime: &[Grant], home: Option<&Path>) -> Export {
    let mut notes = Vec::new();
    let mut deny_read: Vec<String> = Vec::new();
    let mut denied_roots: Vec<PathBuf> = Vec::new();
    let home = home.map(|h| std::fs::canonicalize(h).unwrap_or_else(|_| h.to_path_buf()));
    for p in home
        .iter()
        .cloned()
        .chain(["/root", "/etc/shadow", "/etc/gshadow", "/etc/sudoers"].map(PathBuf::from))
    {
        if p.exists() && !denied_roots.contains(&p) {
            deny_read.push(s(&p));
            denied_roots.push(p);
        }
    }
    for d in absolute_denies(scope) {
        if !denied_roots.iter().any(|r| d.starts_with(r)) {
            deny_read.push(s(&d));
        }
    }
    let globs = glob_denies(scope);
    deny_read.extend(globs.iter().cloned());
    // Re-allow what the server may read inside the denied regions.
    let readable = entry_paths(&scope.write)
        .into_iter()
        .chain(entry_paths(&scope.read))
        .chain(entry_paths(&scope.exec))
        .chain(runtime.iter().map(|g| g.path.clone()));
    let mut allow_read: Vec<String> = Vec::new();
    for p in readable.filter(|p| denied_roots.iter().any(|r| p.starts_with(r))) {
        if !allow_read.contains(&s(&p)) {
            allow_read.push(s(&p));
        }
    }
    let allow_write: Vec<String> = entry_paths(&scope.write).iter().map(|p| s(p)).collect();
    let mut deny_write: Vec<String> = absolute_denies(scope).iter().map(|p| s(p)).collect();
    deny_write.extend(globs);
    if !scope.net.tcp_connect_ports.is_empty() || !scope.net.tcp_bind_ports.is_empty() {
        notes.push(
            "srt filters network by domain, not port: the TCP port rules are not exported".into(),
        );
    }
    let allowed_domains: Vec<String> = if scope.net.allow_all {
        vec!["*".into()]
    } else {
        srt_domains(&scope.net.allow_domains, &mut notes)
    };
    notes.push(
        "srt leaves reads outside denyRead open: only the home directory, /root and the \
         shadow files are closed, with the scope re-allowed inside them"
            .into(),
    );
    let v = json!({
        "filesystem": {
            "denyRead": deny_read,
            "allowRead": allow_read,
            "allowWrite": allow_write,
            "denyWrite": deny_write,
        },
        "network": {"allowedDomains": allowed_domains, "deniedDomains": []},
    });
    Export {
        text: pretty(&v),
        notes,
    }
}

/// nono profile JSON.
/// `--allow-domain` rules as srt's `network.allowedDomains` (`example.com`, `*.example.com`).
/// srt's patterns carry no port and no address: a rule with a port is exported as its name
/// (wider: srt allows the name on any port), an address rule is left out; both are noted.
fn srt_domains(rules: &[super::net::DomainRule], notes: &mut Vec<String>) -> Vec<String> {
    use super::net::HostPattern;
    let mut out: Vec<String> = Vec::new();
    for rule in rules {
        let name = match &rule.host {
            HostPattern::Exact(n) => n.clone(),
            HostPattern::Subdomains(s) => format!("*.{s}"),
            HostPattern::Ip(_) => {
                notes.push(format!(
                    "srt's allowedDomains takes names only: the address rule {rule} is not exported"
                ));
                continue;
            }
        };
        if rule.port.is_some() {
            notes.push(format!(
                "srt's allowedDomains has no ports: {rule} is exported as {name} (any port)"
            ));
        }
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Domain rules need an egress proxy, which the other formats have no field for.
fn domains_not_exported(scope: &Scope, format: &str, notes: &mut Vec<String>) {
    if !scope.net.allow_all && !scope.net.allow_domains.is_empty() {
        notes.push(format!(
            "{format} has no domain filtering: the [net] allow_domains rules are not exported \
             (the network stays closed there)"
        ));
    }
}

pub fn nono(scope: &Scope, runtime: &[Grant], name: &str) -> Export {
    let mut notes = Vec::new();
    domains_not_exported(scope, "nono", &mut notes);
    let (write_dirs, write_files) = split_dirs(existing(entry_paths(&scope.write)));
    let reads = entry_paths(&scope.read)
        .into_iter()
        .chain(entry_paths(&scope.exec))
        .chain(grant_paths(runtime, GrantAccess::ReadExec))
        .chain(grant_paths(runtime, GrantAccess::Read));
    let (read_dirs, read_files) = split_dirs(existing(reads));
    let (null_dirs, null_files) =
        split_dirs(existing(grant_paths(runtime, GrantAccess::ReadWrite)));
    let deny: Vec<String> = existing(absolute_denies(scope))
        .iter()
        .map(|p| s(p))
        .collect();
    let globs = glob_denies(scope);
    if !globs.is_empty() {
        notes.push(format!(
            "nono (Landlock) cannot deny a pattern inside an allowed directory; not exported: {}",
            globs.join(", ")
        ));
    }
    if !scope.net.tcp_connect_ports.is_empty() {
        notes.push(
            "nono's open_port is for localhost only; outbound TCP port rules are not exported"
                .into(),
        );
    }
    let profile_name = nono_name(name);
    let v = json!({
        "meta": {
            "name": profile_name,
            "description": format!("mcpjail-derived scope for MCP server {name}"),
        },
        "workdir": {"access": "none"},
        "filesystem": {
            "allow": strings(write_dirs.iter().chain(null_dirs.iter())),
            "allow_file": strings(write_files.iter().chain(null_files.iter())),
            "read": strings(read_dirs.iter()),
            "read_file": strings(read_files.iter()),
            "deny": deny,
        },
        "network": {
            "block": !scope.net.allow_all,
            "listen_port": scope.net.tcp_bind_ports,
        },
    });
    Export {
        text: pretty(&v),
        notes,
    }
}

/// nono profile names are letters, digits and inner hyphens.
fn nono_name(name: &str) -> String {
    let mut out = String::from("mcpjail-");
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// The landrun argv (starting with `landrun`) that runs `command` under the scope.
pub fn landrun_args(
    scope: &Scope,
    runtime: &[Grant],
    command: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let mut args = vec!["landrun".to_string(), "--best-effort".to_string()];
    let exec = existing(
        grant_paths(runtime, GrantAccess::ReadExec)
            .into_iter()
            .chain(entry_paths(&scope.exec)),
    );
    for p in exec {
        args.extend(["--rox".into(), s(&p)]);
    }
    let reads = existing(
        grant_paths(runtime, GrantAccess::Read)
            .into_iter()
            .chain(entry_paths(&scope.read)),
    );
    for p in reads {
        args.extend(["--ro".into(), s(&p)]);
    }
    let writes = existing(
        grant_paths(runtime, GrantAccess::ReadWrite)
            .into_iter()
            .chain(entry_paths(&scope.write)),
    );
    for p in writes {
        args.extend(["--rw".into(), s(&p)]);
    }
    if scope.net.allow_all {
        args.push("--unrestricted-network".into());
    } else {
        for p in &scope.net.tcp_connect_ports {
            args.extend(["--connect-tcp".into(), p.to_string()]);
        }
        for p in &scope.net.tcp_bind_ports {
            args.extend(["--bind-tcp".into(), p.to_string()]);
        }
    }
    args.extend(["--env".into(), "PATH".into(), "--env".into(), "HOME".into()]);
    let globs = glob_denies(scope);
    if !globs.is_empty() {
        notes.push(format!(
            "landrun (Landlock) cannot deny a pattern inside an allowed directory; not exported: {}",
            globs.join(", ")
        ));
    }
    domains_not_exported(scope, "landrun", &mut notes);
    args.push("--".into());
    args.extend(command.iter().cloned());
    (args, notes)
}

/// The landrun command line as one shell-quoted string.
pub fn landrun(scope: &Scope, runtime: &[Grant], command: &[String]) -> Export {
    let (args, notes) = landrun_args(scope, runtime, command);
    let text = args
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    Export { text, notes }
}

/// The macOS Seatbelt profile (the jail's own generator; no private TMPDIR: `sandbox-exec`
/// users give the server one themselves).
pub fn seatbelt(scope: &Scope, runtime: &[Grant]) -> Export {
    let mut notes = vec![
        "run it with: sandbox-exec -f PROFILE -- COMMAND (macOS); the runtime paths are this \
         machine's, derive it on the Mac that runs the server"
            .into(),
    ];
    domains_not_exported(scope, "the Seatbelt profile", &mut notes);
    Export {
        text: crate::sandbox::seatbelt::profile(scope, runtime, None),
        notes,
    }
}

/// POSIX shell quoting: bare when safe, else single quotes.
pub fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:,@%".contains(&b));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn split_dirs(paths: Vec<PathBuf>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    paths.into_iter().partition(|p| p.is_dir())
}

fn strings<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> Vec<String> {
    paths.map(|p| s(p)).collect()
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{NetRules, ScopeSource};

    fn entry(p: &Path) -> ScopeEntry {
        ScopeEntry {
            path: p.to_path_buf(),
            source: ScopeSource::Flag,
        }
    }

    struct Fx {
        _d: tempfile::TempDir,
        home: PathBuf,
        scope: Scope,
    }

    fn fx() -> Fx {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(home.join("proj")).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::create_dir_all(root.join("rt/node_modules")).unwrap();
        std::fs::write(root.join("notes.txt"), "").unwrap();
        let scope = Scope {
            read: vec![entry(&root.join("docs"))],
            write: vec![entry(&home.join("proj")), entry(&root.join("notes.txt"))],
            exec: vec![entry(&root.join("rt/node_modules"))],
            deny: crate::policy::always_denied(Some(&home)),
            net: NetRules::default(),
        };
        Fx { _d: d, home, scope }
    }

    #[test]
    fn srt_shape() {
        let f = fx();
        let rt = crate::sandbox::runtime::system_grants(false);
        let e = srt(&f.scope, &rt, Some(&f.home));
        let v: Value = serde_json::from_str(&e.text).unwrap();
        let fs = &v["filesystem"];
        let list = |k: &str| -> Vec<String> {
            fs[k]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_string())
                .collect()
        };
        assert!(list("denyRead").contains(&s(&f.home)));
        assert!(list("denyRead").contains(&"**/.env".to_string()));
        assert_eq!(list("allowRead"), vec![s(&f.home.join("proj"))]);
        assert_eq!(list("allowWrite").len(), 2);
        assert!(list("denyWrite").contains(&s(&f.home.join(".ssh"))));
        assert_eq!(v["network"]["allowedDomains"], json!([]));
        assert_eq!(v["network"]["deniedDomains"], json!([]));
    }

    #[test]
    fn nono_shape() {
        let f = fx();
        let rt = crate::sandbox::runtime::system_grants(false);
        let e = nono(&f.scope, &rt, "server-filesystem");
        let v: Value = serde_json::from_str(&e.text).unwrap();
        assert_eq!(v["meta"]["name"], "mcpjail-server-filesystem");
        let fsv = &v["filesystem"];
        assert!(fsv["allow"]
            .as_array()
            .unwrap()
            .contains(&json!(s(&f.home.join("proj")))));
        assert!(fsv["allow_file"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().ends_with("notes.txt")));
        assert!(fsv["read"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x.as_str().unwrap().ends_with("docs")));
        assert!(fsv["read"].as_array().unwrap().contains(&json!("/usr")));
        assert_eq!(v["network"]["block"], true);
        assert!(e.notes.iter().any(|n| n.contains("**/.env")));
        assert_eq!(nono_name("@scope/pkg_x"), "mcpjail-scope-pkg-x");
    }

    #[test]
    fn srt_gets_the_domain_allowlist_without_ports_or_addresses() {
        let mut f = fx();
        f.scope.net.allow_domains = [
            "api.example.com",
            "*.cdn.example.com",
            "x.test:8443",
            "10.0.0.1:443",
        ]
        .iter()
        .map(|r| crate::policy::DomainRule::parse(r).unwrap())
        .collect();
        let rt = crate::sandbox::runtime::system_grants(false);
        let e = srt(&f.scope, &rt, Some(&f.home));
        let v: Value = serde_json::from_str(&e.text).unwrap();
        assert_eq!(
            v["network"]["allowedDomains"],
            json!(["api.example.com", "*.cdn.example.com", "x.test"])
        );
        assert!(
            e.notes.iter().any(|n| n.contains("x.test:8443")),
            "{:?}",
            e.notes
        );
        assert!(
            e.notes.iter().any(|n| n.contains("10.0.0.1:443")),
            "{:?}",
            e.notes
        );
        let n = nono(&f.scope, &rt, "srv");
        assert!(
            n.notes.iter().any(|n| n.contains("allow_domains")),
            "{:?}",
            n.notes
        );
    }

    #[test]
    fn seatbelt_shape() {
        let f = fx();
        let rt = crate::sandbox::runtime::system_grants(false);
        let e = seatbelt(&f.scope, &rt);
        assert!(e.text.starts_with("(version 1)"), "{}", e.text);
        assert!(e.text.contains("(deny default)"));
        assert!(e.text.contains(&s(&f.home.join("proj"))));
    }

    #[test]
    fn landrun_shape() {
        let mut f = fx();
        f.scope.net.tcp_connect_ports = vec![443];
        let cmd = vec!["node".to_string(), "srv.js".to_string(), "it's".to_string()];
        let rt = crate::sandbox::runtime::system_grants(false);
        let (args, _) = landrun_args(&f.scope, &rt, &cmd);
        let pair = |flag: &str, v: &str| args.windows(2).any(|w| w[0] == flag && w[1] == v);
        assert_eq!(args[0], "landrun");
        assert!(pair("--rox", "/usr"));
        assert!(pair("--rox", &s(&f.scope.exec[0].path)));
        assert!(pair("--ro", &s(&f.scope.read[0].path)));
        assert!(pair("--rw", &s(&f.home.join("proj"))));
        assert!(pair("--rw", "/dev/null"));
        assert!(pair("--connect-tcp", "443"));
        let dd = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(&args[dd + 1..], &cmd[..]);
        let line = landrun(&f.scope, &rt, &cmd).text;
        assert!(line.ends_with("-- node srv.js 'it'\\''s'"), "{line}");
        f.scope.net.allow_all = true;
        assert!(landrun_args(&f.scope, &rt, &cmd)
            .0
            .contains(&"--unrestricted-network".to_string()));
    }
}
