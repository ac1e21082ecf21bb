//! The sandbox around every kernel: what a block may write and whether it may use the
//! network. Two backends: bubblewrap (a command prefix: the kernel runs in a mount namespace
//! where everything is read-only but the workspace and the temp dir) and Landlock (the
//! kernel is started through this binary's hidden `__sandbox-exec` trampoline, which
//! restricts itself and then `exec`s the interpreter). portable-pty offers no pre-exec hook,
//! so both backends come down to a command prefix that `exec` runs without understanding.
//!
//! Detection: bubblewrap when `bwrap` is on PATH and user namespaces work, else Landlock
//! when the kernel supports it, else none, with the reason.

mod bubblewrap;
mod denial;
mod exec_guard;
mod landlock;
mod pid_ns;
pub mod remote;
mod seccomp;
mod tracer;
mod view;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::Deserialize;

pub use denial::refusal_reason;
pub use landlock::{TRAMPOLINE, trampoline_main};

/// The variable that forces a backend (`bubblewrap`, `landlock`, `none`), for tests and for
/// people whose bubblewrap misbehaves.
pub const BACKEND_VAR: &str = "OI_TUI_SANDBOX_BACKEND";

pub use crate::protocol::{Backend, Network, SandboxMode, SandboxStatus};

/// The `[sandbox]` section of the config file.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    pub mode: Option<SandboxMode>,
    pub network: Option<Network>,
}

/// The sandbox asked for: the mode, the network, and whether someone asked (a flag, the
/// config file, `--safe-mode`) or it is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    pub network: Network,
    pub explicit: bool,
}

/// What this machine offers: a backend, or why none.
pub type Detection = Result<Backend, String>;

/// The sandbox in force for a session's kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub settings: SandboxSettings,
    /// The backend in force; None when off or unavailable.
    pub backend: Option<Backend>,
    /// The command kernels are started under (empty: none).
    pub prefix: Vec<OsString>,
    /// Set when blocks must not run: a sandbox was asked for and none is available.
    pub refusal: Option<String>,
    /// Set when the default sandbox is unavailable and kernels run without one.
    pub warning: Option<String>,
}

impl Resolved {
    /// What the engine reports to the faces.
    pub fn status(&self) -> SandboxStatus {
        SandboxStatus {
            mode: self.settings.mode,
            network: self.settings.network,
            backend: self.backend,
            summary: self.summary(),
            label: self.label(),
            refusal: self.refusal.clone(),
            warning: self.warning.clone(),
        }
    }

    /// What the model is told: what code may write, and whether it may use the network.
    pub fn for_model(&self) -> String {
        let net = match self.settings.network {
            Network::On => "the network is on",
            Network::Off => "the network is off (connections are refused)",
        };
        let tmp = match self.backend {
            Some(Backend::Bubblewrap) => std::env::temp_dir().display().to_string(),
            _ => crate::exec::private_dirs()
                .map(|p| p.tmp.display().to_string())
                .unwrap_or_else(|_| "$TMPDIR".to_string()),
        };
        match (self.settings.mode, self.backend) {
            (_, None) if self.refusal.is_some() => {
                "none is available, so no block can run now; tell the user".to_string()
            }
            (SandboxMode::Off, _) | (_, None) => {
                "none: code runs with all of the user's permissions".to_string()
            }
            (SandboxMode::ReadOnly, Some(_)) => format!(
                "code may write only under a private temp dir ({tmp}), which is emptied when oi-tui exits; {net}. Writes elsewhere fail with a read-only or permission error"
            ),
            (SandboxMode::WorkspaceWrite, Some(_)) => format!(
                "code may write only under the working directory and a private temp dir ({tmp}), which is emptied when oi-tui exits: save what the user should keep in the working directory; {net}. Writes elsewhere fail with a read-only or permission error"
            ),
        }
    }

    /// One line for the status bar, the headless header and `oi-tui sandbox status`.
    pub fn summary(&self) -> String {
        let net = format!("network {}", self.settings.network.name());
        match (self.settings.mode, self.backend) {
            (SandboxMode::Off, _) => format!("sandbox off, {net}"),
            (mode, Some(backend)) => format!("sandbox {} ({}), {net}", mode.name(), backend.name()),
            (mode, None) => format!("sandbox {} unavailable: none in force", mode.name()),
        }
    }
}

impl Resolved {
    /// A short form for the workbench's status bar.
    pub fn label(&self) -> String {
        let net = match self.settings.network {
            Network::On => "",
            Network::Off => ", net off",
        };
        match (self.settings.mode, self.backend) {
            (SandboxMode::Off, _) => "sandbox off".to_string(),
            (SandboxMode::ReadOnly, Some(b)) => format!("{} read-only{net}", b.name()),
            (SandboxMode::WorkspaceWrite, Some(b)) => format!("{}{net}", b.name()),
            (_, None) if self.refusal.is_some() => "no sandbox: blocks refused".to_string(),
            (_, None) => "no sandbox".to_string(),
        }
    }
}

/// Finds the backend (once per process; `OI_TUI_SANDBOX_BACKEND` forces one).
pub fn detect() -> Detection {
    static FOUND: OnceLock<Detection> = OnceLock::new();
    FOUND
        .get_or_init(|| match std::env::var(BACKEND_VAR).ok().as_deref() {
            Some("bubblewrap") => bubblewrap::available().map(|()| Backend::Bubblewrap),
            Some("landlock") => landlock::available().map(|()| Backend::Landlock),
            Some("none") => Err(format!("{BACKEND_VAR}=none")),
            Some(other) => Err(format!(
                "{BACKEND_VAR}={other} is not a backend (bubblewrap, landlock, none)"
            )),
            None => match bubblewrap::available() {
                Ok(()) => Ok(Backend::Bubblewrap),
                Err(bwrap) => match landlock::available() {
                    Ok(()) => Ok(Backend::Landlock),
                    Err(ll) => Err(format!("{bwrap}; {ll}")),
                },
            },
        })
        .clone()
}

/// oi-tui's own files (the user's config, the data directory with the store and the trust
/// record, the project's rules file): kept read-only inside the sandbox even when they lie
/// under a writable directory (bubblewrap binds them read-only again; Landlock leaves the
/// directories that lead to them unwritable, see `landlock::grants`).
static PROTECTED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Names oi-tui's own files, which blocks must not change (see `PROTECTED`).
pub fn protect(paths: impl IntoIterator<Item = PathBuf>) {
    if let Ok(mut protected) = PROTECTED.lock() {
        for path in paths {
            if !protected.contains(&path) {
                protected.push(path);
            }
        }
    }
}

/// Directories of oi-tui's that are made (empty, 0700) before a sandbox is set up, so that
/// a block cannot create them: then they are protected like the rest.
static MADE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Names directories of oi-tui's own that blocks must neither change nor create (see
/// `MADE`).
pub fn protect_made(dirs: impl IntoIterator<Item = PathBuf>) {
    let dirs: Vec<PathBuf> = dirs.into_iter().collect();
    if let Ok(mut made) = MADE.lock() {
        for dir in &dirs {
            if !made.contains(dir) {
                made.push(dir.clone());
            }
        }
    }
    protect(dirs);
}

/// Makes the directories named by `protect_made` that are missing.
fn make_protected_dirs() {
    use std::os::unix::fs::DirBuilderExt;
    let dirs = MADE.lock().map(|m| m.clone()).unwrap_or_default();
    for dir in dirs {
        let _ = std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir);
    }
}

/// The deny rules on commands, which the sandbox enforces as programs start (see
/// `exec_guard`).
static DENY_RULES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Sets the deny rules that kernels started from now on enforce as programs start.
pub fn enforce_deny_rules(rules: Vec<String>) {
    if let Ok(mut deny) = DENY_RULES.lock() {
        *deny = rules;
    }
}

fn deny_rules() -> Vec<String> {
    DENY_RULES.lock().map(|d| d.clone()).unwrap_or_default()
}

/// The protected paths that exist and lie under one of the roots (never one that holds a
/// root: that would take the workspace's writability away), with `extra` (the user's oi-tui
/// directory in the temp dir, which holds every session's kernels).
fn protected_under(roots: &[PathBuf], extra: &[&Path]) -> Vec<PathBuf> {
    let mut protected = PROTECTED.lock().map(|p| p.clone()).unwrap_or_default();
    protected.extend(extra.iter().map(|p| p.to_path_buf()));
    let mut found: Vec<PathBuf> = protected
        .into_iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| roots.iter().any(|r| p.starts_with(r)))
        .filter(|p| !roots.iter().any(|r| r.starts_with(p)))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The workspace when blocks may write it (workspace-write), as a real path.
fn workspace(mode: SandboxMode, cwd: &Path) -> Option<PathBuf> {
    (mode == SandboxMode::WorkspaceWrite)
        .then(|| std::fs::canonicalize(cwd).ok())
        .flatten()
}

/// The directories a kernel may write under these settings, as the person knows them: the
/// working directory (workspace-write) and the blocks' private temp dir (seen as `/tmp`
/// and `$TMPDIR` inside bubblewrap), with the kernels' figure directories.
pub fn writable_roots(mode: SandboxMode, cwd: &Path) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = workspace(mode, cwd).into_iter().collect();
    if let Ok(private) = crate::exec::private_dirs() {
        roots.push(private.tmp.clone());
        roots.push(private.figures.clone());
    }
    roots
}

/// Nothing in force yet; when the sandbox is off, that is all (with the refusal of a
/// network turned off without one): `Err` holds it.
fn unresolved(settings: SandboxSettings) -> Result<Resolved, Resolved> {
    let mut resolved = Resolved {
        settings,
        backend: None,
        prefix: Vec::new(),
        refusal: None,
        warning: None,
    };
    if settings.mode == SandboxMode::Off {
        if settings.network == Network::Off {
            resolved.refusal = Some(
                "--network off needs a sandbox, but the sandbox is off: use --sandbox read-only or workspace-write".to_string(),
            );
        }
        return Err(resolved);
    }
    Ok(resolved)
}

/// The sandbox for kernels started in `cwd`.
pub fn resolve(settings: SandboxSettings, cwd: &Path) -> Resolved {
    let mut resolved = match unresolved(settings) {
        Ok(resolved) => resolved,
        Err(off) => return off,
    };
    match detect() {
        Ok(backend) => match prefix(backend, settings, cwd) {
            Ok(prefix) => {
                resolved.backend = Some(backend);
                resolved.prefix = prefix;
            }
            Err(why) => {
                resolved.refusal = Some(format!(
                    "the {} sandbox cannot be set up: {why}. Mend that, or run with --sandbox off to run blocks unprotected.",
                    settings.mode.name()
                ));
            }
        },
        Err(why) if settings.explicit => {
            resolved.refusal = Some(format!(
                "the {} sandbox was asked for, but no sandbox is available ({why}). Install bubblewrap, or run with --sandbox off to run blocks unprotected.",
                settings.mode.name()
            ));
        }
        Err(why) => {
            resolved.warning = Some(format!(
                "no sandbox is available ({why}): blocks run unsandboxed. Install bubblewrap, or pass --sandbox off to silence this."
            ));
        }
    }
    resolved
}

/// The command prefix that runs a program under a backend (the trampoline being this
/// executable).
pub fn prefix(
    backend: Backend,
    settings: SandboxSettings,
    cwd: &Path,
) -> Result<Vec<OsString>, String> {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("oi-tui"));
    prefix_with(backend, settings, cwd, &exe)
}

/// The command prefix, with `exe` (an oi-tui binary) as the trampoline. Fails only when
/// oi-tui's private directories cannot be made.
pub fn prefix_with(
    backend: Backend,
    settings: SandboxSettings,
    cwd: &Path,
    exe: &Path,
) -> Result<Vec<OsString>, String> {
    let private = crate::exec::private_dirs()?;
    make_protected_dirs();
    let workspace = workspace(settings.mode, cwd);
    let roots: Vec<PathBuf> = workspace.iter().cloned().collect();
    let protected = protected_under(&roots, &[&private.root]);
    let real_cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    Ok(match backend {
        Backend::Bubblewrap => bubblewrap::prefix(
            &bubblewrap::Plan {
                cwd: &real_cwd,
                writable: workspace.is_some(),
                tmp_dirs: &bubblewrap::temp_dirs(),
                private,
                protected: &protected,
                network: settings.network,
            },
            exe,
        ),
        Backend::Landlock => landlock::prefix(
            &landlock::grants(&roots, &protected),
            private,
            settings.network,
            exe,
        ),
    })
}

/// `oi-tui sandbox status`: what is in force, and why.
pub fn status_text(resolved: &Resolved, cwd: &Path) -> String {
    let mut text = format!("{}\n", resolved.summary());
    match detect() {
        Ok(backend) => text.push_str(&format!("backend available: {}\n", backend.name())),
        Err(why) => text.push_str(&format!("no backend available: {why}\n")),
    }
    if resolved.backend.is_some() {
        let roots = writable_roots(resolved.settings.mode, cwd);
        let shown: Vec<String> = roots.iter().map(|p| p.display().to_string()).collect();
        text.push_str(&format!(
            "writable: {}\n",
            if shown.is_empty() {
                "nothing".to_string()
            } else {
                shown.join(", ")
            }
        ));
    }
    if let Some(refusal) = &resolved.refusal {
        text.push_str(&format!("blocks will not run: {refusal}\n"));
    }
    if let Some(warning) = &resolved.warning {
        text.push_str(&format!("warning: {warning}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_networks_parse_and_name() {
        for mode in [
            SandboxMode::Off,
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
        ] {
            assert_eq!(SandboxMode::parse(mode.name()), Ok(mode));
        }
        assert!(SandboxMode::parse("on").is_err());
        assert_eq!(Network::parse("off"), Ok(Network::Off));
        assert!(Network::parse("no").is_err());
    }

    #[test]
    fn off_needs_no_backend_and_network_off_needs_a_sandbox() {
        let off = resolve(
            SandboxSettings {
                mode: SandboxMode::Off,
                network: Network::On,
                explicit: true,
            },
            Path::new("/"),
        );
        assert!(off.prefix.is_empty() && off.refusal.is_none());
        let bad = resolve(
            SandboxSettings {
                mode: SandboxMode::Off,
                network: Network::Off,
                explicit: true,
            },
            Path::new("/"),
        );
        assert!(bad.refusal.is_some());
    }

    #[test]
    fn read_only_does_not_make_the_workspace_writable() {
        let dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let ro = writable_roots(SandboxMode::ReadOnly, &dir);
        let ww = writable_roots(SandboxMode::WorkspaceWrite, &dir);
        assert!(ww.len() >= ro.len());
        let real = std::fs::canonicalize(&dir).unwrap_or(dir);
        assert!(ww.contains(&real));
        if !real.starts_with(std::env::temp_dir()) {
            assert!(!ro.contains(&real));
        }
    }
}
