//! Drawing: the layout for the terminal's size, and each pane. Wide terminals show chat,
//! code and terminal side by side; narrow ones show one of them under a tab row, and the
//! pane that needs the person (a block to approve, the editor) wins the space.

use std::hash::{Hash, Hasher};

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};

use super::app::{App, Busy, Focus};
use super::bars::{draw_help, draw_input, draw_panel, draw_status};
use super::highlight::visible;
use super::keymap::Action;
use super::markdown::render_width;
use super::theme::Theme;

/// The smallest terminal the workbench draws in.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 12;

pub(super) const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Where each part goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Areas {
    pub tabs: Option<Rect>,
    pub chat: Option<Rect>,
    pub code: Option<Rect>,
    pub terminal: Option<Rect>,
    pub panel: Rect,
    pub input: Rect,
    pub status: Rect,
    pub wide: bool,
    /// The narrow layout's tab labels, for clicks.
    pub tab_labels: Vec<(Focus, Rect)>,
    /// The narrow code tab's strip with the end of the model's message.
    pub context: Option<Rect>,
}

/// The narrow layout's tabs, in order, with their labels.
const TABS: [(Focus, &str); 3] = [
    (Focus::Chat, "Chat"),
    (Focus::Code, "Code"),
    (Focus::Terminal, "Terminal"),
];

pub fn layout(area: Rect, app: &App) -> Areas {
    let input_height = (app.input.lines().len() as u16 + 2).clamp(3, 8);
    let wide = area.width >= 110 && area.height >= 24;
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(1), Constraint::Length(1)])
        .split(area);
    let (body, status) = (rows[0], rows[1]);
    if wide {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(44), Constraint::Percentage(56)])
            .split(body);
        let left = Layout::default()
            .direction(Direction::Vertical)
            .constraints([Constraint::Min(3), Constraint::Length(input_height)])
            .split(cols[0]);
        let code_height = code_height(app, cols[1].height);
        let right = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(code_height),
                Constraint::Min(3),
                Constraint::Length(super::bars::panel_height(app)),
            ])
            .split(cols[1]);
        return Areas {
            tabs: None,
            chat: Some(left[0]),
            code: Some(right[0]),
            terminal: Some(right[1]),
            panel: right[2],
            input: left[1],
            status,
            wide,
            tab_labels: Vec::new(),
            context: None,
        };
    }
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
            Constraint::Length(input_height),
        ])
        .split(body);
    let shown = app.tab;
    let mut content = parts[1];
    // Above a block that waits, the end of the model's message: why it wants to run it.
    let mut context = None;
    if shown == Focus::Code
        && app.pending.as_ref().is_some_and(|p| p.editor.is_none())
        && (last_message(app).is_some() || app.ctx().escalation)
        && content.height >= 12
    {
        let strip = 3.min(content.height / 4);
        context = Some(Rect::new(content.x, content.y, content.width, strip));
        content = Rect::new(
            content.x,
            content.y + strip,
            content.width,
            content.height - strip,
        );
    }
    let mut tab_labels = Vec::new();
    let mut x = parts[0].x;
    for (pane, name) in TABS {
        let width = tab_label(app, pane, name).chars().count() as u16;
        tab_labels.push((pane, Rect::new(x, parts[0].y, width, 1)));
        x += width + 1;
    }
    Areas {
        tabs: Some(parts[0]),
        chat: (shown == Focus::Chat || shown == Focus::Input).then_some(content),
        code: (shown == Focus::Code).then_some(content),
        terminal: (shown == Focus::Terminal).then_some(content),
        panel: parts[2],
        input: parts[3],
        status,
        wide,
        tab_labels,
        context,
    }
}

/// The model's last message, if there is one.
fn last_message(app: &App) -> Option<&str> {
    app.chat.entries.iter().rev().find_map(|e| match e {
        super::chat::Entry::Assistant(t) => Some(t.as_str()),
        _ => None,
    })
}

/// A tab's label: its name, with a mark when it needs the person (`●`), or when something
/// new came to it while it was not in front (`•`, until it is visited).
fn tab_label(app: &App, pane: Focus, name: &str) -> String {
    let waits = pane == Focus::Code && app.pending.is_some() && app.tab != Focus::Code;
    let running = pane == Focus::Terminal
        && matches!(app.busy, Busy::Running(..))
        && app.tab != Focus::Terminal;
    if waits {
        format!(" {name} ● awaits you ")
    } else if running {
        format!(" {name} ● ")
    } else if app.unseen.contains(&pane) && app.tab != pane {
        format!(" {name} • ")
    } else {
        format!(" {name} ")
    }
}

/// The code pane's height in the wide layout: enough for the block, at most half.
fn code_height(app: &App, total: u16) -> u16 {
    let lines = match (&app.pending, &app.shown_block, &app.streaming_code) {
        (Some(p), _, _) if p.editor.is_some() => total / 2,
        (Some(p), _, _) => {
            match &p.edited {
                Some(edited) => cached_diff(app, p, edited).len(),
                None => p.content_lines(),
            }
            .min(u16::MAX as usize - 2) as u16
                + 2
        }
        (None, _, Some(code)) => code.line_count().min(u16::MAX as usize - 2) as u16 + 2,
        (None, Some((b, _)), _) => b.code.lines().count() as u16 + 2,
        _ => 5,
    };
    lines.clamp(5, total / 2)
}

/// The terminal pane's inner size (for the emulator and the PTYs).
pub fn terminal_inner(areas: &Areas) -> Option<(u16, u16)> {
    areas
        .terminal
        .map(|r| (r.height.saturating_sub(2), r.width.saturating_sub(2)))
}

pub fn draw(frame: &mut Frame, app: &App, areas: &Areas) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let message = format!(
            "oi-tui needs a terminal of at least {MIN_WIDTH}×{MIN_HEIGHT}; this one is {}×{}.",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(message).wrap(Wrap { trim: true }), area);
        return;
    }
    if let Some(browser) = &app.browser {
        super::browser_view::draw(frame, app, browser, area);
    } else {
        draw_panes(frame, app, areas);
    }
    if app.help {
        draw_help(frame, app, area);
    }
    if app.confirm_quit {
        let r = centered(area, 50, 5);
        frame.render_widget(Clear, r);
        frame.render_widget(
            Paragraph::new("A block is running. Quit anyway? (y / any other key)")
                .wrap(Wrap { trim: true })
                .block(pane_block(app, "Quit?", true)),
            r,
        );
    }
}

/// The workbench's panes and bars (and the image viewer over them).
fn draw_panes(frame: &mut Frame, app: &App, areas: &Areas) {
    let area = frame.area();
    if let Some(tabs) = areas.tabs {
        draw_tabs(frame, app, tabs, areas);
    }
    if let Some(r) = areas.context {
        draw_context(frame, app, r);
    }
    if let Some(r) = areas.chat {
        draw_chat(frame, app, r);
    }
    if let Some(r) = areas.code {
        draw_code(frame, app, r);
    }
    if let Some(r) = areas.terminal {
        draw_terminal(frame, app, r);
    }
    draw_panel(frame, app, areas.panel, areas.wide);
    draw_input(frame, app, areas.input);
    draw_status(frame, app, areas.status);
    if app.images.viewer.is_some() {
        super::image_view::draw_viewer(frame, app, area);
    }
}

/// A pane's frame: the focused one (there is one) thick, in the focus colour, its title
/// marked; the others thin and quiet.
pub(super) fn pane_block<'a>(app: &App, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    pane_frame(&app.theme, title, focused)
}

/// The same from a theme alone, for panes that draw themselves.
pub fn pane_frame<'a>(theme: &Theme, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    let title: Line<'a> = title.into();
    if focused {
        let mut spans = vec![Span::styled("▶", theme.focus)];
        spans.extend(title.spans);
        Block::default()
            .borders(Borders::ALL)
            .border_type(BorderType::Thick)
            .border_style(theme.focus)
            .title(Line::from(spans).style(theme.focus.add_modifier(Modifier::BOLD)))
    } else {
        Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border)
            .title(title)
    }
}

fn draw_tabs(frame: &mut Frame, app: &App, area: Rect, areas: &Areas) {
    let current = if areas.code.is_some() {
        Focus::Code
    } else if areas.terminal.is_some() {
        Focus::Terminal
    } else {
        Focus::Chat
    };
    let mut spans = Vec::new();
    for (pane, name) in TABS {
        let label = tab_label(app, pane, name);
        let style = if pane == current {
            app.theme.focus.add_modifier(Modifier::REVERSED)
        } else if label.contains('●') {
            app.theme.warning.add_modifier(Modifier::BOLD)
        } else if label.contains('•') {
            app.theme.accent.add_modifier(Modifier::BOLD)
        } else {
            app.theme.muted
        };
        spans.push(Span::styled(label, style));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled("Tab / click switches", app.theme.muted));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The end of the model's message, above a waiting block in the narrow code tab; above a
/// block the sandbox stopped, why it looks stopped.
fn draw_context(frame: &mut Frame, app: &App, area: Rect) {
    if let Some(reason) = app.pending.as_ref().and_then(|p| p.outside.as_ref()) {
        let text = crate::safe_text::visible_line(&format!("⚠ the sandbox stopped it: {reason}"));
        let line = Line::styled(text, app.theme.warning);
        let shown: Vec<Line<'static>> =
            super::markdown::wrap(&[line], area.width.saturating_sub(1))
                .into_iter()
                .take(area.height as usize)
                .collect();
        frame.render_widget(Paragraph::new(shown), area);
        return;
    }
    let Some(text) = last_message(app) else {
        return;
    };
    let lines: Vec<Line<'static>> = render_width(text, &app.theme, area.width.saturating_sub(3))
        .into_iter()
        .filter(|l| !l.to_string().trim().is_empty())
        .collect();
    let keep = area.height as usize;
    let mut shown: Vec<Line<'static>> = lines[lines.len().saturating_sub(keep)..].to_vec();
    if let Some(first) = shown.first_mut() {
        first
            .spans
            .insert(0, Span::styled("oi ", app.theme.assistant));
    }
    frame.render_widget(Paragraph::new(shown).style(app.theme.muted), area);
}

fn draw_chat(frame: &mut Frame, app: &App, area: Rect) {
    let block = pane_block(app, " Chat ", app.focus == Focus::Chat);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if app.chat.entries.is_empty()
        && let Some(setup) = &app.setup
    {
        let lines = render_width(setup, &app.theme, inner.width);
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    }
    // The streaming message, every character as it arrives; finished blocks are cached.
    let mut tail: Vec<Line<'static>> = Vec::new();
    if !app.streaming.is_empty() {
        tail.push(Line::from(Span::styled("oi", app.theme.assistant)));
        tail.extend(
            app.stream_view
                .lines(&app.streaming, &app.theme, inner.width),
        );
    } else if matches!(app.busy, Busy::Thinking(_)) {
        tail.push(Line::from(Span::styled("oi …", app.theme.assistant)));
    }
    // What the person sent that waits for the next request, marked, below everything.
    tail.extend(app.chat.queued_lines(&app.theme));
    let (lines, _) = app
        .chat
        .visible_lines(inner.width, inner.height as usize, &tail, &app.theme);
    frame.render_widget(Paragraph::new(lines), inner);
    let new = app.chat.new_rows();
    // Only when there is somewhere to return to: scrolled up, and more than fits.
    if app.chat.scrolled_away() {
        let note = if new > 0 {
            format!(" ↓ {new} new · End returns ")
        } else {
            " scrolled · End returns ".to_string()
        };
        border_note(frame, app, area, note);
    }
}

/// A note on the bottom border of a pane, on the right (`lines 1–27 of 61 ↓`, `↓ 3 new`).
fn border_note(frame: &mut Frame, app: &App, area: Rect, note: String) {
    let width = note.chars().count() as u16;
    if area.width > width + 2 && area.height > 0 {
        let r = Rect::new(
            area.x + area.width - width - 1,
            area.y + area.height - 1,
            width,
            1,
        );
        frame.render_widget(Paragraph::new(Line::styled(note, app.theme.warning)), r);
    }
}

/// How the code pane names a block, and the language its text is coloured as: a call of an
/// MCP tool shows the tool and its server, its arguments coloured as JSON.
fn block_label(block: &crate::protocol::ProposedBlock) -> (String, String) {
    match &block.tool {
        Some(tool) => (
            format!("tool {} of MCP server {}", tool.tool, tool.server),
            "json".to_string(),
        ),
        None => (
            block.language_name().to_string(),
            block.language_name().to_string(),
        ),
    }
}

fn draw_code(frame: &mut Frame, app: &App, area: Rect) {
    let focused = app.focus == Focus::Code;
    if let Some(pending) = &app.pending {
        let (shown, language) = block_label(&pending.block);
        let position = pending.position();
        if let Some(editor) = &pending.editor {
            let block = pane_block(
                app,
                format!(" Edit · {shown} · {position} · Ctrl-S accepts, Esc abandons "),
                true,
            );
            let inner = block.inner(area);
            frame.render_widget(block, area);
            frame.render_widget(editor, inner);
            return;
        }
        let (title, lines, numbered) = match &pending.edited {
            Some(edited) => (
                format!(" Diff · {shown} · {position} · proposed → edited "),
                cached_diff(app, pending, edited),
                false,
            ),
            None => (
                format!(" Code · {shown} · {position} · awaiting your decision "),
                app.code_cache
                    .highlighted(&pending.block.code, &language, &app.theme),
                true,
            ),
        };
        let styled = app.code_cache.coloured();
        let content = super::code::Content {
            key: pending.content_key(),
            lines,
            numbered,
            styled,
            theme: &app.theme,
        };
        draw_code_content(frame, app, area, title, content, focused);
        return;
    }
    if let Some(code) = &app.streaming_code {
        let language = code.language.clone().unwrap_or_default();
        let block = pane_block(app, format!(" Code · {language} · streaming… "), focused);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let position = code.draw(frame, inner, &app.theme);
        if !position.is_empty() {
            border_note(frame, app, area, format!(" {position} "));
        }
        return;
    }
    let (title, code, language) = if let Some((block, label)) = &app.shown_block {
        let (shown, language) = block_label(block);
        (format!(" Code · {shown} · {label} "), &block.code, language)
    } else {
        let block = pane_block(app, " Code ", focused);
        frame.render_widget(
            Paragraph::new(Line::styled(
                "Blocks the model proposes appear here.",
                app.theme.muted,
            ))
            .block(block),
            area,
        );
        return;
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (code, &language).hash(&mut hasher);
    let lines = app.code_cache.highlighted(code, &language, &app.theme);
    let content = super::code::Content {
        key: hasher.finish(),
        lines,
        numbered: true,
        styled: app.code_cache.coloured(),
        theme: &app.theme,
    };
    draw_code_content(frame, app, area, title, content, focused);
}

fn draw_code_content(
    frame: &mut Frame,
    app: &App,
    area: Rect,
    title: String,
    content: super::code::Content<'_>,
    focused: bool,
) {
    let block = pane_block(app, title, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let position = app.code.draw(frame, inner, content);
    if !position.is_empty() {
        border_note(frame, app, area, format!(" {position} "));
    }
}

/// The diff of an edited block, made once per edit.
fn cached_diff(app: &App, pending: &super::app::Pending, edited: &str) -> super::code_cache::Lines {
    app.code_cache.lines_for(pending.content_key(), || {
        diff_lines(app, &pending.block.code, edited)
    })
}

/// The unified diff between the proposed and the edited code, coloured.
pub fn diff_lines(app: &App, before: &str, after: &str) -> Vec<Line<'static>> {
    let diff = similar::TextDiff::from_lines(before, after);
    let mut lines = Vec::new();
    for change in diff.iter_all_changes() {
        let text = visible(change.value().trim_end_matches('\n'));
        let (sign, style) = match change.tag() {
            similar::ChangeTag::Delete => ("-", app.theme.diff_remove),
            similar::ChangeTag::Insert => ("+", app.theme.diff_add),
            similar::ChangeTag::Equal => (" ", app.theme.muted),
        };
        lines.push(Line::styled(format!("{sign} {text}"), style));
    }
    lines
}

fn draw_terminal(frame: &mut Frame, app: &App, area: Rect) {
    let running = matches!(app.busy, Busy::Running(..));
    let mut title = match app.busy {
        Busy::Running(id, since) => format!(
            "Terminal · #{id} · running {:.1} s {}",
            since.elapsed().as_secs_f64(),
            SPINNER[app.spinner % SPINNER.len()]
        ),
        _ => "Terminal".to_string(),
    };
    if running && app.terminal.waiting() {
        title.push_str(&format!(" · {}", waiting_note(app)));
    }
    if app.focus == Focus::Terminal {
        title.push_str(&format!(
            " · {} leaves",
            app.keymap.label(Action::LeaveTerminal)
        ));
    }
    let focused = app.focus == Focus::Terminal;
    app.terminal
        .render(frame, area, &app.theme, focused, &title, running);
    let inner = Rect::new(
        area.x + 1,
        area.y + 1,
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    );
    super::image_view::draw_inline(frame, app, inner);
}

/// "waiting for input · Ctrl-T types into it" (or "type, then Enter" once in the pane).
pub(super) fn waiting_note(app: &App) -> String {
    if app.focus == Focus::Terminal {
        "waiting for input · type, then Enter".to_string()
    } else {
        format!(
            "waiting for input · {} types into it",
            app.keymap.label(Action::FocusTerminal)
        )
    }
}

pub(super) fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}
