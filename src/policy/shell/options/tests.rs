//! Every row of the tool-options table: its sample is matched by that row, a command it
//! runs is followed to the denied `rm` (or the block is "cannot tell" and asks), and every
//! prefix of the sample is judged alike by the fast reader and the full parser, quoting
//! block text.
#![allow(clippy::unwrap_used)]

use brush_parser::ParserOptions;

use super::{OPTIONS, Runs, find};
use crate::policy::shell::fast;
use crate::policy::shell::words::{Arg, parse_word};
use crate::policy::{Decision, Policy, RiskClass, RuleLists, RuleSource, Rules};

fn policy() -> Policy {
    let mut rules = Rules::new();
    rules.add_lists(
        &RuleLists {
            allow: ["ls", "cat", "echo", "git status"]
                .map(String::from)
                .to_vec(),
            ask: vec![],
            deny: vec!["rm".into()],
        },
        RuleSource::User,
    );
    Policy::new(rules, "/home/ada/proj")
}

/// The words of a one-command sample after quote removal.
fn words(sample: &str) -> Vec<Arg> {
    let script = fast::parse(sample).unwrap();
    script
        .items
        .iter()
        .filter_map(|it| match it {
            fast::Item::Word(t) => Some(parse_word(t.raw, &ParserOptions::default()).arg),
            _ => None,
        })
        .collect()
}

#[test]
fn each_row_matches_its_sample() {
    for r in OPTIONS {
        let w = words(r.sample);
        // `git rebase …`: the rows of git are keyed by subcommand.
        let skip = r.program.split(' ').count();
        let program = w[..skip]
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(program, r.program, "{}", r.sample);
        let found = find(&program, &w[skip..]);
        let hit = found.iter().find(|(row, ..)| std::ptr::eq(*row, r));
        let Some((_, _, value)) = hit else {
            panic!("{:?} is not matched by its row {:?}", r.sample, r.option);
        };
        if r.runs == Runs::Command {
            assert_eq!(value, "rm v", "{}", r.sample);
        }
    }
}

#[test]
fn each_row_is_followed_or_cannot_tell() {
    let p = policy();
    for r in OPTIONS {
        let v = p.judge("bash", r.sample);
        match r.runs {
            Runs::Command => {
                assert_eq!(v.decision, Decision::Deny, "{}", r.sample);
                assert!(
                    v.commands.iter().any(|c| c.words == ["rm", "v"]),
                    "{}",
                    r.sample
                );
            }
            Runs::File | Runs::ShellEscape => {
                assert_ne!(v.decision, Decision::Allow, "{}", r.sample);
                assert!(v.possibly_denied, "{}", r.sample);
                assert!(v.has(RiskClass::CannotTell), "{}", r.sample);
            }
        }
    }
}

#[test]
fn a_command_known_only_at_run_time_cannot_tell() {
    let p = policy();
    for r in OPTIONS.iter().filter(|r| r.runs == Runs::Command) {
        let code = r.sample.replace("rm v", "$CMD");
        assert_ne!(code, r.sample);
        let v = p.judge("bash", &code);
        assert!(v.possibly_denied, "{code}");
        assert!(
            v.findings.iter().any(|f| f
                .explanation
                .ends_with("runs a command known only at run time")),
            "{code}"
        );
    }
}

#[test]
fn every_prefix_of_every_sample_agrees_and_quotes_block_text() {
    let p = policy();
    for r in OPTIONS {
        let ends = r.sample.char_indices().map(|(i, _)| i).skip(1);
        for end in ends.chain([r.sample.len()]) {
            let part = &r.sample[..end];
            let v = p.judge("bash", part);
            assert_eq!(v, p.judge_with_full_parser("bash", part), "{part:?}");
            for f in &v.findings {
                assert!(part.contains(&f.quoted), "{part:?}: {:?}", f.quoted);
            }
        }
    }
}
