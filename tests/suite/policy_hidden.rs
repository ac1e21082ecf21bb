//! Code that does not read as it runs: a block holding a character a terminal draws as
//! nothing or that changes how the text around it reads (variation selectors, tags, bidi
//! controls, zero-width and other default-ignorable characters, a lone carriage return,
//! the line and paragraph separators, control characters) gets a finding in its verdict,
//! is never "read-only", and no allow rule can let it run without asking — not for code,
//! not for an MCP tool's arguments. Through the real binary: `--approval rules` and
//! `--approval auto` both ask for it (and decline it without a terminal).

use oi_tui::policy::{Decision, Policy, RiskClass, RuleLists, RuleSource, Rules, Suggestion};

use super::model_server::{ModelServer, Reply};
use super::support::{json_events as events, proposed, started};

const ROOT: &str = "/home/ada/proj";

fn policy(allow: &[&str], deny: &[&str]) -> Policy {
    let mut rules = Rules::new();
    let errors = rules.add_lists(
        &RuleLists {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            ask: vec![],
            deny: deny.iter().map(|s| s.to_string()).collect(),
        },
        RuleSource::User,
    );
    assert!(errors.is_empty(), "{errors:?}");
    Policy::new(rules, ROOT)
}

/// One character of every kind, with a word for the kind.
const FAMILIES: &[(&str, char)] = &[
    ("variation selector", '\u{fe00}'),
    ("variation selector", '\u{fe0f}'),
    ("variation selector", '\u{e0100}'),
    ("variation selector", '\u{e01ef}'),
    ("tag", '\u{e0041}'),
    ("bidirectional", '\u{202e}'),
    ("bidirectional", '\u{2067}'),
    ("zero-width", '\u{200b}'),
    ("zero-width", '\u{feff}'),
    ("invisible", '\u{00ad}'),
    ("invisible", '\u{3164}'),
    ("invisible", '\u{1d173}'),
    ("invisible", '\u{e0fff}'),
    ("carriage return", '\r'),
    ("separator", '\u{2028}'),
    ("separator", '\u{2029}'),
    ("control", '\u{1b}'),
];

#[test]
fn hidden_characters_get_a_finding_and_no_rule_allows_them() {
    let p = policy(&["ls", "echo", "cat"], &[]);
    // The same block without the character is read-only and allowed.
    let plain = p.judge("bash", "ls -la notes.txt\necho done");
    assert_eq!(plain.highest, RiskClass::ReadOnly);
    assert_eq!(plain.decision, Decision::Allow);
    for (family, c) in FAMILIES {
        let code = format!("ls -la notes{c}.txt\necho done");
        let v = p.judge("bash", &code);
        let what = format!("{family} U+{:04X}: {v:?}", *c as u32);
        assert!(v.has(RiskClass::HiddenCharacters), "{what}");
        assert_ne!(v.highest, RiskClass::ReadOnly, "{what}");
        assert_eq!(v.decision, Decision::Ask, "{what}");
        assert!(v.rule.is_none(), "{what}");
        let finding = v
            .findings
            .iter()
            .find(|f| f.class == RiskClass::HiddenCharacters)
            .unwrap_or_else(|| panic!("no finding: {what}"));
        assert_eq!(finding.line, 1, "{what}");
        assert_eq!(finding.quoted, format!("ls -la notes{c}.txt"), "{what}");
        assert!(finding.explanation.contains(family), "{what}");
        assert!(
            finding
                .explanation
                .contains(&format!("U+{:04X}", *c as u32)),
            "{what}"
        );
        assert!(
            v.decision_reason().contains("no rule can allow"),
            "{what}: {}",
            v.decision_reason()
        );
        // `p` (always allow) offers nothing, and says why.
        match p.suggest_allow("bash", &code) {
            Suggestion::Impossible(why) => assert!(why.contains("hide"), "{what}: {why}"),
            other => panic!("{what}: {other:?}"),
        }
        // In other languages too, and on a later line.
        let v = p.judge("python", &format!("x = 1\nprint('done'){c}"));
        assert!(v.has(RiskClass::HiddenCharacters), "python {what}");
        assert_ne!(v.highest, RiskClass::ReadOnly, "python {what}");
        assert!(v.findings.iter().any(|f| f.line == 2
            && f.class == RiskClass::HiddenCharacters
            && f.quoted == format!("print('done'){c}")));
    }
    // A line break of `\r\n` is no hidden character.
    let v = p.judge("bash", "ls\r\necho done\r\n");
    assert!(!v.has(RiskClass::HiddenCharacters), "{v:?}");
}

#[test]
fn the_attack_with_a_variation_selector_is_not_read_only() {
    let p = policy(&[], &[]);
    let code =
        "target\u{fe00} = 'keep.txt'\ntarget = 'other.txt'\nimport os\nos.remove(target\u{fe00})";
    let v = p.judge("python", code);
    assert!(v.has(RiskClass::DeletesOutsideWorkspace), "{v:?}");
    assert!(v.has(RiskClass::HiddenCharacters), "{v:?}");
    let hidden: Vec<_> = v
        .findings
        .iter()
        .filter(|f| f.class == RiskClass::HiddenCharacters)
        .collect();
    assert_eq!(hidden.len(), 1, "one finding per kind, at its first line");
    assert_eq!(hidden[0].line, 1);
    assert!(
        hidden[0].summary().contains("also on line 4"),
        "{}",
        hidden[0].summary()
    );
    // Where nothing worse is seen, the hidden characters are the headline.
    let v = p.judge("python", "import os\nos.remove('keep\u{fe00}.txt')");
    assert!(v.has(RiskClass::Deletes), "{v:?}");
    assert_eq!(v.highest, RiskClass::HiddenCharacters, "{v:?}");
    assert!(v.summary().contains("U+FE00"), "{}", v.summary());
}

#[test]
fn a_lone_carriage_return_or_a_separator_ends_a_comment_where_the_language_says_so() {
    let p = policy(&[], &["rm"]);
    // Python and R read a lone `\r` as a line break: the code after it runs.
    for lang in ["python", "r"] {
        let code = if lang == "python" {
            "# note\rimport os; os.system(\"rm x\")"
        } else {
            "# note\rsystem(\"rm x\")"
        };
        let v = p.judge(lang, code);
        assert_eq!(v.decision, Decision::Deny, "{lang}: {v:?}");
        assert!(v.has(RiskClass::HiddenCharacters), "{lang}: {v:?}");
    }
    // JavaScript also reads U+2028 and U+2029 as line breaks.
    for sep in ['\r', '\u{2028}', '\u{2029}'] {
        let code = format!("// note{sep}require('child_process').execSync('rm x')");
        let v = p.judge("js", &code);
        assert_eq!(v.decision, Decision::Deny, "U+{:04X}: {v:?}", sep as u32);
        assert!(v.has(RiskClass::HiddenCharacters));
    }
    // Python does not: a U+2028 in a comment is inside the comment (but still marked).
    let v = p.judge("python", "# note\u{2028}import os; os.system(\"rm x\")");
    assert_ne!(v.decision, Decision::Deny, "{v:?}");
    assert!(v.has(RiskClass::HiddenCharacters));
}

#[test]
fn an_allowed_mcp_tool_asks_when_its_arguments_hide_text() {
    let p = policy(&["mcp:files/read"], &[]);
    let plain = p.judge("mcp:files/read", "{\n  \"path\": \"notes.txt\"\n}");
    assert_eq!(plain.decision, Decision::Allow);
    let v = p.judge("mcp:files/read", "{\n  \"path\": \"notes\u{fe00}.txt\"\n}");
    assert_eq!(v.decision, Decision::Ask, "{v:?}");
    assert!(v.rule.is_none(), "{v:?}");
    assert!(v.has(RiskClass::HiddenCharacters), "{v:?}");
    assert_eq!(v.highest, RiskClass::HiddenCharacters);
    assert!(v.findings.iter().any(|f| f.line == 2));
}

/// One `oi-tui --task` run with `config`, its `--json` events and whether a file the
/// block would delete survived.
async fn headless(code: &str, config: &str, args: &[&str]) -> (Vec<serde_json::Value>, bool) {
    let server = ModelServer::start(vec![Reply::tool("shell", code), Reply::text("done")]).await;
    let home = tempfile::tempdir().expect("dir");
    std::fs::write(home.path().join("victim.txt"), "data").expect("file");
    let out = super::approval::run(home.path(), &server, config, args).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (events(&out), home.path().join("victim.txt").exists())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_and_auto_mode_ask_for_hidden_characters() {
    // `rm` is allowed by a rule, and auto mode would run it: the zero-width space makes
    // both ask, and without a terminal the block is declined.
    let code = "rm -f victim.txt\u{200b}; rm -f victim.txt";
    for (config, args) in [
        (
            "[policy]\nallow = [\"rm\"]\n",
            ["--approval", "rules", "--json"],
        ),
        ("", ["--approval", "auto", "--json"]),
    ] {
        let (events, survived) = headless(code, config, &args).await;
        let p = proposed(&events, 1);
        assert_eq!(p["verdict"]["decision"], "ask", "{args:?}: {p}");
        assert_eq!(
            p["verdict"]["highest"], "hidden_characters",
            "{args:?}: {p}"
        );
        assert_eq!(p["gate"]["action"], "decline", "{args:?}: {p}");
        assert!(
            p["gate"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("U+200B")),
            "{args:?}: {p}"
        );
        assert!(!started(&events, 1), "{args:?}");
        assert!(survived, "{args:?}: the block ran");
    }
    // The same block without the character runs under both.
    for (config, args) in [
        (
            "[policy]\nallow = [\"rm\"]\n",
            ["--approval", "rules", "--json"],
        ),
        ("", ["--approval", "auto", "--json"]),
    ] {
        let (events, survived) = headless("rm -f victim.txt", config, &args).await;
        assert!(started(&events, 1), "{args:?}");
        assert!(!survived, "{args:?}");
    }
}
