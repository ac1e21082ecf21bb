//! Drawing the session browser: the search box, the list, the preview (or the session being
//! read), and the keys.

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::app::App;
use super::browser::{Browser, Mode};
use super::highlight::visible;
use super::markdown::render;
use super::view::pane_block;
use crate::store::format_time;

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
    let search = Line::from(vec![
        Span::styled("search: ", app.theme.muted),
        Span::styled(visible(&browser.query), app.theme.text),
        Span::styled(
            if browser.mode == Mode::Searching {
                "▏"
            } else {
                ""
            },
            app.theme.focus,
        ),
    ]);
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
    if let Mode::Viewing(scroll) = browser.mode {
        draw_transcript(frame, app, browser, rows[1], scroll);
    } else {
        draw_list(frame, app, browser, body[0]);
        draw_transcript(frame, app, browser, body[1], 0);
    }

    let footer = match &browser.mode {
        Mode::List => "/ search · ↑↓ PgUp PgDn move · Enter read · r resume · x export Markdown · d delete · R rename · Esc close".to_string(),
        Mode::Searching => "typing searches messages, code and output · Enter or ↓ goes to the results · Esc clears".to_string(),
        Mode::Viewing(_) => "↑↓ PgUp PgDn scroll · r resume · Esc back".to_string(),
        Mode::ConfirmDelete => "Delete this session for good? y deletes, any other key keeps it".to_string(),
        Mode::Renaming(title) => format!("new title: {}▏ (Enter saves, Esc cancels)", visible(title)),
    };
    let footer = match &browser.message {
        Some(m) if browser.mode == Mode::List => format!("{m} · {footer}"),
        _ => footer,
    };
    frame.render_widget(
        Paragraph::new(Line::styled(footer, app.theme.status)).style(app.theme.status),
        rows[2],
    );
}

fn draw_list(frame: &mut Frame, app: &App, browser: &Browser, area: Rect) {
    let block = pane_block(app, "", false);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let per_row = 2usize;
    let visible_rows = (inner.height as usize / per_row).max(1);
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
        lines.push(Line::from(vec![
            Span::styled(format!("{} ", format_time(s.updated_at)), app.theme.muted),
            Span::styled(visible(&s.title), title_style),
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
        lines.push(highlight_snippet(&detail, app));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

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

fn draw_transcript(frame: &mut Frame, app: &App, browser: &Browser, area: Rect, scroll: usize) {
    let title = match &browser.preview {
        Some(p) => format!(" {} · {} ", visible(&p.session.title), p.session.id),
        None => " Preview ".to_string(),
    };
    let block = pane_block(app, title, matches!(browser.mode, Mode::Viewing(_)));
    let lines = match &browser.preview {
        Some(p) => render(&p.markdown(), &app.theme),
        None => vec![Line::styled(
            "Select a session to see it here.",
            app.theme.muted,
        )],
    };
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll.min(u16::MAX as usize) as u16, 0)),
        area,
    );
}
