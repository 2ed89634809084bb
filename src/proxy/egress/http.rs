//! HTTP proxy requests: `CONNECT host:port` tunnels (HTTPS and anything else over TLS) and
//! plain-HTTP forwarding (`GET http://host/path`).
//!
//! Only heads are parsed, up to [`MAX_HEAD`] (else 431); bodies stream both ways. A `CONNECT`
//! tunnel is copied untouched (keep-alive included); plain HTTP is forwarded request by request
//! ([`super::forward`]).

use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{relay, Decision, Egress, HEAD_TIMEOUT};
use crate::policy::net::Host;

/// The largest request head accepted.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// Request headers that concern the hop to the proxy, not the destination.
pub(super) const HOP_HEADERS: &[&str] = &[
    "proxy-connection",
    "proxy-authorization",
    "connection",
    "keep-alive",
];

pub(super) async fn serve(egress: &Egress, mut client: TcpStream) -> std::io::Result<()> {
    let (head, rest) =
        match crate::proxy::timer::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
            Err(_) => return respond(&mut client, 408, "Request Timeout", "no request head").await,
            Ok(Err(HeadError::Io(e))) => return Err(e),
            Ok(Err(HeadError::Closed)) => return Ok(()),
            Ok(Err(HeadError::TooLarge)) => {
                let why = format!("mcpjail: the request head is larger than {MAX_HEAD} bytes");
                return respond(&mut client, 431, "Request Header Fields Too Large", &why).await;
            }
            Ok(Ok(parts)) => parts,
        };
    // Every request, CONNECT included, goes through the keep-alive loop, which answers a head
    // that is not HTTP with 400.
    super::forward::serve(egress, client, head, rest).await
}

pub(super) async fn connect(
    egress: &Egress,
    mut client: TcpStream,
    request: &Request<'_>,
    rest: Vec<u8>,
) -> std::io::Result<()> {
    let Some((host, port)) = split_authority(request.target, None) else {
        let why = format!("mcpjail: CONNECT needs host:port, got `{}`", request.target);
        return respond(&mut client, 400, "Bad Request", &why).await;
    };
    let started = Instant::now();
    let kind = "CONNECT";
    match egress.decide(&host, port, kind).await {
        Decision::Denied(why) => respond(&mut client, 403, "Forbidden", &why).await,
        Decision::Unreachable(why) => respond(&mut client, 502, "Bad Gateway", &why).await,
        Decision::Open(mut upstream, rule) => {
            client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .await?;
            // Bytes the client sent right behind the head (a TLS ClientHello) belong upstream.
            upstream.write_all(&rest).await?;
            let (up, down, error) = relay(&mut client, &mut upstream).await;
            egress.log_done(
                &host,
                port,
                kind,
                &rule,
                (up + rest.len() as u64, down),
                started,
                error,
            );
            Ok(())
        }
    }
}

/// An answer from the proxy itself. The reason phrase carries the text too: some clients show
/// only the status line of a failed `CONNECT` (Python's httpx: `ProxyError('403 …')`).
pub(super) async fn respond(
    client: &mut TcpStream,
    status: u16,
    phrase: &str,
    body: &str,
) -> std::io::Result<()> {
    let one_line: String = body
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let text = format!(
        "HTTP/1.1 {status} {phrase} ({one_line})\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}\n",
        body.len() + 1
    );
    client.write_all(text.as_bytes()).await?;
    client.shutdown().await
}

enum HeadError {
    Io(std::io::Error),
    Closed,
    TooLarge,
}

/// Read until the blank line that ends a request head: (head, bytes read past it).
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = client.read(&mut chunk).await.map_err(HeadError::Io)?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        let searched_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memmem::find(&buf[searched_from..], b"\r\n\r\n") {
            let end = searched_from + at + 4;
            if end > MAX_HEAD {
                return Err(HeadError::TooLarge);
            }
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLarge);
        }
    }
}

pub(super) struct Request<'a> {
    pub(super) method: &'a str,
    pub(super) target: &'a str,
    pub(super) version: &'a str,
    pub(super) headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Request<'a> {
    pub(super) fn parse(head: &'a [u8]) -> Option<Request<'a>> {
        let text = std::str::from_utf8(head).ok()?;
        let mut lines = text.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let method = first.next().filter(|m| is_token(m))?;
        let target = first.next().filter(|t| !t.is_empty())?;
        let version = first.next().filter(|v| v.starts_with("HTTP/1."))?;
        if first.next().is_some() {
            return None;
        }
        let mut headers = Vec::new();
        for line in lines.filter(|l| !l.is_empty()) {
            let (name, value) = line.split_once(':')?;
            if !is_token(name) {
                return None;
            }
            headers.push((name, value.trim()));
        }
        Some(Request {
            method,
            target,
            version,
            headers,
        })
    }
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `host:port`, `[v6]:port`, or (with a default port) a bare host. Userinfo (`user@host`) is
/// refused: which host is meant would depend on the parser.
pub(super) fn split_authority(text: &str, default_port: Option<u16>) -> Option<(Host, u16)> {
    if text.contains('@') {
        return None;
    }
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => default_port?,
            None => return None,
        };
        (format!("[{inside}]"), port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().ok()?),
            None => (text.to_string(), default_port?),
        }
    };
    if port == 0 {
        return None;
    }
    Some((Host::parse(&host)?, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities() {
        assert_eq!(
            split_authority("Example.com:443", None),
            Some((Host::Name("example.com".into()), 443))
        );
        assert_eq!(
            split_authority("example.com", Some(80)),
            Some((Host::Name("example.com".into()), 80))
        );
        assert_eq!(split_authority("example.com", None), None);
        assert_eq!(
            split_authority("[::1]:8080", None),
            Some((Host::Ip("::1".parse().unwrap()), 8080))
        );
        assert_eq!(split_authority("user@evil.com:443", None), None);
        assert_eq!(split_authority("example.com:0", None), None);
        assert_eq!(split_authority("exa mple.com:80", None), None);
    }

    #[test]
    fn request_heads() {
        let r = Request::parse(b"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n").unwrap();
        assert_eq!(
            (r.method, r.target, r.version),
            ("GET", "http://a.test/x", "HTTP/1.1")
        );
        assert_eq!(r.headers, vec![("Host", "a.test")]);
        assert!(Request::parse(b"GET  HTTP/1.1\r\n\r\n").is_none());
        assert!(Request::parse(b"GET / HTTP/2\r\n\r\n").is_none());
        assert!(Request::parse(b"GET / HTTP/1.1\r\nbad header\r\n\r\n").is_none());
    }
}
