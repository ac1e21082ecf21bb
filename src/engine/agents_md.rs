//! `AGENTS.md`: the project's own instructions for coding agents, added to the system prompt.
//!
//! The nearest `AGENTS.md` wins: the kernels' working directory is searched first, then each
//! parent, up to the repository root (the first directory holding `.git`, a directory or a
//! file); nothing above the repository root is ever read. Outside any repository only the
//! working directory is searched, as codex does: a parent such as `/tmp` may hold a file
//! anyone could have written. Only the exact name `AGENTS.md` counts, as with codex. The file is read once
//! when the engine starts (a resumed session reads it again); at most `MAX_BYTES` of it are
//! sent, and a longer file is cut with a marker. A file that cannot be used (a directory, not
//! UTF-8, unreadable, empty) adds nothing and is said in a notice: the session goes on. The
//! nearest entry decides: a broken one is not replaced by one farther up, which it may have
//! been meant to override. Pure apart from reading the file system; no events.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The file's name (exactly: `agents.md` and other spellings are not read).
pub const FILE_NAME: &str = "AGENTS.md";

/// The most bytes of the file sent to the model (32 KiB, as codex).
pub const MAX_BYTES: usize = 32 * 1024;

/// What the search found: the text for the prompt (if any) and what to tell the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The section for the system prompt, delimited and naming the file.
    pub section: Option<String>,
    /// What to say about it (None: no file found, nothing to say).
    pub notice: Option<String>,
}

/// The nearest `AGENTS.md` from `cwd` up to the repository root (only `cwd` when it is in no
/// repository). Only the path: whether it is usable is `load`'s business.
pub fn discover(cwd: &Path) -> Option<PathBuf> {
    let in_repository = cwd
        .ancestors()
        .any(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    let searched = if in_repository { usize::MAX } else { 1 };
    for dir in cwd.ancestors().take(searched) {
        let candidate = dir.join(FILE_NAME);
        // Whatever the entry is (even a broken link): it is the nearest, and it decides.
        if std::fs::symlink_metadata(&candidate).is_ok() {
            return Some(candidate);
        }
        if std::fs::symlink_metadata(dir.join(".git")).is_ok() {
            return None;
        }
    }
    None
}

/// Finds and reads the nearest `AGENTS.md` for a session in `cwd`. `resumed`: the session is a
/// resumed one (the notice says the file was read again). `context_window`: the model's, in
/// tokens (the notice warns when the file takes a large share of it).
pub fn load(cwd: &Path, resumed: bool, context_window: u32, data_dir: Option<&Path>) -> Loaded {
    let Some(path) = discover(cwd) else {
        return Loaded {
            section: None,
            notice: None,
        };
    };
    let shown = path.display();
    let unused = |why: String| Loaded {
        section: None,
        notice: Some(format!("{FILE_NAME} at {shown} is not used: {why}.")),
    };
    if let Some(why) = outside(&path, cwd) {
        return unused(why);
    }
    let text = match read_bounded(&path) {
        Ok(read) => read,
        Err(why) => return unused(why),
    };
    if text.text.trim().is_empty() {
        return unused("it is empty".to_string());
    }
    if let Some(data_dir) = data_dir
        && super::agents_held::is_held(data_dir, &path)
    {
        return unused(
            "it was changed while blocks ran in an earlier session, so it is held back until you have read it: `oi-tui trust --agents-md` shows it and lets it through"
                .to_string(),
        );
    }
    let relative = relative_path(&path, cwd);
    let section = section(&relative, &text);
    let mut notice = format!(
        "Using {FILE_NAME} ({}) from {shown}: it is added to the system prompt",
        size(text.total)
    );
    if text.cut {
        notice.push_str(&format!(
            "; it is longer than {}, so only its first {} are sent",
            size(MAX_BYTES as u64),
            size(text.text.len() as u64)
        ));
    }
    if resumed {
        notice.push_str(" (read again for this resumed session)");
    }
    notice.push('.');
    let tokens = super::history::estimate_tokens(&section);
    if tokens * 4 > context_window as usize {
        notice.push_str(&format!(
            " It takes about {tokens} tokens, more than a quarter of the context window ({context_window} tokens): less of the conversation fits."
        ));
    }
    notice.push_str(" --no-agents-md or `agents_md = false` leaves it out.");
    Loaded {
        section: Some(section),
        notice: Some(notice),
    }
}

/// The file's text as sent: at most `MAX_BYTES`, cut at a character boundary.
#[derive(Debug)]
struct Bounded {
    text: String,
    /// The file's size in bytes.
    total: u64,
    /// Whether `text` is only the beginning of the file.
    cut: bool,
}

/// Why `path` may not be read when it leads outside the project (the repository, or `cwd`
/// outside any): a cloned repository could ship `AGENTS.md` as a link to the person's
/// credentials, which would then go to the model's provider.
fn outside(path: &Path, cwd: &Path) -> Option<String> {
    let root = cwd
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .unwrap_or(cwd);
    let (Ok(target), Ok(root)) = (std::fs::canonicalize(path), std::fs::canonicalize(root)) else {
        // A broken link or an unreadable root: reading says what is wrong.
        return None;
    };
    (!target.starts_with(&root)).then(|| {
        format!(
            "it is a link to {}, outside {}; a project's instructions are read only from inside it",
            target.display(),
            root.display()
        )
    })
}

fn read_bounded(path: &Path) -> Result<Bounded, String> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "it is a link to nothing".to_string(),
        _ => format!("cannot read it ({e})"),
    })?;
    if meta.is_dir() {
        return Err("it is a directory, not a file".to_string());
    }
    if !meta.is_file() {
        return Err("it is not a regular file".to_string());
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it ({e})"))?;
    let mut bytes = Vec::new();
    // One byte more than the limit tells a cut file from one of exactly the limit.
    file.take(MAX_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it ({e})"))?;
    let cut = bytes.len() > MAX_BYTES;
    bytes.truncate(MAX_BYTES);
    let total = meta.len().max(bytes.len() as u64);
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let error = e.utf8_error();
            // A character cut by the limit is not an error: the text stops before it.
            if cut && error.error_len().is_none() {
                let valid = error.valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?
            } else {
                return Err(format!(
                    "it is not UTF-8 text (the byte at offset {} is not)",
                    error.valid_up_to()
                ));
            }
        }
    };
    Ok(Bounded { text, total, cut })
}

/// The prompt section for the file at `relative` (as the model, in the working directory,
/// would name it).
fn section(relative: &str, read: &Bounded) -> String {
    let mut out = format!(
        "# Project instructions ({relative})\n\nThe project's {FILE_NAME} file, at {relative} from the working directory, says how to work in it. Follow it unless the user says otherwise.\n\n<agents_md path=\"{relative}\">\n"
    );
    out.push_str(read.text.trim_end());
    if read.cut {
        out.push_str(&format!(
            "\n[... {FILE_NAME} is cut here: it has {} bytes, and only the first {} are sent ...]",
            read.total,
            read.text.len()
        ));
    }
    out.push_str("\n</agents_md>");
    out
}

/// `path` as seen from `cwd`: `AGENTS.md`, `../AGENTS.md`, `../../AGENTS.md`.
fn relative_path(path: &Path, cwd: &Path) -> String {
    let Some(dir) = path.parent() else {
        return path.display().to_string();
    };
    match cwd.strip_prefix(dir) {
        Ok(below) => {
            let ups = below.components().count();
            let mut out = "../".repeat(ups);
            out.push_str(FILE_NAME);
            out
        }
        Err(_) => path.display().to_string(),
    }
}

/// A size as a person reads it: `640 B`, `1.2 KB`, `32.0 KB`.
fn size(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context window that holds any file in full.
    const WINDOW: u32 = 1_000_000;

    /// A repository `repo` (with `.git`) holding `repo/a/b`, inside an outer directory.
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let outer = tempfile::tempdir().unwrap();
        let repo = outer.path().join("repo");
        let deep = repo.join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        (outer, repo, deep)
    }

    #[test]
    fn the_nearest_file_wins() {
        let (_outer, repo, deep) = tree();
        std::fs::write(repo.join(FILE_NAME), "root rules").unwrap();
        std::fs::write(repo.join("a").join(FILE_NAME), "a rules").unwrap();
        assert_eq!(discover(&deep), Some(repo.join("a").join(FILE_NAME)));
        let loaded = load(&deep, false, WINDOW, None);
        let section = loaded.section.unwrap();
        assert!(section.contains("a rules"), "{section}");
        assert!(!section.contains("root rules"), "{section}");
        assert!(section.contains("(../AGENTS.md)"), "{section}");
        std::fs::write(deep.join(FILE_NAME), "here").unwrap();
        assert_eq!(discover(&deep), Some(deep.join(FILE_NAME)));
        assert!(
            load(&deep, false, WINDOW, None)
                .section
                .unwrap()
                .contains("(AGENTS.md)")
        );
    }

    #[test]
    fn the_search_reaches_the_repository_root_and_stops_there() {
        let (outer, repo, deep) = tree();
        std::fs::write(outer.path().join(FILE_NAME), "outside the repo").unwrap();
        assert_eq!(discover(&deep), None);
        assert_eq!(
            load(&deep, false, WINDOW, None),
            Loaded {
                section: None,
                notice: None
            }
        );
        std::fs::write(repo.join(FILE_NAME), "repo rules").unwrap();
        assert_eq!(discover(&deep), Some(repo.join(FILE_NAME)));
        assert!(
            load(&deep, false, WINDOW, None)
                .section
                .unwrap()
                .contains("../../AGENTS.md")
        );
    }

    #[test]
    fn a_git_file_marks_a_root_too() {
        let (outer, repo, deep) = tree();
        std::fs::remove_dir(repo.join(".git")).unwrap();
        std::fs::write(repo.join("a").join(".git"), "gitdir: elsewhere").unwrap();
        std::fs::write(repo.join(FILE_NAME), "above the worktree").unwrap();
        assert_eq!(discover(&deep), None);
        // Without any repository only the working directory counts.
        std::fs::remove_file(repo.join("a").join(".git")).unwrap();
        assert_eq!(discover(&deep), None);
        std::fs::write(deep.join(FILE_NAME), "here").unwrap();
        assert_eq!(discover(&deep), Some(deep.join(FILE_NAME)));
        drop(outer);
    }

    #[test]
    fn only_the_exact_name_counts() {
        let (_outer, _repo, deep) = tree();
        std::fs::write(deep.join("agents.md"), "lower case").unwrap();
        assert_eq!(discover(&deep), None);
    }

    #[test]
    fn a_large_file_is_cut_with_a_marker_and_the_notice_says_so() {
        let (_outer, repo, _deep) = tree();
        // Multi-byte characters across the limit: the cut falls between characters.
        let text = "é".repeat(MAX_BYTES);
        std::fs::write(repo.join(FILE_NAME), &text).unwrap();
        let loaded = load(&repo, false, WINDOW, None);
        let section = loaded.section.unwrap();
        assert!(section.contains("is cut here"), "{}", &section[..200]);
        assert!(section.contains(&format!("it has {} bytes", text.len())));
        let body = section.split("\">\n").nth(1).unwrap();
        let kept = body.split("\n[...").next().unwrap();
        assert_eq!(kept.len(), MAX_BYTES);
        assert!(kept.chars().all(|c| c == 'é'));
        let notice = loaded.notice.unwrap();
        assert!(
            notice.contains("only its first 32.0 KB are sent"),
            "{notice}"
        );
        assert!(notice.contains("64.0 KB"), "{notice}");
    }

    #[test]
    fn a_file_of_exactly_the_limit_is_whole() {
        let (_outer, repo, _deep) = tree();
        std::fs::write(repo.join(FILE_NAME), "x".repeat(MAX_BYTES)).unwrap();
        let loaded = load(&repo, false, WINDOW, None);
        assert!(!loaded.section.unwrap().contains("is cut here"));
        assert!(!loaded.notice.unwrap().contains("only its first"));
    }

    #[test]
    fn unusable_files_are_said_and_add_nothing() {
        let (_outer, repo, deep) = tree();
        std::fs::write(repo.join(FILE_NAME), b"rules \xff\xfe here").unwrap();
        let loaded = load(&deep, false, WINDOW, None);
        assert_eq!(loaded.section, None);
        let notice = loaded.notice.unwrap();
        assert!(notice.contains("not UTF-8"), "{notice}");
        assert!(notice.contains("offset 6"), "{notice}");
        assert!(notice.contains(&repo.join(FILE_NAME).display().to_string()));

        std::fs::create_dir(deep.join(FILE_NAME)).unwrap();
        let loaded = load(&deep, false, WINDOW, None);
        assert_eq!(loaded.section, None);
        assert!(loaded.notice.unwrap().contains("is a directory"));

        std::fs::remove_dir(deep.join(FILE_NAME)).unwrap();
        std::fs::write(deep.join(FILE_NAME), " \n\t\n").unwrap();
        let loaded = load(&deep, false, WINDOW, None);
        assert_eq!(loaded.section, None);
        assert!(loaded.notice.unwrap().contains("empty"));

        std::fs::remove_file(deep.join(FILE_NAME)).unwrap();
        std::os::unix::fs::symlink(deep.join("nowhere"), deep.join(FILE_NAME)).unwrap();
        let loaded = load(&deep, false, WINDOW, None);
        assert_eq!(loaded.section, None);
        assert!(loaded.notice.unwrap().contains("link to nothing"));
    }

    #[test]
    fn an_unreadable_file_is_said() {
        use std::os::unix::fs::PermissionsExt;
        let (_outer, repo, _deep) = tree();
        let path = repo.join(FILE_NAME);
        std::fs::write(&path, "secret rules").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(&path).is_ok() {
            // Running as root: permissions do not stop reading; nothing to check here.
            return;
        }
        let loaded = load(&repo, false, WINDOW, None);
        assert_eq!(loaded.section, None);
        assert!(loaded.notice.unwrap().contains("cannot read it"));
    }

    #[test]
    fn the_notice_names_the_file_its_size_and_a_resume() {
        let (_outer, repo, deep) = tree();
        std::fs::write(repo.join(FILE_NAME), "y".repeat(1229)).unwrap();
        let notice = load(&deep, false, WINDOW, None).notice.unwrap();
        let path = repo.join(FILE_NAME).display().to_string();
        assert!(
            notice.starts_with(&format!(
                "Using AGENTS.md (1.2 KB) from {path}: it is added to the system prompt."
            )),
            "{notice}"
        );
        assert!(!notice.contains("resumed"));
        assert!(
            load(&deep, true, WINDOW, None)
                .notice
                .unwrap()
                .contains("resumed session")
        );
    }

    #[test]
    fn a_file_that_fills_the_context_window_is_warned_about() {
        let (_outer, repo, _deep) = tree();
        std::fs::write(repo.join(FILE_NAME), "z".repeat(8000)).unwrap();
        let notice = load(&repo, false, 4096, None).notice.unwrap();
        assert!(
            notice.contains("more than a quarter of the context window (4096 tokens)"),
            "{notice}"
        );
        assert!(notice.contains("about 20"), "{notice}");
        assert!(
            !load(&repo, false, 32_768, None)
                .notice
                .unwrap()
                .contains("quarter")
        );
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(640), "640 B");
        assert_eq!(size(1229), "1.2 KB");
        assert_eq!(size(3 * 1024 * 1024), "3.0 MB");
    }

    #[test]
    fn a_link_that_leads_out_of_the_repository_is_not_read() {
        let (outer, repo, deep) = tree();
        let secret = outer.path().join("credentials");
        std::fs::write(&secret, "aws_secret=abc").unwrap();
        std::os::unix::fs::symlink(&secret, repo.join(FILE_NAME)).unwrap();
        let loaded = load(&deep, false, 32_768, None);
        assert_eq!(loaded.section, None);
        let notice = loaded.notice.unwrap();
        assert!(
            notice.contains("outside") && notice.contains("credentials"),
            "{notice}"
        );
        // A link inside the repository is followed.
        std::fs::remove_file(repo.join(FILE_NAME)).unwrap();
        std::fs::write(repo.join("docs.md"), "inside the repository").unwrap();
        std::os::unix::fs::symlink(repo.join("docs.md"), repo.join(FILE_NAME)).unwrap();
        let loaded = load(&deep, false, 32_768, None);
        assert!(loaded.section.unwrap().contains("inside the repository"));
    }
}
