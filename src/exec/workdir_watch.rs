//! Finding the image files a block wrote under a directory on Linux, at the cost of one
//! `read` when it wrote none: inotify watches on the tree's directories (as deep and as
//! many as `workdir_scan` looks) report each file closed after writing, moved in or
//! created, and each new directory (watched in turn). A file counts as the block's when its
//! modification time is at or after the block's start. When inotify cannot be used (no
//! instance or watch left for the user) or its queue overflowed, the caller looks through
//! the tree instead (`workdir_scan`).

use std::collections::{HashMap, HashSet};
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::workdir_scan::{descend, list, modified};
use crate::protocol::ImageFormat;

const MASK: u32 = libc::IN_CLOSE_WRITE
    | libc::IN_MOVED_TO
    | libc::IN_CREATE
    | libc::IN_ONLYDIR
    | libc::IN_DONT_FOLLOW
    | libc::IN_EXCL_UNLINK;

/// The watches on one tree.
#[derive(Debug)]
pub(crate) struct Watch {
    fd: OwnedFd,
    /// Each watched directory by its watch descriptor, with its depth below the root.
    dirs: HashMap<i32, (PathBuf, usize)>,
    entries: usize,
    /// The tree had more entries than are watched.
    pub cut: bool,
    /// A watch could not be added for want of watches: the tree is not wholly watched.
    short: bool,
}

impl Watch {
    /// Watches the tree under `root`, and adds to `out` the image files in it modified at
    /// or after `since`. None when inotify cannot watch it whole.
    pub fn start(
        root: &Path,
        since: SystemTime,
        ignored: &[PathBuf],
        out: &mut Vec<PathBuf>,
    ) -> Option<Watch> {
        // SAFETY: inotify_init1(2) takes flags and returns a new descriptor or -1.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just returned by inotify_init1 and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut watch = Watch {
            fd,
            dirs: HashMap::new(),
            entries: 0,
            cut: false,
            short: false,
        };
        watch.add(root, 0, since, ignored, out);
        (!watch.short && !watch.dirs.is_empty()).then_some(watch)
    }

    /// Watches `dir` and walks it: directories not watched yet are watched in turn, image
    /// files modified since `since` are added to `out`.
    fn add(
        &mut self,
        dir: &Path,
        depth: usize,
        since: SystemTime,
        ignored: &[PathBuf],
        out: &mut Vec<PathBuf>,
    ) {
        if ignored.iter().any(|i| dir.starts_with(i)) {
            return;
        }
        let Ok(name) = CString::new(dir.as_os_str().as_bytes()) else {
            return;
        };
        // SAFETY: a valid descriptor, a NUL-terminated path and a mask.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), name.as_ptr(), MASK) };
        if wd < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSPC) {
                self.short = true;
            }
            return;
        }
        self.dirs.insert(wd, (dir.to_path_buf(), depth));
        let Some(listing) = list(dir, depth, &mut self.entries, &mut self.cut) else {
            return;
        };
        out.extend(
            listing
                .images
                .into_iter()
                .filter(|path| modified(path).is_some_and(|t| t >= since)),
        );
        for sub in listing.dirs {
            self.add(&sub, depth + 1, since, ignored, out);
        }
    }

    /// The image files written since `since`, from what happened in the tree since the
    /// last call. None: too much happened to know (the queue overflowed).
    pub fn written_since(
        &mut self,
        since: SystemTime,
        ignored: &[PathBuf],
    ) -> Option<Vec<PathBuf>> {
        let mut out = Vec::new();
        let mut candidates = HashSet::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // SAFETY: reads at most `buf.len()` bytes into `buf`, which is that long.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            let Ok(n) = usize::try_from(n) else {
                break; // EAGAIN: nothing more queued.
            };
            if n == 0 {
                break;
            }
            let mut at = 0;
            // Each event: wd (i32), mask (u32), cookie (u32), len (u32), then `len` bytes of
            // name padded with NULs; reads return whole events only.
            while at + 16 <= n {
                let field = |i: usize| {
                    [
                        buf[at + i],
                        buf[at + i + 1],
                        buf[at + i + 2],
                        buf[at + i + 3],
                    ]
                };
                let wd = i32::from_ne_bytes(field(0));
                let mask = u32::from_ne_bytes(field(4));
                let len = u32::from_ne_bytes(field(12)) as usize;
                let end = (at + 16 + len).min(n);
                let raw = &buf[at + 16..end];
                let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
                at = end;
                if mask & libc::IN_Q_OVERFLOW != 0 {
                    return None;
                }
                if mask & libc::IN_IGNORED != 0 {
                    self.dirs.remove(&wd);
                    continue;
                }
                let Some((dir, depth)) = self.dirs.get(&wd).cloned() else {
                    continue;
                };
                let path = dir.join(OsStr::from_bytes(name));
                if mask & libc::IN_ISDIR != 0 {
                    if mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0
                        && descend(OsStr::from_bytes(name), depth)
                        && !self.cut
                    {
                        self.add(&path, depth + 1, since, ignored, &mut out);
                    }
                } else if ImageFormat::from_path(&path).is_some() {
                    candidates.insert(path);
                }
            }
        }
        if self.short {
            return None;
        }
        out.extend(candidates.into_iter().filter(|path| {
            std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
                && modified(path).is_some_and(|t| t >= since)
        }));
        out.sort();
        out.dedup();
        Some(out)
    }
}
