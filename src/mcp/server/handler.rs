//! The MCP face of oi-tui's kernels: the tools (`execute`, `languages`, `interrupt`,
//! `reset`), the server's instructions, and tasks (SEP-2663: a client that declares the
//! tasks extension gets a task for each `execute`, which it polls with `tasks/get` and may
//! cancel). Each handler serves one MCP session; its backend (an own engine, or the
//! workbench's) starts at the session's first call.

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::*;
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use super::call::{self, Ask, ExecuteArgs, HOW_TO_ALLOW, Sink, Step};
use super::languages;
use super::result::{self, ExecuteOutput};
use super::session::{Backend, BackendFactory, SessionStart};
use crate::protocol::{CallOutcome, Language, NotRun};

/// What a calling model is told about this server.
pub const INSTRUCTIONS: &str = "oi-tui runs code on the user's machine in persistent kernels (Python, shell, JavaScript, R and others: `languages` lists what is installed, with versions). Call `execute` with a language and code; variables, imports and the working directory persist between calls for as long as this connection lives, so build on earlier calls instead of repeating them. Each block passes the user's policy first: blocks its rules deny never run, and a block that needs approval is shown to the user, who may approve it, decline it or edit it (the result then says so and shows the code that ran). A result with isError true did not run; its text says why and how the user can allow such blocks. Keep blocks short and print what you need; long output keeps its head and tail. Figures the code shows (matplotlib's plt.show() or figures left open, PIL's Image.show(), R plots) and image files it writes in the working directory come back listed in the result, and raster ones as image content; no display is needed. Use `interrupt` to stop a block that hangs, `reset` to start a language's kernel afresh (its state is lost), and set `timeout_secs` for anything that may run long.";

const LANGUAGES_DESCRIPTION: &str = "List the languages `execute` accepts here: for each, whether it can run on this machine, its interpreter and version, and other names it goes by. Call it once before using a language other than python or shell.";
const INTERRUPT_DESCRIPTION: &str = "Interrupt the block of this connection that runs now (like Ctrl-C), when it is of `language` (any language when omitted). The kernel and its state survive when the program handles the interrupt; the interrupted `execute` call returns what it printed.";
const RESET_DESCRIPTION: &str = "Restart the kernel of `language` (every kernel when omitted): its variables, imports and working directory are lost. Use it when a kernel is in a bad state.";

#[derive(Debug, Default, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct LanguageArg {
    /// The language (`python`, `shell`, ...); omit for every language.
    language: Option<String>,
}

#[derive(Debug, Default, Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct NoArgs {}

/// The tools this server offers; their descriptions name `host` when the kernels run there.
pub fn tools(host: Option<&str>) -> Vec<Tool> {
    let there = |text: &str| match host {
        Some(host) => text.replace("on this machine", &format!("on the host {host}, over SSH")),
        None => text.to_string(),
    };
    let mut execute = crate::engine::execute_tool(crate::engine::Audience::Caller);
    execute.description = there(&execute.description);
    let schema = match execute.parameters {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    vec![
        Tool::new(execute.name, execute.description, Arc::new(schema))
            .with_output_schema::<ExecuteOutput>(),
        Tool::new(
            "languages",
            there(LANGUAGES_DESCRIPTION),
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<NoArgs>()
        .with_output_schema::<languages::LanguagesOutput>(),
        Tool::new(
            "interrupt",
            INTERRUPT_DESCRIPTION,
            Arc::new(JsonObject::new()),
        )
        .with_input_schema::<LanguageArg>(),
        Tool::new("reset", RESET_DESCRIPTION, Arc::new(JsonObject::new()))
            .with_input_schema::<LanguageArg>(),
    ]
}

/// One MCP session's handler.
#[derive(Clone)]
pub struct Handler {
    factory: BackendFactory,
    backend: Arc<tokio::sync::OnceCell<Arc<dyn Backend>>>,
    tasks: TaskManager,
    /// The newest protocol version served (HTTP stays at 2025-11-25, whose sessions keep a
    /// client's kernels between requests).
    newest: &'static ProtocolVersion,
    /// The host the kernels run on, when not this machine (`oi-tui mcp --on HOST`).
    remote: Option<crate::exec::remote::SshTarget>,
}

impl Handler {
    /// A handler whose backend `factory` makes at the first call; `tasks` is shared by every
    /// handler of a server (over HTTP a handler may not outlive a request).
    pub fn new(
        factory: BackendFactory,
        tasks: TaskManager,
        newest: &'static ProtocolVersion,
    ) -> Self {
        Handler {
            factory,
            backend: Arc::new(tokio::sync::OnceCell::new()),
            tasks,
            newest,
            remote: None,
        }
    }

    /// Kernels on `remote` (said in the instructions and tools the client reads, and asked
    /// for the languages there).
    pub fn on(mut self, remote: Option<crate::exec::remote::SshTarget>) -> Self {
        self.remote = remote;
        self
    }

    /// The backend, when the session has made one.
    pub fn started(&self) -> Option<Arc<dyn Backend>> {
        self.backend.get().cloned()
    }

    async fn backend(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<dyn Backend>, String> {
        let start = SessionStart {
            caller: caller(context),
            can_ask: can_elicit(context),
        };
        let factory = self.factory.clone();
        self.backend
            .get_or_try_init(|| async move {
                tokio::task::spawn_blocking(move || factory(&start))
                    .await
                    .map_err(|e| format!("the session could not start: {e}"))?
            })
            .await
            .cloned()
    }

    async fn execute(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args: ExecuteArgs = parse(request.arguments)?;
        let backend = match self.backend(&context).await {
            Ok(backend) => backend,
            Err(e) => return Ok(not_run(NotRun::Cancelled, format!("Not run: {e}")).into()),
        };
        let caller = caller(&context);
        let modern = is_modern(&context);
        let answered = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(call::APPROVAL_KEY))
            .map(|v| {
                serde_json::to_value(v)
                    .map(|v| call::answer(&v))
                    .unwrap_or(false)
            });
        let ask = if backend.person_approves() {
            Ask::Person
        } else if !can_elicit(&context) {
            Ask::Nobody(format!(
                "Not run: this block needs the user's approval, and this client cannot ask the user (it did not declare the elicitation capability). {HOW_TO_ALLOW}"
            ))
        } else if modern {
            Ask::InputRequired(answered)
        } else {
            Ask::Elicit(context.peer.clone())
        };
        let wants_task = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if wants_task {
            let ask = match ask {
                Ask::InputRequired(None) => Ask::Nobody(format!(
                    "Not run: this block needs the user's approval, which cannot be asked for inside a task at this protocol version; call `execute` without a task to be asked. {HOW_TO_ALLOW}"
                )),
                other => other,
            };
            let task = self.tasks.spawn(
                TaskOptions::new().with_poll_interval_ms(200),
                move |ctx| {
                    Box::pin(async move {
                        let ct = CancellationToken::new();
                        let watch = {
                            let ct = ct.clone();
                            let ctx = ctx.clone();
                            tokio::spawn(async move {
                                ctx.cancelled().await;
                                ct.cancel();
                            })
                        };
                        let step =
                            call::run(backend, &caller, &args, ask, Sink::Task(ctx), ct.clone())
                                .await;
                        watch.abort();
                        match step {
                            // Cancelled through `tasks/cancel`: interrupted, or never run.
                            Step::Done(_) if ct.is_cancelled() => Err(TaskExit::Cancelled),
                            Step::Done(outcome) => Ok(result::call_result(&outcome)),
                            Step::InputRequired(_) => Ok(not_run(
                                NotRun::Declined,
                                format!("Not run: approval cannot be asked for in a task. {HOW_TO_ALLOW}"),
                            )),
                        }
                    })
                },
            );
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        let sink = match context.meta.get_progress_token() {
            Some(token) => Sink::Progress {
                peer: context.peer.clone(),
                token,
            },
            None => Sink::None,
        };
        match call::run(backend, &caller, &args, ask, sink, context.ct.clone()).await {
            Step::Done(outcome) => Ok(result::call_result(&outcome).into()),
            Step::InputRequired(requests) => {
                Ok(InputRequiredResult::from_input_requests(requests).into())
            }
        }
    }

    /// The name of the host the kernels run on, if not this machine.
    fn host(&self) -> Option<&str> {
        self.remote.as_ref().map(|t| t.name.as_str())
    }

    async fn languages(&self) -> CallToolResult {
        let found = match &self.remote {
            None => languages::languages().await,
            Some(target) => match languages::on_host(target).await {
                Ok(found) => found,
                Err(e) => {
                    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
                        "The languages on {} cannot be listed: {e}",
                        target.name
                    ))]);
                    result.is_error = Some(true);
                    return result;
                }
            },
        };
        let structured = serde_json::to_value(languages::LanguagesOutput {
            languages: found.to_vec(),
        })
        .unwrap_or_default();
        let mut result = CallToolResult::structured(structured);
        result.content = vec![ContentBlock::text(languages::text(found))];
        result
    }

    async fn interrupt_or_reset(
        &self,
        name: &str,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let arg: LanguageArg = parse(request.arguments)?;
        let language = match arg
            .language
            .as_deref()
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            None => None,
            Some(name) => match Language::parse(name) {
                Some(lang) => Some(lang),
                None => {
                    return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                        "Unknown language {:?}: `languages` lists those that run here.",
                        crate::safe_text::visible_line(name)
                    ))]));
                }
            },
        };
        let backend = match self.backend(&context).await {
            Ok(backend) => backend,
            Err(e) => return Ok(CallToolResult::error(vec![ContentBlock::text(e)])),
        };
        let router = backend.router();
        if name == "interrupt" {
            return Ok(match router.interrupt(language) {
                Ok(done) => CallToolResult::success(vec![ContentBlock::text(done)]),
                Err(why) => CallToolResult::error(vec![ContentBlock::text(why)]),
            });
        }
        if backend.person_approves() {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "Not reset: these kernels belong to the session open in the person's oi-tui workbench, so only the person restarts them. Ask them, or run code that undoes what you need undone.",
            )]));
        }
        if !router.restart(language) {
            return Ok(CallToolResult::error(vec![ContentBlock::text(
                "oi-tui's engine has stopped: nothing to reset.",
            )]));
        }
        let which = language.map_or("Every kernel".to_string(), |l| {
            format!("The {} kernel", l.name())
        });
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "{which} restarts: its variables, imports and working directory are gone. The next call starts afresh."
        ))]))
    }
}

/// The client's name, as it gave it: shown safely, at most 64 characters, and never the
/// name oi-tui's own replay goes by (a client cannot pass its blocks off as a replay).
pub fn caller(context: &RequestContext<RoleServer>) -> String {
    let info = context.client_info();
    caller_name(info.as_ref().map(|i| i.name.as_str()))
}

fn caller_name(declared: Option<&str>) -> String {
    const MAX: usize = 64;
    let name = crate::safe_text::visible_line(declared.unwrap_or_default().trim());
    let name = match name.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name,
    };
    if name.is_empty() {
        "an MCP client".to_string()
    } else if name.eq_ignore_ascii_case(crate::protocol::REPLAY_CALLER) {
        format!("{name} (an MCP client)")
    } else {
        name
    }
}

fn can_elicit(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
}

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

fn parse<T: for<'de> Deserialize<'de>>(args: Option<JsonObject>) -> Result<T, McpError> {
    serde_json::from_value(serde_json::Value::Object(args.unwrap_or_default()))
        .map_err(|e| McpError::invalid_params(format!("bad arguments: {e}"), None))
}

fn not_run(why: NotRun, reason: String) -> CallToolResult {
    result::call_result(&CallOutcome::NotRun { why, reason })
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("oi-tui", env!("CARGO_PKG_VERSION")))
        .with_instructions(match self.host() {
            Some(host) => INSTRUCTIONS.replacen(
                "on the user's machine",
                &format!("on the host {host}, over SSH (not on the user's own machine)"),
                1,
            ),
            None => INSTRUCTIONS.to_string(),
        })
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(self.newest))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools(self.host())))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools(self.host()).into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        match name.as_str() {
            "execute" => self.execute(request, context).await,
            "languages" => Ok(self.languages().await.into()),
            "interrupt" | "reset" => Ok(self
                .interrupt_or_reset(&name, request, context)
                .await?
                .into()),
            other => Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}: the tools are execute, languages, interrupt and reset",
                    crate::safe_text::visible_line(other)
                ),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }
}

#[cfg(test)]
mod tests {
    use super::caller_name;

    #[test]
    fn caller_names_are_bounded_visible_and_never_the_replay() {
        assert_eq!(caller_name(Some("  claude-code ")), "claude-code");
        assert_eq!(caller_name(None), "an MCP client");
        assert_eq!(caller_name(Some("   ")), "an MCP client");
        assert_eq!(caller_name(Some("Replay")), "Replay (an MCP client)");
        let long = caller_name(Some(&"x".repeat(500)));
        assert_eq!(long.chars().count(), 65, "{long}");
        assert!(long.ends_with('…'));
        assert!(!caller_name(Some("a\u{1b}[2Jb")).contains('\u{1b}'));
    }
}
