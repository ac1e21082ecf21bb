//! A block's images in the workbench and headless: the half-block rendering of a known
//! image (a snapshot), the lines and pictures in the terminal pane, the image viewer
//! (opening, stepping, closing, opening the file), the transcript's and `--json`'s image
//! lines, and the real binary in tmux (half-blocks there).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use oi_tui::exec::{Language, RunResult, RunStatus};
use oi_tui::protocol::{Event, Image, ImageFormat, ImageSource};
use oi_tui::tui::app::{App, Effect, Focus, Msg};
use oi_tui::tui::graphics::Graphics;
use oi_tui::tui::image_cache::{self, Fit};

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;
use super::tui_states::{fresh, key, screen};

/// Python that writes an RGB PNG with zlib and struct alone: `png(path, w, h, pixel)`.
const PNG_PY: &str = r#"import zlib, struct
def png(path, w, h, px):
    raw = b''.join(b'\x00' + b''.join(bytes(px(x, y)) for x in range(w)) for y in range(h))
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
    with open(path, 'wb') as f:
        f.write(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
"#;

/// An 8×8 PNG in two colours: on the left a red and white checker of single pixels, on
/// the right red above white.
fn checker(path: &Path) {
    let img = image::RgbImage::from_fn(8, 8, |x, y| {
        let red = if x < 4 { (x + y) % 2 == 0 } else { y < 4 };
        if red {
            image::Rgb([255, 0, 0])
        } else {
            image::Rgb([255, 255, 255])
        }
    });
    img.save(path).unwrap();
}

fn image_at(path: &Path, source: ImageSource) -> Image {
    Image {
        path: path.to_path_buf(),
        format: ImageFormat::Png,
        bytes: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        width: Some(8),
        height: Some(8),
        source,
    }
}

/// A colour as one letter: R(ed), W(hite), else `?`.
fn letter(c: Color) -> char {
    match c {
        Color::Rgb(255, 0, 0) => 'R',
        Color::Rgb(255, 255, 255) => 'W',
        Color::Reset => '.',
        _ => '?',
    }
}

#[test]
fn half_blocks_draw_a_two_colour_image() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("checker.png");
    checker(&path);
    let decoded = image_cache::decode(&path).unwrap();
    let protocol =
        image_cache::protocol(&Graphics::halfblocks(), &decoded, 8, 4, Fit::Fill).unwrap();
    assert_eq!((protocol.size().width, protocol.size().height), (8, 4));
    let mut terminal = Terminal::new(TestBackend::new(8, 4)).unwrap();
    terminal
        .draw(|f| f.render_widget(ratatui_image::Image::new(&protocol), f.area()))
        .unwrap();
    // Each cell: its symbol, the colour of its upper half (fg), of its lower half (bg).
    let buffer = terminal.backend().buffer();
    let mut text = String::new();
    for y in 0..4 {
        for x in 0..8 {
            let cell = &buffer[(x, y)];
            text.push_str(cell.symbol());
            text.push(letter(cell.fg));
            text.push(letter(cell.bg));
            text.push(' ');
        }
        text.push('\n');
    }
    insta::assert_snapshot!("half_blocks_checker_8x8", text);
}

fn finished(app: &mut App, id: u64, images: Vec<Image>) {
    app.update(Msg::Engine(support_proposed(id)));
    app.update(Msg::Engine(Event::ExecStarted {
        block_id: id,
        language: Language::Python,
        code: "plot()".into(),
        edited: false,
    }));
    app.update(Msg::Engine(Event::ExecOutput {
        block_id: id,
        data: format!("plotted {id}\r\n").into_bytes(),
    }));
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: id,
        result: RunResult {
            block_id: id,
            language: Language::Python,
            status: RunStatus::Success,
            exit_code: Some(0),
            signal: None,
            duration: Duration::from_millis(50),
            output: format!("plotted {id}\n"),
            cut: None,
            output_bytes: 10,
            state_lost: false,
            notes: Vec::new(),
            file: None,
            images,
        },
    }));
}

fn support_proposed(id: u64) -> Event {
    super::support::proposed_event(id, Language::Python, "plot()")
}

/// Two blocks: block 1 made two images, block 2 one.
fn with_images() -> (App, tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = ["1-1.png", "1-2.png", "2-1.png"]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
    for p in &paths {
        checker(p);
    }
    let mut app = fresh();
    // The terminal pane's emulator at the pane's size, as the workbench's loop sets it.
    let areas = oi_tui::tui::view::layout(ratatui::layout::Rect::new(0, 0, 120, 40), &app);
    let (rows, cols) = oi_tui::tui::view::terminal_inner(&areas).unwrap();
    app.resize_terminal(rows, cols);
    finished(
        &mut app,
        1,
        vec![
            image_at(&paths[0], ImageSource::Figure),
            image_at(
                &paths[1],
                ImageSource::File {
                    path: "chart.png".into(),
                },
            ),
        ],
    );
    finished(&mut app, 2, vec![image_at(&paths[2], ImageSource::Figure)]);
    (app, dir, paths)
}

fn alt(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT))
}

#[test]
fn the_terminal_pane_names_each_image_and_draws_the_last_blocks() {
    let (mut app, _dir, _) = with_images();
    let s = screen(&mut app, 120, 40);
    assert!(
        s.contains("◧ image 1: figure, 8×8 PNG") && s.contains("Alt-I to view, Alt-O to open"),
        "{s}"
    );
    assert!(s.contains("◧ image 2: chart.png, 8×8 PNG"), "{s}");
    // The last block's image is drawn below its line, in half-blocks.
    assert!(s.contains('▀') || s.contains('▄'), "{s}");
    // A narrow pane cuts the line rather than wrapping it.
    let narrow = screen(&mut app, 60, 24);
    assert!(narrow.contains("◧ image 1:"), "{narrow}");
    insta::assert_snapshot!("images_in_the_terminal_pane_120x40", s);
}

#[test]
fn the_viewer_opens_from_the_chat_steps_and_closes() {
    let (mut app, _dir, paths) = with_images();
    // From the input, i types.
    app.update(key(KeyCode::Char('i')));
    assert!(app.images.viewer.is_none());
    assert_eq!(app.input.lines()[0], "i");
    // The chat, block 1 selected: i opens its first image.
    app.focus = Focus::Chat;
    let block1 = app
        .chat
        .entries
        .iter()
        .position(|e| matches!(e, oi_tui::tui::chat::Entry::Block { id: 1, .. }))
        .unwrap();
    app.chat.selected = Some(block1);
    app.update(key(KeyCode::Char('i')));
    let shown = app.images.current().expect("the viewer is open");
    assert_eq!((shown.block, shown.n), (1, 1));
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("Image 1 of 3 · block #1 image 1"), "{s}");
    assert!(s.contains('▀') || s.contains('▄'), "{s}");
    // → steps to the next image, then to the next block's.
    app.update(key(KeyCode::Right));
    assert_eq!(app.images.current().map(|s| (s.block, s.n)), Some((1, 2)));
    app.update(key(KeyCode::Char('l')));
    assert_eq!(app.images.current().map(|s| (s.block, s.n)), Some((2, 1)));
    // Not past the last.
    app.update(key(KeyCode::Right));
    assert_eq!(app.images.viewer.map(|v| v.at), Some(2));
    app.update(key(KeyCode::Left));
    assert_eq!(app.images.viewer.map(|v| v.at), Some(1));
    // o opens the shown image with the system viewer.
    assert_eq!(
        app.update(key(KeyCode::Char('o'))),
        vec![Effect::Open(paths[1].clone())]
    );
    // A failure to open it is said in the viewer, which covers the chat.
    app.update(Msg::Engine(Event::Notice {
        message: "no system image viewer: xdg-open was not found in PATH".into(),
    }));
    let s = screen(&mut app, 100, 30);
    assert!(s.contains("no system image viewer"), "{s}");
    app.update(key(KeyCode::Left));
    assert!(!screen(&mut app, 100, 30).contains("no system image viewer"));
    // Esc closes; q too.
    app.update(key(KeyCode::Esc));
    assert!(app.images.viewer.is_none());
    app.update(key(KeyCode::Char('i')));
    assert!(app.images.viewer.is_some());
    app.update(key(KeyCode::Char('q')));
    assert!(app.images.viewer.is_none());
    assert!(!screen(&mut app, 100, 30).contains("Image 1 of 3"));
}

#[test]
fn alt_i_opens_the_last_blocks_images_from_anywhere_and_a_block_without_says_so() {
    let (mut app, _dir, paths) = with_images();
    assert_eq!(app.focus, Focus::Input);
    app.update(alt('i'));
    assert_eq!(app.images.current().map(|s| (s.block, s.n)), Some((2, 1)));
    app.update(key(KeyCode::Esc));
    // Alt-O opens the last image without the viewer.
    assert_eq!(app.update(alt('o')), vec![Effect::Open(paths[2].clone())]);
    // A block that made no image: the status bar says so.
    finished(&mut app, 3, Vec::new());
    app.focus = Focus::Chat;
    app.chat.selected = Some(app.chat.entries.len() - 1);
    app.update(key(KeyCode::Char('i')));
    assert!(app.images.viewer.is_none());
    let s = screen(&mut app, 120, 30);
    assert!(s.contains("block #3 made no image"), "{s}");
    // The keys are in the help.
    let help: Vec<String> = app
        .keymap
        .help()
        .into_iter()
        .map(|(_, keys, what)| format!("{keys} {what}"))
        .collect();
    assert!(help.iter().any(|h| h.starts_with("i view")), "{help:?}");
    assert!(help.iter().any(|h| h.starts_with("Alt-O open")), "{help:?}");
}

#[test]
fn a_fresh_workbench_without_images_says_so_and_a_resumed_session_shows_them() {
    let mut app = fresh();
    app.update(alt('i'));
    assert!(app.images.viewer.is_none());
    assert!(screen(&mut app, 120, 30).contains("no block has made an image yet"));
    // A resumed session's blocks bring their images back (the store replays them).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("3-1.png");
    checker(&path);
    let mut other = fresh();
    finished(&mut other, 7, vec![image_at(&path, ImageSource::Figure)]);
    let (mut resumed, events) = (fresh(), replay_of(&mut other));
    resumed.resumed(&events, "Resumed.".into());
    assert_eq!(
        resumed.images.latest().map(|(b, i)| (b, i.len())),
        Some((7, 1))
    );
    assert!(screen(&mut resumed, 120, 30).contains("◧ image 1: figure"));
}

/// The events a store replay would give for the blocks `app` saw (proposal, start, output,
/// end), rebuilt from what it holds.
fn replay_of(app: &mut App) -> Vec<Event> {
    let (id, images) = app.images.latest().map(|(b, i)| (b, i.to_vec())).unwrap();
    let mut events = vec![support_proposed(id)];
    events.push(Event::ExecStarted {
        block_id: id,
        language: Language::Python,
        code: "plot()".into(),
        edited: false,
    });
    events.push(Event::ExecFinished {
        block_id: id,
        result: RunResult {
            block_id: id,
            language: Language::Python,
            status: RunStatus::Success,
            exit_code: Some(0),
            signal: None,
            duration: Duration::from_millis(5),
            output: String::new(),
            cut: None,
            output_bytes: 0,
            state_lost: false,
            notes: Vec::new(),
            file: None,
            images,
        },
    });
    events
}

fn isolated(dir: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.args(args)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OI_TUI_MODEL")
        .env_remove("OI_TUI_API_BASE")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_prints_each_images_line_and_json_carries_them() {
    let code = format!(
        "{PNG_PY}png('chart.png', 8, 6, lambda x, y: (255, 0, 0) if x < 4 else (0, 0, 255))\nprint('drawn')"
    );
    for json in [false, true] {
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("done")]).await;
        let dir = tempfile::tempdir().unwrap();
        let base = server.base("openai");
        let mut args = vec![
            "--task",
            "draw",
            "--model",
            "openai/scripted",
            "--api-base",
            &base,
            "-y",
        ];
        if json {
            args.push("--json");
        }
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            isolated(dir.path(), &args).output(),
        )
        .await
        .unwrap()
        .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        if !json {
            let line = stdout
                .lines()
                .find(|l| l.contains("◧ image 1:"))
                .unwrap_or_else(|| panic!("an image line in:\n{stdout}"));
            assert!(line.contains("chart.png, 8×6 PNG"), "{line}");
            assert!(line.contains("kept at "), "{line}");
            let kept = line.split("kept at ").nth(1).unwrap().trim();
            assert!(Path::new(kept).is_file(), "{kept}");
            // After the block's result line.
            let result_at = stdout.find("✓ python").unwrap();
            assert!(stdout.find("◧ image 1:").unwrap() > result_at, "{stdout}");
            continue;
        }
        let finished = stdout
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|e| e["event"] == "exec_finished")
            .expect("an exec_finished event");
        let images = finished["result"]["images"].as_array().expect("images");
        assert_eq!(images.len(), 1, "{finished}");
        assert_eq!(images[0]["format"], "png");
        assert_eq!(images[0]["width"], 8);
        assert_eq!(images[0]["height"], 6);
        assert_eq!(images[0]["source"]["kind"], "file");
        assert!(
            Path::new(images[0]["path"].as_str().unwrap()).is_file(),
            "{finished}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_tmux_the_image_line_shows_and_the_viewer_draws_half_blocks() {
    let server = ModelServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mkpng.py"),
        format!(
            "{PNG_PY}png('plot.png', 320, 160, lambda x, y: (200, 30, 30) if (y // 10) % 2 else (240, 240, 240))\n"
        ),
    )
    .unwrap();
    let tmux = Tmux::workbench(&server.base("openai"), dir.path(), (120, 40), "", "");
    tmux.wait_for("Input").await;
    tmux.type_text("!python3 mkpng.py && echo made-it");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("◧ image 1: plot.png").await;
    assert!(screen.contains("320×160 PNG"), "{screen}");
    assert!(screen.contains("Alt-I to view"), "{screen}");
    // Below the line, the image itself, in half-blocks (made off the UI thread).
    let drawn = |screen: &str| {
        let below = screen.split("◧ image 1").nth(1).unwrap_or("");
        below.matches(['▀', '▄']).count() > 20
    };
    let mut screen = tmux.capture();
    for _ in 0..100 {
        if drawn(&screen) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        screen = tmux.capture();
    }
    assert!(drawn(&screen), "{screen}");
    // Alt-I from the input opens the viewer: the image in half-blocks, as large as it fits.
    tmux.send(&["M-i"]);
    let mut screen = tmux.wait_for("Image 1 of 1").await;
    let count = |screen: &str| screen.matches(['▀', '▄']).count();
    for _ in 0..100 {
        if count(&screen) > 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        screen = tmux.capture();
    }
    assert!(
        count(&screen) > 200,
        "{} half-blocks:\n{screen}",
        count(&screen)
    );
    // q closes it.
    tmux.send(&["q"]);
    for _ in 0..100 {
        if !tmux.capture().contains("Image 1 of 1") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let screen = tmux.capture();
    assert!(!screen.contains("Image 1 of 1"), "{screen}");
    assert!(screen.contains("made-it"), "{screen}");
}

/// Outside tmux (as tmux's variables say), the workbench asks the terminal at start; tmux
/// answers the device attributes and the status report itself, and ignores the kitty
/// query. The answer is read whole: nothing of it reaches the input as typed text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_terminals_answer_at_start_leaves_nothing_behind() {
    let server = ModelServer::start(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mkpng.py"),
        format!("{PNG_PY}png('plot.png', 40, 20, lambda x, y: (200, 30, 30) if (y // 5) % 2 else (240, 240, 240))\n"),
    )
    .unwrap();
    let tmux = Tmux::workbench(
        &server.base("openai"),
        dir.path(),
        (120, 40),
        "-u TMUX TERM=xterm-256color",
        "",
    );
    let screen = tmux.wait_for("Input").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let screen = format!("{screen}{}", tmux.capture());
    // The input still shows its placeholder: no answer became keys.
    assert!(screen.contains("Message the model"), "{screen}");
    for stray in ["?1;2c", "[0n", "_Gi", "0n"] {
        assert!(
            !tmux.capture().contains(stray),
            "{stray:?} on screen:\n{screen}"
        );
    }
    tmux.type_text("!python3 mkpng.py");
    tmux.send(&["Enter"]);
    tmux.wait_for("◧ image 1: plot.png").await;
    tmux.send(&["M-i"]);
    let screen = tmux.wait_for("drawn with").await;
    // tmux has no kitty graphics: half-blocks (or sixel, where tmux was built with it).
    assert!(
        screen.contains("drawn with half-blocks") || screen.contains("drawn with sixel"),
        "{screen}"
    );
}
