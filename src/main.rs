//! The `oi-tui` binary: parse the arguments, pick a face, nothing else.

use clap::Parser;

use oi_tui::cli::{Cli, Command};
use oi_tui::exec::{Language, reaper};

fn main() {
    let cli = Cli::parse();
    reaper::install_panic_hook();
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
        match cli.command {
            Command::Run(args) => oi_tui::run::run(args).await,
            Command::Languages => {
                languages();
                Ok(0)
            }
        }
    });
    reaper::kill_all();
    oi_tui::run::restore_terminal();
    match status {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("oi-tui: {e:#}");
            std::process::exit(2);
        }
    }
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
