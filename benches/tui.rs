//! Workbench figures: a full frame at 200×60 with a 10k-message conversation; ingesting 100 MB
//! of block output through the terminal pane compared with a bare PTY; CPU used over 10 s
//! idle; peak RSS after a block prints a million lines.
//!
//! Run with `cargo bench --bench tui` (the last two drive the real binary in tmux).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/suite/model_server.rs"]
#[allow(dead_code)]
mod model_server;

use std::process::Command;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use oi_tui::exec::{Block, KernelConfig, Kernels, Language};
use oi_tui::protocol::{Event, ProposedBlock};
use oi_tui::tui::app::{App, Msg};
use oi_tui::tui::theme::{Depth, Theme};
use oi_tui::tui::view;

mod support;
use support::{Selection, bare_pty_cat, ms, text_file};

const BIN: &str = env!("CARGO_BIN_EXE_oi-tui");

fn main() {
    let runtime = support::runtime();
    let selection = Selection::from_args();
    let wants = |name: &str| selection.wants(name);
    if wants("frame") {
        frame_time();
    }
    runtime.block_on(async {
        if wants("ingest") {
            ingest().await;
        }
        if wants("idle") {
            idle_cpu();
        }
        if wants("rss") {
            million_lines_rss().await;
        }
    });
}

fn draw(app: &App, terminal: &mut Terminal<TestBackend>) {
    let areas = view::layout(Rect::new(0, 0, 200, 60), app);
    terminal.draw(|f| view::draw(f, app, &areas)).unwrap();
}

fn frame_time() {
    let mut app = App::new(Theme::load("dark", Depth::TrueColor).unwrap());
    for i in 0..10_000u64 {
        let event = match i % 4 {
            0 => Event::AssistantMessage {
                text: format!(
                    "Step {i}: I will **look** at the data, then:\n\n- count rows\n- plot `x`\n\n```python\nprint({i})\n```"
                ),
            },
            1 => Event::BlockProposed {
                block: ProposedBlock {
                    id: i,
                    language_tag: "python".into(),
                    language: Some(Language::Python),
                    code: format!("df = load({i})\nprint(df.describe())"),
                    caller: None,
                    tool: None,
                },
                index: 1,
                of: 1,
                verdict: None,
                gate: None,
                allow: None,
            },
            2 => Event::Notice {
                message: format!("note {i}: the model was told"),
            },
            _ => Event::AssistantMessage {
                text: format!("Result {i} looks right; the mean is 4.2 and the max 17."),
            },
        };
        app.update(Msg::Engine(event));
    }
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let first = Instant::now();
    draw(&app, &mut terminal);
    let first = first.elapsed();
    let mut times = Vec::new();
    for i in 0..200 {
        // Something changes each frame, as when output streams in.
        app.update(Msg::Engine(Event::AssistantDelta {
            text: format!("word{i} "),
        }));
        let t = Instant::now();
        draw(&app, &mut terminal);
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "frame          200x60, 10k messages   median {:>6.3} ms   p90 {:>6.3} ms (target <= 1)   first frame (wraps everything) {:>6.1} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
        ms(first)
    );
}

async fn ingest() {
    let dir = tempfile::tempdir().unwrap();
    let file = text_file(dir.path());
    let kernels = std::sync::Arc::new(Kernels::new(KernelConfig {
        cwd: dir.path().to_path_buf(),
        rows: 40,
        cols: 120,
        ..KernelConfig::default()
    }));
    kernels
        .run(&Block::new(Language::Shell, "true"), &mut |_| {})
        .await;
    let mut bare = Vec::new();
    let mut tui = Vec::new();
    for _ in 0..3 {
        bare.push(bare_pty_cat(&file));
        // The workbench's path: output events into the app, the terminal pane drawn at most
        // every 16 ms, as the event loop does.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let k = kernels.clone();
        let cat = format!("cat '{}'", file.display());
        let start = Instant::now();
        let run = tokio::spawn(async move {
            k.run(&Block::new(Language::Shell, cat), &mut |b| {
                let _ = tx.send(b.to_vec());
            })
            .await
        });
        let mut app = App::new(Theme::load("dark", Depth::TrueColor).unwrap());
        app.resize_terminal(40, 120);
        let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
        let mut last = Instant::now();
        while let Some(data) = rx.recv().await {
            app.update(Msg::Engine(Event::ExecOutput { block_id: 1, data }));
            if last.elapsed() >= Duration::from_millis(16) {
                draw(&app, &mut terminal);
                last = Instant::now();
            }
        }
        draw(&app, &mut terminal);
        run.await.unwrap();
        tui.push(start.elapsed());
    }
    bare.sort();
    tui.sort();
    println!(
        "ingest         100 MB cat   bare PTY {:>7.1} ms   through the terminal pane {:>7.1} ms   ratio {:.2} (target >= 0.95)",
        ms(bare[1]),
        ms(tui[1]),
        bare[1].as_secs_f64() / tui[1].as_secs_f64()
    );
}

struct Tmux(String);

impl Tmux {
    fn start(command: &str) -> Tmux {
        let socket = format!("oi-tui-bench-{}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "b",
                "-x",
                "200",
                "-y",
                "60",
                command,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux");
        Tmux(socket)
    }

    fn send(&self, keys: &[&str]) {
        Command::new("tmux")
            .args(["-L", &self.0, "send-keys", "-t", "b"])
            .args(keys)
            .status()
            .unwrap();
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.0, "capture-pane", "-p", "-t", "b"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn pane_pid(&self) -> i32 {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.0,
                "display-message",
                "-p",
                "-t",
                "b",
                "#{pane_pid}",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    fn wait_for(&self, needle: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.screen().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "waited for {needle}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn idle_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(&format!(
        "exec '{BIN}' --demo --data-dir '{}'",
        dir.path().display()
    ));
    tmux.wait_for("Input", Duration::from_secs(20));
    let pid = tmux.pane_pid();
    std::thread::sleep(Duration::from_secs(1));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(10));
    let used = cpu_ticks(pid) - before;
    // SAFETY: sysconf(3) reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    println!(
        "idle           10 s with the workbench open   CPU {:.0} ms ({:.2} %)",
        used as f64 / hz * 1000.0,
        used as f64 / hz / 10.0 * 100.0
    );
}

async fn million_lines_rss() {
    let server = model_server::ModelServer::start(vec![
        model_server::Reply::tool(
            "python",
            "import sys\n_ = sys.stdout.write(''.join(f'line {i}\\n' for i in range(1_000_000)))",
        ),
        model_server::Reply::text("printed a million lines"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(&format!(
        "exec '{BIN}' --model openai/scripted --api-base {} -y --data-dir '{}'",
        server.base("openai"),
        dir.path().display()
    ));
    tmux.wait_for("Input", Duration::from_secs(20));
    tmux.send(&["-l", "print a million lines"]);
    tmux.send(&["Enter"]);
    let start = Instant::now();
    // The model's final text arrives after the block and its output are through.
    let screen_deadline = Duration::from_secs(300);
    let pid = tmux.pane_pid();
    let mut peak = 0;
    let deadline = Instant::now() + screen_deadline;
    loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status"))
            && let Some(kb) = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak = kb;
        }
        if tmux.screen().contains("printed a million lines") || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "memory         1M lines through a block   peak RSS {:>5.1} MB (target <= 60)   done in {:.1} s",
        peak as f64 / 1024.0,
        start.elapsed().as_secs_f64()
    );
}
