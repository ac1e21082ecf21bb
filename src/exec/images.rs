//! The images a block made, gathered when it ends: the figures its driver saved (matplotlib,
//! PIL, R's plot device write them into the kernel's private `images` directory, named by
//! `FIGURES_VAR`) and the image files written under the working directory while it ran.
//! Each is kept in the session's image directory as `BLOCK-N.EXT`: figures are moved there
//! (they are the kernel's), files are copied (they are the user's, and may change later).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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
    let mut found: Vec<(PathBuf, ImageSource)> = figures(sources.figures)
        .into_iter()
        .map(|p| (p, ImageSource::Figure))
        .collect();
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
    let kept = keep_found(found, keep, block);
    gathered.images = kept.images;
    gathered.notes = kept.notes;
    gathered
}

/// Keeps what was found (local files: figures are moved, files copied) into `keep`,
/// numbered from 1 as `BLOCK-N.EXT`, with notes for what could not be kept.
pub(crate) fn keep_found(found: Vec<(PathBuf, ImageSource)>, keep: &Path, block: u64) -> Gathered {
    let mut gathered = Gathered::default();
    if found.is_empty() {
        return gathered;
    }
    if let Err(e) = crate::secrets::private_dir(keep) {
        gathered.notes.push(format!(
            "The block made {} image(s), but they could not be kept: {} could not be created ({e}).",
            found.len(),
            keep.display()
        ));
        discard_figures(&found);
        return gathered;
    }
    let mut left_out = Vec::new();
    for (path, source) in found {
        if gathered.images.len() >= MAX_IMAGES {
            left_out.push(shown_name(&path, &source));
            if source == ImageSource::Figure {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        match keep_one(&path, &source, keep, block, gathered.images.len() + 1) {
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

/// The figures a driver saved, in the order it saved them (their names count up).
fn figures(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| ImageFormat::from_path(p).is_some())
        .collect();
    paths.sort();
    paths
}

fn discard_figures(found: &[(PathBuf, ImageSource)]) {
    for (path, source) in found {
        if *source == ImageSource::Figure {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Keeps one image as `BLOCK-N.EXT` in `keep` and reads what it is. The source is opened
/// once, never through a link and only when it is a regular file (a block may have put a
/// link or a FIFO where an image was expected), and copied into a new file of oi-tui's;
/// what is then read is that copy.
fn keep_one(
    path: &Path,
    source: &ImageSource,
    keep: &Path,
    block: u64,
    n: usize,
) -> Result<Image, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = shown_name(path, source);
    let format = ImageFormat::from_path(path).ok_or_else(|| format!("{name} is not an image."))?;
    let discard = || {
        if *source == ImageSource::Figure {
            let _ = std::fs::remove_file(path);
        }
    };
    let opened = open_regular(path).and_then(|f| f.metadata().map(|m| (f, m.len())));
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
    let kept = keep.join(format!("{block}-{n}.{}", format.extension()));
    // A block run again replaces its images.
    let _ = std::fs::remove_file(&kept);
    let copied = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&kept)
        .and_then(|mut out| std::io::copy(&mut std::io::Read::take(file, MAX_BYTES), &mut out));
    discard();
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&kept);
        return Err(format!(
            "The image {name} could not be kept in {}: {e}.",
            keep.display()
        ));
    }
    let (width, height) = match dimensions(&kept, format) {
        Ok(dims) => dims,
        Err(e) => {
            let _ = std::fs::remove_file(&kept);
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
