//! MCP figures: one `execute` of `print(1)` on a warm Python kernel through `oi-tui mcp -y`
//! over stdio, client to client (an rmcp client that spawns the binary), beside the kernel's
//! own latency for the same block (`Kernels::run`), and beside a Python MCP server that runs
//! `exec()` in its own process (tests/mcp/exec_server.py, with the SDK in .ci/venv; skipped,
//! saying why, when the venv is missing).
//!
//! Run with `cargo bench --bench mcp`. Prints median and p95 of 200 calls each; asserts
//! nothing beyond the calls' answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use oi_tui::exec::{Block, KernelConfig, Kernels, Language, RunStatus};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;

mod support;
use support::ms;

const CALLS: usize = 200;
const WARM_UP: usize = 20;

fn main() {
    support::runtime().block_on(async {
        let kernel = kernel_latency().await;
        report("kernel (Kernels::run)", &kernel, None);
        let oi = mcp_latency(oi_tui_command()).await;
        report("oi-tui mcp (stdio)", &oi, Some(&kernel));
        let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python");
        if python.exists() {
            let mut cmd = tokio::process::Command::new(python);
            cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/exec_server.py"));
            let py = mcp_latency(cmd).await;
            report("python SDK exec() server", &py, Some(&kernel));
        } else {
            println!(
                "python SDK exec() server: skipped: {} is missing (run .ci/run once to make it)",
                python.display()
            );
        }
    });
}

fn oi_tui_command() -> tokio::process::Command {
    let home = tempfile::tempdir().unwrap().keep();
    std::fs::write(home.join("config.toml"), "").unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.current_dir(&home)
        .env("XDG_CONFIG_HOME", home.join("xdg"))
        .env("XDG_DATA_HOME", home.join("share"))
        .env_remove("OI_TUI_CONFIG")
        .env_remove("OI_TUI_MODEL")
        .arg("--config")
        .arg(home.join("config.toml"))
        .arg("--data-dir")
        .arg(home.join("data"))
        .args(["mcp", "-y"]);
    cmd
}

async fn kernel_latency() -> Vec<Duration> {
    let kernels = Kernels::new(KernelConfig {
        cwd: std::env::temp_dir(),
        ..KernelConfig::default()
    });
    let block = Block::new(Language::Python, "print(1)");
    for _ in 0..WARM_UP {
        kernels.run(&block, &mut |_| {}).await;
    }
    let mut times = Vec::new();
    for _ in 0..CALLS {
        let start = Instant::now();
        let r = kernels.run(&block, &mut |_| {}).await;
        times.push(start.elapsed());
        assert_eq!(r.status, RunStatus::Success);
    }
    times
}

async fn mcp_latency(command: tokio::process::Command) -> Vec<Duration> {
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(transport).await.unwrap();
    let mut args = serde_json::Map::new();
    args.insert("language".into(), "python".into());
    args.insert("code".into(), "print(1)".into());
    let params = CallToolRequestParams::new("execute").with_arguments(args);
    for _ in 0..WARM_UP {
        client.call_tool(params.clone()).await.unwrap();
    }
    let mut times = Vec::new();
    for _ in 0..CALLS {
        let start = Instant::now();
        let r = client.call_tool(params.clone()).await.unwrap();
        times.push(start.elapsed());
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    let _ = client.cancel().await;
    times
}

fn report(what: &str, times: &[Duration], beside: Option<&[Duration]>) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    let p95 = sorted[sorted.len() * 95 / 100];
    let mut line = format!(
        "{what:<28} median {:>7.2} ms   p95 {:>7.2} ms",
        ms(median),
        ms(p95)
    );
    if let Some(base) = beside {
        let mut base = base.to_vec();
        base.sort();
        let over = ms(median) - ms(base[base.len() / 2]);
        line.push_str(&format!("   (+{over:.2} ms over the kernel's median)"));
    }
    println!("{line}");
}
