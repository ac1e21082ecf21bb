//! oi-tui's own files, which the sandbox keeps from blocks.

use std::path::Path;

/// Blocks must not rewrite the rules, the trust or the store, even from a workspace that
/// holds them, nor create them where they are absent: the platform's config directory and
/// the data directory are made (0700, empty) before a sandbox is set up, so that it can
/// keep them read-only. (A project file that a block writes is not trusted, so it does not
/// apply; see `project_rules`.)
pub(super) fn protect(config_path: Option<&Path>, data_dir: &Path, cwd: &Path) {
    let config_dir = super::default_config_path().and_then(|p| p.parent().map(Path::to_path_buf));
    crate::sandbox::protect_made(
        [config_dir, Some(data_dir.to_path_buf())]
            .into_iter()
            .flatten(),
    );
    // (What `protect_made` makes, it protects.)
    crate::sandbox::protect(
        [
            config_path
                .map(Path::to_path_buf)
                .or_else(super::default_config_path),
            Some(crate::project_rules::path_in(cwd)),
        ]
        .into_iter()
        .flatten(),
    );
}
