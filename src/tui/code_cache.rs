//! The code pane's styled lines, made once per distinct content and shared with every frame
//! that draws it (an `Rc`, never a copy of the lines).
//!
//! A large block is highlighted off the UI thread: the pane shows it at once, plain where
//! the colours are not ready, and coloured when the work is done. A block that streamed in
//! takes over what was highlighted while it streamed, so its lines are not highlighted a
//! second time: a block whose stream was highlighted to the end is coloured on its first
//! frame, and one that streamed faster than it could be highlighted goes on from the line
//! where the stream's highlighter stopped.

use std::cell::RefCell;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use ratatui::text::Line;

use super::code_stream::Highlighted;
use super::highlight::{Highlighter, ready, syntax_id, visible};
use super::theme::Theme;

/// Blocks with more code than this left to highlight are highlighted off the UI thread (a
/// 400 KB block takes about a second).
const IN_BACKGROUND: usize = 64 * 1024;

pub type Lines = Rc<Vec<Line<'static>>>;

#[derive(Default)]
pub struct CodeCache {
    /// The last content's key and its lines.
    done: RefCell<Option<(u64, Lines)>>,
    job: RefCell<Option<Job>>,
}

/// A block being highlighted off the UI thread.
struct Job {
    key: u64,
    /// What the pane shows meanwhile: the lines already coloured, the rest plain.
    interim: Lines,
    /// Lines of `interim` that are coloured already; the job colours the rest.
    coloured: usize,
    result: Arc<Mutex<Option<Vec<Line<'static>>>>>,
}

/// Identifies a block's highlighted lines: its code, its language, the theme, and whether
/// highlighting was loaded.
pub fn key(code: &str, language: &str, theme: &Theme) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        code,
        syntax_id(language),
        &theme.syntax,
        theme.depth as u8,
        ready(),
    )
        .hash(&mut hasher);
    hasher.finish()
}

impl CodeCache {
    /// Whether highlighting runs in the background (the loop keeps ticking until it ends).
    pub fn busy(&self) -> bool {
        self.job.borrow().is_some()
    }

    /// Whether the lines are in their final colours (highlighting loaded, none running).
    pub fn coloured(&self) -> bool {
        ready() && !self.busy()
    }

    /// The number of lines of the finished content, if any (for tests).
    pub fn finished_lines(&self) -> Option<usize> {
        self.done.borrow().as_ref().map(|(_, lines)| lines.len())
    }

    /// Lines made by `make`, once per `key`.
    pub fn lines_for(&self, key: u64, make: impl FnOnce() -> Vec<Line<'static>>) -> Lines {
        if let Some((k, lines)) = self.done.borrow().as_ref()
            && *k == key
        {
            return lines.clone();
        }
        let lines = Rc::new(make());
        *self.done.borrow_mut() = Some((key, lines.clone()));
        lines
    }

    /// The code highlighted: at once when small, off the UI thread when large (then plain
    /// until done).
    pub fn highlighted(&self, code: &str, language: &str, theme: &Theme) -> Lines {
        let key = key(code, language, theme);
        if let Some(lines) = self.finished(key) {
            return lines;
        }
        let highlighter = Highlighter::new(language, &theme.syntax, theme.depth);
        self.highlight_from(key, code, highlighter, Vec::new())
    }

    /// Takes over what a block's stream highlighted, for the proposed `code`: when the
    /// stream highlighted the same lines, in the same language and theme, highlighting goes
    /// on from there instead of starting again.
    pub fn take_over(&self, streamed: Highlighted, code: &str, language: &str, theme: &Theme) {
        let key = key(code, language, theme);
        if !streamed.fits(code, language, theme) {
            return;
        }
        let Highlighted {
            highlighter,
            lines,
            taken,
            ..
        } = streamed;
        self.highlight_from(key, &code[taken..], highlighter, lines);
    }

    /// The finished lines for `key`, collecting a background job's result when it is done.
    fn finished(&self, key: u64) -> Option<Lines> {
        if let Some((k, lines)) = self.done.borrow().as_ref()
            && *k == key
        {
            return Some(lines.clone());
        }
        let mut job = self.job.borrow_mut();
        let running = job.as_ref().filter(|j| j.key == key)?;
        let result = running.result.lock().ok().and_then(|mut r| r.take());
        let Some(rest) = result else {
            return Some(running.interim.clone());
        };
        let Job {
            mut interim,
            coloured,
            ..
        } = job.take()?;
        // The plain lines give way to the coloured ones, in place.
        let lines = Rc::make_mut(&mut interim);
        lines.truncate(coloured);
        lines.extend(rest);
        *self.done.borrow_mut() = Some((key, interim.clone()));
        Some(interim)
    }

    /// Highlights `rest` after the lines `before` (already highlighted by `highlighter`),
    /// here when it is small, else off the UI thread.
    fn highlight_from(
        &self,
        key: u64,
        rest: &str,
        mut highlighter: Highlighter,
        mut before: Vec<Line<'static>>,
    ) -> Lines {
        let rest = rest.replace("\r\n", "\n");
        if !ready() || rest.len() < IN_BACKGROUND {
            before.extend(rest.lines().map(|line| highlighter.line(line)));
            let lines = Rc::new(before);
            *self.done.borrow_mut() = Some((key, lines.clone()));
            *self.job.borrow_mut() = None;
            return lines;
        }
        let coloured = before.len();
        before.extend(rest.lines().map(|line| Line::raw(visible(line))));
        let interim = Rc::new(before);
        let result = Arc::new(Mutex::new(None));
        let out = result.clone();
        std::thread::spawn(move || {
            let lines: Vec<_> = rest.lines().map(|line| highlighter.line(line)).collect();
            if let Ok(mut out) = out.lock() {
                *out = Some(lines);
            }
        });
        *self.job.borrow_mut() = Some(Job {
            key,
            interim: interim.clone(),
            coloured,
            result,
        });
        interim
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::layout::Rect;

    use super::*;
    use crate::tui::code_stream::StreamingCode;
    use crate::tui::highlight::highlight;
    use crate::tui::theme::Depth;

    fn code_of(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("value_{i} = \"text {i}\"  # note\n"))
            .collect()
    }

    /// Streams `code` and draws frames until `frames` have been drawn or all of it is
    /// highlighted.
    fn streamed(code: &str, theme: &Theme, frames: usize) -> StreamingCode {
        let mut stream = StreamingCode::new(0, Some("python".into()));
        stream.push(code, None);
        let mut terminal = Terminal::new(TestBackend::new(80, 20)).unwrap();
        for _ in 0..frames {
            if stream.highlighted_lines() == code.lines().count() {
                break;
            }
            terminal
                .draw(|f| {
                    stream.draw(f, Rect::new(0, 0, 80, 20), theme);
                })
                .unwrap();
        }
        stream
    }

    /// Fails at the first line that differs, showing that line only.
    fn same(got: &[Line<'static>], want: &[Line<'static>]) {
        assert_eq!(got.len(), want.len());
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!("line {}: {:?}, expected {:?}", i + 1, got[i], want[i]);
        }
    }

    fn wait(cache: &CodeCache, code: &str, theme: &Theme) -> Lines {
        let deadline = Instant::now() + Duration::from_secs(120);
        while cache.busy() {
            assert!(Instant::now() < deadline, "highlighting never ended");
            std::thread::sleep(Duration::from_millis(10));
            cache.highlighted(code, "python", theme);
        }
        cache.highlighted(code, "python", theme)
    }

    #[test]
    fn a_block_highlighted_while_it_streamed_is_not_highlighted_again() {
        crate::tui::highlight::load();
        let theme = Theme::load("dark", Depth::TrueColor).unwrap();
        let code = code_of(3000);
        assert!(code.len() > IN_BACKGROUND);
        let stream = streamed(&code, &theme, 100_000);
        assert_eq!(stream.highlighted_lines(), 3000);
        let cache = CodeCache::default();
        cache.take_over(stream.into_highlighted().unwrap(), &code, "Python", &theme);
        assert!(!cache.busy(), "nothing is left to highlight");
        let lines = cache.highlighted(&code, "python", &theme);
        same(
            &lines,
            &highlight(&code, "python", &theme.syntax, theme.depth),
        );
    }

    #[test]
    fn a_stream_highlighted_in_part_goes_on_from_where_it_stopped() {
        crate::tui::highlight::load();
        let theme = Theme::load("dark", Depth::TrueColor).unwrap();
        let code = code_of(6000);
        let stream = streamed(&code, &theme, 3);
        let done = stream.highlighted_lines();
        assert!(done > 0 && done < 6000, "{done}");
        let cache = CodeCache::default();
        cache.take_over(stream.into_highlighted().unwrap(), &code, "python", &theme);
        assert!(cache.busy(), "the rest is highlighted off the UI thread");
        let interim = cache.highlighted(&code, "python", &theme);
        assert_eq!(interim.len(), 6000, "every line is shown meanwhile");
        let lines = wait(&cache, &code, &theme);
        same(
            &lines,
            &highlight(&code, "python", &theme.syntax, theme.depth),
        );
    }

    #[test]
    fn a_stream_of_other_code_or_another_language_is_not_taken_over() {
        crate::tui::highlight::load();
        let theme = Theme::load("dark", Depth::TrueColor).unwrap();
        let code = code_of(50);
        for (proposed, language) in [
            (format!("import os\n{code}"), "python"),
            (code.clone(), "javascript"),
        ] {
            let stream = streamed(&code, &theme, 1000);
            let cache = CodeCache::default();
            cache.take_over(
                stream.into_highlighted().unwrap(),
                &proposed,
                language,
                &theme,
            );
            assert_eq!(cache.finished_lines(), None, "{language}");
            let lines = cache.highlighted(&proposed, language, &theme);
            same(
                &lines,
                &highlight(&proposed, language, &theme.syntax, theme.depth),
            );
        }
    }

    #[test]
    fn the_lines_are_shared_not_copied_frame_after_frame() {
        let theme = Theme::load("dark", Depth::None).unwrap();
        let cache = CodeCache::default();
        let first = cache.highlighted("print(1)\n", "python", &theme);
        let second = cache.highlighted("print(1)\n", "python", &theme);
        assert!(Rc::ptr_eq(&first, &second));
        let mut made = 0;
        for _ in 0..3 {
            cache.lines_for(7, || {
                made += 1;
                vec![Line::raw("diff")]
            });
        }
        assert_eq!(made, 1);
    }
}
