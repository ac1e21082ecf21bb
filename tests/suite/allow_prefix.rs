//! `p` on a waiting block: the proposed "always allow" prefix appears in the input, the
//! person edits it, Enter saves it to their config and runs the block; the next block the
//! rule allows runs without a question (ask mode became rules mode, and says so), one it
//! does not allow still asks, and a later session finds the rule in the config file. End to
//! end: the real binary in tmux against the scripted model server, at 80×24 and 200×60.

use std::time::Duration;

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

async fn escape(tmux: &Tmux) {
    tmux.send(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(700)).await;
}

async fn edit_save_and_apply(size: (u16, u16)) {
    let server = ModelServer::start(vec![
        Reply::text("Listing.").and_tool("shell", "ls -la"),
        Reply::text("And the root.").and_tool("shell", "ls -la config"),
        Reply::text("Plain too.").and_tool("shell", "ls /"),
        Reply::text("Done."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let tmux = Tmux::workbench(
        &server.base("openai"),
        dir.path(),
        size,
        "OI_TUI_SANDBOX_BACKEND=bubblewrap",
        "",
    );
    tmux.wait_for("Input").await;
    tmux.type_text("list");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["p"]);
    let screen = tmux.wait_for("Always allow").await;
    assert!(screen.contains("Always allow → your config"), "{screen}");
    // The proposal is the program name, the cursor after it; the person narrows it to
    // `ls -la`.
    tmux.type_text(" -la");
    tmux.send(&["Enter"]);
    // Ask mode became rules mode: the status bar says so.
    tmux.wait_for("· rules ·").await;
    if size.0 >= 110 {
        let screen = tmux.wait_for("Always allowed from now on").await;
        assert!(screen.contains("\"ls -la\""), "{screen}");
    }
    // The next block matches the rule: it runs without a question; the third does not.
    for _ in 0..400 {
        if server.chats().len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.chats().len(), 3, "the second block ran by itself");
    tmux.wait_for("awaiting your decision").await;
    if size.0 < 110 {
        // The second block's output stays in front; Esc goes to the decision.
        escape(&tmux).await;
    }
    tmux.send(&["n"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    tmux.wait_for("idle").await;
    let chats = server.chats();
    assert_eq!(chats.len(), 4);
    assert!(
        !chats[2].all_text().contains("skipped"),
        "the second block ran: {}",
        chats[2].all_text()
    );
    assert!(chats[3].all_text().contains("The user skipped this block"));

    let config = dir.path().join("config/oi-tui/config.toml");
    let saved = std::fs::read_to_string(&config).expect("the config was written");
    assert!(
        saved.contains("[policy]") && saved.contains("\"ls -la\""),
        "{saved}"
    );

    // A later session finds the rule: under --approval rules, without a terminal, `ls -la`
    // runs and `ls` alone is declined.
    let later = ModelServer::start(vec![
        Reply::tool("shell", "ls -la"),
        Reply::tool("shell", "ls"),
        Reply::text("Done."),
    ])
    .await;
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env_remove("OI_TUI_CONFIG")
        .args([
            "--approval",
            "rules",
            "--task",
            "go",
            "--model",
            "openai/scripted",
        ])
        .args(["--api-base", &later.base("openai"), "--api-key", "k"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("oi-tui ran");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("allowed by rule \"ls -la\""), "{all}");
    let told = later.chats();
    assert!(
        told[1].all_text().contains("[exit 0"),
        "{}",
        told[1].all_text()
    );
    assert!(
        told[2].all_text().contains("Not run"),
        "{}",
        told[2].all_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p_saves_an_edited_prefix_and_the_next_block_runs_without_asking_200x60() {
    edit_save_and_apply((200, 60)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p_saves_an_edited_prefix_and_the_next_block_runs_without_asking_80x24() {
    edit_save_and_apply((80, 24)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p_on_a_python_block_says_why_no_rule_can_allow_it() {
    let server = ModelServer::start(vec![
        Reply::text("Python.").and_tool("python", "print('hi')"),
        Reply::text("Done."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let tmux = Tmux::workbench(&server.base("openai"), dir.path(), (200, 60), "", "");
    tmux.wait_for("Input").await;
    tmux.type_text("go");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["p"]);
    let screen = tmux.wait_for("no rule can allow it").await;
    assert!(screen.contains("only shell commands are"), "{screen}");
    assert!(!dir.path().join("config/oi-tui/config.toml").exists());
    tmux.send(&["y"]);
    tmux.wait_for("Done.").await;
}
