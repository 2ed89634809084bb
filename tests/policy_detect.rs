//! Path-argument detection on real servers' `tools/list` output (captured from
//! `@modelcontextprotocol/server-filesystem` and `mcp-server-git`, stored in fixtures/schemas/)
//! and on a fixture schema with nested, array, `$ref`, cyclic and misleading names.

use std::collections::BTreeMap;

use mcpjail::policy::{find_path_arguments, Detection, ToolInfo};
use serde_json::{json, Value};

fn load(name: &str) -> BTreeMap<String, ToolInfo> {
    let path = format!("{}/fixtures/schemas/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let tools: Vec<Value> = serde_json::from_str(&text).unwrap();
    tools
        .iter()
        .map(|t| {
            let info = ToolInfo::from_tool(t).unwrap();
            (info.name.clone(), info)
        })
        .collect()
}

fn sorted(v: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = v.iter().map(String::as_str).collect();
    out.sort();
    out
}

#[test]
fn server_filesystem_every_path_argument_is_found() {
    let tools = load("server-filesystem.tools.json");
    assert_eq!(tools.len(), 14);
    let expect: &[(&str, &[&str], bool)] = &[
        ("read_file", &["/path"], true),
        ("read_text_file", &["/path"], true),
        ("read_media_file", &["/path"], true),
        ("read_multiple_files", &["/paths/*"], true),
        ("write_file", &["/path"], false),
        ("edit_file", &["/path"], false),
        ("create_directory", &["/path"], false),
        ("list_directory", &["/path"], true),
        ("list_directory_with_sizes", &["/path"], true),
        ("directory_tree", &["/path"], true),
        ("move_file", &["/destination", "/source"], false),
        ("search_files", &["/path"], true),
        ("get_file_info", &["/path"], true),
        ("list_allowed_directories", &[], true),
    ];
    for (name, args, read_only) in expect {
        let t = &tools[*name];
        assert_eq!(sorted(&t.path_args), *args, "{name}");
        assert_eq!(t.read_only, *read_only, "{name}");
    }
    // edit_file's oldText/newText and search_files' pattern are not paths.
    let found = find_path_arguments(
        Some(&tools["edit_file"]),
        &json!({"path": "notes.md", "edits": [{"oldText": "a", "newText": "b"}]}),
    );
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].pointer, "/path");
    assert_eq!(found[0].detection, Detection::Schema);
    let found = find_path_arguments(
        Some(&tools["read_multiple_files"]),
        &json!({"paths": ["a.txt", "/etc/passwd", "../x"]}),
    );
    let pointers: Vec<&str> = found.iter().map(|a| a.pointer.as_str()).collect();
    assert_eq!(pointers, vec!["/paths/0", "/paths/1", "/paths/2"]);
    let found = find_path_arguments(
        Some(&tools["move_file"]),
        &json!({"source": "a.txt", "destination": "/tmp/b.txt"}),
    );
    assert_eq!(found.len(), 2);
}

#[test]
fn mcp_server_git_repo_path_and_files() {
    let tools = load("mcp-server-git.tools.json");
    assert_eq!(sorted(&tools["git_status"].path_args), vec!["/repo_path"]);
    assert!(tools["git_status"].read_only);
    assert_eq!(
        sorted(&tools["git_add"].path_args),
        vec!["/files/*", "/repo_path"]
    );
    assert!(!tools["git_add"].read_only);
    for t in tools.values() {
        assert!(
            t.path_args.contains(&"/repo_path".to_string()),
            "{} lacks repo_path",
            t.name
        );
        // Commit messages, branch names and shas are not paths.
        for p in &t.path_args {
            assert!(
                ![
                    "/message",
                    "/branch_name",
                    "/revision",
                    "/contains",
                    "/base_branch"
                ]
                .contains(&p.as_str()),
                "{}: {p}",
                t.name
            );
        }
    }
    // git_diff's `target` is a ref: weakly marked, so `main` is not a path but `../x` is.
    let diff = &tools["git_diff"];
    let found = find_path_arguments(Some(diff), &json!({"repo_path": "/r", "target": "main"}));
    assert_eq!(found.len(), 1);
    let found = find_path_arguments(Some(diff), &json!({"repo_path": "/r", "target": "../x"}));
    assert_eq!(found.len(), 2);
}

#[test]
fn nested_refs_arrays_and_misleading_names() {
    let tools = load("tricky.tools.json");
    let t = &tools["bundle"];
    let got = sorted(&t.path_args);
    for want in [
        "/specs/*/filePath",
        "/tree/location",
        "/tree/children/*/location",
        "/output",
        "/workDir",
        "/mapping/*",
        "/options/cwd",
        "/link",
    ] {
        assert!(got.contains(&want), "{want} missing from {got:?}");
    }
    for not in [
        "/profile",
        "/filesize",
        "/targeting",
        "/compile",
        "/specs/*/fileSize",
        "/specs/*/encoding",
        "/options/query",
    ] {
        assert!(!got.contains(&not), "{not} wrongly in {got:?}");
    }
    let args = json!({
        "specs": [{"filePath": "in/a.csv", "fileSize": 3, "encoding": "utf8"}],
        "tree": {"location": "x.d", "children": [{"location": "y.d", "children": []}]},
        "profile": "/etc/shadow",
        "mapping": {"k": "out.d"},
        "link": "https://example.com/doc"
    });
    let found = find_path_arguments(Some(t), &args);
    let mut got: Vec<(&str, Detection)> = found
        .iter()
        .map(|a| (a.pointer.as_str(), a.detection))
        .collect();
    got.sort_by_key(|g| g.0);
    assert_eq!(
        got,
        vec![
            ("/mapping/k", Detection::Schema),
            // A misleading name does not hide a path-looking value.
            ("/profile", Detection::Value),
            ("/specs/0/filePath", Detection::Schema),
            ("/tree/children/0/location", Detection::Schema),
            ("/tree/location", Detection::Schema),
        ]
    );
    let c = &tools["cyclic"];
    assert!(c.read_only);
    assert!(c.path_args.contains(&"/path".to_string()));
    assert!(c.path_args.contains(&"/b/a/path".to_string()));
}
