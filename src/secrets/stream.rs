//! Redacting a byte stream (a block's live output) whose secrets may be split across chunks.
//!
//! A chunk that ends with the first bytes of a secret (at least `HOLD_MIN` of them) keeps
//! those bytes back until the next chunk (or the end of the block) shows whether the secret
//! follows. A split after fewer bytes lets those few bytes through (holding back every byte
//! that merely could start a secret would hold back a prompt's last character while it
//! waits for input), remembers them, and redacts the rest of the secret when it comes: the
//! screen then shows at most the first `HOLD_MIN - 1` characters before `[REDACTED]`.

use super::{REDACTED, Redactor};

/// Trailing bytes that begin a secret are held back from this many on.
const HOLD_MIN: usize = 4;

/// A redactor with memory across chunks.
#[derive(Debug, Clone)]
pub struct StreamRedactor {
    redactor: Redactor,
    /// Bytes held back: they may begin a secret.
    pending: Vec<u8>,
    /// The last few bytes let through raw, which may begin a secret.
    tail: Vec<u8>,
}

impl StreamRedactor {
    pub fn new(redactor: Redactor) -> StreamRedactor {
        StreamRedactor {
            redactor,
            pending: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// The bytes of `chunk` (and of what was held back) that may be shown now.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.redactor.is_empty() {
            return chunk.to_vec();
        }
        let skip = self.tail.len();
        let mut work = std::mem::take(&mut self.tail);
        work.append(&mut self.pending);
        work.extend_from_slice(chunk);
        let secrets = self.redactor.secrets();
        let mut out = Vec::with_capacity(chunk.len());
        // Where the bytes let through raw (since the last replacement, the remembered tail
        // among them) begin.
        let mut raw_from = 0;
        let mut i = 0;
        let mut held = false;
        while i < work.len() {
            let rest = &work[i..];
            if let Some(s) = secrets.iter().find(|s| rest.starts_with(s.as_bytes())) {
                out.extend_from_slice(REDACTED.as_bytes());
                i += s.len();
                raw_from = i;
                continue;
            }
            if rest.len() >= HOLD_MIN
                && secrets
                    .iter()
                    .any(|s| s.len() > rest.len() && s.as_bytes().starts_with(rest))
            {
                // The bytes not shown yet wait; a start already shown stays remembered.
                let from = i.max(skip);
                self.pending = work[from..].to_vec();
                if i < skip {
                    self.tail = work[..skip].to_vec();
                    return out;
                }
                held = true;
                break;
            }
            if i >= skip {
                out.push(work[i]);
            }
            i += 1;
        }
        let end = if held { i } else { work.len() };
        let raw = &work[raw_from.min(end)..end];
        self.tail = raw[raw.len().saturating_sub(HOLD_MIN - 1)..].to_vec();
        out
    }

    /// What was held back, at the end of the stream.
    pub fn finish(&mut self) -> Vec<u8> {
        self.tail.clear();
        std::mem::take(&mut self.pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(secret: &str, chunks: &[&str]) -> String {
        let mut s = StreamRedactor::new(Redactor::from_values(vec![secret.to_string()]));
        let mut out = Vec::new();
        for c in chunks {
            out.extend(s.push(c.as_bytes()));
        }
        out.extend(s.finish());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn whole_and_split_secrets() {
        let key = "sk-test-0123456789";
        assert_eq!(run(key, &["a sk-test-0123456789 b"]), "a [REDACTED] b");
        for cut in 1..key.len() {
            let first = format!("x {}", &key[..cut]);
            let second = format!("{} y", &key[cut..]);
            let shown = run(key, &[&first, &second]);
            assert!(!shown.contains(&key[3..]), "cut {cut}: {shown}");
            assert!(shown.ends_with("[REDACTED] y"), "cut {cut}: {shown}");
        }
        let parts: Vec<String> = key.chars().map(|c| c.to_string()).collect();
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let shown = run(key, &parts);
        assert!(!shown.contains("0123"), "{shown}");
    }

    #[test]
    fn false_starts_are_let_through() {
        let key = "sk-test-0123456789";
        assert_eq!(run(key, &["sk-te", "st done"]), "sk-test done");
        assert_eq!(run(key, &["end sk-tes"]), "end sk-tes");
        assert_eq!(run(key, &["plain ", "text"]), "plain text");
    }
}
