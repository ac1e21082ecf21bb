//! The workbench shows the policy's verdict: the approval panel names the waiting block's
//! class, the explanation with the quoted text and its line, and the rule (a line of its
//! own in the wide layout, shortened before the keys at 80×24); the chat entry of a block a
//! rule denied says why.

use oi_tui::exec::Language;
use oi_tui::policy::{Policy, RuleLists, RuleSource, Rules};
use oi_tui::protocol::{Event, Gate, GateAction, ProposedBlock};
use oi_tui::tui::app::{App, Msg};

use super::tui_states::{fresh, screen};

fn policy(deny: &[&str]) -> Policy {
    let mut rules = Rules::new();
    let lists = RuleLists {
        deny: deny.iter().map(|s| s.to_string()).collect(),
        ..RuleLists::default()
    };
    assert!(rules.add_lists(&lists, RuleSource::User).is_empty());
    Policy::new(rules, "/home/ada/project")
}

fn propose(app: &mut App, id: u64, code: &str, policy: &Policy, action: GateAction) {
    let verdict = policy.judge("shell", code);
    let reason = match action {
        GateAction::Deny => format!("{} ({})", verdict.decision_reason(), verdict.summary()),
        _ => "ask mode: every block asks".to_string(),
    };
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "Cleaning up.".into(),
    }));
    app.update(Msg::Engine(Event::BlockProposed {
        block: ProposedBlock {
            id,
            language_tag: "shell".into(),
            language: Some(Language::Shell),
            code: code.into(),
            caller: None,
            tool: None,
        },
        index: 1,
        of: 1,
        verdict: Some(verdict),
        gate: Some(Gate { action, reason }),
        allow: None,
    }));
}

#[test]
fn the_approval_panel_shows_the_class_the_explanation_and_the_rule() {
    let mut app = fresh();
    let policy = policy(&[]);
    propose(&mut app, 1, "ls\nrm -rf build/", &policy, GateAction::Ask);
    app.update(Msg::Engine(Event::ApprovalNeeded { block_id: 1 }));

    let wide = screen(&mut app, 160, 48);
    assert!(wide.contains("⚑ deletes · rm -rf build/"), "{wide}");
    assert!(wide.contains("(line 2)"), "{wide}");
    assert!(wide.contains("· rule: none"), "{wide}");
    insta::assert_snapshot!("verdict_panel_160x48", wide);

    // Narrow: the code tab, where the keys are; the verdict comes first, shortened.
    let narrow = screen(&mut app, 80, 24);
    let panel = narrow
        .lines()
        .find(|l| l.contains("⚑ deletes"))
        .unwrap_or_else(|| panic!("no verdict line in\n{narrow}"));
    assert!(panel.contains("rule: none"), "{panel}");
    assert!(
        panel.contains('│'),
        "the keys follow on the same line: {panel}"
    );
    insta::assert_snapshot!("verdict_panel_80x24", narrow);
}

#[test]
fn a_denied_block_says_why_in_the_chat() {
    let mut app = fresh();
    let policy = policy(&["rm"]);
    propose(&mut app, 1, "rm -rf build/", &policy, GateAction::Deny);
    app.update(Msg::Engine(Event::BlockSkipped {
        block_id: 1,
        reason: Some("Not run: the model is told the long story".into()),
    }));
    let wide = screen(&mut app, 160, 48);
    assert!(wide.contains("denied by rule \"rm\""), "{wide}");
    assert!(!wide.contains("the long story"), "{wide}");
}
