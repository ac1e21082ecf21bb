//! Where the kernels run, as the engine handles it: connecting to a remote executor at the
//! start (so that a host that cannot be reached is said at once), and `/on NAME|local`,
//! which restarts the kernels elsewhere and says so, to the person and to the model.

use std::sync::Arc;

use crate::exec::remote::Link;
use crate::exec::{Executor, KernelConfig, Kernels, Language};
use crate::protocol::{Event, Op};

use super::Engine;

impl Engine {
    /// At the start of a session on a remote executor: connects, and says where blocks
    /// will run (or why they cannot yet).
    pub(super) async fn connect_at_start(&mut self) {
        if !self.kernels.config().executor.is_remote() {
            return;
        }
        let (note, _) = self.connect_and_describe().await;
        self.emit(Event::ExecutorChanged {
            executor: self.kernels.config().executor.name().to_string(),
            note,
            cwd: self.workdir().await,
            sandbox: Some(self.sandbox.status()),
        });
    }

    /// `Op::SetExecutor`: the kernels restart on the executor `name` names.
    pub(super) async fn set_executor(&mut self, name: &str) {
        let executor = match crate::config::executors::resolve(Some(name), &self.config.executors) {
            Ok(executor) => executor,
            Err(e) => {
                self.emit(Event::Notice {
                    message: format!("/on: {e}; the kernels stay where they are."),
                });
                return;
            }
        };
        let current = self.kernels.config().executor.clone();
        if executor == current && !(executor.is_remote() && self.kernels.link().await.is_none()) {
            self.emit(Event::Notice {
                message: format!("Kernels already run on {}.", executor.name()),
            });
            return;
        }
        let live = self.live_kernels().await;
        // Here, the local sandbox's prefix; there, the host's own (see `sandbox::remote`).
        let local = crate::sandbox::resolve(self.config.sandbox, &self.config.kernels.cwd);
        let (launch_prefix, launch_refusal) = if executor.is_remote() {
            (Vec::new(), None)
        } else {
            (local.prefix.clone(), local.refusal.clone())
        };
        let fresh = Arc::new(self.kernels.moved(KernelConfig {
            executor: executor.clone(),
            launch_prefix,
            launch_refusal,
            remote_sandbox: self.config.sandbox,
            ..self.kernels.config().clone()
        }));
        // A host is reached first: one that cannot be leaves the kernels where they are,
        // with their state.
        if executor.is_remote()
            && let Err(Unreached { message: e, .. }) = self.connect_interruptibly(&fresh).await
        {
            fresh.shutdown().await;
            let now = if self.kernels.link().await.is_some() || !current.is_remote() {
                place(&current)
            } else {
                format!("{} (not connected)", place(&current))
            };
            self.emit(Event::Notice {
                message: format!("The kernels stay on {now}: {e}"),
            });
            return;
        }
        let old = std::mem::replace(&mut self.kernels, fresh);
        old.shutdown().await;
        self.config.kernels.executor = executor.clone();
        self.moves += 1;
        let mut note = format!("Kernels now run on {}.", place(&executor));
        if !live.is_empty() {
            let names: Vec<&str> = live.iter().map(|l| l.name()).collect();
            note.push_str(&format!(
                " The {} kernel{} restarted there: variables, imports and `cd` from earlier blocks are gone.",
                names.join(", "),
                if names.len() == 1 { " was" } else { "s were" }
            ));
        }
        if executor.is_remote() {
            note.push(' ');
            note.push_str(&self.connect_and_describe().await.0);
        } else {
            self.local_facts();
        }
        self.context.push(format!(
            "The user moved the kernels to {}; earlier variables and imports are gone.",
            place(&executor)
        ));
        self.emit(Event::ExecutorChanged {
            executor: executor.name().to_string(),
            note,
            cwd: self.workdir().await,
            sandbox: Some(self.sandbox.status()),
        });
    }

    /// Where blocks run now: the host's working directory once connected, else this
    /// machine's.
    async fn workdir(&self) -> Option<String> {
        if self.kernels.config().executor.is_remote() {
            return self.kernels.link().await.map(|l| l.info.workdir.clone());
        }
        Some(self.config.kernels.cwd.display().to_string())
    }

    /// `Op::SetSandbox` with the kernels on a host: they restart under its bubblewrap.
    pub(super) async fn set_remote_sandbox(&mut self) -> String {
        let fresh = self.kernels.moved(KernelConfig {
            remote_sandbox: self.config.sandbox,
            ..self.kernels.config().clone()
        });
        let old = std::mem::replace(&mut self.kernels, Arc::new(fresh));
        old.shutdown().await;
        self.connect_and_describe().await.0
    }

    /// Before a block, when the host is not connected (the connection dropped, or the first
    /// attempt failed): connects, saying so, and says where blocks run again. Err: the block
    /// cannot run (its result says why).
    pub(super) async fn reconnect_before_block(&mut self) -> Result<(), Unreached> {
        let (note, failed) = self.connect_and_describe().await;
        if let Some(unreached) = failed {
            return Err(unreached);
        }
        self.emit(Event::ExecutorChanged {
            executor: self.kernels.config().executor.name().to_string(),
            note,
            cwd: self.workdir().await,
            sandbox: Some(self.sandbox.status()),
        });
        Ok(())
    }

    /// Connects to the remote executor; the sentence that says how it went, and why it
    /// failed. The facts the model is told (system, working directory, languages, sandbox)
    /// become the host's.
    async fn connect_and_describe(&mut self) -> (String, Option<Unreached>) {
        let kernels = self.kernels.clone();
        let link = match self.connect_interruptibly(&kernels).await {
            Ok(link) => link,
            Err(unreached) => {
                // The model must not take this machine for the one its code runs on.
                let name = self.kernels.config().executor.name().to_string();
                self.facts.os =
                    format!("the host {name}, over SSH (not reached yet: what it runs is unknown)");
                self.facts.cwd = "its working directory".to_string();
                let note = format!("{} Blocks will try to connect again.", unreached.message);
                return (note, Some(unreached));
            }
        };
        let info = &link.info;
        let languages: Vec<Language> = Language::ALL
            .into_iter()
            .filter(|l| !l.runs_in_kernel() || crate::exec::remote::runs_there(&link, *l))
            .collect();
        let sandbox = crate::sandbox::remote::resolve(
            self.config.sandbox,
            info.bwrap.as_deref(),
            &link.target.name,
        );
        // What a block deletes is judged against the working directory there.
        self.policy.set_root(&info.workdir);
        // The name the person uses for it, and its own when that differs.
        let host = if info.hostname.is_empty() || info.hostname == link.target.name {
            link.target.name.clone()
        } else {
            format!("{}, whose own name is {}", link.target.name, info.hostname)
        };
        self.facts.os = format!("{} (the host {host}, over SSH)", info.os);
        if !info.user.is_empty() {
            self.facts.user = info.user.clone();
        }
        self.facts.cwd = info.workdir.clone();
        self.facts.shell = info.shell.clone();
        self.facts.languages = languages.clone();
        self.facts.sandbox = sandbox.for_model();
        let names: Vec<&str> = languages
            .iter()
            .filter(|l| l.runs_in_kernel())
            .map(|l| l.name())
            .collect();
        let mut note = format!(
            "Connected to {} ({}, {}): blocks run in {}; languages there: {}.",
            link.target.name,
            info.hostname,
            info.os,
            info.workdir,
            if names.is_empty() {
                "none found".to_string()
            } else {
                names.join(", ")
            }
        );
        match (&sandbox.refusal, &sandbox.warning, sandbox.backend) {
            (Some(refusal), _, _) => note.push_str(&format!(" Blocks will not run: {refusal}")),
            (_, Some(warning), _) => note.push_str(&format!(" Warning: {warning}")),
            (_, _, Some(_)) => note.push_str(&format!(
                " Blocks there run in {}'s bubblewrap ({}).",
                link.target.name,
                sandbox.summary()
            )),
            _ => note.push_str(" The sandbox is off."),
        }
        self.sandbox = sandbox;
        (note, None)
    }

    /// Connects `kernels` to their host, saying so while it lasts. Ctrl-C (an interrupt),
    /// or oi-tui leaving, ends the attempt at once; what else comes meanwhile is handled as
    /// during a turn.
    pub(super) async fn connect_interruptibly(
        &mut self,
        kernels: &Kernels,
    ) -> Result<Arc<Link>, Unreached> {
        if let Some(link) = kernels.link().await {
            return Ok(link);
        }
        let executor = kernels.config().executor.name().to_string();
        self.emit(Event::Connecting {
            executor: executor.clone(),
            connecting: true,
        });
        let cancelled = || Unreached {
            message: format!("Connecting to {executor} was cancelled."),
            cancelled: true,
        };
        let connect = kernels.connect();
        tokio::pin!(connect);
        let result = loop {
            tokio::select! {
                result = &mut connect => break result.map_err(|message| Unreached {
                    message,
                    cancelled: false,
                }),
                op = self.ops.recv(), if !self.ops_closed => match op {
                    Some(Op::Interrupt) => break Err(cancelled()),
                    None => {
                        self.ops_closed = true;
                        break Err(cancelled());
                    }
                    Some(op) => {
                        self.side_op(op);
                        if self.shutdown {
                            break Err(cancelled());
                        }
                    }
                },
            }
        };
        self.emit(Event::Connecting {
            executor: executor.clone(),
            connecting: false,
        });
        result
    }

    /// The facts of this machine again, after the kernels came back from a host.
    fn local_facts(&mut self) {
        let cwd = self.config.kernels.cwd.clone();
        self.policy.set_root(&cwd);
        let sandbox = crate::sandbox::resolve(self.config.sandbox, &cwd);
        let agents_md = self.facts.agents_md.take();
        self.facts = super::prompt::Facts::here(&cwd, &sandbox);
        self.facts.agents_md = agents_md;
        self.sandbox = sandbox;
    }
}

/// A connection that was not made: why, and whether the person cancelled it.
pub(super) struct Unreached {
    pub message: String,
    pub cancelled: bool,
}

/// `server` or `this machine`.
pub(super) fn place(executor: &Executor) -> String {
    match executor {
        Executor::Local => "this machine".to_string(),
        Executor::Ssh(target) => target.name.clone(),
    }
}
