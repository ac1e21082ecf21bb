//! The chat pane's model: entries (messages, executed blocks, notices), each turned into
//! wrapped lines for a width and cached, so that a frame touches only what it shows.
//!
//! Scrolling is a top row, or nothing while the pane follows the bottom; it is clamped to
//! the content, and a pane scrolled up stays where it is while new lines arrive (counted, for
//! `↓ N new`). Up/Down select an entry; Enter expands a block to its code, output and status.

use std::cell::{Cell, RefCell};

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::visible;
use super::markdown::{render_width, wrap};
use super::theme::Theme;
use crate::protocol::BlockId;

/// What became of a block, as the chat shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    Proposed,
    Running,
    Ran,
    Failed,
    Skipped,
    Interrupted,
    TimedOut,
}

impl BlockState {
    pub fn label(self) -> &'static str {
        match self {
            BlockState::Proposed => "proposed",
            BlockState::Running => "running",
            BlockState::Ran => "ran",
            BlockState::Failed => "failed",
            BlockState::Skipped => "skipped",
            BlockState::Interrupted => "interrupted",
            BlockState::TimedOut => "timed out",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    User(String),
    Assistant(String),
    Block {
        id: BlockId,
        language: String,
        first_line: String,
        state: BlockState,
        /// `exit 0 · 0.12 s`, or why it was skipped.
        detail: String,
        /// The code that ran (or was proposed).
        code: String,
        /// The last lines of its output.
        output: String,
        /// Shown with its code and output.
        expanded: bool,
    },
    Notice(String),
    Error(String),
}

/// An entry's wrapped lines, and the width they were wrapped for.
type Rendered = Option<(u16, Vec<Line<'static>>)>;

/// What the pane drew last.
#[derive(Debug, Clone, Copy, Default)]
struct View {
    width: u16,
    rows: usize,
    total: usize,
    /// The total when the pane last followed the bottom (for `↓ N new`).
    followed: usize,
}

/// The entries and their rendered lines.
#[derive(Default)]
pub struct Chat {
    pub entries: Vec<Entry>,
    cache: RefCell<Vec<Rendered>>,
    /// The top row shown; None: the bottom, following new lines.
    pub scroll: Option<usize>,
    /// The selected entry.
    pub selected: Option<usize>,
    view: Cell<View>,
    /// The entry each row of the last frame belonged to (for clicks).
    row_entries: RefCell<Vec<Option<usize>>>,
    /// Messages the person sent that the engine has not taken up yet (a turn runs): shown
    /// marked, below everything else, until the request that carries them.
    pub queued: Vec<String>,
    /// Counts the changes to the entries (for a hidden tab's mark).
    revision: u64,
}

/// Lines of a block's output kept for its entry.
pub const OUTPUT_TAIL: usize = 12;
/// Lines of a block's code shown when it is expanded.
const CODE_SHOWN: usize = 40;

impl Chat {
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        self.cache.borrow_mut().push(None);
        self.revision += 1;
    }

    /// How many times the entries changed: a different number, something new to see.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// A message that waits for the engine: shown queued.
    pub fn queue(&mut self, text: String) {
        self.queued.push(text);
        self.revision += 1;
    }

    /// The engine took up the oldest queued message: it is said, here.
    pub fn take_queued(&mut self) -> Option<String> {
        if self.queued.is_empty() {
            return None;
        }
        let text = self.queued.remove(0);
        self.push(Entry::User(text.clone()));
        Some(text)
    }

    /// The queued messages' lines, each marked, for below the entries.
    pub fn queued_lines(&self, theme: &Theme) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        for text in &self.queued {
            lines.push(Line::from(vec![
                Span::styled("you", theme.user),
                Span::styled(
                    " · queued: goes with the next request",
                    theme.warning.add_modifier(Modifier::BOLD),
                ),
            ]));
            lines.extend(text.lines().map(|l| Line::styled(visible(l), theme.muted)));
            lines.push(Line::default());
        }
        lines
    }

    /// Puts an entry at `i`, before the ones from there on.
    pub fn insert(&mut self, i: usize, entry: Entry) {
        let i = i.min(self.entries.len());
        self.revision += 1;
        self.entries.insert(i, entry);
        self.cache.borrow_mut().insert(i, None);
        if let Some(s) = &mut self.selected
            && *s >= i
        {
            *s += 1;
        }
    }

    pub fn clear(&mut self) {
        self.revision += 1;
        self.entries.clear();
        self.cache.borrow_mut().clear();
        self.scroll = None;
        self.selected = None;
    }

    /// Replaces entry `i` (a notice that is updated in place).
    pub fn replace(&mut self, i: usize, entry: Entry) {
        if let Some(slot) = self.entries.get_mut(i) {
            *slot = entry;
            self.invalidate(i);
        }
    }

    fn invalidate(&mut self, i: usize) {
        self.revision += 1;
        if let Some(slot) = self.cache.borrow_mut().get_mut(i) {
            *slot = None;
        }
    }

    /// Rows below the view that arrived while it was scrolled up.
    pub fn new_rows(&self) -> usize {
        let v = self.view.get();
        match self.scroll {
            Some(_) => v.total.saturating_sub(v.followed),
            None => 0,
        }
    }

    /// Scrolled away from the bottom of more rows than the pane shows (as last drawn).
    pub fn scrolled_away(&self) -> bool {
        let v = self.view.get();
        let max = v.total.saturating_sub(v.rows);
        self.scroll.is_some_and(|top| top < max)
    }

    /// Scrolls by `delta` rows (negative: up), clamped to the content; reaching the bottom
    /// follows it again.
    pub fn scroll_by(&mut self, delta: isize) {
        let v = self.view.get();
        let max = v.total.saturating_sub(v.rows);
        if max == 0 {
            self.scroll = None;
            return;
        }
        let top = self.scroll.unwrap_or(max) as isize + delta;
        self.scroll = (top < max as isize).then(|| top.max(0) as usize);
    }

    pub fn page(&mut self, down: bool) {
        let rows = self.view.get().rows.max(2) as isize - 1;
        self.scroll_by(if down { rows } else { -rows });
    }

    pub fn top(&mut self) {
        let v = self.view.get();
        self.scroll = (v.total > v.rows).then_some(0);
    }

    pub fn bottom(&mut self) {
        self.scroll = None;
    }

    /// Selects the entry `step` away from the selected one (or the last one), and scrolls it
    /// into view.
    pub fn select(&mut self, step: isize) {
        if self.entries.is_empty() {
            return;
        }
        let last = self.entries.len() - 1;
        let next = match self.selected {
            None => last,
            Some(i) => (i as isize + step).clamp(0, last as isize) as usize,
        };
        self.selected = Some(next);
        self.reveal(next);
    }

    /// Selects the entry drawn at `row` of the pane's inside; returns it.
    pub fn select_row(&mut self, row: usize) -> Option<usize> {
        let entry = self.row_entries.borrow().get(row).copied().flatten()?;
        self.selected = Some(entry);
        Some(entry)
    }

    /// Shows or hides the selected block's code and output; false when it is not a block.
    pub fn toggle_selected(&mut self) -> bool {
        let Some(i) = self.selected else { return false };
        let Some(Entry::Block { expanded, .. }) = self.entries.get_mut(i) else {
            return false;
        };
        *expanded = !*expanded;
        self.invalidate(i);
        self.reveal(i);
        true
    }

    /// Scrolls so that entry `i` is in view (as far as it fits).
    fn reveal(&mut self, i: usize) {
        let v = self.view.get();
        let cache = self.cache.borrow();
        let height = |slot: &Rendered| slot.as_ref().map_or(1, |(_, l)| l.len());
        let start: usize = cache.iter().take(i).map(height).sum();
        let len = cache.get(i).map_or(1, height);
        drop(cache);
        let max = v.total.saturating_sub(v.rows);
        let top = self.scroll.unwrap_or(max);
        let top = if start < top {
            start
        } else if start + len > top + v.rows {
            (start + len).saturating_sub(v.rows).min(start)
        } else {
            top
        };
        self.scroll = (top < max).then_some(top);
    }

    /// The text of the selected entry (or of the last message from the model), for copying.
    pub fn selected_text(&self) -> String {
        let entry = match self.selected {
            Some(i) => self.entries.get(i),
            None => self
                .entries
                .iter()
                .rev()
                .find(|e| matches!(e, Entry::Assistant(_))),
        };
        match entry {
            Some(Entry::User(t) | Entry::Assistant(t) | Entry::Notice(t) | Entry::Error(t)) => {
                t.clone()
            }
            Some(Entry::Block { code, output, .. }) if output.is_empty() => code.clone(),
            Some(Entry::Block { code, output, .. }) => format!("{code}\n\n{output}"),
            None => String::new(),
        }
    }

    /// Sets the output tail of block `id`'s entry.
    pub fn block_output(&mut self, id: BlockId, tail: String) {
        if let Some(i) = self
            .entries
            .iter()
            .rposition(|e| matches!(e, Entry::Block { id: b, .. } if *b == id))
        {
            if let Entry::Block { output, .. } = &mut self.entries[i] {
                *output = tail;
            }
            self.invalidate(i);
        }
    }

    /// Updates the chat entry of block `id`, if there is one.
    pub fn update_block(&mut self, id: BlockId, state: BlockState, detail: String) {
        if let Some(i) = self
            .entries
            .iter()
            .rposition(|e| matches!(e, Entry::Block { id: b, .. } if *b == id))
        {
            if let Entry::Block {
                state: s,
                detail: d,
                ..
            } = &mut self.entries[i]
            {
                *s = state;
                *d = detail;
            }
            self.invalidate(i);
        }
    }

    /// The lines to show in `rows` rows at `width`, with `tail` (the streaming message)
    /// after the entries: the bottom, or from the scrolled-to row. Returns the lines and the
    /// content's total height. Records the geometry for scrolling and clicks.
    pub fn visible_lines(
        &self,
        width: u16,
        rows: usize,
        tail: &[Line<'static>],
        theme: &Theme,
    ) -> (Vec<Line<'static>>, usize) {
        let mut cache = self.cache.borrow_mut();
        cache.resize(self.entries.len(), None);
        let tail = wrap(tail, width);
        let mut total = tail.len();
        for (i, entry) in self.entries.iter().enumerate() {
            let fresh = !matches!(&cache[i], Some((w, _)) if *w == width);
            if fresh {
                cache[i] = Some((width, wrap(&entry_lines(entry, theme, width), width)));
            }
            total += cache[i].as_ref().map_or(0, |(_, l)| l.len());
        }
        let max = total.saturating_sub(rows);
        let top = self.scroll.map_or(max, |t| t.min(max));
        let mut view = self.view.get();
        if self.scroll.is_none() || view.width != width {
            view.followed = total;
        }
        self.view.set(View {
            width,
            rows,
            total,
            followed: view.followed,
        });
        // Walk to the first row shown, then take `rows` rows.
        let mut out = Vec::with_capacity(rows);
        let mut owners = Vec::with_capacity(rows);
        let mut row = 0;
        for (i, slot) in cache.iter().enumerate() {
            if out.len() >= rows {
                break;
            }
            let Some((_, lines)) = slot else { continue };
            if row + lines.len() <= top {
                row += lines.len();
                continue;
            }
            let skip = top.saturating_sub(row);
            for (j, line) in lines.iter().enumerate().skip(skip) {
                if out.len() >= rows {
                    break;
                }
                let mut line = line.clone();
                if self.selected == Some(i) && j == 0 {
                    line = line.patch_style(theme.focus.add_modifier(Modifier::REVERSED));
                }
                out.push(line);
                owners.push(Some(i));
            }
            row += lines.len();
        }
        let skip = top.saturating_sub(row);
        for line in tail.iter().skip(skip) {
            if out.len() >= rows {
                break;
            }
            out.push(line.clone());
            owners.push(None);
        }
        *self.row_entries.borrow_mut() = owners;
        (out, total)
    }
}

/// Bytes of a reply shown in the chat, half from its start and half from its end: a reply
/// of megabytes (a model repeating itself until it was cut) would take tens of megabytes
/// of lines, and is read whole in the export.
const SHOWN_REPLY: usize = 256 * 1024;

/// A reply too long for the chat, as its start, the bytes left out and its end (each cut
/// where a line or a word begins); None when it is shown whole.
fn folded(text: &str) -> Option<(&str, usize, &str)> {
    if text.len() <= SHOWN_REPLY {
        return None;
    }
    let half = SHOWN_REPLY / 2;
    let head = super::stream::floor_boundary(text, half);
    let head = text[..head]
        .rfind('\n')
        .filter(|&i| i > half / 2)
        .unwrap_or(head);
    let tail = super::stream::boundary(text, text.len() - half);
    let tail = text[tail..]
        .char_indices()
        .find(|(_, c)| c.is_whitespace())
        .map_or(tail, |(i, c)| tail + i + c.len_utf8());
    Some((&text[..head], tail - head, &text[tail..]))
}

/// One entry's lines (Markdown already fitted to `width`), with a blank line after it.
fn entry_lines(entry: &Entry, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let mut lines = match entry {
        Entry::User(text) => {
            let mut lines = vec![Line::from(Span::styled("you", theme.user))];
            lines.extend(text.lines().map(|l| Line::styled(visible(l), theme.text)));
            lines
        }
        Entry::Assistant(text) => {
            let mut lines = vec![Line::from(Span::styled("oi", theme.assistant))];
            match folded(text) {
                None => lines.extend(render_width(text, theme, width)),
                Some((start, left_out, end)) => {
                    lines.extend(render_width(start, theme, width));
                    lines.push(Line::styled(
                        format!(
                            "… {} KB of this reply are not shown here; `/export` or `oi-tui sessions show` has all of it …",
                            left_out / 1024
                        ),
                        theme.muted,
                    ));
                    lines.extend(render_width(end, theme, width));
                }
            }
            lines
        }
        Entry::Block {
            id,
            language,
            first_line,
            state,
            detail,
            code,
            output,
            expanded,
        } => {
            let (mark, style) = match state {
                BlockState::Ran => ("✓", theme.success),
                BlockState::Failed => ("✗", theme.error),
                BlockState::Interrupted | BlockState::TimedOut => ("⏹", theme.warning),
                BlockState::Skipped => ("⊘", theme.muted),
                BlockState::Running => ("▶", theme.accent),
                BlockState::Proposed => ("…", theme.muted),
            };
            // The status word once: a summary that begins with it does not repeat it.
            let status = if detail.starts_with(state.label()) {
                detail.clone()
            } else if detail.is_empty() {
                state.label().to_string()
            } else {
                format!("{} · {detail}", state.label())
            };
            let fold = if code.is_empty() && output.is_empty() {
                ""
            } else if *expanded {
                " ▾"
            } else {
                " ▸"
            };
            let mut lines = vec![Line::from(vec![
                Span::styled(format!("  {mark} "), style.add_modifier(Modifier::BOLD)),
                Span::styled(format!("{language} #{id} "), theme.accent),
                Span::styled(visible(first_line), theme.text),
                Span::styled(format!("  {status}{fold}"), theme.muted),
            ])];
            if *expanded {
                let total = code.lines().count();
                let width = total.to_string().len();
                for (i, l) in code.lines().take(CODE_SHOWN).enumerate() {
                    lines.push(Line::from(vec![
                        Span::styled(format!("    {:>width$} ", i + 1), theme.muted),
                        Span::styled(visible(l), theme.text),
                    ]));
                }
                if total > CODE_SHOWN {
                    lines.push(Line::styled(
                        format!(
                            "    … {} more lines (the code pane shows them all)",
                            total - CODE_SHOWN
                        ),
                        theme.muted,
                    ));
                }
                if *state == BlockState::Proposed {
                    // Nothing ran yet: no output section.
                } else if output.trim().is_empty() {
                    lines.push(Line::styled("    (no output)", theme.muted));
                } else {
                    lines.push(Line::styled("    output:", theme.muted));
                    for l in output.lines() {
                        lines.push(Line::styled(format!("    │ {}", visible(l)), theme.text));
                    }
                }
                lines.push(Line::styled(format!("    {status}"), theme.muted));
            }
            lines
        }
        Entry::Notice(text) => marked_lines("· ", text, theme.muted),
        Entry::Error(text) => marked_lines("✗ ", text, theme.error),
    };
    lines.push(Line::default());
    lines
}

/// A notice or an error: its first line after the mark, each further line of it (a list of
/// servers, the ways to connect) on a line of its own under it.
fn marked_lines(mark: &str, text: &str, style: Style) -> Vec<Line<'static>> {
    text.trim_end()
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            let lead = if i == 0 { mark } else { "  " };
            Line::styled(format!("{lead}{}", visible(line)), style)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::theme::Depth;
    use super::*;

    fn block(id: BlockId, state: BlockState, detail: &str) -> Entry {
        Entry::Block {
            id,
            language: "python".into(),
            first_line: "print(1)".into(),
            state,
            detail: detail.into(),
            code: "print(1)\nprint(2)".into(),
            output: "1\n2".into(),
            expanded: false,
        }
    }

    fn text(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    /// A reply of megabytes shows its start and its end, says how much is left out and
    /// where to read it, and takes a bounded number of lines.
    #[test]
    fn a_reply_of_megabytes_is_folded_in_the_chat() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let reply = format!(
            "The first words. {} The last words é",
            "é more text ".repeat(100_000)
        );
        let lines = entry_lines(&Entry::Assistant(reply.clone()), &theme, 80);
        let shown = text(&lines);
        assert!(shown[1].starts_with("The first words."), "{}", shown[1]);
        let squeezed: String = shown.concat().split_whitespace().collect();
        assert!(squeezed.ends_with("Thelastwordsé"), "{:?}", shown.last());
        let marker = shown
            .iter()
            .find(|l| l.contains("of this reply are not shown here"))
            .expect("a marker");
        assert!(marker.contains("/export"), "{marker}");
        assert!(lines.len() < SHOWN_REPLY / 40, "{} lines", lines.len());
        assert!(reply.len() > 1_000_000);
        // Short replies are whole.
        let lines = entry_lines(&Entry::Assistant("short".into()), &theme, 80);
        assert!(!text(&lines).iter().any(|l| l.contains("not shown")));
    }

    #[test]
    fn shows_the_bottom_and_scrolls_up_within_the_content() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        for i in 0..50 {
            chat.push(Entry::Notice(format!("note {i}")));
        }
        let (lines, total) = chat.visible_lines(40, 4, &[], &theme);
        assert_eq!(total, 100);
        assert_eq!(text(&lines), vec!["· note 48", "", "· note 49", ""]);
        chat.scroll_by(-2);
        let (lines, _) = chat.visible_lines(40, 4, &[], &theme);
        assert_eq!(lines[0].to_string(), "· note 47");
        // Up past the top stops at the top; End follows the bottom again.
        chat.scroll_by(-1000);
        let (lines, _) = chat.visible_lines(40, 4, &[], &theme);
        assert_eq!(lines[0].to_string(), "· note 0");
        chat.bottom();
        let (lines, _) = chat.visible_lines(40, 4, &[], &theme);
        assert_eq!(lines[2].to_string(), "· note 49");
    }

    #[test]
    fn a_short_chat_does_not_scroll_into_blank_space() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        chat.push(Entry::Notice("only".into()));
        chat.visible_lines(40, 10, &[], &theme);
        chat.page(false);
        chat.scroll_by(-5);
        assert_eq!(chat.scroll, None);
        let (lines, _) = chat.visible_lines(40, 10, &[], &theme);
        assert_eq!(lines[0].to_string(), "· only");
    }

    #[test]
    fn a_scrolled_pane_stays_put_and_counts_new_rows() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        for i in 0..20 {
            chat.push(Entry::Notice(format!("note {i}")));
        }
        chat.visible_lines(40, 4, &[], &theme);
        chat.scroll_by(-6);
        let (before, _) = chat.visible_lines(40, 4, &[], &theme);
        chat.push(Entry::Notice("late".into()));
        let (after, _) = chat.visible_lines(40, 4, &[], &theme);
        assert_eq!(text(&before), text(&after));
        assert_eq!(chat.new_rows(), 2);
    }

    #[test]
    fn blocks_expand_to_code_output_and_status_once() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        chat.push(block(
            3,
            BlockState::Interrupted,
            "interrupted · exit 130 · 2.00 s",
        ));
        let (lines, _) = chat.visible_lines(80, 10, &[], &theme);
        let first = lines[0].to_string();
        assert!(first.contains("interrupted · exit 130"), "{first}");
        assert_eq!(first.matches("interrupted").count(), 1, "{first}");
        chat.select(-1);
        assert!(chat.toggle_selected());
        let (lines, _) = chat.visible_lines(80, 10, &[], &theme);
        let all = text(&lines).join("\n");
        assert!(all.contains("1 print(1)") && all.contains("│ 2"), "{all}");
        assert_eq!(chat.selected_text(), "print(1)\nprint(2)\n\n1\n2");
    }

    #[test]
    fn block_updates_redraw_their_entry() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        chat.push(block(1, BlockState::Running, ""));
        chat.visible_lines(60, 5, &[], &theme);
        chat.update_block(1, BlockState::Ran, "exit 0 · 0.10 s".into());
        let (lines, _) = chat.visible_lines(60, 5, &[], &theme);
        assert!(lines[0].to_string().contains("ran · exit 0"));
    }
}
