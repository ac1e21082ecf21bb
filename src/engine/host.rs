//! Tools from outside the engine (the user's MCP servers): the small interface the engine
//! uses to offer them to the model and to call them. The engine knows nothing of MCP or of
//! how the tools are reached; `mcp::client` implements this for `[mcp_servers.NAME]`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::protocol::{ToolDef, ToolRef};

/// A boxed future, so that the trait stays object-safe.
pub type HostFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One tool a host offers now.
#[derive(Debug, Clone, PartialEq)]
pub struct HostedTool {
    /// The tool as the model sees it: `NAME__tool`, a description, a schema the providers
    /// accept.
    pub def: ToolDef,
    /// Which server and tool it is.
    pub tool: ToolRef,
}

/// What became of a call that reached the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReply {
    /// What the model gets: the text, else the structured content, with notes for images
    /// and other content it cannot read.
    pub text: String,
    /// The tool said it failed (`isError`).
    pub is_error: bool,
}

/// Tools the engine offers beside `execute`, and calls on them.
pub trait ToolHost: Send + Sync + std::fmt::Debug {
    /// Waits until no server is still starting (each at most its start-up timeout), and
    /// returns what to tell the person about servers that could not start, once each.
    fn ready(&self) -> HostFuture<'_, Vec<String>>;

    /// The servers still starting, with how long each may still take at most.
    fn starting(&self) -> Vec<(String, Duration)>;

    /// The tools available now, named for the model.
    fn tools(&self) -> Vec<HostedTool>;

    /// Calls a tool with these arguments (a JSON object), within the server's tool timeout.
    /// `Err` says, in a sentence for the model and the person, why there is no answer (a
    /// timeout, a crash, an unknown tool). Dropping the future cancels the call.
    fn call(
        &self,
        tool: &ToolRef,
        arguments: Map<String, Value>,
    ) -> HostFuture<'_, Result<ToolReply, String>>;

    /// How long a call to this tool may take (for the person: "times out after 60 s").
    fn timeout(&self, tool: &ToolRef) -> Duration;

    /// Each server, its state and its tools, as lines for the person (`/mcp`).
    fn describe(&self) -> String;
}
