//! What the benchmarks share: the runtime, picking benchmarks by name from the command line,
//! the 100 MB test file, the bare-PTY baseline, a block's output through the terminal pane,
//! and formatting.
// Each benchmark uses some of these, not all.
#![allow(dead_code)]

pub mod sshd;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The size of the throughput benchmarks' file.
pub const SIZE: usize = 100 * 1024 * 1024;

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Whether a benchmark was asked for: all when no names are given, else those containing one.
pub struct Selection(Vec<String>);

impl Selection {
    pub fn from_args() -> Selection {
        Selection(
            std::env::args()
                .skip(1)
                .filter(|a| !a.starts_with('-'))
                .collect(),
        )
    }

    pub fn wants(&self, name: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|o| name.contains(o.as_str()))
    }
}

/// Writes `SIZE` bytes of text lines into `dir` and returns the file.
pub fn text_file(dir: &Path) -> PathBuf {
    let file = dir.join("100mb.txt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&file).expect("create"));
    let line =
        b"the quick brown fox jumps over the lazy dog 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ\n";
    let mut written = 0;
    while written < SIZE {
        f.write_all(line).expect("write");
        written += line.len();
    }
    f.flush().expect("flush");
    file
}

/// `cat FILE` in a bare PTY, its output read to the end and written to /dev/null: the
/// baseline.
pub fn bare_pty_cat(file: &Path) -> Duration {
    let pair = portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize::default())
        .expect("pty");
    let mut cmd = portable_pty::CommandBuilder::new("cat");
    cmd.arg(file);
    let start = Instant::now();
    let mut child = pair.slave.spawn_command(cmd).expect("spawn");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let mut null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .expect("/dev/null");
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => null.write_all(&buf[..n]).expect("write"),
        }
    }
    child.wait().expect("wait");
    start.elapsed()
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / d.as_secs_f64()
}

/// A PTY of `cols`×`rows` to run the workbench in.
pub fn workbench_pty(cols: u16, rows: u16) -> portable_pty::PtyPair {
    portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap()
}

/// Runs `block` and feeds its output to the workbench's terminal pane as the event loop does
/// (output events into the app, the screen drawn at most every 16 ms, at 200×60); how long
/// until the block ended and its last output was drawn.
pub async fn through_pane(
    kernels: std::sync::Arc<oi_tui::exec::Kernels>,
    block: oi_tui::exec::Block,
) -> Duration {
    use oi_tui::protocol::Event;
    use oi_tui::tui::app::{App, Msg};
    use oi_tui::tui::theme::{Depth, Theme};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let start = Instant::now();
    let run = tokio::spawn(async move {
        kernels
            .run(&block, &mut |b| {
                let _ = tx.send(b.to_vec());
            })
            .await
    });
    let mut app = App::new(Theme::load("dark", Depth::TrueColor).unwrap());
    app.resize_terminal(40, 120);
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let draw = |app: &App, terminal: &mut Terminal<TestBackend>| {
        let areas = oi_tui::tui::view::layout(ratatui::layout::Rect::new(0, 0, 200, 60), app);
        terminal
            .draw(|f| oi_tui::tui::view::draw(f, app, &areas))
            .unwrap();
    };
    let mut last = Instant::now();
    while let Some(data) = rx.recv().await {
        app.update(Msg::Engine(Event::ExecOutput { block_id: 1, data }));
        if last.elapsed() >= Duration::from_millis(16) {
            draw(&app, &mut terminal);
            last = Instant::now();
        }
    }
    draw(&app, &mut terminal);
    let result = run.await.unwrap();
    assert_eq!(
        result.status,
        oi_tui::exec::RunStatus::Success,
        "{result:?}"
    );
    start.elapsed()
}
