//! oi-tui as an MCP client: the user's servers (`[mcp_servers.NAME]`), started in the
//! background, their tools offered to the model beside `execute` (`NAME__tool`) and every
//! call approved like a block (the engine's business, through `engine::host::ToolHost`).
//! This folder speaks MCP (rmcp) and nothing else: `connect` reaches one server, `host`
//! holds them all for the engine, `names` makes names and schemas the providers accept.

pub mod connect;
pub mod host;
pub mod names;

use std::sync::{Arc, Mutex};

pub use host::McpHost;

use crate::config::Settings;

/// The servers of this process: started once, shared by every session it opens (the
/// workbench opens a new one on /reset and on resume), so that they start once.
static SHARED: Mutex<Option<Arc<McpHost>>> = Mutex::new(None);

/// The tool host for a session: the configured servers (started now, in the background, the
/// first time), or None when none is configured. Call it on a tokio runtime.
pub fn host_for(settings: &Settings) -> Option<Arc<dyn crate::engine::host::ToolHost>> {
    if settings.mcp_servers.is_empty() {
        return None;
    }
    let mut shared = match SHARED.lock() {
        Ok(shared) => shared,
        Err(poisoned) => poisoned.into_inner(),
    };
    let host = shared
        .get_or_insert_with(|| McpHost::start(&settings.mcp_servers))
        .clone();
    Some(host)
}

/// `oi-tui mcp list`: the configured servers, their state and tools. Each enabled server is
/// started (within its start-up timeout) to list its tools, then stopped.
pub async fn list(settings: Settings) -> i32 {
    for warning in &settings.warnings {
        eprintln!("oi-tui: {warning}");
    }
    if settings.mcp_servers.is_empty() {
        let place = settings
            .config_path
            .clone()
            .or_else(crate::config::default_config_path)
            .map_or_else(|| "config.toml".to_string(), |p| p.display().to_string());
        crate::stdout::println(&format!(
            "No MCP servers are configured. Add one to {place}, for example:\n\n[mcp_servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]"
        ));
        return 0;
    }
    let host = McpHost::start(&settings.mcp_servers);
    host.settled().await;
    let rows = host.rows();
    let mut failed = false;
    for (name, kind, state, tools) in &rows {
        failed |= state.starts_with("failed");
        crate::stdout::println(&crate::safe_text::visible(&format!(
            "{name}  {kind}\n  {state}"
        )));
        for tool in tools {
            crate::stdout::println(&crate::safe_text::visible(&format!("  - {tool}")));
        }
    }
    host.shutdown(std::time::Duration::from_secs(2)).await;
    i32::from(failed)
}
