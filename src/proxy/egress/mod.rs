//! The egress proxy: how a jailed server reaches the domains its policy allows, and only those.
//!
//! The jail lets the server open TCP connections to one loopback port only, this listener's;
//! DNS and UDP are closed by the jail, so names are resolved here, never by the server. Where
//! it can, the jail gives the server a network namespace of its own and the listener is made
//! there ([`EgressProxy::add_listener`]). The server finds the proxy through
//! `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY` ([`server_env`]).
//!
//! Reading order:
//! * [`resolve`] — names to addresses, with a test-only name map;
//! * [`http`] — request heads and HTTP `CONNECT` tunnels; [`forward`] — plain-HTTP forwarding
//!   with keep-alive (heads parsed, bodies framed and streamed);
//! * [`socks`] — SOCKS5 `CONNECT` for clients that speak it (`ALL_PROXY=socks5h://…`);
//! * this file — the accept loop and the one decision both protocols share ([`Egress::decide`]).
//!
//! Every request is logged (`NET ALLOW`/`NET DENY` in `--log`, `"event": "net"` in
//! `--log-file`). A denied destination gets an answer that names the flag that would allow it
//! (an HTTP 403 whose reason phrase and body carry `hint: --allow-domain NAME`, or SOCKS5
//! reply 0x02), so the server's tool error carries the fix back to the client.
//!
//! Bodies and tunnels are copied with fixed-size buffers (`copy_bidirectional`); nothing is
//! buffered whole, so a slow or huge response does not grow the proxy's memory. Connections are
//! capped ([`MAX_CONNECTIONS`]).

mod forward;
mod http;
pub mod resolve;
mod socks;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::policy::net::{allowing, rule_for, DomainRule, Host};
use crate::proxy::audit::{NetRecord, NetRecords};
pub use resolve::Resolver;

/// Connections served at once; more wait in the kernel's accept queue.
const MAX_CONNECTIONS: usize = 256;
/// How long a destination may take to accept a connection.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send its request head (slow-loris bound).
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// A running egress proxy. Dropping it stops the listeners and every connection.
///
/// It starts listening on the host's `127.0.0.1:PORT`. When the jail gives the server a network
/// namespace of its own, each server's child makes a listener on `127.0.0.1:PORT` *there* and
/// hands it over ([`Self::add_listener`]); the host listener is then closed
/// ([`Self::close_host_listener`]), so no other process on the machine can use the proxy.
#[derive(Debug)]
pub struct EgressProxy {
    port: u16,
    egress: Arc<Egress>,
    host: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    namespaced: std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl EgressProxy {
    /// Listen on `127.0.0.1:0` and serve until dropped.
    pub async fn start(
        rules: Vec<DomainRule>,
        resolver: Resolver,
        log: NetRecords,
    ) -> std::io::Result<EgressProxy> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let egress = Arc::new(Egress {
            rules,
            resolver,
            log,
        });
        let task = tokio::spawn(accept_loop(listener, egress.clone()));
        Ok(EgressProxy {
            port,
            egress,
            host: std::sync::Mutex::new(Some(task)),
            namespaced: std::sync::Mutex::new(Vec::new()),
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Also serve a listener made in a server's network namespace.
    pub fn add_listener(&self, listener: std::net::TcpListener) -> std::io::Result<()> {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let task = tokio::spawn(accept_loop(listener, self.egress.clone()));
        if let Ok(mut tasks) = self.namespaced.lock() {
            // A respawned-away server's listener is kept until the session ends: its requests
            // in flight finish, and there are only ever a few.
            tasks.push(task);
        }
        Ok(())
    }

    /// Stop listening on the host's loopback (the servers reach the proxy in their own
    /// network namespaces).
    pub fn close_host_listener(&self) {
        if let Some(task) = self.host.lock().ok().and_then(|mut h| h.take()) {
            task.abort();
        }
    }
}

impl Drop for EgressProxy {
    fn drop(&mut self) {
        // Each accept task owns its connection tasks (a JoinSet): aborting it ends them all.
        self.close_host_listener();
        if let Ok(tasks) = self.namespaced.lock() {
            for task in tasks.iter() {
                task.abort();
            }
        }
    }
}

/// The variables that point a server's HTTP clients at the proxy. `NO_PROXY` is set empty so a
/// user's own exclusions (which would make a client try to connect directly and fail in the
/// jail) do not apply; `NODE_USE_ENV_PROXY` makes Node's built-in fetch and http honour them on
/// Node releases that support it (Node 20 ignores it; see the README).
pub fn server_env(port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let mut env = Vec::new();
    for (key, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &String::new()),
    ] {
        env.push((key.to_string(), value.clone()));
        env.push((key.to_ascii_lowercase(), value.clone()));
    }
    env.push(("NODE_USE_ENV_PROXY".into(), "1".into()));
    env
}

async fn accept_loop(listener: TcpListener, egress: Arc<Egress>) {
    let permits = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut connections = JoinSet::new();
    loop {
        let Ok(permit) = permits.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // EMFILE and friends pass; the listener itself stays usable.
                tracing::warn!("egress proxy: accept failed: {e}");
                drop(permit);
                tokio::task::yield_now().await;
                continue;
            }
        };
        let egress = egress.clone();
        connections.spawn(async move {
            let _permit = permit;
            if let Err(e) = egress.serve(stream).await {
                tracing::debug!("egress proxy: connection ended: {e}");
            }
        });
        // Reap finished tasks so the set does not grow with the session's history.
        while connections.try_join_next().is_some() {}
    }
}

/// What the shared decision answered.
pub(crate) enum Decision {
    /// Connected to the destination, under this rule.
    Open(TcpStream, String),
    /// Refused by policy: the reason, with the hint.
    Denied(String),
    /// Allowed, but the destination could not be reached: why.
    Unreachable(String),
}

#[derive(Debug)]
pub(crate) struct Egress {
    rules: Vec<DomainRule>,
    resolver: Resolver,
    log: NetRecords,
}

impl Egress {
    async fn serve(&self, stream: TcpStream) -> std::io::Result<()> {
        let mut first = [0u8; 1];
        // A client that connects and says nothing must not hold a connection slot for ever.
        let Ok(n) = crate::proxy::timer::timeout(HEAD_TIMEOUT, stream.peek(&mut first)).await
        else {
            return Ok(());
        };
        if n? == 0 {
            return Ok(());
        }
        if first[0] == socks::VERSION {
            socks::serve(self, stream).await
        } else {
            http::serve(self, stream).await
        }
    }

    /// Is `host:port` allowed, and if so, connect to it. Logs a denial (allowed requests are
    /// logged when they end, with their byte counts: [`Self::log_done`]).
    pub(crate) async fn decide(&self, host: &Host, port: u16, kind: &str) -> Decision {
        let Some(rule) = allowing(&self.rules, host, port) else {
            let what = match host {
                Host::Ip(_) => "an IP address not listed in the network policy (addresses are only reachable when listed; prefer the name)",
                Host::Name(_) => "not in the network policy",
            };
            let reason = format!(
                "mcpjail: {host}:{port} is {what}; hint: run with --allow-domain {} (or add it to [net] allow_domains in the policy file)",
                rule_for(host, port)
            );
            self.log_denied(host, port, kind, &reason);
            return Decision::Denied(reason);
        };
        let started = Instant::now();
        let addresses = match host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => match self.resolver.resolve(name, rule.names_loopback()).await {
                Ok(a) => a,
                Err(resolve::ResolveError::Refused(why)) => {
                    let reason = format!("mcpjail: {host}:{port}: {why}");
                    self.log_denied(host, port, kind, &reason);
                    return Decision::Denied(reason);
                }
                Err(resolve::ResolveError::Failed(why)) => {
                    let reason = format!("mcpjail: {host}:{port}: {why}");
                    let rule = rule.to_string();
                    self.log_done(host, port, kind, &rule, (0, 0), started, Some(why));
                    return Decision::Unreachable(reason);
                }
            },
        };
        let mut last = String::from("no address");
        for ip in addresses {
            let addr = SocketAddr::new(ip, port);
            match crate::proxy::timer::timeout(DIAL_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(s)) => return Decision::Open(s, rule.to_string()),
                Ok(Err(e)) => last = format!("{addr}: {e}"),
                Err(_) => last = format!("{addr}: no answer in {DIAL_TIMEOUT:?}"),
            }
        }
        let reason = format!("mcpjail: {host}:{port} is allowed but unreachable ({last})");
        let rule = rule.to_string();
        self.log_done(
            host,
            port,
            kind,
            &rule,
            (0, 0),
            started,
            Some(format!("unreachable: {last}")),
        );
        Decision::Unreachable(reason)
    }

    fn log_denied(&self, host: &Host, port: u16, kind: &str, reason: &str) {
        // The session is gone only when the proxy is ending: nothing left to record it.
        let _ = self.log.send(NetRecord {
            allowed: false,
            host: host.to_string(),
            port,
            kind: kind.to_string(),
            rule: None,
            bytes_up: 0,
            bytes_down: 0,
            elapsed: Duration::ZERO,
            reason: Some(reason.trim_start_matches("mcpjail: ").to_string()),
        });
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn log_done(
        &self,
        host: &Host,
        port: u16,
        kind: &str,
        rule: &str,
        (up, down): (u64, u64),
        started: Instant,
        error: Option<String>,
    ) {
        let _ = self.log.send(NetRecord {
            allowed: true,
            host: host.to_string(),
            port,
            kind: kind.to_string(),
            rule: Some(rule.to_string()),
            bytes_up: up,
            bytes_down: down,
            elapsed: started.elapsed(),
            reason: error,
        });
    }
}

/// Copy both ways until both sides are done, with copy_bidirectional's fixed buffers.
pub(crate) async fn relay<A, B>(a: &mut A, b: &mut B) -> (u64, u64, Option<String>)
where
    A: AsyncRead + AsyncWrite + Unpin + ?Sized,
    B: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    match tokio::io::copy_bidirectional(a, b).await {
        Ok((up, down)) => (up, down, None),
        // Counts are lost on error; a reset mid-stream is normal for clients that hang up.
        Err(e) => (0, 0, Some(format!("ended: {e}"))),
    }
}

/// Is `ip` this machine's own (loopback, unspecified) or link-local (169.254.0.0/16 holds most
/// cloud metadata endpoints; fe80::/10)? A DNS answer of that kind is not followed: a name
/// allowed by a wildcard could otherwise be pointed at them.
pub(crate) fn is_local(ip: &IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(*v6)),
        v4 => *v4,
    };
    let link_local = match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    ip.is_loopback() || ip.is_unspecified() || link_local
}

#[cfg(test)]
mod tests {
    //! The protocols over real loopback sockets: an origin on 127.0.0.1, reached by a test name.
    use super::*;
    use crate::proxy::audit::CallLog;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn origin() -> u16 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    let _ = s.write_all(b"echo:").await;
                    let _ = s.write_all(&buf[..n]).await;
                });
            }
        });
        port
    }

    /// The session's side of the records in a test: what the egress proxy sent so far,
    /// written with a [`CallLog`] as the session loop writes them.
    struct Audit {
        records: tokio::sync::mpsc::UnboundedReceiver<NetRecord>,
        log: CallLog,
        path: std::path::PathBuf,
    }

    impl Audit {
        fn text(&mut self) -> String {
            while let Ok(rec) = self.records.try_recv() {
                self.log.net(&rec);
            }
            std::fs::read_to_string(&self.path).unwrap()
        }
    }

    async fn proxy(rules: &[&str], log: &std::path::Path) -> EgressProxy {
        proxy_logged(rules, log).await.0
    }

    async fn proxy_logged(rules: &[&str], log: &std::path::Path) -> (EgressProxy, Audit) {
        let rules = rules
            .iter()
            .map(|r| DomainRule::parse(r).unwrap())
            .collect();
        let resolver = Resolver::with_test_names(vec![
            ("ok.test".into(), "127.0.0.1".parse().unwrap()),
            ("no.test".into(), "127.0.0.1".parse().unwrap()),
        ]);
        let (tx, records) = tokio::sync::mpsc::unbounded_channel();
        let audit = Audit {
            records,
            log: CallLog::new("t", false, false, Some(log)).unwrap(),
            path: log.to_path_buf(),
        };
        (
            EgressProxy::start(rules, resolver, tx).await.unwrap(),
            audit,
        )
    }

    async fn socks(proxy: u16, name: &str, port: u16) -> (TcpStream, [u8; 10]) {
        let mut s = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
        s.write_all(&[5, 1, 0]).await.unwrap();
        let mut method = [0u8; 2];
        s.read_exact(&mut method).await.unwrap();
        assert_eq!(method, [5, 0]);
        let mut req = vec![5, 1, 0, 3, name.len() as u8];
        req.extend_from_slice(name.as_bytes());
        req.extend_from_slice(&port.to_be_bytes());
        s.write_all(&req).await.unwrap();
        let mut reply = [0u8; 10];
        s.read_exact(&mut reply).await.unwrap();
        (s, reply)
    }

    #[test]
    fn loopback_unspecified_and_link_local_answers_are_local() {
        for ip in [
            "127.0.0.1",
            "::1",
            "0.0.0.0",
            "169.254.169.254",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_local(&ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "10.0.0.1", "2001:db8::1"] {
            assert!(!is_local(&ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn socks5_connects_allowed_names_and_refuses_others_with_0x02() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let o = origin().await;
        let (p, mut audit) = proxy_logged(&[&format!("ok.test:{o}")], &log).await;

        let (mut s, reply) = socks(p.port(), "ok.test", o).await;
        assert_eq!(reply[1], 0x00);
        s.write_all(b"ping").await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"echo:ping");

        let (mut s, reply) = socks(p.port(), "no.test", o).await;
        assert_eq!(reply[1], 0x02);
        assert_eq!(
            s.read(&mut [0u8; 1]).await.unwrap(),
            0,
            "closed after a refusal"
        );

        // The control for the refusal: the same name, once allowed.
        let p2 = proxy(&[&format!("no.test:{o}")], &log).await;
        let (_s, reply) = socks(p2.port(), "no.test", o).await;
        assert_eq!(reply[1], 0x00);

        let text = audit.text();
        assert!(text.contains(r#""decision":"deny""#) && text.contains(r#""host":"no.test""#));
        assert!(text.contains("--allow-domain no.test:"), "{text}");
    }

    /// An HTTP/1.1 origin with keep-alive: it answers every request on a connection with the
    /// request head as its body (`Content-Length`, or chunked for `/chunked`), and counts the
    /// connections it accepted.
    async fn http_origin() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        let Some(end) = memchr::memmem::find(&buf, b"\r\n\r\n") else {
                            let mut chunk = [0u8; 4096];
                            match s.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                            continue;
                        };
                        let head: Vec<u8> = buf.drain(..end + 4).collect();
                        // The request's body (Content-Length only here) is read and dropped.
                        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
                        let len: usize = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse().ok())
                            .unwrap_or(0);
                        while buf.len() < len {
                            let mut chunk = [0u8; 4096];
                            match s.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.drain(..len);
                        let answer = if head.starts_with(b"GET /chunked ") {
                            let mut a =
                                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
                            a.extend_from_slice(format!("{:x}\r\n", head.len()).as_bytes());
                            a.extend_from_slice(&head);
                            a.extend_from_slice(b"\r\n3\r\nend\r\n0\r\n\r\n");
                            a
                        } else {
                            let mut a = format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                                head.len()
                            )
                            .into_bytes();
                            a.extend_from_slice(&head);
                            a
                        };
                        if s.write_all(&answer).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (port, accepted)
    }

    /// Read one response (`Content-Length` or chunked) from `s`; its body.
    async fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> (String, Vec<u8>) {
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(e) = memchr::memmem::find(buf, b"\r\n\r\n") {
                break e + 4;
            }
            let n = s.read(&mut chunk).await.unwrap();
            assert!(n > 0, "closed mid-head: {}", String::from_utf8_lossy(buf));
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        buf.drain(..end);
        let lower = head.to_ascii_lowercase();
        let body = if lower.contains("transfer-encoding: chunked") {
            // Read until the last-chunk and its blank line, then strip the framing.
            while memchr::memmem::find(buf, b"0\r\n\r\n").is_none() {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0);
                buf.extend_from_slice(&chunk[..n]);
            }
            let at = memchr::memmem::find(buf, b"0\r\n\r\n").unwrap() + 5;
            let raw: Vec<u8> = buf.drain(..at).collect();
            raw
        } else {
            let len: usize = lower
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            while buf.len() < len {
                let n = s.read(&mut chunk).await.unwrap();
                assert!(n > 0);
                buf.extend_from_slice(&chunk[..n]);
            }
            buf.drain(..len).collect()
        };
        (head, body)
    }

    #[tokio::test]
    async fn plain_http_keeps_the_client_connection_alive_and_judges_every_request() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("audit.jsonl");
        let (o, accepted) = http_origin().await;
        let (p, mut audit) = proxy_logged(&[&format!("ok.test:{o}")], &log).await;
        let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
        let mut buf = Vec::new();

        s.write_all(
            format!("GET http://ok.test:{o}/a HTTP/1.1\r\nHost: evil.test\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let (head, body) = read_response(&mut s, &mut buf).await;
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        let body = String::from_utf8_lossy(&body);
        assert!(body.starts_with("GET /a HTTP/1.1\r\n"), "{body}");
        assert!(body.contains(&format!("Host: ok.test:{o}\r\n")), "{body}");
        assert!(!body.contains("evil.test"), "{body}");

        // A POST with a body, then a chunked answer, on the same connection.
        s.write_all(
            format!("POST http://ok.test:{o}/post HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello")
                .as_bytes(),
        )
        .await
        .unwrap();
        let (head, body) = read_response(&mut s, &mut buf).await;
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert!(String::from_utf8_lossy(&body).starts_with("POST /post "));
        s.write_all(format!("GET http://ok.test:{o}/chunked HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let (_, body) = read_response(&mut s, &mut buf).await;
        let body = String::from_utf8_lossy(&body);
        assert!(
            body.contains("GET /chunked ") && body.ends_with("3\r\nend\r\n0\r\n\r\n"),
            "{body}"
        );
        assert_eq!(
            accepted.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "one upstream connection"
        );

        // A request for another host on the same connection is judged on its own.
        s.write_all(format!("GET http://no.test:{o}/ HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        buf.extend_from_slice(&rest);
        let text = String::from_utf8_lossy(&buf);
        assert!(text.starts_with("HTTP/1.1 403 "), "{text}");
        assert!(text.contains("--allow-domain no.test:"), "{text}");

        let audit = audit.text();
        assert_eq!(audit.matches(r#""decision":"allow""#).count(), 3, "{audit}");
        assert_eq!(audit.matches(r#""decision":"deny""#).count(), 1, "{audit}");
    }

    #[tokio::test]
    async fn a_client_expecting_100_continue_hears_it_from_the_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let (o, _) = http_origin().await;
        let p = proxy(&[&format!("ok.test:{o}")], &dir.path().join("a")).await;
        let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
        s.write_all(
            format!("POST http://ok.test:{o}/up HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut buf = Vec::new();
        let (head, _) = read_response(&mut s, &mut buf).await;
        assert!(head.starts_with("HTTP/1.1 100 "), "{head}");
        s.write_all(b"hi").await.unwrap();
        let (head, body) = read_response(&mut s, &mut buf).await;
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        let body = String::from_utf8_lossy(&body);
        assert!(
            body.starts_with("POST /up ") && !body.to_ascii_lowercase().contains("expect"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn a_request_with_two_body_lengths_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (o, accepted) = http_origin().await;
        let p = proxy(&[&format!("ok.test:{o}")], &dir.path().join("a")).await;
        let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
        s.write_all(
            format!("POST http://ok.test:{o}/ HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
                .as_bytes(),
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("HTTP/1.1 400 "), "{got}");
        assert!(
            got.contains("both Content-Length and Transfer-Encoding"),
            "{got}"
        );
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn an_oversized_request_head_gets_431_and_is_not_forwarded() {
        let dir = tempfile::tempdir().unwrap();
        let o = origin().await;
        let p = proxy(&[&format!("ok.test:{o}")], &dir.path().join("a")).await;
        let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
        let head = format!(
            "GET http://ok.test:{o}/ HTTP/1.1\r\nX-Big: {}\r\n\r\n",
            "a".repeat(http::MAX_HEAD)
        );
        // The proxy may answer and close before it has read everything.
        let _ = s.write_all(head.as_bytes()).await;
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got).await;
        let got = String::from_utf8_lossy(&got);
        assert!(got.starts_with("HTTP/1.1 431 "), "{got}");

        // The control: the same request with a small head is forwarded.
        let mut s = TcpStream::connect(("127.0.0.1", p.port())).await.unwrap();
        s.write_all(
            format!("GET http://ok.test:{o}/x HTTP/1.1\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        assert!(
            got.starts_with(b"echo:GET /x HTTP/1.1\r\n"),
            "{}",
            String::from_utf8_lossy(&got)
        );
    }
}
