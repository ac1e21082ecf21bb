//! `oi-tui sessions repair`: a damaged store rebuilt from what can still be read.
//!
//! A damaged page (a disk error, a crash of the disk, a file copied while written) makes
//! every write to the store fail, and often every search. The sessions themselves are
//! usually intact: the damage is in one table, frequently the search index, which is
//! derived from the rest. Repair copies every row that can be read, table by table, into a
//! new store, stepping over the damaged pages, rebuilds the search index, checks the new
//! file, and only then puts it in the old one's place. The damaged file is kept beside it,
//! renamed, never deleted. Nothing is done while another oi-tui has the store open.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::{FILE, Store, StoreError};

/// Rows read before they are written.
const BATCH: usize = 256;

/// The tables copied, parents first (rows refer to their session).
const TABLES: [&str; 5] = ["sessions", "messages", "blocks", "events", "partial_output"];

/// What a repair kept and where the damaged file went.
#[derive(Debug)]
pub struct Repaired {
    pub path: PathBuf,
    /// The damaged file, renamed.
    pub damaged: PathBuf,
    /// Rows kept, per table.
    pub kept: Vec<(&'static str, usize)>,
    /// Tables with rows that could not be read.
    pub unreadable: Vec<&'static str>,
    /// Sessions whose own row was lost, kept under a title that says so.
    pub recovered: usize,
}

impl std::fmt::Display for Repaired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept: Vec<String> = self
            .kept
            .iter()
            .filter(|(table, _)| *table != "partial_output")
            .map(|(table, n)| match (n, table.strip_suffix('s')) {
                (1, Some(one)) => format!("1 {one}"),
                _ => format!("{n} {table}"),
            })
            .collect();
        write!(
            f,
            "Repaired {}: kept {}; the search index was rebuilt.",
            self.path.display(),
            kept.join(", ")
        )?;
        if !self.unreadable.is_empty() {
            write!(
                f,
                " Some rows of {} could not be read and are not in the new store.",
                self.unreadable.join(", ")
            )?;
        }
        if self.recovered > 0 {
            write!(
                f,
                " {} whose own record was lost {} kept under the title \"{RECOVERED}\".",
                if self.recovered == 1 {
                    "1 session".to_string()
                } else {
                    format!("{} sessions", self.recovered)
                },
                if self.recovered == 1 { "is" } else { "are" }
            )?;
        }
        write!(
            f,
            " The file as it was is kept as {}; delete it when you no longer need it.",
            self.damaged.display()
        )
    }
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Rebuilds the store in `data_dir` from what can be read of it.
pub fn repair(data_dir: &Path) -> Result<Repaired, StoreError> {
    let path = data_dir.join(FILE);
    if !path.exists() {
        return Err(io(
            &path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no session store here"),
        ));
    }
    let fresh = data_dir.join(format!("{FILE}.repairing"));
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", fresh.display()));
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&file, e)),
            _ => {}
        }
    }
    // Private, as every store file is (see `Store::open`).
    std::os::unix::fs::OpenOptionsExt::mode(
        std::fs::OpenOptions::new().write(true).create_new(true),
        0o600,
    )
    .open(&fresh)
    .map_err(|e| io(&fresh, e))?;
    let store = Store::open_file(&fresh)?;
    let conn = store.conn();
    let copied = attach_alone(conn, &path).and_then(|()| copy_all(conn));
    let (kept, unreadable, recovered) = match copied {
        Ok(done) => done,
        Err(e) => {
            drop(store);
            let _ = std::fs::remove_file(&fresh);
            return Err(e);
        }
    };
    let _ = conn.execute_batch("DETACH DATABASE old");
    let checked: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if checked != "ok" {
        return Err(StoreError::Corrupt {
            path: fresh,
            reason: format!("the rebuilt store does not pass its check either: {checked}"),
        });
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    drop(store);
    let stamp = super::record::local_stamp();
    let damaged = data_dir.join(format!("{FILE}.before-repair-{stamp}"));
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", path.display()));
        if from.exists() {
            let to = PathBuf::from(format!("{}{suffix}", damaged.display()));
            std::fs::rename(&from, &to).map_err(|e| io(&from, e))?;
        }
    }
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", fresh.display()));
    }
    std::fs::rename(&fresh, &path).map_err(|e| io(&path, e))?;
    Ok(Repaired {
        path,
        damaged,
        kept,
        unreadable,
        recovered,
    })
}

/// Attaches the damaged store as `old`, locked so that no other process can be using it:
/// a repair under a running oi-tui would lose what that one writes next.
fn attach_alone(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    conn.execute("ATTACH DATABASE ?1 AS old", [path.to_string_lossy()])?;
    // At once: another oi-tui may hold the store for hours.
    conn.busy_timeout(std::time::Duration::ZERO)?;
    let alone = conn
        .execute_batch("PRAGMA old.locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; COMMIT;")
        .and_then(|()| {
            conn.query_row("SELECT count(*) FROM old.sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
        });
    conn.busy_timeout(super::BUSY_WAIT)?;
    match alone {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
            ) =>
        {
            let _ = conn.execute_batch("DETACH DATABASE old");
            Err(StoreError::Busy {
                path: path.to_path_buf(),
            })
        }
        Err(e) => {
            let _ = conn.execute_batch("DETACH DATABASE old");
            Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                reason: format!("even its list of tables cannot be read ({e})"),
            })
        }
    }
}

/// Rows kept per table, the tables with rows that could not be read, and the sessions kept
/// for their messages after their own row was lost.
type Copied = (Vec<(&'static str, usize)>, Vec<&'static str>, usize);

/// The title of a session whose own row was lost but whose messages or blocks were read.
const RECOVERED: &str = "recovered: its record was damaged";

/// Copies every readable row of every table, then rebuilds the search index.
fn copy_all(conn: &Connection) -> Result<Copied, StoreError> {
    let mut kept = Vec::new();
    let mut unreadable = Vec::new();
    // Rows whose session is lost go too, as a store would never hold them.
    conn.execute_batch("PRAGMA foreign_keys = OFF;")?;
    for table in TABLES {
        if !copy_table(conn, table)? {
            unreadable.push(table);
        }
    }
    // Messages and blocks whose session's own row was lost are kept, under a session that
    // says so: they are the user's work.
    conn.execute_batch("BEGIN")?;
    let recovered = conn.execute(
        &format!(
            "INSERT INTO sessions (id, title, created_at, updated_at)
             SELECT session_id, '{RECOVERED}', min(created_at), max(created_at) FROM (
                 SELECT session_id, created_at FROM messages
                 UNION ALL SELECT session_id, created_at FROM blocks
                 UNION ALL SELECT session_id, created_at FROM events
                 UNION ALL SELECT session_id, 0 FROM partial_output)
             WHERE session_id NOT IN (SELECT id FROM sessions)
             GROUP BY session_id"
        ),
        [],
    )?;
    conn.execute_batch(
        "UPDATE sessions SET messages = (SELECT count(*) FROM messages m WHERE m.session_id = sessions.id)
         WHERE messages = 0",
    )?;
    // What the update triggers would have indexed (inserting a row indexes the rest).
    conn.execute_batch(
        "INSERT INTO search (text, session_id, kind, ref)
             SELECT edited_code, session_id, 'code', id FROM blocks WHERE edited_code IS NOT NULL;
         INSERT INTO search (text, session_id, kind, ref)
             SELECT output, session_id, 'output', id FROM blocks
             WHERE output IS NOT NULL AND output != '';
         COMMIT;
         PRAGMA foreign_keys = ON;",
    )?;
    for table in TABLES {
        let n = conn.query_row(&format!("SELECT count(*) FROM main.{table}"), [], |r| {
            r.get::<_, i64>(0)
        })?;
        kept.push((table, n as usize));
    }
    Ok((kept, unreadable, recovered))
}

/// Copies the readable rows of `table` in rowid order, stepping over what cannot be read.
/// Returns whether the table was read whole.
fn copy_table(conn: &Connection, table: &str) -> Result<bool, StoreError> {
    let columns = shared_columns(conn, table)?;
    if columns.is_empty() {
        return Ok(true);
    }
    let list = columns.join(", ");
    let marks = vec!["?"; columns.len()].join(", ");
    let mut read = conn.prepare(&format!(
        "SELECT rowid, {list} FROM old.{table} WHERE rowid >= ?1 ORDER BY rowid"
    ))?;
    let mut write = conn.prepare(&format!(
        "INSERT INTO main.{table} (rowid, {list}) VALUES (?, {marks})"
    ))?;
    let mut from = i64::MIN;
    let mut whole = true;
    loop {
        // A batch is read whole before it is written: a read that fails on a damaged page
        // keeps the rows read before it.
        let mut batch: Vec<Vec<rusqlite::types::Value>> = Vec::new();
        let mut failed = false;
        {
            let mut rows = read.query([from])?;
            while batch.len() < BATCH {
                match rows.next() {
                    Ok(Some(row)) => {
                        match (0..=columns.len())
                            .map(|i| row.get::<_, rusqlite::types::Value>(i))
                            .collect::<Result<Vec<_>, _>>()
                        {
                            Ok(values) => batch.push(values),
                            Err(_) => {
                                failed = true;
                                break;
                            }
                        }
                    }
                    Ok(None) => break,
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
        }
        let last = batch.last().and_then(|values| match values.first() {
            Some(rusqlite::types::Value::Integer(id)) => Some(*id),
            _ => None,
        });
        let full = batch.len() == BATCH;
        // Written in a transaction of its own: a read that meets a damaged page would
        // roll back a transaction that spanned it.
        conn.execute_batch("BEGIN")?;
        for values in batch {
            write.execute(rusqlite::params_from_iter(values))?;
        }
        conn.execute_batch("COMMIT")?;
        if !failed {
            match last {
                Some(last) if full => {
                    from = last.saturating_add(1);
                    continue;
                }
                _ => return Ok(whole),
            }
        }
        whole = false;
        let after = last.map_or(from, |l| l.saturating_add(1));
        match next_readable(conn, table, after) {
            Some(next) if next > from => from = next,
            _ => return Ok(whole),
        }
    }
}

/// The first readable rowid after a damaged page met at `start`: probes further and further
/// until a read succeeds, then back, to lose no row of the next page; None when nothing
/// more can be read.
fn next_readable(conn: &Connection, table: &str, start: i64) -> Option<i64> {
    let sql = format!("SELECT rowid FROM old.{table} WHERE rowid >= ?1 ORDER BY rowid LIMIT 1");
    let probe = |at: i64| conn.query_row(&sql, [at], |r| r.get::<_, i64>(0));
    let (mut bad, mut good) = (start, None);
    let mut step: i64 = 1;
    while good.is_none() {
        let at = bad.checked_add(step)?;
        match probe(at) {
            Ok(_) => good = Some(at),
            Err(rusqlite::Error::QueryReturnedNoRows) => return None,
            Err(_) => {
                bad = at;
                step = step.saturating_mul(2);
            }
        }
    }
    let mut good = good?;
    while good - bad > 1 {
        let mid = bad + (good - bad) / 2;
        if probe(mid).is_ok() {
            good = mid;
        } else {
            bad = mid;
        }
    }
    probe(good).ok()
}

/// The columns `table` has both in the damaged store and in a new one (an older store has
/// fewer; the new store gives the rest their defaults).
fn shared_columns(conn: &Connection, table: &str) -> Result<Vec<String>, StoreError> {
    let names = |schema: &str| -> Result<Vec<String>, rusqlite::Error> {
        let mut stmt = conn.prepare(&format!("PRAGMA {schema}.table_info({table})"))?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(1))?;
        rows.collect()
    };
    let old = match names("old") {
        Ok(old) => old,
        Err(_) => return Ok(Vec::new()),
    };
    let new = names("main")?;
    Ok(new.into_iter().filter(|c| old.contains(c)).collect())
}
