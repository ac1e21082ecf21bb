//! OpenAI-compatible Chat Completions, streamed as SSE: OpenAI itself, llama.cpp's
//! llama-server, vLLM, LM Studio, OpenRouter, DeepSeek and the like.
//!
//! Tolerates what real servers send: `id` and `name` repeated in every chunk, explicit nulls,
//! a legacy `function_call` beside `tool_calls`, parallel calls at index 1 and above, a final
//! chunk with only usage, keep-alive comments, `[DONE]`, and CRLF line endings.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::transport::{self, Flow, Framing};
use super::vision::ImagePart;
use super::{ChatRequest, LlmError, ModelInfo, ProviderConfig, Role, StreamEvent, join_url};

pub(super) fn body(config: &ProviderConfig, request: &ChatRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    // Tool messages take text only: the images of a round's tool results go in a user
    // message right after its tool messages.
    let mut tool_images: Vec<Value> = Vec::new();
    for (i, m) in request.messages.iter().enumerate() {
        if m.role != Role::Tool && !tool_images.is_empty() {
            messages.push(json!({"role": "user", "content": std::mem::take(&mut tool_images)}));
        }
        let images = request.images_of(i);
        messages.push(match m.role {
            Role::User => match images {
                Some(images) => {
                    let mut parts = vec![json!({"type": "text", "text": m.content})];
                    parts.extend(images.parts.iter().map(image_url));
                    if let Some(notes) = images.notes_text() {
                        parts.push(json!({"type": "text", "text": notes}));
                    }
                    json!({"role": "user", "content": parts})
                }
                None => json!({"role": "user", "content": m.content}),
            },
            Role::Tool => {
                if let Some(images) = images {
                    tool_images.push(json!({
                        "type": "text",
                        "text": images.text(m.tool_call_id.as_deref()),
                    }));
                    tool_images.extend(images.parts.iter().map(image_url));
                }
                json!({
                    "role": "tool",
                    "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
                    "content": m.content,
                })
            }
            Role::Assistant if m.tool_calls.is_empty() => {
                json!({"role": "assistant", "content": m.content})
            }
            Role::Assistant => json!({
                "role": "assistant",
                "content": if m.content.is_empty() { Value::Null } else { json!(m.content) },
                "tool_calls": m.tool_calls.iter().map(|c| json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })).collect::<Vec<_>>(),
            }),
        });
    }
    if !tool_images.is_empty() {
        messages.push(json!({"role": "user", "content": tool_images}));
    }
    let mut body = json!({
        "model": config.spec.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = function_tools(&request.tools);
    }
    if let Some(max) = request.max_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// An `image_url` content part holding the image as a data URI.
fn image_url(part: &ImagePart) -> Value {
    json!({"type": "image_url", "image_url": {"url": part.data_uri()}})
}

/// The tool list in the OpenAI shape, which Ollama shares.
pub(super) fn function_tools(tools: &[crate::protocol::ToolDef]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                }
            })
        })
        .collect()
}

fn headers(config: &ProviderConfig) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(key) = &config.api_key
        && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", key.expose()))
    {
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    headers
}

pub(super) async fn stream(
    http: &reqwest::Client,
    config: &ProviderConfig,
    request: &ChatRequest,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<(), LlmError> {
    let url = join_url(&config.api_base, "chat/completions");
    let mut parser = Parser::default();
    let done = transport::post_stream(
        http,
        config,
        &url,
        headers(config),
        &body(config, request),
        Framing::Sse,
        on_event,
        |data, on| parser.frame(config, data, on),
    )
    .await?;
    transport::complete(config, done || parser.finished)
}

/// Turns Chat Completions chunks into stream events.
#[derive(Default)]
pub(super) struct Parser {
    /// A `finish_reason` was seen: the reply is complete even if `[DONE]` never comes.
    finished: bool,
}

impl Parser {
    pub(super) fn frame(
        &mut self,
        config: &ProviderConfig,
        data: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Flow, LlmError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Flow::Done);
        }
        if data.is_empty() {
            return Ok(Flow::More);
        }
        let chunk = transport::parse_json(config, data)?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            return Err(transport::stream_error(
                config,
                &format!("the server reported an error: {message}"),
            ));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            on_event(StreamEvent::Usage {
                prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
                completion_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
            });
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        for choice in choices.into_iter().flatten() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            let delta = &choice["delta"];
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                on_event(StreamEvent::Text(text.to_string()));
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for (position, call) in calls.into_iter().flatten().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .map_or(position, |i| i as usize);
                let function = &call["function"];
                on_event(StreamEvent::ToolCall {
                    index,
                    id: str_field(call, "id"),
                    name: str_field(function, "name"),
                    arguments: str_field(function, "arguments").unwrap_or_default(),
                });
            }
            // The legacy single function call, when no tool_calls came with it.
            if calls.is_none_or(|c| c.is_empty())
                && let Some(function) = delta.get("function_call").filter(|f| f.is_object())
            {
                on_event(StreamEvent::ToolCall {
                    index: 0,
                    id: None,
                    name: str_field(function, "name"),
                    arguments: str_field(function, "arguments").unwrap_or_default(),
                });
            }
            if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
                self.finished = true;
            }
        }
        Ok(Flow::More)
    }
}

fn str_field(value: &Value, name: &str) -> Option<String> {
    value
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub(super) async fn list_models(
    http: &reqwest::Client,
    config: &ProviderConfig,
) -> Result<Vec<ModelInfo>, LlmError> {
    let url = join_url(&config.api_base, "models");
    let answer = transport::get(http, config, &url, headers(config)).await?;
    Ok(model_ids(&answer, "data", "id"))
}

/// `{"data": [{"id": ...}, ...]}`-shaped lists (OpenAI, Anthropic), and Ollama's
/// `{"models": [{"name": ...}]}`.
pub(super) fn model_ids(answer: &Value, list: &str, field: &str) -> Vec<ModelInfo> {
    let mut ids: Vec<ModelInfo> = answer
        .get(list)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get(field).and_then(Value::as_str))
        .map(|id| ModelInfo { id: id.to_string() })
        .collect();
    ids.sort_by(|a, b| a.id.cmp(&b.id));
    ids
}

#[cfg(test)]
mod tests {
    use super::super::{ModelSpec, RetryPolicy};
    use super::*;
    use std::time::Duration;

    fn config() -> ProviderConfig {
        ProviderConfig {
            spec: ModelSpec::parse("openai/test").unwrap(),
            api_base: "http://127.0.0.1:1/v1".into(),
            api_key: None,
            connect_timeout: Duration::from_secs(1),
            idle_timeout: Duration::from_secs(1),
            retry: RetryPolicy::default(),
            max_reply_bytes: crate::llm::DEFAULT_MAX_REPLY_BYTES,
            reply_timeout: crate::llm::DEFAULT_REPLY_TIMEOUT,
        }
    }

    fn parse(frames: &[&str]) -> (Vec<StreamEvent>, bool) {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        let mut done = false;
        for f in frames {
            if let Flow::Done = parser.frame(&config(), f, &mut |e| events.push(e)).unwrap() {
                done = true;
            }
        }
        (events, done)
    }

    #[test]
    fn tolerates_nulls_repeats_parallel_calls_and_usage_chunks() {
        let (events, done) = parse(&[
            r#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":null}}]}"#,
            r#"{"id":"x","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"execute","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"name":"execute","arguments":"{\"lang"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"execute","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5}}"#,
            "[DONE]",
        ]);
        assert!(done);
        assert_eq!(events[0], StreamEvent::Text("Hi".into()));
        assert!(
            matches!(&events[1], StreamEvent::ToolCall { index: 0, id: Some(id), .. } if id == "call_a")
        );
        assert!(
            matches!(&events[2], StreamEvent::ToolCall { index: 0, arguments, .. } if arguments == "{\"lang")
        );
        assert!(matches!(&events[3], StreamEvent::ToolCall { index: 1, .. }));
        assert_eq!(
            events[4],
            StreamEvent::Usage {
                prompt_tokens: 12,
                completion_tokens: 5
            }
        );
    }

    #[test]
    fn the_legacy_function_call_becomes_call_zero() {
        let (events, _) = parse(&[
            r#"{"choices":[{"delta":{"function_call":{"name":"execute","arguments":"{\"code\":"}}}]}"#,
        ]);
        assert_eq!(
            events,
            vec![StreamEvent::ToolCall {
                index: 0,
                id: None,
                name: Some("execute".into()),
                arguments: "{\"code\":".into()
            }]
        );
    }

    #[test]
    fn tool_result_images_follow_the_rounds_tool_messages_in_one_user_message() {
        use super::super::vision::ResultImages;
        use super::super::{Message, ToolCall};
        let part = ImagePart {
            media_type: "image/png",
            data: "iVBORw0KGgo=".into(),
            width: 4,
            height: 3,
        };
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "execute".into(),
            arguments: "{}".into(),
        };
        let request = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::user("plot"),
                Message::assistant("", vec![call("a"), call("b")]),
                Message::tool_result("a", "one"),
                Message::tool_result("b", "two"),
            ],
            tools: Vec::new(),
            max_tokens: None,
            temperature: None,
            context_window: None,
            images: vec![
                ResultImages {
                    message: 2,
                    blocks: vec![1],
                    parts: vec![part.clone()],
                    notes: Vec::new(),
                },
                ResultImages {
                    message: 3,
                    blocks: vec![2],
                    parts: vec![part],
                    notes: vec!["Image 2 of block 2 is not attached: it is an SVG drawing.".into()],
                },
            ],
        };
        let body = body(&config(), &request);
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "tool", "tool", "user"]
        );
        // Tool messages keep their text; the images come after them, each introduced.
        assert_eq!(messages[3]["content"], "one");
        let parts = messages[5]["content"].as_array().unwrap();
        let kinds: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["text", "image_url", "text", "image_url"]);
        assert!(
            parts[0]["text"]
                .as_str()
                .unwrap()
                .contains("block 1 (tool call a)")
        );
        assert!(parts[2]["text"].as_str().unwrap().contains("SVG"));
        assert_eq!(
            parts[1]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
    }

    #[test]
    fn invalid_json_and_server_errors_are_clear() {
        let mut parser = Parser::default();
        let err = parser.frame(&config(), "{nope", &mut |_| {}).err().unwrap();
        assert!(err.message.contains("not valid JSON"), "{}", err.message);
        let err = parser
            .frame(
                &config(),
                r#"{"error":{"message":"overloaded"}}"#,
                &mut |_| {},
            )
            .err()
            .unwrap();
        assert!(err.message.contains("overloaded"));
    }
}
