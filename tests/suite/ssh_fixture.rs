//! Smoke tests of the OpenSSH fixture (`ssh_server.rs`): a login runs a command, `ssh -tt`
//! gets a remote terminal, and each fault the remote kernels must report is what ssh says
//! it is (changed host key, refused key, closed port). A dropped connection ends the
//! client; a remote process with a terminal dies with it, one without keeps running.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::ssh_server::{SshServer, processes_with_env};

fn output(mut command: Command) -> Output {
    command.stdin(Stdio::null()).output().expect("run ssh")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A marker no other test uses.
fn marker(name: &str) -> String {
    format!("OI_TUI_SESSION={name}-{}", uuid::Uuid::new_v4().simple())
}

/// Waits until `check` holds, or `limit` passes; returns whether it held.
fn within(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_all(pids: &[(i32, String)]) {
    for (pid, _) in pids {
        // SAFETY: kill(2) with a pid read from /proc; no memory is involved.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
}

#[test]
fn a_login_runs_a_command() {
    let server = SshServer::start();
    let mut ssh = server.ssh();
    ssh.args([server.alias(), "echo", "hello"]);
    let out = output(ssh);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stderr),
        server.log()
    );
    assert_eq!(text(&out.stdout), "hello\n");
    let mut whoami = server.ssh();
    whoami.args([server.alias(), "id -un"]);
    assert_eq!(text(&output(whoami).stdout).trim(), server.user());
    assert!(
        server.log().contains("Accepted publickey"),
        "{}",
        server.log()
    );
    assert!(server.config_path().starts_with(server.dir()));
}

#[test]
fn tt_gives_a_remote_terminal() {
    let server = SshServer::start();
    let mut ssh = server.ssh();
    ssh.args(["-tt", server.alias(), "tty"]);
    let out = output(ssh);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).trim().starts_with("/dev/pts/"),
        "not a terminal: {:?}",
        text(&out.stdout)
    );
    let mut plain = server.ssh();
    plain.args([server.alias(), "tty"]);
    let out = output(plain);
    assert_eq!(text(&out.stdout).trim(), "not a tty");
}

#[test]
fn a_changed_host_key_is_refused() {
    let mut server = SshServer::start();
    let port = server.port();
    server.replace_host_key();
    assert_eq!(server.port(), port);
    let mut ssh = server.ssh();
    ssh.args([server.alias(), "echo", "hello"]);
    let out = output(ssh);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(
        stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED")
            || stderr.contains("Host key verification failed"),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("hello"));
}

#[test]
fn a_key_that_is_not_authorised_is_refused() {
    let server = SshServer::start();
    let mut ssh = Command::new("ssh");
    ssh.arg("-F")
        .arg(server.config_with_wrong_key())
        .args([server.alias(), "echo", "hello"]);
    let out = output(ssh);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(stderr.contains("Permission denied"), "{stderr}");
    assert!(!text(&out.stdout).contains("hello"));
}

#[test]
fn a_closed_port_is_refused() {
    let server = SshServer::start();
    let mut ssh = Command::new("ssh");
    ssh.arg("-F")
        .arg(server.unreachable_config())
        .args([server.alias(), "true"]);
    let out = output(ssh);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

/// Starts `ssh [-tt] alias 'env <marker> sleep 30'` and waits until the remote sleep runs.
fn remote_sleep(server: &SshServer, tty: bool, mark: &str) -> (Child, Vec<(i32, String)>) {
    let mut ssh = server.ssh();
    if tty {
        ssh.arg("-tt");
    }
    ssh.arg(server.alias())
        .arg(format!("env {mark} sleep 30"))
        .stdin(if tty { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let child = ssh.spawn().expect("start ssh");
    let mut found = Vec::new();
    let running = within(Duration::from_secs(10), || {
        found = processes_with_env(mark);
        !found.is_empty()
    });
    assert!(running, "the remote sleep never started\n{}", server.log());
    assert!(
        found.iter().all(|(_, comm)| comm == "sleep"),
        "only the remote sleep carries the marker: {found:?}"
    );
    (child, found)
}

fn ends_within(child: &mut Child, limit: Duration) -> bool {
    within(limit, || matches!(child.try_wait(), Ok(Some(_))))
}

#[test]
fn a_dropped_connection_ends_the_client_and_a_remote_process_with_a_terminal() {
    let server = SshServer::start();
    let mark = marker("tty");
    let (mut client, _) = remote_sleep(&server, true, &mark);
    server.kill_connections();
    assert!(
        ends_within(&mut client, Duration::from_secs(5)),
        "ssh still runs after its connection dropped"
    );
    let gone = within(Duration::from_secs(5), || {
        processes_with_env(&mark).is_empty()
    });
    let left = processes_with_env(&mark);
    kill_all(&left);
    assert!(gone, "the remote process outlived its terminal: {left:?}");
    // The server still takes new connections.
    let mut again = server.ssh();
    again.args([server.alias(), "echo", "again"]);
    assert_eq!(text(&output(again).stdout), "again\n");
}

#[test]
fn a_remote_process_without_a_terminal_outlives_a_dropped_connection() {
    let server = SshServer::start();
    let mark = marker("notty");
    let (mut client, before) = remote_sleep(&server, false, &mark);
    server.kill_connections();
    assert!(
        ends_within(&mut client, Duration::from_secs(5)),
        "ssh still runs after its connection dropped"
    );
    // Nothing tells it: no terminal to hang up, and sleep neither reads nor writes.
    std::thread::sleep(Duration::from_millis(500));
    let after = processes_with_env(&mark);
    kill_all(&after);
    assert_eq!(after, before, "the remote sleep should still run");
    assert!(within(Duration::from_secs(5), || processes_with_env(&mark)
        .is_empty()));
}

#[test]
fn dropping_the_server_ends_what_its_sessions_left() {
    let server = SshServer::start();
    let mark = marker("drop");
    let (mut client, _) = remote_sleep(&server, false, &mark);
    drop(server);
    assert!(ends_within(&mut client, Duration::from_secs(5)));
    assert!(
        within(Duration::from_secs(5), || processes_with_env(&mark)
            .is_empty()),
        "left behind: {:?}",
        processes_with_env(&mark)
    );
}

#[test]
fn a_killed_client_ends_the_remote_process_only_when_it_has_a_terminal() {
    let server = SshServer::start();
    let mut left = Vec::new();
    for tty in [true, false] {
        let mark = marker("client");
        let (mut client, before) = remote_sleep(&server, tty, &mark);
        client.kill().expect("kill ssh");
        client.wait().expect("reap ssh");
        // The server sees the connection close; a terminal is hung up, pipes are not.
        let gone = within(Duration::from_secs(3), || {
            processes_with_env(&mark).is_empty()
        });
        let after = processes_with_env(&mark);
        kill_all(&after);
        left.push((tty, gone, before.len(), after));
    }
    assert!(left[0].1, "with -tt the remote process survived: {left:?}");
    assert!(!left[1].1, "without -tt the remote process died: {left:?}");
    assert_eq!(left[1].2, left[1].3.len(), "{left:?}");
}
