//! `mcpjail policy learn`: the tracer used the other way round.
//!
//! The server runs exactly as in the scan's traced run (argv paths remapped into the scan
//! sandbox's scope, a throwaway HOME, inside the safety jail) but only its benign control calls
//! are made. Every access outside the scope is then sorted into:
//!
//! * **runtime** — covered by the jail's own runtime discovery (interpreter, install tree);
//! * **system** — loader, libraries, certificates, devices the jail grants every server;
//! * **state** — writes under the (throwaway) HOME or XDG directories: proposed as
//!   `state = ["~/…"]`, mapped back to the user's HOME;
//! * **needed** — reads the jail refused (`EACCES`/`EPERM`): proposed as `read = [...]`;
//! * **never proposed** — credentials (the canaries, and anything the always-denied globs
//!   match), whatever the server tried.
//!
//! Each proposal says why (the access that needs it, and in which phase).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::tracer::{Access, PHASE_STARTUP};
use super::{ScanError, ScanOptions};

/// One proposed (or refused) policy line.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Proposal {
    /// `runtime`, `system`, `state`, `read`, `never`.
    pub kind: &'static str,
    /// The path as it would appear in a policy file (`~/…` for HOME).
    pub path: String,
    pub why: String,
    pub accesses: usize,
    /// One access that needs it.
    pub example: String,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct LearnReport {
    pub server: String,
    pub startup_accesses: usize,
    pub call_accesses: usize,
    pub calls: usize,
    pub controls_ok: usize,
    pub proposals: Vec<Proposal>,
    pub duration_ms: u128,
}

fn phase_label(a: &Access) -> String {
    if a.phase == PHASE_STARTUP {
        "at start-up".into()
    } else {
        format!("during benign call {}", a.phase)
    }
}

/// The first `n` components of `p` below `base`, joined to `base`.
fn group(base: &Path, p: &Path, n: usize) -> PathBuf {
    let mut out = base.to_path_buf();
    if let Ok(rest) = p.strip_prefix(base) {
        for c in rest.components().take(n) {
            out.push(c);
        }
    }
    out
}

/// Sort the accesses of a learn run into proposals.
/// Places under HOME whose files run later (autostart, the user's `PATH`, shell and session
/// start-up): a server that writes there at start-up is planting, not keeping state.
const RUNS_LATER: &[&str] = &[
    "~/bin",
    "~/.local/bin",
    "~/.config/autostart",
    "~/.config/systemd",
    "~/.config/environment.d",
    "~/.config/fish",
    "~/.config/git",
    "~/.ssh",
];

/// Directories a `mkdir -p` of a real state directory creates on the way: proposed only when
/// nothing deeper is (see the end of [`propose`]), and then never as state.
const WHOLE_TREES: &[&str] = &["~", "~/.local", "~/.config", "~/.local/share", "~/.cache"];

/// Why `path` (as proposed: `~/…`) must never be a state directory, if it must not.
fn runs_later(path: &str) -> Option<&'static str> {
    let hit = RUNS_LATER
        .iter()
        .any(|p| path == *p || path.starts_with(&format!("{p}/")));
    let rc = path
        .rsplit('/')
        .next()
        .is_some_and(|name| crate::policy::is_protected_name(None, name));
    (hit || rc).then_some(
        "code that runs later (autostart, the user's PATH, shell or session start-up): never \
         proposed as state, whatever the server wrote there",
    )
}

/// Why a refused read or write of `dir` must not be proposed, if it must not: `/`, the home
/// directory of whoever runs the scan (the server had a throwaway one), anything in it or
/// above it, and other users' homes.
fn too_wide_to_propose(dir: &Path, real_home: Option<&Path>) -> Option<&'static str> {
    let wide = dir.components().count() < 2
        || real_home.is_some_and(|h| h.starts_with(dir) || dir.starts_with(h))
        || dir.starts_with("/home")
        || dir.starts_with("/root");
    wide.then_some(
        "a real home directory, or above one (the scanned server had a throwaway HOME): never \
         proposed",
    )
}

pub fn propose(
    accesses: &[Access],
    sb: &super::sandbox::ScanSandbox,
    grants: &[crate::sandbox::Grant],
) -> Vec<Proposal> {
    let deny = crate::policy::deny::always_denied(Some(&sb.home));
    let deny_set = {
        let mut b = globset::GlobSetBuilder::new();
        for d in &deny {
            if let Ok(g) = globset::Glob::new(d) {
                b.add(g);
            }
        }
        b.build().ok()
    };
    let xdg = sb.root.join("xdg");
    // The home directory of whoever runs the scan (canonical), read once for every access.
    let real_home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .and_then(|h| std::fs::canonicalize(h).ok());
    let mut out: BTreeMap<(&'static str, String), Proposal> = BTreeMap::new();
    let mut add = |kind: &'static str, path: String, why: String, a: &Access| {
        let e = out.entry((kind, path.clone())).or_insert_with(|| Proposal {
            kind,
            path,
            why,
            accesses: 0,
            example: format!(
                "{} {} ({}) {}",
                a.syscall,
                a.resolved.display(),
                a.result_text(),
                phase_label(a)
            ),
        });
        e.accesses += 1;
    };
    for a in accesses {
        let p = &a.resolved;
        if p.as_os_str().is_empty()
            || a.kind == super::tracer::AccessKind::Network
            || sb.is_in_scope(p)
            || ["/proc", "/dev", "/sys"].iter().any(|s| p.starts_with(s))
        {
            continue;
        }
        let canary = sb.is_outside(p);
        if canary {
            let shown = match p.strip_prefix(&sb.home) {
                Ok(rel) => format!("~/{}", rel.display()),
                Err(_) => format!("(outside the scope) {}", p.display()),
            };
            if sb.canaries.iter().any(|c| p.starts_with(&c.path))
                || p.starts_with(sb.home.join(".ssh"))
                || p.starts_with(sb.home.join(".aws"))
                || !p.starts_with(&sb.home)
            {
                add(
                    "never",
                    shown,
                    "a credential or another project's data: never proposed, whatever the \
                     server tried"
                        .into(),
                    a,
                );
                continue;
            }
        }
        if p.starts_with(&sb.home) || p.starts_with(&xdg) {
            if !a.kind.modifies() && !a.succeeded() {
                // Looked for an optional file that is not there.
                continue;
            }
            let (base, shown) = if p.starts_with(&xdg) {
                let sub = group(&xdg, p, 1);
                let name = sub.file_name().map(|n| n.to_string_lossy().into_owned());
                let home_rel = match name.as_deref() {
                    Some("config") => "~/.config",
                    Some("data") => "~/.local/share",
                    Some("state") => "~/.local/state",
                    _ => "~/.cache",
                };
                (sub.clone(), home_rel.to_string())
            } else {
                (sb.home.clone(), "~".to_string())
            };
            // The directory written in, at most three levels down (`~/.local/state/app`).
            let depth = p
                .strip_prefix(&base)
                .map(|r| r.components().count().saturating_sub(1))
                .unwrap_or(1)
                .clamp(1, 3);
            let dir = group(&base, p, depth);
            let rel = dir.strip_prefix(&base).unwrap_or(Path::new(""));
            let path = if rel.as_os_str().is_empty() {
                shown
            } else {
                format!("{shown}/{}", rel.display())
            };
            if let Some(why) = runs_later(&path) {
                add("never", path, why.into(), a);
                continue;
            }
            add(
                "state",
                path,
                "the server keeps state in its home: granted read-write as its state directory"
                    .into(),
                a,
            );
            continue;
        }
        if sb.root.starts_with("/") && p.starts_with(&sb.root) {
            continue;
        }
        if let Some(g) = grants
            .iter()
            .filter(|g| p.starts_with(&g.path))
            .max_by_key(|g| g.path.as_os_str().len())
        {
            let kind = if ["loader", "system", "device", "certificates", "time zone"]
                .iter()
                .any(|w| g.why.contains(w))
            {
                "system"
            } else {
                "runtime"
            };
            add(kind, g.path.display().to_string(), g.why.clone(), a);
            continue;
        }
        if deny_set.as_ref().is_some_and(|d| d.is_match(p)) {
            add(
                "never",
                p.display().to_string(),
                "matches an always-denied credential pattern: never proposed".into(),
                a,
            );
            continue;
        }
        let refused = matches!(a.result, Some(r) if r == -(libc::EACCES as i64) || r == -(libc::EPERM as i64));
        if !refused {
            // Reached without a grant of its own (a parent directory listing, `/`), or looked
            // for something that is not there (a PATH search): nothing to propose.
            continue;
        }
        if a.succeeded() && !a.kind.modifies() {
            // Reached without a grant of its own (a parent directory listing, `/`): nothing
            // to propose.
            continue;
        }
        let parent = if p.is_dir() {
            p.clone()
        } else {
            p.parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| p.clone())
        };
        let kind = if a.kind.modifies() { "write" } else { "read" };
        if let Some(why) = too_wide_to_propose(&parent, real_home.as_deref()) {
            add("never", parent.display().to_string(), why.into(), a);
            continue;
        }
        add(
            kind,
            parent.display().to_string(),
            format!(
                "refused by the jail ({}) {}: the server needs it",
                a.result_text(),
                phase_label(a)
            ),
            a,
        );
    }
    // `mkdir -p` creates every level: keep the deepest state directory of each chain.
    let all: Vec<Proposal> = out.into_values().collect();
    let deeper = |p: &Proposal| {
        all.iter()
            .any(|q| q.kind == "state" && q.path.starts_with(&format!("{}/", p.path)))
    };
    all.iter()
        .filter(|p| p.kind != "state" || !deeper(p))
        .cloned()
        .map(|mut p| {
            if p.kind == "state" && WHOLE_TREES.contains(&p.path.as_str()) {
                p.kind = "never";
                p.why = "the whole home or settings tree: never proposed as state, whatever the \
                         server wrote there"
                    .into();
            }
            p
        })
        .collect()
}

/// Run the server with benign calls only and propose its policy.
pub async fn learn(opts: &ScanOptions) -> Result<LearnReport, ScanError> {
    let run = super::traced_benign_run(opts).await?;
    let proposals = propose(&run.accesses, &run.sandbox, &run.grants);
    Ok(LearnReport {
        server: run.name,
        startup_accesses: run
            .accesses
            .iter()
            .filter(|a| a.phase == PHASE_STARTUP)
            .count(),
        call_accesses: run
            .accesses
            .iter()
            .filter(|a| a.phase != PHASE_STARTUP)
            .count(),
        calls: run.calls,
        controls_ok: run.controls_ok,
        proposals,
        duration_ms: run.duration_ms,
    })
}

/// The proposal as a commented policy file.
pub fn render_toml(r: &LearnReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# mcpjail policy learn: {} — {} accesses at start-up, {} during {} benign calls ({} ok), {:.1} s",
        r.server,
        r.startup_accesses,
        r.call_accesses,
        r.calls,
        r.controls_ok,
        r.duration_ms as f64 / 1000.0
    );
    let section = |kind: &str, title: &str, out: &mut String| {
        let items: Vec<&Proposal> = r.proposals.iter().filter(|p| p.kind == kind).collect();
        if items.is_empty() {
            return;
        }
        let _ = writeln!(out, "#\n# {title}:");
        for p in items {
            let _ = writeln!(
                out,
                "#   {}  ({}; {} access(es), e.g. {})",
                p.path, p.why, p.accesses, p.example
            );
        }
    };
    section(
        "runtime",
        "runtime (granted by the jail's runtime discovery; no policy line needed)",
        &mut out,
    );
    section(
        "system",
        "system files (granted to every server; no policy line needed)",
        &mut out,
    );
    section(
        "never",
        "NOT proposed: credentials the server tried to touch",
        &mut out,
    );
    let list =
        |kind: &str| -> Vec<&Proposal> { r.proposals.iter().filter(|p| p.kind == kind).collect() };
    let _ = writeln!(out);
    for (key, kind) in [("state", "state"), ("read", "read"), ("write", "write")] {
        let items = list(kind);
        if items.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{key} = [");
        for p in items {
            let _ = writeln!(out, "  {:?},  # {}; e.g. {}", p.path, p.why, p.example);
        }
        let _ = writeln!(out, "]");
    }
    if !r
        .proposals
        .iter()
        .any(|p| matches!(p.kind, "state" | "read" | "write"))
    {
        let _ = writeln!(
            out,
            "# nothing to add: the derived scope (argv paths, runtime, system) covers every access"
        );
    }
    out
}
