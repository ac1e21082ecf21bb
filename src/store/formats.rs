//! The formats a saved session is exported in (`oi-tui sessions export --format`, the
//! workbench's `/export`): Markdown and JSON (see `export.rs` and `read.rs`), a Jupyter
//! notebook (`notebook.rs`), and Python and shell scripts (`script.rs`). Also what the
//! formats share: which blocks ran and with what code, and writing a file whole or not
//! at all (a temp file beside it, renamed over it).

use std::io::Write;
use std::path::{Path, PathBuf};

use super::read::{Exported, StoredBlock};

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Markdown,
    Json,
    Notebook,
    Python,
    Shell,
}

impl Format {
    pub const ALL: [Format; 5] = [
        Format::Markdown,
        Format::Json,
        Format::Notebook,
        Format::Python,
        Format::Shell,
    ];

    /// The name given to `--format`, which is also the file name extension.
    pub fn name(self) -> &'static str {
        match self {
            Format::Markdown => "md",
            Format::Json => "json",
            Format::Notebook => "ipynb",
            Format::Python => "py",
            Format::Shell => "sh",
        }
    }

    /// The format in words: `a Jupyter notebook`.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Markdown => "Markdown",
            Format::Json => "JSON",
            Format::Notebook => "a Jupyter notebook",
            Format::Python => "a Python script",
            Format::Shell => "a shell script",
        }
    }

    /// The format a file name's extension says (`notes.ipynb`), if it names one.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "markdown" => Some(Format::Markdown),
            "bash" => Some(Format::Shell),
            other => Format::ALL.into_iter().find(|f| f.name() == other),
        }
    }

    /// Whether the file is a program to run (written executable).
    pub fn is_script(self) -> bool {
        matches!(self, Format::Python | Format::Shell)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        let name = s.trim().to_ascii_lowercase();
        match name.as_str() {
            "markdown" => return Ok(Format::Markdown),
            "notebook" | "jupyter" => return Ok(Format::Notebook),
            "python" => return Ok(Format::Python),
            "shell" | "bash" => return Ok(Format::Shell),
            _ => {}
        }
        Format::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown export format `{}`: use md (Markdown), json, ipynb (a Jupyter notebook), py (a Python script) or sh (a shell script)",
                    crate::safe_text::visible_line(s)
                )
            })
    }
}

impl Exported {
    /// The session in `format`, as the text to write. Markdown shows control and
    /// invisible characters visibly (it is read with `cat`), JSON and notebooks escape
    /// them; scripts keep the code exactly as it ran.
    pub fn render(&self, format: Format) -> Result<String, String> {
        Ok(match format {
            Format::Markdown => crate::safe_text::visible(&self.markdown()),
            Format::Json => crate::safe_text::json_safe(
                &serde_json::to_string_pretty(self).map_err(|e| e.to_string())?,
            ),
            Format::Notebook => crate::safe_text::json_safe(&self.notebook()),
            Format::Python => self.python_script(),
            Format::Shell => self.shell_script(),
        })
    }
}

/// Whether a block ran (wholly or in part): it was approved (or run by the person) and
/// its kernel took it. Blocks skipped, denied, never decided or whose interpreter was
/// missing did not.
pub(crate) fn ran(b: &StoredBlock) -> bool {
    matches!(b.decision.as_str(), "run" | "edited" | "user")
        && !matches!(b.status.as_deref(), Some("skipped" | "not run"))
}

/// The code that ran: the person's edit, or the proposal.
pub(crate) fn code_run(b: &StoredBlock) -> &str {
    b.edited_code.as_deref().unwrap_or(&b.proposed_code)
}

/// Why a block did not run, in words (`skipped: too risky`, `not run: python3 is not
/// installed`).
pub(crate) fn why_not_run(b: &StoredBlock) -> String {
    if b.status.as_deref() == Some("not run") {
        let why = b
            .notes
            .iter()
            .map(|n| n.trim())
            .find(|n| !n.is_empty())
            .or_else(|| b.tail.as_deref().map(str::trim).filter(|t| !t.is_empty()));
        return match why {
            Some(why) => format!("not run: {}", one_line(why)),
            None => "not run".to_string(),
        };
    }
    super::export::decision_words(b)
}

/// Newlines (and runs of spaces around them) folded into single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes `text` to `path` whole or not at all: into a new file beside it, then renamed
/// over it, so that a failure (a full disk, a missing directory) leaves no partial file
/// and an earlier file as it was. A file that exists keeps its permissions; a new script
/// is made executable (as the umask allows). Never through a symbolic link: a block may
/// have put one where an export was to go, pointing anywhere; that is an error, and the
/// link stays as it was.
pub fn write_whole(path: &Path, text: &str, executable: bool) -> Result<(), String> {
    use crate::dirfd::is_link_error;
    use std::ffi::OsStr;
    use std::os::unix::fs::PermissionsExt;
    let cannot = |e: &dyn std::fmt::Display| {
        format!(
            "cannot write {}: {e}",
            crate::safe_text::visible(&path.display().to_string())
        )
    };
    let through_link = |at: &Path, to: String| {
        format!(
            "{} is a symbolic link (to {}), and oi-tui does not write through links (a block could have put it there); remove it, or give the file's own path",
            crate::safe_text::visible(&at.display().to_string()),
            crate::safe_text::visible(&to),
        )
    };
    let dir_path = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| cannot(&"it names no file"))?;
    let dir = open_parent(&dir_path).map_err(|e| match e {
        crate::dirfd::WalkError::Link(at) => {
            let to = std::fs::read_link(&at)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            cannot(&through_link(&at, to))
        }
        crate::dirfd::WalkError::Io(e) => cannot(&e),
    })?;
    let existing = dir.entry_mode(name).map_err(|e| cannot(&e))?;
    if existing.is_some_and(crate::dirfd::is_link_mode) {
        let to = dir
            .read_link(name)
            .map(|t| Path::new(&t).display().to_string())
            .unwrap_or_default();
        return Err(cannot(&format!(
            "it is a symbolic link (to {}), and oi-tui does not write through links (a block could have put it there); remove it, or give the file's own path",
            crate::safe_text::visible(&to)
        )));
    }
    if existing.is_some_and(crate::dirfd::is_dir_mode) {
        return Err(cannot(&"it is a directory; give a file name"));
    }
    let shown_name = name.to_string_lossy();
    let mut temp = None;
    for attempt in 0..100u32 {
        let t = format!(".{shown_name}.{}-{attempt}.part", std::process::id());
        match dir.create_new(OsStr::new(&t), if executable { 0o777 } else { 0o666 }) {
            Ok(file) => {
                temp = Some((file, t));
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(cannot(&e)),
        }
    }
    let (file, temp) = temp.ok_or_else(|| cannot(&"no free temporary name"))?;
    let written = (|| -> std::io::Result<()> {
        let mut file = file;
        file.write_all(text.as_bytes())?;
        if let Some(mode) = existing {
            file.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))?;
        }
        file.sync_all()?;
        drop(file);
        dir.rename(OsStr::new(&temp), name)
    })();
    written.map_err(|e| {
        let _ = dir.remove_file(OsStr::new(&temp));
        if is_link_error(&e) {
            cannot(&"a symbolic link was put in its way while it was written")
        } else {
            cannot(&e)
        }
    })
}

/// The directory an export goes in, held open. A path in the current directory (relative,
/// or absolute inside it) is walked one part at a time and refused at the first part that
/// is a symbolic link: a block may have planted one there, pointing anywhere. Links on an
/// absolute path elsewhere are the person's own and are followed.
fn open_parent(dir: &Path) -> Result<crate::dirfd::Dir, crate::dirfd::WalkError> {
    use crate::dirfd::{Dir, WalkError};
    let cwd = std::env::current_dir().ok();
    let inside = if dir.is_relative() {
        Some(dir.to_path_buf())
    } else {
        cwd.as_ref()
            .and_then(|cwd| dir.strip_prefix(cwd).ok())
            .map(Path::to_path_buf)
    };
    match inside {
        Some(rel) => {
            let here = Dir::open(Path::new(".")).map_err(WalkError::Io)?;
            match here.walk(&rel) {
                // Named as given, from the current directory.
                Err(WalkError::Link(at)) if !dir.is_relative() => {
                    Err(WalkError::Link(cwd.map(|c| c.join(&at)).unwrap_or(at)))
                }
                other => other,
            }
        }
        None => Dir::open(dir).map_err(WalkError::Io),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_name_and_by_extension() {
        assert_eq!("ipynb".parse::<Format>(), Ok(Format::Notebook));
        assert_eq!("PY".parse::<Format>(), Ok(Format::Python));
        let err = "xls".parse::<Format>().unwrap_err();
        assert!(
            err.contains("unknown export format `xls`") && err.contains("ipynb"),
            "{err}"
        );
        assert_eq!(
            Format::from_path(Path::new("a/b.IPYNB")),
            Some(Format::Notebook)
        );
        assert_eq!(Format::from_path(Path::new("run.sh")), Some(Format::Shell));
        assert_eq!(Format::from_path(Path::new("notes.txt")), None);
    }

    #[test]
    fn a_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("out.md");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let err = write_whole(&link, "export", false).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_failed_write_leaves_nothing_and_an_old_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.sh");
        write_whole(&path, "echo one\n", true).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "echo one\n");
        use std::os::unix::fs::PermissionsExt;
        assert_ne!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o100,
            0
        );
        let err = write_whole(&dir.path().join("missing/out.sh"), "x", false).unwrap_err();
        assert!(
            err.contains("cannot write") && err.contains("missing/out.sh"),
            "{err}"
        );
        let err = write_whole(dir.path(), "x", false).unwrap_err();
        assert!(err.contains("directory"), "{err}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
