//! The system prompt: `assets/system_prompt.md` filled with facts about this machine, or the
//! user's own (`--system-message`), then the project's `AGENTS.md` (see `agents_md`), then
//! the user's `--custom-instructions`.

use crate::exec::Language;

const TEMPLATE: &str = include_str!("../../assets/system_prompt.md");

const TOOL_INSTRUCTIONS: &str = "To run code, call the `execute` tool with the language and the code: one block per call. Its result is the block's output and exit status.";

const FENCE_INSTRUCTIONS: &str = "To run code, write it in a fenced code block tagged with its language, for example:\n```python\nprint(\"hello\")\n```\nEvery fenced block tagged with a language you can run is proposed to the user and run in order; after your message you get each block's output. Use an untagged fence (or `text`) for anything that must not run.";

/// Facts about the machine that go into the prompt.
#[derive(Debug, Clone)]
pub struct Facts {
    pub os: String,
    pub cwd: String,
    pub shell: String,
    pub user: String,
    pub date: String,
    pub languages: Vec<Language>,
    /// What the sandbox lets code do, in a sentence (`Resolved::for_model`).
    pub sandbox: String,
    /// The project's `AGENTS.md` section (`agents_md::load`), if one is in use.
    pub agents_md: Option<String>,
}

impl Facts {
    /// This machine's facts, with the languages whose interpreters are found here and what
    /// the sandbox lets code do.
    pub fn here(cwd: &std::path::Path, sandbox: &crate::sandbox::Resolved) -> Facts {
        let available: Vec<Language> = Language::ALL
            .into_iter()
            .filter(|l| !l.runs_in_kernel() || l.locate().is_some())
            .collect();
        let mut facts = Facts::gather(cwd, available);
        facts.sandbox = sandbox.for_model();
        facts
    }

    /// Reads the facts from this machine. `path` is the kernels' PATH, which decides which
    /// languages are available.
    pub fn gather(cwd: &std::path::Path, languages: Vec<Language>) -> Facts {
        Facts {
            os: os_name(),
            cwd: cwd.display().to_string(),
            shell: std::env::var("SHELL").unwrap_or_else(|_| "bash".into()),
            user: std::env::var("USER")
                .or_else(|_| std::env::var("LOGNAME"))
                .unwrap_or_else(|_| "unknown".into()),
            date: today(),
            languages,
            sandbox: String::new(),
            agents_md: None,
        }
    }
}

/// The system prompt for a request.
pub fn system_prompt(
    facts: &Facts,
    tools: bool,
    system_message: Option<&str>,
    custom_instructions: Option<&str>,
) -> String {
    let mut prompt = match system_message {
        Some(own) => own.to_string(),
        None => {
            let languages = facts
                .languages
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(", ");
            TEMPLATE
                .replace(
                    "{code_instructions}",
                    if tools {
                        TOOL_INSTRUCTIONS
                    } else {
                        FENCE_INSTRUCTIONS
                    },
                )
                .replace("{os}", &facts.os)
                .replace("{cwd}", &facts.cwd)
                .replace("{shell}", &facts.shell)
                .replace("{user}", &facts.user)
                .replace("{date}", &facts.date)
                .replace("{languages}", &languages)
                .replace("{sandbox}", &facts.sandbox)
        }
    };
    // Project instructions apply under an own system message too: it replaces oi-tui's
    // words, not the project's (`--no-agents-md` leaves them out).
    if let Some(section) = &facts.agents_md {
        prompt.push_str("\n\n");
        prompt.push_str(section);
        prompt.push('\n');
    }
    if let Some(extra) = custom_instructions.filter(|s| !s.trim().is_empty()) {
        prompt.push_str("\n\nThe user's own instructions:\n");
        prompt.push_str(extra.trim());
        prompt.push('\n');
    }
    prompt
}

fn os_name() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    match pretty {
        Some(name) => format!(
            "{name} ({}, {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        ),
        None => format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
    }
}

/// Today's local date as YYYY-MM-DD.
fn today() -> String {
    // SAFETY: time(2) and localtime_r(3) write into locals we own.
    unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&now, &mut tm).is_null() {
            return "unknown".to_string();
        }
        format!(
            "{:04}-{:02}-{:02}",
            tm.tm_year + 1900,
            tm.tm_mon + 1,
            tm.tm_mday
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            os: "TestOS".into(),
            cwd: "/home/ada/here".into(),
            shell: "/bin/zsh".into(),
            user: "ada".into(),
            date: "2026-11-30".into(),
            languages: vec![Language::Python, Language::Shell],
            sandbox: "code may write only under the working directory".into(),
            agents_md: None,
        }
    }

    #[test]
    fn the_prompt_carries_the_facts_and_the_mode() {
        let p = system_prompt(&facts(), true, None, None);
        for needle in [
            "TestOS",
            "/home/ada/here",
            "/bin/zsh",
            "ada",
            "2026-11-30",
            "python, shell",
            "`execute` tool",
        ] {
            assert!(p.contains(needle), "{needle}");
        }
        assert!(!p.contains('{') || !p.contains("{os}"));
        let p = system_prompt(&facts(), false, None, Some("Answer in French."));
        assert!(p.contains("fenced code block"));
        assert!(p.ends_with("Answer in French.\n"));
    }

    #[test]
    fn an_own_system_message_replaces_the_template() {
        let p = system_prompt(&facts(), true, Some("Be terse."), Some("Use metric units."));
        assert!(p.starts_with("Be terse."));
        assert!(!p.contains("TestOS"));
        assert!(p.contains("Use metric units."));
    }

    #[test]
    fn the_project_section_follows_the_prompt_and_precedes_the_users_instructions() {
        let mut f = facts();
        f.agents_md = Some("<agents_md path=\"AGENTS.md\">\nRun make test.\n</agents_md>".into());
        for own in [None, Some("Be terse.")] {
            let p = system_prompt(&f, true, own, Some("Answer in French."));
            let section = p.find("Run make test.").unwrap();
            let mine = p.find("Answer in French.").unwrap();
            assert!(section < mine, "{p}");
            let start = p.find(own.unwrap_or("TestOS")).unwrap();
            assert!(start < section, "{p}");
        }
        assert!(!system_prompt(&facts(), true, None, None).contains("agents_md"));
    }

    #[test]
    fn the_date_looks_like_a_date() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert_eq!(&d[4..5], "-");
    }
}
