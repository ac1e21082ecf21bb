//! What is shown is what runs, with the real binary: a carriage return cannot hide code in
//! the headless prompt, escape sequences from a model reach no terminal (the headless
//! transcript, `--json`, the `sessions` commands, a server's error body), and a block's own
//! output keeps its colours but loses clipboard and title sequences.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

/// Model text that would write the clipboard and change the window title if printed raw.
const HOSTILE: &str = "Sure \x1b]52;c;aGVsbG8=\x07 and \x1b]0;pwned\x07 here.";

/// Whether these bytes hold any escape sequence that acts beyond colours.
fn has_osc(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.contains("\x1b]") || text.contains("\u{9d}") || text.contains("\x1bP")
}

/// A headless run in tmux (a real terminal), with everything the program writes to the
/// terminal copied raw into a file. Returns the session and the file.
fn headless_in_tmux(
    dir: &std::path::Path,
    server: &ModelServer,
    task: &str,
    extra: &str,
) -> (Tmux, std::path::PathBuf) {
    let raw = dir.join("terminal.raw");
    let command = format!(
        "sleep 1; cd '{dir}' && XDG_CONFIG_HOME='{dir}/config' '{bin}' --task '{task}' --model openai/scripted --api-base {base} --data-dir '{dir}/data' {extra}; echo RUN-ENDED; sleep 30",
        dir = dir.display(),
        bin = env!("CARGO_BIN_EXE_oi-tui"),
        base = server.base("openai"),
    );
    let tmux = Tmux::start(&command, 160, 50);
    let status = Command::new("tmux")
        .args(["-L", tmux.socket(), "pipe-pane", "-o", "-t", "t"])
        .arg(format!("cat >> '{}'", raw.display()))
        .status()
        .expect("pipe-pane");
    assert!(status.success());
    (tmux, raw)
}

/// The raw bytes the terminal received, once `needle` is among them.
async fn raw_until(path: &std::path::Path, needle: &str) -> Vec<u8> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let bytes = std::fs::read(path).unwrap_or_default();
        if String::from_utf8_lossy(&bytes).contains(needle) {
            return bytes;
        }
        assert!(
            Instant::now() < deadline,
            "waited for {needle:?}; the terminal got {:?}",
            String::from_utf8_lossy(&bytes)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_carriage_return_cannot_hide_code_in_the_headless_prompt() {
    let server = ModelServer::start(vec![
        Reply::text(HOSTILE).and_tool(
            "python",
            "import os; os.remove('canary')#\rprint('hello world')          \nx = 'admin\u{202e}'",
        ),
        Reply::text("all done"),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let canary = dir.path().join("canary");
    std::fs::write(&canary, "alive").expect("canary");
    let (tmux, raw) = headless_in_tmux(dir.path(), &server, "tidy up", "");

    let screen = tmux.wait_for("Run this python block? [y/n/e]").await;
    assert!(
        screen.contains("os.remove('canary')#␍print('hello world')"),
        "{screen}"
    );
    assert!(screen.contains("2 lines"), "{screen}");
    assert!(screen.contains("x = 'admin⟨U+202E⟩'"), "{screen}");
    assert!(
        screen.contains("carriage returns") && screen.contains("bidirectional"),
        "{screen}"
    );
    assert!(
        screen.contains("Sure ␛]52;c;aGVsbG8=␇ and ␛]0;pwned␇ here."),
        "{screen}"
    );
    tmux.send(&["n", "Enter"]);
    let bytes = raw_until(&raw, "RUN-ENDED").await;
    assert!(canary.exists(), "the declined block did not run");
    assert!(!has_osc(&bytes), "{:?}", String::from_utf8_lossy(&bytes));
    assert!(!String::from_utf8_lossy(&bytes).contains('\u{202e}'));
}

/// The hostile tester's block: two names that look the same, one with a variation
/// selector, so that it reads as removing `other.txt` and removes `keep.txt`.
pub(crate) const LOOKALIKE: &str =
    "target\u{fe00} = 'keep.txt'\ntarget = 'other.txt'\nimport os\nos.remove(target\u{fe00})";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variation_selector_is_shown_in_the_headless_prompt_and_the_block_asks() {
    let server = ModelServer::start(vec![
        Reply::text("Tidying.").and_tool("python", LOOKALIKE),
        Reply::text("all done"),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    for name in ["keep.txt", "other.txt"] {
        std::fs::write(dir.path().join(name), "data").expect("file");
    }
    // Even under auto mode (`-y`) the block asks.
    let (tmux, raw) = headless_in_tmux(dir.path(), &server, "tidy up", "-y");
    let screen = tmux.wait_for("Run this python block? [y/n/e]").await;
    assert!(
        screen.contains("│ 1 │ target⟨U+FE00⟩ = 'keep.txt'"),
        "{screen}"
    );
    assert!(screen.contains("│ 2 │ target = 'other.txt'"), "{screen}");
    assert!(
        screen.contains("│ 4 │ os.remove(target⟨U+FE00⟩)"),
        "{screen}"
    );
    assert!(
        screen.contains("⚠ this block holds variation selectors"),
        "{screen}"
    );
    assert!(screen.contains("hidden characters"), "{screen}");
    assert!(screen.contains("→ asks"), "{screen}");
    tmux.send(&["n", "Enter"]);
    let bytes = raw_until(&raw, "RUN-ENDED").await;
    assert!(!String::from_utf8_lossy(&bytes).contains('\u{fe00}'));
    for name in ["keep.txt", "other.txt"] {
        assert!(dir.path().join(name).exists(), "{name}: the block ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocks_output_keeps_its_colours_but_not_clipboard_or_title_sequences() {
    let code = "print('\\x1b[31mred-text\\x1b[0m')\nprint('\\x1b]52;c;aGVsbG8=\\x07clip-done')\nprint('\\x1b]0;pwned\\x1b\\\\title-done')";
    let server =
        ModelServer::start(vec![Reply::tool("python", code), Reply::text("finished")]).await;
    let dir = tempfile::tempdir().expect("dir");
    let (tmux, raw) = headless_in_tmux(dir.path(), &server, "colours", "-y");
    let bytes = raw_until(&raw, "RUN-ENDED").await;
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\x1b[31mred-text\x1b[0m"), "{text:?}");
    assert!(
        text.contains("clip-done") && text.contains("title-done"),
        "{text:?}"
    );
    assert!(!has_osc(&bytes), "{text:?}");
    assert!(!text.contains("pwned\x1b"), "{text:?}");
    drop(tmux);
}

fn bin(data: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.env_remove("OPENAI_API_KEY")
        .arg("--data-dir")
        .arg(data)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

async fn output(mut cmd: tokio::process::Command) -> (bool, Vec<u8>, Vec<u8>) {
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("finished in time")
        .expect("ran");
    (out.status.success(), out.stdout, out.stderr)
}

/// Neither raw ESC nor BEL nor a C1 control: nothing that acts on a terminal.
fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains('\x1b') && !text.contains('\x07') && !text.contains('\u{9d}'),
        "{what}: {text:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_transcript_json_and_sessions_commands_never_print_escape_sequences() {
    let server = ModelServer::start(vec![
        Reply::text(HOSTILE).and_tool("python", "print('\\x1b]0;pwned-too\\x07 printed')"),
        Reply::text("done \x1b]0;pwned-again\x07"),
        Reply::text(HOSTILE),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    let model_args = [
        "--model",
        "openai/scripted",
        "--api-base",
        &server.base("openai"),
    ];

    let mut cmd = bin(&data);
    cmd.args(["--task", "go", "-y"]).args(model_args);
    let (ok, stdout, stderr) = output(cmd).await;
    assert!(ok, "{}", String::from_utf8_lossy(&stderr));
    assert_inert("transcript", &stdout);
    assert_inert("transcript errors", &stderr);
    let transcript = String::from_utf8_lossy(&stdout);
    assert!(transcript.contains("Sure ␛]52;c;aGVsbG8=␇"), "{transcript}");
    assert!(transcript.contains("done ␛]0;pwned-again␇"), "{transcript}");

    // JSON escapes every control character and keeps the text exact.
    let mut cmd = bin(&data);
    cmd.args(["--task", "again", "--json"]).args(model_args);
    let (_, stdout, _) = output(cmd).await;
    assert_inert("--json", &stdout);
    let exact = String::from_utf8_lossy(&stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|v| v.to_string().contains("\\u001b]52;c;aGVsbG8=\\u0007"));
    assert!(exact, "the events carry the exact text");

    for args in [
        vec!["show", "last"],
        vec!["search", "pwned"],
        vec!["list"],
        vec!["export", "last"],
        vec!["export", "last", "--format", "json"],
    ] {
        let mut cmd = bin(&data);
        cmd.arg("sessions").args(&args);
        let (ok, stdout, stderr) = output(cmd).await;
        assert!(ok, "{args:?}: {}", String::from_utf8_lossy(&stderr));
        assert_inert(&format!("sessions {args:?}"), &stdout);
        let text = String::from_utf8_lossy(&stdout);
        assert!(
            args[0] == "list" || text.contains("pwned"),
            "sessions {args:?} still shows the text: {text}"
        );
    }

    // A Markdown file is made safe as well; the JSON export keeps the exact text.
    let file = dir.path().join("export.md");
    let mut cmd_last = bin(&data);
    cmd_last
        .args(["sessions", "export", "last", "-o"])
        .arg(&file);
    let (ok, _, stderr) = output(cmd_last).await;
    assert!(ok, "{}", String::from_utf8_lossy(&stderr));
    let md = std::fs::read(&file).expect("export written");
    assert_inert("exported Markdown", &md);
    assert!(String::from_utf8_lossy(&md).contains("␛]52;c;aGVsbG8=␇"));
    let json_file = dir.path().join("export.json");
    let mut cmd = bin(&data);
    cmd.args(["sessions", "export", "last", "--format", "json", "-o"])
        .arg(&json_file);
    let (ok, _, _) = output(cmd).await;
    assert!(ok);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_file).expect("json")).expect("valid JSON");
    assert!(json.to_string().contains("\\u001b]52;c;aGVsbG8=\\u0007"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_error_body_is_quoted_without_its_escape_sequences() {
    let server = ModelServer::start(vec![Reply::status(
        400,
        "{\"error\":{\"message\":\"bad request \\u001b]0;pwned\\u0007 from server\"}}",
    )])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = bin(&dir.path().join("data"));
    cmd.args([
        "--task",
        "go",
        "--model",
        "openai/scripted",
        "--api-base",
        &server.base("openai"),
    ]);
    let (ok, stdout, stderr) = output(cmd).await;
    assert!(!ok);
    assert_inert("stdout", &stdout);
    assert_inert("stderr", &stderr);
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(
        stderr.contains("bad request ␛]0;pwned␇ from server"),
        "{stderr}"
    );
}
