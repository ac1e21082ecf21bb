//! SIGTERM while a block runs: oi-tui leaves at once, no further request reaches the model
//! (it used to send one in 3 of 5 runs: the killed block's end started the next round), and
//! the store holds what was on screen, written last.

use std::time::Duration;

use super::model_server::{ModelServer, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sigterm_no_new_request_goes_out() {
    for _ in 0..3 {
        let server = ModelServer::start(vec![
            // Its output, `running`, is not in its code: the test waits for the output.
            Reply::tool("shell", "echo \"run\"ning; sleep 30"),
            Reply::text("This must never be asked for."),
        ])
        .await;
        let dir = tempfile::tempdir().expect("dir");
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
            .current_dir(dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env_remove("OI_TUI_CONFIG")
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .args(["--api-base", &server.base("openai"), "--api-key", "k"])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut stdout = child.stdout.take().expect("stdout");
        super::support::read_until(&mut stdout, "running").await;
        let pid = child.id().expect("pid") as i32;
        // SAFETY: signalling the process this test started.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
            .await
            .expect("it ended")
            .expect("status");
        assert_eq!(status.code(), Some(143), "{status:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(server.chats().len(), 1, "a request went out after SIGTERM");
        // What was on screen when the signal came is in the store, written last.
        let shown = std::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["sessions", "show", "last"])
            .output()
            .expect("show");
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.contains("\nrunning"), "{shown}");
        // Said as what happened: oi-tui stopped it; no fresh kernel is coming.
        assert!(shown.contains("oi-tui was stopped"), "{shown}");
        assert!(!shown.contains("next shell block starts"), "{shown}");
        assert!(!shown.contains("kernel restarted"), "{shown}");
    }
}
