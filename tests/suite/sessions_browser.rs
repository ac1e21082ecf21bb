//! The session browser as a reducer and as drawn: rename (F2) and delete (Ctrl-D, asked) keep
//! the selection, Ctrl-U clears the search, rows are shortened at a word with `…`, Enter opens a session
//! at the first match of the search, highlighted, and a session not in the store whole is
//! marked so in its row and its preview.

use std::sync::mpsc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

use oi_tui::llm::Message;
use oi_tui::store::{Recorder, Redactor, SessionRow, Store};
use oi_tui::tui::app::{App, Msg};
use oi_tui::tui::browser::{Mode, Reply, Request, Row};
use oi_tui::tui::theme::{Depth, Theme};
use oi_tui::tui::view;

pub(super) fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl_d() -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL))
}

fn row(id: &str, title: &str) -> Row {
    Row {
        session: SessionRow {
            id: id.into(),
            title: title.into(),
            created_at: 1_764_000_000_000,
            updated_at: 1_764_000_000_000,
            model: "openai/a-rather-long-model-name".into(),
            cwd: "/home/ada/projects/the-long-project".into(),
            executor: String::new(),
            messages: 4,
            blocks_run: 1,
            blocks_skipped: 12,
            incomplete: None,
        },
        snippet: None,
    }
}

fn rows(query: &str, rows: Vec<Row>) -> Msg {
    let total = rows.len() as i64;
    Msg::Browser(Reply::Rows {
        query: query.into(),
        offset: 0,
        rows,
        total,
    })
}

/// A workbench with the browser open on three sessions; the requests it sends.
fn browsing() -> (App, mpsc::Receiver<Request>) {
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    let (tx, rx) = mpsc::channel();
    app.browser_requests = Some(tx);
    app.open_browser();
    app.update(rows(
        "",
        vec![row("s1", "first"), row("s2", "second"), row("s3", "third")],
    ));
    (app, rx)
}

fn drain(rx: &mpsc::Receiver<Request>) -> Vec<Request> {
    rx.try_iter().collect()
}

fn selected(app: &App) -> Option<String> {
    app.browser.as_ref().and_then(|b| b.selected_id())
}

#[test]
fn renaming_keeps_the_selection_on_the_renamed_session() {
    let (mut app, rx) = browsing();
    app.update(key(KeyCode::Down));
    assert_eq!(selected(&app).as_deref(), Some("s2"));
    app.update(key(KeyCode::F(2)));
    app.update(key(KeyCode::Char('!')));
    app.update(key(KeyCode::Enter));
    assert!(
        drain(&rx).iter().any(
            |r| matches!(r, Request::Rename { id, title } if id == "s2" && title == "second!")
        )
    );
    app.update(Msg::Browser(Reply::Done("renamed session s2".into())));
    // The list comes back (the renamed one moved to the top, as a newer one would).
    app.update(rows(
        "",
        vec![row("s2", "second!"), row("s1", "first"), row("s3", "third")],
    ));
    assert_eq!(selected(&app).as_deref(), Some("s2"));
    assert_eq!(app.browser.as_ref().unwrap().selected, 0);
}

#[test]
fn deleting_keeps_the_selection_in_its_place() {
    let (mut app, rx) = browsing();
    app.update(key(KeyCode::Down));
    app.update(ctrl_d());
    app.update(ctrl_d());
    assert!(
        drain(&rx)
            .iter()
            .any(|r| matches!(r, Request::Delete { id } if id == "s2"))
    );
    app.update(Msg::Browser(Reply::Done("deleted session s2".into())));
    app.update(rows("", vec![row("s1", "first"), row("s3", "third")]));
    assert_eq!(
        selected(&app).as_deref(),
        Some("s3"),
        "the next one, not the top"
    );
    // Deleting the last row selects the one before it.
    app.update(ctrl_d());
    app.update(ctrl_d());
    app.update(Msg::Browser(Reply::Done("deleted session s3".into())));
    app.update(rows("", vec![row("s1", "first")]));
    assert_eq!(selected(&app).as_deref(), Some("s1"));
}

#[test]
fn ctrl_u_clears_the_search() {
    let (mut app, rx) = browsing();
    for c in "giraffe".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    assert_eq!(app.browser.as_ref().unwrap().query, "giraffe");
    drain(&rx);
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    let browser = app.browser.as_ref().unwrap();
    assert_eq!(browser.query, "");
    assert!(
        drain(&rx)
            .iter()
            .any(|r| matches!(r, Request::Rows { query, offset: 0 } if query.is_empty())),
        "the whole list is asked for again"
    );
    // Also after moving in the list.
    for c in "zebra".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    app.update(key(KeyCode::Up));
    assert_eq!(app.browser.as_ref().unwrap().mode, Mode::List);
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(app.browser.as_ref().unwrap().query, "");
}

pub(super) fn draw(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let areas = view::layout(Rect::new(0, 0, width, height), app);
    terminal.draw(|f| view::draw(f, app, &areas)).unwrap();
    terminal
}

pub(super) fn text(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buffer.area.height {
        for x in 0..buffer.area.width {
            out.push_str(buffer[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

#[test]
fn rows_are_shortened_at_a_word_with_an_ellipsis() {
    let (mut app, _rx) = browsing();
    app.update(rows(
        "",
        vec![row(
            "s1",
            "plot the monthly sales figures by region and product line",
        )],
    ));
    let detail_words = [
        "openai/a-rather-long-model-name",
        "·",
        "/home/ada/projects/the-long-project",
        "ran",
        "1",
        "skipped",
        "12",
        "…",
    ];
    let title_words = "plot the monthly sales figures by region and product line …";
    for width in [60u16, 72, 80, 100, 130] {
        let screen = text(&draw(&app, width, 24));
        let list: Vec<&str> = screen
            .lines()
            .filter(|l| l.contains("openai/") || l.contains("plot the"))
            .collect();
        assert_eq!(list.len(), 2, "{width}:\n{screen}");
        // The list pane's text: between its borders.
        let inner = |line: &str| -> String {
            let start = line.find('│').map_or(0, |i| i + '│'.len_utf8());
            let rest = &line[start..];
            let end = rest.find('│').unwrap_or(rest.len());
            rest[..end].trim().to_string()
        };
        let title = inner(list[0]);
        for word in title.split_whitespace().skip(2) {
            assert!(
                title_words.split(' ').any(|w| w == word),
                "{width}: a cut word {word:?} in {title:?}"
            );
        }
        let detail = inner(list[1]);
        for word in detail.split_whitespace() {
            assert!(
                detail_words.contains(&word),
                "{width}: a cut word {word:?} in {detail:?}"
            );
        }
        assert!(!detail.ends_with('·'), "{width}: {detail:?}");
        if !detail.ends_with("skipped 12") {
            assert!(detail.ends_with(" …"), "{width}: {detail:?}");
        }
    }
}

#[test]
fn enter_opens_a_session_at_the_first_match_highlighted() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("a long conversation"));
    for i in 0..40 {
        r.message(&Message::assistant(
            format!("filler answer number {i}"),
            vec![],
        ));
    }
    r.message(&Message::user("where is the zeppelin hangar?"));
    r.message(&Message::assistant("Behind the hill.", vec![]));
    r.flush();
    let store = Store::open(dir.path()).unwrap();
    let exported = store.export(r.session_id()).unwrap();
    let id = exported.session.id.clone();

    let (mut app, _rx) = browsing();
    for c in "zeppelin".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    let mut hit = row(&id, "a long conversation");
    hit.snippet = Some("message: where is the «zeppelin» hangar?".into());
    app.update(rows("zeppelin", vec![hit]));
    app.update(Msg::Browser(Reply::Preview(Box::new(exported))));
    // The preview already shows the match.
    let screen = text(&draw(&app, 120, 30));
    assert!(screen.contains("where is the zeppelin hangar?"), "{screen}");
    app.update(key(KeyCode::Enter)); // reads the session
    let Some(Mode::Viewing(scroll)) = app.browser.as_ref().map(|b| b.mode.clone()) else {
        panic!("reading the session");
    };
    assert!(scroll > 40, "opened at the match, not the top: {scroll}");
    let terminal = draw(&app, 120, 30);
    let screen = text(&terminal);
    assert!(screen.contains("where is the zeppelin hangar?"), "{screen}");
    assert!(
        !screen.contains("a long conversation\n"),
        "not at the top:\n{screen}"
    );
    // The match is highlighted.
    let buffer = terminal.backend().buffer();
    let (y, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("zeppelin hangar"))
        .unwrap();
    let x = line[..line.find("zeppelin").unwrap()].chars().count() as u16;
    let cell = &buffer[(x, y as u16)];
    assert!(
        cell.modifier.contains(Modifier::REVERSED),
        "the match is marked: {cell:?}"
    );
    let plain = &buffer[(x - 2, y as u16)];
    assert!(!plain.modifier.contains(Modifier::REVERSED));
}

/// Hands the browser worker's replies to the workbench until `done` holds (at most 20 s).
pub(super) fn pump(
    app: &mut App,
    replies: &mut tokio::sync::mpsc::UnboundedReceiver<Msg>,
    done: impl Fn(&App) -> bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !done(app) {
        match replies.try_recv() {
            Ok(msg) => {
                app.update(msg);
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the browser's store worker did not answer in time"
                );
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => panic!("the browser's store worker stopped: {e}"),
        }
    }
}

/// The cells of the screen's row `y` from `x` on whose text is `word`, with their style.
fn styled_at(
    terminal: &Terminal<TestBackend>,
    line: &str,
    y: usize,
    word: &str,
) -> Vec<ratatui::style::Style> {
    let buffer = terminal.backend().buffer();
    let x = line[..line.find(word).unwrap()].chars().count() as u16;
    (x..x + word.chars().count() as u16)
        .map(|x| buffer[(x, y as u16)].style())
        .collect()
}

#[test]
fn an_incomplete_session_is_marked_in_its_row_and_its_preview() {
    let dir = tempfile::tempdir().unwrap();
    let whole = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    whole.message(&Message::user("the whole one"));
    assert!(whole.close().all_saved());
    let cut = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    cut.message(&Message::user("the cut one"));
    assert!(cut.flush().all_saved());
    let cut_id = cut.session_id().to_string();
    drop(cut);
    // As an oi-tui that could not write all of it and then stopped leaves it: marked open
    // by a process that is gone (no pid is that high).
    rusqlite::Connection::open(dir.path().join(oi_tui::store::FILE))
        .unwrap()
        .execute(
            "UPDATE sessions SET open_by = '999999999 5' WHERE id = ?1",
            [&cut_id],
        )
        .unwrap();

    let theme = Theme::load("dark", Depth::TrueColor).unwrap();
    let warning = theme.warning;
    assert_ne!(warning.fg, theme.muted.fg);
    let mut app = App::new(theme);
    let (ui, mut replies) = tokio::sync::mpsc::unbounded_channel();
    app.browser_requests = Some(oi_tui::tui::browser::worker(dir.path().to_path_buf(), ui));
    app.open_browser();
    pump(&mut app, &mut replies, |app| {
        app.browser.as_ref().is_some_and(|b| b.rows.len() == 2)
    });
    let browser = app.browser.as_ref().unwrap();
    let cut_at = browser
        .rows
        .iter()
        .position(|r| r.session.id == cut_id)
        .unwrap();
    assert!(browser.rows[cut_at].session.incomplete.is_some());
    assert!(browser.rows[1 - cut_at].session.incomplete.is_none());

    // The list: the incomplete one's row says so, in the warning style; the whole one's not.
    let terminal = draw(&app, 120, 30);
    let screen = text(&terminal);
    let lines: Vec<&str> = screen.lines().collect();
    let list_part = |y: usize| -> String {
        // The list is the left pane: between the first two borders.
        let line = lines[y];
        let Some(start) = line.find('│').map(|s| s + '│'.len_utf8()) else {
            return String::new();
        };
        let end = line[start..].find('│').map_or(line.len(), |e| start + e);
        line[start..end].to_string()
    };
    let row_of = |title: &str| {
        (0..lines.len())
            .find(|&y| list_part(y).contains(title))
            .unwrap_or_else(|| panic!("{title}:\n{screen}"))
    };
    let (cut_row, whole_row) = (row_of("the cut one"), row_of("the whole one"));
    let cut_rows = format!("{}{}", list_part(cut_row), list_part(cut_row + 1));
    let whole_rows = format!("{}{}", list_part(whole_row), list_part(whole_row + 1));
    assert!(cut_rows.contains("incomplete"), "{screen}");
    assert!(!whole_rows.contains("incomplete"), "{screen}");
    let y = if list_part(cut_row).contains("incomplete") {
        cut_row
    } else {
        cut_row + 1
    };
    for style in styled_at(&terminal, lines[y], y, "incomplete") {
        assert_eq!(style.fg, warning.fg, "the mark in the warning style");
    }

    // Its preview says that some of it could not be saved, in the warning style too.
    while app.browser.as_ref().unwrap().selected != cut_at {
        app.update(key(if cut_at > 0 {
            KeyCode::Down
        } else {
            KeyCode::Up
        }));
    }
    pump(&mut app, &mut replies, |app| {
        app.browser
            .as_ref()
            .and_then(|b| b.preview.as_ref())
            .is_some_and(|p| p.session.id == cut_id)
    });
    let terminal = draw(&app, 120, 30);
    let screen = text(&terminal);
    let (y, line) = screen
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("could not be saved"))
        .unwrap_or_else(|| panic!("the preview says it:\n{screen}"));
    for style in styled_at(&terminal, line, y, "could not be saved") {
        assert_eq!(style.fg, warning.fg, "said in the warning style");
    }
    // The whole one's preview does not.
    app.update(key(if cut_at > 0 {
        KeyCode::Up
    } else {
        KeyCode::Down
    }));
    pump(&mut app, &mut replies, |app| {
        app.browser
            .as_ref()
            .and_then(|b| b.preview.as_ref())
            .is_some_and(|p| p.session.id != cut_id)
    });
    let screen = text(&draw(&app, 120, 30));
    assert!(screen.contains("the whole one"), "{screen}");
    assert!(!screen.contains("could not be saved"), "{screen}");
}
