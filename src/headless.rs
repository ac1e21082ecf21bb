//! Headless mode (`--task`): the engine with no TUI. It prints a readable transcript (or,
//! with `--json`, the engine's events as JSON Lines), asks `Run this python block? [y/n/e]`
//! on a terminal, runs nothing when nobody can be asked, and exits with a status a script
//! can branch on: 0 when the model finished, 1 for provider or config errors (or a session
//! that could not be saved whole), 130 on interrupt.

use std::io::{IsTerminal, Write};

use tokio::sync::mpsc;

use crate::config::Settings;
use crate::engine;
use crate::exec::{Language, RunResult, RunStatus};
use crate::protocol::{Decision, Event, Op, ProposedBlock, TurnEnd};
use crate::safe_text::{self, OutputFilter, visible, visible_line};
use crate::shutdown;
use crate::term::{self, KeyPump};

pub async fn run(settings: Settings, task: String, json: bool, resume: Option<&str>) -> i32 {
    let terminal = std::io::stdin().is_terminal();
    let approval = settings.approval_mode();
    // With a terminal, keys reach running blocks (input(), passwords) and blocks can be
    // approved; without one, a block that reads sees end-of-file instead of waiting for
    // nobody, and a block that would ask is declined.
    let config = match settings.engine_config(approval, !terminal) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return 1;
        }
    };
    if settings.executor.is_remote() {
        // The host's sandbox is said once connected (`ExecutorChanged`).
        eprintln!(
            "oi-tui: kernels run on {} (over SSH)",
            settings.executor.name()
        );
    } else {
        let sandbox = settings.sandbox();
        eprintln!("oi-tui: {}", sandbox.summary());
        if let Some(warning) = &sandbox.warning {
            eprintln!("oi-tui: warning: {warning}");
        }
    }
    let session = match crate::sessions::start(config, &settings, resume) {
        Ok(session) => session,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return 1;
        }
    };
    if let Some(resumed) = &session.resumed {
        eprintln!("oi-tui: {}", visible(&resumed.notice));
    }
    let recorder = session.recorder;
    let engine::EngineHandle {
        ops,
        mut events,
        task: engine_task,
    } = session.handle;
    let interrupted = watch_interrupts(ops.clone());
    // On a host, the task waits until the connection is made: a run that cannot reach the
    // host it was told to use fails at once, instead of asking the model for code that
    // cannot run.
    let mut task = Some(task);
    if !settings.executor.is_remote()
        && let Some(text) = task.take()
    {
        let _ = ops.send(Op::UserMessage { text });
    }

    let mut keys = terminal.then(KeyPump::start);
    let mut out = Transcript::new(json);
    let mut status = 1;
    type Shown = (
        ProposedBlock,
        Option<crate::protocol::Verdict>,
        Option<crate::protocol::Gate>,
    );
    let mut blocks: Vec<Shown> = Vec::new();
    let mut running = false;
    loop {
        let event = tokio::select! {
            event = events.recv() => match event {
                Some(event) => event,
                None => break,
            },
            chunk = next_key(&mut keys), if running => {
                match chunk {
                    Some(chunk) if !chunk.is_empty() => {
                        let _ = ops.send(Op::Input { data: chunk });
                    }
                    _ => {
                        let _ = ops.send(Op::Input { data: vec![0x04] });
                        keys = None;
                    }
                }
                continue;
            }
        };
        out.event(&event);
        match event {
            Event::BlockProposed {
                block,
                verdict,
                gate,
                ..
            } => blocks.push((block, verdict, gate)),
            Event::ApprovalNeeded { block_id } => {
                let Some((block, verdict, gate)) =
                    blocks.iter().find(|b| b.0.id == block_id).cloned()
                else {
                    continue;
                };
                let decision = match keys.as_mut() {
                    Some(keys) => ask(&block, verdict.as_ref(), gate.as_ref(), keys).await,
                    None => Decision::Skip {
                        reason: Some("Nobody can answer: standard input is closed.".to_string()),
                    },
                };
                let _ = ops.send(Op::Decision { block_id, decision });
            }
            Event::EscalationNeeded { block_id, .. } => {
                let decision = match keys.as_mut() {
                    Some(keys) => ask_outside(keys).await,
                    None => Decision::Skip { reason: None },
                };
                let _ = ops.send(Op::Decision { block_id, decision });
            }
            Event::ExecStarted { .. } => {
                if let Some(keys) = &keys
                    && term::keys_mode()
                {
                    keys.set_active(true);
                    running = true;
                }
            }
            Event::ExecFinished { .. } => {
                if let Some(keys) = &keys {
                    keys.set_active(false);
                }
                term::line_mode();
                running = false;
            }
            Event::ExecutorChanged { executor, cwd, .. } if task.is_some() => {
                if cwd.is_some() {
                    if let Some(text) = task.take() {
                        let _ = ops.send(Op::UserMessage { text });
                    }
                } else {
                    task = None;
                    let cancelled = interrupted.load(std::sync::atomic::Ordering::Relaxed);
                    if !cancelled {
                        eprintln!(
                            "oi-tui: error: the task did not start: {} cannot be reached",
                            visible(&executor)
                        );
                    }
                    status = if cancelled { 130 } else { 1 };
                    let _ = ops.send(Op::Shutdown);
                }
            }
            // Provider, config and internal errors alike: status 1.
            Event::Error { .. } => status = 1,
            Event::TurnFinished { end } => {
                status = match end {
                    TurnEnd::Done | TurnEnd::MaxTurns | TurnEnd::Declined => 0,
                    TurnEnd::Interrupted => 130,
                    TurnEnd::Error => 1,
                };
                let _ = ops.send(Op::Shutdown);
            }
            _ => {}
        }
    }
    let _ = engine_task.await;
    term::line_mode();
    out.finish();
    // A run whose session could not be saved whole does not end as a success.
    if let Some(recorder) = recorder {
        let health = recorder.close();
        if !health.all_saved() {
            eprintln!("oi-tui: error: {}", visible(&health.summary()));
            if status == 0 {
                status = 1;
            }
        }
    }
    status
}

async fn next_key(keys: &mut Option<KeyPump>) -> Option<Vec<u8>> {
    match keys {
        Some(keys) => keys.recv().await,
        None => std::future::pending().await,
    }
}

/// Ctrl-C: the first stops the running block and then the turn (or the connection being
/// made); a second exits. True once the first came.
fn watch_interrupts(
    ops: mpsc::UnboundedSender<Op>,
) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let said = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = said.clone();
    let mut count = 0;
    shutdown::on_interrupt(move || {
        count += 1;
        seen.store(true, std::sync::atomic::Ordering::Relaxed);
        if count == 1 {
            eprintln!("\noi-tui: interrupting; press Ctrl-C again to quit at once");
            let _ = ops.send(Op::Interrupt);
        } else {
            shutdown::exit(130);
        }
    });
    said
}

/// Asks on the terminal whether to run a block the sandbox stopped again outside it, once.
/// Only `y` says yes: leaving the sandbox is never the default.
async fn ask_outside(keys: &mut KeyPump) -> Decision {
    eprint!("Run it again outside the sandbox, once, in a fresh kernel? [y/N] ");
    let _ = std::io::stderr().flush();
    match keys.line().await {
        Some(line) if matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes") => {
            Decision::Run
        }
        Some(_) => Decision::Skip { reason: None },
        None => {
            eprintln!();
            Decision::Skip {
                reason: Some("No answer came (the input ended).".to_string()),
            }
        }
    }
}

/// Asks on the terminal whether to run a block: y runs it, n skips it, e edits it first.
/// The policy's verdict is shown between the block and the question.
async fn ask(
    block: &ProposedBlock,
    verdict: Option<&crate::protocol::Verdict>,
    gate: Option<&crate::protocol::Gate>,
    keys: &mut KeyPump,
) -> Decision {
    let language = block.language.map_or("", Language::name).to_string();
    let original = block.code.clone();
    let mut code = original.clone();
    eprint!("{}", shown_block(block.id, &language, &code));
    if let Some(verdict) = verdict {
        eprint!("{}", verdict_lines(verdict));
    }
    if let Some(gate) = gate {
        eprintln!("{}", visible(&gate_line(gate)));
    }
    loop {
        eprint!("Run this {language} block? [y/n/e] ");
        let _ = std::io::stderr().flush();
        let line = keys.line().await;
        let Some(line) = line else {
            eprintln!();
            return Decision::Skip {
                reason: Some("No answer came (the input ended).".to_string()),
            };
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => {
                return if code == original {
                    Decision::Run
                } else {
                    Decision::Edit { code }
                };
            }
            "n" | "no" => return Decision::Skip { reason: None },
            "e" | "edit" => {
                let edited = {
                    let code = code.clone();
                    let ext = block.language.map_or("txt", |l| l.extension());
                    term::line_mode();
                    tokio::task::spawn_blocking(move || edit(&code, ext)).await
                };
                match edited {
                    Ok(Ok(new)) => {
                        code = new;
                        eprintln!("The block now reads:");
                        eprint!("{}", shown_block(block.id, &language, &code));
                    }
                    Ok(Err(message)) => eprintln!("oi-tui: {}", visible(&message)),
                    Err(e) => eprintln!("oi-tui: the editor could not run: {e}"),
                }
            }
            _ => eprintln!("Answer y to run it, n to skip it, or e to edit it first."),
        }
    }
}

/// Opens `$VISUAL` or `$EDITOR` (else `vi`) on the code and returns what was saved.
fn edit(code: &str, extension: &str) -> Result<String, String> {
    let file = tempfile::Builder::new()
        .prefix("oi-tui-block-")
        .suffix(&format!(".{extension}"))
        .tempfile()
        .map_err(|e| format!("cannot create a file to edit: {e}"))?;
    std::fs::write(file.path(), code).map_err(|e| format!("cannot write the block: {e}"))?;
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .unwrap_or_else(|_| "vi".to_string());
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or("vi");
    let status = std::process::Command::new(program)
        .args(words)
        .arg(file.path())
        .status()
        .map_err(|e| format!("cannot start the editor `{editor}`: {e}"))?;
    if !status.success() {
        return Err(format!(
            "the editor `{editor}` failed ({status}); the block is unchanged"
        ));
    }
    let text = std::fs::read_to_string(file.path())
        .map_err(|e| format!("cannot read the edited block: {e}"))?;
    Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
}

/// Prints the events, as a transcript or as JSON Lines.
struct Transcript {
    json: bool,
    /// Raw terminal output goes straight to a terminal; elsewhere, the clean text form.
    raw_output: bool,
    /// The question about a block is asked on the same terminal, with the whole block and
    /// its verdict: the transcript does not show them a second time.
    asks_here: bool,
    /// The assistant's text of the current message, to know whether a fenced block's code
    /// was already printed with it.
    message: String,
    at_line_start: bool,
    /// Keeps a block's live output to colours and cursor movement.
    filter: OutputFilter,
    /// A block's live output as plain lines, for a file or a pipe.
    plain: crate::headless_live::PlainLines,
    /// A carriage return that ended the last text delta: shown as `␍` unless a line break
    /// follows in the next one (`\r\n` is a plain line break).
    held_cr: bool,
}

impl Transcript {
    fn new(json: bool) -> Self {
        Transcript {
            json,
            raw_output: std::io::stdout().is_terminal(),
            asks_here: std::io::stdout().is_terminal()
                && std::io::stdin().is_terminal()
                && std::io::stderr().is_terminal(),
            message: String::new(),
            at_line_start: true,
            filter: OutputFilter::new(),
            plain: crate::headless_live::PlainLines::default(),
            held_cr: false,
        }
    }

    fn print(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        crate::stdout::print(text);
        self.at_line_start = text.ends_with('\n');
    }

    /// A text delta as shown: control characters visible, and a carriage return at its end
    /// held back until the next delta tells whether it begins a `\r\n`.
    fn delta(&mut self, text: &str) -> String {
        let mut text = text.to_string();
        if std::mem::take(&mut self.held_cr) {
            text.insert(0, '\r');
        }
        if text.ends_with('\r') {
            text.pop();
            self.held_cr = true;
        }
        visible(&text)
    }

    fn line_break(&mut self) {
        if std::mem::take(&mut self.held_cr) {
            self.print(&visible("\r"));
        }
        if !self.at_line_start {
            self.print("\n");
        }
    }

    fn event(&mut self, event: &Event) {
        // Trouble with the store goes to stderr in both modes: it is about the record.
        match event {
            Event::StoreTrouble { message, .. } => {
                if !self.json {
                    self.line_break();
                }
                eprintln!("oi-tui: error: {}", visible(message));
            }
            Event::StoreRecovered { message } => {
                if !self.json {
                    self.line_break();
                }
                eprintln!("oi-tui: {}", visible(message));
            }
            _ => {}
        }
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                crate::stdout::println(&safe_text::json_safe(&line));
            }
            return;
        }
        match event {
            Event::SessionConfigured { .. }
            | Event::Usage { .. }
            | Event::BlockDelta { .. }
            | Event::UserMessage { .. }
            | Event::MessageTaken { .. }
            | Event::ExecAwaitingInput { .. }
            | Event::StoreTrouble { .. }
            | Event::StoreRecovered { .. }
            | Event::CallFinished { .. } => {}
            Event::RequestStarted { .. } => self.message.clear(),
            Event::AssistantDelta { text } => {
                self.message.push_str(text);
                let shown = self.delta(text);
                self.print(&shown);
            }
            Event::AssistantMessage { .. } => self.line_break(),
            Event::BlockProposed {
                block,
                index,
                of,
                verdict,
                gate,
                ..
            } => {
                self.line_break();
                let name = block.language_name();
                let mut text = format!(
                    "\n┌─ {} · block {}{}\n",
                    visible(name),
                    block.id,
                    of_count(*index, *of)
                );
                let asked = self.asks_here
                    && gate
                        .as_ref()
                        .is_some_and(|g| g.action == crate::protocol::GateAction::Ask);
                if asked {
                    // The question that follows shows the whole block and its verdict.
                    return;
                }
                // Shown unless the reply's text showed this very code as a fenced block of
                // its language: words that merely end with the code (`I will run: cat`), or
                // a fence that names another language, do not count.
                let shown_as_fence = !block.code.trim().is_empty()
                    && crate::engine::all_fences(&self.message).iter().any(|f| {
                        f.code.trim() == block.code.trim()
                            && crate::exec::Language::parse(&f.tag) == block.language
                    });
                if !shown_as_fence {
                    for line in block.code.lines() {
                        text.push_str(&format!("│ {}\n", visible(line)));
                    }
                }
                text.push_str("└─\n");
                if let Some(verdict) = verdict {
                    text.push_str(&verdict_lines(verdict));
                }
                if let Some(gate) = gate {
                    text.push_str(&format!("{}\n", visible(&gate_line(gate))));
                }
                self.print(&text);
            }
            Event::ApprovalNeeded { .. } => {}
            Event::EscalationNeeded { block_id, reason } => {
                self.line_break();
                self.print(&format!(
                    "⚠ block {block_id} looks stopped by the sandbox: {}\n",
                    visible(reason)
                ));
            }
            Event::BlockSkipped { block_id, reason } => {
                self.line_break();
                let why = reason.as_deref().unwrap_or("the user skipped it");
                self.print(&format!("⊘ block {block_id} not run: {}\n", visible(why)));
            }
            Event::ExecStarted { code, edited, .. } => {
                if *edited {
                    let mut text = String::from("(edited; runs as)\n");
                    for line in code.lines() {
                        text.push_str(&format!("│ {}\n", visible(line)));
                    }
                    self.print(&text);
                }
            }
            Event::ExecOutput { data, .. } => {
                if self.raw_output {
                    let data = self.filter.filter(data);
                    if data.is_empty() {
                        return;
                    }
                    crate::stdout::write(&data);
                    self.at_line_start = data.ends_with(b"\n");
                } else {
                    // A file or a pipe: each line as it ends, so the log is live.
                    let lines = self.plain.push(data);
                    if !lines.is_empty() {
                        self.print(&visible(&lines));
                    }
                }
            }
            Event::ExecFinished { result, .. } => self.finished(result),
            Event::ToolStarted {
                tool,
                arguments,
                edited,
                ..
            } => {
                let mut text = format!(
                    "→ calling {} of the MCP server {}{}\n",
                    visible(&tool.tool),
                    visible(&tool.server),
                    if *edited { " (arguments edited)" } else { "" }
                );
                if *edited {
                    for line in arguments.lines() {
                        text.push_str(&format!("│ {}\n", visible(line)));
                    }
                }
                self.print(&text);
            }
            Event::ToolFinished {
                ok,
                output,
                duration_ms,
                ..
            } => {
                let mut text = visible(output);
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "{} tool call {} · {:.1} s\n",
                    if *ok { "✓" } else { "✗" },
                    if *ok { "done" } else { "failed" },
                    *duration_ms as f64 / 1000.0
                ));
                self.print(&text);
            }
            Event::Retry {
                attempt,
                max,
                delay_ms,
                reason,
            } => eprintln!(
                "oi-tui: the request failed ({}); retry {attempt} of {max} in {:.1} s",
                visible(reason),
                *delay_ms as f64 / 1000.0
            ),
            Event::Notice { message }
            | Event::HistoryChanged { note: message, .. }
            | Event::RulesChanged { note: message, .. }
            | Event::SandboxChanged { note: message, .. }
            | Event::ExecutorChanged { note: message, .. }
            | Event::KernelsRestarted { note: message, .. } => {
                self.line_break();
                eprintln!("oi-tui: {}", visible(message));
            }
            Event::Connecting {
                executor,
                connecting: true,
            } => {
                self.line_break();
                eprintln!("oi-tui: connecting to {}…", visible(executor));
            }
            Event::Connecting { .. } => {}
            Event::Error { message, .. } => {
                self.line_break();
                eprintln!("oi-tui: error: {}", visible(message));
            }
            Event::TurnFinished { end } => {
                self.line_break();
                match end {
                    TurnEnd::MaxTurns | TurnEnd::Done | TurnEnd::Error => {}
                    TurnEnd::Interrupted => eprintln!("oi-tui: interrupted"),
                    TurnEnd::Declined => eprintln!(
                        "oi-tui: blocks were declined: what needs approval does not run without a terminal (see --approval and -y)"
                    ),
                }
            }
        }
    }

    fn finished(&mut self, result: &RunResult) {
        if !self.raw_output {
            // The lines went out as they came; what did not come live (a result with no
            // terminal output) is printed whole.
            let (rest, live) = self.plain.finish();
            if live {
                self.print(&visible(&rest));
            } else {
                self.print(&visible(&result.output));
            }
        }
        self.line_break();
        let mark = match result.status {
            RunStatus::Success | RunStatus::Written => "✓",
            _ => "✗",
        };
        let mut text = format!(
            "{mark} {} · {}\n",
            result.language,
            visible(&result.summary())
        );
        // Each image the block made: what it is and where it is kept.
        for (n, image) in result.images.iter().enumerate() {
            text.push_str(&format!("  ◧ {}\n", visible_line(&image.line(n + 1))));
        }
        for note in &result.notes {
            text.push_str(&format!("  {}\n", visible(note)));
        }
        self.print(&text);
    }

    fn finish(&mut self) {
        if !self.json {
            self.line_break();
        }
    }
}

/// The policy's verdict as the transcript shows it: the class, every finding (the quoted
/// text and its line) and the rule's reason. Shown with control characters visible.
pub fn verdict_lines(verdict: &crate::protocol::Verdict) -> String {
    let classes: Vec<&str> = verdict.classes.iter().map(|c| c.label()).collect();
    let mut text = format!("⚑ {} ({})\n", verdict.highest.label(), classes.join(", "));
    for finding in &verdict.findings {
        text.push_str(&format!("  {}\n", visible(&finding.summary())));
    }
    text.push_str(&format!(
        "  rule: {}\n",
        visible(&verdict.decision_reason())
    ));
    text
}

/// What the engine decided for a block, in one line: `→ denied: …`, `→ runs: …`.
pub fn gate_line(gate: &crate::protocol::Gate) -> String {
    use crate::protocol::GateAction;
    let what = match gate.action {
        GateAction::Run => "runs without asking",
        GateAction::Ask => "asks",
        GateAction::Deny => "denied",
        GateAction::Decline => "declined (nobody can approve it here)",
    };
    format!("→ {what}: {}", gate.reason)
}

/// ` (2 of 3)` for one of several blocks in a reply; nothing for a reply's only block.
fn of_count(index: usize, of: usize) -> String {
    if of > 1 {
        format!(" ({index} of {of})")
    } else {
        String::new()
    }
}

/// The whole block as the person approves it: a header with its line count, every line
/// numbered with control, invisible and bidirectional characters shown visibly, and a
/// warning for each kind of such character.
fn shown_block(id: u64, language: &str, code: &str) -> String {
    // A final line break ends the last line; it does not start another. A carriage return
    // of its own (not before a line feed) stays, to be shown as ␍.
    let unix = code.replace("\r\n", "\n");
    let lines: Vec<&str> = unix
        .strip_suffix('\n')
        .unwrap_or(&unix)
        .split('\n')
        .collect();
    let count = lines.len();
    let width = count.to_string().len();
    let plural = if count == 1 { "line" } else { "lines" };
    let mut text = format!("┌─ {} block {id} · {count} {plural}\n", visible(language));
    for (i, line) in lines.iter().enumerate() {
        text.push_str(&format!("│ {:>width$} │ {}\n", i + 1, visible(line)));
    }
    text.push_str("└─\n");
    for warning in safe_text::warnings(code) {
        text.push_str(&format!("⚠ this block holds {warning}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_shows_every_line_numbered_and_marks_what_hides() {
        let code = "import os; os.remove('canary')#\rprint('hello world')   \nx = '\u{202e}'";
        let shown = shown_block(1, "python", code);
        assert!(shown.contains("python block 1 · 2 lines"), "{shown}");
        assert!(
            shown.contains("│ 1 │ import os; os.remove('canary')#␍print('hello world')"),
            "{shown}"
        );
        assert!(shown.contains("│ 2 │ x = '⟨U+202E⟩'"), "{shown}");
        assert!(!shown.contains('\r') && !shown.contains('\u{202e}'));
        assert!(
            shown.contains("⚠ this block holds carriage returns"),
            "{shown}"
        );
        assert!(
            shown.contains("⚠ this block holds bidirectional controls"),
            "{shown}"
        );
    }

    #[test]
    fn a_final_line_break_is_not_a_line_of_its_own() {
        let shown = shown_block(2, "shell", "ls\n");
        assert!(shown.contains("shell block 2 · 1 line\n"), "{shown}");
        assert!(!shown.contains("│ 2 │"), "{shown}");
        assert!(shown_block(3, "shell", "").contains("· 1 line"));
    }

    #[test]
    fn a_line_break_split_across_deltas_is_a_line_break_and_a_lone_cr_is_shown() {
        let mut out = Transcript::new(false);
        let shown: String = ["one\r", "\ntwo\r", "three\x1b]0;t\x07"]
            .iter()
            .map(|d| out.delta(d))
            .collect();
        assert_eq!(shown, "one\ntwo␍three␛]0;t␇");
        assert_eq!(out.delta("four\r"), "four");
        assert!(
            out.held_cr,
            "the last CR waits for the next delta or the end"
        );
    }
}
