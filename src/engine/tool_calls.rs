//! Calls of the tools of the user's MCP servers (`NAME__tool`), as blocks: a call becomes a
//! proposal whose code is its arguments (pretty-printed JSON) and whose tag is
//! `mcp:SERVER/TOOL`; it passes the same gate and the same decisions as code (a person may
//! edit the arguments, which must stay a JSON object); it runs through the `ToolHost`, within
//! the server's tool timeout, and an interrupt cancels it. Its answer goes back to the model
//! as the tool message of the call.
//!
//! The gate is stricter than for code in one place: auto mode asks for a tool call unless a
//! rule allows it. A tool runs in its server's process, with the server's credentials and
//! outside oi-tui's sandbox, so the trust that auto mode gives sandboxed kernels does not
//! extend to it; `allow = ["mcp:NAME/*"]` says which servers are trusted that far.

use std::time::Instant;

use serde_json::{Map, Value};

use crate::llm::ToolCall;
use crate::protocol::{
    ApprovalMode, BlockId, Decision, ErrorKind, Event, Gate, GateAction, Op, ProposedBlock,
    RuleDecision, ToolRef, Verdict,
};

use super::Engine;
use super::gate::{declined_text, denied_text};
use super::turn::{Outcome, Proposal, STOPPED};

impl Engine {
    /// Waits, once, for the MCP servers still starting (each at most its start-up timeout),
    /// and says which could not start.
    pub(super) async fn wait_for_tool_host(&mut self) {
        if self.host_ready || !self.tools {
            return;
        }
        self.host_ready = true;
        let Some(host) = self.config.tool_host.clone() else {
            return;
        };
        let starting = host.starting();
        if !starting.is_empty() {
            let names: Vec<&str> = starting.iter().map(|(n, _)| n.as_str()).collect();
            let longest = starting.iter().map(|(_, d)| *d).max().unwrap_or_default();
            self.emit(Event::Notice {
                message: format!(
                    "Waiting for the MCP server{} {} to start (at most {} s; interrupt to go on without {}).",
                    if names.len() == 1 { "" } else { "s" },
                    names.join(", "),
                    longest.as_secs_f64().ceil(),
                    if names.len() == 1 { "it" } else { "them" },
                ),
            });
        }
        let ready = host.ready();
        tokio::pin!(ready);
        let notices = loop {
            tokio::select! {
                biased;
                notices = &mut ready => break notices,
                op = self.ops.recv(), if !self.ops_closed => match op {
                    // The tools of servers still starting are offered when they are up.
                    Some(Op::Interrupt) => break Vec::new(),
                    None => {
                        self.ops_closed = true;
                        break Vec::new();
                    }
                    Some(op) => {
                        self.side_op(op);
                        if self.shutdown {
                            break Vec::new();
                        }
                    }
                },
            }
        };
        for message in notices {
            self.emit(Event::Notice { message });
        }
    }

    /// The error the model gets for a tool that does not exist, naming the ones that do.
    pub(super) fn no_such_tool(&self, name: &str) -> String {
        let names: Vec<String> = self
            .offered_tools()
            .into_iter()
            .map(|t| format!("`{}`", t.name))
            .collect();
        if names.len() <= 1 {
            return format!(
                "Error: there is no tool `{name}`; the only tool is `{}`.",
                super::TOOL_NAME
            );
        }
        format!(
            "Error: there is no tool `{name}`; the tools are {}.",
            names.join(", ")
        )
    }

    /// A call of one of the host's tools as a proposal; None when no hosted tool has the name.
    pub(super) fn tool_proposal(&mut self, id: BlockId, call: &ToolCall) -> Option<Proposal> {
        let host = self.config.tool_host.as_ref()?;
        let hosted = host.tools().into_iter().find(|t| t.def.name == call.name)?;
        let (code, invalid) = match arguments(&call.arguments) {
            Ok(map) => (pretty(&map), None),
            Err(why) => (call.arguments.clone(), Some(format!("Error: {why}"))),
        };
        let block = ProposedBlock {
            id,
            language_tag: hosted.tool.policy_name(),
            language: None,
            code,
            caller: None,
            tool: Some(Box::new(hosted.tool)),
        };
        let verdict = self.judge(&block);
        let gate = self.gate_for(&block, &verdict);
        Some(Proposal {
            block,
            call_id: Some(call.id.clone()),
            invalid,
            verdict,
            gate,
        })
    }

    /// The gate for a block: the same as for code, except that auto mode asks for a tool
    /// call no rule allows (see the module's text).
    pub(super) fn gate_for(&self, block: &ProposedBlock, verdict: &Verdict) -> Gate {
        let Some(tool) = &block.tool else {
            return self.gate(verdict);
        };
        if verdict.has(crate::protocol::RiskClass::HiddenCharacters) {
            return self.gate(verdict);
        }
        let name = tool.policy_name();
        let reason = match (verdict.decision, &verdict.rule) {
            (RuleDecision::Deny | RuleDecision::Allow, _) | (RuleDecision::Ask, Some(_)) => {
                return self.gate(verdict);
            }
            (RuleDecision::Ask, None) => match self.approval {
                ApprovalMode::Ask => return self.gate(verdict),
                ApprovalMode::Rules => format!(
                    "no rule allows the MCP tool {name} (allow it with allow = [\"{name}\"] in [policy])"
                ),
                ApprovalMode::Auto => format!(
                    "MCP tools run outside the sandbox, so auto mode asks for them unless a rule allows them (allow = [\"{name}\"] or [\"{}{}/*\"] in [policy])",
                    crate::protocol::TOOL_PREFIX,
                    tool.server
                ),
            },
        };
        Gate {
            action: if self.config.unattended {
                GateAction::Decline
            } else {
                GateAction::Ask
            },
            reason,
        }
    }

    /// Decides and runs one tool call. Returns its outcome and whether the turn must stop.
    pub(super) async fn handle_tool(&mut self, proposal: Proposal) -> (Outcome, bool) {
        let Some(tool) = proposal.block.tool.as_deref().cloned() else {
            return (self.skip(proposal, STOPPED.to_string()), true);
        };
        let decision = match proposal.gate.action {
            GateAction::Run => Decision::Run,
            GateAction::Ask => Decision::Abort, // asked below, with the edit check
            GateAction::Deny => {
                let why = denied_text(&proposal.gate);
                return (self.skip(proposal, why), false);
            }
            GateAction::Decline => {
                let why = declined_text(&proposal.gate);
                return (self.skip(proposal, why), false);
            }
        };
        let asks = proposal.gate.action == GateAction::Ask;
        let chosen = loop {
            let decision = if asks {
                self.decide_saving_rules(&proposal.block).await
            } else {
                decision.clone()
            };
            match self.chosen_code(decision, &proposal.block.code) {
                Ok((code, edited)) => match arguments(&code) {
                    Ok(map) => break Ok((map, code, edited)),
                    Err(why) if asks => self.emit(Event::Error {
                        kind: ErrorKind::Config,
                        message: format!(
                            "The edited arguments of {} cannot be sent: {why} Edit them again, or skip the call.",
                            tool.policy_name()
                        ),
                    }),
                    Err(why) => break Err(Decision::Skip { reason: Some(why) }),
                },
                Err(stop) => break Err(stop),
            }
        };
        let (map, code, edited) = match chosen {
            Ok(chosen) => chosen,
            Err(Decision::Skip { reason }) => {
                let text = match reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
                    Some(r) => format!(
                        "The user skipped this tool call; it was not made. Their reason: {r}"
                    ),
                    None => "The user skipped this tool call; it was not made.".to_string(),
                };
                self.emit(Event::BlockSkipped {
                    block_id: proposal.block.id,
                    reason,
                });
                let outcome = Outcome {
                    call_id: proposal.call_id,
                    block: proposal.block,
                    text,
                };
                return (outcome, false);
            }
            Err(_) => return (self.skip(proposal, STOPPED.to_string()), true),
        };
        let (ok, output, interrupted) = self
            .call_tool(proposal.block.id, &tool, map, &code, edited)
            .await;
        let mut text = String::new();
        if edited {
            text.push_str("The user edited the arguments before the call. The arguments sent:\n");
            text.push_str(&super::turn::fenced("json", &code));
            text.push_str("\nThe result:\n");
        }
        if !ok && !output.starts_with("Error") {
            text.push_str("Error: ");
        }
        text.push_str(&output);
        (
            Outcome {
                call_id: proposal.call_id,
                block: proposal.block,
                text,
            },
            interrupted,
        )
    }

    /// Makes the call, with its events; an interrupt (or the engine stopping) cancels it.
    /// Returns whether it succeeded, what the model gets, and whether it was interrupted.
    async fn call_tool(
        &mut self,
        block_id: BlockId,
        tool: &ToolRef,
        map: Map<String, Value>,
        code: &str,
        edited: bool,
    ) -> (bool, String, bool) {
        self.emit(Event::ToolStarted {
            block_id,
            tool: tool.clone(),
            arguments: code.to_string(),
            edited,
        });
        let started = Instant::now();
        let Some(host) = self.config.tool_host.clone() else {
            return self.tool_finished(
                block_id,
                started,
                false,
                "Error: no MCP servers are running.".into(),
                false,
            );
        };
        let mut interrupted = false;
        let reply = {
            let call = host.call(tool, map);
            tokio::pin!(call);
            loop {
                tokio::select! {
                    biased;
                    reply = &mut call => break Some(reply),
                    op = self.ops.recv(), if !self.ops_closed => match op {
                        Some(Op::Interrupt) => {
                            interrupted = true;
                            break None;
                        }
                        None => {
                            self.ops_closed = true;
                            interrupted = true;
                            break None;
                        }
                        Some(op) => {
                            self.side_op(op);
                            if self.shutdown {
                                interrupted = true;
                                break None;
                            }
                        }
                    },
                }
            }
        };
        let (ok, text) = match reply {
            // Dropping the call above told the server to cancel it.
            None => (
                false,
                "Error: the call was interrupted by the user before the tool answered; it may have done part of its work.".to_string(),
            ),
            Some(Ok(reply)) => (!reply.is_error, reply.text),
            Some(Err(why)) => (false, format!("Error: {why}")),
        };
        let text = self.config.redactor.clean(&bounded(&text));
        self.tool_finished(block_id, started, ok, text, interrupted)
    }

    fn tool_finished(
        &self,
        block_id: BlockId,
        started: Instant,
        ok: bool,
        output: String,
        interrupted: bool,
    ) -> (bool, String, bool) {
        self.emit(Event::ToolFinished {
            block_id,
            ok,
            output: output.clone(),
            duration_ms: started.elapsed().as_millis() as u64,
        });
        (ok, output, interrupted)
    }
}

/// The most characters of a tool's result the model gets: a tool that reads a file may
/// rightly answer with more than a block's output, but not with megabytes.
const RESULT_MAX: usize = 64 * 1024;

/// A tool's result as the model and the faces get it: escape sequences stripped, and its head
/// and tail kept (with what was cut said) when it is longer than `RESULT_MAX`.
fn bounded(text: &str) -> String {
    let mut capture = crate::exec::TextCapture::new(RESULT_MAX);
    capture.feed(text.as_bytes());
    capture.finish().text
}

/// `Op::McpStatus`: the servers, their state and their tools.
pub(super) fn status(host: Option<&dyn super::host::ToolHost>) -> String {
    match host {
        Some(host) => host.describe(),
        None => "No MCP servers are in use: add [mcp_servers.NAME] to config.toml (with `command` and `args`, or `url`) to offer their tools to the model (with tools on).".to_string(),
    }
}

/// A call's arguments as a JSON object (empty text is no arguments); else why not.
pub(super) fn arguments(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Map::new());
    }
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("the arguments are not valid JSON ({e})."))?;
    // Some models send the object as a JSON string.
    let value = match value {
        Value::String(inner) => serde_json::from_str(&inner).unwrap_or(Value::String(inner)),
        other => other,
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(format!(
            "the arguments must be a JSON object ({{\"name\": value, ...}}), not {}.",
            kind(&other)
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Arguments as a person reads and edits them.
fn pretty(map: &Map<String, Value>) -> String {
    serde_json::to_string_pretty(map).unwrap_or_else(|_| "{}".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(arguments("").unwrap(), Map::new());
        assert_eq!(arguments(" null ").unwrap(), Map::new());
        assert_eq!(arguments(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(arguments(r#""{\"a\":2}""#).unwrap()["a"], 2);
        assert!(arguments("[1]").unwrap_err().contains("not an array"));
        assert!(arguments("{").unwrap_err().contains("not valid JSON"));
        assert_eq!(
            pretty(&arguments(r#"{"a":1}"#).unwrap()),
            "{\n  \"a\": 1\n}"
        );
    }

    #[test]
    fn a_large_result_keeps_its_head_and_tail() {
        let text: String = (0..200_000).map(|i| format!("row {i}\n")).collect();
        let shown = bounded(&text);
        assert!(shown.len() < RESULT_MAX + 1024, "{}", shown.len());
        assert!(shown.starts_with("row 0\n") && shown.contains("row 199999"));
        assert!(shown.contains("lines"), "the cut is said");
        // A small one, and its escape sequences, as a block's output would be.
        assert_eq!(bounded("{\"a\": 1}"), "{\"a\": 1}");
        assert_eq!(bounded("\x1b[31mred\x1b[0m"), "red");
    }
}
