//! What the approval panel offers beyond run, edit and skip: "always allow" (`p`: the
//! block's command prefixes, editable in the input, saved to the user's rules or the
//! project's, then the block runs), and running a block the sandbox stopped again outside
//! the sandbox, once (the engine asks with `EscalationNeeded`).

use crate::protocol::{BlockId, Decision, RuleSource, Suggestion};

use super::app::{App, Effect, Focus, Pending};

impl App {
    /// `p`: the input takes the prefixes to always allow, one per line, as proposed. Like
    /// running, it needs every line of the block seen first. When no rule can allow the
    /// block, the panel says why.
    pub(super) fn open_allow_prompt(&mut self) {
        if !self.read_enough(super::keymap::Action::AllowPrefix) {
            return;
        }
        let Some(pending) = self.pending.as_mut() else {
            return;
        };
        let prefixes = match self.allow_offers.get(&pending.block.id) {
            Some(Suggestion::Prefixes(prefixes)) => prefixes.clone(),
            Some(Suggestion::AlreadyAllowed) => {
                pending.note = Some("the rules already allow this block; y runs it".to_string());
                return;
            }
            Some(Suggestion::Impossible(why)) => {
                pending.note = Some(format!("no rule can allow it: {why}"));
                return;
            }
            None => {
                pending.note = Some("no allow rule is offered for this block".to_string());
                return;
            }
        };
        if pending.edited.is_some() {
            // The prefixes were proposed for the block as the model wrote it.
            pending.note = Some(
                "you edited the block: the allow prefixes were proposed for the original; run it with y, or edit the prefixes after p on an unedited block".to_string(),
            );
            return;
        }
        pending.reason = true;
        pending.allow = Some(RuleSource::User);
        let mut input = tui_textarea::TextArea::new(prefixes);
        input.set_placeholder_text("one command prefix per line, e.g. git status");
        // Typing adds to the proposal, as in any field that comes filled in.
        input.move_cursor(tui_textarea::CursorMove::End);
        self.draft = Some(std::mem::replace(&mut self.input, input));
        self.focus = Focus::Input;
    }

    /// Ctrl-P in the allow prompt: the rules go to the user's config or to the project's.
    pub(super) fn switch_rule_target(&mut self) {
        if let Some(pending) = self.pending.as_mut()
            && let Some(target) = pending.allow.as_mut()
        {
            *target = match target {
                RuleSource::User => RuleSource::Project,
                RuleSource::Project => RuleSource::User,
            };
        }
    }

    /// Enter in the allow prompt: the engine saves the prefixes (one per line), then runs
    /// the block. Nothing to save is said, and the prompt stays.
    pub(super) fn send_allow(&mut self) -> Vec<Effect> {
        let prefixes: Vec<String> = self
            .input
            .lines()
            .iter()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|l| !l.is_empty())
            .collect();
        let Some(pending) = self.pending.as_mut() else {
            return Vec::new();
        };
        let Some(save_to) = pending.allow else {
            return Vec::new();
        };
        if prefixes.is_empty() {
            self.flash("write at least one command prefix, or Esc to go back");
            return Vec::new();
        }
        let id = pending.block.id;
        let code = pending.edited.clone();
        // Enter ends the typing: the next block may take the keyboard at once.
        self.last_typed = None;
        self.restore_draft();
        self.decided(
            id,
            Decision::AllowAlways {
                prefixes,
                save_to,
                code,
            },
        )
    }
}

impl App {
    /// The engine offers to run a block the sandbox stopped again outside it: the decision
    /// shows the code that ran and why the sandbox looks like the cause. Only `y` (or
    /// Enter), with the code in view, runs it; auto-run does not apply.
    pub(super) fn offer_outside(&mut self, block_id: BlockId, reason: String) {
        // The code that ran (an edit included), at its place in the reply.
        let shown = self
            .shown_block
            .as_ref()
            .filter(|(b, _)| b.id == block_id)
            .map(|(b, label)| (b.clone(), super::app::parse_index(label)));
        let Some((block, place)) =
            shown.or_else(|| self.proposed.get(&block_id).map(|b| (b.clone(), None)))
        else {
            return;
        };
        let (index, of) = place.unwrap_or((1, 1));
        self.busy = super::app::Busy::Idle;
        self.pending = Some(Pending {
            outside: Some(reason),
            ..Pending::new(block, index, of)
        });
        self.code.reset();
        self.arrive_at_decision();
    }
}

impl App {
    /// `/sandbox [off|read-only|workspace-write] [network on|off]`: asks the engine for
    /// another sandbox (its kernels restart, and it says so). Without arguments: what is in
    /// force, and how to change it.
    pub(super) fn sandbox_command(&mut self, arg: &str) -> Vec<super::app::Effect> {
        use super::chat::Entry;
        let Some(current) = self.sandbox.as_ref().map(|s| (s.mode, s.network)) else {
            self.chat.push(Entry::Error(
                "the engine has not said which sandbox is in force yet; try again in a moment"
                    .into(),
            ));
            return Vec::new();
        };
        if arg.is_empty() {
            self.chat.push(Entry::Notice(format!(
                "sandbox: {}. /sandbox off|read-only|workspace-write [network on|off] changes it (the kernels restart)",
                self.sandbox.as_ref().map_or("", |s| s.label.as_str())
            )));
            return Vec::new();
        }
        match parse_sandbox(arg, current) {
            Ok((mode, network)) => {
                if self.engaged() {
                    self.waits(
                        &format!("/sandbox {}", super::app::short(arg, 40)),
                        "the sandbox changes (the kernels restart)",
                    );
                }
                vec![super::app::Effect::Op(crate::protocol::Op::SetSandbox {
                    mode,
                    network,
                })]
            }
            Err(message) => {
                self.chat.push(Entry::Error(message));
                Vec::new()
            }
        }
    }
}

/// `read-only`, `network off`, `workspace-write network on`, `off`: the modes asked for, the
/// rest as it is now.
pub fn parse_sandbox(
    arg: &str,
    current: (crate::protocol::SandboxMode, crate::protocol::Network),
) -> Result<(crate::protocol::SandboxMode, crate::protocol::Network), String> {
    use crate::protocol::{Network, SandboxMode};
    let (mut mode, mut network) = current;
    let mut words = arg.split_whitespace();
    while let Some(word) = words.next() {
        match word {
            "network" | "net" => {
                let value = words.next().unwrap_or("");
                network = Network::parse(value).map_err(|e| format!("/sandbox: {e}"))?;
            }
            other => mode = SandboxMode::parse(other).map_err(|e| format!("/sandbox: {e}"))?,
        }
    }
    Ok((mode, network))
}

#[cfg(test)]
mod tests {
    use super::parse_sandbox;
    use crate::protocol::{Network, SandboxMode};

    #[test]
    fn sandbox_arguments_change_what_they_name() {
        let now = (SandboxMode::WorkspaceWrite, Network::On);
        assert_eq!(
            parse_sandbox("read-only", now),
            Ok((SandboxMode::ReadOnly, Network::On))
        );
        assert_eq!(
            parse_sandbox("network off", now),
            Ok((SandboxMode::WorkspaceWrite, Network::Off))
        );
        assert_eq!(
            parse_sandbox("off net on", now),
            Ok((SandboxMode::Off, Network::On))
        );
        assert!(parse_sandbox("network", now).is_err());
        assert!(parse_sandbox("readonly", now).is_err());
    }
}
