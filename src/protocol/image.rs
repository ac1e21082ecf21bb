//! The images a block made: figures it showed (matplotlib, PIL, R's plot device) and image
//! files it wrote in the working directory. Each is kept with the session; a result lists
//! them by where they are kept, their size and their pixel dimensions.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The formats oi-tui notices, by file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageFormat {
    Png,
    Jpeg,
    Gif,
    Webp,
    Svg,
}

impl ImageFormat {
    /// The format a file's name says (`chart.PNG`, `photo.jpeg`), if it is an image's.
    pub fn from_path(path: &Path) -> Option<ImageFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "png" => ImageFormat::Png,
            "jpg" | "jpeg" => ImageFormat::Jpeg,
            "gif" => ImageFormat::Gif,
            "webp" => ImageFormat::Webp,
            "svg" => ImageFormat::Svg,
            _ => return None,
        })
    }

    /// The file name extension it is kept under.
    pub fn extension(self) -> &'static str {
        match self {
            ImageFormat::Png => "png",
            ImageFormat::Jpeg => "jpg",
            ImageFormat::Gif => "gif",
            ImageFormat::Webp => "webp",
            ImageFormat::Svg => "svg",
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Gif => "image/gif",
            ImageFormat::Webp => "image/webp",
            ImageFormat::Svg => "image/svg+xml",
        }
    }

    /// `PNG`, `JPEG`, ...
    pub fn label(self) -> &'static str {
        match self {
            ImageFormat::Png => "PNG",
            ImageFormat::Jpeg => "JPEG",
            ImageFormat::Gif => "GIF",
            ImageFormat::Webp => "WebP",
            ImageFormat::Svg => "SVG",
        }
    }

    /// Whether it is made of pixels (SVG is drawn, not decoded).
    pub fn is_raster(self) -> bool {
        self != ImageFormat::Svg
    }
}

/// Where an image came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ImageSource {
    /// A figure the block showed (`plt.show()`, an open figure, `Image.show()`, R's plot).
    Figure,
    /// A file the block wrote (the copy kept is `Image::path`; this is where it was).
    File { path: PathBuf },
}

/// One image a block made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// Where the copy kept with the session is.
    pub path: PathBuf,
    pub format: ImageFormat,
    /// Its size in bytes.
    pub bytes: u64,
    /// Its pixel dimensions (None: unknown, as for an SVG without a size).
    pub width: Option<u32>,
    pub height: Option<u32>,
    pub source: ImageSource,
}

impl Image {
    /// `640×480 PNG, 22.5 KB`.
    pub fn describe(&self) -> String {
        let dims = match (self.width, self.height) {
            (Some(w), Some(h)) => format!("{w}×{h} "),
            _ => String::new(),
        };
        format!("{dims}{}, {}", self.format.label(), human_bytes(self.bytes))
    }

    /// `figure` or the file's name as the block wrote it.
    pub fn origin(&self) -> String {
        match &self.source {
            ImageSource::Figure => "figure".to_string(),
            ImageSource::File { path } => path.display().to_string(),
        }
    }

    /// One line for people and for the model:
    /// `image 1: figure, 640×480 PNG, 22.5 KB, kept at /…/3-1.png`.
    pub fn line(&self, n: usize) -> String {
        format!(
            "image {n}: {}, {}, kept at {}",
            self.origin(),
            self.describe(),
            self.path.display()
        )
    }
}

/// Formats a byte count for people: `512 B`, `3.4 KB`, `97.7 MB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_file_names() {
        assert_eq!(
            ImageFormat::from_path(Path::new("a/Chart.PNG")),
            Some(ImageFormat::Png)
        );
        assert_eq!(
            ImageFormat::from_path(Path::new("x.jpeg")),
            Some(ImageFormat::Jpeg)
        );
        assert_eq!(ImageFormat::from_path(Path::new("x.txt")), None);
        assert_eq!(ImageFormat::from_path(Path::new("png")), None);
    }

    #[test]
    fn a_line_says_origin_dimensions_size_and_place() {
        let image = Image {
            path: PathBuf::from("/data/images/s/3-1.png"),
            format: ImageFormat::Png,
            bytes: 23_000,
            width: Some(640),
            height: Some(480),
            source: ImageSource::Figure,
        };
        assert_eq!(
            image.line(1),
            "image 1: figure, 640×480 PNG, 22.5 KB, kept at /data/images/s/3-1.png"
        );
    }
}
