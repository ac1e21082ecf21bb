//! A real OpenSSH server for the tests of remote kernels: `/usr/sbin/sshd` started as the
//! current user on 127.0.0.1 with a free port, no system service, everything (host key, user
//! key, authorized_keys, known_hosts, the client's config) in a temporary directory. The
//! tests reach it with the system's `ssh -F <config_path()> <alias()>` and never read or
//! write the user's ~/.ssh. Helpers make the faults a remote kernel must survive: a changed
//! host key, a key that is not authorised, a port where nothing listens, a connection that
//! drops mid-block; and `processes_with_env` finds what a session left behind on the
//! "remote" side (which is this machine).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The path sshd must be started with (it re-executes itself, so it wants an absolute path).
pub const SSHD: &str = "/usr/sbin/sshd";

/// The host alias of the client's config.
pub const ALIAS: &str = "oi-test";

/// Every process of a session on this server carries this variable (sshd's `SetEnv`), naming
/// the server's directory, so that the fixture can end what its sessions left behind.
const SESSION_MARK: &str = "OI_TEST_SSHD";

/// How long `start` waits for a login to succeed.
const READY_WITHIN: Duration = Duration::from_secs(10);

pub struct SshServer {
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    sshd: Option<Child>,
    /// Variables sshd accepts from clients (`AcceptEnv`).
    accept_env: Vec<String>,
    /// What a login prints before it runs the command, if anything.
    chatter: Option<String>,
}

impl SshServer {
    /// Generates the keys and configs and starts sshd; returns once `ssh <alias> true`
    /// succeeds. Panics with sshd's log if it never does.
    pub fn start() -> SshServer {
        SshServer::start_accepting_env(&[])
    }

    /// Like `start`, with sshd accepting these variables from clients (`AcceptEnv`), so
    /// that a client's `SendEnv` can carry them.
    pub fn start_accepting_env(names: &[&str]) -> SshServer {
        SshServer::start_with(names, None)
    }

    /// Like `start`, with every login printing `chatter` on its standard output before it
    /// runs the command, as a chatty `.bashrc` does.
    pub fn start_with_chatter(chatter: &str) -> SshServer {
        SshServer::start_with(&[], Some(chatter))
    }

    fn start_with(names: &[&str], chatter: Option<&str>) -> SshServer {
        let dir = tempfile::Builder::new()
            .prefix("oi-sshd-")
            .tempdir()
            .expect("temp dir for sshd");
        let user = current_user();
        keygen(&dir.path().join("host_key"));
        keygen(&dir.path().join("user_key"));
        keygen(&dir.path().join("wrong_key"));
        let user_public = read(&dir.path().join("user_key.pub"));
        std::fs::write(dir.path().join("authorized_keys"), user_public).expect("authorized_keys");
        prepare_privilege_separation();
        let mut server = SshServer {
            dir,
            port: 0,
            user,
            sshd: None,
            accept_env: names.iter().map(|n| n.to_string()).collect(),
            chatter: chatter.map(str::to_string),
        };
        let mut failures = Vec::new();
        for _ in 0..5 {
            server.port = free_port();
            server.write_configs();
            match server.launch() {
                Ok(()) => return server,
                Err(failure) => failures.push(failure),
            }
        }
        let log = server.log();
        // Without PAM, sshd refuses an account whose password field is locked ("!").
        let hint = if log.contains("account is locked") {
            "\n(the account's password is locked: sshd without PAM refuses it; run the tests as \
             a user whose /etc/shadow entry is not `!`, e.g. `usermod -p '*' <user>`)"
        } else {
            ""
        };
        panic!(
            "sshd never accepted a login:{hint}\n{}\n--- sshd log ---\n{log}",
            failures.join("\n"),
        );
    }

    /// The ssh client's config (`ssh -F <this>`), which defines `alias()`.
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    pub fn alias(&self) -> &'static str {
        ALIAS
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The name of the user the sessions log in as (the current user).
    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn known_hosts_path(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    pub fn user_key_path(&self) -> PathBuf {
        self.dir.path().join("user_key")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// sshd's log (LogLevel VERBOSE) and whatever it wrote to its stderr.
    pub fn log(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default();
        let stderr =
            std::fs::read_to_string(self.dir.path().join("sshd.stderr")).unwrap_or_default();
        if stderr.is_empty() {
            log
        } else {
            format!("{log}--- sshd stderr ---\n{stderr}")
        }
    }

    /// `ssh -F <config_path()>`; the caller adds options, the alias and the command.
    pub fn ssh(&self) -> Command {
        let mut command = Command::new("ssh");
        command.arg("-F").arg(self.config_path());
        command
    }

    /// Restarts sshd on the same port with a new host key; the client's known_hosts still
    /// holds the old one, so ssh refuses the host.
    pub fn replace_host_key(&mut self) {
        self.stop();
        let host_key = self.dir.path().join("host_key");
        let _ = std::fs::remove_file(&host_key);
        let _ = std::fs::remove_file(host_key.with_extension("pub"));
        keygen(&host_key);
        let mut failures = Vec::new();
        for _ in 0..5 {
            // sshd cannot log in with the old known_hosts any more: wait for it to listen
            // and check that a login is refused for the host key, not for anything else.
            match self.launch_with(false) {
                Ok(()) => return,
                Err(failure) => failures.push(failure),
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "sshd did not restart with a new host key:\n{}\n--- sshd log ---\n{}",
            failures.join("\n"),
            self.log()
        );
    }

    /// A client config whose `alias()` logs in with a key the server does not accept.
    pub fn config_with_wrong_key(&self) -> PathBuf {
        let path = self.dir.path().join("ssh_config_wrong_key");
        let text = client_config(
            self.port,
            &self.user,
            &self.dir.path().join("wrong_key"),
            &self.known_hosts_path(),
        );
        std::fs::write(&path, text).expect("client config with the wrong key");
        path
    }

    /// A client config whose `alias()` points at a port of 127.0.0.1 where nothing listens.
    pub fn unreachable_config(&self) -> PathBuf {
        let path = self.dir.path().join("ssh_config_unreachable");
        let text = client_config(
            free_port(),
            &self.user,
            &self.user_key_path(),
            &self.known_hosts_path(),
        );
        std::fs::write(&path, text).expect("client config for a closed port");
        path
    }

    /// Kills the per-connection sshd processes (children of the listening sshd, and the
    /// sshd processes under them), as a dropped connection would end them; the listener
    /// goes on accepting. What the sessions started is left alone.
    pub fn kill_connections(&self) {
        self.signal_connections(libc::SIGKILL);
    }

    /// Stops the per-connection sshd processes (SIGSTOP), as a link that stalls (a hung
    /// network) leaves them: nothing passes, nothing ends. `signal_connections(SIGCONT)`
    /// lets them go on.
    pub fn stall_connections(&self) {
        self.signal_connections(libc::SIGSTOP);
    }

    pub fn signal_connections(&self, signal: i32) {
        let Some(listener) = self.sshd.as_ref().map(|child| child.id() as i32) else {
            return;
        };
        let table = process_table();
        let mut doomed: Vec<i32> = Vec::new();
        let mut frontier: Vec<i32> = table
            .iter()
            .filter(|p| p.ppid == listener)
            .map(|p| p.pid)
            .collect();
        while let Some(pid) = frontier.pop() {
            doomed.push(pid);
            frontier.extend(
                table
                    .iter()
                    .filter(|p| p.ppid == pid && p.comm == "sshd")
                    .map(|p| p.pid),
            );
        }
        for pid in doomed {
            // SAFETY: kill(2) with a pid read from /proc; no memory is involved.
            unsafe { libc::kill(pid, signal) };
        }
    }

    fn write_configs(&self) {
        let dir = self.dir.path();
        let abs = |name: &str| dir.join(name).display().to_string();
        let accept = if self.accept_env.is_empty() {
            String::new()
        } else {
            format!("AcceptEnv {}\n", self.accept_env.join(" "))
        };
        let set_env = format!("{SESSION_MARK}={}", dir.display());
        // The chatter comes from the login itself (a ForceCommand that prints it, then runs
        // the command asked for), as from a chatty .bashrc.
        let mut force = String::new();
        if let Some(chatter) = &self.chatter {
            use std::os::unix::fs::PermissionsExt;
            let script = dir.join("chatter.sh");
            let quoted = chatter.replace('\'', r"'\''");
            std::fs::write(
                &script,
                format!("#!/bin/sh\nprintf '%s\\n' '{quoted}'\nexec /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n"),
            )
            .expect("chatter");
            std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755))
                .expect("chatter mode");
            force = format!("ForceCommand {}\n", script.display());
        }
        let sshd_config = format!(
            "ListenAddress 127.0.0.1:{port}\n\
             HostKey {host_key}\n\
             PidFile {pid}\n\
             AuthorizedKeysFile {authorized}\n\
             AuthorizedPrincipalsFile none\n\
             UsePAM no\n\
             StrictModes no\n\
             PermitRootLogin yes\n\
             PubkeyAuthentication yes\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             HostbasedAuthentication no\n\
             PermitUserRC no\n\
             PermitUserEnvironment no\n\
             PrintMotd no\n\
             PrintLastLog no\n\
             UseDNS no\n\
             X11Forwarding no\n\
             Banner none\n\
             Subsystem sftp internal-sftp\n\
             SetEnv {set_env}\n\
             {accept}\
             {force}\
             LogLevel VERBOSE\n",
            port = self.port,
            host_key = abs("host_key"),
            pid = abs("sshd.pid"),
            authorized = abs("authorized_keys"),
        );
        std::fs::write(dir.join("sshd_config"), sshd_config).expect("sshd_config");
        let host_public = read(&dir.join("host_key.pub"));
        let host_public = host_public.split_whitespace().take(2).collect::<Vec<_>>();
        std::fs::write(
            self.known_hosts_path(),
            format!(
                "[127.0.0.1]:{},{ALIAS} {}\n",
                self.port,
                host_public.join(" ")
            ),
        )
        .expect("known_hosts");
        std::fs::write(
            self.config_path(),
            client_config(
                self.port,
                &self.user,
                &self.user_key_path(),
                &self.known_hosts_path(),
            ),
        )
        .expect("ssh client config");
    }

    fn launch(&mut self) -> Result<(), String> {
        self.launch_with(true)
    }

    /// Starts sshd and waits until it listens; with `login`, until `ssh <alias> true`
    /// succeeds. On failure sshd is stopped and the reason returned.
    fn launch_with(&mut self, login: bool) -> Result<(), String> {
        let dir = self.dir.path();
        let stderr = std::fs::File::create(dir.join("sshd.stderr")).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(dir.join("sshd.log"));
        let child = Command::new(SSHD)
            .arg("-D")
            .arg("-E")
            .arg(dir.join("sshd.log"))
            .arg("-f")
            .arg(dir.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {SSHD}: {e}"))?;
        self.sshd = Some(child);
        let deadline = Instant::now() + READY_WITHIN;
        let listening = format!("Server listening on 127.0.0.1 port {}", self.port);
        let mut last = String::new();
        loop {
            if let Some(child) = self.sshd.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.sshd = None;
                return Err(format!("sshd on port {} exited: {status}", self.port));
            }
            if self.log().contains(&listening) {
                if !login {
                    return Ok(());
                }
                let out = self
                    .ssh()
                    .arg(ALIAS)
                    .arg("true")
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot run ssh: {e}"))?;
                if out.status.success() {
                    return Ok(());
                }
                last = String::from_utf8_lossy(&out.stderr).into_owned();
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(format!(
                    "no login on port {} within {READY_WITHIN:?}; ssh said: {last}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ends sshd, every process under it, and whatever its sessions left behind.
    fn stop(&mut self) {
        let Some(mut child) = self.sshd.take() else {
            return;
        };
        let listener = child.id() as i32;
        let table = process_table();
        let mut doomed = vec![listener];
        let mut next = 0;
        while next < doomed.len() {
            let parent = doomed[next];
            doomed.extend(table.iter().filter(|p| p.ppid == parent).map(|p| p.pid));
            next += 1;
        }
        let mark = format!("{SESSION_MARK}={}", self.dir.path().display());
        doomed.extend(processes_with_env(&mark).into_iter().map(|(pid, _)| pid));
        for pid in doomed {
            // SAFETY: kill(2) with a pid read from /proc; no memory is involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = child.wait();
    }
}

impl Drop for SshServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Every process's id and its /proc directory.
pub fn proc_entries() -> Vec<(i32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            Some((pid, entry.path()))
        })
        .collect()
}

/// Processes (pid, command name) whose environment holds `needle`: an entry equal to it
/// (`NAME=value`), or, when `needle` has no `=`, a variable of that name. The calling
/// process is left out.
pub fn processes_with_env(needle: &str) -> Vec<(i32, String)> {
    let own = std::process::id() as i32;
    let prefix = format!("{needle}=");
    let mut found = Vec::new();
    for (pid, dir) in proc_entries() {
        if pid == own {
            continue;
        }
        let Ok(environ) = std::fs::read(dir.join("environ")) else {
            continue;
        };
        let holds = environ.split(|b| *b == 0).any(|var| {
            var == needle.as_bytes()
                || (!needle.contains('=') && var.starts_with(prefix.as_bytes()))
        });
        if holds {
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
            found.push((pid, comm.trim_end().to_string()));
        }
    }
    found.sort();
    found
}

struct Process {
    pid: i32,
    ppid: i32,
    comm: String,
}

fn process_table() -> Vec<Process> {
    let mut table = Vec::new();
    for (pid, dir) in proc_entries() {
        let Ok(stat) = std::fs::read_to_string(dir.join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        table.push(Process { pid, ppid, comm });
    }
    table
}

fn client_config(port: u16, user: &str, key: &Path, known_hosts: &Path) -> String {
    format!(
        "Host {ALIAS}\n\
         \x20 HostName 127.0.0.1\n\
         \x20 Port {port}\n\
         \x20 User {user}\n\
         \x20 IdentityFile {key}\n\
         \x20 IdentitiesOnly yes\n\
         \x20 IdentityAgent none\n\
         \x20 PubkeyAuthentication yes\n\
         \x20 PasswordAuthentication no\n\
         \x20 KbdInteractiveAuthentication no\n\
         \x20 UserKnownHostsFile {known_hosts}\n\
         \x20 GlobalKnownHostsFile /dev/null\n\
         \x20 StrictHostKeyChecking yes\n\
         \x20 UpdateHostKeys no\n\
         \x20 CheckHostIP no\n\
         \x20 BatchMode yes\n\
         \x20 ConnectTimeout 5\n\
         \x20 LogLevel ERROR\n",
        key = key.display(),
        known_hosts = known_hosts.display(),
    )
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "oi-test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .expect("run ssh-keygen");
    assert!(
        out.status.success(),
        "ssh-keygen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("run id -un");
    assert!(out.status.success(), "id -un failed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// sshd started by root wants its privilege separation directory.
fn prepare_privilege_separation() {
    // SAFETY: geteuid(2) takes nothing and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return;
    }
    let dir = Path::new("/run/sshd");
    if !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir);
    }
}

/// A port of 127.0.0.1 where nothing listens (at the moment of asking).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local address").port()
}
