//! Secrets stay out, with the real binary and the scripted model server: kernels start
//! without secret variables (unless `[env] pass` names them), and the values of secrets are
//! `[REDACTED]` in the transcript, `--json` events, every request to the model, every file
//! under the data directory and error messages; the data directory and store are private.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use super::model_server::{ModelServer, Reply};

const KEY: &str = "sk-test-k3y-0123456789abcdef";
const TOKEN: &str = "svc-t0ken-9876543210";

struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().expect("dir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn data(&self) -> PathBuf {
        self.path().join("data")
    }

    /// `--task TASK` against the server, with the key and a token in the environment.
    async fn task(&self, server: &ModelServer, task: &str, extra: &[&str]) -> Output {
        self.task_with(server, task, extra, &[]).await
    }

    /// `task`, with more variables in oi-tui's environment.
    async fn task_with(
        &self,
        server: &ModelServer,
        task: &str,
        extra: &[&str],
        vars: &[(&str, &str)],
    ) -> Output {
        let base = server.base("openai");
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
        cmd.args([
            "--task",
            task,
            "--model",
            "openai/scripted",
            "--api-base",
            &base,
        ])
        .args(extra)
        .arg("--data-dir")
        .arg(self.data())
        .current_dir(self.path())
        .env("XDG_CONFIG_HOME", self.path().join("config"))
        .env("XDG_DATA_HOME", self.path().join("share"))
        .env("OPENAI_API_KEY", KEY)
        .env("MY_SERVICE_TOKEN", TOKEN)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OI_TUI_MODEL")
        .env_remove("OI_TUI_API_BASE")
        .env_remove("OI_TUI_CONFIG")
        .envs(vars.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true);
        super::support::output_within(cmd).await
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Every file under `dir`, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A block echoes the key's variable, lists the environment and prints a file holding the
/// key; the result goes back to the model. `json` picks the output form.
async fn echo_run(json: bool) {
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "echo key-$OPENAI_API_KEY; echo tok-$MY_SERVICE_TOKEN; env; cat leak.txt",
        ),
        Reply::text("Seen."),
    ])
    .await;
    let home = Home::new();
    std::fs::write(home.path().join("leak.txt"), format!("leaked {KEY} here\n")).unwrap();
    let mut extra = vec!["-y"];
    if json {
        extra.push("--json");
    }
    let out = home.task(&server, "show the key", &extra).await;
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");

    // The kernel had neither variable, and the file's copy was redacted.
    let shown = if json {
        let mut live = String::new();
        for line in text(&out.stdout).lines() {
            let event: serde_json::Value =
                serde_json::from_str(line).expect("one JSON event a line");
            if event["event"] == "exec_output"
                && let Some(data) = event["data"].as_str()
            {
                live.push_str(data);
            }
        }
        live
    } else {
        text(&out.stdout)
    };
    assert!(
        shown.contains("key-\r\n") || shown.contains("key-\n"),
        "{shown}"
    );
    assert!(
        shown.contains("tok-\r\n") || shown.contains("tok-\n"),
        "{shown}"
    );
    assert!(shown.contains("leaked [REDACTED] here"), "{shown}");
    assert!(shown.contains("PATH="), "env ran: {shown}");
    assert!(!shown.contains("OPENAI_API_KEY="), "{shown}");
    assert!(!shown.contains("MY_SERVICE_TOKEN="), "{shown}");

    for secret in [KEY, TOKEN] {
        assert!(!all.contains(secret), "printed {secret}: {all}");
        let chats = server.chats();
        assert_eq!(chats.len(), 2);
        for request in &chats {
            assert!(
                !request.all_text().contains(secret),
                "{}",
                request.all_text()
            );
        }
        for (path, bytes) in files(&home.data()) {
            assert!(
                !contains(&bytes, secret),
                "{} holds {secret}",
                path.display()
            );
        }
    }
    // The model got the redacted output, and the key was still sent where it belongs.
    assert!(
        server.chats()[1]
            .all_text()
            .contains("leaked [REDACTED] here")
    );
    assert_eq!(
        server.chats()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_reach_no_kernel_output_request_or_file() {
    echo_run(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_reach_no_json_event() {
    echo_run(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_variable_reaches_the_kernel_but_is_still_redacted() {
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "echo tok-$MY_SERVICE_TOKEN; echo set-$EXTRA_SETTING",
        ),
        Reply::text("Seen."),
    ])
    .await;
    let home = Home::new();
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        "[env]\nkeep = [\"MY_SERVICE_TOKEN\"]\nset = { EXTRA_SETTING = \"on\" }\n",
    )
    .unwrap();
    let out = home
        .task(
            &server,
            "token",
            &["-y", "--config", config.to_str().unwrap()],
        )
        .await;
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("tok-[REDACTED]"), "{all}");
    assert!(all.contains("set-on"), "{all}");
    assert!(!all.contains(TOKEN), "{all}");
    assert!(!server.chats()[1].all_text().contains(TOKEN));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_env_section_is_a_clear_error() {
    let server = ModelServer::start(vec![Reply::text("never")]).await;
    let home = Home::new();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "[env]\ninherit = \"some\"\n").unwrap();
    let out = home
        .task(&server, "hi", &["--config", config.to_str().unwrap()])
        .await;
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(err.contains("config.toml:2:"), "{err}");
    assert!(
        err.contains("all") && err.contains("core") && err.contains("none"),
        "{err}"
    );
    assert!(server.chats().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_dir_and_store_are_private_and_open_ones_are_tightened() {
    let server = ModelServer::start(vec![Reply::text("Hello."), Reply::text("Again.")]).await;
    let home = Home::new();
    let out = home.task(&server, "hi", &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let data = home.data();
    assert_eq!(mode(&data), 0o700);
    let store = data.join("sessions.db");
    assert_eq!(mode(&store), 0o600);
    for suffix in ["-wal", "-shm"] {
        let file = data.join(format!("sessions.db{suffix}"));
        if file.exists() {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }

    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = home.task(&server, "hi", &[]).await;
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&store), 0o600);
    assert!(err.contains("now 700") && err.contains("now 600"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_body_echoing_the_key_is_redacted() {
    let body =
        format!(r#"{{"error":{{"message":"invalid credentials: Authorization: Bearer {KEY}"}}}}"#);
    let server =
        ModelServer::start(vec![Reply::status(401, &body), Reply::status(401, &body)]).await;
    let home = Home::new();
    for extra in [&[][..], &["--json"][..]] {
        let out = home.task(&server, "hi", extra).await;
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{all}");
        assert!(!all.contains(KEY), "{all}");
        assert!(all.contains("Bearer [REDACTED]"), "{all}");
    }
    for (path, bytes) in files(&home.data()) {
        assert!(!contains(&bytes, KEY), "{} holds the key", path.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_files_are_private_and_a_cleared_environment_is_exactly_the_one_given() {
    use oi_tui::exec::Language;
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let (kernels, dir) = super::support::kernels_with(|c| {
        c.clear_env = true;
        c.env = vec![
            ("PATH".into(), path.clone().into()),
            ("ONLY_THIS".into(), "yes".into()),
        ];
    });
    let (result, _) = super::support::run(
        &kernels,
        Language::Shell,
        "stat -c 'mode %a' \"$__oi_path\" \"$(dirname \"$__oi_path\")\"; echo home-$HOME; echo only-$ONLY_THIS",
    )
    .await;
    let out = result.output;
    assert!(
        out.contains("mode 600\r\nmode 700") || out.contains("mode 600\nmode 700"),
        "{out}"
    );
    assert!(
        out.contains("home-\r\n") || out.contains("home-\n"),
        "{out}"
    );
    assert!(out.contains("only-yes"), "{out}");

    let (result, _) = super::support::run(&kernels, Language::Html, "<p>hi</p>").await;
    let file = result.file.expect("an HTML file");
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&dir.path().join("html")), 0o700);
}

const DB_PASS: &str = "db-pa55-0123456789";
const URL_PASSWORD: &str = "u-rl-pa55w0rd-42";
const AGENT: &str = "/nonexistent/ssh-agent.sock";

/// The variables only their shape marks: a name with PASS, a URL with a password (under a
/// name that says nothing), and the SSH agent's socket.
fn shaped() -> [(&'static str, String); 3] {
    [
        ("DB_PASS", DB_PASS.to_string()),
        (
            "DATABASE_URL",
            format!("postgres://app:{URL_PASSWORD}@127.0.0.1:5432/app"),
        ),
        ("SSH_AUTH_SOCK", AGENT.to_string()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_known_by_their_shape_reach_no_kernel_output_request_or_file() {
    let block = "env; echo url-$DATABASE_URL; cat dsn.txt";
    let server = ModelServer::start(vec![
        Reply::tool("shell", block),
        Reply::text("Seen."),
        Reply::tool("shell", block),
        Reply::text("Seen."),
    ])
    .await;
    let home = Home::new();
    // The block finds the password another way, as a program reading a config file would.
    std::fs::write(
        home.path().join("dsn.txt"),
        format!("dsn postgres://app:{URL_PASSWORD}@127.0.0.1/other\npw {URL_PASSWORD}\n"),
    )
    .unwrap();
    let vars = shaped();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for json in [false, true] {
        let mut extra = vec!["-y"];
        if json {
            extra.push("--json");
        }
        let out = home.task_with(&server, "look", &extra, &vars).await;
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{all}");
        assert!(all.contains("PATH="), "env ran: {all}");
        for name in ["DB_PASS=", "DATABASE_URL=", "SSH_AUTH_SOCK="] {
            assert!(!all.contains(name), "the kernel had {name}: {all}");
        }
        assert!(
            all.contains("dsn postgres://app:[REDACTED]@127.0.0.1/other"),
            "{all}"
        );
        assert!(all.contains("pw [REDACTED]"), "{all}");
        for secret in [DB_PASS, URL_PASSWORD, AGENT] {
            assert!(!all.contains(secret), "printed {secret}: {all}");
        }
    }
    let chats = server.chats();
    assert_eq!(chats.len(), 4);
    assert!(chats[1].all_text().contains("pw [REDACTED]"));
    for secret in [DB_PASS, URL_PASSWORD, AGENT] {
        for request in &chats {
            let sent = request.all_text();
            assert!(!sent.contains(secret), "sent {secret}: {sent}");
        }
        for (path, bytes) in files(&home.data()) {
            assert!(
                !contains(&bytes, secret),
                "{} holds {secret}",
                path.display()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_pass_lets_a_variable_through_still_redacted() {
    let server = ModelServer::start(vec![
        Reply::tool(
            "shell",
            "echo pass-$DB_PASS; echo sock-${SSH_AUTH_SOCK:-none}",
        ),
        Reply::text("Seen."),
    ])
    .await;
    let home = Home::new();
    let config = home.path().join("config.toml");
    std::fs::write(&config, "[env]\npass = [\"DB_PASS\"]\n").unwrap();
    let vars = shaped();
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let extra = ["-y", "--config", config.to_str().unwrap()];
    let out = home.task_with(&server, "pass", &extra, &vars).await;
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("pass-[REDACTED]"), "{all}");
    assert!(all.contains("sock-none"), "{all}");
    assert!(!all.contains(DB_PASS), "{all}");
    assert!(!server.chats()[1].all_text().contains(DB_PASS));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_command_gets_the_environment_blocks_get() {
    let home = Home::new();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_oi-tui"));
    cmd.args(["sandbox", "--", "env"])
        .current_dir(home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("share"))
        .env("OPENAI_API_KEY", KEY)
        .env("GITHUB_TOKEN", TOKEN)
        .env("PLAIN_SETTING", "visible")
        .envs(shaped())
        .env_remove("OI_TUI_CONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = super::support::output_within(cmd).await;
    let shown = text(&out.stdout);
    let all = format!("{shown}{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");
    for name in [
        "OPENAI_API_KEY=",
        "GITHUB_TOKEN=",
        "DB_PASS=",
        "DATABASE_URL=",
        "SSH_AUTH_SOCK=",
    ] {
        assert!(!shown.contains(name), "CMD got {name}: {all}");
    }
    for secret in [KEY, TOKEN, DB_PASS, URL_PASSWORD] {
        assert!(!all.contains(secret), "{all}");
    }
    assert!(shown.contains("PLAIN_SETTING=visible"), "{all}");
    assert!(shown.contains("OI_TUI=1"), "{all}");
}
