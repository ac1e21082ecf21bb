//! A directory held open, and what oi-tui does inside it through that descriptor: nothing
//! here follows a symbolic link, so a block that swaps a directory (or a file in it) for a
//! link between oi-tui's looking and its writing reaches nothing outside what was opened.

// The `stat` fields' and mode constants' types differ between platforms.
#![allow(clippy::unnecessary_cast)]

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path};

/// A directory opened without following a link at its last part.
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
}

/// A directory's identity: its device and inode.
pub(crate) type Identity = (u64, u64);

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::other("the name holds a NUL byte"))
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Whether `mode` (as `entry_mode` gives it) is a symbolic link's.
pub(crate) fn is_link_mode(mode: u32) -> bool {
    mode & libc::S_IFMT as u32 == libc::S_IFLNK as u32
}

/// Whether `mode` (as `entry_mode` gives it) is a directory's.
pub(crate) fn is_dir_mode(mode: u32) -> bool {
    mode & libc::S_IFMT as u32 == libc::S_IFDIR as u32
}

/// Whether an error is what opening a link with `O_NOFOLLOW` gives.
pub(crate) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

const DIR_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;

impl Dir {
    /// Opens `path`; an error when its last part is a link (ELOOP, or ENOTDIR as Linux
    /// says it) or not a directory (the parts before it are followed).
    pub(crate) fn open_nofollow(path: &Path) -> io::Result<Dir> {
        let name = c_name(path.as_os_str())?;
        // SAFETY: a valid NUL-terminated path; the descriptor returned is owned here.
        let fd = check(unsafe { libc::open(name.as_ptr(), DIR_FLAGS) })?;
        // SAFETY: `fd` is a fresh descriptor no one else owns.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Opens `path`, following links on the way (a directory the person named).
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let name = c_name(path.as_os_str())?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        // SAFETY: as in `open_nofollow`.
        let fd = check(unsafe { libc::open(name.as_ptr(), flags) })?;
        // SAFETY: as in `open_nofollow`.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Opens the directory `name` in this one, not through a link.
    pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let c = c_name(name)?;
        // SAFETY: a valid directory descriptor and NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), DIR_FLAGS) })?;
        // SAFETY: as in `open_nofollow`.
        Ok(Dir {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Walks `path` from `self` one part at a time, never through a link: the first part
    /// that is a link is named in the error (`ErrorKind::Other` with its path so far).
    pub(crate) fn walk(&self, path: &Path) -> Result<Dir, WalkError> {
        let mut dir = self.open_dir(OsStr::new(".")).map_err(WalkError::Io)?;
        let mut so_far = std::path::PathBuf::new();
        for part in path.components() {
            let name = match part {
                Component::CurDir => continue,
                Component::ParentDir => OsStr::new(".."),
                Component::Normal(name) => name,
                Component::RootDir | Component::Prefix(_) => {
                    return Err(WalkError::Io(io::Error::other("the path is not relative")));
                }
            };
            so_far.push(name);
            dir = match dir.open_dir(name) {
                Ok(next) => next,
                Err(e) if is_link_error(&e) || dir.is_link(name) => {
                    return Err(WalkError::Link(so_far));
                }
                Err(e) => return Err(WalkError::Io(e)),
            };
        }
        Ok(dir)
    }

    fn stat_raw(&self, name: Option<&OsStr>) -> io::Result<libc::stat> {
        // SAFETY: an all-zero `stat` is a valid value to be written over.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        match name {
            None => {
                // SAFETY: a valid descriptor and a `stat` to fill.
                check(unsafe { libc::fstat(self.fd.as_raw_fd(), &mut st) })?;
            }
            Some(name) => {
                let c = c_name(name)?;
                // SAFETY: a valid descriptor, name and `stat` to fill.
                check(unsafe {
                    libc::fstatat(
                        self.fd.as_raw_fd(),
                        c.as_ptr(),
                        &mut st,
                        libc::AT_SYMLINK_NOFOLLOW,
                    )
                })?;
            }
        }
        Ok(st)
    }

    /// This directory's device and inode.
    pub(crate) fn identity(&self) -> io::Result<Identity> {
        let st = self.stat_raw(None)?;
        Ok((st.st_dev as u64, st.st_ino as u64))
    }

    /// This directory's permission bits.
    pub(crate) fn mode(&self) -> io::Result<u32> {
        Ok(self.stat_raw(None)?.st_mode as u32 & 0o7777)
    }

    /// Sets this directory's permission bits (on the directory opened, not on a path).
    pub(crate) fn set_mode(&self, mode: u32) -> io::Result<()> {
        // SAFETY: a valid descriptor.
        check(unsafe { libc::fchmod(self.fd.as_raw_fd(), mode as libc::mode_t) })?;
        Ok(())
    }

    /// The entry `name`'s mode bits (type and permissions), not through a link; None when
    /// it does not exist.
    pub(crate) fn entry_mode(&self, name: &OsStr) -> io::Result<Option<u32>> {
        match self.stat_raw(Some(name)) {
            Ok(st) => Ok(Some(st.st_mode as u32)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether the entry `name` is a symbolic link.
    pub(crate) fn is_link(&self, name: &OsStr) -> bool {
        self.entry_mode(name)
            .ok()
            .flatten()
            .is_some_and(is_link_mode)
    }

    /// Where the link `name` points.
    pub(crate) fn read_link(&self, name: &OsStr) -> io::Result<OsString> {
        let c = c_name(name)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize];
        // SAFETY: a valid descriptor, name and buffer of the length given.
        let n = unsafe {
            libc::readlinkat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        Ok(OsString::from_vec(buf))
    }

    /// The names in this directory (not `.` and `..`), read through its descriptor.
    pub(crate) fn names(&self) -> io::Result<Vec<OsString>> {
        // SAFETY: duplicating a valid descriptor; the copy is handed to `fdopendir`, which
        // owns it from then on (closed by `closedir`).
        let dup = check(unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: `dup` is a directory descriptor of ours.
        let stream = unsafe { libc::fdopendir(dup) };
        if stream.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: `fdopendir` failed, so `dup` is still ours to close.
            unsafe { libc::close(dup) };
            return Err(e);
        }
        // SAFETY: rewinding a stream just opened (the offset is shared with `self`).
        unsafe { libc::rewinddir(stream) };
        let mut names = Vec::new();
        loop {
            // SAFETY: a valid stream; the entry is read before the next call.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                break;
            }
            // SAFETY: `d_name` is a NUL-terminated name within the entry.
            let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_bytes();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name.to_vec()));
            }
        }
        // SAFETY: a valid stream, closed once.
        unsafe { libc::closedir(stream) };
        Ok(names)
    }

    fn open_at(&self, name: &OsStr, flags: libc::c_int, mode: u32) -> io::Result<File> {
        let c = c_name(name)?;
        // SAFETY: a valid directory descriptor and NUL-terminated name.
        let fd = check(unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                mode as libc::c_uint,
            )
        })?;
        // SAFETY: a fresh descriptor no one else owns.
        Ok(unsafe { File::from_raw_fd(fd) })
    }

    /// Opens `name` for reading only if it is a regular file, not through a link (and
    /// without waiting on a FIFO).
    pub(crate) fn open_regular(&self, name: &OsStr) -> io::Result<File> {
        let file = self.open_at(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
        if !file.metadata()?.is_file() {
            return Err(io::Error::other(
                "it is not a regular file (a link, a FIFO or a device)",
            ));
        }
        Ok(file)
    }

    /// Creates the new file `name` (an error if anything is there, a link included).
    pub(crate) fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        self.open_at(name, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, mode)
    }

    /// Removes the entry `name` of this directory (never what a link points to).
    pub(crate) fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: a valid directory descriptor and NUL-terminated name.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) })?;
        Ok(())
    }

    /// Renames `from` to `to`, both in this directory.
    pub(crate) fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (f, t) = (c_name(from)?, c_name(to)?);
        let fd = self.fd.as_raw_fd();
        // SAFETY: a valid directory descriptor and NUL-terminated names.
        check(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) })?;
        Ok(())
    }
}

/// Why walking a path failed.
#[derive(Debug)]
pub(crate) enum WalkError {
    /// This part of the path (as far as walked) is a symbolic link.
    Link(std::path::PathBuf),
    Io(io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_followed_through_a_link() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("a.png"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        std::fs::create_dir(root.path().join("real")).unwrap();
        // ELOOP, or ENOTDIR (`O_DIRECTORY` is checked first on Linux).
        let e = Dir::open_nofollow(&root.path().join("link")).unwrap_err();
        assert!(
            is_link_error(&e) || e.raw_os_error() == Some(libc::ENOTDIR),
            "{e}"
        );
        let dir = Dir::open_nofollow(root.path()).unwrap();
        match dir.walk(Path::new("./real/../link/x")) {
            Err(WalkError::Link(at)) => assert_eq!(at, Path::new("real/../link")),
            other => panic!("{other:?}"),
        }
        assert!(dir.walk(Path::new("real/.")).is_ok());
        assert!(dir.open_regular(OsStr::new("link")).is_err());
        assert!(dir.is_link(OsStr::new("link")));
        assert_eq!(
            dir.read_link(OsStr::new("link")).unwrap(),
            outside.path().as_os_str()
        );
        let mut names = dir.names().unwrap();
        names.sort();
        assert_eq!(names, ["link", "real"]);
        dir.create_new(OsStr::new("f"), 0o600).unwrap();
        assert!(dir.create_new(OsStr::new("f"), 0o600).is_err());
        assert!(dir.create_new(OsStr::new("link"), 0o600).is_err());
        dir.remove_file(OsStr::new("link")).unwrap();
        assert!(outside.path().join("a.png").exists());
    }
}
