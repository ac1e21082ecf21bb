//! One model reply as it streams in: its text, and its tool calls assembled from fragments,
//! with the code of each call decoded as it comes (once per fragment: linear in its size).

use std::time::{Duration, Instant};

use crate::llm::args_stream::ArgsStream;
use crate::llm::{StreamEvent, ToolCall};
use crate::protocol::Event;
use crate::secrets::Redactor;

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
                    .unwrap_or_else(|| super::tools::TOOL_NAME.into()),
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
    /// Per tool call: what is not sent yet.
    calls: Vec<CallOut>,
    last_sent: Instant,
}

#[derive(Default)]
struct CallOut {
    language: Option<String>,
    /// Code not sent yet, and the end of what was, held back because it may begin a
    /// secret.
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
        if self.calls.len() <= delta.index {
            self.calls.resize_with(delta.index + 1, CallOut::default);
        }
        let call = &mut self.calls[delta.index];
        call.pending.push_str(&delta.delta);
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
        self.send(false)
    }

    /// At the end of the stream: everything held back.
    pub fn finish(&mut self) -> Vec<Event> {
        self.send(true)
    }

    fn send(&mut self, end: bool) -> Vec<Event> {
        self.last_sent = Instant::now();
        let mut events = Vec::new();
        for (index, call) in self.calls.iter_mut().enumerate() {
            if !std::mem::take(&mut call.dirty) {
                continue;
            }
            let text = self.redactor.clean(&std::mem::take(&mut call.pending));
            // The end of it may be the start of a secret whose rest is still to come.
            let hold = if end {
                0
            } else {
                secret_start(&text, self.redactor.secrets())
            };
            let (out, kept) = text.split_at(text.len() - hold);
            call.pending = kept.to_string();
            events.push(Event::BlockDelta {
                index,
                language_tag: call.language.clone(),
                delta: out.to_string(),
            });
        }
        events
    }
}

/// The length of the longest end of `text` that begins one of `secrets` (and is shorter).
fn secret_start(text: &str, secrets: &[String]) -> usize {
    secrets
        .iter()
        .filter_map(|secret| {
            (1..secret.len().min(text.len() + 1))
                .rev()
                .find(|&k| secret.is_char_boundary(k) && text.ends_with(&secret[..k]))
        })
        .max()
        .unwrap_or(0)
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
        assert_eq!(
            (last.delta.as_str(), last.language.as_deref()),
            ("", Some("bash"))
        );
    }

    #[test]
    fn deltas_are_gathered_redacted_and_complete() {
        let key = "sk-secret-42abcdef";
        let code = format!("print('é{key}')\n").repeat(50);
        let args = serde_json::json!({"language": "python", "code": code}).to_string();
        // Sent when the stream chooses, or after every fragment (the secret then always
        // arrives cut).
        for flush_each in [false, true] {
            let mut s = Streaming::new(Redactor::from_values(vec![key.to_string()]));
            let mut events = Vec::new();
            let mut at = 0;
            while at < args.len() {
                let mut end = (at + 3).min(args.len());
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
                if flush_each {
                    events.extend(s.flush());
                }
                at = end;
            }
            events.extend(s.finish());
            if !flush_each {
                // Far fewer events than fragments: they are gathered.
                assert!(events.len() < 20, "{} events", events.len());
            }
            let mut shown = String::new();
            for e in &events {
                let Event::BlockDelta {
                    delta,
                    language_tag,
                    ..
                } = e
                else {
                    panic!("{e:?}");
                };
                assert!(!delta.contains("sk-"), "{delta:?}");
                shown.push_str(delta);
                // The code comes first here: the language once it has come.
                assert!(language_tag.is_none() || language_tag.as_deref() == Some("python"));
            }
            assert!(matches!(
                events.last(),
                Some(Event::BlockDelta { language_tag: Some(l), .. }) if l == "python"
            ));
            assert_eq!(shown, code.replace(key, crate::secrets::REDACTED));
        }
    }
}
