//! The workbench at 80×24, real binary in tmux: a block with a variation selector shows it
//! in the code pane as ⟨U+FE00⟩ (highlighting neither drops nor moves it), the verdict
//! names the hidden characters, and the block asks even under `-y` (a delete inside the
//! workspace would otherwise run without a question).

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

/// Reads as removing `keep.txt`; removes another file, whose name has a variation selector.
const CODE: &str = "import os\nos.remove('keep\u{fe00}.txt')\nprint('removed')";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_pane_at_80x24_shows_a_variation_selector() {
    let server = ModelServer::start(vec![
        Reply::text("Tidying.").and_tool("python", CODE),
        Reply::text("Done."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("keep\u{fe00}.txt"), "data").expect("file");
    let tmux = Tmux::workbench(&server.base("openai"), dir.path(), (80, 24), "", "-y");
    tmux.wait_for("Input").await;
    tmux.type_text("tidy up");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    // The panel with the verdict may be drawn a frame after the code pane's title.
    let screen = tmux.wait_for("⚑ hidden characters").await;
    assert!(
        screen.contains("2 os.remove('keep⟨U+FE00⟩.txt')"),
        "{screen}"
    );
    assert!(screen.contains("1 import os"), "{screen}");
    assert!(screen.contains("3 print('removed')"), "{screen}");
    assert!(screen.contains("⚑ hidden characters"), "{screen}");
    assert!(!screen.contains('\u{fe00}'), "{screen}");
    // Highlighting may colour the block a frame later: it keeps the mark where it is.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let coloured = tmux.capture();
    assert!(
        coloured.contains("2 os.remove('keep⟨U+FE00⟩.txt')"),
        "{coloured}"
    );
    assert!(
        tmux.capture_colours().contains("keep⟨U+FE00⟩.txt"),
        "one span holds the string and its mark"
    );
    assert!(
        dir.path().join("keep\u{fe00}.txt").exists(),
        "the block ran"
    );
    tmux.send(&["C-q"]);
}
