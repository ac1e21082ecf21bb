//! Images from blocks: matplotlib figures (shown, or still open at the block's end), PIL's
//! `Image.show()`, R's plots, and image files written in the working directory are kept as
//! files of their own and listed in the result; a session keeps them in its data directory
//! and forgets them when it is deleted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use oi_tui::exec::{KernelConfig, Kernels, Language, RunResult, RunStatus};
use oi_tui::protocol::{ImageFormat, ImageSource};

use super::model_server::{ModelServer, Reply};
use super::support::{kernels_with, mcp_python, run};

/// The PATH with the test virtual environment (matplotlib, Pillow) first.
fn venv_path() -> OsString {
    let python = mcp_python();
    let bin = python.parent().expect("the venv's bin directory");
    let mut path = OsString::from(bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    path
}

/// The binary, its kernels finding the test virtual environment's python first, with no
/// key from this environment and nothing to read.
fn oi_tui() -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.env("PATH", venv_path())
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null());
    cmd
}

/// Kernels whose python has matplotlib, keeping images in a directory of their own.
fn plotting_kernels() -> (Kernels, tempfile::TempDir, PathBuf) {
    let keep = tempfile::tempdir().expect("temp dir");
    let keep_path = keep.path().join("kept");
    let image_dir = keep_path.clone();
    let (kernels, dir) = kernels_with(move |c: &mut KernelConfig| {
        c.env.push(("PATH".into(), venv_path()));
        c.image_dir = Some(image_dir);
    });
    // The working directory goes with `dir`; the kept images with `keep`.
    std::mem::forget(keep);
    (kernels, dir, keep_path)
}

/// Width and height from a PNG's header.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).expect("read the image");
    assert_eq!(
        &bytes[..8],
        b"\x89PNG\r\n\x1a\n",
        "{} is a PNG",
        path.display()
    );
    let n =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (n(16), n(20))
}

fn ok(result: &RunResult) {
    assert_eq!(result.status, RunStatus::Success, "{result:#?}");
}

#[tokio::test]
async fn matplotlib_figures_are_kept_as_pngs_of_their_size() {
    let (kernels, _dir, keep) = plotting_kernels();
    let (shown, _) = run(
        &kernels,
        Language::Python,
        "import matplotlib.pyplot as plt\nplt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 3, 2])\nplt.show()\nprint('drawn')",
    )
    .await;
    ok(&shown);
    // No display was needed, and nothing complains of a non-interactive backend.
    assert!(
        !shown.output.contains("non-interactive"),
        "{}",
        shown.output
    );
    assert!(shown.output.contains("drawn"));
    assert_eq!(shown.images.len(), 1, "{shown:#?}");
    let image = &shown.images[0];
    assert_eq!(image.source, ImageSource::Figure);
    assert_eq!(image.format, ImageFormat::Png);
    assert_eq!((image.width, image.height), (Some(400), Some(300)));
    assert!(image.path.starts_with(&keep), "{}", image.path.display());
    assert_eq!(png_size(&image.path), (400, 300));
    assert_eq!(
        image.bytes,
        std::fs::metadata(&image.path).expect("kept").len()
    );
    // The model is told, in the result's text.
    assert!(
        shown.for_model().contains("image 1: figure, 400×300 PNG"),
        "{}",
        shown.for_model()
    );

    // A figure left open is shown when the block ends, as a notebook shows it; then it is
    // closed, so the next block does not show it again.
    let (open, _) = run(
        &kernels,
        Language::Python,
        "fig, ax = plt.subplots(figsize=(2, 2), dpi=50)\nax.bar([1, 2], [3, 4])",
    )
    .await;
    ok(&open);
    assert_eq!(open.images.len(), 1, "{open:#?}");
    assert_eq!(png_size(&open.images[0].path), (100, 100));
    let (after, _) = run(&kernels, Language::Python, "print(len(plt.get_fignums()))").await;
    assert!(after.images.is_empty(), "{after:#?}");
    assert!(after.output.contains('0'), "{}", after.output);

    // Two figures in one block: two images, in order, named after the block.
    let (two, _) = run(
        &kernels,
        Language::Python,
        "plt.figure(figsize=(1, 1), dpi=10); plt.show()\nplt.figure(figsize=(2, 1), dpi=10); plt.show()",
    )
    .await;
    let sizes: Vec<(u32, u32)> = two.images.iter().map(|i| png_size(&i.path)).collect();
    assert_eq!(sizes, [(10, 10), (20, 10)]);
    let names: Vec<String> = two
        .images
        .iter()
        .map(|i| i.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            format!("{}-1.png", two.block_id),
            format!("{}-2.png", two.block_id)
        ]
    );
}

#[tokio::test]
async fn pil_show_and_files_written_in_the_working_directory_are_kept() {
    let (kernels, dir, _keep) = plotting_kernels();
    // An image that was there before the block is not the block's.
    std::fs::write(dir.path().join("old.png"), b"not even a png").unwrap();
    std::fs::create_dir_all(dir.path().join(".cache")).unwrap();
    let (result, _) = run(
        &kernels,
        Language::Python,
        "from PIL import Image\nImage.new('RGB', (30, 20), 'red').show()\nimport os\nos.makedirs('charts', exist_ok=True)\nImage.new('L', (7, 5)).save('charts/sales.png')\nImage.new('L', (3, 3)).save('.cache/hidden.png')\nopen('plot.svg', 'w').write('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"80\"></svg>')\nopen('broken.png', 'wb').write(b'no image here')",
    )
    .await;
    ok(&result);
    let described: Vec<(String, Option<u32>, Option<u32>)> = result
        .images
        .iter()
        .map(|i| (i.origin(), i.width, i.height))
        .collect();
    let charts = dir.path().canonicalize().unwrap().join("charts/sales.png");
    let svg = dir.path().canonicalize().unwrap().join("plot.svg");
    assert_eq!(
        described,
        [
            ("figure".to_string(), Some(30), Some(20)),
            (charts.display().to_string(), Some(7), Some(5)),
            (svg.display().to_string(), Some(120), Some(80)),
        ],
        "{result:#?}"
    );
    // Files are copied: the block's own stay where it wrote them.
    assert!(charts.exists());
    assert_ne!(result.images[1].path, charts);
    assert_eq!(png_size(&result.images[1].path), (7, 5));
    // A file named .png that is no image is said, not kept.
    assert!(
        result
            .notes
            .iter()
            .any(|n| n.contains("broken.png") && n.contains("not a readable PNG")),
        "{:?}",
        result.notes
    );
}

#[tokio::test]
async fn the_figure_directory_is_not_handed_to_what_a_block_starts() {
    let (kernels, _dir, _keep) = plotting_kernels();
    let (python, _) = run(
        &kernels,
        Language::Python,
        "import os\nprint('var:', os.environ.get('OI_TUI_IMAGES'))",
    )
    .await;
    assert!(python.output.contains("var: None"), "{}", python.output);
    // A plain block makes no images and costs no note.
    let (shell, _) = run(&kernels, Language::Shell, "echo plain").await;
    assert!(
        shell.images.is_empty() && shell.notes.is_empty(),
        "{shell:#?}"
    );
}

#[tokio::test]
async fn r_plots_are_kept_and_file_devices_are_left_to_the_block() {
    let (kernels, _dir, _keep) = plotting_kernels();
    let (plot, _) = run(&kernels, Language::R, "plot(1:10)\nhist(c(1, 2, 2, 3))").await;
    ok(&plot);
    let sizes: Vec<(u32, u32)> = plot.images.iter().map(|i| png_size(&i.path)).collect();
    assert_eq!(sizes, [(480, 480), (480, 480)], "{plot:#?}");
    assert!(plot.images.iter().all(|i| i.source == ImageSource::Figure));
    let (file, _) = run(
        &kernels,
        Language::R,
        "png('mine.png', width = 300, height = 200)\nplot(1)\ninvisible(dev.off())",
    )
    .await;
    ok(&file);
    assert_eq!(file.images.len(), 1, "{file:#?}");
    assert!(file.images[0].origin().ends_with("mine.png"));
    assert_eq!(png_size(&file.images[0].path), (300, 200));
}

/// A session keeps its images in the data directory, lists them in the store and in the
/// JSON export, and deleting the session removes them.
#[tokio::test]
async fn a_session_keeps_its_images_until_it_is_deleted() {
    let server = ModelServer::start(vec![
        Reply::tool(
            "python",
            "import matplotlib.pyplot as plt\nplt.figure(figsize=(3, 2), dpi=100)\nplt.plot([1, 2])\nplt.show()",
        ),
        Reply::text("Here is the chart."),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let out = oi_tui()
        .args(["--task", "chart", "--model", "openai/scripted", "-y"])
        .args(["--api-base", &server.base("openai")])
        .arg("--data-dir")
        .arg(data.path())
        .arg("--cwd")
        .arg(work.path())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let store = oi_tui::store::Store::open(data.path()).unwrap();
    let id = store.resolve("last").unwrap();
    let session = store.export(&id).unwrap();
    let images = &session.blocks[0].images;
    assert_eq!(images.len(), 1, "{:#?}", session.blocks[0]);
    let kept = &images[0].path;
    assert!(
        kept.starts_with(data.path().join("images").join(&id)),
        "{}",
        kept.display()
    );
    assert_eq!(png_size(kept), (300, 200));
    // The model heard of it in the result.
    let chats = server.chats();
    assert!(
        chats[1].all_text().contains("image 1: figure, 300×200 PNG"),
        "{}",
        chats[1].all_text()
    );
    // The store keeps the path relative to the data directory.
    let column: String = rusqlite::Connection::open(data.path().join("sessions.db"))
        .and_then(|c| c.query_row("SELECT images FROM blocks", [], |r| r.get(0)))
        .unwrap();
    assert!(column.contains(&format!("\"images/{id}/")), "{column}");

    // The transcript links the image, so that a Markdown previewer shows it.
    let shown = oi_tui()
        .args(["sessions", "show", &id])
        .arg("--data-dir")
        .arg(data.path())
        .output()
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("![image 1: figure, 300×200 PNG, ")
            && shown.contains(&format!("](<{}>)", kept.display())),
        "{shown}"
    );

    let deleted = oi_tui()
        .args(["sessions", "delete", &id])
        .arg("--data-dir")
        .arg(data.path())
        .output()
        .await
        .unwrap();
    assert!(deleted.status.success(), "{deleted:?}");
    assert!(!kept.exists());
    assert!(!data.path().join("images").join(&id).exists());
}

/// `oi-tui run` lists the images a block made, and keeps them where `--images` says.
#[tokio::test]
async fn oi_tui_run_lists_images_and_keeps_them_with_keep_images() {
    let work = tempfile::tempdir().unwrap();
    let keep = work.path().join("kept");
    let out = oi_tui()
        .args(["run", "python", "-c"])
        .arg("from PIL import Image\nImage.new('RGB', (9, 4)).show()")
        .arg("--cwd")
        .arg(work.path())
        .arg("--keep-images")
        .arg(&keep)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let kept = keep.canonicalize().unwrap().join("1-1.png");
    assert!(err.contains("image 1: figure, 9×4 PNG"), "{err}");
    assert!(err.contains(&kept.display().to_string()), "{err}");
    assert_eq!(png_size(&kept), (9, 4));
    assert!(!err.contains("removed when"), "{err}");

    let out = oi_tui()
        .args(["run", "python", "-c"])
        .arg("from PIL import Image\nImage.new('RGB', (9, 4)).show()")
        .arg("--cwd")
        .arg(work.path())
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("image 1: figure, 9×4 PNG"), "{err}");
    assert!(err.contains("keep them with --keep-images DIR"), "{err}");
}

/// A block that copies an image at once (in less than the file system's clock tick) still
/// shows it; the next block, which touches nothing, shows nothing again.
#[tokio::test]
async fn a_quick_block_shows_what_it_wrote_and_nothing_older() {
    let (kernels, dir, _keep) = plotting_kernels();
    let (made, _) = run(
        &kernels,
        Language::Python,
        "from PIL import Image\nImage.new('L', (2, 2)).save('a.png')",
    )
    .await;
    assert_eq!(made.images.len(), 1, "{made:#?}");
    run(&kernels, Language::Shell, "true").await;
    for n in 0..15 {
        let (copied, _) = run(&kernels, Language::Shell, &format!("cp a.png b{n}.png")).await;
        let origins: Vec<String> = copied.images.iter().map(|i| i.origin()).collect();
        let expected = dir.path().canonicalize().unwrap().join(format!("b{n}.png"));
        assert_eq!(origins, [expected.display().to_string()], "copy {n}");
        let (quiet, _) = run(&kernels, Language::Shell, "true").await;
        assert!(
            quiet.images.is_empty(),
            "after copy {n}: {:#?}",
            quiet.images
        );
    }
}

/// A block that writes many images keeps the first 20, and the note names only a few of
/// the rest (a block that writes thousands must not flood the model's context).
#[tokio::test]
async fn many_images_keep_twenty_and_a_short_note() {
    let (kernels, _dir, _keep) = plotting_kernels();
    let (many, _) = run(
        &kernels,
        Language::Python,
        "from PIL import Image\nfor i in range(300):\n    Image.new('L', (1, 1)).save('p%03d.png' % i)",
    )
    .await;
    ok(&many);
    assert_eq!(many.images.len(), 20);
    assert!(
        many.images[0].origin().ends_with("p000.png"),
        "{:#?}",
        many.images[0]
    );
    let note = many
        .notes
        .iter()
        .find(|n| n.contains("Not kept"))
        .expect("a note says what was not kept");
    assert!(
        note.contains("300 images") && note.contains("and 275 more"),
        "{note}"
    );
    assert!(note.len() < 400, "{} characters: {note}", note.len());
}

/// A data directory given as a relative path: the images are still found from elsewhere.
#[tokio::test]
async fn a_relative_data_directory_keeps_image_paths_that_hold_from_anywhere() {
    let server = ModelServer::start(vec![
        Reply::tool(
            "python",
            "from PIL import Image\nImage.new('L', (5, 4)).show()",
        ),
        Reply::text("done"),
    ])
    .await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("work")).unwrap();
    let out = oi_tui()
        .args(["--task", "img", "--model", "openai/scripted", "-y"])
        .args(["--api-base", &server.base("openai")])
        .args(["--data-dir", "data", "--cwd", "work"])
        .current_dir(home.path())
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The transcript, read through the relative data directory, links the image by a
    // path that holds from anywhere (a Markdown file written elsewhere finds it).
    let shown = oi_tui()
        .args(["sessions", "show", "last", "--data-dir", "data"])
        .current_dir(home.path())
        .output()
        .await
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let kept = home.path().join("data/images");
    assert!(
        shown.contains(&format!("](<{}/", kept.display())),
        "{shown}"
    );
}
