//! Sandbox figures: the cold start of a Python and a shell kernel (start, run a trivial
//! block, stop) with no sandbox, under bubblewrap and under Landlock. Target: a sandbox adds
//! at most 15 ms. Then the cost of deny rules enforced as programs start (the trampoline as
//! tracer): the time added to each `execve` (1,000 `/bin/true` from a shell and from
//! Python; target < 1 ms), and to a program that starts nothing (target 0).
//!
//! Run with `cargo bench --bench sandbox`. Prints one line a figure; asserts nothing, since
//! figures on a shared machine are for reading, not for failing a build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::time::{Duration, Instant};

use oi_tui::exec::{Block, KernelConfig, Kernels, Language, RunStatus};
use oi_tui::sandbox::{Backend, Network, SandboxMode, SandboxSettings};

mod support;
use support::{median, ms};

const RUNS: usize = 15;

fn main() {
    support::runtime().block_on(async {
        for (language, code) in [(Language::Python, "print(1)"), (Language::Shell, "echo 1")] {
            let none = cold_start(language, code, Vec::new()).await;
            println!(
                "cold start     {:<8} none        median {:>7.1} ms",
                language.name(),
                ms(none)
            );
            for backend in [Backend::Bubblewrap, Backend::Landlock] {
                let prefix = prefix(backend);
                let t = cold_start(language, code, prefix).await;
                println!(
                    "cold start     {:<8} {:<11} median {:>7.1} ms   ({:+.1} ms, target <= +15 ms)",
                    language.name(),
                    backend.name(),
                    ms(t),
                    ms(t) - ms(none)
                );
            }
        }
    });
    exec_checks();
}

/// Wall time of `program` run by the trampoline under Landlock, with or without a deny rule
/// (so traced or not): the median of a few runs.
fn traced_run(program: &[&str], deny: bool) -> Duration {
    let tmp = std::env::temp_dir();
    let mut times = Vec::new();
    for _ in 0..5 {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
        cmd.args(["__sandbox-exec", "--landlock", "--write"])
            .arg(&tmp);
        if deny {
            cmd.args(["--deny", "rm"]);
        }
        cmd.arg("--").args(program);
        let start = Instant::now();
        let status = cmd.status().expect("trampoline");
        times.push(start.elapsed());
        assert!(status.success(), "{program:?}");
    }
    median(times)
}

fn exec_checks() {
    const EXECS: f64 = 1000.0;
    let cases: [(&str, &[&str], bool); 3] = [
        (
            "1,000 execs from sh",
            &[
                "sh",
                "-c",
                "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done",
            ],
            true,
        ),
        (
            "1,000 execs from python",
            &[
                "python3",
                "-c",
                "import subprocess\nfor _ in range(1000): subprocess.run(['/bin/true'])",
            ],
            true,
        ),
        (
            "no exec (python loop)",
            &["python3", "-c", "sum(range(20_000_000))"],
            false,
        ),
    ];
    for (name, program, per_exec) in cases {
        let plain = traced_run(program, false);
        let traced = traced_run(program, true);
        let added = ms(traced) - ms(plain);
        if per_exec {
            println!(
                "exec check     {name:<24} untraced {:>7.1} ms  traced {:>7.1} ms  ({:+.3} ms per exec, target < 1 ms)",
                ms(plain),
                ms(traced),
                added / EXECS
            );
        } else {
            println!(
                "exec check     {name:<24} untraced {:>7.1} ms  traced {:>7.1} ms  ({added:+.1} ms, target 0)",
                ms(plain),
                ms(traced)
            );
        }
    }
}

/// The prefix of a backend, with the trampoline being the oi-tui binary (not this bench).
fn prefix(backend: Backend) -> Vec<OsString> {
    let settings = SandboxSettings {
        mode: SandboxMode::WorkspaceWrite,
        network: Network::On,
        explicit: true,
    };
    oi_tui::sandbox::prefix_with(
        backend,
        settings,
        &std::env::temp_dir(),
        std::path::Path::new(env!("CARGO_BIN_EXE_oi-tui")),
    )
    .unwrap_or_else(|e| panic!("the sandbox cannot be set up: {e}"))
}

async fn cold_start(language: Language, code: &str, prefix: Vec<OsString>) -> Duration {
    let mut times = Vec::new();
    for _ in 0..RUNS {
        let kernels = Kernels::new(KernelConfig {
            cwd: std::env::temp_dir(),
            launch_prefix: prefix.clone(),
            ..KernelConfig::default()
        });
        let start = Instant::now();
        let r = kernels.run(&Block::new(language, code), &mut |_| {}).await;
        times.push(start.elapsed());
        assert_eq!(r.status, RunStatus::Success, "{}", r.output);
        drop(kernels);
    }
    median(times)
}
