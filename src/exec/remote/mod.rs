//! Kernels on another machine, through the system's OpenSSH client, so that the person's
//! `~/.ssh/config`, keys, agent, jump hosts and `known_hosts` all apply.
//!
//! A session keeps one connection to the host (`link`): its master's own session is a small
//! shell helper (`assets/remote/helper.sh`, spoken to by `helper`) that writes the drivers
//! and each block's code into a private directory there, signals and kills kernels, and
//! sends back the images a block made. Each kernel is `ssh -tt` over that connection: a PTY
//! there, whose bytes come through the local PTY `ssh` runs in, so that the terminal pane,
//! input, resize and the end marker work as they do locally.

mod faults;
mod helper;
pub(crate) mod images;
mod link;
mod target;

pub(crate) use helper::sh_quote;
pub(crate) use link::COMMAND_LIMIT;
pub use link::{Link, LinkEnv, RemoteInfo, is_name, kill_all};
pub use target::SshTarget;

use super::Language;

/// The kind of the private local directory that holds a connection's socket.
pub(crate) const SSH_DIR: &str = "ssh";

/// The interpreter of a language on the host (the one the target names, else the one found
/// on the host's PATH) and its command line (as `sh` that sets `$@`), with its driver. Err:
/// the sentence for a missing interpreter, naming the host.
pub(crate) fn run_line(
    link: &Link,
    language: Language,
    prefix: &[String],
) -> Result<(String, String), String> {
    let configured = link
        .target
        .interpreters
        .iter()
        .find(|(l, _)| *l == language)
        .map(|(_, p)| p.clone());
    let found = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| link.program(n))
            .map(str::to_string)
    };
    let shell_base = link.info.shell.rsplit('/').next().unwrap_or("").to_string();
    let (program, args): (Option<String>, &[&str]) = match language {
        Language::Python => (
            configured.or_else(|| found(&["python3", "python"])),
            &["-u"],
        ),
        Language::Shell => {
            let program = configured.or_else(|| {
                if shell_base == "zsh" || shell_base == "bash" {
                    found(&[shell_base.as_str()])
                } else {
                    found(&["bash"])
                }
            });
            let zsh = program.as_deref().is_some_and(|p| p.ends_with("zsh"));
            (
                program,
                if zsh {
                    &["-f"]
                } else {
                    &["--noprofile", "--norc"]
                },
            )
        }
        Language::JavaScript => (configured.or_else(|| found(&["node", "nodejs"])), &[]),
        Language::R => (configured.or_else(|| found(&["Rscript"])), &["--no-save"]),
        Language::Ruby => (configured.or_else(|| found(&["ruby"])), &[]),
        Language::Perl => (configured.or_else(|| found(&["perl"])), &[]),
        Language::Java => (
            configured.or_else(|| {
                found(&["jshell"])
                    .map(|j| format!("{}/java", j.rsplit_once('/').map_or("", |(d, _)| d)))
            }),
            &["--add-modules", "jdk.jshell"],
        ),
        Language::PowerShell => (
            configured.or_else(|| found(&["pwsh"])),
            &["-NoLogo", "-NoProfile", "-NonInteractive", "-File"],
        ),
        Language::Html => (None, &[]),
    };
    let Some(program) = program else {
        return Err(format!(
            "Cannot run {language} on {host}: `{}` was not found on its PATH. To run {language} blocks there, install it on {host}, or name it under `interpreters` in the executor's settings.",
            language.program_label(),
            host = link.target.name,
        ));
    };
    let (driver, _) = super::kernel::driver(language);
    // The prefix is `sh` words already (the sandbox's names the kernel's own directory).
    let mut words: Vec<String> = prefix.to_vec();
    words.push(sh_quote(&program));
    words.extend(args.iter().map(|a| sh_quote(a)));
    words.push(format!("\"$oi_dir/{driver}\""));
    Ok((program, format!("set -- {}\n", words.join(" "))))
}

/// What a remote kernel's login printed before `kernel.sh` said it is ready (a chatty
/// `.bashrc`, a banner) is not output of any block: it is read and dropped. Ok: what came
/// after the ready line. Err: why the kernel never got ready (what it said last, when its
/// session ended; or that it took too long).
pub(crate) async fn await_ready(
    output: &mut tokio::sync::mpsc::Receiver<Vec<u8>>,
    ready: &str,
) -> Result<Vec<u8>, String> {
    let ready = format!("OI_TUI_READY_{ready}");
    let deadline = tokio::time::Instant::now() + COMMAND_LIMIT;
    let mut seen: Vec<u8> = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, output.recv()).await {
            Ok(Some(chunk)) => {
                seen.extend_from_slice(&chunk);
                if let Some(at) = seen
                    .windows(ready.len())
                    .position(|w| w == ready.as_bytes())
                {
                    let mut rest = seen.split_off(at + ready.len());
                    let line_end = rest
                        .iter()
                        .take_while(|b| **b == b'\r' || **b == b'\n')
                        .count();
                    rest.drain(..line_end);
                    return Ok(rest);
                }
            }
            Ok(None) => {
                let text = String::from_utf8_lossy(&seen);
                let last = text
                    .lines()
                    .map(str::trim)
                    .rfind(|l| !l.is_empty())
                    .unwrap_or("");
                return Err(if last.is_empty() {
                    "its session there ended before the kernel started".to_string()
                } else {
                    format!("its session there ended before the kernel started ({last})")
                });
            }
            Err(_) => {
                return Err(format!(
                    "it did not start within {}",
                    super::format_duration(COMMAND_LIMIT)
                ));
            }
        }
    }
}

/// Whether `language` can run on the link's host.
pub fn runs_there(link: &Link, language: Language) -> bool {
    run_line(link, language, &[]).is_ok()
}
