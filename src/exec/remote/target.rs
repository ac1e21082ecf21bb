//! Where remote kernels run: an SSH destination as the person named it, and how to reach it.

use std::time::Duration;

use super::super::Language;

/// A host to run kernels on, through the system's `ssh`.
#[derive(Debug, Clone, PartialEq)]
pub struct SshTarget {
    /// How the person knows it: the executor's name, or the host as given.
    pub name: String,
    /// What `ssh` is given: an alias of `~/.ssh/config`, `user@host`, `ssh://user@host:port`.
    pub host: String,
    /// More arguments for `ssh`, before the host (`-F FILE`, `-J JUMP`, `-o KEY=VALUE`).
    pub ssh_options: Vec<String>,
    /// The kernels' working directory there (None: the remote home).
    pub workdir: Option<String>,
    /// Variables set for the kernels there.
    pub env: Vec<(String, String)>,
    /// Interpreters to use there instead of the ones found on its PATH.
    pub interpreters: Vec<(Language, String)>,
    /// How long connecting may take before it is given up.
    pub connect_timeout: Duration,
}

impl SshTarget {
    /// A target for a host given on the command line or with `/on`. `host:port` (one
    /// colon, a number after it) becomes `ssh://host:port`, which `ssh` understands.
    pub fn from_host(host: &str) -> Result<SshTarget, String> {
        let host = host.trim();
        if host.is_empty() {
            return Err("no host was given".to_string());
        }
        // Not an option in disguise, in any of its parts (`ssh://-o…`, `me@-o…`).
        let rest = host.strip_prefix("ssh://").unwrap_or(host);
        let after_user = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
        if host.starts_with('-') || rest.starts_with('-') || after_user.starts_with('-') {
            return Err(format!("`{host}` is not a host (it starts with a dash)"));
        }
        if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "`{host}` is not a host (it holds a space or a control character)"
            ));
        }
        Ok(SshTarget {
            name: host.to_string(),
            host: ssh_destination(host),
            ssh_options: Vec::new(),
            workdir: None,
            env: Vec::new(),
            interpreters: Vec::new(),
            connect_timeout: Duration::from_secs(15),
        })
    }
}

/// `host:port` and `user@host:port` as `ssh://…`; `[v6]:port` too; anything else as is.
fn ssh_destination(host: &str) -> String {
    if host.contains("://") {
        return host.to_string();
    }
    let (user, rest) = match host.rsplit_once('@') {
        Some((user, rest)) => (Some(user), rest),
        None => (None, host),
    };
    let port_split = if rest.starts_with('[') {
        rest.rsplit_once("]:").map(|(h, p)| (format!("{h}]"), p))
    } else if rest.matches(':').count() == 1 {
        rest.split_once(':').map(|(h, p)| (h.to_string(), p))
    } else {
        None
    };
    match port_split {
        Some((h, port)) if !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()) => {
            match user {
                Some(user) => format!("ssh://{user}@{h}:{port}"),
                None => format!("ssh://{h}:{port}"),
            }
        }
        _ => host.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_become_an_ssh_uri() {
        assert_eq!(ssh_destination("server"), "server");
        assert_eq!(ssh_destination("me@server"), "me@server");
        assert_eq!(ssh_destination("server:2222"), "ssh://server:2222");
        assert_eq!(ssh_destination("me@server:2222"), "ssh://me@server:2222");
        assert_eq!(ssh_destination("[::1]:2222"), "ssh://[::1]:2222");
        assert_eq!(ssh_destination("ssh://me@h:22"), "ssh://me@h:22");
        assert_eq!(ssh_destination("server:"), "server:");
    }

    #[test]
    fn an_option_is_not_a_host() {
        assert!(SshTarget::from_host("-oProxyCommand=x").is_err());
        assert!(SshTarget::from_host("ssh://-oProxyCommand=x").is_err());
        assert!(SshTarget::from_host("me@-oProxyCommand=x").is_err());
        assert!(SshTarget::from_host("ssh://me@-oProxyCommand=x:22").is_err());
        assert!(SshTarget::from_host("a b").is_err());
        assert!(SshTarget::from_host("").is_err());
        assert!(SshTarget::from_host("me@box").is_ok());
    }
}
