//! The images of a block's result, to the model: which blocks' images go with a request,
//! whether this model is sent images at all (`--vision`, the families known to see, what its
//! server took or refused before), and the fallback when a server refuses them.
//!
//! Which images go: those of the latest results only (the tool results or the fenced-block
//! results message of the round just run), at most `MAX_IMAGES` per request. Older results
//! keep their text lines (`image 1: figure, 400×300 PNG, …, kept at …`), which the model saw
//! with them, and which a resumed session's history still holds; so requests stay small for
//! local models, however many plots a session makes.

use std::collections::HashMap;

use crate::llm::image_encode::ImageCache;
use crate::llm::vision::{self, ResultImages, VisionMode};
use crate::llm::{ChatRequest, LlmError, Message, Role};
use crate::protocol::{BlockId, Event, Image};

use super::Engine;
use super::turn::Outcome;

/// The most images one request carries.
pub const MAX_IMAGES: usize = 4;

/// The images of the blocks of one result message, block by block.
type BlockImages = Vec<(BlockId, Vec<Image>)>;

/// What the engine keeps about images for the model.
#[derive(Default)]
pub(super) struct Vision {
    pub mode: VisionMode,
    /// The model (`provider/name @ base`) whose server refused images in this session: it
    /// is sent none any more.
    refused: Option<String>,
    /// A refusal whose retry without images has not gone through yet: remembered (under
    /// `auto`) only once it has, since a request that fails without images too was not
    /// refused for its images.
    unconfirmed: bool,
    /// The images of blocks that ran, until their results are recorded.
    ran: HashMap<BlockId, Vec<Image>>,
    /// The images of the latest results recorded, by tool call.
    calls: Vec<(String, BlockId, Vec<Image>)>,
    /// The images of the latest fenced-block results: the history index of their message.
    fenced: Option<(usize, BlockImages)>,
    cache: ImageCache,
}

impl Vision {
    pub fn new(mode: VisionMode) -> Vision {
        Vision {
            mode,
            ..Vision::default()
        }
    }
}

/// A rough token count of the images of a request (about one token per 750 pixels, as
/// Anthropic counts them), for the window's reckoning.
pub(super) fn image_tokens(images: &[ResultImages]) -> usize {
    images
        .iter()
        .flat_map(|r| &r.parts)
        .map(|p| (p.width as usize * p.height as usize).div_ceil(750))
        .sum()
}

impl Engine {
    /// The model, as its memory knows it.
    fn vision_key(&self) -> Option<String> {
        let config = self.client.as_ref()?.config();
        Some(format!(
            "{} @ {}",
            config.spec,
            config.api_base.trim_end_matches('/')
        ))
    }

    /// Whether the model in use is sent images now.
    pub(super) fn vision_enabled(&self) -> bool {
        let Some(client) = &self.client else {
            return false;
        };
        if self.vision.refused.is_some() && self.vision.refused == self.vision_key() {
            return false;
        }
        let config = client.config();
        match self.vision.mode {
            VisionMode::Off => false,
            VisionMode::On => true,
            VisionMode::Auto => self
                .memory
                .takes_images(&config.spec, &config.api_base)
                .unwrap_or_else(|| vision::known_vision_model(&config.spec.model)),
        }
    }

    /// A block ran and made these images (hook in `execute`).
    pub(super) fn vision_ran(&mut self, block: BlockId, images: &[Image]) {
        if !images.is_empty() {
            self.vision.ran.insert(block, images.to_vec());
        }
    }

    /// A new turn: the results before it are no longer the latest (hook in `turn`).
    pub(super) fn vision_new_turn(&mut self) {
        self.vision.calls.clear();
        self.vision.fenced = None;
        self.vision.ran.clear();
    }

    /// A round's outcomes go into the history (hook at the start of `record`): their images
    /// become the latest.
    pub(super) fn vision_recorded(&mut self, outcomes: &[Outcome]) {
        let mut ran = std::mem::take(&mut self.vision.ran);
        self.vision.calls.clear();
        self.vision.fenced = None;
        let tools = outcomes.iter().all(|o| o.call_id.is_some());
        let mut fenced = Vec::new();
        for o in outcomes {
            let Some(images) = ran.remove(&o.block.id) else {
                continue;
            };
            match (&o.call_id, tools) {
                (Some(call), true) => self.vision.calls.push((call.clone(), o.block.id, images)),
                _ => fenced.push((o.block.id, images)),
            }
        }
        if !fenced.is_empty() {
            // Fence mode puts one user message after the history as it is now.
            self.vision.fenced = Some((self.history.len(), fenced));
        }
    }

    /// The images that go with this request's `messages` (the history as fitted to the
    /// window, whose tail is the history's tail).
    pub(super) fn result_images(&mut self, messages: &[Message]) -> Vec<ResultImages> {
        if !self.vision_enabled() {
            return Vec::new();
        }
        // Only results after the model's last message are new to it.
        let after = messages
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .map_or(0, |i| i + 1);
        let mut wanted: Vec<(usize, BlockImages)> = Vec::new();
        for (call, block, images) in &self.vision.calls {
            if let Some(i) = messages[after..]
                .iter()
                .position(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call))
            {
                wanted.push((after + i, vec![(*block, images.clone())]));
            }
        }
        if let Some((index, blocks)) = &self.vision.fenced {
            let offset = self.history.len().saturating_sub(messages.len());
            if let Some(i) = index.checked_sub(offset)
                && i >= after
                && messages.get(i).is_some_and(|m| m.role == Role::User)
            {
                wanted.push((i, blocks.clone()));
            }
        }
        let mut sent = 0;
        let mut out = Vec::new();
        for (message, blocks) in wanted {
            let mut result = ResultImages {
                message,
                blocks: blocks.iter().map(|(b, _)| *b).collect(),
                parts: Vec::new(),
                notes: Vec::new(),
            };
            let mut over: Vec<String> = Vec::new();
            for (block, images) in &blocks {
                for (n, image) in images.iter().enumerate() {
                    let name = format!("Image {} of block {block}", n + 1);
                    if sent >= MAX_IMAGES {
                        over.push(format!("image {} of block {block}", n + 1));
                        continue;
                    }
                    match self.vision.cache.get(image) {
                        Ok(part) => {
                            sent += 1;
                            result.parts.push(part);
                        }
                        Err(why) => result.notes.push(format!("{name} is not attached: {why}.")),
                    }
                }
            }
            // One sentence for all that did not fit, not one each.
            if !over.is_empty() {
                result.notes.push(format!(
                    "{} more image{} not attached ({}): at most {MAX_IMAGES} images go with one message to the model.",
                    over.len(),
                    if over.len() == 1 { "" } else { "s" },
                    over.join(", ")
                ));
            }
            out.push(result);
        }
        out
    }

    /// The server took a request: with images, that is remembered for `--vision auto`;
    /// without them, after a refusal, the refusal is (the images were the cause).
    pub(super) fn vision_accepted(&mut self, request: &ChatRequest) {
        let Some(client) = &self.client else {
            return;
        };
        let config = client.config();
        if vision::has_images(&request.images) {
            // Not saved: nothing worse than asking again next time.
            let _ = self
                .memory
                .remember_takes_images(&config.spec, &config.api_base, true);
        } else if std::mem::take(&mut self.vision.unconfirmed)
            && self.vision.mode != VisionMode::On
            && let Err(why) =
                self.memory
                    .remember_takes_images(&config.spec, &config.api_base, false)
        {
            let message =
                format!("oi-tui could not remember that this model takes no images: {why}");
            self.emit(Event::Notice { message });
        }
    }

    /// When the server refused a request because of its images: says so once, remembers it
    /// (under `auto`) and returns true, for the request to go again without them.
    pub(super) fn images_refused(&mut self, request: &ChatRequest, error: &LlmError) -> bool {
        let had_images = vision::has_images(&request.images);
        if !had_images && std::mem::take(&mut self.vision.unconfirmed) {
            // The request failed without images too: they were not the cause.
            self.vision.refused = None;
            self.emit(Event::Notice {
                message: "The request failed without the images as well, so they were not the cause: this model still gets images.".to_string(),
            });
            return false;
        }
        if !vision::refused_images(error, had_images) {
            return false;
        }
        let Some(client) = &self.client else {
            return false;
        };
        let spec = client.config().spec.clone();
        self.vision.refused = self.vision_key();
        self.vision.unconfirmed = true;
        let mut message = format!(
            "{spec} did not take the images of the block's result ({}). The request goes again without them",
            error.message.trim_end_matches('.')
        );
        if self.vision.mode == VisionMode::On {
            message.push_str(
                ", and this model gets no images for the rest of this session (--vision on, so this is not remembered).",
            );
        } else {
            message.push_str(
                ": if it goes through, this model gets no images from now on (remembered for next time). To send them anyway, start oi-tui with --vision on.",
            );
        }
        self.emit(Event::Notice { message });
        true
    }
}
