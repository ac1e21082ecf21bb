//! One session's SSH connection: a master connection (`ControlMaster`, its socket in a
//! private local directory) whose own session is the helper (`assets/remote/helper.sh`), and
//! over which every kernel is a multiplexed `ssh -tt` that pays no handshake.
//!
//! The helper being the master's session ties everything to oi-tui's life: when oi-tui ends,
//! however it ends, the helper's input closes; it kills every process the session started
//! there and removes its directory, its session ends, and with it the master connection and
//! every kernel's channel.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::super::Language;
use super::faults::describe_failure;
use super::helper::{Helper, Reply, sh_quote, with_body};
use super::target::SshTarget;

/// How long a command to the helper may take on a live connection.
pub(crate) const COMMAND_LIMIT: Duration = Duration::from_secs(20);

/// What the helper found on the host.
#[derive(Debug, Clone, Default)]
pub struct RemoteInfo {
    /// The session's private directory there.
    pub dir: String,
    /// The kernels' working directory there.
    pub workdir: String,
    /// The host's own name.
    pub hostname: String,
    /// `uname -s -m`.
    pub os: String,
    /// The login shell there.
    pub shell: String,
    /// The user oi-tui logs in as there.
    pub user: String,
    /// Where bubblewrap is there, if it is.
    pub bwrap: Option<String>,
    /// Programs found on its PATH: (name, path).
    pub programs: Vec<(String, String)>,
}

/// The live connection to one host.
pub struct Link {
    pub target: SshTarget,
    pub info: RemoteInfo,
    /// Holds the master's socket.
    ctl: tempfile::TempDir,
    master: Mutex<std::process::Child>,
    master_pid: i32,
    /// What `ssh` printed on its standard error (the reason when it fails).
    stderr: Arc<Mutex<String>>,
    helper: Helper,
    /// This process's environment for every `ssh` it starts (secrets filtered out).
    env: Vec<(OsString, OsString)>,
    clear_env: bool,
    /// The languages whose drivers are on the host.
    sent: tokio::sync::Mutex<HashSet<Language>>,
    /// The helper answered and has its files: a link dropped before (an attempt that
    /// failed or was cancelled) has nothing there to wait for.
    connected: bool,
    /// The host stopped answering (a kill was not acknowledged in time): the link counts as
    /// lost, so that the next block connects again instead of waiting on it.
    stalled: std::sync::atomic::AtomicBool,
}

/// The masters of live links, killed when oi-tui leaves in a hurry (`reaper::kill_all`).
static MASTERS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Ends every live master connection (their helpers then clean up the hosts).
pub fn kill_all() {
    let masters = match MASTERS.try_lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    for pid in masters {
        // SAFETY: kill(2) on a child this process started.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// How the link's processes are started: where `ssh` comes from and what it inherits.
#[derive(Debug, Clone, Default)]
pub struct LinkEnv {
    pub env: Vec<(OsString, OsString)>,
    pub clear_env: bool,
    /// The oi-tui session the kernels belong to (set as `OI_TUI_SESSION` there).
    pub session: Option<String>,
}

impl Link {
    /// Connects, starts the helper, and learns what the host has. Every failure is one
    /// sentence naming the host.
    pub async fn connect(target: &SshTarget, how: &LinkEnv) -> Result<Link, String> {
        if crate::shutdown::leaving() {
            return Err("oi-tui is stopping: no connection starts".to_string());
        }
        let name = &target.name;
        let strict = effective_option(target, how, "stricthostkeychecking").await?;
        let ctl = super::super::tempdirs::create_named(&std::env::temp_dir(), super::SSH_DIR)
            .map_err(|e| {
                format!("Cannot connect to {name}: no private directory for the connection ({e}).")
            })?;
        let socket = ctl.path().join("m");
        if socket.as_os_str().len() > 100 {
            return Err(format!(
                "Cannot connect to {name}: the temp directory's path is too long for a connection socket ({}); set TMPDIR to a shorter one.",
                ctl.path().display()
            ));
        }
        let mut cmd = ssh_command(how);
        cmd.arg("-M")
            .arg("-S")
            .arg(&socket)
            .args(["-o", "ControlMaster=yes", "-o", "ControlPersist=no"])
            .args(["-o", "BatchMode=yes", "-o", "RequestTTY=no", "-T"])
            .args(["-o", "ClearAllForwardings=yes", "-o", "LogLevel=ERROR"])
            .args([
                "-o",
                "ServerAliveInterval=10",
                "-o",
                "ServerAliveCountMax=3",
            ])
            .arg("-o")
            .arg(format!(
                "ConnectTimeout={}",
                target.connect_timeout.as_secs().max(1)
            ));
        // A host key that changed is never accepted; an unknown one only where the person's
        // own configuration says to accept new keys.
        if strict != "accept-new" {
            cmd.args(["-o", "StrictHostKeyChecking=yes"]);
        }
        cmd.args(&target.ssh_options)
            .arg("--")
            .arg(&target.host)
            .arg("exec /bin/sh -s")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut master = cmd
            .spawn()
            .map_err(|e| format!("Cannot connect to {name}: `ssh` could not be started ({e}); is OpenSSH's client installed?"))?;
        let master_pid = master.id() as i32;
        if let Ok(mut live) = MASTERS.lock() {
            live.push(master_pid);
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = master.stderr.take() {
            let sink = stderr.clone();
            let _ = std::thread::Builder::new()
                .name("ssh-stderr".into())
                .spawn(move || collect(err, &sink));
        }
        let (Some(stdin), Some(stdout)) = (master.stdin.take(), master.stdout.take()) else {
            return Err(format!("Cannot connect to {name}: `ssh` gave no pipes."));
        };
        let token = uuid::Uuid::new_v4().simple().to_string();
        let (helper, first) = Helper::start(stdin, stdout, format!(".BEGIN {token}"))
            .map_err(|e| format!("Cannot connect to {name}: {e}."))?;
        let preamble = format!(
            "oi_token={}\noi_session={}\noi_workdir={}\n",
            token,
            sh_quote(how.session.as_deref().unwrap_or("")),
            sh_quote(target.workdir.as_deref().unwrap_or(""))
        );
        helper.send_raw(preamble.as_bytes());
        helper.send_raw(include_str!("../../../assets/remote/helper.sh").as_bytes());
        let mut link = Link {
            target: target.clone(),
            info: RemoteInfo::default(),
            ctl,
            master: Mutex::new(master),
            master_pid,
            stderr,
            helper,
            env: how.env.clone(),
            clear_env: how.clear_env,
            sent: tokio::sync::Mutex::new(HashSet::new()),
            connected: false,
            stalled: std::sync::atomic::AtomicBool::new(false),
        };
        let limit = target.connect_timeout + Duration::from_secs(10);
        let hello = match tokio::time::timeout(limit, first).await {
            Ok(Ok(Ok(reply))) => reply,
            Ok(Ok(Err(message))) if !link.helper.is_closed() => {
                return Err(format!("Cannot use {name}: {message}."));
            }
            Ok(_) => return Err(link.failure().await),
            Err(_) => {
                return Err(format!(
                    "{name} did not answer within {} (unreachable, or a very slow link); nothing was started there.",
                    super::super::format_duration(limit)
                ));
            }
        };
        link.info = parse_hello(&hello);
        link.wait_for_socket(&socket).await;
        link.put("env", &env_file(&token, how, target)).await?;
        link.put(
            "kernel.sh",
            include_str!("../../../assets/remote/kernel.sh"),
        )
        .await?;
        link.connected = true;
        Ok(link)
    }

    /// Why the connection failed or dropped, from what `ssh` said.
    async fn failure(&self) -> String {
        // ssh prints its reason just before it exits.
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.master_alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let said = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        describe_failure(&self.target, &said)
    }

    /// Whether the master connection still runs.
    pub fn master_alive(&self) -> bool {
        self.master
            .lock()
            .map(|mut m| matches!(m.try_wait(), Ok(None)))
            .unwrap_or(false)
    }

    /// Once the connection is lost: waits a moment (a second at most) for the master to
    /// end, so that it is reaped now rather than left a zombie until the link is dropped.
    pub async fn let_go(&self) {
        let deadline = Instant::now() + Duration::from_secs(1);
        while self.master_alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Whether the connection is gone (the master ended, or the helper's output did, or the
    /// host stopped answering).
    pub fn is_lost(&self) -> bool {
        self.helper.is_closed() || !self.master_alive() || self.is_stalled()
    }

    /// The host stopped answering the helper's commands.
    pub fn is_stalled(&self) -> bool {
        self.stalled.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn mark_stalled(&self) {
        self.stalled
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// One sentence on why the connection dropped, once it has.
    pub async fn loss(&self) -> String {
        let said = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let why = said
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| format!(" (ssh: {l})"))
            .unwrap_or_default();
        if self.is_stalled() && !self.helper.is_closed() && self.master_alive() {
            return format!(
                "{} stopped answering (the connection stalled), so oi-tui let go of it",
                self.target.name
            );
        }
        format!("The connection to {} was lost{why}", self.target.name)
    }

    async fn wait_for_socket(&self, socket: &Path) {
        let deadline = Instant::now() + Duration::from_secs(3);
        while !socket.exists() && Instant::now() < deadline && self.master_alive() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Writes a file into the session's directory there.
    pub async fn put(&self, name: &str, body: &str) -> Result<(), String> {
        let command = |seq: u64| with_body(&format!("oi_put {seq} {name}"), body);
        self.helper
            .call(command, COMMAND_LIMIT)
            .await
            .map(|_| ())
            .map_err(|e| format!("Cannot write {name} on {}: {e}.", self.target.name))
    }

    /// Sends a command to the helper and waits for its answer.
    pub(crate) async fn call(&self, command: impl FnOnce(u64) -> String) -> Result<Reply, String> {
        self.helper.call(command, COMMAND_LIMIT).await
    }

    /// Sends a command to the helper, without waiting for it.
    pub(crate) fn send(&self, command: impl FnOnce(u64) -> String) {
        drop(self.helper.command(command));
    }

    /// Sends a language's driver and its interpreter's command line, the first time.
    pub async fn prepare(&self, language: Language, run_line: &str) -> Result<(), String> {
        let mut sent = self.sent.lock().await;
        if sent.contains(&language) {
            return Ok(());
        }
        let (name, source) = super::super::kernel::driver(language);
        self.put(name, source).await?;
        self.put(&format!("run-{}", language.name()), run_line)
            .await?;
        sent.insert(language);
        Ok(())
    }

    /// The `ssh -tt` command line of a kernel:
    /// `/bin/sh DIR/kernel.sh LANGUAGE KERNEL READY ROWS COLS` in a PTY there of that size,
    /// over the master connection (`kernel.sh` prints `OI_TUI_READY_READY` once the login's
    /// own output is over).
    pub fn kernel_command(
        &self,
        language: Language,
        kernel: &str,
        ready: &str,
        (rows, cols): (u16, u16),
    ) -> std::process::Command {
        let mut cmd = std::process::Command::new("ssh");
        if self.clear_env {
            cmd.env_clear();
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.env("TERM", "xterm-256color");
        cmd.arg("-tt");
        cmd.arg("-q");
        // No escape character: `~.` typed at the start of a line is the block's input, not
        // a way to close the connection.
        cmd.args(["-e", "none"]);
        cmd.arg("-S");
        cmd.arg(self.socket());
        cmd.args(["-o", "ControlMaster=no", "-o", "BatchMode=yes"]);
        cmd.args(&self.target.ssh_options);
        cmd.arg("--");
        cmd.arg(&self.target.host);
        cmd.arg(format!(
            "exec /bin/sh {}/kernel.sh {} {kernel} {ready} {} {}",
            self.info.dir,
            language.name(),
            rows.max(1),
            cols.max(1)
        ));
        cmd
    }

    fn socket(&self) -> PathBuf {
        self.ctl.path().join("m")
    }

    /// The program found there for `name`, if any.
    pub fn program(&self, name: &str) -> Option<&str> {
        self.info
            .programs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p.as_str())
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        // The helper cleans the host when its input closes; its session's end ends the
        // master. A master that lingers (a dead link) is killed.
        self.helper.close();
        // (A connection still being made is hardly waited for: Ctrl-C cancels it at once.)
        let grace = if self.connected && !self.is_stalled() {
            Duration::from_secs(3)
        } else {
            Duration::from_millis(300)
        };
        let deadline = Instant::now() + grace;
        if let Ok(mut master) = self.master.lock() {
            while matches!(master.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if matches!(master.try_wait(), Ok(None)) {
                let _ = master.kill();
                let _ = master.wait();
            }
        }
        if let Ok(mut live) = MASTERS.lock() {
            live.retain(|&p| p != self.master_pid);
        }
        super::super::tempdirs::forget(self.ctl.path());
    }
}

/// An `ssh` with the link's environment.
fn ssh_command(how: &LinkEnv) -> std::process::Command {
    use std::os::unix::process::CommandExt as _;
    let mut cmd = std::process::Command::new("ssh");
    if how.clear_env {
        cmd.env_clear();
    }
    cmd.envs(how.env.iter().map(|(k, v)| (k, v)));
    // Not the person's terminal's: Ctrl-C in headless mode must not end the connection.
    cmd.process_group(0);
    cmd
}

/// An option's value as `ssh -G` resolves it for the host (the person's configuration).
async fn effective_option(target: &SshTarget, how: &LinkEnv, key: &str) -> Result<String, String> {
    let mut cmd = ssh_command(how);
    cmd.arg("-G")
        .args(&target.ssh_options)
        .arg("--")
        .arg(&target.host);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(10), cmd.output())
        .await
        .map_err(|_| format!("Cannot connect to {}: `ssh -G` did not answer.", target.name))?
        .map_err(|e| {
            format!(
                "Cannot connect to {}: `ssh` could not be started ({e}); is OpenSSH's client installed?",
                target.name
            )
        })?;
    if !output.status.success() {
        return Err(describe_failure(
            target,
            &String::from_utf8_lossy(&output.stderr),
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or("")
        .trim()
        .to_string())
}

fn collect(mut from: std::process::ChildStderr, into: &Mutex<String>) {
    use std::io::Read;
    let mut buf = [0u8; 4096];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut text) = into.lock() {
                    text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    // Only the end matters.
                    if text.len() > 16 * 1024 {
                        let cut = text.len() - 8 * 1024;
                        let cut = (cut..text.len())
                            .find(|&i| text.is_char_boundary(i))
                            .unwrap_or(0);
                        text.drain(..cut);
                    }
                }
            }
        }
    }
}

fn parse_hello(reply: &Reply) -> RemoteInfo {
    let mut info = RemoteInfo::default();
    for value in reply.values("HELLO") {
        let Some((key, value)) = value.split_once('=') else {
            continue;
        };
        let value = value.to_string();
        match key {
            "dir" => info.dir = value,
            "workdir" => info.workdir = value,
            "host" => info.hostname = value,
            "os" => info.os = value,
            "shell" => info.shell = value,
            "user" => info.user = value,
            "bwrap" => info.bwrap = Some(value),
            _ => {}
        }
    }
    info.programs = reply
        .values("HAVE")
        .filter_map(|v| v.split_once(' '))
        .map(|(n, p)| (n.to_string(), p.to_string()))
        .collect();
    info
}

/// The variables every kernel there gets (sourced by `kernel.sh`).
fn env_file(token: &str, how: &LinkEnv, target: &SshTarget) -> String {
    let mut text = format!(
        "oi_token={token}\nOI_TUI=1\nOI_TUI_REMOTE={token}\nOI_TUI_SESSION={}\nexport OI_TUI OI_TUI_REMOTE OI_TUI_SESSION\n",
        sh_quote(how.session.as_deref().unwrap_or(""))
    );
    for (key, value) in &target.env {
        if is_name(key) {
            text.push_str(&format!("{key}={}\nexport {key}\n", sh_quote(value)));
        }
    }
    text
}

/// A variable name `sh` takes.
pub fn is_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
