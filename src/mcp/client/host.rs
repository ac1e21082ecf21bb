//! The user's servers as one `ToolHost` for the engine: each starts in the background, its
//! tools are offered once it is up (filtered by `enabled_tools` / `disabled_tools`, named and
//! sanitised for the providers), and calls go to it within its tool timeout. A server that
//! fails to start, or exits, is said once and left out; the session goes on without it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents, Tool};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::config::mcp::{McpServerConfig, McpTransport};
use crate::engine::host::{HostFuture, HostedTool, ToolHost, ToolReply};
use crate::protocol::{ToolDef, ToolRef};

use super::connect::{self, Client, StderrTail};
use super::names::{ToolNames, sanitize_input_schema};

/// What a server is doing.
#[derive(Clone)]
enum State {
    /// `enabled = false`.
    Disabled,
    Starting,
    Ready {
        client: Arc<Client>,
        /// Its tools, as it lists them, those the config offers.
        tools: Vec<Tool>,
    },
    /// It could not start, or it stopped: why.
    Failed(String),
}

struct Server {
    config: McpServerConfig,
    state: Mutex<State>,
    /// False while it starts.
    settled: watch::Sender<bool>,
    stderr: StderrTail,
    /// Its failure was told to the person.
    told: AtomicBool,
    /// When it began to start.
    born: std::time::Instant,
}

impl Server {
    fn state(&self) -> State {
        match self.state.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set(&self, state: State) {
        match self.state.lock() {
            Ok(mut s) => *s = state,
            Err(poisoned) => *poisoned.into_inner() = state,
        }
        self.settled.send_replace(true);
    }

    /// The server stopped answering (it exited): its tools go, and the person hears why.
    fn lost(&self, why: String) {
        self.told.store(false, Ordering::SeqCst);
        self.set(State::Failed(why));
    }

    /// What it is, for lists: its program (not its arguments, which may hold a token) or
    /// its URL (without a query).
    fn kind(&self) -> String {
        match &self.config.transport {
            McpTransport::Stdio { command, .. } => command.clone(),
            McpTransport::Http { url, .. } => {
                url.split(['?', '#']).next().unwrap_or(url).to_string()
            }
        }
    }
}

/// The user's MCP servers.
pub struct McpHost {
    servers: Vec<Arc<Server>>,
}

impl std::fmt::Debug for McpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHost")
            .field(
                "servers",
                &self
                    .servers
                    .iter()
                    .map(|s| &s.config.name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpHost {
    /// Starts every enabled server in the background (on the current tokio runtime).
    pub fn start(configs: &[McpServerConfig]) -> Arc<McpHost> {
        let servers: Vec<Arc<Server>> = configs
            .iter()
            .map(|config| {
                let enabled = config.enabled;
                Arc::new(Server {
                    config: config.clone(),
                    state: Mutex::new(if enabled {
                        State::Starting
                    } else {
                        State::Disabled
                    }),
                    settled: watch::channel(!enabled).0,
                    stderr: StderrTail::default(),
                    told: AtomicBool::new(false),
                    born: std::time::Instant::now(),
                })
            })
            .collect();
        for server in servers.iter().filter(|s| s.config.enabled) {
            let server = server.clone();
            tokio::spawn(async move {
                let state = match start(&server).await {
                    Ok(state) => state,
                    Err(why) => State::Failed(why),
                };
                server.set(state);
            });
        }
        Arc::new(McpHost { servers })
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|s| s.config.name == name)
    }

    /// Waits for every server still starting, then the state of each.
    pub async fn settled(&self) {
        for server in &self.servers {
            let mut rx = server.settled.subscribe();
            let _ = rx.wait_for(|settled| *settled).await;
        }
    }

    /// Closes every connection (servers that ignore it are killed after `grace`).
    pub async fn shutdown(&self, grace: Duration) {
        for server in &self.servers {
            if let State::Ready { client, .. } = server.state() {
                server.set(State::Failed("oi-tui closed the connection".to_string()));
                if let Some(mut client) = Arc::into_inner(client) {
                    let _ = client.close_with_timeout(grace).await;
                }
            }
        }
        connect::kill_all();
    }
}

/// Connects and lists the tools, within the start-up timeout.
async fn start(server: &Server) -> Result<State, String> {
    let started = std::time::Instant::now();
    let connected = connect::connect(&server.config, &server.stderr).await?;
    let left = server
        .config
        .startup_timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(500));
    let tools = match tokio::time::timeout(left, connected.client.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => return Err(format!("it did not list its tools: {}", service_error(&e))),
        Err(_) => {
            return Err(format!(
                "it did not list its tools within {} s (startup_timeout_sec)",
                server.config.startup_timeout.as_secs_f64()
            ));
        }
    };
    let tools = tools
        .into_iter()
        .filter(|t| server.config.offers(&t.name))
        .collect();
    Ok(State::Ready {
        client: Arc::new(connected.client),
        tools,
    })
}

impl ToolHost for McpHost {
    fn ready(&self) -> HostFuture<'_, Vec<String>> {
        Box::pin(async move {
            self.settled().await;
            self.failures()
        })
    }

    fn starting(&self) -> Vec<(String, Duration)> {
        self.servers
            .iter()
            .filter(|s| matches!(s.state(), State::Starting))
            .map(|s| {
                let left = s.config.startup_timeout.saturating_sub(s.born.elapsed());
                (s.config.name.clone(), left)
            })
            .collect()
    }

    fn tools(&self) -> Vec<HostedTool> {
        let mut names = ToolNames::default();
        let mut out = Vec::new();
        for server in &self.servers {
            let State::Ready { tools, .. } = server.state() else {
                continue;
            };
            for tool in tools {
                let name = names.insert(&server.config.name, &tool.name);
                let (parameters, _) =
                    sanitize_input_schema(&Value::Object((*tool.input_schema).clone()));
                let description = tool
                    .description
                    .as_deref()
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .map_or_else(
                        || {
                            format!(
                                "The tool `{}` of the MCP server \"{}\".",
                                tool.name, server.config.name
                            )
                        },
                        str::to_string,
                    );
                out.push(HostedTool {
                    def: ToolDef {
                        name,
                        description,
                        parameters,
                    },
                    tool: ToolRef {
                        server: server.config.name.clone(),
                        tool: tool.name.to_string(),
                    },
                });
            }
        }
        out
    }

    fn call(
        &self,
        tool: &ToolRef,
        arguments: Map<String, Value>,
    ) -> HostFuture<'_, Result<ToolReply, String>> {
        let tool = tool.clone();
        Box::pin(async move {
            let Some(server) = self.server(&tool.server) else {
                return Err(format!("there is no MCP server \"{}\"", tool.server));
            };
            let client = match server.state() {
                State::Ready { client, tools } => {
                    if !tools.iter().any(|t| t.name == tool.tool) {
                        return Err(format!(
                            "the MCP server \"{}\" offers no tool `{}`",
                            tool.server, tool.tool
                        ));
                    }
                    client
                }
                State::Failed(why) => {
                    return Err(format!(
                        "the MCP server \"{}\" is not running: {why}",
                        tool.server
                    ));
                }
                State::Starting => {
                    return Err(format!(
                        "the MCP server \"{}\" is still starting",
                        tool.server
                    ));
                }
                State::Disabled => {
                    return Err(format!(
                        "the MCP server \"{}\" is disabled (enabled = false)",
                        tool.server
                    ));
                }
            };
            let timeout = server.config.tool_timeout;
            let params = CallToolRequestParams::new(tool.tool.clone()).with_arguments(arguments);
            // Dropping the call (a timeout, an interrupt) tells the server to cancel it.
            match tokio::time::timeout(timeout, client.call_tool(params)).await {
                Ok(Ok(result)) => Ok(reply(&result)),
                Ok(Err(ServiceError::McpError(data))) => Ok(ToolReply {
                    text: format!("The tool failed: {}", data.message),
                    is_error: true,
                }),
                Ok(Err(e))
                    if client.is_transport_closed()
                        || matches!(e, ServiceError::TransportClosed) =>
                {
                    // Let its last words reach the log.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let said = server.stderr.last(3);
                    let why = format!(
                        "it exited during a call of `{}`{}",
                        tool.tool,
                        if said.is_empty() {
                            String::new()
                        } else {
                            format!("; it said: {said}")
                        }
                    );
                    server.lost(why.clone());
                    Err(format!(
                        "the MCP server \"{}\" stopped: {why}. Its tools are gone for this session.",
                        tool.server
                    ))
                }
                Ok(Err(e)) => Err(format!(
                    "the MCP server \"{}\" failed: {}",
                    tool.server,
                    service_error(&e)
                )),
                Err(_) => Err(format!(
                    "the MCP server \"{}\" did not answer within {} s (tool_timeout_sec = {}); the call was cancelled",
                    tool.server,
                    timeout.as_secs_f64(),
                    timeout.as_secs_f64()
                )),
            }
        })
    }

    fn timeout(&self, tool: &ToolRef) -> Duration {
        self.server(&tool.server)
            .map_or(crate::config::mcp::DEFAULT_TOOL_TIMEOUT, |s| {
                s.config.tool_timeout
            })
    }

    fn describe(&self) -> String {
        describe(self)
    }
}

impl McpHost {
    /// Failures not yet told, as sentences (each told once).
    fn failures(&self) -> Vec<String> {
        self.servers
            .iter()
            .filter_map(|s| match s.state() {
                State::Failed(why) if !s.told.swap(true, Ordering::SeqCst) => Some(format!(
                    "The MCP server \"{}\" is not available: {why}. The session goes on without its tools.",
                    s.config.name
                )),
                _ => None,
            })
            .collect()
    }

    /// Each server's state and tools, for `/mcp` and `oi-tui mcp list`.
    pub fn rows(&self) -> Vec<(String, String, String, Vec<String>)> {
        self.servers
            .iter()
            .map(|s| {
                let (state, tools) = match s.state() {
                    State::Disabled => ("disabled".to_string(), Vec::new()),
                    State::Starting => ("starting".to_string(), Vec::new()),
                    State::Ready { tools, .. } => (
                        format!(
                            "ready, {} tool{}",
                            tools.len(),
                            if tools.len() == 1 { "" } else { "s" }
                        ),
                        tools.iter().map(|t| t.name.to_string()).collect(),
                    ),
                    State::Failed(why) => (format!("failed: {why}"), Vec::new()),
                };
                (s.config.name.clone(), s.kind(), state, tools)
            })
            .collect()
    }
}

/// The servers as lines: name, what it is, its state, then its tools.
pub fn describe(host: &McpHost) -> String {
    let rows = host.rows();
    if rows.is_empty() {
        return "No MCP servers are configured.".to_string();
    }
    let mut out = String::from("MCP servers:");
    for (name, kind, state, tools) in rows {
        out.push_str(&format!("\n{name} ({kind}): {state}"));
        if !tools.is_empty() {
            out.push_str(&format!("\n  tools: {}", tools.join(", ")));
        }
    }
    out
}

/// What the model gets of a result: the text blocks; else the structured content; images,
/// audio and resources as notes (images are for a later version).
pub fn reply(result: &CallToolResult) -> ToolReply {
    let mut parts: Vec<String> = Vec::new();
    let mut text_seen = false;
    for block in &result.content {
        match block {
            ContentBlock::Text(t) => {
                text_seen = true;
                parts.push(t.text.clone());
            }
            ContentBlock::Image(i) => parts.push(format!(
                "[image: {}, {} bytes]",
                i.mime_type,
                base64_len(&i.data)
            )),
            ContentBlock::Audio(a) => parts.push(format!(
                "[audio: {}, {} bytes]",
                a.mime_type,
                base64_len(&a.data)
            )),
            ContentBlock::Resource(r) => match &r.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    parts.push(format!("[resource {uri}]\n{text}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => parts.push(format!(
                    "[resource {uri}: {}, {} bytes]",
                    mime_type.as_deref().unwrap_or("binary"),
                    base64_len(blob)
                )),
                _ => parts.push("[a resource oi-tui cannot read]".to_string()),
            },
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[resource link: {} ({})]", link.uri, link.name));
            }
            _ => parts.push("[content oi-tui cannot read]".to_string()),
        }
    }
    // The structured content repeats the text when a server sends both: only without text.
    if !text_seen && let Some(structured) = &result.structured_content {
        parts.insert(
            0,
            serde_json::to_string_pretty(structured).unwrap_or_else(|_| structured.to_string()),
        );
    }
    let is_error = result.is_error == Some(true);
    let mut text = parts.join("\n");
    if text.trim().is_empty() {
        text = if is_error {
            "The tool failed and said nothing.".to_string()
        } else {
            "(The tool returned nothing.)".to_string()
        };
    }
    ToolReply { text, is_error }
}

/// The size of base64 data, decoded.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.chars().rev().take_while(|c| *c == '=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// An rmcp service error as a sentence (its own text names Rust types).
fn service_error(e: &ServiceError) -> String {
    match e {
        ServiceError::McpError(data) => data.message.to_string(),
        ServiceError::TransportClosed => "the connection closed".to_string(),
        ServiceError::TransportSend(err) => {
            let mut cause = err.to_string();
            let mut source: Option<&(dyn std::error::Error + 'static)> =
                std::error::Error::source(err);
            while let Some(s) = source {
                cause = s.to_string();
                source = s.source();
            }
            format!("it could not be reached: {cause}")
        }
        ServiceError::UnexpectedResponse => {
            "it answered with something oi-tui does not handle (a task or a request for input)"
                .to_string()
        }
        ServiceError::Timeout { timeout } => {
            format!("no answer within {} s", timeout.as_secs_f64())
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn results_become_text_for_the_model() {
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
            ],
            "structuredContent": {"a": 1}
        }))
        .unwrap();
        let first = reply(&r);
        assert_eq!(first.text, "hello\n[image: image/png, 5 bytes]");
        assert!(!first.is_error);
        let r: CallToolResult = serde_json::from_value(json!({
            "content": [], "structuredContent": {"sum": 3}, "isError": false
        }))
        .unwrap();
        assert_eq!(reply_text(&r), "{\n  \"sum\": 3\n}");
        let r: CallToolResult =
            serde_json::from_value(json!({"content": [], "isError": true})).unwrap();
        let failed = reply(&r);
        assert!(failed.is_error);
        assert!(failed.text.contains("failed"));
    }

    fn reply_text(r: &CallToolResult) -> String {
        reply(r).text
    }
}
