//! What went wrong with a connection, in one sentence that names the host, from what `ssh`
//! printed.

use super::target::SshTarget;

/// One sentence for a connection that could not be made (or dropped), from `ssh`'s
/// standard error.
pub(crate) fn describe_failure(target: &SshTarget, stderr: &str) -> String {
    let name = &target.name;
    let has = |needle: &str| {
        stderr
            .to_ascii_lowercase()
            .contains(&needle.to_ascii_lowercase())
    };
    let last = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('@'))
        .unwrap_or("")
        .trim_start_matches("ssh: ");
    if has("REMOTE HOST IDENTIFICATION HAS CHANGED") || has("host key for") && has("has changed") {
        // ssh says how to remove the old key (its known_hosts file and its name there).
        let remove = stderr
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("ssh-keygen ") && l.contains(" -R "))
            .unwrap_or("ssh-keygen -R HOST");
        format!(
            "The host key of {name} has changed since it was last seen, so oi-tui refused to connect: someone may be intercepting the connection, or the host was reinstalled; check the new key with its administrator, then remove the old one with `{remove}` and connect once with `{}`.",
            ssh_line(target)
        )
    } else if has("Host key verification failed")
        || has("No ED25519 host key is known")
        || has("host key is not known")
    {
        format!(
            "The host key of {name} is not known yet, and oi-tui does not accept a key unseen: connect once with `{}`, check the key, and try again.",
            ssh_line(target)
        )
    } else if has("Permission denied") || has("Too many authentication failures") {
        format!(
            "{name} refused the login ({last}); oi-tui connects without prompts, so it needs a key ssh can use on its own (loaded in ssh-agent, or named by IdentityFile without a passphrase)."
        )
    } else if has("Could not resolve hostname")
        || has("Name or service not known")
        || has("nodename nor servname")
    {
        format!("Cannot find the host {name}: its name does not resolve ({last}).")
    } else if has("Connection refused") {
        format!("{name} refused the connection: nothing listens on its SSH port ({last}).")
    } else if has("timed out") || has("Timeout") {
        format!(
            "{name} did not answer within {} (unreachable, or a very slow link): {last}.",
            super::super::format_duration(target.connect_timeout)
        )
    } else if has("No route to host") || has("Network is unreachable") {
        format!("{name} is unreachable from here ({last}).")
    } else if has("Bad configuration option")
        || has("bad configuration")
        || has("garbage at end of line")
        || has("Unsupported option")
    {
        format!("Cannot connect to {name}: the SSH configuration has an error ({last}).")
    } else if last.is_empty() {
        format!("Cannot connect to {name}: ssh ended without saying why.")
    } else {
        format!("Cannot connect to {name}: {last}.")
    }
}

/// The `ssh` command a person types to connect as oi-tui does: with the executor's own
/// options (a `-F` file, a `UserKnownHostsFile`), or the key lands where oi-tui never looks.
fn ssh_line(target: &SshTarget) -> String {
    let shown = |word: &str| {
        let plain = !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
        if plain {
            word.to_string()
        } else {
            format!("'{}'", word.replace('\'', "'\\''"))
        }
    };
    std::iter::once("ssh".to_string())
        .chain(target.ssh_options.iter().map(|o| shown(o)))
        .chain(std::iter::once(shown(&target.host)))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> SshTarget {
        SshTarget::from_host("box").unwrap()
    }

    #[test]
    fn each_failure_is_one_sentence_naming_the_host() {
        let cases = [
            (
                "@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\nOffending ED25519 key in /k/kh:1\n  remove with:\n  ssh-keygen -f \"/k/kh\" -R \"[127.0.0.1]:2299\"\nHost key verification failed.\n",
                "remove the old one with `ssh-keygen -f \"/k/kh\" -R \"[127.0.0.1]:2299\"`",
            ),
            (
                "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\nHost key verification failed.\n",
                "not known yet",
            ),
            (
                "root@127.0.0.1: Permission denied (publickey).\n",
                "refused the login (root@127.0.0.1: Permission denied (publickey).)",
            ),
            (
                "ssh: Could not resolve hostname nowhere: Name or service not known\n",
                "does not resolve",
            ),
            (
                "ssh: connect to host 127.0.0.1 port 9: Connection refused\n",
                "refused the connection",
            ),
            (
                "ssh: connect to host 10.1.1.1 port 22: Connection timed out\n",
                "did not answer",
            ),
            ("", "without saying why"),
        ];
        for (stderr, expected) in cases {
            let said = describe_failure(&target(), stderr);
            assert!(said.contains(expected), "{stderr:?} gave {said:?}");
            assert!(said.contains("box"), "{said}");
            assert_eq!(said.lines().count(), 1, "{said}");
        }
    }

    #[test]
    fn the_command_to_check_a_key_has_the_executors_options() {
        let mut t = SshTarget::from_host("lab2").unwrap();
        t.ssh_options = vec![
            "-F".into(),
            "/srv/my ssh/cfg".into(),
            "-o".into(),
            "UserKnownHostsFile=/k/kh".into(),
        ];
        let said = describe_failure(&t, "Host key verification failed.\n");
        assert!(
            said.contains(
                "connect once with `ssh -F '/srv/my ssh/cfg' -o UserKnownHostsFile=/k/kh lab2`"
            ),
            "{said}"
        );
    }
}
