//! A kernel's operations that depend on where it runs: here (its PTY, /proc) or on a host
//! over SSH (the session's helper there). `kernel.rs` runs blocks the same way for both.

use std::time::Duration;

use portable_pty::PtySize;

use super::super::language::Language;
use super::{Kernel, Place, PtyProcess, REAP_WAIT};

impl Kernel {
    /// Starts a kernel on the link's host: its driver and interpreter's command line go
    /// there first (once a session), then `ssh -tt` starts it in a PTY there. Err: one
    /// sentence for the person.
    pub async fn start_remote(
        language: Language,
        link: std::sync::Arc<crate::exec::remote::Link>,
        prefix: &[String],
        size: PtySize,
    ) -> Result<Kernel, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        if crate::shutdown::leaving() {
            return Err("oi-tui is stopping: no kernel starts".to_string());
        }
        let (program, run_line) = crate::exec::remote::run_line(&link, language, prefix)?;
        // A configured interpreter that is not there is said so, not left to fail as a
        // kernel that exits at once.
        let quoted = crate::exec::remote::sh_quote(&program);
        if let Err(e) = link
            .call(|seq| format!("oi_can_run {seq} {quoted}\n"))
            .await
        {
            return Err(format!(
                "Cannot run {language} on {host}: {e}. Install it on {host}, or name the right path under `interpreters` in the executor's settings.",
                host = link.target.name
            ));
        }
        link.prepare(language, &run_line).await?;
        // Of one width: the helper finds a kernel's processes by `OI_TUI_KERNEL=TOKEN/NAME`
        // as a substring of their environment, which `k1` would be of `k12`'s.
        let name = format!(
            "k{:08}",
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 100_000_000
        );
        link.call(|seq| format!("oi_kernel {seq} {name}\n"))
            .await
            .map_err(|e| {
                format!(
                    "Cannot start the {language} kernel on {}: {e}.",
                    link.target.name
                )
            })?;
        let ready = uuid::Uuid::new_v4().simple().to_string();
        let cmd = link.kernel_command(language, &name, &ready, (size.rows, size.cols));
        let resize = {
            let (link, name) = (link.clone(), name.clone());
            Box::new(move |rows, cols| {
                link.send(|seq| format!("oi_resize {seq} {name} {rows} {cols}\n"));
            })
        };
        let mut process = PtyProcess::spawn_piped(cmd, resize).map_err(|e| {
            format!(
                "Cannot start the {language} kernel on {}: {e}.",
                link.target.name
            )
        })?;
        let early = match crate::exec::remote::await_ready(&mut process.output, &ready).await {
            Ok(early) => early,
            Err(why) => {
                // (The local `ssh` goes with `process`.)
                link.send(|seq| format!("oi_kill {seq} {name}\n"));
                return Err(format!(
                    "Cannot start the {language} kernel on {}: {why}.",
                    link.target.name
                ));
            }
        };
        Ok(Kernel {
            handed_at: None,
            early,
            remote_size: Some((size.rows, size.cols)),
            language,
            process,
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            place: Place::Remote { link, name },
        })
    }

    /// Gives the kernel's terminal the size of the pane before a block. A remote kernel's
    /// is set by the helper there, and waited for (a second at most), so that the block sees
    /// it as a local one would. (While a block runs, a resize is sent without waiting.)
    pub async fn take_size(&mut self, rows: u16, cols: u16) {
        let Place::Remote { link, name } = &self.place else {
            let _ = self.process.control.resize(rows, cols);
            return;
        };
        let want = (rows.max(1), cols.max(1));
        if self.remote_size == Some(want) {
            return;
        }
        let asked = tokio::time::timeout(
            Duration::from_secs(1),
            link.call(|seq| format!("oi_resize {seq} {name} {} {}\n", want.0, want.1)),
        )
        .await;
        // When it could not be set, it is asked again before the next block.
        if matches!(asked, Ok(Ok(_))) {
            self.remote_size = Some(want);
        }
    }

    /// The link of a kernel that runs on another host.
    pub fn link(&self) -> Option<&std::sync::Arc<crate::exec::remote::Link>> {
        match &self.place {
            Place::Remote { link, .. } => Some(link),
            Place::Local { .. } => None,
        }
    }

    /// The helper's name for a remote kernel.
    pub fn remote_name(&self) -> Option<&str> {
        match &self.place {
            Place::Remote { name, .. } => Some(name),
            Place::Local { .. } => None,
        }
    }

    /// Sends SIGINT to the foreground process group of the kernel's terminal.
    pub(super) fn interrupt(&self) {
        match &self.place {
            Place::Local { .. } => self.process.control.interrupt(),
            Place::Remote { link, name } => {
                if link.is_lost() {
                    // Nothing to reach there: the local `ssh` passes Ctrl-C on, if anything.
                    let _ = self.process.control.write_input(&[0x03]);
                } else {
                    link.send(|seq| format!("oi_signal {seq} {name} INT\n"));
                }
            }
        }
    }

    /// Kills the kernel and what it started; returns what survived (here only).
    pub(super) async fn kill(&self) -> Vec<crate::exec::reaper::Survivor> {
        if let Place::Remote { link, name } = &self.place
            && !link.is_lost()
        {
            let answered = tokio::time::timeout(
                REAP_WAIT,
                link.call(|seq| format!("oi_kill {seq} {name}\n")),
            )
            .await;
            if answered.is_err() {
                link.mark_stalled();
            }
        }
        self.process.control.kill()
    }

    /// The processes of the kernel terminal's foreground group that wait for keyboard input.
    pub(super) async fn terminal_readers(&self) -> Vec<i32> {
        match &self.place {
            Place::Local { .. } => self.process.control.terminal_readers(),
            Place::Remote { link, name } => {
                let asked = tokio::time::timeout(
                    Duration::from_secs(1),
                    link.call(|seq| format!("oi_readers {seq} {name}\n")),
                )
                .await;
                match asked {
                    Ok(Ok(reply)) => reply
                        .values("READER")
                        .filter_map(|p| p.trim().parse().ok())
                        .collect(),
                    _ => Vec::new(),
                }
            }
        }
    }

    /// Sends `signal` to processes of the kernel's (their pids as the kernel's host knows
    /// them).
    pub(super) fn signal(&self, pids: &[i32], signal: i32) {
        match &self.place {
            Place::Local { .. } => {
                for &pid in pids {
                    // SAFETY: kill(2) on a process of this kernel's session.
                    unsafe {
                        libc::kill(pid, signal);
                    }
                }
            }
            Place::Remote { link, .. } => {
                let name = if signal == libc::SIGKILL {
                    "KILL"
                } else {
                    "HUP"
                };
                let list: Vec<String> = pids.iter().map(i32::to_string).collect();
                let list = list.join(" ");
                link.send(|seq| format!("oi_signal_pids {seq} {name} {list}\n"));
            }
        }
    }

    /// One sentence on how a remote kernel's connection ended (empty for a local kernel).
    pub(super) async fn loss(&self) -> String {
        match self.link() {
            Some(link) => link.loss().await,
            None => String::new(),
        }
    }

    /// Whether a remote kernel ended because its connection did.
    pub(super) async fn connection_lost(&self) -> bool {
        let Some(link) = self.link() else {
            return false;
        };
        // The master notices a moment after the kernel's channel does.
        let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
        while !link.is_lost() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        link.is_lost()
    }

    /// The interpreter's process id, as its host knows it (None: unknown).
    pub(super) async fn interpreter_pid(&self) -> Option<i32> {
        match &self.place {
            Place::Local { .. } => Some(self.local_interpreter_pid()),
            Place::Remote { link, name } => link
                .call(|seq| format!("oi_pid {seq} {name}\n"))
                .await
                .ok()?
                .values("PID")
                .next()?
                .trim()
                .parse()
                .ok(),
        }
    }
}
