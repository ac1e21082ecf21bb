//! The code pane as a person meets it with a long block: the lines never on screen are
//! shown before the block runs, and a large block is on screen at once, coloured as soon as
//! its highlighting is done (or at once, when it was highlighted while it streamed).

use crossterm::event::KeyCode;

use oi_tui::protocol::{Decision, Event};
use oi_tui::tui::app::{App, Msg};
use oi_tui::tui::theme::{Depth, Theme};

use super::tui_states::{decision, fresh, key, propose_code, screen};

#[test]
fn y_first_shows_the_lines_never_on_screen() {
    let mut app = fresh();
    let code: String = (1..=61).map(|i| format!("print({i})\n")).collect();
    propose_code(&mut app, 1, code.trim_end());
    let first = screen(&mut app, 200, 60);
    assert!(
        first.contains("print(27)") && !first.contains("print(61)"),
        "{first}"
    );
    assert!(first.contains("lines 1–27 of 61 ↓"), "{first}");
    // y shows the unseen lines and says how many; it does not run yet.
    assert!(app.update(key(KeyCode::Char('y'))).is_empty());
    let second = screen(&mut app, 200, 60);
    assert!(
        second.contains("34 of 61 lines unseen; showing 28–54; press again to run"),
        "{second}"
    );
    assert!(second.contains("print(54)"), "{second}");
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('y')))),
        Decision::Run
    );
    // Scrolling to the end is allowed any time, with the keys.
    let mut app = fresh();
    propose_code(&mut app, 1, code.trim_end());
    screen(&mut app, 200, 60);
    for k in [KeyCode::PageDown, KeyCode::PageDown] {
        app.update(key(k));
        screen(&mut app, 200, 60);
    }
    let end = screen(&mut app, 200, 60);
    assert!(end.contains("print(61)"), "{end}");
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('y')))),
        Decision::Run
    );
}

#[test]
fn a_large_block_shows_at_once_and_is_coloured_when_highlighting_is_done() {
    oi_tui::tui::highlight::load();
    let mut app = App::new(Theme::load("dark", Depth::TrueColor).unwrap());
    let code: String = (0..8000)
        .map(|i| format!("value_{i} = {i} * 2  # a comment\n"))
        .collect();
    assert!(code.len() > 64 * 1024);
    propose_code(&mut app, 1, &code);
    let first = screen(&mut app, 160, 48);
    assert!(first.contains("value_0 = 0 * 2"), "{first}");
    // The frame did not wait for the whole block to be highlighted, and the loop keeps
    // ticking until it is.
    assert!(app.animating(), "the loop ticks while highlighting runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while app.animating() {
        assert!(
            std::time::Instant::now() < deadline,
            "highlighting never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
        screen(&mut app, 160, 48);
    }
    assert_eq!(
        app.code_cache.finished_lines(),
        Some(8000),
        "the highlighted lines are cached"
    );
}

/// A large block that was highlighted while it streamed is coloured on its first frame as
/// a proposal: its lines are not highlighted a second time.
#[test]
fn a_large_block_highlighted_while_it_streamed_is_coloured_at_once() {
    oi_tui::tui::highlight::load();
    let mut app = App::new(Theme::load("dark", Depth::TrueColor).unwrap());
    let code: String = (0..4000)
        .map(|i| format!("value_{i} = {i} * 2  # a comment\n"))
        .collect();
    assert!(code.len() > 64 * 1024);
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::BlockDelta {
        index: 0,
        language_tag: Some("python".into()),
        delta: code.clone(),
    }));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while app
        .streaming_code
        .as_ref()
        .is_some_and(|c| c.highlighted_lines() < 4000)
    {
        assert!(std::time::Instant::now() < deadline, "never caught up");
        screen(&mut app, 160, 48);
    }
    propose_code(&mut app, 1, &code);
    let first = screen(&mut app, 160, 48);
    assert!(first.contains("value_0 = 0 * 2"), "{first}");
    assert!(!app.animating(), "nothing is highlighted in the background");
    assert_eq!(app.code_cache.finished_lines(), Some(4000));
}

#[test]
fn a_block_from_another_agent_names_its_caller() {
    let mut app = fresh();
    let mut event =
        super::support::proposed_event(4, oi_tui::protocol::Language::Python, "print('hi')");
    if let Event::BlockProposed { block, .. } = &mut event {
        block.caller = Some(oi_tui::protocol::Caller {
            name: "claude-code".into(),
            call: 1,
        });
    }
    app.update(Msg::Engine(event));
    app.update(Msg::Engine(Event::ApprovalNeeded { block_id: 4 }));
    for (w, h) in [(200, 60), (80, 24)] {
        let shown = screen(&mut app, w, h);
        assert!(shown.contains("from claude-code"), "{w}x{h}:\n{shown}");
        assert!(!shown.contains("block 1 of 1"), "{w}x{h}:\n{shown}");
    }
    let wide = screen(&mut app, 200, 60);
    assert!(
        wide.contains("Code · python · from claude-code over MCP · awaiting your decision"),
        "{wide}"
    );
}
