//! The real binary, headless (`--task`), against the scripted model server: every provider,
//! tool calls and fenced blocks, declined blocks, retries, every error path, and
//! `--list-models`.

use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::model_server::{ModelServer, Reply};

/// A temporary home for one run: config and data go here, never to the real ones.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("dir"),
        }
    }

    fn path(&self) -> &std::path::Path {
        self.dir.path()
    }

    async fn oi(&self, args: &[&str]) -> Output {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
        cmd.args(args)
            .arg("--data-dir")
            .arg(self.path().join("data"))
            .current_dir(self.path())
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("share"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OI_TUI_MODEL")
            .env_remove("OI_TUI_API_BASE")
            .env_remove("OLLAMA_HOST")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        tokio::time::timeout(Duration::from_secs(120), cmd.output())
            .await
            .expect("oi-tui finished in time")
            .expect("oi-tui ran")
    }

    /// `--task TASK --model PROVIDER/scripted --api-base BASE` plus `extra`.
    async fn task(
        &self,
        server: &ModelServer,
        provider: &str,
        task: &str,
        extra: &[&str],
    ) -> Output {
        let model = format!("{provider}/scripted");
        let base = server.base(provider);
        let mut args = vec!["--task", task, "--model", &model, "--api-base", &base];
        args.extend_from_slice(extra);
        self.oi(&args).await
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_status(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

async fn three_blocks_with_state(provider: &str) {
    let server = ModelServer::start(vec![
        Reply::text("I'll start with Python.").and_tool("python", "x = 40\nprint('py', x)"),
        Reply::tool("shell", "echo sh-$((1 + 1))"),
        Reply::tool("python", "print('sum', x + 2)"),
        Reply::text("Done: the sum is 42."),
    ])
    .await;
    let home = Home::new();
    let out = home
        .task(&server, provider, "add two to forty", &["-y"])
        .await;
    assert_status(&out, 0);
    let stdout = text(&out.stdout);
    for needle in [
        "I'll start with Python.",
        "py 40",
        "sh-2",
        "sum 42",
        "Done: the sum is 42.",
        "python · block 1",
        "✓ shell",
    ] {
        assert!(
            stdout.contains(needle),
            "{provider}: {needle:?} missing from\n{stdout}"
        );
    }
    let chats = server.chats();
    assert_eq!(chats.len(), 4, "{provider}");
    // Each block's output reaches the next request.
    assert!(chats[1].all_text().contains("py 40"), "{provider}");
    assert!(chats[2].all_text().contains("sh-2"), "{provider}");
    assert!(chats[3].all_text().contains("sum 42"), "{provider}");
    assert!(chats[0].all_text().contains("add two to forty"));
    // The system prompt names the machine and the languages.
    assert!(
        chats[0].all_text().contains("Languages you can run"),
        "{provider}"
    );
    assert!(
        chats[0].all_text().contains("execute"),
        "{provider}: the tool is offered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_runs_a_multi_step_task_with_state_across_blocks() {
    three_blocks_with_state("openai").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_runs_a_multi_step_task_with_state_across_blocks() {
    three_blocks_with_state("ollama").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_runs_a_multi_step_task_with_state_across_blocks() {
    three_blocks_with_state("anthropic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_results_go_back_in_each_protocols_own_shape() {
    for provider in ["openai", "ollama", "anthropic"] {
        let server = ModelServer::start(vec![
            Reply::tool("python", "print(7 * 6)"),
            Reply::text("42."),
        ])
        .await;
        let home = Home::new();
        let out = home.task(&server, provider, "multiply", &["-y"]).await;
        assert_status(&out, 0);
        let second = &server.chats()[1].body;
        let messages = second["messages"].as_array().expect("messages");
        match provider {
            "openai" => {
                let result = messages
                    .iter()
                    .find(|m| m["role"] == "tool")
                    .expect("tool message");
                assert_eq!(result["tool_call_id"], "call_0");
                assert!(result["content"].as_str().unwrap().contains("42"));
                let call = messages
                    .iter()
                    .find(|m| m["role"] == "assistant")
                    .expect("assistant");
                assert_eq!(call["tool_calls"][0]["function"]["name"], "execute");
            }
            "ollama" => {
                let result = messages
                    .iter()
                    .find(|m| m["role"] == "tool")
                    .expect("tool message");
                assert!(result["content"].as_str().unwrap().contains("42"));
                let call = messages
                    .iter()
                    .find(|m| m["role"] == "assistant")
                    .expect("assistant");
                assert_eq!(
                    call["tool_calls"][0]["function"]["arguments"]["language"],
                    "python"
                );
            }
            _ => {
                let last = messages.last().expect("last");
                assert_eq!(last["role"], "user");
                assert_eq!(last["content"][0]["type"], "tool_result");
                assert_eq!(last["content"][0]["tool_use_id"], "toolu_0");
                assert!(second["system"].as_str().unwrap().contains("oi-tui"));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_mode_runs_two_blocks_of_one_reply_in_order() {
    let server = ModelServer::start(vec![
        Reply::text("Two steps:\n```python\nprint('a' * 3)\n```\nthen\n```bash\necho b$((2 + 2))\n```\n```json\n{\"not\": \"run\"}\n```\n"),
        Reply::text("All done."),
    ])
    .await;
    let home = Home::new();
    let out = home
        .task(&server, "openai", "two things", &["-y", "--no-tools"])
        .await;
    assert_status(&out, 0);
    let stdout = text(&out.stdout);
    let (a, b) = (
        stdout.find("aaa").expect("aaa"),
        stdout.find("b4").expect("b4"),
    );
    assert!(a < b, "in order:\n{stdout}");
    assert!(stdout.contains("shell · block 2 (2 of 2)"), "{stdout}");
    let chats = server.chats();
    assert_eq!(chats.len(), 2);
    assert!(chats[0].body.get("tools").is_none(), "no tools offered");
    assert!(chats[0].all_text().contains("fenced code block"));
    let feedback = chats[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(feedback["role"], "user");
    let feedback = feedback["content"].as_str().unwrap();
    assert!(
        feedback.contains("Block 1 of 2 (python)") && feedback.contains("aaa"),
        "{feedback}"
    );
    assert!(
        feedback.contains("Block 2 of 2 (shell)") && feedback.contains("b4"),
        "{feedback}"
    );
}

/// The transcript shows the code that runs in its box, even when the model's words end
/// with the same text (`I will run: echo tail`); only a fenced block of that very code in
/// the reply counts as shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_that_runs_is_in_its_box_whatever_the_words_before_it() {
    let server = ModelServer::start(vec![
        Reply::text("I will run: echo tail").and_tool("shell", "echo tail"),
        Reply::text("Done."),
    ])
    .await;
    let home = Home::new();
    let out = home.task(&server, "openai", "go", &["-y"]).await;
    assert_status(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("│ echo tail\n└─"), "{stdout}");
    // A fenced block of the same code in the reply is not shown twice.
    let server = ModelServer::start(vec![
        Reply::text("Running:\n```bash\necho fenced\n```\n"),
        Reply::text("Done."),
    ])
    .await;
    let out = home
        .task(&server, "openai", "go", &["-y", "--no-tools"])
        .await;
    assert_status(&out, 0);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("│ echo fenced"), "{stdout}");
    assert!(stdout.contains("echo fenced"), "{stdout}");
    // A fence of the same text in another language is not the block that runs.
    let server = ModelServer::start(vec![
        Reply::text("Like this:\n```python\nprint(42)\n```\n").and_tool("shell", "print(42)"),
        Reply::text("Done."),
    ])
    .await;
    let out = home.task(&server, "openai", "go", &["-y"]).await;
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("shell · block 1\n│ print(42)\n└─"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_terminal_blocks_are_declined_and_nothing_runs() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "touch created-by-block.txt"),
        Reply::tool("shell", "touch created-again.txt"),
        Reply::text("never asked for"),
    ])
    .await;
    let home = Home::new();
    let out = home.task(&server, "openai", "make a file", &[]).await;
    assert_status(&out, 0);
    assert!(!home.path().join("created-by-block.txt").exists());
    assert!(!home.path().join("created-again.txt").exists());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("not run: Not run: nobody can approve code")
            || stdout.contains("nobody can approve"),
        "{stdout}"
    );
    assert!(text(&out.stderr).contains("-y"), "says how to run them");
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "one follow-up, then it finishes");
    assert!(chats[1].all_text().contains("nobody can approve code"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_end_in_success() {
    let server = ModelServer::start(vec![
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).retry_after(1),
        Reply::status(503, r#"{"error":{"message":"warming up"}}"#),
        Reply::text("made it"),
    ])
    .await;
    let home = Home::new();
    let started = Instant::now();
    let out = home.task(&server, "ollama", "hello", &[]).await;
    assert_status(&out, 0);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After was honoured"
    );
    assert!(text(&out.stdout).contains("made it"));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("429 slow down") && stderr.contains("retry 1 of 4"),
        "{stderr}"
    );
    assert!(
        stderr.contains("503 warming up") && stderr.contains("retry 2 of 4"),
        "{stderr}"
    );
    assert_eq!(server.chats().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_and_unknown_model_errors_are_one_clear_sentence_without_retry() {
    let server = ModelServer::start(vec![
        Reply::status(401, r#"{"error":{"message":"Incorrect API key provided"}}"#),
        Reply::status(404, r#"{"error":{"message":"model 'scripted' not found"}}"#),
    ])
    .await;
    let home = Home::new();
    let out = home.task(&server, "openai", "hi", &[]).await;
    assert_status(&out, 1);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("openai at {}", server.base("openai"))),
        "{stderr}"
    );
    assert!(
        stderr.contains("Incorrect API key provided") && stderr.contains("OPENAI_API_KEY"),
        "{stderr}"
    );
    let out = home.task(&server, "openai", "hi", &[]).await;
    assert_status(&out, 1);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("404") && stderr.contains("--list-models"),
        "{stderr}"
    );
    assert_eq!(server.chats().len(), 2, "no retries");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_stream_keeps_the_partial_text() {
    let server = ModelServer::start(vec![
        Reply::text("This reply breaks off in the middle of a sentence").disconnect_after(4),
        Reply::text("This one carries garbage").invalid_json_after(3),
    ])
    .await;
    let home = Home::new();
    let out = home.task(&server, "openai", "hi", &[]).await;
    assert_status(&out, 1);
    assert!(
        text(&out.stdout).contains("This reply bre"),
        "{}",
        text(&out.stdout)
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("closed before the reply was complete") && stderr.contains("kept"),
        "{stderr}"
    );
    let out = home.task(&server, "ollama", "hi", &[]).await;
    assert_status(&out, 1);
    assert!(
        text(&out.stderr).contains("not valid JSON"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out_and_a_dead_one_is_named() {
    let server = ModelServer::start(vec![
        Reply::text("too slow to matter").slow(Duration::from_secs(3)),
    ])
    .await;
    let home = Home::new();
    let started = Instant::now();
    let out = home
        .task(&server, "anthropic", "hi", &["--idle-timeout", "0.5"])
        .await;
    assert_status(&out, 1);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        text(&out.stderr).contains("sent nothing for"),
        "{}",
        text(&out.stderr)
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let base = format!("http://127.0.0.1:{port}/v1");
    let out = home
        .oi(&[
            "--task",
            "hi",
            "--model",
            "openai/x",
            "--api-base",
            &base,
            "--max-retries",
            "1",
        ])
        .await;
    assert_status(&out, 1);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot reach openai at {base}")),
        "{stderr}"
    );
    assert!(stderr.contains("retry 1 of 1"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_rejects_tools_gets_fenced_blocks_and_that_is_remembered() {
    let server = ModelServer::start(vec![
        Reply::status(
            400,
            r#"{"error":"registry.ollama.ai/library/tiny does not support tools"}"#,
        ),
        Reply::text("```python\nprint(6 * 7)\n```"),
        Reply::text("It is 42."),
        Reply::text("Fenced from the start."),
    ])
    .await;
    let home = Home::new();
    let out = home.task(&server, "ollama", "compute", &["-y"]).await;
    assert_status(&out, 0);
    assert!(
        text(&out.stderr).contains("Falling back to fenced code blocks"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("42"));
    let chats = server.chats();
    assert!(chats[0].body.get("tools").is_some());
    assert!(chats[1].body.get("tools").is_none());
    // A second run remembers: no tools from the first request.
    let out = home.task(&server, "ollama", "again", &["-y"]).await;
    assert_status(&out, 0);
    assert!(text(&out.stderr).contains("rejected tools before"));
    assert!(server.chats()[3].body.get("tools").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_and_usage_errors_have_their_own_statuses() {
    let home = Home::new();
    let out = home.oi(&["--task", "hi"]).await;
    assert_status(&out, 1);
    assert!(
        text(&out.stderr).contains("no model is configured"),
        "{}",
        text(&out.stderr)
    );

    let out = home
        .oi(&["--task", "hi", "--model", "openai/gpt-4o-mini"])
        .await;
    assert_status(&out, 1);
    assert!(text(&out.stderr).contains("needs an API key: set OPENAI_API_KEY"));

    let config = home.path().join("bad.toml");
    std::fs::write(&config, "model = \"ollama/x\"\nmax_turns = [\n").expect("write");
    let out = home
        .oi(&["--task", "hi", "--config", config.to_str().unwrap()])
        .await;
    assert_status(&out, 1);
    assert!(
        text(&out.stderr).contains("bad.toml:2:"),
        "{}",
        text(&out.stderr)
    );

    let out = home.oi(&["--json"]).await;
    assert_status(&out, 2);
    let out = home.oi(&["--task", "hi", "--max-turns", "many"]).await;
    assert_status(&out, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_limit_stops_a_model_that_never_finishes() {
    let replies = (0..5)
        .map(|i| Reply::tool("shell", &format!("echo round {i}")))
        .collect();
    let server = ModelServer::start(replies).await;
    let home = Home::new();
    let out = home
        .task(&server, "openai", "loop", &["-y", "--max-turns", "2"])
        .await;
    assert_status(&out, 0);
    assert_eq!(server.chats().len(), 2);
    assert!(
        text(&out.stderr).contains("--max-turns 2"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_mode_prints_the_event_stream() {
    let server = ModelServer::start(vec![
        Reply::tool("python", "print('hi there')"),
        Reply::text("bye"),
    ])
    .await;
    let home = Home::new();
    let out = home
        .task(&server, "openai", "greet", &["-y", "--json"])
        .await;
    assert_status(&out, 0);
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    for kind in [
        "session_configured",
        "block_delta",
        "block_proposed",
        "exec_started",
        "exec_output",
        "exec_finished",
        "assistant_delta",
        "turn_finished",
    ] {
        assert!(kinds.contains(&kind), "{kind} in {kinds:?}");
    }
    let finished = events
        .iter()
        .find(|e| e["event"] == "exec_finished")
        .unwrap();
    assert_eq!(finished["result"]["exit_code"], 0);
    assert_eq!(finished["result"]["output"], "hi there\n");
    assert_eq!(events.last().unwrap()["end"], "done");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_models_asks_the_configured_server() {
    let server = ModelServer::start(vec![]).await;
    let home = Home::new();
    for provider in ["openai", "ollama", "anthropic"] {
        let base = server.base(provider);
        let out = home
            .oi(&["--list-models", "--model", provider, "--api-base", &base])
            .await;
        assert_status(&out, 0);
        assert_eq!(
            text(&out.stdout),
            format!("{provider}/scripted-large\n{provider}/scripted-small\n")
        );
    }
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/models", "/api/tags", "/v1/models"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_are_sent_but_never_printed() {
    let server = ModelServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"bad key"}}"#,
    )])
    .await;
    let home = Home::new();
    let out = home
        .task(
            &server,
            "openai",
            "hi",
            &["--api-key", "sk-test-SECRET-123", "--json"],
        )
        .await;
    assert_status(&out, 1);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!all.contains("SECRET"), "{all}");
    assert_eq!(
        server.chats()[0].header("authorization"),
        Some("Bearer sk-test-SECRET-123")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_the_block_then_the_turn_with_status_130() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "echo started; sleep 100; echo not reached"),
        Reply::text("never requested"),
    ])
    .await;
    let home = Home::new();
    let model = "openai/scripted".to_string();
    let base = server.base("openai");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
        .args([
            "--task",
            "sleep",
            "--model",
            &model,
            "--api-base",
            &base,
            "-y",
        ])
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&seen).contains("started") {
        assert!(Instant::now() < deadline, "the block started");
        let mut buf = [0u8; 1024];
        let n = tokio::io::AsyncReadExt::read(&mut stdout, &mut buf)
            .await
            .expect("read");
        assert!(
            n > 0,
            "output ended early: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
    let started = Instant::now();
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id().expect("pid") as i32, libc::SIGINT);
    }
    let mut rest = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::AsyncReadExt::read_to_end(&mut stdout, &mut rest),
    )
    .await
    .expect("output ends")
    .expect("read");
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("exits")
        .expect("output");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130));
    let rest = text(&rest);
    assert!(!rest.contains("not reached"), "{rest}");
    assert!(
        rest.contains("interrupted"),
        "before: {}\nstdout: {rest}\nstderr: {}",
        text(&seen),
        text(&out.stderr)
    );
    assert_eq!(
        server.chats().len(),
        1,
        "the turn ended: no further request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_options_reach_the_request() {
    let server = ModelServer::start(vec![Reply::text("ok"), Reply::text("ok")]).await;
    let home = Home::new();
    let out = home
        .task(
            &server,
            "openai",
            "hi",
            &[
                "--custom-instructions",
                "Answer in haiku.",
                "--max-tokens",
                "123",
                "--temperature",
                "0.3",
            ],
        )
        .await;
    assert_status(&out, 0);
    let body = &server.chats()[0].body;
    assert_eq!(body["max_tokens"], 123);
    assert!((body["temperature"].as_f64().unwrap() - 0.3).abs() < 1e-6);
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Languages you can run") && system.ends_with("Answer in haiku.\n"));

    let out = home
        .task(
            &server,
            "ollama",
            "hi",
            &[
                "--system-message",
                "You are terse.",
                "--context-window",
                "4096",
            ],
        )
        .await;
    assert_status(&out, 0);
    let body = &server.chats()[1].body;
    assert_eq!(body["messages"][0]["content"], "You are terse.");
    assert_eq!(body["options"]["num_ctx"], 4096);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_context_window_drops_the_oldest_messages_and_says_so() {
    let server = ModelServer::start(vec![
        Reply::tool("python", "print('A' * 3000)"),
        Reply::tool("python", "print('B' * 3000)"),
        Reply::text("done"),
    ])
    .await;
    let home = Home::new();
    let out = home
        .task(
            &server,
            "openai",
            "fill the window",
            &["-y", "--context-window", "1900", "--max-tokens", "200"],
        )
        .await;
    assert_status(&out, 0);
    assert!(
        text(&out.stderr).contains("oldest messages were left out"),
        "{}",
        text(&out.stderr)
    );
    let last = server.chats()[2].all_text();
    assert!(
        last.contains("BBBB") && !last.contains("AAAA"),
        "the newest kept, the oldest dropped"
    );
    // Calls and results travel together: every tool result has its call.
    let messages = server.chats()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    for m in messages.iter().filter(|m| m["role"] == "tool") {
        let id = &m["tool_call_id"];
        assert!(messages.iter().any(|a| {
            a["tool_calls"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| &c["id"] == id))
        }));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_leaves_no_kernel_behind() {
    let server =
        ModelServer::start(vec![Reply::tool("shell", "echo \"KERNEL=$$\"; sleep 100")]).await;
    let home = Home::new();
    let base = server.base("openai");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
        .args([
            "--task",
            "wait",
            "--model",
            "openai/scripted",
            "--api-base",
            &base,
            "-y",
            "--json",
        ])
        .arg("--data-dir")
        .arg(home.path().join("data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut seen = String::new();
    let kernel: i32 = loop {
        let mut buf = [0u8; 4096];
        let n = tokio::io::AsyncReadExt::read(&mut stdout, &mut buf)
            .await
            .expect("read");
        assert!(n > 0, "{seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        if let Some(pid) = seen
            .split("KERNEL=")
            .skip(1)
            .find_map(|s| s.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        {
            break pid;
        }
    };
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id().expect("pid") as i32, libc::SIGTERM);
    }
    let status = child.wait().await.expect("wait");
    assert_eq!(status.code(), Some(143));
    let deadline = Instant::now() + Duration::from_secs(5);
    while !oi_tui::exec::reaper::session_processes(kernel).is_empty() {
        assert!(Instant::now() < deadline, "the kernel's session survives");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
