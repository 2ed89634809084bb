//! Property tests for the resolver and the scope check: for any input string, `resolve` does
//! not panic, and whatever it returns that `Scope::check` allows lies component-wise under an
//! allowed root *and* really is there on disk (its canonical form, where it exists, is inside).

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use mcpjail::policy::{resolve, Access, ResolveContext, Scope, ScopeEntry, ScopeSource};
use proptest::prelude::*;

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: ResolveContext,
    scope: Scope,
}

/// root/scope (write) with a symlink out, root/scope-evil (sibling prefix), root/secret.
fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    for d in ["scope/sub/deeper", "scope-evil", "home/.ssh", "other"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::write(root.join("secret"), "s").unwrap();
    std::fs::write(root.join("scope/a.txt"), "a").unwrap();
    symlink(root.join("secret"), root.join("scope/out")).unwrap();
    symlink("../other", root.join("scope/sub/up")).unwrap();
    symlink(".", root.join("scope/self")).unwrap();
    symlink("/proc/self/root", root.join("scope/procroot")).unwrap();
    let ctx = ResolveContext {
        cwd: root.join("scope"),
        home: Some(root.join("home")),
    };
    let scope = Scope {
        write: vec![ScopeEntry {
            path: root.join("scope"),
            source: ScopeSource::Flag,
        }],
        ..Default::default()
    };
    World {
        _dir: dir,
        root,
        ctx,
        scope,
    }
}

fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_string()),
        Just(".".to_string()),
        Just("".to_string()),
        Just("sub".to_string()),
        Just("deeper".to_string()),
        Just("out".to_string()),
        Just("up".to_string()),
        Just("self".to_string()),
        Just("procroot".to_string()),
        Just("a.txt".to_string()),
        Just("scope".to_string()),
        Just("scope-evil".to_string()),
        Just("secret".to_string()),
        Just("%2e%2e".to_string()),
        Just("%2F".to_string()),
        Just("..\\..".to_string()),
        Just("~".to_string()),
        Just("$HOME".to_string()),
        Just(".ssh".to_string()),
        Just("\0".to_string()),
        "[a-z.%~$\\\\]{0,6}",
    ]
}

fn raw_path(root: String) -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just(String::new()),
            Just("/".to_string()),
            Just(format!("{root}/")),
            Just(format!("{root}/scope/")),
            Just(format!("file://{root}/scope/")),
            Just("file:///".to_string()),
            Just("~/".to_string()),
            Just("./".to_string()),
            Just("/proc/self/cwd/".to_string()),
        ],
        prop::collection::vec(fragment(), 0..8),
    )
        .prop_map(|(prefix, parts)| format!("{prefix}{}", parts.join("/")))
}

/// Where the path really is: its canonical form if it exists, else (for a missing tail) the
/// canonical deepest existing ancestor plus the tail.
fn really(p: &Path) -> PathBuf {
    let mut existing = p.to_path_buf();
    let mut tail = Vec::new();
    while !existing.exists() {
        match (existing.file_name(), existing.parent()) {
            (Some(n), Some(parent)) => {
                tail.push(n.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => break,
        }
    }
    let mut out = std::fs::canonicalize(&existing).unwrap_or(existing);
    for n in tail.into_iter().rev() {
        out.push(n);
    }
    out
}

#[test]
fn allowed_paths_are_really_inside_the_scope() {
    let w = world();
    let root = w.root.to_string_lossy().into_owned();
    let scope_root = w.root.join("scope");
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 3000,
        ..ProptestConfig::default()
    });
    let allowed = std::cell::Cell::new(0usize);
    runner
        .run(&raw_path(root), |raw| {
            if let Ok(p) = resolve(&raw, &w.ctx) {
                prop_assert!(p.is_absolute(), "{raw:?} -> {p:?}");
                if w.scope.check(&p, Access::Write).is_ok() {
                    allowed.set(allowed.get() + 1);
                    prop_assert!(p.starts_with(&scope_root), "{raw:?} -> {p:?}");
                    // /proc is never inside a scope; anything allowed is really there.
                    let real = really(&p);
                    prop_assert!(
                        real.starts_with(&scope_root),
                        "{raw:?} -> {p:?} really is {real:?}"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    // The generator must reach inside the scope often, or the property says nothing.
    assert!(allowed.get() > 100, "only {} allowed cases", allowed.get());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn resolve_never_panics_on_arbitrary_strings(raw in any::<String>()) {
        let ctx = ResolveContext { cwd: PathBuf::from("/tmp"), home: Some(PathBuf::from("/root")) };
        let _ = resolve(&raw, &ctx);
    }

    #[test]
    fn resolve_never_panics_on_pathish_bytes(raw in "[/.~$a-z%0-9\\\\:]{0,300}") {
        let ctx = ResolveContext { cwd: PathBuf::from("/tmp"), home: None };
        if let Ok(p) = resolve(&raw, &ctx) {
            prop_assert!(p.is_absolute());
            prop_assert!(p.as_os_str().len() <= 4096);
        }
    }
}

fn json_leaf() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        "(/|~|\\./|\\.\\./|file://|C:\\\\|\\$HOME|[a-z ]{0,3})[a-z./~\\\\]{0,8}"
            .prop_map(serde_json::Value::String),
    ]
}

fn json_tree() -> impl Strategy<Value = serde_json::Value> {
    json_leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-z/~]{1,6}", inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Every string leaf with its JSON pointer.
fn leaves(v: &serde_json::Value, pointer: String, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::String(s) => out.push((pointer, s.clone())),
        serde_json::Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                leaves(x, format!("{pointer}/{i}"), out);
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                leaves(x, format!("{pointer}/{k}"), out);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The value heuristic misses nothing: every string that looks like a path, anywhere in
    /// the arguments, is reported at its exact pointer — with no schema at all.
    #[test]
    fn every_path_looking_string_is_found(args in json_tree()) {
        use mcpjail::policy::detect::looks_like_path;
        let found = mcpjail::policy::scan_arguments(None, &args).unwrap();
        let mut all = Vec::new();
        leaves(&args, String::new(), &mut all);
        for (pointer, value) in all {
            let reported = found.iter().any(|a| a.pointer == pointer && a.value == value);
            prop_assert_eq!(reported, looks_like_path(&value), "{} = {:?}", pointer, value);
        }
        for a in &found {
            prop_assert!(args.pointer(&a.pointer).is_some(), "bad pointer {}", a.pointer);
        }
    }
}
