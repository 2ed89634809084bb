//! Nothing a server or client writes acts on the user's terminal through the proxy: the
//! server's stderr copy, the `--log` call lines (tool names and paths the client sends) and the
//! audit log show terminal commands (OSC 52 clipboard writes, window titles, clear-screen, `\r`
//! rewrites, C1 CSI, bidi overrides) as visible escapes. The control: the same server, run
//! directly, puts those bytes on its stderr unchanged.

mod proxy_support;

use std::process::{Command, Stdio};

use proxy_support::*;
use serde_json::{json, Value};

/// Why these bytes could act on a terminal, or `None`. Layout (`\n`, `\t`, `\r\n`) is fine;
/// every other C0 control, DEL, a raw C1 byte (invalid UTF-8 0x80–0x9F), a UTF-8 C1 control
/// and a bidi mark is not.
fn acts_on_terminal(bytes: &[u8]) -> Option<String> {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let at = e.valid_up_to();
            return Some(format!(
                "invalid UTF-8 (a raw C1 byte?) at {at}: {:?}",
                &bytes[at..]
            ));
        }
    };
    for (i, c) in text.char_indices() {
        let layout = c == '\n' || c == '\t' || (c == '\r' && text[i + 1..].starts_with('\n'));
        let direction = matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && !layout) || direction {
            let line = text[..i].lines().last().unwrap_or("");
            return Some(format!("{c:?} at {i}, after {line:?}"));
        }
    }
    None
}

/// A session whose stderr goes to a file, read raw once it is over (the helpers' line reader
/// would stop at the first byte that is not UTF-8).
fn start_with_raw_stderr(t: &Tree, args: &[String], direct: bool) -> (Session, std::path::PathBuf) {
    let err_path = t
        .root()
        .join(if direct { "direct.err" } else { "proxy.err" });
    let err = std::fs::File::create(&err_path).unwrap();
    let scope = t.scope().display().to_string();
    let mut cmd = if direct {
        Command::new(FIXTURE)
    } else {
        let mut c = Command::new(PROXY);
        c.args(args)
            .args(["--env-keep", "FIXTURE_STDERR_TERMINAL", "--"])
            .arg(FIXTURE);
        c
    };
    cmd.arg(&scope)
        .current_dir(t.scope())
        .env("HOME", t.root().join("home"))
        .env("NO_COLOR", "1")
        .env("FIXTURE_STDERR_TERMINAL", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err));
    (Session::spawn(cmd), err_path)
}

#[test]
fn terminal_commands_from_server_and_client_are_shown_not_passed_to_the_terminal() {
    let t = Tree::new();
    let audit = t.root().join("audit.jsonl");
    let args = vec![
        "--log".to_string(),
        "--name".into(),
        "files".into(),
        "--log-file".into(),
        audit.display().to_string(),
    ];
    let (mut s, err_path) = start_with_raw_stderr(&t, &args, false);
    s.initialize();
    // A tool name and path arguments that carry terminal commands, as a hostile model (or a
    // server that listed such a tool) would send them: one allowed path, one denied.
    let hostile_tool = "read_file\u{1b}]0;TOOL-TITLE\u{7}\u{202e}";
    s.call(hostile_tool, json!({"path": t.p("scope/a.txt")}));
    let allowed = s.call(
        "read_file",
        json!({"path": format!("{}\u{1b}]52;c;cm0gLXJmIH4K\u{7}\u{9b}2J", t.p("scope/a.txt"))}),
    );
    assert!(!is_denial(&allowed), "{allowed}");
    let denied = s.call(
        "read_file",
        json!({"path": "/etc/passwd\u{1b}]0;DENY-TITLE\u{7}\r\u{202e}"}),
    );
    assert!(is_denial(&denied), "{denied}");
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let stderr = std::fs::read(&err_path).unwrap();
    let shown = String::from_utf8_lossy(&stderr);
    assert_eq!(acts_on_terminal(&stderr), None, "proxy stderr:\n{shown}");
    // Shown, not dropped: the user sees what the server and the client tried.
    for seen in [
        r"clipboard \x1b]52;c;cm0gLXJmIH4K\x07 end",
        r"c1 \x9b2J raw-byte end",
        r"c1 \u{9b}2J utf8 end",
        r"bidi \u{202e}txt.exe end",
        r"fake\x1b[1A\r2026-01-01",
        r"]0;SPLIT-TITLE\x07 end",
        r"files read_file\x1b]0;TOOL-TITLE\x07\u{202e} ",
        r"a.txt\x1b]52;c;cm0gLXJmIH4K\x07\u{9b}2J ",
        r"/etc/passwd\x1b]0;DENY-TITLE\x07\r\u{202e} ",
    ] {
        assert!(
            shown.contains(seen),
            "{seen} not in the proxy's stderr:\n{shown}"
        );
    }
    // The audit log: JSON lines, and no byte in it a terminal obeys (`tail -f` is safe).
    let log = std::fs::read(&audit).unwrap();
    assert_eq!(
        acts_on_terminal(&log),
        None,
        "audit log:\n{}",
        String::from_utf8_lossy(&log)
    );
    let entries: Vec<Value> = String::from_utf8_lossy(&log)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        entries.iter().any(|e| e["tool"] == hostile_tool),
        "the tool name is kept exactly in the audit log: {entries:?}"
    );
}

/// The control: the server run directly writes the same commands to its stderr unchanged.
#[test]
fn control_the_server_run_directly_writes_terminal_commands() {
    let t = Tree::new();
    let (mut s, err_path) = start_with_raw_stderr(&t, &[], true);
    s.close_stdin();
    assert_eq!(s.wait_exit(), 0);
    let stderr = std::fs::read(&err_path).unwrap();
    assert!(acts_on_terminal(&stderr).is_some());
    for raw in [
        &b"\x1b]52;c;cm0gLXJmIH4K\x07"[..],
        b"\x1b]0;PWNED-TITLE",
        b"\x1b[2J",
        b" \x9b2J",
        b"\xc2\x9b2J",
        b"\xe2\x80\xaetxt",
    ] {
        assert!(
            stderr.windows(raw.len()).any(|w| w == raw),
            "{raw:?} not in {:?}",
            String::from_utf8_lossy(&stderr)
        );
    }
}
