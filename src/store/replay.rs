//! A saved session replayed as protocol events, so that a face shows a resumed session
//! through its normal event path, exactly as it was: the person's messages, the model's
//! answers, and each block with its code, the decision (run, edited, skipped with the
//! reason), its output tail and its status. Nothing runs again: the events only describe
//! what happened.

use std::time::Duration;

use super::export::Item;
use super::read::{Exported, StoredBlock};
use super::{Store, StoreError};
use crate::exec::{Language, RunResult, RunStatus};
use crate::protocol::{BlockId, Event, ProposedBlock};

/// The note on a block that was running when oi-tui stopped.
pub const UNFINISHED: &str = "interrupted: oi-tui stopped while it ran; its end was not recorded.";

impl Store {
    /// The events that show session `id` as it was.
    pub fn replay(&self, id: &str) -> Result<Vec<Event>, StoreError> {
        Ok(self.export(id)?.replay())
    }
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
    let language = Language::parse(&b.language);
    if b.decision != "user" {
        events.push(Event::BlockProposed {
            block: ProposedBlock {
                id,
                language_tag: b.language.clone(),
                language,
                code: b.proposed_code.clone(),
            },
            index,
            of,
            verdict: None,
            gate: None,
            allow: None,
        });
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
        _ => events.push(Event::BlockSkipped {
            block_id: id,
            reason: Some("not decided: the session ended while it waited".to_string()),
        }),
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
        duration: Duration::from_millis(b.duration_ms.unwrap_or(0).max(0) as u64),
        output: b.tail.clone().unwrap_or_default(),
        state_lost: b.state_lost,
        notes,
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
