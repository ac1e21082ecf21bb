//! Fenced code blocks in a reply's text: how models without tool calling propose code.

use crate::exec::Language;

/// A fenced block with its info-string tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub tag: String,
    pub code: String,
}

/// The closed fenced blocks whose tag names a language oi-tui runs, in order. A fence
/// still open at the end (a reply cut short) is not proposed: half a block must not run.
pub fn runnable_fences(text: &str) -> Vec<Fence> {
    all_fences(text)
        .into_iter()
        .filter(|f| Language::parse(&f.tag).is_some())
        .collect()
}

/// Every closed fenced block (``` or ~~~, at most three spaces in), tag or not.
pub fn all_fences(text: &str) -> Vec<Fence> {
    let mut fences = Vec::new();
    let mut open: Option<(char, usize, String, Vec<&str>)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let trimmed = line.trim_start_matches(' ');
        let fence_char = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = fence_char.map_or(0, |c| trimmed.chars().take_while(|&x| x == c).count());
        match &mut open {
            None => {
                if indent <= 3 && run >= 3 {
                    let (Some(c), info) = (fence_char, trimmed[run..].trim()) else {
                        continue;
                    };
                    if c == '`' && info.contains('`') {
                        continue;
                    }
                    let tag = info
                        .split(|ch: char| ch.is_whitespace() || ch == '{' || ch == ',')
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    open = Some((c, run, tag, Vec::new()));
                }
            }
            Some((c, len, tag, lines)) => {
                let closes = indent <= 3
                    && fence_char == Some(*c)
                    && run >= *len
                    && trimmed[run..].trim().is_empty();
                if closes {
                    fences.push(Fence {
                        tag: std::mem::take(tag),
                        code: lines.join("\n"),
                    });
                    open = None;
                } else {
                    lines.push(line);
                }
            }
        }
    }
    fences
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tagged_blocks_in_order() {
        let text = "First:\n```python\nx = 1\nprint(x)\n```\nthen\n~~~bash\nls -l\n~~~\n";
        let fences = runnable_fences(text);
        assert_eq!(fences.len(), 2);
        assert_eq!(
            fences[0],
            Fence {
                tag: "python".into(),
                code: "x = 1\nprint(x)".into()
            }
        );
        assert_eq!(fences[1].tag, "bash");
        assert_eq!(fences[1].code, "ls -l");
    }

    #[test]
    fn skips_untagged_unknown_and_unclosed_blocks() {
        let text = "```\nplain\n```\n```json\n{}\n```\n```py\nok()\n```\n```python\nhalf";
        let fences = runnable_fences(text);
        assert_eq!(
            fences,
            vec![Fence {
                tag: "py".into(),
                code: "ok()".into()
            }]
        );
    }

    #[test]
    fn longer_fences_hold_shorter_ones() {
        let text =
            "````markdown\n```python\nnot run\n```\n````\n```sh {.line-numbers}\necho hi\n```";
        let fences = all_fences(text);
        assert_eq!(fences.len(), 2);
        assert_eq!(fences[0].code, "```python\nnot run\n```");
        assert_eq!(fences[1].tag, "sh");
        assert_eq!(runnable_fences(text).len(), 1);
    }
}
