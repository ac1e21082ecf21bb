//! oi-tui as an MCP client, through the real binary: `oi-tui mcp list` (stdio and
//! Streamable HTTP servers, with their bearer token), config errors that name the server
//! and the key, and headless `--task` calling an allowed tool, recorded and replayed.

use std::path::Path;
use std::time::{Duration, Instant};

use oi_tui::protocol::Event;
use serde_json::json;

use super::mcp_client::{calls_of, server_script, servers_left};
use super::model_server::{ModelServer, Reply};

/// A home for the real binary with a config file holding `body`.
fn home_with_config(body: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config/oi-tui");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), body).unwrap();
    std::fs::create_dir(dir.path().join("calls")).unwrap();
    dir
}

/// `[mcp_servers.echo]`, its calls written to `dir/calls`.
fn echo_entry(dir: &Path, extra: &str) -> String {
    let _ = std::fs::create_dir(dir.join("calls"));
    format!(
        "[mcp_servers.echo]\ncommand = {:?}\nargs = [{:?}]\nenv = {{ CALLS_DIR = {:?} }}\nstartup_timeout_sec = 90\n{extra}\n",
        super::support::mcp_python().display().to_string(),
        server_script().display().to_string(),
        dir.join("calls").display().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_list_shows_servers_their_state_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "{}\n[mcp_servers.off]\ncommand = \"nothing\"\nenabled = false\n\n[mcp_servers.gone]\ncommand = \"oi-tui-no-such-mcp-server\"\n",
        echo_entry(
            dir.path(),
            "disabled_tools = [\"hang\"]\nfavourite_colour = \"blue\""
        )
    );
    let home = home_with_config(&body);
    let out = super::support::output_within({
        let mut cmd = super::support::isolated_oi_tui(home.path());
        cmd.args(["mcp", "list"]);
        cmd
    })
    .await;
    let stdout = super::support::text(&out.stdout);
    let stderr = super::support::text(&out.stderr);
    assert!(stdout.contains("echo  "), "{stdout}");
    assert!(stdout.contains("ready, 4 tools"), "{stdout}");
    assert!(
        stdout.contains("  - echo\n") && stdout.contains("  - crash\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("  - hang"), "disabled_tools: {stdout}");
    assert!(stdout.contains("off  nothing\n  disabled"), "{stdout}");
    assert!(
        stdout.contains("gone  oi-tui-no-such-mcp-server\n  failed:"),
        "{stdout}"
    );
    // A failed server makes the status 1; an unknown key is a warning with its line.
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr.contains("config.toml:7: unknown key `favourite_colour` in [mcp_servers.echo]"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_server_entries_are_errors_that_name_the_server_and_the_key() {
    for (body, expect) in [
        (
            "[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
            "[mcp_servers.both]: has both `command`",
        ),
        (
            "[mcp_servers.none]\nargs = [\"x\"]\n",
            "[mcp_servers.none]: has neither `command`",
        ),
        (
            "[mcp_servers.dir]\ncommand = \"x\"\ncwd = \"no/such/dir\"\n",
            "[mcp_servers.dir]: `cwd` = \"no/such/dir\": no such directory",
        ),
        (
            "[mcp_servers.slow]\ncommand = \"x\"\nstartup_timeout_sec = -1\n",
            "[mcp_servers.slow]: `startup_timeout_sec` = -1",
        ),
    ] {
        let home = home_with_config(body);
        let out = super::support::output_within({
            let mut cmd = super::support::isolated_oi_tui(home.path());
            cmd.args(["mcp", "list"]);
            cmd
        })
        .await;
        let stderr = super::support::text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{body}");
        assert!(stderr.contains(expect), "{body}: {stderr}");
        assert!(stderr.contains("config.toml"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_task_calls_an_allowed_tool_and_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "[policy]\nallow = [\"mcp:echo/echo\"]\n\n{}",
        echo_entry(dir.path(), "")
    );
    let home = home_with_config(&body);
    let server = ModelServer::start(vec![
        Reply::call("echo__echo", json!({"text": "from headless"})),
        Reply::text("The server said it."),
        Reply::call("echo__echo", json!({"text": "json"})),
        Reply::text("Done again."),
    ])
    .await;
    let base = server.base("openai");
    let run = |json: bool| {
        let mut cmd = super::support::isolated_oi_tui(home.path());
        cmd.args([
            "--task",
            "call echo",
            "--model",
            "openai/scripted",
            "--api-base",
            &base,
            "--approval",
            "rules",
        ]);
        if json {
            cmd.arg("--json");
        }
        super::support::output_within(cmd)
    };
    let out = run(false).await;
    let stdout = super::support::text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        super::support::text(&out.stderr)
    );
    assert!(stdout.contains("mcp:echo/echo"), "{stdout}");
    assert!(
        stdout.contains("→ calling echo of the MCP server echo"),
        "{stdout}"
    );
    assert!(stdout.contains("echo: from headless"), "{stdout}");
    assert!(stdout.contains("The server said it."), "{stdout}");
    assert!(server.chats()[1].all_text().contains("echo: from headless"));
    assert_eq!(calls_of(&dir.path().join("calls"), "echo"), 1);
    assert_eq!(servers_left(&dir.path().join("calls")), Vec::<i32>::new());

    // The session keeps the call: a resumed session shows it again.
    let store = oi_tui::store::Store::open(&home.path().join("share/oi-tui")).unwrap();
    let session = store.list(1, 0).unwrap().remove(0);
    let replayed = store.replay(&session.id).unwrap();
    let block = replayed
        .iter()
        .find_map(|e| match e {
            Event::BlockProposed { block, .. } => Some(block.clone()),
            _ => None,
        })
        .expect("the call is replayed");
    assert_eq!(
        block.tool.map(|t| t.policy_name()).as_deref(),
        Some("mcp:echo/echo")
    );
    assert!(
        replayed
            .iter()
            .any(|e| matches!(e, Event::ToolStarted { edited: false, .. }))
    );
    assert!(replayed.iter().any(
        |e| matches!(e, Event::ToolFinished { ok: true, output, .. } if output == "echo: from headless")
    ));

    let out = run(true).await;
    let events = super::support::json_events(&out);
    let started = events
        .iter()
        .find(|e| e["event"] == "tool_started")
        .expect("a tool_started event");
    assert_eq!(started["tool"], json!({"server": "echo", "tool": "echo"}));
    let finished = events
        .iter()
        .find(|e| e["event"] == "tool_finished")
        .expect("a tool_finished event");
    assert_eq!(finished["ok"], true);
    assert_eq!(finished["output"], "echo: json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_servers_get_the_bearer_token_from_its_variable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = tokio::process::Command::new(super::support::mcp_python())
        .arg(server_script())
        .args(["http", &port.to_string(), "s3cret"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the HTTP server did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let body = format!(
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env_var = \"ECHO_TOKEN\"\n"
    );
    let home = home_with_config(&body);
    let list = |token: Option<&str>| {
        let mut cmd = super::support::isolated_oi_tui(home.path());
        cmd.args(["mcp", "list"]);
        match token {
            Some(t) => cmd.env("ECHO_TOKEN", t),
            None => cmd.env_remove("ECHO_TOKEN"),
        };
        super::support::output_within(cmd)
    };
    let out = list(Some("s3cret")).await;
    let stdout = super::support::text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "web  http://127.0.0.1:{port}/mcp\n  ready, 5 tools"
        )),
        "{stdout}"
    );
    assert!(stdout.contains("  - add\n"), "{stdout}");

    let out = list(Some("wrong")).await;
    let stdout = super::support::text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("refused oi-tui's credentials (HTTP 401): check the token in ECHO_TOKEN"),
        "{stdout}"
    );

    let out = list(None).await;
    let stdout = super::support::text(&out.stdout);
    assert!(stdout.contains("ECHO_TOKEN, which is not set"), "{stdout}");
}
