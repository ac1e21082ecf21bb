//! The user's own terminal, for the faces that read from it line by line (`oi-tui run`,
//! headless `--task`): keystrokes forwarded to a running block, which needs this terminal's
//! echo and line editing off (the kernel's PTY does both), line-mode prompts in between,
//! and the settings put back on every way out.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::shutdown;

/// The settings found at start, to put back.
static SAVED: Mutex<Option<libc::termios>> = Mutex::new(None);

/// Turns this terminal's echo and line editing off, so that each key reaches the running
/// block at once and is echoed by its PTY alone. Ctrl-C still raises SIGINT here. Returns
/// false when standard input is not a terminal.
pub fn keys_mode() -> bool {
    let fd = io::stdin().as_raw_fd();
    // SAFETY: a zeroed termios is a valid value for tcgetattr(3) to fill.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: tcgetattr(3) on standard input, writing into a local.
    if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
        return false;
    }
    if let Ok(mut saved) = SAVED.lock()
        && saved.is_none()
    {
        *saved = Some(t);
        shutdown::on_exit_restore_terminal(line_mode);
    }
    t.c_lflag &= !(libc::ICANON | libc::ECHO);
    t.c_cc[libc::VMIN] = 1;
    t.c_cc[libc::VTIME] = 0;
    // SAFETY: tcsetattr(3) on standard input with settings derived from its own.
    unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) == 0 }
}

/// Puts the terminal's own settings back (echo, line editing), if they were changed.
pub fn line_mode() {
    if let Ok(saved) = SAVED.lock()
        && let Some(t) = saved.as_ref()
    {
        // SAFETY: tcsetattr(3) on standard input with the settings read from it at start.
        unsafe {
            libc::tcsetattr(io::stdin().as_raw_fd(), libc::TCSANOW, t);
        }
    }
}

/// Reads standard input in a thread, only while active: when inactive it leaves the
/// terminal alone, so that an editor started meanwhile gets every key.
pub struct KeyPump {
    active: Arc<AtomicBool>,
    rx: mpsc::UnboundedReceiver<Vec<u8>>,
}

impl KeyPump {
    pub fn start() -> KeyPump {
        let active = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::unbounded_channel();
        let flag = active.clone();
        std::thread::spawn(move || pump(flag, tx));
        KeyPump { active, rx }
    }

    pub fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::SeqCst);
    }

    /// The next bytes typed; an empty chunk means standard input ended. None once the
    /// pump has stopped.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        self.rx.recv().await
    }

    /// A line typed while the terminal is in line mode; None when input ended.
    pub async fn line(&mut self) -> Option<String> {
        // Keys typed for a block that has ended are not an answer.
        while self.rx.try_recv().is_ok() {}
        self.set_active(true);
        let mut line = Vec::new();
        let result = loop {
            match self.rx.recv().await {
                None => break None,
                Some(chunk) if chunk.is_empty() => {
                    break (!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned());
                }
                Some(chunk) => {
                    line.extend_from_slice(&chunk);
                    if let Some(nl) = line.iter().position(|&b| b == b'\n') {
                        line.truncate(nl);
                        break Some(String::from_utf8_lossy(&line).into_owned());
                    }
                }
            }
        };
        self.set_active(false);
        result
    }
}

fn pump(active: Arc<AtomicBool>, tx: mpsc::UnboundedSender<Vec<u8>>) {
    let fd = io::stdin().as_raw_fd();
    let mut buf = [0u8; 4096];
    loop {
        if !active.load(Ordering::SeqCst) {
            if tx.is_closed() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll(2) on one pollfd we own.
        let ready = unsafe { libc::poll(&mut pfd, 1, 100) };
        if ready <= 0 || !active.load(Ordering::SeqCst) {
            continue;
        }
        // SAFETY: read(2) into a buffer we own, no longer than its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            let _ = tx.send(Vec::new());
            return;
        }
        // `n` is non-negative and at most the buffer's length.
        let chunk = buf[..n as usize].to_vec();
        let ended = chunk.is_empty();
        if tx.send(chunk).is_err() || ended {
            return;
        }
    }
}
