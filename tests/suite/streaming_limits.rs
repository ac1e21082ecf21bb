//! Streaming that is linear and bounded, with the real binary headless (`-y --task`, stdin
//! not a terminal) against the scripted model server: a reply that never ends is cut with
//! a message naming the limit and its text is kept; a tool call of 420 KB sent in small
//! fragments reaches its run quickly and its `--json` transcript is a small multiple of the
//! code; a task too large for the context window is refused with the numbers.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::AsyncWriteExt;

use super::model_server::{ModelServer, Reply};

struct Run {
    dir: tempfile::TempDir,
}

impl Run {
    fn new() -> Run {
        Run {
            dir: tempfile::tempdir().expect("dir"),
        }
    }

    fn command(&self, server: &ModelServer, args: &[&str]) -> tokio::process::Command {
        let mut cmd = super::support::isolated_oi_tui(self.dir.path());
        cmd.args(["--model", "openai/scripted", "--api-base"])
            .arg(server.base("openai"))
            .args(args)
            .arg("--data-dir")
            .arg(self.dir.path().join("data"));
        cmd
    }

    /// Runs to the end (at most `limit`); returns the output and how long it took.
    async fn run(&self, server: &ModelServer, args: &[&str], limit: u64) -> (Output, Duration) {
        let started = Instant::now();
        let out = tokio::time::timeout(
            Duration::from_secs(limit),
            self.command(server, args).output(),
        )
        .await
        .expect("oi-tui ended in time")
        .expect("oi-tui ran");
        (out, started.elapsed())
    }

    /// The last session as stored, exported as JSON text.
    fn stored(&self) -> String {
        let store = oi_tui::store::Store::open(&self.dir.path().join("data")).expect("store");
        let rows = store.list(10, 0).expect("list");
        let last = rows.first().expect("a session");
        serde_json::to_string(&store.export(&last.id).expect("export")).expect("json")
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_reply_is_cut_at_its_size_and_its_text_kept() {
    let server = ModelServer::start(vec![Reply::text("Here it goes: ").endless()]).await;
    let run = Run::new();
    let (out, took) = run
        .run(
            &server,
            &["-y", "--task", "talk", "--max-reply-bytes", "300000"],
            120,
        )
        .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let both = format!("{stdout}\n{stderr}");
    assert!(
        both.contains("max_reply_bytes = 300000") && both.contains("--max-reply-bytes"),
        "{both}"
    );
    // The text before the cut was shown, and no more than the limit of it.
    assert!(
        stdout.contains("Here it goes: and so on, and so on,"),
        "{stdout}"
    );
    assert!(stdout.len() < 400_000, "{} bytes shown", stdout.len());
    assert!(took < Duration::from_secs(60), "{took:?}");
    // The partial reply is in the store.
    let stored = run.stored();
    assert!(
        stored.contains("Here it goes: and so on, and so on,"),
        "{}",
        &stored[..stored.len().min(2000)]
    );
}

/// A server that streams envelopes without text (empty deltas) is cut once the stream
/// carries 64 times a reply's limit, not at the reply's time limit half an hour later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_stream_of_empty_pieces_is_cut_at_its_size() {
    let server = ModelServer::start(vec![Reply::text("Nothing but: ").endless_empty()]).await;
    let run = Run::new();
    let (out, took) = run
        .run(
            &server,
            &["-y", "--task", "talk", "--max-reply-bytes", "16384"],
            120,
        )
        .await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("with little or no reply in it") && stderr.contains("1 MB"),
        "{stderr}"
    );
    assert!(stdout.contains("Nothing but: "), "{stdout}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_endless_reply_is_cut_at_its_time() {
    let server = ModelServer::start(vec![
        Reply::text("Slowly: ")
            .endless()
            .slow(Duration::from_millis(20)),
    ])
    .await;
    let run = Run::new();
    let (out, took) = run
        .run(
            &server,
            &["-y", "--task", "talk", "--reply-timeout", "2"],
            120,
        )
        .await;
    let both = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{both}");
    assert!(
        both.contains("reply_timeout = 2") && both.contains("--reply-timeout"),
        "{both}"
    );
    assert!(text(&out.stdout).contains("Slowly: and so on,"), "{both}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(30),
        "{took:?}"
    );
}

/// Python code of about `size` bytes that prints `done` and its own line count.
fn big_python(size: usize) -> String {
    let mut code = String::with_capacity(size + 100);
    let mut i = 0;
    while code.len() < size {
        code.push_str(&format!(
            "x{i} = \"line {i}: \\\"quoted\\\" \\u00e9 é\\tend\"  # {}\n",
            "pad".repeat(8)
        ));
        i += 1;
    }
    code.push_str(&format!("print('done', {i})\n"));
    code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_420_kb_tool_call_streams_linearly_to_its_run() {
    let code = big_python(420 * 1024);
    let lines = code.lines().count() - 1;
    let server = ModelServer::start(vec![
        Reply::tool("python", &code).fragments_of(5),
        Reply::text("Done."),
    ])
    .await;
    let run = Run::new();
    let (out, took) = run
        .run(&server, &["-y", "--json", "--task", "big"], 300)
        .await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Generous: the debug build on a busy machine (the timed target is in benches/).
    assert!(took < Duration::from_secs(60), "{took:?}");
    // Linear: the transcript is a small multiple of the code, not one copy per fragment.
    // It holds the code three times (streamed, proposed, started), JSON-escaped.
    assert!(
        stdout.len() < 4 * code.len(),
        "{} bytes of JSON for {} bytes of code",
        stdout.len(),
        code.len()
    );
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    // The deltas add up to the code, and they are few.
    let deltas: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "block_delta")
        .collect();
    let streamed: String = deltas
        .iter()
        .map(|e| e["delta"].as_str().expect("delta"))
        .collect();
    assert_eq!(streamed, code);
    assert!(deltas.len() < 2000, "{} deltas", deltas.len());
    assert!(deltas.iter().all(|e| e["index"] == 0));
    assert!(deltas.last().is_some_and(|e| e["language_tag"] == "python"));
    let proposed = events
        .iter()
        .find(|e| e["event"] == "block_proposed")
        .expect("proposed");
    assert_eq!(proposed["block"]["code"].as_str(), Some(code.as_str()));
    let output: String = events
        .iter()
        .filter(|e| e["event"] == "exec_output")
        .map(|e| e["data"].as_str().unwrap_or_default())
        .collect();
    assert!(output.contains(&format!("done {lines}")), "{output}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_too_large_for_the_window_is_refused_with_the_numbers() {
    let server = ModelServer::start(vec![Reply::text("never asked")]).await;
    let run = Run::new();
    let task = "word ".repeat(2 * 1024 * 1024); // 10 MB
    let mut cmd = run.command(&server, &["-y", "--task", "-", "--context-window", "16384"]);
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let feed = tokio::spawn(async move {
        let _ = stdin.write_all(task.as_bytes()).await;
    });
    let out = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("ended in time")
        .expect("ran");
    let _ = feed.await;
    let both = format!("{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{both}");
    assert!(both.contains("Not sent"), "{both}");
    assert!(
        both.contains("about 26214") && both.contains("16384 tokens"),
        "{both}"
    );
    assert!(server.chats().is_empty(), "nothing went to the model");
}

/// The workbench appends each delta to the code of its call, a new call starts its own, and
/// a frame on a block of 420 KB stays cheap while it grows.
#[test]
fn the_workbench_appends_deltas_and_draws_a_growing_block_cheaply() {
    use oi_tui::protocol::Event;
    use oi_tui::tui::app::Msg;
    let mut app = super::tui_states::fresh();
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    let delta = |index: usize, text: &str| {
        Msg::Engine(Event::BlockDelta {
            index,
            language_tag: Some("python".into()),
            delta: text.into(),
        })
    };
    app.update(delta(0, "print('first')\n"));
    app.update(delta(1, "print('sec"));
    app.update(delta(1, "ond')\n"));
    let shown = super::tui_states::screen(&mut app, 120, 30);
    assert!(
        shown.contains("print('second')") && !shown.contains("first"),
        "{shown}"
    );
    // In tabs, where the code pane is hidden, the status bar says a block is coming.
    let narrow = super::tui_states::screen(&mut app, 80, 24);
    assert!(narrow.contains("writing a block, 1 line…"), "{narrow}");
    // 420 KB, a line at a time, a frame every 1000 lines: the frames together cost little
    // more than one highlighting pass over the code.
    let code = big_python(420 * 1024);
    let started = Instant::now();
    for (i, line) in code.split_inclusive('\n').enumerate() {
        app.update(delta(2, line));
        if i % 1000 == 0 {
            super::tui_states::screen(&mut app, 120, 30);
        }
    }
    let shown = super::tui_states::screen(&mut app, 120, 30);
    assert!(shown.contains("print('done'"), "{shown}");
    assert_eq!(
        app.streaming_code.as_ref().map(|c| c.code().len()),
        Some(code.len())
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}
