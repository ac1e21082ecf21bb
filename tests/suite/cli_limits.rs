//! Out-of-range numbers are usage errors that name the range (they used to panic while
//! becoming durations), a closed standard output (`| head -1`) ends oi-tui quietly with
//! status 141 instead of a panic, global options work after a subcommand, and an empty
//! reply is said.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use super::model_server::{ModelServer, Reply};

fn oi_tui(dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.stdin(Stdio::null())
        .current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("share"))
        .env_remove("OI_TUI_CONFIG");
    cmd
}

/// A task run against a server that is never reached, with `args` (and a config file
/// holding `config`, when given): its status and stderr.
fn bad_values(dir: &std::path::Path, args: &[&str], config: Option<&str>) -> (Option<i32>, String) {
    let mut cmd = oi_tui(dir);
    if let Some(text) = config {
        let path = dir.join("c.toml");
        std::fs::write(&path, text).expect("config");
        cmd.arg("--config").arg(path);
    }
    let out = cmd
        .args(args)
        .args(["--task", "x", "--model", "openai/x"])
        .args(["--api-base", "http://127.0.0.1:9/v1"])
        .output()
        .expect("ran");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn seconds_out_of_range_are_usage_errors_with_the_range() {
    let dir = tempfile::tempdir().expect("dir");
    for args in [
        ["--timeout", "1e308"],
        ["--idle-timeout", "1e30"],
        ["--connect-timeout", "-1"],
        ["--timeout", "NaN"],
    ] {
        let (code, err) = bad_values(dir.path(), &args, None);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("from 0.001 to 31536000 (a year)"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = oi_tui(dir.path())
        .args(["run", "python", "-c", "print(1)", "--timeout", "1e308"])
        .output()
        .expect("ran");
    assert_eq!(out.status.code(), Some(2));

    let (code, err) = bad_values(
        dir.path(),
        &[],
        Some("timeout = 1e308\nidle_timeout = 1e30\n"),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("timeout = 1e308: give a number of seconds"),
        "{err}"
    );
}

/// The reply's limits and the model's settings: out of range is a usage error naming the
/// range, on the command line (status 2) and in the config file, and a huge number is not
/// echoed digit by digit. The largest reply allowed is one the store can keep; a context
/// window too small for the system prompt is refused, not taken and every message refused.
#[test]
fn reply_limits_out_of_range_are_usage_errors_with_the_range() {
    let dir = tempfile::tempdir().expect("dir");
    for (args, range) in [
        (["--reply-timeout", "1e308"], "from 1 to 604800 (a week"),
        (["--reply-timeout", "-5"], "from 1 to 604800 (a week"),
        (["--max-reply-bytes", "0"], "from 1024 to 16777216 (16 MB"),
        (
            ["--max-reply-bytes", "104857600"],
            "from 1024 to 16777216 (16 MB",
        ),
        (["--max-turns", "0"], "at least 1"),
        (["--max-tokens", "0"], "at least 1"),
        (["--temperature", "5"], "from 0 to 2"),
        (["--temperature", "-1"], "from 0 to 2"),
        (["--context-window", "0"], "at least 1024 tokens"),
    ] {
        let (code, err) = bad_values(dir.path(), &args, None);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(range), "{args:?}: {err}");
    }
    for (config, said) in [
        (
            "context_window = 10\n",
            "context_window = 10: give at least 1024",
        ),
        ("max_tokens = 0\n", "max_tokens = 0: give at least 1"),
    ] {
        let (code, err) = bad_values(dir.path(), &[], Some(config));
        assert_eq!(code, Some(1), "{err}");
        assert!(err.contains(said), "{err}");
    }
    let (_, err) = bad_values(dir.path(), &[], Some("reply_timeout = 1e308\n"));
    assert!(
        err.contains("reply_timeout = 1e308: give a number"),
        "{err}"
    );
    assert!(!err.contains("0000000000"), "{err}");
}

/// Runs the command with its standard output closed after the first line is read.
fn first_line_then_close(mut cmd: Command) -> (String, std::process::ExitStatus, String) {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = Vec::new();
    let mut byte = [0u8; 1];
    while stdout.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        first.push(byte[0]);
    }
    drop(stdout);
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr read");
    let status = child.wait().expect("wait");
    (String::from_utf8_lossy(&first).into_owned(), status, err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_ends_json_and_sessions_output_quietly() {
    let dir = tempfile::tempdir().expect("dir");
    let many: String = (0..2000).map(|i| format!("print('line {i}')\n")).collect();
    let server = ModelServer::start(vec![
        Reply::tool("python", &many),
        Reply::text("Done, and here is a long answer."),
    ])
    .await;
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).expect("tmp");
    let mut cmd = oi_tui(dir.path());
    cmd.args(["-y", "--json", "--task", "go", "--model", "openai/scripted"])
        .args(["--api-base", &server.base("openai"), "--api-key", "k"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("TMPDIR", &tmp);
    let (first, status, err) = tokio::task::spawn_blocking(move || first_line_then_close(cmd))
        .await
        .expect("joined");
    assert!(first.starts_with('{'), "{first}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        status.code() == Some(141) || status.code() == Some(0) || status.signal() == Some(13),
        "{status:?}: {err}"
    );
    // Nothing is left behind: no kernel directory, even one started as it left.
    let left: Vec<_> = std::fs::read_dir(&tmp).expect("tmp").collect();
    assert!(left.is_empty(), "{left:?}");

    // The session it left has many lines: show it into a closed pipe.
    let list = oi_tui(dir.path())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["sessions", "list", "--json"])
        .output()
        .expect("list");
    let rows: serde_json::Value = serde_json::from_slice(&list.stdout).expect("json");
    let id = rows[0]["id"].as_str().expect("a session").to_string();
    let mut cmd = oi_tui(dir.path());
    cmd.arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["sessions", "show", &id]);
    let (_, status, err) = first_line_then_close(cmd);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        status.code() == Some(141) || status.code() == Some(0),
        "{status:?}: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_options_after_the_subcommand_and_an_empty_reply_said() {
    let dir = tempfile::tempdir().expect("dir");
    let server = ModelServer::start(vec![Reply::text("")]).await;
    let mut cmd = oi_tui(dir.path());
    cmd.args(["--task", "go", "--model", "openai/scripted"])
        .args(["--api-base", &server.base("openai"), "--api-key", "k"])
        .arg("--data-dir")
        .arg(dir.path().join("data"));
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("ran"))
        .await
        .expect("joined");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The model's reply was empty"), "{err}");
    let out = oi_tui(dir.path())
        .args(["sessions", "list", "--json", "--data-dir"])
        .arg(dir.path().join("data"))
        .output()
        .expect("list");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
}

/// Standard output that cannot be written (a full disk under a log file) is said, and ends
/// the run with status 1 before anything more runs unseen; the same for `sessions`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_standard_output_is_said_and_fails() {
    let dir = tempfile::tempdir().expect("dir");
    let server = ModelServer::start(vec![
        Reply::text("First words.").and_tool("shell", "touch ran-unseen"),
        Reply::text("Done."),
    ])
    .await;
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("/dev/full")
    };
    for json in [false, true] {
        let out = oi_tui(dir.path())
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .args(["--api-base", &server.base("openai"), "--api-key", "k"])
            .args(json.then_some("--json"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .stdout(full())
            .output()
            .expect("ran");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("cannot write to standard output: No space left on device"),
            "{err}"
        );
        assert!(
            !dir.path().join("ran-unseen").exists(),
            "a block ran unseen"
        );
    }
    let out = oi_tui(dir.path())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["sessions", "list"])
        .stdout(full())
        .output()
        .expect("ran");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to standard output"));
    // Standard error that cannot be written: no panic (status 101), and nothing runs.
    let out = oi_tui(dir.path())
        .args(["-y", "--task", "go", "--model", "openai/scripted"])
        .args(["--api-base", &server.base("openai"), "--api-key", "k"])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stderr(full())
        .output()
        .expect("ran");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("cannot write to standard error"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !dir.path().join("ran-unseen").exists(),
        "a block ran unseen"
    );
}

/// Reading sessions creates nothing: a mistyped `--data-dir` is said, not answered with a
/// new, empty store.
#[test]
fn reading_sessions_from_a_directory_without_a_store_creates_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let nosuch = dir.path().join("nosuch");
    let run = |args: &[&str]| {
        oi_tui(dir.path())
            .arg("--data-dir")
            .arg(&nosuch)
            .arg("sessions")
            .args(args)
            .output()
            .expect("ran")
    };
    let out = run(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("No sessions yet"));
    let out = run(&["list", "--json"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    for args in [
        &["show", "last"][..],
        &["search", "x"],
        &["export", "last"],
        &["delete", "abc"],
        &["rename", "abc", "x"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("check --data-dir"),
            "{args:?}"
        );
    }
    assert!(!nosuch.exists(), "nothing was created");
}
