//! Streamable HTTP: rmcp's `StreamableHttpService` served by hyper, behind a gate that
//! requires the bearer token (401 otherwise) and refuses a browser `Origin` or a `Host` that
//! is not loopback (403: DNS rebinding). Every MCP session gets its own handler and so its
//! own backend; tasks are shared by the server (a handler lives only as long as its session).

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::{Request, Response, StatusCode, body::Incoming, service::service_fn};
use hyper_util::rt::TokioIo;
use rmcp::model::ProtocolVersion;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use tokio_util::sync::CancellationToken;

use super::handler::Handler;
use super::session::BackendFactory;

type Body = BoxBody<Bytes, Infallible>;

/// Where to listen: a bare port means 127.0.0.1:PORT; `localhost:PORT` too. Returns the
/// address and whether it is loopback (a non-loopback one must have been given explicitly).
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = text.strip_prefix("localhost:") {
        return port
            .parse::<u16>()
            .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p))
            .map_err(|_| format!("{text:?}: the port must be a number from 0 to 65535"));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!("{text:?} is not an address to listen on: give PORT, 127.0.0.1:PORT or [::1]:PORT")
    })
}

/// Whether an `Origin` header names a loopback page (`http://127.0.0.1:3000`, `http://localhost`).
pub fn origin_is_local(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    host_is_local(rest.split('/').next().unwrap_or(""))
}

/// Whether a `Host` (`name[:port]`) is loopback.
pub fn host_is_local(host: &str) -> bool {
    let name = if let Some(v6) = host.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether an `Authorization` header carries the token (compared in constant time).
pub fn token_ok(header: Option<&str>, token: &str) -> bool {
    // The scheme's name is case-insensitive (RFC 7235): `bearer` is `Bearer`.
    let Some(given) = header.and_then(|h| {
        let (scheme, rest) = h.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then_some(rest)
    }) else {
        return false;
    };
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh random token (hex).
pub fn random_token() -> Result<String, String> {
    use std::io::Read;
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| format!("cannot make a token: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn reject(status: StatusCode, why: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(format!("{why}\n"))).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The gate in front of the MCP service: `None` lets a request through.
pub fn check(headers: &http::HeaderMap, token: &str, loopback: bool) -> Option<Response<Body>> {
    let auth = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !token_ok(auth, token) {
        let mut response = reject(
            StatusCode::UNAUTHORIZED,
            if auth.is_none() {
                "oi-tui: this MCP server needs its bearer token: send `Authorization: Bearer TOKEN` (the token oi-tui printed when it started, or [mcp_server] token / OI_TUI_MCP_TOKEN)."
            } else {
                "oi-tui: wrong bearer token."
            },
        );
        response.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
        return Some(response);
    }
    if let Some(origin) = headers.get(http::header::ORIGIN)
        && !origin.to_str().is_ok_and(origin_is_local)
    {
        return Some(reject(
            StatusCode::FORBIDDEN,
            "oi-tui: requests from a web page that is not on this machine are refused (Origin).",
        ));
    }
    if loopback
        && let Some(host) = headers.get(http::header::HOST)
        && !host.to_str().is_ok_and(host_is_local)
    {
        return Some(reject(
            StatusCode::FORBIDDEN,
            "oi-tui: the Host header must name this machine (localhost or 127.0.0.1).",
        ));
    }
    None
}

/// Serves MCP over Streamable HTTP on `listener` until `stop` is cancelled. Each MCP
/// session's backend comes from `factory`. Protocol versions up to 2025-11-25 are served (a
/// client of 2026-07-28 falls back to them), because their sessions keep a client's kernels
/// between requests.
pub async fn serve(
    listener: tokio::net::TcpListener,
    token: String,
    factory: BackendFactory,
    stop: CancellationToken,
    host: Option<crate::exec::remote::SshTarget>,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let loopback = local.ip().is_loopback();
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.child_token())
        .with_sse_keep_alive(Some(std::time::Duration::from_secs(15)));
    config = if loopback {
        config.with_allowed_hosts(["127.0.0.1", "localhost", "::1"])
    } else {
        // An address given explicitly: the bearer token guards it.
        config.disable_allowed_hosts()
    };
    let tasks = rmcp::task_manager::TaskManager::new();
    let mcp = StreamableHttpService::new(
        move || {
            Ok(Handler::new(
                factory.clone(),
                tasks.clone(),
                &ProtocolVersion::V_2025_11_25,
            )
            .on(host.clone()))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token = Arc::new(token);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    eprintln!("oi-tui: cannot accept a connection: {e}");
                    // Out of file descriptors, say: wait a little rather than spin.
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = stop.cancelled() => return Ok(()),
        };
        let mcp = mcp.clone();
        let token = token.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let mcp = hyper_util::service::TowerToHyperService::new(mcp.clone());
                let token = token.clone();
                async move {
                    if let Some(refused) = check(request.headers(), &token, loopback) {
                        return Ok::<_, Infallible>(refused);
                    }
                    let ending = request.method() == http::Method::DELETE;
                    let mut response = hyper::service::Service::call(&mcp, request).await?;
                    // A session ended on request: rmcp answers 202, which clients (the Python
                    // SDK) report as a failure; the request is done, with nothing to say.
                    if ending && response.status() == StatusCode::ACCEPTED {
                        *response.status_mut() = StatusCode::NO_CONTENT;
                    }
                    Ok(response)
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                _ = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_addresses() {
        assert_eq!(parse_listen("8765").ok(), "127.0.0.1:8765".parse().ok());
        assert_eq!(parse_listen("localhost:9").ok(), "127.0.0.1:9".parse().ok());
        assert_eq!(parse_listen("[::1]:80").ok(), "[::1]:80".parse().ok());
        assert_eq!(parse_listen("0.0.0.0:80").ok(), "0.0.0.0:80".parse().ok());
        assert!(parse_listen("nowhere").is_err_and(|e| e.contains("PORT")));
        assert!(parse_listen("99999").is_err());
    }

    #[test]
    fn origins_and_hosts() {
        assert!(origin_is_local("http://127.0.0.1:3000"));
        assert!(origin_is_local("http://localhost"));
        assert!(origin_is_local("https://[::1]:8080"));
        assert!(!origin_is_local("https://evil.example"));
        assert!(!origin_is_local("http://127.0.0.1.evil.example"));
        assert!(!origin_is_local("null"));
        assert!(host_is_local("127.0.0.1:8765"));
        assert!(host_is_local("LOCALHOST:1"));
        assert!(!host_is_local("evil.example:8765"));
    }

    #[test]
    fn tokens() {
        assert!(token_ok(Some("Bearer abc"), "abc"));
        assert!(token_ok(Some("bearer abc"), "abc"));
        assert!(!token_ok(Some("Basic abc"), "abc"));
        assert!(!token_ok(Some("Bearer abd"), "abc"));
        assert!(!token_ok(Some("Bearer ab"), "abc"));
        assert!(!token_ok(Some("abc"), "abc"));
        assert!(!token_ok(None, "abc"));
        let a = random_token().unwrap_or_default();
        assert_eq!(a.len(), 48);
        assert_ne!(a, random_token().unwrap_or_default());
    }

    #[test]
    fn the_gate() {
        let mut h = http::HeaderMap::new();
        assert_eq!(
            check(&h, "t", true).map(|r| r.status()),
            Some(StatusCode::UNAUTHORIZED)
        );
        h.insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_static("Bearer t"),
        );
        assert!(check(&h, "t", true).is_none());
        h.insert(
            http::header::ORIGIN,
            http::HeaderValue::from_static("https://evil.example"),
        );
        assert_eq!(
            check(&h, "t", true).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        h.insert(
            http::header::ORIGIN,
            http::HeaderValue::from_static("http://localhost:5173"),
        );
        h.insert(
            http::header::HOST,
            http::HeaderValue::from_static("attacker.example"),
        );
        assert_eq!(
            check(&h, "t", true).map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert!(check(&h, "t", false).is_none());
    }
}
