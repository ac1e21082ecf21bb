//! Drawing: the layout for the terminal's size, and each pane. Wide terminals show chat,
//! code and terminal side by side; narrow ones show one of them under a tab row, and the
//! pane that needs the person (a block to approve, the editor) wins the space.

use std::hash::{Hash, Hasher};

use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::app::{App, Busy, Focus};
use super::highlight::{highlight, visible};
use super::keymap::Action;
use super::keys::hints;
use super::markdown::render;

/// The smallest terminal the workbench draws in.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 12;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// Where each part goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub tabs: Option<Rect>,
    pub chat: Option<Rect>,
    pub code: Option<Rect>,
    pub terminal: Option<Rect>,
    pub panel: Rect,
    pub input: Rect,
    pub status: Rect,
    pub wide: bool,
}

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
                Constraint::Length(3),
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
    let shown = if app.pending.is_some() {
        Focus::Code
    } else {
        app.tab
    };
    let content = parts[1];
    Areas {
        tabs: Some(parts[0]),
        chat: (shown == Focus::Chat || shown == Focus::Input).then_some(content),
        code: (shown == Focus::Code).then_some(content),
        terminal: (shown == Focus::Terminal).then_some(content),
        panel: parts[2],
        input: parts[3],
        status,
        wide,
    }
}

/// The code pane's height in the wide layout: enough for the block, at most half.
fn code_height(app: &App, total: u16) -> u16 {
    let lines = match (&app.pending, &app.shown_block, &app.streaming_code) {
        (Some(p), _, _) if p.editor.is_some() => total / 2,
        (Some(p), _, _) => p.code().lines().count() as u16 + if p.edited.is_some() { 6 } else { 2 },
        (None, _, Some((_, code))) => code.lines().count() as u16 + 2,
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
        return;
    }
    if let Some(tabs) = areas.tabs {
        draw_tabs(frame, app, tabs, areas);
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

pub(super) fn pane_block<'a>(app: &App, title: impl Into<Line<'a>>, focused: bool) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(if focused {
            app.theme.focus
        } else {
            app.theme.border
        })
        .title(title)
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
    for (pane, name) in [
        (Focus::Chat, "Chat"),
        (Focus::Code, "Code"),
        (Focus::Terminal, "Terminal"),
    ] {
        let style = if pane == current {
            app.theme.focus.add_modifier(Modifier::REVERSED)
        } else {
            app.theme.muted
        };
        spans.push(Span::styled(format!(" {name} "), style));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled("Tab switches", app.theme.muted));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_chat(frame: &mut Frame, app: &App, area: Rect) {
    let block = pane_block(app, " Chat ", app.focus == Focus::Chat);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if app.chat.entries.is_empty()
        && let Some(setup) = &app.setup
    {
        let lines = render(setup, &app.theme);
        frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
        return;
    }
    // The streaming message shows whole lines only, so that nothing jumps.
    let mut tail: Vec<Line<'static>> = Vec::new();
    if let Some(end) = app.streaming.rfind('\n') {
        tail.push(Line::from(Span::styled("oi", app.theme.assistant)));
        tail.extend(render(&app.streaming[..end], &app.theme));
    } else if !app.streaming.is_empty() || matches!(app.busy, Busy::Thinking(_)) {
        tail.push(Line::from(Span::styled("oi …", app.theme.assistant)));
    }
    let (lines, _) = app.chat.visible_lines(
        inner.width,
        inner.height as usize,
        app.chat_scroll,
        &tail,
        &app.theme,
    );
    frame.render_widget(Paragraph::new(lines), inner);
}

fn draw_code(frame: &mut Frame, app: &App, area: Rect) {
    let focused =
        app.focus == Focus::Code || app.pending.as_ref().is_some_and(|p| p.editor.is_some());
    if let Some(pending) = &app.pending {
        let language = pending
            .block
            .language
            .map_or(pending.block.language_tag.as_str(), |l| l.name());
        let position = format!("block {} of {}", pending.index, pending.of);
        if let Some(editor) = &pending.editor {
            let block = pane_block(
                app,
                format!(" Edit · {language} · {position} · Ctrl-S accepts, Esc abandons "),
                true,
            );
            let inner = block.inner(area);
            frame.render_widget(block, area);
            frame.render_widget(editor, inner);
            return;
        }
        if let Some(edited) = &pending.edited {
            let block = pane_block(
                app,
                format!(" Diff · {language} · {position} · proposed → edited "),
                focused,
            );
            let lines = diff_lines(app, &pending.block.code, edited);
            frame.render_widget(Paragraph::new(lines).block(block), area);
            return;
        }
        let title = format!(" Code · {language} · {position} · awaiting your decision ");
        draw_code_lines(frame, app, area, &pending.block.code, language, title, true);
        return;
    }
    if let Some((tag, code)) = &app.streaming_code {
        let language = tag.clone().unwrap_or_default();
        let title = format!(" Code · {language} · streaming… ");
        draw_code_lines(frame, app, area, code, &language, title, focused);
        return;
    }
    match &app.shown_block {
        Some((block, label)) => {
            let language = block
                .language
                .map_or(block.language_tag.as_str(), |l| l.name());
            let title = format!(" Code · {language} · {label} ");
            draw_code_lines(frame, app, area, &block.code, language, title, focused);
        }
        None => {
            let block = pane_block(app, " Code ", focused);
            frame.render_widget(
                Paragraph::new(Line::styled(
                    "Blocks the model proposes appear here.",
                    app.theme.muted,
                ))
                .block(block),
                area,
            );
        }
    }
}

fn draw_code_lines(
    frame: &mut Frame,
    app: &App,
    area: Rect,
    code: &str,
    language: &str,
    title: String,
    focused: bool,
) {
    let block = pane_block(app, title, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let lines = cached_highlight(app, code, language);
    let width = lines.len().to_string().len().max(2);
    let numbered: Vec<Line<'static>> = lines
        .into_iter()
        .enumerate()
        .take(inner.height as usize)
        .map(|(i, line)| {
            let mut spans = vec![Span::styled(format!("{:>width$} ", i + 1), app.theme.muted)];
            spans.extend(line.spans);
            Line::from(spans)
        })
        .collect();
    frame.render_widget(Paragraph::new(numbered), inner);
}

/// Highlights once per distinct code: the frame that follows reuses it.
fn cached_highlight(app: &App, code: &str, language: &str) -> Vec<Line<'static>> {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (code, language, super::highlight::ready()).hash(&mut hasher);
    let key = hasher.finish();
    let mut cache = app.code_cache.borrow_mut();
    if let Some((k, lines)) = cache.as_ref()
        && *k == key
    {
        return lines.clone();
    }
    let lines = highlight(code, language, &app.theme.syntax, app.theme.depth);
    *cache = Some((key, lines.clone()));
    lines
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
}

/// "waiting for input · Ctrl-T types into it" (or "type, then Enter" once in the pane).
fn waiting_note(app: &App) -> String {
    if app.focus == Focus::Terminal {
        "waiting for input · type, then Enter".to_string()
    } else {
        format!(
            "waiting for input · {} types into it",
            app.keymap.label(Action::FocusTerminal)
        )
    }
}

fn draw_panel(frame: &mut Frame, app: &App, area: Rect, bordered: bool) {
    let mut spans = Vec::new();
    for (i, (key, what)) in hints(app).into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", app.theme.muted));
        }
        spans.push(Span::styled(key, app.theme.key));
        spans.push(Span::styled(format!(" {what}"), app.theme.text));
    }
    let mut paragraph = Paragraph::new(Line::from(spans));
    if bordered {
        let title = if app.pending.is_some() {
            " Approve "
        } else {
            " Keys "
        };
        paragraph = paragraph.block(pane_block(app, title, app.pending.is_some()));
    }
    frame.render_widget(paragraph, area);
}

fn draw_input(frame: &mut Frame, app: &App, area: Rect) {
    let reason = app.pending.as_ref().is_some_and(|p| p.reason);
    let title = if reason {
        " Reason for skipping "
    } else {
        " Input "
    };
    let block = pane_block(app, title, app.focus == Focus::Input);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(&app.input, inner);
}

fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let model = if app.model.is_empty() {
        "no model"
    } else {
        &app.model
    };
    let state = match app.busy {
        Busy::Idle if app.pending.is_some() => "awaiting your decision".to_string(),
        Busy::Idle => "idle".to_string(),
        Busy::Thinking(_) => format!("thinking… {}", SPINNER[app.spinner % SPINNER.len()]),
        Busy::Running(..) if app.terminal.waiting() => waiting_note(app),
        Busy::Running(_, since) => format!(
            "running {:.1} s {}",
            since.elapsed().as_secs_f64(),
            SPINNER[app.spinner % SPINNER.len()]
        ),
    };
    let tokens = app.tokens.0 + app.tokens.1;
    let tokens = if tokens >= 1000 {
        format!("{:.1}k tok", tokens as f64 / 1000.0)
    } else {
        format!("{tokens} tok")
    };
    let text = format!(
        " {model} · {} · {} · {tokens} · {state} · F1 help ",
        if app.approval.is_empty() {
            "ask"
        } else {
            &app.approval
        },
        shorten_path(&app.cwd, 30),
    );
    frame.render_widget(
        Paragraph::new(Line::styled(text, app.theme.status)).style(app.theme.status),
        area,
    );
}

fn shorten_path(path: &str, max: usize) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    let path = match path.strip_prefix(&home) {
        Some(rest) if home.len() > 1 && (rest.is_empty() || rest.starts_with('/')) => {
            format!("~{rest}")
        }
        _ => path.to_string(),
    };
    if path.chars().count() <= max {
        path
    } else {
        let tail: String = path
            .chars()
            .rev()
            .take(max - 1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!("…{tail}")
    }
}

fn draw_help(frame: &mut Frame, app: &App, area: Rect) {
    let r = centered(area, 84, 23);
    frame.render_widget(Clear, r);
    let key = |k: &str, what: &str| {
        Line::from(vec![
            Span::styled(format!("{k:<18}"), app.theme.key),
            Span::styled(what.to_string(), app.theme.text),
        ])
    };
    let k = |a: Action| app.keymap.label(a);
    let lines = vec![
        Line::styled("When a block awaits your decision", app.theme.accent),
        key(&format!("{} / Enter", k(Action::Run)), "run it"),
        key(
            &k(Action::Edit),
            "edit it (Ctrl-S accepts and shows the diff, Esc abandons)",
        ),
        key(&k(Action::Skip), "skip it, and tell the model"),
        key(&k(Action::SkipReason), "skip it with a reason you type"),
        key(
            &k(Action::Always),
            "run it and auto-run the rest of this session",
        ),
        Line::styled("Always", app.theme.accent),
        key(
            "Ctrl-C",
            "interrupt the block or the reply; twice when idle, quit",
        ),
        key(&k(Action::Quit), "quit (asks first if a block runs)"),
        key("Tab / Shift-Tab", "move focus: input, chat, code, terminal"),
        key(
            &format!(
                "{} / {}",
                k(Action::FocusTerminal),
                k(Action::LeaveTerminal)
            ),
            "go to / leave the terminal (keys go to the program there)",
        ),
        key(
            &k(Action::Copy),
            "copy the focused block, output or message (OSC 52)",
        ),
        key(
            "PgUp / PgDn",
            "scroll the chat; the wheel scrolls the pane under it",
        ),
        key(
            "Alt/Shift-Enter",
            "newline in the input; Up/Down walk the history",
        ),
        Line::styled("In the input", app.theme.accent),
        key(
            "!cmd",
            "run cmd in the shell kernel; the model sees it next time",
        ),
        key("/reset /undo", "new conversation; drop the last exchange"),
        key("/model NAME", "talk to another model (provider/name)"),
        key(
            "/tokens /export",
            "token use; write the conversation as Markdown",
        ),
        key(
            "Ctrl-O /sessions",
            "browse, search and resume saved sessions",
        ),
        key("/quit", "quit"),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(pane_block(app, " Keys · Esc closes ", true)),
        r,
    );
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}
