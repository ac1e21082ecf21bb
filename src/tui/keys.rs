//! Keys and the mouse: the keymap (`keymap.rs`) names the action a key does in the current
//! state; this file carries the actions out. Keys no action takes are text for the input,
//! wherever they were typed, so that typing never decides a block.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use tui_textarea::TextArea;

use super::app::{App, Busy, Confirm, Effect, Focus, new_input};
use super::chat::Entry;
use super::keymap::Action;
use super::terminal::TerminalKey;
pub use super::terminal::key_bytes;
use crate::protocol::{Decision, Op};

/// A second Ctrl-C within this long quits (when nothing runs).
const DOUBLE_CTRL_C: Duration = Duration::from_secs(2);

impl App {
    pub(super) fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        self.forget_run_anyway(&key);
        if self.help {
            // What the overlay drew last: its wrapped lines and the rows it shows.
            let (lines, rows) = self.help_view.get();
            let max = lines.saturating_sub(rows);
            let page = rows.saturating_sub(1).max(1);
            match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    self.help_scroll = self.help_scroll.saturating_sub(1)
                }
                KeyCode::Down | KeyCode::Char('j') => self.help_scroll += 1,
                KeyCode::PageUp => self.help_scroll = self.help_scroll.saturating_sub(page),
                KeyCode::PageDown | KeyCode::Char(' ') => self.help_scroll += page,
                KeyCode::Home => self.help_scroll = 0,
                KeyCode::End => self.help_scroll = max,
                KeyCode::Esc | KeyCode::Char('?') | KeyCode::Char('q') | KeyCode::F(1) => {
                    self.help = false
                }
                _ if self.keymap.is(Action::Help, &key) => self.help = false,
                _ => {}
            }
            self.help_scroll = self.help_scroll.min(max);
            return Vec::new();
        }
        if let Some(effects) = self.viewer_key(&key) {
            return effects;
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
        let ctx = self.ctx();
        let action = self.keymap.action(&ctx, &key);
        match action {
            Some(Action::Quit) => {
                if matches!(self.busy, Busy::Running(..)) {
                    self.confirm_quit = true;
                    return Vec::new();
                }
                return vec![Effect::Quit];
            }
            Some(Action::Interrupt) => {
                if self.browser.is_some() {
                    self.browser = None;
                    return Vec::new();
                }
                return self.ctrl_c();
            }
            _ => {}
        }
        if let Some(effects) = self.browser_key(&key, action) {
            return effects;
        }
        if let Some(p) = &mut self.pending {
            p.note = None;
            if let Some(confirm) = p.confirm.take() {
                return self.confirmed(confirm, &key);
            }
        }
        if ctx.editing {
            return self.editor_key(action, key);
        }
        // The terminal pane: while a program runs, every other key goes to it; otherwise it
        // scrolls and searches. Ctrl-G leaves.
        if ctx.terminal {
            if action == Some(Action::LeaveTerminal) {
                self.focus = Focus::Input;
                return Vec::new();
            }
            let running = matches!(self.busy, Busy::Running(..));
            match self.terminal.handle_key(&key, running) {
                TerminalKey::Send(data) => return vec![Effect::Op(Op::Input { data })],
                TerminalKey::Leave => {
                    // Esc: to the decision when a block waits (as the panel says), else
                    // to the input.
                    if ctx.pending {
                        self.focus_pane(Focus::Code);
                    } else {
                        self.focus = Focus::Input;
                    }
                    return Vec::new();
                }
                TerminalKey::Consumed => return Vec::new(),
                TerminalKey::Ignored if running => return Vec::new(),
                TerminalKey::Ignored => {}
            }
        }
        match action {
            Some(action) => self.act(action),
            None => self.unbound(key),
        }
    }

    /// Carries out an action from the keymap.
    fn act(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Run | Action::Skip | Action::Edit | Action::SkipReason | Action::Always => {
                return self.decide(action);
            }
            Action::AllowPrefix => self.open_allow_prompt(),
            Action::SwitchRuleTarget => self.switch_rule_target(),
            Action::ToggleDecision => {
                if self.focus == Focus::Code {
                    self.focus = Focus::Input;
                } else {
                    self.focus = Focus::Code;
                    self.tab = Focus::Code;
                }
            }
            Action::SendReason => return self.send_reason(),
            Action::CancelReason => {
                if let Some(p) = &mut self.pending {
                    p.reason = false;
                    p.allow = None;
                }
                self.restore_draft();
                self.focus = Focus::Code;
                self.tab = Focus::Code;
            }
            Action::Send => return self.submit(),
            Action::Newline => self.input.insert_newline(),
            Action::ClearLine => {
                self.input.delete_line_by_head();
            }
            Action::Undo => {
                self.input.undo();
            }
            Action::FocusNext => self.cycle_focus(1),
            Action::FocusPrev => self.cycle_focus(-1),
            Action::FocusTerminal => {
                self.focus = Focus::Terminal;
                self.tab = Focus::Terminal;
            }
            Action::LeaveTerminal => self.focus = Focus::Input,
            Action::Sessions => self.open_browser(),
            Action::Help => {
                self.help = true;
                self.help_scroll = 0;
            }
            Action::Copy => return self.copy_focused(),
            Action::ScrollUp => self.scroll_focused(-1),
            Action::ScrollDown => self.scroll_focused(1),
            Action::PageUp | Action::PageDown => self.page_focused(action == Action::PageDown),
            Action::Top | Action::Bottom => self.end_focused(action == Action::Bottom),
            Action::ViewImage => return self.view_images(),
            Action::OpenImage => return self.open_image(),
            Action::SelectPrev => self.chat.select(-1),
            Action::SelectNext => self.chat.select(1),
            Action::Expand => {
                if !self.chat.toggle_selected() {
                    self.flash("select a block with ↑/↓ to expand it");
                }
            }
            // Handled before the table is consulted.
            Action::Interrupt | Action::Quit | Action::AcceptEdit | Action::AbandonEdit => {}
            // The session browser's, which has the keyboard while it is open.
            Action::Read
            | Action::Resume
            | Action::Delete
            | Action::Export
            | Action::Rename
            | Action::Confirm
            | Action::Back
            | Action::ClearSearch
            | Action::Erase
            | Action::TypeSearch => {}
        }
        Vec::new()
    }

    /// A key no action takes: text for the input, wherever it was typed.
    fn unbound(&mut self, key: KeyEvent) -> Vec<Effect> {
        let typed = matches!(key.code, KeyCode::Char(_))
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match self.focus {
            Focus::Input => self.input_key(key),
            Focus::Code if self.pending.is_some() && typed => {
                let (run, skip, decide) = (
                    self.keymap.label(Action::Run),
                    self.keymap.label(Action::Skip),
                    self.keymap.label(Action::ToggleDecision),
                );
                self.flash(format!(
                    "the block waits: {run} runs it, {skip} skips it; {decide} goes to the message input"
                ));
                Vec::new()
            }
            Focus::Chat | Focus::Code if typed => {
                // Typing in a pane that takes no text goes to the input.
                self.focus = Focus::Input;
                self.input_key(key)
            }
            _ => Vec::new(),
        }
    }

    /// A decision key, where the decision has focus.
    fn decide(&mut self, action: Action) -> Vec<Effect> {
        // Every line on screen first, or the person's explicit go-ahead.
        if matches!(action, Action::Run | Action::Always) && !self.read_enough(action) {
            return Vec::new();
        }
        let Some(pending) = self.pending.as_mut() else {
            return Vec::new();
        };
        let id = pending.block.id;
        let decision = match action {
            Action::Run => match &pending.edited {
                Some(code) => Decision::Edit { code: code.clone() },
                None => Decision::Run,
            },
            Action::Always => {
                pending.confirm = Some(Confirm::Always);
                return Vec::new();
            }
            Action::Skip => Decision::Skip { reason: None },
            Action::Edit => {
                let mut editor =
                    TextArea::new(pending.code().lines().map(str::to_string).collect());
                editor.set_line_number_style(self.theme.muted);
                pending.editor = Some(editor);
                self.focus = Focus::Code;
                self.tab = Focus::Code;
                return Vec::new();
            }
            Action::SkipReason => {
                pending.reason = true;
                self.focus = Focus::Input;
                // A message being written waits while the reason takes the input.
                let mut reason = TextArea::default();
                reason.set_placeholder_text(
                    "Why skip it? Enter skips it and tells the model why (or just skips), Esc goes back",
                );
                self.draft = Some(std::mem::replace(&mut self.input, reason));
                return Vec::new();
            }
            _ => return Vec::new(),
        };
        self.decided(id, decision)
    }

    /// A decision is taken: the engine hears it, and until it answers the status bar says
    /// what happens (not "idle" while a kernel starts).
    pub(super) fn decided(&mut self, id: u64, decision: Decision) -> Vec<Effect> {
        self.pending = None;
        self.busy = match decision {
            Decision::Run
            | Decision::Edit { .. }
            | Decision::RunAlways { .. }
            | Decision::AllowAlways { .. } => Busy::Running(id, Instant::now()),
            // In a turn the model hears of it next; a block another caller sent between
            // turns (MCP, a replay) leaves nothing to wait for.
            Decision::Skip { .. } | Decision::Abort if self.in_turn => {
                Busy::Thinking(Instant::now())
            }
            Decision::Skip { .. } | Decision::Abort => Busy::Idle,
        };
        vec![Effect::Op(Op::Decision {
            block_id: id,
            decision,
        })]
    }

    /// The answer to a question the decision asked.
    fn confirmed(&mut self, confirm: Confirm, key: &KeyEvent) -> Vec<Effect> {
        // Only the keys the question names say yes (not Enter: "other keys: no").
        let yes = key.code == KeyCode::Char('y')
            || (confirm == Confirm::Always && self.keymap.is(Action::Always, key));
        let Some(pending) = self.pending.as_mut() else {
            return Vec::new();
        };
        match (confirm, yes) {
            (Confirm::Always, true) => {
                let id = pending.block.id;
                let code = pending.edited.clone();
                self.approval = crate::protocol::ApprovalMode::Auto;
                self.decided(id, Decision::RunAlways { code })
            }
            (Confirm::Always, false) => {
                pending.note = Some("auto-run stays off; the block still waits".into());
                Vec::new()
            }
            (Confirm::Discard, true) => {
                pending.editor = None;
                Vec::new()
            }
            (Confirm::Discard, false) => Vec::new(),
        }
    }

    /// Keys while the block's editor is open: they all go to the editor, except Ctrl-S
    /// (accept) and Esc (abandon, asking first when the text changed).
    fn editor_key(&mut self, action: Option<Action>, key: KeyEvent) -> Vec<Effect> {
        let Some(pending) = self.pending.as_mut() else {
            return Vec::new();
        };
        let Some(editor) = &mut pending.editor else {
            return Vec::new();
        };
        match action {
            Some(Action::AcceptEdit) => {
                let code = editor.lines().join("\n");
                pending.editor = None;
                pending.edited = (code != pending.block.code).then_some(code);
                self.code.reset();
            }
            Some(Action::AbandonEdit) => {
                let text = editor.lines().join("\n");
                if text == pending.code() {
                    pending.editor = None;
                } else {
                    pending.confirm = Some(Confirm::Discard);
                }
            }
            _ => {
                editor.input(key);
            }
        }
        Vec::new()
    }

    /// The message that was being written before the input took a reason.
    pub(super) fn restore_draft(&mut self) {
        self.input = self.draft.take().unwrap_or_else(new_input);
    }

    fn send_reason(&mut self) -> Vec<Effect> {
        if self.pending.as_ref().is_some_and(|p| p.allow.is_some()) {
            return self.send_allow();
        }
        let Some(pending) = self.pending.take() else {
            return Vec::new();
        };
        let reason = self.input.lines().join("\n");
        self.last_typed = None;
        self.restore_draft();
        self.decided(
            pending.block.id,
            Decision::Skip {
                reason: Some(reason).filter(|r| !r.trim().is_empty()),
            },
        )
    }

    fn ctrl_c(&mut self) -> Vec<Effect> {
        if let Some(p) = &mut self.pending
            && (p.editor.is_some() || p.reason)
        {
            // Leaving the editor asks first when the text changed, as Esc does.
            if let Some(editor) = &p.editor
                && editor.lines().join("\n") != p.code()
            {
                p.confirm = Some(Confirm::Discard);
                return Vec::new();
            }
            p.editor = None;
            if p.reason {
                p.reason = false;
                p.allow = None;
                self.restore_draft();
            }
            return Vec::new();
        }
        if let Some(host) = &self.connecting {
            self.chat.push(Entry::Notice(format!(
                "cancelling the connection to {}…",
                crate::safe_text::visible_line(host)
            )));
            return vec![Effect::Op(Op::Interrupt)];
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
        self.flash("press Ctrl-C again within 2 s to quit");
        Vec::new()
    }

    fn input_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let reason = self.pending.as_ref().is_some_and(|p| p.reason);
        if matches!(key.code, KeyCode::Char(_)) {
            self.last_typed = Some(Instant::now());
        }
        // The input's own keys where the table's do not apply (a reason, prefixes).
        if self.keymap.is(Action::ClearLine, &key) {
            self.input.delete_line_by_head();
            return Vec::new();
        }
        if self.keymap.is(Action::Undo, &key) {
            self.input.undo();
            return Vec::new();
        }
        match key.code {
            KeyCode::Up if !reason && self.input.cursor().0 == 0 => self.history_step(-1),
            KeyCode::Down if !reason && self.input.cursor().0 + 1 >= self.input.lines().len() => {
                self.history_step(1)
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
        self.last_typed = None;
        self.history_pos = None;
        if self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.chat.bottom();
        if let Some(command) = text.strip_prefix('!') {
            if self.engaged() {
                self.waits(
                    &format!("!{}", super::app::short(command.trim(), 40)),
                    "it runs in the shell",
                );
            }
            return vec![Effect::Op(Op::Shell {
                command: command.to_string(),
            })];
        }
        if let Some(command) = text.strip_prefix('/') {
            return self.slash(command);
        }
        self.setup = None;
        // While something runs, the message waits for the next request: it shows queued
        // below everything until the engine takes it up (and then where the model reads it).
        if self.engaged() || self.unconfirmed > 0 || !self.chat.queued.is_empty() {
            self.chat.queue(text.clone());
        } else {
            self.chat.push(Entry::User(text.clone()));
            self.unconfirmed += 1;
        }
        vec![Effect::Op(Op::UserMessage { text })]
    }

    /// Says in the chat that `command` waits for what is under way, and what happens then.
    pub(super) fn waits(&mut self, command: &str, then: &str) {
        let until = if self.pending.is_some() {
            "the block that waits is decided and what follows it ends"
        } else if self.in_turn {
            "this turn ends"
        } else {
            "what runs now ends"
        };
        let stop = if self.in_turn || self.pending.is_some() {
            format!(
                " ({} stops the turn now)",
                self.keymap.label(Action::Interrupt)
            )
        } else {
            String::new()
        };
        self.chat.push(Entry::Notice(format!(
            "{command} waits until {until}; then {then}{stop}."
        )));
    }

    fn slash(&mut self, command: &str) -> Vec<Effect> {
        let (name, arg) = command
            .trim()
            .split_once(char::is_whitespace)
            .map_or((command.trim(), ""), |(n, a)| (n, a.trim()));
        // What changes the conversation waits for what is under way (the engine keeps it
        // in order); the rest answers at once.
        let engaged = self.engaged();
        match name {
            "help" => self.help = true,
            "sessions" => self.open_browser(),
            "quit" | "exit" => return vec![Effect::Quit],
            "reset" | "new" => {
                if engaged {
                    self.waits(&format!("/{name}"), "the conversation starts over");
                }
                return vec![Effect::Op(Op::Reset)];
            }
            "undo" => {
                if engaged {
                    self.waits("/undo", "the last exchange is dropped");
                }
                return vec![Effect::Op(Op::Undo)];
            }
            "model" if !arg.is_empty() => {
                if engaged {
                    self.waits(
                        &format!("/model {}", super::app::short(arg, 40)),
                        "the model changes",
                    );
                }
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
            "export" => self.chat.push(Entry::Notice("/export PATH writes the session: a notebook for .ipynb, a script for .py or .sh, JSON for .json, else Markdown".into())),
            "sandbox" => return self.sandbox_command(arg),
            "on" if arg.is_empty() => self.chat.push(Entry::Notice(format!(
                "kernels run on {}; /on NAME moves them to an executor of config.toml ([executors.NAME]) or to any host ssh reaches, /on local brings them back",
                if self.executor == "local" { "this machine" } else { &self.executor }
            ))),
            "on" => {
                if engaged {
                    self.waits(
                        &format!("/on {}", super::app::short(arg, 40)),
                        "the kernels move",
                    );
                }
                return vec![Effect::Op(Op::SetExecutor {
                    name: arg.to_string(),
                })];
            }
            "mcp" => return vec![Effect::Op(Op::McpStatus)],
            other => self.chat.push(Entry::Error(format!(
                "unknown command /{other}; try /help, /reset, /undo, /model NAME, /sandbox MODE, /on HOST, /mcp, /tokens, /export PATH, /quit"
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

    /// Focuses `pane` (a click, a tab label).
    pub fn focus_pane(&mut self, pane: Focus) {
        self.focus = pane;
        if pane != Focus::Input {
            self.tab = pane;
        }
    }

    fn scroll_focused(&mut self, step: isize) {
        match self.focus {
            Focus::Code => self.code.scroll_by(step),
            Focus::Terminal => self.terminal.scroll_by(-step),
            Focus::Chat | Focus::Input => self.chat.scroll_by(step),
        }
    }

    fn page_focused(&mut self, down: bool) {
        match self.focus {
            Focus::Code => self.code.page(down),
            Focus::Terminal => {
                let rows = self.terminal.screen().size().0.max(2) as isize - 1;
                self.terminal.scroll_by(if down { -rows } else { rows });
            }
            Focus::Chat | Focus::Input => self.chat.page(down),
        }
    }

    fn end_focused(&mut self, bottom: bool) {
        match (self.focus, bottom) {
            (Focus::Code, true) => self.code.bottom(),
            (Focus::Code, false) => self.code.top(),
            (Focus::Terminal, true) => self.terminal.scroll_to_bottom(),
            (Focus::Terminal, false) => self.terminal.scroll_to_top(),
            (_, true) => self.chat.bottom(),
            (_, false) => self.chat.top(),
        }
    }

    fn copy_focused(&mut self) -> Vec<Effect> {
        let (what, text) = match self.focus {
            Focus::Terminal => (
                "the last block's output",
                self.terminal
                    .last_block_output()
                    .unwrap_or_else(|| self.terminal.contents()),
            ),
            Focus::Code => (
                "the code",
                match (&self.pending, &self.shown_block) {
                    (Some(p), _) => p.code().to_string(),
                    (None, Some((b, _))) => b.code.clone(),
                    _ => String::new(),
                },
            ),
            Focus::Chat | Focus::Input => {
                // A block's entry: its code and its whole kept output, not only the tail.
                let block = self
                    .chat
                    .selected
                    .and_then(|i| match self.chat.entries.get(i) {
                        Some(Entry::Block { id, code, .. }) => Some((*id, code.clone())),
                        _ => None,
                    });
                match block.and_then(|(id, code)| {
                    self.terminal
                        .block_output(id)
                        .map(|out| format!("{code}\n\n{out}"))
                }) {
                    Some(text) => ("the block and its output", text),
                    None => ("the entry", self.chat.selected_text()),
                }
            }
        };
        if text.trim().is_empty() {
            self.flash(format!("nothing to copy: {what} is empty"));
            return Vec::new();
        }
        self.flash(format!(
            "copied {what} ({} characters)",
            text.chars().count()
        ));
        vec![Effect::Copy(text)]
    }

    pub(super) fn mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        if let MouseEventKind::Down(_) = mouse.kind
            && let Some(tab) = self
                .tab_areas
                .iter()
                .find(|(_, r)| contains(r, mouse.column, mouse.row))
                .map(|(f, _)| *f)
        {
            self.focus_pane(tab);
            return Vec::new();
        }
        let Some((pane, area)) = self
            .pane_areas
            .iter()
            .find(|(_, r)| contains(r, mouse.column, mouse.row))
            .copied()
        else {
            return Vec::new();
        };
        match mouse.kind {
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
                let step = if mouse.kind == MouseEventKind::ScrollUp {
                    -3
                } else {
                    3
                };
                match pane {
                    Focus::Terminal => self.terminal.scroll_by(-step),
                    Focus::Code => self.code.scroll_by(step),
                    Focus::Chat | Focus::Input => self.chat.scroll_by(step),
                }
            }
            MouseEventKind::Down(_) => {
                if pane == Focus::Chat
                    && mouse.row > area.y
                    && let Some(i) = self.chat.select_row((mouse.row - area.y - 1) as usize)
                    && self
                        .chat
                        .entries
                        .get(i)
                        .is_some_and(|e| matches!(e, Entry::Block { .. }))
                {
                    self.chat.toggle_selected();
                }
                self.focus_pane(pane);
            }
            _ => {}
        }
        Vec::new()
    }
}

fn contains(r: &ratatui::layout::Rect, column: u16, row: u16) -> bool {
    column >= r.x && column < r.x + r.width && row >= r.y && row < r.y + r.height
}

fn expand_home(path: &str) -> std::path::PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => std::path::Path::new(&home).join(rest),
        _ => std::path::PathBuf::from(path),
    }
}

/// The keys that work now, as (key, what it does), for the panel: from the keymap, so that
/// they cannot disagree with what the keys do.
pub fn hints(app: &App) -> Vec<(String, &'static str)> {
    let ctx = app.ctx();
    let mut hints = app.keymap.hints(&ctx);
    if ctx.terminal {
        let running = matches!(app.busy, Busy::Running(..));
        hints.retain(|(_, what)| *what != "scroll" && (!running || *what != "next pane"));
        let mut own = app.terminal.hints(running);
        own.append(&mut hints);
        hints = own;
    }
    hints
}
