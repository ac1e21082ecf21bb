//! The session browser's keys, as a reducer: every printable key types into the search
//! (`rust` never resumes, `dylan` never deletes, `data` loses no letter), the actions are on
//! keys no search can type, deleting asks in a way no typed word answers, and resuming while
//! a block waits for a decision asks first.

use std::sync::mpsc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use oi_tui::llm::Message;
use oi_tui::store::{Recorder, Redactor, Store};
use oi_tui::tui::app::{App, Effect, Msg};
use oi_tui::tui::browser::{Mode, Reply, Request, Row};
use oi_tui::tui::theme::{Depth, Theme};

use super::sessions_browser::{draw, key, pump, text};

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn typed(app: &mut App, text: &str) -> Vec<Effect> {
    let mut effects = Vec::new();
    for c in text.chars() {
        effects.extend(app.update(key(KeyCode::Char(c))));
    }
    effects
}

/// The titles of the sessions `sessions_titled` saves: each starts with a word that once
/// was a chain of browser actions.
pub(super) const TITLES: [&str; 3] = [
    "rust borrow checker notes",
    "dylan lyrics collection",
    "data cleanup for the survey",
];

/// Saves one session per title in the store in `dir`; their ids.
pub(super) fn sessions_titled(dir: &std::path::Path, titles: &[&str]) -> Vec<String> {
    titles
        .iter()
        .map(|title| {
            let r = Recorder::start(Store::open(dir).unwrap(), None, Redactor::default());
            r.message(&Message::user(*title));
            let id = r.session_id().to_string();
            assert!(r.close().all_saved());
            id
        })
        .collect()
}

/// The browser on a real store holding the three sessions; the worker's replies.
fn browsing_store(dir: &std::path::Path) -> (App, tokio::sync::mpsc::UnboundedReceiver<Msg>) {
    sessions_titled(dir, &TITLES);
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    let (ui, mut replies) = tokio::sync::mpsc::unbounded_channel();
    app.browser_requests = Some(oi_tui::tui::browser::worker(dir.to_path_buf(), ui));
    app.open_browser();
    pump(&mut app, &mut replies, |app| {
        app.browser
            .as_ref()
            .is_some_and(|b| !b.loading && b.rows.len() == 3)
    });
    (app, replies)
}

/// Types `word` into the browser on the list of every session, and checks that it is the
/// search, whole, and that nothing else happened.
fn type_a_word(word: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, mut replies) = browsing_store(dir.path());
    let effects = typed(&mut app, word);
    assert!(effects.is_empty(), "typing {word:?} did {effects:?}");
    let browser = app.browser.as_ref().expect("the browser stays open");
    assert_eq!(browser.query, word, "the search is what was typed");
    assert_eq!(browser.mode, Mode::List, "typing {word:?} asks nothing");
    // The search finds its session, and the store still holds every one.
    pump(&mut app, &mut replies, |app| {
        app.browser.as_ref().is_some_and(|b| !b.loading)
    });
    let browser = app.browser.as_ref().unwrap();
    assert_eq!(browser.rows.len(), 1, "{word}: {:?}", browser.rows);
    assert!(browser.rows[0].session.title.starts_with(word));
    let screen = text(&draw(&app, 80, 24));
    assert!(screen.contains(&format!("search: {word}")), "{screen}");
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.count().unwrap(), 3, "no session is gone");
    let titles: Vec<String> = store
        .list(10, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect();
    for title in TITLES {
        assert!(titles.iter().any(|t| t == title), "{title}: {titles:?}");
    }
    // Esc clears the search (the browser stays), a second Esc closes it.
    app.update(key(KeyCode::Esc));
    let browser = app.browser.as_ref().expect("Esc first clears the search");
    assert_eq!(browser.query, "");
    app.update(key(KeyCode::Esc));
    assert!(app.browser.is_none(), "then Esc closes the browser");
}

#[test]
fn typing_rust_searches_and_resumes_nothing() {
    type_a_word("rust");
}

#[test]
fn typing_dylan_searches_and_deletes_nothing() {
    type_a_word("dylan");
}

#[test]
fn typing_data_searches_and_loses_no_letter() {
    type_a_word("data");
}

/// A workbench with the browser open on three sessions (no store); the requests it sends.
fn browsing(app: &mut App) -> mpsc::Receiver<Request> {
    let (tx, rx) = mpsc::channel();
    app.browser_requests = Some(tx);
    app.open_browser();
    let rows: Vec<Row> = ["s1", "s2", "s3"]
        .iter()
        .map(|id| Row {
            session: oi_tui::store::SessionRow {
                id: id.to_string(),
                title: format!("session {id}"),
                created_at: 1_764_000_000_000,
                updated_at: 1_764_000_000_000,
                model: "openai/scripted".into(),
                cwd: "/home/ada".into(),
                executor: String::new(),
                messages: 2,
                blocks_run: 0,
                blocks_skipped: 0,
                incomplete: None,
            },
            snippet: None,
        })
        .collect();
    app.update(Msg::Browser(Reply::Rows {
        query: String::new(),
        offset: 0,
        rows,
        total: 3,
    }));
    rx
}

fn fresh_browser() -> (App, mpsc::Receiver<Request>) {
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    let rx = browsing(&mut app);
    (app, rx)
}

#[test]
fn every_printable_key_types_into_the_search() {
    let (mut app, rx) = fresh_browser();
    let all: String = (' '..='~').collect();
    let effects = typed(&mut app, &all);
    assert!(effects.is_empty(), "{effects:?}");
    let browser = app.browser.as_ref().expect("still open");
    assert_eq!(browser.query, all);
    assert_eq!(browser.mode, Mode::List);
    assert!(
        !rx.try_iter().any(|r| matches!(
            r,
            Request::Delete { .. } | Request::Export { .. } | Request::Rename { .. }
        )),
        "typing asked the store for no change"
    );
    // Backspace edits it.
    app.update(key(KeyCode::Backspace));
    assert_eq!(app.browser.as_ref().unwrap().query, all[..all.len() - 1]);
    // While a session is read, a letter goes back to the search, whole.
    let (mut app, _rx) = fresh_browser();
    app.update(Msg::Browser(Reply::Preview(Box::new(preview("s1")))));
    app.update(key(KeyCode::Enter));
    assert!(matches!(
        app.browser.as_ref().unwrap().mode,
        Mode::Viewing(_)
    ));
    let effects = typed(&mut app, "rq x");
    assert!(effects.is_empty(), "{effects:?}");
    let browser = app.browser.as_ref().expect("still open");
    assert_eq!(browser.query, "rq x");
    assert_eq!(browser.mode, Mode::List);
}

/// What the store exports of a session with id `id`.
fn preview(id: &str) -> oi_tui::store::Exported {
    let dir = tempfile::tempdir().unwrap();
    let ids = sessions_titled(dir.path(), &["something to read"]);
    let mut exported = Store::open(dir.path()).unwrap().export(&ids[0]).unwrap();
    exported.session.id = id.to_string();
    exported
}

#[test]
fn actions_are_on_keys_no_search_types() {
    let (mut app, rx) = fresh_browser();
    // Ctrl-E exports the selected session as Markdown.
    app.update(ctrl('e'));
    assert!(
        rx.try_iter()
            .any(|r| matches!(r, Request::Export { id, .. } if id == "s1"))
    );
    // F2 renames.
    app.update(key(KeyCode::F(2)));
    assert_eq!(
        app.browser.as_ref().unwrap().mode,
        Mode::Renaming("session s1".into())
    );
    app.update(key(KeyCode::Esc));
    assert_eq!(app.browser.as_ref().unwrap().mode, Mode::List);

    // Ctrl-D asks; a typed letter keeps the session and goes to the search.
    app.update(key(KeyCode::Down));
    app.update(ctrl('d'));
    assert_eq!(app.browser.as_ref().unwrap().mode, Mode::ConfirmDelete);
    let screen = text(&draw(&app, 80, 24));
    assert!(screen.contains("Ctrl-D"), "the question says how: {screen}");
    typed(&mut app, "y");
    let browser = app.browser.as_ref().unwrap();
    assert_eq!(browser.mode, Mode::List);
    assert_eq!(browser.query, "y");
    assert!(!rx.try_iter().any(|r| matches!(r, Request::Delete { .. })));
    // Enter does not answer it either.
    app.update(key(KeyCode::Backspace));
    app.update(ctrl('d'));
    app.update(key(KeyCode::Enter));
    assert!(!rx.try_iter().any(|r| matches!(r, Request::Delete { .. })));
    // Ctrl-D twice deletes.
    app.update(ctrl('d'));
    app.update(ctrl('d'));
    assert!(
        rx.try_iter()
            .any(|r| matches!(r, Request::Delete { id } if id == "s2"))
    );

    // Ctrl-R resumes (no block waits); Enter reads.
    let (mut app, _rx) = fresh_browser();
    app.update(Msg::Browser(Reply::Preview(Box::new(preview("s1")))));
    app.update(key(KeyCode::Enter));
    assert!(matches!(
        app.browser.as_ref().unwrap().mode,
        Mode::Viewing(_)
    ));
    let effects = app.update(ctrl('r'));
    assert_eq!(effects, [Effect::Resume("s1".into())]);
    assert!(app.browser.is_none());
}

#[test]
fn the_hint_line_and_the_help_name_the_browser_keys() {
    let (mut app, _rx) = fresh_browser();
    let screen = text(&draw(&app, 200, 40));
    for hint in [
        "Enter read",
        "Ctrl-R resume",
        "Ctrl-D delete",
        "Ctrl-E export",
        "F2 rename",
    ] {
        assert!(screen.contains(hint), "{hint}:\n{screen}");
    }
    app.update(key(KeyCode::F(1)));
    assert!(app.help, "F1 shows the keys in the browser too");
    // At the browser's keys, even on a small screen.
    for (width, height) in [(80, 24), (120, 60)] {
        let screen = text(&draw(&app, width, height));
        assert!(screen.contains("In the session browser"), "{screen}");
        assert!(screen.contains("Ctrl-R"), "{screen}");
    }
    app.update(key(KeyCode::Esc));
    assert!(
        !app.help && app.browser.is_some(),
        "Esc closes the help only"
    );
}

#[test]
fn resuming_while_a_block_waits_asks_first() {
    let mut app = super::tui_states::fresh();
    super::tui_states::propose_code(&mut app, 1, "print('undecided')");
    assert!(app.pending.is_some());
    let _rx = browsing(&mut app);
    let effects = app.update(ctrl('r'));
    assert!(effects.is_empty(), "not at once: {effects:?}");
    assert!(app.browser.is_some());
    for (width, height) in [(80, 24), (200, 60)] {
        let screen = text(&draw(&app, width, height));
        assert!(
            screen.contains("waits for your decision"),
            "{width}x{height}:\n{screen}"
        );
        assert!(screen.contains("Ctrl-R"), "{width}x{height}:\n{screen}");
    }
    // A typed letter does not answer it: it is search text.
    let effects = typed(&mut app, "y");
    assert!(effects.is_empty(), "{effects:?}");
    assert_eq!(app.browser.as_ref().unwrap().query, "y");
    // Neither does Enter, nor Esc.
    app.update(key(KeyCode::Backspace));
    app.update(ctrl('r'));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    app.update(ctrl('r'));
    assert!(app.update(key(KeyCode::Esc)).is_empty());
    assert!(app.browser.is_some() && app.pending.is_some());
    // Ctrl-R twice resumes.
    app.update(ctrl('r'));
    let effects = app.update(ctrl('r'));
    assert_eq!(effects, [Effect::Resume("s1".into())]);
}
