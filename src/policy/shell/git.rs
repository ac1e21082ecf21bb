//! git: what a subcommand does, and the ways git runs commands of the block's choosing —
//! settings that name a command (`git config core.fsmonitor …`, `git -c alias.x='!…'`,
//! which a later `git status` or `git x` runs), options that take one (`git rebase
//! --exec …`, in the options table), `git bisect run` and `git submodule foreach`.

use super::super::analysis::{Analysis, Frame};
use super::super::verdict::RiskClass;
use super::commands::{Cmd, judge_words};
use super::words::Arg;

/// Settings that never name a command or a file of code, by section (`user` for
/// `user.name`) or full name.
const PLAIN_SETTINGS: &[&str] = &[
    "user",
    "init",
    "color",
    "advice",
    "log",
    "status",
    "column",
    "feature",
    "i18n",
    "push.default",
    "push.autosetupremote",
    "push.followtags",
    "pull.rebase",
    "pull.ff",
    "fetch.prune",
    "fetch.prunetags",
    "core.autocrlf",
    "core.filemode",
    "core.ignorecase",
    "core.quotepath",
    "core.eol",
    "core.safecrlf",
    "core.compression",
    "core.bare",
    "core.symlinks",
    "merge.conflictstyle",
    "merge.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "rebase.updaterefs",
    "commit.verbose",
    "tag.sort",
    "help.autocorrect",
    "safe.directory",
    "http.postbuffer",
    "diff.algorithm",
    "diff.colormoved",
    "diff.renames",
    "diff.mnemonicprefix",
    "gc.auto",
    "protocol.version",
];

fn plain_setting(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let section = key.split('.').next().unwrap_or("");
    // `branch.main.remote`, `remote.origin.url`: names of things, not commands.
    let named_plain = (section == "branch"
        && (key.ends_with(".remote") || key.ends_with(".merge") || key.ends_with(".rebase")))
        || (section == "remote"
            && (key.ends_with(".url") || key.ends_with(".fetch") || key.ends_with(".pushurl")));
    named_plain
        || PLAIN_SETTINGS
            .iter()
            .any(|p| *p == key || (!p.contains('.') && *p == section))
}

/// A setting `key` given `value`: any setting not known to be plain may name a command
/// git runs (`core.fsmonitor`, `core.pager`, `alias.x='!…'`, `diff.x.textconv`, …) or a
/// file of settings (`include.path`): its value is judged as a command, so that a deny
/// rule sees it and anything else is "cannot tell" (an unknown program, a path).
fn setting(an: &mut Analysis<'_>, cmd: &Cmd, key: &str, value: Option<&Arg>, frame: &Frame) {
    if plain_setting(key) {
        return;
    }
    let q = cmd.quoted.as_str();
    let Some(v) = value.filter(|v| !v.dynamic) else {
        if value.is_some() {
            let e = format!("git setting {key} set to a value known only at run time");
            an.opaque(&e, q, cmd.line, frame);
        }
        return;
    };
    let text = v.text.trim();
    let code = if key.to_ascii_lowercase().starts_with("alias.") {
        // `!cmd` runs a shell command; anything else is a git command line.
        match text.strip_prefix('!') {
            Some(c) => c.to_string(),
            None => format!("git {text}"),
        }
    } else {
        text.trim_start_matches('!').to_string()
    };
    if code.trim().is_empty() {
        return;
    }
    let f = frame.nested(q, cmd.line);
    super::analyse(an, &code, &f);
}

/// `git config …`: reading is read-only; setting judges the value (see `setting`).
/// Returns whether it only reads.
fn config(an: &mut Analysis<'_>, cmd: &Cmd, rest: &[Arg], frame: &Frame) -> bool {
    let reads = rest.iter().any(|a| {
        matches!(
            a.text.as_str(),
            "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get" | "list"
        )
    });
    if reads {
        return true;
    }
    let mut k = 0;
    while let Some(a) = rest.get(k) {
        match a.text.as_str() {
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" => k += 2,
            "set" | "--add" | "--replace-all" => k += 1,
            t if t.starts_with('-') => {
                if matches!(t, "--unset" | "--unset-all" | "unset" | "--remove-section") {
                    return false;
                }
                k += 1
            }
            _ => break,
        }
    }
    if let Some(key) = rest.get(k) {
        if key.dynamic {
            an.opaque(
                "git setting named only at run time",
                &cmd.quoted,
                cmd.line,
                frame,
            );
        } else {
            setting(an, cmd, &key.text, rest.get(k + 1), frame);
        }
    }
    rest.iter().all(|a| a.text.starts_with('-'))
}

pub(super) fn git(an: &mut Analysis<'_>, cmd: &Cmd, args: &[Arg], frame: &Frame) {
    // Global options (`-C dir`, `-c k=v`, `--no-pager`).
    let mut i = 0;
    while let Some(a) = args.get(i) {
        match a.text.as_str() {
            "-c" => {
                if let Some(kv) = args.get(i + 1) {
                    let (key, value) = kv.text.split_once('=').unwrap_or((&kv.text, ""));
                    let v = Arg {
                        text: value.to_string(),
                        dynamic: kv.dynamic,
                        tilde: false,
                    };
                    setting(an, cmd, key, Some(&v), frame);
                }
                i += 2
            }
            "-C" | "--git-dir" | "--work-tree" => i += 2,
            t if t.starts_with("--config-env") || t.starts_with("--exec-path=") => {
                an.opaque(
                    "git takes a setting or its programs from somewhere the policy cannot read",
                    &cmd.quoted,
                    cmd.line,
                    frame,
                );
                i += 1
            }
            t if t.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let sub = args.get(i).map(|a| a.text.as_str()).unwrap_or("");
    let rest = &args[(i + 1).min(args.len())..];
    super::options::judge(an, cmd, &format!("git {sub}"), rest, frame);
    let (class, e) = match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "blame" | "grep"
        | "describe" | "shortlog" | "reflog" | "ls-tree" | "cat-file" | "whatchanged"
        | "version" | "help" | "" => {
            an.read_only = true;
            return;
        }
        "config" => {
            if config(an, cmd, rest, frame) {
                an.read_only = true;
                return;
            }
            (RiskClass::WritesFiles, "changes the repository")
        }
        "bisect" if rest.first().is_some_and(|a| a.text == "run") => {
            judge_words(an, rest[1..].to_vec(), &cmd.quoted, cmd.line, frame);
            (RiskClass::WritesFiles, "changes the repository")
        }
        "submodule" if rest.iter().any(|a| a.text == "foreach") => {
            let k = rest.iter().position(|a| a.text == "foreach").unwrap_or(0);
            let code: Vec<&Arg> = rest[k + 1..]
                .iter()
                .filter(|a| !a.text.starts_with("--"))
                .collect();
            if code.iter().any(|a| a.dynamic) {
                an.opaque(
                    "git submodule foreach runs a command known only at run time",
                    &cmd.quoted,
                    cmd.line,
                    frame,
                );
            } else if !code.is_empty() {
                let text: Vec<&str> = code.iter().map(|a| a.text.as_str()).collect();
                let f = frame.nested(&cmd.quoted, cmd.line);
                super::analyse(an, &text.join(" "), &f);
            }
            (RiskClass::Network, "talks to a remote repository")
        }
        "branch" | "tag" | "remote" | "stash" | "worktree" => {
            if rest.iter().all(|a| a.text.starts_with('-'))
                && !rest.iter().any(|a| {
                    matches!(
                        a.text.as_str(),
                        "-d" | "-D" | "-m" | "-M" | "--delete" | "--unset" | "--add"
                    )
                })
            {
                an.read_only = true;
                return;
            }
            if sub == "remote" && rest.first().is_some_and(|a| a.text == "update") {
                (RiskClass::Network, "fetches from a remote")
            } else {
                (RiskClass::WritesFiles, "changes the repository")
            }
        }
        "push" | "pull" | "fetch" | "clone" | "ls-remote" | "submodule" | "send-email"
        | "request-pull" => (RiskClass::Network, "talks to a remote repository"),
        "clean" => (RiskClass::Deletes, "deletes untracked files"),
        "rm" => (RiskClass::Deletes, "deletes tracked files"),
        "reset" if rest.iter().any(|a| a.text == "--hard") => {
            (RiskClass::Deletes, "discards uncommitted changes")
        }
        "checkout" | "restore" if rest.iter().any(|a| a.text == "." || a.text == "--") => {
            (RiskClass::Deletes, "discards uncommitted changes")
        }
        _ => (RiskClass::WritesFiles, "changes the repository"),
    };
    an.finding(class, e, &cmd.quoted, cmd.line, frame);
}
