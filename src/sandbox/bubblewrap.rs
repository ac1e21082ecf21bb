//! The bubblewrap backend: a command prefix that runs the kernel in a new mount namespace
//! (and, with the network off, a new network namespace with only loopback, no route out and
//! no access to the host's 127.0.0.1). The whole file system is bound read-only; the writable
//! roots are bound again read-write, and a `.git` directory under them read-only once more.
//!
//! `/dev` is bound from the host, not made anew (`--dev`), so that the PTY the kernel runs
//! in keeps its `/dev/pts/N` name; no `--new-session`, because that would take the kernel
//! away from its controlling terminal and break job control and Ctrl-C. (`TIOCSTI`, which
//! `--new-session` guards against, is off by default on this generation of kernels.) No
//! `--die-with-parent` either: Linux ties it to the spawning thread, not the process, so a
//! kernel would die with whichever runtime thread happened to start it; the kernel leads its
//! own session on the PTY and gets SIGHUP when oi-tui goes, like an unsandboxed one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Network;

/// Whether `bwrap` is installed and can make the namespaces it needs.
pub(super) fn available() -> Result<(), String> {
    let Some(bwrap) = find_bwrap() else {
        return Err("bubblewrap (bwrap) is not installed".to_string());
    };
    let out = Command::new(&bwrap)
        .args(["--ro-bind", "/", "/", "--unshare-net", "--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("bubblewrap cannot be started: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let why = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "bubblewrap cannot create namespaces here (user namespaces disabled?): {}",
            crate::safe_text::visible(why.trim())
        ))
    }
}

fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
}

/// `bwrap … --` for these writable roots.
pub(super) fn prefix(
    roots: &[PathBuf],
    protected: &[PathBuf],
    network: Network,
    exe: &Path,
) -> Vec<OsString> {
    let bwrap = find_bwrap().unwrap_or_else(|| PathBuf::from("bwrap"));
    let mut args: Vec<OsString> = vec![bwrap.into()];
    let mut push = |items: &[&std::ffi::OsStr]| args.extend(items.iter().map(OsString::from));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev-bind".as_ref(), "/dev".as_ref(), "/dev".as_ref()]);
    for root in roots {
        push(&["--bind".as_ref(), root.as_os_str(), root.as_os_str()]);
    }
    for root in roots {
        let git = root.join(".git");
        if Path::new(&git).exists() {
            push(&["--ro-bind".as_ref(), git.as_os_str(), git.as_os_str()]);
        }
    }
    for path in protected {
        push(&["--ro-bind".as_ref(), path.as_os_str(), path.as_os_str()]);
    }
    // A process namespace of its own, with its own /proc: a block cannot read oi-tui's
    // environment (the provider's key) or memory through /proc, nor signal its processes.
    push(&[
        "--unshare-pid".as_ref(),
        "--proc".as_ref(),
        "/proc".as_ref(),
    ]);
    if network == Network::Off {
        push(&["--unshare-net".as_ref()]);
    }
    push(&["--".as_ref()]);
    // Inside, the trampoline takes the terminal's foreground away from bwrap, which stays
    // outside as the monitor: Ctrl-C and interrupts then reach the kernel alone, not bwrap
    // (which would die of SIGINT and take the kernel with it).
    push(&[
        exe.as_os_str(),
        super::TRAMPOLINE.as_ref(),
        "--foreground".as_ref(),
        "--".as_ref(),
    ]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_binds_roots_writable_and_git_read_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        std::fs::create_dir(dir.path().join(".git")).unwrap_or_else(|e| panic!("mkdir: {e}"));
        let args = prefix(
            &[dir.path().to_path_buf()],
            &[],
            Network::Off,
            Path::new("/x/oi-tui"),
        );
        let text: Vec<String> = args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let root = dir.path().display().to_string();
        let git = dir.path().join(".git").display().to_string();
        let bind = text.iter().position(|a| a == &root);
        let ro_git = text.iter().position(|a| a == &git);
        assert!(
            bind.is_some() && ro_git.is_some() && bind < ro_git,
            "{text:?}"
        );
        assert!(text.contains(&"--unshare-net".to_string()));
        assert!(text.ends_with(&[
            "/x/oi-tui".to_string(),
            super::super::TRAMPOLINE.to_string(),
            "--foreground".to_string(),
            "--".to_string()
        ]));
        assert_eq!(text.last().map(String::as_str), Some("--"));
        let on = prefix(
            &[dir.path().to_path_buf()],
            &[],
            Network::On,
            Path::new("/x/oi-tui"),
        );
        assert!(!on.iter().any(|a| a == "--unshare-net"));
    }
}
