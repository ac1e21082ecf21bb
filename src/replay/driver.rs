//! The replay as a face drives it: one `Op::RunCode` per recorded block, the next sent when
//! the engine's `CallFinished` answers the last, each answer compared with the recording;
//! and the report that comes of it, in words and as JSON.

use serde_json::json;

use crate::protocol::{CallId, CallOutcome, Event, Op, RunResult};
use crate::safe_text::{visible, visible_line};
use crate::store::StoredBlock;

use super::Plan;
use super::compare::{Verdict, compare};

/// The name replayed blocks carry as their caller (shown with the block).
pub const CALLER: &str = crate::protocol::REPLAY_CALLER;

/// What became of one recorded block this time.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub recorded: StoredBlock,
    /// The block it became in the new session, when it got that far.
    pub block_id: Option<u64>,
    /// The code that ran (a person may have edited it in the workbench).
    pub code: String,
    pub edited: bool,
    pub verdict: Verdict,
    pub result: Option<RunResult>,
}

/// Sends the blocks one at a time and keeps what became of each.
pub struct Driver {
    plan: Plan,
    timeout_secs: Option<f64>,
    next: usize,
    waiting: Option<CallId>,
    pub outcomes: Vec<Outcome>,
}

impl Driver {
    pub fn new(plan: Plan, timeout_secs: Option<f64>) -> Driver {
        Driver {
            plan,
            timeout_secs,
            next: 0,
            waiting: None,
            outcomes: Vec::new(),
        }
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The next block's call, or None when every block was sent.
    pub fn next_op(&mut self) -> Option<Op> {
        let block = self.plan.blocks.get(self.next)?;
        self.next += 1;
        let call = self.next as CallId;
        self.waiting = Some(call);
        Some(Op::RunCode {
            call,
            caller: CALLER.to_string(),
            language: block.language.clone(),
            code: ran_code(block).to_string(),
            timeout_secs: self.timeout_secs,
        })
    }

    /// Takes an engine event; at the answer to the call in flight, the block's outcome.
    pub fn on_event(&mut self, event: &Event) -> Option<&Outcome> {
        let Event::CallFinished {
            call,
            block_id,
            outcome,
        } = event
        else {
            return None;
        };
        if self.waiting != Some(*call) {
            return None;
        }
        self.waiting = None;
        let recorded = self.plan.blocks.get(self.next - 1)?.clone();
        let outcome = match outcome {
            CallOutcome::Ran {
                result,
                code,
                edited,
            } => Outcome {
                verdict: compare(&recorded, result),
                block_id: *block_id,
                code: code.clone(),
                edited: *edited,
                result: Some((**result).clone()),
                recorded,
            },
            CallOutcome::NotRun { reason, .. } => Outcome {
                verdict: Verdict::NotRun {
                    reason: reason.clone(),
                },
                block_id: *block_id,
                code: ran_code(&recorded).to_string(),
                edited: false,
                result: None,
                recorded,
            },
        };
        self.outcomes.push(outcome);
        self.outcomes.last()
    }

    /// Whether a call is in flight.
    pub fn waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// The report; blocks never sent (the replay was stopped) are `not run`.
    pub fn report(&self, replay_session: Option<String>, stopped: bool) -> Report {
        let mut outcomes = self.outcomes.clone();
        for block in self.plan.blocks.iter().skip(outcomes.len()) {
            outcomes.push(Outcome {
                recorded: block.clone(),
                block_id: None,
                code: ran_code(block).to_string(),
                edited: false,
                verdict: Verdict::NotRun {
                    reason: "the replay was stopped before it".to_string(),
                },
                result: None,
            });
        }
        Report {
            session: self.plan.session.id.clone(),
            title: self.plan.session.title.clone(),
            replay_session,
            cwd: self.plan.cwd.display().to_string(),
            outcomes,
            left_out: self.plan.left_out.clone(),
            stopped,
        }
    }
}

/// The code a recorded block ran: the edited code when a person edited it.
pub fn ran_code(block: &StoredBlock) -> &str {
    block.edited_code.as_deref().unwrap_or(&block.proposed_code)
}

/// The whole replay, block by block.
#[derive(Debug, Clone)]
pub struct Report {
    pub session: String,
    pub title: String,
    /// The session the replay was recorded as.
    pub replay_session: Option<String>,
    pub cwd: String,
    pub outcomes: Vec<Outcome>,
    /// Recorded blocks not replayed, and why.
    pub left_out: Vec<(i64, String)>,
    /// The person stopped the replay.
    pub stopped: bool,
}

impl Report {
    /// 0 when every block ran and matched; 1 when something differs or did not run.
    pub fn status(&self) -> i32 {
        if self.outcomes.iter().all(|o| o.verdict == Verdict::Same) {
            0
        } else {
            1
        }
    }

    fn count(&self, pick: fn(&Verdict) -> bool) -> usize {
        self.outcomes.iter().filter(|o| pick(&o.verdict)).count()
    }

    /// `3 blocks replayed: 2 same, 1 differs.`
    pub fn summary_line(&self) -> String {
        let n = self.outcomes.len();
        let mut line = format!(
            "{n} block{} replayed: {} same, {} differ, {} not run",
            if n == 1 { "" } else { "s" },
            self.count(|v| *v == Verdict::Same),
            self.count(|v| matches!(v, Verdict::Differs { .. })),
            self.count(|v| matches!(v, Verdict::NotRun { .. })),
        );
        if !self.left_out.is_empty() {
            line.push_str(&format!(
                "; {} recorded block{} left out",
                self.left_out.len(),
                if self.left_out.len() == 1 { "" } else { "s" }
            ));
        }
        line.push('.');
        line
    }

    /// The report for people: a line per block, the differences under it. Text from the
    /// store and from blocks is shown with its control characters visible.
    pub fn text(&self) -> String {
        let mut out = format!(
            "Replay of session {} ({}) in {}",
            self.session,
            visible_line(&self.title),
            visible_line(&self.cwd)
        );
        if let Some(id) = &self.replay_session {
            out.push_str(&format!(", recorded as session {id}"));
        }
        out.push_str(":\n");
        for o in &self.outcomes {
            out.push_str(&format!(
                "block {} · {} · {}{}: {}\n",
                o.recorded.block_id,
                visible_line(&o.recorded.language),
                visible_line(first_line(&o.code)),
                if o.edited { " (edited)" } else { "" },
                o.verdict.words()
            ));
            match &o.verdict {
                Verdict::Same => {}
                Verdict::NotRun { reason } => {
                    out.push_str(&format!("    {}\n", visible_line(reason)));
                }
                Verdict::Differs { differences } => {
                    for d in differences {
                        out.push_str(&difference_text(d));
                    }
                }
            }
        }
        for (id, why) in &self.left_out {
            out.push_str(&format!(
                "block {id}: left out ({})\n",
                clip(&visible_line(why))
            ));
        }
        if self.stopped {
            out.push_str("The replay was stopped.\n");
        }
        out.push_str(&self.summary_line());
        out.push('\n');
        out
    }

    /// One JSON value per replayed block (in order), then the summary.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        let mut lines: Vec<serde_json::Value> = self.outcomes.iter().map(outcome_json).collect();
        lines.push(json!({
            "summary": {
                "session": self.session,
                "title": self.title,
                "replay_session": self.replay_session,
                "cwd": self.cwd,
                "replayed": self.outcomes.len(),
                "same": self.count(|v| *v == Verdict::Same),
                "differ": self.count(|v| matches!(v, Verdict::Differs { .. })),
                "not_run": self.count(|v| matches!(v, Verdict::NotRun { .. })),
                "left_out": self.left_out.iter().map(|(id, why)| json!({"block": id, "why": why})).collect::<Vec<_>>(),
                "stopped": self.stopped,
                "status": self.status(),
            }
        }));
        lines
    }
}

fn difference_text(d: &super::compare::Difference) -> String {
    use super::compare::Difference;
    match d {
        Difference::Status { was, now } => format!("    status: was {was}, now {now}\n"),
        Difference::Images { was, now } => format!("    images: were {was}, now {now}\n"),
        Difference::Output { diff } => diff
            .lines()
            .map(|l| format!("    {}\n", visible_line(l)))
            .collect(),
    }
}

/// One replayed block as JSON.
pub fn outcome_json(o: &Outcome) -> serde_json::Value {
    let mut value = json!({
        "block": o.recorded.block_id,
        "language": o.recorded.language,
        "code": o.code,
        "edited": o.edited,
        "new_block": o.block_id,
    });
    if let (Some(map), Ok(serde_json::Value::Object(verdict))) =
        (value.as_object_mut(), serde_json::to_value(&o.verdict))
    {
        map.extend(verdict);
    }
    if let (Some(map), Some(result)) = (value.as_object_mut(), &o.result) {
        map.insert("status".into(), json!(result.status.label()));
        map.insert("exit_code".into(), json!(result.exit_code));
        map.insert("output".into(), json!(result.output));
        map.insert(
            "images".into(),
            json!(
                result
                    .images
                    .iter()
                    .map(|i| i.path.display().to_string())
                    .collect::<Vec<_>>()
            ),
        );
    }
    value
}

/// A reason cut to about one line of a terminal.
fn clip(text: &str) -> String {
    const MAX: usize = 100;
    if text.chars().count() <= MAX {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(MAX - 1).collect::<String>())
    }
}

fn first_line(code: &str) -> &str {
    code.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// The text a block printed, for the transcript (control characters visible).
pub fn shown_output(result: &RunResult) -> String {
    visible(result.output.trim_end())
}
