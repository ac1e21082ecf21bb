//! The text form of a block's output, for the model: escape sequences stripped,
//! carriage-return overwrites resolved (a progress bar collapses to its last state), and the
//! head and tail kept when it is longer than `max_output` characters.
//!
//! Output is fed as raw PTY bytes in arbitrary chunks. While the text is short, every byte
//! goes through a small terminal-line emulator. Once the text is known to be too long, only
//! newlines are counted and the last bytes are kept in a ring, which is turned into text at
//! the end: a block that prints gigabytes costs a scan, not an emulation.

use std::collections::VecDeque;

pub use crate::protocol::Cut;

/// A line longer than this many bytes is broken, so that one endless line stays bounded.
const LINE_CAP: usize = 16 * 1024;
/// An OSC or other string sequence longer than this is abandoned (binary junk).
const STRING_CAP: usize = 4096;
/// Parameter bytes kept for one CSI sequence.
const CSI_CAP: usize = 32;

/// The finished text form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text {
    pub text: String,
    pub cut: Option<Cut>,
}

/// Collects a block's output and produces its text form.
pub struct TextCapture {
    max: usize,
    screen: LineScreen,
    total_bytes: u64,
    newlines: u64,
    /// Once the text is too long: the last raw bytes, and whether older ones were dropped.
    ring: Option<Ring>,
}

struct Ring {
    bytes: VecDeque<u8>,
    cap: usize,
    overflowed: bool,
}

impl TextCapture {
    pub fn new(max_output: usize) -> Self {
        TextCapture {
            max: max_output.max(64),
            screen: LineScreen::default(),
            total_bytes: 0,
            newlines: 0,
            ring: None,
        }
    }

    pub fn feed(&mut self, bytes: &[u8]) {
        self.total_bytes += bytes.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        if let Some(ring) = &mut self.ring {
            ring.push(bytes);
            return;
        }
        self.screen.feed(bytes);
        if self.screen.out_chars > self.max {
            self.ring = Some(Ring {
                bytes: VecDeque::new(),
                cap: (self.max * 16).max(64 * 1024),
                overflowed: false,
            });
        }
    }

    /// Raw bytes fed so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    pub fn finish(mut self) -> Text {
        let total_lines = self.newlines + u64::from(self.ends_mid_line());
        let half = self.max / 2;
        match self.ring.take() {
            Some(ring) if ring.overflowed => {
                let head = head_of(&self.screen.out, half);
                let bytes: Vec<u8> = ring.bytes.into_iter().collect();
                let from = memchr::memchr(b'\n', &bytes).map_or(0, |i| i + 1);
                let mut tail_screen = LineScreen::default();
                tail_screen.feed(&bytes[from..]);
                let tail_text = tail_screen.finish();
                let tail = tail_of(&tail_text, half);
                join(head, tail, total_lines, self.total_bytes)
            }
            ring => {
                if let Some(ring) = ring {
                    let bytes: Vec<u8> = ring.bytes.into_iter().collect();
                    self.screen.feed(&bytes);
                }
                let total_bytes = self.total_bytes;
                let text = self.screen.finish();
                if text.chars().count() <= self.max {
                    return Text { text, cut: None };
                }
                let head = head_of(&text, half);
                let tail = tail_of(&text[head.len()..], half);
                join(head, tail, total_lines, total_bytes)
            }
        }
    }

    fn ends_mid_line(&self) -> bool {
        match &self.ring {
            Some(ring) => ring.bytes.back().is_some_and(|&b| b != b'\n'),
            None => !self.screen.line.is_empty(),
        }
    }
}

impl Ring {
    fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.cap {
            self.bytes.clear();
            self.bytes.extend(&bytes[bytes.len() - self.cap..]);
            self.overflowed = true;
            return;
        }
        let excess = (self.bytes.len() + bytes.len()).saturating_sub(self.cap);
        if excess > 0 {
            self.bytes.drain(..excess);
            self.overflowed = true;
        }
        self.bytes.extend(bytes);
    }
}

fn join(head: &str, tail: &str, total_lines: u64, total_bytes: u64) -> Text {
    let shown = count_lines(head) + count_lines(tail);
    let lines = total_lines.saturating_sub(shown);
    let mut text = String::with_capacity(head.len() + tail.len() + 80);
    text.push_str(head);
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if lines == 0 {
        // A line too long to keep whole: no line was left out, part of one was.
        let omitted = total_bytes.saturating_sub((head.len() + tail.len()) as u64);
        text.push_str(&format!(
            "[… {} cut from the middle of a long line …]\n",
            human_bytes(omitted)
        ));
    } else {
        text.push_str(&format!(
            "[… {lines} of {total_lines} lines ({}) cut from the middle …]\n",
            human_bytes(total_bytes)
        ));
    }
    text.push_str(tail);
    Text {
        text,
        cut: Some(Cut {
            lines,
            total_lines,
            total_bytes,
        }),
    }
}

fn count_lines(s: &str) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', s.as_bytes()).count() as u64;
    newlines + u64::from(!s.is_empty() && !s.ends_with('\n'))
}

/// The first `max` characters of `s`, ended at a line break when one is near the end.
fn head_of(s: &str, max: usize) -> &str {
    let end = s.char_indices().nth(max).map_or(s.len(), |(i, _)| i);
    let head = &s[..end];
    if end == s.len() {
        return head;
    }
    match head.rfind('\n') {
        Some(nl) if nl >= end / 2 => &head[..=nl],
        _ => head,
    }
}

/// The last `max` characters of `s`, started after a line break when one is near the start.
fn tail_of(s: &str, max: usize) -> &str {
    let count = s.chars().count();
    if count <= max {
        return s;
    }
    let start = s
        .char_indices()
        .nth(count - max)
        .map_or(s.len(), |(i, _)| i);
    let tail = &s[start..];
    match tail.find('\n') {
        Some(nl) if nl < tail.len() / 2 => &tail[nl + 1..],
        _ => tail,
    }
}

pub use crate::protocol::human_bytes;

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Esc {
    #[default]
    Ground,
    Escape,
    Intermediate,
    Csi,
    Osc,
    OscEscape,
    Str,
    StrEscape,
}

/// A one-line terminal: enough of one to resolve what programs do to the current line.
#[derive(Default)]
struct LineScreen {
    state: Esc,
    seq_len: usize,
    params: Vec<u8>,
    /// Bytes of an incomplete UTF-8 character at the end of the last chunk.
    utf8: Vec<u8>,
    /// The current line, its length in characters, whether it is ASCII, and the cursor column.
    line: String,
    line_chars: usize,
    line_ascii: bool,
    cursor: usize,
    /// Committed text and its length in characters.
    out: String,
    out_chars: usize,
}

impl LineScreen {
    fn feed(&mut self, bytes: &[u8]) {
        let mut i = 0;
        while i < bytes.len() {
            if self.state == Esc::Ground {
                let run_end = bytes[i..]
                    .iter()
                    .position(|&b| b < 0x20 || b == 0x7f)
                    .map_or(bytes.len(), |p| i + p);
                if run_end > i {
                    self.text_bytes(&bytes[i..run_end], run_end == bytes.len());
                    i = run_end;
                    continue;
                }
            }
            self.byte(bytes[i]);
            i += 1;
        }
    }

    /// Handles a run of printable bytes (ASCII and UTF-8).
    fn text_bytes(&mut self, run: &[u8], at_chunk_end: bool) {
        let joined;
        let run = if self.utf8.is_empty() {
            run
        } else {
            let mut v = std::mem::take(&mut self.utf8);
            v.extend_from_slice(run);
            joined = v;
            &joined[..]
        };
        let mut rest = run;
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    self.write(s);
                    return;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    // `valid_up_to` bytes are valid UTF-8 by definition: this never falls back.
                    self.write(std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(bad) => {
                            self.write("\u{fffd}");
                            rest = &after[bad..];
                        }
                        None if at_chunk_end => {
                            self.utf8 = after.to_vec();
                            return;
                        }
                        None => {
                            self.write("\u{fffd}");
                            return;
                        }
                    }
                }
            }
        }
    }

    fn byte(&mut self, b: u8) {
        match self.state {
            Esc::Ground => self.control(b),
            Esc::Escape => {
                self.state = match b {
                    b'[' => {
                        self.params.clear();
                        Esc::Csi
                    }
                    b']' => Esc::Osc,
                    b'P' | b'X' | b'^' | b'_' => Esc::Str,
                    0x20..=0x2f => Esc::Intermediate,
                    0x1b => Esc::Escape,
                    _ => Esc::Ground,
                };
                self.seq_len = 0;
            }
            Esc::Intermediate => {
                if !(0x20..=0x2f).contains(&b) {
                    self.state = Esc::Ground;
                }
            }
            Esc::Csi => match b {
                0x30..=0x3f => {
                    if self.params.len() < CSI_CAP {
                        self.params.push(b);
                    }
                }
                0x20..=0x2f => {}
                0x40..=0x7e => {
                    self.state = Esc::Ground;
                    self.csi(b);
                }
                _ => {
                    // A control inside a CSI sequence: abandon it, act on the byte.
                    self.state = Esc::Ground;
                    self.control(b);
                }
            },
            Esc::Osc | Esc::Str => {
                self.seq_len += 1;
                if b == b'\n' {
                    // An unterminated string (junk, or a cut-off title) must not swallow
                    // the lines after it.
                    self.state = Esc::Ground;
                    self.commit();
                } else if b == 0x1b {
                    self.state = if self.state == Esc::Osc {
                        Esc::OscEscape
                    } else {
                        Esc::StrEscape
                    };
                } else if (b == 0x07 && self.state == Esc::Osc) || self.seq_len > STRING_CAP {
                    self.state = Esc::Ground;
                }
            }
            Esc::OscEscape | Esc::StrEscape => {
                // ESC \ ends the string; any other ESC starts a new sequence.
                self.state = Esc::Ground;
                if b != b'\\' {
                    self.byte(0x1b);
                    self.byte(b);
                }
            }
        }
    }

    fn control(&mut self, b: u8) {
        match b {
            b'\n' => self.commit(),
            b'\r' => self.cursor = 0,
            0x08 => self.cursor = self.cursor.saturating_sub(1),
            b'\t' => self.write("\t"),
            0x1b => self.state = Esc::Escape,
            _ => {}
        }
    }

    fn csi(&mut self, finale: u8) {
        let first: usize = std::str::from_utf8(&self.params)
            .ok()
            .and_then(|p| p.split(';').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        match finale {
            b'K' => match first {
                0 => self.truncate_at_cursor(),
                1 => {
                    let blanks = " ".repeat(self.cursor.min(self.line_chars));
                    let cursor = self.cursor;
                    self.cursor = 0;
                    self.write(&blanks);
                    self.cursor = cursor;
                }
                _ => {
                    self.line.clear();
                    self.line_chars = 0;
                    self.line_ascii = true;
                }
            },
            b'G' => self.cursor = first.saturating_sub(1),
            b'C' => self.cursor += first.max(1),
            b'D' => self.cursor = self.cursor.saturating_sub(first.max(1)),
            _ => {}
        }
    }

    fn truncate_at_cursor(&mut self) {
        if self.cursor >= self.line_chars {
            return;
        }
        let at = self.byte_index(self.cursor);
        self.line.truncate(at);
        self.line_chars = self.cursor;
    }

    fn byte_index(&self, column: usize) -> usize {
        if self.line_ascii {
            column.min(self.line.len())
        } else {
            self.line
                .char_indices()
                .nth(column)
                .map_or(self.line.len(), |(i, _)| i)
        }
    }

    /// Writes text at the cursor, overwriting what is there.
    fn write(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if self.line.is_empty() {
            self.line_ascii = true;
        }
        if self.cursor > self.line_chars {
            let pad = self.cursor - self.line_chars;
            self.line.extend(std::iter::repeat_n(' ', pad));
            self.line_chars = self.cursor;
        }
        let ascii = s.is_ascii();
        let n = if ascii { s.len() } else { s.chars().count() };
        if self.cursor == self.line_chars {
            self.line.push_str(s);
        } else if self.line_ascii && ascii {
            let end = (self.cursor + n).min(self.line.len());
            self.line.replace_range(self.cursor..end, s);
        } else {
            let mut chars: Vec<char> = self.line.chars().collect();
            let end = (self.cursor + n).min(chars.len());
            chars.splice(self.cursor..end, s.chars());
            self.line = chars.into_iter().collect();
        }
        self.line_ascii &= ascii;
        self.cursor += n;
        self.line_chars = self.line_chars.max(self.cursor);
        if self.line.len() > LINE_CAP {
            self.commit();
        }
    }

    fn commit(&mut self) {
        let line = std::mem::take(&mut self.line);
        let trimmed = line.trim_end_matches(' ');
        self.out.push_str(trimmed);
        self.out.push('\n');
        self.out_chars += if self.line_ascii {
            trimmed.len()
        } else {
            trimmed.chars().count()
        } + 1;
        self.line_chars = 0;
        self.line_ascii = true;
        self.cursor = 0;
    }

    fn finish(mut self) -> String {
        if !self.utf8.is_empty() {
            self.utf8.clear();
            self.write("\u{fffd}");
        }
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.out.push_str(line.trim_end_matches(' '));
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: &[u8], max: usize) -> Text {
        let mut c = TextCapture::new(max);
        c.feed(bytes);
        c.finish()
    }

    #[test]
    fn strips_colours_and_pty_line_endings() {
        let t = text(b"\x1b[1;31mred\x1b[0m plain\r\nnext\r\n", 4000);
        assert_eq!(t.text, "red plain\nnext\n");
        assert_eq!(t.cut, None);
    }

    #[test]
    fn a_progress_bar_collapses_to_its_last_state() {
        let t = text(
            b"start\r\n 10% [#   ]\r 50% [##  ]\r100% [####]\r\ndone",
            4000,
        );
        assert_eq!(t.text, "start\n100% [####]\ndone");
    }

    #[test]
    fn erase_line_and_shorter_overwrites() {
        let t = text(b"downloading 1234\r\x1b[Kok\r\n", 4000);
        assert_eq!(t.text, "ok\n");
        let t = text(b"abcdef\rxy\n", 4000);
        assert_eq!(t.text, "xycdef\n");
    }

    #[test]
    fn overwrites_wide_and_accented_characters() {
        let t = text("héllo wörld\rHÉ\n".as_bytes(), 4000);
        assert_eq!(t.text, "HÉllo wörld\n");
    }

    #[test]
    fn osc_titles_and_hyperlinks_vanish() {
        let t = text(
            b"\x1b]0;title\x07a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b",
            4000,
        );
        assert_eq!(t.text, "alinkb");
    }

    #[test]
    fn an_unterminated_osc_ends_at_the_line_end() {
        let t = text(b"a\x1b]0;never ends\nnext line\n", 4000);
        assert_eq!(t.text, "a\nnext line\n");
    }

    #[test]
    fn utf8_split_across_chunks_survives() {
        let bytes = "naïve ☃ text".as_bytes();
        for split in 1..bytes.len() {
            let mut c = TextCapture::new(4000);
            c.feed(&bytes[..split]);
            c.feed(&bytes[split..]);
            assert_eq!(c.finish().text, "naïve ☃ text", "split at {split}");
        }
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let t = text(b"a\xff\xfeb\x00c", 4000);
        assert_eq!(t.text, "a\u{fffd}\u{fffd}bc");
    }

    #[test]
    fn one_long_line_cut_in_its_middle_is_said_as_such() {
        let t = text("x".repeat(50_000).as_bytes(), 1000);
        let cut = t.cut.expect("cut");
        assert_eq!(cut.lines, 0, "{cut:?}");
        assert!(
            t.text.contains("cut from the middle of a long line"),
            "{}",
            t.text
        );
        assert!(!t.text.contains(" lines ("), "{}", t.text);
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_says_what_was_cut() {
        let mut c = TextCapture::new(1000);
        for i in 0..100_000 {
            c.feed(format!("line {i}\r\n").as_bytes());
        }
        let t = c.finish();
        assert!(t.text.starts_with("line 0\nline 1\n"), "{}", &t.text[..50]);
        assert!(t.text.ends_with("line 99998\nline 99999\n"));
        let cut = t.cut.expect("cut");
        assert_eq!(cut.total_lines, 100_000);
        assert!(cut.lines > 99_800 && cut.lines < 100_000, "{cut:?}");
        assert!(
            t.text
                .contains(&format!("[… {} of 100000 lines", cut.lines))
        );
        assert!(t.text.chars().count() < 1200, "{}", t.text.len());
    }

    #[test]
    fn slightly_long_output_is_cut_exactly() {
        let mut c = TextCapture::new(100);
        c.feed(&b"0123456789\n".repeat(12));
        let t = c.finish();
        let cut = t.cut.expect("cut");
        assert_eq!(cut.total_lines, 12);
        let shown = t.text.lines().filter(|l| *l == "0123456789").count() as u64;
        assert_eq!(shown + cut.lines, 12);
    }

    #[test]
    fn one_endless_line_stays_bounded() {
        let mut c = TextCapture::new(1000);
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            c.feed(&chunk);
        }
        let t = c.finish();
        assert!(t.text.len() < 2000);
        assert_eq!(t.cut.map(|c| c.total_bytes), Some(4 * 1024 * 1024));
    }

    #[test]
    fn human_bytes_reads_well() {
        assert_eq!(human_bytes(12), "12 B");
        assert_eq!(human_bytes(2048), "2.0 KB");
        assert_eq!(human_bytes(100 * 1024 * 1024), "100.0 MB");
    }
}
