//! The workbench: the full-screen face of the engine. It owns the terminal and nothing else:
//! everything that is not UI (when to ask, what to tell the model) is the engine's.
//!
//! One tokio select loop over terminal events, engine events and redraw requests. The state
//! changes only through `App::update` (a reducer, `app.rs`); drawing (`view.rs`) reads it.
//! Frames are drawn only when something changed, at most about 60 a second, so a burst of
//! output becomes one frame and an idle workbench uses no CPU.

pub mod app;
mod app_events;
mod bars;
mod bindings;
pub mod browser;
mod browser_keys;
mod browser_view;
pub mod chat;
pub mod code;
pub mod code_cache;
pub mod code_stream;
pub mod graphics;
pub mod highlight;
pub mod image_cache;
pub mod image_view;
pub mod images;
pub mod keymap;
pub mod keys;
pub mod markdown;
mod md_layout;
mod offers;
mod replay;
mod run_guard;
pub mod stream;
pub mod terminal;
pub mod theme;
mod tool_calls;
pub mod view;

use std::io::Write;
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    EventStream,
};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures_util::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::config::Settings;
use crate::engine::{self, EngineConfig};
use crate::protocol::Op;
use crate::{demo, models, shutdown};
use app::{App, Effect, Focus, Msg};
use theme::{Depth, Theme};

/// The shortest time between two frames.
const FRAME: Duration = Duration::from_millis(16);
/// The shortest time between two frames when the person pressed a key: what they type shows
/// at once, while a burst of output still makes one frame.
const KEY_FRAME: Duration = Duration::from_millis(2);
/// The spinner's pace while something runs.
const TICK: Duration = Duration::from_millis(100);

/// How the workbench opens.
#[derive(Debug, Clone, Copy, Default)]
pub struct Start<'a> {
    /// On the built-in scripted model.
    pub demo: bool,
    /// Resuming this saved session.
    pub resume: Option<&'a str>,
    /// On the session browser.
    pub browse: bool,
    /// Serving MCP at this address while open (`--mcp-listen`).
    pub mcp_listen: Option<&'a str>,
    /// Replaying a saved session's blocks (`oi-tui replay ID`).
    pub replay: Option<&'a crate::replay::Replay>,
}

/// Opens the workbench; returns the exit status.
pub async fn run(settings: Settings, start: Start<'_>) -> i32 {
    let Start {
        demo: demo_mode,
        resume,
        browse,
        mcp_listen,
        replay: replaying,
    } = start;
    let theme = match Theme::load(&settings.theme, Depth::detect()) {
        Ok(theme) => theme,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return 1;
        }
    };
    highlight::preload();
    let configured = match replaying {
        Some(_) => crate::replay::engine_config(&settings, false, true).map(|c| (c, None)),
        None => engine_config(&settings, demo_mode).await,
    };
    let (config, setup) = match configured {
        Ok(pair) => pair,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return 1;
        }
    };
    let crate::sessions::Session {
        handle,
        recorder,
        resumed,
    } = match crate::sessions::start(config, &settings, resume) {
        Ok(session) => session,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return 1;
        }
    };
    let handle = match replaying {
        Some(r) => replay::attach(handle, r, recorder.clone(), settings.data_dir.clone()),
        None => handle,
    };
    // Other agents' blocks come in through the same engine, and wait for the person.
    let serving = match mcp_listen {
        Some(listen) => {
            let router = crate::mcp::server::router::Router::new(handle.ops.clone());
            match crate::mcp::server::workbench(&settings, listen, router).await {
                Ok(serving) => Some(serving),
                Err(message) => {
                    eprintln!("oi-tui: --mcp-listen {listen}: {message}");
                    return 1;
                }
            }
        }
        None => None,
    };
    let keymap = match keymap::Keymap::from_config(&settings.keys) {
        Ok(keymap) => keymap,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return 1;
        }
    };
    let mut app = App::new(theme);
    app.keymap = keymap;
    app.setup = setup;
    app.open_browser_at_start = browse;
    if replaying.is_some() {
        app.setup = None;
    }
    let sandbox = settings.sandbox();
    app.sandbox = Some(sandbox.status());
    if let Some(why) = sandbox.warning.or(sandbox.refusal) {
        app.chat.push(chat::Entry::Notice(why));
    }
    // Said on stderr too, but the screen is about to be taken over.
    for warning in &settings.warnings {
        app.chat
            .push(chat::Entry::Notice(format!("warning: {warning}")));
    }
    if let Some(serving) = &serving {
        for notice in &serving.notices {
            app.chat.push(chat::Entry::Notice(notice.clone()));
        }
    }
    if let Some(resumed) = resumed {
        app.show_history(&resumed.events);
        app.chat.push(chat::Entry::Notice(resumed.notice));
        app.setup = None;
    }
    if let Err(e) = enter_terminal() {
        restore_terminal();
        eprintln!("oi-tui: cannot take over the terminal: {e}");
        return 1;
    }
    shutdown::on_exit_restore_terminal(restore_terminal);
    // Asked of the terminal now: in raw mode, before the event reader starts.
    app.images
        .cache
        .set_graphics(graphics::detect(settings.images));
    // The last session's recorder stays open until what it could not save is known.
    let (mut status, _last) = match event_loop(
        &mut app,
        handle,
        recorder,
        &settings,
        demo_mode,
        serving.as_ref().map(|s| s.router.clone()),
    )
    .await
    {
        Ok(last) => (0, last),
        Err(e) => {
            restore_terminal();
            eprintln!("oi-tui: {e}");
            (1, None)
        }
    };
    restore_terminal();
    // The banner went with the screen: what could not be saved is said once more, here.
    let mut missing = crate::sessions::unsaved();
    if missing.is_empty()
        && let Some(report) = app.exit_report()
    {
        missing.push(report);
    }
    for line in missing {
        eprintln!("oi-tui: error: {}", crate::safe_text::visible(&line));
        status = 1;
    }
    status
}

/// The engine's configuration: the configured model, the demo, a local server that answers,
/// or none (with the setup panel's text).
async fn engine_config(
    settings: &Settings,
    demo_mode: bool,
) -> Result<(EngineConfig, Option<String>), String> {
    let approval = settings.approval_mode();
    let mut settings = settings.clone();
    if demo_mode {
        let base = demo::start()
            .await
            .map_err(|e| format!("cannot start the demo model: {e}"))?;
        settings.model = Some(crate::llm::ModelSpec::parse("openai/demo")?);
        settings.api_base = Some(base);
        settings.api_key = None;
        settings.tools = true;
        let intro = "# oi-tui demo\n\nThe model in this demo is a script built into oi-tui; the code it proposes is real and runs on this machine, in persistent Python and shell kernels.\n\nType a message (anything will do) and press **Enter** to start. For each proposed block: **y** runs it, **e** edits it, **n** skips it, **r** skips it with a reason, **a** runs it and the rest. **F1** lists every key; **Ctrl-Q** quits.";
        return Ok((
            settings.engine_config(approval, false)?,
            Some(intro.to_string()),
        ));
    }
    if settings.model.is_some() {
        return Ok((settings.engine_config(approval, false)?, None));
    }
    let answers = models::probe_local().await;
    if let Some((model, base)) = models::first_local_model(&answers) {
        settings.model = Some(crate::llm::ModelSpec::parse(&model)?);
        settings.api_base = Some(base);
        return Ok((settings.engine_config(approval, false)?, None));
    }
    // No model: the engine still runs `!cmd`; messages get a clear error.
    let probed = models::probed_servers()
        .iter()
        .map(|s| format!("- {s}: no answer"))
        .collect::<Vec<_>>()
        .join("\n");
    let setup = format!(
        "# No model yet\n\nNo model is configured, and no local model server answered:\n\n{probed}\n\nTo use one:\n\n- **Ollama**: `ollama serve`, `ollama pull qwen2.5-coder:7b`, then `oi-tui --model ollama/qwen2.5-coder:7b`\n- **llama.cpp, LM Studio, vLLM**: `oi-tui --model openai/NAME --api-base http://localhost:8080/v1`\n- **OpenAI**: set `OPENAI_API_KEY`, then `oi-tui --model openai/gpt-4o-mini`\n- **Anthropic**: set `ANTHROPIC_API_KEY`, then `oi-tui --model anthropic/claude-sonnet-4-5`\n\nOr put `model = \"...\"` in the config file. To try the workbench now, restart with `oi-tui --demo`.\n\nMeanwhile `!command` runs a shell command here. Ctrl-C twice quits."
    );
    let mut config = settings.engine_config(approval, false).or_else(|_| {
        let mut with_any = settings.clone();
        with_any.model = crate::llm::ModelSpec::parse("ollama/none").ok();
        with_any.engine_config(approval, false)
    })?;
    config.provider = None;
    Ok((config, Some(setup)))
}

/// Whether the workbench holds the terminal (so that it is given back once: leaving the
/// alternate screen twice would move the cursor back over what was printed since).
static HOLDS_TERMINAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn enter_terminal() -> std::io::Result<()> {
    HOLDS_TERMINAL.store(true, std::sync::atomic::Ordering::SeqCst);
    enable_raw_mode()?;
    execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    )
}

/// Puts the terminal back: raw mode off, the main screen back, the cursor shown.
pub fn restore_terminal() {
    if !HOLDS_TERMINAL.swap(false, std::sync::atomic::Ordering::SeqCst) {
        return;
    }
    let _ = execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

async fn event_loop(
    app: &mut App,
    handle: engine::EngineHandle,
    recorder: Option<std::sync::Arc<crate::store::Recorder>>,
    settings: &Settings,
    demo_mode: bool,
    router: Option<std::sync::Arc<crate::mcp::server::router::Router>>,
) -> std::io::Result<Option<std::sync::Arc<crate::store::Recorder>>> {
    let engine::EngineHandle {
        mut ops,
        mut events,
        mut task,
    } = handle;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut input = EventStream::new();
    // Results of work done off this task (file writes, the store), back as messages.
    let (ui_tx, mut ui_rx) = tokio::sync::mpsc::unbounded_channel::<Msg>();
    // Images are made ready off this task; the loop draws again when one is.
    let wake = ui_tx.clone();
    app.images.cache.in_background(std::sync::Arc::new(move || {
        let _ = wake.send(Msg::Tick);
    }));
    app.browser_requests = Some(browser::worker(settings.data_dir.clone(), ui_tx.clone()));
    if app.open_browser_at_start {
        app.open_browser();
    }
    let mut dirty = true;
    // The last message was the person's (a key, a paste, the mouse).
    let mut keyed = false;
    let mut last_frame = Instant::now() - FRAME;
    let mut engine_alive = true;
    let mut quit = false;
    let mut resume: Option<String> = None;
    // Where `/export` reads the complete session from.
    let mut session = Session {
        recorder,
        data_dir: settings.data_dir.clone(),
    };
    while !quit {
        if let Some(id) = resume.take() {
            // A new engine on the saved conversation; the old one stops.
            let _ = ops.send(Op::Shutdown);
            let _ = tokio::time::timeout(Duration::from_secs(3), &mut task).await;
            match restart(settings, demo_mode, &id).await {
                Ok((handle, recorder, replay, notice)) => {
                    if let Some(router) = &router {
                        router.set_engine(handle.ops.clone());
                    }
                    ops = handle.ops;
                    events = handle.events;
                    task = handle.task;
                    engine_alive = true;
                    session.recorder = recorder;
                    app.resumed(&replay, notice);
                }
                Err(message) => app
                    .update(Msg::Engine(crate::protocol::Event::Error {
                        kind: crate::protocol::ErrorKind::Config,
                        message,
                    }))
                    .clear(),
            }
            dirty = true;
        }
        let pace = if keyed { KEY_FRAME } else { FRAME };
        if dirty && last_frame.elapsed() >= pace {
            keyed = false;
            let size = terminal.size()?;
            let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
            let areas = view::layout(area, app);
            if let Some((rows, cols)) = view::terminal_inner(&areas) {
                for effect in app.resize_terminal(rows, cols) {
                    quit |= apply(effect, &ops, &ui_tx, &mut resume, &session);
                }
            }
            app.pane_areas = [
                (Focus::Chat, areas.chat),
                (Focus::Code, areas.code),
                (Focus::Terminal, areas.terminal),
                (Focus::Input, Some(areas.input)),
            ]
            .into_iter()
            .filter_map(|(f, r)| r.map(|r| (f, r)))
            .collect();
            app.tab_areas = areas.tab_labels.clone();
            app.wide = areas.wide;
            terminal.draw(|frame| view::draw(frame, app, &areas))?;
            last_frame = Instant::now();
            dirty = false;
        }
        let next_frame = tokio::time::Instant::from_std(last_frame + pace);
        let msg = tokio::select! {
            event = input.next() => match event {
                Some(Ok(crossterm::event::Event::Key(key))) => Some(Msg::Key(key)),
                Some(Ok(crossterm::event::Event::Paste(text))) => Some(Msg::Paste(text)),
                Some(Ok(crossterm::event::Event::Mouse(mouse))) => Some(Msg::Mouse(mouse)),
                Some(Ok(crossterm::event::Event::Resize(..))) => {
                    dirty = true;
                    None
                }
                Some(Ok(_)) => None,
                Some(Err(e)) => return Err(e),
                None => break,
            },
            event = events.recv(), if engine_alive => match event {
                Some(event) => {
                    if let Some(router) = &router {
                        router.observe(&event);
                    }
                    Some(Msg::Engine(event))
                }
                None => {
                    engine_alive = false;
                    if let Some(router) = &router {
                        router.closed("the workbench's engine stopped");
                    }
                    None
                }
            },
            msg = ui_rx.recv() => msg,
            _ = tokio::time::sleep(TICK), if app.animating() => Some(Msg::Tick),
            _ = tokio::time::sleep_until(next_frame), if dirty => None,
        };
        if let Some(msg) = msg {
            keyed |= matches!(msg, Msg::Key(_) | Msg::Paste(_) | Msg::Mouse(_));
            for effect in app.update(msg) {
                quit |= apply(effect, &ops, &ui_tx, &mut resume, &session);
            }
            dirty = true;
            // Take what else the engine has ready, so that a burst of output is one frame.
            for _ in 0..4096 {
                let Ok(event) = events.try_recv() else {
                    break;
                };
                if let Some(router) = &router {
                    router.observe(&event);
                }
                for effect in app.update(Msg::Engine(event)) {
                    quit |= apply(effect, &ops, &ui_tx, &mut resume, &session);
                }
            }
        }
    }
    let _ = ops.send(Op::Shutdown);
    let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
    if let Some(router) = &router {
        router.closed("the workbench was closed");
    }
    Ok(session.recorder)
}

/// The session being recorded, for `/export`.
struct Session {
    recorder: Option<std::sync::Arc<crate::store::Recorder>>,
    data_dir: std::path::PathBuf,
}

/// What `restart` hands back: the new engine, its recorder, the saved session as events to
/// show, and the notice.
type Restarted = (
    engine::EngineHandle,
    Option<std::sync::Arc<crate::store::Recorder>>,
    Vec<crate::protocol::Event>,
    String,
);

/// An engine for a saved session: the same settings, the session's conversation.
async fn restart(settings: &Settings, demo_mode: bool, id: &str) -> Result<Restarted, String> {
    let (config, _) = engine_config(settings, demo_mode).await?;
    // The store is read off the UI task.
    let (settings, id) = (settings.clone(), id.to_string());
    let session =
        tokio::task::spawn_blocking(move || crate::sessions::start(config, &settings, Some(&id)))
            .await
            .map_err(|e| format!("resuming failed: {e}"))??;
    let (replay, notice) = match session.resumed {
        Some(r) => (r.events, r.notice),
        None => (Vec::new(), String::from("Resumed the session.")),
    };
    Ok((session.handle, session.recorder, replay, notice))
}

/// `/export`: the complete session as the store has it (the same files as `oi-tui
/// sessions export`, in the format the file name's extension says: `.ipynb`, `.py`, `.sh`,
/// `.json`, else Markdown); as Markdown, the chat's own transcript when the store cannot
/// be read, so that nothing is lost. Returns the sentence for the person.
fn export(
    from: (
        Option<std::sync::Arc<crate::store::Recorder>>,
        std::path::PathBuf,
    ),
    path: &std::path::Path,
    fallback: String,
) -> String {
    use crate::store::Format;
    let (recorder, data_dir) = from;
    // The format the file's name says (`.ipynb`, `.py`, `.sh`, `.json`), else Markdown.
    let format = Format::from_path(path).unwrap_or(Format::Markdown);
    let from_store = recorder.as_ref().map(|recorder| {
        recorder.flush();
        crate::store::Store::open(&data_dir).and_then(|store| store.export(recorder.session_id()))
    });
    let text = match from_store {
        Some(Ok(exported)) => match exported.render(format) {
            Ok(text) => text,
            Err(e) => return format!("cannot export the session as {format}: {e}"),
        },
        Some(Err(crate::store::StoreError::NotFound(_))) => {
            return "nothing to export yet: the session is kept once you send a message or a !command".to_string();
        }
        // Only Markdown can be made from the chat alone.
        Some(Err(e)) if format != Format::Markdown => {
            return format!("cannot export the session as {format}: {e}");
        }
        Some(Err(_)) | None => crate::safe_text::visible(&fallback),
    };
    match crate::store::write_whole(path, &text, format.is_script()) {
        Ok(()) if format == Format::Markdown => {
            format!("exported the conversation to {}", path.display())
        }
        Ok(()) => format!(
            "exported the session as {} to {}",
            format.describe(),
            path.display()
        ),
        Err(e) => e,
    }
}

/// Carries out an effect; returns true to quit.
fn apply(
    effect: Effect,
    ops: &tokio::sync::mpsc::UnboundedSender<Op>,
    ui: &tokio::sync::mpsc::UnboundedSender<Msg>,
    resume: &mut Option<String>,
    session: &Session,
) -> bool {
    match effect {
        Effect::Op(op) => {
            let _ = ops.send(op);
            false
        }
        Effect::Quit => true,
        Effect::Copy(text) => {
            let mut out = std::io::stdout();
            let _ = execute!(
                out,
                crossterm::clipboard::CopyToClipboard::to_clipboard_from(text)
            );
            let _ = out.flush();
            false
        }
        Effect::Resume(id) => {
            *resume = Some(id);
            false
        }
        Effect::Open(path) => {
            let ui = ui.clone();
            tokio::task::spawn_blocking(move || {
                if let Err(message) = images::open_external(&path) {
                    let _ = ui.send(Msg::Engine(crate::protocol::Event::Notice { message }));
                }
            });
            false
        }
        Effect::Export(path, text) => {
            let ui = ui.clone();
            let from = (session.recorder.clone(), session.data_dir.clone());
            tokio::task::spawn_blocking(move || {
                let message = export(from, &path, text);
                let _ = ui.send(Msg::Engine(crate::protocol::Event::Notice { message }));
            });
            false
        }
    }
}
