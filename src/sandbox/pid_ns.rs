//! Under Landlock, the kernel's processes get a PID namespace of their own, with a `/proc`
//! that shows only them. Landlock does not keep a block from reading `/proc/PID/environ`
//! of the user's other processes (a wrapper that put a key in its environment, oi-tui's
//! parent shell); in a namespace of its own, no process outside is there to be named,
//! read, traced or signalled. (Bubblewrap does the same with `--unshare-pid --proc`.)
//!
//! The trampoline unshares a user namespace (its own user mapped onto itself: nothing is
//! gained, and root loses its capabilities over the host), a mount namespace and a PID
//! namespace, then forks. Its child is the namespace's first process: it mounts the new
//! `/proc` over the old one (which no one inside can then unmount: Landlock forbids it,
//! and the mount is locked in the user namespace), takes the terminal's foreground group,
//! and goes on to start the program as its own child (the first process of a namespace
//! ignores the terminal's signals, and reaps every orphan). The trampoline outside waits,
//! and ends as the program ended, passed to it through a pipe.

use std::io::Error;

/// Where this process is after [`enter`].
pub(super) enum Side {
    /// In the namespace, as its first process: go on, and hand the program's end to
    /// [`report`].
    Inside(Reporter),
    /// Outside: the program ended, so end with this exit status (or as its signal).
    Outside(i32),
}

/// The write end of the pipe the trampoline outside reads the program's end from.
pub(super) struct Reporter(libc::c_int);

impl Reporter {
    /// Sends the program's wait status outside.
    pub(super) fn report(&self, status: i32) {
        let mut bytes = vec![ENDED];
        bytes.extend(status.to_ne_bytes());
        self.send(&bytes);
    }

    fn send(&self, bytes: &[u8]) {
        // SAFETY: write(2) of a buffer that lives for the call, to a descriptor this
        // process owns (shorter than PIPE_BUF: written whole).
        unsafe {
            libc::write(self.0, bytes.as_ptr().cast(), bytes.len());
        }
    }
}

/// The first byte of what the pipe carries: the program's wait status follows.
const ENDED: u8 = b'S';
/// The first byte of what the pipe carries: the namespace could not be set up; why follows.
const FAILED: u8 = b'E';

/// Unshares the namespaces and forks (see the module's comment). An error means nothing
/// was changed: the caller may go on without the namespace.
///
/// `view`: how the file system looks inside (see `view`), made once the namespaces are.
pub(super) fn enter(view: &super::view::View) -> Result<Side, String> {
    unshare()?;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors of the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("cannot make a pipe: {}", Error::last_os_error()));
    }
    let [read_end, write_end] = fds;
    // SAFETY: the trampoline is single-threaded; the child goes on as a plain process.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("cannot fork: {}", Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: closes the read end this process does not use; asks for SIGKILL should
        // the trampoline outside die first (then nothing is left running unwatched).
        unsafe {
            libc::close(read_end);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
        let reporter = Reporter(write_end);
        if let Err(e) = mount_proc() {
            let mut bytes = vec![FAILED];
            bytes.extend(e.bytes().take(500));
            reporter.send(&bytes);
            // SAFETY: ends this child at once; the trampoline outside goes on without it.
            unsafe { libc::_exit(125) };
        }
        if let Err(e) = view.make() {
            eprintln!("oi-tui sandbox: other sessions' kernels stay in view: {e}");
        }
        return Ok(Side::Inside(reporter));
    }
    // SAFETY: closes the write end the child holds; ignores the terminal's signals, which
    // are the program's (this process is not in the foreground group once the child has
    // taken it, but may be until then).
    unsafe {
        libc::close(write_end);
        super::tracer::terminal_signals(libc::SIG_IGN);
    }
    let (status, message) = wait_outside(child, read_end);
    match message {
        Some(Message::Ended(status)) => Ok(Side::Outside(super::tracer::ended(status))),
        Some(Message::Failed(why)) => {
            // The terminal's signals go back to what they were (the default).
            super::tracer::terminal_signals(libc::SIG_DFL);
            Err(why)
        }
        None => Ok(Side::Outside(super::tracer::ended(status))),
    }
}

enum Message {
    Ended(i32),
    Failed(String),
}

/// Whether this process may mount without a user namespace (root with its capabilities).
fn is_root() -> bool {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

fn unshare() -> Result<(), String> {
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare(2) of this single-threaded process.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID) } == 0 {
        write_map("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
        write_map("/proc/self/setgroups", "deny\n")?;
        return write_map("/proc/self/gid_map", &format!("{gid} {gid} 1\n"));
    }
    let user_ns = Error::last_os_error();
    // SAFETY: as above.
    if is_root() && unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWPID) } == 0 {
        return Ok(());
    }
    Err(format!("no user namespace ({user_ns})"))
}

fn write_map(path: &str, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {path}: {e}"))
}

/// Makes the mounts private to this namespace, and mounts its own `/proc`.
fn mount_proc() -> Result<(), String> {
    let root = c"/";
    let proc_dir = c"/proc";
    let proc_type = c"proc";
    // SAFETY: mount(2) with NUL-terminated strings that live for the calls.
    unsafe {
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(format!(
                "cannot make the mounts private: {}",
                Error::last_os_error()
            ));
        }
        if libc::mount(
            proc_type.as_ptr(),
            proc_dir.as_ptr(),
            proc_type.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) != 0
        {
            return Err(format!("cannot mount /proc: {}", Error::last_os_error()));
        }
    }
    Ok(())
}

/// Waits for the namespace's first process; returns its own wait status and what it sent.
fn wait_outside(child: i32, read_end: libc::c_int) -> (i32, Option<Message>) {
    let mut status = 0;
    loop {
        // SAFETY: waits for the child this process forked.
        let got = unsafe { libc::waitpid(child, &mut status, 0) };
        if got == child {
            break;
        }
        if Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return (1 << 8, None);
        }
    }
    let mut bytes = [0u8; 512];
    // SAFETY: read(2) into a buffer of this size; the child has ended (every write end is
    // closed), so this cannot block.
    let n = unsafe { libc::read(read_end, bytes.as_mut_ptr().cast(), bytes.len()) };
    let got = usize::try_from(n).map_or(&[][..], |n| &bytes[..n]);
    let message = match got {
        [ENDED, a, b, c, d] => Some(Message::Ended(i32::from_ne_bytes([*a, *b, *c, *d]))),
        [FAILED, why @ ..] => Some(Message::Failed(String::from_utf8_lossy(why).into_owned())),
        _ => None,
    };
    (status, message)
}

/// The namespace's first process: starts the program as its child, reaps every process
/// that ends, and returns the program's wait status when it ends (everything else left in
/// the namespace is killed as this process ends).
///
/// `confine` runs in the program's process before it starts (the sandbox's own restriction,
/// so that this process stays outside it, out of the program's reach).
pub(super) fn run_init(
    argv: &[std::ffi::CString],
    confine: &dyn Fn() -> Result<(), String>,
) -> Result<i32, String> {
    // The child puts the defaults back.
    super::tracer::terminal_signals(libc::SIG_IGN);
    let mut pointers: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    pointers.push(std::ptr::null());
    // SAFETY: the process is single-threaded, so the child may allocate (in `confine`).
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!(
            "cannot start the program: {}",
            Error::last_os_error()
        ));
    }
    if child == 0 {
        // SAFETY: see above.
        unsafe {
            super::tracer::terminal_signals(libc::SIG_DFL);
            if let Err(e) = confine() {
                eprintln!("oi-tui sandbox: {e}");
                libc::_exit(126);
            }
            libc::execvp(pointers[0], pointers.as_ptr());
            let msg = b"oi-tui sandbox: cannot run the program\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(127);
        }
    }
    loop {
        let mut status = 0;
        // SAFETY: waits for any child (orphans are this process's to reap).
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == child {
            return Ok(status);
        }
        if pid < 0 && Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(format!("lost the program: {}", Error::last_os_error()));
        }
    }
}
