//! The SQL side of recording: each step (a message, an event, an /undo) as one transaction
//! that either happens whole or not at all, so that a failed step can be tried again; and
//! the live text (a streaming reply, a running block's output) in batches.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::params;

use super::record::Write;
use super::{Store, now_ms};
use crate::llm::Message;
use crate::protocol::{BlockId, Event, TurnEnd};
use crate::secrets::Redactor;

/// Live text is written at least this often...
pub const BATCH_TIME: Duration = Duration::from_millis(180);
/// ...or as soon as this much has come.
pub const BATCH_BYTES: usize = 64 * 1024;
/// A running block's output kept in the store: its first chunk and its last bytes.
const KEEP_OUTPUT: usize = 1024 * 1024;
/// Live output kept in memory while it cannot be written.
const LIVE_CAP: usize = 1024 * 1024;

/// What streams now and is not written yet, shared between the engine's side (which adds
/// to it) and the writer thread (which writes it in batches).
#[derive(Debug, Default)]
pub struct Live {
    /// One per request to the model: a reply's message completes the text of its own.
    reply_gen: u64,
    reply: String,
    /// When the oldest text not yet written came, and how much came since the last write.
    reply_since: Option<Instant>,
    reply_unwritten: usize,
    out_block: Option<BlockId>,
    out: Vec<u8>,
    out_since: Option<Instant>,
    /// Output bytes dropped from memory because they could not be written in time.
    out_skipped: u64,
}

impl Live {
    pub(super) fn reply_generation(&self) -> u64 {
        self.reply_gen
    }

    pub(super) fn new_reply(&mut self) {
        self.reply_gen += 1;
        self.reply.clear();
        self.reply_since = None;
        self.reply_unwritten = 0;
    }

    pub(super) fn reply_text(&mut self, text: &str) {
        self.reply.push_str(text);
        self.reply_unwritten += text.len();
        self.reply_since.get_or_insert_with(Instant::now);
    }

    pub(super) fn output(&mut self, block: BlockId, data: &[u8]) {
        if self.out_block != Some(block) {
            self.out_block = Some(block);
            self.out.clear();
            self.out_skipped = 0;
            self.out_since = None;
        }
        self.out.extend_from_slice(data);
        self.out_since.get_or_insert_with(Instant::now);
        if self.out.len() > LIVE_CAP {
            let cut = self.out.len() - LIVE_CAP / 2;
            self.out.drain(..cut);
            self.out_skipped += cut as u64;
        }
    }

    /// When the next batch is due (None: nothing waits).
    fn due(&self) -> Option<Instant> {
        let now = Instant::now();
        let at = |since: Option<Instant>, bytes: usize| {
            since.map(|s| {
                if bytes >= BATCH_BYTES {
                    now
                } else {
                    s + BATCH_TIME
                }
            })
        };
        match (
            at(self.reply_since, self.reply_unwritten),
            at(self.out_since, self.out.len()),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

fn lock(live: &Mutex<Live>) -> std::sync::MutexGuard<'_, Live> {
    live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(super) struct Writer {
    store: Store,
    id: String,
    redactor: Redactor,
    model: String,
    cwd: String,
    /// Where the kernels ran when not here: `lab, in /srv/work` (empty: here).
    executor: String,
    /// The session's row exists (it is made with the first user message).
    created: bool,
    /// The session is marked open by this process (see `incomplete`).
    marked_open: bool,
    /// Rows of replies written while they streamed, by generation (see `Live`).
    reply_rows: HashMap<u64, i64>,
    /// Replies up to this generation are complete: their text streams no more.
    completed_gen: u64,
    /// The running block's output chunks in the store: (row, bytes), and their total.
    chunks: Option<Chunks>,
}

/// A block's output chunks in the store: the block, each chunk's row and size, the total.
type Chunks = (BlockId, VecDeque<(i64, usize)>, usize);

/// What a failed transaction must leave as it was.
type Snapshot = (
    (bool, bool),
    String,
    String,
    String,
    HashMap<u64, i64>,
    u64,
    Option<Chunks>,
);

impl Writer {
    pub(super) fn new(store: Store, id: String, redactor: Redactor) -> Writer {
        let mut writer = Writer {
            store,
            id,
            redactor,
            model: String::new(),
            cwd: String::new(),
            executor: String::new(),
            created: false,
            marked_open: false,
            reply_rows: HashMap::new(),
            completed_gen: 0,
            chunks: None,
        };
        writer.created = writer.exists();
        writer
    }

    pub(super) fn path(&self) -> &std::path::Path {
        self.store.path()
    }

    fn exists(&self) -> bool {
        self.store
            .conn()
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [&self.id], |_| {
                Ok(())
            })
            .is_ok()
    }

    fn snapshot(&self) -> Snapshot {
        (
            (self.created, self.marked_open),
            self.model.clone(),
            self.cwd.clone(),
            self.executor.clone(),
            self.reply_rows.clone(),
            self.completed_gen,
            self.chunks.clone(),
        )
    }

    fn restore(&mut self, s: Snapshot) {
        (
            (self.created, self.marked_open),
            self.model,
            self.cwd,
            self.executor,
            self.reply_rows,
            self.completed_gen,
            self.chunks,
        ) = s;
    }

    /// Runs `f` as one transaction: on failure nothing of it is in the store, and the
    /// writer's own state is as before, so that it can be tried again.
    fn transaction(
        &mut self,
        f: impl FnOnce(&mut Writer) -> rusqlite::Result<()>,
    ) -> rusqlite::Result<()> {
        let before = self.snapshot();
        let result = self
            .store
            .conn()
            .execute_batch("BEGIN IMMEDIATE")
            .and_then(|()| f(self))
            .and_then(|()| self.store.conn().execute_batch("COMMIT"));
        if result.is_err() {
            if !self.store.conn().is_autocommit() {
                let _ = self.store.conn().execute_batch("ROLLBACK");
            }
            self.restore(before);
        }
        result
    }

    /// Writes one step, whole or not at all.
    pub(super) fn apply(&mut self, write: &Write) -> rusqlite::Result<()> {
        self.transaction(|w| {
            w.mark_open()?;
            match write {
                Write::Message(m, said, reply) => w.message(m, said.as_deref(), *reply),
                Write::Event(e) => w.event(e),
                Write::Truncate(n) => w.truncate(*n),
            }
        })
    }

    /// Marks a session that exists (a resumed one) as open by this process, once; a new
    /// session is marked as its row is made. A mark left by a process that is gone means
    /// that one stopped before it wrote everything: that stays said in `missing`.
    fn mark_open(&mut self) -> rusqlite::Result<()> {
        if !self.created || self.marked_open {
            return Ok(());
        }
        let conn = self.store.conn();
        let before: Option<String> = conn.query_row(
            "SELECT open_by FROM sessions WHERE id = ?1",
            [&self.id],
            |r| r.get(0),
        )?;
        let earlier = before
            .filter(|by| !super::incomplete::still_running(by))
            .map(|_| format!("an earlier run: {}", super::incomplete::STOPPED_EARLY));
        conn.execute(
            "UPDATE sessions SET open_by = ?2, missing = CASE WHEN ?3 IS NULL THEN missing WHEN missing IS NULL THEN ?3 ELSE missing || '; ' || ?3 END WHERE id = ?1",
            params![self.id, super::incomplete::this_process(), earlier],
        )?;
        self.marked_open = true;
        Ok(())
    }

    /// Everything this process was handed is written: the session's open mark goes (with
    /// `missing`, what is known to be lost, added to the record first).
    pub(super) fn close(&mut self, missing: Option<&str>) -> rusqlite::Result<()> {
        if !self.created {
            return Ok(());
        }
        self.transaction(|w| {
            if let Some(missing) = missing {
                w.add_missing(missing)?;
            }
            w.store.conn().execute(
                "UPDATE sessions SET open_by = NULL WHERE id = ?1 AND open_by = ?2",
                params![w.id, super::incomplete::this_process()],
            )?;
            w.marked_open = false;
            Ok(())
        })
    }

    /// Says in the session's record what is missing from it, and why.
    pub(super) fn add_missing(&self, missing: &str) -> rusqlite::Result<()> {
        if !self.created {
            return Ok(());
        }
        self.store.conn().execute(
            "UPDATE sessions SET missing = CASE WHEN missing IS NULL THEN ?2 ELSE missing || '; ' || ?2 END WHERE id = ?1",
            params![self.id, self.redactor.clean(missing)],
        )?;
        Ok(())
    }

    /// Before a failed write is tried again: moves what the write-ahead log holds into the
    /// store and empties the log, so that a log that grew to a file-size limit (or filled
    /// the disk) starts over. Fails harmlessly when it cannot.
    pub(super) fn checkpoint(&self) {
        let conn = self.store.conn();
        if conn.is_autocommit() {
            // Not long: another process reading the store makes it wait, and this is only
            // a help to the write that follows.
            let _ = conn.busy_timeout(Duration::from_millis(200));
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let _ = conn.busy_timeout(super::BUSY_WAIT);
        }
    }

    /// A block ended: its live output is superseded by its result.
    pub(super) fn block_ended(&mut self, block: BlockId, live: &Mutex<Live>) {
        let mut live = lock(live);
        if live.out_block == Some(block) {
            live.out.clear();
            live.out_since = None;
            live.out_skipped = 0;
        }
        if self.chunks.as_ref().is_some_and(|(b, ..)| *b == block) {
            self.chunks = None;
        }
    }

    /// When live text is due to be written (None: nothing to write, or nowhere yet).
    pub(super) fn live_due(&self, live: &Mutex<Live>) -> Option<Instant> {
        if !self.created {
            return None;
        }
        lock(live).due()
    }

    /// Writes the live text now: the reply so far, and the output since the last batch.
    /// `ready` is asked with the live text locked whether every step handed over before it
    /// is written (the engine hands a step over before the text that follows it, so with
    /// the lock held, those steps are all in line by then); when not, nothing is taken and
    /// this returns false, so that those steps go first (a reply is never stored before the
    /// message that asked for it, however late the writer is).
    pub(super) fn write_live(
        &mut self,
        live: &Mutex<Live>,
        ready: impl FnOnce() -> bool,
    ) -> rusqlite::Result<bool> {
        if !self.created {
            return Ok(true);
        }
        // Taken out under the lock, written without it (the engine must never wait on
        // the disk), and put back if the write fails.
        let (reply, output) = {
            let mut l = lock(live);
            if !ready() {
                return Ok(false);
            }
            let reply = (l.reply_since.is_some() && l.reply_gen > self.completed_gen)
                .then(|| (l.reply_gen, l.reply.clone()));
            l.reply_since = None;
            l.reply_unwritten = 0;
            let output = match l.out_block {
                Some(block) if !l.out.is_empty() => {
                    l.out_since = None;
                    Some((
                        block,
                        std::mem::take(&mut l.out),
                        std::mem::take(&mut l.out_skipped),
                    ))
                }
                _ => None,
            };
            (reply, output)
        };
        if reply.is_none() && output.is_none() {
            return Ok(true);
        }
        let result = self.transaction(|w| {
            w.mark_open()?;
            if let Some((generation, text)) = &reply {
                w.live_reply(*generation, text)?;
            }
            if let Some((block, data, skipped)) = &output {
                w.live_output(*block, data, *skipped)?;
            }
            Ok(())
        });
        if result.is_err() {
            let mut l = lock(live);
            if let Some((generation, _)) = reply
                && l.reply_gen == generation
            {
                l.reply_since.get_or_insert_with(Instant::now);
            }
            if let Some((block, mut data, skipped)) = output
                && l.out_block == Some(block)
            {
                data.extend_from_slice(&l.out);
                l.out = data;
                l.out_skipped += skipped;
                l.out_since.get_or_insert_with(Instant::now);
                if l.out.len() > LIVE_CAP {
                    let cut = l.out.len() - LIVE_CAP / 2;
                    l.out.drain(..cut);
                    l.out_skipped += cut as u64;
                }
            }
        }
        result.map(|()| true)
    }

    fn live_reply(&mut self, generation: u64, text: &str) -> rusqlite::Result<()> {
        let text = self.redactor.clean(text);
        match self.reply_rows.get(&generation) {
            Some(row) => {
                self.store.conn().execute(
                    "UPDATE messages SET content = ?2 WHERE id = ?1",
                    params![row, text],
                )?;
            }
            None => {
                self.store.conn().execute(
                    "INSERT INTO messages (session_id, role, content, created_at, partial) VALUES (?1, 'assistant', ?2, ?3, 1)",
                    params![self.id, text, now_ms()],
                )?;
                let row = self.store.conn().last_insert_rowid();
                self.store.conn().execute(
                    "UPDATE sessions SET messages = messages + 1, updated_at = ?2 WHERE id = ?1",
                    params![self.id, now_ms()],
                )?;
                self.reply_rows.insert(generation, row);
            }
        }
        Ok(())
    }

    fn live_output(&mut self, block: BlockId, data: &[u8], skipped: u64) -> rusqlite::Result<()> {
        let conn = self.store.conn();
        conn.execute(
            "INSERT INTO partial_output (session_id, block_id, data, skipped) VALUES (?1, ?2, ?3, ?4)",
            params![self.id, block as i64, data, skipped as i64],
        )?;
        let row = conn.last_insert_rowid();
        let chunks = match &mut self.chunks {
            Some((b, chunks, stored)) if *b == block => (chunks, stored),
            _ => {
                let (_, chunks, stored) = self.chunks.insert((block, VecDeque::new(), 0));
                (chunks, stored)
            }
        };
        let (chunks, stored) = chunks;
        chunks.push_back((row, data.len()));
        *stored += data.len();
        // Keep the first chunk (the head) and the last bytes; the middle goes, counted.
        while *stored > KEEP_OUTPUT && chunks.len() > 2 {
            let Some((gone, len)) = chunks.remove(1) else {
                break;
            };
            *stored -= len;
            conn.execute("DELETE FROM partial_output WHERE id = ?1", [gone])?;
            if let Some((next, _)) = chunks.get(1) {
                conn.execute(
                    "UPDATE partial_output SET skipped = skipped + ?2 WHERE id = ?1",
                    params![next, len as i64],
                )?;
            }
        }
        Ok(())
    }

    fn ensure_session(&mut self, title: &str) -> rusqlite::Result<()> {
        if self.created {
            return Ok(());
        }
        let now = now_ms();
        let title: String = title
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .chars()
            .take(80)
            .collect();
        self.store.conn().execute(
            "INSERT OR IGNORE INTO sessions (id, title, created_at, updated_at, model, cwd, executor, open_by) VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?6, ?7)",
            params![self.id, self.redactor.clean(title.trim()), now, self.model, self.cwd, self.executor, super::incomplete::this_process()],
        )?;
        self.created = true;
        self.marked_open = true;
        Ok(())
    }

    fn touch(&self) -> rusqlite::Result<()> {
        self.store.conn().execute(
            "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
            params![self.id, now_ms()],
        )?;
        Ok(())
    }

    fn message(
        &mut self,
        m: &Message,
        said: Option<&str>,
        reply: Option<u64>,
    ) -> rusqlite::Result<()> {
        self.ensure_session(said.unwrap_or(&m.content))?;
        let calls = serde_json::to_string(&m.tool_calls).unwrap_or_else(|_| "[]".into());
        let content = self.redactor.clean(&m.content);
        if let Some(generation) = reply {
            self.completed_gen = self.completed_gen.max(generation);
            // The reply streamed into a row of its own: complete it there, so that the
            // blocks that follow it point at the right message.
            if let Some(row) = self.reply_rows.remove(&generation) {
                self.store.conn().execute(
                    "UPDATE messages SET content = ?2, tool_calls = ?3, partial = 0 WHERE id = ?1",
                    params![row, content, self.redactor.clean(&calls)],
                )?;
                if !content.is_empty() {
                    self.store.conn().execute(
                        "INSERT INTO search (text, session_id, kind, ref) VALUES (?1, ?2, 'message', ?3)",
                        params![content, self.id, row],
                    )?;
                }
                return self.touch();
            }
        }
        self.store.conn().execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, created_at, said) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                self.id,
                role_name(m),
                content,
                self.redactor.clean(&calls),
                m.tool_call_id,
                now_ms(),
                said.map(|s| self.redactor.clean(s)),
            ],
        )?;
        self.store.conn().execute(
            "UPDATE sessions SET messages = messages + 1, updated_at = ?2 WHERE id = ?1",
            params![self.id, now_ms()],
        )?;
        Ok(())
    }

    fn truncate(&mut self, keep: usize) -> rusqlite::Result<()> {
        if !self.created {
            return Ok(());
        }
        self.store.conn().execute(
            "UPDATE messages SET dropped = 1 WHERE session_id = ?1 AND dropped = 0 AND id NOT IN
                (SELECT id FROM messages WHERE session_id = ?1 AND dropped = 0 ORDER BY id LIMIT ?2)",
            params![self.id, keep as i64],
        )?;
        // Blocks after the last message kept go with the messages (all of them on /reset).
        self.store.conn().execute(
            "UPDATE blocks SET dropped = 1 WHERE session_id = ?1 AND dropped = 0 AND (
                COALESCE(after_message, 0) > ?2 OR ?2 = 0)",
            params![self.id, self.last_message()?],
        )?;
        self.touch()
    }

    /// The id of the session's last message still in the conversation (0: none).
    fn last_message(&self) -> rusqlite::Result<i64> {
        self.store.conn().query_row(
            "SELECT COALESCE(max(id), 0) FROM messages WHERE session_id = ?1 AND dropped = 0",
            [&self.id],
            |r| r.get(0),
        )
    }

    fn event(&mut self, event: &Event) -> rusqlite::Result<()> {
        match event {
            Event::SessionConfigured { model, cwd, .. } => {
                self.model = model.clone();
                self.cwd = cwd.clone();
                if self.created {
                    self.store.conn().execute(
                        "UPDATE sessions SET model = ?2, cwd = ?3 WHERE id = ?1",
                        params![self.id, model, cwd],
                    )?;
                }
            }
            // A session that ran anywhere but here names where (the last host, once it
            // was reached).
            Event::ExecutorChanged {
                executor,
                cwd: Some(cwd),
                note,
                ..
            } if executor != "local" => {
                self.executor = format!("{executor}, in {cwd}");
                if self.created {
                    self.store.conn().execute(
                        "UPDATE sessions SET executor = ?2 WHERE id = ?1",
                        params![self.id, self.executor],
                    )?;
                }
                self.note("notice", note)?;
            }
            Event::BlockProposed { block, .. } => {
                // A session another agent began over MCP is named for it and its first block.
                let title = match &block.caller {
                    Some(caller) => format!(
                        "{} (MCP): {}",
                        caller.name,
                        block.code.lines().next().unwrap_or_default()
                    ),
                    None => "(untitled)".to_string(),
                };
                self.ensure_session(&title)?;
                let language = block.language_name();
                self.store.conn().execute(
                    "INSERT OR IGNORE INTO blocks (session_id, block_id, language, proposed_code, created_at, after_message, caller) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![self.id, block.id as i64, language, self.redactor.clean(&block.code), now_ms(), self.last_message()?, block.caller.as_ref().map(|c| c.name.as_str())],
                )?;
            }
            Event::BlockSkipped { block_id, reason } => {
                let conn = self.store.conn();
                conn.execute(
                    "UPDATE blocks SET decision = 'skipped', status = 'skipped', skip_reason = ?3, finished_at = ?4 WHERE session_id = ?1 AND block_id = ?2",
                    params![self.id, *block_id as i64, reason.as_deref().map(|r| self.redactor.clean(r)), now_ms()],
                )?;
                conn.execute(
                    "UPDATE sessions SET blocks_skipped = blocks_skipped + 1, updated_at = ?2 WHERE id = ?1",
                    params![self.id, now_ms()],
                )?;
            }
            Event::ExecStarted {
                block_id,
                language,
                code,
                edited,
            } => {
                self.ensure_session(&format!("!{code}"))?;
                let conn = self.store.conn();
                let code = self.redactor.clean(code);
                let updated = conn.execute(
                    "UPDATE blocks SET decision = ?3, edited_code = CASE WHEN ?4 THEN ?5 ELSE edited_code END WHERE session_id = ?1 AND block_id = ?2",
                    params![self.id, *block_id as i64, if *edited { "edited" } else { "run" }, edited, code],
                )?;
                if updated == 0 {
                    // A command the person ran (`!cmd`).
                    conn.execute(
                        "INSERT INTO blocks (session_id, block_id, language, proposed_code, decision, created_at, after_message) VALUES (?1, ?2, ?3, ?4, 'user', ?5, ?6)",
                        params![self.id, *block_id as i64, language.name(), code, now_ms(), self.last_message()?],
                    )?;
                }
            }
            Event::ExecFinished { block_id, result } => {
                let conn = self.store.conn();
                let notes: Vec<String> = result
                    .notes
                    .iter()
                    .map(|n| self.redactor.clean(n))
                    .collect();
                let images = super::images::to_column(&result.images, self.store.data_dir());
                conn.execute(
                    "UPDATE blocks SET status = ?3, exit_code = ?4, signal = ?5, duration_ms = ?6, output = ?7, finished_at = ?8, tail = ?9, notes = ?10, state_lost = ?11, images = ?12 WHERE session_id = ?1 AND block_id = ?2",
                    params![
                        self.id,
                        *block_id as i64,
                        result.status.label(),
                        result.exit_code,
                        result.signal,
                        result.duration.as_millis() as i64,
                        self.redactor.clean(&result.for_model()),
                        now_ms(),
                        self.redactor.clean(&result.output),
                        serde_json::to_string(&notes).unwrap_or_else(|_| "[]".into()),
                        result.state_lost,
                        images,
                    ],
                )?;
                // The output as it streamed is superseded by the result.
                conn.execute(
                    "DELETE FROM partial_output WHERE session_id = ?1 AND block_id = ?2",
                    params![self.id, *block_id as i64],
                )?;
                conn.execute(
                    "UPDATE sessions SET blocks_run = blocks_run + 1, updated_at = ?2 WHERE id = ?1",
                    params![self.id, now_ms()],
                )?;
            }
            Event::ToolStarted {
                block_id,
                arguments,
                edited,
                ..
            } => {
                self.store.conn().execute(
                    "UPDATE blocks SET decision = ?3, edited_code = CASE WHEN ?4 THEN ?5 ELSE edited_code END WHERE session_id = ?1 AND block_id = ?2",
                    params![self.id, *block_id as i64, if *edited { "edited" } else { "run" }, edited, self.redactor.clean(arguments)],
                )?;
            }
            Event::ToolFinished {
                block_id,
                ok,
                output,
                duration_ms,
            } => {
                let conn = self.store.conn();
                let output = self.redactor.clean(output);
                conn.execute(
                    "UPDATE blocks SET status = ?3, duration_ms = ?4, output = ?5, tail = ?5, finished_at = ?6, notes = '[]', state_lost = 0 WHERE session_id = ?1 AND block_id = ?2",
                    params![
                        self.id,
                        *block_id as i64,
                        if *ok { "ran" } else { "failed" },
                        *duration_ms as i64,
                        output,
                        now_ms(),
                    ],
                )?;
                conn.execute(
                    "UPDATE sessions SET blocks_run = blocks_run + 1, updated_at = ?2 WHERE id = ?1",
                    params![self.id, now_ms()],
                )?;
            }
            Event::Error { message, .. } => self.note("error", message)?,
            Event::Notice { message }
            | Event::RulesChanged { note: message, .. }
            | Event::SandboxChanged { note: message, .. }
            | Event::ExecutorChanged { note: message, .. } => self.note("notice", message)?,
            Event::TurnFinished {
                end: TurnEnd::Interrupted,
            } => self.note("interrupt", "the turn was interrupted")?,
            Event::HistoryChanged { note, .. } => self.note("history", note)?,
            _ => {}
        }
        Ok(())
    }

    fn note(&self, kind: &str, message: &str) -> rusqlite::Result<()> {
        if !self.created {
            return Ok(());
        }
        self.store.conn().execute(
            "INSERT INTO events (session_id, kind, message, created_at) VALUES (?1, ?2, ?3, ?4)",
            params![self.id, kind, self.redactor.clean(message), now_ms()],
        )?;
        self.touch()
    }
}

fn role_name(m: &Message) -> &'static str {
    match m.role {
        crate::llm::Role::User => "user",
        crate::llm::Role::Assistant => "assistant",
        crate::llm::Role::Tool => "tool",
    }
}
