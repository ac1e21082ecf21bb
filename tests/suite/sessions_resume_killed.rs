//! A session taken up again after oi-tui was killed (`kill -9`) in the middle of a turn
//! sends a conversation a hosted API accepts, and tells the model what became of its code:
//! every tool call is answered, in order, right after its message. A block that was running
//! is said to be interrupted because oi-tui stopped while it ran, with the output that had
//! arrived; a block that waited for the person's decision, and a call never reached, are
//! said not to have run; and the resumed workbench shows the interrupted block without a
//! made-up duration. All with the real binary and the scripted model server.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use oi_tui::exec::{Language, RunResult, RunStatus};
use oi_tui::llm::{Message, Role, ToolCall};
use oi_tui::protocol::Event;
use oi_tui::store::{Recorder, Redactor, Store};
use serde_json::Value;

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_oi-tui")
}

/// `oi-tui --resume last -y --task TASK` on the scripted model at `base`, to its end.
async fn resume(base: &str, data: &Path, task: &str) -> std::process::Output {
    resume_with("openai/scripted", base, data, task).await
}

async fn resume_with(model: &str, base: &str, data: &Path, task: &str) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(bin());
    cmd.args([
        "--resume",
        "last",
        "-y",
        "--task",
        task,
        "--model",
        model,
        "--api-base",
        base,
    ])
    .arg("--data-dir")
    .arg(data)
    .env_remove("OPENAI_API_KEY")
    .stdin(Stdio::null())
    .kill_on_drop(true);
    super::support::output_within(cmd).await
}

/// The messages of a chat request (OpenAI style).
fn messages(request: &Value) -> Vec<Value> {
    request["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect()
}

/// Every tool call in `messages` is answered, in order, by the tool messages right after
/// its assistant message, and every tool message answers such a call.
fn assert_every_call_answered(messages: &[Value]) {
    let mut i = 0;
    while i < messages.len() {
        let m = &messages[i];
        i += 1;
        assert_ne!(
            m["role"], "tool",
            "a tool message that follows no call: {messages:#?}"
        );
        let Some(calls) = m["tool_calls"].as_array() else {
            continue;
        };
        for call in calls {
            let answer = messages.get(i).unwrap_or_else(|| {
                panic!("the call {} is not answered: {messages:#?}", call["id"])
            });
            assert_eq!(answer["role"], "tool", "{messages:#?}");
            assert_eq!(answer["tool_call_id"], call["id"], "{messages:#?}");
            i += 1;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_while_a_block_ran_resumes_with_the_block_answered_as_interrupted() {
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "for i in $(seq 1 40); do echo line$i; sleep 0.2; done",
        ),
        Reply::text("I see it was interrupted."),
        Reply::text("Still here."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let base = server.base("openai");

    let mut child = tokio::process::Command::new(bin())
        .args([
            "-y",
            "--task",
            "kill me",
            "--model",
            "openai/scripted",
            "--api-base",
            &base,
            "--json",
        ])
        .arg("--data-dir")
        .arg(&data)
        .env_remove("OPENAI_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    super::support::read_until(&mut stdout, "line5").await;
    // Batches are written at least every 200 ms.
    tokio::time::sleep(Duration::from_millis(500)).await;
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    assert_eq!(server.chats().len(), 1, "killed before a second request");

    // The workbench shows the block as interrupted, with no made-up duration.
    {
        let store = Store::open(&data).unwrap();
        let id = store.resolve("last").unwrap();
        let finished: Vec<RunResult> = store
            .replay(&id)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e {
                Event::ExecFinished { result, .. } => Some(result),
                _ => None,
            })
            .collect();
        assert_eq!(finished.len(), 1, "{finished:?}");
        assert_eq!(finished[0].status, RunStatus::Interrupted);
        assert_eq!(finished[0].summary(), "interrupted", "{:?}", finished[0]);
        assert!(finished[0].output.contains("line5"), "{:?}", finished[0]);
    }

    let out = resume(&base, &data, "go on").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "{stderr}");
    let sent = messages(&chats[1].body);
    assert_every_call_answered(&sent);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "user"], "{sent:#?}");
    assert_eq!(sent[0]["content"], "kill me");
    assert_eq!(sent[3]["content"], "go on");
    let result = sent[2]["content"].as_str().unwrap();
    assert!(
        result.contains("interrupted: oi-tui stopped while it ran"),
        "the model hears why the block ended: {result}"
    );
    assert!(
        result.contains("line1\n") && result.contains("line5\n"),
        "with the output that had arrived: {result}"
    );
    assert!(
        !result.contains("line40"),
        "and nothing it never printed: {result}"
    );

    // The result is in the store now: a second resume sends it once, in the same place.
    let out = resume(&base, &data, "and again").await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = messages(&server.chats()[2].body);
    assert_every_call_answered(&sent);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "user", "assistant", "user"],
        "{sent:#?}"
    );
    assert_eq!(sent[2]["content"].as_str(), Some(result));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_killed_while_a_block_waited_for_approval_resumes_with_its_calls_answered() {
    // Two calls: the first waits for the person, the second is never reached.
    let server = ModelServer::start(vec![
        Reply::tool("shell", "echo first-block-ran").and_tool("shell", "echo second-block-ran"),
        Reply::text("Nothing ran, then."),
        Reply::text("Nothing ran, then (Anthropic)."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let pid_file = dir.path().join("pid");
    let base = server.base("openai");
    // Headless in a terminal: it asks before each block.
    let command = format!(
        "sh -c 'echo $$ > \"{pid}\"; exec env -u OPENAI_API_KEY \"{bin}\" --task \"wait for me\" --model openai/scripted --api-base {base} --data-dir \"{data}\"; sleep 60'",
        pid = pid_file.display(),
        bin = bin(),
        data = data.display(),
    );
    let tmux = Tmux::start(&command, 100, 30);
    tmux.wait_for("[y/n/e]").await;
    // Let the proposed block reach the store.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill(2) on the process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    drop(tmux);
    assert_eq!(server.chats().len(), 1);
    // The same stopped session, to resume with the Anthropic protocol too.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for entry in std::fs::read_dir(&data).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
    }

    let out = resume(&base, &data, "go on").await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "{stderr}");
    let sent = messages(&chats[1].body);
    assert_every_call_answered(&sent);
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "tool", "user"],
        "{sent:#?}"
    );
    let waited = sent[2]["content"].as_str().unwrap();
    assert!(
        waited.contains("waited for the user's decision") && waited.contains("did not run"),
        "{waited}"
    );
    let unreached = sent[3]["content"].as_str().unwrap();
    assert!(
        unreached.contains("stopped before this block was reached")
            && unreached.contains("did not run"),
        "{unreached}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("block-ran"),
        "nothing ran again"
    );

    // Anthropic: the tool_use blocks are answered by tool_result blocks, in order, first
    // in the next user turn.
    let out = resume_with(
        "anthropic/scripted",
        &server.base("anthropic"),
        &copy,
        "go on",
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = &server.chats()[2].body;
    let turns = body["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{body:#}");
    let uses: Vec<&Value> = turns[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| &b["id"])
        .collect();
    let answers: Vec<&Value> = turns[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .take(uses.len())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| &b["tool_use_id"])
        .collect();
    assert_eq!(uses.len(), 2, "{body:#}");
    assert_eq!(uses, answers, "{body:#}");
    assert!(body.to_string().contains("waited for the user's decision"));
}

fn proposed(id: u64, language: Language, code: &str) -> Event {
    super::support::proposed_event(id, language, code)
}

fn started(id: u64, code: &str, edited: bool) -> Event {
    super::support::started_event(id, Language::Shell, code, edited)
}

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "execute".into(),
        arguments: "{}".into(),
    }
}

#[test]
fn a_reply_without_tools_stopped_mid_block_gets_its_results_message() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("count"));
    r.message(&Message::assistant(
        "Counting:\n```sh\nseq 1 40\n```\n",
        vec![],
    ));
    r.event(&proposed(1, Language::Shell, "seq 1 40"));
    r.event(&started(1, "seq 1 40", false));
    r.event(&Event::ExecOutput {
        block_id: 1,
        data: b"1\r\n2\r\n3\r\n".to_vec(),
    });
    let id = r.session_id().to_string();
    assert!(r.flush().all_saved());
    drop(r);

    let store = Store::open(dir.path()).unwrap();
    let (messages, unrecorded) = store.resume_conversation(&id, 4000).unwrap();
    assert_eq!(messages.len(), 3, "{messages:#?}");
    assert_eq!(unrecorded, 1, "the results are the last message");
    assert_eq!(messages[2].role, Role::User);
    let results = &messages[2].content;
    assert!(
        results.starts_with("The shell block:\n1\n2\n3\n"),
        "{results}"
    );
    assert!(
        results.contains("interrupted: oi-tui stopped while it ran"),
        "{results}"
    );

    // Results recorded as the person's words (as oi-tui did before it kept them apart) are
    // results all the same: nothing is added.
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("count again"));
    r.message(&Message::assistant("```sh\nseq 1 2\n```\n", vec![]));
    r.event(&proposed(1, Language::Shell, "seq 1 2"));
    r.event(&started(1, "seq 1 2", false));
    r.event(&Event::ExecFinished {
        block_id: 1,
        result: super::sessions_resume::result(1, RunStatus::Success, Some(0), "1\n2\n"),
    });
    r.message(&Message::user(
        "The shell block:\n1\n2\n[exit 0 · 0.42 s]\n",
    ));
    r.message(&Message::assistant("Two.", vec![]));
    let old = r.session_id().to_string();
    assert!(r.flush().all_saved());
    drop(r);
    let (messages, unrecorded) = store.resume_conversation(&old, 4000).unwrap();
    assert_eq!((messages.len(), unrecorded), (4, 0), "{messages:#?}");
}

#[test]
fn every_kind_of_unanswered_call_gets_the_result_the_engine_would_have_given() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("four things"));
    r.message(&Message::assistant(
        "",
        vec![call("a"), call("b"), call("c"), call("d")],
    ));
    // a: edited and run to its end; b: skipped with a reason; c: skipped by oi-tui's rule;
    // d: waited for the decision when oi-tui stopped.
    r.event(&proposed(1, Language::Shell, "echo one"));
    r.event(&started(1, "echo ONE", true));
    let mut done = RunResult {
        output: "ONE\n".into(),
        exit_code: Some(0),
        duration: Duration::from_millis(30),
        ..super::sessions_resume::result(1, RunStatus::Success, Some(0), "ONE\n")
    };
    done.language = Language::Shell;
    r.event(&Event::ExecFinished {
        block_id: 1,
        result: done,
    });
    r.event(&proposed(2, Language::Shell, "rm -rf build"));
    r.event(&Event::BlockSkipped {
        block_id: 2,
        reason: Some("not now".into()),
    });
    r.event(&proposed(3, Language::Shell, "sudo true"));
    r.event(&Event::BlockSkipped {
        block_id: 3,
        reason: Some("Not run: a rule of the user denies it.".into()),
    });
    r.event(&proposed(4, Language::Shell, "echo four"));
    // The person went on in a later session: the gap is not at the end any more.
    r.message(&Message::user("go on"));
    r.message(&Message::assistant("Going on.", vec![]));
    let id = r.session_id().to_string();
    assert!(r.flush().all_saved());
    drop(r);

    let store = Store::open(dir.path()).unwrap();
    let (messages, unrecorded) = store.resume_conversation(&id, 4000).unwrap();
    assert_eq!(unrecorded, 0, "nothing new at the end");
    let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Tool,
            Role::Tool,
            Role::Tool,
            Role::User,
            Role::Assistant
        ]
    );
    let ids: Vec<&str> = messages[2..6]
        .iter()
        .map(|m| m.tool_call_id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c", "d"], "in the calls' order");
    let text = |i: usize| messages[i].content.as_str();
    assert!(
        text(2).starts_with("The user edited the block before running it.")
            && text(2).contains("echo ONE")
            && text(2).contains("ONE\n[exit 0 · 0.03 s]"),
        "{}",
        text(2)
    );
    assert_eq!(
        text(3),
        "The user skipped this block; it did not run. Their reason: not now"
    );
    assert_eq!(text(4), "Not run: a rule of the user denies it.");
    assert!(
        text(5).contains("waited for the user's decision"),
        "{}",
        text(5)
    );
    // The old entry point gives the same conversation.
    assert_eq!(store.resume_messages(&id).unwrap(), messages);
}

/// A reply's text goes to the store in batches, on the writer's clock, while the steps
/// before it (a message) wait in line: however late the writer is (here held up by
/// another process's write), a message handed over before the reply began is stored before
/// it, so that a resumed conversation has them in the order they were said. (Under heavy
/// load the writer once stored a reply before the person's message that asked for it.)
#[test]
fn a_reply_that_streamed_while_the_writer_was_held_up_is_stored_after_the_message_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(dir.path()).unwrap(), None, Redactor::default());
    r.message(&Message::user("first"));
    r.message(&Message::assistant("first answer", vec![]));
    assert!(r.flush().all_saved());
    // Another writer holds the store: the recorder's next write waits for it.
    let other = rusqlite::Connection::open(dir.path().join(oi_tui::store::FILE)).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    r.event(&Event::Notice {
        message: "a step that waits for the store".into(),
    });
    r.message(&Message::user("go on"));
    r.event(&Event::RequestStarted { round: 1 });
    r.event(&Event::AssistantDelta {
        text: "I see ".into(),
    });
    // Well past the batch time: the reply's text is due while "go on" still waits.
    std::thread::sleep(Duration::from_millis(600));
    other.execute_batch("COMMIT").unwrap();
    r.event(&Event::AssistantDelta { text: "it.".into() });
    r.message(&Message::assistant("I see it.", vec![]));
    assert!(r.flush().all_saved());

    let store = Store::open(dir.path()).unwrap();
    let messages = store.export(r.session_id()).unwrap().messages;
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m.role.as_str(), m.content.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("user", "first"),
            ("assistant", "first answer"),
            ("user", "go on"),
            ("assistant", "I see it."),
        ]
    );
    let resumed = store.resume_messages(r.session_id()).unwrap();
    let roles: Vec<Role> = resumed.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}
