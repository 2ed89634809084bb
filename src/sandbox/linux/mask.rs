//! Masks: denied entries inside granted directories, covered in the server's own mount namespace.
//!
//! [`crate::sandbox::carve`] decides *what* is masked; this module does it, in the child before
//! Landlock and seccomp: enter a private mount namespace, make every mount private (so nothing
//! propagates back to the host), make each protected name read-only with a bind of itself over
//! itself remounted read-only, then cover each denied file with a read-only, `nodev` bind of
//! `/dev/null` (opening it fails with EACCES, writing too; renaming or unlinking it fails with
//! EBUSY) and each denied directory with an empty read-only tmpfs (mode 000).
//!
//! No mount is made by path: each target is opened in the new namespace with
//! `openat2(RESOLVE_NO_SYMLINKS)` and mounted on through that descriptor (`open_tree` clone +
//! `move_mount`, a tmpfs through `fsopen`/`fsmount`), with its attributes (read-only, `nodev`,
//! `nosuid`, `noexec`) set on the detached tree before it is attached. A symlink planted in a
//! target's place or above it since the jail was prepared fails the start with ELOOP instead of
//! moving the mask or the writable bind to wherever it points. The server cannot
//! undo a mask: the seccomp filter denies `mount`, `umount2`, `move_mount`, `open_tree`,
//! `fsopen`/`fsmount`/`fspick`, `mount_setattr`, `pivot_root`, `unshare`, `setns` and
//! namespace-creating `clone`, and `open_by_handle_at` (which could reopen the covered inode).
//! Landlock, applied after the masks, also refuses every mount-topology change (mount, umount,
//! remount, pivot_root, move_mount) to the restricted server: a second, independent barrier.
//!
//! The same namespace closes what Landlock does not mediate at all — chmod (set-uid bits
//! included), chown, utimes and xattr changes on files outside the scope: every mount is made
//! read-only (`mount_setattr`, recursive), then a copy of each write grant's mount tree, writable
//! again at its root only, is attached over the grant (a mount of its own), so those calls fail
//! with EROFS outside them.
//! Costs: a rename between two write grants crosses mounts (EXDEV); a mount nested inside a
//! write grant stays read-only. The server cannot undo it: it holds no capability after `exec`.
//!
//! Which namespaces: a process allowed to create a mount namespace by itself (root with
//! `CAP_SYS_ADMIN`) creates only that, so it keeps its capabilities on the files in scope; a user
//! namespace would take `CAP_DAC_OVERRIDE` away for every file whose owner is not mapped in it.
//! Anyone else enters a user namespace first, mapping only its own uid and gid to themselves
//! (`setgroups` denied), so file ownership looks unchanged; after `exec` a non-root uid holds no
//! capability in it, and mounts copied into any namespace it could create would be locked.
//!
//! Whether this works is probed once per [`crate::sandbox::prepare`], in a throwaway forked child
//! running exactly the plan the server's child will run, so the jail can fall back to list-only
//! carving *and say so* (`kernel.unprivileged_userns_clone=0`, `user.max_user_namespaces=0`,
//! AppArmor's userns restriction, a container without `CAP_SYS_ADMIN`). If the real child still
//! fails, the spawn fails: the server never runs unmasked.

use std::ffi::{CStr, CString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;

use super::sys;
use crate::sandbox::carve::{Mask, MaskKind};
use crate::sandbox::SandboxError;

const DEV_NULL: &CStr = c"/dev/null";
const ROOT: &CStr = c"/";
const SETGROUPS: &CStr = c"/proc/self/setgroups";
const UID_MAP: &CStr = c"/proc/self/uid_map";
const GID_MAP: &CStr = c"/proc/self/gid_map";

/// The masks, as NUL-terminated paths ready for the child.
#[derive(Debug, Clone, Default)]
pub struct MaskPlan {
    entries: Vec<(CString, MaskKind)>,
    /// With [`MaskPlan::read_only_outside`]: the paths that stay writable (the write grants);
    /// every other mount is made read-only in the server's namespace.
    writable: Option<Vec<CString>>,
}

/// The namespaces a child entered to mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespaces {
    /// Only a mount namespace (the process may create one by itself: root with CAP_SYS_ADMIN).
    Mount,
    /// A user namespace mapping only the caller's own ids, then a mount namespace.
    UserAndMount,
}

impl Namespaces {
    /// What [`MaskPlan::enter`] will create here, without trying: a process with
    /// `CAP_SYS_ADMIN` makes a mount namespace, any other a user namespace first.
    pub fn expected() -> Namespaces {
        if sys::has_cap_sys_admin() {
            Namespaces::Mount
        } else {
            Namespaces::UserAndMount
        }
    }
}

impl fmt::Display for Namespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Namespaces::Mount => "private mount namespace",
            Namespaces::UserAndMount => "private user + mount namespace",
        })
    }
}

/// Which step of masking failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum MaskStep {
    Unshare = 1,
    Setgroups,
    UidMap,
    GidMap,
    MakePrivate,
    BindDevNull,
    RemountReadOnly,
    MountTmpfs,
    BindSelf,
    BindWritable,
    ReadOnlyRest,
    WritableAgain,
    OpenTarget,
    OpenWritable,
    BindPin,
}

impl MaskStep {
    /// A step where the kernel refuses the namespaces or mounts themselves (a capability, a
    /// sysctl, a security module), as opposed to a step that fails on one target: opening a
    /// target or write grant that became a symlink is an attack on the plan, not a refusal.
    pub fn is_refusal(self) -> bool {
        !matches!(self, MaskStep::OpenTarget | MaskStep::OpenWritable)
    }

    pub fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            1 => MaskStep::Unshare,
            2 => MaskStep::Setgroups,
            3 => MaskStep::UidMap,
            4 => MaskStep::GidMap,
            5 => MaskStep::MakePrivate,
            6 => MaskStep::BindDevNull,
            7 => MaskStep::RemountReadOnly,
            8 => MaskStep::MountTmpfs,
            9 => MaskStep::BindSelf,
            10 => MaskStep::BindWritable,
            11 => MaskStep::ReadOnlyRest,
            12 => MaskStep::WritableAgain,
            13 => MaskStep::OpenTarget,
            14 => MaskStep::OpenWritable,
            15 => MaskStep::BindPin,
            _ => return None,
        })
    }
}

/// A failed masking step: which, on which mask (index into the plan), and the errno. Plain data
/// so the child can build it without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaskFailure {
    pub step: MaskStep,
    pub index: u32,
    pub errno: i32,
}

impl MaskFailure {
    fn at(step: MaskStep, index: usize) -> impl Fn(std::io::Error) -> MaskFailure {
        move |err| MaskFailure {
            step,
            index: index as u32,
            errno: err.raw_os_error().unwrap_or(libc::EIO),
        }
    }
}

/// Attach the detached `tree` over the object `target` names, sealed (read-only, `nodev`,
/// `nosuid`, `noexec`: set on the tree before it is attached, so no path is walked again).
/// Runs in the forked child: raw syscalls only.
fn attach_sealed(
    tree: std::os::fd::OwnedFd,
    target: &std::os::fd::OwnedFd,
    step: MaskStep,
    index: usize,
) -> Result<(), MaskFailure> {
    use std::os::fd::AsFd;
    sys::set_mount_attr_fd(tree.as_fd(), sys::MOUNT_ATTR_SEALED, 0)
        .map_err(MaskFailure::at(MaskStep::RemountReadOnly, index))?;
    sys::attach_tree(tree.as_fd(), target.as_fd()).map_err(MaskFailure::at(step, index))
}

impl MaskPlan {
    pub fn new(masks: &[Mask]) -> Result<Self, SandboxError> {
        let mut entries = Vec::with_capacity(masks.len());
        for m in masks {
            let path = CString::new(m.path.as_os_str().as_bytes()).map_err(|_| {
                SandboxError::Prepare(format!(
                    "cannot mask {}: the path contains a NUL byte",
                    m.path.display()
                ))
            })?;
            entries.push((path, m.kind));
        }
        Ok(MaskPlan {
            entries,
            writable: None,
        })
    }

    /// Also make every mount read-only except `writable` (each bound onto itself first, so it is
    /// a mount of its own that can stay writable). Landlock does not mediate chmod, chown,
    /// utimes or xattr changes; a read-only mount refuses them all (EROFS) outside the write
    /// grants, for the owner and for root alike. Paths with a NUL byte are refused.
    pub fn read_only_outside(
        mut self,
        writable: &[std::path::PathBuf],
    ) -> Result<Self, SandboxError> {
        let mut paths = Vec::with_capacity(writable.len());
        for p in writable {
            paths.push(CString::new(p.as_os_str().as_bytes()).map_err(|_| {
                SandboxError::Prepare(format!(
                    "cannot keep {} writable: the path contains a NUL byte",
                    p.display()
                ))
            })?);
        }
        self.writable = Some(paths);
        Ok(self)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.writable.is_none()
    }

    /// Enter the namespaces and mount every mask. Irreversible for the calling process; runs in
    /// the child between fork and exec, so async-signal-safe only: raw syscalls on memory
    /// prepared before the fork, no allocation, no locks.
    pub fn enter(&self) -> Result<Namespaces, MaskFailure> {
        let namespaces = match sys::unshare(libc::CLONE_NEWNS) {
            Ok(()) => Namespaces::Mount,
            Err(err) if err.raw_os_error() == Some(libc::EPERM) => {
                let (uid, gid) = sys::effective_ids();
                sys::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)
                    .map_err(MaskFailure::at(MaskStep::Unshare, 0))?;
                sys::write_file(SETGROUPS, b"deny")
                    .map_err(MaskFailure::at(MaskStep::Setgroups, 0))?;
                let mut line = [0u8; 32];
                sys::write_file(UID_MAP, sys::id_map_line(uid, &mut line))
                    .map_err(MaskFailure::at(MaskStep::UidMap, 0))?;
                sys::write_file(GID_MAP, sys::id_map_line(gid, &mut line))
                    .map_err(MaskFailure::at(MaskStep::GidMap, 0))?;
                Namespaces::UserAndMount
            }
            Err(err) => return Err(MaskFailure::at(MaskStep::Unshare, 0)(err)),
        };
        sys::mount(None, ROOT, None, libc::MS_REC | libc::MS_PRIVATE, None)
            .map_err(MaskFailure::at(MaskStep::MakePrivate, 0))?;
        // Every target is opened here, in the new mount namespace, without following any link
        // (`openat2(RESOLVE_NO_SYMLINKS)`), and mounted on through that descriptor
        // (`open_tree` + `move_mount`): a link planted in a target's place (or above it) since
        // the jail was prepared fails the start (ELOOP) instead of moving the mount.
        use std::os::fd::AsFd;
        if let Some(writable) = &self.writable {
            sys::set_mount_readonly(ROOT, true, true)
                .map_err(MaskFailure::at(MaskStep::ReadOnlyRest, 0))?;
            // Each write grant: a copy of its (now read-only) mount tree, writable again at its
            // root only — a mount nested inside a write grant stays read-only — attached over
            // the grant itself, so it is a mount of its own.
            for (i, path) in writable.iter().enumerate() {
                let target = sys::open_no_symlinks(path)
                    .map_err(MaskFailure::at(MaskStep::OpenWritable, i))?;
                let tree = sys::clone_tree_of(target.as_fd(), true)
                    .map_err(MaskFailure::at(MaskStep::BindWritable, i))?;
                sys::set_mount_attr_fd(tree.as_fd(), 0, sys::MOUNT_ATTR_RDONLY)
                    .map_err(MaskFailure::at(MaskStep::WritableAgain, i))?;
                sys::attach_tree(tree.as_fd(), target.as_fd())
                    .map_err(MaskFailure::at(MaskStep::BindWritable, i))?;
            }
        }
        for (i, (path, kind)) in self.entries.iter().enumerate() {
            let target =
                sys::open_no_symlinks(path).map_err(MaskFailure::at(MaskStep::OpenTarget, i))?;
            let tree = match kind {
                MaskKind::File => sys::clone_tree_at(DEV_NULL)
                    .map_err(MaskFailure::at(MaskStep::BindDevNull, i))?,
                // Recursive, so masks already mounted inside it (deepest first) come along.
                MaskKind::ReadOnly => sys::clone_tree_of(target.as_fd(), true)
                    .map_err(MaskFailure::at(MaskStep::BindSelf, i))?,
                MaskKind::Dir => sys::detached_tmpfs(c"mode", c"000", sys::MOUNT_ATTR_SEALED)
                    .map_err(MaskFailure::at(MaskStep::MountTmpfs, i))?,
                MaskKind::Pin => {
                    // Bound over itself with its attributes as they are (writable): only to
                    // make it a mount point, which cannot be renamed or removed. Recursive, so
                    // the read-only binds inside it (deeper: mounted first) come along.
                    let tree = sys::clone_tree_of(target.as_fd(), true)
                        .map_err(MaskFailure::at(MaskStep::BindPin, i))?;
                    sys::attach_tree(tree.as_fd(), target.as_fd())
                        .map_err(MaskFailure::at(MaskStep::BindPin, i))?;
                    continue;
                }
            };
            let step = match kind {
                MaskKind::File => MaskStep::BindDevNull,
                MaskKind::ReadOnly => MaskStep::BindSelf,
                MaskKind::Dir => MaskStep::MountTmpfs,
                MaskKind::Pin => MaskStep::BindPin,
            };
            attach_sealed(tree, &target, step, i)?;
        }
        Ok(namespaces)
    }

    /// Run [`MaskPlan::enter`] in a throwaway child: which namespaces it would use, or why it
    /// cannot mask here.
    pub fn probe(&self) -> Result<Namespaces, String> {
        self.probe_then(&|| Ok(())).map(|(ns, _)| ns)
    }

    /// [`MaskPlan::probe`], and when entering worked, `then` in the same child, inside those
    /// namespaces (what else the server's child will do there: e.g. create a PID namespace).
    /// `then` must be async-signal-safe; its answer is `Err(errno)` or `Ok(())`.
    pub fn probe_then(
        &self,
        then: &dyn Fn() -> Result<(), i32>,
    ) -> Result<(Namespaces, Result<(), i32>), String> {
        let answer = sys::in_forked_child::<15>(&|| {
            let mut out = [0u8; 15];
            match self.enter() {
                Ok(ns) => {
                    out[0] = if ns == Namespaces::Mount { 1 } else { 2 };
                    if let Err(errno) = then() {
                        out[10] = 1;
                        out[11..15].copy_from_slice(&errno.to_le_bytes());
                    }
                }
                Err(f) => {
                    out[0] = 3;
                    out[1] = f.step as u8;
                    out[2..6].copy_from_slice(&f.index.to_le_bytes());
                    out[6..10].copy_from_slice(&f.errno.to_le_bytes());
                }
            }
            out
        })
        .map_err(|e| format!("the probe process failed: {e}"))?;
        let then_result = if answer[10] == 0 {
            Ok(())
        } else {
            Err(i32::from_le_bytes([
                answer[11], answer[12], answer[13], answer[14],
            ]))
        };
        match answer[0] {
            1 => Ok((Namespaces::Mount, then_result)),
            2 => Ok((Namespaces::UserAndMount, then_result)),
            _ => {
                let step = MaskStep::from_u8(answer[1]).unwrap_or(MaskStep::Unshare);
                let index = u32::from_le_bytes([answer[2], answer[3], answer[4], answer[5]]);
                let errno = i32::from_le_bytes([answer[6], answer[7], answer[8], answer[9]]);
                Err(self.describe(MaskFailure { step, index, errno }))
            }
        }
    }

    /// A failure in words, with a hint for the common causes.
    pub fn describe(&self, f: MaskFailure) -> String {
        let path = self
            .entries
            .get(f.index as usize)
            .map(|(p, _)| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let err = std::io::Error::from_raw_os_error(f.errno);
        let what = match f.step {
            MaskStep::Unshare => {
                return format!(
                    "the kernel refuses a user namespace ({err}; hint: \
                     kernel.unprivileged_userns_clone, user.max_user_namespaces or an AppArmor \
                     userns restriction)"
                )
            }
            MaskStep::Setgroups => "writing /proc/self/setgroups".to_string(),
            MaskStep::UidMap => "writing /proc/self/uid_map".to_string(),
            MaskStep::GidMap => "writing /proc/self/gid_map".to_string(),
            MaskStep::MakePrivate => "making / private in the new mount namespace".to_string(),
            MaskStep::BindDevNull => format!("binding /dev/null over {path}"),
            MaskStep::RemountReadOnly => format!("remounting the mask on {path} read-only"),
            MaskStep::MountTmpfs => format!("mounting an empty tmpfs over {path}"),
            MaskStep::BindSelf => format!("binding {path} over itself (read-only)"),
            MaskStep::BindPin => format!("binding {path} over itself (pinned, writable)"),
            MaskStep::BindWritable => format!(
                "binding write grant {} onto itself",
                self.writable_path(f.index)
            ),
            MaskStep::ReadOnlyRest => "making every mount read-only (mount_setattr)".to_string(),
            MaskStep::WritableAgain => format!(
                "making write grant {} writable again",
                self.writable_path(f.index)
            ),
            MaskStep::OpenTarget => format!(
                "opening {path} without following links (ELOOP: a symlink was planted in its \
                 place or above it since the jail was prepared)"
            ),
            MaskStep::OpenWritable => format!(
                "opening write grant {} without following links (ELOOP: a symlink was planted \
                 in its place or above it since the jail was prepared)",
                self.writable_path(f.index)
            ),
        };
        format!("{what} failed in a private mount namespace ({err})")
    }
}

impl MaskPlan {
    fn writable_path(&self, index: u32) -> String {
        self.writable
            .as_ref()
            .and_then(|w| w.get(index as usize))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Whether this machine can mask, tried on `/dev/null` itself (for `doctor`).
pub fn probe_support() -> Result<Namespaces, String> {
    let plan = MaskPlan {
        entries: vec![(DEV_NULL.to_owned(), MaskKind::File)],
        writable: None,
    };
    plan.probe()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_map_lines() {
        let mut buf = [0u8; 32];
        assert_eq!(sys::id_map_line(0, &mut buf), b"0 0 1");
        assert_eq!(sys::id_map_line(1000, &mut buf), b"1000 1000 1");
        assert_eq!(
            sys::id_map_line(u32::MAX, &mut buf),
            b"4294967295 4294967295 1"
        );
    }

    #[test]
    fn the_probe_leaves_this_process_alone() {
        let before = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let ns_before = std::fs::read_link("/proc/self/ns/mnt").unwrap();
        let _ = probe_support();
        assert_eq!(std::fs::read_link("/proc/self/ns/mnt").unwrap(), ns_before);
        assert_eq!(
            std::fs::read_to_string("/proc/self/mountinfo").unwrap(),
            before
        );
    }
}
