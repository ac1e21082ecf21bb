//! Settings: the config file (with `[profiles.NAME]`), the environment and the command line,
//! merged with a clear precedence: flags, then environment, then profile, then config file,
//! then defaults.
//!
//! A malformed file is an error that gives the line and column; an unknown key is a warning.
//! API keys are held as `Secret`s and never printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::llm::{ModelSpec, ProviderKind, RetryPolicy, Secret};

pub use ranges::{
    MAX_SECONDS, context_window_setting, reply_bytes_setting, reply_timeout_setting,
    seconds_setting,
};
use ranges::{reply_bytes, reply_timeout, short_number};

/// The settings a config file (or one of its profiles) may hold.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct FileSettings {
    pub model: Option<String>,
    pub api_base: Option<String>,
    pub api_key: Option<String>,
    pub auto_run: Option<bool>,
    pub tools: Option<bool>,
    pub system_message: Option<String>,
    pub custom_instructions: Option<String>,
    /// Add the nearest `AGENTS.md` to the system prompt (default true; `--no-agents-md`).
    pub agents_md: Option<bool>,
    pub context_window: Option<u32>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub max_turns: Option<u32>,
    /// Seconds a block may run.
    pub timeout: Option<f64>,
    pub cwd: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    /// Seconds to wait for a connection to the model server.
    pub connect_timeout: Option<f64>,
    /// Seconds the model server may stay silent mid-reply.
    pub idle_timeout: Option<f64>,
    /// The most bytes one reply of the model may have (text and code); more is cut.
    pub max_reply_bytes: Option<u64>,
    /// Seconds one reply of the model may take at most; a longer one is cut.
    pub reply_timeout: Option<f64>,
    pub max_output: Option<usize>,
    /// Times a failed request to the model server is tried again.
    pub max_retries: Option<u32>,
    /// The workbench's colour theme.
    pub theme: Option<String>,
    /// Key bindings: action -> key (`run = "y"`, `quit = "ctrl-q"`).
    pub keys: Option<BTreeMap<String, String>>,
    /// The kernels' environment (`[env]`: `inherit`, `pass` (or `keep`), `set`).
    pub env: Option<crate::secrets::EnvSettings>,
    /// When blocks run without a question: `ask`, `rules` or `auto` (`--approval`).
    pub approval: Option<crate::protocol::ApprovalMode>,
    /// Allow / ask / deny rules (`[policy]`).
    pub policy: Option<crate::policy::RuleLists>,
    /// The sandbox around kernels (`[sandbox]`: `mode`, `network`).
    pub sandbox: Option<crate::sandbox::SandboxFile>,
    /// The user's MCP servers (`[mcp_servers.NAME]`, read by `mcp::parse_servers`).
    pub mcp_servers: Option<toml::Table>,
    /// oi-tui as an MCP server over HTTP (`[mcp_server]`: `token`, `listen`).
    pub mcp_server: Option<McpServerFile>,
    /// Whether the images of a block's result go to the model: `auto`, `on` or `off`.
    pub vision: Option<crate::llm::vision::VisionMode>,
    /// The workbench's own settings (`[tui]`: `images`).
    pub tui: Option<tui::TuiFile>,
    /// Hosts kernels can run on (`[executors.NAME]`: `host`, `workdir`, `env`,
    /// `interpreters`, `ssh_options`).
    pub executors: Option<BTreeMap<String, executors::ExecutorFile>>,
    /// Where kernels run: `local`, an executor's name, or a host (`--on`).
    pub on: Option<String>,
}

/// The `[mcp_server]` table: how `oi-tui mcp --listen` (and the workbench's `--mcp-listen`)
/// serve over HTTP.
#[derive(Debug, Default, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerFile {
    /// The bearer token clients must send (else `OI_TUI_MCP_TOKEN`, else a random one).
    pub token: Option<String>,
    /// Where the workbench listens when asked to serve MCP (`127.0.0.1:PORT`).
    pub listen: Option<String>,
}

const KEYS: &[&str] = &[
    "model",
    "api_base",
    "api_key",
    "auto_run",
    "tools",
    "system_message",
    "custom_instructions",
    "agents_md",
    "context_window",
    "max_tokens",
    "temperature",
    "max_turns",
    "timeout",
    "cwd",
    "data_dir",
    "connect_timeout",
    "idle_timeout",
    "max_reply_bytes",
    "reply_timeout",
    "max_output",
    "max_retries",
    "theme",
    "keys",
    "env",
    "approval",
    "policy",
    "sandbox",
    "mcp_servers",
    "mcp_server",
    "vision",
    "tui",
    "executors",
    "on",
];

#[derive(Debug, Default)]
struct FileConfig {
    settings: FileSettings,
    profiles: BTreeMap<String, FileSettings>,
}

/// The profiles alone: read apart from the top level, because serde's `flatten` would lose
/// the positions that make type errors point at their line.
#[derive(Debug, Default, Deserialize)]
struct Profiles {
    #[serde(default)]
    profiles: BTreeMap<String, FileSettings>,
}

/// What the command line says (every field optional: absent means "not said").
#[derive(Debug, Default, Clone)]
pub struct FlagSettings {
    pub config: Option<PathBuf>,
    pub profile: Option<String>,
    pub settings: FileSettings,
    pub no_tools: bool,
    /// `--safe-mode`: the sandbox with the network off.
    pub safe_mode: bool,
}

/// How long a block may run when nobody can watch (headless, stdin not a terminal) and no
/// `timeout` is set.
pub const UNATTENDED_BLOCK_TIMEOUT: Duration = Duration::from_secs(600);

/// The settings in force.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model, when one is configured.
    pub model: Option<ModelSpec>,
    /// A provider named without a model (`--model ollama`), for `--list-models`.
    pub provider_only: Option<ProviderKind>,
    pub api_base: Option<String>,
    pub api_key: Option<Secret>,
    pub auto_run: bool,
    pub tools: bool,
    pub system_message: Option<String>,
    pub custom_instructions: Option<String>,
    /// Add the nearest `AGENTS.md` to the system prompt (`agents_md`, `--no-agents-md`).
    pub agents_md: bool,
    pub context_window: Option<u32>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    pub max_turns: u32,
    pub timeout: Option<Duration>,
    pub cwd: PathBuf,
    pub data_dir: PathBuf,
    pub connect_timeout: Duration,
    pub idle_timeout: Duration,
    /// The most bytes one reply may have (`max_reply_bytes`, `--max-reply-bytes`).
    pub max_reply_bytes: usize,
    /// The longest one reply may take (`reply_timeout`, `--reply-timeout`).
    pub reply_timeout: Duration,
    pub max_output: usize,
    pub max_retries: u32,
    pub theme: String,
    pub keys: BTreeMap<String, String>,
    /// How the workbench draws images (`[tui] images`, `--images`).
    pub images: tui::ImageMode,
    /// The kernels' environment: what they inherit, what is passed to them though secret,
    /// and what is set.
    pub env: crate::secrets::EnvSettings,
    /// `--approval` (or `approval =`), when said; else `-y` means auto and the face decides.
    pub approval: Option<crate::protocol::ApprovalMode>,
    /// The `[policy]` rules of the config file and the profile in use, and those of the
    /// project file (`.oi-tui.toml` in `cwd`) when the user trusted it.
    pub rules: crate::policy::Rules,
    /// `--safe-mode`: the rules decide what runs (unless `--approval` or `-y` says
    /// otherwise); the sandbox part is in `sandbox`.
    pub safe_mode: bool,
    /// The sandbox asked for (see `sandbox::resolve` for the one in force).
    pub sandbox: crate::sandbox::SandboxSettings,
    /// The user's MCP servers (`[mcp_servers.NAME]`), in the order of their names.
    pub mcp_servers: Vec<mcp::McpServerConfig>,
    /// `[mcp_server]`: the HTTP server's token and address (the last layer that sets each).
    pub mcp_server: McpServerFile,
    /// Whether the images of a block's result go to the model (`vision`, `--vision`).
    pub vision: crate::llm::vision::VisionMode,
    /// The executors of `[executors.NAME]`, by name (for `/on NAME`).
    pub executors: BTreeMap<String, crate::exec::remote::SshTarget>,
    /// Where kernels run (`on`, `--on`).
    pub executor: crate::exec::Executor,
    /// The config file read, if any.
    pub config_path: Option<PathBuf>,
    /// Things worth saying that are not errors (unknown keys).
    pub warnings: Vec<String>,
}

impl Settings {
    /// The provider in use: the model's, or the one named alone.
    pub fn provider(&self) -> Option<ProviderKind> {
        self.model
            .as_ref()
            .map(|m| m.provider)
            .or(self.provider_only)
    }

    /// The one redactor of this process: the values of its secret variables (see
    /// `secrets::is_secret`: by name, or a URL with a password), those of `[env] set`, and
    /// the configured API key.
    pub fn redactor(&self) -> crate::secrets::Redactor {
        let configured: Vec<&str> = self.api_key.iter().map(|k| k.expose()).collect();
        let set = self.env.set.iter().map(|(k, v)| (k.clone(), v.clone()));
        crate::secrets::Redactor::new(crate::secrets::process_env().chain(set), &configured)
    }

    /// The environment kernels start with (the whole of it).
    pub fn kernel_env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        crate::secrets::kernel_env(
            crate::secrets::process_env(),
            &self.env,
            self.api_key.as_ref().map(|k| k.expose()),
        )
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect()
    }

    /// The approval mode in force: `--approval`, else auto with `-y`, else rules with
    /// `--safe-mode`, else ask.
    pub fn approval_mode(&self) -> crate::protocol::ApprovalMode {
        use crate::protocol::ApprovalMode;
        match self.approval {
            Some(mode) => mode,
            None if self.auto_run => ApprovalMode::Auto,
            None if self.safe_mode => ApprovalMode::Rules,
            None => ApprovalMode::Ask,
        }
    }

    /// The sandbox in force for this session's kernels.
    pub fn sandbox(&self) -> crate::sandbox::Resolved {
        crate::sandbox::resolve(self.sandbox, &self.cwd)
    }

    /// The engine's configuration. Fails, with what to do, when no model is configured.
    /// `unattended`: nobody can approve a block or type into one (headless without a
    /// terminal).
    pub fn engine_config(
        &self,
        approval: crate::protocol::ApprovalMode,
        unattended: bool,
    ) -> Result<crate::engine::EngineConfig, String> {
        let stdin_eof = unattended;
        let Some(spec) = self.model.clone() else {
            let file = match &self.config_path {
                Some(p) => p.display().to_string(),
                None => default_config_path().map_or_else(
                    || "the config file".to_string(),
                    |p| p.display().to_string(),
                ),
            };
            return Err(format!(
                "no model is configured. Name one with --model provider/name (for example --model ollama/qwen2.5-coder:7b or --model openai/gpt-4o-mini), the OI_TUI_MODEL variable, or `model = \"...\"` in {file}. `oi-tui --list-models` shows what local servers offer."
            ));
        };
        if spec.provider != ProviderKind::Ollama
            && self.api_base.is_none()
            && self.api_key.is_none()
        {
            let var = spec.provider.key_variable().unwrap_or("the API key");
            return Err(format!(
                "{spec} needs an API key: set {var} or pass --api-key (for a local OpenAI-compatible server, pass --api-base instead, such as http://localhost:8080/v1)."
            ));
        }
        let provider = crate::llm::ProviderConfig {
            api_base: self.api_base_for(spec.provider),
            spec,
            api_key: self.api_key.clone(),
            connect_timeout: self.connect_timeout,
            idle_timeout: self.idle_timeout,
            retry: RetryPolicy {
                max_retries: self.max_retries,
                ..RetryPolicy::default()
            },
            max_reply_bytes: self.max_reply_bytes,
            reply_timeout: self.reply_timeout,
        };
        Ok(crate::engine::EngineConfig {
            provider: Some(provider),
            tools: self.tools,
            approval,
            unattended,
            rules: self.rules.clone(),
            user_config: crate::rules_file::user_config_path(self),
            sandbox: self.sandbox,
            system_message: self.system_message.clone(),
            custom_instructions: self.custom_instructions.clone(),
            agents_md: self.agents_md,
            context_window: self.context_window.unwrap_or(32_768),
            context_window_set: self.context_window.is_some(),
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            max_turns: self.max_turns,
            block_timeout: self.timeout,
            stdin_eof,
            kernels: crate::exec::KernelConfig {
                cwd: self.cwd.clone(),
                max_output: self.max_output,
                env: self.kernel_env(),
                clear_env: true,
                // Nobody can stop a block that never ends: a default limit, said when it fires.
                default_timeout: unattended.then_some(UNATTENDED_BLOCK_TIMEOUT),
                executor: self.executor.clone(),
                ..crate::exec::KernelConfig::default()
            },
            executors: self.executors.clone(),
            data_dir: Some(self.data_dir.clone()),
            redactor: self.redactor(),
            recorder: None,
            history: Vec::new(),
            tool_host: None,
            vision: self.vision,
        })
    }

    /// The base URL: configured, or the provider's default.
    pub fn api_base_for(&self, provider: ProviderKind) -> String {
        self.api_base
            .clone()
            .unwrap_or_else(|| provider.default_base())
    }
}

/// The platform config file: `~/.config/oi-tui/config.toml` on Linux.
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "oi-tui").map(|d| d.config_dir().join("config.toml"))
}

/// The platform data directory: `~/.local/share/oi-tui` on Linux.
pub fn default_data_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "oi-tui")
        .map(|d| d.data_dir().to_path_buf())
        .unwrap_or_else(|| std::env::temp_dir().join("oi-tui"))
}

/// Loads the settings as a command starting does, from this process's environment: a
/// failure, and every warning, said on standard error. None: it failed (the caller exits
/// with its own status).
pub fn load_said(flags: &FlagSettings) -> Option<Settings> {
    match load(flags, &|k| std::env::var(k).ok()) {
        Ok(settings) => {
            for warning in &settings.warnings {
                eprintln!("oi-tui: warning: {warning}");
            }
            Some(settings)
        }
        Err(message) => {
            eprintln!("oi-tui: {message}");
            None
        }
    }
}

/// Reads the config file (the one given, else the platform one if it exists) and merges it
/// with the environment and the flags.
pub fn load(
    flags: &FlagSettings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Settings, String> {
    let explicit = flags
        .config
        .clone()
        .or_else(|| env("OI_TUI_CONFIG").map(PathBuf::from));
    let (file, config_path, mut warnings) = match &explicit {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
            let (file, warnings) = parse(&text, path)?;
            (file, Some(path.clone()), warnings)
        }
        None => match default_config_path().filter(|p| p.exists()) {
            Some(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read the config file {}: {e}", path.display()))?;
                let (file, warnings) = parse(&text, &path)?;
                (file, Some(path), warnings)
            }
            None => (FileConfig::default(), None, Vec::new()),
        },
    };
    let profile = match &flags.profile {
        Some(name) => Some(file.profiles.get(name).cloned().ok_or_else(|| {
            let known: Vec<&str> = file.profiles.keys().map(String::as_str).collect();
            match (&config_path, known.is_empty()) {
                (None, _) => format!(
                    "--profile {name}: there is no config file to hold profiles (looked for {})",
                    default_config_path()
                        .map_or_else(|| "none".into(), |p| p.display().to_string())
                ),
                (Some(p), true) => format!(
                    "--profile {name}: {} has no [profiles.*] sections",
                    p.display()
                ),
                (Some(p), false) => format!(
                    "--profile {name}: {} has no [profiles.{name}]; it has: {}",
                    p.display(),
                    known.join(", ")
                ),
            }
        })?),
        None => None,
    };

    // Lowest first: defaults are filled in at the end.
    let layers: Vec<FileSettings> = [
        Some(file.settings.clone()),
        profile,
        Some(env_settings(env)),
        Some(flags.settings.clone()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let pick = |f: &dyn Fn(&FileSettings) -> Option<String>| layers.iter().rev().find_map(f);

    let model_text = pick(&|s| s.model.clone());
    let (model, provider_only) = match model_text {
        None => (None, None),
        Some(text) => match ProviderKind::parse(text.trim_end_matches('/')) {
            Some(provider) => (None, Some(provider)),
            None => (Some(ModelSpec::parse(&text)?), None),
        },
    };
    let provider = model.as_ref().map(|m| m.provider).or(provider_only);

    // Keys: the flag, then the provider's own variable, then profile and file.
    let api_key = flags
        .settings
        .api_key
        .clone()
        .or_else(|| provider.and_then(|p| p.key_variable()).and_then(env))
        .or_else(|| layers.iter().rev().find_map(|s| s.api_key.clone()))
        .filter(|k| !k.trim().is_empty())
        .map(Secret::new);

    let last = |f: &dyn Fn(&FileSettings) -> Option<f64>| layers.iter().rev().find_map(f);
    let seconds = |name: &str, value: Option<f64>| -> Result<Option<Duration>, String> {
        value
            .map(|v| {
                seconds_setting(v).map_err(|range| format!("{name} = {}: {range}", short_number(v)))
            })
            .transpose()
    };

    let cwd = match layers.iter().rev().find_map(|s| s.cwd.clone()) {
        Some(dir) => std::fs::canonicalize(&dir)
            .map_err(|e| format!("cwd {}: {e}", dir.display()))
            .and_then(|d| {
                if d.is_dir() {
                    Ok(d)
                } else {
                    Err(format!("cwd {}: not a directory", dir.display()))
                }
            })?,
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let temperature = layers.iter().rev().find_map(|s| s.temperature);
    if let Some(t) = temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(format!("temperature = {t}: give a number from 0 to 2"));
    }
    let max_turns = layers.iter().rev().find_map(|s| s.max_turns).unwrap_or(30);
    if max_turns == 0 {
        return Err("max_turns = 0: give at least 1".to_string());
    }
    if let Some(n) = layers.iter().rev().find_map(|s| s.context_window) {
        context_window_setting(n).map_err(|why| format!("context_window = {n}: {why}"))?;
    }
    if layers.iter().rev().find_map(|s| s.max_tokens) == Some(0) {
        return Err("max_tokens = 0: give at least 1".to_string());
    }
    let env = layers
        .iter()
        .rev()
        .find_map(|s| s.env.clone())
        .unwrap_or_default();
    crate::secrets::env::validate(&env).map_err(|e| match &config_path {
        Some(p) => format!("{}: {e}", p.display()),
        None => e,
    })?;
    let mut rules = crate::policy::Rules::new();
    for lists in layers.iter().filter_map(|s| s.policy.as_ref()) {
        let errors = rules.add_lists(lists, crate::policy::RuleSource::User);
        if let Some(e) = errors.first() {
            return Err(match &config_path {
                Some(p) => format!("{} [policy]: {e}", p.display()),
                None => format!("[policy]: {e}"),
            });
        }
    }
    let data_dir = layers
        .iter()
        .rev()
        .find_map(|s| s.data_dir.clone())
        .unwrap_or_else(default_data_dir);
    // The project file's rules, when the user trusted it as it is.
    crate::project_rules::apply(&cwd, &data_dir, &mut rules, &mut warnings);
    // The sandbox stops what they deny as it starts, however a block spelled it.
    crate::sandbox::enforce_deny_rules(rules.deny_commands());
    own_files::protect(config_path.as_deref(), &data_dir, &cwd);
    if let Some(path) = &config_path
        && file.settings.api_key.is_some()
    {
        warnings.push(format!(
            "{} holds an API key in clear text; an environment variable is safer.",
            path.display()
        ));
    }

    let sandbox = sandbox_settings(&layers, flags.safe_mode)?;
    let executor_tables: Vec<_> = layers.iter().filter_map(|s| s.executors.as_ref()).collect();
    let executors = executors::parse(&executor_tables).map_err(|e| match &config_path {
        Some(p) => format!("{} {e}", p.display()),
        None => e,
    })?;
    let executor = executors::resolve(pick(&|s| s.on.clone()).as_deref(), &executors)
        .map_err(|e| format!("--on (or `on =`): {e}"))?;
    // A profile's server replaces the file's server of the same name.
    let mut mcp_servers = BTreeMap::new();
    for table in layers.iter().filter_map(|s| s.mcp_servers.as_ref()) {
        let (servers, _) = mcp::parse_servers(table, &cwd).map_err(|e| match &config_path {
            Some(p) => format!("{} {e}", p.display()),
            None => e,
        })?;
        for server in servers {
            mcp_servers.insert(server.name.clone(), server);
        }
    }

    Ok(Settings {
        model,
        provider_only,
        api_base: pick(&|s| s.api_base.clone()).map(|b| b.trim_end_matches('/').to_string()),
        api_key,
        auto_run: layers
            .iter()
            .rev()
            .find_map(|s| s.auto_run)
            .unwrap_or(false),
        tools: !flags.no_tools && layers.iter().rev().find_map(|s| s.tools).unwrap_or(true),
        system_message: pick(&|s| s.system_message.clone()),
        custom_instructions: pick(&|s| s.custom_instructions.clone()),
        agents_md: layers
            .iter()
            .rev()
            .find_map(|s| s.agents_md)
            .unwrap_or(true),
        context_window: layers.iter().rev().find_map(|s| s.context_window),
        max_tokens: layers.iter().rev().find_map(|s| s.max_tokens),
        temperature,
        max_turns,
        timeout: seconds("timeout", last(&|s| s.timeout))?,
        cwd,
        data_dir,
        connect_timeout: seconds("connect_timeout", last(&|s| s.connect_timeout))?
            .unwrap_or(Duration::from_secs(10)),
        idle_timeout: seconds("idle_timeout", last(&|s| s.idle_timeout))?
            .unwrap_or(Duration::from_secs(300)),
        max_reply_bytes: reply_bytes(layers.iter().rev().find_map(|s| s.max_reply_bytes))?,
        reply_timeout: reply_timeout(last(&|s| s.reply_timeout))?,
        max_output: layers
            .iter()
            .rev()
            .find_map(|s| s.max_output)
            .unwrap_or(4000),
        max_retries: layers
            .iter()
            .rev()
            .find_map(|s| s.max_retries)
            .unwrap_or(RetryPolicy::default().max_retries),
        theme: pick(&|s| s.theme.clone()).unwrap_or_else(|| "dark".to_string()),
        keys: layers
            .iter()
            .filter_map(|s| s.keys.clone())
            .flatten()
            .collect(),
        images: layers
            .iter()
            .rev()
            .find_map(|s| s.tui.as_ref().and_then(|t| t.images))
            .unwrap_or_default(),
        env,
        approval: layers.iter().rev().find_map(|s| s.approval),
        safe_mode: flags.safe_mode,
        rules,
        sandbox,
        mcp_servers: mcp_servers.into_values().collect(),
        mcp_server: McpServerFile {
            token: layers
                .iter()
                .rev()
                .find_map(|s| s.mcp_server.as_ref().and_then(|m| m.token.clone())),
            listen: layers
                .iter()
                .rev()
                .find_map(|s| s.mcp_server.as_ref().and_then(|m| m.listen.clone())),
        },
        vision: layers
            .iter()
            .rev()
            .find_map(|s| s.vision)
            .unwrap_or_default(),
        executors,
        executor,
        config_path,
        warnings,
    })
}

/// The sandbox asked for by the layers (highest last) and `--safe-mode`.
fn sandbox_settings(
    layers: &[FileSettings],
    safe_mode: bool,
) -> Result<crate::sandbox::SandboxSettings, String> {
    use crate::sandbox::{Network, SandboxMode, SandboxSettings};
    let sections = || layers.iter().rev().filter_map(|s| s.sandbox.as_ref());
    let mode = sections().find_map(|s| s.mode);
    let network = sections().find_map(|s| s.network);
    let mut settings = SandboxSettings {
        mode: mode.unwrap_or_default(),
        network: network.unwrap_or_default(),
        explicit: mode.is_some() || network.is_some(),
    };
    if safe_mode {
        if mode == Some(SandboxMode::Off) {
            return Err(
                "--safe-mode runs blocks in the sandbox: it cannot go with sandbox mode off"
                    .to_string(),
            );
        }
        settings.network = Network::Off;
        settings.explicit = true;
    }
    Ok(settings)
}

fn env_settings(env: &dyn Fn(&str) -> Option<String>) -> FileSettings {
    FileSettings {
        model: env("OI_TUI_MODEL"),
        api_base: env("OI_TUI_API_BASE"),
        data_dir: env("OI_TUI_DATA_DIR").map(PathBuf::from),
        ..FileSettings::default()
    }
}

/// Parses a config file: typed errors with line and column, unknown keys as warnings.
fn parse(text: &str, path: &Path) -> Result<(FileConfig, Vec<String>), String> {
    let located = |e: toml::de::Error| {
        let (line, col) = e
            .span()
            .map(|span| line_col(text, span.start))
            .unwrap_or((1, 1));
        format!(
            "{}:{line}:{col}: {}",
            path.display(),
            e.message().trim_end_matches('\n')
        )
    };
    let table: toml::Table = toml::from_str(text).map_err(located)?;
    let file = FileConfig {
        settings: toml::from_str(text).map_err(located)?,
        profiles: toml::from_str::<Profiles>(text).map_err(located)?.profiles,
    };
    let mut warnings = Vec::new();
    let mut unknown_in_servers = |servers: &toml::Value, profile: &str| {
        for (name, entry) in servers.as_table().into_iter().flatten() {
            for key in entry.as_table().into_iter().flat_map(|t| t.keys()) {
                if mcp::known_keys().contains(&key.as_str()) {
                    continue;
                }
                // The key's line: the first after the server's header that starts with it.
                let header = text
                    .lines()
                    .position(|l| {
                        let l = l.trim_start();
                        l.starts_with('[') && l.contains("mcp_servers") && l.contains(name.as_str())
                    })
                    .unwrap_or(0);
                let line = text
                    .lines()
                    .enumerate()
                    .skip(header)
                    .find(|(_, l)| l.trim_start().starts_with(key.as_str()))
                    .map_or(String::new(), |(i, _)| format!(":{}", i + 1));
                warnings.push(format!(
                    "{}{line}: unknown key `{key}` in [{profile}mcp_servers.{name}] is ignored (known: {})",
                    path.display(),
                    mcp::known_keys().join(", ")
                ));
            }
        }
    };
    if let Some(servers) = table.get("mcp_servers") {
        unknown_in_servers(servers, "");
    }
    for (name, profile) in table
        .get("profiles")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
    {
        if let Some(servers) = profile.get("mcp_servers") {
            unknown_in_servers(servers, &format!("profiles.{name}."));
        }
    }
    let mut unknown = |key: &str, section: &str| {
        let line = text
            .lines()
            .position(|l| l.trim_start().starts_with(key))
            .map_or(String::new(), |i| format!(":{}", i + 1));
        warnings.push(format!(
            "{}{line}: unknown key `{key}`{section} is ignored (known: {})",
            path.display(),
            KEYS.join(", ")
        ));
    };
    for (key, value) in &table {
        if key == "profiles" {
            if let Some(profiles) = value.as_table() {
                for (name, profile) in profiles {
                    for key in profile.as_table().into_iter().flat_map(|t| t.keys()) {
                        if !KEYS.contains(&key.as_str()) {
                            unknown(key, &format!(" in [profiles.{name}]"));
                        }
                    }
                }
            }
        } else if !KEYS.contains(&key.as_str()) {
            unknown(key, "");
        }
    }
    Ok((file, warnings))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

pub mod executors;
pub mod mcp;
mod own_files;
mod ranges;
#[cfg(test)]
mod tests;
pub mod tui;
