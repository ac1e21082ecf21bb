//! The bars around the panes: the approval panel (a question, a note, or the keys that work
//! now, from the keymap), the message input, the status bar (shortened to fit, never cut in
//! the middle of what matters) and the help overlay (every binding of the keymap).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::app::{App, Busy, Focus};
use super::keymap::Action;
use super::keys::hints;
use super::view::{SPINNER, centered, pane_block, waiting_note};

/// Joins (key, what) hints into one line that fits `width`: the last ones give way to
/// `F1 more` when they do not fit; a hint is never cut in the middle.
pub fn hint_line(app: &App, hints: &[(String, &str)], width: usize) -> Line<'static> {
    let more = format!("{} more", app.keymap.label(Action::Help));
    let mut spans = Vec::new();
    let mut used = 0;
    for (i, (key, what)) in hints.iter().enumerate() {
        let piece = format!("{key} {what}").chars().count() + if i > 0 { 3 } else { 0 };
        let room_for_more = if i + 1 < hints.len() {
            more.chars().count() + 3
        } else {
            0
        };
        if used + piece + room_for_more > width {
            if hints[..i].iter().any(|(_, what)| *what == "help") {
                break;
            }
            if i > 0 {
                spans.push(Span::styled(" · ", app.theme.muted));
            }
            spans.push(Span::styled(more, app.theme.key));
            break;
        }
        if i > 0 {
            spans.push(Span::styled(" · ", app.theme.muted));
        }
        spans.push(Span::styled(key.clone(), app.theme.key));
        spans.push(Span::styled(format!(" {what}"), app.theme.text));
        used += piece;
    }
    Line::from(spans)
}

/// What the panel says: a question, a note, or the keys that work now.
fn panel_line(app: &App, width: usize, wide: bool) -> Line<'static> {
    if let Some(p) = &app.pending {
        let key = |a: Action| app.keymap.label(a);
        if let Some(confirm) = p.confirm {
            let text = match confirm {
                super::app::Confirm::Always => format!(
                    "Auto-run this block and all later ones? {} or y: yes · other keys: no",
                    key(Action::Always)
                ),
                super::app::Confirm::Discard => {
                    "Throw your edit away? y: yes · any other key: keep editing".to_string()
                }
            };
            return Line::styled(text, app.theme.warning.add_modifier(Modifier::BOLD));
        }
        if let Some(note) = &p.note {
            return Line::styled(note.clone(), app.theme.warning.add_modifier(Modifier::BOLD));
        }
        if p.editor.is_none() && !p.reason && app.focus != Focus::Code {
            let what = if p.outside.is_some() {
                format!("the sandbox stopped block {}", p.block.id)
            } else if app.tab != Focus::Code && !app.wide {
                match &p.block.caller {
                    Some(caller) => format!(
                        "a block from {} awaits your decision",
                        crate::safe_text::visible(&caller.name)
                    ),
                    None => format!("block {} of {} awaits your decision", p.index, p.of),
                }
            } else {
                "the block awaits your decision".to_string()
            };
            return Line::from(vec![
                Span::styled(
                    format!("{what}: "),
                    app.theme.warning.add_modifier(Modifier::BOLD),
                ),
                Span::styled(key(Action::ToggleDecision), app.theme.key),
                Span::styled(" goes to it (or click the code)", app.theme.text),
            ]);
        }
        // One line only (narrow layout): the verdict, shortened, before the keys.
        // Narrow, while the input answers the decision, its keys come first.
        if !wide
            && !p.reason
            && let Some(text) = verdict_text(app, true)
        {
            let text = shorten(&text, (width / 2).max(12));
            let used = text.chars().count() + 3;
            let mut spans = vec![
                Span::styled(text, verdict_style(app)),
                Span::styled(" │ ", app.theme.muted),
            ];
            spans.extend(hint_line(app, &hints(app), width.saturating_sub(used)).spans);
            return Line::from(spans);
        }
    }
    hint_line(app, &hints(app), width)
}

/// The waiting block's verdict in one line: its class, the explanation with the quoted text
/// and line, and the rule (`⚑ deletes · rm -rf build/ — deletes a directory tree (line 3) ·
/// rule: none`). Control characters are shown, never sent.
pub fn verdict_text(app: &App, narrow: bool) -> Option<String> {
    use crate::protocol::RuleDecision;
    let pending = app.pending.as_ref()?;
    if let Some(reason) = &pending.outside {
        // Narrow, the reason is above the code (the context strip).
        let text = if narrow {
            "⚠ sandbox stopped it".to_string()
        } else {
            format!("⚠ the sandbox stopped block {}: {reason}", pending.block.id)
        };
        return Some(crate::safe_text::visible_line(&text));
    }
    let (verdict, _) = app.verdicts.get(&pending.block.id)?;
    let rule = match &verdict.rule {
        Some(rule) => {
            let decision = match rule.decision {
                RuleDecision::Allow => "allow",
                RuleDecision::Ask => "ask",
                RuleDecision::Deny => "deny",
            };
            format!("rule: {decision} \"{}\"", rule.text)
        }
        None if verdict.possibly_denied => "rule: possibly denied (cannot see through it)".into(),
        None => "rule: none".into(),
    };
    // Narrow, the rule goes before the explanation, which is shortened first. A verdict
    // with nothing to explain (its summary is its class) says the class once.
    let class = verdict.highest.label();
    let summary = verdict.summary();
    let text = match (summary == class, narrow) {
        (true, _) => format!("⚑ {class} · {rule}"),
        (false, true) => format!("⚑ {class} · {rule} · {summary}"),
        (false, false) => format!("⚑ {class} · {summary} · {rule}"),
    };
    Some(crate::safe_text::visible_line(&text))
}

/// Read-only blocks are shown quietly; anything else as a warning.
fn verdict_style(app: &App) -> ratatui::style::Style {
    let quiet = app
        .pending
        .as_ref()
        .filter(|p| p.outside.is_none())
        .and_then(|p| app.verdicts.get(&p.block.id))
        .is_some_and(|(v, _)| v.highest == crate::protocol::RiskClass::ReadOnly);
    if quiet {
        app.theme.muted
    } else {
        app.theme.warning.add_modifier(Modifier::BOLD)
    }
}

/// The panel's height in the wide layout: a line more for a waiting block's verdict.
pub fn panel_height(app: &App) -> u16 {
    if verdict_text(app, false).is_some() {
        4
    } else {
        3
    }
}

pub(super) fn draw_panel(frame: &mut Frame, app: &App, area: Rect, bordered: bool) {
    let decision = app.ctx().decision;
    let width = if bordered {
        area.width.saturating_sub(2)
    } else {
        area.width
    } as usize;
    let mut lines = Vec::new();
    if bordered && let Some(text) = verdict_text(app, false) {
        lines.push(Line::styled(shorten(&text, width), verdict_style(app)));
    }
    lines.push(panel_line(app, width, bordered));
    let mut paragraph = Paragraph::new(lines);
    if bordered {
        // The decision's focus ring is the code pane's; the panel only names it.
        let title = if app.ctx().escalation {
            Line::styled(
                " Run outside the sandbox? ",
                app.theme.warning.add_modifier(Modifier::BOLD),
            )
        } else if decision {
            Line::styled(
                " Approve · the decision ",
                app.theme.focus.add_modifier(Modifier::BOLD),
            )
        } else if app.pending.is_some() {
            Line::styled(" Approve ", app.theme.warning)
        } else {
            Line::from(" Keys ")
        };
        paragraph = paragraph.block(pane_block(app, title, false));
    }
    frame.render_widget(paragraph, area);
}

pub(super) fn draw_input(frame: &mut Frame, app: &App, area: Rect) {
    let reason = app.pending.as_ref().is_some_and(|p| p.reason);
    let allow = app.pending.as_ref().and_then(|p| p.allow);
    let focused = app.focus == Focus::Input;
    let title = if let Some(target) = allow {
        match target {
            crate::protocol::RuleSource::User => {
                " Always allow → your config (Ctrl-P: the project's) · a prefix a line "
            }
            crate::protocol::RuleSource::Project => {
                " Always allow → the project's rules (Ctrl-P: yours) · a prefix a line "
            }
        }
    } else if reason {
        " Reason for skipping "
    } else if focused {
        " Input "
    } else {
        " Input · inactive "
    };
    let block = pane_block(app, title, focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if focused || !app.input.is_empty() {
        let mut input = app.input.clone();
        if !focused {
            input.set_style(app.theme.muted);
            input.set_cursor_style(app.theme.muted);
        }
        frame.render_widget(&input, inner);
    } else {
        let hint = if app.pending.is_some() && app.focus == Focus::Code {
            format!(
                "{} writes a message (the block waits)",
                app.keymap.label(Action::ToggleDecision)
            )
        } else {
            "Tab or a click writes a message".to_string()
        };
        frame.render_widget(Paragraph::new(Line::styled(hint, app.theme.muted)), inner);
    }
}

pub(super) fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    // The session cannot be saved: that stays in view until it can again.
    if let Some(trouble) = &app.store_trouble {
        let why = trouble
            .strip_prefix(crate::store::CANNOT_SAVE)
            .unwrap_or(trouble);
        let text = format!(" ⚠ NOT SAVED: {why}");
        frame.render_widget(
            Paragraph::new(Line::styled(
                text,
                app.theme
                    .warning
                    .add_modifier(Modifier::BOLD | Modifier::REVERSED),
            )),
            area,
        );
        return;
    }
    let model = if app.model.is_empty() {
        "no model"
    } else {
        &app.model
    };
    let state = match app.busy {
        Busy::Idle if app.pending.is_some() => "awaiting your decision".to_string(),
        Busy::Idle => "idle".to_string(),
        // With the code pane in another tab (80 columns), this says a block is coming.
        Busy::Thinking(_) => match &app.streaming_code {
            Some(code) => format!(
                "writing a block, {} line{}… {}",
                code.line_count(),
                if code.line_count() == 1 { "" } else { "s" },
                SPINNER[app.spinner % SPINNER.len()]
            ),
            None => format!("thinking… {}", SPINNER[app.spinner % SPINNER.len()]),
        },
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
    let mut approval = if let Some(sandbox) = &app.sandbox {
        format!("{} · {}", app.approval.name(), sandbox.label)
    } else {
        app.approval.name().to_string()
    };
    if let Some(host) = &app.connecting {
        approval.push_str(&format!(" · connecting to {host}…"));
    } else if app.executor != "local" {
        approval.push_str(&format!(" · on {}", app.executor));
    }
    let help = format!("{} help", app.keymap.label(Action::Help));
    let flash = app.flash.as_ref().map(|(m, _)| m.as_str());
    let text = status_text(
        area.width as usize,
        &StatusParts {
            model,
            approval: &approval,
            cwd: &app.cwd,
            tokens: &tokens,
            state: &state,
            help: &help,
            flash,
        },
    );
    let style = if flash.is_some() {
        app.theme.status.add_modifier(Modifier::BOLD)
    } else {
        app.theme.status
    };
    frame.render_widget(
        Paragraph::new(Line::styled(text, style)).style(app.theme.status),
        area,
    );
}

pub struct StatusParts<'a> {
    pub model: &'a str,
    pub approval: &'a str,
    pub cwd: &'a str,
    pub tokens: &'a str,
    pub state: &'a str,
    pub help: &'a str,
    pub flash: Option<&'a str>,
}

/// The status bar's text for `width` columns: what matters most stays whole (the state, a
/// message, the help key, the approval mode); the directory, the tokens and the model give
/// way, shortened with … before they are dropped.
pub fn status_text(width: usize, p: &StatusParts<'_>) -> String {
    let state = p.flash.unwrap_or(p.state);
    let fits = |parts: &[String]| format!(" {} ", parts.join(" · ")).chars().count() <= width;
    let build = |model: Option<String>, cwd: Option<String>, tokens: bool| {
        let mut parts = Vec::new();
        if let Some(m) = model {
            parts.push(m);
        }
        parts.push(p.approval.to_string());
        if let Some(c) = cwd {
            parts.push(c);
        }
        if tokens {
            parts.push(p.tokens.to_string());
        }
        parts.push(state.to_string());
        parts.push(p.help.to_string());
        parts
    };
    let tries = [
        build(
            Some(p.model.to_string()),
            Some(shorten_path(p.cwd, 30)),
            true,
        ),
        build(
            Some(p.model.to_string()),
            Some(shorten_path(p.cwd, 16)),
            true,
        ),
        build(
            Some(p.model.to_string()),
            Some(shorten_path(p.cwd, 16)),
            false,
        ),
        build(
            Some(shorten(p.model, 20)),
            Some(shorten_path(p.cwd, 12)),
            false,
        ),
        build(Some(shorten(p.model, 14)), None, false),
        build(None, None, false),
    ];
    for parts in &tries {
        if fits(parts) {
            return format!(" {} ", parts.join(" · "));
        }
    }
    shorten(&format!(" {state} · {} ", p.help), width)
}

/// `text` in at most `max` columns, with … when cut.
fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
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

/// The slash commands, for the help overlay.
const COMMANDS: [(&str, &str); 9] = [
    (
        "!cmd",
        "run cmd in the shell kernel; the model sees it next time",
    ),
    ("/reset /undo", "new conversation; drop the last exchange"),
    ("/model NAME", "talk to another model (provider/name)"),
    (
        "/sandbox MODE",
        "off, read-only, workspace-write, network on|off (restarts kernels)",
    ),
    (
        "/on HOST",
        "run kernels on an executor or ssh host; /on local: here (restarts)",
    ),
    (
        "/tokens /export",
        "token use; write the conversation as Markdown",
    ),
    ("/sessions", "browse, search and resume saved sessions"),
    ("/mcp", "your MCP servers ([mcp_servers]): state and tools"),
    ("/quit", "quit"),
];

/// The column where the help's descriptions start.
const HELP_KEYS: usize = 20;

/// The help overlay's lines at `width` columns: every binding of the keymap, by section,
/// then the commands; a description too long for the width goes on under itself.
pub fn help_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let key = |lines: &mut Vec<Line<'static>>, k: &str, what: &str| {
        // A long key label pushes its description on; it still wraps under the column.
        let used = (k.chars().count() + 1).max(HELP_KEYS);
        let first_room = width.saturating_sub(used).max(8);
        let room = width.saturating_sub(HELP_KEYS).max(8);
        for (i, piece) in wrap_words(what, first_room, room).into_iter().enumerate() {
            let lead = if i == 0 {
                Span::styled(format!("{k:<w$} ", w = used - 1), app.theme.key)
            } else {
                Span::raw(" ".repeat(HELP_KEYS))
            };
            lines.push(Line::from(vec![lead, Span::styled(piece, app.theme.text)]));
        }
    };
    let mut lines = Vec::new();
    let mut section = "";
    for (s, keys, what) in app.keymap.help() {
        if s != section {
            section = s;
            lines.push(Line::styled(s.to_string(), app.theme.accent));
        }
        key(&mut lines, &keys, what);
    }
    lines.push(Line::styled("Commands in the input", app.theme.accent));
    for (k, what) in COMMANDS {
        key(&mut lines, k, what);
    }
    lines
}

/// `text` cut at spaces into pieces of at most `first` columns, then `rest` (a word longer
/// than that is cut where it must be).
fn wrap_words(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut pieces = vec![String::new()];
    let mut room = first;
    for word in text.split(' ') {
        let mut word: Vec<char> = word.chars().collect();
        while let Some(piece) = pieces.last_mut() {
            let used = piece.chars().count();
            let gap = usize::from(used > 0);
            if used + gap + word.len() <= room {
                if gap > 0 {
                    piece.push(' ');
                }
                piece.extend(word.iter());
                break;
            }
            if used == 0 {
                // Longer than a whole line: what fits, and the rest on the next.
                let tail = word.split_off(room.min(word.len()));
                piece.extend(word.iter());
                word = tail;
                if word.is_empty() {
                    break;
                }
            }
            pieces.push(String::new());
            room = rest;
        }
    }
    pieces
}

/// The help overlay's widest.
pub(super) const HELP_WIDTH: usize = 96;

pub(super) fn draw_help(frame: &mut Frame, app: &App, area: Rect) {
    let width = area.width.min(HELP_WIDTH as u16);
    let lines = help_lines(app, width.saturating_sub(2) as usize);
    let r = centered(area, width, lines.len() as u16 + 2);
    frame.render_widget(Clear, r);
    let inner_rows = r.height.saturating_sub(2) as usize;
    app.help_view.set((lines.len(), inner_rows));
    let max = lines.len().saturating_sub(inner_rows);
    let top = app.help_scroll.min(max);
    let title = if max > 0 {
        format!(
            " Keys · lines {}–{} of {} · ↑↓ PgUp PgDn Home End · Esc closes ",
            top + 1,
            top + inner_rows,
            lines.len()
        )
    } else {
        " Keys · Esc closes ".to_string()
    };
    frame.render_widget(
        Paragraph::new(lines[top..].to_vec()).block(pane_block(app, title, true)),
        r,
    );
}
