//! Path resolution: the one function that turns a raw argument string into a canonical path.
//!
//! Everything that decides "is this path allowed" first calls [`resolve`], so the rules live in
//! one place:
//!
//! * `file:` URLs are read as the servers' WHATWG URL parsers read them ([`super::file_url`]:
//!   `\` is `/`, tabs and newlines vanish, `..` and `%2e%2e` segments are removed, then the
//!   path is percent-decoded); other hosts, other schemes, queries and fragments are refused
//!   ([`ResolveError::BadUri`]). A URL with `..` names two paths, the parser's (by name) and
//!   the filesystem's (through symlinks, what a server that only decodes opens): refused
//!   unless both are the same file.
//! * `~`, `~/x`, `~user/x`, `$HOME`, `${HOME}` are expanded (only at the start, the way shells and
//!   `os.path.expanduser` do).
//! * Relative paths are joined to the server's cwd. Backslashes are ordinary filename bytes on
//!   POSIX, so `..\..\etc` is one (odd) file name in the cwd, not a traversal.
//! * The result is canonicalized component by component, like `realpath(3)`: symlinks are
//!   followed (at most 40), `..` after an existing component goes to the real parent.
//! * A target that does not exist yet keeps its missing tail appended to the canonical deepest
//!   existing ancestor; `..` in that tail is refused because the kernel would resolve it against
//!   directories that may appear later (or be symlinks created by the server in between).
//! * `/proc` is never resolved through: the proxy is not the server, so `/proc/self/root`,
//!   `/proc/self/cwd`, `/proc/<pid>/...` would resolve against the *proxy's* view. Any path that
//!   reaches `/proc` is kept as written (and so lies outside every data scope).
//! * NUL bytes, paths over 4096 bytes and components over 255 bytes are refused.
//!
//! Only filesystem metadata is read (`lstat`, `readlink`); nothing is opened.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// Longest path accepted (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single component accepted (Linux `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;
/// Symlinks followed before giving up (Linux uses 40 too).
const MAX_SYMLINKS: usize = 40;

/// What a raw path is resolved against: the server's cwd and the user's home.
#[derive(Debug, Clone)]
pub struct ResolveContext {
    /// The server child's working directory (absolute).
    pub cwd: PathBuf,
    /// The home directory `~` and `$HOME` expand to; `None` refuses `~` forms.
    pub home: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("the path is empty")]
    Empty,
    #[error("the path contains a NUL byte")]
    NulByte,
    #[error("the path is {len} bytes long, over the {max}-byte limit")]
    TooLong { len: usize, max: usize },
    #[error("`..` after a component that does not exist: {0}")]
    DotDotInMissingPart(String),
    #[error("not a file:// URI this proxy can check: {0}")]
    BadUri(String),
    #[error("`~` cannot be expanded: the home directory is unknown")]
    NoHome,
    #[error("cannot resolve {path}: {reason}")]
    Io { path: String, reason: String },
}

/// Resolve `raw` to a canonical absolute path: read `file:` URLs as WHATWG parsers do; expand `~` and
/// `$HOME`; resolve relative paths against `ctx.cwd`; canonicalize resolving symlinks; for a
/// target that does not exist yet, canonicalize the deepest existing ancestor and append the
/// rest (rejecting `..` in the missing part); reject NUL bytes and overlong paths.
pub fn resolve(raw: &str, ctx: &ResolveContext) -> Result<PathBuf, ResolveError> {
    if raw.is_empty() {
        return Err(ResolveError::Empty);
    }
    if raw.contains('\0') {
        return Err(ResolveError::NulByte);
    }
    // Percent-encoding can triple a path's length; anything longer cannot decode to a valid path.
    if raw.len() > MAX_PATH_BYTES * 3 {
        return Err(ResolveError::TooLong {
            len: raw.len(),
            max: MAX_PATH_BYTES,
        });
    }
    let path = if let Some(url) = file_uri(raw)? {
        return resolve_file_url(raw, url, ctx);
    } else if has_url_scheme(raw) {
        return Err(ResolveError::BadUri(format!(
            "{raw} (only file:// URIs name local files)"
        )));
    } else {
        expand_home(raw, ctx)?
    };
    canonical(path, ctx)
}

/// A file URL's path, canonical. With `..` segments it names two paths — the URL parser's (by
/// name) and the filesystem's (through symlinks) — and servers open one or the other: refused
/// unless both are the same file.
fn resolve_file_url(
    raw: &str,
    url: super::file_url::FileUrl,
    ctx: &ResolveContext,
) -> Result<PathBuf, ResolveError> {
    let by_name = canonical(url.path, ctx)?;
    let Some(with_dotdot) = url.with_dotdot else {
        return Ok(by_name);
    };
    match canonical(with_dotdot, ctx) {
        Ok(walked) if walked == by_name => Ok(by_name),
        walked => {
            let walked = match walked {
                Ok(p) => p.display().to_string(),
                Err(e) => e.to_string(),
            };
            Err(ResolveError::BadUri(format!(
                "{} (URL parsers read its `..` as {}, the filesystem as {walked}; \
                 write the URI without `..`)",
                display_prefix(Path::new(raw)),
                by_name.display()
            )))
        }
    }
}

/// `path` made absolute against `ctx.cwd` and canonicalized, with the length checks.
fn canonical(path: PathBuf, ctx: &ResolveContext) -> Result<PathBuf, ResolveError> {
    let absolute = if path.is_absolute() {
        path
    } else {
        ctx.cwd.join(path)
    };
    check_lengths(&absolute)?;
    let resolved = canonicalize_for_server(&absolute)?;
    check_lengths(&resolved)?;
    Ok(resolved)
}

/// `scheme://` with a scheme of two or more characters (one letter is a Windows drive, `C://`).
pub(crate) fn has_url_scheme(raw: &str) -> bool {
    let Some(idx) = raw.find("://") else {
        return false;
    };
    let scheme = &raw[..idx];
    scheme.len() >= 2
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
}

/// If `raw` is a `file:` URL (as WHATWG parsers read it), the path it names; `Ok(None)` if it
/// is not one at all.
fn file_uri(raw: &str) -> Result<Option<super::file_url::FileUrl>, ResolveError> {
    super::file_url::parse_file_url(raw).map_err(|e| match e {
        super::file_url::FileUrlError::NulByte => ResolveError::NulByte,
        other => ResolveError::BadUri(format!("{} ({other})", display_prefix(Path::new(raw)))),
    })
}

/// Expand a leading `~`, `~user`, `$HOME` or `${HOME}`.
fn expand_home(raw: &str, ctx: &ResolveContext) -> Result<PathBuf, ResolveError> {
    let home = || ctx.home.clone().ok_or(ResolveError::NoHome);
    for prefix in ["${HOME}", "$HOME"] {
        if let Some(rest) = raw.strip_prefix(prefix) {
            if rest.is_empty() {
                return home();
            }
            if rest.starts_with('/') {
                return Ok(under(home()?, rest));
            }
            // `$HOMEDIR/x` is another variable; leave it literal (a relative name).
            return Ok(PathBuf::from(raw));
        }
    }
    if let Some(rest) = raw.strip_prefix('~') {
        let (user, tail) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest, ""),
        };
        let base = if user.is_empty() {
            home()?
        } else {
            // Python's expanduser turns `~root/x` into /root/x; a server might do the same.
            match nix::unistd::User::from_name(user) {
                Ok(Some(u)) => u.dir,
                // Unknown user: stays a literal (relative) name, as in shells.
                _ => return Ok(PathBuf::from(raw)),
            }
        };
        return Ok(under(base, tail));
    }
    Ok(PathBuf::from(raw))
}

/// `base` followed by `tail` as shells, Python's `expanduser` and Node's `path.join` read
/// `~//x` and `$HOME//x`: the home directory, then `x`. (`Path::join` with a tail that still
/// starts with `/` would *replace* the home, turning `~//etc/passwd` into `/etc/passwd` for
/// the check while the server opens `$HOME/etc/passwd`.)
fn under(base: PathBuf, tail: &str) -> PathBuf {
    let tail = tail.trim_start_matches('/');
    if tail.is_empty() {
        base
    } else {
        base.join(tail)
    }
}

fn check_lengths(path: &Path) -> Result<(), ResolveError> {
    let len = path.as_os_str().len();
    if len > MAX_PATH_BYTES {
        return Err(ResolveError::TooLong {
            len,
            max: MAX_PATH_BYTES,
        });
    }
    for c in path.components() {
        if let Component::Normal(name) = c {
            if name.len() > MAX_COMPONENT_BYTES {
                return Err(ResolveError::Io {
                    path: display_prefix(path),
                    reason: format!(
                        "a component is {} bytes long, over the {MAX_COMPONENT_BYTES}-byte limit",
                        name.len()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// A bounded rendering of a path for error messages.
fn display_prefix(path: &Path) -> String {
    let s = path.to_string_lossy();
    if s.len() > 120 {
        let mut end = 120;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    } else {
        s.into_owned()
    }
}

/// `realpath(3)` for an absolute path, with the not-yet-existing tail and `/proc` rules above.
fn canonicalize_for_server(absolute: &Path) -> Result<PathBuf, ResolveError> {
    let mut pending: VecDeque<OsString> = VecDeque::new();
    push_components_front(&mut pending, absolute);
    let mut out = PathBuf::from("/");
    let mut symlinks = 0usize;
    let mut missing = false;

    while let Some(name) = pending.pop_front() {
        if out == Path::new("/proc") && name != ".." {
            // Do not resolve through the proxy's own /proc; keep the rest as written.
            out.push(&name);
            while let Some(rest) = pending.pop_front() {
                if rest == ".." {
                    return Err(ResolveError::Io {
                        path: display_prefix(absolute),
                        reason: "`..` under /proc is not resolved".into(),
                    });
                }
                out.push(rest);
            }
            return Ok(out);
        }
        if name == ".." {
            if missing {
                return Err(ResolveError::DotDotInMissingPart(display_prefix(absolute)));
            }
            out.pop();
            continue;
        }
        let candidate = out.join(&name);
        if missing {
            out = candidate;
            continue;
        }
        match std::fs::symlink_metadata(&candidate) {
            Ok(meta) if meta.file_type().is_symlink() => {
                symlinks += 1;
                if symlinks > MAX_SYMLINKS {
                    return Err(ResolveError::Io {
                        path: display_prefix(absolute),
                        reason: "too many levels of symbolic links".into(),
                    });
                }
                let target = std::fs::read_link(&candidate).map_err(|e| ResolveError::Io {
                    path: display_prefix(&candidate),
                    reason: e.to_string(),
                })?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_components_front(&mut pending, &target);
            }
            Ok(_) => out = candidate,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                missing = true;
                out = candidate;
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
                // `file/x`: the kernel would fail with ENOTDIR; nothing can exist below a file.
                missing = true;
                out = candidate;
            }
            Err(e) => {
                return Err(ResolveError::Io {
                    path: display_prefix(&candidate),
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(out)
}

/// Put `path`'s components (without root or `.`) at the front of `pending`, in order.
fn push_components_front(pending: &mut VecDeque<OsString>, path: &Path) {
    let names: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsStr::from_bytes(b"..").to_os_string()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    for n in names.into_iter().rev() {
        pending.push_front(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fx {
        _dir: tempfile::TempDir,
        root: PathBuf,
        ctx: ResolveContext,
    }

    /// root/scope/{a.txt, sub/}, root/scope-evil/, root/home/, root/scope/out -> root/secret
    fn fx() -> Fx {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("scope/sub")).unwrap();
        std::fs::create_dir_all(root.join("scope-evil")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::write(root.join("scope/a.txt"), "a").unwrap();
        std::fs::write(root.join("secret"), "s").unwrap();
        symlink(root.join("secret"), root.join("scope/out")).unwrap();
        symlink("../secret", root.join("scope/rel-out")).unwrap();
        symlink("sub", root.join("scope/in")).unwrap();
        let ctx = ResolveContext {
            cwd: root.join("scope"),
            home: Some(root.join("home")),
        };
        Fx {
            _dir: dir,
            root,
            ctx,
        }
    }

    fn r(f: &Fx, raw: &str) -> Result<PathBuf, ResolveError> {
        resolve(raw, &f.ctx)
    }

    #[test]
    fn relative_and_absolute() {
        let f = fx();
        assert_eq!(r(&f, "a.txt").unwrap(), f.root.join("scope/a.txt"));
        assert_eq!(r(&f, "./a.txt").unwrap(), f.root.join("scope/a.txt"));
        assert_eq!(r(&f, ".").unwrap(), f.root.join("scope"));
        assert_eq!(r(&f, "..").unwrap(), f.root);
        let abs = f.root.join("scope/a.txt");
        assert_eq!(r(&f, abs.to_str().unwrap()).unwrap(), abs);
    }

    #[test]
    fn a_home_form_with_doubled_slashes_stays_in_home() {
        // Found by the differential test: `$HOME//../scope/` was checked as `/scope`.
        let f = fx();
        let home = f.root.join("home");
        assert_eq!(r(&f, "~//etc/passwd").unwrap(), home.join("etc/passwd"));
        assert_eq!(r(&f, "$HOME//etc").unwrap(), home.join("etc"));
        assert_eq!(r(&f, "${HOME}///x").unwrap(), home.join("x"));
        assert_eq!(r(&f, "$HOME//../scope/").unwrap(), f.root.join("scope"));
        assert_eq!(r(&f, "~//").unwrap(), home);
        assert_eq!(r(&f, "~root//x").unwrap(), PathBuf::from("/root/x"));
    }

    #[test]
    fn double_slash_and_trailing_dot_normalise() {
        let f = fx();
        let raw = format!("{}//scope//sub/.", f.root.display());
        assert_eq!(r(&f, &raw).unwrap(), f.root.join("scope/sub"));
        let raw = format!("/{}/scope/sub/", f.root.display());
        assert_eq!(r(&f, &raw).unwrap(), f.root.join("scope/sub"));
    }

    #[test]
    fn dotdot_climbs_out_to_the_real_parent() {
        let f = fx();
        assert_eq!(r(&f, "../secret").unwrap(), f.root.join("secret"));
        assert_eq!(r(&f, "sub/../../secret").unwrap(), f.root.join("secret"));
        let raw = format!("{}/scope/../etc", f.root.display());
        assert_eq!(r(&f, &raw).unwrap(), f.root.join("etc"));
        assert_eq!(
            r(&f, "../../../../../../../../etc/passwd").unwrap(),
            PathBuf::from("/etc/passwd")
        );
    }

    #[test]
    fn symlinks_are_followed() {
        let f = fx();
        assert_eq!(r(&f, "out").unwrap(), f.root.join("secret"));
        assert_eq!(r(&f, "rel-out").unwrap(), f.root.join("secret"));
        assert_eq!(r(&f, "in/x/y").unwrap(), f.root.join("scope/sub/x/y"));
        // `..` after a symlinked dir goes to the real parent (scope/sub/.. = scope).
        assert_eq!(r(&f, "in/../a.txt").unwrap(), f.root.join("scope/a.txt"));
    }

    #[test]
    fn dangling_symlink_resolves_to_its_target() {
        let f = fx();
        symlink(f.root.join("newfile"), f.root.join("scope/dangling")).unwrap();
        assert_eq!(r(&f, "dangling").unwrap(), f.root.join("newfile"));
    }

    #[test]
    fn symlink_loop_is_an_error() {
        let f = fx();
        symlink("loop2", f.root.join("scope/loop1")).unwrap();
        symlink("loop1", f.root.join("scope/loop2")).unwrap();
        assert!(matches!(r(&f, "loop1"), Err(ResolveError::Io { .. })));
    }

    #[test]
    fn missing_targets() {
        let f = fx();
        assert_eq!(
            r(&f, "new/deeper/x.txt").unwrap(),
            f.root.join("scope/new/deeper/x.txt")
        );
        assert!(matches!(
            r(&f, "new/../../secret"),
            Err(ResolveError::DotDotInMissingPart(_))
        ));
        // A missing tail below a symlink is appended to the symlink's real target.
        assert_eq!(
            r(&f, "in/new.txt").unwrap(),
            f.root.join("scope/sub/new.txt")
        );
        // Below a regular file nothing can exist.
        assert_eq!(r(&f, "a.txt/x").unwrap(), f.root.join("scope/a.txt/x"));
        assert!(matches!(
            r(&f, "a.txt/x/../../secret"),
            Err(ResolveError::DotDotInMissingPart(_))
        ));
        // `file/..` is ENOTDIR to the kernel but `path.resolve` normalises it: take the parent,
        // which is where a lexical server would land.
        assert_eq!(r(&f, "a.txt/../../secret").unwrap(), f.root.join("secret"));
    }

    #[test]
    fn home_forms() {
        let f = fx();
        let home = f.root.join("home");
        assert_eq!(r(&f, "~").unwrap(), home);
        assert_eq!(r(&f, "~/x").unwrap(), home.join("x"));
        assert_eq!(r(&f, "$HOME").unwrap(), home);
        assert_eq!(r(&f, "$HOME/x").unwrap(), home.join("x"));
        assert_eq!(r(&f, "${HOME}/x").unwrap(), home.join("x"));
        // Another variable is a literal relative name.
        assert_eq!(
            r(&f, "$HOMEDIR/x").unwrap(),
            f.root.join("scope/$HOMEDIR/x")
        );
        // ~root is root's home, wherever it is.
        let root_home = nix::unistd::User::from_name("root").unwrap().unwrap().dir;
        let root_home = std::fs::canonicalize(root_home).unwrap();
        assert_eq!(r(&f, "~root/.ssh").unwrap(), root_home.join(".ssh"));
        assert_eq!(
            r(&f, "~no-such-user-xyz").unwrap(),
            f.root.join("scope/~no-such-user-xyz")
        );
        let no_home = ResolveContext {
            cwd: f.ctx.cwd.clone(),
            home: None,
        };
        assert_eq!(resolve("~/x", &no_home), Err(ResolveError::NoHome));
        assert_eq!(resolve("$HOME", &no_home), Err(ResolveError::NoHome));
    }

    #[test]
    fn file_uris() {
        let f = fx();
        let p = f.root.join("scope/a.txt");
        let ps = p.to_str().unwrap();
        assert_eq!(r(&f, &format!("file://{ps}")).unwrap(), p);
        assert_eq!(r(&f, &format!("FILE://{ps}")).unwrap(), p);
        assert_eq!(r(&f, &format!("file://localhost{ps}")).unwrap(), p);
        assert_eq!(r(&f, &format!("file:{ps}")).unwrap(), p);
        // Percent-encoded traversal decodes and climbs out.
        let enc = format!("file://{}/scope/%2e%2e/secret", f.root.display());
        assert_eq!(r(&f, &enc).unwrap(), f.root.join("secret"));
        // An encoded `/` is a separator to the `url` crate and refused by Node: refused.
        let enc = format!("file://{}/scope/%2E%2E%2Fsecret", f.root.display());
        assert!(matches!(r(&f, &enc), Err(ResolveError::BadUri(_))));
        assert!(matches!(
            r(&f, "file://evil.example/etc/passwd"),
            Err(ResolveError::BadUri(_))
        ));
        assert!(matches!(
            r(&f, "file:relative"),
            Err(ResolveError::BadUri(_))
        ));
        assert!(matches!(
            r(&f, "file:///etc/passwd?x"),
            Err(ResolveError::BadUri(_))
        ));
        assert!(matches!(
            r(&f, "http://example.com/x"),
            Err(ResolveError::BadUri(_))
        ));
        assert_eq!(r(&f, "file:///a%00b"), Err(ResolveError::NulByte));
        assert!(matches!(
            r(&f, "file:///a%ff"),
            Err(ResolveError::BadUri(_))
        ));
        // Percent signs outside a URI are literal.
        assert_eq!(r(&f, "%2e%2e").unwrap(), f.root.join("scope/%2e%2e"));
    }

    /// The forms a server's WHATWG parser reads differently from a plain prefix strip resolve
    /// to the file the server opens (and so meet its deny and protected-name checks).
    #[test]
    fn file_urls_resolve_to_what_the_servers_url_parser_opens() {
        let f = fx();
        let scope = f.root.join("scope");
        let s = scope.display();
        let a = scope.join("a.txt");
        for raw in [
            format!("file://{s}/sub\\..\\a.txt"),
            format!("file://{s}\\a.txt"),
            format!("file://{s}/a.t\txt"),
            format!("file://{s}/a.\ntxt"),
            format!(" file://{s}/a.txt"),
            format!("\u{1}file://{s}/a.txt "),
            format!("fi\tle://{s}/a.txt"),
            format!("FiLe://LOCALHOST{s}/a.txt"),
            format!("file://{s}/sub/.%2e/a.txt"),
            format!("file://{s}/sub/%2E./a.txt"),
            format!("file://{s}/%2e/a.txt"),
        ] {
            assert_eq!(r(&f, &raw).unwrap(), a, "{raw:?}");
        }
        // `..` that names the same file by name and through the filesystem.
        assert_eq!(r(&f, &format!("file://{s}/sub/../a.txt")).unwrap(), a);
        // `in` -> `sub`: both readings are scope/a.txt. `homelink` -> home: the URL parser
        // reads scope/a.txt, the filesystem root/a.txt; `out` is a file and `missing` does not
        // exist: the filesystem cannot walk them. Servers open one or the other: refused.
        assert_eq!(r(&f, &format!("file://{s}/in/../a.txt")).unwrap(), a);
        symlink(f.root.join("home"), scope.join("homelink")).unwrap();
        for raw in [
            format!("file://{s}/homelink/../a.txt"),
            format!("file://{s}/homelink\\%2e%2e\\a.txt"),
            format!("file://{s}/out/../a.txt"),
            format!("file://{s}/missing/../a.txt"),
        ] {
            assert!(
                matches!(r(&f, &raw), Err(ResolveError::BadUri(e)) if e.contains("`..`")),
                "{raw:?}"
            );
        }
        assert!(matches!(
            r(&f, &format!("file:/\\evil{s}/a.txt")),
            Err(ResolveError::BadUri(e)) if e.contains("`evil`")
        ));
    }

    #[test]
    fn refusals() {
        let f = fx();
        assert_eq!(r(&f, ""), Err(ResolveError::Empty));
        assert_eq!(r(&f, "a\0b"), Err(ResolveError::NulByte));
        let long = "a/".repeat(3000);
        assert!(matches!(r(&f, &long), Err(ResolveError::TooLong { .. })));
        let long_name = "n".repeat(256);
        assert!(matches!(r(&f, &long_name), Err(ResolveError::Io { .. })));
        let ok_name = "n".repeat(255);
        assert_eq!(
            r(&f, &ok_name).unwrap(),
            f.root.join("scope").join(&ok_name)
        );
    }

    #[test]
    fn proc_is_kept_as_written() {
        let f = fx();
        assert_eq!(
            r(&f, "/proc/self/root/etc/passwd").unwrap(),
            PathBuf::from("/proc/self/root/etc/passwd")
        );
        assert_eq!(
            r(&f, "/proc/self/cwd/a.txt").unwrap(),
            PathBuf::from("/proc/self/cwd/a.txt")
        );
        assert!(r(&f, "/proc/self/root/../../etc").is_err());
        // A symlink into /proc is followed to /proc and stops there.
        symlink("/proc/self/root/etc", f.root.join("scope/procroot")).unwrap();
        assert_eq!(
            r(&f, "procroot/passwd").unwrap(),
            PathBuf::from("/proc/self/root/etc/passwd")
        );
        // `/proc/..` is just `/`.
        assert_eq!(r(&f, "/proc/../etc").unwrap(), PathBuf::from("/etc"));
    }

    #[test]
    fn windows_forms_are_literal_names() {
        let f = fx();
        assert_eq!(
            r(&f, "..\\..\\etc\\passwd").unwrap(),
            f.root.join("scope/..\\..\\etc\\passwd")
        );
        assert_eq!(r(&f, "C:\\..").unwrap(), f.root.join("scope/C:\\.."));
        // A drive letter with `://` is not a URL scheme.
        assert_eq!(r(&f, "C://x").unwrap(), f.root.join("scope/C:/x"));
    }
}
