//! Keys and the mouse: what each one does in each state. The keys that work right now are
//! also listed by `hints()`, for the approval panel and the help overlay.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use tui_textarea::TextArea;

use super::app::{App, Busy, Effect, Focus, new_input};
use super::chat::Entry;
use super::keymap::Action;
use super::terminal::TerminalKey;
pub use super::terminal::key_bytes;
use crate::protocol::{Decision, Op};

/// A second Ctrl-C within this long quits (when nothing runs).
const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

fn ctrl(key: &KeyEvent, c: char) -> bool {
    key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char(c)
}

impl App {
    pub(super) fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        if self.help {
            if matches!(
                key.code,
                KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::F(1)
            ) {
                self.help = false;
            }
            return Vec::new();
        }
        if self.confirm_quit {
            self.confirm_quit = false;
            if matches!(key.code, KeyCode::Char('y') | KeyCode::Enter)
                || self.keymap.is(Action::Quit, &key)
            {
                return vec![Effect::Quit];
            }
            return Vec::new();
        }
        if self.keymap.is(Action::Quit, &key) {
            if matches!(self.busy, Busy::Running(..)) {
                self.confirm_quit = true;
                return Vec::new();
            }
            return vec![Effect::Quit];
        }
        if ctrl(&key, 'c') {
            if self.browser.is_some() {
                self.browser = None;
                return Vec::new();
            }
            return self.ctrl_c();
        }
        if let Some(effects) = self.browser_key(&key) {
            return effects;
        }
        if ctrl(&key, 'o') {
            self.open_browser();
            return Vec::new();
        }
        if self.keymap.is(Action::FocusTerminal, &key)
            && !self
                .pending
                .as_ref()
                .is_some_and(|p| p.editor.is_some() || p.reason)
        {
            self.focus = Focus::Terminal;
            self.tab = Focus::Terminal;
            return Vec::new();
        }
        // The terminal pane takes every other key while it has focus; Ctrl-G leaves it.
        if self.focus == Focus::Terminal {
            if self.keymap.is(Action::LeaveTerminal, &key) {
                self.focus = Focus::Input;
                return Vec::new();
            }
            let running = matches!(self.busy, Busy::Running(..));
            return match self.terminal.handle_key(&key, running) {
                TerminalKey::Send(data) => vec![Effect::Op(Op::Input { data })],
                TerminalKey::Leave => {
                    self.focus = Focus::Input;
                    Vec::new()
                }
                TerminalKey::Consumed | TerminalKey::Ignored => Vec::new(),
            };
        }
        if self.keymap.is(Action::Help, &key) {
            self.help = true;
            return Vec::new();
        }
        if self.keymap.is(Action::Copy, &key) {
            return self.copy_focused();
        }
        if let Some(effects) = self.pending_key(&key) {
            return effects;
        }
        match key.code {
            KeyCode::Tab => {
                self.cycle_focus(1);
                return Vec::new();
            }
            KeyCode::BackTab => {
                self.cycle_focus(-1);
                return Vec::new();
            }
            _ => {}
        }
        match self.focus {
            Focus::Input => self.input_key(key),
            Focus::Chat => {
                if key.code == KeyCode::Char('?') {
                    self.help = true;
                } else {
                    self.chat_scroll = scroll(self.chat_scroll, &key);
                }
                Vec::new()
            }
            Focus::Code | Focus::Terminal => {
                if key.code == KeyCode::Char('?') {
                    self.help = true;
                }
                Vec::new()
            }
        }
    }

    fn ctrl_c(&mut self) -> Vec<Effect> {
        if let Some(p) = &mut self.pending
            && (p.editor.is_some() || p.reason)
        {
            p.editor = None;
            p.reason = false;
            self.input = new_input();
            return Vec::new();
        }
        // A turn under way (even between a decision and its block's start) is interrupted.
        if self.busy != Busy::Idle || self.pending.is_some() || self.in_turn {
            self.chat.push(Entry::Notice("interrupting…".into()));
            return vec![Effect::Op(Op::Interrupt)];
        }
        if !self.input.is_empty() {
            self.input = new_input();
            return Vec::new();
        }
        let now = Instant::now();
        if self
            .last_ctrl_c
            .is_some_and(|t| now.duration_since(t) < DOUBLE_CTRL_C)
        {
            return vec![Effect::Quit];
        }
        self.last_ctrl_c = Some(now);
        self.chat.push(Entry::Notice(
            "press Ctrl-C again within 2 s to quit".into(),
        ));
        Vec::new()
    }

    /// Keys while a block waits for a decision. None: not handled here.
    fn pending_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        let pending = self.pending.as_mut()?;
        let id = pending.block.id;
        if let Some(editor) = &mut pending.editor {
            if ctrl(key, 's') {
                let code = editor.lines().join("\n");
                pending.editor = None;
                pending.edited = (code != pending.block.code).then_some(code);
            } else if key.code == KeyCode::Esc {
                pending.editor = None;
            } else {
                editor.input(*key);
            }
            return Some(Vec::new());
        }
        if pending.reason {
            match key.code {
                KeyCode::Esc => {
                    pending.reason = false;
                    self.input = new_input();
                }
                KeyCode::Enter => {
                    let reason = self.input.lines().join("\n");
                    self.input = new_input();
                    self.pending = None;
                    return Some(vec![Effect::Op(Op::Decision {
                        block_id: id,
                        decision: Decision::Skip {
                            reason: Some(reason).filter(|r| !r.trim().is_empty()),
                        },
                    })]);
                }
                _ => {
                    self.input.input(*key);
                }
            }
            return Some(Vec::new());
        }
        // Approval keys work unless the person is typing a message.
        if self.focus == Focus::Input && !self.input.is_empty() {
            return None;
        }
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return None;
        }
        let keymap = &self.keymap;
        let decision = if keymap.is(Action::Run, key) || key.code == KeyCode::Enter {
            match &pending.edited {
                Some(code) => Decision::Edit { code: code.clone() },
                None => Decision::Run,
            }
        } else if keymap.is(Action::Always, key) {
            self.approval = "auto-run".to_string();
            Decision::RunAlways {
                code: pending.edited.clone(),
            }
        } else if keymap.is(Action::Skip, key) {
            Decision::Skip { reason: None }
        } else if keymap.is(Action::Edit, key) {
            let mut editor = TextArea::new(pending.code().lines().map(str::to_string).collect());
            editor.set_line_number_style(self.theme.muted);
            pending.editor = Some(editor);
            self.tab = Focus::Code;
            return Some(Vec::new());
        } else if keymap.is(Action::SkipReason, key) {
            pending.reason = true;
            self.focus = Focus::Input;
            self.input = TextArea::default();
            self.input.set_placeholder_text(
                "Why skip it? Enter sends the reason to the model, Esc goes back",
            );
            return Some(Vec::new());
        } else if key.code == KeyCode::Char('?') {
            self.help = true;
            return Some(Vec::new());
        } else {
            return None;
        };
        self.pending = None;
        Some(vec![Effect::Op(Op::Decision {
            block_id: id,
            decision,
        })])
    }

    fn input_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let newline = key
            .modifiers
            .intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
        match key.code {
            KeyCode::Enter if !newline => return self.submit(),
            KeyCode::Enter => self.input.insert_newline(),
            KeyCode::Char('?') if self.input.is_empty() => self.help = true,
            KeyCode::Up if self.input.cursor().0 == 0 => self.history_step(-1),
            KeyCode::Down if self.input.cursor().0 + 1 >= self.input.lines().len() => {
                self.history_step(1)
            }
            KeyCode::PageUp | KeyCode::PageDown => {
                self.chat_scroll = scroll(self.chat_scroll, &key)
            }
            _ => {
                self.input.input(key);
            }
        }
        Vec::new()
    }

    fn history_step(&mut self, step: isize) {
        if self.history.is_empty() {
            return;
        }
        let next = match (self.history_pos, step) {
            (None, s) if s < 0 => Some(self.history.len() - 1),
            (None, _) => return,
            (Some(0), s) if s < 0 => Some(0),
            (Some(p), s) if s < 0 => Some(p - 1),
            (Some(p), _) if p + 1 < self.history.len() => Some(p + 1),
            (Some(_), _) => None,
        };
        self.history_pos = next;
        self.input = new_input();
        if let Some(p) = next {
            self.input.insert_str(&self.history[p]);
        }
    }

    /// Enter in the input: a message, `!cmd`, or a slash command.
    fn submit(&mut self) -> Vec<Effect> {
        let text = self.input.lines().join("\n");
        if text.trim().is_empty() {
            return Vec::new();
        }
        self.input = new_input();
        self.history_pos = None;
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.chat_scroll = 0;
        if let Some(command) = text.strip_prefix('!') {
            return vec![Effect::Op(Op::Shell {
                command: command.to_string(),
            })];
        }
        if let Some(command) = text.strip_prefix('/') {
            return self.slash(command);
        }
        self.setup = None;
        self.chat.push(Entry::User(text.clone()));
        vec![Effect::Op(Op::UserMessage { text })]
    }

    fn slash(&mut self, command: &str) -> Vec<Effect> {
        let (name, arg) = command
            .trim()
            .split_once(char::is_whitespace)
            .map_or((command.trim(), ""), |(n, a)| (n, a.trim()));
        match name {
            "help" => self.help = true,
            "sessions" => self.open_browser(),
            "quit" | "exit" => return vec![Effect::Quit],
            "reset" | "new" => return vec![Effect::Op(Op::Reset)],
            "undo" => return vec![Effect::Op(Op::Undo)],
            "model" if !arg.is_empty() => {
                return vec![Effect::Op(Op::SetModel {
                    model: arg.to_string(),
                })];
            }
            "model" => self.chat.push(Entry::Notice(format!(
                "talking to {}; /model provider/name switches",
                if self.model.is_empty() { "no model" } else { &self.model }
            ))),
            "tokens" => self.chat.push(Entry::Notice(format!(
                "tokens this session: {} prompt, {} completion",
                self.tokens.0, self.tokens.1
            ))),
            "export" if !arg.is_empty() => {
                return vec![Effect::Export(expand_home(arg), self.transcript())];
            }
            "export" => self.chat.push(Entry::Notice("/export PATH writes the conversation as Markdown".into())),
            other => self.chat.push(Entry::Error(format!(
                "unknown command /{other}; try /help, /reset, /undo, /model NAME, /tokens, /export PATH, /quit"
            ))),
        }
        Vec::new()
    }

    fn cycle_focus(&mut self, step: isize) {
        let order = Focus::ORDER;
        let at = order.iter().position(|f| *f == self.focus).unwrap_or(0) as isize;
        let next = (at + step).rem_euclid(order.len() as isize) as usize;
        self.focus = order[next];
        if self.focus != Focus::Input {
            self.tab = self.focus;
        }
    }

    fn copy_focused(&mut self) -> Vec<Effect> {
        let text = match self.focus {
            Focus::Terminal => self.terminal.contents(),
            Focus::Code => match (&self.pending, &self.shown_block) {
                (Some(p), _) => p.code().to_string(),
                (None, Some((b, _))) => b.code.clone(),
                _ => String::new(),
            },
            Focus::Chat | Focus::Input => self
                .chat
                .entries
                .iter()
                .rev()
                .find_map(|e| match e {
                    Entry::Assistant(t) => Some(t.clone()),
                    _ => None,
                })
                .unwrap_or_default(),
        };
        if text.is_empty() {
            return Vec::new();
        }
        self.chat.push(Entry::Notice(format!(
            "copied {} characters",
            text.chars().count()
        )));
        vec![Effect::Copy(text)]
    }

    pub(super) fn mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let Some(pane) = self.pane_at(mouse.column, mouse.row) else {
            return Vec::new();
        };
        match mouse.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let up = mouse.kind == MouseEventKind::ScrollUp;
                match pane {
                    Focus::Terminal => self.terminal.scroll_by(if up { 3 } else { -3 }),
                    _ => {
                        self.chat_scroll = if up {
                            self.chat_scroll + 3
                        } else {
                            self.chat_scroll.saturating_sub(3)
                        };
                    }
                }
            }
            MouseEventKind::Down(_) => {
                self.focus = pane;
            }
            _ => {}
        }
        Vec::new()
    }

    fn pane_at(&self, column: u16, row: u16) -> Option<Focus> {
        self.pane_areas
            .iter()
            .find(|(_, r)| {
                column >= r.x && column < r.x + r.width && row >= r.y && row < r.y + r.height
            })
            .map(|(f, _)| *f)
    }
}

fn scroll(current: usize, key: &KeyEvent) -> usize {
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => current + 1,
        KeyCode::Down | KeyCode::Char('j') => current.saturating_sub(1),
        KeyCode::PageUp => current + 10,
        KeyCode::PageDown => current.saturating_sub(10),
        KeyCode::End => 0,
        _ => current,
    }
}

fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The keys that work now, as (key, what it does), for the approval panel and the help.
pub fn hints(app: &App) -> Vec<(String, &'static str)> {
    let k = |a: Action| app.keymap.label(a);
    let fixed = |s: &str| s.to_string();
    if app.focus == Focus::Terminal {
        let running = matches!(app.busy, Busy::Running(..));
        let mut hints = app.terminal.hints(running);
        hints.push((k(Action::LeaveTerminal), "leave the terminal"));
        if running {
            hints.push((fixed("Ctrl-C"), "interrupt"));
        }
        return hints;
    }
    match &app.pending {
        Some(p) if p.editor.is_some() => vec![
            (fixed("Ctrl-S"), "accept the edit"),
            (fixed("Esc"), "abandon it"),
        ],
        Some(p) if p.reason => vec![
            (fixed("Enter"), "skip, with this reason"),
            (fixed("Esc"), "back"),
        ],
        Some(p) if p.edited.is_some() => vec![
            (k(Action::Run), "run the edited code"),
            (k(Action::Edit), "edit again"),
            (k(Action::Skip), "skip"),
            (k(Action::SkipReason), "skip + reason"),
            (k(Action::Always), "run + auto-run the rest"),
        ],
        Some(_) => vec![
            (k(Action::Run), "run"),
            (k(Action::Edit), "edit"),
            (k(Action::Skip), "skip"),
            (k(Action::SkipReason), "skip + reason"),
            (k(Action::Always), "always (auto-run)"),
        ],
        None => match app.busy {
            Busy::Running(..) => vec![
                (fixed("Ctrl-C"), "interrupt"),
                (k(Action::FocusTerminal), "type into the program"),
                (k(Action::Quit), "quit"),
            ],
            Busy::Thinking(_) => vec![
                (fixed("Ctrl-C"), "stop the reply"),
                (k(Action::Quit), "quit"),
            ],
            Busy::Idle => vec![
                (fixed("Enter"), "send"),
                (fixed("!cmd"), "shell"),
                (fixed("/help"), "commands"),
                (k(Action::Help), "keys"),
                (fixed("Ctrl-C Ctrl-C"), "quit"),
            ],
        },
    }
}
