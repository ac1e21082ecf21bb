//! The file system a Landlock kernel sees, made in its own mount namespace (see `pid_ns`):
//! oi-tui's directory of the user's (every session's kernels) is an empty read-only one
//! with this process's kernels, figures and temp dir bound in, as under bubblewrap.
//! Landlock then forbids every mount change, so none of it can be undone from inside. (The
//! host's temp dir itself stays in view, read-only: binding the private one over it would
//! put what is bound back beneath it, and a Landlock grant reaches down through mounts.)

use std::ffi::CString;
use std::io::Error;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, PartialEq)]
pub(super) struct View {
    /// oi-tui's directory of the user's, and what of it stays (this process's own).
    pub private_root: Option<PathBuf>,
    pub keep: Vec<PathBuf>,
}

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| "a path holds a NUL byte".to_string())
}

/// A directory held open, to be bound again once its path is covered.
struct Held {
    path: PathBuf,
    fd: libc::c_int,
}

impl Held {
    fn open(path: &Path) -> Result<Held, String> {
        let c = c_path(path)?;
        // SAFETY: open(2) of a NUL-terminated path; the descriptor is closed on drop.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(format!(
                "cannot open {}: {}",
                path.display(),
                Error::last_os_error()
            ));
        }
        Ok(Held {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// Binds the held directory at its path again (the mount point made first).
    fn bind_back(&self) -> Result<(), String> {
        std::fs::create_dir_all(&self.path)
            .map_err(|e| format!("cannot make {}: {e}", self.path.display()))?;
        let from = c_path(Path::new(&format!("/proc/self/fd/{}", self.fd)))?;
        let to = c_path(&self.path)?;
        // SAFETY: mount(2) with NUL-terminated strings that live for the call.
        let done = unsafe {
            libc::mount(
                from.as_ptr(),
                to.as_ptr(),
                std::ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                std::ptr::null(),
            )
        };
        if done != 0 {
            return Err(format!(
                "cannot bind {}: {}",
                self.path.display(),
                Error::last_os_error()
            ));
        }
        Ok(())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // SAFETY: closes the descriptor this value opened.
        unsafe { libc::close(self.fd) };
    }
}

const FLAGS: libc::c_ulong = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;

impl View {
    /// Makes the view (in a mount namespace of this process's own).
    pub(super) fn make(&self) -> Result<(), String> {
        let Some(root) = &self.private_root else {
            return Ok(());
        };
        let cwd = std::env::current_dir().ok();
        // Everything to bind back is held before it is covered.
        let keep: Vec<Held> = self
            .keep
            .iter()
            .map(|p| Held::open(p))
            .collect::<Result<_, _>>()?;
        let target = c_path(root)?;
        let tmpfs = c"tmpfs";
        let options = c"mode=0755";
        // SAFETY: mount(2) with NUL-terminated strings that live for the call.
        let done = unsafe {
            libc::mount(
                tmpfs.as_ptr(),
                target.as_ptr(),
                tmpfs.as_ptr(),
                FLAGS,
                options.as_ptr().cast(),
            )
        };
        if done != 0 {
            return Err(format!(
                "cannot cover {}: {}",
                root.display(),
                Error::last_os_error()
            ));
        }
        for held in &keep {
            held.bind_back()?;
        }
        // SAFETY: as above.
        let done = unsafe {
            libc::mount(
                std::ptr::null(),
                target.as_ptr(),
                std::ptr::null(),
                libc::MS_REMOUNT | libc::MS_RDONLY | FLAGS,
                std::ptr::null(),
            )
        };
        if done != 0 {
            return Err(format!(
                "cannot make {} read-only: {}",
                root.display(),
                Error::last_os_error()
            ));
        }
        // A working directory under the covered one is the old one until looked up again.
        if let Some(cwd) = cwd {
            let _ = std::env::set_current_dir(&cwd);
        }
        Ok(())
    }
}
