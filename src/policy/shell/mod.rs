//! Shell analysis with a real parser (brush-parser): walks the syntax tree down to every
//! simple command — through lists, pipelines, subshells, groups, loops, conditionals,
//! functions, command and process substitutions, redirections and here-documents — and
//! hands each one to the command table (`commands.rs`). Whatever it cannot see through is
//! reported as opaque: it is "cannot tell" and never allowed by a rule.

mod commands;
mod fast;
mod git;
pub(crate) mod options;
mod runners;
mod sed;
mod table;
pub(crate) mod words;

use brush_parser::ParserOptions;
use brush_parser::ast;

use super::analysis::{Analysis, Frame};
use super::verdict::RiskClass;
use words::{Arg, ParsedWord, parse_heredoc_body, parse_word};

use commands::Cmd;
pub(crate) use commands::{is_system_path, judge_words};

/// How deep `bash -c`, `$(…)` and friends may nest before the policy gives up.
const MAX_DEPTH: usize = 12;

/// Parses `code` as shell and analyses every simple command in it.
pub(crate) fn analyse(an: &mut Analysis<'_>, code: &str, frame: &Frame) {
    if frame.depth > MAX_DEPTH {
        an.opaque(
            "nested too deeply to follow",
            first_line(code),
            frame.line(1),
            frame,
        );
        return;
    }
    let options = ParserOptions::default();
    if !an.full_parser_only
        && let Ok(script) = fast::parse(code)
    {
        let mut w = Walker {
            an,
            code,
            frame,
            options: &options,
            ascii: true,
        };
        fast::walk(&mut w, &script);
        return;
    }
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(code.as_bytes()), &options);
    match parser.parse_program() {
        Ok(program) => {
            let mut w = Walker {
                an,
                code,
                frame,
                options: &options,
                ascii: code.is_ascii(),
            };
            for cc in &program.complete_commands {
                w.list(cc);
            }
        }
        Err(e) => {
            let line = match &e {
                brush_parser::ParseError::ParsingNear(p) => p.line,
                brush_parser::ParseError::Tokenizing {
                    position: Some(p), ..
                } => p.line,
                _ => code.lines().count().max(1),
            };
            let quoted = code.lines().nth(line.saturating_sub(1)).unwrap_or(code);
            an.opaque(
                "the shell parser cannot read this, so nothing in the block can be judged",
                quoted.trim(),
                frame.line(line),
                frame,
            );
        }
    }
}

/// The 1-based line where a word starts (1 when the parser gave no location).
fn start_line(w: &ast::Word) -> usize {
    w.loc.as_ref().map(|l| l.start.line).unwrap_or(1)
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

struct Walker<'w, 'a> {
    an: &'w mut Analysis<'a>,
    code: &'w str,
    frame: &'w Frame,
    options: &'w ParserOptions,
    /// The code is ASCII: the parser's char indices are byte indices.
    ascii: bool,
}

impl Walker<'_, '_> {
    fn list(&mut self, list: &ast::CompoundList) {
        for item in &list.0 {
            self.and_or(&item.0);
        }
    }

    fn and_or(&mut self, l: &ast::AndOrList) {
        self.pipeline(&l.first);
        for a in &l.additional {
            match a {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline) {
        let piped = p.seq.len() > 1;
        for (i, c) in p.seq.iter().enumerate() {
            self.command(c, piped && i > 0);
        }
    }

    fn command(&mut self, c: &ast::Command, stdin_piped: bool) {
        match c {
            ast::Command::Simple(s) => self.simple(s, stdin_piped),
            ast::Command::Compound(cc, redirects) => {
                self.compound(cc);
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io, &mut None);
                    }
                }
            }
            ast::Command::Function(f) => {
                self.an.functions.insert(f.fname.value.clone());
                self.compound(&f.body.0);
                if let Some(r) = &f.body.1 {
                    for io in &r.0 {
                        self.redirect(io, &mut None);
                    }
                }
            }
            ast::Command::ExtendedTest(t, redirects) => {
                self.ext_test(&t.expr);
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io, &mut None);
                    }
                }
            }
        }
    }

    fn ext_test(&mut self, e: &ast::ExtendedTestExpr) {
        match e {
            ast::ExtendedTestExpr::And(a, b) | ast::ExtendedTestExpr::Or(a, b) => {
                self.ext_test(a);
                self.ext_test(b);
            }
            ast::ExtendedTestExpr::Not(a) | ast::ExtendedTestExpr::Parenthesized(a) => {
                self.ext_test(a)
            }
            ast::ExtendedTestExpr::UnaryTest(_, w) => {
                self.word(w);
            }
            ast::ExtendedTestExpr::BinaryTest(_, a, b) => {
                self.word(a);
                self.word(b);
            }
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand) {
        match c {
            ast::CompoundCommand::Arithmetic(a) => self.arith(&a.expr, &a.loc),
            ast::CompoundCommand::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arith(e, &f.loc);
                }
                self.list(&f.body.list);
            }
            ast::CompoundCommand::BraceGroup(b) => self.list(&b.list),
            ast::CompoundCommand::Subshell(s) => self.list(&s.list),
            ast::CompoundCommand::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(w);
                }
                self.list(&f.body.list);
            }
            ast::CompoundCommand::CaseClause(c) => {
                self.word(&c.value);
                for item in &c.cases {
                    for p in &item.patterns {
                        self.word(p);
                    }
                    if let Some(l) = &item.cmd {
                        self.list(l);
                    }
                }
            }
            ast::CompoundCommand::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c);
                    }
                    self.list(&e.body);
                }
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            ast::CompoundCommand::Coprocess(c) => self.command(&c.body, false),
        }
    }

    fn arith(&mut self, e: &ast::UnexpandedArithmeticExpr, loc: &brush_parser::SourceSpan) {
        if e.value.contains("$(") || e.value.contains('`') {
            let line = self.frame.line(loc.start.line);
            let quoted = self.slice(loc).to_string();
            self.an.opaque(
                "a command substitution inside arithmetic",
                &quoted,
                line,
                self.frame,
            );
        }
    }

    /// The exact source text of a span (char indices from the parser).
    fn slice(&self, loc: &brush_parser::SourceSpan) -> &str {
        slice_chars(self.code, self.ascii, loc.start.index, loc.end.index)
    }

    /// Reads a word, walks the command substitutions inside it, and reports what is opaque.
    fn word(&mut self, w: &ast::Word) -> Arg {
        self.word_raw(&w.value, start_line(w))
    }

    /// Like `word`, for a word given by its raw text and (1-based) start line.
    pub(super) fn word_raw(&mut self, raw: &str, start_line: usize) -> Arg {
        let parsed = if self.an.full_parser_only {
            words::parse_word_full(raw, self.options)
        } else {
            parse_word(raw, self.options)
        };
        self.word_parts(raw, start_line, parsed)
    }

    fn word_parts(&mut self, raw: &str, start_line: usize, parsed: ParsedWord) -> Arg {
        if let Some(reason) = &parsed.opaque {
            let line = self.frame.line(start_line);
            self.an.opaque(reason, raw, line, self.frame);
        }
        // A quoted or escaped `a[$(…)]`: code that waits for an arithmetic context (a
        // substitution written as such runs here and is read below).
        if words::subscript_code(&parsed.arg.text)
            && (!parsed.arg.dynamic || raw.contains(['\'', '\\']))
        {
            self.subscript_code(raw, start_line);
        }
        for sub in &parsed.substitutions {
            let before: usize = raw.chars().take(sub.offset).filter(|c| *c == '\n').count();
            let mut inner = self.frame.nested(raw, self.frame.line(start_line));
            inner.line_base = self.frame.line(start_line + before) - 1;
            analyse(self.an, &sub.code, &inner);
        }
        parsed.arg
    }

    fn simple(&mut self, s: &ast::SimpleCommand, stdin_piped: bool) {
        let mut args: Vec<Arg> = Vec::new();
        let mut assignments: Vec<(String, Arg)> = Vec::new();
        let mut stdin: Option<(String, bool)> = None; // (text, literal)
        let mut first: Option<(usize, usize)> = None; // (start, line)
        let mut last_end = 0usize;
        let mut span = |w: &ast::Word| {
            if let Some(l) = &w.loc {
                if first.is_none_or(|(s, _)| l.start.index < s) {
                    first = Some((l.start.index, l.start.line));
                }
                last_end = last_end.max(l.end.index);
            }
        };
        let mut items: Vec<&ast::CommandPrefixOrSuffixItem> = Vec::new();
        if let Some(p) = &s.prefix {
            items.extend(p.0.iter());
        }
        let word_pos = items.len();
        if let Some(p) = &s.suffix {
            items.extend(p.0.iter());
        }
        for it in &items {
            match it {
                ast::CommandPrefixOrSuffixItem::Word(w)
                | ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) => span(w),
                _ => {}
            }
        }
        if let Some(w) = &s.word_or_name {
            span(w);
        }
        for (i, it) in items.iter().enumerate() {
            if let Some(w) = s.word_or_name.as_ref().filter(|_| i == word_pos) {
                let a = self.word(w);
                args.push(a);
            }
            match it {
                ast::CommandPrefixOrSuffixItem::Word(w) => {
                    let a = self.word(w);
                    args.push(a);
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(asg, w) => {
                    let a = self.word(w);
                    if let ast::AssignmentValue::Array(vals) = &asg.value {
                        for (k, v) in vals {
                            if let Some(k) = k {
                                self.word(k);
                            }
                            self.word(v);
                        }
                    }
                    let name = match &asg.name {
                        ast::AssignmentName::VariableName(n) => n.clone(),
                        ast::AssignmentName::ArrayElementName(n, _) => n.clone(),
                    };
                    if args.is_empty() {
                        let mut value = a;
                        if let Some((_, v)) = value.text.split_once('=') {
                            value.text = v.to_string();
                        }
                        assignments.push((name, value));
                    } else {
                        // `declare X=…`, `export X=…`: an argument of the command.
                        args.push(a);
                    }
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(io) => self.redirect(io, &mut stdin),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.list(&sub.list);
                    // An argument (a file name known only at run time): it keeps the
                    // words after it in place (`xargs -a <(…) rm`).
                    if !args.is_empty() {
                        args.push(Arg {
                            text: "<(…)".to_string(),
                            dynamic: true,
                            tilde: false,
                        });
                    }
                }
            }
        }
        if let Some(w) = s.word_or_name.as_ref().filter(|_| word_pos == items.len()) {
            let a = self.word(w);
            args.push(a);
        }
        let stdin = match stdin {
            Some((text, literal)) => commands::Stdin::Text { text, literal },
            None if stdin_piped => commands::Stdin::Pipe,
            None => commands::Stdin::Terminal,
        };
        self.finish_simple(args, assignments, first, last_end, stdin);
    }

    /// Judges a simple command once its words are read: `first` is the (char index, line)
    /// where its first word starts, `last_end` where its last word ends.
    pub(super) fn finish_simple(
        &mut self,
        args: Vec<Arg>,
        assignments: Vec<(String, Arg)>,
        first: Option<(usize, usize)>,
        last_end: usize,
        stdin: commands::Stdin,
    ) {
        let (quoted, line) = match first {
            Some((start, line)) => (
                slice_chars(self.code, self.ascii, start, last_end).to_string(),
                self.frame.line(line),
            ),
            None => (String::new(), self.frame.line(1)),
        };
        let cmd = Cmd {
            args,
            assignments,
            quoted,
            line,
            stdin,
        };
        commands::judge(self.an, cmd, self.frame);
    }

    /// A redirection: writes are findings; a here-document or here-string may feed code
    /// to the command (returned through `stdin`).
    fn redirect(&mut self, io: &ast::IoRedirect, stdin: &mut Option<(String, bool)>) {
        match io {
            ast::IoRedirect::File(_, kind, target) => match target {
                ast::IoFileRedirectTarget::Filename(w) => {
                    let a = self.word(w);
                    let writes = matches!(
                        kind,
                        ast::IoFileRedirectKind::Write
                            | ast::IoFileRedirectKind::Append
                            | ast::IoFileRedirectKind::Clobber
                            | ast::IoFileRedirectKind::ReadAndWrite
                    );
                    if writes {
                        self.write_target(w, &a);
                    }
                }
                ast::IoFileRedirectTarget::Duplicate(w) => {
                    let a = self.word(w);
                    let is_fd = a.text == "-"
                        || (!a.text.is_empty()
                            && a.text
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit()));
                    if matches!(kind, ast::IoFileRedirectKind::DuplicateOutput) && !is_fd {
                        self.write_target(w, &a);
                    }
                }
                ast::IoFileRedirectTarget::Fd(_) => {}
                ast::IoFileRedirectTarget::ProcessSubstitution(_, sub) => self.list(&sub.list),
            },
            ast::IoRedirect::OutputAndError(w, _) => {
                let a = self.word(w);
                self.write_target(w, &a);
            }
            ast::IoRedirect::HereString(_, w) => {
                let a = self.word(w);
                *stdin = Some((a.text.clone(), !a.dynamic));
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    let parsed = parse_heredoc_body(&doc.doc.value, self.options);
                    let literal = !parsed.arg.dynamic;
                    let a = self.word_parts(&doc.doc.value, start_line(&doc.doc), parsed);
                    *stdin = Some((
                        if literal {
                            a.text
                        } else {
                            doc.doc.value.clone()
                        },
                        literal,
                    ));
                } else {
                    if words::subscript_code(&doc.doc.value) {
                        self.subscript_code(&doc.doc.value, start_line(&doc.doc));
                    }
                    *stdin = Some((doc.doc.value.clone(), true));
                }
            }
        }
    }

    fn subscript_code(&mut self, quoted: &str, start_line: usize) {
        let line = self.frame.line(start_line);
        self.an.opaque(
            "holds a command substitution in an array subscript, which bash runs when the text is evaluated as arithmetic",
            quoted,
            line,
            self.frame,
        );
    }

    fn write_target(&mut self, w: &ast::Word, a: &Arg) {
        self.write_target_raw(&w.value, start_line(w), a);
    }

    /// A redirection that writes to the file named by the word `raw` (at `line`, 1-based
    /// in this code) whose value is `a`.
    pub(super) fn write_target_raw(&mut self, raw: &str, line: usize, a: &Arg) {
        let line = self.frame.line(line);
        let quoted = raw;
        let t = a.text.as_str();
        if matches!(t, "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty")
            || t.starts_with("/dev/fd/")
        {
            return;
        }
        // A command that writes a file is more than its program: no allow rule for the
        // program covers it (the finding below explains it).
        self.an
            .redirect_write_at
            .get_or_insert(self.an.findings.len());
        if !self.an.inside_workspace(t, a.dynamic, a.tilde) {
            self.an.unallowable = true;
            // Every branch below adds the finding that explains it.
            self.an.unallowable_at.get_or_insert(self.an.findings.len());
        }
        if a.dynamic && !a.tilde {
            self.an.finding(
                RiskClass::WritesFiles,
                "writes to a file named only at run time",
                quoted,
                line,
                self.frame,
            );
        } else if commands::is_system_path(t) {
            self.an.finding(
                RiskClass::ChangesSystem,
                "writes to a system path",
                quoted,
                line,
                self.frame,
            );
        } else {
            self.an.finding(
                RiskClass::WritesFiles,
                "writes to a file",
                quoted,
                line,
                self.frame,
            );
        }
    }
}

/// A slice of `s` by char indices (the parser counts chars); clamps to the string.
pub(crate) fn slice_chars(s: &str, ascii: bool, start: usize, end: usize) -> &str {
    if ascii {
        let e = end.min(s.len());
        return s.get(start.min(e)..e).unwrap_or("");
    }
    let mut idx = s
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(s.len()));
    let b0 = idx.clone().nth(start).unwrap_or(s.len());
    let b1 = idx.nth(end).unwrap_or(s.len());
    s.get(b0..b1.max(b0)).unwrap_or("")
}

#[cfg(test)]
mod fast_tests;
