//! A damaged store is said, not hidden, and `oi-tui sessions repair` rebuilds it from what
//! can be read: a damaged search index loses nothing, a damaged page of a table loses only
//! the rows on it (and says which table), and nothing is done while another oi-tui uses the
//! store. With the real binary, on files damaged the way a failing disk damages them: a
//! page overwritten with garbage.

use std::path::Path;

use super::model_server::{ModelServer, Reply};

fn bin() -> tokio::process::Command {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
}

async fn run(data: &Path, args: &[&str]) -> (i32, String, String) {
    let out = bin()
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

async fn task(server: &ModelServer, data: &Path, text: &str) -> (i32, String, String) {
    let base = server.base("openai");
    run(
        data,
        &[
            "-y",
            "--task",
            text,
            "--model",
            "openai/scripted",
            "--api-base",
            &base,
        ],
    )
    .await
}

/// Overwrites page `page` (from 1) of the store with garbage.
fn damage_page(db: &Path, page: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let size = page_size(db);
    let mut file = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    file.seek(SeekFrom::Start((page - 1) * size)).unwrap();
    let mut garbage = vec![0xffu8; size as usize];
    garbage[0] = 0x0d;
    file.write_all(&garbage).unwrap();
}

fn page_size(db: &Path) -> u64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as u64
}

fn root_page(db: &Path, table: &str) -> u64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT rootpage FROM sqlite_master WHERE name = ?1",
        [table],
        |r| r.get::<_, i64>(0),
    )
    .unwrap() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_search_index_is_said_and_repair_brings_every_session_back() {
    let server = ModelServer::start(vec![
        Reply::text("Printing it.").and_tool("shell", "echo the-blue-heron"),
        Reply::text("The first is done."),
        Reply::text("The second answer."),
        Reply::text("The third answer."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, stderr) = task(&server, &data, "the first errand").await;
    assert_eq!(code, 0, "{stderr}");
    let db = data.join("sessions.db");
    damage_page(&db, root_page(&db, "search_data"));

    // The damage is said at once, the run fails, and the way out is named.
    let (code, stdout, stderr) = task(&server, &data, "the second errand").await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.contains("the store is damaged") && stderr.contains("oi-tui sessions repair"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&data, &["sessions", "search", "heron"]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("oi-tui sessions repair"), "{stderr}");

    let (code, stdout, stderr) = run(&data, &["sessions", "repair"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("kept 1 session, ") && stdout.contains("search index was rebuilt"),
        "{stdout}"
    );
    assert!(!stdout.contains("could not be read"), "{stdout}");
    let damaged: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sessions.db.before-repair-"))
        .collect();
    assert_eq!(damaged.len(), 1, "the file as it was is kept: {damaged:?}");
    assert!(stdout.contains(&damaged[0]), "{stdout}");

    // Search finds the output again, and the store takes new sessions.
    let (code, stdout, _) = run(&data, &["sessions", "search", "heron"]).await;
    assert_eq!(code, 0);
    assert!(stdout.contains("the first errand"), "{stdout}");
    let (code, _, stderr) = task(&server, &data, "the third errand").await;
    assert_eq!(code, 0, "{stderr}");
    let (_, list, _) = run(&data, &["sessions", "list"]).await;
    assert!(
        list.contains("the first errand") && list.contains("the third errand"),
        "{list}"
    );
    let (_, shown, _) = run(&data, &["sessions", "show", "last"]).await;
    assert!(shown.contains("The third answer."), "{shown}");
}

/// The page holding the sessions' own rows is damaged: their messages, still readable, are
/// kept under a session that says its record was lost, not dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_whose_session_row_was_lost_are_kept() {
    let server = ModelServer::start(vec![Reply::text("An answer worth keeping.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, stderr) = task(&server, &data, "a question worth keeping").await;
    assert_eq!(code, 0, "{stderr}");
    let db = data.join("sessions.db");
    damage_page(&db, root_page(&db, "sessions"));
    let (code, stdout, stderr) = run(&data, &["sessions", "repair"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("2 messages"), "{stdout}");
    assert!(
        stdout.contains("1 session whose own record was lost is kept"),
        "{stdout}"
    );
    let (_, list, _) = run(&data, &["sessions", "list"]).await;
    assert!(list.contains("recovered: its record was damaged"), "{list}");
    let (_, shown, _) = run(&data, &["sessions", "show", "last"]).await;
    assert!(shown.contains("An answer worth keeping."), "{shown}");
}

/// A store with 3000 messages written straight into it, one of whose pages is damaged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_steps_over_a_damaged_page_and_says_which_table_lost_rows() {
    let server = ModelServer::start(vec![Reply::text("A real session first.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, stderr) = task(&server, &data, "make the store").await;
    assert_eq!(code, 0, "{stderr}");
    let db = data.join("sessions.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let id: String = conn
            .query_row("SELECT id FROM sessions", [], |r| r.get(0))
            .unwrap();
        // Not indexed for search: the markers are then only in the messages' own pages,
        // and the page damaged below is one of those.
        conn.execute_batch("DROP TRIGGER messages_search; BEGIN")
            .unwrap();
        for i in 0..3000 {
            conn.execute(
                "INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, 'user', ?2, 0)",
                rusqlite::params![id, format!("marker-{i:05} {}", "padding ".repeat(20))],
            )
            .unwrap();
        }
        conn.execute_batch("COMMIT; PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
    }
    // The page that holds message 1500.
    let bytes = std::fs::read(&db).unwrap();
    let at = bytes
        .windows(12)
        .position(|w| w == b"marker-01500")
        .expect("the message is in the file");
    damage_page(&db, at as u64 / page_size(&db) + 1);

    let (code, stdout, stderr) = run(&data, &["sessions", "repair"]).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("Some rows of messages could not be read"),
        "{stdout}"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let kept: i64 = conn
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap();
    // The real session's two messages and the markers but those on the damaged page.
    assert!(kept > 2900 && kept < 3002, "{kept}");
    let has = |marker: &str| -> bool {
        conn.query_row(
            "SELECT count(*) FROM messages WHERE content LIKE ?1",
            [format!("{marker}%")],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            == 1
    };
    assert!(!has("marker-01500"), "its page was damaged");
    assert!(
        has("marker-00000") && has("marker-01400"),
        "the rows before it are kept"
    );
    assert!(has("marker-02999"), "the rows after the damage are kept");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_waits_for_no_one_and_touches_nothing_while_the_store_is_in_use() {
    let server = ModelServer::start(vec![Reply::text("Hello.")]).await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, stderr) = task(&server, &data, "make the store").await;
    assert_eq!(code, 0, "{stderr}");
    // Another oi-tui: a store open in this process.
    let open = oi_tui::store::Store::open(&data).unwrap();
    let (code, stdout, stderr) = run(&data, &["sessions", "repair"]).await;
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stderr.contains("in use by another oi-tui"), "{stderr}");
    let names: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.contains("damaged") && !n.contains("repairing")),
        "{names:?}"
    );
    assert_eq!(open.list(10, 0).unwrap().len(), 1);
    drop(open);
    let (code, stdout, _) = run(&data, &["sessions", "repair"]).await;
    assert_eq!(
        code, 0,
        "a store that is not damaged can be rebuilt too: {stdout}"
    );
}

/// The workbench on a damaged store, as a person sees it at 80×24: the banner says the
/// session is not being saved and how to repair the store; quitting says again, after the
/// screen is gone, what could not be saved, and exits 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workbench_on_a_damaged_store_says_so_until_it_quits() {
    let server = ModelServer::start(vec![
        Reply::text("A first session."),
        Reply::text("An answer nobody can save."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (code, _, stderr) = task(&server, &data, "make the store").await;
    assert_eq!(code, 0, "{stderr}");
    let db = data.join("sessions.db");
    damage_page(&db, root_page(&db, "search_data"));
    let tmux = super::tmux::Tmux::workbench(&server.base("openai"), dir.path(), (80, 24), "", "");
    tmux.wait_for("Message the model").await;
    tmux.type_text("hello there");
    tmux.send(&["Enter"]);
    tmux.wait_for("NOT SAVED: the store is damaged").await;
    // The reply still comes and shows; the banner stays.
    let screen = tmux.wait_for("An answer nobody can save.").await;
    assert!(screen.contains("NOT SAVED"), "{screen}");
    tmux.send(&["C-q"]);
    let screen = tmux.wait_for("EXIT=").await;
    assert!(screen.contains("EXIT=1"), "{screen}");
    // Wrapped at 80 columns wherever the path's length puts the breaks: compare without
    // spaces and line ends.
    let said: String = screen.split_whitespace().collect();
    assert!(
        said.contains("couldnotbesaved") && said.contains("sessionsrepair"),
        "{screen}"
    );
}
