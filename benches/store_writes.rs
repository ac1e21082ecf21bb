//! Store write amplification with batched live output: the bytes oi-tui writes to the
//! session store (the database, its WAL and shared memory, counted by the kernel as
//! `wchar` in /proc/self/io) per MB of block output, for output that comes fast (batches of
//! 64 KB) and output that trickles (a batch every 200 ms), with the result at the end.
//!
//! Run with `cargo bench --bench store_writes`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oi_tui::llm::Message;
use oi_tui::protocol::{Event, Language, RunResult, RunStatus};
use oi_tui::store::{Recorder, Redactor, Store};

/// Bytes this process has handed to write(2) so far.
fn written() -> u64 {
    let io = std::fs::read_to_string("/proc/self/io").unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Streams `total` bytes of output in `chunk`-byte pieces, `pause` apart; returns the bytes
/// written per MB of output, and how long it took.
fn run(total: usize, chunk: usize, pause: Duration) -> (f64, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let recorder = Recorder::start(store, None, Redactor::default());
    recorder.message(&Message::user("print a lot".to_string()));
    recorder.event(&Event::ExecStarted {
        block_id: 1,
        language: Language::Shell,
        code: "yes | head".to_string(),
        edited: false,
    });
    recorder.flush();
    let line = b"a line of output, as a program would print it: 0123456789abcdef\n";
    let data: Vec<u8> = line.iter().copied().cycle().take(chunk).collect();
    let before = written();
    let start = Instant::now();
    let mut sent = 0;
    while sent < total {
        recorder.event(&Event::ExecOutput {
            block_id: 1,
            data: data.clone(),
        });
        sent += chunk;
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
    }
    let mut result = serde_json::from_value::<RunResult>(serde_json::json!({
        "block_id": 1, "language": "shell", "status": "success", "exit_code": 0,
        "signal": null, "duration": {"secs": 1, "nanos": 0}, "output": "the tail",
        "cut": null, "output_bytes": total, "state_lost": false, "notes": [], "file": null
    }))
    .unwrap_or_else(|_| panic!("a RunResult"));
    result.status = RunStatus::Success;
    recorder.event(&Event::ExecFinished {
        block_id: 1,
        result,
    });
    let health = recorder.flush();
    assert!(health.all_saved(), "{health:?}");
    let bytes = written() - before;
    (bytes as f64 / (total as f64 / 1e6), start.elapsed())
}

fn main() {
    for (name, total, chunk, pause) in [
        ("fast: 16 MB in 4 KB pieces", 16 << 20, 4096, Duration::ZERO),
        (
            "steady: 2 MB at ~1 MB/s",
            2 << 20,
            1024,
            Duration::from_micros(1000),
        ),
        (
            "trickle: 64 KB at ~20 KB/s",
            64 << 10,
            256,
            Duration::from_micros(12_500),
        ),
    ] {
        let (per_mb, took) = run(total, chunk, pause);
        println!(
            "{name:<28} {:>8.2} MB written per MB of output ({:.1} s)",
            per_mb / 1e6,
            took.as_secs_f64()
        );
    }
}
