//! `oi-tui mcp` driven by the official Python MCP SDK's client (tests/mcp/checks.py), over
//! stdio (in both protocol generations: 2025-11-25 by `initialize`, 2026-07-28 by
//! discovery) and over Streamable HTTP: tools and schemas, a variable kept between calls,
//! a denied block that never runs, elicitation accepted and declined, a client that cannot
//! be asked, cancellation that leaves the kernel alive, a task polled to its end and one
//! cancelled, the bearer token and the Origin check, and two HTTP clients with their own
//! kernels. Every server runs in a temp dir with its own config and data.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::support::{isolated_oi_tui, mcp_python};

/// A deny rule for the denied-block check.
const CONFIG: &str = "[policy]\ndeny = [\"touch\"]\n";

fn checks() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/checks.py")
}

fn home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.toml"), CONFIG).unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    dir
}

/// `--config` and `--data-dir` in `home`, then `mcp` and `extra`.
fn server_args(home: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--config".to_string(),
        home.join("config.toml").display().to_string(),
        "--data-dir".to_string(),
        home.join("data").display().to_string(),
        "mcp".to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Runs one scenario of checks.py; panics with its output unless it printed `OK`.
async fn scenario(name: &str, mode: &str, env: &[(&str, String)]) {
    let mut cmd = tokio::process::Command::new(mcp_python());
    cmd.arg(checks())
        .arg(name)
        .env("MCP_MODE", mode)
        .env_remove("OI_TUI_CONFIG")
        .env_remove("OI_TUI_MODEL")
        .env_remove("OI_TUI_MCP_TOKEN")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{name} ({mode}) took more than two minutes"))
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(&format!("OK {name}")),
        "{name} ({mode}) failed:\n{stdout}\n{stderr}"
    );
}

/// A scenario over stdio, in both protocol generations, against a fresh server each time.
async fn over_stdio(name: &str, extra: &[&str]) {
    for mode in ["legacy", "auto"] {
        let home = home();
        let work = home.path().join("work");
        let env = [
            ("OI_TUI_BIN", env!("CARGO_BIN_EXE_oi-tui").to_string()),
            (
                "OI_TUI_ARGS",
                serde_json::to_string(&server_args(home.path(), extra)).unwrap(),
            ),
            ("WORK_DIR", work.display().to_string()),
            (
                "XDG_CONFIG_HOME",
                home.path().join("xdg").display().to_string(),
            ),
            (
                "XDG_DATA_HOME",
                home.path().join("share").display().to_string(),
            ),
        ];
        scenario(name, mode, &env).await;
    }
}

/// `oi-tui mcp --listen 127.0.0.1:0` with a token; its URL.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
    home: tempfile::TempDir,
}

const TOKEN: &str = "test-token-0123456789";

async fn http_server(extra: &[&str]) -> HttpServer {
    let home = home();
    let work = home.path().join("work");
    let mut args = server_args(home.path(), extra);
    args.extend(["--listen".to_string(), "127.0.0.1:0".to_string()]);
    let mut cmd = isolated_oi_tui(&work);
    cmd.args(&args).env("OI_TUI_MCP_TOKEN", TOKEN);
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            assert!(
                !line.contains("bearer token (shown once"),
                "a token was given: {line}"
            );
            if let Some(at) = line.find("http://") {
                return line[at..].trim().to_string();
            }
        }
        panic!("the server ended before it listened");
    })
    .await
    .expect("the server did not say where it listens");
    // Keep reading what it says, so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpServer { child, url, home }
}

impl HttpServer {
    async fn check(&self, name: &str, mode: &str) {
        let env = [
            ("MCP_URL", self.url.clone()),
            ("MCP_TOKEN", TOKEN.to_string()),
            (
                "WORK_DIR",
                self.home.path().join("work").display().to_string(),
            ),
        ];
        scenario(name, mode, &env).await;
    }

    /// SIGTERM; the server must end and leave no kernel behind.
    async fn stop(mut self) {
        let pid = self.child.id().unwrap() as i32;
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("the server did not stop on SIGTERM")
            .unwrap();
        // Through oi-tui's way out (kernels killed): the conventional status.
        assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    }
}

#[tokio::test]
async fn stdio_lists_tools_runs_python_and_keeps_variables() {
    over_stdio("basics", &["-y"]).await;
}

#[tokio::test]
async fn stdio_a_denied_block_never_runs() {
    over_stdio("denied", &["-y"]).await;
}

#[tokio::test]
async fn stdio_elicitation_accepted_and_declined() {
    over_stdio("elicit_accept", &[]).await;
    over_stdio("elicit_decline", &[]).await;
}

#[tokio::test]
async fn stdio_without_elicitation_a_block_that_asks_is_refused_with_how_to_allow_it() {
    over_stdio("no_elicitation", &[]).await;
}

#[tokio::test]
async fn stdio_cancellation_interrupts_and_the_kernel_survives() {
    over_stdio("cancel", &["-y"]).await;
}

#[tokio::test]
async fn stdio_tasks_created_polled_finished_and_cancelled() {
    over_stdio("task", &["-y"]).await;
}

#[tokio::test]
async fn stdio_end_of_input_stops_with_status_0_and_the_session_is_named_after_the_caller() {
    let home = home();
    let work = home.path().join("work");
    // A client that ran one block and left.
    let env = [
        ("OI_TUI_BIN", env!("CARGO_BIN_EXE_oi-tui").to_string()),
        (
            "OI_TUI_ARGS",
            serde_json::to_string(&server_args(home.path(), &["-y"])).unwrap(),
        ),
        ("WORK_DIR", work.display().to_string()),
    ];
    scenario("denied", "legacy", &env).await;
    let mut cmd = isolated_oi_tui(&work);
    cmd.args(server_args(home.path(), &["-y"]));
    let out = cmd.output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "stdout holds only the protocol: {out:?}"
    );
    let mut list = isolated_oi_tui(&work);
    list.args([
        "--data-dir",
        &home.path().join("data").display().to_string(),
        "sessions",
        "list",
        "--json",
    ]);
    let listed = String::from_utf8_lossy(&list.output().await.unwrap().stdout).to_string();
    assert!(listed.contains("claude-code (MCP): "), "{listed}");
}

#[tokio::test]
async fn http_tools_variables_denied_cancel_and_tasks() {
    let server = http_server(&["-y"]).await;
    for mode in ["legacy", "auto"] {
        for name in ["basics", "denied", "cancel", "task"] {
            server.check(name, mode).await;
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn http_elicitation_accepted_declined_and_refused() {
    let server = http_server(&[]).await;
    for mode in ["legacy", "auto"] {
        for name in ["elicit_accept", "elicit_decline", "no_elicitation"] {
            server.check(name, mode).await;
            let _ = std::fs::remove_file(server.home.path().join("work/accepted.txt"));
        }
    }
    server.stop().await;
}

#[tokio::test]
async fn http_refuses_a_missing_or_wrong_token_and_a_foreign_origin() {
    let server = http_server(&["-y"]).await;
    server.check("http_guards", "legacy").await;
    server.stop().await;
}

#[tokio::test]
async fn http_two_clients_have_their_own_kernels() {
    let server = http_server(&["-y"]).await;
    server.check("two_clients", "legacy").await;
    server.check("two_clients", "auto").await;
    server.stop().await;
}

#[tokio::test]
async fn http_a_token_is_made_and_shown_once_when_none_is_configured() {
    let home = home();
    let mut cmd = isolated_oi_tui(home.path());
    cmd.args(server_args(home.path(), &["--listen", "0"]))
        .env_remove("OI_TUI_MCP_TOKEN");
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut said = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(line)) = lines.next_line().await {
            let done = line.contains("codex");
            said.push(line);
            if done {
                break;
            }
        }
    })
    .await;
    let _ = child.start_kill();
    let text = said.join("\n");
    let token_line = said
        .iter()
        .find(|l| l.contains("bearer token"))
        .unwrap_or_else(|| panic!("no token shown:\n{text}"));
    let token = token_line.rsplit(' ').next().unwrap();
    assert_eq!(token.len(), 48, "{text}");
    assert_eq!(
        text.matches(token).count(),
        2,
        "the token and the Claude Code line: {text}"
    );
    assert!(text.contains("http://127.0.0.1:"), "{text}");
}
