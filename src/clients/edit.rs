//! Byte-range edits: the only way mcpjail changes a user's config file.
//!
//! A [`Splice`] replaces one byte range of the original text. The format modules (JSON/JSONC
//! through jsonc-parser's syntax tree, TOML through toml_edit's spans) locate the ranges of the
//! values to change and render only the new values; everything outside those ranges — comments,
//! key order, indentation, line endings, unknown fields — is copied through untouched by
//! construction. Nothing here re-serialises a document.

use std::ops::Range;

use super::ClientsError;

/// Replace `range` of the original text with `text` (an empty range is an insertion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    pub range: Range<usize>,
    pub text: String,
}

impl Splice {
    pub fn replace(range: Range<usize>, text: impl Into<String>) -> Self {
        Splice {
            range,
            text: text.into(),
        }
    }
    pub fn insert(at: usize, text: impl Into<String>) -> Self {
        Splice {
            range: at..at,
            text: text.into(),
        }
    }
}

/// Where one entry's `command` and `args` values sit in the text.
#[derive(Debug, Clone)]
pub struct Located {
    pub command: Range<usize>,
    pub command_value: String,
    pub args: Option<LocatedArray>,
    /// Start of the `command` property's key (where a new sibling's indentation is copied from).
    pub command_key_start: usize,
    /// TOML only: the entry is an inline table (`name = { command = … }`).
    pub in_inline_table: bool,
}

#[derive(Debug, Clone)]
pub struct LocatedArray {
    pub range: Range<usize>,
    pub first_element: Option<usize>,
    /// The elements, if all are strings.
    pub values: Option<Vec<String>>,
}

/// Apply non-overlapping splices to `original`. Splices may come in any order.
pub fn apply(original: &str, splices: &[Splice]) -> Result<String, ClientsError> {
    let mut sorted: Vec<&Splice> = splices.iter().collect();
    sorted.sort_by_key(|s| (s.range.start, s.range.end));
    let mut out = String::with_capacity(original.len() + 256);
    let mut cursor = 0;
    for splice in sorted {
        let Range { start, end } = splice.range;
        if start < cursor
            || end > original.len()
            || start > end
            || !original.is_char_boundary(start)
            || !original.is_char_boundary(end)
        {
            return Err(ClientsError::Internal(format!(
                "overlapping or invalid edit range {start}..{end}"
            )));
        }
        out.push_str(&original[cursor..start]);
        out.push_str(&splice.text);
        cursor = end;
    }
    out.push_str(&original[cursor..]);
    Ok(out)
}

/// The comment syntax of a format, so the text scanners can step over comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentSyntax {
    /// `// line` and `/* block */` (JSONC).
    Slashes,
    /// `# line` (TOML).
    Hash,
}

/// The newline the file already uses (`\r\n` if its first line break is one).
pub fn newline_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Index of the first byte at or after `pos` that is not whitespace or inside a comment.
pub fn skip_trivia(text: &str, mut pos: usize, syntax: CommentSyntax) -> usize {
    let bytes = text.as_bytes();
    while pos < bytes.len() {
        let b = bytes[pos];
        if b.is_ascii_whitespace() {
            pos += 1;
            continue;
        }
        match syntax {
            CommentSyntax::Slashes if text[pos..].starts_with("//") => {
                pos = text[pos..].find('\n').map_or(bytes.len(), |i| pos + i);
            }
            CommentSyntax::Slashes if text[pos..].starts_with("/*") => {
                pos = text[pos + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |i| pos + 2 + i + 2);
            }
            CommentSyntax::Hash if b == b'#' => {
                pos = text[pos..].find('\n').map_or(bytes.len(), |i| pos + i);
            }
            _ => return pos,
        }
    }
    pos
}

/// If the rest of the line after `pos` holds only whitespace and comments, the index of its
/// line break (or the end of the text); otherwise `None`.
pub fn line_end_if_trivia(text: &str, pos: usize, syntax: CommentSyntax) -> Option<usize> {
    let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    // Keep a `\r` of a CRLF line break on the far side of the insertion point.
    let line_end = if line_end > pos && text.as_bytes()[line_end - 1] == b'\r' {
        line_end - 1
    } else {
        line_end
    };
    let rest = &text[pos..line_end];
    let trimmed = rest.trim_start();
    let is_trivia = trimmed.is_empty()
        || match syntax {
            CommentSyntax::Slashes => {
                trimmed.starts_with("//")
                    || (trimmed.starts_with("/*") && trimmed.trim_end().ends_with("*/"))
            }
            CommentSyntax::Hash => trimmed.starts_with('#'),
        };
    is_trivia.then_some(line_end)
}

/// The text between the start of `pos`'s line and `pos`.
pub fn line_prefix(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    &text[start..pos]
}

/// Insert `items` (already rendered in the file's syntax) at the front of an existing array,
/// keeping every existing element and comment byte-for-byte.
///
/// `open` is the index of the `[`; `first_element` the start of the first element, if any.
/// Multi-line arrays get one item per line with the first element's indentation; one-line
/// arrays get `a, b, ` in front of the first element.
pub fn prefix_array(
    text: &str,
    open: usize,
    first_element: Option<usize>,
    items: &[String],
) -> Splice {
    let newline = newline_of(text);
    let Some(first) = first_element else {
        return Splice::insert(open + 1, items.join(", "));
    };
    let between = &text[open + 1..first];
    if let Some(nl) = between.find('\n') {
        let indent = line_prefix(text, first);
        let indent: String = indent
            .chars()
            .take_while(|c| *c == ' ' || *c == '\t')
            .collect();
        let mut inserted = String::new();
        for item in items {
            inserted.push_str(&indent);
            inserted.push_str(item);
            inserted.push(',');
            inserted.push_str(newline);
        }
        Splice::insert(open + 1 + nl + 1, inserted)
    } else {
        let mut inserted = items.join(", ");
        inserted.push_str(", ");
        Splice::insert(first, inserted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_keeps_everything_outside_the_ranges() {
        let text = "abc def ghi";
        let out = apply(
            text,
            &[Splice::replace(8..11, "XYZ"), Splice::insert(0, ">")],
        )
        .unwrap();
        assert_eq!(out, ">abc def XYZ");
    }

    #[test]
    fn apply_rejects_overlap() {
        assert!(apply(
            "abcdef",
            &[Splice::replace(0..3, "x"), Splice::replace(2..4, "y")]
        )
        .is_err());
    }

    #[test]
    fn prefix_one_line_and_multi_line() {
        let one = r#"["-y", "pkg"]"#;
        let s = prefix_array(one, 0, Some(1), &["\"a\"".into(), "\"b\"".into()]);
        assert_eq!(apply(one, &[s]).unwrap(), r#"["a", "b", "-y", "pkg"]"#);

        let multi = "[\n    // why\n    \"-y\"\n  ]";
        let s = prefix_array(
            multi,
            0,
            Some(multi.find("\"-y").unwrap()),
            &["\"a\"".into()],
        );
        assert_eq!(
            apply(multi, &[s]).unwrap(),
            "[\n    \"a\",\n    // why\n    \"-y\"\n  ]"
        );

        let empty = "[]";
        let s = prefix_array(empty, 0, None, &["\"a\"".into(), "\"b\"".into()]);
        assert_eq!(apply(empty, &[s]).unwrap(), r#"["a", "b"]"#);
    }

    #[test]
    fn crlf_is_kept() {
        let multi = "[\r\n  \"x\"\r\n]";
        let s = prefix_array(multi, 0, Some(5), &["\"a\"".into()]);
        assert_eq!(apply(multi, &[s]).unwrap(), "[\r\n  \"a\",\r\n  \"x\"\r\n]");
    }
}
