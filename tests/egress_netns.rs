//! The egress proxy's listener lives in the server's own network namespace (issue 13): the jail
//! lets the server connect to one TCP port (Landlock rules name a port, not an address), so
//! without the namespace it could reach that port number on any other address, and any local
//! process could use a proxy listening on the host's loopback. Both are shown here against a
//! control: the same session in the port-only jail (which `--allow-tcp-connect` selects, as
//! ports by number need the host's network) reaches the other address and the host listener.
//! Needs `scripts/test-deps.sh` (the Node SDK for the fixture server).

mod proxy_support;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use proxy_support::*;
use serde_json::json;

fn node_modules() -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".test-env/node/node_modules");
    assert!(
        p.join("@modelcontextprotocol/sdk").exists(),
        "{} is missing; hint: run scripts/test-deps.sh",
        p.display()
    );
    std::fs::canonicalize(p).unwrap()
}

struct Outcome {
    /// What the server's direct connect to 127.0.0.2:PORT answered.
    inside: String,
    /// Whether the test's listener on 127.0.0.2:PORT got that connection.
    other_address_reached: bool,
    /// Whether a process outside the jail could connect to the proxy on the host's loopback.
    host_listener_open: bool,
    stderr: String,
}

fn probe(extra: &[&str]) -> Outcome {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(PROXY);
    cmd.args(["--log", "--allow-domain", "allowed.test", "--allow-read"])
        .arg(node_modules())
        .args(extra)
        .arg("--")
        .arg("node")
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/egress/fetch_server.mjs"))
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut s = Session::spawn(cmd);
    s.initialize();
    let port: u16 = result_text(&s.call("proxy_port", json!({})))
        .trim()
        .parse()
        .expect("the server was given HTTP_PROXY");
    let other = TcpListener::bind(("127.0.0.2", port)).expect("bind 127.0.0.2:PORT");
    other.set_nonblocking(true).unwrap();
    let inside = result_text(&s.call("tcp_connect", json!({"host": "127.0.0.2", "port": port})));
    // The server's connect() has returned: a connection it made is already queued.
    let other_address_reached = other.accept().is_ok();
    let host_listener_open = TcpStream::connect(("127.0.0.1", port)).is_ok();
    s.close_stdin();
    s.wait_exit();
    let stderr = s.stderr.lock().unwrap().join("\n");
    Outcome {
        inside,
        other_address_reached,
        host_listener_open,
        stderr,
    }
}

#[test]
fn the_egress_port_reaches_only_the_proxy_in_the_servers_own_network_namespace() {
    let o = probe(&[]);
    assert!(
        o.stderr.contains("network namespace of its own"),
        "{}",
        o.stderr
    );
    assert!(o.inside.starts_with("error"), "{}", o.inside);
    assert!(!o.other_address_reached, "the server reached 127.0.0.2");
    assert!(
        !o.host_listener_open,
        "the proxy still listens on the host's loopback"
    );
}

#[test]
fn control_the_port_only_jail_reaches_the_same_port_elsewhere() {
    // A TCP port by number needs the host's network: the port-only jail, reported as partial.
    let o = probe(&["--allow-tcp-connect", "9"]);
    assert!(
        o.stderr
            .contains("BUT Landlock rules are by port, not address"),
        "{}",
        o.stderr
    );
    assert_eq!(o.inside, "connected");
    assert!(o.other_address_reached);
    assert!(o.host_listener_open);
}
