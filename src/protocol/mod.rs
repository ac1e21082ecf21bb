//! The contract between the engine and its faces (the TUI, headless mode, the MCP server):
//! `Op`s go in, `Event`s come out. Plain data, serde-serialisable, so that headless `--json`
//! output is simply the event stream. It is the bottom of the crate: it imports nothing of
//! oi-tui's, and the engine, the kernels, the policy and the sandbox speak in its types.

use serde::{Deserialize, Serialize};

mod image;
mod language;
mod modes;
mod run;
mod tools;
mod verdict;

pub use image::{Image, ImageFormat, ImageSource, human_bytes};
pub use language::Language;
pub use modes::{ApprovalMode, Backend, Network, SandboxMode, SandboxStatus};
pub use run::{Cut, RunResult, RunStatus, format_duration};
pub use tools::ToolDef;
pub use verdict::{
    Decision as RuleDecision, Finding, RiskClass, Rule, RuleSource, SimpleCommand, Suggestion,
    Verdict,
};

/// A block's id within a session: 1, 2, 3, ...
pub type BlockId = u64;

/// A face's id for a call it made on behalf of a caller outside (`Op::RunCode`): the face
/// picks it, unique among its calls, and finds its `CallFinished` by it.
pub type CallId = u64;

/// What a face asks the engine to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// The person's message: starts a turn; sent while a turn runs, it goes with that
    /// turn's next request (`Event::MessageTaken` says when).
    UserMessage { text: String },
    /// The answer to an `ApprovalNeeded`.
    Decision {
        block_id: BlockId,
        decision: Decision,
    },
    /// Stop what runs now: the running block (its kernel survives when it can), or the
    /// model's stream (what arrived is kept), and end the turn.
    Interrupt,
    /// Type into the running block's terminal.
    Input { data: Vec<u8> },
    /// The terminal pane's new size.
    Resize { rows: u16, cols: u16 },
    /// Run a shell command the person typed (`!cmd`), outside the model loop; its output goes
    /// to the model as context with the next message.
    Shell { command: String },
    /// Start a new conversation: history cleared, kernels restarted.
    Reset,
    /// Drop the last exchange (the last user message and everything after it).
    Undo,
    /// Talk to another model from now on (`provider/name`).
    SetModel { model: String },
    /// Put the kernels under another sandbox (they restart: their state is lost).
    SetSandbox { mode: SandboxMode, network: Network },
    /// Run the kernels elsewhere from now on: `local`, an executor's name, or a host for
    /// `ssh` (they restart: their state is lost).
    SetExecutor { name: String },
    /// Run this code for a caller other than the model (another agent, over MCP). It goes
    /// through the same policy and approvals as the model's blocks: it is proposed (with the
    /// caller's name), judged, asked about when the gate asks, and run; `CallFinished` says
    /// what became of it. Calls that arrive during a turn wait for it to end.
    RunCode {
        call: CallId,
        /// Who asks: shown with the block (`claude-code`).
        caller: String,
        /// The language, as the caller named it.
        language: String,
        code: String,
        /// Stop the block after this long (else the engine's block timeout).
        #[serde(default)]
        timeout_secs: Option<f64>,
    },
    /// The caller gave up on a call: it does not run if it has not started (it is answered
    /// `NotRun`, cancelled), and it is interrupted if it runs.
    CancelCall { call: CallId },
    /// Restart one language's kernel, or all of them: their state (variables, imports,
    /// `cd`) is lost. The conversation is kept.
    RestartKernels { language: Option<Language> },
    /// Say which MCP servers oi-tui uses as a client, their state and tools (`/mcp`): the
    /// answer is a `Notice`.
    McpStatus,
    /// Stop the engine.
    Shutdown,
}

/// What to do with a proposed block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run it as proposed.
    Run,
    /// Run this code instead (the person edited it).
    Edit { code: String },
    /// Do not run it; tell the model, with the reason when there is one.
    Skip { reason: Option<String> },
    /// Run it (as edited, when `code` is given), and every later block of this session
    /// without asking.
    RunAlways { code: Option<String> },
    /// Save these command prefixes as allow rules (in the user's config, or the project's),
    /// then run it (as edited, when `code` is given). Blocks the rules allow run without
    /// asking from now on: `ask` mode becomes `rules` mode.
    AllowAlways {
        prefixes: Vec<String>,
        save_to: RuleSource,
        code: Option<String>,
    },
    /// Run nothing more, and end the turn.
    Abort,
}

/// A block the model proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposedBlock {
    pub id: BlockId,
    /// The language, as the model named it.
    pub language_tag: String,
    /// The language it maps to, if oi-tui knows it.
    pub language: Option<Language>,
    pub code: String,
    /// Who proposed it, when not the model: the caller of an `Op::RunCode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<Caller>,
    /// The MCP tool it calls, when it is a tool call rather than code: `code` is then the
    /// arguments as pretty-printed JSON, and `language_tag` is `mcp:SERVER/TOOL`.
    /// (Boxed: events stay small.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<Box<ToolRef>>,
}

/// The caller of an `Op::RunCode`, as its block carries it: who (`claude-code`) and which of
/// the face's calls it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Caller {
    pub name: String,
    pub call: CallId,
}

/// The caller's name of the blocks `oi-tui replay` runs again.
pub const REPLAY_CALLER: &str = "replay";

/// Where a caller's block comes from, in words: `from replay`, `from claude-code over MCP`.
/// The name is shown as it is (escapes made visible by the faces).
pub fn caller_origin(name: &str) -> String {
    if name == REPLAY_CALLER {
        "from replay".to_string()
    } else {
        format!("from {name} over MCP")
    }
}

/// A tool of one of the user's MCP servers (`[mcp_servers.NAME]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRef {
    /// The server's name in the config.
    pub server: String,
    /// The tool's name as the server gives it.
    pub tool: String,
}

impl ToolRef {
    /// `mcp:SERVER/TOOL`: how rules name it, and the block's language tag.
    pub fn policy_name(&self) -> String {
        format!("{TOOL_PREFIX}{}/{}", self.server, self.tool)
    }

    /// Reads `mcp:SERVER/TOOL` back (the server's name holds no `/`).
    pub fn parse(tag: &str) -> Option<ToolRef> {
        let rest = tag.strip_prefix(TOOL_PREFIX)?;
        let (server, tool) = rest.split_once('/')?;
        (!server.is_empty() && !tool.is_empty()).then(|| ToolRef {
            server: server.to_string(),
            tool: tool.to_string(),
        })
    }
}

/// What starts the name of an MCP tool in rules and language tags.
pub const TOOL_PREFIX: &str = "mcp:";

impl ProposedBlock {
    /// The language's name, or the model's tag when oi-tui does not know it.
    pub fn language_name(&self) -> &str {
        self.language
            .map_or(self.language_tag.as_str(), |l| l.name())
    }
}

/// What the engine does with a proposed block before anyone is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GateAction {
    /// It runs without a question (allowed by the rules, or auto mode).
    Run,
    /// A person is asked (`ApprovalNeeded` follows).
    Ask,
    /// A rule denies it: it does not run, whatever the mode.
    Deny,
    /// It would ask, but nobody can approve here: it does not run.
    Decline,
}

/// The engine's decision for a block, and why (`denied by rule "rm" in your config`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gate {
    pub action: GateAction,
    pub reason: String,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered without code: the task is done.
    Done,
    /// The turn limit was reached.
    MaxTurns,
    /// The person interrupted or aborted it.
    Interrupted,
    /// Blocks were declined and nobody can approve them.
    Declined,
    /// The provider failed (see the `Error` event before it).
    Error,
}

/// What kind of failure an `Error` event reports; decides the exit status of headless mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The model provider failed: authentication, an unknown model, a broken stream, ...
    Provider,
    /// The configuration is wrong.
    Config,
    /// Anything else.
    Internal,
}

/// What the engine reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The engine is ready: what it talks to (`model` is empty when none is configured).
    SessionConfigured {
        model: String,
        api_base: String,
        tools: bool,
        approval: ApprovalMode,
        /// Nobody can approve a block here (headless without a terminal): what would ask
        /// is declined instead.
        #[serde(default)]
        unattended: bool,
        cwd: String,
        /// The sandbox around the kernels (absent in old records).
        #[serde(default)]
        sandbox: Option<SandboxStatus>,
        /// Where the kernels run: `local`, or the executor's (host's) name (absent in old
        /// records).
        #[serde(default)]
        executor: Option<String>,
    },
    /// A message the person sent earlier, in a replayed (resumed) session. The live engine
    /// does not send it: a face shows what its person types as they send it.
    UserMessage { text: String },
    /// The engine took up a message the person sent (`Op::UserMessage`): it is in the
    /// conversation, and the next request carries it (unless an error right after says why
    /// not). A message sent while a turn runs waits for the turn's next request; a face that
    /// showed it as queued shows it as said from here, where the model reads it.
    MessageTaken { text: String },
    /// A request to the model begins (one turn may make several).
    RequestStarted { round: u32 },
    /// Text from the model, as it streams.
    AssistantDelta { text: String },
    /// More of a block's code as it streams (tool-call arguments), before the block is
    /// complete: `delta` is the new text only, to be appended to what came before for the
    /// same `index` (the call's place in the reply) since the `RequestStarted`.
    BlockDelta {
        index: usize,
        /// The language, once the model has named it whole.
        language_tag: Option<String>,
        delta: String,
    },
    /// The model's message is complete.
    AssistantMessage { text: String },
    /// A complete block the model proposed: the `index`-th (from 1) of `of` in its reply.
    BlockProposed {
        block: ProposedBlock,
        index: usize,
        of: usize,
        /// What the policy reads in it, before anyone is asked (absent in old records).
        #[serde(default)]
        verdict: Option<Verdict>,
        /// What the engine does with it: run, ask, deny or decline, and why.
        #[serde(default)]
        gate: Option<Gate>,
        /// The "always allow" rules a person may save for it (`Decision::AllowAlways`).
        #[serde(default)]
        allow: Option<Suggestion>,
    },
    /// The block waits for a `Decision`.
    ApprovalNeeded { block_id: BlockId },
    /// The block failed, and the sandbox looks like the cause (`reason` quotes the refusal).
    /// It waits for a `Decision`: to run it again outside the sandbox, once, in a fresh
    /// kernel (`Run`, or `Edit` with other code), or not (`Skip`, `Abort`).
    EscalationNeeded { block_id: BlockId, reason: String },
    /// The block will not run.
    BlockSkipped {
        block_id: BlockId,
        reason: Option<String>,
    },
    /// The block starts running (with the code that runs, edited or not).
    ExecStarted {
        block_id: BlockId,
        language: Language,
        code: String,
        edited: bool,
    },
    /// Bytes from the running block's terminal, as they arrive.
    ExecOutput {
        block_id: BlockId,
        #[serde(with = "lossy_bytes")]
        data: Vec<u8>,
    },
    /// The running block waits for keyboard input (nothing printed for a while, and the
    /// terminal's foreground process blocked reading it), or no longer does (output or
    /// input resumed). A `waiting: true` is always followed by a `false` before the block's
    /// `ExecFinished`.
    ExecAwaitingInput { block_id: BlockId, waiting: bool },
    /// The block ended.
    ExecFinished {
        block_id: BlockId,
        result: RunResult,
    },
    /// The request failed and will be tried again.
    Retry {
        attempt: u32,
        max: u32,
        delay_ms: u64,
        reason: String,
    },
    /// Something the person should know that is not an error.
    Notice { message: String },
    /// Token counts the provider reported.
    Usage {
        prompt_tokens: u64,
        completion_tokens: u64,
    },
    /// Something failed.
    Error { kind: ErrorKind, message: String },
    /// The turn is over.
    TurnFinished { end: TurnEnd },
    /// The conversation changed outside a turn (reset, undo, another model).
    HistoryChanged { messages: usize, note: String },
    /// Rules were added (`Decision::AllowAlways`); `approval` is the mode in force now.
    RulesChanged {
        approval: ApprovalMode,
        note: String,
    },
    /// The kernels run under another sandbox now; `note` says what changed and whether
    /// kernels were restarted.
    SandboxChanged { status: SandboxStatus, note: String },
    /// The kernels run elsewhere now (`executor`: `local` or the executor's name), or the
    /// connection to their host changed; `note` says what happened.
    ExecutorChanged {
        executor: String,
        note: String,
        /// The kernels' working directory there, once connected (here: the session's).
        #[serde(default)]
        cwd: Option<String>,
        /// The sandbox in force where they run now (the host's, or this machine's).
        #[serde(default)]
        sandbox: Option<SandboxStatus>,
    },
    /// oi-tui is connecting to the kernels' host (`connecting: true`: an `Interrupt` cancels
    /// the attempt), or no longer is (`false`, always after a `true`, before what came of
    /// it is said).
    Connecting { executor: String, connecting: bool },
    /// The session store cannot be written (a full disk, a read-only or damaged store):
    /// `unsaved` steps wait in memory and are tried again. A face shows it until
    /// `StoreRecovered`; headless mode says it on stderr.
    StoreTrouble { message: String, unsaved: usize },
    /// The session store is written again; `message` says whether anything was lost.
    StoreRecovered { message: String },
    /// What became of an `Op::RunCode`: the answer for its caller. `block_id` is the
    /// block it became, when it got that far.
    CallFinished {
        call: CallId,
        block_id: Option<BlockId>,
        outcome: CallOutcome,
    },
    /// An MCP tool call starts (the block's `tool`), with the arguments that are sent
    /// (pretty-printed JSON; `edited`: a person changed them).
    ToolStarted {
        block_id: BlockId,
        tool: ToolRef,
        arguments: String,
        edited: bool,
    },
    /// An MCP tool call ended: `output` is what the model gets (the tool's text, its
    /// structured content, or why it failed); `ok` is false when the tool reported an
    /// error, the server failed, or the call timed out or was interrupted.
    ToolFinished {
        block_id: BlockId,
        ok: bool,
        output: String,
        duration_ms: u64,
    },
    /// Kernels were restarted on request (`Op::RestartKernels`); `note` says which.
    KernelsRestarted {
        language: Option<Language>,
        note: String,
    },
}

/// What became of a caller's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum CallOutcome {
    /// It ran: `code` is what ran, `edited` whether a person changed it first.
    Ran {
        result: Box<RunResult>,
        code: String,
        edited: bool,
    },
    /// It did not run, and why (`reason` is a sentence for the caller).
    NotRun { why: NotRun, reason: String },
}

/// Why a caller's code did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NotRun {
    /// A rule denies it.
    Denied,
    /// It needs a person's approval and nobody can give it.
    Declined,
    /// A person said no.
    Skipped,
    /// The caller cancelled it, or the engine stopped first.
    Cancelled,
    /// It cannot run: an unknown language, a bad timeout.
    Invalid,
}

/// Output bytes travel as bytes in the process and as (lossy) text in JSON.
mod lossy_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        Ok(String::deserialize(d)?.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_as_tagged_json() {
        let e = Event::ExecOutput {
            block_id: 3,
            data: b"hi\xff".to_vec(),
        };
        let json = serde_json::to_string(&e).unwrap();
        assert_eq!(
            json,
            "{\"event\":\"exec_output\",\"block_id\":3,\"data\":\"hi\u{fffd}\"}"
        );
        let op: Op = serde_json::from_str(
            r#"{"op":"decision","block_id":2,"decision":{"decision":"skip","reason":"no"}}"#,
        )
        .unwrap();
        assert_eq!(
            op,
            Op::Decision {
                block_id: 2,
                decision: Decision::Skip {
                    reason: Some("no".into())
                }
            }
        );
    }
}
