//! `oi-tui run`: blocks straight into the kernels, with no model. Output streams to this
//! terminal as it comes; keystrokes reach the running block (`input()`, a `sudo` password);
//! Ctrl-C interrupts the block, and a second Ctrl-C with no block running exits.

use anyhow::{Context, Result, bail};
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::Arc;

use crate::cli::RunArgs;
use crate::exec::{Block, KernelConfig, Kernels, Language, RunResult, RunStatus};
use crate::shutdown;
use crate::term::{self, KeyPump};

pub async fn run(args: RunArgs, settings: &crate::config::Settings) -> Result<i32> {
    let language = Language::parse(&args.language).with_context(|| {
        format!(
            "unknown language `{}`; known: {}",
            args.language,
            Language::ALL.map(Language::name).join(", ")
        )
    })?;
    let blocks = collect_blocks(&args)?;
    if blocks.is_empty() {
        bail!("nothing to run: give code with -c CODE, or a FILE (`-` for standard input)");
    }
    let mut config = KernelConfig {
        max_output: args.max_output,
        ..KernelConfig::default()
    };
    if let Some(cwd) = &args.cwd {
        config.cwd = std::fs::canonicalize(cwd)
            .with_context(|| format!("--cwd {}: no such directory", cwd.display()))?;
    }
    // As every kernel: in the sandbox asked for (the config file, the flags), with the
    // environment blocks get, the deny rules enforced as programs start.
    let sandbox = crate::sandbox::resolve(settings.sandbox, &config.cwd);
    if let Some(warning) = &sandbox.warning {
        eprintln!("oi-tui: warning: {warning}");
    }
    config.launch_prefix = sandbox.prefix.clone();
    config.launch_refusal = sandbox.refusal.clone();
    config.env = settings.kernel_env();
    config.clear_env = true;
    if let Some(dir) = &args.keep_images {
        crate::secrets::private_dir(dir)
            .with_context(|| format!("--keep-images {}: cannot use it", dir.display()))?;
        config.image_dir = Some(
            std::fs::canonicalize(dir)
                .with_context(|| format!("--keep-images {}: no such directory", dir.display()))?,
        );
    }
    if let Some((rows, cols)) = terminal_size() {
        config.rows = rows;
        config.cols = cols;
    }
    let timeout = match args.timeout {
        Some(secs) => Some(
            crate::config::seconds_setting(secs)
                .map_err(|range| anyhow::anyhow!("--timeout {secs}: {range}"))?,
        ),
        None => None,
    };
    let kernels = Arc::new(Kernels::new(config));
    let stdin_is_terminal = std::io::stdin().is_terminal() && !args.json;
    let reading_stdin_for_code = args.files.iter().any(|f| f.as_os_str() == "-");
    if stdin_is_terminal && !reading_stdin_for_code && term::keys_mode() {
        forward_keys(kernels.clone());
    }
    watch_signals(kernels.clone());

    let mut last = 0;
    for code in blocks {
        let mut block = Block::new(language, code);
        block.timeout = timeout;
        block.stdin_eof = !stdin_is_terminal || reading_stdin_for_code;
        let json = args.json;
        let mut sink = |bytes: &[u8]| {
            if !json {
                crate::stdout::write(bytes);
            }
        };
        let result = kernels.run(&block, &mut sink).await;
        report(&result, args.json, args.keep_images.is_some())?;
        last = exit_status(&result);
        if result.status == RunStatus::Interrupted {
            break;
        }
    }
    kernels.shutdown().await;
    term::line_mode();
    Ok(last)
}

fn collect_blocks(args: &RunArgs) -> Result<Vec<String>> {
    let mut blocks = args.code.clone();
    for file in &args.files {
        if file.as_os_str() == "-" {
            let mut code = String::new();
            std::io::stdin()
                .read_to_string(&mut code)
                .context("cannot read the block from standard input")?;
            blocks.push(code);
        } else {
            blocks.push(read_file(file)?);
        }
    }
    Ok(blocks)
}

fn read_file(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn report(result: &RunResult, json: bool, images_kept: bool) -> Result<()> {
    if json {
        crate::stdout::println(&serde_json::to_string(result)?);
        return Ok(());
    }
    let mut err = std::io::stderr();
    let needs_newline = !result.output.is_empty() && !result.output.ends_with('\n');
    if needs_newline {
        writeln!(err)?;
    }
    writeln!(err, "── {} · {}", result.language, result.summary())?;
    for (n, image) in result.images.iter().enumerate() {
        writeln!(err, "   {}", crate::safe_text::visible(&image.line(n + 1)))?;
    }
    if !result.images.is_empty() && !images_kept {
        writeln!(
            err,
            "   (removed when this command ends; keep them with --keep-images DIR)"
        )?;
    }
    for note in &result.notes {
        writeln!(err, "   {note}")?;
    }
    Ok(())
}

/// The process exit status that stands for a block's result.
fn exit_status(result: &RunResult) -> i32 {
    match result.status {
        RunStatus::Success | RunStatus::Written => 0,
        RunStatus::Interrupted => 130,
        RunStatus::TimedOut => 124,
        RunStatus::Unavailable => 127,
        RunStatus::Failed => match result.exit_code {
            Some(code) if (1..=255).contains(&code) => code,
            _ => 1,
        },
    }
}

fn terminal_size() -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_row > 0 && ws.ws_col > 0).then_some((ws.ws_row, ws.ws_col))
}

/// Sends keystrokes to the running block as they are typed.
fn forward_keys(kernels: Arc<Kernels>) {
    let mut keys = KeyPump::start();
    keys.set_active(true);
    tokio::spawn(async move {
        while let Some(chunk) = keys.recv().await {
            if chunk.is_empty() {
                let _ = kernels.send_eof();
                break;
            }
            // Keys typed while no block runs have nowhere to go.
            let _ = kernels.write_input(&chunk);
        }
    });
}

/// Ctrl-C interrupts the running block; with none running, it exits.
fn watch_signals(kernels: Arc<Kernels>) {
    shutdown::on_interrupt(move || {
        if !kernels.interrupt() {
            shutdown::exit(130);
        }
    });
}
