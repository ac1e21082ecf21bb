//! `oi-tui replay`: a session recorded through the real engine (headless, against the
//! scripted model server) runs again; the report says which blocks' output changed.

use std::path::Path;

use oi_tui::store::Store;

use super::model_server::{ModelServer, Reply};
use super::support::{isolated_oi_tui, output_within, text};
use super::tmux::Tmux;

/// Records a session in `work` with three blocks that ran (two read data.txt) and one a
/// rule denied; returns its id.
async fn record(server: &ModelServer, home: &Path, work: &Path) -> String {
    std::fs::write(work.join("data.txt"), "apple\n").unwrap();
    std::fs::write(home.join("config.toml"), "[policy]\ndeny = [\"rm\"]\n").unwrap();
    let mut cmd = isolated_oi_tui(work);
    cmd.args([
        "--task",
        "read the data",
        "--model",
        "openai/scripted",
        "--api-base",
        &server.base("openai"),
        "-y",
    ])
    .arg("--config")
    .arg(home.join("config.toml"))
    .arg("--data-dir")
    .arg(home.join("data"));
    let out = output_within(cmd).await;
    assert!(out.status.success(), "{out:?}");
    let store = Store::open(&home.join("data")).unwrap();
    let id = store.resolve("last").unwrap();
    let blocks = store.export(&id).unwrap().blocks;
    assert_eq!(blocks.len(), 4, "{blocks:?}");
    assert_eq!(blocks[2].decision, "skipped", "{blocks:?}");
    assert!(
        blocks[0]
            .tail
            .as_deref()
            .unwrap_or_default()
            .contains("apple"),
        "{blocks:?}"
    );
    id
}

fn replies() -> Vec<Reply> {
    vec![
        Reply::tool("python", "print(open('data.txt').read().strip())"),
        Reply::tool("shell", "echo fixed-line"),
        Reply::tool("shell", "rm -f data.txt"),
        Reply::tool("shell", "tr a-z A-Z < data.txt"),
        Reply::text("Read it."),
    ]
}

async fn replay(home: &Path, from: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = isolated_oi_tui(from);
    cmd.arg("replay")
        .args(args)
        .arg("--config")
        .arg(home.join("config.toml"))
        .arg("--data-dir")
        .arg(home.join("data"));
    output_within(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_reports_changed_output_block_by_block() {
    let server = ModelServer::start(replies()).await;
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let id = record(&server, home.path(), &work).await;
    // Run from elsewhere: the blocks run in the recorded directory.
    let elsewhere = home.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();

    // Unchanged: every block the same, status 0.
    let out = replay(home.path(), &elsewhere, &[&id, "-y"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("3 blocks replayed: 3 same, 0 differ, 0 not run"),
        "{stdout}"
    );
    // The denied block was not replayed (data.txt is still there).
    assert!(work.join("data.txt").exists());
    assert!(
        stdout.contains("block 3: left out (skipped"),
        "the skipped block is left out: {stdout}"
    );
    // The replay is a session of its own, titled after the recorded one.
    let store = Store::open(&home.path().join("data")).unwrap();
    let last = store.resolve("last").unwrap();
    assert_ne!(last, id);
    assert_eq!(
        store.session(&last).unwrap().title,
        "replay of read the data"
    );

    // The file changed: the two blocks that read it differ, with the diff lines.
    std::fs::write(work.join("data.txt"), "banana\n").unwrap();
    let out = replay(home.path(), &elsewhere, &[&id, "-y"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("block 1 · python"), "{stdout}");
    assert!(stdout.contains("    -apple\n"), "{stdout}");
    assert!(stdout.contains("    +banana\n"), "{stdout}");
    assert!(stdout.contains("    -APPLE\n"), "{stdout}");
    assert!(stdout.contains("    +BANANA\n"), "{stdout}");
    assert!(
        stdout.contains("block 2 · shell · echo fixed-line: same"),
        "{stdout}"
    );
    assert!(
        stdout.contains("3 blocks replayed: 1 same, 2 differ, 0 not run"),
        "{stdout}"
    );

    // JSON lines: one per block, then the summary.
    let out = replay(home.path(), &elsewhere, &[&id, "-y", "--json"]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert_eq!(lines[0]["block"], 1);
    assert_eq!(lines[0]["verdict"], "differs");
    assert_eq!(lines[0]["differences"][0]["kind"], "output");
    assert!(
        lines[0]["differences"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("+banana"),
        "{lines:?}"
    );
    assert_eq!(lines[1]["verdict"], "same");
    assert_eq!(lines[2]["block"], 4);
    assert_eq!(lines[3]["summary"]["differ"], 2);
    assert_eq!(lines[3]["summary"]["status"], 1);
    assert_eq!(lines[3]["summary"]["left_out"][0]["block"], 3);

    // Without -y and without a terminal: told to pass -y.
    let out = replay(home.path(), &elsewhere, &[&id]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("pass -y"), "{out:?}");

    // The recorded directory is gone: a clear error, and --cwd runs it elsewhere.
    let moved = home.path().join("moved");
    std::fs::rename(&work, &moved).unwrap();
    let out = replay(home.path(), &elsewhere, &[&id, "-y"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("which is gone") && stderr.contains("--cwd"),
        "{stderr}"
    );
    let mut cmd = isolated_oi_tui(&elsewhere);
    cmd.args(["replay", &id, "-y", "--cwd"])
        .arg(&moved)
        .arg("--config")
        .arg(home.path().join("config.toml"))
        .arg("--data-dir")
        .arg(home.path().join("data"));
    let out = output_within(cmd).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("+banana"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_in_the_workbench_proposes_each_block() {
    let server = ModelServer::start(replies()).await;
    let home = tempfile::tempdir().unwrap();
    let work = home.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let id = record(&server, home.path(), &work).await;
    std::fs::write(work.join("data.txt"), "banana\n").unwrap();
    // `\$?`: the shell tmux starts must leave `$?` to bash, which runs oi-tui.
    let command = format!(
        "cd '{home}' && env XDG_CONFIG_HOME='{home}/xdg' '{bin}' replay {id} --config '{home}/config.toml' --data-dir '{home}/data'; echo EXIT=\\$?; sleep 60",
        home = home.path().display(),
        bin = env!("CARGO_BIN_EXE_oi-tui"),
    );
    let tmux = Tmux::start(
        &format!(
            "bash --noprofile --norc -c \"{}\"",
            command.replace('"', "\\\"")
        ),
        120,
        40,
    );
    // The first block waits for a decision, its caller shown.
    let screen = tmux.wait_for("awaiting your decision").await;
    assert!(screen.contains("from replay"), "{screen}");
    assert!(screen.contains("open('data.txt')"), "{screen}");
    tmux.send(&["y"]);
    tmux.wait_for("echo fixed-line").await;
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("tr a-z A-Z").await;
    tmux.wait_for("awaiting your decision").await;
    // The person skips the last one: not run, said in the report.
    tmux.send(&["n"]);
    let screen = tmux.wait_for("blocks replayed").await;
    assert!(
        screen.contains("3 blocks replayed: 1 same, 1 differ, 1 not run"),
        "{screen}"
    );
    // Closing the workbench prints the report, and the status says something differs.
    tmux.send(&["C-q"]);
    let screen = tmux.wait_for("EXIT=").await;
    assert!(screen.contains("EXIT=1"), "{screen}");
    assert!(screen.contains("+banana"), "{screen}");
}
