//! What every provider shares: the HTTP client, sending with retries and backoff, turning
//! HTTP failures into clear errors, and reading a stream as frames (SSE events or NDJSON
//! lines) with an idle timeout between chunks.

use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;

use super::error::{body_message, shorten};
use super::{LlmError, LlmErrorKind, ProviderConfig, ProviderKind, StreamEvent};

/// How often and how patiently a failed request is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries after the first one.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles each time.
    pub base_delay: Duration,
    /// The longest wait, whatever the server's Retry-After says.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let backoff = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)));
        retry_after.unwrap_or(backoff).min(self.max_delay)
    }
}

pub(crate) fn http_client(connect_timeout: Duration) -> Result<reqwest::Client, LlmError> {
    // reqwest is built without a default TLS crypto provider; install ring's once. A second
    // install fails harmlessly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("oi-tui/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| LlmError::new(LlmErrorKind::Setup, format!("cannot set up HTTP: {e}")))
}

/// Sends a POST with a JSON body, trying again on 429, 5xx and connection failures.
pub(crate) async fn post_json(
    http: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    headers: HeaderMap,
    body: &serde_json::Value,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<reqwest::Response, LlmError> {
    send_with_retries(config, on_event, || {
        http.post(url).headers(headers.clone()).json(body)
    })
    .await
}

/// Sends a GET (model lists), with the same retries and errors.
pub(crate) async fn get(
    http: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    headers: HeaderMap,
) -> Result<serde_json::Value, LlmError> {
    let response = send_with_retries(config, &mut |_| {}, || {
        http.get(url).headers(headers.clone())
    })
    .await?;
    let text = tokio::time::timeout(config.idle_timeout, response.text())
        .await
        .map_err(|_| timeout_error(config))?
        .map_err(|e| stream_error(config, &format!("reading the answer failed: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        stream_error(
            config,
            &format!(
                "the answer is not JSON ({e}): {}",
                shorten(&key_redactor(config).clean(&text), 120)
            ),
        )
    })
}

/// Replaces the configured key in what a server sent back.
fn key_redactor(config: &ProviderConfig) -> crate::secrets::Redactor {
    crate::secrets::Redactor::from_values(config.api_key.iter().map(|k| k.expose().to_string()))
}

async fn send_with_retries(
    config: &ProviderConfig,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, LlmError> {
    let policy = config.retry;
    let mut attempt = 0;
    loop {
        if crate::shutdown::leaving() {
            // oi-tui is being stopped: no request (nor retry) goes out any more.
            return Err(LlmError::new(
                super::LlmErrorKind::Setup,
                "oi-tui is stopping: the request was not sent",
            ));
        }
        attempt += 1;
        let sent = tokio::time::timeout(config.idle_timeout, build().send()).await;
        let (reason, retry_after, error) = match sent {
            Err(_) => return Err(timeout_error(config)),
            Ok(Ok(response)) if response.status().is_success() => return Ok(response),
            Ok(Ok(response)) => {
                let status = response.status();
                let retry_after = retry_after(response.headers());
                // The start of it is enough to say what went wrong: an endless error page
                // is not read to its end.
                let body =
                    tokio::time::timeout(Duration::from_secs(10), read_capped(response, 64 * 1024))
                        .await
                        .unwrap_or_default();
                // A server may echo the Authorization header back (in a 401 body): the key
                // never reaches an error message.
                let body = key_redactor(config).clean(&body);
                let error = status_error(config, status, &body, attempt);
                if !retryable(status)
                    || matches!(
                        error.kind,
                        LlmErrorKind::ToolsUnsupported | LlmErrorKind::ImagesUnsupported
                    )
                {
                    return Err(error);
                }
                (
                    format!("{} {}", status.as_u16(), reason_text(status, &body)),
                    retry_after,
                    error,
                )
            }
            Ok(Err(e)) => {
                let error = connect_error(config, &e);
                if !(e.is_connect() || e.is_request() || e.is_timeout()) {
                    return Err(error);
                }
                (describe_reqwest(&e), None, error)
            }
        };
        if attempt > policy.max_retries {
            return Err(error);
        }
        let delay = policy.delay(attempt, retry_after);
        on_event(StreamEvent::Retrying {
            attempt,
            max: policy.max_retries,
            delay,
            reason,
        });
        tokio::time::sleep(delay).await;
    }
}

/// The body's text, up to `cap` bytes (what is past it is not read).
async fn read_capped(response: reqwest::Response, cap: usize) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk[..chunk.len().min(cap - body.len())]);
        if body.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

fn retryable(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
        || status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED
}

fn reason_text(status: StatusCode, body: &str) -> String {
    let message = body_message(body);
    if message.is_empty() {
        status.canonical_reason().unwrap_or("").to_string()
    } else {
        message
    }
}

/// `Retry-After` in seconds (the HTTP-date form is rare from model servers and ignored).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    let secs: f64 = value.trim().parse().ok()?;
    // A server's number, whatever it is, is no reason to wait more than an hour (or panic).
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(3600.0)))
}

fn where_(config: &ProviderConfig) -> String {
    format!("{} at {}", config.spec.provider, config.api_base)
}

fn status_error(
    config: &ProviderConfig,
    status: StatusCode,
    body: &str,
    attempts: u32,
) -> LlmError {
    let code = status.as_u16();
    let message = reason_text(status, body);
    let at = where_(config);
    let model = &config.spec.model;
    match code {
        401 | 403 => {
            let check = match config.spec.provider.key_variable() {
                Some(var) => format!("check the API key ({var} or --api-key)"),
                None => "check that the server accepts requests from this machine".to_string(),
            };
            LlmError::new(
                LlmErrorKind::Auth,
                format!("{at} refused the request ({code}: {message}); {check}."),
            )
        }
        404 => {
            let base_hint = match config.spec.provider {
                ProviderKind::OpenAi => {
                    " and that --api-base is right (OpenAI-compatible servers usually want it to end in /v1)"
                }
                ProviderKind::Ollama => " and that --api-base is Ollama's address",
                ProviderKind::Anthropic => " and that --api-base is right",
            };
            LlmError::new(
                LlmErrorKind::NotFound,
                format!(
                    "{at} answered 404 for model `{model}` ({message}); check the model name (`oi-tui --list-models` lists what the server offers){base_hint}."
                ),
            )
        }
        400 | 413 | 415 | 422 | 500 if super::vision::says_no_images(&message) => LlmError::new(
            LlmErrorKind::ImagesUnsupported,
            format!("{at} does not accept images for model `{model}` ({code}: {message})."),
        ),
        400 | 422 | 500 if mentions_tools(&message) => LlmError::new(
            LlmErrorKind::ToolsUnsupported,
            format!("{at} does not accept tools for model `{model}` ({code}: {message})."),
        ),
        _ if !retryable(status) => LlmError::new(
            LlmErrorKind::BadRequest,
            format!("{at} rejected the request ({code}: {message})."),
        ),
        _ => LlmError::new(
            LlmErrorKind::Server,
            format!(
                "{at} kept failing ({code}: {message}) after {attempts} attempt{}; try again later.",
                if attempts == 1 { "" } else { "s" }
            ),
        ),
    }
}

/// Whether an error message says that tools (function calling) are the problem.
fn mentions_tools(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("tool") || m.contains("function call") || m.contains("function_call")
}

fn connect_error(config: &ProviderConfig, e: &reqwest::Error) -> LlmError {
    let hint = match config.spec.provider {
        ProviderKind::Ollama => " Is Ollama running (`ollama serve`)?",
        _ => " Is the server running, and is --api-base right?",
    };
    LlmError::new(
        LlmErrorKind::Connect,
        format!(
            "cannot reach {} ({}).{hint}",
            where_(config),
            describe_reqwest(e)
        ),
    )
}

/// The innermost cause of a reqwest error, which is the one that says what happened.
fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(inner) = source.source() {
        source = inner;
    }
    let inner = source.to_string();
    if e.is_connect() && !inner.is_empty() {
        format!("connection failed: {inner}")
    } else if inner.is_empty() {
        e.to_string()
    } else {
        inner
    }
}

pub(crate) fn timeout_error(config: &ProviderConfig) -> LlmError {
    LlmError::new(
        LlmErrorKind::Timeout,
        format!(
            "{} sent nothing for {} s; the reply so far was kept. A large model on a slow machine may need a longer --idle-timeout.",
            where_(config),
            config.idle_timeout.as_secs()
        ),
    )
}

/// A size in words: `4 MB`, `512 KB`, `900 bytes`.
fn size_words(bytes: usize) -> String {
    match bytes {
        b if b >= 1024 * 1024 && b % (1024 * 1024) == 0 => format!("{} MB", b / (1024 * 1024)),
        b if b >= 1024 * 1024 => format!("{:.1} MB", b as f64 / (1024.0 * 1024.0)),
        b if b >= 1024 => format!("{} KB", b / 1024),
        b => format!("{b} bytes"),
    }
}

pub(crate) fn too_long_error(config: &ProviderConfig) -> LlmError {
    let limit = config.max_reply_bytes;
    LlmError::new(
        LlmErrorKind::TooLong,
        format!(
            "The reply from {} was cut at {}, the most one reply may have (max_reply_bytes = {limit} in the config file, or --max-reply-bytes); the part before the cut was kept. If the model really needs more, raise the limit; if it went on repeating itself, ask again.",
            where_(config),
            size_words(limit)
        ),
    )
}

pub(crate) fn reply_timeout_error(config: &ProviderConfig) -> LlmError {
    let secs = config.reply_timeout.as_secs_f64();
    LlmError::new(
        LlmErrorKind::TooLong,
        format!(
            "The reply from {} was cut after {}, the longest one reply may take (reply_timeout = {} in the config file, or --reply-timeout SECS); the part before the cut was kept.",
            where_(config),
            crate::protocol::format_duration(config.reply_timeout),
            if secs.fract() == 0.0 {
                format!("{secs:.0}")
            } else {
                format!("{secs}")
            }
        ),
    )
}

/// A single chunk of the stream larger than any reply may be: read no further.
fn frame_too_large(config: &ProviderConfig, size: usize) -> LlmError {
    LlmError::new(
        LlmErrorKind::TooLong,
        format!(
            "The stream from {} sent a single chunk of over {} without ending it, more than one reply may have (max_reply_bytes = {} in the config file, or --max-reply-bytes); the reply was cut there and the part before it was kept.",
            where_(config),
            size_words(size),
            config.max_reply_bytes
        ),
    )
}

/// The most bytes one reply's stream may carry. Each piece of a reply comes wrapped in an
/// envelope (for a token of 4 bytes, some 150 bytes of JSON), so this is many times the
/// reply's own limit; a server that streams envelopes without text (empty deltas, a tool's
/// name again and again) is cut here instead of at the reply's time limit.
fn max_stream(config: &ProviderConfig) -> usize {
    config.max_reply_bytes.saturating_mul(64)
}

/// A stream that went past `max_stream`.
fn stream_too_long(config: &ProviderConfig) -> LlmError {
    LlmError::new(
        LlmErrorKind::TooLong,
        format!(
            "The stream from {} went past {} with little or no reply in it (empty pieces, or the same piece again and again), 64 times the most one reply may have (max_reply_bytes = {} in the config file, or --max-reply-bytes); it was cut there and the reply so far was kept.",
            where_(config),
            size_words(max_stream(config)),
            config.max_reply_bytes
        ),
    )
}

/// The largest frame read: a reply's worth of text, escaped, and some room.
fn max_frame(config: &ProviderConfig) -> usize {
    config
        .max_reply_bytes
        .saturating_mul(2)
        .saturating_add(64 * 1024)
}

pub(crate) fn stream_error(config: &ProviderConfig, what: &str) -> LlmError {
    LlmError::new(
        LlmErrorKind::Stream,
        format!(
            "the stream from {} broke: {}; the reply so far was kept.",
            where_(config),
            // Often a server's own words: control characters are shown, never obeyed.
            crate::safe_text::visible(what)
        ),
    )
}

/// Posts a streaming request and hands each frame's data to `frame` until it says done or
/// the stream ends. Returns whether it said done.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn post_stream(
    http: &reqwest::Client,
    config: &ProviderConfig,
    url: &str,
    headers: HeaderMap,
    body: &serde_json::Value,
    framing: Framing,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
    mut frame: impl FnMut(&str, &mut (dyn FnMut(StreamEvent) + Send)) -> Result<Flow, LlmError>,
) -> Result<bool, LlmError> {
    let response = post_json(http, config, url, headers, body, on_event).await?;
    // The reply's size: its text and tool-call arguments, counted as they are delivered.
    let limit = config.max_reply_bytes;
    let mut used = 0usize;
    read_frames(config, response, framing, |f| {
        let mut over = false;
        let flow = {
            let mut counted = |event: StreamEvent| {
                if over {
                    return;
                }
                let size = match &event {
                    StreamEvent::Text(text) => text.len(),
                    StreamEvent::ToolCall { arguments, .. } => arguments.len(),
                    StreamEvent::Usage { .. } | StreamEvent::Retrying { .. } => 0,
                };
                if used + size > limit {
                    over = true;
                    return;
                }
                used += size;
                on_event(event);
            };
            frame(&f.data, &mut counted)?
        };
        if over {
            return Err(too_long_error(config));
        }
        Ok(flow)
    })
    .await
}

/// Ok when the reply is complete; else the error of a stream that stopped short.
pub(crate) fn complete(config: &ProviderConfig, complete: bool) -> Result<(), LlmError> {
    if complete {
        Ok(())
    } else {
        Err(stream_error(
            config,
            "the connection closed before the reply was complete",
        ))
    }
}

/// One unit of a stream: an SSE event (with its type) or an NDJSON line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub event: String,
    pub data: String,
}

/// Whether to keep reading after a frame.
pub(crate) enum Flow {
    More,
    Done,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Framing {
    Sse,
    Ndjson,
}

/// Reads the response as frames until `handle` says it is done or the stream ends.
/// Returns whether `handle` said done (a stream that just stops may be cut short).
pub(crate) async fn read_frames(
    config: &ProviderConfig,
    response: reqwest::Response,
    framing: Framing,
    mut handle: impl FnMut(Frame) -> Result<Flow, LlmError>,
) -> Result<bool, LlmError> {
    let idle = config.idle_timeout;
    match framing {
        Framing::Sse => {
            // The event being received is held whole by the parser: its size is watched
            // before the bytes reach it.
            let cap = max_frame(config);
            let most = max_stream(config);
            let mut guard = FrameGuard::default();
            let mut total = 0usize;
            let bytes = response.bytes_stream().map(move |chunk| match chunk {
                Ok(bytes) => {
                    total = total.saturating_add(bytes.len());
                    if total > most {
                        return Err(ReadError::TooMuch);
                    }
                    match guard.take(&bytes, cap) {
                        Ok(()) => Ok(bytes),
                        Err(size) => Err(ReadError::TooLarge(size)),
                    }
                }
                Err(e) => Err(ReadError::Http(describe_reqwest(&e))),
            });
            let mut events = bytes.eventsource();
            loop {
                let next = tokio::time::timeout(idle, events.next())
                    .await
                    .map_err(|_| timeout_error(config))?;
                let Some(event) = next else {
                    return Ok(false);
                };
                let event = event.map_err(|e| match e {
                    eventsource_stream::EventStreamError::Transport(ReadError::TooLarge(size)) => {
                        frame_too_large(config, size)
                    }
                    eventsource_stream::EventStreamError::Transport(ReadError::TooMuch) => {
                        stream_too_long(config)
                    }
                    other => stream_error(config, &other.to_string()),
                })?;
                if let Flow::Done = handle(Frame {
                    event: event.event,
                    data: event.data,
                })? {
                    return Ok(true);
                }
            }
        }
        Framing::Ndjson => {
            let mut bytes = response.bytes_stream();
            let mut pending: Vec<u8> = Vec::new();
            let most = max_stream(config);
            let mut total = 0usize;
            loop {
                let next = tokio::time::timeout(idle, bytes.next())
                    .await
                    .map_err(|_| timeout_error(config))?;
                let Some(chunk) = next else {
                    let rest = String::from_utf8_lossy(&pending).trim().to_string();
                    if !rest.is_empty()
                        && let Flow::Done = handle(Frame {
                            event: String::new(),
                            data: rest,
                        })?
                    {
                        return Ok(true);
                    }
                    return Ok(false);
                };
                let chunk = chunk.map_err(|e| stream_error(config, &describe_reqwest(&e)))?;
                total = total.saturating_add(chunk.len());
                if total > most {
                    return Err(stream_too_long(config));
                }
                // Only the new bytes are searched for line ends, and the lines taken are
                // removed once a chunk: a long line costs its length, not its square.
                let mut search = pending.len();
                pending.extend_from_slice(&chunk);
                let mut start = 0;
                while let Some(at) = pending[search..].iter().position(|&b| b == b'\n') {
                    let end = search + at;
                    let line = String::from_utf8_lossy(&pending[start..end])
                        .trim()
                        .to_string();
                    start = end + 1;
                    search = start;
                    if line.is_empty() {
                        continue;
                    }
                    if let Flow::Done = handle(Frame {
                        event: String::new(),
                        data: line,
                    })? {
                        return Ok(true);
                    }
                }
                pending.drain(..start);
                // A line is held whole until its end comes: not past a reply's worth.
                let cap = max_frame(config);
                if pending.len() > cap {
                    return Err(frame_too_large(config, cap));
                }
            }
        }
    }
}

/// Why reading an SSE stream stopped before its parser saw the bytes.
#[derive(Debug)]
enum ReadError {
    Http(String),
    /// An event grew past this many bytes without ending.
    TooLarge(usize),
    /// The stream as a whole went past `max_stream`.
    TooMuch,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Http(e) => f.write_str(e),
            ReadError::TooLarge(size) => write!(f, "an event of over {size} bytes"),
            ReadError::TooMuch => f.write_str("more bytes than one reply's stream may carry"),
        }
    }
}

/// Counts the bytes of the SSE event being received: those since the last empty line
/// (`\n\n`, `\r\n\r\n` or `\r\r` ends an event).
#[derive(Debug, Default)]
struct FrameGuard {
    /// Bytes of the current event, line ends left out.
    size: usize,
    /// The line being read is empty so far.
    empty_line: bool,
    /// The last byte was a `\r` (a `\n` after it ends the same line).
    after_cr: bool,
}

impl FrameGuard {
    /// Takes a chunk; Err with the cap when the event grows past `cap` bytes.
    fn take(&mut self, chunk: &[u8], cap: usize) -> Result<(), usize> {
        for &b in chunk {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    if self.empty_line {
                        self.size = 0;
                    }
                    self.empty_line = true;
                    self.after_cr = b == b'\r';
                }
                _ => {
                    self.empty_line = false;
                    self.after_cr = false;
                    self.size += 1;
                }
            }
        }
        if self.size > cap { Err(cap) } else { Ok(()) }
    }
}

/// Parses a frame's JSON, or says clearly that it is not JSON.
pub(crate) fn parse_json(
    config: &ProviderConfig,
    data: &str,
) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(data).map_err(|e| {
        stream_error(
            config,
            &format!("a chunk is not valid JSON ({e}): {}", shorten(data, 120)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_honours_retry_after_within_the_cap() {
        let p = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(1),
        };
        assert_eq!(p.delay(1, None), Duration::from_millis(100));
        assert_eq!(p.delay(2, None), Duration::from_millis(200));
        assert_eq!(p.delay(3, None), Duration::from_millis(400));
        assert_eq!(p.delay(9, None), Duration::from_secs(1));
        assert_eq!(
            p.delay(1, Some(Duration::from_millis(700))),
            Duration::from_millis(700)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(60))),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn the_frame_guard_counts_the_event_being_received() {
        let mut g = FrameGuard::default();
        // Events end at an empty line, whatever the line ends.
        for ending in ["\n\n", "\r\n\r\n", "\r\r"] {
            for _ in 0..100 {
                let event = format!("data: {}{ending}", "x".repeat(50));
                assert_eq!(g.take(event.as_bytes(), 100), Ok(()), "{ending:?}");
            }
        }
        // Lines of one event add up, and the chunks of one line too.
        assert_eq!(g.take(b"data: 1234\r\ndata: 5678\r\n", 100), Ok(()));
        assert_eq!(g.take(&[b'y'; 60], 100), Ok(()));
        assert_eq!(g.take(&[b'y'; 60], 100), Err(100));
        assert_eq!(size_words(4 * 1024 * 1024), "4 MB");
        assert_eq!(size_words(1536), "1 KB");
    }

    #[test]
    fn tool_rejections_are_recognised() {
        assert!(mentions_tools(
            "registry.ollama.ai/library/gemma:2b does not support tools"
        ));
        assert!(mentions_tools("tools param requires --jinja flag"));
        assert!(!mentions_tools("context length exceeded"));
    }
}
