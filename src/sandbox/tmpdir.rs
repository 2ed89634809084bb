//! The private per-session temporary directory.
//!
//! Created mode 0700 in the user's own directory under the system temp dir
//! (`$TMPDIR/mcpjail-uid-<uid>/`, mode 0700), granted read-write to the server (and nothing
//! else under `/tmp` is), exported as `TMPDIR`/`TMP`/`TEMP`, and removed with everything in it
//! when the [`super::PreparedJail`] is dropped.
//!
//! The per-user directory keeps the sweep below to our own entries: reading all of a busy `/tmp`
//! at every start cost more than the rest of the jail's preparation. It is used only when it is
//! a real directory of ours, not open to others, in a temp dir that is sticky (or not writable by
//! others), so nobody else can swap it; otherwise the directories are made in the temp dir itself
//! as before, and swept there.
//!
//! A proxy killed with SIGKILL runs no destructor, so its directory would outlive it. The name
//! therefore records its owner — `mcpjail-<pid namespace>.<pid>.<start time>-XXXXXX` — and every
//! proxy, when it creates its own directory and again when it removes it, removes the
//! directories of owners that are gone. The start time (clock ticks since boot, from
//! `/proc/PID/stat`) tells a dead owner from a new process that reused its pid, and the pid
//! namespace keeps a proxy from judging pids it cannot see (another container sharing `/tmp`).
//! Only directories of our own uid are touched; a live owner's directory is never removed.
//!
//! The server controls what is inside a directory, so removal must never follow a symlink out
//! of it: [`std::fs::remove_dir_all`] opens every level with `O_NOFOLLOW` and unlinks relative
//! to the parent's descriptor (the CVE-2022-21658 fix, Rust ≥ 1.58.1), and a symlink planted in
//! the temp dir's place is unlinked, not followed (`tests/tmpdir_sweep.rs` plants both).

use std::path::{Path, PathBuf};

use super::SandboxError;

const PREFIX: &str = "mcpjail-";

#[derive(Debug)]
pub struct PrivateTmp {
    /// Held for its Drop: removes the directory and everything in it.
    dir: Option<tempfile::TempDir>,
    /// Canonical: rules match real paths (on macOS `/var` is a symlink to `/private/var`).
    canonical: PathBuf,
}

impl PrivateTmp {
    pub fn create() -> Result<Self, SandboxError> {
        use std::os::unix::fs::PermissionsExt;
        let system = std::env::temp_dir();
        let parent = match own_parent(&system) {
            Ok(dir) => dir,
            Err(why) => {
                tracing::debug!(
                    "private temp dirs go directly in {}: {why}",
                    system.display()
                );
                system
            }
        };
        let me = Owner::current();
        if let Some(me) = &me {
            sweep_stale(&parent, me);
        }
        let prefix = match &me {
            Some(me) => format!("{PREFIX}{}-", me.tag()),
            // No way to name the owner (no /proc): the directory cannot be swept later.
            None => PREFIX.to_string(),
        };
        let dir = tempfile::Builder::new()
            .prefix(&prefix)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(&parent)
            .map_err(|e| {
                SandboxError::Prepare(format!(
                    "cannot create the private temporary directory under {}: {e} (hint: set TMPDIR to a writable directory)",
                    parent.display()
                ))
            })?;
        let canonical =
            std::fs::canonicalize(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
        Ok(PrivateTmp {
            dir: Some(dir),
            canonical,
        })
    }

    pub fn path(&self) -> &Path {
        &self.canonical
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        let parent = dir.path().parent().map(Path::to_path_buf);
        if let Err(e) = dir.close() {
            tracing::warn!("cannot remove the private temporary directory: {e}");
        }
        // Directories of proxies killed since this one started (SIGKILL runs no destructor).
        if let (Some(parent), Some(me)) = (parent, Owner::current()) {
            sweep_stale(&parent, &me);
        }
    }
}

/// The user's own directory for private temp dirs under the system temp dir `system`.
pub fn user_parent(system: &Path) -> PathBuf {
    // SAFETY: geteuid has no preconditions and cannot fail.
    system.join(format!("{PREFIX}uid-{}", unsafe { libc::geteuid() }))
}

/// [`user_parent`], created if missing, when it is safe to use: a directory (not a link) owned
/// by us, mode 0700, in a temp dir where others cannot rename it away. Why not, otherwise.
fn own_parent(system: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let sys_meta = std::fs::metadata(system).map_err(|e| e.to_string())?;
    let sticky = sys_meta.mode() & 0o1000 != 0;
    if sys_meta.mode() & 0o022 != 0 && !sticky {
        return Err("it is writable by others and not sticky".into());
    }
    let dir = user_parent(system);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    // lstat: a symlink in its place is somebody else's doing, never followed.
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| e.to_string())?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    if !meta.is_dir() || meta.uid() != uid {
        let what = if meta.is_symlink() {
            "a symlink".to_string()
        } else if !meta.is_dir() {
            "not a directory".to_string()
        } else {
            format!("owned by uid {}", meta.uid())
        };
        return Err(format!(
            "{} is {what}, not a directory of ours",
            dir.display()
        ));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "{} is open to others (mode {:o})",
            dir.display(),
            meta.mode() & 0o7777
        ));
    }
    Ok(dir)
}

/// The process a directory belongs to, as recorded in its name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    pid_ns: u64,
    pid: u32,
    start: u64,
}

impl Owner {
    fn current() -> Option<Owner> {
        let pid = std::process::id();
        // A /proc of another PID namespace (a container's odd mount) names this process by
        // another pid, and would name other processes by our pids: then nothing here can be
        // judged, so nothing is swept.
        let (named, start) = read_stat("/proc/self/stat")?;
        if named != pid {
            return None;
        }
        Some(Owner {
            pid_ns: pid_namespace()?,
            pid,
            start,
        })
    }

    fn tag(&self) -> String {
        format!("{}.{}.{}", self.pid_ns, self.pid, self.start)
    }

    /// `mcpjail-NS.PID.START-XXXXXX` → the owner; anything else (an older or foreign name) → None.
    fn from_name(name: &str) -> Option<Owner> {
        let (tag, _random) = name.strip_prefix(PREFIX)?.split_once('-')?;
        let mut parts = tag.split('.');
        let owner = Owner {
            pid_ns: parts.next()?.parse().ok()?,
            pid: parts.next()?.parse().ok()?,
            start: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(owner)
    }

    /// Gone = no process with that pid, or one with another start time (pid reused).
    fn is_gone(&self) -> bool {
        start_time(self.pid) != Some(self.start)
    }
}

/// Remove the directories under `parent` whose owner (in our pid namespace, of our uid) is gone.
/// Best effort: a directory another proxy removes first, or one we cannot read, is skipped.
fn sweep_stale(parent: &Path, me: &Owner) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(Owner::from_name) else {
            continue;
        };
        if owner.pid_ns != me.pid_ns || owner == *me || !owner.is_gone() {
            continue;
        }
        let path = entry.path();
        // lstat: a symlink with our prefix is not ours to follow.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::debug!(
                "removed {} (its proxy, pid {}, is gone)",
                path.display(),
                owner.pid
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::debug!("cannot remove stale {}: {e}", path.display()),
        }
    }
}

#[cfg(target_os = "linux")]
fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino())
}

#[cfg(not(target_os = "linux"))]
fn pid_namespace() -> Option<u64> {
    None
}

/// The start time of process `pid` (see [`read_stat`]), if `/proc` names it by that pid.
fn start_time(pid: u32) -> Option<u64> {
    let (named, start) = read_stat(&format!("/proc/{pid}/stat"))?;
    (named == pid).then_some(start)
}

/// Fields 1 and 22 of a `/proc/PID/stat`: the pid `/proc` names the process by, and its start
/// time in clock ticks after boot. Read in 1 KiB chunks: two `read`s for the usual ~300 bytes,
/// where std's `read_to_string` makes seven syscalls (a `statx` for the size, which `/proc`
/// gives as 0, then reads into a buffer grown from 32 bytes).
#[cfg(target_os = "linux")]
fn read_stat(path: &str) -> Option<(u32, u64)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    // Usually ~300 bytes: one read, and one more that finds the end. A longer file is read
    // whole all the same (a start time misread as missing would make a live owner look gone).
    let mut stat = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => stat.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    let stat = std::str::from_utf8(&stat).ok()?;
    let pid = stat.split(' ').next()?.parse().ok()?;
    // The command name (field 2) is in parentheses and may itself contain spaces and `)`.
    let after_comm = &stat[stat.rfind(')')? + 1..];
    Some((pid, after_comm.split_whitespace().nth(19)?.parse().ok()?))
}

#[cfg(not(target_os = "linux"))]
fn read_stat(_path: &str) -> Option<(u32, u64)> {
    None
}

#[cfg(test)]
mod tests {
    use super::Owner;

    #[test]
    fn owner_round_trips_through_the_name_and_rejects_other_names() {
        let o = Owner {
            pid_ns: 4026531836,
            pid: 4242,
            start: 987654,
        };
        let name = format!("mcpjail-{}-aB3dEf", o.tag());
        assert_eq!(Owner::from_name(&name), Some(o));
        for other in [
            "mcpjail-aB3dEf",
            "mcpjail-harden-x1",
            "mcpjail-1.2-abc",
            "mcpjail-1.2.3.4-abc",
            "mcpjail-x.2.3-abc",
            "other-1.2.3-abc",
        ] {
            assert_eq!(Owner::from_name(other), None, "{other}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn stat_fields_are_read_past_a_name_with_spaces_and_parentheses() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stat");
        let fields: Vec<String> = (3..=52).map(|n| n.to_string()).collect();
        // Field 22 (start time) is the 20th after the name: here "22".
        std::fs::write(&path, format!("4242 (a) b (c)) {}\n", fields.join(" "))).unwrap();
        assert_eq!(super::read_stat(path.to_str().unwrap()), Some((4242, 22)));
        // Longer than one read: read whole, not taken for a missing process.
        let long = format!("4242 ({}) {}\n", "x".repeat(3000), fields.join(" "));
        std::fs::write(&path, long).unwrap();
        assert_eq!(super::read_stat(path.to_str().unwrap()), Some((4242, 22)));
        std::fs::write(&path, "4242 (no end").unwrap();
        assert_eq!(super::read_stat(path.to_str().unwrap()), None);
        // No such process: no start time (so its directory counts as gone).
        assert_eq!(super::start_time(u32::MAX), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_its_own_live_owner() {
        let me = Owner::current().expect("/proc is mounted");
        assert!(!me.is_gone());
        let reused = Owner {
            start: me.start + 1,
            ..me
        };
        assert!(reused.is_gone(), "same pid, other start time = gone");
    }
}
