//! The `languages` tool's answer: each language oi-tui knows, whether it can run here, where
//! its interpreter is and its version (asked once, with a short timeout, then kept).

use std::time::Duration;

use rmcp::schemars::JsonSchema;
use serde::Serialize;
use tokio::sync::OnceCell;

use crate::exec::remote::SshTarget;
use crate::exec::{Executor, KernelConfig, Kernels};
use crate::protocol::Language;

/// One language as `languages` reports it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct LanguageInfo {
    /// The name to pass as `execute`'s `language`.
    pub name: String,
    /// Other names accepted for it.
    pub aliases: Vec<String>,
    /// Whether code in it can run here now.
    pub available: bool,
    /// The interpreter found, when one was.
    pub path: Option<String>,
    /// The interpreter's version line, when it gave one in time.
    pub version: Option<String>,
    /// How to install it when missing, or how it is handled (written to a file).
    pub note: Option<String>,
}

/// The structured content of `languages`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct LanguagesOutput {
    pub languages: Vec<LanguageInfo>,
}

static KNOWN: OnceCell<Vec<LanguageInfo>> = OnceCell::const_new();

/// The languages, found once per process.
pub async fn languages() -> &'static [LanguageInfo] {
    KNOWN.get_or_init(find).await
}

static THERE: OnceCell<Vec<LanguageInfo>> = OnceCell::const_new();

/// The languages on the host the kernels run on, found once per process over a connection
/// of its own (closed again): what its interpreters are, by the same search a kernel makes
/// there. Err: the host cannot be reached (not kept: asked again next time).
pub async fn on_host(target: &SshTarget) -> Result<&'static [LanguageInfo], String> {
    THERE
        .get_or_try_init(|| async {
            let kernels = Kernels::new(KernelConfig {
                executor: Executor::Ssh(target.clone()),
                ..KernelConfig::default()
            });
            let connected = kernels.connect().await;
            let found = connected.map(|link| {
                Language::ALL
                    .into_iter()
                    .map(|lang| there(&link, lang))
                    .collect::<Vec<_>>()
            });
            kernels.shutdown().await;
            found
        })
        .await
        .map(Vec::as_slice)
}

fn there(link: &crate::exec::remote::Link, lang: Language) -> LanguageInfo {
    let aliases = lang.aliases().iter().map(|a| a.to_string()).collect();
    if !lang.runs_in_kernel() {
        return written(lang, aliases);
    }
    let found = crate::exec::remote::run_line(link, lang, &[]);
    LanguageInfo {
        name: lang.name().to_string(),
        aliases,
        available: found.is_ok(),
        path: found.as_ref().ok().map(|(program, _)| program.clone()),
        version: None,
        // (Its error is a sentence naming the host, as a kernel that cannot start says.)
        note: found.err(),
    }
}

async fn find() -> Vec<LanguageInfo> {
    let mut pending = Vec::new();
    for lang in Language::ALL {
        pending.push(tokio::spawn(async move { info(lang).await }));
    }
    let mut out = Vec::new();
    for task in pending {
        if let Ok(info) = task.await {
            out.push(info);
        }
    }
    out
}

/// A language whose blocks are written to a file (here), not run.
fn written(lang: Language, aliases: Vec<String>) -> LanguageInfo {
    LanguageInfo {
        name: lang.name().to_string(),
        aliases,
        available: true,
        path: None,
        version: None,
        note: Some("written to a file, not run".to_string()),
    }
}

async fn info(lang: Language) -> LanguageInfo {
    let aliases = lang.aliases().iter().map(|a| a.to_string()).collect();
    if !lang.runs_in_kernel() {
        return written(lang, aliases);
    }
    let path = lang.locate();
    let version = match &path {
        Some(path) => version(path).await,
        None => None,
    };
    LanguageInfo {
        name: lang.name().to_string(),
        aliases,
        available: path.is_some(),
        path: path.as_ref().map(|p| p.display().to_string()),
        version,
        note: path
            .is_none()
            .then(|| format!("missing: {}", lang.install_hint())),
    }
}

/// The first line `PROGRAM --version` prints, within two seconds.
async fn version(path: &std::path::Path) -> Option<String> {
    let mut command = tokio::process::Command::new(path);
    command
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(2), command.output())
        .await
        .ok()?
        .ok()?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| crate::safe_text::visible_line(&l.chars().take(120).collect::<String>()))
}

/// The text form: one line per language.
pub fn text(languages: &[LanguageInfo]) -> String {
    let mut out = String::new();
    for l in languages {
        let what = match (&l.version, &l.path, &l.note) {
            (Some(v), _, _) => v.clone(),
            (None, Some(p), _) => p.clone(),
            (None, None, Some(n)) => n.clone(),
            _ => String::new(),
        };
        out.push_str(&format!(
            "{:<11} {}{}\n",
            l.name,
            if l.available { "" } else { "(unavailable) " },
            what
        ));
    }
    out
}
