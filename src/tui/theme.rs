//! Colour themes (`themes/*.toml`): named styles for every part of the workbench, adapted
//! to what the terminal can show (truecolor, 256 or 16 colours) and to `NO_COLOR`.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

const BUILT_IN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.toml"),
    ),
];

/// How many colours the terminal shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    None,
    Ansi16,
    Ansi256,
    TrueColor,
}

impl Depth {
    /// What this terminal supports: `NO_COLOR` wins, then what `supports-color` detects.
    pub fn detect() -> Depth {
        if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return Depth::None;
        }
        match supports_color::on(supports_color::Stream::Stdout) {
            Some(level) if level.has_16m => Depth::TrueColor,
            Some(level) if level.has_256 => Depth::Ansi256,
            Some(_) => Depth::Ansi16,
            None => Depth::Ansi16,
        }
    }
}

#[derive(Debug, Deserialize)]
struct ThemeFile {
    name: String,
    syntax: String,
    colors: BTreeMap<String, String>,
}

/// The styles in use.
#[derive(Debug, Clone)]
pub struct Theme {
    pub name: String,
    /// The syntect theme for code.
    pub syntax: String,
    pub depth: Depth,
    pub text: Style,
    pub muted: Style,
    pub accent: Style,
    pub border: Style,
    pub focus: Style,
    pub user: Style,
    pub assistant: Style,
    pub success: Style,
    pub error: Style,
    pub warning: Style,
    pub diff_add: Style,
    pub diff_remove: Style,
    pub status: Style,
    pub key: Style,
}

impl Theme {
    /// The names of the built-in themes.
    pub fn names() -> Vec<&'static str> {
        BUILT_IN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in theme by name, or a theme file by path.
    pub fn load(name_or_path: &str, depth: Depth) -> Result<Theme, String> {
        let text = match BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
            Some((_, text)) => (*text).to_string(),
            None if std::path::Path::new(name_or_path).exists() => {
                std::fs::read_to_string(name_or_path)
                    .map_err(|e| format!("cannot read theme {name_or_path}: {e}"))?
            }
            None => {
                return Err(format!(
                    "unknown theme `{name_or_path}`: use {} or the path of a theme file",
                    Theme::names().join(", ")
                ));
            }
        };
        let file: ThemeFile =
            toml::from_str(&text).map_err(|e| format!("theme {name_or_path}: {}", e.message()))?;
        let color = |key: &str| -> Result<Style, String> {
            let value = file
                .colors
                .get(key)
                .ok_or_else(|| format!("theme {}: no colour `{key}`", file.name))?;
            let parsed = parse_color(value)
                .ok_or_else(|| format!("theme {}: `{key} = {value}` is not a colour", file.name))?;
            Ok(match adapt(parsed, depth) {
                Some(c) => Style::new().fg(c),
                None => Style::new(),
            })
        };
        let status_bg = parse_color(file.colors.get("status_bg").map_or("", String::as_str))
            .and_then(|c| adapt(c, depth));
        let mut status = color("status_fg")?;
        status = match status_bg {
            Some(bg) => status.bg(bg),
            None => status.add_modifier(Modifier::REVERSED),
        };
        Ok(Theme {
            name: file.name.clone(),
            syntax: file.syntax.clone(),
            depth,
            text: color("text")?,
            muted: color("muted")?,
            accent: color("accent")?,
            border: color("border")?,
            focus: color("focus")?.add_modifier(Modifier::BOLD),
            user: color("user")?.add_modifier(Modifier::BOLD),
            assistant: color("assistant")?.add_modifier(Modifier::BOLD),
            success: color("success")?,
            error: color("error")?,
            warning: color("warning")?,
            diff_add: color("diff_add")?,
            diff_remove: color("diff_remove")?,
            status,
            key: color("key")?.add_modifier(Modifier::BOLD),
        })
    }

    /// Whether colours are drawn at all.
    pub fn colored(&self) -> bool {
        self.depth != Depth::None
    }
}

fn parse_color(value: &str) -> Option<Color> {
    let v = value.trim();
    if let Some(hex) = v.strip_prefix('#') {
        if hex.len() != 6 {
            return None;
        }
        let n = u32::from_str_radix(hex, 16).ok()?;
        return Some(Color::Rgb((n >> 16) as u8, (n >> 8) as u8, n as u8));
    }
    v.parse().ok()
}

/// Fits a colour to the terminal: RGB becomes the nearest of 256 or 16 colours.
pub fn adapt(color: Color, depth: Depth) -> Option<Color> {
    match (depth, color) {
        (Depth::None, _) => None,
        (Depth::TrueColor, c) => Some(c),
        (Depth::Ansi256, Color::Rgb(r, g, b)) => Some(Color::Indexed(rgb_to_256(r, g, b))),
        (Depth::Ansi16, Color::Rgb(r, g, b)) => Some(rgb_to_16(r, g, b)),
        (Depth::Ansi16, Color::Indexed(_)) => Some(Color::Gray),
        (_, c) => Some(c),
    }
}

fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    if r == g && g == b {
        if r < 8 {
            return 16;
        }
        if r > 248 {
            return 231;
        }
        return 232 + ((r as u16 - 8) * 24 / 247) as u8;
    }
    16 + 36 * level(r) + 6 * level(g) + level(b)
}

fn rgb_to_16(r: u8, g: u8, b: u8) -> Color {
    const PALETTE: [(Color, (u8, u8, u8)); 16] = [
        (Color::Black, (0, 0, 0)),
        (Color::Red, (205, 0, 0)),
        (Color::Green, (0, 205, 0)),
        (Color::Yellow, (205, 205, 0)),
        (Color::Blue, (0, 0, 238)),
        (Color::Magenta, (205, 0, 205)),
        (Color::Cyan, (0, 205, 205)),
        (Color::Gray, (229, 229, 229)),
        (Color::DarkGray, (127, 127, 127)),
        (Color::LightRed, (255, 0, 0)),
        (Color::LightGreen, (0, 255, 0)),
        (Color::LightYellow, (255, 255, 0)),
        (Color::LightBlue, (92, 92, 255)),
        (Color::LightMagenta, (255, 0, 255)),
        (Color::LightCyan, (0, 255, 255)),
        (Color::White, (255, 255, 255)),
    ];
    let distance = |(pr, pg, pb): (u8, u8, u8)| {
        let d = |a: u8, b: u8| (a as i32 - b as i32).pow(2);
        d(r, pr) + d(g, pg) + d(b, pb)
    };
    PALETTE
        .iter()
        .min_by_key(|(_, rgb)| distance(*rgb))
        .map_or(Color::Gray, |(c, _)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_theme_loads_at_every_depth() {
        for name in Theme::names() {
            for depth in [Depth::None, Depth::Ansi16, Depth::Ansi256, Depth::TrueColor] {
                let theme = Theme::load(name, depth).unwrap();
                assert_eq!(theme.name, name);
                if depth == Depth::None {
                    assert_eq!(theme.text.fg, None);
                }
            }
        }
        assert!(
            Theme::load("neon", Depth::TrueColor)
                .unwrap_err()
                .contains("unknown theme")
        );
    }

    #[test]
    fn colours_fit_the_terminal() {
        assert_eq!(
            adapt(Color::Rgb(255, 0, 0), Depth::Ansi16),
            Some(Color::LightRed)
        );
        assert_eq!(
            adapt(Color::Rgb(0, 0, 0), Depth::Ansi256),
            Some(Color::Indexed(16))
        );
        assert_eq!(adapt(Color::Rgb(1, 2, 3), Depth::None), None);
        assert_eq!(parse_color("#102030"), Some(Color::Rgb(16, 32, 48)));
        assert_eq!(parse_color("lightblue"), Some(Color::LightBlue));
        assert_eq!(parse_color("#12"), None);
    }
}
