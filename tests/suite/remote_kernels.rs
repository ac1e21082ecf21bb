//! Kernels on another host over SSH, at the `Kernels` level, against the OpenSSH fixture
//! (`ssh_server.rs`; the "remote" host is this machine): they keep their state, stream their
//! output, take interrupts, time limits, input and resizes as local kernels do; and nothing
//! a session started there outlives it. (Connections that drop or stall: `remote_drops.rs`;
//! hosts that refuse, missing interpreters: `remote_faults.rs`.)

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oi_tui::exec::remote::SshTarget;
use oi_tui::exec::{Block, Executor, KernelConfig, Kernels, Language, RunResult, RunStatus};

use super::ssh_server::{ALIAS, SshServer, processes_with_env};
use super::support::{run, run_block, spawn_block, wait_for_output};

/// A set of remote kernels of its own session, working in a directory of its own.
pub(super) struct Remote {
    pub(super) kernels: Arc<Kernels>,
    pub(super) session: String,
    pub(super) work: tempfile::TempDir,
    pub(super) images: tempfile::TempDir,
}

impl Remote {
    /// The environment entry every process of this session carries there.
    pub(super) fn tag(&self) -> String {
        format!("OI_TUI_SESSION={}", self.session)
    }
}

pub(super) fn target(config: &Path, workdir: Option<&Path>) -> SshTarget {
    let mut t = SshTarget::from_host(ALIAS).expect("target");
    t.ssh_options = vec!["-F".into(), config.display().to_string()];
    t.workdir = workdir.map(|d| d.display().to_string());
    t.connect_timeout = Duration::from_secs(5);
    t
}

pub(super) fn remote(server: &SshServer) -> Remote {
    remote_with(server, |_, _| {})
}

pub(super) fn remote_with(
    server: &SshServer,
    adjust: impl FnOnce(&mut KernelConfig, &mut SshTarget),
) -> Remote {
    let work = tempfile::tempdir().expect("work dir");
    let images = tempfile::tempdir().expect("image dir");
    let session = format!("rk-{}", uuid::Uuid::new_v4().simple());
    let mut t = target(&server.config_path(), Some(work.path()));
    let mut config = KernelConfig {
        cwd: work.path().to_path_buf(),
        html_dir: work.path().join("html"),
        image_dir: Some(images.path().to_path_buf()),
        session_id: Some(session.clone()),
        grace: Duration::from_millis(700),
        ..KernelConfig::default()
    };
    adjust(&mut config, &mut t);
    config.executor = Executor::Ssh(t);
    Remote {
        kernels: Arc::new(Kernels::new(config)),
        session,
        work,
        images,
    }
}

/// Waits (at most `limit`) until no process carries `needle`; returns what still does.
pub(super) async fn settled(needle: &str, limit: Duration) -> Vec<(i32, String)> {
    let deadline = Instant::now() + limit;
    loop {
        let left = processes_with_env(needle);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Local `ssh` processes whose command line mentions `needle` (a config file's path).
pub(super) fn local_ssh(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for (pid, dir) in super::ssh_server::proc_entries() {
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let state = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = state
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z'));
        if comm.trim() == "ssh" && !zombie && String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

pub(super) fn ok(r: &RunResult, what: &str) {
    assert_eq!(r.status, RunStatus::Success, "{what}: {r:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_persists_and_output_streams() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    let (r, _) = run(k, Language::Python, "x = 41").await;
    ok(&r, "set");
    let (r, raw) = run(k, Language::Python, "print(x + 1)").await;
    ok(&r, "read");
    assert_eq!(r.output.trim(), "42");
    assert!(String::from_utf8_lossy(&raw).contains("42"));
    assert!(!r.state_lost);

    let sub = rk.work.path().join("sub dir");
    std::fs::create_dir(&sub).expect("sub dir");
    let (r, _) = run(k, Language::Shell, "cd 'sub dir' && Y=7").await;
    ok(&r, "cd");
    let (r, _) = run(
        k,
        Language::Shell,
        "pwd; echo \"y=$Y\"; echo \"$OI_TUI_SESSION\"; echo \"$OI_TUI_KERNEL\"",
    )
    .await;
    ok(&r, "pwd");
    let lines: Vec<&str> = r.output.lines().map(str::trim).collect();
    assert_eq!(lines[0], sub.display().to_string(), "{lines:?}");
    assert_eq!(lines[1], "y=7");
    assert_eq!(lines[2], rk.session);
    // TOKEN/NAME, the names of one width: the helper finds a kernel's processes by this
    // entry as a substring of their environment, which `…/k1` would be of `…/k12`'s.
    let (_, name) = lines[3].rsplit_once('/').expect("TOKEN/NAME");
    assert!(
        name.len() == 9 && name.starts_with('k') && name[1..].bytes().all(|b| b.is_ascii_digit()),
        "{lines:?}"
    );

    // The first part reaches the sink before the block ends.
    let (handle, seen) = spawn_block(
        k.clone(),
        Block::new(
            Language::Python,
            "import time\nprint('first part', flush=True)\ntime.sleep(1)\nprint('second part')",
        ),
    );
    wait_for_output(&seen, "first part", Duration::from_secs(10)).await;
    assert!(!handle.is_finished(), "output arrives live");
    let r = handle.await.expect("join");
    ok(&r, "stream");
    assert!(r.output.contains("second part"), "{:?}", r.output);
    k.shutdown().await;
}

async fn interrupt_after(
    rk: &Remote,
    language: Language,
    code: &str,
    ready: &str,
) -> (RunResult, Duration) {
    let (handle, seen) = spawn_block(rk.kernels.clone(), Block::new(language, code));
    wait_for_output(&seen, ready, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked = Instant::now();
    assert!(rk.kernels.interrupt());
    let r = handle.await.expect("join");
    (r, asked.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_keeps_the_remote_kernels_and_their_state() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    ok(
        &run(k, Language::Python, "kept = 'py-state'").await.0,
        "set",
    );
    let (r, took) = interrupt_after(
        &rk,
        Language::Python,
        "import time\nprint('sleeping', flush=True)\ntime.sleep(30)",
        "sleeping",
    )
    .await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(!r.state_lost, "{r:#?}");
    assert!(r.output.contains("KeyboardInterrupt"), "{:?}", r.output);
    let (r, _) = run(k, Language::Python, "print(kept)").await;
    assert_eq!(r.output.trim(), "py-state", "{r:#?}");

    ok(&run(k, Language::Shell, "KEPT=sh-state").await.0, "set");
    let (r, took) =
        interrupt_after(&rk, Language::Shell, "echo sleeping; sleep 30", "sleeping").await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(!r.state_lost, "{r:#?}");
    let (r, _) = run(k, Language::Shell, "echo $KEPT").await;
    assert_eq!(r.output.trim(), "sh-state", "{r:#?}");

    // An interrupt that comes while the kernel still starts is acted on once it has.
    let (handle, _) = spawn_block(
        k.clone(),
        Block::new(Language::Perl, "our $kept = 1; sleep 30;"),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    let asked = Instant::now();
    assert!(k.interrupt());
    let r = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("an early interrupt ends the block")
        .expect("join");
    assert!(
        asked.elapsed() < Duration::from_secs(8),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_block_that_ignores_sigint_is_killed_with_all_it_started() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    ok(&run(k, Language::Python, "before = 1").await.0, "set");
    let code = "import signal, subprocess, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nchild = subprocess.Popen(['sleep', '60'], start_new_session=True)\nprint('stubborn', flush=True)\ntime.sleep(30)";
    let (r, took) = interrupt_after(&rk, Language::Python, code, "stubborn").await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(r.state_lost, "{r:#?}");
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(
        r.notes.iter().any(|n| n.contains("did not stop within")),
        "{:?}",
        r.notes
    );
    let left = settled(&rk.tag(), Duration::from_secs(3)).await;
    assert!(left.is_empty(), "left running there: {left:?}");
    let (r, _) = run(k, Language::Python, "print('fresh', 'before' in globals())").await;
    ok(&r, "next");
    assert_eq!(r.output.trim(), "fresh False");
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_limit_stops_a_remote_block() {
    let server = SshServer::start();
    let rk = remote(&server);
    let started = Instant::now();
    let block = Block::new(Language::Shell, "echo going; sleep 30").timeout(Duration::from_secs(1));
    let (r, _) = run_block(&rk.kernels, block).await;
    assert_eq!(r.status, RunStatus::TimedOut, "{r:#?}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert!(
        r.notes.iter().any(|n| n.contains("time limit")),
        "{:?}",
        r.notes
    );
    assert!(!r.state_lost, "{r:#?}");
    ok(
        &run(&rk.kernels, Language::Shell, "echo after").await.0,
        "after",
    );
    rk.kernels.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_reaches_a_remote_block_and_waiting_is_seen() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    for (language, code, prompt) in [
        (
            Language::Python,
            "name = input('name? ')\nprint('got', name)",
            "name? ",
        ),
        (
            Language::Shell,
            "printf 'name? '; read -r name; echo \"got $name\"",
            "name? ",
        ),
    ] {
        let mut waiting = k.awaiting_input();
        let (handle, seen) = spawn_block(k.clone(), Block::new(language, code));
        wait_for_output(&seen, prompt, Duration::from_secs(10)).await;
        // (The guard `wait_for` gives must not be held: the kernel writes the flag.)
        let became = tokio::time::timeout(Duration::from_secs(5), waiting.wait_for(|w| *w))
            .await
            .is_ok_and(|r| r.is_ok());
        assert!(became, "{language}: awaiting_input never became true");
        k.write_input(b"hello\r").expect("write");
        let r = handle.await.expect("join");
        ok(&r, "input");
        assert!(r.output.contains("got hello"), "{language}: {:?}", r.output);
        assert!(!*k.awaiting_input().borrow());
    }
    // Nobody to answer: the read ends.
    let started = Instant::now();
    let (r, _) = run_block(
        k,
        Block::new(Language::Python, "input('password: ')").stdin_eof(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.status, RunStatus::Failed, "{r:#?}");
    assert!(r.output.contains("EOFError"), "{:?}", r.output);
    let (r, _) = run_block(
        k,
        Block::new(Language::Shell, "read -r line; echo \"status=$?\"").stdin_eof(),
    )
    .await;
    assert_eq!(r.output.trim(), "status=1", "{r:#?}");
    // A reader that shrugs end-of-file off is ended.
    let started = Instant::now();
    let code = "python3 -c \"import sys\nwhile True:\n    sys.stdin.readline()\"; echo ended";
    let (r, _) = tokio::time::timeout(
        Duration::from_secs(15),
        run_block(k, Block::new(Language::Shell, code).stdin_eof()),
    )
    .await
    .expect("a reader that shrugs end-of-file off is ended");
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("reading the terminal were ended")),
        "{r:#?}"
    );
    assert!(r.output.contains("ended"), "{r:#?}");
    // The kernel survived its reader's end.
    assert!(!r.state_lost, "{r:#?}");
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resize_reaches_the_remote_program() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    k.resize(30, 100);
    let (r, _) = run(k, Language::Shell, "stty size").await;
    assert_eq!(r.output.trim(), "30 100", "{r:#?}");
    let (handle, seen) = spawn_block(
        k.clone(),
        Block::new(
            Language::Python,
            "import shutil, time\nprint('ready', flush=True)\ntime.sleep(1.5)\nprint(shutil.get_terminal_size())",
        ),
    );
    wait_for_output(&seen, "ready", Duration::from_secs(10)).await;
    k.resize(40, 123);
    let r = handle.await.expect("join");
    assert!(r.output.contains("columns=123, lines=40"), "{:?}", r.output);
    let (r, _) = run(k, Language::Shell, "stty size").await;
    assert_eq!(r.output.trim(), "40 123", "{r:#?}");
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_of_a_session_survives_its_end_there() {
    let server = SshServer::start();
    // Shut down.
    let rk = remote(&server);
    let (r, _) = run(
        &rk.kernels,
        Language::Shell,
        "(sleep 60 &) ; setsid sleep 61 & echo started",
    )
    .await;
    ok(&r, "start");
    ok(&run(&rk.kernels, Language::Python, "x = 1").await.0, "py");
    let dir = rk.kernels.link().await.expect("link").info.dir.clone();
    assert!(Path::new(&dir).is_dir(), "{dir}");
    assert!(!processes_with_env(&rk.tag()).is_empty());
    rk.kernels.shutdown().await;
    let left = settled(&rk.tag(), Duration::from_secs(3)).await;
    assert!(left.is_empty(), "left running there: {left:?}");
    assert!(!Path::new(&dir).exists(), "{dir} is still there");
    let config = server.config_path().display().to_string();
    assert!(local_ssh(&config).is_empty(), "an ssh still runs here");

    // Dropped.
    let rk = remote(&server);
    let (r, _) = run(
        &rk.kernels,
        Language::Shell,
        "nohup sleep 60 >/dev/null 2>&1 & echo started",
    )
    .await;
    ok(&r, "start");
    let dir = rk.kernels.link().await.expect("link").info.dir.clone();
    let tag = rk.tag();
    let Remote {
        kernels,
        work,
        images,
        ..
    } = rk;
    tokio::task::spawn_blocking(move || drop(kernels))
        .await
        .expect("drop");
    let left = settled(&tag, Duration::from_secs(3)).await;
    assert!(left.is_empty(), "left running there: {left:?}");
    let deadline = Instant::now() + Duration::from_secs(3);
    while Path::new(&dir).exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!Path::new(&dir).exists(), "{dir} is still there");
    drop((work, images));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_sessions_leftovers_are_swept_by_the_next() {
    let server = SshServer::start();
    // A live session: the crashed one's directory goes beside its own (in the root of
    // this user's sessions there), and the sweep must not touch it.
    let live = remote(&server);
    ok(&run(&live.kernels, Language::Shell, "L=1").await.0, "live");
    let live_dir = live.kernels.link().await.expect("link").info.dir.clone();
    let root = Path::new(&live_dir)
        .parent()
        .expect("the sessions' root")
        .to_path_buf();
    let token = format!("deadbeef{}", uuid::Uuid::new_v4().simple());
    let stale = root.join(&token);
    // The process first: any session's sweep may end it once the directory is there.
    let mut orphan = std::process::Command::new("sleep")
        .arg("60")
        .env("OI_TUI_REMOTE", &token)
        .spawn()
        .expect("orphan");
    let tag = format!("OI_TUI_REMOTE={token}");
    assert_eq!(processes_with_env(&tag).len(), 1);
    let mut gone = std::process::Command::new("true").spawn().expect("true");
    let dead = gone.id();
    gone.wait().expect("wait");
    let building = root.join(format!(".oi-test-{token}"));
    std::fs::create_dir(&building).expect("stale dir");
    std::fs::write(building.join("helper.pid"), format!("{dead}\n")).expect("pid");
    std::fs::write(building.join("block-1.py"), "print(1)").expect("file");
    std::fs::rename(&building, &stale).expect("stale dir in place");

    let rk = remote(&server);
    ok(
        &run(&rk.kernels, Language::Shell, "echo hi").await.0,
        "next",
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while (stale.exists() || matches!(orphan.try_wait(), Ok(None))) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ended = orphan.try_wait().expect("try_wait");
    if ended.is_none() {
        let _ = orphan.kill();
        let _ = orphan.wait();
    }
    let exists = stale.exists();
    let _ = std::fs::remove_dir_all(&stale);
    assert!(ended.is_some(), "the crashed session's process still runs");
    assert!(!exists, "the crashed session's directory is still there");
    assert!(
        Path::new(&live_dir).is_dir(),
        "a live session's directory was swept"
    );
    let (r, _) = run(&live.kernels, Language::Shell, "echo $L").await;
    assert_eq!(r.output.trim(), "1", "{r:#?}");
    rk.kernels.shutdown().await;
    live.kernels.shutdown().await;
}

fn ci_python() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.join(".ci/venv/bin/python")
}

/// The bytes of a valid 1×1 PNG.
const TINY_PNG: &str = "89504e470d0a1a0a0000000d4948445200000001000000010806000000\
1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_a_remote_block_makes_come_back() {
    let server = SshServer::start();
    let python = ci_python();
    assert!(
        python.exists(),
        "{} is missing (.ci/run makes it)",
        python.display()
    );
    let rk = remote_with(&server, |_, t| {
        t.interpreters = vec![(Language::Python, python.display().to_string())];
    });
    let k = &rk.kernels;
    let (r, _) = run(
        k,
        Language::Python,
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
    )
    .await;
    ok(&r, "plot");
    assert_eq!(r.images.len(), 1, "{r:#?}");
    let kept = &r.images[0];
    assert!(kept.path.starts_with(rk.images.path()), "{kept:?}");
    let bytes = std::fs::read(&kept.path).expect("kept image");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");

    let code = format!("open('out.png', 'wb').write(bytes.fromhex('{TINY_PNG}'))");
    let (r, _) = run(k, Language::Python, &code).await;
    ok(&r, "file");
    assert_eq!(r.images.len(), 1, "{r:#?}");
    let remote_path = rk.work.path().join("out.png");
    match &r.images[0].source {
        oi_tui::protocol::ImageSource::File { path } => assert_eq!(path, &remote_path),
        other => panic!("{other:?}"),
    }
    let kept = std::fs::read(&r.images[0].path).expect("kept");
    assert_eq!(kept, std::fs::read(&remote_path).expect("written"));
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variable_not_handed_to_the_kernels_does_not_reach_the_host() {
    // A variable of this process's own environment (cargo sets it for the tests' run),
    // which the client's config would send and the server would accept.
    const OWN: &str = "CARGO_MANIFEST_DIR";
    if std::env::var_os(OWN).is_none() {
        // SAFETY: only when run outside cargo; set before any thread of this test reads it.
        unsafe { std::env::set_var(OWN, env!("CARGO_MANIFEST_DIR")) };
    }
    let server = SshServer::start_accepting_env(&[OWN, "OI_TEST_PLAIN"]);
    let config = server.dir().join("ssh_config_sendenv");
    let text = std::fs::read_to_string(server.config_path()).expect("config");
    std::fs::write(&config, format!("{text}  SendEnv {OWN} OI_TEST_PLAIN\n")).expect("write");
    let rk = remote_with(&server, |c, t| {
        c.clear_env = true;
        c.env = vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("HOME".into(), std::env::var_os("HOME").unwrap_or_default()),
            ("OI_TEST_PLAIN".into(), "plain-value".into()),
        ];
        t.ssh_options = vec!["-F".into(), config.display().to_string()];
    });
    let (r, _) = run(
        &rk.kernels,
        Language::Shell,
        &format!("echo \"own=${{{OWN}:-none}}\"; echo \"plain=${{OI_TEST_PLAIN:-none}}\""),
    )
    .await;
    ok(&r, "env");
    assert!(r.output.contains("own=none"), "{:?}", r.output);
    // The check can fail: what the kernels are given does go (SendEnv works).
    assert!(r.output.contains("plain=plain-value"), "{:?}", r.output);
    rk.kernels.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awkward_code_reaches_the_remote_kernel_intact() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    let code = "s = 'it''s'\nprint(\"a'b\\\\c $(date) `id` OI_TUI_END_x\")\nprint(\"\"\"\nOI_TUI_END_x\n\"\"\".strip())";
    let (r, _) = run(k, Language::Python, code).await;
    ok(&r, "quotes");
    let lines: Vec<&str> = r.output.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        ["a'b\\c $(date) `id` OI_TUI_END_x", "OI_TUI_END_x"],
        "{r:#?}"
    );
    let (r, _) = run(k, Language::Shell, "echo 'single'\\''quote' \"$((6*7))\"").await;
    assert_eq!(r.output.trim(), "single'quote 42", "{r:#?}");
    // A megabyte of code.
    let mut big = String::from("total = 0\n");
    while big.len() < 1_000_000 {
        big.push_str("total += 1  # padding padding padding padding padding padding\n");
    }
    let lines = big.lines().count() - 1;
    big.push_str("print('total', total)\n");
    let started = Instant::now();
    let (r, _) = run(k, Language::Python, &big).await;
    ok(&r, "big");
    assert_eq!(r.output.trim(), format!("total {lines}"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // A NUL byte is refused, and the kernel goes on.
    let (r, _) = run(k, Language::Python, "print('a\0b')").await;
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    assert!(r.notes.join(" ").contains("NUL"), "{:?}", r.notes);
    let (r, _) = run(k, Language::Python, "print(total)").await;
    assert_eq!(r.output.trim(), lines.to_string(), "{r:#?}");
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_kernel_that_exits_is_replaced() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    ok(&run(k, Language::Shell, "V=1").await.0, "set");
    let (r, _) = run(k, Language::Shell, "exit 3").await;
    assert_eq!(r.status, RunStatus::Failed, "{r:#?}");
    assert!(r.state_lost, "{r:#?}");
    assert!(
        r.notes.iter().any(|n| n.contains("exited")),
        "{:?}",
        r.notes
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("was lost")),
        "the connection did not drop: {:?}",
        r.notes
    );
    let (r, _) = run(k, Language::Shell, "echo \"v=${V:-unset}\"").await;
    ok(&r, "next");
    assert_eq!(r.output.trim(), "v=unset");
    k.shutdown().await;
    let left = settled(&rk.tag(), Duration::from_secs(3)).await;
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chatty_login_shell_does_not_break_the_connection() {
    let server = SshServer::start_with_chatter("Welcome to the test host\nLast login: never");
    let rk = remote(&server);
    let (r, _) = run(&rk.kernels, Language::Python, "print('only this')").await;
    ok(&r, "python");
    assert_eq!(r.output.trim(), "only this", "{r:#?}");
    let (r, _) = run(&rk.kernels, Language::Shell, "echo shell too").await;
    ok(&r, "shell");
    assert_eq!(r.output.trim(), "shell too", "{r:#?}");
    rk.kernels.shutdown().await;
}

/// A login that prints what looks like the helper's replies cannot pass for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_that_prints_reply_lines_does_not_pass_for_the_helper() {
    let server =
        SshServer::start_with_chatter(".HELLO dir=/nowhere\n.HELLO workdir=/nowhere\n.OK 0");
    let rk = remote(&server);
    let (r, _) = run(&rk.kernels, Language::Shell, "echo here").await;
    ok(&r, "shell");
    assert_eq!(r.output.trim(), "here", "{r:#?}");
    let link = rk.kernels.link().await.expect("link");
    assert!(link.info.dir.contains("oi-tui-remote-"), "{:?}", link.info);
    assert_eq!(
        link.info.workdir,
        rk.work.path().display().to_string(),
        "{:?}",
        link.info
    );
    rk.kernels.shutdown().await;
}

/// What a person types is the block's, all of it: `~.` at the start of a line is text, not
/// ssh's escape that would close the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_text_that_looks_like_an_ssh_escape_reaches_the_block() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    let (handle, seen) = spawn_block(
        k.clone(),
        Block::new(
            Language::Shell,
            "printf 'one? '; read -r a; printf 'two? '; read -r b; echo \"got [$a] [$b]\"",
        ),
    );
    wait_for_output(&seen, "one? ", Duration::from_secs(10)).await;
    k.write_input(b"first\r").expect("write");
    wait_for_output(&seen, "two? ", Duration::from_secs(10)).await;
    k.write_input(b"~.\r").expect("write");
    let r = handle.await.expect("join");
    ok(&r, "escape-like input");
    assert!(r.output.contains("got [first] [~.]"), "{:?}", r.output);
    let (after, _) = run(k, Language::Shell, "echo still").await;
    ok(&after, "after");
    assert!(after.notes.is_empty(), "{:?}", after.notes);
    rk.kernels.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_that_leaves_the_remote_terminal_raw_does_not_break_the_next() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    let (before, _) = run(k, Language::Shell, "stty -g").await;
    ok(&before, "modes");
    run(k, Language::Shell, "stty raw -echo -opost").await;
    let (after, _) = run(k, Language::Shell, "stty -g").await;
    ok(&after, "modes again");
    assert_eq!(after.output.trim(), before.output.trim());
    // Typed input is echoed and takes Enter again, and output lines start at the left.
    let (handle, seen) = spawn_block(
        k.clone(),
        Block::new(Language::Shell, "read -r a; echo \"got [$a]\"; echo second"),
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    k.write_input(b"typed\r").expect("write");
    let r = handle.await.expect("join");
    ok(&r, "input after raw");
    let shown = String::from_utf8_lossy(&seen.lock().unwrap()).to_string();
    assert!(
        shown.contains("typed\r\ngot [typed]\r\nsecond\r\n"),
        "{shown:?}"
    );
    k.shutdown().await;
}
