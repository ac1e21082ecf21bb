//! Remote kernels whose connection drops or stalls while a block runs: the block ends soon
//! with one sentence naming the host, what it started there dies with the connection, nothing
//! is left here (not even a zombie), and the next block connects again in a fresh kernel.

use std::sync::Arc;
use std::time::{Duration, Instant};

use oi_tui::exec::{Block, Kernels, Language, RunResult, RunStatus};

use super::remote_kernels::{ok, remote, settled};
use super::ssh_server::{ALIAS, SshServer};
use super::support::{run, spawn_block, wait_for_output};

/// Sets `before` in the python kernel, then starts a block (`first`, then a minute's sleep)
/// and waits until it runs.
async fn state_then_a_long_block(
    k: &Arc<Kernels>,
    first: &str,
) -> tokio::task::JoinHandle<RunResult> {
    ok(&run(k, Language::Python, "before = 1").await.0, "set");
    let code = format!("{first}\nimport time\nprint('long', flush=True)\ntime.sleep(60)");
    let (handle, seen) = spawn_block(k.clone(), Block::new(Language::Python, code));
    wait_for_output(&seen, "long", Duration::from_secs(10)).await;
    handle
}

/// This process's children named `comm` that have ended and not been reaped.
fn zombie_children(comm: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    super::ssh_server::proc_entries()
        .into_iter()
        .filter(|(_, dir)| {
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let Some((name, rest)) = stat.split_once(" (").and_then(|(_, r)| r.rsplit_once(") "))
            else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            name == comm && fields.next() == Some("Z") && fields.next() == Some(me.as_str())
        })
        .map(|(pid, _)| pid)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_connection_ends_the_block_and_the_next_reconnects() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    let handle = state_then_a_long_block(
        k,
        "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)",
    )
    .await;
    let dropped = Instant::now();
    server.kill_connections();
    let r = tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("the block ends soon after the connection drops")
        .expect("join");
    assert!(
        dropped.elapsed() < Duration::from_secs(6),
        "{:?}",
        dropped.elapsed()
    );
    assert!(r.state_lost, "{r:#?}");
    assert_ne!(r.status, RunStatus::Success);
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("connection to") && n.contains("was lost") && n.contains(ALIAS)),
        "{:?}",
        r.notes
    );
    // That is all it says (no images were looked for over a connection that is gone), and
    // the kernel's `ssh` here is let go at once, not left a zombie until the next block.
    assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
    assert!(
        zombie_children("ssh").is_empty(),
        "{:?}",
        zombie_children("ssh")
    );
    let left = settled(&rk.tag(), Duration::from_secs(5)).await;
    assert!(left.is_empty(), "left running there: {left:?}");
    let (r, _) = run(k, Language::Python, "print('again', 'before' in globals())").await;
    ok(&r, "reconnect");
    assert_eq!(r.output.trim(), "again False");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("had dropped") && n.contains("fresh")),
        "{:?}",
        r.notes
    );
    k.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_connection_is_let_go_of_and_the_next_block_connects_again() {
    let server = SshServer::start();
    let rk = remote(&server);
    let k = &rk.kernels;
    let handle = state_then_a_long_block(k, "").await;
    // Nothing passes any more, and nothing ends: a hung network.
    server.stall_connections();
    assert!(k.interrupt());
    // (Idle, it ends about 4 s later: the grace period, then 3 s for the kill to be
    // acknowledged. Among the whole suite it took up to 17 s, so only a hang fails here; the
    // notes tell the old path, which blamed SIGINT, from the new.)
    let r = tokio::time::timeout(Duration::from_secs(60), handle)
        .await
        .expect("Ctrl-C ends the block though the host does not answer")
        .expect("join");
    assert!(r.state_lost, "{r:#?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("stopped answering") && n.contains(ALIAS)),
        "{:?}",
        r.notes
    );
    assert!(
        !r.notes.iter().any(|n| n.contains("SIGINT")),
        "it is not that the block ignored SIGINT: {:?}",
        r.notes
    );
    // The next block does not wait on the stalled link (its command there would time out):
    // it connects again.
    let (r, _) = run(k, Language::Python, "print('again', 'before' in globals())").await;
    ok(&r, "after the stall");
    assert_eq!(r.output.trim(), "again False");
    server.signal_connections(libc::SIGCONT);
    k.shutdown().await;
}
