//! Code run for a caller other than the model (`Op::RunCode`, the seam under the MCP
//! server): it is proposed with the caller's name, judged by the same policy, asked about
//! like any block, run in the same kernels, and answered with one `CallFinished`.

use std::time::Duration;

use oi_tui::engine::{self, EngineConfig, EngineHandle};
use oi_tui::protocol::{
    ApprovalMode, CallOutcome, Decision, Event, GateAction, Language, NotRun, Op, RunStatus,
};

use super::model_server::{ModelServer, Reply};

fn config(
    dir: &std::path::Path,
    approval: ApprovalMode,
    allow: &[&str],
    deny: &[&str],
) -> EngineConfig {
    let mut cfg = super::support::engine_config("openai/scripted", None, dir);
    cfg.approval = approval;
    let mut rules = oi_tui::policy::Rules::new();
    let lists = oi_tui::policy::RuleLists {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    assert!(
        rules
            .add_lists(&lists, oi_tui::policy::RuleSource::User)
            .is_empty()
    );
    cfg.rules = rules;
    cfg
}

async fn next(h: &mut EngineHandle) -> Event {
    super::support::next_event(h).await
}

/// Waits for the answer to `call`, returning it and the events before it.
async fn answer(h: &mut EngineHandle, call: u64) -> (CallOutcome, Vec<Event>) {
    let mut seen = Vec::new();
    loop {
        match next(h).await {
            Event::CallFinished {
                call: c, outcome, ..
            } if c == call => return (outcome, seen),
            other => seen.push(other),
        }
    }
}

fn run(call: u64, language: &str, code: &str) -> Op {
    Op::RunCode {
        call,
        caller: "test-agent".into(),
        language: language.into(),
        code: code.into(),
        timeout_secs: None,
    }
}

fn ran(outcome: &CallOutcome) -> (&oi_tui::protocol::RunResult, &str, bool) {
    match outcome {
        CallOutcome::Ran {
            result,
            code,
            edited,
        } => (result, code, *edited),
        other => panic!("expected it to run: {other:?}"),
    }
}

fn not_run(outcome: &CallOutcome) -> (NotRun, &str) {
    match outcome {
        CallOutcome::NotRun { why, reason } => (*why, reason),
        other => panic!("expected it not to run: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_blocks_share_a_kernel_and_carry_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(dir.path(), ApprovalMode::Auto, &[], &[])).unwrap();
    h.ops.send(run(1, "python", "x = 41")).unwrap();
    let (first, seen) = answer(&mut h, 1).await;
    assert_eq!(ran(&first).0.status, RunStatus::Success);
    let proposed = seen
        .iter()
        .find_map(|e| match e {
            Event::BlockProposed { block, gate, .. } => Some((block.clone(), gate.clone())),
            _ => None,
        })
        .expect("the block is proposed");
    let caller = proposed.0.caller.expect("a caller");
    assert_eq!((caller.name.as_str(), caller.call), ("test-agent", 1));
    assert_eq!(proposed.1.unwrap().action, GateAction::Run);
    h.ops.send(run(2, "py", "print(x + 1)")).unwrap();
    let (second, _) = answer(&mut h, 2).await;
    let (result, code, edited) = ran(&second);
    assert_eq!(result.output.trim(), "42");
    assert_eq!(code, "print(x + 1)");
    assert!(!edited);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_block_never_runs_in_any_mode() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(dir.path(), ApprovalMode::Auto, &[], &["touch"])).unwrap();
    h.ops.send(run(7, "shell", "touch denied.txt")).unwrap();
    let (outcome, seen) = answer(&mut h, 7).await;
    let (why, reason) = not_run(&outcome);
    assert_eq!(why, NotRun::Denied);
    assert!(reason.contains("touch"), "{reason}");
    assert!(!seen.iter().any(|e| matches!(e, Event::ExecStarted { .. })));
    assert!(!dir.path().join("denied.txt").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nobody_to_ask_declines_and_says_how_to_allow() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), ApprovalMode::Ask, &[], &[]);
    cfg.unattended = true;
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(run(1, "shell", "touch asked.txt")).unwrap();
    let (outcome, _) = answer(&mut h, 1).await;
    let (why, reason) = not_run(&outcome);
    assert_eq!(why, NotRun::Declined);
    assert!(
        reason.contains("--approval rules") && reason.contains("--approval auto"),
        "{reason}"
    );
    assert!(!dir.path().join("asked.txt").exists());
    // In auto mode, what still asks is not allowed by auto mode: the advice says so.
    let mut cfg = config(dir.path(), ApprovalMode::Auto, &[], &[]);
    cfg.unattended = true;
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(run(2, "shell", "sudo touch /root-owned"))
        .unwrap();
    let (outcome, _) = answer(&mut h, 2).await;
    let (why, reason) = not_run(&outcome);
    assert_eq!(why, NotRun::Declined);
    assert!(
        reason.contains("Even in auto mode") && !reason.contains("or with `--approval auto`"),
        "{reason}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_edits_the_block_and_the_caller_hears_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(dir.path(), ApprovalMode::Ask, &[], &[])).unwrap();
    h.ops.send(run(3, "shell", "echo proposed")).unwrap();
    loop {
        if let Event::ApprovalNeeded { block_id } = next(&mut h).await {
            h.ops
                .send(Op::Decision {
                    block_id,
                    decision: Decision::Edit {
                        code: "echo edited-by-person".into(),
                    },
                })
                .unwrap();
            break;
        }
    }
    let (outcome, _) = answer(&mut h, 3).await;
    let (result, code, edited) = ran(&outcome);
    assert!(edited);
    assert_eq!(code, "echo edited-by-person");
    assert_eq!(result.output.trim(), "edited-by-person");

    h.ops.send(run(4, "shell", "echo again")).unwrap();
    loop {
        if let Event::ApprovalNeeded { block_id } = next(&mut h).await {
            h.ops
                .send(Op::Decision {
                    block_id,
                    decision: Decision::Skip {
                        reason: Some("not now".into()),
                    },
                })
                .unwrap();
            break;
        }
    }
    let (outcome, _) = answer(&mut h, 4).await;
    let (why, reason) = not_run(&outcome);
    assert_eq!(why, NotRun::Skipped);
    assert!(reason.contains("not now"), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_a_waiting_a_queued_and_a_running_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(
        dir.path(),
        ApprovalMode::Rules,
        &["sleep", "export", "echo"],
        &[],
    ))
    .unwrap();
    // 1 waits for a person; 2 waits behind it; 2 is cancelled, then 1.
    h.ops
        .send(run(1, "shell", "printf needs-approval"))
        .unwrap();
    loop {
        if matches!(next(&mut h).await, Event::ApprovalNeeded { .. }) {
            break;
        }
    }
    h.ops.send(run(2, "shell", "printf queued")).unwrap();
    h.ops.send(Op::CancelCall { call: 2 }).unwrap();
    let (outcome, seen) = answer(&mut h, 2).await;
    assert_eq!(not_run(&outcome).0, NotRun::Cancelled);
    // The person heard that it came and waits.
    assert!(
        seen.iter().any(|e| matches!(e, Event::Notice { message }
            if message.contains("shell block from test-agent (over MCP) waits"))),
        "{seen:?}"
    );
    h.ops.send(Op::CancelCall { call: 1 }).unwrap();
    let (outcome, _) = answer(&mut h, 1).await;
    assert_eq!(not_run(&outcome).0, NotRun::Cancelled);

    // A running block is interrupted, and its kernel survives.
    h.ops
        .send(run(3, "shell", "export KEPT=yes; sleep 30"))
        .unwrap();
    loop {
        if matches!(next(&mut h).await, Event::ExecStarted { .. }) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    h.ops.send(Op::CancelCall { call: 3 }).unwrap();
    let started = std::time::Instant::now();
    let (outcome, _) = answer(&mut h, 3).await;
    let (result, _, _) = ran(&outcome);
    assert_eq!(result.status, RunStatus::Interrupted);
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(!result.state_lost, "{result:?}");
    h.ops.send(run(4, "shell", "echo kept=$KEPT")).unwrap();
    let (outcome, _) = answer(&mut h, 4).await;
    assert_eq!(ran(&outcome).0.output.trim(), "kept=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_calls_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = engine::spawn(config(dir.path(), ApprovalMode::Auto, &[], &[])).unwrap();
    h.ops.send(run(1, "cobol", "DISPLAY 1")).unwrap();
    let (outcome, _) = answer(&mut h, 1).await;
    let (why, reason) = not_run(&outcome);
    assert_eq!(why, NotRun::Invalid);
    assert!(
        reason.contains("cobol") && reason.contains("python"),
        "{reason}"
    );
    h.ops
        .send(Op::RunCode {
            call: 2,
            caller: "t".into(),
            language: "python".into(),
            code: "print(1)".into(),
            timeout_secs: Some(-3.0),
        })
        .unwrap();
    let (outcome, _) = answer(&mut h, 2).await;
    let (why, reason) = not_run(&outcome);
    assert_eq!(why, NotRun::Invalid);
    assert!(reason.contains("timeout_secs"), "{reason}");
    // Past what a duration holds: refused, and the engine lives on.
    h.ops
        .send(Op::RunCode {
            call: 20,
            caller: "t".into(),
            language: "python".into(),
            code: "print(1)".into(),
            timeout_secs: Some(1e300),
        })
        .unwrap();
    let (outcome, _) = answer(&mut h, 20).await;
    assert_eq!(not_run(&outcome).0, NotRun::Invalid);
    h.ops
        .send(Op::RunCode {
            call: 3,
            caller: "t".into(),
            language: "python".into(),
            code: "import time; time.sleep(20)".into(),
            timeout_secs: Some(0.5),
        })
        .unwrap();
    let (outcome, _) = answer(&mut h, 3).await;
    assert_eq!(ran(&outcome).0.status, RunStatus::TimedOut);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarting_a_kernel_loses_its_state_and_the_model_hears_of_calls() {
    let server = ModelServer::start(vec![Reply::text("seen")]).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), ApprovalMode::Auto, &[], &[]);
    cfg.provider =
        super::support::engine_config("openai/scripted", Some(server.base("openai")), dir.path())
            .provider;
    let mut h = engine::spawn(cfg).unwrap();
    h.ops.send(run(1, "python", "y = 'kept-value'")).unwrap();
    answer(&mut h, 1).await;
    h.ops
        .send(Op::RestartKernels {
            language: Some(Language::Python),
        })
        .unwrap();
    loop {
        if let Event::KernelsRestarted { note, .. } = next(&mut h).await {
            assert!(note.contains("python kernel was restarted"), "{note}");
            break;
        }
    }
    h.ops.send(run(2, "python", "print(y)")).unwrap();
    let (outcome, _) = answer(&mut h, 2).await;
    let (result, _, _) = ran(&outcome);
    assert_eq!(result.status, RunStatus::Failed);
    assert!(result.output.contains("NameError"), "{}", result.output);

    h.ops
        .send(Op::UserMessage {
            text: "what happened?".into(),
        })
        .unwrap();
    loop {
        if matches!(next(&mut h).await, Event::TurnFinished { .. }) {
            break;
        }
    }
    let text = server.chats()[0].all_text();
    assert!(
        text.contains("Another agent (test-agent) ran this python block")
            && text.contains("y = 'kept-value'")
            && text.contains("python kernel was restarted"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_block_is_saved_with_its_caller_and_comes_back_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), ApprovalMode::Auto, &[], &[]);
    let data = dir.path().join("sessions");
    let store = oi_tui::store::Store::open(&data).unwrap();
    let recorder = std::sync::Arc::new(oi_tui::store::Recorder::start(
        store,
        None,
        oi_tui::store::Redactor::default(),
    ));
    cfg.recorder = Some(recorder.clone());
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(Op::RunCode {
            call: 1,
            caller: "claude-code".into(),
            language: "python".into(),
            code: "print('saved-' + 'output')".into(),
            timeout_secs: None,
        })
        .unwrap();
    answer(&mut h, 1).await;
    h.ops.send(Op::Shutdown).unwrap();
    let _ = h.task.await;
    recorder.flush();
    let store = oi_tui::store::Store::open(&data).unwrap();
    let sessions = store.list(10, 0).unwrap();
    assert_eq!(sessions.len(), 1);
    assert!(
        sessions[0].title.starts_with("claude-code (MCP): print("),
        "{}",
        sessions[0].title
    );
    let id = sessions[0].id.clone();
    let replayed = store.replay(&id).unwrap();
    let caller = replayed.iter().find_map(|e| match e {
        Event::BlockProposed { block, .. } => block.caller.clone(),
        _ => None,
    });
    assert_eq!(caller.map(|c| c.name), Some("claude-code".to_string()));
    let markdown = store.export(&id).unwrap().markdown();
    assert!(
        markdown.contains("from claude-code over MCP") && markdown.contains("saved-output"),
        "{markdown}"
    );
}
