//! Cost of the per-call policy work the proxy adds (detection + resolve + check), measured,
//! not asserted: `cargo test --release --test policy_perf -- --ignored --nocapture`.

use std::time::Instant;

use mcpjail::policy::{
    check_argument, derive_scope, find_path_arguments, DeriveInputs, ResolveContext, ToolInfo,
};
use serde_json::json;

#[test]
#[ignore = "a measurement; run with --release --ignored --nocapture"]
fn per_call_policy_cost() {
    let d = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(d.path()).unwrap();
    std::fs::create_dir_all(root.join("proj/src/deep/er")).unwrap();
    std::fs::write(root.join("proj/src/deep/er/main.rs"), "").unwrap();
    let derived = derive_scope(&DeriveInputs {
        name: "perf".into(),
        command: vec![
            "/bin/true".into(),
            root.join("proj").to_string_lossy().into(),
        ],
        cwd: root.clone(),
        home: Some(root.join("home")),
        ..Default::default()
    })
    .unwrap();
    let tool = ToolInfo::from_tool(&json!({"name": "read_file",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "integer"}}},
        "annotations": {"readOnlyHint": true}}))
    .unwrap();
    let ctx = ResolveContext {
        cwd: root.join("proj"),
        home: Some(root.join("home")),
    };
    let args = json!({"path": root.join("proj/src/deep/er/main.rs"), "head": 10});
    let n = 100_000;
    // Warm the deny-glob cache.
    let _ = check_argument(
        &derived.scope,
        Some(&tool),
        &find_path_arguments(Some(&tool), &args)[0],
        &ctx,
    );
    let t = Instant::now();
    let mut allowed = 0;
    for _ in 0..n {
        for a in find_path_arguments(Some(&tool), &args) {
            if check_argument(&derived.scope, Some(&tool), &a, &ctx).is_ok() {
                allowed += 1;
            }
        }
    }
    let per = t.elapsed() / n;
    assert_eq!(allowed, n);
    eprintln!("detect + resolve + check, one path argument (6 components, {} deny globs): {per:?} per call", derived.scope.deny.len());
    let t = Instant::now();
    for _ in 0..n {
        let _ = find_path_arguments(Some(&tool), &args);
    }
    eprintln!("detection alone: {:?} per call", t.elapsed() / n);
    let raw = args["path"].as_str().unwrap();
    let t = Instant::now();
    for _ in 0..n {
        let _ = mcpjail::policy::resolve(raw, &ctx);
    }
    eprintln!("resolve alone: {:?} per call", t.elapsed() / n);
    let p = mcpjail::policy::resolve(raw, &ctx).unwrap();
    let t = Instant::now();
    for _ in 0..n {
        let _ = derived.scope.check(&p, mcpjail::policy::Access::Read);
    }
    eprintln!("Scope::check alone: {:?} per call", t.elapsed() / n);
}
