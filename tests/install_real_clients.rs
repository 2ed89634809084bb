//! `mcpjail install` as a real user meets it: a Claude Desktop config and a Codex config that
//! run the real `@modelcontextprotocol/server-filesystem` (and the fixture server), wrapped by
//! `install`, then each wrapped entry started by the real TypeScript SDK client (what Claude
//! Desktop, Claude Code and Cursor use) and the real Python SDK client, exactly from the
//! rewritten file: command + args + the entry's env. In-scope reads work; a read outside the
//! scope is refused by the proxy and never reaches the server. Needs `scripts/test-deps.sh`.

#[path = "support/mod.rs"]
mod support;

mod install_support;

use serde_json::json;

use install_support::{assert_ok, parse, text, Sandbox};
use support::{call, list_tools, run_client, server_filesystem, Client, FIXTURE};

/// argv, the client's own environment, and the entry's `env`.
type Launch = (
    Vec<String>,
    Vec<(&'static str, String)>,
    serde_json::Map<String, serde_json::Value>,
);

fn argv_env(sb: &Sandbox, dest: &str, toml: bool, holder: &[&str]) -> Launch {
    let doc = parse(toml, &text(&sb.read(dest)));
    let mut entry = &doc;
    for k in holder {
        entry = &entry[*k];
    }
    let mut argv = vec![entry["command"].as_str().unwrap().to_string()];
    argv.extend(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    let env = entry
        .get("env")
        .and_then(|e| e.as_object())
        .cloned()
        .unwrap_or_default();
    // What the clients pass besides the entry's env (the TS SDK's default environment).
    let base = vec![
        ("HOME", sb.home.display().to_string()),
        ("USER", "root".to_string()),
    ];
    (argv, base, env)
}

#[test]
fn wrapped_entries_work_with_the_real_sdk_clients() {
    let sb = Sandbox::new();
    let scope = sb.home.join("docs");
    std::fs::create_dir_all(&scope).unwrap();
    std::fs::write(scope.join("a.txt"), "alpha in scope\n").unwrap();
    let secret = sb.home.join("secret.txt");
    std::fs::write(&secret, "outside the scope\n").unwrap();
    let fs_server = server_filesystem();

    let desktop = "~/.config/Claude/claude_desktop_config.json";
    let desktop_text = serde_json::to_string_pretty(&json!({
        "mcpServers": {
            "filesystem": {"command": fs_server, "args": [scope]},
            "fixture": {"command": FIXTURE, "args": [scope], "env": {"FIXTURE_NOTE": "configured"}}
        },
        "preferences": {"sidebarMode": "chat"}
    }))
    .unwrap();
    sb.write(desktop, desktop_text.as_bytes());
    let codex = "~/.codex/config.toml";
    let codex_text = format!(
        "# codex\n[mcp_servers.filesystem]\ncommand = {}\nargs = [{}]\n",
        serde_json::to_string(&fs_server).unwrap(),
        serde_json::to_string(&scope).unwrap()
    );
    sb.write(codex, codex_text.as_bytes());

    assert_ok(&sb.install(&[]));

    let cases: [(&str, bool, &[&str], &str); 3] = [
        (
            desktop,
            false,
            &["mcpServers", "filesystem"],
            "read_text_file",
        ),
        (desktop, false, &["mcpServers", "fixture"], "read_file"),
        (
            codex,
            true,
            &["mcp_servers", "filesystem"],
            "read_text_file",
        ),
    ];
    for (dest, toml, holder, read_tool) in cases {
        let (argv, base, env) = argv_env(&sb, dest, toml, holder);
        assert!(
            argv[0].ends_with("/mcpjail-proxy"),
            "{dest} {holder:?} not wrapped: {argv:?}"
        );
        let all_env: Vec<(&str, String)> = base
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .chain(
                env.iter()
                    .map(|(k, v)| (k.as_str(), v.as_str().unwrap().to_string())),
            )
            .collect();
        let script = json!({
            "timeout": 60,
            "steps": [
                list_tools(),
                call(read_tool, json!({"path": scope.join("a.txt")})),
                call(read_tool, json!({"path": secret})),
            ]
        });
        for client in Client::ALL {
            let label = format!("{dest} {}", holder.join("."));
            let run = run_client(client, &label, &argv, &script, &all_env, &sb.project);
            let tools = run.tools(0).as_array().unwrap().clone();
            assert!(
                tools.iter().any(|t| t["name"] == read_tool),
                "{label}: {tools:?}"
            );
            assert!(run.ok_text(1).contains("alpha in scope"), "{label}");
            assert!(
                run.is_error(2),
                "{label}: out-of-scope read succeeded: {}",
                run.text(2)
            );
            assert!(
                !run.text(2).contains("outside the scope"),
                "{label}: secret leaked"
            );
            assert!(
                run.denial(2).is_some(),
                "{label}: not refused by the proxy: {}",
                run.text(2)
            );
            if argv.iter().any(|a| a == FIXTURE) {
                // The refused call never reached the server; the allowed one did.
                let calls = run.fixture_calls();
                assert_eq!(calls.len(), 1, "{label}: {calls:?}");
            }
        }
    }

    assert_ok(&sb.run(&["uninstall", "--yes"]));
    assert_eq!(text(&sb.read(desktop)), desktop_text);
    assert_eq!(text(&sb.read(codex)), codex_text);

    // Control: the restored, unwrapped fixture entry reads the same outside file unhindered.
    let (argv, base, _) = argv_env(&sb, desktop, false, &["mcpServers", "fixture"]);
    assert_eq!(argv[0], FIXTURE);
    let base: Vec<(&str, String)> = base.iter().map(|(k, v)| (*k, v.clone())).collect();
    let script = json!({"timeout": 60, "steps": [call("read_file", json!({"path": secret}))]});
    let run = run_client(Client::Ts, "control", &argv, &script, &base, &sb.project);
    assert!(
        run.ok_text(0).contains("outside the scope"),
        "control: {}",
        run.text(0)
    );
}
