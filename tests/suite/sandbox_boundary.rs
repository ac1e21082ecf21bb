//! The sandbox's boundary against a hostile block, with the real binary under both backends
//! and every sandbox mode: nothing oi-tui writes for a block can be redirected by one (a
//! link planted where the next block's code file goes), root is no stronger than any user
//! (no remount, no bind, no capabilities), blocks have their own `/tmp` and `/dev/shm`, and
//! oi-tui's own config directory cannot be created from inside when it is absent.

use super::model_server::{ModelServer, Reply};
use super::sandbox::{BACKENDS, Layout, run, sandboxed, text};

/// Python that plants `block-N.EXT` links for the next blocks, pointing at `target`, in its
/// own kernel's directory (found from its command line) and in every oi-tui directory of
/// the temp dirs it can see; it prints how many it planted.
fn plant(target: &std::path::Path, tmp: &std::path::Path) -> String {
    format!(
        r#"import glob, os
target = {target:?}
dirs = set()
for arg in open('/proc/self/cmdline', 'rb').read().split(b'\0'):
    arg = arg.decode(errors='replace')
    if arg.endswith('/control'):
        dirs.add(os.path.dirname(arg))
for base in ('/tmp', {tmp:?}, os.environ.get('TMPDIR', '/tmp')):
    for d in glob.glob(os.path.join(base, 'oi-tui-*')) + glob.glob(os.path.join(base, 'oi-tui-*', '*')):
        if os.path.isdir(d):
            dirs.add(d)
planted = 0
for d in dirs:
    for n in range(2, 6):
        for ext in ('py', 'sh'):
            try:
                os.symlink(target, os.path.join(d, 'block-%d.%s' % (n, ext)))
                planted += 1
            except OSError:
                pass
print('PLANTED', planted, 'IN', len(dirs))
"#,
        target = target.display().to_string(),
        tmp = tmp.display().to_string(),
    )
}

/// A link planted where oi-tui would write the next block's code does not make oi-tui write
/// there: under each backend, in each sandbox mode, the file outside keeps its content.
#[tokio::test(flavor = "multi_thread")]
async fn a_planted_link_does_not_redirect_the_next_blocks_code() {
    for backend in BACKENDS {
        for mode in ["read-only", "workspace-write"] {
            let layout = Layout::new();
            let victim = layout.path("outside").join("victim.txt");
            std::fs::write(&victim, "keep").expect("victim");
            let server = ModelServer::start(vec![
                Reply::tool("python", &plant(&victim, &layout.path("tmp"))),
                Reply::tool("python", "print('SECOND-' + 'RAN')"),
                Reply::tool("shell", "echo THIRD-RAN"),
                Reply::text("Done."),
            ])
            .await;
            let out = layout.task(backend, &server, &["--sandbox", mode]).await;
            let all = text(&out);
            assert!(
                all.contains("PLANTED"),
                "{backend} {mode}: block 1 ran:\n{all}"
            );
            assert!(all.contains("SECOND-RAN"), "{backend} {mode}:\n{all}");
            assert!(all.contains("THIRD-RAN"), "{backend} {mode}:\n{all}");
            assert_eq!(
                std::fs::read_to_string(&victim).expect("victim"),
                "keep",
                "{backend} {mode}: oi-tui wrote a block's code through a planted link:\n{all}"
            );
        }
    }
}

/// Root (the suite runs as root here) gets nothing from the sandbox: no remount of the read-only
/// file system, no bind of an outside directory into the workspace, no capabilities, no new
/// user namespace with them.
#[tokio::test(flavor = "multi_thread")]
async fn root_cannot_remount_or_bind_its_way_out_under_bubblewrap() {
    let layout = Layout::new();
    let outside = layout.path("outside");
    let ws = layout.path("ws");
    std::fs::create_dir(ws.join("mnt")).expect("mnt");
    let script = format!(
        "grep CapEff /proc/self/status; \
         mount -o remount,rw,bind / && echo REMOUNTED; \
         mount --bind '{outside}' '{ws}/mnt' && echo BOUND; \
         mount -o remount,rw,bind '{ws}/mnt' && echo REBOUND; \
         echo x > '{ws}/mnt/through-bind'; \
         echo x > '{outside}/direct'; \
         unshare -Urm sh -c 'mount -o remount,rw,bind / && echo NESTED-REMOUNTED; echo x > {outside}/nested'; \
         echo DONE",
        outside = outside.display(),
        ws = ws.display()
    );
    let out = sandboxed(&layout, "bubblewrap", &script).await;
    let all = text(&out);
    assert!(all.contains("DONE"), "{all}");
    assert!(all.contains("CapEff:\t0000000000000000"), "{all}");
    for word in ["REMOUNTED", "BOUND", "REBOUND", "NESTED-REMOUNTED"] {
        assert!(!all.lines().any(|l| l.trim() == word), "{word}: {all}");
    }
    for file in ["through-bind", "direct", "nested"] {
        assert!(!outside.join(file).exists(), "{file} was written:\n{all}");
    }
}

/// Blocks have a `/tmp` and a `/dev/shm` of their own: what they write there is not in this
/// machine's, and this machine's files there are not theirs to see (bubblewrap); under
/// Landlock the real temp dir and `/dev/shm` are not writable, and `$TMPDIR` is a private
/// directory that is.
#[tokio::test(flavor = "multi_thread")]
async fn blocks_have_their_own_tmp_and_dev_shm() {
    let name = format!("oi-tui-test-{}", std::process::id());
    for backend in BACKENDS {
        let layout = Layout::new();
        let shm = std::path::Path::new("/dev/shm").join(&name);
        let tmp = std::path::Path::new("/tmp").join(&name);
        let seen = std::path::Path::new("/tmp").join(format!("{name}-seen"));
        std::fs::write(&seen, "host").expect("seen");
        let script = format!(
            "echo x > {shm} && echo SHM-WROTE; echo x > {tmp} && echo TMP-WROTE; \
             echo x > \"$TMPDIR/own\" && echo TMPDIR-WROTE; \
             cat {seen} 2>/dev/null; echo DONE",
            shm = shm.display(),
            tmp = tmp.display(),
            seen = seen.display(),
        );
        let out = sandboxed(&layout, backend, &script).await;
        let all = text(&out);
        let _ = std::fs::remove_file(&seen);
        let shm_there = shm.exists();
        let tmp_there = tmp.exists();
        let _ = std::fs::remove_file(&shm);
        let _ = std::fs::remove_file(&tmp);
        assert!(all.contains("DONE"), "{backend}: {all}");
        assert!(
            !shm_there,
            "{backend}: a block wrote this machine's /dev/shm:\n{all}"
        );
        assert!(
            !tmp_there,
            "{backend}: a block wrote this machine's /tmp:\n{all}"
        );
        assert!(all.contains("TMPDIR-WROTE"), "{backend}: {all}");
        if backend == "bubblewrap" {
            assert!(
                all.contains("SHM-WROTE") && all.contains("TMP-WROTE"),
                "{all}"
            );
            assert!(!all.contains("host"), "the real /tmp is visible: {all}");
        }
    }
}

/// With the home directory as the workspace and no oi-tui config directory yet, a block
/// cannot create one (with the sandbox turned off in it): the next run's sandbox is the same.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_cannot_create_an_absent_config() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let home = layout.path("ws");
        let config_home = home.join(".config");
        let code = "mkdir -p .config/oi-tui && printf '[sandbox]\\nmode = \"off\"\\n' > .config/oi-tui/config.toml; echo cfg-$?; touch free; echo free-$?";
        let server =
            ModelServer::start(vec![Reply::tool("shell", code), Reply::text("Done.")]).await;
        let mut cmd = layout.command(backend);
        cmd.env("HOME", &home)
            .env("XDG_CONFIG_HOME", &config_home)
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .args(["--api-base", &server.base("openai"), "--api-key", "k"]);
        let all = text(&run(cmd).await);
        assert!(all.contains("cfg-"), "{backend}: the block ran:\n{all}");
        assert!(
            !all.contains("cfg-0"),
            "{backend}: the config was written:\n{all}"
        );
        assert!(
            !config_home.join("oi-tui/config.toml").exists(),
            "{backend}: {all}"
        );
        let mut cmd = layout.command(backend);
        cmd.env("HOME", &home)
            .env("XDG_CONFIG_HOME", &config_home)
            .args(["sandbox", "status"]);
        let status = text(&run(cmd).await);
        assert!(
            status.contains(&format!("sandbox workspace-write ({backend})")),
            "{backend}: {status}"
        );
    }
}

/// With the network off under Landlock, UDP to 127.0.0.1 and an abstract Unix socket made
/// outside are out of reach too (bubblewrap's network namespace already holds them off).
#[tokio::test(flavor = "multi_thread")]
async fn network_off_under_landlock_stops_udp_and_abstract_sockets() {
    use std::os::linux::net::SocketAddrExt;
    for backend in BACKENDS {
        let layout = Layout::new();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("udp");
        udp.set_nonblocking(true).expect("nonblocking");
        let port = udp.local_addr().expect("addr").port();
        let abstract_name = format!("oi-tui-test-{}-{backend}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes())
            .expect("abstract name");
        let unix = std::os::unix::net::UnixListener::bind_addr(&addr).expect("abstract");
        unix.set_nonblocking(true).expect("nonblocking");
        let code = format!(
            "import socket\n\
             try:\n    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    s.sendto(b'hi', ('127.0.0.1', {port}))\n    print('UDP-' + 'SENT')\n\
             except OSError as e:\n    print('UDP-' + 'BLOCKED', e.errno)\n\
             try:\n    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n    u.connect('\\0{abstract_name}')\n    print('ABSTRACT-' + 'CONNECTED')\n\
             except OSError as e:\n    print('ABSTRACT-' + 'BLOCKED', e.errno)\n\
             try:\n    v = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)\n    print('VSOCK-' + 'MADE')\n\
             except OSError as e:\n    print('VSOCK-' + 'BLOCKED', e.errno)\n"
        );
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let out = layout.task(backend, &server, &["--network", "off"]).await;
        let all = text(&out);
        // Under bubblewrap the datagram goes to the sandbox's own loopback, and is lost
        // there; under Landlock the socket cannot be made.
        if backend == "landlock" {
            assert!(all.contains("UDP-BLOCKED"), "{backend}:\n{all}");
        }
        assert!(all.contains("ABSTRACT-BLOCKED"), "{backend}:\n{all}");
        // A virtual machine's host is not behind a network namespace.
        assert!(all.contains("VSOCK-BLOCKED"), "{backend}:\n{all}");
        let mut buf = [0u8; 8];
        assert!(udp.recv_from(&mut buf).is_err(), "{backend}: UDP arrived");
        assert!(
            unix.accept().is_err(),
            "{backend}: the abstract socket was reached"
        );
    }
}

/// No process outside a block gives its secrets away: under each backend the block looks
/// at every process it can see (its ancestors first: oi-tui, and the shell that started it,
/// which holds a key in its environment and waits for oi-tui) and finds the key neither
/// in an environment nor in a command line (`--api-key`), and no process but its own.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_reads_no_key_from_any_other_process() {
    const KEY: &str = "sk-ancestor-5c1d9e7f3a";
    let code = format!(
        r#"import os
key = {KEY:?}.encode()
mine, pid = set(), os.getpid()
while pid > 1:
    mine.add(pid)
    try:
        pid = int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])
    except OSError:
        break
found, others = [], 0
for name in os.listdir('/proc'):
    if not name.isdigit():
        continue
    p = int(name)
    try:
        line = open('/proc/%d/cmdline' % p, 'rb').read()
    except OSError:
        continue
    if p not in mine and p != 1:
        others += 1
    for what in ('environ', 'cmdline'):
        try:
            if key in open('/proc/%d/%s' % (p, what), 'rb').read():
                found.append('%d/%s' % (p, what))
        except OSError:
            pass
print('ANCESTORS', len(mine), 'OTHERS', others, 'FOUND', len(found), *found)
"#
    );
    for backend in BACKENDS {
        let layout = Layout::new();
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        // The shell above oi-tui holds the key in its environment and waits for oi-tui.
        let cmd = layout.command(backend);
        let oi_tui = std::path::Path::new(env!("CARGO_BIN_EXE_oi-tui"));
        let mut wrapped = tokio::process::Command::new("sh");
        wrapped
            .arg("-c")
            .arg("\"$@\"; status=$?; exit $status")
            .arg("sh")
            .arg(oi_tui)
            .args(["-y", "--task", "go", "--model", "openai/scripted"])
            .args(["--api-base", &server.base("openai"), "--api-key", KEY])
            .arg("--data-dir")
            .arg(layout.path("data"))
            .env("WRAPPER_SECRET", KEY);
        for (name, value) in cmd.as_std().get_envs() {
            match value {
                Some(value) => wrapped.env(name, value),
                None => wrapped.env_remove(name),
            };
        }
        wrapped
            .current_dir(layout.path("ws"))
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let all = text(&run(wrapped).await);
        assert!(
            all.contains("ANCESTORS"),
            "{backend}: the block ran:\n{all}"
        );
        assert!(all.contains("FOUND 0"), "{backend}: a key was read:\n{all}");
        assert!(
            all.contains("OTHERS 0"),
            "{backend}: the block saw processes not its own:\n{all}"
        );
    }
}

/// Every file under `dir` (links included, not followed).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// What oi-tui writes after a block from what the block left (figures, an export where the
/// block planted a link) never follows a link the block made: a link or a FIFO left as a
/// figure is not kept (and does not hang the run), a file outside keeps its content and its
/// mode, and an export refuses to write through a planted link.
#[tokio::test(flavor = "multi_thread")]
async fn figures_and_exports_do_not_follow_what_a_block_planted() {
    use std::os::unix::fs::PermissionsExt;
    for backend in BACKENDS {
        let layout = Layout::new();
        let outside = layout.path("outside").join("real.png");
        // A real PNG of 1×1, so that a followed link would be kept as an image.
        std::fs::write(
            &outside,
            [
                0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D',
                b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89,
            ],
        )
        .expect("png");
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o644)).expect("mode");
        let victim = layout.path("outside").join("victim.md");
        std::fs::write(&victim, "keep").expect("victim");
        let code = format!(
            r#"import os
env = open('/proc/self/environ', 'rb').read().split(b'\0')
d = [e.split(b'=', 1)[1].decode() for e in env if e.startswith(b'OI_TUI_IMAGES=')][0]
os.symlink({outside:?}, os.path.join(d, '0001.png'))
os.mkfifo(os.path.join(d, '0002.png'))
os.symlink({victim:?}, 'export.md')
print('PLANTED-' + 'FIGURES')
"#,
            outside = outside.display().to_string(),
            victim = victim.display().to_string(),
        );
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let all = text(&layout.task(backend, &server, &[]).await);
        assert!(all.contains("PLANTED-FIGURES"), "{backend}:\n{all}");
        let mode = std::fs::metadata(&outside)
            .expect("outside")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(
            mode, 0o644,
            "{backend}: the outside file's mode changed:\n{all}"
        );
        for file in walk(&layout.path("data")) {
            let meta = std::fs::symlink_metadata(&file).expect("meta");
            assert!(
                !meta.file_type().is_symlink(),
                "{backend}: a link was kept: {}",
                file.display()
            );
        }

        // The export refuses to write through the planted link.
        let mut cmd = layout.command(backend);
        cmd.args(["sessions", "list", "--json", "--data-dir"])
            .arg(layout.path("data"));
        let listed = text(&run(cmd).await);
        let id = listed
            .split("\"id\":")
            .nth(1)
            .and_then(|rest| rest.split('"').nth(1))
            .unwrap_or_else(|| panic!("{backend}: no session id in {listed}"))
            .to_string();
        let mut cmd = layout.command(backend);
        cmd.args(["sessions", "export", &id, "-o", "export.md", "--data-dir"])
            .arg(layout.path("data"));
        let out = run(cmd).await;
        assert!(!out.status.success(), "{backend}: {}", text(&out));
        assert!(
            text(&out).contains("does not write through links"),
            "{}",
            text(&out)
        );
        assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "keep");
    }
}

/// Found by a hostile tester: a process made with `CLONE_UNTRACED` escaped the exec checks;
/// TCP Fast Open connected with the network off under Landlock; a workspace holding the
/// config directory's parent moved it aside and made a new one under bubblewrap; a block
/// typed into its terminal with TIOCSTI. Each is refused now, under both backends. (Run as
/// `oi-tui sandbox --`, as blocks run, without the reader in the way.)
#[tokio::test(flavor = "multi_thread")]
async fn the_hostile_testers_escapes_are_closed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let script = format!(
        r#"import ctypes, fcntl, os, pty, socket, subprocess, termios
libc = ctypes.CDLL(None, use_errno=True)
pid = libc.syscall(56, 0x00800000 | 17, 0, 0, 0, 0)
if pid == 0:
    os.execv('/bin/rm', ['rm', 'victim'])
if pid > 0:
    os.waitpid(pid, 0)
print('UNTRACED', pid, ctypes.get_errno(), flush=True)
try:
    s = socket.socket()
    s.sendto(b'FASTOPEN', 0x20000000, ('127.0.0.1', {port}))
    print('FASTOPEN-' + 'SENT', flush=True)
except OSError as e:
    print('FASTOPEN-' + 'REFUSED', e.errno, flush=True)
try:
    master, slave = pty.openpty()
    name = os.ttyname(slave)
except OSError as e:
    # Under bubblewrap a block cannot make a terminal (the host's ptmx is not theirs).
    print('PTY-' + 'REFUSED', e, flush=True)
    name = None
child = os.fork() if name else -1
if child == 0:
    os.setsid()
    fd = os.open(name, os.O_RDWR)
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'x')
        print('TIOCSTI-' + 'TYPED', flush=True)
    except OSError as e:
        print('TIOCSTI-' + 'REFUSED', e.errno, flush=True)
    os._exit(0)
if child > 0:
    os.waitpid(child, 0)
r = subprocess.run(['sh', '-c', 'mv cfg cfg_moved && mkdir -p cfg/oi-tui && echo "[policy]" > cfg/oi-tui/config.toml && echo MOVED'], capture_output=True, text=True)
print(r.stdout.strip() or 'MOVE-' + 'REFUSED', flush=True)
"#
    );
    for backend in BACKENDS {
        let layout = Layout::new();
        let ws = layout.path("ws");
        let cfg = ws.join("cfg");
        std::fs::create_dir_all(cfg.join("oi-tui")).expect("cfg");
        std::fs::write(
            cfg.join("oi-tui/config.toml"),
            "[policy]\ndeny = [\"rm\"]\n",
        )
        .expect("config");
        std::fs::write(ws.join("victim"), "keep").expect("victim");
        std::fs::write(ws.join("escape.py"), &script).expect("script");
        let mut cmd = layout.command(backend);
        cmd.env("XDG_CONFIG_HOME", &cfg)
            .args(["--network", "off", "--data-dir"])
            .arg(layout.path("data"))
            .args(["sandbox", "--", "python3", "escape.py"]);
        let all = text(&run(cmd).await);
        assert!(all.contains("UNTRACED"), "{backend}: it ran:\n{all}");
        assert!(
            ws.join("victim").exists(),
            "{backend}: rm ran untraced:\n{all}"
        );
        assert!(all.contains("FASTOPEN-REFUSED"), "{backend}:\n{all}");
        assert!(!all.contains("TIOCSTI-TYPED"), "{backend}:\n{all}");
        if backend == "landlock" {
            assert!(all.contains("TIOCSTI-REFUSED"), "{backend}:\n{all}");
        }
        assert!(all.contains("MOVE-REFUSED"), "{backend}:\n{all}");
        assert_eq!(
            std::fs::read_to_string(cfg.join("oi-tui/config.toml")).expect("config"),
            "[policy]\ndeny = [\"rm\"]\n",
            "{backend}"
        );
    }
    assert!(listener.accept().is_err(), "a connection arrived");
}

/// `oi-tui run` (the kernels with no model) runs its blocks in the sandbox too, as the
/// hostile tester found it did not: no capabilities, nothing written outside.
#[tokio::test(flavor = "multi_thread")]
async fn oi_tui_run_is_sandboxed_too() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let outside = layout.path("outside").join("from-run");
        let mut cmd = layout.command(backend);
        cmd.args(["run", "shell", "-c"]).arg(format!(
            "grep CapEff /proc/self/status; touch '{}'; echo RAN",
            outside.display()
        ));
        let all = text(&run(cmd).await);
        assert!(all.contains("RAN"), "{backend}: {all}");
        assert!(
            !outside.exists(),
            "{backend}: oi-tui run wrote outside:\n{all}"
        );
        if backend == "bubblewrap" {
            assert!(all.contains("CapEff:\t0000000000000000"), "{all}");
        }
    }
}

/// With the temp dir itself as the workspace, a block still cannot reach another session's
/// kernel directory there (the hostile tester wrote into another oi-tui's control FIFO).
#[tokio::test(flavor = "multi_thread")]
async fn the_temp_dir_as_workspace_keeps_other_sessions_kernels_out_of_reach() {
    use std::os::unix::fs::OpenOptionsExt;
    for backend in BACKENDS {
        let layout = Layout::new();
        let tmp = layout.path("tmp");
        // SAFETY: geteuid(2) cannot fail.
        let user = tmp.join(format!("oi-tui-{}", unsafe { libc::geteuid() }));
        // Another live session's kernel (this test process stands for its owner).
        let other = user.join(format!("oi-tui-kernels-{}-OtHeR1", std::process::id()));
        std::fs::create_dir_all(other.join("oi-tui-shell-x")).expect("other");
        // Its control FIFO, with its driver reading (a read-only mount does not keep a
        // FIFO from being written).
        let control = other.join("oi-tui-shell-x/control");
        let path = std::ffi::CString::new(control.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo(3) with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0, "mkfifo");
        let mut driver = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&control)
            .expect("the driver's end");
        for workspace in [tmp.clone(), layout.path("ws")] {
            let mut cmd = layout.command(backend);
            cmd.current_dir(&workspace)
                .args(["sandbox", "--", "sh", "-c"])
                .arg(format!(
                    "ls '{user}' | sed 's/^/LS:/'; timeout 5 sh -c \"echo 'touch /x' > '{}'\" && echo WROTE; mkdir '{}/planted' && echo MADE; echo DONE",
                    control.display(),
                    other.display(),
                    user = user.display(),
                ));
            let all = text(&run(cmd).await);
            assert!(all.contains("DONE"), "{backend}: {all}");
            assert!(
                !all.contains("WROTE")
                    && !all.contains("MADE")
                    && !all.contains(&format!("LS:oi-tui-kernels-{}-OtHeR1", std::process::id())),
                "{backend}, workspace {workspace:?}: another session's kernels were in reach: {all}"
            );
            let mut got = Vec::new();
            let _ = std::io::Read::read_to_end(&mut driver, &mut got);
            assert!(got.is_empty(), "{backend}: the driver read {got:?}");
        }
    }
}

/// `oi-tui sandbox -- CMD` ends as CMD did: its exit status, or 128 + the signal that
/// killed it, as a shell says it, under each backend.
#[tokio::test(flavor = "multi_thread")]
async fn the_sandbox_command_ends_as_its_command_did() {
    for backend in BACKENDS {
        let layout = Layout::new();
        for (script, code) in [
            ("exit 7", 7),
            ("kill -TERM $$", 143),
            ("kill -KILL $$", 137),
        ] {
            let out = sandboxed(&layout, backend, script).await;
            assert_eq!(
                out.status.code(),
                Some(code),
                "{backend}: {script}: {}",
                text(&out)
            );
        }
    }
}

/// A block cannot trace the sandbox's first process (under bubblewrap, bubblewrap's own,
/// which is of the block's user and not filtered: traced, it ran a denied program and typed
/// into the person's terminal), with or without deny rules, under each backend.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_cannot_trace_the_sandboxs_first_process() {
    const TRACE: &str = r#"python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, 1, 0, 0)
print("ATTACH", r, os.strerror(ctypes.get_errno()))
try:
    open("/proc/1/mem", "r+b")
    print("MEM open")
except OSError as e:
    print("MEM refused", e.errno)
'"#;
    for backend in BACKENDS {
        for deny in [false, true] {
            let layout = Layout::new();
            if deny {
                std::fs::create_dir_all(layout.path("config/oi-tui")).expect("config");
                std::fs::write(
                    layout.path("config/oi-tui/config.toml"),
                    "[policy]\ndeny = [\"no-such-program-here\"]\n",
                )
                .expect("config");
            }
            let out = sandboxed(&layout, backend, TRACE).await;
            let all = text(&out);
            assert!(
                all.contains("ATTACH -1") && all.contains("MEM refused"),
                "{backend}, deny rules {deny}: the first process could be traced:\n{all}"
            );
        }
    }
}

/// The kernel's settings in `/proc/sys` cannot be written from a block, root or not, under
/// each backend (root without capabilities still owns them: a block wrote
/// `kernel/core_pattern`, and the next crash ran its script on the host as root). The block
/// writes back the value it read, so that nothing changes even where it could write.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_cannot_change_the_kernels_settings() {
    const SCRIPT: &str = "for knob in kernel/core_pattern kernel/hostname; do \
        v=$(cat /proc/sys/$knob) && printf '%s\\n' \"$v\" > /proc/sys/$knob && echo \"WROTE $knob\"; \
        done; echo DONE";
    for backend in BACKENDS {
        let layout = Layout::new();
        let all = text(&sandboxed(&layout, backend, SCRIPT).await);
        assert!(all.contains("DONE"), "{backend}: {all}");
        assert!(
            !all.contains("WROTE"),
            "{backend}: a setting was written:\n{all}"
        );
    }
}
