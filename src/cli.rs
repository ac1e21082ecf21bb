//! Command-line definitions.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "oi-tui",
    version,
    about = "A terminal workbench in which a language model proposes code and you stay in control",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run code in oi-tui's persistent kernels, block after block, and report each result.
    Run(RunArgs),
    /// List the languages and whether each one's interpreter is installed.
    Languages,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The language: python, shell, javascript, r, ruby, perl, java, powershell or html
    /// (aliases such as py, bash, js, rb, pl work too).
    pub language: String,
    /// A block of code; repeat to run several blocks in the same kernel.
    #[arg(short = 'c', long = "code", value_name = "CODE")]
    pub code: Vec<String>,
    /// Files whose contents run as blocks, after the -c blocks; `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Stop a block that runs longer than this many seconds.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// The directory the kernel starts in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Characters of output kept for the text form before head and tail are cut.
    #[arg(long, value_name = "N", default_value_t = 4000)]
    pub max_output: usize,
    /// Print each result as a JSON line on stdout instead of the live output.
    #[arg(long)]
    pub json: bool,
}
