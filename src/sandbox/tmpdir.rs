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
//! A proxy killed with SIGKILL runs no destructor, so its directory would outlive it. So each
//! proxy holds an exclusive `flock` on its directory (`mcpjail-p<pid>-XXXXXX`) for as long as
//! the directory is its own, and every proxy, when it creates its own directory and again when it
//! removes it, removes the directories whose lock it can take: the kernel releases a lock when
//! the last descriptor of it closes, which a killed process's exit does. A directory is made
//! under another name (`mcpjail-n<pid>-XXXXXX`), locked, and only then renamed to its held name,
//! so no sweep can take its lock before its maker does (two proxies started together met that:
//! one removed the other's new directory). A lock says whether the owner is alive without
//! `/proc`: naming the owner by its pid and start time instead (read from `/proc/self/stat` and
//! `/proc/self/ns/pid`, the first lookups of this process's `/proc` entries) cost ~0.06–0.11 ms
//! of every start here, and the sweep read a `/proc/PID/stat` for every other live proxy, once
//! at start and once at exit. Only names exactly of these two forms are judged by their lock.
//! A lock also holds across PID namespaces (two containers sharing `/tmp`), where a pid cannot
//! be judged. Directories named the earlier way (`mcpjail-<pid namespace>.<pid>.<start
//! time>-XXXXXX`, from an older proxy that may still run) are still judged that way. Only
//! directories of our own uid are touched; a live owner's directory is never removed.
//!
//! The server controls what is inside a directory, so removal must never follow a symlink out
//! of it: [`std::fs::remove_dir_all`] opens every level with `O_NOFOLLOW` and unlinks relative
//! to the parent's descriptor (the CVE-2022-21658 fix, Rust ≥ 1.58.1), and a symlink planted in
//! the temp dir's place is neither locked through nor removed (`tests/tmpdir_sweep.rs` plants
//! both).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::SandboxError;

const PREFIX: &str = "mcpjail-";
/// The name of a directory whose owner holds a lock on it: `mcpjail-p<pid>-XXXXXX` (the pid
/// only says whose it is; the lock says whether that one is alive).
const HELD: &str = "mcpjail-p";

/// The name of a directory being made: its maker locks it, then renames it to a held name. A
/// sweep leaves it alone until [`MAKING_LEFT_AFTER`] has passed since it last changed (then it
/// was left by a maker killed in between), so a sweep never takes the lock of a directory its
/// maker has not locked yet.
const MAKING: &str = "mcpjail-n";
const MAKING_LEFT_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
/// The random part of a name.
const RANDOM_LEN: usize = 6;

#[derive(Debug)]
pub struct PrivateTmp {
    /// Where it is; removed with everything in it on drop (`None` once removed).
    dir: Option<PathBuf>,
    /// Canonical: rules match real paths (on macOS `/var` is a symlink to `/private/var`).
    canonical: PathBuf,
    /// The directory, open, with our exclusive lock on it (none where the file system has no
    /// `flock`): closed only after the directory is removed.
    held: Option<File>,
}

impl PrivateTmp {
    pub fn create() -> Result<Self, SandboxError> {
        Self::create_in(&std::env::temp_dir())
    }

    /// [`Self::create`] under the system temp dir `system`.
    fn create_in(system: &Path) -> Result<Self, SandboxError> {
        let parent = match own_parent(system) {
            Ok(dir) => dir,
            Err(why) => {
                tracing::debug!(
                    "private temp dirs go directly in {}: {why}",
                    system.display()
                );
                system.to_path_buf()
            }
        };
        sweep_stale(&parent);
        let (dir, held) = make_held(&parent).map_err(|e| {
            SandboxError::Prepare(format!(
                "cannot create the private temporary directory under {}: {e} (hint: set TMPDIR to a writable directory)",
                parent.display()
            ))
        })?;
        let canonical = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        Ok(PrivateTmp {
            dir: Some(dir),
            canonical,
            held,
        })
    }

    pub fn path(&self) -> &Path {
        &self.canonical
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot remove the private temporary directory: {e}"),
        }
        // Released only now: until the directory is gone, no sweep may take it for a dead one.
        drop(self.held.take());
        // Directories of proxies killed since this one started (SIGKILL runs no destructor).
        if let Some(parent) = dir.parent() {
            sweep_stale(parent);
        }
    }
}

/// A directory of ours in `parent`, locked: made under a [`MAKING`] name, locked, then renamed
/// to its held name, so that no sweep judges it before it is locked. Where the file system has
/// no `flock` (`ENOLCK` on some NFS mounts) it gets a name no sweep judges instead: it could not
/// be told from a dead proxy's.
fn make_held(parent: &Path) -> std::io::Result<(PathBuf, Option<File>)> {
    use std::os::unix::fs::PermissionsExt;
    let pid = std::process::id();
    let make = |prefix: &str| {
        tempfile::Builder::new()
            .prefix(prefix)
            .rand_bytes(RANDOM_LEN)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(parent)
    };
    let making = make(&format!("{MAKING}{pid}-"))?;
    let file = File::open(making.path())?;
    match try_lock(&file) {
        Ok(true) => {}
        Ok(false) => {
            return Err(std::io::Error::other(
                "another process holds the lock of a directory just made",
            ))
        }
        Err(e) => {
            tracing::debug!("no flock on {}: {e}", parent.display());
            drop(making);
            return Ok((make(PREFIX)?.keep(), None));
        }
    }
    // The same name with the held prefix: `mcpjail-n<pid>-XXXXXX` → `mcpjail-p<pid>-XXXXXX`.
    // (In the name only: the parent's path may hold the same letters.)
    let made = making.path().file_name().and_then(|n| n.to_str());
    let held_name = made
        .and_then(|n| n.strip_prefix(MAKING))
        .map(|rest| format!("{HELD}{rest}"));
    let held = parent.join(held_name.ok_or_else(|| std::io::Error::other("an unexpected name"))?);
    std::fs::rename(making.path(), &held)?;
    // Renamed: the TempDir's own removal would look under the old name.
    let _ = making.keep();
    Ok((held, Some(file)))
}

/// Which of our two lock-keeping names a directory has, if it has one.
#[derive(Debug, PartialEq, Eq)]
enum LockName {
    /// `mcpjail-p<pid>-XXXXXX`: its owner holds its lock.
    Held,
    /// `mcpjail-n<pid>-XXXXXX`: being made.
    Making,
}

impl LockName {
    /// Exactly `<prefix><digits>-<six letters or digits>` (what [`make_held`] makes): a name
    /// from the time before owners were recorded (`mcpjail-pQ2x9z`), or anyone else's
    /// (`mcpjail-notes`), is not ours to judge by a lock nobody was meant to hold.
    fn of(name: &str) -> Option<LockName> {
        let (kind, rest) = if let Some(rest) = name.strip_prefix(HELD) {
            (LockName::Held, rest)
        } else {
            (LockName::Making, name.strip_prefix(MAKING)?)
        };
        let (pid, random) = rest.split_once('-')?;
        let ours = !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && random.len() == RANDOM_LEN
            && random.bytes().all(|b| b.is_ascii_alphanumeric());
        ours.then_some(kind)
    }
}

/// Take an exclusive lock on `file` without waiting: whether it was free. An error means the
/// file system cannot say (no `flock` there).
fn try_lock(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor this `File` owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(err),
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

/// The process a directory named the earlier way belongs to, as an older proxy recorded it in
/// the name (this one names its own by lock, [`HELD`]).
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

    /// The name's middle part, as an older proxy wrote it (the tests make such names).
    #[cfg(test)]
    fn tag(&self) -> String {
        format!("{}.{}.{}", self.pid_ns, self.pid, self.start)
    }

    /// `mcpjail-NS.PID.START-XXXXXX` → the owner; anything else (a held, legacy or foreign
    /// name) → None.
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

/// Remove the directories under `parent` whose owner is gone: a held one whose lock we can
/// take, or one named the earlier way whose owner (in our pid namespace, of our uid) has exited.
/// Best effort: a directory another proxy removes first, or one we cannot read, is skipped.
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    // Read from /proc only if a directory named the earlier way is there.
    let mut me: Option<Option<Owner>> = None;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            continue;
        };
        if let Some(kind) = LockName::of(name) {
            let unchanged_for = (kind == LockName::Making).then_some(MAKING_LEFT_AFTER);
            sweep_held(&entry.path(), uid, unchanged_for);
            continue;
        }
        let Some(owner) = Owner::from_name(name) else {
            continue;
        };
        let Some(me) = me.get_or_insert_with(Owner::current) else {
            continue;
        };
        if owner.pid_ns != me.pid_ns || owner == *me || !owner.is_gone() {
            continue;
        }
        remove_stale(&entry.path(), uid, owner.pid);
    }
}

/// Remove the held directory at `path` if its lock is free (its owner is gone), holding the
/// lock while it goes; with `unchanged_for`, only if it has not changed for that long.
/// `O_NOFOLLOW`: a symlink with our prefix is not ours to follow.
fn sweep_held(path: &Path, uid: u32, unchanged_for: Option<std::time::Duration>) {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY)
        .open(path)
    else {
        return;
    };
    let Ok(meta) = file.metadata() else { return };
    if !meta.is_dir() || meta.uid() != uid {
        return;
    }
    if let Some(age) = unchanged_for {
        // A clock set back, or a time that cannot be read, counts as recent.
        let old = meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_some_and(|since| since >= age);
        if !old {
            return;
        }
    }
    if let Ok(true) = try_lock(&file) {
        remove_dir(path, "its proxy is gone");
    }
}

/// Remove the directory at `path`, named the earlier way, of a proxy (`pid`) that is gone.
fn remove_stale(path: &Path, uid: u32, pid: u32) {
    use std::os::unix::fs::MetadataExt;
    // lstat: a symlink with our prefix is not ours to follow.
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() && meta.uid() == uid {
        remove_dir(path, &format!("its proxy, pid {pid}, is gone"));
    }
}

fn remove_dir(path: &Path, why: &str) {
    match std::fs::remove_dir_all(path) {
        Ok(()) => tracing::debug!("removed {} ({why})", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::debug!("cannot remove stale {}: {e}", path.display()),
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

    #[test]
    fn only_names_made_for_locks_are_judged_by_a_lock() {
        use super::LockName;
        assert_eq!(LockName::of("mcpjail-p4242-aB3dEf"), Some(LockName::Held));
        assert_eq!(LockName::of("mcpjail-n7-000000"), Some(LockName::Making));
        for other in [
            // Random names from before owners were recorded, which may start with p or n.
            "mcpjail-pQ2x9z",
            "mcpjail-nAbCdE",
            // Anyone else's.
            "mcpjail-notes",
            "mcpjail-network-cache",
            "mcpjail-p-aB3dEf",
            "mcpjail-p12-aB3dE",
            "mcpjail-p12-aB3dEf7",
            "mcpjail-p12-aB3d.f",
            "mcpjail-p1x-aB3dEf",
            "mcpjail-uid-0",
            "mcpjail-4026531836.4242.987654-aB3dEf",
        ] {
            assert_eq!(LockName::of(other), None, "{other}");
        }
    }

    #[test]
    fn a_held_directory_is_kept_while_its_lock_is_held_and_swept_once_it_is_released() {
        use super::{sweep_stale, try_lock, PrivateTmp, HELD};
        let system = tempfile::tempdir().unwrap();
        let tmp = PrivateTmp::create_in(system.path()).unwrap();
        let mine = tmp.path().to_path_buf();
        let name = mine.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with(&format!("{HELD}{}-", std::process::id())),
            "{name}"
        );
        let parent = mine.parent().unwrap().to_path_buf();
        // What a SIGKILLed proxy leaves: a held name whose lock nobody holds.
        let dead = parent.join(format!("{HELD}1-dead00"));
        std::fs::create_dir_all(dead.join("a/b")).unwrap();
        std::fs::write(dead.join("a/b/data"), "x").unwrap();
        // Another live proxy's: locked through a descriptor of its own.
        let live = parent.join(format!("{HELD}2-live00"));
        std::fs::create_dir(&live).unwrap();
        let lock = std::fs::File::open(&live).unwrap();
        assert!(try_lock(&lock).unwrap());
        // A symlink with the prefix: neither locked through nor removed.
        let target = system.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep.txt"), "canary").unwrap();
        let link = parent.join(format!("{HELD}3-link00"));
        std::os::unix::fs::symlink(&target, &link).unwrap();

        // A random name from before owners were recorded, starting like a held one: no lock
        // was ever meant to be held on it, so none is taken.
        let legacy = parent.join("mcpjail-pQ2x9z");
        std::fs::create_dir(&legacy).unwrap();

        sweep_stale(&parent);
        assert!(legacy.is_dir(), "a legacy name is not judged by a lock");
        assert!(!dead.exists(), "an unheld directory is swept");
        assert!(live.is_dir(), "a held one is kept");
        assert!(mine.is_dir(), "our own is held by us");
        assert!(link.symlink_metadata().is_ok());
        assert_eq!(
            std::fs::read_to_string(target.join("keep.txt")).unwrap(),
            "canary"
        );

        // Being made (locked and renamed within microseconds by its maker): left alone while
        // recent, swept once it has not changed for a while (its maker was killed in between).
        let making = parent.join(format!("{}4-new000", super::MAKING));
        let left = parent.join(format!("{}5-left00", super::MAKING));
        for d in [&making, &left] {
            std::fs::create_dir(d).unwrap();
        }
        let minute_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        std::fs::File::open(&left)
            .unwrap()
            .set_modified(minute_ago)
            .unwrap();
        sweep_stale(&parent);
        assert!(making.is_dir(), "a directory being made is not judged");
        assert!(!left.exists(), "one left long ago is swept");

        drop(lock); // what the kernel does when its owner dies
        sweep_stale(&parent);
        assert!(!live.exists(), "released: its owner is gone");
        assert!(mine.is_dir());
        drop(tmp);
        assert!(!mine.exists(), "removed with its owner");
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
