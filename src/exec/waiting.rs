//! Noticing a block that waits for keyboard input: a process of the terminal's foreground
//! group is asleep in a system call that reads the terminal (`read` on it, or `poll`,
//! `select` or `epoll_wait` watching it for input, as readline, libuv and curses do).
//!
//! Linux only, from /proc: the session's process tree (`task/*/children`, or a scan of
//! /proc where that file is missing), each thread's `syscall` line, the descriptors in
//! `fd/`, and for the polling calls the watched descriptors (`mem` for poll and select,
//! `fdinfo` for epoll). The kernels are this process's descendants, so reading their
//! /proc entries needs no privilege. Elsewhere the answer is always "no".
//!
//! The caller asks only while a block runs and has printed nothing for a while, a few times
//! a second, so a check costs a few small reads, not a loop.

use std::path::Path;

/// The processes of the foreground group `group`, in the session led by `session`, that are
/// blocked reading the terminal `tty` (none outside Linux).
pub(crate) fn terminal_readers(session: i32, group: i32, tty: &Path) -> Vec<i32> {
    #[cfg(target_os = "linux")]
    {
        linux::terminal_readers(session, group, tty)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (session, group, tty);
        Vec::new()
    }
}

/// A blocked thread's system call: its number and its six arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Syscall {
    pub nr: i64,
    pub args: [u64; 6],
}

/// Parses a `/proc/PID/task/TID/syscall` line; None when the thread runs or is not in a
/// system call.
pub(crate) fn parse_syscall(line: &str) -> Option<Syscall> {
    let mut parts = line.split_whitespace();
    let nr: i64 = parts.next()?.parse().ok()?;
    if nr < 0 {
        return None;
    }
    let mut args = [0u64; 6];
    for arg in &mut args {
        let text = parts.next()?;
        *arg = u64::from_str_radix(text.trim_start_matches("0x"), 16).ok()?;
    }
    Some(Syscall { nr, args })
}

/// How a system call can wait for the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// read, readv, pread: the descriptor is the first argument.
    Read,
    /// poll, ppoll: an array of `pollfd` and its length.
    Poll,
    /// select, pselect6: the number of descriptors and the read set.
    Select,
    /// epoll_wait and friends: the epoll descriptor.
    Epoll,
}

/// The waits of this architecture's system call numbers.
pub(crate) fn classify(nr: i64) -> Option<Wait> {
    #[cfg(target_arch = "x86_64")]
    let wait = match nr {
        0 | 17 | 19 => Some(Wait::Read),
        7 | 271 => Some(Wait::Poll),
        23 | 270 => Some(Wait::Select),
        232 | 281 | 441 => Some(Wait::Epoll),
        _ => None,
    };
    #[cfg(target_arch = "aarch64")]
    let wait = match nr {
        63 | 65 | 67 => Some(Wait::Read),
        73 => Some(Wait::Poll),
        72 => Some(Wait::Select),
        22 | 441 => Some(Wait::Epoll),
        _ => None,
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let wait = {
        let _ = nr;
        None
    };
    wait
}

/// The descriptors an epoll instance watches for input, from its `fdinfo` text.
pub(crate) fn epoll_input_fds(fdinfo: &str) -> Vec<i32> {
    let mut fds = Vec::new();
    for line in fdinfo.lines() {
        let Some(rest) = line.strip_prefix("tfd:") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(fd) = words.next().and_then(|w| w.parse::<i32>().ok()) else {
            continue;
        };
        let events = words
            .skip_while(|w| *w != "events:")
            .nth(1)
            .and_then(|e| u32::from_str_radix(e, 16).ok())
            .unwrap_or(0);
        // EPOLLIN
        if events & 0x1 != 0 {
            fds.push(fd);
        }
    }
    fds
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::HashSet;
    use std::os::unix::fs::FileExt;
    use std::path::Path;

    use super::{Wait, classify, epoll_input_fds, parse_syscall};

    /// The most processes looked at in one check.
    const MAX_PROCESSES: usize = 256;

    pub fn terminal_readers(session: i32, group: i32, tty: &Path) -> Vec<i32> {
        members(session, group)
            .into_iter()
            .filter(|&pid| reads_terminal(pid, tty))
            .collect()
    }

    /// (state, parent, group, session) from `/proc/PID/stat`.
    fn stat(pid: i32) -> Option<(char, i32, i32, i32)> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &text[text.rfind(')')? + 1..];
        let mut fields = after.split_whitespace();
        let state = fields.next()?.chars().next()?;
        let parent = fields.next()?.parse().ok()?;
        let group = fields.next()?.parse().ok()?;
        let session = fields.next()?.parse().ok()?;
        Some((state, parent, group, session))
    }

    /// The processes of `group` in the session: the session's tree walked from its leader,
    /// or, without `children` files, every process of /proc looked at.
    fn members(session: i32, group: i32) -> Vec<i32> {
        let mut found = Vec::new();
        let mut queue = vec![session];
        let mut seen = HashSet::new();
        let mut tree_known = true;
        while let Some(pid) = queue.pop() {
            if !seen.insert(pid) || seen.len() > MAX_PROCESSES {
                continue;
            }
            if let Some((_, _, g, s)) = stat(pid)
                && g == group
                && s == session
            {
                found.push(pid);
            }
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                match std::fs::read_to_string(task.path().join("children")) {
                    Ok(children) => queue.extend(
                        children
                            .split_whitespace()
                            .filter_map(|c| c.parse::<i32>().ok()),
                    ),
                    Err(_) => tree_known = false,
                }
            }
        }
        if tree_known {
            return found;
        }
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return found;
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|&pid| stat(pid).is_some_and(|(_, _, g, s)| g == group && s == session))
            .take(MAX_PROCESSES)
            .collect()
    }

    /// Whether a thread of `pid` sleeps in a system call that waits for input on `tty`.
    fn reads_terminal(pid: i32, tty: &Path) -> bool {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return false;
        };
        for task in tasks.flatten() {
            let Ok(line) = std::fs::read_to_string(task.path().join("syscall")) else {
                continue;
            };
            let Some(call) = parse_syscall(&line) else {
                continue;
            };
            let Some(wait) = classify(call.nr) else {
                continue;
            };
            let is_tty = |fd: i32| is_terminal(pid, fd, tty);
            let waits = match wait {
                Wait::Read => i32::try_from(call.args[0]).is_ok_and(is_tty),
                Wait::Poll => poll_fds(pid, call.args[0], call.args[1])
                    .into_iter()
                    .any(is_tty),
                Wait::Select => select_fds(pid, call.args[0], call.args[1])
                    .into_iter()
                    .any(is_tty),
                Wait::Epoll => i32::try_from(call.args[0]).is_ok_and(|epfd| {
                    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{epfd}"))
                        .map(|info| epoll_input_fds(&info).into_iter().any(is_tty))
                        .unwrap_or(false)
                }),
            };
            if waits {
                return true;
            }
        }
        false
    }

    /// Whether descriptor `fd` of `pid` is the terminal.
    fn is_terminal(pid: i32, fd: i32, tty: &Path) -> bool {
        std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
            .is_ok_and(|target| target == tty || target == Path::new("/dev/tty"))
    }

    /// Reads `len` bytes of `pid`'s memory at `address`.
    fn memory(pid: i32, address: u64, len: usize) -> Option<Vec<u8>> {
        if address == 0 || len == 0 || len > 64 * 1024 {
            return None;
        }
        let file = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, address).ok()?;
        Some(buf)
    }

    /// The descriptors a `poll` waits on for input: `struct pollfd { int fd; short events;
    /// short revents; }`.
    fn poll_fds(pid: i32, address: u64, count: u64) -> Vec<i32> {
        let Some(bytes) = usize::try_from(count)
            .ok()
            .and_then(|n| memory(pid, address, n.saturating_mul(8)))
        else {
            return Vec::new();
        };
        bytes
            .chunks_exact(8)
            .filter_map(|p| {
                let fd = i32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
                let events = i16::from_ne_bytes([p[4], p[5]]);
                // POLLIN | POLLPRI
                (fd >= 0 && events & 0x3 != 0).then_some(fd)
            })
            .collect()
    }

    /// The descriptors of a `select`'s read set.
    fn select_fds(pid: i32, nfds: u64, address: u64) -> Vec<i32> {
        let Ok(n) = usize::try_from(nfds) else {
            return Vec::new();
        };
        // The set is an array of longs.
        let len = n.div_ceil(64) * 8;
        let Some(bytes) = memory(pid, address, len) else {
            return Vec::new();
        };
        (0..n)
            .filter(|&fd| bytes[fd / 8] & (1 << (fd % 8)) != 0)
            .filter_map(|fd| i32::try_from(fd).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_lines() {
        let line =
            "0 0x0 0x5648576d58b0 0x2000 0x7f15de9b5b58 0x0 0x0 0x7ffd1ab479c8 0x7f15deb162ad";
        let call = parse_syscall(line).unwrap();
        assert_eq!(call.nr, 0);
        assert_eq!(call.args[0], 0);
        assert_eq!(call.args[2], 0x2000);
        assert_eq!(parse_syscall("running"), None);
        assert_eq!(parse_syscall("-1 0x7ffd1ab479c8 0x7f15deb162ad"), None);
    }

    #[test]
    fn epoll_fdinfo() {
        let info = "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\ntfd:        0 events:       19 data:                0  pos:0 ino:3 sdev:18\ntfd:        5 events:        4 data:                5  pos:0 ino:9 sdev:e\n";
        assert_eq!(epoll_input_fds(info), vec![0]);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn read_and_sleep_calls() {
        assert_eq!(classify(0), Some(Wait::Read));
        assert_eq!(classify(7), Some(Wait::Poll));
        assert_eq!(classify(232), Some(Wait::Epoll));
        // clock_nanosleep (time.sleep) is not a wait for input.
        assert_eq!(classify(230), None);
    }
}
