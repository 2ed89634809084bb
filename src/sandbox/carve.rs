//! Keeping denied names out of granted directories.
//!
//! Landlock cannot deny a file inside a directory it allows. When a scope directory directly
//! contains an entry matching a deny pattern (`.env`, `.mcp.json`, `id_rsa`, `.ssh`...), this
//! module decides what to do about it, as pure data; the platform module enforces the decision.
//!
//! The preferred answer is a *mask*: the directory keeps its grant, and the denied entry is
//! covered in the server's private mount namespace (a denied file by a read-only, `nodev` bind of
//! `/dev/null`, a denied directory by an empty read-only tmpfs), so creating, atomically
//! replacing (temp file + rename) and deleting files at that level keep working. When the kernel
//! will not give the server a mount namespace, the answer falls back to *list-only carving*: the
//! directory is granted for listing only and every *other* entry one by one with the directory's
//! access — the denied entry stays unreadable, but new top-level entries cannot be created,
//! replaced or deleted there. Never is a denied entry left readable.
//!
//! Inside a *read-write* grant, existing **protected** names (`policy::deny::PROTECTED`: git
//! hooks and `.git/config`, shell rc files, `.envrc`, editor and agent settings — code that
//! something else runs later) are made read-only the same way: a read-only bind of the entry over
//! itself, so the server reads them (git reads `.git/config`) but cannot rewrite them, and a
//! read-only `.git/hooks` directory also refuses new hook files. Names that do not exist at start
//! cannot be protected by the kernel without pre-creating them; they are left to the proxy's
//! argument check, and the notes say so.
//!
//! A read-only bind protects the name only where it is: renaming a directory above it (`.git`,
//! `sub` for `sub/.vscode`) would carry the bind away with it and leave the name free to be made
//! again, writable, for the host's git or editor to run later (or a stand-in `.env` for its
//! tools to load). So every directory between a write grant and a protected or masked name is
//! *pinned*: bound over itself, writable as before, which makes it a mount point that cannot be
//! renamed or removed (EBUSY). The grant itself needs no pin: its parent lies outside the write
//! grant, where Landlock refuses the rename. The cost: a rename into or out of a pinned
//! directory crosses a mount (EXDEV), as between two write grants.
//!
//! The tree under each grant is walked to a bounded depth ([`WALK_DEPTH`] levels below the
//! grant, at most [`WALK_ENTRIES`] entries per grant), skipping dependency and build trees
//! (`node_modules`, `.venv`, `target`...) and looking inside `.git` only at `hooks` and `config`,
//! and at the same two in each submodule's git directory (`.git/modules/<name>`).
//! Symlinks are never followed by the walk; a denied or protected symlink is covered at its
//! target only when that target lies inside the grant. Deeper matches, and everything past the
//! entry cap, are left to the proxy's argument checks, and the notes say where the walk stopped.
//! List-only carving (the fallback) can only carve the first level.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::Glob;

use crate::policy::globs::Compiled;

use super::{Enforcement, Grant, GrantAccess, LayerReport};
use crate::policy::is_protected_name;

/// How many levels below a grant the walk looks for denied and protected names.
pub const WALK_DEPTH: usize = 3;
/// At most this many directory entries are examined per grant.
pub const WALK_ENTRIES: usize = 4_000;
/// Dependency, build and cache trees: large, rebuilt by tools, not where secrets or hooks live.
const WALK_SKIP: &[&str] = &[
    "node_modules",
    ".venv",
    "venv",
    "target",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".cache",
];

/// Compile deny patterns; `~` and `$HOME` are expanded. Bad patterns are reported and skipped.
/// Compiled once per process (see [`crate::policy::globs`]): a respawn's jail reuses the set.
pub fn deny_set(
    patterns: &[String],
    home: Option<&Path>,
    notes: &mut Vec<String>,
) -> Option<Arc<crate::policy::globs::Compiled>> {
    if patterns.is_empty() {
        return None;
    }
    let expanded: Vec<String> = patterns
        .iter()
        .map(|p| {
            let expanded = match home {
                Some(h) if p.starts_with("~/") => format!("{}/{}", h.display(), &p[2..]),
                Some(h) if p.starts_with("$HOME/") => format!("{}/{}", h.display(), &p[6..]),
                _ => p.clone(),
            };
            // A bare name pattern (no '/') matches that name at any depth.
            if expanded.contains('/') {
                expanded
            } else {
                format!("**/{expanded}")
            }
        })
        .collect();
    let compiled = crate::policy::globs::compiled("jail", &expanded, |expanded| {
        let mut builder = crate::policy::globs::Builder::new(false);
        let mut skipped = Vec::new();
        for (i, (p, e)) in patterns.iter().zip(expanded).enumerate() {
            if let Err(err) = builder.add(i, e, Glob::new) {
                skipped.push((p.clone(), err.to_string()));
            }
        }
        builder.build(skipped).map_err(|e| e.to_string())
    })
    .ok()?;
    for (p, e) in &compiled.skipped {
        notes.push(format!("deny pattern {p} ignored by the jail: {e}"));
    }
    Some(compiled)
}

/// How a denied entry is covered in the server's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MaskKind {
    /// Anything but a directory: a read-only, `nodev` bind mount of `/dev/null` over it (opening
    /// it for reading or writing fails with EACCES; renaming or unlinking it with EBUSY).
    File,
    /// A directory: an empty, read-only tmpfs with mode 000 over it.
    Dir,
    /// A protected name (file or directory): a read-only bind of itself over itself. Reads work;
    /// writing, creating inside, renaming over or unlinking it fail (EROFS / EBUSY).
    ReadOnly,
    /// A directory on the way from a write grant to a protected or masked name: a bind of
    /// itself over itself, writable as before, so it cannot be renamed or removed (EBUSY) and
    /// the name inside keeps its place.
    Pin,
}

impl MaskKind {
    pub fn describe(self) -> &'static str {
        match self {
            MaskKind::File => "read-only /dev/null bind",
            MaskKind::Dir => "empty read-only tmpfs",
            MaskKind::ReadOnly => "read-only bind of itself",
            MaskKind::Pin => "pinned: a writable bind of itself, so it cannot be renamed",
        }
    }
}

/// One denied entry to cover in the server's view.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mask {
    pub path: PathBuf,
    pub kind: MaskKind,
}

/// What the platform can do about denied entries inside granted directories.
#[derive(Debug, Clone)]
pub enum MaskSupport {
    /// Mounts in the server's private mount namespace; `how` names the namespaces used.
    Mounts { how: String },
    /// The platform's own rules deny the subpaths (Seatbelt), no carving needed.
    #[cfg_attr(not(target_os = "macos"), allow(dead_code))]
    Native { how: String },
    /// No masking here (`why`): fall back to list-only carving.
    Unavailable { why: String },
}

/// One scope grant and what its first level holds.
#[derive(Debug)]
struct Carved {
    grant: Grant,
    denied: Vec<Mask>,
    /// The other first-level entries (granted one by one by list-only carving).
    others: Vec<PathBuf>,
    /// How many of `denied` lie deeper than the first level (list-only carving cannot cover
    /// them).
    deep: usize,
    /// In a write grant, the directories between the grant and each entry of `denied` (see
    /// the module docs); mounted only with masks, never carved.
    pins: Vec<PathBuf>,
}

/// The scope grants with the denied entries found directly inside them.
#[derive(Debug, Default)]
pub struct CarvePlan {
    carved: Vec<Carved>,
}

/// A [`CarvePlan`] settled against what the platform can do.
#[derive(Debug)]
pub struct Settled {
    pub grants: Vec<Grant>,
    /// Entries the platform must mask before the server starts (empty when falling back).
    pub masks: Vec<Mask>,
    /// The "carve" layer for the report; `None` when no denied entry was found.
    pub layer: Option<LayerReport>,
}

impl CarvePlan {
    /// Examine `grant` (a scope path): entries inside it (to [`WALK_DEPTH`] levels) that match
    /// `deny` are noted for masking, and in a read-write grant the existing protected names for
    /// a read-only bind. A grant that itself matches `deny` is dropped.
    pub fn add(&mut self, grant: Grant, deny: Option<&Compiled>, notes: &mut Vec<String>) {
        if deny.is_some_and(|d| d.is_match(&grant.path)) {
            notes.push(format!(
                "{} matches a deny pattern: not granted at all",
                grant.path.display()
            ));
            return;
        }
        let mut carved = Carved {
            grant,
            denied: Vec::new(),
            others: Vec::new(),
            deep: 0,
            pins: Vec::new(),
        };
        if carved.grant.path.is_dir() {
            let protect = carved.grant.access == GrantAccess::ReadWrite;
            let mut walk = Walk {
                root: carved.grant.path.clone(),
                deny,
                protect,
                budget: WALK_ENTRIES,
                carved: &mut carved,
                notes,
            };
            let root = walk.root.clone();
            walk.dir(&root, 1);
            if protect {
                walk.notes.push(format!(
                    "protected names (git hooks and config, shell rc files, editor and agent \
                     settings) that do not exist in {} when the server starts, or lie deeper than \
                     {WALK_DEPTH} levels, are refused by the proxy only: the kernel cannot protect \
                     a name inside a writable directory without pre-creating it",
                    root.display()
                ));
            }
            if walk.budget == 0 {
                notes.push(format!(
                    "{}: more than {WALK_ENTRIES} entries; denied and protected names past \
                     that are refused by the proxy only",
                    root.display()
                ));
            }
        }
        carved.denied.sort_by(|a, b| a.path.cmp(&b.path));
        carved.denied.dedup_by(|a, b| a.path == b.path);
        carved.pins.sort();
        carved.pins.dedup();
        // A directory that is masked itself is a mount point already.
        carved
            .pins
            .retain(|p| !carved.denied.iter().any(|m| &m.path == p));
        carved.others.sort();
        self.carved.push(carved);
    }

    /// Every entry to mask or pin, deepest first (so a mask inside a masked or pinned directory
    /// is mounted before the directory is, and comes along with it), without duplicates.
    pub fn masks(&self) -> Vec<Mask> {
        let mut masks: Vec<Mask> = self
            .carved
            .iter()
            .flat_map(|c| {
                let pins = c.pins.iter().map(|p| Mask {
                    path: p.clone(),
                    kind: MaskKind::Pin,
                });
                c.denied.iter().cloned().chain(pins)
            })
            .collect();
        masks.sort_by(|a, b| {
            b.path
                .components()
                .count()
                .cmp(&a.path.components().count())
                .then_with(|| a.path.cmp(&b.path))
                // A path both pinned and masked is masked (a mount point either way).
                .then_with(|| (a.kind == MaskKind::Pin).cmp(&(b.kind == MaskKind::Pin)))
        });
        masks.dedup_by(|a, b| a.path == b.path);
        masks
    }

    /// The grants to give, given what the platform can do about the denied entries.
    pub fn settle(self, support: &MaskSupport, notes: &mut Vec<String>) -> Settled {
        let masks = self.masks();
        let mut grants = Vec::new();
        let mut details = Vec::new();
        let mut uncovered = false;
        for carved in self.carved {
            if carved.denied.is_empty() {
                grants.push(carved.grant);
                continue;
            }
            let dir = carved.grant.path.display().to_string();
            let kept = access_words(carved.grant.access);
            match support {
                MaskSupport::Mounts { how } | MaskSupport::Native { how } => {
                    let listed = carved
                        .denied
                        .iter()
                        .map(|m| format!("{} ({})", m.path.display(), m.kind.describe()))
                        .collect::<Vec<_>>()
                        .join(", ");
                    let consequence = if carved.grant.access == GrantAccess::ReadWrite {
                        ", so files can still be created, atomically replaced and deleted there"
                    } else {
                        ""
                    };
                    notes.push(format!(
                        "masked in the server's view: {listed}; the directory {dir} stays \
                         {kept}{consequence} ({how})"
                    ));
                    if !carved.pins.is_empty() {
                        let pinned = carved
                            .pins
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ");
                        notes.push(format!(
                            "pinned in place, so the protected names inside cannot be moved away \
                             and made again: {pinned} (writable; a rename into or out of them \
                             fails with EXDEV)"
                        ));
                    }
                    details.push(format!(
                        "masked in the server's view: {listed}; {dir} stays {kept} ({how})"
                    ));
                    grants.push(carved.grant);
                }
                MaskSupport::Unavailable { why } => {
                    let root = carved.grant.path.clone();
                    let (first, deep): (Vec<Mask>, Vec<Mask>) = carved
                        .denied
                        .into_iter()
                        .partition(|m| m.path.parent() == Some(root.as_path()));
                    if !deep.is_empty() {
                        uncovered = true;
                        let listed = deep
                            .iter()
                            .map(|m| m.path.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ");
                        notes.push(format!(
                            "NOT covered by the jail in {dir} ({why}; list-only carving reaches \
                             the first level only): {listed}; refused by the proxy only"
                        ));
                        details.push(format!("{listed} not covered by the jail ({why})"));
                    }
                    if first.is_empty() {
                        grants.push(carved.grant);
                        continue;
                    }
                    let listed = first
                        .iter()
                        .map(|m| m.path.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ");
                    notes.push(format!(
                        "carved out of {dir}: {listed} (list-only carving, because {why}): the \
                         directory is list-only and its other {} entries are granted one by one, \
                         so new top-level files cannot be created, atomically replaced (temp file \
                         + rename) or deleted there",
                        carved.others.len()
                    ));
                    details.push(format!(
                        "{listed} carved out of {dir} by list-only carving ({why}); new \
                         top-level files there cannot be created, atomically replaced or deleted"
                    ));
                    grants.push(Grant {
                        path: carved.grant.path.clone(),
                        access: GrantAccess::List,
                        why: format!("{} (list only: denied names inside)", carved.grant.why),
                    });
                    // Protected names stay readable: Landlock grants them read-only.
                    for m in first.iter().filter(|m| m.kind == MaskKind::ReadOnly) {
                        grants.push(Grant {
                            path: m.path.clone(),
                            access: GrantAccess::Read,
                            why: format!("{} (protected: read-only)", carved.grant.why),
                        });
                    }
                    for p in carved.others {
                        // A symlink needs no grant of its own (reading a link is free); granting
                        // it would open its target, which may lie anywhere.
                        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink()) {
                            continue;
                        }
                        grants.push(Grant {
                            path: p,
                            access: carved.grant.access,
                            why: carved.grant.why.clone(),
                        });
                    }
                }
            }
        }
        let layer = (!details.is_empty()).then(|| LayerReport {
            layer: "carve".into(),
            enforcement: if uncovered {
                Enforcement::Partially
            } else {
                Enforcement::Fully
            },
            detail: details.join("; "),
        });
        let masks = match support {
            MaskSupport::Mounts { .. } => masks,
            MaskSupport::Native { .. } | MaskSupport::Unavailable { .. } => Vec::new(),
        };
        Settled {
            grants,
            masks,
            layer,
        }
    }
}

/// The bounded walk of one grant (see the module docs).
struct Walk<'a> {
    root: PathBuf,
    deny: Option<&'a Compiled>,
    protect: bool,
    budget: usize,
    carved: &'a mut Carved,
    notes: &'a mut Vec<String>,
}

impl Walk<'_> {
    /// Cover `mask` (found `depth` levels down); in a write grant, pin the directories between
    /// the grant and it, so it cannot be moved away and a writable stand-in made in its place
    /// (a `.envrc` or `.env` the host's tools load, as much as a hook).
    fn cover(&mut self, mask: Mask, depth: usize) {
        self.carved.deep += usize::from(depth > 1);
        if self.protect {
            let root = &self.root;
            let between = mask
                .path
                .ancestors()
                .skip(1)
                .take_while(|a| a != root && a.starts_with(root));
            self.carved.pins.extend(between.map(Path::to_path_buf));
        }
        self.carved.denied.push(mask);
    }

    fn dir(&mut self, dir: &Path, depth: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let parent = dir.file_name().and_then(|n| n.to_str());
        for entry in entries.flatten() {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            let p = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            match self.judge(&p, parent, &name, depth) {
                Judged::Denied => continue,
                Judged::Protected => {}
                Judged::Other if depth == 1 => self.carved.others.push(p.clone()),
                Judged::Other => {}
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir || WALK_SKIP.contains(&name.as_ref()) {
                continue;
            }
            if name == ".git" {
                // Looked at even at the depth limit: only a few names matter inside.
                self.git_dir(&p, 0);
                continue;
            }
            if depth < WALK_DEPTH {
                self.dir(&p, depth + 1);
            }
        }
    }

    /// A git directory: a repository's `.git`, or a submodule's (`.git/modules/<name>`). Only
    /// `hooks` and `config` matter here (what git runs and reads when it works in that
    /// repository), and `modules`, the submodules' own git directories; never the object store.
    fn git_dir(&mut self, dir: &Path, nesting: usize) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            let p = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if self.judge(&p, Some(".git"), &name, WALK_DEPTH + 1) == Judged::Other
                && name == "modules"
                && entry.file_type().is_ok_and(|t| t.is_dir())
            {
                self.submodules(&p, nesting + 1);
            }
        }
    }

    /// `.git/modules` (or a directory inside it): each submodule's git directory, found by its
    /// `HEAD` (a submodule's name may hold `/`, which nests its directory further).
    fn submodules(&mut self, dir: &Path, nesting: usize) {
        if nesting > SUBMODULE_NESTING {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if self.budget == 0 {
                return;
            }
            self.budget -= 1;
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let p = entry.path();
            if p.join("HEAD").is_file() {
                self.git_dir(&p, nesting);
            } else {
                self.submodules(&p, nesting + 1);
            }
        }
    }

    /// Cover `p` (the entry `name` in a directory named `parent`, `depth` levels down) if it is
    /// denied or, in a write grant, protected.
    fn judge(&mut self, p: &Path, parent: Option<&str>, name: &str, depth: usize) -> Judged {
        if self.deny.is_some_and(|d| d.is_match(p)) {
            if let Some(mask) = mask_for(p, &self.root, MaskKind::File, self.notes) {
                self.cover(mask, depth);
            }
            return Judged::Denied;
        }
        if self.protect && is_protected_name(parent, name) {
            if let Some(mask) = mask_for(p, &self.root, MaskKind::ReadOnly, self.notes) {
                self.cover(mask, depth);
            }
            // A protected directory is read-only as a whole; denied names inside it are still
            // masked (mounted first: deepest first).
            return Judged::Protected;
        }
        Judged::Other
    }
}

/// What [`Walk::judge`] made of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Denied,
    Protected,
    Other,
}

/// How deep `.git/modules` directories are followed (nested submodules, and names with `/`).
const SUBMODULE_NESTING: usize = 8;

fn access_words(access: GrantAccess) -> &'static str {
    match access {
        GrantAccess::List => "list-only",
        GrantAccess::Read => "read-only",
        GrantAccess::ReadExec => "read+exec",
        GrantAccess::ReadWrite => "read-write",
    }
}

/// The mask for a denied (`kind` File) or protected (`kind` ReadOnly) entry `p` found inside
/// `dir`. A symlink is masked at its target (a mount follows it anyway) when that target lies
/// inside `dir`; elsewhere the target is judged by its own grants, and the note says so.
fn mask_for(p: &Path, dir: &Path, kind: MaskKind, notes: &mut Vec<String>) -> Option<Mask> {
    let link = std::fs::symlink_metadata(p).ok()?;
    let (path, meta) = if link.file_type().is_symlink() {
        match std::fs::canonicalize(p).and_then(|t| std::fs::metadata(&t).map(|m| (t, m))) {
            Ok((target, meta)) if target.starts_with(dir) && target != dir => (target, meta),
            Ok((target, _)) => {
                notes.push(format!(
                    "{} is a symlink to {} outside {}: not masked; the target is judged by its \
                     own grants",
                    p.display(),
                    target.display(),
                    dir.display()
                ));
                return None;
            }
            Err(_) => return None, // dangling: nothing to read through it
        }
    } else {
        (p.to_path_buf(), link)
    };
    let kind = match kind {
        MaskKind::ReadOnly | MaskKind::Pin => kind,
        _ if meta.is_dir() => MaskKind::Dir,
        _ => MaskKind::File,
    };
    Some(Mask { path, kind })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (
        tempfile::TempDir,
        PathBuf,
        Arc<crate::policy::globs::Compiled>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let d = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(d.join(".env"), "SECRET=1").unwrap();
        std::fs::write(d.join("main.rs"), "").unwrap();
        std::fs::create_dir(d.join("src")).unwrap();
        std::fs::create_dir(d.join(".ssh")).unwrap();
        let mut notes = Vec::new();
        let set = deny_set(
            &["**/.env*".into(), "**/.ssh".into()],
            Some(Path::new("/root")),
            &mut notes,
        )
        .unwrap();
        (dir, d, set)
    }

    fn plan(d: &Path, set: &crate::policy::globs::Compiled) -> CarvePlan {
        let mut plan = CarvePlan::default();
        plan.add(
            Grant {
                path: d.to_path_buf(),
                access: GrantAccess::ReadWrite,
                why: "scope (write)".into(),
            },
            Some(set),
            &mut Vec::new(),
        );
        plan
    }

    #[test]
    fn denied_names_are_masked_and_the_directory_keeps_its_grant() {
        let (_tmp, d, set) = project();
        let mut notes = Vec::new();
        let settled =
            plan(&d, &set).settle(&MaskSupport::Mounts { how: "test".into() }, &mut notes);
        assert_eq!(
            settled.masks,
            vec![
                Mask {
                    path: d.join(".env"),
                    kind: MaskKind::File
                },
                Mask {
                    path: d.join(".ssh"),
                    kind: MaskKind::Dir
                },
            ]
        );
        assert_eq!(settled.grants.len(), 1);
        assert_eq!(settled.grants[0].path, d);
        assert_eq!(settled.grants[0].access, GrantAccess::ReadWrite);
        assert!(notes
            .iter()
            .any(|n| n.contains("masked in the server's view")
                && n.contains(".env (read-only /dev/null bind)")
                && n.contains("stays read-write")));
        assert!(settled.layer.is_some());
    }

    #[test]
    fn without_masks_denied_names_are_carved_out_list_only() {
        let (_tmp, d, set) = project();
        let mut notes = Vec::new();
        let settled = plan(&d, &set).settle(
            &MaskSupport::Unavailable {
                why: "no user namespace".into(),
            },
            &mut notes,
        );
        assert!(settled.masks.is_empty());
        let paths: Vec<_> = settled.grants.iter().map(|g| g.path.clone()).collect();
        assert!(paths.contains(&d.join("main.rs")));
        assert!(paths.contains(&d.join("src")));
        assert!(!paths.contains(&d.join(".env")));
        assert!(!paths.contains(&d.join(".ssh")));
        assert_eq!(settled.grants[0].path, d);
        assert_eq!(settled.grants[0].access, GrantAccess::List);
        assert!(notes
            .iter()
            .any(|n| n.contains(".env") && n.contains("cannot be created")));
    }

    #[test]
    fn a_symlinked_denied_name_is_masked_at_its_target_inside_the_directory() {
        let (_tmp, d, set) = project();
        std::fs::write(d.join("src/real"), "SECRET=2").unwrap();
        std::os::unix::fs::symlink(d.join("src/real"), d.join(".env.local")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", d.join(".env.out")).unwrap();
        let mut notes = Vec::new();
        let mut p = CarvePlan::default();
        p.add(
            Grant {
                path: d.clone(),
                access: GrantAccess::Read,
                why: "scope (read)".into(),
            },
            Some(&set),
            &mut notes,
        );
        let masks = p.masks();
        assert!(masks.iter().any(|m| m.path == d.join("src/real")));
        assert!(!masks.iter().any(|m| m.path.starts_with("/etc")));
        // Deepest first.
        assert_eq!(masks[0].path, d.join("src/real"));
        assert!(notes.iter().any(|n| n.contains(".env.out")));
    }

    #[test]
    fn the_walk_is_bounded_and_protects_only_in_write_grants() {
        let (_tmp, d, set) = project();
        for rel in ["a/.env", "a/b/.env", "a/b/c/.env", "node_modules/x/.env"] {
            std::fs::create_dir_all(d.join(rel).parent().unwrap()).unwrap();
            std::fs::write(d.join(rel), "S=1").unwrap();
        }
        std::fs::create_dir_all(d.join("x/y/.git/hooks")).unwrap();
        std::fs::create_dir_all(d.join(".git/objects/.env")).unwrap();
        let masks = plan(&d, &set).masks();
        let has = |rel: &str| masks.iter().any(|m| m.path == d.join(rel));
        assert!(has("a/.env") && has("a/b/.env"));
        assert!(!has("a/b/c/.env"), "deeper than WALK_DEPTH");
        assert!(!has("node_modules/x/.env"), "dependency trees are skipped");
        assert!(
            !has(".git/objects/.env"),
            "only hooks and config inside .git"
        );
        let hooks = masks.iter().find(|m| m.path == d.join("x/y/.git/hooks"));
        assert_eq!(hooks.map(|m| m.kind), Some(MaskKind::ReadOnly));

        let mut read = CarvePlan::default();
        read.add(
            Grant {
                path: d.clone(),
                access: GrantAccess::Read,
                why: "scope (read)".into(),
            },
            Some(&set),
            &mut Vec::new(),
        );
        assert!(!read.masks().iter().any(|m| m.kind == MaskKind::ReadOnly));
        assert!(!read.masks().iter().any(|m| m.kind == MaskKind::Pin));
    }

    #[test]
    fn submodules_git_directories_have_their_hooks_and_config_protected() {
        let (_tmp, d, set) = project();
        for gitdir in [
            ".git",
            ".git/modules/a",
            ".git/modules/libs/b",
            ".git/modules/a/modules/c",
        ] {
            std::fs::create_dir_all(d.join(gitdir).join("hooks")).unwrap();
            std::fs::create_dir_all(d.join(gitdir).join("objects/ab")).unwrap();
            std::fs::write(d.join(gitdir).join("HEAD"), "ref: refs/heads/main\n").unwrap();
            std::fs::write(d.join(gitdir).join("config"), "[core]\n").unwrap();
        }
        let masks = plan(&d, &set).masks();
        let kind = |rel: &str| masks.iter().find(|m| m.path == d.join(rel)).map(|m| m.kind);
        for gitdir in [
            ".git",
            ".git/modules/a",
            ".git/modules/libs/b",
            ".git/modules/a/modules/c",
        ] {
            for name in ["hooks", "config"] {
                let rel = format!("{gitdir}/{name}");
                assert_eq!(kind(&rel), Some(MaskKind::ReadOnly), "{rel}");
            }
            assert_eq!(
                kind(&format!("{gitdir}/objects")),
                None,
                "the object store is not walked"
            );
        }
        // The git directories on the way are pinned, so none can be moved away.
        for rel in [
            ".git",
            ".git/modules",
            ".git/modules/a",
            ".git/modules/libs/b",
        ] {
            assert_eq!(kind(rel), Some(MaskKind::Pin), "{rel}");
        }
    }

    #[test]
    fn directories_above_covered_names_are_pinned_in_write_grants_only() {
        let (_tmp, d, set) = project();
        std::fs::create_dir_all(d.join("x/y/.git/hooks")).unwrap();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/b/.env"), "S=1").unwrap();
        let masks = plan(&d, &set).masks();
        let kind = |rel: &str| {
            let p = d.join(rel);
            let found: Vec<_> = masks.iter().filter(|m| m.path == p).collect();
            assert!(found.len() <= 1, "{rel} listed twice: {masks:?}");
            found.first().map(|m| m.kind)
        };
        for rel in ["x", "x/y", "x/y/.git", "a", "a/b"] {
            assert_eq!(kind(rel), Some(MaskKind::Pin), "{rel}");
        }
        // The grant itself, names beside the path and the covered names are not pins.
        assert_eq!(kind(""), None);
        assert_eq!(kind("src"), None);
        assert_eq!(kind("x/y/.git/hooks"), Some(MaskKind::ReadOnly));
        assert_eq!(kind("a/b/.env"), Some(MaskKind::File));
        // Deepest first: a pin comes after every mask inside it (so they come along).
        let at = |rel: &str| masks.iter().position(|m| m.path == d.join(rel)).unwrap();
        assert!(at("x/y/.git/hooks") < at("x/y/.git") && at("x/y/.git") < at("x"));

        // The list-only fallback carves no pin.
        let mut notes = Vec::new();
        let settled =
            plan(&d, &set).settle(&MaskSupport::Unavailable { why: "test".into() }, &mut notes);
        assert!(settled.masks.is_empty());
        assert!(!settled.grants.iter().any(|g| g.path == d.join("x/y")));
        // With mounts the notes name the pins.
        let mut notes = Vec::new();
        plan(&d, &set).settle(&MaskSupport::Mounts { how: "test".into() }, &mut notes);
        assert!(
            notes
                .iter()
                .any(|n| n.starts_with("pinned in place") && n.contains("/x/y/.git")),
            "{notes:?}"
        );
        // (Read grants get no pins: `the_walk_is_bounded_and_protects_only_in_write_grants`.)
    }

    #[test]
    fn a_denied_grant_is_dropped() {
        let (_tmp, d, set) = project();
        let mut notes = Vec::new();
        let mut p = CarvePlan::default();
        p.add(
            Grant {
                path: d.join(".ssh"),
                access: GrantAccess::Read,
                why: "scope (read)".into(),
            },
            Some(&set),
            &mut notes,
        );
        let settled = p.settle(&MaskSupport::Mounts { how: "t".into() }, &mut notes);
        assert!(settled.grants.is_empty());
        assert!(notes.iter().any(|n| n.contains("not granted at all")));
    }
}
