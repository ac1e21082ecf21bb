//! The table of known commands: what the command that actually runs does (read-only,
//! writes, deletes — inside or outside the workspace —, network, installs, privileged,
//! changes the system), and the runners whose code is judged in its own right (`find
//! -exec`, `xargs`, `bash -c`, interpreters with `-c`/`-e` or a here-document, `trap`).

use super::super::analysis::{Analysis, Frame};
use super::super::verdict::RiskClass;
use super::commands::{Cmd, base, is_hijack_var, is_system_path, judge_words, skip_options};
use super::runners::{find_cmd, interpreter, shell_runner};
use super::words::Arg;

/// Classifies the command that actually runs (`w` = its words). Returns whether the rule
/// decision for this command gates the block (false for pure runners such as `bash -c`,
/// whose code is judged in its own right).
pub(super) fn classify(an: &mut Analysis<'_>, cmd: &Cmd, w: &[Arg], frame: &Frame) -> bool {
    let q = cmd.quoted.as_str();
    let line = cmd.line;
    let Some(first) = w.first() else { return true };
    let name = base(&first.text);
    let args = &w[1..];
    if !an.functions.is_empty() && an.functions.contains(first.text.as_str()) {
        // A function of this block: its body was judged where it was defined.
        an.read_only = true;
        return true;
    }
    let foreign_path = super::commands::last_slash(&first.text).is_some_and(|k| {
        !matches!(
            &first.text[..k],
            "/bin" | "/usr/bin" | "/usr/local/bin" | "/sbin" | "/usr/sbin"
        )
    });
    if foreign_path {
        an.finding(
            RiskClass::CannotTell,
            "runs a program from a path the policy cannot read",
            q,
            line,
            frame,
        );
        return true;
    }
    let sub = args
        .iter()
        .find(|a| !a.text.starts_with('-'))
        .map(|a| a.text.as_str())
        .unwrap_or("");
    let has = |f: &str| args.iter().any(|a| a.text == f);
    let find = |an: &mut Analysis<'_>, c: RiskClass, e: &str| an.finding(c, e, q, line, frame);
    let hijacked = || {
        args.iter()
            .filter_map(|a| a.text.split_once('=').map(|(n, _)| n))
            .find(|n| is_hijack_var(n))
    };
    if super::options::has_rows(name) {
        super::options::judge(an, cmd, name, args, frame);
    }
    if let Some(var) = assigned_hijack_var(name, args) {
        let expl = format!("sets {var}, which changes what later commands run");
        an.opaque(&expl, q, line, frame);
        return true;
    }
    match name {
        // `hash -p /bin/rm ls`: `ls` now runs rm, for the rest of the kernel's life.
        "hash"
            if args.iter().any(|a| {
                a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains('p')
            }) =>
        {
            an.opaque(
                "hash -p binds a command name to another program (and it stays bound in the kernel)",
                q,
                line,
                frame,
            );
        }
        "export" | "declare" | "typeset" | "readonly" | "local" if hijacked().is_some() => {
            let var = hijacked().unwrap_or_default();
            let expl = format!("sets {var}, which changes what later commands run");
            an.opaque(&expl, q, line, frame);
        }
        // Read-only tools and harmless builtins.
        "ls" | "cat" | "head" | "tail" | "less" | "more" | "grep" | "egrep" | "fgrep" | "rg"
        | "ag" | "wc" | "echo" | "printf" | "pwd" | "whoami" | "id" | "date" | "uname"
        | "which" | "type" | "file" | "stat" | "du" | "df" | "tree" | "uniq" | "cut" | "tr"
        | "diff" | "cmp" | "comm" | "basename" | "dirname" | "realpath" | "readlink"
        | "printenv" | "true" | "false" | "test" | "[" | "sleep" | "seq" | "jq" | "nl" | "od"
        | "hexdump" | "xxd" | "md5sum" | "sha256sum" | "sha1sum" | "column" | "ps" | "top"
        | "free" | "uptime" | "lsblk" | "whereis" | "locale" | "tput" | "clear" | "history"
        | ":" | "export" | "set" | "unset" | "shift" | "read" | "local" | "declare" | "typeset"
        | "readonly" | "exit" | "return" | "break" | "continue" | "wait" | "jobs" | "fg" | "bg"
        | "umask" | "ulimit" | "getopts" | "hash" | "shopt" | "popd" | "dirs" | "let" | "help"
        | "man" | "rev" | "fold" | "fmt" | "paste" | "join" | "expand" | "column-t" | "yes"
        | "env" | "lscpu" | "nproc" | "hostname" | "groups" | "tac" | "strings" | "cal" | "bc"
        | "expr" => {
            an.read_only = true;
        }
        "sort" => {
            if args
                .iter()
                .any(|a| a.text == "-o" || a.text.starts_with("--output"))
            {
                find(
                    an,
                    RiskClass::WritesFiles,
                    "writes the sorted output to a file",
                );
            } else {
                an.read_only = true;
            }
        }
        "cd" | "pushd" => {
            an.read_only = true;
            let t = args
                .iter()
                .find(|a| !a.text.starts_with('-') || a.text == "-");
            an.change_dir(t.map(|a| (a.text.as_str(), a.dynamic, a.tilde)));
        }
        "awk" | "gawk" | "mawk" => {
            // (`-f prog` and the like are in the options table.)
            let n = skip_options(args, &["-v", "-F", "--assign", "--field-separator"]);
            let from_file = super::options::find(name, args)
                .iter()
                .any(|(r, ..)| r.runs == super::options::Runs::File);
            let prog = args[n..].first().filter(|_| !from_file);
            match prog {
                Some(p)
                    if !p.dynamic
                        && !p.text.contains("system")
                        && !p.text.contains('|')
                        && !p.text.contains('>')
                        && !p.text.contains("getline")
                        && !p.text.contains('@') =>
                {
                    an.read_only = true
                }
                None if from_file => {}
                _ => an.opaque(
                    "an awk program that may run commands or write files",
                    q,
                    line,
                    frame,
                ),
            }
        }
        "sed" => {
            let before = an.findings.len();
            super::sed::sed(an, cmd, args, frame);
            if args
                .iter()
                .any(|a| a.text.starts_with("-i") || a.text.starts_with("--in-place"))
            {
                find(an, RiskClass::WritesFiles, "edits files in place");
            } else if an.findings.len() == before {
                an.read_only = true;
            }
        }
        "tee" => {
            let targets: Vec<&Arg> = args.iter().filter(|a| !a.text.starts_with('-')).collect();
            if targets.iter().any(|a| is_system_path(&a.text)) {
                find(an, RiskClass::ChangesSystem, "writes to a system path");
            } else if !targets.is_empty() {
                find(an, RiskClass::WritesFiles, "writes to a file");
            } else {
                an.read_only = true;
            }
        }
        "cp" | "mv" | "install" | "ln" | "rsync" | "scp" | "touch" | "mkdir" | "truncate"
        | "chmod" | "chown" | "chgrp" | "patch" | "tar" | "unzip" | "zip" | "gzip" | "gunzip"
        | "mkfifo" => {
            let paths: Vec<&Arg> = args.iter().filter(|a| !a.text.starts_with('-')).collect();
            let checked: Vec<&Arg> = match name {
                "cp" | "mv" | "install" | "ln" | "rsync" | "scp" => {
                    paths.last().copied().into_iter().collect()
                }
                _ => paths.clone(),
            };
            if matches!(name, "scp")
                || (name == "rsync" && paths.iter().any(|a| a.text.contains(':')))
            {
                find(an, RiskClass::Network, "copies over the network");
            }
            if name == "rsync" && args.iter().any(|a| a.text.starts_with("--delete")) {
                find(an, RiskClass::Deletes, "deletes files at the destination");
            }
            if checked.iter().any(|a| is_system_path(&a.text))
                || (matches!(name, "chown" | "chmod" | "chgrp")
                    && has("-R")
                    && paths.iter().any(|a| a.text == "/" || a.tilde))
            {
                find(
                    an,
                    RiskClass::ChangesSystem,
                    "changes files under a system path",
                );
            } else {
                let expl = match name {
                    "chmod" | "chown" | "chgrp" => "changes permissions or owners",
                    "mv" => "moves or renames files",
                    "mkdir" => "creates directories",
                    _ => "writes files",
                };
                find(an, RiskClass::WritesFiles, expl);
            }
            moved_or_linked(an, cmd, name, args, &paths, frame);
        }
        "dd" => {
            let of = args.iter().find(|a| a.text.starts_with("of="));
            match of {
                Some(a)
                    if a.text.starts_with("of=/dev/")
                        && !matches!(a.text.as_str(), "of=/dev/null" | "of=/dev/stdout") =>
                {
                    find(an, RiskClass::ChangesSystem, "writes a raw device")
                }
                Some(_) => find(an, RiskClass::WritesFiles, "writes a file"),
                None => an.read_only = true,
            }
        }
        "rm" | "rmdir" | "unlink" | "shred" | "srm" | "trash" | "trash-put" => {
            let recursive = name == "rm"
                && args.iter().any(|a| {
                    a.text == "--recursive"
                        || (a.text.starts_with('-')
                            && !a.text.starts_with("--")
                            && (a.text.contains('r') || a.text.contains('R')))
                });
            let mut after_dd = false;
            let targets: Vec<&Arg> = args
                .iter()
                .filter(|a| {
                    if after_dd {
                        return true;
                    }
                    if a.text == "--" {
                        after_dd = true;
                        return false;
                    }
                    !a.text.starts_with('-') || a.text == "-"
                })
                .collect();
            let what = if recursive {
                "deletes a directory tree"
            } else if name == "rmdir" {
                "deletes a directory"
            } else {
                "deletes files"
            };
            deletes(an, cmd, &targets, what, frame);
        }
        "find" => {
            return find_cmd(an, cmd, args, frame);
        }
        "xargs" => {
            let n = skip_options(
                args,
                &[
                    "-I",
                    "-L",
                    "-n",
                    "-P",
                    "-s",
                    "-d",
                    "-E",
                    "-a",
                    "--arg-file",
                    "--delimiter",
                    "--max-args",
                    "--max-procs",
                    "--replace",
                ],
            );
            let mut inner: Vec<Arg> = if args.len() > n {
                args[n..].to_vec()
            } else {
                vec![Arg::literal("echo")]
            };
            // The arguments xargs adds come from its input: known only at run time.
            inner.push(Arg {
                text: "{input}".to_string(),
                dynamic: true,
                tilde: false,
            });
            judge_words(an, inner, q, line, frame);
            return false;
        }
        "watch" => {
            let n = skip_options(args, &["-n", "--interval", "-d", "--differences"]);
            let inner: Vec<&str> = args[n..].iter().map(|a| a.text.as_str()).collect();
            if args[n..].iter().any(|a| a.dynamic) || inner.is_empty() {
                an.opaque(
                    "watch runs a command known only at run time",
                    q,
                    line,
                    frame,
                );
                return true;
            }
            let f = frame.nested(q, line);
            super::analyse(an, &inner.join(" "), &f);
            return false;
        }
        "eval" => {
            an.opaque("eval runs text built at run time", q, line, frame);
        }
        "source" | "." => {
            an.opaque("runs another file inside this shell", q, line, frame);
        }
        "alias" | "unalias" => {
            if args.is_empty() {
                an.read_only = true;
            } else {
                an.opaque(
                    "defines an alias, which changes what later commands run",
                    q,
                    line,
                    frame,
                );
            }
        }
        "trap" => match args.first() {
            Some(a) if !a.dynamic && a.text != "-" && args.len() > 1 => {
                let f = frame.nested(q, line);
                super::analyse(an, &a.text.clone(), &f);
                return false;
            }
            Some(a) if a.dynamic => an.opaque(
                "a trap whose code is known only at run time",
                q,
                line,
                frame,
            ),
            _ => an.read_only = true,
        },
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "fish" => {
            return shell_runner(an, cmd, args, frame);
        }
        "python" | "python3" | "python2" | "pypy3" | "node" | "nodejs" | "perl" | "ruby"
        | "Rscript" | "R" => {
            return interpreter(an, cmd, name, args, frame);
        }
        "su" => {
            find(
                an,
                RiskClass::Privileged,
                "runs a command as another user (root)",
            );
            let c = args
                .iter()
                .position(|a| a.text == "-c" || a.text == "--command");
            match c.and_then(|i| args.get(i + 1)) {
                Some(a) if !a.dynamic => {
                    let f = frame.nested(q, line);
                    super::analyse(an, &a.text.clone(), &f);
                }
                Some(_) => an.opaque(
                    "su -c with a command known only at run time",
                    q,
                    line,
                    frame,
                ),
                None => an.opaque("opens a root shell", q, line, frame),
            }
        }
        "git" => super::git::git(an, cmd, args, frame),
        "curl" | "wget" | "ssh" | "sftp" | "ftp" | "nc" | "ncat" | "netcat" | "telnet"
        | "socat" | "ping" | "dig" | "nslookup" | "host" | "http" | "https" | "aria2c" | "mosh" => {
            find(an, RiskClass::Network, "opens a network connection");
            if name == "wget" && !args.iter().any(|a| a.text == "-O-" || a.text == "-qO-")
                || (name == "curl"
                    && args.iter().any(|a| {
                        matches!(a.text.as_str(), "-o" | "-O" | "--output" | "--remote-name")
                            || a.text.starts_with("-o")
                    }))
            {
                find(an, RiskClass::WritesFiles, "saves a download to a file");
            }
        }
        "pip" | "pip3" | "pipx" | "npm" | "pnpm" | "yarn" | "gem" | "conda" | "mamba" | "brew"
        | "apt" | "apt-get" | "dnf" | "yum" | "pacman" | "zypper" | "apk" | "snap" | "flatpak"
        | "port" | "cargo" | "go" | "uv" | "poetry" | "rustup" | "npx" | "bunx" => {
            package_manager(an, cmd, name, sub, args, frame);
        }
        "sudoedit" => find(an, RiskClass::Privileged, "edits a file as root"),
        "systemctl" | "service" | "launchctl" => {
            if matches!(
                sub,
                "status"
                    | "list-units"
                    | "list-unit-files"
                    | "is-active"
                    | "is-enabled"
                    | "show"
                    | "cat"
                    | "list"
            ) {
                an.read_only = true;
            } else {
                find(an, RiskClass::ChangesSystem, "controls system services");
            }
        }
        "crontab" => {
            if has("-l") {
                an.read_only = true;
            } else {
                find(an, RiskClass::ChangesSystem, "changes scheduled jobs");
            }
        }
        "mount"
        | "umount"
        | "fdisk"
        | "parted"
        | "sfdisk"
        | "gdisk"
        | "wipefs"
        | "mkswap"
        | "swapon"
        | "swapoff"
        | "iptables"
        | "ip6tables"
        | "nft"
        | "ufw"
        | "firewall-cmd"
        | "modprobe"
        | "insmod"
        | "rmmod"
        | "reboot"
        | "shutdown"
        | "halt"
        | "poweroff"
        | "useradd"
        | "userdel"
        | "usermod"
        | "groupadd"
        | "groupdel"
        | "passwd"
        | "chpasswd"
        | "visudo"
        | "hostnamectl"
        | "timedatectl"
        | "update-alternatives"
        | "ldconfig"
        | "chroot"
        | "sysctl"
        | "kill"
        | "pkill"
        | "killall"
        | "setenforce"
        | "chattr"
        | "losetup"
        | "cryptsetup"
        | "dscl"
        | "diskutil"
        | "csrutil"
        | "nvram"
        | "defaults" => {
            let e = if matches!(name, "kill" | "pkill" | "killall") {
                "stops processes"
            } else {
                "changes the system configuration"
            };
            find(an, RiskClass::ChangesSystem, e);
        }
        n if n.starts_with("mkfs") => find(an, RiskClass::ChangesSystem, "formats a file system"),
        _ => {
            find(
                an,
                RiskClass::CannotTell,
                "runs a program the policy does not know",
            );
            an.unknown_program = true;
        }
    }
    true
}

/// A variable that changes what runs (`PATH` …) set by `printf -v`, `read` or `getopts`.
fn assigned_hijack_var<'a>(name: &str, args: &'a [Arg]) -> Option<&'a str> {
    let names: Vec<&Arg> = match name {
        "printf" => args
            .iter()
            .position(|a| a.text == "-v")
            .and_then(|k| args.get(k + 1))
            .into_iter()
            .collect(),
        "read" => {
            let n = skip_options(args, &["-a", "-d", "-i", "-n", "-N", "-p", "-t", "-u"]);
            let array = args.iter().position(|a| a.text == "-a");
            args[n..]
                .iter()
                .chain(array.and_then(|k| args.get(k + 1)))
                .collect()
        }
        "getopts" => args.get(1).into_iter().collect(),
        _ => return None,
    };
    names
        .into_iter()
        .map(|a| a.text.as_str())
        .find(|n| is_hijack_var(n))
}

fn deletes(an: &mut Analysis<'_>, cmd: &Cmd, targets: &[&Arg], what: &str, frame: &Frame) {
    deletes_under(an, cmd, targets, what, frame, false)
}

pub(super) fn deletes_under(
    an: &mut Analysis<'_>,
    cmd: &Cmd,
    targets: &[&Arg],
    what: &str,
    frame: &Frame,
    root_ok: bool,
) {
    let outside = targets
        .iter()
        .find(|a| !an.within(&a.text, a.dynamic, a.tilde, root_ok));
    match outside {
        Some(a) => {
            let e = if a.dynamic && !a.tilde {
                format!("{what} at a path known only at run time (may be outside the workspace)")
            } else {
                format!("{what} outside the workspace ({})", a.text)
            };
            an.finding(
                RiskClass::DeletesOutsideWorkspace,
                &e,
                &cmd.quoted,
                cmd.line,
                frame,
            );
        }
        None => an.finding(RiskClass::Deletes, what, &cmd.quoted, cmd.line, frame),
    }
}

/// Package managers whose installs run code of the packages (lifecycle scripts, setup
/// files, build scripts) — of the workspace's own package too.
const RUNS_PACKAGE_SCRIPTS: &[&str] = &[
    "npm", "pnpm", "yarn", "pip", "pip3", "pipx", "uv", "poetry", "gem", "cargo",
];

pub(super) fn package_manager(
    an: &mut Analysis<'_>,
    cmd: &Cmd,
    name: &str,
    sub: &str,
    args: &[Arg],
    frame: &Frame,
) {
    let read_only_subs = [
        "list",
        "show",
        "freeze",
        "search",
        "info",
        "help",
        "--version",
        "-V",
        "version",
        "outdated",
        "check",
        "ls",
        "why",
        "view",
        "doctor",
        "config",
        "env",
        "policy",
        "madison",
        "depends",
        "query",
        "-Q",
        "-Ss",
        "-Si",
        "metadata",
        "tree",
    ];
    let installs = [
        "install",
        "uninstall",
        "i",
        "add",
        "remove",
        "rm",
        "ci",
        "update",
        "upgrade",
        "dist-upgrade",
        "full-upgrade",
        "purge",
        "autoremove",
        "download",
        "get",
        "-S",
        "-R",
        "-Syu",
        "-U",
        "link",
        "unlink",
        "tap",
        "reinstall",
        "sync",
        "x",
        "dlx",
        "exec",
    ];
    let _ = args;
    if matches!(name, "npx" | "bunx") {
        an.finding(
            RiskClass::InstallsSoftware,
            "downloads and runs a package",
            &cmd.quoted,
            cmd.line,
            frame,
        );
        an.finding(
            RiskClass::CannotTell,
            "runs a package's code, which the policy cannot read",
            &cmd.quoted,
            cmd.line,
            frame,
        );
        return;
    }
    if read_only_subs.contains(&sub) {
        an.read_only = true;
    } else if installs.contains(&sub) {
        an.finding(
            RiskClass::InstallsSoftware,
            "installs or removes software",
            &cmd.quoted,
            cmd.line,
            frame,
        );
        if RUNS_PACKAGE_SCRIPTS.contains(&name) {
            an.finding(
                RiskClass::CannotTell,
                "runs the packages' own install scripts (npm's preinstall, a setup.py, a build script), which the policy cannot read",
                &cmd.quoted,
                cmd.line,
                frame,
            );
        }
    } else {
        an.finding(
            RiskClass::CannotTell,
            "runs a package manager task the policy cannot read",
            &cmd.quoted,
            cmd.line,
            frame,
        );
    }
}

/// `mv ~/x ./trash` deletes `~/x` where it was: a source outside the workspace is a
/// delete outside it. `ln -s ~ hm` makes `hm/…` a path outside the workspace for the
/// rest of the block.
fn moved_or_linked(
    an: &mut Analysis<'_>,
    cmd: &Cmd,
    name: &str,
    args: &[Arg],
    paths: &[&Arg],
    frame: &Frame,
) {
    match name {
        "mv" if paths.len() >= 2
            && !args
                .iter()
                .any(|a| a.text == "-t" || a.text.starts_with("--target")) =>
        {
            let sources = &paths[..paths.len() - 1];
            if sources
                .iter()
                .any(|a| !an.inside_workspace(&a.text, a.dynamic, a.tilde))
            {
                deletes(
                    an,
                    cmd,
                    sources,
                    "moves a path away (deleting it where it was)",
                    frame,
                );
            }
        }
        "ln" => {
            let symbolic = args.iter().any(|a| {
                a.text == "--symbolic"
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('s'))
            });
            let Some(target) = paths.first() else { return };
            if !symbolic || an.within(&target.text, target.dynamic, target.tilde, true) {
                return;
            }
            let link = match paths.get(1) {
                Some(l) => l.text.clone(),
                None => base(target.text.trim_end_matches('/')).to_string(),
            };
            let link = link
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_string();
            if !link.is_empty() {
                an.links.push(link);
            }
        }
        _ => {}
    }
}
