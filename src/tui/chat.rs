//! The chat pane's model: entries (messages, executed blocks, notices), each turned into
//! wrapped lines for a width and cached, so that a frame touches only what it shows.

use std::cell::RefCell;

use ratatui::style::Modifier;
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
    },
    Notice(String),
    Error(String),
}

/// An entry's wrapped lines, and the width they were wrapped for.
type Rendered = Option<(u16, Vec<Line<'static>>)>;

/// The entries and their rendered lines.
#[derive(Default)]
pub struct Chat {
    pub entries: Vec<Entry>,
    cache: RefCell<Vec<Rendered>>,
}

impl Chat {
    pub fn push(&mut self, entry: Entry) {
        self.entries.push(entry);
        self.cache.borrow_mut().push(None);
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.cache.borrow_mut().clear();
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
            if let Some(slot) = self.cache.borrow_mut().get_mut(i) {
                *slot = None;
            }
        }
    }

    /// The last `rows` lines at `width`, `scroll` lines up from the bottom, with `tail`
    /// (the streaming message) after the entries. Returns the lines and the total height.
    pub fn visible_lines(
        &self,
        width: u16,
        rows: usize,
        scroll: usize,
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
        // Collect from the bottom up, only as far as needed.
        let need = rows + scroll;
        let mut bottom: Vec<Line<'static>> = tail.iter().rev().take(need).cloned().collect();
        for slot in cache.iter().rev() {
            if bottom.len() >= need {
                break;
            }
            if let Some((_, lines)) = slot {
                bottom.extend(lines.iter().rev().take(need - bottom.len()).cloned());
            }
        }
        bottom.reverse();
        let end = bottom.len().saturating_sub(scroll.min(bottom.len()));
        let start = end.saturating_sub(rows);
        (bottom[start..end].to_vec(), total)
    }
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
            lines.extend(render_width(text, theme, width));
            lines
        }
        Entry::Block {
            id,
            language,
            first_line,
            state,
            detail,
        } => {
            let (mark, style) = match state {
                BlockState::Ran => ("✓", theme.success),
                BlockState::Failed => ("✗", theme.error),
                BlockState::Interrupted => ("⏹", theme.warning),
                BlockState::Skipped => ("⊘", theme.muted),
                BlockState::Running => ("▶", theme.accent),
                BlockState::Proposed => ("…", theme.muted),
            };
            vec![Line::from(vec![
                Span::styled(format!("  {mark} "), style.add_modifier(Modifier::BOLD)),
                Span::styled(format!("{language} #{id} "), theme.accent),
                Span::styled(visible(first_line), theme.text),
                Span::styled(format!("  {} {detail}", state.label()), theme.muted),
            ])]
        }
        Entry::Notice(text) => vec![Line::styled(format!("· {}", visible(text)), theme.muted)],
        Entry::Error(text) => vec![Line::styled(format!("✗ {}", visible(text)), theme.error)],
    };
    lines.push(Line::default());
    lines
}

#[cfg(test)]
mod tests {
    use super::super::theme::Depth;
    use super::*;

    #[test]
    fn shows_the_bottom_and_scrolls_up() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        for i in 0..50 {
            chat.push(Entry::Notice(format!("note {i}")));
        }
        let (lines, total) = chat.visible_lines(40, 4, 0, &[], &theme);
        assert_eq!(total, 100);
        let text: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        assert_eq!(text, vec!["· note 48", "", "· note 49", ""]);
        let (lines, _) = chat.visible_lines(40, 2, 2, &[], &theme);
        assert_eq!(lines[0].to_string(), "· note 48");
    }

    #[test]
    fn block_updates_redraw_their_entry() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut chat = Chat::default();
        chat.push(Entry::Block {
            id: 1,
            language: "python".into(),
            first_line: "print(1)".into(),
            state: BlockState::Running,
            detail: String::new(),
        });
        chat.visible_lines(60, 5, 0, &[], &theme);
        chat.update_block(1, BlockState::Ran, "exit 0 · 0.10 s".into());
        let (lines, _) = chat.visible_lines(60, 5, 0, &[], &theme);
        assert!(lines[0].to_string().contains("ran exit 0"));
    }
}
