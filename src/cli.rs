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
    pub command: Option<Command>,
    #[command(flatten)]
    pub options: Options,
}

/// The options of the model loop (headless `--task`, and the workbench).
#[derive(Debug, Args, Default)]
pub struct Options {
    /// Run this task headless, printing a transcript; `-` reads the task from standard input.
    #[arg(long, value_name = "TEXT")]
    pub task: Option<String>,
    /// With --task: print the engine's events as JSON Lines instead of the transcript.
    #[arg(long)]
    pub json: bool,
    /// Run proposed blocks without asking (= --approval auto): what a rule denies never
    /// runs, and blocks that delete outside the workspace, need privileges or change the
    /// system still ask.
    #[arg(short = 'y', long = "auto-run", conflicts_with = "approval")]
    pub auto_run: bool,
    /// When blocks run without a question: ask (every block), rules (blocks the [policy]
    /// allow rules cover run, the rest ask) or auto (like -y).
    #[arg(long, value_enum, value_name = "MODE")]
    pub approval: Option<ApprovalArg>,
    /// The model, as provider/name: openai/NAME, ollama/NAME or anthropic/NAME.
    #[arg(short, long, value_name = "PROVIDER/NAME")]
    pub model: Option<String>,
    /// The server's base URL (OpenAI-compatible servers: usually ending in /v1).
    #[arg(long, value_name = "URL")]
    pub api_base: Option<String>,
    /// The API key (else OPENAI_API_KEY or ANTHROPIC_API_KEY).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// Do not offer the model the execute tool: take fenced code blocks from its text.
    #[arg(long)]
    pub no_tools: bool,
    /// Replace the built-in system prompt.
    #[arg(long, value_name = "TEXT")]
    pub system_message: Option<String>,
    /// Add instructions to the system prompt.
    #[arg(long, value_name = "TEXT")]
    pub custom_instructions: Option<String>,
    /// Do not add the nearest AGENTS.md (from the working directory up to the repository
    /// root) to the system prompt; nothing is read (config: `agents_md = false`).
    #[arg(long)]
    pub no_agents_md: bool,
    /// The model's context window in tokens; the history is trimmed to fit.
    #[arg(long, value_name = "TOKENS", value_parser = context_window)]
    pub context_window: Option<u32>,
    /// The most tokens one reply may have.
    #[arg(long, value_name = "TOKENS", value_parser = at_least_one)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature, 0 to 2.
    #[arg(long, value_name = "T", value_parser = temperature, allow_negative_numbers = true)]
    pub temperature: Option<f32>,
    /// Model rounds allowed for one message (default 30).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub max_turns: Option<u32>,
    /// Stop any block that runs longer than this many seconds.
    #[arg(long, value_name = "SECS", value_parser = seconds, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    /// The directory the kernels run in (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub cwd: Option<PathBuf>,
    /// The config file (default: the platform one, such as ~/.config/oi-tui/config.toml).
    #[arg(long, value_name = "PATH", global = true)]
    pub config: Option<PathBuf>,
    /// Use the [profiles.NAME] section of the config file.
    #[arg(long, value_name = "NAME", global = true)]
    pub profile: Option<String>,
    /// Where oi-tui keeps its data (default: the platform data directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// Seconds to wait for the model server to accept a connection (default 10).
    #[arg(long, value_name = "SECS", value_parser = seconds, allow_negative_numbers = true)]
    pub connect_timeout: Option<f64>,
    /// Seconds the model server may stay silent before a reply is given up (default 300).
    #[arg(long, value_name = "SECS", value_parser = seconds, allow_negative_numbers = true)]
    pub idle_timeout: Option<f64>,
    /// Times a failed request to the model server is tried again (default 4).
    #[arg(long, value_name = "N")]
    pub max_retries: Option<u32>,
    /// The most bytes one reply of the model may have; a longer one is cut there, what came
    /// before it kept (default 4194304, 4 MB).
    #[arg(long, value_name = "BYTES", value_parser = reply_bytes)]
    pub max_reply_bytes: Option<u64>,
    /// Seconds one reply of the model may take; a longer one is cut there, what came before
    /// it kept (default 1800).
    #[arg(long, value_name = "SECS", value_parser = reply_seconds, allow_negative_numbers = true)]
    pub reply_timeout: Option<f64>,
    /// Resume a saved session (an id, any unique prefix of one, or `last`, the default).
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "last")]
    pub resume: Option<String>,
    /// Open the workbench on the session browser.
    #[arg(long)]
    pub sessions: bool,
    /// While the workbench is open, serve MCP (Streamable HTTP) at this address
    /// (127.0.0.1:PORT, or a bare PORT): blocks other agents send appear in the code pane,
    /// with the caller's name, and wait for your decision like any block.
    #[arg(long, value_name = "ADDR")]
    pub mcp_listen: Option<String>,
    /// Open the workbench on a built-in scripted model, to try it with nothing installed.
    #[arg(long)]
    pub demo: bool,
    /// The colour theme: dark, light, high-contrast, or the path of a theme file.
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    /// Send the images a block makes to the model with its result: auto (when the model's
    /// name is of a family known to see images, or its server took images before), on or
    /// off (config: `vision = "auto"`).
    #[arg(long, value_name = "auto|on|off", value_parser = crate::llm::vision::VisionMode::parse)]
    pub vision: Option<crate::llm::vision::VisionMode>,
    /// How the workbench draws a block's images: auto (ask the terminal), kitty, sixel,
    /// iterm2, halfblocks, or off.
    #[arg(long, value_name = "MODE", value_parser = crate::config::tui::ImageMode::parse)]
    pub images: Option<crate::config::tui::ImageMode>,
    /// List the configured provider's models, or, with none configured, what the usual
    /// local servers (Ollama, llama.cpp, LM Studio) offer.
    #[arg(long)]
    pub list_models: bool,
    #[command(flatten)]
    pub sandboxing: SandboxFlags,
}

/// The sandbox's flags (and where kernels run), for the model loop and for `oi-tui mcp`
/// alike.
#[derive(Debug, Args, Default, Clone)]
pub struct SandboxFlags {
    /// Run the kernels on another machine over SSH: an executor of config.toml
    /// ([executors.NAME]), or anything ssh takes (an alias of ~/.ssh/config, user@host,
    /// host:port); `local` for this machine.
    #[arg(long, value_name = "HOST")]
    pub on: Option<String>,
    /// The sandbox around kernels: off, read-only, or workspace-write (the default: the
    /// working directory and temp dirs writable, everything else read-only).
    #[arg(long, value_name = "MODE", value_parser = crate::sandbox::SandboxMode::parse)]
    pub sandbox: Option<crate::sandbox::SandboxMode>,
    /// Whether blocks may use the network: on (the default) or off.
    #[arg(long, value_name = "on|off", value_parser = crate::sandbox::Network::parse)]
    pub network: Option<crate::sandbox::Network>,
    /// Safe mode: blocks run in the sandbox with the network off.
    #[arg(long)]
    pub safe_mode: bool,
}

impl Options {
    /// The settings these flags carry, for merging with the config file and environment.
    pub fn flag_settings(&self) -> crate::config::FlagSettings {
        crate::config::FlagSettings {
            config: self.config.clone(),
            profile: self.profile.clone(),
            no_tools: self.no_tools,
            safe_mode: self.sandboxing.safe_mode,
            settings: crate::config::FileSettings {
                model: self.model.clone(),
                api_base: self.api_base.clone(),
                api_key: self.api_key.clone(),
                auto_run: self.auto_run.then_some(true),
                tools: None,
                system_message: self.system_message.clone(),
                custom_instructions: self.custom_instructions.clone(),
                agents_md: self.no_agents_md.then_some(false),
                context_window: self.context_window,
                max_tokens: self.max_tokens,
                temperature: self.temperature,
                max_turns: self.max_turns,
                timeout: self.timeout,
                cwd: self.cwd.clone(),
                data_dir: self.data_dir.clone(),
                connect_timeout: self.connect_timeout,
                idle_timeout: self.idle_timeout,
                max_reply_bytes: self.max_reply_bytes,
                reply_timeout: self.reply_timeout,
                max_output: None,
                max_retries: self.max_retries,
                theme: self.theme.clone(),
                keys: None,
                env: None,
                approval: self.approval.map(ApprovalArg::mode),
                policy: None,
                sandbox: (self.sandboxing.sandbox.is_some() || self.sandboxing.network.is_some())
                    .then_some(crate::sandbox::SandboxFile {
                        mode: self.sandboxing.sandbox,
                        network: self.sandboxing.network,
                    }),
                mcp_servers: None,
                mcp_server: None,
                vision: self.vision,
                tui: self.images.map(|images| crate::config::tui::TuiFile {
                    images: Some(images),
                }),
                executors: None,
                on: self.sandboxing.on.clone(),
            },
        }
    }
}

/// `--approval`'s values (the protocol's `ApprovalMode`, which knows nothing of clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ApprovalArg {
    Ask,
    Rules,
    Auto,
}

impl ApprovalArg {
    pub fn mode(self) -> crate::protocol::ApprovalMode {
        use crate::protocol::ApprovalMode;
        match self {
            ApprovalArg::Ask => ApprovalMode::Ask,
            ApprovalArg::Rules => ApprovalMode::Rules,
            ApprovalArg::Auto => ApprovalMode::Auto,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run code in oi-tui's persistent kernels, block after block, and report each result.
    Run(RunArgs),
    /// List the languages and whether each one's interpreter is installed.
    Languages,
    /// Browse, search, show, export, rename and delete saved sessions.
    Sessions(crate::sessions::SessionsArgs),
    /// Show the sandbox in force (`sandbox status`), or run one command in it
    /// (`sandbox -- CMD…`), with the same flags, config and environment as blocks get.
    Sandbox(SandboxArgs),
    /// Review the rules of this directory's project file (.oi-tui.toml) and trust them, so
    /// that they apply; `--revoke` forgets the trust.
    Trust(crate::trust_cmd::TrustArgs),
    /// Serve oi-tui's persistent kernels to other agents over MCP (stdio, or Streamable
    /// HTTP with --listen), under the same policy and sandbox; `mcp list` shows the MCP
    /// servers oi-tui itself uses.
    Mcp(crate::mcp::McpArgs),
    /// Run a saved session's blocks again in fresh kernels, in the directory it ran in (or
    /// --cwd DIR), in the workbench with each proposed in turn or headless with -y, and
    /// report block by block where the output now differs (exit status 1 when any does).
    Replay(crate::replay::ReplayArgs),
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// `status`, or the command to run after `--`.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "status | -- CMD"
    )]
    pub command: Vec<std::ffi::OsString>,
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
    #[arg(long, value_name = "SECS", value_parser = seconds, allow_negative_numbers = true)]
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
    /// Keep the images blocks make (figures they show, image files they write) in DIR;
    /// without it they are kept in a temporary directory, removed when the command ends.
    #[arg(long, value_name = "DIR")]
    pub keep_images: Option<PathBuf>,
}

/// A count that must be at least 1 (`--max-turns`, `--max-tokens`).
fn at_least_one(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("give a whole number, at least 1".to_string()),
    }
}

/// A context window on the command line, within the range settings allow.
fn context_window(text: &str) -> Result<u32, String> {
    let n: u32 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of tokens"))?;
    crate::config::context_window_setting(n)
}

/// A sampling temperature on the command line: 0 to 2.
fn temperature(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        _ => Err("give a number from 0 to 2".to_string()),
    }
}

/// A reply size on the command line, within the range settings allow.
fn reply_bytes(text: &str) -> Result<u64, String> {
    let value: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of bytes"))?;
    crate::config::reply_bytes_setting(value)
}

/// A reply time limit on the command line, within the range settings allow.
fn reply_seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    crate::config::reply_timeout_setting(value).map(|_| value)
}

/// A number of seconds on the command line, within the range settings allow.
fn seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    crate::config::seconds_setting(value).map(|_| value)
}
