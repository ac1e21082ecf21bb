//! Ollama's native `/api/chat`, streamed as NDJSON. Tool calls arrive whole (arguments as a
//! JSON object), each one its own call.

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::openai::{function_tools, model_ids};
use super::transport::{self, Flow, Framing};
use super::{ChatRequest, LlmError, ModelInfo, ProviderConfig, Role, StreamEvent, join_url};

pub(super) fn body(config: &ProviderConfig, request: &ChatRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    // Images go on user messages: Ollama takes `images` on any message, but chat templates
    // render tool results as text, so a round's tool-result images follow its tool
    // messages in a user message of their own.
    let mut tool_images: Option<(Vec<String>, Vec<Value>)> = None;
    for (i, m) in request.messages.iter().enumerate() {
        if m.role != Role::Tool
            && let Some((text, images)) = tool_images.take()
        {
            messages.push(json!({"role": "user", "content": text.join("\n"), "images": images}));
        }
        let images = request.images_of(i);
        messages.push(match m.role {
            Role::User => match images {
                Some(images) => {
                    let mut content = m.content.clone();
                    if let Some(notes) = images.notes_text() {
                        content.push('\n');
                        content.push_str(&notes);
                    }
                    json!({"role": "user", "content": content, "images": data(images)})
                }
                None => json!({"role": "user", "content": m.content}),
            },
            Role::Tool => {
                if let Some(images) = images {
                    let (text, all) = tool_images.get_or_insert_with(Default::default);
                    text.push(images.text(m.tool_call_id.as_deref()));
                    all.extend(data(images));
                }
                // Ollama names the tool a result answers; the call's id finds it.
                let name = request
                    .messages
                    .iter()
                    .flat_map(|earlier| &earlier.tool_calls)
                    .find(|c| Some(&c.id) == m.tool_call_id.as_ref())
                    .map_or("execute", |c| c.name.as_str());
                json!({"role": "tool", "content": m.content, "tool_name": name})
            }
            Role::Assistant if m.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": m.content})
            }
            Role::Assistant => json!({
                "role": "assistant",
                "content": m.content,
                "tool_calls": m.tool_calls.iter().map(|c| json!({
                    "function": {
                        "name": c.name,
                        "arguments": serde_json::from_str::<Value>(&c.arguments)
                            .unwrap_or_else(|_| json!({})),
                    }
                })).collect::<Vec<_>>(),
            }),
        });
    }
    if let Some((text, images)) = tool_images {
        messages.push(json!({"role": "user", "content": text.join("\n"), "images": images}));
    }
    let mut body = json!({
        "model": config.spec.model,
        "messages": messages,
        "stream": true,
    });
    if !request.tools.is_empty() {
        body["tools"] = function_tools(&request.tools);
    }
    let mut options = serde_json::Map::new();
    if let Some(n) = request.context_window {
        options.insert("num_ctx".into(), json!(n));
    }
    if let Some(n) = request.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    if let Some(t) = request.temperature {
        options.insert("temperature".into(), json!(t));
    }
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    body
}

/// A result's images as Ollama wants them: base64, no `data:` prefix.
fn data(images: &super::vision::ResultImages) -> Vec<Value> {
    images.parts.iter().map(|p| json!(&*p.data)).collect()
}

pub(super) async fn stream(
    http: &reqwest::Client,
    config: &ProviderConfig,
    request: &ChatRequest,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<(), LlmError> {
    let url = join_url(&config.api_base, "api/chat");
    let mut parser = Parser::default();
    let done = transport::post_stream(
        http,
        config,
        &url,
        HeaderMap::new(),
        &body(config, request),
        Framing::Ndjson,
        on_event,
        |data, on| parser.line(config, data, on),
    )
    .await?;
    transport::complete(config, done)
}

#[derive(Default)]
pub(super) struct Parser {
    calls: usize,
}

impl Parser {
    pub(super) fn line(
        &mut self,
        config: &ProviderConfig,
        line: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Flow, LlmError> {
        let chunk = transport::parse_json(config, line)?;
        if let Some(error) = chunk.get("error").and_then(Value::as_str) {
            return Err(transport::stream_error(
                config,
                &format!("Ollama reported an error: {error}"),
            ));
        }
        let message = &chunk["message"];
        if let Some(text) = message.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            on_event(StreamEvent::Text(text.to_string()));
        }
        for call in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let function = &call["function"];
            let arguments = match &function["arguments"] {
                Value::String(s) => s.clone(),
                Value::Null => "{}".to_string(),
                other => other.to_string(),
            };
            let index = self.calls;
            self.calls += 1;
            on_event(StreamEvent::ToolCall {
                index,
                id: call
                    .get("id")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| Some(format!("call_{index}"))),
                name: function
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                arguments,
            });
        }
        if chunk.get("done").and_then(Value::as_bool) == Some(true) {
            on_event(StreamEvent::Usage {
                prompt_tokens: chunk["prompt_eval_count"].as_u64().unwrap_or(0),
                completion_tokens: chunk["eval_count"].as_u64().unwrap_or(0),
            });
            return Ok(Flow::Done);
        }
        Ok(Flow::More)
    }
}

pub(super) async fn list_models(
    http: &reqwest::Client,
    config: &ProviderConfig,
) -> Result<Vec<ModelInfo>, LlmError> {
    let url = join_url(&config.api_base, "api/tags");
    let answer = transport::get(http, config, &url, HeaderMap::new()).await?;
    Ok(model_ids(&answer, "models", "name"))
}
