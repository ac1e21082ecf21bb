//! Writing a rule into a config file: `add_rule` appends a command prefix to `[policy]
//! allow`, `ask` or `deny` of a user's config (or the project file), keeping every other
//! line, comment and key as it was (the file is edited with `toml_edit`, never rewritten
//! from parsed data). A file that does not parse, a `[policy]` or list of the wrong type,
//! or a prefix that is not a valid rule is refused with a message naming the file, and the
//! file is left untouched. Writes are atomic (a temp file in the same directory, then a
//! rename) and keep the file's mode; a new file is created 0600, a new directory 0700.
//!
//! `add_project_rule` writes to the project file and keeps the trust in it current: the
//! user's own edit of a file they trusted (or of one they are creating) stays trusted; a
//! file they have not trusted is refused, so that they never trust rules unknowingly.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, Value};

use crate::policy::{Decision, RuleSource, Rules};
use crate::project_rules::{self, TrustState};

/// What `add_rule` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Added {
    /// The prefix was appended and the file written.
    Saved,
    /// The list already held this prefix; the file was not touched.
    AlreadyThere,
}

/// The name of a decision's list in `[policy]`.
pub fn list_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
    }
}

/// The user's config file, where "always allow … in your config" is saved: the file the
/// settings were read from (`--config`, `OI_TUI_CONFIG`, or the platform one), else the
/// platform path where it would be created (`~/.config/oi-tui/config.toml`).
pub fn user_config_path(settings: &crate::config::Settings) -> Option<PathBuf> {
    settings
        .config_path
        .clone()
        .or_else(crate::config::default_config_path)
}

/// Appends `prefix` to the `[policy]` list for `decision` in the config file at `path`.
pub fn add_rule(path: &Path, decision: Decision, prefix: &str) -> Result<Added, String> {
    add_rule_text(path, decision, prefix).map(|(added, _)| added)
}

/// Adds a rule to the project file (`.oi-tui.toml` in `cwd`) and trusts its new content,
/// which is the user's own edit. Refused when the file exists and is not trusted as it is.
pub fn add_project_rule(
    cwd: &Path,
    data_dir: &Path,
    decision: Decision,
    prefix: &str,
) -> Result<Added, String> {
    let path = cwd.join(project_rules::PROJECT_FILE);
    let shown = crate::safe_text::visible(&path.display().to_string());
    if path.exists() {
        let file = project_rules::read_file(&path)?;
        match project_rules::trust_state(data_dir, &file)? {
            // A file without rules has nothing the user could trust unknowingly.
            _ if file.is_empty() => {}
            TrustState::Trusted => {}
            TrustState::Untrusted => {
                return Err(format!(
                    "the project rules in {shown} are not trusted, so no rule is added to them: \
                     review them and trust them first with: oi-tui trust"
                ));
            }
            TrustState::Changed => {
                return Err(format!(
                    "the project rules in {shown} changed since you trusted them, so no rule is \
                     added to them: review them and trust them again first with: oi-tui trust"
                ));
            }
        }
    }
    let (added, text) = add_rule_text(&path, decision, prefix)?;
    let file = project_rules::check(&path, &text)?;
    project_rules::trust(data_dir, &file)?;
    Ok(added)
}

/// `add_rule`, returning the file's text as it now is.
fn add_rule_text(path: &Path, decision: Decision, prefix: &str) -> Result<(Added, String), String> {
    let shown = crate::safe_text::visible(&path.display().to_string());
    let mut scratch = Rules::new();
    scratch
        .add(decision, prefix, RuleSource::User)
        .map_err(|e| format!("cannot add the rule to {shown}: {e}"))?;
    let prefix = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
    // A config kept as a symlink (dotfiles) is edited where it points.
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let text = match std::fs::read_to_string(&target) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    let mut doc: DocumentMut = match &text {
        None => DocumentMut::new(),
        Some(text) => text.parse().map_err(|e: toml_edit::TomlError| {
            let (line, col) = e.span().map(|s| line_col(text, s.start)).unwrap_or((1, 1));
            format!(
                "cannot add the rule: {shown} does not parse at line {line}, column {col}: {}; \
                 the file is left as it was",
                crate::safe_text::visible(e.message().trim_end())
            )
        })?,
    };
    let name = list_name(decision);
    if !doc.contains_key("policy") {
        // Comments after the last key belong to the document's end, which a new table
        // would come after: keep them before the new table, where they were.
        let mut table = Table::new();
        if let Some(trailing) = doc.trailing().as_str()
            && !trailing.is_empty()
        {
            let mut prefix = trailing.to_string();
            if !prefix.ends_with('\n') {
                prefix.push('\n');
            }
            table.decor_mut().set_prefix(prefix);
            doc.set_trailing("");
        }
        doc.insert("policy", Item::Table(table));
    }
    let policy = doc
        .entry("policy")
        .or_insert_with(|| Item::Table(Table::new()));
    let Some(policy) = policy.as_table_like_mut() else {
        return Err(format!(
            "cannot add the rule: `policy` in {shown} is a {}, not a table; the file is left as \
             it was",
            policy.type_name()
        ));
    };
    let list = policy
        .entry(name)
        .or_insert(Item::Value(Value::Array(Array::new())));
    let type_name = list.type_name();
    let Some(list) = list.as_array_mut() else {
        return Err(format!(
            "cannot add the rule: `policy.{name}` in {shown} is a {type_name}, not a list of \
             strings; the file is left as it was"
        ));
    };
    let same = |v: &Value| {
        v.as_str()
            .is_some_and(|s| s.split_whitespace().collect::<Vec<_>>().join(" ") == prefix)
    };
    if list.iter().any(same) {
        return Ok((Added::AlreadyThere, text.unwrap_or_default()));
    }
    push_keeping_layout(list, &prefix);
    let new_text = doc.to_string();
    write_atomic(&target, &new_text)?;
    Ok((Added::Saved, new_text))
}

/// Appends a string to an array in its layout: in a list written one entry per line, the
/// new entry gets its own line with the same indent, and a comment after the last entry
/// stays on that entry's line.
fn push_keeping_layout(list: &mut Array, text: &str) {
    let last_prefix = list
        .iter()
        .last()
        .and_then(|v| v.decor().prefix())
        .and_then(|p| p.as_str())
        .filter(|p| p.contains('\n'))
        .map(str::to_string);
    let Some(last_prefix) = last_prefix else {
        list.push(text);
        return;
    };
    let indent = last_prefix.rsplit('\n').next().unwrap_or("").to_string();
    let mut trailing = list.trailing().as_str().unwrap_or("").to_string();
    if !list.trailing_comma() {
        // Without a trailing comma, the line break after the last entry is its suffix.
        let last = list.len().saturating_sub(1);
        if let Some(v) = list.get_mut(last) {
            let suffix = v
                .decor()
                .suffix()
                .and_then(|s| s.as_str())
                .unwrap_or("")
                .to_string();
            trailing = format!("{suffix}{trailing}");
            v.decor_mut().set_suffix("");
        }
    }
    let (head, tail) = match trailing.rfind('\n') {
        Some(i) => (trailing[..=i].to_string(), trailing[i + 1..].to_string()),
        None => ("\n".to_string(), trailing.clone()),
    };
    let mut value = Value::from(text);
    value.decor_mut().set_prefix(format!("{head}{indent}"));
    value.decor_mut().set_suffix("");
    list.push_formatted(value);
    list.set_trailing(format!("\n{tail}"));
    list.set_trailing_comma(true);
}

/// Writes `text` to `path` through a temp file in the same directory and a rename, so
/// that a reader sees the old file or the new one, never half of one. An existing file
/// keeps its mode; a new one is 0600, in a directory created 0700 when absent.
pub(crate) fn write_atomic(path: &Path, text: &str) -> Result<(), String> {
    let shown = crate::safe_text::visible(&path.display().to_string());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| format!("cannot create the directory for {shown}: {e}"))?;
    }
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    let mut tmp = tempfile::Builder::new()
        .prefix(".oi-tui-")
        .suffix(".tmp")
        .tempfile_in(&dir)
        .map_err(|e| format!("cannot write {shown}: {e}"))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .and_then(|()| std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode)))
        .map_err(|e| format!("cannot write {shown}: {e}"))?;
    tmp.persist(path)
        .map_err(|e| format!("cannot write {shown}: {}", e.error))?;
    Ok(())
}

/// 1-based line and column of a byte offset.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const COMMENTED: &str = "# my settings\nmodel = \"ollama/llama3\" # the local one\n\n\
        [policy]\n# safe things\nallow = [\"ls\", \"git status\"] # reviewed\ndeny = [\"rm -rf /\"]\n\n\
        [profiles.work]\nmodel = \"openai/gpt-4o\"\n";

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn appends_and_keeps_every_comment_and_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, COMMENTED).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        assert_eq!(
            add_rule(&path, Decision::Allow, "cargo  test").unwrap(),
            Added::Saved
        );
        let after = std::fs::read_to_string(&path).unwrap();
        let expected = COMMENTED.replace(
            "allow = [\"ls\", \"git status\"]",
            "allow = [\"ls\", \"git status\", \"cargo test\"]",
        );
        assert_eq!(after, expected);
        assert_eq!(mode(&path), 0o640);
        assert_eq!(
            add_rule(&path, Decision::Allow, "cargo test").unwrap(),
            Added::AlreadyThere
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
        // A list that is absent is added to the existing section.
        add_rule(&path, Decision::Ask, "git commit").unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.contains("ask = [\"git commit\"]"), "{after}");
        assert!(after.starts_with("# my settings\n"));
        assert!(after.contains("# the local one") && after.contains("[profiles.work]"));
        let parsed: toml::Table = toml::from_str(&after).unwrap();
        assert_eq!(parsed["policy"]["ask"][0].as_str(), Some("git commit"));
    }

    #[test]
    fn a_list_written_one_per_line_gets_one_more_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for (before, after) in [
            (
                "[policy]\nallow = [\n    \"pwd\", # here\n]\n",
                "[policy]\nallow = [\n    \"pwd\", # here\n    \"ls\",\n]\n",
            ),
            (
                "[policy]\nallow = [\n  \"pwd\"\n]\n",
                "[policy]\nallow = [\n  \"pwd\",\n  \"ls\",\n]\n",
            ),
            ("[policy]\nallow = []\n", "[policy]\nallow = [\"ls\"]\n"),
        ] {
            std::fs::write(&path, before).unwrap();
            add_rule(&path, Decision::Allow, "ls").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), after);
        }
    }

    #[test]
    fn creates_the_file_and_its_directory_privately() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/oi-tui/config.toml");
        assert_eq!(
            add_rule(&path, Decision::Deny, "git push").unwrap(),
            Added::Saved
        );
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let parsed: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(parsed["policy"]["deny"][0].as_str(), Some("git push"));
        // No temp file is left behind.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("config.toml")]);
    }

    #[test]
    fn bad_files_and_bad_rules_are_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for (text, want) in [
            ("model = \"x\"\n[policy\nallow = []\n", "line 2, column"),
            ("policy = 3\n", "`policy`"),
            ("[policy]\nallow = \"ls\"\n", "`policy.allow`"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = add_rule(&path, Decision::Allow, "ls").unwrap_err();
            assert!(err.contains(want), "{err}");
            assert!(err.contains("config.toml"), "{err}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        }
        std::fs::write(&path, "[policy]\n").unwrap();
        let err = add_rule(&path, Decision::Allow, "rm -rf *").unwrap_err();
        assert!(err.contains("shell syntax"), "{err}");
        let err = add_rule(&path, Decision::Allow, "   ").unwrap_err();
        assert!(err.contains("is empty"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "[policy]\n");
    }

    #[test]
    fn an_inline_policy_table_is_edited_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "policy = { allow = [\"ls\"] } # inline\n").unwrap();
        add_rule(&path, Decision::Allow, "pwd").unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.contains("# inline"), "{after}");
        let parsed: toml::Table = toml::from_str(&after).unwrap();
        assert_eq!(parsed["policy"]["allow"][1].as_str(), Some("pwd"));
    }

    #[test]
    fn project_rules_are_added_only_to_a_trusted_file_and_stay_trusted() {
        let root = tempfile::tempdir().unwrap();
        let (cwd, data) = (root.path().join("p"), root.path().join("d"));
        std::fs::create_dir(&cwd).unwrap();
        let file = cwd.join(project_rules::PROJECT_FILE);
        let state = || {
            let f = project_rules::read_file(&file).unwrap();
            project_rules::trust_state(&data, &f).unwrap()
        };
        // Absent: created, and trusted (the user's own rule).
        assert_eq!(
            add_project_rule(&cwd, &data, Decision::Allow, "ls"),
            Ok(Added::Saved)
        );
        assert_eq!(state(), TrustState::Trusted);
        assert_eq!(
            add_project_rule(&cwd, &data, Decision::Deny, "git push"),
            Ok(Added::Saved)
        );
        assert_eq!(state(), TrustState::Trusted);
        // Changed by someone else: refused, and the file is left as it is.
        let text = "[policy]\nallow = [\"ls\", \"rm\"]\n";
        std::fs::write(&file, text).unwrap();
        let err = add_project_rule(&cwd, &data, Decision::Allow, "pwd").unwrap_err();
        assert!(err.contains("changed since you trusted them"), "{err}");
        assert!(err.contains("oi-tui trust"), "{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
        assert_eq!(state(), TrustState::Changed);
        // A file with no rules holds nothing to trust unknowingly.
        std::fs::write(&file, "# rules go here\n").unwrap();
        assert_eq!(
            add_project_rule(&cwd, &data, Decision::Allow, "pwd"),
            Ok(Added::Saved)
        );
        assert_eq!(state(), TrustState::Trusted);
    }

    #[test]
    fn a_symlinked_config_is_edited_where_it_points() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles-config.toml");
        std::fs::write(&real, "# mine\n").unwrap();
        let link = dir.path().join("config.toml");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        add_rule(&link, Decision::Allow, "ls").unwrap();
        assert_eq!(
            std::fs::read_to_string(&real).unwrap(),
            "# mine\n[policy]\nallow = [\"ls\"]\n"
        );
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            std::fs::read_to_string(&real)
                .unwrap()
                .starts_with("# mine\n")
        );
    }
}
