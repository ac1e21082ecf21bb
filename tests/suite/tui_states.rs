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

pub(super) fn fresh() -> App {
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    app.update(Msg::Engine(Event::SessionConfigured {
        model: "openai/scripted".into(),
        api_base: "http://127.0.0.1:1/v1".into(),
        tools: true,
        approval: oi_tui::protocol::ApprovalMode::Ask,
        unattended: false,
        cwd: "/home/ada/project".into(),
        sandbox: None,
        executor: None,
    }));
    app
}

pub(super) fn key(code: KeyCode) -> Msg {
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
    propose_code(app, 1, CODE);
    // The person sees it (the code pane records what was on screen).
    screen(app, 160, 48);
}

/// The model proposes `code` as block `id`, and it waits.
pub(super) fn propose_code(app: &mut App, id: u64, code: &str) {
    app.update(Msg::Engine(Event::BlockProposed {
        block: ProposedBlock {
            id,
            language_tag: "python".into(),
            language: Some(Language::Python),
            code: code.into(),
            caller: None,
            tool: None,
        },
        index: 1,
        of: 1,
        verdict: None,
        gate: None,
        allow: None,
    }));
    app.update(Msg::Engine(Event::ApprovalNeeded { block_id: id }));
}

pub(super) fn decision(effects: &[Effect]) -> Decision {
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
fn skipping_a_block_sent_between_turns_leaves_the_workbench_idle() {
    use oi_tui::tui::app::Busy;
    // Another caller's block (MCP, a replay), with no turn of the model under way.
    let mut app = fresh();
    propose_code(&mut app, 1, "print(1)");
    decision(&app.update(key(KeyCode::Char('n'))));
    assert!(matches!(app.busy, Busy::Idle), "{:?}", app.busy);
    // In a turn, the model hears of the skip next.
    let mut app = fresh();
    propose(&mut app);
    decision(&app.update(key(KeyCode::Char('n'))));
    assert!(matches!(app.busy, Busy::Thinking(_)), "{:?}", app.busy);
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
    // The diff must be seen before it runs.
    screen(&mut app, 160, 48);
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
    // It asks first; y throws the edit away.
    app.update(key(KeyCode::Char('y')));
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
    assert!(app.update(key(KeyCode::Char('a'))).is_empty());
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('y')))),
        Decision::RunAlways { code: None }
    );
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    type_text(&mut app, "x = 1\n");
    app.update(ctrl('s'));
    screen(&mut app, 160, 48);
    app.update(key(KeyCode::Char('a')));
    match decision(&app.update(key(KeyCode::Char('a')))) {
        Decision::RunAlways { code: Some(code) } => assert!(code.starts_with("x = 1")),
        other => panic!("{other:?}"),
    }
}

/// The strings a person was seen typing while a block waited.
const TYPED: [&str; 4] = [
    "now explain first",
    "also check the date",
    "!ls -la",
    "yes run it all now",
];

/// Every way the workbench can be while a block waits.
fn waiting_states() -> Vec<(&'static str, App)> {
    let mut states = Vec::new();
    for (name, focus) in [
        ("input", Focus::Input),
        ("chat", Focus::Chat),
        ("terminal", Focus::Terminal),
    ] {
        let mut app = fresh();
        propose(&mut app);
        app.focus = focus;
        states.push((name, app));
    }
    // Typing had begun when the block arrived: focus stays in the input.
    let mut app = fresh();
    type_text(&mut app, "wait");
    propose(&mut app);
    assert_eq!(
        app.focus,
        Focus::Input,
        "focus stays with the person typing"
    );
    states.push(("typing", app));
    // A message was being typed, then erased, just before the block came.
    let mut app = fresh();
    type_text(&mut app, "n");
    app.update(key(KeyCode::Backspace));
    propose(&mut app);
    assert_eq!(
        app.focus,
        Focus::Input,
        "focus stays with the person typing"
    );
    states.push(("just-typed", app));
    // The narrow layout, output of an earlier block on screen.
    let mut app = fresh();
    app.wide = false;
    running(&mut app);
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result: result(RunStatus::Success),
    }));
    propose_code(&mut app, 2, "print(2)");
    states.push(("narrow-reading-output", app));
    states
}

#[test]
fn typing_anywhere_but_the_decision_never_decides_or_switches_a_mode() {
    for text in TYPED {
        for (name, mut app) in waiting_states() {
            let approval = app.approval;
            for c in text.chars() {
                let effects = app.update(key(KeyCode::Char(c)));
                assert!(
                    effects
                        .iter()
                        .all(|e| !matches!(e, Effect::Op(Op::Decision { .. }))),
                    "{c:?} of {text:?} decided in state {name}: {effects:?}"
                );
            }
            assert!(app.pending.is_some(), "{text:?} in {name}");
            let p = app.pending.as_ref().unwrap();
            assert!(
                p.editor.is_none() && !p.reason && p.confirm.is_none(),
                "{text:?} in {name}"
            );
            assert_eq!(app.approval, approval, "{text:?} in {name}");
            // What was typed is in the input, whole (the terminal pane is idle: it takes
            // no text).
            if name != "terminal" {
                assert!(
                    app.input.lines().join("\n").ends_with(text),
                    "{text:?} in {name}: {:?}",
                    app.input.lines()
                );
            }
        }
    }
}

#[test]
fn a_block_takes_focus_only_when_the_input_is_empty_and_esc_moves_between() {
    let mut app = fresh();
    propose(&mut app);
    assert_eq!(app.focus, Focus::Code);
    assert_eq!(app.update(key(KeyCode::Esc)), vec![]);
    assert_eq!(app.focus, Focus::Input);
    type_text(&mut app, "yes");
    assert_eq!(app.input.lines(), ["yes"]);
    app.update(key(KeyCode::Esc));
    assert_eq!(app.focus, Focus::Code);
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('y')))),
        Decision::Run
    );
    // The message typed meanwhile is still there.
    assert_eq!(app.input.lines(), ["yes"]);
}

#[test]
fn a_rebound_run_key_keeps_the_rules() {
    let mut keys = std::collections::BTreeMap::new();
    keys.insert("run".to_string(), "x".to_string());
    let mut app = fresh();
    app.keymap = oi_tui::tui::keymap::Keymap::from_config(&keys).unwrap();
    propose(&mut app);
    app.focus = Focus::Input;
    type_text(&mut app, "xylophone");
    assert!(app.pending.is_some());
    app.update(key(KeyCode::Esc));
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('x')))),
        Decision::Run
    );
}

#[test]
fn a_asks_once_more_before_auto_run() {
    let mut app = fresh();
    propose(&mut app);
    assert!(app.update(key(KeyCode::Char('a'))).is_empty());
    assert!(app.pending.as_ref().unwrap().confirm.is_some());
    // Any other key cancels.
    assert!(app.update(key(KeyCode::Char('n'))).is_empty());
    assert!(app.pending.is_some());
    assert_ne!(app.approval, oi_tui::protocol::ApprovalMode::Auto);
    app.update(key(KeyCode::Char('a')));
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('a')))),
        Decision::RunAlways { code: None }
    );
    assert_eq!(app.approval, oi_tui::protocol::ApprovalMode::Auto);
}

#[test]
fn esc_in_a_changed_editor_asks_before_throwing_the_edit_away() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    type_text(&mut app, "x");
    app.update(key(KeyCode::Esc));
    let p = app.pending.as_ref().unwrap();
    assert!(p.editor.is_some(), "still editing");
    app.update(key(KeyCode::Char('k'))); // not yes: keep editing
    assert!(app.pending.as_ref().unwrap().editor.is_some());
    app.update(key(KeyCode::Esc));
    app.update(key(KeyCode::Char('y')));
    assert!(app.pending.as_ref().unwrap().editor.is_none());
}

#[test]
fn a_cr_paste_becomes_newlines_and_ctrl_j_inserts_one() {
    let mut app = fresh();
    app.update(Msg::Paste("one\rtwo\r\nthree".into()));
    assert_eq!(app.input.lines(), ["one", "two", "three"]);
    app.update(ctrl('j'));
    type_text(&mut app, "four");
    assert_eq!(app.input.lines(), ["one", "two", "three", "four"]);
}

#[test]
fn at_80x24_tab_switches_the_visible_tab_while_a_block_waits() {
    let mut app = fresh();
    propose(&mut app);
    app.wide = false;
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("awaiting your decision"), "{s}");
    app.update(key(KeyCode::BackTab));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Let me count."), "the chat shows: {s}");
    assert!(s.contains("Code ● awaits you"), "{s}");
    // A click on the label goes back.
    let (_, r) = app
        .tab_areas
        .iter()
        .find(|(f, _)| *f == Focus::Code)
        .copied()
        .unwrap();
    app.update(Msg::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::Down(crossterm::event::MouseButton::Left),
        column: r.x + 1,
        row: r.y,
        modifiers: KeyModifiers::NONE,
    }));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("1 import time"), "{s}");
}

#[test]
fn copy_goes_to_the_status_bar_not_the_conversation() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "first".into(),
    }));
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "second".into(),
    }));
    let entries = app.chat.entries.len();
    app.focus = Focus::Chat;
    app.update(key(KeyCode::Up));
    app.update(key(KeyCode::Up));
    assert_eq!(app.update(ctrl('y')), vec![Effect::Copy("first".into())]);
    assert_eq!(app.chat.entries.len(), entries);
    assert!(screen(&mut app, 80, 24).contains("copied the entry"));
}

#[test]
fn retries_of_one_request_are_one_line() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    for attempt in 1..=4 {
        app.update(Msg::Engine(Event::Retry {
            attempt,
            max: 4,
            delay_ms: 500,
            reason: "connection refused".into(),
        }));
    }
    let s = screen(&mut app, 80, 24);
    assert_eq!(s.matches("the request failed").count(), 1, "{s}");
    assert!(s.contains("retry 4 of 4"), "{s}");
}

#[test]
fn the_status_bar_fits_80_columns_whole() {
    let mut app = fresh();
    propose(&mut app);
    let s = screen(&mut app, 80, 24);
    let status = s.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(status.contains("F1 help"), "{status}");
    assert!(status.contains("awaiting your decision"), "{status}");
    let hints = screen(&mut app, 80, 24);
    assert!(!hints.contains("a run + auto-r"), "{hints}");
}

fn result(status: RunStatus) -> RunResult {
    RunResult {
        block_id: 1,
        language: Language::Python,
        status,
        exit_code: Some(0),
        signal: None,
        duration: std::time::Duration::from_millis(120),
        output: "0\n1\ngreen".into(),
        cut: None,
        output_bytes: 12,
        state_lost: false,
        notes: Vec::new(),
        file: None,
        images: Vec::new(),
    }
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
pub(super) fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    let areas = view::layout(Rect::new(0, 0, width, height), app);
    app.tab_areas = areas.tab_labels.clone();
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

fn snapshots(name: &str, app: &mut App) {
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
    snapshots("idle", &mut app);
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
        delta: "for i in range(3):\n".into(),
    }));
    app.update(Msg::Engine(Event::BlockDelta {
        index: 0,
        language_tag: Some("python".into()),
        delta: "    pri".into(),
    }));
    snapshots("streaming", &mut app);
}

#[test]
fn snapshot_awaiting_approval() {
    let mut app = fresh();
    propose(&mut app);
    snapshots("awaiting", &mut app);
}

#[test]
fn snapshot_editing_and_diff() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('e')));
    app.update(key(KeyCode::Down));
    app.update(key(KeyCode::End));
    type_text(&mut app, "  # three");
    snapshots("editing", &mut app);
    app.update(ctrl('s'));
    snapshots("diff", &mut app);
}

#[test]
fn snapshot_running_with_output() {
    let mut app = fresh();
    running(&mut app);
    snapshots("running", &mut app);
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
        images: Vec::new(),
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
    snapshots("error", &mut app);
}

#[test]
fn snapshot_help() {
    let mut app = fresh();
    app.update(key(KeyCode::F(1)));
    assert!(app.help);
    snapshots("help", &mut app);
    app.update(key(KeyCode::Esc));
    assert!(!app.help);
}

#[test]
fn snapshot_setup_panel() {
    let mut app = App::new(Theme::load("dark", Depth::None).unwrap());
    app.setup = Some("# No model yet\n\nNo model is configured, and no local model server answered:\n\n- Ollama at http://127.0.0.1:11434: no answer\n\nTo try the workbench now, restart with `oi-tui --demo`.".into());
    snapshots("setup", &mut app);
}

#[test]
fn a_terminal_too_small_gets_a_message() {
    let mut app = fresh();
    let text = screen(&mut app, 30, 8);
    assert!(text.contains("needs a terminal"), "{text}");
}

#[test]
fn wide_characters_and_controls_render_safely() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::AssistantMessage {
        text: "日本語のテキスト 🎉 and a bell\x07 and an escape \x1b[2J".into(),
    }));
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("日本語"));
    assert!(!text.contains('\x1b') && !text.contains('\x07'));
}

#[test]
fn the_auto_run_notice_shows_above_the_block_it_runs() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('a')));
    app.update(key(KeyCode::Char('y')));
    app.update(Msg::Engine(Event::Notice {
        message: "auto-run is on for the rest of this session".into(),
    }));
    app.update(Msg::Engine(Event::ExecStarted {
        block_id: 1,
        language: Language::Python,
        code: CODE.into(),
        edited: false,
    }));
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result: result(RunStatus::Success),
    }));
    let s = screen(&mut app, 160, 48);
    let notice = s.find("auto-run is on").expect("the notice");
    let block = s.find("python #1").expect("the block");
    assert!(notice < block, "{s}");
}

#[test]
fn ctrl_y_copies_a_blocks_whole_output_from_the_chat_and_the_terminal() {
    let mut app = fresh();
    running(&mut app);
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result: result(RunStatus::Success),
    }));
    app.focus = Focus::Chat;
    app.update(key(KeyCode::Up));
    match app.update(ctrl('y')).as_slice() {
        [Effect::Copy(text)] => {
            assert!(text.starts_with(CODE), "{text:?}");
            assert!(text.contains("0\n1\ngreen"), "{text:?}");
        }
        other => panic!("{other:?}"),
    }
    app.focus = Focus::Terminal;
    match app.update(ctrl('y')).as_slice() {
        [Effect::Copy(text)] => assert!(text.contains("0\n1\ngreen"), "{text:?}"),
        other => panic!("{other:?}"),
    }
    assert!(screen(&mut app, 80, 24).contains("copied the last block's output"));
}

#[test]
fn snapshot_new_states() {
    // `a` asks once more.
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('a')));
    snapshots("confirm_always", &mut app);

    // The first `y` on a block whose end was never seen.
    let mut app = fresh();
    let code: String = (1..=61).map(|i| format!("print({i})\n")).collect();
    propose_code(&mut app, 1, code.trim_end());
    screen(&mut app, 160, 48);
    app.update(key(KeyCode::Char('y')));
    snapshots("unseen_lines", &mut app);

    // A block expanded in the chat, selected.
    let mut app = fresh();
    running(&mut app);
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result: result(RunStatus::Success),
    }));
    app.focus = Focus::Chat;
    app.update(key(KeyCode::Up));
    app.update(key(KeyCode::Enter));
    snapshots("expanded_block", &mut app);

    // A block waiting for keyboard input.
    let mut app = fresh();
    running(&mut app);
    app.update(Msg::Engine(Event::ExecAwaitingInput {
        block_id: 1,
        waiting: true,
    }));
    snapshots("waiting_for_input", &mut app);
}

#[test]
fn enter_at_the_auto_run_question_is_no_as_the_question_says() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Char('a')));
    assert!(app.update(key(KeyCode::Enter)).is_empty());
    assert!(app.pending.is_some());
    assert_ne!(app.approval, oi_tui::protocol::ApprovalMode::Auto);
}

#[test]
fn a_reason_for_a_skip_keeps_the_message_being_written() {
    let mut app = fresh();
    propose(&mut app);
    app.update(key(KeyCode::Esc));
    type_text(&mut app, "my draft");
    app.update(key(KeyCode::Esc));
    app.update(key(KeyCode::Char('r')));
    assert!(app.input.is_empty(), "the input takes the reason");
    app.update(key(KeyCode::Esc));
    assert_eq!(app.input.lines(), ["my draft"]);
    // Back at the decision: `r` again, this time with a reason.
    assert_eq!(app.focus, Focus::Code);
    app.update(key(KeyCode::Char('r')));
    type_text(&mut app, "not now");
    assert_eq!(
        decision(&app.update(key(KeyCode::Enter))),
        Decision::Skip {
            reason: Some("not now".into())
        }
    );
    assert_eq!(app.input.lines(), ["my draft"]);
}

#[test]
fn the_offer_to_leave_the_sandbox_keeps_the_blocks_place_in_the_reply() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::BlockProposed {
        block: ProposedBlock {
            id: 7,
            language_tag: "shell".into(),
            language: Some(Language::Shell),
            code: "touch /elsewhere/x".into(),
            caller: None,
            tool: None,
        },
        index: 2,
        of: 3,
        verdict: None,
        gate: None,
        allow: None,
    }));
    app.update(Msg::Engine(Event::EscalationNeeded {
        block_id: 7,
        reason: "the sandbox keeps this read-only".into(),
    }));
    let pending = app.pending.as_ref().expect("the offer waits");
    assert_eq!((pending.index, pending.of), (2, 3));
    assert!(pending.outside.is_some());
    let screen = screen(&mut app, 160, 48);
    assert!(screen.contains("block 2 of 3"), "{screen}");
}

#[test]
fn why_a_kernels_state_was_lost_is_shown_to_the_person() {
    let mut app = fresh();
    running(&mut app);
    let mut lost = result(RunStatus::Failed);
    lost.exit_code = None;
    lost.state_lost = true;
    lost.notes = vec![
        "The block was interrupted.".into(),
        "The connection to lab was lost (ssh: Connection to 127.0.0.1 closed by remote host.) while this block ran: the block ended with it.".into(),
    ];
    app.update(Msg::Engine(Event::ExecFinished {
        block_id: 1,
        result: lost,
    }));
    let s = screen(&mut app, 200, 60);
    assert!(s.contains("The connection to lab was lost"), "{s}");
    assert!(!s.contains("The block was interrupted."), "{s}");
}
