//! A SIGKILLed proxy's private TMPDIR does not outlive it: the next proxy to start removes it,
//! never a live proxy's, never following a symlink the server planted in it.
//!
//! Every proxy here runs with its own `TMPDIR` (a scratch directory of this test), so the
//! counts are exact and no other proxy on the machine is involved. The directories live in the
//! user's own `mcpjail-uid-<uid>` under it; when that cannot be trusted they go in `TMPDIR`
//! itself, and are swept there.

mod proxy_support;

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use proxy_support::*;

/// The private temp dirs under `parent` of the proxy `pid` (`mcpjail-p<pid>-XXXXXX`: each proxy
/// holds a lock on its own, which is how a sweep tells it is alive).
fn dirs_of(parent: &Path, pid: u32) -> Vec<PathBuf> {
    let mine = format!("mcpjail-p{pid}-");
    let mut found = Vec::new();
    for e in std::fs::read_dir(parent).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.starts_with(&mine) {
            found.push(parent.join(&name));
        }
    }
    found
}

fn start_proxy(tree: &Tree, tmp: &Path) -> Session {
    let mut opts = Opts::new(tree);
    opts.env.push(("TMPDIR", tmp.display().to_string()));
    let mut s = Session::start(tree, opts);
    s.initialize();
    s
}

/// Where the proxies under `TMPDIR=tmp` make their directories.
fn parent_in(tmp: &Path) -> PathBuf {
    // SAFETY: geteuid cannot fail.
    tmp.join(format!("mcpjail-uid-{}", unsafe { libc::geteuid() }))
}

fn pid_ns() -> u64 {
    std::fs::metadata("/proc/self/ns/pid").unwrap().ino()
}

fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn a_killed_proxys_tmpdir_is_removed_by_the_next_proxy_and_a_live_ones_is_kept() {
    let tree = Tree::new();
    let tmp = tree.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();

    // Outside every temp dir: what a planted symlink points at.
    let canary_dir = tree.root().join("canary-dir");
    std::fs::create_dir(&canary_dir).unwrap();
    std::fs::write(canary_dir.join("keep.txt"), "canary").unwrap();
    let canary_file = tree.root().join("canary.txt");
    std::fs::write(&canary_file, "canary").unwrap();

    let live = start_proxy(&tree, &tmp);
    let parent = parent_in(&tmp);
    assert_eq!(
        std::fs::symlink_metadata(&parent).unwrap().mode() & 0o7777,
        0o700,
        "the user's own directory is private"
    );
    let live_dirs = dirs_of(&parent, live.pid());
    assert_eq!(
        live_dirs.len(),
        1,
        "the live proxy has one private temp dir"
    );

    let mut doomed = start_proxy(&tree, &tmp);
    let doomed_dirs = dirs_of(&parent, doomed.pid());
    assert_eq!(doomed_dirs.len(), 1);
    let doomed_dir = doomed_dirs[0].clone();
    // What a hostile server could leave in its TMPDIR: symlinks out, and a nested tree.
    std::os::unix::fs::symlink(&canary_dir, doomed_dir.join("to-dir")).unwrap();
    std::os::unix::fs::symlink(&canary_file, doomed_dir.join("to-file")).unwrap();
    std::fs::create_dir_all(doomed_dir.join("a/b")).unwrap();
    std::os::unix::fs::symlink(&canary_dir, doomed_dir.join("a/b/up")).unwrap();
    std::fs::write(doomed_dir.join("a/b/data"), "x").unwrap();

    doomed.child.kill().unwrap(); // SIGKILL: no destructor runs.
    assert_eq!(doomed.wait_exit(), 128 + 9);
    // Control: SIGKILL left the directory behind; only the sweep below removes it.
    assert!(
        doomed_dir.is_dir(),
        "SIGKILL leaves the dir until someone sweeps it"
    );

    // Names of older proxies (pid namespace, pid, start time), which a sweep judges by /proc:
    // our own pid with another start time (a reused pid) is gone; a dead pid in another pid
    // namespace is not ours to judge; a foreign name is left alone.
    let me = std::process::id();
    let reused = parent.join(format!(
        "mcpjail-{}.{me}.{}-reused",
        pid_ns(),
        start_time(me) + 1
    ));
    let other_ns = parent.join(format!(
        "mcpjail-{}.{}.1-otherns",
        pid_ns() + 1,
        doomed.pid()
    ));
    let foreign = parent.join("mcpjail-harden-x1");
    let legacy = parent.join("mcpjail-AbC123");
    for d in [&reused, &other_ns, &foreign, &legacy] {
        std::fs::create_dir(d).unwrap();
    }

    let next = start_proxy(&tree, &tmp);
    assert!(!doomed_dir.exists(), "the killed proxy's dir is removed");
    assert!(!reused.exists(), "a dir whose pid was reused is removed");
    assert!(live_dirs[0].is_dir(), "a live proxy's dir is kept");
    assert!(other_ns.is_dir() && foreign.is_dir() && legacy.is_dir());
    assert_eq!(
        std::fs::read_to_string(canary_dir.join("keep.txt")).unwrap(),
        "canary"
    );
    assert_eq!(std::fs::read_to_string(&canary_file).unwrap(), "canary");
    assert_eq!(dirs_of(&parent, next.pid()).len(), 1);

    // A clean exit removes the proxy's own dir.
    let next_pid = next.pid();
    let mut next = next;
    next.close_stdin();
    assert_eq!(next.wait_exit(), 0);
    assert!(dirs_of(&parent, next_pid).is_empty());
    drop(live);
}

#[test]
fn a_symlink_named_like_a_stale_dir_is_neither_followed_nor_removed() {
    let tree = Tree::new();
    let tmp = tree.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let target = tree.root().join("target");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep.txt"), "canary").unwrap();

    // A dead owner: a process we started and reaped.
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    gone.wait().unwrap();
    let parent = parent_in(&tmp);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&parent)
        .unwrap();
    // Named as a held directory (whose lock would be free), and the earlier way.
    let links = [
        parent.join(format!("mcpjail-p{gone_pid}-link00")),
        parent.join(format!("mcpjail-{}.{gone_pid}.1-link", pid_ns())),
    ];
    for link in &links {
        std::os::unix::fs::symlink(&target, link).unwrap();
    }

    let s = start_proxy(&tree, &tmp);
    for link in &links {
        assert!(
            link.symlink_metadata().is_ok(),
            "{}: not a directory, not ours to remove",
            link.display()
        );
    }
    assert_eq!(
        std::fs::read_to_string(target.join("keep.txt")).unwrap(),
        "canary"
    );
    drop(s);
}

#[test]
fn a_users_directory_that_cannot_be_trusted_is_not_used() {
    let tree = Tree::new();
    let elsewhere = tree.root().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();

    // A symlink in its place (somebody else's doing): not followed.
    let tmp_link = tree.root().join("tmp-link");
    std::fs::create_dir(&tmp_link).unwrap();
    std::os::unix::fs::symlink(&elsewhere, parent_in(&tmp_link)).unwrap();
    // Open to others: not private, so not used either.
    let tmp_open = tree.root().join("tmp-open");
    std::fs::create_dir(&tmp_open).unwrap();
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(parent_in(&tmp_open))
        .unwrap();
    std::fs::set_permissions(
        parent_in(&tmp_open),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();

    for tmp in [&tmp_link, &tmp_open] {
        let s = start_proxy(&tree, tmp);
        // The control: a trusted directory would have held it.
        assert_eq!(dirs_of(tmp, s.pid()).len(), 1, "made in TMPDIR itself");
        drop(s);
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing made through the symlink"
    );
    assert_eq!(
        std::fs::read_dir(parent_in(&tmp_open)).unwrap().count(),
        0,
        "nothing made in the open directory"
    );
}

/// Proxies started together all start, and leave nothing behind: no proxy's sweep takes the
/// lock of another's directory before its maker has locked it (the first version of the locks
/// made the directory under its held name and then locked it, and a sweep in between removed
/// it: that proxy failed to start).
#[test]
fn proxies_started_together_all_start_and_leave_nothing_behind() {
    let tree = Tree::new();
    let tmp = tree.root().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let parent = parent_in(&tmp);
    for round in 0..6 {
        let mut sessions: Vec<Session> = (0..8)
            .map(|_| {
                let mut opts = Opts::new(&tree);
                opts.env.push(("TMPDIR", tmp.display().to_string()));
                Session::start(&tree, opts)
            })
            .collect();
        for s in &mut sessions {
            let answer = s.initialize();
            assert!(answer.get("result").is_some(), "round {round}: {answer}");
            assert_eq!(dirs_of(&parent, s.pid()).len(), 1, "round {round}");
        }
        for mut s in sessions {
            s.close_stdin();
            assert_eq!(s.wait_exit(), 0, "round {round}");
        }
        assert_eq!(
            std::fs::read_dir(&parent).unwrap().count(),
            0,
            "round {round}: every directory removed"
        );
    }
}
