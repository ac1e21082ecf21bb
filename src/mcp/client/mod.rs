//! oi-tui as an MCP client: the user's servers (`[mcp_servers.NAME]`), started in the
//! background, their tools offered to the model and every call approved like a block.

use crate::config::Settings;

/// `oi-tui mcp list`: the configured servers, their state and tools.
pub async fn list(settings: Settings) -> i32 {
    let _ = settings;
    eprintln!("oi-tui: the MCP client is not built yet");
    1
}
