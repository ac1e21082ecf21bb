//! Kernels: running a model's code on the user's machine and knowing exactly when it ended,
//! how it ended and what it printed.
//!
//! Each language gets one persistent interpreter in its own PTY (`kernel`), driven by a small
//! per-language driver from `assets/drivers/`. Code is handed over out of band, through a
//! file and a control FIFO, never typed into a REPL. The end of a block is an in-band marker
//! with a per-kernel nonce (`marker`), stripped before anyone sees the output. The text form
//! for the model is built as the bytes stream (`text`). Every kernel's session is registered
//! so that nothing outlives oi-tui (`reaper`).
//!
//! This module knows nothing of models, widgets or sessions: it takes blocks and gives back
//! bytes and results.

mod images;
mod kernel;
mod kernels;
mod language;
mod marker;
mod pty;
pub mod reaper;
pub mod remote;
mod result;
mod tempdirs;
mod text;
mod waiting;
mod workdir_scan;
#[cfg(target_os = "linux")]
mod workdir_watch;

pub use kernels::{Block, Executor, KernelConfig, Kernels};
pub use language::Language;
pub use pty::{ExitInfo, signal_name};
pub use result::{RunResult, RunStatus, format_duration};
pub use tempdirs::{Private, private as private_dirs};
pub use text::{Cut, Text, TextCapture, human_bytes};
