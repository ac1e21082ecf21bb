//! The engine: the agent loop behind every face. It takes `Op`s and emits `Event`s
//! (src/protocol.rs); it owns the conversation, the provider client, the approval gate and
//! the kernels. It knows nothing of terminals or widgets.
//!
//! State machine of a turn: the user's message goes into the history; each round sends the
//! (trimmed) history to the model and streams the reply; the reply's blocks (tool calls, or
//! fenced blocks when tools are off) are judged by the policy (src/policy/: a verdict sent
//! with `BlockProposed`), pass the approval gate one by one (a deny rule stops a block in
//! every mode; the approval mode decides what asks) and run; their
//! results go back into the history; the next round follows, until the model answers
//! without code, the round limit is reached, the person interrupts, or the provider fails.

pub mod agents_held;
pub mod agents_md;
mod calls;
mod executor;
mod fences;
mod gate;
mod history;
pub mod host;
mod memory;
mod prompt;
mod reply;
mod request;
mod rules;
mod sandbox;
mod tool_calls;
mod tools;
mod turn;
mod vision;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::exec::{KernelConfig, Kernels, Language};
use crate::llm::{Client, LlmError, Message, ProviderConfig};
use crate::protocol::{ApprovalMode, BlockId, Event, Op};

pub use fences::{Fence, all_fences, runnable_fences};
pub use history::{estimate_tokens, fit};
pub use tools::{Audience, TOOL_NAME, execute_tool, parse_arguments};

/// Everything the engine needs to know.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The model's server; None until a model is configured (messages then fail clearly,
    /// `!cmd` still works).
    pub provider: Option<ProviderConfig>,
    /// Offer the `execute` tool (else fenced blocks are the proposals).
    pub tools: bool,
    /// When blocks run without a question (the policy's deny rules apply in every mode).
    pub approval: ApprovalMode,
    /// Nobody can approve a block (headless without a terminal): what would ask is declined,
    /// and the model is told why.
    pub unattended: bool,
    /// The `[policy]` rules; the workspace root they judge deletes against is `kernels.cwd`.
    pub rules: crate::policy::Rules,
    /// The user's config file, where "always allow" rules are saved (None: none known).
    pub user_config: Option<PathBuf>,
    /// The sandbox asked for; the engine starts every kernel under it (`kernels`'s launch
    /// prefix and refusal are set from it).
    pub sandbox: crate::sandbox::SandboxSettings,
    /// Replaces the built-in system prompt.
    pub system_message: Option<String>,
    /// Added to the system prompt.
    pub custom_instructions: Option<String>,
    /// Add the nearest `AGENTS.md` (from `kernels.cwd` up to the repository root) to the
    /// system prompt (`--no-agents-md`, `agents_md = false`: false, and nothing is read).
    pub agents_md: bool,
    /// The context window, in tokens, the history is trimmed to.
    pub context_window: u32,
    /// Whether the context window was set by the user (and so is sent to servers that take
    /// it per request).
    pub context_window_set: bool,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Model rounds allowed for one user message.
    pub max_turns: u32,
    /// Stop a block that runs longer.
    pub block_timeout: Option<Duration>,
    /// Nobody can type into a running block: reads from its terminal see end-of-file.
    pub stdin_eof: bool,
    pub kernels: KernelConfig,
    /// Where oi-tui keeps what it learns (such as models that reject tools).
    pub data_dir: Option<PathBuf>,
    /// Replaces secrets in every event, every request to the model and every block output.
    pub redactor: crate::secrets::Redactor,
    /// Where the session is written as it happens, if anywhere.
    pub recorder: Option<Arc<crate::store::Recorder>>,
    /// The conversation so far, when a session is resumed.
    pub history: Vec<Message>,
    /// Tools from the user's MCP servers, offered beside `execute` (None: none).
    pub tool_host: Option<Arc<dyn host::ToolHost>>,
    /// Whether the images of a block's result go to the model (`--vision`).
    pub vision: crate::llm::vision::VisionMode,
    /// The executors `/on NAME` can name (`[executors.NAME]`).
    pub executors: std::collections::BTreeMap<String, crate::exec::remote::SshTarget>,
}

/// The running engine, as a face holds it.
pub struct EngineHandle {
    pub ops: mpsc::UnboundedSender<Op>,
    pub events: mpsc::UnboundedReceiver<Event>,
    pub task: tokio::task::JoinHandle<()>,
}

/// Starts the engine on the current tokio runtime.
pub fn spawn(config: EngineConfig) -> Result<EngineHandle, LlmError> {
    let client = match &config.provider {
        Some(provider) => Some(Client::new(provider.clone())?),
        None => None,
    };
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let sandbox = crate::sandbox::resolve(config.sandbox, &config.kernels.cwd);
    // Kernels on a host get its sandbox there, not this machine's (see `sandbox::remote`).
    let remote = config.kernels.executor.is_remote();
    let kernels = Arc::new(Kernels::new(KernelConfig {
        launch_prefix: if remote {
            Vec::new()
        } else {
            sandbox.prefix.clone()
        },
        launch_refusal: if remote {
            None
        } else {
            sandbox.refusal.clone()
        },
        remote_sandbox: config.sandbox,
        ..config.kernels.clone()
    }));
    let mut facts = prompt::Facts::here(&config.kernels.cwd, &sandbox);
    let agents = if config.agents_md {
        agents_md::load(
            &config.kernels.cwd,
            !config.history.is_empty(),
            config.context_window,
            config.data_dir.as_deref(),
        )
    } else {
        agents_md::Loaded {
            section: None,
            notice: None,
        }
    };
    facts.agents_md = agents.section;
    let memory = memory::Memory::new(config.data_dir.as_deref());
    let recorder = config.recorder.clone();
    if let Some(recorder) = &recorder {
        // Trouble with the store reaches the face; a weak sender, so that the face still
        // sees the stream end when the engine does.
        let events = events_tx.downgrade();
        recorder.set_listener(move |event| {
            if let Some(events) = events.upgrade() {
                let _ = events.send(event);
            }
        });
    }
    let history = config.history.clone();
    // A resumed session's blocks keep their ids; new ones come after them.
    let next_block = recorder.as_ref().map_or(1, |r| r.first_block());
    let policy = crate::policy::Policy::new(config.rules.clone(), config.kernels.cwd.clone());
    let vision_mode = config.vision;
    let agents_held = agents_held::Watch::start(&config.kernels.cwd, config.data_dir.as_deref());
    let engine = Engine {
        policy,
        sandbox,
        recorder,
        tools: config.tools,
        approval: config.approval,
        config,
        client,
        kernels,
        facts,
        memory,
        history,
        next_block,
        events: events_tx,
        ops: ops_rx,
        ops_closed: false,
        queued: VecDeque::new(),
        shutdown: false,
        context: Vec::new(),
        call: None,
        call_cancelled: false,
        moves: 0,
        callers_moves: std::collections::HashMap::new(),
        agents_md_notice: agents.notice,
        agents_held,
        host_ready: false,
        vision: vision::Vision::new(vision_mode),
    };
    let task = tokio::spawn(engine.run());
    Ok(EngineHandle {
        ops: ops_tx,
        events: events_rx,
        task,
    })
}

struct Engine {
    policy: crate::policy::Policy,
    /// The sandbox the kernels run under.
    sandbox: crate::sandbox::Resolved,
    recorder: Option<Arc<crate::store::Recorder>>,
    config: EngineConfig,
    client: Option<Client>,
    kernels: Arc<Kernels>,
    facts: prompt::Facts,
    memory: memory::Memory,
    history: Vec<Message>,
    tools: bool,
    approval: ApprovalMode,
    next_block: BlockId,
    events: mpsc::UnboundedSender<Event>,
    ops: mpsc::UnboundedReceiver<Op>,
    /// Every sender of ops is gone: stop listening.
    ops_closed: bool,
    /// Ops that arrived during a turn (messages, `!cmd`, reset, undo, another model), carried
    /// out in order when it ends; the messages at its front go with the turn's next request
    /// instead.
    queued: VecDeque<Op>,
    shutdown: bool,
    /// What the person ran with `!cmd` since their last message, for the model to see.
    context: Vec<String>,
    /// The caller's call being decided or run now (`Op::RunCode`), if any.
    call: Option<crate::protocol::CallId>,
    /// Its caller cancelled it (`Op::CancelCall`).
    call_cancelled: bool,
    /// How many times `/on` moved the kernels; and what it was at each caller's last block,
    /// so that a caller whose kernels moved since is told so.
    moves: u64,
    callers_moves: std::collections::HashMap<String, u64>,
    /// What to say at the start about the project's `AGENTS.md`.
    agents_md_notice: Option<String>,
    /// What blocks write to `AGENTS.md` is held back from later sessions.
    agents_held: agents_held::Watch,
    /// The tool host's servers have been waited for (before the first request).
    host_ready: bool,
    /// The images of results, for vision models.
    vision: vision::Vision,
}

impl Engine {
    async fn run(mut self) {
        if let Some(client) = &self.client
            && self.tools
            && self
                .memory
                .rejects_tools(&client.config().spec, &client.config().api_base)
        {
            self.tools = false;
            let spec = client.config().spec.to_string();
            self.emit(Event::Notice {
                message: format!(
                    "{spec} rejected tools before, so code is proposed as fenced blocks."
                ),
            });
        }
        self.configured();
        self.connect_at_start().await;
        if let Some(message) = self.agents_md_notice.take() {
            self.emit(Event::Notice { message });
        }
        while !self.shutdown {
            let op = match self.queued.pop_front() {
                Some(op) => op,
                None if self.ops_closed => break,
                None => match self.ops.recv().await {
                    Some(op) => op,
                    None => break,
                },
            };
            match op {
                Op::UserMessage { text } => self.turn(text).await,
                Op::Shell { command } => self.shell(command).await,
                Op::Reset => {
                    self.history.clear();
                    if let Some(recorder) = &self.recorder {
                        recorder.truncate(0);
                    }
                    self.context.clear();
                    self.kernels.shutdown().await;
                    self.emit(Event::HistoryChanged {
                        messages: 0,
                        note: "New conversation: the history is empty and the kernels restart with their next block.".to_string(),
                    });
                }
                Op::Undo => self.undo(),
                Op::SetModel { model } => self.set_model(&model),
                Op::SetSandbox { mode, network } => self.set_sandbox(mode, network).await,
                Op::SetExecutor { name } => self.set_executor(&name).await,
                Op::RunCode {
                    call,
                    caller,
                    language,
                    code,
                    timeout_secs,
                } => {
                    self.run_for_caller(call, caller, language, code, timeout_secs)
                        .await
                }
                Op::RestartKernels { language } => self.restart_kernels(language).await,
                Op::Shutdown => break,
                other => self.side_op(other),
            }
        }
        // Calls still waiting are answered: they will not run.
        for op in std::mem::take(&mut self.queued) {
            if let Op::RunCode { call, .. } = op {
                self.emit(calls::cancelled_before(call));
            }
        }
        self.kernels.shutdown().await;
        self.look_at_agents_md();
        if let Some(recorder) = &self.recorder {
            recorder.flush();
        }
    }

    /// After blocks ran: an `AGENTS.md` they changed is held back from later sessions, and
    /// that is said.
    fn look_at_agents_md(&mut self) {
        for path in self.agents_held.look() {
            self.emit(Event::Notice {
                message: format!(
                    "{} changed while blocks ran: later sessions leave it out of the model's prompt until you have read it (oi-tui trust --agents-md shows it and lets it through).",
                    crate::safe_text::visible(&path.display().to_string())
                ),
            });
        }
    }

    fn configured(&self) {
        let (model, api_base) = match &self.client {
            Some(client) => (
                client.config().spec.to_string(),
                client.config().api_base.clone(),
            ),
            None => (String::new(), String::new()),
        };
        self.emit(Event::SessionConfigured {
            model,
            api_base,
            tools: self.tools,
            approval: self.approval,
            unattended: self.config.unattended,
            cwd: self.config.kernels.cwd.display().to_string(),
            sandbox: Some(self.sandbox.status()),
            executor: Some(self.kernels.config().executor.name().to_string()),
        });
    }

    /// `!cmd`: runs in the shell kernel, shown like a block, remembered for the next message.
    async fn shell(&mut self, command: String) {
        let id = self.take_block_id();
        let (result, _) = self
            .execute(
                id,
                Language::Shell,
                command.clone(),
                false,
                self.config.block_timeout,
            )
            .await;
        self.context.push(format!(
            "The user ran `{}` in the shell:\n{}",
            command.trim(),
            result.for_model()
        ));
    }

    fn undo(&mut self) {
        let last_user = self
            .history
            .iter()
            .rposition(|m| m.role == crate::llm::Role::User && m.tool_call_id.is_none());
        let note = match last_user {
            Some(at) => {
                let dropped = self.history.len() - at;
                self.history.truncate(at);
                if let Some(recorder) = &self.recorder {
                    recorder.truncate(at);
                }
                format!(
                    "Dropped the last exchange ({dropped} messages). Kernel state (variables, files) is not undone."
                )
            }
            None => "Nothing to undo.".to_string(),
        };
        self.emit(Event::HistoryChanged {
            messages: self.history.len(),
            note,
        });
    }

    fn set_model(&mut self, model: &str) {
        let spec = match crate::llm::ModelSpec::parse(model) {
            Ok(spec) => spec,
            Err(message) => {
                self.emit(Event::Error {
                    kind: crate::protocol::ErrorKind::Config,
                    message,
                });
                return;
            }
        };
        let mut provider = match (&self.client, &self.config.provider) {
            (Some(client), _) => client.config().clone(),
            (None, Some(p)) => p.clone(),
            (None, None) => crate::llm::ProviderConfig {
                api_base: spec.provider.default_base(),
                spec: spec.clone(),
                api_key: spec
                    .provider
                    .key_variable()
                    .and_then(|v| std::env::var(v).ok())
                    .map(crate::llm::Secret::new),
                connect_timeout: Duration::from_secs(10),
                idle_timeout: Duration::from_secs(300),
                retry: crate::llm::RetryPolicy::default(),
                max_reply_bytes: crate::llm::DEFAULT_MAX_REPLY_BYTES,
                reply_timeout: crate::llm::DEFAULT_REPLY_TIMEOUT,
            },
        };
        if provider.spec.provider != spec.provider {
            provider.api_base = spec.provider.default_base();
            provider.api_key = spec
                .provider
                .key_variable()
                .and_then(|v| std::env::var(v).ok())
                .map(crate::llm::Secret::new);
        }
        provider.spec = spec;
        match Client::new(provider) {
            Ok(client) => {
                self.client = Some(client);
                self.tools = self.config.tools;
                self.configured();
                self.emit(Event::HistoryChanged {
                    messages: self.history.len(),
                    note: format!("Now talking to {model}; the conversation goes on."),
                });
            }
            Err(e) => self.emit(Event::Error {
                kind: crate::protocol::ErrorKind::Config,
                message: e.message,
            }),
        }
    }

    fn emit(&self, event: Event) {
        let event = self.config.redactor.clean_value(event);
        if let Some(recorder) = &self.recorder {
            recorder.event(&event);
        }
        let _ = self.events.send(event);
    }

    /// Adds to the conversation, and to the record.
    fn push_history(&mut self, message: Message) {
        if let Some(recorder) = &self.recorder {
            recorder.message(&message);
        }
        self.history.push(message);
    }

    /// Ops between turns that need no turn of their own: input and resize reach the kernels.
    fn side_op(&mut self, op: Op) {
        side_op(
            &self.kernels,
            &mut self.queued,
            &mut self.shutdown,
            &self.events,
            self.config.tool_host.as_deref(),
            op,
        );
    }
}

/// What an op that arrives in the middle of something does, as a function of the parts it
/// touches (so that it can run while the stream or the block borrows the engine).
fn side_op(
    kernels: &Kernels,
    queued: &mut VecDeque<Op>,
    shutdown: &mut bool,
    events: &mpsc::UnboundedSender<Event>,
    host: Option<&dyn host::ToolHost>,
    op: Op,
) {
    match op {
        // Answered at once, even in the middle of a turn (not a step of the session: it is
        // not recorded).
        Op::McpStatus => {
            let _ = events.send(Event::Notice {
                message: tool_calls::status(host),
            });
        }
        Op::Input { data } => {
            let _ = kernels.write_input(&data);
        }
        Op::Resize { rows, cols } => kernels.resize(rows, cols),
        Op::Shutdown => *shutdown = true,
        // Conversation changes wait for the turn to end, in the order they came (messages
        // at the front of the queue go with the turn's next request).
        op @ (Op::UserMessage { .. }
        | Op::Shell { .. }
        | Op::Reset
        | Op::Undo
        | Op::SetModel { .. }
        | Op::SetSandbox { .. }
        | Op::SetExecutor { .. }
        | Op::RestartKernels { .. }) => queued.push_back(op),
        // Another agent's block waits too; the person hears that it came.
        Op::RunCode {
            ref caller,
            ref language,
            ..
        } => {
            let _ = events.send(Event::Notice {
                message: format!(
                    "A {} block from {} (over MCP) waits until what runs now is done.",
                    crate::safe_text::visible_line(language),
                    crate::safe_text::visible_line(caller)
                ),
            });
            queued.push_back(op);
        }
        // A call that waits for its turn is dropped, and its caller answered; one that is
        // neither waiting nor running has been answered already.
        Op::CancelCall { call } => {
            let waiting = queued
                .iter()
                .position(|op| matches!(op, Op::RunCode { call: c, .. } if *c == call));
            if let Some(at) = waiting {
                queued.remove(at);
                let _ = events.send(calls::cancelled_before(call));
            }
        }
        // Nothing is running or waiting for a decision: stale.
        Op::Interrupt | Op::Decision { .. } => {}
    }
}
