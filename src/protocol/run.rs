//! What running a block returns, as the engine reports it: how it ended, how long it took,
//! its text for the model, and plain sentences about anything unusual.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Image, Language};

/// How a block ended, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// It ran to its end with status 0.
    Success,
    /// It ended with a non-zero status or a signal.
    Failed,
    /// The user interrupted it.
    Interrupted,
    /// Its time limit ran out.
    TimedOut,
    /// It could not run: the interpreter is missing or would not start.
    Unavailable,
    /// It was not run but written to a file (HTML).
    Written,
}

impl RunStatus {
    pub fn label(self) -> &'static str {
        match self {
            RunStatus::Success => "ran",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::TimedOut => "timed out",
            RunStatus::Unavailable => "not run",
            RunStatus::Written => "written",
        }
    }
}

/// The result of one block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub block_id: u64,
    pub language: Language,
    pub status: RunStatus,
    /// The block's exit status, when it has one.
    pub exit_code: Option<i32>,
    /// The signal that ended the kernel, when one did (`SIGKILL`, ...).
    pub signal: Option<String>,
    pub duration: Duration,
    /// The text form of the output: escapes stripped, overwrites resolved, maybe cut.
    pub output: String,
    /// How much was cut from the middle of `output`, if anything was.
    pub cut: Option<Cut>,
    /// Raw bytes the block printed.
    pub output_bytes: u64,
    /// The kernel ended during this block, so its state (variables, `cd`, imports) is gone;
    /// the next block of this language starts a fresh one.
    pub state_lost: bool,
    /// Plain sentences about what happened beyond the exit status.
    pub notes: Vec<String>,
    /// The file written, for languages that are written rather than run.
    pub file: Option<PathBuf>,
    /// The images the block made (figures it showed, image files it wrote), as kept with
    /// the session.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// How much of the output was cut from the middle of the text form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cut {
    /// Lines left out.
    pub lines: u64,
    /// Lines the output had in all.
    pub total_lines: u64,
    /// Bytes of raw output in all.
    pub total_bytes: u64,
}

impl RunResult {
    /// One line for people: `exit 0 · 0.12 s`, `interrupted · exit 130 · 2.0 s`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        match self.status {
            RunStatus::Success | RunStatus::Failed => {}
            other => parts.push(other.label().to_string()),
        }
        if let Some(code) = self.exit_code {
            parts.push(format!("exit {code}"));
        }
        if let Some(signal) = &self.signal {
            parts.push(format!("killed by {signal}"));
        }
        // An interrupted block whose time was never measured (oi-tui was killed while it
        // ran, see `store::replay`) shows no duration rather than a false one.
        let unmeasured = self.status == RunStatus::Interrupted && self.duration.is_zero();
        if self.status != RunStatus::Unavailable && self.status != RunStatus::Written && !unmeasured
        {
            parts.push(format_duration(self.duration));
        }
        if self.state_lost {
            parts.push("kernel restarted".to_string());
        }
        parts.join(" · ")
    }

    /// The text that goes back to the model: the output, then a status line and the notes.
    pub fn for_model(&self) -> String {
        let mut text = String::new();
        if self.output.trim().is_empty() {
            if self.status != RunStatus::Unavailable && self.status != RunStatus::Written {
                text.push_str("(no output)\n");
            }
        } else {
            text.push_str(&self.output);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        text.push_str(&format!("[{}]\n", self.summary()));
        for (n, image) in self.images.iter().enumerate() {
            text.push_str(&image.line(n + 1));
            text.push('\n');
        }
        for note in &self.notes {
            text.push_str(note);
            text.push('\n');
        }
        text
    }
}

/// `0.12 s`, `3.4 s`, `2 min 5 s`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 120.0 {
        format!("{secs:.1} s")
    } else {
        format!("{} min {} s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: RunStatus, exit_code: Option<i32>) -> RunResult {
        RunResult {
            block_id: 1,
            language: Language::Python,
            status,
            exit_code,
            signal: None,
            duration: Duration::from_millis(1234),
            output: "hello".into(),
            cut: None,
            output_bytes: 5,
            state_lost: false,
            notes: vec![],
            file: None,
            images: vec![],
        }
    }

    #[test]
    fn summary_names_status_code_and_time() {
        assert_eq!(
            result(RunStatus::Success, Some(0)).summary(),
            "exit 0 · 1.23 s"
        );
        let mut r = result(RunStatus::Interrupted, Some(130));
        r.state_lost = true;
        assert_eq!(
            r.summary(),
            "interrupted · exit 130 · 1.23 s · kernel restarted"
        );
    }

    #[test]
    fn for_model_carries_output_status_and_notes() {
        let mut r = result(RunStatus::Failed, Some(1));
        r.notes.push("Something happened.".into());
        assert_eq!(
            r.for_model(),
            "hello\n[exit 1 · 1.23 s]\nSomething happened.\n"
        );
        r.output.clear();
        assert!(r.for_model().starts_with("(no output)\n"));
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(format_duration(Duration::from_millis(42)), "0.04 s");
        assert_eq!(format_duration(Duration::from_secs(75)), "75.0 s");
        assert_eq!(format_duration(Duration::from_secs(125)), "2 min 5 s");
    }
}
