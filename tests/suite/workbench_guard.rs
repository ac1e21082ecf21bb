//! The unseen-lines guard with the real binary in tmux, at 80×24 and at 200×60: End then y
//! on a 200-line block names how many lines were never on screen and runs nothing; a key in
//! between takes the explicit yes back; y right after the notice runs it.

use std::time::{Duration, Instant};

use super::model_server::{ModelServer, Reply};
use super::workbench_e2e::workbench_with;

fn block_200() -> String {
    let mut code: Vec<String> = (1..200).map(|i| format!("v{i} = {i}")).collect();
    code.push("print('two hundred', v199 + 1)".into());
    code.join("\n")
}

const NOTICE: &str = " of 200 lines never shown — y again to run anyway";

/// The count the notice names, when it is on the screen.
fn never_shown(screen: &str) -> Option<usize> {
    let at = screen.find(NOTICE)?;
    let digits: Vec<char> = screen[..at]
        .chars()
        .rev()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.into_iter().rev().collect::<String>().parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_then_y_on_a_200_line_block_names_the_lines_never_shown_and_waits() {
    for (width, height) in [(80, 24), (200, 60)] {
        let server = ModelServer::start(vec![
            Reply::text("A long one.").and_tool("python", &block_200()),
            Reply::text("Done."),
        ])
        .await;
        let (tmux, _dir) = workbench_with(&server, width, height, "");
        tmux.wait_for("Input").await;
        tmux.type_text("go");
        tmux.send(&["Enter"]);
        tmux.wait_for("of 200 ↓").await;
        tmux.send(&["End"]);
        tmux.wait_for("of 200 ↑").await;
        tmux.send(&["y"]);
        let screen = tmux.wait_for(NOTICE).await;
        let first = never_shown(&screen).unwrap_or(0);
        assert!(first > 100 && first < 200, "{width}x{height}:\n{screen}");
        assert!(screen.contains("or scroll to read them"), "{screen}");
        // The first line never shown is on screen (the top page ended before it).
        assert!(screen.contains("↑↓"), "{width}x{height}:\n{screen}");

        // Another key, then y: the notice again, with fewer lines; nothing ran.
        tmux.send(&["Down"]);
        tmux.send(&["y"]);
        let deadline = Instant::now() + Duration::from_secs(30);
        let second = loop {
            let screen = tmux.capture();
            if let Some(n) = never_shown(&screen)
                && n < first
            {
                break n;
            }
            assert!(
                Instant::now() < deadline,
                "{width}x{height}: y after another key did not warn again:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(second > 0, "{width}x{height}");
        let screen = tmux.capture();
        assert!(
            !screen.contains("two hundred 200"),
            "{width}x{height}:\n{screen}"
        );
        assert_eq!(server.chats().len(), 1, "{width}x{height}: the block ran");

        // y right after the notice runs it: the model hears the output, and the turn ends
        // (narrow, the answer then comes forward; the output is where the model read it).
        tmux.send(&["y"]);
        tmux.wait_for(" tok · idle").await;
        assert_eq!(server.chats().len(), 2, "{width}x{height}");
        assert!(
            server.chats()[1].all_text().contains("two hundred 200"),
            "{width}x{height}: the block's output did not reach the model"
        );
    }
}
