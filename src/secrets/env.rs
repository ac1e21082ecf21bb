//! The environment kernels start with: this process's (all of it, the core of it, or none),
//! without secrets, plus what the config file sets.
//!
//! A secret is a variable whose name holds KEY, SECRET, TOKEN, PASS (PASSWORD, PASSWD),
//! CREDENTIAL, AUTH or COOKIE (any case: `GITHUB_TOKEN`, `AWS_SECRET_ACCESS_KEY`,
//! `PGPASSWORD`, `DB_PASS`, `SSH_AUTH_SOCK`, `npm_config__authToken`; see `shape` for the
//! names that hold a word without being secrets, such as `XAUTHORITY`), whose value holds a
//! URL with a password (`postgres://u:pw@host/db`), or whose value is the configured API
//! key. `[env] pass` names variables to pass on anyway (their values are still redacted from
//! what oi-tui writes); `keep` is its older name, still read.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::shape::is_secret;
#[cfg(test)]
use super::shape::is_secret_name;

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
    /// Names passed on even though they look like secrets (`[env] pass`).
    #[serde(default)]
    pub pass: Vec<String>,
    /// The older name of `pass`, still read (the two lists add up).
    #[serde(default)]
    pub keep: Vec<String>,
    /// Variables set for kernels, over the inherited ones.
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

impl EnvSettings {
    /// Whether `[env] pass` (or `keep`) lets `name` through.
    pub fn passes(&self, name: &str) -> bool {
        self.pass.iter().chain(&self.keep).any(|p| p == name)
    }
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
/// `settings.inherit`, without secrets (unless passed) and without any variable whose value
/// is the configured `api_key`, then `settings.set` on top. Passed names pass whatever
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
            settings.passes(name)
                || (inherited && !is_secret(name, value) && key.is_none_or(|k| value != k))
        })
        .collect();
    for (name, value) in &settings.set {
        env.insert(name.clone(), value.clone());
    }
    env.into_iter().collect()
}

/// Checks `[env]` values a type cannot: names must be usable as variable names.
pub(crate) fn validate(settings: &EnvSettings) -> Result<(), String> {
    let lists = [("pass", &settings.pass), ("keep", &settings.keep)];
    let named = lists
        .iter()
        .flat_map(|(key, names)| names.iter().map(move |n| (*key, n)))
        .chain(settings.set.keys().map(|n| ("set", n)));
    for (key, name) in named {
        if name.is_empty() || name.contains('=') || name.contains('\0') {
            return Err(format!(
                "[env] {key}: `{}` is not a variable name (no `=`, no NUL, not empty)",
                name.escape_debug()
            ));
        }
        if name.chars().any(char::is_whitespace) {
            return Err(format!(
                "[env] {key}: `{}` holds a space or another blank; variable names do not",
                name.escape_debug()
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

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn pass_auth_and_cookie_names_are_secrets() {
        for name in [
            "DB_PASS",
            "SMTP_PASS",
            "MYSQL_PASSWD",
            "PGPASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
            "HTTP_AUTHORIZATION",
            "PROXY_AUTHORISATION",
            "OAUTH_CLIENT",
            "BASIC_AUTH",
            "RABBITMQ_ERLANG_COOKIE",
            "session_cookie",
            // An askpass program answers for the person, as the SSH agent does.
            "GIT_ASKPASS",
            "SSH_ASKPASS",
            // The rest of a name still counts.
            "PASSWORD_STORE_KEY",
            // Short words, as whole parts of a name.
            "MYSQL_PWD",
            "DB_PWD",
            "GH_PAT",
            "GITHUB_PAT",
            "SMTP_PW",
            "SENTRY_DSN",
            // Anywhere in a name.
            "SLACK_WEBHOOK",
            "API_BEARER",
            "DISCORD_WEBHOOK_URL",
            "CI_JOB_JWT",
            "SALT",
            "AUTH_SALT_V2",
            "SIGNING_PRIVATE",
            "GPG_PRIVATE_KEY",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn names_that_merely_contain_the_words_are_not_secrets() {
        for name in [
            // X11 programs need it; it names a file, which blocks can read anyway.
            "XAUTHORITY",
            "ICEAUTHORITY",
            // Who wrote a commit.
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            // pass's settings (the store's files are encrypted).
            "PASSWORD_STORE_DIR",
            "PASSWORD_STORE_CLIP_TIME",
            "COOKIECUTTER_CONFIG",
            "PATH",
            "HOME",
            "CLASSPATH",
            // The working directory, and the one before.
            "PWD",
            "OLDPWD",
            "TERM",
            "LANG",
            "SHELL",
            "USER",
            "DISPLAY",
            // `PAT`, `PW` and `DSN` only as whole parts.
            "PATCH_LEVEL",
            "GIT_PAGER",
            "PWRAP",
            "SESSION_MANAGER",
        ] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn new_shapes_are_left_out_of_kernels() {
        let env = pairs(&[
            ("PATH", "/usr/bin"),
            ("DB_PASS", "hunter2hunter2"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
            ("XAUTHORITY", "/run/user/1/Xauthority"),
            ("GIT_AUTHOR_NAME", "Ada Lovelace"),
            ("DATABASE_URL", "postgres://u:s3cret-pw@db.example/app"),
            ("REDIS", "redis://:pw@h1:6379/0"),
            ("PUBLIC_URL", "https://user@example.org:8080/@scope/x"),
            ("MIRROR", "https://example.org/a:b@c"),
            ("PWD", "/home/a/project"),
            ("OLDPWD", "/home/a"),
            ("TERM", "xterm-256color"),
            (
                "GIT_CONFIG_VALUE_0",
                "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
            ),
            (
                "GIT_CONFIG_PARAMETERS",
                "'http.https://example.org/.extraheader'='AUTHORIZATION: basic dXNlcjpwYXNzd29yZA=='",
            ),
            ("GIT_CONFIG_COUNT", "1"),
            ("DEPLOY", "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"),
            ("BOT", "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"),
            (
                "CONN",
                "Server=db;Database=app;User Id=sa;Password=Hunter2!;",
            ),
        ]);
        let kept = kernel_env(env, &EnvSettings::default(), None);
        assert_eq!(
            names(&kept),
            [
                "GIT_AUTHOR_NAME",
                "GIT_CONFIG_COUNT",
                "MIRROR",
                "OLDPWD",
                "PATH",
                "PUBLIC_URL",
                "PWD",
                "TERM",
                "XAUTHORITY"
            ]
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
