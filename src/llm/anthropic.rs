//! Anthropic's Messages API, streamed as SSE. Tool calls are `tool_use` content blocks whose
//! input streams as partial JSON; results go back as `tool_result` blocks in a user turn.

use std::collections::HashMap;

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::openai::model_ids;
use super::transport::{self, Flow, Framing};
use super::{ChatRequest, LlmError, ModelInfo, ProviderConfig, Role, StreamEvent, join_url};

/// The Messages API needs a limit; this one is used when none is configured.
const DEFAULT_MAX_TOKENS: u32 = 4096;

fn url(config: &ProviderConfig, path: &str) -> String {
    let base = config.api_base.trim_end_matches('/');
    if base.ends_with("/v1") {
        join_url(base, path)
    } else {
        join_url(&join_url(base, "v1"), path)
    }
}

fn headers(config: &ProviderConfig) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
    if let Some(key) = &config.api_key
        && let Ok(mut value) = HeaderValue::from_str(key.expose())
    {
        value.set_sensitive(true);
        headers.insert("x-api-key", value);
    }
    headers
}

pub(super) fn body(config: &ProviderConfig, request: &ChatRequest) -> Value {
    // The API wants alternating turns: consecutive messages of one role are merged.
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        let images = request.images_of(i);
        let (role, mut blocks) = match m.role {
            Role::User => {
                let mut blocks = text_block(&m.content);
                if let Some(images) = images {
                    blocks.extend(image_blocks(images));
                }
                ("user", blocks)
            }
            Role::Tool => {
                let text = if m.content.is_empty() {
                    "(no output)"
                } else {
                    m.content.as_str()
                };
                // A tool result holds its images beside its text.
                let content = match images {
                    Some(images) => {
                        let mut parts = vec![json!({"type": "text", "text": text})];
                        parts.extend(image_blocks(images));
                        json!(parts)
                    }
                    None => json!(text),
                };
                (
                    "user",
                    vec![json!({
                        "type": "tool_result",
                        "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
                        "content": content,
                    })],
                )
            }
            Role::Assistant => {
                let mut blocks = text_block(&m.content);
                blocks.extend(m.tool_calls.iter().map(|c| {
                    json!({
                        "type": "tool_use",
                        "id": c.id,
                        "name": c.name,
                        "input": serde_json::from_str::<Value>(&c.arguments)
                            .unwrap_or_else(|_| json!({})),
                    })
                }));
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.append(&mut blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .filter(|(_, blocks)| !blocks.is_empty())
        .map(|(role, blocks)| json!({"role": role, "content": blocks}))
        .collect();
    let mut body = json!({
        "model": config.spec.model,
        "system": request.system,
        "messages": messages,
        "max_tokens": request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "stream": true,
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.parameters,
                })
            })
            .collect();
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// A result's images as `image` blocks (base64 sources), then what was not sent.
fn image_blocks(images: &super::vision::ResultImages) -> Vec<Value> {
    let mut blocks: Vec<Value> = images
        .parts
        .iter()
        .map(|p| {
            json!({
                "type": "image",
                "source": {"type": "base64", "media_type": p.media_type, "data": &*p.data},
            })
        })
        .collect();
    if let Some(notes) = images.notes_text() {
        blocks.push(json!({"type": "text", "text": notes}));
    }
    blocks
}

fn text_block(text: &str) -> Vec<Value> {
    if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

pub(super) async fn stream(
    http: &reqwest::Client,
    config: &ProviderConfig,
    request: &ChatRequest,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<(), LlmError> {
    let mut parser = Parser::default();
    let done = transport::post_stream(
        http,
        config,
        &url(config, "messages"),
        headers(config),
        &body(config, request),
        Framing::Sse,
        on_event,
        |data, on| parser.event(config, data, on),
    )
    .await?;
    transport::complete(config, done)
}

#[derive(Default)]
pub(super) struct Parser {
    /// Content-block index -> tool-call index.
    tools: HashMap<u64, usize>,
    prompt_tokens: u64,
}

impl Parser {
    pub(super) fn event(
        &mut self,
        config: &ProviderConfig,
        data: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Flow, LlmError> {
        if data.trim().is_empty() {
            return Ok(Flow::More);
        }
        let event = transport::parse_json(config, data)?;
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "message_start" => {
                self.prompt_tokens = event["message"]["usage"]["input_tokens"]
                    .as_u64()
                    .unwrap_or(0);
            }
            "content_block_start" => {
                let block = &event["content_block"];
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => {
                        let call = self.tools.len();
                        self.tools.insert(index, call);
                        on_event(StreamEvent::ToolCall {
                            index: call,
                            id: block.get("id").and_then(Value::as_str).map(str::to_string),
                            name: block
                                .get("name")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                            arguments: String::new(),
                        });
                    }
                    Some("text") => {
                        if let Some(text) = block.get("text").and_then(Value::as_str)
                            && !text.is_empty()
                        {
                            on_event(StreamEvent::Text(text.to_string()));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_delta" => {
                let delta = &event["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        if let Some(text) = delta.get("text").and_then(Value::as_str) {
                            on_event(StreamEvent::Text(text.to_string()));
                        }
                    }
                    Some("input_json_delta") => {
                        if let Some(&call) = self.tools.get(&index) {
                            on_event(StreamEvent::ToolCall {
                                index: call,
                                id: None,
                                name: None,
                                arguments: delta
                                    .get("partial_json")
                                    .and_then(Value::as_str)
                                    .unwrap_or_default()
                                    .to_string(),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(out) = event["usage"]["output_tokens"].as_u64() {
                    on_event(StreamEvent::Usage {
                        prompt_tokens: self.prompt_tokens,
                        completion_tokens: out,
                    });
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => {
                let message = event["error"]["message"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| event["error"].to_string());
                return Err(transport::stream_error(
                    config,
                    &format!("Anthropic reported an error: {message}"),
                ));
            }
            _ => {}
        }
        Ok(Flow::More)
    }
}

pub(super) async fn list_models(
    http: &reqwest::Client,
    config: &ProviderConfig,
) -> Result<Vec<ModelInfo>, LlmError> {
    let answer = transport::get(http, config, &url(config, "models"), headers(config)).await?;
    Ok(model_ids(&answer, "data", "id"))
}

#[cfg(test)]
mod tests {
    use super::super::{Message, ModelSpec, RetryPolicy, ToolCall};
    use super::*;
    use std::time::Duration;

    fn config(base: &str) -> ProviderConfig {
        ProviderConfig {
            spec: ModelSpec::parse("anthropic/claude").unwrap(),
            api_base: base.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            retry: RetryPolicy::default(),
            max_reply_bytes: crate::llm::DEFAULT_MAX_REPLY_BYTES,
            reply_timeout: crate::llm::DEFAULT_REPLY_TIMEOUT,
        }
    }

    #[test]
    fn urls_take_a_base_with_or_without_v1() {
        assert_eq!(
            url(&config("https://a.example"), "messages"),
            "https://a.example/v1/messages"
        );
        assert_eq!(
            url(&config("https://a.example/v1/"), "messages"),
            "https://a.example/v1/messages"
        );
    }

    #[test]
    fn tool_results_merge_into_one_user_turn() {
        let request = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("go"),
                Message::assistant(
                    "",
                    vec![
                        ToolCall {
                            id: "a".into(),
                            name: "execute".into(),
                            arguments: r#"{"code":"1"}"#.into(),
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "execute".into(),
                            arguments: "{}".into(),
                        },
                    ],
                ),
                Message::tool_result("a", "one"),
                Message::tool_result("b", ""),
            ],
            tools: vec![crate::protocol::ToolDef {
                name: "execute".into(),
                description: "Run code.".into(),
                parameters: json!({"type": "object"}),
            }],
            max_tokens: None,
            temperature: None,
            context_window: None,
            images: Vec::new(),
        };
        let body = body(&config("https://a.example"), &request);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][0]["input"]["code"], "1");
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(messages[2]["content"][1]["content"], "(no output)");
        assert_eq!(body["max_tokens"], 4096);
    }
}
