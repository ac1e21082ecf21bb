//! Characters that make code read differently from how it runs (see
//! [`crate::safe_text::Hidden`]): a variation selector or a zero-width space drawn as
//! nothing, a bidi control that reorders the text, a lone carriage return after which a
//! terminal draws over the line. The faces show them visibly; here a block that holds any
//! gets a finding for each kind (quoting the first line that holds it), so that its verdict
//! is never "read-only", no rule allows it, and it asks in every mode.

use std::fmt::Write as _;

use super::verdict::{Decision, Finding, RiskClass, Verdict};
use crate::safe_text::{Hidden, marks};

/// At most this many code points, and this many further lines, are named in a finding.
const NAMED: usize = 3;
const MORE_LINES: usize = 5;

/// What a finding says a kind of character does.
fn what(kind: Hidden) -> &'static str {
    match kind {
        Hidden::CarriageReturn => {
            "a lone carriage return, after which a terminal draws over the line (Python, \
             JavaScript and R read it as a line break)"
        }
        Hidden::Control => "a control character, which can act on a terminal",
        Hidden::VariationSelector => "a variation selector, drawn as nothing",
        Hidden::Tag => "a tag character, drawn as nothing",
        Hidden::Bidi => "a bidirectional control, which reorders the text around it",
        Hidden::ZeroWidth => "a zero-width character, drawn as nothing",
        Hidden::Separator => {
            "a line or paragraph separator, drawn as nothing (JavaScript reads it as a line break)"
        }
        Hidden::Invisible => "an invisible character, drawn as nothing",
    }
}

/// The findings for the hidden characters in `code`, one per kind in the order of
/// [`Hidden`]; none for plain text.
pub(crate) fn findings(code: &str) -> Vec<Finding> {
    let marks = marks(code);
    if marks.is_empty() {
        return Vec::new();
    }
    // (kind, distinct characters, distinct lines), in order of appearance.
    let mut kinds: Vec<(Hidden, Vec<char>, Vec<usize>)> = Vec::new();
    for m in &marks {
        match kinds.iter_mut().find(|(k, _, _)| *k == m.kind) {
            Some((_, chars, lines)) => {
                if !chars.contains(&m.c) {
                    chars.push(m.c);
                }
                if lines.last() != Some(&m.line) {
                    lines.push(m.line);
                }
            }
            None => kinds.push((m.kind, vec![m.c], vec![m.line])),
        }
    }
    kinds.sort_by_key(|(k, _, _)| *k);
    let lines: Vec<&str> = code.split('\n').collect();
    kinds
        .into_iter()
        .map(|(kind, chars, at)| {
            let first = at[0];
            let line = lines.get(first - 1).copied().unwrap_or("");
            // The `\r` of a `\r\n` ends the line; a lone one at the very end is the mark.
            let quoted = match line.strip_suffix('\r') {
                Some(l) if first < lines.len() => l,
                _ => line,
            };
            let mut codes: Vec<String> = chars
                .iter()
                .take(NAMED)
                .map(|c| format!("U+{:04X}", *c as u32))
                .collect();
            if chars.len() > NAMED {
                codes.push("…".into());
            }
            let mut explanation = format!(
                "{} ({}): the code may not run as it reads",
                what(kind),
                codes.join(", ")
            );
            if at.len() > 1 {
                let more = &at[1..];
                let shown: Vec<usize> = more.iter().copied().take(MORE_LINES).collect();
                let _ = write!(
                    explanation,
                    "; also on {}",
                    crate::safe_text::line_list(&shown)
                );
                if more.len() > MORE_LINES {
                    explanation.push_str(", …");
                }
            }
            Finding {
                class: RiskClass::HiddenCharacters,
                explanation,
                quoted: quoted.to_string(),
                line: first,
            }
        })
        .collect()
}

/// Adds the findings for the hidden characters in `code` (an MCP tool's arguments) to a
/// verdict made without reading it: the class, and no rule allows it any more.
pub(crate) fn apply(verdict: &mut Verdict, code: &str) {
    let found = findings(code);
    if found.is_empty() {
        return;
    }
    verdict.findings.extend(found);
    verdict.classes.push(RiskClass::HiddenCharacters);
    verdict.classes.sort();
    verdict.classes.dedup();
    verdict.highest = verdict.highest.max(RiskClass::HiddenCharacters);
    if verdict.decision == Decision::Allow {
        verdict.decision = Decision::Ask;
        verdict.rule = None;
    }
}
