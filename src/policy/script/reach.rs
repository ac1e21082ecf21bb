//! Ways code reaches a function other than by calling it by name, and code it loads from
//! elsewhere: a function that runs commands taken as a value (`s = subprocess.run`,
//! `(os.system)(…)`, `method(:system)`, Perl's `system { … } …`), looked up by a name in a
//! string (`getattr(os, 'system')`, `match.fun('system')`, `send('system', …)`), through a
//! namespace (`os.__dict__`), and modules or files of the workspace (`import helper`,
//! `require('./h')`, `require_relative 'h'`), which an earlier block may have written.
//! What cannot be followed is "cannot tell".

use std::collections::HashMap;

use super::super::analysis::{Analysis, Frame};
use super::super::verdict::RiskClass;
use super::Language;
use super::table::{Act, lookup};
use super::tokenizer::{Kind, Token};

/// Acts whose function, once out of sight, may do what the policy must see.
pub(super) fn runs(act: Act) -> bool {
    matches!(
        act,
        Act::Shell | Act::ProgramArgs | Act::Exec { .. } | Act::Eval | Act::Dynamic | Act::Delete
    )
}

fn quote<'c>(code: &'c str, toks: &[Token], i: usize, j: usize) -> &'c str {
    let end = toks.get(j).map(|t| t.end).unwrap_or(code.len());
    code.get(toks[i].start..end.max(toks[i].start))
        .unwrap_or("")
}

/// Whether the function named by tokens `i..=j` is used other than by a call the policy
/// reads (a call with parentheses; in Ruby and Perl also without).
pub(super) fn taken_as_value(lang: Language, toks: &[Token], i: usize, j: usize, act: Act) -> bool {
    if !runs(act) {
        return false;
    }
    let prev = i.checked_sub(1).map(|p| &toks[p].kind);
    match toks.get(j + 1) {
        Some(t) if t.kind == Kind::Punct('(') => false,
        // Perl's `eval { … }`, Ruby's `instance_eval do … end`: blocks of code.
        Some(t)
            if act == Act::Eval
                && matches!(&t.kind, Kind::Punct('{'))
                    | matches!(&t.kind, Kind::Ident(s) if s == "do") =>
        {
            false
        }
        // `system "…"`, `unlink $f`: Ruby and Perl call without parentheses.
        Some(t)
            if matches!(lang, Language::Ruby | Language::Perl)
                && matches!(&t.kind, Kind::Str { .. } | Kind::Ident(_))
                && t.line == toks[j].line =>
        {
            false
        }
        // `const { spawn } = require('child_process')`: a binding of the same name, whose
        // calls are read where they are made.
        Some(t)
            if lang == Language::JavaScript
                && i == j
                && matches!(prev, Some(Kind::Punct('{' | ',')))
                && matches!(t.kind, Kind::Punct('}' | ',')) =>
        {
            false
        }
        _ => true,
    }
}

/// Records a function that runs commands (or deletes) taken as a value.
pub(super) fn value_taken(
    an: &mut Analysis<'_>,
    code: &str,
    toks: &[Token],
    i: usize,
    j: usize,
    frame: &Frame,
) {
    an.opaque(
        "takes a function that runs commands (or deletes) as a value: where it is called is not followed",
        quote(code, toks, i, j),
        frame.line(toks[i].line),
        frame,
    );
}

/// A chain `a.b.c` whose leading part is such a function (`os.system.__call__`,
/// `cp.execSync.call`): the call is made through something the policy does not follow.
pub(super) fn runs_inside_chain(lang: Language, parts: &[&str], child_process: bool) -> bool {
    if lang == Language::R || parts.len() < 3 {
        return false;
    }
    (2..parts.len()).any(|k| {
        let name = parts[..k].join(".");
        lookup(lang, &name, parts[k - 1], child_process).is_some_and(runs)
    })
}

/// Python names that reach functions through a namespace (`os.__dict__['system']`).
pub(super) fn python_namespace(id: &str) -> bool {
    matches!(
        id,
        "__dict__" | "__builtins__" | "__getattribute__" | "__globals__" | "__subclasses__"
    )
}

/// `X['name']` (Python, JavaScript): a member looked up by a literal string, read as
/// `X.name`. Returns the index of `]` and the name when `i` is such a `[`.
pub(super) fn string_member(lang: Language, toks: &[Token], i: usize) -> Option<(usize, &str)> {
    if !matches!(lang, Language::Python | Language::JavaScript) || i == 0 {
        return None;
    }
    let object = matches!(toks[i - 1].kind, Kind::Ident(_) | Kind::Punct(')' | ']'));
    match (&toks.get(i + 1)?.kind, &toks.get(i + 2)?.kind) {
        (
            Kind::Str {
                value,
                literal: true,
            },
            Kind::Punct(']'),
        ) if object => Some((i + 2, value.as_str())),
        _ => None,
    }
}

/// The modules Python treats as system ones (for `getattr(os, …)`).
const SYSTEM_MODULES: &[&str] = &[
    "os",
    "posix",
    "subprocess",
    "shutil",
    "builtins",
    "__builtins__",
    "pty",
    "sys",
    "ctypes",
    "importlib",
    "asyncio",
    "commands",
];

/// `getattr(OBJ, 'name')` in Python: opaque when OBJ is a system module (through an
/// alias too) or the name is one of a function that runs commands. Returns whether it
/// was recorded.
#[allow(clippy::too_many_arguments)]
pub(super) fn python_getattr(
    an: &mut Analysis<'_>,
    code: &str,
    toks: &[Token],
    i: usize,
    j: usize,
    aliases: &HashMap<String, String>,
    child_process: bool,
    frame: &Frame,
) -> bool {
    if toks.get(j + 1).map(|t| &t.kind) != Some(&Kind::Punct('(')) {
        return false;
    }
    let object = match toks.get(j + 2).map(|t| &t.kind) {
        Some(Kind::Ident(o)) => aliases.get(o).map(String::as_str).unwrap_or(o),
        _ => "",
    };
    let top = object.split('.').next().unwrap_or("");
    let attr = match (
        toks.get(j + 3).map(|t| &t.kind),
        toks.get(j + 4).map(|t| &t.kind),
    ) {
        (Some(Kind::Punct(',')), Some(Kind::Str { value, .. })) => value.as_str(),
        _ => "",
    };
    let by_name = !attr.is_empty()
        && (lookup(
            Language::Python,
            &format!("{object}.{attr}"),
            attr,
            child_process,
        )
        .is_some_and(runs));
    if !(SYSTEM_MODULES.contains(&top) || by_name) {
        return false;
    }
    an.opaque(
        "looks up a function of a system module by name",
        quote(code, toks, i, j + 1),
        frame.line(toks[i].line),
        frame,
    );
    true
}

/// A function looked up by a literal name (Ruby `send('system', …)`, `method('system')`,
/// R `match.fun('system')`, `do.call('system', …)`): opaque when the name is one of a
/// function that runs commands.
pub(super) fn by_name(lang: Language, name: &str, child_process: bool) -> bool {
    !name.is_empty() && lookup(lang, name, name, child_process).is_some_and(runs)
}

/// Whether a call that loads code (`require`, `load`, `do`, `import(…)`) with this literal
/// argument runs a file (of the workspace, or anywhere) rather than an installed library.
pub(super) fn loads_file(lang: Language, call: &str, arg: &str) -> bool {
    let path = arg.starts_with('.') || arg.starts_with('/');
    match lang {
        Language::JavaScript => path,
        Language::Ruby => call.starts_with("require_relative") || call.starts_with("load") || path,
        Language::Perl => {
            call.starts_with("do")
                || arg.contains('/')
                || arg.ends_with(".pl")
                || arg.ends_with(".pm")
        }
        _ => false,
    }
}

/// Records code loaded from a file the policy cannot read.
pub(super) fn loaded_file(an: &mut Analysis<'_>, q: &str, line: usize, frame: &Frame) {
    an.finding(
        RiskClass::CannotTell,
        "loads code from a file the policy cannot read (an earlier block may have written it)",
        q,
        line,
        frame,
    );
}

/// JavaScript `import … from './h.js'` and `import './h.js'`.
pub(super) fn js_import_from(toks: &[Token], i: usize) -> Option<&str> {
    let Kind::Ident(kw) = &toks[i].kind else {
        return None;
    };
    if kw != "from" && kw != "import" {
        return None;
    }
    match &toks.get(i + 1)?.kind {
        Kind::Str { value, .. } if loads_file(Language::JavaScript, "import", value) => {
            Some(value.as_str())
        }
        _ => None,
    }
}

/// Python import statements: checks that each module is one the policy knows (see
/// `modules.rs`), and returns the token spans of the statements (whose names are bound,
/// not called).
pub(super) fn python_imports(
    an: &mut Analysis<'_>,
    code: &str,
    toks: &[Token],
    frame: &Frame,
) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let kw = match &toks[i].kind {
            Kind::Ident(s) if s == "import" || s == "from" => s.as_str(),
            _ => {
                i += 1;
                continue;
            }
        };
        // At the start of a statement (not `yield from`, `raise … from e`, `x.import`).
        let start = i == 0
            || toks[i - 1].line != toks[i].line
            || matches!(toks[i - 1].kind, Kind::Punct(';' | ':'));
        if !start {
            i += 1;
            continue;
        }
        // The statement runs to the end of its line (or of its parentheses, or on after a
        // backslash).
        let mut end = i + 1;
        let mut depth = 0i32;
        while let Some(t) = toks.get(end) {
            let continued = depth > 0 || toks[end - 1].kind == Kind::Punct('\\');
            if t.line != toks[end - 1].line && !continued {
                break;
            }
            match t.kind {
                Kind::Punct('(') => depth += 1,
                Kind::Punct(')') => depth -= 1,
                Kind::Punct(';') if depth == 0 => break,
                _ => {}
            }
            end += 1;
        }
        // The modules: after `from`, and after `import` and each comma (not after
        // `from … import`, whose names are members).
        let mut k = i;
        let mut expect = true;
        while k < end {
            match &toks[k].kind {
                Kind::Ident(s) if s == "import" && kw == "from" => break,
                Kind::Ident(s) if s == "import" || s == "from" => expect = true,
                Kind::Punct('.') if expect && kw == "from" => {
                    loaded_file(
                        an,
                        quote(code, toks, i, end - 1),
                        frame.line(toks[i].line),
                        frame,
                    );
                    expect = false;
                }
                Kind::Ident(m) if expect => {
                    if !super::modules::is_known(m) {
                        let e = format!(
                            "imports {m}, a module the policy does not know: it may be a file of the workspace, which the policy cannot read"
                        );
                        an.finding(
                            RiskClass::CannotTell,
                            &e,
                            quote(code, toks, k, k),
                            frame.line(toks[k].line),
                            frame,
                        );
                    }
                    expect = false;
                }
                Kind::Punct(',') => expect = true,
                _ => {}
            }
            k += 1;
        }
        spans.push((i, end));
        i = end.max(i + 1);
    }
    spans
}
