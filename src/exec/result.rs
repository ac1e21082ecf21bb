//! Results made by the kernels (the types are the protocol's: `protocol::run`).

use std::time::Duration;

pub use crate::protocol::{RunResult, RunStatus, format_duration};

use super::Language;
use super::pty::signal_name;

impl RunResult {
    /// A result for a block that could not run at all.
    pub(crate) fn unavailable(block_id: u64, language: Language, message: String) -> Self {
        RunResult {
            notes: vec![message],
            ..RunResult::empty(block_id, language, RunStatus::Unavailable)
        }
    }

    /// A result with no output, no status and no notes.
    pub(crate) fn empty(block_id: u64, language: Language, status: RunStatus) -> Self {
        RunResult {
            block_id,
            language,
            status,
            exit_code: None,
            signal: None,
            duration: Duration::ZERO,
            output: String::new(),
            cut: None,
            output_bytes: 0,
            state_lost: false,
            notes: Vec::new(),
            file: None,
            images: Vec::new(),
        }
    }
}

pub(crate) fn describe_exit(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => signal_name(signal),
        (None, None) => "an unknown status".to_string(),
    }
}
