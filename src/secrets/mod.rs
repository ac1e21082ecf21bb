//! Secrets kept out: which environment variables count as secrets, the environment kernels
//! start with (without them), and the one `Redactor` that replaces their values, and the
//! configured API key, with `[REDACTED]` in everything oi-tui writes or sends (the transcript,
//! `--json` events, the store, exports, error messages and the requests to the model).
//!
//! This module owns no I/O beyond tightening file modes (`modes`); callers hand it text.

pub(crate) mod env;
mod modes;
mod shape;
mod stream;

pub use env::{EnvSettings, Inherit, is_core_name, kernel_env};
pub use modes::{private_dir, private_file, tighten};
pub use shape::{is_secret, is_secret_name, url_passwords};
pub use stream::StreamRedactor;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// This process's environment, as text (variables whose name or value is not UTF-8 are
/// left out: they can be neither matched nor redacted as text).
pub fn process_env() -> impl Iterator<Item = (String, String)> {
    std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
}

/// What a secret's value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Values shorter than this are not redacted (a variable holding `1` would otherwise blank
/// out every `1` of every output).
pub const MIN_SECRET_LEN: usize = 8;

/// Replaces known secret values in any text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so that a secret containing another is replaced whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// The values of the variables in `env` that are secrets (see `is_secret`), the
    /// passwords of the URLs in them (see `shape::secret_values`), and the `configured` keys.
    pub fn new(env: impl IntoIterator<Item = (String, String)>, configured: &[&str]) -> Redactor {
        let values = env
            .into_iter()
            .flat_map(|(k, v)| shape::secret_values(&k, &v))
            .chain(configured.iter().map(|s| s.to_string()));
        Redactor::from_values(values)
    }

    /// Exactly these values (those of at least `MIN_SECRET_LEN` characters).
    pub fn from_values(values: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = values
            .into_iter()
            .filter(|v| v.trim().chars().count() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The values redacted, longest first.
    pub fn secrets(&self) -> &[String] {
        &self.secrets
    }

    /// `text` with every known secret replaced by `[REDACTED]`.
    pub fn clean(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// `bytes` with every known secret replaced (for output that is not text).
    pub fn clean_bytes(&self, bytes: &[u8]) -> Vec<u8> {
        let mut stream = StreamRedactor::new(self.clone());
        let mut out = stream.push(bytes);
        out.extend(stream.finish());
        out
    }

    /// A value with every string inside it cleaned: walks its serde form, so that every
    /// text field of an event or a message is covered, including ones added later. A value
    /// that does not survive the round trip is returned with its JSON text cleaned instead,
    /// and if even that fails, as it was (serde types of this crate always round-trip).
    pub fn clean_value<T: Serialize + DeserializeOwned>(&self, value: T) -> T {
        if self.is_empty() {
            return value;
        }
        let Ok(mut tree) = serde_json::to_value(&value) else {
            return value;
        };
        if !self.clean_tree(&mut tree) {
            return value;
        }
        serde_json::from_value(tree).unwrap_or(value)
    }

    /// Cleans every string of a JSON tree in place; says whether anything changed.
    pub fn clean_tree(&self, tree: &mut serde_json::Value) -> bool {
        match tree {
            serde_json::Value::String(s) => {
                let cleaned = self.clean(s);
                let changed = cleaned != *s;
                *s = cleaned;
                changed
            }
            // Every child is cleaned (no short circuit), then the answers are combined.
            serde_json::Value::Array(items) => {
                items
                    .iter_mut()
                    .map(|v| self.clean_tree(v))
                    .filter(|changed| *changed)
                    .count()
                    > 0
            }
            serde_json::Value::Object(map) => {
                map.values_mut()
                    .map(|v| self.clean_tree(v))
                    .filter(|changed| *changed)
                    .count()
                    > 0
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_and_short_values() {
        let r = Redactor::new(
            vec![
                ("GITHUB_TOKEN".into(), "ghp_0123456789".into()),
                ("AWS_SECRET_ACCESS_KEY".into(), "aws/secret/value".into()),
                ("PGPASSWORD".into(), "hunter2hunter2".into()),
                ("npm_config__authToken".into(), "npm-token-xyz".into()),
                ("DEBUG_TOKEN".into(), "1".into()),
                ("HOME".into(), "/home/someone".into()),
            ],
            &["sk-configured-1"],
        );
        let text = "ghp_0123456789 aws/secret/value hunter2hunter2 npm-token-xyz sk-configured-1 1 /home/someone";
        assert_eq!(
            r.clean(text),
            "[REDACTED] [REDACTED] [REDACTED] [REDACTED] [REDACTED] 1 /home/someone"
        );
    }

    #[test]
    fn passwords_in_urls_are_redacted_whatever_the_name() {
        let r = Redactor::new(
            vec![
                (
                    "DATABASE_URL".into(),
                    "postgres://app:s3cret-pw%40x@db.internal:5432/app".into(),
                ),
                ("DB_PASS".into(), "hunter2hunter2".into()),
                ("HOMEPAGE".into(), "https://example.org/x:y@z".into()),
            ],
            &[],
        );
        // The whole value, the password as written and as a program reads it.
        let text = "url=postgres://app:s3cret-pw%40x@db.internal:5432/app \
                    other=postgres://app:s3cret-pw%40x@db.internal/other \
                    bare=s3cret-pw@x pass=hunter2hunter2 page=https://example.org/x:y@z";
        assert_eq!(
            r.clean(text),
            "url=[REDACTED] \
                    other=postgres://app:[REDACTED]@db.internal/other \
                    bare=[REDACTED] pass=[REDACTED] page=https://example.org/x:y@z"
        );
    }

    #[test]
    fn longest_first() {
        let r = Redactor::from_values(vec!["abcdefgh".into(), "abcdefgh-longer".into()]);
        assert_eq!(r.clean("x abcdefgh-longer y"), "x [REDACTED] y");
    }

    #[test]
    fn values_are_walked() {
        let r = Redactor::from_values(vec!["s3cr3t-value".into()]);
        let event = crate::protocol::Event::Error {
            kind: crate::protocol::ErrorKind::Provider,
            message: "401: Bearer s3cr3t-value".into(),
        };
        let cleaned = r.clean_value(event);
        assert_eq!(
            cleaned,
            crate::protocol::Event::Error {
                kind: crate::protocol::ErrorKind::Provider,
                message: "401: Bearer [REDACTED]".into(),
            }
        );
    }
}
