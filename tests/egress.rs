//! Network by name (issue 13): a jailed server reaches only the domains `--allow-domain` allows,
//! through the egress proxy inside `mcpjail-proxy`; everything else is refused, by the proxy
//! (with the flag that would allow it in the tool's error) or by the kernel.
//!
//! No internet here: `fixtures/egress/origin.mjs` serves HTTP and HTTPS (a self-signed
//! certificate the clients trust through `NODE_EXTRA_CA_CERTS` / `SSL_CERT_FILE`) on 127.0.0.1,
//! and the proxy resolves the test names `allowed.test` and `denied.test` to it through its
//! test-only name map (`MCPJAIL_TEST_RESOLVE`, read from the proxy's own environment).
//!
//! Servers: `fixtures/egress/fetch_server.mjs` (Node, the TypeScript SDK; fetch, a direct TCP
//! connect, UDP, a DNS query) and `mcp-server-fetch` from PyPI (httpx, which honours the proxy
//! variables). Each refusal has a control: the same call under `--no-jail`, or with the domain
//! allowed, succeeds. Needs `scripts/test-deps.sh`.

mod proxy_support;
mod support;

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{json, Value};
use support::*;

const RESOLVE: &str = "allowed.test=127.0.0.1,denied.test=127.0.0.1";

/// The loopback "internet": HTTP and HTTPS origins and the certificate they present.
struct Origin {
    child: Child,
    _stdin: ChildStdin,
    http: u16,
    https: u16,
    cert: PathBuf,
    _dir: tempfile::TempDir,
}

impl Origin {
    fn start() -> Origin {
        let dir = tempfile::tempdir().unwrap();
        let cert = dir.path().join("origin-cert.crt");
        test_env("node/node_modules/node-forge/package.json");
        let mut child = Command::new("node")
            .arg(repo_root().join("fixtures/egress/origin.mjs"))
            .arg(&cert)
            .args(["allowed.test", "denied.test", "localhost"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot start node fixtures/egress/origin.mjs");
        let stdin = child.stdin.take().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ports: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("origin.mjs did not print its ports: {line:?}"));
        Origin {
            child,
            _stdin: stdin,
            http: ports["http"].as_u64().unwrap() as u16,
            https: ports["https"].as_u64().unwrap() as u16,
            cert: std::fs::canonicalize(&cert).unwrap(),
            _dir: dir,
        }
    }

    fn url(&self, scheme: &str, host: &str, path: &str) -> String {
        let port = if scheme == "https" {
            self.https
        } else {
            self.http
        };
        format!("{scheme}://{host}:{port}{path}")
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A UDP socket standing in for a DNS server and any UDP peer: it only counts what arrives.
struct UdpSink(UdpSocket);

impl UdpSink {
    fn new() -> UdpSink {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.set_nonblocking(true).unwrap();
        UdpSink(s)
    }
    fn port(&self) -> u16 {
        self.0.local_addr().unwrap().port()
    }
    /// Datagrams already delivered. Loopback delivery happens inside the sender's sendto(), and
    /// every sender here has returned before this is read, so nothing can still be in flight.
    fn received(&self) -> usize {
        let mut buf = [0u8; 2048];
        let mut n = 0;
        while self.0.recv_from(&mut buf).is_ok() {
            n += 1;
        }
        n
    }
}

fn node_modules() -> PathBuf {
    std::fs::canonicalize(test_env("node/node_modules")).unwrap()
}

fn node_server() -> Vec<String> {
    vec![
        "node".into(),
        repo_root()
            .join("fixtures/egress/fetch_server.mjs")
            .display()
            .to_string(),
    ]
}

fn fetch(url: &str) -> Value {
    call("fetch_url", json!({ "url": url }))
}

fn client_env(home: &Path, origin: &Origin) -> Vec<(&'static str, String)> {
    vec![
        ("HOME", home.display().to_string()),
        ("MCPJAIL_TEST_RESOLVE", RESOLVE.into()),
        ("NODE_EXTRA_CA_CERTS", origin.cert.display().to_string()),
        ("SSL_CERT_FILE", origin.cert.display().to_string()),
    ]
}

/// Proxy flags for the Node server: the runtime it imports and the certificate it trusts.
fn node_flags(origin: &Origin, log_file: &Path, extra: &[String]) -> Vec<String> {
    let mut flags = vec![
        "--log".to_string(),
        "--log-file".into(),
        log_file.display().to_string(),
        "--allow-read".into(),
        node_modules().display().to_string(),
        "--allow-read".into(),
        origin.cert.display().to_string(),
        "--env-keep".into(),
        "NODE_EXTRA_CA_CERTS".into(),
    ];
    flags.extend(extra.iter().cloned());
    flags
}

fn net_events(log_file: &Path) -> Vec<Value> {
    std::fs::read_to_string(log_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "net")
        .collect()
}

#[test]
fn node_server_reaches_allowed_names_only_and_the_kernel_refuses_the_rest() {
    let origin = Origin::start();
    let sink = UdpSink::new();
    let home = tempfile::tempdir().unwrap();
    let log_file = home.path().join("audit.jsonl");
    let allow = [
        "--allow-domain".to_string(),
        format!("allowed.test:{}", origin.http),
        "--allow-domain".into(),
        format!("allowed.test:{}", origin.https),
    ];
    let flags = node_flags(&origin, &log_file, &allow);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = proxied(&flags, &node_server());
    let udp = format!("127.0.0.1:{}", sink.port());
    let script = json!({"steps": [
        fetch(&origin.url("http", "allowed.test", "/plain")),                       // 0
        fetch(&origin.url("https", "allowed.test", "/tls")),                        // 1
        fetch(&origin.url("http", "denied.test", "/")),                             // 2
        fetch(&origin.url("https", "denied.test", "/")),                            // 3
        fetch(&origin.url("http", "127.0.0.1", "/")),                               // 4
        fetch(&origin.url("http", "localhost", "/")),                               // 5
        call("tcp_connect", json!({"host": "127.0.0.1", "port": origin.http})),      // 6
        call("udp_send", json!({"host": "127.0.0.1", "port": sink.port()})),         // 7
        call("dns_query", json!({"server": udp, "name": "allowed.test"})),           // 8
    ]});
    let run = run_client(
        Client::Ts,
        "node fetch server jailed",
        &server,
        &script,
        &client_env(home.path(), &origin),
        home.path(),
    );

    assert_eq!(run.ok_text(0), "status 200: origin http /plain\n");
    assert_eq!(run.ok_text(1), "status 200: origin https /tls\n");
    for (i, rule) in [
        (2, format!("--allow-domain denied.test:{}", origin.http)),
        (3, format!("--allow-domain denied.test:{}", origin.https)),
        (4, format!("--allow-domain 127.0.0.1:{}", origin.http)),
        (5, format!("--allow-domain localhost:{}", origin.http)),
    ] {
        assert!(run.is_error(i), "step {i}: {}", run.text(i));
        assert!(run.text(i).contains("403"), "step {i}: {}", run.text(i));
        assert!(run.text(i).contains(&rule), "step {i}: {}", run.text(i));
    }
    assert!(run.text(4).contains("IP address"), "{}", run.text(4));
    // The kernel: Landlock refuses a TCP connect to any port but the egress proxy's (EACCES),
    // seccomp refuses UDP sockets (EPERM) -- and with them DNS.
    assert!(run.is_error(6), "{}", run.text(6));
    assert!(run.text(6).contains("EACCES"), "{}", run.text(6));
    assert!(run.is_error(7), "{}", run.text(7));
    assert!(run.text(7).contains("EPERM"), "{}", run.text(7));
    assert!(run.is_error(8), "{}", run.text(8));
    assert_eq!(sink.received(), 0, "a datagram left the jail");

    // --log: one line per request, allowed with bytes and time, denied with the hint.
    assert!(
        run.stderr
            .contains(&format!("NET ALLOW allowed.test:{} HTTP GET", origin.http)),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("NET ALLOW allowed.test:{} CONNECT", origin.https)),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!(
            "NET DENY denied.test:{} CONNECT (denied.test:{} is not in the network policy; hint: run with --allow-domain denied.test:{}",
            origin.https, origin.https, origin.https
        )),
        "{}",
        run.stderr
    );
    // --log-file: the same as JSON events.
    let events = net_events(&log_file);
    let allowed: Vec<&Value> = events.iter().filter(|e| e["decision"] == "allow").collect();
    let denied: Vec<&Value> = events.iter().filter(|e| e["decision"] == "deny").collect();
    assert_eq!(allowed.len(), 2, "{events:#?}");
    assert_eq!(denied.len(), 4, "{events:#?}");
    assert!(allowed
        .iter()
        .all(|e| e["host"] == "allowed.test" && e["bytes_down"].as_u64().unwrap() > 0));
    assert!(denied.iter().any(|e| e["host"] == "127.0.0.1"));

    // `policy learn --from-log` proposes exactly the refused destinations, from this log.
    let learned = Command::new(env!("CARGO_BIN_EXE_mcpjail"))
        .args(["policy", "learn", "--from-log"])
        .arg(&log_file)
        .output()
        .unwrap();
    assert!(learned.status.success(), "{learned:?}");
    let learned = String::from_utf8_lossy(&learned.stdout);
    for rule in [
        format!("\"denied.test:{}\"", origin.http),
        format!("\"denied.test:{}\"", origin.https),
        format!("\"127.0.0.1:{}\"", origin.http),
        format!("\"localhost:{}\"", origin.http),
    ] {
        assert!(learned.contains(&rule), "{rule} in:\n{learned}");
    }
    assert!(!learned.contains("allowed.test"), "{learned}");
    let proposal: toml::Table = learned.parse().unwrap();
    assert_eq!(
        proposal["net"]["allow_domains"].as_array().unwrap().len(),
        4
    );
}

/// The control for every refusal above: without the jail the same server reaches the origin
/// by address, connects directly, and sends UDP and DNS (no proxy variables are set then).
#[test]
fn node_server_control_without_the_jail_reaches_everything() {
    let origin = Origin::start();
    let sink = UdpSink::new();
    let home = tempfile::tempdir().unwrap();
    let log_file = home.path().join("audit.jsonl");
    let allow = [
        "--no-jail".to_string(),
        "--allow-domain".into(),
        format!("allowed.test:{}", origin.http),
    ];
    let flags = node_flags(&origin, &log_file, &allow);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = proxied(&flags, &node_server());
    let udp = format!("127.0.0.1:{}", sink.port());
    let script = json!({"steps": [
        fetch(&origin.url("http", "127.0.0.1", "/direct")),                          // 0
        fetch(&origin.url("https", "localhost", "/direct-tls")),                     // 1
        call("tcp_connect", json!({"host": "127.0.0.1", "port": origin.http})),      // 2
        call("udp_send", json!({"host": "127.0.0.1", "port": sink.port()})),         // 3
        call("dns_query", json!({"server": udp, "name": "allowed.test"})),           // 4
    ]});
    let run = run_client(
        Client::Ts,
        "node fetch server --no-jail",
        &server,
        &script,
        &client_env(home.path(), &origin),
        home.path(),
    );
    assert_eq!(run.ok_text(0), "status 200: origin http /direct\n");
    assert_eq!(run.ok_text(1), "status 200: origin https /direct-tls\n");
    assert_eq!(run.ok_text(2), "connected");
    assert_eq!(run.ok_text(3), "sent");
    // The sink never answers, so the query itself fails; what matters is that it left.
    assert_eq!(sink.received(), 2, "the UDP datagram and the DNS query");
    assert!(net_events(&log_file).is_empty());
}

/// The control for the policy refusal: allowed, `denied.test` works through the same jail.
#[test]
fn node_server_reaches_a_name_once_it_is_allowed() {
    let origin = Origin::start();
    let home = tempfile::tempdir().unwrap();
    let log_file = home.path().join("audit.jsonl");
    // One rule from the policy file's [net] table, the others from flags: both feed the proxy.
    let policy = home.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[net]\nallow_domains = [\"denied.test:{}\"]\n",
            origin.https
        ),
    )
    .unwrap();
    let allow = [
        "--policy".to_string(),
        policy.display().to_string(),
        "--allow-domain".into(),
        format!("localhost:{}", origin.http),
        "--allow-domain".into(),
        format!("127.0.0.1:{}", origin.http),
    ];
    let flags = node_flags(&origin, &log_file, &allow);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = proxied(&flags, &node_server());
    let script = json!({"steps": [
        fetch(&origin.url("https", "denied.test", "/now-allowed")),                  // 0
        fetch(&origin.url("http", "localhost", "/loopback-asked")),                  // 1
        fetch(&origin.url("http", "127.0.0.1", "/address-listed")),                  // 2
    ]});
    let run = run_client(
        Client::Ts,
        "node fetch server, names allowed",
        &server,
        &script,
        &client_env(home.path(), &origin),
        home.path(),
    );
    assert_eq!(run.ok_text(0), "status 200: origin https /now-allowed\n");
    assert_eq!(run.ok_text(1), "status 200: origin http /loopback-asked\n");
    assert_eq!(run.ok_text(2), "status 200: origin http /address-listed\n");
}

fn fetch_server() -> Vec<String> {
    vec![
        test_env("fetch/bin/mcp-server-fetch").display().to_string(),
        "--ignore-robots-txt".into(),
    ]
}

fn raw_fetch(url: &str) -> Value {
    call("fetch", json!({ "url": url, "raw": true }))
}

#[test]
fn mcp_server_fetch_jailed_behind_the_egress_proxy() {
    let origin = Origin::start();
    let home = tempfile::tempdir().unwrap();
    let log_file = home.path().join("audit.jsonl");
    let allow_http = format!("allowed.test:{}", origin.http);
    let allow_https = format!("allowed.test:{}", origin.https);
    let cert = origin.cert.display().to_string();
    let log = log_file.display().to_string();
    let flags = [
        "--log",
        "--log-file",
        &log,
        "--allow-domain",
        &allow_http,
        "--allow-domain",
        &allow_https,
        "--allow-read",
        &cert,
        "--env-keep",
        "SSL_CERT_FILE",
    ];
    let server = proxied(&flags, &fetch_server());
    let script = json!({"steps": [
        raw_fetch(&origin.url("http", "allowed.test", "/py-plain")),                 // 0
        raw_fetch(&origin.url("https", "allowed.test", "/py-tls")),                  // 1
        raw_fetch(&origin.url("https", "denied.test", "/")),                         // 2
        raw_fetch(&origin.url("http", "denied.test", "/")),                          // 3
    ]});
    let run = run_client(
        Client::Py,
        "mcp-server-fetch jailed",
        &server,
        &script,
        &client_env(home.path(), &origin),
        home.path(),
    );
    assert!(
        run.ok_text(0).contains("origin http /py-plain"),
        "{}",
        run.text(0)
    );
    assert!(
        run.ok_text(1).contains("origin https /py-tls"),
        "{}",
        run.text(1)
    );
    // httpx reports a refused CONNECT by its status line, which carries the hint.
    assert!(run.is_error(2), "{}", run.text(2));
    assert!(
        run.text(2)
            .contains(&format!("--allow-domain denied.test:{}", origin.https)),
        "{}",
        run.text(2)
    );
    // For plain HTTP mcp-server-fetch shows only the status code; the hint is in the log.
    assert!(run.is_error(3), "{}", run.text(3));
    assert!(run.text(3).contains("403"), "{}", run.text(3));
    assert!(
        run.stderr.contains(&format!(
            "NET DENY denied.test:{} HTTP GET (denied.test:{} is not in the network policy; hint: run with --allow-domain denied.test:{}",
            origin.http, origin.http, origin.http
        )),
        "{}",
        run.stderr
    );
    let events = net_events(&log_file);
    assert_eq!(
        events.iter().filter(|e| e["decision"] == "allow").count(),
        2,
        "{events:#?}"
    );
}

/// mcp-server-fetch's control: unjailed (and with its own private-address check off) it fetches
/// the origin directly.
#[test]
fn mcp_server_fetch_control_without_the_jail() {
    let origin = Origin::start();
    let home = tempfile::tempdir().unwrap();
    let mut server = fetch_server();
    server.push("--allow-private-ips".into());
    let server = proxied(&["--no-jail"], &server);
    let script = json!({"steps": [
        raw_fetch(&origin.url("http", "127.0.0.1", "/py-direct")),                   // 0
    ]});
    let run = run_client(
        Client::Py,
        "mcp-server-fetch --no-jail",
        &server,
        &script,
        &client_env(home.path(), &origin),
        home.path(),
    );
    assert!(
        run.ok_text(0).contains("origin http /py-direct"),
        "{}",
        run.text(0)
    );
}

/// Peak and current resident memory of a process, in KiB (`VmHWM`, `VmRSS`).
fn memory_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Streaming: 128 MiB through a CONNECT tunnel (and 128 MiB of plain HTTP) leave the proxy's
/// peak memory within a few MiB of where it was: nothing is buffered whole.
#[test]
fn a_huge_response_streams_through_the_proxy_in_bounded_memory() {
    const MIB: u64 = 128;
    let origin = Origin::start();
    let home = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(PROXY);
    cmd.args(["--allow-domain"])
        .arg(format!("allowed.test:{}", origin.http))
        .arg("--allow-domain")
        .arg(format!("allowed.test:{}", origin.https))
        .arg("--allow-read")
        .arg(node_modules())
        .arg("--allow-read")
        .arg(&origin.cert)
        .args(["--env-keep", "NODE_EXTRA_CA_CERTS", "--"])
        .args(node_server())
        .current_dir(home.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in client_env(home.path(), &origin) {
        cmd.env(k, v);
    }
    let mut s = proxy_support::Session::spawn(cmd);
    s.initialize();
    let (_, before) = memory_kib(s.pid());
    for scheme in ["https", "http"] {
        let url = origin.url(scheme, "allowed.test", &format!("/big/{MIB}"));
        let got = proxy_support::result_text(&s.call("fetch_count", json!({ "url": url })));
        let bytes: u64 = got
            .trim_start_matches("status 200: ")
            .trim_end_matches(" bytes")
            .parse()
            .unwrap_or_else(|_| panic!("{scheme}: {got}"));
        assert!(bytes >= MIB << 20, "{scheme}: {got}");
    }
    let (peak, _) = memory_kib(s.pid());
    let growth_mib = peak.saturating_sub(before) / 1024;
    eprintln!(
        "proxy memory: {} MiB resident before, {} MiB peak after {} MiB through it",
        before / 1024,
        peak / 1024,
        2 * MIB
    );
    assert!(
        growth_mib < 32,
        "the proxy's peak memory grew by {growth_mib} MiB while {} MiB passed",
        2 * MIB
    );
}

/// A server respawned under a narrower jail (the client's first roots) gets its own network
/// namespace and listener again, and the egress proxy serves it.
#[test]
fn a_respawned_server_reaches_allowed_names_through_its_new_namespace() {
    let origin = Origin::start();
    let home = tempfile::tempdir().unwrap();
    let data = std::fs::canonicalize(home.path()).unwrap().join("data");
    std::fs::create_dir_all(data.join("sub")).unwrap();
    let log_file = home.path().join("audit.jsonl");
    let allow = [
        "--allow-write".to_string(),
        data.display().to_string(),
        "--allow-domain".into(),
        format!("allowed.test:{}", origin.http),
    ];
    let flags = node_flags(&origin, &log_file, &allow);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let server = proxied(&flags, &node_server());
    let script = json!({
        // The runtime the fixture imports and the certificate it trusts are scope here (flags),
        // so the roots name them too, or the narrower jail would drop them.
        "roots": [
            data.join("sub").display().to_string(),
            node_modules().display().to_string(),
            origin.cert.display().to_string(),
        ],
        "steps": [fetch(&origin.url("http", "allowed.test", "/after-respawn"))],
    });
    let run = run_client(
        Client::Ts,
        "node fetch server respawned",
        &server,
        &script,
        &client_env(home.path(), &origin),
        home.path(),
    );
    assert!(
        run.stderr.contains("replaced by pid"),
        "no respawn happened: {}",
        run.stderr
    );
    assert_eq!(run.ok_text(0), "status 200: origin http /after-respawn\n");
}
