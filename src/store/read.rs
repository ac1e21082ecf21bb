//! Reading the store: listing, finding by id prefix, full-text search with snippets,
//! whole sessions (for exports, see `export.rs`, and replays, see `replay.rs`), renaming,
//! deleting, and the messages a resumed conversation starts from.

use rusqlite::{OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::llm::{Message, ToolCall};

/// One session as lists show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRow {
    pub id: String,
    pub title: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub model: String,
    pub cwd: String,
    /// Where the kernels ran when not here: `lab, in /srv/work` (empty: here).
    #[serde(default)]
    pub executor: String,
    pub messages: i64,
    pub blocks_run: i64,
    pub blocks_skipped: i64,
    /// Why the session is not in the store whole (its last writes failed, or oi-tui was
    /// killed); None when it is, or while the oi-tui that writes it still runs.
    #[serde(default)]
    pub incomplete: Option<String>,
}

/// A search result: the session and a snippet with the match in `«` `»`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hit {
    pub session: SessionRow,
    pub kind: String,
    pub snippet: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMessage {
    /// The message's row id, which blocks refer to (`after_message`).
    #[serde(default)]
    pub id: i64,
    pub role: String,
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub created_at: i64,
    pub dropped: bool,
    /// What the person said, when the engine added `!cmd` output to it for the model.
    #[serde(default)]
    pub said: Option<String>,
    /// A reply whose stream never ended: oi-tui stopped while it came (what is here is
    /// what had arrived).
    #[serde(default)]
    pub partial: bool,
}

impl StoredMessage {
    /// The text as the person saw it in the chat.
    pub fn shown(&self) -> &str {
        self.said.as_deref().unwrap_or(&self.content)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBlock {
    pub block_id: i64,
    pub language: String,
    pub proposed_code: String,
    pub edited_code: Option<String>,
    pub decision: String,
    pub status: Option<String>,
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
    pub duration_ms: Option<i64>,
    /// What went back to the model: the output, a status line and the notes.
    pub output: Option<String>,
    pub created_at: i64,
    /// Why it was not run (the person's reason, or oi-tui's).
    #[serde(default)]
    pub skip_reason: Option<String>,
    /// The output as shown (escapes stripped, the middle cut when long), without the status.
    #[serde(default)]
    pub tail: Option<String>,
    /// Sentences about what happened beyond the exit status.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The kernel ended during the block, so its state was lost.
    #[serde(default)]
    pub state_lost: bool,
    /// The message it followed (0: none), which places it in the conversation.
    #[serde(default)]
    pub after_message: Option<i64>,
    /// Left out of the conversation by /undo or /reset.
    #[serde(default)]
    pub dropped: bool,
    /// It was running when oi-tui stopped: its end was never recorded, and `tail` holds the
    /// output that had arrived by then.
    #[serde(default)]
    pub interrupted: bool,
    /// Who sent it, when not the model (another agent, over MCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The images it made, as kept with the session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<crate::protocol::Image>,
}

/// What is said of a block that was running when oi-tui stopped.
pub const INTERRUPTED: &str = "interrupted: oi-tui stopped while it ran";

/// Characters of a running block's stored output shown (head and tail) when it is read back.
const PARTIAL_SHOWN: usize = 64 * 1024;

/// Characters of a block's output the model gets when no other limit is given (the
/// default of `max_output`).
const DEFAULT_MAX_OUTPUT: usize = 4000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    pub kind: String,
    pub message: String,
    pub created_at: i64,
}

/// A whole session: what `show` prints and `export --format json` writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exported {
    pub session: SessionRow,
    pub messages: Vec<StoredMessage>,
    pub blocks: Vec<StoredBlock>,
    pub events: Vec<StoredEvent>,
}

pub type Transcript = Exported;

const SESSION_COLUMNS: &str = "id, title, created_at, updated_at, model, cwd, messages, blocks_run, blocks_skipped, executor, open_by, missing";

fn session_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: r.get(0)?,
        title: r.get(1)?,
        created_at: r.get(2)?,
        updated_at: r.get(3)?,
        model: r.get(4)?,
        cwd: r.get(5)?,
        messages: r.get(6)?,
        blocks_run: r.get(7)?,
        blocks_skipped: r.get(8)?,
        executor: r.get(9)?,
        incomplete: super::incomplete::why_incomplete(
            r.get::<_, Option<String>>(10)?.as_deref(),
            r.get::<_, Option<String>>(11)?.as_deref(),
        ),
    })
}

impl SessionRow {
    /// The working directory as the exports name it, with the host the kernels ran on.
    pub fn directory(&self) -> String {
        let cwd = if self.cwd.is_empty() { "-" } else { &self.cwd };
        if self.executor.is_empty() {
            cwd.to_string()
        } else {
            format!("{cwd} · kernels on {}", self.executor)
        }
    }
}

impl Store {
    /// Sessions, newest first.
    pub fn list(&self, limit: usize, offset: usize) -> Result<Vec<SessionRow>, StoreError> {
        let mut stmt = self.conn().prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?1 OFFSET ?2"
        ))?;
        let rows = stmt.query_map(params![limit as i64, offset as i64], session_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    pub fn count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn()
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?)
    }

    /// The session an id names: the whole id, any unique prefix, or `last`.
    pub fn resolve(&self, id: &str) -> Result<String, StoreError> {
        let id = id.trim();
        if id == "last" {
            return self
                .conn()
                .query_row(
                    "SELECT id FROM sessions ORDER BY updated_at DESC, id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound("last".into()));
        }
        let escaped = id
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        let mut stmt = self.conn().prepare_cached(
            "SELECT id FROM sessions WHERE id LIKE ?1 || '%' ESCAPE '\\' LIMIT 2",
        )?;
        let ids: Vec<String> = stmt
            .query_map([escaped], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        match ids.as_slice() {
            [] => Err(StoreError::NotFound(id.to_string())),
            [one] => Ok(one.clone()),
            _ if ids.iter().any(|i| i == id) => Ok(id.to_string()),
            _ => Err(StoreError::Ambiguous {
                prefix: id.to_string(),
                count: self.conn().query_row(
                    "SELECT count(*) FROM sessions WHERE id LIKE ?1 || '%' ESCAPE '\\'",
                    [id.replace('%', "\\%").replace('_', "\\_")],
                    |r| r.get::<_, i64>(0),
                )? as usize,
            }),
        }
    }

    pub fn session(&self, id: &str) -> Result<SessionRow, StoreError> {
        self.conn()
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"),
                [id],
                session_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::NotFound(id.to_string()))
    }

    /// Full-text search: the sessions whose messages, code or output match, most recent
    /// match first, each with a snippet of its latest match. FTS walks its index newest row
    /// first and stops early, so a word found everywhere costs no more than a rare one.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, StoreError> {
        let fts = fts_query(query);
        if fts.is_empty() {
            return Ok(Vec::new());
        }
        let mut stmt = self.conn().prepare_cached(
            "SELECT rowid, session_id, kind FROM search WHERE search MATCH ?1 ORDER BY rowid DESC LIMIT 20000",
        )?;
        let mut found: Vec<(i64, String, String)> = Vec::new();
        let mut rows = stmt.query([&fts])?;
        while let Some(row) = rows.next()? {
            let session: String = row.get(1)?;
            if found.iter().any(|(_, s, _)| *s == session) {
                continue;
            }
            found.push((row.get(0)?, session, row.get(2)?));
            if found.len() >= limit {
                break;
            }
        }
        let mut text = self
            .conn()
            .prepare_cached("SELECT text FROM search WHERE rowid = ?1")?;
        let terms: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        found
            .into_iter()
            .map(|(rowid, id, kind)| {
                let content: String = text.query_row([rowid], |r| r.get(0))?;
                Ok(Hit {
                    session: self.session(&id)?,
                    kind,
                    snippet: snippet(&content, &terms),
                })
            })
            .collect()
    }

    /// Everything recorded of a session.
    pub fn export(&self, id: &str) -> Result<Exported, StoreError> {
        let session = self.session(id)?;
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(
            "SELECT role, content, tool_calls, tool_call_id, created_at, dropped, id, said, partial FROM messages WHERE session_id = ?1 ORDER BY id",
        )?;
        let messages = stmt
            .query_map([id], |r| {
                let calls: String = r.get(2)?;
                Ok(StoredMessage {
                    role: r.get(0)?,
                    content: r.get(1)?,
                    tool_calls: serde_json::from_str(&calls).unwrap_or_default(),
                    tool_call_id: r.get(3)?,
                    created_at: r.get(4)?,
                    dropped: r.get::<_, i64>(5)? != 0,
                    id: r.get(6)?,
                    said: r.get(7)?,
                    partial: r.get::<_, i64>(8)? != 0,
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut stmt = conn.prepare_cached(
            "SELECT block_id, language, proposed_code, edited_code, decision, status, exit_code, signal, duration_ms, output, created_at,
                    skip_reason, tail, notes, state_lost, after_message, dropped, caller, images
             FROM blocks WHERE session_id = ?1 ORDER BY block_id",
        )?;
        let blocks = stmt
            .query_map([id], |r| {
                Ok(StoredBlock {
                    block_id: r.get(0)?,
                    language: r.get(1)?,
                    proposed_code: r.get(2)?,
                    edited_code: r.get(3)?,
                    decision: r.get(4)?,
                    status: r.get(5)?,
                    exit_code: r.get(6)?,
                    signal: r.get(7)?,
                    duration_ms: r.get(8)?,
                    output: r.get(9)?,
                    created_at: r.get(10)?,
                    skip_reason: r.get(11)?,
                    tail: r.get(12)?,
                    notes: serde_json::from_str(&r.get::<_, String>(13)?).unwrap_or_default(),
                    state_lost: r.get::<_, i64>(14)? != 0,
                    after_message: r.get(15)?,
                    dropped: r.get::<_, i64>(16)? != 0,
                    interrupted: false,
                    caller: r.get(17)?,
                    images: super::images::from_column(&r.get::<_, String>(18)?, self.data_dir()),
                })
            })?
            .collect::<Result<Vec<StoredBlock>, _>>()?;
        let mut blocks = blocks;
        for b in &mut blocks {
            let started = matches!(b.decision.as_str(), "run" | "edited" | "user");
            if started && b.status.is_none() {
                b.interrupted = true;
                if b.tail.is_none() {
                    b.tail = self.partial_output(id, b.block_id, PARTIAL_SHOWN)?;
                }
            }
        }
        let mut stmt = conn.prepare_cached(
            "SELECT kind, message, created_at FROM events WHERE session_id = ?1 ORDER BY id",
        )?;
        let events = stmt
            .query_map([id], |r| {
                Ok(StoredEvent {
                    kind: r.get(0)?,
                    message: r.get(1)?,
                    created_at: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(Exported {
            session,
            messages,
            blocks,
            events,
        })
    }

    /// The output a block had printed when oi-tui stopped, as text (escapes stripped, the
    /// middle cut when longer than `max` characters, as the engine cuts a block's output);
    /// None when it printed nothing that was stored.
    pub(super) fn partial_output(
        &self,
        id: &str,
        block: i64,
        max: usize,
    ) -> Result<Option<String>, StoreError> {
        let mut stmt = self.conn().prepare_cached(
            "SELECT data, skipped FROM partial_output WHERE session_id = ?1 AND block_id = ?2 ORDER BY id",
        )?;
        let mut rows = stmt.query(params![id, block])?;
        let mut capture = crate::exec::TextCapture::new(max);
        let mut any = false;
        while let Some(row) = rows.next()? {
            let data: Vec<u8> = row.get(0)?;
            let skipped: i64 = row.get(1)?;
            if skipped > 0 {
                capture.feed(
                    format!(
                        "\r\n[… {} not kept …]\r\n",
                        crate::exec::human_bytes(skipped as u64)
                    )
                    .as_bytes(),
                );
            }
            capture.feed(&data);
            any = true;
        }
        if !any {
            return Ok(None);
        }
        let text = capture.finish().text;
        Ok((!text.trim().is_empty()).then_some(text))
    }

    /// The conversation to resume: the messages not dropped by /undo or /reset, with a
    /// result for every tool call oi-tui stopped before answering (see
    /// `resume_conversation`), its output cut as the engine's default cuts it.
    pub fn resume_messages(&self, id: &str) -> Result<Vec<Message>, StoreError> {
        Ok(self.resume_conversation(id, DEFAULT_MAX_OUTPUT)?.0)
    }

    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let n = self
            .conn()
            .execute("DELETE FROM sessions WHERE id = ?1", [id])?;
        if n == 0 {
            return Err(StoreError::NotFound(id.to_string()));
        }
        super::images::remove_session(self.data_dir(), id).map_err(|source| StoreError::Io {
            path: super::images::session_dir(self.data_dir(), id),
            source,
        })
    }

    pub fn rename(&self, id: &str, title: &str) -> Result<(), StoreError> {
        let n = self.conn().execute(
            "UPDATE sessions SET title = ?2 WHERE id = ?1",
            params![id, title.trim()],
        )?;
        if n == 0 {
            return Err(StoreError::NotFound(id.to_string()));
        }
        Ok(())
    }
}

/// About 80 characters of `text` around the first word that starts with a query term, with
/// that word in `«` `»` (brackets are common in output; these are not).
fn snippet(text: &str, terms: &[String]) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    // A word matches when one of its tokens (split as FTS splits them) starts with a term.
    let hit = words.iter().position(|w| {
        w.split(|c: char| !c.is_alphanumeric()).any(|token| {
            let token = token.to_lowercase();
            terms
                .iter()
                .any(|t| !t.is_empty() && token.starts_with(t.trim_matches('"')))
        })
    });
    let Some(at) = hit else {
        return words.iter().take(12).copied().collect::<Vec<_>>().join(" ");
    };
    let start = at.saturating_sub(6);
    let end = (at + 7).min(words.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    for (i, w) in words[start..end].iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if start + i == at {
            out.push('«');
            out.push_str(w);
            out.push('»');
        } else {
            out.push_str(w);
        }
    }
    if end < words.len() {
        out.push('…');
    }
    out
}

/// Words as FTS5 prefix terms, quoted so that no input can be a syntax error.
fn fts_query(query: &str) -> String {
    query
        .split_whitespace()
        .map(|w| w.replace('"', ""))
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\"*"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `2026-11-30 04:15` in local time.
pub fn format_time(ms: i64) -> String {
    let secs = (ms / 1000) as libc::time_t;
    // SAFETY: localtime_r(3) writes into a local we own.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&secs, &mut tm).is_null() {
            return ms.to_string();
        }
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday,
            tm.tm_hour,
            tm.tm_min
        )
    }
}
