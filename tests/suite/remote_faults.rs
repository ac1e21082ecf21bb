//! Remote kernels that cannot run: a host that refuses the connection or its key, a
//! working directory or an interpreter that is not there, a kernel whose session there ends
//! before it starts. Each is one sentence naming the host, soon, with no `ssh` left running
//! here.

use std::path::Path;
use std::time::{Duration, Instant};

use oi_tui::exec::{Executor, KernelConfig, Kernels, Language, RunStatus};

use super::remote_kernels::{local_ssh, ok, remote, remote_with, target};
use super::ssh_server::{ALIAS, SshServer};
use super::support::run;

/// Runs one block against a config that cannot connect; checks the one sentence and that no
/// `ssh` is left running here.
async fn refused(config: &Path, expected: &str) {
    let work = tempfile::tempdir().expect("work");
    let kernels = Kernels::new(KernelConfig {
        cwd: work.path().to_path_buf(),
        executor: Executor::Ssh(target(config, None)),
        session_id: Some(format!("rk-{}", uuid::Uuid::new_v4().simple())),
        ..KernelConfig::default()
    });
    let started = Instant::now();
    let (r, _) = run(&kernels, Language::Python, "print(1)").await;
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    let note = &r.notes[0];
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(note.contains(ALIAS), "{note}");
    assert!(note.contains(expected), "{expected:?} not in {note:?}");
    let config = config.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !local_ssh(&config).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(local_ssh(&config).is_empty(), "an ssh was left running");
    drop(kernels);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_connection_fault_is_one_sentence_naming_the_host() {
    let mut server = SshServer::start();
    refused(&server.config_with_wrong_key(), "refused the login").await;
    refused(&server.unreachable_config(), "refused the connection").await;
    server.replace_host_key();
    refused(&server.config_path(), "host key").await;
    refused(&server.config_path(), "has changed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_interpreter_there_is_named_with_the_host() {
    let server = SshServer::start();
    let rk = remote_with(&server, |_, t| {
        t.interpreters = vec![(Language::Ruby, "/nonexistent/ruby".into())];
    });
    let started = Instant::now();
    let (r, _) = run(&rk.kernels, Language::Ruby, "puts 1").await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    let all = r.notes.join("\n");
    assert!(all.contains("Cannot run ruby on oi-test"), "{all}");
    assert!(all.contains("/nonexistent/ruby"), "{all}");
    // A language whose program is nowhere on the host's PATH.
    let (r, _) = run(&rk.kernels, Language::PowerShell, "Write-Output 1").await;
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    assert!(r.notes.join(" ").contains("on oi-test"), "{:?}", r.notes);
    // The others still run.
    ok(
        &run(&rk.kernels, Language::Shell, "echo fine").await.0,
        "shell",
    );
    rk.kernels.shutdown().await;

    // A working directory that is not there.
    let rk = remote_with(&server, |_, t| {
        t.workdir = Some("/nonexistent/oi-work".into());
    });
    let (r, _) = run(&rk.kernels, Language::Shell, "echo no").await;
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(r.notes[0].contains("oi-test"), "{:?}", r.notes);
    assert!(r.notes[0].contains("/nonexistent/oi-work"), "{:?}", r.notes);
    let config = server.config_path().display().to_string();
    let deadline = Instant::now() + Duration::from_secs(3);
    while !local_ssh(&config).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(local_ssh(&config).is_empty(), "an ssh was left running");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_whose_session_ends_before_it_starts_is_said_so_at_once() {
    let server = SshServer::start();
    let rk = remote(&server);
    ok(&run(&rk.kernels, Language::Shell, "echo up").await.0, "up");
    let dir = rk.kernels.link().await.expect("link").info.dir.clone();
    // The kernels' start script goes: the next kernel's session there ends at once.
    std::fs::remove_file(Path::new(&dir).join("kernel.sh")).expect("remove kernel.sh");
    let started = Instant::now();
    let (r, _) = run(&rk.kernels, Language::Perl, "print 1;").await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    let note = &r.notes[0];
    assert!(
        note.contains("Cannot start the perl kernel on oi-test"),
        "{note}"
    );
    assert!(note.contains("kernel.sh"), "{note}");
    // The kernel already running is untouched.
    ok(
        &run(&rk.kernels, Language::Shell, "echo still").await.0,
        "still",
    );
    rk.kernels.shutdown().await;
}

/// A block in the host's sandbox cannot change what runs outside it: the session's files
/// there (`env`, the `run-` files, `kernel.sh`, a kernel's pid file) and other sessions'
/// are read-only inside; only its own figure directory is writable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandboxed_block_cannot_change_what_runs_outside_the_sandbox_there() {
    let server = tokio::task::spawn_blocking(SshServer::start).await.unwrap();
    let r = remote_with(&server, |config, _| {
        config.remote_sandbox = oi_tui::sandbox::SandboxSettings {
            mode: oi_tui::protocol::SandboxMode::ReadOnly,
            network: oi_tui::protocol::Network::On,
            explicit: true,
        };
    });
    let escaped = r.work.path().join("escaped");
    let attack = format!(
        "for f in /tmp/oi-tui-remote-*/*/env /tmp/oi-tui-remote-*/*/run-python /tmp/oi-tui-remote-*/*/kernel.sh /tmp/oi-tui-remote-*/*/k*/pid; do\n  echo 'touch {}' >> \"$f\" && echo \"WROTE $f\"\ndone\ntouch \"$OI_TUI_IMAGES/mine.txt\" && echo figures-writable",
        escaped.display()
    );
    let (result, _) = run(&r.kernels, Language::Shell, &attack).await;
    assert!(!result.output.contains("WROTE"), "{}", result.output);
    assert!(
        result.output.contains("Read-only file system"),
        "{}",
        result.output
    );
    assert!(
        result.output.contains("figures-writable"),
        "{}",
        result.output
    );
    // A new kernel starts (outside the sandbox) from those files: nothing of the block runs.
    let (python, _) = run(&r.kernels, Language::Python, "print('fresh')").await;
    assert_eq!(python.status, RunStatus::Success, "{python:?}");
    assert!(
        !escaped.exists(),
        "a block changed what runs outside the sandbox"
    );
    r.kernels.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_a_connection_attempt_at_once() {
    // A host that takes the connection and never answers (a hung machine): the kernel's
    // backlog completes the handshake, nobody ever speaks.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    let port = silent.local_addr().expect("address").port();
    let work = tempfile::tempdir().expect("work");
    let config = tempfile::NamedTempFile::new().expect("empty ssh config");
    let mut t =
        oi_tui::exec::remote::SshTarget::from_host(&format!("127.0.0.1:{port}")).expect("target");
    t.ssh_options = vec!["-F".into(), config.path().display().to_string()];
    t.connect_timeout = Duration::from_secs(60);
    let kernels = std::sync::Arc::new(Kernels::new(KernelConfig {
        cwd: work.path().to_path_buf(),
        executor: Executor::Ssh(t),
        ..KernelConfig::default()
    }));
    let needle = config.path().display().to_string();
    let (handle, _) = super::support::spawn_block(
        kernels.clone(),
        oi_tui::exec::Block::new(Language::Python, "print(1)"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while local_ssh(&needle).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!local_ssh(&needle).is_empty(), "ssh never started");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let interrupted = Instant::now();
    assert!(kernels.interrupt(), "the block is active while it connects");
    let r = tokio::time::timeout(Duration::from_secs(15), handle)
        .await
        .expect("the attempt went on after Ctrl-C")
        .expect("join");
    assert!(
        interrupted.elapsed() < Duration::from_secs(10),
        "{:?}",
        interrupted.elapsed()
    );
    assert_eq!(r.status, RunStatus::Unavailable, "{r:#?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("was interrupted") && n.contains("127.0.0.1")),
        "{r:#?}"
    );
    assert!(local_ssh(&needle).is_empty(), "an ssh was left running");
    drop(silent);
}
