//! One model reply as it streams in: its text, and its tool calls assembled from fragments,
//! with the code of each call decoded as it comes (once per fragment: linear in its size).

use std::time::{Duration, Instant};

use crate::llm::args_stream::ArgsStream;
use crate::llm::{StreamEvent, ToolCall};
use crate::protocol::Event;
use crate::secrets::{Redactor, StreamRedactor};

#[derive(Debug, Default, Clone)]
pub struct Reply {
    pub text: String,
    calls: Vec<PartialCall>,
}

#[derive(Debug, Default, Clone)]
struct PartialCall {
    id: Option<String>,
    name: Option<String>,
    arguments: String,
    /// Reads the code out of the arguments as they stream.
    reader: ArgsStream,
}

/// New code of a tool call, as a fragment of its arguments brought it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeDelta {
    pub index: usize,
    /// The language, once its value is complete.
    pub language: Option<String>,
    /// The code this fragment added (may be empty when only the language came).
    pub delta: String,
}

impl Reply {
    /// Applies a stream event; returns the code it added to a tool call, if any (and, once
    /// the code has begun, an empty delta when only the language came).
    pub fn apply(&mut self, event: &StreamEvent) -> Option<CodeDelta> {
        match event {
            StreamEvent::Text(text) => {
                self.text.push_str(text);
                None
            }
            StreamEvent::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                if self.calls.len() <= *index {
                    self.calls.resize_with(index + 1, PartialCall::default);
                }
                let call = &mut self.calls[*index];
                if let Some(id) = id {
                    call.id = Some(id.clone());
                }
                if let Some(name) = name {
                    call.name = Some(name.clone());
                }
                call.arguments.push_str(arguments);
                let had_language = call.reader.language().is_some();
                let mut delta = String::new();
                call.reader.push(arguments, &mut delta);
                let language = call.reader.language();
                let news = !delta.is_empty() || (language.is_some() && !had_language);
                (news && call.reader.code_started()).then(|| CodeDelta {
                    index: *index,
                    language: language.map(str::to_string),
                    delta,
                })
            }
            StreamEvent::Usage { .. } | StreamEvent::Retrying { .. } => None,
        }
    }

    /// The finished tool calls, with ids for those the server gave none.
    pub fn tool_calls(&self, turn: u32) -> Vec<ToolCall> {
        self.calls
            .iter()
            .enumerate()
            .filter(|(_, c)| c.name.is_some() || !c.arguments.is_empty())
            .map(|(i, c)| ToolCall {
                id: c.id.clone().unwrap_or_else(|| format!("call_{turn}_{i}")),
                name: c
                    .name
                    .clone()
                    .unwrap_or_else(|| super::super::llm::tool::TOOL_NAME.into()),
                arguments: if c.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    c.arguments.clone()
                },
            })
            .collect()
    }
}

/// How often the code of a streaming tool call goes out at most, as one `BlockDelta`: a
/// model that writes a character at a time costs a face one event per interval, not one
/// per fragment.
pub const DELTA_INTERVAL: Duration = Duration::from_millis(40);
/// Code held back for the interval goes out at once past this size.
const DELTA_MAX: usize = 32 * 1024;

/// A reply as it streams, with the code deltas of its tool calls redacted (a secret cut
/// between fragments is caught) and gathered into few events.
pub struct Streaming {
    pub reply: Reply,
    redactor: Redactor,
    /// Per tool call: its redactor, bytes of a character cut by it, and the code not sent
    /// yet.
    calls: Vec<CallOut>,
    last_sent: Instant,
}

struct CallOut {
    redactor: StreamRedactor,
    carry: Vec<u8>,
    language: Option<String>,
    pending: String,
    /// A delta (or the language) waits to be sent.
    dirty: bool,
}

impl Streaming {
    pub fn new(redactor: Redactor) -> Streaming {
        Streaming {
            reply: Reply::default(),
            redactor,
            calls: Vec::new(),
            last_sent: Instant::now(),
        }
    }

    /// Applies a stream event. Returns the `BlockDelta`s due now, and whether code is held
    /// back (to be sent by [`Streaming::flush`] within [`DELTA_INTERVAL`]).
    pub fn apply(&mut self, event: &StreamEvent) -> (Vec<Event>, bool) {
        let Some(delta) = self.reply.apply(event) else {
            return (Vec::new(), self.held());
        };
        while self.calls.len() <= delta.index {
            self.calls.push(CallOut {
                redactor: StreamRedactor::new(self.redactor.clone()),
                carry: Vec::new(),
                language: None,
                pending: String::new(),
                dirty: false,
            });
        }
        let call = &mut self.calls[delta.index];
        let bytes = call.redactor.push(delta.delta.as_bytes());
        call.pending.push_str(&take_utf8(&mut call.carry, bytes));
        if delta.language.is_some() && call.language.is_none() {
            call.language = delta.language.map(|l| self.redactor.clean(&l));
        }
        call.dirty = true;
        let size: usize = self.calls.iter().map(|c| c.pending.len()).sum();
        if size >= DELTA_MAX || self.last_sent.elapsed() >= DELTA_INTERVAL {
            return (self.flush(), false);
        }
        (Vec::new(), true)
    }

    fn held(&self) -> bool {
        self.calls.iter().any(|c| c.dirty)
    }

    /// The code held back, as events (one per call that has some).
    pub fn flush(&mut self) -> Vec<Event> {
        self.last_sent = Instant::now();
        let mut events = Vec::new();
        for (index, call) in self.calls.iter_mut().enumerate() {
            if std::mem::take(&mut call.dirty) {
                events.push(Event::BlockDelta {
                    index,
                    language_tag: call.language.clone(),
                    delta: std::mem::take(&mut call.pending),
                });
            }
        }
        events
    }

    /// At the end of the stream: everything held back, what the redactors kept included.
    pub fn finish(&mut self) -> Vec<Event> {
        for call in &mut self.calls {
            let held = call.redactor.finish();
            let mut rest = std::mem::take(&mut call.carry);
            rest.extend(held);
            if !rest.is_empty() {
                call.pending.push_str(&String::from_utf8_lossy(&rest));
                call.dirty = true;
            }
        }
        self.flush()
    }
}

/// The text of `bytes` after `carry` (the start of a character cut off last time); the
/// start of a character cut off at their end is kept in `carry`.
fn take_utf8(carry: &mut Vec<u8>, bytes: Vec<u8>) -> String {
    let mut all = std::mem::take(carry);
    all.extend(bytes);
    match String::from_utf8(all) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            // No error length: the bytes end inside a character.
            let cut = e.utf8_error().error_len().is_none();
            let mut all = e.into_bytes();
            if cut {
                *carry = all.split_off(valid);
            }
            String::from_utf8_lossy(&all).into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_assemble_into_calls() {
        let mut r = Reply::default();
        let frag =
            |index, id: Option<&str>, name: Option<&str>, args: &str| StreamEvent::ToolCall {
                index,
                id: id.map(Into::into),
                name: name.map(Into::into),
                arguments: args.into(),
            };
        r.apply(&StreamEvent::Text("Let me look.".into()));
        r.apply(&frag(0, Some("a"), Some("execute"), "{\"language\":"));
        r.apply(&frag(1, None, Some("execute"), "{}"));
        r.apply(&frag(0, Some("a"), Some("execute"), "\"python\"}"));
        let calls = r.tool_calls(3);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id, "a");
        assert_eq!(calls[0].arguments, "{\"language\":\"python\"}");
        assert_eq!(calls[1].id, "call_3_1");
        assert_eq!(r.text, "Let me look.");
    }

    #[test]
    fn code_arrives_as_deltas() {
        let mut r = Reply::default();
        let frag = |args: &str| StreamEvent::ToolCall {
            index: 0,
            id: None,
            name: None,
            arguments: args.into(),
        };
        assert_eq!(r.apply(&frag("{\"code\": \"ls")).unwrap().delta, "ls");
        // The escape cut in two: nothing new until it is whole.
        assert_eq!(r.apply(&frag(" -l\\")).unwrap().delta, " -l");
        assert_eq!(r.apply(&frag("n")).unwrap().delta, "\n");
        assert_eq!(r.apply(&frag("\", \"language\": \"ba")), None);
        let last = r.apply(&frag("sh\"}")).unwrap();
        assert_eq!((last.delta.as_str(), last.language.as_deref()), ("", Some("bash")));
    }

    #[test]
    fn deltas_are_gathered_redacted_and_complete() {
        let key = "sk-secret-42abcdef";
        let code = format!("print('é{key}')\n").repeat(50);
        let args = serde_json::json!({"language": "python", "code": code}).to_string();
        let mut s = Streaming::new(Redactor::from_values(vec![key.to_string()]));
        let mut events = Vec::new();
        let bytes = args.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            let mut end = (at + 3).min(bytes.len());
            while !args.is_char_boundary(end) {
                end += 1;
            }
            events.extend(
                s.apply(&StreamEvent::ToolCall {
                    index: 0,
                    id: None,
                    name: None,
                    arguments: args[at..end].to_string(),
                })
                .0,
            );
            at = end;
        }
        events.extend(s.finish());
        // Far fewer events than fragments: they are gathered.
        assert!(events.len() < 20, "{} events", events.len());
        let mut shown = String::new();
        for e in &events {
            let Event::BlockDelta {
                delta, language_tag, ..
            } = e
            else {
                panic!("{e:?}");
            };
            shown.push_str(delta);
            if !shown.is_empty() {
                assert_eq!(language_tag.as_deref(), Some("python"));
            }
        }
        assert_eq!(shown, code.replace(key, crate::secrets::REDACTED));
    }
}
