//! `--demo`: a scripted model built into oi-tui (`assets/demo.json`), served as an
//! OpenAI-compatible endpoint on 127.0.0.1, so that a newcomer can try approve, edit and skip
//! on real blocks with nothing else installed. The engine talks to it exactly as to a real
//! server.
//!
//! The script has no cursor of its own: the step to answer with is the number of answers
//! already in the request's conversation. So `/reset` and `/new` (an empty conversation)
//! start the tour again from the beginning, `/undo` steps back, and a retried request gets
//! the same step again.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SCRIPT: &str = include_str!("../assets/demo.json");

const FINISHED: &str = "The demo script has ended. To go on with a real model, see the README: for example `oi-tui --model ollama/qwen2.5-coder:7b`.";

#[derive(Debug, Clone, Deserialize)]
struct Step {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tools: Vec<(String, String)>,
}

/// Starts the demo model; returns the base URL to give the engine (`.../v1`).
pub async fn start() -> std::io::Result<String> {
    let steps: Vec<Step> = serde_json::from_str(SCRIPT)
        .map_err(|e| std::io::Error::other(format!("the demo script is broken: {e}")))?;
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let steps = Arc::new(steps);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let steps = steps.clone();
            tokio::spawn(async move {
                let _ = serve(stream, steps).await;
            });
        }
    });
    Ok(format!("http://{addr}/v1"))
}

/// The step for a request: one past the model's answers already in its conversation.
fn step_for(body: &[u8], steps: &[Step]) -> Step {
    let answered = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("messages")
                .and_then(|m| m.as_array())
                .map(|messages| {
                    messages
                        .iter()
                        .filter(|m| m.get("role").and_then(|r| r.as_str()) == Some("assistant"))
                        .count()
                })
        })
        .unwrap_or(0);
    steps.get(answered).cloned().unwrap_or(Step {
        text: FINISHED.to_string(),
        tools: Vec::new(),
    })
}

async fn serve(mut stream: TcpStream, steps: Arc<Vec<Step>>) -> std::io::Result<()> {
    // Read the request: headers, then as much body as Content-Length says.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    if head.starts_with("get ") {
        let body = json!({"object": "list", "data": [{"id": "demo"}]}).to_string();
        let reply = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(reply.as_bytes()).await?;
        return stream.shutdown().await;
    }
    let step = step_for(&body, &steps);
    stream
        .write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
        )
        .await?;
    let sse = |v: serde_json::Value| format!("data: {v}\n\n");
    // Text arrives word by word, a little slowly, as from a model.
    let mut words = step.text.split_inclusive(' ').peekable();
    while let Some(word) = words.next() {
        let event = sse(json!({"choices": [{"index": 0, "delta": {"content": word}}]}));
        stream.write_all(event.as_bytes()).await?;
        stream.flush().await?;
        if words.peek().is_some() {
            tokio::time::sleep(std::time::Duration::from_millis(12)).await;
        }
    }
    for (i, (language, code)) in step.tools.iter().enumerate() {
        let arguments = json!({"language": language, "code": code}).to_string();
        let event = sse(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{
            "index": i, "id": format!("demo_{i}"), "type": "function",
            "function": {"name": "execute", "arguments": arguments}
        }]}}]}));
        stream.write_all(event.as_bytes()).await?;
    }
    let finish = if step.tools.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let end = sse(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}));
    stream.write_all(end.as_bytes()).await?;
    stream.write_all(b"data: [DONE]\n\n").await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_parses_and_proposes_python_and_shell() {
        let steps: Vec<Step> = serde_json::from_str(SCRIPT).unwrap();
        let languages: Vec<&str> = steps
            .iter()
            .flat_map(|s| s.tools.iter().map(|(l, _)| l.as_str()))
            .collect();
        assert!(languages.contains(&"python") && languages.contains(&"shell"));
        assert!(
            steps.last().unwrap().tools.is_empty(),
            "the tour ends in text"
        );
    }

    #[test]
    fn the_step_follows_the_conversation_so_a_new_one_starts_over() {
        let steps: Vec<Step> = serde_json::from_str(SCRIPT).unwrap();
        let request = |assistants: usize| {
            let mut messages = vec![json!({"role": "system", "content": "s"})];
            messages.push(json!({"role": "user", "content": "hi"}));
            for _ in 0..assistants {
                messages.push(json!({"role": "assistant", "content": "a"}));
                messages.push(json!({"role": "tool", "content": "t"}));
            }
            json!({"model": "demo", "messages": messages}).to_string()
        };
        assert_eq!(step_for(request(0).as_bytes(), &steps).text, steps[0].text);
        assert_eq!(step_for(request(1).as_bytes(), &steps).text, steps[1].text);
        assert_eq!(
            step_for(request(0).as_bytes(), &steps).text,
            steps[0].text,
            "after /reset the tour begins again"
        );
        assert_eq!(
            step_for(request(steps.len()).as_bytes(), &steps).text,
            FINISHED
        );
        assert_eq!(step_for(b"not json", &steps).text, steps[0].text);
    }
}
