//! Rules that name MCP tools: `mcp:SERVER/TOOL`, or `mcp:SERVER/*` for every tool of a
//! server, in the same allow / ask / deny lists as command prefixes. A tool call is judged
//! by these alone (deny > ask > allow); command rules never match a tool, nor tool rules a
//! command. The policy cannot see what a tool does: it runs in the server's own process,
//! outside oi-tui's sandbox, so its verdict says "cannot tell" unless a rule decides.

use crate::protocol::{TOOL_PREFIX, ToolRef};

use super::verdict::{Decision, Finding, RiskClass, Rule, SimpleCommand, Suggestion, Verdict};
use super::{Policy, Rules};

/// Whether a rule's text names MCP tools.
pub fn is_tool_rule(text: &str) -> bool {
    text.trim_start().starts_with(TOOL_PREFIX)
}

/// Checks a tool rule's text (`mcp:SERVER/TOOL` or `mcp:SERVER/*`); the reason if bad.
pub(super) fn check_tool_rule(text: &str) -> Result<(), String> {
    let text = text.trim();
    let example = "e.g. \"mcp:github/list_issues\" or \"mcp:github/*\"";
    let Some(rest) = text.strip_prefix(TOOL_PREFIX) else {
        return Err(format!("a tool rule starts with `mcp:`, {example}"));
    };
    let Some((server, tool)) = rest.split_once('/') else {
        return Err(format!(
            "a tool rule names a server and a tool, `mcp:SERVER/TOOL`, {example}"
        ));
    };
    if server.is_empty()
        || !server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "the server name in a tool rule is letters, digits, `_` and `-` only, {example}"
        ));
    }
    if tool.is_empty()
        || tool
            .chars()
            .any(|c| c.is_whitespace() || "'\"\\`".contains(c))
    {
        return Err(format!(
            "the tool name in a tool rule is one word, {example}"
        ));
    }
    if tool.contains('*') && tool != "*" {
        return Err(format!(
            "`*` stands alone for every tool of a server (`mcp:{server}/*`), {example}"
        ));
    }
    Ok(())
}

impl Rules {
    /// The strongest rule naming this tool (deny > ask > allow), exactly or with `*`.
    pub fn tool_rule(&self, tool: &ToolRef) -> Option<&Rule> {
        let exact = tool.policy_name();
        let every = format!("{TOOL_PREFIX}{}/*", tool.server);
        let rank = |d: Decision| match d {
            Decision::Deny => 3,
            Decision::Ask => 2,
            Decision::Allow => 1,
        };
        self.all()
            .filter(|r| r.text == exact || r.text == every)
            .max_by_key(|r| rank(r.decision))
    }
}

impl Policy {
    /// The verdict for a call of an MCP tool: what the tool rules decide, else ask.
    pub fn judge_tool(&self, tool: &ToolRef) -> Verdict {
        let name = tool.policy_name();
        let rule = self.rules().tool_rule(tool).cloned();
        let decision = rule.as_ref().map_or(Decision::Ask, |r| r.decision);
        Verdict {
            classes: vec![RiskClass::CannotTell],
            highest: RiskClass::CannotTell,
            decision,
            rule: rule.clone(),
            possibly_denied: false,
            findings: vec![Finding {
                class: RiskClass::CannotTell,
                explanation: format!(
                    "a tool of the MCP server \"{}\": it runs in the server, outside the sandbox",
                    tool.server
                ),
                quoted: name.clone(),
                line: 1,
            }],
            commands: vec![SimpleCommand {
                words: vec![name.clone()],
                quoted: name,
                line: 1,
                rule,
            }],
        }
    }

    /// The "always allow" rule offered for a tool call: the tool's own name.
    pub fn suggest_allow_tool(&self, tool: &ToolRef) -> Suggestion {
        if self.judge_tool(tool).decision == Decision::Allow {
            Suggestion::AlreadyAllowed
        } else {
            Suggestion::Prefixes(vec![tool.policy_name()])
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::protocol::RuleSource;

    fn tool(server: &str, name: &str) -> ToolRef {
        ToolRef {
            server: server.into(),
            tool: name.into(),
        }
    }

    #[test]
    fn tool_rules_decide_tool_calls_only() {
        let mut rules = Rules::new();
        rules
            .add(Decision::Allow, "mcp:fs/read", RuleSource::User)
            .unwrap();
        rules
            .add(Decision::Deny, "mcp:fs/*", RuleSource::User)
            .unwrap();
        rules
            .add(Decision::Allow, "mcp:gh/*", RuleSource::User)
            .unwrap();
        rules
            .add(Decision::Ask, "mcp:gh/delete_repo", RuleSource::User)
            .unwrap();
        let policy = Policy::new(rules, "/tmp");
        // Deny beats allow, whatever the form.
        assert_eq!(
            policy.judge_tool(&tool("fs", "read")).decision,
            Decision::Deny
        );
        assert_eq!(
            policy.judge_tool(&tool("gh", "list")).decision,
            Decision::Allow
        );
        assert_eq!(
            policy.judge_tool(&tool("gh", "delete_repo")).decision,
            Decision::Ask
        );
        let none = policy.judge_tool(&tool("other", "x"));
        assert_eq!(none.decision, Decision::Ask);
        assert!(none.rule.is_none());
        // The block form judges the same way, and no command matches a tool rule.
        assert_eq!(policy.judge("mcp:gh/list", "{}").decision, Decision::Allow);
        assert_ne!(
            policy.judge("bash", "mcp:gh/list").decision,
            Decision::Allow
        );
        assert_eq!(
            policy.suggest_allow_tool(&tool("other", "x")),
            Suggestion::Prefixes(vec!["mcp:other/x".into()])
        );
        assert_eq!(
            policy.suggest_allow_tool(&tool("gh", "x")),
            Suggestion::AlreadyAllowed
        );
    }

    #[test]
    fn bad_tool_rules_say_why() {
        let mut rules = Rules::new();
        for bad in [
            "mcp:",
            "mcp:fs",
            "mcp:/x",
            "mcp:f s/x",
            "mcp:fs/a*",
            "mcp:fs/a b",
        ] {
            let e = rules
                .add(Decision::Allow, bad, RuleSource::User)
                .unwrap_err()
                .to_string();
            assert!(e.contains(bad.trim()), "{bad}: {e}");
            assert!(e.contains("mcp:"), "{bad}: {e}");
        }
        assert!(rules.is_empty());
    }
}
