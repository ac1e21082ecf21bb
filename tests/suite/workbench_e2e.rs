//! The workbench's promises, with the real binary in tmux against the scripted model server:
//! every line of a long block can be read before it runs, typing never decides a block, the
//! narrow layout's tabs follow Tab and clicks while a block waits and the answer comes forward
//! when a turn ends, a message typed while a block runs shows queued, and a CR paste is text.

use std::process::Command;
use std::time::Duration;

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

/// The workbench in tmux, talking to `server`; the directory holds its data.
fn workbench(server: &ModelServer, width: u16, height: u16) -> (Tmux, tempfile::TempDir) {
    workbench_with(server, width, height, "")
}

/// The same, with `env` settings before the binary (`TERM=linux`).
pub(super) fn workbench_with(
    server: &ModelServer,
    width: u16,
    height: u16,
    env: &str,
) -> (Tmux, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let tmux = Tmux::workbench(&server.base("openai"), dir.path(), (width, height), env, "");
    (tmux, dir)
}

/// Esc reaches the program only after tmux's escape time.
async fn escape(tmux: &Tmux) {
    tmux.send(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(700)).await;
}

/// A left click at a cell (0-based), as the terminal reports it (SGR mouse).
fn click(tmux: &Tmux, column: usize, row: usize) {
    tmux.type_text(&format!("\x1b[<0;{};{}M", column + 1, row + 1));
    tmux.type_text(&format!("\x1b[<0;{};{}m", column + 1, row + 1));
}

fn long_block() -> String {
    let mut code: Vec<String> = (1..=60).map(|i| format!("v{i} = {i}")).collect();
    code.push("print('sixty-one', v60 + 1)".into());
    code.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_of_a_long_block_is_read_before_it_runs_and_typing_never_decides() {
    let server = ModelServer::start(vec![
        Reply::text("A long one.").and_tool("python", &long_block()),
        Reply::text("Done."),
    ])
    .await;
    let (tmux, _dir) = workbench(&server, 200, 60);
    tmux.wait_for("Input").await;
    tmux.type_text("go");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    // The pane's border says where it is once the block is drawn (the same frame or the next).
    let screen = tmux.wait_for("of 61 ↓").await;
    assert!(!screen.contains("sixty-one"), "{screen}");

    // The person goes to the input and types what was seen skipping and auto-running
    // blocks: it stays text.
    escape(&tmux).await;
    tmux.type_text("now explain first also check the date !ls -la");
    let screen = tmux
        .wait_for("now explain first also check the date !ls -la")
        .await;
    assert!(screen.contains("awaiting your decision"), "{screen}");
    assert!(!screen.contains(" auto · "), "{screen}");
    assert!(!screen.contains("skipped"), "{screen}");

    // Back to the decision: y first shows the lines never on screen, and runs nothing.
    escape(&tmux).await;
    tmux.send(&["y"]);
    let screen = tmux
        .wait_for("lines never shown — y again to run anyway")
        .await;
    assert!(screen.contains("of 61 lines"), "{screen}");
    assert!(!screen.contains("ran ·"), "{screen}");
    // End shows line 61 itself.
    tmux.send(&["End"]);
    let screen = tmux.wait_for("61 print('sixty-one'").await;
    assert!(screen.contains("of 61 ↑"), "{screen}");
    tmux.send(&["y"]);
    tmux.wait_for("sixty-one 61").await;
    tmux.wait_for("Done.").await;
    // The message typed meanwhile is still in the input.
    let screen = tmux.capture();
    assert!(screen.contains("now explain first"), "{screen}");
    assert_eq!(server.chats().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_80x24_tabs_and_clicks_switch_while_a_block_waits() {
    let server = ModelServer::start(vec![
        Reply::text("Here is my reasoning: the answer needs a count.")
            .and_tool("python", "print('counted')"),
        Reply::text("Done."),
    ])
    .await;
    let (tmux, _dir) = workbench(&server, 80, 24);
    tmux.wait_for("Input").await;
    tmux.type_text("count");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("awaiting your decision").await;
    // The code tab shows the end of the model's message above the code.
    assert!(screen.contains("the answer needs a count"), "{screen}");
    assert!(screen.contains("1 print('counted')"), "{screen}");

    // Shift-Tab: the chat, with the reasoning; the code tab says a block waits.
    tmux.send(&["BTab"]);
    let screen = tmux.wait_for("Code ● awaits you").await;
    assert!(screen.contains("▶ Chat"), "{screen}");
    // Typing in the chat goes to the input, whole.
    tmux.type_text("!ls -la");
    let screen = tmux.wait_for("!ls -la").await;
    assert!(screen.contains("Code ● awaits you"), "{screen}");
    assert!(!screen.contains(" auto · "), "{screen}");

    // A click on the Code label shows the block again.
    let row = screen.lines().next().unwrap_or("");
    let column = row.find("Code").expect("a Code tab label");
    click(&tmux, column + 1, 0);
    let screen = tmux.wait_for("▶ Code").await;
    assert!(screen.contains("┃ 1 print('counted')"), "{screen}");
    tmux.send(&["y"]);
    // (The output may be on screen only for a moment: the answer follows at once.)
    // The turn ends, and the answer comes forward (the workbench, not the person, had put
    // the terminal in front); the output is one tab away.
    let screen = tmux.wait_for("60 tok · idle").await;
    assert!(screen.contains("Done."), "{screen}");
    assert_eq!(server.chats().len(), 2);
    let row = screen.lines().next().unwrap_or("");
    let column = row.find("Terminal").expect("a Terminal tab label");
    click(&tmux, column + 1, 0);
    let screen = tmux.wait_for("Terminal · Ctrl-G leaves").await;
    assert!(screen.contains("┃counted"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_with_cr_line_ends_is_lines_of_text() {
    let server = ModelServer::start(vec![Reply::text("Got it.")]).await;
    let (tmux, _dir) = workbench(&server, 100, 30);
    tmux.wait_for("Input").await;
    let socket = tmux.socket();
    let status = Command::new("tmux")
        .args([
            "-L",
            socket,
            "set-buffer",
            "-b",
            "p",
            "first line\rsecond line",
        ])
        .status()
        .expect("set-buffer");
    assert!(status.success());
    let status = Command::new("tmux")
        .args(["-L", socket, "paste-buffer", "-p", "-b", "p", "-t", "t"])
        .status()
        .expect("paste-buffer");
    assert!(status.success());
    let screen = tmux.wait_for("second line").await;
    assert!(!screen.contains('␍'), "{screen}");
    let first = screen
        .lines()
        .position(|l| l.contains("first line"))
        .expect("first line");
    assert!(
        screen
            .lines()
            .nth(first + 1)
            .unwrap_or("")
            .contains("second line"),
        "two lines in the input:\n{screen}"
    );
    // Nothing was sent by the paste.
    assert!(server.chats().is_empty());
    tmux.send(&["Enter"]);
    tmux.wait_for("Got it.").await;
    let sent = server.chats()[0].all_text();
    assert!(sent.contains("first line\\nsecond line"), "{sent}");
}

/// A captured line without its escape sequences.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        let end = rest
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(rest.len(), |e| e + 1);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// The SGR colour codes (30–37, 90–97 foreground) used on the lines that contain `needle`.
fn colours_on(screen: &str, needle: &str) -> Vec<u32> {
    let mut codes = Vec::new();
    for line in screen.lines().filter(|l| plain(l).contains(needle)) {
        for seq in line.split("\x1b[").skip(1) {
            let Some(end) = seq.find('m') else { continue };
            let params: Vec<u32> = seq[..end]
                .split(';')
                .filter_map(|p| p.parse().ok())
                .collect();
            // tmux writes the bright eight as 38;5;8–15; 48;… is a background.
            let mut i = 0;
            while i < params.len() {
                match params[i] {
                    38 if params.get(1 + i) == Some(&5) => {
                        match params.get(i + 2) {
                            Some(n @ 0..=7) => codes.push(30 + n),
                            Some(n @ 8..=15) => codes.push(90 + n - 8),
                            _ => codes.push(0),
                        }
                        i += 3;
                    }
                    38 | 48 => i += 3,
                    p @ (30..=37 | 90..=97) => {
                        codes.push(p);
                        i += 1;
                    }
                    _ => i += 1,
                }
            }
        }
    }
    codes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_16_colour_terminal_keeps_syntax_diff_and_focus_colours() {
    for term in ["xterm-16color", "linux", "screen"] {
        let server = ModelServer::start(vec![
            Reply::tool(
                "python",
                "import os\nfor i in range(3):\n    print('n', i)  # count",
            ),
            Reply::text("Done."),
        ])
        .await;
        let (tmux, _dir) = workbench_with(&server, 120, 40, &format!("-u COLORTERM TERM={term}"));
        tmux.wait_for("Input").await;
        tmux.type_text("go");
        tmux.send(&["Enter"]);
        tmux.wait_for("awaiting your decision").await;
        // The code is coloured as soon as the highlighter has read it (a loaded machine
        // may draw it plain first).
        let grey = |c: &u32| matches!(c, 30 | 37 | 90 | 97);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let (screen, code, hues) = loop {
            let screen = tmux.capture_colours();
            let code: Vec<u32> = colours_on(&screen, "range(3)");
            let hues: std::collections::BTreeSet<u32> =
                code.iter().copied().filter(|c| !grey(c)).collect();
            if hues.len() >= 2 || std::time::Instant::now() > deadline {
                break (screen, code, hues);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        // Only the 16 colours (codes 0 in `colours_on` mark 256-colour indices).
        assert!(
            !screen.contains("38;2;") && !colours_on(&screen, "").contains(&0),
            "{term}: only 16 colours:\n{screen}"
        );
        assert!(
            hues.len() >= 2,
            "{term}: syntax colours {code:?}:\n{screen}"
        );
        // The focus ring (the code pane's thick border) is a colour, not grey.
        let focus = colours_on(&screen, "▶ Code");
        assert!(focus.iter().any(|c| !grey(c)), "{term}: focus {focus:?}");
        // An edit's diff: red and green.
        tmux.send(&["e"]);
        tmux.wait_for("Ctrl-S accepts").await;
        tmux.send(&["End"]);
        tmux.type_text("  # edited");
        tmux.send(&["C-s"]);
        tmux.wait_for("proposed → edited").await;
        let screen = tmux.capture_colours();
        let removed = colours_on(&screen, "- import os");
        let added = colours_on(&screen, "+ import os  # edited");
        assert!(
            removed.iter().any(|c| matches!(c, 31 | 91)),
            "{term}: removed {removed:?}\n{screen}"
        );
        assert!(
            added.iter().any(|c| matches!(c, 32 | 92)),
            "{term}: added {added:?}\n{screen}"
        );
        tmux.send(&["C-q"]);
        tmux.wait_for("EXIT=0").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_80x24_the_final_answer_comes_forward_or_the_chat_tab_is_marked() {
    let server = ModelServer::start(vec![
        Reply::text("Counting.").and_tool("python", "print('counted')"),
        Reply::text("The final answer is 42."),
        Reply::text("Counting slowly.").and_tool(
            "python",
            "import time\ntime.sleep(2)\nprint('slowly counted')",
        ),
        Reply::text("The second answer is 43."),
    ])
    .await;
    let (tmux, _dir) = workbench(&server, 80, 24);
    tmux.wait_for("Input").await;
    tmux.type_text("count");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    // The block ran in the terminal tab; when the turn ends, the answer is in front.
    tmux.wait_for("The final answer is 42.").await;

    // Another turn, and the person moves to the code tab themself while the block runs: it
    // stays, and the chat tab is marked until visited.
    tmux.type_text("again");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("running").await;
    tmux.send(&["Tab"]);
    tmux.send(&["Tab"]);
    tmux.wait_for("▶ Code").await;
    tmux.wait_for("Chat • ").await;
    tmux.wait_for("idle").await;
    let screen = tmux.capture();
    assert!(screen.contains("Chat • "), "{screen}");
    assert!(screen.contains("1 import time"), "the code stays: {screen}");
    assert!(!screen.contains("The second answer is 43."), "{screen}");
    assert_eq!(server.chats().len(), 4);
    let row = screen.lines().next().unwrap_or("");
    let column = row.find("Chat").expect("a Chat tab label");
    click(&tmux, column + 1, 0);
    let screen = tmux.wait_for("The second answer is 43.").await;
    let tabs = screen.lines().next().unwrap_or("");
    assert!(!tabs.contains("Chat •"), "{tabs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_200x60_a_message_typed_while_a_block_runs_is_queued_then_sent() {
    let server = ModelServer::start(vec![
        Reply::text("Working on it.")
            .and_tool("python", "import time\ntime.sleep(3)\nprint('slept well')"),
        Reply::text("Both are done."),
    ])
    .await;
    let (tmux, _dir) = workbench(&server, 200, 60);
    tmux.wait_for("Input").await;
    tmux.type_text("first task");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("▶ python").await;
    tmux.type_text("a second thought");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("a second thought").await;
    let rows: Vec<&str> = screen.lines().collect();
    let at = rows
        .iter()
        .position(|r| r.contains("a second thought") && !r.contains("Input"))
        .expect("the message in the chat");
    assert!(
        rows[at.saturating_sub(1)].contains("queued"),
        "marked queued:\n{screen}"
    );
    // It goes with the next request, and the mark goes.
    let screen = tmux.wait_for("Both are done.").await;
    assert!(screen.contains("a second thought"), "{screen}");
    assert!(!screen.contains("queued"), "{screen}");
    let chats = server.chats();
    assert_eq!(chats.len(), 2);
    let sent = chats[1].all_text();
    assert!(sent.contains("a second thought"), "{sent}");
    assert!(
        sent.find("slept well") < sent.find("a second thought"),
        "after the block's result: {sent}"
    );
}
