//! Small promises of the keys from a new user's report: Ctrl-U clears the input line before
//! the cursor (Ctrl-Z undoes), the help overlay wraps its lines to the width and End and Home
//! reach its ends, and the chat says "scrolled · End returns" only when it is scrolled away
//! from a bottom that does not fit.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use oi_tui::tui::app::{Focus, Msg};
use oi_tui::tui::chat::Entry;

use super::tui_states::{fresh, key, screen};

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn type_text(app: &mut oi_tui::tui::app::App, text: &str) {
    for c in text.chars() {
        app.update(key(KeyCode::Char(c)));
    }
}

#[test]
fn ctrl_u_clears_the_line_before_the_cursor_and_ctrl_z_undoes() {
    let mut app = fresh();
    assert_eq!(app.focus, Focus::Input);
    type_text(&mut app, "hello world");
    app.update(ctrl('u'));
    assert_eq!(app.input.lines(), [""]);
    app.update(ctrl('z'));
    assert_eq!(app.input.lines(), ["hello world"]);
    // Only what is before the cursor goes, as in a shell.
    for _ in 0.."world".len() {
        app.update(key(KeyCode::Left));
    }
    app.update(ctrl('u'));
    assert_eq!(app.input.lines(), ["world"]);
    // The help lists both keys.
    app.update(key(KeyCode::F(1)));
    let help = screen(&mut app, 200, 60);
    assert!(help.contains("Ctrl-U"), "{help}");
    assert!(help.contains("Ctrl-Z"), "{help}");
}

#[test]
fn help_wraps_to_the_width_and_end_and_home_reach_its_ends() {
    let mut app = fresh();
    app.update(key(KeyCode::F(1)));
    let top = screen(&mut app, 80, 24);
    assert!(top.contains("When a block awaits your decision"), "{top}");
    app.update(key(KeyCode::End));
    let end = screen(&mut app, 80, 24);
    assert!(
        end.contains("/quit"),
        "End did not reach the bottom:\n{end}"
    );
    // The longest line is wrapped, not cut: all of its words are there.
    for word in [
        "workspace-write,",
        "network",
        "on|off",
        "(restarts",
        "kernels)",
    ] {
        assert!(end.contains(word), "{word} is cut:\n{end}");
    }
    // No row runs past the box's border.
    for row in end.lines() {
        let inside = row.trim_matches('"');
        assert!(inside.chars().count() <= 80, "{row}");
    }
    app.update(key(KeyCode::Home));
    let home = screen(&mut app, 80, 24);
    assert!(home.contains("When a block awaits your decision"), "{home}");
    // Up from the bottom moves at once (End is not past the last page).
    app.update(key(KeyCode::End));
    let end = screen(&mut app, 80, 24);
    app.update(key(KeyCode::Up));
    let up = screen(&mut app, 80, 24);
    assert_ne!(end, up, "Up after End did nothing");
}

#[test]
fn scrolled_end_returns_shows_only_when_scrolled_away_from_a_bottom_that_does_not_fit() {
    let mut app = fresh();
    for i in 0..12 {
        app.chat.push(Entry::User(format!("message {i}")));
    }
    screen(&mut app, 80, 24);
    app.focus = Focus::Chat;
    app.update(key(KeyCode::PageUp));
    let scrolled = screen(&mut app, 80, 24);
    assert!(scrolled.contains("scrolled · End returns"), "{scrolled}");
    // Everything fits in a larger terminal: nothing is scrolled away.
    let fits = screen(&mut app, 200, 60);
    assert!(
        fits.contains("message 0") && fits.contains("message 11"),
        "{fits}"
    );
    assert!(!fits.contains("End returns"), "{fits}");
    // At the bottom, nothing to return to.
    app.update(key(KeyCode::End));
    let bottom = screen(&mut app, 80, 24);
    assert!(!bottom.contains("End returns"), "{bottom}");
}
