//! The session browser with the real binary in tmux, at 80×24 and 200×60, while a block
//! waits for a decision: typing `rust`, `dylan` and `data` searches (and resumes, deletes and
//! loses nothing), and Ctrl-R over the waiting block asks before it resumes.

use std::time::Duration;

use oi_tui::store::Store;

use super::model_server::{ModelServer, Reply};
use super::sessions_browser_keys::{TITLES, sessions_titled};
use super::tmux::Tmux;

/// Esc reaches the program only after tmux's escape time.
async fn escape(tmux: &Tmux) {
    tmux.send(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(700)).await;
}

fn titles(data: &std::path::Path) -> Vec<String> {
    Store::open(data)
        .unwrap()
        .list(100, 0)
        .unwrap()
        .into_iter()
        .map(|s| s.title)
        .collect()
}

async fn typing_in_the_browser_never_acts(width: u16, height: u16) {
    let server = ModelServer::start(vec![
        Reply::text("Let me look.").and_tool("python", "print('undecided')"),
        Reply::text("Done."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    sessions_titled(&data, &TITLES);
    let tmux = Tmux::workbench(&server.base("openai"), dir.path(), (width, height), "", "");
    tmux.wait_for("Input").await;
    tmux.type_text("go");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    // This session is in the store too, beside the three.
    let before = titles(&data);
    assert_eq!(before.len(), 4, "{before:?}");

    tmux.send(&["C-o"]);
    tmux.wait_for("4 sessions").await;
    for (word, title) in ["rust", "dylan", "data"].into_iter().zip(TITLES) {
        tmux.type_text(word);
        tmux.wait_for(&format!("search: {word}")).await;
        // The search finds the session the word is in (its title in the list).
        let screen = tmux.wait_for(&title[..20.min(title.len())]).await;
        assert!(screen.contains("Sessions"), "still the browser:\n{screen}");
        assert!(!screen.contains("Delete"), "nothing asks:\n{screen}");
        assert!(!screen.contains("Resumed session"), "{screen}");
        assert_eq!(titles(&data), before, "after {word}");
        // Esc clears the search; the browser stays.
        escape(&tmux).await;
        let screen = tmux.wait_for("4 sessions").await;
        assert!(!screen.contains(&format!("search: {word}")), "{screen}");
    }
    // The store holds every session; nothing was resumed (the model heard only "go").
    assert_eq!(titles(&data), before);
    assert_eq!(server.chats().len(), 1);
    // Esc closes the browser: the block still waits.
    escape(&tmux).await;
    let screen = tmux.wait_for("awaiting your decision").await;
    assert!(!screen.contains("Sessions ·"), "{screen}");

    // Ctrl-R over the waiting block asks first; Esc stays; Ctrl-R twice resumes.
    tmux.send(&["C-o"]);
    tmux.wait_for("4 sessions").await;
    tmux.type_text("rust");
    tmux.wait_for("rust borrow").await;
    tmux.send(&["C-r"]);
    let screen = tmux.wait_for("waits for your decision").await;
    assert!(
        screen.contains("Ctrl-R"),
        "the question says how:\n{screen}"
    );
    escape(&tmux).await;
    let screen = tmux.wait_for("search: rust").await;
    assert!(!screen.contains("waits for your decision"), "{screen}");
    assert!(!screen.contains("Resumed session"), "{screen}");
    tmux.send(&["C-r"]);
    tmux.wait_for("waits for your decision").await;
    tmux.send(&["C-r"]);
    let screen = tmux.wait_for("Resumed session").await;
    assert!(screen.contains("rust borrow checker notes"), "{screen}");
    assert!(!screen.contains("awaiting your decision"), "{screen}");
    assert_eq!(titles(&data).len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_80x24_typing_in_the_browser_searches_and_never_acts() {
    typing_in_the_browser_never_acts(80, 24).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_200x60_typing_in_the_browser_searches_and_never_acts() {
    typing_in_the_browser_never_acts(200, 60).await;
}
