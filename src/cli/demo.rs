//! `mcpjail demo`: the fixture file server behind the proxy, driven by a scripted client.
//!
//! Needs nothing external: it builds a throwaway project directory (the server's scope) with a
//! symlink that points out of it, a secret next to it, a sibling directory whose name starts
//! with the project's, and a fake `~/.ssh`. Then it runs `mcpjail proxy --log` in front of the
//! `mcpjail-fixture-files` binary that ships next to this one, makes allowed and hostile calls,
//! and prints what the client saw. The proxy's own `--log` lines appear on stderr as they
//! happen.
//!
//! A second act shows why the kernel jail is there too: the `mcpjail-fixture-hostile` server
//! ignores its arguments and reads `~/.ssh/id_rsa` and the secret by itself, so the proxy has no
//! path to check. Run once with `--no-jail` (the control: the secret leaks) and once jailed (the
//! kernel refuses the same reads). Exit 0 when every call got the expected outcome, 1 otherwise.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};

use super::{GlobalArgs, UserError};

#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Keep the demo directory instead of deleting it at the end.
    #[arg(long)]
    pub keep: bool,
}

/// One scripted call and the decision the proxy must make.
struct Step {
    title: &'static str,
    tool: &'static str,
    args: Value,
    expect_allow: bool,
}

pub fn run(args: DemoArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("cannot find the mcpjail binary")?;
    let fixture = exe.with_file_name("mcpjail-fixture-files");
    if !fixture.is_file() {
        return Err(
            UserError::new(format!("the demo server {} is missing", fixture.display()))
                .with_hint(
                    "build it with `cargo build --bins` (it ships next to the mcpjail binary)",
                )
                .into(),
        );
    }
    let dir = tempfile::Builder::new()
        .prefix("mcpjail-demo-")
        .tempdir()
        .context("cannot create the demo directory")?;
    let root = dir
        .path()
        .canonicalize()
        .context("cannot resolve the demo directory")?;
    let project = root.join("project");
    let files: [(&str, &str); 5] = [
        ("project/notes.txt", "meeting at 10, bring the slides\n"),
        ("project/src/main.rs", "fn main() {}\n"),
        ("secret.txt", "DEMO-SECRET: the launch codes\n"),
        ("project-evil/loot.txt", "sibling-prefix target\n"),
        ("home/.ssh/id_rsa", "-----BEGIN FAKE KEY-----\n"),
    ];
    for (rel, text) in files {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    #[cfg(unix)]
    std::os::unix::fs::symlink(root.join("secret.txt"), project.join("escape"))
        .context("cannot create the demo symlink")?;

    let p = |rel: &str| root.join(rel).display().to_string();
    let steps = vec![
        Step {
            title: "read a file in the project",
            tool: "read_file",
            args: json!({"path": p("project/notes.txt")}),
            expect_allow: true,
        },
        Step {
            title: "write a file in the project",
            tool: "write_file",
            args: json!({"path": "hello.txt", "content": "written through mcpjail\n"}),
            expect_allow: true,
        },
        Step {
            title: "read the secret by absolute path",
            tool: "read_file",
            args: json!({"path": p("secret.txt")}),
            expect_allow: false,
        },
        Step {
            title: "read the secret with ../ traversal",
            tool: "read_file",
            args: json!({"path": "../secret.txt"}),
            expect_allow: false,
        },
        Step {
            title: "read through a symlink that escapes",
            tool: "read_file",
            args: json!({"path": "escape"}),
            expect_allow: false,
        },
        Step {
            title: "read a sibling directory sharing the prefix",
            tool: "read_file",
            args: json!({"path": p("project-evil/loot.txt")}),
            expect_allow: false,
        },
        Step {
            title: "read ~/.ssh/id_rsa",
            tool: "read_file",
            args: json!({"path": "~/.ssh/id_rsa"}),
            expect_allow: false,
        },
    ];

    let hostile = exe.with_file_name("mcpjail-fixture-hostile");
    if !hostile.is_file() {
        return Err(
            UserError::new(format!("the demo server {} is missing", hostile.display()))
                .with_hint(
                    "build it with `cargo build --bins` (it ships next to the mcpjail binary)",
                )
                .into(),
        );
    }

    println!(
        "mcpjail demo, act 1: a file server confined to {}",
        project.display()
    );
    println!("(the proxy's --log lines follow on stderr)\n");
    let home = root.join("home");
    let files_session = Session {
        proxy_flags: vec![],
        server: vec![fixture.into_os_string(), project.clone().into_os_string()],
        cwd: &project,
        env: vec![("HOME", home.clone().into_os_string())],
    };
    let outcome = drive(&exe, &files_session, &steps, global);
    let act1 = match outcome {
        Ok(results) => report_act1(&steps, &results),
        Err(e) => Err(e),
    };

    println!("\nmcpjail demo, act 2: a hostile server that ignores its arguments");
    println!("(its tools take no path, so the proxy has nothing to check: only the jail stands)\n");
    let hostile_env = vec![
        ("HOME", home.clone().into_os_string()),
        ("HOSTILE_SECRET", root.join("secret.txt").into_os_string()),
    ];
    let hostile_steps = [
        ("read ~/.ssh/id_rsa by itself", "read_ssh_key"),
        ("read the secret by itself", "read_root_only"),
    ];
    let act2 = act2(
        &exe,
        &hostile,
        &project,
        hostile_env,
        &hostile_steps,
        global,
    );

    if args.keep {
        let kept = dir.keep();
        println!("\ndemo directory kept at {}", kept.display());
    }
    let all_ok = act1? & act2?;
    if all_ok {
        println!(
            "\nevery call got the expected outcome: denied calls never reached the server, and \
             what the server tried on its own the kernel refused."
        );
        Ok(ExitCode::SUCCESS)
    } else {
        println!("\nsome calls did not get the expected outcome: the demo FAILED.");
        Ok(ExitCode::from(1))
    }
}

/// Print act 1's table; true when every call got the expected decision and nothing leaked.
fn report_act1(steps: &[Step], results: &[(bool, String)]) -> anyhow::Result<bool> {
    println!();
    let mut all_ok = true;
    for (step, (allowed, text)) in steps.iter().zip(results) {
        let ok = *allowed == step.expect_allow;
        all_ok &= ok;
        let verdict = if *allowed { "ALLOWED" } else { "DENIED " };
        let mark = if ok { "ok " } else { "BAD" };
        println!(
            "[{mark}] {verdict} {:<46} → {}",
            step.title,
            first_line(text)
        );
    }
    if results.iter().any(|(_, t)| t.contains("DEMO-SECRET")) {
        all_ok = false;
        println!("\nthe secret reached the client through the proxy");
    }
    Ok(all_ok)
}

/// Run the hostile server twice — unjailed (the control: its reads must succeed, or the demo
/// proves nothing) and jailed (the same reads must fail) — and print both outcomes side by side.
fn act2(
    exe: &Path,
    hostile: &Path,
    project: &Path,
    env: Vec<(&'static str, std::ffi::OsString)>,
    tools: &[(&'static str, &'static str)],
    global: &GlobalArgs,
) -> anyhow::Result<bool> {
    let steps: Vec<Step> = tools
        .iter()
        .map(|(title, tool)| Step {
            title,
            tool,
            args: json!({}),
            expect_allow: true,
        })
        .collect();
    let session = |proxy_flags: Vec<&str>| Session {
        proxy_flags: proxy_flags.into_iter().map(Into::into).collect(),
        server: vec![hostile.as_os_str().to_owned()],
        cwd: project,
        env: env.clone(),
    };
    let keep = ["--env-keep", "HOSTILE_SECRET"];
    let control = drive(
        exe,
        &session([&keep[..], &["--no-jail"]].concat()),
        &steps,
        global,
    )?;
    let jailed = drive(exe, &session(keep.to_vec()), &steps, global)?;
    println!();
    let mut all_ok = true;
    for ((step, (_, without)), (_, with)) in steps.iter().zip(&control).zip(&jailed) {
        let ok = without.starts_with("ESCAPED") && with.starts_with("BLOCKED");
        all_ok &= ok;
        let mark = if ok { "ok " } else { "BAD" };
        println!("[{mark}] {}", step.title);
        println!(
            "        without the jail (--no-jail) → {}",
            first_line(without)
        );
        println!(
            "        jailed                       → {}",
            first_line(with)
        );
    }
    Ok(all_ok)
}

fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(110)
        .collect()
}

/// How to start one proxy session: its flags, the server command line, cwd and environment.
struct Session<'a> {
    proxy_flags: Vec<std::ffi::OsString>,
    server: Vec<std::ffi::OsString>,
    cwd: &'a Path,
    env: Vec<(&'static str, std::ffi::OsString)>,
}

/// Run the proxy for `session` and play `steps`; per step: (allowed, text the client saw).
fn drive(
    exe: &Path,
    session: &Session,
    steps: &[Step],
    global: &GlobalArgs,
) -> anyhow::Result<Vec<(bool, String)>> {
    let mut cmd = Command::new(exe);
    cmd.arg("proxy")
        .arg("--log")
        .arg("--name")
        .arg("demo")
        // A demo must not leave tool pins in the user's state directory.
        .arg("--pin")
        .arg("off")
        .arg("--color")
        .arg(match global.color.use_color_on_stderr() {
            true => "always",
            false => "never",
        })
        .args(&session.proxy_flags)
        .arg("--")
        .args(&session.server)
        .current_dir(session.cwd)
        .envs(session.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {} proxy", exe.display()))?;
    let mut stdin = child.stdin.take().context("the proxy's stdin")?;
    let stdout = child.stdout.take().context("the proxy's stdout")?;
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = move |msg: Value| -> anyhow::Result<()> {
        writeln!(stdin, "{msg}").context("cannot write to the proxy")?;
        stdin.flush().context("cannot write to the proxy")?;
        Ok(())
    };
    let recv = |id: i64| -> anyhow::Result<Value> {
        loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .context("the proxy did not answer within 30 s")?;
            let msg: Value = serde_json::from_str(&line)
                .with_context(|| format!("the proxy sent a line that is not JSON: {line}"))?;
            if msg.get("id") == Some(&json!(id)) {
                return Ok(msg);
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcpjail-demo", "version": env!("CARGO_PKG_VERSION")}}}),
    )?;
    let init = recv(1)?;
    if init.get("result").is_none() {
        bail!("the demo server did not initialize: {init}");
    }
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let mut results = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let id = 10 + i as i64;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": step.tool, "arguments": step.args}}))?;
        let resp = recv(id)?;
        let denied = resp["result"]["_meta"]["mcpjail/denial"].is_object();
        let text = resp["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| resp.to_string());
        let failed = resp["result"]["isError"] == json!(true) || resp.get("error").is_some();
        results.push((!denied && !failed, text));
    }
    // Dropping the sender closes the proxy's stdin: the session ends cleanly.
    drop(send);
    let status = child.wait().context("cannot wait for the proxy")?;
    if !status.success() {
        bail!("the proxy exited with {status}");
    }
    Ok(results)
}
