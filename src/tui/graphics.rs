//! Which terminal graphics protocol draws images: kitty, sixel, iTerm2, or Unicode
//! half-blocks, which every terminal shows.
//!
//! At start (`auto`), the workbench asks the terminal (`query`): a kitty graphics query, the
//! primary device attributes (`;4;` there means sixel), the cell size in pixels, and a
//! device status report that every terminal answers, so the wait ends as soon as the
//! terminal has said all it will. This happens in raw mode before the event reader starts,
//! with a short time limit, and reads whatever else is waiting so that no answer is left
//! behind for the event reader to take for keys. The choice itself (`choose`) is a pure
//! function of the recorded answer and the environment (TERM, TERM_PROGRAM, KITTY_WINDOW_ID,
//! tmux), so that it is tested with recorded answers. `[tui] images` overrides it.

use std::time::{Duration, Instant};

use ratatui_image::picker::ProtocolType;
use ratatui_image::picker::cap_parser::{Parser, QueryStdioOptions, Response};

use crate::config::tui::ImageMode;

/// How long the terminal has to answer at start.
pub const QUERY_TIME: Duration = Duration::from_millis(250);

/// The cell size assumed when the terminal does not say (roughly 1:2, as most fonts).
pub const DEFAULT_CELL: (u16, u16) = (10, 20);

/// What the environment says about the terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermEnv {
    pub term: String,
    pub term_program: String,
    pub lc_terminal: String,
    /// `KITTY_WINDOW_ID` is set (stale inside tmux, so only a hint).
    pub kitty_window: bool,
    /// Inside tmux (or screen): `TMUX` set, or TERM says so.
    pub multiplexer: bool,
    /// WezTerm or Konsole: they answer the kitty query but draw its placeholders wrongly.
    pub poor_kitty: bool,
    /// Konsole's sixels are broken.
    pub konsole: bool,
}

impl TermEnv {
    pub fn from_env() -> TermEnv {
        let var = |name: &str| std::env::var(name).unwrap_or_default();
        TermEnv::from_lookup(&|name| {
            let v = var(name);
            (!v.is_empty()).then_some(v)
        })
    }

    /// From a lookup of variables (the environment, or a test's map).
    pub fn from_lookup(var: &dyn Fn(&str) -> Option<String>) -> TermEnv {
        let term = var("TERM").unwrap_or_default();
        let term_program = var("TERM_PROGRAM").unwrap_or_default();
        let konsole = var("KONSOLE_VERSION").is_some();
        TermEnv {
            multiplexer: var("TMUX").is_some()
                || term.starts_with("tmux")
                || term.starts_with("screen")
                || term_program == "tmux",
            kitty_window: var("KITTY_WINDOW_ID").is_some(),
            poor_kitty: konsole || var("WEZTERM_EXECUTABLE").is_some(),
            konsole,
            lc_terminal: var("LC_TERMINAL").unwrap_or_default(),
            term,
            term_program,
        }
    }

    /// The terminal speaks iTerm2's inline images, by its name.
    fn iterm2(&self) -> bool {
        const NAMES: [&str; 8] = [
            "iTerm",
            "WezTerm",
            "mintty",
            "vscode",
            "Tabby",
            "Hyper",
            "rio",
            "WarpTerminal",
        ];
        NAMES.iter().any(|n| self.term_program.contains(n)) || self.lc_terminal.contains("iTerm")
    }

    /// The terminal is kitty (or speaks its protocol), by its name.
    fn kitty(&self) -> bool {
        self.term == "xterm-kitty"
            || self.term == "xterm-ghostty"
            || self.term_program == "ghostty"
            || self.kitty_window
    }
}

/// The protocol chosen, the cell size, and why (for the person, in the help and logs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graphics {
    /// None: images are not drawn (`off`), only named.
    pub protocol: Option<ProtocolType>,
    /// A cell's size in pixels (width, height).
    pub cell: (u16, u16),
    /// Wrap the protocol's sequences for tmux's passthrough.
    pub tmux: bool,
    pub why: String,
}

impl Graphics {
    /// Half-blocks at the default cell size: what tests and a terminal that says nothing get.
    pub fn halfblocks() -> Graphics {
        Graphics {
            protocol: Some(ProtocolType::Halfblocks),
            cell: DEFAULT_CELL,
            tmux: false,
            why: "half-blocks".into(),
        }
    }

    /// `kitty`, `sixel`, `iTerm2`, `half-blocks` or `off`.
    pub fn name(&self) -> &'static str {
        match self.protocol {
            Some(ProtocolType::Kitty) => "kitty",
            Some(ProtocolType::Sixel) => "sixel",
            Some(ProtocolType::Iterm2) => "iTerm2",
            Some(ProtocolType::Halfblocks) => "half-blocks",
            None => "off",
        }
    }
}

/// What the terminal said, parsed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Answer {
    pub kitty: bool,
    pub sixel: bool,
    pub cell: Option<(u16, u16)>,
    /// The device status report came (the terminal answered at all).
    pub status: bool,
}

impl Answer {
    pub fn parse(bytes: &[u8]) -> Answer {
        let mut parser = Parser::new();
        let mut answer = Answer::default();
        for &b in bytes {
            for response in parser.push(char::from(b)) {
                match response {
                    Response::Kitty => answer.kitty = true,
                    Response::Sixel => answer.sixel = true,
                    Response::CellSize(Some((w, h))) => answer.cell = Some((w, h)),
                    Response::Status => answer.status = true,
                    _ => {}
                }
            }
        }
        answer
    }
}

/// The protocol for this mode, answer and environment. `pixels_per_cell` is the cell size
/// the window's size in pixels gives (an ioctl), when the terminal did not say it.
pub fn choose(
    mode: ImageMode,
    answer: &[u8],
    env: &TermEnv,
    pixels_per_cell: Option<(u16, u16)>,
) -> Graphics {
    let parsed = Answer::parse(answer);
    let cell = parsed.cell.or(pixels_per_cell).unwrap_or(DEFAULT_CELL);
    let pick = |protocol: Option<ProtocolType>, tmux: bool, why: String| Graphics {
        protocol,
        cell,
        tmux,
        why,
    };
    match mode {
        ImageMode::Off => return pick(None, false, "off ([tui] images = \"off\")".into()),
        ImageMode::Halfblocks => {
            return pick(
                Some(ProtocolType::Halfblocks),
                false,
                "half-blocks (as configured)".into(),
            );
        }
        ImageMode::Kitty | ImageMode::Sixel | ImageMode::Iterm2 => {
            let protocol = match mode {
                ImageMode::Kitty => ProtocolType::Kitty,
                ImageMode::Sixel => ProtocolType::Sixel,
                _ => ProtocolType::Iterm2,
            };
            let mut g = pick(Some(protocol), env.multiplexer, String::new());
            g.why = format!("{} (as configured)", g.name());
            return g;
        }
        ImageMode::Auto => {}
    }
    // Inside tmux the graphics would have to pass through to the terminal outside, which
    // tmux allows only when told: half-blocks, unless configured otherwise.
    if env.multiplexer {
        return pick(
            Some(ProtocolType::Halfblocks),
            false,
            "half-blocks (inside tmux; set [tui] images to pass a protocol through)".into(),
        );
    }
    if parsed.kitty && !env.poor_kitty {
        return pick(
            Some(ProtocolType::Kitty),
            false,
            "kitty (the terminal answered the kitty graphics query)".into(),
        );
    }
    if env.iterm2() {
        return pick(
            Some(ProtocolType::Iterm2),
            false,
            format!("iTerm2 (TERM_PROGRAM={})", env.term_program),
        );
    }
    if parsed.sixel && !env.konsole {
        return pick(
            Some(ProtocolType::Sixel),
            false,
            "sixel (the terminal's device attributes include sixel)".into(),
        );
    }
    if !parsed.status && env.kitty() && !env.poor_kitty {
        // It did not answer in time, but says it is kitty.
        return pick(
            Some(ProtocolType::Kitty),
            false,
            format!("kitty (TERM={}; the terminal did not answer)", env.term),
        );
    }
    let why = if parsed.status {
        "half-blocks (the terminal has no graphics protocol)"
    } else {
        "half-blocks (the terminal did not answer the graphics query)"
    };
    pick(Some(ProtocolType::Halfblocks), false, why.into())
}

/// The query sent to the terminal at start.
pub fn query_text() -> String {
    Parser::query(false, QueryStdioOptions::default())
}

/// Asks the terminal (stdin and stdout, in raw mode, before the event reader starts) and
/// returns its answer: all it said until its status report, or until `limit`. What else
/// is waiting on stdin then is read too (a late answer must not become keys).
#[cfg(unix)]
pub fn query(limit: Duration) -> Vec<u8> {
    use std::io::Write;
    use std::os::fd::AsRawFd;
    let stdin = std::io::stdin();
    let fd = stdin.as_raw_fd();
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(fd) } != 1 {
        return Vec::new();
    }
    let mut out = std::io::stdout();
    if out
        .write_all(query_text().as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return Vec::new();
    }
    let start = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        let left = limit.saturating_sub(start.elapsed());
        let done = Answer::parse(&answer).status;
        // Once the status report is in, only what is already there is taken.
        let wait = if done { Duration::ZERO } else { left };
        if !readable(fd, wait) {
            break;
        }
        // SAFETY: reads into a buffer of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        answer.extend_from_slice(&buf[..n as usize]);
        if answer.len() > 64 * 1024 {
            break;
        }
    }
    answer
}

#[cfg(not(unix))]
pub fn query(_limit: Duration) -> Vec<u8> {
    Vec::new()
}

/// Whether `fd` has bytes to read within `wait`.
#[cfg(unix)]
fn readable(fd: i32, wait: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one pollfd, its count given.
    let n = unsafe { libc::poll(&mut poll, 1, ms) };
    n > 0 && poll.revents & libc::POLLIN != 0
}

/// The cell size from the window's size in pixels, when the terminal reports one.
#[cfg(unix)]
pub fn pixels_per_cell() -> Option<(u16, u16)> {
    use std::os::fd::AsRawFd;
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let fd = std::io::stdout().as_raw_fd();
    // SAFETY: TIOCGWINSZ fills the winsize given.
    if unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } != 0 {
        return None;
    }
    (size.ws_xpixel > 0 && size.ws_ypixel > 0 && size.ws_col > 0 && size.ws_row > 0)
        .then(|| (size.ws_xpixel / size.ws_col, size.ws_ypixel / size.ws_row))
}

#[cfg(not(unix))]
pub fn pixels_per_cell() -> Option<(u16, u16)> {
    None
}

/// The graphics for this mode: the terminal asked when the mode is `auto` (and not in
/// tmux). Call in raw mode, before the event reader starts.
pub fn detect(mode: ImageMode) -> Graphics {
    let env = TermEnv::from_env();
    let answer = if mode == ImageMode::Auto && !env.multiplexer {
        query(QUERY_TIME)
    } else {
        Vec::new()
    };
    choose(mode, &answer, &env, pixels_per_cell())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recorded answers of real terminals to `query_text()`.
    const KITTY: &[u8] = b"\x1b_Gi=31;OK\x1b\\\x1b[?62;c\x1b[6;20;10t\x1b[0n";
    const XTERM_SIXEL: &[u8] = b"\x1b[?63;1;2;4;6;9;15;16;22;28c\x1b[6;18;9t\x1b[0n";
    const FOOT: &[u8] = b"\x1b[?62;4;22c\x1b[6;17;8t\x1b[0n";
    const GNOME: &[u8] = b"\x1b[?65;1;9c\x1b[0n";
    const TMUX: &[u8] = b"\x1b[?1;2c\x1b[0n";
    const NOTHING: &[u8] = b"";

    fn env(vars: &[(&str, &str)]) -> TermEnv {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TermEnv::from_lookup(&|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
    }

    fn auto(answer: &[u8], vars: &[(&str, &str)]) -> Graphics {
        choose(ImageMode::Auto, answer, &env(vars), None)
    }

    #[test]
    fn the_kitty_graphics_reply_means_kitty() {
        let g = auto(KITTY, &[("TERM", "xterm-kitty")]);
        assert_eq!(g.protocol, Some(ProtocolType::Kitty));
        assert_eq!(g.cell, (10, 20));
        assert!(g.why.contains("answered"), "{}", g.why);
    }

    #[test]
    fn sixel_in_the_device_attributes_means_sixel() {
        let g = auto(XTERM_SIXEL, &[("TERM", "xterm-256color")]);
        assert_eq!(g.protocol, Some(ProtocolType::Sixel));
        assert_eq!(g.cell, (9, 18));
        assert_eq!(
            auto(FOOT, &[("TERM", "foot")]).protocol,
            Some(ProtocolType::Sixel)
        );
        // Konsole says sixel, but draws it badly.
        assert_eq!(
            auto(FOOT, &[("KONSOLE_VERSION", "230804")]).protocol,
            Some(ProtocolType::Halfblocks)
        );
    }

    #[test]
    fn no_protocol_or_no_answer_means_half_blocks() {
        let g = auto(GNOME, &[("TERM", "xterm-256color")]);
        assert_eq!(g.protocol, Some(ProtocolType::Halfblocks));
        assert!(g.why.contains("no graphics protocol"), "{}", g.why);
        assert_eq!(g.cell, DEFAULT_CELL);
        let g = auto(NOTHING, &[("TERM", "xterm-256color")]);
        assert_eq!(g.protocol, Some(ProtocolType::Halfblocks));
        assert!(g.why.contains("did not answer"), "{}", g.why);
        // The window's pixels give the cell size when the terminal does not.
        let g = choose(ImageMode::Auto, NOTHING, &env(&[]), Some((8, 16)));
        assert_eq!(g.cell, (8, 16));
    }

    #[test]
    fn hints_from_the_environment() {
        // iTerm2 and WezTerm speak iTerm2's protocol (WezTerm's kitty support is poor).
        let g = auto(
            KITTY,
            &[("TERM_PROGRAM", "WezTerm"), ("WEZTERM_EXECUTABLE", "/x")],
        );
        assert_eq!(g.protocol, Some(ProtocolType::Iterm2));
        let g = auto(GNOME, &[("TERM_PROGRAM", "iTerm.app")]);
        assert_eq!(g.protocol, Some(ProtocolType::Iterm2));
        // Kitty by name when the answer did not come in time.
        let g = auto(NOTHING, &[("TERM", "xterm-kitty")]);
        assert_eq!(g.protocol, Some(ProtocolType::Kitty));
        // ...but not when it answered without the kitty reply.
        let g = auto(GNOME, &[("KITTY_WINDOW_ID", "3")]);
        assert_eq!(g.protocol, Some(ProtocolType::Halfblocks));
        // Inside tmux: half-blocks, whatever a stale variable says.
        let g = auto(TMUX, &[("TERM", "tmux-256color"), ("KITTY_WINDOW_ID", "1")]);
        assert_eq!(g.protocol, Some(ProtocolType::Halfblocks));
        assert!(g.why.contains("tmux"), "{}", g.why);
    }

    #[test]
    fn the_configured_mode_wins() {
        let e = env(&[("TERM", "tmux-256color"), ("TMUX", "/tmp/x,1,0")]);
        let g = choose(ImageMode::Kitty, GNOME, &e, None);
        assert_eq!(g.protocol, Some(ProtocolType::Kitty));
        assert!(g.tmux, "passes through tmux");
        let g = choose(ImageMode::Halfblocks, KITTY, &env(&[]), None);
        assert_eq!(g.protocol, Some(ProtocolType::Halfblocks));
        assert_eq!(
            choose(ImageMode::Off, KITTY, &env(&[]), None).protocol,
            None
        );
        assert_eq!(
            choose(ImageMode::Sixel, NOTHING, &env(&[]), None).protocol,
            Some(ProtocolType::Sixel)
        );
    }

    #[test]
    fn the_query_ends_with_a_status_report_and_garbage_is_ignored() {
        let q = query_text();
        assert!(q.contains("\x1b_Gi=31"), "{q:?}");
        assert!(q.contains("\x1b[c"), "{q:?}");
        assert!(q.ends_with("\x1b[5n"), "{q:?}");
        let a = Answer::parse(b"x\x1bjunk\x1b[?62;4c\x1b[0n");
        assert!(a.sixel && a.status && !a.kitty);
        // A kitty error reply is not a yes.
        let a = Answer::parse(b"\x1b_Gi=31;ENOTSUPPORTED\x1b\\\x1b[0n");
        assert!(!a.kitty && a.status);
    }
}
