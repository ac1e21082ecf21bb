//! Text that is safe for a terminal. Everything oi-tui prints that came from a model, a
//! block's code, the session store or a server goes through here first, so that what is
//! shown is what runs and nothing a model writes can act on the person's terminal.
//!
//! - [`visible`] is for untrusted *text*: every C0 control character except newline is shown
//!   as its Unicode control picture (`ESC` as `␛`, `CR` as `␍`, `BEL` as `␇`), tab becomes
//!   four spaces, DEL becomes `␡`, and C1 controls and invisible or bidirectional characters
//!   (zero-width spaces and joiners, bidi embeddings, overrides and isolates, the BOM, the
//!   soft hyphen, Unicode tag characters, ...) are shown as `⟨U+202E⟩`. A carriage return
//!   therefore never hides the text before it. `\r\n` is a plain line break.
//! - [`json_safe`] makes a line of JSON safe to print without changing its value: DEL, C1
//!   and invisible characters (which JSON does not escape) become `\uXXXX` escapes.
//! - [`OutputFilter`] is for a block's *live output* in headless mode: it is the program's
//!   own output, so colours (SGR), cursor movement (progress bars need CR, cursor-up and
//!   erase-line), showing and hiding the cursor, and the plain controls (LF, CR, tab,
//!   backspace, BEL) pass. What could do more than paint the screen is dropped: every OSC
//!   (clipboard writes with OSC 52, window titles with OSC 0/2, hyperlinks, colour
//!   queries), DCS (DECRQSS, sixel, tmux passthrough), APC, PM and SOS string; CSI
//!   sequences that make the terminal answer into standard input (device status `n`,
//!   device attributes `c`, window reports and operations `t`, DECREQTPARM `x`, DECRQM
//!   `$p`) or that leave it changed after the block (scroll regions, modes other than
//!   showing and hiding the cursor, mouse and paste modes, keypad and charset switches,
//!   full reset); stray C1 bytes and UTF-8-encoded C1 controls. Sequences split across
//!   chunks are handled: the filter keeps a small state between calls.

use std::fmt::Write as _;

/// Whether `c` is invisible or changes the direction of the text around it, so that it
/// can make code read differently from how it runs.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{034f}'
            | '\u{061c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180b}'..='\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// Whether `c` is a C1 control character (U+0080 to U+009F).
fn is_c1(c: char) -> bool {
    ('\u{80}'..='\u{9f}').contains(&c)
}

/// The text with every control, invisible and bidirectional character shown visibly (see
/// the module notes). Newlines stay; tabs become four spaces.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => out.push('\n'),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\t' => out.push_str("    "),
            c if (c as u32) < 0x20 => out.push(char::from_u32(0x2400 + c as u32).unwrap_or('?')),
            '\u{7f}' => out.push('\u{2421}'),
            c if is_c1(c) || is_hidden(c) => {
                let _ = write!(out, "⟨U+{:04X}⟩", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// One line of text for a single-line place (a table cell, a search hit): [`visible`] with
/// line breaks shown as `␤`.
pub fn visible_line(text: &str) -> String {
    visible(text).replace('\n', "\u{2424}")
}

/// What a person should be told about a block before approving it: carriage returns, other
/// control characters, and invisible or bidirectional characters, each with the lines where
/// they are (1-based). Empty when the code holds nothing of the kind.
pub fn warnings(code: &str) -> Vec<String> {
    let mut carriage = Vec::new();
    let mut control = Vec::new();
    let mut hidden = Vec::new();
    for (i, line) in code.split('\n').enumerate() {
        let n = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.contains('\r') {
            carriage.push(n);
        }
        if line
            .chars()
            .any(|c| (c != '\t' && c != '\r' && (c as u32) < 0x20) || c == '\u{7f}' || is_c1(c))
        {
            control.push(n);
        }
        if line.chars().any(is_hidden) {
            hidden.push(n);
        }
    }
    let lines = |ns: &[usize]| {
        let word = if ns.len() == 1 { "line" } else { "lines" };
        let list: Vec<String> = ns.iter().map(ToString::to_string).collect();
        format!("{word} {}", list.join(", "))
    };
    let mut out = Vec::new();
    if !carriage.is_empty() {
        out.push(format!(
            "carriage returns (shown as ␍) that could hide text on {}",
            lines(&carriage)
        ));
    }
    if !control.is_empty() {
        out.push(format!(
            "control characters (shown as ␛, ␇, …) on {}",
            lines(&control)
        ));
    }
    if !hidden.is_empty() {
        out.push(format!(
            "invisible or bidirectional characters (shown as ⟨U+…⟩) on {}",
            lines(&hidden)
        ));
    }
    out
}

/// A JSON document with DEL, C1 controls and invisible characters written as `\uXXXX`
/// escapes: the same value, but nothing in it can act on a terminal or hide. Such
/// characters can only stand inside JSON strings, where the escape means the same.
pub fn json_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if c == '\u{7f}' || is_c1(c) || is_hidden(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Where the filter is inside an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Ground,
    /// After ESC.
    Escape,
    /// After ESC and an intermediate byte (charset designation and the like): dropped.
    EscapeIntermediate,
    /// Inside `ESC [`; the bytes so far are in `csi`.
    Csi,
    /// Inside an OSC, DCS, APC, PM or SOS string: dropped up to BEL or ST.
    Text,
    /// Inside such a string, after an ESC (`ESC \` ends it).
    TextEscape,
}

/// The longest CSI sequence kept; longer ones are dropped whole.
const MAX_CSI: usize = 64;

/// Filters a block's live output so that only what paints the screen reaches the
/// terminal (see the module notes). Feed it the chunks in order.
#[derive(Debug, Default)]
pub struct OutputFilter {
    state: State,
    csi: Vec<u8>,
    csi_too_long: bool,
    /// The bytes of an unfinished UTF-8 character, and how many more it needs.
    utf8: Vec<u8>,
    utf8_needs: usize,
}

impl OutputFilter {
    pub fn new() -> Self {
        Self::default()
    }

    /// The part of `data` that may reach the terminal.
    pub fn filter(&mut self, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(data.len());
        for &b in data {
            self.byte(b, &mut out);
        }
        out
    }

    fn byte(&mut self, b: u8, out: &mut Vec<u8>) {
        // CAN and SUB cancel any sequence, as in a terminal.
        if matches!(b, 0x18 | 0x1a) && self.state != State::Ground {
            self.state = State::Ground;
            return;
        }
        match self.state {
            State::Ground => self.ground(b, out),
            State::Escape => self.escape(b, out),
            State::EscapeIntermediate => match b {
                0x20..=0x2f => {}
                0x1b => self.state = State::Escape,
                _ => self.state = State::Ground,
            },
            State::Csi => self.csi_byte(b, out),
            State::Text => match b {
                0x07 => self.state = State::Ground,
                0x1b => self.state = State::TextEscape,
                _ => {}
            },
            State::TextEscape => {
                if b == b'\\' {
                    self.state = State::Ground;
                } else {
                    // A new sequence ends the string, as in a terminal.
                    self.state = State::Escape;
                    self.escape(b, out);
                }
            }
        }
    }

    fn ground(&mut self, b: u8, out: &mut Vec<u8>) {
        if self.utf8_needs > 0 {
            if (0x80..=0xbf).contains(&b) {
                self.utf8.push(b);
                self.utf8_needs -= 1;
                if self.utf8_needs == 0 {
                    // U+0080..U+009F, encoded: a C1 control some terminals obey.
                    let c1 = self.utf8[0] == 0xc2 && self.utf8[1] <= 0x9f;
                    if !c1 {
                        out.extend_from_slice(&self.utf8);
                    }
                    self.utf8.clear();
                }
                return;
            }
            // A broken character: dropped, and this byte read afresh.
            self.utf8.clear();
            self.utf8_needs = 0;
        }
        match b {
            0x1b => self.state = State::Escape,
            b'\n' | b'\r' | b'\t' | 0x07 | 0x08 | 0x0b | 0x0c => out.push(b),
            0x00..=0x1f | 0x7f => {}
            0x20..=0x7e => out.push(b),
            0xc2..=0xdf => self.start_utf8(b, 1),
            0xe0..=0xef => self.start_utf8(b, 2),
            0xf0..=0xf4 => self.start_utf8(b, 3),
            // Stray continuation bytes (raw 8-bit C1 among them) and bytes UTF-8 never uses.
            _ => {}
        }
    }

    fn start_utf8(&mut self, b: u8, needs: usize) {
        self.utf8.clear();
        self.utf8.push(b);
        self.utf8_needs = needs;
    }

    fn escape(&mut self, b: u8, out: &mut Vec<u8>) {
        self.state = State::Ground;
        match b {
            b'[' => {
                self.csi.clear();
                self.csi_too_long = false;
                self.state = State::Csi;
            }
            b']' | b'P' | b'_' | b'^' | b'X' => self.state = State::Text,
            // Save and restore the cursor, index, reverse index, next line.
            b'7' | b'8' | b'D' | b'E' | b'M' => out.extend_from_slice(&[0x1b, b]),
            0x1b => self.state = State::Escape,
            0x20..=0x2f => self.state = State::EscapeIntermediate,
            _ => {}
        }
    }

    fn csi_byte(&mut self, b: u8, out: &mut Vec<u8>) {
        match b {
            0x40..=0x7e => {
                self.state = State::Ground;
                if !self.csi_too_long && csi_allowed(&self.csi, b) {
                    out.extend_from_slice(b"\x1b[");
                    out.extend_from_slice(&self.csi);
                    out.push(b);
                }
                self.csi.clear();
            }
            0x20..=0x3f => {
                if self.csi.len() < MAX_CSI {
                    self.csi.push(b);
                } else {
                    self.csi_too_long = true;
                }
            }
            0x1b => {
                self.csi.clear();
                self.state = State::Escape;
            }
            // Other control bytes inside a sequence are dropped; the sequence goes on.
            _ => {}
        }
    }
}

/// Whether the CSI sequence with these parameter bytes and this final byte only paints:
/// colours, cursor movement, erasing and inserting, scrolling, showing or hiding the cursor.
fn csi_allowed(params: &[u8], last: u8) -> bool {
    if params.iter().any(|b| (0x20..=0x2f).contains(b)) {
        return false;
    }
    if let Some(first) = params.first()
        && matches!(first, b'?' | b'>' | b'<' | b'=')
    {
        return params == b"?25" && matches!(last, b'h' | b'l');
    }
    match last {
        b'T' => !params.contains(&b';'),
        b'm' | b'A' | b'B' | b'C' | b'D' | b'E' | b'F' | b'G' | b'H' | b'f' | b'd' | b'a'
        | b'e' | b'`' | b'I' | b'Z' | b'J' | b'K' | b'X' | b'P' | b'@' | b'L' | b'M' | b'S'
        | b's' | b'u' => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(
            visible("a\x1b[31mb\x07\tc\x7f"),
            "a\u{241b}[31mb\u{2407}    c\u{2421}"
        );
        assert_eq!(visible("ok\n"), "ok\n");
        assert_eq!(visible("a\r\nb"), "a\nb");
        assert_eq!(visible("x\u{85}y"), "x⟨U+0085⟩y");
    }

    #[test]
    fn a_carriage_return_hides_nothing() {
        let code = "import os; os.remove('canary')#\rprint('hello world')     ";
        let shown = visible(code);
        assert!(!shown.contains('\r'));
        assert!(shown.contains("os.remove('canary')#␍print('hello world')"));
        assert_eq!(
            warnings(code),
            vec!["carriage returns (shown as ␍) that could hide text on line 1"]
        );
    }

    #[test]
    fn invisible_and_bidi_characters_are_marked() {
        let code = "ok = 1\nif user != \"admin\u{202e} \u{2066}// check\u{2069} \u{2066}\":\n    x\u{200b}y\u{feff}";
        let shown = visible(code);
        for mark in ["⟨U+202E⟩", "⟨U+2066⟩", "⟨U+2069⟩", "⟨U+200B⟩", "⟨U+FEFF⟩"]
        {
            assert!(shown.contains(mark), "{mark} in {shown}");
        }
        assert!(!shown.chars().any(is_hidden));
        assert_eq!(
            warnings(code),
            vec!["invisible or bidirectional characters (shown as ⟨U+…⟩) on lines 2, 3"]
        );
        assert!(warnings("print('plain')\r\n").is_empty());
        assert_eq!(visible("tag\u{e0041}"), "tag⟨U+E0041⟩");
    }

    #[test]
    fn json_keeps_its_value_and_loses_raw_controls() {
        let value = serde_json::json!({"t": "a\u{9b}31m\u{7f}\u{202e}b\u{e0041}"});
        let line = json_safe(&value.to_string());
        assert!(
            !line.contains('\u{9b}') && !line.contains('\u{202e}'),
            "{line}"
        );
        assert!(!line.contains('\u{e0041}'), "{line}");
        let back: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(back, value);
    }

    fn run(chunks: &[&[u8]]) -> Vec<u8> {
        let mut filter = OutputFilter::new();
        chunks.iter().flat_map(|c| filter.filter(c)).collect()
    }

    #[test]
    fn colours_and_cursor_movement_pass() {
        let data: &[u8] = b"\x1b[1;31mred\x1b[0m 50%\r\x1b[2K\x1b[1A\x1b[?25l100%\x1b[?25h\n";
        assert_eq!(run(&[data]), data);
        assert_eq!(run(&["héllo ✓ 🙂\n".as_bytes()]), "héllo ✓ 🙂\n".as_bytes());
    }

    #[test]
    fn osc_dcs_and_replies_are_dropped_even_when_split() {
        let data: &[u8] = b"a\x1b]52;c;aGVsbG8=\x07b\x1b]0;pwned\x1b\\c\x1bP$qm\x1b\\d\x1b[6ne\x1b[cf\x1b[21tg\x1b[?1049h\x1b[?1000hh\x1b_apc\x1b\\i\x1bcj";
        assert_eq!(run(&[data]), b"abcdefghij");
        for split in 1..data.len() {
            let (x, y) = data.split_at(split);
            assert_eq!(run(&[x, y]), b"abcdefghij", "split at {split}");
        }
        let one_by_one: Vec<&[u8]> = data.chunks(1).collect();
        assert_eq!(run(&one_by_one), b"abcdefghij");
    }

    #[test]
    fn c1_controls_are_dropped_raw_or_encoded() {
        // 8-bit CSI and OSC, raw and UTF-8-encoded, and a character split across chunks.
        assert_eq!(run(&[b"a\x9b31mb\x9d0;x\x07c"]), b"a31mb0;x\x07c");
        assert_eq!(run(&[b"a\xc2\x9b", b"31mb"]), b"a31mb");
        assert_eq!(run(&[b"\xe2\x9c", b"\x93"]), "✓".as_bytes());
        // CAN ends a string; a long CSI is dropped whole.
        let long = format!("\x1b[{}m!", "1;".repeat(100));
        assert_eq!(run(&[long.as_bytes()]), b"!");
        assert_eq!(run(&[b"\x1b]0;t\x18ok"]), b"ok");
    }
}
