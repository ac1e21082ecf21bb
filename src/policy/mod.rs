//! The policy: reads a block before anyone is asked and returns a verdict — the risk
//! classes, the rule that decided (allow / ask / deny) and findings that quote the exact
//! text behind them. Rule-based and deterministic, no I/O, no model. Shell is parsed with a
//! real parser down to every simple command; Python, JavaScript, Ruby, Perl and R are read
//! on tokens. This folder owns classification and rules; it does not touch the engine, the
//! protocol or any face (they call `Policy::judge`), nor kernels or sandboxes.
//!
//! How the rules decide a block:
//! - deny if any simple command (seen through its wrappers) matches a deny rule;
//! - otherwise ask if any matches an ask rule;
//! - otherwise allow only for shell blocks in which every simple command is allowed and
//!   nothing is opaque (eval, a command word known only at run time, aliases, `source`,
//!   parse errors …); an empty block is allowed (it runs nothing);
//! - otherwise ask. Blocks in other languages are never allowed by command rules (their
//!   own code is not a command), though a deny rule applies to the commands they run.
//! - a block (or an MCP tool's arguments) holding characters that make it read differently
//!   from how it runs (see `hidden`) is never allowed: it gets a "hidden characters"
//!   finding, and the engine asks for it in every mode.
//! - `possibly_denied`: deny rules exist and the block holds something opaque or anything
//!   else classed "cannot tell" (an unknown program, a script file, awk's `system`, …).

mod analysis;
mod hidden;
pub mod rules;
#[doc(hidden)]
pub mod samples;
pub mod script;
mod shell;
mod suggest;
mod tools;
/// The verdict's types, which are the protocol's (`protocol::verdict`).
pub mod verdict {
    pub use crate::protocol::{
        Finding, RiskClass, Rule, RuleDecision as Decision, RuleSource, SimpleCommand, Suggestion,
        Verdict,
    };
}

use std::path::PathBuf;

pub use rules::{RuleError, RuleLists, Rules};
pub use script::Language;
pub use tools::is_tool_rule;
pub use verdict::{
    Decision, Finding, RiskClass, Rule, RuleSource, SimpleCommand, Suggestion, Verdict,
};

use analysis::{Analysis, Frame};

/// Rules plus the workspace root against which deletes are judged.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Rules,
    root: PathBuf,
}

impl Policy {
    /// A policy with these rules; `workspace_root` should be absolute (the directory the
    /// kernels start in).
    pub fn new(rules: Rules, workspace_root: impl Into<PathBuf>) -> Self {
        Policy {
            rules,
            root: workspace_root.into(),
        }
    }

    /// Judges blocks against another workspace from now on (the kernels moved to a host,
    /// where they start in its working directory).
    pub fn set_root(&mut self, workspace_root: impl Into<PathBuf>) {
        self.root = workspace_root.into();
    }

    /// The rules in force.
    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The verdict for one block. `language` is a fence tag or kernel name (`bash`,
    /// `python`, `js`, `ruby`, `perl`, `r`); an unknown language is "cannot tell".
    pub fn judge(&self, language: &str, code: &str) -> Verdict {
        // A call of an MCP tool: its tag is `mcp:SERVER/TOOL`, its code the arguments.
        if let Some(tool) = crate::protocol::ToolRef::parse(language) {
            let mut verdict = self.judge_tool(&tool);
            hidden::apply(&mut verdict, code);
            return verdict;
        }
        let lang = Language::from_tag(language);
        self.finish(self.analyse(lang, code, false), lang)
    }

    /// Reads a block: findings, simple commands and the rule decision for each (and the
    /// views the rules judged, with `keep_views`).
    fn analyse<'a>(&'a self, lang: Language, code: &'a str, keep_views: bool) -> Analysis<'a> {
        let mut an = Analysis::new(&self.rules, &self.root, code);
        an.keep_views = keep_views;
        script::analyse_nested(&mut an, lang, code, &Frame::default());
        an.hidden_text();
        an
    }

    /// The verdict as `judge` gives it, but reading shell with the full parser only: the
    /// reference against which the fast reader is tested. Not for use by the faces.
    #[doc(hidden)]
    pub fn judge_with_full_parser(&self, language: &str, code: &str) -> Verdict {
        let lang = Language::from_tag(language);
        let mut an = Analysis::new(&self.rules, &self.root, code);
        an.full_parser_only = true;
        script::analyse_nested(&mut an, lang, code, &Frame::default());
        an.hidden_text();
        self.finish(an, lang)
    }

    fn finish(&self, an: Analysis<'_>, lang: Language) -> Verdict {
        let mut classes: Vec<RiskClass> = an.findings.iter().map(|f| f.class).collect();
        if an.read_only || classes.is_empty() {
            classes.push(RiskClass::ReadOnly);
        }
        classes.sort();
        classes.dedup();
        let highest = classes.last().copied().unwrap_or(RiskClass::ReadOnly);
        let rule_of = |d: Decision| {
            an.commands
                .iter()
                .filter_map(|c| c.rule.as_ref())
                .find(|r| r.decision == d)
                .cloned()
        };
        let (decision, rule) = if let Some(r) = rule_of(Decision::Deny) {
            (Decision::Deny, Some(r))
        } else if let Some(r) = rule_of(Decision::Ask) {
            (Decision::Ask, Some(r))
        } else {
            let all_allowed = an.commands.iter().zip(&an.gating).all(|(c, g)| {
                !g || c
                    .rule
                    .as_ref()
                    .is_some_and(|r| r.decision == Decision::Allow)
            });
            if lang == Language::Shell
                && !an.opaque
                && !an.unallowable
                && an.hidden_at.is_none()
                && an.redirect_write_at.is_none()
                && all_allowed
            {
                (Decision::Allow, rule_of(Decision::Allow))
            } else {
                (Decision::Ask, None)
            }
        };
        // Anything the policy cannot see through — opaque code, but also a program it does
        // not know, a script file, a path it cannot read — may run a denied command.
        let cannot_tell = an.opaque || classes.contains(&RiskClass::CannotTell);
        let possibly_denied = decision != Decision::Deny && cannot_tell && self.rules.has_deny();
        Verdict {
            classes,
            highest,
            decision,
            rule,
            possibly_denied,
            findings: an.findings,
            commands: an.commands,
        }
    }
}
