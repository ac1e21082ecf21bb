//! Exporting a 1,000-block session (each block with 20 lines of output, every tenth with a
//! 640×480 PNG figure): reading it from the store, and writing it as an nbformat notebook
//! (target: under 200 ms), a Python script and Markdown.
//!
//! Run with `cargo bench --bench export`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use oi_tui::exec::Language;
use oi_tui::llm::Message;
use oi_tui::protocol::{
    Event, Image, ImageFormat, ImageSource, ProposedBlock, RunResult, RunStatus,
};
use oi_tui::store::{Format, Recorder, Redactor, Store};

mod support;
use support::{median, ms};

const BLOCKS: u64 = 1_000;

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let built = Instant::now();
    let id = build(dir.path());
    let build_time = built.elapsed();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();

    let mut size = 0;
    let mut time = |format: Format| {
        let mut times = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            let store = Store::open(dir.path()).unwrap();
            let exported = store.export(&id).unwrap();
            let text = exported.render(format).unwrap();
            let path = out.join(format!("session.{}", format.name()));
            oi_tui::store::write_whole(&path, &text, format.is_script()).unwrap();
            times.push(t.elapsed());
            size = text.len();
        }
        (median(times), size)
    };
    let (notebook, nb_size) = time(Format::Notebook);
    let (python, _) = time(Format::Python);
    let (markdown, _) = time(Format::Markdown);
    println!(
        "session        {BLOCKS} blocks, {} figures, built in {:.1} s",
        BLOCKS / 10,
        build_time.as_secs_f64()
    );
    println!(
        "ipynb          median {:>6.1} ms (target < 200), {:.1} MB",
        ms(notebook),
        nb_size as f64 / 1e6
    );
    println!("py             median {:>6.1} ms", ms(python));
    println!("md             median {:>6.1} ms", ms(markdown));
}

/// Records the session as the engine would; returns its id.
fn build(dir: &Path) -> String {
    let r = Recorder::start(Store::open(dir).unwrap(), None, Redactor::default());
    let images = oi_tui::store::images::session_dir(dir, r.session_id());
    std::fs::create_dir_all(&images).unwrap();
    let png = figure();
    for n in 1..=BLOCKS {
        r.message(&Message::user(format!("step {n}: plot the next month")));
        let code = format!("import math\nfor i in range(20):\n    print({n}, i, math.sqrt(i))\n");
        r.event(&Event::BlockProposed {
            block: ProposedBlock {
                id: n,
                language_tag: "python".into(),
                language: Some(Language::Python),
                code: code.clone(),
                caller: None,
                tool: None,
            },
            index: 1,
            of: 1,
            verdict: None,
            gate: None,
            allow: None,
        });
        r.event(&Event::ExecStarted {
            block_id: n,
            language: Language::Python,
            code,
            edited: false,
        });
        let output: String = (0..20)
            .map(|i| format!("{n} {i} {}\n", (i as f64).sqrt()))
            .collect();
        let mut kept = Vec::new();
        if n % 10 == 0 {
            let path = images.join(format!("{n}-1.png"));
            std::fs::write(&path, &png).unwrap();
            kept.push(Image {
                path,
                format: ImageFormat::Png,
                bytes: png.len() as u64,
                width: Some(640),
                height: Some(480),
                source: ImageSource::Figure,
            });
        }
        r.event(&Event::ExecFinished {
            block_id: n,
            result: RunResult {
                block_id: n,
                language: Language::Python,
                status: RunStatus::Success,
                exit_code: Some(0),
                signal: None,
                duration: Duration::from_millis(40),
                output_bytes: output.len() as u64,
                output,
                cut: None,
                state_lost: false,
                notes: Vec::new(),
                file: None,
                images: kept,
            },
        });
        r.message(&Message::assistant(format!("Month {n} is done."), vec![]));
    }
    r.flush();
    r.session_id().to_string()
}

/// A 640×480 PNG with something drawn in it (a gradient and a curve).
fn figure() -> Vec<u8> {
    let img = image::RgbImage::from_fn(640, 480, |x, y| {
        let curve = (240.0 + 200.0 * ((x as f64) / 50.0).sin()) as u32;
        if y.abs_diff(curve) < 2 {
            image::Rgb([30, 90, 200])
        } else {
            image::Rgb([255 - (y / 4) as u8, 255, 255 - (x / 4) as u8])
        }
    });
    let mut bytes = Vec::new();
    img.write_to(
        &mut std::io::Cursor::new(&mut bytes),
        image::ImageFormat::Png,
    )
    .unwrap();
    bytes
}
