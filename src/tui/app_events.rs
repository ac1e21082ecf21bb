//! The workbench's reducer for the engine's events: what each one changes in the chat, the
//! code and terminal panes, the decision that waits, and the status bar.

use std::time::Instant;

use super::app::{App, Busy, Focus, Pending, first_line, parse_index, position, short, tail_lines};
use super::chat::{BlockState, Entry};
use crate::exec::RunStatus;
use crate::protocol::{Event, TurnEnd};

impl App {
    pub(super) fn engine(&mut self, event: Event) {
        match event {
            Event::SessionConfigured {
                model,
                approval,
                cwd,
                sandbox,
                executor,
                ..
            } => {
                self.model = model;
                self.approval = approval;
                self.cwd = cwd;
                if let Some(sandbox) = sandbox {
                    self.sandbox = Some(sandbox);
                }
                self.executor = executor.unwrap_or_else(|| "local".to_string());
            }
            Event::Connecting {
                executor,
                connecting,
            } => {
                if connecting {
                    self.chat.push(Entry::Notice(format!(
                        "Connecting to {}… (Ctrl-C cancels)",
                        crate::safe_text::visible_line(&executor)
                    )));
                    self.connecting = Some(executor);
                } else {
                    self.connecting = None;
                }
            }
            Event::ExecutorChanged {
                executor,
                note,
                cwd,
                sandbox,
            } => {
                self.executor = executor;
                if let Some(sandbox) = sandbox {
                    self.sandbox = Some(sandbox);
                }
                match cwd {
                    Some(cwd) => self.cwd = cwd,
                    // (Not this machine's directory: the kernels are to run there.)
                    None if self.executor != "local" => self.cwd = "not connected".to_string(),
                    None => {}
                }
                self.chat.push(Entry::Notice(note));
            }
            Event::RulesChanged { approval, note } => {
                self.approval = approval;
                self.chat.push(Entry::Notice(note));
            }
            Event::SandboxChanged { status, note } => {
                self.sandbox = Some(status);
                self.chat.push(Entry::Notice(note));
            }
            Event::UserMessage { text } => self.chat.push(Entry::User(text)),
            Event::MessageTaken { text } => {
                // A message shown as said when it was sent is confirmed; a queued one is
                // said now, here, where the model reads it; another face's is shown.
                if self.unconfirmed > 0 {
                    self.unconfirmed -= 1;
                } else if self.chat.take_queued().is_none() {
                    self.chat.push(Entry::User(text));
                }
            }
            Event::RequestStarted { .. } => {
                if !self.in_turn {
                    // A new turn: where its answer shows is the workbench's to choose again.
                    self.tab_by_person = false;
                }
                self.in_turn = true;
                self.busy = Busy::Thinking(Instant::now());
                self.clear_streaming();
                self.streaming_code = None;
                self.retry_entry = None;
            }
            Event::AssistantDelta { text } => self.streaming.push_str(&text),
            Event::BlockDelta {
                index,
                language_tag,
                delta,
            } => {
                // Another call of the reply starts its own code.
                let code = match self.streaming_code.take() {
                    Some(code) if code.index == index => code,
                    _ => super::code_stream::StreamingCode::new(index, None),
                };
                let code = self.streaming_code.insert(code);
                code.push(&delta, language_tag);
            }
            Event::AssistantMessage { text } => {
                self.clear_streaming();
                if !text.trim().is_empty() {
                    self.chat.push(Entry::Assistant(text));
                }
            }
            Event::BlockProposed {
                block,
                index,
                of,
                verdict,
                gate,
                allow,
            } => {
                // What its stream highlighted is not highlighted again.
                if let Some(streamed) = self
                    .streaming_code
                    .take()
                    .and_then(|code| code.into_highlighted())
                {
                    self.code_cache.take_over(
                        streamed,
                        &block.code,
                        block.language_name(),
                        &self.theme,
                    );
                }
                if let Some(allow) = allow {
                    self.allow_offers.insert(block.id, allow);
                }
                if let (Some(verdict), Some(gate)) = (verdict, gate) {
                    self.verdicts.insert(block.id, (verdict, gate));
                }
                self.note_new(Focus::Code);
                self.proposed.insert(block.id, block.clone());
                self.chat.push(Entry::Block {
                    id: block.id,
                    language: block.language_name().to_string(),
                    first_line: first_line(&block.code),
                    state: BlockState::Proposed,
                    detail: match &block.caller {
                        Some(caller) => {
                            format!("from {}", crate::safe_text::visible(&caller.name))
                        }
                        None => format!("{index} of {of}"),
                    },
                    code: block.code.clone(),
                    output: String::new(),
                    expanded: false,
                });
                let label = position(&block, index, of);
                self.shown_block = Some((block, label));
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
                    self.pending = Some(Pending::new(block, index, of));
                    self.code.reset();
                    self.arrive_at_decision();
                }
            }
            Event::EscalationNeeded { block_id, reason } => self.offer_outside(block_id, reason),
            Event::BlockSkipped { block_id, reason } => {
                self.clear_pending(block_id);
                // A block the policy stopped says why in its own words (the rule, the text).
                let stopped = self.verdicts.get(&block_id).and_then(|(_, gate)| {
                    use crate::protocol::GateAction;
                    matches!(gate.action, GateAction::Deny | GateAction::Decline)
                        .then(|| gate.reason.clone())
                });
                self.chat.update_block(
                    block_id,
                    BlockState::Skipped,
                    stopped
                        .or(reason)
                        .map(|r| short(&r, 80))
                        .unwrap_or_default(),
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
                        code: code.clone(),
                        output: String::new(),
                        expanded: false,
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
                if let Some(Entry::Block { code: shown, .. }) = self
                    .chat
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| matches!(e, Entry::Block { id, .. } if *id == block_id))
                {
                    shown.clone_from(&code);
                }
                if let Some((block, _)) = &mut self.shown_block
                    && block.id == block_id
                {
                    block.code = code;
                }
                // The decision is taken: the keyboard goes back to the input, and a narrow
                // terminal shows the output.
                if self.focus == Focus::Code {
                    self.focus = Focus::Input;
                }
                self.tab = Focus::Terminal;
                self.output_shown = false;
            }
            Event::ExecOutput { data, .. } => {
                if !data.is_empty() {
                    self.note_new(Focus::Terminal);
                }
                self.output_shown |= !data.is_empty();
                self.terminal.process(&data);
            }
            Event::ExecAwaitingInput { block_id, waiting } => {
                if matches!(self.busy, Busy::Running(id, _) if id == block_id) {
                    self.terminal.set_waiting(waiting);
                }
            }
            Event::ExecFinished { block_id, result } => {
                self.block_images(block_id, &result.images);
                self.terminal.end_block();
                let edited = self.chat.entries.iter().any(|e| {
                    matches!(e, Entry::Block { id, detail, .. } if *id == block_id && detail == "edited")
                });
                let state = match result.status {
                    RunStatus::Success | RunStatus::Written => BlockState::Ran,
                    RunStatus::Interrupted => BlockState::Interrupted,
                    RunStatus::TimedOut => BlockState::TimedOut,
                    RunStatus::Failed | RunStatus::Unavailable => BlockState::Failed,
                };
                self.chat.block_output(
                    block_id,
                    tail_lines(&result.output, super::chat::OUTPUT_TAIL),
                );
                let detail = if edited {
                    format!("{} · edited", result.summary())
                } else {
                    result.summary()
                };
                let detail = super::images::with_count(detail, result.images.len());
                self.chat.update_block(block_id, state, detail);
                if result.status == RunStatus::Unavailable {
                    for note in &result.notes {
                        self.chat.push(Entry::Error(note.clone()));
                    }
                } else if result.state_lost {
                    // Why the kernel's state is gone (killed after the grace period, the
                    // connection to its host dropped, it exited) is the person's to know too,
                    // not only the model's. (That it was interrupted, the block's line says.)
                    for note in result
                        .notes
                        .iter()
                        .filter(|n| *n != "The block was interrupted.")
                    {
                        self.chat.push(Entry::Notice(note.clone()));
                    }
                }
                // The model hears of it next, unless this was a `!cmd` between turns.
                self.busy = if self.in_turn {
                    Busy::Thinking(Instant::now())
                } else {
                    Busy::Idle
                };
            }
            Event::ToolStarted {
                block_id,
                tool,
                edited,
                ..
            } => self.tool_started(block_id, &tool, edited),
            Event::ToolFinished {
                block_id,
                ok,
                output,
                duration_ms,
            } => self.tool_finished(block_id, ok, &output, duration_ms),
            Event::Retry {
                attempt,
                max,
                delay_ms,
                reason,
            } => {
                // One line for the retries of one request, updated in place.
                let notice = Entry::Notice(format!(
                    "the request failed ({reason}); retry {attempt} of {max} in {:.1} s",
                    delay_ms as f64 / 1000.0
                ));
                match self.retry_entry {
                    Some(i) if i + 1 == self.chat.entries.len() => self.chat.replace(i, notice),
                    _ => {
                        self.chat.push(notice);
                        self.retry_entry = Some(self.chat.entries.len() - 1);
                    }
                }
            }
            Event::Notice { message } => {
                // The viewer covers the chat: what is said while it is open shows in it too.
                if self.images.viewer.is_some() {
                    self.images.said = Some(message.clone());
                }
                // A notice about a block that is about to run ("auto-run is on") goes above
                // the block's line, which later shows its result.
                let before_block = matches!(
                    self.chat.entries.last(),
                    Some(Entry::Block {
                        state: BlockState::Proposed,
                        ..
                    })
                );
                if before_block {
                    self.chat
                        .insert(self.chat.entries.len() - 1, Entry::Notice(message));
                } else {
                    self.chat.push(Entry::Notice(message));
                }
            }
            Event::HistoryChanged { note, messages } => {
                if messages == 0 {
                    self.chat.clear();
                    self.terminal.clear();
                    self.images.forget();
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
            Event::StoreTrouble { message, .. } => {
                if self.store_trouble.is_none() {
                    self.chat.push(Entry::Error(message.clone()));
                }
                self.store_trouble = Some(message);
            }
            Event::StoreRecovered { message } => {
                self.store_trouble = None;
                self.chat.push(Entry::Notice(message));
            }
            Event::KernelsRestarted { note, .. } => self.chat.push(Entry::Notice(note)),
            // The block's own events show it; the answer is its caller's.
            Event::CallFinished { .. } => {}
            Event::TurnFinished { end } => {
                if !self.streaming.trim().is_empty() {
                    let text = std::mem::take(&mut self.streaming);
                    self.chat.push(Entry::Assistant(text));
                }
                self.clear_streaming();
                self.streaming_code = None;
                self.pending = None;
                self.busy = Busy::Idle;
                self.in_turn = false;
                if self.focus == Focus::Code {
                    self.focus = Focus::Input;
                }
                // In a narrow terminal, the answer is what to see next, unless the person
                // chose the tab in front themself (then the chat's tab is marked: something
                // new came to it).
                if !self.tab_by_person {
                    self.tab = Focus::Chat;
                }
                match end {
                    TurnEnd::Interrupted => self.chat.push(Entry::Notice("interrupted".into())),
                    TurnEnd::MaxTurns | TurnEnd::Done | TurnEnd::Declined | TurnEnd::Error => {}
                }
            }
        }
    }
}
