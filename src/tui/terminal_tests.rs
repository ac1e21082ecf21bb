//! The terminal pane's unit tests: lossless resizes, per-block bounds, separators, search,
//! keys and drawing.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

use super::*;
use crate::tui::theme::{Depth, Theme};

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn count_block(pane: &mut TerminalPane, id: u64, word: &str, lines: std::ops::RangeInclusive<u32>) {
    pane.begin_block(id, "python");
    for i in lines {
        pane.process(format!("{word} {i}\r\n").as_bytes());
    }
    pane.end_block();
}

/// The rows of the emulator that hold text, scrollback first, trimmed.
fn text_rows(pane: &mut TerminalPane) -> Vec<String> {
    pane.all_rows()
        .into_iter()
        .map(|r| r.trim_end().to_string())
        .filter(|r| !r.is_empty())
        .collect()
}

fn has_line(rows: &[String], line: &str) -> bool {
    rows.iter().any(|r| r == line)
}

#[test]
fn shrinking_then_growing_keeps_every_line() {
    // The pane inside a 200×60 terminal, then inside 80×24, then back.
    let mut pane = TerminalPane::new(40, 110);
    count_block(&mut pane, 1, "count", 1..=40);
    assert!(pane.resize(12, 38));
    assert!(pane.resize(40, 110));
    let rows = text_rows(&mut pane);
    for i in 1..=40 {
        assert!(
            has_line(&rows, &format!("count {i}")),
            "count {i} lost: {rows:?}"
        );
    }
    // The screen ends where the output ended, not part way.
    let screen = pane.contents();
    let last = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(last.trim_end(), "count 40", "{screen}");
    // The same size again is no change at all.
    assert!(!pane.resize(40, 110));
}

#[test]
fn a_growing_pane_shows_an_earlier_block_again() {
    let mut pane = TerminalPane::new(10, 60);
    count_block(&mut pane, 1, "first", 1..=6);
    count_block(&mut pane, 2, "second", 1..=6);
    // In 10 rows the first block has scrolled out of view.
    assert!(!pane.contents().contains("first 1"));
    assert!(pane.resize(30, 60));
    let screen = pane.contents();
    assert!(screen.contains("── python #1 ──"), "{screen}");
    for i in 1..=6 {
        assert!(screen.contains(&format!("first {i}")), "{screen}");
        assert!(screen.contains(&format!("second {i}")), "{screen}");
    }
}

#[test]
fn each_block_has_a_separator() {
    let mut pane = TerminalPane::new(20, 60);
    count_block(&mut pane, 3, "x", 1..=2);
    pane.begin_block(4, "shell");
    pane.process(b"y\r\n");
    let rows = text_rows(&mut pane);
    assert_eq!(
        rows,
        vec!["── python #3 ──", "x 1", "x 2", "── shell #4 ──", "y"]
    );
}

#[test]
fn a_block_keeps_at_least_its_last_lines() {
    let mut pane = TerminalPane::new(10, 40);
    pane.limits.block_lines = 100;
    count_block(&mut pane, 1, "line", 1..=450);
    let block = pane.blocks.back().unwrap();
    assert!(block.lines >= 100 && block.lines <= 200, "{}", block.lines);
    assert_eq!(block.lines + block.dropped, 450);
    let text = pane.block_output(1).unwrap();
    assert!(
        text.starts_with(&format!("[… {} earlier lines dropped …]", block.dropped)),
        "{text}"
    );
    assert!(text.contains("line 450"));
    assert!(!text.contains("line 1\n"));
    // A replay shows the note where the dropped lines were.
    pane.resize(12, 40);
    let rows = text_rows(&mut pane);
    assert_eq!(rows[0], "── python #1 ──");
    assert!(
        rows[1].starts_with("[… ") && rows[1].ends_with("earlier lines dropped …]"),
        "{rows:?}"
    );
    assert_eq!(rows.last().map(String::as_str), Some("line 450"));
}

#[test]
fn the_overall_cap_takes_the_oldest_heads_first() {
    let mut pane = TerminalPane::new(10, 40);
    pane.limits.total_bytes = 1200;
    count_block(&mut pane, 1, "old", 1..=200);
    count_block(&mut pane, 2, "new", 1..=50);
    assert!(pane.total <= 1200, "{}", pane.total);
    let kept: usize = pane.blocks.iter().map(|b| b.bytes.len()).sum();
    assert_eq!(kept, pane.total);
    // The newest block is whole; the oldest lost its head, not its tail.
    let new = pane.block_output(2).unwrap();
    assert!(new.contains("new 1\n") && new.contains("new 50"), "{new}");
    let old = pane.block_output(1).unwrap();
    assert!(old.starts_with("[… "), "{old}");
    assert!(!old.contains("old 1\n"));
}

#[test]
fn a_full_screen_program_gets_a_blank_screen_on_resize() {
    let mut pane = TerminalPane::new(20, 60);
    count_block(&mut pane, 1, "before", 1..=3);
    pane.begin_block(2, "shell");
    pane.process(b"\x1b[?1049h\x1b[2J\x1b[Hframe drawn for 60 columns");
    assert!(pane.resize(10, 30));
    assert!(pane.screen().alternate_screen());
    assert!(
        !pane.contents().contains("frame drawn"),
        "{}",
        pane.contents()
    );
    // The program leaves: the normal screen is there, with the earlier output.
    pane.process(b"\x1b[?1049l");
    let rows = text_rows(&mut pane);
    assert!(has_line(&rows, "before 3"), "{rows:?}");
}

#[test]
fn search_finds_moves_and_counts() {
    let mut pane = TerminalPane::new(10, 60);
    pane.begin_block(1, "python");
    for i in 1..=60 {
        let word = if i % 10 == 0 { "apple" } else { "pear" };
        pane.process(format!("{word} {i}\r\n").as_bytes());
    }
    pane.end_block();
    assert_eq!(
        pane.handle_key(&key(KeyCode::Char('/')), false),
        TerminalKey::Consumed
    );
    for c in "Apple".chars() {
        pane.handle_key(&key(KeyCode::Char(c)), false);
    }
    // A capital letter makes the search exact: nothing matches "Apple".
    assert_eq!(pane.search_status().as_deref(), Some("no match"));
    pane.handle_key(&key(KeyCode::Backspace), false);
    pane.handle_key(&key(KeyCode::Backspace), false);
    pane.handle_key(&key(KeyCode::Backspace), false);
    pane.handle_key(&key(KeyCode::Backspace), false);
    pane.handle_key(&key(KeyCode::Backspace), false);
    for c in "apple".chars() {
        pane.handle_key(&key(KeyCode::Char(c)), false);
    }
    pane.handle_key(&key(KeyCode::Enter), false);
    // The newest match first, then older ones with n.
    assert_eq!(pane.search_status().as_deref(), Some("6 of 6"));
    assert!(pane.contents().contains("apple 60"));
    for _ in 0..4 {
        pane.handle_key(&key(KeyCode::Char('n')), false);
    }
    assert_eq!(pane.search_status().as_deref(), Some("2 of 6"));
    assert!(pane.contents().contains("apple 20"), "{}", pane.contents());
    assert!(pane.scroll() > 0);
    pane.handle_key(&key(KeyCode::Char('N')), false);
    assert_eq!(pane.search_status().as_deref(), Some("3 of 6"));
    assert!(pane.contents().contains("apple 30"), "{}", pane.contents());
    // Esc ends the search; a second Esc leaves the pane.
    assert_eq!(
        pane.handle_key(&key(KeyCode::Esc), false),
        TerminalKey::Consumed
    );
    assert_eq!(pane.search_status(), None);
    assert_eq!(
        pane.handle_key(&key(KeyCode::Esc), false),
        TerminalKey::Leave
    );
}

#[test]
fn matches_are_highlighted_and_counted_in_the_title() {
    let theme = Theme::load("dark", Depth::TrueColor).unwrap();
    let mut pane = TerminalPane::new(8, 38);
    pane.begin_block(1, "python");
    pane.process(b"one needle\r\ntwo\r\nneedle three\r\n");
    pane.handle_key(&key(KeyCode::Char('/')), false);
    for c in "needle".chars() {
        pane.handle_key(&key(KeyCode::Char(c)), false);
    }
    pane.handle_key(&key(KeyCode::Enter), false);
    let mut terminal = Terminal::new(TestBackend::new(40, 10)).unwrap();
    terminal
        .draw(|f| pane.render(f, Rect::new(0, 0, 40, 10), &theme, true, "Terminal", false))
        .unwrap();
    let buffer = terminal.backend().buffer().clone();
    let title: String = (0..40)
        .map(|x| buffer[(x, 0)].symbol().to_string())
        .collect();
    assert!(title.contains("\"needle\" 2 of 2"), "{title}");
    // Row 2 of the emulator is "one needle": the match starts at column 4.
    let row = 2;
    assert!(buffer[(1 + 4, row)].modifier.contains(Modifier::REVERSED));
    assert!(!buffer[(1 + 2, row)].modifier.contains(Modifier::REVERSED));
}

#[test]
fn keys_go_to_a_running_program() {
    let mut pane = TerminalPane::new(10, 40);
    assert_eq!(
        pane.handle_key(&key(KeyCode::Char('n')), true),
        TerminalKey::Send(b"n".to_vec())
    );
    assert_eq!(
        pane.handle_key(&key(KeyCode::Enter), true),
        TerminalKey::Send(b"\r".to_vec())
    );
    assert_eq!(
        pane.handle_key(
            &KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
            true
        ),
        TerminalKey::Send(vec![3])
    );
    // Shift-PgUp scrolls even then.
    count_block(&mut pane, 1, "l", 1..=40);
    assert_eq!(
        pane.handle_key(&KeyEvent::new(KeyCode::PageUp, KeyModifiers::SHIFT), true),
        TerminalKey::Consumed
    );
    assert!(pane.scroll() > 0);
}

#[test]
fn clearing_forgets_the_output() {
    let mut pane = TerminalPane::new(10, 40);
    count_block(&mut pane, 1, "gone", 1..=3);
    pane.clear();
    assert!(!pane.contents().contains("gone"));
    assert_eq!(pane.block_output(1), None);
    assert!(pane.resize(12, 40));
    assert!(!pane.contents().contains("gone"));
}

#[test]
fn a_burst_larger_than_the_scrollback_shows_as_if_fed_line_by_line() {
    let burst: String = (1..=30_000)
        .map(|i| format!("burst line {i}\r\n"))
        .collect();
    // Fed at once and looked at once: most of the burst is skipped.
    let mut lazy = TerminalPane::new(10, 40);
    lazy.begin_block(1, "python");
    lazy.process(burst.as_bytes());
    // Fed in small pieces, each looked at: nothing is skipped.
    let mut eager = TerminalPane::new(10, 40);
    eager.begin_block(1, "python");
    for chunk in burst.as_bytes().chunks(4096) {
        eager.process(chunk);
        let _ = eager.contents();
    }
    let (lazy_rows, eager_rows) = (lazy.all_rows(), eager.all_rows());
    assert!(lazy_rows.len() >= SCROLLBACK, "{}", lazy_rows.len());
    let tail = 1_900;
    assert_eq!(
        lazy_rows[lazy_rows.len() - tail..],
        eager_rows[eager_rows.len() - tail..]
    );
    assert_eq!(lazy.contents(), eager.contents());
    assert!(lazy.contents().contains("burst line 30000"));
}

#[test]
fn escape_sequences_in_a_burst_are_never_skipped() {
    // Alternate screen entered early in a long burst: it must still be in effect.
    let mut pane = TerminalPane::new(10, 40);
    pane.begin_block(1, "python");
    let mut burst = String::from("\x1b[?1049h");
    for i in 1..=30_000 {
        burst.push_str(&format!("frame {i}\r\n"));
    }
    pane.process(burst.as_bytes());
    assert!(pane.screen().alternate_screen());
}

#[test]
fn scrolling_past_the_light_scrollback_reaches_ten_thousand_lines() {
    let mut pane = TerminalPane::new(10, 40);
    count_block(&mut pane, 1, "line", 1..=9_000);
    assert_eq!(pane.emulator.get_mut().depth, SCROLLBACK);
    // PgUp to the top of the light scrollback, then further: the deep one takes over.
    for _ in 0..(SCROLLBACK / 9 + 2) {
        pane.handle_key(&key(KeyCode::PageUp), false);
    }
    assert_eq!(pane.emulator.get_mut().depth, DEEP_SCROLLBACK);
    pane.handle_key(&key(KeyCode::Home), false);
    let screen = pane.contents();
    assert!(
        screen.contains("── python #1 ──") && screen.contains("line 1\n"),
        "{screen}"
    );
    // Back at the bottom the light one is back, showing the end.
    pane.handle_key(&key(KeyCode::End), false);
    assert_eq!(pane.emulator.get_mut().depth, SCROLLBACK);
    assert!(pane.contents().contains("line 9000"));
    assert_eq!(pane.scroll(), 0);
}

#[test]
fn a_scrolled_up_pane_stays_where_it_is_while_output_arrives() {
    let mut pane = TerminalPane::new(10, 40);
    pane.begin_block(1, "python");
    for i in 1..=100 {
        pane.process(format!("line {i}\r\n").as_bytes());
    }
    pane.scroll_by(30);
    let before = pane.screen().contents();
    for i in 101..=105 {
        pane.process(format!("line {i}\r\n").as_bytes());
    }
    let after = pane.screen().contents();
    assert_eq!(before, after);
    assert_eq!(pane.new_lines(), 5);
    pane.scroll_to_bottom();
    assert_eq!(pane.new_lines(), 0);
}
