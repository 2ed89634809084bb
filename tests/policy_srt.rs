//! The srt export, enforced by srt itself: `mcpjail policy export --format srt` settings run
//! the fixture file server under Anthropic's sandbox-runtime, and a read outside the derived
//! scope is blocked by srt (the fixture server checks nothing itself). Control: the same call
//! without srt reads the file.
//!
//! Needs `srt` (npm `@anthropic-ai/sandbox-runtime`, pinned in tests/js/package.json) and
//! Debian's bubblewrap, socat and ripgrep; `scripts/test-deps.sh` installs all four. The test
//! finds srt at `$MCPJAIL_SRT` or `.test-env/node/node_modules/.bin/srt` and fails (does not
//! skip) when it or the Debian tools are missing.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn srt() -> PathBuf {
    let p = std::env::var_os("MCPJAIL_SRT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".test-env/node/node_modules/.bin/srt")
        });
    assert!(
        p.exists(),
        "srt not found at {}\nhint: run scripts/test-deps.sh (installs @anthropic-ai/sandbox-runtime \
         and apt bubblewrap socat ripgrep), or set MCPJAIL_SRT",
        p.display()
    );
    // srt itself needs these on PATH; without them it fails in ways that look like a bad export.
    for tool in ["bwrap", "socat", "rg"] {
        let found = std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(tool).is_file()));
        assert!(
            found,
            "{tool} is not on PATH but srt needs it\nhint: run scripts/test-deps.sh as root \
             (apt-get install bubblewrap socat ripgrep)"
        );
    }
    p
}

/// Run `cmd` as an MCP server, call `read_file` on each path, return the result texts and
/// whether each was an error.
fn read_files(mut cmd: Command, paths: &[&Path]) -> Vec<(bool, String)> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut call = |msg: Value| -> Value {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let id = msg["id"].clone();
        loop {
            let line = lines.next().expect("server closed stdout").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    call(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let mut out = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        let r = call(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": p}}}),
        );
        let res = &r["result"];
        out.push((
            res["isError"] == true,
            res["content"][0]["text"].as_str().unwrap_or("").to_string(),
        ));
    }
    drop(stdin);
    let _ = child.wait();
    out
}

#[test]
fn exported_srt_settings_block_an_out_of_scope_read() {
    let srt = srt();
    let fixture = env!("CARGO_BIN_EXE_mcpjail-fixture-files");
    let d = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(d.path()).unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::write(home.join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::write(root.join("data/in.txt"), "in-scope").unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .current_dir(&root)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", root.join("cfg"))
        .env("XDG_STATE_HOME", root.join("state"))
        .args(["-q", "policy", "export", "--format", "srt", "--"])
        .arg(fixture)
        .arg(root.join("data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let settings = root.join("srt.json");
    std::fs::write(&settings, &out.stdout).unwrap();

    let secret = home.join("secret.txt");
    let inside = root.join("data/in.txt");

    // Control: unconfined, the fixture reads both.
    let direct = read_files(Command::new(fixture), &[&inside, &secret]);
    assert_eq!(direct[0], (false, "in-scope".to_string()));
    assert_eq!(direct[1], (false, "TOP-SECRET".to_string()));

    let under_srt = |settings: &Path| {
        let mut cmd = Command::new(&srt);
        cmd.current_dir(&root)
            .env("HOME", &home)
            .arg("--settings")
            .arg(settings)
            .arg(fixture)
            .arg(root.join("data"));
        read_files(cmd, &[&inside, &secret])
    };
    // Control: srt with empty settings leaves reads open, so the block below is the export's.
    let open = root.join("open.json");
    std::fs::write(
        &open,
        json!({"filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": []},
               "network": {"allowedDomains": [], "deniedDomains": []}})
        .to_string(),
    )
    .unwrap();
    assert_eq!(under_srt(&open)[1], (false, "TOP-SECRET".to_string()));

    // Under srt with the exported settings: in scope works, the home directory is closed.
    let jailed = under_srt(&settings);
    assert_eq!(jailed[0], (false, "in-scope".to_string()));
    assert!(
        jailed[1].0,
        "the secret was read under srt: {:?}",
        jailed[1]
    );
    assert!(!jailed[1].1.contains("TOP-SECRET"));
}
