//! The sandbox of kernels on another host: bubblewrap there, when the host has it. oi-tui's
//! own trampoline is not there, so the prefix is bubblewrap alone (the helper there keeps
//! interrupts away from it); without bubblewrap, an explicit sandbox refuses every block and
//! the default one says plainly that blocks run unsandboxed.

use super::{Backend, Network, Resolved, SandboxMode, SandboxSettings};

/// What is in force on `host` (`bwrap`: where bubblewrap is there, if it is).
pub fn resolve(settings: SandboxSettings, bwrap: Option<&str>, host: &str) -> Resolved {
    let mut resolved = match super::unresolved(settings) {
        Ok(resolved) => resolved,
        Err(off) => return off,
    };
    match bwrap {
        Some(_) => resolved.backend = Some(Backend::Bubblewrap),
        None if settings.explicit => {
            resolved.refusal = Some(format!(
                "the {} sandbox was asked for, but {host} has no bubblewrap, so blocks there cannot be sandboxed. Install bubblewrap on {host}, or run with --sandbox off to run them there unsandboxed.",
                settings.mode.name()
            ));
        }
        None => {
            resolved.warning = Some(format!(
                "{host} has no bubblewrap: blocks there run unsandboxed, with all of your permissions on {host}. Install bubblewrap there, or pass --sandbox off to silence this."
            ));
        }
    }
    resolved
}

/// `bwrap … --` on the host, as `sh` words (`kernel.sh` sources them, with `$oi_k` the
/// kernel's directory): everything read-only but the temp dir and, in workspace-write, the
/// working directory (its `.git` kept read-only); the root of oi-tui's session directories
/// read-only too (what runs outside the sandbox is read from there), but for the kernel's
/// own figure directory; no network when it is off. Empty when no sandbox is in force.
pub fn prefix(resolved: &Resolved, bwrap: &str, workdir: &str, session_dir: &str) -> Vec<String> {
    use crate::exec::remote::sh_quote;
    if resolved.backend.is_none() {
        return Vec::new();
    }
    // /dev made anew (with a /dev/shm of the kernel's own) but for the host's terminals;
    // every capability dropped, for root too (see the local backend's notes).
    let mut args: Vec<String> = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--dev-bind",
        "/dev/pts",
        "/dev/pts",
        "--cap-drop",
        "ALL",
    ]
    .map(sh_quote)
    .to_vec();
    let mut bind = |flag: &str, path: &str| {
        args.extend([flag.to_string(), sh_quote(path), sh_quote(path)]);
    };
    bind("--bind", "/tmp");
    // The session's directory is BASE/oi-tui-remote-UID/TOKEN.
    let root = session_dir.rsplit_once('/').map_or(session_dir, |(r, _)| r);
    let base = root.rsplit_once('/').map_or("", |(b, _)| b);
    if !base.is_empty() && base != "/tmp" {
        bind("--bind", base);
    }
    if resolved.settings.mode == SandboxMode::WorkspaceWrite {
        bind("--bind", workdir);
        bind(
            "--ro-bind-try",
            &format!("{}/.git", workdir.trim_end_matches('/')),
        );
    }
    bind("--ro-bind", root);
    args.extend(["--bind", "\"$oi_k/images\"", "\"$oi_k/images\""].map(String::from));
    if resolved.settings.network == Network::Off {
        args.push("--unshare-net".to_string());
    }
    args.extend(["--die-with-parent", "--"].map(String::from));
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(mode: SandboxMode, network: Network, explicit: bool) -> SandboxSettings {
        SandboxSettings {
            mode,
            network,
            explicit,
        }
    }

    #[test]
    fn without_bubblewrap_an_explicit_sandbox_refuses_and_the_default_warns() {
        let asked = resolve(
            settings(SandboxMode::ReadOnly, Network::On, true),
            None,
            "gpu",
        );
        assert!(
            asked
                .refusal
                .as_deref()
                .is_some_and(|r| r.contains("gpu has no bubblewrap"))
        );
        let default = resolve(
            settings(SandboxMode::WorkspaceWrite, Network::On, false),
            None,
            "gpu",
        );
        assert!(default.refusal.is_none());
        assert!(
            default
                .warning
                .as_deref()
                .is_some_and(|w| w.contains("run unsandboxed"))
        );
        let off = resolve(settings(SandboxMode::Off, Network::On, true), None, "gpu");
        assert!(off.refusal.is_none() && off.warning.is_none());
    }

    #[test]
    fn the_prefix_binds_the_workdir_only_in_workspace_write() {
        let ww = resolve(
            settings(SandboxMode::WorkspaceWrite, Network::Off, true),
            Some("/usr/bin/bwrap"),
            "h",
        );
        let args = prefix(
            &ww,
            "/usr/bin/bwrap",
            "/srv/work",
            "/var/tmp/oi-tui-remote-0/x",
        );
        let text = args.join(" ");
        assert!(
            text.starts_with("'/usr/bin/bwrap' '--ro-bind' '/' '/' '--dev' '/dev' '--dev-bind' '/dev/pts' '/dev/pts' '--cap-drop' 'ALL'"),
            "{text}"
        );
        assert!(text.contains("--bind '/srv/work' '/srv/work'"), "{text}");
        assert!(
            text.contains("--ro-bind-try '/srv/work/.git' '/srv/work/.git'"),
            "{text}"
        );
        assert!(text.contains("--bind '/var/tmp' '/var/tmp'"), "{text}");
        // oi-tui's own directories are read-only inside, but for the kernel's figures.
        let own = "--ro-bind '/var/tmp/oi-tui-remote-0' '/var/tmp/oi-tui-remote-0' --bind \"$oi_k/images\" \"$oi_k/images\"";
        assert!(text.contains(own), "{text}");
        assert!(text.contains("--unshare-net"), "{text}");
        assert!(text.ends_with("--die-with-parent --"), "{text}");
        let ro = resolve(
            settings(SandboxMode::ReadOnly, Network::On, true),
            Some("/b"),
            "h",
        );
        let text = prefix(&ro, "/b", "/srv/work", "/tmp/oi-tui-remote-0/x").join(" ");
        assert!(!text.contains("/srv/work"), "{text}");
        assert!(!text.contains("--unshare-net"), "{text}");
        let none = resolve(
            settings(SandboxMode::Off, Network::On, true),
            Some("/b"),
            "h",
        );
        assert!(prefix(&none, "/b", "/w", "/tmp/x").is_empty());
    }
}
