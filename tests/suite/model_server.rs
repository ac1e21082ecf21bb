//! A scripted model server that speaks OpenAI Chat Completions (SSE), Ollama's /api/chat
//! (NDJSON) and Anthropic Messages (SSE) on 127.0.0.1 with a free port. Each chat request
//! takes the next scripted reply; every request is recorded for assertions. Replies can be
//! text, tool calls streamed in small fragments, fenced blocks, or faults: an HTTP status
//! with Retry-After, a disconnect mid-stream, invalid JSON, slow chunks. It can refuse every
//! request that carries images (as a server of a model without vision does).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer to a chat request.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    text: Vec<String>,
    /// Tool calls: the tool's name and its arguments.
    tools: Vec<(String, Value)>,
    status: Option<(u16, String)>,
    retry_after: Option<u64>,
    /// Stop after this many chunks, without finishing the stream.
    disconnect_after: Option<usize>,
    /// Send a broken JSON chunk after this many chunks.
    invalid_after: Option<usize>,
    delay: Duration,
    /// After the scripted chunks, text chunks without end (until the client goes).
    endless: bool,
    /// Those endless chunks carry no text (`"delta": {}`).
    empty: bool,
    /// Characters per fragment of a tool call's arguments (default: 5, or 6 for Anthropic).
    fragment: Option<usize>,
}

impl Reply {
    /// Text, streamed a few characters at a time.
    pub fn text(text: &str) -> Reply {
        Reply::default().and_text(text)
    }

    pub fn and_text(mut self, text: &str) -> Reply {
        let chars: Vec<char> = text.chars().collect();
        self.text
            .extend(chars.chunks(7).map(|c| c.iter().collect::<String>()));
        self
    }

    /// A tool call `execute {language, code}`.
    pub fn tool(language: &str, code: &str) -> Reply {
        Reply::default().and_tool(language, code)
    }

    pub fn and_tool(mut self, language: &str, code: &str) -> Reply {
        self.tools.push((
            "execute".to_string(),
            json!({"language": language, "code": code}),
        ));
        self
    }

    /// A call of the tool `name` (an MCP tool, or one that does not exist) with these
    /// arguments.
    pub fn call(name: &str, arguments: Value) -> Reply {
        Reply::default().and_call(name, arguments)
    }

    pub fn and_call(mut self, name: &str, arguments: Value) -> Reply {
        self.tools.push((name.to_string(), arguments));
        self
    }

    pub fn status(code: u16, body: &str) -> Reply {
        Reply {
            status: Some((code, body.to_string())),
            ..Reply::default()
        }
    }

    pub fn retry_after(mut self, secs: u64) -> Reply {
        self.retry_after = Some(secs);
        self
    }

    pub fn disconnect_after(mut self, chunks: usize) -> Reply {
        self.disconnect_after = Some(chunks);
        self
    }

    pub fn invalid_json_after(mut self, chunks: usize) -> Reply {
        self.invalid_after = Some(chunks);
        self
    }

    pub fn slow(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Text that never ends: after the scripted text, the same chunk again and again, as
    /// fast as the client reads (or every `slow` delay), never finishing the reply.
    pub fn endless(mut self) -> Reply {
        self.endless = true;
        self
    }

    /// Endless chunks with no text in them: envelopes only.
    pub fn endless_empty(mut self) -> Reply {
        self.endless = true;
        self.empty = true;
        self
    }

    /// Tool-call arguments in fragments of `chars` characters.
    pub fn fragments_of(mut self, chars: usize) -> Reply {
        self.fragment = Some(chars.max(1));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every text the request carries (messages, tool results, system), joined.
    pub fn all_text(&self) -> String {
        self.body.to_string()
    }

    /// The images the request carries, in order, as (media type, base64 data): OpenAI
    /// `image_url` data URIs, Anthropic `image` blocks, Ollama `images` (taken as PNG).
    pub fn images(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        collect_images(&self.body, &mut found);
        found
    }

    pub fn has_images(&self) -> bool {
        !self.images().is_empty()
    }
}

fn collect_images(value: &Value, found: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if let Some(url) = map
                .get("image_url")
                .and_then(|u| u.get("url"))
                .and_then(Value::as_str)
                && let Some((head, data)) = url
                    .strip_prefix("data:")
                    .and_then(|rest| rest.split_once(";base64,"))
            {
                found.push((head.to_string(), data.to_string()));
            }
            if map.get("type").and_then(Value::as_str) == Some("image")
                && let Some(source) = map.get("source")
            {
                found.push((
                    source["media_type"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    source["data"].as_str().unwrap_or_default().to_string(),
                ));
            }
            if let Some(images) = map.get("images").and_then(Value::as_array) {
                for data in images.iter().filter_map(Value::as_str) {
                    found.push(("image/png".to_string(), data.to_string()));
                }
            }
            for (key, inner) in map {
                if key != "images" && key != "image_url" && key != "source" {
                    collect_images(inner, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_images(v, found)),
        _ => {}
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<Request>,
    models: Vec<String>,
    /// Answer requests with images with this status and body (taking no scripted reply).
    refuse_images: Option<(u16, String)>,
}

#[derive(Clone)]
pub struct ModelServer {
    pub addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
}

impl ModelServer {
    pub async fn start(replies: Vec<Reply>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            requests: Vec::new(),
            models: vec!["scripted-large".into(), "scripted-small".into()],
            refuse_images: None,
        }));
        let server = ModelServer { addr, state };
        let accept = server.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let server = accept.clone();
                tokio::spawn(async move {
                    let _ = server.serve(stream).await;
                });
            }
        });
        server
    }

    pub fn base(&self, provider: &str) -> String {
        match provider {
            "openai" => format!("http://{}/v1", self.addr),
            _ => format!("http://{}", self.addr),
        }
    }

    /// The chat requests received so far (model listings left out).
    pub fn chats(&self) -> Vec<Request> {
        self.state
            .lock()
            .expect("lock")
            .requests
            .iter()
            .filter(|r| r.method == "POST")
            .cloned()
            .collect()
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.lock().expect("lock").requests.clone()
    }

    /// Adds replies to the end of the script.
    pub fn script(&self, replies: Vec<Reply>) {
        self.state.lock().expect("lock").replies.extend(replies);
    }

    /// From now on, chat requests that carry images (in any of the three APIs) are answered
    /// with this status and body, and take no scripted reply.
    pub fn refuse_images(&self, code: u16, body: &str) {
        self.state.lock().expect("lock").refuse_images = Some((code, body.to_string()));
    }

    async fn serve(&self, mut stream: TcpStream) -> std::io::Result<()> {
        let Some(request) = read_request(&mut stream).await? else {
            return Ok(());
        };
        self.state
            .lock()
            .expect("lock")
            .requests
            .push(request.clone());
        let models = self.state.lock().expect("lock").models.clone();
        match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/v1/models") => {
                let data: Vec<Value> = models
                    .iter()
                    .map(|m| json!({"id": m, "object": "model"}))
                    .collect();
                respond_json(&mut stream, 200, &json!({"object": "list", "data": data})).await
            }
            ("GET", "/api/tags") => {
                let data: Vec<Value> = models.iter().map(|m| json!({"name": m})).collect();
                respond_json(&mut stream, 200, &json!({"models": data})).await
            }
            ("POST", "/v1/chat/completions" | "/api/chat" | "/v1/messages") => {
                let refusal = self.state.lock().expect("lock").refuse_images.clone();
                if let Some((code, body)) = refusal
                    && request.has_images()
                {
                    let head = format!(
                        "HTTP/1.1 {code} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(body.as_bytes()).await?;
                    return stream.shutdown().await;
                }
                let reply = self.state.lock().expect("lock").replies.pop_front();
                let Some(reply) = reply else {
                    return respond_json(
                        &mut stream,
                        500,
                        &json!({"error": {"message": "the script has no more replies"}}),
                    )
                    .await;
                };
                if let Some((code, body)) = &reply.status {
                    let retry = reply
                        .retry_after
                        .map(|s| format!("Retry-After: {s}\r\n"))
                        .unwrap_or_default();
                    let head = format!(
                        "HTTP/1.1 {code} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{retry}Connection: close\r\n\r\n",
                        body.len()
                    );
                    stream.write_all(head.as_bytes()).await?;
                    stream.write_all(body.as_bytes()).await?;
                    return stream.shutdown().await;
                }
                let (content_type, chunks) = match request.path.as_str() {
                    "/v1/chat/completions" => ("text/event-stream", openai_chunks(&reply)),
                    "/api/chat" => ("application/x-ndjson", ollama_chunks(&reply)),
                    _ => ("text/event-stream", anthropic_chunks(&reply)),
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).await?;
                for (i, chunk) in chunks.iter().enumerate() {
                    if reply.disconnect_after == Some(i) {
                        // Abrupt: no final chunk, no [DONE].
                        return Ok(());
                    }
                    if reply.invalid_after == Some(i) {
                        let broken = if content_type.contains("ndjson") {
                            "{\"message\": {\"content\": oops\n".to_string()
                        } else {
                            "data: {\"choices\": [oops\r\n\r\n".to_string()
                        };
                        stream.write_all(broken.as_bytes()).await?;
                        stream.flush().await?;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        return Ok(());
                    }
                    if !reply.delay.is_zero() {
                        tokio::time::sleep(reply.delay).await;
                    }
                    // The finishing chunks never come.
                    let closing = match request.path.as_str() {
                        "/v1/chat/completions" => 3,
                        "/api/chat" => 1,
                        _ => 2,
                    };
                    if reply.endless && i + closing >= chunks.len() {
                        break;
                    }
                    stream.write_all(chunk.as_bytes()).await?;
                    stream.flush().await?;
                }
                if reply.endless {
                    let piece = endless_chunk(&request.path, reply.empty);
                    let burst = piece.repeat(if reply.delay.is_zero() { 64 } else { 1 });
                    loop {
                        if !reply.delay.is_zero() {
                            tokio::time::sleep(reply.delay).await;
                        }
                        // Ends when the client closes the connection.
                        stream.write_all(burst.as_bytes()).await?;
                    }
                }
                stream.shutdown().await
            }
            _ => {
                respond_json(
                    &mut stream,
                    404,
                    &json!({"error": {"message": "no such route"}}),
                )
                .await
            }
        }
    }
}

async fn read_request(stream: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let header_end = loop {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).to_string();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[header_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok(Some(Request {
        method,
        path,
        headers,
        body,
    }))
}

async fn respond_json(stream: &mut TcpStream, code: u16, body: &Value) -> std::io::Result<()> {
    let text = body.to_string();
    let head = format!(
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        text.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}

/// One chunk of endless text in the API of `path` (with no text, when `empty`).
fn endless_chunk(path: &str, empty: bool) -> String {
    let text = if empty { "" } else { "and so on, " };
    match path {
        "/v1/chat/completions" => format!(
            "data: {}\r\n\r\n",
            json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
        ),
        "/api/chat" => format!(
            "{}\n",
            json!({"model": "m", "message": {"role": "assistant", "content": text}, "done": false})
        ),
        _ => format!(
            "event: content_block_delta\ndata: {}\n\n",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
        ),
    }
}

/// Splits text into fragments of a few characters.
fn fragments(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// OpenAI SSE, in the untidy shape real servers use: CRLF line endings, a keep-alive
/// comment, `id` and `name` repeated, explicit nulls, a usage-only final chunk, `[DONE]`.
fn openai_chunks(reply: &Reply) -> Vec<String> {
    let sse = |v: Value| format!("data: {v}\r\n\r\n");
    let mut chunks = vec![
        ": keep-alive\r\n\r\n".to_string(),
        sse(
            json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": null}, "finish_reason": null}]}),
        ),
    ];
    for t in &reply.text {
        chunks.push(sse(json!({"id": "c1", "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]})));
    }
    for (i, (name, arguments)) in reply.tools.iter().enumerate() {
        let id = format!("call_{i}");
        chunks.push(sse(json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]})));
        for piece in fragments(&arguments.to_string(), reply.fragment.unwrap_or(5)) {
            chunks.push(sse(json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": piece}}]}}]})));
        }
    }
    let finish = if reply.tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    chunks.push(sse(
        json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
    ));
    chunks.push(sse(json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}})));
    chunks.push("data: [DONE]\r\n\r\n".to_string());
    chunks
}

fn ollama_chunks(reply: &Reply) -> Vec<String> {
    let line = |v: Value| format!("{v}\n");
    let mut chunks: Vec<String> = reply
        .text
        .iter()
        .map(|t| line(json!({"model": "m", "message": {"role": "assistant", "content": t}, "done": false})))
        .collect();
    for (name, arguments) in &reply.tools {
        chunks.push(line(json!({"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": name, "arguments": arguments}}]}, "done": false})));
    }
    chunks.push(line(json!({"model": "m", "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 20, "eval_count": 10})));
    chunks
}

fn anthropic_chunks(reply: &Reply) -> Vec<String> {
    let sse = |kind: &str, v: Value| format!("event: {kind}\ndata: {v}\n\n");
    let mut chunks = vec![
        sse(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m1", "role": "assistant", "content": [], "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        ),
        sse("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !reply.text.is_empty() {
        chunks.push(sse("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        for t in &reply.text {
            chunks.push(sse("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}})));
        }
        chunks.push(sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (i, (name, arguments)) in reply.tools.iter().enumerate() {
        chunks.push(sse("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": {}}})));
        for piece in fragments(&arguments.to_string(), reply.fragment.unwrap_or(6)) {
            chunks.push(sse("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        chunks.push(sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop = if reply.tools.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    chunks.push(sse("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 10}})));
    chunks.push(sse("message_stop", json!({"type": "message_stop"})));
    chunks
}
