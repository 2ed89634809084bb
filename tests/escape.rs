//! The escape suite: a hostile MCP server tries every known way out of the jail.
//!
//! For each attempt the server is started twice through `sandbox::prepare_with_env` and driven
//! by a real MCP client (rmcp over stdio): once with `--no-jail` semantics (CONTROL — the
//! attempt must succeed, proving it is a real escape on this machine) and once jailed (JAILED —
//! it must be blocked and the canary must not come back). Every run is a fresh child process.
//!
//! The same attempts then run through the real `mcpjail-proxy` binary (`--no-jail` for the
//! control), with the targets passed by `--env-keep`: the proxy forwards the calls (they carry no
//! path arguments) and the jail alone has to stop them. There the parent is the proxy, and the
//! signal sent is SIGURG (ignored by default) so the control run does not kill the proxy.
//!
//! Run with `cargo test --test escape -- --nocapture` to see the tables.

#![cfg(target_os = "linux")]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpjail::policy::{Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;

const HOSTILE: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-hostile");

/// Every variable the hostile server reads (passed with env_keep when jailed).
const TARGET_VARS: &[&str] = &[
    "HOSTILE_SECRET",
    "HOSTILE_SCOPE",
    "HOSTILE_OUTSIDE",
    "HOSTILE_MCP_JSON",
    "HOSTILE_RUNTIME_CANARY",
    "HOSTILE_TMP_TARGET",
    "HOSTILE_TCP_PORT",
    "HOSTILE_UDP_PORT",
    "HOSTILE_ABSTRACT",
    "HOSTILE_SIGNAL",
    "HOSTILE_PARENT",
];

const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");

const ATTEMPTS: &[(&str, &str)] = &[
    ("read ~/.ssh/id_rsa", "read_ssh_key"),
    ("read root-only file outside scope", "read_root_only"),
    ("write outside scope", "write_outside"),
    ("append ~/.bashrc", "write_bashrc"),
    ("rewrite client .mcp.json", "rewrite_mcp_json"),
    ("symlink in scope -> outside, read", "symlink_out"),
    ("hard-link outside file into scope", "hardlink_in"),
    ("rename scope file to outside", "rename_out"),
    ("exec /bin/sh to cat the secret", "exec_shell_read"),
    (
        "read canary next to runtime in real HOME",
        "read_runtime_neighbour",
    ),
    ("write /tmp outside private TMPDIR", "write_tmp"),
    ("AWS_SECRET_ACCESS_KEY in environment", "env_secret"),
    ("TCP connect to loopback listener", "tcp_connect"),
    ("TCP bind", "tcp_bind"),
    ("UDP send to loopback", "udp_send"),
    ("abstract UNIX socket connect", "abstract_unix_connect"),
    ("signal the parent (USR1; URG via proxy)", "signal_parent"),
    ("ptrace the parent", "ptrace_parent"),
    ("read /proc/<parent>/environ", "parent_environ"),
    ("open via /proc/self/root/...", "proc_self_root"),
    ("io_uring openat of the secret", "io_uring_open"),
];

struct World {
    _root: tempfile::TempDir,
    token: String,
    home: PathBuf,
    scope: PathBuf,
    outside: PathBuf,
    mcp_json: PathBuf,
    tmp_target: PathBuf,
    runtime_dir: PathBuf,
    runtime_bin: PathBuf,
    env: Vec<(OsString, OsString)>,
    _tcp: std::net::TcpListener,
    _udp: std::net::UdpSocket,
    _abstract: std::os::unix::net::UnixListener,
}

impl Drop for World {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.runtime_dir);
        let _ = std::fs::remove_file(&self.tmp_target);
    }
}

fn world() -> World {
    let root = tempfile::Builder::new()
        .prefix("mcpjail-escape-")
        .tempdir()
        .unwrap();
    let base = std::fs::canonicalize(root.path()).unwrap();
    let token = format!("CANARY-{:016x}", rand_u64());
    // Names of things carry a different id than the canary contents, so a BLOCKED message that
    // names a path never looks like a leak.
    let id = format!("{:08x}", rand_u64() as u32);
    let home = base.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), format!("ssh-key {token}")).unwrap();
    std::fs::write(home.join(".bashrc"), "# original bashrc\n").unwrap();
    let project = base.join("project");
    let scope = project.join("data");
    std::fs::create_dir_all(&scope).unwrap();
    let mcp_json = project.join(".mcp.json");
    std::fs::write(&mcp_json, r#"{"mcpServers":{}}"#).unwrap();
    let outside = base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let secret = outside.join("shadow");
    std::fs::write(&secret, format!("root-only {token}")).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let tmp_target = std::env::temp_dir().join(format!("mcpjail-escape-{id}"));

    // A "runtime" living in the real HOME (like pyenv under ~/.pyenv): the server binary is run
    // from there, and a canary sits right next to its directory.
    let real_home = PathBuf::from(std::env::var("HOME").expect("HOME"));
    let runtime_dir = real_home.join(format!(".mcpjail-escape-runtime-{id}"));
    std::fs::create_dir_all(runtime_dir.join("bin")).unwrap();
    let runtime_bin = runtime_dir.join("bin/mcpjail-fixture-hostile");
    std::fs::copy(HOSTILE, &runtime_bin).unwrap();
    let runtime_canary = runtime_dir.join("canary");
    std::fs::write(&runtime_canary, format!("next to the runtime {token}")).unwrap();

    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    use std::os::linux::net::SocketAddrExt;
    let abstract_name = format!("mcpjail-escape-{id}");
    let addr =
        std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
    let abstract_listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();

    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k != "HOME" && k != "AWS_SECRET_ACCESS_KEY")
        .collect();
    let mut set = |k: &str, v: &str| env.push((k.into(), v.into()));
    set("HOME", home.to_str().unwrap());
    set("AWS_SECRET_ACCESS_KEY", &format!("aws-{token}"));
    set("HOSTILE_SECRET", secret.to_str().unwrap());
    set("HOSTILE_SCOPE", scope.to_str().unwrap());
    set("HOSTILE_OUTSIDE", outside.to_str().unwrap());
    set("HOSTILE_MCP_JSON", mcp_json.to_str().unwrap());
    set("HOSTILE_RUNTIME_CANARY", runtime_canary.to_str().unwrap());
    set("HOSTILE_TMP_TARGET", tmp_target.to_str().unwrap());
    set(
        "HOSTILE_TCP_PORT",
        &tcp.local_addr().unwrap().port().to_string(),
    );
    set(
        "HOSTILE_UDP_PORT",
        &udp.local_addr().unwrap().port().to_string(),
    );
    set("HOSTILE_ABSTRACT", &abstract_name);

    World {
        _root: root,
        token,
        home,
        scope,
        outside,
        mcp_json,
        tmp_target,
        runtime_dir,
        runtime_bin,
        env,
        _tcp: tcp,
        _udp: udp,
        _abstract: abstract_listener,
    }
}

fn rand_u64() -> u64 {
    let mut buf = [0u8; 8];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf))
        .unwrap();
    u64::from_ne_bytes(buf)
}

fn scope_of(w: &World) -> Scope {
    Scope {
        write: vec![ScopeEntry {
            path: w.scope.clone(),
            source: ScopeSource::Flag,
        }],
        ..Scope::default()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Via {
    /// `sandbox::prepare_with_env(..).command()`: the jail itself.
    Direct,
    /// The `mcpjail-proxy` binary in front of the server.
    Proxy,
}

/// Start the hostile server (jailed or not), call one tool, return its text.
async fn attempt(w: &World, program: &Path, tool: &str, jailed: bool, via: Via) -> String {
    let opts = JailOptions {
        disabled: !jailed,
        require_full: jailed,
        env_keep: TARGET_VARS.iter().map(|s| s.to_string()).collect(),
        ..JailOptions::default()
    };
    let command = vec![program.to_string_lossy().into_owned()];
    // Spawned directly, the server's parent is this test process: name it, so the jailed
    // server (whose parent lies outside its PID namespace, getppid() = 0) is still aimed at it.
    let mut env = w.env.clone();
    if via == Via::Direct {
        env.push((
            "HOSTILE_PARENT".into(),
            std::process::id().to_string().into(),
        ));
    }
    let jail = sandbox::prepare_with_env(&scope_of(w), &command, &w.scope, &opts, &env)
        .expect("prepare the jail");
    let cmd = match via {
        Via::Direct => jail.command(),
        Via::Proxy => {
            let mut c = tokio::process::Command::new(PROXY);
            c.arg("--allow-write").arg(&w.scope);
            if jailed {
                c.arg("--require-full");
            } else {
                c.arg("--no-jail");
            }
            for v in TARGET_VARS {
                c.arg("--env-keep").arg(v);
            }
            c.arg("--").arg(program);
            c.current_dir(&w.scope)
                .env_clear()
                .envs(w.env.iter().cloned());
            // Ignored by default: the control run must not kill the proxy.
            c.env("HOSTILE_SIGNAL", libc::SIGURG.to_string());
            c
        }
    };
    let transport = TokioChildProcess::new(cmd).expect("spawn the hostile server");
    let client = ().serve(transport).await.expect("MCP initialize");
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()))
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

/// Put back what a control run changed, so the jailed run starts from the same state.
fn reset(w: &World) {
    let _ = std::fs::remove_file(&w.tmp_target);
    std::fs::write(w.home.join(".bashrc"), "# original bashrc\n").unwrap();
    std::fs::write(&w.mcp_json, r#"{"mcpServers":{}}"#).unwrap();
    for entry in std::fs::read_dir(&w.scope).unwrap() {
        let _ = std::fs::remove_file(entry.unwrap().path());
    }
    for entry in std::fs::read_dir(&w.outside).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name().unwrap() != "shadow" {
            let _ = std::fs::remove_file(p);
        }
    }
}

struct Row {
    name: &'static str,
    tool: &'static str,
    control: String,
    jailed: String,
}

#[tokio::test]
async fn every_escape_succeeds_unjailed_and_is_blocked_jailed() {
    suite(Via::Direct).await;
}

#[tokio::test]
async fn through_the_proxy_every_escape_is_blocked_jailed() {
    suite(Via::Proxy).await;
}

async fn suite(via: Via) {
    // The direct control run signals this process (the hostile server's parent): catch it.
    let mut usr1 =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1()).unwrap();
    let w = world();

    let mut rows = Vec::new();
    for (name, tool) in ATTEMPTS {
        let program = if *tool == "read_runtime_neighbour" {
            w.runtime_bin.clone()
        } else {
            PathBuf::from(HOSTILE)
        };
        let control = attempt(&w, &program, tool, false, via).await;
        if via == Via::Direct && *tool == "signal_parent" && control.starts_with("ESCAPED") {
            mcpjail::proxy::timer::timeout(Duration::from_secs(10), usr1.recv())
                .await
                .expect("the control run's SIGUSR1 arrives");
        }
        reset(&w);
        let jailed = attempt(&w, &program, tool, true, via).await;
        // Side effects a jailed run must not leave.
        assert!(
            !w.outside.join("escaped-write.txt").exists(),
            "{tool}: jailed run wrote outside the scope"
        );
        assert!(
            !w.tmp_target.exists(),
            "{tool}: jailed run wrote to the temp dir"
        );
        assert_eq!(
            std::fs::read_to_string(w.home.join(".bashrc")).unwrap(),
            "# original bashrc\n",
            "{tool}: jailed run changed .bashrc"
        );
        assert_eq!(
            std::fs::read_to_string(&w.mcp_json).unwrap(),
            r#"{"mcpServers":{}}"#,
            "{tool}: jailed run changed .mcp.json"
        );
        rows.push(Row {
            name,
            tool,
            control,
            jailed,
        });
    }

    print_table(
        match via {
            Via::Direct => "direct spawn (sandbox::prepare)",
            Via::Proxy => "through mcpjail-proxy (--no-jail as control)",
        },
        &rows,
    );
    check(&rows, &w.token);
}

fn short(s: &str) -> String {
    let one = s.replace('\n', " ");
    match one.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

fn print_table(title: &str, rows: &[Row]) {
    println!("\nescape suite — {title}");
    println!(
        "{:<42} | {:<8} | {:<8} | jailed result",
        "attempt", "control", "jailed"
    );
    println!("{}", "-".repeat(150));
    for r in rows {
        let c = if r.control.starts_with("ESCAPED") {
            "ESCAPED"
        } else {
            "no (!)"
        };
        let j = if r.jailed.starts_with("BLOCKED") {
            "BLOCKED"
        } else {
            "ESCAPED!"
        };
        println!(
            "{:<42} | {:<8} | {:<8} | {}",
            r.name,
            c,
            j,
            short(&r.jailed)
        );
    }
}

fn check(rows: &[Row], token: &str) {
    let mut failures = Vec::new();
    for r in rows {
        if !r.control.starts_with("ESCAPED") {
            failures.push(format!(
                "{} ({}): CONTROL did not escape: {}",
                r.name, r.tool, r.control
            ));
        }
        if !r.jailed.starts_with("BLOCKED") {
            failures.push(format!(
                "{} ({}): JAILED escaped: {}",
                r.name, r.tool, r.jailed
            ));
        }
        if r.jailed.contains(token) {
            failures.push(format!(
                "{} ({}): canary leaked under the jail: {}",
                r.name, r.tool, r.jailed
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "escape suite failures:\n{}",
        failures.join("\n")
    );
}
