//! Latency of the real workbench binary as a person sees it: from a streamed token's arrival
//! to the screen update that shows it, and from a keystroke to its echo in the input.
//!
//! A tiny OpenAI-compatible server on 127.0.0.1 streams 200 unique words (`qzaa `, `qzab `,
//! …) one every 50 ms, so that the reply is one long paragraph that wraps several times, and
//! notes the instant right after each chunk is written and flushed. The workbench runs in a
//! PTY this benchmark owns (200×60, then 80×24); a thread reads its output and stamps each
//! read. The bytes go through a VT emulator (vt100), so a word counts as shown at the first
//! read after which the emulated screen holds it, however ratatui's diff splits its writes
//! (only changed cells are written, with cursor moves between them). Keystrokes are written
//! one at a time, 30 ms apart, and timed to the read after which the input shows the typed
//! text so far. The figures are p50, p90, p99 and max, with how many were never seen.
//!
//! Run with `cargo bench --bench latency [token|keystroke|200x60|80x24]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tui_term::vt100;

mod support;
use support::{Selection, ms};

const BIN: &str = env!("CARGO_BIN_EXE_oi-tui");
const TOKENS: usize = 200;
const TOKEN_GAP: Duration = Duration::from_millis(50);
const KEY_LINES: usize = 5;
const KEYS_PER_LINE: usize = 40;
const KEY_GAP: Duration = Duration::from_millis(30);
/// What the person types to start the turn; unlike anything else on the screen.
const PROMPT: &str = "stream the benchmark words";

fn main() {
    let runtime = support::runtime();
    let selection = Selection::from_args();
    for (cols, rows) in [(200u16, 60u16), (80, 24)] {
        let keys_name = format!("keystroke to echo ({cols}x{rows})");
        let tokens_name = format!("token arrival to screen ({cols}x{rows})");
        let keys = selection.wants(&keys_name);
        let tokens = selection.wants(&tokens_name);
        if !keys && !tokens {
            continue;
        }
        let server = runtime.block_on(Server::start());
        let mut workbench = Workbench::start(&server, cols, rows);
        if workbench
            .wait_for(|s| s.contains("Input"), Duration::from_secs(30))
            .is_none()
        {
            panic!("the workbench did not open:\n{}", workbench.text());
        }
        if keys {
            keystrokes(&mut workbench, &keys_name);
        }
        if tokens {
            token_arrival(&mut workbench, &server, &tokens_name);
        }
        workbench.quit();
    }
}

/// The token of chunk `i`: `qz` and two letters, unlike any word the workbench prints.
fn token(i: usize) -> String {
    let letter = |n: usize| (b'a' + (n % 26) as u8) as char;
    format!("qz{}{}", letter(i / 26), letter(i))
}

fn token_arrival(workbench: &mut Workbench, server: &Server, name: &str) {
    let tokens: Vec<String> = (0..TOKENS).map(token).collect();
    workbench.send(PROMPT.as_bytes());
    if workbench
        .wait_for(|s| s.contains(PROMPT), Duration::from_secs(5))
        .is_none()
    {
        panic!("the input did not show the message:\n{}", workbench.text());
    }
    workbench.send(b"\r");
    let start = Instant::now();
    let mut seen: Vec<Option<Instant>> = vec![None; TOKENS];
    loop {
        if let Some(at) = workbench.pump(Instant::now() + Duration::from_millis(200)) {
            let text = workbench.text();
            let words: HashSet<&str> = text
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| w.starts_with("qz"))
                .collect();
            for (i, t) in tokens.iter().enumerate() {
                if seen[i].is_none() && words.contains(t.as_str()) {
                    seen[i] = Some(at);
                }
            }
        }
        let done = server.log.lock().unwrap().done;
        let all_seen = seen.iter().all(Option::is_some);
        match done {
            // Once the stream has ended, give the last frames a moment.
            Some(done) if all_seen || done.elapsed() > Duration::from_secs(3) => break,
            None if start.elapsed() > Duration::from_secs(60) => {
                panic!("the stream did not end:\n{}", workbench.text())
            }
            _ => {}
        }
    }
    let (sent, done) = {
        let log = server.log.lock().unwrap();
        (log.sent.clone(), log.done)
    };
    assert_eq!(sent.len(), TOKENS, "the server streamed every token");
    let mut latencies = Vec::new();
    let mut after_end = 0;
    for (sent, seen) in sent.iter().zip(&seen) {
        if let Some(seen) = seen {
            // A frame may land between the write and the server's clock read: that is 0.
            latencies.push(seen.saturating_duration_since(*sent));
            if done.is_some_and(|d| *seen > d) {
                after_end += 1;
            }
        }
    }
    let unseen = TOKENS - latencies.len();
    let mut line = format!(
        "{name}: {}, {unseen} of {TOKENS} unseen",
        figures(latencies)
    );
    if after_end > 0 {
        line.push_str(&format!(
            "; {after_end} first shown only after the reply ended (the chat shows whole lines only while streaming)"
        ));
    }
    if unseen > 0 {
        line.push_str("; the unseen tokens were never on the screen while the reply streamed or in the 3 s after it");
    }
    println!("{line}");
}

fn keystrokes(workbench: &mut Workbench, name: &str) {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut latencies = Vec::new();
    let mut unseen = 0;
    for line in 0..KEY_LINES {
        // A marker first, so that the typed text is recognisable from its first character.
        let mut typed = String::from("QQ");
        workbench.send(typed.as_bytes());
        if workbench
            .wait_for(|s| s.contains("QQ"), Duration::from_secs(5))
            .is_none()
        {
            panic!("the input does not echo:\n{}", workbench.text());
        }
        for j in 0..KEYS_PER_LINE {
            let c = ALPHABET[(line * 11 + j * 7) % ALPHABET.len()];
            typed.push(c as char);
            let sent = workbench.send(&[c]);
            match workbench.wait_for(|s| s.contains(typed.as_str()), Duration::from_secs(2)) {
                Some(at) => latencies.push(at.saturating_duration_since(sent)),
                None => unseen += 1,
            }
            if let Some(rest) = KEY_GAP.checked_sub(sent.elapsed()) {
                std::thread::sleep(rest);
            }
        }
        // Clear the input for the next line (the line stays short: no wrapping at 80 columns).
        workbench.send(&vec![0x7f; typed.len()]);
        if workbench
            .wait_for(|s| !s.contains("QQ"), Duration::from_secs(5))
            .is_none()
        {
            panic!("the input did not clear:\n{}", workbench.text());
        }
    }
    let total = KEY_LINES * KEYS_PER_LINE;
    println!("{name}: {}, {unseen} of {total} unseen", figures(latencies));
}

/// `p50 3.1 ms, p90 …, p99 9.8 ms, max 14.0 ms` (nearest rank).
fn figures(mut v: Vec<Duration>) -> String {
    if v.is_empty() {
        return "nothing seen".to_string();
    }
    v.sort();
    let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    format!(
        "p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        ms(rank(0.50)),
        ms(rank(0.90)),
        ms(rank(0.99)),
        ms(v[v.len() - 1])
    )
}

/// The workbench binary in a PTY, its output read on a thread and emulated.
struct Workbench {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    reads: mpsc::Receiver<(Instant, Vec<u8>)>,
    screen: vt100::Parser,
    // Kept alive while the child runs; dropped after it has exited.
    _master: Box<dyn MasterPty + Send>,
    _dir: tempfile::TempDir,
}

impl Workbench {
    fn start(server: &Server, cols: u16, rows: u16) -> Workbench {
        let dir = tempfile::tempdir().unwrap();
        let pair = support::workbench_pty(cols, rows);
        let mut cmd = CommandBuilder::new(BIN);
        let base = format!("http://{}/v1", server.addr);
        let data = dir.path().join("data");
        cmd.args(["--model", "openai/bench", "--api-base", &base, "--data-dir"]);
        cmd.arg(&data);
        cmd.cwd(dir.path());
        cmd.env("HOME", dir.path());
        cmd.env("XDG_CONFIG_HOME", dir.path().join("config"));
        cmd.env("XDG_DATA_HOME", dir.path().join("share"));
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let (tx, reads) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Workbench {
            child,
            writer,
            reads,
            screen: vt100::Parser::new(rows, cols, 0),
            _master: pair.master,
            _dir: dir,
        }
    }

    /// Writes bytes as typed; returns the instant just before the write.
    fn send(&mut self, bytes: &[u8]) -> Instant {
        let at = Instant::now();
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
        at
    }

    /// The emulated screen's text.
    fn text(&self) -> String {
        self.screen.screen().contents()
    }

    /// Takes the next read (waiting at most until `until`) into the emulator; its instant.
    fn pump(&mut self, until: Instant) -> Option<Instant> {
        let wait = until.saturating_duration_since(Instant::now());
        let (at, bytes) = self.reads.recv_timeout(wait).ok()?;
        self.screen.process(&bytes);
        Some(at)
    }

    /// The instant of the first read after which the screen passes `check` (now if it already
    /// does), or None after `limit`.
    fn wait_for(&mut self, check: impl Fn(&str) -> bool, limit: Duration) -> Option<Instant> {
        if check(&self.text()) {
            return Some(Instant::now());
        }
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(at) = self.pump(deadline)
                && check(&self.text())
            {
                return Some(at);
            }
        }
        None
    }

    /// Ctrl-Q, then waits for the exit; kills the binary if it does not quit.
    fn quit(mut self) {
        self.send(b"\x11");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                if !status.success() {
                    println!("  (the workbench quit with {status:?})");
                }
                return;
            }
            // Keep reading, so that the child never blocks on a full PTY.
            self.pump(Instant::now() + Duration::from_millis(50));
        }
        println!("  (the workbench did not quit on Ctrl-Q within 10 s: killed)");
    }
}

impl Drop for Workbench {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// What the server has streamed: the instant after each token chunk, and after `[DONE]`.
#[derive(Default)]
struct Log {
    sent: Vec<Instant>,
    done: Option<Instant>,
    chats: usize,
}

/// A tiny OpenAI-compatible server: the first chat request gets the timed stream of tokens,
/// later ones a short reply; `GET …/models` lists `bench`; anything else is a 404 in JSON.
struct Server {
    addr: SocketAddr,
    log: Arc<Mutex<Log>>,
}

impl Server {
    async fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let shared = log.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let log = shared.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, log).await;
                });
            }
        });
        Server { addr, log }
    }
}

async fn serve(mut stream: TcpStream, log: Arc<Mutex<Log>>) -> std::io::Result<()> {
    let Some((method, path)) = read_request(&mut stream).await? else {
        return Ok(());
    };
    let path = path.split('?').next().unwrap_or_default().to_string();
    if method == "GET" && path.ends_with("/models") {
        let list = json!({"object": "list", "data": [{"id": "bench", "object": "model"}]});
        return respond_json(&mut stream, 200, &list).await;
    }
    if method != "POST" || !path.ends_with("/chat/completions") {
        let error = json!({"error": {"message": format!("no route for {method} {path}")}});
        return respond_json(&mut stream, 404, &error).await;
    }
    let first = {
        let mut log = log.lock().unwrap();
        log.chats += 1;
        log.chats == 1
    };
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).await?;
    let role = json!({"id": "b1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]});
    stream.write_all(sse(&role).as_bytes()).await?;
    stream.flush().await?;
    if first {
        let start = tokio::time::Instant::now();
        for i in 0..TOKENS {
            tokio::time::sleep_until(start + TOKEN_GAP * (i as u32 + 1)).await;
            stream
                .write_all(content(&format!("{} ", token(i))).as_bytes())
                .await?;
            stream.flush().await?;
            log.lock().unwrap().sent.push(Instant::now());
        }
        tokio::time::sleep_until(start + TOKEN_GAP * (TOKENS as u32 + 1)).await;
    } else {
        stream.write_all(content("ok.").as_bytes()).await?;
    }
    let finish = json!({"id": "b1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    stream.write_all(sse(&finish).as_bytes()).await?;
    stream.write_all(b"data: [DONE]\r\n\r\n").await?;
    stream.flush().await?;
    if first {
        log.lock().unwrap().done = Some(Instant::now());
    }
    stream.shutdown().await
}

fn sse(v: &Value) -> String {
    format!("data: {v}\r\n\r\n")
}

fn content(text: &str) -> String {
    sse(
        &json!({"id": "b1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
    )
}

/// The method and path of a request, its body read and dropped.
async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<(String, String)>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let end = loop {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_string();
    let length: usize = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf.len() - end;
    while body < length {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body += n;
    }
    let mut first = head.lines().next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    Ok(Some((method, path)))
}

async fn respond_json(stream: &mut TcpStream, code: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}
