//! `oi-tui replay ID -y`: the blocks run one after the other without asking; each block's
//! new output is printed when it ends (with `--json`, a JSON line per block), then the
//! report and its summary. Ctrl-C stops the running block and the replay; a second exits.

use crate::config::Settings;
use crate::protocol::{Decision, Event, Op};
use crate::safe_text::{json_safe, visible, visible_line};

use super::{Driver, Plan, Verdict};

pub async fn run(settings: Settings, plan: Plan, timeout: Option<f64>, json: bool) -> i32 {
    let config = match super::engine_config(&settings, true, false) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return super::USAGE_ERROR;
        }
    };
    let sandbox = settings.sandbox();
    eprintln!("oi-tui: {}", sandbox.summary());
    if let Some(warning) = &sandbox.warning {
        eprintln!("oi-tui: warning: {warning}");
    }
    if let Some(refusal) = &sandbox.refusal {
        eprintln!("oi-tui: {refusal}");
        return super::USAGE_ERROR;
    }
    let start = {
        let settings = settings.clone();
        tokio::task::spawn_blocking(move || crate::sessions::start(config, &settings, None)).await
    };
    let session = match start {
        Ok(Ok(session)) => session,
        Ok(Err(message)) => {
            eprintln!("oi-tui: {message}");
            return super::USAGE_ERROR;
        }
        Err(e) => {
            eprintln!("oi-tui: {e}");
            return super::USAGE_ERROR;
        }
    };
    let title = plan.session.title.clone();
    let mut driver = Driver::new(plan, timeout);
    if !json {
        let n = driver.plan().blocks.len();
        crate::stdout::println(&format!(
            "Replaying {n} block{} of session {} ({}) in {}",
            if n == 1 { "" } else { "s" },
            driver.plan().session.id,
            visible_line(&driver.plan().session.title),
            visible_line(&driver.plan().cwd.display().to_string()),
        ));
    }
    let crate::engine::EngineHandle {
        ops,
        mut events,
        task,
    } = session.handle;
    let (stop_tx, mut stop_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    watch_interrupts(ops.clone(), stop_tx);
    let mut stopped = false;
    match driver.next_op() {
        Some(op) => {
            let _ = ops.send(op);
        }
        None => {
            if !json {
                crate::stdout::println("Nothing to replay: no block of that session ran.");
            }
        }
    }
    while driver.waiting() {
        let event = tokio::select! {
            event = events.recv() => match event {
                Some(event) => event,
                None => break,
            },
            _ = stop_rx.recv() => {
                stopped = true;
                continue;
            }
        };
        match &event {
            // Nobody can answer here (approval auto has no one to ask).
            Event::ApprovalNeeded { block_id } | Event::EscalationNeeded { block_id, .. } => {
                let _ = ops.send(Op::Decision {
                    block_id: *block_id,
                    decision: Decision::Skip {
                        reason: Some("Nobody can answer: the replay runs with -y.".to_string()),
                    },
                });
            }
            Event::StoreTrouble { message, .. } => {
                eprintln!("oi-tui: error: {}", visible(message));
            }
            _ => {}
        }
        if let Some(outcome) = driver.on_event(&event) {
            if json {
                let line = serde_json::to_string(&super::outcome_json(outcome)).unwrap_or_default();
                crate::stdout::println(&json_safe(&line));
            } else {
                crate::stdout::print(&block_text(outcome));
            }
            if stopped {
                break;
            }
            if let Some(op) = driver.next_op() {
                let _ = ops.send(op);
            }
        }
    }
    let _ = ops.send(Op::Shutdown);
    let _ = task.await;
    let replay_session = session.recorder.as_ref().and_then(|recorder| {
        let health = recorder.close();
        if !health.all_saved() {
            eprintln!("oi-tui: error: {}", visible(&health.summary()));
        }
        super::title_session(recorder, &settings.data_dir, &title)
    });
    let report = driver.report(replay_session, stopped);
    if json {
        if let Some(summary) = report.json_lines().last()
            && let Ok(line) = serde_json::to_string(summary)
        {
            crate::stdout::println(&json_safe(&line));
        }
    } else {
        crate::stdout::println("");
        crate::stdout::print(&report.text());
    }
    if stopped { 130 } else { report.status() }
}

/// A block as it ends: its header, its new output, and its verdict.
fn block_text(o: &super::Outcome) -> String {
    let mut out = format!(
        "\n── block {} · {} ──\n",
        o.recorded.block_id,
        visible_line(&o.recorded.language)
    );
    out.push_str(&visible(o.code.trim_end()));
    out.push('\n');
    if let Some(result) = &o.result {
        let shown = super::driver::shown_output(result);
        if !shown.is_empty() {
            out.push_str("── output ──\n");
            out.push_str(&shown);
            out.push('\n');
        }
        for image in &result.images {
            out.push_str(&format!(
                "image: {}\n",
                visible_line(&image.path.display().to_string())
            ));
        }
    }
    out.push_str(&format!("→ {}", o.verdict.words()));
    if let Verdict::NotRun { reason } = &o.verdict {
        out.push_str(&format!(": {}", visible_line(reason)));
    }
    out.push('\n');
    out
}

/// Ctrl-C: the first stops the running block and the replay; a second exits.
fn watch_interrupts(
    ops: tokio::sync::mpsc::UnboundedSender<Op>,
    stop: tokio::sync::mpsc::UnboundedSender<()>,
) {
    let mut count = 0;
    crate::shutdown::on_interrupt(move || {
        count += 1;
        if count == 1 {
            eprintln!("\noi-tui: stopping the replay; press Ctrl-C again to quit at once");
            let _ = stop.send(());
            let _ = ops.send(Op::Interrupt);
        } else {
            crate::shutdown::exit(130);
        }
    });
}
