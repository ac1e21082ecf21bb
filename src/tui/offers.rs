//! What the approval panel offers beyond run, edit and skip: running a block the sandbox
//! stopped again outside the sandbox, once (the engine asks with `EscalationNeeded`).

use crate::protocol::BlockId;

use super::app::{App, Pending};

impl App {
    /// The engine offers to run a block the sandbox stopped again outside it: the decision
    /// shows the code that ran and why the sandbox looks like the cause. Only `y` (or
    /// Enter), with the code in view, runs it; auto-run does not apply.
    pub(super) fn offer_outside(&mut self, block_id: BlockId, reason: String) {
        let shown = self
            .shown_block
            .as_ref()
            .filter(|(b, _)| b.id == block_id)
            .map(|(b, _)| b.clone());
        let Some(block) = shown.or_else(|| self.proposed.get(&block_id).cloned()) else {
            return;
        };
        self.busy = super::app::Busy::Idle;
        self.pending = Some(Pending {
            block,
            index: 1,
            of: 1,
            edited: None,
            editor: None,
            reason: false,
            confirm: None,
            note: None,
            outside: Some(reason),
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
        let Some(current) = self.sandbox_modes else {
            self.chat.push(Entry::Error(
                "the engine has not said which sandbox is in force yet; try again in a moment"
                    .into(),
            ));
            return Vec::new();
        };
        if arg.is_empty() {
            self.chat.push(Entry::Notice(format!(
                "sandbox: {}. /sandbox off|read-only|workspace-write [network on|off] changes it (the kernels restart)",
                if self.sandbox.is_empty() { current.0.name() } else { &self.sandbox }
            )));
            return Vec::new();
        }
        match parse_sandbox(arg, current) {
            Ok((mode, network)) => {
                if self.in_turn {
                    self.chat.push(Entry::Notice(
                        "the sandbox changes when this turn ends".into(),
                    ));
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
