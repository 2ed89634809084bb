//! Plain-HTTP forwarding with keep-alive: each request on a client connection is judged on its
//! own (its URL's host), and the connection to the destination is reused while the host stays
//! the same.
//!
//! To know where one exchange ends and the next begins, the heads are parsed and the bodies are
//! *framed*, not buffered: `Content-Length` bodies are copied by count, chunked ones chunk by
//! chunk, through fixed-size buffers. A request with both `Content-Length` and
//! `Transfer-Encoding` is refused (the classic request-smuggling ambiguity). A response without
//! a length ends with its connection, and so does the client's.

use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::http::{respond, split_authority, Request, HOP_HEADERS, MAX_HEAD};
use super::{Decision, Egress};
use crate::policy::net::Host;

/// A chunk-size line (hex size, extensions) longer than this is not HTTP.
const MAX_LINE: usize = 4096;
/// How long a kept-alive client connection may stay idle between requests.
const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// A connection with the bytes read past what was consumed.
struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
}

enum Head {
    Got(Vec<u8>),
    Closed,
    TooLarge,
}

impl Conn {
    async fn fill(&mut self) -> std::io::Result<usize> {
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Up to and including the blank line ending a head.
    async fn read_head(&mut self) -> std::io::Result<Head> {
        loop {
            if let Some(at) = memchr::memmem::find(&self.buf, b"\r\n\r\n") {
                if at + 4 > MAX_HEAD {
                    return Ok(Head::TooLarge);
                }
                let rest = self.buf.split_off(at + 4);
                return Ok(Head::Got(std::mem::replace(&mut self.buf, rest)));
            }
            if self.buf.len() > MAX_HEAD {
                return Ok(Head::TooLarge);
            }
            if self.fill().await? == 0 {
                return Ok(Head::Closed);
            }
        }
    }

    async fn read_line(&mut self) -> std::io::Result<Vec<u8>> {
        loop {
            if let Some(at) = memchr::memmem::find(&self.buf, b"\r\n") {
                let rest = self.buf.split_off(at + 2);
                return Ok(std::mem::replace(&mut self.buf, rest));
            }
            if self.buf.len() > MAX_LINE {
                return Err(std::io::Error::other("a chunk-size line is too long"));
            }
            if self.fill().await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// Copy exactly `n` bytes to `to`.
    async fn copy_exact(&mut self, mut n: u64, to: &mut TcpStream) -> std::io::Result<u64> {
        let total = n;
        while n > 0 {
            if self.buf.is_empty() && self.fill().await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let take = usize::try_from(n).unwrap_or(usize::MAX).min(self.buf.len());
            to.write_all(&self.buf[..take]).await?;
            self.buf.drain(..take);
            n -= take as u64;
        }
        Ok(total)
    }

    /// Copy a chunked body (chunks, the last-chunk, trailers) to `to`.
    async fn copy_chunked(&mut self, to: &mut TcpStream) -> std::io::Result<u64> {
        let mut total = 0;
        loop {
            let line = self.read_line().await?;
            to.write_all(&line).await?;
            total += line.len() as u64;
            let size = std::str::from_utf8(&line)
                .ok()
                .and_then(|l| l.trim_end().split(';').next())
                .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
                .ok_or_else(|| std::io::Error::other("a bad chunk-size line"))?;
            if size == 0 {
                // Trailers, up to the blank line.
                loop {
                    let line = self.read_line().await?;
                    to.write_all(&line).await?;
                    total += line.len() as u64;
                    if line == b"\r\n" {
                        return Ok(total);
                    }
                }
            }
            total += self.copy_exact(size + 2, to).await?;
        }
    }

    async fn copy_to_eof(&mut self, to: &mut TcpStream) -> std::io::Result<u64> {
        let mut total = 0;
        loop {
            if self.buf.is_empty() && self.fill().await? == 0 {
                return Ok(total);
            }
            to.write_all(&self.buf).await?;
            total += self.buf.len() as u64;
            self.buf.clear();
        }
    }
}

/// How a message body is delimited.
enum Body {
    None,
    Length(u64),
    Chunked,
    /// Until the connection closes (responses only).
    ToEof,
}

fn header<'a>(headers: &[(&'a str, &'a str)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

fn has_token(value: Option<&str>, token: &str) -> bool {
    value.is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

/// Framing of a request body; `Err` for an ambiguous or unreadable one.
fn request_body(headers: &[(&str, &str)]) -> Result<Body, &'static str> {
    let te = header(headers, "transfer-encoding");
    let cl = header(headers, "content-length");
    match (te, cl) {
        (Some(_), Some(_)) => Err("both Content-Length and Transfer-Encoding"),
        (Some(te), None) if te.trim().eq_ignore_ascii_case("chunked") => Ok(Body::Chunked),
        (Some(_), None) => Err("a Transfer-Encoding other than chunked"),
        (None, Some(cl)) => cl
            .trim()
            .parse()
            .map(Body::Length)
            .map_err(|_| "a bad Content-Length"),
        (None, None) => Ok(Body::None),
    }
}

fn response_body(status: u16, method: &str, headers: &[(&str, &str)]) -> Body {
    if method.eq_ignore_ascii_case("HEAD") || status == 204 || status == 304 {
        return Body::None;
    }
    if has_token(header(headers, "transfer-encoding"), "chunked") {
        return Body::Chunked;
    }
    match header(headers, "content-length").and_then(|v| v.trim().parse().ok()) {
        Some(n) => Body::Length(n),
        None => Body::ToEof,
    }
}

/// `HTTP/1.x CODE reason` and the headers.
fn parse_response(head: &[u8]) -> Option<(u16, Vec<(&str, &str)>)> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next()?;
    let status = status_line
        .strip_prefix("HTTP/1.")?
        .get(2..5)?
        .parse()
        .ok()?;
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (n, v) = line.split_once(':')?;
        headers.push((n.trim(), v.trim()));
    }
    Some((status, headers))
}

/// Serve plain-HTTP requests on `client`, starting with `first` (its head) and `rest`.
pub(super) async fn serve(
    egress: &Egress,
    client: TcpStream,
    first: Vec<u8>,
    rest: Vec<u8>,
) -> std::io::Result<()> {
    let mut client = Conn {
        stream: client,
        buf: rest,
    };
    let mut upstream: Option<(Host, u16, String, Conn)> = None;
    let mut head = first;
    loop {
        // Clients that keep their proxy connection alive (Node's agent) send a CONNECT on it
        // after plain requests: from there on it is a tunnel.
        if let Some(request) = Request::parse(&head) {
            if request.method.eq_ignore_ascii_case("CONNECT") {
                return super::http::connect(egress, client.stream, &request, client.buf).await;
            }
        }
        let keep = exchange(egress, &mut client, &head, &mut upstream).await?;
        if !keep {
            return client.stream.shutdown().await;
        }
        head = match crate::proxy::timer::timeout(IDLE_TIMEOUT, client.read_head()).await {
            Err(_) | Ok(Ok(Head::Closed)) => return Ok(()),
            Ok(Ok(Head::Got(h))) => h,
            Ok(Ok(Head::TooLarge)) => {
                let why = format!("mcpjail: the request head is larger than {MAX_HEAD} bytes");
                return respond(
                    &mut client.stream,
                    431,
                    "Request Header Fields Too Large",
                    &why,
                )
                .await;
            }
            Ok(Err(e)) => return Err(e),
        };
    }
}

/// One request and its response. `Ok(true)`: the client connection may carry another.
async fn exchange(
    egress: &Egress,
    client: &mut Conn,
    head: &[u8],
    upstream: &mut Option<(Host, u16, String, Conn)>,
) -> std::io::Result<bool> {
    let Some(request) = Request::parse(head) else {
        respond(
            &mut client.stream,
            400,
            "Bad Request",
            "mcpjail: not an HTTP request",
        )
        .await?;
        return Ok(false);
    };
    let Some(after_scheme) = strip_http(request.target) else {
        let why = format!(
            "mcpjail: the egress proxy forwards absolute http:// URLs and tunnels anything else \
             with CONNECT; got `{} {}`",
            request.method, request.target
        );
        respond(&mut client.stream, 400, "Bad Request", &why).await?;
        return Ok(false);
    };
    let end = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    let (authority, path) = after_scheme.split_at(end);
    let Some((host, port)) = split_authority(authority, Some(80)) else {
        let why = format!("mcpjail: `{authority}` is not a host[:port]");
        respond(&mut client.stream, 400, "Bad Request", &why).await?;
        return Ok(false);
    };
    let body = match request_body(&request.headers) {
        Ok(b) => b,
        Err(why) => {
            let why = format!("mcpjail: the request has {why}");
            respond(&mut client.stream, 400, "Bad Request", &why).await?;
            return Ok(false);
        }
    };
    // `http://host?q` has an empty path: the origin form still starts with `/`.
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let kind = format!("HTTP {}", request.method);
    let started = Instant::now();
    let reuse = matches!(upstream, Some((h, p, _, _)) if *h == host && *p == port);
    if !reuse {
        *upstream = None;
        match egress.decide(&host, port, &kind).await {
            Decision::Denied(why) => {
                respond(&mut client.stream, 403, "Forbidden", &why).await?;
                return Ok(false);
            }
            Decision::Unreachable(why) => {
                respond(&mut client.stream, 502, "Bad Gateway", &why).await?;
                return Ok(false);
            }
            Decision::Open(stream, rule) => {
                *upstream = Some((
                    host.clone(),
                    port,
                    rule,
                    Conn {
                        stream,
                        buf: Vec::new(),
                    },
                ))
            }
        }
    }
    let Some((_, _, rule, up)) = upstream.as_mut() else {
        return Ok(false);
    };
    let rule = rule.clone();
    let http10 = request.version == "HTTP/1.0";
    let client_close = has_token(header(&request.headers, "connection"), "close") || http10;

    // `Host` is the URL's authority, the name the policy judged, whatever the client wrote: a
    // plain-HTTP request cannot name another site on the same address.
    let mut out = format!(
        "{} {} {}\r\nHost: {authority}\r\n",
        request.method, path, request.version
    );
    for (name, value) in &request.headers {
        if HOP_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h))
            || name.eq_ignore_ascii_case("host")
            || name.eq_ignore_ascii_case("expect")
        {
            continue;
        }
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    // The body is copied before the answer is read, so a client waiting for `100 Continue`
    // hears it from the proxy (the destination is sent the body without the expectation).
    let expects_continue = has_token(header(&request.headers, "expect"), "100-continue");
    out.push_str(if client_close {
        "Connection: close\r\n\r\n"
    } else {
        "Connection: keep-alive\r\n\r\n"
    });
    let result = async {
        up.stream.write_all(out.as_bytes()).await?;
        if expects_continue {
            client
                .stream
                .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
                .await?;
        }
        let mut sent = out.len() as u64;
        sent += match body {
            Body::Length(n) => client.copy_exact(n, &mut up.stream).await?,
            Body::Chunked => client.copy_chunked(&mut up.stream).await?,
            Body::None | Body::ToEof => 0,
        };
        let mut received = 0u64;
        // Interim answers (100 Continue) come before the final one.
        let (response_close, framing) = loop {
            let Head::Got(rhead) = up.read_head().await? else {
                return Err(std::io::Error::other(
                    "the destination closed or sent an oversized head",
                ));
            };
            client.stream.write_all(&rhead).await?;
            received += rhead.len() as u64;
            let (status, headers) = parse_response(&rhead)
                .ok_or_else(|| std::io::Error::other("the destination's answer is not HTTP"))?;
            if (100..200).contains(&status) {
                continue;
            }
            let close = has_token(header(&headers, "connection"), "close");
            break (close, response_body(status, request.method, &headers));
        };
        let mut to_eof = false;
        received += match framing {
            Body::None => 0,
            Body::Length(n) => up.copy_exact(n, &mut client.stream).await?,
            Body::Chunked => up.copy_chunked(&mut client.stream).await?,
            Body::ToEof => {
                to_eof = true;
                up.copy_to_eof(&mut client.stream).await?
            }
        };
        Ok::<_, std::io::Error>((sent, received, response_close || to_eof))
    }
    .await;
    match result {
        Ok((sent, received, upstream_done)) => {
            egress.log_done(&host, port, &kind, &rule, (sent, received), started, None);
            if upstream_done {
                *upstream = None;
            }
            Ok(!client_close && !upstream_done)
        }
        Err(e) => {
            egress.log_done(
                &host,
                port,
                &kind,
                &rule,
                (0, 0),
                started,
                Some(format!("ended: {e}")),
            );
            *upstream = None;
            Ok(false)
        }
    }
}

fn strip_http(target: &str) -> Option<&str> {
    let head = target.get(..7)?;
    head.eq_ignore_ascii_case("http://").then(|| &target[7..])
}
