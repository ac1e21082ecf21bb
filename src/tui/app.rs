//! The workbench's state and its reducer: `update(msg)` changes the state and returns the
//! effects (ops for the engine, quit, copy). Nothing here draws or does I/O, so every path
//! can be tested by feeding messages.
//!
//! States: idle (typing), thinking (the model streams), awaiting (a block waits for y / e / n
//! / r / a), editing (the block in an editor; Ctrl-S accepts, Esc abandons), giving a reason
//! (the input takes it), running (the block's terminal is live). Ctrl-C interrupts whatever
//! runs; on idle a second Ctrl-C within 2 s quits.
//!
//! One pane has the keyboard (`focus`). A decision is taken only where the decision has focus
//! (the code pane while a block waits): when a block arrives and the input is empty, focus
//! moves there; when the person is typing, it stays in the input and the panel says which key
//! goes to the decision. Nothing typed in the input or the chat ever decides a block.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crossterm::event::{KeyEvent, MouseEvent};
use tui_textarea::TextArea;

use super::chat::{Chat, Entry};
use super::terminal::TerminalPane;
use super::theme::Theme;
use crate::protocol::{BlockId, Event, Op, ProposedBlock};

// A message lives for one step of the loop and is moved, never stored in bulk: boxing the
// engine's events would cost an allocation per event for no saving.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    Mouse(MouseEvent),
    Engine(Event),
    /// Time passed (for the spinner and the running clock).
    Tick,
    /// The session browser's worker answered.
    Browser(super::browser::Reply),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Op(Op),
    Quit,
    /// Copy this text to the clipboard (OSC 52).
    Copy(String),
    /// Write this text to a file, off the UI task.
    Export(std::path::PathBuf, String),
    /// Continue this saved session (a new engine, the old conversation).
    Resume(String),
    /// Open this image with the system viewer, off the UI task.
    Open(std::path::PathBuf),
}

/// Which pane has the keyboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Input,
    Chat,
    Code,
    Terminal,
}

impl Focus {
    pub const ORDER: [Focus; 4] = [Focus::Input, Focus::Chat, Focus::Code, Focus::Terminal];
}

/// What the engine is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    Idle,
    Thinking(Instant),
    Running(BlockId, Instant),
}

/// A question the decision asks before it acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    /// `a`: auto-run the rest of the session?
    Always,
    /// Esc in a changed editor: throw the edit away?
    Discard,
}

/// The block that waits for a decision.
pub struct Pending {
    pub block: ProposedBlock,
    pub index: usize,
    pub of: usize,
    /// The code as edited and accepted (Ctrl-S), when it differs from the proposal.
    pub edited: Option<String>,
    /// The editor, while editing.
    pub editor: Option<TextArea<'static>>,
    /// The input takes a reason for skipping.
    pub reason: bool,
    /// A question asked before acting.
    pub confirm: Option<Confirm>,
    /// What the panel tells the person instead of the keys (until the next key).
    pub note: Option<String>,
    /// The input takes the prefixes to always allow, saved to this file (`reason` is set
    /// too: the input answers the decision).
    pub allow: Option<crate::protocol::RuleSource>,
    /// The block ran and the sandbox stopped it (why): the decision is whether to run it
    /// again outside the sandbox, once.
    pub outside: Option<String>,
}

impl Pending {
    /// Where the block comes from, for titles: `block 2 of 3` of the model's reply, or the
    /// caller that sent it (`from claude-code over MCP`).
    pub fn position(&self) -> String {
        position(&self.block, self.index, self.of)
    }

    /// A block that waits, as proposed, with nothing asked or typed yet.
    pub fn new(block: ProposedBlock, index: usize, of: usize) -> Pending {
        Pending {
            block,
            index,
            of,
            edited: None,
            editor: None,
            reason: false,
            confirm: None,
            note: None,
            allow: None,
            outside: None,
        }
    }

    pub fn code(&self) -> &str {
        self.edited.as_deref().unwrap_or(&self.block.code)
    }

    /// Identifies what the code pane shows for it (the code, or the diff after an edit).
    pub fn content_key(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.block.id, &self.block.code, &self.edited).hash(&mut h);
        h.finish()
    }

    /// Lines in what the code pane shows for it.
    pub fn content_lines(&self) -> usize {
        match &self.edited {
            Some(edited) => {
                similar::TextDiff::from_lines(self.block.code.as_str(), edited.as_str())
                    .iter_all_changes()
                    .count()
            }
            None => self.block.code.lines().count().max(1),
        }
    }
}

pub struct App {
    pub theme: Theme,
    pub keymap: super::keymap::Keymap,
    pub model: String,
    pub approval: crate::protocol::ApprovalMode,
    /// The sandbox in force, as the engine last reported it (None: not said yet).
    pub sandbox: Option<crate::protocol::SandboxStatus>,
    /// Where the kernels run: `local`, or the executor's (host's) name.
    pub executor: String,
    /// The host being connected to, while it lasts (Ctrl-C cancels).
    pub connecting: Option<String>,
    pub cwd: String,
    pub chat: Chat,
    /// The assistant's message while it streams.
    pub streaming: String,
    /// The streaming message's rendering, kept between frames.
    pub stream_view: super::stream::StreamView,
    /// A block's code while its tool call streams.
    pub streaming_code: Option<super::code_stream::StreamingCode>,
    pub proposed: HashMap<BlockId, ProposedBlock>,
    /// The policy's verdict and the engine's decision for each proposed block.
    pub verdicts: HashMap<BlockId, (crate::protocol::Verdict, crate::protocol::Gate)>,
    /// What "always allow" offers for each block that asks.
    pub allow_offers: HashMap<BlockId, crate::protocol::Suggestion>,
    pub pending: Option<Pending>,
    /// The block shown in the code pane when none is pending: the last one proposed or run.
    pub shown_block: Option<(ProposedBlock, String)>,
    pub busy: Busy,
    /// A turn is under way (between the first request and its end).
    pub in_turn: bool,
    pub terminal: TerminalPane,
    pub input: TextArea<'static>,
    pub history: Vec<String>,
    pub history_pos: Option<usize>,
    pub focus: Focus,
    pub help: bool,
    /// The help overlay's first line shown.
    pub help_scroll: usize,
    /// What the help overlay drew last: its lines (wrapped to the width) and the rows shown.
    pub help_view: std::cell::Cell<(usize, usize)>,
    /// The notice of lines never shown was just given for this content and action: the
    /// same key next goes on anyway (any other key takes it back).
    pub run_anyway: Option<(u64, super::keymap::Action)>,
    pub tokens: (u64, u64),
    pub last_ctrl_c: Option<Instant>,
    pub confirm_quit: bool,
    /// Shown in place of the chat while there is no model and nothing was said.
    pub setup: Option<String>,
    pub spinner: usize,
    /// In a narrow terminal, which pane the tab row shows.
    pub tab: Focus,
    /// The person put that tab in front themself (a key, a click), after the workbench
    /// last moved it: when the turn ends, it stays.
    pub tab_by_person: bool,
    /// The tabs that got something new while not in front (narrow layout), until visited.
    pub unseen: Vec<Focus>,
    /// Messages sent while nothing ran, shown as said, that the engine has not yet
    /// confirmed taking (`MessageTaken`); until then, later ones are queued behind them.
    pub unconfirmed: usize,
    /// The session browser, while it is open.
    pub browser: Option<super::browser::Browser>,
    /// Open the browser as soon as the store is there (`--sessions`).
    pub open_browser_at_start: bool,
    /// Where the browser's requests go (None: no store).
    pub browser_requests: Option<std::sync::mpsc::Sender<super::browser::Request>>,
    /// Where each pane was drawn last, for the mouse.
    pub pane_areas: Vec<(Focus, ratatui::layout::Rect)>,
    /// The code pane's lines (highlighted, or a diff), made once per content; a large
    /// block is highlighted off the UI thread.
    pub code_cache: super::code_cache::CodeCache,
    /// The code pane's scroll and what was seen of it.
    pub code: super::code::CodeView,
    /// A short message for the status bar (copied, …), until it is old.
    pub flash: Option<(String, Instant)>,
    /// The last layout was the wide one (side by side).
    pub wide: bool,
    /// Where the tab labels were drawn (narrow layout), for clicks.
    pub tab_areas: Vec<(Focus, ratatui::layout::Rect)>,
    /// The chat entry of the retries of the current request (updated in place).
    pub(super) retry_entry: Option<usize>,
    /// The last block that ran printed something (so its output stays in view).
    pub output_shown: bool,
    /// When the person last typed a character of a message not yet sent.
    pub last_typed: Option<Instant>,
    /// The message being written while the input takes a reason for a skip.
    pub draft: Option<TextArea<'static>>,
    /// The session store cannot be written: why (shown in the status bar until it can).
    pub store_trouble: Option<String>,
    /// The images blocks made, the image viewer, and what draws them.
    pub images: super::images::Images,
}

/// Someone who typed this recently is still typing: a block that arrives leaves them be.
pub const STILL_TYPING: Duration = Duration::from_millis(1500);

/// How long a status-bar message stays.
pub const FLASH: Duration = Duration::from_secs(3);

impl App {
    pub fn new(theme: Theme) -> App {
        App {
            theme,
            keymap: super::keymap::Keymap::default(),
            model: String::new(),
            approval: crate::protocol::ApprovalMode::Ask,
            sandbox: None,
            executor: "local".to_string(),
            connecting: None,
            cwd: String::new(),
            chat: Chat::default(),
            streaming: String::new(),
            stream_view: Default::default(),
            streaming_code: None,
            proposed: HashMap::new(),
            verdicts: HashMap::new(),
            allow_offers: HashMap::new(),
            pending: None,
            shown_block: None,
            busy: Busy::Idle,
            in_turn: false,
            terminal: TerminalPane::new(24, 80),
            input: new_input(),
            history: Vec::new(),
            history_pos: None,
            focus: Focus::Input,
            help: false,
            help_scroll: 0,
            help_view: std::cell::Cell::new((0, 0)),
            run_anyway: None,
            tokens: (0, 0),
            last_ctrl_c: None,
            confirm_quit: false,
            setup: None,
            spinner: 0,
            tab: Focus::Chat,
            tab_by_person: false,
            unseen: Vec::new(),
            unconfirmed: 0,
            browser: None,
            open_browser_at_start: false,
            browser_requests: None,
            pane_areas: Vec::new(),
            code_cache: super::code_cache::CodeCache::default(),
            code: super::code::CodeView::default(),
            flash: None,
            wide: true,
            tab_areas: Vec::new(),
            retry_entry: None,
            store_trouble: None,
            output_shown: false,
            last_typed: None,
            draft: None,
            images: Default::default(),
        }
    }

    /// Tells the person something in the status bar for a few seconds.
    pub fn flash(&mut self, message: impl Into<String>) {
        self.flash = Some((message.into(), Instant::now()));
    }

    /// The state the keys are read in.
    pub fn ctx(&self) -> super::keymap::Ctx {
        let pending = self.pending.as_ref();
        let editing = pending.is_some_and(|p| p.editor.is_some());
        let reason = pending.is_some_and(|p| p.reason);
        let running = matches!(self.busy, Busy::Running(..));
        super::keymap::Ctx {
            decision: pending.is_some() && !editing && !reason && self.focus == Focus::Code,
            escalation: pending.is_some_and(|p| p.outside.is_some()),
            pending: pending.is_some(),
            editing,
            reason,
            allow_prompt: pending.is_some_and(|p| p.allow.is_some()),
            input: self.focus == Focus::Input,
            chat: self.focus == Focus::Chat,
            chat_block: self.focus == Focus::Chat
                && self
                    .chat
                    .selected
                    .and_then(|i| self.chat.entries.get(i))
                    .is_some_and(|e| matches!(e, Entry::Block { .. })),
            scrolling: (self.focus == Focus::Code && !editing)
                || (self.focus == Focus::Terminal && !running),
            terminal: self.focus == Focus::Terminal,
            running_elsewhere: running && self.focus != Focus::Terminal,
            browser: self.browser.as_ref().map(|b| b.mode.state()),
            browser_searched: self.browser.as_ref().is_some_and(|b| !b.query.is_empty()),
        }
    }

    /// Something is under way (a turn, a block that waits or runs, a connection): what the
    /// person sends now waits for it.
    pub fn engaged(&self) -> bool {
        self.in_turn
            || self.busy != Busy::Idle
            || self.pending.is_some()
            || self.connecting.is_some()
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let tab = self.tab;
        let chat = (self.chat.revision(), self.streaming.len());
        let by_person = matches!(msg, Msg::Key(_) | Msg::Mouse(_) | Msg::Paste(_));
        let by_engine = matches!(msg, Msg::Engine(_));
        let effects = self.reduce(msg);
        if self.tab != tab {
            self.tab_by_person = by_person;
        }
        if by_engine && (self.chat.revision(), self.streaming.len()) != chat {
            self.note_new(Focus::Chat);
        }
        // A tab in front is seen; in the wide layout every pane is.
        if self.wide {
            self.unseen.clear();
        } else {
            let shown = self.tab;
            self.unseen.retain(|pane| *pane != shown);
        }
        effects
    }

    /// Something new came to `pane`: its tab is marked while it is not in front.
    pub(super) fn note_new(&mut self, pane: Focus) {
        if !self.wide && self.tab != pane && !self.unseen.contains(&pane) {
            self.unseen.push(pane);
        }
    }

    fn reduce(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(key) => self.key(key),
            Msg::Paste(text) => {
                self.run_anyway = None;
                self.paste(&text)
            }
            Msg::Mouse(mouse) => {
                // A click or the wheel is another key for the guard (a mere move is not).
                if !matches!(mouse.kind, crossterm::event::MouseEventKind::Moved) {
                    self.run_anyway = None;
                }
                self.mouse(mouse)
            }
            Msg::Engine(event) => {
                self.engine(event);
                Vec::new()
            }
            Msg::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
                if self
                    .flash
                    .as_ref()
                    .is_some_and(|(_, at)| at.elapsed() >= FLASH)
                {
                    self.flash = None;
                }
                Vec::new()
            }
            Msg::Browser(reply) => {
                if let Some(browser) = &mut self.browser {
                    browser.reply(reply);
                }
                Vec::new()
            }
        }
    }

    /// Whether anything moves on screen by itself (so the loop ticks).
    /// What to say when the workbench closes, about a store that never recovered (the
    /// banner goes with the screen).
    pub fn exit_report(&self) -> Option<String> {
        self.store_trouble
            .as_ref()
            .map(|trouble| format!("this session was not saved whole: {trouble}"))
    }

    /// The streaming message is over (or a new one starts): its view starts over too.
    pub(super) fn clear_streaming(&mut self) {
        self.streaming.clear();
        self.stream_view.reset();
    }

    pub fn animating(&self) -> bool {
        self.busy != Busy::Idle
            || self.flash.is_some()
            || self.code_cache.busy()
            || self.images.cache.busy()
    }

    /// The terminal pane's size changed: resize the emulator and the kernels' PTYs.
    pub fn resize_terminal(&mut self, rows: u16, cols: u16) -> Vec<Effect> {
        if !self.terminal.resize(rows, cols) {
            return Vec::new();
        }
        vec![Effect::Op(Op::Resize { rows, cols })]
    }

    pub(super) fn clear_pending(&mut self, block_id: BlockId) {
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.block.id == block_id)
        {
            self.pending = None;
        }
    }

    /// A block waits: the decision takes the keyboard unless the person is typing, or a
    /// narrow terminal shows the last block's output (which stays until they move on).
    pub(super) fn arrive_at_decision(&mut self) {
        let reading_output = !self.wide && self.tab == Focus::Terminal && self.output_shown;
        let typing = (!self.input.is_empty() && self.focus == Focus::Input)
            || self.last_typed.is_some_and(|t| t.elapsed() < STILL_TYPING);
        if reading_output {
            if self.focus == Focus::Code {
                self.focus = Focus::Input;
            }
            return;
        }
        self.tab = Focus::Code;
        if !typing {
            self.focus = Focus::Code;
        }
    }

    fn paste(&mut self, text: &str) -> Vec<Effect> {
        // Terminals paste lines ending in CR (or CRLF): they are newlines.
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        if let Some(editor) = self.pending.as_mut().and_then(|p| p.editor.as_mut()) {
            editor.insert_str(&text);
        } else if self.focus == Focus::Terminal {
            // Into the running program, as if typed (Enter is a carriage return).
            return vec![Effect::Op(Op::Input {
                data: text.replace('\n', "\r").into_bytes(),
            })];
        } else if self.pending.as_ref().is_some_and(|p| p.reason) || self.focus == Focus::Input {
            self.input.insert_str(&text);
        } else {
            // A paste is text: into the input, never into a decision.
            self.focus = Focus::Input;
            self.input.insert_str(&text);
        }
        Vec::new()
    }

    /// Opens the session browser, when there is a store to browse.
    pub fn open_browser(&mut self) {
        match &self.browser_requests {
            Some(requests) => self.browser = Some(super::browser::Browser::open(requests.clone())),
            None => self
                .chat
                .push(Entry::Error("there is no session store to browse".into())),
        }
    }

    /// Starts over on a resumed session: the earlier conversation shown, the rest cleared.
    pub fn resumed(&mut self, events: &[Event], notice: String) {
        self.chat.clear();
        // The old engine is gone, and what it had not taken up with it.
        let unsent = std::mem::take(&mut self.chat.queued);
        self.unconfirmed = 0;
        self.pending = None;
        self.busy = Busy::Idle;
        self.in_turn = false;
        self.shown_block = None;
        self.clear_streaming();
        self.setup = None;
        self.proposed.clear();
        self.terminal.clear();
        self.images.forget();
        self.show_history(events);
        self.chat.push(Entry::Notice(notice));
        if !unsent.is_empty() {
            self.chat.push(Entry::Notice(format!(
                "not sent (the session changed before the model got them), still in the input history (↑): {}",
                unsent
                    .iter()
                    .map(|t| format!("\"{}\"", short(t, 40)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }

    /// Shows an earlier conversation (a resumed session, replayed by the store as events)
    /// through the normal event path: messages, blocks with their decision, output and
    /// status. Nothing runs; afterwards the workbench is idle.
    pub fn show_history(&mut self, events: &[Event]) {
        for event in events {
            self.engine(event.clone());
        }
        self.pending = None;
        self.busy = Busy::Idle;
        self.in_turn = false;
        self.chat.bottom();
        self.tab = Focus::Chat;
        if self.focus == Focus::Code {
            self.focus = Focus::Input;
        }
    }

    /// The Markdown transcript of what the chat shows: what `/export` writes when the
    /// session cannot be read from the store (which otherwise writes the complete one).
    pub fn transcript(&self) -> String {
        let mut out = String::from("# oi-tui session\n\n");
        for entry in &self.chat.entries {
            match entry {
                Entry::User(t) => out.push_str(&format!("## You\n\n{t}\n\n")),
                Entry::Assistant(t) => out.push_str(&format!("## oi-tui\n\n{t}\n\n")),
                Entry::Block {
                    id,
                    language,
                    state,
                    detail,
                    ..
                } => {
                    let code = self.proposed.get(id).map_or("", |b| b.code.as_str());
                    let line = format!("block {id} · {} · {detail}", state.label());
                    out.push_str(&format!(
                        "{}\n\n{}\n\n",
                        crate::store::fence(language, code),
                        crate::store::emphasis(line.trim_end_matches([' ', '·']))
                    ));
                }
                Entry::Notice(t) => out.push_str(&format!("> {t}\n\n")),
                Entry::Error(t) => out.push_str(&format!("> **Error:** {t}\n\n")),
            }
        }
        out
    }

    /// Seconds since the busy state began, for the status bar.
    pub fn busy_for(&self) -> Option<Duration> {
        match self.busy {
            Busy::Idle => None,
            Busy::Thinking(since) | Busy::Running(_, since) => Some(since.elapsed()),
        }
    }
}

pub fn new_input() -> TextArea<'static> {
    let mut input = TextArea::default();
    input.set_placeholder_text("Message the model · !cmd runs a shell command · /help");
    input
}

pub(super) fn first_line(code: &str) -> String {
    let line = code.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    short(line.trim(), 48)
}

pub(super) fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// The last `n` lines of `text`.
pub(super) fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Where a block comes from, for titles: `block 2 of 3` of the model's reply, or the caller
/// that sent it (`from claude-code over MCP`).
pub(super) fn position(block: &ProposedBlock, index: usize, of: usize) -> String {
    match &block.caller {
        Some(caller) => crate::protocol::caller_origin(&crate::safe_text::visible(&caller.name)),
        None => format!("block {index} of {of}"),
    }
}

pub(super) fn parse_index(label: &str) -> Option<(usize, usize)> {
    let rest = label.strip_prefix("block ")?;
    let (a, b) = rest.split_once(" of ")?;
    Some((a.parse().ok()?, b.parse().ok()?))
}
