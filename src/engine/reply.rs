//! One model reply as it streams in: its text, and its tool calls assembled from fragments.

use crate::llm::{StreamEvent, ToolCall};

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
}

impl Reply {
    /// Applies a stream event; returns the index of the tool call it touched, if any.
    pub fn apply(&mut self, event: &StreamEvent) -> Option<usize> {
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
                Some(*index)
            }
            StreamEvent::Usage { .. } | StreamEvent::Retrying { .. } => None,
        }
    }

    /// The arguments streamed so far for call `index`.
    pub fn arguments(&self, index: usize) -> &str {
        self.calls.get(index).map_or("", |c| c.arguments.as_str())
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
}
