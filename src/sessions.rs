//! Sessions for the faces: attaching the store to an engine (recording, resuming), and the
//! `oi-tui sessions ...` commands.
//!
//! The store keeps what the model and the blocks wrote, byte for byte; these commands never
//! print it raw. Tables, transcripts and search hits show control, invisible and
//! bidirectional characters visibly (`␛`, `␍`, `⟨U+202E⟩`). A Markdown export is made the
//! same way whether it goes to a terminal or to a file, because a Markdown file is read by
//! `cat`, pagers and previewers that would obey escape sequences; the exact text stays in
//! the store and in the JSON export, where every such character is an escape (`\u001b`).

use std::io::IsTerminal;
use std::sync::Arc;

use clap::{Args, Subcommand};

use crate::config::Settings;
use crate::engine::EngineConfig;
use crate::protocol::Event;
use crate::safe_text::{json_safe, visible, visible_line};
use crate::store::{Format, Recorder, Redactor, Store, StoreError, format_time};

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions, newest first.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// How many to list.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Print a session's transcript (ID: any unique prefix, or `last`).
    Show { id: String },
    /// Search messages, code and output.
    Search {
        query: Vec<String>,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Export a session: Markdown, JSON, a Jupyter notebook, or a Python or shell script of
    /// the code that ran.
    Export {
        id: String,
        /// md, json, ipynb, py or sh (default: the output file's extension, else md).
        #[arg(long, value_name = "FORMAT")]
        format: Option<Format>,
        /// Write to this file instead of standard output (whole or not at all).
        #[arg(short, long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Delete a session.
    Delete { id: String },
    /// Give a session a new title.
    Rename { id: String, title: Vec<String> },
    /// Rebuild a damaged store from what can be read of it (the damaged file is kept).
    Repair,
}

/// The redactor for this process (see `Settings::redactor`).
pub fn redactor(settings: &Settings) -> Redactor {
    settings.redactor()
}

/// A session taken up again.
#[derive(Debug, Clone)]
pub struct Resumed {
    pub id: String,
    /// A sentence for the person: what came back, and what did not.
    pub notice: String,
    /// The session as it was, as events for a face to show (nothing runs again).
    pub events: Vec<Event>,
}

/// A session as every face starts it: the engine running, its recorder, and what came back
/// when an earlier session was resumed.
pub struct Session {
    pub handle: crate::engine::EngineHandle,
    /// Where the session is written (kept by the face to report what could not be saved).
    pub recorder: Option<Arc<Recorder>>,
    pub resumed: Option<Resumed>,
}

/// Starts a session, the one way every face does (the workbench, headless mode, the MCP
/// server): the store attached (with `resume`, the earlier conversation back in the
/// model's context), then the engine with its kernels, policy and sandbox. Reads the store:
/// call it off a UI task.
pub fn start(
    mut config: EngineConfig,
    settings: &Settings,
    resume: Option<&str>,
) -> Result<Session, String> {
    let resumed = attach_resumed(&mut config, settings, resume)?;
    // The user's MCP servers, for sessions that talk to a model with tools.
    if config.tool_host.is_none() && config.provider.is_some() && config.tools {
        config.tool_host = crate::mcp::client::host_for(settings);
    }
    let recorder = config.recorder.clone();
    let handle = crate::engine::spawn(config).map_err(|e| e.to_string())?;
    Ok(Session {
        handle,
        recorder,
        resumed,
    })
}

/// Connects the store to an engine: a recorder for the session, and, with `resume`, the
/// earlier conversation, with the notice and the resumed session as events to show.
fn attach_resumed(
    config: &mut EngineConfig,
    settings: &Settings,
    resume: Option<&str>,
) -> Result<Option<Resumed>, String> {
    let store = Store::open(&settings.data_dir).map_err(|e| e.to_string())?;
    let mut resumed = None;
    let mut resumed_id = None;
    // Results written for calls oi-tui stopped before answering, to record (see below).
    let mut unrecorded = Vec::new();
    if let Some(which) = resume {
        let id = store.resolve(which).map_err(|e| e.to_string())?;
        let (messages, added) = store
            .resume_conversation(&id, settings.max_output)
            .map_err(|e| e.to_string())?;
        let events = store.replay(&id).map_err(|e| e.to_string())?;
        let title = store.session(&id).map(|s| s.title).unwrap_or_default();
        let mut notice = format!(
            "Resumed session {id} ({title}): {} messages are back in the model's context. Kernel state (variables, imports, the working directory) is not restored; run again what you need.",
            messages.len()
        );
        if added > 0 {
            notice.push_str(" oi-tui had stopped in the middle of the last reply's blocks: the model is told which were interrupted or did not run.");
        }
        unrecorded = messages[messages.len() - added..].to_vec();
        config.history = messages;
        resumed_id = Some(id.clone());
        resumed = Some(Resumed { id, notice, events });
    }
    let writer = Store::open(&settings.data_dir).map_err(|e| e.to_string())?;
    let recorder = Arc::new(Recorder::start(writer, resumed_id, redactor(settings)));
    // The images blocks make are kept with the session.
    // Absolute: the store keeps them relative to the data directory, however it was given.
    let image_dir = crate::store::images::session_dir(&settings.data_dir, recorder.session_id());
    // As a real path (no link in it): images are later kept only through such a path.
    let image_dir = std::path::absolute(&image_dir).unwrap_or(image_dir);
    config.kernels.image_dir = Some(crate::store::images::real_path(&image_dir));
    config.kernels.session_id = Some(recorder.session_id().to_string());
    // The store keeps the same messages as the conversation (`/undo` counts on it).
    for message in &unrecorded {
        match message.role {
            // Results for a model without tools: a message the person did not write.
            crate::llm::Role::User => recorder.user_message(message, Some("")),
            _ => recorder.message(message),
        }
    }
    if let Ok(mut open) = OPEN.lock() {
        open.retain(|r| r.strong_count() > 0);
        open.push(Arc::downgrade(&recorder));
    }
    // Stopped by a signal, oi-tui still writes what it holds, last (within 2 s).
    let weak = Arc::downgrade(&recorder);
    crate::shutdown::on_exit(move || {
        if let Some(recorder) = weak.upgrade() {
            recorder.close_within(std::time::Duration::from_secs(2));
        }
    });
    config.recorder = Some(recorder);
    Ok(resumed)
}

/// Every session recorder this process opened (a workbench may open several: resume).
static OPEN: std::sync::Mutex<Vec<std::sync::Weak<Recorder>>> = std::sync::Mutex::new(Vec::new());

/// On the way out: writes what the open recorders hold (10 s at most each) and says, in a
/// sentence each, what could not be saved. Empty when everything is saved.
pub fn unsaved() -> Vec<String> {
    let open: Vec<Arc<Recorder>> = OPEN
        .lock()
        .map(|o| o.iter().filter_map(std::sync::Weak::upgrade).collect())
        .unwrap_or_default();
    open.iter()
        .map(|r| r.close())
        .filter(|health| !health.all_saved())
        .map(|health| health.summary())
        .collect()
}

/// `oi-tui sessions ...`; returns the exit status.
pub fn run(args: SessionsArgs, settings: &Settings) -> i32 {
    // A damaged store cannot be opened as a store: repair reads it its own way.
    if let SessionsCommand::Repair = args.command {
        return match crate::store::repair(&settings.data_dir) {
            Ok(repaired) => {
                crate::stdout::println(&visible(&repaired.to_string()));
                0
            }
            Err(e) => {
                eprintln!("oi-tui: {e}");
                1
            }
        };
    }
    let reads_only = matches!(
        args.command,
        SessionsCommand::List { .. }
            | SessionsCommand::Show { .. }
            | SessionsCommand::Search { .. }
            | SessionsCommand::Export { .. }
    );
    // Nothing here creates a store: a mistyped --data-dir must not leave a new one behind,
    // and there is nothing to read, delete or rename in a store that does not exist.
    if !settings.data_dir.join(crate::store::FILE).exists() {
        let dir = visible(&settings.data_dir.display().to_string());
        if let SessionsCommand::List { json, .. } = args.command {
            crate::stdout::println(&if json {
                "[]".to_string()
            } else {
                format!("No sessions yet: nothing was recorded in {dir}.")
            });
            return 0;
        }
        eprintln!("oi-tui: no sessions in {dir}: nothing was recorded there (check --data-dir)");
        return 1;
    }
    let store = match Store::open(&settings.data_dir) {
        Ok(store) => store,
        // A store oi-tui may not write can still be read.
        Err(StoreError::ReadOnly { .. }) if reads_only => {
            match Store::open_read_only(&settings.data_dir) {
                Ok(store) => store,
                Err(e) => {
                    eprintln!("oi-tui: {e}");
                    return 1;
                }
            }
        }
        Err(e) => {
            eprintln!("oi-tui: {e}");
            return 1;
        }
    };
    match command(&store, args.command, &settings.redactor()) {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            1
        }
    }
}

/// Runs one command. What is printed or exported passes through `redactor` once more (for
/// sessions written before today's secrets were known).
fn command(store: &Store, command: SessionsCommand, redactor: &Redactor) -> Result<(), String> {
    let e = |e: crate::store::StoreError| e.to_string();
    match command {
        SessionsCommand::List { json, limit } => {
            let rows = store.list(limit, 0).map_err(e)?;
            if json {
                crate::stdout::println(&json_safe(
                    &serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?,
                ));
            } else if rows.is_empty() {
                crate::stdout::println("No sessions yet.");
            } else {
                for r in rows {
                    crate::stdout::println(&format!(
                        "{}  {}  {:<40}  {}  {}  ran {} · skipped {}{}",
                        r.id,
                        format_time(r.updated_at),
                        clip(&visible_line(&r.title), 40),
                        visible_line(&r.model),
                        visible_line(&r.cwd),
                        r.blocks_run,
                        r.blocks_skipped,
                        if r.incomplete.is_some() {
                            " · INCOMPLETE"
                        } else {
                            ""
                        }
                    ));
                    // Why, on a line of its own: a session not in the store whole.
                    if let Some(why) = &r.incomplete {
                        crate::stdout::println(&format!("    incomplete: {}", visible_line(why)));
                    }
                }
            }
        }
        SessionsCommand::Show { id } => {
            let id = store.resolve(&id).map_err(e)?;
            crate::stdout::print(&visible(
                &redactor.clean(&store.export(&id).map_err(e)?.markdown()),
            ));
        }
        SessionsCommand::Search { query, limit } => {
            let query = query.join(" ");
            let hits = store.search(&query, limit).map_err(e)?;
            if hits.is_empty() {
                crate::stdout::println(&format!("Nothing matches `{}`.", visible_line(&query)));
            }
            for h in hits {
                crate::stdout::println(&format!(
                    "{}  {}  {}\n    {}: {}",
                    h.session.id,
                    format_time(h.session.updated_at),
                    visible_line(&h.session.title),
                    visible_line(&h.kind),
                    visible_line(&h.snippet)
                ));
            }
        }
        SessionsCommand::Export { id, format, output } => {
            let format = format
                .or_else(|| output.as_deref().and_then(Format::from_path))
                .unwrap_or(Format::Markdown);
            let id = store.resolve(&id).map_err(e)?;
            let exported = store.export(&id).map_err(e)?;
            let text = redactor.clean(&exported.render(format)?);
            match output {
                Some(path) => crate::store::write_whole(&path, &text, format.is_script())?,
                // Scripts keep their code exactly, but not on a terminal, which would obey
                // the escape sequences in it.
                None if format.is_script() && std::io::stdout().is_terminal() => {
                    crate::stdout::print(&visible(&text))
                }
                None => crate::stdout::print(&text),
            }
        }
        SessionsCommand::Delete { id } => {
            let id = store.resolve(&id).map_err(e)?;
            store.delete(&id).map_err(e)?;
            crate::stdout::println(&format!("Deleted session {id}."));
        }
        SessionsCommand::Rename { id, title } => {
            let id = store.resolve(&id).map_err(e)?;
            let title = title.join(" ");
            if title.trim().is_empty() {
                return Err("give the new title after the id".to_string());
            }
            store.rename(&id, &title).map_err(e)?;
            crate::stdout::println(&format!("Renamed session {id}."));
        }
        SessionsCommand::Repair => {
            return Err("the store is repaired before it is opened".to_string());
        }
    }
    Ok(())
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}
