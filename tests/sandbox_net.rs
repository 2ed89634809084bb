//! Network rules by port: with TCP ports allowed, the seccomp filter lets TCP sockets through and
//! Landlock alone decides by port. These runs prove the Landlock TCP layer itself (the escape
//! suite's TCP rows are already stopped by seccomp at `socket()`), and that `--allow-net` really
//! turns the network rules off.

#![cfg(target_os = "linux")]

use std::ffi::OsString;

use mcpjail::policy::{NetRules, Scope, ScopeEntry, ScopeSource};
use mcpjail::sandbox::{self, JailOptions};
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;

const HOSTILE: &str = env!("CARGO_BIN_EXE_mcpjail-fixture-hostile");

async fn call(net: NetRules, jailed: bool, tcp_port: u16, udp_port: u16, tool: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let scope_dir = std::fs::canonicalize(dir.path()).unwrap();
    let scope = Scope {
        write: vec![ScopeEntry {
            path: scope_dir.clone(),
            source: ScopeSource::Flag,
        }],
        net,
        ..Scope::default()
    };
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    env.push(("HOSTILE_TCP_PORT".into(), tcp_port.to_string().into()));
    env.push(("HOSTILE_UDP_PORT".into(), udp_port.to_string().into()));
    let opts = JailOptions {
        disabled: !jailed,
        require_full: false,
        env_keep: vec!["HOSTILE_TCP_PORT".into(), "HOSTILE_UDP_PORT".into()],
        ..JailOptions::default()
    };
    let jail =
        sandbox::prepare_with_env(&scope, &[HOSTILE.to_string()], &scope_dir, &opts, &env).unwrap();
    let client = ().serve(TokioChildProcess::new(jail.command()).unwrap()).await.unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()))
        .await
        .unwrap();
    let _ = client.cancel().await;
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn allowed_connect_port_works_and_other_ports_are_denied_by_landlock() {
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (a, o, u) = (
        allowed.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let net = NetRules {
        allow_all: false,
        tcp_connect_ports: vec![a],
        tcp_bind_ports: vec![],
        ..NetRules::default()
    };

    let ok = call(net.clone(), true, a, u, "tcp_connect").await;
    assert!(ok.starts_with("ESCAPED"), "allowed port must connect: {ok}");

    let control = call(net.clone(), false, o, u, "tcp_connect").await;
    assert!(control.starts_with("ESCAPED"), "control: {control}");
    let denied = call(net.clone(), true, o, u, "tcp_connect").await;
    // EACCES comes from Landlock (seccomp answers EPERM, and lets TCP sockets through here).
    assert!(
        denied.starts_with("BLOCKED") && denied.contains("os error 13"),
        "other port must be refused by Landlock: {denied}"
    );

    let bind = call(net.clone(), true, o, u, "tcp_bind").await;
    assert!(
        bind.starts_with("BLOCKED") && bind.contains("os error 13"),
        "bind must be refused by Landlock: {bind}"
    );
    let udp_jailed = call(net, true, o, u, "udp_send").await;
    assert!(
        udp_jailed.starts_with("BLOCKED"),
        "UDP stays closed: {udp_jailed}"
    );
}

#[tokio::test]
async fn allow_net_turns_network_rules_off() {
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let (o, u) = (
        other.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let net = NetRules {
        allow_all: true,
        ..NetRules::default()
    };
    let tcp = call(net.clone(), true, o, u, "tcp_connect").await;
    assert!(tcp.starts_with("ESCAPED"), "--allow-net: {tcp}");
    let udp_sent = call(net, true, o, u, "udp_send").await;
    assert!(udp_sent.starts_with("ESCAPED"), "--allow-net: {udp_sent}");
}
