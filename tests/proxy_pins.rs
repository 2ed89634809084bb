//! Tool pinning through the real proxy: a real `mcpjail-proxy` in front of the fixture server,
//! whose `trigger_list_changed` tool changes its own description and sends
//! `notifications/tools/list_changed` (a rug pull). Each mode is shown catching it (or, for
//! `off`, recording nothing), with control runs: the same call before the change, or in warn
//! mode, reaches the server (its `FIXTURE-CALL` stderr line). Every run has its own
//! `XDG_STATE_HOME`, so the real `~/.local/state` is never touched.

mod proxy_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use proxy_support::*;
use serde_json::{json, Value};

const CLI: &str = env!("CARGO_BIN_EXE_mcpjail");
const TOOL: &str = "trigger_list_changed";
const ORIGINAL: &str = "Change the tool list";
const CHANGED: &str = "Change the tool list (already changed)";

/// A scratch tree plus a private state directory for the pins.
struct Env {
    tree: Tree,
    state: PathBuf,
}

impl Env {
    fn new() -> Env {
        let tree = Tree::new();
        let state = tree.root().join("state");
        Env { tree, state }
    }

    /// The pin file of the one server labelled `name` (`<name>-<identity digest>.json`).
    fn pin_file(&self, name: &str) -> PathBuf {
        let dir = self.state.join("mcpjail/pins");
        let key = mcpjail::policy::pins::resolve_name(&dir, name);
        dir.join(format!("{key}.json"))
    }

    /// `mcpjail-proxy <args> -- fixture <scope>`; `fixture_env` knobs reach the server through
    /// `--env-keep`. XDG_STATE_HOME is the proxy's own setting, never passed to the server.
    fn proxy(&self, args: &[&str], fixture_env: &[(&str, &str)]) -> Session {
        self.proxy_running(Path::new(FIXTURE), args, fixture_env)
    }

    /// [`Env::proxy`] with the fixture at `program` (a copy elsewhere).
    fn proxy_running(
        &self,
        program: &Path,
        args: &[&str],
        fixture_env: &[(&str, &str)],
    ) -> Session {
        let t = &self.tree;
        let mut c = Command::new(PROXY);
        c.args(args);
        for (k, _) in fixture_env {
            c.arg("--env-keep").arg(k);
        }
        c.arg("--").arg(program).arg(t.scope());
        c.current_dir(t.scope())
            .env("HOME", t.root().join("home"))
            .env("XDG_STATE_HOME", &self.state)
            .env("NO_COLOR", "1")
            .env_remove("MCPJAIL_LOG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in fixture_env {
            c.env(k, v);
        }
        Session::spawn(c)
    }

    /// `mcpjail pin ARGS…` with the same state directory.
    fn pin_cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(CLI)
            .arg("pin")
            .args(args)
            .env("HOME", self.tree.root().join("home"))
            .env("XDG_STATE_HOME", &self.state)
            .env("NO_COLOR", "1")
            .output()
            .expect("run mcpjail pin")
    }
}

fn list_tools(s: &mut Session) -> Vec<Value> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let r = s.request("tools/list", params);
        tools.extend(r["result"]["tools"].as_array().cloned().unwrap_or_default());
        match r["result"].get("nextCursor") {
            Some(c) if !c.is_null() => cursor = Some(c.clone()),
            _ => return tools,
        }
    }
}

fn description<'a>(tools: &'a [Value], name: &str) -> Option<&'a str> {
    tools
        .iter()
        .find(|t| t["name"] == json!(name))
        .map(|t| t["description"].as_str().unwrap_or_default())
}

/// How many calls of `tool` reached the server (after a barrier, so none is still in transit).
fn calls_reaching_server(s: &mut Session, tool: &str) -> usize {
    s.barrier();
    s.fixture_calls()
        .iter()
        .filter(|l| l.contains(&format!("\"tool\":\"{tool}\"")))
        .count()
}

/// Pull the rug: call the tool that changes itself (this call is before the change, so it
/// reaches the server in every mode).
fn rug_pull(s: &mut Session) {
    let r = s.call(TOOL, json!({}));
    assert_eq!(result_text(&r), "tool list changed", "{r}");
}

fn audit_events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == json!("pin"))
        .collect()
}

fn stderr_text(s: &Session) -> String {
    s.stderr.lock().unwrap().join("\n")
}

/// The stderr line containing `needle`, whether it already went by (a barrier's wait may have
/// read past it) or is still to come.
fn saw(s: &mut Session, needle: &str) -> String {
    let seen = s
        .stderr
        .lock()
        .unwrap()
        .iter()
        .find(|l| l.contains(needle))
        .cloned();
    seen.unwrap_or_else(|| s.wait_stderr(needle))
}

#[test]
fn first_run_pins_every_tool_under_xdg_state_home_per_server_name() {
    let e = Env::new();
    let audit = e.tree.root().join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let mut s = e.proxy(&["--name", "fx", "--log", "--log-file", &audit_arg], &[]);
    s.initialize();
    let tools = list_tools(&mut s);
    assert_eq!(tools.len(), 12, "{tools:?}");
    let line = saw(&mut s, "pins: pinned 12 new tool(s)");
    assert!(line.contains("read_file") && line.contains(TOOL), "{line}");

    let file: Value = serde_json::from_slice(&std::fs::read(e.pin_file("fx")).unwrap()).unwrap();
    let key = file["server"].as_str().unwrap();
    assert!(key.starts_with("fx-"), "keyed by label and identity: {key}");
    assert!(
        file["identity"].as_str().unwrap().contains(FIXTURE),
        "{file}"
    );
    let pinned = file["tools"].as_object().unwrap();
    assert_eq!(pinned.len(), 12, "{file}");
    for t in &tools {
        let name = t["name"].as_str().unwrap();
        assert_eq!(
            pinned[name]["hash"].as_str().unwrap(),
            mcpjail::policy::pins::tool_hash(t),
            "{name} is pinned with the hash of what the server listed"
        );
    }
    assert!(
        !e.tree.root().join("home/.local/state").exists(),
        "XDG_STATE_HOME must be used, not ~/.local/state"
    );
    let events = audit_events(&audit);
    assert!(
        events
            .iter()
            .any(|ev| ev["change"] == json!("added") && ev["tools"].as_array().unwrap().len() == 12),
        "{events:?}"
    );
    drop(s);

    // The same server again: nothing new, nothing reported; pins are kept per --name.
    let mut s = e.proxy(&["--name", "fx", "--log"], &[]);
    s.initialize();
    list_tools(&mut s);
    calls_reaching_server(&mut s, "echo");
    let err = stderr_text(&s);
    assert!(!err.contains("pins:"), "{err}");
    drop(s);
    let mut s = e.proxy(&["--name", "fx-other", "--log"], &[]);
    s.initialize();
    list_tools(&mut s);
    saw(&mut s, "pins: pinned 12 new tool(s)");
    assert!(e.pin_file("fx-other").is_file());
}

#[test]
fn warn_reports_the_rug_pull_and_the_tool_stays_callable() {
    let e = Env::new();
    let audit = e.tree.root().join("audit.jsonl");
    let audit_arg = audit.display().to_string();
    let mut s = e.proxy(
        &[
            "--name",
            "fx",
            "--pin",
            "warn",
            "--log",
            "--log-file",
            &audit_arg,
        ],
        &[],
    );
    s.initialize();
    assert_eq!(description(&list_tools(&mut s), TOOL), Some(ORIGINAL));
    rug_pull(&mut s);

    let line = saw(&mut s, &format!("pins: tool {TOOL} CHANGED"));
    assert!(
        line.contains(&format!("mcpjail pin approve fx {TOOL}")),
        "{line}"
    );
    let warning = saw(&mut s, "changed since it was pinned (");
    assert!(warning.contains("WARN"), "a tracing warning: {warning}");
    assert!(
        warning.contains(&format!("mcpjail pin approve fx {TOOL}")),
        "{warning}"
    );

    // Still offered, in its new form, and still callable.
    let tools = list_tools(&mut s);
    assert_eq!(description(&tools, TOOL), Some(CHANGED));
    assert!(description(&tools, "late_tool").is_some());
    let r = s.call(TOOL, json!({}));
    assert_eq!(result_text(&r), "tool list changed", "{r}");
    assert_eq!(calls_reaching_server(&mut s, TOOL), 2);

    let events = audit_events(&audit);
    let changed: Vec<&Value> = events
        .iter()
        .filter(|ev| ev["change"] == json!("changed"))
        .collect();
    assert_eq!(
        changed.len(),
        1,
        "reported once, not per listing: {events:?}"
    );
    assert_eq!(changed[0]["tool"], json!(TOOL));
    assert_eq!(changed[0]["blocked"], json!(false));
    assert!(events
        .iter()
        .any(|ev| ev["change"] == json!("added") && ev["tools"] == json!(["late_tool"])));

    // The change is pending in the pin file, for `mcpjail pin list`.
    let out = e.pin_cli(&["list", "fx"]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains(TOOL) && listing.contains("CHANGED"),
        "{listing}"
    );
    drop(s);

    // A later run of the unchanged server, paged: `late_tool` is gone (reported once, from the
    // whole listing: tools on other pages are not "removed"), and the original definition is
    // the pin again, so nothing is changed.
    let mut s = e.proxy(&["--name", "fx", "--log"], &[("FIXTURE_PAGE_SIZE", "5")]);
    s.initialize();
    let tools = list_tools(&mut s);
    assert_eq!(tools.len(), 12);
    let line = saw(&mut s, "no longer listed");
    assert!(
        line.contains("1 pinned tool(s)") && line.ends_with("late_tool"),
        "{line}"
    );
    calls_reaching_server(&mut s, "echo");
    assert!(!stderr_text(&s).contains("CHANGED"));
}

#[test]
fn block_hides_and_refuses_the_changed_tool_until_approved() {
    let e = Env::new();
    let mut s = e.proxy(&["--name", "fx", "--pin", "block", "--log"], &[]);
    s.initialize();
    assert_eq!(description(&list_tools(&mut s), TOOL), Some(ORIGINAL));
    // Control: before the change the call reaches the server.
    rug_pull(&mut s);
    assert_eq!(calls_reaching_server(&mut s, TOOL), 1);
    saw(&mut s, &format!("pins: tool {TOOL} CHANGED"));

    let tools = list_tools(&mut s);
    assert_eq!(
        description(&tools, TOOL),
        None,
        "hidden from the client: {tools:?}"
    );
    assert!(
        description(&tools, "late_tool").is_some(),
        "a new tool is pinned, not hidden"
    );
    assert_eq!(tools.len(), 12, "everything else is still listed");

    let r = s.call(TOOL, json!({}));
    assert!(is_denial(&r), "{r}");
    let text = result_text(&r);
    for needle in [
        TOOL,
        "changed since it was pinned",
        "mcpjail pin approve fx trigger_list_changed",
    ] {
        assert!(text.contains(needle), "{needle:?} in {text}");
    }
    assert_eq!(
        r["result"]["_meta"]["mcpjail/denial"]["kind"],
        json!("pin_changed")
    );
    assert!(
        r["result"].get("resultType").is_none(),
        "an older-era result: {r}"
    );
    assert_eq!(
        calls_reaching_server(&mut s, TOOL),
        1,
        "the refused call never reached the server"
    );
    drop(s);

    // A new session of the already-changed server, with --deny-as error: hidden from the very
    // first listing, refused with a JSON-RPC error.
    let late = [("FIXTURE_LATE_TOOLS", "1")];
    let mut s = e.proxy(
        &["--name", "fx", "--pin", "block", "--deny-as", "error"],
        &late,
    );
    s.initialize();
    assert_eq!(description(&list_tools(&mut s), TOOL), None);
    let r = s.call(TOOL, json!({}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("mcpjail pin approve fx trigger_list_changed"),
        "{msg}"
    );
    assert_eq!(calls_reaching_server(&mut s, TOOL), 0);
    drop(s);

    // Control: the same changed server with --pin warn offers and runs it.
    let mut s = e.proxy(&["--name", "fx", "--pin", "warn"], &late);
    s.initialize();
    assert_eq!(description(&list_tools(&mut s), TOOL), Some(CHANGED));
    rug_pull(&mut s);
    assert_eq!(calls_reaching_server(&mut s, TOOL), 1);
    drop(s);

    // Approval makes the new definition the pin: the next block run shows it and allows it.
    let out = e.pin_cli(&["approve", "fx", TOOL]);
    assert!(
        out.status.success(),
        "approve: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut s = e.proxy(&["--name", "fx", "--pin", "block", "--log"], &late);
    s.initialize();
    assert_eq!(description(&list_tools(&mut s), TOOL), Some(CHANGED));
    rug_pull(&mut s);
    assert_eq!(calls_reaching_server(&mut s, TOOL), 1);
    assert!(!stderr_text(&s).contains("CHANGED"));
}

#[test]
fn block_hides_on_the_right_page_of_a_paged_listing() {
    let e = Env::new();
    let paged = [("FIXTURE_PAGE_SIZE", "5")];
    let mut s = e.proxy(&["--name", "fx", "--pin", "block"], &paged);
    s.initialize();
    assert_eq!(list_tools(&mut s).len(), 12);
    rug_pull(&mut s);
    // The proxy's own fetch walks all pages before the client's listing is answered.
    let tools = list_tools(&mut s);
    assert_eq!(description(&tools, TOOL), None, "{tools:?}");
    assert_eq!(tools.len(), 12, "11 old tools + late_tool");
    assert!(is_denial(&s.call(TOOL, json!({}))));
}

#[test]
fn off_records_nothing() {
    let e = Env::new();
    let mut s = e.proxy(&["--name", "fx", "--pin", "off", "--log"], &[]);
    s.initialize();
    list_tools(&mut s);
    rug_pull(&mut s);
    let tools = list_tools(&mut s);
    assert_eq!(description(&tools, TOOL), Some(CHANGED));
    let r = s.call(TOOL, json!({}));
    assert_eq!(result_text(&r), "tool list changed", "{r}");
    assert_eq!(calls_reaching_server(&mut s, TOOL), 2);
    let err = stderr_text(&s);
    assert!(!err.contains("pins:") && !err.contains("pinned"), "{err}");
    // The server's private state directory lives beside mcpjail's own state; pins do not.
    assert!(
        !e.state.join("mcpjail").exists(),
        "--pin off must not create mcpjail's state directory"
    );
    assert_eq!(
        state_dirs(&e, "fx").len(),
        1,
        "the server's own, keyed by its identity"
    );
    assert!(!e.tree.root().join("home/.local/state").exists());
}

#[test]
fn block_with_an_odd_name_keeps_its_pins_inside_the_pin_directory() {
    // Pins are keyed by the label and the server's identity; a label is only part of a file
    // name, never a path, so `../escape` cannot leave the pin directory.
    let e = Env::new();
    let mut s = e.proxy(&["--name", "../escape", "--pin", "block", "--log"], &[]);
    s.initialize();
    list_tools(&mut s);
    saw(&mut s, "pins: pinned 12 new tool(s)");
    let files: Vec<String> = std::fs::read_dir(e.state.join("mcpjail/pins"))
        .unwrap()
        .map(|f| f.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with(".._escape-"), "{files:?}");
    assert!(!e.state.join("mcpjail/escape.json").exists());
}

#[test]
fn block_refusal_is_a_complete_result_in_the_stateless_era() {
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let e = Env::new();
    let mut s = e.proxy(&["--name", "fx", "--pin", "block"], &[]);
    let mut id = 0;
    let mut req = |s: &mut Session, method: &str, mut params: Value| {
        id += 1;
        params["_meta"] = meta.clone();
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        s.response_to(&json!(id))
    };
    req(&mut s, "server/discover", json!({}));
    let r = req(&mut s, "tools/list", json!({}));
    assert!(description(r["result"]["tools"].as_array().unwrap(), TOOL).is_some());
    let r = req(&mut s, "tools/call", json!({"name": TOOL, "arguments": {}}));
    assert_eq!(result_text(&r), "tool list changed", "{r}");
    let r = req(&mut s, "tools/list", json!({}));
    assert_eq!(
        description(r["result"]["tools"].as_array().unwrap(), TOOL),
        None,
        "{r}"
    );
    let r = req(&mut s, "tools/call", json!({"name": TOOL, "arguments": {}}));
    assert!(is_denial(&r), "{r}");
    assert_eq!(r["result"]["resultType"], json!("complete"), "{r}");
    assert_eq!(calls_reaching_server(&mut s, TOOL), 1);
}

#[test]
fn block_judges_a_call_sent_during_the_refetch_against_the_new_listing() {
    // One tool per page: the proxy's refetch after list_changed takes 13 round trips, and the
    // call below is sent the moment the rug pull is answered, in the middle of it. The call
    // must wait for the whole listing (and be refused), not be judged by the stale one.
    let e = Env::new();
    let mut s = e.proxy(
        &["--name", "fx", "--pin", "block"],
        &[("FIXTURE_PAGE_SIZE", "1")],
    );
    s.initialize();
    assert_eq!(list_tools(&mut s).len(), 12);
    rug_pull(&mut s);
    let r = s.call(TOOL, json!({}));
    assert!(is_denial(&r), "{r}");
    assert_eq!(calls_reaching_server(&mut s, TOOL), 1);
}

/// Every `…/index` server used to be pinned as `index`: a second one's tools showed as
/// changed and `--pin block` hid them. Pins are keyed by identity (here the whole command):
/// two servers, two pin files, nothing hidden.
#[test]
fn two_servers_named_index_keep_apart_pins_and_block_hides_nothing_legitimate() {
    let e = Env::new();
    let mut programs = Vec::new();
    for dir in ["a", "b"] {
        let d = e.tree.root().join(dir);
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("index");
        std::fs::copy(FIXTURE, &p).unwrap();
        programs.push(p);
    }
    let mut s = e.proxy_running(&programs[0], &["--pin", "block", "--log"], &[]);
    s.initialize();
    let first = list_tools(&mut s);
    assert_eq!(description(&first, TOOL), Some(ORIGINAL));
    saw(&mut s, "pins: pinned 12 new tool(s)");
    drop(s);

    // The other `index` lists `trigger_list_changed` differently: it is its own tool.
    let late = [("FIXTURE_LATE_TOOLS", "1")];
    let mut s = e.proxy_running(&programs[1], &["--pin", "block", "--log"], &late);
    s.initialize();
    let second = list_tools(&mut s);
    assert_eq!(
        description(&second, TOOL),
        Some(CHANGED),
        "a legitimate tool was hidden"
    );
    saw(&mut s, "pins: pinned");
    assert!(!stderr_text(&s).contains("changed since it was pinned"));
    drop(s);
    let files = std::fs::read_dir(e.state.join("mcpjail/pins"))
        .unwrap()
        .count();
    assert_eq!(files, 2, "one pin file per server");
}

// ---------------------------------------------------------------------------------------------
// The private state directory (`$XDG_STATE_HOME/mcpjail-servers/…`) is keyed like the pins.

/// The state directories of servers labelled `label` (`<label>-<12 hex digits>`), sorted.
fn state_dirs(e: &Env, label: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(e.state.join("mcpjail-servers"))
        .map(|d| d.filter_map(|x| x.ok()).map(|x| x.path()).collect())
        .unwrap_or_default();
    out.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(label))
            .and_then(|n| n.strip_prefix('-'))
            .is_some_and(|d| d.len() == 12 && d.bytes().all(|b| b.is_ascii_hexdigit()))
    });
    out.sort();
    out
}

/// Start `program` as `fx`, initialize, stop: its state directory is prepared at start.
fn start_and_stop(e: &Env, program: &Path) -> String {
    let mut s = e.proxy_running(program, &["--name", "fx", "--pin", "off"], &[]);
    s.initialize();
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    s.stderr_closed()
}

/// Two copies of the fixture in different directories, both `--name fx`.
fn two_programs(e: &Env) -> Vec<PathBuf> {
    ["a", "b"]
        .iter()
        .map(|dir| {
            let d = e.tree.root().join(dir);
            std::fs::create_dir_all(&d).unwrap();
            let p = d.join("server");
            std::fs::copy(FIXTURE, &p).unwrap();
            p
        })
        .collect()
}

fn key_of(e: &Env, program: &Path) -> String {
    let command = vec![
        program.display().to_string(),
        e.tree.scope().display().to_string(),
    ];
    mcpjail::proxy::pin_key("fx", &command, &e.tree.scope()).key
}

#[test]
fn two_servers_of_one_name_get_apart_state_directories_each_kept_across_restarts() {
    let e = Env::new();
    let programs = two_programs(&e);
    start_and_stop(&e, &programs[0]);
    let after_a = state_dirs(&e, "fx");
    assert_eq!(after_a.len(), 1, "{after_a:?}");
    std::fs::write(after_a[0].join("config/oauth-token.json"), "A-TOKEN").unwrap();
    // A different program under the same name: a directory of its own, without A's token.
    start_and_stop(&e, &programs[1]);
    let both = state_dirs(&e, "fx");
    assert_eq!(both.len(), 2, "{both:?}");
    let b_dir = both.iter().find(|d| **d != after_a[0]).unwrap();
    assert!(!b_dir.join("config/oauth-token.json").exists());
    assert!(
        !e.state.join("mcpjail-servers/fx").exists(),
        "no name-keyed directory"
    );
    // The same program again: the same directory, the token still there.
    start_and_stop(&e, &programs[0]);
    assert_eq!(state_dirs(&e, "fx"), both);
    assert_eq!(
        std::fs::read_to_string(after_a[0].join("config/oauth-token.json")).unwrap(),
        "A-TOKEN"
    );
}

#[test]
fn a_name_keyed_state_directory_is_adopted_only_when_the_pins_show_one_server() {
    let e = Env::new();
    let programs = two_programs(&e);
    let legacy = e.state.join("mcpjail-servers/fx");
    let pins = e.state.join("mcpjail/pins");
    std::fs::create_dir_all(legacy.join("config")).unwrap();
    std::fs::create_dir_all(&pins).unwrap();
    std::fs::write(legacy.join("config/token"), "OLD").unwrap();

    // Two identities were pinned as `fx`: the old directory may be either's (or planted by
    // one for the other). It stays where it is, unused, and the log says so.
    std::fs::write(
        pins.join(format!("{}.json", key_of(&e, &programs[0]))),
        "{}",
    )
    .unwrap();
    std::fs::write(
        pins.join(format!("{}.json", key_of(&e, &programs[1]))),
        "{}",
    )
    .unwrap();
    let err = start_and_stop(&e, &programs[0]);
    assert!(
        err.contains(&legacy.display().to_string()) && err.contains("mv "),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(legacy.join("config/token")).unwrap(),
        "OLD"
    );
    let dirs = state_dirs(&e, "fx");
    assert_eq!(dirs.len(), 1);
    assert!(!dirs[0].join("config/token").exists());
    std::fs::remove_dir_all(&dirs[0]).unwrap();

    // Control: only this server was ever pinned as `fx`: its old directory is moved to it.
    std::fs::remove_file(pins.join(format!("{}.json", key_of(&e, &programs[1])))).unwrap();
    start_and_stop(&e, &programs[0]);
    let dirs = state_dirs(&e, "fx");
    assert_eq!(dirs.len(), 1);
    assert!(dirs[0].ends_with(key_of(&e, &programs[0])));
    assert_eq!(
        std::fs::read_to_string(dirs[0].join("config/token")).unwrap(),
        "OLD"
    );
    assert!(!legacy.exists());
}
