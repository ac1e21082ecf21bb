//! Whether a session is in the store whole. A session is marked open (`open_by`: the process
//! that writes it) when its first record is written, and the mark is cleared only once
//! everything that process was handed is in the store. So a session whose writer is gone
//! while the mark stays was not written whole: its last writes failed (a full disk, a
//! file-size limit) or oi-tui was killed; and a crash shows it as well as a failed write.
//! What is known to be missing (steps that did not fit in memory while the store failed)
//! is said in `missing`.

/// What `sessions list` and `sessions show` say of a session whose writer stopped with the
/// mark still set.
pub const STOPPED_EARLY: &str = "oi-tui stopped before it had written all of this session to the store (its last writes failed, e.g. on a full disk or past a file-size limit, or it was killed); what came after the last record saved is missing";

/// This process as `open_by` names it: `pid start-time` (the start time in clock ticks
/// since boot, so that a later process with the same pid is not taken for it).
pub(super) fn this_process() -> String {
    let pid = std::process::id();
    match start_time(pid) {
        Some(start) => format!("{pid} {start}"),
        None => pid.to_string(),
    }
}

/// Whether the process an `open_by` names still runs (and may still be writing).
pub(super) fn still_running(open_by: &str) -> bool {
    let mut parts = open_by.split_whitespace();
    let Some(pid) = parts.next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    let Ok(id) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    let exists = unsafe { libc::kill(id, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    match (
        parts.next().and_then(|s| s.parse::<u64>().ok()),
        start_time(pid),
    ) {
        (Some(recorded), Some(now)) => recorded == now,
        _ => true,
    }
}

/// Why a session is not in the store whole, in a sentence; None when it is (or when the
/// process writing it still runs).
pub fn why_incomplete(open_by: Option<&str>, missing: Option<&str>) -> Option<String> {
    let stopped = open_by.is_some_and(|by| !still_running(by));
    match (missing.filter(|m| !m.trim().is_empty()), stopped) {
        (Some(missing), true) => Some(format!("{missing}; and {STOPPED_EARLY}")),
        (Some(missing), false) => Some(missing.to_string()),
        (None, true) => Some(STOPPED_EARLY.to_string()),
        (None, false) => None,
    }
}

/// A process's start time in clock ticks since boot (`/proc/<pid>/stat`, field 22).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_running_and_a_finished_one_is_not() {
        let me = this_process();
        assert!(still_running(&me), "{me}");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let mark = match start_time(pid) {
            Some(start) => format!("{pid} {start}"),
            None => pid.to_string(),
        };
        child.wait().unwrap();
        assert!(!still_running(&mark), "{mark}");
        // The same pid with another start time is another process.
        let pid = std::process::id();
        assert!(!still_running(&format!("{pid} 1")) || start_time(pid) == Some(1));
        assert!(!still_running("not a pid"));
    }

    #[test]
    fn the_reason_says_what_is_known() {
        assert_eq!(why_incomplete(None, None), None);
        assert_eq!(why_incomplete(Some(&this_process()), None), None);
        let gone = "999999999 5";
        assert_eq!(
            why_incomplete(Some(gone), None).as_deref(),
            Some(STOPPED_EARLY)
        );
        let why = why_incomplete(Some(gone), Some("2 steps did not fit")).unwrap();
        assert!(
            why.starts_with("2 steps did not fit; and oi-tui stopped"),
            "{why}"
        );
        assert_eq!(
            why_incomplete(None, Some("2 steps did not fit")).as_deref(),
            Some("2 steps did not fit")
        );
    }
}
