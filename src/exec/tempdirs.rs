//! The kernels' private directories in the temp dir (each holds the driver, the control FIFO
//! and the code of every block): created 0700, named after the process that owns them, and
//! removed on every way out: when the kernel stops, at exit, on SIGTERM or SIGHUP (through
//! `reaper::kill_all`) and on a panic. Directories left by a run that could not clean up
//! (kill -9, a crash) are removed by the next run, but only once their owner is gone: a live
//! oi-tui's directories are never touched.
//!
//! A directory is `oi-tui-KIND-PID-RANDOM`, where PID is the owning oi-tui's process id.
//!
//! Each process keeps three directories of its own apart (see [`private`]), so that nothing
//! oi-tui writes for a block is where a sandboxed block can create, replace or link
//! anything: `oi-tui-kernels-…` holds every kernel's directory (driver, control FIFO, code)
//! and is read-only inside the sandbox; `oi-tui-figures-…` holds each kernel's figure
//! directory, the one place there that blocks may write; `oi-tui-tmp-…` is the blocks'
//! private temp dir (their `/tmp` under bubblewrap, their `$TMPDIR` under Landlock). The
//! temp dir itself is never writable from inside the sandbox.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use super::Language;

static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static SWEPT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The kind of directory that is not a kernel's: the images of kernels that record no
/// session.
pub(crate) const IMAGES: &str = "images";

/// The kinds of this process's private directories (see [`private`]).
const KERNELS: &str = "kernels";
const FIGURES: &str = "figures";
const BLOCKS_TMP: &str = "tmp";

/// This process's private directories in the temp dir, made once (0700) and removed at
/// exit like every kernel directory.
#[derive(Debug)]
pub struct Private {
    /// The user's own directory that holds them (`oi-tui-UID` in the temp dir), and the
    /// private directories of every other oi-tui of the user: read-only inside the sandbox,
    /// so that no block reaches another session's kernels either.
    pub root: PathBuf,
    /// Where kernels' directories are made: read-only inside the sandbox.
    pub kernels: PathBuf,
    /// Where each kernel's figure directory is made: writable inside the sandbox.
    pub figures: PathBuf,
    /// The blocks' own temp dir: writable inside the sandbox.
    pub tmp: PathBuf,
}

static PRIVATE: OnceLock<Result<Private, String>> = OnceLock::new();

/// This process's private directories, made the first time they are asked for.
pub fn private() -> Result<&'static Private, String> {
    PRIVATE
        .get_or_init(|| {
            let temp = std::env::temp_dir();
            // Directories of earlier layouts and of other kinds are swept where they are.
            sweep_once(&temp);
            let parent = user_dir(&temp)?;
            let make = |kind: &str| {
                // Another oi-tui that left may have removed the user's directory just now.
                create_named(&parent, kind)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => user_dir(&temp)
                            .map_err(std::io::Error::other)
                            .and_then(|_| create_named(&parent, kind)),
                        _ => Err(e),
                    })
                    .map(|dir| dir.keep())
                    .and_then(std::fs::canonicalize)
                    .map_err(|e| {
                        format!(
                            "cannot make oi-tui's private directory in {}: {e}",
                            parent.display()
                        )
                    })
            };
            Ok(Private {
                root: parent.clone(),
                kernels: make(KERNELS)?,
                figures: make(FIGURES)?,
                tmp: make(BLOCKS_TMP)?,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The user's own directory in `temp` (`oi-tui-UID`, 0700), made when missing; one that is
/// not a directory of the user's (a link, someone else's) is an error.
fn user_dir(temp: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    // SAFETY: geteuid(2) cannot fail.
    let uid = unsafe { libc::geteuid() };
    let dir = temp.join(format!("oi-tui-{uid}"));
    let shown = dir.display();
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot make {shown}: {e}")),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| format!("cannot use {shown}: {e}"))?;
    if !meta.is_dir() || meta.uid() != uid {
        return Err(format!(
            "{shown} is not a directory of yours (a link, or another user's); remove it"
        ));
    }
    if meta.mode() & 0o077 != 0 {
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("cannot make {shown} private: {e}"))?;
    }
    std::fs::canonicalize(&dir).map_err(|e| format!("cannot use {shown}: {e}"))
}

/// The name every directory of `kind` (a language's name, or `IMAGES`) owned by this
/// process starts with.
fn prefix(kind: &str) -> String {
    format!("oi-tui-{kind}-{}-", std::process::id())
}

/// Creates a kernel's private directory (0700) in `parent` and registers it for removal at
/// exit. Sweeps `parent` first, if that was not done yet.
pub(crate) fn create(parent: &Path, language: Language) -> std::io::Result<tempfile::TempDir> {
    create_named(parent, language.name())
}

/// Creates a private directory of `kind` (see `prefix`), as `create` does.
pub(crate) fn create_named(parent: &Path, kind: &str) -> std::io::Result<tempfile::TempDir> {
    sweep_once(parent);
    let dir = tempfile::Builder::new()
        .prefix(&prefix(kind))
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(parent)?;
    if let Ok(mut live) = LIVE.lock() {
        live.push(dir.path().to_path_buf());
    }
    Ok(dir)
}

/// Sweeps `parent` of stale kernel directories, the first time it is called for `parent` in
/// this process.
pub(crate) fn sweep_once(parent: &Path) {
    let first = SWEPT.lock().is_ok_and(|mut swept| {
        let first = !swept.iter().any(|p| p == parent);
        if first {
            swept.push(parent.to_path_buf());
        }
        first
    });
    if first {
        sweep_stale(parent);
    }
}

/// Forgets a directory that its owner removes itself (a kernel that stopped).
pub(crate) fn forget(path: &Path) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|p| p != path);
    }
}

/// Removes every registered directory. Safe to call from a signal path or a panic hook: it
/// never blocks on a lock held elsewhere.
pub(crate) fn remove_all() {
    let dirs = match LIVE.try_lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
    // The user's directory too, when no other oi-tui has anything in it (it is made again,
    // see `private`).
    if let Some(Ok(private)) = PRIVATE.get() {
        let _ = std::fs::remove_dir(&private.root);
    }
}

/// The owner's process id in a kernel directory's name, if the name is one of ours.
pub(crate) fn owner_of(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("oi-tui-")?;
    let (kind, rest) = rest.split_once('-')?;
    if ![IMAGES, KERNELS, FIGURES, BLOCKS_TMP, super::remote::SSH_DIR].contains(&kind) {
        Language::parse(kind)?;
    }
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok().filter(|&pid: &i32| pid > 0)
}

/// Whether a process with this id exists (a zombie counts: its id is not free yet).
fn alive(pid: i32) -> bool {
    // SAFETY: kill(2) with signal 0 only checks for existence.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    // EPERM: it exists, and belongs to someone else.
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Removes the kernel directories in `parent` that belong to this user and whose owning
/// process is gone. Returns how many were removed.
pub(crate) fn sweep_stale(parent: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    // SAFETY: geteuid(2) cannot fail.
    let uid = unsafe { libc::geteuid() };
    let own = std::process::id() as i32;
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(owner_of) else {
            continue;
        };
        if owner == own || alive(owner) {
            continue;
        }
        // Not followed through a link, and only the user's own.
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_kernel_directories() {
        assert_eq!(owner_of("oi-tui-python-1234-AbC9xz"), Some(1234));
        assert_eq!(owner_of("oi-tui-shell-77-q"), Some(77));
        // The old form, without an owner, and other files of ours are left alone.
        assert_eq!(owner_of("oi-tui-python-AbC9xz"), None);
        assert_eq!(owner_of("oi-tui-html"), None);
        assert_eq!(owner_of("oi-tui-cobol-12-abc"), None);
        assert_eq!(owner_of("oi-tui-python-12-"), None);
        assert_eq!(owner_of("other-python-12-abc"), None);
    }

    #[test]
    fn the_sweep_removes_only_directories_whose_owner_is_gone() {
        let parent = tempfile::tempdir().unwrap();
        // A process that has ended and been reaped: its id is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let stale = parent.path().join(format!("oi-tui-python-{gone}-abc"));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("block-1.py"), "secret").unwrap();
        let own = parent
            .path()
            .join(format!("oi-tui-shell-{}-def", std::process::id()));
        std::fs::create_dir(&own).unwrap();
        // Another live process (the one that started this test).
        let live = parent.path().join(format!(
            "oi-tui-ruby-{}-ghi",
            std::os::unix::process::parent_id()
        ));
        std::fs::create_dir(&live).unwrap();
        let other = parent.path().join("oi-tui-html");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(sweep_stale(parent.path()), 1);
        assert!(!stale.exists());
        assert!(own.exists());
        assert!(live.exists());
        assert!(other.exists());
    }
}
