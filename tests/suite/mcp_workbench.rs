//! The open workbench as an MCP server (`--mcp-listen`), with the real binary in tmux and the
//! official Python MCP client as the other agent: its block appears in the code pane with
//! the caller's name, the person edits and approves it, it runs in the terminal pane, and the
//! agent receives the edited block's output (and is told it was edited).

use std::time::Duration;

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

pub(super) const TOKEN: &str = "workbench-test-token-0123456789";

/// The workbench in tmux serving MCP on a free loopback port, with a known token.
fn serving_workbench(server: &ModelServer, size: (u16, u16)) -> (Tmux, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("config").join("oi-tui");
    std::fs::create_dir_all(&config).expect("config dir");
    std::fs::write(
        config.join("config.toml"),
        format!("[mcp_server]\ntoken = \"{TOKEN}\"\n"),
    )
    .expect("config");
    let tmux = Tmux::workbench(
        &server.base("openai"),
        dir.path(),
        size,
        "",
        "--mcp-listen 127.0.0.1:0",
    );
    (tmux, dir)
}

/// The URL the workbench says it serves at.
pub(super) fn served_url(screen: &str) -> String {
    let start = screen.find("http://127.0.0.1:").expect("a URL on screen");
    let rest = &screen[start..];
    let end = rest.find("/mcp").expect("the URL's path") + "/mcp".len();
    rest[..end].to_string()
}

/// Another agent's `execute` call, running in the background; its result lands in `out`.
pub(super) fn agent_call(
    url: &str,
    token: &str,
    code: &str,
    out: &std::path::Path,
) -> tokio::process::Child {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/workbench_call.py");
    tokio::process::Command::new(super::support::mcp_python())
        .arg(script)
        .args([url, token, "python", code])
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the Python MCP client starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_agents_block_is_edited_and_approved_and_the_agent_gets_the_edited_output() {
    let server = ModelServer::start(vec![Reply::text("Hello.")]).await;
    for size in [(200, 60), (80, 24)] {
        let (tmux, dir) = serving_workbench(&server, size);
        let screen = tmux.wait_for("Serving MCP at").await;
        let url = served_url(&screen.replace('\n', ""));
        let out = dir.path().join("result.json");
        let agent = agent_call(&url, TOKEN, "print('proposed-by-agent')", &out);

        // The block waits in the code pane, with who sent it.
        let screen = tmux.wait_for("awaiting your decision").await;
        assert!(screen.contains("from claude-code"), "{size:?}\n{screen}");
        assert!(screen.contains("proposed-by-agent"), "{size:?}\n{screen}");
        assert!(!out.exists(), "nothing ran before the person decided");

        // The person edits it, then runs it.
        tmux.send(&["e"]);
        tmux.wait_for("Ctrl-S accepts").await;
        tmux.send(&["End"]);
        for _ in 0.."agent')".len() {
            tmux.send(&["BSpace"]);
        }
        tmux.type_text("person')");
        tmux.send(&["C-s"]);
        tmux.wait_for("proposed → edited").await;
        tmux.send(&["y"]);
        tmux.wait_for("proposed-by-person").await;

        let done = tokio::time::timeout(Duration::from_secs(60), agent.wait_with_output())
            .await
            .expect("the agent's call ends")
            .expect("the agent ran");
        assert!(done.status.success(), "{size:?}: {done:?}");
        // The session ends cleanly: the client has nothing to complain of.
        let complaints = String::from_utf8_lossy(&done.stderr);
        assert!(!complaints.contains("failed"), "{complaints}");
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).expect("a result")).unwrap();
        let structured = &result["structured"];
        assert_eq!(structured["output"], "proposed-by-person\n", "{result}");
        assert_eq!(structured["edited"], true, "{result}");
        assert!(
            structured["code"]
                .as_str()
                .is_some_and(|c| c.contains("proposed-by-person")),
            "{result}"
        );
        let text = result["text"].as_str().unwrap_or_default();
        assert!(text.contains("edited"), "{text}");
        tmux.send(&["C-q"]);
        tmux.wait_for("EXIT=0").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_the_person_skips_is_refused_to_the_agent_and_never_runs() {
    let server = ModelServer::start(vec![Reply::text("Hello.")]).await;
    let (tmux, dir) = serving_workbench(&server, (120, 40));
    let screen = tmux.wait_for("Serving MCP at").await;
    let url = served_url(&screen.replace('\n', ""));
    let out = dir.path().join("result.json");
    let mut agent = agent_call(
        &url,
        TOKEN,
        "open('made-by-agent.txt', 'w').write('x')",
        &out,
    );
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["n"]);
    let status = tokio::time::timeout(Duration::from_secs(60), agent.wait())
        .await
        .expect("the agent's call ends")
        .expect("the agent ran");
    assert!(status.success());
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("a result")).unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["text"]
            .as_str()
            .is_some_and(|t| t.contains("declined")),
        "{result}"
    );
    assert!(!dir.path().join("made-by-agent.txt").exists());
    tmux.send(&["C-q"]);
    tmux.wait_for("EXIT=0").await;
}
