//! Analysis of Python, JavaScript, Ruby, Perl and R blocks on tokens (never on raw text):
//! calls that run shell commands (a literal command is judged as shell with the same rules;
//! a literal list is an argv), file deletes and writes, network use, permission changes,
//! and dynamic code, which is "cannot tell".

mod calls;
mod modules;
mod nfkc;
mod reach;
mod table;
pub(crate) mod tokenizer;

use serde::{Deserialize, Serialize};

use super::analysis::{Analysis, Frame};

/// The languages the policy reads.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// bash, sh, zsh (read as bash).
    Shell,
    /// Python 3.
    Python,
    /// JavaScript (node).
    JavaScript,
    /// Ruby.
    Ruby,
    /// Perl.
    Perl,
    /// R.
    R,
    /// Anything else: cannot tell.
    Other,
}

impl Language {
    /// Maps a fence tag or kernel name (`bash`, `py`, `node`, `Rscript` …).
    pub fn from_tag(tag: &str) -> Language {
        match tag.trim().to_ascii_lowercase().as_str() {
            "sh" | "bash" | "shell" | "zsh" | "console" | "shellscript" => Language::Shell,
            "python" | "python3" | "py" | "py3" => Language::Python,
            "javascript" | "js" | "node" | "nodejs" | "mjs" | "cjs" => Language::JavaScript,
            "ruby" | "rb" => Language::Ruby,
            "perl" | "pl" => Language::Perl,
            "r" | "rscript" => Language::R,
            _ => Language::Other,
        }
    }
}

/// Analyses code in a script language (at the top level or nested in shell).
pub(crate) fn analyse_nested(an: &mut Analysis<'_>, lang: Language, code: &str, frame: &Frame) {
    match lang {
        Language::Shell => super::shell::analyse(an, code, frame),
        Language::Other => {
            let first = code
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            an.opaque(
                "the policy cannot read this language",
                first,
                frame.line(1),
                frame,
            );
        }
        l => calls::analyse(an, l, code, frame),
    }
}
