//! Whether a session is in the store whole. A session is marked open (`open_by`: the process
//! that writes it) when its first record is written, and the mark is cleared only once
//! everything that process was handed is in the store. So a session whose writer is gone
//! while the mark stays was not written whole: its last writes failed (a full disk, a
//! file-size limit) or oi-tui was killed; and a crash shows it as well as a failed write.
//! What is known to be missing (steps that did not fit in memory while the store failed)
//! is said in `missing`.

/// What `sessions list` and `sessions show` say of a session whose writer stopped with the
/// mark still set.
pub const STOPPED_EARLY: &str = "oi-tui stopped before it had written all of this session to the store (its last writes failed, e.g. on a full disk or past a file-size limit, or it was killed); what came after the last record saved is missing";

/// This process as `open_by` names it: `pid start-time` (the start time in clock ticks
/// since boot, so that a later process with the same pid is not taken for it).
pub(super) fn this_process() -> String {
    let pid = std::process::id();
    match start_time(pid) {
        Some(start) => format!("{pid} {start}"),
        None => pid.to_string(),
    }
}

/// Whether the process an `open_by` names still runs (and may still be writing).
pub(super) fn still_running(open_by: &str) -> bool {
    let mut parts = open_by.split_whitespace();
    let Some(pid) = parts.next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    let Ok(id) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(id, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    match (
        parts.next().and_then(|s| s.parse::<u64>().ok()),
        start_time(pid),
    ) {
        (Some(recorded), Some(now)) => recorded == now,
        _ => true,
    }
}

/// Why a session is not in the store whole, in a sentence; None when it is (or when the
/// process writing it still runs).
pub fn why_incomplete(open_by: Option<&str>, missing: Option<&str>) -> Option<String> {
    let stopped = open_by.is_some_and(|by| !still_running(by));
    match (missing.filter(|m| !m.trim().is_empty()), stopped) {
        (Some(missing), true) => Some(format!("{missing}; and {STOPPED_EARLY}")),
        (Some(missing), false) => Some(missing.to_string()),
        (None, true) => Some(STOPPED_EARLY.to_string()),
        (None, false) => None,
    }
}

/// A process's start time in clock ticks since boot (`/proc/<pid>/stat`, field 22).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::super::{Recorder, Redactor, Store};
    use super::*;
    use crate::exec::{Language, RunResult, RunStatus};
    use crate::llm::Message;
    use crate::protocol::Event;

    fn finished(output: &str) -> Event {
        Event::ExecFinished {
            block_id: 1,
            result: RunResult {
                exit_code: Some(0),
                output: output.to_string(),
                output_bytes: output.len() as u64,
                ..RunResult::empty(1, Language::Shell, RunStatus::Success)
            },
        }
    }

    fn started() -> Event {
        Event::ExecStarted {
            block_id: 1,
            language: Language::Shell,
            code: "echo kept".to_string(),
            edited: false,
        }
    }

    /// The session's `open_by` and `missing` as stored.
    fn marks(dir: &std::path::Path, id: &str) -> (Option<String>, Option<String>) {
        let conn = rusqlite::Connection::open(dir.join(super::super::FILE)).unwrap();
        conn.query_row(
            "SELECT open_by, missing FROM sessions WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    }

    /// Makes every write of a block's result fail, as a full disk would (until `allow`).
    fn refuse_results(dir: &std::path::Path) {
        let conn = rusqlite::Connection::open(dir.join(super::super::FILE)).unwrap();
        conn.execute_batch(
            "CREATE TRIGGER refuse BEFORE UPDATE OF status ON blocks BEGIN SELECT RAISE(ABORT, 'no room'); END;",
        )
        .unwrap();
    }

    fn allow(dir: &std::path::Path) {
        let conn = rusqlite::Connection::open(dir.join(super::super::FILE)).unwrap();
        conn.execute_batch("DROP TRIGGER refuse;").unwrap();
    }

    #[test]
    fn a_session_is_marked_open_until_everything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
        recorder.message(&Message::user("run something".to_string()));
        recorder.event(&started());
        assert!(recorder.flush().all_saved());
        let id = recorder.session_id().to_string();
        // Written when the session starts: a crash from here on leaves it said.
        assert_eq!(marks(dir.path(), &id).0, Some(this_process()));
        // While this process writes it, it is not called incomplete.
        let rows = Store::open(dir.path()).unwrap().list(10, 0).unwrap();
        assert_eq!(rows[0].incomplete, None, "{rows:?}");

        // The result cannot be written: it is kept, and the mark stays at the end.
        refuse_results(dir.path());
        recorder.event(&finished("kept-result"));
        let health = recorder.close();
        assert_eq!(health.unsaved, 1, "{health:?}");
        assert_eq!(health.what, "1 block result");
        assert!(
            health.summary().contains("marks the session incomplete"),
            "{health:?}"
        );
        assert_eq!(marks(dir.path(), &id).0, Some(this_process()));

        // Once it can be written, it is; then the session is whole.
        allow(dir.path());
        let health = recorder.close();
        assert!(health.all_saved(), "{health:?}");
        assert_eq!(marks(dir.path(), &id), (None, None));
        let store = Store::open(dir.path()).unwrap();
        let row = &store.list(10, 0).unwrap()[0];
        assert_eq!(
            (row.blocks_run, row.incomplete.clone()),
            (1, None),
            "{row:?}"
        );
        let session = store.export(&id).unwrap();
        assert!(
            session.blocks[0]
                .output
                .as_deref()
                .is_some_and(|o| o.contains("kept-result")),
            "{:?}",
            session.blocks[0]
        );
    }

    #[test]
    fn a_failed_write_is_tried_again_at_the_end_of_the_turn() {
        let dir = tempfile::tempdir().unwrap();
        let recorder = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
        let (tell, heard) = std::sync::mpsc::channel();
        recorder.set_listener(move |event| {
            let _ = tell.send(event);
        });
        recorder.message(&Message::user("run something".to_string()));
        recorder.event(&started());
        refuse_results(dir.path());
        recorder.event(&finished("kept-result"));
        let trouble = heard
            .recv_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        let Event::StoreTrouble { message, unsaved } = trouble else {
            panic!("{trouble:?}");
        };
        assert_eq!(unsaved, 1);
        assert!(
            message.contains("keeps 1 step (1 block result) in memory and the run goes on")
                && message.contains("tries again in 0.5 s, at the end of the turn"),
            "{message}"
        );
        // A turn that ends while the store still refuses brings a retry that fails too, and
        // puts the next one at least 1 s later. Space returns; the next turn's end brings the
        // retry at once, not the backoff: a recovery within 1 s of the first end can only
        // come from that.
        let asked = std::time::Instant::now();
        let turn_end = Event::TurnFinished {
            end: crate::protocol::TurnEnd::Done,
        };
        recorder.event(&turn_end);
        recorder.flush();
        allow(dir.path());
        recorder.event(&turn_end);
        let recovered = heard
            .recv_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        assert!(
            matches!(recovered, Event::StoreRecovered { .. }),
            "{recovered:?}"
        );
        assert!(
            asked.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            asked.elapsed()
        );
        assert!(recorder.close().all_saved());
    }

    #[test]
    fn a_resumed_session_that_an_earlier_run_left_open_stays_incomplete() {
        let dir = tempfile::tempdir().unwrap();
        let first = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
        first.message(&Message::user("the first run".to_string()));
        assert!(first.flush().all_saved());
        let id = first.session_id().to_string();
        drop(first);
        // As a process that was killed before it closed the session leaves it.
        let conn = rusqlite::Connection::open(dir.path().join(super::super::FILE)).unwrap();
        conn.execute(
            "UPDATE sessions SET open_by = '999999999 5' WHERE id = ?1",
            [&id],
        )
        .unwrap();
        let rows = Store::open(dir.path()).unwrap().list(10, 0).unwrap();
        assert_eq!(rows[0].incomplete.as_deref(), Some(STOPPED_EARLY));

        let resumed = Recorder::start(
            Store::open(dir.path()).unwrap(),
            Some(id.clone()),
            Redactor::default(),
        );
        resumed.message(&Message::user("the second run".to_string()));
        assert!(resumed.close().all_saved());
        let (open_by, missing) = marks(dir.path(), &id);
        assert_eq!(open_by, None);
        let missing = missing.unwrap_or_default();
        assert!(
            missing.starts_with("an earlier run: oi-tui stopped"),
            "{missing}"
        );
        let rows = Store::open(dir.path()).unwrap().list(10, 0).unwrap();
        assert_eq!(rows[0].incomplete.as_deref(), Some(missing.as_str()));
    }

    #[test]
    fn a_store_of_the_previous_version_is_migrated_and_its_sessions_are_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(super::super::FILE);
        super::super::create_schema_v7(&path).unwrap();
        {
            let conn = rusqlite::Connection::open(&path).unwrap();
            conn.execute_batch(
                "INSERT INTO sessions (id, title, created_at, updated_at, blocks_run, executor) VALUES ('old-7', 'from schema 7', 1, 2, 3, '');",
            )
            .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let version: i64 = store
            .conn()
            .query_row("SELECT version FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, super::super::schema::CURRENT);
        assert_eq!(version, 8);
        let rows = store.list(10, 0).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (
                rows[0].id.as_str(),
                rows[0].blocks_run,
                rows[0].incomplete.clone()
            ),
            ("old-7", 3, None)
        );
        // And the migrated store takes the marks.
        drop(store);
        let recorder = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
        recorder.message(&Message::user("after the migration".to_string()));
        assert!(recorder.flush().all_saved());
        assert_eq!(
            marks(dir.path(), recorder.session_id()).0,
            Some(this_process())
        );
        assert!(recorder.close().all_saved());
        assert_eq!(marks(dir.path(), recorder.session_id()).0, None);
    }

    #[test]
    fn this_process_is_running_and_a_finished_one_is_not() {
        let me = this_process();
        assert!(still_running(&me), "{me}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let mark = match start_time(pid) {
            Some(start) => format!("{pid} {start}"),
            None => pid.to_string(),
        };
        child.wait().unwrap();
        assert!(!still_running(&mark), "{mark}");
        // The same pid with another start time is another process.
        let pid = std::process::id();
        assert!(!still_running(&format!("{pid} 1")) || start_time(pid) == Some(1));
        assert!(!still_running("not a pid"));
    }

    #[test]
    fn the_reason_says_what_is_known() {
        assert_eq!(why_incomplete(None, None), None);
        assert_eq!(why_incomplete(Some(&this_process()), None), None);
        let gone = "999999999 5";
        assert_eq!(
            why_incomplete(Some(gone), None).as_deref(),
            Some(STOPPED_EARLY)
        );
        let why = why_incomplete(Some(gone), Some("2 steps did not fit")).unwrap();
        assert!(
            why.starts_with("2 steps did not fit; and oi-tui stopped"),
            "{why}"
        );
        assert_eq!(
            why_incomplete(None, Some("2 steps did not fit")).as_deref(),
            Some("2 steps did not fit")
        );
    }
}
