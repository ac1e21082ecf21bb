//! Finds the calls that matter in a token stream: shell commands (judged as shell when
//! literal), deletes, writes, network, permissions, dynamic code. Calls are recognised by
//! their dotted name (`os.system`, `FileUtils.rm_rf`, `fs.rmSync`, `file.remove`), with
//! Python's `import … as …` aliases resolved.

use std::collections::HashMap;

use super::super::analysis::{Analysis, Frame};
use super::super::shell::words::Arg;
use super::super::verdict::RiskClass;
use super::Language;
use super::reach;
use super::table::{Act, lookup};
use super::tokenizer::{Kind, Token, tokenize};

/// One argument value.
#[derive(Clone, Debug)]
enum Val {
    Str(String),
    List(Vec<String>),
    Dynamic,
}

pub(crate) fn analyse(an: &mut Analysis<'_>, lang: Language, code: &str, frame: &Frame) {
    let toks = tokenize(code, lang);
    let child_process = toks
        .iter()
        .any(|t| matches!(&t.kind, Kind::Str { value, .. } if value.ends_with("child_process")));
    let (aliases, imports) = if lang == Language::Python {
        (
            python_aliases(&toks),
            reach::python_imports(an, code, &toks, frame),
        )
    } else {
        (HashMap::new(), Vec::new())
    };
    // The spans come in order and do not overlap: the one that could hold `i` is found by
    // halving.
    let in_import = |i: usize| {
        let k = imports.partition_point(|&(_, end)| end <= i);
        imports
            .get(k)
            .is_some_and(|&(start, end)| start <= i && i < end)
    };
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match &t.kind {
            Kind::Punct('[') => {
                // `os.__dict__['system'](…)`, `require('child_process')['execSync'](…)`.
                if let Some((j, member)) = reach::string_member(lang, &toks, i) {
                    let act = lookup(lang, &format!("?.{member}"), member, child_process);
                    if let Some(act) = act {
                        if reach::taken_as_value(lang, &toks, i, j, act) {
                            reach::value_taken(an, code, &toks, i, j, frame);
                        } else {
                            call(an, lang, code, &toks, i, j, act, frame);
                        }
                    }
                }
            }
            Kind::Str {
                value,
                literal: true,
            } if lang == Language::Ruby
                && i > 0
                && toks[i - 1].kind == Kind::Punct(':')
                && reach::by_name(lang, value, child_process) =>
            {
                // `method(:"system")`: a symbol naming a function that runs commands.
                reach::value_taken(an, code, &toks, i - 1, i, frame);
            }
            Kind::Ident(_)
                if lang == Language::JavaScript && reach::js_import_from(&toks, i).is_some() =>
            {
                let q = code.get(t.start..toks[i + 1].end).unwrap_or("");
                reach::loaded_file(an, q, frame.line(t.line), frame);
            }
            Kind::Ident(id)
                if lang == Language::Python
                    && id.starts_with("__")
                    && reach::python_namespace(id) =>
            {
                an.opaque(
                    "reaches functions through a namespace the policy cannot follow",
                    code.get(t.start..t.end).unwrap_or(""),
                    frame.line(t.line),
                    frame,
                );
            }
            Kind::Shell { value, literal } => {
                let q = code.get(t.start..t.end).unwrap_or("");
                if *literal {
                    let f = frame.nested(q, frame.line(t.line));
                    super::super::shell::analyse(an, value, &f);
                } else {
                    an.opaque(
                        "runs a shell command built at run time",
                        q,
                        frame.line(t.line),
                        frame,
                    );
                }
            }
            Kind::Ident(id) => {
                let after_dot = i > 0 && toks[i - 1].kind == Kind::Punct('.');
                let is_call_start = !after_dot;
                if is_call_start {
                    // Collect the dotted chain.
                    // (Borrowed from the tokens and the alias table, not copied.)
                    let mut parts: Vec<&str> = vec![id.as_str()];
                    let mut j = i;
                    while j + 2 < toks.len() && toks[j + 1].kind == Kind::Punct('.') {
                        if let Kind::Ident(n) = &toks[j + 2].kind {
                            parts.push(n.as_str());
                            j += 2;
                        } else {
                            break;
                        }
                    }
                    if let Some(full) = aliases.get(parts[0]) {
                        let mut p: Vec<&str> = full.split('.').collect();
                        p.extend(parts.drain(1..));
                        parts = p;
                    }
                    let name = parts.join(".");
                    let last = parts.last().copied().unwrap_or_default();
                    // A method on an expression (`Path(x).unlink()`) is looked up by its
                    // last name with an unknown receiver.
                    let known = lookup(
                        lang,
                        &name,
                        if parts.len() > 1 { last } else { "" },
                        child_process,
                    )
                    .or_else(|| {
                        if lang == Language::JavaScript {
                            lookup(lang, &name, last, child_process)
                        } else {
                            None
                        }
                    });
                    if lang == Language::Python
                        && name == "getattr"
                        && reach::python_getattr(
                            an,
                            code,
                            &toks,
                            i,
                            j,
                            &aliases,
                            child_process,
                            frame,
                        )
                    {
                    } else if let Some(act) = known {
                        if !in_import(i) && reach::taken_as_value(lang, &toks, i, j, act) {
                            reach::value_taken(an, code, &toks, i, j, frame);
                        } else {
                            call(an, lang, code, &toks, i, j, act, frame);
                        }
                    } else if reach::runs_inside_chain(lang, &parts, child_process) {
                        reach::value_taken(an, code, &toks, i, j, frame);
                    }
                    // Also check method calls inside the chain (`a.b().c()` is handled as
                    // the loop reaches `c` after `)`).
                } else if let Kind::Ident(_) = &t.kind {
                    // `expr.method(` where expr is not a plain name: `)` or `]` before `.`.
                    let recv_is_expr = i >= 2
                        && matches!(
                            toks[i - 2].kind,
                            Kind::Punct(')') | Kind::Punct(']') | Kind::Str { .. }
                        );
                    let act = if recv_is_expr {
                        lookup(lang, &format!("?.{id}"), id, child_process)
                    } else {
                        None
                    };
                    if let Some(act) = act {
                        if reach::taken_as_value(lang, &toks, i, i, act) {
                            reach::value_taken(an, code, &toks, i, i, frame);
                        } else {
                            call(an, lang, code, &toks, i, i, act, frame);
                        }
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Python `import x as y` and `from x import a as b`: local name -> dotted origin.
fn python_aliases(toks: &[Token]) -> HashMap<String, String> {
    let mut map = HashMap::new();
    // (Borrowed: only the names that go into the table are copied.)
    fn ident(k: &Kind) -> Option<&str> {
        if let Kind::Ident(s) = k {
            Some(s.as_str())
        } else {
            None
        }
    }
    let mut i = 0;
    while i < toks.len() {
        let from = ident(&toks[i].kind) == Some("from");
        let import = ident(&toks[i].kind) == Some("import");
        if from || import {
            let mut module = String::new();
            let mut j = i + 1;
            if from {
                while let Some(t) = toks.get(j) {
                    match &t.kind {
                        Kind::Ident(s) if s == "import" => break,
                        Kind::Ident(s) => module.push_str(s),
                        Kind::Punct('.') => module.push('.'),
                        _ => {}
                    }
                    j += 1;
                }
                j += 1;
            }
            // names: a(.b)* (as c)?, …
            let line = toks[i].line;
            let mut cur = String::new();
            while let Some(t) = toks.get(j) {
                if t.line != line
                    && !matches!(
                        toks.get(j.saturating_sub(1)).map(|p| &p.kind),
                        Some(Kind::Punct(',' | '('))
                    )
                {
                    break;
                }
                match &t.kind {
                    Kind::Ident(s) if s == "as" => {
                        if let Some(alias) = toks.get(j + 1).and_then(|t| ident(&t.kind)) {
                            let origin = if from {
                                format!("{module}.{cur}")
                            } else {
                                cur.clone()
                            };
                            map.insert(alias.to_string(), origin);
                            cur.clear();
                            j += 1;
                        }
                    }
                    Kind::Ident(s) => cur.push_str(s),
                    Kind::Punct('.') => cur.push('.'),
                    Kind::Punct(',') | Kind::Punct(')') => {
                        if from && !cur.is_empty() {
                            map.insert(cur.clone(), format!("{module}.{cur}"));
                        }
                        cur.clear();
                    }
                    Kind::Punct('(') => {}
                    _ => break,
                }
                j += 1;
            }
            if from && !cur.is_empty() {
                map.insert(cur.clone(), format!("{module}.{cur}"));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    map
}

/// Positional arguments of a call whose name ends at token `j`. Returns the argument
/// token ranges, the end of the call (exclusive token index), and whether it had parens.
fn arguments(lang: Language, toks: &[Token], j: usize) -> Option<(Vec<(usize, usize)>, usize)> {
    let next = toks.get(j + 1)?;
    let paren = next.kind == Kind::Punct('(');
    if !paren {
        // Ruby and Perl allow `system "…"`, `unlink $f`.
        let bare_ok = matches!(lang, Language::Ruby | Language::Perl)
            && matches!(&next.kind, Kind::Str { .. } | Kind::Ident(_))
            && next.line == toks[j].line;
        if !bare_ok {
            return None;
        }
    }
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut start = if paren { j + 2 } else { j + 1 };
    let mut k = start;
    let line = toks[j].line;
    while k < toks.len() {
        let kind = &toks[k].kind;
        if !paren
            && depth == 0
            && (toks[k].line != line && !matches!(toks[k - 1].kind, Kind::Punct(',')))
        {
            break;
        }
        match kind {
            Kind::Punct('(' | '[' | '{') => depth += 1,
            Kind::Punct(')' | ']' | '}') => {
                if depth == 0 {
                    if paren {
                        if k > start {
                            args.push((start, k));
                        }
                        return Some((args, k + 1));
                    }
                    break;
                }
                depth -= 1;
            }
            Kind::Punct(',') if depth == 0 => {
                args.push((start, k));
                start = k + 1;
            }
            Kind::Punct(';') if depth == 0 && !paren => break,
            Ident(s)
                if !paren
                    && depth == 0
                    && matches!(s.as_str(), "or" | "and" | "if" | "unless" | "do") =>
            {
                break;
            }
            _ => {}
        }
        k += 1;
    }
    if k > start {
        args.push((start, k));
    }
    Some((args, k))
}
use Kind::Ident;

fn value(lang: Language, toks: &[Token]) -> Val {
    match toks {
        [t] => match &t.kind {
            Kind::Str {
                value,
                literal: true,
            } => Val::Str(value.clone()),
            _ => Val::Dynamic,
        },
        _ => {
            // [ 'a', 'b' ] / ( 'a', 'b' ) / c('a', 'b') / %w(a b)
            let inner: &[Token] = match toks {
                [
                    Token {
                        kind: Kind::Ident(c),
                        ..
                    },
                    Token {
                        kind: Kind::Punct('('),
                        ..
                    },
                    mid @ ..,
                    Token {
                        kind: Kind::Punct(')'),
                        ..
                    },
                ] if c == "c" && lang == Language::R => mid,
                [
                    Token {
                        kind: Kind::Punct('[' | '('),
                        ..
                    },
                    mid @ ..,
                    Token {
                        kind: Kind::Punct(']' | ')'),
                        ..
                    },
                ] => mid,
                _ => return Val::Dynamic,
            };
            let mut out = Vec::new();
            for (n, t) in inner.iter().enumerate() {
                match (&t.kind, n % 2) {
                    (
                        Kind::Str {
                            value,
                            literal: true,
                        },
                        0,
                    ) => out.push(value.clone()),
                    (Kind::Punct(','), 1) => {}
                    _ => return Val::Dynamic,
                }
            }
            Val::List(out)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn call(
    an: &mut Analysis<'_>,
    lang: Language,
    code: &str,
    toks: &[Token],
    i: usize,
    j: usize,
    act: Act,
    frame: &Frame,
) {
    // Perl/Ruby `eval {` and `instance_eval do`: blocks of code, not strings.
    if act == Act::Eval
        && toks.get(j + 1).is_some_and(|t| {
            matches!(&t.kind, Kind::Punct('{')) || matches!(&t.kind, Kind::Ident(s) if s == "do")
        })
    {
        return;
    }
    let Some((ranges, end)) = arguments(lang, toks, j) else {
        if act == Act::Dynamic && toks.get(j + 1).is_some_and(|t| t.kind == Kind::Punct('(')) {
            // unreachable in practice: arguments() handles parens
        }
        return;
    };
    let start_tok = &toks[i];
    let end_byte = toks
        .get(end.saturating_sub(1))
        .map(|t| t.end)
        .unwrap_or(code.len());
    let q = code
        .get(start_tok.start..end_byte.max(start_tok.start))
        .unwrap_or("");
    let line = frame.line(start_tok.line);
    // Keyword arguments (`shell=True`, `mode='w'`) are not positional.
    let positional: Vec<&[Token]> = ranges
        .iter()
        .map(|(a, b)| &toks[*a..*b])
        .filter(|a| {
            !(a.len() > 2
                && matches!(a[0].kind, Kind::Ident(_))
                && a[1].kind == Kind::Punct('=')
                && a[2].kind != Kind::Punct('='))
        })
        .filter(|a| {
            !(lang == Language::Ruby
                && a.len() > 1
                && matches!(a[0].kind, Kind::Ident(_))
                && a[1].kind == Kind::Punct(':'))
        })
        .collect();
    let vals: Vec<Val> = positional.iter().map(|a| value(lang, a)).collect();
    let all_kw: Vec<&[Token]> = ranges.iter().map(|(a, b)| &toks[*a..*b]).collect();
    match act {
        Act::Shell => {
            let strs: Vec<&str> = vals
                .iter()
                .filter_map(|v| {
                    if let Val::Str(s) = v {
                        Some(s.as_str())
                    } else {
                        None
                    }
                })
                .collect();
            match vals.first() {
                // Ruby/Perl `system('rm', '-rf', 'x')`: an argv without a shell.
                Some(Val::Str(_))
                    if matches!(lang, Language::Ruby | Language::Perl)
                        && strs.len() > 1
                        && strs.len() == vals.len() =>
                {
                    argv(
                        an,
                        strs.iter().map(|s| s.to_string()).collect(),
                        q,
                        line,
                        frame,
                    )
                }
                Some(Val::Str(s)) => {
                    let f = frame.nested(q, line);
                    super::super::shell::analyse(an, s, &f);
                }
                Some(Val::List(l)) => argv(an, l.clone(), q, line, frame),
                _ => an.opaque("runs a command built at run time", q, line, frame),
            }
        }
        Act::ProgramArgs => match (vals.first(), vals.get(1)) {
            (Some(Val::Str(p)), Some(Val::List(rest))) => {
                let mut v = vec![p.clone()];
                v.extend(rest.iter().cloned());
                argv(an, v, q, line, frame)
            }
            (Some(Val::Str(p)), None) => {
                if lang == Language::R || p.contains(' ') {
                    let f = frame.nested(q, line);
                    super::super::shell::analyse(an, p, &f);
                } else {
                    argv(an, vec![p.clone()], q, line, frame)
                }
            }
            (Some(Val::Str(p)), Some(Val::Str(a))) if lang == Language::R => {
                let f = frame.nested(q, line);
                super::super::shell::analyse(an, &format!("{p} {a}"), &f);
            }
            _ => an.opaque("runs a command built at run time", q, line, frame),
        },
        Act::Exec { skip } => {
            let rest = vals.get(skip..).unwrap_or(&[]);
            if let Some(Val::List(l)) = rest.iter().find(|v| matches!(v, Val::List(_))) {
                argv(an, l.clone(), q, line, frame);
            } else if !rest.is_empty() && rest.iter().all(|v| matches!(v, Val::Str(_))) {
                let strs: Vec<String> = rest
                    .iter()
                    .filter_map(|v| {
                        if let Val::Str(s) = v {
                            Some(s.clone())
                        } else {
                            None
                        }
                    })
                    .collect();
                let argv_words = if strs.len() > 1 {
                    strs[1..].to_vec()
                } else {
                    strs
                };
                argv(an, argv_words, q, line, frame);
            } else {
                an.opaque("runs a program built at run time", q, line, frame);
            }
        }
        Act::Delete => {
            let target = match vals.first() {
                Some(Val::Str(s)) => Some(s.clone()),
                _ => None,
            };
            let recursive = [
                "rmtree",
                "rm_rf",
                "rm_r",
                "remove_tree",
                "remove_dir",
                "rmSync",
                "dir_delete",
            ]
            .iter()
            .any(|n| q.contains(n))
                || q.contains("recursive");
            let what = if recursive {
                "deletes a directory tree"
            } else {
                "deletes files"
            };
            match target {
                Some(t) if an.inside_workspace(&t, false, t.starts_with('~')) => {
                    an.finding(RiskClass::Deletes, what, q, line, frame)
                }
                Some(t) => an.finding(
                    RiskClass::DeletesOutsideWorkspace,
                    &format!("{what} outside the workspace ({t})"),
                    q,
                    line,
                    frame,
                ),
                None => an.finding(
                    RiskClass::DeletesOutsideWorkspace,
                    &format!(
                        "{what} at a path known only at run time (may be outside the workspace)"
                    ),
                    q,
                    line,
                    frame,
                ),
            }
        }
        Act::Write | Act::Perms => {
            let system = vals
                .iter()
                .any(|v| matches!(v, Val::Str(s) if super::super::shell::is_system_path(s)));
            let what = if act == Act::Perms {
                "changes permissions or owners"
            } else {
                "writes files"
            };
            if system {
                an.finding(
                    RiskClass::ChangesSystem,
                    &format!("{what} under a system path"),
                    q,
                    line,
                    frame,
                );
            } else {
                an.finding(RiskClass::WritesFiles, what, q, line, frame);
            }
        }
        Act::Open => {
            let strs: Vec<&str> = all_kw
                .iter()
                .filter_map(|a| a.last())
                .filter_map(|t| {
                    if let Kind::Str { value, .. } = &t.kind {
                        Some(value.as_str())
                    } else {
                        None
                    }
                })
                .collect();
            let mode_args: Vec<&str> = if lang == Language::Perl {
                strs.clone()
            } else {
                strs.iter().skip(1).copied().collect()
            };
            let pipe = lang == Language::Perl
                && strs.iter().any(|s| {
                    s.starts_with('|')
                        || s.ends_with('|')
                        || s.starts_with("-|")
                        || s.starts_with("|-")
                });
            let is_mode = |s: &str| {
                !s.is_empty() && s.len() <= 4 && s.chars().all(|c| "rwxabt+U".contains(c))
            };
            let writes = match lang {
                Language::Perl => strs
                    .iter()
                    .any(|s| s.starts_with('>') || s.starts_with("+<")),
                _ => mode_args
                    .iter()
                    .any(|s| is_mode(s) && s.contains(['w', 'a', 'x', '+'])),
            };
            let dyn_mode = lang != Language::Perl
                && all_kw.len() > 1
                && mode_args.is_empty()
                && positional.len() > 1;
            if pipe {
                an.opaque("opens a pipe to a command", q, line, frame);
            } else if writes {
                let system = strs.iter().any(|s| {
                    super::super::shell::is_system_path(s.trim_start_matches(['>', '+', '<', ' ']))
                });
                if system {
                    an.finding(
                        RiskClass::ChangesSystem,
                        "writes a file under a system path",
                        q,
                        line,
                        frame,
                    );
                } else {
                    an.finding(
                        RiskClass::WritesFiles,
                        "opens a file for writing",
                        q,
                        line,
                        frame,
                    );
                }
            } else if dyn_mode {
                an.finding(
                    RiskClass::WritesFiles,
                    "opens a file in a mode known only at run time",
                    q,
                    line,
                    frame,
                );
            }
        }
        Act::Network => an.finding(
            RiskClass::Network,
            "opens a network connection",
            q,
            line,
            frame,
        ),
        Act::Eval => match vals.first() {
            Some(Val::Str(s)) if lang != Language::R => {
                let f = frame.nested(q, line);
                super::analyse_nested(an, lang, s, &f);
            }
            _ => an.opaque("runs code built at run time", q, line, frame),
        },
        Act::Chdir => match vals.first() {
            // Relative paths after it are judged from the new directory; one known
            // only at run time makes them outside-or-unknown.
            Some(Val::Str(d)) => an.change_dir(Some((d.as_str(), false, d.starts_with('~')))),
            _ => an.change_dir(None),
        },
        Act::Dynamic => an.opaque("runs code built at run time", q, line, frame),
        Act::DynamicName => {
            if let Some(Val::Str(arg)) = vals.first() {
                if reach::loads_file(lang, q, arg) {
                    reach::loaded_file(an, q, line, frame);
                    return;
                }
                // `send('system', …)`, `match.fun('system')`: a name in a string.
                if matches!(lang, Language::Ruby | Language::R) && reach::by_name(lang, arg, false)
                {
                    an.opaque(
                        "looks up a function that runs commands by name",
                        q,
                        line,
                        frame,
                    );
                    return;
                }
            }
            let looks_up_os = lang == Language::Python
                && q.starts_with("getattr")
                && positional.first().is_some_and(|a| matches!(&a[0].kind, Kind::Ident(m) if ["os", "subprocess", "shutil", "builtins", "__builtins__", "pty", "sys"].contains(&m.as_str())));
            let literal_first = matches!(vals.first(), Some(Val::Str(_)));
            // R's `library(ggplot2)` names a package without quotes.
            let r_bare_name = lang == Language::R
                && positional
                    .first()
                    .is_some_and(|a| a.len() == 1 && matches!(a[0].kind, Kind::Ident(_)))
                && !q.starts_with("source")
                && !q.starts_with("do.call");
            // `__import__('subprocess')`, `importlib.import_module('os')`: whatever the
            // module is, what is then called on it is not seen.
            let dynamic_import = lang == Language::Python && !q.starts_with("getattr");
            if dynamic_import {
                an.opaque(
                    "imports a module by name at run time; what it then calls is not seen",
                    q,
                    line,
                    frame,
                );
            } else if looks_up_os {
                an.opaque(
                    "looks up a function of a system module by name",
                    q,
                    line,
                    frame,
                );
            } else if !literal_first && !q.starts_with("getattr") && !r_bare_name {
                an.opaque("loads code named only at run time", q, line, frame);
            } else if q.starts_with("source") || q.starts_with("sys.source") {
                an.finding(
                    RiskClass::CannotTell,
                    "runs another file the policy cannot read",
                    q,
                    line,
                    frame,
                );
            }
        }
    }
}

fn argv(an: &mut Analysis<'_>, words: Vec<String>, q: &str, line: usize, frame: &Frame) {
    if words.is_empty() {
        an.opaque("runs an empty command", q, line, frame);
        return;
    }
    let args: Vec<Arg> = words.iter().map(|w| Arg::literal(w)).collect();
    let f = frame.nested(q, line);
    super::super::shell::judge_words(an, args, q, line, &f);
}
