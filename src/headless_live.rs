//! A block's output in a headless transcript that goes to a file or a pipe: plain lines,
//! written as each one ends, so that a log of an unattended run (`oi-tui -y --task … > log`)
//! shows a block's output while it runs, and keeps it when oi-tui is killed.
//!
//! Colours and cursor movement are left out; a line rewritten with carriage returns (a
//! progress bar) is written once, as it ended. A terminal gets the raw output instead.

use crate::safe_text::OutputFilter;

/// Turns a block's terminal output into plain, complete lines.
#[derive(Default)]
pub struct PlainLines {
    /// What may reach a terminal first ([`OutputFilter`]: it knows every kind of escape
    /// sequence); what it lets through comes whole, so it is easy to leave out.
    filter: OutputFilter,
    line: Vec<u8>,
    /// A carriage return came: the next character rewrites the line, unless it ends it.
    cr: bool,
    /// Anything was written for the current block.
    pub wrote: bool,
}

impl PlainLines {
    /// The complete lines in `data` (with what came before), each ending with a newline.
    pub fn push(&mut self, data: &[u8]) -> String {
        let safe = self.filter.filter(data);
        let mut out = Vec::new();
        let mut bytes = safe.iter().copied();
        while let Some(b) = bytes.next() {
            match b {
                // A sequence the filter kept (colours, cursor movement): left out whole.
                0x1b => {
                    if bytes.next() == Some(b'[') {
                        for b in bytes.by_ref() {
                            if (0x40..=0x7e).contains(&b) {
                                break;
                            }
                        }
                    }
                }
                b'\n' => {
                    out.append(&mut self.line);
                    out.push(b'\n');
                    self.cr = false;
                }
                b'\r' => self.cr = true,
                b'\t' => self.text(b),
                b if b < 0x20 || b == 0x7f => {}
                b => self.text(b),
            }
        }
        if !out.is_empty() {
            self.wrote = true;
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn text(&mut self, b: u8) {
        if self.cr {
            self.line.clear();
            self.cr = false;
        }
        self.line.push(b);
    }

    /// What is left when the block ends (a last line without a newline), and a fresh start
    /// for the next block. `wrote` says whether anything was written for this one.
    pub fn finish(&mut self) -> (String, bool) {
        let rest = String::from_utf8_lossy(&self.line).into_owned();
        let wrote = self.wrote || !rest.is_empty();
        *self = PlainLines::default();
        (rest, wrote)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_come_plain_as_they_end() {
        let mut plain = PlainLines::default();
        assert_eq!(
            plain.push(b"\x1b[32mgreen\x1b[0m line\r\nhalf"),
            "green line\n"
        );
        assert_eq!(plain.push(b" done\r\n"), "half done\n");
        // A progress bar: the line as it ended.
        assert_eq!(plain.push(b"10%\r50%\r100%\r\n"), "100%\n");
        // A title sequence and a bell are left out.
        assert_eq!(plain.push(b"\x1b]0;title\x07ok\x08\n"), "ok\n");
        // Device control strings and the like are left out too, even split across chunks.
        assert_eq!(plain.push(b"\x1bPq#0;2;0;0;0"), "");
        assert_eq!(plain.push(b"~-\x1b\\sixel\n"), "sixel\n");
        assert_eq!(plain.push(b"last"), "");
        assert_eq!(plain.finish(), ("last".to_string(), true));
        assert_eq!(plain.finish(), (String::new(), false));
    }
}
