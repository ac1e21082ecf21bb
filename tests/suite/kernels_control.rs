//! The kernels' controls and edges: interrupt, kill after the grace period, timeout, the
//! end marker under attack, huge and binary output, input, EOF, resize, and cleanup.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oi_tui::exec::{Block, Language, RunStatus, reaper};

use super::support::{kernels, kernels_with, run, run_block, spawn_block, wait_for_output};

/// Starts a long block, interrupts it once it is running, and returns its result.
async fn interrupt_after(
    kernels: &Arc<oi_tui::exec::Kernels>,
    language: Language,
    code: &str,
    ready: &str,
) -> oi_tui::exec::RunResult {
    let (handle, seen) = spawn_block(kernels.clone(), Block::new(language, code));
    wait_for_output(&seen, ready, Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(kernels.interrupt(), "a block is running");
    let started = Instant::now();
    let result = handle.await.expect("join");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the block ends, without a hang"
    );
    result
}

#[tokio::test]
async fn interrupt_keeps_the_python_kernel_and_its_variables() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    run(&kernels, Language::Python, "x = 5").await;
    let r = interrupt_after(
        &kernels,
        Language::Python,
        "import time\nprint('sleeping', flush=True)\ntime.sleep(100)\nprint('not reached')",
        "sleeping",
    )
    .await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(!r.state_lost, "{r:#?}");
    assert!(r.output.contains("KeyboardInterrupt"), "{:?}", r.output);
    assert!(!r.output.contains("not reached"));
    let (after, _) = run(&kernels, Language::Python, "print(x * 2)").await;
    assert_eq!(after.output.trim(), "10");
}

#[tokio::test]
async fn interrupt_keeps_the_shell_kernel_and_its_variables() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    run(&kernels, Language::Shell, "x=5; cd /tmp").await;
    let r = interrupt_after(
        &kernels,
        Language::Shell,
        "echo sleeping; sleep 100; echo not reached",
        "sleeping",
    )
    .await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert_eq!(r.exit_code, Some(130));
    assert!(!r.state_lost);
    assert!(!r.output.contains("not reached"), "{:?}", r.output);
    let (after, _) = run(&kernels, Language::Shell, "echo $x $(pwd)").await;
    assert_eq!(after.output.trim(), "5 /tmp");
}

#[tokio::test]
async fn interrupt_keeps_the_javascript_kernel_and_its_variables() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    run(&kernels, Language::JavaScript, "var x = 5;").await;
    // A busy loop, which no event-loop trick can interrupt.
    let r = interrupt_after(
        &kernels,
        Language::JavaScript,
        "console.log('spinning'); const t = Date.now(); while (Date.now() - t < 100000) {}",
        "spinning",
    )
    .await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(!r.state_lost, "{r:#?}");
    // A promise that never settles.
    let r = interrupt_after(
        &kernels,
        Language::JavaScript,
        "console.log('waiting'); await new Promise(() => {});",
        "waiting",
    )
    .await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(!r.state_lost);
    let (after, _) = run(&kernels, Language::JavaScript, "console.log(String(x * 2))").await;
    assert_eq!(after.output.trim(), "10");
}

#[tokio::test]
async fn a_block_that_ignores_sigint_is_killed_and_the_kernel_restarted() {
    let (kernels, _dir) = kernels_with(|c| c.grace = Duration::from_millis(500));
    let kernels = Arc::new(kernels);
    run(&kernels, Language::Shell, "x=5").await;
    let old_pid = kernels.pids().await[0].1;
    let r = interrupt_after(
        &kernels,
        Language::Shell,
        "trap '' INT; echo stubborn; sleep 100",
        "stubborn",
    )
    .await;
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(r.state_lost);
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"));
    let notes = r.notes.join(" ");
    assert!(notes.contains("killed"), "{notes}");
    assert!(notes.contains("state"), "{notes}");
    assert!(reaper::session_processes(old_pid).is_empty());
    // A fresh kernel, without the old state.
    let (after, _) = run(&kernels, Language::Shell, "echo \"x=[$x]\"").await;
    assert_eq!(after.output.trim(), "x=[]");
    assert_eq!(after.status, RunStatus::Success);
}

#[tokio::test]
async fn a_timeout_stops_the_block_and_keeps_the_kernel_when_it_can() {
    let (kernels, _dir) = kernels();
    run(&kernels, Language::Python, "x = 7").await;
    let started = Instant::now();
    let block = Block::new(Language::Python, "import time\ntime.sleep(100)")
        .timeout(Duration::from_millis(800));
    let (r, _) = run_block(&kernels, block).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.status, RunStatus::TimedOut, "{r:#?}");
    assert!(r.notes.join(" ").contains("time limit"), "{:?}", r.notes);
    assert!(!r.state_lost);
    let (after, _) = run(&kernels, Language::Python, "print(x)").await;
    assert_eq!(after.output.trim(), "7");
}

#[tokio::test]
async fn a_timeout_kills_what_will_not_stop() {
    let (kernels, _dir) = kernels_with(|c| c.grace = Duration::from_millis(300));
    let block =
        Block::new(Language::Shell, "trap '' INT; sleep 100").timeout(Duration::from_millis(500));
    let started = Instant::now();
    let (r, _) = run_block(&kernels, block).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.status, RunStatus::TimedOut);
    assert!(r.state_lost);
}

#[tokio::test]
async fn exit_3_in_a_shell_block() {
    let (kernels, _dir) = kernels();
    let (r, _) = run(&kernels, Language::Shell, "echo before; exit 3").await;
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.status, RunStatus::Failed);
    assert_eq!(r.output.trim(), "before");
    assert!(r.state_lost);
    assert!(r.for_model().contains("exit 3"));
}

#[tokio::test]
async fn fake_markers_in_the_output_do_not_end_the_block() {
    let (kernels, _dir) = kernels();
    let code = r#"
import sys, time
sys.stdout.write("\x1b]5379;00000000000000000000000000000000;1;0\x07")
sys.stdout.write("\x1b]5379;")
sys.stdout.flush()
time.sleep(0.3)
print("\n]5379;x;1;0 still running")
"#;
    let (r, raw) = run(&kernels, Language::Python, code).await;
    assert_eq!(r.status, RunStatus::Success);
    assert!(r.output.contains("still running"), "{:?}", r.output);
    // The fake markers are output like any other: they reach the terminal untouched.
    assert!(raw.windows(6).any(|w| w == b"\x1b]5379"));
}

#[tokio::test]
async fn output_without_a_trailing_newline() {
    let (kernels, _dir) = kernels();
    let (r, raw) = run(&kernels, Language::Shell, "printf 'no newline'").await;
    assert_eq!(r.output, "no newline");
    assert_eq!(raw, b"no newline");
    let (r, _) = run(&kernels, Language::Python, "print('a', end='')").await;
    assert_eq!(r.output, "a");
}

#[tokio::test]
async fn a_million_lines_finish_and_are_cut_with_head_and_tail() {
    let (kernels, _dir) = kernels();
    let block = Block::new(
        Language::Python,
        "import sys\n_ = sys.stdout.write(''.join(f'{i}\\n' for i in range(1_000_000)))",
    )
    .timeout(Duration::from_secs(120));
    let (r, raw) = run_block(&kernels, block).await;
    assert_eq!(r.status, RunStatus::Success, "{:?}", r.notes);
    assert!(r.output.starts_with("0\n1\n2\n"), "{:?}", &r.output[..20]);
    assert!(r.output.ends_with("999998\n999999\n"));
    let cut = r.cut.expect("the output is cut");
    assert_eq!(cut.total_lines, 1_000_000);
    assert!(cut.lines > 990_000);
    assert!(r.output.contains("lines ("), "{}", r.output);
    assert!(r.output.chars().count() <= 4200);
    // Every byte reached the live sink (the PTY turns \n into \r\n).
    assert_eq!(raw.len(), 6_888_890 + 1_000_000);
    assert_eq!(r.output_bytes, raw.len() as u64);
}

#[tokio::test]
async fn binary_bytes_in_the_output() {
    let (kernels, _dir) = kernels();
    let code = "import sys\nsys.stdout.buffer.write(bytes(range(256)) * 64)\nsys.stdout.flush()\nprint()\nprint('end')";
    let (r, raw) = run(&kernels, Language::Python, code).await;
    assert_eq!(r.status, RunStatus::Success, "{r:#?}");
    assert!(r.output.trim_end().ends_with("end"), "{:?}", r.output);
    assert!(raw.len() >= 256 * 64);
    assert!(r.output.contains('\u{fffd}'));
}

#[tokio::test]
async fn output_streams_while_the_block_runs() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    let code =
        "import time\nfor i in range(5):\n    print('tick', i, flush=True)\n    time.sleep(0.2)";
    let (handle, seen) = spawn_block(kernels.clone(), Block::new(Language::Python, code));
    wait_for_output(&seen, "tick 1", Duration::from_secs(10)).await;
    assert!(
        !handle.is_finished(),
        "the first lines arrive before the block ends"
    );
    let r = handle.await.expect("join");
    assert!(r.output.contains("tick 4"));
}

#[tokio::test]
async fn input_reaches_the_block_through_the_terminal() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    let (handle, seen) = spawn_block(
        kernels.clone(),
        Block::new(
            Language::Python,
            "name = input('name? ')\nprint('hello', name)",
        ),
    );
    wait_for_output(&seen, "name? ", Duration::from_secs(10)).await;
    kernels.write_input(b"Ada\n").expect("write");
    let r = handle.await.expect("join");
    assert_eq!(r.status, RunStatus::Success);
    assert!(r.output.contains("hello Ada"), "{:?}", r.output);
}

#[tokio::test]
async fn a_read_with_nobody_to_answer_sees_eof() {
    let (kernels, _dir) = kernels();
    let started = Instant::now();
    let block = Block::new(Language::Python, "input('password: ')").stdin_eof();
    let (r, _) = run_block(&kernels, block).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.status, RunStatus::Failed);
    assert!(r.output.contains("EOFError"), "{:?}", r.output);
    let block = Block::new(Language::Shell, "read -r line; echo \"status=$?\"").stdin_eof();
    let (r, _) = run_block(&kernels, block).await;
    assert_eq!(r.output.trim(), "status=1");
}

#[tokio::test]
async fn a_resize_reaches_the_program() {
    let (kernels, _dir) = kernels();
    let kernels = Arc::new(kernels);
    kernels.resize(30, 100);
    let (r, _) = run(&kernels, Language::Shell, "tput cols; stty size").await;
    assert_eq!(
        r.output.split_whitespace().collect::<Vec<_>>(),
        ["100", "30", "100"]
    );
    // While a block runs, the very next `tput cols` sees the new size.
    let (handle, seen) = spawn_block(
        kernels.clone(),
        Block::new(Language::Shell, "echo ready; read -r _; tput cols"),
    );
    wait_for_output(&seen, "ready", Duration::from_secs(10)).await;
    kernels.resize(40, 123);
    kernels.write_input(b"\n").expect("write");
    let r = handle.await.expect("join");
    assert!(r.output.trim_end().ends_with("123"), "{:?}", r.output);
}

#[tokio::test]
async fn a_kernel_that_died_while_idle_is_replaced_and_the_user_told() {
    let (kernels, _dir) = kernels();
    run(
        &kernels,
        Language::Shell,
        "(sleep 0.2; kill -9 $$) >/dev/null 2>&1 &",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let (r, _) = run(&kernels, Language::Shell, "echo fresh").await;
    assert_eq!(r.output.trim(), "fresh");
    assert!(r.notes.join(" ").contains("had exited"), "{:?}", r.notes);
}

#[tokio::test]
async fn no_child_process_survives_the_kernels() {
    let (kernels, _dir) = kernels();
    let (r, _) = run(
        &kernels,
        Language::Shell,
        "sleep 1000 & sleep 1001 & echo started",
    )
    .await;
    assert_eq!(r.status, RunStatus::Success);
    let (r, _) = run(
        &kernels,
        Language::Shell,
        "nohup sleep 1002 >/dev/null 2>&1 & echo NOHUP=$!; setsid sleep 1003 >/dev/null 2>&1 </dev/null & echo SETSID=$!",
    )
    .await;
    let pid_of = |key: &str| -> i32 {
        r.output
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|p| p.trim().parse().ok())
            .expect("pid")
    };
    let (nohup, setsid) = (pid_of("NOHUP="), pid_of("SETSID="));
    run(
        &kernels,
        Language::Python,
        "import subprocess\np = subprocess.Popen(['sleep', '1004'])",
    )
    .await;
    let (js, _) = run(
        &kernels,
        Language::JavaScript,
        "require('child_process').spawn('sleep', ['1005']); 'ok'",
    )
    .await;
    assert_eq!(js.status, RunStatus::Success, "{js:#?}");

    let pids = kernels.pids().await;
    assert_eq!(pids.len(), 3);
    for (_, pid) in &pids {
        assert!(
            reaper::session_processes(*pid).len() >= 2,
            "the kernel and its child"
        );
    }
    drop(kernels);

    for (lang, pid) in &pids {
        let expected: Vec<i32> = if *lang == Language::Shell {
            vec![nohup]
        } else {
            vec![]
        };
        // SIGKILL is delivered at once but takes effect when the process next runs: on a busy
        // machine, give it a moment.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut left = reaper::session_processes(*pid);
        while left != expected && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            left = reaper::session_processes(*pid);
        }
        assert_eq!(left, expected, "{lang}: only the nohup'd process may stay");
    }
    // The deliberately detached ones are alive; end them here.
    for pid in [nohup, setsid] {
        assert!(
            std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "{pid} survives"
        );
        // SAFETY: killing a test's own detached child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

/// Interrupts a sleeping block in `language` and checks that `x` (set by `set`) survives.
async fn interrupt_keeps_state(language: Language, set: &str, sleep: &str, read: &str) {
    // What is tested is that the interrupt keeps the state, not how fast a loaded machine
    // delivers it (a JVM stopping a thread can take a while): a generous grace period.
    let (kernels, _dir) = kernels_with(|c| c.grace = Duration::from_secs(15));
    let kernels = Arc::new(kernels);
    let (r, _) = run(&kernels, language, set).await;
    assert_eq!(r.status, RunStatus::Success, "{language}: {r:#?}");
    let r = interrupt_after(&kernels, language, sleep, "sleeping").await;
    assert_eq!(r.status, RunStatus::Interrupted, "{language}: {r:#?}");
    assert!(!r.state_lost, "{language}: {r:#?}");
    let (after, _) = run(&kernels, language, read).await;
    assert_eq!(after.output.trim(), "5", "{language}: {after:#?}");
}

#[tokio::test]
async fn interrupt_keeps_the_other_kernels_too() {
    interrupt_keeps_state(
        Language::Ruby,
        "x = 5",
        "puts 'sleeping'\nsleep 100",
        "puts x",
    )
    .await;
    interrupt_keeps_state(
        Language::R,
        "x <- 5",
        "cat('sleeping\\n')\nSys.sleep(100)",
        "cat(x, '\\n')",
    )
    .await;
    interrupt_keeps_state(
        Language::Perl,
        "$x = 5;",
        "print \"sleeping\\n\";\nsleep 100;",
        "print \"$x\\n\";",
    )
    .await;
    interrupt_keeps_state(
        Language::Java,
        "int x = 5;",
        "System.out.println(\"sleeping\");\nThread.sleep(100000);",
        "System.out.println(x);",
    )
    .await;
}

#[tokio::test]
async fn kernels_get_the_cwd_the_environment_and_sane_terminal_modes() {
    let (kernels, dir) = kernels_with(|c| c.env.push(("OI_TEST_VAR".into(), "from-config".into())));
    let (r, _) = run(
        &kernels,
        Language::Shell,
        "pwd; echo \"$TERM $OI_TUI $OI_TEST_VAR\"; echo \"home=${HOME:+set}\"",
    )
    .await;
    let lines: Vec<&str> = r.output.lines().collect();
    let cwd = std::fs::canonicalize(dir.path()).expect("canonical");
    assert_eq!(lines[0], cwd.display().to_string());
    assert_eq!(lines[1], "xterm-256color 1 from-config");
    assert_eq!(lines[2], "home=set", "the user's environment is inherited");

    // A block that leaves echo off does not break the next one's input.
    run(&kernels, Language::Shell, "stty -echo -icanon").await;
    let (r, _) = run(
        &kernels,
        Language::Shell,
        "stty -a | tr ' ' '\\n' | grep -xE -- '-?(echo|icanon)'",
    )
    .await;
    assert_eq!(
        r.output.split_whitespace().collect::<Vec<_>>(),
        ["icanon", "echo"]
    );
}
