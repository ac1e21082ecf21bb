//! File modes for what holds secrets or code: directories 0700, files 0600. Existing ones
//! that are more open are tightened, and the person is told once on stderr (they may have
//! opened them on purpose, but a session store readable by every local user leaks every
//! conversation and output; a narrower mode is the safe side).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

/// Creates `dir` (and missing parents) 0700; tightens it to 0700 if it exists more open.
/// Returns a sentence when an existing mode was changed.
pub fn private_dir(dir: &Path) -> io::Result<Option<String>> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    tighten(dir, 0o700)
}

/// Tightens an existing file to 0600 (nothing when it does not exist, or stops existing
/// while it is looked at, as SQLite's -wal and -shm files do when another process closes
/// the store).
pub fn private_file(file: &Path) -> io::Result<Option<String>> {
    match tighten(file, 0o600) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        other => other,
    }
}

/// Takes from `path`'s mode every permission `mode` lacks. Returns a sentence saying what
/// changed, if anything did.
pub fn tighten(path: &Path, mode: u32) -> io::Result<Option<String>> {
    let now = std::fs::metadata(path)?.permissions().mode() & 0o7777;
    let tight = now & mode;
    if tight == now {
        return Ok(None);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(tight))?;
    Ok(Some(format!(
        "oi-tui: {} was readable by other users (mode {now:o}); it is now {tight:o}.",
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirs_and_files_are_made_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        assert_eq!(private_dir(&dir).unwrap(), None);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let said = private_dir(&dir).unwrap().unwrap();
        assert!(said.contains("755") && said.contains("700"), "{said}");
        assert_eq!(mode(&dir), 0o700);
        let file = dir.join("f");
        std::fs::write(&file, "x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(private_file(&file).unwrap().is_some());
        assert_eq!(mode(&file), 0o600);
        assert_eq!(private_file(&file).unwrap(), None);
    }
}
