//! Deny rules enforced when a program starts, with the real binary under both backends: with
//! `deny = ["rm"]`, `rm` spelled in ways no reader follows (a spawn function reached through
//! a name, a copy of the binary, a hard link, the dynamic loader, busybox applets, a script's
//! shebang) is stopped as it starts, the output names the rule, and other programs run. In
//! the workbench, a block the person approved is still stopped, and the model is told.

use std::path::Path;

use super::model_server::{ModelServer, Reply};
use super::sandbox::{BACKENDS, Layout, sandboxed, text};
use super::tmux::Tmux;

/// `deny = ["rm"]` in the layout's config.
fn deny_rm(layout: &Layout) {
    let dir = layout.path("config").join("oi-tui");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(dir.join("config.toml"), "[policy]\ndeny = [\"rm\"]\n").expect("config");
}

/// The dynamic loader of this machine.
fn loader() -> String {
    ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
        .iter()
        .find(|p| Path::new(p).exists())
        .expect("a dynamic loader")
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_denied_program_is_stopped_as_it_starts_however_it_was_spelled() {
    let ways: Vec<(&str, String)> = vec![
        (
            "python-alias",
            "python3 -c \"import subprocess; s = subprocess.run; s(['rm', 'v-python-alias'])\""
                .to_string(),
        ),
        (
            "python-dict",
            "python3 -c \"import os; os.__dict__['system']('rm v-python-dict')\"".to_string(),
        ),
        (
            "node",
            "node -e \"const {execSync: e} = require('child_process'); e('rm v-node')\""
                .to_string(),
        ),
        ("copy", "cp /bin/rm ./innocent && ./innocent v-copy".to_string()),
        ("hardlink", "ln /bin/rm ./linked 2>/dev/null || cp /bin/rm ./linked; ./linked v-hardlink".to_string()),
        ("loader", format!("{} /bin/rm v-loader", loader())),
        ("busybox", "busybox rm v-busybox".to_string()),
        (
            "busybox-link",
            "ln -s \"$(command -v busybox)\" ./rm-link && ./rm-link v-busybox-link; ln -sf \"$(command -v busybox)\" ./rm && ./rm v-busybox-link"
                .to_string(),
        ),
        (
            "shebang",
            "printf '#!/bin/rm\\n' > s.sh && chmod +x s.sh && ./s.sh v-shebang".to_string(),
        ),
        ("env", "env rm v-env".to_string()),
        // The loader and busybox are known by their content, whatever their name or argv[0].
        (
            "loader-copy",
            format!("cp {} ./ld && ./ld /bin/rm v-loader-copy", loader()),
        ),
        (
            "busybox-copy-argv0",
            "cp \"$(command -v busybox)\" ./bb && python3 -c \"import os; os.execv('./bb', ['rm', 'v-busybox-copy-argv0'])\""
                .to_string(),
        ),
        (
            "busybox-copy-exec-a",
            "cp \"$(command -v busybox)\" ./bb2 && bash -c 'exec -a rm ./bb2 v-busybox-copy-exec-a'"
                .to_string(),
        ),
        // Its shell runs its applets inside itself: no exec to check.
        ("busybox-sh", "busybox sh -c 'rm v-busybox-sh'".to_string()),
    ];
    for backend in BACKENDS {
        let layout = Layout::new();
        deny_rm(&layout);
        for (way, script) in &ways {
            let victim = layout.path("ws").join(format!("v-{way}"));
            std::fs::write(&victim, "keep").expect("victim");
            let all = text(&sandboxed(&layout, backend, &format!("{script}; echo AFTER-$?")).await);
            assert!(victim.exists(), "{backend} {way}: rm ran:\n{all}");
            assert!(
                all.contains("the deny rule `rm` forbids it"),
                "{backend} {way}: the rule is named:\n{all}"
            );
            if way.starts_with("busybox") {
                assert!(
                    all.contains("busybox") && all.contains("inside itself"),
                    "{backend} {way}: the message says why busybox cannot run:\n{all}"
                );
            }
            assert!(
                all.contains("AFTER-"),
                "{backend} {way}: the shell went on:\n{all}"
            );
        }
        // Other programs run, and so does the shell after a stopped one.
        let all = text(&sandboxed(&layout, backend, "ls / >/dev/null && echo LS-RAN").await);
        assert!(all.contains("LS-RAN"), "{backend}: {all}");
        assert!(!all.contains("deny rule"), "{backend}: {all}");
    }
}

/// Without deny rules nothing is traced: a block can use ptrace itself (strace, gdb need it).
#[tokio::test(flavor = "multi_thread")]
async fn without_deny_rules_programs_are_not_traced() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let all = text(&sandboxed(&layout, backend, "grep TracerPid /proc/self/status").await);
        assert!(all.contains("TracerPid:\t0"), "{backend}: {all}");
    }
}

/// In the workbench the person approves a block the reader cannot see through; `rm` is
/// still stopped as it starts, the terminal pane names the rule, and the model hears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_block_still_cannot_start_a_denied_program() {
    let layout = Layout::new();
    let ws = layout.path("ws");
    std::fs::create_dir_all(ws.join("config/oi-tui")).expect("config dir");
    std::fs::write(
        ws.join("config/oi-tui/config.toml"),
        "[policy]\ndeny = [\"rm\"]\n",
    )
    .expect("config");
    let victim = ws.join("victim.txt");
    std::fs::write(&victim, "keep").expect("victim");
    let code = "import subprocess\ns = subprocess.run\nprint('rc', s(['r' + 'm', 'victim.txt']).returncode)";
    let server = ModelServer::start(vec![
        Reply::text("Removing it.").and_tool("python", code),
        Reply::text("Done."),
    ])
    .await;
    let tmux = Tmux::workbench(
        &server.base("openai"),
        &ws,
        (200, 60),
        &format!(
            "OI_TUI_SANDBOX_BACKEND=bubblewrap TMPDIR='{}'",
            layout.path("tmp").display()
        ),
        "",
    );
    tmux.wait_for("Input").await;
    tmux.type_text("remove victim.txt");
    tmux.send(&["Enter"]);
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    let screen = tmux.wait_for("forbids it").await;
    assert!(screen.contains("the deny rule `rm`"), "{screen}");
    tmux.wait_for("idle").await;
    assert!(victim.exists(), "rm ran:\n{screen}");
    let chats = server.chats();
    let told = chats.last().expect("a request after the block").all_text();
    assert!(told.contains("the deny rule `rm` forbids it"), "{told}");
}
