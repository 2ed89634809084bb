//! Safety of `install`/`uninstall`: refusal while a client that rewrites the file is running
//! (with controls), Claude Code's command allowlist, confirmation without a TTY, surgical undo
//! after the user edited the file, records and backups, permissions kept.

mod install_support;

use std::path::Path;
use std::process::{Child, Command};

use install_support::*;

const CLAUDE_JSON: &Fixture = &FIXTURES[1];
const DESKTOP: &Fixture = &FIXTURES[0];
const CURSOR: &Fixture = &FIXTURES[3];

/// A real process whose kernel name is `name` (a copy of `sleep`), with HOME = `home`.
/// `spawn` returns after the exec succeeded, so it is visible in /proc by then.
struct FakeClient(Child);

impl FakeClient {
    fn start(dir: &Path, name: &str, home: &Path) -> FakeClient {
        let bin = dir.join(name);
        if !bin.exists() {
            std::fs::copy("/bin/sleep", &bin).unwrap();
        }
        let child = Command::new(&bin)
            .arg("600")
            .env_clear()
            .env("HOME", home)
            .spawn()
            .unwrap();
        let comm = std::fs::read_to_string(format!("/proc/{}/comm", child.id())).unwrap();
        assert_eq!(comm.trim(), &name[..name.len().min(15)]);
        FakeClient(child)
    }
}

impl Drop for FakeClient {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn refuses_claude_json_while_claude_runs_for_that_home() {
    let sb = Sandbox::new();
    let bins = tempfile::tempdir().unwrap();
    let claude_json = sb.place(CLAUDE_JSON);
    let cursor = sb.place(CURSOR);

    let _claude = FakeClient::start(bins.path(), "claude", &sb.home);
    let out = sb.install(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("refused: ~/.claude.json"), "{err}");
    assert!(err.contains("claude-code is running (claude (pid"), "{err}");
    assert!(
        err.contains("hint: quit claude-code first, or re-run with --force"),
        "{err}"
    );
    assert_eq!(
        sb.read(CLAUDE_JSON.dest),
        claude_json,
        ".claude.json was written"
    );
    // Other files are not held hostage.
    assert_ne!(
        sb.read(CURSOR.dest),
        cursor,
        "cursor config was not wrapped"
    );

    // --force writes anyway and says so.
    let out = sb.install(&["--force"]);
    assert_ok(&out);
    assert!(text(&out.stderr).contains("writing anyway (--force)"));
    assert_ne!(sb.read(CLAUDE_JSON.dest), claude_json);

    // Uninstall is refused the same way, and works with --force.
    let out = sb.run(&["uninstall", "--yes"]);
    assert_eq!(out.status.code(), Some(1));
    assert_ne!(sb.read(CLAUDE_JSON.dest), claude_json);
    assert_eq!(
        sb.read(CURSOR.dest),
        cursor,
        "cursor is restored regardless"
    );
    let out = sb.run(&["uninstall", "--yes", "--force"]);
    assert_ok(&out);
    assert_eq!(sb.read(CLAUDE_JSON.dest), claude_json);
}

/// Control: a `claude` process of another HOME does not rewrite this `.claude.json`.
#[test]
fn claude_of_another_home_does_not_block() {
    let sb = Sandbox::new();
    let other = Sandbox::new();
    let bins = tempfile::tempdir().unwrap();
    let claude_json = sb.place(CLAUDE_JSON);
    let _claude = FakeClient::start(bins.path(), "claude", &other.home);
    let out = sb.install(&[]);
    assert_ok(&out);
    assert_ne!(sb.read(CLAUDE_JSON.dest), claude_json);
}

/// Control: with no client running, the same install writes.
#[test]
fn no_client_running_writes() {
    let sb = Sandbox::new();
    let desktop = sb.place(DESKTOP);
    let out = sb.install(&[]);
    assert_ok(&out);
    assert_ne!(sb.read(DESKTOP.dest), desktop);
}

#[test]
fn refuses_claude_desktop_config_while_the_app_runs() {
    let sb = Sandbox::new();
    let bins = tempfile::tempdir().unwrap();
    let desktop = sb.place(DESKTOP);
    let _app = FakeClient::start(bins.path(), "claude-desktop", &sb.home);
    let out = sb.install(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("claude-desktop is running"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(sb.read(DESKTOP.dest), desktop);
}

#[test]
fn claude_code_command_allowlist_skips_claude_code_entries() {
    let sb = Sandbox::new();
    let claude_json = sb.place(CLAUDE_JSON);
    let project = sb.place(&FIXTURES[2]);
    let cursor = sb.place(CURSOR);
    sb.write(
        "~/.claude/settings.json",
        br#"{"allowedMcpServers": [{"serverName": "memory"}, {"serverCommand": ["npx", "-y", "@modelcontextprotocol/server-memory"]}]}"#,
    );
    let out = sb.install(&[]);
    assert_ok(&out);
    let err = text(&out.stderr);
    assert!(err.contains("allowedMcpServers"), "{err}");
    assert!(err.contains("serverCommand"), "{err}");
    assert_eq!(sb.read(CLAUDE_JSON.dest), claude_json);
    assert_eq!(sb.read(FIXTURES[2].dest), project);
    assert_ne!(sb.read(CURSOR.dest), cursor, "other clients still wrapped");

    // Control: an allowlist by name only does not stop wrapping.
    sb.write(
        "~/.claude/settings.json",
        br#"{"allowedMcpServers": [{"serverName": "memory"}]}"#,
    );
    let out = sb.install(&[]);
    assert_ok(&out);
    assert_ne!(sb.read(CLAUDE_JSON.dest), claude_json);
}

#[test]
fn managed_mcp_json_is_never_touched() {
    let sb = Sandbox::new();
    let managed = br#"{"mcpServers": {"corp": {"command": "corp-server"}}}"#;
    sb.write("~/.claude/managed-mcp.json", managed);
    sb.write("@/managed-mcp.json", managed);
    let out = sb.install(&[]);
    assert_ok(&out);
    assert_eq!(sb.read("~/.claude/managed-mcp.json"), managed);
    assert_eq!(sb.read("@/managed-mcp.json"), managed);
}

#[test]
fn without_a_tty_and_without_yes_nothing_is_written() {
    let sb = Sandbox::new();
    let cursor = sb.place(CURSOR);
    let out = sb.run(&["install", "--no-check", "--proxy", PROXY]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("stdin is not a terminal") && err.contains("--yes"),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("+++ "),
        "the diff is still shown"
    );
    assert_eq!(sb.read(CURSOR.dest), cursor);
    assert!(!sb.state_dir().exists(), "records written without consent");

    let out = sb.run(&["install", "--no-check", "--proxy", PROXY, "--dry-run"]);
    assert_ok(&out);
    assert_eq!(sb.read(CURSOR.dest), cursor);
}

/// A dry run starts no server, even with the start check on: the entries may come from a
/// project just cloned. Control: the same install with `--yes` does start them.
#[test]
fn a_dry_run_starts_no_server() {
    let sb = Sandbox::new();
    let cursor = sb.place(CURSOR);
    let out = sb.run(&[
        "install",
        "--proxy",
        PROXY,
        "--dry-run",
        "--check-timeout",
        "5",
    ]);
    let err = text(&out.stderr);
    assert!(!err.contains("start check"), "{err}");
    assert!(err.contains("dry run: no server started"), "{err}");
    assert_eq!(sb.read(CURSOR.dest), cursor);

    let out = sb.run(&["install", "--yes", "--proxy", PROXY, "--check-timeout", "5"]);
    let err = text(&out.stderr);
    assert!(err.contains("start check"), "control: {err}");
}

#[test]
fn missing_proxy_binary_is_a_clear_error() {
    let sb = Sandbox::new();
    sb.place(CURSOR);
    let out = sb.run(&[
        "install",
        "--yes",
        "--no-check",
        "--proxy",
        "/nonexistent/mcpjail-proxy",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("mcpjail-proxy not found at /nonexistent/mcpjail-proxy")
            && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn default_proxy_is_the_one_next_to_mcpjail() {
    let sb = Sandbox::new();
    sb.place(CURSOR);
    let out = sb.run(&["install", "--yes", "--no-check"]);
    assert_ok(&out);
    let v = parse(false, &text(&sb.read(CURSOR.dest)));
    let expected = Path::new(MCPJAIL).with_file_name("mcpjail-proxy");
    assert_eq!(
        v["mcpServers"]["puppeteer"]["command"],
        expected.to_str().unwrap()
    );
}

#[test]
fn records_backups_mode_and_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let sb = Sandbox::new();
    let original = sb.place(DESKTOP);
    let path = sb.path(DESKTOP.dest);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let before = std::fs::metadata(&path).unwrap();
    let out = sb.install(&[]);
    assert_ok(&out);
    let after = std::fs::metadata(&path).unwrap();
    assert_eq!(after.permissions().mode() & 0o777, 0o640);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_ne!(after.ino(), before.ino(), "not replaced by rename");

    let mut records: Vec<_> = std::fs::read_dir(sb.state_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    records.sort();
    assert_eq!(records.len(), 2, "{records:?}");
    let backup = records
        .iter()
        .find(|p| p.extension().unwrap() == "bak")
        .unwrap();
    assert_eq!(std::fs::read(backup).unwrap(), original);
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            records
                .iter()
                .find(|p| p.extension().unwrap() == "json")
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(record["file"], path.to_str().unwrap());
    use sha2::Digest;
    let written = sb.read(DESKTOP.dest);
    assert_eq!(
        record["written_sha256"],
        hex::encode(sha2::Sha256::digest(&written))
    );
    assert_eq!(
        record["original_sha256"],
        hex::encode(sha2::Sha256::digest(&original))
    );
    let changes = record["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 4);
    let fs = changes
        .iter()
        .find(|c| c["server"] == "filesystem")
        .unwrap();
    assert_eq!(fs["pointer"], "/mcpServers/filesystem");
    assert_eq!(fs["old"]["command"], "npx");
    assert_eq!(fs["new"]["command"], PROXY);
    assert_eq!(fs["new"]["args"][0], "--name");
}

/// Running as root (CI does), a config owned by another user keeps that owner after the atomic
/// rename; the control shows a plain new file would have been root's.
#[test]
fn another_users_file_keeps_its_owner() {
    use std::os::unix::fs::MetadataExt;
    let sb = Sandbox::new();
    sb.place(CURSOR);
    let path = sb.path(CURSOR.dest);
    assert_eq!(
        nix_uid(),
        0,
        "this test gives a file another owner and needs root (CI runs as root)"
    );
    std::os::unix::fs::chown(&path, Some(4321), Some(4322)).unwrap();
    // Control: a file created by this process is root's.
    let control = sb.home.join("control");
    std::fs::write(&control, b"x").unwrap();
    assert_eq!(std::fs::metadata(&control).unwrap().uid(), 0);
    assert_ok(&sb.install(&[]));
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
    assert_ok(&sb.run(&["uninstall", "--yes"]));
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
}

fn nix_uid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").unwrap().uid()
}

fn replace_once(sb: &Sandbox, dest: &str, from: &str, to: &str) -> String {
    let t = text(&sb.read(dest));
    assert_eq!(t.matches(from).count(), 1, "{from:?} not unique");
    let t = t.replacen(from, to, 1);
    sb.write(dest, t.as_bytes());
    t
}

/// The user edited an unrelated part of the file after install: uninstall reverses exactly the
/// wrapped bytes and keeps the user's edit.
#[test]
fn surgical_uninstall_keeps_later_unrelated_edits() {
    let sb = Sandbox::new();
    let original = text(&sb.place(&FIXTURES[9])); // zed: comments, trailing commas, nested form
    assert_ok(&sb.install(&[]));
    replace_once(
        &sb,
        FIXTURES[9].dest,
        "\"vim_mode\": true",
        "\"vim_mode\": false",
    );
    replace_once(
        &sb,
        FIXTURES[9].dest,
        "  \"context_servers\": {\n",
        "  \"context_servers\": {\n    \"added\": { \"command\": \"new-server\" },\n",
    );
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    let expected = original
        .replacen("\"vim_mode\": true", "\"vim_mode\": false", 1)
        .replacen(
            "  \"context_servers\": {\n",
            "  \"context_servers\": {\n    \"added\": { \"command\": \"new-server\" },\n",
            1,
        );
    assert_eq!(text(&sb.read(FIXTURES[9].dest)), expected);
}

/// The user appended an argument to a wrapped entry: the inserted wrapper bytes are still intact,
/// so they are removed exactly and the user's argument stays.
#[test]
fn uninstall_keeps_an_argument_appended_to_a_wrapped_entry() {
    let sb = Sandbox::new();
    let original = text(&sb.place(&FIXTURES[6])); // windsurf
    assert_ok(&sb.install(&[]));
    let tail = "\"@modelcontextprotocol/server-brave-search\"]";
    let edited = "\"@modelcontextprotocol/server-brave-search\", \"--extra\"]";
    replace_once(&sb, FIXTURES[6].dest, tail, edited);
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    assert_eq!(
        text(&sb.read(FIXTURES[6].dest)),
        original.replacen(tail, edited, 1)
    );
}

/// The user edited the wrapper itself: uninstall cannot reverse bytes and restores by value.
#[test]
fn uninstall_after_editing_the_wrapper_restores_by_value() {
    let sb = Sandbox::new();
    sb.place(&FIXTURES[6]); // windsurf
    assert_ok(&sb.install(&[]));
    replace_once(
        &sb,
        FIXTURES[6].dest,
        "\"--name\", \"brave-search\"",
        "\"--name\", \"brave\", \"--log\"",
    );
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    assert!(
        text(&out.stderr)
            .contains("brave-search: edited since install; restored its command and args by value"),
        "{}",
        text(&out.stderr)
    );
    let t = text(&sb.read(FIXTURES[6].dest));
    let v = parse(false, &t);
    let brave = &v["mcpServers"]["brave-search"];
    assert_eq!(brave["command"], "npx");
    assert_eq!(
        brave["args"],
        serde_json::json!(["-y", "@modelcontextprotocol/server-brave-search"])
    );
    // The other entry came back byte-exactly.
    assert!(t.contains("\"command\": \"npx\",\n      \"args\": [\"-y\", \"@modelcontextprotocol/server-sequential-thinking\"],"));
}

/// Two installs (a server added in between) and one uninstall: the original plus the added
/// server, both unwrapped, byte for byte.
#[test]
fn two_installs_one_uninstall() {
    let sb = Sandbox::new();
    let original = text(&sb.place(&FIXTURES[10])); // codex TOML
    assert_ok(&sb.install(&[]));
    let addition = "\n[mcp_servers.later]\ncommand = \"later-server\"\n";
    let mut t = text(&sb.read(FIXTURES[10].dest));
    t.push_str(addition);
    sb.write(FIXTURES[10].dest, t.as_bytes());
    let out = sb.install(&[]);
    assert_ok(&out);
    assert!(text(&sb.read(FIXTURES[10].dest)).contains("[mcp_servers.later]\ncommand = \"/"));
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    assert_eq!(
        text(&sb.read(FIXTURES[10].dest)),
        format!("{original}{addition}")
    );
}

#[test]
fn claude_config_dir_is_honoured() {
    let sb = Sandbox::new();
    let dir = sb.home.join("alt-claude");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(repo().join("fixtures/configs").join(CLAUDE_JSON.source)).unwrap();
    std::fs::write(dir.join(".claude.json"), &bytes).unwrap();
    let out = sb
        .command(&["install", "--yes", "--no-check", "--proxy", PROXY])
        .env("CLAUDE_CONFIG_DIR", &dir)
        .output()
        .unwrap();
    assert_ok(&out);
    assert_ne!(std::fs::read(dir.join(".claude.json")).unwrap(), bytes);
}

#[test]
fn status_lists_every_client_scope_and_state() {
    let sb = Sandbox::new();
    for f in FIXTURES {
        sb.place(f);
    }
    assert_ok(&sb.install(&["--client", "cursor"]));
    let out = sb.run(&["status", "--json"]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = v["servers"].as_array().unwrap();
    let find = |client: &str, name: &str| {
        servers
            .iter()
            .find(|s| s["client"] == client && s["name"] == name)
            .unwrap_or_else(|| panic!("{client}/{name} missing"))
    };
    assert_eq!(find("cursor", "puppeteer")["wrapped"], true);
    assert_eq!(find("windsurf", "brave-search")["wrapped"], false);
    assert_eq!(find("claude-code", "git")["scope"], "local");
    assert_eq!(find("claude-code", "memory")["scope"], "user");
    assert_eq!(find("claude-code", "project-files")["scope"], "project");
    assert_eq!(find("claude-code", "sentry")["transport"], "http");
    assert_eq!(find("zed", "mcp-server-context7")["transport"], "extension");
    assert_eq!(find("codex", "figma")["transport"], "http");
    assert_eq!(find("vscode", "my-sse")["transport"], "sse");
    let clients: std::collections::BTreeSet<&str> = servers
        .iter()
        .map(|s| s["client"].as_str().unwrap())
        .collect();
    assert_eq!(clients.len(), 9, "{clients:?}");

    let table = sb.run(&["status"]);
    assert_ok(&table);
    let t = text(&table.stdout);
    assert!(t.starts_with("CLIENT"), "{t}");
    assert!(!t.contains('\x1b'), "colour without a TTY");
    assert!(t
        .lines()
        .any(|l| l.contains("cursor") && l.contains("puppeteer") && l.ends_with("yes")));
}

/// A project's `.mcp.json` (a cloned repository's) names its servers: terminal commands in a
/// name are shown in `mcpjail status`, not passed to the terminal. The control: `--json`
/// carries the name exactly.
#[test]
fn status_shows_terminal_commands_in_config_names_as_text() {
    let sb = Sandbox::new();
    let name = "x\u{1b}]52;c;aGk=\u{7}\u{9b}2J\u{202e}";
    let config = serde_json::json!({"mcpServers": {name: {"command": "echo", "args": ["hi"]}}});
    std::fs::write(sb.project.join(".mcp.json"), config.to_string()).unwrap();
    let out = sb.run(&["status", "--json"]);
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == name),
        "{v:#}"
    );
    let table = sb.run(&["status"]);
    assert_ok(&table);
    let t = text(&table.stdout);
    assert!(
        !t.chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "{t:?}"
    );
    assert!(t.contains(r"x\x1b]52;c;aGk=\x07\u{9b}2J\u{202e}"), "{t}");
}

/// An entry wrapped without a record (by hand, or synced from another machine) is left alone,
/// with its original command line shown.
#[test]
fn uninstall_names_wrapped_entries_without_a_record() {
    let sb = Sandbox::new();
    let config = format!(
        "{{\"mcpServers\": {{\"manual\": {{\"command\": \"{PROXY}\", \"args\": [\"--name\", \"manual\", \"--\", \"npx\", \"-y\", \"pkg\"]}}}}}}"
    );
    sb.write(CURSOR.dest, config.as_bytes());
    let out = sb.run(&["uninstall", "--yes"]);
    assert_ok(&out);
    let err = text(&out.stderr);
    assert!(
        err.contains("`manual` is wrapped but has no install record"),
        "{err}"
    );
    assert!(err.contains("`npx -y pkg`"), "{err}");
    assert_eq!(text(&sb.read(CURSOR.dest)), config);
}

/// Surgical undo of a JSON entry that had no `args` (install added the property): the added
/// property and its comma go, the user's later edit elsewhere stays.
#[test]
fn surgical_uninstall_removes_an_added_args_property() {
    let sb = Sandbox::new();
    let original = text(&sb.place(DESKTOP)); // `local-binary` has no args
    assert_ok(&sb.install(&[]));
    assert!(text(&sb.read(DESKTOP.dest)).contains(
        "\"args\": [\"--name\", \"local-binary\", \"--\", \"/opt/tools/my-mcp-server\"]"
    ));
    replace_once(
        &sb,
        DESKTOP.dest,
        "\"sidebarMode\": \"chat\"",
        "\"sidebarMode\": \"task\"",
    );
    assert_ok(&sb.run(&["uninstall", "--yes"]));
    assert_eq!(
        text(&sb.read(DESKTOP.dest)),
        original.replacen("\"sidebarMode\": \"chat\"", "\"sidebarMode\": \"task\"", 1)
    );
}
