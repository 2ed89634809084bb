//! The functional suite (issue 3): real servers run through `mcpjail-proxy` with the kernel jail
//! on, driven by real SDK clients, and every in-scope operation they offer still works — with
//! its effect checked on disk, not only in the server's answer.
//!
//! - `@modelcontextprotocol/server-filesystem`: read, read many, write, edit, create directory,
//!   move, list (plain and with sizes), directory tree, search, file info, allowed directories.
//! - `mcp-server-git`: status, unstaged/staged diff, add, commit, log, branch create/checkout/list,
//!   show, diff against a ref.
//! - `@modelcontextprotocol/server-memory`: create entities/relations, add observations, read,
//!   search, open — with `MEMORY_FILE_PATH` inside the scope, passed by the client's environment
//!   and `--env-keep MEMORY_FILE_PATH` through the jail's environment scrub.
//!
//! The proxy runs with `--require-full`: it refuses to start unless every jail layer is fully
//! enforced, so a green run here means the servers worked *confined*, not that the jail was
//! silently off. Needs `scripts/test-deps.sh`.

mod support;

use serde_json::json;
use support::*;

/// Proxy flags for every run: the jail must be fully on.
const JAILED: &[&str] = &["--require-full"];

fn env(tree: &Tree) -> Vec<(&'static str, String)> {
    vec![("HOME", tree.home())]
}

fn filesystem_jailed(client: Client) {
    let tree = Tree::new();
    let s = |rel: &str| tree.p(&format!("scope/{rel}"));
    let server = proxied(JAILED, &[server_filesystem(), tree.scope()]);
    let script = json!({"steps": [
        call("list_allowed_directories", json!({})),                                    // 0
        call("read_text_file", json!({"path": s("a.txt")})),                            // 1
        call("read_multiple_files", json!({"paths": [s("a.txt"), s("sub/b.txt")]})),    // 2
        call("write_file", json!({"path": s("new.txt"), "content": "line one\nline two\n"})), // 3
        call("edit_file", json!({"path": s("new.txt"),
            "edits": [{"oldText": "line two", "newText": "line 2"}]})),                 // 4
        call("create_directory", json!({"path": s("dir/nested")})),                     // 5
        call("move_file", json!({"source": s("new.txt"), "destination": s("dir/nested/moved.txt")})), // 6
        call("list_directory", json!({"path": tree.scope()})),                          // 7
        call("list_directory_with_sizes", json!({"path": tree.scope()})),               // 8
        call("directory_tree", json!({"path": s("dir")})),                              // 9
        call("search_files", json!({"path": tree.scope(), "pattern": "**/moved*"})),    // 10
        call("get_file_info", json!({"path": s("a.txt")})),                             // 11
        call("read_text_file", json!({"path": s("dir/nested/moved.txt"), "head": 1})),  // 12
        call("read_text_file", json!({"path": "sub/b.txt"})),                           // 13 relative to cwd
    ]});
    let run = run_client(
        client,
        "server-filesystem jailed",
        &server,
        &script,
        &env(&tree),
        &tree.path("scope"),
    );

    assert!(run.ok_text(0).contains(&tree.scope()), "{}", run.text(0));
    assert_eq!(run.ok_text(1), "alpha");
    let many = run.ok_text(2);
    assert!(many.contains("alpha") && many.contains("beta"), "{many}");
    run.ok_text(3);
    assert!(
        run.ok_text(4).contains("+line 2"),
        "edit_file returns a diff: {}",
        run.text(4)
    );
    run.ok_text(5);
    run.ok_text(6);
    let listing = run.ok_text(7);
    assert!(
        listing.contains("[FILE] a.txt") && listing.contains("[DIR] dir"),
        "{listing}"
    );
    assert!(run.ok_text(8).contains("a.txt"));
    assert!(run.ok_text(9).contains("moved.txt"), "{}", run.text(9));
    assert!(run.ok_text(10).contains("moved.txt"), "{}", run.text(10));
    assert!(run.ok_text(11).contains("size"), "{}", run.text(11));
    assert_eq!(run.ok_text(12).trim_end(), "line one");
    assert_eq!(run.ok_text(13), "beta");

    // The effects are real: written, edited, moved.
    assert_eq!(
        tree.read("scope/dir/nested/moved.txt"),
        "line one\nline 2\n"
    );
    assert!(
        !tree.path("scope/new.txt").exists(),
        "move_file left the source behind"
    );
}

#[test]
fn server_filesystem_jailed_typescript_client() {
    filesystem_jailed(Client::Ts);
}

#[test]
fn server_filesystem_jailed_python_client() {
    filesystem_jailed(Client::Py);
}

fn git_jailed(client: Client) {
    let tree = Tree::with_git();
    let scope = tree.scope();
    let repo = tree.path("scope");
    // Work for the server to find: a modified tracked file and a new one.
    std::fs::write(repo.join("a.txt"), "alpha\nmore from the test\n").unwrap();
    std::fs::write(repo.join("new.txt"), "new file\n").unwrap();
    let server = proxied(
        JAILED,
        &[server_git(), "--repository".to_string(), scope.clone()],
    );
    let r = |extra: serde_json::Value| {
        let mut args = json!({ "repo_path": scope });
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        args
    };
    let script = json!({"steps": [
        call("git_status", r(json!({}))),                                              // 0
        call("git_diff_unstaged", r(json!({}))),                                       // 1
        call("git_add", r(json!({"files": ["a.txt", "new.txt"]}))),                    // 2
        call("git_diff_staged", r(json!({}))),                                         // 3
        call("git_commit", r(json!({"message": "functional commit"}))),                // 4
        call("git_log", r(json!({"max_count": 5}))),                                   // 5
        call("git_create_branch", r(json!({"branch_name": "feature"}))),               // 6
        call("git_checkout", r(json!({"branch_name": "feature"}))),                    // 7
        call("git_branch", r(json!({"branch_type": "local"}))),                        // 8
        call("git_show", r(json!({"revision": "HEAD"}))),                              // 9
        call("git_diff", r(json!({"target": "main"}))),                                // 10
        call("git_status", r(json!({}))),                                              // 11
    ]});
    let run = run_client(
        client,
        "mcp-server-git jailed",
        &server,
        &script,
        &env(&tree),
        &repo,
    );

    let status = run.ok_text(0);
    assert!(
        status.contains("a.txt") && status.contains("new.txt"),
        "{status}"
    );
    assert!(
        run.ok_text(1).contains("+more from the test"),
        "{}",
        run.text(1)
    );
    run.ok_text(2);
    let staged = run.ok_text(3);
    assert!(
        staged.contains("+more from the test") && staged.contains("new.txt"),
        "{staged}"
    );
    run.ok_text(4);
    assert!(
        run.ok_text(5).contains("functional commit"),
        "{}",
        run.text(5)
    );
    run.ok_text(6);
    run.ok_text(7);
    assert!(run.ok_text(8).contains("feature"), "{}", run.text(8));
    assert!(
        run.ok_text(9).contains("functional commit"),
        "{}",
        run.text(9)
    );
    run.ok_text(10);
    assert!(
        run.ok_text(11).contains("nothing to commit"),
        "{}",
        run.text(11)
    );

    // The repository on disk has the commit, and the branch is checked out.
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s"]).trim(),
        "functional commit"
    );
    assert_eq!(git(&repo, &["show", "HEAD:new.txt"]), "new file\n");
    assert_eq!(git(&repo, &["branch", "--show-current"]).trim(), "feature");
}

#[test]
fn server_git_jailed_python_client() {
    git_jailed(Client::Py);
}

#[test]
fn server_git_jailed_typescript_client() {
    git_jailed(Client::Ts);
}

fn memory_jailed(client: Client) {
    let tree = Tree::new();
    let memory_file = tree.p("scope/memory.jsonl");
    // server-memory has no path arguments, so the scope is given explicitly: the directory its
    // file lives in (it writes `<file>.<hash>.tmp` beside the file and renames it over).
    let server = proxied(
        &[
            "--require-full",
            "--env-keep",
            "MEMORY_FILE_PATH",
            "--allow-write",
            &tree.scope(),
        ],
        &[server_memory()],
    );
    let script = json!({"steps": [
        call("create_entities", json!({"entities": [
            {"name": "mcpjail", "entityType": "project", "observations": ["confines MCP servers"]},
            {"name": "Landlock", "entityType": "kernel feature", "observations": ["ABI 7 here"]}
        ]})),                                                                          // 0
        call("create_relations", json!({"relations": [
            {"from": "mcpjail", "to": "Landlock", "relationType": "uses"}
        ]})),                                                                          // 1
        call("add_observations", json!({"observations": [
            {"entityName": "mcpjail", "contents": ["written in Rust"]}
        ]})),                                                                          // 2
        call("read_graph", json!({})),                                                 // 3
        call("search_nodes", json!({"query": "Rust"})),                                // 4
        call("open_nodes", json!({"names": ["Landlock"]})),                            // 5
    ]});
    let mut env = env(&tree);
    env.push(("MEMORY_FILE_PATH", memory_file.clone()));
    let run = run_client(
        client,
        "server-memory jailed",
        &server,
        &script,
        &env,
        &tree.path("scope"),
    );

    run.ok_text(0);
    run.ok_text(1);
    run.ok_text(2);
    let graph = run.ok_text(3);
    for needle in ["mcpjail", "Landlock", "uses", "written in Rust"] {
        assert!(graph.contains(needle), "read_graph lacks {needle}: {graph}");
    }
    assert!(run.ok_text(4).contains("mcpjail"), "{}", run.text(4));
    assert!(run.ok_text(5).contains("ABI 7 here"), "{}", run.text(5));

    // The graph went to MEMORY_FILE_PATH, inside the scope: proof the variable survived both the
    // client's and the jail's environment handling.
    let stored = tree.read("scope/memory.jsonl");
    for needle in ["mcpjail", "Landlock", "written in Rust"] {
        assert!(
            stored.contains(needle),
            "{memory_file} lacks {needle}: {stored}"
        );
    }
}

#[test]
fn server_memory_jailed_python_client() {
    memory_jailed(Client::Py);
}

#[test]
fn server_memory_jailed_typescript_client() {
    memory_jailed(Client::Ts);
}
