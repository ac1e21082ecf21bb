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

/// Fits a colour to the terminal: RGB becomes the nearest of 256 colours, or at 16 colours
/// the ANSI colour of the nearest hue (see [`rgb_to_16`]).
pub fn adapt(color: Color, depth: Depth) -> Option<Color> {
    match (depth, color) {
        (Depth::None, _) => None,
        (Depth::TrueColor, c) => Some(c),
        (Depth::Ansi256, Color::Rgb(r, g, b)) => Some(Color::Indexed(rgb_to_256(r, g, b))),
        (Depth::Ansi16, Color::Rgb(r, g, b)) => Some(rgb_to_16(r, g, b)),
        (Depth::Ansi16, Color::Indexed(i)) => Some(indexed_to_16(i)),
        (_, c) => Some(c),
    }
}

/// The levels of the 6×6×6 colour cube of the 256-colour palette.
const CUBE: [u8; 6] = [0, 95, 135, 175, 215, 255];

/// The nearest of the 256 colours: the closer of the colour cube's nearest entry and the
/// grey ramp's, so that near-greys stay grey instead of taking a tint.
fn rgb_to_256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> usize {
        CUBE.iter()
            .enumerate()
            .min_by_key(|(_, c)| (**c as i32 - v as i32).abs())
            .map_or(0, |(i, _)| i)
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube = (16 + 36 * lr + 6 * lg + lb) as u8;
    let cube_rgb = (CUBE[lr], CUBE[lg], CUBE[lb]);
    let mean = (r as u32 + g as u32 + b as u32) / 3;
    let step = (mean.saturating_sub(3) / 10).min(23) as u8;
    let grey_value = 8 + 10 * step;
    let grey = 232 + step;
    if distance((r, g, b), (grey_value, grey_value, grey_value)) < distance((r, g, b), cube_rgb) {
        grey
    } else {
        cube
    }
}

fn distance(a: (u8, u8, u8), b: (u8, u8, u8)) -> i32 {
    let d = |x: u8, y: u8| (x as i32 - y as i32).pow(2);
    d(a.0, b.0) + d(a.1, b.1) + d(a.2, b.2)
}

/// A 256-palette index as one of the 16 colours.
fn indexed_to_16(i: u8) -> Color {
    const NAMED: [Color; 16] = [
        Color::Black,
        Color::Red,
        Color::Green,
        Color::Yellow,
        Color::Blue,
        Color::Magenta,
        Color::Cyan,
        Color::Gray,
        Color::DarkGray,
        Color::LightRed,
        Color::LightGreen,
        Color::LightYellow,
        Color::LightBlue,
        Color::LightMagenta,
        Color::LightCyan,
        Color::White,
    ];
    match i {
        0..=15 => NAMED[i as usize],
        16..=231 => {
            let n = i - 16;
            let c = |k: u8| CUBE[k as usize];
            rgb_to_16(c(n / 36), c(n / 6 % 6), c(n % 6))
        }
        _ => {
            let v = 8 + 10 * (i - 232);
            rgb_to_16(v, v, v)
        }
    }
}

/// One of the 16 ANSI colours for an RGB colour, by hue: a saturated colour becomes the
/// ANSI colour of the nearest hue (red, yellow, green, cyan, blue, magenta), bright when
/// it is light; only a colour with (almost) no saturation becomes black, grey or white.
/// (Nearest by RGB distance would turn the soft colours of most themes into grey.)
pub fn rgb_to_16(r: u8, g: u8, b: u8) -> Color {
    let (rf, gf, bf) = (r as f32 / 255.0, g as f32 / 255.0, b as f32 / 255.0);
    let max = rf.max(gf).max(bf);
    let min = rf.min(gf).min(bf);
    let chroma = max - min;
    let lightness = (max + min) / 2.0;
    let saturation = if chroma == 0.0 {
        0.0
    } else {
        chroma / (1.0 - (2.0 * lightness - 1.0).abs()).max(f32::EPSILON)
    };
    if chroma < 0.08 || saturation < 0.15 {
        return if lightness < 0.2 {
            Color::Black
        } else if lightness < 0.5 {
            Color::DarkGray
        } else if lightness < 0.8 {
            Color::Gray
        } else {
            Color::White
        };
    }
    let hue = if max == rf {
        60.0 * ((gf - bf) / chroma)
    } else if max == gf {
        60.0 * ((bf - rf) / chroma + 2.0)
    } else {
        60.0 * ((rf - gf) / chroma + 4.0)
    }
    .rem_euclid(360.0);
    let bright = lightness >= 0.6 || (max >= 0.9 && lightness >= 0.45);
    let pick = |dark: Color, light: Color| if bright { light } else { dark };
    match hue {
        h if !(20.0..330.0).contains(&h) => pick(Color::Red, Color::LightRed),
        // Orange: the dark yellow, which many 16-colour palettes draw brown or orange.
        h if h < 35.0 => Color::Yellow,
        h if h < 70.0 => pick(Color::Yellow, Color::LightYellow),
        h if h < 165.0 => pick(Color::Green, Color::LightGreen),
        h if h < 200.0 => pick(Color::Cyan, Color::LightCyan),
        h if h < 260.0 => pick(Color::Blue, Color::LightBlue),
        _ => pick(Color::Magenta, Color::LightMagenta),
    }
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

    fn is_grey(c: Color) -> bool {
        matches!(
            c,
            Color::Black | Color::DarkGray | Color::Gray | Color::White | Color::Reset
        )
    }

    #[test]
    fn sixteen_colours_keep_their_hue() {
        let cases = [
            ((255, 0, 0), Color::LightRed),
            ((0xbf, 0x61, 0x6a), Color::Red),
            ((0xcb, 0x24, 0x31), Color::Red),
            ((0xa3, 0xbe, 0x8c), Color::LightGreen),
            ((0x22, 0x86, 0x3a), Color::Green),
            ((0xeb, 0xcb, 0x8b), Color::LightYellow),
            ((0xb0, 0x88, 0x00), Color::Yellow),
            ((0x8f, 0xa1, 0xb3), Color::LightBlue),
            ((0x00, 0x5c, 0xc5), Color::Blue),
            ((0x96, 0xb5, 0xb4), Color::LightCyan),
            ((0xb4, 0x8e, 0xad), Color::LightMagenta),
            // Truly unsaturated colours are greys.
            ((0xc0, 0xc5, 0xce), Color::Gray),
            ((0x65, 0x73, 0x7e), Color::DarkGray),
            ((0x24, 0x29, 0x2e), Color::Black),
            ((0xff, 0xff, 0xff), Color::White),
        ];
        for ((r, g, b), want) in cases {
            assert_eq!(rgb_to_16(r, g, b), want, "#{r:02x}{g:02x}{b:02x}");
        }
        assert_eq!(indexed_to_16(9), Color::LightRed);
        assert_eq!(indexed_to_16(196), Color::LightRed);
        assert_eq!(indexed_to_16(28), Color::Green);
        assert_eq!(indexed_to_16(240), Color::DarkGray);
    }

    #[test]
    fn every_theme_keeps_diff_and_focus_colours_at_16_colours() {
        for name in Theme::names() {
            let theme = Theme::load(name, Depth::Ansi16).unwrap();
            let fg = |s: Style| s.fg.unwrap_or(Color::Reset);
            assert!(
                matches!(fg(theme.diff_add), Color::Green | Color::LightGreen),
                "{name}: diff add is {:?}",
                theme.diff_add.fg
            );
            assert!(
                matches!(fg(theme.diff_remove), Color::Red | Color::LightRed),
                "{name}: diff remove is {:?}",
                theme.diff_remove.fg
            );
            for (role, style) in [
                ("focus", theme.focus),
                ("accent", theme.accent),
                ("error", theme.error),
                ("success", theme.success),
                ("warning", theme.warning),
            ] {
                assert!(!is_grey(fg(style)), "{name}: {role} is {:?}", style.fg);
            }
        }
    }

    #[test]
    fn the_256_colour_path_keeps_greys_grey() {
        // #c0c5ce (a near-grey text colour) used to become a tinted cube colour.
        let Some(Color::Indexed(i)) = adapt(Color::Rgb(0xc0, 0xc5, 0xce), Depth::Ansi256) else {
            panic!("not indexed");
        };
        assert!(i >= 232, "{i} is not on the grey ramp");
        assert_eq!(rgb_to_256(255, 0, 0), 196);
        assert_eq!(rgb_to_256(0, 0, 0), 16);
        assert_eq!(rgb_to_256(0x87, 0xaf, 0xd7), 110);
        let dark = Theme::load("dark", Depth::Ansi256).unwrap();
        assert!(matches!(dark.focus.fg, Some(Color::Indexed(_))));
        let none = Theme::load("dark", Depth::None).unwrap();
        assert_eq!((none.focus.fg, none.diff_add.fg), (None, None));
    }
}
