//! Sessions exported as notebooks and scripts: a session made through the engine (python
//! blocks that print and draw a matplotlib figure, an edited block, a skipped block, a
//! shell block), exported by the real binary as ipynb, py and sh; the notebook validates
//! with `nbformat` and runs with `jupyter nbconvert --execute`, the scripts run and print
//! what the session printed; bad formats and paths are clear errors that leave nothing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use oi_tui::engine;
use oi_tui::protocol::{ApprovalMode, Decision, Event, Op};
use oi_tui::store::{Exported, Recorder, Redactor, Store};
use serde_json::Value;

use super::model_server::{ModelServer, Reply};

/// The virtual environment's `bin` (matplotlib, nbformat, nbconvert, ipykernel).
fn venv_bin() -> PathBuf {
    let python = super::support::mcp_python();
    python.parent().expect("the venv's bin").to_path_buf()
}

/// `PATH` with the venv first, for kernels, scripts and Jupyter.
fn venv_path() -> std::ffi::OsString {
    let mut paths = vec![venv_bin()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap()
}

fn bin(data: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.env_remove("OPENAI_API_KEY")
        .arg("--data-dir")
        .arg(data)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

async fn export(data: &Path, args: &[&str]) -> (i32, String, String) {
    let out = bin(data)
        .args(["sessions", "export"])
        .args(args)
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const PLOT: &str = "import matplotlib.pyplot as plt\nfig = plt.figure(figsize=(4, 3), dpi=100)\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.show()\nprint('plotted', x * 2)";

/// Records a session through the engine with a person deciding: block 1 runs, block 2
/// (the figure) runs, block 3 is edited, block 4 is skipped, block 5 (shell) runs.
async fn record(data: &Path, work: &Path) -> String {
    let server = ModelServer::start(vec![
        Reply::tool("python", "print('hello from block one')\nx = 21"),
        Reply::tool("python", PLOT),
        Reply::tool("python", "print('proposed text')"),
        Reply::tool("shell", "echo should-not-appear"),
        Reply::tool("shell", "echo from-the-shell $((6 * 7))"),
        Reply::text("All done: the chart is above."),
    ])
    .await;
    let mut cfg =
        super::support::engine_config("openai/scripted", Some(server.base("openai")), work);
    cfg.approval = ApprovalMode::Ask;
    cfg.kernels.env.push(("PATH".into(), venv_path()));
    let recorder = Arc::new(Recorder::start(
        Store::open(data).unwrap(),
        None,
        Redactor::default(),
    ));
    cfg.kernels.image_dir = Some(oi_tui::store::images::session_dir(
        data,
        recorder.session_id(),
    ));
    cfg.recorder = Some(recorder.clone());
    let mut h = engine::spawn(cfg).unwrap();
    h.ops
        .send(Op::UserMessage {
            text: "plot the squares".into(),
        })
        .unwrap();
    let mut asked = 0;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(60), h.events.recv())
            .await
            .expect("an event in time")
            .expect("the engine runs");
        match event {
            Event::ApprovalNeeded { block_id } => {
                asked += 1;
                let decision = match asked {
                    3 => Decision::Edit {
                        code: "print('edited text', x)".into(),
                    },
                    4 => Decision::Skip {
                        reason: Some("not needed".into()),
                    },
                    _ => Decision::Run,
                };
                h.ops.send(Op::Decision { block_id, decision }).unwrap();
            }
            Event::TurnFinished { .. } => break,
            _ => {}
        }
    }
    assert_eq!(asked, 5, "every block was asked about");
    recorder.flush();
    recorder.session_id().to_string()
}

/// The printed lines of the blocks that ran, as recorded, in order.
fn recorded_lines(exported: &Exported) -> Vec<String> {
    exported
        .blocks
        .iter()
        .filter(|b| b.decision != "skipped")
        .flat_map(|b| {
            b.tail
                .clone()
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// A notebook field that nbformat keeps as a string or a list of lines, as one string.
fn joined(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

/// Each code cell's printed text (its stdout streams), in order.
fn printed(notebook: &Value) -> Vec<String> {
    notebook["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["cell_type"] == "code")
        .map(|c| {
            c["outputs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o["output_type"] == "stream" && o["name"] == "stdout")
                .map(|o| joined(&o["text"]))
                .collect()
        })
        .collect()
}

async fn venv_python(args: &[&str], cwd: &Path) -> std::process::Output {
    tokio::process::Command::new(super::support::mcp_python())
        .args(args)
        .current_dir(cwd)
        .env("PATH", venv_path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_exports_as_a_notebook_that_validates_and_runs_and_as_scripts_that_print_the_same()
 {
    let data = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let id = record(data.path(), work.path()).await;
    let exported = Store::open(data.path()).unwrap().export(&id).unwrap();
    let figure = exported
        .blocks
        .iter()
        .flat_map(|b| b.images.iter())
        .next()
        .expect("the figure was kept")
        .clone();
    assert_eq!((figure.width, figure.height), (Some(400), Some(300)));

    // The notebook.
    let out = tempfile::tempdir().unwrap();
    let nb_path = out.path().join("session.ipynb");
    let (code, _, err) = export(
        data.path(),
        &[&id, "--format", "ipynb", "-o", nb_path.to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&nb_path).unwrap();
    let notebook: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(notebook["nbformat"], 4);
    assert_eq!(notebook["metadata"]["kernelspec"]["name"], "python3");
    let cells = notebook["cells"].as_array().unwrap();
    let sources: Vec<(String, String)> = cells
        .iter()
        .map(|c| {
            (
                c["cell_type"].as_str().unwrap().to_string(),
                joined(&c["source"]),
            )
        })
        .collect();
    // Mixed languages: the note, and the shell cell runs through a cell magic.
    assert!(
        sources
            .iter()
            .any(|(t, s)| t == "markdown" && s.contains("**Languages.**") && s.contains("%%bash")),
        "{sources:#?}"
    );
    let code_cells: Vec<&String> = sources
        .iter()
        .filter(|(t, _)| t == "code")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(code_cells.len(), 4, "{code_cells:#?}");
    assert!(code_cells[0].starts_with("print('hello from block one')"));
    assert_eq!(
        code_cells[2], "print('edited text', x)",
        "the edited code ran"
    );
    assert!(code_cells[3].starts_with("%%bash\necho from-the-shell"));
    let counts: Vec<i64> = cells
        .iter()
        .filter(|c| c["cell_type"] == "code")
        .map(|c| c["execution_count"].as_i64().unwrap())
        .collect();
    assert_eq!(counts, [1, 2, 3, 4]);
    // The skipped block is quoted in Markdown with its reason; the conversation is there.
    assert!(
        sources.iter().any(|(t, s)| t == "markdown"
            && s.contains("skipped: not needed")
            && s.contains("echo should-not-appear")),
        "{sources:#?}"
    );
    assert!(
        sources
            .iter()
            .any(|(t, s)| t == "markdown" && s.contains("plot the squares"))
    );
    assert!(
        sources
            .iter()
            .any(|(t, s)| t == "markdown" && s.contains("print('proposed text')"))
    );
    assert!(
        sources
            .iter()
            .any(|(t, s)| t == "markdown" && s.contains("All done: the chart is above."))
    );
    // The figure, as a PNG of the size drawn.
    let png = cells
        .iter()
        .flat_map(|c| c["outputs"].as_array().cloned().unwrap_or_default())
        .find(|o| o["output_type"] == "display_data")
        .expect("a display_data output");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(joined(&png["data"]["image/png"]))
        .unwrap();
    let decoded = image::load_from_memory_with_format(&bytes, image::ImageFormat::Png).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (400, 300));
    // The recorded output, as stdout streams.
    let recorded = printed(&notebook);
    assert!(recorded[0].contains("hello from block one"), "{recorded:?}");
    assert!(
        recorded[1].contains("plotted 42") && recorded[2].contains("edited text 21"),
        "{recorded:?}"
    );
    assert!(recorded[3].contains("from-the-shell 42"), "{recorded:?}");

    // nbformat says it is valid (and warns of nothing).
    let check = venv_python(
        &[
            "-W",
            "error",
            "-c",
            "import sys, nbformat\nnb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)\nnbformat.validate(nb)\nprint('valid', nb.nbformat, nb.nbformat_minor)",
            nb_path.to_str().unwrap(),
        ],
        out.path(),
    )
    .await;
    assert!(
        check.status.success() && String::from_utf8_lossy(&check.stdout).contains("valid 4 5"),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // Jupyter runs it, and it prints the same again.
    let jupyter = venv_bin().join("jupyter");
    let ran = tokio::process::Command::new(&jupyter)
        .args([
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--ExecutePreprocessor.timeout=120",
            "--output",
            "executed.ipynb",
        ])
        .arg(&nb_path)
        .current_dir(out.path())
        .env("PATH", venv_path())
        .env("JUPYTER_PLATFORM_DIRS", "1")
        .env("HOME", out.path())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let executed: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("executed.ipynb")).unwrap())
            .unwrap();
    let again = printed(&executed);
    assert_eq!(again.len(), recorded.len());
    for (then, now) in recorded.iter().zip(&again) {
        assert_eq!(
            lines(now),
            lines(then),
            "recorded {recorded:?}, now {again:?}"
        );
    }
    assert!(
        executed["cells"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["outputs"]
                .as_array()
                .is_some_and(|o| o.iter().any(|o| o["data"]["image/png"].is_string()))),
        "the figure is drawn again"
    );

    // The scripts print what the session printed.
    let expected = recorded_lines(&exported);
    assert_eq!(
        expected,
        [
            "hello from block one",
            "plotted 42",
            "edited text 21",
            "from-the-shell 42"
        ]
    );
    let py_path = out.path().join("session.py");
    let (code, _, err) = export(data.path(), &[&id, "-o", py_path.to_str().unwrap()]).await;
    assert_eq!(code, 0, "the format comes from the extension: {err}");
    let script = std::fs::read_to_string(&py_path).unwrap();
    assert!(
        script.starts_with("#!/usr/bin/env python3\n# oi-tui session "),
        "{script}"
    );
    assert!(
        script.contains(&id) && !script.contains("print('proposed text')"),
        "{script}"
    );
    let run_dir = tempfile::tempdir().unwrap();
    let py = venv_python(&[py_path.to_str().unwrap()], run_dir.path()).await;
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(
        lines(&String::from_utf8_lossy(&py.stdout)),
        expected,
        "{script}"
    );

    let (code, script, err) = export(data.path(), &[&id, "--format", "sh"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(script.starts_with("#!/usr/bin/env bash\n"), "{script}");
    assert!(
        script.contains("python3 - <<'OI_TUI_EOF'") && script.contains("# echo should-not-appear"),
        "{script}"
    );
    let sh_path = out.path().join("session.sh");
    std::fs::write(&sh_path, &script).unwrap();
    let sh = tokio::process::Command::new("bash")
        .arg(&sh_path)
        .current_dir(run_dir.path())
        .env("PATH", venv_path())
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(
        sh.status.success(),
        "{}",
        String::from_utf8_lossy(&sh.stderr)
    );
    assert_eq!(
        lines(&String::from_utf8_lossy(&sh.stdout)),
        expected,
        "{script}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_formats_and_paths_are_clear_errors_that_leave_nothing() {
    let data = tempfile::tempdir().unwrap();
    let r = Recorder::start(Store::open(data.path()).unwrap(), None, Redactor::default());
    r.message(&oi_tui::llm::Message::user("just talking"));
    r.message(&oi_tui::llm::Message::assistant("no code today", vec![]));
    r.flush();
    let id = r.session_id().to_string();

    let (code, _, err) = export(data.path(), &[&id, "--format", "xls"]).await;
    assert_ne!(code, 0);
    assert!(
        err.contains("unknown export format `xls`") && err.contains("ipynb"),
        "{err}"
    );

    let out = tempfile::tempdir().unwrap();
    let missing = out.path().join("no-such-dir/session.ipynb");
    let (code, _, err) = export(data.path(), &[&id, "-o", missing.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot write") && err.contains("no-such-dir"),
        "{err}"
    );
    let (code, _, err) = export(
        data.path(),
        &[&id, "--format", "ipynb", "-o", out.path().to_str().unwrap()],
    )
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("is a directory"), "{err}");
    // A file in the way of a directory.
    let file = out.path().join("a-file");
    std::fs::write(&file, "keep me").unwrap();
    let under = file.join("session.py");
    let (code, _, err) = export(data.path(), &[&id, "-o", under.to_str().unwrap()]).await;
    assert_eq!(code, 1);
    assert!(err.contains("cannot write"), "{err}");
    let left: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(
        left,
        [std::ffi::OsString::from("a-file")],
        "nothing partial is left"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");

    // A session without blocks is still a script that runs.
    for (format, runner) in [
        ("py", super::support::mcp_python()),
        ("sh", PathBuf::from("bash")),
    ] {
        let path = out.path().join(format!("empty.{format}"));
        let (code, _, err) = export(
            data.path(),
            &[&id, "--format", format, "-o", path.to_str().unwrap()],
        )
        .await;
        assert_eq!(code, 0, "{err}");
        let script = std::fs::read_to_string(&path).unwrap();
        assert!(script.contains("This session ran no code"), "{script}");
        let ran = std::process::Command::new(runner)
            .arg(&path)
            .output()
            .unwrap();
        assert!(ran.status.success() && ran.stdout.is_empty(), "{script}");
    }
}
