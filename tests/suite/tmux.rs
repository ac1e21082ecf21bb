//! Driving the real binary in a real terminal: a private tmux server per test.

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
}

impl Tmux {
    pub fn start(command: &str, width: u16, height: u16) -> Tmux {
        let socket = format!("oi-tui-test-{}-{}", std::process::id(), uuid_like());
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "t",
            ])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .arg(command)
            .status()
            .expect("tmux is installed (the CI script installs it)");
        assert!(status.success());
        Tmux { socket }
    }

    /// The workbench in tmux on the scripted model at `base` (`.../v1`), started in `dir`
    /// with its config and data there; `env` goes to `env` before the binary (`-u COLORTERM
    /// TERM=linux`), `args` after it (`-y`). Its exit status shows as `EXIT=N`.
    pub fn workbench(
        base: &str,
        dir: &std::path::Path,
        (width, height): (u16, u16),
        env: &str,
        args: &str,
    ) -> Tmux {
        let command = format!(
            "cd '{dir}' && env -u NO_COLOR {env} XDG_CONFIG_HOME='{dir}/config' '{bin}' --model openai/scripted --api-base {base} --data-dir '{dir}/data' {args}; echo EXIT=$?; sleep 60",
            dir = dir.display(),
            bin = env!("CARGO_BIN_EXE_oi-tui"),
        );
        Tmux::start(
            &format!(
                "bash --noprofile --norc -c \"{}\"",
                // Quoted for the shell tmux starts, so that `$?` reaches bash.
                command.replace('"', "\\\"").replace('$', "\\$")
            ),
            width,
            height,
        )
    }

    /// The tmux server's socket name (for `tmux -L`).
    pub fn socket(&self) -> &str {
        &self.socket
    }

    pub fn send(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    pub fn type_text(&self, text: &str) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "t", "-l", text])
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    /// Resizes the window, as when the person resizes their terminal.
    pub fn resize(&self, width: u16, height: u16) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "resize-window", "-t", "t"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .status()
            .expect("resize-window");
        assert!(status.success());
    }

    pub fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with its colours, as escape sequences (`capture-pane -e`).
    pub fn capture_colours(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-e", "-t", "t"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until the screen shows `needle`; returns the screen.
    pub async fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.capture();
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {needle:?}; the screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
