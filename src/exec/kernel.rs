//! One persistent interpreter in its own PTY, and the run of one block in it.
//!
//! A block's life: its code is written to a file in the kernel's private directory, and a
//! line `BLOCK NONCE PATH` goes down the control FIFO to the driver. The driver runs the file
//! inside the interpreter's persistent state and writes the end marker. Meanwhile every output
//! byte goes to the sink (the live terminal) and to the text capture (for the model). The run
//! ends when the marker arrives, or when the kernel itself ends. An interrupt or a timeout
//! sends SIGINT; if the block is still running after the grace period, the kernel's whole
//! session is killed and the result says that its state is lost.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize};
use tokio::sync::{Notify, watch};
use tokio::time::{sleep_until, timeout};

use super::language::{Interpreter, Language};
use super::marker::MarkerScanner;
use super::pty::{ExitInfo, PtyControl, PtyProcess, signal_name};
use super::result::{RunResult, RunStatus, describe_exit, format_duration};
use super::text::TextCapture;

mod place;

/// After the kernel has exited, output still in flight is awaited this long.
const DRAIN_IDLE: Duration = Duration::from_millis(250);
/// How long to wait for a killed kernel to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(3);
/// A block silent this long may be waiting for input: its terminal is looked at.
const QUIET: Duration = Duration::from_millis(300);
/// How often a silent block's terminal is looked at.
const PROBE_EVERY: Duration = Duration::from_millis(250);

/// How one block is to be run.
#[derive(Debug, Clone)]
pub(crate) struct RunOptions {
    pub timeout: Option<Duration>,
    pub grace: Duration,
    pub max_output: usize,
    pub stdin_eof: bool,
    /// The time limit is the unattended default, not one the user set.
    pub timeout_is_default: bool,
}

pub(crate) struct Kernel {
    /// When the running (or last) block was handed over, by the file system's clock.
    handed_at: Option<std::time::SystemTime>,
    /// Output that came before the first block (passed on as idle output).
    early: Vec<u8>,
    /// The size a remote kernel's terminal there was last seen to have.
    remote_size: Option<(u16, u16)>,
    language: Language,
    process: PtyProcess,
    nonce: String,
    place: Place,
}

/// Where the interpreter runs.
enum Place {
    /// Here: its private directory and the write end of its control FIFO.
    Local {
        control_fifo: File,
        dir: tempfile::TempDir,
        /// Where the driver saves figures (apart from `dir`: blocks may write here).
        figures: PathBuf,
        /// The figure directory's identity when oi-tui made it: a block may replace it
        /// (with a link, another directory), and then nothing is taken from it.
        figures_identity: crate::dirfd::Identity,
    },
    /// On a host over SSH: `ssh -tt` runs in the local PTY; the helper there knows the
    /// kernel by `name` (its directory in the session's one).
    Remote {
        link: std::sync::Arc<super::remote::Link>,
        name: String,
    },
}

/// How the wait for a block ended.
enum End {
    Marker(i32),
    Exited(ExitInfo),
    Killed(ExitInfo),
}

impl Drop for Kernel {
    fn drop(&mut self) {
        match &self.place {
            // The directory goes with `dir`, right after this.
            Place::Local { dir, figures, .. } => {
                super::tempdirs::forget(dir.path());
                let _ = std::fs::remove_dir_all(figures);
            }
            // The kernel there, what it started and its directory; the local `ssh` goes
            // with `process`.
            Place::Remote { link, name } => {
                link.send(|seq| format!("oi_kill {seq} {name}\n"));
            }
        }
    }
}

/// With nobody to type (`stdin_eof`): what was done about a block that waits for keyboard
/// input. End-of-file first, as Ctrl-D would (it ends `cat`, `read`, REPLs and shells at
/// their prompt, in cooked and in raw mode); to a reader that shrugs it off (a pager, an
/// editor) a hangup, as when a terminal goes away; then SIGKILL.
#[derive(Debug, Default)]
struct Starved {
    /// End-of-file sent to readers that were waiting.
    eofs: u32,
    /// When the programs reading the terminal were sent SIGHUP (or SIGINT, when the
    /// kernel itself was the reader).
    hung_up: Option<tokio::time::Instant>,
    /// The readers were killed.
    killed: bool,
}

/// End-of-file is sent this many times before the readers are ended.
const MAX_EOFS: u32 = 3;
/// How long readers have to end after a hangup before they are killed.
const HANGUP_WAIT: Duration = Duration::from_secs(1);

impl Kernel {
    pub fn start(
        language: Language,
        interpreter: &Interpreter,
        cwd: &Path,
        env: &[(OsString, OsString)],
        clear_env: bool,
        prefix: &[OsString],
        size: PtySize,
    ) -> io::Result<Kernel> {
        // Nothing new starts while oi-tui leaves (its temp directory would stay behind).
        if crate::shutdown::leaving() {
            return Err(io::Error::other("oi-tui is stopping: no kernel starts"));
        }
        // 0700 from the start: it holds the code of every block. Made where no block can
        // write (see `tempdirs::private`).
        let private = super::tempdirs::private().map_err(io::Error::other)?;
        let dir = super::tempdirs::create(&private.kernels, language)?;
        let (driver_name, driver_source) = driver(language);
        let driver_path = dir.path().join(driver_name);
        write_private(&driver_path, driver_source.as_bytes())?;
        // Where the driver saves the figures a block shows (see `images`): the one place
        // of oi-tui's that blocks may write, apart from the code.
        let figures = private
            .figures
            .join(dir.path().file_name().unwrap_or_default());
        std::fs::DirBuilder::new().mode(0o700).create(&figures)?;
        let figures_identity = crate::dirfd::Dir::open_nofollow(&figures)?.identity()?;
        let fifo_path = dir.path().join("control");
        make_fifo(&fifo_path)?;
        // Opened for reading and writing, so that opening never waits for the driver.
        let control_fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo_path)?;

        // A sandbox wraps the interpreter's command line without exec knowing how.
        let mut cmd = match prefix.split_first() {
            Some((wrapper, wrapper_args)) => {
                let mut cmd = CommandBuilder::new(wrapper);
                cmd.args(wrapper_args);
                cmd.arg(&interpreter.program);
                cmd
            }
            None => CommandBuilder::new(&interpreter.program),
        };
        cmd.args(&interpreter.args);
        cmd.arg(&driver_path);
        cmd.arg(&fifo_path);
        cmd.cwd(cwd);
        if clear_env {
            cmd.env_clear();
        }
        for (key, value) in env {
            cmd.env(key, value);
        }
        cmd.env("TERM", "xterm-256color");
        cmd.env("OI_TUI", "1");
        cmd.env(super::images::FIGURES_VAR, &figures);
        // Inherited by everything the blocks start, however detached: what still runs when
        // oi-tui leaves is found by it (see `reaper::left_running`).
        cmd.env(super::reaper::OWNER_VAR, std::process::id().to_string());
        let process = PtyProcess::spawn(cmd, size)?;
        Ok(Kernel {
            handed_at: None,
            early: Vec::new(),
            remote_size: None,
            language,
            process,
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            place: Place::Local {
                control_fifo,
                dir,
                figures,
                figures_identity,
            },
        })
    }

    pub fn control(&self) -> std::sync::Arc<PtyControl> {
        self.process.control.clone()
    }

    pub fn language(&self) -> Language {
        self.language
    }

    pub fn pid(&self) -> i32 {
        self.process.pid()
    }

    /// When the last block was handed over, by the clock the file system stamps files
    /// with (coarser than `SystemTime::now()`: a file the block writes at once may carry
    /// an earlier time than the system clock said at its start, never an earlier one than
    /// this).
    pub fn handed_at(&self) -> Option<std::time::SystemTime> {
        self.handed_at
    }

    /// The kernel's private directory (the driver, the control FIFO, the blocks' code);
    /// None for a kernel on another host.
    pub fn dir(&self) -> Option<&Path> {
        match &self.place {
            Place::Local { dir, .. } => Some(dir.path()),
            Place::Remote { .. } => None,
        }
    }

    /// Where the driver saves the figures a block shows (here), and that directory's
    /// identity when oi-tui made it.
    pub(crate) fn figures_dir(&self) -> Option<(PathBuf, crate::dirfd::Identity)> {
        match &self.place {
            Place::Local {
                figures,
                figures_identity,
                ..
            } => Some((figures.clone(), *figures_identity)),
            Place::Remote { .. } => None,
        }
    }

    /// The interpreter's working directory now (Linux; elsewhere None), which a block may
    /// have changed (`os.chdir`, `cd`).
    pub fn current_dir(&self) -> Option<PathBuf> {
        self.dir()?;
        std::fs::read_link(format!("/proc/{}/cwd", self.local_interpreter_pid())).ok()
    }

    /// The interpreter's process: the process started, or, when that is the sandbox
    /// around it (bubblewrap, or oi-tui's trampoline waiting on a process namespace or
    /// tracing), the one process it runs, followed down.
    pub(super) fn local_interpreter_pid(&self) -> i32 {
        let mut pid = self.pid();
        for _ in 0..4 {
            let Ok(exe) = std::fs::read_link(format!("/proc/{pid}/exe")) else {
                break;
            };
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let trampoline = cmdline
                .split(|&b| b == 0)
                .nth(1)
                .is_some_and(|arg| arg == crate::sandbox::TRAMPOLINE.as_bytes());
            if !trampoline && exe.file_name().is_none_or(|name| name != "bwrap") {
                break;
            }
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            let mut them = children.split_whitespace().filter_map(|c| c.parse().ok());
            match (them.next(), them.next()) {
                (Some(child), None) => pid = child,
                _ => break,
            }
        }
        pid
    }

    /// The interpreter's standard streams that are closed (Linux, here; elsewhere none
    /// known).
    pub fn closed_stdio(&self) -> Vec<&'static str> {
        if !cfg!(target_os = "linux") || self.dir().is_none() {
            return Vec::new();
        }
        let pid = self.local_interpreter_pid();
        [
            (0, "standard input"),
            (1, "standard output"),
            (2, "standard error"),
        ]
        .into_iter()
        .filter(|(fd, _)| {
            std::fs::symlink_metadata(format!("/proc/{pid}/fd/{fd}")).is_err()
                && std::fs::metadata(format!("/proc/{pid}")).is_ok()
        })
        .map(|(_, name)| name)
        .collect()
    }

    pub fn is_dead(&self) -> bool {
        self.process.exited().is_some()
    }

    /// Passes output that arrived while no block ran (background jobs) to the sink.
    pub fn pass_idle_output(&mut self, sink: &mut (dyn FnMut(&[u8]) + Send)) {
        if !self.early.is_empty() {
            sink(&std::mem::take(&mut self.early));
        }
        while let Ok(chunk) = self.process.output.try_recv() {
            sink(&chunk);
        }
    }

    pub async fn run(
        &mut self,
        block_id: u64,
        code: &str,
        opts: &RunOptions,
        interrupt: &Notify,
        waiting: &watch::Sender<bool>,
        sink: &mut (dyn FnMut(&[u8]) + Send),
    ) -> RunResult {
        let started = Instant::now();
        let set_waiting = |now: bool| {
            waiting.send_if_modified(|w| std::mem::replace(w, now) != now);
        };
        set_waiting(false);
        self.pass_idle_output(sink);
        // (A remote kernel's are put back as its block ends, below.)
        if self.dir().is_some() {
            self.process.control.restore_modes();
        }
        // oi-tui leaving (a signal, a fatal error) removes the kernel's directory: a block
        // not handed over by then, or whose hand-over failed for that, did not run.
        let handed = if crate::shutdown::leaving() {
            None
        } else {
            Some(self.hand_over(block_id, code).await)
        };
        let block_file = match handed {
            Some(Ok(path)) => path,
            Some(Err(e)) if !crate::shutdown::leaving() => {
                if let Some(link) = self.link()
                    && link.is_lost()
                {
                    return RunResult::unavailable(
                        block_id,
                        self.language,
                        format!(
                            "{}, so the block was not handed over: it did not run, and the {} kernel's state there is lost. The next block reconnects.",
                            link.loss().await,
                            self.language
                        ),
                    );
                }
                return RunResult::unavailable(
                    block_id,
                    self.language,
                    format!(
                        "Could not hand the block to the {} kernel: {e}.",
                        self.language
                    ),
                );
            }
            _ => {
                return RunResult::unavailable(
                    block_id,
                    self.language,
                    "oi-tui was stopped (a signal, or a fatal error) before this block started; it did not run.".to_string(),
                );
            }
        };
        if opts.stdin_eof {
            // Nobody can answer: a read from the terminal sees end-of-file at once.
            let _ = self.process.control.write_input(&[0x04]);
        }

        let mut scanner = MarkerScanner::new(&self.nonce, block_id);
        let mut capture = TextCapture::new(opts.max_output);
        let deadline = opts.timeout.map(|t| started + t);
        let mut interrupted = false;
        let mut timed_out = false;
        let mut grace: Option<tokio::time::Instant> = None;
        let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
        let mut starved = Starved::default();
        let mut survivors = Vec::new();
        let mut last_output = tokio::time::Instant::now();
        let mut probe = tokio::time::interval(PROBE_EVERY);
        probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        let end = loop {
            if self.process.exited().is_some() {
                if let Some(status) = self.drain(&mut scanner, &mut capture, sink).await {
                    break End::Marker(status);
                }
                break End::Exited(self.await_exit().await);
            }
            tokio::select! {
                chunk = self.process.output.recv() => match chunk {
                    Some(chunk) => {
                        last_output = tokio::time::Instant::now();
                        set_waiting(false);
                        let mut both = |b: &[u8]| {
                            sink(b);
                            capture.feed(b);
                        };
                        if let Some(found) = scanner.feed(&chunk, &mut both) {
                            if !found.rest.is_empty() {
                                sink(&found.rest);
                            }
                            break End::Marker(found.status);
                        }
                    }
                    // The PTY closed: the kernel is ending; the loop's top collects it.
                    None => {
                        let _ = timeout(REAP_WAIT, self.process.exit.wait_for(Option::is_some)).await;
                        if self.process.exited().is_none() {
                            survivors = self.kill().await;
                            break End::Killed(self.await_exit().await);
                        }
                    }
                },
                _ = self.process.exit.changed() => {}
                _ = probe.tick() => {
                    // (A block being stopped is not asked about: on a link that stalled,
                    // each question would hold this loop for its time limit.)
                    if last_output.elapsed() >= QUIET && !interrupted && !timed_out {
                        let readers = self.terminal_readers().await;
                        set_waiting(!readers.is_empty());
                        if !readers.is_empty() && opts.stdin_eof {
                            self.starve(&mut starved, opts, &mut grace).await;
                        }
                    }
                }
                _ = interrupt.notified() => {
                    interrupted = true;
                    self.interrupt();
                    grace.get_or_insert(tokio::time::Instant::now() + opts.grace);
                }
                _ = sleep_until(deadline.map_or(far, tokio::time::Instant::from_std)), if deadline.is_some() && !timed_out => {
                    timed_out = true;
                    self.interrupt();
                    grace.get_or_insert(tokio::time::Instant::now() + opts.grace);
                }
                _ = sleep_until(grace.unwrap_or(far)), if grace.is_some() => {
                    survivors = self.kill().await;
                    let _ = self.drain(&mut scanner, &mut capture, sink).await;
                    break End::Killed(self.await_exit().await);
                }
            }
        };
        set_waiting(false);
        // A remote kernel's terminal modes are put back by the helper, which takes commands
        // in order: before the next block, and while nobody waits (as the model answers).
        if let Place::Remote { link, name } = &self.place
            && self.process.exited().is_none()
        {
            link.send(|seq| format!("oi_modes {seq} {name}\n"));
        }
        scanner.flush(&mut |b| {
            sink(b);
            capture.feed(b);
        });
        if self.dir().is_some() {
            let _ = std::fs::remove_file(block_file);
        }

        let output_bytes = capture.total_bytes();
        let text = capture.finish();
        let mut result = RunResult {
            block_id,
            language: self.language,
            status: RunStatus::Success,
            exit_code: None,
            signal: None,
            duration: started.elapsed(),
            output: text.text,
            cut: text.cut,
            output_bytes,
            state_lost: self.is_dead(),
            notes: Vec::new(),
            file: None,
            images: Vec::new(),
        };
        if starved.eofs > 0 {
            result.notes.push(if starved.hung_up.is_some() {
                "The block waited for keyboard input that cannot come (nobody can type in this mode); end-of-file did not end it, so the programs reading the terminal were ended.".to_string()
            } else {
                "The block waited for keyboard input that cannot come (nobody can type in this mode), so it was sent end-of-file.".to_string()
            });
        }
        if timed_out {
            let limit = opts.timeout.unwrap_or_default();
            let hint = if opts.timeout_is_default {
                " (the default for runs nobody can watch; set another with --timeout SECONDS or `timeout =` in the config file)"
            } else {
                ""
            };
            result.notes.push(format!(
                "The block ran longer than its time limit of {}{hint} and was stopped.",
                format_duration(limit)
            ));
        } else if interrupted {
            result.notes.push("The block was interrupted.".to_string());
        }
        match end {
            End::Marker(status) => result.exit_code = Some(status),
            End::Exited(info) if crate::shutdown::leaving() => {
                // oi-tui is leaving and stopped its kernels: there is no next block.
                result.state_lost = false;
                result.exit_code = info.code;
                result.signal = info.signal.map(signal_name);
                result.notes.push(
                    "oi-tui was stopped (a signal, or a fatal error) while this block ran, and stopped it with everything it started.".to_string(),
                );
            }
            End::Exited(_) if self.connection_lost().await => {
                let link = self
                    .link()
                    .map(|l| l.target.name.clone())
                    .unwrap_or_default();
                let loss = self.loss().await;
                result.state_lost = true;
                result.notes.push(format!(
                    "{loss} while this block ran: the block ended with it, and the {lang} kernel's state on {link} (variables, imports, working directory) is lost. What it started there was stopped with the connection; the next block reconnects and starts a fresh kernel.",
                    lang = self.language,
                ));
            }
            End::Exited(info) => {
                result.exit_code = info.code;
                result.signal = info.signal.map(signal_name);
                result.notes.push(format!(
                    "The {lang} kernel itself exited with {how}, so its state (variables, imports, working directory) is lost; the next {lang} block starts a fresh kernel.",
                    lang = self.language,
                    how = describe_exit(info.code, info.signal),
                ));
            }
            End::Killed(_) if self.link().is_some_and(|l| l.is_stalled()) => {
                let loss = self.loss().await;
                result.state_lost = true;
                result.notes.push(format!(
                    "{loss}: the block could not be stopped there, so it was abandoned here, with the {lang} kernel's state. What it started there ends with the connection; the next block connects again and starts a fresh kernel.",
                    lang = self.language,
                ));
            }
            End::Killed(info) => {
                result.signal = info.signal.map(signal_name);
                result.state_lost = true;
                let killed = if survivors.is_empty() {
                    "everything it started were killed".to_string()
                } else {
                    format!(
                        "what it started were killed, except {} that had detached (setsid or nohup) and still run: {}",
                        plural(survivors.len(), "process", "processes"),
                        list_survivors(&survivors)
                    )
                };
                result.notes.push(format!(
                    "It did not stop within {grace} of SIGINT, so the {lang} kernel and {killed}. Its state (variables, imports, working directory) is lost; the next {lang} block starts a fresh kernel.",
                    grace = format_duration(opts.grace),
                    lang = self.language,
                ));
            }
        }
        result.status = if timed_out {
            RunStatus::TimedOut
        } else if interrupted {
            RunStatus::Interrupted
        } else if result.exit_code == Some(0) && result.signal.is_none() {
            RunStatus::Success
        } else {
            RunStatus::Failed
        };
        if let Some(cut) = &result.cut {
            result.notes.push(if cut.lines == 0 {
                format!(
                    "The output was long ({}): the middle of a long line was cut.",
                    super::human_bytes(cut.total_bytes)
                )
            } else {
                format!(
                    "The output was long: {} of its {} lines were cut from the middle.",
                    cut.lines, cut.total_lines
                )
            });
        }
        result
    }

    /// A block waits for keyboard input nobody can type: the next step of `Starved`.
    async fn starve(
        &self,
        starved: &mut Starved,
        opts: &RunOptions,
        grace: &mut Option<tokio::time::Instant>,
    ) {
        let control = &self.process.control;
        let now = tokio::time::Instant::now();
        match starved.hung_up {
            None if starved.eofs < MAX_EOFS => {
                starved.eofs += 1;
                let _ = control.write_input(&[0x04]);
            }
            None => {
                starved.hung_up = Some(now);
                let readers = self.terminal_readers().await;
                let kernel = self.interpreter_pid().await;
                let others: Vec<i32> = readers
                    .iter()
                    .copied()
                    .filter(|&p| Some(p) != kernel)
                    .collect();
                self.signal(&others, libc::SIGHUP);
                if others.is_empty() {
                    // The interpreter itself reads: its driver ends the block on SIGINT.
                    self.interrupt();
                }
                grace.get_or_insert(now + HANGUP_WAIT + opts.grace);
            }
            Some(when) if !starved.killed && now.duration_since(when) >= HANGUP_WAIT => {
                starved.killed = true;
                let kernel = self.interpreter_pid().await;
                let readers: Vec<i32> = self
                    .terminal_readers()
                    .await
                    .into_iter()
                    .filter(|&p| Some(p) != kernel)
                    .collect();
                self.signal(&readers, libc::SIGKILL);
            }
            Some(_) => {}
        }
    }

    /// Writes the block's file and tells the driver to run it.
    async fn hand_over(&mut self, block_id: u64, code: &str) -> io::Result<PathBuf> {
        let extension = self.language.extension();
        let (dir, control_fifo) = match &mut self.place {
            Place::Local {
                dir, control_fifo, ..
            } => (dir.path().to_path_buf(), control_fifo),
            Place::Remote { link, name } => {
                if code.contains('\0') {
                    return Err(io::Error::other(
                        "the code holds a NUL byte, which cannot be sent to a remote host",
                    ));
                }
                let nonce = &self.nonce;
                let code = super::remote::sh_quote(code);
                let command = |seq: u64| {
                    format!("oi_block {seq} {name} {block_id} {nonce} {extension} {code}\n")
                };
                link.call(command).await.map_err(io::Error::other)?;
                self.handed_at = Some(std::time::SystemTime::now());
                return Ok(PathBuf::from(format!("block-{block_id}.{extension}")));
            }
        };
        let path = dir.join(format!("block-{block_id}.{extension}"));
        // A block run again (the same id) gets its file anew.
        let _ = std::fs::remove_file(&path);
        write_private(&path, code.as_bytes())?;
        self.handed_at = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let line = format!("{block_id} {} {}\n", self.nonce, path.display());
        control_fifo.write_all(line.as_bytes())?;
        Ok(path)
    }

    /// After the kernel ended: takes what output is still in flight. Returns the status if
    /// the marker turns up in it.
    async fn drain(
        &mut self,
        scanner: &mut MarkerScanner,
        capture: &mut TextCapture,
        sink: &mut (dyn FnMut(&[u8]) + Send),
    ) -> Option<i32> {
        while let Ok(Some(chunk)) = timeout(DRAIN_IDLE, self.process.output.recv()).await {
            let mut both = |b: &[u8]| {
                sink(b);
                capture.feed(b);
            };
            if let Some(found) = scanner.feed(&chunk, &mut both) {
                if !found.rest.is_empty() {
                    sink(&found.rest);
                }
                return Some(found.status);
            }
        }
        None
    }

    async fn await_exit(&mut self) -> ExitInfo {
        let waited = timeout(REAP_WAIT, self.process.exit.wait_for(Option::is_some))
            .await
            .is_ok();
        if !waited {
            let _ = self.kill().await;
            let _ = timeout(REAP_WAIT, self.process.exit.wait_for(Option::is_some)).await;
        }
        self.process.exited().unwrap_or(ExitInfo {
            code: None,
            signal: None,
        })
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `pid 123 (sleep), pid 124 (python3)`, the first few of them.
fn list_survivors(survivors: &[super::reaper::Survivor]) -> String {
    const SHOWN: usize = 5;
    let mut list: Vec<String> = survivors
        .iter()
        .take(SHOWN)
        .map(|s| {
            if s.name.is_empty() {
                format!("pid {}", s.pid)
            } else {
                format!("pid {} ({})", s.pid, s.name)
            }
        })
        .collect();
    if survivors.len() > SHOWN {
        list.push(format!("and {} more", survivors.len() - SHOWN));
    }
    list.join(", ")
}

fn make_fifo(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::other("the kernel directory's path holds a NUL byte"))?;
    // SAFETY: mkfifo(3) with a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The driver file for a language: its name in the kernel's directory and its source.
pub(crate) fn driver(language: Language) -> (&'static str, &'static str) {
    match language {
        Language::Python => ("driver.py", include_str!("../../assets/drivers/python.py")),
        Language::Shell => ("driver.sh", include_str!("../../assets/drivers/shell.sh")),
        Language::JavaScript => ("driver.js", include_str!("../../assets/drivers/node.js")),
        Language::R => ("driver.R", include_str!("../../assets/drivers/r.R")),
        Language::Ruby => ("driver.rb", include_str!("../../assets/drivers/ruby.rb")),
        Language::Perl => ("driver.pl", include_str!("../../assets/drivers/perl.pl")),
        Language::Java => (
            "Driver.java",
            include_str!("../../assets/drivers/Driver.java"),
        ),
        Language::PowerShell => (
            "driver.ps1",
            include_str!("../../assets/drivers/powershell.ps1"),
        ),
        Language::Html => ("unused.html", ""),
    }
}

/// Writes a new file only its owner can read (0600): blocks and drivers hold code, which
/// may hold secrets (in a 0700 directory). Never through a link, never into a file that is
/// already there: what is written is exactly the new file that the driver then reads.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}
