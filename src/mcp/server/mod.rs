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
