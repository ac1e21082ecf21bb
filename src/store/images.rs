//! Images kept with a session: under `images/<session id>/` in the data directory, listed
//! per block in the store (`blocks.images`, JSON) with paths relative to the data
//! directory, so that a data directory that moves keeps its images.

use std::path::{Path, PathBuf};

use crate::protocol::Image;

/// The directory of a session's images.
pub fn session_dir(data_dir: &Path, session_id: &str) -> PathBuf {
    data_dir.join("images").join(session_id)
}

/// The column's JSON: each path relative to the data directory when it is under it.
pub(super) fn to_column(images: &[Image], data_dir: &Path) -> String {
    let kept: Vec<Image> = images
        .iter()
        .map(|image| {
            let mut image = image.clone();
            if let Ok(relative) = image.path.strip_prefix(data_dir) {
                image.path = relative.to_path_buf();
            }
            image
        })
        .collect();
    serde_json::to_string(&kept).unwrap_or_else(|_| "[]".to_string())
}

/// The column read back, paths made absolute again. A column that cannot be read gives
/// no images rather than failing the whole session.
pub(super) fn from_column(column: &str, data_dir: &Path) -> Vec<Image> {
    let mut images: Vec<Image> = serde_json::from_str(column).unwrap_or_default();
    for image in &mut images {
        if image.path.is_relative() {
            image.path = data_dir.join(&image.path);
        }
    }
    images
}

/// Removes a deleted session's images. A directory that is not there is no error.
pub(super) fn remove_session(data_dir: &Path, session_id: &str) -> std::io::Result<()> {
    // An id is the store's own (`20261130-041530-3f9a2c`); one that could leave the
    // images directory is not acted on.
    if session_id.is_empty() || session_id.contains(['/', '\\']) || session_id.starts_with('.') {
        return Ok(());
    }
    match std::fs::remove_dir_all(session_dir(data_dir, session_id)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// `path` with every link in it resolved: its longest existing part made real, and the rest
/// (not made yet) put after it.
pub fn real_path(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ImageFormat, ImageSource};

    #[test]
    fn paths_are_kept_relative_to_the_data_directory() {
        let data = Path::new("/data/oi");
        let images = vec![
            Image {
                path: data.join("images/s1/3-1.png"),
                format: ImageFormat::Png,
                bytes: 10,
                width: Some(4),
                height: Some(3),
                source: ImageSource::Figure,
            },
            Image {
                path: PathBuf::from("/elsewhere/x.svg"),
                format: ImageFormat::Svg,
                bytes: 5,
                width: None,
                height: None,
                source: ImageSource::File {
                    path: PathBuf::from("/home/ada/project/x.svg"),
                },
            },
        ];
        let column = to_column(&images, data);
        assert!(column.contains("\"images/s1/3-1.png\""), "{column}");
        assert!(!column.contains("/data/oi"), "{column}");
        let moved = Path::new("/moved/oi");
        let back = from_column(&column, moved);
        assert_eq!(back[0].path, moved.join("images/s1/3-1.png"));
        assert_eq!(back[1].path, PathBuf::from("/elsewhere/x.svg"));
        assert!(from_column("not json", data).is_empty());
    }
}
