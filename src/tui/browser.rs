//! The session browser (Ctrl-O, /sessions, `--sessions`): sessions newest first; every
//! printable key types into the search (FTS; Backspace edits it, Esc or Ctrl-U clears it), a
//! preview of the selected one (at the first match, with the matches highlighted). The
//! actions are on keys no search types (see `bindings.rs`): Enter reads the session at the
//! first match, Ctrl-R resumes, Ctrl-E exports Markdown, Ctrl-D deletes (after asking), F2
//! renames. Renaming and deleting keep the selection where it was (on the renamed session; on
//! the next one after a delete).
//!
//! The store is read on a worker thread of its own; requests go out, replies come back as
//! messages, so the UI task never waits on the disk.

use std::sync::mpsc;

use tokio::sync::mpsc::UnboundedSender;

use super::app::Msg;
use crate::store::{Exported, SessionRow, Store};

/// Rows fetched at a time.
pub const PAGE: usize = 100;

#[derive(Debug)]
pub enum Request {
    /// Sessions from `offset`, newest first; or, with a query, the search results.
    Rows {
        query: String,
        offset: usize,
    },
    Preview {
        id: String,
    },
    Delete {
        id: String,
    },
    Rename {
        id: String,
        title: String,
    },
    Export {
        id: String,
        path: std::path::PathBuf,
    },
}

#[derive(Debug)]
pub enum Reply {
    Rows {
        query: String,
        offset: usize,
        rows: Vec<Row>,
        total: i64,
    },
    Preview(Box<Exported>),
    Done(String),
    Failed(String),
}

/// A session as the list shows it, with the search snippet when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub session: SessionRow,
    pub snippet: Option<String>,
}

/// Starts the worker, which opens the store in `data_dir` itself (off the UI task); its
/// replies arrive on `ui`.
pub fn worker(data_dir: std::path::PathBuf, ui: UnboundedSender<Msg>) -> mpsc::Sender<Request> {
    let (tx, rx) = mpsc::channel::<Request>();
    std::thread::Builder::new()
        .name("session-browser".into())
        .spawn(move || {
            let store = Store::open(&data_dir).map_err(|e| e.to_string());
            while let Ok(request) = rx.recv() {
                let reply = match &store {
                    Ok(store) => answer(store, request),
                    Err(message) => Reply::Failed(message.clone()),
                };
                if ui.send(Msg::Browser(reply)).is_err() {
                    return;
                }
            }
        })
        .ok();
    tx
}

fn answer(store: &Store, request: Request) -> Reply {
    let result = match request {
        Request::Rows { query, offset } => {
            if query.trim().is_empty() {
                store.list(PAGE, offset).and_then(|rows| {
                    Ok(Reply::Rows {
                        query,
                        offset,
                        rows: rows
                            .into_iter()
                            .map(|session| Row {
                                session,
                                snippet: None,
                            })
                            .collect(),
                        total: store.count()?,
                    })
                })
            } else {
                store.search(&query, PAGE).map(|hits| {
                    let total = hits.len() as i64;
                    Reply::Rows {
                        query,
                        offset: 0,
                        rows: hits
                            .into_iter()
                            .map(|h| Row {
                                session: h.session,
                                snippet: Some(format!("{}: {}", h.kind, h.snippet)),
                            })
                            .collect(),
                        total,
                    }
                })
            }
        }
        Request::Preview { id } => store.export(&id).map(|e| Reply::Preview(Box::new(e))),
        Request::Delete { id } => store
            .delete(&id)
            .map(|()| Reply::Done(format!("deleted session {id}"))),
        Request::Rename { id, title } => store
            .rename(&id, &title)
            .map(|()| Reply::Done(format!("renamed session {id}"))),
        Request::Export { id, path } => store.export(&id).and_then(|e| {
            std::fs::write(&path, crate::safe_text::visible(&e.markdown()))
                .map(|()| Reply::Done(format!("exported {id} to {}", path.display())))
                .map_err(|source| crate::store::StoreError::Io {
                    path: path.clone(),
                    source,
                })
        }),
    };
    result.unwrap_or_else(|e| Reply::Failed(e.to_string()))
}

/// What the browser is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The list; printable keys go to the search box.
    List,
    /// Reading one session, scrolled this many lines.
    Viewing(usize),
    /// Asking whether to delete the selected session.
    ConfirmDelete,
    /// Asking whether to resume the selected session although a block waits (or runs) in
    /// this one.
    ConfirmResume,
    Renaming(String),
}

impl Mode {
    /// The mode as the keymap sees it.
    pub fn state(&self) -> super::keymap::BrowserState {
        use super::keymap::BrowserState as S;
        match self {
            Mode::List => S::List,
            Mode::Viewing(_) => S::Reading,
            Mode::ConfirmDelete => S::ConfirmDelete,
            Mode::ConfirmResume => S::ConfirmResume,
            Mode::Renaming(_) => S::Renaming,
        }
    }
}

/// The browser's state.
pub struct Browser {
    pub requests: mpsc::Sender<Request>,
    pub query: String,
    pub rows: Vec<Row>,
    pub total: i64,
    pub selected: usize,
    pub preview: Option<Exported>,
    pub mode: Mode,
    pub message: Option<String>,
    /// A page is on its way (so that scrolling does not ask twice).
    pub loading: bool,
    /// After a rename or delete, the selection to keep when the list comes back: the
    /// session's id, and its place (for when it is gone).
    pub keep: Option<(Option<String>, usize)>,
    /// The size (columns, rows) of the text when a session is read full-size (set as it is
    /// drawn), so that Enter can open it at the first match.
    pub reading_size: std::cell::Cell<(u16, u16)>,
}

impl Browser {
    pub fn open(requests: mpsc::Sender<Request>) -> Browser {
        let browser = Browser {
            requests,
            query: String::new(),
            rows: Vec::new(),
            total: 0,
            selected: 0,
            preview: None,
            mode: Mode::List,
            message: None,
            loading: true,
            keep: None,
            reading_size: std::cell::Cell::new((78, 20)),
        };
        browser.send(Request::Rows {
            query: String::new(),
            offset: 0,
        });
        browser
    }

    pub fn send(&self, request: Request) {
        let _ = self.requests.send(request);
    }

    pub fn selected_id(&self) -> Option<String> {
        self.rows.get(self.selected).map(|r| r.session.id.clone())
    }

    /// Ctrl-U: the search is cleared, and the list is every session again.
    pub fn clear_search(&mut self) {
        self.query.clear();
        self.search();
    }

    /// A printable key: into the title being typed, else into the search (from wherever the
    /// browser was: reading a session, or asked a question, which the key answers no).
    pub fn type_char(&mut self, c: char) {
        match &mut self.mode {
            Mode::Renaming(title) => title.push(c),
            mode => {
                if matches!(mode, Mode::ConfirmDelete | Mode::ConfirmResume) {
                    self.message = Some(answered_no(mode));
                }
                self.mode = Mode::List;
                self.query.push(c);
                self.search();
            }
        }
    }

    /// Backspace: the title's or the search's last character.
    pub fn erase(&mut self) {
        match &mut self.mode {
            Mode::Renaming(title) => {
                title.pop();
            }
            _ => {
                if self.query.pop().is_some() {
                    self.search();
                }
            }
        }
    }

    /// No to the question asked, if one is (Esc, or any key that does not answer it).
    pub fn answer_no(&mut self) {
        if matches!(self.mode, Mode::ConfirmDelete | Mode::ConfirmResume) {
            self.message = Some(answered_no(&self.mode));
            self.mode = Mode::List;
        }
    }

    pub fn search(&mut self) {
        self.loading = true;
        self.send(Request::Rows {
            query: self.query.clone(),
            offset: 0,
        });
    }

    pub fn select(&mut self, index: usize) {
        if self.rows.is_empty() {
            return;
        }
        self.selected = index.min(self.rows.len() - 1);
        // Near the end of what is loaded: fetch the next page.
        if self.query.is_empty()
            && !self.loading
            && self.selected + 20 >= self.rows.len()
            && (self.rows.len() as i64) < self.total
        {
            self.loading = true;
            self.send(Request::Rows {
                query: String::new(),
                offset: self.rows.len(),
            });
        }
        if let Some(id) = self.selected_id()
            && self.preview.as_ref().is_none_or(|p| p.session.id != id)
        {
            self.send(Request::Preview { id });
        }
    }

    pub fn reply(&mut self, reply: Reply) {
        match reply {
            Reply::Rows {
                query,
                offset,
                rows,
                total,
            } => {
                if query != self.query {
                    return;
                }
                self.loading = false;
                self.total = total;
                if offset == 0 {
                    self.rows = rows;
                    self.selected = match self.keep.take() {
                        Some((id, at)) => id
                            .and_then(|id| self.rows.iter().position(|r| r.session.id == id))
                            .unwrap_or(at),
                        None => 0,
                    };
                    self.selected = self.selected.min(self.rows.len().saturating_sub(1));
                    if self
                        .preview
                        .as_ref()
                        .is_some_and(|p| Some(&p.session.id) != self.selected_id().as_ref())
                    {
                        self.preview = None;
                    }
                } else if offset == self.rows.len() {
                    self.rows.extend(rows);
                }
                self.select(self.selected);
            }
            Reply::Preview(exported) => {
                if self.selected_id().as_deref() == Some(exported.session.id.as_str()) {
                    self.preview = Some(*exported);
                }
            }
            Reply::Done(message) => {
                self.message = Some(message);
                self.keep = Some((self.selected_id(), self.selected));
                // The preview of a renamed session is read again (its title changed).
                self.preview = None;
                self.search();
            }
            Reply::Failed(message) => {
                self.loading = false;
                self.message = Some(message);
            }
        }
    }
}

/// What the browser says after a question was answered no.
fn answered_no(mode: &Mode) -> String {
    match mode {
        Mode::ConfirmResume => "not resumed: this session goes on".into(),
        _ => "kept: nothing was deleted".into(),
    }
}
