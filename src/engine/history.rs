//! The conversation, and fitting it into the context window: keep the system prompt and the
//! newest messages, drop the oldest, and never separate a tool call from its results.

use crate::llm::{Message, Role};

/// A rough token count: about four characters a token, plus a little per message.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

fn message_tokens(m: &Message) -> usize {
    4 + estimate_tokens(&m.content)
        + m.tool_calls
            .iter()
            .map(|c| 8 + estimate_tokens(&c.arguments))
            .sum::<usize>()
}

/// The messages to send: the newest that fit in `budget` tokens, whole units only (an
/// assistant message with tool calls travels with its results), starting with a user
/// message. Returns them and how many were left out.
pub fn fit(messages: &[Message], budget: usize) -> (Vec<Message>, usize) {
    let units = units(messages);
    let mut used = 0;
    let mut first = units.len();
    for (i, unit) in units.iter().enumerate().rev() {
        let cost: usize = messages[unit.clone()].iter().map(message_tokens).sum();
        // The newest unit always goes, even alone over the budget.
        if first != units.len() && used + cost > budget {
            break;
        }
        used += cost;
        first = i;
    }
    // Start at a user message when one is among those kept.
    while first + 1 < units.len() && messages[units[first].start].role != Role::User {
        first += 1;
    }
    let start = units.get(first).map_or(messages.len(), |u| u.start);
    (messages[start..].to_vec(), start)
}

/// Index ranges of the units: a tool-calling assistant message and the results after it
/// form one; every other message is one on its own.
fn units(messages: &[Message]) -> Vec<std::ops::Range<usize>> {
    let mut units = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let start = i;
        i += 1;
        if messages[start].role == Role::Assistant && !messages[start].tool_calls.is_empty() {
            while i < messages.len() && messages[i].role == Role::Tool {
                i += 1;
            }
        }
        units.push(start..i);
    }
    units
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolCall;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "execute".into(),
            arguments: "{}".into(),
        }
    }

    #[test]
    fn everything_fits_in_a_large_window() {
        let msgs = vec![Message::user("hi"), Message::assistant("hello", vec![])];
        let (kept, dropped) = fit(&msgs, 10_000);
        assert_eq!(kept, msgs);
        assert_eq!(dropped, 0);
    }

    #[test]
    fn drops_the_oldest_and_keeps_calls_with_their_results() {
        let big = "x".repeat(400); // ~100 tokens
        let msgs = vec![
            Message::user(&big),
            Message::assistant("", vec![call("a"), call("b")]),
            Message::tool_result("a", &big),
            Message::tool_result("b", &big),
            Message::user("next"),
            Message::assistant("", vec![call("c")]),
            Message::tool_result("c", "short"),
        ];
        // Room for the last user message and the last unit, not for the big results.
        let (kept, dropped) = fit(&msgs, 60);
        assert_eq!(dropped, 4);
        assert_eq!(kept[0], Message::user("next"));
        assert_eq!(kept.len(), 3);
        // A window that would cut between a call and its results drops the whole unit.
        let (kept, _) = fit(&msgs, 300);
        assert!(kept.iter().all(|m| m.role != Role::Tool
            || kept.iter().any(|a| {
                a.tool_calls
                    .iter()
                    .any(|c| Some(&c.id) == m.tool_call_id.as_ref())
            })));
        assert_eq!(kept[0].role, Role::User);
    }

    #[test]
    fn the_newest_message_goes_even_when_too_big() {
        let msgs = vec![Message::user("old"), Message::user("x".repeat(4000))];
        let (kept, dropped) = fit(&msgs, 10);
        assert_eq!(kept.len(), 1);
        assert_eq!(dropped, 1);
    }
}
