//! The top-level keys of a server response that is forwarded while it is still arriving.
//!
//! A long result is streamed to the client piece by piece (see the router's `maybe_stream`),
//! chosen by the id at its beginning. Its tail is never parsed as a whole, so without a look
//! at it a hostile server could append a second `id` key — a client parser that keeps the
//! last of two equal keys would read the line as an answer to another request, say a call the
//! proxy denied — or a `method` key that turns the answer into a request. [`KeyGuard`] follows
//! the JSON structure byte by byte (strings, escapes, nesting) and reports either as soon as
//! the key's name is complete, before the piece that holds it is forwarded. Pure code over
//! bytes; inside strings it skips ahead to the next quote or backslash, so a 10 MiB text costs
//! one scan.

/// Raw bytes of a key name kept for the check; `method` escaped as `\uXXXX` six times is 36.
const MAX_KEY: usize = 64;

/// Watches the top-level keys of one JSON object fed in pieces.
#[derive(Debug, Default)]
pub struct KeyGuard {
    depth: u32,
    in_string: bool,
    escape: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// The raw bytes of the top-level key being read (capped at [`MAX_KEY`]).
    key: Option<Vec<u8>>,
    ids: u32,
}

impl KeyGuard {
    /// Feed the next piece. `Err` names what is wrong once the object has a second top-level
    /// `id` or any top-level `method`.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), &'static str> {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if self.in_string {
                if self.escape {
                    self.escape = false;
                    self.push_key(b);
                } else if b == b'\\' {
                    self.escape = true;
                    self.push_key(b);
                } else if b == b'"' {
                    self.in_string = false;
                    if let Some(key) = self.key.take() {
                        self.check_key(&key)?;
                    }
                } else if self.key.is_none() {
                    // A value's text: jump to the next byte that can end or escape it (a
                    // vectorised search: a streamed answer is mostly one long string).
                    match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                        Some(p) => {
                            i += p;
                            continue;
                        }
                        None => return Ok(()),
                    }
                } else {
                    self.push_key(b);
                }
                i += 1;
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.expect_key {
                        self.key = Some(Vec::new());
                        self.expect_key = false;
                    }
                }
                b'{' => {
                    self.depth += 1;
                    if self.depth == 1 {
                        self.expect_key = true;
                    }
                }
                b'[' => self.depth += 1,
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b',' if self.depth == 1 => self.expect_key = true,
                _ => {}
            }
            i += 1;
        }
        Ok(())
    }

    fn push_key(&mut self, b: u8) {
        if let Some(key) = &mut self.key {
            if key.len() < MAX_KEY {
                key.push(b);
            }
        }
    }

    fn check_key(&mut self, raw: &[u8]) -> Result<(), &'static str> {
        if raw.len() >= MAX_KEY {
            return Ok(());
        }
        let name = if raw.contains(&b'\\') {
            let mut quoted = Vec::with_capacity(raw.len() + 2);
            quoted.push(b'"');
            quoted.extend_from_slice(raw);
            quoted.push(b'"');
            serde_json::from_slice::<String>(&quoted).unwrap_or_default()
        } else {
            String::from_utf8_lossy(raw).into_owned()
        };
        match name.as_str() {
            "id" => {
                self.ids += 1;
                if self.ids > 1 {
                    return Err("a second top-level `id` key");
                }
                Ok(())
            }
            "method" => Err("a top-level `method` key in a response"),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeyGuard;

    fn check(pieces: &[&str]) -> Result<(), &'static str> {
        let mut g = KeyGuard::default();
        for p in pieces {
            g.feed(p.as_bytes())?;
        }
        Ok(())
    }

    #[test]
    fn one_id_and_nested_ids_pass() {
        let line = r#"{"jsonrpc":"2.0","id":"a","result":{"id":"b","content":[{"id":1,"text":"\"id\":2, \\"}]}}"#;
        assert_eq!(check(&[line]), Ok(()));
        // The same, cut at every byte.
        for cut in 0..line.len() {
            assert_eq!(check(&[&line[..cut], &line[cut..]]), Ok(()), "cut at {cut}");
        }
    }

    #[test]
    fn a_second_id_is_caught_in_any_spelling_and_across_pieces() {
        let line = r#"{"id":"p1","result":{"content":[]},"id":"d1"}"#;
        for cut in 0..line.len() {
            assert!(
                check(&[&line[..cut], &line[cut..]]).is_err(),
                "cut at {cut}"
            );
        }
        assert!(check(&[r#"{"id":1,"result":{},"i\u0064":2}"#]).is_err());
        assert!(
            check(&[r#"{"id":1,"result":{},"\u006d\u0065\u0074\u0068\u006f\u0064":"x"}"#]).is_err()
        );
        assert!(check(&[r#"{"id":1,"result":{},"method":"sampling/createMessage"}"#]).is_err());
    }

    #[test]
    fn long_keys_and_values_are_not_keys() {
        let long_value = format!(
            r#"{{"id":1,"result":{{"text":"{}"}}}}"#,
            "x".repeat(100_000)
        );
        assert_eq!(check(&[&long_value]), Ok(()));
        let long_key = format!(r#"{{"id":1,"{}":0}}"#, "k".repeat(200));
        assert_eq!(check(&[&long_key]), Ok(()));
    }
}
