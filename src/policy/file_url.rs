//! `file:` URLs read the way servers read them: the WHATWG URL Standard's parser, which Node's
//! `new URL` + `fileURLToPath`, the Rust `url` crate (behind pydantic's `AnyUrl`) and browsers
//! all implement.
//!
//! The proxy must check the path the *server* will open. A reading of its own, however
//! reasonable, lets the difference through: WHATWG strips leading and trailing C0 controls and
//! spaces, removes every tab, CR and LF (even inside the scheme: `fi\tle:`), lowercases the
//! scheme, takes `\` as `/`, and removes `..`/`.` segments (also `%2e%2e`, `.%2E`, `%2e`) before
//! anything is decoded. So `file:///P/x\..\.env` names `/P/.env`, and `file:///P/.mc\np.json`
//! names `/P/.mcp.json`; a reader that keeps `\` or the newline as filename bytes sees one odd,
//! harmless name instead.
//!
//! Only the file scheme is implemented (the rest of the standard is not needed to find a local
//! path), so no `url` crate and its IDNA tables. Where servers' parsers disagree, the URL is
//! refused rather than guessed at ([`FileUrlError`]): a host other than empty or `localhost`
//! (Node refuses it, a Windows server would open a share), a query or fragment (Node drops it,
//! a server that strips `file://` opens `a?x`), an encoded `/` (Node refuses it, the `url`
//! crate decodes it to a separator), `file:` without a slash (`file:x` is `/x` to WHATWG and
//! the relative `x` to Python's `urlparse`), and decoded bytes that are NUL or not UTF-8.
//!
//! `src/policy/testdata/node_file_urls.json` (made by `tests/js/file_url_table.mjs`) holds
//! what Node makes of a table of inputs; the unit tests compare this reading with it.

use std::borrow::Cow;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// Why a `file:` URL is not read as a local path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileUrlError {
    #[error("host `{0}` is not this machine (only an empty host or `localhost` is)")]
    ForeignHost(String),
    #[error("queries and fragments are not allowed in file URIs")]
    QueryOrFragment,
    #[error(
        "an encoded `/` (%2F) is a separator to some URL parsers and refused by others; \
         write `/`"
    )]
    EncodedSlash,
    #[error("a file URI must be absolute: file:///path")]
    NotAbsolute,
    #[error("the path contains a NUL byte")]
    NulByte,
    #[error("decodes to bytes that are not UTF-8")]
    NotUtf8,
}

/// Whether a WHATWG parser reads `s` as a URL of the `file` scheme: after leading C0 controls
/// and spaces, and ignoring tabs and newlines, `s` starts with `file:` in any case.
pub fn is_file_url(s: &str) -> bool {
    let mut want = b"file:".iter();
    for b in s.bytes().skip_while(|&b| b <= b' ') {
        if is_tab_or_newline(b) {
            continue;
        }
        match want.next() {
            Some(&w) if b.to_ascii_lowercase() == w => {
                if want.len() == 0 {
                    return true;
                }
            }
            _ => return false,
        }
    }
    false
}

/// A `file:` URL's local path, and the other path it may name when it has `..` segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUrl {
    /// As WHATWG parsers and `fileURLToPath` read it: `..` removes the segment before it by
    /// name, so `/P/link/..` is `/P` whatever `link` points to.
    pub path: PathBuf,
    /// When the URL has `..` segments: its segments decoded with each `..` kept, for the
    /// filesystem to resolve through symlinks. A server that decodes the URL without a WHATWG
    /// parser (Python's `urlparse` and `url2pathname`) opens this one, and through a symlink it
    /// is somewhere else.
    pub with_dotdot: Option<PathBuf>,
}

/// The local path a `file:` URL names, as WHATWG parsers and `fileURLToPath` read it;
/// `Ok(None)` when `s` is not a `file:` URL at all.
pub fn file_url_path(s: &str) -> Result<Option<PathBuf>, FileUrlError> {
    Ok(parse_file_url(s)?.map(|url| url.path))
}

/// [`file_url_path`] with the `..`-kept reading too ([`FileUrl::with_dotdot`]).
pub fn parse_file_url(s: &str) -> Result<Option<FileUrl>, FileUrlError> {
    if !is_file_url(s) {
        return Ok(None);
    }
    let cleaned: String = s
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|&c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    // `is_file_url` saw `file:` (any case) at the start of exactly this string.
    let rest = cleaned.get(5..).unwrap_or_default();
    if rest.contains(['?', '#']) {
        return Err(FileUrlError::QueryOrFragment);
    }
    let path_input = after_host(rest)?;
    let (lexical, has_dotdot) = pathname(path_input, false);
    let with_dotdot = if has_dotdot {
        Some(decode(&pathname(path_input, true).0)?)
    } else {
        None
    };
    Ok(Some(FileUrl {
        path: decode(&lexical)?,
        with_dotdot,
    }))
}

/// What follows `file:` without its host: the input of the path state.
fn after_host(rest: &str) -> Result<&str, FileUrlError> {
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, c)) if is_slash(c) => {}
        // `file:x`: WHATWG reads `/x`, Python's `urlparse` the relative `x`.
        _ => return Err(FileUrlError::NotAbsolute),
    }
    match chars.next() {
        Some((_, c)) if is_slash(c) => {}
        // `file:/x`: no host; the path state starts after the one slash.
        _ => return Ok(&rest[1..]),
    }
    let authority = &rest[2..];
    let host_end = authority.find(['/', '\\']).unwrap_or(authority.len());
    let host = &authority[..host_end];
    if is_windows_drive_letter(host) {
        // `file://C:/x`: the drive letter is the path's first segment, not a host.
        return Ok(authority);
    }
    if !host.is_empty() && !is_localhost(host) {
        return Err(FileUrlError::ForeignHost(host.to_string()));
    }
    // The path start state consumes the slash after the host.
    Ok(authority.get(host_end + 1..).unwrap_or_default())
}

/// The host parser's reading of `localhost`: percent-decoded, ASCII case-insensitive. (A host
/// that only IDNA mapping turns into `localhost`, such as its fullwidth form, is refused as
/// foreign: stricter than WHATWG, never laxer.)
fn is_localhost(host: &str) -> bool {
    percent_encoding::percent_decode_str(host)
        .collect::<Vec<u8>>()
        .eq_ignore_ascii_case(b"localhost")
}

/// The path state: split at `/` and `\`, drop `.` segments, let `..` remove the segment before
/// it (never a leading drive letter), and end with an empty segment where a trailing `.` or
/// `..` stood. Returns the pathname (`/` before each segment) and whether it had a `..`.
/// `keep_dotdot` writes each `..` as `..` instead, for the filesystem to resolve.
fn pathname(input: &str, keep_dotdot: bool) -> (String, bool) {
    let mut path: Vec<Cow<'_, str>> = Vec::new();
    let mut has_dotdot = false;
    let mut parts = input.split(['/', '\\']).peekable();
    while let Some(segment) = parts.next() {
        let last = parts.peek().is_none();
        if is_double_dot(segment) {
            has_dotdot = true;
            if keep_dotdot {
                path.push(Cow::Borrowed(".."));
                continue;
            }
            let drive_only = path.len() == 1 && is_normalized_drive_letter(&path[0]);
            if !drive_only {
                path.pop();
            }
            if last {
                path.push(Cow::Borrowed(""));
            }
        } else if is_single_dot(segment) {
            if last {
                path.push(Cow::Borrowed(""));
            }
        } else if path.is_empty() && is_windows_drive_letter(segment) {
            // `C|` is written `C:` (the standard's drive-letter normalisation).
            path.push(Cow::Owned(format!("{}:", &segment[..1])));
        } else {
            path.push(Cow::Borrowed(segment));
        }
    }
    let mut out = String::with_capacity(input.len() + 1);
    for segment in &path {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        out.push('/');
    }
    (out, has_dotdot)
}

/// `fileURLToPath`'s decoding: an encoded `/` is refused, the rest percent-decoded; the bytes
/// must be UTF-8 without NUL. (Malformed escapes such as `%zz` stay literal, as in the `url`
/// crate and Python's `unquote`.)
fn decode(pathname: &str) -> Result<PathBuf, FileUrlError> {
    let lower = pathname.to_ascii_lowercase();
    if lower.contains("%2f") {
        return Err(FileUrlError::EncodedSlash);
    }
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(pathname).collect();
    if bytes.contains(&0) {
        return Err(FileUrlError::NulByte);
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Err(FileUrlError::NotUtf8);
    }
    Ok(PathBuf::from(OsString::from_vec(bytes)))
}

fn is_tab_or_newline(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\r')
}

fn is_slash(c: char) -> bool {
    c == '/' || c == '\\'
}

/// `.` or `%2e`, any case.
fn is_single_dot(segment: &str) -> bool {
    segment == "." || segment.eq_ignore_ascii_case("%2e")
}

/// `..`, `.%2e`, `%2e.` or `%2e%2e`, any case.
fn is_double_dot(segment: &str) -> bool {
    let lower = segment.to_ascii_lowercase();
    matches!(lower.as_str(), ".." | ".%2e" | "%2e." | "%2e%2e")
}

/// `C:` or `C|`.
fn is_windows_drive_letter(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 2 && b[0].is_ascii_alphabetic() && (b[1] == b':' || b[1] == b'|')
}

fn is_normalized_drive_letter(s: &str) -> bool {
    is_windows_drive_letter(s) && s.ends_with(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Result<Option<PathBuf>, FileUrlError> {
        file_url_path(s)
    }
    fn ok(s: &str) -> String {
        match path(s) {
            Ok(Some(p)) => p.display().to_string(),
            other => panic!("{s:?} read as {other:?}"),
        }
    }

    #[test]
    fn the_forms_that_bypassed_the_check_name_what_the_server_opens() {
        // Backslashes are separators, and the `..` they delimit is removed.
        assert_eq!(
            ok("file:///P/l1/l2/l3/l4/x\\..\\.env"),
            "/P/l1/l2/l3/l4/.env"
        );
        assert_eq!(
            ok("file:///P/x\\..\\.vscode\\tasks.json"),
            "/P/.vscode/tasks.json"
        );
        // Tabs and newlines vanish, anywhere.
        assert_eq!(
            ok("file:///P/.clau\tde/settings.json"),
            "/P/.claude/settings.json"
        );
        assert_eq!(ok("file:///P/.mc\np.json"), "/P/.mcp.json");
        assert_eq!(ok("fi\tle:///P/.env"), "/P/.env");
        // Leading and trailing C0 controls and spaces are stripped.
        assert_eq!(ok(" file:///P/.env"), "/P/.env");
        assert_eq!(ok("\u{1}file:///P/.env\u{1f} "), "/P/.env");
        // Percent-encoded dot segments are dot segments.
        for dots in ["%2e%2e", "%2E%2E", ".%2e", "%2e.", ".%2E"] {
            assert_eq!(ok(&format!("file:///P/x/{dots}/.env")), "/P/.env", "{dots}");
        }
        assert_eq!(ok("file:///P/x/%2e/.env"), "/P/x/.env");
        // `localhost` in any case, even percent-encoded, is this machine.
        assert_eq!(ok("file://LocalHost/P/.env"), "/P/.env");
        assert_eq!(ok("file://%6cocalhost/P/.env"), "/P/.env");
        // Encoded names decode.
        assert_eq!(ok("file:///P/.%65nv"), "/P/.env");
        // A drive letter is a segment `..` cannot remove.
        assert_eq!(ok("file:///C|/../x"), "/C:/x");
        assert_eq!(ok("file://C:/x"), "/C:/x");
    }

    #[test]
    fn dotdot_is_also_given_for_the_filesystem_to_walk() {
        let url = |s: &str| parse_file_url(s).unwrap().unwrap();
        assert_eq!(url("file:///P/a.txt").with_dotdot, None);
        assert_eq!(url("file:///P/./a.txt").with_dotdot, None);
        for s in [
            "file:///P/link/../a",
            "file:///P/link\\%2e%2e/a",
            "file:///P/link/.%2E/a",
        ] {
            let u = url(s);
            assert_eq!(u.path, PathBuf::from("/P/a"), "{s}");
            assert_eq!(u.with_dotdot, Some(PathBuf::from("/P/link/../a")), "{s}");
        }
    }

    #[test]
    fn what_is_and_is_not_a_file_url() {
        for s in [
            "file:///x",
            "FILE:x",
            " \u{0}file:",
            "f\ti\nl\re:",
            "\tFiLe:/x",
        ] {
            assert!(is_file_url(s), "{s:?}");
        }
        for s in [
            "",
            "file",
            "files:///x",
            "x file:///x",
            "/file:/x",
            "New York",
            "data:text/plain,file:",
            "http://x/file:",
        ] {
            assert!(!is_file_url(s), "{s:?}");
            assert_eq!(path(s), Ok(None), "{s:?}");
        }
    }

    #[test]
    fn readings_servers_disagree_on_are_refused_with_the_reason() {
        assert_eq!(
            path("file://evil.example/etc/passwd"),
            Err(FileUrlError::ForeignHost("evil.example".into()))
        );
        // A backslash opens the host too: `file:/\P/x` has the host `P`.
        assert_eq!(
            path("file:/\\P/x"),
            Err(FileUrlError::ForeignHost("P".into()))
        );
        assert_eq!(path("file:///x?y"), Err(FileUrlError::QueryOrFragment));
        assert_eq!(path("file:///x#y"), Err(FileUrlError::QueryOrFragment));
        assert_eq!(
            path("file:///P/x%2F..%2F.env"),
            Err(FileUrlError::EncodedSlash)
        );
        assert_eq!(path("file:relative"), Err(FileUrlError::NotAbsolute));
        assert_eq!(path("file:///a%00b"), Err(FileUrlError::NulByte));
        assert_eq!(path("file:///a%ff"), Err(FileUrlError::NotUtf8));
        let message = FileUrlError::ForeignHost("h".into()).to_string();
        assert!(
            message.contains("`h`") && message.contains("localhost"),
            "{message}"
        );
    }

    /// Node (`fileURLToPath(new URL(s))`) against this reading, input by input: where this
    /// reading gives a path, Node gives the same one; where Node refuses, this reading refuses
    /// too, except for malformed escapes that other parsers keep literally.
    #[test]
    fn agrees_with_node_on_its_table() {
        let table: Vec<(String, Option<String>)> =
            serde_json::from_str(include_str!("testdata/node_file_urls.json")).unwrap();
        assert!(table.len() > 50);
        // Node reads these; this reading refuses them (see the module docs).
        let stricter = |s: &str| s.contains(['?', '#']) || s.starts_with("file:C") || s == "file:";
        for (input, node) in &table {
            let ours = path(input);
            match (node, &ours) {
                (Some(n), Ok(Some(p))) => assert_eq!(&p.display().to_string(), n, "{input:?}"),
                (Some(_), Err(_)) => assert!(stricter(input), "{input:?}: {ours:?}"),
                (None, Err(_)) => {}
                (None, Ok(Some(p))) => {
                    assert!(
                        input.contains("%zz"),
                        "{input:?}: Node refuses, read as {p:?}"
                    )
                }
                (_, Ok(None)) => panic!("{input:?} not read as a file URL"),
            }
        }
    }
}
