//! Kernel figures: warm latency of a trivial block, cold start of each language, and the
//! throughput of 100 MB through a kernel compared with `cat` through a bare PTY.
//!
//! Run with `cargo bench --bench kernels`. Prints one line a figure; asserts nothing, since
//! figures on a shared machine are for reading, not for failing a build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use oi_tui::exec::{Block, KernelConfig, Kernels, Language, RunStatus};

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wants = |name: &str| only.is_empty() || only.iter().any(|o| name.contains(o.as_str()));
    runtime.block_on(async {
        if wants("warm") {
            warm_latency(Language::Python, "print(1)").await;
            warm_latency(Language::Shell, "echo 1").await;
        }
        if wants("cold") {
            for (lang, code) in [
                (Language::Python, "print(1)"),
                (Language::Shell, "echo 1"),
                (Language::JavaScript, "console.log(1)"),
                (Language::R, "cat(1)"),
                (Language::Ruby, "puts 1"),
                (Language::Perl, "print 1"),
                (Language::Java, "System.out.println(1);"),
            ] {
                cold_start(lang, code).await;
            }
        }
        if wants("throughput") {
            throughput().await;
        }
    });
}

fn kernels() -> Kernels {
    Kernels::new(KernelConfig {
        cwd: std::env::temp_dir(),
        ..KernelConfig::default()
    })
}

async fn warm_latency(language: Language, code: &str) {
    let kernels = kernels();
    let block = Block::new(language, code);
    for _ in 0..20 {
        kernels.run(&block, &mut |_| {}).await;
    }
    let mut times: Vec<Duration> = Vec::new();
    for _ in 0..300 {
        let start = Instant::now();
        let r = kernels.run(&block, &mut |_| {}).await;
        times.push(start.elapsed());
        assert_eq!(r.status, RunStatus::Success);
    }
    times.sort();
    println!(
        "warm latency   {:<10} median {:>7.3} ms   p90 {:>7.3} ms   min {:>7.3} ms   (n={}, target median <= 5 ms)",
        language.name(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(times[0]),
        times.len()
    );
}

async fn cold_start(language: Language, code: &str) {
    if language.locate().is_none() {
        println!("cold start     {:<10} (not installed)", language.name());
        return;
    }
    let mut times = Vec::new();
    for _ in 0..3 {
        let kernels = kernels();
        let start = Instant::now();
        let r = kernels.run(&Block::new(language, code), &mut |_| {}).await;
        times.push(start.elapsed());
        assert_eq!(r.status, RunStatus::Success, "{r:?}");
    }
    times.sort();
    println!(
        "cold start     {:<10} median {:>8.1} ms   (first block on a new kernel, n=3)",
        language.name(),
        ms(times[1])
    );
}

async fn throughput() {
    const SIZE: usize = 100 * 1024 * 1024;
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("100mb.txt");
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
        let line =
            b"the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ\n";
        let mut written = 0;
        while written < SIZE {
            f.write_all(line).expect("write");
            written += line.len();
        }
    }
    let cat = format!("cat '{}'", file.display());

    let mut bare = Vec::new();
    let mut kernel = Vec::new();
    let kernels = kernels();
    kernels
        .run(&Block::new(Language::Shell, "true"), &mut |_| {})
        .await;
    for _ in 0..3 {
        bare.push(bare_pty_cat(&file));
        let mut seen = 0usize;
        let start = Instant::now();
        let r = kernels
            .run(&Block::new(Language::Shell, cat.as_str()), &mut |b| {
                seen += b.len()
            })
            .await;
        kernel.push(start.elapsed());
        assert_eq!(r.status, RunStatus::Success);
        assert!(seen >= SIZE);
    }
    bare.sort();
    kernel.sort();
    let (b, k) = (bare[1], kernel[1]);
    println!(
        "throughput     100 MB  bare PTY cat {:>7.1} ms ({:>6.1} MB/s)   kernel block {:>7.1} ms ({:>6.1} MB/s)   ratio {:.2} (target >= 0.7)",
        ms(b),
        mb_per_s(SIZE, b),
        ms(k),
        mb_per_s(SIZE, k),
        b.as_secs_f64() / k.as_secs_f64()
    );
}

/// `cat FILE` in a bare PTY, its output read to the end and thrown away.
fn bare_pty_cat(file: &std::path::Path) -> Duration {
    let pair = portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize::default())
        .expect("pty");
    let mut cmd = portable_pty::CommandBuilder::new("cat");
    cmd.arg(file);
    let start = Instant::now();
    let mut child = pair.slave.spawn_command(cmd).expect("spawn");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let mut sink = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .expect("null");
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => sink.write_all(&buf[..n]).expect("write"),
        }
    }
    child.wait().expect("wait");
    start.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / d.as_secs_f64()
}
