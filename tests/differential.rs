//! Differential test, proxy versus kernel (issue 14): for thousands of generated paths, the
//! proxy's allow/deny decision for a path argument equals what the jailed server experiences
//! when it opens the same path for read and for write.
//!
//! **The two sides.** The proxy side is `proxy::check::check_tool_call` — the function the
//! router calls for every `tools/call` — for a tool whose schema marks `path` as a path: with
//! `readOnlyHint` (needs read scope) for the read decision, without it (needs write scope) for
//! the write decision, and `kernel_stops_writes = false` (the proxy's own judgement, not the
//! relaxation that leaves read-root writes to a fully enforced jail). The kernel side is a probe
//! run under the jail `sandbox::prepare_with_env` builds from the same Scope (Landlock, seccomp,
//! masks in a private mount namespace), opening each path for read and for write (see
//! `differential/probe.rs`); one probe process per batch of paths.
//!
//! **The paths** (`differential/generate.rs`, over the tree of `differential/fixture.rs`):
//! relative and absolute, `..` at every depth, `.`, `//`, trailing `/`, `/.`, `/..`; symlink
//! chains of 2–5 links in and out of scope, loops, dangling links in and out of scope, links
//! into `/proc/self`; `/proc/self/{root,cwd,fd}` forms; `~` and `$HOME`; percent-encoded
//! `file://` URIs (with `localhost`); NFC and NFD spellings, control characters, backslashes,
//! newlines, right-to-left marks; NAME_MAX and NAME_MAX + 1 names; paths at the PATH_MAX edge;
//! denied (`.env`, `.ssh`, `id_rsa`, `*.pem`, `.mcp.json`) and protected (`.git/hooks`,
//! `.git/config`, `.bashrc`) names at depths 1 to 5, existing and not yet existing.
//! Invalid UTF-8 cannot be sent at all: a `tools/call` is JSON, whose strings are Unicode, and
//! the proxy refuses a line that is not valid JSON (`tests/proxy_malformed.rs`); a lone
//! surrogate escape (`"\udcff"`) does not parse either. So every argument here is valid UTF-8.
//!
//! **Outcomes.** The kernel's answer to an open is *allowed* (it opened), *denied* (EACCES,
//! EPERM, EROFS: a permission decision), or *inconclusive* (ENOENT, ENOTDIR, EISDIR, ELOOP,
//! ENAMETOOLONG…: it failed before or apart from any permission decision, so it says nothing
//! about either layer — reading a file that does not exist, a symlink loop, a path over
//! PATH_MAX). Only conclusive answers are compared.
//!
//! **Classification of disagreements** (each is printed with the seed, the argument, the path
//! opened and both outcomes; the test fails on any that is not one of these):
//!
//! (a) proxy ALLOWS, kernel DENIES — a false denial the user would see as a broken tool. One
//!     case is accepted, and only where the jail says it applies:
//!     * `a/list-only-carve`: writing a new top-level entry of a scope directory that holds a
//!       denied name, when the kernel refuses the server a user namespace (seen as nobody on
//!       some kernels) so the jail carves list-only instead of masking — documented in
//!       `sandbox::carve` and reported in the jail's notes. With masks (root here) it is a bug.
//!
//!     Any other (a) is a bug in one of the layers.
//!
//! (b) proxy DENIES, kernel ALLOWS — the proxy is the only line of defence for that path.
//!     Accepted only where deliberate and documented:
//!     * `b/unjudgeable`: the proxy refuses a value it cannot judge (`..` below a missing
//!       component, a component over NAME_MAX, too many links) — `policy::resolve`;
//!     * `b/proc`: the path goes through `/proc`, which the proxy never resolves (it would
//!       resolve against the proxy's own process, not the server's) — `policy::resolve`;
//!     * `b/runtime`: outside the data scope but inside what the jail grants the server to run
//!       (system libraries, its interpreter, devices, its private TMPDIR) — `sandbox::runtime`;
//!     * `b/unmasked-name`: a denied or protected name the kernel cannot hide or freeze because
//!       it did not exist when the server started (a write creates it) or lies deeper than the
//!       carve walk looks (`sandbox::carve::WALK_DEPTH` levels) — `policy::deny`,
//!       `sandbox::carve`;
//!     * `b/home-expansion`: an argument starting with `~` or `$HOME` that this server opens
//!       literally, as a name in its cwd; the proxy judges the expanded path, as a server that
//!       expands it (server-filesystem, Python's `expanduser`) would open — `policy::resolve`;
//!     * `b/masked-dir`: a denied directory (`.ssh`) opens for reading because the jail covers
//!       it with an empty tmpfs; the probe checks it sees no entry where the host has some.
//!
//!     Any other (b) means the proxy resolved the path differently from the kernel: a bug.
//!
//! **Control.** The same probe without the jail (`--no-jail`) opens every path in the fixture
//! that the jailed kernel denied: the denials are the jail's doing, not the fixture's. (A system
//! path that root cannot write unjailed either, such as a new file in `/sys`, is counted as
//! inconclusive: the system refuses it, not the jail.) Before and after all
//! runs the fixture tree is snapshotted: the probes leave nothing behind.
//!
//! **Uids.** The comparison runs as root (DAC cannot refuse anything, so every refusal is the
//! jail's) and again as `nobody` (`tests/rerun`), where the masks take another path (an
//! unprivileged user namespace, or the list-only fallback) and DAC applies.
//!
//! **Reproducing.** The seed is printed; `MCPJAIL_DIFF_SEED=N` reruns it, `MCPJAIL_DIFF_COUNT=N`
//! sets the number of paths (default 3000), `scripts/differential.sh COUNT [SEED]` runs long.
//! The fixture lives in a fresh temp dir, so paths differ by that prefix between runs.

#![cfg(target_os = "linux")]

mod rerun;

#[path = "differential/fixture.rs"]
mod fixture;
#[path = "differential/generate.rs"]
mod generate;
#[path = "differential/probe.rs"]
mod probe;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mcpjail::policy::scope::protected_by;
use mcpjail::policy::ResolveContext;
use mcpjail::policy::{always_denied, Access, Scope, ScopeEntry, ScopeSource, ToolInfo};
use mcpjail::proxy::check::check_tool_call;
use serde_json::json;

use generate::{Case, Generator, Rng};
use probe::{Kernel, Outcome, Probe};

/// The carve walk's depth (`sandbox::carve::WALK_DEPTH`): denied and protected entries deeper
/// than this below a grant are left to the proxy.
const CARVE_WALK_DEPTH: usize = 3;
const DEFAULT_COUNT: usize = 3000;
const DEFAULT_SEED: u64 = 0x6d63_706a_6169_6c14;
const BATCH: usize = 500;

/// The proxy's decision for one argument and access.
#[derive(Debug, Clone)]
enum Proxy {
    /// The canonical path the proxy checked.
    Allow(PathBuf),
    Deny {
        kind: &'static str,
        /// The resolved path (the raw value when it could not be resolved).
        path: String,
    },
}

fn proxy_decision(scope: &Scope, ctx: &ResolveContext, arg: &str, access: Access) -> Proxy {
    let tool = ToolInfo {
        name: "probe".into(),
        path_args: vec!["/path".into()],
        read_only: access == Access::Read,
        ..ToolInfo::default()
    };
    let verdict = check_tool_call(
        scope,
        ctx,
        Some(&tool),
        false,
        false,
        &json!({ "path": arg }),
    );
    match verdict.refusal {
        None => Proxy::Allow(
            verdict
                .paths
                .first()
                .and_then(|p| p.resolved.clone())
                .unwrap_or_default(),
        ),
        Some(r) => Proxy::Deny {
            kind: r.kind,
            path: r.path,
        },
    }
}

struct World<'a> {
    scope: &'a Scope,
    /// Grants the jail gives beyond the Scope (runtime, system, devices, TMPDIR).
    runtime_grants: Vec<PathBuf>,
}

impl World<'_> {
    /// Why a (b) disagreement is deliberate, or `None` (a bug).
    fn why_proxy_only(
        &self,
        case: &Case,
        access: Access,
        kind: &str,
        path: &str,
        entries: Option<usize>,
    ) -> Option<&'static str> {
        let path = Path::new(path);
        if literal_home_form(case) {
            return Some("b/home-expansion");
        }
        match kind {
            "unresolvable" => return Some("b/unjudgeable"),
            _ if path.starts_with("/proc") => return Some("b/proc"),
            "outside_scope" => {
                return self
                    .runtime_grants
                    .iter()
                    .any(|g| path.starts_with(g))
                    .then_some("b/runtime")
            }
            "denied_pattern" | "protected" => {}
            _ => return None,
        }
        // The outermost ancestor that carries the denied or protected name, inside a grant.
        let root = self
            .scope
            .write
            .iter()
            .chain(self.scope.read.iter())
            .map(|e| &e.path)
            .find(|r| path.starts_with(r))?;
        let named = path
            .ancestors()
            .filter(|a| a.starts_with(root) && *a != root.as_path())
            .filter(|a| match kind {
                "denied_pattern" => self.scope.denied_by(a).is_some(),
                _ => protected_by(a).is_some(),
            })
            .last()?;
        let depth = named.components().count() - root.components().count();
        let existed = std::fs::symlink_metadata(named).is_ok();
        if !existed || depth > CARVE_WALK_DEPTH {
            return Some("b/unmasked-name");
        }
        if kind == "denied_pattern"
            && access == Access::Read
            && named == path
            && named.is_dir()
            && entries == Some(0)
            && std::fs::read_dir(named).map(|d| d.count()).unwrap_or(0) > 0
        {
            return Some("b/masked-dir");
        }
        None
    }
}

/// An argument starting with `~` or `$HOME` that this server opens literally (a name in its
/// cwd). The proxy expands it, as server-filesystem and Python's `expanduser` do; the server
/// here does not. Judging the expanded path is the stricter reading for the proxy, and the
/// kernel confines whatever the server really opens.
fn literal_home_form(case: &Case) -> bool {
    ["~", "$HOME", "${HOME}"]
        .iter()
        .any(|p| case.arg.starts_with(p))
        && case.open == case.arg.as_bytes()
}

#[derive(Default)]
struct Tally {
    compared: usize,
    agree_allow: usize,
    agree_deny: usize,
    inconclusive: BTreeMap<String, usize>,
    accepted: BTreeMap<&'static str, usize>,
    bugs: Vec<String>,
}

fn seed_and_count() -> (u64, usize) {
    let seed = std::env::var("MCPJAIL_DIFF_SEED")
        .ok()
        .map(|s| {
            let s = s.trim();
            s.strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16))
                .unwrap_or_else(|| s.parse())
                .unwrap_or_else(|e| panic!("MCPJAIL_DIFF_SEED={s:?} is not a number ({e}); hint: a decimal or 0x-hex u64"))
        })
        .unwrap_or(DEFAULT_SEED);
    let count = std::env::var("MCPJAIL_DIFF_COUNT")
        .ok()
        .map(|s| {
            s.trim()
                .parse()
                .unwrap_or_else(|e| panic!("MCPJAIL_DIFF_COUNT={s:?} is not a count ({e}); hint: e.g. MCPJAIL_DIFF_COUNT=100000"))
        })
        .unwrap_or(DEFAULT_COUNT);
    (seed, count)
}

async fn run_all(probe: &Probe, cases: &[Case]) -> Vec<Outcome> {
    let mut out = Vec::with_capacity(cases.len());
    for chunk in cases.chunks(BATCH) {
        let paths: Vec<Vec<u8>> = chunk.iter().map(|c| c.open.clone()).collect();
        out.extend(probe.run(&paths).await);
    }
    out
}

#[tokio::test]
async fn the_proxy_and_the_jailed_kernel_agree_on_generated_paths() {
    differential(Uid::Root).await;
}

/// The same comparison as `nobody` (re-run of this binary through `tests/rerun`): DAC applies
/// then, and the masks need an unprivileged user namespace (or fall back to list-only carving).
#[test]
fn as_nobody_the_proxy_and_the_jailed_kernel_agree_too() {
    if !nix::unistd::geteuid().is_root() {
        println!("not root: the test itself runs as this uid already");
        return;
    }
    let v = rerun::rerun(
        rerun::AS_NOBODY,
        "helper_differential_as_nobody",
        &[(HELPER, std::ffi::OsStr::new("1"))],
        "DIFF-RESULT ",
    );
    assert_eq!(v["uid"], 65534, "the helper ran as nobody");
    assert_eq!(v["bugs"], 0);
}

const HELPER: &str = "MCPJAIL_DIFF_HELPER";

/// Run by `as_nobody_the_proxy_and_the_jailed_kernel_agree_too` only.
#[tokio::test]
async fn helper_differential_as_nobody() {
    if std::env::var_os(HELPER).is_none() {
        return;
    }
    differential(Uid::Nobody).await;
    println!(
        "DIFF-RESULT {}",
        json!({ "uid": nix::unistd::geteuid().as_raw(), "bugs": 0 })
    );
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Uid {
    Root,
    Nobody,
}

async fn differential(uid: Uid) {
    let (seed, count) = seed_and_count();
    println!("differential: seed {seed:#x} ({seed}), {count} paths (MCPJAIL_DIFF_SEED / MCPJAIL_DIFF_COUNT)");
    let fx = fixture::build();
    let scope = Scope {
        write: vec![ScopeEntry {
            path: fx.scope(),
            source: ScopeSource::Flag,
        }],
        read: vec![ScopeEntry {
            path: fx.ro(),
            source: ScopeSource::Flag,
        }],
        deny: always_denied(Some(&fx.home())),
        ..Scope::default()
    };
    let ctx = ResolveContext {
        cwd: fx.scope(),
        home: Some(fx.home()),
    };

    let mut rng = Rng::new(seed);
    let generator = Generator::new(&fx);
    let mut cases: Vec<Case> = generate::regressions(&fx);
    cases.extend((0..count).map(|_| generator.case(&mut rng)));
    // The proxy decides first, on the untouched tree.
    let decisions: Vec<(Proxy, Proxy)> = cases
        .iter()
        .map(|c| {
            (
                proxy_decision(&scope, &ctx, &c.arg, Access::Read),
                proxy_decision(&scope, &ctx, &c.arg, Access::Write),
            )
        })
        .collect();

    let before = fixture::snapshot(&fx.root);
    let jailed = Probe::prepare(&scope, &fx.scope(), &fx.home(), true, uid == Uid::Root);
    // As nobody the kernel may refuse the masks' user namespace: the jail then grants the
    // scope's top level entry by entry (list-only carving), and creating or removing a
    // top-level entry is refused by the kernel — deliberately stricter, see `sandbox::carve`.
    let list_only = jailed
        .notes()
        .iter()
        .any(|n| n.contains("the kernel refuses a user namespace"));
    for note in jailed.notes() {
        println!("jail note: {note}");
    }
    let kernel = run_all(&jailed, &cases).await;
    assert_eq!(
        fixture::snapshot(&fx.root),
        before,
        "the jailed probe changed the tree"
    );
    let control_probe = Probe::prepare(&scope, &fx.scope(), &fx.home(), false, false);
    let control = run_all(&control_probe, &cases).await;
    assert_eq!(
        fixture::snapshot(&fx.root),
        before,
        "the control probe changed the tree"
    );

    let world = World {
        scope: &scope,
        runtime_grants: jailed
            .grants()
            .iter()
            .filter(|g| !g.why.starts_with("scope"))
            .map(|g| g.path.clone())
            .collect(),
    };
    let mut tally = Tally::default();
    let mut control_denied_too = Vec::new();
    let mut control_opened_outside = 0usize;
    for (i, case) in cases.iter().enumerate() {
        let rows = [
            (
                Access::Read,
                &decisions[i].0,
                &kernel[i].read,
                &control[i].read,
            ),
            (
                Access::Write,
                &decisions[i].1,
                &kernel[i].write,
                &control[i].write,
            ),
        ];
        for (access, proxy, k, c) in rows {
            let shown = || {
                format!(
                    "seed {seed:#x} case {i}: {access:?} arg {:?} (opens {:?}): proxy {proxy:?}, kernel {}, unjailed {}",
                    case.arg,
                    String::from_utf8_lossy(&case.open),
                    k.word(),
                    c.word()
                )
            };
            if matches!(k, Kernel::Denied(_)) && *c != Kernel::Allowed {
                // Refused unjailed too (root cannot create files in /sys): the system refuses
                // it, not the jail, so it says nothing about either layer. Never in the fixture.
                let checked = match proxy {
                    Proxy::Allow(p) => p.clone(),
                    Proxy::Deny { path, .. } => PathBuf::from(path),
                };
                if checked.starts_with(&fx.root) {
                    control_denied_too.push(shown());
                } else {
                    *tally
                        .inconclusive
                        .entry(format!("unjailed {}", c.word()))
                        .or_default() += 1;
                    continue;
                }
            }
            if matches!(
                proxy,
                Proxy::Deny {
                    kind: "outside_scope",
                    ..
                }
            ) && *c == Kernel::Allowed
            {
                control_opened_outside += 1;
            }
            match (proxy, k) {
                (_, Kernel::Inconclusive(e)) => {
                    *tally.inconclusive.entry(e.clone()).or_default() += 1;
                }
                (Proxy::Allow(_), Kernel::Allowed) => {
                    tally.compared += 1;
                    tally.agree_allow += 1;
                }
                (Proxy::Deny { .. }, Kernel::Denied(_)) => {
                    tally.compared += 1;
                    tally.agree_deny += 1;
                }
                (Proxy::Allow(p), Kernel::Denied(_)) => {
                    tally.compared += 1;
                    let top_level = p.parent() == Some(fx.scope().as_path());
                    if list_only && access == Access::Write && top_level {
                        *tally.accepted.entry("a/list-only-carve").or_default() += 1;
                    } else {
                        tally.bugs.push(format!("(a) false denial: {}", shown()));
                    }
                }
                (Proxy::Deny { kind, path, .. }, Kernel::Allowed) => {
                    tally.compared += 1;
                    let entries = if access == Access::Read {
                        kernel[i].entries
                    } else {
                        None
                    };
                    match world.why_proxy_only(case, access, kind, path, entries) {
                        Some(class) => *tally.accepted.entry(class).or_default() += 1,
                        None => tally.bugs.push(format!("(b) unclassified: {}", shown())),
                    }
                }
            }
        }
    }

    println!(
        "differential ({uid:?}, {}): {} opens compared ({} agree allowed, {} agree denied), inconclusive {:?}, accepted proxy-only {:?}, unjailed opens of paths the proxy refuses as outside scope: {control_opened_outside}",
        if list_only { "list-only carving" } else { "masks" },
        tally.compared,
        tally.agree_allow,
        tally.agree_deny,
        tally.inconclusive,
        tally.accepted
    );
    for bug in &tally.bugs {
        println!("DISAGREEMENT {bug}");
    }
    assert!(
        tally.bugs.is_empty(),
        "{} unclassified disagreements between the proxy and the kernel (seed {seed:#x}); first: {}",
        tally.bugs.len(),
        tally.bugs[0]
    );
    assert!(
        control_denied_too.is_empty(),
        "the unjailed probe was refused too, so the jail is not what refused these ({}); first: {}",
        control_denied_too.len(),
        control_denied_too[0]
    );
    // The comparison must have had something to compare in both directions.
    assert!(
        tally.agree_allow > count / 10,
        "too few allowed opens compared"
    );
    assert!(
        tally.agree_deny > count / 10,
        "too few denied opens compared"
    );
    assert!(
        control_opened_outside > 0,
        "the control never opened an out-of-scope path"
    );
}
