//! Telling a sandbox refusal from an ordinary failure, so that a face can offer to run a
//! failed block once more outside the sandbox, with the reason shown. Deterministic text
//! matching on the block's output: a read-only file system (bubblewrap), a permission
//! denied on a path outside the writable roots (Landlock), or a refused connection attempt
//! when the network is off.

use std::path::{Path, PathBuf};

use super::{Network, Resolved};

/// Why a failed block looks like the sandbox stopped it, or None.
pub fn refusal_reason(output: &str, sandbox: &Resolved, cwd: &Path) -> Option<String> {
    sandbox.backend?;
    let roots = super::writable_roots(sandbox.settings.mode, cwd);
    for line in output.lines() {
        if line.contains("Read-only file system") || line.contains("EROFS") {
            return Some(format!(
                "the sandbox keeps this read-only: {}",
                crate::safe_text::visible(line.trim())
            ));
        }
        let denied = line.contains("Permission denied")
            || line.contains("EACCES")
            || line.contains("Operation not permitted")
            || line.contains("EPERM");
        if !denied {
            continue;
        }
        if let Some(path) = outside_path(line, &roots) {
            return Some(format!(
                "the sandbox allows writes only under {}; the block wrote to {}",
                roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::safe_text::visible(&path.display().to_string())
            ));
        }
        let network = ["connect", "socket", "Connection", "urlopen", "curl", "wget"];
        if sandbox.settings.network == Network::Off && network.iter().any(|w| line.contains(w)) {
            return Some(format!(
                "the sandbox has the network off: {}",
                crate::safe_text::visible(line.trim())
            ));
        }
    }
    None
}

/// An absolute path named in a line that lies outside every writable root.
fn outside_path(line: &str, roots: &[PathBuf]) -> Option<PathBuf> {
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ':' | ',' | '(' | ')'))
        .filter(|word| word.starts_with('/') && word.len() > 1)
        .map(PathBuf::from)
        .find(|path| !roots.iter().any(|root| path.starts_with(root)))
}

#[cfg(test)]
mod tests {
    use super::super::{Backend, SandboxMode, SandboxSettings};
    use super::*;

    fn sandbox(network: Network) -> Resolved {
        Resolved {
            settings: SandboxSettings {
                mode: SandboxMode::WorkspaceWrite,
                network,
                explicit: false,
            },
            backend: Some(Backend::Landlock),
            prefix: Vec::new(),
            refusal: None,
            warning: None,
        }
    }

    #[test]
    fn refusals_are_told_from_ordinary_failures() {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let on = sandbox(Network::On);
        let ro = "touch: cannot touch '/etc/x': Read-only file system";
        assert!(refusal_reason(ro, &on, &cwd).is_some());
        let ll = "PermissionError: [Errno 13] Permission denied: '/opt/data/x'";
        let why = refusal_reason(ll, &on, &cwd).unwrap_or_default();
        assert!(why.contains("/opt/data/x"), "{why}");
        let inside = format!("Permission denied: '{}/x'", cwd.display());
        assert_eq!(refusal_reason(&inside, &on, &cwd), None);
        assert_eq!(refusal_reason("NameError: name 'x'", &on, &cwd), None);
        let net = "PermissionError: [Errno 13] Permission denied (connect)";
        assert_eq!(refusal_reason(net, &on, &cwd), None);
        assert!(refusal_reason(net, &sandbox(Network::Off), &cwd).is_some());
        let mut off = sandbox(Network::On);
        off.backend = None;
        assert_eq!(refusal_reason(ro, &off, &cwd), None);
    }
}
