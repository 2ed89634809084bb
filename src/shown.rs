//! Text from others, made safe to show on a terminal.
//!
//! The proxy and `mcpjail` print text they did not write: the jailed server's stderr (copied
//! line by line), tool names and descriptions a server lists, tool names and path arguments a
//! client (a model) sends, request ids, error messages that quote any of these. A terminal
//! treats some characters in that text as commands: `ESC ] 52 ; c ; … BEL` writes the
//! clipboard, `ESC ] 0 ;` sets the window title, `ESC [ 2 J` clears the screen, `\r` or
//! `ESC [ A` rewrite a line the proxy printed (a forged `ALLOW`), the 8-bit C1 forms (`0x9b`
//! is CSI) do the same on terminals that honour them, and the bidi controls (U+202E …) reorder
//! what is shown. The jail keeps terminals away from the server's own stdio; this module keeps
//! the server's (and the client's) bytes from reaching the user's terminal through the proxy.
//!
//! [`neutralise`] is the one place that decides. It does not drop anything: each dangerous
//! character is written visibly instead (`\x1b`, `\x9b`, `\u{202e}`), so a user still sees
//! that a server tried, and what. Escaped are the C0 controls except `\t` and `\n` (a `\r`
//! is kept only directly before `\n`, the line end of Windows-minded servers), DEL, the C1
//! controls (U+0080–U+009F, and raw bytes 0x80–0x9F outside valid UTF-8: every byte of
//! invalid UTF-8 is shown as `\xNN`), and the bidi and invisible direction marks (U+061C,
//! U+200E, U+200F, U+202A–U+202E, U+2066–U+2069). [`Keep::Nothing`] escapes `\t`, `\n` and
//! `\r` as well, for a field inside a one-line record, where a newline would forge a line.
//!
//! Colour (SGR, `ESC [ … m`) is escaped too, not let through. Telling a harmless SGR apart
//! from the rest needs a parser of the terminal's grammar, and a mistake there is a channel;
//! SGR itself can conceal text (`ESC [ 8 m`, or foreground = background) and can mimic the
//! proxy's own green `ALLOW`; and a server's stderr is a pipe, so a well-behaved server sees
//! no terminal and writes no colour to begin with. What is lost is the colour of a server
//! that forces it on; what it costs to keep is an escape hatch.
//!
//! The check is cheap when there is nothing to do (the common case: every line of every
//! server's stderr passes through here): a borrowed result, no allocation.

use std::borrow::Cow;

/// Which layout characters survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Free text: `\t` and `\n` are kept (and `\r` directly before `\n`).
    Lines,
    /// A field inside a one-line record: `\t`, `\n` and `\r` are escaped as well.
    Nothing,
}

/// `bytes` with every character that could act on a terminal written out visibly (see the
/// module doc). Valid UTF-8 in gives valid UTF-8 out; the result borrows `bytes` when nothing
/// needed escaping.
pub fn neutralise(bytes: &[u8], keep: Keep) -> Cow<'_, [u8]> {
    let Some(first) = first_to_escape(bytes, keep) else {
        return Cow::Borrowed(bytes);
    };
    let mut out = Vec::with_capacity(bytes.len() + 16);
    out.extend_from_slice(&bytes[..first]);
    let mut rest = &bytes[first..];
    while !rest.is_empty() {
        let (unit, len) = next_unit(rest);
        match escape_of(unit, &rest[len..], keep) {
            Some(escaped) => escaped.write(&mut out),
            None => out.extend_from_slice(&rest[..len]),
        }
        rest = &rest[len..];
    }
    Cow::Owned(out)
}

/// [`neutralise`] for a field in a one-line record: a tool name, a path, a request id.
pub fn shown(text: &str) -> Cow<'_, str> {
    as_str(text, Keep::Nothing)
}

/// [`neutralise`] for free text that may span lines: a note, a message, an error chain.
pub fn shown_text(text: &str) -> Cow<'_, str> {
    as_str(text, Keep::Lines)
}

fn as_str(text: &str, keep: Keep) -> Cow<'_, str> {
    match neutralise(text.as_bytes(), keep) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        // Valid UTF-8 in, valid UTF-8 out: the escapes are ASCII and cut at character ends.
        Cow::Owned(bytes) => Cow::Owned(
            String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ),
    }
}

/// The offset of the first unit that [`escape_of`] escapes, if any. Plain printable ASCII is
/// judged a byte at a time; anything else goes through the same decision as the escaping.
fn first_to_escape(bytes: &[u8], keep: Keep) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if (0x20..0x7f).contains(&b) {
            i += 1;
            continue;
        }
        let (unit, len) = next_unit(&bytes[i..]);
        if escape_of(unit, &bytes[i + len..], keep).is_some() {
            return Some(i);
        }
        i += len;
    }
    None
}

/// One character, or one byte that is not part of valid UTF-8.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Char(char),
    Invalid(u8),
}

/// The unit at the start of `bytes` (not empty) and its length in bytes.
fn next_unit(bytes: &[u8]) -> (Unit, usize) {
    let b = bytes[0];
    if b < 0x80 {
        return (Unit::Char(char::from(b)), 1);
    }
    let width = match b {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return (Unit::Invalid(b), 1),
    };
    // A sequence cut short (at the end of a read, say) or malformed is invalid from its
    // first byte on: that byte is escaped, the rest are judged again one by one.
    match bytes
        .get(..width)
        .and_then(|seq| std::str::from_utf8(seq).ok())
    {
        Some(s) => match s.chars().next() {
            Some(c) => (Unit::Char(c), width),
            None => (Unit::Invalid(b), 1),
        },
        None => (Unit::Invalid(b), 1),
    }
}

/// How a unit is written when it is escaped.
#[derive(Debug, Clone, Copy)]
enum Escaped {
    /// `\n`, `\t`, `\r`.
    Named(char),
    /// `\x1b`: a C0 control, DEL, or a byte of invalid UTF-8.
    Byte(u8),
    /// `\u{202e}`: a C1 control or a bidi / invisible direction mark.
    Char(char),
}

impl Escaped {
    fn write(self, out: &mut Vec<u8>) {
        use std::io::Write as _;
        // Writes to a Vec do not fail.
        let _ = match self {
            Escaped::Named(c) => write!(out, "\\{c}"),
            Escaped::Byte(b) => write!(out, "\\x{b:02x}"),
            Escaped::Char(c) => write!(out, "\\u{{{:x}}}", u32::from(c)),
        };
    }
}

/// Whether (and how) a unit is escaped; `after` is what follows it, for `\r\n`.
fn escape_of(unit: Unit, after: &[u8], keep: Keep) -> Option<Escaped> {
    let c = match unit {
        Unit::Invalid(b) => return Some(Escaped::Byte(b)),
        Unit::Char(c) => c,
    };
    match c {
        '\n' | '\t' if keep == Keep::Lines => None,
        '\r' if keep == Keep::Lines && after.first() == Some(&b'\n') => None,
        '\n' => Some(Escaped::Named('n')),
        '\t' => Some(Escaped::Named('t')),
        '\r' => Some(Escaped::Named('r')),
        '\0'..='\x1f' | '\x7f' => Some(Escaped::Byte(c as u8)),
        c if acts_on_terminal(c) => Some(Escaped::Char(c)),
        _ => None,
    }
}

/// Is this character one a terminal may act on rather than print: a C0 or C1 control, DEL,
/// or a bidi / invisible direction mark? (Layout is [`neutralise`]'s call, by its [`Keep`].)
pub fn acts_on_terminal(c: char) -> bool {
    matches!(
        c,
        '\0'..='\x1f'
            | '\x7f'..='\u{9f}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Could this output act on a terminal? It must be valid UTF-8 (so no raw C1 byte), with
    /// no C0 or C1 control but the kept layout, and no bidi mark.
    fn dangerous(out: &[u8], keep: Keep) -> Option<String> {
        let text = match std::str::from_utf8(out) {
            Ok(text) => text,
            Err(e) => return Some(format!("not UTF-8: {e}")),
        };
        for (i, c) in text.char_indices() {
            let layout = keep == Keep::Lines
                && (c == '\n' || c == '\t' || (c == '\r' && text[i + 1..].starts_with('\n')));
            let direction = matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            if (c.is_control() && !layout) || direction {
                return Some(format!("{c:?} at {i}"));
            }
        }
        None
    }

    #[test]
    fn terminal_commands_are_shown_not_obeyed() {
        let cases: &[(&[u8], &str)] = &[
            (b"\x1b]52;c;aGk=\x07", r"\x1b]52;c;aGk=\x07"),
            (b"\x1b]0;TITLE\x07", r"\x1b]0;TITLE\x07"),
            (b"\x1b[2J\x1b[H", r"\x1b[2J\x1b[H"),
            (b"\x1b[32mgreen\x1b[0m", r"\x1b[32mgreen\x1b[0m"),
            (b"a\rb", r"a\rb"),
            (b"\x9b2J", r"\x9b2J"),
            ("\u{9b}2J".as_bytes(), r"\u{9b}2J"),
            ("abc\u{202e}fed".as_bytes(), r"abc\u{202e}fed"),
            (
                "\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}".as_bytes(),
                r"\u{2066}\u{2069}\u{200e}\u{200f}\u{61c}",
            ),
            (b"\x00\x7f\x08\x0e", r"\x00\x7f\x08\x0e"),
            // Cut UTF-8 (the end of one read): the lead byte is shown, the rest judged alone.
            (b"\xc2", r"\xc2"),
            (b"\xe2\x80", r"\xe2\x80"),
            (b"\xff\xfe", r"\xff\xfe"),
        ];
        for (input, want) in cases {
            let got = neutralise(input, Keep::Lines);
            assert_eq!(String::from_utf8_lossy(&got), *want, "{input:?}");
        }
    }

    #[test]
    fn layout_is_kept_in_text_and_escaped_in_fields() {
        assert_eq!(shown_text("a\tb\nc\r\n"), "a\tb\nc\r\n");
        assert_eq!(shown_text("a\r"), r"a\r");
        assert_eq!(shown("a\tb\nc\r\n"), r"a\tb\nc\r\n");
    }

    #[test]
    fn plain_text_is_borrowed_not_copied() {
        for text in [
            "read_file /tmp/a.txt ALLOW 12µs",
            "résumé — 東京 🦀",
            "line\n",
            "",
        ] {
            assert!(matches!(shown_text(text), Cow::Borrowed(_)), "{text}");
        }
        assert!(matches!(shown("plain name"), Cow::Borrowed(_)));
        assert!(matches!(
            neutralise(b"ok\tfine\r\n", Keep::Lines),
            Cow::Borrowed(_)
        ));
    }

    proptest! {
        /// Whatever a server writes, cut into reads at whatever points, nothing that acts on a
        /// terminal comes out, and nothing is dropped: every input byte is in the output or
        /// visibly replaced (so the output is never shorter).
        #[test]
        fn arbitrary_bytes_cut_anywhere_come_out_inert(
            bytes in prop::collection::vec(prop_oneof![
                any::<u8>(),
                prop::sample::select(vec![0x1b_u8, 0x07, 0x9b, 0xc2, 0xe2, 0x80, 0x81, 0xaa, 0xae, b'\r', b'\n', b']', b'[']),
            ], 0..200),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
            keep in prop::sample::select(vec![Keep::Lines, Keep::Nothing]),
        ) {
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            points.push(0);
            points.push(bytes.len());
            points.sort_unstable();
            let mut out = Vec::new();
            for w in points.windows(2) {
                let piece = &bytes[w[0]..w[1]];
                let shown = neutralise(piece, keep);
                prop_assert!(shown.len() >= piece.len());
                out.extend_from_slice(&shown);
            }
            prop_assert_eq!(dangerous(&out, keep), None, "{:?} -> {:?}", bytes, String::from_utf8_lossy(&out));
        }

        /// Valid UTF-8 in gives valid UTF-8 out, and text with nothing to escape is unchanged.
        #[test]
        fn text_stays_text(text in "\\PC*", plain in "[ -~é東🦀\n\t]*") {
            let out = shown_text(&text);
            prop_assert_eq!(dangerous(out.as_bytes(), Keep::Lines), None);
            prop_assert_eq!(shown_text(&plain), plain.as_str());
        }
    }
}
