//! Syntax highlighting with syntect, loaded once in the background (it takes a while in a
//! debug build) and capped, so that a huge line never stalls a frame: lines longer than
//! `MAX_LINE` characters, and lines past `MAX_LINES`, are shown plain.

use std::sync::OnceLock;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use syntect::highlighting::{
    FontStyle, HighlightIterator, HighlightState, Highlighter as SyntectHighlighter, ThemeSet,
};
use syntect::parsing::{ParseState, ScopeStack, SyntaxSet};

use super::theme::{Depth, adapt};

const MAX_LINE: usize = 400;
const MAX_LINES: usize = 3000;
/// Lines of a fenced block highlighted in the chat; the rest is plain. The chat is a
/// transcript: a long block is read in the code pane, and colouring thousands of its lines
/// in the chat would stall the frame that shows the reply.
const CHAT_MAX_LINES: usize = 400;

struct Loaded {
    syntaxes: SyntaxSet,
    themes: ThemeSet,
}

static LOADED: OnceLock<Loaded> = OnceLock::new();

/// Starts loading the syntax definitions in a background thread.
pub fn preload() {
    std::thread::spawn(load);
}

/// Loads the syntax definitions now (once), waiting for them.
pub fn load() {
    LOADED.get_or_init(|| Loaded {
        syntaxes: SyntaxSet::load_defaults_newlines(),
        themes: ThemeSet::load_defaults(),
    });
}

/// Whether highlighting is ready (until then, code is shown plain).
pub fn ready() -> bool {
    LOADED.get().is_some()
}

/// Control, invisible and bidirectional characters shown visibly: one implementation for
/// every face, in [`crate::safe_text`].
pub use crate::safe_text::visible;

/// The code as styled lines, or plain lines when highlighting is not ready or the language
/// is unknown.
pub fn highlight(
    code: &str,
    language: &str,
    syntax_theme: &str,
    depth: Depth,
) -> Vec<Line<'static>> {
    all_lines(code, Highlighter::new(language, syntax_theme, depth))
}

/// [`highlight`] for a fenced block in the chat: its first `CHAT_MAX_LINES` lines.
pub fn highlight_in_chat(
    code: &str,
    language: &str,
    syntax_theme: &str,
    depth: Depth,
) -> Vec<Line<'static>> {
    all_lines(code, Highlighter::in_chat(language, syntax_theme, depth))
}

fn all_lines(code: &str, mut highlighter: Highlighter) -> Vec<Line<'static>> {
    let code = code.replace("\r\n", "\n");
    code.lines().map(|line| highlighter.line(line)).collect()
}

/// Highlights code line by line, keeping the parser's state between lines, so that code
/// arriving a line at a time (a streaming fenced block) is highlighted once per line.
/// [`highlight`] is this over all lines, so both give the same lines.
pub struct Highlighter {
    state: Option<State>,
    depth: Depth,
    /// Lines highlighted so far (past `limit`, lines stay plain).
    count: usize,
    limit: usize,
}

struct State {
    loaded: &'static Loaded,
    theme: &'static syntect::highlighting::Theme,
    parse: ParseState,
    highlight: HighlightState,
}

impl Highlighter {
    /// A highlighter for `language` in the syntect theme `syntax_theme`; plain when
    /// highlighting is not loaded yet, the language is unknown or there are no colours.
    pub fn new(language: &str, syntax_theme: &str, depth: Depth) -> Highlighter {
        let state = LOADED
            .get()
            .filter(|_| depth != Depth::None)
            .and_then(|loaded| {
                let syntax = loaded
                    .syntaxes
                    .find_syntax_by_token(syntax_token(language))
                    .or_else(|| loaded.syntaxes.find_syntax_by_token(language))?;
                let theme = loaded
                    .themes
                    .themes
                    .get(syntax_theme)
                    .or_else(|| loaded.themes.themes.values().next())?;
                let highlight =
                    HighlightState::new(&SyntectHighlighter::new(theme), ScopeStack::new());
                Some(State {
                    loaded,
                    theme,
                    parse: ParseState::new(syntax),
                    highlight,
                })
            });
        Highlighter {
            state,
            depth,
            count: 0,
            limit: MAX_LINES,
        }
    }

    /// A highlighter for a fenced block in the chat (see `CHAT_MAX_LINES`).
    pub fn in_chat(language: &str, syntax_theme: &str, depth: Depth) -> Highlighter {
        Highlighter {
            limit: CHAT_MAX_LINES,
            ..Highlighter::new(language, syntax_theme, depth)
        }
    }

    /// The next line (without its newline), highlighted.
    pub fn line(&mut self, line: &str) -> Line<'static> {
        let index = self.count;
        self.count += 1;
        let depth = self.depth;
        match &mut self.state {
            Some(st) if index < self.limit && line.chars().count() <= MAX_LINE => {
                styled(st, line, depth).unwrap_or_else(|| plain(line))
            }
            _ => plain(line),
        }
    }

    /// How the line after the ones so far would look, without taking it (for a line still
    /// being written).
    pub fn peek(&self, line: &str) -> Line<'static> {
        match &self.state {
            Some(st) if self.count < self.limit && line.chars().count() <= MAX_LINE => {
                let mut st = State {
                    loaded: st.loaded,
                    theme: st.theme,
                    parse: st.parse.clone(),
                    highlight: st.highlight.clone(),
                };
                styled(&mut st, line, self.depth).unwrap_or_else(|| plain(line))
            }
            _ => plain(line),
        }
    }
}

fn plain(line: &str) -> Line<'static> {
    Line::from(visible(line))
}

fn styled(st: &mut State, line: &str, depth: Depth) -> Option<Line<'static>> {
    let with_newline = format!("{line}\n");
    let ops = st
        .parse
        .parse_line(&with_newline, &st.loaded.syntaxes)
        .ok()?;
    let highlighter = SyntectHighlighter::new(st.theme);
    let ranges = HighlightIterator::new(&mut st.highlight, &ops, &with_newline, &highlighter);
    Some(Line::from(
        ranges
            .map(|(style, text)| {
                let mut s = Style::new();
                let fg = ratatui::style::Color::Rgb(
                    style.foreground.r,
                    style.foreground.g,
                    style.foreground.b,
                );
                if let Some(c) = adapt(fg, depth) {
                    s = s.fg(c);
                }
                if style.font_style.contains(FontStyle::BOLD) {
                    s = s.add_modifier(Modifier::BOLD);
                }
                if style.font_style.contains(FontStyle::ITALIC) {
                    s = s.add_modifier(Modifier::ITALIC);
                }
                Span::styled(visible(text.trim_end_matches('\n')), s)
            })
            .filter(|span| !span.content.is_empty())
            .collect::<Vec<_>>(),
    ))
}

/// What a language name or fence tag is highlighted as: names highlighted alike (`py`,
/// `Python`) give the same.
pub fn syntax_id(language: &str) -> String {
    match syntax_token(language) {
        "txt" => language.to_ascii_lowercase(),
        token => token.to_string(),
    }
}

/// The syntect token for a language name or fence tag.
fn syntax_token(language: &str) -> &str {
    match language.to_ascii_lowercase().as_str() {
        "python" | "py" | "python3" => "py",
        "shell" | "bash" | "sh" | "zsh" => "sh",
        "javascript" | "js" | "node" => "js",
        "r" => "r",
        "ruby" | "rb" => "rb",
        "perl" | "pl" => "pl",
        "java" => "java",
        "html" => "html",
        _ => "txt",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_highlights_once_loaded_and_long_lines_stay_plain() {
        LOADED.get_or_init(|| Loaded {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            themes: ThemeSet::load_defaults(),
        });
        let long = "x".repeat(MAX_LINE + 1);
        let lines = highlight(
            &format!("def f():\n    return 1\n{long}"),
            "python",
            "base16-ocean.dark",
            Depth::TrueColor,
        );
        assert_eq!(lines.len(), 3);
        assert!(lines[0].spans.len() > 1, "keywords are styled");
        assert_eq!(lines[2].spans.len(), 1, "a huge line is left plain");
    }

    #[test]
    fn the_chat_colours_the_start_of_a_long_block_only() {
        load();
        let code: String = (0..CHAT_MAX_LINES + 100)
            .map(|i| format!("def f_{i}(): return {i}\n"))
            .collect();
        let lines = highlight_in_chat(&code, "python", "base16-ocean.dark", Depth::TrueColor);
        assert_eq!(lines.len(), CHAT_MAX_LINES + 100);
        assert!(lines[CHAT_MAX_LINES - 1].spans.len() > 1, "styled");
        assert_eq!(lines[CHAT_MAX_LINES].spans.len(), 1, "plain");
        let pane = highlight(&code, "python", "base16-ocean.dark", Depth::TrueColor);
        assert!(
            pane[CHAT_MAX_LINES].spans.len() > 1,
            "the code pane colours more"
        );
    }
}

#[cfg(test)]
mod sixteen_colours {
    use std::collections::{BTreeMap, BTreeSet};

    use ratatui::style::Color;

    use super::*;
    use crate::tui::theme::Theme;

    fn grey(c: Color) -> bool {
        matches!(
            c,
            Color::Black | Color::DarkGray | Color::Gray | Color::White
        )
    }

    /// Clearly saturated: HSL saturation of at least 0.3.
    fn saturated(r: u8, g: u8, b: u8) -> bool {
        let max = r.max(g).max(b) as f32 / 255.0;
        let min = r.min(g).min(b) as f32 / 255.0;
        let l = (max + min) / 2.0;
        let s = (max - min) / (1.0 - (2.0 * l - 1.0).abs()).max(f32::EPSILON);
        max - min > 0.1 && s >= 0.3
    }

    #[test]
    fn syntax_colours_stay_colours_and_distinct_at_16_colours() {
        LOADED.get_or_init(|| Loaded {
            syntaxes: SyntaxSet::load_defaults_newlines(),
            themes: ThemeSet::load_defaults(),
        });
        let code = "import os\n# a comment\ndef f(x: int) -> str:\n    return \"s\" + str(x * 2) if True else None\n";
        for name in Theme::names() {
            let theme = Theme::load(name, Depth::TrueColor).unwrap();
            let full = highlight(code, "python", &theme.syntax, Depth::TrueColor);
            let ansi = highlight(code, "python", &theme.syntax, Depth::Ansi16);
            let mut by_text: BTreeMap<String, Color> = BTreeMap::new();
            let mut colours = BTreeSet::new();
            for (a, b) in full.iter().zip(&ansi) {
                assert_eq!(a.spans.len(), b.spans.len());
                for (x, y) in a.spans.iter().zip(&b.spans) {
                    let (Some(Color::Rgb(r, g, bl)), Some(c)) = (x.style.fg, y.style.fg) else {
                        panic!("{name}: {:?} has no colour", x.content);
                    };
                    if saturated(r, g, bl) {
                        assert!(!grey(c), "{name}: #{r:02x}{g:02x}{bl:02x} became {c:?}");
                    }
                    if !grey(c) {
                        colours.insert(format!("{c:?}"));
                    }
                    by_text.insert(x.content.to_string(), c);
                }
            }
            // Keywords, strings and numbers keep a colour each.
            let role = |t: &str| by_text.get(t).copied().unwrap_or(Color::Reset);
            for t in ["def", "2"] {
                assert!(!grey(role(t)), "{name}: {t} is {:?}", role(t));
            }
            assert_ne!(role("def"), role("2"), "{name}");
            assert!(colours.len() >= 3, "{name}: only {colours:?}");
        }
    }
}
