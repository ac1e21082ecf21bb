//! The session store: crash safety with the real binary, two writers, migrations, a corrupt
//! or newer file, search, JSON round trips, resume, redaction, and the `sessions` commands.

use std::process::Stdio;
use std::time::Duration;

use oi_tui::llm::Message;
use oi_tui::protocol::{Event, ProposedBlock};
use oi_tui::store::{Exported, Recorder, Redactor, Store, StoreError};

use super::model_server::{ModelServer, Reply};

fn bin() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

async fn task(
    server: &ModelServer,
    data: &std::path::Path,
    text: &str,
    extra: &[&str],
) -> std::process::Output {
    bin()
        .args([
            "--task",
            text,
            "--model",
            "openai/scripted",
            "--api-base",
            &server.base("openai"),
            "-y",
        ])
        .arg("--data-dir")
        .arg(data)
        .args(extra)
        .output()
        .await
        .expect("run")
}

async fn sessions(data: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let out = bin()
        .arg("--data-dir")
        .arg(data)
        .arg("sessions")
        .args(args)
        .output()
        .await
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_the_middle_of_a_block_loses_no_finished_step() {
    let server = ModelServer::start(vec![
        Reply::text("First a quick one.").and_tool("python", "print('step one done')"),
        Reply::tool("shell", "echo step-two-started; sleep 100"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut child = bin()
        .args([
            "--task",
            "two steps",
            "--model",
            "openai/scripted",
            "--api-base",
            &server.base("openai"),
            "-y",
            "--json",
        ])
        .arg("--data-dir")
        .arg(&data)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    super::support::read_until(&mut stdout, "step-two-started").await;
    // What is on screen has been handed to the writer; give its thread a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();

    let store = Store::open(&data).unwrap();
    let id = store.resolve("last").unwrap();
    let session = store.export(&id).unwrap();
    assert_eq!(session.session.title, "two steps");
    let roles: Vec<&str> = session.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert!(session.messages[2].content.contains("step one done"));
    assert_eq!(session.blocks.len(), 2);
    assert_eq!(session.blocks[0].status.as_deref(), Some("ran"));
    assert!(
        session.blocks[0]
            .output
            .as_deref()
            .unwrap()
            .contains("step one done")
    );
    assert_eq!(
        session.blocks[1].decision, "run",
        "the running block was recorded as started"
    );
    assert_eq!(session.blocks[1].status, None);
}

#[test]
fn two_writers_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let recorders: Vec<Recorder> = (0..2)
        .map(|_| Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default()))
        .collect();
    for i in 0..200 {
        for (n, r) in recorders.iter().enumerate() {
            r.message(&Message::user(format!("writer {n} message {i}")));
        }
    }
    for r in &recorders {
        r.flush();
    }
    let store = Store::open(dir.path()).unwrap();
    let rows = store.list(10, 0).unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row.messages, 200, "{row:?}");
    }
}

#[test]
fn migrates_from_empty_and_from_version_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.count().unwrap(), 0);
    drop(store);

    let old = tempfile::tempdir().unwrap();
    let path = old.path().join(oi_tui::store::FILE);
    oi_tui::store::create_schema_v1(&path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO sessions (id, title, created_at, updated_at) VALUES ('old-1', 'an old one', 1, 2);
             INSERT INTO messages (session_id, role, content, created_at) VALUES ('old-1', 'user', 'find the zeppelin', 1);
             INSERT INTO blocks (session_id, block_id, language, proposed_code, output, created_at) VALUES ('old-1', 1, 'shell', 'ls', 'airship.txt', 1);",
        )
        .unwrap();
    }
    let store = Store::open(old.path()).unwrap();
    let hits = store.search("zeppelin", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session.id, "old-1");
    assert_eq!(
        store.search("airship", 10).unwrap().len(),
        1,
        "old output is searchable"
    );
}

#[test]
fn a_corrupt_or_newer_file_is_a_clear_error_and_stays_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(oi_tui::store::FILE);
    let junk = b"this is not a database, just some bytes that happen to be here".repeat(100);
    std::fs::write(&path, &junk).unwrap();
    let err = Store::open(dir.path()).err().expect("an error");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("--data-dir") && message.contains("untouched"),
        "{message}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), junk);

    let newer = tempfile::tempdir().unwrap();
    drop(Store::open(newer.path()).unwrap());
    let path = newer.path().join(oi_tui::store::FILE);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE schema_version SET version = 99", [])
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    let err = Store::open(newer.path()).err().expect("an error");
    assert!(err.to_string().contains("newer oi-tui (schema 99"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

fn record_session(dir: &std::path::Path, title: &str, code: &str, output: &str) -> String {
    let r = Recorder::start(Store::open(dir).unwrap(), None, Redactor::default());
    r.message(&Message::user(title));
    r.event(&Event::BlockProposed {
        block: ProposedBlock {
            id: 1,
            language_tag: "python".into(),
            language: Some(oi_tui::exec::Language::Python),
            code: code.into(),
            caller: None,
            tool: None,
        },
        index: 1,
        of: 1,
        verdict: None,
        gate: None,
        allow: None,
    });
    r.message(&Message::assistant(output, vec![]));
    r.flush();
    r.session_id().to_string()
}

#[test]
fn search_finds_the_right_sessions_with_snippets() {
    let dir = tempfile::tempdir().unwrap();
    let a = record_session(
        dir.path(),
        "plot the sales",
        "import matplotlib",
        "Here is the chart of monthly revenue",
    );
    let b = record_session(
        dir.path(),
        "clean the logs",
        "rm -rf /tmp/logs",
        "Removed 12 log files",
    );
    let store = Store::open(dir.path()).unwrap();
    let hits = store.search("revenue", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].session.id, a);
    assert!(hits[0].snippet.contains("«revenue»"), "{}", hits[0].snippet);
    let hits = store.search("matplot", 10).unwrap();
    assert_eq!(hits[0].session.id, a, "prefixes match, code is indexed");
    let hits = store.search("logs", 10).unwrap();
    assert_eq!(
        hits.iter()
            .map(|h| h.session.id.clone())
            .collect::<Vec<_>>(),
        vec![b]
    );
    assert!(
        store.search("\"unbalanced (", 10).is_ok(),
        "any input is a valid query"
    );
}

#[test]
fn a_json_export_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let id = record_session(dir.path(), "round trip", "print(1)", "done");
    let store = Store::open(dir.path()).unwrap();
    let exported = store.export(&id).unwrap();
    let json = serde_json::to_string_pretty(&exported).unwrap();
    let back: Exported = serde_json::from_str(&json).unwrap();
    assert_eq!(back, exported);
    assert_eq!(serde_json::to_string_pretty(&back).unwrap(), json);
}

#[test]
fn api_keys_never_reach_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let redactor = Redactor::new(
        vec![(
            "OPENAI_API_KEY".to_string(),
            "sk-live-abcdef123456".to_string(),
        )],
        &["configured-key-9876"],
    );
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, redactor);
    r.message(&Message::user(
        "my key is sk-live-abcdef123456 and configured-key-9876",
    ));
    r.flush();
    let store = Store::open(dir.path()).unwrap();
    let id = store.resolve("last").unwrap();
    let text = serde_json::to_string(&store.export(&id).unwrap()).unwrap();
    assert!(
        !text.contains("sk-live") && !text.contains("configured-key"),
        "{text}"
    );
    assert!(text.contains("[REDACTED]"));
    let raw = std::fs::read(dir.path().join(oi_tui::store::FILE)).unwrap();
    assert!(!raw.windows(7).any(|w| w == b"sk-live"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_carries_the_earlier_messages_into_the_next_request() {
    let server = ModelServer::start(vec![
        Reply::text("Noted: 4217."),
        Reply::text("It was 4217."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = task(&server, dir.path(), "remember the number 4217", &[]).await;
    assert!(out.status.success(), "{out:?}");
    let out = task(&server, dir.path(), "what was the number?", &["--resume"]).await;
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Resumed session") && stderr.contains("not restored"),
        "{stderr}"
    );
    let second = server.chats()[1].all_text();
    assert!(
        second.contains("remember the number 4217") && second.contains("Noted: 4217."),
        "{second}"
    );
    // Both turns went to the one session.
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.count().unwrap(), 1);
    let id = store.resolve("last").unwrap();
    assert_eq!(store.session(&id).unwrap().messages, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sessions_commands() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "echo the-unicorn-is-here"),
        Reply::text("found it"),
        Reply::text("a second session"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    assert!(
        task(&server, dir.path(), "look for the unicorn", &[])
            .await
            .status
            .success()
    );
    assert!(
        task(&server, dir.path(), "another thing", &[])
            .await
            .status
            .success()
    );

    let (code, list, _) = sessions(dir.path(), &["list"]).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("another thing"), "newest first: {list}");
    let (_, json, _) = sessions(dir.path(), &["list", "--json", "--limit", "1"]).await;
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1);

    let (_, found, _) = sessions(dir.path(), &["search", "unicorn"]).await;
    assert!(
        found.contains("look for the unicorn") && found.contains("«the-unicorn-is-here»"),
        "{found}"
    );
    let id = found.split_whitespace().next().unwrap().to_string();
    let prefix = &id[..id.len() - 3];

    let (code, shown, _) = sessions(dir.path(), &["show", prefix]).await;
    assert_eq!(code, 0);
    assert!(
        shown.contains("# look for the unicorn") && shown.contains("the-unicorn-is-here"),
        "{shown}"
    );

    let out = dir.path().join("export.json");
    let (code, _, _) = sessions(
        dir.path(),
        &[
            "export",
            prefix,
            "--format",
            "json",
            "-o",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(code, 0);
    let exported: Exported = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(exported.session.id, id);

    let (code, _, err) = sessions(dir.path(), &["show", "nope"]).await;
    assert_eq!(code, 1);
    assert!(err.contains("no session matches `nope`"), "{err}");

    let (code, _, _) = sessions(dir.path(), &["delete", &id]).await;
    assert_eq!(code, 0);
    let (_, list, _) = sessions(dir.path(), &["list"]).await;
    assert_eq!(list.lines().count(), 1);
    let (_, found, _) = sessions(dir.path(), &["search", "unicorn"]).await;
    assert!(
        found.contains("Nothing matches"),
        "deleted sessions leave the index: {found}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_in_the_workbench_searches_previews_and_resumes() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "echo the-purple-giraffe"),
        Reply::text("Found the purple giraffe."),
        Reply::text("Nothing to see."),
        Reply::text("It was purple."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    assert!(
        task(&server, &data, "find the giraffe", &[])
            .await
            .status
            .success()
    );
    assert!(
        task(&server, &data, "unrelated errand", &[])
            .await
            .status
            .success()
    );

    let command = format!(
        "cd '{dir}' && XDG_CONFIG_HOME='{dir}/config' '{bin}' --model openai/scripted --api-base {base} --data-dir '{data}' --sessions; sleep 30",
        dir = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_oi-tui"),
        base = server.base("openai"),
        data = data.display(),
    );
    let tmux = super::tmux::Tmux::start(&command, 160, 40);
    let screen = tmux.wait_for("2 sessions").await;
    assert!(
        screen.contains("unrelated errand") && screen.contains("find the giraffe"),
        "{screen}"
    );
    // Typing searches; the match shows in a snippet and the preview.
    tmux.type_text("giraffe");
    tmux.wait_for("1 matching").await;
    let screen = tmux.wait_for("# find the giraffe").await;
    assert!(
        screen.contains("the-purple-giraffe"),
        "the preview shows the transcript:\n{screen}"
    );
    tmux.send(&["Enter"]);
    tmux.wait_for("Esc back").await;
    tmux.send(&["C-r"]);
    tmux.wait_for("Resumed session").await;
    tmux.type_text("what colour was it?");
    tmux.send(&["Enter"]);
    tmux.wait_for("It was purple.").await;
    let last = server.chats().last().unwrap().all_text();
    assert!(
        last.contains("find the giraffe") && last.contains("Found the purple giraffe."),
        "{last}"
    );
    assert!(last.contains("what colour was it?"));
    assert!(
        !last.contains("unrelated errand"),
        "only the resumed session messages: {last}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_share_one_store() {
    let server = ModelServer::start(
        (0..6)
            .map(|i| Reply::text(&format!("answer {i}")))
            .collect(),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (a, b, c) = tokio::join!(
        task(&server, dir.path(), "first process", &[]),
        task(&server, dir.path(), "second process", &[]),
        task(&server, dir.path(), "third process", &[]),
    );
    for out in [a, b, c] {
        assert!(out.status.success(), "{out:?}");
    }
    let store = Store::open(dir.path()).unwrap();
    let rows = store.list(10, 0).unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.messages == 2), "{rows:?}");
    let (code, _, _) = sessions(dir.path(), &["rename", &rows[0].id, "a", "better", "title"]).await;
    assert_eq!(code, 0);
    assert_eq!(store.session(&rows[0].id).unwrap().title, "a better title");
}
