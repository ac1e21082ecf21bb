//! The real binary in a real terminal (tmux), against the scripted model server: a prompt,
//! a highlighted block, live output, an edit with its diff, a skip the model hears of, an
//! interrupt that keeps the kernel's state, and a quit that restores the terminal.

use std::time::Duration;

use super::model_server::{ModelServer, Reply};
use super::tmux::Tmux;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_in_the_workbench() {
    let server = ModelServer::start(vec![
        Reply::text("I'll count.").and_tool(
            "python",
            "import time\nfor i in range(8):\n    print('tick', i, flush=True)\n    time.sleep(0.2)\nx = 41",
        ),
        Reply::tool("shell", "echo original-line"),
        Reply::tool("python", "print('should be skipped')"),
        Reply::tool("python", "import time\nprint('long one', flush=True)\ntime.sleep(60)"),
        Reply::tool("python", "print('x is', x + 1)"),
        Reply::text("All done."),
    ])
    .await;
    let dir = tempfile::tempdir().expect("dir");
    let command = format!(
        "cd '{dir}' && env -u NO_COLOR XDG_CONFIG_HOME='{dir}/config' '{bin}' --model openai/scripted --api-base {base} --data-dir '{dir}/data'; echo EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' '; echo; sleep 60",
        dir = dir.path().display(),
        bin = env!("CARGO_BIN_EXE_oi-tui"),
        base = server.base("openai"),
    );
    let tmux = Tmux::start(
        &format!(
            "bash --noprofile --norc -c \"{}\"",
            // Quoted for the shell tmux starts, so that `$?` reaches bash.
            command.replace('"', "\\\"").replace('$', "\\$")
        ),
        120,
        40,
    );

    tmux.wait_for("Input").await;
    tmux.type_text("count please");
    tmux.send(&["Enter"]);

    // The proposed block, with its line numbers, waits for a decision.
    tmux.wait_for("awaiting your decision").await;
    let screen = tmux.wait_for("y run · e edit · n skip").await;
    assert!(screen.contains("2 for i in range(8):"), "{screen}");
    tmux.send(&["y"]);

    // Output arrives live: the first lines before the block ends.
    let screen = tmux.wait_for("tick 1").await;
    assert!(
        !screen.contains("tick 7"),
        "lines arrive while the block runs:\n{screen}"
    );
    assert!(screen.contains("running"), "{screen}");

    // An edit: the diff, then the edited code's output.
    tmux.wait_for("echo original-line").await;
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["e"]);
    tmux.wait_for("Ctrl-S accepts").await;
    tmux.send(&["End"]);
    for _ in 0.."original-line".len() {
        tmux.send(&["BSpace"]);
    }
    tmux.type_text("edited-line");
    tmux.send(&["C-s"]);
    let screen = tmux.wait_for("proposed → edited").await;
    assert!(
        screen.contains("- echo original-line") && screen.contains("+ echo edited-line"),
        "{screen}"
    );
    tmux.send(&["y"]);
    tmux.wait_for("│edited-line ").await;

    // A skip: the model is told.
    tmux.wait_for("should be skipped").await;
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["n"]);
    tmux.wait_for("skipped").await;

    // An interrupt stops the block; the kernel keeps its state.
    tmux.wait_for("time.sleep(60)").await;
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("│long one").await;
    tmux.send(&["C-c"]);
    tmux.wait_for("interrupted").await;
    tmux.wait_for(" idle ").await;
    tmux.type_text("go on");
    tmux.send(&["Enter"]);
    tmux.wait_for("print('x is', x + 1)").await;
    tmux.wait_for("awaiting your decision").await;
    tmux.send(&["y"]);
    tmux.wait_for("x is 42").await;
    tmux.wait_for("All done.").await;

    // Quit: the terminal is restored (main screen, echo and line editing back on).
    tmux.send(&["C-q"]);
    tmux.wait_for("EXIT=0").await;
    // The stty line follows the exit status.
    let screen = tmux.wait_for("icanon").await;
    assert!(
        screen.contains("icanon echo") || screen.contains("echo icanon"),
        "{screen}"
    );
    assert!(
        !screen.contains("-icanon") && !screen.contains("-echo "),
        "{screen}"
    );
    assert!(
        !screen.contains("Input"),
        "the workbench's screen is gone:\n{screen}"
    );

    let chats = server.chats();
    assert_eq!(chats.len(), 6);
    assert!(
        chats[1].all_text().contains("tick 7"),
        "the first block's output reached the model"
    );
    assert!(
        chats[2].all_text().contains("edited the block")
            && chats[2].all_text().contains("edited-line")
    );
    assert!(chats[3].all_text().contains("The user skipped this block"));
    assert!(chats[4].all_text().contains("go on"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_restores_the_terminal_and_kills_the_kernels() {
    let dir = tempfile::tempdir().expect("dir");
    let pidfile = dir.path().join("pid");
    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "cd '{dir}'\nexec 3<&0\n'{bin}' --demo --sandbox off --data-dir '{dir}/data' <&3 &\necho $! > '{pid}'\nwait $!\necho EXIT=$?\nstty -a | tr ' ;' '\\n\\n' | grep -E '^-?(icanon|echo)$' | tr '\\n' ' '\necho\nsleep 60\n",
            dir = dir.path().display(),
            bin = env!("CARGO_BIN_EXE_oi-tui"),
            pid = pidfile.display(),
        ),
    )
    .expect("script");
    let tmux = Tmux::start(
        &format!("bash --noprofile --norc '{}'", script.display()),
        120,
        30,
    );
    tmux.wait_for("Input").await;
    // A kernel with a background job, so that there is something to clean up. No sandbox:
    // under bubblewrap the kernel has a process namespace of its own, where `$$` and `ps`
    // do not show the host's numbers (the sandbox tests cover kills there).
    tmux.type_text("!sleep 1000 & echo KERNEL=$(ps -o sid= -p $$ | tr -d ' ')");
    tmux.send(&["Enter"]);
    // The typed command shows `KERNEL=$$`; its output shows digits.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let kernel: i32 = loop {
        let screen = tmux.capture();
        let found = screen
            .split("KERNEL=")
            .skip(1)
            .filter_map(|s| s.split(|c: char| !c.is_ascii_digit()).next())
            .find_map(|digits| digits.parse().ok());
        if let Some(pid) = found {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no kernel pid on screen:\n{screen}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(oi_tui::exec::reaper::session_processes(kernel).len() >= 2);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signalling the process this test started.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    tmux.wait_for("EXIT=143").await;
    // The stty line follows the exit status.
    let screen = tmux.wait_for("icanon").await;
    assert!(
        screen.contains("icanon echo") || screen.contains("echo icanon"),
        "{screen}"
    );
    assert!(
        !screen.contains("Input"),
        "the alternate screen is gone:\n{screen}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !oi_tui::exec::reaper::session_processes(kernel).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the kernel's session survives"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
