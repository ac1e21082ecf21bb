//! Where kernels run: `[executors.NAME]` tables (a host over SSH, its working directory,
//! variables and interpreters there), and `on = NAME|HOST|local` (`--on`), which picks one.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::exec::remote::SshTarget;
use crate::exec::{Executor, Language};

/// One `[executors.NAME]` table.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorFile {
    /// What `ssh` is given: an alias of `~/.ssh/config`, `user@host`, `host:port`.
    pub host: Option<String>,
    /// The kernels' working directory there (default: the remote home).
    pub workdir: Option<String>,
    /// Variables set for the kernels there.
    pub env: Option<BTreeMap<String, String>>,
    /// Interpreters there, by language (`python = "/opt/conda/bin/python"`).
    pub interpreters: Option<BTreeMap<String, String>>,
    /// More arguments for `ssh` (`["-J", "bastion"]`).
    pub ssh_options: Option<Vec<String>>,
    /// Seconds connecting may take (default 15).
    pub connect_timeout: Option<f64>,
}

/// The executors the layers define, by name (a later layer's table replaces an earlier one
/// of the same name). Errors name the table and say what is wrong.
pub fn parse(
    tables: &[&BTreeMap<String, ExecutorFile>],
) -> Result<BTreeMap<String, SshTarget>, String> {
    let mut out = BTreeMap::new();
    for table in tables {
        for (name, file) in *table {
            out.insert(name.clone(), target(name, file)?);
        }
    }
    Ok(out)
}

fn target(name: &str, file: &ExecutorFile) -> Result<SshTarget, String> {
    let at = format!("[executors.{name}]");
    if name == "local" {
        return Err(format!(
            "{at}: `local` is this machine's name and cannot be an executor's"
        ));
    }
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{at}: an executor's name cannot hold spaces"));
    }
    let host = file
        .host
        .as_deref()
        .ok_or_else(|| format!("{at} needs `host = \"...\"` (what you would give ssh)"))?;
    let mut target = SshTarget::from_host(host).map_err(|e| format!("{at} host: {e}"))?;
    target.name = name.to_string();
    target.workdir = file.workdir.clone().filter(|w| !w.trim().is_empty());
    for (key, value) in file.env.iter().flatten() {
        if !crate::exec::remote::is_name(key) {
            return Err(format!("{at} env: `{key}` is not a variable name"));
        }
        target.env.push((key.clone(), value.clone()));
    }
    for (language, program) in file.interpreters.iter().flatten() {
        let lang = Language::parse(language)
            .filter(|l| l.runs_in_kernel())
            .ok_or_else(|| {
                format!("{at} interpreters: `{language}` is not a language oi-tui runs")
            })?;
        if program.trim().is_empty() {
            return Err(format!("{at} interpreters: {language} names no program"));
        }
        target.interpreters.push((lang, program.clone()));
    }
    target.ssh_options = file.ssh_options.clone().unwrap_or_default();
    if let Some(secs) = file.connect_timeout {
        if !(secs.is_finite() && secs > 0.0 && secs <= 600.0) {
            return Err(format!(
                "{at} connect_timeout: {secs} is not a number of seconds from 0 to 600"
            ));
        }
        target.connect_timeout = Duration::from_secs_f64(secs);
    }
    Ok(target)
}

/// The executor `on` names: `local`, a configured executor, or a host for `ssh`.
pub fn resolve(
    on: Option<&str>,
    executors: &BTreeMap<String, SshTarget>,
) -> Result<Executor, String> {
    let Some(on) = on.map(str::trim).filter(|o| !o.is_empty()) else {
        return Ok(Executor::Local);
    };
    if on == "local" {
        return Ok(Executor::Local);
    }
    if let Some(target) = executors.get(on) {
        return Ok(Executor::Ssh(target.clone()));
    }
    SshTarget::from_host(on).map(Executor::Ssh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> BTreeMap<String, ExecutorFile> {
        #[derive(Deserialize)]
        struct File {
            executors: BTreeMap<String, ExecutorFile>,
        }
        toml::from_str::<File>(text).unwrap().executors
    }

    #[test]
    fn a_table_becomes_a_target_by_its_name() {
        let t = table(
            r#"[executors.gpu]
host = "me@gpu-box:2222"
workdir = "/data/work"
env = { CUDA_VISIBLE_DEVICES = "0" }
interpreters = { python = "/opt/conda/bin/python" }
ssh_options = ["-J", "bastion"]
"#,
        );
        let all = parse(&[&t]).unwrap();
        let gpu = &all["gpu"];
        assert_eq!(gpu.name, "gpu");
        assert_eq!(gpu.host, "ssh://me@gpu-box:2222");
        assert_eq!(gpu.workdir.as_deref(), Some("/data/work"));
        assert_eq!(gpu.env, vec![("CUDA_VISIBLE_DEVICES".into(), "0".into())]);
        assert_eq!(
            gpu.interpreters,
            vec![(Language::Python, "/opt/conda/bin/python".into())]
        );
        assert_eq!(gpu.ssh_options, vec!["-J", "bastion"]);
        assert_eq!(
            resolve(Some("gpu"), &all).unwrap(),
            Executor::Ssh(gpu.clone())
        );
        assert_eq!(resolve(Some("local"), &all).unwrap(), Executor::Local);
        assert_eq!(resolve(None, &all).unwrap(), Executor::Local);
        let Executor::Ssh(other) = resolve(Some("other-host"), &all).unwrap() else {
            panic!("a host")
        };
        assert_eq!(other.host, "other-host");
    }

    #[test]
    fn bad_tables_say_what_is_wrong() {
        let cases = [
            ("[executors.a]\nworkdir = \"/x\"\n", "needs `host"),
            (
                "[executors.a]\nhost = \"-oProxyCommand=x\"\n",
                "starts with a dash",
            ),
            (
                "[executors.a]\nhost = \"h\"\nenv = { \"A-B\" = \"1\" }\n",
                "not a variable name",
            ),
            (
                "[executors.a]\nhost = \"h\"\ninterpreters = { cobol = \"/x\" }\n",
                "not a language",
            ),
            (
                "[executors.a]\nhost = \"h\"\nconnect_timeout = -1\n",
                "connect_timeout",
            ),
            ("[executors.local]\nhost = \"h\"\n", "this machine's name"),
        ];
        for (text, expected) in cases {
            let err = parse(&[&table(text)]).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.starts_with("[executors."), "{err}");
        }
        assert!(resolve(Some("-x"), &BTreeMap::new()).is_err());
    }
}
