//! Seccomp filters the trampoline installs on itself before it becomes the kernel; they are
//! inherited by everything the kernel starts and cannot be lifted.
//!
//! With the network off under Landlock, Landlock stops TCP connect and bind but knows
//! nothing of other sockets. This filter lets `socket(2)` make only Unix and netlink
//! sockets, and TCP sockets (which Landlock then keeps from connecting or binding): UDP,
//! ICMP, SCTP, raw and packet sockets and every other family fail with EACCES. `io_uring`,
//! which can make sockets without `socket(2)`, is refused (ENOSYS, so programs fall back),
//! and so is TCP Fast Open (`MSG_FASTOPEN`), which connects without `connect(2)`.
//! Syscalls of another ABI than this binary's (32-bit or x32 on x86-64) are refused, since
//! their numbers differ.

/// The audit architecture of this build's system calls.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xC000_00B7;

/// x32 system calls on x86-64 carry this bit.
const X32_BIT: u32 = 0x4000_0000;

// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARG0: u32 = 16;
const ARG1: u32 = 24;
const ARG2: u32 = 32;
const ARG3: u32 = 40;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
const fn errno(e: i32) -> u32 {
    libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA)
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter for a network that is off (see the module notes).
fn network_off_filter() -> Vec<libc::sock_filter> {
    let refused = errno(libc::EACCES);
    let missing = errno(libc::ENOSYS);
    // Each jump counts the instructions it skips; the targets are the returns at the end.
    vec![
        /* 0 */ stmt(LD_W_ABS, ARCH),
        /* 1 */ jump(JEQ_K, AUDIT_ARCH, 1, 0),
        /* 2 */ stmt(RET_K, missing),
        /* 3 */ stmt(LD_W_ABS, NR),
        /* 4 */ jump(JGE_K, X32_BIT, 0, 1),
        /* 5 */ stmt(RET_K, missing),
        /* 6 */ jump(JEQ_K, libc::SYS_io_uring_setup as u32, 0, 1),
        /* 7 */ stmt(RET_K, missing),
        /* 8 */ jump(JEQ_K, libc::SYS_socket as u32, 1, 0),
        /* 9 */ stmt(RET_K, ALLOW),
        // socket(domain, type, protocol)
        /* 10 */ stmt(LD_W_ABS, ARG0),
        /* 11 */ jump(JEQ_K, libc::AF_UNIX as u32, 4, 0),
        /* 12 */ jump(JEQ_K, libc::AF_NETLINK as u32, 3, 0),
        /* 13 */ jump(JEQ_K, libc::AF_INET as u32, 3, 0),
        /* 14 */ jump(JEQ_K, libc::AF_INET6 as u32, 2, 0),
        /* 15 */ stmt(RET_K, refused),
        /* 16 */ stmt(RET_K, ALLOW),
        // An Internet socket: a stream (the flags masked off) of TCP only.
        /* 17 */
        stmt(LD_W_ABS, ARG1),
        /* 18 */ stmt(AND_K, 0xf),
        /* 19 */ jump(JEQ_K, libc::SOCK_STREAM as u32, 1, 0),
        /* 20 */ stmt(RET_K, refused),
        /* 21 */ stmt(LD_W_ABS, ARG2),
        /* 22 */ jump(JEQ_K, 0, 2, 0),
        /* 23 */ jump(JEQ_K, libc::IPPROTO_TCP as u32, 1, 0),
        /* 24 */ stmt(RET_K, refused),
        /* 25 */ stmt(RET_K, ALLOW),
    ]
}

/// A filter that refuses one system call when one argument, masked, is not zero: `nr`'s
/// argument at `arg` (an offset in `seccomp_data`) and'd with `mask`. Other system calls
/// pass; those of another ABI are refused (ENOSYS).
fn refuse_when_set(nr: i64, arg: u32, mask: u32, errno_value: i32) -> Vec<libc::sock_filter> {
    vec![
        stmt(LD_W_ABS, ARCH),
        jump(JEQ_K, AUDIT_ARCH, 1, 0),
        stmt(RET_K, errno(libc::ENOSYS)),
        stmt(LD_W_ABS, NR),
        jump(JEQ_K, nr as u32, 1, 0),
        stmt(RET_K, ALLOW),
        stmt(LD_W_ABS, arg),
        stmt(AND_K, mask),
        jump(JEQ_K, 0, 0, 1),
        stmt(RET_K, ALLOW),
        stmt(RET_K, errno(errno_value)),
    ]
}

/// A filter that refuses one system call outright.
fn refuse(nr: i64, errno_value: i32) -> Vec<libc::sock_filter> {
    vec![
        stmt(LD_W_ABS, NR),
        jump(JEQ_K, nr as u32, 0, 1),
        stmt(RET_K, errno(errno_value)),
        stmt(RET_K, ALLOW),
    ]
}

/// A filter that refuses `ioctl(fd, TIOCSTI, …)`: a block could otherwise type into the
/// terminal it was started from, for a shell there to run (`oi-tui sandbox --` in a
/// person's terminal), where the kernel still allows it (`dev.tty.legacy_tiocsti`).
fn no_typing_filter() -> Vec<libc::sock_filter> {
    let mut filter = refuse_when_set(libc::SYS_ioctl, ARG1, u32::MAX, libc::EPERM);
    // Not "any bit set" but "this request": compare instead of masking.
    filter[7] = stmt(AND_K, u32::MAX);
    filter[8] = jump(JEQ_K, libc::TIOCSTI as u32, 1, 0);
    filter
}

/// Always, in every sandbox: no typing into the terminal (see `no_typing_filter`).
pub(super) fn deny_terminal_typing() -> Result<(), String> {
    install(&no_typing_filter())
}

/// Refuses `ptrace` (where Landlock cannot keep blocks from tracing processes outside).
pub(super) fn deny_tracing() -> Result<(), String> {
    install(&refuse(libc::SYS_ptrace, libc::EPERM))
}

/// The filters that keep every process the tracer's (see `tracer`): no clone that asks
/// not to be traced (`CLONE_UNTRACED`), and no `clone3`, whose flags a filter cannot read
/// (ENOSYS: the C library falls back to `clone`). Made before a fork, installed after it.
pub(super) fn traced_clones_filters() -> [Vec<libc::sock_filter>; 3] {
    [
        refuse_when_set(
            libc::SYS_clone,
            ARG0,
            libc::CLONE_UNTRACED as u32,
            libc::EPERM,
        ),
        refuse(libc::SYS_clone3, libc::ENOSYS),
        // A traced process cannot be traced by another anyway; nor may it trace what lies
        // outside (bubblewrap's first process, where Landlock does not refuse it).
        refuse(libc::SYS_ptrace, libc::EPERM),
    ]
}

/// Installs filters made by `traced_clones_filters` (no allocation: safe after a fork).
pub(super) fn install_all(filters: &[Vec<libc::sock_filter>]) -> Result<(), String> {
    for filter in filters {
        install(filter)?;
    }
    Ok(())
}

/// Installs `filter` on this thread (and so on what it `exec`s). `no_new_privs` must be set
/// (Landlock's `restrict_self` sets it).
fn install(filter: &[libc::sock_filter]) -> Result<(), String> {
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).map_err(|_| "the seccomp filter is too long")?,
        filter: filter.as_ptr().cast_mut(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers; PR_SET_SECCOMP reads `program`,
    // which points at `filter`, alive for the call.
    let done = unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &program as *const libc::sock_fprog,
            ) == 0
    };
    if done {
        Ok(())
    } else {
        Err(format!(
            "seccomp is not available ({})",
            std::io::Error::last_os_error()
        ))
    }
}

/// With the network off: only Unix, netlink and TCP sockets (see the module notes), and no
/// TCP Fast Open, whose `sendto`/`sendmsg` with `MSG_FASTOPEN` connects without `connect`
/// (Landlock checks only `connect`).
pub(super) fn deny_datagram_and_raw_sockets() -> Result<(), String> {
    install(&network_off_filter())?;
    let fast_open = libc::MSG_FASTOPEN as u32;
    install(&refuse_when_set(
        libc::SYS_sendto,
        ARG3,
        fast_open,
        libc::EACCES,
    ))?;
    install(&refuse_when_set(
        libc::SYS_sendmsg,
        ARG2,
        fast_open,
        libc::EACCES,
    ))?;
    install(&refuse_when_set(
        libc::SYS_sendmmsg,
        ARG3,
        fast_open,
        libc::EACCES,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every jump lands inside the program, and the program ends in a return.
    #[test]
    fn the_filter_is_well_formed() {
        let filter = network_off_filter();
        for (i, ins) in filter.iter().enumerate() {
            if ins.code & 0x07 == libc::BPF_JMP as u16 {
                assert!(i + 1 + (ins.jt.max(ins.jf) as usize) < filter.len(), "{i}");
            }
        }
        assert_eq!(filter.last().map(|i| i.code), Some(RET_K));
    }

    /// In a child: TCP and Unix sockets can be made, UDP, raw and packet ones cannot.
    #[test]
    fn only_tcp_unix_and_netlink_sockets_are_made() {
        // Made before the fork: the child must not allocate.
        let filter = network_off_filter();
        // SAFETY: the child only makes system calls and exits; it allocates nothing (but
        // for an error message when seccomp fails, after which it exits).
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = (|| {
                if install(&filter).is_err() {
                    return 10;
                }
                let make = |d, t, p| {
                    // SAFETY: socket(2) with plain integers; the descriptor is closed.
                    let fd = unsafe { libc::socket(d, t, p) };
                    if fd >= 0 {
                        unsafe { libc::close(fd) };
                        0
                    } else {
                        std::io::Error::last_os_error().raw_os_error().unwrap_or(-1)
                    }
                };
                if make(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) != 0 {
                    return 11;
                }
                if make(libc::AF_UNIX, libc::SOCK_DGRAM, 0) != 0 {
                    return 12;
                }
                if make(libc::AF_INET, libc::SOCK_DGRAM, 0) != libc::EACCES {
                    return 13;
                }
                if make(libc::AF_INET6, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK, 0) != libc::EACCES {
                    return 14;
                }
                if make(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP) != libc::EACCES {
                    return 15;
                }
                if make(libc::AF_PACKET, libc::SOCK_RAW, 0) != libc::EACCES {
                    return 16;
                }
                if make(libc::AF_INET, libc::SOCK_STREAM, libc::IPPROTO_SCTP) != libc::EACCES {
                    return 17;
                }
                0
            })();
            // SAFETY: ends the forked child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "{status}");
        assert_eq!(libc::WEXITSTATUS(status), 0);
    }
}
