//! End to end: a temp HOME with several clients' configs whose servers are the real
//! `mcpjail-fixture-files` server, `mcpjail install --yes`, then every wrapped entry is launched
//! exactly as its client would (command + args + env from the rewritten file) and a real MCP
//! client (rmcp) completes the handshake through `mcpjail-proxy`, lists tools and reads a file
//! in scope. Then `uninstall` restores every file byte for byte.

mod install_support;

use std::path::{Path, PathBuf};

use install_support::*;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;

const SERVER: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-files");

fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The configs, each with one fixture-files server scoped to `scope`.
fn configs(scope: &Path) -> Vec<(&'static str, String, bool, Vec<&'static str>)> {
    let server = js(SERVER);
    let dir = js(scope.to_str().unwrap());
    vec![
        (
            "~/.config/Claude/claude_desktop_config.json",
            format!(
                "{{\n  \"mcpServers\": {{\n    \"files\": {{\n      \"command\": {server},\n      \"args\": [{dir}],\n      \"env\": {{ \"FIXTURE_TOKEN\": \"desktop\" }}\n    }}\n  }},\n  \"preferences\": {{ \"menuBarEnabled\": true }}\n}}\n"
            ),
            false,
            vec!["mcpServers", "files"],
        ),
        (
            "~/.config/Code/User/mcp.json",
            format!(
                "{{\n\t// VS Code user servers\n\t\"servers\": {{\n\t\t\"files\": {{\n\t\t\t\"type\": \"stdio\",\n\t\t\t\"command\": {server},\n\t\t\t\"args\": [\n\t\t\t\t{dir}, // scope\n\t\t\t],\n\t\t}},\n\t}},\n}}\n"
            ),
            false,
            vec!["servers", "files"],
        ),
        (
            "~/.config/zed/settings.json",
            format!(
                "// Zed\n{{\n  \"context_servers\": {{\n    \"files\": {{\n      \"command\": {{ \"path\": {server}, \"args\": [{dir}], \"env\": {{}} }},\n      \"settings\": {{}},\n    }},\n  }},\n}}\n"
            ),
            false,
            vec!["context_servers", "files", "command"],
        ),
        (
            "~/.codex/config.toml",
            format!(
                "# Codex\n[mcp_servers.files]\ncommand = {server}\nargs = [{dir}]\nenv = {{ FIXTURE_TOKEN = \"codex\" }}\n"
            ),
            true,
            vec!["mcp_servers", "files"],
        ),
        (
            "@/.mcp.json",
            format!("{{\"mcpServers\": {{\"files\": {{\"command\": {server}, \"args\": [{dir}]}}}}}}\n"),
            false,
            vec!["mcpServers", "files"],
        ),
    ]
}

/// Launch `command args…` with the client's environment plus the entry's `env`, handshake,
/// list tools, read each of `files`; returns the texts.
async fn handshake(
    command: &str,
    args: &[String],
    env: &serde_json::Map<String, serde_json::Value>,
    sb: &Sandbox,
    files: &[&Path],
) -> Vec<String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .current_dir(&sb.project);
    for (k, v) in env {
        cmd.env(k, v.as_str().unwrap());
    }
    let transport = TokioChildProcess::new(cmd).expect("spawn the wrapped command");
    let client = ().serve(transport).await.expect("MCP initialize through the proxy");
    let info = client.peer_info().expect("server info");
    let server = info.server_info.as_ref().expect("serverInfo");
    assert_eq!(server.name, "mcpjail-fixture-files");
    let tools = client.list_all_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "read_file"), "{tools:?}");
    let mut texts = Vec::new();
    for file in files {
        let mut arguments = serde_json::Map::new();
        arguments.insert("path".into(), file.to_str().unwrap().into());
        let result = client
            .call_tool(CallToolRequestParams::new("read_file").with_arguments(arguments))
            .await
            .expect("tools/call");
        texts.push(
            result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    let _ = client.cancel().await;
    texts
}

/// The entry at `holder` in a config file: (command, args, env).
fn entry_of(
    sb: &Sandbox,
    dest: &str,
    toml: bool,
    holder: &[&str],
) -> (
    String,
    Vec<String>,
    serde_json::Map<String, serde_json::Value>,
) {
    let text = text(&sb.read(dest));
    let doc = parse(toml, &text);
    let mut entry = &doc;
    for k in holder {
        entry = &entry[*k];
    }
    let command_key = if holder.last() == Some(&"command") {
        "path"
    } else {
        "command"
    };
    let command = entry[command_key]
        .as_str()
        .unwrap_or_else(|| panic!("{dest}: {text}"))
        .to_string();
    let args = entry
        .get("args")
        .and_then(|a| a.as_array())
        .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
        .unwrap_or_default();
    // Zed's nested form keeps env inside `command`; the others beside it.
    let env = entry
        .get("env")
        .and_then(|e| e.as_object())
        .cloned()
        .unwrap_or_default();
    (command, args, env)
}

#[tokio::test]
async fn install_then_every_wrapped_entry_speaks_mcp_through_the_proxy() {
    let sb = Sandbox::new();
    let scope = sb.home.join("work");
    std::fs::create_dir_all(&scope).unwrap();
    let note = scope.join("note.txt");
    std::fs::write(&note, "hello from the scope\n").unwrap();
    let outside = sb.home.join("private.txt");
    std::fs::write(&outside, "outside the scope\n").unwrap();

    let cfgs = configs(&scope);
    let originals: Vec<Vec<u8>> = cfgs
        .iter()
        .map(|(dest, text, _, _)| {
            sb.write(dest, text.as_bytes());
            text.as_bytes().to_vec()
        })
        .collect();

    // Default proxy: the mcpjail-proxy next to mcpjail.
    let out = sb.run(&["install", "--yes"]);
    assert_ok(&out);
    // The start check launched every wrapped entry once, as its client would, and each one
    // answered initialize through the proxy and the jail.
    let stderr = text(&out.stderr);
    let n = cfgs.len();
    assert!(
        stderr.contains(&format!("start check: {n} of {n} start")),
        "{stderr}"
    );
    assert_eq!(stderr.matches("  starts  ").count(), n, "{stderr}");
    let proxy = PathBuf::from(MCPJAIL).with_file_name("mcpjail-proxy");

    for (dest, _, toml, holder) in &cfgs {
        let (command, args, env) = entry_of(&sb, dest, *toml, holder);
        assert_eq!(Path::new(&command), proxy, "{dest} not wrapped");
        assert_eq!(args[..2], ["--name".to_string(), "files".to_string()]);
        let dd = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dd + 1], SERVER, "{dest}");
        // The entry's own env keys are passed through the proxy's scrub.
        for k in env.keys() {
            assert!(
                args.windows(2).any(|w| w[0] == "--env-keep" && &w[1] == k),
                "{dest}: {k} not kept"
            );
        }
        let read = handshake(&command, &args, &env, &sb, &[&note, &outside]).await;
        assert!(
            read[0].contains("hello from the scope"),
            "{dest}: in-scope read returned {:?}",
            read[0]
        );
        // Wrapped means confined: a file outside the server's scope is refused.
        assert!(
            !read[1].contains("outside the scope"),
            "{dest}: out-of-scope read succeeded through the proxy"
        );
        assert!(read[1].contains("denied"), "{dest}: {:?}", read[1]);
    }

    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    for ((dest, _, _, _), orig) in cfgs.iter().zip(&originals) {
        assert_eq!(&sb.read(dest), orig, "{dest} not restored byte for byte");
    }
    // Control: the restored (unwrapped) command line reads the same outside file unhindered.
    let (dest, _, toml, holder) = &cfgs[0];
    let (command, args, env) = entry_of(&sb, dest, *toml, holder);
    assert_eq!(command, SERVER);
    let read = handshake(&command, &args, &env, &sb, &[&outside]).await;
    assert!(
        read[0].contains("outside the scope"),
        "control read returned {:?}",
        read[0]
    );
}

const HOSTILE: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-hostile");

/// Call the hostile fixture's `env_secret` tool through the command line of `entry`, with the
/// client's own environment holding an inherited secret.
async fn env_secret(
    sb: &Sandbox,
    command: &str,
    args: &[String],
    env: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .env("AWS_SECRET_ACCESS_KEY", "inherited-secret")
        .current_dir(&sb.project);
    for (k, v) in env {
        cmd.env(k, v.as_str().unwrap());
    }
    let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.expect("MCP initialize");
    let result = client
        .call_tool(CallToolRequestParams::new("env_secret"))
        .await
        .expect("tools/call");
    let _ = client.cancel().await;
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `--env-keep` carries exactly the entry's own `env` keys: a configured secret still reaches the
/// wrapped server, a secret the client merely inherited does not. Control: the unwrapped entry
/// sees the inherited secret.
#[tokio::test]
async fn configured_env_reaches_the_server_and_inherited_env_does_not() {
    let sb = Sandbox::new();
    let server = js(HOSTILE);
    let config = format!(
        "{{\n  \"mcpServers\": {{\n    \"configured\": {{\n      \"command\": {server},\n      \"env\": {{ \"AWS_SECRET_ACCESS_KEY\": \"configured-secret\" }}\n    }},\n    \"inherits\": {{\n      \"command\": {server}\n    }}\n  }}\n}}\n"
    );
    let dest = "~/.cursor/mcp.json";
    sb.write(dest, config.as_bytes());

    // Control first: unwrapped, the server sees whatever the client inherited.
    let (command, args, env) = entry_of(&sb, dest, false, &["mcpServers", "inherits"]);
    let control = env_secret(&sb, &command, &args, &env).await;
    assert!(
        control.contains("ESCAPED: AWS_SECRET_ACCESS_KEY=inherited-secret"),
        "control: {control}"
    );

    assert_ok(&sb.install(&[]));

    let (command, args, env) = entry_of(&sb, dest, false, &["mcpServers", "configured"]);
    assert!(
        args.windows(2)
            .any(|w| w == ["--env-keep", "AWS_SECRET_ACCESS_KEY"]),
        "{args:?}"
    );
    let seen = env_secret(&sb, &command, &args, &env).await;
    assert!(
        seen.contains("AWS_SECRET_ACCESS_KEY=configured-secret"),
        "configured secret lost: {seen}"
    );

    let (command, args, env) = entry_of(&sb, dest, false, &["mcpServers", "inherits"]);
    assert!(!args.iter().any(|a| a == "--env-keep"), "{args:?}");
    let seen = env_secret(&sb, &command, &args, &env).await;
    assert!(
        seen.starts_with("BLOCKED"),
        "inherited secret reached the wrapped server: {seen}"
    );

    assert_ok(&sb.run(&["uninstall", "--yes"]));
    assert_eq!(text(&sb.read(dest)), config);
}
