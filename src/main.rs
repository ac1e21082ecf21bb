//! The `oi-tui` binary: parse the arguments, pick a face, nothing else.

use std::io::{IsTerminal, Read};

use clap::Parser;

use oi_tui::cli::{Cli, Command, Options};
use oi_tui::exec::Language;
use oi_tui::{config, headless, models, shutdown};

/// The bounds of one of this process's areas that `/proc/self/stat` gives (fields counted
/// from 1: arg_start is 48, env_start 50), with `/proc/self/FILE`'s bytes, which are that
/// area's; None when they do not agree.
fn own_area(first_field: usize, file: &str) -> Option<(usize, Vec<u8>)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command's `)` start with the 3rd.
    let rest = stat.rsplit_once(')')?.1.to_string();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let start: usize = fields.get(first_field - 3)?.parse().ok()?;
    let end: usize = fields.get(first_field - 2)?.parse().ok()?;
    let bytes = std::fs::read(format!("/proc/self/{file}")).ok()?;
    (end > start && bytes.len() == end - start).then_some((start, bytes))
}

/// Moves this process's environment into memory of its own and blanks the area the kernel
/// shows as `/proc/PID/environ` (Linux): oi-tui is not dumpable, but a root block, or one
/// under Landlock, can still read that file, and it would hold the provider's key.
/// Called first, while this process has one thread.
fn hide_environment() {
    let vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os().collect();
    // A name `setenv` cannot take would keep pointing into the area: leave it all then.
    if vars.iter().any(|(k, _)| {
        use std::os::unix::ffi::OsStrExt;
        k.is_empty() || k.as_bytes().contains(&b'=')
    }) {
        return;
    }
    let Some((start, bytes)) = own_area(50, "environ") else {
        return;
    };
    for (key, value) in &vars {
        // SAFETY: single-threaded (nothing else reads the environment now); each name was
        // checked above. glibc's setenv copies the pair into memory of its own.
        unsafe { std::env::set_var(key, value) };
    }
    // SAFETY: `start .. start + len` is this process's environment area, whose bytes /proc
    // just returned: writable memory of this process, which no variable points into any
    // more (each was set anew above).
    unsafe { std::ptr::write_bytes(start as *mut u8, 0, bytes.len()) };
}

/// Blanks the value of `--api-key` in this process's command line as `/proc/PID/cmdline`
/// shows it (Linux): a process's command line is readable by every process, a block under
/// Landlock or without a sandbox included. The arguments were parsed already; the memory
/// is this process's own, between the kernel's `arg_start` and `arg_end`.
fn hide_secret_arguments() {
    let Some((start, cmdline)) = own_area(48, "cmdline") else {
        return;
    };
    let mut offset = 0;
    let mut blank_next = false;
    for arg in cmdline.split(|&b| b == 0) {
        let value = if blank_next {
            Some((offset, arg.len()))
        } else {
            arg.strip_prefix(b"--api-key=")
                .map(|v| (offset + arg.len() - v.len(), v.len()))
        };
        blank_next = arg == b"--api-key";
        if let Some((at, len)) = value
            && len > 0
        {
            // SAFETY: `start + at .. start + at + len` lies inside this process's argument
            // area (the kernel's arg_start..arg_end, whose bytes /proc just returned), which
            // is writable memory of this process; nothing holds a reference to it (clap
            // copied the arguments).
            unsafe { std::ptr::write_bytes((start + at) as *mut u8, b'*', len) };
        }
        offset += arg.len() + 1;
    }
}

/// Exit statuses: 1 for provider or config errors, 2 for usage errors.
const CONFIG_ERROR: i32 = 1;
const USAGE_ERROR: i32 = 2;

fn main() {
    // The sandbox trampoline restricts itself and becomes the kernel: no runtime, no clap.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == oi_tui::sandbox::TRAMPOLINE)
    {
        std::process::exit(oi_tui::sandbox::trampoline_main(&args[2..]));
    }
    hide_environment();
    let cli = Cli::parse();
    hide_secret_arguments();
    shutdown::install_panic_hook();
    // Not dumpable: the blocks oi-tui runs (as the same user) cannot read its environment
    // (the provider's key) or memory through /proc, nor attach a debugger to it. Kernels
    // are new programs and dumpable again.
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
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
            Some(Command::Run(args)) => {
                match config::load(&cli.options.flag_settings(), &|k| std::env::var(k).ok()) {
                    Ok(settings) => match oi_tui::run::run(args, &settings).await {
                        Ok(code) => code,
                        Err(e) => {
                            eprintln!("oi-tui: {e:#}");
                            USAGE_ERROR
                        }
                    },
                    Err(message) => {
                        eprintln!("oi-tui: {message}");
                        CONFIG_ERROR
                    }
                }
            }
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
            Some(Command::Sandbox(args)) => {
                match config::load(&cli.options.flag_settings(), &|k| std::env::var(k).ok()) {
                    Ok(settings) => sandbox_command(&args.command, &settings),
                    Err(message) => {
                        eprintln!("oi-tui: {message}");
                        CONFIG_ERROR
                    }
                }
            }
            Some(Command::Trust(args)) => {
                match config::load(&cli.options.flag_settings(), &|k| std::env::var(k).ok()) {
                    Ok(settings) => oi_tui::trust_cmd::run(&args, &settings),
                    Err(message) => {
                        eprintln!("oi-tui: {message}");
                        CONFIG_ERROR
                    }
                }
            }
            Some(Command::Mcp(args)) => {
                let options = args.options(cli.options);
                match config::load(&options.flag_settings(), &|k| std::env::var(k).ok()) {
                    Ok(settings) => oi_tui::mcp::run(args, settings).await,
                    Err(message) => {
                        eprintln!("oi-tui: {message}");
                        CONFIG_ERROR
                    }
                }
            }
            Some(Command::Replay(args)) => oi_tui::replay::run(args, &cli.options).await,
            None => model_loop(cli.options).await,
        }
    });
    shutdown::exit(status)
}

async fn model_loop(options: Options) -> i32 {
    if options.mcp_listen.is_some() && options.task.is_some() {
        eprintln!(
            "oi-tui: --mcp-listen serves MCP while the workbench is open; it does not go with --task (for a server without the workbench: oi-tui mcp --listen ADDR)"
        );
        return USAGE_ERROR;
    }
    if options.json && options.task.is_none() {
        eprintln!("oi-tui: --json goes with --task");
        return USAGE_ERROR;
    }
    let Some(settings) = config::load_said(&options.flag_settings()) else {
        return CONFIG_ERROR;
    };
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
        // The flag, or the config's `[mcp_server] listen`.
        let mcp_listen = options
            .mcp_listen
            .clone()
            .or_else(|| settings.mcp_server.listen.clone());
        return oi_tui::tui::run(
            settings,
            oi_tui::tui::Start {
                demo: options.demo,
                resume: options.resume.as_deref(),
                browse: options.sessions,
                mcp_listen: mcp_listen.as_deref(),
                replay: None,
            },
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

/// `oi-tui sandbox status` and `oi-tui sandbox -- CMD…`.
fn sandbox_command(command: &[std::ffi::OsString], settings: &config::Settings) -> i32 {
    let resolved = settings.sandbox();
    match command.split_first() {
        None => {
            eprintln!("oi-tui sandbox: say `status`, or give a command after `--`");
            USAGE_ERROR
        }
        Some((first, [])) if first == "status" => {
            oi_tui::stdout::print(&oi_tui::sandbox::status_text(&resolved, &settings.cwd));
            if resolved.refusal.is_some() {
                CONFIG_ERROR
            } else {
                0
            }
        }
        Some(_) => {
            if let Some(refusal) = &resolved.refusal {
                eprintln!("oi-tui sandbox: {refusal}");
                return CONFIG_ERROR;
            }
            if let Some(warning) = &resolved.warning {
                eprintln!("oi-tui: warning: {warning}");
            }
            let mut line = resolved.prefix.clone();
            line.extend(command.iter().cloned());
            let Some((program, rest)) = line.split_first() else {
                return USAGE_ERROR;
            };
            // The environment blocks get (without secrets; `[env]` applies), with the
            // terminal's own TERM: the command runs in it, not in a kernel's PTY.
            let mut cmd = std::process::Command::new(program);
            cmd.args(rest)
                .current_dir(&settings.cwd)
                .env_clear()
                .envs(settings.kernel_env())
                .env("OI_TUI", "1");
            if let Some(term) = std::env::var_os("TERM") {
                cmd.env("TERM", term);
            }
            match cmd.status() {
                // A command killed by a signal ends this one as a shell says it: 128 + it.
                Ok(status) => status.code().unwrap_or_else(|| {
                    128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(1)
                }),
                Err(e) => {
                    eprintln!(
                        "oi-tui sandbox: cannot run {}: {e}",
                        oi_tui::safe_text::visible(&program.to_string_lossy())
                    );
                    127
                }
            }
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
        oi_tui::stdout::println(&format!("{:<11} {found}", lang.name()));
    }
}
