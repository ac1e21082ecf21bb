//! The schema and its migrations. Each migration runs once, in a transaction, and bumps the
//! version in `schema_version`; a store is never downgraded.

use rusqlite::{Connection, OptionalExtension};

/// The schema this oi-tui writes.
pub const CURRENT: i64 = 8;

/// Version 1: sessions, messages, blocks, and events (errors and interrupts).
const V1: &str = "
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version (version) VALUES (0);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    messages INTEGER NOT NULL DEFAULT 0,
    blocks_run INTEGER NOT NULL DEFAULT 0,
    blocks_skipped INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_updated ON sessions (updated_at DESC);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    created_at INTEGER NOT NULL,
    -- Left out of the conversation by /undo or /reset (kept for the record).
    dropped INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX messages_session ON messages (session_id, id);
CREATE TABLE blocks (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    block_id INTEGER NOT NULL,
    language TEXT NOT NULL,
    proposed_code TEXT NOT NULL,
    edited_code TEXT,
    decision TEXT NOT NULL DEFAULT 'proposed',
    status TEXT,
    exit_code INTEGER,
    signal TEXT,
    duration_ms INTEGER,
    output TEXT,
    created_at INTEGER NOT NULL,
    finished_at INTEGER,
    UNIQUE (session_id, block_id)
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
";

/// Version 2: full-text search over messages, code and output, kept by triggers.
const V2: &str = "
CREATE VIRTUAL TABLE search USING fts5 (
    text, session_id UNINDEXED, kind UNINDEXED, ref UNINDEXED, tokenize = 'unicode61'
);
INSERT INTO search (text, session_id, kind, ref)
    SELECT content, session_id, 'message', id FROM messages WHERE content != '';
INSERT INTO search (text, session_id, kind, ref)
    SELECT COALESCE(edited_code, proposed_code), session_id, 'code', id FROM blocks;
INSERT INTO search (text, session_id, kind, ref)
    SELECT output, session_id, 'output', id FROM blocks WHERE output IS NOT NULL AND output != '';
CREATE TRIGGER messages_search AFTER INSERT ON messages WHEN new.content != '' BEGIN
    INSERT INTO search (text, session_id, kind, ref)
        VALUES (new.content, new.session_id, 'message', new.id);
END;
CREATE TRIGGER blocks_search AFTER INSERT ON blocks BEGIN
    INSERT INTO search (text, session_id, kind, ref)
        VALUES (new.proposed_code, new.session_id, 'code', new.id);
END;
CREATE TRIGGER blocks_edited_search AFTER UPDATE OF edited_code ON blocks
    WHEN new.edited_code IS NOT NULL BEGIN
    INSERT INTO search (text, session_id, kind, ref)
        VALUES (new.edited_code, new.session_id, 'code', new.id);
END;
CREATE TRIGGER blocks_output_search AFTER UPDATE OF output ON blocks
    WHEN new.output IS NOT NULL AND new.output != '' BEGIN
    INSERT INTO search (text, session_id, kind, ref)
        VALUES (new.output, new.session_id, 'output', new.id);
END;
CREATE TRIGGER sessions_search_delete AFTER DELETE ON sessions BEGIN
    DELETE FROM search WHERE session_id = old.id;
END;
";

/// Version 3: what a resumed session needs to show each block as it was: the reason it was
/// skipped, the output tail as shown (without the status line the model got), the notes, a
/// lost kernel, the message it followed, and whether /undo or /reset dropped it; and what the
/// person said in a message to which the engine added the output of their `!cmd`s.
const V3: &str = "
ALTER TABLE messages ADD COLUMN said TEXT;
ALTER TABLE blocks ADD COLUMN skip_reason TEXT;
ALTER TABLE blocks ADD COLUMN tail TEXT;
ALTER TABLE blocks ADD COLUMN notes TEXT NOT NULL DEFAULT '[]';
ALTER TABLE blocks ADD COLUMN state_lost INTEGER NOT NULL DEFAULT 0;
ALTER TABLE blocks ADD COLUMN after_message INTEGER;
ALTER TABLE blocks ADD COLUMN dropped INTEGER NOT NULL DEFAULT 0;
UPDATE blocks SET skip_reason = output, output = NULL WHERE decision = 'skipped';
UPDATE blocks SET after_message = (
    SELECT max(m.id) FROM messages m
    WHERE m.session_id = blocks.session_id AND m.created_at <= blocks.created_at
);
";

/// Version 4: what was on screen before a step finished, written as it arrives so that a
/// `kill -9` loses at most the last fraction of a second: a running block's output in
/// chunks (deleted when its result is written), and a reply while it streams (a message
/// row marked partial, completed in place).
const V4: &str = "
CREATE TABLE partial_output (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    block_id INTEGER NOT NULL,
    data BLOB NOT NULL,
    -- Bytes left out just before this chunk (the middle of a very long output).
    skipped INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX partial_output_block ON partial_output (session_id, block_id, id);
ALTER TABLE messages ADD COLUMN partial INTEGER NOT NULL DEFAULT 0;
";

/// Version 5: who sent a block when not the model (another agent, over MCP).
const V5: &str = "
ALTER TABLE blocks ADD COLUMN caller TEXT;
";

/// Version 6: the images a block made, as JSON (`protocol::Image`, paths relative to the
/// data directory when the copy is kept there).
const V6: &str = "
ALTER TABLE blocks ADD COLUMN images TEXT NOT NULL DEFAULT '[]';
";

/// Version 7: where the kernels ran when not here (the executor's name and its working
/// directory there).
const V7: &str = "
ALTER TABLE sessions ADD COLUMN executor TEXT NOT NULL DEFAULT '';
";

/// Version 8: whether a session is known to be written whole. `open_by` names the process
/// that writes it (`pid start-time`), set when it starts and cleared only once everything it
/// was handed is in the store: a session whose writer is gone with it still set was not
/// written whole (its last writes failed, or oi-tui was killed). `missing` says what is
/// known to be missing, and why.
const V8: &str = "
ALTER TABLE sessions ADD COLUMN open_by TEXT;
ALTER TABLE sessions ADD COLUMN missing TEXT;
";

const MIGRATIONS: [&str; 8] = [V1, V2, V3, V4, V5, V6, V7, V8];

/// The store's schema version: 0 for an empty database. Fails on a file that is not a
/// database, or a database that is not an oi-tui store.
pub fn version(conn: &Connection) -> Result<i64, rusqlite::Error> {
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    if tables == 0 {
        return Ok(0);
    }
    let has_version: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if has_version.is_none() {
        return Err(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_NOTADB),
            Some("a database, but not an oi-tui session store".to_string()),
        ));
    }
    conn.query_row("SELECT version FROM schema_version", [], |r| r.get(0))
}

/// Brings the schema from `from` to `CURRENT`. Each step re-reads the version inside its
/// transaction, so two processes opening a new store at once do not both migrate it.
pub fn migrate(conn: &Connection, from: i64) -> Result<(), rusqlite::Error> {
    for (i, sql) in MIGRATIONS.iter().enumerate() {
        let target = i as i64 + 1;
        if target <= from {
            continue;
        }
        conn.execute_batch("BEGIN IMMEDIATE;")?;
        let step = || -> Result<(), rusqlite::Error> {
            if version(conn)? >= target {
                return Ok(());
            }
            conn.execute_batch(sql)?;
            conn.execute("UPDATE schema_version SET version = ?1", [target])?;
            Ok(())
        };
        match step() {
            Ok(()) => conn.execute_batch("COMMIT;")?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK;");
                return Err(e);
            }
        }
    }
    Ok(())
}

/// The version-1 schema alone, for tests of the migration from it.
pub fn create_v1_only(conn: &Connection) -> Result<(), rusqlite::Error> {
    conn.execute_batch(&format!("{V1}\nUPDATE schema_version SET version = 1;"))
}

/// The version-2 schema alone, for tests of the migration from it.
pub fn create_v2_only(conn: &Connection) -> Result<(), rusqlite::Error> {
    conn.execute_batch(&format!(
        "{V1}\n{V2}\nUPDATE schema_version SET version = 2;"
    ))
}

/// The schema of the version before this one (7) alone, for tests of the migration from it.
pub fn create_v7_only(conn: &Connection) -> Result<(), rusqlite::Error> {
    conn.execute_batch(&format!(
        "{V1}\n{V2}\n{V3}\n{V4}\n{V5}\n{V6}\n{V7}\nUPDATE schema_version SET version = 7;"
    ))
}
