//! The workbench's state and its reducer: `update(msg)` changes the state and returns the
//! effects (ops for the engine, quit, copy). Nothing here draws or does I/O, so every path
//! can be tested by feeding messages.
//!
//! States: idle (typing), thinking (the model streams), awaiting (a block waits for y / e / n
//! / r / a), editing (the block in an editor; Ctrl-S accepts, Esc abandons), giving a reason
//! (the input takes it), running (the block's terminal is live). Ctrl-C interrupts whatever
//! runs; on idle a second Ctrl-C within 2 s quits.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crossterm::event::{KeyEvent, MouseEvent};
use tui_textarea::TextArea;

use super::chat::{BlockState, Chat, Entry};
use super::terminal::TerminalPane;
use super::theme::Theme;
use crate::exec::RunStatus;
use crate::protocol::{BlockId, Event, Op, ProposedBlock, TurnEnd};

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
}

impl Pending {
    pub fn code(&self) -> &str {
        self.edited.as_deref().unwrap_or(&self.block.code)
    }
}

pub struct App {
    pub theme: Theme,
    pub keymap: super::keymap::Keymap,
    pub model: String,
    pub approval: String,
    pub cwd: String,
    pub chat: Chat,
    /// The assistant's message while it streams.
    pub streaming: String,
    /// A block's code while its tool call streams.
    pub streaming_code: Option<(Option<String>, String)>,
    pub proposed: HashMap<BlockId, ProposedBlock>,
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
    pub chat_scroll: usize,
    pub tokens: (u64, u64),
    pub last_ctrl_c: Option<Instant>,
    pub confirm_quit: bool,
    /// Shown in place of the chat while there is no model and nothing was said.
    pub setup: Option<String>,
    pub spinner: usize,
    /// In a narrow terminal, which pane the tab row shows.
    pub tab: Focus,
    /// The session browser, while it is open.
    pub browser: Option<super::browser::Browser>,
    /// Open the browser as soon as the store is there (`--sessions`).
    pub open_browser_at_start: bool,
    /// Where the browser's requests go (None: no store).
    pub browser_requests: Option<std::sync::mpsc::Sender<super::browser::Request>>,
    /// Where each pane was drawn last, for the mouse.
    pub pane_areas: Vec<(Focus, ratatui::layout::Rect)>,
    /// The code pane's highlighted lines, by a hash of what they show.
    pub code_cache: std::cell::RefCell<Option<(u64, Vec<ratatui::text::Line<'static>>)>>,
}

impl App {
    pub fn new(theme: Theme) -> App {
        App {
            theme,
            keymap: super::keymap::Keymap::default(),
            model: String::new(),
            approval: String::new(),
            cwd: String::new(),
            chat: Chat::default(),
            streaming: String::new(),
            streaming_code: None,
            proposed: HashMap::new(),
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
            chat_scroll: 0,
            tokens: (0, 0),
            last_ctrl_c: None,
            confirm_quit: false,
            setup: None,
            spinner: 0,
            tab: Focus::Chat,
            browser: None,
            open_browser_at_start: false,
            browser_requests: None,
            pane_areas: Vec::new(),
            code_cache: std::cell::RefCell::new(None),
        }
    }

    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        match msg {
            Msg::Key(key) => self.key(key),
            Msg::Paste(text) => self.paste(&text),
            Msg::Mouse(mouse) => self.mouse(mouse),
            Msg::Engine(event) => {
                self.engine(event);
                Vec::new()
            }
            Msg::Tick => {
                self.spinner = self.spinner.wrapping_add(1);
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
    pub fn animating(&self) -> bool {
        self.busy != Busy::Idle
    }

    /// The terminal pane's size changed: resize the emulator and the kernels' PTYs.
    pub fn resize_terminal(&mut self, rows: u16, cols: u16) -> Vec<Effect> {
        if !self.terminal.resize(rows, cols) {
            return Vec::new();
        }
        vec![Effect::Op(Op::Resize { rows, cols })]
    }

    fn engine(&mut self, event: Event) {
        match event {
            Event::SessionConfigured {
                model,
                approval,
                cwd,
                ..
            } => {
                self.model = model;
                self.approval = approval;
                self.cwd = cwd;
            }
            Event::RequestStarted { .. } => {
                self.in_turn = true;
                self.busy = Busy::Thinking(Instant::now());
                self.streaming.clear();
            }
            Event::AssistantDelta { text } => self.streaming.push_str(&text),
            Event::BlockDelta {
                language_tag, code, ..
            } => self.streaming_code = Some((language_tag, code)),
            Event::AssistantMessage { text } => {
                self.streaming.clear();
                if !text.trim().is_empty() {
                    self.chat.push(Entry::Assistant(text));
                }
                self.chat_scroll = 0;
            }
            Event::BlockProposed { block, index, of } => {
                self.streaming_code = None;
                self.proposed.insert(block.id, block.clone());
                self.chat.push(Entry::Block {
                    id: block.id,
                    language: language_name(&block),
                    first_line: first_line(&block.code),
                    state: BlockState::Proposed,
                    detail: format!("{index} of {of}"),
                });
                self.shown_block = Some((block, format!("block {index} of {of}")));
            }
            Event::ApprovalNeeded { block_id } => {
                // The engine waits for the person now, not the other way round.
                self.busy = Busy::Idle;
                if let Some(block) = self.proposed.get(&block_id).cloned() {
                    let (index, of) = self
                        .shown_block
                        .as_ref()
                        .and_then(|(_, label)| parse_index(label))
                        .unwrap_or((1, 1));
                    self.pending = Some(Pending {
                        block,
                        index,
                        of,
                        edited: None,
                        editor: None,
                        reason: false,
                    });
                    if self.focus == Focus::Terminal {
                        self.focus = Focus::Input;
                    }
                    self.tab = Focus::Code;
                }
            }
            Event::BlockSkipped { block_id, reason } => {
                self.clear_pending(block_id);
                self.chat.update_block(
                    block_id,
                    BlockState::Skipped,
                    reason.map(|r| short(&r, 80)).unwrap_or_default(),
                );
            }
            Event::ExecStarted {
                block_id,
                language,
                code,
                edited,
            } => {
                self.clear_pending(block_id);
                self.busy = Busy::Running(block_id, Instant::now());
                if !self
                    .chat
                    .entries
                    .iter()
                    .any(|e| matches!(e, Entry::Block { id, .. } if *id == block_id))
                {
                    // A block the person started (`!cmd`).
                    self.chat.push(Entry::Block {
                        id: block_id,
                        language: language.name().to_string(),
                        first_line: first_line(&code),
                        state: BlockState::Running,
                        detail: String::new(),
                    });
                }
                self.chat.update_block(
                    block_id,
                    BlockState::Running,
                    if edited {
                        "edited".into()
                    } else {
                        String::new()
                    },
                );
                self.terminal.begin_block(block_id, language.name());
                if let Some((block, _)) = &mut self.shown_block
                    && block.id == block_id
                {
                    block.code = code;
                }
                if self.tab != Focus::Chat {
                    self.tab = Focus::Terminal;
                }
            }
            Event::ExecOutput { data, .. } => self.terminal.process(&data),
            Event::ExecAwaitingInput { block_id, waiting } => {
                if matches!(self.busy, Busy::Running(id, _) if id == block_id) {
                    self.terminal.set_waiting(waiting);
                }
            }
            Event::ExecFinished { block_id, result } => {
                self.terminal.end_block();
                let edited = self.chat.entries.iter().any(|e| {
                    matches!(e, Entry::Block { id, detail, .. } if *id == block_id && detail == "edited")
                });
                let state = match result.status {
                    RunStatus::Success | RunStatus::Written => BlockState::Ran,
                    RunStatus::Interrupted | RunStatus::TimedOut => BlockState::Interrupted,
                    RunStatus::Failed | RunStatus::Unavailable => BlockState::Failed,
                };
                let detail = if edited {
                    format!("{} · edited", result.summary())
                } else {
                    result.summary()
                };
                self.chat.update_block(block_id, state, detail);
                if result.status == RunStatus::Unavailable {
                    for note in &result.notes {
                        self.chat.push(Entry::Error(note.clone()));
                    }
                }
                // The model hears of it next, unless this was a `!cmd` between turns.
                self.busy = if self.in_turn {
                    Busy::Thinking(Instant::now())
                } else {
                    Busy::Idle
                };
            }
            Event::Retry {
                attempt,
                max,
                delay_ms,
                reason,
            } => self.chat.push(Entry::Notice(format!(
                "the request failed ({reason}); retry {attempt} of {max} in {:.1} s",
                delay_ms as f64 / 1000.0
            ))),
            Event::Notice { message } => self.chat.push(Entry::Notice(message)),
            Event::HistoryChanged { note, messages } => {
                if messages == 0 {
                    self.chat.clear();
                    self.terminal.clear();
                    self.shown_block = None;
                }
                self.chat.push(Entry::Notice(note));
            }
            Event::Usage {
                prompt_tokens,
                completion_tokens,
            } => {
                self.tokens.0 += prompt_tokens;
                self.tokens.1 += completion_tokens;
            }
            Event::Error { message, .. } => self.chat.push(Entry::Error(message)),
            Event::TurnFinished { end } => {
                if !self.streaming.trim().is_empty() {
                    let text = std::mem::take(&mut self.streaming);
                    self.chat.push(Entry::Assistant(text));
                }
                self.streaming.clear();
                self.streaming_code = None;
                self.pending = None;
                self.busy = Busy::Idle;
                self.in_turn = false;
                // In a narrow terminal, the answer is what to see next.
                self.tab = Focus::Chat;
                match end {
                    TurnEnd::Interrupted => self.chat.push(Entry::Notice("interrupted".into())),
                    TurnEnd::MaxTurns | TurnEnd::Done | TurnEnd::Declined | TurnEnd::Error => {}
                }
            }
        }
    }

    fn clear_pending(&mut self, block_id: BlockId) {
        if self
            .pending
            .as_ref()
            .is_some_and(|p| p.block.id == block_id)
        {
            self.pending = None;
        }
    }

    fn paste(&mut self, text: &str) -> Vec<Effect> {
        let text = text.replace("\r\n", "\n");
        if let Some(editor) = self.pending.as_mut().and_then(|p| p.editor.as_mut()) {
            editor.insert_str(&text);
        } else if self.focus == Focus::Terminal {
            // Into the running program, as if typed (Enter is a carriage return).
            return vec![Effect::Op(Op::Input {
                data: text.replace('\n', "\r").into_bytes(),
            })];
        } else {
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
    pub fn resumed(&mut self, messages: &[crate::llm::Message], notice: String) {
        self.chat.clear();
        self.pending = None;
        self.busy = Busy::Idle;
        self.in_turn = false;
        self.shown_block = None;
        self.streaming.clear();
        self.setup = None;
        self.show_history(messages);
        self.chat.push(Entry::Notice(notice));
    }

    /// Shows an earlier conversation (a resumed session) in the chat.
    pub fn show_history(&mut self, messages: &[crate::llm::Message]) {
        for m in messages {
            match m.role {
                crate::llm::Role::User => self.chat.push(Entry::User(m.content.clone())),
                crate::llm::Role::Assistant if !m.content.trim().is_empty() => {
                    self.chat.push(Entry::Assistant(m.content.clone()))
                }
                _ => {}
            }
        }
    }

    /// The Markdown transcript of the conversation (for `/export`).
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
                    out.push_str(&format!(
                        "```{language}\n{code}\n```\n\n*block #{id}: {} {detail}*\n\n",
                        state.label()
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

fn language_name(block: &ProposedBlock) -> String {
    block
        .language
        .map_or_else(|| block.language_tag.clone(), |l| l.name().to_string())
}

fn first_line(code: &str) -> String {
    let line = code.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    short(line.trim(), 48)
}

fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

fn parse_index(label: &str) -> Option<(usize, usize)> {
    let rest = label.strip_prefix("block ")?;
    let (a, b) = rest.split_once(" of ")?;
    Some((a.parse().ok()?, b.parse().ok()?))
}
