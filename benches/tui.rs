//! Workbench figures: a full frame at 200×60 with a 10k-message conversation; ingesting 100 MB
//! of block output through the terminal pane compared with a bare PTY; CPU used over 10 s
//! idle; peak RSS after a block prints a million lines; the time from a block's end to its
//! image on screen (half-blocks and the kitty protocol).
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
    if wants("image") {
        image_on_screen();
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

/// From a block's end (its ExecFinished reaching the app) to the frame that shows its
/// image, as the workbench does it: decoded, resized and encoded off the UI thread, the
/// loop woken when it is ready. A 640×480 PNG (matplotlib's default figure at 100 dpi) in
/// the terminal pane of a 200×60 screen, and in the viewer; half-blocks and kitty.
fn image_on_screen() {
    use oi_tui::protocol::{Image, ImageFormat, ImageSource};
    use oi_tui::tui::graphics::Graphics;
    use ratatui_image::picker::ProtocolType;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("figure.png");
    // A plot-like figure: white, axes, a curve, some colour.
    let img = image::RgbImage::from_fn(640, 480, |x, y| {
        let curve = (240.0 - 150.0 * ((x as f64) / 60.0).sin()) as u32;
        if y.abs_diff(curve) < 3 {
            image::Rgb([31, 119, 180])
        } else if x == 80 || y == 420 {
            image::Rgb([0, 0, 0])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    img.save(&path).unwrap();
    let image = Image {
        bytes: std::fs::metadata(&path).unwrap().len(),
        path: path.clone(),
        format: ImageFormat::Png,
        width: Some(640),
        height: Some(480),
        source: ImageSource::Figure,
    };
    for (name, protocol) in [
        ("half-blocks", ProtocolType::Halfblocks),
        ("kitty", ProtocolType::Kitty),
    ] {
        let mut pane = Vec::new();
        let mut viewer = Vec::new();
        let mut redraw = Vec::new();
        for round in 0..10u64 {
            let mut app = App::new(Theme::load("dark", Depth::TrueColor).unwrap());
            app.images.cache.set_graphics(Graphics {
                protocol: Some(protocol),
                cell: (10, 20),
                tmux: false,
                why: String::new(),
            });
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let tx = std::sync::Mutex::new(tx);
            app.images.cache.in_background(std::sync::Arc::new(move || {
                let _ = tx.lock().map(|t| t.send(()));
            }));
            let mut terminal = Terminal::new(TestBackend::new(200, 60)).unwrap();
            let id = round + 1;
            app.update(Msg::Engine(Event::ExecStarted {
                block_id: id,
                language: Language::Python,
                code: "plt.plot(x, y); plt.show()".into(),
                edited: false,
            }));
            app.update(Msg::Engine(Event::ExecOutput {
                block_id: id,
                data: b"plotting\r\n".to_vec(),
            }));
            let result = oi_tui::exec::RunResult {
                block_id: id,
                language: Language::Python,
                status: oi_tui::exec::RunStatus::Success,
                exit_code: Some(0),
                signal: None,
                duration: Duration::from_millis(300),
                output: "plotting\n".into(),
                cut: None,
                output_bytes: 9,
                state_lost: false,
                notes: Vec::new(),
                file: None,
                images: vec![image.clone()],
            };
            // The block ends; the loop draws until the image is on screen.
            let start = Instant::now();
            app.update(Msg::Engine(Event::ExecFinished {
                block_id: id,
                result,
            }));
            draw(&app, &mut terminal);
            while app.images.cache.busy() {
                rx.recv_timeout(Duration::from_secs(10)).unwrap();
                draw(&app, &mut terminal);
            }
            pane.push(start.elapsed());
            assert!(drawn(&terminal, protocol), "the image is on screen");
            // The same frame again: the image is looked up, not made again.
            let start = Instant::now();
            draw(&app, &mut terminal);
            redraw.push(start.elapsed());
            // The viewer: the image as large as the screen allows.
            let start = Instant::now();
            app.update(Msg::Key(crossterm::event::KeyEvent::new(
                crossterm::event::KeyCode::Char('i'),
                crossterm::event::KeyModifiers::ALT,
            )));
            draw(&app, &mut terminal);
            while app.images.cache.busy() {
                rx.recv_timeout(Duration::from_secs(10)).unwrap();
                draw(&app, &mut terminal);
            }
            viewer.push(start.elapsed());
        }
        println!(
            "image on screen ({name}, 640×480 PNG, 200×60): block end to terminal pane {:.1} ms, to viewer {:.1} ms, redraw {:.2} ms (median of 10)",
            ms(support::median(pane)),
            ms(support::median(viewer)),
            ms(support::median(redraw)),
        );
    }
}

/// Whether the screen shows an image: half-block cells, or kitty's placeholder cells.
fn drawn(terminal: &Terminal<TestBackend>, protocol: ratatui_image::picker::ProtocolType) -> bool {
    let buffer = terminal.backend().buffer();
    buffer.content().iter().any(|cell| match protocol {
        ratatui_image::picker::ProtocolType::Kitty => cell.symbol().contains("\x1b_G"),
        _ => cell.symbol() == "▀" || cell.symbol() == "▄",
    })
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
        let cat = format!("cat '{}'", file.display());
        tui.push(support::through_pane(kernels.clone(), Block::new(Language::Shell, cat)).await);
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
