//! What an MCP session runs its calls on: a `Backend`, which is a router into an engine and
//! who answers approvals. `oi-tui mcp` gives each client session its own engine (its own
//! kernels, recorded in the store as a session named after the caller), started at the first
//! call and shut down when the session ends; the open workbench hands every session its own
//! shared router, whose approvals its person answers.

use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;

use super::router::Router;
use crate::config::Settings;
use crate::protocol::Op;

/// Where a session's calls run.
pub trait Backend: Send + Sync {
    /// The router into the engine.
    fn router(&self) -> &Arc<Router>;
    /// True when a person answers approvals (the open workbench): a call that needs one
    /// waits for them instead of asking the client.
    fn person_approves(&self) -> bool {
        false
    }
    /// Stops the engine when the backend owns it; the handle ends when it has stopped.
    fn stop(&self) -> Option<JoinHandle<()>> {
        None
    }
}

/// What a backend factory learns of the session it starts a backend for.
#[derive(Debug, Clone)]
pub struct SessionStart {
    /// The client's name (`clientInfo.name`), such as "claude-code".
    pub caller: String,
    /// Whether the client can be asked (elicitation). When it cannot, blocks that need a
    /// person's approval are declined with how to allow them.
    pub can_ask: bool,
}

/// Makes the backend of a new session.
pub type BackendFactory =
    Arc<dyn Fn(&SessionStart) -> Result<Arc<dyn Backend>, String> + Send + Sync>;

/// A session's own engine: kernels, policy and sandbox as configured, recorded in the store.
pub struct EngineBackend {
    router: Arc<Router>,
    ops: tokio::sync::mpsc::UnboundedSender<Op>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl EngineBackend {
    /// Starts an engine for one client session (reads the store: call it from a task that may
    /// block briefly).
    pub fn start(settings: &Settings, start: &SessionStart) -> Result<EngineBackend, String> {
        let approval = settings.approval_mode();
        // A server needs no model: the engine only runs callers' code.
        let mut config = settings
            .engine_config(approval, !start.can_ask)
            .or_else(|_| {
                let mut with_any = settings.clone();
                with_any.model = crate::llm::ModelSpec::parse("ollama/none").ok();
                with_any.engine_config(approval, !start.can_ask)
            })?;
        config.provider = None;
        // Nobody types into a kernel here: a block that reads input gets end of file.
        config.stdin_eof = true;
        if config.kernels.default_timeout.is_none() {
            config.kernels.default_timeout = Some(crate::config::UNATTENDED_BLOCK_TIMEOUT);
        }
        let session = crate::sessions::start(config, settings, None)?;
        let crate::engine::EngineHandle {
            ops,
            mut events,
            task,
        } = session.handle;
        let router = Router::new(ops.clone());
        let observer = router.clone();
        let recorder = session.recorder;
        let task = tokio::spawn(async move {
            while let Some(event) = events.recv().await {
                observer.observe(&event);
            }
            observer.closed("oi-tui's engine stopped");
            let _ = task.await;
            if let Some(recorder) = recorder {
                let health = recorder.close();
                if !health.all_saved() {
                    eprintln!("oi-tui: {}", crate::safe_text::visible(&health.summary()));
                }
            }
        });
        Ok(EngineBackend {
            router,
            ops,
            task: Mutex::new(Some(task)),
        })
    }
}

impl Backend for EngineBackend {
    fn router(&self) -> &Arc<Router> {
        &self.router
    }

    fn stop(&self) -> Option<JoinHandle<()>> {
        let _ = self.ops.send(Op::Shutdown);
        self.task.lock().ok().and_then(|mut t| t.take())
    }
}

impl Drop for EngineBackend {
    fn drop(&mut self) {
        // The session ended: its kernels stop (the engine's task finishes on its own).
        let _ = self.ops.send(Op::Shutdown);
    }
}

/// The factory of `oi-tui mcp`: an own engine per session.
pub fn engine_factory(settings: Settings) -> BackendFactory {
    Arc::new(move |start: &SessionStart| {
        let backend = EngineBackend::start(&settings, start)?;
        Ok(Arc::new(backend) as Arc<dyn Backend>)
    })
}
