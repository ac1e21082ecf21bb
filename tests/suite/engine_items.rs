//! Small engine promises: `/reset` starts the `--demo` tour from the beginning, and the
//! notice that auto-run is on comes before the block it was turned on for runs (on the
//! event stream and in the store).

use oi_tui::engine::{self, EngineConfig, EngineHandle};
use oi_tui::protocol::ApprovalMode as Approval;
use oi_tui::protocol::{Decision, Event, Op};

use super::model_server::{ModelServer, Reply};

fn config(spec: &str, base: String, dir: &std::path::Path) -> EngineConfig {
    EngineConfig {
        approval: Approval::Ask,
        ..super::support::engine_config(spec, Some(base), dir)
    }
}

async fn next(handle: &mut EngineHandle) -> Event {
    super::support::next_event(handle).await
}

async fn until(handle: &mut EngineHandle, pick: impl Fn(&Event) -> bool) -> Event {
    loop {
        let event = next(handle).await;
        if pick(&event) {
            return event;
        }
    }
}

fn proposed_code(e: &Event) -> Option<String> {
    match e {
        Event::BlockProposed { block, .. } => Some(block.code.clone()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_starts_the_demo_from_the_beginning() {
    let base = oi_tui::demo::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config("openai/demo", base, dir.path())).unwrap();
    let say =
        |h: &EngineHandle, text: &str| h.ops.send(Op::UserMessage { text: text.into() }).unwrap();
    say(&h, "hi");
    let first = proposed_code(&until(&mut h, |e| proposed_code(e).is_some()).await).unwrap();
    assert!(first.contains("platform"), "{first}");
    let id = |e: &Event| match e {
        Event::ApprovalNeeded { block_id } => Some(*block_id),
        _ => None,
    };
    let block = id(&until(&mut h, |e| id(e).is_some()).await).unwrap();
    h.ops
        .send(Op::Decision {
            block_id: block,
            decision: Decision::Skip { reason: None },
        })
        .unwrap();
    let second = proposed_code(&until(&mut h, |e| proposed_code(e).is_some()).await).unwrap();
    assert!(second.contains("working in"), "the tour goes on: {second}");
    let block = id(&until(&mut h, |e| id(e).is_some()).await).unwrap();
    h.ops
        .send(Op::Decision {
            block_id: block,
            decision: Decision::Abort,
        })
        .unwrap();
    until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;

    h.ops.send(Op::Reset).unwrap();
    until(&mut h, |e| matches!(e, Event::HistoryChanged { .. })).await;
    say(&h, "again");
    let again = proposed_code(&until(&mut h, |e| proposed_code(e).is_some()).await).unwrap();
    assert_eq!(again, first, "after /reset the tour starts over");
    let _ = h.ops.send(Op::Shutdown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auto_run_notice_comes_before_the_block_runs() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "echo first-block").and_tool("shell", "echo second-block"),
        Reply::text("done"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config("openai/scripted", server.base("openai"), dir.path());
    let store = oi_tui::store::Store::open(&dir.path().join("sessions")).unwrap();
    let recorder = std::sync::Arc::new(oi_tui::store::Recorder::start(
        store,
        None,
        oi_tui::store::Redactor::default(),
    ));
    cfg.recorder = Some(recorder.clone());
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "two blocks".into(),
        })
        .unwrap();
    let mut events = Vec::new();
    loop {
        let event = next(&mut h).await;
        if let Event::ApprovalNeeded { block_id } = event {
            h.ops
                .send(Op::Decision {
                    block_id,
                    decision: Decision::RunAlways { code: None },
                })
                .unwrap();
        }
        let end = matches!(event, Event::TurnFinished { .. });
        events.push(event);
        if end {
            break;
        }
    }
    let notice = events
        .iter()
        .position(
            |e| matches!(e, Event::Notice { message } if message.starts_with("Auto mode is on")),
        )
        .expect("the notice");
    let started = events
        .iter()
        .position(|e| matches!(e, Event::ExecStarted { block_id: 1, .. }))
        .expect("the first block ran");
    let finished = events
        .iter()
        .position(|e| matches!(e, Event::ExecFinished { block_id: 1, .. }))
        .expect("the first block ended");
    assert!(notice < started && started < finished, "{events:?}");
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ApprovalNeeded { .. }))
            .count(),
        1,
        "the second block ran without asking"
    );
    let _ = h.ops.send(Op::Shutdown);
    recorder.flush();
    let store = oi_tui::store::Store::open(&dir.path().join("sessions")).unwrap();
    let id = recorder.session_id().to_string();
    let exported = store.export(&id).unwrap();
    assert!(
        exported
            .events
            .iter()
            .any(|e| e.message.starts_with("Auto mode is on"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_chat_shows_what_the_person_said_not_what_the_engine_added() {
    let server = ModelServer::start(vec![
        Reply::text("You ran echo.\n\n```sh\necho fenced-block\n```"),
        Reply::text("All done."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config("openai/scripted", server.base("openai"), dir.path());
    cfg.tools = false;
    cfg.approval = Approval::Auto;
    let data = dir.path().join("sessions");
    let recorder = std::sync::Arc::new(oi_tui::store::Recorder::start(
        oi_tui::store::Store::open(&data).unwrap(),
        None,
        oi_tui::store::Redactor::default(),
    ));
    cfg.recorder = Some(recorder.clone());
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(Op::Shell {
            command: "echo ctx-$((3 + 4))".into(),
        })
        .unwrap();
    until(&mut h, |e| matches!(e, Event::ExecFinished { .. })).await;
    h.ops
        .send(Op::UserMessage {
            text: "what did I run?".into(),
        })
        .unwrap();
    until(&mut h, |e| matches!(e, Event::TurnFinished { .. })).await;
    let _ = h.ops.send(Op::Shutdown);
    recorder.flush();
    // The model got the context; the person's words are kept apart.
    assert!(server.chats()[0].all_text().contains("ctx-7"));
    let store = oi_tui::store::Store::open(&data).unwrap();
    let events = store.replay(recorder.session_id()).unwrap();
    let said: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::UserMessage { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said, ["what did I run?"], "{events:?}");
    let first_run = events
        .iter()
        .position(|e| matches!(e, Event::ExecStarted { code, .. } if code.contains("ctx-")))
        .unwrap();
    let message = events
        .iter()
        .position(|e| matches!(e, Event::UserMessage { .. }))
        .unwrap();
    assert!(
        first_run < message,
        "the !cmd shows before the message: {events:?}"
    );
    assert!(events.iter().any(
        |e| matches!(e, Event::ExecOutput { data, .. } if String::from_utf8_lossy(data).contains("fenced-block"))
    ));
    let session = store.session(recorder.session_id()).unwrap();
    assert_eq!(session.title, "!echo ctx-$((3 + 4))");
}

/// `rules` mode with a person present: `ls` (allowed) runs without a question, `rm` asks;
/// after "always" (auto mode), `sudo` still asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_mode_asks_only_for_what_the_rules_do_not_allow() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "ls")
            .and_tool("shell", "rm -f gone.txt")
            .and_tool("shell", "sudo true"),
        Reply::text("done"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gone.txt"), "x").unwrap();
    let mut cfg = config("openai/scripted", server.base("openai"), dir.path());
    cfg.approval = Approval::Rules;
    let mut rules = oi_tui::policy::Rules::new();
    let lists = oi_tui::policy::RuleLists {
        allow: vec!["ls".into()],
        ..Default::default()
    };
    assert!(
        rules
            .add_lists(&lists, oi_tui::policy::RuleSource::User)
            .is_empty()
    );
    cfg.rules = rules;
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "tidy".into(),
        })
        .unwrap();
    let mut asked = Vec::new();
    let mut ran = Vec::new();
    loop {
        let event = next(&mut h).await;
        match &event {
            Event::ApprovalNeeded { block_id } => {
                asked.push(*block_id);
                let decision = if *block_id == 2 {
                    Decision::RunAlways { code: None }
                } else {
                    Decision::Skip { reason: None }
                };
                h.ops
                    .send(Op::Decision {
                        block_id: *block_id,
                        decision,
                    })
                    .unwrap();
            }
            Event::ExecStarted { block_id, .. } => ran.push(*block_id),
            Event::TurnFinished { .. } => break,
            _ => {}
        }
    }
    assert_eq!(
        asked,
        vec![2, 3],
        "ls runs unasked; rm asks; sudo asks even in auto mode"
    );
    assert_eq!(ran, vec![1, 2]);
    assert!(!dir.path().join("gone.txt").exists());
    let _ = h.ops.send(Op::Shutdown);
}
