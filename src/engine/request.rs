//! A request to the model and its streamed reply: the system prompt and the history fitted
//! to the context window, the reply's text and code deltas as they arrive (batched, redacted,
//! recorded), and what becomes of a reply that fails, is cut or is interrupted.

use crate::llm::{ChatRequest, LlmError, Message, StreamEvent};
use crate::protocol::{Event, Op};

use super::reply::{Reply, Streaming};
use super::{Engine, history, prompt, side_op};

/// How a streamed reply ended.
pub(super) enum Streamed {
    Complete(Reply),
    Failed(Reply, LlmError),
    Interrupted(Reply),
}

impl Engine {
    pub(super) fn fall_back_to_fences(&mut self, error: &LlmError) {
        self.tools = false;
        let Some(client) = &self.client else {
            return;
        };
        let spec = client.config().spec.clone();
        let base = client.config().api_base.clone();
        let saved = self.memory.remember_rejects_tools(&spec, &base);
        let mut message = format!(
            "{} Falling back to fenced code blocks for this model (remembered for next time).",
            error.message
        );
        if let Err(why) = saved {
            message.push_str(&format!(" ({why})"));
        }
        self.emit(Event::Notice { message });
    }

    fn system(&self) -> String {
        prompt::system_prompt(
            &self.facts,
            self.tools,
            self.config.system_message.as_deref(),
            self.config.custom_instructions.as_deref(),
        )
    }

    /// The context window, and the tokens of it left for the conversation after the system
    /// prompt and the room kept for the reply.
    fn room(&self, system: &str) -> (usize, usize) {
        let window = self.config.context_window as usize;
        let reserve = self
            .config
            .max_tokens
            .map_or(window / 4, |m| m as usize)
            .min(window / 2);
        let budget = window.saturating_sub(reserve + history::estimate_tokens(system));
        (window, budget)
    }

    /// What to say of a message (with the `!cmd` context that goes with it) too large for
    /// the context window: a refusal ("Not sent…") when the window was configured.
    pub(super) fn too_large(&self, text: &str) -> Option<String> {
        let (window, budget) = self.room(&self.system());
        let bytes = text.len() + self.context.iter().map(|c| c.len() + 1).sum::<usize>();
        let tokens = history::tokens(&[Message::user(text)])
            + self
                .context
                .iter()
                .map(|c| history::estimate_tokens(c))
                .sum::<usize>();
        history::too_large(
            tokens,
            bytes,
            window,
            budget,
            self.config.context_window_set,
        )
    }

    pub(super) fn request(&mut self) -> ChatRequest {
        let system = self.system();
        let (window, budget) = self.room(&system);
        let (messages, dropped) = history::fit(&self.history, budget);
        if dropped > 0 {
            self.emit(Event::Notice {
                message: format!(
                    "The conversation is longer than the context window ({window} tokens): the {dropped} oldest messages were left out of this request."
                ),
            });
        }
        let images = self.result_images(&messages);
        let used = history::tokens(&messages) + super::vision::image_tokens(&images);
        if used > budget && messages.len() > 1 {
            // The newest exchange alone (a block's results with the call) is too large.
            self.emit(Event::Notice {
                message: format!(
                    "This request is about {used} tokens, more than the context window of {window} tokens leaves for it ({budget}): it is sent whole, and the model may cut it or fail."
                ),
            });
        }
        // Nothing secret goes to the model: not a block's output that printed a key, not a
        // `!cmd`'s, not a pasted one.
        let redactor = &self.config.redactor;
        let messages = messages
            .into_iter()
            .map(|m| redactor.clean_value(m))
            .collect();
        ChatRequest {
            system: redactor.clean(&system),
            messages,
            tools: self.offered_tools(),
            max_tokens: self.config.max_tokens,
            temperature: self.config.temperature,
            context_window: self
                .config
                .context_window_set
                .then_some(self.config.context_window),
            images,
        }
    }

    pub(super) async fn stream_reply(&mut self, request: &ChatRequest) -> Streamed {
        let events = self.events.clone();
        let redactor = self.config.redactor.clone();
        let recorder = self.recorder.clone();
        // The reply and its code deltas, shared by the stream's callback and the loop below
        // (which sends the code held back when the interval is over).
        let streaming = std::sync::Mutex::new(Streaming::new(redactor.clone()));
        let held = tokio::sync::Notify::new();
        let send_all = |batch: Vec<Event>| {
            for event in batch {
                let _ = events.send(event);
            }
        };
        let mut on_event = |event: StreamEvent| {
            let (due, waiting) = lock(&streaming).apply(&event);
            send_all(due);
            if waiting {
                held.notify_one();
            }
            match &event {
                StreamEvent::Text(text) => {
                    let delta = Event::AssistantDelta {
                        text: redactor.clean(text),
                    };
                    if let Some(recorder) = &recorder {
                        recorder.event(&delta);
                    }
                    let _ = events.send(delta);
                }
                StreamEvent::Usage {
                    prompt_tokens,
                    completion_tokens,
                } => {
                    let _ = events.send(Event::Usage {
                        prompt_tokens: *prompt_tokens,
                        completion_tokens: *completion_tokens,
                    });
                }
                StreamEvent::Retrying {
                    attempt,
                    max,
                    delay,
                    reason,
                } => {
                    let _ = events.send(Event::Retry {
                        attempt: *attempt,
                        max: *max,
                        delay_ms: delay.as_millis() as u64,
                        reason: redactor.clean(reason),
                    });
                }
                StreamEvent::ToolCall { .. } => {}
            }
        };
        let Some(client) = &self.client else {
            return Streamed::Interrupted(Reply::default());
        };
        let result = {
            let stream = client.stream(request, &mut on_event);
            tokio::pin!(stream);
            let mut send_at: Option<tokio::time::Instant> = None;
            loop {
                let due = send_at.unwrap_or_else(tokio::time::Instant::now);
                tokio::select! {
                    result = &mut stream => break Some(result),
                    () = held.notified() => {
                        send_at.get_or_insert_with(|| {
                            tokio::time::Instant::now() + super::reply::DELTA_INTERVAL
                        });
                    }
                    () = tokio::time::sleep_until(due), if send_at.is_some() => {
                        send_at = None;
                        send_all(lock(&streaming).flush());
                    }
                    op = self.ops.recv(), if !self.ops_closed => match op {
                        Some(Op::Interrupt) => break None,
                        None => {
                            self.ops_closed = true;
                            break None;
                        }
                        Some(op) => {
                            let stop = matches!(op, Op::Shutdown);
                            // The stream borrows the client: the parts are lent one by one.
                            side_op(
                                &self.kernels,
                                &mut self.queued,
                                &mut self.shutdown,
                                &self.events,
                                self.config.tool_host.as_deref(),
                                op,
                            );
                            if stop {
                                break None;
                            }
                        }
                    },
                }
            }
        };
        let mut streaming = match streaming.into_inner() {
            Ok(s) => s,
            Err(poisoned) => poisoned.into_inner(),
        };
        send_all(streaming.finish());
        let reply = streaming.reply;
        if matches!(result, Some(Ok(()))) {
            self.vision_accepted(request);
        }
        match result {
            Some(Ok(())) => Streamed::Complete(reply),
            Some(Err(error)) => Streamed::Failed(reply, error),
            None => Streamed::Interrupted(reply),
        }
    }
}

/// The stream's state, whoever held the lock before (a panic there loses nothing of it).
fn lock(streaming: &std::sync::Mutex<Streaming>) -> std::sync::MutexGuard<'_, Streaming> {
    match streaming.lock() {
        Ok(s) => s,
        Err(poisoned) => poisoned.into_inner(),
    }
}
