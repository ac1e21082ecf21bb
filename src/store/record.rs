//! Writing a session as it happens. The engine hands every history message and every event
//! to a `Recorder`, whose thread writes each step as one transaction, so that what is on
//! screen is on disk a moment later and a `kill -9` costs nothing already shown. What is still
//! streaming (a reply's text, a running block's output) is written in batches, at least every
//! 200 ms or 64 KB, so that a `kill -9` loses at most the last fraction of a second.
//!
//! Nothing is dropped in silence: a write that fails (a full disk, a read-only or damaged
//! store) is kept in memory, reported at once to the face (`Event::StoreTrouble`), and tried
//! again until it succeeds (`Event::StoreRecovered`). Memory for unsaved steps is bounded;
//! what does not fit is counted and said. `health()` tells a face, at the end, what could
//! not be saved.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Store;
use super::write::{Live, Writer};
use crate::llm::{Message, Role};
use crate::protocol::{BlockId, Event};

pub use crate::secrets::Redactor;

/// Unsaved steps kept in memory, at most (in bytes of text, roughly).
const PENDING_BYTES: usize = 64 * 1024 * 1024;
/// First wait before a failed write is tried again; it doubles up to `RETRY_MAX`.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub(super) enum Write {
    /// A message, what the person said (for a person's message with `!cmd` context added),
    /// and, for a reply, which streamed reply it completes.
    Message(Message, Option<String>, Option<u64>),
    Event(Event),
    /// Keep the first `messages` of the conversation; mark the rest dropped.
    Truncate(usize),
}

impl Write {
    /// What kind of record it is, in words for the person (`block result`, `message`).
    fn kind(&self) -> &'static str {
        match self {
            Write::Message(..) => "message",
            Write::Event(Event::ExecFinished { .. } | Event::ToolFinished { .. }) => "block result",
            Write::Event(Event::BlockProposed { .. }) => "proposed block",
            Write::Event(
                Event::ExecStarted { .. } | Event::ToolStarted { .. } | Event::BlockSkipped { .. },
            ) => "decision",
            Write::Event(_) => "event",
            Write::Truncate(_) => "undo",
        }
    }

    /// Roughly how much memory it holds.
    fn size(&self) -> usize {
        match self {
            Write::Message(m, said, _) => {
                m.content.len() + said.as_ref().map_or(0, String::len) + 256
            }
            Write::Event(Event::ExecFinished { result, .. }) => {
                result.output.len() * 2 + result.notes.iter().map(String::len).sum::<usize>() + 256
            }
            _ => 256,
        }
    }
}

enum Command {
    Write(Box<Write>),
    /// Something streamed into the live buffers: write it when the batch is due.
    Wake,
    /// Write everything now (retrying what failed once more), then answer with the health.
    Flush(mpsc::SyncSender<StoreHealth>),
    /// `Flush`, and once everything is written, clear the session's open mark: it is whole.
    Close(mpsc::SyncSender<StoreHealth>),
}

/// Records counted by kind: `1 block result, 2 messages`.
#[derive(Debug, Default, Clone)]
struct Kinds(std::collections::BTreeMap<&'static str, usize>);

impl Kinds {
    fn add(&mut self, kind: &'static str) {
        *self.0.entry(kind).or_default() += 1;
    }

    fn words(&self) -> String {
        self.0
            .iter()
            .map(|(kind, n)| match (*n, *kind) {
                (1, kind) => format!("1 {kind}"),
                (n, "decision") => format!("{n} decisions"),
                (n, kind) => format!("{n} {kind}s"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How the recording stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreHealth {
    /// Steps that could not be written yet (kept in memory, tried again).
    pub unsaved: usize,
    /// Steps that did not fit in memory while the store could not be written: lost.
    pub lost: usize,
    /// Why the last write failed; None when the last one succeeded.
    pub problem: Option<String>,
    /// What the unsaved and lost steps are: `1 block result, 2 messages`.
    pub what: String,
    /// The store's file.
    pub path: String,
}

impl StoreHealth {
    /// Everything handed to the recorder is in the store.
    pub fn all_saved(&self) -> bool {
        self.unsaved == 0 && self.lost == 0 && self.problem.is_none()
    }

    /// A sentence for the end of a run: what could not be saved, and where.
    pub fn summary(&self) -> String {
        let what = if self.what.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.what)
        };
        let mut text = format!(
            "{}{what} of this session could not be saved to {}",
            steps(self.unsaved + self.lost),
            self.path
        );
        if let Some(problem) = &self.problem {
            text.push_str(&format!(": {problem}"));
        }
        if self.lost > 0 {
            text.push_str(&format!(
                " ({} did not fit in memory while waiting)",
                steps(self.lost)
            ));
        }
        text.push_str(
            ". They are not in the store; `oi-tui sessions list` marks the session incomplete.",
        );
        text
    }
}

fn steps(n: usize) -> String {
    if n == 1 {
        "1 step".to_string()
    } else {
        format!("{n} steps")
    }
}

type Listener = Box<dyn Fn(Event) + Send>;

/// What the recorder shares with its thread.
pub(super) struct Shared {
    pub(super) live: Mutex<Live>,
    /// A `Wake` is on its way: live text needs no other (the channel stays small however
    /// fast output comes, even while the writer waits on the disk).
    woken: AtomicBool,
    health: Mutex<StoreHealth>,
    listener: Mutex<Option<Listener>>,
}

impl Shared {
    fn tell(&self, event: Event) {
        if let Ok(listener) = self.listener.lock()
            && let Some(listener) = listener.as_ref()
        {
            listener(event);
        }
    }
}

/// Records one session. Writing happens on a thread of its own; a failed write never stops
/// the session: it is reported and tried again (see the module's text).
pub struct Recorder {
    tx: mpsc::Sender<Command>,
    session_id: String,
    /// The id the session's next block gets (after those of a resumed session).
    first_block: BlockId,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("session_id", &self.session_id)
            .field("first_block", &self.first_block)
            .finish_non_exhaustive()
    }
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
        let shared = Arc::new(Shared {
            live: Mutex::new(Live::default()),
            woken: AtomicBool::new(false),
            health: Mutex::new(StoreHealth {
                path: store.path().display().to_string(),
                ..StoreHealth::default()
            }),
            listener: Mutex::new(None),
        });
        let writer = Writer::new(store, session_id.clone(), redactor);
        let thread_shared = shared.clone();
        let started = std::thread::Builder::new()
            .name("session-writer".into())
            .spawn(move || Keeper::new(writer, thread_shared, rx).run());
        if let Err(e) = started
            && let Ok(mut health) = shared.health.lock()
        {
            health.problem = Some(format!("the session writer could not start: {e}"));
        }
        Recorder {
            tx,
            session_id,
            first_block,
            shared,
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

    /// Who hears about trouble with the store (`StoreTrouble`, `StoreRecovered`): the
    /// engine passes them on to its face.
    pub fn set_listener(&self, listener: impl Fn(Event) + Send + 'static) {
        if let Ok(mut slot) = self.shared.listener.lock() {
            *slot = Some(Box::new(listener));
        }
    }

    pub fn message(&self, message: &Message) {
        self.user_message(message, None);
    }

    /// A user-role message as the model gets it, and what the person said when that differs:
    /// the engine adds the output of their `!cmd`s to their message, and (for models without
    /// tools) sends block results as a message they did not write at all (`Some("")`).
    pub fn user_message(&self, message: &Message, said: Option<&str>) {
        // A reply completes the text that streamed for it (see `Live`).
        let reply = (message.role == Role::Assistant).then(|| self.live(|l| l.reply_generation()));
        self.send(Command::Write(Box::new(Write::Message(
            message.clone(),
            said.map(str::to_string),
            reply,
        ))));
    }

    pub fn event(&self, event: &Event) {
        match event {
            Event::AssistantDelta { text } => {
                self.live(|l| l.reply_text(text));
                self.wake();
            }
            Event::ExecOutput { block_id, data } => {
                self.live(|l| l.output(*block_id, data));
                self.wake();
            }
            Event::RequestStarted { .. } => {
                self.live(|l| l.new_reply());
            }
            Event::BlockDelta { .. } | Event::Usage { .. } => {}
            other => self.send(Command::Write(Box::new(Write::Event(other.clone())))),
        }
    }

    pub fn truncate(&self, messages: usize) {
        self.send(Command::Write(Box::new(Write::Truncate(messages))));
    }

    /// Waits (up to 10 s) until everything sent so far is written, or has failed once more;
    /// returns how the recording stands.
    pub fn flush(&self) -> StoreHealth {
        self.flush_within(Duration::from_secs(10))
    }

    /// `flush`, waiting at most `limit` (on the way out of a signal, time is short).
    pub fn flush_within(&self, limit: Duration) -> StoreHealth {
        self.ask(Command::Flush, limit)
    }

    /// The session ends: writes everything (up to 10 s) and, when all of it is in the store,
    /// clears the mark that makes `sessions list` call it incomplete (see `incomplete`).
    /// Returns how the recording stands. A step recorded after this marks it open again.
    pub fn close(&self) -> StoreHealth {
        self.close_within(Duration::from_secs(10))
    }

    /// `close`, waiting at most `limit`.
    pub fn close_within(&self, limit: Duration) -> StoreHealth {
        self.ask(Command::Close, limit)
    }

    fn ask(
        &self,
        command: impl FnOnce(mpsc::SyncSender<StoreHealth>) -> Command,
        limit: Duration,
    ) -> StoreHealth {
        let (done, wait) = mpsc::sync_channel(1);
        if self.tx.send(command(done)).is_ok()
            && let Ok(health) = wait.recv_timeout(limit)
        {
            return health;
        }
        self.health()
    }

    /// How the recording stands now.
    pub fn health(&self) -> StoreHealth {
        self.shared
            .health
            .lock()
            .map(|h| h.clone())
            .unwrap_or_default()
    }

    fn live<T>(&self, f: impl FnOnce(&mut Live) -> T) -> T {
        match self.shared.live.lock() {
            Ok(mut live) => f(&mut live),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    fn wake(&self) {
        if !self.shared.woken.swap(true, Ordering::AcqRel) {
            self.send(Command::Wake);
        }
    }

    fn send(&self, command: Command) {
        if self.tx.send(command).is_err() {
            // The writer is gone: nothing more can be saved. Say so once.
            if let Ok(mut health) = self.shared.health.lock() {
                health.unsaved += 1;
                if health.problem.is_none() {
                    health.problem = Some("the session writer stopped".to_string());
                }
            }
        }
    }
}

/// How a `StoreTrouble` message begins; the workbench's banner says it in its own words.
pub const CANNOT_SAVE: &str = "The session cannot be saved: ";

/// The writer thread: writes in order, keeps what failed, tries again, and reports.
struct Keeper {
    writer: Writer,
    shared: Arc<Shared>,
    rx: mpsc::Receiver<Command>,
    /// A flush or close taken from the line early (with the steps before the live text,
    /// see `work`): answered before anything else is read.
    deferred: VecDeque<Command>,
    pending: VecDeque<Write>,
    pending_bytes: usize,
    lost: usize,
    /// What the lost steps were.
    lost_kinds: Kinds,
    /// Lost steps already said in the session's record (`missing`).
    lost_recorded: usize,
    /// Why the last write failed, while writes fail.
    failing: Option<String>,
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl Keeper {
    fn new(writer: Writer, shared: Arc<Shared>, rx: mpsc::Receiver<Command>) -> Keeper {
        Keeper {
            writer,
            shared,
            rx,
            deferred: VecDeque::new(),
            pending: VecDeque::new(),
            pending_bytes: 0,
            lost: 0,
            lost_kinds: Kinds::default(),
            lost_recorded: 0,
            failing: None,
            retry_at: None,
            backoff: RETRY_FIRST,
        }
    }

    fn run(mut self) {
        loop {
            let deadline = match (&self.failing, self.retry_at) {
                (Some(_), at) => at,
                (None, _) => self.writer.live_due(&self.shared.live),
            };
            let command = match (self.deferred.pop_front(), deadline) {
                (Some(command), _) => Ok(command),
                (None, Some(at)) => self
                    .rx
                    .recv_timeout(at.saturating_duration_since(Instant::now())),
                (None, None) => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            };
            match command {
                Ok(Command::Write(write)) => self.accept(*write),
                Ok(Command::Wake) => self.shared.woken.store(false, Ordering::Release),
                Ok(Command::Flush(done)) => {
                    self.work(true);
                    let _ = done.send(self.health());
                    continue;
                }
                Ok(Command::Close(done)) => {
                    self.close();
                    let _ = done.send(self.health());
                    continue;
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.close();
                    return;
                }
            }
            self.work(false);
        }
    }

    fn accept(&mut self, write: Write) {
        // The live output of a block that ended is superseded by its result.
        if let Write::Event(Event::ExecFinished { block_id, .. }) = &write {
            self.writer.block_ended(*block_id, &self.shared.live);
        }
        // The end of a turn is a moment to try again at once (then the backoff goes on).
        if let Write::Event(Event::TurnFinished { .. }) = &write
            && self.failing.is_some()
        {
            self.retry_at = Some(Instant::now());
        }
        let size = write.size();
        if self.pending_bytes + size > PENDING_BYTES {
            self.lost += 1;
            self.lost_kinds.add(write.kind());
            let reason = self.failing.clone().unwrap_or_else(|| {
                format!(
                    "a step of {} MB is more than oi-tui holds while a write waits",
                    size / (1024 * 1024)
                )
            });
            self.report(reason);
            return;
        }
        self.pending_bytes += size;
        self.pending.push_back(write);
    }

    /// Writes what waits: the steps in order, then the live text when its batch is due (or
    /// at once with `force`). While writes fail, only when the retry is due (or forced).
    fn work(&mut self, force: bool) {
        if self.failing.is_some() && !force && self.retry_at.is_some_and(|at| Instant::now() < at) {
            return;
        }
        if self.failing.is_some() {
            // A log grown to a file-size limit starts over (see `Writer::checkpoint`).
            self.writer.checkpoint();
        }
        loop {
            while let Some(write) = self.pending.front() {
                match self.writer.apply(write) {
                    Ok(()) => {
                        let size = write.size();
                        self.pending.pop_front();
                        self.pending_bytes = self.pending_bytes.saturating_sub(size);
                    }
                    Err(e) => return self.failed(&e),
                }
            }
            let due = force
                || self.failing.is_some()
                || self
                    .writer
                    .live_due(&self.shared.live)
                    .is_some_and(|at| at <= Instant::now());
            if !due {
                break;
            }
            // The live text goes after every step handed over before it: those still in
            // line are taken first (with the live text locked, so none can slip past), and
            // written before it. A writer held up (by the disk, or a busy machine) would
            // otherwise store a reply before the message that asked for it.
            let mut came = Vec::new();
            let rx = &self.rx;
            let ready = || {
                came.extend(rx.try_iter());
                came.is_empty()
            };
            match self.writer.write_live(&self.shared.live, ready) {
                Ok(true) => break,
                Ok(false) => {
                    for command in came {
                        match command {
                            Command::Write(write) => self.accept(*write),
                            Command::Wake => self.shared.woken.store(false, Ordering::Release),
                            other => self.deferred.push_back(other),
                        }
                    }
                }
                Err(e) => return self.failed(&e),
            }
        }
        if self.failing.take().is_some() {
            self.retry_at = None;
            self.backoff = RETRY_FIRST;
            self.set_health(None);
            // What was lost is said in the session's record, now that it can be written.
            if let Some(missing) = self.unrecorded_loss()
                && self.writer.add_missing(&missing).is_ok()
            {
                self.lost_recorded = self.lost;
            }
            let message = if self.lost > 0 {
                format!(
                    "The session is being saved again; {} could not be kept while the store failed and {} missing from it.",
                    steps(self.lost),
                    if self.lost == 1 { "is" } else { "are" }
                )
            } else {
                "The session is being saved again; nothing was lost.".to_string()
            };
            self.shared.tell(Event::StoreRecovered { message });
        }
    }

    /// The session ends: everything written, then its open mark cleared (with what was lost,
    /// if anything, said in its record). While writes fail the mark stays, so that
    /// `sessions list` calls the session incomplete even if oi-tui stops now.
    fn close(&mut self) {
        self.work(true);
        if self.failing.is_some() || !self.pending.is_empty() {
            return;
        }
        let missing = self.unrecorded_loss();
        match self.writer.close(missing.as_deref()) {
            Ok(()) => self.lost_recorded = self.lost,
            Err(e) => self.failed(&e),
        }
    }

    /// What was lost and is not said in the session's record yet.
    fn unrecorded_loss(&self) -> Option<String> {
        (self.lost > self.lost_recorded).then(|| {
            format!(
                "{} ({}) did not fit in memory while the store could not be written and are missing",
                steps(self.lost - self.lost_recorded),
                self.lost_kinds.words()
            )
        })
    }

    fn failed(&mut self, e: &rusqlite::Error) {
        let reason = super::describe_at(e, self.writer.path());
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(RETRY_MAX);
        self.report(reason);
    }

    /// Records the failure, and tells the face when it is new (or its reason changed, or
    /// steps were lost).
    fn report(&mut self, reason: String) {
        let new = self.failing.as_deref() != Some(reason.as_str());
        let lost_now = self.health().lost != self.lost;
        self.failing = Some(reason.clone());
        self.set_health(Some(reason.clone()));
        if new || lost_now {
            let health = self.health();
            // The reason first: a banner 80 columns wide shows that much at least.
            let what = if health.what.is_empty() {
                String::new()
            } else {
                format!(" ({})", health.what)
            };
            let when = match self.retry_at {
                Some(at) => format!(
                    "in {:.1} s, ",
                    at.saturating_duration_since(Instant::now()).as_secs_f64()
                ),
                None => String::new(),
            };
            // Nothing waits but the text that streams (a block's output, a reply).
            let kept = if health.unsaved == 0 {
                "what streams".to_string()
            } else {
                steps(health.unsaved)
            };
            let mut message = format!(
                "{CANNOT_SAVE}{reason}. oi-tui keeps {kept}{what} in memory and the run goes on; it tries again {when}at the end of the turn and before it exits; what is still unsaved then is lost, and the session is marked incomplete (the store: {}).",
                health.path,
            );
            if self.lost > 0 {
                message.push_str(&format!(
                    " {} did not fit in memory and {} lost.",
                    steps(self.lost),
                    if self.lost == 1 { "is" } else { "are" }
                ));
            }
            self.shared.tell(Event::StoreTrouble {
                message,
                unsaved: health.unsaved,
            });
        }
    }

    fn set_health(&self, problem: Option<String>) {
        let mut kinds = self.lost_kinds.clone();
        for write in &self.pending {
            kinds.add(write.kind());
        }
        if let Ok(mut health) = self.shared.health.lock() {
            health.unsaved = self.pending.len();
            health.lost = self.lost;
            health.problem = problem;
            health.what = kinds.words();
        }
    }

    fn health(&self) -> StoreHealth {
        self.shared
            .health
            .lock()
            .map(|h| h.clone())
            .unwrap_or_default()
    }
}

/// A new session id: time-ordered and unique (`20261130-041530-3f9a2c`).
fn new_id() -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", local_stamp(), &random[..6])
}

/// The local time to the second, as `20261130-041530`.
pub(super) fn local_stamp() -> String {
    // SAFETY: time(2) and localtime_r(3) write into locals we own.
    unsafe {
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
    }
}
