//! Reading the `execute` tool's arguments while they stream, in time linear in their size:
//! each fragment is scanned once, and the state (where in the JSON object it is, an escape
//! or a `\uXXXX` cut between fragments, the first half of a surrogate pair) is kept until
//! the next. What comes out is the new text of the `code` field, as it is decoded, and the
//! language once its value is complete, in whichever order the two fields come.
//!
//! It reads the common shape, a JSON object, leniently: other fields are skipped whatever
//! their values, and anything it cannot follow makes it stop showing code (the finished
//! arguments are parsed properly by the engine's `tools::parse_arguments` in any case).

/// The field names read as the code, and as the language (as `parse_arguments` reads them).
const CODE_FIELDS: [&str; 3] = ["code", "source", "script"];
const LANGUAGE_FIELDS: [&str; 2] = ["language", "lang"];
/// Keys longer than this are not ours: only their start is kept.
const MAX_KEY: usize = 16;
/// A language name longer than this is not one: only its start is kept.
const MAX_LANGUAGE: usize = 64;

/// The incremental reader of one tool call's arguments.
#[derive(Debug, Default, Clone)]
pub struct ArgsStream {
    at: At,
    /// The key being read, or the one whose value is being read.
    key: String,
    decoder: StrDecoder,
    /// The language, once its value is complete.
    language: Option<String>,
    /// The language's value as it is read.
    language_part: String,
    /// A code field was read already (a second one is skipped).
    code_seen: bool,
    /// Nesting depth while skipping a value that is an object or an array.
    depth: usize,
    /// Inside a string while skipping a nested value, and after a backslash in it.
    skip_string: bool,
    skip_escape: bool,
}

/// Where in the arguments the reader is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Before the opening `{`.
    #[default]
    Start,
    /// Where a key (or the closing `}`) comes.
    BeforeKey,
    Key,
    /// Between a key and its `:`.
    AfterKey,
    /// Between the `:` and the value.
    BeforeValue,
    /// Inside a string value: code, language, or another field's (skipped).
    Code,
    Language,
    OtherString,
    /// Inside another value that is not a string (a number, `true`, an object, ...).
    OtherValue,
    /// After a value, where `,` or `}` comes.
    AfterValue,
    /// After the closing `}`, or lost: nothing more is read.
    Done,
}

impl ArgsStream {
    /// Reads the next fragment; appends the code it adds to `code`.
    pub fn push(&mut self, fragment: &str, code: &mut String) {
        let mut chars = fragment.chars();
        while let Some(c) = chars.next() {
            match self.at {
                At::Done => return,
                At::Start => match c {
                    '{' => self.at = At::BeforeKey,
                    c if c.is_whitespace() => {}
                    _ => self.at = At::Done,
                },
                At::BeforeKey => match c {
                    '"' => {
                        self.key.clear();
                        self.decoder = StrDecoder::default();
                        self.at = At::Key;
                    }
                    '}' => self.at = At::Done,
                    ',' => {}
                    c if c.is_whitespace() => {}
                    _ => self.at = At::Done,
                },
                At::Key => {
                    let mut key = std::mem::take(&mut self.key);
                    let ended = self.decoder.push(c, &mut key, MAX_KEY);
                    self.key = key;
                    if ended {
                        self.at = At::AfterKey;
                    }
                }
                At::AfterKey => match c {
                    ':' => self.at = At::BeforeValue,
                    c if c.is_whitespace() => {}
                    _ => self.at = At::Done,
                },
                At::BeforeValue => match c {
                    c if c.is_whitespace() => {}
                    '"' => {
                        self.decoder = StrDecoder::default();
                        self.at = if CODE_FIELDS.contains(&self.key.as_str()) && !self.code_seen {
                            self.code_seen = true;
                            At::Code
                        } else if LANGUAGE_FIELDS.contains(&self.key.as_str())
                            && self.language.is_none()
                        {
                            self.language_part.clear();
                            At::Language
                        } else {
                            At::OtherString
                        };
                    }
                    c => {
                        self.depth = 0;
                        self.skip_string = false;
                        self.skip_escape = false;
                        self.at = At::OtherValue;
                        self.skip(c);
                    }
                },
                At::Code => {
                    // The common case, a run of plain characters, is copied at once.
                    if self.decoder.is_plain() && c != '"' && c != '\\' {
                        code.push(c);
                        let rest = chars.as_str();
                        let run = rest.find(['"', '\\']).unwrap_or(rest.len());
                        code.push_str(&rest[..run]);
                        chars = rest[run..].chars();
                        continue;
                    }
                    if self.decoder.push(c, code, usize::MAX) {
                        self.at = At::AfterValue;
                    }
                }
                At::Language => {
                    let mut part = std::mem::take(&mut self.language_part);
                    let ended = self.decoder.push(c, &mut part, MAX_LANGUAGE);
                    self.language_part = part;
                    if ended {
                        self.language = Some(std::mem::take(&mut self.language_part));
                        self.at = At::AfterValue;
                    }
                }
                At::OtherString => {
                    let mut sink = String::new();
                    if self.decoder.push(c, &mut sink, 0) {
                        self.at = At::AfterValue;
                    }
                }
                At::OtherValue => self.skip(c),
                At::AfterValue => match c {
                    ',' => self.at = At::BeforeKey,
                    '}' => self.at = At::Done,
                    c if c.is_whitespace() => {}
                    _ => self.at = At::Done,
                },
            }
        }
    }

    /// The language, once its value is complete.
    pub fn language(&self) -> Option<&str> {
        self.language.as_deref()
    }

    /// Whether the code field's value has begun.
    pub fn code_started(&self) -> bool {
        self.code_seen
    }

    /// One character of a value that is not a string: a number or literal ends at `,` or
    /// `}` (which then counts as the object's), an object or array at its closing bracket.
    fn skip(&mut self, c: char) {
        if self.skip_string {
            if self.skip_escape {
                self.skip_escape = false;
            } else if c == '\\' {
                self.skip_escape = true;
            } else if c == '"' {
                self.skip_string = false;
            }
            return;
        }
        match c {
            '"' => self.skip_string = true,
            '{' | '[' => self.depth += 1,
            '}' | ']' if self.depth > 0 => {
                self.depth -= 1;
                if self.depth == 0 {
                    self.at = At::AfterValue;
                }
            }
            ',' if self.depth == 0 => self.at = At::BeforeKey,
            '}' => self.at = At::Done,
            _ => {}
        }
    }
}

/// Decodes a JSON string's body a character at a time (after its opening quote).
#[derive(Debug, Default, Clone, Copy)]
struct StrDecoder {
    state: Esc,
    /// The first half of a surrogate pair, waiting for its second.
    high: Option<u32>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Esc {
    #[default]
    Plain,
    /// After a backslash.
    Backslash,
    /// In `\uXXXX`: the value so far and how many digits were read.
    Hex(u32, u8),
}

impl StrDecoder {
    /// Nothing is pending: a plain character is copied as it is.
    fn is_plain(&self) -> bool {
        self.state == Esc::Plain && self.high.is_none()
    }

    /// Takes one character; appends what it decodes to `out` while `out` is shorter than
    /// `max` bytes. Returns true at the closing quote.
    fn push(&mut self, c: char, out: &mut String, max: usize) -> bool {
        let put = |ch: char, out: &mut String| {
            if out.len() < max {
                out.push(ch);
            }
        };
        match self.state {
            Esc::Plain => {
                if c == '\\' {
                    self.state = Esc::Backslash;
                    return false;
                }
                if self.high.take().is_some() {
                    put('\u{fffd}', out);
                }
                if c == '"' {
                    return true;
                }
                put(c, out);
            }
            Esc::Backslash => {
                if c == 'u' {
                    self.state = Esc::Hex(0, 0);
                    return false;
                }
                if self.high.take().is_some() {
                    put('\u{fffd}', out);
                }
                self.state = Esc::Plain;
                put(
                    match c {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        'b' => '\u{8}',
                        'f' => '\u{c}',
                        other => other,
                    },
                    out,
                );
            }
            Esc::Hex(value, digits) => {
                let Some(d) = c.to_digit(16) else {
                    // Not a hex escape after all: say so, and read the character as text.
                    self.state = Esc::Plain;
                    self.high = None;
                    put('\u{fffd}', out);
                    return self.push(c, out, max);
                };
                let value = value * 16 + d;
                if digits < 3 {
                    self.state = Esc::Hex(value, digits + 1);
                    return false;
                }
                self.state = Esc::Plain;
                let low = (0xDC00..=0xDFFF).contains(&value);
                match self.high.take() {
                    Some(high) if low => {
                        let joined = 0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00);
                        put(char::from_u32(joined).unwrap_or('\u{fffd}'), out);
                        return false;
                    }
                    Some(_) => put('\u{fffd}', out),
                    None => {}
                }
                if (0xD800..=0xDBFF).contains(&value) {
                    self.high = Some(value);
                } else {
                    put(char::from_u32(value).unwrap_or('\u{fffd}'), out);
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `json` in pieces of `size` characters; returns the code and the language.
    fn feed(json: &str, size: usize) -> (String, Option<String>) {
        let chars: Vec<char> = json.chars().collect();
        let mut reader = ArgsStream::default();
        let mut code = String::new();
        for piece in chars.chunks(size.max(1)) {
            let piece: String = piece.iter().collect();
            reader.push(&piece, &mut code);
        }
        (code, reader.language().map(str::to_string))
    }

    #[test]
    fn every_split_decodes_to_what_serde_reads() {
        let code = "print(\"hi\")\n\tx = 'é' + \"\\\\\" + \"😀\" + \"\u{1}\" / 2\r\n";
        for json in [
            serde_json::json!({"language": "python", "code": code}).to_string(),
            serde_json::json!({"code": code, "language": "python"}).to_string(),
            // Every character escaped, surrogate pairs included.
            format!(
                "{{ \"code\" : \"{}\" , \"language\":\"python\"}}",
                code.encode_utf16()
                    .map(|u| format!("\\u{u:04x}"))
                    .collect::<String>()
            ),
        ] {
            for size in 1..8 {
                let (got, language) = feed(&json, size);
                assert_eq!(got, code, "{json} in pieces of {size}");
                assert_eq!(language.as_deref(), Some("python"), "{json}");
            }
        }
    }

    #[test]
    fn other_fields_are_skipped_whatever_their_values() {
        let json = r#"{"x": {"code": "no", "y": [1, "}"]}, "n": -1.5e3, "t": true, "s": "a\"b", "lang": "bash", "code": "ls"}"#;
        for size in 1..5 {
            assert_eq!(feed(json, size), ("ls".to_string(), Some("bash".into())));
        }
    }

    #[test]
    fn lone_surrogates_and_bad_escapes_show_a_replacement() {
        let (code, _) = feed(r#"{"code": "a\ud83dxb\udc00c\u12zd"}"#, 1);
        assert_eq!(code, "a\u{fffd}xb\u{fffd}c\u{fffd}zd");
        let (code, _) = feed(r#"{"code": "\ud83d\u0041"}"#, 2);
        assert_eq!(code, "\u{fffd}A");
    }

    #[test]
    fn partial_arguments_give_what_is_decoded_so_far() {
        let mut reader = ArgsStream::default();
        let mut code = String::new();
        reader.push(r#"{"language": "pyt"#, &mut code);
        assert_eq!(reader.language(), None);
        assert!(!reader.code_started());
        reader.push(r#"hon", "code": "x = \"#, &mut code);
        assert_eq!(reader.language(), Some("python"));
        assert_eq!(code, "x = ");
        reader.push(r#"u00e9\n"#, &mut code);
        assert_eq!(code, "x = é\n");
        // Something that is not an object shows nothing.
        let (code, language) = feed(r#""{\"code\": \"x\"}""#, 3);
        assert_eq!((code.as_str(), language), ("", None));
    }

    #[test]
    fn time_is_linear_in_the_size() {
        // 400 KB in 5-character fragments: a quadratic reader would take minutes.
        let body = "for i in range(10):\\n    print(i, \\\"\\u00e9\\\")\\n".repeat(8000);
        let json = format!("{{\"language\": \"python\", \"code\": \"{body}\"}}");
        let started = std::time::Instant::now();
        let (code, _) = feed(&json, 5);
        assert!(code.len() > 300_000);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
    }
}
