//! Resuming shows everything: a saved session replayed as events (blocks with code,
//! decision, status and output tail), the workbench showing them, block ids that go on after
//! the old ones, the one Markdown exporter, and the migration that keeps what it needs.

use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use oi_tui::exec::{Language, RunResult, RunStatus};
use oi_tui::llm::Message;
use oi_tui::protocol::Event;
use oi_tui::store::{Recorder, Redactor, Store};
use oi_tui::tui::app::{App, Msg};
use oi_tui::tui::theme::{Depth, Theme};
use oi_tui::tui::view;

pub fn result(id: u64, status: RunStatus, exit: Option<i32>, output: &str) -> RunResult {
    RunResult {
        block_id: id,
        language: Language::Python,
        status,
        exit_code: exit,
        signal: None,
        duration: Duration::from_millis(420),
        output: output.to_string(),
        cut: None,
        output_bytes: output.len() as u64,
        state_lost: false,
        notes: Vec::new(),
        file: None,
        images: Vec::new(),
    }
}

fn proposed(id: u64, code: &str) -> Event {
    super::support::proposed_event(id, Language::Python, code)
}

fn started(id: u64, code: &str, edited: bool) -> Event {
    super::support::started_event(id, Language::Python, code, edited)
}

/// A session with a block that ran, one edited, one skipped with a reason, one that failed.
pub fn record_four_blocks(dir: &std::path::Path) -> String {
    let r = Recorder::start(Store::open(dir).unwrap(), None, Redactor::default());
    r.message(&Message::user("try four things"));
    r.message(&Message::assistant("Here is the first.", vec![]));
    r.event(&proposed(1, "print('one')"));
    r.event(&started(1, "print('one')", false));
    r.event(&Event::ExecFinished {
        block_id: 1,
        result: result(1, RunStatus::Success, Some(0), "one\n"),
    });
    r.message(&Message::assistant("Now an edit.", vec![]));
    r.event(&proposed(2, "print('two')"));
    r.event(&started(2, "print('TWO')", true));
    r.event(&Event::ExecFinished {
        block_id: 2,
        result: result(2, RunStatus::Success, Some(0), "TWO\n"),
    });
    r.message(&Message::assistant("A risky one.", vec![]));
    r.event(&proposed(3, "import shutil; shutil.rmtree('/')"));
    r.event(&Event::BlockSkipped {
        block_id: 3,
        reason: Some("too risky".into()),
    });
    r.message(&Message::assistant("And one that fails.", vec![]));
    r.event(&proposed(4, "raise SystemExit(3)"));
    r.event(&started(4, "raise SystemExit(3)", false));
    r.event(&Event::ExecFinished {
        block_id: 4,
        result: result(4, RunStatus::Failed, Some(3), "boom *bold* `tick`\n"),
    });
    r.message(&Message::assistant("That was all.", vec![]));
    r.flush();
    r.session_id().to_string()
}

/// A short name for each event, with what matters of it.
fn describe(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::UserMessage { text } => format!("you: {text}"),
            Event::AssistantMessage { text } => format!("oi: {text}"),
            Event::BlockProposed { block, .. } => format!("proposed {}: {}", block.id, block.code),
            Event::ExecStarted {
                block_id,
                code,
                edited,
                ..
            } => format!("started {block_id}: {code} edited={edited}"),
            Event::ExecOutput { block_id, data } => {
                format!("output {block_id}: {}", String::from_utf8_lossy(data))
            }
            Event::ExecFinished { block_id, result } => format!(
                "finished {block_id}: {:?} {:?}",
                result.status, result.exit_code
            ),
            Event::BlockSkipped { block_id, reason } => format!("skipped {block_id}: {reason:?}"),
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_saved_session_replays_as_the_events_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let id = record_four_blocks(dir.path());
    let store = Store::open(dir.path()).unwrap();
    let events = store.replay(&id).unwrap();
    assert_eq!(
        describe(&events),
        [
            "you: try four things",
            "oi: Here is the first.",
            "proposed 1: print('one')",
            "started 1: print('one') edited=false",
            "output 1: one\r\n",
            "finished 1: Success Some(0)",
            "oi: Now an edit.",
            "proposed 2: print('two')",
            "started 2: print('TWO') edited=true",
            "output 2: TWO\r\n",
            "finished 2: Success Some(0)",
            "oi: A risky one.",
            "proposed 3: import shutil; shutil.rmtree('/')",
            "skipped 3: Some(\"too risky\")",
            "oi: And one that fails.",
            "proposed 4: raise SystemExit(3)",
            "started 4: raise SystemExit(3) edited=false",
            "output 4: boom *bold* `tick`\r\n",
            "finished 4: Failed Some(3)",
            "oi: That was all.",
        ]
    );
    if let Some(Event::ExecFinished { result, .. }) = events.get(5) {
        assert_eq!(result.duration, Duration::from_millis(420));
        assert_eq!(result.output, "one\n");
    } else {
        panic!("the sixth event is the first block's end: {events:?}");
    }
}

#[test]
fn a_block_cut_off_by_a_crash_replays_as_interrupted_and_undo_drops_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("first"));
    r.message(&Message::assistant("ok", vec![]));
    r.event(&proposed(1, "print('kept')"));
    r.event(&started(1, "print('kept')", false));
    r.message(&Message::user("second"));
    r.message(&Message::assistant("sure", vec![]));
    r.event(&proposed(2, "print('undone')"));
    // /undo: the second exchange and its block leave the conversation.
    r.truncate(2);
    r.flush();
    let store = Store::open(dir.path()).unwrap();
    let events = store.replay(r.session_id()).unwrap();
    let text = describe(&events).join("\n");
    assert!(
        !text.contains("undone") && !text.contains("second"),
        "{text}"
    );
    match events.last() {
        Some(Event::ExecFinished { result, .. }) => {
            assert_eq!(result.status, RunStatus::Interrupted);
            assert!(result.notes.iter().any(|n| n == oi_tui::store::UNFINISHED));
        }
        other => panic!("the unfinished block ends the replay: {other:?}"),
    }
    // /reset: nothing is left to show.
    r.truncate(0);
    r.flush();
    assert!(store.replay(r.session_id()).unwrap().is_empty());
}

#[test]
fn a_resumed_session_numbers_new_blocks_after_the_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    let id = record_four_blocks(dir.path());
    let r = Recorder::start(
        Store::open(dir.path()).unwrap(),
        Some(id.clone()),
        Redactor::default(),
    );
    assert_eq!(r.first_block(), 5);
    r.event(&proposed(5, "print('five')"));
    r.flush();
    let store = Store::open(dir.path()).unwrap();
    let blocks = store.export(&id).unwrap().blocks;
    assert_eq!(blocks.len(), 5);
    assert_eq!(
        blocks[0].proposed_code, "print('one')",
        "the old block is kept"
    );
    let fresh = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    assert_eq!(fresh.first_block(), 1);
}

#[test]
fn migrating_from_version_two_keeps_skip_reasons_and_places_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(oi_tui::store::FILE);
    oi_tui::store::create_schema_v2(&path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('v2', 'old', 1, 9);
             INSERT INTO messages (session_id, role, content, created_at) VALUES ('v2', 'user', 'do it', 1);
             INSERT INTO messages (session_id, role, content, created_at) VALUES ('v2', 'assistant', 'two blocks', 2);
             INSERT INTO blocks (session_id, block_id, language, proposed_code, decision, status, output, created_at)
                 VALUES ('v2', 1, 'shell', 'rm -rf x', 'skipped', 'skipped', 'not today', 3);
             INSERT INTO blocks (session_id, block_id, language, proposed_code, decision, status, exit_code, output, created_at)
                 VALUES ('v2', 2, 'shell', 'ls', 'run', 'ran', 0, 'a.txt', 4);
             INSERT INTO messages (session_id, role, content, created_at) VALUES ('v2', 'assistant', 'done', 5);",
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let exported = store.export("v2").unwrap();
    assert_eq!(exported.blocks[0].skip_reason.as_deref(), Some("not today"));
    assert_eq!(exported.blocks[0].output, None);
    let text = describe(&store.replay("v2").unwrap()).join("\n");
    assert_eq!(
        text,
        "you: do it\noi: two blocks\nproposed 1: rm -rf x\nskipped 1: Some(\"not today\")\nproposed 2: ls\nstarted 2: ls edited=false\noutput 2: a.txt\r\n\nfinished 2: Success Some(0)\noi: done"
    );
}

#[test]
fn the_markdown_export_has_every_block_and_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let id = record_four_blocks(dir.path());
    let store = Store::open(dir.path()).unwrap();
    let md = store.export(&id).unwrap().markdown();
    for needle in [
        "## You\n\ntry four things",
        "```python\nprint('one')\n```",
        "*block 1 · run · ran · exit 0 · 0.42 s*",
        "```text\none\n```",
        "```python\nprint('two')\n```",
        "```python\nprint('TWO')\n```",
        "*block 2 · edited, then run · ran · exit 0 · 0.42 s*",
        "*block 3 · skipped: too risky*",
        "*block 4 · run · failed · exit 3 · 0.42 s*",
        "```text\nboom *bold* `tick`\n```",
        "## oi-tui\n\nThat was all.",
    ] {
        assert!(md.contains(needle), "{needle:?} in:\n{md}");
    }
    // The blocks come in the order they happened.
    let at = |s: &str| md.find(s).unwrap();
    assert!(at("Here is the first.") < at("print('one')"));
    assert!(at("print('one')") < at("Now an edit."));
    assert!(at("And one that fails.") < at("raise SystemExit(3)"));
    // Every italic line opens and closes on a non-space, with nothing unescaped inside.
    for line in md.lines().filter(|l| l.starts_with('*')) {
        let inner = &line[1..line.len() - 1];
        assert!(line.ends_with('*') && !inner.starts_with(' ') && !inner.ends_with(' '));
        let unescaped = inner
            .char_indices()
            .any(|(i, c)| (c == '*' || c == '_') && !inner[..i].ends_with('\\'));
        assert!(!unescaped, "{line}");
    }
}

#[test]
fn code_with_backtick_fences_inside_gets_a_longer_fence() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("markdown in code"));
    let code = "print('''\n```\nnot the end\n```\n''')";
    r.event(&proposed(1, code));
    r.event(&Event::BlockSkipped {
        block_id: 1,
        reason: Some(" spaces around *and* _marks_ ".into()),
    });
    r.flush();
    let md = Store::open(dir.path())
        .unwrap()
        .export(r.session_id())
        .unwrap()
        .markdown();
    assert!(
        md.contains(&format!("````python\n{code}\n````")),
        "a four-backtick fence:\n{md}"
    );
    assert!(
        md.contains("*block 1 · skipped: spaces around \\*and\\* \\_marks\\_*"),
        "{md}"
    );
}

fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let areas = view::layout(Rect::new(0, 0, width, height), app);
    terminal.draw(|f| view::draw(f, app, &areas)).unwrap();
    terminal.backend().to_string()
}

#[test]
fn the_workbench_shows_a_resumed_session_through_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let id = record_four_blocks(dir.path());
    let events = Store::open(dir.path()).unwrap().replay(&id).unwrap();
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    app.resumed(&events, "Resumed session.".into());
    assert!(app.pending.is_none());
    assert_eq!(app.busy, oi_tui::tui::app::Busy::Idle);
    assert!(!app.in_turn);
    let text = screen(&app, 160, 48);
    for needle in [
        "try four things",
        "print('one')",
        "print('two')  ran · exit 0 · 0.42 s · edited",
        "TWO",
        "skipped · too",
        "raise SystemExit(3)",
        "exit 3",
        "boom *bold*",
        "That was all.",
        "Resumed session.",
    ] {
        assert!(text.contains(needle), "{needle:?}:\n{text}");
    }
    // Nothing waits and nothing runs: a key goes to the input.
    let effects = app.update(Msg::Key(crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Char('y'),
        crossterm::event::KeyModifiers::NONE,
    )));
    assert!(effects.is_empty(), "{effects:?}");
}

fn oi_tui_command(dir: &std::path::Path, base: &str, extra: &str) -> String {
    format!(
        "cd '{dir}' && XDG_CONFIG_HOME='{dir}/config' '{bin}' --model openai/scripted --api-base {base} --data-dir '{dir}/data' {extra}",
        dir = dir.display(),
        bin = env!("CARGO_BIN_EXE_oi-tui"),
    )
}

async fn sessions_list(dir: &std::path::Path) -> String {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["sessions", "list"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_and_quitting_keeps_no_session() {
    let server = super::model_server::ModelServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    // The second run takes the screen at once: the first one's status goes to a file.
    let status = dir.path().join("first-status");
    let command = format!(
        "{}; echo $? > '{}'; {}; echo SECOND=$?; sleep 30",
        oi_tui_command(dir.path(), &server.base("openai"), ""),
        status.display(),
        oi_tui_command(dir.path(), &server.base("openai"), "--demo"),
    );
    let tmux = super::tmux::Tmux::start(&command, 120, 30);
    tmux.wait_for("Input").await;
    tmux.send(&["C-q"]);
    tmux.wait_for("oi-tui demo").await;
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0");
    tmux.send(&["C-q"]);
    tmux.wait_for("SECOND=0").await;
    assert_eq!(sessions_list(dir.path()).await.trim(), "No sessions yet.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_shows_the_blocks_code_and_output_and_export_has_them() {
    let server = super::model_server::ModelServer::start(vec![
        super::model_server::Reply::text("Printing.")
            .and_tool("python", "print('resumed-' + 'output-' + str(6 * 7))"),
        super::model_server::Reply::text("Printed it."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let exported = dir.path().join("out.md");
    let status = dir.path().join("first-status");
    let command = format!(
        "{}; echo $? > '{}'; {}; sleep 30",
        oi_tui_command(dir.path(), &server.base("openai"), ""),
        status.display(),
        oi_tui_command(dir.path(), &server.base("openai"), "--resume last"),
    );
    let tmux = super::tmux::Tmux::start(&command, 140, 40);
    tmux.wait_for("Input").await;
    tmux.type_text("print the answer");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("Printed it.").await;
    tmux.type_text(&format!("/export {}", exported.display()));
    tmux.send(&["Enter"]);
    tmux.wait_for("exported the conversation").await;
    let md = std::fs::read_to_string(&exported).unwrap();
    for needle in [
        "## You\n\nprint the answer",
        "```python\nprint('resumed-' + 'output-' + str(6 * 7))\n```",
        "*block 1 · run · ran · exit 0",
        "```text\nresumed-output-42\n```",
        "Printed it.",
    ] {
        assert!(md.contains(needle), "{needle:?} in:\n{md}");
    }
    tmux.send(&["C-q"]);
    // The second run takes the screen at once: the first one's status is in a file.
    let screen = tmux.wait_for("Resumed session").await;
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0");
    assert!(
        screen.contains("print('resumed-' + 'output-' + str(6 * 7))"),
        "the block's code line:\n{screen}"
    );
    assert!(
        screen.contains("│resumed-output-42"),
        "the block's output tail in the terminal pane:\n{screen}"
    );
    assert!(screen.contains("print the answer") && screen.contains("Printed it."));
    // Nothing ran again: the model was asked twice, in the first run only.
    assert_eq!(server.chats().len(), 2);
}
