//! oi-tui as an MCP client: a server written with the Python MCP SDK (tests/mcp/), the
//! scripted model asking for its tools (`echo__echo`), the approval gate and its `mcp:`
//! rules, results back to the model, servers that crash, hang or never start, `oi-tui mcp
//! list` and headless `--task` with the real binary (in `mcp_client_cli`), and config errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oi_tui::config::mcp::{McpServerConfig, McpTransport};
use oi_tui::engine::{self, EngineConfig, EngineHandle};
use oi_tui::mcp::client::McpHost;
use oi_tui::protocol::{ApprovalMode, Decision, Event, GateAction, Op, TurnEnd};
use serde_json::json;

use super::model_server::{ModelServer, Reply};

pub(super) fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/echo_server.py")
}

/// The echo server as `[mcp_servers.echo]` would give it, its calls written to `calls`.
fn echo_server(mode: &str, calls: &Path) -> McpServerConfig {
    McpServerConfig {
        name: "echo".into(),
        transport: McpTransport::Stdio {
            command: super::support::mcp_python().display().to_string(),
            args: vec![server_script().display().to_string(), mode.into()],
            env: [("CALLS_DIR".to_string(), calls.display().to_string())].into(),
            env_vars: Vec::new(),
            cwd: None,
        },
        enabled: true,
        // Python starts slowly on a loaded machine.
        startup_timeout: Duration::from_secs(90),
        tool_timeout: Duration::from_secs(60),
        enabled_tools: None,
        disabled_tools: Vec::new(),
    }
}

fn config(
    dir: &Path,
    server: &ModelServer,
    approval: ApprovalMode,
    rules: &[(&str, &str)],
    host: Arc<McpHost>,
) -> EngineConfig {
    let mut cfg =
        super::support::engine_config("openai/scripted", Some(server.base("openai")), dir);
    cfg.approval = approval;
    let mut lists = oi_tui::policy::RuleLists::default();
    for (decision, rule) in rules {
        match *decision {
            "allow" => lists.allow.push(rule.to_string()),
            "ask" => lists.ask.push(rule.to_string()),
            _ => lists.deny.push(rule.to_string()),
        }
    }
    let mut r = oi_tui::policy::Rules::new();
    assert!(
        r.add_lists(&lists, oi_tui::policy::RuleSource::User)
            .is_empty()
    );
    cfg.rules = r;
    cfg.tool_host = Some(host);
    cfg
}

/// Events until the turn ends (or `stop` says so), answering approvals with `decide`.
async fn turn(
    h: &mut EngineHandle,
    mut decide: impl FnMut(&[Event]) -> Option<Decision>,
) -> Vec<Event> {
    let mut seen = Vec::new();
    loop {
        let event = next(h).await;
        let approval = match &event {
            Event::ApprovalNeeded { block_id } => Some(*block_id),
            _ => None,
        };
        let end = matches!(event, Event::TurnFinished { .. });
        seen.push(event);
        if let Some(block_id) = approval {
            let decision = decide(&seen).expect("no approval was expected here");
            h.ops.send(Op::Decision { block_id, decision }).unwrap();
        }
        if end {
            return seen;
        }
    }
}

/// The engine's next event: within two minutes (servers start slowly on a loaded machine).
async fn next(h: &mut EngineHandle) -> Event {
    tokio::time::timeout(Duration::from_secs(120), h.events.recv())
        .await
        .expect("an event within 120 s")
        .expect("the engine runs")
}

fn tool_finished(events: &[Event]) -> Vec<(bool, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolFinished { ok, output, .. } => Some((*ok, output.clone())),
            _ => None,
        })
        .collect()
}

pub(super) fn calls_of(calls: &Path, tool: &str) -> usize {
    std::fs::read_dir(calls)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(&format!("{tool}-"))
        })
        .count()
}

/// Processes still running with this calls directory in their environment (the servers a
/// test started), after a moment to go.
pub(super) fn servers_left(calls: &Path) -> Vec<i32> {
    let needle = format!("CALLS_DIR={}", calls.display());
    let scan = || -> Vec<i32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                });
                !zombie
                    && std::fs::read(format!("/proc/{pid}/environ"))
                        .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = scan();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ended(events: &[Event]) -> TurnEnd {
    match events.last() {
        Some(Event::TurnFinished { end }) => *end,
        other => panic!("the turn did not end: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_is_shown_approved_and_its_result_reaches_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("echo__echo", json!({"text": "hi there"})),
        Reply::text("It said hi."),
    ])
    .await;
    let host = McpHost::start(&[echo_server("normal", &calls)]);
    // Auto mode: a tool no rule allows still asks (it runs outside the sandbox).
    let cfg = config(dir.path(), &server, ApprovalMode::Auto, &[], host);
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "say hi".into(),
        })
        .unwrap();
    let events = turn(&mut h, |_| Some(Decision::Run)).await;
    assert_eq!(ended(&events), TurnEnd::Done);
    let (block, gate) = events
        .iter()
        .find_map(|e| match e {
            Event::BlockProposed { block, gate, .. } => Some((block.clone(), gate.clone())),
            _ => None,
        })
        .expect("the call is proposed");
    let tool = block.tool.clone().expect("a tool call");
    assert_eq!((tool.server.as_str(), tool.tool.as_str()), ("echo", "echo"));
    assert_eq!(block.language_tag, "mcp:echo/echo");
    assert_eq!(block.code, "{\n  \"text\": \"hi there\"\n}");
    let gate = gate.unwrap();
    assert_eq!(gate.action, GateAction::Ask);
    assert!(
        gate.reason.contains("outside the sandbox"),
        "{}",
        gate.reason
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolStarted { edited: false, .. }))
    );
    assert_eq!(
        tool_finished(&events),
        vec![(true, "echo: hi there".to_string())]
    );
    assert_eq!(calls_of(&calls, "echo"), 1);

    let chats = server.chats();
    assert_eq!(chats.len(), 2);
    // The tools offered: execute first, then the server's, named NAME__tool.
    let names: Vec<String> = chats[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names[0], "execute");
    for name in [
        "echo__echo",
        "echo__add",
        "echo__picture",
        "echo__crash",
        "echo__hang",
    ] {
        assert!(names.contains(&name.to_string()), "{names:?}");
    }
    let echo = chats[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "echo__echo")
        .unwrap();
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));
    // The result is the tool message of that call.
    let messages = chats[1].body["messages"].as_array().unwrap();
    let result = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    assert_eq!(result["tool_call_id"], "call_0");
    assert_eq!(result["content"], "echo: hi there");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_rules_run_tools_without_asking_and_deny_rules_never_call_them() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("echo__add", json!({"a": 2, "b": 3}))
            .and_call("echo__echo", json!({"text": "no"})),
        Reply::text("done"),
    ])
    .await;
    let host = McpHost::start(&[echo_server("normal", &calls)]);
    let cfg = config(
        dir.path(),
        &server,
        ApprovalMode::Rules,
        &[("allow", "mcp:echo/*"), ("deny", "mcp:echo/echo")],
        host,
    );
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let events = turn(&mut h, |_| None).await;
    assert_eq!(ended(&events), TurnEnd::Done);
    // add: allowed by `mcp:echo/*`, structured content back; echo: denied, never called.
    let finished = tool_finished(&events);
    assert_eq!(finished.len(), 1);
    assert!(finished[0].0);
    assert!(finished[0].1.contains("\"total\": 5"), "{}", finished[0].1);
    assert_eq!(calls_of(&calls, "add"), 1);
    assert_eq!(calls_of(&calls, "echo"), 0);
    let skipped = events
        .iter()
        .find_map(|e| match e {
            Event::BlockSkipped { reason, .. } => reason.clone(),
            _ => None,
        })
        .expect("the denied call is skipped");
    assert!(skipped.contains("mcp:echo/echo"), "{skipped}");
    let next = server.chats()[1].all_text();
    assert!(next.contains("Not run: denied by rule"), "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_arguments_must_be_a_json_object_and_the_model_hears_of_the_edit() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("echo__echo", json!({"text": "first"})),
        Reply::text("ok"),
    ])
    .await;
    let host = McpHost::start(&[echo_server("normal", &calls)]);
    let cfg = config(dir.path(), &server, ApprovalMode::Ask, &[], host);
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let mut asked = 0;
    let events = turn(&mut h, |_| {
        asked += 1;
        Some(Decision::Edit {
            code: if asked == 1 {
                "[\"not\", \"an object\"]".into()
            } else {
                "{\"text\": \"edited\"}".into()
            },
        })
    })
    .await;
    assert_eq!(asked, 2, "asked again after the bad edit");
    let error = events
        .iter()
        .find_map(|e| match e {
            Event::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .expect("the bad edit is an error");
    assert!(error.contains("must be a JSON object"), "{error}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ToolStarted { edited: true, .. }))
    );
    assert_eq!(
        tool_finished(&events),
        vec![(true, "echo: edited".to_string())]
    );
    assert_eq!(calls_of(&calls, "echo"), 1);
    let next = server.chats()[1].all_text();
    assert!(next.contains("The user edited the arguments"), "{next}");
    assert!(next.contains("echo: edited"), "{next}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_crashes_mid_call_says_so_and_the_turn_ends() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("echo__crash", json!({})),
        Reply::call("echo__echo", json!({"text": "again"})),
        Reply::text("giving up"),
    ])
    .await;
    let host = McpHost::start(&[echo_server("normal", &calls)]);
    let cfg = config(
        dir.path(),
        &server,
        ApprovalMode::Rules,
        &[("allow", "mcp:echo/*")],
        host,
    );
    let mut h = engine::spawn(cfg).unwrap();
    let started = Instant::now();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let events = turn(&mut h, |_| None).await;
    assert_eq!(ended(&events), TurnEnd::Done);
    assert!(started.elapsed() < Duration::from_secs(150));
    let finished = tool_finished(&events);
    assert!(!finished[0].0);
    assert!(
        finished[0].1.contains("exited during a call of `crash`"),
        "{}",
        finished[0].1
    );
    assert!(
        finished[0].1.contains("about to crash"),
        "its stderr is quoted: {}",
        finished[0].1
    );
    // Its tools are gone: the next call is an unknown tool, and the next request offers
    // only `execute`.
    let chats = server.chats();
    assert!(chats[1].all_text().contains("exited during a call"));
    let offered = chats[2].body["tools"].as_array().unwrap().len();
    assert_eq!(offered, 1);
    assert!(
        chats[2]
            .all_text()
            .contains("there is no tool `echo__echo`")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_answers_times_out_and_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("echo__hang", json!({})),
        Reply::call("echo__echo", json!({"text": "still here"})),
        Reply::text("ok"),
    ])
    .await;
    let mut echo = echo_server("normal", &calls);
    echo.tool_timeout = Duration::from_secs(1);
    let host = McpHost::start(&[echo]);
    let cfg = config(
        dir.path(),
        &server,
        ApprovalMode::Rules,
        &[("allow", "mcp:echo/*")],
        host,
    );
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let events = turn(&mut h, |_| None).await;
    let finished = tool_finished(&events);
    assert_eq!(finished.len(), 2);
    assert!(!finished[0].0);
    assert!(
        finished[0].1.contains("did not answer within 1 s"),
        "{}",
        finished[0].1
    );
    // The server was told to stop, and it still answers the next call.
    assert_eq!(finished[1], (true, "echo: still here".to_string()));
    let deadline = Instant::now() + Duration::from_secs(5);
    while calls_of(&calls, "hang_cancelled") == 0 {
        assert!(
            Instant::now() < deadline,
            "the server never heard of the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_are_told_once_and_the_session_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("slow__echo", json!({"text": "x"})),
        Reply::text("fine"),
        Reply::text("still fine"),
    ])
    .await;
    // Through a wrapper, as `npx` and `uvx` launch servers: the server is a grandchild, and
    // must go with the wrapper when the start-up times out.
    let mut slow = echo_server("never-starts", &calls);
    slow.name = "slow".into();
    slow.startup_timeout = Duration::from_secs(2);
    if let McpTransport::Stdio { command, args, .. } = &mut slow.transport {
        let python = std::mem::replace(command, "sh".into());
        *args = vec![
            "-c".into(),
            "\"$0\" \"$1\" never-starts; sleep 100".into(),
            python,
            server_script().display().to_string(),
        ];
    }
    let mut broken = echo_server("fails-to-start", &calls);
    broken.name = "broken".into();
    let mut missing = echo_server("normal", &calls);
    missing.name = "missing".into();
    missing.transport = McpTransport::Stdio {
        command: "oi-tui-no-such-mcp-server".into(),
        args: Vec::new(),
        env: Default::default(),
        env_vars: Vec::new(),
        cwd: None,
    };
    let host = McpHost::start(&[slow, broken, missing]);
    let cfg = config(dir.path(), &server, ApprovalMode::Auto, &[], host);
    let mut h = engine::spawn(cfg).unwrap();
    let started = Instant::now();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let events = turn(&mut h, |_| None).await;
    assert_eq!(ended(&events), TurnEnd::Done);
    assert!(started.elapsed() < Duration::from_secs(150));
    let notices: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { message } => Some(message.clone()),
            _ => None,
        })
        .collect();
    let about = |name: &str| {
        notices
            .iter()
            .find(|n| n.contains(&format!("\"{name}\"")))
            .unwrap_or_else(|| panic!("no notice about {name}: {notices:?}"))
            .clone()
    };
    // The first request waited for them, and said so.
    let waiting = notices
        .iter()
        .find(|n| n.starts_with("Waiting for the MCP server"))
        .expect("a notice that the request waits");
    assert!(
        waiting.contains("slow") && waiting.contains("at most 90 s"),
        "{waiting}"
    );
    assert!(about("slow").contains("did not finish starting within 2 s"));
    let broken = about("broken");
    assert!(broken.contains("exited during start-up"), "{broken}");
    assert!(broken.contains("the echo config is missing"), "{broken}");
    assert!(about("missing").contains("`oi-tui-no-such-mcp-server` was not found"));
    // Nothing of theirs is left running.
    assert_eq!(servers_left(&calls), Vec::<i32>::new());
    // Only `execute` is offered; a call of a tool that is not there is an error for the
    // model, not a stuck turn.
    let chats = server.chats();
    assert_eq!(chats[0].body["tools"].as_array().unwrap().len(), 1);
    assert!(
        chats[1]
            .all_text()
            .contains("there is no tool `slow__echo`")
    );
    // Told once: the next turn says nothing more about them.
    h.ops
        .send(Op::UserMessage {
            text: "again".into(),
        })
        .unwrap();
    let again = turn(&mut h, |_| None).await;
    assert!(
        !again.iter().any(|e| matches!(e, Event::Notice { .. })),
        "{again:?}"
    );
    // `/mcp` shows them all with why.
    h.ops.send(Op::McpStatus).unwrap();
    let status = loop {
        if let Event::Notice { message } = next(&mut h).await {
            break message;
        }
    };
    assert!(
        status.contains("slow (") && status.contains("failed: it did not finish starting"),
        "{status}"
    );
    assert!(
        status.contains("missing (oi-tui-no-such-mcp-server): failed"),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_cancels_a_running_call_and_ends_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![Reply::call("echo__hang", json!({}))]).await;
    let mut echo = echo_server("normal", &calls);
    echo.tool_timeout = Duration::from_secs(120);
    let host = McpHost::start(&[echo]);
    let cfg = config(
        dir.path(),
        &server,
        ApprovalMode::Rules,
        &[("allow", "mcp:echo/hang")],
        host,
    );
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let mut events = Vec::new();
    loop {
        let event = next(&mut h).await;
        let started = matches!(event, Event::ToolStarted { .. });
        let end = matches!(event, Event::TurnFinished { .. });
        events.push(event);
        if started {
            // Once the server has the call.
            let deadline = Instant::now() + Duration::from_secs(10);
            while calls_of(&calls, "hang") == 0 {
                assert!(
                    Instant::now() < deadline,
                    "the call never reached the server"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            h.ops.send(Op::Interrupt).unwrap();
        }
        if end {
            break;
        }
    }
    assert_eq!(ended(&events), TurnEnd::Interrupted, "{events:#?}");
    let finished = tool_finished(&events);
    assert!(!finished[0].0);
    assert!(
        finished[0].1.contains("interrupted by the user"),
        "{}",
        finished[0].1
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while calls_of(&calls, "hang_cancelled") == 0 {
        assert!(
            Instant::now() < deadline,
            "the server never heard of the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_status_is_answered_while_a_call_waits_and_a_skip_never_calls() {
    let dir = tempfile::tempdir().unwrap();
    let calls = dir.path().join("calls");
    std::fs::create_dir(&calls).unwrap();
    let server = ModelServer::start(vec![
        Reply::call("echo__echo", json!({"text": "x"})),
        Reply::text("ok, not calling it"),
    ])
    .await;
    let host = McpHost::start(&[echo_server("normal", &calls)]);
    let cfg = config(dir.path(), &server, ApprovalMode::Ask, &[], host);
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(Op::UserMessage { text: "go".into() }).unwrap();
    let block_id = loop {
        if let Event::ApprovalNeeded { block_id } = next(&mut h).await {
            break block_id;
        }
    };
    h.ops.send(Op::McpStatus).unwrap();
    let status = loop {
        if let Event::Notice { message } = next(&mut h).await {
            break message;
        }
    };
    assert!(status.starts_with("MCP servers:"), "{status}");
    assert!(status.contains("ready, 5 tools"), "{status}");
    assert!(
        status.contains("tools: echo, add, picture, crash, hang"),
        "{status}"
    );
    h.ops
        .send(Op::Decision {
            block_id,
            decision: Decision::Skip {
                reason: Some("not now".into()),
            },
        })
        .unwrap();
    let events = turn(&mut h, |_| None).await;
    assert_eq!(ended(&events), TurnEnd::Done);
    assert_eq!(calls_of(&calls, "echo"), 0);
    let next_request = server.chats()[1].all_text();
    assert!(
        next_request.contains("The user skipped this tool call"),
        "{next_request}"
    );
    assert!(next_request.contains("not now"), "{next_request}");
}
