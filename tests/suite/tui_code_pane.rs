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
    // y shows the lines never on screen and says how many stay unread if it runs now; it
    // does not run yet.
    assert!(app.update(key(KeyCode::Char('y'))).is_empty());
    let second = screen(&mut app, 200, 60);
    assert!(
        second
            .contains("7 of 61 lines never shown — y again to run anyway, or scroll to read them"),
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

/// A block of `n` lines, `print(1)` to `print(n)`.
fn numbered_block(n: usize) -> String {
    (1..=n)
        .map(|i| format!("print({i})"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The count the guard's notice names: `161` of "161 of 200 lines never shown — …".
fn never_shown(screen: &str) -> Option<usize> {
    let at = screen.find(" of 200 lines never shown — y again to run anyway")?;
    let digits: String = screen[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// The highest `print(N)` on the screen.
fn last_print(screen: &str) -> usize {
    (1..=200)
        .rev()
        .find(|i| screen.contains(&format!("print({i})")))
        .unwrap_or(0)
}

/// The new-user report: End then y twice ran a 200-line block with 161 lines never shown.
/// Now y runs only when every line was on screen, or when the person presses y again right
/// after the notice that names how many were never shown.
#[test]
fn end_then_y_runs_a_long_block_only_after_the_notice_naming_the_lines_never_shown() {
    for (w, h) in [(80, 24), (200, 60)] {
        let mut app = fresh();
        propose_code(&mut app, 1, &numbered_block(200));
        let top = screen(&mut app, w, h);
        let first_page = last_print(&top);
        assert!(first_page > 5 && first_page < 100, "{w}x{h}:\n{top}");
        app.update(key(KeyCode::End));
        let end = screen(&mut app, w, h);
        assert!(end.contains("print(200)"), "{w}x{h}:\n{end}");
        // y: nothing runs; the notice names the lines never shown, and the first of them is
        // on screen.
        assert!(app.update(key(KeyCode::Char('y'))).is_empty());
        let told = screen(&mut app, w, h);
        let never = never_shown(&told).unwrap_or_else(|| panic!("{w}x{h}: no count:\n{told}"));
        assert!(never > 100 && never < 200, "{w}x{h}: {never}\n{told}");
        assert!(
            told.contains(&format!("print({})", first_page + 1)),
            "{w}x{h}: the first line never shown is not on screen:\n{told}"
        );
        // The count is what stays unread if y runs it now: every line not on any of the
        // screens so far.
        let ever = (1..=200)
            .filter(|i| {
                let line = format!("print({i})");
                [&top, &end, &told].iter().any(|s| s.contains(&line))
            })
            .count();
        assert_eq!(never, 200 - ever, "{w}x{h}:\n{told}");
        // Another key in between takes the explicit yes back: y warns again, and runs
        // nothing.
        app.update(key(KeyCode::Down));
        screen(&mut app, w, h);
        assert!(
            app.update(key(KeyCode::Char('y'))).is_empty(),
            "{w}x{h}: y ran the block after another key"
        );
        let again = screen(&mut app, w, h);
        let fewer = never_shown(&again).unwrap_or_else(|| panic!("{w}x{h}:\n{again}"));
        assert!(fewer < never, "{w}x{h}: {fewer} !< {never}");
        // y right after the notice is the explicit yes.
        assert_eq!(
            decision(&app.update(key(KeyCode::Char('y')))),
            Decision::Run,
            "{w}x{h}"
        );
    }
}

/// Every page read, at any size (some at 80×24, the rest at 200×60): y runs at once.
#[test]
fn a_long_block_read_page_by_page_at_any_size_runs_at_once() {
    for sizes in [
        [(80, 24), (80, 24)],
        [(200, 60), (200, 60)],
        [(80, 24), (200, 60)],
    ] {
        let mut app = fresh();
        propose_code(&mut app, 1, &numbered_block(200));
        let mut shown = screen(&mut app, sizes[0].0, sizes[0].1);
        for _ in 0..4 {
            app.update(key(KeyCode::PageDown));
            shown = screen(&mut app, sizes[0].0, sizes[0].1);
        }
        while !shown.contains("print(200)") {
            app.update(key(KeyCode::PageDown));
            shown = screen(&mut app, sizes[1].0, sizes[1].1);
        }
        assert_eq!(
            decision(&app.update(key(KeyCode::Char('y')))),
            Decision::Run,
            "{sizes:?}"
        );
    }
}

/// An edited block shows a diff: its lines count anew.
#[test]
fn an_edited_block_counts_its_lines_anew() {
    let mut app = fresh();
    propose_code(&mut app, 1, &numbered_block(200));
    let mut shown = screen(&mut app, 200, 60);
    while !shown.contains("print(200)") {
        app.update(key(KeyCode::PageDown));
        shown = screen(&mut app, 200, 60);
    }
    app.update(key(KeyCode::Char('e')));
    app.update(key(KeyCode::Char('#')));
    app.update(Msg::Key(crossterm::event::KeyEvent::new(
        KeyCode::Char('s'),
        crossterm::event::KeyModifiers::CONTROL,
    )));
    screen(&mut app, 200, 60);
    assert!(app.update(key(KeyCode::Char('y'))).is_empty());
    let told = screen(&mut app, 200, 60);
    assert!(told.contains("lines never shown"), "{told}");
}
