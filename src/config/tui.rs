//! The workbench's own table, `[tui]`: how it draws what blocks make. `images` chooses the
//! terminal graphics protocol for a block's images (`auto` asks the terminal at start).

use serde::Deserialize;

/// How the workbench draws images: asked of the terminal, one protocol, or not at all.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageMode {
    /// The terminal's answer to a query at start, and its environment, decide.
    #[default]
    Auto,
    Kitty,
    Sixel,
    Iterm2,
    /// Unicode half-blocks (▀ ▄), which every terminal shows.
    Halfblocks,
    /// No picture: the line that names each image only.
    Off,
}

impl ImageMode {
    pub const NAMES: &'static str = "auto, kitty, sixel, iterm2, halfblocks, off";

    /// Parses a flag's value (`--images kitty`).
    pub fn parse(text: &str) -> Result<ImageMode, String> {
        Ok(match text.trim().to_ascii_lowercase().as_str() {
            "auto" => ImageMode::Auto,
            "kitty" => ImageMode::Kitty,
            "sixel" => ImageMode::Sixel,
            "iterm2" | "iterm" => ImageMode::Iterm2,
            "halfblocks" | "half-blocks" | "blocks" => ImageMode::Halfblocks,
            "off" | "none" => ImageMode::Off,
            other => {
                return Err(format!(
                    "`{other}` is not an image mode; the modes are {}",
                    ImageMode::NAMES
                ));
            }
        })
    }
}

/// The `[tui]` table.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuiFile {
    /// `auto`, `kitty`, `sixel`, `iterm2`, `halfblocks` or `off`.
    pub images: Option<ImageMode>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_from_flags_and_files() {
        assert_eq!(ImageMode::parse("Kitty"), Ok(ImageMode::Kitty));
        assert_eq!(ImageMode::parse("half-blocks"), Ok(ImageMode::Halfblocks));
        assert!(ImageMode::parse("png").unwrap_err().contains("auto, kitty"));
        let file: TuiFile = toml::from_str("images = \"sixel\"").unwrap();
        assert_eq!(file.images, Some(ImageMode::Sixel));
        let bad = toml::from_str::<TuiFile>("images = \"jpeg\"").unwrap_err();
        assert!(bad.to_string().contains("unknown variant"), "{bad}");
    }
}
