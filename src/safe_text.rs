//! Text that is safe for a terminal. Everything oi-tui prints that came from a model, a
//! block's code, the session store or a server goes through here first, so that what is
//! shown is what runs and nothing a model writes can act on the person's terminal.
//!
//! - [`visible`] is for untrusted *text*: every C0 control character except newline is shown
//!   as its Unicode control picture (`ESC` as `␛`, `CR` as `␍`, `BEL` as `␇`), tab becomes
//!   four spaces, DEL becomes `␡`, and C1 controls and every character a terminal draws as
//!   nothing or that changes how the text around it reads (Unicode's default-ignorable
//!   code points: variation selectors, tag characters, bidi marks, embeddings, overrides and
//!   isolates, zero-width spaces and joiners, the BOM, the soft hyphen, ...; and the line
//!   and paragraph separators U+2028 and U+2029) are shown as `⟨U+202E⟩`. A carriage return
//!   therefore never hides the text before it. `\r\n` is a plain line break.
//! - [`marks`] finds those characters in a block and names their kind ([`Hidden`]);
//!   [`warnings`] says which kinds a block holds and on which lines, and the policy gives
//!   such a block a finding, so that it always asks.
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

/// A kind of character that a terminal draws as nothing or that changes how the text
/// around it reads: what a person is warned about, and what gives a block's verdict a
/// finding (so that it always asks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hidden {
    /// A carriage return not followed by a line feed: on a terminal the text after it
    /// overwrites the text before it; Python, JavaScript and R read it as a line break.
    CarriageReturn,
    /// Another C0 control character (but tab and newline), DEL, or a C1 control.
    Control,
    /// U+180B–180D and U+180F, U+FE00–FE0F, U+E0100–E01EF: drawn as nothing, so that two
    /// names that look the same differ.
    VariationSelector,
    /// U+E0001 and U+E0020–E007F.
    Tag,
    /// Bidirectional marks, embeddings, overrides and isolates: they reorder the text.
    Bidi,
    /// Zero-width space, joiners, word joiner and the byte order mark.
    ZeroWidth,
    /// U+2028 and U+2029, which JavaScript reads as line breaks.
    Separator,
    /// The other default-ignorable code points (the soft hyphen, Hangul fillers, invisible
    /// operators, musical formatting, ...) and the interlinear annotation marks.
    Invisible,
}

impl Hidden {
    /// The kind of `c`, if it is one (a carriage return counts even when a line feed
    /// follows it: [`marks`] leaves out `\r\n`).
    pub fn of(c: char) -> Option<Hidden> {
        Some(match c {
            '\r' => Hidden::CarriageReturn,
            '\t' | '\n' => return None,
            c if (c as u32) < 0x20 || c == '\u{7f}' || is_c1(c) => Hidden::Control,
            '\u{180b}'..='\u{180d}'
            | '\u{180f}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{e0100}'..='\u{e01ef}' => Hidden::VariationSelector,
            '\u{e0001}' | '\u{e0020}'..='\u{e007f}' => Hidden::Tag,
            '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' => Hidden::Bidi,
            '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}' => Hidden::ZeroWidth,
            '\u{2028}' | '\u{2029}' => Hidden::Separator,
            // The rest of Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties),
            // and the interlinear annotation marks U+FFF9–FFFB.
            '\u{00ad}'
            | '\u{034f}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{17b4}'
            | '\u{17b5}'
            | '\u{180e}'
            | '\u{2061}'..='\u{2065}'
            | '\u{206a}'..='\u{206f}'
            | '\u{3164}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}' => Hidden::Invisible,
            _ => return None,
        })
    }

    /// What a warning calls characters of this kind, and how they are shown.
    pub fn name(self) -> &'static str {
        match self {
            Hidden::CarriageReturn => "carriage returns (shown as ␍) that could hide text",
            Hidden::Control => "control characters (shown as ␛, ␇, …)",
            Hidden::VariationSelector => "variation selectors, drawn as nothing (shown as ⟨U+…⟩)",
            Hidden::Tag => "tag characters, drawn as nothing (shown as ⟨U+…⟩)",
            Hidden::Bidi => "bidirectional controls that reorder text (shown as ⟨U+…⟩)",
            Hidden::ZeroWidth => "zero-width characters (shown as ⟨U+…⟩)",
            Hidden::Separator => {
                "line or paragraph separators that JavaScript reads as line breaks (shown as ⟨U+…⟩)"
            }
            Hidden::Invisible => "invisible characters (shown as ⟨U+…⟩)",
        }
    }
}

/// Whether `c` is drawn as nothing or changes the direction of the text around it, so
/// that it can make code read differently from how it runs: every default-ignorable code
/// point, the line and paragraph separators and the interlinear annotation marks (control
/// characters are not counted here; [`visible`] shows them as control pictures).
pub fn is_hidden(c: char) -> bool {
    (c as u32) >= 0xa0 && Hidden::of(c).is_some()
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
    let mut prev = None;
    while let Some(c) = chars.next() {
        let before = prev.replace(c);
        match c {
            c if presentation(before, c) => out.push(c),
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

/// Whether `c` is the text or emoji presentation selector (U+FE0E, U+FE0F) right after a
/// symbol that has both presentations (`⚠️`, `❤️`): it changes how the symbol is drawn, not
/// what the text says, and no name can hold such a symbol, so it is shown as it is. After a
/// letter, a digit or anything else it is a hidden character like the other selectors.
fn presentation(before: Option<char>, c: char) -> bool {
    matches!(c, '\u{fe0e}' | '\u{fe0f}')
        && before.is_some_and(|b| {
            (b as u32) >= 0x2000
                && !b.is_alphanumeric()
                && !b.is_whitespace()
                && Hidden::of(b).is_none()
                && !matches!(b, '\u{fe00}'..='\u{fe0f}')
        })
}

/// One line of text for a single-line place (a table cell, a search hit): [`visible`] with
/// line breaks shown as `␤`.
pub fn visible_line(text: &str) -> String {
    visible(text).replace('\n', "\u{2424}")
}

/// One character of code that hides text or changes how it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// 1-based line (lines end at `\n`).
    pub line: usize,
    pub c: char,
    pub kind: Hidden,
}

/// Every character of `code` that a terminal draws as nothing or that changes how the
/// text reads (see [`Hidden`]), in order. The carriage return of a `\r\n` is a plain line
/// break and not among them.
pub fn marks(code: &str) -> Vec<Mark> {
    let mut out = Vec::new();
    // Plain ASCII text (the usual case) holds none: one pass over the bytes says so.
    // (In blocks of 64 bytes with no early exit inside a block, which the compiler turns
    // into wide compares; the same test on every byte.)
    let plain = |b: u8| (0x20..0x7f).contains(&b) | (b == b'\n') | (b == b'\t');
    if code
        .as_bytes()
        .chunks(64)
        .all(|block| block.iter().fold(true, |ok, &b| ok & plain(b)))
    {
        return out;
    }
    let mut line = 1;
    let mut chars = code.chars().peekable();
    let mut prev = None;
    while let Some(c) = chars.next() {
        if presentation(prev.replace(c), c) {
            continue;
        }
        if c == '\n' {
            line += 1;
            continue;
        }
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if let Some(kind) = Hidden::of(c) {
            out.push(Mark { line, c, kind });
        }
    }
    out
}

/// What a person should be told about a block before approving it: for each kind of
/// character that hides or reorders text (carriage returns, other control characters,
/// variation selectors, tags, bidirectional controls, zero-width, separators, other
/// invisible characters), the lines where they are (1-based). Empty when the code holds
/// nothing of the kind.
pub fn warnings(code: &str) -> Vec<String> {
    let mut kinds: Vec<(Hidden, Vec<usize>)> = Vec::new();
    for mark in marks(code) {
        match kinds.iter_mut().find(|(k, _)| *k == mark.kind) {
            Some((_, lines)) => {
                if lines.last() != Some(&mark.line) {
                    lines.push(mark.line);
                }
            }
            None => kinds.push((mark.kind, vec![mark.line])),
        }
    }
    kinds.sort_by_key(|(k, _)| *k);
    kinds
        .iter()
        .map(|(kind, ns)| format!("{} on {}", kind.name(), line_list(ns)))
        .collect()
}

/// `line 3` or `lines 2, 5, 9`.
pub fn line_list(ns: &[usize]) -> String {
    let word = if ns.len() == 1 { "line" } else { "lines" };
    let list: Vec<String> = ns.iter().map(ToString::to_string).collect();
    format!("{word} {}", list.join(", "))
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
            vec![
                "bidirectional controls that reorder text (shown as ⟨U+…⟩) on line 2",
                "zero-width characters (shown as ⟨U+…⟩) on line 3"
            ]
        );
        assert!(warnings("print('plain')\r\n").is_empty());
        assert_eq!(visible("tag\u{e0041}"), "tag⟨U+E0041⟩");
    }

    /// Every character of `chars` is hidden, shown as its code point, warned about on
    /// its line and escaped in JSON.
    fn assert_marked(family: &str, kind: Hidden, chars: &[char]) {
        for &c in chars {
            let mark = format!("⟨U+{:04X}⟩", c as u32);
            let code = format!("ok = 1\ntarget{c} = 'keep.txt'");
            assert!(is_hidden(c), "{family}: U+{:04X}", c as u32);
            let shown = visible(&code);
            assert!(
                shown.contains(&format!("target{mark} = ")),
                "{family}: {shown}"
            );
            assert!(!shown.contains(c), "{family}: {shown}");
            assert_eq!(marks(&code), vec![Mark { line: 2, c, kind }], "{family}");
            assert_eq!(
                warnings(&code),
                vec![format!("{} on line 2", kind.name())],
                "{family}: U+{:04X}",
                c as u32
            );
            assert_eq!(
                visible_line(&code),
                format!("ok = 1␤target{mark} = 'keep.txt'")
            );
            let value = serde_json::json!({ "code": code });
            let line = json_safe(&value.to_string());
            assert!(!line.contains(c), "{family}: {line}");
            let back: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(back, value, "{family}");
        }
    }

    #[test]
    fn variation_selectors_are_marked() {
        assert_marked(
            "variation selectors",
            Hidden::VariationSelector,
            &['\u{fe00}', '\u{fe01}', '\u{fe0e}', '\u{fe0f}'],
        );
        assert_marked(
            "supplementary variation selectors",
            Hidden::VariationSelector,
            &['\u{e0100}', '\u{e0150}', '\u{e01ef}'],
        );
        assert_marked(
            "Mongolian variation selectors",
            Hidden::VariationSelector,
            &['\u{180b}', '\u{180f}'],
        );
    }

    /// The emoji and text presentation selectors after a symbol draw it one way or the
    /// other and are shown as they are; after a letter, a digit or another selector they
    /// hide like any selector.
    #[test]
    fn presentation_selectors_after_a_symbol_are_text() {
        for text in [
            "⚠\u{fe0f} careful",
            "print('❤\u{fe0f}')",
            "\u{2714}\u{fe0e} done",
        ] {
            assert_eq!(visible(text), text.replace('\t', "    "));
            assert!(marks(text).is_empty(), "{text}");
        }
        for text in [
            "target\u{fe0f} = 1",
            "x1\u{fe0f}",
            "⚠\u{fe0f}\u{fe0f}",
            "\u{fe0f}",
        ] {
            assert!(visible(text).contains("⟨U+FE0F⟩"), "{text}");
            assert_eq!(marks(text).len(), 1, "{text}");
        }
    }

    #[test]
    fn tag_characters_are_marked() {
        assert_marked(
            "tags",
            Hidden::Tag,
            &['\u{e0001}', '\u{e0020}', '\u{e0041}', '\u{e007f}'],
        );
    }

    #[test]
    fn bidi_controls_are_marked() {
        assert_marked(
            "bidi",
            Hidden::Bidi,
            &[
                '\u{061c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
                '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
            ],
        );
    }

    #[test]
    fn zero_width_characters_are_marked() {
        assert_marked(
            "zero-width",
            Hidden::ZeroWidth,
            &['\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}'],
        );
    }

    #[test]
    fn the_other_default_ignorable_code_points_are_marked() {
        assert_marked(
            "default ignorables",
            Hidden::Invisible,
            &[
                '\u{00ad}',
                '\u{034f}',
                '\u{115f}',
                '\u{1160}',
                '\u{17b4}',
                '\u{17b5}',
                '\u{180e}',
                '\u{2061}',
                '\u{2064}',
                '\u{2065}',
                '\u{206a}',
                '\u{206f}',
                '\u{3164}',
                '\u{ffa0}',
                '\u{fff0}',
                '\u{fff8}',
                '\u{1bca0}',
                '\u{1bca3}',
                '\u{1d173}',
                '\u{1d17a}',
                '\u{e0000}',
                '\u{e0080}',
                '\u{e01f0}',
                '\u{e0fff}',
            ],
        );
        // Each range of the definition, end to end, and nothing just outside it.
        let ranges: [(u32, u32); 17] = [
            (0x00ad, 0x00ad),
            (0x034f, 0x034f),
            (0x061c, 0x061c),
            (0x115f, 0x1160),
            (0x17b4, 0x17b5),
            (0x180b, 0x180f),
            (0x200b, 0x200f),
            (0x202a, 0x202e),
            (0x2060, 0x206f),
            (0x3164, 0x3164),
            (0xfe00, 0xfe0f),
            (0xfeff, 0xfeff),
            (0xffa0, 0xffa0),
            (0xfff0, 0xfff8),
            (0x1bca0, 0x1bca3),
            (0x1d173, 0x1d17a),
            (0xe0000, 0xe0fff),
        ];
        for (from, to) in ranges {
            for c in (from..=to).filter_map(char::from_u32) {
                assert!(is_hidden(c), "U+{:04X}", c as u32);
            }
        }
        for c in [
            'a',
            'é',
            '\u{034e}',
            '\u{2010}',
            '\u{fe10}',
            '\u{1d17b}',
            '\u{e1000}',
        ] {
            assert!(!is_hidden(c), "U+{:04X}", c as u32);
            assert_eq!(visible(&c.to_string()), c.to_string());
        }
    }

    #[test]
    fn a_lone_carriage_return_is_marked_and_warned_about() {
        let code = "# note\rimport os; os.system(\"rm x\")\r\nprint(1)\r\n";
        let shown = visible(code);
        assert_eq!(shown, "# note␍import os; os.system(\"rm x\")\nprint(1)\n");
        assert_eq!(
            marks(code),
            vec![Mark {
                line: 1,
                c: '\r',
                kind: Hidden::CarriageReturn
            }]
        );
        assert_eq!(
            warnings(code),
            vec!["carriage returns (shown as ␍) that could hide text on line 1"]
        );
        // A carriage return at the very end is not part of a line break either.
        assert_eq!(marks("ls\r").len(), 1);
        assert!(marks("ls\r\n\tpwd\r\n").is_empty());
        let line = json_safe(&serde_json::json!({ "c": code }).to_string());
        assert!(line.contains("\\r") && !line.contains('\r'), "{line}");
    }

    #[test]
    fn line_and_paragraph_separators_are_marked() {
        assert_marked("line separator", Hidden::Separator, &['\u{2028}']);
        assert_marked("paragraph separator", Hidden::Separator, &['\u{2029}']);
        assert_marked(
            "interlinear annotation",
            Hidden::Invisible,
            &['\u{fff9}', '\u{fffb}'],
        );
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
