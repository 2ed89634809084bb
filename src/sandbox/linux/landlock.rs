//! The Landlock layer: filesystem, TCP and scoping rules built from the grants.
//!
//! Every granted path is opened (`O_PATH`) once in `prepare`, so building a ruleset later is
//! only a handful of syscalls on already-open fds. A fresh ruleset is created for every spawned
//! command in the parent; the child adds rules for the files of its own `/proc/<pid>` that runtimes
//! read ([`PROC_SELF_ENTRIES`]; a `/proc/self` rule made in the parent would name the *parent's*
//! pid directory and expose its `environ`) and then restricts itself with raw syscalls from
//! [`super::sys`]. Never the whole directory: `/proc/<pid>/net` (and `task/<tid>/net`) list every
//! socket of the network namespace, so a server would learn the path of every named UNIX socket
//! (ssh-agent, dbus, docker.sock) and every TCP peer on the machine.
//!
//! Compatibility is best effort against the newest ABI the crate knows, but the report is built
//! from the ABI the kernel actually answers with, right by right, so a partial jail says so.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{
    make_bitflags, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope as LlScope, ABI,
};

use super::sys;
use crate::policy::NetRules;
use crate::sandbox::{Enforcement, Grant, GrantAccess, LayerReport};

/// The newest ABI this code asks for; the kernel may offer less (then the report says so).
const TARGET_ABI: ABI = ABI::V10;

/// The filesystem rights a complete jail needs. All of them exist from ABI 5 on.
const REQUIRED_FS_ABI: i64 = 5;

#[derive(Debug)]
pub struct LandlockPlan {
    abi: i64,
    rules: Vec<(OwnedFd, BitFlags<AccessFs>)>,
    net: NetRules,
    /// Rights (raw bits) for the child's own `/proc/<pid>` entries: files, directories.
    pub proc_self_access: ProcSelfAccess,
}

/// Raw Landlock rights for [`PROC_SELF_ENTRIES`] (a right a file cannot have makes the rule
/// invalid, so files and directories get separate masks).
#[derive(Debug, Clone, Copy)]
pub struct ProcSelfAccess {
    pub file: u64,
    pub dir: u64,
}

/// The entries of its own `/proc/<pid>` a server may read, measured on the runtimes it runs
/// (strace of Node 20 with server-filesystem and server-memory, CPython 3.11 with mcp-server-git,
/// a uv project, Rust std): `maps` (glibc's main-thread stack, V8), `cgroup` and `mountinfo` (CPU
/// quotas: Node, Python, Rust's `available_parallelism`), `stat`/`statm`/`status` (memory and
/// process info), `fd`/`fdinfo` (listing its own descriptors). Magic links (`exe`, `cwd`, `fd/N`)
/// need no rule: reading them is not mediated and opening them opens the target, judged by its own
/// grants. Absent here: `net/` (every socket on the machine), `task/` (whose `net/` is the same),
/// `environ`, `mem`, `pagemap`, `stack`, `syscall`, `attr/`. `true` marks a directory. Names are
/// relative to `/proc/self`, opened once: each `/proc/self/…` path would resolve the link and the
/// pid directory again (18 opens: 137 → 109 µs here).
pub const PROC_SELF_ENTRIES: &[(&CStr, bool)] = &[
    (c"maps", false),
    (c"smaps", false),
    (c"smaps_rollup", false),
    (c"stat", false),
    (c"statm", false),
    (c"status", false),
    (c"cgroup", false),
    (c"mountinfo", false),
    (c"mounts", false),
    (c"limits", false),
    (c"cmdline", false),
    (c"comm", false),
    (c"auxv", false),
    (c"io", false),
    (c"sched", false),
    (c"oom_score_adj", false),
    (c"fd", true),
    (c"fdinfo", true),
];

#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("cannot open {path} for a Landlock rule: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot build the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot add a Landlock rule to the ruleset: {0}")]
    AddRule(std::io::Error),
}

fn read_rights() -> BitFlags<AccessFs> {
    make_bitflags!(AccessFs::{ReadFile | ReadDir})
}

fn rights_for(access: GrantAccess, is_dir: bool) -> BitFlags<AccessFs> {
    let all = AccessFs::from_all(TARGET_ABI);
    let rights = match access {
        GrantAccess::List => BitFlags::from(AccessFs::ReadDir),
        GrantAccess::Read => read_rights(),
        GrantAccess::ReadExec => read_rights() | AccessFs::Execute,
        // Never MakeChar/MakeBlock: a root server could mknod the disk inside its scope and read
        // it raw, past every path rule.
        GrantAccess::ReadWrite => {
            all & !(AccessFs::Execute | AccessFs::MakeChar | AccessFs::MakeBlock)
        }
    };
    if is_dir {
        rights
    } else {
        rights & AccessFs::from_file(TARGET_ABI)
    }
}

/// `path` opened (`O_PATH`) if it is absolute, has no `..`, and no symlink lies anywhere on
/// the way: then it is its own canonical form. `Some(Err)` for `ENOENT`: with no symlink before
/// the missing name, canonicalising would find nothing more. `None` sends the grant the long
/// way (a symlink on the way, another error).
fn open_if_canonical(path: &std::path::Path) -> Option<std::io::Result<OwnedFd>> {
    use std::path::Component;
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return None;
    }
    let c_path = CString::new(path.as_os_str().as_bytes()).ok()?;
    match sys::open_exact(&c_path) {
        Ok(fd) => Some(Ok(fd)),
        Err(err) if err.raw_os_error() == Some(libc::ENOENT) => Some(Err(err)),
        Err(_) => None,
    }
}

/// The rule for an opened grant: its rights, narrowed to a file's if it is not a directory.
fn rule_for(fd: OwnedFd, grant: &Grant) -> Result<(OwnedFd, BitFlags<AccessFs>), LandlockError> {
    let file = std::fs::File::from(fd);
    let is_dir = file
        .metadata()
        .map_err(|source| LandlockError::Open {
            path: grant.path.clone(),
            source,
        })?
        .is_dir();
    Ok((OwnedFd::from(file), rights_for(grant.access, is_dir)))
}

impl LandlockPlan {
    /// Open every grant. Grants whose path does not exist are skipped (returned as notes).
    ///
    /// Each grant is canonicalised, then its canonical path opened with no symlink allowed
    /// anywhere on the way ([`sys::open_exact`]), and the rule refers to that descriptor: a link
    /// swapped in after the path was checked (or after it was canonicalised here) is refused,
    /// never followed. A grant made from the user's data ([`Grant::names_exact_path`]: scope,
    /// private TMPDIR, state directory) must already be canonical: if it resolves elsewhere now,
    /// it was replaced by a symlink since it was checked, and it is not granted.
    pub fn open(
        grants: &[Grant],
        net: &NetRules,
        abi: i64,
    ) -> Result<(Self, Vec<String>), LandlockError> {
        let mut rules = Vec::new();
        let mut notes = Vec::new();
        for grant in grants {
            // Most grants (`/usr`, `/etc/ssl`, the scope) are canonical already: one open with
            // no symlink allowed proves it, where canonicalising first costs a readlink per
            // component. A missing grant (another distribution's certificate paths) is settled
            // by the same open. Anything else takes the long way below.
            match open_if_canonical(&grant.path) {
                Some(Ok(fd)) => {
                    rules.push(rule_for(fd, grant)?);
                    continue;
                }
                Some(Err(err)) => {
                    notes.push(format!("{} not granted ({err})", grant.path.display()));
                    continue;
                }
                None => {}
            }
            let canonical = match std::fs::canonicalize(&grant.path) {
                Ok(p) => p,
                Err(err) => {
                    notes.push(format!("{} not granted ({err})", grant.path.display()));
                    continue;
                }
            };
            if canonical != grant.path && grant.names_exact_path() {
                notes.push(swapped_note(&grant.path, Some(&canonical)));
                continue;
            }
            let c_path = CString::new(canonical.as_os_str().as_bytes()).map_err(|_| {
                LandlockError::Open {
                    path: grant.path.clone(),
                    source: std::io::Error::from_raw_os_error(libc::EINVAL),
                }
            })?;
            let fd = match sys::open_exact(&c_path) {
                Ok(fd) => fd,
                Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
                    notes.push(swapped_note(&grant.path, None));
                    continue;
                }
                Err(err) if err.raw_os_error() == Some(libc::ENOENT) => {
                    notes.push(format!("{} not granted ({err})", grant.path.display()));
                    continue;
                }
                Err(source) => {
                    return Err(LandlockError::Open {
                        path: grant.path.clone(),
                        source,
                    })
                }
            };
            rules.push(rule_for(fd, grant)?);
        }
        let proc_self_access = ProcSelfAccess {
            file: (read_rights() & AccessFs::from_file(TARGET_ABI)).bits(),
            dir: read_rights().bits(),
        };
        Ok((
            LandlockPlan {
                abi,
                rules,
                net: net.clone(),
                proc_self_access,
            },
            notes,
        ))
    }

    /// Create a fresh ruleset with every rule. `None` when the kernel has no Landlock.
    pub fn build_ruleset(&self) -> Result<Option<OwnedFd>, LandlockError> {
        if self.abi < 1 {
            return Ok(None);
        }
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET_ABI))?;
        if !self.net.allow_all {
            ruleset = ruleset.handle_access(AccessNet::from_all(TARGET_ABI))?;
        }
        if self.abi >= 6 {
            let scopes = if self.net.allow_all {
                BitFlags::from(LlScope::Signal)
            } else {
                LlScope::Signal | LlScope::AbstractUnixSocket
            };
            ruleset = ruleset.scope(scopes)?;
        }
        let mut created = ruleset.create()?;
        if !self.net.allow_all {
            for port in self.net.connect_ports() {
                created = created.add_rule(NetPort::new(port, AccessNet::ConnectTcp))?;
            }
            for port in &self.net.tcp_bind_ports {
                created = created.add_rule(NetPort::new(*port, AccessNet::BindTcp))?;
            }
        }
        let Some(ruleset) = Option::<OwnedFd>::from(created) else {
            return Ok(None);
        };
        // The path rules go in directly: the crate's `PathBeneath` would `fstat` each descriptor
        // to tell a file from a directory, which `rule_for` already did when it was opened (one
        // syscall less per rule, ~35 rules a start). What the crate's best effort would do is
        // done here: rights this kernel lacks are dropped, and a rule left with none is skipped.
        let supported = AccessFs::from_all(ABI::from(i32::try_from(self.abi).unwrap_or(i32::MAX)));
        for (fd, access) in &self.rules {
            let access = *access & supported;
            if access.is_empty() {
                continue;
            }
            sys::landlock_add_path_rule(ruleset.as_fd(), fd.as_fd(), access.bits())
                .map_err(LandlockError::AddRule)?;
        }
        Ok(Some(ruleset))
    }

    /// What this kernel enforces, layer by layer.
    pub fn report(&self) -> Vec<LayerReport> {
        let abi = self.abi;
        let mut layers = Vec::new();
        if abi < 1 {
            layers.push(LayerReport {
                layer: "landlock".into(),
                enforcement: Enforcement::NotEnforced,
                detail: "the kernel has no Landlock (not built in or not enabled at boot): \
                         files, network and signals are NOT confined"
                    .into(),
            });
            return layers;
        }
        let missing = missing_fs_rights(abi);
        layers.push(LayerReport {
            layer: "landlock_fs".into(),
            enforcement: if abi >= REQUIRED_FS_ABI {
                Enforcement::Fully
            } else {
                Enforcement::Partially
            },
            detail: if missing.is_empty() {
                format!(
                    "ABI {abi}: default deny for read, write, exec; enforced rights: {}; {} path rules + {} files of its own /proc/<pid> (not net/ or task/: the machine's sockets stay unlisted)",
                    fs_rights_names(abi).join(","),
                    self.rules.len(),
                    PROC_SELF_ENTRIES.len()
                )
            } else {
                format!(
                    "ABI {abi}: rights not enforceable on this kernel: {}",
                    missing.join(",")
                )
            },
        });
        layers.push(if self.net.allow_all {
            LayerReport {
                layer: "landlock_net".into(),
                enforcement: Enforcement::NotEnforced,
                detail: "network rules off (--allow-net)".into(),
            }
        } else if let (true, Some(port)) = (abi >= 4, self.net.egress_port) {
            LayerReport {
                layer: "landlock_net".into(),
                // Landlock's TCP rules name a port, not an address: the kernel lets the server
                // reach port P of any host, not only the egress proxy on 127.0.0.1:P.
                enforcement: Enforcement::Partially,
                detail: format!(
                    "TCP bind/connect denied except connect to port {port} (the egress proxy on \
                     127.0.0.1:{port}; names are judged there), connect ports {:?}, bind ports \
                     {:?}; BUT Landlock rules are by port, not address: port {port} of another \
                     host is reachable too",
                    self.net.tcp_connect_ports, self.net.tcp_bind_ports
                ),
            }
        } else if abi >= 4 {
            LayerReport {
                layer: "landlock_net".into(),
                enforcement: Enforcement::Fully,
                detail: format!(
                    "TCP bind/connect denied; allowed connect ports {:?}, bind ports {:?}",
                    self.net.tcp_connect_ports, self.net.tcp_bind_ports
                ),
            }
        } else {
            LayerReport {
                layer: "landlock_net".into(),
                enforcement: Enforcement::NotEnforced,
                detail: format!("ABI {abi} < 4: TCP bind/connect cannot be restricted"),
            }
        });
        layers.push(if abi >= 6 {
            LayerReport {
                layer: "landlock_scope".into(),
                enforcement: if self.net.allow_all {
                    Enforcement::Partially
                } else {
                    Enforcement::Fully
                },
                detail: if self.net.allow_all {
                    "signals scoped; abstract UNIX sockets open (--allow-net)".into()
                } else {
                    "signals and abstract UNIX sockets scoped to the jail".into()
                },
            }
        } else {
            LayerReport {
                layer: "landlock_scope".into(),
                enforcement: Enforcement::NotEnforced,
                detail: format!("ABI {abi} < 6: signals and abstract UNIX sockets not scoped"),
            }
        });
        layers
    }
}

/// A grant whose path was replaced by a symlink (`now` = where it resolves, when known) between
/// the checks and the open.
fn swapped_note(path: &Path, now: Option<&Path>) -> String {
    let now = now
        .map(|p| format!(", now resolving to {}", p.display()))
        .unwrap_or_default();
    format!(
        "{} not granted: it is a symlink, or lies under one, when the jail opens it{now} (it was \
         not one when it was checked: replaced since); the jail never grants a link's target \
         (hint: if the link is yours, name its target with --allow-read/--allow-write)",
        path.display()
    )
}

/// Filesystem rights (by name) the kernel's ABI enforces.
pub fn fs_rights_names(abi: i64) -> Vec<&'static str> {
    if abi < 1 {
        return Vec::new();
    }
    let mut names = vec![
        "execute",
        "write_file",
        "read_file",
        "read_dir",
        "remove_dir",
        "remove_file",
        "make_char",
        "make_dir",
        "make_reg",
        "make_sock",
        "make_fifo",
        "make_block",
        "make_sym",
    ];
    if abi >= 2 {
        names.push("refer");
    }
    if abi >= 3 {
        names.push("truncate");
    }
    if abi >= 5 {
        names.push("ioctl_dev");
    }
    if abi >= 9 {
        names.push("resolve_unix");
    }
    names
}

fn missing_fs_rights(abi: i64) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if abi < 2 {
        missing.push("refer (cross-directory rename/link is always denied instead)");
    }
    if abi < 3 {
        missing.push("truncate");
    }
    if abi < 5 {
        missing.push("ioctl_dev");
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    fn grant(path: &Path, why: &str) -> Grant {
        Grant {
            path: path.to_path_buf(),
            access: GrantAccess::ReadWrite,
            why: why.into(),
        }
    }

    fn world() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret"), "s").unwrap();
        (t, base)
    }

    /// A missing grant is noted, whether the open finds it missing (no symlink on the way) or
    /// only canonicalising can tell (a link above it): the two ways give the same note.
    #[test]
    fn a_missing_grant_is_noted_the_same_way_with_or_without_a_link_above_it() {
        let (_t, base) = world();
        std::os::unix::fs::symlink(base.join("outside"), base.join("link")).unwrap();
        let plain = base.join("outside/missing/deeper");
        let behind_link = base.join("link/missing");
        let present = base.join("outside/secret");
        let (plan, notes) = LandlockPlan::open(
            &[
                grant(&plain, "x"),
                grant(&behind_link, "y"),
                grant(&present, "z"),
            ],
            &NetRules::default(),
            7,
        )
        .unwrap();
        assert_eq!(
            plan.rules.len(),
            1,
            "only the present file is granted: {notes:?}"
        );
        for missing in [&plain, &behind_link] {
            let note = format!(
                "{} not granted ({})",
                missing.display(),
                std::io::Error::from_raw_os_error(libc::ENOENT)
            );
            assert!(notes.contains(&note), "{note} not in {notes:?}");
        }
    }

    #[test]
    fn a_scope_path_swapped_for_a_symlink_before_the_open_is_not_granted() {
        let (_t, base) = world();
        // Checked as a directory, then replaced by a link to `outside` before the jail opens it.
        let data = base.join("data");
        std::os::unix::fs::symlink(base.join("outside"), &data).unwrap();
        let (plan, notes) =
            LandlockPlan::open(&[grant(&data, "scope (write)")], &NetRules::default(), 7).unwrap();
        assert!(plan.rules.is_empty(), "the link's target was granted");
        assert!(
            notes.iter().any(|n| n.contains(&data.display().to_string())
                && n.contains("symlink")
                && n.contains("outside")),
            "{notes:?}"
        );
    }

    #[test]
    fn a_symlink_above_a_scope_path_is_not_followed_either() {
        let (_t, base) = world();
        std::os::unix::fs::symlink(base.join("outside"), base.join("proj")).unwrap();
        let g = grant(&base.join("proj/secret"), "scope (read)");
        let (plan, notes) = LandlockPlan::open(&[g], &NetRules::default(), 7).unwrap();
        assert!(plan.rules.is_empty());
        assert!(notes.iter().any(|n| n.contains("symlink")), "{notes:?}");
    }

    #[test]
    fn system_grants_are_opened_at_their_canonical_path() {
        let (_t, base) = world();
        let link = base.join("usr-link");
        std::os::unix::fs::symlink(base.join("outside"), &link).unwrap();
        let g = Grant {
            path: link,
            access: GrantAccess::ReadExec,
            why: "system libraries and tools".into(),
        };
        let (plan, notes) = LandlockPlan::open(&[g], &NetRules::default(), 7).unwrap();
        assert_eq!(plan.rules.len(), 1, "{notes:?}");
    }

    #[test]
    fn open_exact_refuses_any_symlink_on_the_way() {
        let (_t, base) = world();
        std::os::unix::fs::symlink(base.join("outside"), base.join("link")).unwrap();
        let c = |p: PathBuf| CString::new(p.into_os_string().into_vec()).unwrap();
        assert!(sys::open_exact(&c(base.join("outside/secret"))).is_ok());
        for p in [base.join("link"), base.join("link/secret")] {
            let err = sys::open_exact(&c(p.clone())).expect_err("followed a link");
            assert_eq!(err.raw_os_error(), Some(libc::ELOOP), "{}", p.display());
        }
    }
}
