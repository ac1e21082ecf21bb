//! The terminal pane as one component: the VT emulator the running blocks draw into, the raw
//! bytes of each block's output, the scroll position, a search (`terminal_search.rs`), its
//! keys and its drawing.
//!
//! Each block's bytes are kept as they came (bounded: at least `BLOCK_LINES` lines of every
//! block, and `TOTAL_BYTES` over all of them, the oldest blocks' heads going first), so that
//! a new size is never a lossy reflow of the old screen: the emulator is rebuilt at the new
//! size by replaying what fills its scrollback. A full-screen program that is active during
//! a resize gets a blank alternate screen to redraw on (it is sent SIGWINCH), never a replay
//! of frames drawn for the old size.
//!
//! Output is appended to the log at once and fed to the emulator when the pane is looked
//! at (a frame, a key): a burst bigger than the scrollback skips the plain text that would
//! scroll out of reach anyway. The emulator keeps a light scrollback (`SCROLLBACK`) while
//! the person looks at the bottom, and is rebuilt with a deep one (`DEEP_SCROLLBACK`) when
//! they scroll past it or search.

use std::cell::{Ref, RefCell};
use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use tui_term::vt100;
use tui_term::widget::PseudoTerminal;

use super::theme::Theme;
use crate::protocol::BlockId;
use search::Search;

#[path = "terminal_search.rs"]
mod search;

/// Rows the emulator keeps above its screen while the person looks at the bottom: little,
/// so that a flood of output stays cheap.
pub const SCROLLBACK: usize = 2_000;
/// Rows it keeps once the person scrolls past those, or searches: rebuilt from the kept
/// output, and back to `SCROLLBACK` at the bottom again.
pub const DEEP_SCROLLBACK: usize = 10_000;
/// Lines of each block's output that are kept at least (more while it streams).
pub const BLOCK_LINES: usize = 10_000;
/// The most raw output kept over all blocks; past it the oldest blocks lose their heads.
pub const TOTAL_BYTES: usize = 32 * 1024 * 1024;

/// What a key did in the terminal pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalKey {
    /// Send these bytes to the running program.
    Send(Vec<u8>),
    /// The person leaves the pane.
    Leave,
    /// The pane used the key (scrolling, searching).
    Consumed,
    /// Not a key for the pane.
    Ignored,
}

/// One block's output as it came, with what was dropped from its head.
#[derive(Debug)]
struct BlockLog {
    /// The separator's text, `python #3`; empty for output before any block.
    title: String,
    id: Option<BlockId>,
    bytes: Vec<u8>,
    /// Newlines in `bytes`.
    lines: usize,
    /// Lines dropped from the head to bound the memory.
    dropped: usize,
}

/// How much output is kept.
#[derive(Debug, Clone, Copy)]
struct Limits {
    block_lines: usize,
    total_bytes: usize,
}

/// The emulator and how much of the last block's log it has seen.
struct Emulator {
    parser: vt100::Parser,
    /// Bytes of the last block's log fed to the parser.
    fed: usize,
    /// The parser's scrollback rows: `SCROLLBACK` or `DEEP_SCROLLBACK`.
    depth: usize,
}

pub struct TerminalPane {
    /// Fed when it is looked at, not for each chunk: a burst of output larger than the
    /// scrollback is mostly skipped (see `feed`).
    emulator: RefCell<Emulator>,
    limits: Limits,
    blocks: VecDeque<BlockLog>,
    /// Bytes in all the blocks' logs.
    total: usize,
    /// Nothing was written to the emulator yet.
    fresh: bool,
    search: Search,
    /// The running block waits for keyboard input.
    waiting: bool,
    /// How far up the person scrolled; the emulator's own offset grows past it as output
    /// arrives (the view stays put), and the difference is what arrived meanwhile.
    chosen: std::cell::Cell<usize>,
}

impl TerminalPane {
    pub fn new(rows: u16, cols: u16) -> TerminalPane {
        TerminalPane {
            emulator: RefCell::new(Emulator {
                parser: vt100::Parser::new(rows.max(1), cols.max(1), SCROLLBACK),
                fed: 0,
                depth: SCROLLBACK,
            }),
            limits: Limits {
                block_lines: BLOCK_LINES,
                total_bytes: TOTAL_BYTES,
            },
            blocks: VecDeque::new(),
            chosen: std::cell::Cell::new(0),
            total: 0,
            fresh: true,
            search: Search::default(),
            waiting: false,
        }
    }

    /// The emulator's screen (with the scroll position applied).
    pub fn screen(&self) -> Ref<'_, vt100::Screen> {
        Ref::map(self.view(), vt100::Parser::screen)
    }

    /// The emulator, up to date, to change.
    fn em(&mut self) -> &mut vt100::Parser {
        let emulator = self.emulator.get_mut();
        feed(emulator, &self.blocks);
        &mut emulator.parser
    }

    /// The emulator, up to date, to look at.
    fn view(&self) -> Ref<'_, vt100::Parser> {
        if let Ok(mut emulator) = self.emulator.try_borrow_mut() {
            feed(&mut emulator, &self.blocks);
        }
        Ref::map(self.emulator.borrow(), |e| &e.parser)
    }

    /// A block starts: its separator line, and a new log.
    pub fn begin_block(&mut self, id: BlockId, language: &str) {
        let title = format!("{language} #{id}");
        let fresh = self.fresh;
        let parser = self.em();
        let separator = separator(parser, fresh, &title, 0);
        parser.process(&separator);
        self.fresh = false;
        self.emulator.get_mut().fed = 0;
        self.blocks.push_back(BlockLog {
            title,
            id: Some(id),
            bytes: Vec::new(),
            lines: 0,
            dropped: 0,
        });
        self.waiting = false;
        self.scroll_to_bottom();
    }

    /// Output of the running block (or of a kernel between blocks).
    pub fn process(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.fresh = false;
        if self.blocks.is_empty() {
            self.emulator.get_mut().fed = 0;
            self.blocks.push_back(BlockLog {
                title: String::new(),
                id: None,
                bytes: Vec::new(),
                lines: 0,
                dropped: 0,
            });
        }
        let Some(block) = self.blocks.back_mut() else {
            return;
        };
        block.bytes.extend_from_slice(bytes);
        block.lines += memchr::memchr_iter(b'\n', bytes).count();
        self.total += bytes.len();
        // Dropping half at a time keeps the cost per byte constant. The emulator sees what
        // is dropped first.
        let limits = self.limits;
        let too_long = block.lines > 2 * limits.block_lines;
        let too_much = self.total > limits.total_bytes;
        if too_long || too_much {
            feed(self.emulator.get_mut(), &self.blocks);
        }
        if too_long && let Some(block) = self.blocks.back_mut() {
            let cut = trim_lines(block, limits.block_lines);
            self.total -= cut;
            let emulator = self.emulator.get_mut();
            emulator.fed = emulator.fed.saturating_sub(cut);
        }
        if too_much {
            self.trim_total(limits.total_bytes / 4 * 3);
        }
    }

    /// The running block ended.
    pub fn end_block(&mut self) {
        self.waiting = false;
        if !self.search.query.is_empty() {
            self.find();
        }
    }

    /// Whether the running block waits for keyboard input.
    pub fn waiting(&self) -> bool {
        self.waiting
    }

    pub fn set_waiting(&mut self, waiting: bool) {
        self.waiting = waiting;
    }

    /// Forgets everything (a new conversation).
    pub fn clear(&mut self) {
        let (rows, cols) = self.em().screen().size();
        let limits = self.limits;
        *self = TerminalPane::new(rows, cols);
        self.limits = limits;
    }

    /// The pane has a new inner size: the emulator is rebuilt at it from the kept output.
    /// Returns whether the size changed (and so the programs' terminals must follow).
    pub fn resize(&mut self, rows: u16, cols: u16) -> bool {
        if rows == 0 || cols == 0 || self.em().screen().size() == (rows, cols) {
            return false;
        }
        let depth = self.emulator.get_mut().depth;
        self.rebuild(rows, cols, depth);
        if !self.search.query.is_empty() {
            self.find();
        }
        self.mark_chosen();
        true
    }

    /// The view the person chose is where it is now.
    fn mark_chosen(&self) {
        self.chosen.set(self.scroll());
    }

    /// Lines that arrived below the view since the person scrolled up (for `↓ N new`).
    pub fn new_lines(&self) -> usize {
        let scroll = self.scroll();
        if scroll == 0 {
            0
        } else {
            scroll.saturating_sub(self.chosen.get())
        }
    }

    /// Replaces the emulator with one of this size and scrollback, at the same distance
    /// from the bottom.
    fn rebuild(&mut self, rows: u16, cols: u16, depth: usize) {
        let scroll = self.em().screen().scrollback();
        let parser = self.replay(rows, cols, depth);
        let fed = self.blocks.back().map_or(0, |b| b.bytes.len());
        *self.emulator.get_mut() = Emulator { parser, fed, depth };
        self.em().screen_mut().set_scrollback(scroll);
    }

    /// The deep scrollback (when `deep`) or the light one, rebuilt if it is not in use.
    fn use_depth(&mut self, deep: bool) {
        let depth = if deep { DEEP_SCROLLBACK } else { SCROLLBACK };
        if self.emulator.get_mut().depth != depth {
            let (rows, cols) = self.em().screen().size();
            self.rebuild(rows, cols, depth);
        }
    }

    /// A new emulator of this size that has seen as much of the kept output as it can show.
    fn replay(&self, rows: u16, cols: u16, depth: usize) -> vt100::Parser {
        let mut parser = vt100::Parser::new(rows, cols, depth);
        // From the end back, the blocks (and the part of the first) that fill the scrollback.
        let mut budget = depth + usize::from(rows);
        let mut first = 0;
        let mut skip = 0;
        for (i, block) in self.blocks.iter().enumerate().rev() {
            first = i;
            if block.lines + 2 < budget {
                budget -= block.lines + 2;
                continue;
            }
            let drop = block.lines.saturating_sub(budget.saturating_sub(2));
            if drop > 0 {
                skip = nth_line_start(&block.bytes, drop);
            }
            break;
        }
        let mut fresh = true;
        for (i, block) in self.blocks.iter().enumerate().skip(first) {
            let (from, dropped) = if i == first && skip > 0 {
                let lines = memchr::memchr_iter(b'\n', &block.bytes[..skip]).count();
                (skip, block.dropped + lines)
            } else {
                (0, block.dropped)
            };
            if !block.title.is_empty() {
                let separator = separator(&parser, fresh, &block.title, dropped);
                parser.process(&separator);
            } else if dropped > 0 {
                parser.process(dropped_note(dropped).as_bytes());
            }
            parser.process(&block.bytes[from..]);
            fresh = false;
        }
        if parser.screen().alternate_screen() {
            // Frames drawn for the old size would be garbage at the new one; the program
            // redraws on the blank screen when SIGWINCH reaches it.
            parser.process(b"\x1b[0m\x1b[2J\x1b[H");
        }
        parser
    }

    /// Drops the oldest output until at most `target` bytes are kept.
    fn trim_total(&mut self, target: usize) {
        let last = self.blocks.len().checked_sub(1);
        for (index, block) in self.blocks.iter_mut().enumerate() {
            if self.total <= target {
                break;
            }
            let want = (self.total - target).min(block.bytes.len());
            // Cut after a newline when there is one near, so that no line starts halfway.
            let cut = match memchr::memchr(b'\n', &block.bytes[want.saturating_sub(1)..]) {
                Some(at) if at < 4096 => want.saturating_sub(1) + at + 1,
                _ => want,
            }
            .min(block.bytes.len());
            let lines = memchr::memchr_iter(b'\n', &block.bytes[..cut]).count();
            block.bytes.drain(..cut);
            if last == Some(index) {
                let emulator = self.emulator.get_mut();
                emulator.fed = emulator.fed.saturating_sub(cut);
            }
            block.lines -= lines;
            block.dropped += lines.max(1);
            self.total -= cut;
        }
    }

    /// Lines scrolled up from the bottom.
    pub fn scroll(&self) -> usize {
        self.view().screen().scrollback()
    }

    /// Scrolls up (positive) or down (negative) by so many rows.
    pub fn scroll_by(&mut self, rows: isize) {
        let now = self.scroll();
        let next = now.saturating_add_signed(rows);
        self.em().screen_mut().set_scrollback(next);
        if self.scroll() < next {
            // The top of the light scrollback: the deep one may hold more.
            self.use_depth(true);
            self.em().screen_mut().set_scrollback(next);
        } else if next == 0 {
            self.scroll_to_bottom();
        }
        self.mark_chosen();
    }

    pub fn scroll_to_bottom(&mut self) {
        self.em().screen_mut().set_scrollback(0);
        if self.search.query.is_empty() {
            self.use_depth(false);
        }
        self.mark_chosen();
    }

    pub fn scroll_to_top(&mut self) {
        self.use_depth(true);
        self.em().screen_mut().set_scrollback(usize::MAX);
        self.mark_chosen();
    }

    /// The text on the screen now (what the pane shows).
    pub fn contents(&self) -> String {
        self.view().screen().contents()
    }

    /// The last block whose output the pane shows.
    pub fn last_block(&self) -> Option<BlockId> {
        self.blocks.back().and_then(|b| b.id)
    }

    /// The kept output of the last block that ran (as `block_output`).
    pub fn last_block_output(&self) -> Option<String> {
        let id = self.blocks.iter().rev().find_map(|b| b.id)?;
        self.block_output(id)
    }

    /// A block's kept output as plain text (escape sequences applied, as a terminal shows
    /// them line by line), or None when the block is not known.
    pub fn block_output(&self, id: BlockId) -> Option<String> {
        let block = self.blocks.iter().find(|b| b.id == Some(id))?;
        let mut capture = crate::exec::TextCapture::new(usize::MAX / 4);
        capture.feed(&block.bytes);
        let mut text = capture.finish().text;
        if block.dropped > 0 {
            text.insert_str(0, &format!("{}\n", dropped_text(block.dropped)));
        }
        Some(text)
    }

    /// The keys of the pane. While a program runs every key goes to it (Shift-PgUp/PgDn
    /// still scroll); otherwise the keys scroll and search.
    pub fn handle_key(&mut self, key: &KeyEvent, running: bool) -> TerminalKey {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if self.search.editing {
            match key.code {
                KeyCode::Esc => {
                    self.search = Search::default();
                }
                KeyCode::Enter => {
                    self.search.editing = false;
                    self.search.current = None;
                    self.step(false);
                }
                KeyCode::Backspace => {
                    self.search.query.pop();
                    self.find();
                }
                KeyCode::Char(c) if !ctrl => {
                    self.search.query.push(c);
                    self.search.current = None;
                    self.find();
                    if let Some(last) = self.search.matches.len().checked_sub(1) {
                        self.search.current = Some(last);
                        self.show_match(last);
                    }
                }
                _ => {}
            }
            self.mark_chosen();
            return TerminalKey::Consumed;
        }
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let rows = self.em().screen().size().0 as isize;
        match key.code {
            KeyCode::PageUp if shift || !running => {
                self.scroll_by(rows.max(2) - 1);
                return TerminalKey::Consumed;
            }
            KeyCode::PageDown if shift || !running => {
                self.scroll_by(-(rows.max(2) - 1));
                return TerminalKey::Consumed;
            }
            _ => {}
        }
        if running {
            return match key_bytes(key) {
                Some(data) => {
                    // Typing means looking at the bottom.
                    self.scroll_to_bottom();
                    TerminalKey::Send(data)
                }
                None => TerminalKey::Ignored,
            };
        }
        match key.code {
            KeyCode::Char('/') => {
                self.search = Search {
                    editing: true,
                    ..Search::default()
                }
            }
            KeyCode::Char('f') if ctrl => {
                self.search = Search {
                    editing: true,
                    ..Search::default()
                }
            }
            KeyCode::Char('n') if !self.search.query.is_empty() => self.step(false),
            KeyCode::Char('N') if !self.search.query.is_empty() => self.step(true),
            KeyCode::Enter if !self.search.query.is_empty() => self.step(false),
            KeyCode::Esc if !self.search.query.is_empty() => self.search = Search::default(),
            KeyCode::Esc => return TerminalKey::Leave,
            KeyCode::Up | KeyCode::Char('k') => self.scroll_by(1),
            KeyCode::Down | KeyCode::Char('j') => self.scroll_by(-1),
            KeyCode::Home | KeyCode::Char('g') => self.scroll_to_top(),
            KeyCode::End | KeyCode::Char('G') => self.scroll_to_bottom(),
            _ => return TerminalKey::Ignored,
        }
        self.mark_chosen();
        TerminalKey::Consumed
    }

    /// The keys that work in the pane now, as (key, what it does).
    pub fn hints(&self, running: bool) -> Vec<(String, &'static str)> {
        let fixed = |s: &str| s.to_string();
        if self.search.editing {
            return vec![
                (fixed("Enter"), "find"),
                (fixed("Esc"), "cancel the search"),
            ];
        }
        if running {
            return vec![
                (fixed("keys"), "go to the program"),
                (fixed("Shift-PgUp/PgDn"), "scroll"),
            ];
        }
        let mut hints = vec![(fixed("/"), "search"), (fixed("PgUp/PgDn"), "scroll")];
        if !self.search.query.is_empty() {
            hints.insert(1, (fixed("n / N"), "older / newer match"));
        }
        hints
    }

    /// Draws the pane: the border with `title`, the emulator, the search's matches.
    pub fn render(
        &self,
        frame: &mut Frame,
        area: Rect,
        theme: &Theme,
        focused: bool,
        title: &str,
        show_cursor: bool,
    ) {
        let mut title = title.to_string();
        if let Some(status) = self.search_status() {
            if status.is_empty() {
                title.push_str(" · search");
            } else {
                title.push_str(&format!(" · \"{}\" {status}", self.search.query));
            }
        }
        if self.scroll() > 0 {
            title.push_str(&format!(" · scrolled {} lines", self.scroll()));
            let new = self.new_lines();
            if new > 0 {
                title.push_str(&format!(" · ↓ {new} new"));
            }
        }
        let mut block = super::view::pane_frame(theme, format!(" {} ", title.trim()), focused);
        if self.search.editing {
            block = block.title_bottom(Line::from(vec![
                Span::styled(" /", theme.key),
                Span::styled(format!("{}▏", self.search.query), theme.text),
                Span::styled(" Enter finds · Esc cancels ", theme.muted),
            ]));
        }
        let inner = block.inner(area);
        let mut cursor = tui_term::widget::Cursor::default();
        let parser = self.view();
        if !show_cursor || parser.screen().hide_cursor() || parser.screen().scrollback() > 0 {
            cursor.hide();
        }
        let widget = PseudoTerminal::new(parser.screen())
            .block(block)
            .cursor(cursor);
        frame.render_widget(widget, area);
        self.highlight(frame, inner, theme);
    }
}

/// Feeds the emulator what of the last block's log it has not seen. When that is more
/// lines than the scrollback holds, plain text (no escape sequence) before the last ones is
/// skipped: it would scroll out of reach anyway, and a burst of output costs the emulator
/// only what it can show.
fn feed(emulator: &mut Emulator, blocks: &VecDeque<BlockLog>) {
    let Some(block) = blocks.back() else {
        return;
    };
    let Some(mut pending) = block.bytes.get(emulator.fed..) else {
        emulator.fed = block.bytes.len();
        return;
    };
    if pending.is_empty() {
        return;
    }
    let keep = emulator.depth + usize::from(emulator.parser.screen().size().0);
    // Only a large burst is worth counting.
    if pending.len() > keep * 16 {
        let lines = memchr::memchr_iter(b'\n', pending).count();
        if lines > keep {
            let cut = nth_line_start(pending, lines - keep);
            if memchr::memchr(0x1b, &pending[..cut]).is_none() {
                if emulator.parser.screen().cursor_position().1 > 0 {
                    emulator.parser.process(b"\r\n");
                }
                pending = &pending[cut..];
            }
        }
    }
    emulator.parser.process(pending);
    emulator.fed = block.bytes.len();
}

/// The bytes of a block's separator line: `── python #3 ──`, with a note of dropped lines.
fn separator(parser: &vt100::Parser, fresh: bool, title: &str, dropped: usize) -> Vec<u8> {
    let mut out = Vec::new();
    if parser.screen().alternate_screen() {
        // A full-screen program that did not clean up: back to the normal screen.
        out.extend_from_slice(b"\x1b[?1049l\x1b[?25h");
    }
    if !fresh {
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("\x1b[0m\x1b[2m── {title} ──\x1b[0m\r\n").as_bytes());
    if dropped > 0 {
        out.extend_from_slice(dropped_note(dropped).as_bytes());
    }
    out
}

fn dropped_note(lines: usize) -> String {
    format!("\x1b[0m\x1b[2m{}\x1b[0m\r\n", dropped_text(lines))
}

fn dropped_text(lines: usize) -> String {
    let s = if lines == 1 { "" } else { "s" };
    format!("[… {lines} earlier line{s} dropped …]")
}

/// Drops lines from the head of a block until `keep` are left; returns the bytes dropped.
fn trim_lines(block: &mut BlockLog, keep: usize) -> usize {
    let drop = block.lines.saturating_sub(keep);
    if drop == 0 {
        return 0;
    }
    let cut = nth_line_start(&block.bytes, drop);
    block.bytes.drain(..cut);
    block.lines -= drop;
    block.dropped += drop;
    cut
}

/// Where the line after the `n`-th newline starts (n >= 1).
fn nth_line_start(bytes: &[u8], n: usize) -> usize {
    memchr::memchr_iter(b'\n', bytes)
        .nth(n.saturating_sub(1))
        .map_or(bytes.len(), |at| at + 1)
}

/// The bytes a key sends to a program in a terminal.
pub fn key_bytes(key: &KeyEvent) -> Option<Vec<u8>> {
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let mut bytes = match key.code {
        KeyCode::Char(c) if key.modifiers.contains(KeyModifiers::CONTROL) => {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() {
                vec![(c as u8) - b'a' + 1]
            } else {
                match c {
                    '@' | ' ' => vec![0],
                    '[' => vec![0x1b],
                    '\\' => vec![0x1c],
                    ']' => vec![0x1d],
                    _ => return None,
                }
            }
        }
        KeyCode::Char(c) => c.to_string().into_bytes(),
        KeyCode::Enter => vec![b'\r'],
        KeyCode::Backspace => vec![0x7f],
        KeyCode::Tab => vec![b'\t'],
        KeyCode::BackTab => b"\x1b[Z".to_vec(),
        KeyCode::Esc => vec![0x1b],
        KeyCode::Up => b"\x1b[A".to_vec(),
        KeyCode::Down => b"\x1b[B".to_vec(),
        KeyCode::Right => b"\x1b[C".to_vec(),
        KeyCode::Left => b"\x1b[D".to_vec(),
        KeyCode::Home => b"\x1b[H".to_vec(),
        KeyCode::End => b"\x1b[F".to_vec(),
        KeyCode::PageUp => b"\x1b[5~".to_vec(),
        KeyCode::PageDown => b"\x1b[6~".to_vec(),
        KeyCode::Delete => b"\x1b[3~".to_vec(),
        KeyCode::Insert => b"\x1b[2~".to_vec(),
        KeyCode::F(n @ 1..=4) => vec![0x1b, b'O', b'P' + n - 1],
        _ => return None,
    };
    if alt {
        bytes.insert(0, 0x1b);
    }
    Some(bytes)
}

#[cfg(test)]
#[path = "terminal_tests.rs"]
mod tests;
