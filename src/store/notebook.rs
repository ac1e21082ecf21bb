//! A saved session as a Jupyter notebook (nbformat 4.5, with cell ids: what Jupyter
//! writes today; the ids are numbered in order, so that exporting the same session twice
//! gives the same file). The conversation is Markdown cells; each block that ran is a
//! code cell (the code as run, edited or not) with its recorded output as a `stdout`
//! stream and its images as `display_data` in their own MIME type; a block that did not
//! run is a Markdown cell quoting its code and saying why.
//!
//! The notebook always asks for the Python 3 kernel: it is the one every Jupyter has, and
//! IPython's cell magics run the other languages (`%%bash`, `%%ruby`, `%%perl`,
//! `%%script node`, `%%script Rscript -`, `%%html`, ...). A session with other languages
//! opens with a Markdown cell that says which cells are which and that, unlike in
//! oi-tui, each such cell runs in a fresh process.

use base64::Engine as _;
use serde_json::{Value, json};

use super::export::{Item, PARTIAL_REPLY, emphasis, fence, shown_output, status_words};
use super::formats::{code_run, one_line, ran, why_not_run};
use super::read::{Exported, StoredBlock, StoredMessage};
use crate::protocol::{Image, ImageFormat, Language};

/// The first line of a cell in `language` under a Python kernel, and how it runs there.
fn cell_magic(language: Language) -> Option<(&'static str, &'static str)> {
    Some(match language {
        Language::Python => return None,
        Language::Shell => ("%%bash", "bash"),
        Language::JavaScript => ("%%script node", "Node.js (`node`)"),
        Language::R => ("%%script Rscript -", "R (`Rscript`)"),
        Language::Ruby => ("%%ruby", "Ruby"),
        Language::Perl => ("%%perl", "Perl"),
        Language::Java => ("%%script jshell -q -", "JShell (`jshell`, a JDK)"),
        Language::PowerShell => (
            "%%script pwsh -NoProfile -NonInteractive -Command -",
            "PowerShell (`pwsh`)",
        ),
        Language::Html => ("%%html", "shown as HTML by Jupyter itself"),
    })
}

/// Cells as they are built.
struct Cells {
    cells: Vec<Value>,
    count: u64,
}

impl Cells {
    fn id(&self) -> String {
        format!("cell-{}", self.cells.len() + 1)
    }

    /// A Markdown cell: text to read, so control and hidden characters are shown visibly
    /// (`⟨U+FE00⟩`, `␍`), as in the Markdown export.
    fn markdown(&mut self, text: &str) {
        let shown = crate::safe_text::visible(text.trim_end());
        let cell = json!({
            "cell_type": "markdown",
            "id": self.id(),
            "metadata": {},
            "source": lines(&shown),
        });
        self.cells.push(cell);
    }

    fn code(&mut self, source: &str, outputs: Vec<Value>, metadata: Value) {
        self.count += 1;
        let cell = json!({
            "cell_type": "code",
            "id": self.id(),
            "execution_count": self.count,
            "metadata": metadata,
            "outputs": outputs,
            "source": lines(source),
        });
        self.cells.push(cell);
    }
}

/// Text as nbformat keeps it: a list of lines, each with its newline but the last.
fn lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

impl Exported {
    /// The session as an nbformat 4.5 notebook (JSON).
    pub fn notebook(&self) -> String {
        let s = &self.session;
        let mut cells = Cells {
            cells: Vec::new(),
            count: 0,
        };
        let mut head = format!(
            "# {}\n\n- oi-tui session `{}`\n- model: {}\n- directory: {}\n- started: {}\n",
            one_line(&s.title),
            s.id,
            if s.model.is_empty() { "-" } else { &s.model },
            s.directory(),
            super::format_time(s.created_at)
        );
        head.push_str(
            "\nThe conversation is in Markdown cells; each block that ran is a code cell with the output it printed then (run the notebook again to refresh it).\n",
        );
        cells.markdown(&head);
        let timeline = self.timeline();
        if let Some(note) = languages_note(&timeline) {
            cells.markdown(&note);
        }
        for item in timeline {
            match item {
                Item::Message(m) => {
                    if let Some(text) = message_markdown(m) {
                        cells.markdown(&text);
                    }
                }
                Item::Block(b) => block_cells(&mut cells, b),
            }
        }
        let notebook = json!({
            "cells": cells.cells,
            "metadata": {
                "kernelspec": {
                    "display_name": "Python 3 (ipykernel)",
                    "language": "python",
                    "name": "python3",
                },
                "language_info": {
                    "codemirror_mode": { "name": "ipython", "version": 3 },
                    "file_extension": ".py",
                    "mimetype": "text/x-python",
                    "name": "python",
                    "nbconvert_exporter": "python",
                    "pygments_lexer": "ipython3",
                },
                "oi_tui": {
                    "session": s.id,
                    "title": s.title,
                    "model": s.model,
                    "cwd": s.cwd,
                    "created_at_ms": s.created_at,
                },
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        });
        // A `Value` always serialises.
        serde_json::to_string_pretty(&notebook).unwrap_or_default() + "\n"
    }
}

/// What a message is as a Markdown cell (None: nothing the person saw).
fn message_markdown(m: &StoredMessage) -> Option<String> {
    match m.role.as_str() {
        "user" if !m.shown().trim().is_empty() => Some(format!("**You:**\n\n{}", m.shown().trim())),
        "assistant" if m.partial => Some(format!(
            "**oi-tui** ({PARTIAL_REPLY}):\n\n{}",
            m.content.trim()
        )),
        "assistant" if !m.content.trim().is_empty() => {
            Some(format!("**oi-tui:**\n\n{}", m.content.trim()))
        }
        _ => None,
    }
}

/// The first cell after the title, for sessions not all in Python: which cells are in
/// which language and how they run here.
fn languages_note(timeline: &[Item<'_>]) -> Option<String> {
    let mut used: Vec<(Language, Vec<i64>)> = Vec::new();
    for item in timeline {
        if let Item::Block(b) = item
            && ran(b)
            && let Some(language) = Language::parse(&b.language)
        {
            match used.iter_mut().find(|(l, _)| *l == language) {
                Some((_, blocks)) => blocks.push(b.block_id),
                None => used.push((language, vec![b.block_id])),
            }
        }
    }
    if used.iter().all(|(l, _)| *l == Language::Python) {
        return None;
    }
    let mut note = String::from(
        "**Languages.** This session ran code in more than one language. The notebook uses the Python 3 kernel; each cell in another language starts with an IPython cell magic that hands it to its own interpreter, which must be installed where the notebook runs. Such a cell runs in a fresh process each time: unlike in the oi-tui session, its variables and working directory do not carry over to the next cell.\n\n",
    );
    for (language, blocks) in &used {
        let list = blocks
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let how = match cell_magic(*language) {
            None => "in the notebook's kernel".to_string(),
            Some((magic, by)) => format!("`{magic}`: {by}"),
        };
        let blocks = if blocks.len() == 1 { "block" } else { "blocks" };
        note.push_str(&format!("- {}: {blocks} {list} ({how})\n", language.name()));
    }
    Some(note)
}

fn block_cells(cells: &mut Cells, b: &StoredBlock) {
    let Some(language) = Language::parse(&b.language) else {
        // A call of another tool (over MCP): its arguments and its answer.
        let mut text = emphasis(&format!(
            "block {} · tool {} · {}",
            b.block_id,
            b.language,
            why_not_run(b)
        ));
        text.push_str("\n\n");
        text.push_str(&fence("json", code_run(b)));
        if let Some(output) = shown_output(b) {
            text.push_str("\n\n");
            text.push_str(&fence("text", output.trim_end()));
        }
        cells.markdown(&text);
        return;
    };
    if !ran(b) {
        let mut text = emphasis(&format!(
            "block {} · {} · {} (it did not run here either)",
            b.block_id,
            language.name(),
            why_not_run(b)
        ));
        text.push_str("\n\n");
        text.push_str(&fence(language.name(), &b.proposed_code));
        cells.markdown(&text);
        return;
    }
    if b.decision == "edited"
        && let Some(edited) = &b.edited_code
        && *edited != b.proposed_code
    {
        let mut text = emphasis(&format!(
            "block {} · proposed (the person edited it; the next cell is the code that ran)",
            b.block_id
        ));
        text.push_str("\n\n");
        text.push_str(&fence(language.name(), &b.proposed_code));
        cells.markdown(&text);
    }
    let code = code_run(b);
    let source = match cell_magic(language) {
        None => code.trim_end_matches('\n').to_string(),
        Some((magic, _)) => format!("{magic}\n{}", code.trim_end_matches('\n')),
    };
    let mut outputs = Vec::new();
    if let Some(output) = shown_output(b) {
        let text = format!("{}\n", output.trim_end_matches('\n'));
        outputs.push(json!({
            "output_type": "stream",
            "name": "stdout",
            "text": lines(&text),
        }));
    }
    let mut missing = Vec::new();
    for (n, image) in b.images.iter().enumerate() {
        match image_output(image) {
            Ok(output) => outputs.push(output),
            Err(why) => missing.push(format!(
                "image {} of block {} ({}, {}) is not in this notebook: {why}",
                n + 1,
                b.block_id,
                image.origin(),
                image.describe()
            )),
        }
    }
    let mut metadata = json!({
        "oi_tui": {
            "block": b.block_id,
            "language": language.name(),
            "decision": b.decision,
            "status": b.status,
            "exit_code": b.exit_code,
        }
    });
    // It failed in the session, and will again: Jupyter runs the cells after it all the same.
    if b.status.as_deref() == Some("failed") || b.exit_code.is_some_and(|c| c != 0) {
        metadata["tags"] = json!(["raises-exception"]);
    }
    // The code cell keeps the code exactly as it ran (escaped as `\uXXXX` in the file), so
    // that running the notebook runs the same; Jupyter draws hidden characters as nothing,
    // so a cell before it says what they are and where, and shows the code with them marked.
    let warnings = crate::safe_text::warnings(code);
    if !warnings.is_empty() {
        let mut text = emphasis(&format!(
            "block {} · ⚠ hidden characters: the next cell holds them exactly as it ran, and \
             Jupyter does not show them",
            b.block_id
        ));
        text.push_str("\n\n");
        for warning in &warnings {
            text.push_str(&format!("- {warning}\n"));
        }
        text.push('\n');
        text.push_str(&fence(language.name(), code.trim_end_matches('\n')));
        cells.markdown(&text);
    }
    cells.code(&source, outputs, metadata);
    // What the code cell cannot say: a failure, a note, an image that is gone.
    let ended_well = !b.interrupted && matches!(b.status.as_deref(), Some("ran" | "written"));
    let notes: Vec<&String> = b.notes.iter().filter(|n| !n.trim().is_empty()).collect();
    if !ended_well || !notes.is_empty() || !missing.is_empty() {
        let status = status_words(b).unwrap_or_else(|| "no result was recorded".to_string());
        let mut text = emphasis(&format!("block {} · {status}", b.block_id));
        text.push_str("\n\n");
        for line in notes
            .iter()
            .map(|n| n.as_str())
            .chain(missing.iter().map(String::as_str))
        {
            text.push_str(&format!("> {}\n>\n", one_line(line)));
        }
        cells.markdown(&text);
    }
}

/// An image as a `display_data` output in its own MIME type (SVG as text, the others in
/// base64), with a line of text for front ends that show none of them.
fn image_output(image: &Image) -> Result<Value, String> {
    let bytes = std::fs::read(&image.path)
        .map_err(|e| format!("{} cannot be read ({e})", image.path.display()))?;
    let data = if image.format == ImageFormat::Svg {
        String::from_utf8(bytes).map_err(|_| "the SVG file is not UTF-8 text".to_string())?
    } else {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    };
    let mut bundle = serde_json::Map::new();
    bundle.insert(image.format.mime().to_string(), Value::String(data));
    bundle.insert(
        "text/plain".to_string(),
        Value::String(format!("<{}: {}>", image.origin(), image.describe())),
    );
    Ok(json!({
        "output_type": "display_data",
        "data": bundle,
        "metadata": {},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ImageSource;
    use crate::store::{SessionRow, StoredBlock};

    fn block(
        id: i64,
        language: &str,
        code: &str,
        decision: &str,
        status: Option<&str>,
    ) -> StoredBlock {
        StoredBlock {
            block_id: id,
            language: language.into(),
            proposed_code: code.into(),
            edited_code: None,
            decision: decision.into(),
            status: status.map(str::to_string),
            exit_code: status.map(|s| if s == "failed" { 1 } else { 0 }),
            signal: None,
            duration_ms: Some(10),
            output: None,
            created_at: 0,
            skip_reason: None,
            tail: Some(format!("out {id}\n")),
            notes: Vec::new(),
            state_lost: false,
            after_message: Some(1),
            dropped: false,
            interrupted: false,
            caller: None,
            images: Vec::new(),
        }
    }

    fn session(blocks: Vec<StoredBlock>) -> Value {
        let exported = Exported {
            session: SessionRow {
                id: "20261130-000000-000001".into(),
                title: "a title\nover two lines".into(),
                created_at: 0,
                updated_at: 0,
                model: String::new(),
                cwd: String::new(),
                executor: String::new(),
                messages: 0,
                blocks_run: 0,
                blocks_skipped: 0,
                incomplete: None,
            },
            messages: Vec::new(),
            blocks,
            events: Vec::new(),
        };
        serde_json::from_str(&exported.notebook()).unwrap()
    }

    fn markdown(nb: &Value) -> String {
        nb["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["cell_type"] == "markdown")
            .flat_map(|c| {
                c["source"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(Value::as_str)
            })
            .collect()
    }

    #[test]
    fn a_python_only_session_has_no_language_note_and_failed_cells_are_tagged() {
        let nb = session(vec![
            block(1, "python", "print(1)", "run", Some("ran")),
            block(2, "python", "1/0", "run", Some("failed")),
            block(3, "shell", "rm -rf build", "skipped", Some("skipped")),
        ]);
        assert_eq!(nb["nbformat_minor"], 5);
        let text = markdown(&nb);
        assert!(!text.contains("**Languages.**"), "{text}");
        assert!(text.contains("# a title over two lines"), "{text}");
        assert!(
            text.contains("rm -rf build") && text.contains("skipped"),
            "{text}"
        );
        let code: Vec<&Value> = nb["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["cell_type"] == "code")
            .collect();
        assert_eq!(code.len(), 2);
        assert!(code[0]["metadata"].get("tags").is_none());
        assert_eq!(code[1]["metadata"]["tags"], json!(["raises-exception"]));
        let ids: Vec<&str> = nb["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap())
            .collect();
        let mut unique = ids.clone();
        unique.dedup();
        assert_eq!(ids, unique, "cell ids are unique");
    }

    #[test]
    fn hidden_characters_stay_in_the_code_cell_and_are_shown_in_the_cell_before_it() {
        let code = "target\u{fe00} = 'keep.txt'\nos.remove(target\u{fe00})  # \u{202e}x";
        let nb = session(vec![
            block(1, "python", code, "run", Some("ran")),
            block(2, "python", "print('plain')", "run", Some("ran")),
        ]);
        let cells = nb["cells"].as_array().unwrap();
        let code_cells: Vec<&Value> = cells.iter().filter(|c| c["cell_type"] == "code").collect();
        let source: String = code_cells[0]["source"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(source, code, "the code as it ran");
        let at = cells.iter().position(|c| c["cell_type"] == "code").unwrap();
        let before: String = cells[at - 1]["source"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(before.contains("block 1 · ⚠ hidden characters"), "{before}");
        assert!(before.contains("variation selectors"), "{before}");
        assert!(before.contains("bidirectional controls"), "{before}");
        assert!(
            before.contains("os.remove(target⟨U+FE00⟩)  # ⟨U+202E⟩x"),
            "{before}"
        );
        assert!(!markdown(&nb).contains('\u{fe00}'));
        assert_eq!(markdown(&nb).matches("hidden characters").count(), 1);
    }

    #[test]
    fn images_in_their_own_mime_type_and_a_missing_one_as_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("chart.svg");
        std::fs::write(
            &svg,
            "<svg xmlns='http://www.w3.org/2000/svg' width='4' height='2'/>",
        )
        .unwrap();
        let image = |path: std::path::PathBuf, format| Image {
            path,
            format,
            bytes: 10,
            width: Some(4),
            height: Some(2),
            source: ImageSource::Figure,
        };
        let mut b = block(1, "r", "plot(1)", "run", Some("ran"));
        b.images = vec![
            image(svg, ImageFormat::Svg),
            image(dir.path().join("gone.jpg"), ImageFormat::Jpeg),
        ];
        let nb = session(vec![b]);
        let cell = nb["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cell_type"] == "code")
            .unwrap();
        assert_eq!(cell["source"][0], "%%script Rscript -\n");
        let outputs = cell["outputs"].as_array().unwrap();
        assert_eq!(outputs.len(), 2, "{outputs:?}");
        assert!(
            outputs[1]["data"]["image/svg+xml"]
                .as_str()
                .unwrap()
                .starts_with("<svg")
        );
        let text = markdown(&nb);
        assert!(
            text.contains("**Languages.**") && text.contains("r: block 1"),
            "{text}"
        );
        assert!(
            text.contains("image 2 of block 1") && text.contains("gone.jpg"),
            "{text}"
        );
    }
}
