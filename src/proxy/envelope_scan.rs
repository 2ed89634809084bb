//! The envelope of an ordinary line in one pass: [`scan`] checks that the whole line is JSON
//! and picks out its top-level `id`, `method`, `params`, `result` and `error`, at a few
//! instructions a byte.
//!
//! Why it exists: the reference reader (`message::reference_envelope`, serde_json's derived
//! `Deserialize`) walks every raw value once to find its end and keeps every key in
//! serde's general machinery. It cost ~2.8 k instructions for a 100-byte line, and every call
//! has two lines (the request and its answer): a quarter of all the proxy did per call.
//!
//! It answers only what it is sure of. `None` sends the line to the reference reader, which
//! decides and words the error: every line that is not JSON, and every valid line with
//! something unusual in it (an escape in a top-level key or in `method`, a member the envelope
//! reads given twice, a `method` that is neither a string nor `null`, a top level that is not
//! an object, nesting deeper than [`MAX_DEPTH`]). When it does answer, the answer is the
//! reference reader's: `fuzzing::message` holds the two to it on every fuzz input, and the
//! tests below on generated lines.

/// Deeper nesting goes to the reference reader (which has no limit for raw values): the
/// open containers are kept as bits of one `u64`.
pub const MAX_DEPTH: u32 = 64;

/// The top-level members the router reads, as the raw JSON text of each (`None` when absent
/// or `null`, as serde reads an `Option`), and `method` as the string it holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Scanned<'a> {
    pub id: Option<&'a str>,
    pub method: Option<&'a str>,
    pub params: Option<&'a str>,
    pub result: Option<&'a str>,
    pub error: Option<&'a str>,
}

/// The envelope of `text`, or `None` when the reference reader must decide (see the module
/// docs).
pub fn scan(text: &str) -> Option<Scanned<'_>> {
    scan_visiting_params(text, |_, _| {}).map(|(found, _)| found)
}

/// [`scan`], handing each member of `params` to `visit` (its key and the raw text of its
/// value, as [`members`] would) when `params` is an object, in the same walk: the second
/// value says whether it did. The members are visited as they are walked, so a line the
/// scanner then defers (`None`) may have visited some: its visits mean nothing.
///
/// Why: a `tools/call`'s params were walked again, member by member, right after the scan had
/// walked them (~0.9 k instructions a call).
pub fn scan_visiting_params<'a>(
    text: &'a str,
    mut visit: impl FnMut(&'a str, &'a str),
) -> Option<(Scanned<'a>, bool)> {
    let b = text.as_bytes();
    let mut found = Scanned::default();
    let mut seen = [false; 5];
    let mut visited = false;
    let end = object_end(text, skip_ws(b, 0), |key, start| {
        let slot = match key {
            "id" => 0,
            "method" => 1,
            "params" => 2,
            "result" => 3,
            "error" => 4,
            _ => return value_end(b, start),
        };
        if std::mem::replace(&mut seen[slot], true) {
            return None;
        }
        let end = if slot == 2 && b.get(start) == Some(&b'{') {
            visited = true;
            object_end(text, start, |key, start| {
                let end = value_end(b, start)?;
                visit(key, &text[start..end]);
                Some(end)
            })?
        } else {
            value_end(b, start)?
        };
        let value = &text[start..end];
        let present = (value != "null").then_some(value);
        match slot {
            0 => found.id = present,
            1 => {
                found.method = match present {
                    None => None,
                    Some(value) => Some(plain_string(value)?),
                }
            }
            2 => found.params = present,
            3 => found.result = present,
            _ => found.error = present,
        }
        Some(end)
    })?;
    (skip_ws(b, end) == b.len()).then_some((found, visited))
}

/// Walk the JSON object that is all of `text` (whitespace aside), checked all the way down,
/// handing each member to `each` as its key (without quotes) and the raw text of its value.
/// `None` when `text` is anything else, when a key holds an escape (its text is not the key),
/// or when `each` says `None`.
pub fn members<'a>(
    text: &'a str,
    mut each: impl FnMut(&'a str, &'a str) -> Option<()>,
) -> Option<()> {
    let b = text.as_bytes();
    let end = object_end(text, skip_ws(b, 0), |key, start| {
        let end = value_end(b, start)?;
        each(key, &text[start..end])?;
        Some(end)
    })?;
    (skip_ws(b, end) == b.len()).then_some(())
}

/// The end of the object that starts at `i` (one past its `}`), each member's value walked by
/// `walk`: given the member's key and where its value starts, it returns where the value
/// ends, or `None` to give up. `None` as well for a key with an escape (its text is not the
/// key) and for anything that is not an object.
#[inline(always)]
fn object_end<'a>(
    text: &'a str,
    mut i: usize,
    mut walk: impl FnMut(&'a str, usize) -> Option<usize>,
) -> Option<usize> {
    let b = text.as_bytes();
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (key_end, escaped) = string_end(b, i + 1)?;
        if escaped {
            return None;
        }
        let key = &text[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let end = walk(key, skip_ws(b, i + 1))?;
        i = skip_ws(b, end);
        match b.get(i)? {
            b',' => i = skip_ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The text of a JSON string without escapes (`None` for any other value, or a string with
/// an escape, which the reference reader unescapes).
pub fn plain_string(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then_some(inner)
}

#[inline(always)]
fn skip_ws(b: &[u8], mut i: usize) -> usize {
    // Nearly every call meets no whitespace (clients write compact JSON): one compare says so.
    if b.get(i).is_some_and(|&c| c > b' ') {
        return i;
    }
    while let Some(b' ' | b'\n' | b'\t' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The end (one past the closing quote) of the string whose opening quote is just before
/// `i`, and whether it holds an escape. `None` for a control character, a bad escape, or no
/// closing quote, all of which JSON forbids.
#[inline(always)]
fn string_end(b: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut escaped = false;
    loop {
        i = next_stop(b, i);
        match *b.get(i)? {
            b'"' => return Some((i + 1, escaped)),
            b'\\' => {
                escaped = true;
                match *b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        let hex = b.get(i + 2..i + 6)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return None;
                        }
                        i += 6;
                    }
                    _ => return None,
                }
            }
            // A control character, which JSON does not allow in a string.
            _ => return None,
        }
    }
}

/// The first index at or after `i` whose byte is `"`, `\` or a control character (`b.len()`
/// when there is none): the end of a run of plain string content, eight bytes at a time while
/// eight are left, since most of a line is string content.
///
/// (Sixteen at a time with SSE2 was tried: the strings of a call are short, so it found the
/// same stops in more instructions, 11.2 k → 11.4 k a call.)
#[inline(always)]
fn next_stop(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // For each test the lowest flagged byte is the first that matches (a borrow only runs
    // upwards, from a byte that matched), so the lowest flag of the three is the first stop.
    let equal = |word: u64, byte: u8| {
        let x = word ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x
    };
    while let Some(chunk) = b.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let word = u64::from_le_bytes(bytes);
        let control = word.wrapping_sub(ONES * 0x20) & !word;
        let stops = (equal(word, b'"') | equal(word, b'\\') | control) & HIGH;
        if stops != 0 {
            return i + (stops.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            break;
        }
        i += 1;
    }
    i
}

/// The end of the number at `i`: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn number_end(b: &[u8], mut i: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match *b.get(i)? {
        // One leading zero, and no digit after it.
        b'0' => {
            i += 1;
            if b.get(i).is_some_and(u8::is_ascii_digit) {
                return None;
            }
        }
        b'1'..=b'9' => i = digits(i + 1),
        _ => return None,
    }
    if b.get(i) == Some(&b'.') {
        let end = digits(i + 1);
        if end == i + 1 {
            return None;
        }
        i = end;
    }
    if let Some(b'e' | b'E') = b.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = b.get(i) {
            i += 1;
        }
        let end = digits(i);
        if end == i {
            return None;
        }
        i = end;
    }
    Some(i)
}

fn literal_end(b: &[u8], i: usize, word: &[u8]) -> Option<usize> {
    (b.get(i..i + word.len())? == word).then_some(i + word.len())
}

/// After `{` or `,` in an object: the key, the colon, and the whitespace before the value.
#[inline(always)]
fn member_value_start(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let (end, _) = string_end(b, i + 1)?;
    let i = skip_ws(b, end);
    (b.get(i) == Some(&b':')).then(|| skip_ws(b, i + 1))
}

/// The end of the JSON value that starts at `i` (no whitespace before it), checked all the
/// way down. Containers are walked with a stack of bits (1: object), not by recursion.
fn value_end(b: &[u8], mut i: usize) -> Option<usize> {
    let mut objects: u64 = 0;
    let mut depth: u32 = 0;
    loop {
        // A value starts at `i`.
        match *b.get(i)? {
            b'"' => i = string_end(b, i + 1)?.0,
            b'-' | b'0'..=b'9' => i = number_end(b, i)?,
            b't' => i = literal_end(b, i, b"true")?,
            b'f' => i = literal_end(b, i, b"false")?,
            b'n' => i = literal_end(b, i, b"null")?,
            open @ (b'{' | b'[') => {
                if depth == MAX_DEPTH {
                    return None;
                }
                let object = open == b'{';
                objects = (objects << 1) | u64::from(object);
                depth += 1;
                i = skip_ws(b, i + 1);
                let close = if object { b'}' } else { b']' };
                if b.get(i) == Some(&close) {
                    objects >>= 1;
                    depth -= 1;
                    i += 1;
                } else {
                    if object {
                        i = member_value_start(b, i)?;
                    }
                    continue;
                }
            }
            _ => return None,
        }
        // A value ended at `i`: close what it ends, or move to the next member.
        loop {
            if depth == 0 {
                return Some(i);
            }
            i = skip_ws(b, i);
            let object = objects & 1 == 1;
            match *b.get(i)? {
                b',' => {
                    i = skip_ws(b, i + 1);
                    if object {
                        i = member_value_start(b, i)?;
                    }
                    break;
                }
                b'}' if object => {}
                b']' if !object => {}
                _ => return None,
            }
            objects >>= 1;
            depth -= 1;
            i += 1;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::proxy::message::{reference_envelope, Envelope};
    use proptest::prelude::*;

    /// A reading of a line's envelope, owned, so both readers' answers compare.
    type Reading = [Option<String>; 5];

    fn of_scan(s: Scanned<'_>) -> Reading {
        [s.id, s.method, s.params, s.result, s.error].map(|m| m.map(str::to_owned))
    }

    /// What the reference reader makes of `text`.
    fn reference(text: &str) -> Option<Reading> {
        let env: Envelope<'_> = reference_envelope(text).ok()?;
        let raw = |r: Option<crate::proxy::message::RawJson<'_>>| r.map(|r| r.get().to_owned());
        Some([
            raw(env.id),
            env.method.map(|m| m.into_owned()),
            raw(env.params),
            raw(env.result),
            raw(env.error),
        ])
    }

    /// The scanner either defers or agrees with the reference reader.
    fn agrees(text: &str) {
        if let Some(fast) = scan(text) {
            assert_eq!(Some(of_scan(fast)), reference(text), "{text:?}");
        }
    }

    #[test]
    fn reads_the_lines_a_session_is_made_of() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello 7"}}}"#,
            r#"{"id":5,"jsonrpc":"2.0","result":{"content":[{"text":"hello 5","type":"text"}],"isError":false}}"#,
            r#" { "jsonrpc" : "2.0" , "method" : "notifications/initialized" } "#,
            r#"{"jsonrpc":"2.0","id":"a-1","error":{"code":-32601,"message":"no \"such\" method\u00e9"}}"#,
            r#"{"id":null,"method":"x","params":[1,-0.5,2e10,1E-3,true,false,null,{},[],"é"]}"#,
            "{}",
        ] {
            let fast = scan(line).unwrap_or_else(|| panic!("the scanner deferred {line}"));
            assert_eq!(Some(of_scan(fast)), reference(line), "{line}");
        }
        let s = scan(r#"{"id":1,"method":"m","params":{"a":[1]},"extra":{"method":2}}"#).unwrap();
        assert_eq!(
            (s.id, s.method, s.params, s.result),
            (Some("1"), Some("m"), Some(r#"{"a":[1]}"#), None)
        );
    }

    #[test]
    fn runs_of_string_content_stop_at_the_first_quote_backslash_or_control_character() {
        let text = "abcdefghijklmnopqrstuvwxyzé0123456789";
        for at in 0..text.len() {
            for stop in [b'"', b'\\', b'\n', 0x1f, 0] {
                let mut line = text.as_bytes().to_vec();
                line[at] = stop;
                // Later stops, and bytes just above the range, change nothing.
                line.push(b'"');
                line.insert(0, 0x20);
                assert_eq!(next_stop(&line, 0), at + 1, "{line:?}");
                assert_eq!(next_stop(&line, 1), at + 1, "{line:?}");
            }
        }
        assert_eq!(next_stop(b"\x7f\xff\x80 !#", 0), 6);
        assert_eq!(next_stop(b"", 0), 0);
        assert_eq!(next_stop(b"ab", 5), 5);
    }

    /// Whatever the bytes and wherever the run starts, the stop is the first byte a plain
    /// loop would find: the eight-byte steps and the tail agree at every offset.
    #[test]
    fn the_wide_steps_stop_where_a_byte_loop_stops() {
        let naive = |b: &[u8], i: usize| {
            (i..b.len())
                .find(|&j| b[j] == b'"' || b[j] == b'\\' || b[j] < 0x20)
                .unwrap_or(b.len().max(i))
        };
        let mut runner = proptest::test_runner::TestRunner::default();
        let bytes = prop::collection::vec(
            prop_oneof![
                4 => 0x20u8..=0xff,
                1 => Just(b'"'),
                1 => Just(b'\\'),
                1 => 0u8..0x20,
            ],
            0..80,
        );
        runner
            .run(&(bytes, 0usize..90), |(b, i)| {
                prop_assert_eq!(next_stop(&b, i), naive(&b, i), "{:?} from {}", b, i);
                Ok(())
            })
            .expect("every start agrees");
    }

    #[test]
    fn defers_what_it_does_not_decide() {
        for line in [
            r#"{"id":1,"id":2}"#,
            r#"{"id":null,"id":2}"#,
            r#"{"\u0069d":1}"#,
            r#"{"method":"tools\/call"}"#,
            r#"{"method":5}"#,
            r#"[{"id":1}]"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":-}"#,
            r#"{"a":1e}"#,
            r#"{"a":[1,]}"#,
            r#"{"a":1,}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12g4"}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":1} x"#,
            r#"{"a":nul}"#,
            r#"{"a" 1}"#,
            r#"{"a":{"b" 1}}"#,
            r#"{"a":[1 2]}"#,
            r#"{"a":{]}"#,
            r#"{"a":"#,
            "",
        ] {
            assert_eq!(scan(line), None, "{line}");
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(70), "]".repeat(70));
        assert_eq!(scan(&deep), None);
        let ok = format!("{{\"a\":{}{}}}", "[".repeat(63), "]".repeat(63));
        assert!(scan(&ok).is_some());
        agrees(&deep);
        agrees(&ok);
    }

    /// Pieces that lines are made of, valid and not: generated lines put them together.
    fn piece() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\t",
            "\r",
            "\n",
            "\"",
            "\\",
            "\"id\"",
            "\"method\"",
            "\"params\"",
            "\"result\"",
            "\"error\"",
            "\"x\"",
            "\"\\u0069d\"",
            "null",
            "nul",
            "true",
            "false",
            "0",
            "-",
            "01",
            "1.5",
            "1.",
            "2e",
            "2E+3",
            "1e999",
            "-0",
            "\"a\\\"b\"",
            "\"\\u00e9\"",
            "\"\\ud800\"",
            "\"\\q\"",
            "\"é\"",
            "\u{1}",
            "\"\"",
            "\"m\"",
            "7",
        ])
    }

    /// A valid envelope with `pieces` spliced in at `at`: mostly near-misses of real lines.
    fn spliced() -> impl Strategy<Value = String> {
        spliced_into(vec![
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"e","arguments":{"t":[1,{"u":null}]}}}"#,
            r#"{"id":"5","jsonrpc":"2.0","result":{"content":[{"text":"h","type":"text"}],"isError":false}}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}"#,
        ])
    }

    /// One of `bases` with a few [`piece`]s spliced in somewhere.
    pub(crate) fn spliced_into(bases: Vec<&'static str>) -> impl Strategy<Value = String> {
        (
            prop::collection::vec(piece(), 0..6),
            0usize..200,
            prop::sample::select(bases),
        )
            .prop_map(|(pieces, at, base)| {
                let mut at = at.min(base.len());
                while !base.is_char_boundary(at) {
                    at -= 1;
                }
                format!("{}{}{}", &base[..at], pieces.concat(), &base[at..])
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn agrees_with_the_reference_on_near_misses(line in spliced()) {
            agrees(&line);
        }

        #[test]
        fn agrees_with_the_reference_on_piles_of_pieces(pieces in prop::collection::vec(piece(), 0..24)) {
            agrees(&pieces.concat());
        }

        #[test]
        fn agrees_with_the_reference_on_any_text(text in "\\PC{0,40}") {
            agrees(&text);
        }
    }
}
