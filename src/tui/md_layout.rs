//! Fitting styled text to columns, for the Markdown renderer: word wrapping that counts wide
//! (CJK, emoji) characters as two columns, hard wrapping for code, clipping, and the column
//! widths and cell layout of tables. Pure functions over spans; no theme, no parsing.

use pulldown_cmark::Alignment;
use ratatui::style::Style;
use ratatui::text::Span;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// Spans of one visual line.
pub type Row = Vec<Span<'static>>;

/// The display width of spans.
pub fn width(spans: &[Span<'_>]) -> usize {
    spans.iter().map(|s| s.content.width()).sum()
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Collects visual lines, merging adjacent pieces of the same style.
struct Builder {
    rows: Vec<Row>,
    current: Row,
    used: usize,
    first: usize,
    rest: usize,
}

impl Builder {
    fn new(first: usize, rest: usize) -> Builder {
        Builder {
            rows: Vec::new(),
            current: Vec::new(),
            used: 0,
            first: first.max(1),
            rest: rest.max(1),
        }
    }

    fn limit(&self) -> usize {
        if self.rows.is_empty() {
            self.first
        } else {
            self.rest
        }
    }

    fn push(&mut self, text: &str, style: Style) {
        if text.is_empty() {
            return;
        }
        self.used += text.width();
        if let Some(last) = self.current.last_mut()
            && last.style == style
        {
            last.content.to_mut().push_str(text);
            return;
        }
        self.current.push(Span::styled(text.to_string(), style));
    }

    fn newline(&mut self) {
        self.rows.push(std::mem::take(&mut self.current));
        self.used = 0;
    }

    /// Places a piece by characters, starting new lines when the current one is full.
    fn push_chars(&mut self, text: &str, style: Style) {
        let mut piece = String::new();
        let mut piece_w = 0;
        for c in text.chars() {
            let w = char_width(c);
            if self.used + piece_w + w > self.limit() && (self.used > 0 || !piece.is_empty()) {
                self.push(&std::mem::take(&mut piece), style);
                piece_w = 0;
                self.newline();
            }
            piece.push(c);
            piece_w += w;
        }
        self.push(&piece, style);
    }

    fn finish(mut self) -> Vec<Row> {
        if !self.current.is_empty() || self.rows.is_empty() {
            self.rows.push(self.current);
        }
        self.rows
    }
}

/// Wraps spans at spaces into lines of `first` columns (the first line) and `rest` columns
/// (the others). Spaces at a break are dropped; a word longer than a line is broken by
/// characters. Always returns at least one (possibly empty) line.
pub fn wrap_words(spans: &[Span<'_>], first: usize, rest: usize) -> Vec<Row> {
    if width(spans) <= first.max(1) {
        return vec![
            spans
                .iter()
                .map(|s| Span::styled(s.content.to_string(), s.style))
                .collect(),
        ];
    }
    // Runs of spaces and of other characters; a word may run across spans of different
    // styles.
    let mut tokens: Vec<(&str, Style, bool)> = Vec::new();
    for span in spans {
        let mut text = span.content.as_ref();
        while !text.is_empty() {
            let is_space = text.starts_with(' ');
            let end = text
                .find(|c: char| (c == ' ') != is_space)
                .unwrap_or(text.len());
            let (piece, tail) = text.split_at(end);
            text = tail;
            tokens.push((piece, span.style, is_space));
        }
    }
    let mut b = Builder::new(first, rest);
    let mut i = 0;
    let mut first_word = true;
    while i < tokens.len() {
        let s0 = i;
        while i < tokens.len() && tokens[i].2 {
            i += 1;
        }
        let w0 = i;
        while i < tokens.len() && !tokens[i].2 {
            i += 1;
        }
        let (space, word) = (&tokens[s0..w0], &tokens[w0..i]);
        if word.is_empty() {
            break;
        }
        let space_w: usize = space.iter().map(|(s, _, _)| s.width()).sum();
        let word_w: usize = word.iter().map(|(s, _, _)| s.width()).sum();
        let at_start = b.used == 0;
        // Leading spaces are kept on the very first line only.
        let lead = if at_start && !(first_word && b.rows.is_empty()) {
            0
        } else {
            space_w
        };
        first_word = false;
        if b.used + lead + word_w <= b.limit() {
            if lead > 0 {
                for (s, st, _) in space {
                    b.push(s, *st);
                }
            }
            for (s, st, _) in word {
                b.push(s, *st);
            }
            continue;
        }
        if word_w <= b.rest && !at_start {
            b.newline();
            for (s, st, _) in word {
                b.push(s, *st);
            }
            continue;
        }
        // Longer than a line: break it by characters, after a space if there is room.
        if !at_start && b.used + space_w < b.limit() {
            b.push(" ", space.last().map_or(Style::default(), |(_, st, _)| *st));
        }
        for (s, st, _) in word {
            b.push_chars(s, *st);
        }
    }
    b.finish()
}

/// Wraps spans by characters into lines of `limit` columns (code keeps every space).
pub fn wrap_chars(spans: &[Span<'_>], limit: usize) -> Vec<Row> {
    if width(spans) <= limit.max(1) {
        return vec![
            spans
                .iter()
                .map(|s| Span::styled(s.content.to_string(), s.style))
                .collect(),
        ];
    }
    let mut b = Builder::new(limit, limit);
    for span in spans {
        b.push_chars(&span.content, span.style);
    }
    b.finish()
}

/// Cuts spans to at most `limit` columns.
pub fn clip(spans: Row, limit: usize) -> Row {
    if width(&spans) <= limit {
        return spans;
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in spans {
        let w = span.content.width();
        if used + w <= limit {
            used += w;
            out.push(span);
            continue;
        }
        let mut piece = String::new();
        for c in span.content.chars() {
            let cw = char_width(c);
            if used + cw > limit {
                break;
            }
            used += cw;
            piece.push(c);
        }
        if !piece.is_empty() {
            out.push(Span::styled(piece, span.style));
        }
        break;
    }
    out
}

/// Column widths for content of natural widths `natural`, in `room` columns (separators
/// already taken off): every column gets its natural width if all fit; otherwise the room
/// is shared fairly (narrow columns keep their width, wide ones share what is left).
pub fn fit_columns(natural: &[usize], room: usize) -> Vec<usize> {
    let n = natural.len();
    if n == 0 {
        return Vec::new();
    }
    if natural.iter().sum::<usize>() <= room {
        return natural.iter().map(|w| (*w).max(1)).collect();
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| natural[i]);
    let mut widths = vec![1; n];
    let mut left = room;
    for (k, &i) in order.iter().enumerate() {
        let share = left / (n - k);
        let w = natural[i].min(share).max(1);
        widths[i] = w;
        left = left.saturating_sub(w);
    }
    // What rounding left over goes to the columns that were cut, widest first.
    for &i in order.iter().rev() {
        if left == 0 {
            break;
        }
        let add = natural[i].saturating_sub(widths[i]).min(left);
        widths[i] += add;
        left -= add;
    }
    widths
}

/// Pads one line of a cell to `w` columns according to the column's alignment.
pub fn align(mut spans: Row, w: usize, alignment: Alignment) -> Row {
    let gap = w.saturating_sub(width(&spans));
    let (before, after) = match alignment {
        Alignment::Right => (gap, 0),
        Alignment::Center => (gap / 2, gap - gap / 2),
        Alignment::Left | Alignment::None => (0, gap),
    };
    if before > 0 {
        spans.insert(0, Span::raw(" ".repeat(before)));
    }
    if after > 0 {
        spans.push(Span::raw(" ".repeat(after)));
    }
    spans
}

/// Lays a table out in `room` columns: each row's cells wrapped in their column, columns
/// joined by ` │ `, a rule under the header. `header` says whether the first row is one.
pub fn table(
    rows: &[Vec<Row>],
    alignments: &[Alignment],
    header: bool,
    room: usize,
    rule_style: Style,
) -> Vec<Row> {
    let n = rows
        .iter()
        .map(Vec::len)
        .max()
        .unwrap_or(0)
        .max(alignments.len());
    if n == 0 {
        return Vec::new();
    }
    let mut natural = vec![0; n];
    for row in rows {
        for (c, cell) in row.iter().enumerate() {
            natural[c] = natural[c].max(width(cell));
        }
    }
    let separators = 3 * (n - 1);
    let widths = fit_columns(&natural, room.saturating_sub(separators).max(n));
    let mut out = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let empty = Vec::new();
        let cells: Vec<Vec<Row>> = (0..n)
            .map(|c| wrap_words(row.get(c).unwrap_or(&empty), widths[c], widths[c]))
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for k in 0..height {
            let mut line = Vec::new();
            for (c, cell) in cells.iter().enumerate() {
                if c > 0 {
                    line.push(Span::styled(" │ ", rule_style));
                }
                let part = cell.get(k).cloned().unwrap_or_default();
                let alignment = alignments.get(c).copied().unwrap_or(Alignment::None);
                line.extend(align(part, widths[c], alignment));
            }
            out.push(line);
        }
        if r == 0 && header {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(vec![Span::styled(rule.join("─┼─"), rule_style)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(rows: &[Row]) -> Vec<String> {
        rows.iter()
            .map(|r| r.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn words_wrap_at_spaces_with_wide_characters_counted_twice() {
        let rows = wrap_words(&[Span::raw("hello wide 世界世界 world")], 10, 10);
        assert_eq!(text(&rows), vec!["hello wide", "世界世界", "world"]);
        for r in &rows {
            assert!(width(r) <= 10);
        }
        let long = wrap_words(&[Span::raw("x".repeat(25))], 10, 10);
        assert_eq!(
            text(&long),
            vec!["x".repeat(10), "x".repeat(10), "x".repeat(5)]
        );
        let hanging = wrap_words(&[Span::raw("aaa bbb ccc ddd")], 7, 3);
        assert_eq!(text(&hanging), vec!["aaa bbb", "ccc", "ddd"]);
    }

    #[test]
    fn words_keep_their_styles_across_spans() {
        let bold = Style::new().add_modifier(ratatui::style::Modifier::BOLD);
        let rows = wrap_words(
            &[
                Span::raw("one "),
                Span::styled("two", bold),
                Span::raw("s three"),
            ],
            8,
            8,
        );
        assert_eq!(text(&rows), vec!["one twos", "three"]);
        assert_eq!(rows[0][1].style, bold);
    }

    #[test]
    fn chars_wrap_and_clip_respect_wide_characters() {
        let rows = wrap_chars(&[Span::raw("ab世界cd")], 3);
        assert_eq!(text(&rows), vec!["ab", "世", "界c", "d"]);
        let clipped = clip(vec![Span::raw("ab世界")], 5);
        assert_eq!(text(&[clipped]), vec!["ab世"]);
    }

    #[test]
    fn columns_share_the_room_fairly() {
        assert_eq!(fit_columns(&[3, 4], 20), vec![3, 4]);
        assert_eq!(fit_columns(&[3, 40, 30], 23), vec![3, 10, 10]);
        let w = fit_columns(&[5, 50, 50], 41);
        assert_eq!(w.iter().sum::<usize>(), 41);
        assert_eq!(w[0], 5);
    }
}
