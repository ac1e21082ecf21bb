//! Reaching one server: starting it (stdio) or connecting to it (Streamable HTTP), the MCP
//! handshake within its start-up timeout, and errors in sentences a person can act on.
//!
//! A started server is the leader of its own process group, registered here, so that what it
//! started goes with it: when the connection is dropped (rmcp kills the group), and when
//! oi-tui leaves (an exit hook kills every group still registered). Its standard error is
//! drained into a short log, never onto oi-tui's terminal; the last lines explain a failure.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{ClientInitializeError, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};

use crate::config::mcp::{McpServerConfig, McpTransport};

/// A connection to a server.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// The variables a started server gets from oi-tui's environment, besides its `env_vars`
/// (as codex): enough to find programs and the user's home, and no secrets.
const PASSED_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ",
];

/// How many lines of a server's standard error are kept.
const STDERR_LINES: usize = 20;

/// The last lines a server wrote on its standard error.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        if let Ok(mut lines) = self.0.lock() {
            if lines.len() == STDERR_LINES {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }

    /// The last few lines, as one line for a message ("" when there are none).
    pub fn last(&self, n: usize) -> String {
        let lines = match self.0.lock() {
            Ok(lines) => lines.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        let skip = lines.len().saturating_sub(n);
        lines
            .into_iter()
            .skip(skip)
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// The process groups of the servers oi-tui started and that may still run.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());
static HOOK: std::sync::Once = std::sync::Once::new();

fn register(pgid: i32) {
    HOOK.call_once(|| crate::shutdown::on_exit(kill_all));
    if let Ok(mut groups) = GROUPS.lock() {
        groups.push(pgid);
    }
}

/// Kills every server oi-tui started (on the way out).
pub fn kill_all() {
    let groups = match GROUPS.try_lock() {
        Ok(mut g) => std::mem::take(&mut *g),
        Err(_) => return,
    };
    for pgid in groups {
        // SAFETY: killpg only sends a signal; a group that is gone gives ESRCH, ignored.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// Forgets a group that has been reaped (so that its number, reused, is not killed).
pub fn forget(pgid: i32) {
    if let Ok(mut groups) = GROUPS.lock() {
        groups.retain(|&g| g != pgid);
    }
}

/// A connected server: the connection, its process group (stdio) and its stderr.
pub struct Connected {
    pub client: Client,
    pub pgid: Option<i32>,
}

/// Starts or reaches a server and does the handshake, within its start-up timeout.
pub async fn connect(config: &McpServerConfig, stderr: &StderrTail) -> Result<Connected, String> {
    let timeout = config.startup_timeout;
    let secs = timeout.as_secs_f64();
    let handshake = async {
        match &config.transport {
            McpTransport::Stdio { .. } => stdio(config, stderr).await,
            McpTransport::Http { .. } => http(config).await,
        }
    };
    match tokio::time::timeout(timeout, handshake).await {
        Ok(result) => result,
        Err(_) => {
            let said = stderr.last(3);
            Err(format!(
                "it did not finish starting within {secs} s (startup_timeout_sec){}",
                if said.is_empty() {
                    String::new()
                } else {
                    format!("; it said: {said}")
                }
            ))
        }
    }
}

fn client_config() -> ClientConfig {
    // 2025-11-25: every server tested speaks it; the newest versions' discovery probe can
    // take 10 s against old servers.
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("oi-tui", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

async fn stdio(config: &McpServerConfig, stderr: &StderrTail) -> Result<Connected, String> {
    let McpTransport::Stdio {
        command,
        args,
        env,
        env_vars,
        cwd,
    } = &config.transport
    else {
        return Err("not a server oi-tui starts".to_string());
    };
    if let Some(dir) = cwd
        && !dir.is_dir()
    {
        return Err(format!("its cwd {} is not a directory", dir.display()));
    }
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).env_clear();
    for name in PASSED_VARS
        .iter()
        .copied()
        .chain(env_vars.iter().map(String::as_str))
    {
        if let Some(value) = std::env::var_os(name) {
            cmd.env(name, value);
        }
    }
    cmd.envs(env);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader());
    let (transport, err) = TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("its command `{command}` was not found (is it installed and on PATH?)")
            }
            std::io::ErrorKind::PermissionDenied => {
                format!("its command `{command}` may not be run (permission denied)")
            }
            _ => format!("its command `{command}` could not be started: {e}"),
        })?;
    let pgid = transport.id().and_then(|pid| i32::try_from(pid).ok());
    if let Some(pgid) = pgid {
        register(pgid);
    }
    if let Some(err) = err {
        let tail = stderr.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncBufReadExt;
            let mut lines = tokio::io::BufReader::new(err).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tail.push(line);
            }
        });
    }
    match client_config().serve(transport).await {
        Ok(client) => Ok(Connected { client, pgid }),
        Err(e) => {
            if let Some(pgid) = pgid {
                forget(pgid);
            }
            // Let the last words of a server that died reach the log.
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            Err(init_error(&e, &stderr.last(3)))
        }
    }
}

async fn http(config: &McpServerConfig) -> Result<Connected, String> {
    let McpTransport::Http {
        url,
        bearer_token_env_var,
        http_headers,
        env_http_headers,
    } = &config.transport
    else {
        return Err("not a server reached by url".to_string());
    };
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url.as_str());
    if let Some(var) = bearer_token_env_var {
        let token = std::env::var(var).ok().filter(|t| !t.trim().is_empty()).ok_or_else(|| {
            format!("bearer_token_env_var names {var}, which is not set (or empty) in oi-tui's environment")
        })?;
        transport = transport.auth_header(token.trim().trim_start_matches("Bearer ").to_string());
    }
    let mut headers = HashMap::new();
    let mut add = |name: &str, value: &str| -> Result<(), String> {
        let n = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let v = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of the header `{name}` is not valid in HTTP"))?;
        headers.insert(n, v);
        Ok(())
    };
    for (name, value) in http_headers {
        add(name, value)?;
    }
    for (name, var) in env_http_headers {
        // A header whose variable is unset is left out (as codex).
        if let Ok(value) = std::env::var(var) {
            add(name, &value)?;
        }
    }
    if !headers.is_empty() {
        transport = transport.custom_headers(headers);
    }
    // reqwest is built without a default TLS provider: install ring's before building it
    // (building a client without one panics).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .user_agent(concat!("oi-tui/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up HTTP: {e}"))?;
    let transport = StreamableHttpClientTransport::with_client(http, transport);
    match client_config().serve(transport).await {
        Ok(client) => Ok(Connected { client, pgid: None }),
        Err(e) if e.is_authorization_required() => Err(format!(
            "{url} refused oi-tui's credentials (HTTP 401){}",
            match bearer_token_env_var {
                Some(var) => format!(": check the token in {var}"),
                None =>
                    ": set bearer_token_env_var to the variable that holds its token".to_string(),
            }
        )),
        Err(e) => Err(init_error(&e, "")),
    }
}

/// What a failed handshake means, in a sentence (rmcp's own text names Rust types).
fn init_error(e: &ClientInitializeError, stderr: &str) -> String {
    let said = if stderr.is_empty() {
        String::new()
    } else {
        format!("; it said: {stderr}")
    };
    match e {
        ClientInitializeError::ConnectionClosed(_) => {
            format!("it exited during start-up{said}")
        }
        ClientInitializeError::TransportError { error, .. } => {
            let mut cause = error.to_string();
            let mut source: Option<&(dyn std::error::Error + 'static)> =
                std::error::Error::source(error);
            while let Some(s) = source {
                cause = s.to_string();
                source = s.source();
            }
            if cause.contains("Broken pipe") {
                format!("it exited during start-up{said}")
            } else {
                format!("it could not be reached: {cause}{said}")
            }
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("it refused the handshake: {}{said}", data.message)
        }
        ClientInitializeError::NoCompatibleProtocolVersion { .. } => {
            format!("it speaks no MCP version oi-tui speaks{said}")
        }
        other => format!("the handshake failed: {other}{said}"),
    }
}
