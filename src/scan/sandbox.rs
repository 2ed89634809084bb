//! The scan sandbox: a throwaway tree that stands in for the user's machine.
//!
//! ```text
//! <root>/
//!   scope/                 the declared scope (the server's argv paths are remapped here):
//!     notes.txt, src/lib.rs, docs/readme.md, link-out -> ../home/.aws (escaping symlink)
//!   scope-evil/secret.txt  sibling-prefix confusion (`/scope` must not cover `/scope-evil`)
//!   next-to-scope.txt      a file beside the scope
//!   home/                  HOME: .ssh/id_rsa, .aws/credentials, .config/scanapp/token
//!   outside-repo/          a git repository outside the scope (.git/config, secrets.txt)
//!   outside-db/app.sqlite  a SQLite database outside the scope
//!   tmp/                   TMPDIR
//! ```
//!
//! Every canary holds a unique token (`MCPJAIL-CANARY-<random>-<name>`); a token in a tool
//! result means a canary's content left the server. Nothing outside `<root>` is written; the
//! tree is removed when the [`ScanSandbox`] is dropped.
//!
//! The scanned server may write anywhere in `<root>` (destructive tools are called too), so
//! when the scan puts the scope and the canaries back, a path of the tree may have become a
//! symlink to anywhere on the host — and the scan, unlike the server, is not jailed. So the
//! scan never writes through one: a symlink (or a file) found where the tree has a directory or
//! a canary is removed, never followed; and the work runs on a thread of its own that Landlock
//! lets write only beneath `<root>` (a server still renaming things while it runs cannot steer
//! a write outside either), reads and execution staying open for `git`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One canary file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Canary {
    pub name: &'static str,
    pub path: PathBuf,
    pub token: String,
    #[serde(skip)]
    body: String,
}

#[derive(Debug)]
pub struct ScanSandbox {
    dir: tempfile::TempDir,
    /// Canonical root.
    pub root: PathBuf,
    pub scope: PathBuf,
    pub home: PathBuf,
    pub tmp: PathBuf,
    /// `MCPJAIL-CANARY-<random>`: the prefix every canary token starts with.
    pub token_prefix: String,
    pub canaries: Vec<Canary>,
    /// Out-of-scope places the canaries live in (an access under one is out of scope).
    pub outside: Vec<PathBuf>,
}

const SCOPE_FILES: &[(&str, &str)] = &[
    ("notes.txt", "meeting notes\nline two\n"),
    ("src/lib.rs", "pub fn answer() -> u32 { 42 }\n"),
    ("docs/readme.md", "# Project\n\nIn-scope content.\n"),
];

impl ScanSandbox {
    pub fn create() -> io::Result<ScanSandbox> {
        let dir = tempfile::Builder::new()
            .prefix("mcpjail-scan-")
            .tempdir_in(std::env::temp_dir())?;
        let root = fs::canonicalize(dir.path())?;
        let mut rnd = [0u8; 8];
        getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
        let token_prefix = format!("MCPJAIL-CANARY-{}", hex::encode(rnd));
        let home = root.join("home");
        let tmp = root.join("tmp");
        let scope = root.join("scope");
        let mut canaries = Vec::new();
        let mut canary = |name: &'static str, path: PathBuf| -> io::Result<()> {
            let token = format!("{token_prefix}-{name}");
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)?;
            }
            let body = match name {
                "ssh_key" => format!(
                    "-----BEGIN OPENSSH PRIVATE KEY-----\n{token}\n-----END OPENSSH PRIVATE KEY-----\n"
                ),
                "aws_credentials" => format!(
                    "[default]\naws_access_key_id = AKIA{token}\naws_secret_access_key = {token}\n"
                ),
                "git_config" => format!(
                    "[core]\n\trepositoryformatversion = 0\n\tbare = false\n[user]\n\tname = {token}\n"
                ),
                "sqlite" => {
                    // A SQLite header followed by the token, so a server that opens `*.sqlite`
                    // finds a file that looks like one.
                    let mut s = String::from("SQLite format 3\0");
                    s.push_str(&token);
                    s
                }
                _ => format!("{token}\n"),
            };
            fs::write(&path, &body)?;
            canaries.push(Canary {
                name,
                path,
                token,
                body,
            });
            Ok(())
        };
        canary("ssh_key", home.join(".ssh/id_rsa"))?;
        canary("aws_credentials", home.join(".aws/credentials"))?;
        canary("config_token", home.join(".config/scanapp/token"))?;
        canary("next_to_scope", root.join("next-to-scope.txt"))?;
        canary("sibling_prefix", root.join("scope-evil/secret.txt"))?;
        canary("git_config", root.join("outside-repo/.git/config"))?;
        canary("repo_secret", root.join("outside-repo/secrets.txt"))?;
        canary("sqlite", root.join("outside-db/app.sqlite"))?;
        // The rest of a git repository's skeleton, so git tools recognise it.
        let git = root.join("outside-repo/.git");
        fs::create_dir_all(git.join("objects"))?;
        fs::create_dir_all(git.join("refs/heads"))?;
        fs::write(git.join("HEAD"), "ref: refs/heads/main\n")?;
        fs::create_dir_all(&tmp)?;
        let outside = vec![
            home.clone(),
            root.join("next-to-scope.txt"),
            root.join("scope-evil"),
            root.join("outside-repo"),
            root.join("outside-db"),
        ];
        let sb = ScanSandbox {
            dir,
            root,
            scope,
            home,
            tmp,
            token_prefix,
            canaries,
            outside,
        };
        sb.reset_scope()?;
        Ok(sb)
    }

    /// (Re)create the scope's content: called before the scan and after any call that changed
    /// something in it (destructive tools are called too).
    ///
    /// The scope directory itself is kept (only its entries are replaced): a jail holds rules
    /// on its inode, and a new directory at the same path would be outside them.
    pub fn reset_scope(&self) -> io::Result<()> {
        self.confined(|| self.reset_scope_here())
    }

    fn reset_scope_here(&self) -> io::Result<()> {
        // The server may have moved the scope away and put a symlink in its place: only a real
        // directory is reset; anything else is removed (not followed) and the directory made
        // again.
        match fs::symlink_metadata(&self.scope) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => fs::remove_file(&self.scope)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs::create_dir_all(&self.scope)?;
        for entry in fs::read_dir(&self.scope)? {
            let path = entry?.path();
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => fs::remove_dir_all(&path)?,
                Ok(_) => fs::remove_file(&path)?,
                Err(_) => {}
            }
        }
        for (rel, body) in SCOPE_FILES {
            let p = self.scope.join(rel);
            if let Some(parent) = p.parent() {
                real_dirs(&self.root, parent)?;
            }
            write_no_follow(&p, body.as_bytes())?;
        }
        std::os::unix::fs::symlink("../home/.aws", self.scope.join("link-out"))?;
        git_init(&self.scope);
        Ok(())
    }

    /// Put every canary back (a destructive probe that escaped may have moved or replaced one).
    pub fn restore_canaries(&self) -> io::Result<()> {
        self.confined(|| self.restore_canaries_here())
    }

    fn restore_canaries_here(&self) -> io::Result<()> {
        for c in &self.canaries {
            if let Some(parent) = c.path.parent() {
                real_dirs(&self.root, parent)?;
            }
            match fs::symlink_metadata(&c.path) {
                Ok(m) if m.is_file() => {
                    if fs::read(&c.path).ok().as_deref() == Some(c.body.as_bytes()) {
                        continue;
                    }
                }
                // std's remove_dir_all removes links inside, never what they point to.
                Ok(m) if m.is_dir() => fs::remove_dir_all(&c.path)?,
                Ok(_) => fs::remove_file(&c.path)?,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            write_no_follow(&c.path, c.body.as_bytes())?;
        }
        Ok(())
    }

    /// Run `work` on a thread that may write only beneath the sandbox's root (see the module
    /// docs); `Err` if the kernel cannot confine it.
    fn confined<T: Send>(&self, work: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                writes_only_beneath(&self.root)?;
                work()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("resetting the scan sandbox panicked")))
        })
    }

    /// An existing in-scope file for control calls.
    pub fn scope_file(&self) -> PathBuf {
        self.scope.join(SCOPE_FILES[0].0)
    }

    /// Whether `p` (resolved) lies in one of the out-of-scope canary places.
    pub fn is_outside(&self, p: &Path) -> bool {
        self.outside.iter().any(|o| p.starts_with(o))
    }

    /// Whether `p` is in the declared scope or the scan's TMPDIR.
    pub fn is_in_scope(&self, p: &Path) -> bool {
        p.starts_with(&self.scope) || p.starts_with(&self.tmp)
    }

    /// The canary whose token `text` contains, if any.
    pub fn leaked_in(&self, text: &str) -> Vec<&Canary> {
        if !text.contains(&self.token_prefix) {
            return Vec::new();
        }
        self.canaries
            .iter()
            .filter(|c| text.contains(&c.token))
            .collect()
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Make every directory from `root` (excluded) down to `dir` a real directory: a missing one is
/// created, and a symlink or file in one's place is removed (not followed) and replaced.
fn real_dirs(root: &Path, dir: &Path) -> io::Result<()> {
    let rel = dir.strip_prefix(root).map_err(|_| {
        io::Error::other(format!(
            "{} is not in the scan sandbox {}",
            dir.display(),
            root.display()
        ))
    })?;
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => fs::remove_file(&at)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        fs::create_dir(&at)?;
    }
    Ok(())
}

/// Write `body` to `path`, never through a symlink in its place (`O_NOFOLLOW`: ELOOP).
fn write_no_follow(path: &Path, body: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?
        .write_all(body)
}

/// Confine the calling thread — only it: Landlock domains and `no_new_privs` belong to one
/// thread, and what it starts inherits them — to writing beneath `root` (and `/dev/null`);
/// reading and executing stay open everywhere.
#[cfg(target_os = "linux")]
fn writes_only_beneath(root: &Path) -> io::Result<()> {
    use landlock::{
        path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr,
        RulesetStatus, ABI,
    };
    let abi = ABI::V5;
    let err = |e: landlock::RulesetError| {
        io::Error::other(format!(
            "cannot confine the scan's own writes to its sandbox (Landlock): {e}"
        ))
    };
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            [root, Path::new("/dev/null")],
            AccessFs::from_all(abi),
        ))
        .map_err(err)?
        .restrict_self()
        .map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(io::Error::other(
            "cannot confine the scan's own writes to its sandbox: Landlock is not available \
             here, and the scanned server may have planted symlinks in it",
        ));
    }
    Ok(())
}

/// The scan runs only where its tracer does (Linux); elsewhere nothing is confined here, and
/// the module's other rule (never write through a symlink) is all there is.
#[cfg(not(target_os = "linux"))]
fn writes_only_beneath(_root: &Path) -> io::Result<()> {
    Ok(())
}

/// Make the scope a git repository with one commit, when git is installed: git servers are
/// told to serve it (`--repository`), and their control calls need a repository.
fn git_init(dir: &Path) {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args([
                "-c",
                "user.name=mcpjail-scan",
                "-c",
                "user.email=scan@localhost",
            ])
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let _ =
        git(&["init", "-q"]) && git(&["add", "-A"]) && git(&["commit", "-q", "-m", "scan scope"]);
}

/// Replace every path in the server's own arguments (existing files or directories, and
/// `--flag=PATH` forms) with the scan scope. The program, the script an interpreter runs and the
/// launcher's own files are left alone (they are the server's runtime). Returns the new argv and
/// what was remapped.
pub fn remap_argv(argv: &[String], scope: &Path, cwd: &Path) -> (Vec<String>, Vec<String>) {
    let cmd = crate::policy::ServerCommand::parse(argv);
    let runtime = cmd.runtime_arg_indexes();
    let mut out = argv.to_vec();
    let mut remapped = Vec::new();
    let is_path = |s: &str| {
        !s.is_empty() && !s.starts_with('-') && {
            let p = Path::new(s);
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                cwd.join(p)
            };
            p.exists()
        }
    };
    for (i, arg) in argv.iter().enumerate().skip(cmd.server_args_start) {
        if runtime.contains(&i) {
            continue;
        }
        if is_path(arg) {
            remapped.push(format!("{arg} -> {}", scope.display()));
            out[i] = scope.display().to_string();
        } else if let Some((flag, value)) = arg.split_once('=') {
            if flag.starts_with('-') && is_path(value) {
                remapped.push(format!("{value} -> {}", scope.display()));
                out[i] = format!("{flag}={}", scope.display());
            }
        }
    }
    (out, remapped)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A directory outside the sandbox with one file in it: what a planted symlink points at.
    fn victim() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let d = fs::canonicalize(t.path()).unwrap();
        fs::write(d.join("keep-me.txt"), "precious").unwrap();
        (t, d)
    }

    /// The server moved the scope away and left a symlink to a directory of the user's: the
    /// reset makes the scope again and leaves that directory as it was.
    #[test]
    fn a_scope_replaced_by_a_symlink_is_reset_without_touching_its_target() {
        let sb = ScanSandbox::create().unwrap();
        let (_t, victim) = victim();
        fs::rename(&sb.scope, sb.root.join("scope-moved")).unwrap();
        std::os::unix::fs::symlink(&victim, &sb.scope).unwrap();
        // Control: through the scope's path, the victim's files are what a reset would see.
        assert!(sb.scope.join("keep-me.txt").exists());

        sb.reset_scope().unwrap();
        assert_eq!(
            fs::read_to_string(victim.join("keep-me.txt")).unwrap(),
            "precious"
        );
        assert!(!victim.join("notes.txt").exists());
        assert!(fs::symlink_metadata(&sb.scope).unwrap().is_dir());
        assert!(sb.scope_file().is_file());
    }

    /// Canaries replaced by symlinks (the file itself, and a directory on its way) are put
    /// back in the sandbox; what the links pointed at is untouched.
    #[test]
    fn canaries_behind_planted_symlinks_are_restored_in_place() {
        let sb = ScanSandbox::create().unwrap();
        let (_t, victim) = victim();
        let key = sb.home.join(".ssh/id_rsa");
        fs::remove_file(&key).unwrap();
        std::os::unix::fs::symlink(victim.join("keep-me.txt"), &key).unwrap();
        let aws = sb.home.join(".aws");
        fs::rename(&aws, sb.root.join("aws-moved")).unwrap();
        std::os::unix::fs::symlink(&victim, &aws).unwrap();
        // Control: both paths now lead to the victim.
        assert_eq!(fs::read_to_string(&key).unwrap(), "precious");
        assert!(aws.join("keep-me.txt").exists());

        sb.restore_canaries().unwrap();
        assert_eq!(
            fs::read_to_string(victim.join("keep-me.txt")).unwrap(),
            "precious"
        );
        assert!(!victim.join("credentials").exists());
        for c in &sb.canaries {
            let m = fs::symlink_metadata(&c.path).unwrap();
            assert!(m.is_file(), "{}", c.path.display());
            assert_eq!(fs::read_to_string(&c.path).unwrap(), c.body);
        }
    }

    /// The kernel barrier itself: a confined thread cannot write outside the sandbox, even
    /// through a link inside it, while another thread of the same process still can.
    #[test]
    fn a_confined_thread_writes_only_inside_the_sandbox() {
        let sb = ScanSandbox::create().unwrap();
        let (_t, victim) = victim();
        let link = sb.root.join("tmp/out");
        std::os::unix::fs::symlink(victim.join("keep-me.txt"), &link).unwrap();
        let result = sb.confined(|| {
            let outside = fs::write(&link, "overwritten");
            let inside = fs::write(sb.root.join("tmp/in.txt"), "ok");
            Ok((outside, inside))
        });
        let (outside, inside) = result.unwrap();
        assert_eq!(
            outside.unwrap_err().raw_os_error(),
            Some(libc::EACCES),
            "write through the link"
        );
        inside.unwrap();
        assert_eq!(
            fs::read_to_string(victim.join("keep-me.txt")).unwrap(),
            "precious"
        );
        // Control: this thread is not confined, and the same write goes through.
        fs::write(&link, "overwritten").unwrap();
        assert_eq!(
            fs::read_to_string(victim.join("keep-me.txt")).unwrap(),
            "overwritten"
        );
    }
}
