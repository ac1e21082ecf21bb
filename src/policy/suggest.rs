//! Proposing "always allow" rules for a block: the command prefixes that, added as allow
//! rules, would let it run under `--approval rules`. One prefix per distinct command not
//! yet allowed: the program name (`ls -la /x` → `ls`), with the subcommand for tools whose
//! first argument is one (`git status -s` → `git status`, `git -C sub push` → `git -C sub
//! push` and `git push`), and a privileged wrapper keeps its wrapper (`sudo apt install x`
//! → `sudo apt install` and `apt install`, since the rules want both).
//!
//! No prefix is proposed, with the reason, when rules cannot allow the block: it is not
//! shell, it holds something the policy cannot see through, a deny or ask rule matches, it
//! writes outside the workspace or writes a file through a redirection, or a command is
//! one whose rule would allow anything (`python`, `bash script.sh`, `ssh`, a program from
//! a path inside the project) or far more than the block shows: programs whose effect
//! depends wholly on their arguments and that can write, delete or run commands (`find`,
//! `sed`, `awk`, `tar`, editors, pagers, `make`, database shells, `cp`, `chmod`, `kill`,
//! `curl`, …) and subcommands such as `git config`, `docker run`, `npm run`, `pip
//! install`. No prefix starts with `-`. Every proposal is checked by judging the block
//! again with the prefixes added.

use super::{Decision, Language, Policy, RuleSource, Suggestion};

/// Wrappers that raise privileges: an allow rule must name them with what they run.
const PRIVILEGED: &[&str] = &["sudo", "doas", "pkexec", "runuser"];

/// Programs whose rule would allow any code they are handed (a script file, a module, a
/// remote command): allowing the program name is allowing everything.
const RUNS_ANYTHING: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "Rscript",
    "R",
    "php",
    "lua",
    "bash",
    "sh",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "tclsh",
    "pwsh",
    "osascript",
    "ssh",
    "su",
];

/// Tools whose first argument is a subcommand.
const SUBCOMMAND_TOOLS: &[&str] = &[
    "git",
    "cargo",
    "rustup",
    "npm",
    "npx",
    "pnpm",
    "yarn",
    "pip",
    "pip3",
    "pipx",
    "uv",
    "poetry",
    "conda",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "apt",
    "apt-get",
    "dnf",
    "yum",
    "apk",
    "pacman",
    "zypper",
    "snap",
    "flatpak",
    "brew",
    "port",
    "go",
    "systemctl",
    "journalctl",
    "launchctl",
    "gh",
    "glab",
    "terraform",
    "make",
    "gem",
    "bundle",
    "composer",
    "dotnet",
    "mvn",
    "gradle",
    "hg",
    "svn",
    "ip",
    "nmcli",
    "service",
];

/// Global options that take a value before the subcommand (`git -C dir status`).
fn takes_value(tool: &str, option: &str) -> bool {
    let list: &[&str] = match tool {
        "git" => &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
        "docker" | "podman" => &["-H", "--host", "--config", "--context", "-l", "--log-level"],
        "kubectl" | "helm" => &[
            "-n",
            "--namespace",
            "--context",
            "--kubeconfig",
            "-s",
            "--server",
            "--cluster",
            "--user",
        ],
        "cargo" => &["-C", "--config", "-Z", "--color"],
        "npm" | "pnpm" => &["-C", "--prefix", "--dir", "--filter"],
        "yarn" => &["--cwd"],
        "uv" => &["--directory", "--project", "--python"],
        "go" => &["-C"],
        "systemctl" | "journalctl" => &["-H", "--host", "-M", "--machine", "-t", "--type"],
        "gh" | "glab" => &["-R", "--repo"],
        "apt" | "apt-get" => &["-o", "-c", "-t"],
        "make" => &["-C", "-f", "--file", "--directory"],
        "hg" => &["-R", "--repository", "--cwd"],
        _ => &[],
    };
    list.contains(&option)
}

const SYSTEM_DIRS: &[&str] = &["/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin"];

impl Policy {
    /// Adds one rule to the policy in force (after it was saved to a config file, so that
    /// the next block meets it at once). Invalid prefixes are refused as `Rules::add` does.
    pub fn add_rule(
        &mut self,
        decision: Decision,
        prefix: &str,
        source: RuleSource,
    ) -> Result<(), super::RuleError> {
        self.rules.add(decision, prefix, source)
    }

    /// The prefixes that, added as allow rules, would let this block run under
    /// `--approval rules`, or why no rule can.
    pub fn suggest_allow(&self, language: &str, code: &str) -> Suggestion {
        if let Some(tool) = crate::protocol::ToolRef::parse(language) {
            if let Some(f) = super::hidden::findings(code).first() {
                return Suggestion::Impossible(hides(f));
            }
            return self.suggest_allow_tool(&tool);
        }
        let lang = Language::from_tag(language);
        if lang != Language::Shell {
            let name = match lang {
                Language::Python => "Python blocks",
                Language::JavaScript => "JavaScript blocks",
                Language::Ruby => "Ruby blocks",
                Language::Perl => "Perl blocks",
                Language::R => "R blocks",
                _ => "Blocks in this language",
            };
            return Suggestion::Impossible(format!(
                "{name} are never allowed by command rules; only shell commands are"
            ));
        }
        let mut an = self.analyse(lang, code, true);
        let views = std::mem::take(&mut an.views);
        let gating = an.gating.clone();
        let (opaque_at, unallowable_at, redirect_at, hidden_at) = (
            an.opaque_at,
            an.unallowable_at,
            an.redirect_write_at,
            an.hidden_at,
        );
        let verdict = self.finish(an, lang);
        let quote = |i: Option<usize>| {
            i.and_then(|i| verdict.findings.get(i))
                .map(|f| format!(" ({})", f.summary()))
                .unwrap_or_default()
        };
        match (verdict.decision, &verdict.rule) {
            (Decision::Allow, _) => return Suggestion::AlreadyAllowed,
            (Decision::Deny, _) => {
                return Suggestion::Impossible(format!(
                    "a deny rule matches: {}",
                    verdict.decision_reason()
                ));
            }
            (Decision::Ask, Some(_)) => {
                return Suggestion::Impossible(format!(
                    "{}, and an allow rule cannot override an ask rule",
                    verdict.decision_reason()
                ));
            }
            (Decision::Ask, None) => {}
        }
        if let Some(f) = hidden_at.and_then(|i| verdict.findings.get(i)) {
            return Suggestion::Impossible(hides(f));
        }
        if opaque_at.is_some() {
            return Suggestion::Impossible(format!(
                "the block holds something the policy cannot see through{}",
                quote(opaque_at)
            ));
        }
        if unallowable_at.is_some() {
            return Suggestion::Impossible(format!(
                "it writes outside the workspace, which command rules never allow{}",
                quote(unallowable_at)
            ));
        }
        if redirect_at.is_some() {
            return Suggestion::Impossible(format!(
                "it writes a file through a redirection, which an allow rule for the program \
                 alone does not cover{}",
                quote(redirect_at)
            ));
        }
        let mut prefixes: Vec<String> = Vec::new();
        for (i, cmd) in verdict.commands.iter().enumerate() {
            let allowed = cmd
                .rule
                .as_ref()
                .is_some_and(|r| r.decision == Decision::Allow);
            if allowed || !gating.get(i).copied().unwrap_or(true) {
                continue;
            }
            let Some(cmd_views) = views.get(i) else {
                continue;
            };
            let last = cmd_views.len().saturating_sub(1);
            for (k, (words, gate)) in cmd_views.iter().enumerate() {
                if !(*gate || k == last) {
                    continue;
                }
                if self
                    .rules
                    .matching(words)
                    .is_some_and(|r| r.decision == Decision::Allow)
                {
                    continue;
                }
                let prefix = match prefix_for(cmd_views, k) {
                    Ok(p) => p,
                    Err(why) => {
                        return Suggestion::Impossible(format!("line {}: {why}", cmd.line));
                    }
                };
                let mut check = super::Rules::new();
                if let Err(e) = check.add(Decision::Allow, &prefix, RuleSource::User) {
                    return Suggestion::Impossible(format!(
                        "line {}: `{}` cannot be allowed by a rule: {e}",
                        cmd.line,
                        cmd.words.join(" ")
                    ));
                }
                if !prefixes.contains(&prefix) {
                    prefixes.push(prefix);
                }
            }
        }
        // Proof: the block is allowed once these rules exist.
        let mut rules = self.rules.clone();
        for p in &prefixes {
            let _ = rules.add(Decision::Allow, p, RuleSource::User);
        }
        let after = Policy::new(rules, self.root.clone()).judge(language, code);
        if after.decision == Decision::Allow && !prefixes.is_empty() {
            Suggestion::Prefixes(prefixes)
        } else {
            Suggestion::Impossible(format!(
                "no allow rule covers every command in it ({})",
                after.summary()
            ))
        }
    }
}

/// The prefix for one view of a command; `views[k]` is the view, later views are the
/// commands it runs.
/// Why no rule can allow a block that holds characters that hide or reorder text.
fn hides(finding: &super::Finding) -> String {
    format!(
        "it holds characters that hide or reorder text, which no rule can allow ({})",
        finding.summary()
    )
}

fn prefix_for(views: &[(Vec<String>, bool)], k: usize) -> Result<String, String> {
    let words = &views[k].0;
    let Some(first) = words.first() else {
        return Err("an empty command".to_string());
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    if PRIVILEGED.contains(&name) {
        // Keep the wrapper and its options, then the prefix of what it runs.
        let inner = views[k + 1..]
            .iter()
            .rev()
            .map(|(v, _)| v)
            .find(|v| !v.is_empty() && v.len() < words.len() && words.ends_with(v));
        return Ok(match inner {
            Some(inner) => {
                let head = &words[..words.len() - inner.len()];
                let mut out: Vec<String> = head.to_vec();
                out[0] = program(&head[0])?.to_string();
                out.push(tool_prefix(inner)?);
                out.join(" ")
            }
            None => {
                let mut out = words.clone();
                out[0] = program(first)?.to_string();
                out.join(" ")
            }
        });
    }
    tool_prefix(words)
}

/// The program name as a rule names it: a path in a system directory is its base name;
/// any other path is refused (it is a file that can change).
fn program(word: &str) -> Result<&str, String> {
    match word.rsplit_once('/') {
        None => Ok(word),
        Some((dir, base)) if SYSTEM_DIRS.contains(&dir) => Ok(base),
        Some(_) => Err(format!(
            "{} runs a program from a path whose content can change at any time; approve it \
             each time instead",
            crate::safe_text::visible_line(word)
        )),
    }
}

/// `git status -s` → `git status`; `ls -la` → `ls`.
fn tool_prefix(words: &[String]) -> Result<String, String> {
    let Some(first) = words.first() else {
        return Err("an empty command".to_string());
    };
    let name = program(first)?;
    if RUNS_ANYTHING.contains(&name) {
        return Err(format!(
            "an allow rule for \"{name}\" would let anything it is given run without a \
             question; approve this block instead"
        ));
    }
    if let Some(why) = too_broad(name, words) {
        return Err(why);
    }
    if name.starts_with('-') {
        return Err(format!(
            "\"{name}\" is an option, not a program; approve this block instead"
        ));
    }
    if !SUBCOMMAND_TOOLS.contains(&name) {
        return Ok(name.to_string());
    }
    let mut j = 1;
    while let Some(t) = words.get(j) {
        if t == "--" {
            break;
        }
        if t.starts_with('-') || (name == "cargo" && t.starts_with('+')) {
            j += if takes_value(name, t) { 2 } else { 1 };
            continue;
        }
        break;
    }
    let end = (j + 1).min(words.len());
    let mut out = vec![name.to_string()];
    out.extend(words[1..end].iter().filter(|w| *w != "--").cloned());
    if let Some(sub) = words.get(j)
        && let Some(why) = broad_subcommand(name, &words[1..j], sub)
    {
        return Err(why);
    }
    Ok(out.join(" "))
}

/// Programs whose effect depends wholly on their arguments and which can write, delete or
/// run commands: a rule for the name alone would allow all of that. The reason, or `None`.
fn too_broad(name: &str, _words: &[String]) -> Option<String> {
    let what = match name {
        "find" => "can delete and run commands (-delete, -exec)",
        "sed" => "can edit files in place and run commands (-i, w, e)",
        "awk" | "gawk" | "mawk" | "nawk" => {
            "programs can run commands and write files (system, print >)"
        }
        "xargs" | "env" | "nohup" | "timeout" | "nice" | "time" | "watch" | "exec" | "command"
        | "builtin" | "stdbuf" | "setsid" | "ionice" | "chrt" | "taskset" | "strace" | "ltrace"
        | "flock" | "script" | "parallel" => "runs whatever command it is given",
        "tar" => "can overwrite any file and run commands (--to-command, --checkpoint-action)",
        "zip" | "unzip" => "can overwrite files and run commands (unzip -o, zip -TT)",
        "rsync" | "scp" | "sftp" => {
            "copies files anywhere, can delete them (--delete) and run commands (-e)"
        }
        "vim" | "vi" | "nvim" | "view" | "ex" | "emacs" | "nano" | "ed" => {
            "can write any file and run commands"
        }
        "less" | "more" | "most" | "man" => "can run commands (!) and open an editor (v)",
        "make" | "cmake" | "ninja" | "meson" | "just" | "rake" | "gradle" | "mvn" | "ant" => {
            "runs whatever the build files say, and they can change at any time"
        }
        "sqlite3" | "psql" | "mysql" | "mariadb" | "mongo" | "mongosh" | "redis-cli" => {
            "can change or delete any data and run commands (.system, \\!)"
        }
        "cp" | "mv" | "dd" | "install" | "ln" | "truncate" | "shred" => "can overwrite any file",
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => "changes the permissions of any file",
        "kill" | "pkill" | "killall" => "can stop any process",
        "curl" | "wget" | "aria2c" | "nc" | "ncat" | "netcat" | "socat" | "telnet" | "ftp" => {
            "can download to any file and send any data anywhere"
        }
        "iptables" | "ip6tables" | "nft" | "ufw" | "mount" | "umount" | "crontab" | "sysctl"
        | "fdisk" | "parted" => "changes the system in whatever way its arguments say",
        "npx" | "bunx" | "pnpx" => "downloads and runs any package",
        "trap" | "eval" | "source" | "." | "alias" | "hash" => "changes or runs other commands",
        n if n.starts_with("mkfs") => "formats any device",
        _ => return None,
    };
    Some(format!(
        "{name} {what}: a rule for it would allow those too; approve this block instead"
    ))
}

/// Subcommands whose rule would allow far more than the block shown (`git config`,
/// `docker run`, `npm run`, `pip install`), or global options that do (`git -c`).
fn broad_subcommand(tool: &str, options: &[String], sub: &str) -> Option<String> {
    let what = match (tool, sub) {
        ("git", _)
            if options
                .iter()
                .any(|o| o == "-c" || o.starts_with("--config-env")) =>
        {
            "git -c can set options that run commands (core.pager, alias.*)"
        }
        ("git", "config") => "git config can set options that run commands (core.pager, alias.*)",
        ("docker" | "podman" | "nerdctl", "run" | "exec" | "compose" | "build" | "cp") => {
            "runs any command in a container, with whatever it mounts"
        }
        ("kubectl", "run" | "exec" | "apply" | "delete" | "debug" | "cp" | "create" | "patch") => {
            "runs or changes anything in the cluster"
        }
        ("npm" | "yarn" | "pnpm" | "bun", "run" | "exec" | "x" | "dlx" | "test" | "start") => {
            "runs whatever the package's scripts say, and they can change"
        }
        ("npm" | "yarn" | "pnpm" | "bun", "install" | "i" | "add" | "ci") => {
            "installing packages runs their install scripts"
        }
        (
            "pip" | "pip3" | "pipx" | "uv" | "poetry" | "gem" | "conda" | "mamba",
            "install" | "add" | "run" | "pip",
        ) => "installing packages runs their build and install code",
        ("cargo", "run" | "install" | "build" | "test" | "bench") => {
            "runs build scripts and programs of the project, which can change"
        }
        ("go", "run" | "generate" | "install") => "runs programs of the project, which can change",
        _ => return None,
    };
    Some(format!(
        "{tool} {sub}: {what}, so a rule for it would allow those too; approve this block \
         instead"
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::policy::Rules;

    fn policy(allow: &[&str], deny: &[&str]) -> Policy {
        let mut r = Rules::new();
        for a in allow {
            r.add(Decision::Allow, a, RuleSource::User).unwrap();
        }
        for d in deny {
            r.add(Decision::Deny, d, RuleSource::User).unwrap();
        }
        Policy::new(r, "/home/ada/proj")
    }

    fn prefixes(p: &Policy, code: &str) -> Vec<String> {
        match p.suggest_allow("bash", code) {
            Suggestion::Prefixes(v) => v,
            other => panic!("{code:?}: {other:?}"),
        }
    }

    #[test]
    fn program_names_and_subcommands() {
        let p = policy(&[], &[]);
        assert_eq!(prefixes(&p, "git status -s"), ["git status"]);
        assert_eq!(prefixes(&p, "ls -la /x"), ["ls"]);
        assert_eq!(
            prefixes(&p, "ls && git log --oneline; ls"),
            ["ls", "git log"]
        );
        assert_eq!(
            prefixes(&p, "/usr/bin/cargo +nightly fmt"),
            ["cargo +nightly fmt"]
        );
        assert_eq!(
            prefixes(&p, "git -C sub push"),
            ["git -C sub push", "git push"]
        );
        assert_eq!(
            prefixes(&p, "sudo apt install x"),
            ["sudo apt install", "apt install"]
        );
        assert_eq!(
            prefixes(&p, "nice -n 5 git -C b log"),
            ["git -C b log", "git log"]
        );
        assert_eq!(prefixes(&p, "cat f | grep x"), ["cat", "grep"]);
        assert_eq!(prefixes(&p, "bash -c 'ls'"), ["ls"]);
    }

    #[test]
    fn rules_already_in_force_are_not_proposed_again() {
        let mut p = policy(&[], &[]);
        assert_eq!(prefixes(&p, "ls -l"), ["ls"]);
        p.add_rule(Decision::Allow, "ls", RuleSource::Project)
            .unwrap();
        assert_eq!(p.judge("bash", "ls -l").decision, Decision::Allow);
        assert!(
            p.add_rule(Decision::Allow, "ls;", RuleSource::User)
                .is_err()
        );
        let p = policy(&["ls"], &[]);
        assert_eq!(prefixes(&p, "ls; pwd"), ["pwd"]);
        assert_eq!(p.suggest_allow("sh", "ls -l"), Suggestion::AlreadyAllowed);
    }

    #[test]
    fn blocks_rules_cannot_allow_say_why() {
        let p = policy(&[], &["rm"]);
        let why = |lang: &str, code: &str| match p.suggest_allow(lang, code) {
            Suggestion::Impossible(why) => why,
            other => panic!("{code:?}: {other:?}"),
        };
        assert!(
            why("python", "print(1)").starts_with("Python blocks are never allowed"),
            "{}",
            why("python", "print(1)")
        );
        let w = why("bash", "ls\neval \"$X\"");
        assert!(
            w.contains("cannot see through") && w.contains("(line 2)"),
            "{w}"
        );
        let w = why("bash", "rm -rf build");
        assert!(
            w.contains("a deny rule matches") && w.contains("\"rm\""),
            "{w}"
        );
        let w = why("bash", "echo x > ~/.bashrc");
        assert!(w.contains("outside the workspace"), "{w}");
        let w = why("bash", "python3 script.py");
        assert!(w.contains("\"python3\""), "{w}");
        let w = why("bash", "./build.sh");
        assert!(w.contains("./build.sh"), "{w}");
        let w = why("bash", "[ -f x ] && ls");
        assert!(w.contains("cannot be allowed by a rule"), "{w}");
        let w = why("bash", "ls > f4");
        assert!(w.contains("redirection") && w.contains("f4"), "{w}");
        let mut r = Rules::new();
        r.add(Decision::Ask, "git commit", RuleSource::Project)
            .unwrap();
        let w = match Policy::new(r, "/w").suggest_allow("bash", "git commit -m x") {
            Suggestion::Impossible(w) => w,
            other => panic!("{other:?}"),
        };
        assert!(w.contains("cannot override an ask rule"), "{w}");
    }

    #[test]
    fn programs_that_can_do_anything_with_their_arguments_are_not_proposed() {
        let p = policy(&[], &[]);
        let cases = [
            ("find . -name x", "find can delete and run commands"),
            ("sed -n 1p f", "sed can edit"),
            ("awk '{print $1}' f", "awk programs can run"),
            ("tar tf x.tar", "tar can overwrite"),
            ("vim f", "vim can write any file"),
            ("less f", "less can run commands"),
            ("make build", "make runs whatever the build files say"),
            ("sqlite3 db .tables", "sqlite3 can change"),
            ("cp a b", "cp can overwrite"),
            ("chmod +x a", "chmod changes the permissions"),
            ("kill 12", "kill can stop any process"),
            ("curl https://example.com", "curl can download"),
            ("git config user.name x", "git config can set options"),
            ("git -c color.ui=never log", "git -c can set options"),
            ("docker run alpine ls", "runs any command in a container"),
            ("npm run build", "package's scripts"),
            ("pip install x", "installing packages"),
            ("npx cowsay hi", "npx downloads and runs any package"),
        ];
        for (code, want) in cases {
            match p.suggest_allow("bash", code) {
                Suggestion::Impossible(w) => assert!(w.contains(want), "{code:?}: {w}"),
                other => panic!("{code:?}: {other:?}"),
            }
        }
        // Narrow tools are still proposed, and never as an option.
        assert_eq!(prefixes(&p, "git log -3"), ["git log"]);
        assert_eq!(prefixes(&p, "wc -l f"), ["wc"]);
        for code in [
            "ls -la",
            "git -C sub status",
            "sudo -n apt list",
            "cat f | sort -u",
        ] {
            for pre in prefixes(&p, code) {
                assert!(!pre.starts_with('-'), "{code:?}: {pre:?}");
            }
        }
    }
}
