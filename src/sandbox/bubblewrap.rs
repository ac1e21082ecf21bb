//! The bubblewrap backend: a command prefix that runs the kernel in new mount, PID and user
//! namespaces (and, with the network off, a new network namespace with only loopback, no
//! route out and no access to the host's 127.0.0.1). The whole file system is bound
//! read-only; the workspace (workspace-write) is bound again read-write, and a `.git`
//! directory in it read-only once more, as are oi-tui's own files under it.
//!
//! What a block cannot reach:
//! - oi-tui's temp files. The blocks' `/tmp` (and `$TMPDIR`) is a private directory of
//!   oi-tui's (`tempdirs::private`), so nothing of oi-tui's in the real temp dir can be
//!   created, replaced or linked from inside; the kernels' directories (driver, control
//!   FIFO, code) are bound read-only, and only the kernels' figure directories writable.
//! - Privileges. Every capability is dropped (`--cap-drop ALL`), for root too, and
//!   `no_new_privs` is set (bubblewrap always sets it), so nothing can be mounted or
//!   remounted and no setuid program gains anything. Where bubblewrap can, the block runs in
//!   a user namespace of its own in which no further user namespace can be made
//!   (`--disable-userns`): without that, a nested one could not remount these mounts either,
//!   since they are locked read-only when a less privileged namespace copies them.
//! - Devices. `/dev` is made anew with the few harmless ones (`null`, `zero`, `random`,
//!   `tty`…) and a private `/dev/shm`. The host's `/dev/pts` is bound in, so that the PTY
//!   the kernel runs in keeps its `/dev/pts/N` name (`tty`, `sudo` and `ssh` look it up).
//!
//! No `--new-session`, because that would take the kernel away from its controlling terminal
//! and break job control and Ctrl-C. (`TIOCSTI`, which `--new-session` guards against, is off
//! by default on this generation of kernels.) No `--die-with-parent` either: Linux ties it to
//! the spawning thread, not the process, so a kernel would die with whichever runtime thread
//! happened to start it; the kernel leads its own session on the PTY and gets SIGHUP when
//! oi-tui goes, like an unsandboxed one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::Network;
use crate::exec::Private;

/// Whether `bwrap` is installed and can make the namespaces it needs, with every capability
/// dropped.
pub(super) fn available() -> Result<(), String> {
    let Some(bwrap) = find_bwrap() else {
        return Err("bubblewrap (bwrap) is not installed".to_string());
    };
    let out = probe(
        &bwrap,
        &[
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--unshare-net",
            "--cap-drop",
            "ALL",
        ],
    )
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

fn probe(bwrap: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new(bwrap)
        .args(args)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
}

/// Whether this bubblewrap can run a block in a user namespace of its own that makes no
/// further ones (`--disable-userns`: bubblewrap 0.8 or later, and a kernel that allows it).
fn user_namespace_closed() -> bool {
    static CLOSED: OnceLock<bool> = OnceLock::new();
    *CLOSED.get_or_init(|| {
        find_bwrap().is_some_and(|bwrap| {
            probe(
                &bwrap,
                &[
                    "--ro-bind",
                    "/",
                    "/",
                    "--unshare-user",
                    "--disable-userns",
                    "--cap-drop",
                    "ALL",
                ],
            )
            .is_ok_and(|out| out.status.success())
        })
    })
}

fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("bwrap"))
        .find(|p| p.is_file())
}

/// The places in `/proc` that change the machine, bound read-only over the new `/proc`.
const PROC_READ_ONLY: &[&str] = &[
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/irq",
    "/proc/bus",
    "/proc/fs",
];

/// What the prefix is made of.
pub(super) struct Plan<'a> {
    /// The working directory, as a real path.
    pub cwd: &'a Path,
    /// Whether blocks may write it (workspace-write).
    pub writable: bool,
    pub private: &'a Private,
    /// oi-tui's own files under the workspace, bound read-only again.
    pub protected: &'a [PathBuf],
    pub network: Network,
    /// Where blocks look for a temp dir (see `temp_dirs`).
    pub tmp_dirs: &'a [PathBuf],
}

/// `bwrap … --` for this plan.
pub(super) fn prefix(plan: &Plan<'_>, exe: &Path) -> Vec<OsString> {
    let bwrap = find_bwrap().unwrap_or_else(|| PathBuf::from("bwrap"));
    let mut args: Vec<OsString> = vec![bwrap.into()];
    let mut bind = |flag: &str, from: &Path, to: &Path| {
        args.extend([flag.into(), from.into(), to.into()]);
    };
    bind("--ro-bind", Path::new("/"), Path::new("/"));
    // Later mounts hide earlier ones beneath them, so the writable places are bound from
    // the shallowest down: the private temp dir over each temp dir that the workspace does
    // not hold (a workspace that holds one, `/` or `/tmp` itself, keeps it real), and the
    // workspace, before or after it as their depths say. `/dev` is made after a workspace of
    // `/`, which would bring the host's back.
    let workspace = plan.writable.then_some(plan.cwd);
    let mut places: Vec<(&str, &Path, PathBuf)> = plan
        .tmp_dirs
        .iter()
        .filter(|t| workspace.is_none_or(|w| !t.starts_with(w)))
        .map(|t| ("--bind", plan.private.tmp.as_path(), t.clone()))
        .collect();
    match workspace {
        Some(w) => places.push(("--bind", w, w.to_path_buf())),
        // A read-only working directory in a temp dir is still there to read (and to
        // start in).
        None if places.iter().any(|(_, _, t)| plan.cwd.starts_with(t)) => {
            places.push(("--ro-bind", plan.cwd, plan.cwd.to_path_buf()));
        }
        None => {}
    }
    places.sort_by_key(|(_, _, to)| to.components().count());
    let dev_at = places
        .iter()
        .position(|(_, _, to)| !Path::new("/dev").starts_with(to))
        .unwrap_or(places.len());
    for (i, (flag, from, to)) in places.iter().enumerate() {
        if i == dev_at {
            args.extend(["--dev".into(), "/dev".into()]);
            args.extend(["--dev-bind".into(), "/dev/pts".into(), "/dev/pts".into()]);
        }
        args.extend([(*flag).into(), (*from).into(), to.into()]);
    }
    if dev_at == places.len() {
        args.extend(["--dev".into(), "/dev".into()]);
        args.extend(["--dev-bind".into(), "/dev/pts".into(), "/dev/pts".into()]);
    }
    let mut bind = |flag: &str, from: &Path, to: &Path| {
        args.extend([flag.into(), from.into(), to.into()]);
    };
    if let Some(w) = workspace {
        let git = w.join(".git");
        if git.exists() {
            bind("--ro-bind", &git, &git);
        }
    }
    let mut bind = |flag: &str, from: &Path, to: &Path| {
        args.extend([flag.into(), from.into(), to.into()]);
    };
    // A directory that leads to a protected one is bound onto itself first: a mount point
    // cannot be renamed, so the way to oi-tui's files cannot be moved aside and made anew
    // (`mv ~/.config x; mkdir -p ~/.config/oi-tui`). Its contents stay writable.
    let mut ways: Vec<&Path> = plan
        .protected
        .iter()
        .flat_map(|p| p.ancestors().skip(1))
        .filter(|a| workspace.is_some_and(|w| a.starts_with(w) && *a != w))
        .collect();
    ways.sort_by_key(|a| a.components().count());
    ways.dedup();
    for way in ways {
        bind("--bind", way, way);
    }
    // (The user's oi-tui directory is the empty one below, not bound again.)
    for path in plan.protected.iter().filter(|p| **p != plan.private.root) {
        bind("--ro-bind", path, path);
    }
    // The user's oi-tui directory holds every session's kernels, whose control FIFOs a
    // read-only mount does not keep from being written (a block wrote commands into another
    // session's kernel, unsandboxed): an empty, read-only directory stands in for it, with
    // this process's kernels bound in, read-only, and its figures. After every other bind,
    // so that none (a way to a protected path above it) brings the real one back.
    args.extend(["--tmpfs".into(), plan.private.root.clone().into()]);
    args.extend([
        "--ro-bind".into(),
        plan.private.kernels.clone().into(),
        plan.private.kernels.clone().into(),
    ]);
    args.extend([
        "--bind".into(),
        plan.private.figures.clone().into(),
        plan.private.figures.clone().into(),
    ]);
    args.extend(["--remount-ro".into(), plan.private.root.clone().into()]);
    // A process namespace of its own, with its own /proc: a block cannot read oi-tui's
    // environment (the provider's key) or memory through /proc, nor signal its processes.
    args.extend(["--unshare-pid".into(), "--proc".into(), "/proc".into()]);
    // The kernel's settings are the machine's, and root owns them whatever its capabilities
    // (a block as root wrote `kernel/core_pattern`, and the next crash ran its script on the
    // host as root): read-only, as the other places a write reaches the kernel through.
    for knob in PROC_READ_ONLY {
        if Path::new(knob).exists() {
            args.extend(["--ro-bind".into(), (*knob).into(), (*knob).into()]);
        }
    }
    if user_namespace_closed() {
        args.extend(["--unshare-user".into(), "--disable-userns".into()]);
    }
    args.extend(["--cap-drop".into(), "ALL".into()]);
    if plan.network == Network::Off {
        args.push("--unshare-net".into());
    }
    args.push("--".into());
    // Inside, the trampoline takes the terminal's foreground away from bwrap, which stays
    // outside as the monitor: Ctrl-C and interrupts then reach the kernel alone, not bwrap
    // (which would die of SIGINT and take the kernel with it).
    args.extend([exe.into(), super::TRAMPOLINE.into(), "--foreground".into()]);
    if plan.network == Network::Off {
        args.push("--no-network".into());
    }
    args.extend(super::exec_guard::args(&super::deny_rules()));
    args.push("--".into());
    args
}

/// Where a block looks for a temp dir: `/tmp`, and `$TMPDIR` when it is elsewhere.
pub(super) fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from("/tmp")];
    if let Ok(tmp) = std::fs::canonicalize(std::env::temp_dir())
        && !dirs.contains(&tmp)
    {
        dirs.push(tmp);
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(args: &[OsString]) -> Vec<String> {
        args.iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// The prefix's words for a plan of `cwd` (with /tmp the only temp dir), joined.
    fn joined(cwd: &str, writable: bool, tmp_dirs: &[PathBuf]) -> String {
        let private = private(Path::new("/p"));
        let plan = Plan {
            cwd: Path::new(cwd),
            writable,
            private: &private,
            protected: &[],
            network: Network::On,
            tmp_dirs,
        };
        text(&prefix(&plan, Path::new("/x/oi-tui"))).join(" ")
    }

    fn private(base: &Path) -> Private {
        Private {
            root: base.to_path_buf(),
            kernels: base.join("k"),
            figures: base.join("f"),
            tmp: base.join("t"),
        }
    }

    #[test]
    fn the_prefix_binds_roots_writable_and_git_read_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        std::fs::create_dir(dir.path().join(".git")).unwrap_or_else(|e| panic!("mkdir: {e}"));
        let private = private(Path::new("/p"));
        let plan = Plan {
            cwd: dir.path(),
            writable: true,
            private: &private,
            protected: &[],
            network: Network::Off,
            tmp_dirs: &[PathBuf::from("/tmp")],
        };
        let text = text(&prefix(&plan, Path::new("/x/oi-tui")));
        let root = dir.path().display().to_string();
        let git = dir.path().join(".git").display().to_string();
        let bind = text.iter().position(|a| a == &root);
        let ro_git = text.iter().position(|a| a == &git);
        assert!(
            bind.is_some() && ro_git.is_some() && bind < ro_git,
            "{text:?}"
        );
        assert!(text.contains(&"--unshare-net".to_string()));
        // With the network off the trampoline refuses the families a network namespace
        // does not hold (AF_VSOCK).
        assert!(text.ends_with(&[
            "/x/oi-tui".to_string(),
            super::super::TRAMPOLINE.to_string(),
            "--foreground".to_string(),
            "--no-network".to_string(),
            "--".to_string()
        ]));
        let on = Plan {
            network: Network::On,
            ..plan
        };
        assert!(
            !prefix(&on, Path::new("/x/oi-tui"))
                .iter()
                .any(|a| a == "--unshare-net")
        );
    }

    /// Every capability goes, /dev is made anew, the private temp dir stands for /tmp, the
    /// user's oi-tui directory is an empty one with this process's kernels read-only, and
    /// only the figures writable.
    #[test]
    fn the_prefix_drops_capabilities_and_hides_the_real_temp_dir() {
        let text = joined("/home/ada/proj", true, &[PathBuf::from("/tmp")]);
        assert!(text.contains("--cap-drop ALL"), "{text}");
        assert!(
            text.contains("--dev /dev --dev-bind /dev/pts /dev/pts"),
            "{text}"
        );
        assert!(!text.contains("--dev-bind /dev /dev"), "{text}");
        assert!(text.contains("--bind /p/t /tmp"), "{text}");
        assert!(!text.contains("--ro-bind /p /p"), "{text}");
        assert!(text.contains("--tmpfs /p --ro-bind /p/k /p/k"), "{text}");
        assert!(text.contains("--bind /p/f /p/f --remount-ro /p"), "{text}");
        // The private temp dir first, the workspace after it; the kernels' directories
        // after both.
        let tmp = text.find("--bind /p/t /tmp");
        let ws = text.find("--bind /home/ada/proj /home/ada/proj");
        let kernels = text.find("--tmpfs /p");
        assert!(tmp < ws && ws < kernels, "{text}");
    }

    /// A workspace that holds the temp dir keeps it: it is bound before the private one
    /// would be, and the private one is not put over it.
    #[test]
    fn a_workspace_holding_the_temp_dir_is_bound_first() {
        let text = joined("/", true, &[PathBuf::from("/tmp")]);
        assert!(!text.contains("--bind /p/t /tmp"), "{text}");
        let ws = text.find("--bind / /");
        let dev = text.find("--dev /dev");
        let kernels = text.find("--tmpfs /p");
        assert!(ws < dev && dev < kernels, "{text}");
    }

    /// A read-only working directory in the temp dir is bound again (read-only) over the
    /// private temp dir, so that the kernel starts in it and can read it.
    #[test]
    fn a_read_only_workspace_in_the_temp_dir_stays_visible() {
        let text = joined("/tmp/proj", false, &[PathBuf::from("/tmp")]);
        let tmp = text.find("--bind /p/t /tmp");
        let ws = text.find("--ro-bind /tmp/proj /tmp/proj");
        assert!(tmp.is_some() && tmp < ws, "{text}");
        assert!(!text.contains("--bind /tmp/proj"), "{text}");
    }

    /// The directories that lead from the workspace to a protected one are mount points
    /// (bound onto themselves, writable) before the protected one is bound read-only.
    #[test]
    fn the_way_to_a_protected_directory_cannot_be_moved() {
        let private = private(Path::new("/p"));
        let protected = [PathBuf::from("/home/ada/.config/oi-tui")];
        let plan = Plan {
            cwd: Path::new("/home/ada"),
            writable: true,
            private: &private,
            protected: &protected,
            network: Network::On,
            tmp_dirs: &[PathBuf::from("/tmp")],
        };
        let text = text(&prefix(&plan, Path::new("/x/oi-tui"))).join(" ");
        let way = text.find("--bind /home/ada/.config /home/ada/.config");
        let own = text.find("--ro-bind /home/ada/.config/oi-tui /home/ada/.config/oi-tui");
        assert!(way.is_some() && way < own, "{text}");
        assert!(
            !text.contains("--bind /home/ada /home/ada --bind /home/ada "),
            "{text}"
        );
    }

    /// The user's oi-tui directory lying in the workspace (the temp dir as the workspace):
    /// the ways to it are bound first, the empty stand-in after them (bound the other way
    /// round, a way brought the real directory back, and bwrap failed to make it read-only).
    #[test]
    fn the_stand_in_for_oi_tuis_directory_comes_after_the_ways_to_it() {
        let private = private(Path::new("/w/tmp/oi-tui-0"));
        let protected = [private.root.clone()];
        let plan = Plan {
            cwd: Path::new("/w"),
            writable: true,
            private: &private,
            protected: &protected,
            network: Network::On,
            tmp_dirs: &[PathBuf::from("/tmp")],
        };
        let text = text(&prefix(&plan, Path::new("/x/oi-tui"))).join(" ");
        let way = text.find("--bind /w/tmp /w/tmp");
        let stand_in = text.find("--tmpfs /w/tmp/oi-tui-0");
        assert!(way.is_some() && way < stand_in, "{text}");
        assert!(
            text.contains("--remount-ro /w/tmp/oi-tui-0")
                && !text.contains("--ro-bind /w/tmp/oi-tui-0 "),
            "{text}"
        );
    }

    /// A workspace in /tmp with `$TMPDIR` inside it: /tmp is the private one, then the
    /// workspace (with its own temp dir, real) over it.
    #[test]
    fn a_workspace_holding_tmpdir_under_tmp_is_bound_after_the_private_tmp() {
        let text = joined(
            "/tmp/ws",
            true,
            &[PathBuf::from("/tmp"), PathBuf::from("/tmp/ws/tmp")],
        );
        let tmp = text.find("--bind /p/t /tmp ");
        let ws = text.find("--bind /tmp/ws /tmp/ws");
        assert!(tmp.is_some() && tmp < ws, "{text}");
        assert!(!text.contains("/tmp/ws/tmp"), "{text}");
    }
}
