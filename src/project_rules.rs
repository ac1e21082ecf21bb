//! The project file, `.oi-tui.toml` in the working directory, and the user's trust in it.
//!
//! A project file may hold only a `[policy]` section (allow / ask / deny): a repository
//! someone else wrote must never be able to set the model, the server, the key, the
//! sandbox or the kernels' environment. Anything else in it is an error naming the file,
//! line and key, and the file is then not applied. Its rules are `RuleSource::Project`.
//!
//! Trust: the rules apply only when the user trusted exactly the file's current content
//! (`oi-tui trust`). The trust is kept in the data directory, in `trusted-projects.json`
//! (0600): each trusted file's path in its canonical directory and the exact text trusted,
//! not a hash. An untrusted or changed file does not apply, and loading the config says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::policy::{RuleLists, RuleSource, Rules};
use crate::safe_text::visible;

/// The project file's name, looked for in the working directory.
pub const PROJECT_FILE: &str = ".oi-tui.toml";

/// The trust store's name in the data directory.
pub const TRUST_FILE: &str = "trusted-projects.json";

/// A project file that was read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFile {
    /// Its path in the canonical working directory (the key of its trust).
    pub path: PathBuf,
    /// Its exact text.
    pub text: String,
    /// Its `[policy]` lists (empty when it has none).
    pub lists: RuleLists,
}

impl ProjectFile {
    /// How many rules of each kind: `2 allow, 1 deny` (`no rules` when empty).
    pub fn counts(&self) -> String {
        let parts: Vec<String> = [
            (self.lists.allow.len(), "allow"),
            (self.lists.ask.len(), "ask"),
            (self.lists.deny.len(), "deny"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            "no rules".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Whether it holds no rule at all.
    pub fn is_empty(&self) -> bool {
        self.lists.allow.is_empty() && self.lists.ask.is_empty() && self.lists.deny.is_empty()
    }
}

/// Whether the user trusted a project file as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// Trusted with exactly this content.
    Trusted,
    /// Never trusted (or the trust was revoked).
    Untrusted,
    /// Trusted once, but its content changed since.
    Changed,
}

/// The trust store: canonical path of a project file -> the exact text trusted.
#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustStore {
    version: u32,
    projects: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectToml {
    #[serde(default)]
    policy: Option<RuleLists>,
}

/// The project file of a working directory, when there is one.
pub fn path_in(cwd: &Path) -> PathBuf {
    cwd.join(PROJECT_FILE)
}

/// Reads and checks a project file.
pub fn read_file(path: &Path) -> Result<ProjectFile, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the project file {}: {e}",
            visible(&path.display().to_string())
        )
    })?;
    check(path, &text)
}

/// Checks a project file's text: it parses, holds only `[policy]` with allow / ask / deny
/// lists of strings, and every rule is valid.
pub fn check(path: &Path, text: &str) -> Result<ProjectFile, String> {
    let shown = visible(&path.display().to_string());
    let canonical = trust_key_path(path).map_err(|e| format!("{shown}: {e}"))?;
    let at = |span: Option<std::ops::Range<usize>>, message: &str| {
        let (line, col) = span
            .map(|s| crate::rules_file::line_col(text, s.start))
            .unwrap_or((1, 1));
        format!("{shown}:{line}:{col}: {}", visible(message.trim_end()))
    };
    let doc = toml_edit::Document::parse(text).map_err(|e| at(e.span(), e.message()))?;
    let mut refused = Vec::new();
    for (key, _) in doc.as_table().iter() {
        if key == "policy" {
            continue;
        }
        let line = doc
            .as_table()
            .key(key)
            .and_then(|k| k.span())
            .map(|s| crate::rules_file::line_col(text, s.start).0)
            .or_else(|| {
                text.lines()
                    .position(|l| {
                        let l = l.trim_start().trim_start_matches('[');
                        l.starts_with(key)
                    })
                    .map(|i| i + 1)
            })
            .unwrap_or(1);
        refused.push(format!(
            "{shown}:{line}: `{}` cannot be set in a project file, which may hold only a \
             [policy] section (allow, ask, deny)",
            visible(key)
        ));
    }
    if !refused.is_empty() {
        return Err(refused.join("\n"));
    }
    let parsed: ProjectToml = toml::from_str(text).map_err(|e| at(e.span(), e.message()))?;
    let lists = parsed.policy.unwrap_or_default();
    let errors = Rules::new().add_lists(&lists, RuleSource::Project);
    if let Some(e) = errors.first() {
        return Err(format!("{shown} [policy]: {}", visible(&e.to_string())));
    }
    Ok(ProjectFile {
        path: canonical,
        text: text.to_string(),
        lists,
    })
}

/// Where a project file applies, as its trust is keyed: the canonical directory it sits
/// in, joined with its name. (Not where a symlink points: trusting rules for one directory
/// must not make them apply in another that links to the same file.)
fn trust_key_path(path: &Path) -> std::io::Result<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .unwrap_or(std::ffi::OsStr::new(PROJECT_FILE));
    Ok(std::fs::canonicalize(dir)?.join(name))
}

fn store_path(data_dir: &Path) -> PathBuf {
    data_dir.join(TRUST_FILE)
}

fn key_of(path: &Path) -> Result<String, String> {
    path.to_str().map(str::to_string).ok_or_else(|| {
        format!(
            "the project file's path {} is not UTF-8; it cannot be trusted",
            visible(&path.to_string_lossy())
        )
    })
}

fn read_store(data_dir: &Path) -> Result<TrustStore, String> {
    let path = store_path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            format!(
                "the trust file {} is damaged ({e}); move it away and trust the project again \
                 with: oi-tui trust",
                visible(&path.display().to_string())
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustStore::default()),
        Err(e) => Err(format!(
            "cannot read the trust file {}: {e}",
            visible(&path.display().to_string())
        )),
    }
}

fn write_store(data_dir: &Path, store: &TrustStore) -> Result<(), String> {
    let shown = visible(&data_dir.display().to_string());
    if let Some(said) = crate::secrets::private_dir(data_dir)
        .map_err(|e| format!("cannot create the data directory {shown}: {e}"))?
    {
        eprintln!("{said}");
    }
    let text = serde_json::to_string_pretty(&TrustStore {
        version: 1,
        projects: store.projects.clone(),
    })
    .map_err(|e| format!("cannot write the trust file: {e}"))?;
    let path = store_path(data_dir);
    crate::rules_file::write_atomic(&path, &format!("{text}\n"))?;
    crate::secrets::private_file(&path).map_err(|e| {
        format!(
            "cannot make the trust file {} private: {e}",
            visible(&path.display().to_string())
        )
    })?;
    Ok(())
}

/// Whether the user trusted this file's current content.
pub fn trust_state(data_dir: &Path, file: &ProjectFile) -> Result<TrustState, String> {
    let store = read_store(data_dir)?;
    Ok(match store.projects.get(&key_of(&file.path)?) {
        Some(text) if *text == file.text => TrustState::Trusted,
        Some(_) => TrustState::Changed,
        None => TrustState::Untrusted,
    })
}

/// Trusts exactly this content of the file.
pub fn trust(data_dir: &Path, file: &ProjectFile) -> Result<(), String> {
    let mut store = read_store(data_dir)?;
    store
        .projects
        .insert(key_of(&file.path)?, file.text.clone());
    write_store(data_dir, &store)
}

/// Forgets the trust in the project file at `path` (canonical or not). Returns whether
/// there was one.
pub fn revoke(data_dir: &Path, path: &Path) -> Result<bool, String> {
    let canonical = trust_key_path(path).unwrap_or_else(|_| path.to_path_buf());
    let mut store = read_store(data_dir)?;
    let removed = store.projects.remove(&key_of(&canonical)?).is_some()
        | store.projects.remove(&key_of(path)?).is_some();
    if removed {
        write_store(data_dir, &store)?;
    }
    Ok(removed)
}

/// How to run `oi-tui trust` for this working directory.
pub fn trust_command(cwd: &Path) -> String {
    let here = std::env::current_dir().and_then(std::fs::canonicalize).ok();
    let there = std::fs::canonicalize(cwd).ok();
    if here.is_some() && here == there {
        "oi-tui trust".to_string()
    } else {
        format!("oi-tui --cwd {} trust", visible(&cwd.display().to_string()))
    }
}

/// Adds the project file's rules to `rules` when the user trusted it as it is; otherwise
/// (untrusted, changed, malformed, or refused) says why in `warnings` and adds nothing.
pub fn apply(cwd: &Path, data_dir: &Path, rules: &mut Rules, warnings: &mut Vec<String>) {
    let path = path_in(cwd);
    if !path.exists() {
        return;
    }
    let file = match read_file(&path) {
        Ok(file) => file,
        Err(e) => {
            warnings.push(format!("{e}\nThe project rules in it do not apply."));
            return;
        }
    };
    if file.is_empty() {
        return;
    }
    let shown = visible(&file.path.display().to_string());
    let command = trust_command(cwd);
    match trust_state(data_dir, &file) {
        Ok(TrustState::Trusted) => {
            // Checked above: no rule is refused.
            let _ = rules.add_lists(&file.lists, RuleSource::Project);
        }
        Ok(TrustState::Untrusted) => warnings.push(format!(
            "The project rules in {shown} ({}) are not trusted, so they do not apply. Review \
             them and trust them with: {command}",
            file.counts()
        )),
        Ok(TrustState::Changed) => warnings.push(format!(
            "The project rules in {shown} ({}) changed since you trusted them, so they do not \
             apply. Review them and trust them again with: {command}",
            file.counts()
        )),
        Err(e) => warnings.push(format!("{e}\nThe project rules in {shown} do not apply.")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::policy::{Decision, Policy};
    use std::os::unix::fs::PermissionsExt;

    fn setup(text: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap();
        let cwd = root.path().join("proj");
        let data = root.path().join("data");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join(PROJECT_FILE), text).unwrap();
        (root, cwd, data)
    }

    fn applied(cwd: &Path, data: &Path) -> (Rules, Vec<String>) {
        let mut rules = Rules::new();
        let mut warnings = Vec::new();
        apply(cwd, data, &mut rules, &mut warnings);
        (rules, warnings)
    }

    #[test]
    fn rules_apply_only_once_trusted_and_stop_when_changed() {
        let text = "[policy]\nallow = [\"ls\", \"git status\"]\ndeny = [\"rm\"]\n";
        let (_root, cwd, data) = setup(text);
        let (rules, warnings) = applied(&cwd, &data);
        assert!(rules.is_empty());
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("(2 allow, 1 deny) are not trusted, so they do not apply"),
            "{warnings:?}"
        );
        let file = read_file(&path_in(&cwd)).unwrap();
        trust(&data, &file).unwrap();
        let store = data.join(TRUST_FILE);
        assert_eq!(
            std::fs::metadata(&store).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (rules, warnings) = applied(&cwd, &data);
        assert!(warnings.is_empty(), "{warnings:?}");
        let v = Policy::new(rules, &cwd).judge("bash", "rm x");
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.rule.as_ref().unwrap().source, RuleSource::Project);
        assert!(v.decision_reason().contains("the project config"));

        std::fs::write(path_in(&cwd), text.replace("\"rm\"", "\"rmdir\"")).unwrap();
        let (rules, warnings) = applied(&cwd, &data);
        assert!(rules.is_empty());
        assert!(
            warnings[0].contains("changed since you trusted them"),
            "{warnings:?}"
        );

        assert!(revoke(&data, &path_in(&cwd)).unwrap());
        assert!(!revoke(&data, &path_in(&cwd)).unwrap());
        let (_, warnings) = applied(&cwd, &data);
        assert!(warnings[0].contains("are not trusted"), "{warnings:?}");
    }

    #[test]
    fn the_exact_text_is_kept_not_a_hash() {
        let text = "[policy]\nallow = [\"ls\"]\n";
        let (_root, cwd, data) = setup(text);
        trust(&data, &read_file(&path_in(&cwd)).unwrap()).unwrap();
        let stored = std::fs::read_to_string(data.join(TRUST_FILE)).unwrap();
        let store: serde_json::Value = serde_json::from_str(&stored).unwrap();
        let key = std::fs::canonicalize(&cwd).unwrap().join(PROJECT_FILE);
        assert_eq!(
            store["projects"][key.to_str().unwrap()].as_str(),
            Some(text)
        );
    }

    #[test]
    fn a_project_file_may_only_hold_policy() {
        let (_root, cwd, data) = setup(
            "# project\napi_base = \"http://evil\"\n[policy]\nallow = [\"ls\"]\n\n[sandbox]\nmode = \"off\"\n",
        );
        let err = read_file(&path_in(&cwd)).unwrap_err();
        assert!(
            err.contains(".oi-tui.toml:2: `api_base` cannot be set"),
            "{err}"
        );
        assert!(
            err.contains(".oi-tui.toml:6: `sandbox` cannot be set"),
            "{err}"
        );
        let (rules, warnings) = applied(&cwd, &data);
        assert!(rules.is_empty());
        assert!(warnings[0].contains("do not apply"), "{warnings:?}");

        std::fs::write(path_in(&cwd), "model = \"openai/x\"\n").unwrap();
        let err = read_file(&path_in(&cwd)).unwrap_err();
        assert!(err.contains(":1: `model` cannot be set"), "{err}");

        std::fs::write(path_in(&cwd), "[policy]\nallow = [\"ls\"]\nenv = 1\n").unwrap();
        let err = read_file(&path_in(&cwd)).unwrap_err();
        assert!(err.contains(":3:"), "{err}");
        assert!(err.contains("env"), "{err}");

        std::fs::write(path_in(&cwd), "[policy]\nallow = [\"ls\"\n").unwrap();
        let err = read_file(&path_in(&cwd)).unwrap_err();
        assert!(err.contains(".oi-tui.toml:2:"), "{err}");

        std::fs::write(path_in(&cwd), "[policy]\n\"a\\u001b]0;t\\u0007\" = 1\n").unwrap();
        let err = read_file(&path_in(&cwd)).unwrap_err();
        assert!(!err.contains('\u{1b}') && err.contains("␛"), "{err}");

        std::fs::write(path_in(&cwd), "[policy]\nallow = [\"ls; rm x\"]\n").unwrap();
        let err = read_file(&path_in(&cwd)).unwrap_err();
        assert!(err.contains("shell syntax"), "{err}");
    }

    #[test]
    fn trust_is_for_a_directory_not_for_where_a_symlink_points() {
        let text = "[policy]\nallow = [\"ls\"]\n";
        let (root, cwd, data) = setup(text);
        trust(&data, &read_file(&path_in(&cwd)).unwrap()).unwrap();
        let other = root.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::symlink(path_in(&cwd), path_in(&other)).unwrap();
        let (rules, warnings) = applied(&other, &data);
        assert!(rules.is_empty());
        assert!(warnings[0].contains("not trusted"), "{warnings:?}");
        let (rules, _) = applied(&cwd, &data);
        assert!(!rules.is_empty());
    }

    #[test]
    fn a_damaged_trust_file_is_reported_and_kept() {
        let (_root, cwd, data) = setup("[policy]\ndeny = [\"rm\"]\n");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join(TRUST_FILE), "{not json").unwrap();
        let (rules, warnings) = applied(&cwd, &data);
        assert!(rules.is_empty());
        assert!(warnings[0].contains("is damaged"), "{warnings:?}");
        let file = read_file(&path_in(&cwd)).unwrap();
        assert!(trust(&data, &file).unwrap_err().contains("is damaged"));
        assert_eq!(
            std::fs::read_to_string(data.join(TRUST_FILE)).unwrap(),
            "{not json"
        );
    }
}
