//! The project file (`.oi-tui.toml`) and `oi-tui trust`, through the real binary against
//! the scripted model server: untrusted project rules have no effect and the run says so;
//! after `oi-tui trust --yes` they apply (an allow rule lets `ls` run under `--approval
//! rules` with no terminal, a deny rule denies); once the file changes they stop applying
//! and the warning says it changed; a project file that sets anything but `[policy]` is
//! refused; and rules written with `add_rule` / `add_project_rule` keep the file's comments.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use oi_tui::policy::Decision;
use oi_tui::rules_file::{Added, add_project_rule, add_rule};

use super::model_server::{ModelServer, Reply};
use super::support::{json_events as events_of, output_within as finish, proposed, started, text};

/// A made-up home: `proj/` is the working directory, `data/` the data dir.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("proj")).expect("proj");
        std::fs::write(dir.path().join("config.toml"), "").expect("config");
        Home { dir }
    }

    fn proj(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn project_file(&self, text: &str) {
        std::fs::write(self.proj().join(".oi-tui.toml"), text).expect("project file");
    }

    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
        cmd.arg("--config")
            .arg(self.dir.path().join("config.toml"))
            .arg("--data-dir")
            .arg(self.data())
            .current_dir(self.proj())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg-config"))
            .env("XDG_DATA_HOME", self.dir.path().join("share"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("OI_TUI_MODEL")
            .env_remove("OI_TUI_API_BASE")
            .env_remove("OI_TUI_CONFIG")
            .env_remove("OI_TUI_DATA_DIR")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// `oi-tui --task` against the scripted server.
    async fn task(&self, server: &ModelServer, args: &[&str]) -> Output {
        let mut cmd = self.command();
        cmd.args([
            "--task",
            "do it",
            "--model",
            "openai/scripted",
            "--api-base",
        ])
        .arg(server.base("openai"))
        .args(args);
        finish(cmd).await
    }

    /// `oi-tui trust …`.
    async fn trust(&self, args: &[&str]) -> Output {
        let mut cmd = self.command();
        cmd.arg("trust").args(args);
        finish(cmd).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_project_rules_have_no_effect_and_the_run_says_so() {
    let home = Home::new();
    home.project_file("[policy]\nallow = [\"mkdir\"]\ndeny = [\"touch\"]\n");
    // Under -y, an untrusted deny rule does not stop `touch`.
    let server = ModelServer::start(vec![
        Reply::tool("shell", "touch made.txt"),
        Reply::text("done"),
    ])
    .await;
    let out = home.task(&server, &["-y"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        home.proj().join("made.txt").exists(),
        "{}",
        text(&out.stdout)
    );
    assert!(
        stderr.contains("(1 allow, 1 deny) are not trusted, so they do not apply"),
        "{stderr}"
    );
    assert!(stderr.contains("trust them with: oi-tui trust"), "{stderr}");
    // Under --approval rules, an untrusted allow rule does not let `mkdir` run.
    let server = ModelServer::start(vec![
        Reply::tool("shell", "mkdir made-dir"),
        Reply::text("done"),
    ])
    .await;
    let out = home.task(&server, &["--approval", "rules", "--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = events_of(&out);
    assert_eq!(proposed(&events, 1)["verdict"]["decision"], "ask");
    assert!(!started(&events, 1));
    assert!(!home.proj().join("made-dir").exists());
    assert!(!home.data().join("trusted-projects.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trusted_rules_apply_until_the_file_changes() {
    let home = Home::new();
    home.project_file("# our rules\n[policy]\nallow = [\"ls\"]\ndeny = [\"touch\"]\n");
    // No terminal and no --yes: nothing is trusted.
    let out = home.trust(&[]).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no terminal to ask on"), "{stderr}");
    assert!(stderr.contains("oi-tui trust --yes"), "{stderr}");
    assert!(!home.data().join("trusted-projects.json").exists());
    // --yes: the rules are shown with what each list does, then trusted.
    let out = home.trust(&["--yes"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("(1 allow, 1 deny)"), "{stdout}");
    assert!(stdout.contains("allow — run without a question under --approval rules"));
    assert!(
        stdout.contains("\n    ls\n") && stdout.contains("\n    touch\n"),
        "{stdout}"
    );
    assert!(stdout.contains("Trusted."), "{stdout}");
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(&home.data().join("trusted-projects.json")), 0o600);

    let script = || {
        vec![
            Reply::tool("shell", "ls").and_tool("shell", "touch denied.txt"),
            Reply::text("done"),
        ]
    };
    let server = ModelServer::start(script()).await;
    let out = home.task(&server, &["--approval", "rules", "--json"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not trusted"), "{stderr}");
    let events = events_of(&out);
    let ls = proposed(&events, 1);
    assert_eq!(ls["verdict"]["decision"], "allow", "{ls}");
    assert_eq!(ls["verdict"]["rule"]["source"], "project", "{ls}");
    assert!(started(&events, 1), "ls ran without a question");
    let touch = proposed(&events, 2);
    assert_eq!(touch["verdict"]["decision"], "deny", "{touch}");
    assert!(!started(&events, 2));
    assert!(!home.proj().join("denied.txt").exists());

    // The file changes: its rules stop applying until trusted again.
    home.project_file("# our rules\n[policy]\nallow = [\"ls\", \"touch\"]\n");
    let server = ModelServer::start(script()).await;
    let out = home.task(&server, &["--approval", "rules", "--json"]).await;
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("changed since you trusted them, so they do not apply"),
        "{stderr}"
    );
    let events = events_of(&out);
    assert_eq!(proposed(&events, 1)["verdict"]["decision"], "ask");
    assert!(!started(&events, 1) && !started(&events, 2));
    assert!(!home.proj().join("denied.txt").exists());

    let out = home.trust(&["--revoke"]).await;
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("no longer trusted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_file_that_sets_anything_but_policy_is_refused() {
    let home = Home::new();
    home.project_file("api_base = \"http://127.0.0.1:9/v1\"\n[policy]\nallow = [\"mkdir\"]\n");
    let out = home.trust(&["--yes"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(".oi-tui.toml:1: `api_base` cannot be set in a project file"),
        "{stderr}"
    );
    assert!(stderr.contains("Nothing was trusted"), "{stderr}");
    assert!(!home.data().join("trusted-projects.json").exists());
    let server = ModelServer::start(vec![
        Reply::tool("shell", "mkdir made-dir"),
        Reply::text("done"),
    ])
    .await;
    let out = home.task(&server, &["--approval", "rules"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("`api_base` cannot be set"), "{stderr}");
    assert!(stderr.contains("do not apply"), "{stderr}");
    assert!(!home.proj().join("made-dir").exists());
    assert!(!server.chats().is_empty(), "the flag's server was used");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_without_a_project_file_or_with_a_malformed_one_fails() {
    let home = Home::new();
    let out = home.trust(&["--yes"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("there is no project file .oi-tui.toml"));
    home.project_file("[policy]\nallow = [\"ls\"\ndeny = []\n");
    let out = home.trust(&["--yes"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(".oi-tui.toml:3:"), "{stderr}");
    assert!(stderr.contains("Nothing was trusted"), "{stderr}");
    assert!(!home.data().join("trusted-projects.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_written_to_config_files_keep_comments_and_apply() {
    let home = Home::new();
    let config = home.dir.path().join("config.toml");
    let before = "# my config\n[policy] # mine\n# reviewed\nallow = [\n  \"pwd\", # here\n]\n\n\
                  [profiles.x]\nmodel = \"ollama/a\"\n";
    std::fs::write(&config, before).expect("config");
    assert_eq!(add_rule(&config, Decision::Allow, "ls"), Ok(Added::Saved));
    let after = std::fs::read_to_string(&config).expect("config");
    let lines_before: Vec<&str> = before.lines().collect();
    let lines_after: Vec<&str> = after.lines().collect();
    // Every line is kept; the only change is the new entry in the list.
    let added: Vec<&&str> = lines_after
        .iter()
        .filter(|l| !lines_before.contains(l))
        .collect();
    assert!(
        lines_before.iter().all(|l| lines_after.contains(l)),
        "{before}\n---\n{after}"
    );
    assert_eq!(added.len(), 1, "{after}");
    assert!(added[0].contains("\"ls\""), "{after}");

    // A project rule: refused while the file is untrusted, and trusted once written.
    home.project_file("# project\n[policy]\ndeny = [\"touch\"]\n");
    let err = add_project_rule(&home.proj(), &home.data(), Decision::Allow, "git status");
    assert!(
        err.as_ref().is_err_and(|e| e.contains("oi-tui trust")),
        "{err:?}"
    );
    let out = home.trust(&["--yes"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        add_project_rule(&home.proj(), &home.data(), Decision::Allow, "git status"),
        Ok(Added::Saved)
    );
    let project = std::fs::read_to_string(home.proj().join(".oi-tui.toml")).expect("project");
    assert!(
        project.starts_with("# project\n[policy]\ndeny = [\"touch\"]\n"),
        "{project}"
    );

    // The user rule `ls` applies under --approval rules, and the project file is still
    // trusted after the edit (no warning).
    let server = ModelServer::start(vec![Reply::tool("shell", "ls"), Reply::text("done")]).await;
    let out = home.task(&server, &["--approval", "rules", "--json"]).await;
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("trust"), "{stderr}");
    let events = events_of(&out);
    assert_eq!(proposed(&events, 1)["verdict"]["decision"], "allow");
    assert!(started(&events, 1));
}
