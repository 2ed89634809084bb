//! Carving denied names out of granted directories.
//!
//! Landlock cannot deny a file inside a directory it allows. When a scope directory directly
//! contains an entry matching a deny pattern (`.env`, `.mcp.json`, `id_rsa`, `.ssh`...), the
//! directory is granted for listing only and every *other* entry is granted one by one with the
//! directory's access. The cost: the server cannot create new top-level entries there.
//! Only the first level is examined (a full walk of a large tree at every start would be slow);
//! deeper matches are left to the proxy's argument checks, and the notes say so.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::{Grant, GrantAccess};

/// Compile deny patterns; `~` and `$HOME` are expanded. Bad patterns are reported and skipped.
pub fn deny_set(
    patterns: &[String],
    home: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<GlobSet> {
    if patterns.is_empty() {
        return None;
    }
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        let expanded = match home {
            Some(h) if p.starts_with("~/") => format!("{}/{}", h.display(), &p[2..]),
            Some(h) if p.starts_with("$HOME/") => format!("{}/{}", h.display(), &p[6..]),
            _ => p.clone(),
        };
        // A bare name pattern (no '/') matches that name at any depth.
        let expanded = if expanded.contains('/') {
            expanded
        } else {
            format!("**/{expanded}")
        };
        match Glob::new(&expanded) {
            Ok(g) => {
                builder.add(g);
            }
            Err(e) => notes.push(format!("deny pattern {p} ignored by the jail: {e}")),
        }
    }
    builder.build().ok()
}

/// Replace `grant` (a scope directory) by per-entry grants when it directly holds denied names.
pub fn carve(grant: Grant, deny: &GlobSet, notes: &mut Vec<String>) -> Vec<Grant> {
    if deny.is_match(&grant.path) {
        notes.push(format!(
            "{} matches a deny pattern: not granted at all",
            grant.path.display()
        ));
        return Vec::new();
    }
    if !grant.path.is_dir() {
        return vec![grant];
    }
    let Ok(entries) = std::fs::read_dir(&grant.path) else {
        return vec![grant];
    };
    let mut allowed: Vec<PathBuf> = Vec::new();
    let mut denied: Vec<PathBuf> = Vec::new();
    for entry in entries.flatten() {
        let p = entry.path();
        if deny.is_match(&p) {
            denied.push(p);
        } else {
            allowed.push(p);
        }
    }
    if denied.is_empty() {
        return vec![grant];
    }
    denied.sort();
    allowed.sort();
    notes.push(format!(
        "carved out of {}: {} (the directory is list-only; its other {} entries are granted one by one; \
         new top-level files cannot be created there)",
        grant.path.display(),
        denied
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        allowed.len()
    ));
    let mut out = vec![Grant {
        path: grant.path.clone(),
        access: GrantAccess::List,
        why: format!("{} (list only: denied names inside)", grant.why),
    }];
    for p in allowed {
        out.push(Grant {
            path: p,
            access: grant.access,
            why: grant.why.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_names_are_carved_out_of_a_scope_dir() {
        let dir = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(d.join(".env"), "SECRET=1").unwrap();
        std::fs::write(d.join("main.rs"), "").unwrap();
        std::fs::create_dir(d.join("src")).unwrap();
        let mut notes = Vec::new();
        let set = deny_set(
            &["**/.env*".into(), "~/.ssh".into()],
            Some(Path::new("/root")),
            &mut notes,
        )
        .unwrap();
        let grants = carve(
            Grant {
                path: d.clone(),
                access: GrantAccess::ReadWrite,
                why: "scope (write)".into(),
            },
            &set,
            &mut notes,
        );
        let paths: Vec<_> = grants.iter().map(|g| g.path.clone()).collect();
        assert!(paths.contains(&d.join("main.rs")));
        assert!(paths.contains(&d.join("src")));
        assert!(!paths.contains(&d.join(".env")));
        assert_eq!(grants[0].path, d);
        assert_eq!(grants[0].access, GrantAccess::List);
        assert!(notes.iter().any(|n| n.contains(".env")));
    }
}
