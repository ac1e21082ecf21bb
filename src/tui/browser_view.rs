//! Drawing the session browser: the search box, the list (rows shortened at a word, with
//! `…`; a session not in the store whole marked `incomplete`), the preview (or the session
//! being read) at the first match of the search with the matches highlighted, the question
//! being asked (delete? resume over a waiting block?), and the keys, from the bindings table.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::app::App;
use super::browser::{Browser, Mode};
use super::highlight::visible;
use super::markdown::render_width;
use super::view::pane_block;
use crate::store::{Exported, format_time};
use crate::tui::theme::Theme;

pub fn draw(frame: &mut Frame, app: &App, browser: &Browser, area: Rect) {
    frame.render_widget(Clear, area);
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(3),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .split(area);
    let border = |title: String, focused: bool| pane_block(app, title, focused);
    let count = if browser.query.is_empty() {
        format!("{} sessions", browser.total)
    } else {
        format!("{} matching", browser.rows.len())
    };
    let mut search = vec![
        Span::styled("search: ", app.theme.muted),
        Span::styled(visible(&browser.query), app.theme.text),
        Span::styled(
            if browser.mode == Mode::List {
                "▏"
            } else {
                ""
            },
            app.theme.focus,
        ),
    ];
    if browser.query.is_empty() {
        search.push(Span::styled(
            "type to search messages, code and output",
            app.theme.muted,
        ));
    }
    let search = Line::from(search);
    frame.render_widget(
        Paragraph::new(search).block(border(format!(" Sessions · {count} "), true)),
        rows[0],
    );

    let body = if area.width >= 100 {
        Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(45), Constraint::Percentage(55)])
            .split(rows[1])
            .to_vec()
    } else {
        Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .split(rows[1])
            .to_vec()
    };
    browser.reading_size.set((
        rows[1].width.saturating_sub(2),
        rows[1].height.saturating_sub(2),
    ));
    if let Mode::Viewing(scroll) = browser.mode {
        draw_transcript(frame, app, browser, rows[1], Some(scroll));
    } else {
        draw_list(frame, app, browser, body[0]);
        draw_transcript(frame, app, browser, body[1], None);
    }

    // The keys that work now, from the bindings table, after what there is to say.
    let lead = match &browser.mode {
        Mode::Renaming(title) => Some(format!("new title: {}▏", visible(title))),
        Mode::List => browser.message.clone(),
        _ => None,
    };
    let hints = app.keymap.hints(&app.ctx());
    let mut spans = Vec::new();
    let mut width = rows[2].width as usize;
    if let Some(lead) = lead {
        let lead = shorten(&lead, width / 2);
        width = width.saturating_sub(lead.width() + 3);
        spans.push(Span::styled(lead, app.theme.text));
        spans.push(Span::styled(" · ", app.theme.muted));
    }
    spans.extend(super::bars::hint_line(app, &hints, width).spans);
    frame.render_widget(
        Paragraph::new(Line::from(spans)).style(app.theme.status),
        rows[2],
    );
    if matches!(browser.mode, Mode::ConfirmDelete | Mode::ConfirmResume) {
        draw_question(frame, app, browser, area, &hints);
    }
}

/// The question the browser asks, in a box over it: what it is about, and the keys that
/// answer it (from the bindings table).
fn draw_question(
    frame: &mut Frame,
    app: &App,
    browser: &Browser,
    area: Rect,
    hints: &[(String, &'static str)],
) {
    let session = browser
        .rows
        .get(browser.selected)
        .map(|r| format!("“{}” ({})", visible(&r.session.title), r.session.id))
        .unwrap_or_default();
    let warning = app.theme.warning.add_modifier(Modifier::BOLD);
    let (title, mut lines) = if browser.mode == Mode::ConfirmDelete {
        (
            " Delete? ",
            vec![Line::styled(
                format!("Delete the session {session} for good?"),
                warning,
            )],
        )
    } else {
        let what = match &app.pending {
            Some(p) => format!(
                "Block {} waits for your decision in this session: resuming leaves it \
                 undecided, and it will not run (it is skipped).",
                p.block.id
            ),
            None => "A block is running in this session: resuming stops it.".to_string(),
        };
        (
            " Resume? ",
            vec![
                Line::styled(what, warning),
                Line::styled(format!("Resume the session {session}?"), app.theme.text),
            ],
        )
    };
    lines.push(Line::default());
    let keys = hints
        .iter()
        .filter(|(_, what)| *what != "help")
        .map(|(key, what)| format!("{key}: {what}"))
        .collect::<Vec<_>>()
        .join(" · ");
    lines.push(Line::styled(keys, app.theme.key));
    lines.push(Line::styled(
        "Any other key answers no; what you type goes to the search.",
        app.theme.muted,
    ));
    let width = area.width.saturating_sub(4).min(72);
    let inner = width.saturating_sub(2).max(1) as usize;
    let height: usize = lines
        .iter()
        .map(|l| l.width().div_ceil(inner).max(1) + usize::from(l.width() > inner))
        .sum();
    let r = super::view::centered(area, width, height as u16 + 2);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: true })
            .block(pane_block(app, title, true)),
        r,
    );
}

fn draw_list(frame: &mut Frame, app: &App, browser: &Browser, area: Rect) {
    let block = pane_block(app, "", false);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let per_row = 2usize;
    let visible_rows = (inner.height as usize / per_row).max(1);
    let width = inner.width as usize;
    let first = browser
        .selected
        .saturating_sub(visible_rows.saturating_sub(1));
    let mut lines = Vec::new();
    if browser.rows.is_empty() {
        let text = if browser.loading {
            "loading…"
        } else if browser.query.is_empty() {
            "No sessions yet."
        } else {
            "Nothing matches."
        };
        lines.push(Line::styled(text, app.theme.muted));
    }
    for (i, row) in browser
        .rows
        .iter()
        .enumerate()
        .skip(first)
        .take(visible_rows)
    {
        let s = &row.session;
        let selected = i == browser.selected;
        let title_style = if selected {
            app.theme.focus.add_modifier(Modifier::REVERSED)
        } else {
            app.theme.text
        };
        let time = format!("{} ", format_time(s.updated_at));
        // A session not in the store whole says so before its title, which is shortened
        // first (as `sessions list` says INCOMPLETE).
        let mark = if s.incomplete.is_some() {
            INCOMPLETE_MARK
        } else {
            ""
        };
        let title = shorten(
            &visible(&s.title),
            width.saturating_sub(time.width() + mark.width()),
        );
        lines.push(Line::from(vec![
            Span::styled(time, app.theme.muted),
            Span::styled(mark, app.theme.warning.add_modifier(Modifier::BOLD)),
            Span::styled(title, title_style),
        ]));
        let detail = match &row.snippet {
            Some(snippet) => format!("  {}", visible(snippet)),
            None => format!(
                "  {} · {} · ran {} · skipped {}",
                if s.model.is_empty() { "-" } else { &s.model },
                s.cwd,
                s.blocks_run,
                s.blocks_skipped
            ),
        };
        lines.push(highlight_snippet(&shorten(&detail, width), app));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// What a row of a session not in the store whole shows before its title.
const INCOMPLETE_MARK: &str = "incomplete ";

/// What the preview of such a session says above it (its facts below say why).
const INCOMPLETE_NOTE: &str =
    "incomplete: some of this session could not be saved; what follows is what the store holds";

/// Shows `«match»` in a snippet with the match highlighted.
fn highlight_snippet(text: &str, app: &App) -> Line<'static> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('«') {
        let Some(close) = rest[open..].find('»') else {
            break;
        };
        spans.push(Span::styled(rest[..open].to_string(), app.theme.muted));
        spans.push(Span::styled(
            rest[open + '«'.len_utf8()..open + close].to_string(),
            app.theme.warning.add_modifier(Modifier::BOLD),
        ));
        rest = &rest[open + close + '»'.len_utf8()..];
    }
    spans.push(Span::styled(rest.to_string(), app.theme.muted));
    Line::from(spans)
}

/// The session being previewed (`scroll` None: at the first match) or read.
fn draw_transcript(
    frame: &mut Frame,
    app: &App,
    browser: &Browser,
    area: Rect,
    scroll: Option<usize>,
) {
    let title = match &browser.preview {
        Some(p) => format!(" {} · {} ", visible(&p.session.title), p.session.id),
        None => " Preview ".to_string(),
    };
    let block = pane_block(app, title, matches!(browser.mode, Mode::Viewing(_)));
    let inner = block.inner(area);
    let (lines, scroll) = match &browser.preview {
        Some(p) => {
            let lines = transcript_lines(&app.theme, p, &browser.query, inner.width);
            let scroll =
                scroll.unwrap_or_else(|| first_match(&lines, &browser.query, inner.height));
            (lines, scroll)
        }
        None => (
            vec![Line::styled(
                "Select a session to see it here.",
                app.theme.muted,
            )],
            0,
        ),
    };
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .scroll((scroll.min(u16::MAX as usize) as u16, 0)),
        area,
    );
}

/// `text` in at most `width` columns: whole words, then ` …` when some were left out (and
/// no separator such as `·` left dangling before it). Only a single word wider than
/// `width` is cut inside.
pub fn shorten(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    if width < 2 {
        return "…".chars().take(width).collect();
    }
    let budget = width - 2;
    let mut kept = String::new();
    for (i, word) in text.split(' ').enumerate() {
        let piece = if i == 0 {
            word.to_string()
        } else {
            format!(" {word}")
        };
        if kept.width() + piece.width() > budget {
            break;
        }
        kept.push_str(&piece);
    }
    let trimmed = kept
        .trim_end()
        .trim_end_matches(['·', '-', '–', ',', ':', ';', '|', '/', '('])
        .trim_end();
    if trimmed.trim().is_empty() {
        // Not even the first word fits: it is cut, as nothing else would show.
        let lead = text.len() - text.trim_start().len();
        let mut out = text[..lead].to_string();
        for c in text.trim_start().chars() {
            if out.width() + c.width().unwrap_or(0) + 1 > width {
                break;
            }
            out.push(c);
        }
        out.push('…');
        return out;
    }
    format!("{trimmed} …")
}

/// The search's words, lower-cased, as the matches to highlight.
fn terms(query: &str) -> Vec<String> {
    query
        .split_whitespace()
        .map(|t| t.trim_matches('"').to_lowercase())
        .filter(|t| !t.is_empty())
        .collect()
}

/// A session's transcript for a pane `width` columns wide: rendered Markdown with the
/// search's matches highlighted, wrapped at words to the width (so that a line number is
/// a row on screen).
pub fn transcript_lines(
    theme: &Theme,
    session: &Exported,
    query: &str,
    width: u16,
) -> Vec<Line<'static>> {
    let terms = terms(query);
    let mark = theme
        .warning
        .add_modifier(Modifier::BOLD | Modifier::REVERSED);
    let mut lines = Vec::new();
    if session.session.incomplete.is_some() {
        lines.extend(wrap(
            Line::styled(INCOMPLETE_NOTE, theme.warning.add_modifier(Modifier::BOLD)),
            width as usize,
        ));
        lines.push(Line::default());
    }
    lines.extend(
        render_width(&session.markdown(), theme, width)
            .into_iter()
            .flat_map(|line| wrap(mark_matches(line, &terms, mark), width as usize)),
    );
    lines
}

/// The row to scroll to so that the first match in the conversation (after the title and
/// the facts under it) shows in a pane `height` rows high: 0 when it shows without
/// scrolling (or there is no search or no match), else the match near the top.
pub fn first_match(lines: &[Line<'_>], query: &str, height: u16) -> usize {
    let terms = terms(query);
    if terms.is_empty() {
        return 0;
    }
    let text = |l: &Line<'_>| {
        l.spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect::<String>()
            .to_lowercase()
    };
    let body = lines
        .iter()
        .position(|l| text(l).contains("started: "))
        .map_or(0, |at| at + 1);
    lines
        .iter()
        .enumerate()
        .skip(body)
        .find(|(_, l)| {
            let t = text(l);
            terms.iter().any(|term| t.contains(term.as_str()))
        })
        .map_or(0, |(at, _)| {
            if at + 1 < height as usize {
                0
            } else {
                at.saturating_sub(2)
            }
        })
}

/// Where Enter opens a session read full-size (`size`: columns, rows): at its first match.
pub fn match_scroll(theme: &Theme, session: &Exported, query: &str, size: (u16, u16)) -> usize {
    first_match(
        &transcript_lines(theme, session, query, size.0),
        query,
        size.1,
    )
}

/// The line with every occurrence of a term (any case) in `mark`.
fn mark_matches(line: Line<'static>, terms: &[String], mark: Style) -> Line<'static> {
    if terms.is_empty() {
        return line;
    }
    let mut spans = Vec::new();
    for span in line.spans {
        let text = span.content.to_string();
        let lower: Vec<(usize, char)> = text
            .char_indices()
            .map(|(i, c)| (i, c.to_lowercase().next().unwrap_or(c)))
            .collect();
        let mut start = 0;
        let mut i = 0;
        while i < lower.len() {
            let hit = terms.iter().find_map(|term| {
                let n = term.chars().count();
                let matches = i + n <= lower.len()
                    && lower[i..i + n].iter().map(|(_, c)| *c).eq(term.chars());
                matches.then_some(n)
            });
            match hit {
                Some(n) => {
                    let from = lower[i].0;
                    let to = lower.get(i + n).map_or(text.len(), |(at, _)| *at);
                    if from > start {
                        spans.push(Span::styled(text[start..from].to_string(), span.style));
                    }
                    spans.push(Span::styled(
                        text[from..to].to_string(),
                        span.style.patch(mark),
                    ));
                    start = to;
                    i += n;
                }
                None => i += 1,
            }
        }
        if start < text.len() {
            spans.push(Span::styled(text[start..].to_string(), span.style));
        }
    }
    Line::from(spans).style(line.style)
}

/// The line in rows of at most `width` columns, broken between words (a word wider than a
/// row is broken inside). Spaces at a break are dropped.
fn wrap(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    if width == 0 || line.width() <= width {
        return vec![line];
    }
    let style = line.style;
    let mut rows: Vec<Vec<Span<'static>>> = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    let mut push_piece = |piece: &str, span_style: Style, rows: &mut Vec<Vec<Span<'static>>>| {
        let w = piece.width();
        if used + w > width && used > 0 {
            rows.push(std::mem::take(&mut row));
            used = 0;
            if piece.trim().is_empty() {
                return;
            }
        }
        if w <= width {
            row.push(Span::styled(piece.to_string(), span_style));
            used += w;
            return;
        }
        let mut part = String::new();
        for c in piece.chars() {
            let cw = c.width().unwrap_or(0);
            if used + part.width() + cw > width && (used > 0 || !part.is_empty()) {
                row.push(Span::styled(std::mem::take(&mut part), span_style));
                rows.push(std::mem::take(&mut row));
                used = 0;
            }
            part.push(c);
        }
        used += part.width();
        row.push(Span::styled(part, span_style));
    };
    for span in &line.spans {
        let text = span.content.as_ref();
        let mut from = 0;
        let mut in_space = None;
        for (i, c) in text.char_indices() {
            let space = c == ' ';
            if in_space.is_some_and(|s| s != space) {
                push_piece(&text[from..i], span.style, &mut rows);
                from = i;
            }
            in_space = Some(space);
        }
        if from < text.len() {
            push_piece(&text[from..], span.style, &mut rows);
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(row);
    }
    rows.into_iter()
        .map(|spans| Line::from(spans).style(style))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_keeps_whole_words_and_drops_dangling_separators() {
        let detail = "  openai/demo · /home/me · ran 1 · skipped 0";
        assert_eq!(shorten(detail, 80), detail);
        // From the width where the first word fits with " …".
        for width in 15..detail.width() {
            let short = shorten(detail, width);
            assert!(short.width() <= width, "{width}: {short:?}");
            assert!(short.ends_with(" …"), "{width}: {short:?}");
            let kept = short.trim_end_matches(" …");
            assert!(detail.starts_with(kept), "{width}: {short:?}");
            let next = detail[kept.len()..].chars().next();
            assert_eq!(next, Some(' '), "cut at a word: {width}: {short:?}");
            assert!(!kept.ends_with('·'), "{width}: {short:?}");
        }
        assert_eq!(shorten("ran 1 · skipped 0", 12), "ran 1 …");
        assert_eq!(shorten("supercalifragilistic", 6), "super…");
    }

    #[test]
    fn wrap_breaks_between_words_within_the_width() {
        let line = Line::from("the quick brown fox jumps over the lazy dog");
        let rows = wrap(line, 10);
        let texts: Vec<String> = rows
            .iter()
            .map(|l| {
                let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
                text.trim_end().to_string()
            })
            .collect();
        assert_eq!(
            texts,
            ["the quick", "brown fox", "jumps over", "the lazy", "dog"]
        );
    }
}
