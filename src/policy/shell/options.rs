//! Options of ordinary tools that run a command (`tar --checkpoint-action=exec=…`, `zip
//! -TT …`, `rsync -e …`, `ssh -o ProxyCommand=…`, `man -P …`, `git rebase --exec …`) or
//! read code from a file (`tar -F script`, `ssh -F config`, `awk -f prog`). A command
//! given literally is judged as shell in its own right (so a deny rule sees it); one known
//! only at run time, and a file of code, are "cannot tell".

use super::super::analysis::{Analysis, Frame};
use super::super::verdict::RiskClass;
use super::commands::Cmd;
use super::words::Arg;

/// What an option's value is to the tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// A command line, run through a shell.
    Command,
    /// A file of code or configuration the policy cannot read.
    File,
    /// Commands of the tool's own, where `!` or `|` runs a shell command (`less +!cmd`).
    ShellEscape,
}

/// One option of one tool.
#[derive(Debug)]
pub(crate) struct ToolOption {
    /// The program, or program and subcommand (`git rebase`).
    pub program: &'static str,
    /// As written: `--rsh` (also `--rsh=V` and `--rsh V`), `-e` (also `-eV`, and last in
    /// a bundle `-avze V`), `-TT`, `+` (less's initial commands).
    pub option: &'static str,
    /// A prefix of the value (matched without regard to case) that gives the option this
    /// meaning: `exec=` of tar's `--checkpoint-action`, `ProxyCommand` of ssh's `-o`
    /// (then followed by `=` or a space). Empty: any value.
    pub key: &'static str,
    pub runs: Runs,
    /// An example, checked by the tests (with `rm v` as the command where it runs one).
    #[cfg_attr(not(test), allow(dead_code))]
    pub sample: &'static str,
}

const fn row(
    program: &'static str,
    option: &'static str,
    key: &'static str,
    runs: Runs,
    sample: &'static str,
) -> ToolOption {
    ToolOption {
        program,
        option,
        key,
        runs,
        sample,
    }
}

use Runs::{Command, File, ShellEscape};

/// The table. Programs here are looked up by `find` below; rows of one program together.
pub(crate) static OPTIONS: &[ToolOption] = &[
    row(
        "tar",
        "--checkpoint-action",
        "exec=",
        Command,
        "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec=\"rm v\" f",
    ),
    row(
        "tar",
        "--to-command",
        "",
        Command,
        "tar -xf a.tar --to-command=\"rm v\"",
    ),
    row(
        "tar",
        "--use-compress-program",
        "",
        Command,
        "tar --use-compress-program=\"rm v\" -cf a.tar f",
    ),
    row("tar", "-I", "", Command, "tar -I \"rm v\" -cf a.tar f"),
    row(
        "tar",
        "--rsh-command",
        "",
        Command,
        "tar --rsh-command=\"rm v\" -cf h:a.tar f",
    ),
    row(
        "tar",
        "--info-script",
        "",
        File,
        "tar -cf a.tar --info-script=./next.sh f",
    ),
    row(
        "tar",
        "--new-volume-script",
        "",
        File,
        "tar -cf a.tar --new-volume-script ./next.sh f",
    ),
    row("tar", "-F", "", File, "tar -cf a.tar -F ./next.sh f"),
    row("zip", "-TT", "", Command, "zip -T -TT \"rm v\" a.zip f"),
    row(
        "zip",
        "--unzip-command",
        "",
        Command,
        "zip --unzip-command=\"rm v\" -T a.zip f",
    ),
    row(
        "install",
        "--strip-program",
        "",
        Command,
        "install -s --strip-program=\"rm v\" f out",
    ),
    row(
        "sort",
        "--compress-program",
        "",
        Command,
        "sort --compress-program=\"rm v\" big.txt",
    ),
    row(
        "wget",
        "--use-askpass",
        "",
        Command,
        "wget --use-askpass=\"rm v\" https://example.com/x",
    ),
    row(
        "rsync",
        "-e",
        "",
        Command,
        "rsync -avz -e \"rm v\" a host:b",
    ),
    row(
        "rsync",
        "--rsh",
        "",
        Command,
        "rsync --rsh=\"rm v\" a host:b",
    ),
    row(
        "rsync",
        "--rsync-path",
        "",
        Command,
        "rsync --rsync-path=\"rm v\" a host:b",
    ),
    row(
        "ssh",
        "-o",
        "ProxyCommand",
        Command,
        "ssh -o ProxyCommand=\"rm v\" host",
    ),
    row(
        "ssh",
        "-o",
        "LocalCommand",
        Command,
        "ssh -o PermitLocalCommand=yes -o LocalCommand=\"rm v\" host",
    ),
    row(
        "ssh",
        "-o",
        "KnownHostsCommand",
        Command,
        "ssh -o \"KnownHostsCommand rm v\" host",
    ),
    row("ssh", "-F", "", File, "ssh -F ./cfg host"),
    row(
        "scp",
        "-o",
        "ProxyCommand",
        Command,
        "scp -o \"ProxyCommand rm v\" a host:b",
    ),
    row(
        "scp",
        "-o",
        "KnownHostsCommand",
        Command,
        "scp -oKnownHostsCommand=\"rm v\" a host:b",
    ),
    row("scp", "-F", "", File, "scp -F ./cfg a host:b"),
    row("scp", "-S", "", Command, "scp -S \"rm v\" a host:b"),
    row(
        "sftp",
        "-o",
        "ProxyCommand",
        Command,
        "sftp -o ProxyCommand=\"rm v\" host",
    ),
    row("sftp", "-F", "", File, "sftp -F ./cfg host"),
    row("sftp", "-S", "", Command, "sftp -S \"rm v\" host"),
    row("sftp", "-D", "", Command, "sftp -D \"rm v\" host"),
    row("man", "-P", "", Command, "man -P \"rm v\" ls"),
    row("man", "--pager", "", Command, "man --pager=\"rm v\" ls"),
    row("man", "-H", "", Command, "man -H\"rm v\" ls"),
    row("man", "--html", "", Command, "man --html=\"rm v\" ls"),
    row("less", "+", "", ShellEscape, "less '+!rm v' f"),
    row("more", "+", "", ShellEscape, "more '+!rm v' f"),
    row("awk", "-f", "", File, "awk -f prog.awk data"),
    row("awk", "--file", "", File, "awk --file=prog.awk data"),
    row("awk", "-E", "", File, "awk -E prog.awk data"),
    row("awk", "-i", "", File, "awk -i lib.awk '{print}' data"),
    row("awk", "-l", "", File, "awk -l ext '{print}' data"),
    row(
        "node",
        "-r",
        "",
        File,
        "node -r ./helper -e 'console.log(1)'",
    ),
    row(
        "node",
        "--require",
        "",
        File,
        "node --require=./helper -e 'console.log(1)'",
    ),
    row(
        "node",
        "--import",
        "",
        File,
        "node --import ./helper.mjs -e 'console.log(1)'",
    ),
    row(
        "node",
        "--loader",
        "",
        File,
        "node --loader ./hooks.mjs -e 'console.log(1)'",
    ),
    row(
        "git rebase",
        "--exec",
        "",
        Command,
        "git rebase --exec \"rm v\" HEAD~2",
    ),
    row(
        "git rebase",
        "-x",
        "",
        Command,
        "git rebase -x \"rm v\" main",
    ),
    row(
        "git archive",
        "--exec",
        "",
        Command,
        "git archive --exec=\"rm v\" --remote=h:r HEAD",
    ),
    row(
        "git difftool",
        "-x",
        "",
        Command,
        "git difftool -x \"rm v\"",
    ),
    row(
        "git difftool",
        "--extcmd",
        "",
        Command,
        "git difftool --extcmd=\"rm v\"",
    ),
    row(
        "git grep",
        "--open-files-in-pager",
        "",
        Command,
        "git grep --open-files-in-pager=\"rm v\" x",
    ),
    row("git grep", "-O", "", Command, "git grep -O\"rm v\" x"),
    row(
        "git clone",
        "--upload-pack",
        "",
        Command,
        "git clone --upload-pack=\"rm v\" h:r",
    ),
    row("git clone", "-u", "", Command, "git clone -u \"rm v\" h:r"),
    row(
        "git fetch",
        "--upload-pack",
        "",
        Command,
        "git fetch --upload-pack=\"rm v\" origin",
    ),
    row(
        "git pull",
        "--upload-pack",
        "",
        Command,
        "git pull --upload-pack=\"rm v\" origin",
    ),
    row(
        "git ls-remote",
        "--upload-pack",
        "",
        Command,
        "git ls-remote --upload-pack=\"rm v\" origin",
    ),
    row(
        "git push",
        "--receive-pack",
        "",
        Command,
        "git push --receive-pack=\"rm v\" origin",
    ),
    row(
        "git push",
        "--exec",
        "",
        Command,
        "git push --exec=\"rm v\" origin",
    ),
    row(
        "git filter-branch",
        "--tree-filter",
        "",
        Command,
        "git filter-branch --tree-filter \"rm v\" HEAD",
    ),
    row(
        "git filter-branch",
        "--index-filter",
        "",
        Command,
        "git filter-branch --index-filter \"rm v\" HEAD",
    ),
    row(
        "git filter-branch",
        "--msg-filter",
        "",
        Command,
        "git filter-branch --msg-filter \"rm v\" HEAD",
    ),
    row(
        "git filter-branch",
        "--env-filter",
        "",
        Command,
        "git filter-branch --env-filter \"rm v\" HEAD",
    ),
    row(
        "git filter-branch",
        "--commit-filter",
        "",
        Command,
        "git filter-branch --commit-filter \"rm v\" HEAD",
    ),
    row(
        "git filter-branch",
        "--parent-filter",
        "",
        Command,
        "git filter-branch --parent-filter \"rm v\" HEAD",
    ),
    row(
        "git filter-branch",
        "--tag-name-filter",
        "",
        Command,
        "git filter-branch --tag-name-filter \"rm v\" HEAD",
    ),
    row(
        "git send-email",
        "--to-cmd",
        "",
        Command,
        "git send-email --to-cmd=\"rm v\" p.patch",
    ),
    row(
        "git send-email",
        "--cc-cmd",
        "",
        Command,
        "git send-email --cc-cmd=\"rm v\" p.patch",
    ),
    row(
        "git send-email",
        "--header-cmd",
        "",
        Command,
        "git send-email --header-cmd=\"rm v\" p.patch",
    ),
    row(
        "git send-email",
        "--sendmail-cmd",
        "",
        Command,
        "git send-email --sendmail-cmd=\"rm v\" p.patch",
    ),
    row(
        "git send-email",
        "--smtp-server",
        "",
        Command,
        "git send-email --smtp-server=\"rm v\" p.patch",
    ),
    row(
        "git instaweb",
        "--httpd",
        "",
        Command,
        "git instaweb --httpd=\"rm v\"",
    ),
];

/// Whether any row concerns this program (`git` rows are keyed by subcommand).
pub(crate) fn has_rows(program: &str) -> bool {
    matches!(
        program,
        "tar"
            | "zip"
            | "install"
            | "sort"
            | "wget"
            | "rsync"
            | "ssh"
            | "scp"
            | "sftp"
            | "man"
            | "less"
            | "more"
            | "awk"
            | "gawk"
            | "mawk"
            | "node"
            | "nodejs"
    )
}

/// The rows that match `args` (the words after the program, or after git's subcommand)
/// of `program`, each with its value (`None` when the option is last, without one).
pub(crate) fn find<'a>(
    program: &str,
    args: &'a [Arg],
) -> Vec<(&'static ToolOption, Option<&'a Arg>, String)> {
    let program = match program {
        "gawk" | "mawk" => "awk",
        "nodejs" => "node",
        p => p,
    };
    let mut out = Vec::new();
    let rows = OPTIONS.iter().filter(|r| r.program == program);
    for r in rows {
        let mut k = 0;
        while let Some(a) = args.get(k) {
            let t = a.text.as_str();
            if t == "--" {
                break;
            }
            // (value text, the argument it came from)
            let value: Option<(String, Option<&Arg>)> = if r.option == "+" {
                t.strip_prefix('+').map(|v| (v.to_string(), Some(a)))
            } else if t == r.option {
                Some(match args.get(k + 1) {
                    Some(v) => (v.text.clone(), Some(v)),
                    None => (String::new(), None),
                })
            } else if r.option.starts_with("--") {
                t.strip_prefix(r.option)
                    .and_then(|v| v.strip_prefix('='))
                    .map(|v| (v.to_string(), Some(a)))
            } else if r.option.len() == 2 && t.starts_with('-') && !t.starts_with("--") {
                // A bundle of one-letter options: the option's value is the rest of the
                // bundle after its letter, or the next word.
                let letter = &r.option[1..];
                t[1..].find(letter).map(|p| {
                    let rest = &t[1 + p + 1..];
                    if rest.is_empty() {
                        match args.get(k + 1) {
                            Some(v) => (v.text.clone(), Some(v)),
                            None => (String::new(), None),
                        }
                    } else {
                        (rest.to_string(), Some(a))
                    }
                })
            } else {
                t.strip_prefix(r.option).map(|v| (v.to_string(), Some(a)))
            };
            if let Some((v, from)) = value
                && let Some(v) = keyed(r.key, &v)
            {
                out.push((r, from, v));
            }
            k += 1;
        }
    }
    out
}

/// The value after `key` (`exec=` of `exec=rm v`; `ProxyCommand` of `ProxyCommand=x` or
/// `ProxyCommand x`), or the whole value when there is no key.
fn keyed(key: &str, value: &str) -> Option<String> {
    if key.is_empty() {
        return Some(value.to_string());
    }
    let head = value.get(..key.len())?;
    if !head.eq_ignore_ascii_case(key) {
        return None;
    }
    let rest = &value[key.len()..];
    if key.ends_with('=') {
        return Some(rest.to_string());
    }
    let rest = rest.strip_prefix('=').or_else(|| rest.strip_prefix(' '))?;
    Some(rest.trim_start().to_string())
}

/// Judges the options of `program` that run commands: a literal command is read as
/// shell, anything else is "cannot tell". Returns whether any matched.
pub(super) fn judge(
    an: &mut Analysis<'_>,
    cmd: &Cmd,
    program: &str,
    args: &[Arg],
    frame: &Frame,
) -> bool {
    let found = find(program, args);
    let q = cmd.quoted.as_str();
    for (r, from, value) in &found {
        let dynamic = from.is_some_and(|a| a.dynamic);
        match r.runs {
            Command if !dynamic && !value.trim().is_empty() => {
                let f = frame.nested(q, cmd.line);
                super::analyse(an, value, &f);
            }
            Command => {
                let e = format!(
                    "{} {} runs a command known only at run time",
                    r.program, r.option
                );
                an.opaque(&e, q, cmd.line, frame);
            }
            File => {
                let e = format!(
                    "{} {} reads code or settings from a file the policy cannot read",
                    r.program, r.option
                );
                an.finding(RiskClass::CannotTell, &e, q, cmd.line, frame);
            }
            ShellEscape if dynamic || value.contains(['!', '|']) => {
                let e = format!(
                    "{} runs commands given to it, which may run a shell",
                    r.program
                );
                an.opaque(&e, q, cmd.line, frame);
            }
            ShellEscape => {}
        }
    }
    !found.is_empty()
}

#[cfg(test)]
mod tests;
