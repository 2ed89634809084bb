//! Compiled glob sets, built once per pattern list per process and shared by its threads.
//!
//! Compiling a deny list of some forty patterns into a [`GlobSet`] took ~2.5 million
//! instructions (callgrind), as much as the rest of the jail's preparation, and half of it was
//! the Aho-Corasick automaton globset builds for its "suffix" patterns (`**/` and a literal path
//! such as `**/.cursor/mcp.json`: every client config) and most of the rest its regular
//! expressions for name prefixes (`**/id_rsa*`). Those forms are matched here by hand instead
//! ([`ByHand`]: byte comparisons that mean exactly what globset's expressions for them mean), as
//! are names (`**/.env`), name suffixes (`**/*.pem`) and absolute literal paths (`~/.ssh`), whose
//! parsing alone cost globset ~5 000 instructions each; only the rest goes to globset. A test
//! checks both agree on generated paths, with and without `*` crossing `/`.
//!
//! A respawn prepares the jail again with the same list, and the checks match the list on every
//! call: each form is compiled once. (Compiling on a background thread at start-up was measured
//! and dropped: a thread still allocating while the proxy forks the server costs the fork more
//! than it saves.)

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use globset::{Glob, GlobSet, GlobSetBuilder};

/// A compiled pattern list, and the patterns left out of it as unparsable (pattern, why).
#[derive(Debug)]
pub struct Compiled {
    set: GlobSet,
    /// For each pattern in `set`, the caller's index for it.
    owners: Vec<usize>,
    by_hand: Vec<ByHand>,
    pub skipped: Vec<(String, String)>,
}

/// A pattern matched here instead of by globset, each tested exactly as globset's regular
/// expression for it would (`(?:/?|.*/)` is "at the start of the path or of a component"):
#[derive(Debug)]
enum ByHand {
    /// `**/T` or `**/T/**` (`subtree`), `T` a literal relative path (a name, or names joined by
    /// `/`): the path is `T` or ends with `/T`; for a subtree, starts with `T/` or has `/T/` in
    /// it (globset: `(?:/?|.*/)T` — its own suffix test — and `(?:/?|.*/)T/.*`). `slashed` is
    /// `/T`, or `/T/` for a subtree.
    Tail { slashed: Vec<u8>, owner: usize },
    /// `**/*S` or `**/*S/**` (`subtree`), `S` a literal without `/`: the path ends with `S`; for
    /// a subtree, has `S/` in it. Whether `*` crosses `/` makes no difference: `S` has no `/`,
    /// so `[^/]*` can always take the rest of the component before it (globset:
    /// `(?:/?|.*/).*S` or `(?:/?|.*/)[^/]*S`, and the same followed by `/.*`).
    NameSuffix {
        suffix: Vec<u8>,
        subtree: bool,
        owner: usize,
    },
    /// `**/H*S` or `**/H*S/**` (`subtree`), `H` a literal relative path (`.claude/settings`),
    /// `S` a literal without `/` (`.json`): at the start of a component the path continues
    /// with `H`, then anything (`*`: with `literal_separator`, no `/`), then `S` at the end; for
    /// a subtree, `S` followed by `/` (with `literal_separator`, at the first `/` after `H`).
    /// globset: `(?:/?|.*/)H.*S` or `H[^/]*S`, and the same followed by `/.*`.
    Wildcard {
        head: Vec<u8>,
        tail: Vec<u8>,
        subtree: bool,
        literal_separator: bool,
        owner: usize,
    },
    /// `P` or `P/**` (`subtree`), `P` an absolute literal path: the path is `P`; for a subtree,
    /// starts with `P/` (globset: `P` and `P/.*`). `exact` is `P`, or `P/` for a subtree.
    Absolute { exact: Vec<u8>, owner: usize },
    /// `**/N*` or `**/N*/**` (`subtree`), `N` a literal name: a component starts with `N`.
    /// With `*` crossing `/` (globset's default) that is all (`(?:/?|.*/)N.*`, and for a
    /// subtree a `/` somewhere after `N`); with `literal_separator` the rest of the path after
    /// `N` has no `/` (`N[^/]*`), or for a subtree has one (`N[^/]*/.*`).
    NamePrefix {
        name: Vec<u8>,
        subtree: bool,
        literal_separator: bool,
        owner: usize,
    },
}

/// No glob syntax at all (`\` included: an escape would make it a different literal).
fn is_literal(s: &str) -> bool {
    !s.is_empty() && !s.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

/// `P/**` → (`P`, true); anything else → (itself, false).
fn split_subtree(pattern: &str) -> (&str, bool) {
    match pattern.strip_suffix("/**") {
        Some(inner) => (inner, true),
        None => (pattern, false),
    }
}

/// `/body`, and `/body/` for a subtree.
fn slashed(body: &str, subtree: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 2);
    out.push(b'/');
    out.extend_from_slice(body.as_bytes());
    if subtree {
        out.push(b'/');
    }
    out
}

/// A literal path without empty, leading or trailing components.
fn is_plain_path(body: &str) -> bool {
    is_literal(body) && !body.starts_with('/') && !body.ends_with('/') && !body.contains("//")
}

impl ByHand {
    /// `pattern` as one of the hand-matched forms, if it is one.
    fn parse(pattern: &str, literal_separator: bool, owner: usize) -> Option<ByHand> {
        if let Some(absolute) = pattern.strip_prefix('/') {
            let (body, subtree) = split_subtree(absolute);
            if !is_plain_path(body) {
                return None;
            }
            let exact = slashed(body, subtree);
            return Some(ByHand::Absolute { exact, owner });
        }
        let (body, subtree) = split_subtree(pattern.strip_prefix("**/")?);
        if let Some(suffix) = body.strip_prefix('*') {
            if is_literal(suffix) && !suffix.contains('/') {
                return Some(ByHand::NameSuffix {
                    suffix: suffix.as_bytes().to_vec(),
                    subtree,
                    owner,
                });
            }
            return None;
        }
        if let Some(name) = body.strip_suffix('*') {
            if is_literal(name) && !name.contains('/') {
                return Some(ByHand::NamePrefix {
                    name: name.as_bytes().to_vec(),
                    subtree,
                    literal_separator,
                    owner,
                });
            }
            return None;
        }
        if let Some((head, tail)) = body.split_once('*') {
            if is_plain_path(head) && head.contains('/') && is_literal(tail) && !tail.contains('/')
            {
                return Some(ByHand::Wildcard {
                    head: head.as_bytes().to_vec(),
                    tail: tail.as_bytes().to_vec(),
                    subtree,
                    literal_separator,
                    owner,
                });
            }
            return None;
        }
        if !is_plain_path(body) {
            return None;
        }
        Some(ByHand::Tail {
            slashed: slashed(body, subtree),
            owner,
        })
    }

    fn owner(&self) -> usize {
        match self {
            ByHand::Tail { owner, .. }
            | ByHand::NamePrefix { owner, .. }
            | ByHand::NameSuffix { owner, .. }
            | ByHand::Wildcard { owner, .. }
            | ByHand::Absolute { owner, .. } => *owner,
        }
    }

    /// Whether the path `view` shows matches.
    fn is_match(&self, view: &PathView<'_>) -> bool {
        let (path, starts) = (view.path, view.starts.as_slice());
        match self {
            ByHand::Tail { slashed, .. } => {
                let unslashed = &slashed[1..];
                // Either way `T` begins a component.
                if !view.begins_a_component(unslashed[0]) {
                    return false;
                }
                if slashed.ends_with(b"/") {
                    // `T/` at the start of the path or of a component.
                    rests_after(path, starts, unslashed).next().is_some()
                } else {
                    path == unslashed || ends_with(path, slashed)
                }
            }
            ByHand::NameSuffix {
                suffix, subtree, ..
            } => {
                if *subtree {
                    // `S/`: the part before some `/` (each `/` ends where a component starts)
                    // ends with `S`.
                    suffix.last().is_some_and(|b| view.ends_a_component(*b))
                        && starts
                            .iter()
                            .any(|&at| at > 0 && ends_with(&path[..at - 1], suffix))
                } else {
                    ends_with(path, suffix)
                }
            }
            ByHand::Wildcard {
                head,
                tail,
                subtree,
                literal_separator,
                ..
            } => {
                view.begins_a_component(head[0])
                    && rests_after(path, starts, head).any(|after| {
                        match (subtree, literal_separator) {
                            (false, false) => after.ends_with(tail),
                            (false, true) => after.ends_with(tail) && !after.contains(&b'/'),
                            (true, false) => has_before_slash(after, tail),
                            (true, true) => match after.iter().position(|b| *b == b'/') {
                                Some(k) => after[..k].ends_with(tail),
                                None => false,
                            },
                        }
                    })
            }
            ByHand::Absolute { exact, .. } => {
                if exact.ends_with(b"/") {
                    path.starts_with(exact)
                } else {
                    path == exact.as_slice()
                }
            }
            ByHand::NamePrefix {
                name,
                subtree,
                literal_separator,
                ..
            } => {
                view.begins_a_component(name[0])
                    && rests_after(path, starts, name).any(|after| {
                        match (subtree, literal_separator) {
                            (false, false) => true,
                            (false, true) => !after.contains(&b'/'),
                            (true, _) => after.contains(&b'/'),
                        }
                    })
            }
        }
    }
}

/// A path as the hand-matched patterns test it, worked out once for all of a list's patterns:
/// where its components start (at 0 and after each `/`: globset's `(?:/?|.*/)`, the start of
/// the path or of a component), which bytes begin a component and which end one (before a `/`,
/// or the path's last). A pattern compares only at component starts, and one whose literal
/// cannot begin (or end) a component here is passed over on one bit: a deny list holds ~90
/// forms, and testing each at every byte was most of a path-bearing call's check (~13 000
/// instructions a path).
struct PathView<'a> {
    path: &'a [u8],
    starts: Vec<usize>,
    begins: [u64; 4],
    ends: [u64; 4],
}

impl<'a> PathView<'a> {
    fn new(path: &'a [u8]) -> PathView<'a> {
        let mut view = PathView {
            path,
            starts: Vec::with_capacity(8),
            begins: [0; 4],
            ends: [0; 4],
        };
        view.starts.push(0);
        for (i, b) in path.iter().enumerate() {
            if *b == b'/' {
                view.starts.push(i + 1);
                if i > 0 {
                    set(&mut view.ends, path[i - 1]);
                }
            }
        }
        for &at in &view.starts {
            if let Some(b) = path.get(at) {
                set(&mut view.begins, *b);
            }
        }
        if let Some(b) = path.last() {
            set(&mut view.ends, *b);
        }
        view
    }

    fn begins_a_component(&self, b: u8) -> bool {
        has(&self.begins, b)
    }

    fn ends_a_component(&self, b: u8) -> bool {
        has(&self.ends, b)
    }
}

fn set(bits: &mut [u64; 4], b: u8) {
    bits[usize::from(b >> 6)] |= 1 << (b & 63);
}

fn has(bits: &[u64; 4], b: u8) -> bool {
    bits[usize::from(b >> 6)] & (1 << (b & 63)) != 0
}

/// What follows each place a component of `path` starts with `lit` (globset's
/// `(?:/?|.*/)lit`); `starts` are its components' starts ([`PathView`]).
fn rests_after<'a>(
    path: &'a [u8],
    starts: &'a [usize],
    lit: &'a [u8],
) -> impl Iterator<Item = &'a [u8]> + 'a {
    starts
        .iter()
        .filter(move |&&at| starts_with(&path[at..], lit))
        .map(move |&at| &path[at + lit.len()..])
}

/// `hay.starts_with(lit)`, the first byte compared before the rest: most places a pattern is
/// tried at differ there, and the slice comparison is a call to `memcmp`.
fn starts_with(hay: &[u8], lit: &[u8]) -> bool {
    match (hay.first(), lit.first()) {
        (Some(h), Some(l)) if h != l => false,
        _ => hay.starts_with(lit),
    }
}

/// `hay.ends_with(lit)`, the last byte compared first (see [`starts_with`]).
fn ends_with(hay: &[u8], lit: &[u8]) -> bool {
    match (hay.last(), lit.last()) {
        (Some(h), Some(l)) if h != l => false,
        _ => hay.ends_with(lit),
    }
}

/// Does `lit` followed by `/` occur in `hay`?
fn has_before_slash(hay: &[u8], lit: &[u8]) -> bool {
    hay.windows(lit.len() + 1)
        .any(|w| w.ends_with(b"/") && w[..lit.len()] == lit[..])
}

/// Builds a [`Compiled`]: each pattern is matched by hand if it has a [`ByHand`] form, or else
/// built by the caller's function and given to globset. `literal_separator` must be the
/// option that function builds with (whether `*` may match `/`).
pub struct Builder {
    set: GlobSetBuilder,
    owners: Vec<usize>,
    by_hand: Vec<ByHand>,
    literal_separator: bool,
}

impl Builder {
    pub fn new(literal_separator: bool) -> Builder {
        Builder {
            set: GlobSetBuilder::new(),
            owners: Vec::new(),
            by_hand: Vec::new(),
            literal_separator,
        }
    }

    /// Add `pattern`, reported as `owner` by [`Compiled::first_match`].
    pub fn add(
        &mut self,
        owner: usize,
        pattern: &str,
        build: impl Fn(&str) -> Result<Glob, globset::Error>,
    ) -> Result<(), globset::Error> {
        if let Some(hand) = ByHand::parse(pattern, self.literal_separator, owner) {
            self.by_hand.push(hand);
            return Ok(());
        }
        self.set.add(build(pattern)?);
        self.owners.push(owner);
        Ok(())
    }

    pub fn build(self, skipped: Vec<(String, String)>) -> Result<Compiled, globset::Error> {
        Ok(Compiled {
            set: self.set.build()?,
            owners: self.owners,
            by_hand: self.by_hand,
            skipped,
        })
    }
}

impl Compiled {
    pub fn is_match(&self, path: impl AsRef<Path>) -> bool {
        let path = path.as_ref();
        let view = PathView::new(path.as_os_str().as_bytes());
        // An empty set is the usual case (the default deny list is matched by hand): skip
        // globset's candidate, whose file-name search is the first `memchr` of a start and
        // asks the CPU for its features then (`cpuid`, a hypervisor exit each, ~6 µs in a VM).
        self.by_hand.iter().any(|h| h.is_match(&view))
            || (!self.set.is_empty() && self.set.is_match(path))
    }

    /// The smallest owner of a pattern `path` matches.
    pub fn first_match(&self, path: &Path) -> Option<usize> {
        let view = PathView::new(path.as_os_str().as_bytes());
        let by_hand = self
            .by_hand
            .iter()
            .filter(|h| h.is_match(&view))
            .map(ByHand::owner)
            .min();
        if self.set.is_empty() {
            return by_hand;
        }
        let candidate = globset::Candidate::new(path);
        let by_set = if self.set.is_match_candidate(&candidate) {
            self.set
                .matches_candidate(&candidate)
                .iter()
                .filter_map(|i| self.owners.get(*i).copied())
                .min()
        } else {
            None
        };
        by_hand.into_iter().chain(by_set).min()
    }
}

type Slot = Arc<OnceLock<Result<Arc<Compiled>, String>>>;

/// Pattern lists seen last, oldest first. A process uses two or three (the policy's and the
/// jail's forms of its deny list); the bound only matters to a long test run.
static SETS: Mutex<Vec<(Vec<String>, Slot)>> = Mutex::new(Vec::new());
const KEPT: usize = 8;

/// The set compiled from `patterns` by `build`: built by the first caller, waited for by any
/// caller that comes while it is being built, and shared after. `key` tells apart lists that
/// compile differently (the policy's and the jail's glob options).
pub fn compiled(
    key: &str,
    patterns: &[String],
    build: impl FnOnce(&[String]) -> Result<Compiled, String>,
) -> Result<Arc<Compiled>, String> {
    let slot = {
        let mut sets = SETS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let found = sets
            .iter()
            .find(|(k, _)| k.first().map(String::as_str) == Some(key) && k[1..] == *patterns);
        match found {
            Some((_, slot)) => slot.clone(),
            None => {
                if sets.len() >= KEPT {
                    sets.remove(0);
                }
                let slot = Slot::default();
                let mut k = Vec::with_capacity(patterns.len() + 1);
                k.push(key.to_string());
                k.extend_from_slice(patterns);
                sets.push((k, slot.clone()));
                slot
            }
        }
    };
    slot.get_or_init(|| build(patterns).map(Arc::new)).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(patterns: &[String]) -> Result<Compiled, String> {
        let mut b = Builder::new(false);
        for (i, p) in patterns.iter().enumerate() {
            b.add(i, p, Glob::new).map_err(|e| e.to_string())?;
        }
        b.build(Vec::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn one_build_per_list_and_key_shared_across_threads() {
        let patterns = vec!["**/.env-globs-test".to_string(), "/x/*".to_string()];
        let builds = std::sync::atomic::AtomicUsize::new(0);
        let counted = |p: &[String]| {
            builds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            build(p)
        };
        let sets: Vec<Arc<Compiled>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| compiled("test", &patterns, counted).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(builds.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(sets.iter().all(|s| Arc::ptr_eq(s, &sets[0])));
        assert!(sets[0].is_match("/a/.env-globs-test"));
        // Another key is another set, even for the same patterns.
        let other = compiled("other", &patterns, build).unwrap();
        assert!(!Arc::ptr_eq(&other, &sets[0]));
    }

    /// The hand-matched tails answer exactly as globset does: for the real deny lists, in the
    /// jail's form (plain `Glob::new`) and the policy's (`P` and `P/**`, `*` not crossing
    /// `/`), over generated paths made of the names those patterns use.
    #[test]
    fn hand_matched_tails_agree_with_globset() {
        let home = Path::new("/home/u");
        let mut patterns: Vec<String> = crate::policy::deny::always_denied(Some(home));
        patterns.extend(crate::policy::deny::PROTECTED.iter().map(|s| s.to_string()));
        patterns.push("**/a b/c".into());
        let policy = |p: &str| {
            globset::GlobBuilder::new(p)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
        };
        type BuildGlob<'a> = &'a dyn Fn(&str) -> Result<Glob, globset::Error>;
        // (form, how it builds, which of `P` and `P/**` it adds, literal_separator)
        let forms: [(&str, BuildGlob, (bool, bool), bool); 5] = [
            ("jail", &Glob::new, (true, false), false),
            ("policy", &policy, (true, true), true),
            ("P alone, * not crossing /", &policy, (true, false), true),
            ("P/** alone, * not crossing /", &policy, (false, true), true),
            ("P/** alone, * crossing /", &Glob::new, (false, true), false),
        ];
        let names = [
            "",
            ".",
            "..",
            ".cursor",
            "mcp.json",
            "mcp.jsonx",
            "x.cursor",
            ".vscode",
            "Code",
            "User",
            "Code - Insiders",
            ".codex",
            "config.toml",
            "zed",
            "settings.json",
            ".zed",
            "claude-code",
            "managed-settings.json",
            "a b",
            "c",
            "b\nc",
            "é",
            ".claude",
            "settings.local.json",
            "home",
            "u",
            ".ssh",
            "id_rsa",
            ".git",
            "hooks",
            "config",
            "id_rsa.pub",
            "xid_rsa",
            "id_ed25519",
            ".env",
            ".env.local",
            ".envx",
            ".env.",
            ".codeium",
            "windsurf",
            "mcp_config.json",
            ".gemini",
            "ClaudeCode",
            "x.pem",
            ".pem",
            "pem",
            "a.key",
            "b.keys",
            "c.p12",
            "d.pfx",
            ".netrc",
            ".npmrc",
            ".git-credentials",
            ".aws",
            ".config",
            "gcloud",
            "mcpjail",
            "settingsx",
            "settings.json.bak",
            "settings",
            ".json",
        ];
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % n
        };
        for (form, build, (with_p, with_subtree), literal_separator) in forms {
            let mut ours = Builder::new(literal_separator);
            let mut plain = GlobSetBuilder::new();
            let mut owners = Vec::new();
            let mut tails = 0;
            for (i, p) in patterns.iter().enumerate() {
                let mut variants = Vec::new();
                if with_p {
                    variants.push(p.clone());
                }
                if with_subtree {
                    variants.push(format!("{}/**", p.trim_end_matches('/')));
                }
                for v in variants {
                    tails += usize::from(ByHand::parse(&v, literal_separator, i).is_some());
                    ours.add(i, &v, build).unwrap();
                    plain.add(build(&v).unwrap());
                    owners.push(i);
                }
            }
            assert!(
                tails >= 40,
                "{form}: the client configs, names, suffixes and home paths are hand-matched \
                 ({tails})"
            );
            let ours = ours.build(Vec::new()).unwrap();
            let plain = plain.build().unwrap();
            let (mut matched, mut tried) = (0, 0);
            for _ in 0..25_000 {
                let mut path = String::new();
                // A third start at (or next to) a home-relative pattern, which random names
                // would seldom spell.
                let starts = [
                    "/home/u/.ssh",
                    "/home/u/.sshx",
                    "/home/u/.aws",
                    "/home/u/.config/gcloud",
                    "/home/u/.config/mcpjail",
                    "/home/u/.local/state/mcpjail",
                    "/home/u",
                ];
                let at_home = next(3) == 0;
                if at_home {
                    path.push_str(starts[next(starts.len())]);
                } else if next(4) != 0 {
                    path.push('/');
                }
                for k in 0..usize::from(!at_home) + next(6) {
                    if k > 0 || at_home {
                        path.push_str(if next(12) == 0 { "//" } else { "/" });
                    }
                    path.push_str(names[next(names.len())]);
                }
                if next(10) == 0 {
                    path.push('/');
                }
                let p = Path::new(&path);
                let want = plain.matches(p).iter().map(|i| owners[*i]).min();
                assert_eq!(ours.is_match(p), want.is_some(), "{form}: {path:?}");
                assert_eq!(ours.first_match(p), want, "{form}: {path:?}");
                tried += 1;
                matched += usize::from(want.is_some());
            }
            assert!(
                matched > tried / 20,
                "{form}: the paths hit the patterns ({matched})"
            );
        }
    }

    #[test]
    fn a_failed_build_is_an_error_for_every_caller() {
        let bad = vec!["a[".to_string()];
        assert!(compiled("test-bad", &bad, build).is_err());
        assert!(compiled("test-bad", &bad, |_| panic!("not built twice")).is_err());
    }
}
