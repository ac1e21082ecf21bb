//! The Landlock backend: kernels start as `oi-tui __sandbox-exec --landlock [--write DIR]…
//! [--no-network] -- PROGRAM ARGS…`, which restricts itself with Landlock (read and execute
//! everywhere, write only under the writable roots and `/dev`; with the network off, no TCP
//! connect or bind at all, Landlock ABI ≥ 4) and then `exec`s the program. The restriction
//! is inherited by everything the kernel starts and cannot be lifted. No namespaces needed.
//!
//! Landlock only grants, never takes back below a grant, so a `.git` directory inside the
//! workspace stays writable under this backend; UDP and Unix sockets are not covered.
//!
//! The same trampoline serves bubblewrap with `--foreground` alone: inside the sandbox it
//! makes the kernel the terminal's foreground process group, apart from bwrap.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, path_beneath_rules,
};

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

/// `oi-tui __sandbox-exec … --` for these writable roots.
pub(super) fn prefix(roots: &[PathBuf], network: Network, exe: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![exe.into(), TRAMPOLINE.into(), "--landlock".into()];
    for root in roots {
        args.push("--write".into());
        args.push(root.clone().into());
    }
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
    writable: Vec<PathBuf>,
    network: Network,
    program: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Plan, String> {
    let mut plan = Plan {
        landlock: false,
        foreground: false,
        writable: Vec::new(),
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
            Some("--no-network") => plan.network = Network::Off,
            Some("--landlock") => plan.landlock = true,
            Some("--foreground") => plan.foreground = true,
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
    if plan.network == Network::Off {
        ruleset = ruleset
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)
            .map_err(|e| {
                format!("cannot turn the network off: this kernel's Landlock is too old ({e})")
            })?;
    }
    let mut writable = plan.writable.clone();
    writable.push(PathBuf::from("/dev"));
    let status = ruleset
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))
        .map_err(fail)?
        .add_rules(path_beneath_rules(&writable, AccessFs::from_all(FS_ABI)))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced by this kernel".to_string());
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
    if plan.landlock
        && let Err(e) = restrict(&plan)
    {
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
    127
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_round_trips_through_the_parser() {
        let roots = vec![PathBuf::from("/tmp"), PathBuf::from("/home/ada/x y")];
        let mut args = prefix(&roots, Network::Off, Path::new("/x/oi-tui"));
        assert_eq!(args[1], OsString::from(TRAMPOLINE));
        assert_eq!(args[0], OsString::from("/x/oi-tui"));
        args.push("python3".into());
        args.push("-i".into());
        let plan = parse(&args[2..]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.writable, roots);
        assert!(plan.landlock && !plan.foreground);
        assert_eq!(plan.network, Network::Off);
        assert_eq!(plan.program, vec![OsString::from("python3"), "-i".into()]);
        assert!(parse(&["--write".into()]).is_err());
        assert!(parse(&["--".into()]).is_err());
        assert!(parse(&["--bogus".into()]).is_err());
    }
}
