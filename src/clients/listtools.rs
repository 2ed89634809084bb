//! What does a configured server list now? Launch it, hand-shake, and page through
//! `tools/list` — the live side of `mcpjail verify`, compared with the digest a signed scan
//! record holds.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::startcheck::StartTarget;

/// Longest `tools/list` we follow (pages), so a server cannot keep us paging forever.
const MAX_PAGES: usize = 100;

/// The server's tools, or why they could not be listed.
pub fn list_tools(target: &StartTarget, limit: Duration) -> Result<Vec<Value>, String> {
    let (program, args) = target
        .argv
        .split_first()
        .ok_or_else(|| "the entry has no command".to_string())?;
    let mut child = Command::new(program)
        .args(args)
        .envs(target.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&target.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `{program}`: {e}"))?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("the entry's output could not be piped".into());
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(session(stdin, BufReader::new(stdout)));
    });
    let outcome = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| Err(format!("no tools/list answer within {}s", limit.as_secs())));
    // The session thread has dropped stdin by now when it finished (a stdio server's signal
    // to stop); a server that is still running after that, or that timed out, is killed.
    let _ = child.kill();
    let _ = child.wait();
    outcome
}

fn session(mut stdin: impl Write, mut stdout: impl BufRead) -> Result<Vec<Value>, String> {
    let mut send = |msg: Value| -> Result<(), String> {
        writeln!(stdin, "{msg}")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to the server: {e}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": "verify-init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcpjail-verify", "version": env!("CARGO_PKG_VERSION")}}}),
    )?;
    answer(&mut stdout, "verify-init")?;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    for page in 0..MAX_PAGES {
        let id = format!("verify-list-{page}");
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}))?;
        let result = answer(&mut stdout, &id)?;
        if let Some(list) = result.get("tools").and_then(Value::as_array) {
            tools.extend(list.iter().cloned());
        }
        cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
        if cursor.is_none() {
            return Ok(tools);
        }
    }
    Err(format!("tools/list still had more pages after {MAX_PAGES}"))
}

/// The `result` of the answer to `id` (other lines — logs, notifications — are skipped).
fn answer(stdout: &mut impl BufRead, id: &str) -> Result<Value, String> {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line) {
            Ok(0) | Err(_) => return Err("the server exited before answering".into()),
            Ok(_) => {}
        }
        let Ok(msg) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        if msg.get("id").and_then(Value::as_str) != Some(id) {
            continue;
        }
        if let Some(result) = msg.get("result") {
            return Ok(result.clone());
        }
        let why = msg
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("an answer without a result");
        return Err(why.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_followed_and_joined() {
        let script = r#"
read a; echo '{"jsonrpc":"2.0","id":"verify-init","result":{}}'
read b; read c; echo '{"jsonrpc":"2.0","method":"notifications/message"}'
echo '{"jsonrpc":"2.0","id":"verify-list-0","result":{"tools":[{"name":"a"}],"nextCursor":"p2"}}'
read d; echo '{"jsonrpc":"2.0","id":"verify-list-1","result":{"tools":[{"name":"b"}]}}'
cat >/dev/null"#;
        let target = StartTarget {
            label: "t".into(),
            argv: vec!["sh".into(), "-c".into(), script.into()],
            env: vec![],
            cwd: std::env::temp_dir(),
        };
        let tools = list_tools(&target, Duration::from_secs(10)).unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
