//! The conversation with `assets/remote/helper.sh` over the session's SSH connection: one
//! command at a time, each answered by lines that end with `.OK SEQ` or `.ERR SEQ MESSAGE`.
//!
//! A writer thread owns the helper's standard input (a large block of code must not hold up
//! a tokio worker while a slow link drains it); a reader thread parses its standard output
//! and hands each finished reply to whoever waits for it. Replies come in the order the
//! commands went, so the lines that come before a reply's end belong to the oldest command
//! still waiting. When the helper's output ends (the connection dropped), everyone waiting
//! hears so.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// What a command answered: its lines (`.WORD rest`, as `(WORD, rest)`) and any file bytes.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    pub lines: Vec<(String, String)>,
    pub data: Vec<u8>,
}

impl Reply {
    /// The values of the lines tagged `word`.
    pub fn values<'a>(&'a self, word: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.lines
            .iter()
            .filter(move |(w, _)| w == word)
            .map(|(_, v)| v.as_str())
    }
}

struct Waiting {
    seq: u64,
    reply: Reply,
    tx: Option<oneshot::Sender<Result<Reply, String>>>,
}

#[derive(Default)]
struct Shared {
    waiting: Mutex<VecDeque<Waiting>>,
    /// The helper's output ended: the connection is gone.
    closed: AtomicBool,
}

/// The helper's end of the conversation.
pub(crate) struct Helper {
    shared: Arc<Shared>,
    seq: AtomicU64,
    /// Commands go to the writer thread, in order.
    writer: Mutex<Option<std::sync::mpsc::Sender<Vec<u8>>>>,
}

/// Why a command got no answer, for the person.
pub(crate) const GONE: &str = "the connection to the host was lost";

impl Helper {
    /// Starts the threads over the helper process's pipes. The first reply (to the script
    /// itself) has sequence number 0.
    pub fn start(
        stdin: std::process::ChildStdin,
        stdout: std::process::ChildStdout,
        begin: String,
    ) -> std::io::Result<(Helper, oneshot::Receiver<Result<Reply, String>>)> {
        let shared = Arc::new(Shared::default());
        let (first_tx, first_rx) = oneshot::channel();
        if let Ok(mut waiting) = shared.waiting.lock() {
            waiting.push_back(Waiting {
                seq: 0,
                reply: Reply::default(),
                tx: Some(first_tx),
            });
        }
        let reader_shared = shared.clone();
        std::thread::Builder::new()
            .name("ssh-helper-reader".into())
            .spawn(move || read_loop(stdout, &begin, &reader_shared))?;
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::Builder::new()
            .name("ssh-helper-writer".into())
            .spawn(move || {
                let mut stdin = stdin;
                while let Ok(bytes) = rx.recv() {
                    if stdin.write_all(&bytes).and_then(|_| stdin.flush()).is_err() {
                        return;
                    }
                }
                // The sender is gone: the helper's input closes, and it cleans up and ends.
            })?;
        Ok((
            Helper {
                shared,
                seq: AtomicU64::new(1),
                writer: Mutex::new(Some(tx)),
            },
            first_rx,
        ))
    }

    /// Sends raw text (the script itself, before any command).
    pub fn send_raw(&self, text: &[u8]) -> bool {
        self.writer
            .lock()
            .ok()
            .and_then(|w| w.as_ref().map(|tx| tx.send(text.to_vec()).is_ok()))
            .unwrap_or(false)
    }

    /// Sends a command: `make` builds its text from the sequence number. The answer comes
    /// on the returned receiver.
    pub fn command(
        &self,
        make: impl FnOnce(u64) -> String,
    ) -> oneshot::Receiver<Result<Reply, String>> {
        let (tx, rx) = oneshot::channel();
        if self.shared.closed.load(Ordering::Acquire) {
            let _ = tx.send(Err(GONE.to_string()));
            return rx;
        }
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let text = make(seq);
        // Registered and written under one lock, so that the order of the queue is the
        // order of the commands.
        let Ok(mut waiting) = self.shared.waiting.lock() else {
            let _ = tx.send(Err(GONE.to_string()));
            return rx;
        };
        let sent = self
            .writer
            .lock()
            .ok()
            .and_then(|w| w.as_ref().map(|w| w.send(text.into_bytes()).is_ok()))
            .unwrap_or(false);
        if sent {
            waiting.push_back(Waiting {
                seq,
                reply: Reply::default(),
                tx: Some(tx),
            });
        } else {
            let _ = tx.send(Err(GONE.to_string()));
        }
        rx
    }

    /// Sends a command and waits for its answer, at most `limit`.
    pub async fn call(
        &self,
        make: impl FnOnce(u64) -> String,
        limit: Duration,
    ) -> Result<Reply, String> {
        let rx = self.command(make);
        match tokio::time::timeout(limit, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err(GONE.to_string()),
            Err(_) => Err(format!(
                "the host did not answer within {}",
                super::super::format_duration(limit)
            )),
        }
    }

    /// Whether the helper's output has ended.
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Closes the helper's input: it kills what the session left and removes its
    /// directory, then ends.
    pub fn close(&self) {
        if let Ok(mut writer) = self.writer.lock() {
            writer.take();
        }
    }
}

/// Finishes the oldest waiting reply, if its sequence number is `seq`.
fn finish(shared: &Shared, seq: u64, outcome: Result<(), String>) {
    let Ok(mut waiting) = shared.waiting.lock() else {
        return;
    };
    if waiting.front().is_some_and(|w| w.seq == seq)
        && let Some(mut done) = waiting.pop_front()
        && let Some(tx) = done.tx.take()
    {
        let _ = tx.send(outcome.map(|()| std::mem::take(&mut done.reply)));
    }
}

/// Reads replies; nothing counts before the line `.BEGIN TOKEN` (`begin`), which only the
/// helper can print: a login's chatter before it cannot pass for a reply, even one that
/// looks like `.OK 0`.
fn read_loop(stdout: std::process::ChildStdout, begin: &str, shared: &Shared) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    let mut begun = false;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if !begun {
            begun = text == begin;
            continue;
        }
        // Anything that is not a reply line (a login script's chatter) is ignored.
        let Some(rest) = text.strip_prefix('.') else {
            continue;
        };
        let (word, value) = rest.split_once(' ').unwrap_or((rest, ""));
        match word {
            "OK" => {
                if let Ok(seq) = value.trim().parse() {
                    finish(shared, seq, Ok(()));
                }
            }
            "ERR" => {
                let (seq, message) = value.split_once(' ').unwrap_or((value, ""));
                if let Ok(seq) = seq.parse() {
                    finish(shared, seq, Err(message.to_string()));
                }
            }
            "DATA" => {
                let length = value
                    .split_once(' ')
                    .and_then(|(_, n)| n.trim().parse::<u64>().ok())
                    .unwrap_or(0);
                let mut data = Vec::new();
                if (&mut reader).take(length).read_to_end(&mut data).is_err() {
                    break;
                }
                if let Ok(mut waiting) = shared.waiting.lock()
                    && let Some(front) = waiting.front_mut()
                {
                    front.reply.data = data;
                }
            }
            _ => {
                if let Ok(mut waiting) = shared.waiting.lock()
                    && let Some(front) = waiting.front_mut()
                {
                    front
                        .reply
                        .lines
                        .push((word.to_string(), value.to_string()));
                }
            }
        }
    }
    shared.closed.store(true, Ordering::Release);
    if let Ok(mut waiting) = shared.waiting.lock() {
        for mut w in waiting.drain(..) {
            if let Some(tx) = w.tx.take() {
                let _ = tx.send(Err(GONE.to_string()));
            }
        }
    }
}

/// Quotes a word for `sh`.
pub(crate) fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// A command whose body is `body`, as a here-document with a terminator the body cannot
/// hold.
pub(crate) fn with_body(command: &str, body: &str) -> String {
    let end = format!("OI_TUI_END_{}", uuid::Uuid::new_v4().simple());
    let newline = if body.ends_with('\n') || body.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{command} <<'{end}'\n{body}{newline}{end}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }

    #[test]
    fn a_body_always_ends_before_its_terminator() {
        let text = with_body("oi_put 3 f", "print(1)");
        let mut lines = text.lines();
        assert!(
            lines
                .next()
                .is_some_and(|l| l.starts_with("oi_put 3 f <<'OI_TUI_END_"))
        );
        assert_eq!(lines.next(), Some("print(1)"));
        assert!(lines.next().is_some_and(|l| l.starts_with("OI_TUI_END_")));
        assert!(text.ends_with('\n'));
    }
}
