//! A small tokenizer for the script languages (Python, JavaScript, Ruby, Perl, R): it
//! knows strings (single, double, triple-quoted, raw, f-strings, template literals,
//! Ruby/Perl backticks, `%x(…)`, `qx{…}`, `q(…)`/`qq(…)`), comments and identifiers, so
//! that a call inside a string or a comment is never taken for a call, while a call split
//! over several lines is.

use super::Language;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An identifier (with Perl's sigils kept: `$x`).
    Ident(String),
    /// A string literal; `literal` is false when it interpolates (`f"{x}"`, `"#{x}"`,
    /// `` `${x}` ``, `"$x"` in Perl).
    Str { value: String, literal: bool },
    /// Ruby/Perl backticks or `%x`/`qx`: a shell command.
    Shell { value: String, literal: bool },
    /// Any other character (`(`, `.`, `,`, `=` …); `::` and `->` become `.`.
    Punct(char),
    /// A number.
    Number,
}

#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub kind: Kind,
    /// Byte offsets in the source.
    pub start: usize,
    pub end: usize,
    /// 1-based line of the start.
    pub line: usize,
}

struct Lexer<'s> {
    src: &'s str,
    b: &'s [u8],
    pos: usize,
    line: usize,
    lang: Language,
    out: Vec<Token>,
}

/// Splits `src` into tokens, dropping comments and whitespace. Never fails: an
/// unterminated string runs to the end of the input.
pub(crate) fn tokenize(src: &str, lang: Language) -> Vec<Token> {
    let mut lx = Lexer {
        src,
        b: src.as_bytes(),
        pos: 0,
        line: 1,
        lang,
        // (Sized for the text — about a token per four bytes of code — so that a long
        // block does not grow it step by step.)
        out: Vec::with_capacity(src.len() / 4),
    };
    lx.run();
    lx.out
}

impl Lexer<'_> {
    fn peek(&self, off: usize) -> u8 {
        self.b.get(self.pos + off).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: Kind, start: usize, line: usize) {
        self.pos = self.pos.min(self.b.len());
        self.out.push(Token {
            kind,
            start,
            end: self.pos,
            line,
        });
    }

    fn advance_to(&mut self, end: usize) {
        let end = end.min(self.b.len());
        self.line += self.b[self.pos..end]
            .iter()
            .filter(|c| **c == b'\n')
            .count();
        self.pos = end;
    }

    fn run(&mut self) {
        let at_line_start = |s: &Self| s.pos == 0 || s.b[s.pos - 1] == b'\n';
        while self.pos < self.b.len() {
            let c = self.b[self.pos];
            let start = self.pos;
            let line = self.line;
            match c {
                b'\n' => {
                    self.line += 1;
                    self.pos += 1;
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                0xe2 if self.js_separator_at(self.pos) => self.pos += 3,
                b'#' if self.lang != Language::JavaScript => self.skip_line(),
                b'/' if self.lang == Language::JavaScript && self.peek(1) == b'/' => {
                    self.skip_line()
                }
                b'/' if self.lang == Language::JavaScript && self.peek(1) == b'*' => {
                    let end = self.src[self.pos + 2..]
                        .find("*/")
                        .map(|p| self.pos + 2 + p + 2)
                        .unwrap_or(self.b.len());
                    self.advance_to(end);
                }
                b'=' if self.lang == Language::Ruby
                    && at_line_start(self)
                    && self.src[self.pos..].starts_with("=begin") =>
                {
                    let end = self.src[self.pos..]
                        .find("\n=end")
                        .map(|p| self.pos + p + 5)
                        .unwrap_or(self.b.len());
                    self.advance_to(end);
                }
                b'=' if self.lang == Language::Perl
                    && at_line_start(self)
                    && self.peek(1).is_ascii_alphabetic() =>
                {
                    let end = self.src[self.pos..]
                        .find("\n=cut")
                        .map(|p| self.pos + p + 5)
                        .unwrap_or(self.b.len());
                    self.advance_to(end);
                }
                b'"' | b'\'' => {
                    let (value, literal) = self.quoted(c, false);
                    self.push(Kind::Str { value, literal }, start, line);
                }
                b'`' => {
                    let (value, literal) = self.quoted(b'`', false);
                    let kind = match self.lang {
                        Language::Ruby | Language::Perl => Kind::Shell { value, literal },
                        Language::R => Kind::Ident(value),
                        _ => Kind::Str { value, literal },
                    };
                    self.push(kind, start, line);
                }
                b'%' if self.lang == Language::Ruby
                    && matches!(
                        self.peek(1),
                        b'x' | b'q' | b'Q' | b'w' | b'W' | b'(' | b'[' | b'{'
                    )
                    && self.ruby_percent_ok() =>
                {
                    let kind = self.peek(1);
                    let (skip, shell) = match kind {
                        b'x' => (2, true),
                        b'q' | b'Q' | b'w' | b'W' => (2, false),
                        _ => (1, false),
                    };
                    self.pos += skip;
                    let (value, literal) = self.bracketed(kind != b'q' && kind != b'w');
                    let k = if shell {
                        Kind::Shell { value, literal }
                    } else {
                        Kind::Str { value, literal }
                    };
                    self.push(k, start, line);
                }
                c if c.is_ascii_digit() => {
                    while self.peek(0).is_ascii_alphanumeric()
                        || self.peek(0) == b'.'
                        || self.peek(0) == b'_'
                    {
                        self.pos += 1;
                    }
                    self.push(Kind::Number, start, line);
                }
                b'\\' if self.lang == Language::JavaScript && self.peek(1) == b'u' => {
                    let word = self.js_identifier();
                    self.push(Kind::Ident(word), start, line);
                }
                c if c.is_ascii_alphabetic()
                    || c == b'_'
                    || c >= 0x80
                    || (self.lang == Language::Perl
                        && matches!(c, b'$' | b'@')
                        && (self.peek(1).is_ascii_alphabetic() || self.peek(1) == b'_')) =>
                {
                    self.pos += 1;
                    while self.peek(0).is_ascii_alphanumeric()
                        || self.peek(0) == b'_'
                        || self.peek(0) >= 0x80
                        || (self.lang == Language::JavaScript && self.peek(0) == b'$')
                    {
                        self.pos += 1;
                    }
                    while self.pos < self.b.len() && !self.src.is_char_boundary(self.pos) {
                        self.pos += 1;
                    }
                    if self.lang == Language::JavaScript && self.peek(0) == b'\\' {
                        // `ex\u0065cSync`: one identifier with an escape inside.
                        self.pos = start;
                        let word = self.js_identifier();
                        self.push(Kind::Ident(word), start, line);
                        continue;
                    }
                    let word = &self.src[start..self.pos];
                    // String prefixes and quote-like operators.
                    let q = self.peek(0);
                    if self.lang == Language::Python
                        && (q == b'"' || q == b'\'')
                        && word.len() <= 2
                        && word.chars().all(|ch| "rRbBuUfF".contains(ch))
                    {
                        let raw = word.contains(['r', 'R']);
                        let f = word.contains(['f', 'F']);
                        let (value, literal) = self.quoted(q, raw);
                        let literal = literal && !(f && value.contains('{'));
                        self.push(Kind::Str { value, literal }, start, line);
                    } else if self.lang == Language::R
                        && (word == "r" || word == "R")
                        && (q == b'"' || q == b'\'')
                    {
                        let (value, literal) = self.quoted(q, true);
                        self.push(Kind::Str { value, literal }, start, line);
                    } else if self.lang == Language::Perl
                        && matches!(word, "q" | "qq" | "qx" | "qw")
                        && matches!(
                            q,
                            b'(' | b'{' | b'[' | b'<' | b'/' | b'|' | b'!' | b'\'' | b'"'
                        )
                    {
                        let (value, literal) = self.bracketed(word != "q" && word != "qw");
                        let k = if word == "qx" {
                            Kind::Shell { value, literal }
                        } else {
                            Kind::Str { value, literal }
                        };
                        self.push(k, start, line);
                    } else if self.lang == Language::Python && !word.is_ascii() {
                        // Python reads identifiers in NFKC: `ｓｙｓｔｅｍ` is `system`.
                        let word = super::nfkc::normalise_identifier(word);
                        self.push(Kind::Ident(word), start, line);
                    } else {
                        self.push(Kind::Ident(word.to_string()), start, line);
                    }
                }
                _ => {
                    let ch = self.src[self.pos..].chars().next().unwrap_or(' ');
                    self.pos += ch.len_utf8();
                    // `::` (Ruby, Perl, R) and `->` (Perl) are member access.
                    if (ch == ':' && self.peek(0) == b':')
                        || (ch == '-' && self.peek(0) == b'>' && self.lang == Language::Perl)
                    {
                        self.pos += 1;
                        if self.peek(0) == b':' {
                            self.pos += 1; // R's `:::`
                        }
                        self.push(Kind::Punct('.'), start, line);
                    } else {
                        self.push(Kind::Punct(ch), start, line);
                    }
                }
            }
        }
    }

    /// A JavaScript identifier at `pos` that may hold `\uXXXX` or `\u{…}` escapes, which
    /// name the same identifier as the characters they stand for.
    fn js_identifier(&mut self) -> String {
        let mut word = String::new();
        while self.pos < self.b.len() {
            let c = self.b[self.pos];
            if c == b'\\' && self.peek(1) == b'u' {
                let rest = &self.src[self.pos + 2..];
                let (hex, len) = match rest.strip_prefix('{') {
                    Some(r) => match r.find('}') {
                        Some(e) => (&r[..e], e + 2),
                        None => break,
                    },
                    None => (rest.get(..4).unwrap_or(""), 4),
                };
                match u32::from_str_radix(hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) if !hex.is_empty() => word.push(ch),
                    _ => break,
                }
                self.pos += 2 + len;
            } else if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 {
                let ch = self.src[self.pos..].chars().next().unwrap_or(' ');
                word.push(ch);
                self.pos += ch.len_utf8();
            } else {
                break;
            }
        }
        if word.is_empty() {
            // A lone backslash: a character of its own.
            self.pos += 1;
            word.push('\\');
        }
        word
    }

    fn ruby_percent_ok(&self) -> bool {
        // `%x(` after an operator or at the start: a literal; `a % x` is a modulo.
        !matches!(
            self.out.last().map(|t| &t.kind),
            Some(Kind::Ident(_) | Kind::Number | Kind::Str { .. }) | Some(Kind::Punct(')' | ']'))
        )
    }

    /// Skips a comment to the end of its line: `\n` or a lone `\r` (Python reads a lone CR
    /// as a line end; in the others it is taken as one too, which can only show more
    /// code), and in JavaScript also U+2028 and U+2029, its other line terminators.
    fn skip_line(&mut self) {
        while self.pos < self.b.len() {
            match self.b[self.pos] {
                b'\n' | b'\r' => return,
                0xe2 if self.lang == Language::JavaScript
                    && self.b.get(self.pos + 1) == Some(&0x80)
                    && matches!(self.b.get(self.pos + 2), Some(0xa8 | 0xa9)) =>
                {
                    return;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// Whether a JavaScript line or paragraph separator (a line terminator there) starts
    /// at `pos`.
    fn js_separator_at(&self, pos: usize) -> bool {
        self.lang == Language::JavaScript
            && (self.src[pos..].starts_with('\u{2028}') || self.src[pos..].starts_with('\u{2029}'))
    }

    /// Reads a quoted string starting at the quote. Returns its value and whether it is
    /// free of interpolation.
    fn quoted(&mut self, q: u8, raw: bool) -> (String, bool) {
        let triple = self.lang == Language::Python && self.peek(1) == q && self.peek(2) == q;
        let open = if triple { 3 } else { 1 };
        self.pos += open;
        let interpolates = match (self.lang, q) {
            (Language::JavaScript, b'`') => Some("${"),
            (Language::Ruby, b'"') | (Language::Ruby, b'`') => Some("#{"),
            (Language::Perl, b'"') | (Language::Perl, b'`') => Some("$"),
            _ => None,
        };
        let mut value = String::new();
        let mut literal = true;
        let single_raw =
            raw || (q == b'\'' && matches!(self.lang, Language::Perl | Language::Ruby));
        while self.pos < self.b.len() {
            let c = self.b[self.pos];
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.pos += open;
                return (value, literal);
            }
            if c == b'\n' {
                self.line += 1;
                if !triple && q != b'`' && self.lang == Language::Python {
                    // An unterminated one-line string ends at the line.
                    return (value, false);
                }
            }
            if c == b'\\' && self.pos + 1 < self.b.len() {
                let n = self.src[self.pos + 1..].chars().next().unwrap_or(' ');
                if single_raw {
                    if n == q as char || n == '\\' {
                        if !raw {
                            value.push(n);
                        } else {
                            value.push('\\');
                            value.push(n);
                        }
                        self.pos += 1 + n.len_utf8();
                        continue;
                    }
                    value.push('\\');
                    self.pos += 1;
                    continue;
                }
                let esc = match n {
                    'n' => Some('\n'),
                    't' => Some('\t'),
                    '\\' | '\'' | '"' | '`' | '$' | '/' => Some(n),
                    '\n' => None,
                    _ => {
                        literal = false; // \x41, \u…: not decoded here
                        Some(n)
                    }
                };
                if n == '\n' {
                    self.line += 1;
                }
                if let Some(e) = esc {
                    value.push(e);
                }
                self.pos += 1 + n.len_utf8();
                continue;
            }
            let interpolation = interpolates.is_some_and(|marker| {
                self.src[self.pos..].starts_with(marker)
                    && (marker != "$"
                        || self.peek(1).is_ascii_alphabetic()
                        || matches!(self.peek(1), b'{' | b'_'))
            });
            if interpolation {
                literal = false;
            }
            if q == b'`' && self.lang == Language::Perl && c == b'@' {
                literal = false;
            }
            let ch = self.src[self.pos..].chars().next().unwrap_or(' ');
            value.push(ch);
            self.pos += ch.len_utf8();
        }
        (value, false)
    }

    /// Reads `(…)`, `{…}`, `[…]`, `<…>` or `/…/`-style delimited text at the delimiter.
    fn bracketed(&mut self, interpolates: bool) -> (String, bool) {
        let open = self.peek(0);
        if open == 0 {
            return (String::new(), false);
        }
        let close = match open {
            b'(' => b')',
            b'{' => b'}',
            b'[' => b']',
            b'<' => b'>',
            o => o,
        };
        self.pos += 1;
        let mut depth = 1;
        let mut value = String::new();
        let mut literal = true;
        while self.pos < self.b.len() {
            let c = self.b[self.pos];
            if c == b'\\' && self.pos + 1 < self.b.len() {
                let n = self.src[self.pos + 1..].chars().next().unwrap_or(' ');
                value.push(n);
                self.pos += 1 + n.len_utf8();
                continue;
            }
            if c == close && open != close {
                depth -= 1;
                if depth == 0 {
                    self.pos += 1;
                    return (value, literal);
                }
            } else if c == open && open != close {
                depth += 1;
            } else if c == close {
                self.pos += 1;
                return (value, literal);
            }
            if c == b'\n' {
                self.line += 1;
            }
            if interpolates && (c == b'$' || (c == b'#' && self.peek(1) == b'{') || c == b'@') {
                literal = false;
            }
            let ch = self.src[self.pos..].chars().next().unwrap_or(' ');
            value.push(ch);
            self.pos += ch.len_utf8();
        }
        (value, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str, lang: Language) -> Vec<Kind> {
        tokenize(src, lang).into_iter().map(|t| t.kind).collect()
    }

    fn s(v: &str, literal: bool) -> Kind {
        Kind::Str {
            value: v.to_string(),
            literal,
        }
    }

    #[test]
    fn python_strings_and_comments() {
        let k = kinds(
            "print(\"os.system('rm -rf /')\")  # os.remove(x)\n",
            Language::Python,
        );
        assert_eq!(
            k,
            vec![
                Kind::Ident("print".into()),
                Kind::Punct('('),
                s("os.system('rm -rf /')", true),
                Kind::Punct(')')
            ]
        );
        let k = kinds(
            "x = '''a\nb''' + r'\\d' + f\"{y}\" + f'z'",
            Language::Python,
        );
        assert!(k.contains(&s("a\nb", true)));
        assert!(k.contains(&s("\\d", true)));
        assert!(k.contains(&s("{y}", false)));
        assert!(k.contains(&s("z", true)));
        let t = tokenize("a = '''\n\n'''\nos", Language::Python);
        assert_eq!(t.last().map(|t| t.line), Some(4));
    }

    #[test]
    fn javascript_templates_and_comments() {
        let k = kinds(
            "// exec('x')\n/* rm */ a(`ls ${d}`, `ls`)",
            Language::JavaScript,
        );
        assert_eq!(k[0], Kind::Ident("a".into()));
        assert!(k.contains(&s("ls ${d}", false)));
        assert!(k.contains(&s("ls", true)));
    }

    #[test]
    fn ruby_and_perl_shell_literals() {
        let k = kinds("x = `rm -rf y` # `no`\n%x(ls #{d})", Language::Ruby);
        assert!(k.contains(&Kind::Shell {
            value: "rm -rf y".into(),
            literal: true
        }));
        assert!(k.contains(&Kind::Shell {
            value: "ls #{d}".into(),
            literal: false
        }));
        let k = kinds(
            "my $o = qx{rm x}; print 'a $b'; print \"$c\";",
            Language::Perl,
        );
        assert!(k.contains(&Kind::Shell {
            value: "rm x".into(),
            literal: true
        }));
        assert!(k.contains(&s("a $b", true)));
        assert!(k.contains(&s("$c", false)));
        assert!(k.contains(&Kind::Ident("$o".into())));
    }

    #[test]
    fn r_raw_strings_and_member_access() {
        let k = kinds("httr::GET(r\"(x)\") # system('rm')", Language::R);
        assert_eq!(k[0], Kind::Ident("httr".into()));
        assert_eq!(k[1], Kind::Punct('.'));
        assert!(
            k.iter()
                .all(|k| !matches!(k, Kind::Ident(i) if i == "system"))
        );
    }
}
