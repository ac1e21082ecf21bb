//! The end-of-block marker: how a driver says "block N ended with status S", and the
//! streaming scanner that finds it in the PTY's byte stream and strips it.
//!
//! The marker is an OSC sequence, `ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL`, so that even if
//! it ever reached a terminal it would draw nothing. NONCE is random per kernel and never
//! placed in the kernel's environment, and BLOCK is the id of the running block, so output
//! that merely looks like a marker (or an old block's marker) cannot end a block.

use memchr::memmem;

/// The OSC number that opens a marker.
const OSC_NUMBER: &str = "5379";
/// The longest status text accepted (`-2147483648`).
const MAX_STATUS_LEN: usize = 11;

/// Builds the exact prefix a driver writes for `block_id`, before the status and BEL.
pub(crate) fn marker_prefix(nonce: &str, block_id: u64) -> Vec<u8> {
    format!("\x1b]{OSC_NUMBER};{nonce};{block_id};").into_bytes()
}

/// What the scanner found in a chunk once the marker is complete.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// The status the driver reported.
    pub status: i32,
    /// Bytes that followed the marker in the same chunk (output of background work).
    pub rest: Vec<u8>,
}

/// Finds one block's marker in a stream fed in arbitrary chunks.
pub(crate) struct MarkerScanner {
    finder: memmem::Finder<'static>,
    /// Bytes held back because they may be the start of a marker split across chunks.
    pending: Vec<u8>,
}

impl MarkerScanner {
    pub fn new(nonce: &str, block_id: u64) -> Self {
        MarkerScanner {
            finder: memmem::Finder::new(&marker_prefix(nonce, block_id)).into_owned(),
            pending: Vec::new(),
        }
    }

    fn prefix(&self) -> &[u8] {
        self.finder.needle()
    }

    /// Feeds a chunk. Output that is certainly not part of the marker is passed to `emit`,
    /// in order. Returns the status once the whole marker has been seen.
    pub fn feed(&mut self, chunk: &[u8], emit: &mut dyn FnMut(&[u8])) -> Option<Found> {
        if self.pending.is_empty() {
            return self.scan(chunk, emit);
        }
        let mut joined = std::mem::take(&mut self.pending);
        joined.extend_from_slice(chunk);
        self.scan(&joined, emit)
    }

    /// Gives back whatever was held back (the stream ended without a marker).
    pub fn flush(&mut self, emit: &mut dyn FnMut(&[u8])) {
        if !self.pending.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            emit(&pending);
        }
    }

    fn scan(&mut self, data: &[u8], emit: &mut dyn FnMut(&[u8])) -> Option<Found> {
        // Callers never see an empty slice.
        let emit = &mut |bytes: &[u8]| {
            if !bytes.is_empty() {
                emit(bytes);
            }
        };
        let prefix_len = self.prefix().len();
        let mut start = 0;
        while let Some(pos) = self.finder.find(&data[start..]) {
            let at = start + pos;
            let after = at + prefix_len;
            match parse_status(&data[after..]) {
                Status::Complete { status, len } => {
                    emit(&data[start..at]);
                    return Some(Found {
                        status,
                        rest: data[after + len..].to_vec(),
                    });
                }
                Status::Incomplete => {
                    emit(&data[start..at]);
                    self.pending = data[at..].to_vec();
                    return None;
                }
                Status::Invalid => {
                    // Looks like our prefix but is not a marker: it is output.
                    emit(&data[start..after]);
                    start = after;
                }
            }
        }
        // Hold back a tail that could be the beginning of the prefix.
        let keep = partial_prefix_len(&data[start..], self.prefix());
        let cut = data.len() - keep;
        emit(&data[start..cut]);
        if keep > 0 {
            self.pending = data[cut..].to_vec();
        }
        None
    }
}

enum Status {
    Complete { status: i32, len: usize },
    Incomplete,
    Invalid,
}

/// Parses `STATUS BEL` at the start of `data`.
fn parse_status(data: &[u8]) -> Status {
    let limit = data.len().min(MAX_STATUS_LEN + 1);
    for (i, &b) in data[..limit].iter().enumerate() {
        match b {
            0x07 => {
                let digits = &data[..i];
                return match std::str::from_utf8(digits)
                    .ok()
                    .and_then(|s| s.parse().ok())
                {
                    Some(status) => Status::Complete { status, len: i + 1 },
                    None => Status::Invalid,
                };
            }
            b'0'..=b'9' => {}
            b'-' if i == 0 => {}
            _ => return Status::Invalid,
        }
    }
    if data.len() > MAX_STATUS_LEN {
        Status::Invalid
    } else {
        Status::Incomplete
    }
}

/// The length of the longest suffix of `data` that is a proper prefix of `prefix`.
fn partial_prefix_len(data: &[u8], prefix: &[u8]) -> usize {
    let window = data.len().min(prefix.len().saturating_sub(1));
    let tail = &data[data.len() - window..];
    // The prefix starts with ESC, which occurs nowhere else in it: only a suffix that
    // starts at an ESC can match.
    memchr::memrchr(0x1b, tail)
        .filter(|&i| prefix.starts_with(&tail[i..]))
        .map_or(0, |i| window - i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(scanner: &mut MarkerScanner, chunks: &[&[u8]]) -> (Vec<u8>, Option<Found>) {
        let mut out = Vec::new();
        for chunk in chunks {
            if let Some(found) = scanner.feed(chunk, &mut |b| out.extend_from_slice(b)) {
                return (out, Some(found));
            }
        }
        (out, None)
    }

    #[test]
    fn finds_a_marker_and_strips_it() {
        let mut s = MarkerScanner::new("abc", 7);
        let (out, found) = run(&mut s, &[b"hello\r\n\x1b]5379;abc;7;0\x07tail"]);
        assert_eq!(out, b"hello\r\n");
        assert_eq!(
            found,
            Some(Found {
                status: 0,
                rest: b"tail".to_vec()
            })
        );
    }

    #[test]
    fn finds_a_marker_split_at_every_byte() {
        let stream = b"no newline\x1b]5379;n0nce;12;-3\x07";
        for split in 1..stream.len() {
            let mut s = MarkerScanner::new("n0nce", 12);
            let (out, found) = run(&mut s, &[&stream[..split], &stream[split..]]);
            assert_eq!(out, b"no newline", "split at {split}");
            assert_eq!(found.map(|f| f.status), Some(-3), "split at {split}");
        }
    }

    #[test]
    fn ignores_markers_with_another_nonce_or_block() {
        let mut s = MarkerScanner::new("right", 2);
        let fake = b"\x1b]5379;wrong;2;0\x07\x1b]5379;right;1;0\x07\x1b]5379;right;2;x\x07";
        let (out, found) = run(&mut s, &[fake]);
        assert_eq!(found, None);
        assert_eq!(out, fake.to_vec());
    }

    #[test]
    fn a_partial_prefix_at_the_end_is_held_then_released() {
        let mut s = MarkerScanner::new("n", 1);
        let (out, found) = run(&mut s, &[b"abc\x1b]53"]);
        assert_eq!(found, None);
        assert_eq!(out, b"abc");
        let (out, found) = run(&mut s, &[b"x"]);
        assert_eq!(found, None);
        assert_eq!(out, b"\x1b]53x");
    }

    #[test]
    fn never_emits_empty_slices() {
        let mut s = MarkerScanner::new("n", 1);
        let mut empties = 0;
        for chunk in [&b"\x1b]5379;n;1;0\x07"[..], b"", b"\x1b", b"x"] {
            s.feed(chunk, &mut |b| empties += usize::from(b.is_empty()));
        }
        assert_eq!(empties, 0);
    }

    #[test]
    fn flush_returns_held_bytes() {
        let mut s = MarkerScanner::new("n", 1);
        let (_, _) = run(&mut s, &[b"\x1b"]);
        let mut out = Vec::new();
        s.flush(&mut |b| out.extend_from_slice(b));
        assert_eq!(out, b"\x1b");
    }

    #[test]
    fn binary_junk_passes_through() {
        let junk: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let mut s = MarkerScanner::new("n", 1);
        let (out, found) = run(&mut s, &[&junk]);
        assert_eq!(found, None);
        let mut all = out;
        s.flush(&mut |b| all.extend_from_slice(b));
        assert_eq!(all, junk);
    }
}
