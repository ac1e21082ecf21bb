//! Sessions in SQLite: every message, block, decision and result is a row written when it
//! happens, so a crash or `kill -9` loses nothing that was on screen. WAL mode lets several
//! oi-tui processes use one store. Full-text search (FTS5) covers messages, code and output.
//!
//! Opening checks before it writes anything: a file that is not a database, or one whose
//! schema is newer than this oi-tui knows, is a clear error and is left untouched.
//! API keys never reach the store: known secrets are redacted from every text written.

mod export;
mod read;
mod record;
mod replay;
mod schema;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub use export::{Item, decision_words, emphasis, escape, fence, shown_output, status_words};
pub use read::{
    Exported, Hit, SessionRow, StoredBlock, StoredEvent, StoredMessage, Transcript, format_time,
};
pub use record::{Recorder, Redactor};
pub use replay::UNFINISHED;

/// The file name of the store inside the data directory.
pub const FILE: &str = "sessions.db";

/// What went wrong opening or using the store, in a sentence that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{path} is not a readable oi-tui session store ({reason}). It was left untouched; move it away, or use another --data-dir."
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "{path} was written by a newer oi-tui (schema {found}, this one knows {known}). It was left untouched; upgrade oi-tui, or use another --data-dir."
    )]
    Newer {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("no session matches `{0}`; `oi-tui sessions list` shows them")]
    NotFound(String),
    #[error("`{prefix}` matches {count} sessions; give more of the id")]
    Ambiguous { prefix: String, count: usize },
    #[error("the session store failed: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("cannot use the data directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// An open store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens (creating if needed) the store in `data_dir`.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        // The directory is private (0700) and so are the store's files (0600): they hold
        // every conversation and every output.
        let said = crate::secrets::private_dir(data_dir).map_err(|source| StoreError::Io {
            path: data_dir.to_path_buf(),
            source,
        })?;
        if let Some(said) = said {
            eprintln!("{said}");
        }
        let path = data_dir.join(FILE);
        if !path.exists() {
            // Created empty and private, so that SQLite (which gives its -wal and -shm
            // files the database's mode) never makes them readable by others.
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .map_err(|source| StoreError::Io {
                    path: path.clone(),
                    source,
                })?;
        }
        for suffix in ["", "-wal", "-shm"] {
            let file = data_dir.join(format!("{FILE}{suffix}"));
            match crate::secrets::private_file(&file) {
                Ok(Some(said)) => eprintln!("{said}"),
                Ok(None) => {}
                Err(source) => return Err(StoreError::Io { path: file, source }),
            }
        }
        Store::open_file(&path)
    }

    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        let corrupt = |e: rusqlite::Error| StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(Duration::from_secs(10))?;
        // Read before writing anything: a foreign or damaged file must stay as it is.
        let found = schema::version(&conn).map_err(corrupt)?;
        if found > schema::CURRENT {
            return Err(StoreError::Newer {
                path: path.to_path_buf(),
                found,
                known: schema::CURRENT,
            });
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(corrupt)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&conn, found)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// Writes the version-1 schema into an empty database file, for tests of the migration.
#[doc(hidden)]
pub fn create_schema_v1(path: &Path) -> Result<(), StoreError> {
    let conn = Connection::open(path)?;
    schema::create_v1_only(&conn)?;
    Ok(())
}

/// Writes the version-2 schema into an empty database file, for tests of the migration.
#[doc(hidden)]
pub fn create_schema_v2(path: &Path) -> Result<(), StoreError> {
    let conn = Connection::open(path)?;
    schema::create_v2_only(&conn)?;
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
