//! The terminal pane's search: matches of the query found in the emulator's rows
//! (scrollback and screen), moving between them, and marking those on screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use unicode_width::UnicodeWidthStr;

use super::TerminalPane;
use crate::tui::theme::Theme;

/// A match of the search: a row of the emulator (0 = the oldest scrollback row), the column
/// it starts at and its width in columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Match {
    pub row: usize,
    pub col: u16,
    pub width: u16,
}

#[derive(Debug, Default)]
pub(super) struct Search {
    /// The query is being typed.
    pub editing: bool,
    pub query: String,
    pub matches: Vec<Match>,
    /// Index into `matches` of the current one.
    pub current: Option<usize>,
    /// The scrollback's depth in rows when the matches were found.
    pub depth: usize,
}

impl TerminalPane {
    /// Every row of the emulator, scrollback first.
    pub(super) fn all_rows(&mut self) -> Vec<String> {
        let screen = self.em().screen_mut();
        let keep = screen.scrollback();
        screen.set_scrollback(usize::MAX);
        let depth = screen.scrollback();
        let (rows, cols) = screen.size();
        let total = depth + usize::from(rows);
        let mut out: Vec<String> = Vec::with_capacity(total);
        while out.len() < total {
            let offset = depth.saturating_sub(out.len());
            screen.set_scrollback(offset);
            let top = depth - offset;
            let before = out.len();
            for (i, row) in screen.rows(0, cols).enumerate() {
                if top + i == out.len() {
                    out.push(row);
                }
            }
            if out.len() == before {
                break;
            }
        }
        screen.set_scrollback(keep);
        out
    }

    /// Finds the query's matches again, keeping the current one where it was when it can.
    pub(super) fn find(&mut self) {
        let query = self.search.query.clone();
        if query.is_empty() {
            self.search.matches.clear();
            self.search.current = None;
            return;
        }
        let previous = self
            .search
            .current
            .and_then(|i| self.search.matches.get(i).copied());
        self.use_depth(true);
        let rows = self.all_rows();
        self.search.depth = rows
            .len()
            .saturating_sub(usize::from(self.em().screen().size().0));
        let mut matches = Vec::new();
        for (row, text) in rows.iter().enumerate() {
            for (col, width) in find_in_row(text, &query) {
                matches.push(Match { row, col, width });
            }
        }
        self.search.current = previous.and_then(|p| {
            let last = matches.len().checked_sub(1)?;
            Some(
                matches
                    .iter()
                    .position(|m| (m.row, m.col) >= (p.row, p.col))
                    .unwrap_or(last),
            )
        });
        self.search.matches = matches;
    }

    /// Moves to the next (forward) or previous match and scrolls it into view.
    pub(super) fn step(&mut self, forward: bool) {
        self.find();
        let count = self.search.matches.len();
        if count == 0 {
            return;
        }
        let next = match self.search.current {
            None => count - 1,
            Some(i) if forward => (i + 1) % count,
            Some(i) => (i + count - 1) % count,
        };
        self.search.current = Some(next);
        self.show_match(next);
    }

    pub(super) fn show_match(&mut self, index: usize) {
        let Some(m) = self.search.matches.get(index).copied() else {
            return;
        };
        let screen = self.em().screen_mut();
        let keep = screen.scrollback();
        screen.set_scrollback(usize::MAX);
        let depth = screen.scrollback();
        let rows = usize::from(screen.size().0);
        let top = depth.saturating_sub(keep);
        if m.row >= top && m.row < top + rows {
            screen.set_scrollback(keep);
            return;
        }
        // The match in the middle of the pane.
        let offset = (depth + rows / 2).saturating_sub(m.row).min(depth);
        screen.set_scrollback(offset);
    }

    /// "3 of 12", or "no match", when a search is active.
    pub fn search_status(&self) -> Option<String> {
        if self.search.query.is_empty() && !self.search.editing {
            return None;
        }
        let count = self.search.matches.len();
        Some(match self.search.current {
            _ if self.search.query.is_empty() => String::new(),
            Some(i) if count > 0 => format!("{} of {count}", i + 1),
            _ => "no match".to_string(),
        })
    }

    /// Marks the query's matches among the rows on screen; the current one stands out.
    pub(super) fn highlight(&self, frame: &mut Frame, inner: Rect, theme: &Theme) {
        let query = &self.search.query;
        if query.is_empty() {
            return;
        }
        let parser = self.view();
        let screen = parser.screen();
        let (_, cols) = screen.size();
        let current = self
            .search
            .current
            .and_then(|i| self.search.matches.get(i))
            .copied();
        let buffer = frame.buffer_mut();
        let plain = Style::default().add_modifier(Modifier::REVERSED);
        let strong = theme
            .accent
            .add_modifier(Modifier::REVERSED | Modifier::BOLD);
        for (y, text) in screen.rows(0, cols).enumerate() {
            if y as u16 >= inner.height {
                break;
            }
            for (col, width) in find_in_row(&text, query) {
                let is_current =
                    current.is_some_and(|c| c.col == col && self.visible_row(c.row) == Some(y));
                let style = if is_current { strong } else { plain };
                for dx in 0..width {
                    let x = col + dx;
                    if x >= inner.width {
                        break;
                    }
                    if let Some(cell) = buffer.cell_mut((inner.x + x, inner.y + y as u16)) {
                        cell.set_style(style);
                    }
                }
            }
        }
    }

    /// Where an absolute row is on the pane now, if it is visible.
    fn visible_row(&self, row: usize) -> Option<usize> {
        let rows = usize::from(self.view().screen().size().0);
        let top = self.top_row();
        (row >= top && row < top + rows).then(|| row - top)
    }

    /// The absolute row shown at the top of the pane.
    fn top_row(&self) -> usize {
        self.search.depth.saturating_sub(self.scroll())
    }
}

/// The matches of `query` in a row, as (column, width): ignoring case unless the query has
/// a capital letter.
pub(super) fn find_in_row(text: &str, query: &str) -> Vec<(u16, u16)> {
    let smart = query.chars().any(char::is_uppercase);
    let (hay, needle) = if smart {
        (text.to_string(), query.to_string())
    } else {
        (text.to_lowercase(), query.to_lowercase())
    };
    if hay.len() != text.len() {
        // Lower-casing changed lengths (rare scripts): search as typed.
        return find_exact(text, query);
    }
    find_exact_in(&hay, &needle, text)
}

fn find_exact(text: &str, query: &str) -> Vec<(u16, u16)> {
    find_exact_in(text, query, text)
}

fn find_exact_in(hay: &str, needle: &str, original: &str) -> Vec<(u16, u16)> {
    let mut out = Vec::new();
    if needle.is_empty() {
        return out;
    }
    let mut from = 0;
    while let Some(at) = hay[from..].find(needle) {
        let start = from + at;
        let end = start + needle.len();
        let (Some(before), Some(found)) = (original.get(..start), original.get(start..end)) else {
            break;
        };
        out.push((
            u16::try_from(before.width()).unwrap_or(u16::MAX),
            u16::try_from(found.width()).unwrap_or(u16::MAX),
        ));
        from = end;
    }
    out
}
