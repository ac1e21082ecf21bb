//! The runners whose code is judged in its own right: `find -exec`/`-delete`, `bash -c` and
//! the other shells, code fed to an interpreter on its standard input, and interpreters
//! given code with `-c`/`-e` or a script file.

use super::super::analysis::{Analysis, Frame};
use super::super::script::{self, Language};
use super::super::verdict::RiskClass;
use super::commands::{Cmd, Stdin, judge_words};
use super::table::{deletes_under, package_manager};
use super::words::Arg;

pub(super) fn find_cmd(an: &mut Analysis<'_>, cmd: &Cmd, args: &[Arg], frame: &Frame) -> bool {
    let start: Vec<&Arg> = args
        .iter()
        .take_while(|a| !a.text.starts_with('-') && a.text != "(" && a.text != "!")
        .collect();
    let dot = Arg::literal(".");
    let start: Vec<&Arg> = if start.is_empty() { vec![&dot] } else { start };
    let mut i = 0;
    let mut read_only = true;
    while i < args.len() {
        let t = args[i].text.as_str();
        match t {
            "-delete" => {
                read_only = false;
                deletes_under(an, cmd, &start, "deletes the files it finds", frame, true);
            }
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = args[i + 1..]
                    .iter()
                    .position(|a| a.text == ";" || a.text == "+")
                    .map(|p| i + 1 + p)
                    .unwrap_or(args.len());
                let inner = args[i + 1..end].to_vec();
                if inner.is_empty() {
                    an.opaque("find -exec without a command", &cmd.quoted, cmd.line, frame);
                } else {
                    judge_words(an, inner, &cmd.quoted, cmd.line, frame);
                }
                i = end;
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                read_only = false;
                an.finding(
                    RiskClass::WritesFiles,
                    "writes its results to a file",
                    &cmd.quoted,
                    cmd.line,
                    frame,
                );
            }
            _ => {}
        }
        i += 1;
    }
    if read_only {
        an.read_only = true;
    }
    true
}

pub(super) fn shell_runner(an: &mut Analysis<'_>, cmd: &Cmd, args: &[Arg], frame: &Frame) -> bool {
    let q = cmd.quoted.as_str();
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if t == "-c" || (t.starts_with('-') && !t.starts_with("--") && t.contains('c')) {
            return match args.get(i + 1) {
                Some(s) if !s.dynamic => {
                    let f = frame.nested(q, cmd.line);
                    super::analyse(an, &s.text.clone(), &f);
                    false
                }
                Some(_) => {
                    an.opaque(
                        "a shell runs a string known only at run time",
                        q,
                        cmd.line,
                        frame,
                    );
                    true
                }
                None => {
                    an.opaque("a shell -c without a command", q, cmd.line, frame);
                    true
                }
            };
        }
        if t == "-o" || t == "+o" || t == "-O" || t == "+O" {
            i += 2;
            continue;
        }
        if t.starts_with('-') || t.starts_with('+') {
            if t == "-" || t == "--" {
                i += 1;
                break;
            }
            i += 1;
            continue;
        }
        break;
    }
    if args.get(i).is_some() {
        script_file(an, q, cmd, frame);
        return true;
    }
    stdin_code(an, cmd, None, frame);
    false
}

/// Code fed to an interpreter on its standard input.
fn stdin_code(an: &mut Analysis<'_>, cmd: &Cmd, lang: Option<Language>, frame: &Frame) {
    let q = cmd.quoted.as_str();
    match &cmd.stdin {
        Stdin::Text {
            text,
            literal: true,
        } => {
            // The body starts on the line after the command.
            let mut f = frame.nested(q, cmd.line);
            f.line_base = cmd.line;
            match lang {
                None => super::analyse(an, text, &f),
                Some(l) => script::analyse_nested(an, l, text, &f),
            }
        }
        Stdin::Text { literal: false, .. } => an.opaque(
            "runs a here-document with expansions as code",
            q,
            cmd.line,
            frame,
        ),
        Stdin::Pipe => an.opaque("runs code read from a pipe", q, cmd.line, frame),
        Stdin::Terminal => an.opaque("opens an interactive interpreter", q, cmd.line, frame),
    }
}

pub(super) fn interpreter(
    an: &mut Analysis<'_>,
    cmd: &Cmd,
    name: &str,
    args: &[Arg],
    frame: &Frame,
) -> bool {
    let q = cmd.quoted.as_str();
    let lang = match name {
        "node" | "nodejs" => Language::JavaScript,
        "perl" => Language::Perl,
        "ruby" => Language::Ruby,
        "Rscript" | "R" => Language::R,
        _ => Language::Python,
    };
    let code_flags: &[&str] = match lang {
        Language::Python => &["-c"],
        Language::JavaScript => &["-e", "--eval", "-p", "--print"],
        Language::Perl => &["-e", "-E"],
        Language::Ruby => &["-e"],
        _ => &["-e"],
    };
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let t = a.text.as_str();
        if code_flags.contains(&t) {
            match args.get(i + 1) {
                Some(s) if !s.dynamic => {
                    let f = frame.nested(q, cmd.line);
                    script::analyse_nested(an, lang, &s.text.clone(), &f);
                }
                _ => an.opaque("runs code known only at run time", q, cmd.line, frame),
            }
            return true;
        }
        if lang == Language::Python && t == "-m" {
            let module = args.get(i + 1).map(|a| a.text.as_str()).unwrap_or("");
            if module == "pip" {
                let rest = &args[(i + 2).min(args.len())..];
                let sub = rest
                    .iter()
                    .find(|a| !a.text.starts_with('-'))
                    .map(|a| a.text.as_str())
                    .unwrap_or("");
                package_manager(an, cmd, "pip", sub, rest, frame);
            } else if matches!(module, "http.server" | "SimpleHTTPServer") {
                an.finding(
                    RiskClass::Network,
                    "serves files over the network",
                    q,
                    cmd.line,
                    frame,
                );
            } else {
                an.finding(
                    RiskClass::CannotTell,
                    "runs a module the policy cannot read",
                    q,
                    cmd.line,
                    frame,
                );
            }
            return true;
        }
        if t == "-" {
            break;
        }
        if t.starts_with('-') {
            i += 1;
            continue;
        }
        script_file(an, q, cmd, frame);
        return true;
    }
    stdin_code(an, cmd, Some(lang), frame);
    // Code in another language is not a command: the interpreter call itself must be
    // allowed for the block to be.
    true
}

/// A script file run by an interpreter or a shell: its code is not in the block.
fn script_file(an: &mut Analysis<'_>, quoted: &str, cmd: &Cmd, frame: &Frame) {
    an.finding(
        RiskClass::CannotTell,
        "runs a script file the policy cannot read",
        quoted,
        cmd.line,
        frame,
    );
}
