//! The session browser's keys, from the bindings table (`bindings.rs`, the rows of the
//! browser's contexts): every printable key types into the search, and the actions are on
//! keys no search can type (Enter reads, Ctrl-R resumes, Ctrl-D deletes, Ctrl-E exports, F2
//! renames), so that typing a word never acts. Deleting asks, and only Ctrl-D again answers
//! yes; resuming while a block waits (or runs) here asks, and only Ctrl-R again answers yes.
//! Any other key answers no (a printable one goes on into the search).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Busy, Effect};
use super::browser::{Mode, Request};
use super::keymap::{Action, BROWSER_SECTION};

impl App {
    /// Keys while the browser is open; `action` is what the keymap makes of `key` there.
    /// None: the browser is not open.
    pub(super) fn browser_key(
        &mut self,
        key: &KeyEvent,
        action: Option<Action>,
    ) -> Option<Vec<Effect>> {
        let cwd = self.cwd.clone();
        // Resuming leaves this session: a waiting block undecided, a running one stopped.
        let would_leave = self.pending.is_some() || matches!(self.busy, Busy::Running(..));
        let browser = self.browser.as_mut()?;
        let mode = browser.mode.clone();
        match action {
            Some(Action::Help) => {
                // At the browser's keys (placed for the widest overlay: on a narrower one,
                // lines wrapped above push the section a few rows down, still in view).
                self.help = true;
                self.help_scroll = super::bars::help_lines(self, super::bars::HELP_WIDTH - 2)
                    .iter()
                    .position(|l| l.spans.iter().any(|s| s.content == BROWSER_SECTION))
                    .unwrap_or(0);
            }
            Some(Action::Read) => {
                if let Some(preview) = &browser.preview {
                    let scroll = super::browser_view::match_scroll(
                        &self.theme,
                        preview,
                        &browser.query,
                        browser.reading_size.get(),
                    );
                    browser.mode = Mode::Viewing(scroll);
                } else if browser.selected_id().is_some() {
                    browser.message = Some("the session is still being read; a moment".into());
                }
            }
            Some(Action::Resume) if browser.selected_id().is_some() => {
                if would_leave {
                    browser.mode = Mode::ConfirmResume;
                } else {
                    return Some(self.resume_selected());
                }
            }
            Some(Action::Delete) if browser.selected_id().is_some() => {
                browser.mode = Mode::ConfirmDelete;
            }
            Some(Action::Export) => {
                if let Some(id) = browser.selected_id() {
                    let path = std::path::Path::new(&cwd).join(format!("oi-tui-session-{id}.md"));
                    browser.send(Request::Export { id, path });
                }
            }
            Some(Action::Rename) => {
                if let Some(row) = browser.rows.get(browser.selected) {
                    browser.mode = Mode::Renaming(row.session.title.clone());
                }
            }
            Some(Action::Confirm) => match mode {
                Mode::ConfirmDelete => {
                    browser.mode = Mode::List;
                    if let Some(id) = browser.selected_id() {
                        browser.send(Request::Delete { id });
                    }
                }
                Mode::ConfirmResume => return Some(self.resume_selected()),
                Mode::Renaming(title) => {
                    browser.mode = Mode::List;
                    if let (Some(id), false) = (browser.selected_id(), title.trim().is_empty()) {
                        browser.send(Request::Rename { id, title });
                    }
                }
                Mode::List | Mode::Viewing(_) => {}
            },
            Some(Action::Back) => match mode {
                Mode::List if !browser.query.is_empty() => browser.clear_search(),
                Mode::List => self.browser = None,
                Mode::Viewing(_) | Mode::Renaming(_) => browser.mode = Mode::List,
                Mode::ConfirmDelete | Mode::ConfirmResume => browser.answer_no(),
            },
            Some(Action::ClearSearch) => browser.clear_search(),
            Some(Action::Erase) => browser.erase(),
            Some(
                step @ (Action::SelectPrev
                | Action::SelectNext
                | Action::ScrollUp
                | Action::ScrollDown
                | Action::PageUp
                | Action::PageDown
                | Action::Top
                | Action::Bottom),
            ) => match mode {
                Mode::Viewing(scroll) => {
                    let end = || {
                        browser.preview.as_ref().map_or(0, |p| {
                            let (width, height) = browser.reading_size.get();
                            super::browser_view::transcript_lines(
                                &self.theme,
                                p,
                                &browser.query,
                                width,
                            )
                            .len()
                            .saturating_sub(height as usize)
                        })
                    };
                    let scroll = match step {
                        Action::ScrollUp | Action::SelectPrev => scroll.saturating_sub(1),
                        Action::ScrollDown | Action::SelectNext => scroll + 1,
                        Action::PageUp => scroll.saturating_sub(20),
                        Action::PageDown => scroll + 20,
                        Action::Top => 0,
                        _ => end(),
                    };
                    browser.mode = Mode::Viewing(scroll);
                }
                _ => {
                    let at = browser.selected;
                    browser.select(match step {
                        Action::SelectPrev | Action::ScrollUp => at.saturating_sub(1),
                        Action::SelectNext | Action::ScrollDown => at + 1,
                        Action::PageUp => at.saturating_sub(20),
                        Action::PageDown => at + 20,
                        Action::Top => 0,
                        _ => browser.rows.len().saturating_sub(1),
                    });
                }
            },
            _ => match key.code {
                KeyCode::Char(c)
                    if !key
                        .modifiers
                        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
                {
                    browser.type_char(c);
                }
                // A key with no meaning here answers a question no.
                _ => browser.answer_no(),
            },
        }
        Some(Vec::new())
    }

    fn resume_selected(&mut self) -> Vec<Effect> {
        let Some(id) = self.browser.as_ref().and_then(|b| b.selected_id()) else {
            return Vec::new();
        };
        self.browser = None;
        vec![Effect::Resume(id)]
    }
}
