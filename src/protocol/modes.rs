//! The modes a session runs in, chosen by a face (flags, config) and applied by the engine:
//! when blocks ask, what kernels may write, and whether they may use the network.

use serde::{Deserialize, Serialize};

/// When blocks run without a question. Chosen by the face (from `--approval`, `-y`), applied
/// by the engine with the policy's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Every block asks, with its verdict shown.
    #[default]
    Ask,
    /// Blocks the rules allow run; the rest ask.
    Rules,
    /// Everything runs except what a rule denies and the classes "deletes outside the
    /// workspace", "privileged" and "changes the system" (and blocks possibly denied), which
    /// still ask.
    Auto,
}

impl ApprovalMode {
    /// The name on the command line and in the status bar.
    pub fn name(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Rules => "rules",
            ApprovalMode::Auto => "auto",
        }
    }
}

/// What kernels may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// No sandbox.
    Off,
    /// Nothing may be written but the temp dirs (which kernels need to run at all).
    ReadOnly,
    /// The working directory and the temp dirs are writable; everything else is read-only.
    #[default]
    WorkspaceWrite,
}

impl SandboxMode {
    pub fn parse(text: &str) -> Result<SandboxMode, String> {
        match text {
            "off" => Ok(SandboxMode::Off),
            "read-only" => Ok(SandboxMode::ReadOnly),
            "workspace-write" => Ok(SandboxMode::WorkspaceWrite),
            other => Err(format!(
                "sandbox mode `{other}`: use off, read-only or workspace-write"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Off => "off",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
        }
    }
}

/// Whether kernels may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    #[default]
    On,
    Off,
}

impl Network {
    pub fn parse(text: &str) -> Result<Network, String> {
        match text {
            "on" => Ok(Network::On),
            "off" => Ok(Network::Off),
            other => Err(format!("network `{other}`: use on or off")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Network::On => "on",
            Network::Off => "off",
        }
    }
}

/// The mechanism that enforces the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Bubblewrap,
    Landlock,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Bubblewrap => "bubblewrap",
            Backend::Landlock => "landlock",
        }
    }
}

/// The sandbox in force for a session's kernels, as the engine reports it to every face.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    pub mode: SandboxMode,
    pub network: Network,
    /// The backend in force; None when off or unavailable.
    pub backend: Option<Backend>,
    /// One line: `sandbox workspace-write (bubblewrap), network on`.
    pub summary: String,
    /// A short form for a status bar: `bubblewrap, net off`.
    pub label: String,
    /// Set when blocks will not run: a sandbox was asked for and none is available.
    pub refusal: Option<String>,
    /// Set when the default sandbox is unavailable and kernels run without one.
    pub warning: Option<String>,
}
