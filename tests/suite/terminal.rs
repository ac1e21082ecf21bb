//! The terminal pane's promises end to end: a block that waits for keyboard input is noticed
//! (in the kernels and as an engine event), one that merely sleeps is not; tracebacks name
//! the block by its id in the session; and in the real binary (tmux) a resize loses no
//! output and an `input()` is answered through the pane.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oi_tui::engine::{self, EngineConfig, EngineHandle};
use oi_tui::exec::{Block, Kernels, Language, RunStatus};
use oi_tui::protocol::{Event, Op};

use super::model_server::{ModelServer, Reply};
use super::support::{kernels, run_block, spawn_block, wait_for_output};
use super::tmux::Tmux;

/// Waits until the kernels say the running block waits for input (or `limit` passes);
/// returns how long that took.
async fn noticed_within(kernels: &Kernels, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    let mut waiting = kernels.awaiting_input();
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if *waiting.borrow_and_update() {
            return Some(started.elapsed());
        }
        if tokio::time::timeout_at(deadline, waiting.changed())
            .await
            .is_err()
        {
            return None;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_input_is_noticed_and_answered() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    let (handle, seen) = spawn_block(
        kernels.clone(),
        Block::new(
            Language::Python,
            "name = input('name? ')\nprint('hello', name)",
        ),
    );
    wait_for_output(&seen, "name? ", Duration::from_secs(10)).await;
    let took = noticed_within(&kernels, Duration::from_secs(3)).await;
    assert!(
        took.is_some_and(|t| t <= Duration::from_millis(1500)),
        "input() noticed after {took:?}"
    );
    kernels.write_input(b"Ada\r").expect("write");
    let result = handle.await.expect("join");
    assert_eq!(result.status, RunStatus::Success);
    assert!(result.output.contains("hello Ada"), "{:?}", result.output);
    // Once the block has ended nothing waits.
    assert!(!*kernels.awaiting_input().borrow());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_read_and_a_program_it_starts_are_noticed() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    let (handle, seen) = spawn_block(
        kernels.clone(),
        Block::new(Language::Shell, "echo ready; read -r x; echo \"got $x\""),
    );
    wait_for_output(&seen, "ready", Duration::from_secs(10)).await;
    assert!(
        noticed_within(&kernels, Duration::from_secs(3))
            .await
            .is_some(),
        "`read` was not noticed"
    );
    kernels.write_input(b"one\r").expect("write");
    let result = handle.await.expect("join");
    assert!(result.output.contains("got one"), "{:?}", result.output);

    // A child of the shell, in the same foreground group, reading the terminal.
    let (handle, seen) = spawn_block(
        kernels.clone(),
        Block::new(
            Language::Shell,
            "echo child; python3 -c 'print(\"child got\", input())'",
        ),
    );
    wait_for_output(&seen, "child", Duration::from_secs(10)).await;
    assert!(
        noticed_within(&kernels, Duration::from_secs(3))
            .await
            .is_some(),
        "a child reading the terminal was not noticed"
    );
    kernels.write_input(b"two\r").expect("write");
    let result = handle.await.expect("join");
    assert!(
        result.output.contains("child got two"),
        "{:?}",
        result.output
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sleeping_block_is_not_waiting_for_input() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    let (handle, seen) = spawn_block(
        kernels.clone(),
        Block::new(
            Language::Python,
            "import time\nprint('sleeping', flush=True)\ntime.sleep(3)",
        ),
    );
    wait_for_output(&seen, "sleeping", Duration::from_secs(10)).await;
    let took = noticed_within(&kernels, Duration::from_millis(2500)).await;
    assert_eq!(took, None, "a sleep was taken for a wait for input");
    let result = handle.await.expect("join");
    assert_eq!(result.status, RunStatus::Success);
}

#[tokio::test]
async fn a_traceback_names_the_block_by_its_session_id() {
    let (kernels, _dir) = kernels();
    // Two blocks ran before in this kernel; the session calls this one #7.
    for _ in 0..2 {
        run_block(&kernels, Block::new(Language::Python, "pass")).await;
    }
    let (result, _) = run_block(&kernels, Block::new(Language::Python, "x = 1\n1 / 0").id(7)).await;
    assert!(result.output.contains("<block 7>"), "{}", result.output);
    let (result, _) = run_block(&kernels, Block::new(Language::Shell, "echo hi").id(8)).await;
    assert_eq!(result.block_id, 8);
}

fn engine_config(server: &ModelServer, dir: &std::path::Path) -> EngineConfig {
    EngineConfig {
        stdin_eof: false,
        ..super::support::engine_config("openai/scripted", Some(server.base("openai")), dir)
    }
}

async fn next_event(handle: &mut EngineHandle) -> Event {
    super::support::next_event(handle).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_reports_a_block_waiting_for_input() {
    let server = ModelServer::start(vec![
        Reply::tool("python", "print('first')"),
        Reply::tool("python", "name = input('name? ')\nprint('hello', name)"),
        Reply::text("greeted"),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let mut h = engine::spawn(engine_config(&server, dir.path())).expect("engine");
    h.ops
        .send(Op::UserMessage {
            text: "greet me".into(),
        })
        .expect("send");
    // The second block (id 2) waits; the event says so, then the answer goes in.
    let mut running = None;
    let waiting_id = loop {
        match next_event(&mut h).await {
            Event::ExecStarted { block_id, .. } => running = Some(block_id),
            Event::ExecAwaitingInput {
                block_id,
                waiting: true,
            } => break block_id,
            Event::ExecFinished { result, .. } => {
                assert!(
                    !result.output.contains("name?"),
                    "the waiting block ended unnoticed: {result:?}"
                )
            }
            _ => {}
        }
    };
    assert_eq!(Some(waiting_id), running);
    h.ops
        .send(Op::Input {
            data: b"Ada\r".to_vec(),
        })
        .expect("send");
    let mut resumed = false;
    loop {
        match next_event(&mut h).await {
            Event::ExecAwaitingInput { waiting: false, .. } => resumed = true,
            Event::ExecFinished { block_id, result } => {
                assert_eq!(block_id, waiting_id);
                assert!(result.output.contains("hello Ada"), "{:?}", result.output);
                break;
            }
            _ => {}
        }
    }
    assert!(resumed, "no event said the block stopped waiting");
    let _ = h.ops.send(Op::Shutdown);
}

/// The binary in tmux against the scripted model, with blocks run without asking.
fn workbench(server: &ModelServer, dir: &std::path::Path, width: u16, height: u16) -> Tmux {
    Tmux::workbench(&server.base("openai"), dir, (width, height), "", "-y")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_loses_no_output_in_the_workbench() {
    let server = ModelServer::start(vec![
        Reply::tool("python", "for i in range(1, 41):\n    print('count', i)"),
        Reply::text("Counted to forty."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let tmux = workbench(&server, dir.path(), 200, 60);
    tmux.wait_for("Input").await;
    tmux.type_text("count to forty");
    tmux.send(&["Enter"]);
    tmux.wait_for("Counted to forty.").await;
    tmux.wait_for("count 40").await;

    // Smaller: the narrow layout, the terminal pane on its tab; its first lines are up
    // in the scrollback.
    tmux.resize(80, 24);
    // The keys go once the narrow layout is drawn (under load the resize can come later).
    tmux.wait_for("Tab / click switches").await;
    tmux.send(&["C-t"]);
    tmux.wait_for("leaves").await;
    let screen = tmux.wait_for("count 40").await;
    assert!(!screen.contains("count 1 "), "{screen}");
    for _ in 0..4 {
        tmux.send(&["PageUp"]);
    }
    let screen = tmux.wait_for("count 1 ").await;
    assert!(screen.contains("scrolled"), "{screen}");
    tmux.send(&["End"]);
    tmux.send(&["C-g"]);

    // Back to the large size: every line, ending at the end of the output.
    tmux.resize(200, 60);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let screen = tmux.wait_for("count 40").await;
    let counts: Vec<String> = screen
        .lines()
        .filter_map(|l| {
            l.split('│').find(|cell| {
                cell.trim()
                    .strip_prefix("count ")
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
        })
        .map(|cell| cell.trim().to_string())
        .collect();
    let expected: Vec<String> = (1..=40).map(|i| format!("count {i}")).collect();
    assert_eq!(counts, expected, "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_is_answered_through_the_terminal_pane() {
    let server = ModelServer::start(vec![
        Reply::tool("python", "name = input('name? ')\nprint('hello,', name)"),
        Reply::text("Greeted."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let tmux = workbench(&server, dir.path(), 160, 48);
    tmux.wait_for("Input").await;
    tmux.type_text("ask my name");
    tmux.send(&["Enter"]);
    let screen = tmux
        .wait_for("waiting for input · Ctrl-T types into it")
        .await;
    assert!(screen.contains("name? "), "{screen}");
    tmux.send(&["C-t"]);
    tmux.wait_for("waiting for input · type, then Enter").await;
    tmux.type_text("Ada");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("hello, Ada").await;
    assert!(!screen.contains("waiting for input"), "{screen}");
    tmux.wait_for("Greeted.").await;
}
