//! One turn: rounds of request, streamed reply, approval and execution, until the model
//! answers without code or something stops it.

use crate::exec::{Block, Language, RunResult};
use crate::llm::{LlmErrorKind, Message, ToolCall};
use crate::protocol::{
    ApprovalMode, BlockId, Decision, ErrorKind, Event, Gate, GateAction, Op, ProposedBlock,
    Suggestion, TurnEnd, Verdict,
};

use super::gate::{declined_text, denied_text};
use super::reply::Reply;
use super::request::Streamed;
use super::tools as tool;
use super::{Engine, fences};

/// A block of the reply, as it will be decided and reported.
pub(super) struct Proposal {
    pub block: ProposedBlock,
    /// The tool call it came from (tool mode).
    pub call_id: Option<String>,
    /// Why it cannot run at all (unknown language, unreadable arguments).
    pub invalid: Option<String>,
    /// What the policy reads in it.
    pub verdict: Verdict,
    /// What the engine does with it before anyone is asked.
    pub gate: Gate,
}

/// What became of one proposal: the text the model gets.
pub(super) struct Outcome {
    pub call_id: Option<String>,
    pub block: ProposedBlock,
    pub text: String,
}

pub(super) const NO_APPROVAL: &str = "Not run: nobody can approve code here (oi-tui is running without a terminal and without --auto-run). Do not propose more code; say what you would run, and why, instead.";
const AUTO_ON: &str = "Auto mode is on: the rest of this session's blocks run without asking, except those a rule denies and those that delete outside the workspace, need privileges or change the system.";
const CUT: &str = "[The reply was cut here: it went past the most one reply may have or take.]";
pub(super) const STOPPED: &str = "Not run: the user stopped the turn before this block.";

impl Engine {
    pub(super) async fn turn(&mut self, text: String) {
        if self.client.is_none() {
            self.emit(Event::MessageTaken { text });
            self.emit(Event::Error {
                kind: ErrorKind::Config,
                message: "No model is configured, so there is nobody to send this to. Start oi-tui with --model provider/name (or --demo to try it), or type !command to run a shell command yourself.".to_string(),
            });
            return self.finish(TurnEnd::Error);
        }
        if !self.take_message(text) {
            return self.finish(TurnEnd::Error);
        }
        self.vision_new_turn();
        self.wait_for_tool_host().await;
        let mut declined_before = false;
        let mut fell_back = false;
        let mut round = 0;
        loop {
            if round >= self.config.max_turns {
                self.emit(Event::Notice {
                    message: format!(
                        "Stopped after {} model rounds (--max-turns {}); send a message to go on.",
                        round, self.config.max_turns
                    ),
                });
                return self.finish(TurnEnd::MaxTurns);
            }
            if crate::shutdown::leaving() {
                // oi-tui is being stopped (SIGTERM, SIGHUP): no new request goes out.
                return self.finish(TurnEnd::Interrupted);
            }
            // What the person sent meanwhile goes with this request, in the order sent.
            self.take_waiting_messages();
            round += 1;
            self.emit(Event::RequestStarted { round });
            let request = self.request();
            let reply = match self.stream_reply(&request).await {
                Streamed::Complete(reply) => reply,
                Streamed::Interrupted(mut reply) => {
                    // Marked, so that the record and the model know it did not end here.
                    if !reply.text.is_empty() {
                        reply.text.push_str(if crate::shutdown::leaving() {
                            "\n\n[Interrupted here: oi-tui was stopped.]"
                        } else {
                            "\n\n[Interrupted here by the person.]"
                        });
                    }
                    self.keep_partial(&reply);
                    return self.finish(TurnEnd::Interrupted);
                }
                Streamed::Failed(reply, error) => {
                    let untouched = reply.text.is_empty() && reply.tool_calls(round).is_empty();
                    if untouched && self.images_refused(&request, &error) {
                        round -= 1;
                        continue;
                    }
                    if error.kind == LlmErrorKind::ToolsUnsupported
                        && self.tools
                        && untouched
                        && !fell_back
                    {
                        fell_back = true;
                        self.fall_back_to_fences(&error);
                        round -= 1;
                        continue;
                    }
                    if error.kind == LlmErrorKind::TooLong {
                        self.keep_cut(reply);
                    } else {
                        self.keep_partial(&reply);
                    }
                    self.emit(Event::Error {
                        kind: ErrorKind::Provider,
                        message: error.message,
                    });
                    return self.finish(TurnEnd::Error);
                }
            };

            let calls = if self.tools {
                reply.tool_calls(round)
            } else {
                Vec::new()
            };
            self.emit(Event::AssistantMessage {
                text: reply.text.clone(),
            });
            self.push_history(Message::assistant(reply.text.clone(), calls.clone()));
            let proposals = self.proposals(&reply, &calls);
            if proposals.is_empty() {
                if reply.text.trim().is_empty() {
                    self.emit(Event::Notice {
                        message: "The model's reply was empty: no text and no code.".to_string(),
                    });
                }
                return self.finish(TurnEnd::Done);
            }
            let all_declined = proposals
                .iter()
                .all(|p| p.invalid.is_none() && p.gate.action == GateAction::Decline);
            if self.config.unattended && declined_before && all_declined {
                // Declined once already and the model insists: nothing more can happen. Each
                // block is still shown with its verdict, then declined.
                let count = proposals.len();
                let outcomes = proposals
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| {
                        self.announce(&p, i + 1, count, None);
                        let why = declined_text(&p.gate);
                        self.skip(p, why)
                    })
                    .collect();
                self.record(outcomes);
                return self.finish(TurnEnd::Declined);
            }

            let count = proposals.len();
            let mut outcomes = Vec::with_capacity(count);
            let mut stopped = false;
            let declined_now = proposals
                .iter()
                .any(|p| p.invalid.is_none() && p.gate.action == GateAction::Decline);
            for (i, mut proposal) in proposals.into_iter().enumerate() {
                if stopped {
                    outcomes.push(self.skip(proposal, STOPPED.to_string()));
                    continue;
                }
                // The mode and the rules may have changed since (auto mode turned on, or a
                // rule saved, at an earlier block).
                proposal.verdict = self.judge(&proposal.block);
                proposal.gate = self.gate_for(&proposal.block, &proposal.verdict);
                let allow = (proposal.gate.action == GateAction::Ask && proposal.invalid.is_none())
                    .then(|| {
                        self.allow_offer(proposal.block.language_name(), &proposal.block.code)
                    });
                self.announce(&proposal, i + 1, count, allow);
                let (outcome, stop) = self.handle(proposal).await;
                outcomes.push(outcome);
                stopped = stop || self.shutdown;
            }
            self.record(outcomes);
            if stopped {
                return self.finish(TurnEnd::Interrupted);
            }
            if declined_now {
                declined_before = true;
            }
        }
    }

    /// The person's message goes into the conversation (with what they ran by `!cmd` since
    /// their last one), told with `MessageTaken`; false when it is too large to send (the
    /// error says so).
    fn take_message(&mut self, text: String) -> bool {
        self.emit(Event::MessageTaken { text: text.clone() });
        if let Some(message) = self.too_large(&text) {
            if message.starts_with("Not sent") {
                self.emit(Event::Error {
                    kind: ErrorKind::Config,
                    message,
                });
                return false;
            }
            self.emit(Event::Notice { message });
        }
        let (text, said) = if self.context.is_empty() {
            (text, None)
        } else {
            let mut context = std::mem::take(&mut self.context).join("\n");
            context.push_str("\n\n");
            context.push_str(&text);
            (context, Some(text))
        };
        // The record keeps what the person said apart from the `!cmd` context added to it.
        if let Some(recorder) = &self.recorder {
            recorder.user_message(&Message::user(text.clone()), said.as_deref());
        }
        self.history.push(Message::user(text));
        true
    }

    /// The messages the person sent while the turn ran, that wait at the front of the queue
    /// (nothing they sent after a command that waits, such as `/reset`, jumps ahead of it),
    /// go into the conversation now, so that the next request carries them in order.
    fn take_waiting_messages(&mut self) {
        while matches!(self.queued.front(), Some(Op::UserMessage { .. })) {
            if let Some(Op::UserMessage { text }) = self.queued.pop_front() {
                self.take_message(text);
            }
        }
    }

    fn finish(&mut self, end: TurnEnd) {
        self.emit(Event::TurnFinished { end });
    }

    /// Keeps what streamed before an interrupt or a failure, so that nothing on screen is
    /// lost; unfinished tool calls are dropped (they cannot be answered).
    fn keep_partial(&mut self, reply: &Reply) {
        if !reply.text.is_empty() {
            self.emit(Event::AssistantMessage {
                text: reply.text.clone(),
            });
            self.push_history(Message::assistant(reply.text.clone(), Vec::new()));
        }
    }

    /// Keeps a reply cut at its size or time limit, marked as cut (for the person, the
    /// record and the model), with what became of a tool call it was writing.
    fn keep_cut(&mut self, mut reply: Reply) {
        let calls = reply.tool_calls(0);
        if !reply.text.is_empty() {
            reply.text.push_str("\n\n");
        }
        reply.text.push_str(CUT);
        if let Some(call) = calls.last() {
            reply.text.push_str(&format!(
                " An unfinished `{}` call ({} bytes of arguments) was dropped: it did not run.",
                call.name,
                call.arguments.len()
            ));
        }
        self.keep_partial(&reply);
    }

    /// The reply's blocks, in order: its tool calls, or its fenced blocks when tools are off.
    fn proposals(&mut self, reply: &Reply, calls: &[ToolCall]) -> Vec<Proposal> {
        let mut proposals = Vec::new();
        if self.tools {
            for call in calls {
                let id = self.take_block_id();
                if call.name != tool::TOOL_NAME
                    && let Some(proposal) = self.tool_proposal(id, call)
                {
                    proposals.push(proposal);
                    continue;
                }
                let (tag, code, invalid) = if call.name != tool::TOOL_NAME {
                    (
                        String::new(),
                        String::new(),
                        Some(self.no_such_tool(&call.name)),
                    )
                } else {
                    match tool::parse_arguments(&call.arguments) {
                        Ok((language, code)) => (language, code, None),
                        Err(why) => (String::new(), String::new(), Some(format!("Error: {why}."))),
                    }
                };
                proposals.push(self.proposal(id, tag, code, Some(call.id.clone()), invalid));
            }
        } else {
            for fence in fences::runnable_fences(&reply.text) {
                let id = self.take_block_id();
                proposals.push(self.proposal(id, fence.tag, fence.code, None, None));
            }
        }
        proposals
    }

    pub(super) fn proposal(
        &self,
        id: BlockId,
        tag: String,
        code: String,
        call_id: Option<String>,
        invalid: Option<String>,
    ) -> Proposal {
        let language = Language::parse(&tag);
        let invalid = invalid.or_else(|| {
            language.is_none().then(|| {
                format!(
                    "Not run: oi-tui cannot run `{tag}` code. It runs: {}.",
                    self.facts
                        .languages
                        .iter()
                        .map(|l| l.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        });
        let block = ProposedBlock {
            id,
            language_tag: tag,
            language,
            code,
            caller: None,
            tool: None,
        };
        let verdict = self.judge(&block);
        let gate = self.gate_for(&block, &verdict);
        Proposal {
            block,
            call_id,
            invalid,
            verdict,
            gate,
        }
    }

    /// The policy's verdict under the rules in force now.
    pub(super) fn judge(&self, block: &ProposedBlock) -> Verdict {
        self.policy.judge(block.language_name(), &block.code)
    }

    /// Tells the faces about a block: its code, the policy's verdict and the gate.
    pub(super) fn announce(
        &self,
        proposal: &Proposal,
        index: usize,
        of: usize,
        allow: Option<Suggestion>,
    ) {
        self.emit(Event::BlockProposed {
            block: proposal.block.clone(),
            index,
            of,
            verdict: Some(proposal.verdict.clone()),
            gate: Some(proposal.gate.clone()),
            allow,
        });
    }

    pub(super) fn take_block_id(&mut self) -> BlockId {
        let id = self.next_block;
        self.next_block += 1;
        id
    }

    pub(super) fn skip(&self, proposal: Proposal, reason: String) -> Outcome {
        self.emit(Event::BlockSkipped {
            block_id: proposal.block.id,
            reason: Some(reason.clone()),
        });
        Outcome {
            call_id: proposal.call_id,
            block: proposal.block,
            text: reason,
        }
    }

    /// Decides and runs one block. Returns its outcome and whether the turn must stop.
    async fn handle(&mut self, proposal: Proposal) -> (Outcome, bool) {
        if let Some(why) = proposal.invalid.clone() {
            return (self.skip(proposal, why), false);
        }
        if proposal.block.tool.is_some() {
            return self.handle_tool(proposal).await;
        }
        let Some(language) = proposal.block.language else {
            return (self.skip(proposal, STOPPED.to_string()), true);
        };
        let decision = match proposal.gate.action {
            GateAction::Run => Decision::Run,
            GateAction::Ask => self.decide_saving_rules(&proposal.block).await,
            GateAction::Deny => {
                let why = denied_text(&proposal.gate);
                return (self.skip(proposal, why), false);
            }
            GateAction::Decline => {
                let why = declined_text(&proposal.gate);
                return (self.skip(proposal, why), false);
            }
        };
        let (code, edited) = match self.chosen_code(decision, &proposal.block.code) {
            Ok(chosen) => chosen,
            Err(Decision::Skip { reason }) => {
                let text = match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                    Some(r) => {
                        format!("The user skipped this block; it did not run. Their reason: {r}")
                    }
                    None => "The user skipped this block; it did not run.".to_string(),
                };
                let outcome = Outcome {
                    call_id: proposal.call_id,
                    block: proposal.block,
                    text,
                };
                self.emit(Event::BlockSkipped {
                    block_id: outcome.block.id,
                    reason,
                });
                return (outcome, false);
            }
            Err(_) => return (self.skip(proposal, STOPPED.to_string()), true),
        };
        let (result, interrupted) = self
            .execute(
                proposal.block.id,
                language,
                code.clone(),
                edited,
                self.config.block_timeout,
            )
            .await;
        let mut text = String::new();
        if edited {
            text.push_str("The user edited the block before running it. The code that ran:\n");
            text.push_str(&fenced(language.name(), &code));
            text.push_str("\nIts output:\n");
        }
        text.push_str(&result.for_model());
        let mut interrupted = interrupted;
        if !interrupted
            && let Some(escalation) = self
                .escalate(proposal.block.id, language, &code, &result)
                .await
        {
            text.push_str(&escalation.text);
            interrupted = escalation.interrupted;
        }
        (
            Outcome {
                call_id: proposal.call_id,
                block: proposal.block,
                text,
            },
            interrupted,
        )
    }

    /// What a person's decision means for a block: the code to run and whether it was
    /// edited, or the decision that stops it (a skip or an abort). "Run always" turns auto
    /// mode on here.
    pub(super) fn chosen_code(
        &mut self,
        decision: Decision,
        proposed: &str,
    ) -> Result<(String, bool), Decision> {
        let chosen = |code: Option<String>| match code {
            Some(code) => {
                let edited = code != proposed;
                (code, edited)
            }
            None => (proposed.to_string(), false),
        };
        match decision {
            Decision::Run => Ok(chosen(None)),
            Decision::RunAlways { code } => {
                self.approval = ApprovalMode::Auto;
                self.emit(Event::Notice {
                    message: AUTO_ON.to_string(),
                });
                Ok(chosen(code))
            }
            Decision::Edit { code } => Ok(chosen(Some(code))),
            Decision::AllowAlways { code, .. } => Ok(chosen(code)),
            stop @ (Decision::Skip { .. } | Decision::Abort) => Err(stop),
        }
    }

    /// Asks the person; "always allow" saves its rules here, and when they cannot be saved
    /// the person hears why and is asked again.
    pub(super) async fn decide_saving_rules(&mut self, block: &ProposedBlock) -> Decision {
        loop {
            let decision = self.decide(block.id).await;
            let Decision::AllowAlways {
                prefixes,
                save_to,
                code,
            } = decision
            else {
                return decision;
            };
            let runs = code.as_deref().unwrap_or(&block.code);
            match self.allow_always(&prefixes, save_to, block.language_name(), runs) {
                Ok(()) => {
                    return match code {
                        Some(code) => Decision::Edit { code },
                        None => Decision::Run,
                    };
                }
                Err(message) => self.emit(Event::Error {
                    kind: ErrorKind::Config,
                    message,
                }),
            }
        }
    }

    /// Asks the person.
    async fn decide(&mut self, block_id: BlockId) -> Decision {
        self.emit(Event::ApprovalNeeded { block_id });
        self.await_decision(block_id).await
    }

    /// Waits for the person's decision on a block; other ops go on meanwhile.
    pub(super) async fn await_decision(&mut self, block_id: BlockId) -> Decision {
        loop {
            if self.ops_closed {
                return Decision::Abort;
            }
            match self.ops.recv().await {
                Some(Op::Decision {
                    block_id: id,
                    decision,
                }) if id == block_id => return decision,
                Some(Op::Interrupt) => return Decision::Abort,
                Some(Op::CancelCall { call }) if self.call == Some(call) => {
                    self.call_cancelled = true;
                    return Decision::Abort;
                }
                None => {
                    self.ops_closed = true;
                    return Decision::Abort;
                }
                Some(op) => {
                    self.side_op(op);
                    if self.shutdown {
                        return Decision::Abort;
                    }
                }
            }
        }
    }

    /// Runs a block, streaming its output as events; an interrupt reaches the kernel.
    pub(super) async fn execute(
        &mut self,
        block_id: BlockId,
        language: Language,
        code: String,
        edited: bool,
        timeout: Option<std::time::Duration>,
    ) -> (RunResult, bool) {
        self.emit(Event::ExecStarted {
            block_id,
            language,
            code: code.clone(),
            edited,
        });
        // A host not connected (the connection dropped, or the first attempt failed) is
        // reached first, and that is said: Ctrl-C cancels it, and then the block does not run.
        if language.runs_in_kernel()
            && self.kernels.config().executor.is_remote()
            && self.kernels.link().await.is_none()
            && let Err(unreached) = self.reconnect_before_block().await
        {
            let result = RunResult::unavailable(block_id, language, unreached.message);
            self.emit(Event::ExecFinished {
                block_id,
                result: result.clone(),
            });
            return (result, unreached.cancelled);
        }
        let block = Block {
            language,
            code,
            timeout,
            stdin_eof: self.config.stdin_eof,
            id: Some(block_id),
        };
        let events = self.events.clone();
        let recorder = self.recorder.clone();
        // The live bytes: a secret split across chunks is caught (see `StreamRedactor`).
        let stream = std::sync::Arc::new(std::sync::Mutex::new(
            crate::secrets::StreamRedactor::new(self.config.redactor.clone()),
        ));
        let sink_stream = stream.clone();
        let mut sink = move |bytes: &[u8]| {
            let data = match sink_stream.lock() {
                Ok(mut s) => s.push(bytes),
                Err(poisoned) => poisoned.into_inner().push(bytes),
            };
            if !data.is_empty() {
                let output = Event::ExecOutput { block_id, data };
                if let Some(recorder) = &recorder {
                    recorder.event(&output);
                }
                let _ = events.send(output);
            }
        };
        let kernels = self.kernels.clone();
        let mut waiting = kernels.awaiting_input();
        let mut said_waiting = false;
        let mut interrupted = false;
        let result = {
            let run = kernels.run(&block, &mut sink);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    // The run first: its first poll registers the block, so that an
                    // interrupt read below always has a block to reach.
                    biased;
                    result = &mut run => break result,
                    Ok(()) = waiting.changed() => {
                        let now = *waiting.borrow_and_update();
                        if now != said_waiting {
                            said_waiting = now;
                            self.emit(Event::ExecAwaitingInput { block_id, waiting: now });
                        }
                    }
                    op = self.ops.recv(), if !self.ops_closed => match op {
                        Some(Op::Interrupt) => {
                            interrupted = true;
                            kernels.interrupt();
                        }
                        Some(Op::CancelCall { call }) if self.call == Some(call) => {
                            self.call_cancelled = true;
                            interrupted = true;
                            kernels.interrupt();
                        }
                        None => {
                            self.ops_closed = true;
                            interrupted = true;
                            kernels.interrupt();
                        }
                        Some(op) => {
                            self.side_op(op);
                            if self.shutdown {
                                interrupted = true;
                                kernels.interrupt();
                            }
                        }
                    },
                }
            }
        };
        if said_waiting {
            // Every "waiting" is followed by its end, before the block's.
            self.emit(Event::ExecAwaitingInput {
                block_id,
                waiting: false,
            });
        }
        let held = match stream.lock() {
            Ok(mut s) => s.finish(),
            Err(poisoned) => poisoned.into_inner().finish(),
        };
        if !held.is_empty() {
            let output = Event::ExecOutput {
                block_id,
                data: held,
            };
            if let Some(recorder) = &self.recorder {
                recorder.event(&output);
            }
            let _ = self.events.send(output);
        }
        // The text form is whole here, so a secret split across chunks is caught too.
        let result = self.config.redactor.clean_value(result);
        self.look_at_agents_md();
        self.vision_ran(block_id, &result.images);
        self.emit(Event::ExecFinished {
            block_id,
            result: result.clone(),
        });
        (result, interrupted)
    }

    /// Puts the outcomes into the history: tool results in tool mode, one user message in
    /// fence mode.
    fn record(&mut self, outcomes: Vec<Outcome>) {
        if outcomes.is_empty() {
            return;
        }
        self.vision_recorded(&outcomes);
        if outcomes.iter().all(|o| o.call_id.is_some()) {
            for o in outcomes {
                if let Some(id) = o.call_id {
                    self.push_history(Message::tool_result(id, o.text));
                }
            }
            return;
        }
        let count = outcomes.len();
        let mut text = String::new();
        for (i, o) in outcomes.iter().enumerate() {
            if i > 0 {
                text.push('\n');
            }
            let name = match o.block.language {
                Some(language) => language.name().to_string(),
                None => o.block.language_tag.clone(),
            };
            if count > 1 {
                text.push_str(&format!("Block {} of {count} ({name}):\n", i + 1));
            } else {
                text.push_str(&format!("The {name} block:\n"));
            }
            text.push_str(&o.text);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        // The results go to the model as a user message the person did not write: the
        // record says they said nothing, so that a resumed chat shows the blocks instead.
        if let Some(recorder) = &self.recorder {
            recorder.user_message(&Message::user(text.clone()), Some(""));
        }
        self.history.push(Message::user(text));
    }
}

pub(super) fn fenced(tag: &str, code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{tag}\n{code}\n{fence}\n")
}
