//! Remote kernels through oi-tui's faces, against a real OpenSSH server on 127.0.0.1: the
//! workbench streams a remote block live and names the host (`--on` and `/on`), headless
//! `--task --on` runs there and leaves nothing behind, a host that cannot be reached is one
//! sentence, and `oi-tui mcp --on` runs a caller's code there. The provider's key never
//! reaches the host.

use std::path::Path;
use std::time::Duration;

use super::mcp_workbench::{TOKEN, agent_call, served_url};
use super::model_server::{ModelServer, Reply};
use super::ssh_server::{SshServer, processes_with_env};
use super::support::{isolated_oi_tui, json_events, output_within, text};
use super::tmux::Tmux;

/// A config file with the executor `lab`: the fixture's alias, through its client config,
/// kernels in `workdir` there.
fn config(dir: &Path, ssh_config: &Path, workdir: &Path) -> String {
    let text = format!(
        "[executors.lab]\nhost = \"{}\"\nssh_options = [\"-F\", \"{}\"]\nworkdir = \"{}\"\n",
        super::ssh_server::ALIAS,
        ssh_config.display(),
        workdir.display()
    );
    let path = dir.join("config/oi-tui/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &text).unwrap();
    text
}

/// oi-tui headless in `dir`, on the scripted model `server`.
fn headless(dir: &Path, server: &ModelServer) -> tokio::process::Command {
    let mut cmd = isolated_oi_tui(dir);
    cmd.args([
        "--model",
        "openai/scripted",
        "--api-base",
        &server.base("openai"),
    ]);
    cmd
}

/// A remote working directory apart from the local one, so that a block shows where it ran.
fn remote_workdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("oi-remote-work-")
        .tempdir()
        .unwrap()
}

/// Waits for another agent's call (`agent_call`) to end; what it wrote to `out`.
async fn agent_result(agent: tokio::process::Child, out: &Path) -> serde_json::Value {
    let done = tokio::time::timeout(Duration::from_secs(60), agent.wait_with_output())
        .await
        .expect("the agent's call ends")
        .expect("the agent ran");
    assert!(done.status.success(), "{done:?}");
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// What a test of the faces stands on: the SSH fixture, a working directory "there", the
/// scripted model, and a config directory whose executor `lab` reaches the fixture (or, not
/// `reachable`, a closed port).
struct Lab {
    ssh: SshServer,
    work: tempfile::TempDir,
    server: ModelServer,
    dir: tempfile::TempDir,
}

async fn lab(replies: Vec<Reply>, reachable: bool) -> Lab {
    let ssh = tokio::task::spawn_blocking(SshServer::start).await.unwrap();
    let work = remote_workdir();
    let server = ModelServer::start(replies).await;
    let dir = tempfile::tempdir().unwrap();
    let ssh_config = if reachable {
        ssh.config_path()
    } else {
        ssh.unreachable_config()
    };
    config(dir.path(), &ssh_config, work.path());
    Lab {
        ssh,
        work,
        server,
        dir,
    }
}

impl Lab {
    /// oi-tui headless on the scripted model.
    fn headless(&self) -> tokio::process::Command {
        headless(self.dir.path(), &self.server)
    }

    /// The workbench in tmux, of `size`, with `args`.
    fn workbench(&self, size: (u16, u16), args: &str) -> Tmux {
        Tmux::workbench(&self.server.base("openai"), self.dir.path(), size, "", args)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workbench_streams_a_remote_block_live_and_names_the_host() {
    let ticks = "import os, time\nfor i in range(4):\n    print('tick', i, flush=True)\n    time.sleep(0.8)\nprint('ran in', os.getcwd())";
    let replies = vec![
        Reply::tool("python", ticks),
        Reply::text("Ticked."),
        // (An interrupted turn asks the model nothing more.)
        Reply::tool("python", "import time\nx = 5\ntime.sleep(60)"),
        Reply::tool("python", "print('x is', x)"),
        Reply::text("Still there."),
    ];
    let lab = lab(replies, true).await;
    let Lab { work, dir, .. } = &lab;
    let mut text = config(dir.path(), &lab.ssh.config_path(), work.path());
    text.push_str(&format!("[mcp_server]\ntoken = \"{TOKEN}\"\n"));
    std::fs::write(dir.path().join("config/oi-tui/config.toml"), text).unwrap();
    let tmux = lab.workbench((200, 60), "--on lab --mcp-listen 127.0.0.1:0");
    let screen = tmux.wait_for("Serving MCP at").await;
    let url = served_url(&screen.replace('\n', ""));
    let screen = tmux.wait_for("Connected to lab").await;
    let status = screen.lines().last().unwrap_or_default();
    assert!(
        status.contains("on lab"),
        "the status bar names the host:\n{screen}"
    );
    tmux.type_text("count");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    // Live: the first tick is on screen while the block still runs.
    let screen = tmux.wait_for("tick 0").await;
    assert!(!screen.contains("tick 3"), "{screen}");
    assert!(
        !screen.contains(&format!("ran in {}", work.path().display())),
        "{screen}"
    );
    let screen = tmux.wait_for("ran · exit 0").await;
    assert!(
        screen.contains(&format!("ran in {}", work.path().display())),
        "{screen}"
    );

    // Ctrl-C interrupts a remote block; the kernel survives it.
    tmux.type_text("sleep");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("running").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    tmux.send(&["C-c"]);
    let screen = tmux.wait_for("interrupted").await;
    assert!(screen.contains("KeyboardInterrupt"), "{screen}");

    // A host that cannot be reached leaves the kernels where they are, with their state.
    tmux.type_text("/on 127.0.0.1:1");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("The kernels stay on lab").await;
    assert!(screen.contains("refused the connection"), "{screen}");
    // One that takes the connection and never answers (a hung machine): Ctrl-C ends the
    // attempt at once, and the kernels stay too.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    tmux.type_text(&format!("/on 127.0.0.1:{port}"));
    tmux.send(&["Enter"]);
    let screen = tmux
        .wait_for(&format!("Connecting to 127.0.0.1:{port}… (Ctrl-C cancels)"))
        .await;
    let status = screen.lines().last().unwrap_or_default();
    assert!(status.contains("connecting to 127.0.0.1"), "{screen}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = std::time::Instant::now();
    tmux.send(&["C-c"]);
    let screen = tmux.wait_for("was cancelled").await;
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    assert!(screen.contains("The kernels stay on lab"), "{screen}");
    let status = screen.lines().last().unwrap_or_default();
    assert!(
        status.contains("on lab") && !status.contains("connecting"),
        "{screen}"
    );
    drop(silent);
    tmux.type_text("and x?");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("x is 5").await;

    // Another agent's block (over the workbench's MCP server) runs there too, after the
    // person's approval; the agent was told where its code runs.
    let out = dir.path().join("agent.json");
    let agent = agent_call(
        &url,
        TOKEN,
        "import os\nprint('agent in', os.getcwd())",
        &out,
    );
    let screen = tmux.wait_for("from claude-code").await;
    assert!(screen.contains("awaiting your decision"), "{screen}");
    tmux.send(&["y"]);
    let result = agent_result(agent, &out).await;
    let output = result["structured"]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains(&format!("agent in {}", work.path().display())),
        "{result}"
    );
    let instructions = result["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("on the host lab"), "{instructions}");

    // /on local brings the kernels back, and says so.
    tmux.type_text("/on local");
    tmux.send(&["Enter"]);
    let screen = tmux.wait_for("Kernels now run on this machine").await;
    assert!(screen.contains("restarted"), "{screen}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let screen = tmux.capture();
    let status = screen.lines().last().unwrap_or_default();
    assert!(!status.contains("on lab"), "{status}");

    // The agent's next block is told that its kernels moved, and its state with them.
    let out = dir.path().join("agent2.json");
    let agent = agent_call(&url, TOKEN, "print('after the move')", &out);
    tmux.wait_for("after the move").await;
    tmux.send(&["y"]);
    let result = agent_result(agent, &out).await;
    assert_eq!(result["structured"]["state_lost"], true, "{result}");
    let notes = result["structured"]["notes"].to_string();
    assert!(
        notes.contains("the user moved the kernels: they run on this machine now"),
        "{result}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_runs_on_the_host_keeps_the_key_here_and_leaves_nothing_there() {
    let code = "import os\nprint('cwd', os.getcwd())\nprint('session', os.environ.get('OI_TUI_SESSION'))\nprint('key', os.environ.get('OPENAI_API_KEY'), os.environ.get('OI_TUI_TEST_TOKEN'))";
    let lab = lab(
        vec![Reply::tool("python", code), Reply::text("Done.")],
        true,
    )
    .await;
    let Lab {
        ssh,
        work,
        server,
        dir,
    } = &lab;
    let mut cmd = lab.headless();
    cmd.args(["--task", "where", "--json", "-y", "--on", "lab"])
        .env("OPENAI_API_KEY", "sk-never-leaves-this-machine")
        .env(
            "OI_TUI_TEST_TOKEN",
            "ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        );
    let out = output_within(cmd).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let events = json_events(&out);
    let configured = events
        .iter()
        .find(|e| e["event"] == "session_configured")
        .unwrap();
    assert_eq!(configured["executor"], "lab");
    let changed = events
        .iter()
        .find(|e| e["event"] == "executor_changed")
        .unwrap();
    assert_eq!(changed["executor"], "lab");
    assert!(
        changed["note"]
            .as_str()
            .unwrap()
            .contains("Connected to lab"),
        "{changed}"
    );
    let finished = events
        .iter()
        .find(|e| e["event"] == "exec_finished")
        .unwrap();
    let output = finished["result"]["output"].as_str().unwrap();
    assert!(
        output.contains(&format!("cwd {}", work.path().display())),
        "{output}"
    );
    assert!(output.contains("key None None"), "{output}");
    assert!(!stdout.contains("sk-never-leaves"), "{stdout}");
    // The model is told the host by the name the person gave it, and who it logs in as.
    let asked = server.chats()[0].all_text();
    assert!(asked.contains("(the host lab"), "{asked}");
    assert!(asked.contains(&format!("User: {}", ssh.user())), "{asked}");
    let session = output
        .lines()
        .find_map(|l| l.strip_prefix("session "))
        .unwrap()
        .trim()
        .to_string();
    assert!(session.len() >= 8, "{output}");
    // The saved session names the host, and the directory there.
    let mut show = isolated_oi_tui(dir.path());
    show.args(["sessions", "show", "last"]);
    let shown = text(&output_within(show).await.stdout);
    assert!(
        shown.contains(&format!("kernels on lab, in {}", work.path().display())),
        "{shown}"
    );
    // Nothing of the session is left on the host once oi-tui has ended.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left = processes_with_env(&format!("OI_TUI_SESSION={session}"));
    assert!(left.is_empty(), "left running on the host: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_host_is_one_sentence_and_no_hang() {
    let lab = lab(
        vec![
            Reply::tool("python", "print(1)"),
            Reply::text("It could not run."),
        ],
        false,
    )
    .await;
    let server = &lab.server;
    let mut cmd = lab.headless();
    cmd.args(["--task", "try", "-y", "--on", "lab"]);
    let started = std::time::Instant::now();
    let out = output_within(cmd).await;
    let stderr = text(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(30), "{stderr}");
    let sentence = stderr
        .lines()
        .find(|l| l.contains("refused the connection"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(sentence.contains("lab"), "{sentence}");
    // The task fails at once: no model is asked for code that cannot run anywhere.
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the task did not start: lab cannot be reached"),
        "{stderr}"
    );
    assert!(server.chats().is_empty(), "the model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_runs_a_callers_code_on_the_host() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let ssh = tokio::task::spawn_blocking(SshServer::start).await.unwrap();
    let work = remote_workdir();
    let dir = tempfile::tempdir().unwrap();
    config(dir.path(), &ssh.config_path(), work.path());
    let mut cmd = isolated_oi_tui(dir.path());
    cmd.args(["mcp", "--on", "lab", "-y"])
        .stdin(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let messages = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "remote-test", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "languages", "arguments": {}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "execute", "arguments": {"language": "python",
            "code": "import os\nprint('there', os.getcwd())"}}}),
    ];
    for message in messages {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    stdin.flush().await.unwrap();
    let (mut instructions, mut listed) = (String::new(), String::new());
    let mut there = serde_json::Value::Null;
    let answer = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let value: serde_json::Value = serde_json::from_str(&line).unwrap();
            if value["id"] == 1 {
                instructions = value["result"]["instructions"].to_string();
            }
            if value["id"] == 3 {
                listed = value["result"]["tools"].to_string();
            }
            if value["id"] == 4 {
                there = value["result"]["structuredContent"]["languages"].clone();
            }
            if value["id"] == 2 {
                return value;
            }
        }
        panic!("the server ended without answering");
    })
    .await
    .expect("an answer within a minute");
    // The client agent is told where its code runs.
    assert!(instructions.contains("on the host lab"), "{instructions}");
    // So do the tools' own descriptions.
    assert!(
        listed.contains("Run code on the host lab, over SSH"),
        "{listed}"
    );
    assert!(!listed.contains("on this machine"), "{listed}");
    // `languages` answers for the host: what a kernel there would run, or why it cannot.
    let languages = there.as_array().unwrap_or_else(|| panic!("{there}"));
    let python = languages.iter().find(|l| l["name"] == "python").unwrap();
    assert_eq!(python["available"], true, "{python}");
    assert!(
        python["path"].as_str().unwrap_or("").contains("python"),
        "{python}"
    );
    let missing: Vec<&serde_json::Value> = languages
        .iter()
        .filter(|l| l["available"] == false)
        .collect();
    for l in missing {
        let note = l["note"].as_str().unwrap_or("");
        assert!(note.contains("on lab"), "{l}");
    }
    let shown = answer.to_string();
    assert!(
        shown.contains(&format!("there {}", work.path().display())),
        "{shown}"
    );
    drop(stdin);
    let _ = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_figure_comes_back_and_deletes_are_judged_against_the_remote_workspace() {
    let ssh = tokio::task::spawn_blocking(SshServer::start).await.unwrap();
    let work = remote_workdir();
    let plot = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()";
    let inside = format!("rm -rf {}/scratch", work.path().display());
    let dir = tempfile::tempdir().unwrap();
    let outside = format!("rm -rf {}/not-there", dir.path().display());
    let server = ModelServer::start(vec![
        Reply::tool("python", plot),
        Reply::tool("shell", &inside).and_tool("shell", &outside),
        Reply::text("Done."),
    ])
    .await;
    let mut settings = config(dir.path(), &ssh.config_path(), work.path());
    // The kernels there use the Python that has matplotlib.
    settings.push_str(&format!(
        "interpreters = {{ python = \"{}\" }}\n",
        super::support::mcp_python().display()
    ));
    std::fs::write(dir.path().join("config/oi-tui/config.toml"), settings).unwrap();
    let mut cmd = headless(dir.path(), &server);
    cmd.args(["--task", "plot", "--json", "-y", "--on", "lab"]);
    let out = output_within(cmd).await;
    assert!(out.status.success(), "{}", text_of(&out));
    let events = json_events(&out);
    let finished = events
        .iter()
        .find(|e| e["event"] == "exec_finished")
        .unwrap();
    let images = finished["result"]["images"].as_array().unwrap();
    assert_eq!(images.len(), 1, "{finished}");
    let kept = Path::new(images[0]["path"].as_str().unwrap());
    assert!(
        kept.starts_with(dir.path()),
        "kept with the session here: {kept:?}"
    );
    assert!(std::fs::read(kept).unwrap().starts_with(b"\x89PNG"));
    // What a block deletes is judged against the working directory there.
    let verdicts: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "block_proposed")
        .map(|e| e["verdict"]["highest"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        verdicts,
        ["read_only", "deletes", "deletes_outside_workspace"],
        "{}",
        text_of(&out)
    );
    // The session exports here, its figure with it.
    let mut export = isolated_oi_tui(dir.path());
    export.args(["sessions", "export", "last", "--format", "ipynb"]);
    let exported = output_within(export).await;
    let notebook = text(&exported.stdout);
    assert!(notebook.contains("image/png"), "{}", text_of(&exported));
}

fn text_of(out: &std::process::Output) -> String {
    format!("{}\n{}", text(&out.stdout), text(&out.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_is_said_and_the_next_block_reconnects_saying_so() {
    use tokio::io::AsyncBufReadExt;
    let lab = lab(
        vec![
            Reply::tool("shell", "echo first; sleep 20"),
            Reply::tool("shell", "echo second"),
            Reply::text("Done."),
        ],
        true,
    )
    .await;
    let ssh = &lab.ssh;
    let mut cmd = lab.headless();
    cmd.args(["--task", "twice", "--json", "-y", "--on", "lab"])
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<serde_json::Value> = Vec::new();
    let mut killed = false;
    tokio::time::timeout(Duration::from_secs(90), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let event: serde_json::Value = serde_json::from_str(&line).unwrap();
            // The first block runs: its connection drops under it.
            if !killed
                && event["event"] == "exec_output"
                && event["data"].to_string().contains("first")
            {
                killed = true;
                ssh.kill_connections();
            }
            events.push(event);
        }
    })
    .await
    .expect("the run ends");
    assert!(killed, "{events:?}");
    let finished: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["event"] == "exec_finished")
        .collect();
    assert_eq!(finished.len(), 2, "{events:?}");
    let first = finished[0]["result"].to_string();
    assert!(first.contains("was lost"), "{first}");
    // The second block connected again, and said so while it did.
    let second_started = events
        .iter()
        .position(|e| e["event"] == "exec_started" && e["block_id"] == 2)
        .expect("block 2 started");
    let connecting = events
        .iter()
        .skip(second_started)
        .position(|e| e["event"] == "connecting" && e["connecting"] == true);
    assert!(connecting.is_some(), "{events:?}");
    let second = finished[1]["result"].to_string();
    assert!(second.contains("second"), "{second}");
    assert!(
        second.contains("had dropped since the last block"),
        "{second}"
    );
    let _ = child.wait().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_not_reached_at_the_start_is_still_where_the_model_is_told_code_runs() {
    let lab = lab(vec![Reply::text("Understood.")], false).await;
    let Lab { server, dir, .. } = &lab;
    let tmux = lab.workbench((120, 40), "--on lab");
    let screen = tmux.wait_for("refused the connection").await;
    assert!(screen.contains("Blocks will try to connect"), "{screen}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let screen = tmux.capture();
    let status = screen.lines().last().unwrap_or_default();
    assert!(status.contains("on lab · not connected"), "{screen}");
    tmux.type_text("hello");
    tmux.send(&["Enter"]);
    tmux.wait_for("Understood.").await;
    let chats = server.chats();
    let asked = chats[0].all_text();
    assert!(asked.contains("the host lab, over SSH"), "{asked}");
    assert!(
        !asked.contains(&dir.path().display().to_string()),
        "{asked}"
    );
}
