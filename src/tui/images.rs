//! A block's images in the workbench: a line for each in the terminal pane after the
//! block's output (`◧ image 1: figure, 640×480 PNG — Alt-I to view, Alt-O to open`, the
//! keys that work from anywhere), the images themselves below it where they fit
//! (`image_view.rs` draws them), and an image viewer opened with one key (`i` on the
//! block's entry in the chat, or in the terminal pane; Alt-I anywhere), which steps
//! through every block's images and closes with Esc or q. One key (`o`, Alt-O) opens the
//! file with the system viewer (`xdg-open`, `open` on macOS), detached from this terminal.

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Effect, Focus};
use super::chat::Entry;
use super::image_cache::ImageCache;
use super::keymap::Action;
use super::theme::Theme;
use crate::protocol::{BlockId, Image};

/// The images blocks made in this conversation, the viewer, and what draws them.
#[derive(Default)]
pub struct Images {
    /// Each block that made images, in the order they ran.
    pub blocks: Vec<(BlockId, Vec<Image>)>,
    pub viewer: Option<Viewer>,
    /// What was said while the viewer was open (opening the file failed): shown in it,
    /// since the chat is behind it.
    pub said: Option<String>,
    pub cache: ImageCache,
}

/// The image viewer: which image of all the blocks' images it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Viewer {
    /// Index into `Images::all()`.
    pub at: usize,
}

/// One image, where it comes from: its block and its number in the block (from 1).
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    pub block: BlockId,
    pub n: usize,
    pub image: &'a Image,
}

impl Images {
    /// Every image, block by block.
    pub fn all(&self) -> Vec<Shown<'_>> {
        self.blocks
            .iter()
            .flat_map(|(block, images)| {
                images.iter().enumerate().map(|(i, image)| Shown {
                    block: *block,
                    n: i + 1,
                    image,
                })
            })
            .collect()
    }

    /// The block's images (none: the block made none).
    pub fn of_block(&self, id: BlockId) -> &[Image] {
        self.blocks
            .iter()
            .rev()
            .find(|(b, _)| *b == id)
            .map_or(&[], |(_, images)| images.as_slice())
    }

    /// The last block that made images.
    pub fn latest(&self) -> Option<(BlockId, &[Image])> {
        self.blocks.last().map(|(b, i)| (*b, i.as_slice()))
    }

    /// Block `id` made these images (a block run again replaces its earlier ones).
    pub fn add(&mut self, id: BlockId, images: &[Image]) {
        self.blocks.retain(|(b, _)| *b != id);
        if !images.is_empty() {
            self.blocks.push((id, images.to_vec()));
        }
    }

    /// A new conversation: the images go (what draws them stays).
    pub fn forget(&mut self) {
        self.blocks.clear();
        self.viewer = None;
    }

    /// The image the viewer shows.
    pub fn current(&self) -> Option<Shown<'_>> {
        let at = self.viewer?.at;
        self.all().get(at).copied()
    }

    /// Where the first image of block `id` is in `all()`.
    fn first_of(&self, id: BlockId) -> Option<usize> {
        self.all().iter().position(|s| s.block == id)
    }
}

/// The line that names an image in the terminal pane, made to fit `cols` columns: the
/// whole line, else without the file size, else with shorter keys, else cut.
/// `◧ image 1: figure, 640×480 PNG, 22.5 KB — Alt-I to view, Alt-O to open`.
pub fn pane_line(
    n: usize,
    image: &Image,
    cwd: &str,
    cols: usize,
    view: &str,
    open: &str,
) -> String {
    let origin = origin(image, cwd);
    let kind = match (image.width, image.height) {
        (Some(w), Some(h)) => format!("{w}×{h} {}", image.format.label()),
        _ => image.format.label().to_string(),
    };
    let candidates = [
        format!(
            "◧ image {n}: {origin}, {} — {view} to view, {open} to open",
            image.describe()
        ),
        format!("◧ image {n}: {origin}, {kind} — {view} to view, {open} to open"),
        format!("◧ image {n}: {origin}, {kind} — {view} view, {open} open"),
    ];
    match candidates.iter().find(|line| width(line) <= cols) {
        Some(line) => line.clone(),
        None => fit(&candidates[2], cols),
    }
}

fn width(text: &str) -> usize {
    use unicode_width::UnicodeWidthChar;
    text.chars().map(|c| c.width().unwrap_or(0)).sum()
}

/// `figure`, or the file the block wrote, relative to the working directory when inside it.
pub fn origin(image: &Image, cwd: &str) -> String {
    let origin = match &image.source {
        crate::protocol::ImageSource::File { path } if !cwd.is_empty() => path
            .strip_prefix(cwd)
            .map_or_else(|_| image.origin(), |p| p.display().to_string()),
        _ => image.origin(),
    };
    // A block names its files: escapes and line breaks in a name are shown, not obeyed.
    crate::safe_text::visible_line(&origin)
}

/// A block's detail in the chat with the images it made: `exit 0 · 1.2 s · 2 images`.
pub fn with_count(detail: String, images: usize) -> String {
    match images {
        0 => detail,
        1 => format!("{detail} · 1 image"),
        n => format!("{detail} · {n} images"),
    }
}

/// Cuts `text` to `cols` display columns (with `…` when cut).
fn fit(text: &str, cols: usize) -> String {
    use unicode_width::UnicodeWidthChar;
    if width(text) <= cols {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > cols {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// The SGR sequence that sets a theme style's colour and weight (for text written into
/// the terminal pane's emulator).
fn sgr(style: ratatui::style::Style) -> String {
    use ratatui::style::{Color, Modifier};
    let mut codes: Vec<String> = Vec::new();
    if style.add_modifier.contains(Modifier::BOLD) {
        codes.push("1".into());
    }
    if style.add_modifier.contains(Modifier::DIM) {
        codes.push("2".into());
    }
    let named = |c: Color| -> Option<u8> {
        Some(match c {
            Color::Black => 30,
            Color::Red => 31,
            Color::Green => 32,
            Color::Yellow => 33,
            Color::Blue => 34,
            Color::Magenta => 35,
            Color::Cyan => 36,
            Color::Gray => 37,
            Color::DarkGray => 90,
            Color::LightRed => 91,
            Color::LightGreen => 92,
            Color::LightYellow => 93,
            Color::LightBlue => 94,
            Color::LightMagenta => 95,
            Color::LightCyan => 96,
            Color::White => 97,
            _ => return None,
        })
    };
    match style.fg {
        Some(Color::Rgb(r, g, b)) => codes.push(format!("38;2;{r};{g};{b}")),
        Some(Color::Indexed(i)) => codes.push(format!("38;5;{i}")),
        Some(c) => {
            if let Some(n) = named(c) {
                codes.push(n.to_string());
            }
        }
        None => {}
    }
    if codes.is_empty() {
        String::new()
    } else {
        format!("\x1b[{}m", codes.join(";"))
    }
}

/// The bytes that write the images' lines into the terminal pane, styled by the theme:
/// the marker and number in the accent colour, the keys muted.
pub fn pane_bytes(
    images: &[Image],
    cwd: &str,
    theme: &Theme,
    cols: usize,
    at_line_start: bool,
    keys: (&str, &str),
) -> Vec<u8> {
    let mut out = String::from("\x1b[0m");
    if !at_line_start {
        out.push_str("\r\n");
    }
    for (i, image) in images.iter().enumerate() {
        let line = pane_line(i + 1, image, cwd, cols.saturating_sub(1), keys.0, keys.1);
        // The line as three parts: `◧ image 1:`, what it is, and the keys.
        let (head, rest) = line.split_once(':').unwrap_or((line.as_str(), ""));
        let (what, tail) = match rest.rfind(" — ") {
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, ""),
        };
        out.push_str(&format!(
            "{}{head}:\x1b[0m{}{what}\x1b[0m{}{tail}\x1b[0m\r\n",
            sgr(theme.accent),
            sgr(theme.text),
            sgr(theme.muted)
        ));
    }
    out.into_bytes()
}

impl App {
    /// Block `id` ended having made `images`: their lines go into the terminal pane after
    /// its output, and the viewer can show them.
    pub(super) fn block_images(&mut self, id: BlockId, images: &[Image]) {
        self.images.add(id, images);
        if images.is_empty() {
            return;
        }
        let (cols, at_line_start) = {
            let screen = self.terminal.screen();
            (
                usize::from(screen.size().1),
                screen.cursor_position().1 == 0,
            )
        };
        let keys = (
            self.keymap.label(Action::ViewImage),
            self.keymap.label(Action::OpenImage),
        );
        let bytes = pane_bytes(
            images,
            &self.cwd,
            &self.theme,
            cols,
            at_line_start,
            (&keys.0, &keys.1),
        );
        self.terminal.process(&bytes);
    }

    /// The block whose images a key means: the selected block in the chat, else the last
    /// block that made images.
    fn images_meant(&mut self) -> Option<BlockId> {
        if self.focus == Focus::Chat
            && let Some(i) = self.chat.selected
            && let Some(Entry::Block { id, .. }) = self.chat.entries.get(i)
        {
            if self.images.of_block(*id).is_empty() {
                self.flash(format!("block #{id} made no image"));
                return None;
            }
            return Some(*id);
        }
        match self.images.latest() {
            Some((id, _)) => Some(id),
            None => {
                self.flash("no block has made an image yet");
                None
            }
        }
    }

    /// `i`: opens the viewer on the meant block's first image.
    pub(super) fn view_images(&mut self) -> Vec<Effect> {
        if let Some(id) = self.images_meant()
            && let Some(at) = self.images.first_of(id)
        {
            self.images.viewer = Some(Viewer { at });
            self.images.said = None;
        }
        Vec::new()
    }

    /// `o`: opens the image the viewer shows (else the meant block's first) with the
    /// system viewer.
    pub(super) fn open_image(&mut self) -> Vec<Effect> {
        let path = match self.images.current() {
            Some(shown) => Some(shown.image.path.clone()),
            None => self
                .images_meant()
                .and_then(|id| self.images.of_block(id).first())
                .map(|image| image.path.clone()),
        };
        match path {
            Some(path) => {
                self.flash(format!("opening {} …", file_name(&path)));
                vec![Effect::Open(path)]
            }
            None => Vec::new(),
        }
    }

    /// The viewer's keys, while it is open: ← → (h l, p n) step, Home End, o opens the
    /// file, Esc q i close. Ctrl-C and quit still do what they do everywhere.
    pub(super) fn viewer_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        let viewer = self.images.viewer?;
        if self.keymap.is(Action::Interrupt, key) || self.keymap.is(Action::Quit, key) {
            return None;
        }
        let count = self.images.all().len();
        let last = count.saturating_sub(1);
        let plain = !key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        let mut at = viewer.at.min(last);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('i') if plain => {
                self.images.viewer = None;
                return Some(Vec::new());
            }
            KeyCode::Left | KeyCode::Up | KeyCode::Char('h' | 'p' | 'k') | KeyCode::PageUp => {
                at = at.saturating_sub(1)
            }
            KeyCode::Right
            | KeyCode::Down
            | KeyCode::Char('l' | 'n' | 'j' | ' ')
            | KeyCode::PageDown => at = (at + 1).min(last),
            KeyCode::Home => at = 0,
            KeyCode::End => at = last,
            KeyCode::Char('o') | KeyCode::Enter => return Some(self.open_image()),
            _ if self.keymap.is(Action::OpenImage, key) => return Some(self.open_image()),
            _ => {}
        }
        if count == 0 {
            self.images.viewer = None;
        } else {
            self.images.viewer = Some(Viewer { at });
            self.images.said = None;
        }
        Some(Vec::new())
    }
}

fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into(),
    )
}

/// The program that opens files with the system's viewer here.
pub fn opener() -> Option<PathBuf> {
    let name = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Opens `path` with the system viewer, detached: its output goes nowhere (not on our
/// screen) and it does not take our terminal. Blocking (it waits for the opener, which
/// returns once the viewer started): call off the UI task. Returns what to tell the
/// person when it did not work.
pub fn open_external(path: &std::path::Path) -> Result<(), String> {
    if !path.is_file() {
        return Err(format!(
            "the image {} is not there any more",
            path.display()
        ));
    }
    let Some(opener) = opener() else {
        let name = if cfg!(target_os = "macos") {
            "open"
        } else {
            "xdg-open"
        };
        return Err(format!(
            "no system image viewer: {name} was not found on PATH; the image is at {}",
            path.display()
        ));
    };
    let mut command = std::process::Command::new(&opener);
    command
        .arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: our Ctrl-C is not its.
        command.process_group(0);
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot start {}: {e}", opener.display()))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} could not open {} ({status})",
            opener.display(),
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ImageFormat, ImageSource};

    fn image() -> Image {
        Image {
            path: "/data/images/s/3-1.png".into(),
            format: ImageFormat::Png,
            bytes: 23_040,
            width: Some(640),
            height: Some(480),
            source: ImageSource::File {
                path: "/home/ada/project/out/chart.png".into(),
            },
        }
    }

    #[test]
    fn the_pane_line_fits_the_pane_and_names_the_file_from_the_working_directory() {
        let line = |cols| pane_line(1, &image(), "/home/ada/project", cols, "Alt-I", "Alt-O");
        assert_eq!(
            line(100),
            "◧ image 1: out/chart.png, 640×480 PNG, 22.5 KB — Alt-I to view, Alt-O to open"
        );
        assert_eq!(
            line(68),
            "◧ image 1: out/chart.png, 640×480 PNG — Alt-I to view, Alt-O to open"
        );
        assert_eq!(
            line(62),
            "◧ image 1: out/chart.png, 640×480 PNG — Alt-I view, Alt-O open"
        );
        let cut = line(30);
        assert!(cut.ends_with('…') && width(&cut) <= 30, "{cut}");
        // Outside the working directory, the whole path.
        let other = pane_line(2, &image(), "/srv", 200, "i", "o");
        assert!(other.contains("/home/ada/project/out/chart.png"), "{other}");
        // A name with an escape sequence and a line break is shown, not obeyed.
        let mut hostile = image();
        hostile.source = ImageSource::File {
            path: "/home/ada/project/a\u{1b}[2J\nb.png".into(),
        };
        let line = pane_line(3, &hostile, "/home/ada/project", 200, "i", "o");
        assert!(!line.contains('\u{1b}') && !line.contains('\n'), "{line:?}");
        assert!(line.contains("a␛[2J"), "{line}");
    }

    #[test]
    fn the_pane_bytes_are_styled_lines_on_their_own_rows() {
        let theme = Theme::load("dark", super::super::theme::Depth::TrueColor).unwrap();
        let bytes = pane_bytes(
            &[image()],
            "/home/ada/project",
            &theme,
            80,
            false,
            ("i", "o"),
        );
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.starts_with("\x1b[0m\r\n"), "{text:?}");
        assert!(text.ends_with("\x1b[0m\r\n"), "{text:?}");
        assert!(text.contains("\x1b[38;2;"), "theme colours: {text:?}");
        assert_eq!(with_count("exit 0".into(), 2), "exit 0 · 2 images");
    }

    #[test]
    fn opening_a_missing_image_says_so() {
        let why = open_external(std::path::Path::new("/nonexistent/oi-tui/3-1.png")).unwrap_err();
        assert!(why.contains("is not there any more"), "{why}");
    }
}
