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
                fs::create_dir_all(parent)?;
            }
            fs::write(p, body)?;
        }
        std::os::unix::fs::symlink("../home/.aws", self.scope.join("link-out"))?;
        git_init(&self.scope);
        Ok(())
    }

    /// Put every canary back (a destructive probe that escaped may have moved or replaced one).
    pub fn restore_canaries(&self) -> io::Result<()> {
        for c in &self.canaries {
            if fs::read_to_string(&c.path).ok().as_deref() == Some(c.body.as_str()) {
                continue;
            }
            if let Ok(m) = fs::symlink_metadata(&c.path) {
                if m.is_dir() {
                    fs::remove_dir_all(&c.path)?;
                }
            }
            if let Some(parent) = c.path.parent() {
                fs::create_dir_all(parent)?;
            }
            fs::write(&c.path, &c.body)?;
        }
        Ok(())
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
