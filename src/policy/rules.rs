//! Allow / ask / deny rules: command prefixes matched on whole words of each parsed simple
//! command, never on raw text. `git status` matches `git status -s` but not `git statusx`
//! or `echo git status`. Precedence is deny > ask > allow, whatever the prefix lengths.
//!
//! Wrappers: a command run through `sudo`, `env`, `nice`, `timeout`, `xargs`, `bash -c` …
//! is matched both as written (`sudo rm x`) and as the command it runs (`rm x`): a deny or
//! ask rule on either applies, so `deny = ["rm"]` catches `sudo rm`. To be allowed, the
//! command it runs must be allowed, and a privileged wrapper must be allowed as well
//! (`sudo ls` needs a rule such as `sudo ls`).

use serde::{Deserialize, Serialize};

use super::verdict::{Decision, Rule, RuleSource};

/// The `[policy]` section of a config file.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct RuleLists {
    /// Prefixes of commands that may run without a question (in `rules` mode).
    pub allow: Vec<String>,
    /// Prefixes of commands that always ask.
    pub ask: Vec<String>,
    /// Prefixes of commands that never run.
    pub deny: Vec<String>,
}

/// A rule that cannot be used, with the reason.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RuleError {
    /// The prefix has no words.
    #[error(
        "the {decision} rule \"{text}\" is empty: write the command prefix it should match, e.g. \"git status\""
    )]
    Empty {
        /// allow/ask/deny.
        decision: &'static str,
        /// The text as written.
        text: String,
    },
    /// A rule that names MCP tools (`mcp:SERVER/TOOL`) is malformed.
    #[error("the {decision} rule \"{text}\" is not a tool rule: {why}")]
    Tool {
        /// allow/ask/deny.
        decision: &'static str,
        /// The text as written.
        text: String,
        /// What is wrong, with an example.
        why: String,
    },
    /// The prefix holds shell syntax (quotes, `$`, `;`, `|` …) that a prefix cannot match.
    #[error(
        "the {decision} rule \"{text}\" holds shell syntax ({found}); a rule is plain words, e.g. \"git push\""
    )]
    Syntax {
        /// allow/ask/deny.
        decision: &'static str,
        /// The text as written.
        text: String,
        /// The offending character.
        found: char,
    },
}

#[derive(Clone, Debug)]
struct Entry {
    rule: Rule,
    words: Vec<String>,
    /// The rule names MCP tools (`is_tool_rule` of its text, worked out once when added:
    /// every command's every view is matched against every rule).
    tool: bool,
}

impl Entry {
    fn new(rule: Rule, words: Vec<String>) -> Self {
        let tool = super::tools::is_tool_rule(&rule.text);
        Entry { rule, words, tool }
    }
}

/// All rules in force (user and trusted project rules together).
#[derive(Clone, Debug, Default)]
pub struct Rules {
    entries: Vec<Entry>,
}

impl Rules {
    /// No rules: every block asks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one list section from a config file. Bad entries are reported and skipped;
    /// the good ones are kept.
    pub fn add_lists(&mut self, lists: &RuleLists, source: RuleSource) -> Vec<RuleError> {
        let mut errors = Vec::new();
        for (decision, list) in [
            (Decision::Allow, &lists.allow),
            (Decision::Ask, &lists.ask),
            (Decision::Deny, &lists.deny),
        ] {
            for text in list {
                if let Err(e) = self.add(decision, text, source) {
                    errors.push(e);
                }
            }
        }
        errors
    }

    /// Adds one rule.
    pub fn add(
        &mut self,
        decision: Decision,
        text: &str,
        source: RuleSource,
    ) -> Result<(), RuleError> {
        let name = match decision {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        };
        if super::tools::is_tool_rule(text) {
            super::tools::check_tool_rule(text).map_err(|why| RuleError::Tool {
                decision: name,
                text: text.trim().to_string(),
                why,
            })?;
            let text = text.trim().to_string();
            self.entries.push(Entry::new(
                Rule {
                    decision,
                    text: text.clone(),
                    source,
                },
                vec![text],
            ));
            return Ok(());
        }
        if let Some(found) = text
            .chars()
            .find(|c| "'\"\\$`;|&<>(){}*?[]#~\n".contains(*c))
        {
            return Err(RuleError::Syntax {
                decision: name,
                text: text.to_string(),
                found,
            });
        }
        let words: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            return Err(RuleError::Empty {
                decision: name,
                text: text.to_string(),
            });
        }
        self.entries.push(Entry::new(
            Rule {
                decision,
                text: words.join(" "),
                source,
            },
            words,
        ));
        Ok(())
    }

    /// Every rule, in the order added.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Rule> {
        self.entries.iter().map(|e| &e.rule)
    }

    /// Whether any deny rule exists.
    pub fn has_deny(&self) -> bool {
        // (Command rules: a tool deny rule does not make code "possibly denied".)
        self.entries
            .iter()
            .any(|e| e.rule.decision == Decision::Deny && !e.tool)
    }

    /// The deny rules on commands (not on MCP tools), as written.
    pub fn deny_commands(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.rule.decision == Decision::Deny && !e.tool)
            .map(|e| e.rule.text.clone())
            .collect()
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The strongest rule matching one view of a command (deny > ask > allow).
    pub(crate) fn matching<S: AsRef<str>>(&self, words: &[S]) -> Option<&Rule> {
        let mut best: Option<&Rule> = None;
        // Tool rules (`mcp:...`) name MCP tools, never commands.
        for e in self.entries.iter().filter(|e| !e.tool) {
            if matches_prefix(&e.words, words, e.rule.decision) {
                let rank = |d: Decision| match d {
                    Decision::Deny => 3,
                    Decision::Ask => 2,
                    Decision::Allow => 1,
                };
                if best.is_none_or(|b| rank(e.rule.decision) > rank(b.decision)) {
                    best = Some(&e.rule);
                }
            }
        }
        best
    }

    /// The decision for a command seen through its wrappers: `views` holds the command as
    /// written and each command it runs, with whether that view must itself be allowed.
    pub(crate) fn decide<S: AsRef<str>>(&self, views: &[(Vec<S>, bool)]) -> Option<Rule> {
        if self.entries.is_empty() {
            return None;
        }
        // One pass: the first deny, else the first ask, else the innermost view's allow
        // when every view that must be allowed is.
        let (mut deny, mut ask, mut gates_ok, mut innermost) = (None, None, true, None);
        for (k, (w, gate)) in views.iter().enumerate() {
            let r = self.matching(w);
            match r.map(|r| r.decision) {
                Some(Decision::Deny) if deny.is_none() => deny = r,
                Some(Decision::Ask) if ask.is_none() => ask = r,
                _ => {}
            }
            if *gate && !r.is_some_and(|r| r.decision == Decision::Allow) {
                gates_ok = false;
            }
            if k + 1 == views.len() {
                innermost = r;
            }
        }
        if let Some(r) = deny.or(ask) {
            return Some(r.clone());
        }
        let innermost = innermost?;
        (gates_ok && innermost.decision == Decision::Allow).then(|| innermost.clone())
    }
}

/// Whole-word prefix match. The command name may be written as a path (`/bin/rm`): deny
/// and ask rules match its last component; allow rules only when the path is a standard
/// system directory (a `./ls` in the project is not the `ls` the user allowed).
fn matches_prefix<S: AsRef<str>>(prefix: &[String], words: &[S], decision: Decision) -> bool {
    if words.len() < prefix.len() || prefix.is_empty() {
        return false;
    }
    let name = words[0].as_ref();
    // (Only a name that ends in `/` + the rule's first word can match as a path.)
    let p0 = prefix[0].as_str();
    let first_ok = if name == p0 {
        true
    } else if !name.ends_with(p0) || name.len() == p0.len() {
        false
    } else if let Some((dir, base)) = name.rsplit_once('/') {
        base == prefix[0]
            && (decision != Decision::Allow
                || matches!(
                    dir,
                    "/bin" | "/usr/bin" | "/usr/local/bin" | "/sbin" | "/usr/sbin"
                ))
    } else {
        false
    };
    first_ok
        && prefix[1..]
            .iter()
            .zip(&words[1..])
            .all(|(p, w)| p == w.as_ref())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn prefixes_match_whole_words_only() {
        let mut r = Rules::new();
        r.add(Decision::Allow, "git status", RuleSource::User)
            .unwrap();
        assert!(r.matching(&w("git status -s")).is_some());
        assert!(r.matching(&w("git statusx")).is_none());
        assert!(r.matching(&w("echo git status")).is_none());
        assert!(r.matching(&w("git")).is_none());
    }

    #[test]
    fn deny_beats_allow_and_paths_are_seen_through() {
        let mut r = Rules::new();
        r.add(Decision::Allow, "rm", RuleSource::User).unwrap();
        r.add(Decision::Deny, "rm", RuleSource::Project).unwrap();
        assert_eq!(
            r.matching(&w("/bin/rm x")).unwrap().decision,
            Decision::Deny
        );
        let mut a = Rules::new();
        a.add(Decision::Allow, "ls", RuleSource::User).unwrap();
        assert!(a.matching(&w("./ls")).is_none());
        assert!(a.matching(&w("/usr/bin/ls")).is_some());
    }

    #[test]
    fn bad_rules_are_reported_and_skipped() {
        let mut r = Rules::new();
        let errs = r.add_lists(
            &RuleLists {
                allow: vec!["ls".into(), "  ".into(), "rm *".into()],
                ask: vec![],
                deny: vec![],
            },
            RuleSource::User,
        );
        assert_eq!(errs.len(), 2);
        assert!(errs[1].to_string().contains("shell syntax"));
        assert!(r.matching(&w("ls -l")).is_some());
    }
}
