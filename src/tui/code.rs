//! The code pane: a block (or the diff after an edit) with line numbers, long lines wrapped
//! with a continuation mark, scrolled with the keys and the wheel, and `lines 1–27 of 61 ↓`
//! when not everything fits. It remembers which lines of the current content were ever on
//! screen (at any scroll position and any size; a wrapped line only when every one of its
//! rows was), so that running a block with lines nobody saw first brings them into view.
//!
//! The reducer moves the scroll; drawing records the geometry (rows, viewport, which lines
//! were drawn) through cells, because only the drawing knows the pane's size.

use std::cell::RefCell;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthChar;

use super::theme::Theme;

/// What the pane drew last, and what has been seen of the content.
#[derive(Default)]
struct State {
    /// The content drawn (a hash of its text and kind); a new one starts at the top.
    key: u64,
    /// The first visual row shown.
    scroll: usize,
    /// Rows of the viewport.
    height: usize,
    width: u16,
    /// Visual rows of the whole content at `width` (only the rows on screen are made).
    row_count: usize,
    /// The first visual row of each content line.
    line_rows: Vec<usize>,
    /// Which content lines were ever on screen whole (every row of a wrapped line).
    seen: Vec<bool>,
    /// Which visual rows at `width` were ever on screen: a wrapped line taller than the
    /// pane is seen when all of its rows were, at whatever scroll.
    rows_seen: Vec<bool>,
    /// The content changed but was not drawn yet.
    stale: bool,
    styled: bool,
}

#[derive(Default)]
pub struct CodeView {
    state: RefCell<State>,
}

/// What the pane shows: one of these per frame.
pub struct Content<'a> {
    /// Identifies the content (so that new content starts at the top, unseen).
    pub key: u64,
    /// The lines, styled, unwrapped.
    pub lines: super::code_cache::Lines,
    /// Number the lines (code) or not (a diff carries its own signs).
    pub numbered: bool,
    /// Changes when the same content is styled anew (highlighting became ready).
    pub styled: bool,
    pub theme: &'a Theme,
}

impl CodeView {
    /// Forgets the content: the next one starts at the top, unseen.
    pub fn reset(&self) {
        let mut s = self.state.borrow_mut();
        *s = State {
            stale: true,
            ..State::default()
        };
    }

    /// Scrolls by `delta` rows (negative: up), within the content.
    pub fn scroll_by(&self, delta: isize) {
        let mut s = self.state.borrow_mut();
        let max = s.row_count.saturating_sub(s.height);
        s.scroll = (s.scroll as isize + delta).clamp(0, max as isize) as usize;
    }

    pub fn page(&self, down: bool) {
        let height = self.state.borrow().height.max(2) as isize - 1;
        self.scroll_by(if down { height } else { -height });
    }

    pub fn top(&self) {
        self.state.borrow_mut().scroll = 0;
    }

    pub fn bottom(&self) {
        let mut s = self.state.borrow_mut();
        s.scroll = s.row_count.saturating_sub(s.height);
    }

    /// Content lines that were never on screen (all of them, if it was never drawn).
    pub fn unseen(&self, key: u64, total_lines: usize) -> usize {
        let s = self.state.borrow();
        if s.key != key || s.stale {
            return total_lines;
        }
        s.seen.iter().filter(|seen| !**seen).count()
    }

    /// Before running: when some lines were never on screen, scrolls to the first of them
    /// and says how many there are; None: every line was on screen.
    pub fn guard(&self, key: u64, total_lines: usize) -> Option<Unseen> {
        let unseen = self.unseen(key, total_lines);
        if unseen == 0 {
            return None;
        }
        let mut s = self.state.borrow_mut();
        if s.key != key || s.stale {
            // Never drawn: it will be, from the top.
            s.key = key;
            s.stale = true;
            s.scroll = 0;
            return Some(Unseen {
                unseen,
                never: unseen,
                total: total_lines,
                drawn: false,
            });
        }
        let first = s.seen.iter().position(|seen| !*seen).unwrap_or(0);
        let row = s.line_rows.get(first).copied().unwrap_or(0);
        let max = s.row_count.saturating_sub(s.height);
        s.scroll = row.min(max);
        let (from, to) = (s.scroll, (s.scroll + s.height).min(s.row_count));
        // What the next frame shows counts as shown: the notice names what stays unread.
        let never = (0..s.seen.len())
            .filter(|&i| {
                !s.seen[i]
                    && !rows_of(&s.line_rows, s.row_count, i)
                        .all(|r| (from..to).contains(&r) || s.rows_seen.get(r) == Some(&true))
            })
            .count();
        Some(Unseen {
            unseen,
            never,
            total: total_lines,
            drawn: true,
        })
    }

    /// Draws `content` in `inner` (the pane's inside); returns the position text for the
    /// pane's border (`lines 1–27 of 61 ↓`), empty when everything fits.
    pub fn draw(&self, frame: &mut Frame, inner: Rect, content: Content<'_>) -> String {
        let mut s = self.state.borrow_mut();
        let total = content.lines.len();
        if s.key != content.key {
            *s = State {
                key: content.key,
                ..State::default()
            };
        }
        if s.stale
            || s.width != inner.width
            || s.styled != content.styled
            || s.row_count == 0 && total > 0
        {
            s.styled = content.styled;
            let (row_count, line_rows) = layout(&content, inner.width);
            if row_count != s.row_count || line_rows != s.line_rows {
                // Rows of another width: what was seen whole stays seen, in `seen`.
                s.rows_seen = vec![false; row_count];
            }
            s.row_count = row_count;
            s.line_rows = line_rows;
            s.width = inner.width;
        }
        s.stale = false;
        s.height = inner.height as usize;
        if s.seen.len() != total {
            s.seen = vec![false; total];
        }
        if s.rows_seen.len() != s.row_count {
            s.rows_seen = vec![false; s.row_count];
        }
        let max = s.row_count.saturating_sub(s.height);
        s.scroll = s.scroll.min(max);
        let end = (s.scroll + s.height).min(s.row_count);
        let shown = rows_between(&content, inner.width, &s.line_rows, s.scroll, end);
        // A line counts as seen when every one of its rows was drawn, now or before.
        let (from, to) = (s.scroll, end);
        let State {
            rows_seen,
            seen,
            line_rows,
            row_count,
            ..
        } = &mut *s;
        for row in rows_seen.iter_mut().take(to).skip(from) {
            *row = true;
        }
        let first = line_rows.partition_point(|r| *r <= from).saturating_sub(1);
        for (i, whole) in seen.iter_mut().enumerate().skip(first) {
            if line_rows.get(i).is_none_or(|r| *r >= to) {
                break;
            }
            if rows_of(line_rows, *row_count, i).all(|r| rows_seen.get(r) == Some(&true)) {
                *whole = true;
            }
        }
        frame.render_widget(Paragraph::new(shown), inner);
        if s.row_count <= s.height {
            return String::new();
        }
        let first = s.line_rows.iter().rposition(|r| *r <= from).unwrap_or(0) + 1;
        let last = s.line_rows.iter().rposition(|r| *r < to).unwrap_or(0) + 1;
        let arrows = match (from > 0, to < s.row_count) {
            (true, true) => " ↑↓",
            (true, false) => " ↑",
            (false, true) => " ↓",
            (false, false) => "",
        };
        format!("lines {first}–{last} of {total}{arrows}")
    }
}

/// What `y` found before running: lines never on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unseen {
    /// Lines never on screen so far.
    pub unseen: usize,
    /// Of those, the lines the scroll to the first of them does not bring into view either:
    /// what stays unread if the person goes on now.
    pub never: usize,
    pub total: usize,
    /// The content was drawn at all (false: it was not on screen yet).
    pub drawn: bool,
}

/// The visual rows of content line `i`.
fn rows_of(line_rows: &[usize], row_count: usize, i: usize) -> std::ops::Range<usize> {
    let start = line_rows.get(i).copied().unwrap_or(row_count);
    let end = line_rows.get(i + 1).copied().unwrap_or(row_count);
    start..end
}

/// The width of the numbers in the gutter (0 when unnumbered), and the room left for the
/// code at `width`.
fn gutter(content: &Content<'_>, width: u16) -> (usize, usize) {
    let digits = if content.numbered {
        content.lines.len().to_string().len().max(2)
    } else {
        0
    };
    // Unnumbered (a diff), a continuation row starts with a two-column mark instead.
    let gutter = if content.numbered { digits + 1 } else { 2 };
    (digits, (width as usize).saturating_sub(gutter).max(4))
}

/// How the content wraps at `width`: its number of visual rows, and each line's first row.
/// Nothing is made but the numbers: rows are made only when drawn.
fn layout(content: &Content<'_>, width: u16) -> (usize, Vec<usize>) {
    let (_, room) = gutter(content, width);
    let mut rows = 0;
    let mut line_rows = Vec::with_capacity(content.lines.len());
    for line in content.lines.iter() {
        line_rows.push(rows);
        let mut pieces = 1;
        walk(line, room, |_, _, breaks| pieces += usize::from(breaks));
        rows += pieces;
    }
    (rows, line_rows)
}

/// The visual rows `from..to`: a gutter (number or continuation mark), then the line's
/// spans cut to fit.
fn rows_between(
    content: &Content<'_>,
    width: u16,
    line_rows: &[usize],
    from: usize,
    to: usize,
) -> Vec<Line<'static>> {
    let muted = content.theme.muted;
    let (digits, room) = gutter(content, width);
    // The line that holds row `from`.
    let first = line_rows.partition_point(|r| *r <= from).saturating_sub(1);
    let mut rows = Vec::with_capacity(to.saturating_sub(from));
    for (i, line) in content.lines.iter().enumerate().skip(first) {
        let start = line_rows.get(i).copied().unwrap_or(0);
        if start >= to {
            break;
        }
        for (j, piece) in cut(line, room).into_iter().enumerate() {
            let row = start + j;
            if row < from {
                continue;
            }
            if row >= to {
                break;
            }
            let mut spans = Vec::with_capacity(piece.len() + 1);
            if content.numbered {
                let mark = if j == 0 {
                    format!("{:>digits$} ", i + 1)
                } else {
                    format!("{:>digits$} ", "↪")
                };
                spans.push(Span::styled(mark, muted));
            } else if j > 0 {
                spans.push(Span::styled("↪ ", muted));
            }
            spans.extend(piece);
            rows.push(Line::from(spans));
        }
    }
    rows
}

/// Walks a line's characters as they are cut into pieces of at most `room` columns, calling
/// `each(span, character, starts_a_piece)`: the one place the breaking rule is written.
fn walk(line: &Line<'static>, room: usize, mut each: impl FnMut(usize, char, bool)) {
    let mut used = 0;
    for (i, span) in line.spans.iter().enumerate() {
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            let breaks = used + w > room && used > 0;
            if breaks {
                used = 0;
            }
            each(i, c, breaks);
            used += w;
        }
    }
}

/// Cuts a line's spans into pieces of at most `room` columns.
pub(super) fn cut(line: &Line<'static>, room: usize) -> Vec<Vec<Span<'static>>> {
    let style = |i: usize| -> Style {
        line.style
            .patch(line.spans.get(i).map(|s| s.style).unwrap_or_default())
    };
    let flush = |pieces: &mut Vec<Vec<Span<'static>>>, text: &mut String, span: usize| {
        if !text.is_empty()
            && let Some(last) = pieces.last_mut()
        {
            last.push(Span::styled(std::mem::take(text), style(span)));
        }
    };
    let mut pieces = vec![Vec::new()];
    let mut text = String::new();
    let mut at = 0;
    walk(line, room, |span, c, breaks| {
        if span != at {
            flush(&mut pieces, &mut text, at);
            at = span;
        }
        if breaks {
            flush(&mut pieces, &mut text, at);
            pieces.push(Vec::new());
        }
        text.push(c);
    });
    flush(&mut pieces, &mut text, at);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::{Depth, Theme};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn content(theme: &Theme, n: usize, key: u64) -> Content<'_> {
        Content {
            key,
            lines: (1..=n)
                .map(|i| Line::from(format!("line {i}")))
                .collect::<Vec<_>>()
                .into(),
            numbered: true,
            styled: false,
            theme,
        }
    }

    fn draw(view: &CodeView, c: Content<'_>, w: u16, h: u16) -> (String, String) {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        let mut position = String::new();
        terminal
            .draw(|f| position = view.draw(f, Rect::new(0, 0, w, h), c))
            .unwrap();
        (terminal.backend().to_string(), position)
    }

    #[test]
    fn scrolls_to_the_end_and_tells_where_it_is() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let view = CodeView::default();
        let (screen, position) = draw(&view, content(&theme, 61, 1), 40, 27);
        assert!(screen.contains("27 line 27") && !screen.contains("line 28"));
        assert_eq!(position, "lines 1–27 of 61 ↓");
        assert_eq!(view.unseen(1, 61), 34);
        view.bottom();
        let (screen, position) = draw(&view, content(&theme, 61, 1), 40, 27);
        assert!(screen.contains("61 line 61"), "{screen}");
        assert_eq!(position, "lines 35–61 of 61 ↑");
        assert_eq!(view.unseen(1, 61), 7);
    }

    #[test]
    fn the_guard_shows_unseen_lines_until_every_line_was_shown() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let view = CodeView::default();
        draw(&view, content(&theme, 61, 7), 40, 27);
        let told = view.guard(7, 61).unwrap();
        // 34 never shown; the scroll to line 28 shows 27 of them, 7 stay unread.
        assert_eq!(
            (told.unseen, told.never, told.total),
            (34, 7, 61),
            "{told:?}"
        );
        let (screen, _) = draw(&view, content(&theme, 61, 7), 40, 27);
        assert!(screen.contains("28 line 28") && screen.contains("54 line 54"));
        // Still 7 lines never shown: the guard stops again (the keys decide whether the
        // person said to go on anyway).
        let told = view.guard(7, 61).unwrap();
        assert_eq!((told.unseen, told.never), (7, 0), "{told:?}");
        draw(&view, content(&theme, 61, 7), 40, 27);
        assert_eq!(view.guard(7, 61), None);
        // A short block seen whole needs no second press.
        let view = CodeView::default();
        draw(&view, content(&theme, 3, 8), 40, 27);
        assert_eq!(view.guard(8, 3), None);
        // Content never drawn is unseen.
        let view = CodeView::default();
        assert!(view.guard(9, 3).is_some());
    }

    /// A wrapped line counts as shown only when every one of its rows was on screen (at
    /// any scroll position); lines shown stay shown at another width.
    #[test]
    fn a_wrapped_line_counts_as_shown_only_when_all_its_rows_were() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let view = CodeView::default();
        // At 20 columns the long line takes 6 rows (17 columns of code each).
        let c = |key| Content {
            key,
            lines: vec![Line::from("first"), Line::from("x".repeat(100))].into(),
            numbered: true,
            styled: false,
            theme: &theme,
        };
        let (screen, _) = draw(&view, c(1), 20, 4);
        assert!(screen.contains(" 2 xxx"), "{screen}");
        assert_eq!(view.unseen(1, 2), 1, "3 of its 6 rows were drawn");
        view.scroll_by(1);
        draw(&view, c(1), 20, 4);
        assert_eq!(view.unseen(1, 2), 1, "5 of its 6 rows were drawn");
        view.scroll_by(2);
        draw(&view, c(1), 20, 4);
        assert_eq!(
            view.unseen(1, 2),
            0,
            "every row was drawn, at some position"
        );
        // A line seen whole stays seen when the terminal is resized.
        let view = CodeView::default();
        draw(&view, c(2), 20, 10);
        assert_eq!(view.unseen(2, 2), 0);
        draw(&view, c(2), 12, 3);
        assert_eq!(view.unseen(2, 2), 0);
    }

    #[test]
    fn long_lines_wrap_with_a_mark() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let view = CodeView::default();
        let c = Content {
            key: 1,
            lines: vec![Line::from("x".repeat(50)), Line::from("end")].into(),
            numbered: true,
            styled: false,
            theme: &theme,
        };
        let (screen, position) = draw(&view, c, 20, 10);
        assert!(screen.contains(" ↪ "), "{screen}");
        assert!(screen.contains(" 2 end"), "{screen}");
        assert_eq!(screen.matches('x').count(), 50);
        assert_eq!(position, "");
    }

    /// A diff has no numbers, and its continuation rows carry a mark: the mark takes no
    /// character of the line off the screen.
    #[test]
    fn a_wrapped_diff_line_keeps_every_character() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let view = CodeView::default();
        let line: String = ('a'..='z').chain('A'..='Z').collect();
        let c = Content {
            key: 1,
            lines: vec![Line::from(format!("+ {line}"))].into(),
            numbered: false,
            styled: false,
            theme: &theme,
        };
        let (screen, _) = draw(&view, c, 20, 10);
        let shown: String = screen
            .lines()
            .map(|row| row.trim_matches('"').trim_start_matches("↪ ").trim_end())
            .collect();
        assert_eq!(shown, format!("+ {line}"), "{screen}");
    }
}
