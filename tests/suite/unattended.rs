//! The real binary left alone (`-y --task`, standard input not a terminal) against the
//! scripted model server, fed the blocks that used to hang it or break it: programs that
//! wait for keyboard input (a REPL, a pager, `exec bash`, `bash -i`), blocks that close
//! their standard output, a file-size limit, a kernel killed while detached children run,
//! and SIGTERM or SIGHUP while a block runs (nothing left in the temp dir). Every run is
//! bounded, so that a regression fails instead of hanging.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use oi_tui::exec::{Block, Language, RunStatus};

use super::model_server::{ModelServer, Reply};
use super::support::{kernels_with, run_block};

/// The most any run here may take.
const LIMIT: Duration = Duration::from_secs(90);

/// A private home and temp dir for one run.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("tmp")).expect("tmp");
        Home { dir }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// `oi-tui -y --task go` against the server, with `extra` flags, stdin null.
    fn command(&self, server: &ModelServer, extra: &[&str]) -> tokio::process::Command {
        let mut cmd = super::support::isolated_oi_tui(self.dir.path());
        cmd.args(extra)
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .arg("--api-base")
            .arg(server.base("openai"))
            .args(["--api-key", "k", "--data-dir"])
            .arg(self.path("data"))
            .env("TMPDIR", self.path("tmp"));
        cmd
    }

    async fn task(&self, server: &ModelServer, extra: &[&str]) -> Output {
        let cmd = self.command(server, extra);
        finish(cmd).await
    }
}

async fn finish(mut cmd: tokio::process::Command) -> Output {
    tokio::time::timeout(LIMIT, cmd.output())
        .await
        .expect("oi-tui finished in time (a block hung)")
        .expect("oi-tui ran")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// What the model was told about each block, in order.
fn tool_results(server: &ModelServer) -> Vec<String> {
    server
        .chats()
        .iter()
        .skip(1)
        .map(|chat| {
            let messages = chat.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            messages
                .iter()
                .rev()
                .find(|m| m["role"] == "tool")
                .and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_that_wait_for_the_keyboard_end_and_the_next_block_runs() {
    let home = Home::new();
    std::fs::write(home.path("notes.txt"), "line one\nline two\n").expect("file");
    let server = ModelServer::start(vec![
        Reply::tool("shell", "python3"),
        Reply::tool("shell", "less notes.txt"),
        Reply::tool("shell", "exec bash"),
        Reply::tool("shell", "bash -i"),
        Reply::tool("shell", "echo next-$((6 * 7))"),
        Reply::tool(
            "python",
            "import code\ncode.interact()\nprint('py-' + str(6 * 7))",
        ),
        Reply::text("All done."),
    ])
    .await;
    let out = home.task(&server, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("next-42"), "{}", show(&out));
    assert!(stdout.contains("py-42"), "{}", show(&out));
    assert!(stdout.contains("All done."), "{}", show(&out));
    let results = tool_results(&server);
    assert_eq!(results.len(), 6, "{results:#?}");
    // Each waiting block is told why it ended.
    for (i, result) in results.iter().take(4).enumerate() {
        assert!(
            result.contains("waited for keyboard input that cannot come"),
            "block {}: {result}",
            i + 1
        );
    }
    // `exec bash` replaced the kernel: it says so, and the next block says it is fresh.
    assert!(
        results[2].contains("kernel itself exited"),
        "{}",
        results[2]
    );
    assert!(
        results[3].contains("fresh one"),
        "after exec bash: {}",
        results[3]
    );
    assert!(results[4].contains("next-42"), "{}", results[4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_that_close_their_output_leave_working_kernels() {
    let mut script = vec![
        Reply::tool("shell", "exec 1>&-"),
        Reply::tool("shell", "echo sh-$((40 + 2))"),
        Reply::tool("shell", "exec >&- 2>&- <&-"),
        Reply::tool("shell", "echo sh2-$((40 + 2)); ls /no/such/dir"),
        Reply::tool("python", "import os\nos.close(1)\nos.close(2)"),
        Reply::tool("python", "print('py', 40 + 2)\nos.system('echo child-42')"),
        Reply::tool("python", "import sys\nsys.stdout.close()"),
        Reply::tool("python", "print('py2', 40 + 2)"),
        // Sent elsewhere for good: the next block prints on the terminal again.
        Reply::tool("shell", "exec >/dev/null 2>&1"),
        Reply::tool("shell", "echo sh3-$((40 + 2))"),
        Reply::tool(
            "python",
            "import os, sys\nsys.stdout = open(os.devnull, 'w')\nfd = os.open(os.devnull, os.O_WRONLY)\nos.dup2(fd, 2)",
        ),
        Reply::tool(
            "python",
            "import sys\nprint('py3', 40 + 2)\nprint('err3', file=sys.stderr)",
        ),
    ];
    // The other interpreters, where this machine has them.
    let others = [
        (
            Language::JavaScript,
            "require('fs').closeSync(1); require('fs').closeSync(2)",
            "console.log('js', 40 + 2)",
        ),
        (
            Language::Ruby,
            "$stdout.close; $stderr.close",
            "puts \"rb #{40 + 2}\"",
        ),
        (
            Language::Perl,
            "close(STDOUT); close(STDERR);",
            "print 'pl ', 40 + 2, \"\\n\";",
        ),
    ];
    let mut expected = vec![
        "sh-42", "sh2-42", "py 42", "child-42", "py2 42", "sh3-42", "py3 42", "err3",
    ];
    for (language, close, print) in others {
        if language.locate().is_some() {
            script.push(Reply::tool(language.name(), close));
            script.push(Reply::tool(language.name(), print));
            expected.push(match language {
                Language::JavaScript => "js 42",
                Language::Ruby => "rb 42",
                _ => "pl 42",
            });
        }
    }
    let blocks = script.len();
    script.push(Reply::text("All done."));
    let server = ModelServer::start(script).await;
    let home = Home::new();
    let out = home.task(&server, &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = text(&out.stdout);
    for needle in &expected {
        assert!(
            stdout.contains(needle),
            "{needle:?} missing: {}",
            show(&out)
        );
    }
    let results = tool_results(&server);
    assert_eq!(results.len(), blocks, "{results:#?}");
    // The statuses are the real ones: no false "exit 130" after Python lost fds 1 and 2.
    assert!(!stdout.contains("exit 130"), "{}", show(&out));
    assert!(results[3].contains("exit 2"), "ls failed: {}", results[3]);
    assert!(results[5].contains("py 42"), "{}", results[5]);
}

/// `oi-tui -y --task go` under a file-size limit of `bytes`.
async fn under_file_size_limit(home: &Home, server: &ModelServer, bytes: u64) -> Output {
    let mut cmd = home.command(server, &[]);
    super::support::limit_file_size(&mut cmd, bytes);
    finish(cmd).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_size_limit_is_reported_not_fatal_and_kernels_still_get_the_signal() {
    use std::os::unix::process::ExitStatusExt;
    // Too small for the session store: before, SIGXFSZ killed oi-tui (status 153 through a
    // shell) without a word; now the failed write is said and the exit status is 1.
    let server = ModelServer::start(vec![Reply::text("unused")]).await;
    let home = Home::new();
    let out = under_file_size_limit(&home, &server, 16 * 1024).await;
    assert_eq!(out.status.signal(), None, "{}", show(&out));
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stderr).contains("sessions.db cannot be written"),
        "{}",
        show(&out)
    );

    // Room for the store: a block's child that writes past the limit still dies of
    // SIGXFSZ (128 + 25), as it would outside oi-tui, and the run goes on.
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "head -c 20000000 /dev/zero > big.bin; echo head-status-$?",
        ),
        Reply::text("Finished anyway."),
    ])
    .await;
    let home = Home::new();
    let out = under_file_size_limit(&home, &server, 8 * 1024 * 1024).await;
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("head-status-153"), "{}", show(&out));
    assert!(stdout.contains("Finished anyway."), "{}", show(&out));
}

/// Runs a shell block that detaches processes and then outlives its 1 s time limit. No
/// sandbox: under bubblewrap the kernel's process namespace ends with it, and takes detached
/// processes along; only without one can any survive.
async fn detach_then_time_out(code: &str) -> Output {
    let server =
        ModelServer::start(vec![Reply::tool("shell", code), Reply::text("Stopped.")]).await;
    Home::new()
        .task(&server, &["--timeout", "1", "--sandbox", "off"])
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kill_note_names_the_processes_that_detached_and_survived() {
    let out = detach_then_time_out(
        "trap '' INT\nsetsid sleep 117 &\nnohup sleep 118 >/dev/null 2>&1 &\nsleep 60",
    )
    .await;
    let stdout = text(&out.stdout);
    // Whatever the outcome, leave nothing running.
    let pids: Vec<i32> = stdout
        .split("pid ")
        .skip(1)
        .filter_map(|s| s.split(' ').next()?.parse().ok())
        .collect();
    kill_leftovers(&pids);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        !stdout.contains("everything it started were killed"),
        "{}",
        show(&out)
    );
    assert!(
        stdout.contains("had detached (setsid or nohup) and still run"),
        "{}",
        show(&out)
    );
    assert_eq!(pids.len(), 2, "{}", show(&out));
    assert!(stdout.contains("(sleep)"), "{}", show(&out));
}

/// A block stopped by its time limit while what it detached keeps running (the kernel
/// survives the interrupt): when oi-tui leaves, it names what it leaves running, and how to
/// stop it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaving_names_what_blocks_detached_and_left_running() {
    // Two that stay in the kernel's process tree, and two that leave it (a double fork).
    let out = detach_then_time_out(
        "setsid sleep 121 &\nnohup sleep 122 >/dev/null 2>&1 &\nsetsid -f sleep 123\n(setsid sleep 124 &)\nsleep 60",
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let pids: Vec<i32> = stderr
        .split("kill ")
        .nth(1)
        .map(|l| {
            l.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    kill_leftovers(&pids);
    assert!(
        stderr.contains("left running what blocks detached (setsid or nohup)"),
        "{}",
        show(&out)
    );
    assert_eq!(pids.len(), 4, "{}", show(&out));
    assert!(stderr.contains("(sleep)"), "{}", show(&out));
}

/// Kills what a test's oi-tui named as left running.
fn kill_leftovers(pids: &[i32]) {
    for &pid in pids {
        // SAFETY: kill(2) on the test's own leftovers, named by oi-tui.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// The kernel directories in `tmp` (those of this test's own oi-tui).
/// The user's oi-tui directory in `tmp` (`oi-tui-UID`).
fn user_dir(tmp: &Path) -> PathBuf {
    // SAFETY: geteuid(2) cannot fail.
    tmp.join(format!("oi-tui-{}", unsafe { libc::geteuid() }))
}

/// The shell kernels' directories: inside oi-tui's kernels directory, in the user's oi-tui
/// directory in `tmp`.
fn kernel_dirs(tmp: &Path) -> Vec<PathBuf> {
    owned_by(&user_dir(tmp), None)
        .into_iter()
        .filter(|p| name_of(p).starts_with("oi-tui-kernels-"))
        .flat_map(|k| std::fs::read_dir(k).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| name_of(p).starts_with("oi-tui-shell-"))
        .collect()
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// oi-tui's directories in `tmp` (of process `pid`, when given).
fn owned_by(tmp: &Path, pid: Option<i32>) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let name = name_of(p);
                    name.starts_with("oi-tui-")
                        && pid.is_none_or(|pid| name.contains(&format!("-{pid}-")))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_leaves_no_kernel_directory_and_stale_ones_are_swept() {
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let home = Home::new();
        let tmp = home.path("tmp");
        // Left by a run that was killed: its owner (a reaped child) is gone.
        let mut gone = std::process::Command::new("true").spawn().expect("true");
        let gone_pid = gone.id();
        gone.wait().expect("wait");
        let stale = tmp.join(format!("oi-tui-python-{gone_pid}-AbCdEf"));
        std::fs::create_dir(&stale).expect("stale");
        std::fs::write(stale.join("block-1.py"), "print('secret')").expect("stale file");
        // Another oi-tui that is still running (here: this test process) keeps its own.
        let live = tmp.join(format!("oi-tui-python-{}-GhIjKl", std::process::id()));
        std::fs::create_dir(&live).expect("live");

        let server = ModelServer::start(vec![
            Reply::tool("shell", "echo started; sleep 60"),
            Reply::text("never"),
        ])
        .await;
        let mut child = home.command(&server, &[]).spawn().expect("spawn");
        let pid = child.id().expect("pid") as i32;
        // Wait until the block runs: its file is in the kernel's directory.
        let deadline = tokio::time::Instant::now() + LIMIT;
        let dir = loop {
            let found = kernel_dirs(&tmp).into_iter().find(|d| {
                std::fs::read_dir(d)
                    .map(|mut e| {
                        e.any(|f| {
                            f.is_ok_and(|f| f.file_name().to_string_lossy().starts_with("block-"))
                        })
                    })
                    .unwrap_or(false)
            });
            if let Some(dir) = found {
                break dir;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no kernel directory appeared"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // Private: the directory 0700, the files in it 0600, the directory in it where
        // figures are saved 0700.
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
        for entry in std::fs::read_dir(&dir).expect("dir").flatten() {
            let private = if entry.path().is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode(&entry.path()), private, "{}", entry.path().display());
        }
        assert!(!stale.exists(), "the stale directory was swept");
        assert!(live.exists(), "a live owner's directory is kept");

        // SAFETY: kill(2) on the child this test started.
        unsafe {
            libc::kill(pid, signal);
        }
        let status = tokio::time::timeout(LIMIT, child.wait())
            .await
            .expect("oi-tui ended after the signal")
            .expect("wait");
        assert_eq!(status.code(), Some(128 + signal), "signal {signal}");
        let left: Vec<PathBuf> = owned_by(&tmp, Some(pid))
            .into_iter()
            .chain(owned_by(&user_dir(&tmp), Some(pid)))
            .collect();
        assert!(left.is_empty(), "signal {signal}: left {left:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_timeout_says_it_is_one_and_how_to_change_it() {
    let (kernels, _dir) = kernels_with(|c| c.default_timeout = Some(Duration::from_secs(1)));
    let (result, _) = tokio::time::timeout(
        LIMIT,
        run_block(
            &kernels,
            Block::new(Language::Shell, "sleep 30").stdin_eof(),
        ),
    )
    .await
    .expect("the block ended");
    assert_eq!(result.status, RunStatus::TimedOut, "{result:#?}");
    let notes = result.notes.join("\n");
    assert!(notes.contains("default"), "{notes}");
    assert!(notes.contains("--timeout"), "{notes}");
    // A block with its own limit is not told about the default.
    let (own, _) = run_block(
        &kernels,
        Block::new(Language::Shell, "sleep 30").timeout(Duration::from_millis(500)),
    )
    .await;
    assert_eq!(own.status, RunStatus::TimedOut);
    assert!(
        !own.notes.join("\n").contains("--timeout"),
        "{:?}",
        own.notes
    );
}
