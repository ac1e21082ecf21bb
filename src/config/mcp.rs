//! `[mcp_servers.NAME]`: the user's MCP servers, whose tools oi-tui offers to the model. The
//! keys are codex's, so that a codex configuration can be copied: `command`, `args`, `env`,
//! `env_vars`, `cwd` for a server oi-tui starts (stdio); `url`, `bearer_token_env_var`,
//! `http_headers`, `env_http_headers` for one it reaches over Streamable HTTP; `enabled`,
//! `startup_timeout_sec` (or `startup_timeout_ms`), `tool_timeout_sec`, `enabled_tools`,
//! `disabled_tools` for both. An unknown key is a warning; a bad value is an error that
//! names the server and the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Value;

/// How long a server may take to start, unless configured (as codex).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a tool call may take, unless configured (as codex).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

const KEYS: &[&str] = &[
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "http_headers",
    "env_http_headers",
    "enabled",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
];

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// The `NAME` of `[mcp_servers.NAME]`: letters, digits, `_` and `-`.
    pub name: String,
    pub transport: McpTransport,
    /// `enabled = false` keeps the entry but does not start the server.
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Only these tools are offered (None: all of them).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
}

/// How oi-tui reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A program oi-tui starts, speaking MCP on its standard input and output.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Variables set for it.
        env: BTreeMap<String, String>,
        /// Variables passed on from oi-tui's own environment (besides the usual few).
        env_vars: Vec<String>,
        cwd: Option<PathBuf>,
    },
    /// A server at a URL (Streamable HTTP).
    Http {
        url: String,
        /// The variable that holds the bearer token (without `Bearer `).
        bearer_token_env_var: Option<String>,
        /// Headers sent as they are.
        http_headers: BTreeMap<String, String>,
        /// Headers whose values come from variables: header -> variable.
        env_http_headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    /// Whether a tool is offered (`enabled_tools`, `disabled_tools`).
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|e| e.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// The servers of an `mcp_servers` table, and its unknown keys as `(server, key)`.
pub type Parsed = (Vec<McpServerConfig>, Vec<(String, String)>);

/// Reads the `mcp_servers` table: the servers by name, and the unknown keys as
/// `(server, key)` for warnings. A relative `cwd` is taken from `base`.
pub fn parse_servers(table: &toml::Table, base: &Path) -> Result<Parsed, String> {
    let mut servers = Vec::new();
    let mut unknown = Vec::new();
    for (name, value) in table {
        let here = format!("[mcp_servers.{name}]");
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "{here}: a server's name is letters, digits, `_` and `-` only (it becomes part of its tools' names, such as {}__tool)",
                name.chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    })
                    .collect::<String>()
            ));
        }
        if name.contains("__") || name.ends_with('_') {
            return Err(format!(
                "{here}: a server's name may not hold `__` or end in `_`: its tools are offered as NAME__tool, and `__` is what tells the server from the tool (try {})",
                name.replace("__", "_").trim_end_matches('_')
            ));
        }
        let Some(entry) = value.as_table() else {
            return Err(format!(
                "{here}: expected a table of settings (command = \"...\" or url = \"...\")"
            ));
        };
        for key in entry.keys() {
            if !KEYS.contains(&key.as_str()) {
                unknown.push((name.clone(), key.clone()));
            }
        }
        servers.push(server(name, entry, base).map_err(|e| format!("{here}: {e}"))?);
    }
    Ok((servers, unknown))
}

/// The keys a server entry may hold, for the warning about one it may not.
pub fn known_keys() -> &'static [&'static str] {
    KEYS
}

fn server(name: &str, t: &toml::Table, base: &Path) -> Result<McpServerConfig, String> {
    let transport = match (t.get("command"), t.get("url")) {
        (Some(_), Some(_)) => {
            return Err(
                "has both `command` (a server oi-tui starts) and `url` (a server it connects to): keep one".to_string(),
            );
        }
        (None, None) => {
            return Err(
                "has neither `command` (a server oi-tui starts, e.g. command = \"npx\") nor `url` (a server it connects to): give one".to_string(),
            );
        }
        (Some(command), None) => {
            for key in ["bearer_token_env_var", "http_headers", "env_http_headers"] {
                if t.contains_key(key) {
                    return Err(format!(
                        "`{key}` is for a server reached by `url`; this one is started with `command`"
                    ));
                }
            }
            let command = string(command, "command")?;
            if command.trim().is_empty() {
                return Err("`command` is empty: name the program that runs the server".into());
            }
            let cwd = match t.get("cwd") {
                None => None,
                Some(v) => {
                    let given = PathBuf::from(string(v, "cwd")?);
                    let dir = if given.is_absolute() {
                        given.clone()
                    } else {
                        base.join(&given)
                    };
                    if !dir.is_dir() {
                        return Err(format!(
                            "`cwd` = \"{}\": no such directory ({})",
                            given.display(),
                            dir.display()
                        ));
                    }
                    Some(dir)
                }
            };
            McpTransport::Stdio {
                command,
                args: strings(t.get("args"), "args")?,
                env: string_map(t.get("env"), "env")?,
                env_vars: strings(t.get("env_vars"), "env_vars")?,
                cwd,
            }
        }
        (None, Some(url)) => {
            for key in ["args", "env", "env_vars", "cwd"] {
                if t.contains_key(key) {
                    return Err(format!(
                        "`{key}` is for a server oi-tui starts with `command`; this one is reached by `url`"
                    ));
                }
            }
            let url = string(url, "url")?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!(
                    "`url` = \"{url}\": give an http:// or https:// address"
                ));
            }
            McpTransport::Http {
                url,
                bearer_token_env_var: t
                    .get("bearer_token_env_var")
                    .map(|v| string(v, "bearer_token_env_var"))
                    .transpose()?,
                http_headers: string_map(t.get("http_headers"), "http_headers")?,
                env_http_headers: string_map(t.get("env_http_headers"), "env_http_headers")?,
            }
        }
    };
    let startup_timeout = match (t.get("startup_timeout_sec"), t.get("startup_timeout_ms")) {
        (Some(_), Some(_)) => {
            return Err("has both `startup_timeout_sec` and `startup_timeout_ms`: keep one".into());
        }
        (Some(v), None) => seconds(v, "startup_timeout_sec", 1.0)?,
        (None, Some(v)) => seconds(v, "startup_timeout_ms", 1000.0)?,
        (None, None) => DEFAULT_STARTUP_TIMEOUT,
    };
    let tool_timeout = match t.get("tool_timeout_sec") {
        Some(v) => seconds(v, "tool_timeout_sec", 1.0)?,
        None => DEFAULT_TOOL_TIMEOUT,
    };
    let enabled = match t.get("enabled") {
        None => true,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(format!("`enabled` = {other}: give true or false"));
        }
    };
    Ok(McpServerConfig {
        name: name.to_string(),
        transport,
        enabled,
        startup_timeout,
        tool_timeout,
        enabled_tools: t
            .get("enabled_tools")
            .map(|v| strings(Some(v), "enabled_tools"))
            .transpose()?,
        disabled_tools: strings(t.get("disabled_tools"), "disabled_tools")?,
    })
}

fn string(v: &Value, key: &str) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("`{key}` = {v}: expected a string in quotes"))
}

fn strings(v: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let list = v
        .as_array()
        .ok_or_else(|| format!("`{key}` = {v}: expected a list of strings, e.g. [\"a\", \"b\"]"))?;
    list.iter()
        .map(|item| {
            item.as_str().map(str::to_string).ok_or_else(|| {
                format!("`{key}`: {item} is not a string; expected a list of strings")
            })
        })
        .collect()
}

fn string_map(v: Option<&Value>, key: &str) -> Result<BTreeMap<String, String>, String> {
    let Some(v) = v else {
        return Ok(BTreeMap::new());
    };
    let table = v.as_table().ok_or_else(|| {
        format!("`{key}` = {v}: expected a table, e.g. {key} = {{ NAME = \"value\" }}")
    })?;
    table
        .iter()
        .map(|(k, item)| {
            item.as_str()
                .map(|s| (k.clone(), s.to_string()))
                .ok_or_else(|| format!("`{key}.{k}` = {item}: expected a string in quotes"))
        })
        .collect()
}

/// A timeout in the key's unit (`per_second` units make a second), within a second's
/// thousandth and a year.
fn seconds(v: &Value, key: &str, per_second: f64) -> Result<Duration, String> {
    let n = match v {
        Value::Integer(i) => *i as f64,
        Value::Float(f) => *f,
        other => return Err(format!("`{key}` = {other}: expected a number")),
    };
    super::seconds_setting(n / per_second).map_err(|range| format!("`{key}` = {n}: {range}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> Result<Parsed, String> {
        let table: toml::Table = toml::from_str(text).unwrap();
        let servers = table["mcp_servers"].as_table().unwrap().clone();
        parse_servers(&servers, Path::new("/"))
    }

    #[test]
    fn codex_entries_are_read() {
        let (servers, unknown) = parse(
            r#"
[mcp_servers.fs]
command = "npx"
args = ["-y", "server-fs", "/tmp"]
env = { A = "1" }
env_vars = ["HOME"]
cwd = "tmp"
startup_timeout_ms = 2500
tool_timeout_sec = 5
disabled_tools = ["write"]
required = true

[mcp_servers.gh]
url = "https://example.invalid/mcp"
bearer_token_env_var = "GH_TOKEN"
enabled = false
enabled_tools = ["list"]
"#,
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        let fs = &servers[0];
        assert_eq!(fs.name, "fs");
        assert_eq!(fs.startup_timeout, Duration::from_millis(2500));
        assert_eq!(fs.tool_timeout, Duration::from_secs(5));
        assert!(fs.offers("read") && !fs.offers("write"));
        match &fs.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
                ..
            } => {
                assert_eq!(command, "npx");
                assert_eq!(args.len(), 3);
                assert_eq!(env["A"], "1");
                assert_eq!(cwd.as_deref(), Some(Path::new("/tmp")));
            }
            other => panic!("{other:?}"),
        }
        let gh = &servers[1];
        assert!(!gh.enabled);
        assert_eq!(gh.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert!(gh.offers("list") && !gh.offers("other"));
        assert!(
            matches!(&gh.transport, McpTransport::Http { bearer_token_env_var: Some(v), .. } if v == "GH_TOKEN")
        );
        assert_eq!(unknown, vec![("fs".to_string(), "required".to_string())]);
    }

    #[test]
    fn a_profile_replaces_a_server_and_cwd_is_taken_from_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(
            &file,
            "[mcp_servers.a]\ncommand = \"x\"\ncwd = \"tools\"\n\n[mcp_servers.b]\nurl = \"http://127.0.0.1:1/mcp\"\n\n[profiles.p.mcp_servers.a]\ncommand = \"y\"\n",
        )
        .unwrap();
        let flags = |profile: Option<&str>| crate::config::FlagSettings {
            config: Some(file.clone()),
            profile: profile.map(str::to_string),
            settings: crate::config::FileSettings {
                cwd: Some(dir.path().to_path_buf()),
                ..Default::default()
            },
            ..Default::default()
        };
        let plain = crate::config::load(&flags(None), &|_| None).unwrap();
        let names: Vec<&str> = plain.mcp_servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let Some(McpTransport::Stdio { command, cwd, .. }) =
            plain.mcp_servers.first().map(|s| &s.transport)
        else {
            panic!("a is started with a command");
        };
        assert_eq!(command, "x");
        let tools = std::fs::canonicalize(dir.path().join("tools")).unwrap();
        assert_eq!(
            cwd.as_deref().map(|c| std::fs::canonicalize(c).unwrap()),
            Some(tools)
        );
        let profiled = crate::config::load(&flags(Some("p")), &|_| None).unwrap();
        assert!(matches!(
            &profiled.mcp_servers[0].transport,
            McpTransport::Stdio { command, cwd: None, .. } if command == "y"
        ));
        assert_eq!(profiled.mcp_servers.len(), 2);
    }

    #[test]
    fn bad_entries_name_the_server_and_the_key() {
        let cases = [
            (
                "[mcp_servers.a]\ncommand = \"x\"\nurl = \"http://h\"",
                "both `command`",
            ),
            ("[mcp_servers.a]\nargs = []", "neither `command`"),
            (
                "[mcp_servers.a]\ncommand = \"x\"\ncwd = \"no/such/dir/here\"",
                "`cwd`",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\ntool_timeout_sec = 0",
                "`tool_timeout_sec`",
            ),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nstartup_timeout_sec = \"ten\"",
                "`startup_timeout_sec`",
            ),
            ("[mcp_servers.a]\ncommand = 3", "`command`"),
            ("[mcp_servers.a]\ncommand = \"x\"\nargs = \"-y\"", "`args`"),
            ("[mcp_servers.a]\nurl = \"ftp://h\"", "`url`"),
            ("[mcp_servers.a]\nurl = \"http://h\"\ncwd = \"/\"", "`cwd`"),
            (
                "[mcp_servers.a]\ncommand = \"x\"\nenabled = \"yes\"",
                "`enabled`",
            ),
        ];
        for (text, key) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with("[mcp_servers.a]: "), "{text}: {e}");
            assert!(e.contains(key), "{text}: {e}");
        }
        let e = parse("[mcp_servers.we__ird]\ncommand = \"x\"").unwrap_err();
        assert!(
            e.contains("[mcp_servers.we__ird]") && e.contains("may not hold `__`"),
            "{e}"
        );
        let e = parse("[mcp_servers.\"a b\"]\ncommand = \"x\"").unwrap_err();
        assert!(
            e.contains("[mcp_servers.a b]") && e.contains("letters"),
            "{e}"
        );
    }
}
