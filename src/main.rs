//! The `oi-tui` binary: parse the arguments, pick a face, nothing else.

use clap::Parser;

use oi_tui::cli::{Cli, Command};
use oi_tui::exec::Language;
use oi_tui::shutdown;

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
        match cli.command {
            Command::Run(args) => oi_tui::run::run(args).await,
            Command::Languages => {
                languages();
                Ok(0)
            }
        }
    });
    match status {
        Ok(code) => shutdown::exit(code),
        Err(e) => {
            shutdown::restore_terminal();
            eprintln!("oi-tui: {e:#}");
            shutdown::exit(2);
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
