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

/// The estimated tokens of these messages.
pub fn tokens(messages: &[Message]) -> usize {
    messages.iter().map(message_tokens).sum()
}

/// What to say of a message of `tokens` that does not fit in `budget` tokens of a context
/// window of `window`, or None when it fits. `set`: the window was configured (else it is
/// the default, and the model's may be larger).
pub fn too_large(
    tokens: usize,
    bytes: usize,
    window: usize,
    budget: usize,
    set: bool,
) -> Option<String> {
    if tokens <= budget {
        return None;
    }
    let size = format!(
        "about {tokens} tokens ({bytes} bytes), more than fits in the context window of {window} tokens (about {budget} are left after the system prompt and the room kept for the reply)"
    );
    Some(if set {
        format!(
            "Not sent: your message is {size}. Shorten it (or give the path of a file instead of its contents), or raise --context-window (context_window in the config file) if the model takes more."
        )
    } else {
        format!(
            "Your message is {size}, the window assumed when none is set: it is sent whole, and the model may cut it or fail. --context-window (context_window in the config file) sets the model's real window, and then a message too large for it is not sent."
        )
    })
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
    // The person's newest message (the task the kept exchange works on) always goes, even
    // when the exchange alone fills the window: without it the model sees results of a
    // task it was never given, and some APIs refuse a conversation that starts otherwise.
    if !messages[start..].iter().any(|m| m.role == Role::User)
        && let Some(task) = messages[..start].iter().rposition(|m| m.role == Role::User)
    {
        let mut kept = Vec::with_capacity(messages.len() - start + 1);
        kept.push(messages[task].clone());
        kept.extend_from_slice(&messages[start..]);
        return (kept, start - 1);
    }
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

    /// An exchange that fills the window alone still goes with the task it answers.
    #[test]
    fn the_task_goes_with_an_exchange_that_fills_the_window_alone() {
        let big = "x".repeat(4000); // ~1000 tokens
        let msgs = vec![
            Message::user("an older task"),
            Message::assistant("done", vec![]),
            Message::user("the task"),
            Message::assistant(&big, vec![call("a")]),
            Message::tool_result("a", "ran"),
        ];
        let (kept, dropped) = fit(&msgs, 100);
        assert_eq!(kept[0], Message::user("the task"));
        assert_eq!(kept.len(), 3, "{kept:?}");
        assert_eq!(kept[2], Message::tool_result("a", "ran"));
        assert_eq!(dropped, 2);
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
    fn a_message_too_large_for_the_window_is_named_with_its_numbers() {
        assert_eq!(too_large(100, 400, 16_384, 12_000, true), None);
        let refused = too_large(2_621_440, 10_485_760, 16_384, 12_000, true).unwrap();
        assert!(refused.starts_with("Not sent"), "{refused}");
        assert!(refused.contains("2621440 tokens") && refused.contains("16384 tokens"));
        let warned = too_large(50_000, 200_000, 32_768, 24_000, false).unwrap();
        assert!(warned.contains("sent whole") && warned.contains("--context-window"));
        assert_eq!(tokens(&[Message::user("x".repeat(400))]), 104);
    }

    #[test]
    fn the_newest_message_goes_even_when_too_big() {
        let msgs = vec![Message::user("old"), Message::user("x".repeat(4000))];
        let (kept, dropped) = fit(&msgs, 10);
        assert_eq!(kept.len(), 1);
        assert_eq!(dropped, 1);
    }
}
