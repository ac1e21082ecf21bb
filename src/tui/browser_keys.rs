//! The session browser's keys. In the list, `/` (or any letter that is not an action key)
//! starts typing a search, which Enter ends and Ctrl-U clears; Up/Down/PgUp/PgDn move; Enter
//! reads the session (at the first match of the search);
//! `r` resumes it, `x` exports it as Markdown, `d` deletes it (after asking), `R` renames it;
//! Esc closes.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Effect};
use super::browser::{Mode, Request};

impl App {
    /// Keys while the browser is open. None: the browser is not open.
    pub(super) fn browser_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        let cwd = self.cwd.clone();
        let browser = self.browser.as_mut()?;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl
            && key.code == KeyCode::Char('u')
            && matches!(browser.mode, Mode::List | Mode::Searching)
        {
            browser.clear_search();
            return Some(Vec::new());
        }
        match browser.mode.clone() {
            Mode::ConfirmDelete => {
                browser.mode = Mode::List;
                if key.code == KeyCode::Char('y')
                    && let Some(id) = browser.selected_id()
                {
                    browser.send(Request::Delete { id });
                } else {
                    browser.message = Some("kept".into());
                }
            }
            Mode::Renaming(mut title) => match key.code {
                KeyCode::Esc => browser.mode = Mode::List,
                KeyCode::Enter => {
                    browser.mode = Mode::List;
                    if let (Some(id), false) = (browser.selected_id(), title.trim().is_empty()) {
                        browser.send(Request::Rename { id, title });
                    }
                }
                KeyCode::Backspace => {
                    title.pop();
                    browser.mode = Mode::Renaming(title);
                }
                KeyCode::Char(c) if !ctrl => {
                    title.push(c);
                    browser.mode = Mode::Renaming(title);
                }
                _ => browser.mode = Mode::Renaming(title),
            },
            Mode::Viewing(scroll) => match key.code {
                KeyCode::Esc | KeyCode::Char('q') => browser.mode = Mode::List,
                KeyCode::Up | KeyCode::Char('k') => {
                    browser.mode = Mode::Viewing(scroll.saturating_sub(1))
                }
                KeyCode::Down | KeyCode::Char('j') => browser.mode = Mode::Viewing(scroll + 1),
                KeyCode::PageUp => browser.mode = Mode::Viewing(scroll.saturating_sub(20)),
                KeyCode::PageDown | KeyCode::Char(' ') => browser.mode = Mode::Viewing(scroll + 20),
                KeyCode::Home => browser.mode = Mode::Viewing(0),
                KeyCode::Char('r') => return Some(self.resume_selected()),
                _ => {}
            },
            Mode::Searching => match key.code {
                KeyCode::Enter | KeyCode::Down | KeyCode::Tab => browser.mode = Mode::List,
                KeyCode::Esc => {
                    browser.mode = Mode::List;
                    browser.query.clear();
                    browser.search();
                }
                KeyCode::Backspace => {
                    browser.query.pop();
                    browser.search();
                }
                KeyCode::Char(c) if !ctrl => {
                    browser.query.push(c);
                    browser.search();
                }
                _ => {}
            },
            Mode::List => match key.code {
                KeyCode::Esc if !browser.query.is_empty() => {
                    browser.query.clear();
                    browser.search();
                }
                KeyCode::Esc => self.browser = None,
                KeyCode::Up => browser.select(browser.selected.saturating_sub(1)),
                KeyCode::Down => browser.select(browser.selected + 1),
                KeyCode::PageUp => browser.select(browser.selected.saturating_sub(20)),
                KeyCode::PageDown => browser.select(browser.selected + 20),
                KeyCode::Home => browser.select(0),
                KeyCode::End => browser.select(browser.rows.len().saturating_sub(1)),
                KeyCode::Enter => {
                    if let Some(preview) = &browser.preview {
                        let scroll = super::browser_view::match_scroll(
                            &self.theme,
                            preview,
                            &browser.query,
                            browser.reading_size.get(),
                        );
                        browser.mode = Mode::Viewing(scroll);
                    }
                }
                KeyCode::Backspace => {
                    browser.query.pop();
                    browser.search();
                }
                KeyCode::Char('r') if !ctrl => return Some(self.resume_selected()),
                KeyCode::Char('x') if !ctrl => {
                    if let Some(id) = browser.selected_id() {
                        let path =
                            std::path::Path::new(&cwd).join(format!("oi-tui-session-{id}.md"));
                        browser.send(Request::Export { id, path });
                    }
                }
                KeyCode::Char('d') if !ctrl && browser.selected_id().is_some() => {
                    browser.mode = Mode::ConfirmDelete;
                }
                KeyCode::Char('R') if !ctrl => {
                    if let Some(row) = browser.rows.get(browser.selected) {
                        browser.mode = Mode::Renaming(row.session.title.clone());
                    }
                }
                KeyCode::Char('/') if !ctrl => browser.mode = Mode::Searching,
                KeyCode::Char('q') if !ctrl => self.browser = None,
                KeyCode::Char(c) if !ctrl => {
                    browser.mode = Mode::Searching;
                    browser.query.push(c);
                    browser.search();
                }
                _ => {}
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
