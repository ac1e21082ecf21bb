//! The Landlock backend: kernels start as `oi-tui __sandbox-exec --landlock [--write DIR]…
//! [--tmpdir DIR] [--no-network] -- PROGRAM ARGS…`, which restricts itself with Landlock and
//! then `exec`s the program. The restriction is inherited by everything the kernel starts
//! and cannot be lifted. With `--own-processes` (always, from [`prefix`]) the program runs
//! in namespaces of its own first, where the machine allows them (see `pid_ns`): it sees no
//! other process, and root has no power over the host.
//!
//! What it grants: reading and running everything; writing only under the granted paths
//! (the workspace in workspace-write, the blocks' private temp dir, which becomes `$TMPDIR`,
//! and the kernels' figure directories) and to a few devices (`/dev/null`, the terminal…;
//! not `/dev/shm`, which is the host's). The real temp dir is not writable, so nothing of
//! oi-tui's there can be created, replaced or linked from inside.
//!
//! Landlock only grants, never takes back below a grant. So where oi-tui's own files lie
//! under the workspace (the config and data directories when the workspace is the home
//! directory), the workspace itself is not granted: its entries are, one by one, all but
//! those that lead to oi-tui's files, down to them (see [`grants`]). The directories on the
//! way stay unwritable: a block cannot create a new entry right in them, and entries made
//! there after the kernel started are not writable either. A `.git` directory in the
//! workspace stays writable under this backend.
//!
//! With the network off: no TCP connect or bind (Landlock ABI 4), no connection to an
//! abstract Unix socket made outside the sandbox (ABI 6), and no UDP or raw sockets (a
//! seccomp filter, see `seccomp`). Signals to processes outside the sandbox are refused
//! always (ABI 6).
//!
//! The same trampoline serves bubblewrap with `--foreground` alone: inside the sandbox it
//! makes the kernel the terminal's foreground process group, apart from bwrap.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

use crate::exec::Private;

use super::Network;

/// The hidden subcommand of the trampoline.
pub const TRAMPOLINE: &str = "__sandbox-exec";

/// The newest ABI whose rights are asked for; older kernels grant what they know.
const FS_ABI: ABI = ABI::V5;

/// The kernel's Landlock ABI version (0: none).
fn kernel_abi() -> i64 {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
    // returns the ABI version (or -1 with errno); it touches no memory.
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    }
}

pub(super) fn available() -> Result<(), String> {
    match kernel_abi() {
        abi if abi >= 1 => Ok(()),
        _ => Err(format!(
            "Landlock is not enabled in this kernel ({})",
            std::io::Error::last_os_error()
        )),
    }
}

/// The devices a block may write: the terminal and the harmless ones (not `/dev/shm`).
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What to grant for these writable roots so that none of the protected paths under them
/// is writable: a root that holds no protected path is granted whole; one that does is not
/// granted itself, but each of its entries is, except a protected one, and except one that
/// leads to a protected path, which is treated the same way in turn. Links are never
/// granted (a grant follows them).
pub(super) fn grants(roots: &[PathBuf], protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        carve(root, protected, &mut out);
    }
    out
}

fn carve(dir: &Path, protected: &[PathBuf], out: &mut Vec<PathBuf>) {
    if protected.iter().any(|p| p == dir) {
        return;
    }
    if !protected.iter().any(|p| p.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir() || t.is_file()))
        .map(|e| e.path())
        .collect();
    children.sort();
    for child in children {
        carve(&child, protected, out);
    }
}

/// `oi-tui __sandbox-exec … --` for these grants.
pub(super) fn prefix(
    grants: &[PathBuf],
    private: &Private,
    network: Network,
    exe: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        exe.into(),
        TRAMPOLINE.into(),
        "--landlock".into(),
        "--own-processes".into(),
    ];
    for path in grants.iter().chain([&private.tmp, &private.figures]) {
        args.push("--write".into());
        args.push(path.clone().into());
    }
    args.push("--tmpdir".into());
    args.push(private.tmp.clone().into());
    for (flag, dir) in [
        ("--private", &private.root),
        ("--kernels", &private.kernels),
        ("--figures", &private.figures),
    ] {
        args.push(flag.into());
        args.push(dir.clone().into());
    }
    args.extend(super::exec_guard::args(&super::deny_rules()));
    if network == Network::Off {
        args.push("--no-network".into());
    }
    args.push("--".into());
    args
}

/// What the trampoline was told.
#[derive(Debug, PartialEq)]
struct Plan {
    /// Restrict with Landlock (else only `foreground`).
    landlock: bool,
    /// Become the terminal's foreground process group first.
    foreground: bool,
    /// Run in a PID namespace of its own (see `pid_ns`).
    own_processes: bool,
    /// The user's oi-tui directory, to hide but for this process's kernels and figures.
    private: Option<PathBuf>,
    kernels: Option<PathBuf>,
    figures: Option<PathBuf>,
    writable: Vec<PathBuf>,
    /// The blocks' temp dir, set as `$TMPDIR`.
    tmpdir: Option<PathBuf>,
    /// Deny rules to enforce as programs start (see `exec_guard`).
    deny: Vec<String>,
    network: Network,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Plan, String> {
    let mut plan = Plan {
        landlock: false,
        foreground: false,
        own_processes: false,
        private: None,
        kernels: None,
        figures: None,
        writable: Vec::new(),
        tmpdir: None,
        deny: Vec::new(),
        network: Network::On,
        program: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--write") => match it.next() {
                Some(dir) => plan.writable.push(PathBuf::from(dir)),
                None => return Err("--write needs a directory".to_string()),
            },
            Some(flag @ ("--private" | "--kernels" | "--figures")) => match it.next() {
                Some(dir) => {
                    let dir = PathBuf::from(dir);
                    match flag {
                        "--private" => plan.private = Some(dir),
                        "--kernels" => plan.kernels = Some(dir),
                        _ => plan.figures = Some(dir),
                    }
                }
                None => return Err(format!("{flag} needs a directory")),
            },
            Some("--tmpdir") => match it.next() {
                Some(dir) => plan.tmpdir = Some(PathBuf::from(dir)),
                None => return Err("--tmpdir needs a directory".to_string()),
            },
            Some("--deny") => match it.next().and_then(|r| r.to_str()) {
                Some(rule) => plan.deny.push(rule.to_string()),
                None => return Err("--deny needs a rule".to_string()),
            },
            Some("--no-network") => plan.network = Network::Off,
            Some("--landlock") => plan.landlock = true,
            Some("--foreground") => plan.foreground = true,
            Some("--own-processes") => plan.own_processes = true,
            Some("--") => {
                plan.program = it.cloned().collect();
                break;
            }
            _ => {
                return Err(format!(
                    "unexpected argument {}",
                    crate::safe_text::visible(&arg.to_string_lossy())
                ));
            }
        }
    }
    if plan.program.is_empty() {
        return Err("no program to run after --".to_string());
    }
    Ok(plan)
}

fn restrict(plan: &Plan) -> Result<(), String> {
    let fail = |e: landlock::RulesetError| format!("cannot set up Landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(fail)?;
    // Signals to processes outside the sandbox (oi-tui itself among them): where the
    // kernel's Landlock knows how to refuse them.
    ruleset = ruleset.scope(Scope::Signal).map_err(fail)?;
    if plan.network == Network::Off {
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| {
                format!("cannot turn the network off: this kernel's Landlock is too old ({e})")
            })?
            .set_compatibility(CompatLevel::BestEffort)
            .scope(Scope::AbstractUnixSocket)
            .map_err(fail)?;
    }
    let mut writable = plan.writable.clone();
    writable.extend(DEVICES.iter().map(PathBuf::from).filter(|p| p.exists()));
    let status = ruleset
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(&writable, AccessFs::from_all(FS_ABI)))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    if plan.network == Network::Off {
        super::seccomp::deny_datagram_and_raw_sockets()
            .map_err(|e| format!("cannot turn the network off: {e}"))?;
    }
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced by this kernel".to_string());
    }
    Ok(())
}

/// Puts this process in a Landlock domain that limits nothing of the file system (bubblewrap's
/// mounts do that): a process in a domain cannot trace, or read the memory of, a process
/// outside it, nor signal it. Under bubblewrap that keeps blocks away from bubblewrap's own
/// first process, which is of their user and not filtered (a block traced it into running
/// a denied program, and into typing into the person's terminal). Without Landlock, tracing
/// is refused by a seccomp filter instead (by the tracer's, when deny rules exist).
fn domain_only(tracer_follows: bool) -> Result<(), String> {
    let fail = |e: landlock::RulesetError| format!("cannot set up Landlock: {e}");
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(FS_ABI))
        .map_err(fail)?
        .scope(Scope::Signal)
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_all(FS_ABI)))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced && !tracer_follows {
        return super::seccomp::deny_tracing();
    }
    Ok(())
}

/// Makes this process a process group of its own and the terminal's foreground group (when
/// standard input is a terminal).
fn take_foreground() {
    // SAFETY: plain process-group and terminal calls on this process and its stdin; the
    // SIGTTOU disposition is put back before exec.
    unsafe {
        if libc::isatty(0) != 1 {
            return;
        }
        if libc::setpgid(0, 0) != 0 {
            return;
        }
        let old = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        libc::tcsetpgrp(0, libc::getpid());
        libc::signal(libc::SIGTTOU, old);
    }
}

/// The trampoline: restrict this process, then become the program. Returns only on failure,
/// with the exit status to use.
pub fn trampoline_main(args: &[OsString]) -> i32 {
    let plan = match parse(args) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("oi-tui {TRAMPOLINE}: {e}");
            return 2;
        }
    };
    if plan.foreground {
        take_foreground();
    }
    if let Err(e) = super::seccomp::deny_terminal_typing() {
        eprintln!("oi-tui sandbox: {e}");
        return 126;
    }
    let inside = if plan.own_processes {
        let view = super::view::View {
            private_root: plan.private.clone(),
            keep: [&plan.kernels, &plan.tmpdir, &plan.figures]
                .into_iter()
                .flatten()
                .cloned()
                .collect(),
        };
        match super::pid_ns::enter(&view) {
            Ok(super::pid_ns::Side::Outside(code)) => return code,
            Ok(super::pid_ns::Side::Inside(reporter)) => {
                take_foreground();
                Some(reporter)
            }
            Err(e) => {
                eprintln!(
                    "oi-tui sandbox: blocks can see this machine's other processes, as no process namespace could be made ({e})"
                );
                None
            }
        }
    } else {
        None
    };
    if let Some(tmpdir) = &plan.tmpdir {
        // SAFETY: the trampoline is single-threaded; nothing else reads the environment.
        unsafe { std::env::set_var("TMPDIR", tmpdir) };
    }
    // The sandbox's own restriction, in the program's process: a tracer or a namespace's
    // first process stays outside it, where the program cannot trace it.
    let confine = || {
        if plan.landlock {
            return restrict(&plan);
        }
        domain_only(!plan.deny.is_empty())?;
        // Bubblewrap's network namespace holds nothing to reach, but `AF_VSOCK` (to the
        // host of a virtual machine) and the like are not in a network namespace.
        if plan.network == Network::Off {
            super::seccomp::deny_datagram_and_raw_sockets()
                .map_err(|e| format!("cannot turn the network off: {e}"))?;
        }
        Ok(())
    };
    let status = if !plan.deny.is_empty() {
        super::tracer::run(&plan.program, &plan.deny, &confine)
    } else if inside.is_some() {
        match super::tracer::c_strings(&plan.program) {
            Some(argv) => super::pid_ns::run_init(&argv, &confine).unwrap_or_else(|e| {
                eprintln!("oi-tui sandbox: {e}");
                super::tracer::exited(126)
            }),
            None => {
                eprintln!("oi-tui sandbox: the program's arguments hold a NUL byte");
                super::tracer::exited(2)
            }
        }
    } else {
        if let Err(e) = confine() {
            eprintln!("oi-tui sandbox: {e}");
            return 126;
        }
        let err = std::process::Command::new(&plan.program[0])
            .args(&plan.program[1..])
            .exec();
        eprintln!(
            "oi-tui sandbox: cannot run {}: {err}",
            crate::safe_text::visible(&plan.program[0].to_string_lossy())
        );
        return 127;
    };
    if let Some(reporter) = &inside {
        reporter.report(status);
    }
    super::tracer::ended(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_round_trips_through_the_parser() {
        let roots = vec![PathBuf::from("/home/ada/x y")];
        let private = Private {
            root: PathBuf::from("/p"),
            kernels: PathBuf::from("/p/k"),
            figures: PathBuf::from("/p/f"),
            tmp: PathBuf::from("/p/t"),
        };
        let mut args = prefix(&roots, &private, Network::Off, Path::new("/x/oi-tui"));
        assert_eq!(args[1], OsString::from(TRAMPOLINE));
        assert_eq!(args[0], OsString::from("/x/oi-tui"));
        args.push("python3".into());
        args.push("-i".into());
        let plan = parse(&args[2..]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            plan.writable,
            vec![
                roots[0].clone(),
                private.tmp.clone(),
                private.figures.clone()
            ]
        );
        assert_eq!(plan.tmpdir, Some(private.tmp.clone()));
        assert!(plan.landlock && plan.own_processes && !plan.foreground);
        assert_eq!(plan.network, Network::Off);
        assert_eq!(plan.program, vec![OsString::from("python3"), "-i".into()]);
        assert!(parse(&["--write".into()]).is_err());
        assert!(parse(&["--".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
        assert!(parse(&["--tmpdir".into()]).is_err());
    }

    /// A workspace that holds oi-tui's files is granted entry by entry, without them and
    /// without the directories that lead to them; a workspace that holds none is granted
    /// whole; links are never granted.
    #[test]
    fn grants_leave_out_protected_paths_and_the_way_to_them() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let h = home.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        for dir in [
            ".config/oi-tui",
            ".config/other",
            "proj/src",
            ".local/share/oi-tui",
        ] {
            std::fs::create_dir_all(h.join(dir)).unwrap_or_else(|e| panic!("{e}"));
        }
        std::fs::write(h.join("notes.txt"), "x").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("/etc", h.join("etc-link")).unwrap_or_else(|e| panic!("{e}"));
        let protected = vec![h.join(".config/oi-tui"), h.join(".local/share/oi-tui")];
        let got = grants(std::slice::from_ref(&h), &protected);
        assert!(got.contains(&h.join("proj")), "{got:?}");
        assert!(got.contains(&h.join("notes.txt")), "{got:?}");
        assert!(got.contains(&h.join(".config/other")), "{got:?}");
        for never in [
            h.clone(),
            h.join(".config"),
            h.join(".config/oi-tui"),
            h.join(".local"),
            h.join(".local/share"),
            h.join(".local/share/oi-tui"),
            h.join("etc-link"),
        ] {
            assert!(!got.contains(&never), "{never:?} in {got:?}");
        }
        let elsewhere = h.join("proj");
        assert_eq!(
            grants(std::slice::from_ref(&elsewhere), &protected),
            vec![elsewhere]
        );
    }
}
