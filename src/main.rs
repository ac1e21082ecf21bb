//! The `oi-tui` binary: parse the arguments, pick a face, nothing else.

use std::io::{IsTerminal, Read};

use clap::Parser;

use oi_tui::cli::{Cli, Command, Options};
use oi_tui::exec::Language;
use oi_tui::{config, headless, models, shutdown};

/// Exit statuses: 1 for provider or config errors, 2 for usage errors.
const CONFIG_ERROR: i32 = 1;
const USAGE_ERROR: i32 = 2;

fn main() {
    let cli = Cli::parse();
    shutdown::install_panic_hook();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("oi-tui: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let status = runtime.block_on(async {
        shutdown::exit_on_terminate();
        match cli.command {
            Some(Command::Run(args)) => match oi_tui::run::run(args).await {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("oi-tui: {e:#}");
                    USAGE_ERROR
                }
            },
            Some(Command::Languages) => {
                languages();
                0
            }
            Some(Command::Sessions(args)) => {
                match config::load(&cli.options.flag_settings(), &|k| std::env::var(k).ok()) {
                    Ok(settings) => oi_tui::sessions::run(args, &settings),
                    Err(message) => {
                        eprintln!("oi-tui: {message}");
                        CONFIG_ERROR
                    }
                }
            }
            None => model_loop(cli.options).await,
        }
    });
    shutdown::exit(status)
}

async fn model_loop(options: Options) -> i32 {
    if options.json && options.task.is_none() {
        eprintln!("oi-tui: --json goes with --task");
        return USAGE_ERROR;
    }
    let settings = match config::load(&options.flag_settings(), &|k| std::env::var(k).ok()) {
        Ok(settings) => settings,
        Err(message) => {
            eprintln!("oi-tui: {message}");
            return CONFIG_ERROR;
        }
    };
    for warning in &settings.warnings {
        eprintln!("oi-tui: warning: {warning}");
    }
    if options.list_models {
        return models::list(&settings).await;
    }
    let Some(task) = options.task else {
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            eprintln!(
                "oi-tui: the workbench needs a terminal; run a task headless with --task \"...\" (see oi-tui --help)"
            );
            return USAGE_ERROR;
        }
        return oi_tui::tui::run(
            settings,
            options.demo,
            options.resume.as_deref(),
            options.sessions,
        )
        .await;
    };
    let task = if task == "-" {
        let mut text = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut text) {
            eprintln!("oi-tui: cannot read the task from standard input: {e}");
            return USAGE_ERROR;
        }
        text
    } else {
        task
    };
    if task.trim().is_empty() {
        eprintln!("oi-tui: the task is empty");
        return USAGE_ERROR;
    }
    headless::run(settings, task, options.json, options.resume.as_deref()).await
}

fn languages() {
    for lang in Language::ALL {
        let found = if lang.runs_in_kernel() {
            match lang.locate() {
                Some(path) => path.display().to_string(),
                None => format!("missing: {}", lang.install_hint()),
            }
        } else {
            "written to a file, not run".to_string()
        };
        println!("{:<11} {found}", lang.name());
    }
}
