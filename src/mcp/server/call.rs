//! One `execute` call, from the router's updates to an outcome: progress with the output so
//! far (plain text, bounded, at most about ten a second), cancellation (the block is
//! interrupted or never starts; the kernel survives), and approvals — answered by the
//! client through elicitation (a server-to-client request up to 2025-11-25; at 2026-07-28 an
//! `InputRequiredResult` after which the client sends the call again with its answer), by
//! the workbench's person, or refused with how to allow it when nobody can be asked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest, InputRequests,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::schemars::JsonSchema;
use rmcp::service::ElicitationError;
use rmcp::task_manager::TaskContext;
use rmcp::{Peer, RoleServer};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::router::CallUpdate;
use super::session::Backend;
use crate::protocol::{CallOutcome, Decision, Gate, NotRun, ProposedBlock, Verdict};

/// The key of the approval question in an `InputRequiredResult` and its answer.
pub const APPROVAL_KEY: &str = "approve";

/// How to allow a block without asking anyone.
pub const HOW_TO_ALLOW: &str = "To let such blocks run without a question, start the server with `--approval rules` and add an allow rule that covers them to the [policy] table of oi-tui's config (for example allow = [\"python\"]), or use `--approval auto` (-y) to run every block that no deny rule covers.";

/// The form the client fills in when asked to approve a block.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Approval {
    /// true to run the code, false not to
    pub approve: bool,
}
rmcp::elicit_safe!(Approval);

/// `execute`'s arguments (the schema the client sees is the engine's, `execute_tool`).
#[derive(Debug, Clone, Deserialize)]
pub struct ExecuteArgs {
    pub language: String,
    pub code: String,
    pub timeout_secs: Option<f64>,
}

/// Who answers a block that needs approval.
#[derive(Clone)]
pub enum Ask {
    /// The workbench's person: the call waits.
    Person,
    /// The client, by a server-to-client elicitation request (up to 2025-11-25).
    Elicit(Peer<RoleServer>),
    /// The client, by an `InputRequiredResult` (2026-07-28); `Some(answer)` when the call
    /// was sent again with the answer.
    InputRequired(Option<bool>),
    /// Nobody: the block is declined with this reason.
    Nobody(String),
}

/// Where the output so far goes while a block runs.
pub enum Sink {
    None,
    Progress {
        peer: Peer<RoleServer>,
        token: ProgressToken,
    },
    Task(TaskContext),
}

/// What a call came to.
pub enum Step {
    Done(CallOutcome),
    /// The client must answer this question and send the call again.
    InputRequired(InputRequests),
}

/// Runs one call to its end.
pub async fn run(
    backend: Arc<dyn Backend>,
    caller: &str,
    args: &ExecuteArgs,
    ask: Ask,
    mut sink: Sink,
    ct: CancellationToken,
) -> Step {
    if let Ask::InputRequired(Some(false)) = ask {
        return Step::Done(CallOutcome::NotRun {
            why: NotRun::Skipped,
            reason: "The user declined to run it.".to_string(),
        });
    }
    let router = backend.router().clone();
    let mut call = router.call(caller, &args.language, &args.code, args.timeout_secs);
    let mut progress = Progress::default();
    let mut proposed: Option<(ProposedBlock, Option<Verdict>, Option<Gate>)> = None;
    let mut cancelled = false;
    let mut refused: Option<String> = None;
    let mut input_required: Option<InputRequests> = None;
    loop {
        let update = tokio::select! {
            update = call.updates.recv() => update,
            _ = ct.cancelled(), if !cancelled => {
                cancelled = true;
                router.cancel(call.id);
                continue;
            }
        };
        let Some(update) = update else {
            return Step::Done(CallOutcome::NotRun {
                why: NotRun::Cancelled,
                reason: "Not run: oi-tui's engine has stopped.".to_string(),
            });
        };
        match update {
            CallUpdate::Proposed {
                block,
                verdict,
                gate,
            } => proposed = Some((block, verdict, gate)),
            CallUpdate::NeedsApproval { block_id } => {
                let question = question(caller, proposed.as_ref(), &args.code);
                match &ask {
                    Ask::Person => {}
                    Ask::InputRequired(Some(_)) => router.decide(block_id, Decision::Run),
                    Ask::InputRequired(None) => match input_request(question) {
                        Ok(requests) => {
                            input_required = Some(requests);
                            router.cancel(call.id);
                        }
                        Err(e) => {
                            let reason = format!("Not run: cannot ask the client: {e}.");
                            refused = Some(reason.clone());
                            router.decide(block_id, skip(reason));
                        }
                    },
                    Ask::Nobody(reason) => {
                        refused = Some(reason.clone());
                        router.decide(block_id, skip(reason.clone()));
                    }
                    Ask::Elicit(peer) => {
                        let answer = tokio::select! {
                            answer = peer.elicit::<Approval>(question) => Some(answer),
                            _ = ct.cancelled() => None,
                        };
                        let decision = match answer {
                            None => {
                                cancelled = true;
                                router.cancel(call.id);
                                continue;
                            }
                            Some(Ok(Some(Approval { approve: true }))) => Decision::Run,
                            Some(Ok(Some(Approval { approve: false }))) => {
                                skip("The user declined to run it.".into())
                            }
                            Some(Err(ElicitationError::UserDeclined)) => {
                                skip("The user declined to run it.".into())
                            }
                            Some(Err(ElicitationError::UserCancelled)) => {
                                skip("The user dismissed the question without approving it.".into())
                            }
                            Some(Ok(None)) => skip("The client's answer held no decision.".into()),
                            Some(Err(e)) => {
                                let reason = format!(
                                    "Not run: asking the client for approval failed ({e}). {HOW_TO_ALLOW}"
                                );
                                refused = Some(reason.clone());
                                skip(reason)
                            }
                        };
                        router.decide(block_id, decision);
                    }
                }
            }
            CallUpdate::Started { .. } | CallUpdate::AwaitingInput(_) => {}
            CallUpdate::Output(bytes) => {
                if let Some(message) = progress.push(&bytes) {
                    send(&mut sink, progress.count, message).await;
                }
            }
            CallUpdate::Finished { outcome, .. } => {
                if let Some(requests) = input_required {
                    return Step::InputRequired(requests);
                }
                return Step::Done(match (outcome, refused) {
                    // Nobody could be asked: the block was declined, not skipped by a person.
                    (CallOutcome::NotRun { .. }, Some(reason)) => CallOutcome::NotRun {
                        why: NotRun::Declined,
                        reason,
                    },
                    (outcome, _) => outcome,
                });
            }
        }
    }
}

fn skip(reason: String) -> Decision {
    Decision::Skip {
        reason: Some(reason),
    }
}

/// The approval question: who asks, the code, and what the policy says of it.
pub fn question(
    caller: &str,
    proposed: Option<&(ProposedBlock, Option<Verdict>, Option<Gate>)>,
    code: &str,
) -> String {
    let (language, code, verdict, gate) = match proposed {
        Some((block, verdict, gate)) => (
            block.language_tag.as_str(),
            block.code.as_str(),
            verdict.as_ref().map(|v| v.summary()),
            gate.as_ref().map(|g| g.reason.clone()),
        ),
        None => ("", code, None, None),
    };
    let mut text = format!(
        "{caller} asks oi-tui to run this {language} code on this machine:\n\n{}\n",
        code.trim_end()
    );
    for warning in crate::safe_text::warnings(code) {
        text.push_str(&format!("\nWarning: it holds {warning}"));
    }
    if let Some(verdict) = verdict {
        text.push_str(&format!("\nPolicy: {verdict}"));
    }
    if let Some(gate) = gate.filter(|g| !g.is_empty()) {
        text.push_str(&format!("\nWhy it asks: {gate}"));
    }
    text.push_str("\n\nRun it?");
    // Everything in it can come from a model or another agent (the code, the quotes in the
    // verdict and the reason, the names): all of it is shown visibly.
    crate::safe_text::visible(&text)
}

fn input_request(question: String) -> Result<InputRequests, String> {
    let schema = ElicitationSchema::from_type::<Approval>().map_err(|e| e.to_string())?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question,
        requested_schema: schema,
    };
    let mut requests = InputRequests::new();
    requests.insert(
        APPROVAL_KEY.to_string(),
        InputRequest::Elicitation(ElicitRequest::new(params)),
    );
    Ok(requests)
}

/// The answer to the approval question in a call sent again: `Some(true)` to run.
pub fn answer(response: &serde_json::Value) -> bool {
    let action = response.get("action").and_then(|a| a.as_str());
    let approve = response
        .pointer("/content/approve")
        .and_then(|a| a.as_bool());
    action == Some("accept") && approve == Some(true)
}

async fn send(sink: &mut Sink, count: u64, message: String) {
    match sink {
        Sink::None => {}
        Sink::Progress { peer, token } => {
            let _ = peer
                .notify_progress(
                    ProgressNotificationParam::new(token.clone(), count as f64)
                        .with_message(message),
                )
                .await;
        }
        Sink::Task(ctx) => ctx.set_status_message(message),
    }
}

/// The most output a progress message carries (its tail).
const PROGRESS_MAX: usize = 4000;
/// The least time between two progress messages.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The output so far as plain text, and when to tell it.
#[derive(Default)]
pub struct Progress {
    filter: crate::safe_text::OutputFilter,
    text: String,
    last: Option<Instant>,
    pub count: u64,
}

impl Progress {
    /// Adds output; returns the message to send now, if one is due.
    pub fn push(&mut self, bytes: &[u8]) -> Option<String> {
        let shown = self.filter.filter(bytes);
        self.text.push_str(&plain(&String::from_utf8_lossy(&shown)));
        if self.text.len() > PROGRESS_MAX * 2 {
            let mut cut = self.text.len() - PROGRESS_MAX;
            while !self.text.is_char_boundary(cut) {
                cut += 1;
            }
            self.text.drain(..cut);
        }
        if self.last.is_some_and(|t| t.elapsed() < PROGRESS_EVERY) {
            return None;
        }
        self.last = Some(Instant::now());
        self.count += 1;
        let mut start = self.text.len().saturating_sub(PROGRESS_MAX);
        while !self.text.is_char_boundary(start) {
            start += 1;
        }
        Some(self.text[start..].to_string())
    }
}

/// Text without escape sequences or carriage returns.
fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for n in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&n) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\r' => {}
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_plain_bounded_and_throttled() {
        let mut p = Progress::default();
        let first = p.push(b"\x1b[31mred\x1b[0m line\r\n");
        assert_eq!(first.as_deref(), Some("red line\n"));
        // Within the throttle: kept, not sent.
        assert_eq!(p.push(b"more\n"), None);
        std::thread::sleep(PROGRESS_EVERY);
        let big = vec![b'x'; PROGRESS_MAX * 3];
        let message = p.push(&big).unwrap_or_default();
        assert_eq!(message.len(), PROGRESS_MAX);
        assert_eq!(p.count, 2);
    }

    #[test]
    fn only_an_accepted_true_approves() {
        assert!(answer(
            &serde_json::json!({"action": "accept", "content": {"approve": true}})
        ));
        assert!(!answer(
            &serde_json::json!({"action": "accept", "content": {"approve": false}})
        ));
        assert!(!answer(&serde_json::json!({"action": "decline"})));
        assert!(!answer(&serde_json::json!({"action": "cancel"})));
    }

    #[test]
    fn the_question_shows_the_caller_and_the_code_visibly() {
        let q = question("claude-code", None, "print(1)\x1b[2J");
        assert!(q.starts_with("claude-code asks"), "{q}");
        assert!(q.contains("print(1)") && !q.contains('\u{1b}'), "{q}");
    }

    #[test]
    fn the_question_marks_hidden_characters_in_the_code_the_verdict_and_the_reason() {
        let code = "target\u{fe00} = 'keep.txt'\nos.remove(target\u{fe00})";
        let block = ProposedBlock {
            id: 1,
            language_tag: "python".into(),
            language: None,
            code: code.into(),
            caller: None,
            tool: None,
        };
        let verdict =
            crate::policy::Policy::new(crate::policy::Rules::new(), "/w").judge("python", code);
        let gate = Gate {
            action: crate::protocol::GateAction::Ask,
            reason: format!("asks ({})", verdict.summary()),
        };
        let proposed = (block, Some(verdict), Some(gate));
        let q = question("agent\u{202e}", Some(&proposed), code);
        assert!(!q.contains('\u{fe00}') && !q.contains('\u{202e}'), "{q}");
        assert!(q.contains("target⟨U+FE00⟩ = 'keep.txt'"), "{q}");
        assert!(q.contains("os.remove(target⟨U+FE00⟩)"), "{q}");
        assert!(q.contains("agent⟨U+202E⟩ asks"), "{q}");
        assert!(q.contains("Warning: it holds variation selectors"), "{q}");
        assert!(q.contains("Policy: os.remove(target⟨U+FE00⟩)"), "{q}");
        assert!(
            q.contains("Why it asks: asks (os.remove(target⟨U+FE00⟩)"),
            "{q}"
        );
    }
}
