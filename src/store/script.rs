//! A saved session as a script to run again: the code that ran, in order (the person's
//! edit where there was one), under a header that says which session it was.
//!
//! - Python (`--format py`): Python blocks as they are; a block that failed in the session
//!   runs through `exec` in a `try`, so that, as in the session, its error is printed and
//!   the next block still runs. Blocks in other languages run through `subprocess` with
//!   their interpreter reading the code on standard input, which is how the session's
//!   kernels got it too (a file); HTML (written, not run) stays a comment.
//! - Shell (`--format sh`): shell blocks verbatim, in one bash process as in the session's
//!   shell kernel; blocks in other languages as here-documents to their interpreter
//!   (`python3 - <<'OI_TUI_EOF'`), with a delimiter that occurs in none of the code.
//!   Consecutive Python blocks share one here-document, and so their variables.
//!
//! A block that was interrupted or timed out is left as a comment (run as a script it
//! would likely hang again); blocks that did not run are comments saying why.

use super::export::{Item, status_words};
use super::formats::{code_run, one_line, ran, why_not_run};
use super::read::{Exported, StoredBlock};
use crate::protocol::Language;
use crate::safe_text::visible_line;

/// How a block in `language` runs from a script: its interpreter, reading the program on
/// standard input. None: it does not run (HTML is a page to open, not a program).
fn stdin_command(language: Language) -> Option<&'static [&'static str]> {
    Some(match language {
        Language::Python => &["python3", "-"],
        Language::Shell => &["bash", "-s"],
        Language::JavaScript => &["node", "-"],
        Language::R => &["Rscript", "-"],
        Language::Ruby => &["ruby", "-"],
        Language::Perl => &["perl", "-"],
        Language::Java => &["jshell", "-q", "-"],
        Language::PowerShell => &["pwsh", "-NoProfile", "-NonInteractive", "-Command", "-"],
        Language::Html => return None,
    })
}

/// What a block is in a script.
enum Part<'a> {
    /// It runs: its language and code.
    Run(Language, &'a str),
    /// It stays a comment, for this reason.
    Comment(String),
}

fn part(b: &StoredBlock) -> Part<'_> {
    let Some(language) = Language::parse(&b.language) else {
        return Part::Comment(format!("a call of the tool {}", visible_line(&b.language)));
    };
    if !ran(b) {
        return Part::Comment(why_not_run(b));
    }
    if b.interrupted || matches!(b.status.as_deref(), Some("interrupted" | "timed out")) {
        return Part::Comment(format!(
            "{}: left out, as it would likely not end by itself",
            status_words(b).unwrap_or_default()
        ));
    }
    if stdin_command(language).is_none() {
        return Part::Comment(format!(
            "{} is not a program to run",
            language.name().to_uppercase()
        ));
    }
    Part::Run(language, code_run(b))
}

fn failed(b: &StoredBlock) -> bool {
    b.status.as_deref() == Some("failed") || b.exit_code.is_some_and(|c| c != 0)
}

/// The comment line that opens a block: `# ---- block 3 · python · edited, then run · ran · exit 0`.
fn block_title(b: &StoredBlock) -> String {
    let mut line = format!(
        "# ---- block {} · {} · {}",
        b.block_id,
        visible_line(&b.language),
        why_not_run(b)
    );
    if let Some(status) = status_words(b).filter(|_| ran(b)) {
        line.push_str(" · ");
        line.push_str(&status);
    }
    line.push('\n');
    for (n, image) in b.images.iter().enumerate() {
        line.push_str(&format!(
            "#      made {}\n",
            visible_line(&image.line(n + 1))
        ));
    }
    line
}

/// `text` as comment lines.
fn commented(text: &str) -> String {
    text.trim_end_matches('\n')
        .lines()
        .map(|l| {
            if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {}\n", visible_line(l))
            }
        })
        .collect()
}

/// Code as a Python string literal (JSON's escapes are Python's too).
fn python_literal(code: &str) -> String {
    serde_json::to_string(code).unwrap_or_else(|_| "''".to_string())
}

/// A Python block that failed in the session: its error is printed and the script goes on.
fn guarded_python(b: &StoredBlock, code: &str) -> String {
    format!(
        "try:\n    exec(compile({}, \"<oi-tui block {}>\", \"exec\"), globals())\nexcept (Exception, SystemExit):\n    __import__(\"traceback\").print_exc()\n",
        python_literal(code),
        b.block_id
    )
}

fn with_newline(code: &str) -> String {
    let mut code = code.to_string();
    if !code.ends_with('\n') {
        code.push('\n');
    }
    code
}

impl Exported {
    fn script_header(&self, comment: &str) -> String {
        let s = &self.session;
        let mut out = format!(
            "# oi-tui session {}: {}\n# model: {} · directory: {} · started: {}\n",
            s.id,
            visible_line(&one_line(&s.title)),
            if s.model.is_empty() { "-" } else { &s.model },
            s.directory(),
            super::format_time(s.created_at)
        );
        out.push_str(comment);
        out
    }

    fn blocks_in_order(&self) -> Vec<&StoredBlock> {
        self.timeline()
            .into_iter()
            .filter_map(|i| match i {
                Item::Block(b) => Some(b),
                Item::Message(_) => None,
            })
            .collect()
    }

    /// The session as a Python script.
    pub fn python_script(&self) -> String {
        let blocks = self.blocks_in_order();
        let mut out = String::from("#!/usr/bin/env python3\n");
        out.push_str(&self.script_header(
            "# The code that ran in the session, in order (the edited code where the person\n# edited it). Blocks in other languages run with their interpreter through\n# subprocess, each in a fresh process: their variables and working directory do\n# not carry over. Blocks that did not run are comments.\n",
        ));
        let others = blocks
            .iter()
            .any(|b| matches!(part(b), Part::Run(l, _) if l != Language::Python));
        if others {
            out.push_str(
                "\nimport subprocess as _oi_subprocess\nimport sys as _oi_sys\n\n\ndef _oi_run(argv, code):\n    \"\"\"Runs a block in another language: its interpreter reads it on stdin.\"\"\"\n    _oi_sys.stdout.flush()\n    _oi_sys.stderr.flush()\n    try:\n        _oi_subprocess.run(argv, input=code, text=True, check=False)\n    except FileNotFoundError:\n        print(f\"{argv[0]} is not installed: this block did not run\", file=_oi_sys.stderr)\n",
            );
        }
        if !blocks.iter().any(|b| matches!(part(b), Part::Run(..))) {
            out.push_str("\n# This session ran no code.\n");
        }
        for b in blocks {
            out.push('\n');
            out.push_str(&block_title(b));
            match part(b) {
                Part::Comment(why) => {
                    out.push_str(&format!("#      does not run here: {why}\n"));
                    out.push_str(&commented(code_run(b)));
                }
                Part::Run(Language::Python, code) if failed(b) => {
                    out.push_str(&guarded_python(b, code));
                }
                Part::Run(Language::Python, code) => out.push_str(&with_newline(code)),
                Part::Run(language, code) => {
                    let argv = stdin_command(language).unwrap_or(&[]);
                    out.push_str(&format!(
                        "_oi_run({}, {})\n",
                        serde_json::to_string(argv).unwrap_or_default(),
                        python_literal(code)
                    ));
                }
            }
        }
        out
    }

    /// The session as a bash script.
    pub fn shell_script(&self) -> String {
        let blocks = self.blocks_in_order();
        let mut out = String::from("#!/usr/bin/env bash\n");
        out.push_str(&self.script_header(
            "# The code that ran in the session, in order (the edited code where the person\n# edited it). Shell blocks run here as they are. Blocks in other languages are\n# here-documents fed to their interpreter: each is a fresh process, so a kernel's\n# state (variables, imports) does not carry from one here-document to the next\n# (consecutive Python blocks share one). Blocks that did not run are comments.\n",
        ));
        if !blocks.iter().any(|b| matches!(part(b), Part::Run(..))) {
            out.push_str("\n# This session ran no code.\n");
        }
        let mut i = 0;
        while i < blocks.len() {
            let b = blocks[i];
            match part(b) {
                Part::Comment(why) => {
                    out.push('\n');
                    out.push_str(&block_title(b));
                    out.push_str(&format!("#      does not run here: {why}\n"));
                    out.push_str(&commented(code_run(b)));
                    i += 1;
                }
                Part::Run(Language::Shell, code) => {
                    out.push('\n');
                    out.push_str(&block_title(b));
                    out.push_str(&with_newline(code));
                    i += 1;
                }
                Part::Run(language, _) => {
                    // This block, and the Python blocks right after a Python block.
                    let mut group = vec![b];
                    i += 1;
                    while language == Language::Python
                        && i < blocks.len()
                        && matches!(part(blocks[i]), Part::Run(Language::Python, _))
                    {
                        group.push(blocks[i]);
                        i += 1;
                    }
                    out.push_str(&here_document(language, &group));
                }
            }
        }
        out
    }
}

/// Blocks in one language as one here-document to its interpreter.
fn here_document(language: Language, group: &[&StoredBlock]) -> String {
    let mut body = String::new();
    for (n, b) in group.iter().enumerate() {
        if n > 0 {
            body.push('\n');
            body.push_str(&block_title(b));
        }
        let code = code_run(b);
        if language == Language::Python && failed(b) {
            body.push_str(&guarded_python(b, code));
        } else {
            body.push_str(&with_newline(code));
        }
    }
    let delimiter = delimiter_for(&body);
    let argv = stdin_command(language).unwrap_or(&[]).join(" ");
    format!(
        "\n{}{argv} <<'{delimiter}'\n{body}{delimiter}\n",
        block_title(group[0])
    )
}

/// A here-document delimiter that is no line of `body`.
fn delimiter_for(body: &str) -> String {
    let mut delimiter = "OI_TUI_EOF".to_string();
    let mut n = 0;
    while body.lines().any(|l| l == delimiter) {
        n += 1;
        delimiter = format!("OI_TUI_EOF_{n}");
    }
    delimiter
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delimiter_occurs_in_no_line() {
        assert_eq!(delimiter_for("print(1)\n"), "OI_TUI_EOF");
        assert_eq!(
            delimiter_for("a\nOI_TUI_EOF\nOI_TUI_EOF_1\n"),
            "OI_TUI_EOF_2"
        );
        // Part of a line is no end.
        assert_eq!(delimiter_for("x = 'OI_TUI_EOF'\n"), "OI_TUI_EOF");
    }

    fn session(blocks: serde_json::Value) -> Exported {
        serde_json::from_value(serde_json::json!({
            "session": {"id": "s1", "title": "t", "created_at": 0, "updated_at": 0, "model": "",
                "cwd": "", "messages": 0, "blocks_run": 0, "blocks_skipped": 0},
            "messages": [], "events": [], "blocks": blocks,
        }))
        .unwrap()
    }

    fn block(id: i64, language: &str, code: &str, status: &str) -> serde_json::Value {
        serde_json::json!({"block_id": id, "language": language, "proposed_code": code,
            "decision": "run", "status": status, "created_at": 0, "after_message": 1})
    }

    #[test]
    fn interrupted_blocks_stay_comments_and_python_only_needs_no_helper() {
        let s = session(serde_json::json!([
            block(1, "python", "print(1)", "ran"),
            block(2, "python", "while True: pass", "interrupted"),
            block(3, "python", "print(3)", "ran"),
        ]));
        let py = s.python_script();
        assert!(!py.contains("_oi_run"), "{py}");
        assert!(
            py.contains("\n# while True: pass\n") && py.contains("\nprint(3)\n"),
            "{py}"
        );
        let sh = s.shell_script();
        // Blocks 1 and 3 are two here-documents: the interrupted one is between them.
        assert_eq!(sh.matches("python3 - <<'OI_TUI_EOF'").count(), 2, "{sh}");
        assert!(sh.contains("# while True: pass"), "{sh}");
    }

    #[test]
    fn a_shell_block_is_verbatim_in_sh_and_a_subprocess_in_py() {
        let s = session(serde_json::json!([block(
            1,
            "shell",
            "echo \"$HOME\" 'x'",
            "ran"
        )]));
        assert!(s.shell_script().contains("\necho \"$HOME\" 'x'\n"));
        let py = s.python_script();
        assert!(
            py.contains("_oi_run([\"bash\",\"-s\"], \"echo \\\"$HOME\\\" 'x'\")"),
            "{py}"
        );
    }

    #[test]
    fn python_literals_round_trip_awkward_code() {
        let code = "print(\"a\\tb\")\n'''x'''\r\n\u{1b}[0m é";
        let literal = python_literal(code);
        assert!(
            literal.starts_with('"') && !literal.contains('\n'),
            "{literal}"
        );
        let back: String = serde_json::from_str(&literal).unwrap();
        assert_eq!(back, code);
    }
}
