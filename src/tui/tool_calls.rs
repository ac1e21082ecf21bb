//! The workbench and calls of the user's MCP tools: a call runs like a block (the chat line
//! shows it running, then its end), and the tool's answer is shown in the terminal pane,
//! where a block's output would be, with control characters made visible.

use std::time::Instant;

use super::app::{App, Busy, Focus, tail_lines};
use super::chat::BlockState;
use crate::protocol::{BlockId, ToolRef};

impl App {
    /// `Event::ToolStarted`.
    pub(super) fn tool_started(&mut self, block_id: BlockId, tool: &ToolRef, edited: bool) {
        self.clear_pending(block_id);
        self.busy = Busy::Running(block_id, Instant::now());
        let detail = if edited {
            "edited".to_string()
        } else {
            String::new()
        };
        self.chat
            .update_block(block_id, BlockState::Running, detail);
        self.terminal.begin_block(block_id, &tool.policy_name());
        if self.focus == Focus::Code {
            self.focus = Focus::Input;
        }
        self.tab = Focus::Terminal;
        self.output_shown = false;
    }

    /// `Event::ToolFinished`.
    pub(super) fn tool_finished(
        &mut self,
        block_id: BlockId,
        ok: bool,
        output: &str,
        duration_ms: u64,
    ) {
        let shown = crate::safe_text::visible(&output.replace("\r\n", "\n")).replace('\n', "\r\n");
        self.terminal.process(shown.as_bytes());
        self.terminal.process(b"\r\n");
        self.terminal.end_block();
        self.output_shown = true;
        self.chat
            .block_output(block_id, tail_lines(output, super::chat::OUTPUT_TAIL));
        let seconds = format!("{:.1} s", duration_ms as f64 / 1000.0);
        let (state, detail) = if ok {
            (BlockState::Ran, seconds)
        } else {
            (BlockState::Failed, format!("failed · {seconds}"))
        };
        self.chat.update_block(block_id, state, detail);
        // The model hears of it next.
        self.busy = if self.in_turn {
            Busy::Thinking(Instant::now())
        } else {
            Busy::Idle
        };
    }
}
