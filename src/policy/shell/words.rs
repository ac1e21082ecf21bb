//! Shell words as the shell would see them after quote removal: `r''m`, `"rm"`, `\rm`,
//! `r\m` and `$'rm'` all become `rm`. A word that holds an expansion (`$X`, `$(…)`,
//! backticks, arithmetic) is marked dynamic, and the command substitutions inside it are
//! handed back so that the walker can parse them as shell in their own right.

use brush_parser::ParserOptions;
use brush_parser::word::{WordPiece, WordPieceWithSource};

/// One word after quote removal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Arg {
    /// The text after quote removal; expansions keep their raw text.
    pub text: String,
    /// The word holds an expansion whose value is known only at run time.
    pub dynamic: bool,
    /// The word starts with a tilde expansion (a home directory).
    pub tilde: bool,
}

impl Arg {
    /// A literal word (from a list in another language, or a fixed string).
    pub fn literal(text: &str) -> Self {
        Arg {
            text: text.to_string(),
            dynamic: false,
            tilde: false,
        }
    }
}

/// A command substitution found inside a word: its code, and the offset (in chars) of the
/// piece within the word's raw text, for line numbers.
#[derive(Clone, Debug)]
pub(crate) struct Substitution {
    pub code: String,
    pub offset: usize,
}

/// The result of reading one raw word.
#[derive(Clone, Debug, Default)]
pub(crate) struct ParsedWord {
    pub arg: Arg,
    pub substitutions: Vec<Substitution>,
    /// Something in the word cannot be seen through (a substitution nested in a parameter
    /// expansion, an unreadable word): the reason.
    pub opaque: Option<String>,
}

/// Reads a raw word (as it appears in the source) into its unquoted text.
pub(crate) fn parse_word(raw: &str, options: &ParserOptions) -> ParsedWord {
    match fast_word(raw) {
        Some(w) => w,
        None => parse_word_full(raw, options),
    }
}

/// `parse_word` with the full word parser only (the reference for `fast_word`).
pub(crate) fn parse_word_full(raw: &str, options: &ParserOptions) -> ParsedWord {
    let mut out = ParsedWord::default();
    match brush_parser::word::parse(raw, options) {
        Ok(pieces) => {
            for (i, p) in pieces.iter().enumerate() {
                push_piece(raw, p, i == 0, &mut out);
            }
        }
        Err(_) => {
            out.arg.text = raw.to_string();
            out.arg.dynamic = true;
            out.opaque = Some("a word the shell parser could not read".to_string());
        }
    }
    out
}

/// The common words without the full word parser: plain text, single and double quotes,
/// backslash escapes, `$NAME`, `${NAME}`, special parameters and simple `$(…)` (see
/// `fast::dollar_len`). `None` for anything else (a tilde, backticks, `$'…'`, extended
/// globs, parentheses, non-ASCII text …): the full word parser reads those.
pub(crate) fn fast_word(raw: &str) -> Option<ParsedWord> {
    let b = raw.as_bytes();
    if b.is_empty() || !raw.is_ascii() {
        return None;
    }
    let mut out = ParsedWord::default();
    let mut text = String::with_capacity(raw.len());
    let mut i = 0;
    // Text runs are copied in slices, not byte by byte.
    let mut run = 0;
    while i < b.len() {
        match b[i] {
            b'\'' => {
                text.push_str(&raw[run..i]);
                let close = i + 1 + b[i + 1..].iter().position(|c| *c == b'\'')?;
                text.push_str(&raw[i + 1..close]);
                i = close + 1;
                run = i;
            }
            b'"' => {
                text.push_str(&raw[run..i]);
                i += 1;
                run = i;
                loop {
                    match *b.get(i)? {
                        b'"' => {
                            text.push_str(&raw[run..i]);
                            i += 1;
                            run = i;
                            break;
                        }
                        b'\\' => match *b.get(i + 1)? {
                            c @ (b'$' | b'`' | b'"' | b'\\') => {
                                text.push_str(&raw[run..i]);
                                text.push(c as char);
                                i += 2;
                                run = i;
                            }
                            _ => i += 1,
                        },
                        b'$' => {
                            text.push_str(&raw[run..i]);
                            i = dollar(raw, i, &mut text, &mut out)?;
                            run = i;
                        }
                        b'`' => return None,
                        _ => i += 1,
                    }
                }
            }
            b'\\' => {
                text.push_str(&raw[run..i]);
                let c = *b.get(i + 1)?;
                if c != b'\n' {
                    text.push(c as char);
                }
                i += 2;
                run = i;
            }
            b'$' => {
                text.push_str(&raw[run..i]);
                i = dollar(raw, i, &mut text, &mut out)?;
                run = i;
            }
            b'`' | b'~' | b'(' | b')' => return None,
            _ => i += 1,
        }
    }
    text.push_str(&raw[run..]);
    out.arg.text = text;
    Some(out)
}

/// An expansion at `raw[i]` (a `$`): appends its raw text, marks the word dynamic, records
/// a command substitution. Returns the index after it.
fn dollar(raw: &str, i: usize, text: &mut String, out: &mut ParsedWord) -> Option<usize> {
    let n = super::fast::dollar_len(&raw.as_bytes()[i..])?;
    let piece = &raw[i..i + n];
    text.push_str(piece);
    out.arg.dynamic = true;
    if let Some(code) = piece.strip_prefix("$(") {
        out.substitutions.push(Substitution {
            code: code[..code.len() - 1].to_string(),
            offset: i,
        });
    }
    Some(i + n)
}

/// Text holding an array subscript with a command substitution in it (`a[$(rm f)]`):
/// bash runs the substitution whenever the text is evaluated as arithmetic — a variable
/// holding it in `$(( x ))`, `[[ $x -eq 0 ]]`, `let`, or a name given to `printf -v`,
/// `read`, `declare`, `unset`, `test -v`.
pub(crate) fn subscript_code(text: &str) -> bool {
    match text.find('[') {
        Some(open) => {
            let rest = &text[open..];
            rest.contains("$(") || rest.contains('`')
        }
        None => false,
    }
}

/// Reads a here-document body that undergoes expansion.
pub(crate) fn parse_heredoc_body(raw: &str, options: &ParserOptions) -> ParsedWord {
    let mut out = ParsedWord::default();
    match brush_parser::word::parse_heredoc(raw, options) {
        Ok(pieces) => {
            for p in &pieces {
                push_piece(raw, p, false, &mut out);
            }
        }
        Err(_) => {
            out.arg.text = raw.to_string();
            out.arg.dynamic = true;
            out.opaque = Some("a here-document the shell parser could not read".to_string());
        }
    }
    out
}

fn push_piece(raw: &str, p: &WordPieceWithSource, first: bool, out: &mut ParsedWord) {
    let raw_piece = raw
        .get(p.start_index..p.end_index)
        .or_else(|| char_slice(raw, p.start_index, p.end_index))
        .unwrap_or("");
    match &p.piece {
        WordPiece::Text(t) => out.arg.text.push_str(t),
        WordPiece::SingleQuotedText(t) => out.arg.text.push_str(t),
        WordPiece::AnsiCQuotedText(t) => match decode_ansi_c(t) {
            Some(s) => out.arg.text.push_str(&s),
            None => {
                out.arg.text.push_str(t);
                out.arg.dynamic = true;
            }
        },
        WordPiece::DoubleQuotedSequence(inner) | WordPiece::GettextDoubleQuotedSequence(inner) => {
            for q in inner {
                // Offsets of nested pieces are relative to the enclosing word in brush.
                push_piece(raw, q, false, out);
            }
        }
        WordPiece::TildeExpansion(_) => {
            out.arg.text.push_str(raw_piece);
            if first {
                out.arg.tilde = true;
            }
            out.arg.dynamic = true;
        }
        WordPiece::EscapeSequence(s) => {
            // `\r` -> `r`; a backslash-newline is a line continuation and vanishes.
            let unescaped: String = s.strip_prefix('\\').unwrap_or(s).to_string();
            if unescaped != "\n" {
                out.arg.text.push_str(&unescaped);
            }
        }
        WordPiece::ParameterExpansion(_) => {
            out.arg.text.push_str(raw_piece);
            out.arg.dynamic = true;
            if raw_piece.contains("$(") || raw_piece.contains('`') {
                out.opaque = Some("a command substitution inside a parameter expansion".into());
            }
        }
        WordPiece::CommandSubstitution(code) | WordPiece::BackquotedCommandSubstitution(code) => {
            out.arg.text.push_str(raw_piece);
            out.arg.dynamic = true;
            out.substitutions.push(Substitution {
                code: code.clone(),
                offset: p.start_index,
            });
        }
        WordPiece::ArithmeticExpression(e) => {
            out.arg.text.push_str(raw_piece);
            out.arg.dynamic = true;
            if e.value.contains("$(") || e.value.contains('`') {
                out.opaque = Some("a command substitution inside arithmetic".into());
            }
        }
    }
}

fn char_slice(s: &str, start: usize, end: usize) -> Option<&str> {
    let mut it = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()));
    let b0 = it.clone().nth(start)?;
    let b1 = it.nth(end)?;
    s.get(b0..b1)
}

/// Decodes the body of `$'…'`. Returns `None` for escapes it does not know (the caller
/// then treats the word as dynamic).
pub(crate) fn decode_ansi_c(body: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        match e {
            'n' => out.push('\n'),
            't' => out.push('\t'),
            'r' => out.push('\r'),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'e' | 'E' => out.push('\x1b'),
            'f' => out.push('\x0c'),
            'v' => out.push('\x0b'),
            '\\' | '\'' | '"' | '?' => out.push(e),
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut hex = String::new();
                while hex.len() < max {
                    match chars.peek() {
                        Some(h) if h.is_ascii_hexdigit() => {
                            hex.push(*h);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                let v = u32::from_str_radix(&hex, 16).ok()?;
                out.push(char::from_u32(v)?);
            }
            '0'..='7' => {
                let mut oct = String::from(e);
                while oct.len() < 3 {
                    match chars.peek() {
                        Some(o) if ('0'..='7').contains(o) => {
                            oct.push(*o);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                let v = u32::from_str_radix(&oct, 8).ok()?;
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn text(raw: &str) -> (String, bool) {
        let w = parse_word(raw, &ParserOptions::default());
        (w.arg.text, w.arg.dynamic)
    }

    #[test]
    fn quote_removal_matches_the_shell() {
        for raw in [
            "rm",
            "r''m",
            "\"rm\"",
            "\\rm",
            "r\\m",
            "$'rm'",
            "$'\\x72m'",
            "'r'\"m\"",
        ] {
            assert_eq!(text(raw), ("rm".to_string(), false), "{raw}");
        }
    }

    #[test]
    fn expansions_are_dynamic_and_substitutions_found() {
        assert!(text("$X").1);
        assert!(text("\"${X}\"").1);
        let w = parse_word("\"a $(rm -rf x) b\"", &ParserOptions::default());
        assert_eq!(w.substitutions.len(), 1);
        assert_eq!(w.substitutions[0].code.trim(), "rm -rf x");
        let w = parse_word("`rm x`", &ParserOptions::default());
        assert_eq!(w.substitutions[0].code.trim(), "rm x");
        let w = parse_word("${X:-$(rm x)}", &ParserOptions::default());
        assert!(w.opaque.is_some());
    }

    #[test]
    fn fast_path_agrees_with_the_parser() {
        for raw in ["ls", "-la", "src/main.rs", "a=b", "*.txt", "x,y", "100%"] {
            let fast = parse_word(raw, &ParserOptions::default());
            let pieces = brush_parser::word::parse(raw, &ParserOptions::default()).unwrap();
            let mut slow = ParsedWord::default();
            for (i, p) in pieces.iter().enumerate() {
                push_piece(raw, p, i == 0, &mut slow);
            }
            assert_eq!(fast.arg, slow.arg, "{raw}");
        }
    }

    #[test]
    fn tilde_is_marked() {
        let w = parse_word("~/x", &ParserOptions::default());
        assert!(w.arg.tilde);
    }
}
