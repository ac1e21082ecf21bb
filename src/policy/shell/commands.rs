//! The command table: what one simple command does. Wrappers (`sudo`, `env`, `nice`,
//! `nohup`, `timeout`, `time`, `command`, `exec`, `builtin`, `stdbuf`, `ionice`, `setsid`)
//! are unwrapped; runners (`xargs`, `find -exec`, `bash -c`, `su -c`, `python -c`, a
//! here-document fed to an interpreter, `trap`) have the code they run judged in its own
//! right. An unknown program is "cannot tell" (it could do anything) but, unlike `eval` or
//! a command word known only at run time, an allow rule for it can let it through: the
//! user has then said what it is.

use std::borrow::Cow;

use super::super::analysis::{Analysis, Frame};
use super::super::verdict::{RiskClass, Rule};
use super::table::classify;
use super::words::Arg;

/// Where a command's standard input comes from.
#[derive(Clone, Debug)]
pub(crate) enum Stdin {
    Terminal,
    Pipe,
    /// A here-document or here-string; `literal` is false when it holds expansions.
    Text {
        text: String,
        literal: bool,
    },
}

/// One simple command, its words after quote removal.
#[derive(Clone, Debug)]
pub(crate) struct Cmd {
    pub args: Vec<Arg>,
    pub assignments: Vec<(String, Arg)>,
    pub quoted: String,
    pub line: usize,
    pub stdin: Stdin,
}

/// Variables that change which program runs or what it loads.
const HIJACK_VARS: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "DYLD_INSERT_LIBRARIES",
    "PYTHONSTARTUP",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXEC_PATH",
    "GIT_EXTERNAL_DIFF",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "EDITOR",
    "VISUAL",
    "BROWSER",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5LIB",
    "RUBYLIB",
    "NODE_PATH",
    "SHELLOPTS",
    "BASHOPTS",
    "ZDOTDIR",
];

/// Whether setting this variable can make a program run a command or load code of the
/// block's choosing (`GIT_EXTERNAL_DIFF='rm f' git diff`, `PAGER`, `LD_PRELOAD`, …).
pub(crate) fn is_hijack_var(name: &str) -> bool {
    HIJACK_VARS.contains(&name) || name.starts_with("GIT_CONFIG") || name.starts_with("BASH_FUNC_")
}

const SYSTEM_DIRS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/sys", "/proc", "/dev",
    "/opt", "/var/lib", "/System", "/Library",
];

/// A path under a system directory (writing there changes the system).
pub(crate) fn is_system_path(p: &str) -> bool {
    let s = super::super::analysis::normalise_str("", p);
    s == "/"
        || SYSTEM_DIRS.iter().any(|d| {
            s.strip_prefix(d)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

/// The words of `args` as a view for the rules (borrowed, not copied).
fn view(args: &[Arg]) -> Vec<Cow<'_, str>> {
    args.iter()
        .map(|a| Cow::Borrowed(a.text.as_str()))
        .collect()
}

/// Views of a command for the rules: its words, and whether that view must be allowed.
type Views<'c> = Vec<(Vec<Cow<'c, str>>, bool)>;

/// The last component of a command name (`/bin/rm` is `rm`): the text after the last `/`.
pub(super) fn base(name: &str) -> &str {
    // (A byte search: `/` is ASCII, so the cut is on a character boundary; the same
    // result as `rsplit('/').next()`, without the pattern searcher's set-up per word.)
    match last_slash(name) {
        Some(k) => &name[k + 1..],
        None => name,
    }
}

/// The byte offset of the last `/` in `s`.
pub(super) fn last_slash(s: &str) -> Option<usize> {
    s.as_bytes().iter().rposition(|&b| b == b'/')
}

/// Judges one simple command: findings, nested code, and the rule decision.
pub(crate) fn judge(an: &mut Analysis<'_>, cmd: Cmd, frame: &Frame) {
    let Some((rule, gating)) = judge_ref(an, &cmd, frame) else {
        return;
    };
    let words = cmd.args.into_iter().map(|a| a.text).collect();
    an.command(words, cmd.quoted, cmd.line, frame, rule, gating);
}

/// Findings and nested code for one command; returns the rule decision for it and whether
/// it gates the block (the caller records the command), or `None` when there is no
/// command to record (only assignments).
fn judge_ref(an: &mut Analysis<'_>, cmd: &Cmd, frame: &Frame) -> Option<(Option<Rule>, bool)> {
    let hijack = cmd.assignments.iter().find(|(n, _)| is_hijack_var(n));
    if let Some((name, _)) = hijack {
        let expl = format!("sets {name}, which changes what the following commands run");
        an.opaque(&expl, &cmd.quoted, cmd.line, frame);
    }
    if cmd.args.is_empty() {
        // `X=rm`: remembered, so that a later `$X …` meets the rules as `rm …`.
        for (name, value) in &cmd.assignments {
            if value.dynamic {
                an.vars.remove(name);
            } else {
                an.vars.insert(name.clone(), value.text.clone());
            }
        }
        return None;
    }
    let mut views: Views<'_> = vec![(view(&cmd.args), false)];
    let mut i = 0usize;
    // Unwrap prefix wrappers.
    loop {
        let Some(first) = cmd.args.get(i) else {
            // A wrapper with nothing to run (`sudo -v`, `env`, `exec 3>f`).
            an.read_only = true;
            return Some((decide(an, &mut views), true));
        };
        // Brace expansion (`{rm,-rf,x}`) and globs (`/bin/r?`) in the command word expand
        // to a name known only at run time.
        let expands =
            (first.text.contains(['*', '?', '[']) && first.text != "[" && first.text != "[[")
                || (first.text.contains('{')
                    && (first.text.contains(',') || first.text.contains("..")));
        if first.dynamic || expands {
            an.opaque(
                "the command name is known only at run time",
                &cmd.quoted,
                cmd.line,
                frame,
            );
            // Still opaque (the value may differ at run time), but when the variable was
            // set to a literal in this block, the rules see what it most likely runs.
            let name = first
                .text
                .trim_start_matches('$')
                .trim_start_matches('{')
                .trim_end_matches('}');
            if let Some(value) = an.vars.get(name).cloned() {
                let mut w: Vec<Cow<'_, str>> = value
                    .split_whitespace()
                    .map(|v| Cow::Owned(v.to_string()))
                    .collect();
                w.extend(view(&cmd.args[i + 1..]));
                views.push((w, false));
            }
            return Some((decide(an, &mut views), true));
        }
        let name = base(&first.text);
        let rest = &cmd.args[i + 1..];
        let skip = match name {
            "sudo" | "doas" | "pkexec" | "runuser" => {
                an.finding(
                    RiskClass::Privileged,
                    "runs a command as another user (root)",
                    &cmd.quoted,
                    cmd.line,
                    frame,
                );
                if let Some(v) = views.last_mut() {
                    v.1 = true;
                }
                let with_arg: &[&str] = match name {
                    "sudo" => &[
                        "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R",
                    ],
                    "doas" => &["-u", "-C"],
                    "runuser" => &["-u", "-g", "-G", "-c", "-s", "-w"],
                    _ => &["-u"],
                };
                let n = skip_options(rest, with_arg);
                if rest.get(n).is_none()
                    && rest
                        .iter()
                        .any(|a| matches!(a.text.as_str(), "-i" | "-s" | "--login" | "--shell"))
                {
                    an.opaque("opens a root shell", &cmd.quoted, cmd.line, frame);
                }
                n
            }
            "env" => {
                let mut n = 0;
                while let Some(a) = rest.get(n) {
                    let t = a.text.as_str();
                    if matches!(t, "-S" | "--split-string")
                        || t.starts_with("--split-string=")
                        || (t.starts_with("-S") && t.len() > 2)
                    {
                        an.opaque(
                            "env -S splits a string into a command",
                            &cmd.quoted,
                            cmd.line,
                            frame,
                        );
                        return Some((decide(an, &mut views), true));
                    }
                    if matches!(t, "-u" | "--unset" | "-C" | "--chdir") {
                        n += 2;
                    } else if t == "--" {
                        n += 1;
                        break;
                    } else if t.starts_with('-') {
                        n += 1;
                    } else if let Some((var, _)) = t.split_once('=') {
                        if is_hijack_var(var) {
                            let expl = format!("sets {var}, which changes what the command runs");
                            an.opaque(&expl, &cmd.quoted, cmd.line, frame);
                        }
                        n += 1;
                    } else {
                        break;
                    }
                }
                n
            }
            "nice" => match rest.first().map(|a| a.text.as_str()) {
                Some("-n" | "--adjustment") => 2,
                Some(t) if t.starts_with('-') => 1,
                _ => 0,
            },
            "nohup" | "builtin" | "setsid" => skip_options(rest, &[]),
            "timeout" => {
                let n = skip_options(rest, &["-s", "-k", "--signal", "--kill-after"]);
                n + 1
            }
            "time" => skip_options(rest, &["-f", "-o", "--format", "--output"]),
            "stdbuf" => skip_options(rest, &["-i", "-o", "-e"]),
            "ionice" => skip_options(rest, &["-c", "-n", "-p", "-P", "-u"]),
            "chrt" | "taskset" => {
                let n = skip_options(rest, &[]);
                n + 1
            }
            "command" => {
                if rest.iter().any(|a| a.text == "-v" || a.text == "-V") {
                    an.read_only = true;
                    return Some((decide(an, &mut views), true));
                }
                skip_options(rest, &[])
            }
            "exec" => skip_options(rest, &["-a"]),
            _ => break,
        };
        i += 1 + skip;
        if i < cmd.args.len() {
            views.push((view(&cmd.args[i..]), false));
        }
    }
    if let Some(v) = views.last_mut() {
        v.1 = true;
    }
    // `git -C dir push`: rules see `git push` too.
    if cmd.args.get(i).is_some_and(|a| base(&a.text) == "git") {
        let rest = &cmd.args[i + 1..];
        let mut k = 0;
        while let Some(a) = rest.get(k) {
            match a.text.as_str() {
                "-C" | "-c" | "--git-dir" | "--work-tree" => k += 2,
                t if t.starts_with('-') => k += 1,
                _ => break,
            }
        }
        if k > 0 && k < rest.len() {
            let mut w = vec![Cow::Borrowed("git")];
            w.extend(view(&rest[k..]));
            views.push((w, false));
        }
    }
    an.unknown_program = false;
    let gating = classify(an, cmd, &cmd.args[i..], frame);
    if an.unknown_program {
        // An unknown program may run its arguments as a command (`strace rm x`,
        // `flock f rm x`): deny and ask rules also see every tail of it that starts
        // with a plain word. (Allow rules never do: the program itself must be allowed.)
        let words = view(&cmd.args[i..]);
        let innermost = views.pop();
        for k in 1..words.len() {
            if !words[k].starts_with('-') {
                views.push((words[k..].to_vec(), false));
            }
        }
        if let Some(v) = innermost {
            views.push(v);
        }
    }
    Some((decide(an, &mut views), gating))
}

/// The rule decision over the views of a command (the innermost view must be allowed).
fn decide(an: &mut Analysis<'_>, views: &mut Views<'_>) -> Option<Rule> {
    if let Some(v) = views.last_mut() {
        v.1 = true;
    }
    // Suggestions need the views of each recorded command (in the order recorded).
    if an.keep_views {
        an.views.push(
            views
                .iter()
                .map(|(w, g)| (w.iter().map(|c| c.to_string()).collect(), *g))
                .collect(),
        );
    }
    an.rules.decide(views)
}

/// Counts leading options (and the values of those in `with_arg`), including a `--`.
pub(super) fn skip_options(args: &[Arg], with_arg: &[&str]) -> usize {
    let mut n = 0;
    while let Some(a) = args.get(n) {
        let t = a.text.as_str();
        if t == "--" {
            return n + 1;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        n += if with_arg.contains(&t) { 2 } else { 1 };
    }
    n.min(args.len())
}

/// Like `judge`, for a command built from words (xargs, find -exec, a list in Python).
pub(crate) fn judge_words(
    an: &mut Analysis<'_>,
    args: Vec<Arg>,
    quoted: &str,
    line: usize,
    frame: &Frame,
) {
    let cmd = Cmd {
        args,
        assignments: Vec::new(),
        quoted: quoted.to_string(),
        line,
        stdin: Stdin::Terminal,
    };
    judge(an, cmd, frame);
}
