//! The trampoline as the kernel's tracer, when deny rules exist (see `exec_guard` for what is
//! checked and why). It forks the program and seizes it before it `exec`s, then waits for
//! every event of every traced process, and ends as the program ends, with its status.
//!
//! The tracer stays in the terminal's foreground group (it is the session's leader under
//! Landlock), so it ignores the terminal's signals (Ctrl-C, Ctrl-\, Ctrl-Z, a hangup):
//! they reach the program, whose handlers the child puts back to the defaults before it
//! `exec`s. Should the tracer die, every process it traces is killed with it
//! (`PTRACE_O_EXITKILL`): nothing goes on running unchecked.

use std::ffi::{CString, OsString};
use std::os::unix::ffi::OsStrExt;

use super::exec_guard::{Denied, Known, Started, forbidding};

/// The signals a terminal sends, which the tracer leaves to the program.
const TERMINAL_SIGNALS: [i32; 6] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTSTP,
    libc::SIGTTIN,
    libc::SIGTTOU,
    libc::SIGHUP,
];

/// Sets the terminal's signals to `disposition` (`SIG_IGN` in a process that leaves them to
/// the program, `SIG_DFL` in the program before it starts). Async-signal-safe.
pub(super) fn terminal_signals(disposition: libc::sighandler_t) {
    for sig in TERMINAL_SIGNALS {
        // SAFETY: signal(2) with a plain disposition; it touches no memory of ours.
        unsafe {
            libc::signal(sig, disposition);
        }
    }
}

const OPTIONS: libc::c_int = libc::PTRACE_O_TRACEEXEC
    | libc::PTRACE_O_TRACEFORK
    | libc::PTRACE_O_TRACEVFORK
    | libc::PTRACE_O_TRACECLONE
    | libc::PTRACE_O_EXITKILL;

/// Runs `program` traced, killing what the rules deny as it starts. Returns its wait status
/// (see [`ended`]); one that never started, an exit status that says why.
///
/// `confine` runs in the program's process before it starts (the sandbox's own restriction,
/// so that the tracer stays outside it, out of the program's reach).
pub(super) fn run(
    program: &[OsString],
    rules: &[String],
    confine: &dyn Fn() -> Result<(), String>,
) -> i32 {
    let path = std::env::var_os("PATH");
    let denied: Vec<Denied> = rules
        .iter()
        .filter_map(|r| Denied::new(r, path.as_deref()))
        .collect();
    let known = Known::find(path.as_deref());
    let Some(argv) = c_strings(program) else {
        eprintln!("oi-tui sandbox: the program's arguments hold a NUL byte");
        return exited(2);
    };
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // Made before the fork; the child installs them (no clone escapes the tracing).
    let filters = super::seccomp::traced_clones_filters();
    terminal_signals(libc::SIG_IGN);
    // SAFETY: the trampoline is single-threaded, so the child may allocate (in `confine`);
    // after it, it only makes async-signal-safe calls (signal, raise, execvp, write, _exit)
    // on memory prepared before the fork.
    let child = unsafe { libc::fork() };
    if child < 0 {
        eprintln!(
            "oi-tui sandbox: cannot start the program: {}",
            std::io::Error::last_os_error()
        );
        return exited(126);
    }
    if child == 0 {
        // SAFETY: see above; the child waits stopped until the tracer has seized it.
        unsafe {
            terminal_signals(libc::SIG_DFL);
            if let Err(e) = confine() {
                eprintln!("oi-tui sandbox: {e}");
                libc::_exit(126);
            }
            if super::seccomp::install_all(&filters).is_err() {
                let msg = b"oi-tui sandbox: deny rules cannot be enforced here: no seccomp\n";
                libc::write(2, msg.as_ptr().cast(), msg.len());
                libc::_exit(126);
            }
            libc::raise(libc::SIGSTOP);
            libc::execvp(pointers[0], pointers.as_ptr());
            let msg = b"oi-tui sandbox: cannot run the program\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(127);
        }
    }
    if let Err(e) = seize(child) {
        eprintln!("oi-tui sandbox: deny rules cannot be enforced here: {e}");
        // SAFETY: kills and reaps the child this process forked.
        unsafe {
            libc::kill(child, libc::SIGKILL);
            libc::waitpid(child, std::ptr::null_mut(), 0);
        }
        return exited(126);
    }
    trace(child, &denied, &known)
}

pub(super) fn c_strings(args: &[OsString]) -> Option<Vec<CString>> {
    args.iter()
        .map(|a| CString::new(a.as_bytes()).ok())
        .collect()
}

/// Waits for the child to stop itself, seizes it with the options, and lets it go on.
fn seize(child: i32) -> Result<(), std::io::Error> {
    let mut status = 0;
    // SAFETY: waitpid, ptrace and kill on the child this process forked.
    unsafe {
        if libc::waitpid(child, &mut status, libc::WUNTRACED) != child || !libc::WIFSTOPPED(status)
        {
            return Err(std::io::Error::other(
                "the program did not wait to be traced",
            ));
        }
        if libc::ptrace(libc::PTRACE_SEIZE, child, 0, OPTIONS as libc::c_long) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::kill(child, libc::SIGCONT);
    }
    Ok(())
}

/// The event loop: until the program itself ends; returns its wait status.
fn trace(child: i32, denied: &[Denied], known: &Known) -> i32 {
    let mut started = false;
    loop {
        let mut status = 0;
        // SAFETY: waits for any traced process; `status` is a plain integer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid < 0 {
            match std::io::Error::last_os_error().raw_os_error() {
                Some(libc::EINTR) => continue,
                _ => return exited(1),
            }
        }
        if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
            if pid == child {
                return status;
            }
            continue;
        }
        if !libc::WIFSTOPPED(status) {
            continue;
        }
        let sig = libc::WSTOPSIG(status);
        let event = (status >> 16) & 0xff;
        let mut inject = 0;
        match event {
            libc::PTRACE_EVENT_EXEC => {
                // The program itself starting is oi-tui's doing, not a block's.
                if pid == child && !started {
                    started = true;
                } else if let Some((rule, program)) = forbidding(denied, known, &Started::of(pid)) {
                    // SAFETY: kills a traced process in its exec stop: it never runs.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    say(&format!(
                        "\r\noi-tui: stopped {program} as it started: the deny rule `{rule}` forbids it.\r\n"
                    ));
                    continue;
                }
            }
            libc::PTRACE_EVENT_STOP => {
                if matches!(
                    sig,
                    libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
                ) {
                    // A group stop: it stays stopped until SIGCONT, still traced.
                    // SAFETY: ptrace on a tracee in its stop.
                    unsafe { libc::ptrace(libc::PTRACE_LISTEN, pid, 0, 0) };
                    continue;
                }
            }
            0 => inject = sig,
            _ => {}
        }
        // SAFETY: resumes a tracee in its stop, passing a signal that was meant for it.
        unsafe { libc::ptrace(libc::PTRACE_CONT, pid, 0, inject as libc::c_long) };
    }
}

/// The wait status of a process that exited with `code`.
pub(super) fn exited(code: i32) -> i32 {
    (code & 0xff) << 8
}

/// The trampoline's own end, as the program's (`status` being its wait status): its exit
/// status, or its death by a signal (raised here; returns 128 + the signal when this
/// process cannot die of it, as a namespace's first process).
pub(super) fn ended(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        return libc::WEXITSTATUS(status);
    }
    let sig = libc::WTERMSIG(status);
    // SAFETY: the default disposition, then the same signal, to end as the program did.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
    128 + sig
}

/// Writes a line to the terminal (the tracer's standard error).
fn say(text: &str) {
    // SAFETY: write(2) of a buffer that lives for the call.
    unsafe {
        libc::write(2, text.as_ptr().cast(), text.len());
    }
}
