//! `oi-tui replay ID`: runs a saved session's blocks again, in order, in fresh kernels, and
//! reports block by block where the output now differs from the recorded one.
//!
//! Which blocks: those that ran in the recording (`run`, `edited` — the edited code — and
//! the person's own `!cmd` blocks, since later blocks may count on what they did, such as a
//! `cd` or a file they wrote), and those oi-tui stopped in the middle of (they ran, and may
//! have left state behind). Blocks that were skipped, denied or never decided did not run,
//! and blocks `/undo` or `/reset` dropped are no longer part of the session: both are left
//! out, and the report says so. Tool calls to MCP servers are not code and are left out too.
//!
//! The blocks run through a real engine session, recorded like any other (titled
//! `replay of <title>`), on the road other callers take (`Op::RunCode`, caller `replay`): the
//! policy, the sandbox and the approval gate judge each block as they would any. Headless
//! (`-y`), approval is `auto` with nobody to ask, as in headless `-y`: what a rule denies
//! and what always asks does not run and is reported `not run`. Without `-y` the workbench
//! opens and proposes each block to the person in turn. This module owns the face-neutral
//! part; the workbench's hook is `tui::replay`.

mod compare;
mod driver;
mod headless;

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

pub use compare::{Difference, Verdict, output_diff};
pub use driver::{CALLER, Driver, Outcome, Report, outcome_json, ran_code};

use crate::config::Settings;
use crate::safe_text::visible;
use crate::store::{SessionRow, StoredBlock};

/// Exit status for usage errors (no such session, no such directory, missing -y).
pub const USAGE_ERROR: i32 = 2;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The session: an id, any unique prefix of one, or `last`.
    pub id: String,
    /// Run every block without asking (approval auto, nobody to ask: what a rule denies or
    /// what always asks is reported as not run); without it the workbench proposes each.
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
    /// With -y: print a JSON line per block and a summary instead of the transcript.
    #[arg(long)]
    pub json: bool,
    /// Stop any block that runs longer than this many seconds.
    #[arg(long, value_name = "SECS", value_parser = seconds)]
    pub timeout: Option<f64>,
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!("`{text}` is not a number of seconds above 0")),
    }
}

/// What to replay: the recorded session, its blocks to run again in order, and where.
#[derive(Debug, Clone)]
pub struct Plan {
    pub session: SessionRow,
    pub blocks: Vec<StoredBlock>,
    /// Recorded blocks not replayed, and why.
    pub left_out: Vec<(i64, String)>,
    pub cwd: PathBuf,
}

/// The blocks of a recorded session to run again, and those left out with why.
pub fn select(blocks: &[StoredBlock]) -> (Vec<StoredBlock>, Vec<(i64, String)>) {
    let mut chosen = Vec::new();
    let mut left_out = Vec::new();
    for b in blocks {
        let why = if b.dropped {
            Some("dropped from the conversation by /undo or /reset".to_string())
        } else if b.language.starts_with("mcp:") {
            Some("a tool call, not code".to_string())
        } else {
            match b.decision.as_str() {
                "run" | "edited" | "user" => None,
                "skipped" => Some(crate::store::decision_words(b)),
                "proposed" => Some("never decided".to_string()),
                other => Some(format!("not run ({other})")),
            }
        };
        match why {
            Some(why) => left_out.push((b.block_id, why)),
            None => chosen.push(b.clone()),
        }
    }
    (chosen, left_out)
}

/// A replay the workbench runs: the plan, and where the report goes when it is done.
#[derive(Debug, Clone)]
pub struct Replay {
    pub plan: Plan,
    pub timeout_secs: Option<f64>,
    /// The report, once the last block is answered (read when the workbench closes).
    pub report: std::sync::Arc<std::sync::Mutex<Option<Report>>>,
}

/// `oi-tui replay ...`; returns the exit status.
pub async fn run(args: ReplayArgs, options: &crate::cli::Options) -> i32 {
    if args.json && !args.yes {
        eprintln!("oi-tui replay: --json goes with -y (the workbench shows its own report)");
        return USAGE_ERROR;
    }
    let mut flags = options.flag_settings();
    let settings = match crate::config::load(&flags, &|k| std::env::var(k).ok()) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return USAGE_ERROR;
        }
    };
    let plan = match tokio::task::spawn_blocking({
        let settings = settings.clone();
        let given = options.cwd.clone();
        move || plan(&settings, &args.id, given)
    })
    .await
    {
        Ok(Ok(plan)) => plan,
        Ok(Err(message)) => {
            eprintln!("oi-tui replay: {message}");
            return USAGE_ERROR;
        }
        Err(e) => {
            eprintln!("oi-tui replay: {e}");
            return USAGE_ERROR;
        }
    };
    // The project rules and the sandbox are those of the directory the blocks run in.
    flags.settings.cwd = Some(plan.cwd.clone());
    if !args.yes {
        flags.settings.auto_run = None;
        flags.settings.approval = Some(crate::protocol::ApprovalMode::Ask);
    }
    let Some(mut settings) = crate::config::load_said(&flags) else {
        return USAGE_ERROR;
    };
    if args.yes {
        settings.approval = Some(crate::protocol::ApprovalMode::Auto);
        return headless::run(settings, plan, args.timeout, args.json).await;
    }
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        eprintln!(
            "oi-tui replay: the workbench needs a terminal to ask about each block; pass -y to replay without asking (headless)"
        );
        return USAGE_ERROR;
    }
    let replay = Replay {
        plan,
        timeout_secs: args.timeout,
        report: Default::default(),
    };
    let status = crate::tui::run(
        settings,
        crate::tui::Start {
            replay: Some(&replay),
            ..Default::default()
        },
    )
    .await;
    let report = replay.report.lock().ok().and_then(|mut r| r.take());
    match report {
        Some(report) => {
            crate::stdout::print(&report.text());
            if status == 0 { report.status() } else { status }
        }
        None => {
            eprintln!("oi-tui replay: the workbench closed before the replay ended");
            if status == 0 { 1 } else { status }
        }
    }
}

/// Reads the session and decides what runs where. `given`: the --cwd flag.
fn plan(settings: &Settings, which: &str, given: Option<PathBuf>) -> Result<Plan, String> {
    let dir = visible(&settings.data_dir.display().to_string());
    if !settings.data_dir.join(crate::store::FILE).exists() {
        return Err(format!(
            "no sessions in {dir}: nothing was recorded there (check --data-dir)"
        ));
    }
    let store = crate::store::Store::open(&settings.data_dir)
        .or_else(|_| crate::store::Store::open_read_only(&settings.data_dir))
        .map_err(|e| e.to_string())?;
    let id = store.resolve(which).map_err(|e| e.to_string())?;
    let exported = store.export(&id).map_err(|e| e.to_string())?;
    let cwd = match given {
        Some(dir) => {
            let dir = if dir.is_absolute() {
                dir
            } else {
                std::env::current_dir().map(|c| c.join(&dir)).unwrap_or(dir)
            };
            if !dir.is_dir() {
                return Err(format!(
                    "--cwd {}: no such directory",
                    visible(&dir.display().to_string())
                ));
            }
            dir
        }
        None => {
            let recorded = PathBuf::from(&exported.session.cwd);
            if exported.session.cwd.is_empty() || !recorded.is_dir() {
                return Err(format!(
                    "session {id} ran in {}, which is gone; pass --cwd DIR to replay it in another directory",
                    visible(&exported.session.cwd)
                ));
            }
            recorded
        }
    };
    let (blocks, left_out) = select(&exported.blocks);
    Ok(Plan {
        session: exported.session,
        blocks,
        left_out,
        cwd,
    })
}

/// The engine configuration for a replay: no model is needed (one configured is kept, so
/// that the person can talk about the replay in the workbench).
pub fn engine_config(
    settings: &Settings,
    unattended: bool,
    keep_model: bool,
) -> Result<crate::engine::EngineConfig, String> {
    let approval = settings.approval_mode();
    let mut config = settings.engine_config(approval, unattended).or_else(|_| {
        let mut with_any = settings.clone();
        with_any.model = crate::llm::ModelSpec::parse("ollama/none").ok();
        with_any.engine_config(approval, unattended)
    })?;
    if !keep_model || settings.model.is_none() {
        config.provider = None;
    }
    Ok(config)
}

/// After the replay: the new session is titled `replay of <title>` (its session row exists
/// once its first block was recorded). Reads and writes the store: call it off a UI task.
pub fn title_session(
    recorder: &crate::store::Recorder,
    data_dir: &std::path::Path,
    title: &str,
) -> Option<String> {
    recorder.flush();
    let id = recorder.session_id().to_string();
    let store = crate::store::Store::open(data_dir).ok()?;
    let title: String = format!("replay of {title}").chars().take(80).collect();
    store.rename(&id, &title).ok()?;
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(id: i64, language: &str, decision: &str, dropped: bool) -> StoredBlock {
        StoredBlock {
            block_id: id,
            language: language.into(),
            proposed_code: format!("echo {id}"),
            edited_code: None,
            decision: decision.into(),
            status: None,
            exit_code: None,
            signal: None,
            duration_ms: None,
            output: None,
            created_at: 0,
            skip_reason: None,
            tail: None,
            notes: Vec::new(),
            state_lost: false,
            after_message: None,
            dropped,
            interrupted: false,
            caller: None,
            images: Vec::new(),
        }
    }

    #[test]
    fn what_ran_is_replayed_and_the_rest_said() {
        let blocks = [
            block(1, "python", "run", false),
            block(2, "shell", "user", false),
            block(3, "shell", "edited", false),
            block(4, "shell", "skipped", false),
            block(5, "python", "run", true),
            block(6, "mcp:files/read", "run", false),
            block(7, "shell", "proposed", false),
        ];
        let (chosen, left_out) = select(&blocks);
        let ids: Vec<i64> = chosen.iter().map(|b| b.block_id).collect();
        assert_eq!(ids, [1, 2, 3]);
        let out: Vec<i64> = left_out.iter().map(|(id, _)| *id).collect();
        assert_eq!(out, [4, 5, 6, 7]);
        assert!(left_out[1].1.contains("/undo"), "{left_out:?}");
        assert!(left_out[2].1.contains("tool call"), "{left_out:?}");
    }

    #[test]
    fn edited_blocks_replay_the_edited_code() {
        let mut b = block(1, "shell", "edited", false);
        b.edited_code = Some("echo edited".into());
        assert_eq!(ran_code(&b), "echo edited");
    }
}
