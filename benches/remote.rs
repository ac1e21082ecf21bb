//! Remote-kernel figures, over an OpenSSH server on 127.0.0.1 that the benchmark starts
//! (and ends): warm latency of a trivial block on a remote kernel against a local one, the
//! cold start of a remote python kernel (with the connection, and the connection alone),
//! and the throughput of 100 MB from a remote block, through the kernels' sink and into the
//! workbench's terminal pane, against `ssh HOST cat FILE` of the same file as typed in a
//! terminal (a PTY here) and into a pipe, with the path taken apart hop by hop.
//! `OI_BENCH_SSH_CONFIG="Ciphers aes128-gcm@openssh.com"` (lines split by `;`) adds settings
//! to the client's config, to try them.
//!
//! Run with `cargo bench --bench remote [warm|cold|throughput]`. Prints one line a figure;
//! asserts only that blocks succeed and bytes arrive, since figures on a shared machine are
//! for reading, not for failing a build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use oi_tui::exec::remote::SshTarget;
use oi_tui::exec::{Block, Executor, KernelConfig, Kernels, Language, RunStatus};

mod support;
use support::sshd::{ALIAS, Sshd, master_socket};
use support::{SIZE, Selection, mb_per_s, median, ms, text_file};

fn main() {
    let selection = Selection::from_args();
    let sshd = Sshd::start();
    // The kernels' working directory, here and "there" (the same machine): empty, so that
    // looking for the images a block wrote costs as little on both sides.
    let work = tempfile::tempdir().expect("work dir");
    let mut target = SshTarget::from_host(ALIAS).expect("target");
    target.ssh_options = vec!["-F".into(), sshd.config_path().display().to_string()];
    target.workdir = Some(work.path().display().to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "remote kernels over OpenSSH on 127.0.0.1 ({})",
        ssh_version()
    );
    println!(
        "caveats: {cores} cores, shared with other builds and tests, so figures move between runs; \
         root's ~/.bashrc runs `pyenv init` (~100 ms) in every SSH session's login shell here, \
         which the connection, each kernel's start and a plain `ssh HOST cmd` all pay; \
         figures are reported as measured."
    );
    let bench = async {
        if selection.wants("warm") {
            warm_latency(&target, work.path(), Language::Python, "print(1)").await;
            warm_latency(&target, work.path(), Language::Shell, "echo 1").await;
        }
        if selection.wants("cold") {
            cold_start(&target, work.path(), &sshd).await;
        }
        if selection.wants("throughput") {
            throughput(&target, work.path(), &sshd).await;
        }
    };
    support::runtime().block_on(async {
        tokio::select! {
            _ = bench => {}
            _ = tokio::signal::ctrl_c() => println!("interrupted"),
        }
    });
    // Ends sshd and whatever its sessions left running.
    drop(sshd);
}

fn local(work: &Path) -> Kernels {
    Kernels::new(KernelConfig {
        cwd: work.to_path_buf(),
        ..KernelConfig::default()
    })
}

fn remote(target: &SshTarget, work: &Path) -> Kernels {
    Kernels::new(KernelConfig {
        cwd: work.to_path_buf(),
        executor: Executor::Ssh(target.clone()),
        ..KernelConfig::default()
    })
}

async fn timed(kernels: &Kernels, block: &Block) -> Duration {
    let start = Instant::now();
    let r = kernels.run(block, &mut |_| {}).await;
    let took = start.elapsed();
    assert_eq!(r.status, RunStatus::Success, "{r:?}");
    took
}

/// A trivial block on a warm local kernel and on a warm remote one, the runs alternating so
/// that both see the same load.
async fn warm_latency(target: &SshTarget, work: &Path, language: Language, code: &str) {
    let (here, there) = (local(work), remote(target, work));
    let block = Block::new(language, code);
    for kernels in [&here, &there] {
        let r = kernels.run(&block, &mut |_| {}).await;
        assert_eq!(r.status, RunStatus::Success, "{r:?}");
        assert_eq!(r.output.trim(), "1", "{r:?}");
    }
    for _ in 0..20 {
        timed(&here, &block).await;
        timed(&there, &block).await;
    }
    let (mut l, mut r) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        l.push(timed(&here, &block).await);
        r.push(timed(&there, &block).await);
    }
    l.sort();
    r.sort();
    let p50 = |v: &[Duration]| v[v.len() / 2];
    let p90 = |v: &[Duration]| v[v.len() * 9 / 10];
    for (label, v) in [("local", &l), ("remote", &r)] {
        println!(
            "warm latency   {:<7} {:<6} median {:>7.3} ms   p90 {:>7.3} ms   min {:>7.3} ms   (n={})",
            language.name(),
            label,
            ms(p50(v)),
            ms(p90(v)),
            ms(v[0]),
            v.len()
        );
    }
    let diff = ms(p50(&r)) - ms(p50(&l));
    println!(
        "warm latency   {:<7} remote - local: median {:>+7.3} ms   p90 {:>+7.3} ms   (target: median within 5 ms) {}",
        language.name(),
        diff,
        ms(p90(&r)) - ms(p90(&l)),
        if diff <= 5.0 { "met" } else { "MISSED" }
    );
    here.shutdown().await;
    there.shutdown().await;
}

/// The first python block of a session on the host, connection included; the connection
/// alone (`Kernels::connect`) and the kernel's start after it; with references: a local
/// python kernel's cold start, one plain `ssh HOST true`, and one `ssh HOST true` over a
/// master connection (what each remote kernel's `ssh -tt` pays).
async fn cold_start(target: &SshTarget, work: &Path, sshd: &Sshd) {
    const N: usize = 10;
    let block = Block::new(Language::Python, "print(1)");
    let (mut whole, mut connect, mut first, mut here) = (vec![], vec![], vec![], vec![]);
    for _ in 0..N {
        let kernels = remote(target, work);
        whole.push(timed(&kernels, &block).await);
        kernels.shutdown().await;

        let kernels = remote(target, work);
        let start = Instant::now();
        kernels.connect().await.expect("connect");
        connect.push(start.elapsed());
        first.push(timed(&kernels, &block).await);
        kernels.shutdown().await;

        let kernels = local(work);
        here.push(timed(&kernels, &block).await);
        kernels.shutdown().await;
    }
    let plain: Vec<Duration> = (0..N)
        .map(|_| ssh_run(sshd.ssh().args([ALIAS, "true"])).0)
        .collect();
    let kernels = remote(target, work);
    kernels.connect().await.expect("connect");
    let socket = master_socket().expect("the link's master socket");
    let muxed: Vec<Duration> = (0..N)
        .map(|_| ssh_run(muxed_ssh(sshd, &socket).args([ALIAS, "true"])).0)
        .collect();
    kernels.shutdown().await;
    println!(
        "cold start     python  remote, connection included   median {:>7.1} ms   (new Kernels, first block, n={N})",
        ms(median(whole))
    );
    println!(
        "cold start     python  remote connection alone        median {:>7.1} ms   (Kernels::connect: ssh -G, master, helper, n={N})",
        ms(median(connect))
    );
    println!(
        "cold start     python  remote kernel after connect    median {:>7.1} ms   (first block on a connected link, n={N})",
        ms(median(first))
    );
    println!(
        "cold start     python  local (reference)              median {:>7.1} ms   (n={N})",
        ms(median(here))
    );
    println!(
        "ssh session    plain `ssh HOST true`                  median {:>7.1} ms   (handshake + login shell, n={N})",
        ms(median(plain))
    );
    println!(
        "ssh session    `ssh -S master HOST true`              median {:>7.1} ms   (multiplexed: login shell only, n={N})",
        ms(median(muxed))
    );
}

/// 100 MB of text from `cat FILE` in a remote shell block, every byte through the kernels'
/// sink, against `ssh HOST cat FILE` (no master, no terminal: a new connection each time)
/// and the same over the link's master socket.
async fn throughput(target: &SshTarget, work: &Path, sshd: &Sshd) {
    let file = text_file(work);
    let cat = format!("cat '{}'", file.display());
    let size = std::fs::metadata(&file).expect("file").len() as usize;
    let kernels = std::sync::Arc::new(remote(target, work));
    timed(&kernels, &Block::new(Language::Shell, "true")).await;
    let socket = master_socket().expect("the link's master socket");
    let (mut kernel, mut plain, mut muxed) = (vec![], vec![], vec![]);
    let (mut plain_pty, mut pane) = (vec![], vec![]);
    let (mut tty_pipe, mut tty_pty, mut local_pty) = (vec![], vec![], vec![]);
    let (mut chunks, mut seen_last) = (0usize, 0usize);
    for _ in 0..3 {
        let (mut seen, mut calls) = (0usize, 0usize);
        let start = Instant::now();
        let r = kernels
            .run(&Block::new(Language::Shell, cat.as_str()), &mut |b| {
                seen += b.len();
                calls += 1;
            })
            .await;
        kernel.push(start.elapsed());
        assert_eq!(r.status, RunStatus::Success, "{r:?}");
        assert!(seen >= SIZE, "only {seen} bytes came");
        (chunks, seen_last) = (calls, seen);
        // The same block's output into the workbench's terminal pane, drawn as on screen.
        let block = Block::new(Language::Shell, cat.as_str());
        pane.push(support::through_pane(kernels.clone(), block).await);

        let (took, bytes) = ssh_run(sshd.ssh().arg(ALIAS).arg(&cat));
        assert_eq!(bytes, size);
        plain.push(took);
        let (took, bytes) = ssh_run(muxed_ssh(sshd, &socket).arg(ALIAS).arg(&cat));
        assert_eq!(bytes, size);
        muxed.push(took);
        // As a person runs it: in a terminal, a PTY here.
        let mut typed = sshd.ssh();
        typed.arg(ALIAS).arg(&cat);
        let (took, bytes) = pty_run(&typed);
        assert!(bytes >= size);
        plain_pty.push(took);

        // Where the kernel's time goes: the same `ssh -tt` the kernel is (a PTY there), its
        // output to a pipe and to a bare local PTY; and `cat` in a bare local PTY.
        let (took, bytes) = ssh_run(muxed_ssh(sshd, &socket).arg("-tt").arg(ALIAS).arg(&cat));
        assert!(bytes >= size);
        tty_pipe.push(took);
        let mut tty = muxed_ssh(sshd, &socket);
        tty.arg("-tt").arg(ALIAS).arg(&cat);
        let (took, bytes) = pty_run(&tty);
        assert!(bytes >= size);
        tty_pty.push(took);
        local_pty.push(support::bare_pty_cat(&file));
    }
    kernels.shutdown().await;
    let (k, p, m) = (median(kernel), median(plain), median(muxed));
    println!(
        "throughput     100 MB  remote kernel block    {:>7.1} ms ({:>6.1} MB/s)   sink got {} bytes in {} calls ({:.1} KB a call)",
        ms(k),
        mb_per_s(SIZE, k),
        seen_last,
        chunks,
        seen_last as f64 / chunks.max(1) as f64 / 1024.0
    );
    println!(
        "throughput     100 MB  plain `ssh HOST cat`   {:>7.1} ms ({:>6.1} MB/s)   (new connection, no master, no PTY; includes its handshake and login shell)",
        ms(p),
        mb_per_s(SIZE, p)
    );
    println!(
        "throughput     100 MB  `ssh -S master cat`    {:>7.1} ms ({:>6.1} MB/s)   (the link's master socket, no PTY; includes the login shell)",
        ms(m),
        mb_per_s(SIZE, m)
    );
    let typed = median(plain_pty);
    let shown = median(pane);
    println!(
        "throughput     100 MB  remote block into the pane {:>7.1} ms ({:>6.1} MB/s)   (the same block, its output parsed into the workbench's terminal pane and drawn at 200×60)",
        ms(shown),
        mb_per_s(SIZE, shown)
    );
    println!(
        "throughput     100 MB  `ssh HOST cat` in a PTY {:>7.1} ms ({:>6.1} MB/s)   (as typed in a terminal: a new connection, no PTY there, a PTY here)",
        ms(typed),
        mb_per_s(SIZE, typed)
    );
    let both_ptys = median(tty_pty.clone());
    let (tty_pipe_copy, local_pty_copy) = (tty_pipe.clone(), local_pty.clone());
    for (label, v, how) in [
        (
            "`ssh -tt -S master cat`",
            tty_pipe,
            "a PTY there, a pipe here",
        ),
        (
            "same into a bare PTY",
            tty_pty,
            "a PTY there and here: the kernel's path without oi-tui",
        ),
        ("`cat` in a bare local PTY", local_pty, "no ssh"),
    ] {
        let t = median(v);
        println!(
            "throughput     100 MB  {label:<26} {:>7.1} ms ({:>6.1} MB/s)   ({how})",
            ms(t),
            mb_per_s(SIZE, t)
        );
    }
    let ratio = |other: std::time::Duration| other.as_secs_f64() / k.as_secs_f64();
    let verdict = |r: f64| if r >= 0.8 { "met" } else { "missed" };
    let into_pane = typed.as_secs_f64() / shown.as_secs_f64();
    println!(
        "throughput     ratio through the pane / `ssh HOST cat` in a terminal {:.2} (target >= 0.8: {})   (medians of 3)",
        into_pane,
        verdict(into_pane),
    );
    println!(
        "throughput     ratio kernel / `ssh HOST cat` in a terminal {:.2} ({})   kernel / `ssh HOST cat` into a pipe {:.2} ({})",
        ratio(typed),
        verdict(ratio(typed)),
        ratio(p),
        verdict(ratio(p)),
    );
    println!(
        "throughput     ratio kernel / ssh over master {:.2}   kernel / `ssh -tt` to a pipe {:.2}   kernel / `ssh -tt` into a bare PTY {:.2}   kernel / `cat` in a bare local PTY {:.2}",
        ratio(m),
        ratio(median(tty_pipe_copy)),
        ratio(both_ptys),
        ratio(median(local_pty_copy)),
    );
}

/// `ssh -F CONFIG -S SOCKET -o ControlMaster=no`: a session over an existing master.
fn muxed_ssh(sshd: &Sshd, socket: &Path) -> Command {
    let mut cmd = sshd.ssh();
    cmd.arg("-S").arg(socket).args(["-o", "ControlMaster=no"]);
    cmd
}

/// Runs an `ssh` to its end, reading its output and dropping it: how long, how many bytes.
fn ssh_run(cmd: &mut Command) -> (Duration, usize) {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .expect("ssh");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0;
    loop {
        match out.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes += n,
        }
    }
    let status = child.wait().expect("wait");
    assert!(status.success(), "ssh failed: {status}");
    (start.elapsed(), bytes)
}

/// Runs a command in a bare local PTY, reading its output to the end: how long, how many
/// bytes.
fn pty_run(cmd: &Command) -> (Duration, usize) {
    let pair = portable_pty::native_pty_system()
        .openpty(portable_pty::PtySize::default())
        .expect("pty");
    let mut builder = portable_pty::CommandBuilder::new(cmd.get_program());
    builder.args(cmd.get_args());
    let start = Instant::now();
    let mut child = pair.slave.spawn_command(builder).expect("spawn");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes = 0;
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => bytes += n,
        }
    }
    child.wait().expect("wait");
    (start.elapsed(), bytes)
}

fn ssh_version() -> String {
    Command::new("ssh")
        .arg("-V")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stderr).trim().to_string())
        .unwrap_or_default()
}
