//! The workbench's side of `oi-tui replay ID` (without -y): a small task between the engine
//! and the workbench that sends the recorded blocks one at a time (`Op::RunCode`, caller
//! `replay`: each is proposed to the person like any block) and, at the end, puts the
//! report in the chat and where `replay::run` prints it when the workbench closes. The
//! workbench itself sees only the engine's events, and the report as a notice.

use crate::engine::EngineHandle;
use crate::protocol::Event;
use crate::replay::{Driver, Replay};

/// Puts the replay between the engine and the workbench; returns the handle the workbench
/// uses (the same ops, the events as they pass).
pub fn attach(
    handle: EngineHandle,
    replay: &Replay,
    recorder: Option<std::sync::Arc<crate::store::Recorder>>,
    data_dir: std::path::PathBuf,
) -> EngineHandle {
    let EngineHandle {
        ops,
        mut events,
        task,
    } = handle;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut driver = Driver::new(replay.plan.clone(), replay.timeout_secs);
    let slot = replay.report.clone();
    let engine_ops = ops.clone();
    let title = replay.plan.session.title.clone();
    let n = replay.plan.blocks.len();
    let _ = tx.send(Event::Notice {
        message: format!(
            "Replaying {n} block{} of session {} ({}) in {}: each is proposed in turn; the report follows the last.",
            if n == 1 { "" } else { "s" },
            replay.plan.session.id,
            crate::safe_text::visible_line(&replay.plan.session.title),
            crate::safe_text::visible_line(&replay.plan.cwd.display().to_string()),
        ),
    });
    let first = driver.next_op();
    tokio::spawn(async move {
        let keep = |driver: &Driver, session: Option<String>, stopped: bool| {
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(driver.report(session, stopped));
            }
        };
        // Until it ends, a report read when the workbench closes says it was stopped.
        keep(&driver, None, true);
        let mut done = match first {
            Some(op) => {
                let _ = engine_ops.send(op);
                false
            }
            None => true,
        };
        let mut reported = false;
        loop {
            if done && !reported {
                reported = true;
                let session = match &recorder {
                    Some(recorder) => {
                        let (recorder, dir, title) =
                            (recorder.clone(), data_dir.clone(), title.clone());
                        tokio::task::spawn_blocking(move || {
                            crate::replay::title_session(&recorder, &dir, &title)
                        })
                        .await
                        .ok()
                        .flatten()
                    }
                    None => None,
                };
                keep(&driver, session.clone(), false);
                let report = driver.report(session, false);
                let _ = tx.send(Event::Notice {
                    message: report.text(),
                });
            }
            let Some(event) = events.recv().await else {
                break;
            };
            let answered = driver.on_event(&event).is_some();
            if tx.send(event).is_err() {
                break;
            }
            if answered {
                keep(&driver, None, true);
                match driver.next_op() {
                    Some(op) => {
                        let _ = engine_ops.send(op);
                    }
                    None => done = true,
                }
            }
        }
    });
    EngineHandle {
        ops,
        events: rx,
        task,
    }
}
