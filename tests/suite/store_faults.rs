//! The store never loses a session in silence: a full disk and a read-only store are said at
//! once and make a headless run fail (or recover when space returns), and `kill -9` keeps
//! what was on screen (a running block's output, a reply that was streaming), marked as
//! interrupted. All with the real binary.
//!
//! The full disk is a small tmpfs and the read-only file a read-only bind mount, both in a
//! user and mount namespace (`unshare -rm`), which works as root and as a normal user
//! (chmod 0400 does not stop root). Where the machine cannot make such a namespace, the
//! tests fail with a message that says so: they are not skipped.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use oi_tui::store::Store;

use super::model_server::{ModelServer, Reply};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_oi-tui")
}

/// Runs `script` with sh in a new user and mount namespace, with `BIN`, `DATA`, `OUT` and
/// `BASE` set; returns its exit status.
async fn in_namespace(script: &str, data: &Path, out: &Path, bases: &[String]) -> i32 {
    let status = tokio::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", script])
        .env("BIN", bin())
        .env("DATA", data)
        .env("OUT", out)
        .env("BASE", &bases[0])
        .env("BASE2", bases.get(1).unwrap_or(&bases[0]))
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .expect("unshare runs (util-linux)");
    status.code().unwrap_or(-1)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_is_said_at_once_fails_the_run_and_recovers_when_space_returns() {
    // The first run: the disk is full from the start (it may stop before it asks).
    let first = ModelServer::start(vec![
        Reply::tool("shell", "echo first-run-output"),
        Reply::text("Done with the first."),
    ])
    .await;
    // The second: the disk fills while a block runs, and space returns.
    let second = ModelServer::start(vec![
        Reply::tool("shell", "sleep 2; echo second-run-output; sleep 3"),
        Reply::text("Done with the second."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let script = r#"
        mount -t tmpfs -o size=2m tmpfs "$DATA" || exit 90
        "$BIN" --data-dir "$DATA" sessions list >/dev/null 2>&1 || exit 91
        dd if=/dev/zero of="$DATA/filler" bs=4096 >/dev/null 2>&1
        "$BIN" --task "first run" --model openai/scripted --api-base "$BASE" -y --data-dir "$DATA" >"$OUT/out1" 2>"$OUT/err1" </dev/null
        echo $? >"$OUT/rc1"
        rm -f "$DATA/filler"
        "$BIN" --task "second run" --model openai/scripted --api-base "$BASE2" -y --data-dir "$DATA" >"$OUT/out2" 2>"$OUT/err2" </dev/null &
        pid=$!
        sleep 1
        dd if=/dev/zero of="$DATA/filler" bs=4096 >/dev/null 2>&1
        i=0
        while ! grep -q "cannot be saved" "$OUT/err2" && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
        sleep 0.3
        rm -f "$DATA/filler"
        wait $pid
        echo $? >"$OUT/rc2"
        "$BIN" --data-dir "$DATA" sessions show last >"$OUT/show2" 2>&1
    "#;
    let bases = [first.base("openai"), second.base("openai")];
    let status = in_namespace(script, &data, &out, &bases).await;
    assert_ne!(
        status, 90,
        "this machine cannot mount a tmpfs in a user namespace (unshare -rm): the full-disk case cannot be tested here"
    );
    assert_eq!(status, 0, "the script failed ({status})");

    let err1 = read(&out, "err1");
    assert_ne!(
        read(&out, "rc1").trim(),
        "0",
        "a run that saved nothing exited 0: {err1}"
    );
    assert!(err1.contains("disk is full"), "the cause is named: {err1}");
    assert!(
        err1.contains("could not be saved") || err1.contains("cannot be written"),
        "{err1}"
    );

    let err2 = read(&out, "err2");
    assert!(
        err2.contains("cannot be saved") && err2.contains("disk is full"),
        "the first failed write is said at once: {err2} (status {}, out {}, store {})",
        read(&out, "rc2"),
        read(&out, "out2"),
        read(&out, "show2")
    );
    assert!(err2.contains("saved again"), "and its end: {err2}");
    assert_eq!(
        read(&out, "rc2").trim(),
        "0",
        "everything was written in the end: {err2}"
    );
    let show = read(&out, "show2");
    assert!(show.contains("second run"), "{show}");
    assert!(show.contains("second-run-output"), "{show}");
    assert!(show.contains("Done with the second."), "{show}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_store_is_named_so_and_can_still_be_read() {
    let server = ModelServer::start(vec![Reply::text("Hello from the first run.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let script = r#"
        "$BIN" --task "the first run" --model openai/scripted --api-base "$BASE" -y --data-dir "$DATA" >/dev/null 2>"$OUT/err0" </dev/null || exit 91
        # The file read-only, its directory (where the WAL goes) writable.
        mount --bind "$DATA/sessions.db" "$DATA/sessions.db" || exit 90
        mount -o remount,bind,ro "$DATA/sessions.db" || exit 90
        "$BIN" --task "the second run" --model openai/scripted --api-base "$BASE" -y --data-dir "$DATA" >"$OUT/out1" 2>"$OUT/err1" </dev/null
        echo $? >"$OUT/rc1"
        "$BIN" --data-dir "$DATA" sessions list >"$OUT/list" 2>"$OUT/list_err"
        echo $? >"$OUT/list_rc"
        "$BIN" --data-dir "$DATA" sessions delete last >/dev/null 2>"$OUT/delete_err"
        echo $? >"$OUT/delete_rc"
    "#;
    let status = in_namespace(script, &data, &out, &[server.base("openai")]).await;
    assert_ne!(
        status, 90,
        "this machine cannot bind-mount a file read-only in a user namespace: the read-only case cannot be tested here"
    );
    assert_eq!(status, 0, "the script failed: {}", read(&out, "err0"));

    let err1 = read(&out, "err1");
    assert_ne!(read(&out, "rc1").trim(), "0", "{err1}");
    assert!(err1.contains("is read-only"), "named as read-only: {err1}");
    assert!(!err1.contains("not a readable"), "{err1}");
    assert!(
        server.chats().len() == 1,
        "the second run stopped before it asked the model anything"
    );

    assert_eq!(
        read(&out, "list_rc").trim(),
        "0",
        "{}",
        read(&out, "list_err")
    );
    assert!(
        read(&out, "list").contains("the first run"),
        "a read-only store is still listed: {}",
        read(&out, "list")
    );
    let delete_err = read(&out, "delete_err");
    assert_ne!(read(&out, "delete_rc").trim(), "0");
    assert!(delete_err.contains("is read-only"), "{delete_err}");
}

/// Starts a headless run with `--json`, waits until its output holds `needle`, lets the
/// batch reach the disk, and kills it with SIGKILL.
async fn kill_9_when(server: &ModelServer, data: &Path, task: &str, needle: &str) {
    let mut child = tokio::process::Command::new(bin())
        .args([
            "--task",
            task,
            "--model",
            "openai/scripted",
            "--api-base",
            &server.base("openai"),
            "-y",
            "--json",
        ])
        .arg("--data-dir")
        .arg(data)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    super::support::read_until(&mut stdout, needle).await;
    // Batches are written at least every 200 ms.
    tokio::time::sleep(Duration::from_millis(400)).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

async fn show_last(data: &PathBuf) -> String {
    let out = tokio::process::Command::new(bin())
        .arg("--data-dir")
        .arg(data)
        .args(["sessions", "show", "last"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_block_keeps_what_it_printed_and_marks_it_interrupted() {
    let server = ModelServer::start(vec![Reply::tool(
        "python",
        "import time\nprint('half' + '-way-there', flush=True)\ntime.sleep(100)",
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    kill_9_when(&server, &data, "print then wait", "half-way-there").await;

    let show = show_last(&data).await;
    assert!(
        show.contains("half-way-there"),
        "the printed line is kept: {show}"
    );
    assert!(
        show.contains("interrupted: oi-tui stopped while it ran"),
        "the block is marked: {show}"
    );
    let store = Store::open(&data).unwrap();
    let id = store.resolve("last").unwrap();
    let session = store.export(&id).unwrap();
    assert_eq!(session.blocks.len(), 1);
    assert!(session.blocks[0].interrupted);
    assert!(
        session.blocks[0]
            .tail
            .as_deref()
            .is_some_and(|t| t.contains("half-way-there")),
        "{:?}",
        session.blocks[0]
    );
    // The resumed session shows it the same way.
    let replay = store.replay(&id).unwrap();
    let finished = replay
        .iter()
        .find_map(|e| match e {
            oi_tui::protocol::Event::ExecFinished { result, .. } => Some(result.clone()),
            _ => None,
        })
        .expect("the block ends in the replay");
    assert!(finished.output.contains("half-way-there"), "{finished:?}");
    assert!(
        finished.notes.iter().any(|n| n.contains("interrupted")),
        "{finished:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_reply_keeps_the_text_that_came_as_partial() {
    let text = "The first sentence arrives. Then a second-sentence-marker, and then the model goes on for a long while without end ".repeat(20);
    let server = ModelServer::start(vec![Reply::text(&text).slow(Duration::from_millis(40))]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    kill_9_when(&server, &data, "say something long", "marker").await;

    let store = Store::open(&data).unwrap();
    let id = store.resolve("last").unwrap();
    let session = store.export(&id).unwrap();
    let reply = session
        .messages
        .iter()
        .find(|m| m.role == "assistant")
        .expect("the partial reply is stored");
    assert!(reply.partial, "{reply:?}");
    assert!(
        reply.content.contains("second-sentence-marker"),
        "what was on screen is there: {reply:?}"
    );
    assert!(reply.content.len() < text.len(), "{reply:?}");
    let show = show_last(&data).await;
    assert!(show.contains("partial"), "{show}");
    assert!(show.contains("The first sentence arrives."), "{show}");
}

#[test]
fn live_output_reaches_the_store_within_a_batch_and_goes_when_the_block_ends() {
    use oi_tui::llm::Message;
    use oi_tui::protocol::{Event, Language};
    use oi_tui::store::{Recorder, Redactor};
    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    recorder.message(&Message::user("count".to_string()));
    recorder.event(&Event::ExecStarted {
        block_id: 1,
        language: Language::Shell,
        code: "seq 3".to_string(),
        edited: false,
    });
    recorder.event(&Event::ExecOutput {
        block_id: 1,
        data: b"line-one\r\nline-two\r\n".to_vec(),
    });
    // No flush: the batch is written on its own within 200 ms.
    std::thread::sleep(Duration::from_millis(500));
    let reader = Store::open(dir.path()).unwrap();
    let session = reader.export(recorder.session_id()).unwrap();
    let block = &session.blocks[0];
    assert!(block.interrupted, "{block:?}");
    assert!(
        block
            .tail
            .as_deref()
            .is_some_and(|t| t.contains("line-two")),
        "{block:?}"
    );
    let health = recorder.flush();
    assert!(health.all_saved(), "{health:?}");
}

#[test]
fn the_workbench_shows_store_trouble_until_the_store_recovers() {
    use oi_tui::protocol::Event;
    use oi_tui::tui::app::Msg;
    let mut app = super::tui_states::fresh();
    let before = super::tui_states::screen(&mut app, 100, 24);
    assert!(!before.contains("NOT SAVED"), "{before}");
    app.update(Msg::Engine(Event::StoreTrouble {
        message: format!(
            "{}the disk is full. oi-tui keeps 2 steps in memory and tries again (the store: /data/sessions.db).",
            oi_tui::store::CANNOT_SAVE
        ),
        unsaved: 2,
    }));
    // At 80 columns too, the banner says why before anything else.
    let trouble = super::tui_states::screen(&mut app, 80, 24);
    let last = trouble
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        last.contains("NOT SAVED: the disk is full"),
        "a banner on the bottom line: {trouble}"
    );
    // It stays through other events.
    app.update(Msg::Engine(Event::Notice {
        message: "something else".into(),
    }));
    assert!(super::tui_states::screen(&mut app, 100, 24).contains("NOT SAVED"));
    app.update(Msg::Engine(Event::StoreRecovered {
        message: "The session is being saved again; nothing was lost.".into(),
    }));
    let after = super::tui_states::screen(&mut app, 100, 24);
    assert!(!after.contains("NOT SAVED"), "{after}");
    assert!(after.contains("saved again"), "{after}");
    assert_eq!(app.exit_report(), None, "recovered: nothing to say on exit");
}

#[test]
fn closing_the_workbench_with_trouble_says_it_after_the_screen_is_gone() {
    use oi_tui::protocol::Event;
    use oi_tui::tui::app::Msg;
    let mut app = super::tui_states::fresh();
    assert_eq!(app.exit_report(), None);
    app.update(Msg::Engine(Event::StoreTrouble {
        message: format!(
            "{}the disk is full. oi-tui keeps 2 steps in memory and tries again (the store: /data/sessions.db).",
            oi_tui::store::CANNOT_SAVE
        ),
        unsaved: 2,
    }));
    let report = app.exit_report().expect("a report");
    assert!(
        report.contains("not saved whole") && report.contains("disk is full"),
        "{report}"
    );
}

#[test]
fn the_workbench_says_what_a_failed_write_keeps_and_that_it_tries_again() {
    use oi_tui::exec::Language;
    use oi_tui::llm::Message;
    use oi_tui::protocol::Event;
    use oi_tui::store::{Recorder, Redactor};
    use oi_tui::tui::app::Msg;
    let dir = tempfile::tempdir().unwrap();
    let recorder = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    let (tell, heard) = std::sync::mpsc::channel();
    recorder.set_listener(move |event| {
        let _ = tell.send(event);
    });
    recorder.message(&Message::user("run something".to_string()));
    assert!(recorder.flush().all_saved());
    // Every later write fails, as on a full disk.
    rusqlite::Connection::open(dir.path().join(oi_tui::store::FILE))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER refuse BEFORE INSERT ON blocks BEGIN SELECT RAISE(ABORT, 'no room left'); END;",
        )
        .unwrap();
    recorder.event(&Event::ExecStarted {
        block_id: 1,
        language: Language::Shell,
        code: "echo hi".to_string(),
        edited: false,
    });
    let trouble = heard.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(matches!(trouble, Event::StoreTrouble { .. }), "{trouble:?}");

    let mut app = super::tui_states::fresh();
    app.update(Msg::Engine(trouble));
    let screen = super::tui_states::screen(&mut app, 200, 30);
    let last = screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    assert!(
        last.contains("NOT SAVED: no room left"),
        "the banner names the cause: {screen}"
    );
    // The chat says what is kept, that the run goes on, and when it is tried again.
    let said: String = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        said.contains("keeps 1 step (1 decision) in memory and the run goes on"),
        "{screen}"
    );
    assert!(said.contains("tries again in"), "{screen}");
    let report = app.exit_report().expect("a report on exit");
    assert!(report.contains("marked incomplete"), "{report}");
}
