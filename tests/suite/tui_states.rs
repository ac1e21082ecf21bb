//! The workbench as a reducer (state + message -> state + effects) for every approval path,
//! and snapshots of each state's screen at 80×24 and at 160×48.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use oi_tui::exec::{Language, RunResult, RunStatus};
use oi_tui::protocol::{Decision, Event, Op, ProposedBlock, TurnEnd};
use oi_tui::tui::app::{App, Effect, Focus, Msg};
use oi_tui::tui::theme::{Depth, Theme};
use oi_tui::tui::view;

fn fresh() -> App {
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    app.update(Msg::Engine(Event::SessionConfigured {
        model: "openai/scripted".into(),
        api_base: "http://127.0.0.1:1/v1".into(),
        tools: true,
        approval: "ask".into(),
        cwd: "/home/ada/project".into(),
    }));
    app
}

fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        app.update(key(KeyCode::Char(c)));
    }
}

const CODE: &str = "import time\nfor i in range(3):\n    print(i)";

fn propose(app: &mut App) {
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::AssistantDelta {
        text: "Let me count.\n".into(),
    }));
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "Let me count.".into(),
    }));
    app.update(Msg::Engine(Event::BlockProposed {
        block: ProposedBlock {
            id: 1,
            language_tag: "python".into(),
            language: Some(Language::Python),
            code: CODE.into(),
        },
        index: 1,
        of: 1,
    }));
    app.update(Msg::Engine(Event::ApprovalNeeded { block_id: 1 }));
}

fn decision(effects: &[Effect]) -> Decision {
    match effects {
        [
            Effect::Op(Op::Decision {
                block_id: 1,
                decision,
            }),
        ] => decision.clone(),
        other => panic!("expected one decision, got {other:?}"),
    }
}

#[test]
fn y_and_enter_run_the_block() {
    for k in [KeyCode::Char('y'), KeyCode::Enter] {
        let mut app = fresh();
        propose(&mut app);
        assert_eq!(decision(&app.update(key(k))), Decision::Run);
        assert!(app.pending.is_none());
    }
}

#[test]
fn n_skips_and_r_skips_with_a_reason() {
    let mut app = fresh();
    propose(&mut app);
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('n')))),
        Decision::Skip { reason: None }
    );

    let mut app = fresh();
    propose(&mut app);
    assert!(app.update(key(KeyCode::Char('r'))).is_empty());
    assert_eq!(app.focus, Focus::Input);
    type_text(&mut app, "use numpy");
    assert_eq!(
        decision(&app.update(key(KeyCode::Enter))),
        Decision::Skip {
            reason: Some("use numpy".into())
        }
    );
}

#[test]
fn e_edits_ctrl_s_accepts_then_y_runs_the_edit() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    assert!(app.pending.as_ref().unwrap().editor.is_some());
    // Keys go to the editor now, even approval keys.
    app.update(key(KeyCode::End));
    type_text(&mut app, " # yes");
    app.update(ctrl('s'));
    let pending = app.pending.as_ref().unwrap();
    assert!(pending.editor.is_none());
    assert_eq!(
        pending.edited.as_deref(),
        Some("import time # yes\nfor i in range(3):\n    print(i)")
    );
    match decision(&app.update(key(KeyCode::Char('y')))) {
        Decision::Edit { code } => assert!(code.starts_with("import time # yes")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn esc_abandons_an_edit() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    type_text(&mut app, "garbage");
    app.update(key(KeyCode::Esc));
    let pending = app.pending.as_ref().unwrap();
    assert!(pending.editor.is_none() && pending.edited.is_none());
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('y')))),
        Decision::Run
    );
}

#[test]
fn a_runs_and_turns_auto_run_on_keeping_an_edit() {
    let mut app = fresh();
    propose(&mut app);
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('a')))),
        Decision::RunAlways { code: None }
    );
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    type_text(&mut app, "x = 1\n");
    app.update(ctrl('s'));
    match decision(&app.update(key(KeyCode::Char('a')))) {
        Decision::RunAlways { code: Some(code) } => assert!(code.starts_with("x = 1")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn typing_a_message_while_a_block_waits_does_not_decide_it() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('/')));
    assert!(
        app.update(key(KeyCode::Char('y'))).is_empty(),
        "y is text once typing began"
    );
    assert!(app.pending.is_some());
}

#[test]
fn ctrl_c_interrupts_and_twice_when_idle_quits() {
    let mut app = fresh();
    propose(&mut app);
    assert_eq!(app.update(ctrl('c')), vec![Effect::Op(Op::Interrupt)]);
    app.update(Msg::Engine(Event::TurnFinished {
        end: TurnEnd::Interrupted,
    }));
    assert!(app.update(ctrl('c')).is_empty());
    assert_eq!(app.update(ctrl('c')), vec![Effect::Quit]);
}

#[test]
fn ctrl_q_asks_first_while_a_block_runs() {
    let mut app = fresh();
    running(&mut app);
    assert!(app.update(ctrl('q')).is_empty());
    assert!(app.confirm_quit);
    assert_eq!(app.update(key(KeyCode::Char('y'))), vec![Effect::Quit]);
}

#[test]
fn input_sends_messages_shell_commands_and_slash_commands() {
    let mut app = fresh();
    type_text(&mut app, "hello");
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Effect::Op(Op::UserMessage {
            text: "hello".into()
        })]
    );
    type_text(&mut app, "!ls -l");
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Shell {
            command: "ls -l".into()
        })]
    );
    type_text(&mut app, "/model ollama/x");
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Effect::Op(Op::SetModel {
            model: "ollama/x".into()
        })]
    );
    type_text(&mut app, "/reset");
    assert_eq!(app.update(key(KeyCode::Enter)), vec![Effect::Op(Op::Reset)]);
    // Up walks the history.
    app.update(key(KeyCode::Up));
    assert_eq!(app.input.lines(), ["/reset"]);
    app.update(key(KeyCode::Up));
    assert_eq!(app.input.lines(), ["/model ollama/x"]);
    // Alt-Enter is a newline, not a send.
    let mut app = fresh();
    type_text(&mut app, "a");
    assert!(
        app.update(Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT)))
            .is_empty()
    );
    type_text(&mut app, "b");
    assert_eq!(app.input.lines(), ["a", "b"]);
}

#[test]
fn the_terminal_pane_takes_keys_until_ctrl_g() {
    let mut app = fresh();
    running(&mut app);
    app.focus = Focus::Terminal;
    assert_eq!(
        app.update(key(KeyCode::Char('q'))),
        vec![Effect::Op(Op::Input {
            data: b"q".to_vec()
        })]
    );
    assert_eq!(
        app.update(key(KeyCode::Enter)),
        vec![Effect::Op(Op::Input {
            data: b"\r".to_vec()
        })]
    );
    app.update(ctrl('g'));
    assert_eq!(app.focus, Focus::Input);
}

fn running(app: &mut App) {
    propose(app);
    app.update(key(KeyCode::Char('y')));
    app.update(Msg::Engine(Event::ExecStarted {
        block_id: 1,
        language: Language::Python,
        code: CODE.into(),
        edited: false,
    }));
    app.update(Msg::Engine(Event::ExecOutput {
        block_id: 1,
        data: b"0\r\n1\r\n\x1b[32mgreen\x1b[0m\r\n".to_vec(),
    }));
}

/// The screen as text, with the running clock made steady.
fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let areas = view::layout(Rect::new(0, 0, width, height), app);
    terminal.draw(|f| view::draw(f, app, &areas)).unwrap();
    let text = terminal.backend().to_string();
    steady(&text)
}

/// "running 0.3 s" -> "running N s": the clock is the only moving part.
fn steady(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("running ") {
        out.push_str(&rest[..at + 8]);
        rest = &rest[at + 8..];
        let digits = rest
            .find(" s")
            .filter(|&n| n <= 6 && rest[..n].chars().all(|c| c.is_ascii_digit() || c == '.'));
        if let Some(n) = digits {
            out.push('N');
            rest = &rest[n..];
        }
    }
    out.push_str(rest);
    out
}

fn snapshots(name: &str, app: &App) {
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen(app, w, h));
    }
}

#[test]
fn snapshot_idle() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "# Hello\n\nI can **run code** for you:\n\n- python\n- shell".into(),
    }));
    snapshots("idle", &app);
}

#[test]
fn snapshot_streaming() {
    let mut app = fresh();
    type_text(&mut app, "count to three");
    app.update(key(KeyCode::Enter));
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::AssistantDelta {
        text: "I will write a loop.\nIt prints".into(),
    }));
    app.update(Msg::Engine(Event::BlockDelta {
        index: 0,
        language_tag: Some("python".into()),
        code: "for i in range(3):\n    pri".into(),
    }));
    snapshots("streaming", &app);
}

#[test]
fn snapshot_awaiting_approval() {
    let mut app = fresh();
    propose(&mut app);
    snapshots("awaiting", &app);
}

#[test]
fn snapshot_editing_and_diff() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::End));
    type_text(&mut app, "  # three");
    snapshots("editing", &app);
    app.update(ctrl('s'));
    snapshots("diff", &app);
}

#[test]
fn snapshot_running_with_output() {
    let mut app = fresh();
    running(&mut app);
    snapshots("running", &app);
}

#[test]
fn snapshot_error() {
    let mut app = fresh();
    running(&mut app);
    let mut result = RunResult {
        block_id: 1,
        language: Language::Python,
        status: RunStatus::Failed,
        exit_code: Some(1),
        signal: None,
        duration: std::time::Duration::from_millis(120),
        output: String::new(),
        cut: None,
        output_bytes: 0,
        state_lost: false,
        notes: Vec::new(),
        file: None,
    };
    result.output = "Traceback".into();
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result,
    }));
    app.update(Msg::Engine(Event::Error {
        kind: oi_tui::protocol::ErrorKind::Provider,
        message: "openai at http://127.0.0.1:1/v1 refused the request (401: bad key); check the API key (OPENAI_API_KEY or --api-key).".into(),
    }));
    app.update(Msg::Engine(Event::TurnFinished {
        end: TurnEnd::Error,
    }));
    snapshots("error", &app);
}

#[test]
fn snapshot_help() {
    let mut app = fresh();
    app.update(key(KeyCode::F(1)));
    assert!(app.help);
    snapshots("help", &app);
    app.update(key(KeyCode::Esc));
    assert!(!app.help);
}

#[test]
fn snapshot_setup_panel() {
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    app.setup = Some("# No model yet\n\nNo model is configured, and no local model server answered:\n\n- Ollama at http://127.0.0.1:11434: no answer\n\nTo try the workbench now, restart with `oi-tui --demo`.".into());
    snapshots("setup", &app);
}

#[test]
fn a_terminal_too_small_gets_a_message() {
    let app = fresh();
    let text = screen(&app, 30, 8);
    assert!(text.contains("needs a terminal"), "{text}");
}

#[test]
fn wide_characters_and_controls_render_safely() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "日本語のテキスト 🎉 and a bell\x07 and an escape \x1b[2J".into(),
    }));
    let text = screen(&app, 80, 24);
    assert!(text.contains("日本語"));
    assert!(!text.contains('\x1b') && !text.contains('\x07'));
}
