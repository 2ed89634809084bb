//! `registry serve`: preview a built site on localhost.
//!
//! A deliberately small HTTP/1.1 file server: GET and HEAD only, one response per connection,
//! paths percent-decoded and then accepted only if every component is a plain name (no `..`,
//! no absolute paths, no hidden files), so nothing outside the site directory is reachable.

use std::path::{Component, Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

/// The file a request path names inside `root`, if it is a safe, plain path.
pub fn resolve(root: &Path, request_path: &str) -> Option<PathBuf> {
    let path = request_path.split(['?', '#']).next().unwrap_or("");
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let mut out = root.to_path_buf();
    for component in Path::new(decoded.trim_start_matches('/')).components() {
        match component {
            Component::Normal(name) if !name.to_string_lossy().starts_with('.') => out.push(name),
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    Some(out)
}

async fn answer(mut stream: TcpStream, root: &Path) -> std::io::Result<()> {
    let mut request = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&request);
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let (status, kind, body) = if method != "GET" && method != "HEAD" {
        (
            "405 Method Not Allowed",
            "text/plain",
            b"GET or HEAD only\n".to_vec(),
        )
    } else {
        match resolve(root, target).map(|p| (std::fs::read(&p), p)) {
            Some((Ok(bytes), path)) => ("200 OK", content_type(&path), bytes),
            _ => ("404 Not Found", "text/plain", b"not found\n".to_vec()),
        }
    };
    let header = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(header.as_bytes()).await?;
    if method != "HEAD" {
        stream.write_all(&body).await?;
    }
    stream.shutdown().await
}

/// Serve `root` on `listener` until the process is stopped.
pub async fn serve(listener: TcpListener, root: PathBuf) -> std::io::Result<()> {
    let root = std::sync::Arc::new(root);
    loop {
        let (stream, _) = listener.accept().await?;
        let root = root.clone();
        tokio::spawn(async move {
            let _ = answer(stream, &root).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_inside_the_site_resolve() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("badges")).unwrap();
        let root = tmp.path();
        assert_eq!(resolve(root, "/"), Some(root.join("index.html")));
        assert_eq!(
            resolve(root, "/badges/x.svg?v=1"),
            Some(root.join("badges/x.svg"))
        );
        assert_eq!(resolve(root, "/../etc/passwd"), None);
        assert_eq!(resolve(root, "/%2e%2e/etc/passwd"), None);
        assert_eq!(resolve(root, "/badges/%2e%2e%2f%2e%2e%2fsecret"), None);
        assert_eq!(resolve(root, "/.git/config"), None);
    }
}
