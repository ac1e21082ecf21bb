//! A saved session replayed as protocol events, so that a face shows a resumed session
//! through its normal event path, exactly as it was: the person's messages, the model's
//! answers, and each block with its code, the decision (run, edited, skipped with the
//! reason), its output tail and its status. Nothing runs again: the events only describe
//! what happened.
//!
//! And the conversation a resumed session sends to the model: every tool call gets its
//! result, right after its message. A session stopped by `kill -9` (or a crash, or a power
//! cut) in the middle of a turn has a reply whose calls were never answered; hosted APIs
//! reject such a conversation, and the model would not know what became of its code. Each
//! unanswered call gets the result the engine would have given: the output that had arrived
//! and that oi-tui stopped while the block ran, or that the block never ran.

use std::time::Duration;

use super::export::Item;
use super::read::{Exported, INTERRUPTED, StoredBlock, StoredMessage};
use super::{Store, StoreError};
use crate::exec::{Language, RunResult, RunStatus};
use crate::llm::{Message, Role};
use crate::protocol::{BlockId, Event, ProposedBlock};

/// The note on a block that was running when oi-tui stopped.
pub const UNFINISHED: &str = "interrupted: oi-tui stopped while it ran; its end was not recorded.";

/// What the model hears of a block that was running when oi-tui stopped.
const INTERRUPTED_FOR_MODEL: &str = "oi-tui was stopped (killed) before the block ended, so the block did not finish and its exit status is unknown; the output above is what had arrived by then. The kernel went with oi-tui: its variables, imports and working directory are gone.";
/// ... of a block that waited for the person's decision when oi-tui stopped.
const NOT_DECIDED_FOR_MODEL: &str =
    "Not run: oi-tui stopped while this block waited for the user's decision; it did not run.";
/// ... of a call oi-tui stopped before it showed it to anyone.
const NOT_REACHED_FOR_MODEL: &str =
    "Not run: oi-tui stopped before this block was reached; it did not run.";
/// ... at the end of results given in one message (models without tools).
const REST_FOR_MODEL: &str =
    "oi-tui stopped during these blocks: any block of the reply not listed here did not run.";

impl Store {
    /// The events that show session `id` as it was.
    pub fn replay(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        Ok(self.export(id)?.replay())
    }

    /// The conversation to resume: the messages not dropped by /undo or /reset, where every
    /// tool call is answered, in order, right after its message (see the module's text), and
    /// blocks proposed in text (models without tools) that oi-tui stopped before reporting
    /// are reported in a message after their reply. A block's output is cut to `max_output`
    /// characters as the engine cuts it.
    ///
    /// Returns the messages and how many of them, at the end, are not in the store: the
    /// results written here for the last reply. The caller records those, so that the store
    /// and the conversation stay the same list (`/undo` counts on it). Results written for
    /// an earlier reply (a session resumed by an older oi-tui) are sent but not recorded.
    pub fn resume_conversation(
        &self,
        id: &str,
        max_output: usize,
    ) -> Result<(Vec<Message>, usize), StoreError> {
        let exported = self.export(id)?;
        let kept: Vec<&StoredMessage> = exported.messages.iter().filter(|m| !m.dropped).collect();
        // Each message, and whether it was written here (not in the store).
        let mut out: Vec<(Message, bool)> = Vec::with_capacity(kept.len());
        let mut i = 0;
        while i < kept.len() {
            let m = kept[i];
            out.push((message(m), false));
            i += 1;
            if m.role != "assistant" {
                continue;
            }
            // The blocks of this reply, in the order they were proposed.
            let blocks: Vec<&StoredBlock> = exported
                .blocks
                .iter()
                .filter(|b| b.after_message == Some(m.id) && b.decision != "user")
                .collect();
            if !m.tool_calls.is_empty() {
                let mut results = Vec::new();
                while i < kept.len() && kept[i].role == "tool" {
                    results.push(kept[i]);
                    i += 1;
                }
                for (n, call) in m.tool_calls.iter().enumerate() {
                    let answer = results
                        .iter()
                        .find(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()));
                    match answer {
                        Some(r) => out.push((message(r), false)),
                        None => {
                            let text = self.result_text(id, blocks.get(n).copied(), max_output)?;
                            out.push((Message::tool_result(call.id.clone(), text), true));
                        }
                    }
                }
            } else if !blocks.is_empty() {
                // Without tools, the results follow as a message the person did not write.
                let reported = kept.get(i).is_some_and(|n| results_message(n));
                if !reported {
                    let text = self.results_message(id, &blocks, max_output)?;
                    out.push((Message::user(text), true));
                }
            }
        }
        let unrecorded = out.iter().rev().take_while(|(_, added)| *added).count();
        Ok((out.into_iter().map(|(m, _)| m).collect(), unrecorded))
    }

    /// The result the model gets for a call whose answer was never recorded, from its block
    /// (None: oi-tui stopped before the block was recorded).
    fn result_text(
        &self,
        session: &str,
        block: Option<&StoredBlock>,
        max_output: usize,
    ) -> Result<String, StoreError> {
        let Some(b) = block else {
            return Ok(NOT_REACHED_FOR_MODEL.to_string());
        };
        Ok(match b.decision.as_str() {
            "run" | "edited" => {
                let mut text = String::new();
                if b.decision == "edited"
                    && let Some(code) = &b.edited_code
                {
                    // As the engine says it (see `engine::turn`).
                    text.push_str(
                        "The user edited the block before running it. The code that ran:\n",
                    );
                    text.push_str(&fenced(&b.language, code));
                    text.push_str("\nIts output:\n");
                }
                match (&b.status, &b.output) {
                    (Some(_), Some(output)) => text.push_str(output),
                    (Some(status), None) => text.push_str(&format!("[{status}]\n")),
                    (None, _) => {
                        match self.partial_output(session, b.block_id, max_output)? {
                            Some(output) => {
                                text.push_str(&output);
                                if !text.ends_with('\n') {
                                    text.push('\n');
                                }
                            }
                            None => text.push_str("(no output)\n"),
                        }
                        text.push_str(&format!("[{INTERRUPTED}]\n{INTERRUPTED_FOR_MODEL}\n"));
                    }
                }
                text
            }
            "skipped" => skipped_text(b.skip_reason.as_deref()),
            _ => NOT_DECIDED_FOR_MODEL.to_string(),
        })
    }

    /// The results of a reply's blocks in one message, as the engine writes it for a model
    /// without tools.
    fn results_message(
        &self,
        session: &str,
        blocks: &[&StoredBlock],
        max_output: usize,
    ) -> Result<String, StoreError> {
        let count = blocks.len();
        let mut text = String::new();
        for (i, b) in blocks.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            let name = Language::parse(&b.language)
                .map_or_else(|| b.language.clone(), |l| l.name().to_string());
            if count > 1 {
                text.push_str(&format!("Block {} of {count} ({name}):\n", i + 1));
            } else {
                text.push_str(&format!("The {name} block:\n"));
            }
            text.push_str(&self.result_text(session, Some(b), max_output)?);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        text.push_str(REST_FOR_MODEL);
        text.push('\n');
        Ok(text)
    }
}

/// A stored message as the model gets it.
fn message(m: &StoredMessage) -> Message {
    Message {
        role: match m.role.as_str() {
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => Role::User,
        },
        content: m.content.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
    }
}

/// The message after a reply that reports its blocks' results (models without tools): one
/// the person did not write, or, in a session recorded before that was kept, one that reads
/// as the engine writes results (`The shell block:`, `Block 1 of 2 (python):`).
fn results_message(m: &StoredMessage) -> bool {
    if m.role != "user" {
        return false;
    }
    match m.said.as_deref() {
        Some(said) => said.is_empty(),
        None => {
            let first = m.content.lines().next().unwrap_or("");
            first.starts_with("Block 1 of ")
                || (first.starts_with("The ") && first.ends_with(" block:"))
        }
    }
}

/// What the model hears of a skipped block, as the engine says it: oi-tui's own reasons
/// (`Not run: ...`, `Error: ...`) as they are, the person's as their reason.
fn skipped_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) if r.starts_with("Not run") || r.starts_with("Error:") => r.to_string(),
        Some(r) => format!("The user skipped this block; it did not run. Their reason: {r}"),
        None => "The user skipped this block; it did not run.".to_string(),
    }
}

/// Code in a fence longer than any run of backticks in it (as the engine fences it).
fn fenced(tag: &str, code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{tag}\n{code}\n{fence}\n")
}

impl Exported {
    /// The events that show this session as it was (see the module's text).
    pub fn replay(&self) -> Vec<Event> {
        let timeline = self.timeline();
        let mut events = Vec::new();
        for (at, item) in timeline.iter().enumerate() {
            match item {
                Item::Message(m) => match m.role.as_str() {
                    "user" if !m.shown().trim().is_empty() => events.push(Event::UserMessage {
                        text: m.shown().to_string(),
                    }),
                    "assistant" if !m.content.trim().is_empty() => {
                        events.push(Event::AssistantMessage {
                            text: m.content.clone(),
                        });
                        if m.partial {
                            events.push(Event::Notice {
                                message: format!(
                                    "The reply above is partial: {}.",
                                    super::export::PARTIAL_REPLY
                                ),
                            });
                        }
                    }
                    _ => {}
                },
                Item::Block(b) => {
                    // Its place among the blocks of the same reply: `2 of 3`.
                    let same = |i: &Item<'_>| matches!(i, Item::Block(o) if o.after_message == b.after_message && o.decision != "user");
                    let index = timeline[..at].iter().filter(|i| same(i)).count() + 1;
                    let of = timeline.iter().filter(|i| same(i)).count();
                    block_events(b, index, of.max(index), &mut events);
                }
            }
        }
        events
    }
}

fn block_events(b: &StoredBlock, index: usize, of: usize, events: &mut Vec<Event>) {
    let id = b.block_id.max(0) as BlockId;
    if let Some(tool) = crate::protocol::ToolRef::parse(&b.language) {
        return tool_events(b, id, tool, index, of, events);
    }
    let language = Language::parse(&b.language);
    if b.decision != "user" {
        events.push(proposed(b, id, language, None, (index, of)));
    }
    match b.decision.as_str() {
        "run" | "edited" | "user" => {
            let language = language.unwrap_or(Language::Shell);
            let code = b
                .edited_code
                .clone()
                .unwrap_or_else(|| b.proposed_code.clone());
            events.push(Event::ExecStarted {
                block_id: id,
                language,
                code,
                edited: b.decision == "edited",
            });
            if let Some(output) = super::export::shown_output(b) {
                events.push(Event::ExecOutput {
                    block_id: id,
                    data: terminal_text(output).into_bytes(),
                });
            }
            events.push(Event::ExecFinished {
                block_id: id,
                result: result(b, id, language),
            });
        }
        "skipped" => events.push(Event::BlockSkipped {
            block_id: id,
            reason: b.skip_reason.clone(),
        }),
        _ => events.push(undecided(id)),
    }
}

/// A recorded block as it was proposed: by the model or by a caller (a tool call when `tool`).
fn proposed(
    b: &StoredBlock,
    id: BlockId,
    language: Option<Language>,
    tool: Option<crate::protocol::ToolRef>,
    (index, of): (usize, usize),
) -> Event {
    Event::BlockProposed {
        block: ProposedBlock {
            id,
            language_tag: b.language.clone(),
            language,
            code: b.proposed_code.clone(),
            // The call it answered is long gone: only who sent it matters now.
            caller: b.caller.as_ref().map(|name| crate::protocol::Caller {
                name: name.clone(),
                call: 0,
            }),
            tool: tool.map(Box::new),
        },
        index,
        of,
        verdict: None,
        gate: None,
        allow: None,
    }
}

/// A block the session ended on while it waited for a decision.
fn undecided(id: BlockId) -> Event {
    Event::BlockSkipped {
        block_id: id,
        reason: Some("not decided: the session ended while it waited".to_string()),
    }
}

/// A call of an MCP tool, as it was recorded (its tag is `mcp:SERVER/TOOL`).
fn tool_events(
    b: &StoredBlock,
    id: BlockId,
    tool: crate::protocol::ToolRef,
    index: usize,
    of: usize,
    events: &mut Vec<Event>,
) {
    events.push(proposed(b, id, None, Some(tool.clone()), (index, of)));
    match b.decision.as_str() {
        "run" | "edited" => {
            events.push(Event::ToolStarted {
                block_id: id,
                tool,
                arguments: b
                    .edited_code
                    .clone()
                    .unwrap_or_else(|| b.proposed_code.clone()),
                edited: b.decision == "edited",
            });
            events.push(Event::ToolFinished {
                block_id: id,
                ok: b.status.as_deref() == Some("ran"),
                output: match (&b.tail, &b.status) {
                    (Some(tail), _) => tail.clone(),
                    (None, None) => UNFINISHED.to_string(),
                    (None, Some(_)) => String::new(),
                },
                duration_ms: b.duration_ms.unwrap_or(0).max(0) as u64,
            });
        }
        "skipped" => events.push(Event::BlockSkipped {
            block_id: id,
            reason: b.skip_reason.clone(),
        }),
        _ => events.push(undecided(id)),
    }
}

/// The block's result as it was recorded; a block whose end was never recorded (oi-tui was
/// killed while it ran) ends as interrupted, with a note that says so.
fn result(b: &StoredBlock, id: BlockId, language: Language) -> RunResult {
    let status = match b.status.as_deref() {
        Some("ran") => RunStatus::Success,
        Some("failed") => RunStatus::Failed,
        Some("interrupted") | None => RunStatus::Interrupted,
        Some("timed out") => RunStatus::TimedOut,
        Some("not run") => RunStatus::Unavailable,
        Some("written") => RunStatus::Written,
        Some(_) => RunStatus::Failed,
    };
    let mut notes = b.notes.clone();
    if b.status.is_none() {
        notes.push(UNFINISHED.to_string());
    }
    RunResult {
        exit_code: b.exit_code.and_then(|c| i32::try_from(c).ok()),
        signal: b.signal.clone(),
        // Unknown for a block whose end was never recorded: zero, which is shown as no
        // duration (see `RunResult::summary`).
        duration: Duration::from_millis(b.duration_ms.unwrap_or(0).max(0) as u64),
        output: b.tail.clone().unwrap_or_default(),
        state_lost: b.state_lost,
        notes,
        images: b.images.clone(),
        ..RunResult::empty(id, language, status)
    }
}

/// Text for a terminal: line feeds become CR LF, so that each line starts at the left.
fn terminal_text(text: &str) -> String {
    let mut out = text.replace("\r\n", "\n").replace('\n', "\r\n");
    if !out.ends_with("\r\n") {
        out.push_str("\r\n");
    }
    out
}
