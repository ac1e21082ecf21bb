//! Session store figures with 10k sessions of 50 messages each: opening the store and
//! listing the browser's first page, a search (a rare word and a common one), and the
//! database's size per 1k messages.
//!
//! Run with `cargo bench --bench sessions` (building the store takes a minute or two).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use oi_tui::store::Store;

mod support;
use support::{median, ms};

const SESSIONS: usize = 10_000;
const MESSAGES: usize = 50;

const WORDS: &[&str] = &[
    "plot",
    "sales",
    "month",
    "revenue",
    "csv",
    "pandas",
    "dataframe",
    "column",
    "filter",
    "group",
    "sum",
    "mean",
    "chart",
    "file",
    "directory",
    "list",
    "python",
    "shell",
    "error",
    "trace",
    "install",
    "package",
    "version",
    "server",
    "request",
    "response",
    "json",
    "parse",
    "value",
    "count",
    "rows",
    "print",
    "output",
    "result",
    "check",
    "test",
    "build",
    "run",
    "clean",
    "log",
];

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let built = Instant::now();
    build(dir.path());
    let build_time = built.elapsed();
    let path = dir.path().join(oi_tui::store::FILE);
    let size = std::fs::metadata(&path).unwrap().len()
        + std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());

    let mut opens = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let store = Store::open(dir.path()).unwrap();
        let rows = store.list(100, 0).unwrap();
        let total = store.count().unwrap();
        opens.push(t.elapsed());
        assert_eq!(rows.len(), 100);
        assert_eq!(total, SESSIONS as i64);
    }
    let store = Store::open(dir.path()).unwrap();
    let mut deep = Vec::new();
    for page in [10usize, 50, 99] {
        let t = Instant::now();
        assert_eq!(store.list(100, page * 100).unwrap().len(), 100);
        deep.push(t.elapsed());
    }
    let search = |query: &str| {
        let mut times = Vec::new();
        let mut hits = 0;
        for _ in 0..10 {
            let t = Instant::now();
            hits = store.search(query, 100).unwrap().len();
            times.push(t.elapsed());
        }
        (median(times), hits)
    };
    let (rare, rare_hits) = search("zeppelin4242");
    let (common, common_hits) = search("revenue");
    println!(
        "store          {SESSIONS} sessions x {MESSAGES} messages, built in {:.0} s",
        build_time.as_secs_f64()
    );
    println!(
        "open + page 1  median {:>6.1} ms (target <= 50)   a deep page: {:>5.1} ms",
        ms(median(opens)),
        ms(*deep.iter().max().unwrap())
    );
    println!(
        "search         rare word {:>6.1} ms ({rare_hits} hits)   common word {:>6.1} ms ({common_hits} sessions) (target <= 50)",
        ms(rare),
        ms(common)
    );
    println!(
        "size           {:.1} MB in all, {:.0} KB per 1k messages",
        size as f64 / 1e6,
        size as f64 / 1024.0 / (SESSIONS * MESSAGES) as f64 * 1000.0
    );
}

fn build(dir: &std::path::Path) {
    drop(Store::open(dir).unwrap());
    let conn = rusqlite::Connection::open(dir.join(oi_tui::store::FILE)).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;")
        .unwrap();
    let mut seed: u64 = 42;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let tx = conn.unchecked_transaction().unwrap();
    {
        let mut session = tx
            .prepare("INSERT INTO sessions (id, title, created_at, updated_at, model, cwd, messages) VALUES (?1, ?2, ?3, ?3, 'ollama/qwen2.5-coder:7b', '/home/user/project', ?4)")
            .unwrap();
        let mut message = tx
            .prepare("INSERT INTO messages (session_id, role, content, created_at) VALUES (?1, ?2, ?3, ?4)")
            .unwrap();
        for s in 0..SESSIONS {
            let id = format!("20261130-{s:06}-bench");
            let title: Vec<&str> = (0..5)
                .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
                .collect();
            session
                .execute(rusqlite::params![
                    id,
                    title.join(" "),
                    1_700_000_000_000i64 + s as i64,
                    MESSAGES as i64
                ])
                .unwrap();
            for m in 0..MESSAGES {
                let mut words: Vec<&str> = (0..30)
                    .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
                    .collect();
                if s == 4242 && m == 7 {
                    words.push("zeppelin4242");
                }
                let role = if m % 2 == 0 { "user" } else { "assistant" };
                message
                    .execute(rusqlite::params![
                        id,
                        role,
                        words.join(" "),
                        1_700_000_000_000i64
                    ])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
}
