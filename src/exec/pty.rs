//! One process in its own PTY: spawning, the output stream, the exit status, and the
//! controls that work while it runs (interrupt, input, resize, kill).
//!
//! Two threads serve each process. The reader polls the PTY master and a stop pipe, and sends
//! output chunks into a bounded channel, so a block that prints faster than anyone reads is
//! slowed down rather than buffered without end. The waiter reaps the process and publishes
//! how it ended.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};

use super::reaper;

/// Output chunks buffered between the reader thread and the consumer.
const CHANNEL_CHUNKS: usize = 64;
/// The most the reader takes from the PTY at once.
const READ_SIZE: usize = 64 * 1024;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal number, when a signal ended it.
    pub signal: Option<i32>,
}

/// Sets a terminal's size: one that is not here (a remote kernel's, which `ssh` reaches).
pub(crate) type Resizer = Box<dyn Fn(u16, u16) + Send + Sync>;

/// The terminal a process runs in: a PTY here, whose master oi-tui holds, or one elsewhere
/// (a remote kernel's, behind `ssh` on pipes) that only its resizer reaches.
enum Terminal {
    Here(Mutex<Box<dyn MasterPty + Send>>),
    Elsewhere(Resizer),
}

/// The controls of a running PTY process, shareable across tasks.
pub(crate) struct PtyControl {
    terminal: Terminal,
    writer: Mutex<Box<dyn Write + Send>>,
    pid: i32,
    /// The terminal modes the PTY started with, put back before each block.
    sane: Option<libc::termios>,
    /// The terminal's device (`/dev/pts/N`), to know when a program reads it.
    tty: Option<std::path::PathBuf>,
}

/// A process in a PTY, as its owner sees it.
pub(crate) struct PtyProcess {
    pub control: Arc<PtyControl>,
    pub output: mpsc::Receiver<Vec<u8>>,
    pub exit: watch::Receiver<Option<ExitInfo>>,
    /// Dropping this closes the stop pipe, which ends the reader thread.
    _stop_reader: OwnedFd,
    /// Kept so that portable-pty's handle lives as long as the process does (none for a
    /// process on pipes).
    _child: Option<Box<dyn portable_pty::Child + Send + Sync>>,
    /// Lets the waiter thread reap the process, and waits for it to have done so.
    reap: Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl PtyProcess {
    pub fn spawn(cmd: CommandBuilder, size: PtySize) -> io::Result<PtyProcess> {
        let pair = native_pty_system()
            .openpty(size)
            .map_err(|e| io::Error::other(format!("cannot open a PTY: {e}")))?;
        let child = pair
            .slave
            .spawn_command(cmd)
            .map_err(|e| io::Error::other(format!("cannot start the process: {e}")))?;
        // The parent keeps no slave descriptor, so the reader sees the end of the stream
        // once the process and its children have closed theirs.
        drop(pair.slave);
        let pid = child
            .process_id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| io::Error::other("the PTY process has no process id"))?;
        reaper::register(pid);

        let master = pair.master;
        let master_fd = master
            .as_raw_fd()
            .ok_or_else(|| io::Error::other("the PTY master has no file descriptor"))?;
        let read_fd = dup_cloexec(master_fd)?;
        let writer = master
            .take_writer()
            .map_err(|e| io::Error::other(format!("cannot write to the PTY: {e}")))?;
        let control = PtyControl {
            sane: get_termios(master_fd),
            tty: master.tty_name(),
            terminal: Terminal::Here(Mutex::new(master)),
            writer: Mutex::new(writer),
            pid,
        };
        Self::serve(control, read_fd, Some(child))
    }

    /// Starts a process whose terminal is elsewhere (`ssh -tt`, which gives a remote kernel
    /// a PTY there): here it has pipes, one for its input and one for its output and errors
    /// both, and a session of its own. Without a second PTY here, whose line discipline and
    /// small buffer every byte would cross again, output comes at the speed of `ssh` itself.
    pub fn spawn_piped(mut cmd: std::process::Command, resize: Resizer) -> io::Result<PtyProcess> {
        use std::os::unix::process::CommandExt;
        let (read_fd, write_fd) = pipe_cloexec()?;
        cmd.stdin(std::process::Stdio::piped())
            .stdout(write_fd.try_clone()?)
            .stderr(write_fd);
        // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| io::Error::other(format!("cannot start the process: {e}")))?;
        // The command holds the output pipe's write end: the reader sees the end of the
        // stream only once no one here has it.
        drop(cmd);
        let pid = i32::try_from(child.id())
            .map_err(|_| io::Error::other("the process id does not fit"))?;
        reaper::register(pid);
        let writer = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the process has no input pipe"))?;
        let control = PtyControl {
            terminal: Terminal::Elsewhere(resize),
            writer: Mutex::new(Box::new(writer)),
            pid,
            sane: None,
            tty: None,
        };
        // (`child` is dropped without waiting: the waiter thread reaps the process.)
        Self::serve(control, read_fd, None)
    }

    /// Starts the reader and waiter threads of a process just spawned.
    fn serve(
        control: PtyControl,
        read_fd: OwnedFd,
        child: Option<Box<dyn portable_pty::Child + Send + Sync>>,
    ) -> io::Result<PtyProcess> {
        let pid = control.pid;
        let (stop_read, stop_write) = pipe_cloexec()?;
        let (out_tx, out_rx) = mpsc::channel(CHANNEL_CHUNKS);
        std::thread::Builder::new()
            .name(format!("pty-reader-{pid}"))
            .spawn(move || read_loop(read_fd, stop_read, out_tx))?;
        let (exit_tx, exit_rx) = watch::channel(None);
        let (reap_tx, reap_rx) = std::sync::mpsc::channel::<()>();
        let waiter = std::thread::Builder::new()
            .name(format!("pty-waiter-{pid}"))
            .spawn(move || {
                let _ = exit_tx.send(Some(wait_for_exit(pid)));
                // The zombie keeps the pid, and so the session id, from being reused until
                // the owner has killed the rest of the session and lets go.
                let _ = reap_rx.recv();
                reap(pid);
            })?;
        Ok(PtyProcess {
            control: Arc::new(control),
            output: out_rx,
            exit: exit_rx,
            _stop_reader: stop_write,
            _child: child,
            reap: Some((reap_tx, waiter)),
        })
    }

    pub fn pid(&self) -> i32 {
        self.control.pid
    }

    pub fn exited(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }
}

impl Drop for PtyProcess {
    fn drop(&mut self) {
        let pid = self.control.pid;
        // What its blocks detached and still runs is said when oi-tui leaves.
        reaper::kill_session_reporting(pid);
        if let Some((release, waiter)) = self.reap.take() {
            drop(release);
            // The process was sent SIGKILL: the waiter returns as soon as it is gone.
            let _ = waiter.join();
        }
        reaper::unregister(pid);
    }
}

impl PtyControl {
    /// Sends SIGINT to the PTY's foreground process group, as a terminal does for Ctrl-C.
    /// A terminal elsewhere is reached by its host's helper (`Kernel::interrupt`), never
    /// here: signalling this process would end the connection, not the block.
    pub fn interrupt(&self) {
        if let Terminal::Elsewhere(_) = self.terminal {
            return;
        }
        let group = self.foreground_group().unwrap_or(self.pid);
        // SAFETY: killpg(2) on a process group of this PTY; no memory is involved.
        unsafe {
            libc::killpg(group, libc::SIGINT);
        }
    }

    /// The terminal's foreground process group, when it has one.
    fn foreground_group(&self) -> Option<i32> {
        let Terminal::Here(master) = &self.terminal else {
            return None;
        };
        master
            .lock()
            .ok()
            .and_then(|m| m.process_group_leader())
            .filter(|&g| g > 0)
    }

    /// The processes of the terminal's foreground group that are blocked reading it
    /// (Linux; elsewhere none).
    pub fn terminal_readers(&self) -> Vec<i32> {
        let Some(tty) = &self.tty else {
            return Vec::new();
        };
        self.foreground_group().map_or_else(Vec::new, |group| {
            super::waiting::terminal_readers(self.pid, group, tty)
        })
    }

    /// Kills the process, and every process of its session that was not detached. Returns
    /// the processes it started that are still alive (detached with `setsid` or `nohup`).
    pub fn kill(&self) -> Vec<reaper::Survivor> {
        reaper::kill_session_reporting(self.pid)
    }

    /// Types bytes into the PTY, as if from the keyboard.
    pub fn write_input(&self, bytes: &[u8]) -> io::Result<()> {
        let mut writer = self
            .writer
            .lock()
            .map_err(|_| io::Error::other("the PTY writer is poisoned"))?;
        writer.write_all(bytes)?;
        writer.flush()
    }

    /// Puts back the terminal modes the PTY started with (echo, line editing, signals), in
    /// case a block left them changed (`stty -echo`, a crashed full-screen program).
    pub fn restore_modes(&self) {
        let (Some(sane), Terminal::Here(master)) = (self.sane, &self.terminal) else {
            return;
        };
        let Ok(master) = master.lock() else {
            return;
        };
        let Some(fd) = master.as_raw_fd() else {
            return;
        };
        if get_termios(fd).is_some_and(|now| !same_modes(&now, &sane)) {
            // SAFETY: tcsetattr(3) on the PTY master with a termios read from it earlier.
            unsafe {
                libc::tcsetattr(fd, libc::TCSANOW, &sane);
            }
        }
    }

    pub fn resize(&self, rows: u16, cols: u16) -> io::Result<()> {
        let master = match &self.terminal {
            Terminal::Here(master) => master,
            Terminal::Elsewhere(resize) => {
                resize(rows.max(1), cols.max(1));
                return Ok(());
            }
        };
        let master = master
            .lock()
            .map_err(|_| io::Error::other("the PTY master is poisoned"))?;
        master
            .resize(pty_size(rows, cols))
            .map_err(|e| io::Error::other(format!("cannot resize the PTY: {e}")))
    }
}

pub(crate) fn pty_size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows: rows.max(1),
        cols: cols.max(1),
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn read_loop(fd: OwnedFd, stop: OwnedFd, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; READ_SIZE];
    loop {
        match poll_two(&fd, &stop, -1) {
            Some((_, true)) | None => return,
            Some((false, false)) => continue,
            Some((true, false)) => {}
        }
        // Take what is there, and whatever is already waiting behind it: when the consumer
        // falls behind, chunks grow instead of multiplying.
        let mut filled = 0;
        let mut closed = false;
        loop {
            // SAFETY: reading into the unfilled part of a buffer we own.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    buf[filled..].as_mut_ptr().cast(),
                    buf.len() - filled,
                )
            };
            if n > 0 {
                // `n` is positive and at most the space left.
                filled += n as usize;
            } else if n == 0 {
                closed = true;
            } else {
                match io::Error::last_os_error().kind() {
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => {}
                    // EIO: every slave descriptor is closed.
                    _ => closed = true,
                }
            }
            if closed || buf.len() - filled < 4096 || !poll_two(&fd, &stop, 0).is_some_and(|r| r.0)
            {
                break;
            }
        }
        if filled > 0 && tx.blocking_send(buf[..filled].to_vec()).is_err() {
            return;
        }
        if closed {
            return;
        }
    }
}

/// Polls the PTY and the stop pipe: (PTY readable or hung up, stop pipe closed). None on
/// an error other than EINTR.
fn poll_two(fd: &OwnedFd, stop: &OwnedFd, timeout_ms: i32) -> Option<(bool, bool)> {
    let mut fds = [
        libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `fds` is a valid array of two pollfd structs for the length given.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout_ms) };
    if ready < 0 {
        return (io::Error::last_os_error().kind() == io::ErrorKind::Interrupted)
            .then_some((false, false));
    }
    Some((fds[0].revents != 0, fds[1].revents != 0))
}

/// Waits for the process to end and says how, leaving it a zombie (not reaped).
fn wait_for_exit(pid: i32) -> ExitInfo {
    let unknown = ExitInfo {
        code: None,
        signal: None,
    };
    let Ok(id) = libc::id_t::try_from(pid) else {
        return unknown;
    };
    loop {
        // SAFETY: a zeroed siginfo_t is a valid value for waitid(2) to fill.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) on our own child, writing into a local siginfo_t.
        let r = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 {
            // SAFETY: waitid succeeded for a child, so the status field is set.
            let status = unsafe { info.si_status() };
            return match info.si_code {
                libc::CLD_EXITED => ExitInfo {
                    code: Some(status),
                    signal: None,
                },
                libc::CLD_KILLED | libc::CLD_DUMPED => ExitInfo {
                    code: None,
                    signal: Some(status),
                },
                _ => unknown,
            };
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return unknown;
        }
    }
}

fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid(2) on our own, already ended child, writing into a local int.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted
    {}
}

fn get_termios(fd: RawFd) -> Option<libc::termios> {
    // SAFETY: a zeroed termios is a valid value for tcgetattr(3) to fill.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr(3) on a descriptor we hold, writing into a local termios.
    (unsafe { libc::tcgetattr(fd, &mut t) } == 0).then_some(t)
}

fn same_modes(a: &libc::termios, b: &libc::termios) -> bool {
    a.c_iflag == b.c_iflag
        && a.c_oflag == b.c_oflag
        && a.c_cflag == b.c_cflag
        && a.c_lflag == b.c_lflag
        && a.c_cc == b.c_cc
}

fn dup_cloexec(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl(2) duplicating a descriptor we hold; the result is checked.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `new` is a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2(2) writes two descriptors into the array given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The conventional name of a signal: `SIGINT`, `SIGKILL`, or `signal 42`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}
