//! "Always allow": the person saves command prefixes as allow rules (in their config file or
//! the project's, which they trusted), and from then on blocks the rules allow run without
//! asking. The rules are written to the file first and then take effect, so that what runs
//! without asking is always what the files say; a rule that cannot be saved is not applied.

use crate::protocol::{ApprovalMode, Event, RuleDecision, RuleSource, Suggestion};

use super::Engine;

impl Engine {
    /// What a person may save as "always allow" for a block that asks: the prefixes that
    /// would let it run, that the rules already do, or why no rule can.
    pub(super) fn allow_offer(&self, language: &str, code: &str) -> Suggestion {
        self.policy.suggest_allow(language, code)
    }

    /// Saves the prefixes as allow rules in the chosen file and applies them; `ask` mode
    /// becomes `rules` mode. On failure nothing that was not saved applies, and the error
    /// says what was saved before it.
    pub(super) fn allow_always(
        &mut self,
        prefixes: &[String],
        save_to: RuleSource,
        language: &str,
        code: &str,
    ) -> Result<(), String> {
        let prefixes: Vec<String> = prefixes
            .iter()
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|p| !p.is_empty())
            .collect();
        if prefixes.is_empty() {
            return Err(
                "no prefix to save: write at least one command prefix, e.g. \"git status\"".into(),
            );
        }
        // Every prefix must be a valid rule before anything is written.
        let mut check = crate::policy::Rules::new();
        for prefix in &prefixes {
            if prefix.starts_with('-') {
                return Err(format!(
                    "the rule \"{prefix}\" starts with an option; a rule starts with the program's name, e.g. \"git status\""
                ));
            }
            check
                .add(RuleDecision::Allow, prefix, save_to)
                .map_err(|e| e.to_string())?;
        }
        let cwd = self.config.kernels.cwd.clone();
        let mut saved: Vec<String> = Vec::new();
        for prefix in &prefixes {
            let written = match save_to {
                RuleSource::User => match &self.config.user_config {
                    Some(path) => crate::rules_file::add_rule(path, RuleDecision::Allow, prefix),
                    None => Err("there is no config file to save rules in (no config directory is known here); pass --config FILE".to_string()),
                },
                RuleSource::Project => match &self.config.data_dir {
                    Some(data) => {
                        crate::rules_file::add_project_rule(&cwd, data, RuleDecision::Allow, prefix)
                    }
                    None => Err("project rules need a data directory to record your trust in; pass --data-dir DIR".to_string()),
                },
            };
            if let Err(e) = written {
                let before = if saved.is_empty() {
                    String::new()
                } else {
                    format!(" (saved before this: {})", quoted(&saved))
                };
                self.apply_rules(&saved, save_to);
                return Err(format!("could not save the rule \"{prefix}\": {e}{before}"));
            }
            saved.push(prefix.clone());
        }
        self.apply_rules(&saved, save_to);
        let place = match (save_to, &self.config.user_config) {
            (RuleSource::User, Some(path)) => format!("your config ({})", path.display()),
            (RuleSource::User, None) => "your config".to_string(),
            (RuleSource::Project, _) => format!(
                "the project rules ({})",
                cwd.join(crate::project_rules::PROJECT_FILE).display()
            ),
        };
        let mut note = format!(
            "Always allowed from now on: {} (saved to {place}).",
            quoted(&saved)
        );
        if self.policy.judge(language, code).decision != RuleDecision::Allow {
            note.push_str(
                " They do not cover this block as a whole: it runs now because you approved it, but the same block would ask again.",
            );
        }
        if self.approval == ApprovalMode::Ask {
            self.approval = ApprovalMode::Rules;
            note.push_str(
                " Approval is now \"rules\": blocks the rules allow run without asking; the rest still ask.",
            );
        }
        self.emit(Event::RulesChanged {
            approval: self.approval,
            note,
        });
        Ok(())
    }

    fn apply_rules(&mut self, prefixes: &[String], source: RuleSource) {
        for prefix in prefixes {
            // Validated before anything was written.
            let _ = self.policy.add_rule(RuleDecision::Allow, prefix, source);
        }
    }
}

fn quoted(prefixes: &[String]) -> String {
    prefixes
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
