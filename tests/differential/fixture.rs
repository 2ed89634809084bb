//! The tree the differential test runs in: a write scope, a read scope, a sibling whose name
//! extends the scope's (`scopeX`), an outside directory with a secret, a HOME with `.ssh`, and in
//! the scope every kind of name the checks treat specially — denied names (`.env`, `.ssh`,
//! `id_rsa`, `*.pem`, `.mcp.json`) at depths 1 to 5, protected ones (`.git/hooks`,
//! `.git/config`, `.bashrc`), NFC and NFD spellings, odd bytes, a 255-byte name — and symlinks:
//! relative and absolute, in and out of scope, chains of 2 to 5, loops, dangling links in and
//! out of scope, links into `/proc/self`.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

pub struct Fixture {
    _dir: tempfile::TempDir,
    /// Canonical root of the tree.
    pub root: PathBuf,
}

impl Fixture {
    pub fn scope(&self) -> PathBuf {
        self.root.join("scope")
    }
    pub fn ro(&self) -> PathBuf {
        self.root.join("ro")
    }
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }
}

/// A 255-byte (NAME_MAX) file name.
pub fn long_name() -> String {
    format!("{}.txt", "L".repeat(251))
}

pub fn build() -> Fixture {
    let dir = tempfile::Builder::new()
        .prefix("mcpjail-diff-")
        .tempdir()
        .expect("create the fixture's temp dir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical temp dir");
    let r = |p: &str| root.join(p);
    let files = [
        "scope/a.txt",
        "scope/sub/b.txt",
        "scope/sub/deep/c.txt",
        "scope/sub/deep/deeper/d.txt",
        "scope/sub/deep/deeper/deepest/e.txt",
        // Denied names at depth 1..5 below the write root.
        "scope/.env",
        "scope/.env.local",
        "scope/key.pem",
        "scope/.mcp.json",
        "scope/.ssh/id_rsa",
        "scope/sub/.env",
        "scope/sub/id_rsa",
        "scope/sub/deep/.env",
        "scope/sub/deep/deeper/.env",
        "scope/sub/deep/deeper/id_ed25519",
        "scope/sub/deep/deeper/deepest/.env",
        // Protected names (readable, never writable).
        "scope/.git/hooks/pre-commit",
        "scope/.git/config",
        "scope/.bashrc",
        "scope/sub/.git/config",
        // Unicode and odd bytes. Only the NFC spelling exists: the NFD one is another name.
        "scope/caf\u{e9}.txt",
        "scope/\u{fc}n\u{ef}c\u{f6}d\u{e9}/f.txt",
        "scope/sp ace.txt",
        "scope/back\\slash.txt",
        "scope/new\nline.txt",
        "scope/tab\tname.txt",
        "scope/-dash.txt",
        "ro/r.txt",
        "ro/ro_sub/r2.txt",
        "scopeX/sibling.txt",
        "out/secret.txt",
        "out/odir/inner.txt",
        "home/.ssh/id_rsa",
        "home/notes.txt",
    ];
    for f in files {
        let p = r(f);
        std::fs::create_dir_all(p.parent().expect("fixture files have parents"))
            .expect("fixture dir");
        std::fs::write(&p, format!("content of {f}")).expect("fixture file");
    }
    std::fs::write(r("scope").join(long_name()), "long").expect("NAME_MAX file");
    std::fs::create_dir_all(r("scope/emptydir")).expect("fixture dir");

    let scope = r("scope");
    let links: &[(&str, String)] = &[
        ("in_rel", "a.txt".into()),
        ("in_abs", scope.join("sub").display().to_string()),
        ("out_rel", "../out/secret.txt".into()),
        ("out_abs", r("out").display().to_string()),
        ("out_dir", "../out".into()),
        ("to_ro", "../ro".into()),
        ("to_sibling", "../scopeX".into()),
        ("to_home_ssh", r("home/.ssh").display().to_string()),
        ("to_env", ".env".into()),
        ("to_hooks", ".git/hooks".into()),
        // Chains of 2..5 links ending in scope, and ending outside.
        ("chain2", "in_rel".into()),
        ("chain3", "chain2".into()),
        ("chain4", scope.join("chain3").display().to_string()),
        ("chain5", "chain4".into()),
        ("ochain2", "out_rel".into()),
        ("ochain3", scope.join("ochain2").display().to_string()),
        ("ochain4", "ochain3".into()),
        ("ochain5", "sub/../ochain4".into()),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("self", "self".into()),
        ("dangling_in", "not_yet.txt".into()),
        ("dangling_out", "../out/not_yet.txt".into()),
        ("dangling_dir_out", "../out/nodir/x.txt".into()),
        ("to_proc_in", "/proc/self/cwd/a.txt".into()),
        (
            "to_proc_out",
            format!("/proc/self/root{}", r("out/secret.txt").display()),
        ),
        ("sub/up", "..".into()),
        ("sub/upup", "../..".into()),
        ("sub/deep/to_top_env", "../../.env".into()),
    ];
    for (name, target) in links {
        symlink(target, scope.join(name)).expect("fixture symlink");
    }
    symlink("../scope/a.txt", r("ro/link_back")).expect("fixture symlink");
    symlink(r("scope/sub"), r("out/link_in")).expect("fixture symlink");
    Fixture { _dir: dir, root }
}

/// Every entry under `root` (links not followed) with its kind and size: taken before and after
/// the probes, so a probe that leaves anything behind (or removes anything) fails the test.
pub fn snapshot(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("read fixture dir")
            .map(|e| e.expect("fixture entry").path())
            .collect();
        entries.sort();
        for p in entries {
            let meta = std::fs::symlink_metadata(&p).expect("lstat fixture entry");
            let kind = if meta.file_type().is_symlink() {
                format!("link -> {}", std::fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else {
                format!("file {}", meta.len())
            };
            out.push((p, kind));
        }
    }
    out.sort();
    out
}
