//! The approval gate: the policy's verdict meets the approval mode. A deny rule stops a
//! block in every mode; `ask` asks for everything, `rules` for what the rules do not allow,
//! `auto` only for deletes outside the workspace, privileged and system-changing blocks,
//! blocks an `ask` rule matches and blocks possibly denied. A block holding hidden
//! characters (see `policy::hidden`) asks in every mode. When nobody can be asked, what
//! would ask is declined, and the model hears why.

use crate::protocol::{ApprovalMode, Gate, GateAction, RiskClass, RuleDecision, Verdict};

use super::Engine;
use super::turn::NO_APPROVAL;

impl Engine {
    /// The policy's verdict meets the approval mode: run, ask, deny, or (nobody to ask)
    /// decline. A deny rule wins in every mode.
    pub(super) fn gate(&self, verdict: &Verdict) -> Gate {
        if verdict.decision == RuleDecision::Deny {
            return Gate {
                action: GateAction::Deny,
                reason: format!("{} ({})", verdict.decision_reason(), verdict.summary()),
            };
        }
        let hidden = verdict
            .findings
            .iter()
            .find(|f| f.class == RiskClass::HiddenCharacters);
        let asks = match (self.approval, hidden) {
            (ApprovalMode::Ask, _) => Some("ask mode: every block asks".to_string()),
            (_, Some(finding)) => Some(format!(
                "\"{}\" always asks, in every mode: what it looks like may not be what runs ({})",
                RiskClass::HiddenCharacters.label(),
                finding.summary()
            )),
            (ApprovalMode::Rules, None) => {
                (verdict.decision != RuleDecision::Allow).then(|| verdict.decision_reason())
            }
            (ApprovalMode::Auto, None) => {
                let always_ask = [
                    RiskClass::DeletesOutsideWorkspace,
                    RiskClass::Privileged,
                    RiskClass::ChangesSystem,
                ]
                .into_iter()
                .find(|c| verdict.has(*c));
                if verdict.possibly_denied {
                    Some(verdict.decision_reason())
                } else if let Some(class) = always_ask {
                    Some(format!(
                        "\"{}\" always asks, even in auto mode ({})",
                        class.label(),
                        verdict.summary()
                    ))
                } else if verdict.decision == RuleDecision::Ask && verdict.rule.is_some() {
                    Some(verdict.decision_reason())
                } else {
                    None
                }
            }
        };
        match asks {
            Some(reason) if self.config.unattended => Gate {
                action: GateAction::Decline,
                reason,
            },
            Some(reason) => Gate {
                action: GateAction::Ask,
                reason,
            },
            None if verdict.decision == RuleDecision::Allow => Gate {
                action: GateAction::Run,
                reason: verdict.decision_reason(),
            },
            None => Gate {
                action: GateAction::Run,
                reason: "auto mode".to_string(),
            },
        }
    }
}

/// What the model hears about a block a rule denied.
pub(super) fn denied_text(gate: &Gate) -> String {
    format!(
        "Not run: {}. This rule is the user's and cannot be overridden; do not try another spelling of the same thing. Choose a different approach, or tell the user what you need and why.",
        gate.reason
    )
}

/// What the model hears about a block nobody could approve.
pub(super) fn declined_text(gate: &Gate) -> String {
    if gate.reason.starts_with("ask mode") {
        return NO_APPROVAL.to_string();
    }
    format!(
        "Not run: it needs a person's approval ({}), and nobody can approve code here (oi-tui is running without a terminal). Do it another way that needs no approval, or say what you would run, and why, instead.",
        gate.reason
    )
}
