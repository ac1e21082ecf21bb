//! The verdict the policy returns for one block: which risk classes apply, which rule
//! decided, the findings that quote the exact text behind each class, and the simple
//! commands seen. Plain serde data: `policy` makes it, the engine gates on it, the faces show it.

use serde::{Deserialize, Serialize};

/// What a block may do. Ordered by how much harm a mistake can do: `highest` in a verdict
/// is the maximum of this order. Known catastrophic classes rank above `CannotTell`, so that
/// the headline names the worst thing actually seen.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "snake_case")]
pub enum RiskClass {
    /// Reads only: listing, printing, searching, inspecting a repository.
    ReadOnly,
    /// Creates or changes files (inside the workspace or not, but not system paths).
    WritesFiles,
    /// Opens network connections.
    Network,
    /// Installs or removes software packages.
    InstallsSoftware,
    /// Deletes files or directories inside the workspace.
    Deletes,
    /// Something the policy cannot see through (dynamic code, unknown programs, eval,
    /// a command word that is only known at run time, a parse error).
    CannotTell,
    /// Holds characters a terminal draws as nothing or that change how the text around
    /// them reads (variation selectors, bidi controls, zero-width characters, a lone
    /// carriage return, ...): what the person reads may not be what runs. No rule allows
    /// such a block, and it asks in every mode.
    HiddenCharacters,
    /// Changes the system: services, mounts, firewall, scheduled jobs, system paths.
    ChangesSystem,
    /// Runs with raised privileges (sudo, su, doas, pkexec).
    Privileged,
    /// Deletes something outside the workspace root (or a path known only at run time).
    DeletesOutsideWorkspace,
}

impl RiskClass {
    /// A short human label ("deletes outside the workspace").
    pub fn label(self) -> &'static str {
        match self {
            RiskClass::ReadOnly => "read-only",
            RiskClass::WritesFiles => "writes files",
            RiskClass::Network => "network",
            RiskClass::InstallsSoftware => "installs software",
            RiskClass::Deletes => "deletes",
            RiskClass::CannotTell => "cannot tell",
            RiskClass::HiddenCharacters => "hidden characters",
            RiskClass::ChangesSystem => "changes the system",
            RiskClass::Privileged => "privileged",
            RiskClass::DeletesOutsideWorkspace => "deletes outside the workspace",
        }
    }
}

/// What a rule (or the absence of one) decides.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Every command in the block is allowed by a rule and nothing is opaque.
    Allow,
    /// A person decides (no rule covers the whole block, or an `ask` rule matched).
    Ask,
    /// A deny rule matched one of the commands.
    Deny,
}

/// Where a rule came from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum RuleSource {
    /// The user's own config file.
    User,
    /// The project's config file (applies only after the user trusted it).
    Project,
}

/// One rule: a command prefix (whole words) with its decision and origin.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// allow, ask or deny.
    pub decision: Decision,
    /// The prefix as written in the config (`git status`).
    pub text: String,
    /// User or project config.
    pub source: RuleSource,
}

/// One reason behind a class, quoting the exact text of the block that triggered it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The class this finding adds.
    pub class: RiskClass,
    /// What it does, in a few words ("deletes a directory tree").
    pub explanation: String,
    /// The exact text from the block (a substring of the code as given).
    pub quoted: String,
    /// 1-based line in the block where the quoted text starts.
    pub line: usize,
}

impl Finding {
    /// `rm -rf build/ — deletes a directory tree (line 3)`.
    pub fn summary(&self) -> String {
        format!(
            "{} — {} (line {})",
            one_line(&self.quoted),
            self.explanation,
            self.line
        )
    }
}

/// A simple command as the shell would run it: words after quote removal, with the
/// wrappers (`sudo`, `env`, `xargs`, …) it was found under, and where it is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Words after quote removal; a word with an expansion keeps its raw text.
    pub words: Vec<String>,
    /// The exact text from the block.
    pub quoted: String,
    /// 1-based line.
    pub line: usize,
    /// The decision of the rules for this command alone (`None`: no rule matched).
    pub rule: Option<Rule>,
}

/// The policy's answer for one block.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Every class that applies, sorted from least to most severe, without repeats.
    pub classes: Vec<RiskClass>,
    /// The most severe class (`ReadOnly` for an empty block).
    pub highest: RiskClass,
    /// The decision of the rules for the whole block.
    pub decision: Decision,
    /// The rule that decided (the deny rule, an ask rule, or for an allowed block the first
    /// allow rule used); `None` when no rule decided (the default: ask).
    pub rule: Option<Rule>,
    /// True when deny rules exist and the block holds something the policy cannot see
    /// through: it may run a denied command, so it must always ask, even under auto-run.
    pub possibly_denied: bool,
    /// The reasons, in order of appearance.
    pub findings: Vec<Finding>,
    /// Every simple command seen (shell, or shell run from another language).
    pub commands: Vec<SimpleCommand>,
}

impl Verdict {
    /// Whether a class applies.
    pub fn has(&self, class: RiskClass) -> bool {
        self.classes.contains(&class)
    }

    /// The command the deciding rule matched (for a denied block, the denied command):
    /// the first command whose own rule has the block's decision.
    pub fn decided_by(&self) -> Option<&SimpleCommand> {
        if self.decision == Decision::Allow {
            return None;
        }
        self.commands
            .iter()
            .find(|c| c.rule.as_ref().is_some_and(|r| r.decision == self.decision))
    }

    /// For an allowed block: every allow rule used, distinct, in order of use.
    pub fn allowed_by(&self) -> Vec<&Rule> {
        let mut out: Vec<&Rule> = Vec::new();
        if self.decision != Decision::Allow {
            return out;
        }
        for r in self.commands.iter().filter_map(|c| c.rule.as_ref()) {
            if r.decision == Decision::Allow && !out.contains(&r) {
                out.push(r);
            }
        }
        out
    }

    /// The finding behind the headline: for a denied block, the most severe finding
    /// about the denied command; otherwise the first finding of the highest class.
    pub fn headline(&self) -> Option<&Finding> {
        if self.decision == Decision::Deny
            && let Some(c) = self.decided_by()
        {
            return self
                .findings
                .iter()
                .filter(|f| f.line == c.line && f.quoted == c.quoted)
                .max_by_key(|f| f.class);
        }
        self.findings.iter().find(|f| f.class == self.highest)
    }

    /// One line for a status or approval panel:
    /// `rm -rf build/ — deletes a directory tree (line 3)`. For a denied block it quotes
    /// the command the deny rule matched.
    pub fn summary(&self) -> String {
        match (self.headline(), self.decided_by()) {
            (Some(f), _) => f.summary(),
            (None, Some(c)) if self.decision == Decision::Deny => {
                let rule = self.rule.as_ref().map(|r| r.text.as_str()).unwrap_or("");
                format!(
                    "{} — matches the deny rule \"{}\" (line {})",
                    one_line(&c.quoted),
                    rule,
                    c.line
                )
            }
            _ => self.highest.label().to_string(),
        }
    }

    /// Why the rules decided as they did, in one sentence.
    pub fn decision_reason(&self) -> String {
        let origin = |r: &Rule| match r.source {
            RuleSource::User => "your config",
            RuleSource::Project => "the project config",
        };
        match (self.decision, &self.rule) {
            (Decision::Deny, Some(r)) => format!("denied by rule \"{}\" in {}", r.text, origin(r)),
            (Decision::Allow, Some(r)) if self.allowed_by().len() > 1 => {
                let used = self.allowed_by();
                let same = used.iter().all(|a| a.source == r.source);
                let names: Vec<String> = used
                    .iter()
                    .map(|a| {
                        if same {
                            format!("\"{}\"", a.text)
                        } else {
                            format!("\"{}\" ({})", a.text, origin(a))
                        }
                    })
                    .collect();
                if same {
                    format!("allowed by rules {} in {}", names.join(", "), origin(r))
                } else {
                    format!("allowed by rules {}", names.join(", "))
                }
            }
            (Decision::Allow, Some(r)) => {
                format!("allowed by rule \"{}\" in {}", r.text, origin(r))
            }
            (Decision::Ask, Some(r)) => format!("rule \"{}\" in {} asks", r.text, origin(r)),
            (Decision::Ask, None) if self.has(RiskClass::HiddenCharacters) => {
                "it holds hidden characters (shown as ⟨U+…⟩ or ␍), which no rule can allow"
                    .to_string()
            }
            (Decision::Ask, None) if self.possibly_denied => {
                "possibly denied: it holds something the policy cannot see through while deny \
                 rules exist"
                    .to_string()
            }
            (_, None) => "no rule covers every command in it".to_string(),
        }
    }
}

/// Collapses a quote to one line for summaries (the finding keeps the exact text).
fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(80).collect();
    if out.len() < first.len() || s.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The "always allow" rules offered for a block: the command prefixes that, added as allow
/// rules, would let it run under `--approval rules`, or why none can.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Suggestion {
    /// Add these prefixes as allow rules (distinct, in order of appearance) and the block
    /// runs under `--approval rules`.
    Prefixes(Vec<String>),
    /// The rules already allow the block: nothing to add.
    AlreadyAllowed,
    /// Command rules cannot allow this block; the reason, in a sentence.
    Impossible(String),
}

impl Suggestion {
    /// The proposed prefixes (empty unless `Prefixes`).
    pub fn prefixes(&self) -> &[String] {
        match self {
            Suggestion::Prefixes(p) => p,
            _ => &[],
        }
    }
}
