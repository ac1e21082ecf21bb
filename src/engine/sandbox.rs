//! The sandbox as the engine runs it: every kernel starts under it; changing it restarts
//! the kernels (and says so); and a block the sandbox stopped may run again outside it,
//! once, in a fresh kernel, when a person says so. Nobody is ever asked without a person to
//! ask, and auto mode never leaves the sandbox on its own.

use std::sync::Arc;

use crate::exec::{Language, RunResult, RunStatus};
use crate::protocol::{BlockId, Decision, Event, Network, SandboxMode};
use crate::sandbox::{SandboxSettings, refusal_reason, resolve};

use super::Engine;

/// What became of a block the sandbox stopped.
pub(super) struct Escalation {
    /// What the model hears, after the first run's output.
    pub text: String,
    /// The person stopped the turn.
    pub interrupted: bool,
}

impl Engine {
    /// The languages whose kernels are running now.
    pub(super) async fn live_kernels(&self) -> Vec<Language> {
        self.kernels
            .pids()
            .await
            .into_iter()
            .map(|(l, _)| l)
            .collect()
    }

    /// `Op::SetSandbox`: the kernels restart under the new sandbox.
    pub(super) async fn set_sandbox(&mut self, mode: SandboxMode, network: Network) {
        let settings = SandboxSettings {
            mode,
            network,
            explicit: true,
        };
        self.config.sandbox = settings;
        if self.kernels.config().executor.is_remote() {
            let live = self.live_kernels().await;
            let mut note = self.set_remote_sandbox().await;
            if !live.is_empty() {
                note.push_str(" The kernels restarted under it: variables, imports and `cd` from earlier blocks are gone.");
                self.context.push(format!(
                    "The user changed the sandbox ({}); the kernels restarted, so variables and imports from earlier blocks are gone.",
                    self.sandbox.summary()
                ));
            }
            self.emit(Event::SandboxChanged {
                status: self.sandbox.status(),
                note,
            });
            return;
        }
        let resolved = resolve(settings, &self.config.kernels.cwd);
        let live = self.live_kernels().await;
        let fresh = self
            .kernels
            .relaunched(resolved.prefix.clone(), resolved.refusal.clone());
        let old = std::mem::replace(&mut self.kernels, Arc::new(fresh));
        old.shutdown().await;
        let mut note = format!("Now: {}.", resolved.summary());
        if live.is_empty() {
            note.push_str(" Kernels start under it with their next block.");
        } else {
            let names: Vec<&str> = live.iter().map(|l| l.name()).collect();
            note.push_str(&format!(
                " The {} kernel{} restarted under it: variables, imports and `cd` from earlier blocks are gone.",
                names.join(", "),
                if names.len() == 1 { " was" } else { "s were" }
            ));
            self.context.push(format!(
                "The user changed the sandbox ({}); the kernels restarted, so variables and imports from earlier blocks are gone.",
                resolved.summary()
            ));
        }
        if let Some(refusal) = &resolved.refusal {
            note.push_str(&format!(" Blocks will not run: {refusal}"));
        }
        if let Some(warning) = &resolved.warning {
            note.push_str(&format!(" Warning: {warning}"));
        }
        self.facts.sandbox = resolved.for_model();
        self.sandbox = resolved;
        self.emit(Event::SandboxChanged {
            status: self.sandbox.status(),
            note,
        });
    }

    /// After a block failed: when the sandbox looks like the cause, say so to the model,
    /// and offer the person to run it again outside the sandbox, once. None when the
    /// failure does not look like the sandbox's.
    pub(super) async fn escalate(
        &mut self,
        block_id: BlockId,
        language: Language,
        code: &str,
        result: &RunResult,
    ) -> Option<Escalation> {
        if result.status != RunStatus::Failed {
            return None;
        }
        let reason = refusal_reason(&result.output, &self.sandbox, &self.config.kernels.cwd)?;
        if self.config.unattended {
            self.emit(Event::Notice {
                message: format!(
                    "block {block_id} looks stopped by the sandbox ({reason}); nobody can allow it outside the sandbox here."
                ),
            });
            return Some(Escalation {
                text: format!(
                    "This looks like the sandbox stopped it ({reason}). Nobody can allow a block outside the sandbox here: stay inside the working directory and the temp dir{}.",
                    if self.sandbox.settings.network == Network::Off {
                        ", and do without the network"
                    } else {
                        ""
                    }
                ),
                interrupted: false,
            });
        }
        self.emit(Event::EscalationNeeded {
            block_id,
            reason: reason.clone(),
        });
        let original = code;
        let code = match self.await_decision(block_id).await {
            // Leaving the sandbox is for this run only: "always" does not apply to it.
            Decision::Run
            | Decision::RunAlways { code: None }
            | Decision::AllowAlways { code: None, .. } => original.to_string(),
            Decision::Edit { code }
            | Decision::RunAlways { code: Some(code) }
            | Decision::AllowAlways {
                code: Some(code), ..
            } => code,
            Decision::Skip { reason: why } => {
                self.emit(Event::Notice {
                    message: "Not run outside the sandbox.".to_string(),
                });
                let why = why
                    .as_deref()
                    .map(str::trim)
                    .filter(|w| !w.is_empty())
                    .map(|w| format!(" Their reason: {w}"))
                    .unwrap_or_default();
                return Some(Escalation {
                    text: format!(
                        "This looks like the sandbox stopped it ({reason}). The user chose not to run it outside the sandbox.{why}"
                    ),
                    interrupted: false,
                });
            }
            Decision::Abort => {
                return Some(Escalation {
                    text: format!(
                        "This looks like the sandbox stopped it ({reason}). The user stopped the turn."
                    ),
                    interrupted: true,
                });
            }
        };
        let edited = code != original;
        self.emit(Event::Notice {
            message: format!(
                "Running block {block_id} again outside the sandbox, once, in a fresh {language} kernel."
            ),
        });
        let outside = Arc::new(self.kernels.relaunched(Vec::new(), None));
        let sandboxed = std::mem::replace(&mut self.kernels, outside);
        let (second, interrupted) = self
            .execute(
                block_id,
                language,
                code.clone(),
                edited,
                self.config.block_timeout,
            )
            .await;
        let outside = std::mem::replace(&mut self.kernels, sandboxed);
        outside.shutdown().await;
        Some(Escalation {
            text: format!(
                "This looks like the sandbox stopped it ({reason}). The user allowed it to run again outside the sandbox, once, in a fresh {language} kernel (without the state of earlier blocks). The code that ran:\n{}\nThat run's output:\n{}",
                super::turn::fenced(language.name(), &code),
                second.for_model()
            ),
            interrupted,
        })
    }
}
