//! Finding the image files a block wrote under a directory, cheaply enough to do after
//! every block.
//!
//! The first look walks the tree (not too deep, not too many entries, never into hidden
//! directories, dependencies or oi-tui's own) and remembers each directory's modification
//! time and every image file in it. Later looks only read again the directories whose time
//! changed (a file was created, renamed or removed in them), and look at the remembered
//! image files themselves (one rewritten in place changes no directory). A file counts as
//! the block's when it was modified at or after the block started.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::protocol::ImageFormat;

/// Looked through this deep below the root (the root's own entries are depth 0).
const DEPTH: usize = 4;
/// Entries remembered at most (a block run in a home directory must not cost seconds).
const ENTRIES: usize = 10_000;
/// Directories never looked into: tools' caches and dependencies, not what a block drew.
const SKIPPED_DIRS: [&str; 6] = [
    "node_modules",
    "target",
    "__pycache__",
    "venv",
    "site-packages",
    "dist-packages",
];
/// Roots remembered at most (a kernel that moves around starts over).
const ROOTS: usize = 8;

/// What is remembered of the trees under the roots looked at.
#[derive(Debug, Default)]
pub(crate) struct Scans {
    roots: HashMap<PathBuf, Tracker>,
    /// Look through trees, never watch them (the fallback, as tests reach it).
    no_watch: bool,
}

/// How one tree is followed: watched (Linux), else looked through.
#[derive(Debug)]
enum Tracker {
    #[cfg(target_os = "linux")]
    Watch(super::workdir_watch::Watch),
    Tree(Tree),
}

#[derive(Debug, Default)]
struct Tree {
    /// Each directory's modification time when it was read, and its depth.
    dirs: HashMap<PathBuf, (SystemTime, usize)>,
    images: HashSet<PathBuf>,
    /// The time of each image file when it was last reported: a file the next block
    /// did not touch is not its image, even when file times are too coarse to tell.
    reported: HashMap<PathBuf, SystemTime>,
    entries: usize,
    /// The tree had more entries than are remembered.
    cut: bool,
}

impl Scans {
    /// The image files under `root` modified at or after `since`, sorted; and whether the
    /// tree was too big to follow whole. `ignored`: directories never looked into.
    pub fn written_since(
        &mut self,
        root: &Path,
        since: SystemTime,
        ignored: &[PathBuf],
    ) -> (Vec<PathBuf>, bool) {
        if !self.roots.contains_key(root) && self.roots.len() >= ROOTS {
            self.roots.clear();
        }
        #[cfg(target_os = "linux")]
        {
            use super::workdir_watch::Watch;
            match self.roots.get_mut(root) {
                None if self.no_watch => {}
                None => {
                    let mut written = Vec::new();
                    if let Some(watch) = Watch::start(root, since, ignored, &mut written) {
                        let cut = watch.cut;
                        self.roots.insert(root.to_path_buf(), Tracker::Watch(watch));
                        written.sort();
                        return (written, cut);
                    }
                }
                Some(Tracker::Watch(watch)) => {
                    if let Some(written) = watch.written_since(since, ignored) {
                        return (written, watch.cut);
                    }
                    // Too much happened to know: the tree is looked through from now on.
                    self.roots.remove(root);
                }
                Some(Tracker::Tree(_)) => {}
            }
        }
        let tracker = self
            .roots
            .entry(root.to_path_buf())
            .or_insert_with(|| Tracker::Tree(Tree::default()));
        match tracker {
            Tracker::Tree(tree) => tree.written_since(root, since, ignored),
            #[cfg(target_os = "linux")]
            Tracker::Watch(_) => (Vec::new(), false),
        }
    }
}

impl Tree {
    fn written_since(
        &mut self,
        root: &Path,
        since: SystemTime,
        ignored: &[PathBuf],
    ) -> (Vec<PathBuf>, bool) {
        if self.dirs.is_empty() {
            self.read(root, 0, ignored);
        } else {
            let changed: Vec<(PathBuf, usize)> = self
                .dirs
                .iter()
                .filter(|(dir, (time, _))| modified(dir) != Some(*time))
                .map(|(dir, (_, depth))| (dir.clone(), *depth))
                .collect();
            for (dir, depth) in changed {
                self.dirs.remove(&dir);
                if dir.is_dir() {
                    self.read(&dir, depth, ignored);
                }
            }
        }
        let mut written = Vec::new();
        let reported = &mut self.reported;
        self.images.retain(|path| match modified(path) {
            Some(time) => {
                if time >= since && reported.get(path) != Some(&time) {
                    reported.insert(path.clone(), time);
                    written.push(path.clone());
                }
                true
            }
            None => {
                reported.remove(path);
                false
            }
        });
        written.sort();
        (written, self.cut)
    }

    /// Reads `dir` (its time first, so that a change while it is read is seen next time),
    /// and walks the directories in it that are not known yet.
    fn read(&mut self, dir: &Path, depth: usize, ignored: &[PathBuf]) {
        if ignored.iter().any(|i| dir.starts_with(i)) {
            return;
        }
        let Some(time) = modified(dir) else {
            return;
        };
        let Some(listing) = list(dir, depth, &mut self.entries, &mut self.cut) else {
            return;
        };
        self.dirs.insert(dir.to_path_buf(), (time, depth));
        self.images.extend(listing.images);
        for sub in listing.dirs {
            if !self.dirs.contains_key(&sub) {
                self.read(&sub, depth + 1, ignored);
            }
        }
    }
}

/// What one directory holds that is looked at: the directories to look into, the image
/// files.
pub(super) struct Listing {
    pub dirs: Vec<PathBuf>,
    pub images: Vec<PathBuf>,
}

/// Lists `dir` (at `depth`), counting its entries against `ENTRIES` in `entries`; `cut` is
/// set when the count runs out. None when it cannot be read.
pub(super) fn list(
    dir: &Path,
    depth: usize,
    entries: &mut usize,
    cut: &mut bool,
) -> Option<Listing> {
    let read = std::fs::read_dir(dir).ok()?;
    let mut listing = Listing {
        dirs: Vec::new(),
        images: Vec::new(),
    };
    for entry in read.flatten() {
        if *entries >= ENTRIES {
            *cut = true;
            break;
        }
        *entries += 1;
        // Not followed through links: a link may lead anywhere, and loop.
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if descend(&entry.file_name(), depth) {
                listing.dirs.push(path);
            }
        } else if kind.is_file() && ImageFormat::from_path(&path).is_some() {
            listing.images.push(path);
        }
    }
    Some(listing)
}

/// Whether a directory named `name` at `depth` is looked into: not too deep, not hidden,
/// not a dependency or cache, not oi-tui's own.
pub(super) fn descend(name: &std::ffi::OsStr, depth: usize) -> bool {
    let name = name.to_string_lossy();
    depth + 1 < DEPTH
        && !name.starts_with('.')
        && !name.starts_with("oi-tui-")
        && !SKIPPED_DIRS.contains(&name.as_ref())
}

pub(super) fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn touch(path: &Path) {
        std::fs::write(path, b"x").unwrap();
    }

    /// Now, by the file system's clock (as a block's start is taken).
    fn now(dir: &Path) -> SystemTime {
        let probe = dir.join(".probe");
        touch(&probe);
        let time = modified(&probe).unwrap();
        std::fs::remove_file(probe).unwrap();
        time
    }

    /// Both ways of following a tree: watched (on Linux) and looked through.
    fn both() -> [Scans; 2] {
        [
            Scans::default(),
            Scans {
                no_watch: true,
                ..Scans::default()
            },
        ]
    }

    #[test]
    fn new_rewritten_and_moved_in_files_are_found_and_old_ones_are_not() {
        for scans in both() {
            found_and_not_found(scans);
        }
    }

    fn found_and_not_found(mut scans: Scans) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("charts/2026")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        touch(&root.join("old.png"));
        touch(&root.join("charts/2026/old.svg"));
        std::thread::sleep(Duration::from_millis(20));
        let since = now(&root);
        let (none, cut) = scans.written_since(&root, since, &[]);
        assert!(none.is_empty() && !cut, "{none:?}");

        // A new file deep down, a rewritten one, one in a new directory, one hidden.
        let since = now(&root);
        touch(&root.join("charts/2026/new.png"));
        touch(&root.join("old.png"));
        std::fs::create_dir_all(root.join("fresh")).unwrap();
        touch(&root.join("fresh/a.webp"));
        touch(&root.join(".git/b.png"));
        touch(&root.join("notes.txt"));
        let (found, _) = scans.written_since(&root, since, &[]);
        assert_eq!(
            found,
            [
                root.join("charts/2026/new.png"),
                root.join("fresh/a.webp"),
                root.join("old.png"),
            ]
        );

        // Nothing written since: nothing found, even at once (file times are coarse: the
        // files above may carry the same time as this start); a file moved in is found.
        let since = now(&root);
        assert!(scans.written_since(&root, since, &[]).0.is_empty());
        let outside = tempfile::NamedTempFile::new_in(&root).unwrap();
        std::fs::rename(outside.path(), root.join("charts/moved.gif")).unwrap();
        let (found, _) = scans.written_since(&root, since, &[]);
        assert_eq!(found, [root.join("charts/moved.gif")]);
        // Removed files and directories are forgotten.
        std::fs::remove_dir_all(root.join("charts")).unwrap();
        let (found, _) = scans.written_since(&root, since, &[]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn ignored_directories_are_not_looked_into() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("kept")).unwrap();
        let since = now(&root);
        touch(&root.join("kept/1-1.png"));
        for mut scans in both() {
            let (found, _) = scans.written_since(&root, since, &[root.join("kept")]);
            assert!(found.is_empty(), "{found:?}");
        }
    }
}
