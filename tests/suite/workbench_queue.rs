//! Typing while a block runs or waits: a message is shown queued at once and reaches the
//! model with the next request, in the order the chat shows; slash commands work at once or
//! say why they wait. At narrow sizes the answer comes forward when a turn ends, and a tab
//! that got something new while hidden is marked until visited.

use std::time::Duration;

use crossterm::event::KeyCode;
use serde_json::Value;

use oi_tui::engine::{self, EngineHandle};
use oi_tui::exec::{Language, RunResult, RunStatus};
use oi_tui::protocol::{Event, Op, TurnEnd};
use oi_tui::tui::app::{App, Effect, Focus, Msg};
use oi_tui::tui::chat::Entry;

use super::model_server::{ModelServer, Reply};
use super::tui_states::{fresh, key, propose_code, screen};

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(key(KeyCode::Char(c)));
    }
}

/// Types `text` and Enter; returns the effects of the Enter.
fn say(app: &mut App, text: &str) -> Vec<Effect> {
    type_text(app, text);
    app.update(key(KeyCode::Enter))
}

/// The person's and the model's words as the chat shows them, in order.
fn chat_words(app: &App) -> Vec<(String, String)> {
    app.chat
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::User(t) => Some(("user".to_string(), t.clone())),
            Entry::Assistant(t) => Some(("assistant".to_string(), t.clone())),
            _ => None,
        })
        .collect()
}

/// The person's and the model's words in a request, in order (tool results and the system
/// prompt left out).
fn request_words(body: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or_default();
        if role != "user" && role != "assistant" {
            continue;
        }
        let text = match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        };
        if !text.trim().is_empty() {
            out.push((role.to_string(), text));
        }
    }
    out
}

/// Carries the ops of `effects` to the engine.
fn forward(h: &EngineHandle, effects: Vec<Effect>) {
    for effect in effects {
        if let Effect::Op(op) = effect {
            h.ops.send(op).expect("the engine listens");
        }
    }
}

/// Feeds the engine's events to the workbench until one that `stop` accepts.
async fn pump(app: &mut App, h: &mut EngineHandle, stop: impl Fn(&Event) -> bool) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), h.events.recv())
            .await
            .expect("an event in time")
            .expect("the engine runs");
        let last = stop(&event);
        app.update(Msg::Engine(event));
        if last {
            return;
        }
    }
}

/// The engine and the workbench's reducer together, as the workbench runs them: a message
/// typed while a block runs goes to the model with the very next request, after the block's
/// result, and the chat shows the conversation in the order the model receives it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_typed_while_a_block_runs_reaches_the_next_request_in_the_chats_order() {
    let server = ModelServer::start(vec![
        Reply::text("Let me sum.").and_tool(
            "python",
            "import time\ntime.sleep(1.5)\nprint('summed', 1 + 2)",
        ),
        Reply::text("It is 3; in words, three."),
        Reply::text("An answer to a request that should not have been needed."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cfg =
        super::support::engine_config("openai/scripted", Some(server.base("openai")), dir.path());
    let mut h = engine::spawn(cfg).unwrap();
    let mut app = fresh();
    let effects = say(&mut app, "add one and two");
    forward(&h, effects);
    pump(&mut app, &mut h, |e| matches!(e, Event::ExecStarted { .. })).await;
    let effects = say(&mut app, "also say the sum in words");
    assert_eq!(
        effects,
        vec![Effect::Op(Op::UserMessage {
            text: "also say the sum in words".into()
        })]
    );
    forward(&h, effects);
    pump(&mut app, &mut h, |e| {
        matches!(e, Event::TurnFinished { .. })
    })
    .await;
    // Anything still to come (another turn) comes too.
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(1500), h.events.recv()).await
    {
        let started = matches!(event, Event::RequestStarted { .. });
        app.update(Msg::Engine(event));
        if started {
            pump(&mut app, &mut h, |e| {
                matches!(e, Event::TurnFinished { .. })
            })
            .await;
        }
    }
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "one turn of two requests");
    let sent = request_words(&chats[1].body);
    assert_eq!(
        sent.last(),
        Some(&("user".to_string(), "also say the sum in words".to_string())),
        "the message went with the request after the block: {sent:?}"
    );
    let shown = chat_words(&app);
    let (answer, before) = shown.split_last().expect("words in the chat");
    assert_eq!(
        answer,
        &(
            "assistant".to_string(),
            "It is 3; in words, three.".to_string()
        )
    );
    assert_eq!(before, sent.as_slice(), "the chat's order is the request's");
    // The block's line is above the message in the chat too.
    let block = app
        .chat
        .entries
        .iter()
        .position(|e| matches!(e, Entry::Block { .. }))
        .expect("the block's line");
    let message = app
        .chat
        .entries
        .iter()
        .position(|e| matches!(e, Entry::User(t) if t == "also say the sum in words"))
        .expect("the message");
    assert!(block < message, "{:?}", app.chat.entries);
    let _ = h.ops.send(Op::Shutdown);
}

const CODE: &str = "for i in range(3):\n    print(i)";

fn result() -> RunResult {
    RunResult {
        block_id: 1,
        language: Language::Python,
        status: RunStatus::Success,
        exit_code: Some(0),
        signal: None,
        duration: Duration::from_millis(120),
        output: "0\n1\n2".into(),
        cut: None,
        output_bytes: 6,
        state_lost: false,
        notes: Vec::new(),
        file: None,
        images: Vec::new(),
    }
}

/// A turn: the person's message, the model's words and a block that waits.
fn waiting(app: &mut App) {
    let effects = say(app, "count to three");
    assert!(matches!(
        effects.as_slice(),
        [Effect::Op(Op::UserMessage { .. })]
    ));
    app.update(Msg::Engine(Event::MessageTaken {
        text: "count to three".into(),
    }));
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "Let me count.".into(),
    }));
    propose_code(app, 1, CODE);
}

/// The block that waited runs (the person said y).
fn run(app: &mut App) {
    app.update(key(KeyCode::Char('y')));
    app.update(Msg::Engine(Event::ExecStarted {
        block_id: 1,
        language: Language::Python,
        code: CODE.into(),
        edited: false,
    }));
    app.update(Msg::Engine(Event::ExecOutput {
        block_id: 1,
        data: b"0\r\n1\r\n2\r\n".to_vec(),
    }));
}

fn finish_block(app: &mut App) {
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result: result(),
    }));
}

/// The row of the screen that shows `needle`, and the row above it.
fn row_and_above(screen: &str, needle: &str) -> (String, String) {
    let rows: Vec<&str> = screen.lines().collect();
    let at = rows
        .iter()
        .position(|r| r.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} on screen:\n{screen}"));
    (rows[at].to_string(), rows[at.saturating_sub(1)].to_string())
}

#[test]
fn a_message_typed_while_a_block_runs_shows_queued_below_everything_until_sent() {
    let mut app = fresh();
    waiting(&mut app);
    run(&mut app);
    assert_eq!(app.focus, Focus::Input);
    let effects = say(&mut app, "then sum them");
    assert_eq!(
        effects,
        vec![Effect::Op(Op::UserMessage {
            text: "then sum them".into()
        })]
    );
    let s = screen(&mut app, 160, 48);
    let (_, above) = row_and_above(&s, "then sum them");
    assert!(above.contains("queued"), "marked queued:\n{s}");
    // Not yet said: the conversation does not have it.
    assert!(
        !chat_words(&app).contains(&("user".into(), "then sum them".into())),
        "{:?}",
        app.chat.entries
    );
    // What comes meanwhile goes above it: it stays below everything.
    app.update(Msg::Engine(Event::Notice {
        message: "a notice meanwhile".into(),
    }));
    finish_block(&mut app);
    let s = screen(&mut app, 160, 48);
    let rows: Vec<&str> = s.lines().collect();
    let notice = rows.iter().position(|r| r.contains("a notice meanwhile"));
    let queued = rows.iter().position(|r| r.contains("then sum them"));
    assert!(notice < queued && notice.is_some(), "{s}");
    // The engine takes it up for the next request: said, where the model reads it.
    app.update(Msg::Engine(Event::MessageTaken {
        text: "then sum them".into(),
    }));
    app.update(Msg::Engine(Event::RequestStarted { round: 2 }));
    let s = screen(&mut app, 160, 48);
    assert!(!s.contains("queued"), "{s}");
    assert!(s.contains("then sum them"), "{s}");
    let last = app
        .chat
        .entries
        .iter()
        .rposition(|e| matches!(e, Entry::User(t) if t == "then sum them"));
    let block = app
        .chat
        .entries
        .iter()
        .position(|e| matches!(e, Entry::Block { .. }));
    assert!(block.is_some() && block < last, "{:?}", app.chat.entries);
    assert!(app.chat.queued.is_empty());
}

#[test]
fn a_message_sent_right_after_another_waits_behind_it_until_the_engine_takes_both() {
    let mut app = fresh();
    say(&mut app, "first");
    // The engine has not said anything yet: the second waits behind the first.
    say(&mut app, "second");
    assert_eq!(
        chat_words(&app),
        [("user".to_string(), "first".to_string())]
    );
    assert_eq!(app.chat.queued, ["second"]);
    app.update(Msg::Engine(Event::MessageTaken {
        text: "first".into(),
    }));
    assert_eq!(app.chat.queued, ["second"]);
    app.update(Msg::Engine(Event::MessageTaken {
        text: "second".into(),
    }));
    assert!(app.chat.queued.is_empty());
    assert_eq!(
        chat_words(&app),
        [
            ("user".to_string(), "first".to_string()),
            ("user".to_string(), "second".to_string())
        ]
    );
    // Sent while idle and taken up, the next one shows as said at once.
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::TurnFinished { end: TurnEnd::Done }));
    say(&mut app, "third");
    assert!(app.chat.queued.is_empty());
    assert_eq!(chat_words(&app).len(), 3);
}

#[test]
fn at_80x24_output_that_came_while_the_terminal_was_hidden_marks_its_tab() {
    let mut app = fresh();
    app.wide = false;
    waiting(&mut app);
    app.update(key(KeyCode::Char('y')));
    app.update(Msg::Engine(Event::ExecStarted {
        block_id: 1,
        language: Language::Python,
        code: CODE.into(),
        edited: false,
    }));
    // The person looks at the chat while it runs.
    app.update(key(KeyCode::Tab));
    assert_eq!(app.tab, Focus::Chat);
    app.update(Msg::Engine(Event::ExecOutput {
        block_id: 1,
        data: b"0\r\n".to_vec(),
    }));
    finish_block(&mut app);
    let s = screen(&mut app, 80, 24);
    let tabs = s.lines().next().unwrap_or_default().to_string();
    assert!(tabs.contains("Terminal •"), "{tabs}");
    assert!(!tabs.contains("Chat •"), "{tabs}");
    app.update(key(KeyCode::Tab));
    app.update(key(KeyCode::Tab));
    assert_eq!(app.tab, Focus::Terminal);
    let s = screen(&mut app, 80, 24);
    let tabs = s.lines().next().unwrap_or_default().to_string();
    assert!(!tabs.contains('•'), "{tabs}");
}

#[test]
fn slash_commands_typed_while_a_block_waits_or_runs_work_or_say_why_they_wait() {
    let mut app = fresh();
    waiting(&mut app);
    // The person goes to the input (the decision keeps its keys).
    app.update(key(KeyCode::Esc));
    assert_eq!(app.focus, Focus::Input);
    for _ in 0..2 {
        let effects = say(&mut app, "/reset");
        let s = screen(&mut app, 160, 48);
        let said = app.chat.entries.iter().any(|e| match e {
            Entry::Notice(t) => t.contains("/reset") && t.contains("wait"),
            _ => false,
        });
        assert!(
            said,
            "the chat says /reset waits ({effects:?}):\n{s}\n{:?}",
            app.chat.entries
        );
    }
    // The block still waits for its decision, and the keyboard stayed in the input.
    assert!(app.pending.is_some());
    assert_eq!(app.focus, Focus::Input);
    // /help works at once.
    say(&mut app, "/help");
    assert!(app.help);
    app.update(key(KeyCode::Esc));
    assert!(!app.help);
    // While the block runs: /undo and !cmd say they wait.
    app.update(key(KeyCode::Esc));
    run(&mut app);
    for (typed, word) in [("/undo", "/undo"), ("!ls", "ls")] {
        let effects = say(&mut app, typed);
        let said = app.chat.entries.iter().any(|e| match e {
            Entry::Notice(t) => t.contains(word) && t.contains("wait"),
            _ => false,
        });
        assert!(said, "{typed} ({effects:?}): {:?}", app.chat.entries);
    }
}

#[test]
fn at_80x24_the_answer_comes_forward_when_the_turn_ends() {
    let mut app = fresh();
    app.wide = false;
    waiting(&mut app);
    run(&mut app);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("▶ Terminal") || s.contains(" Terminal "), "{s}");
    finish_block(&mut app);
    app.update(Msg::Engine(Event::RequestStarted { round: 2 }));
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "The count is done: 0, 1, 2.".into(),
    }));
    app.update(Msg::Engine(Event::TurnFinished { end: TurnEnd::Done }));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("The count is done"), "the answer in front:\n{s}");
    assert_eq!(app.tab, Focus::Chat);
}

#[test]
fn at_80x24_a_tab_the_person_chose_stays_and_the_chat_tab_is_marked() {
    let mut app = fresh();
    app.wide = false;
    waiting(&mut app);
    run(&mut app);
    // The person goes to the code tab themself while the block runs.
    app.update(key(KeyCode::Tab));
    app.update(key(KeyCode::Tab));
    assert_eq!(app.tab, Focus::Code);
    finish_block(&mut app);
    app.update(Msg::Engine(Event::RequestStarted { round: 2 }));
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "The count is done: 0, 1, 2.".into(),
    }));
    app.update(Msg::Engine(Event::TurnFinished { end: TurnEnd::Done }));
    let s = screen(&mut app, 80, 24);
    assert_eq!(app.tab, Focus::Code, "{s}");
    let tabs = s.lines().next().unwrap_or_default().to_string();
    assert!(tabs.contains("Chat •"), "the chat tab is marked: {tabs}");
    // Visiting it takes the mark away (the keyboard went back to the input: Tab is the chat).
    app.update(key(KeyCode::Tab));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("The count is done"), "{s}");
    let tabs = s.lines().next().unwrap_or_default().to_string();
    assert!(!tabs.contains('•'), "{tabs}");
}
