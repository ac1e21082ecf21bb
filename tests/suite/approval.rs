//! The policy in the engine, through the real binary against the scripted model server: a
//! deny rule stops a block even under `-y` and the model hears why; `--approval rules` runs
//! what the rules allow and asks (declines, without a terminal) for the rest; auto mode
//! still asks for privileged blocks; `--json` carries the verdict and the decision; a
//! malformed `[policy]` list is an error with its line and column.

use std::process::{Output, Stdio};

use super::model_server::{ModelServer, Reply};
use super::support::{json_events as events, proposed, started, text};

/// One run of `oi-tui --task` in a temporary home, with `config` as its config file.
pub(crate) async fn run(
    home: &std::path::Path,
    server: &ModelServer,
    config: &str,
    args: &[&str],
) -> Output {
    let config_path = home.join("config.toml");
    std::fs::write(&config_path, config).expect("config");
    let base = server.base("openai");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.args([
        "--task",
        "do it",
        "--model",
        "openai/scripted",
        "--api-base",
        &base,
    ])
    .arg("--config")
    .arg(&config_path)
    .args(args)
    .arg("--data-dir")
    .arg(home.join("data"))
    .current_dir(home)
    .env("XDG_CONFIG_HOME", home.join("xdg-config"))
    .env("XDG_DATA_HOME", home.join("share"))
    .env_remove("OPENAI_API_KEY")
    .env_remove("OI_TUI_MODEL")
    .env_remove("OI_TUI_API_BASE")
    .stdin(Stdio::null())
    .kill_on_drop(true);
    super::support::output_within(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_block_does_not_run_under_auto_run_and_the_model_hears_why() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "cd . && rm -rf victim"),
        Reply::text("I will not delete it."),
    ])
    .await;
    let home = tempfile::tempdir().expect("dir");
    std::fs::create_dir(home.path().join("victim")).expect("dir");
    std::fs::write(home.path().join("victim/keep.txt"), "data").expect("file");
    let out = run(home.path(), &server, "[policy]\ndeny = [\"rm\"]\n", &["-y"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        home.path().join("victim/keep.txt").exists(),
        "the denied block ran: {stdout}"
    );
    // The transcript shows the verdict, the quoted text and the rule, then the decision.
    assert!(stdout.contains("⚑ deletes"), "{stdout}");
    assert!(stdout.contains("rm -rf victim"), "{stdout}");
    assert!(
        stdout.contains("→ denied: denied by rule \"rm\""),
        "{stdout}"
    );
    let chats = server.chats();
    assert_eq!(chats.len(), 2, "the model gets one answer, then finishes");
    let told = chats[1].all_text();
    assert!(
        told.contains("denied by rule \\\"rm\\\"") || told.contains("denied by rule \"rm\""),
        "{told}"
    );
    assert!(told.contains("rm -rf victim"), "{told}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_mode_runs_what_the_rules_allow_and_asks_for_the_rest() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "ls")
            .and_tool("shell", "rm -f doomed.txt")
            .and_tool("shell", "ls -a | grep doomed"),
        Reply::text("done"),
    ])
    .await;
    let home = tempfile::tempdir().expect("dir");
    std::fs::write(home.path().join("doomed.txt"), "x").expect("file");
    let out = run(
        home.path(),
        &server,
        "[policy]\nallow = [\"ls\", \"grep\"]\n",
        &["--approval", "rules", "--json"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = events(&out);
    let configured = events
        .iter()
        .find(|e| e["event"] == "session_configured")
        .expect("configured");
    assert_eq!(configured["approval"], "rules");
    assert_eq!(configured["unattended"], true);
    // `ls` and `ls | grep`: allowed by the rules, run without a question.
    for id in [1, 3] {
        let p = proposed(&events, id);
        assert_eq!(p["verdict"]["decision"], "allow", "{p}");
        assert_eq!(p["gate"]["action"], "run", "{p}");
        assert!(started(&events, id), "block {id} ran");
    }
    // `rm`: no rule allows it, so it asks; nobody can answer here, so it is declined.
    let rm = proposed(&events, 2);
    assert_eq!(rm["verdict"]["decision"], "ask", "{rm}");
    assert_eq!(rm["gate"]["action"], "decline", "{rm}");
    assert!(!started(&events, 2));
    assert!(home.path().join("doomed.txt").exists());
    assert!(!events.iter().any(|e| e["event"] == "approval_needed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_still_asks_for_a_privileged_block_and_declines_it_without_a_terminal() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "sudo touch made-by-sudo.txt"),
        Reply::tool("shell", "echo fine > made-by-echo.txt"),
        Reply::text("done"),
    ])
    .await;
    let home = tempfile::tempdir().expect("dir");
    let out = run(home.path(), &server, "", &["--approval", "auto"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(!home.path().join("made-by-sudo.txt").exists());
    assert!(stdout.contains("⚑ privileged"), "{stdout}");
    assert!(stdout.contains("→ declined"), "{stdout}");
    let chats = server.chats();
    let told = chats[1].all_text();
    assert!(told.contains("needs a person's approval"), "{told}");
    assert!(told.contains("privileged"), "{told}");
    // An ordinary write runs without a question in auto mode.
    assert!(home.path().join("made-by-echo.txt").exists(), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_carries_the_verdict_and_the_decision() {
    let server = ModelServer::start(vec![
        Reply::tool("python", "import shutil\nshutil.rmtree('build')"),
        Reply::text("ok"),
    ])
    .await;
    let home = tempfile::tempdir().expect("dir");
    std::fs::create_dir(home.path().join("build")).expect("dir");
    let out = run(
        home.path(),
        &server,
        "[policy]\ndeny = [\"git push\"]\n",
        &["-y", "--json"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = events(&out);
    let configured = events
        .iter()
        .find(|e| e["event"] == "session_configured")
        .expect("configured");
    assert_eq!(configured["approval"], "auto");
    let p = proposed(&events, 1);
    let classes = p["verdict"]["classes"].as_array().expect("classes");
    assert!(classes.iter().any(|c| c == "deletes"), "{p}");
    let findings = p["verdict"]["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|f| f["quoted"].as_str().unwrap_or("").contains("rmtree") && f["line"] == 2),
        "{p}"
    );
    assert_eq!(p["gate"]["action"], "run", "{p}");
    assert!(started(&events, 1));
    assert!(!home.path().join("build").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_policy_list_is_an_error_with_line_and_column() {
    let server = ModelServer::start(vec![Reply::text("never")]).await;
    let home = tempfile::tempdir().expect("dir");
    let out = run(
        home.path(),
        &server,
        "model = \"openai/x\"\n[policy]\ndeny = \"rm\"\n",
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("config.toml:3:"), "{stderr}");
    let out = run(home.path(), &server, "[policy]\ndeny = [\"rm; ls\"]\n", &[]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("[policy]") && stderr.contains("shell syntax"),
        "{stderr}"
    );
    assert!(server.chats().is_empty(), "nothing was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_headless_prompt_shows_the_verdict_right_above_the_question() {
    let server = ModelServer::start(vec![
        Reply::tool("shell", "ls\nrm -rf build"),
        Reply::text("all done"),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("build")).expect("dir");
    let command = format!(
        "sleep 1; cd '{dir}' && XDG_CONFIG_HOME='{dir}/config' '{bin}' --task 'clean' --model openai/scripted --api-base {base} --data-dir '{dir}/data'; echo RUN-ENDED; sleep 30",
        dir = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_oi-tui"),
        base = server.base("openai"),
    );
    let tmux = super::tmux::Tmux::start(&command, 160, 50);
    let screen = tmux.wait_for("Run this shell block? [y/n/e]").await;
    let lines: Vec<&str> = screen.lines().collect();
    let question = lines
        .iter()
        .rposition(|l| l.contains("Run this shell block?"))
        .expect("the question");
    let verdict = lines
        .iter()
        .rposition(|l| l.contains("⚑ deletes"))
        .unwrap_or_else(|| panic!("no verdict in\n{screen}"));
    assert!(
        verdict < question && question - verdict <= 4,
        "the verdict is right above the question:\n{screen}"
    );
    assert!(
        lines[verdict..question]
            .iter()
            .any(|l| l.contains("rm -rf build — deletes a directory tree (line 2)")),
        "{screen}"
    );
    assert!(screen.contains("→ asks: ask mode"), "{screen}");
    tmux.send(&["n", "Enter"]);
    tmux.wait_for("RUN-ENDED").await;
    assert!(dir.path().join("build").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_declined_again_is_still_shown_with_its_verdict() {
    let server = insisting().await;
    let home = tempfile::tempdir().expect("dir");
    let config = "[policy]\ndeny = [\"rm\"]\n";
    let out = run(home.path(), &server, config, &["-y", "--json"]).await;
    let events = events(&out);
    for id in [1, 2] {
        let block = proposed(&events, id);
        assert!(!block["verdict"].is_null(), "block {id}: {block}");
        assert_eq!(block["gate"]["action"], "decline", "block {id}: {block}");
        assert!(!started(&events, id));
    }
    let out = run(home.path(), &insisting().await, config, &["-y"]).await;
    let stdout = text(&out.stdout);
    assert!(stdout.contains("$(echo rm) f8"), "{stdout}");
    assert!(stdout.contains("possibly denied"), "{stdout}");
}

/// A model that proposes a second block nobody can approve after the first was declined.
async fn insisting() -> ModelServer {
    ModelServer::start(vec![
        Reply::tool("shell", "eval \"rm f7\""),
        Reply::tool("shell", "$(echo rm) f8"),
        Reply::text("I give up."),
    ])
    .await
}
