//! Leaving the process: one way out, taken once. Whoever exits first (the main flow, or a
//! signal handler) kills every kernel, restores the terminal and sets the exit status; anyone
//! who comes later waits for the process to end instead of racing it with another status.

use std::sync::{Mutex, OnceLock};

use crate::exec::reaper;

static EXIT: Mutex<()> = Mutex::new(());
/// Set as soon as the process starts to leave: nothing new (a request to the model, a block)
/// may start after it.
static LEAVING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// What must happen on the way out after the kernels are stopped (the store writes what
/// it holds), in the order registered.
type Hook = Box<dyn Fn() + Send>;
static ON_EXIT: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Runs `hook` when the process leaves through `exit` (a signal, a fatal error), after the
/// kernels were stopped and before the terminal is restored.
pub fn on_exit(hook: impl Fn() + Send + 'static) {
    if let Ok(mut hooks) = ON_EXIT.lock() {
        hooks.push(Box::new(hook));
    }
}

/// Whether the process is on its way out (a signal, a fatal error): start nothing new.
pub fn leaving() -> bool {
    LEAVING.load(std::sync::atomic::Ordering::SeqCst)
}
static RESTORE_TERMINAL: OnceLock<fn()> = OnceLock::new();

/// Registers what puts the user's terminal back (once; later calls are ignored).
pub fn on_exit_restore_terminal(restore: fn()) {
    let _ = RESTORE_TERMINAL.set(restore);
}

/// Puts the user's terminal back, if something registered how.
pub fn restore_terminal() {
    if let Some(restore) = RESTORE_TERMINAL.get() {
        restore();
    }
}

/// Kills every kernel, restores the terminal and exits with `status`.
pub fn exit(status: i32) -> ! {
    LEAVING.store(true, std::sync::atomic::Ordering::SeqCst);
    // Held until the process ends: a second caller blocks here instead of exiting too.
    let _guard = EXIT.lock();
    reaper::kill_all();
    // The engine records the stopped block's end a moment after its kernel dies.
    std::thread::sleep(std::time::Duration::from_millis(150));
    if let Ok(hooks) = ON_EXIT.try_lock() {
        for hook in hooks.iter() {
            hook();
        }
    }
    // What started while the first pass ran (a kernel already on its way) goes too, with
    // its temp directory.
    reaper::kill_all();
    restore_terminal();
    if let Some(left) = reaper::left_running() {
        eprintln!("oi-tui: {left}");
    }
    std::process::exit(status)
}

/// Makes any panic fatal and clean: kernels killed, terminal restored, the panic reported,
/// exit status 101. A panic is a bug; carrying on with half the program gone would hide it.
pub fn install_panic_hook() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        reaper::kill_all();
        restore_terminal();
        // Standard error that cannot be written (`2>/dev/full`) is not a bug: oi-tui could
        // not say anything more, so it stops before anything runs unseen, like a standard
        // output that cannot be written (see `stdout`), and says so where it still can.
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if text.starts_with("failed printing to stderr") {
            crate::stdout::report_unwritable_stderr();
            std::process::exit(1);
        }
        previous(info);
        std::process::exit(101);
    }));
}

/// On SIGTERM or SIGHUP, leaves through `exit` (kernels killed, terminal restored) with the
/// conventional status. Every face gets this from `main`. Also survives a file-size limit
/// (`survive_file_size_limit`).
pub fn exit_on_terminate() {
    use tokio::signal::unix::{SignalKind, signal};
    survive_file_size_limit();
    for (kind, number) in [
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
    ] {
        if let Ok(mut listener) = signal(kind) {
            tokio::spawn(async move {
                if listener.recv().await.is_some() {
                    exit(128 + number);
                }
            });
        }
    }
}

/// Calls `handle` on each SIGINT (Ctrl-C in a line-based face). One listener serves the whole
/// run: a fresh one per signal may see the same signal twice.
pub fn on_interrupt(mut handle: impl FnMut() + Send + 'static) {
    tokio::spawn(async move {
        let Ok(mut listener) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        else {
            return;
        };
        while listener.recv().await.is_some() {
            handle();
        }
    });
}

/// A write past the file-size limit (`ulimit -f`) fails with EFBIG, reported like any other
/// write error, instead of killing oi-tui with SIGXFSZ. The signal is caught by a handler
/// that does nothing rather than ignored: a caught signal is reset to its default on exec,
/// so kernels and what they start still get the usual disposition.
pub fn survive_file_size_limit() {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: sigaction(2) with a zeroed struct naming a handler that touches nothing;
    // SA_RESTART keeps other system calls from failing with EINTR.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut());
    }
}
