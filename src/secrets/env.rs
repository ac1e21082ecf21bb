//! The environment kernels start with: this process's (all of it, the core of it, or none),
//! without secrets, plus what the config file sets.
//!
//! A secret is a variable whose name contains KEY, SECRET, TOKEN, PASSWORD, PASSWD or
//! CREDENTIAL (any case: `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`, `PGPASSWORD`,
//! `npm_config__authToken`), or whose value is the configured API key. `[env] keep` names
//! variables to pass on anyway (their values are still redacted from what oi-tui writes).

use std::collections::BTreeMap;

use serde::Deserialize;

/// Which of this process's variables kernels inherit (before secrets are taken out).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// Every variable.
    #[default]
    All,
    /// Those a program needs to behave as in the user's shell (see `is_core_name`).
    Core,
    /// None: only what `set` gives (and `TERM`, `OI_TUI`).
    None,
}

/// The `[env]` section of config.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvSettings {
    #[serde(default)]
    pub inherit: Inherit,
    /// Names passed on even though they look like secrets.
    #[serde(default)]
    pub keep: Vec<String>,
    /// Variables set for kernels, over the inherited ones.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

const SECRET_WORDS: &[&str] = &["KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether a variable's name marks it as a secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// The variables `inherit = "core"` keeps.
const CORE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "PWD",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "HOSTNAME",
    "VIRTUAL_ENV",
];

/// Whether `inherit = "core"` keeps a variable: the names above, `LC_*` and `XDG_*`.
pub fn is_core_name(name: &str) -> bool {
    CORE.contains(&name) || name.starts_with("LC_") || name.starts_with("XDG_")
}

/// The kernels' environment, in full (kernels start from it alone): `process` filtered by
/// `settings.inherit`, without secrets (unless kept) and without any variable whose value
/// is the configured `api_key`, then `settings.set` on top. Kept names pass whatever
/// `inherit` says. Sorted by name.
pub fn kernel_env(
    process: impl IntoIterator<Item = (String, String)>,
    settings: &EnvSettings,
    api_key: Option<&str>,
) -> Vec<(String, String)> {
    let key = api_key.filter(|k| !k.trim().is_empty());
    let mut env: BTreeMap<String, String> = process
        .into_iter()
        .filter(|(name, value)| {
            let inherited = match settings.inherit {
                Inherit::All => true,
                Inherit::Core => is_core_name(name),
                Inherit::None => false,
            };
            settings.keep.iter().any(|k| k == name)
                || (inherited && !is_secret_name(name) && key.is_none_or(|k| value != k))
        })
        .collect();
    for (name, value) in &settings.set {
        env.insert(name.clone(), value.clone());
    }
    env.into_iter().collect()
}

/// Checks `[env]` values a type cannot: names must be usable as variable names.
pub(crate) fn validate(settings: &EnvSettings) -> Result<(), String> {
    let bad = |name: &str| name.is_empty() || name.contains('=') || name.contains('\0');
    for name in settings.keep.iter().chain(settings.set.keys()) {
        if bad(name) {
            return Err(format!(
                "[env]: `{name}` is not a variable name (no `=`, no NUL, not empty)"
            ));
        }
    }
    if let Some((name, _)) = settings.set.iter().find(|(_, v)| v.contains('\0')) {
        return Err(format!("[env] set.{name}: a value cannot hold a NUL byte"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process() -> Vec<(String, String)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/a"),
            ("LC_ALL", "C"),
            ("OPENAI_API_KEY", "sk-x"),
            ("GITHUB_TOKEN", "ghp"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("PGPASSWORD", "pg"),
            ("npm_config__authToken", "npm"),
            ("MY_SERVICE_TOKEN", "svc"),
            ("COPY_OF_KEY", "sk-configured"),
            ("EDITOR_FLAVOUR", "vi"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn names(env: &[(String, String)]) -> Vec<&str> {
        env.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn all_minus_secrets() {
        let env = kernel_env(process(), &EnvSettings::default(), Some("sk-configured"));
        assert_eq!(names(&env), ["EDITOR_FLAVOUR", "HOME", "LC_ALL", "PATH"]);
    }

    #[test]
    fn keep_set_core_none() {
        let mut s = EnvSettings {
            keep: vec!["MY_SERVICE_TOKEN".into()],
            ..EnvSettings::default()
        };
        s.set.insert("EXTRA".into(), "1".into());
        let env = kernel_env(process(), &s, None);
        assert!(names(&env).contains(&"MY_SERVICE_TOKEN"));
        assert!(names(&env).contains(&"EXTRA"));
        assert!(!names(&env).contains(&"GITHUB_TOKEN"));
        s.inherit = Inherit::Core;
        let env = kernel_env(process(), &s, None);
        assert_eq!(
            names(&env),
            ["EXTRA", "HOME", "LC_ALL", "MY_SERVICE_TOKEN", "PATH"]
        );
        s.inherit = Inherit::None;
        assert_eq!(
            names(&kernel_env(process(), &s, None)),
            ["EXTRA", "MY_SERVICE_TOKEN"]
        );
    }

    #[test]
    fn bad_names_are_errors() {
        let s = EnvSettings {
            keep: vec!["A=B".into()],
            ..EnvSettings::default()
        };
        assert!(validate(&s).unwrap_err().contains("not a variable name"));
    }
}
