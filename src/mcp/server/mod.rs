//! oi-tui as an MCP server: `execute`, `languages`, `interrupt` and `reset`, over stdio or
//! Streamable HTTP, each call run by the engine under its policy and sandbox.

pub mod router;

use crate::config::Settings;

/// `oi-tui mcp`: serves on standard input and output until the client leaves.
pub async fn stdio(settings: Settings) -> i32 {
    let _ = settings;
    eprintln!("oi-tui: the MCP server is not built yet");
    1
}

/// `oi-tui mcp --listen ADDR`: serves Streamable HTTP until stopped.
pub async fn http(settings: Settings, listen: &str) -> i32 {
    let _ = (settings, listen);
    eprintln!("oi-tui: the MCP server is not built yet");
    1
}

/// The open workbench serving MCP (`--mcp-listen`): where, and the router its event loop
/// feeds.
pub struct Serving {
    pub router: std::sync::Arc<router::Router>,
    /// What the person is told: the address, the token, how to connect.
    pub notice: String,
}

/// Starts serving MCP for the open workbench at `listen`: every client's calls go to the
/// workbench's engine through `router`, and its person decides them.
pub async fn workbench(
    settings: &Settings,
    listen: &str,
    router: std::sync::Arc<router::Router>,
) -> Result<Serving, String> {
    let _ = (settings, listen, router);
    Err("the MCP server is not built yet".to_string())
}
