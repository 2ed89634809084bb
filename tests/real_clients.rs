//! Real clients against real servers, direct and through `mcpjail-proxy` (issue 2, "Real
//! clients"): the Python `mcp` SDK and the TypeScript `@modelcontextprotocol/sdk`, each in front
//! of the fixture server, `@modelcontextprotocol/server-filesystem` and `mcp-server-git`.
//!
//! For every client × server pair one direct run and one proxied run execute the same script,
//! so each server process is started once per run and every assertion reads that run's output:
//! - initialize works, and `tools/list` through the proxy equals the direct listing;
//! - in-scope reads and writes succeed, and writes really change the files on disk;
//! - every out-of-scope form (absolute, `../`, relative `../`, an escaping symlink, the sibling
//!   prefix `<scope>-evil`, `file://`, `~`, percent-encoded `%2e%2e`, a NUL byte,
//!   `/proc/self/root/…`, `//` and `/.` segments) is refused by
//!   the proxy — its `_meta["mcpjail/denial"]` marker, the path named in the text — and never
//!   reaches the server: for the fixture, no `FIXTURE-CALL` line for it; for the real servers,
//!   the answer is the proxy's, not the server's own refusal;
//! - control: the same hostile calls DIRECT to the fixture really read (and write) outside the
//!   scope, so the attempts are real.
//!
//! The proxy runs with its defaults, so the servers are also jailed; the jail has its own
//! suites (`escape`, `functional_jailed`). Needs `scripts/test-deps.sh`.

mod support;

use serde_json::{json, Value};
use support::*;

/// Common per-run environment: HOME is the tree's own, so `~` attacks target a known file.
fn env(tree: &Tree) -> Vec<(&'static str, String)> {
    vec![("HOME", tree.home())]
}

/// The canonical path a hostile value points at (what the proxy should name), by form.
fn expected_target(tree: &Tree, form: &str, value: &str, rel_target: &str) -> String {
    if form.starts_with("sibling") {
        value.to_string()
    } else if form.starts_with('~') {
        tree.p("home/secret.txt")
    } else if rel_target.is_empty() {
        tree.p("outside")
    } else {
        tree.p(&format!("outside/{rel_target}"))
    }
}

/// Checks that step `i` of the proxied run is the proxy's own refusal of `value`.
fn assert_proxy_denied(run: &Run, i: usize, form: &str, value: &str, expected: &str) {
    let denial = run.denial(i).unwrap_or_else(|| {
        panic!(
            "{}: step {i} ({form}: {value:?}) was not refused by the proxy: {}",
            run.label,
            run.result(i)
        )
    });
    assert!(
        run.is_error(i),
        "{}: a denial must be isError: {}",
        run.label,
        run.result(i)
    );
    let named = denial["path"].as_str().unwrap_or_default();
    // The proxy names the resolved target, or the raw value when it cannot be resolved (NUL).
    assert!(
        named == expected || named == value,
        "{}: step {i} ({form}): denial names {named:?}, expected {expected:?} or {value:?}",
        run.label
    );
    let text = run.text(i);
    assert!(
        text.contains(named),
        "{}: step {i} ({form}): the denial text does not name the path {named:?}: {text}",
        run.label
    );
    for secret in [SECRET, EVIL, HOME_SECRET] {
        assert!(
            !text.contains(secret),
            "{}: step {i} leaked {secret}",
            run.label
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The fixture server: its FIXTURE-CALL lines prove what reached it.

fn fixture_pair(client: Client) {
    let tree = Tree::new();
    let server = vec![FIXTURE.to_string(), tree.scope()];
    let hostile = hostile_paths(&tree, "secret.txt");

    let script = |label: &str| {
        let mut steps = vec![
            list_tools(),
            call("read_file", json!({"path": tree.p("scope/a.txt")})),
            call(
                "write_file",
                json!({"path": tree.p(&format!("scope/{label}-new.txt")), "content": format!("written {label}")}),
            ),
            call("read_file", json!({"path": "sub/b.txt"})),
        ];
        for (_, value) in &hostile {
            steps.push(call("read_file", json!({ "path": value })));
        }
        // A write outside, and a nested array argument with one bad element.
        steps.push(call(
            "write_file",
            json!({"path": tree.p(&format!("outside/{label}-pwned.txt")), "content": "pwned"}),
        ));
        steps.push(call(
            "read_many",
            json!({"paths": [tree.p("scope/a.txt"), tree.p("outside/secret.txt")]}),
        ));
        // resources/read with file:// URIs is checked too.
        steps.push(read_resource(&format!("file://{}", tree.p("scope/a.txt"))));
        steps.push(read_resource(&format!(
            "file://{}",
            tree.p("outside/secret.txt")
        )));
        steps.push(read_resource(&format!(
            "file://{}/%2e%2e/outside/secret.txt",
            tree.scope()
        )));
        json!({ "steps": steps })
    };
    let first_hostile = 4;
    let write_out = first_hostile + hostile.len();
    let nested = write_out + 1;
    let resource_in = nested + 1;
    let resource_out = nested + 2;
    let resource_encoded = nested + 3;

    let direct = run_client(
        client,
        "fixture direct",
        &server,
        &script("direct"),
        &env(&tree),
        &tree.path("scope"),
    );
    let proxied = run_client(
        client,
        "fixture proxied",
        &proxied(&[], &server),
        &script("proxied"),
        &env(&tree),
        &tree.path("scope"),
    );

    assert_eq!(direct.init["serverInfo"]["name"], "mcpjail-fixture-files");
    assert_eq!(proxied.init["serverInfo"], direct.init["serverInfo"]);
    assert_eq!(
        proxied.tools(0),
        direct.tools(0),
        "tools/list through the proxy differs from direct"
    );
    assert!(!direct.tools(0).as_array().unwrap().is_empty());

    for run in [&direct, &proxied] {
        let label = if run.label.contains("direct") {
            "direct"
        } else {
            "proxied"
        };
        assert_eq!(run.ok_text(1), "alpha", "{}", run.label);
        run.ok_text(2);
        assert_eq!(
            tree.read(&format!("scope/{label}-new.txt")),
            format!("written {label}")
        );
        assert_eq!(
            run.ok_text(3),
            "beta",
            "{}: relative path in scope",
            run.label
        );
    }

    // Control: direct, the forms the fixture interprets itself really reach the secrets; every
    // hostile call reached the server.
    for (k, (form, value)) in hostile.iter().enumerate() {
        let text = direct.text(first_hostile + k);
        match *form {
            f if f.starts_with("sibling") => assert_eq!(text, EVIL, "control {form}"),
            "absolute path outside the scope"
            | "../ traversal from inside the scope"
            | "relative ../ traversal from the server's cwd"
            | "symlink inside the scope pointing out" => {
                assert_eq!(text, SECRET, "control {form}: {value}")
            }
            // file://, ~, %2e%2e and NUL mean nothing to the fixture's plain fs calls; the
            // real servers below are where those forms matter.
            _ => {}
        }
    }
    assert_eq!(
        tree.read("outside/direct-pwned.txt"),
        "pwned",
        "control: direct write outside"
    );
    assert!(
        direct.text(nested).contains(SECRET),
        "control: nested array read"
    );
    let direct_calls = direct.fixture_calls();
    assert_eq!(
        direct_calls.len(),
        nested,
        "control: every tool call reached the fixture directly"
    );

    // Through the proxy: each hostile call is refused by the proxy...
    for (k, (form, value)) in hostile.iter().enumerate() {
        let expected = expected_target(&tree, form, value, "secret.txt");
        assert_proxy_denied(&proxied, first_hostile + k, form, value, &expected);
    }
    let outside_write = tree.p("outside/proxied-pwned.txt");
    assert_proxy_denied(
        &proxied,
        write_out,
        "write outside",
        &outside_write,
        &outside_write,
    );
    assert!(
        !tree.path("outside/proxied-pwned.txt").exists(),
        "the denied write happened"
    );
    let secret = tree.p("outside/secret.txt");
    assert_proxy_denied(&proxied, nested, "nested array element", &secret, &secret);

    // resources/read: in scope answered by the server, outside refused by the proxy with a
    // JSON-RPC error carrying the same structured denial.
    for run in [&direct, &proxied] {
        assert_eq!(
            run.result(resource_in)["contents"][0]["text"],
            "alpha",
            "{}",
            run.label
        );
    }
    for (i, form) in [
        (resource_out, "file:// outside"),
        (resource_encoded, "file:// with %2e%2e"),
    ] {
        let err = proxied.error(i).unwrap_or_else(|| {
            panic!(
                "{}: resources/read {form} was not refused: {}",
                proxied.label,
                proxied.result(i)
            )
        });
        let denial = &err["data"]["mcpjail/denial"];
        assert_eq!(
            denial["path"],
            secret.as_str(),
            "{}: {form}: {err}",
            proxied.label
        );
        assert!(
            err["message"]
                .as_str()
                .unwrap_or_default()
                .contains(&secret),
            "{form}: {err}"
        );
    }
    assert_eq!(
        proxied.fixture_reads(),
        [json!({"uri": format!("file://{}", tree.p("scope/a.txt"))})],
        "{}: only the in-scope resources/read may reach the fixture",
        proxied.label
    );

    // ...and only the three in-scope calls ever reached the server.
    let reached: Vec<Value> = proxied.fixture_calls();
    let allowed: Vec<Value> = (1..=3)
        .map(|i| {
            let step = &script("proxied")["steps"][i];
            json!({"tool": step["tool"], "arguments": step["arguments"]})
        })
        .collect();
    assert_eq!(
        reached, allowed,
        "{}: calls that reached the fixture",
        proxied.label
    );
}

#[test]
fn fixture_python_client() {
    fixture_pair(Client::Py);
}

#[test]
fn fixture_typescript_client() {
    fixture_pair(Client::Ts);
}

// ---------------------------------------------------------------------------------------------
// @modelcontextprotocol/server-filesystem (npm), allowed directory = the scope.

fn server_filesystem_pair(client: Client) {
    let tree = Tree::new();
    let server = vec![server_filesystem(), tree.scope()];
    let hostile = hostile_paths(&tree, "secret.txt");
    let script = |label: &str| {
        let mut steps = vec![
            list_tools(),
            call("read_text_file", json!({"path": tree.p("scope/a.txt")})),
            call(
                "write_file",
                json!({"path": tree.p(&format!("scope/{label}-new.txt")), "content": format!("written {label}")}),
            ),
            call("list_directory", json!({"path": tree.scope()})),
        ];
        for (_, value) in &hostile {
            steps.push(call("read_text_file", json!({ "path": value })));
        }
        steps.push(call(
            "write_file",
            json!({"path": tree.p(&format!("outside/{label}-pwned.txt")), "content": "pwned"}),
        ));
        json!({ "steps": steps })
    };
    let first_hostile = 4;
    let write_out = first_hostile + hostile.len();

    let direct = run_client(
        client,
        "server-filesystem direct",
        &server,
        &script("direct"),
        &env(&tree),
        &tree.path("scope"),
    );
    let proxied = run_client(
        client,
        "server-filesystem proxied",
        &proxied(&[], &server),
        &script("proxied"),
        &env(&tree),
        &tree.path("scope"),
    );

    assert_eq!(proxied.init["serverInfo"], direct.init["serverInfo"]);
    assert_eq!(
        proxied.init["protocolVersion"],
        direct.init["protocolVersion"]
    );
    assert_eq!(
        proxied.tools(0),
        direct.tools(0),
        "tools/list through the proxy differs from direct"
    );
    let names: Vec<&str> = direct
        .tools(0)
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"read_text_file") && names.contains(&"write_file"),
        "{names:?}"
    );

    for run in [&direct, &proxied] {
        let label = if run.label.contains("direct") {
            "direct"
        } else {
            "proxied"
        };
        assert_eq!(run.ok_text(1), "alpha", "{}", run.label);
        run.ok_text(2);
        assert_eq!(
            tree.read(&format!("scope/{label}-new.txt")),
            format!("written {label}")
        );
        assert!(run.ok_text(3).contains("a.txt"), "{}", run.label);
    }

    for (k, (form, value)) in hostile.iter().enumerate() {
        let i = first_hostile + k;
        let expected = expected_target(&tree, form, value, "secret.txt");
        assert_proxy_denied(&proxied, i, form, value, &expected);
        // The refusal is the proxy's, not the server's own: the direct answer (whatever
        // server-filesystem made of the attempt) carries no proxy marker and differs.
        assert!(direct.denial(i).is_none());
        assert_ne!(
            proxied.text(i),
            direct.text(i),
            "{form}: the proxied answer is the server's own"
        );
    }
    let outside_write = tree.p("outside/proxied-pwned.txt");
    assert_proxy_denied(
        &proxied,
        write_out,
        "write outside",
        &outside_write,
        &outside_write,
    );
    assert!(!tree.path("outside/proxied-pwned.txt").exists());
}

#[test]
fn server_filesystem_python_client() {
    server_filesystem_pair(Client::Py);
}

#[test]
fn server_filesystem_typescript_client() {
    server_filesystem_pair(Client::Ts);
}

// ---------------------------------------------------------------------------------------------
// mcp-server-git (PyPI), --repository = the scope.

fn server_git_pair(client: Client) {
    let tree = Tree::with_git();
    let scope = tree.scope();
    let server = vec![server_git(), "--repository".to_string(), scope.clone()];
    let hostile = hostile_paths(&tree, "");
    let script = |label: &str| {
        let mut steps = vec![
            list_tools(),
            call("git_status", json!({"repo_path": scope})),
            call(
                "git_add",
                json!({"repo_path": scope, "files": [format!("{label}.txt")]}),
            ),
            call(
                "git_commit",
                json!({"repo_path": scope, "message": format!("{label} commit")}),
            ),
            call("git_log", json!({"repo_path": scope, "max_count": 5})),
        ];
        for (_, value) in &hostile {
            steps.push(call("git_log", json!({ "repo_path": value })));
        }
        json!({ "steps": steps })
    };
    let first_hostile = 5;

    std::fs::write(tree.path("scope/direct.txt"), "direct").unwrap();
    let direct = run_client(
        client,
        "mcp-server-git direct",
        &server,
        &script("direct"),
        &env(&tree),
        &tree.path("scope"),
    );
    std::fs::write(tree.path("scope/proxied.txt"), "proxied").unwrap();
    let proxied = run_client(
        client,
        "mcp-server-git proxied",
        &proxied(&[], &server),
        &script("proxied"),
        &env(&tree),
        &tree.path("scope"),
    );

    assert_eq!(proxied.init["serverInfo"], direct.init["serverInfo"]);
    assert_eq!(
        proxied.tools(0),
        direct.tools(0),
        "tools/list through the proxy differs from direct"
    );

    for run in [&direct, &proxied] {
        let label = if run.label.contains("direct") {
            "direct"
        } else {
            "proxied"
        };
        assert!(
            run.ok_text(1).contains(&format!("{label}.txt")),
            "{}: status shows the new file",
            run.label
        );
        run.ok_text(2);
        run.ok_text(3);
        assert!(
            run.ok_text(4).contains(&format!("{label} commit")),
            "{}",
            run.label
        );
    }
    // The commits really happened, in the repository on disk.
    let log = git(&tree.path("scope"), &["log", "--format=%s"]);
    assert_eq!(
        log.lines().take(2).collect::<Vec<_>>(),
        ["proxied commit", "direct commit"]
    );

    for (k, (form, value)) in hostile.iter().enumerate() {
        let i = first_hostile + k;
        let expected = expected_target(&tree, form, value, "");
        assert_proxy_denied(&proxied, i, form, value, &expected);
        assert!(direct.denial(i).is_none());
        assert_ne!(
            proxied.text(i),
            direct.text(i),
            "{form}: the proxied answer is the server's own"
        );
    }
}

#[test]
fn server_git_python_client() {
    server_git_pair(Client::Py);
}

#[test]
fn server_git_typescript_client() {
    server_git_pair(Client::Ts);
}

// ---------------------------------------------------------------------------------------------
// Client roots: the server's roots/list request crosses the proxy to the real client and the
// answer gets back (server→client requests pass through). server-filesystem replaces its
// allowed directories with the client's roots, so its own listing shows whether they arrived;
// and the proxy narrows its own scope to those roots (a call outside them is its refusal).

fn roots_pair(client: Client) {
    let tree = Tree::new();
    let sub = tree.p("scope/sub");
    let server = proxied(&[], &[server_filesystem(), tree.scope()]);
    let script = json!({
        "roots": [sub],
        "wait_initial_roots": true,
        "steps": [
            // The server applies roots asynchronously after the reply: repeat until it has.
            {"tool": "list_allowed_directories", "arguments": {}, "until_text": format!("Allowed directories:\n{sub}"), "max_tries": 5000},
            call("list_allowed_directories", json!({})),
            call("read_text_file", json!({"path": tree.p("scope/sub/b.txt")})),
            call("read_text_file", json!({"path": tree.p("scope/a.txt")})),
        ]
    });
    let run = run_client(
        client,
        "server-filesystem roots proxied",
        &server,
        &script,
        &env(&tree),
        &tree.path("scope"),
    );
    assert!(
        run.done["roots_requests"].as_u64().unwrap_or(0) >= 1,
        "{}: no roots/list reached the client",
        run.label
    );
    // "Allowed directories:\n<dir>": the whole last line, since the scope is a prefix of sub.
    let tries = run.steps[0]["tries"].as_u64().unwrap_or(0);
    assert!(
        tries < 5000,
        "{}: the server never applied the client's roots",
        run.label
    );
    let allowed = run.ok_text(1);
    assert_eq!(
        allowed.lines().last(),
        Some(sub.as_str()),
        "{}: the client's roots did not arrive: {allowed}",
        run.label
    );
    assert_eq!(run.ok_text(2), "beta");
    // Outside the client's roots (though inside the server's argv scope): the proxy narrows its
    // scope to the roots, so it refuses the call itself.
    let a = tree.p("scope/a.txt");
    assert_proxy_denied(&run, 3, "outside the client's roots", &a, &a);
    assert_eq!(
        run.denial(3).unwrap()["roots"],
        json!([sub]),
        "{}: the denial names the narrowed roots",
        run.label
    );
}

#[test]
fn roots_python_client() {
    roots_pair(Client::Py);
}

#[test]
fn roots_typescript_client() {
    roots_pair(Client::Ts);
}

// ---------------------------------------------------------------------------------------------
// The stateless 2026-07-28 core with a real client: the Python SDK connects with
// `server/discover` and stamps every request's `_meta`; mcp-server-git (on mcp 2.x) speaks it.
// A proxy denial in this era must itself be a valid 2026-07-28 result (e.g. `resultType`, which
// servers MUST include), or the SDK rejects the whole answer instead of showing the refusal.

#[test]
fn modern_era_python_client_server_git() {
    let tree = Tree::with_git();
    let scope = tree.scope();
    let server = vec![server_git(), "--repository".to_string(), scope.clone()];
    let script = json!({"era": "modern", "steps": [
        list_tools(),
        call("git_status", json!({"repo_path": scope})),
        call("git_log", json!({"repo_path": tree.p("outside")})),
        call("git_log", json!({"repo_path": format!("{scope}/../outside")})),
        call("git_log", json!({"repo_path": scope, "max_count": 1})),
    ]});
    let direct = run_client(
        Client::Py,
        "modern mcp-server-git direct",
        &server,
        &script,
        &env(&tree),
        &tree.path("scope"),
    );
    let proxied = run_client(
        Client::Py,
        "modern mcp-server-git proxied",
        &proxied(&[], &server),
        &script,
        &env(&tree),
        &tree.path("scope"),
    );
    for run in [&direct, &proxied] {
        assert!(
            run.init["supportedVersions"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("2026-07-28"))),
            "{}: not a 2026-07-28 session: {}",
            run.label,
            run.init
        );
        assert!(run.ok_text(1).contains("On branch main"), "{}", run.text(1));
        assert!(
            run.ok_text(4).contains("initial scope commit"),
            "{}",
            run.text(4)
        );
    }
    assert_eq!(
        proxied.tools(0),
        direct.tools(0),
        "tools/list through the proxy differs from direct"
    );
    let outside = tree.p("outside");
    for i in [2, 3] {
        assert_proxy_denied(&proxied, i, "outside the repository", &outside, &outside);
        assert!(direct.denial(i).is_none());
        assert_eq!(
            proxied.result(i)["resultType"],
            "complete",
            "a 2026-07-28 result names its type"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// `--deny-as error`: the refusal is a JSON-RPC error, and both SDKs surface it with its data.

fn deny_as_error(client: Client) {
    let tree = Tree::new();
    let server = vec![FIXTURE.to_string(), tree.scope()];
    let secret = tree.p("outside/secret.txt");
    let script = json!({"steps": [
        call("read_file", json!({"path": tree.p("scope/a.txt")})),
        call("read_file", json!({"path": format!("{}/../outside/secret.txt", tree.scope())})),
    ]});
    let run = run_client(
        client,
        "fixture --deny-as error",
        &proxied(&["--deny-as", "error"], &server),
        &script,
        &env(&tree),
        &tree.path("scope"),
    );
    assert_eq!(run.ok_text(0), "alpha");
    let err = run
        .error(1)
        .unwrap_or_else(|| panic!("{}: no JSON-RPC error: {:?}", run.label, run.steps[1]));
    assert!(err["code"].as_i64().is_some_and(|c| c < 0), "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&secret),
        "{err}"
    );
    assert_eq!(
        err["data"]["mcpjail/denial"]["path"],
        secret.as_str(),
        "{err}"
    );
    let reached: Vec<String> = run
        .fixture_calls()
        .iter()
        .map(|c| c["arguments"]["path"].to_string())
        .collect();
    assert_eq!(
        reached,
        [json!(tree.p("scope/a.txt")).to_string()],
        "only the allowed call reached the fixture"
    );
}

#[test]
fn deny_as_error_python_client() {
    deny_as_error(Client::Py);
}

#[test]
fn deny_as_error_typescript_client() {
    deny_as_error(Client::Ts);
}
