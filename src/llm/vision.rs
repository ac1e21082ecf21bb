//! Images for vision models: whether a model is sent the images a block made (`--vision
//! auto|on|off`, the families known to see, what the server accepted or refused before), and
//! the images that go with the results of one request, ready for each provider's shape.
//!
//! A provider puts `ResultImages` into its own form: OpenAI-compatible `image_url` data URIs
//! and Anthropic `image` blocks, Ollama's `images` list. Encoding and downscaling live in
//! `image_encode`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Whether the images of a block's result go to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VisionMode {
    /// When the model's name is of a family known to see images, or the server took images
    /// from it before (and never when it refused them before).
    #[default]
    Auto,
    /// Always.
    On,
    /// Never.
    Off,
}

impl VisionMode {
    /// `auto`, `on` or `off` (for `--vision`).
    pub fn parse(text: &str) -> Result<VisionMode, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(VisionMode::Auto),
            "on" | "true" | "yes" => Ok(VisionMode::On),
            "off" | "false" | "no" => Ok(VisionMode::Off),
            other => Err(format!("`{other}`: give auto, on or off")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            VisionMode::Auto => "auto",
            VisionMode::On => "on",
            VisionMode::Off => "off",
        }
    }
}

/// Whether a model's name is of a family known to take images. Unknown names: no.
///
/// The name is matched without its provider prefix, tag or organisation (`meta-llama/`,
/// `:7b`), case-insensitively.
pub fn known_vision_model(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // `org/model:tag` -> `model`.
    let base = lower.rsplit('/').next().unwrap_or(&lower);
    let base = base.split(':').next().unwrap_or(base);
    let starts = |prefix: &str| base.starts_with(prefix);
    let has = |part: &str| base.contains(part);
    // Text-only members of otherwise seeing families.
    if has("embed") || starts("gpt-4o-audio") || starts("gpt-4o-realtime") {
        return false;
    }
    starts("gpt-4o")
        || starts("chatgpt-4o")
        || starts("gpt-4.1")
        || starts("gpt-4-turbo")
        || starts("gpt-4-vision")
        || starts("gpt-5")
        || starts("o3") && !starts("o3-mini")
        || starts("o4")
        || starts("o1") && !starts("o1-mini") && !starts("o1-preview")
        || claude_sees(base)
        || starts("gemini")
        || starts("gemma3")
        || starts("gemma-3")
        || has("llava")
        || starts("bakllava")
        || has("llama3.2-vision")
        || has("llama-3.2") && has("vision")
        || starts("llama4")
        || starts("llama-4")
        || has("qwen2.5vl")
        || has("qwen2.5-vl")
        || has("qwen2-vl")
        || has("qwen-vl")
        || has("qwen3-vl")
        || base.ends_with("-vl")
        || has("-vl-")
        || starts("minicpm-v")
        || starts("moondream")
        || starts("pixtral")
        || has("granite3.2-vision")
        || has("granite-vision")
        || mistral_small_sees(base)
        || has("vision")
}

/// Claude 3 and later (`claude-3-5-sonnet`, `claude-sonnet-4-5`, `claude-opus-4`); not 2.x
/// nor instant.
fn claude_sees(base: &str) -> bool {
    let Some(rest) = base.strip_prefix("claude-") else {
        return false;
    };
    if rest.starts_with('2') || rest.starts_with("instant") || rest.starts_with('1') {
        return false;
    }
    // claude-3..., claude-3-5-..., or claude-<family>-4...
    rest.split('-').any(|part| {
        part.chars()
            .next()
            .and_then(|c| c.to_digit(10))
            .is_some_and(|major| major >= 3)
    })
}

/// Mistral Small 3.1 and later take images; 3.0 and before do not.
fn mistral_small_sees(base: &str) -> bool {
    let Some(rest) = base
        .strip_prefix("mistral-small")
        .map(|r| r.trim_start_matches(['-', '.']))
    else {
        return false;
    };
    let version: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = version.split('.').filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => (major, minor) >= (3, 1),
        // `mistral-small-2503` (March 2025, 3.1) and later.
        (Some(date), None) if date >= 2503 => true,
        _ => false,
    }
}

/// One image ready to send: its media type and its bytes in base64 (no `data:` prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImagePart {
    /// `image/png` or `image/jpeg`.
    pub media_type: &'static str,
    /// The image's bytes, base64-encoded (shared: the same image goes in every request).
    pub data: Arc<str>,
    pub width: u32,
    pub height: u32,
}

impl ImagePart {
    /// A `data:` URI, for OpenAI-compatible `image_url` parts.
    pub fn data_uri(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data)
    }
}

/// The images that go with one result message of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultImages {
    /// The index, in `ChatRequest::messages`, of the message that carries the result (a
    /// `Role::Tool` message, or the user message of fenced-block results).
    pub message: usize,
    /// The blocks the images come from, as the person and the model know them.
    pub blocks: Vec<crate::protocol::BlockId>,
    pub parts: Vec<ImagePart>,
    /// Images of the result that are not sent, and why (one line each).
    pub notes: Vec<String>,
}

impl ResultImages {
    /// The sentence that introduces the images (and says which were not sent).
    pub fn text(&self, call: Option<&str>) -> String {
        let blocks = self
            .blocks
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let whose = match (self.blocks.len(), call) {
            (1, Some(call)) => format!("block {blocks} (tool call {call})"),
            (1, None) => format!("block {blocks}"),
            (_, _) => format!("blocks {blocks}"),
        };
        let mut text = if self.parts.is_empty() {
            format!("The images of the result of {whose} are not attached.")
        } else {
            format!(
                "The {} attached to this message {} from the result of {whose}, in the order listed there.",
                if self.parts.len() == 1 {
                    "image"
                } else {
                    "images"
                },
                if self.parts.len() == 1 { "is" } else { "are" },
            )
        };
        for note in &self.notes {
            text.push(' ');
            text.push_str(note);
        }
        text
    }

    /// The images' notes alone, for where the result's text already introduces them.
    pub fn notes_text(&self) -> Option<String> {
        (!self.notes.is_empty()).then(|| self.notes.join(" "))
    }
}

/// Whether the request carries any image.
pub fn has_images(images: &[ResultImages]) -> bool {
    images.iter().any(|r| !r.parts.is_empty())
}

/// Whether a server's error text names images as such (`image input is not supported`,
/// `model has no vision`, `multimodal`, llama.cpp's `mmproj`): the transport's test, which
/// holds whether or not the request had images.
pub fn says_no_images(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    ["image", "vision", "multimodal", "multi-modal", "mmproj"]
        .iter()
        .any(|w| m.contains(w))
}

/// Whether a server's error text may be about images (the engine's test, for a request that
/// had them): besides `says_no_images`, the complaints of servers that expect text where an
/// array of content parts came.
pub fn mentions_images(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    [
        "image",
        "vision",
        "multimodal",
        "multi-modal",
        "image_url",
        "mmproj",
        "content type",
        "content_type",
        "content part",
        "unsupported content",
        "expected string",
        "must be a string",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// Whether a failed request that carried images should be tried again without them: the
/// server said images are the trouble (`ImagesUnsupported`), or it refused the request
/// (a 4xx other than auth, not-found and rate limits) — the same conversation went through
/// without images before, so the images are the likely cause, and one more request without
/// them is cheap. A request without images is never retried here.
pub fn refused_images(error: &super::LlmError, had_images: bool) -> bool {
    use super::LlmErrorKind as K;
    had_images
        && match error.kind {
            K::ImagesUnsupported | K::BadRequest => true,
            K::ToolsUnsupported | K::Server => mentions_images(&error.message),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_see_and_unknown_names_do_not() {
        for name in [
            "gpt-4o",
            "gpt-4o-mini",
            "gpt-4.1-nano",
            "gpt-5",
            "o3",
            "o4-mini",
            "claude-3-5-sonnet-20241022",
            "claude-3-haiku-20240307",
            "claude-sonnet-4-5",
            "claude-opus-4-1-20250805",
            "gemini-2.0-flash",
            "llava:13b",
            "bakllava",
            "llama3.2-vision:11b",
            "qwen2.5vl:7b",
            "Qwen/Qwen2.5-VL-7B-Instruct",
            "qwen-vl-max",
            "internvl2-vl",
            "minicpm-v:8b",
            "moondream",
            "pixtral-12b-2409",
            "gemma3:4b",
            "granite3.2-vision",
            "mistral-small3.1:24b",
            "mistral-small-3.2-24b",
            "mistral-small-2503",
            "meta-llama/Llama-3.2-11B-Vision-Instruct",
        ] {
            assert!(known_vision_model(name), "{name} should see");
        }
        for name in [
            "qwen2.5-coder:7b",
            "llama3.1:8b",
            "gpt-3.5-turbo",
            "gpt-4",
            "o3-mini",
            "claude-2.1",
            "claude-instant-1.2",
            "mistral-small3",
            "mistral-small-2402",
            "deepseek-coder",
            "text-embedding-3-small",
            "scripted-large",
            "nomic-embed-text",
        ] {
            assert!(!known_vision_model(name), "{name} should not see");
        }
    }

    #[test]
    fn modes_parse_with_a_clear_error() {
        assert_eq!(VisionMode::parse("AUTO"), Ok(VisionMode::Auto));
        assert_eq!(VisionMode::parse("on"), Ok(VisionMode::On));
        assert_eq!(VisionMode::parse("off"), Ok(VisionMode::Off));
        assert!(
            VisionMode::parse("maybe")
                .unwrap_err()
                .contains("auto, on or off")
        );
    }

    #[test]
    fn refusals_are_told_apart() {
        use super::super::{LlmError, LlmErrorKind as K};
        let e = |kind, message: &str| LlmError::new(kind, message);
        assert!(refused_images(&e(K::BadRequest, "400: bad"), true));
        assert!(!refused_images(&e(K::BadRequest, "400: bad"), false));
        assert!(refused_images(
            &e(K::Server, "500: image input is not supported"),
            true
        ));
        assert!(!refused_images(&e(K::Server, "500: overloaded"), true));
        assert!(!refused_images(&e(K::Auth, "401: image"), true));
        assert!(refused_images(&e(K::ImagesUnsupported, "x"), true));
    }
}
