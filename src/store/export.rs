//! A saved session as Markdown: the one exporter behind `oi-tui sessions export`, the
//! browser's `x` and the workbench's `/export`. Every block is there with its code (the
//! proposal and, when the person edited it, the code that ran), the decision, the status and
//! the output; the Markdown is valid whatever the text holds (code fences outgrow any run of
//! backticks inside, emphasis is escaped and never opens or closes on a space).

use super::read::{Exported, StoredBlock, StoredMessage};

/// One step of a session in the order it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    Message(&'a StoredMessage),
    Block(&'a StoredBlock),
}

impl Exported {
    /// The messages and blocks still in the conversation (not dropped by /undo or /reset),
    /// in order: each block right after the message it followed.
    pub fn timeline(&self) -> Vec<Item<'_>> {
        let mut items: Vec<((i64, u8, i64), Item<'_>)> = self
            .messages
            .iter()
            .filter(|m| !m.dropped)
            .map(|m| ((m.id, 0, 0), Item::Message(m)))
            .chain(self.blocks.iter().filter(|b| !b.dropped).map(|b| {
                (
                    (b.after_message.unwrap_or(0), 1, b.block_id),
                    Item::Block(b),
                )
            }))
            .collect();
        items.sort_by_key(|(key, _)| *key);
        items.into_iter().map(|(_, item)| item).collect()
    }

    /// The session as Markdown.
    pub fn markdown(&self) -> String {
        let s = &self.session;
        let mut out = format!(
            "# {}\n\n- id: `{}`\n- model: {}\n- directory: {}\n- started: {}\n\n",
            one_line(&s.title),
            s.id,
            if s.model.is_empty() { "-" } else { &s.model },
            s.directory(),
            super::format_time(s.created_at)
        );
        if let Some(why) = &s.incomplete {
            // Before the conversation: what follows is not all of it.
            out.insert_str(
                out.len() - 1,
                &format!("- **incomplete**: {}\n", one_line(why)),
            );
        }
        for item in self.timeline() {
            match item {
                Item::Message(m) => match m.role.as_str() {
                    "user" if !m.shown().trim().is_empty() => {
                        out.push_str(&format!("## You\n\n{}\n\n", m.shown().trim()));
                    }
                    "assistant" if m.partial => {
                        out.push_str(&format!(
                            "## oi-tui (partial: {PARTIAL_REPLY})\n\n{}\n\n",
                            m.content.trim()
                        ));
                    }
                    "assistant" if !m.content.trim().is_empty() => {
                        out.push_str(&format!("## oi-tui\n\n{}\n\n", m.content.trim()));
                    }
                    _ => {}
                },
                Item::Block(b) => out.push_str(&block_markdown(b)),
            }
        }
        out
    }
}

/// What became of a block, in words: `run`, `edited, then run`, `skipped: too risky`, ...
pub fn decision_words(b: &StoredBlock) -> String {
    match b.decision.as_str() {
        "run" => "run".to_string(),
        "edited" => "edited, then run".to_string(),
        "user" => "run by you".to_string(),
        "skipped" => match b.skip_reason.as_deref().map(str::trim) {
            Some(reason) if !reason.is_empty() => format!("skipped: {reason}"),
            _ => "skipped".to_string(),
        },
        "proposed" => "not decided (the session ended while it waited)".to_string(),
        other => other.to_string(),
    }
}

/// What is said of a reply whose stream never ended.
pub const PARTIAL_REPLY: &str = "oi-tui stopped while this reply streamed";

/// How a block ended, in words: `ran · exit 0 · 0.42 s`.
pub fn status_words(b: &StoredBlock) -> Option<String> {
    if b.interrupted {
        return Some(super::read::INTERRUPTED.to_string());
    }
    let status = b.status.as_deref().filter(|s| *s != "skipped")?;
    let mut parts = vec![status.to_string()];
    if let Some(code) = b.exit_code {
        parts.push(format!("exit {code}"));
    }
    if let Some(signal) = &b.signal {
        parts.push(format!("killed by {signal}"));
    }
    if let Some(ms) = b.duration_ms
        && status != "not run"
        && status != "written"
    {
        parts.push(format!("{:.2} s", ms as f64 / 1000.0));
    }
    if b.state_lost {
        parts.push("kernel restarted".to_string());
    }
    Some(parts.join(" · "))
}

/// The output to show for a block: the stored tail, or (for sessions written before the
/// tail was kept) what went to the model.
pub fn shown_output(b: &StoredBlock) -> Option<&str> {
    b.tail
        .as_deref()
        .or(b.output.as_deref())
        .filter(|o| !o.trim().is_empty())
}

fn block_markdown(b: &StoredBlock) -> String {
    let ran = b.edited_code.as_deref().unwrap_or(&b.proposed_code);
    let mut out = String::new();
    if b.decision == "edited" && b.edited_code.is_some() {
        out.push_str(&emphasis(&format!("block {} · proposed", b.block_id)));
        out.push_str("\n\n");
        out.push_str(&fence(&b.language, &b.proposed_code));
        out.push_str("\n\n");
        out.push_str(&emphasis("as edited and run"));
        out.push_str("\n\n");
    }
    out.push_str(&fence(&b.language, ran));
    out.push_str("\n\n");
    let mut line = format!("block {} · {}", b.block_id, decision_words(b));
    if let Some(caller) = &b.caller {
        line = format!(
            "block {} · {} · {}",
            b.block_id,
            crate::protocol::caller_origin(&one_line(caller)),
            decision_words(b)
        );
    }
    if let Some(status) = status_words(b) {
        line.push_str(" · ");
        line.push_str(&status);
    }
    out.push_str(&emphasis(&line));
    out.push_str("\n\n");
    if let Some(output) = shown_output(b) {
        out.push_str(&fence("text", output.trim_end()));
        out.push_str("\n\n");
    }
    for (n, image) in b.images.iter().enumerate() {
        let alt = format!("image {}: {}, {}", n + 1, image.origin(), image.describe());
        out.push_str(&format!(
            "![{}]({})\n\n",
            escape(&one_line(&alt)),
            link_target(&image.path)
        ));
    }
    for note in b.notes.iter().filter(|n| !n.trim().is_empty()) {
        out.push_str(&format!("> {}\n\n", one_line(note)));
    }
    out
}

/// A path as a Markdown link target: in angle brackets, with what could end or break them
/// (and spaces, for the previewers that want URLs) percent-encoded.
fn link_target(path: &std::path::Path) -> String {
    let mut target = String::from("<");
    for c in path.to_string_lossy().chars() {
        match c {
            '<' | '>' | ' ' | '%' | '\\' => target.push_str(&format!("%{:02X}", c as u32)),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    target.push_str(&format!("%{b:02X}"));
                }
            }
            c => target.push(c),
        }
    }
    target.push('>');
    target
}

/// `text` in italics, valid Markdown whatever it holds: trimmed (emphasis cannot open or
/// close on a space), Markdown punctuation escaped, newlines folded. Empty text stays empty.
pub fn emphasis(text: &str) -> String {
    let text = one_line(text);
    let text = text.trim();
    if text.is_empty() {
        return String::new();
    }
    format!("*{}*", escape(text))
}

/// Backslash-escapes the characters that could start or end inline Markdown.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '|' | '~'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A fenced code block whose fence is longer than any run of backticks in `code`.
pub fn fence(info: &str, code: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in code.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let ticks = "`".repeat((longest + 1).max(3));
    // An info string may not hold backticks; a language name never does.
    let info: String = info
        .chars()
        .filter(|c| *c != '`' && !c.is_whitespace())
        .collect();
    format!("{ticks}{info}\n{}\n{ticks}", code.trim_end_matches('\n'))
}

/// Newlines (and runs of spaces around them) folded into single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_links_cannot_be_broken_by_their_path() {
        assert_eq!(
            link_target(std::path::Path::new("/d/my <chart>\n1%.png")),
            "</d/my%20%3Cchart%3E%0A1%25.png>"
        );
    }

    #[test]
    fn emphasis_is_trimmed_and_escaped() {
        assert_eq!(emphasis(" ran  "), "*ran*");
        assert_eq!(emphasis("a*b_c"), "*a\\*b\\_c*");
        assert_eq!(emphasis("   "), "");
        assert_eq!(emphasis("two\nlines"), "*two lines*");
    }

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fence("sh", "ls"), "```sh\nls\n```");
        let code = "echo ```` four";
        let f = fence("sh", code);
        assert!(f.starts_with("`````sh\n") && f.ends_with("\n`````"), "{f}");
    }
}
