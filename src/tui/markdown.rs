//! The model's Markdown as styled lines fitted to a width: headings, paragraphs, emphasis,
//! strikethrough, inline code, links with their target, lists (nested, with hanging
//! indents and right-aligned numbers), block quotes (a bar on every line, nested ones
//! too), tables (aligned columns fitted to the width, cells wrapped) and fenced code
//! (highlighted). Every line knows its prefix (indent, list marker, quote bar), so wrapping
//! keeps it, and wide characters count as two columns.
//!
//! Blocks are separated by one blank line that is written only when the next block comes,
//! so the lines of a document are the lines of its top-level blocks joined by blank lines:
//! the streaming view (`stream.rs`) relies on this to render finished blocks once.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::highlight::{highlight_in_chat, visible};
pub use super::md_layout::Row;
use super::md_layout::{self, clip, wrap_chars, wrap_words};
use super::theme::Theme;

/// The Markdown extensions the workbench understands.
pub fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// Renders Markdown into lines of at most `width` columns.
pub fn render_width(markdown: &str, theme: &Theme, width: u16) -> Vec<Line<'static>> {
    let events: Vec<Event<'_>> = Parser::new_ext(markdown, options()).collect();
    let mut r = Renderer::new(theme, width.max(1) as usize);
    r.run(&events);
    r.lines
}

/// Renders Markdown without a width limit (tables at their natural width); callers that
/// know their width should use [`render_width`], which keeps indents and bars on wrapped
/// lines.
pub fn render(markdown: &str, theme: &Theme) -> Vec<Line<'static>> {
    render_width(markdown, theme, u16::MAX)
}

const BULLETS: [&str; 3] = ["• ", "◦ ", "▪ "];

enum Container {
    Quote,
    /// A list item: its marker, shown on its first line only.
    Item {
        marker: String,
        shown: bool,
    },
}

struct List {
    /// The next number of an ordered list.
    next: Option<u64>,
    /// Columns of the widest number of an ordered list.
    digits: usize,
}

struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<Row>>,
    header: bool,
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    lines: Vec<Line<'static>>,
    /// The inline content of the block being collected.
    inline: Vec<Span<'static>>,
    /// Extra indent of the collected content's wrapped lines (a heading's `## `).
    hang: usize,
    styles: Vec<Style>,
    containers: Vec<Container>,
    lists: Vec<List>,
    /// A blank line is due before the next line of a block.
    blank: bool,
    /// A fenced block being collected: its tag and text.
    code: Option<(String, String)>,
    /// Open links: where their text starts in `inline`, and their target.
    links: Vec<(usize, String)>,
    table: Option<Table>,
}

impl<'t> Renderer<'t> {
    fn new(theme: &'t Theme, width: usize) -> Renderer<'t> {
        Renderer {
            theme,
            width,
            lines: Vec::new(),
            inline: Vec::new(),
            hang: 0,
            styles: vec![theme.text],
            containers: Vec::new(),
            lists: Vec::new(),
            blank: false,
            code: None,
            links: Vec::new(),
            table: None,
        }
    }

    fn run(&mut self, events: &[Event<'_>]) {
        for (i, event) in events.iter().enumerate() {
            if let Some((_, code)) = &mut self.code {
                match event {
                    Event::Text(t) => code.push_str(t),
                    Event::End(TagEnd::CodeBlock) => self.end_code(),
                    _ => {}
                }
                continue;
            }
            match event {
                Event::Start(Tag::List(start)) => {
                    self.flush();
                    let digits = start.map_or(0, |n| {
                        let last = n.saturating_add(items(&events[i + 1..]).saturating_sub(1));
                        last.to_string().len()
                    });
                    self.lists.push(List {
                        next: *start,
                        digits,
                    });
                }
                Event::Start(tag) => self.start(tag),
                Event::End(tag) => self.end(*tag),
                Event::Text(t) => self.text(t),
                Event::Code(t) => {
                    let style = self.theme.accent;
                    self.inline.push(Span::styled(visible(t), style));
                }
                Event::SoftBreak => self.text(" "),
                Event::HardBreak => self.flush(),
                Event::Rule => {
                    self.flush();
                    let room = self.width.saturating_sub(self.prefix_width()).clamp(1, 40);
                    self.line(vec![Span::styled("─".repeat(room), self.theme.muted)]);
                    self.blank = true;
                }
                Event::TaskListMarker(done) => self.text(if *done { "[x] " } else { "[ ] " }),
                Event::Html(t) | Event::InlineHtml(t) => self.text(t),
                _ => {}
            }
        }
        self.flush();
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let next = f(self.style());
        self.styles.push(next);
    }

    fn text(&mut self, text: &str) {
        let style = self.style();
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.flush();
            }
            if !part.is_empty() {
                self.inline.push(Span::styled(visible(part), style));
            }
        }
    }

    fn prefix_width(&self) -> usize {
        self.containers
            .iter()
            .map(|c| match c {
                Container::Quote => 2,
                Container::Item { marker, .. } => md_layout::width(&[Span::raw(marker.as_str())]),
            })
            .sum()
    }

    /// The prefix of the next line: quote bars, list indents, and an item's marker on its
    /// first line.
    fn prefix(&mut self) -> Row {
        let bar = self.theme.muted;
        let mut spans: Row = Vec::new();
        for c in &mut self.containers {
            match c {
                Container::Quote => spans.push(Span::styled("│ ", bar)),
                Container::Item { marker, shown } => {
                    if *shown {
                        let w = md_layout::width(&[Span::raw(marker.as_str())]);
                        spans.push(Span::raw(" ".repeat(w)));
                    } else {
                        *shown = true;
                        spans.push(Span::styled(marker.clone(), self.theme.muted));
                    }
                }
            }
        }
        spans
    }

    /// Adds a line of content after its prefix, writing a due blank line first.
    fn line(&mut self, content: Row) {
        let prefix = self.prefix();
        self.line_with(prefix, content);
    }

    fn line_with(&mut self, prefix: Row, content: Row) {
        self.due_blank();
        let mut spans = prefix;
        spans.extend(content);
        self.lines.push(Line::from(clip(spans, self.width)));
    }

    /// Writes a due blank line (with the prefix of the containers open now).
    fn due_blank(&mut self) {
        if self.blank {
            self.blank = false;
            if !self.lines.is_empty() {
                let blank = clip(self.blank_prefix(), self.width);
                self.lines.push(Line::from(blank));
            }
        }
    }

    /// A blank line's prefix: quote bars only, without trailing spaces.
    fn blank_prefix(&self) -> Row {
        let mut text = String::new();
        for c in &self.containers {
            match c {
                Container::Quote => text.push_str("│ "),
                Container::Item { marker, .. } => {
                    text.push_str(&" ".repeat(md_layout::width(&[Span::raw(marker.as_str())])))
                }
            }
        }
        let text = text.trim_end();
        if text.is_empty() {
            Vec::new()
        } else {
            vec![Span::styled(text.to_string(), self.theme.muted)]
        }
    }

    /// Writes the collected inline content, wrapped under its prefix.
    fn flush(&mut self) {
        if self.inline.is_empty() {
            return;
        }
        let inline = std::mem::take(&mut self.inline);
        let room = self.width.saturating_sub(self.prefix_width()).max(1);
        let rest = room.saturating_sub(self.hang).max(1);
        let hang = if rest > 1 { self.hang } else { 0 };
        for (i, row) in wrap_words(&inline, room, rest).into_iter().enumerate() {
            let mut prefix = self.prefix();
            if i > 0 && hang > 0 {
                prefix.push(Span::raw(" ".repeat(hang)));
            }
            self.line_with(prefix, row);
        }
    }

    fn start(&mut self, tag: &Tag<'_>) {
        match tag {
            Tag::Paragraph => self.flush(),
            Tag::Heading { level, .. } => {
                self.flush();
                let marker = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                self.push_style(|_| self.theme.assistant.add_modifier(Modifier::BOLD));
                self.text(marker);
                self.hang = marker.len();
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.due_blank();
                self.containers.push(Container::Quote);
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
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
            Tag::HtmlBlock => self.flush(),
            Tag::Item => {
                self.flush();
                self.due_blank();
                let depth = self.lists.len().saturating_sub(1);
                let marker = match self.lists.last_mut() {
                    Some(List {
                        next: Some(n),
                        digits,
                    }) => {
                        let m = format!("{n:>digits$}. ", digits = *digits);
                        *n = n.saturating_add(1);
                        m
                    }
                    _ => BULLETS[depth % BULLETS.len()].to_string(),
                };
                self.containers.push(Container::Item {
                    marker,
                    shown: false,
                });
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push((self.inline.len(), dest_url.to_string()));
                self.push_style(|s| s.add_modifier(Modifier::UNDERLINED));
            }
            Tag::Image { dest_url, .. } => {
                self.inline.push(Span::styled("image: ", self.theme.muted));
                self.links.push((self.inline.len(), dest_url.to_string()));
                self.push_style(|s| s);
            }
            Tag::Table(alignments) => {
                self.flush();
                self.table = Some(Table {
                    alignments: alignments.clone(),
                    rows: Vec::new(),
                    header: false,
                });
            }
            Tag::TableHead => {
                if let Some(t) = &mut self.table {
                    t.header = true;
                    t.rows.push(Vec::new());
                }
                self.push_style(|s| s.add_modifier(Modifier::BOLD));
            }
            Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.inline.clear(),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.hang = 0;
                self.styles.pop();
                self.blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
                self.styles.pop();
                self.blank = true;
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if !matches!(self.containers.last(), Some(Container::Item { .. })) {
                    self.blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                if let Some(Container::Item { shown: false, .. }) = self.containers.last() {
                    // An empty item still shows its marker.
                    self.line(Vec::new());
                }
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some((start, url)) = self.links.pop() {
                    let text: String = self
                        .inline
                        .get(start..)
                        .unwrap_or_default()
                        .iter()
                        .map(|s| s.content.as_ref())
                        .collect();
                    let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                    if text != url && text != bare && !url.is_empty() {
                        self.inline.push(Span::styled(
                            format!(" ({})", visible(&url)),
                            self.theme.muted,
                        ));
                    }
                }
            }
            TagEnd::TableHead => {
                self.styles.pop();
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                    row.push(cell);
                }
            }
            TagEnd::Table => self.end_table(),
            _ => {}
        }
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let room = self.width.saturating_sub(self.prefix_width()).max(1);
        for row in md_layout::table(
            &table.rows,
            &table.alignments,
            table.header,
            room,
            self.theme.muted,
        ) {
            self.line(row);
        }
        self.blank = true;
    }

    fn end_code(&mut self) {
        let Some((tag, code)) = self.code.take() else {
            return;
        };
        if let Some(header) = code_header(&tag, self.theme) {
            self.line(header);
        }
        let room = self.width.saturating_sub(self.prefix_width()).max(1);
        for line in highlight_in_chat(&code, &tag, &self.theme.syntax, self.theme.depth) {
            for row in code_rows(&line, self.theme, room) {
                self.line(row);
            }
        }
        self.blank = true;
    }
}

/// A fenced block's first line: its language tag, if it has one.
pub fn code_header(tag: &str, theme: &Theme) -> Option<Row> {
    (!tag.is_empty()).then(|| vec![Span::styled(format!("  {tag}"), theme.muted)])
}

/// One highlighted code line behind the gutter, wrapped by characters to `width`.
pub fn code_rows(line: &Line<'static>, theme: &Theme, width: usize) -> Vec<Row> {
    let room = width.saturating_sub(2).max(1);
    wrap_chars(&line.spans, room)
        .into_iter()
        .map(|row| {
            let mut content = vec![Span::styled("▏ ", theme.muted)];
            content.extend(row);
            clip(content, width)
        })
        .collect()
}

/// The number of items of the list whose events follow.
fn items(events: &[Event<'_>]) -> u64 {
    let mut depth = 0usize;
    let mut count = 0;
    for event in events {
        match event {
            Event::Start(Tag::List(_)) => depth += 1,
            Event::End(TagEnd::List(_)) => {
                if depth == 0 {
                    break;
                }
                depth -= 1;
            }
            Event::Start(Tag::Item) if depth == 0 => count += 1,
            _ => {}
        }
    }
    count
}

/// Wraps lines to `width` columns, at spaces when it can, counting wide characters as two.
/// (Lines from [`render_width`] already fit; this is for plain text.)
pub fn wrap(lines: &[Line<'static>], width: u16) -> Vec<Line<'static>> {
    let width = width.max(1) as usize;
    let mut out = Vec::new();
    for line in lines {
        if line.width() <= width {
            out.push(line.clone());
            continue;
        }
        for row in wrap_words(&line.spans, width, width) {
            out.push(Line::from(row).style(line.style));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::theme::Depth;
    use super::*;

    fn theme() -> Theme {
        Theme::load("dark", Depth::None).unwrap()
    }

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    fn at(markdown: &str, width: u16) -> Vec<String> {
        let lines = render_width(markdown, &theme(), width);
        for l in &lines {
            assert!(l.width() <= width as usize, "{l:?} is wider than {width}");
        }
        plain(&lines)
    }

    #[test]
    fn renders_headings_lists_emphasis_and_code() {
        let lines = render(
            "# Title\n\nSome *em* and `code`.\n\n- one\n- two\n\n```python\nx = 1\n```\n",
            &theme(),
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
        let lines = render("bell\x07 and escape\x1b[2J", &theme());
        let text = plain(&lines).join("");
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    }

    #[test]
    fn tables_align_their_columns_from_the_header_row() {
        let md =
            "| name | n | note |\n|:-----|--:|:----:|\n| a | 1 | x |\n| long name | 100 | mid |\n";
        assert_eq!(
            at(md, 80),
            vec![
                "name      │   n │ note",
                "──────────┼─────┼─────",
                "a         │   1 │  x  ",
                "long name │ 100 │ mid ",
            ]
        );
    }

    #[test]
    fn tables_wrap_cells_to_fit_a_narrow_width() {
        let md = "| key | description |\n|---|---|\n| a | the first letter of the alphabet, used often |\n| 世界 | 世界世界世界世界 |\n";
        let lines = at(md, 24);
        assert_eq!(lines[0], "key  │ description      ");
        assert_eq!(lines[2], "a    │ the first letter ");
        assert_eq!(lines[3], "     │ of the alphabet, ");
        assert_eq!(lines[4], "     │ used often       ");
        assert!(lines.iter().all(|l| l.contains('│') || l.contains('┼')));
        // Every word and wide character is still there, in order.
        let all: String = lines.join(" ");
        for word in ["alphabet,", "used", "often", "世界"] {
            assert!(all.contains(word), "{word} in {all}");
        }
        // The table never exceeds the width, even a very narrow one.
        at(md, 12);
    }

    #[test]
    fn strikethrough_is_crossed_out() {
        let lines = render_width("keep ~~drop~~ this", &theme(), 40);
        assert_eq!(plain(&lines), vec!["keep drop this"]);
        let span = lines[0].spans.iter().find(|s| s.content == "drop").unwrap();
        assert!(span.style.add_modifier.contains(Modifier::CROSSED_OUT));
        let other = lines[0]
            .spans
            .iter()
            .find(|s| s.content.contains("keep"))
            .unwrap();
        assert!(!other.style.add_modifier.contains(Modifier::CROSSED_OUT));
    }

    #[test]
    fn nested_and_wrapped_list_items_keep_their_indent() {
        let md = "- first item with words that wrap\n  - nested item that also wraps\n- second\n";
        assert_eq!(
            at(md, 20),
            vec![
                "• first item with",
                "  words that wrap",
                "  ◦ nested item that",
                "    also wraps",
                "• second",
            ]
        );
    }

    #[test]
    fn ordered_numbers_are_right_aligned_with_a_hanging_indent() {
        let mut md = String::new();
        for i in 1..=10 {
            md.push_str(&format!("{i}. item {i}\n"));
        }
        md.push_str("11. a last item that wraps\n");
        let lines = at(&md, 20);
        assert_eq!(lines[0], " 1. item 1");
        assert_eq!(lines[9], "10. item 10");
        assert_eq!(lines[10], "11. a last item that");
        assert_eq!(lines[11], "    wraps");
    }

    #[test]
    fn quotes_keep_their_bar_on_wrapped_and_nested_lines() {
        let md = "> a quoted line that is long enough to wrap\n>\n> > nested quote text\n\nafter";
        assert_eq!(
            at(md, 20),
            vec![
                "│ a quoted line that",
                "│ is long enough to",
                "│ wrap",
                "│",
                "│ │ nested quote",
                "│ │ text",
                "",
                "after",
            ]
        );
    }

    #[test]
    fn links_show_their_target_unless_it_is_the_text() {
        assert_eq!(
            at(
                "see [the docs](https://example.org/d) and <https://example.org>",
                80
            ),
            vec!["see the docs (https://example.org/d) and https://example.org"]
        );
        assert_eq!(at("<me@example.org>", 80), vec!["me@example.org"]);
    }

    #[test]
    fn code_blocks_wrap_behind_their_gutter_inside_list_items() {
        let md = "- run:\n\n  ```sh\n  echo 0123456789abcdef\n  ```\n";
        let lines = at(md, 16);
        assert_eq!(
            lines,
            vec!["• run:", "", "    sh", "  ▏ echo 0123456", "  ▏ 789abcdef"]
        );
    }

    #[test]
    fn documents_are_their_blocks_joined_by_blank_lines() {
        let parts = [
            "# Head\n",
            "para *one*\ncontinued\n",
            "- a\n- b\n",
            "> quote\n",
            "| x | y |\n|---|---|\n| 1 | 2 |\n",
            "```py\nx = 1\n\n```\n",
            "---\n",
            "last",
        ];
        let whole = parts.join("\n");
        let mut joined: Vec<String> = Vec::new();
        for part in parts {
            if !joined.is_empty() {
                joined.push(String::new());
            }
            joined.extend(at(part, 30));
        }
        assert_eq!(at(&whole, 30), joined);
    }

    #[test]
    fn plain_lines_wrap_at_spaces_and_count_wide_characters() {
        let lines = vec![Line::from("hello wide 世界世界 world")];
        let wrapped = wrap(&lines, 10);
        for l in &wrapped {
            assert!(l.width() <= 10, "{l:?}");
        }
        assert_eq!(plain(&wrapped), vec!["hello wide", "世界世界", "world"]);
        let long = vec![Line::from("x".repeat(25))];
        assert_eq!(wrap(&long, 10).len(), 3);
    }
}
