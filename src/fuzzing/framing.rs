//! The line decoder (`proxy::framing::LineDecoder`): whatever the bytes and however they are
//! split into reads, the frames are the same.
//!
//! Input: byte 0 picks the maximum line length (1..=64, so over-long lines are common), byte 1
//! seeds the read sizes, the rest is the stream. Invariants, checked against the same stream
//! decoded from one read: the same frames come out (so a line's fate never depends on where a
//! read ended, including a CRLF split between reads and an over-long line being discarded); a
//! `Line` is never longer than the maximum and is exactly one input line; with streaming on,
//! no byte is lost or duplicated.

use bytes::BytesMut;

use crate::proxy::framing::{Frame, LineDecoder};

pub fn run(data: &[u8]) {
    let [max, seed, stream @ ..] = data else {
        return;
    };
    let max = usize::from(*max % 64) + 1;
    let whole = without_overlong_lengths(decode(stream, max, &[stream.len().max(1)]), max);
    let sizes = read_sizes(*seed, stream.len());
    let split = without_overlong_lengths(decode(stream, max, &sizes), max);
    assert_eq!(whole, split, "frames depend on read boundaries {sizes:?}");
    let mut rest = stream;
    for frame in &whole {
        match frame {
            Frame::Line(line) => {
                assert!(Frame::content(line).len() <= max, "a Line over the maximum");
                assert!(
                    !Frame::content(line).iter().all(|b| b.is_ascii_whitespace()),
                    "a blank line was emitted"
                );
                // Lines come out in order, each one whole input line.
                let at = find_at_line_start(rest, line).expect("a Line that is not an input line");
                rest = &rest[at + line.len()..];
            }
            Frame::TooLong { len } => assert!(*len > max, "TooLong for {len} <= {max}"),
            Frame::Overlong { .. } => {}
            other => panic!("{other:?} without streaming"),
        }
    }
    streamed_bytes_are_conserved(stream, max, &sizes);
}

/// `Overlong` names a line as soon as a read leaves it past the maximum without its end, so
/// whether it comes at all (a line that arrives whole in one read goes straight to `TooLong`)
/// and how much had arrived depend on the reads. Checked here — past the maximum, and the
/// line's `TooLong` next — then left out so the frames can be compared.
fn without_overlong_lengths(frames: Vec<Frame>, max: usize) -> Vec<Frame> {
    for (i, f) in frames.iter().enumerate() {
        if let Frame::Overlong { so_far } = f {
            assert!(*so_far > max, "Overlong at {so_far} <= {max}");
            assert!(
                matches!(frames.get(i + 1), Some(Frame::TooLong { .. })),
                "Overlong not followed by its TooLong: {frames:?}"
            );
        }
    }
    frames
        .into_iter()
        .filter(|f| !matches!(f, Frame::Overlong { .. }))
        .collect()
}

/// Read sizes from a seed: 1..=16 bytes each, covering the stream.
fn read_sizes(seed: u8, len: usize) -> Vec<usize> {
    let mut x = u32::from(seed) | 1;
    let mut out = Vec::new();
    let mut total = 0;
    while total < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let n = (x % 16) as usize + 1;
        out.push(n);
        total += n;
    }
    out
}

/// Feed `stream` to `dec` in reads of `sizes` (cycled), then end it; every frame goes to
/// `take` with the decoder and its buffer (a taker may start streaming a long line).
fn feed(
    stream: &[u8],
    sizes: &[usize],
    dec: &mut LineDecoder,
    mut take: impl FnMut(Frame, &mut LineDecoder, &mut BytesMut),
) {
    let mut buf = BytesMut::new();
    let mut at = 0;
    for &n in sizes.iter().cycle() {
        if at >= stream.len() {
            break;
        }
        let end = (at + n).min(stream.len());
        buf.extend_from_slice(&stream[at..end]);
        at = end;
        while let Some(f) = dec.decode(&mut buf) {
            take(f, dec, &mut buf);
        }
    }
    while let Some(f) = dec.decode_eof(&mut buf) {
        take(f, dec, &mut buf);
    }
}

fn decode(stream: &[u8], max: usize, sizes: &[usize]) -> Vec<Frame> {
    let mut frames = Vec::new();
    feed(stream, sizes, &mut LineDecoder::new(max), |f, _, _| {
        frames.push(f)
    });
    frames
}

/// With a streaming threshold and every offer taken, every byte of every line that is not
/// dropped as over-long comes out exactly once, in order.
fn streamed_bytes_are_conserved(stream: &[u8], max: usize, sizes: &[usize]) {
    let threshold = (max / 2).max(1);
    let mut dec = LineDecoder::new(max).with_stream_threshold(threshold);
    let mut out: Vec<u8> = Vec::new();
    feed(stream, sizes, &mut dec, |f, dec, buf| match f {
        Frame::Line(b) | Frame::Chunk(b) | Frame::ChunkEnd(b) => out.extend_from_slice(&b),
        Frame::LongLine => out.extend_from_slice(&dec.start_streaming(buf)),
        Frame::TooLong { .. } | Frame::Overlong { .. } => {}
    });
    // `out` is the input with some whole lines (blank or over-long) left out.
    let mut rest = stream;
    for piece in out.split_inclusive(|b| *b == b'\n') {
        let at = find(rest, piece).expect("streamed bytes that are not in the input");
        rest = &rest[at + piece.len()..];
    }
}

/// The first position where `needle` starts a line of `hay`.
fn find_at_line_start(hay: &[u8], needle: &[u8]) -> Option<usize> {
    (0..=hay.len().checked_sub(needle.len())?)
        .filter(|&p| p == 0 || hay[p - 1] == b'\n')
        .find(|&p| hay[p..].starts_with(needle))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}
