//! The sandbox with the real binary, under both backends (forced with
//! `OI_TUI_SANDBOX_BACKEND`): under workspace-write a block cannot create a file outside the
//! workspace and can inside it; under `--network off` it cannot connect to a listener the
//! test started on 127.0.0.1; a kernel keeps its state across blocks in the sandbox; and
//! `oi-tui sandbox -- CMD` and `oi-tui sandbox status` do what they say.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use super::model_server::{ModelServer, Reply};

pub(super) const BACKENDS: [&str; 2] = ["bubblewrap", "landlock"];

/// A workspace, a private temp dir, and a directory outside both, under one temp root.
pub(super) struct Layout {
    root: tempfile::TempDir,
}

impl Layout {
    pub(super) fn new() -> Layout {
        let root = tempfile::tempdir().expect("dir");
        for sub in ["ws", "tmp", "outside", "config"] {
            std::fs::create_dir(root.path().join(sub)).expect("mkdir");
        }
        Layout { root }
    }

    pub(super) fn path(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    pub(super) fn command(&self, backend: &str) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
        cmd.current_dir(self.path("ws"))
            .env("OI_TUI_SANDBOX_BACKEND", backend)
            .env("TMPDIR", self.path("tmp"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_DATA_HOME", self.path("share"))
            .env_remove("OI_TUI_CONFIG")
            .env_remove("OI_TUI_MODEL")
            .env_remove("OI_TUI_API_BASE")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// `-y --task` against the scripted server, with extra flags before it.
    pub(super) async fn task(&self, backend: &str, server: &ModelServer, extra: &[&str]) -> Output {
        let base = server.base("openai");
        let mut cmd = self.command(backend);
        cmd.args(extra)
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .args(["--api-base", &base, "--api-key", "k"])
            .arg("--data-dir")
            .arg(self.path("data"));
        run(cmd).await
    }
}

/// `oi-tui sandbox -- sh -c SCRIPT` under a backend.
pub(super) async fn sandboxed(layout: &Layout, backend: &str, script: &str) -> Output {
    let mut cmd = layout.command(backend);
    cmd.args(["sandbox", "--", "sh", "-c", script]);
    run(cmd).await
}

pub(super) async fn run(cmd: tokio::process::Command) -> Output {
    super::support::output_within(cmd).await
}

pub(super) fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn python_write(path: &Path, tag: &str) -> String {
    format!(
        "try:\n    open({path:?}, 'w').write('x')\n    print('{tag}-' + 'WROTE')\nexcept OSError as e:\n    print('{tag}-' + 'REFUSED', e.errno)\n",
        path = path.display().to_string()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn workspace_write_keeps_blocks_inside_the_workspace() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let outside = layout.path("outside").join("escaped.txt");
        let inside = layout.path("ws").join("inside.txt");
        let code = format!(
            "{}{}",
            python_write(&outside, "OUT"),
            python_write(&inside, "IN")
        );
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let out = layout
            .task(backend, &server, &["--sandbox", "workspace-write"])
            .await;
        let all = text(&out);
        assert!(!outside.exists(), "{backend}: the block escaped:\n{all}");
        assert!(
            inside.exists(),
            "{backend}: the workspace was not writable:\n{all}"
        );
        assert!(all.contains("OUT-REFUSED"), "{backend}:\n{all}");
        assert!(all.contains("IN-WROTE"), "{backend}:\n{all}");
        assert!(
            all.contains(&format!("sandbox workspace-write ({backend})")),
            "{backend}: the header names the backend:\n{all}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn network_off_stops_a_connection_to_a_local_listener() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let code = format!(
            "import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n    print('NET-' + 'CONNECTED')\nexcept OSError as e:\n    print('NET-' + 'BLOCKED', e.errno)\n"
        );
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let out = layout.task(backend, &server, &["--network", "off"]).await;
        let all = text(&out);
        assert!(all.contains("NET-BLOCKED"), "{backend}:\n{all}");
        assert!(!all.contains("NET-CONNECTED"), "{backend}:\n{all}");
        assert!(
            listener.accept().is_err(),
            "{backend}: the listener saw a connection"
        );

        // The same block with the network on connects: the test can tell the difference.
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let out = layout.task(backend, &server, &["--network", "on"]).await;
        let all = text(&out);
        assert!(all.contains("NET-CONNECTED"), "{backend}:\n{all}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kernel_state_persists_across_blocks_in_the_sandbox() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let server = ModelServer::start(vec![
            Reply::tool("python", "answer = 6 * 7"),
            Reply::tool("python", "print('ANSWER', answer)"),
            Reply::text("Done."),
        ])
        .await;
        let out = layout.task(backend, &server, &["--safe-mode"]).await;
        let all = text(&out);
        assert!(all.contains("ANSWER 42"), "{backend}:\n{all}");
        assert!(
            all.contains(&format!("({backend}), network off")),
            "{backend}:\n{all}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sandbox_command_refuses_writes_outside_and_status_names_the_backend() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let outside = layout.path("outside").join("touched");
        let mut cmd = layout.command(backend);
        cmd.args(["sandbox", "--", "touch"]).arg(&outside);
        let out = run(cmd).await;
        assert!(!out.status.success(), "{backend}: {}", text(&out));
        assert!(!outside.exists(), "{backend}: the command escaped");

        let mut cmd = layout.command(backend);
        cmd.args(["sandbox", "--", "touch", "inside"]);
        let out = run(cmd).await;
        assert!(out.status.success(), "{backend}: {}", text(&out));
        assert!(layout.path("ws").join("inside").exists());

        let mut cmd = layout.command(backend);
        cmd.args(["sandbox", "status"]);
        let out = run(cmd).await;
        let all = text(&out);
        assert!(out.status.success(), "{backend}: {all}");
        assert!(
            all.contains(&format!("sandbox workspace-write ({backend}), network on")),
            "{backend}: {all}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_explicit_sandbox_with_no_backend_refuses_blocks() {
    let layout = Layout::new();
    let marker = layout.path("ws").join("ran");
    let code = format!("open({:?}, 'w').write('x')", marker.display().to_string());
    let server = ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Ok.")]).await;
    let out = layout
        .task("none", &server, &["--sandbox", "workspace-write"])
        .await;
    let all = text(&out);
    assert!(
        !marker.exists(),
        "the block ran without its sandbox:\n{all}"
    );
    assert!(all.contains("no sandbox is available"), "{all}");

    // Only the default: a warning, and the block runs.
    let server = ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Ok.")]).await;
    let out = layout.task("none", &server, &[]).await;
    let all = text(&out);
    assert!(marker.exists(), "the default runs unsandboxed:\n{all}");
    assert!(all.contains("warning: no sandbox is available"), "{all}");

    let mut cmd = layout.command("none");
    cmd.args(["--sandbox", "read-only", "sandbox", "status"]);
    let out = run(cmd).await;
    assert!(!out.status.success());
    assert!(text(&out).contains("blocks will not run"), "{}", text(&out));
}

/// An interrupt reaches the sandboxed kernel, not the sandbox around it: the block stops
/// with KeyboardInterrupt and the kernel keeps its variables.
#[tokio::test(flavor = "multi_thread")]
async fn an_interrupt_stops_the_block_and_keeps_the_sandboxed_kernel() {
    use super::support::{kernels_with, run, spawn_block, wait_for_output};
    use oi_tui::exec::{Block, Language, RunStatus};
    use oi_tui::sandbox::{Backend, SandboxSettings};
    use std::sync::Arc;

    for backend in [Backend::Bubblewrap, Backend::Landlock] {
        let (kernels, _dir) = kernels_with(|config| {
            config.launch_prefix = oi_tui::sandbox::prefix_with(
                backend,
                SandboxSettings::default(),
                &config.cwd,
                Path::new(env!("CARGO_BIN_EXE_oi-tui")),
            )
            .expect("the sandbox's prefix");
        });
        let kernels = Arc::new(kernels);
        let (first, _) = run(&kernels, Language::Python, "x = 5").await;
        assert_eq!(first.status, RunStatus::Success, "{backend:?}: {first:#?}");
        let (handle, seen) = spawn_block(
            kernels.clone(),
            Block::new(
                Language::Python,
                "import time\nprint('sleeping', flush=True)\ntime.sleep(100)",
            ),
        );
        wait_for_output(&seen, "sleeping", Duration::from_secs(30)).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(kernels.interrupt(), "a block is running");
        let r = handle.await.expect("join");
        assert_eq!(r.status, RunStatus::Interrupted, "{backend:?}: {r:#?}");
        assert!(!r.state_lost, "{backend:?}: {r:#?}");
        let (after, _) = run(&kernels, Language::Python, "print(x * 2)").await;
        assert_eq!(after.output.trim(), "10", "{backend:?}");
    }
}

/// Read-only keeps the workspace read-only too; under bubblewrap `.git` in the workspace
/// stays read-only in workspace-write.
#[tokio::test(flavor = "multi_thread")]
async fn read_only_and_git_stay_read_only() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let mut cmd = layout.command(backend);
        cmd.args(["--sandbox", "read-only", "sandbox", "--", "touch", "ro"]);
        let out = run(cmd).await;
        assert!(!out.status.success(), "{backend}: {}", text(&out));
        assert!(!layout.path("ws").join("ro").exists(), "{backend}");
        let mut cmd = layout.command(backend);
        cmd.args(["--sandbox", "read-only", "sandbox", "status"]);
        let all = text(&run(cmd).await);
        assert!(
            all.contains(&format!("sandbox read-only ({backend})")),
            "{backend}: {all}"
        );
    }
    let layout = Layout::new();
    std::fs::create_dir(layout.path("ws").join(".git")).expect("mkdir .git");
    let mut cmd = layout.command("bubblewrap");
    cmd.args(["sandbox", "--", "touch", ".git/hook"]);
    let out = run(cmd).await;
    assert!(!out.status.success(), "{}", text(&out));
    assert!(!layout.path("ws").join(".git/hook").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_terminal_a_refused_block_stays_refused_and_the_model_hears_why() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let outside = layout.path("outside").join("escaped.txt");
        let code = format!("touch '{}'", outside.display());
        let server =
            ModelServer::start(vec![Reply::tool("shell", &code), Reply::text("Done.")]).await;
        let out = layout.task(backend, &server, &[]).await;
        let all = text(&out);
        assert!(!outside.exists(), "{backend}: the block escaped:\n{all}");
        assert!(
            all.contains("looks stopped by the sandbox") || all.contains("Read-only"),
            "{backend}:\n{all}"
        );
        let told = server.chats()[1].all_text();
        assert!(
            told.contains("looks like the sandbox stopped it")
                && told.contains("Nobody can allow a block outside the sandbox here"),
            "{backend}: {told}"
        );
    }
}

/// Scans every process it can see for the key, in the environment and the command line.
const SCAN: &str = "import os\nneedle = b'sk-test' + b'-leak'\nhits = []\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n        for f in ('environ', 'cmdline'):\n            try:\n                if needle in open(f'/proc/{p}/{f}', 'rb').read():\n                    hits.append((p, f))\n            except OSError:\n                pass\nprint('SCAN-' + ('FOUND' if hits else 'CLEAN'), hits)\n";

#[tokio::test(flavor = "multi_thread")]
async fn a_block_cannot_read_the_key_out_of_oi_tui_through_proc() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for backend in BACKENDS {
        let layout = Layout::new();
        let server =
            ModelServer::start(vec![Reply::tool("python", SCAN), Reply::text("Done.")]).await;
        let mut cmd = layout.command(backend);
        cmd.env("OPENAI_API_KEY", "sk-test-leak-987654321")
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .args(["--api-base", &server.base("openai")])
            .arg("--data-dir")
            .arg(layout.path("data"));
        let all = text(&run(cmd).await);
        assert!(all.contains("SCAN-"), "{backend}: the block ran:\n{all}");
        // Root may read any process; under Landlock nothing but the pid namespace of
        // bubblewrap hides oi-tui from a root kernel (the README says so).
        if backend == "bubblewrap" || !root {
            assert!(all.contains("SCAN-CLEAN"), "{backend}: {all}");
        }
        assert!(
            !server.chats()[1].all_text().contains("sk-test-leak"),
            "{backend}: the key reached the model"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_block_cannot_rewrite_oi_tuis_own_files_inside_the_workspace() {
    let layout = Layout::new();
    let ws = layout.path("ws");
    let config = ws.join("cfg/oi-tui/config.toml");
    std::fs::create_dir_all(config.parent().expect("dir")).expect("mkdir");
    std::fs::write(&config, "[policy]\ndeny = [\"rm\"]\n").expect("config");
    let code = "printf '[policy]\\nallow = [\"rm\"]\\n' > cfg/oi-tui/config.toml; echo cfg-$?; touch data/x; echo data-$?; touch free; echo free-$?";
    let server = ModelServer::start(vec![Reply::tool("shell", code), Reply::text("Done.")]).await;
    let mut cmd = layout.command("bubblewrap");
    cmd.env("XDG_CONFIG_HOME", ws.join("cfg"))
        .args(["-y", "--task", "go", "--model", "openai/scripted"])
        .args(["--api-base", &server.base("openai"), "--api-key", "k"])
        .arg("--data-dir")
        .arg(ws.join("data"));
    let all = text(&run(cmd).await);
    assert!(
        all.contains("free-0"),
        "the workspace stays writable: {all}"
    );
    assert!(all.contains("cfg-1") && all.contains("data-1"), "{all}");
    assert_eq!(
        std::fs::read_to_string(&config).expect("config"),
        "[policy]\ndeny = [\"rm\"]\n"
    );
    assert!(!ws.join("data/x").exists());
}

/// What oi-tui reads of the kernel's process is the interpreter's, not the sandbox's around
/// it, under each backend, with and without deny rules (which put a tracer between them):
/// with nobody to type, an interpreter that reads its terminal and ignores end-of-file is
/// interrupted, as the interpreter, and keeps its state (were the sandbox taken for it, the
/// interpreter would be one of "the other programs reading the terminal", and be ended).
#[tokio::test(flavor = "multi_thread")]
async fn the_sandboxed_interpreter_is_the_process_looked_at() {
    use super::support::{kernels_with, run, run_block};
    use oi_tui::exec::{Block, Language};
    use oi_tui::sandbox::{Backend, SandboxSettings};

    const DEAF: &str = "import time\nend = time.time() + 20\nwhile time.time() < end:\n    try:\n        input()\n    except EOFError:\n        pass\nprint('never interrupted')";
    for rules in [vec![], vec!["no-such-program-here"]] {
        for backend in [Backend::Bubblewrap, Backend::Landlock] {
            let (kernels, _dir) = kernels_with(|config| {
                let mut prefix = oi_tui::sandbox::prefix_with(
                    backend,
                    SandboxSettings::default(),
                    &config.cwd,
                    Path::new(env!("CARGO_BIN_EXE_oi-tui")),
                )
                .expect("the sandbox's prefix");
                // The trampoline's own `--deny` options, before its last `--`.
                let end = prefix.len() - 1;
                assert_eq!(prefix[end], "--");
                for rule in &rules {
                    prefix.insert(end, (*rule).into());
                    prefix.insert(end, "--deny".into());
                }
                config.launch_prefix = prefix;
            });
            let what = format!("{backend:?}, deny rules {rules:?}");
            let (set, _) = run(&kernels, Language::Python, "x = 21").await;
            assert!(!set.state_lost, "{what}: {set:#?}");
            let mut block = Block::new(Language::Python, DEAF);
            block.stdin_eof = true;
            let (deaf, _) = run_block(&kernels, block).await;
            assert!(
                !deaf.state_lost && !deaf.output.contains("never interrupted"),
                "{what}: {deaf:#?}"
            );
            let (after, _) = run(&kernels, Language::Python, "print(x * 2)").await;
            assert_eq!(after.output.trim(), "42", "{what}: {after:#?}");
        }
    }
}
