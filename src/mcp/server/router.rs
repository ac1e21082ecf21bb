//! The bridge between MCP calls and an engine: a call becomes an `Op::RunCode`, and the
//! engine's events about it come back to the call that waits for them, in order. The same
//! bridge serves `oi-tui mcp` (an engine per client session, whose events a task hands to
//! `observe`) and the open workbench (whose event loop hands every event to `observe`, and
//! whose person answers approvals). It speaks no MCP: the transport is the caller's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use crate::protocol::{
    BlockId, CallId, CallOutcome, Decision, Event, Gate, Language, NotRun, Op, ProposedBlock,
    Verdict,
};

/// What a call hears while it waits, in order; `Finished` is always last.
#[derive(Debug, Clone, PartialEq)]
pub enum CallUpdate {
    /// The engine took it up: its block, what the policy reads in it and what the gate does.
    Proposed {
        block: ProposedBlock,
        verdict: Option<Verdict>,
        gate: Option<Gate>,
    },
    /// It waits for a decision (`Router::decide`, or the workbench's person).
    NeedsApproval { block_id: BlockId },
    /// It runs: the code that runs, and whether a person edited it.
    Started { code: String, edited: bool },
    /// Bytes from its terminal.
    Output(Vec<u8>),
    /// It waits for keyboard input (or no longer does).
    AwaitingInput(bool),
    /// What became of it.
    Finished {
        block_id: Option<BlockId>,
        outcome: CallOutcome,
    },
}

/// One call in flight: its id, and what it hears.
pub struct Call {
    pub id: CallId,
    pub updates: mpsc::UnboundedReceiver<CallUpdate>,
}

struct Waiting {
    updates: mpsc::UnboundedSender<CallUpdate>,
    block: Option<BlockId>,
}

#[derive(Default)]
struct State {
    calls: HashMap<CallId, Waiting>,
    /// Blocks of the calls in flight, to their calls.
    blocks: HashMap<BlockId, CallId>,
    /// The block that runs now, if it is one of this router's calls, and its language.
    running: Option<(BlockId, Language)>,
}

/// Routes calls into one engine and its answers back. Cheap to share (`Arc`).
pub struct Router {
    ops: Mutex<mpsc::UnboundedSender<Op>>,
    next: AtomicU64,
    state: Mutex<State>,
}

impl Router {
    pub fn new(ops: mpsc::UnboundedSender<Op>) -> Arc<Router> {
        Arc::new(Router {
            ops: Mutex::new(ops),
            next: AtomicU64::new(1),
            state: Mutex::new(State::default()),
        })
    }

    /// The engine was replaced (the workbench resumed another session): calls in flight are
    /// answered, and new ones go to the new engine.
    pub fn set_engine(&self, ops: mpsc::UnboundedSender<Op>) {
        *lock(&self.ops) = ops;
        self.closed("the workbench switched to another session before it ran");
    }

    /// Sends code to run for `caller`; its updates come on the returned call.
    pub fn call(
        &self,
        caller: &str,
        language: &str,
        code: &str,
        timeout_secs: Option<f64>,
    ) -> Call {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::unbounded_channel();
        lock(&self.state).calls.insert(
            id,
            Waiting {
                updates: tx,
                block: None,
            },
        );
        let sent = self.send(Op::RunCode {
            call: id,
            caller: caller.to_string(),
            language: language.to_string(),
            code: code.to_string(),
            timeout_secs,
        });
        if !sent {
            self.finish(
                id,
                None,
                CallOutcome::NotRun {
                    why: NotRun::Cancelled,
                    reason: "Not run: oi-tui's engine has stopped.".to_string(),
                },
            );
        }
        Call { id, updates: rx }
    }

    /// The caller gave up on a call: it does not run, or it is interrupted.
    pub fn cancel(&self, call: CallId) {
        if lock(&self.state).calls.contains_key(&call) {
            self.send(Op::CancelCall { call });
        }
    }

    /// Answers a call's `NeedsApproval`.
    pub fn decide(&self, block_id: BlockId, decision: Decision) {
        self.send(Op::Decision { block_id, decision });
    }

    /// Interrupts the block of this router's calls that runs now, when it is of `language`
    /// (any language when none is given). Returns what was interrupted, or why nothing was.
    pub fn interrupt(&self, language: Option<Language>) -> Result<String, String> {
        let running = lock(&self.state).running;
        match running {
            Some((block, lang)) if language.is_none_or(|l| l == lang) => {
                self.send(Op::Interrupt);
                Ok(format!(
                    "Interrupted the running {lang} block (block {block})."
                ))
            }
            Some((_, lang)) => Err(format!(
                "Nothing to interrupt in {}: the block that runs now is {lang}.",
                language.map_or("any language", |l| l.name())
            )),
            None => Err("Nothing to interrupt: no block of this connection is running.".into()),
        }
    }

    /// Restarts one language's kernel, or all of them (their state is lost).
    pub fn restart(&self, language: Option<Language>) -> bool {
        self.send(Op::RestartKernels { language })
    }

    /// Hands one of the engine's events to the call it concerns, if any.
    pub fn observe(&self, event: &Event) {
        let mut state = lock(&self.state);
        let (call, update) = match event {
            Event::BlockProposed {
                block,
                verdict,
                gate,
                ..
            } => {
                let Some(caller) = &block.caller else { return };
                let Some(waiting) = state.calls.get_mut(&caller.call) else {
                    return;
                };
                waiting.block = Some(block.id);
                let call = caller.call;
                state.blocks.insert(block.id, call);
                (
                    call,
                    CallUpdate::Proposed {
                        block: block.clone(),
                        verdict: verdict.clone(),
                        gate: gate.clone(),
                    },
                )
            }
            Event::ApprovalNeeded { block_id } => match state.blocks.get(block_id) {
                Some(&call) => (
                    call,
                    CallUpdate::NeedsApproval {
                        block_id: *block_id,
                    },
                ),
                None => return,
            },
            Event::ExecStarted {
                block_id,
                language,
                code,
                edited,
            } => match state.blocks.get(block_id) {
                Some(&call) => {
                    state.running = Some((*block_id, *language));
                    (
                        call,
                        CallUpdate::Started {
                            code: code.clone(),
                            edited: *edited,
                        },
                    )
                }
                None => return,
            },
            Event::ExecOutput { block_id, data } => match state.blocks.get(block_id) {
                Some(&call) => (call, CallUpdate::Output(data.clone())),
                None => return,
            },
            Event::ExecAwaitingInput { block_id, waiting } => match state.blocks.get(block_id) {
                Some(&call) => (call, CallUpdate::AwaitingInput(*waiting)),
                None => return,
            },
            Event::ExecFinished { block_id, .. } => {
                if state.running.is_some_and(|(b, _)| b == *block_id) {
                    state.running = None;
                }
                return;
            }
            Event::CallFinished {
                call,
                block_id,
                outcome,
            } => {
                drop(state);
                return self.finish(*call, *block_id, outcome.clone());
            }
            _ => return,
        };
        if let Some(waiting) = state.calls.get(&call) {
            let _ = waiting.updates.send(update);
        }
    }

    /// The engine's events ended: every call in flight is answered.
    pub fn closed(&self, why: &str) {
        let ids: Vec<CallId> = lock(&self.state).calls.keys().copied().collect();
        for id in ids {
            self.finish(
                id,
                None,
                CallOutcome::NotRun {
                    why: NotRun::Cancelled,
                    reason: format!("Not run: {why}."),
                },
            );
        }
    }

    /// Calls in flight (waiting, being decided or running).
    pub fn in_flight(&self) -> usize {
        lock(&self.state).calls.len()
    }

    fn finish(&self, call: CallId, block_id: Option<BlockId>, outcome: CallOutcome) {
        let mut state = lock(&self.state);
        if let Some(waiting) = state.calls.remove(&call) {
            if let Some(block) = waiting.block {
                state.blocks.remove(&block);
                if state.running.is_some_and(|(b, _)| b == block) {
                    state.running = None;
                }
            }
            let _ = waiting
                .updates
                .send(CallUpdate::Finished { block_id, outcome });
        }
    }

    fn send(&self, op: Op) -> bool {
        lock(&self.ops).send(op).is_ok()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Caller;

    fn proposed(block: BlockId, call: CallId) -> Event {
        Event::BlockProposed {
            block: ProposedBlock {
                id: block,
                language_tag: "python".into(),
                language: Some(Language::Python),
                code: "print(1)".into(),
                caller: Some(Caller {
                    name: "t".into(),
                    call,
                }),
                tool: None,
            },
            index: 1,
            of: 1,
            verdict: None,
            gate: None,
            allow: None,
        }
    }

    #[test]
    fn events_reach_their_call_in_order_and_others_are_ignored() {
        let (tx, mut ops) = mpsc::unbounded_channel();
        let router = Router::new(tx);
        let mut a = router.call("t", "python", "print(1)", None);
        let mut b = router.call("t", "python", "print(2)", Some(5.0));
        assert!(matches!(ops.try_recv(), Ok(Op::RunCode { call, .. }) if call == a.id));
        assert!(
            matches!(ops.try_recv(), Ok(Op::RunCode { call, timeout_secs: Some(t), .. }) if call == b.id && t == 5.0)
        );
        router.observe(&proposed(7, a.id));
        // A block of the model's is nobody's here.
        router.observe(&Event::ExecOutput {
            block_id: 3,
            data: b"model".to_vec(),
        });
        router.observe(&Event::ApprovalNeeded { block_id: 7 });
        router.observe(&Event::ExecStarted {
            block_id: 7,
            language: Language::Python,
            code: "print(10)".into(),
            edited: true,
        });
        router.observe(&Event::ExecOutput {
            block_id: 7,
            data: b"10\n".to_vec(),
        });
        assert!(router.interrupt(Some(Language::Shell)).is_err());
        assert!(router.interrupt(Some(Language::Python)).is_ok());
        assert!(matches!(ops.try_recv(), Ok(Op::Interrupt)));
        router.observe(&Event::CallFinished {
            call: a.id,
            block_id: Some(7),
            outcome: CallOutcome::NotRun {
                why: NotRun::Skipped,
                reason: "no".into(),
            },
        });
        let mut seen = Vec::new();
        while let Ok(update) = a.updates.try_recv() {
            seen.push(update);
        }
        assert!(matches!(seen[0], CallUpdate::Proposed { .. }));
        assert_eq!(seen[1], CallUpdate::NeedsApproval { block_id: 7 });
        assert_eq!(
            seen[2],
            CallUpdate::Started {
                code: "print(10)".into(),
                edited: true
            }
        );
        assert_eq!(seen[3], CallUpdate::Output(b"10\n".to_vec()));
        assert!(matches!(
            seen[4],
            CallUpdate::Finished {
                block_id: Some(7),
                ..
            }
        ));
        assert_eq!(seen.len(), 5);
        assert!(b.updates.try_recv().is_err());
        assert!(router.interrupt(None).is_err());
        // The engine stops: the other call is answered.
        router.closed("the engine stopped");
        assert!(matches!(
            b.updates.try_recv(),
            Ok(CallUpdate::Finished {
                outcome: CallOutcome::NotRun {
                    why: NotRun::Cancelled,
                    ..
                },
                ..
            })
        ));
        assert_eq!(router.in_flight(), 0);
    }

    #[test]
    fn a_call_to_a_stopped_engine_is_answered_at_once() {
        let (tx, ops) = mpsc::unbounded_channel();
        drop(ops);
        let router = Router::new(tx);
        let mut call = router.call("t", "python", "1", None);
        assert!(matches!(
            call.updates.try_recv(),
            Ok(CallUpdate::Finished { .. })
        ));
    }
}
