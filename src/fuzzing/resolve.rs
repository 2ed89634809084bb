//! The path resolver (`policy::resolve`), the one function every allow/deny decision starts
//! from.
//!
//! Invariants for any UTF-8 input: nothing panics; a resolved path is absolute, has no `.` or
//! `..` component and no NUL, and fits PATH_MAX and NAME_MAX; resolving it again gives itself
//! (it is canonical); a relative argument without `..` that is not a URI or a home form stays
//! under the cwd, and a home form (`~/…`, `$HOME/…`, `${HOME}/…`) without `..` under the home
//! (neither can escape by spelling alone: `~//etc` once resolved to `/etc`).

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::policy::resolve::{resolve, ResolveContext, MAX_COMPONENT_BYTES, MAX_PATH_BYTES};

use super::NOWHERE;

pub fn run(data: &[u8]) {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let root = PathBuf::from(NOWHERE);
    let ctx = ResolveContext {
        cwd: root.join("cwd"),
        home: Some(root.join("home")),
    };
    let Ok(path) = resolve(raw, &ctx) else {
        return;
    };
    assert!(path.is_absolute(), "{raw:?} resolved to relative {path:?}");
    assert!(
        path.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
        "{raw:?} resolved to a non-canonical {path:?}"
    );
    let bytes = path.as_os_str().as_bytes();
    assert!(!bytes.contains(&0), "NUL in {path:?}");
    assert!(
        bytes.len() <= MAX_PATH_BYTES,
        "{raw:?} resolved over PATH_MAX"
    );
    assert!(
        path.components()
            .all(|c| c.as_os_str().len() <= MAX_COMPONENT_BYTES),
        "{raw:?} resolved to a component over NAME_MAX"
    );
    if let Some(text) = path.to_str() {
        assert_eq!(
            resolve(text, &ctx).as_deref(),
            Ok(path.as_path()),
            "resolving {raw:?} twice moved it"
        );
    }
    if home_form(raw) && no_dotdot(raw) {
        assert!(
            path.starts_with(ctx.home.as_deref().unwrap_or(&root)),
            "home form {raw:?} left the home: {path:?}"
        );
    }
    if plain_relative(raw) {
        assert!(
            path.starts_with(&ctx.cwd),
            "relative {raw:?} left the cwd: {path:?}"
        );
    }
}

/// A relative name with no `..`, no URI scheme and no home form.
fn plain_relative(raw: &str) -> bool {
    !raw.starts_with('/')
        && !raw.starts_with('~')
        && !raw.starts_with('$')
        && !raw.contains("://")
        && !crate::policy::file_url::is_file_url(raw)
        && no_dotdot(raw)
}

fn no_dotdot(raw: &str) -> bool {
    !Path::new(raw)
        .components()
        .any(|c| c == Component::ParentDir)
}

/// `~`, `$HOME` or `${HOME}`, alone or followed by `/`.
fn home_form(raw: &str) -> bool {
    ["~", "${HOME}", "$HOME"].iter().any(|p| {
        raw.strip_prefix(p)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}
