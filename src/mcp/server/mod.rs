//! oi-tui as an MCP server: `execute`, `languages`, `interrupt` and `reset`, over stdio or
//! Streamable HTTP, each call run by the engine under its policy and sandbox.
//!
//! `handler` holds the tools and tasks, `call` one `execute` from the router's updates to its
//! outcome (progress, cancellation, approvals), `result` the answer's text and structured
//! form, `session` the backend a session runs on (an own engine per session here; the open
//! workbench passes its own), `http` the HTTP transport with its token and Origin checks.
//! Nothing but the protocol goes to standard output: notices go to standard error.

pub mod call;
pub mod handler;
pub mod http;
pub mod languages;
pub mod result;
pub mod router;
pub mod session;
pub mod workbench;

use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use tokio_util::sync::CancellationToken;

pub use handler::Handler;
pub use session::{Backend, BackendFactory, EngineBackend, SessionStart, engine_factory};
pub use workbench::{Serving, workbench};

use crate::config::Settings;

/// The variable that may hold the HTTP server's bearer token.
pub const TOKEN_VARIABLE: &str = "OI_TUI_MCP_TOKEN";

/// `oi-tui mcp`: serves on standard input and output until the client leaves (end of
/// input), then stops the kernels and returns 0.
pub async fn stdio(settings: Settings) -> i32 {
    notice_sandbox(&settings);
    let host = remote_host(&settings);
    let handler = Handler::new(
        engine_factory(settings),
        rmcp::task_manager::TaskManager::new(),
        &ProtocolVersion::V_2026_07_28,
    )
    .on(host);
    let kept = handler.clone();
    let status = match handler.serve(rmcp::transport::stdio()).await {
        Ok(service) => match service.waiting().await {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("oi-tui: the MCP session ended with an error: {e}");
                1
            }
        },
        // The client left before it began: nothing ran, nothing went wrong.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => 0,
        Err(e) => {
            eprintln!("oi-tui: the MCP client did not start a session: {e}");
            1
        }
    };
    stop(&kept).await;
    status
}

/// Stops a handler's engine, if it started one, and waits a little for its kernels.
async fn stop(handler: &Handler) {
    if let Some(backend) = handler.started()
        && let Some(task) = backend.stop()
    {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
}

/// The host the kernels run on, when not here.
fn remote_host(settings: &Settings) -> Option<crate::exec::remote::SshTarget> {
    match &settings.executor {
        crate::exec::Executor::Ssh(target) => Some(target.clone()),
        crate::exec::Executor::Local => None,
    }
}

fn notice_sandbox(settings: &Settings) {
    if let Some(host) = remote_host(settings).map(|t| t.name) {
        // The host's sandbox is said when its first session connects.
        eprintln!(
            "oi-tui: MCP server; approval {}, kernels on {host} (over SSH)",
            approval_name(settings)
        );
        return;
    }
    let sandbox = settings.sandbox();
    eprintln!(
        "oi-tui: MCP server; approval {}, {}",
        approval_name(settings),
        sandbox.summary()
    );
    if let Some(warning) = &sandbox.warning {
        eprintln!("oi-tui: warning: {warning}");
    }
}

fn approval_name(settings: &Settings) -> &'static str {
    match settings.approval_mode() {
        crate::protocol::ApprovalMode::Ask => "ask",
        crate::protocol::ApprovalMode::Rules => "rules",
        crate::protocol::ApprovalMode::Auto => "auto",
    }
}

/// The token clients must send: `[mcp_server] token`, `OI_TUI_MCP_TOKEN`, or a new random
/// one (`true`: made here, so it must be shown once).
pub fn token(
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(String, bool), String> {
    if let Some(token) = env(TOKEN_VARIABLE).filter(|t| !t.trim().is_empty()) {
        return Ok((token.trim().to_string(), false));
    }
    if let Some(token) = settings
        .mcp_server
        .token
        .clone()
        .filter(|t| !t.trim().is_empty())
    {
        return Ok((token.trim().to_string(), false));
    }
    Ok((http::random_token()?, true))
}

/// Where an HTTP server listens, and what clients must send.
pub struct Bound {
    pub listener: tokio::net::TcpListener,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub token: String,
    /// The token was made here: it is shown once.
    pub made: bool,
}

/// Binds `listen` (a bare PORT means 127.0.0.1:PORT) and settles the token. A non-loopback
/// address is said on standard error. Errors are sentences for the person.
pub async fn bind(settings: &Settings, listen: &str) -> Result<Bound, String> {
    let addr = http::parse_listen(listen)?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "oi-tui: warning: listening on {addr}, which other machines can reach: anyone with the token can run code here."
        );
    }
    let (token, made) = token(settings, &|k| std::env::var(k).ok())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr().unwrap_or(addr);
    Ok(Bound {
        listener,
        url: format!("http://{bound}/mcp"),
        token,
        made,
    })
}

/// How to add this server to Claude Code and to codex, one line each.
pub fn how_to_connect(url: &str, token: &str) -> [String; 2] {
    [
        format!(
            "Claude Code: claude mcp add --transport http oi-tui {url} --header \"Authorization: Bearer {token}\""
        ),
        format!(
            "codex (~/.codex/config.toml): [mcp_servers.oi-tui] url = \"{url}\" bearer_token_env_var = \"{TOKEN_VARIABLE}\" (with {TOKEN_VARIABLE} set to the token)"
        ),
    ]
}

/// `oi-tui mcp --listen ADDR`: serves Streamable HTTP until SIGTERM or Ctrl-C.
pub async fn http(settings: Settings, listen: &str) -> i32 {
    if let Err(e) = http::parse_listen(listen) {
        eprintln!("oi-tui: --listen {e}");
        return 2;
    }
    let bound = match bind(&settings, listen).await {
        Ok(bound) => bound,
        Err(e) => {
            eprintln!("oi-tui: {e}");
            return 1;
        }
    };
    let Bound {
        listener,
        url,
        token,
        made,
    } = bound;
    notice_sandbox(&settings);
    eprintln!("oi-tui: MCP over HTTP at {url}");
    if made {
        eprintln!(
            "oi-tui: bearer token (shown once; set [mcp_server] token or {TOKEN_VARIABLE} to choose it): {token}"
        );
        for line in how_to_connect(&url, &token) {
            eprintln!("oi-tui: {line}");
        }
    }
    let stop = CancellationToken::new();
    let on_signal = stop.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("oi-tui: stopping the MCP server");
        on_signal.cancel();
    });
    let host = remote_host(&settings);
    let result = http::serve(listener, token, engine_factory(settings), stop, host).await;
    // Every session's kernels go with the server.
    crate::exec::reaper::kill_all();
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("oi-tui: the MCP server stopped: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(file: &str) -> Settings {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, file).unwrap();
        let flags = crate::config::FlagSettings {
            config: Some(path),
            ..Default::default()
        };
        crate::config::load(&flags, &|_| None).unwrap()
    }

    #[test]
    fn the_token_comes_from_the_environment_then_the_config_then_chance() {
        let mut settings =
            settings("[mcp_server]\ntoken = \"from-config\"\nlisten = \"127.0.0.1:7777\"\n");
        assert_eq!(
            settings.mcp_server.listen.as_deref(),
            Some("127.0.0.1:7777")
        );
        let env = |k: &str| (k == TOKEN_VARIABLE).then(|| "from-env".to_string());
        assert_eq!(
            token(&settings, &env).ok(),
            Some(("from-env".into(), false))
        );
        assert_eq!(
            token(&settings, &|_| None).ok(),
            Some(("from-config".into(), false))
        );
        settings.mcp_server.token = None;
        let (made, fresh) = token(&settings, &|_| None).unwrap();
        assert!(fresh && made.len() >= 32);
    }

    #[test]
    fn an_unknown_key_in_the_table_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[mcp_server]\ntokn = \"x\"\n").unwrap();
        let flags = crate::config::FlagSettings {
            config: Some(path),
            ..Default::default()
        };
        let error = crate::config::load(&flags, &|_| None).unwrap_err();
        assert!(error.contains("tokn"), "{error}");
    }
}
