//! Sessions in SQLite: every message, block, decision and result is a row written when it
//! happens, so a crash or `kill -9` loses nothing that was on screen. WAL mode lets several
//! oi-tui processes use one store. Full-text search (FTS5) covers messages, code and output.
//!
//! Opening checks before it writes anything: a file that is not a database, or one whose
//! schema is newer than this oi-tui knows, is a clear error and is left untouched.
//! API keys never reach the store: known secrets are redacted from every text written.

mod export;
mod formats;
pub mod images;
mod incomplete;
mod notebook;
mod read;
mod record;
mod repair;
mod replay;
mod schema;
mod script;
mod write;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// How long an opening or a write waits for another process that holds the store.
const BUSY_WAIT: Duration = Duration::from_secs(10);

pub use export::{Item, decision_words, emphasis, escape, fence, shown_output, status_words};
pub use formats::{Format, write_whole};
pub use incomplete::STOPPED_EARLY;
pub use read::{
    Exported, Hit, INTERRUPTED, SessionRow, StoredBlock, StoredEvent, StoredMessage, Transcript,
    format_time,
};
pub use record::{CANNOT_SAVE, Recorder, Redactor, StoreHealth};
pub use repair::{Repaired, repair};
pub use replay::UNFINISHED;

/// The file name of the store inside the data directory.
pub const FILE: &str = "sessions.db";

/// What went wrong opening or using the store, in a sentence that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{path} is not a readable oi-tui session store ({reason}). It was left untouched; if it is a damaged store, `oi-tui sessions repair` rebuilds it from what can be read; else move it away, or use another --data-dir."
    )]
    Corrupt { path: PathBuf, reason: String },
    #[error("{path} is in use by another oi-tui: close it, then try again")]
    Busy { path: PathBuf },
    #[error(
        "{path} is read-only{why}: oi-tui cannot record sessions in it. Make it writable (chmod u+w on the file and its directory), or use another --data-dir."
    )]
    ReadOnly { path: PathBuf, why: String },
    #[error(
        "{path} cannot be written: {reason}. Free some space (or fix the disk), or use another --data-dir."
    )]
    Unwritable { path: PathBuf, reason: String },
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
    #[error("the session store failed: {}", describe(.0))]
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
        // Absolute, so that the image paths read back from it hold from any directory.
        let path = std::path::absolute(data_dir.join(FILE)).unwrap_or_else(|_| data_dir.join(FILE));
        // Created empty and private, so that SQLite (which gives its -wal and -shm files
        // the database's mode) never makes them readable by others. Another process that
        // starts at the same moment may create it first: that is no error.
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path);
        match created {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => {
                return Err(StoreError::Io {
                    path: path.clone(),
                    source,
                });
            }
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
        let corrupt = |e: rusqlite::Error| opening_error(path, e);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(corrupt)?;
        conn.busy_timeout(BUSY_WAIT)?;
        // Read before writing anything: a foreign or damaged file must stay as it is.
        let found = schema::version(&conn).map_err(corrupt)?;
        // SQLite opens a file it may not write read-only without a word; every write would
        // then fail. Say so now, by its name.
        if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
            return Err(StoreError::ReadOnly {
                path: path.to_path_buf(),
                why: read_only_why(path),
            });
        }
        if found > schema::CURRENT {
            return Err(StoreError::Newer {
                path: path.to_path_buf(),
                found,
                known: schema::CURRENT,
            });
        }
        write_ahead_log(&conn).map_err(corrupt)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        schema::migrate(&conn, found).map_err(corrupt)?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Opens the store in `data_dir` for reading only (the `sessions` commands that only
    /// read, on a store oi-tui may not write). Creates nothing and changes nothing.
    pub fn open_read_only(data_dir: &Path) -> Result<Store, StoreError> {
        // Absolute, so that the image paths read back from it hold from any directory.
        let path = std::path::absolute(data_dir.join(FILE)).unwrap_or_else(|_| data_dir.join(FILE));
        if !path.exists() {
            return Err(StoreError::Io {
                path: path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no session store here"),
            });
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let attempt = |uri: bool| -> Result<(Connection, i64), rusqlite::Error> {
            let conn = if uri {
                // On a read-only file system a WAL store cannot make its shared-memory
                // file: read it as immutable (nobody can be writing it there).
                let name = format!("file:{}?immutable=1", uri_path(&path));
                Connection::open_with_flags(name, flags | OpenFlags::SQLITE_OPEN_URI)?
            } else {
                Connection::open_with_flags(&path, flags)?
            };
            conn.busy_timeout(BUSY_WAIT)?;
            let found = schema::version(&conn)?;
            Ok((conn, found))
        };
        let (conn, found) = attempt(false)
            .or_else(|_| attempt(true))
            .map_err(|e| opening_error(&path, e))?;
        if found > schema::CURRENT {
            return Err(StoreError::Newer {
                path,
                found,
                known: schema::CURRENT,
            });
        }
        if found < schema::CURRENT {
            return Err(StoreError::ReadOnly {
                why: format!(
                    "{}, and it was written by an older oi-tui (schema {found}) that this one must upgrade before it can read it",
                    read_only_why(&path)
                ),
                path,
            });
        }
        Ok(Store { conn, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The data directory the store is in (where the session images are kept too).
    pub fn data_dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// Puts the store in write-ahead-log mode. SQLite answers "busy" at once, without waiting,
/// while another process is switching the same new store to it; so wait here, as long as
/// any other write would.
fn write_ahead_log(conn: &Connection) -> Result<(), rusqlite::Error> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_WAIT =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// The error for a store that could not be opened: read-only, full, or not a store.
fn opening_error(path: &Path, e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => StoreError::ReadOnly {
            path: path.to_path_buf(),
            why: read_only_why(path),
        },
        Some(ErrorCode::CannotOpen) if !read_only_why(path).is_empty() => StoreError::ReadOnly {
            path: path.to_path_buf(),
            why: read_only_why(path),
        },
        Some(ErrorCode::DiskFull | ErrorCode::SystemIoFailure) => StoreError::Unwritable {
            path: path.to_path_buf(),
            reason: describe_at(&e, path),
        },
        _ => StoreError::Corrupt {
            path: path.to_path_buf(),
            reason: e.to_string(),
        },
    }
}

/// Why `path` cannot be written, when the reason can be seen: ` (its mode is 400)`, ` (on a
/// read-only file system)`; empty when it cannot.
fn read_only_why(path: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let writable = |p: &Path| {
        let Ok(c) = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()) else {
            return true;
        };
        // SAFETY: access(2) reads a NUL-terminated path we own.
        unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return String::new();
    };
    // SAFETY: statvfs(2) writes into a local we own and reads a path we own.
    let read_only_fs = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_RDONLY != 0
    };
    if read_only_fs {
        return " (it is on a read-only file system)".to_string();
    }
    if !writable(path) {
        let mode = std::fs::metadata(path).map_or(0, |m| m.permissions().mode() & 0o7777);
        return format!(" (its mode is {mode:o})");
    }
    if !writable(dir) {
        return format!(" (its directory {} is not writable)", dir.display());
    }
    String::new()
}

/// A path for an SQLite `file:` URI: `?`, `#` and `%` escaped.
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out
}

/// What a failed write to the store at `path` means for the person: `the disk is full`,
/// `the store is read-only`. SQLite reports some writes that failed for want of space as
/// I/O errors: the free space says which.
pub fn describe_at(e: &rusqlite::Error, path: &Path) -> String {
    use rusqlite::ErrorCode;
    let full = matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen)
    ) && free_space(path).is_some_and(|free| free < 256 * 1024);
    let io = matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::SystemIoFailure | ErrorCode::DiskFull)
    );
    if io && let Some(limit) = file_size_limit_reached(path) {
        format!("the file-size limit (ulimit -f) of {limit} bytes is reached ({e})")
    } else if full {
        format!("the disk is full ({e})")
    } else {
        describe(e)
    }
}

/// The file-size limit (`ulimit -f`, RLIMIT_FSIZE) in bytes, when the store at `path` or its
/// write-ahead log has grown to within a write of it.
fn file_size_limit_reached(path: &Path) -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes into a local we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let limit: u64 = limit.rlim_cur;
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let largest = [path.to_path_buf(), PathBuf::from(wal)]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .max()?;
    // SQLite writes a page (with its frame header) at a time.
    (largest + 128 * 1024 >= limit).then_some(limit)
}

/// Bytes free for unprivileged users on the file system that holds `path`'s directory.
fn free_space(path: &Path) -> Option<u64> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: statvfs(2) writes into a local we own and reads a path we own.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        (libc::statvfs(c.as_ptr(), &mut st) == 0).then_some(st.f_bavail as u64 * st.f_frsize as u64)
    }
}

/// What a failed write means for the person: `the disk is full`, `the store is read-only`.
pub fn describe(e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode;
    let what = match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => "the disk is full",
        Some(ErrorCode::ReadOnly) => "the store is read-only",
        Some(ErrorCode::PermissionDenied) => "permission denied",
        Some(ErrorCode::DatabaseCorrupt) => "the store is damaged",
        Some(ErrorCode::NotADatabase) => "the file is not a session store",
        Some(ErrorCode::SystemIoFailure) => "the disk could not be written",
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            "another process holds the store locked"
        }
        Some(ErrorCode::CannotOpen) => "the store's files cannot be opened",
        _ => "",
    };
    if what.is_empty() {
        e.to_string()
    } else if e.sqlite_error_code() == Some(ErrorCode::DatabaseCorrupt) {
        format!(
            "{what} ({e}); once no oi-tui uses it, `oi-tui sessions repair` rebuilds it from what can be read"
        )
    } else {
        format!("{what} ({e})")
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

/// Writes the version-7 schema (the one before sessions were marked incomplete) into an
/// empty database file, for tests of the migration.
#[doc(hidden)]
pub fn create_schema_v7(path: &Path) -> Result<(), StoreError> {
    let conn = Connection::open(path)?;
    schema::create_v7_only(&conn)?;
    Ok(())
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Processes that start together race to create the directory, the file, and the
    /// files SQLite makes and removes beside it; none of that may be an error.
    #[test]
    fn stores_opened_at_once_in_a_new_directory_all_open() {
        for round in 0..40 {
            let root = tempfile::tempdir().unwrap();
            let dir = root.path().join(format!("data-{round}"));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let dir = dir.clone();
                    std::thread::spawn(move || {
                        // Opening and dropping again and again makes SQLite create and
                        // remove its -wal and -shm files while the others look at them.
                        for _ in 0..3 {
                            Store::open(&dir)?;
                        }
                        Ok::<(), StoreError>(())
                    })
                })
                .collect();
            for opener in openers {
                let opened = opener.join().unwrap();
                assert!(opened.is_ok(), "round {round}: {:?}", opened.err());
            }
        }
    }
}
