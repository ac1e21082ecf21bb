//! Tools as they are offered to a model or to an MCP client: a name, a description and a
//! JSON schema for the arguments. The engine defines them (the `execute` tool offered to the
//! model and the one offered over MCP are one definition); the providers only carry them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool: what a model or an MCP client is told about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    /// A JSON schema of `type: object` for the arguments.
    pub parameters: Value,
}
