//! The workbench and calls of MCP tools: the call waits in the code pane (the tool, its
//! server, the arguments), is decided with the same keys as a block, and its answer shows
//! in the terminal pane and in the chat; `/mcp` asks the engine for the servers' state.

use crossterm::event::KeyCode;

use oi_tui::protocol::{Decision, Event, Op, ProposedBlock, ToolRef};
use oi_tui::tui::app::{Effect, Msg};

use super::tui_states::{decision, fresh, key, screen};

fn echo() -> ToolRef {
    ToolRef {
        server: "echo".into(),
        tool: "echo".into(),
    }
}

#[test]
fn a_tool_call_waits_in_the_code_pane_and_its_answer_shows() {
    let mut app = fresh();
    app.update(Msg::Engine(Event::RequestStarted { round: 1 }));
    app.update(Msg::Engine(Event::BlockProposed {
        block: ProposedBlock {
            id: 1,
            language_tag: "mcp:echo/echo".into(),
            language: None,
            code: "{\n  \"text\": \"hello tools\"\n}".into(),
            caller: None,
            tool: Some(Box::new(echo())),
        },
        index: 1,
        of: 1,
        verdict: None,
        gate: None,
        allow: None,
    }));
    app.update(Msg::Engine(Event::ApprovalNeeded { block_id: 1 }));
    let shown = screen(&mut app, 160, 48);
    assert!(shown.contains("tool echo of MCP server echo"), "{shown}");
    assert!(shown.contains("\"text\": \"hello tools\""), "{shown}");
    assert_eq!(
        decision(&app.update(key(KeyCode::Char('y')))),
        Decision::Run
    );

    app.update(Msg::Engine(Event::ToolStarted {
        block_id: 1,
        tool: echo(),
        arguments: "{\n  \"text\": \"hello tools\"\n}".into(),
        edited: false,
    }));
    app.update(Msg::Engine(Event::ToolFinished {
        block_id: 1,
        ok: true,
        output: "echo: hello tools".into(),
        duration_ms: 120,
    }));
    let shown = screen(&mut app, 160, 48);
    assert!(shown.contains("echo: hello tools"), "{shown}");
    assert!(shown.contains("0.1 s"), "{shown}");
}

#[test]
fn slash_mcp_asks_the_engine() {
    let mut app = fresh();
    for c in "/mcp".chars() {
        app.update(key(KeyCode::Char(c)));
    }
    let effects = app.update(key(KeyCode::Enter));
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Op(Op::McpStatus))),
        "{effects:?}"
    );
}
