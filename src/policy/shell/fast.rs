//! A fast reader for the common shell of model-written blocks, used before the full parser
//! (brush-parser, about 4 µs a line). It understands simple commands, `;` `&` `&&` `||`
//! `|` and newlines, comments, `if`/`while`/`until`/`for … in`, `{ …; }` and `( … )`, plain
//! file redirections (`>`, `>>`, `<`, `&>`, `N>`, `N>&M`), and words made of plain text,
//! quotes, backslash escapes, `$NAME`, `${NAME}` and simple `$(…)`. Anything else — a
//! here-document, a function, `case`, `[[`, backticks, a line continuation, non-ASCII text,
//! a syntax error … — makes it give up on the whole block *before* anything is judged, and
//! the full parser reads the block instead. So it never has to be right about what it does
//! not know; where it answers, it must agree with the full parser, which a differential
//! test checks on every table row and on the benchmark blocks.
//!
//! It yields the walker's work in source order (the order in which the syntax-tree walker
//! visits the same constructs), so that one walker judges both.

/// A word of the block: its raw text, its char span (ASCII only: byte = char) and its
/// 1-based start line within the code read.
#[derive(Clone, Copy, Debug)]
pub(super) struct Tok<'s> {
    pub raw: &'s str,
    pub start: usize,
    pub end: usize,
    pub line: usize,
    /// Plain text only (no quote, escape, expansion or tilde): the word is its own value.
    pub literal: bool,
}

/// A redirection: `writes` for `>`, `>>`, `>|`, `&>`, `&>>` (a read is `<`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Redir<'s> {
    pub writes: bool,
    pub target: Tok<'s>,
}

/// One item of a simple command, in source order.
#[derive(Clone, Copy, Debug)]
pub(super) enum Item<'s> {
    Word(Tok<'s>),
    /// A prefix assignment `NAME=value` / `NAME+=value` with its name.
    Assign(Tok<'s>, &'s str),
    Redirect(Redir<'s>),
}

/// The walker's work, in source order.
#[derive(Clone, Debug)]
pub(super) enum Ev<'s> {
    /// A simple command: `items[from..to]`; `piped` when its stdin is a pipe.
    Simple { from: usize, to: usize, piped: bool },
    /// A word read on its own (the values of a `for` loop).
    Word(Tok<'s>),
    /// A redirection of a compound command (after its body).
    Redirect(Redir<'s>),
}

/// A block read by the fast reader.
#[derive(Debug, Default)]
pub(super) struct Script<'s> {
    pub events: Vec<Ev<'s>>,
    pub items: Vec<Item<'s>>,
}

/// Gave up: the full parser must read this block.
#[derive(Debug)]
pub(super) struct GiveUp;

type R<T> = Result<T, GiveUp>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Semi,
    Amp,
    AndIf,
    OrIf,
    Pipe,
    LParen,
    RParen,
    /// `>`, `>>`, `>|`, `&>`, `&>>` (with the io number, if any, already read).
    Write,
    /// `<`
    Read,
    /// `>&` (target must be a number or `-`).
    DupOut,
}

#[derive(Clone, Copy, Debug)]
enum T<'s> {
    Word { tok: Tok<'s>, plain: bool },
    Op(Op),
    Newline,
    Eof,
}

/// Reads `code`, or gives up.
pub(super) fn parse(code: &str) -> R<Script<'_>> {
    // Printable ASCII, tabs and newlines only (written without early exit, so that it
    // compiles to a vector loop).
    let bad = code.bytes().fold(false, |bad, b| {
        bad | ((b < 0x20) & (b != b'\n') & (b != b'\t')) | (b >= 0x7f)
    });
    if bad {
        return Err(GiveUp);
    }
    let mut p = P {
        s: code,
        b: code.as_bytes(),
        i: 0,
        line: 1,
        peeked: None,
        out: Script {
            // (About one command per 18 bytes and one word per 6 in common shell; room to spare.)
            events: Vec::with_capacity(code.len() / 16),
            items: Vec::with_capacity(code.len() / 4),
        },
    };
    p.list(Ctx::Top)?;
    match p.next()? {
        T::Eof => Ok(p.out),
        _ => Err(GiveUp),
    }
}

/// What ends the list being read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    Top,
    Paren,
    /// Ended by one of these reserved words in command position.
    Words(&'static [&'static str]),
}

/// Bash's reserved words (special only where a command starts).
fn reserved(w: &str) -> bool {
    matches!(
        w,
        "if" | "then"
            | "else"
            | "elif"
            | "fi"
            | "do"
            | "done"
            | "case"
            | "esac"
            | "while"
            | "until"
            | "for"
            | "in"
            | "function"
            | "select"
            | "time"
            | "coproc"
            | "{"
            | "}"
            | "!"
            | "[["
            | "]]"
    )
}

struct P<'s> {
    s: &'s str,
    b: &'s [u8],
    i: usize,
    line: usize,
    peeked: Option<(T<'s>, usize, usize)>,
    out: Script<'s>,
}

impl<'s> P<'s> {
    // ----- lexer -----

    fn peek(&mut self) -> R<T<'s>> {
        if let Some((t, _, _)) = self.peeked {
            return Ok(t);
        }
        let (i0, l0) = (self.i, self.line);
        let t = self.lex()?;
        let (i1, l1) = (self.i, self.line);
        self.i = i0;
        self.line = l0;
        self.peeked = Some((t, i1, l1));
        Ok(t)
    }

    fn next(&mut self) -> R<T<'s>> {
        if let Some((t, i, l)) = self.peeked.take() {
            self.i = i;
            self.line = l;
            return Ok(t);
        }
        self.lex()
    }

    fn at(&self, k: usize) -> u8 {
        self.b.get(self.i + k).copied().unwrap_or(0)
    }

    fn lex(&mut self) -> R<T<'s>> {
        loop {
            match self.at(0) {
                b' ' | b'\t' => self.i += 1,
                b'#' => {
                    while self.i < self.b.len() && self.b[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                _ => break,
            }
        }
        if self.i >= self.b.len() {
            return Ok(T::Eof);
        }
        let c = self.at(0);
        let c1 = self.at(1);
        let (op, n) = match c {
            b'\n' => {
                self.i += 1;
                self.line += 1;
                return Ok(T::Newline);
            }
            b';' => match c1 {
                b';' | b'&' => return Err(GiveUp),
                _ => (Op::Semi, 1),
            },
            b'&' => match c1 {
                b'&' => (Op::AndIf, 2),
                b'>' if self.at(2) == b'>' => (Op::Write, 3),
                b'>' => (Op::Write, 2),
                _ => (Op::Amp, 1),
            },
            b'|' => match c1 {
                b'|' => (Op::OrIf, 2),
                b'&' => return Err(GiveUp),
                _ => (Op::Pipe, 1),
            },
            b'(' => (Op::LParen, 1),
            b')' => (Op::RParen, 1),
            b'>' => match c1 {
                b'>' | b'|' => (Op::Write, 2),
                b'&' => (Op::DupOut, 2),
                b'(' => return Err(GiveUp),
                _ => (Op::Write, 1),
            },
            b'<' => match c1 {
                b'<' | b'&' | b'>' | b'(' => return Err(GiveUp),
                _ => (Op::Read, 1),
            },
            _ => return self.word(),
        };
        self.i += n;
        Ok(T::Op(op))
    }

    /// A word up to an unquoted blank or operator character.
    fn word(&mut self) -> R<T<'s>> {
        let start = self.i;
        let line = self.line;
        let mut plain = true;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>' => break,
                b'\'' => {
                    plain = false;
                    self.i += 1;
                    self.until_quote()?;
                }
                b'"' => {
                    plain = false;
                    self.i += 1;
                    self.double_quoted()?;
                }
                b'\\' => {
                    plain = false;
                    match self.at(1) {
                        0 | b'\n' => return Err(GiveUp),
                        _ => self.i += 2,
                    }
                }
                b'$' => {
                    plain = false;
                    self.dollar()?;
                }
                b'`' => return Err(GiveUp),
                _ => self.i += 1,
            }
        }
        let end = self.i;
        // `a>f`, `{fd}>f`: only a plain number may touch a redirection (an io number).
        if matches!(self.at(0), b'<' | b'>') {
            let w = &self.b[start..end];
            if !w.iter().all(u8::is_ascii_digit) {
                return Err(GiveUp);
            }
            return self.io_number();
        }
        let raw = &self.s[start..end];
        let tok = Tok {
            raw,
            start,
            end,
            line,
            literal: plain && !raw.contains('~'),
        };
        Ok(T::Word { tok, plain })
    }

    /// `N>`, `N>>`, `N<`, `N>&M` (the number is not a word of the command).
    fn io_number(&mut self) -> R<T<'s>> {
        match self.lex()? {
            T::Op(op @ (Op::Write | Op::Read | Op::DupOut)) => {
                // `N&>` is not an io number; `lex` read `>` or `<` first here.
                Ok(T::Op(op))
            }
            _ => Err(GiveUp),
        }
    }

    /// After an opening `'`: up to and past the closing one.
    fn until_quote(&mut self) -> R<()> {
        while self.i < self.b.len() {
            let c = self.b[self.i];
            self.i += 1;
            match c {
                b'\'' => return Ok(()),
                b'\n' => self.line += 1,
                _ => {}
            }
        }
        Err(GiveUp)
    }

    /// After an opening `"`: up to and past the closing one.
    fn double_quoted(&mut self) -> R<()> {
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(());
                }
                b'\\' => match self.at(1) {
                    0 | b'\n' => return Err(GiveUp),
                    _ => self.i += 2,
                },
                b'$' => self.dollar()?,
                b'`' => return Err(GiveUp),
                b'\n' => {
                    self.line += 1;
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
        Err(GiveUp)
    }

    /// At a `$`: `$NAME`, `$N`, a special parameter, `${NAME}` or a simple `$(…)`.
    fn dollar(&mut self) -> R<()> {
        let n = dollar_len(&self.b[self.i..]).ok_or(GiveUp)?;
        self.line += self.b[self.i..self.i + n]
            .iter()
            .filter(|c| **c == b'\n')
            .count();
        self.i += n;
        Ok(())
    }

    // ----- parser -----

    fn skip_newlines(&mut self) -> R<()> {
        while let T::Newline = self.peek()? {
            self.next()?;
        }
        Ok(())
    }

    fn is_closer(&mut self, ctx: Ctx) -> R<bool> {
        Ok(match (self.peek()?, ctx) {
            (T::Eof, Ctx::Top) => true,
            (T::Op(Op::RParen), Ctx::Paren) => true,
            (T::Word { tok, plain: true }, Ctx::Words(ws)) => ws.contains(&tok.raw),
            _ => false,
        })
    }

    /// A list of commands up to its closer (left unread). Returns how many it read.
    fn list(&mut self, ctx: Ctx) -> R<usize> {
        let mut n = 0;
        loop {
            self.skip_newlines()?;
            if self.is_closer(ctx)? {
                return Ok(n);
            }
            self.and_or()?;
            n += 1;
            match self.peek()? {
                T::Op(Op::Semi | Op::Amp) => {
                    self.next()?;
                    if let T::Op(Op::Semi | Op::Amp) = self.peek()? {
                        return Err(GiveUp);
                    }
                }
                T::Newline => {}
                // After a compound command only an operator may follow (`{ a; } b` is
                // an error; `fi then` is left to the full parser).
                T::Word { .. } => return Err(GiveUp),
                _ => {
                    if !self.is_closer(ctx)? {
                        return Err(GiveUp);
                    }
                }
            }
        }
    }

    /// A list that must hold at least one command, then its closing word.
    fn body(&mut self, closers: &'static [&'static str]) -> R<&'s str> {
        if self.list(Ctx::Words(closers))? == 0 {
            return Err(GiveUp);
        }
        match self.next()? {
            T::Word { tok, plain: true } => Ok(tok.raw),
            _ => Err(GiveUp),
        }
    }

    fn and_or(&mut self) -> R<()> {
        self.pipeline()?;
        while let T::Op(Op::AndIf | Op::OrIf) = self.peek()? {
            self.next()?;
            self.skip_newlines()?;
            self.pipeline()?;
        }
        Ok(())
    }

    fn pipeline(&mut self) -> R<()> {
        self.command(false)?;
        while let T::Op(Op::Pipe) = self.peek()? {
            self.next()?;
            self.skip_newlines()?;
            self.command(true)?;
        }
        Ok(())
    }

    fn command(&mut self, piped: bool) -> R<()> {
        match self.peek()? {
            T::Op(Op::LParen) => {
                self.next()?;
                if let T::Op(Op::LParen) = self.peek()? {
                    return Err(GiveUp); // `((`: arithmetic
                }
                if self.list(Ctx::Paren)? == 0 {
                    return Err(GiveUp);
                }
                self.next()?; // `)`
                self.compound_redirects()
            }
            T::Word { tok, plain: true } if reserved(tok.raw) => {
                self.next()?;
                match tok.raw {
                    "{" => {
                        self.body(&["}"])?;
                    }
                    "if" => {
                        self.body(&["then"])?;
                        let mut closer = self.body(&["elif", "else", "fi"])?;
                        while closer == "elif" {
                            self.body(&["then"])?;
                            closer = self.body(&["elif", "else", "fi"])?;
                        }
                        if closer == "else" {
                            self.body(&["fi"])?;
                        }
                    }
                    "while" | "until" => {
                        self.body(&["do"])?;
                        self.body(&["done"])?;
                    }
                    "for" => self.for_loop()?,
                    _ => return Err(GiveUp),
                }
                self.compound_redirects()
            }
            _ => self.simple(piped),
        }
    }

    fn for_loop(&mut self) -> R<()> {
        match self.next()? {
            T::Word { tok, plain: true } if is_name(tok.raw) => {}
            _ => return Err(GiveUp),
        }
        match self.next()? {
            T::Word { tok, plain: true } if tok.raw == "in" => {}
            _ => return Err(GiveUp),
        }
        let mut n = 0;
        loop {
            match self.next()? {
                T::Word { tok, plain } => {
                    if plain && reserved(tok.raw) {
                        return Err(GiveUp);
                    }
                    self.out.events.push(Ev::Word(tok));
                    n += 1;
                }
                T::Op(Op::Semi) | T::Newline => break,
                _ => return Err(GiveUp),
            }
        }
        if n == 0 {
            return Err(GiveUp);
        }
        self.skip_newlines()?;
        match self.next()? {
            T::Word { tok, plain: true } if tok.raw == "do" => {}
            _ => return Err(GiveUp),
        }
        self.body(&["done"])?;
        Ok(())
    }

    fn compound_redirects(&mut self) -> R<()> {
        while let T::Op(op @ (Op::Write | Op::Read | Op::DupOut)) = self.peek()? {
            self.next()?;
            if let Some(r) = self.redirect_target(op)? {
                self.out.events.push(Ev::Redirect(r));
            }
        }
        Ok(())
    }

    /// The target word of a redirection; `None` for `>&N` (no file involved).
    fn redirect_target(&mut self, op: Op) -> R<Option<Redir<'s>>> {
        let T::Word { tok, plain } = self.next()? else {
            return Err(GiveUp);
        };
        match op {
            Op::DupOut
                if plain && (tok.raw == "-" || tok.raw.bytes().all(|b| b.is_ascii_digit())) =>
            {
                Ok(None)
            }
            Op::DupOut => Err(GiveUp),
            _ => Ok(Some(Redir {
                writes: op == Op::Write,
                target: tok,
            })),
        }
    }

    fn simple(&mut self, piped: bool) -> R<()> {
        let from = self.out.items.len();
        let mut named = false;
        loop {
            match self.peek()? {
                T::Word { tok, plain } => {
                    self.next()?;
                    if !named {
                        if let Some(name) = assignment_name(tok.raw) {
                            // (`X=(a b)` gives up at the `(` that follows.)
                            self.out.items.push(Item::Assign(tok, name));
                            continue;
                        }
                        if plain && reserved(tok.raw) {
                            return Err(GiveUp);
                        }
                        named = true;
                    }
                    self.out.items.push(Item::Word(tok));
                }
                T::Op(op @ (Op::Write | Op::Read | Op::DupOut)) => {
                    self.next()?;
                    if let Some(r) = self.redirect_target(op)? {
                        self.out.items.push(Item::Redirect(r));
                    }
                }
                T::Op(Op::LParen) => return Err(GiveUp),
                _ => break,
            }
        }
        let to = self.out.items.len();
        if to == from {
            return Err(GiveUp);
        }
        self.out.events.push(Ev::Simple { from, to, piped });
        Ok(())
    }
}

/// A shell name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// `NAME=…` or `NAME+=…` (not `NAME[i]=…`): the name.
fn assignment_name(raw: &str) -> Option<&str> {
    let eq = raw.find('=')?;
    let name = raw[..eq].strip_suffix('+').unwrap_or(&raw[..eq]);
    is_name(name).then_some(name)
}

/// The length of the expansion starting with `$` at `b[0]`, for the forms the fast
/// reader knows: `$NAME`, `$1`…`$9`, `$@ $* $# $? $- $$ $! $0`, `${NAME}`, and `$(…)`
/// whose code holds no quote, escape, expansion, parenthesis, comment or tilde.
pub(super) fn dollar_len(b: &[u8]) -> Option<usize> {
    let c = b.get(1).copied()?;
    match c {
        b'{' => {
            let close = b.iter().position(|c| *c == b'}')?;
            let inner = std::str::from_utf8(&b[2..close]).ok()?;
            is_name(inner).then_some(close + 1)
        }
        b'(' => {
            if b.get(2) == Some(&b'(') {
                return None;
            }
            let mut k = 2;
            loop {
                match *b.get(k)? {
                    b')' => return Some(k + 1),
                    b'(' | b'$' | b'`' | b'\\' | b'\'' | b'"' | b'#' | b'~' => return None,
                    _ => k += 1,
                }
            }
        }
        b'1'..=b'9' | b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!' | b'0' => Some(2),
        c if c.is_ascii_alphabetic() || c == b'_' => Some(
            1 + b[1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .count(),
        ),
        _ => None,
    }
}

/// Judges a block read by the fast reader, doing what the syntax-tree walker does for the
/// same constructs, in the same order.
pub(super) fn walk(w: &mut super::Walker<'_, '_>, script: &Script<'_>) {
    for ev in &script.events {
        match ev {
            Ev::Word(t) => {
                word(w, t);
            }
            Ev::Redirect(r) => redirect(w, r),
            Ev::Simple { from, to, piped } => simple(w, &script.items[*from..*to], *piped),
        }
    }
}

/// A word's value: plain text is its own value (what the word readers give for it, with
/// nothing to report), anything else is read by them.
fn word(w: &mut super::Walker<'_, '_>, t: &Tok<'_>) -> super::words::Arg {
    if t.literal {
        super::words::Arg::literal(t.raw)
    } else {
        w.word_raw(t.raw, t.line)
    }
}

fn redirect(w: &mut super::Walker<'_, '_>, r: &Redir<'_>) {
    let a = word(w, &r.target);
    if r.writes {
        w.write_target_raw(r.target.raw, r.target.line, &a);
    }
}

fn simple(w: &mut super::Walker<'_, '_>, items: &[Item<'_>], piped: bool) {
    let mut args = Vec::with_capacity(items.len());
    let mut assignments = Vec::new();
    let mut first: Option<(usize, usize)> = None;
    let mut last_end = 0usize;
    for it in items {
        if let Item::Word(t) | Item::Assign(t, _) = it {
            if first.is_none() {
                first = Some((t.start, t.line));
            }
            last_end = last_end.max(t.end);
        }
    }
    for it in items {
        match it {
            Item::Word(t) => {
                let a = word(w, t);
                args.push(a);
            }
            Item::Assign(t, name) => {
                let mut value = word(w, t);
                if let Some((_, v)) = value.text.split_once('=') {
                    value.text = v.to_string();
                }
                assignments.push((name.to_string(), value));
            }
            Item::Redirect(r) => redirect(w, r),
        }
    }
    let stdin = if piped {
        super::commands::Stdin::Pipe
    } else {
        super::commands::Stdin::Terminal
    };
    w.finish_simple(args, assignments, first, last_end, stdin);
}
