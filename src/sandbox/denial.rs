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
        if let Some(path) = hidden_temp_path(line, sandbox) {
            return Some(format!(
                "the sandbox gives blocks a temp dir of their own, so {} (in this machine's temp dir) is not there for them",
                crate::safe_text::visible(&path.display().to_string())
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

/// Under bubblewrap, a path that a block did not find because it lies in this machine's
/// temp dir, which blocks do not see (theirs is private), though it is there.
fn hidden_temp_path(line: &str, sandbox: &Resolved) -> Option<PathBuf> {
    if sandbox.backend != Some(super::Backend::Bubblewrap)
        || !(line.contains("No such file or directory") || line.contains("ENOENT"))
    {
        return None;
    }
    let temp = [PathBuf::from("/tmp"), std::env::temp_dir()];
    line.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ':' | ',' | '(' | ')'))
        .filter(|word| word.starts_with('/') && word.len() > 1)
        .map(PathBuf::from)
        .filter(|path| temp.iter().any(|t| path.starts_with(t) && path != t))
        .find(|path| path.exists() || path.parent().is_some_and(Path::exists))
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

    /// Under bubblewrap, a path in this machine's temp dir that a block did not find is
    /// the private temp dir's doing when it is there outside; not under Landlock, and not
    /// for a path that is not there either.
    #[test]
    fn a_path_in_the_real_temp_dir_is_told_apart() {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let dir = tempfile::tempdir_in("/tmp").unwrap_or_else(|e| panic!("{e}"));
        let missing = format!(
            "touch: cannot touch '{}/made': No such file or directory",
            dir.path().display()
        );
        let mut bwrap = sandbox(Network::On);
        bwrap.backend = Some(Backend::Bubblewrap);
        let why = refusal_reason(&missing, &bwrap, &cwd).unwrap_or_default();
        assert!(why.contains("temp dir of their own"), "{why}");
        assert_eq!(refusal_reason(&missing, &sandbox(Network::On), &cwd), None);
        let nowhere = "cat: /tmp/no-such-dir-oi/x/y: No such file or directory";
        assert_eq!(refusal_reason(nowhere, &bwrap, &cwd), None);
    }
}
