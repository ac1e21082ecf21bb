//! The ranges of numeric settings (reply size, context window, time limits) and the
//! messages that say them, for the config file and the command line alike.

use std::time::Duration;

/// The smallest and largest reply size that may be configured. The largest is what the
/// session store keeps in memory while a write waits (64 MB) with room to spare, and keeps
/// the few copies of a reply oi-tui holds within a few hundred megabytes.
const REPLY_BYTES: std::ops::RangeInclusive<u64> = 1024..=16 * 1024 * 1024;

/// `max_reply_bytes`, within its range, or the default.
pub(super) fn reply_bytes(value: Option<u64>) -> Result<usize, String> {
    match value {
        None => Ok(crate::llm::DEFAULT_MAX_REPLY_BYTES),
        Some(n) => reply_bytes_setting(n)
            .map(|n| n as usize)
            .map_err(|why| format!("max_reply_bytes = {n}: {why}")),
    }
}

/// The smallest context window taken: less does not hold the system prompt and a message,
/// and every message would be refused.
const MIN_CONTEXT_WINDOW: u32 = 1024;

/// A context window within its range, or why not.
pub fn context_window_setting(n: u32) -> Result<u32, String> {
    if n >= MIN_CONTEXT_WINDOW {
        Ok(n)
    } else {
        Err(format!(
            "give at least {MIN_CONTEXT_WINDOW} tokens (the system prompt and a message must fit)"
        ))
    }
}

/// A reply size within its range, or why not (for the config file and the command line).
pub fn reply_bytes_setting(n: u64) -> Result<u64, String> {
    if REPLY_BYTES.contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "give a number of bytes from {} to {} (16 MB; the default is {})",
            REPLY_BYTES.start(),
            REPLY_BYTES.end(),
            crate::llm::DEFAULT_MAX_REPLY_BYTES
        ))
    }
}

/// `reply_timeout` in seconds, within its range (a second to a week), or the default.
pub(super) fn reply_timeout(value: Option<f64>) -> Result<Duration, String> {
    match value {
        None => Ok(crate::llm::DEFAULT_REPLY_TIMEOUT),
        Some(secs) => reply_timeout_setting(secs)
            .map_err(|why| format!("reply_timeout = {}: {why}", short_number(secs))),
    }
}

/// A reply time limit within its range, or why not.
pub fn reply_timeout_setting(secs: f64) -> Result<Duration, String> {
    const WEEK: f64 = 7.0 * 24.0 * 3600.0;
    if (1.0..=WEEK).contains(&secs) {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(format!(
            "give a number of seconds from 1 to {WEEK} (a week; the default is {})",
            crate::llm::DEFAULT_REPLY_TIMEOUT.as_secs()
        ))
    }
}

/// A number as a person wrote it, short: `1e308`, not its 309 digits.
pub(super) fn short_number(value: f64) -> String {
    if value.is_finite() && value.abs() < 1e9 {
        format!("{value}")
    } else {
        format!("{value:e}")
    }
}

/// The longest time a setting may give: a year.
pub const MAX_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// A number of seconds from a setting or a flag, as a duration; else the allowed range.
pub fn seconds_setting(value: f64) -> Result<Duration, String> {
    if (0.001..=MAX_SECONDS).contains(&value) {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(format!(
            "give a number of seconds from 0.001 to {MAX_SECONDS} (a year)"
        ))
    }
}
