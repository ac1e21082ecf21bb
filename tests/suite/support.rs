//! Helpers shared by the integration tests.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oi_tui::exec::{Block, KernelConfig, Kernels, Language, RunResult};

/// Kernels that start in a fresh temporary directory.
pub fn kernels() -> (Kernels, tempfile::TempDir) {
    kernels_with(|_| {})
}

pub fn kernels_with(adjust: impl FnOnce(&mut KernelConfig)) -> (Kernels, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = KernelConfig {
        cwd: dir.path().to_path_buf(),
        html_dir: dir.path().join("html"),
        ..KernelConfig::default()
    };
    adjust(&mut config);
    (Kernels::new(config), dir)
}

/// Runs a block and returns its result and every raw byte the sink saw.
pub async fn run(kernels: &Kernels, language: Language, code: &str) -> (RunResult, Vec<u8>) {
    run_block(kernels, Block::new(language, code)).await
}

pub async fn run_block(kernels: &Kernels, block: Block) -> (RunResult, Vec<u8>) {
    let mut raw = Vec::new();
    let result = kernels
        .run(&block, &mut |bytes: &[u8]| raw.extend_from_slice(bytes))
        .await;
    (result, raw)
}

/// Runs a block in the background, sharing what it printed so far.
pub fn spawn_block(
    kernels: Arc<Kernels>,
    block: Block,
) -> (tokio::task::JoinHandle<RunResult>, Arc<Mutex<Vec<u8>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let handle = tokio::spawn(async move {
        kernels
            .run(&block, &mut |bytes: &[u8]| {
                sink_seen.lock().expect("lock").extend_from_slice(bytes)
            })
            .await
    });
    (handle, seen)
}

/// Waits until what a background block printed contains `needle`.
pub async fn wait_for_output(seen: &Arc<Mutex<Vec<u8>>>, needle: &str, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let text = String::from_utf8_lossy(&seen.lock().expect("lock")).into_owned();
        if text.contains(needle) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited {limit:?} for {needle:?}; output so far: {text:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An engine on the scripted model `spec` at `base` (none: no model), in `dir`: tools on,
/// auto-run, the kernels in `dir`, the data in `dir/data`. Tests change what they need.
pub fn engine_config(
    spec: &str,
    base: Option<String>,
    dir: &std::path::Path,
) -> oi_tui::engine::EngineConfig {
    use oi_tui::llm::{ModelSpec, ProviderConfig, RetryPolicy};
    oi_tui::engine::EngineConfig {
        provider: base.map(|api_base| ProviderConfig {
            spec: ModelSpec::parse(spec).expect("spec"),
            api_base,
            api_key: None,
            connect_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(30),
            retry: RetryPolicy::default(),
            max_reply_bytes: oi_tui::llm::DEFAULT_MAX_REPLY_BYTES,
            reply_timeout: oi_tui::llm::DEFAULT_REPLY_TIMEOUT,
        }),
        tools: true,
        approval: oi_tui::protocol::ApprovalMode::Auto,
        unattended: false,
        rules: Default::default(),
        user_config: Some(dir.join("config.toml")),
        // Engine tests run kernels unsandboxed; the sandbox tests ask for one themselves.
        sandbox: oi_tui::sandbox::SandboxSettings {
            mode: oi_tui::protocol::SandboxMode::Off,
            ..Default::default()
        },
        system_message: None,
        custom_instructions: None,
        agents_md: false,
        context_window: 32_768,
        context_window_set: false,
        max_tokens: None,
        temperature: None,
        max_turns: 10,
        block_timeout: Some(Duration::from_secs(30)),
        stdin_eof: true,
        kernels: KernelConfig {
            cwd: dir.to_path_buf(),
            ..KernelConfig::default()
        },
        data_dir: Some(dir.join("data")),
        redactor: Default::default(),
        recorder: None,
        history: Vec::new(),
        tool_host: None,
        vision: Default::default(),
        executors: Default::default(),
    }
}

/// The engine's next event, within 30 s.
pub async fn next_event(handle: &mut oi_tui::engine::EngineHandle) -> oi_tui::protocol::Event {
    tokio::time::timeout(Duration::from_secs(30), handle.events.recv())
        .await
        .expect("an event in time")
        .expect("the engine runs")
}

/// The output of an oi-tui run, within 120 s.
pub async fn output_within(mut cmd: tokio::process::Command) -> std::process::Output {
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("oi-tui finished in time")
        .expect("oi-tui ran")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `--json` events on a run's standard output.
pub fn json_events(out: &std::process::Output) -> Vec<serde_json::Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

/// The `block_proposed` event of block `id`.
pub fn proposed(events: &[serde_json::Value], id: u64) -> &serde_json::Value {
    events
        .iter()
        .find(|e| e["event"] == "block_proposed" && e["block"]["id"] == id)
        .unwrap_or_else(|| panic!("block {id} proposed in {events:?}"))
}

/// Whether block `id` started.
pub fn started(events: &[serde_json::Value], id: u64) -> bool {
    events
        .iter()
        .any(|e| e["event"] == "exec_started" && e["block_id"] == id)
}

/// Reads a child's output until `needle` shows (within 30 s); returns what was read.
pub async fn read_until(stdout: &mut tokio::process::ChildStdout, needle: &str) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    while !seen.contains(needle) {
        assert!(std::time::Instant::now() < deadline, "{seen}");
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(
            Duration::from_secs(30),
            tokio::io::AsyncReadExt::read(stdout, &mut buf),
        )
        .await
        .expect("output in time")
        .expect("read");
        assert!(n > 0, "ended before {needle:?}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    seen
}

/// The event of block `id` proposed (the whole reply's only block).
pub fn proposed_event(id: u64, language: Language, code: &str) -> oi_tui::protocol::Event {
    oi_tui::protocol::Event::BlockProposed {
        block: oi_tui::protocol::ProposedBlock {
            id,
            language_tag: language.name().into(),
            language: Some(language),
            code: code.into(),
            caller: None,
            tool: None,
        },
        index: 1,
        of: 1,
        verdict: None,
        gate: None,
        allow: None,
    }
}

/// The event of block `id` starting to run.
pub fn started_event(
    id: u64,
    language: Language,
    code: &str,
    edited: bool,
) -> oi_tui::protocol::Event {
    oi_tui::protocol::Event::ExecStarted {
        block_id: id,
        language,
        code: code.into(),
        edited,
    }
}

/// The binary, run in `dir` with its config and data there and none of this machine's
/// oi-tui or provider settings; stdin null, output captured, killed with the test.
pub fn isolated_oi_tui(dir: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.current_dir(dir)
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("share"))
        .env_remove("OI_TUI_CONFIG")
        .env_remove("OI_TUI_MODEL")
        .env_remove("OI_TUI_API_BASE")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OLLAMA_HOST")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The Python that has the official MCP SDK, for the MCP tests: `$OI_TUI_TEST_PYTHON`, or
/// the virtual environment `.ci/run` makes in `.ci/venv`.
pub fn mcp_python() -> std::path::PathBuf {
    if let Some(python) = std::env::var_os("OI_TUI_TEST_PYTHON") {
        return python.into();
    }
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/venv/bin/python");
    assert!(
        venv.exists(),
        "the MCP tests need the Python MCP SDK: run .ci/run once (it makes .ci/venv), or set OI_TUI_TEST_PYTHON to a Python with `mcp` installed"
    );
    venv
}

/// Starts `cmd` under a file-size limit (RLIMIT_FSIZE) of `bytes`.
pub fn limit_file_size(cmd: &mut tokio::process::Command, bytes: u64) {
    // SAFETY: setrlimit(2) in the child before exec; no allocation, no locks.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
