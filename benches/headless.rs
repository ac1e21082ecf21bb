//! Headless figures against the scripted model server: wall time and peak RSS of one turn
//! that runs one python block, and how fast streamed text goes through the transcript.
//!
//! Run with `cargo bench --bench headless`. Prints one line a figure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/suite/model_server.rs"]
#[allow(dead_code)]
mod model_server;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use model_server::{ModelServer, Reply};

mod support;
use support::median;

const BIN: &str = env!("CARGO_BIN_EXE_oi-tui");

fn main() {
    support::runtime().block_on(async {
        one_turn().await;
        stream_throughput().await;
    });
}

#[allow(clippy::zombie_processes)]
/// Runs oi-tui to its end; returns wall time, its own peak RSS (sampled from /proc) and the
/// peak RSS wait4 reports (the largest of it and the children it reaped), in KB.
async fn measure(args: Vec<String>, dir: &std::path::Path) -> (Duration, u64, u64) {
    tokio::task::spawn_blocking({
        let dir = dir.to_path_buf();
        move || {
            let start = Instant::now();
            let child = Command::new(BIN)
                .args(&args)
                .arg("--data-dir")
                .arg(dir.join("data"))
                .current_dir(&dir)
                .env("XDG_CONFIG_HOME", dir.join("config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn");
            // Reaped below with wait4(2), which also reports the peak RSS.
            let pid = child.id() as i32;
            std::mem::forget(child);
            let mut own_peak = 0;
            let mut status = 0;
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            loop {
                if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/status"))
                    && let Some(kb) = text
                        .lines()
                        .find_map(|l| l.strip_prefix("VmHWM:"))
                        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                {
                    own_peak = own_peak.max(kb);
                }
                let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
                if r == pid {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
            (start.elapsed(), own_peak, usage.ru_maxrss as u64)
        }
    })
    .await
    .expect("join")
}

async fn one_turn() {
    let python = median(
        (0..10)
            .map(|_| {
                let t = Instant::now();
                Command::new("python3")
                    .args(["-c", "pass"])
                    .status()
                    .expect("python3");
                t.elapsed()
            })
            .collect(),
    );
    let mut walls = Vec::new();
    let mut own = 0;
    let mut tree = 0;
    for _ in 0..10 {
        let server =
            ModelServer::start(vec![Reply::tool("python", "print(1)"), Reply::text("done")]).await;
        let dir = tempfile::tempdir().expect("dir");
        let args = vec![
            "--task".to_string(),
            "print one".to_string(),
            "--model".to_string(),
            "openai/scripted".to_string(),
            "--api-base".to_string(),
            server.base("openai"),
            "-y".to_string(),
        ];
        let (wall, own_kb, tree_kb) = measure(args, dir.path()).await;
        walls.push(wall);
        own = own.max(own_kb);
        tree = tree.max(tree_kb);
    }
    let wall = median(walls);
    println!(
        "headless turn  one python block   wall median {:>6.1} ms   python3 start {:>5.1} ms   beyond python {:>6.1} ms (target < 150)   peak RSS oi-tui {:>5.1} MB (target < 30), largest of process tree {:>5.1} MB",
        wall.as_secs_f64() * 1000.0,
        python.as_secs_f64() * 1000.0,
        (wall.saturating_sub(python)).as_secs_f64() * 1000.0,
        own as f64 / 1024.0,
        tree as f64 / 1024.0,
    );
}

async fn stream_throughput() {
    const TOKENS: usize = 10_000;
    // "token " plus a digit: seven characters, which the scripted server sends as one chunk.
    let text: String = (0..TOKENS).map(|i| format!("token{} ", i % 10)).collect();
    let empty = ModelServer::start(vec![Reply::text("hi")]).await;
    let dir = tempfile::tempdir().expect("dir");
    let base_args = |server: &ModelServer| {
        vec![
            "--task".to_string(),
            "talk".to_string(),
            "--model".to_string(),
            "openai/scripted".to_string(),
            "--api-base".to_string(),
            server.base("openai"),
        ]
    };
    let (baseline, _, _) = measure(base_args(&empty), dir.path()).await;
    let mut times = Vec::new();
    for _ in 0..3 {
        let server = ModelServer::start(vec![Reply::text(&text)]).await;
        let (wall, _, _) = measure(base_args(&server), dir.path()).await;
        times.push(wall);
    }
    let wall = median(times);
    let streaming = wall.saturating_sub(baseline).max(Duration::from_millis(1));
    println!(
        "stream         {TOKENS} tokens        wall {:>6.1} ms (a one-word reply: {:>5.1} ms)   {:>8.0} tokens/s through the transcript (target >= 10000)",
        wall.as_secs_f64() * 1000.0,
        baseline.as_secs_f64() * 1000.0,
        TOKENS as f64 / streaming.as_secs_f64()
    );
}
