//! A loopback OpenSSH server for the remote-kernel benchmarks: `/usr/sbin/sshd` started as
//! the current user on 127.0.0.1 with a free port, its keys and configs (and the client's,
//! with the host alias `ALIAS`) in a temporary directory; the user's ~/.ssh is never read.
//! Dropping it ends sshd, everything under it, and whatever its sessions left running.
//! (A shorter copy of the tests' fixture, `tests/suite/ssh_server.rs`.)

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ALIAS: &str = "oi-bench";

/// Every process of a session on this server carries `MARK=<dir>` (sshd's `SetEnv`).
const MARK: &str = "OI_BENCH_SSHD";

pub struct Sshd {
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl Sshd {
    /// Starts sshd; returns once `ssh <ALIAS> true` succeeds. Panics with its log if never.
    pub fn start() -> Sshd {
        let dir = tempfile::Builder::new()
            .prefix("oi-bench-sshd-")
            .tempdir()
            .expect("temp dir");
        let p = |name: &str| dir.path().join(name);
        keygen(&p("host_key"));
        keygen(&p("user_key"));
        std::fs::copy(p("user_key.pub"), p("authorized_keys")).expect("authorized_keys");
        // SAFETY: geteuid(2) takes nothing and cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let user = String::from_utf8(Command::new("id").arg("-un").output().expect("id").stdout)
            .expect("user name");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let d = dir.path().display();
        std::fs::write(
            p("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1:{port}\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
                 AuthorizedKeysFile {d}/authorized_keys\nUsePAM no\nStrictModes no\n\
                 PermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
                 PermitUserRC no\nPrintMotd no\nPrintLastLog no\nUseDNS no\nX11Forwarding no\n\
                 SetEnv {MARK}={d}\nLogLevel ERROR\n"
            ),
        )
        .expect("sshd_config");
        let host_key = std::fs::read_to_string(p("host_key.pub")).expect("host key");
        let host_key: Vec<&str> = host_key.split_whitespace().take(2).collect();
        std::fs::write(
            p("known_hosts"),
            format!("[127.0.0.1]:{port} {}\n", host_key.join(" ")),
        )
        .expect("known_hosts");
        std::fs::write(
            p("ssh_config"),
            format!(
                "Host {ALIAS}\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  \
                 IdentityFile {d}/user_key\n  IdentitiesOnly yes\n  IdentityAgent none\n  \
                 UserKnownHostsFile {d}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  \
                 StrictHostKeyChecking yes\n  UpdateHostKeys no\n  CheckHostIP no\n  \
                 BatchMode yes\n  ConnectTimeout 5\n  LogLevel ERROR\n{extra}",
                user = user.trim(),
                extra = client_extra(),
            ),
        )
        .expect("ssh_config");
        let child = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-E")
            .arg(p("sshd.log"))
            .arg("-f")
            .arg(p("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start /usr/sbin/sshd");
        let sshd = Sshd {
            dir,
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ok = sshd
                .ssh()
                .args([ALIAS, "true"])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return sshd;
            }
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(sshd.dir.path().join("sshd.log"));
                panic!("sshd never accepted a login: {}", log.unwrap_or_default());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The client's config, which defines `ALIAS`.
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// `ssh -F <config_path()>`: the caller adds the options, the alias and the command.
    pub fn ssh(&self) -> Command {
        let mut command = Command::new("ssh");
        command.arg("-F").arg(self.config_path());
        command
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // sshd and every process under it, then whatever its sessions left behind.
        let mut doomed = vec![child.id() as i32];
        let table = processes();
        let mut next = 0;
        while next < doomed.len() {
            let parent = doomed[next];
            doomed.extend(table.iter().filter(|p| p.1 == parent).map(|p| p.0));
            next += 1;
        }
        let mark = format!("{MARK}={}", self.dir.path().display());
        doomed.extend(table.iter().filter(|p| p.2.contains(&mark)).map(|p| p.0));
        for pid in doomed {
            // SAFETY: kill(2) with a pid read from /proc.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = child.wait();
    }
}

/// (pid, ppid, whether the environment holds the mark) of every process but this one.
fn processes() -> Vec<(i32, i32, String)> {
    let own = std::process::id() as i32;
    let mut table = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if pid != own {
            table.push((pid, ppid, String::from_utf8_lossy(&env).into_owned()));
        }
    }
    table
}

/// More lines for the client's `Host` block, from `OI_BENCH_SSH_CONFIG` (`;` between
/// them), to try settings (a cipher, compression) without editing the benchmark.
fn client_extra() -> String {
    std::env::var("OI_BENCH_SSH_CONFIG")
        .unwrap_or_default()
        .split(';')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| format!("  {l}\n"))
        .collect()
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ssh-keygen failed for {}", path.display());
}

/// The ControlMaster socket of a master connection this process started (`ssh -M -S SOCKET`),
/// read from its command line.
pub fn master_socket() -> Option<PathBuf> {
    let own = std::process::id() as i32;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid: Option<i32> = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1)?.parse().ok());
        if ppid != Some(own) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a == "-M")
            && let Some(i) = args.iter().position(|a| a == "-S")
        {
            return args.get(i + 1).map(PathBuf::from);
        }
    }
    None
}
