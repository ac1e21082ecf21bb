//! Code run for a caller other than the model (`Op::RunCode`: another agent, over MCP). It
//! takes the model's road: proposed with the caller's name, judged by the policy, asked
//! about when the gate asks, run in the same kernels, recorded in the same session; and its
//! caller gets one `CallFinished` whatever becomes of it. The model hears of what ran, with
//! its next message, as it hears of `!cmd`.

use std::time::Duration;

use crate::exec::Language;
use crate::protocol::{CallId, CallOutcome, Decision, Event, GateAction, NotRun};

use super::Engine;

/// The longest timeout a caller may ask for: a week.
const LONGEST: Duration = Duration::from_secs(7 * 24 * 3600);

impl Engine {
    /// `Op::RunCode`: decides and runs a caller's code, then answers the call.
    pub(super) async fn run_for_caller(
        &mut self,
        call: CallId,
        caller: String,
        language: String,
        code: String,
        timeout_secs: Option<f64>,
    ) {
        let id = self.take_block_id();
        let timeout = match timeout_secs.map(timeout_from_secs).transpose() {
            Ok(given) => given.or(self.config.block_timeout),
            Err(why) => return self.answer(call, None, NotRun::Invalid, why),
        };
        let mut proposal = self.proposal(id, language, code, None, None);
        proposal.block.caller = Some(crate::protocol::Caller {
            name: caller.clone(),
            call,
        });
        let allow = (proposal.gate.action == GateAction::Ask && proposal.invalid.is_none())
            .then(|| self.allow_offer(proposal.block.language_name(), &proposal.block.code));
        self.announce(&proposal, 1, 1, allow);
        let block = proposal.block.clone();
        let (why, reason) = match (&proposal.invalid, block.language, proposal.gate.action) {
            (Some(invalid), _, _) => (NotRun::Invalid, invalid.clone()),
            (None, None, _) => (NotRun::Invalid, "Not run: unknown language.".to_string()),
            (None, Some(_), GateAction::Deny) => (
                NotRun::Denied,
                format!(
                    "Not run: {}. The rule is the user's and cannot be overridden from here.",
                    proposal.gate.reason
                ),
            ),
            (None, Some(_), GateAction::Decline) => (
                NotRun::Declined,
                declined(&proposal.gate.reason, self.approval),
            ),
            (None, Some(language), GateAction::Run | GateAction::Ask) => {
                return self
                    .decide_and_run(
                        call,
                        &caller,
                        block.id,
                        language,
                        &block.code,
                        proposal.gate.action,
                        timeout,
                    )
                    .await;
            }
        };
        self.emit(Event::BlockSkipped {
            block_id: id,
            reason: Some(reason.clone()),
        });
        self.answer(call, Some(id), why, reason);
    }

    #[allow(clippy::too_many_arguments)]
    async fn decide_and_run(
        &mut self,
        call: CallId,
        caller: &str,
        block_id: u64,
        language: Language,
        proposed: &str,
        action: GateAction,
        timeout: Option<Duration>,
    ) {
        self.call = Some(call);
        self.call_cancelled = false;
        let decision = if action == GateAction::Ask {
            let block = crate::protocol::ProposedBlock {
                id: block_id,
                language_tag: language.name().to_string(),
                language: Some(language),
                code: proposed.to_string(),
                caller: Some(crate::protocol::Caller {
                    name: caller.to_string(),
                    call,
                }),
                tool: None,
            };
            self.decide_saving_rules(&block).await
        } else {
            Decision::Run
        };
        let chosen = self.chosen_code(decision, proposed);
        let (code, edited) = match chosen {
            Ok(chosen) => chosen,
            Err(stop) => {
                let cancelled = std::mem::take(&mut self.call_cancelled);
                self.call = None;
                let (why, reason) = match stop {
                    _ if cancelled => (
                        NotRun::Cancelled,
                        "Not run: the call was cancelled.".to_string(),
                    ),
                    Decision::Skip { reason } => (NotRun::Skipped, skipped(reason.as_deref())),
                    _ => (
                        NotRun::Cancelled,
                        "Not run: the user stopped it before it ran.".to_string(),
                    ),
                };
                self.emit(Event::BlockSkipped {
                    block_id,
                    reason: Some(reason.clone()),
                });
                return self.answer(call, Some(block_id), why, reason);
            }
        };
        let (mut result, _) = self
            .execute(block_id, language, code.clone(), edited, timeout)
            .await;
        // A caller's kernels the person moved with /on since its last block: its state went
        // with them, and nothing else would tell it.
        if let Some(seen) = self.callers_moves.insert(caller.to_string(), self.moves)
            && seen != self.moves
        {
            result.state_lost = true;
            result.notes.insert(
                0,
                format!(
                    "Since this caller's last block, the user moved the kernels: they run on {} now, and what earlier blocks set (variables, imports, the working directory) is gone.",
                    super::executor::place(&self.config.kernels.executor)
                ),
            );
        }
        self.call = None;
        self.call_cancelled = false;
        // The replay of a saved session (`oi-tui replay`) takes this road too.
        let (who, road) = if caller == crate::protocol::REPLAY_CALLER {
            ("oi-tui's replay of a saved session".to_string(), "")
        } else {
            (
                format!("Another agent ({caller})"),
                " through oi-tui's MCP server",
            )
        };
        self.context.push(format!(
            "{who} ran this {} block{road}{}:\n{}Its output:\n{}",
            language.name(),
            if edited {
                ", as the user edited it"
            } else {
                ""
            },
            super::turn::fenced(language.name(), &code),
            result.for_model()
        ));
        self.emit(Event::CallFinished {
            call,
            block_id: Some(block_id),
            outcome: CallOutcome::Ran {
                result: Box::new(result),
                code,
                edited,
            },
        });
    }

    fn answer(&mut self, call: CallId, block_id: Option<u64>, why: NotRun, reason: String) {
        self.emit(Event::CallFinished {
            call,
            block_id,
            outcome: CallOutcome::NotRun { why, reason },
        });
    }

    /// `Op::RestartKernels`: one language's kernel, or all of them, start afresh.
    pub(super) async fn restart_kernels(&mut self, language: Option<Language>) {
        let live = self.live_kernels().await;
        let note = match language {
            Some(language) => {
                self.kernels.restart(language).await;
                if live.contains(&language) {
                    format!(
                        "The {language} kernel was restarted: its variables, imports and `cd` are gone."
                    )
                } else {
                    format!(
                        "The {language} kernel was not running; it starts afresh with its next block."
                    )
                }
            }
            None => {
                self.kernels.shutdown().await;
                if live.is_empty() {
                    "No kernel was running; each starts afresh with its next block.".to_string()
                } else {
                    let names: Vec<&str> = live.iter().map(|l| l.name()).collect();
                    format!(
                        "Restarted the {} kernel{}: variables, imports and `cd` are gone.",
                        names.join(", "),
                        if names.len() == 1 { "" } else { "s" }
                    )
                }
            }
        };
        self.context.push(note.clone());
        self.emit(Event::KernelsRestarted { language, note });
    }
}

/// The answer to a call dropped before it began.
pub(super) fn cancelled_before(call: CallId) -> Event {
    Event::CallFinished {
        call,
        block_id: None,
        outcome: CallOutcome::NotRun {
            why: NotRun::Cancelled,
            reason: "Not run: the call was cancelled before it began.".to_string(),
        },
    }
}

/// A caller's timeout, in seconds, as a duration: finite, above zero, at most a week.
fn timeout_from_secs(secs: f64) -> Result<Duration, String> {
    if !secs.is_finite() || secs <= 0.0 {
        return Err(format!(
            "Not run: timeout_secs must be a number of seconds above 0 (got {secs})."
        ));
    }
    // Checked before the conversion, which panics on values past `Duration`'s range.
    if secs > LONGEST.as_secs_f64() {
        return Err(format!(
            "Not run: timeout_secs may be at most {} (a week); got {secs}.",
            LONGEST.as_secs()
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// What a caller hears about a block nobody could approve, and how it could be allowed.
fn declined(reason: &str, approval: crate::protocol::ApprovalMode) -> String {
    let how = match approval {
        // Auto mode already runs what it may: what still asks always needs a person.
        crate::protocol::ApprovalMode::Auto => {
            "Even in auto mode, such blocks need a person: a client that supports elicitation is asked, and the workbench (`oi-tui --mcp-listen`) asks its person. Otherwise do it another way."
        }
        _ => {
            "To let such blocks run, start oi-tui with `--approval rules` and an allow rule that covers them (in config.toml, `[policy] allow = [\"git status\", ...]`), or with `--approval auto`; a client that supports elicitation is asked instead."
        }
    };
    format!(
        "Not run: it needs a person's approval ({reason}), and nobody can approve it here. {how}"
    )
}

/// What a caller hears about a block a person skipped.
fn skipped(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("Not run: the user declined it. Their reason: {r}"),
        None => "Not run: the user declined it.".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_checked() {
        assert_eq!(timeout_from_secs(1.5), Ok(Duration::from_millis(1500)));
        assert!(timeout_from_secs(0.0).unwrap_err().contains("above 0"));
        assert!(timeout_from_secs(-1.0).unwrap_err().contains("above 0"));
        assert!(timeout_from_secs(f64::NAN).unwrap_err().contains("above 0"));
        assert!(timeout_from_secs(1e12).unwrap_err().contains("a week"));
        // Past what a `Duration` holds: refused, not a panic.
        assert!(timeout_from_secs(1e300).unwrap_err().contains("a week"));
        assert!(
            timeout_from_secs(f64::INFINITY)
                .unwrap_err()
                .contains("above 0")
        );
        assert_eq!(timeout_from_secs(604_800.0), Ok(LONGEST));
    }
}
