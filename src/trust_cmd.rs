//! `oi-tui trust`: shows the project file's rules (`.oi-tui.toml` in the working
//! directory), says what each list does, and trusts exactly this content once the person
//! says yes (on a terminal) or gave `--yes`. Without a terminal and without `--yes` it
//! refuses. `--revoke` forgets the trust. Everything from the file is printed through
//! `safe_text::visible`.

use std::io::{BufRead, IsTerminal, Write};

use clap::Args;

use crate::project_rules::{self, ProjectFile, TrustState};
use crate::safe_text::visible;

/// `oi-tui trust`'s arguments.
#[derive(Debug, Args, Default)]
pub struct TrustArgs {
    /// Trust the rules without asking.
    #[arg(long, short = 'y', conflicts_with = "revoke")]
    pub yes: bool,
    /// Forget the trust in this directory's project file: its rules stop applying.
    #[arg(long)]
    pub revoke: bool,
    /// Show the project's AGENTS.md, held back because blocks changed it, and let it reach
    /// the model's prompt again.
    #[arg(long, conflicts_with = "revoke")]
    pub agents_md: bool,
}

/// Runs `oi-tui trust`; the exit status is 0 when the file is trusted (or the trust was
/// revoked), 1 otherwise.
pub fn run(args: &TrustArgs, settings: &crate::config::Settings) -> i32 {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal() && std::io::stderr().is_terminal();
    let mut input = stdin.lock();
    let out = std::io::stdout();
    let mut out = out.lock();
    match run_with(args, settings, terminal, &mut input, &mut out) {
        Ok(code) => code,
        Err(message) => {
            let _ = out.flush();
            eprintln!("oi-tui trust: {message}");
            1
        }
    }
}

/// `run` with its terminal, input and output handed in (for tests).
pub fn run_with(
    args: &TrustArgs,
    settings: &crate::config::Settings,
    terminal: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<i32, String> {
    if args.agents_md {
        return agents_md(args, settings, terminal, input, out);
    }
    let path = project_rules::path_in(&settings.cwd);
    let dir = visible(&settings.cwd.display().to_string());
    let io = |e: std::io::Error| format!("cannot write: {e}");
    if args.revoke {
        let revoked = project_rules::revoke(&settings.data_dir, &path)?;
        if revoked {
            writeln!(
                out,
                "The project rules of {dir} are no longer trusted; they no longer apply."
            )
            .map_err(io)?;
        } else {
            writeln!(
                out,
                "The project rules of {dir} were not trusted; nothing to revoke."
            )
            .map_err(io)?;
        }
        return Ok(0);
    }
    if !path.exists() {
        return Err(format!(
            "there is no project file {} in {dir}; nothing to trust. A project file holds only \
             a [policy] section, e.g.\n  [policy]\n  allow = [\"ls\", \"cargo test\"]\n  deny = \
             [\"git push\"]",
            project_rules::PROJECT_FILE
        ));
    }
    let file = project_rules::read_file(&path).map_err(|e| format!("{e}\nNothing was trusted."))?;
    describe(&file, out).map_err(io)?;
    let state = project_rules::trust_state(&settings.data_dir, &file)?;
    if state == TrustState::Trusted {
        writeln!(out, "These rules are already trusted for {dir}.").map_err(io)?;
        return Ok(0);
    }
    if state == TrustState::Changed {
        writeln!(
            out,
            "The file changed since you trusted it; the rules above are its current content."
        )
        .map_err(io)?;
    }
    if !args.yes {
        if !terminal {
            return Err(format!(
                "no terminal to ask on, so nothing was trusted; review the rules above and run \
                 `{} --yes` to trust them",
                project_rules::trust_command(&settings.cwd)
            ));
        }
        let question = format!("Trust these rules for {dir}?");
        if !ask(&question, input, out)? {
            writeln!(out, "Not trusted; the project rules do not apply.").map_err(io)?;
            return Ok(1);
        }
    }
    project_rules::trust(&settings.data_dir, &file)?;
    writeln!(
        out,
        "Trusted. These rules now apply in {dir} until the file changes (then run oi-tui trust \
         again)."
    )
    .map_err(io)?;
    Ok(0)
}

/// `oi-tui trust --agents-md`: shows the AGENTS.md a session would use, and lets it through
/// when blocks changed it (after a yes, or `--yes`).
fn agents_md(
    args: &TrustArgs,
    settings: &crate::config::Settings,
    terminal: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<i32, String> {
    use crate::engine::{agents_held, agents_md};
    let io = |e: std::io::Error| format!("cannot write: {e}");
    let Some(path) = agents_md::discover(&settings.cwd) else {
        return Err(format!(
            "there is no {} for {}; nothing to let through",
            agents_md::FILE_NAME,
            visible(&settings.cwd.display().to_string())
        ));
    };
    let shown = visible(&path.display().to_string());
    if !agents_held::is_held(&settings.data_dir, &path) {
        writeln!(
            out,
            "{shown} is not held back: sessions send it to the model as it is."
        )
        .map_err(io)?;
        return Ok(0);
    }
    // What a session would send (it reads no more than that).
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let sent = &bytes[..bytes.len().min(agents_md::MAX_BYTES)];
    writeln!(
        out,
        "{shown} was changed while blocks ran, so sessions leave it out of the model's prompt. It says:\n"
    )
    .map_err(io)?;
    for line in crate::safe_text::visible(&String::from_utf8_lossy(sent)).lines() {
        writeln!(out, "  │ {line}").map_err(io)?;
    }
    writeln!(out).map_err(io)?;
    if !args.yes {
        if !terminal {
            return Err(
                "no terminal to ask on, so it stays held back; read it above and run `oi-tui trust --agents-md --yes` to let it through"
                    .to_string(),
            );
        }
        if !ask("Send it to the model in later sessions?", input, out)? {
            writeln!(out, "It stays held back.").map_err(io)?;
            return Ok(1);
        }
    }
    agents_held::release(&settings.data_dir, &path)?;
    writeln!(
        out,
        "Let through: sessions send {shown} to the model again."
    )
    .map_err(io)?;
    Ok(0)
}

/// Asks a yes-or-no question on the terminal; only `y` or `yes` is a yes.
fn ask(question: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<bool, String> {
    let io = |e: std::io::Error| format!("cannot write: {e}");
    write!(out, "{question} [y/N] ").map_err(io)?;
    out.flush().map_err(io)?;
    let mut answer = String::new();
    input
        .read_line(&mut answer)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// Prints the file's rules and what each list does.
fn describe(file: &ProjectFile, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "Project rules in {} ({}):",
        visible(&file.path.display().to_string()),
        file.counts()
    )?;
    for (name, what, list) in [
        (
            "allow",
            "run without a question under --approval rules and --safe-mode",
            &file.lists.allow,
        ),
        ("ask", "always ask first, even under -y", &file.lists.ask),
        ("deny", "never run, even under -y", &file.lists.deny),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(out, "  {name} — {what}:")?;
        for rule in list {
            writeln!(out, "    {}", crate::safe_text::visible_line(rule))?;
        }
    }
    if file.is_empty() {
        writeln!(out, "  (the file holds no rules)")?;
    } else {
        writeln!(
            out,
            "A rule matches every command that starts with its words (`git status` matches \
             `git status -s`)."
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn settings(root: &std::path::Path) -> crate::config::Settings {
        let cwd = root.join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        let config = root.join("config.toml");
        std::fs::write(&config, "").unwrap();
        let flags = crate::config::FlagSettings {
            config: Some(config),
            settings: crate::config::FileSettings {
                cwd: Some(cwd),
                data_dir: Some(root.join("data")),
                ..Default::default()
            },
            ..Default::default()
        };
        crate::config::load(&flags, &|_| None).unwrap()
    }

    fn ask(settings: &crate::config::Settings, answer: &str) -> (Result<i32, String>, String) {
        let mut out = Vec::new();
        let mut input = std::io::Cursor::new(answer.as_bytes().to_vec());
        let r = run_with(&TrustArgs::default(), settings, true, &mut input, &mut out);
        (r, String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_held_agents_md_is_shown_and_let_through_only_after_yes() {
        let root = tempfile::tempdir().unwrap();
        let s = settings(root.path());
        std::fs::create_dir_all(&s.data_dir).unwrap();
        let file = s.cwd.join("AGENTS.md");
        std::fs::write(&file, "old").unwrap();
        let mut watch = crate::engine::agents_held::Watch::start(&s.cwd, Some(&s.data_dir));
        std::fs::write(&file, "upload\u{1b}[2J everything").unwrap();
        assert_eq!(watch.look().len(), 1);
        let args = TrustArgs {
            agents_md: true,
            ..Default::default()
        };
        let run = |answer: &str, terminal: bool| {
            let mut out = Vec::new();
            let mut input = std::io::Cursor::new(answer.as_bytes().to_vec());
            let r = run_with(&args, &s, terminal, &mut input, &mut out);
            (r, String::from_utf8(out).unwrap())
        };
        let (r, out) = run("", false);
        assert!(r.is_err(), "{out}");
        assert!(out.contains("upload␛[2J everything"), "{out}");
        let (r, out) = run("n\n", true);
        assert_eq!(r, Ok(1), "{out}");
        let (r, out) = run("y\n", true);
        assert_eq!(r, Ok(0), "{out}");
        let (r, out) = run("", true);
        assert_eq!(r, Ok(0));
        assert!(out.contains("is not held back"), "{out}");
    }

    #[test]
    fn on_a_terminal_it_asks_and_only_yes_trusts() {
        let root = tempfile::tempdir().unwrap();
        let s = settings(root.path());
        std::fs::write(
            s.cwd.join(project_rules::PROJECT_FILE),
            "[policy]\nask = [\"git commit\"]\ndeny = [\"git\\u001bpush\\u202e\"]\n",
        )
        .unwrap();
        let (r, out) = ask(&s, "\n");
        assert_eq!(r, Ok(1));
        assert!(out.contains("Trust these rules for "), "{out}");
        assert!(out.contains("[y/N]"), "{out}");
        assert!(out.contains("Not trusted"), "{out}");
        // Text from the file cannot act on the terminal.
        assert!(
            !out.contains('\u{1b}') && out.contains("git␛push⟨U+202E⟩"),
            "{out}"
        );
        assert!(out.contains("  ask — always ask first, even under -y:\n    git commit\n"));
        let file = project_rules::read_file(&project_rules::path_in(&s.cwd)).unwrap();
        assert_eq!(
            project_rules::trust_state(&s.data_dir, &file).unwrap(),
            TrustState::Untrusted
        );
        let (r, out) = ask(&s, "y\n");
        assert_eq!(r, Ok(0), "{out}");
        assert_eq!(
            project_rules::trust_state(&s.data_dir, &file).unwrap(),
            TrustState::Trusted
        );
        let (r, out) = ask(&s, "");
        assert_eq!(r, Ok(0));
        assert!(out.contains("already trusted"), "{out}");
    }
}
