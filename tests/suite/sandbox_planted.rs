//! A block that swaps a directory oi-tui writes into or reads from for a link, under both
//! backends: its own figure directory (oi-tui would read, keep and delete what the link
//! reaches), the `--keep-images` directory inside the workspace (oi-tui would write into,
//! and tighten, what the link reaches), and a directory on an export's `-o` path.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::model_server::{ModelServer, Reply};
use super::sandbox::{BACKENDS, Layout, run, text};

/// Python that writes a real 1×1 PNG ending in `tag` at the path in `target`.
fn png_writer() -> &'static str {
    r#"import struct, zlib
def png(path, tag):
    ch = lambda t, d: struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
    head = b'\x89PNG\r\n\x1a\n' + ch(b'IHDR', struct.pack('>IIBBBBB', 1, 1, 8, 2, 0, 0, 0))
    open(path, 'wb').write(head + ch(b'IDAT', zlib.compress(b'\x00\x00\x00\x00')) + ch(b'IEND', b'') + tag)
"#
}

/// A PNG outside the sandbox's reach, with its bytes, in a directory of mode 0755.
fn precious(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    std::fs::create_dir_all(dir).expect("victim dir");
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("mode");
    let file = dir.join("precious.png");
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "{}\npng({:?}, b'PRECIOUS')",
            png_writer(),
            file.display().to_string()
        ))
        .output()
        .expect("python3");
    assert!(out.status.success(), "{out:?}");
    let bytes = std::fs::read(&file).expect("precious");
    (file, bytes)
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Found by a hostile tester: a block renamed its own figure directory aside and put a link
/// to any directory in its place; oi-tui read the images there through the link, kept them
/// as figures (into the session, on to the model) and deleted the originals. Now the
/// replaced directory yields nothing, a note says why, and what the link reaches is left as
/// it was.
#[tokio::test(flavor = "multi_thread")]
async fn a_replaced_figure_directory_is_not_followed() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let victim = layout.path("outside").join("victim");
        let (file, bytes) = precious(&victim);
        let code = format!(
            r#"import os
env = open('/proc/self/environ', 'rb').read().split(b'\0')
d = [e.split(b'=', 1)[1].decode() for e in env if e.startswith(b'OI_TUI_IMAGES=')][0]
os.rename(d, d + '.aside')
os.symlink({victim:?}, d)
print('SWAPPED-' + 'FIGURES')
"#,
            victim = victim.display().to_string(),
        );
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let all = text(&layout.task(backend, &server, &[]).await);
        assert!(all.contains("SWAPPED-FIGURES"), "{backend}:\n{all}");
        assert_eq!(
            std::fs::read(&file).ok().as_deref(),
            Some(&bytes[..]),
            "{backend}: the file behind the link was taken:\n{all}"
        );
        assert_eq!(files_in(&victim), ["precious.png"], "{backend}:\n{all}");
        let mode = std::fs::metadata(&victim)
            .expect("victim")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(
            mode, 0o755,
            "{backend}: the linked directory's mode changed"
        );
        // Nothing of it was kept in the session, and what the model heard says why.
        assert!(
            !std::fs::read_dir(layout.path("data").join("images"))
                .into_iter()
                .flatten()
                .flatten()
                .any(|s| std::fs::read_dir(s.path()).into_iter().flatten().count() > 0),
            "{backend}: an image was kept"
        );
        let asked = server.requests();
        let heard = asked.last().map(|r| r.body.to_string()).unwrap_or_default();
        assert!(
            heard.contains("figure directory was replaced by the block"),
            "{backend}: the model was not told:\n{heard}"
        );
    }
}

/// Found by a hostile tester: `--keep-images DIR` inside the workspace, which a block
/// replaced with a link to a directory outside before writing an image: oi-tui wrote the
/// kept image into that directory, replacing a file there, and made it 0700. Now the link
/// is refused with a note, and the directory behind it keeps its files and its mode.
#[tokio::test(flavor = "multi_thread")]
async fn a_keep_images_directory_replaced_by_a_link_is_not_written_through() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let victim = layout.path("outside").join("victim2");
        let (_, _) = precious(&victim);
        let existing = victim.join("1-1.png");
        std::fs::write(&existing, "EXISTING").expect("existing");
        let keep = layout.path("ws").join("keep");
        let code = format!(
            r#"{png}
import os
os.rename({keep:?}, {keep:?} + '.old')
os.symlink({victim:?}, {keep:?})
png('pic.png', b'ATTACKER')
print('SWAPPED-' + 'KEEP')
"#,
            png = png_writer(),
            keep = keep.display().to_string(),
            victim = victim.display().to_string(),
        );
        let mut cmd = layout.command(backend);
        cmd.args(["run", "python", "-c", &code, "--keep-images"])
            .arg(&keep);
        let out = run(cmd).await;
        let all = text(&out);
        assert!(all.contains("SWAPPED-KEEP"), "{backend}:\n{all}");
        assert_eq!(
            std::fs::read_to_string(&existing).ok().as_deref(),
            Some("EXISTING"),
            "{backend}: a file behind the link was replaced:\n{all}"
        );
        assert_eq!(
            files_in(&victim),
            ["1-1.png", "precious.png"],
            "{backend}:\n{all}"
        );
        let mode = std::fs::metadata(&victim)
            .expect("victim")
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(
            mode, 0o755,
            "{backend}: the linked directory's mode changed:\n{all}"
        );
        assert!(
            all.contains("is a symbolic link"),
            "{backend}: no note says why:\n{all}"
        );
    }
}

/// Found by a hostile tester: a block planted `out` as a link to a directory outside, and
/// `sessions export -o out/r.md` wrote through it (only a link as the last part was
/// refused). Now it is refused, naming the link, and nothing is written there; a real
/// directory on the way is still written to.
#[tokio::test(flavor = "multi_thread")]
async fn an_export_does_not_write_through_a_linked_directory() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let victim = layout.path("outside").join("victim");
        let (_, _) = precious(&victim);
        let code = format!(
            "import os\nos.symlink({victim:?}, 'out')\nprint('PLANTED-' + 'OUT')\n",
            victim = victim.display().to_string(),
        );
        let server =
            ModelServer::start(vec![Reply::tool("python", &code), Reply::text("Done.")]).await;
        let all = text(&layout.task(backend, &server, &[]).await);
        assert!(all.contains("PLANTED-OUT"), "{backend}:\n{all}");
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
        cmd.args(["sessions", "export", &id, "-o", "out/r.md", "--data-dir"])
            .arg(layout.path("data"));
        let out = run(cmd).await;
        assert!(!out.status.success(), "{backend}: {}", text(&out));
        assert!(
            text(&out).contains("out is a symbolic link"),
            "{backend}: {}",
            text(&out)
        );
        assert_eq!(files_in(&victim), ["precious.png"], "{backend}");
        // A real directory on the way is still written to.
        std::fs::create_dir(layout.path("ws").join("real")).expect("mkdir");
        let mut cmd = layout.command(backend);
        cmd.args(["sessions", "export", &id, "-o", "real/./r.md", "--data-dir"])
            .arg(layout.path("data"));
        let out = run(cmd).await;
        assert!(out.status.success(), "{backend}: {}", text(&out));
        assert!(layout.path("ws").join("real/r.md").is_file(), "{backend}");
    }
}

/// Nor when a directory above `--keep-images` is swapped for a link (to a directory that
/// holds one of the same name): nothing is written there, and the note names the link.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_above_keep_images_swapped_for_a_link_is_not_written_through() {
    for backend in BACKENDS {
        let layout = Layout::new();
        let victim = layout.path("outside").join("v3");
        std::fs::create_dir_all(victim.join("keep")).expect("victim");
        let parent = layout.path("ws").join("p");
        let keep = parent.join("keep");
        std::fs::create_dir_all(&keep).expect("keep");
        let code = format!(
            r#"{png}
import os
os.rename({parent:?}, {parent:?} + '.old')
os.symlink({victim:?}, {parent:?})
png('pic.png', b'ATTACKER')
print('SWAPPED-' + 'PARENT')
"#,
            png = png_writer(),
            parent = parent.display().to_string(),
            victim = victim.display().to_string(),
        );
        let mut cmd = layout.command(backend);
        cmd.args(["run", "python", "-c", &code, "--keep-images"])
            .arg(&keep);
        let all = text(&run(cmd).await);
        assert!(all.contains("SWAPPED-PARENT"), "{backend}:\n{all}");
        assert!(
            files_in(&victim.join("keep")).is_empty(),
            "{backend}: an image was kept behind the link:\n{all}"
        );
        assert!(
            all.contains("which is now a symbolic link"),
            "{backend}: no note says why:\n{all}"
        );
    }
}
