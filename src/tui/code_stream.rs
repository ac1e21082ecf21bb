//! A block's code while its tool call streams, shown in the code pane as it is written.
//!
//! The code only grows, a delta at a time, so everything here is done once per piece of it:
//! the delta is appended (and its newlines counted), and each complete line is highlighted
//! once by a highlighter that keeps its state between frames. A frame highlights for a
//! bounded time: when the code arrives faster than it can be coloured, the end of it (what
//! the pane shows) is drawn plain until the highlighter catches up, and no frame stalls.
//! A frame wraps only the rows it shows. When the block is proposed, what was highlighted
//! is handed to the code pane ([`super::code_cache`]), so no line is highlighted twice.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::code::cut;
use super::highlight::{Highlighter, ready, syntax_id, visible};
use super::theme::{Depth, Theme};

/// How long one frame may spend highlighting the streaming code.
const BUDGET: Duration = Duration::from_millis(6);

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
    budget: Duration,
}

/// The theme and language a highlighting was done in, and whether highlighting was loaded.
type ViewKey = (String, Depth, String, bool);

/// What was highlighted so far, for the theme and language it was done in.
#[derive(Default)]
struct View {
    key: Option<ViewKey>,
    highlighter: Option<Highlighter>,
    /// Bytes of the code whose lines are highlighted (up to a newline).
    taken: usize,
    /// The complete lines highlighted so far.
    lines: Vec<Line<'static>>,
}

/// What a stream highlighted, for the code pane to go on from.
pub struct Highlighted {
    key: ViewKey,
    code: String,
    pub(super) highlighter: Highlighter,
    /// The complete lines highlighted, the first `taken` bytes of `code`.
    pub(super) lines: Vec<Line<'static>>,
    pub(super) taken: usize,
}

impl Highlighted {
    /// Whether these lines are the start of `code` in `language`, highlighted as the pane
    /// would highlight them now.
    pub fn fits(&self, code: &str, language: &str, theme: &Theme) -> bool {
        let (syntax, depth, streamed_language, was_ready) = &self.key;
        *syntax == theme.syntax
            && *depth == theme.depth
            && *was_ready == ready()
            && syntax_id(streamed_language) == syntax_id(language)
            && code.starts_with(&self.code[..self.taken])
    }
}

impl StreamingCode {
    pub fn new(index: usize, language: Option<String>) -> StreamingCode {
        StreamingCode {
            index,
            language,
            code: String::new(),
            newlines: 0,
            view: RefCell::new(View::default()),
            budget: BUDGET,
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

    /// Complete lines highlighted so far (they may be fewer than the lines that came).
    pub fn highlighted_lines(&self) -> usize {
        self.view.borrow().lines.len()
    }

    /// What was highlighted, for the code pane; None when nothing was.
    pub fn into_highlighted(self) -> Option<Highlighted> {
        let View {
            key,
            highlighter,
            taken,
            lines,
        } = self.view.into_inner();
        Some(Highlighted {
            key: key?,
            code: self.code,
            highlighter: highlighter?,
            lines,
            taken,
        })
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
            lines,
            ..
        } = &mut *view;
        let Some(highlighter) = highlighter.as_mut() else {
            return String::new();
        };
        // At least one line a frame, so that highlighting always moves on.
        let started = Instant::now();
        while let Some(len) = self.code[*taken..].find('\n') {
            let line = &self.code[*taken..*taken + len];
            lines.push(highlighter.line(line.strip_suffix('\r').unwrap_or(line)));
            *taken += len + 1;
            if started.elapsed() >= self.budget {
                break;
            }
        }
        let open_start = self.code.rfind('\n').map_or(0, |i| i + 1);
        let open = &self.code[open_start..];
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
            let open = open.strip_suffix('\r').unwrap_or(open);
            // Its colours depend on every line before it: plain while those are not done.
            let line = if *taken == open_start {
                highlighter.peek(open)
            } else {
                Line::raw(visible(open))
            };
            numbered(total, &line, &mut rows);
            first_line = total;
        }
        // The complete lines, last first: highlighted when done, plain when not yet.
        let complete = self.code[..open_start]
            .strip_suffix('\n')
            .map(|c| c.rsplit('\n'));
        for (k, text) in complete.into_iter().flatten().enumerate() {
            if rows.len() >= height {
                break;
            }
            let number = self.newlines - k;
            match lines.get(number - 1) {
                Some(line) => numbered(number, line, &mut rows),
                None => {
                    let text = text.strip_suffix('\r').unwrap_or(text);
                    numbered(number, &Line::raw(visible(text)), &mut rows);
                }
            }
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

    /// The colour of the first character of `text` on the screen, if shown.
    fn colour_of(code: &StreamingCode, theme: &Theme, text: &str) -> Option<ratatui::style::Color> {
        let (w, h) = (40, 10);
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        terminal
            .draw(|f| {
                code.draw(f, Rect::new(0, 0, w, h), theme);
            })
            .unwrap();
        let buffer = terminal.backend().buffer();
        for y in 0..h {
            let row: String = (0..w)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect();
            if let Some(at) = row.find(text) {
                let x = row[..at].chars().count() as u16;
                return Some(buffer[(x, y)].fg);
            }
        }
        None
    }

    /// Code that comes faster than it can be highlighted: a frame highlights what its time
    /// allows (at least a line), draws the end plain meanwhile, and later frames catch up.
    #[test]
    fn a_frame_highlights_within_its_time_and_shows_the_rest_plain() {
        crate::tui::highlight::load();
        let theme = Theme::load("dark", Depth::TrueColor).unwrap();
        let mut code = StreamingCode::new(0, Some("python".into()));
        code.budget = Duration::ZERO;
        for i in 0..300 {
            code.push(&format!("def f_{i}(): return {i}\n"), None);
        }
        code.push("def open_line", None);
        let (shown, position) = screen(&code, &theme, 40, 10);
        assert_eq!(code.highlighted_lines(), 1, "one line a frame, at least");
        assert!(
            shown.contains("300 def f_299(): return 299") && shown.contains("301 def open_line"),
            "the end is shown, plain: {shown}"
        );
        assert_eq!(position, "lines 292–301 of 301 ↑");
        assert_eq!(
            colour_of(&code, &theme, "def f_299"),
            Some(ratatui::style::Color::Reset),
            "not highlighted yet"
        );
        for _ in 0..400 {
            if code.highlighted_lines() == 300 {
                break;
            }
            screen(&code, &theme, 40, 10);
        }
        assert_eq!(code.highlighted_lines(), 300);
        for text in ["def f_299", "def open_line"] {
            let colour = colour_of(&code, &theme, text);
            assert!(
                matches!(colour, Some(ratatui::style::Color::Rgb(..))),
                "{text} is highlighted once caught up: {colour:?}"
            );
        }
    }

    #[test]
    fn a_frame_highlights_only_what_is_new() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let mut code = StreamingCode::new(0, None);
        code.budget = Duration::from_secs(60);
        code.push(&"line\n".repeat(5000), None);
        screen(&code, &theme, 40, 10);
        assert_eq!(code.highlighted_lines(), 5000);
        code.push("more\n", None);
        screen(&code, &theme, 40, 10);
        let view = code.view.borrow();
        assert_eq!((view.lines.len(), view.taken), (5001, code.code().len()));
    }
}
