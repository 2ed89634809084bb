//! The [`Scope`] data type shared by the proxy and the sandbox, and its checks.
//!
//! A check is two steps, in this order:
//! 1. **deny globs** (always-denied credentials, client configs, mcpjail's own state, plus a
//!    policy file's `deny`), matched against the canonical path *and each of its ancestors*
//!    (compiled as `P` and `P/**`), so a denied directory pattern (`/home/u/.ssh`) covers its
//!    whole subtree;
//! 2. **component-wise prefix allow**: `write` roots allow read and write, `read` roots allow
//!    read only. `/a/proj` covers `/a/proj/x` but not `/a/projX`.
//!
//! Paths given to [`Scope::check`] must already be canonical (see [`super::resolve`]); this module
//! does no I/O.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Where a scope entry came from, so `--log` and `policy derive` can explain every grant.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum ScopeSource {
    /// An explicit policy file (path of the file).
    PolicyFile(PathBuf),
    /// A path in the server's own argv (the argument as written).
    Argv(String),
    /// Derived from a tool schema (tool name).
    Schema(String),
    /// The client's `roots/list` reply.
    ClientRoots,
    /// `--allow-read` / `--allow-write` on this process only.
    Flag,
    /// The server's runtime (interpreter, install tree, system libraries).
    Runtime,
}

/// One canonical absolute path prefix and why it is granted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScopeEntry {
    pub path: PathBuf,
    pub source: ScopeSource,
}

/// Network rules. Off (deny all) by default.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetRules {
    /// `--allow-net`: turn every network rule off (documented trade-off).
    pub allow_all: bool,
    pub tcp_connect_ports: Vec<u16>,
    pub tcp_bind_ports: Vec<u16>,
    /// `--allow-domain` / `[net] allow_domains`: names (and listed addresses) the server may
    /// reach through the egress proxy.
    pub allow_domains: Vec<super::net::DomainRule>,
    /// The loopback port of this session's egress proxy, once it listens: the one TCP port the
    /// jail lets the server connect to for named destinations.
    pub egress_port: Option<u16>,
}

impl NetRules {
    /// TCP ports the server may connect to: the listed ones plus the egress proxy's.
    pub fn connect_ports(&self) -> Vec<u16> {
        let mut ports = self.tcp_connect_ports.clone();
        if let Some(p) = self.egress_port {
            if !ports.contains(&p) {
                ports.push(p);
            }
        }
        ports
    }
}

/// What a server may touch. `write` implies read. Paths are canonical and absolute.
///
/// Allow checks are component-wise prefix checks (`/home/u/proj` does not cover `/home/u/projX`);
/// `deny` globs always win over allows.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Scope {
    pub read: Vec<ScopeEntry>,
    pub write: Vec<ScopeEntry>,
    pub exec: Vec<ScopeEntry>,
    /// Deny glob patterns (always-denied credentials plus policy-file `deny`).
    pub deny: Vec<String>,
    pub net: NetRules,
}

/// What an access needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
}

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum DenyReason {
    /// Outside every allowed root for this access.
    OutsideScope,
    /// Matches an always-denied or policy deny glob (the pattern).
    DeniedPattern(String),
    /// A write by a tool the server declares read-only.
    ReadOnlyTool,
    /// A write to a protected name (code or settings something else runs later: git hooks,
    /// `.git/config`, shell rc files, editor and agent settings; see `policy::deny`): the
    /// pattern. Reading it stays allowed.
    Protected(String),
}

/// A refused path, with everything a message to the model needs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Denial {
    pub path: PathBuf,
    pub access: Access,
    pub reason: DenyReason,
}

impl Scope {
    /// Is `path` (already resolved, canonical) allowed for `access`? Deny globs win over allows;
    /// allow checks are component-wise prefix checks.
    pub fn check(&self, path: &Path, access: Access) -> Result<(), Denial> {
        let deny = |reason| Denial {
            path: path.to_path_buf(),
            access,
            reason,
        };
        if let Some(pattern) = self.denied_by(path) {
            return Err(deny(DenyReason::DeniedPattern(pattern)));
        }
        if access == Access::Write {
            if let Some(pattern) = protected_by(path) {
                return Err(deny(DenyReason::Protected(pattern)));
            }
        }
        let allowed = match access {
            Access::Read => under_any(path, &self.read) || under_any(path, &self.write),
            Access::Write => under_any(path, &self.write),
        };
        if allowed {
            Ok(())
        } else {
            Err(deny(DenyReason::OutsideScope))
        }
    }

    /// The deny pattern `path` (or one of its ancestors) matches, if any. An unparsable pattern
    /// denies everything (fail closed); [`validate_deny_globs`] reports them up front.
    pub fn denied_by(&self, path: &Path) -> Option<String> {
        if self.deny.is_empty() {
            return None;
        }
        let set = match compiled_deny_set(&self.deny) {
            Ok(set) => set,
            Err(bad) => return Some(bad),
        };
        // The set holds each pattern twice, as `P` and as `P/**` (its subtree), so one match on
        // the full path answers "does the path or any ancestor match P". `is_match` does not
        // allocate; which pattern it was is looked up only on a hit.
        let i = set.first_match(path)?;
        self.deny.get(i).cloned()
    }

    /// The roots a model may use for `access`, for denial messages.
    pub fn roots(&self, access: Access) -> Vec<PathBuf> {
        let entries: Vec<&ScopeEntry> = match access {
            Access::Read => self.write.iter().chain(self.read.iter()).collect(),
            Access::Write => self.write.iter().collect(),
        };
        let mut out: Vec<PathBuf> = Vec::new();
        for e in entries {
            if !out.contains(&e.path) {
                out.push(e.path.clone());
            }
        }
        out
    }

    /// A copy narrowed to what lies under `roots` (the client's `roots/list`, resolved to
    /// canonical paths): never wider. For each pair of scope entry and root: a root inside the
    /// entry narrows the entry to the root (source [`ScopeSource::ClientRoots`]); an entry inside
    /// a root stays as it is; unrelated pairs give nothing. An empty `roots` leaves no data scope.
    /// `exec`, `deny` and `net` are kept.
    pub fn narrowed_to(&self, roots: &[PathBuf]) -> Scope {
        let narrow = |entries: &[ScopeEntry]| {
            let mut out: Vec<ScopeEntry> = Vec::new();
            for e in entries {
                for root in roots {
                    let kept = if root.starts_with(&e.path) {
                        ScopeEntry {
                            path: root.clone(),
                            source: if *root == e.path {
                                e.source.clone()
                            } else {
                                ScopeSource::ClientRoots
                            },
                        }
                    } else if e.path.starts_with(root) {
                        e.clone()
                    } else {
                        continue;
                    };
                    if !out.iter().any(|o| o.path == kept.path) {
                        out.push(kept);
                    }
                }
            }
            out
        };
        Scope {
            read: narrow(&self.read),
            write: narrow(&self.write),
            exec: self.exec.clone(),
            deny: self.deny.clone(),
            net: self.net.clone(),
        }
    }

    /// The write root under which the server may change `path` (canonical), if any. A path a
    /// deny glob covers is not writable (the jail masks it), so it has none. Whoever starts a
    /// server refuses to trust a file the server could rewrite (the proxy's audit log, the
    /// policy file that decides the grants).
    pub fn write_root_over(&self, path: &Path) -> Option<&Path> {
        if self.denied_by(path).is_some() {
            return None;
        }
        self.write
            .iter()
            .find(|e| path.starts_with(&e.path))
            .map(|e| e.path.as_path())
    }

    /// Is `other` strictly narrower than or equal to `self` (so a respawn would narrow)?
    /// Every read entry of `other` must lie under a read or write root of `self`, every write
    /// entry under a write root, every exec entry under an exec root; `other` must deny at least
    /// what `self` denies and allow no more network.
    pub fn covers(&self, other: &Scope) -> bool {
        let reads_ok = other
            .read
            .iter()
            .all(|e| under_any(&e.path, &self.read) || under_any(&e.path, &self.write));
        let writes_ok = other.write.iter().all(|e| under_any(&e.path, &self.write));
        let exec_ok = other.exec.iter().all(|e| under_any(&e.path, &self.exec));
        let deny_ok = self.deny.iter().all(|d| other.deny.contains(d));
        let net_ok = self.net.allow_all
            || (!other.net.allow_all
                && other
                    .net
                    .tcp_connect_ports
                    .iter()
                    .all(|p| self.net.tcp_connect_ports.contains(p))
                && other
                    .net
                    .tcp_bind_ports
                    .iter()
                    .all(|p| self.net.tcp_bind_ports.contains(p)));
        reads_ok && writes_ok && exec_ok && deny_ok && net_ok
    }
}

/// The protected pattern (`policy::deny::PROTECTED`) `path` or one of its ancestors matches.
pub fn protected_by(path: &Path) -> Option<String> {
    static SET: std::sync::OnceLock<Option<GlobSet>> = std::sync::OnceLock::new();
    let set = SET.get_or_init(|| {
        let mut builder = GlobSetBuilder::new();
        for p in protected_patterns() {
            builder.add(build_glob(p).ok()?);
            builder.add(build_glob(&format!("{p}/**")).ok()?);
        }
        builder.build().ok()
    });
    let Some(set) = set.as_ref() else {
        // The list is fixed and tested to compile; fail closed all the same.
        return Some("(protected names)".into());
    };
    let i = set.matches(path).first().copied()?;
    protected_patterns().nth(i / 2).map(|p| p.to_string())
}

fn protected_patterns() -> impl Iterator<Item = &'static &'static str> {
    super::deny::PROTECTED
        .iter()
        .chain(super::deny::PROTECTED_IN_SUBMODULES)
}

/// Component-wise prefix: `Path::starts_with` compares whole components.
fn under_any(path: &Path, entries: &[ScopeEntry]) -> bool {
    entries.iter().any(|e| path.starts_with(&e.path))
}

fn build_glob(pattern: &str) -> Result<globset::Glob, globset::Error> {
    // `*` must not cross `/`: `/home/u/*.pem` is not `/home/u/a/b.pem` (use `**` for that).
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
}

/// Check every deny pattern parses; the error names the first bad one.
pub fn validate_deny_globs(patterns: &[String]) -> Result<(), (String, String)> {
    for p in patterns {
        build_glob(p).map_err(|e| (p.clone(), e.kind().to_string()))?;
    }
    Ok(())
}

/// The proxy checks the same Scope over and over; compiling its globs once per call would cost
/// more than the check. A one-entry cache keyed by the pattern list is enough (one Scope per
/// proxy, a second one only while narrowing).
/// The deny list as the proxy's checks match it: each pattern as `P` and `P/**`.
pub(crate) fn compiled_deny_set(
    patterns: &[String],
) -> Result<Arc<super::globs::Compiled>, String> {
    super::globs::compiled("policy", patterns, |patterns| {
        let mut builder = super::globs::Builder::new(true);
        for (i, p) in patterns.iter().enumerate() {
            builder.add(i, p, build_glob).map_err(|_| p.clone())?;
            let subtree = format!("{}/**", p.trim_end_matches('/'));
            builder
                .add(i, &subtree, build_glob)
                .map_err(|_| p.clone())?;
        }
        builder.build(Vec::new()).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_names_are_readable_but_not_writable_at_any_depth() {
        let s = scope();
        for p in [
            "/a/proj/.git/hooks/pre-commit",
            "/a/proj/.git/config",
            "/a/proj/sub/dir/.git/hooks",
            "/a/proj/.bashrc",
            "/a/proj/x/.vscode/tasks.json",
            "/a/proj/.claude/commands/x.md",
            "/a/proj/.claude/settings.local.json",
            "/a/proj/.gitmodules",
        ] {
            let err = s.check(Path::new(p), Access::Write).unwrap_err();
            assert!(matches!(err.reason, DenyReason::Protected(_)), "{p}");
            assert!(s.check(Path::new(p), Access::Read).is_ok(), "{p}");
        }
        for p in [
            "/a/proj/.git/objects/ab",
            "/a/proj/src/config",
            "/a/proj/.claude/notes.md",
        ] {
            assert!(s.check(Path::new(p), Access::Write).is_ok(), "{p}");
        }
    }

    fn entry(p: &str) -> ScopeEntry {
        ScopeEntry {
            path: PathBuf::from(p),
            source: ScopeSource::Flag,
        }
    }

    fn scope() -> Scope {
        Scope {
            read: vec![entry("/data/ro")],
            write: vec![entry("/a/proj")],
            exec: vec![entry("/usr")],
            deny: vec!["/home/u/.ssh".into(), "**/.env*".into(), "**/*.pem".into()],
            net: NetRules::default(),
        }
    }

    #[test]
    fn component_wise_prefix() {
        let s = scope();
        assert!(s.check(Path::new("/a/proj"), Access::Write).is_ok());
        assert!(s.check(Path::new("/a/proj/x/y"), Access::Write).is_ok());
        let d = s.check(Path::new("/a/projX"), Access::Read).unwrap_err();
        assert_eq!(d.reason, DenyReason::OutsideScope);
        assert!(s.check(Path::new("/a/projX/y"), Access::Read).is_err());
        assert!(s.check(Path::new("/a"), Access::Read).is_err());
    }

    #[test]
    fn write_needs_a_write_root_read_takes_either() {
        let s = scope();
        assert!(s.check(Path::new("/data/ro/f"), Access::Read).is_ok());
        let d = s.check(Path::new("/data/ro/f"), Access::Write).unwrap_err();
        assert_eq!(d.reason, DenyReason::OutsideScope);
        assert_eq!(d.access, Access::Write);
        assert!(s.check(Path::new("/a/proj/f"), Access::Read).is_ok());
        // exec entries grant no data access.
        assert!(s.check(Path::new("/usr/bin/env"), Access::Read).is_err());
    }

    #[test]
    fn deny_wins_over_allow() {
        let mut s = scope();
        s.write.push(entry("/home/u"));
        let d = s
            .check(Path::new("/a/proj/.env"), Access::Read)
            .unwrap_err();
        assert_eq!(d.reason, DenyReason::DeniedPattern("**/.env*".into()));
        assert!(s
            .check(Path::new("/a/proj/.env.local"), Access::Read)
            .is_err());
        assert!(s
            .check(Path::new("/a/proj/certs/k.pem"), Access::Read)
            .is_err());
        // A denied directory covers its subtree via the ancestor check.
        let d = s
            .check(Path::new("/home/u/.ssh/id_rsa"), Access::Read)
            .unwrap_err();
        assert_eq!(d.reason, DenyReason::DeniedPattern("/home/u/.ssh".into()));
        assert!(s.check(Path::new("/home/u/.sshx"), Access::Read).is_ok());
        // A `**/` pattern matching a directory covers what is inside it too.
        let d = s
            .check(Path::new("/a/proj/.env.d/x"), Access::Read)
            .unwrap_err();
        assert_eq!(d.reason, DenyReason::DeniedPattern("**/.env*".into()));
        // The pattern reported is the first one that matches, whichever form matched.
        let d = s
            .check(Path::new("/home/u/.ssh"), Access::Read)
            .unwrap_err();
        assert_eq!(d.reason, DenyReason::DeniedPattern("/home/u/.ssh".into()));
        assert!(s
            .check(Path::new("/a/proj/environment.txt"), Access::Read)
            .is_ok());
    }

    #[test]
    fn invalid_glob_fails_closed() {
        let mut s = scope();
        s.deny.push("[".into());
        assert!(s.check(Path::new("/a/proj/ok"), Access::Read).is_err());
        assert!(validate_deny_globs(&s.deny).is_err());
    }

    #[test]
    fn roots_lists_write_then_read() {
        let s = scope();
        assert_eq!(s.roots(Access::Write), vec![PathBuf::from("/a/proj")]);
        assert_eq!(
            s.roots(Access::Read),
            vec![PathBuf::from("/a/proj"), PathBuf::from("/data/ro")]
        );
    }

    #[test]
    fn narrowing_is_an_intersection() {
        let s = scope();
        let n = s.narrowed_to(&[PathBuf::from("/a/proj/sub"), PathBuf::from("/data")]);
        assert_eq!(n.write.len(), 1);
        assert_eq!(n.write[0].path, PathBuf::from("/a/proj/sub"));
        assert_eq!(n.write[0].source, ScopeSource::ClientRoots);
        // The read entry lies inside the root /data: it stays as it was.
        assert_eq!(n.read, vec![entry("/data/ro")]);
        assert!(s.covers(&n));
        assert!(!n.covers(&s));
        // A sibling-prefix root is unrelated.
        let n = s.narrowed_to(&[PathBuf::from("/a/projX")]);
        assert!(n.write.is_empty() && n.read.is_empty());
        // Never wider: a root above the scope keeps the scope.
        let n = s.narrowed_to(&[PathBuf::from("/")]);
        assert_eq!(n.write, s.write);
        assert_eq!(n.read, s.read);
        assert!(s.narrowed_to(&[]).write.is_empty());
    }

    #[test]
    fn covers_checks_every_dimension() {
        let s = scope();
        assert!(s.covers(&s));
        let mut wider = s.clone();
        wider.write.push(entry("/b"));
        assert!(!s.covers(&wider));
        let mut ro_to_rw = s.clone();
        ro_to_rw.write.push(entry("/data/ro/x"));
        assert!(!s.covers(&ro_to_rw));
        let mut fewer_denies = s.clone();
        fewer_denies.deny.pop();
        assert!(!s.covers(&fewer_denies));
        let mut net = s.clone();
        net.net.allow_all = true;
        assert!(!s.covers(&net));
    }
}
