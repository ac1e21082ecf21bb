//! The set of kernels of one session: one per language, started the first time it is
//! needed, restarted when it died. Blocks run one at a time; while one runs, the interrupt,
//! input, EOF and resize controls reach its PTY from any task.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};

use super::kernel::{Kernel, RunOptions};
use super::language::{Language, find_interpreter};
use super::pty::{PtyControl, pty_size};
use super::result::{RunResult, RunStatus};

/// How kernels are started and blocks are run.
#[derive(Debug, Clone)]
pub struct KernelConfig {
    /// Where kernels start.
    pub cwd: PathBuf,
    /// Variables set for kernels on top of this process's environment (`PATH` among them,
    /// which is also where interpreters are looked for).
    pub env: Vec<(OsString, OsString)>,
    /// Kernels get `env` alone, not this process's environment under it (the engine hands
    /// in the whole environment, filtered of secrets).
    pub clear_env: bool,
    /// How long a block may take to stop after SIGINT before its kernel is killed.
    pub grace: Duration,
    /// The length, in characters, past which a block's text form keeps only head and tail.
    pub max_output: usize,
    /// The PTY size new kernels start with.
    pub rows: u16,
    pub cols: u16,
    /// Where blocks that are written, not run (HTML), go.
    pub html_dir: PathBuf,
    /// The command kernels start under (the sandbox: `bwrap … --`); empty: none.
    pub launch_prefix: Vec<OsString>,
    /// When set, no kernel starts: every block fails with this reason (a sandbox was asked
    /// for and none is available).
    pub launch_refusal: Option<String>,
    /// The time limit of a block that has none of its own (unattended runs: nobody is
    /// there to interrupt a block that never ends). Its note says it is a default.
    pub default_timeout: Option<Duration>,
    /// Where the images blocks make are kept (the session's image directory); None: a
    /// private directory in the temp dir, removed when oi-tui leaves.
    pub image_dir: Option<PathBuf>,
    /// Where kernels run: here, or on a host over SSH.
    pub executor: Executor,
    /// The session the kernels belong to (remote kernels carry it as `OI_TUI_SESSION`).
    pub session_id: Option<String>,
    /// The sandbox asked for, for kernels on another host (bubblewrap there, if it is).
    pub remote_sandbox: crate::sandbox::SandboxSettings,
}

/// Where kernels run.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Executor {
    /// On this machine.
    #[default]
    Local,
    /// On a host, through the system's `ssh`.
    Ssh(super::remote::SshTarget),
}

impl Executor {
    /// How the person knows it: `local`, or the executor's (host's) name.
    pub fn name(&self) -> &str {
        match self {
            Executor::Local => "local",
            Executor::Ssh(target) => &target.name,
        }
    }

    pub fn is_remote(&self) -> bool {
        matches!(self, Executor::Ssh(_))
    }
}

impl Default for KernelConfig {
    fn default() -> Self {
        KernelConfig {
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
            env: Vec::new(),
            clear_env: false,
            grace: Duration::from_secs(2),
            max_output: 4000,
            rows: 24,
            cols: 80,
            html_dir: std::env::temp_dir().join("oi-tui-html"),
            launch_prefix: Vec::new(),
            launch_refusal: None,
            default_timeout: None,
            image_dir: None,
            executor: Executor::Local,
            session_id: None,
            remote_sandbox: Default::default(),
        }
    }
}

/// One block to run.
#[derive(Debug, Clone)]
pub struct Block {
    pub language: Language,
    pub code: String,
    /// Stop the block (SIGINT, then kill) after this long.
    pub timeout: Option<Duration>,
    /// Nobody can type into the terminal: reads from it see end-of-file.
    pub stdin_eof: bool,
    /// The id the code is known by (`<block 3>` in tracebacks); None: the next of a count
    /// the kernels keep.
    pub id: Option<u64>,
}

impl Block {
    pub fn new(language: Language, code: impl Into<String>) -> Self {
        Block {
            language,
            code: code.into(),
            timeout: None,
            stdin_eof: false,
            id: None,
        }
    }

    /// The id the code is known by, as the person sees it (`python #3`).
    pub fn id(mut self, id: u64) -> Self {
        self.id = Some(id);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub fn stdin_eof(mut self) -> Self {
        self.stdin_eof = true;
        self
    }
}

/// The block that runs now, as the controls see it. The PTY is there once its kernel is;
/// an interrupt that comes before is kept and acted on as soon as the block starts.
struct Active {
    control: Option<Arc<PtyControl>>,
    interrupt: Arc<Notify>,
}

/// Clears the active block however `run` returns.
struct ActiveGuard<'a>(&'a Kernels);

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.set_active(None);
    }
}

pub struct Kernels {
    config: KernelConfig,
    kernels: tokio::sync::Mutex<HashMap<Language, Kernel>>,
    active: Mutex<Option<Active>>,
    size: Mutex<(u16, u16)>,
    next_block: AtomicU64,
    /// Whether the running block waits for keyboard input.
    waiting: watch::Sender<bool>,
    /// Where images are kept when the config names no directory (made when first needed).
    spare_images: Mutex<Option<tempfile::TempDir>>,
    /// The working directory was too big to look through whole for images (said once).
    scan_cut_said: std::sync::atomic::AtomicBool,
    /// What is known of the directories blocks may write images in.
    scans: Mutex<super::workdir_scan::Scans>,
    /// The connection to the executor's host, once made.
    link: tokio::sync::Mutex<Option<Arc<super::remote::Link>>>,
    /// A connection replaced one that had dropped, and no block has said so yet (the kernels
    /// there went with it).
    replaced: std::sync::atomic::AtomicBool,
}

impl Kernels {
    pub fn new(config: KernelConfig) -> Self {
        // Directories left in the temp dir by runs that crashed go at the start of the next.
        super::tempdirs::sweep_once(&std::env::temp_dir());
        let size = (config.rows, config.cols);
        Kernels {
            config,
            kernels: tokio::sync::Mutex::new(HashMap::new()),
            active: Mutex::new(None),
            size: Mutex::new(size),
            next_block: AtomicU64::new(1),
            waiting: watch::channel(false).0,
            spare_images: Mutex::new(None),
            scan_cut_said: std::sync::atomic::AtomicBool::new(false),
            scans: Mutex::new(Default::default()),
            link: tokio::sync::Mutex::new(None),
            replaced: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn config(&self) -> &KernelConfig {
        &self.config
    }

    /// A new set of kernels like these (same configuration, the terminal's current size),
    /// started under another launch prefix (another sandbox, or none). None start until
    /// their first block.
    pub fn relaunched(&self, prefix: Vec<OsString>, refusal: Option<String>) -> Kernels {
        let (rows, cols) = self.current_size();
        Kernels::new(KernelConfig {
            launch_prefix: prefix,
            launch_refusal: refusal,
            rows,
            cols,
            ..self.config.clone()
        })
    }

    /// A new set of kernels like these, on another executor (and under the sandbox the
    /// caller resolved for it). None start until their first block.
    pub fn moved(&self, config: KernelConfig) -> Kernels {
        let (rows, cols) = self.current_size();
        Kernels::new(KernelConfig {
            rows,
            cols,
            ..config
        })
    }

    /// The connection to the executor's host: the live one, or a new one (a new one that
    /// replaces a dropped one is remembered, for the next block to say). Err: one sentence
    /// naming the host.
    pub async fn connect(&self) -> Result<Arc<super::remote::Link>, String> {
        let Executor::Ssh(target) = &self.config.executor else {
            return Err("kernels run on this machine".to_string());
        };
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref()
            && !link.is_lost()
        {
            return Ok(link.clone());
        }
        // A dead link's master and directory go first.
        let dropped = slot.take().is_some();
        let how = super::remote::LinkEnv {
            env: self.ssh_env(),
            clear_env: true,
            session: self.config.session_id.clone(),
        };
        let link = Arc::new(super::remote::Link::connect(target, &how).await?);
        *slot = Some(link.clone());
        if dropped {
            self.replaced.store(true, Ordering::Relaxed);
        }
        Ok(link)
    }

    /// The live connection, if any (without making one).
    pub async fn link(&self) -> Option<Arc<super::remote::Link>> {
        self.link.lock().await.clone().filter(|l| !l.is_lost())
    }

    /// The environment `ssh` gets (see `ssh_env`), from this process's.
    fn ssh_env(&self) -> Vec<(OsString, OsString)> {
        ssh_env(std::env::vars_os(), &self.config.env, self.config.clear_env)
    }

    /// Runs a block in its language's kernel, starting the kernel if needed. Every output
    /// byte goes to `sink` as it arrives. Never fails: what went wrong is in the result.
    pub async fn run(&self, block: &Block, sink: &mut (dyn FnMut(&[u8]) + Send)) -> RunResult {
        let id = block
            .id
            .unwrap_or_else(|| self.next_block.fetch_add(1, Ordering::Relaxed));
        if block.language == Language::Html {
            return self.write_html(id, &block.code);
        }
        // Active from the first poll on, so that no interrupt is lost while a kernel starts.
        let interrupt = Arc::new(Notify::new());
        self.set_active(Some(Active {
            control: None,
            interrupt: interrupt.clone(),
        }));
        let _guard = ActiveGuard(self);
        let mut kernels = self.kernels.lock().await;
        let mut restarted_note = None;
        if kernels.get(&block.language).is_some_and(Kernel::is_dead) {
            if let Some(mut dead) = kernels.remove(&block.language) {
                dead.pass_idle_output(sink);
            }
            restarted_note = Some(format!(
                "The {} kernel had exited since the last block; this block ran in a fresh one, without the earlier state.",
                block.language
            ));
        }
        if self.config.executor.is_remote() {
            // Ctrl-C while it connects ends the attempt at once (the block does not run).
            let connected = tokio::select! {
                connected = self.connect() => connected,
                () = interrupt.notified() => Err(format!(
                    "Connecting to {} was interrupted, so the block did not run.",
                    self.config.executor.name()
                )),
            };
            // (The engine may have connected first, to say so: what was replaced counts.)
            match connected.map(|_| self.replaced.swap(false, Ordering::Relaxed)) {
                Ok(true) => {
                    kernels.clear();
                    restarted_note = Some(format!(
                        "The connection to {} had dropped since the last block; oi-tui connected again, and this block ran in a fresh {} kernel, without the earlier state.",
                        self.config.executor.name(),
                        block.language
                    ));
                }
                Ok(_) => {}
                Err(message) => {
                    kernels.clear();
                    return RunResult::unavailable(id, block.language, message);
                }
            }
        }
        let kernel = match kernels.entry(block.language) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                match self.start(block.language).await {
                    Ok(kernel) => e.insert(kernel),
                    Err(message) => return RunResult::unavailable(id, block.language, message),
                }
            }
        };
        let (rows, cols) = self.current_size();
        kernel.take_size(rows, cols).await;
        if let Ok(mut slot) = self.active.lock()
            && let Some(active) = slot.as_mut()
        {
            active.control = Some(kernel.control());
        }
        let opts = RunOptions {
            timeout: block.timeout.or(self.config.default_timeout),
            grace: self.config.grace,
            max_output: self.config.max_output,
            stdin_eof: block.stdin_eof,
            timeout_is_default: block.timeout.is_none() && self.config.default_timeout.is_some(),
        };
        let mut result = kernel
            .run(id, &block.code, &opts, &interrupt, &self.waiting, sink)
            .await;
        if let Some(note) = restarted_note {
            result.notes.insert(0, note);
        }
        match kernel.link().map(|l| l.is_lost()) {
            // The connection dropped (the result says so): nothing to fetch, and the kernel
            // there is gone, so its `ssh` here is let go now, not at the next block.
            Some(true) => {
                if let Some(gone) = kernels.remove(&block.language)
                    && let Some(link) = gone.link().cloned()
                    && !link.is_stalled()
                {
                    drop(gone);
                    link.let_go().await;
                }
                return result;
            }
            Some(false) => self.gather_remote_images(kernel, &mut result).await,
            None => self.gather_images(kernel, &mut result),
        }
        // A block that closed the interpreter's own standard streams (and a driver that
        // could not reopen them) leaves a kernel no later block could print from.
        let closed = kernel.closed_stdio();
        if !kernel.is_dead() && !closed.is_empty() {
            kernels.remove(&block.language);
            result.state_lost = true;
            result.notes.push(format!(
                "The block closed the {lang} kernel's {streams}, so the kernel was restarted: its state (variables, imports, working directory) is lost; the next {lang} block starts a fresh kernel.",
                lang = block.language,
                streams = closed.join(" and "),
            ));
        }
        result
    }

    /// Adds to the result the images the block made (see `images`).
    fn gather_images(&self, kernel: &Kernel, result: &mut RunResult) {
        // A block never handed over wrote nothing.
        let Some(since) = kernel.handed_at() else {
            return;
        };
        let Some(keep) = self.image_dir() else {
            return;
        };
        let (Some(dir), Some((figures, figures_identity))) = (kernel.dir(), kernel.figures_dir())
        else {
            return;
        };
        let mut roots = vec![self.config.cwd.clone()];
        roots.extend(kernel.current_dir());
        let ignored = [keep.clone(), dir.to_path_buf()];
        let sources = super::images::Sources {
            figures: &figures,
            figures_identity,
            roots: &roots,
            ignored: &ignored,
            since,
        };
        let Ok(mut scans) = self.scans.lock() else {
            return;
        };
        let gathered = super::images::gather(&sources, &mut scans, &keep, result.block_id);
        result.images = gathered.images;
        result.notes.extend(gathered.notes);
        if gathered.scan_cut && !self.scan_cut_said.swap(true, Ordering::Relaxed) {
            result.notes.push(format!(
                "{} holds too many files to look through for the images blocks write: only part of it is looked at, so an image written deep inside may not be shown.",
                self.config.cwd.display()
            ));
        }
    }

    /// Adds to the result the images a remote block made (fetched from its host).
    async fn gather_remote_images(&self, kernel: &Kernel, result: &mut RunResult) {
        let (Some(link), Some(name)) = (kernel.link(), kernel.remote_name()) else {
            return;
        };
        if kernel.handed_at().is_none() || link.is_lost() {
            return;
        }
        let Some(keep) = self.image_dir() else {
            return;
        };
        let gathered = super::remote::images::gather(
            link,
            name,
            result.block_id,
            kernel.language().extension(),
            &keep,
        )
        .await;
        result.images = gathered.images;
        result.notes.extend(gathered.notes);
    }

    /// Where images are kept: the configured directory, else a private one in the temp dir.
    fn image_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.config.image_dir {
            return Some(dir.clone());
        }
        let mut spare = self.spare_images.lock().ok()?;
        if spare.is_none() {
            *spare =
                super::tempdirs::create_named(&std::env::temp_dir(), super::tempdirs::IMAGES).ok();
        }
        spare.as_ref().map(|d| d.path().to_path_buf())
    }

    async fn start(&self, language: Language) -> Result<Kernel, String> {
        if let Some(refusal) = &self.config.launch_refusal {
            return Err(format!("Cannot run {language}: {refusal}"));
        }
        if self.config.executor.is_remote() {
            let link = self.connect().await?;
            let sandbox = crate::sandbox::remote::resolve(
                self.config.remote_sandbox,
                link.info.bwrap.as_deref(),
                &link.target.name,
            );
            if let Some(refusal) = &sandbox.refusal {
                return Err(format!(
                    "Cannot run {language} on {}: {refusal}",
                    link.target.name
                ));
            }
            let prefix = crate::sandbox::remote::prefix(
                &sandbox,
                link.info.bwrap.as_deref().unwrap_or("bwrap"),
                &link.info.workdir,
                &link.info.dir,
            );
            let (rows, cols) = self.current_size();
            return Kernel::start_remote(language, link, &prefix, pty_size(rows, cols)).await;
        }
        let path = self.env_var("PATH");
        let shell = self.env_var("SHELL");
        let Some(interpreter) = find_interpreter(language, path.as_deref(), shell.as_deref())
        else {
            return Err(format!(
                "Cannot run {language}: `{}` was not found on PATH. To run {language} blocks, {}.",
                language.program_label(),
                language.install_hint()
            ));
        };
        let (rows, cols) = self.current_size();
        Kernel::start(
            language,
            &interpreter,
            &self.config.cwd,
            &self.config.env,
            self.config.clear_env,
            &self.config.launch_prefix,
            pty_size(rows, cols),
        )
        .map_err(|e| {
            format!(
                "Cannot start the {language} kernel ({}): {e}.",
                interpreter.program.display()
            )
        })
    }

    /// A variable of the kernels' environment: the configured one, else this process's.
    fn env_var(&self, key: &str) -> Option<OsString> {
        self.config
            .env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var_os(key))
    }

    fn write_html(&self, id: u64, code: &str) -> RunResult {
        let started = Instant::now();
        let path = self
            .config
            .html_dir
            .join(format!("block-{}-{id}.html", uuid::Uuid::new_v4().simple()));
        // Private: the directory 0700 (tightened if it is more open; one that belongs to
        // someone else cannot be, and is an error), the file 0600 and new.
        let written = crate::secrets::private_dir(&self.config.html_dir).and_then(|_| {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
                .and_then(|mut f| f.write_all(code.as_bytes()))
        });
        match written {
            Ok(()) => RunResult {
                duration: started.elapsed(),
                output: format!("HTML written to {} (not run).", path.display()),
                file: Some(path),
                ..RunResult::empty(id, Language::Html, RunStatus::Written)
            },
            Err(e) => RunResult::unavailable(
                id,
                Language::Html,
                format!("Could not write the HTML to {}: {e}.", path.display()),
            ),
        }
    }

    fn set_active(&self, active: Option<Active>) {
        if let Ok(mut slot) = self.active.lock() {
            *slot = active;
        }
    }

    fn with_active<T>(&self, f: impl FnOnce(&Active) -> T) -> Option<T> {
        self.active.lock().ok()?.as_ref().map(f)
    }

    /// Interrupts the running block: SIGINT now (or as soon as its kernel has started); a
    /// kill after the grace period if it does not stop. Returns false when no block runs.
    pub fn interrupt(&self) -> bool {
        self.with_active(|active| active.interrupt.notify_one())
            .is_some()
    }

    /// Types into the running block's terminal.
    pub fn write_input(&self, bytes: &[u8]) -> io::Result<()> {
        self.with_active(|active| active.control.as_ref().map(|c| c.write_input(bytes)))
            .flatten()
            .unwrap_or_else(|| Err(io::Error::other("no block is running")))
    }

    /// Sends end-of-file (Ctrl-D) to the running block's terminal.
    pub fn send_eof(&self) -> io::Result<()> {
        self.write_input(&[0x04])
    }

    /// Resizes every kernel's terminal; programs see the new size at once (SIGWINCH).
    pub fn resize(&self, rows: u16, cols: u16) {
        if let Ok(mut size) = self.size.lock() {
            *size = (rows, cols);
        }
        // Idle kernels take the size when their next block starts.
        let _ = self.with_active(|active| active.control.as_ref().map(|c| c.resize(rows, cols)));
    }

    fn current_size(&self) -> (u16, u16) {
        self.size
            .lock()
            .map(|s| *s)
            .unwrap_or((self.config.rows, self.config.cols))
    }

    /// Follows whether the running block waits for keyboard input: true once it has printed
    /// nothing for a moment and its terminal's foreground process is blocked reading the
    /// terminal (Linux); false again when output comes or the block ends.
    pub fn awaiting_input(&self) -> watch::Receiver<bool> {
        self.waiting.subscribe()
    }

    /// Whether a block is running now.
    pub fn is_running(&self) -> bool {
        self.with_active(|_| ()).is_some()
    }

    /// The process ids of the live kernels' interpreters (each leads its own session).
    pub async fn pids(&self) -> Vec<(Language, i32)> {
        let kernels = self.kernels.lock().await;
        let mut pids: Vec<_> = kernels.iter().map(|(l, k)| (*l, k.pid())).collect();
        pids.sort();
        pids
    }

    /// Stops every kernel (and what they started), and closes the connection to a remote
    /// host (which cleans it). The next block starts fresh ones.
    pub async fn shutdown(&self) {
        self.kernels.lock().await.clear();
        let link = self.link.lock().await.take();
        if let Some(link) = link {
            // Dropping it waits for the host to be cleaned: not on a runtime thread.
            let _ = tokio::task::spawn_blocking(move || drop(link)).await;
        }
    }

    /// Stops one language's kernel, if it runs.
    pub async fn restart(&self, language: Language) {
        self.kernels.lock().await.remove(&language);
    }
}

/// What `ssh` needs of `process` to find the person's keys and agent, which an environment
/// cut to the core leaves out. `SSH_AUTH_SOCK`, which local kernels never get (whoever has
/// it can log in as the person), is for `ssh` alone: the agent is what logs it in.
const FOR_SSH: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "PATH",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "KRB5CCNAME",
];

/// The environment `ssh` gets (in full: it starts from nothing else), so that no `SendEnv`
/// can carry a secret to the host: the kernels' own (`kernel_env`: secrets filtered out by
/// the engine; over `process`, without what looks like a secret, when the kernels inherit
/// it, `clear_env` false), and `FOR_SSH` from `process`.
fn ssh_env(
    process: impl Iterator<Item = (OsString, OsString)>,
    kernel_env: &[(OsString, OsString)],
    clear_env: bool,
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = process
        .filter(|(k, v)| {
            let name = k.to_string_lossy();
            FOR_SSH.contains(&name.as_ref())
                || (!clear_env && !crate::secrets::is_secret(&name, &v.to_string_lossy()))
        })
        .collect();
    env.retain(|(k, _)| !kernel_env.iter().any(|(c, _)| c == k));
    env.extend(kernel_env.iter().cloned());
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        let mut names: Vec<String> = env
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// `ssh` keeps the agent that kernels lose, and gets no secret either way.
    #[test]
    fn ssh_gets_the_agent_and_no_secret() {
        let process = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/home/a"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("DB_PASS", "hunter2hunter2"),
            ("DATABASE_URL", "postgres://u:pw-0123456@h/db"),
            ("OPENAI_API_KEY", "sk-x"),
            ("PLAIN", "1"),
        ]);
        // The engine's way: the kernels' filtered environment, which lacks the agent.
        let kernel_env = crate::secrets::kernel_env(
            process
                .iter()
                .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into())),
            &crate::secrets::EnvSettings::default(),
            None,
        );
        let kernel_env: Vec<(OsString, OsString)> = kernel_env
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        assert!(!names(&kernel_env).contains(&"SSH_AUTH_SOCK".to_string()));
        let env = ssh_env(process.clone().into_iter(), &kernel_env, true);
        assert_eq!(names(&env), ["HOME", "PATH", "PLAIN", "SSH_AUTH_SOCK"]);
        // Kernels that inherit this process's environment.
        let env = ssh_env(process.into_iter(), &vars(&[("EXTRA", "1")]), false);
        assert_eq!(
            names(&env),
            ["EXTRA", "HOME", "PATH", "PLAIN", "SSH_AUTH_SOCK"]
        );
    }
}
