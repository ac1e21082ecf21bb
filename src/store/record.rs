//! Writing a session as it happens. The engine hands every history message and every event
//! to a `Recorder`, whose thread writes each as its own small transaction, so that what is on
//! screen is on disk a moment later and a `kill -9` costs nothing already shown.

use std::sync::mpsc;

use rusqlite::params;

use super::{Store, now_ms};
use crate::llm::Message;
use crate::protocol::{BlockId, Event, TurnEnd};

pub use crate::secrets::Redactor;

#[derive(Debug)]
enum Write {
    /// A message, and (for a person's message with `!cmd` context added) what they said.
    Message(Message, Option<String>),
    Event(Event),
    /// Keep the first `messages` of the conversation; mark the rest dropped.
    Truncate(usize),
    Flush(mpsc::SyncSender<()>),
}

/// Records one session. Writing happens on a thread of its own; a failed write never stops
/// the session (the next write tries again).
#[derive(Debug)]
pub struct Recorder {
    tx: mpsc::Sender<Write>,
    session_id: String,
    /// The id the session's next block gets (after those of a resumed session).
    first_block: BlockId,
}

impl Recorder {
    /// Starts recording a new session (or, with `resume`, an existing one).
    pub fn start(store: Store, resume: Option<String>, redactor: Redactor) -> Recorder {
        let first_block = match &resume {
            Some(id) => store
                .conn()
                .query_row(
                    "SELECT COALESCE(max(block_id), 0) + 1 FROM blocks WHERE session_id = ?1",
                    [id],
                    |r| r.get::<_, i64>(0),
                )
                .map_or(1, |n| n.max(1) as BlockId),
            None => 1,
        };
        let session_id = resume.unwrap_or_else(new_id);
        let (tx, rx) = mpsc::channel();
        let id = session_id.clone();
        std::thread::Builder::new()
            .name("session-writer".into())
            .spawn(move || {
                let mut writer = Writer {
                    store,
                    id,
                    redactor,
                    model: String::new(),
                    cwd: String::new(),
                    created: false,
                };
                writer.created = writer.exists();
                while let Ok(write) = rx.recv() {
                    match write {
                        Write::Flush(done) => {
                            let _ = done.send(());
                        }
                        other => writer.write(other),
                    }
                }
            })
            .ok();
        Recorder {
            tx,
            session_id,
            first_block,
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The id for the session's next block: 1 for a new session, one past the last block of
    /// a resumed one (so that new blocks never overwrite the record of old ones).
    pub fn first_block(&self) -> BlockId {
        self.first_block
    }

    pub fn message(&self, message: &Message) {
        let _ = self.tx.send(Write::Message(message.clone(), None));
    }

    /// A user-role message as the model gets it, and what the person said when that differs:
    /// the engine adds the output of their `!cmd`s to their message, and (for models without
    /// tools) sends block results as a message they did not write at all (`Some("")`).
    pub fn user_message(&self, message: &Message, said: Option<&str>) {
        let _ = self
            .tx
            .send(Write::Message(message.clone(), said.map(str::to_string)));
    }

    pub fn event(&self, event: &Event) {
        let keep = !matches!(
            event,
            Event::AssistantDelta { .. }
                | Event::BlockDelta { .. }
                | Event::ExecOutput { .. }
                | Event::Usage { .. }
        );
        if keep {
            let _ = self.tx.send(Write::Event(event.clone()));
        }
    }

    pub fn truncate(&self, messages: usize) {
        let _ = self.tx.send(Write::Truncate(messages));
    }

    /// Waits until everything sent so far is written.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.tx.send(Write::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(10));
        }
    }
}

/// A new session id: time-ordered and unique (`20261130-041530-3f9a2c`).
fn new_id() -> String {
    // SAFETY: time(2) and localtime_r(3) write into locals we own.
    let stamp = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        format!(
            "{:04}{:02}{:02}-{:02}{:02}{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min,
            tm.tm_sec
        )
    };
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{stamp}-{}", &random[..6])
}

struct Writer {
    store: Store,
    id: String,
    redactor: Redactor,
    model: String,
    cwd: String,
    /// The session's row exists (it is made with the first user message).
    created: bool,
}

impl Writer {
    fn exists(&self) -> bool {
        self.store
            .conn()
            .query_row("SELECT 1 FROM sessions WHERE id = ?1", [&self.id], |_| {
                Ok(())
            })
            .is_ok()
    }

    fn write(&mut self, write: Write) {
        // A failed write must not end the session; the next one tries again.
        let _ = match write {
            Write::Message(m, said) => self.message(&m, said.as_deref()),
            Write::Event(e) => self.event(&e),
            Write::Truncate(n) => self.truncate(n),
            Write::Flush(_) => Ok(()),
        };
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
            "INSERT OR IGNORE INTO sessions (id, title, created_at, updated_at, model, cwd) VALUES (?1, ?2, ?3, ?3, ?4, ?5)",
            params![self.id, self.redactor.clean(title.trim()), now, self.model, self.cwd],
        )?;
        self.created = true;
        Ok(())
    }

    fn touch(&self) -> rusqlite::Result<()> {
        self.store.conn().execute(
            "UPDATE sessions SET updated_at = ?2 WHERE id = ?1",
            params![self.id, now_ms()],
        )?;
        Ok(())
    }

    fn message(&mut self, m: &Message, said: Option<&str>) -> rusqlite::Result<()> {
        self.ensure_session(said.unwrap_or(&m.content))?;
        let calls = serde_json::to_string(&m.tool_calls).unwrap_or_else(|_| "[]".into());
        self.store.conn().execute(
            "INSERT INTO messages (session_id, role, content, tool_calls, tool_call_id, created_at, said) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                self.id,
                role_name(m),
                self.redactor.clean(&m.content),
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
        let conn = self.store.conn();
        match event {
            Event::SessionConfigured { model, cwd, .. } => {
                self.model = model.clone();
                self.cwd = cwd.clone();
                if self.created {
                    conn.execute(
                        "UPDATE sessions SET model = ?2, cwd = ?3 WHERE id = ?1",
                        params![self.id, model, cwd],
                    )?;
                }
            }
            Event::BlockProposed { block, .. } => {
                self.ensure_session("(untitled)")?;
                let language = block.language_name();
                self.store.conn().execute(
                    "INSERT OR IGNORE INTO blocks (session_id, block_id, language, proposed_code, created_at, after_message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![self.id, block.id as i64, language, self.redactor.clean(&block.code), now_ms(), self.last_message()?],
                )?;
            }
            Event::BlockSkipped { block_id, reason } => {
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
                let notes: Vec<String> = result
                    .notes
                    .iter()
                    .map(|n| self.redactor.clean(n))
                    .collect();
                conn.execute(
                    "UPDATE blocks SET status = ?3, exit_code = ?4, signal = ?5, duration_ms = ?6, output = ?7, finished_at = ?8, tail = ?9, notes = ?10, state_lost = ?11 WHERE session_id = ?1 AND block_id = ?2",
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
            | Event::SandboxChanged { note: message, .. } => self.note("notice", message)?,
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
