//! Newline-delimited framing: pure code over bytes, then a thin async reader on top.
//!
//! MCP's stdio transport is one JSON-RPC message per line. [`LineDecoder`] finds complete lines
//! in a buffer without doing I/O, the way mini-redis' `Frame::check` does: "no newline yet"
//! means read more. A line longer than the configured maximum is not buffered: its bytes are
//! dropped as they arrive and, once its newline is seen, reported as [`Frame::TooLong`] so the
//! caller can answer with an error and keep serving the stream.
//!
//! Frames keep the original bytes (including the line terminator) so the proxy forwards exactly
//! what it received; CRLF is accepted and only stripped for inspection.

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt};

/// One unit of the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line: the original bytes including its `\n` (absent only for a final line
    /// that ended at EOF without one).
    Line(Bytes),
    /// A line over the maximum length; `len` bytes (without the terminator) were discarded.
    TooLong { len: usize },
    /// A line still without its newline has passed the maximum: from now on its bytes are
    /// dropped as they arrive, and [`Frame::TooLong`] follows at its end. Reported at once, so
    /// a peer writing an endless line is named while it does, not never.
    Overlong { so_far: usize },
    /// A line without a newline yet has reached the streaming threshold. Its bytes so far are
    /// still buffered: the caller may look at them ([`FramedReader::buffered`]) and either
    /// call [`FramedReader::stream`] to forward it piecewise, or do nothing to keep buffering.
    LongLine,
    /// A piece of a line being streamed; more follows.
    Chunk(Bytes),
    /// The last piece of a streamed line (with its `\n`, unless the stream ended first).
    ChunkEnd(Bytes),
}

impl Frame {
    /// The line's content without `\n` / `\r\n`, for inspection.
    pub fn content(line: &[u8]) -> &[u8] {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        line.strip_suffix(b"\r").unwrap_or(line)
    }
}

/// Finds lines in a byte buffer, enforcing a maximum line length.
#[derive(Debug)]
pub struct LineDecoder {
    max_line: usize,
    /// How far the current buffer was already searched for `\n` (avoids rescanning a long,
    /// still-incomplete line on every read).
    scanned: usize,
    /// `Some(n)`: inside an over-long line, `n` bytes of it dropped so far.
    discarding: Option<usize>,
    /// The last byte dropped was `\r`: if `\n` follows, it was the terminator, not content.
    dropped_cr: bool,
    /// Offer [`Frame::LongLine`] once a partial line reaches this many bytes.
    stream_threshold: usize,
    /// The current partial line was offered for streaming already.
    offered: bool,
    /// The current line is being streamed out piecewise.
    streaming: bool,
}

impl LineDecoder {
    pub fn new(max_line: usize) -> Self {
        LineDecoder {
            max_line: max_line.max(1),
            scanned: 0,
            discarding: None,
            dropped_cr: false,
            stream_threshold: usize::MAX,
            offered: false,
            streaming: false,
        }
    }

    /// Offer long lines for streaming (server → client only: the proxy must see every client
    /// message whole).
    pub fn with_stream_threshold(mut self, threshold: usize) -> Self {
        self.stream_threshold = threshold.max(1);
        self
    }

    /// Forward the current partial line piecewise from now on; returns what is buffered of it.
    pub fn start_streaming(&mut self, buf: &mut BytesMut) -> Bytes {
        self.streaming = true;
        self.scanned = 0;
        buf.split_to(buf.len()).freeze()
    }

    /// Take the next frame out of `buf`, or `None` when more bytes are needed. Blank lines are
    /// skipped (they carry no message).
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        if self.streaming {
            // Streamed lines are not buffered, so the maximum does not apply to them.
            return match memchr_newline(buf, 0) {
                Some(i) => {
                    self.streaming = false;
                    self.offered = false;
                    Some(Frame::ChunkEnd(buf.split_to(i + 1).freeze()))
                }
                None if buf.is_empty() => None,
                None => Some(Frame::Chunk(buf.split_to(buf.len()).freeze())),
            };
        }
        loop {
            if let Some(dropped) = self.discarding {
                match memchr_newline(buf, 0) {
                    Some(i) => {
                        // Whatever the terminator, and wherever a read split it, report the
                        // content length without `\r`, as for a line seen whole.
                        let cr = if i == 0 {
                            self.dropped_cr
                        } else {
                            buf[i - 1] == b'\r'
                        };
                        let _ = buf.split_to(i + 1);
                        self.discarding = None;
                        self.dropped_cr = false;
                        self.scanned = 0;
                        let len = dropped + i - usize::from(cr);
                        return Some(Frame::TooLong { len });
                    }
                    None => {
                        self.discarding = Some(dropped + buf.len());
                        if let Some(&last) = buf.last() {
                            self.dropped_cr = last == b'\r';
                        }
                        buf.clear();
                        return None;
                    }
                }
            }
            match memchr_newline(buf, self.scanned) {
                Some(i) => {
                    self.scanned = 0;
                    self.offered = false;
                    let line = buf.split_to(i + 1);
                    let content_len = Frame::content(&line).len();
                    if content_len > self.max_line {
                        return Some(Frame::TooLong { len: content_len });
                    }
                    if Frame::content(&line)
                        .iter()
                        .all(|b| b.is_ascii_whitespace())
                    {
                        continue;
                    }
                    return Some(Frame::Line(line.freeze()));
                }
                None => {
                    // A `\r` that may be followed by `\n` still counts towards the limit; one
                    // byte of slack keeps a max-length CRLF line acceptable.
                    if buf.len() > self.max_line + 1 {
                        let so_far = buf.len();
                        self.discarding = Some(so_far);
                        self.dropped_cr = buf.last() == Some(&b'\r');
                        self.scanned = 0;
                        self.offered = false;
                        // Give the line's memory back, not just its bytes: a buffer grown to
                        // the maximum would otherwise stay that large for the session.
                        *buf = BytesMut::new();
                        return Some(Frame::Overlong { so_far });
                    } else {
                        self.scanned = buf.len();
                        if !self.offered && buf.len() >= self.stream_threshold {
                            self.offered = true;
                            return Some(Frame::LongLine);
                        }
                    }
                    return None;
                }
            }
        }
    }

    /// At end of stream: whatever is left becomes a final frame (a line without `\n`).
    pub fn decode_eof(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        if self.streaming {
            // The stream ended inside a streamed line: close it (nothing more will come).
            self.streaming = false;
            self.offered = false;
            return Some(Frame::ChunkEnd(buf.split_to(buf.len()).freeze()));
        }
        if let Some(frame) = self.decode(buf) {
            if frame != Frame::LongLine {
                return Some(frame);
            }
        }
        self.scanned = 0;
        if let Some(dropped) = self.discarding.take() {
            // A final `\r` without `\n` is not content either (see `Frame::content`).
            let cr = match buf.last() {
                Some(&last) => last == b'\r',
                None => self.dropped_cr,
            };
            self.dropped_cr = false;
            let len = dropped + buf.len() - usize::from(cr);
            buf.clear();
            return Some(Frame::TooLong { len });
        }
        if buf.is_empty() || buf.iter().all(|b| b.is_ascii_whitespace()) {
            buf.clear();
            return None;
        }
        let line = buf.split_to(buf.len());
        if Frame::content(&line).len() > self.max_line {
            return Some(Frame::TooLong {
                len: Frame::content(&line).len(),
            });
        }
        Some(Frame::Line(line.freeze()))
    }
}

fn memchr_newline(buf: &[u8], from: usize) -> Option<usize> {
    find_newline(buf.get(from..)?).map(|i| i + from)
}

/// The first `\n` in `hay`.
///
/// memchr's own entry point picks its AVX2 or SSE2 searcher by asking the CPU (`CPUID`) on its
/// first call in a process: ~30 µs in a VM, where each `CPUID` exits to the hypervisor, and that
/// first call was the search of the client's first message, between its arrival and its
/// forwarding to the server. SSE2 is part of the x86_64 baseline, so its searcher needs no
/// question; on a 10 MiB line it is not measurably slower here (the line arrives in pipe-sized
/// reads, each searched once).
fn find_newline(hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if let Some(sse2) = memchr::arch::x86_64::sse2::memchr::One::new(b'\n') {
        return sse2.find(hay);
    }
    memchr::memchr(b'\n', hay)
}

/// Reads frames from an async byte stream. `next_frame` is cancel-safe: all state lives in
/// `self` and `read_buf` loses no data when its future is dropped, so it can sit in a
/// `tokio::select!` next to the other direction.
#[derive(Debug)]
pub struct FramedReader<R> {
    inner: R,
    buf: BytesMut,
    decoder: LineDecoder,
    eof: bool,
}

impl<R: AsyncRead + Unpin> FramedReader<R> {
    pub fn new(inner: R, max_line: usize) -> Self {
        FramedReader {
            inner,
            buf: BytesMut::with_capacity(16 * 1024),
            decoder: LineDecoder::new(max_line),
            eof: false,
        }
    }

    /// See [`LineDecoder::with_stream_threshold`].
    pub fn with_stream_threshold(mut self, threshold: usize) -> Self {
        self.decoder = self.decoder.with_stream_threshold(threshold);
        self
    }

    /// The bytes of the partial line after [`Frame::LongLine`].
    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Is a whole line buffered (so the next frame is ready without reading)?
    pub fn has_line(&self) -> bool {
        find_newline(&self.buf).is_some()
    }

    /// Stream the partial line announced by [`Frame::LongLine`]: returns its first piece.
    pub fn stream(&mut self) -> Bytes {
        self.decoder.start_streaming(&mut self.buf)
    }

    /// The next frame, or `None` at a clean end of stream.
    pub async fn next_frame(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.buf) {
                return Ok(Some(frame));
            }
            if self.eof {
                return Ok(self.decoder.decode_eof(&mut self.buf));
            }
            if self.buf.capacity() - self.buf.len() < 8 * 1024 {
                self.buf.reserve(64 * 1024);
            }
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                self.eof = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(input: &[&[u8]], max: usize) -> Vec<Frame> {
        let mut dec = LineDecoder::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in input {
            buf.extend_from_slice(chunk);
            while let Some(f) = dec.decode(&mut buf) {
                out.push(f);
            }
        }
        while let Some(f) = dec.decode_eof(&mut buf) {
            out.push(f);
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_original_bytes() {
        let got = frames(&[b"{\"a\":1}\r\n{\"b\"", b":2}\n\n  \n{\"c\":3}"], 100);
        assert_eq!(
            got,
            vec![
                Frame::Line(Bytes::from_static(b"{\"a\":1}\r\n")),
                Frame::Line(Bytes::from_static(b"{\"b\":2}\n")),
                Frame::Line(Bytes::from_static(b"{\"c\":3}")),
            ]
        );
    }

    #[test]
    fn over_long_line_is_reported_and_stream_continues() {
        let long = vec![b'x'; 50];
        let got = frames(&[&long[..20], &long[20..], b"\nok\n"], 10);
        assert_eq!(
            got,
            vec![
                // Named as soon as it passes the maximum, before its end is seen.
                Frame::Overlong { so_far: 20 },
                Frame::TooLong { len: 50 },
                Frame::Line(Bytes::from_static(b"ok\n"))
            ]
        );
        // A too-long line that arrives in one chunk with its newline.
        let mut one = long.clone();
        one.extend_from_slice(b"\nok\n");
        assert_eq!(
            frames(&[&one], 10),
            vec![
                Frame::TooLong { len: 50 },
                Frame::Line(Bytes::from_static(b"ok\n"))
            ]
        );
    }

    #[test]
    fn max_length_line_with_crlf_is_accepted() {
        assert_eq!(
            frames(&[b"0123456789\r", b"\n"], 10),
            vec![Frame::Line(Bytes::from_static(b"0123456789\r\n"))]
        );
        assert_eq!(
            frames(&[b"0123456789A\n"], 10),
            vec![Frame::TooLong { len: 11 }]
        );
    }

    #[test]
    fn over_long_line_at_eof_is_reported() {
        assert_eq!(
            frames(&[&[b'y'; 30]], 10),
            vec![Frame::Overlong { so_far: 30 }, Frame::TooLong { len: 30 }]
        );
    }

    #[test]
    fn an_endless_line_is_named_once_and_its_memory_given_back() {
        let mut dec = LineDecoder::new(1000);
        let mut buf = BytesMut::new();
        let mut overlong = 0;
        for _ in 0..1000 {
            buf.extend_from_slice(&[b'z'; 4096]);
            while let Some(f) = dec.decode(&mut buf) {
                assert!(matches!(f, Frame::Overlong { .. }), "{f:?}");
                overlong += 1;
            }
            assert!(buf.capacity() <= 64 * 1024, "{}", buf.capacity());
        }
        assert_eq!(overlong, 1);
        buf.extend_from_slice(b"\n{}\n");
        assert_eq!(
            dec.decode(&mut buf),
            Some(Frame::TooLong { len: 4096 * 1000 })
        );
        assert_eq!(
            dec.decode(&mut buf),
            Some(Frame::Line(Bytes::from_static(b"{}\n")))
        );
    }

    #[test]
    fn long_lines_can_be_streamed_piecewise() {
        let mut dec = LineDecoder::new(1000).with_stream_threshold(8);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(b"0123456789");
        assert_eq!(dec.decode(&mut buf), Some(Frame::LongLine));
        // Not asked twice for the same line.
        assert_eq!(dec.decode(&mut buf), None);
        let first = dec.start_streaming(&mut buf);
        assert_eq!(&first[..], b"0123456789");
        buf.extend_from_slice(b"abc");
        assert_eq!(
            dec.decode(&mut buf),
            Some(Frame::Chunk(Bytes::from_static(b"abc")))
        );
        buf.extend_from_slice(b"de\nnext\n");
        assert_eq!(
            dec.decode(&mut buf),
            Some(Frame::ChunkEnd(Bytes::from_static(b"de\n")))
        );
        assert_eq!(
            dec.decode(&mut buf),
            Some(Frame::Line(Bytes::from_static(b"next\n")))
        );
        // Declining to stream keeps buffering: the whole line comes back as one frame.
        buf.extend_from_slice(b"0123456789");
        assert_eq!(dec.decode(&mut buf), Some(Frame::LongLine));
        buf.extend_from_slice(b"xyz\n");
        assert_eq!(
            dec.decode(&mut buf),
            Some(Frame::Line(Bytes::from_static(b"0123456789xyz\n")))
        );
    }

    mod prop {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Random byte streams split at random points: the decoder never panics, and the
            /// lines it returns reassemble exactly into the non-blank input lines.
            #[test]
            fn lines_reassemble(data in proptest::collection::vec(
                    prop_oneof![Just(b'\n'), Just(b'\r'), Just(b' '), any::<u8>()], 0..400),
                cuts in proptest::collection::vec(0usize..400, 0..8)) {
                let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(data.len())).collect();
                cuts.sort_unstable();
                let mut chunks: Vec<&[u8]> = Vec::new();
                let mut start = 0;
                for c in cuts {
                    chunks.push(&data[start..c]);
                    start = c;
                }
                chunks.push(&data[start..]);
                let got = frames(&chunks, 1 << 20);
                let mut expected = Vec::new();
                let mut rest: &[u8] = &data;
                while !rest.is_empty() {
                    let (line, tail) = match rest.iter().position(|&b| b == b'\n') {
                        Some(i) => (&rest[..=i], &rest[i + 1..]),
                        None => (rest, &rest[rest.len()..]),
                    };
                    if !Frame::content(line).iter().all(|b| b.is_ascii_whitespace()) {
                        expected.push(Frame::Line(Bytes::copy_from_slice(line)));
                    }
                    rest = tail;
                }
                prop_assert_eq!(got, expected);
            }

            /// With a small maximum every line is either returned whole or reported with its
            /// exact length; nothing is lost or invented.
            #[test]
            fn limit_is_exact(data in proptest::collection::vec(
                    prop_oneof![Just(b'\n'), Just(b'a')], 0..300),
                max in 1usize..20, cut in 0usize..300) {
                let cut = cut.min(data.len());
                let all = frames(&[&data[..cut], &data[cut..]], max);
                // An early report is always over the maximum and followed by its line's end.
                for (i, f) in all.iter().enumerate() {
                    if let Frame::Overlong { so_far } = f {
                        prop_assert!(*so_far > max);
                        let ends = matches!(all.get(i + 1), Some(Frame::TooLong { len }) if len >= so_far);
                        prop_assert!(ends, "{:?}", all);
                    }
                }
                let got: Vec<Frame> = all
                    .into_iter()
                    .filter(|f| !matches!(f, Frame::Overlong { .. }))
                    .collect();
                let mut expected = Vec::new();
                for (i, line) in data.split(|&b| b == b'\n').enumerate() {
                    let terminated = i < data.split(|&b| b == b'\n').count() - 1;
                    if line.is_empty() { continue; }
                    if line.len() > max {
                        expected.push(Frame::TooLong { len: line.len() });
                    } else {
                        let mut v = line.to_vec();
                        if terminated { v.push(b'\n'); }
                        expected.push(Frame::Line(Bytes::from(v)));
                    }
                }
                prop_assert_eq!(got, expected);
            }
        }
    }
}
