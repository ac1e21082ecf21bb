//! The engine driven directly by ops, as the workbench drives it: `!cmd` context, undo,
//! reset, no model, and an interrupted stream that keeps what arrived.

use std::time::Duration;

use oi_tui::engine::{self, EngineConfig, EngineHandle};
use oi_tui::protocol::{ErrorKind, Event, Op, TurnEnd};

use super::model_server::{ModelServer, Reply};

fn config(server: Option<&ModelServer>, dir: &std::path::Path) -> EngineConfig {
    super::support::engine_config("openai/scripted", server.map(|s| s.base("openai")), dir)
}

/// Waits for the first event that `pick` accepts, returning it.
async fn until(handle: &mut EngineHandle, pick: impl Fn(&Event) -> bool) -> Event {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), handle.events.recv())
            .await
            .expect("an event in time")
            .expect("the engine runs");
        if pick(&event) {
            return event;
        }
    }
}

fn turn_end(e: &Event) -> bool {
    matches!(e, Event::TurnFinished { .. })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_command_reaches_the_model_with_the_next_message() {
    let server = ModelServer::start(vec![Reply::text("noted")]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(Some(&server), dir.path())).unwrap();
    h.ops
        .send(Op::Shell {
            command: "echo ctx-$((40 + 2))".into(),
        })
        .unwrap();
    let finished = until(&mut h, |e| matches!(e, Event::ExecFinished { .. })).await;
    if let Event::ExecFinished { result, .. } = finished {
        assert_eq!(result.output.trim(), "ctx-42");
    }
    h.ops
        .send(Op::UserMessage {
            text: "what did I run?".into(),
        })
        .unwrap();
    until(&mut h, turn_end).await;
    let text = server.chats()[0].all_text();
    assert!(
        text.contains("The user ran `echo ctx-$((40 + 2))`") && text.contains("ctx-42"),
        "{text}"
    );
    assert!(text.contains("what did I run?"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undo_drops_the_last_exchange_and_reset_everything() {
    let server = ModelServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
        Reply::text("four"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(Some(&server), dir.path())).unwrap();
    for text in ["first message", "second message"] {
        h.ops.send(Op::UserMessage { text: text.into() }).unwrap();
        until(&mut h, turn_end).await;
    }
    h.ops.send(Op::Undo).unwrap();
    let changed = until(&mut h, |e| matches!(e, Event::HistoryChanged { .. })).await;
    assert!(
        matches!(changed, Event::HistoryChanged { messages: 2, .. }),
        "{changed:?}"
    );
    h.ops
        .send(Op::UserMessage {
            text: "third message".into(),
        })
        .unwrap();
    until(&mut h, turn_end).await;
    let third = server.chats()[2].all_text();
    assert!(
        third.contains("first message") && !third.contains("second message"),
        "{third}"
    );

    h.ops.send(Op::Reset).unwrap();
    until(&mut h, |e| {
        matches!(e, Event::HistoryChanged { messages: 0, .. })
    })
    .await;
    h.ops
        .send(Op::UserMessage {
            text: "fourth message".into(),
        })
        .unwrap();
    until(&mut h, turn_end).await;
    let fourth = server.chats()[3].all_text();
    assert!(
        fourth.contains("fourth message") && !fourth.contains("first message"),
        "{fourth}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_model_messages_fail_clearly_and_commands_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(None, dir.path())).unwrap();
    let configured = until(&mut h, |e| matches!(e, Event::SessionConfigured { .. })).await;
    assert!(matches!(configured, Event::SessionConfigured { ref model, .. } if model.is_empty()));
    h.ops
        .send(Op::UserMessage {
            text: "hello?".into(),
        })
        .unwrap();
    let error = until(&mut h, |e| matches!(e, Event::Error { .. })).await;
    match error {
        Event::Error { kind, message } => {
            assert_eq!(kind, ErrorKind::Config);
            assert!(message.contains("No model is configured") && message.contains("--demo"));
        }
        _ => unreachable!(),
    }
    assert!(matches!(
        until(&mut h, turn_end).await,
        Event::TurnFinished {
            end: TurnEnd::Error
        }
    ));
    h.ops
        .send(Op::Shell {
            command: "echo still works".into(),
        })
        .unwrap();
    let finished = until(&mut h, |e| matches!(e, Event::ExecFinished { .. })).await;
    assert!(
        matches!(finished, Event::ExecFinished { ref result, .. } if result.output.trim() == "still works")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_stream_keeps_what_arrived() {
    let server = ModelServer::start(vec![
        Reply::text("This answer is long and slow and will be cut")
            .slow(Duration::from_millis(150)),
        Reply::text("ok"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(Some(&server), dir.path())).unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "talk".into(),
        })
        .unwrap();
    until(&mut h, |e| matches!(e, Event::AssistantDelta { .. })).await;
    h.ops.send(Op::Interrupt).unwrap();
    let message = until(&mut h, |e| matches!(e, Event::AssistantMessage { .. })).await;
    let kept = match message {
        Event::AssistantMessage { text } => text,
        _ => unreachable!(),
    };
    assert!(kept.starts_with("This") && !kept.contains("cut"), "{kept}");
    // Marked as interrupted, for the record and for the model.
    assert!(
        kept.ends_with("[Interrupted here by the person.]"),
        "{kept}"
    );
    assert!(matches!(
        until(&mut h, turn_end).await,
        Event::TurnFinished {
            end: TurnEnd::Interrupted
        }
    ));
    h.ops
        .send(Op::UserMessage {
            text: "go on".into(),
        })
        .unwrap();
    until(&mut h, turn_end).await;
    let escaped = serde_json::to_string(&kept).unwrap();
    assert!(
        server.chats()[1]
            .all_text()
            .contains(escaped.trim_matches('"')),
        "the partial reply is in the history, marked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ops_sent_during_a_turn_run_after_it_in_order() {
    let server = ModelServer::start(vec![
        Reply::text("a slow reply to the first").slow(Duration::from_millis(100)),
        Reply::text("second answer"),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(Some(&server), dir.path())).unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "first".into(),
        })
        .unwrap();
    until(&mut h, |e| matches!(e, Event::AssistantDelta { .. })).await;
    // While the model streams: a command, then a message.
    h.ops
        .send(Op::Shell {
            command: "echo queued-$((1 + 1))".into(),
        })
        .unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "second".into(),
        })
        .unwrap();
    assert!(matches!(
        until(&mut h, turn_end).await,
        Event::TurnFinished { end: TurnEnd::Done }
    ));
    let ran = until(&mut h, |e| matches!(e, Event::ExecFinished { .. })).await;
    assert!(
        matches!(ran, Event::ExecFinished { ref result, .. } if result.output.trim() == "queued-2")
    );
    until(&mut h, turn_end).await;
    let second = server.chats()[1].all_text();
    assert!(
        second.contains("queued-2") && second.contains("second"),
        "{second}"
    );
}
