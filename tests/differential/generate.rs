//! Seeded path generation. A case is the argument string the proxy judges and the bytes the
//! server opens for it (they differ only where the server decodes the argument first: `~`,
//! `$HOME`, `file://` with percent-encoding).
//!
//! The generator walks the real fixture tree so most paths name things that exist (a random
//! string would nearly always be ENOENT, which says nothing about either layer): at each step it
//! picks an entry of the directory it stands in (sorted, so a seed is reproducible), `..`, `.`,
//! an empty component (`//`), or a name from a vocabulary of missing, unicode, odd and overlong
//! names. The walk only steers generation, and only inside the fixture (so a seed gives the
//! same paths on any machine); it never decides anything.

use std::path::{Path, PathBuf};

use super::fixture::{long_name, Fixture};

/// splitmix64: small, seedable, and the same on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

#[derive(Debug, Clone)]
pub struct Case {
    /// The argument as the proxy receives it.
    pub arg: String,
    /// The path the server opens for it.
    pub open: Vec<u8>,
}

/// Names that are not (or not always) in the tree: missing targets (a write creates them),
/// unicode in both normal forms, odd bytes, NAME_MAX and NAME_MAX + 1, denied and protected
/// names that do not exist yet.
fn vocabulary() -> Vec<String> {
    let mut v: Vec<String> = [
        "new.txt",
        "missing",
        "caf\u{e9}.txt",
        "cafe\u{301}.txt",
        "\u{fc}n\u{ef}c\u{f6}d\u{e9}",
        "\u{1f512}.txt",
        "\u{202e}txt.exe",
        "sp ace.txt",
        "back\\slash.txt",
        "..\\..\\x",
        "new\nline.txt",
        "\u{7f}del",
        "\u{1}ctl",
        "-dash.txt",
        ".env",
        ".env.production",
        "id_rsa",
        "id_ecdsa.pub",
        "cert.pem",
        ".npmrc",
        ".mcp.json",
        ".bashrc",
        ".profile",
        ".git",
        "hooks",
        "config",
        ".envrc",
        ".vscode",
        "...",
        "~",
        "$HOME",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push(long_name());
    v.push(format!("{}.txt", "M".repeat(252))); // 256 bytes: over NAME_MAX
    v
}

/// Percent-encode every byte outside the unreserved set (and `/`), as a client building a
/// `file://` URI would.
fn percent_encode(path: &[u8]) -> String {
    let mut out = String::new();
    for &b in path {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub struct Generator<'a> {
    fx: &'a Fixture,
    vocab: Vec<String>,
}

impl<'a> Generator<'a> {
    pub fn new(fx: &'a Fixture) -> Self {
        Generator {
            fx,
            vocab: vocabulary(),
        }
    }

    pub fn case(&self, rng: &mut Rng) -> Case {
        let root = &self.fx.root;
        let scope = self.fx.scope();
        let r = root.display().to_string();
        // (written prefix, the directory it stands for, how the server reads the prefix)
        let bases: Vec<(String, PathBuf, Option<String>)> = vec![
            (String::new(), scope.clone(), None),
            (String::new(), scope.clone(), None),
            ("./".into(), scope.clone(), None),
            (format!("{r}/scope/"), scope.clone(), None),
            (format!("{r}/scope/"), scope.clone(), None),
            (format!("{r}/ro/"), self.fx.ro(), None),
            (format!("{r}/out/"), root.join("out"), None),
            (format!("{r}/scopeX/"), root.join("scopeX"), None),
            (format!("{r}/"), root.clone(), None),
            (format!("{r}/scope/sub/../"), scope.clone(), None),
            (format!("{r}//scope///"), scope.clone(), None),
            ("/proc/self/cwd/".into(), scope.clone(), None),
            (format!("/proc/self/root{r}/scope/"), scope.clone(), None),
            (format!("/proc/self/root{r}/out/"), root.join("out"), None),
            (
                "~/".into(),
                self.fx.home(),
                Some(format!("{}/", self.fx.home().display())),
            ),
            (
                "$HOME/".into(),
                self.fx.home(),
                Some(format!("{}/", self.fx.home().display())),
            ),
            ("/etc/".into(), PathBuf::from("/etc"), None),
            ("/usr/lib/".into(), PathBuf::from("/usr/lib"), None),
        ];
        match rng.below(40) {
            0 => return self.path_max_edge(rng),
            1 => {
                let fd = *rng.pick(&["0", "1", "2"]);
                let arg = format!("/proc/self/fd/{fd}");
                return Case {
                    open: arg.clone().into_bytes(),
                    arg,
                };
            }
            _ => {}
        }
        let (prefix, start, server_prefix) = rng.pick(&bases).clone();
        let mut written = prefix.clone();
        let mut cur: Option<PathBuf> = Some(start);
        let steps = rng.below(6);
        for i in 0..steps {
            let name = self.component(rng, cur.as_deref());
            cur = cur.and_then(|c| step(&c, &name));
            written.push_str(&name);
            if i + 1 < steps {
                written.push('/');
            }
        }
        if steps > 0 {
            match rng.below(12) {
                0 => written.push('/'),
                1 => written.push_str("/."),
                2 => written.push_str("//"),
                3 => written.push_str("/.."),
                _ => {}
            }
        }
        if written.is_empty() {
            written.push('.');
        }
        let open = match &server_prefix {
            Some(sp) => format!("{sp}{}", &written[prefix.len()..]),
            None => written.clone(),
        };
        // Sometimes the same absolute path as a client would send it: a percent-encoded URI.
        if open.starts_with('/') && !open.starts_with("/proc") && rng.chance(10) {
            let host = *rng.pick(&["", "localhost", "LOCALHOST"]);
            return Case {
                arg: format!("file://{host}{}", percent_encode(open.as_bytes())),
                open: open.into_bytes(),
            };
        }
        Case {
            arg: written,
            open: open.into_bytes(),
        }
    }

    fn component(&self, rng: &mut Rng, cur: Option<&Path>) -> String {
        let roll = rng.below(100);
        // Only the fixture's own directories are listed: what else lies around it (other
        // tests' temp dirs) differs between machines and runs, and a seed must not.
        let inside = cur.filter(|c| c.starts_with(&self.fx.root));
        if roll < 60 {
            if let Some(names) = inside.and_then(entries) {
                if !names.is_empty() {
                    return rng.pick(&names).clone();
                }
            }
        }
        match roll {
            60..=69 => "..".into(),
            70..=73 => ".".into(),
            74..=76 => String::new(),
            _ => rng.pick(&self.vocab).clone(),
        }
    }

    /// `{root}/scope/` + `./` * k + `a.txt`, sized around PATH_MAX (4096 with the NUL): the
    /// kernel refuses 4096 bytes and more; the proxy checks the canonical length.
    fn path_max_edge(&self, rng: &mut Rng) -> Case {
        let base = format!("{}/scope/", self.fx.root.display());
        let target = 4093 + rng.below(6);
        let mut s = base;
        while s.len() + 2 + "a.txt".len() <= target {
            s.push_str("./");
        }
        while s.len() + "a.txt".len() < target {
            s.push('/');
        }
        s.push_str("a.txt");
        Case {
            open: s.clone().into_bytes(),
            arg: s,
        }
    }
}

/// Cases that once disagreed, run first on every seed: `(argument, what the server opens)` with
/// `{root}` and `{home}` standing for the fixture's root and home.
const REGRESSIONS: &[(&str, &str)] = &[
    // `$HOME//x` was checked as `/x` (Path::join with an absolute tail replaced the home),
    // while the server opens `$HOME/x`: found with seed 12345.
    ("$HOME//../scope/", "{home}//../scope/"),
    ("$HOME//../scope/a.txt", "{home}//../scope/a.txt"),
    ("~//../out/secret.txt", "{home}//../out/secret.txt"),
    ("${HOME}///notes.txt", "{home}///notes.txt"),
];

pub fn regressions(fx: &Fixture) -> Vec<Case> {
    let fill = |s: &str| {
        s.replace("{root}", &fx.root.display().to_string())
            .replace("{home}", &fx.home().display().to_string())
    };
    REGRESSIONS
        .iter()
        .map(|(arg, open)| Case {
            arg: fill(arg),
            open: fill(open).into_bytes(),
        })
        .collect()
}

/// Sorted entry names of `dir` (following a link to it), or `None` if it is not a directory.
fn entries(dir: &Path) -> Option<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    names.sort();
    Some(names)
}

/// Where the generator stands after `name` (only to steer the next pick).
fn step(cur: &Path, name: &str) -> Option<PathBuf> {
    match name {
        "" | "." => Some(cur.to_path_buf()),
        ".." => Some(cur.parent().unwrap_or(cur).to_path_buf()),
        _ => std::fs::canonicalize(cur.join(name))
            .ok()
            .filter(|p| p.is_dir()),
    }
}
