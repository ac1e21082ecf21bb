//! The keymap's tests: defaults, rebinding, the rules, hints and help, and the browser's keys.

use super::*;

fn press(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

#[test]
fn defaults_and_rebinding() {
    let ctrl_q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::CONTROL);
    let k = Keymap::default();
    assert!(k.is(Action::Quit, &ctrl_q));
    assert_eq!(k.label(Action::Quit), "Ctrl-Q");
    let mut keys = BTreeMap::new();
    keys.insert("run".to_string(), "x".to_string());
    keys.insert("quit".to_string(), "ctrl-x".to_string());
    let k = Keymap::from_config(&keys).unwrap();
    let decision = Ctx {
        decision: true,
        pending: true,
        scrolling: true,
        ..Ctx::default()
    };
    assert_eq!(k.action(&decision, &press('x')), Some(Action::Run));
    assert_eq!(k.action(&decision, &press('y')), None);
    // Enter still runs.
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    assert_eq!(k.action(&decision, &enter), Some(Action::Run));
    assert!(!k.is(Action::Quit, &ctrl_q));
    assert_eq!(k.label(Action::Run), "x");
}

#[test]
fn decision_keys_act_only_where_the_decision_has_focus() {
    let k = Keymap::default();
    let typing = Ctx {
        pending: true,
        input: true,
        ..Ctx::default()
    };
    let chat = Ctx {
        pending: true,
        chat: true,
        ..Ctx::default()
    };
    for ctx in [typing, chat] {
        for c in "now explain first also check the date !ls -la yenra".chars() {
            assert_eq!(k.action(&ctx, &press(c)), None, "{c:?} in {ctx:?}");
        }
    }
}

#[test]
fn bad_bindings_are_errors() {
    let one = |name: &str, key: &str| {
        let mut keys = BTreeMap::new();
        keys.insert(name.to_string(), key.to_string());
        Keymap::from_config(&keys).unwrap_err()
    };
    assert!(one("fly", "x").contains("no such action"));
    assert!(one("run", "hyper-x").contains("not a key"));
    assert!(one("run", "n").contains("bound to both"));
    assert!(one("quit", "ctrl-c").contains("always interrupts"));
    // A typing key for an action that applies while typing.
    assert!(one("quit", "q").contains("types a character"));
    assert!(one("decide", "d").contains("types a character"));
    assert!(one("copy", "ctrl-o").contains("bound to both"));
}

#[test]
fn every_action_has_a_help_line_and_hints_follow_the_context() {
    let k = Keymap::default();
    let help = k.help();
    assert_eq!(help.len(), TABLE.len());
    let decision = Ctx {
        decision: true,
        pending: true,
        scrolling: true,
        ..Ctx::default()
    };
    let hints: Vec<String> = k
        .hints(&decision)
        .into_iter()
        .map(|(key, what)| format!("{key} {what}"))
        .collect();
    assert_eq!(
        &hints[..7],
        [
            "y run",
            "e edit",
            "n skip",
            "r skip+reason",
            "a always",
            "p allow prefix",
            "Esc input ⇄ decision"
        ]
    );
    // Running a block again outside the sandbox: neither auto-run nor rules apply.
    let escalation = Ctx {
        escalation: true,
        ..decision
    };
    let hints: Vec<String> = k
        .hints(&escalation)
        .into_iter()
        .map(|(key, what)| format!("{key} {what}"))
        .collect();
    assert!(
        hints.contains(&"y run outside, once".to_string()),
        "{hints:?}"
    );
    assert!(hints.contains(&"n leave it".to_string()), "{hints:?}");
    assert!(
        !hints
            .iter()
            .any(|h| h == "a always" || h == "p allow prefix")
    );
    let typing = Ctx {
        input: true,
        ..Ctx::default()
    };
    assert!(k.hints(&typing).iter().all(|(key, _)| key != "y"));
}

#[test]
fn in_the_browser_no_printable_key_acts_and_every_action_has_its_key() {
    let k = Keymap::from_config(&BTreeMap::new()).unwrap();
    let ctrl = |c: char| KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL);
    for state in [
        BrowserState::List,
        BrowserState::Reading,
        BrowserState::ConfirmDelete,
        BrowserState::ConfirmResume,
        BrowserState::Renaming,
    ] {
        for searched in [false, true] {
            let ctx = Ctx {
                browser: Some(state),
                browser_searched: searched,
                // What holds behind the browser does not leak into it.
                decision: true,
                pending: true,
                input: true,
                scrolling: true,
                ..Ctx::default()
            };
            for c in ' '..='~' {
                assert_eq!(k.action(&ctx, &press(c)), None, "{c:?} in {state:?}");
                let shifted = KeyEvent::new(KeyCode::Char(c), KeyModifiers::SHIFT);
                assert_eq!(k.action(&ctx, &shifted), None, "{c:?} in {state:?}");
            }
            assert_eq!(k.action(&ctx, &ctrl('q')), Some(Action::Quit));
            assert_eq!(k.action(&ctx, &ctrl('c')), Some(Action::Interrupt));
        }
    }
    let list = Ctx {
        browser: Some(BrowserState::List),
        ..Ctx::default()
    };
    let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
    let f2 = KeyEvent::new(KeyCode::F(2), KeyModifiers::NONE);
    assert_eq!(k.action(&list, &enter), Some(Action::Read));
    assert_eq!(k.action(&list, &ctrl('r')), Some(Action::Resume));
    assert_eq!(k.action(&list, &ctrl('d')), Some(Action::Delete));
    assert_eq!(k.action(&list, &ctrl('e')), Some(Action::Export));
    assert_eq!(k.action(&list, &f2), Some(Action::Rename));
    // Only the same chord again answers a question yes; Enter does not.
    for (state, chord) in [
        (BrowserState::ConfirmDelete, 'd'),
        (BrowserState::ConfirmResume, 'r'),
    ] {
        let asked = Ctx {
            browser: Some(state),
            ..Ctx::default()
        };
        assert_eq!(k.action(&asked, &ctrl(chord)), Some(Action::Confirm));
        assert_eq!(k.action(&asked, &enter), None);
    }
    // The browser's rows apply nowhere else.
    let typing = Ctx {
        input: true,
        ..Ctx::default()
    };
    assert_eq!(k.action(&typing, &ctrl('r')), None);
    assert_eq!(k.action(&typing, &f2), None);
    // The hint line says the actions, and the help has a section for them.
    let hints: Vec<String> = k
        .hints(&list)
        .into_iter()
        .map(|(key, what)| format!("{key} {what}"))
        .collect();
    assert_eq!(
        &hints[..6],
        [
            "Enter read",
            "Ctrl-R resume",
            "Ctrl-D delete",
            "Ctrl-E export",
            "F2 rename",
            "Esc close"
        ]
    );
    let searched = Ctx {
        browser_searched: true,
        ..list
    };
    assert!(
        k.hints(&searched)
            .contains(&("Esc".to_string(), "clear search"))
    );
    let browser_help: Vec<_> = k
        .help()
        .into_iter()
        .filter(|(section, _, _)| *section == "In the session browser")
        .collect();
    assert!(browser_help.iter().any(|(_, keys, _)| keys == "Ctrl-R"));
    assert!(
        browser_help
            .iter()
            .any(|(_, keys, _)| keys == "any character")
    );
    // A rebinding that would take a browser key for something else there is refused.
    let mut keys = BTreeMap::new();
    keys.insert("help".to_string(), "f2".to_string());
    assert!(
        Keymap::from_config(&keys)
            .unwrap_err()
            .contains("bound to both")
    );
}
