//! Every language: state persists across blocks, errors reach the result with their
//! traceback, and a non-zero exit status reaches the result.

use oi_tui::exec::{Block, Language, RunStatus};

use super::support::{kernels, kernels_with, run, run_block};

struct Case {
    language: Language,
    set: &'static str,
    read: &'static str,
    fail: &'static str,
    /// Words the failing block's output must carry (the error and where it happened).
    traceback: &'static [&'static str],
    exit3: &'static str,
    /// Whether the kernel survives `exit 3` (else it is restarted and says so).
    survives_exit: bool,
}

async fn check(case: Case) {
    let (kernels, _dir) = kernels();
    let lang = case.language;

    let (set, _) = run(&kernels, lang, case.set).await;
    assert_eq!(set.status, RunStatus::Success, "{lang} set: {set:#?}");
    let (read, raw) = run(&kernels, lang, case.read).await;
    assert_eq!(read.status, RunStatus::Success, "{lang} read: {read:#?}");
    assert_eq!(read.exit_code, Some(0));
    assert!(read.output.contains("42"), "{lang}: {:?}", read.output);
    assert!(String::from_utf8_lossy(&raw).contains("42"));
    assert!(!read.state_lost);

    let (fail, _) = run(&kernels, lang, case.fail).await;
    assert_eq!(fail.status, RunStatus::Failed, "{lang} fail: {fail:#?}");
    assert_ne!(fail.exit_code, Some(0));
    for word in case.traceback {
        assert!(
            fail.output.contains(word),
            "{lang}: {word:?} missing from {:?}",
            fail.output
        );
    }
    assert!(!fail.state_lost, "{lang}: an error must not cost the state");

    // The state is still there after the error.
    let (again, _) = run(&kernels, lang, case.read).await;
    assert!(again.output.contains("42"), "{lang}: {:?}", again.output);

    let (exit, _) = run(&kernels, lang, case.exit3).await;
    assert_eq!(exit.exit_code, Some(3), "{lang} exit: {exit:#?}");
    assert_eq!(exit.status, RunStatus::Failed);
    assert_eq!(exit.state_lost, !case.survives_exit, "{lang}: {exit:#?}");
    if !case.survives_exit {
        assert!(
            exit.notes.iter().any(|n| n.contains("state")),
            "{lang}: {:?}",
            exit.notes
        );
    }

    // Either way, the next block runs.
    let (after, _) = run(&kernels, lang, case.set).await;
    assert_eq!(
        after.status,
        RunStatus::Success,
        "{lang} after exit: {after:#?}"
    );
}

#[tokio::test]
async fn python() {
    check(Case {
        language: Language::Python,
        set: "x = 41",
        read: "print(x + 1)",
        fail: "def f():\n    raise ValueError('boom')\nf()",
        traceback: &["Traceback", "ValueError: boom", "<block", "in f"],
        exit3: "import sys\nsys.exit(3)",
        survives_exit: true,
    })
    .await;
}

#[tokio::test]
async fn shell() {
    check(Case {
        language: Language::Shell,
        set: "x=41; cd /",
        read: "echo $((x + 1)) $(pwd)",
        fail: "ls /definitely/not/here",
        traceback: &["/definitely/not/here"],
        exit3: "exit 3",
        survives_exit: false,
    })
    .await;
}

#[tokio::test]
async fn zsh_when_it_is_the_users_shell() {
    let zsh = oi_tui::exec::Language::Shell;
    let path = ["/usr/bin/zsh", "/bin/zsh"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("zsh is installed (the CI script installs it)");
    let (kernels, _dir) = kernels_with(|c| c.env.push(("SHELL".into(), path.into())));
    let (r, _) = run(&kernels, zsh, "x=41; echo $ZSH_VERSION").await;
    assert_eq!(r.status, RunStatus::Success, "{r:#?}");
    assert!(r.output.trim().starts_with('5'), "{:?}", r.output);
    let (r, _) = run(&kernels, zsh, "echo $((x + 1))").await;
    assert!(r.output.contains("42"), "{:?}", r.output);
    let kernels = std::sync::Arc::new(kernels);
    let (handle, seen) = super::support::spawn_block(
        kernels.clone(),
        Block::new(zsh, "echo sleeping; sleep 100; echo not reached"),
    );
    super::support::wait_for_output(&seen, "sleeping", std::time::Duration::from_secs(10)).await;
    assert!(kernels.interrupt());
    let r = handle.await.expect("join");
    assert_eq!(r.status, RunStatus::Interrupted, "{r:#?}");
    assert!(!r.state_lost);
    assert!(!r.output.contains("not reached"));
    let (r, _) = run(&kernels, zsh, "echo $x").await;
    assert_eq!(r.output.trim(), "41");
}

#[tokio::test]
async fn javascript() {
    check(Case {
        language: Language::JavaScript,
        set: "var x = 41; const y = 1;",
        read: "console.log(String(x + y))",
        fail: "function f() { throw new TypeError('boom'); }\nf();",
        traceback: &["TypeError: boom", "at f (<block"],
        exit3: "process.exit(3)",
        survives_exit: false,
    })
    .await;
}

#[tokio::test]
async fn r() {
    check(Case {
        language: Language::R,
        set: "x <- 41",
        read: "cat(x + 1, '\\n')",
        fail: "f <- function() stop('boom')\nf()",
        traceback: &["Error in f(): boom", "Traceback", "f()"],
        exit3: "quit(status = 3)",
        survives_exit: true,
    })
    .await;
}

#[tokio::test]
async fn ruby() {
    check(Case {
        language: Language::Ruby,
        set: "x = 41",
        read: "puts x + 1",
        fail: "def f\n  raise ArgumentError, 'boom'\nend\nf",
        traceback: &["boom (ArgumentError)", "<block", "in `f'"],
        exit3: "exit 3",
        survives_exit: true,
    })
    .await;
}

#[tokio::test]
async fn perl() {
    check(Case {
        language: Language::Perl,
        set: "$x = 41;",
        read: "print $x + 1, \"\\n\";",
        fail: "sub f { die \"boom\" }\nf();",
        traceback: &["boom at <block", "line 1"],
        exit3: "exit 3;",
        survives_exit: false,
    })
    .await;
}

#[tokio::test]
async fn java() {
    check(Case {
        language: Language::Java,
        set: "int x = 41;",
        read: "System.out.println(x + 1);",
        fail: "void f() { throw new IllegalStateException(\"boom\"); }\nf();",
        traceback: &["IllegalStateException: boom", ".f(#"],
        exit3: "System.exit(3);",
        survives_exit: false,
    })
    .await;
}

#[tokio::test]
async fn python_shows_the_last_expression_like_a_notebook() {
    let (kernels, _dir) = kernels();
    let (r, _) = run(&kernels, Language::Python, "a = [1, 2]\na + [3]").await;
    assert_eq!(r.output.trim(), "[1, 2, 3]");
    let (r, _) = run(&kernels, Language::Python, "None").await;
    assert_eq!(r.output, "");
}

#[tokio::test]
async fn html_is_written_not_run() {
    let (kernels, dir) = kernels();
    let (r, _) = run(&kernels, Language::Html, "<h1>hi</h1>").await;
    assert_eq!(r.status, RunStatus::Written);
    let file = r.file.expect("file");
    assert!(file.starts_with(dir.path()));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "<h1>hi</h1>");
    assert!(r.output.contains(&file.display().to_string()));
}

#[tokio::test]
async fn a_missing_interpreter_is_a_clear_result_at_once() {
    let empty = tempfile::tempdir().expect("dir");
    let (kernels, _dir) = kernels_with(|c| {
        c.env
            .push(("PATH".into(), empty.path().as_os_str().to_owned()));
        c.env.push(("SHELL".into(), "".into()));
    });
    for (lang, program) in [
        (Language::Python, "python3"),
        (Language::Shell, "bash"),
        (Language::JavaScript, "node"),
        (Language::R, "Rscript"),
        (Language::Ruby, "ruby"),
        (Language::Perl, "perl"),
        (Language::Java, "jshell"),
        (Language::PowerShell, "pwsh"),
    ] {
        let started = std::time::Instant::now();
        let (r, _) = run_block(&kernels, Block::new(lang, "1")).await;
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(r.status, RunStatus::Unavailable, "{lang}");
        let note = r.notes.join(" ");
        assert!(
            note.contains(&format!("`{program}` was not found")),
            "{note}"
        );
        assert!(note.contains("install"), "{note}");
        assert!(r.for_model().contains(program));
    }
}
