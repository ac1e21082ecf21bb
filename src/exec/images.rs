//! The images a block made, gathered when it ends: the figures its driver saved (matplotlib,
//! PIL, R's plot device write them into the kernel's private `images` directory, named by
//! `FIGURES_VAR`) and the image files written under the working directory while it ran.
//! Each is kept in the session's image directory as `BLOCK-N.EXT`: figures are moved there
//! (they are the kernel's), files are copied (they are the user's, and may change later).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::dirfd::{Dir, is_link_error};
use crate::protocol::{Image, ImageFormat, ImageSource, human_bytes};

/// The variable that tells a driver where to save the figures a block shows.
pub(crate) const FIGURES_VAR: &str = "OI_TUI_IMAGES";
/// Images kept of one block at most; the rest are named in a note.
pub(crate) const MAX_IMAGES: usize = 20;
/// An image file larger than this is not kept (a note says so).
pub(crate) const MAX_BYTES: u64 = 50 * 1024 * 1024;
/// What gathering found.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    pub images: Vec<Image>,
    pub notes: Vec<String>,
    /// The working directory had more entries than are looked through.
    pub scan_cut: bool,
}

/// Where to look and where to keep.
pub(crate) struct Sources<'a> {
    /// The kernel's figure directory.
    pub figures: &'a Path,
    /// Its identity when oi-tui made it (a block may have replaced it since).
    pub figures_identity: crate::dirfd::Identity,
    /// The directories the block may have written in (the session's working directory,
    /// and the kernel's own if it moved).
    pub roots: &'a [PathBuf],
    /// Directories that are oi-tui's own, never reported (the kernels' private directories,
    /// the session images).
    pub ignored: &'a [PathBuf],
    /// Files modified at or after this time were written by the block (see
    /// `workdir_scan`).
    pub since: SystemTime,
}

/// Gathers the block's images into `keep`, numbered from 1 as `BLOCK-N.EXT`.
pub(crate) fn gather(
    sources: &Sources<'_>,
    scans: &mut super::workdir_scan::Scans,
    keep: &Path,
    block: u64,
) -> Gathered {
    let mut gathered = Gathered::default();
    let (figure_dir, mut found) = match figures(sources.figures, sources.figures_identity) {
        Ok(Some((dir, names))) => (
            Some(dir),
            names
                .into_iter()
                .map(|p| (p, ImageSource::Figure))
                .collect::<Vec<_>>(),
        ),
        Ok(None) => (None, Vec::new()),
        Err(note) => {
            gathered.notes.push(note);
            (None, Vec::new())
        }
    };
    let mut seen = HashSet::new();
    for root in sources.roots {
        let Ok(root) = root.canonicalize() else {
            continue;
        };
        if !seen.insert(root.clone()) {
            continue;
        }
        let (written, cut) = scans.written_since(&root, sources.since, sources.ignored);
        gathered.scan_cut |= cut;
        for path in written {
            if !found.iter().any(|(_, s)| s == &file_source(&path)) {
                found.push((path.clone(), file_source(&path)));
            }
        }
    }
    let kept = keep_from(found, figure_dir.as_ref(), keep, block);
    gathered.images = kept.images;
    gathered.notes.extend(kept.notes);
    gathered
}

/// Keeps what was found (local files: figures are moved, files copied) into `keep`,
/// numbered from 1 as `BLOCK-N.EXT`, with notes for what could not be kept.
pub(crate) fn keep_found(found: Vec<(PathBuf, ImageSource)>, keep: &Path, block: u64) -> Gathered {
    keep_from(found, None, keep, block)
}

/// Where a figure is: a name in the figure directory held open, else its own path (the
/// local copy of a remote one, in a directory of oi-tui's).
#[derive(Clone, Copy)]
struct Figures<'a>(Option<&'a Dir>);

impl Figures<'_> {
    fn open(&self, path: &Path) -> std::io::Result<std::fs::File> {
        match self.0 {
            Some(dir) => dir.open_regular(path.as_os_str()),
            None => open_regular(path),
        }
    }

    fn remove(&self, path: &Path) {
        let _ = match self.0 {
            Some(dir) => dir.remove_file(path.as_os_str()),
            None => std::fs::remove_file(path),
        };
    }
}

/// As `keep_found`, the figures (by name) in `figure_dir` when one is given.
fn keep_from(
    found: Vec<(PathBuf, ImageSource)>,
    figure_dir: Option<&Dir>,
    keep: &Path,
    block: u64,
) -> Gathered {
    let figures = Figures(figure_dir);
    let mut gathered = Gathered::default();
    if found.is_empty() {
        return gathered;
    }
    let keep_dir = match open_keep(keep) {
        Ok(dir) => dir,
        Err(why) => {
            gathered.notes.push(format!(
                "The block made {} image(s), but they could not be kept: {why}.",
                found.len(),
            ));
            for (path, source) in &found {
                if *source == ImageSource::Figure {
                    figures.remove(path);
                }
            }
            return gathered;
        }
    };
    let mut left_out = Vec::new();
    for (path, source) in found {
        if gathered.images.len() >= MAX_IMAGES {
            left_out.push(shown_name(&path, &source));
            if source == ImageSource::Figure {
                figures.remove(&path);
            }
            continue;
        }
        let n = gathered.images.len() + 1;
        let to = Keep {
            dir: &keep_dir,
            path: keep,
        };
        match keep_one(&path, &source, figures, to, block, n) {
            Ok(image) => gathered.images.push(image),
            Err(why) => gathered.notes.push(why),
        }
    }
    if !left_out.is_empty() {
        // Named up to a few: a block that writes thousands must not flood the model.
        const NAMED: usize = 5;
        let mut named = left_out
            .iter()
            .take(NAMED)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if left_out.len() > NAMED {
            named.push_str(&format!(" and {} more", left_out.len() - NAMED));
        }
        gathered.notes.push(format!(
            "The block made {} images; only the first {MAX_IMAGES} were kept. Not kept: {named}.",
            gathered.images.len() + left_out.len()
        ));
    }
    gathered
}

fn file_source(path: &Path) -> ImageSource {
    ImageSource::File {
        path: path.to_path_buf(),
    }
}

/// An image as the person knows it: a file by the path the block wrote it at (a remote
/// one's, not that of the local copy it was fetched to).
fn shown_name(_local: &Path, source: &ImageSource) -> String {
    match source {
        ImageSource::Figure => "a figure".to_string(),
        ImageSource::File { path } => path.display().to_string(),
    }
}

/// The figure directory held open, and the figures a driver saved there (by name), in the
/// order it saved them (their names count up). The directory is opened, listed and later
/// emptied through one descriptor, never through a link: a block may write in it, and may
/// have renamed it aside and put a link (or another directory) in its place; then nothing
/// is taken from it and the note says why. Ok(None): there is nothing to look at.
#[allow(clippy::type_complexity)]
fn figures(
    path: &Path,
    identity: crate::dirfd::Identity,
) -> Result<Option<(Dir, Vec<PathBuf>)>, String> {
    let replaced = || {
        "The kernel's figure directory was replaced by the block (with a link or another directory), so nothing was taken from it: figures the block showed are not kept.".to_string()
    };
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    // The parent is oi-tui's own (read-only inside the sandbox).
    let Ok(parent) = Dir::open(parent) else {
        return Ok(None);
    };
    let dir = match parent.open_dir(name) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                "The kernel's figure directory was removed or moved by the block, so no figures could be kept.".to_string(),
            );
        }
        Err(e) if is_link_error(&e) || e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(replaced());
        }
        Err(_) => return Ok(None),
    };
    if dir.identity().ok() != Some(identity) {
        return Err(replaced());
    }
    let Ok(names) = dir.names() else {
        return Ok(Some((dir, Vec::new())));
    };
    let mut paths: Vec<PathBuf> = names
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| ImageFormat::from_path(p).is_some())
        .collect();
    paths.sort();
    Ok(Some((dir, paths)))
}

/// The directory images are kept in, opened (made 0700 when missing), never through a
/// link: a block may have replaced it with one (it may be inside the workspace). Made
/// private on the directory opened, not by its path.
fn open_keep(keep: &Path) -> Result<Dir, String> {
    use std::os::unix::fs::DirBuilderExt;
    let shown = keep.display();
    if std::fs::symlink_metadata(keep).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(keep)
            .map_err(|e| format!("{shown} could not be created ({e})"))?;
    }
    // Its whole path, not only its last part: a block may have swapped a directory above
    // it for a link (the path is a real one, made so when the session started). The
    // directory walked to is the one used: nothing can be swapped between a check and use.
    let walked = match keep.strip_prefix("/") {
        Ok(relative) => {
            let root =
                Dir::open(Path::new("/")).map_err(|e| format!("/ could not be opened ({e})"))?;
            match root.walk(relative) {
                Ok(dir) => Some(dir),
                // (The last part a link is said below, with where it leads.)
                Err(crate::dirfd::WalkError::Link(at)) if at != relative => {
                    return Err(format!(
                        "{shown} lies under /{}, which is now a symbolic link, and oi-tui does not write through links (a block could have put it there); remove it",
                        at.display()
                    ));
                }
                Err(_) => None,
            }
        }
        Err(_) => None,
    };
    let dir = match walked {
        Some(dir) => dir,
        None => Dir::open_nofollow(keep).map_err(|e| {
            let link =
                std::fs::symlink_metadata(keep).is_ok_and(|m| m.file_type().is_symlink());
            if is_link_error(&e) || link {
                let to = std::fs::read_link(keep)
                    .map(|t| crate::safe_text::visible(&t.display().to_string()))
                    .unwrap_or_default();
                format!(
                    "{shown} is a symbolic link (to {to}), and oi-tui does not write through links (a block could have put it there); remove it"
                )
            } else if e.raw_os_error() == Some(libc::ENOTDIR) {
                format!("{shown} is not a directory")
            } else {
                format!("{shown} could not be opened ({e})")
            }
        })?,
    };
    let mode = dir
        .mode()
        .map_err(|e| format!("{shown} could not be read ({e})"))?;
    if mode & 0o077 != 0 {
        dir.set_mode(mode & 0o700)
            .map_err(|e| format!("{shown} could not be made private ({e})"))?;
    }
    Ok(dir)
}

/// Where a kept image goes: the directory held open, and its path (to name it by).
#[derive(Clone, Copy)]
struct Keep<'a> {
    dir: &'a Dir,
    path: &'a Path,
}

/// Keeps one image as `BLOCK-N.EXT` in `keep` and reads what it is. The source is opened
/// once, never through a link and only when it is a regular file (a block may have put a
/// link or a FIFO where an image was expected), and copied into a new file of oi-tui's;
/// what is then read is that copy.
fn keep_one(
    path: &Path,
    source: &ImageSource,
    figures: Figures<'_>,
    keep: Keep<'_>,
    block: u64,
    n: usize,
) -> Result<Image, String> {
    let name = shown_name(path, source);
    let format = ImageFormat::from_path(path).ok_or_else(|| format!("{name} is not an image."))?;
    let discard = || {
        if *source == ImageSource::Figure {
            figures.remove(path);
        }
    };
    let opened = if *source == ImageSource::Figure {
        figures.open(path)
    } else {
        open_regular(path)
    }
    .and_then(|f| f.metadata().map(|m| (f, m.len())));
    let (file, bytes) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            discard();
            return Err(format!("The image {name} could not be read: {e}."));
        }
    };
    if bytes > MAX_BYTES {
        discard();
        return Err(format!(
            "The image {name} ({}) is larger than {} and was not kept.",
            human_bytes(bytes),
            human_bytes(MAX_BYTES)
        ));
    }
    // A new file, never one that is there (a block run again keeps its images beside the
    // earlier ones): nothing in the directory is replaced or written through.
    let ext = format.extension();
    let mut created = None;
    for k in 1..=100u32 {
        let file_name = match k {
            1 => format!("{block}-{n}.{ext}"),
            k => format!("{block}-{n}-{k}.{ext}"),
        };
        match keep.dir.create_new(OsStr::new(&file_name), 0o600) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            other => {
                created = Some(other.map(|out| (file_name, out)));
                break;
            }
        }
    }
    let created = created.unwrap_or_else(|| {
        Err(std::io::Error::other(
            "every name for it is taken by an earlier image",
        ))
    });
    let (file_name, copied) = match created {
        Ok((file_name, mut out)) => {
            let copied = std::io::copy(&mut std::io::Read::take(file, MAX_BYTES), &mut out);
            (Some(file_name), copied)
        }
        Err(e) => (None, Err(e)),
    };
    discard();
    let remove_kept = || {
        if let Some(file_name) = &file_name {
            let _ = keep.dir.remove_file(OsStr::new(file_name));
        }
    };
    let kept = keep.path.join(file_name.as_deref().unwrap_or_default());
    if let Err(e) = copied {
        remove_kept();
        return Err(format!(
            "The image {name} could not be kept in {}: {e}.",
            keep.path.display()
        ));
    }
    let (width, height) = match dimensions(&kept, format) {
        Ok(dims) => dims,
        Err(e) => {
            remove_kept();
            return Err(format!(
                "{name} is not a readable {} image ({e}); it was not kept.",
                format.label()
            ));
        }
    };
    Ok(Image {
        path: kept,
        format,
        bytes,
        width,
        height,
        source: source.clone(),
    })
}

/// Opens a file for reading only if it is a regular file, not through a link (and without
/// waiting on a FIFO).
fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(
            "it is not a regular file (a link, a FIFO or a device)",
        ));
    }
    Ok(file)
}

/// The pixel dimensions: read from the header of a raster image (it must decode that far),
/// from the `width`/`height` (or `viewBox`) of an SVG, when it says them.
pub(crate) fn dimensions(
    path: &Path,
    format: ImageFormat,
) -> Result<(Option<u32>, Option<u32>), String> {
    if format == ImageFormat::Svg {
        let head = read_head(path, 8192).map_err(|e| e.to_string())?;
        return svg_dimensions(&head).ok_or_else(|| "no <svg> element".to_string());
    }
    let reader = image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .map_err(|e| e.to_string())?;
    let (w, h) = reader.into_dimensions().map_err(|e| e.to_string())?;
    Ok((Some(w), Some(h)))
}

fn read_head(path: &Path, limit: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)?
        .take(limit)
        .read_to_end(&mut head)?;
    Ok(String::from_utf8_lossy(&head).into_owned())
}

/// An SVG's size from its root element: `width`/`height` in pixels (or unitless), else the
/// `viewBox`. Some((None, None)) for an SVG that says neither; None for no `<svg`.
fn svg_dimensions(text: &str) -> Option<(Option<u32>, Option<u32>)> {
    let start = text.find("<svg")?;
    let tag = &text[start..];
    let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
    let attr = |name: &str| -> Option<&str> {
        let mut rest = tag;
        loop {
            let at = rest.find(name)?;
            let before = rest[..at].chars().last();
            rest = &rest[at + name.len()..];
            if before.is_some_and(char::is_whitespace)
                && let Some(value) = rest.trim_start().strip_prefix('=')
            {
                let value = value.trim_start();
                let quote = value.chars().next()?;
                let value = &value[1..];
                return Some(&value[..value.find(quote)?]);
            }
        }
    };
    let pixels = |v: &str| -> Option<u32> {
        let v = v.trim();
        let number = v.strip_suffix("px").unwrap_or(v);
        let n: f64 = number.parse().ok()?;
        (n.is_finite() && n > 0.0 && n < 1e6).then(|| n.round() as u32)
    };
    let (w, h) = (
        attr("width").and_then(pixels),
        attr("height").and_then(pixels),
    );
    if w.is_some() && h.is_some() {
        return Some((w, h));
    }
    let view: Vec<f64> = attr("viewBox")
        .map(|v| {
            v.split([' ', ','])
                .filter(|s| !s.is_empty())
                .filter_map(|s| s.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if let [_, _, vw, vh] = view[..] {
        let px = |n: f64| (n.is_finite() && n > 0.0 && n < 1e6).then(|| n.round() as u32);
        return Some((px(vw), px(vh)));
    }
    Some((None, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_sizes_come_from_width_height_or_view_box() {
        assert_eq!(
            svg_dimensions(
                r#"<?xml?><svg xmlns="x" width="460.8pt" height="345.6pt" viewBox="0 0 460.8 345.6">"#
            ),
            Some((Some(461), Some(346)))
        );
        assert_eq!(
            svg_dimensions(r#"<svg width="200" height='100px'>"#),
            Some((Some(200), Some(100)))
        );
        assert_eq!(
            svg_dimensions(r#"<svg stroke-width="3" viewBox="0,0,30,20">"#),
            Some((Some(30), Some(20)))
        );
        assert_eq!(svg_dimensions("<svg>"), Some((None, None)));
        assert_eq!(svg_dimensions("<html>"), None);
    }
}
