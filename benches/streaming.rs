//! Streaming figures against the scripted model server: a tool call of 420 KB of code sent
//! in fragments of 5 characters (about 86,000 of them), from its first fragment on screen to
//! the block awaiting approval, headless (`--json`, first `block_delta` line to the
//! `block_proposed` line) and in the workbench (in a PTY this benchmark owns: from the
//! first frame that shows the code streaming to the one that asks for a decision), with the
//! process's peak RSS; and a server that streams without end: fast (cut at the default size
//! limit) and slow (for 30 s, cut by `--reply-timeout 30`), with the RSS sampled as it goes.
//!
//! Run with `cargo bench --bench streaming [headless|workbench|endless]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/suite/model_server.rs"]
#[allow(dead_code)]
mod model_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use model_server::{ModelServer, Reply};
use portable_pty::CommandBuilder;
use tui_term::vt100;

mod support;
use support::{Selection, ms};

const BIN: &str = env!("CARGO_BIN_EXE_oi-tui");
const CODE_SIZE: usize = 420 * 1024;

fn main() {
    let runtime = support::runtime();
    let selection = Selection::from_args();
    let code = big_code();
    if selection.wants("headless") {
        let server = runtime.block_on(ModelServer::start(vec![
            Reply::tool("python", &code).fragments_of(5),
            Reply::text("Done."),
        ]));
        let (took, rss) = headless(&server, &code);
        println!(
            "420 KB tool call, headless --json: first to last fragment {:.0} ms, peak RSS {:.1} MB",
            ms(took),
            rss as f64 / 1024.0
        );
    }
    if selection.wants("workbench") {
        let server = runtime.block_on(ModelServer::start(vec![
            Reply::tool("python", &code).fragments_of(5),
        ]));
        let (took, rss) = workbench(&server);
        println!(
            "420 KB tool call, workbench 200x50: first to last fragment {:.0} ms, peak RSS {:.1} MB",
            ms(took),
            rss as f64 / 1024.0
        );
    }
    if selection.wants("endless") {
        let server = runtime.block_on(ModelServer::start(vec![Reply::text("Go: ").endless()]));
        let (took, samples) = endless(&server, &[]);
        println!(
            "endless fast stream, default limits: cut after {:.0} ms, RSS (MB) {}",
            ms(took),
            mb(&samples)
        );
        let server = runtime.block_on(ModelServer::start(vec![
            Reply::text("Go: ").endless().slow(Duration::from_millis(1)),
        ]));
        let (took, samples) = endless(&server, &["--reply-timeout", "30"]);
        println!(
            "endless slow stream for 30 s: cut after {:.1} s, RSS (MB) every 2 s {}",
            took.as_secs_f64(),
            mb(&samples)
        );
    }
}

fn mb(samples: &[u64]) -> String {
    samples
        .iter()
        .map(|kb| format!("{:.1}", *kb as f64 / 1024.0))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Python of `CODE_SIZE` bytes, with quotes and non-ASCII to decode.
fn big_code() -> String {
    let mut code = String::new();
    let mut i = 0;
    while code.len() < CODE_SIZE {
        code.push_str(&format!(
            "x{i} = \"line {i}: \\\"quoted\\\" é\\tend\"  # {}\n",
            "pad".repeat(8)
        ));
        i += 1;
    }
    code
}

/// A process's resident set now and at its peak, in KB.
fn rss(pid: u32) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn headless(server: &ModelServer, code: &str) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "--json",
            "--task",
            "big",
            "--model",
            "openai/bench",
            "--api-base",
        ])
        .arg(server.base("openai"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    let mut peak = 0;
    let mut streamed = 0;
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        let line = line.unwrap();
        if let Some((_, hwm)) = rss(pid) {
            peak = peak.max(hwm);
        }
        if line.contains("\"event\":\"block_delta\"") {
            first.get_or_insert_with(Instant::now);
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            streamed += v["delta"].as_str().unwrap().len();
        } else if line.contains("\"event\":\"block_proposed\"") {
            last = Some(Instant::now());
        }
    }
    child.wait().unwrap();
    assert_eq!(streamed, code.len(), "the deltas add up to the code");
    (last.unwrap() - first.unwrap(), peak)
}

fn workbench(server: &ModelServer) -> (Duration, u64) {
    let (cols, rows) = (200u16, 50u16);
    let dir = tempfile::tempdir().unwrap();
    let pair = support::workbench_pty(cols, rows);
    let mut cmd = CommandBuilder::new(BIN);
    cmd.args([
        "--model",
        "openai/bench",
        "--api-base",
        &server.base("openai"),
    ]);
    cmd.arg("--data-dir");
    cmd.arg(dir.path().join("data"));
    cmd.cwd(dir.path());
    cmd.env("HOME", dir.path());
    cmd.env("XDG_CONFIG_HOME", dir.path().join("config"));
    cmd.env("TERM", "xterm-256color");
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let pid = child.process_id().unwrap();
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut writer = pair.master.take_writer().unwrap();
    let (tx, reads) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut screen = vt100::Parser::new(rows, cols, 0);
    let mut peak = 0;
    let mut wait_for = |screen: &mut vt100::Parser, needle: &str| -> Instant {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some((_, hwm)) = rss(pid) {
                peak = peak.max(hwm);
            }
            if screen.screen().contents().contains(needle) {
                return Instant::now();
            }
            assert!(
                Instant::now() < deadline,
                "never saw {needle:?}:\n{}",
                screen.screen().contents()
            );
            if let Ok(bytes) = reads.recv_timeout(Duration::from_millis(5)) {
                screen.process(&bytes);
            }
        }
    };
    wait_for(&mut screen, "Input");
    writer.write_all(b"stream a big block\r").unwrap();
    writer.flush().unwrap();
    let first = wait_for(&mut screen, "streaming…");
    let last = wait_for(&mut screen, "awaiting your decision");
    let _ = child.kill();
    let _ = child.wait();
    (last - first, peak)
}

/// Runs headless against an endless server; returns how long until it ended and its RSS
/// every 2 s (its peak last).
fn endless(server: &ModelServer, extra: &[&str]) -> (Duration, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut child = Command::new(BIN)
        .args([
            "-y",
            "--task",
            "talk",
            "--model",
            "openai/bench",
            "--api-base",
        ])
        .arg(server.base("openai"))
        .args(extra)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .current_dir(dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut samples = Vec::new();
    let mut next = Instant::now();
    let mut peak = 0;
    loop {
        if let Some((now, hwm)) = rss(pid) {
            peak = peak.max(hwm);
            if Instant::now() >= next {
                samples.push(now);
                next += Duration::from_secs(2);
            }
        }
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    samples.push(peak);
    (started.elapsed(), samples)
}
