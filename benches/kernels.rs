//! Kernel figures: warm latency of a trivial block, cold start of each language, and the
//! throughput of 100 MB through a kernel compared with `cat` through a bare PTY.
//!
//! Run with `cargo bench --bench kernels`. Prints one line a figure; asserts nothing, since
//! figures on a shared machine are for reading, not for failing a build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use oi_tui::exec::{Block, KernelConfig, Kernels, Language, RunStatus};

mod support;
use support::{SIZE, Selection, bare_pty_cat, mb_per_s, ms, text_file};

fn main() {
    let selection = Selection::from_args();
    let wants = |name: &str| selection.wants(name);
    support::runtime().block_on(async {
        if wants("warm") {
            warm_latency(Language::Python, "print(1)").await;
            warm_latency(Language::Shell, "echo 1").await;
        }
        if wants("images") {
            images_overhead().await;
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

/// What looking for the images a block wrote costs: a trivial block's latency in an empty
/// working directory and in one of 5,000 files in 250 directories (nothing written), and
/// the latency of a block that saves a small figure (PNG written, kept, measured).
async fn images_overhead() {
    let empty = tempfile::tempdir().unwrap();
    let full = tempfile::tempdir().unwrap();
    for d in 0..250 {
        let dir = full.path().join(format!("d{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..19 {
            std::fs::write(
                dir.join(format!("f{f}.{}", if f % 4 == 0 { "png" } else { "txt" })),
                b"x",
            )
            .unwrap();
        }
    }
    let keep = tempfile::tempdir().unwrap();
    for (label, dir, code) in [
        ("empty dir", empty.path(), "pass"),
        ("5,000 files", full.path(), "pass"),
        (
            "writes a PNG",
            empty.path(),
            "open('p.png', 'wb').write(PNG)",
        ),
    ] {
        let kernels = Kernels::new(KernelConfig {
            cwd: dir.to_path_buf(),
            image_dir: Some(keep.path().to_path_buf()),
            ..KernelConfig::default()
        });
        // A 1×1 PNG, made once in the kernel.
        let setup = "import base64\nPNG = base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==')";
        kernels
            .run(&Block::new(Language::Python, setup), &mut |_| {})
            .await;
        let block = Block::new(Language::Python, code);
        for _ in 0..10 {
            kernels.run(&block, &mut |_| {}).await;
        }
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..200 {
            let start = Instant::now();
            let r = kernels.run(&block, &mut |_| {}).await;
            times.push(start.elapsed());
            assert_eq!(r.status, RunStatus::Success);
            assert_eq!(r.images.len(), usize::from(code != "pass"), "{r:?}");
        }
        times.sort();
        println!(
            "image scan     python {:<13} median {:>7.3} ms   p90 {:>7.3} ms   (n={})",
            label,
            ms(times[times.len() / 2]),
            ms(times[times.len() * 9 / 10]),
            times.len()
        );
        kernels.shutdown().await;
    }
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
    let dir = tempfile::tempdir().expect("dir");
    let file = text_file(dir.path());
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
