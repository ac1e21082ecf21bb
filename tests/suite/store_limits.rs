//! A store that cannot be written in the middle of a session (here a file-size limit,
//! `ulimit -f`, reached while a block prints) costs the run nothing: the block's result
//! reaches the model, the run goes on and ends as it would, stderr says what could not be
//! saved and that it is tried again; the writes are tried again and succeed when they can,
//! and when they never can, `sessions list` and `sessions show` call the session incomplete.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use super::model_server::{ModelServer, Reply};

/// `oi-tui -y --task` against `server`, under a file-size limit of `bytes`.
async fn run_limited(dir: &Path, server: &ModelServer, bytes: u64) -> Output {
    let mut cmd = super::support::isolated_oi_tui(dir);
    cmd.args([
        "-y",
        "--task",
        "print for a while",
        "--model",
        "openai/scripted",
    ])
    .args(["--api-key", "k", "--api-base"])
    .arg(server.base("openai"))
    .arg("--data-dir")
    .arg(dir.join("data"));
    super::support::limit_file_size(&mut cmd, bytes);
    tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("oi-tui finished in time")
        .expect("oi-tui ran")
}

/// `oi-tui sessions <args>` on the run's data directory, with no limit.
fn sessions(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("sessions")
        .args(args)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .output()
        .expect("oi-tui runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The text of each request to the model after the first (the ones that carry results).
fn later_requests(server: &ModelServer) -> Vec<String> {
    server
        .chats()
        .iter()
        .skip(1)
        .map(|c| c.all_text())
        .collect()
}

/// The run was not ended by the store: the block's whole result reached the model and its
/// answer was shown; the failed write was said at once, with its cause (the file-size
/// limit), and that it is tried again.
fn assert_went_on_and_said(server: &ModelServer, out: &Output, stderr: &str) {
    assert_eq!(out.status.signal(), None, "{}", show(out));
    assert!(
        later_requests(server)
            .iter()
            .any(|r| r.contains("block-done-marker")),
        "the block's result reached the model: {}",
        show(out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("All finished, said the model."),
        "{}",
        show(out)
    );
    assert!(
        stderr.contains("cannot be saved") && stderr.contains("file-size limit"),
        "{}",
        show(out)
    );
    assert!(stderr.contains("tries again"), "{}", show(out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_size_limit_reached_during_a_block_keeps_the_result_and_writes_it_when_it_can() {
    // Output that comes slowly makes many small writes: the store's write-ahead log grows
    // past the limit long before the session itself is anywhere near it.
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "for i in $(seq 1 150); do echo line-$i-of-a-slow-block; sleep 0.02; done; echo block-done-marker",
        ),
        Reply::text("All finished, said the model."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = run_limited(dir.path(), &server, 300 * 1024).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();

    // The run went on and ended as it would have; the failed write was said, with its
    // cause, and that it is tried again...
    assert_went_on_and_said(&server, &out, &stderr);
    // ...and it was: everything is in the store, and the run ends as a success.
    assert!(stderr.contains("saved again"), "{}", show(&out));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let list = sessions(dir.path(), &["list"]);
    assert!(list.contains("ran 1 · skipped 0"), "{list}\n{}", show(&out));
    assert!(!list.contains("INCOMPLETE"), "{list}");
    let shown = sessions(dir.path(), &["show", "last"]);
    assert!(shown.contains("block-done-marker"), "{shown}");
    assert!(shown.contains("All finished, said the model."), "{shown}");
    assert!(!shown.contains("incomplete"), "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_that_can_never_be_written_is_said_lost_and_the_session_marked_incomplete() {
    // The block's result (kept whole: max_output is large) is bigger than the limit: no
    // retry can ever write it.
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "head -c 1500000 /dev/zero | tr '\\0' x | fold -w 100; echo block-done-marker",
        ),
        Reply::text("All finished, said the model."),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("config/oi-tui")).unwrap();
    std::fs::write(
        dir.path().join("config/oi-tui/config.toml"),
        "max_output = 3000000\n",
    )
    .unwrap();
    let out = run_limited(dir.path(), &server, 1024 * 1024).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();

    // The run went on, and the failure was said at once, with the promise to try again;
    // said at the end, with what was lost.
    assert_went_on_and_said(&server, &out, &stderr);
    assert!(
        stderr.contains("could not be saved") && stderr.contains("1 block result"),
        "what was lost is named: {}",
        show(&out)
    );
    assert!(
        stderr.contains("marks the session incomplete"),
        "{}",
        show(&out)
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "not saved whole: {}",
        show(&out)
    );

    let list = sessions(dir.path(), &["list"]);
    assert!(list.contains("INCOMPLETE"), "{list}");
    assert!(
        list.contains("incomplete: oi-tui stopped before it had written all of this session"),
        "{list}"
    );
    let shown = sessions(dir.path(), &["show", "last"]);
    assert!(shown.contains("**incomplete**: oi-tui stopped"), "{shown}");
    let json = sessions(dir.path(), &["list", "--json"]);
    assert!(json.contains("\"incomplete\": \"oi-tui stopped"), "{json}");
}
