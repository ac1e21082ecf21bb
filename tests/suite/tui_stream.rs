//! Streaming in the real binary (tmux, scripted model server): a reply that arrives seven
//! characters every 0.2 s is on screen as it arrives, not only when a paragraph ends, and
//! its Markdown (a table, strikethrough) renders once it is there.

use std::time::{Duration, Instant};

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reply_shows_as_it_arrives() {
    let reply = "Streaming words arrive one chunk after another here, ~~slowly~~ surely.\n\n\
                 | name | n |\n|:--|--:|\n| alpha | 1 |\n| beta | 22 |\n\nThe last words.";
    let server =
        ModelServer::start(vec![Reply::text(reply).slow(Duration::from_millis(200))]).await;
    let dir = tempfile::tempdir().expect("dir");
    let tmux = Tmux::workbench(&server.base("openai"), dir.path(), (120, 40), "", "");
    tmux.wait_for("Input").await;
    tmux.type_text("tell me");
    tmux.send(&["Enter"]);
    let sent = Instant::now();

    // The first chunks show long before the paragraph's end (about 2 s away).
    let screen = tmux.wait_for("Streaming word").await;
    assert!(
        !screen.contains("surely"),
        "text shows before its paragraph ends:\n{screen}"
    );
    assert!(sent.elapsed() < Duration::from_secs(20));

    // The finished reply: the table with aligned columns, the strikethrough's text.
    let screen = tmux.wait_for("The last words.").await;
    assert!(screen.contains("name  │  n"), "{screen}");
    assert!(screen.contains("alpha │  1"), "{screen}");
    assert!(screen.contains("beta  │ 22"), "{screen}");
    assert!(screen.contains("slowly surely"), "{screen}");
    assert!(!screen.contains("| alpha"), "{screen}");
    tmux.send(&["C-q"]);
}
