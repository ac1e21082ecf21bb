//! Provider errors: what went wrong, in one sentence that names the provider, the base URL
//! and what to check, and whether trying again could help.

use std::fmt;

/// What kind of failure, as the engine branches on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LlmErrorKind {
    /// 401 or 403: the key is missing, wrong or not allowed.
    Auth,
    /// 404: an unknown model, or a base URL that points at the wrong place.
    NotFound,
    /// The server does not accept the `tools` parameter for this model.
    ToolsUnsupported,
    /// The server does not take images (a model without vision) for this model.
    ImagesUnsupported,
    /// Another 4xx: the server refused the request.
    BadRequest,
    /// 429 or 5xx after every retry.
    Server,
    /// The connection could not be made or was reset, after every retry.
    Connect,
    /// No data for longer than the idle timeout.
    Timeout,
    /// The stream broke mid-way or carried something that is not what the API promises.
    Stream,
    /// oi-tui could not even build a client (TLS setup, a malformed URL).
    Setup,
    /// The reply went past the size or time one reply may take, and was cut there.
    TooLong,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmError {
    pub kind: LlmErrorKind,
    pub message: String,
}

impl LlmError {
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for LlmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LlmError {}

/// Pulls a readable message out of an error body: `{"error": {"message": ...}}`,
/// `{"error": "..."}`, `{"message": ...}`, or the text itself, shortened.
pub(crate) fn body_message(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let error = v.get("error").unwrap_or(&v);
            error
                .get("message")
                .and_then(|m| m.as_str())
                .or_else(|| error.as_str())
                .map(str::to_string)
        });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    shorten(&text, 300)
}

pub(crate) fn shorten(text: &str, max: usize) -> String {
    // A server's words: control characters are shown, never sent to a terminal.
    let one_line =
        crate::safe_text::visible(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_become_one_line() {
        assert_eq!(
            body_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(
            body_message(r#"{"error":"model 'x' not found"}"#),
            "model 'x' not found"
        );
        assert_eq!(body_message("plain\n  text"), "plain text");
        assert_eq!(body_message(&"x".repeat(400)).chars().count(), 301);
        assert_eq!(
            body_message("{\"error\":\"bad \\u001b]52;c;aGk=\\u0007 key\"}"),
            "bad ␛]52;c;aGk=␇ key"
        );
    }
}
