//! The model's Markdown as styled lines: headings, lists, emphasis, inline code, links and
//! fenced code (highlighted), then wrapped to a width with wide characters counted right.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::highlight::{highlight, visible};
use super::theme::Theme;

/// Renders Markdown into unwrapped lines.
pub fn render(markdown: &str, theme: &Theme) -> Vec<Line<'static>> {
    let mut r = Renderer {
        theme,
        lines: Vec::new(),
        current: Vec::new(),
        styles: vec![theme.text],
        lists: Vec::new(),
        code: None,
        link: None,
    };
    for event in Parser::new(markdown) {
        r.event(event);
    }
    r.flush();
    while r.lines.last().is_some_and(|l| l.spans.is_empty()) {
        r.lines.pop();
    }
    r.lines
}

struct Renderer<'t> {
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    current: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Open lists: the next number for ordered ones.
    lists: Vec<Option<u64>>,
    /// A fenced block being collected: its tag and text.
    code: Option<(String, String)>,
    link: Option<String>,
}

impl Renderer<'_> {
    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let next = f(self.style());
        self.styles.push(next);
    }

    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.lines
                .push(Line::from(std::mem::take(&mut self.current)));
        }
    }

    fn blank(&mut self) {
        self.flush();
        if self.lines.last().is_some_and(|l| !l.spans.is_empty()) {
            self.lines.push(Line::default());
        }
    }

    fn text(&mut self, text: &str) {
        let style = self.style();
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.flush();
            }
            if !part.is_empty() {
                self.current.push(Span::styled(visible(part), style));
            }
        }
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some((_, code)) = &mut self.code {
            match event {
                Event::Text(t) => code.push_str(&t),
                Event::End(TagEnd::CodeBlock) => self.end_code(),
                _ => {}
            }
            return;
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(t) => {
                let style = self.theme.accent;
                self.current.push(Span::styled(visible(&t), style));
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.blank();
                self.lines
                    .push(Line::styled("─".repeat(24), self.theme.muted));
                self.lines.push(Line::default());
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::Html(t) | Event::InlineHtml(t) => self.text(&t),
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.blank();
                let prefix = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                self.push_style(|_| self.theme.assistant.add_modifier(Modifier::BOLD));
                self.text(prefix);
            }
            Tag::BlockQuote(_) => {
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
                self.text("│ ");
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                let tag = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((tag, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                self.lists.push(start);
            }
            Tag::Item => {
                self.flush();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.current.push(Span::styled(
                    format!("{}{marker}", "  ".repeat(depth)),
                    self.theme.muted,
                ));
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.link = Some(dest_url.to_string());
                self.push_style(|s| s.add_modifier(Modifier::UNDERLINED));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.blank(),
            TagEnd::Heading(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::BlockQuote(_) => {
                self.styles.pop();
                self.blank();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                if self.lists.is_empty() {
                    self.blank();
                }
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take() {
                    self.current.push(Span::styled(
                        format!(" ({})", visible(&url)),
                        self.theme.muted,
                    ));
                }
            }
            _ => {}
        }
    }

    fn end_code(&mut self) {
        let Some((tag, code)) = self.code.take() else {
            return;
        };
        let gutter = Span::styled("▏ ", self.theme.muted);
        if !tag.is_empty() {
            self.lines
                .push(Line::styled(format!("  {tag}"), self.theme.muted));
        }
        for line in highlight(
            code.trim_end_matches('\n'),
            &tag,
            &self.theme.syntax,
            self.theme.depth,
        ) {
            let mut spans = vec![gutter.clone()];
            spans.extend(line.spans);
            self.lines.push(Line::from(spans));
        }
        self.lines.push(Line::default());
    }
}

/// Wraps lines to `width` columns, at spaces when it can, counting wide characters as two.
pub fn wrap(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    let width = width.max(1) as usize;
    let mut out = Vec::new();
    for line in lines {
        if line.width() <= width {
            out.push(line.clone());
            continue;
        }
        let mut row: Vec<Span<'static>> = Vec::new();
        let mut used = 0;
        for span in &line.spans {
            let style = span.style;
            let mut piece = String::new();
            for word in span.content.split_inclusive(' ') {
                let w = word.width();
                if used + w > width && used > 0 {
                    if !piece.is_empty() {
                        row.push(Span::styled(std::mem::take(&mut piece), style));
                    }
                    out.push(Line::from(std::mem::take(&mut row)).style(line.style));
                    used = 0;
                }
                if w > width {
                    // A word longer than the line: break it by characters.
                    for c in word.chars() {
                        let cw = c.to_string().width();
                        if used + cw > width {
                            if !piece.is_empty() {
                                row.push(Span::styled(std::mem::take(&mut piece), style));
                            }
                            out.push(Line::from(std::mem::take(&mut row)).style(line.style));
                            used = 0;
                        }
                        piece.push(c);
                        used += cw;
                    }
                } else {
                    piece.push_str(word);
                    used += w;
                }
            }
            if !piece.is_empty() {
                row.push(Span::styled(piece, style));
            }
        }
        if !row.is_empty() {
            out.push(Line::from(row).style(line.style));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::theme::Depth;
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn renders_headings_lists_emphasis_and_code() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let lines = render(
            "# Title\n\nSome *em* and `code`.\n\n- one\n- two\n\n```python\nx = 1\n```\n",
            &theme,
        );
        assert_eq!(
            plain(&lines),
            vec![
                "# Title",
                "",
                "Some em and code.",
                "",
                "• one",
                "• two",
                "",
                "  python",
                "▏ x = 1"
            ]
        );
    }

    #[test]
    fn control_characters_in_model_text_are_made_visible() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let lines = render("bell\x07 and escape\x1b[2J", &theme);
        let text = plain(&lines).join("");
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    }

    #[test]
    fn wraps_at_spaces_and_counts_wide_characters() {
        let lines = vec![Line::from("hello wide 世界世界 world")];
        let wrapped = wrap(&lines, 10);
        for l in &wrapped {
            assert!(l.width() <= 10, "{l:?}");
        }
        assert_eq!(plain(&wrapped).join(""), "hello wide 世界世界 world");
        let long = vec![Line::from("x".repeat(25))];
        assert_eq!(wrap(&long, 10).len(), 3);
    }
}
