//! A block's code while its tool call streams, shown in the code pane as it is written.
//!
//! The code only grows, a delta at a time, so everything here is done once per piece of it:
//! the delta is appended (and its newlines counted), each complete line is highlighted once
//! by a highlighter that keeps its state between frames, and only the last few hundred
//! highlighted lines are kept. A frame wraps only the rows it shows: the end of the code,
//! which is what is being written. A frame's cost does not grow with the block.

use std::cell::RefCell;
use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::code::cut;
use super::highlight::{Highlighter, ready};
use super::theme::{Depth, Theme};

/// Highlighted lines kept for the screen: more than any pane is tall.
const KEEP: usize = 400;

/// The code of the tool call streaming now.
pub struct StreamingCode {
    /// The call's place in the reply.
    pub index: usize,
    /// The language, once the model has named it.
    pub language: Option<String>,
    code: String,
    /// Newlines in `code`.
    newlines: usize,
    view: RefCell<View>,
}

/// What was highlighted so far, for the theme and language it was done in.
#[derive(Default)]
struct View {
    key: Option<(String, Depth, String, bool)>,
    highlighter: Option<Highlighter>,
    /// Bytes of the code whose lines are highlighted (up to a newline).
    taken: usize,
    /// Complete lines highlighted.
    done: usize,
    /// The last of them, highlighted.
    recent: VecDeque<Line<'static>>,
}

impl StreamingCode {
    pub fn new(index: usize, language: Option<String>) -> StreamingCode {
        StreamingCode {
            index,
            language,
            code: String::new(),
            newlines: 0,
            view: RefCell::new(View::default()),
        }
    }

    /// Appends more of the code.
    pub fn push(&mut self, delta: &str, language: Option<String>) {
        self.code.push_str(delta);
        self.newlines += delta.bytes().filter(|b| *b == b'\n').count();
        if language.is_some() {
            self.language = language;
        }
    }

    pub fn code(&self) -> &str {
        &self.code
    }

    /// Lines of the code, as `str::lines` counts them.
    pub fn line_count(&self) -> usize {
        self.newlines + usize::from(!self.code.is_empty() && !self.code.ends_with('\n'))
    }

    /// Draws the end of the code in `inner`, numbered and highlighted; returns the position
    /// text for the pane's border, empty when everything fits.
    pub fn draw(&self, frame: &mut Frame, inner: Rect, theme: &Theme) -> String {
        let mut view = self.view.borrow_mut();
        let language = self.language.clone().unwrap_or_default();
        let key = (theme.syntax.clone(), theme.depth, language.clone(), ready());
        if view.key.as_ref() != Some(&key) {
            *view = View {
                highlighter: Some(Highlighter::new(&language, &theme.syntax, theme.depth)),
                key: Some(key),
                ..View::default()
            };
        }
        let View {
            highlighter,
            taken,
            done,
            recent,
            ..
        } = &mut *view;
        let Some(highlighter) = highlighter.as_mut() else {
            return String::new();
        };
        while let Some(len) = self.code[*taken..].find('\n') {
            let line = &self.code[*taken..*taken + len];
            recent.push_back(highlighter.line(line.strip_suffix('\r').unwrap_or(line)));
            if recent.len() > KEEP {
                recent.pop_front();
            }
            *taken += len + 1;
            *done += 1;
        }
        let open = &self.code[*taken..];
        let total = self.line_count();
        let digits = total.to_string().len().max(2);
        let room = (inner.width as usize).saturating_sub(digits + 1).max(4);
        let height = inner.height as usize;
        // From the last line up, until the pane is full.
        let mut rows: VecDeque<Line<'static>> = VecDeque::new();
        let mut first_line = total + 1;
        let numbered = |number: usize, line: &Line<'static>, rows: &mut VecDeque<_>| {
            let pieces = cut(line, room);
            for (j, piece) in pieces.into_iter().enumerate().rev() {
                let mark = if j == 0 {
                    format!("{number:>digits$} ")
                } else {
                    format!("{:>digits$} ", "↪")
                };
                let mut spans = vec![Span::styled(mark, theme.muted)];
                spans.extend(piece);
                rows.push_front(Line::from(spans));
            }
        };
        if !open.is_empty() {
            let line = highlighter.peek(open.strip_suffix('\r').unwrap_or(open));
            numbered(total, &line, &mut rows);
            first_line = total;
        }
        for (k, line) in recent.iter().rev().enumerate() {
            if rows.len() >= height {
                break;
            }
            let number = *done - k;
            numbered(number, line, &mut rows);
            first_line = number;
        }
        let cut_top = rows.len().saturating_sub(height);
        let shown: Vec<Line<'static>> = rows.into_iter().skip(cut_top).collect();
        frame.render_widget(Paragraph::new(shown), inner);
        if first_line <= 1 && cut_top == 0 {
            return String::new();
        }
        let first = if cut_top > 0 {
            first_line + 1
        } else {
            first_line
        };
        format!("lines {}–{total} of {total} ↑", first.min(total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    fn screen(code: &StreamingCode, theme: &Theme, w: u16, h: u16) -> (String, String) {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        let mut position = String::new();
        terminal
            .draw(|f| position = code.draw(f, Rect::new(0, 0, w, h), theme))
            .unwrap();
        (terminal.backend().to_string(), position)
    }

    #[test]
    fn shows_the_end_as_it_grows() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut code = StreamingCode::new(0, Some("python".into()));
        code.push("print(1)\nprint(2)\npri", None);
        let (shown, position) = screen(&code, &theme, 30, 5);
        assert!(
            shown.contains(" 1 print(1)") && shown.contains(" 3 pri"),
            "{shown}"
        );
        assert_eq!(position, "");
        for i in 3..200 {
            code.push(&format!("nt({i})\npri"), None);
        }
        assert_eq!(code.line_count(), 200);
        let (shown, position) = screen(&code, &theme, 30, 5);
        assert!(shown.contains("199 print(199)"), "{shown}");
        assert!(
            shown.contains("200 pri") && !shown.contains("print(195)"),
            "{shown}"
        );
        assert_eq!(position, "lines 196–200 of 200 ↑");
        // A long line wraps with a mark.
        code.push(&"x".repeat(60), None);
        let (shown, _) = screen(&code, &theme, 30, 5);
        assert!(shown.contains(" ↪ "), "{shown}");
    }

    #[test]
    fn a_frame_highlights_only_what_is_new() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut code = StreamingCode::new(0, None);
        code.push(&"line\n".repeat(5000), None);
        screen(&code, &theme, 40, 10);
        assert_eq!(code.view.borrow().done, 5000);
        assert_eq!(code.view.borrow().recent.len(), KEEP);
        code.push("more\n", None);
        screen(&code, &theme, 40, 10);
        let view = code.view.borrow();
        assert_eq!((view.done, view.taken), (5001, code.code().len()));
    }
}
