//! What oi-tui learns about models and keeps across runs: which ones rejected tools, so that
//! they start in fenced-block mode next time instead of failing first, and which ones took
//! or refused images (for `--vision auto`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::llm::ModelSpec;

const FILE: &str = "tool-fallbacks.json";
/// Model -> whether its server took images (true) or refused them (false).
const VISION_FILE: &str = "vision.json";

pub struct Memory {
    path: Option<PathBuf>,
    rejecting: BTreeSet<String>,
    vision_path: Option<PathBuf>,
    vision: BTreeMap<String, bool>,
}

fn key(spec: &ModelSpec, api_base: &str) -> String {
    format!("{spec} @ {}", api_base.trim_end_matches('/'))
}

impl Memory {
    /// Reads what was learnt before from `data_dir`; a missing or unreadable file is an
    /// empty memory.
    pub fn new(data_dir: Option<&Path>) -> Memory {
        let path = data_dir.map(|d| d.join(FILE));
        let rejecting = path
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let vision_path = data_dir.map(|d| d.join(VISION_FILE));
        let vision = vision_path
            .as_deref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        Memory {
            path,
            rejecting,
            vision_path,
            vision,
        }
    }

    /// Whether the model's server took images before (Some(true)), refused them
    /// (Some(false)), or was never sent any (None).
    pub fn takes_images(&self, spec: &ModelSpec, api_base: &str) -> Option<bool> {
        self.vision.get(&key(spec, api_base)).copied()
    }

    /// Records whether the model's server takes images. Returns an error sentence if it
    /// could not be saved; saves nothing when it was known already.
    pub fn remember_takes_images(
        &mut self,
        spec: &ModelSpec,
        api_base: &str,
        takes: bool,
    ) -> Result<(), String> {
        if self.vision.insert(key(spec, api_base), takes) == Some(takes) {
            return Ok(());
        }
        let Some(path) = &self.vision_path else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(&self.vision).map_err(|e| e.to_string())?;
        save(path, &text)
    }

    pub fn rejects_tools(&self, spec: &ModelSpec, api_base: &str) -> bool {
        self.rejecting.contains(&key(spec, api_base))
    }

    /// Records that the model rejected tools. Returns an error sentence if it could not be
    /// saved (the fallback still holds for this run).
    pub fn remember_rejects_tools(
        &mut self,
        spec: &ModelSpec,
        api_base: &str,
    ) -> Result<(), String> {
        self.rejecting.insert(key(spec, api_base));
        let Some(path) = &self.path else {
            return Ok(());
        };
        let text = serde_json::to_string_pretty(&self.rejecting).map_err(|e| e.to_string())?;
        save(path, &text)
    }
}

/// Writes `text` to `path` whole (through a temporary file), or says why not.
fn save(path: &Path, text: &str) -> Result<(), String> {
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(|e| format!("could not save {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_across_instances() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ModelSpec::parse("ollama/tiny").unwrap();
        let mut m = Memory::new(Some(dir.path()));
        assert!(!m.rejects_tools(&spec, "http://h:1"));
        m.remember_rejects_tools(&spec, "http://h:1/").unwrap();
        let again = Memory::new(Some(dir.path()));
        assert!(again.rejects_tools(&spec, "http://h:1"));
        assert!(!again.rejects_tools(&spec, "http://other:1"));
    }

    #[test]
    fn remembers_what_took_or_refused_images() {
        let dir = tempfile::tempdir().unwrap();
        let spec = ModelSpec::parse("ollama/tiny").unwrap();
        let other = ModelSpec::parse("ollama/llava").unwrap();
        let mut m = Memory::new(Some(dir.path()));
        assert_eq!(m.takes_images(&spec, "http://h:1"), None);
        m.remember_takes_images(&spec, "http://h:1", false).unwrap();
        m.remember_takes_images(&other, "http://h:1", true).unwrap();
        let again = Memory::new(Some(dir.path()));
        assert_eq!(again.takes_images(&spec, "http://h:1/"), Some(false));
        assert_eq!(again.takes_images(&other, "http://h:1"), Some(true));
        assert_eq!(again.takes_images(&other, "http://h:2"), None);
    }
}
