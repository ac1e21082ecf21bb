//! Nothing left behind. Every kernel is the leader of its own session (the PTY's), and every
//! live session is registered here, so that on exit, panic, SIGTERM or SIGHUP all of them can
//! be killed: the interpreter and everything its code started, background jobs included.
//!
//! A process the code deliberately detached is spared: one that left the session (`setsid`)
//! is not a member any more, and one that ignores SIGHUP (`nohup`) asked to outlive its
//! terminal. The leader itself is always killed.

use std::sync::Mutex;

static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

pub(crate) fn register(session: i32) {
    if let Ok(mut live) = LIVE.lock() {
        live.push(session);
    }
}

pub(crate) fn unregister(session: i32) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|&s| s != session);
    }
}

/// Kills every registered kernel session. Safe to call from a panic hook or at exit; it
/// never blocks on a lock held elsewhere.
pub fn kill_all() {
    let sessions = match LIVE.try_lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for session in sessions {
        kill_session_reporting(session);
    }
    super::remote::kill_all();
    super::tempdirs::remove_all();
}

/// The variable every kernel's processes carry: the pid of the oi-tui that started them.
pub const OWNER_VAR: &str = "OI_TUI_OWNER";

/// Live processes (other than oi-tui) whose environment says this oi-tui started them.
#[cfg(target_os = "linux")]
fn carrying_owner() -> Vec<Survivor> {
    let own = std::process::id() as i32;
    let needle = format!("{OWNER_VAR}={own}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own)
        .filter(|&pid| proc_stat(pid).is_some_and(|s| s.state != 'Z' && s.state != 'X'))
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == needle.as_bytes()))
        })
        .map(|pid| Survivor {
            pid,
            name: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .map(|n| n.trim().to_string())
                .unwrap_or_default(),
        })
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn carrying_owner() -> Vec<Survivor> {
    Vec::new()
}

/// Processes blocks detached (`setsid`, `nohup`) that outlived the kernels killed on the
/// way out: oi-tui leaves them running, and says so.
static LEFT_RUNNING: Mutex<Vec<Survivor>> = Mutex::new(Vec::new());

/// What `kill_all` left running (detached processes still alive), as a sentence for the
/// person; None when nothing was. Taken once.
pub fn left_running() -> Option<String> {
    let mut left: Vec<Survivor> = LEFT_RUNNING
        .try_lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
        .into_iter()
        .filter(|s| proc_alive(s.pid))
        .collect();
    // Those that left the kernel's process tree too (`setsid -f`, a daemon's double fork)
    // still carry the variable every kernel's process has.
    left.extend(carrying_owner());
    left.sort_by_key(|s| s.pid);
    left.dedup_by_key(|s| s.pid);
    // A kernel's own process killed a moment ago (a sandbox's bwrap) may still be on its
    // way out: what is gone within a short while was not left running.
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while !left.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(25));
        left.retain(|s| still_running(s.pid));
    }
    if left.is_empty() {
        return None;
    }
    let pids: Vec<String> = left.iter().map(|s| s.pid.to_string()).collect();
    let named: Vec<String> = left
        .iter()
        .map(|s| format!("{} ({})", s.pid, s.name))
        .collect();
    Some(format!(
        "left running what blocks detached (setsid or nohup): {}. Stop {} with: kill {}",
        named.join(", "),
        if left.len() == 1 { "it" } else { "them" },
        pids.join(" ")
    ))
}

/// Alive and not a zombie (a zombie has ended; only its parent has not reaped it).
fn still_running(pid: i32) -> bool {
    #[cfg(target_os = "linux")]
    let ended = proc_stat(pid).is_some_and(|s| s.state == 'Z' || s.state == 'X');
    #[cfg(not(target_os = "linux"))]
    let ended = false;
    proc_alive(pid) && !ended
}

fn proc_alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

/// A process a kernel started that outlived the kernel's kill: it had detached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survivor {
    pub pid: i32,
    /// Its command name (`sleep`), when it could be read.
    pub name: String,
}

/// Kills the session led by `leader` like `kill_session`, and returns the processes it had
/// started that are still alive afterwards: those that left the session (`setsid`) or
/// ignore SIGHUP (`nohup`). Linux only; elsewhere none are known.
pub(crate) fn kill_session_reporting(leader: i32) -> Vec<Survivor> {
    #[cfg(target_os = "linux")]
    {
        let before = descendants(leader);
        kill_session(leader);
        if before.is_empty() {
            return Vec::new();
        }
        // SIGKILL is delivered at once, but a process takes a moment to become a zombie.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let survivors: Vec<Survivor> = before
            .into_iter()
            .filter(|&pid| proc_stat(pid).is_some_and(|s| s.state != 'Z' && s.state != 'X'))
            .map(|pid| Survivor {
                pid,
                name: std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|n| n.trim().to_string())
                    .unwrap_or_default(),
            })
            .collect();
        // Said again when oi-tui leaves, if they still run then.
        if !survivors.is_empty()
            && let Ok(mut left) = LEFT_RUNNING.try_lock()
        {
            left.extend(survivors.iter().cloned());
        }
        survivors
    }
    #[cfg(not(target_os = "linux"))]
    {
        kill_session(leader);
        Vec::new()
    }
}

/// Every live process descended from `root` (children, their children, ...), and every
/// live member of its session, whatever its parent now is.
#[cfg(target_os = "linux")]
fn descendants(root: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id() as i32;
    let table: Vec<(i32, i32, i32)> = dir
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own && pid != root)
        .filter_map(|pid| {
            let stat = proc_stat(pid)?;
            (stat.state != 'Z' && stat.state != 'X').then_some((pid, stat.parent, stat.session))
        })
        .collect();
    // The session's members, and then everything below the leader and below them.
    let mut found: Vec<i32> = table
        .iter()
        .filter(|&&(_, _, session)| session == root)
        .map(|&(pid, _, _)| pid)
        .collect();
    let mut seen: std::collections::HashSet<i32> = found.iter().copied().collect();
    let mut frontier = found.clone();
    frontier.push(root);
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, _) in &table {
            if ppid == parent && seen.insert(pid) {
                found.push(pid);
                frontier.push(pid);
            }
        }
        if found.len() > 4096 {
            break;
        }
    }
    found
}

/// Kills the session led by `leader`: the leader, and every member that does not ignore
/// SIGHUP. The caller must not have reaped the leader yet: its pid (alive or a zombie) is
/// what keeps the session id from being reused by an unrelated process meanwhile.
///
/// Members are stopped before they are killed, so that none can fork faster than they die.
pub(crate) fn kill_session(leader: i32) {
    if leader <= 1 {
        return;
    }
    #[cfg(not(target_os = "linux"))]
    {
        // SAFETY: killpg(2) on the kernel's own process group; no memory is involved.
        unsafe {
            libc::killpg(leader, libc::SIGKILL);
        }
        return;
    }
    #[cfg(target_os = "linux")]
    {
        signal(leader, libc::SIGSTOP);
        let doomed = || -> Vec<(i32, char)> {
            session_members(leader)
                .into_iter()
                .filter(|&(pid, _)| pid != leader && !ignores_sighup(pid))
                .collect()
        };
        for _ in 0..50 {
            let running: Vec<i32> = doomed()
                .into_iter()
                .filter(|&(_, state)| state != 'T' && state != 't')
                .map(|(pid, _)| pid)
                .collect();
            if running.is_empty() {
                break;
            }
            for pid in running {
                signal(pid, libc::SIGSTOP);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for (pid, _) in doomed() {
            signal(pid, libc::SIGKILL);
        }
        signal(leader, libc::SIGKILL);
    }
}

fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) on a member of a session we own; no memory is involved.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// The live (not zombie) processes whose session is `session`.
#[cfg(target_os = "linux")]
pub fn session_processes(session: i32) -> Vec<i32> {
    session_members(session)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

/// The live members of a session, with their state letter (`R`, `S`, `T`, ...).
#[cfg(target_os = "linux")]
fn session_members(session: i32) -> Vec<(i32, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id() as i32;
    dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own)
        .filter_map(|pid| {
            let stat = proc_stat(pid)?;
            (stat.session == session && stat.state != 'Z' && stat.state != 'X')
                .then_some((pid, stat.state))
        })
        .collect()
}

/// Elsewhere the process table cannot be read this way: the session's process group stands
/// in for it.
#[cfg(not(target_os = "linux"))]
pub fn session_processes(session: i32) -> Vec<i32> {
    // SAFETY: kill(2) with signal 0 only checks for existence.
    if unsafe { libc::kill(-session, 0) } == 0 {
        vec![session]
    } else {
        Vec::new()
    }
}

#[cfg(target_os = "linux")]
struct Stat {
    state: char,
    parent: i32,
    session: i32,
}

#[cfg(target_os = "linux")]
fn proc_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may itself hold spaces and parentheses.
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    let _pgrp = fields.next()?;
    let session = fields.next()?.parse().ok()?;
    Some(Stat {
        state,
        parent,
        session,
    })
}

#[cfg(target_os = "linux")]
fn ignores_sighup(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGHUP - 1)) != 0)
}

#[cfg(not(target_os = "linux"))]
fn ignores_sighup(_pid: i32) -> bool {
    false
}
