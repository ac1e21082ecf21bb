//! The real binary: `oi-tui run` and `oi-tui languages`, their exit statuses and messages,
//! and that no kernel outlives the process however it ends.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oi_tui::exec::reaper;

fn oi_tui() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.stdin(Stdio::null());
    cmd
}

#[test]
fn run_reports_each_block_and_exits_with_the_last_status() {
    let out = oi_tui()
        .args(["run", "PY", "-c", "x = 6 * 7", "-c", "print(x)"])
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "42\r\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("── python · exit 0").count(), 2, "{err}");

    let out = oi_tui()
        .args(["run", "bash", "-c", "exit 3"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("state"));
}

#[test]
fn run_json_prints_one_result_per_block() {
    let out = oi_tui()
        .args(["run", "python", "--json", "-c", "print('hi')", "-c", "1/0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "success");
    assert_eq!(lines[0]["output"], "hi\n");
    assert_eq!(lines[1]["status"], "failed");
    assert!(
        lines[1]["output"]
            .as_str()
            .expect("str")
            .contains("ZeroDivisionError")
    );
}

#[test]
fn bad_usage_is_a_clear_error() {
    let out = oi_tui()
        .args(["run", "cobol", "-c", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown language `cobol`"), "{err}");
    assert!(err.contains("python, shell, javascript"), "{err}");

    let out = oi_tui().args(["run", "python"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to run"));

    let out = oi_tui()
        .args(["run", "python", "/no/such/file.py"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read /no/such/file.py"));
}

#[test]
fn a_missing_interpreter_exits_127_with_the_install_hint() {
    let empty = tempfile::tempdir().expect("dir");
    let out = oi_tui()
        .env("PATH", empty.path())
        .args(["run", "ruby", "-c", "puts 1"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(127));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`ruby` was not found on PATH"), "{err}");
    assert!(err.contains("apt install ruby"), "{err}");
}

#[test]
fn languages_lists_every_language() {
    let out = oi_tui().arg("languages").output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "python",
        "shell",
        "javascript",
        "r ",
        "ruby",
        "perl",
        "java",
        "powershell",
        "html",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
}

/// Starts a block that prints its kernel's pid and sleeps, with a background job too
/// (with no sandbox: its process namespace would give the kernel a pid of its own).
fn start_sleeper() -> (std::process::Child, i32) {
    let mut child = oi_tui()
        .args([
            "--sandbox",
            "off",
            "run",
            "shell",
            "-c",
            "sleep 1000 & echo \"PID=$$\"; sleep 1000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("read");
    let pid = line
        .trim()
        .strip_prefix("PID=")
        .and_then(|p| p.parse().ok())
        .expect("pid line");
    // The shell, and the two sleeps once they have started.
    let deadline = Instant::now() + Duration::from_secs(5);
    while reaper::session_processes(pid).len() < 3 {
        assert!(Instant::now() < deadline, "shell and two sleeps");
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, pid)
}

fn assert_gone(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !reaper::session_processes(pid).is_empty() {
        assert!(Instant::now() < deadline, "kernel session {pid} survives");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_and_sighup_leave_no_kernel_behind() {
    for (signal, status) in [(libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let (mut child, kernel) = start_sleeper();
        // SAFETY: signalling our own child process.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let exit = child.wait().expect("wait");
        assert_eq!(exit.code(), Some(status));
        assert_gone(kernel);
    }
}

#[test]
fn an_interrupt_from_the_terminal_stops_the_block_and_the_kernel_goes_at_exit() {
    let (mut child, kernel) = start_sleeper();
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let exit = child.wait().expect("wait");
    assert_eq!(exit.code(), Some(130));
    assert_gone(kernel);
}
