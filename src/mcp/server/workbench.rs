//! The open workbench as an MCP server (`--mcp-listen`, or `[mcp_server] listen`): every
//! client's `execute` goes into the workbench's own engine through one router, appears in the
//! code pane with the caller's name, and waits for the person's y / e / n like any block; the
//! caller gets what ran (the edited code, when the person edited it). The kernels are the
//! person's: a client may interrupt its own block but not restart them.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::router::Router;
use super::session::{Backend, BackendFactory, SessionStart};
use super::{Bound, bind, how_to_connect, http};
use crate::config::Settings;

/// The open workbench serving MCP: the router its event loop feeds, and what to tell the
/// person. Serving stops when it is dropped.
pub struct Serving {
    pub router: Arc<Router>,
    /// What the person is told, a line each: the address, the token, how to connect.
    pub notices: Vec<String>,
    stop: CancellationToken,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Every session shares the workbench's router; its person answers approvals.
struct Shared(Arc<Router>);

impl Backend for Shared {
    fn router(&self) -> &Arc<Router> {
        &self.0
    }

    fn person_approves(&self) -> bool {
        true
    }
}

/// Starts serving MCP for the open workbench at `listen`: every client's calls go to the
/// workbench's engine through `router`, and its person decides them.
pub async fn workbench(
    settings: &Settings,
    listen: &str,
    router: Arc<Router>,
) -> Result<Serving, String> {
    let Bound {
        listener,
        url,
        token,
        made,
    } = bind(settings, listen).await?;
    let shared: Arc<dyn Backend> = Arc::new(Shared(router.clone()));
    let factory: BackendFactory = Arc::new(move |_: &SessionStart| Ok(shared.clone()));
    let stop = CancellationToken::new();
    let serving = stop.clone();
    let served = token.clone();
    // (The person may move the kernels later with /on: clients are told where they start.)
    let host = super::remote_host(settings);
    tokio::spawn(async move {
        if let Err(e) = http::serve(listener, served, factory, serving, host).await {
            // The screen belongs to the workbench: the person hears of it when it closes.
            eprintln!("oi-tui: the MCP server stopped: {e}");
        }
    });
    // A token of the person's own is not put on the screen; one made here must be.
    let (token_line, shown) = if made {
        (
            format!("its bearer token, made for this run, is {token}"),
            token.as_str(),
        )
    } else {
        (
            "clients send the token of `[mcp_server] token` or `OI_TUI_MCP_TOKEN`".to_string(),
            "TOKEN",
        )
    };
    let [claude, codex] = how_to_connect(&url, shown);
    let notices = vec![
        format!(
            "Serving MCP at {url}: blocks other agents send appear here with their name and wait for your decision; {token_line}."
        ),
        claude,
        codex,
    ];
    Ok(Serving {
        router,
        notices,
        stop,
    })
}
