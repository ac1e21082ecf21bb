//! After the sandbox stops a block, the workbench offers to run it again outside the
//! sandbox, once, with the reason shown; only an explicit yes leaves the sandbox, and the
//! model hears what happened. `/sandbox` changes the mode, restarts the kernels and says so.
//! End to end: the real binary in tmux, against the scripted model server, under both
//! backends.

use std::path::PathBuf;
use std::time::Duration;

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

/// A workspace, a temp dir for the kernels, and a directory outside both.
struct Layout {
    root: tempfile::TempDir,
}

impl Layout {
    fn new() -> Layout {
        let root = tempfile::tempdir().expect("dir");
        for sub in ["ws", "tmp", "outside"] {
            std::fs::create_dir(root.path().join(sub)).expect("mkdir");
        }
        Layout { root }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    fn workbench(&self, server: &ModelServer, size: (u16, u16), backend: &str) -> Tmux {
        Tmux::workbench(
            &server.base("openai"),
            &self.path("ws"),
            size,
            &format!(
                "OI_TUI_SANDBOX_BACKEND={backend} TMPDIR='{}'",
                self.path("tmp").display()
            ),
            "",
        )
    }
}

async fn escape(tmux: &Tmux) {
    tmux.send(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(700)).await;
}

async fn wait_for_file(path: &std::path::Path) {
    for _ in 0..200 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} was never made", path.display());
}

async fn offer_then_yes(size: (u16, u16), backend: &str) {
    let layout = Layout::new();
    let target = layout.path("outside").join("made");
    // Its output, `made-it`, is not in its code: what is waited for is the output.
    let code = format!("touch '{}' && echo made-\"it\"", target.display());
    let server = ModelServer::start(vec![
        Reply::text("Making the file.").and_tool("shell", &code),
        Reply::text("All done."),
    ])
    .await;
    let tmux = layout.workbench(&server, size, backend);
    tmux.wait_for("Input").await;
    tmux.type_text("make it");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);

    // The sandbox refused the write: the panel says so, with the reason, and nothing runs
    // outside the sandbox until the person says yes.
    let screen = tmux.wait_for("the sandbox stopped block 1").await;
    assert!(!target.exists(), "written inside the sandbox:\n{screen}");
    if size.0 < 110 {
        // At 80×24 the failed block's output stays in view; Esc goes to the decision.
        escape(&tmux).await;
    }
    let screen = tmux.wait_for("run outside, once").await;
    assert!(
        screen.contains("Run outside the sandbox?")
            || screen.contains("⚠ the sandbox stopped it: the sandbox keeps this read-only")
            // The outside directory is in this machine's temp dir, which blocks do not see.
            || screen.contains("⚠ the sandbox stopped it: the sandbox gives blocks a temp dir"),
        "{screen}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!target.exists(), "ran outside before the yes:\n{screen}");
    tmux.send(&["y"]);
    wait_for_file(&target).await;
    // Both runs' output stays in the terminal pane. At 80×24 the answer comes forward when
    // the turn ends: the person goes to the Terminal tab to read the output.
    tmux.wait_for("All done.").await;
    let mut screen = tmux.capture();
    for _ in 0..4 {
        if screen.contains("made-it") {
            break;
        }
        tmux.send(&["Tab"]);
        tokio::time::sleep(Duration::from_millis(300)).await;
        screen = tmux.capture();
    }
    assert!(screen.contains("made-it"), "{screen}");
    assert!(
        screen.contains("Read-only file system")
            || screen.contains("Permission denied")
            || screen.contains("No such file or directory")
            || size.0 >= 110,
        "{screen}"
    );
    tmux.wait_for("idle").await;

    let chats = server.chats();
    assert_eq!(chats.len(), 2, "one request after the block");
    let told = chats[1].all_text();
    assert!(
        told.contains("looks like the sandbox stopped it"),
        "the model hears the refusal: {told}"
    );
    assert!(
        told.contains("allowed it to run again outside the sandbox, once")
            && told.contains("made-it"),
        "the model hears the second run: {told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_the_sandbox_stopped_runs_outside_it_only_after_yes_at_80x24_bubblewrap() {
    offer_then_yes((80, 24), "bubblewrap").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_the_sandbox_stopped_runs_outside_it_only_after_yes_at_200x60_landlock() {
    offer_then_yes((200, 60), "landlock").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_leaves_the_block_stopped_and_the_model_hears_why() {
    let layout = Layout::new();
    let target = layout.path("outside").join("made");
    let code = format!("touch '{}'", target.display());
    let server = ModelServer::start(vec![
        Reply::text("Making the file.").and_tool("shell", &code),
        Reply::text("Understood."),
    ])
    .await;
    let tmux = layout.workbench(&server, (200, 60), "bubblewrap");
    tmux.wait_for("Input").await;
    tmux.type_text("make it");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("run outside, once").await;
    // `a` (auto-run) does not apply to leaving the sandbox; n leaves it stopped.
    tmux.send(&["a"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!target.exists());
    tmux.send(&["n"]);
    tmux.wait_for("Understood.").await;
    assert!(!target.exists());
    let told = server.chats()[1].all_text();
    assert!(
        told.contains("chose not to run it outside the sandbox"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_sandbox_restarts_the_kernels_and_says_so() {
    let layout = Layout::new();
    let server = ModelServer::start(vec![]).await;
    let tmux = layout.workbench(&server, (200, 60), "bubblewrap");
    tmux.wait_for("Input").await;
    tmux.type_text("!export KEPT=yes; echo kept-$KEPT");
    tmux.send(&["Enter"]);
    tmux.wait_for("kept-yes").await;
    tmux.type_text("/sandbox read-only network off");
    tmux.send(&["Enter"]);
    let screen = tmux
        .wait_for("sandbox read-only (bubblewrap), network off")
        .await;
    assert!(screen.contains("shell kernel was restarted"), "{screen}");
    assert!(
        screen.contains("read-only, net off"),
        "status bar: {screen}"
    );
    // The variable went with the old kernel; the workspace is read-only now.
    tmux.type_text("!echo var-${KEPT:-gone}; touch inside || echo refused-$((40 + 2))");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("refused-42").await;
    assert!(screen.contains("var-gone"), "{screen}");
    assert!(!layout.path("ws").join("inside").exists());
    // A mode that does not exist is an error, and nothing changes.
    tmux.type_text("/sandbox readonly");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("sandbox mode `readonly`").await;
    assert!(screen.contains("read-only, net off"), "{screen}");
}
