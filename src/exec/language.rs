//! Where each language's interpreter is found, and the kernel facts about a language.

pub use crate::protocol::Language;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Kernel facts about a language.
impl Language {
    /// The file extension used for the block files handed to the driver.
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Language::Python => "py",
            Language::Shell => "sh",
            Language::JavaScript => "js",
            Language::R => "R",
            Language::Ruby => "rb",
            Language::Perl => "pl",
            Language::Java => "jsh",
            Language::PowerShell => "ps1",
            Language::Html => "html",
        }
    }

    /// Where this language's interpreter is, on this process's `PATH`.
    pub fn locate(self) -> Option<PathBuf> {
        let path = std::env::var_os("PATH");
        let shell = std::env::var_os("SHELL");
        find_interpreter(self, path.as_deref(), shell.as_deref()).map(|i| i.program)
    }
}

/// A resolved interpreter: the program and the arguments that come before the driver path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interpreter {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// Finds the interpreter for `lang`, searching `path_var` (a `PATH`-style list).
/// `shell_var` is the user's `$SHELL`, honoured when it names bash or zsh.
pub(crate) fn find_interpreter(
    lang: Language,
    path_var: Option<&std::ffi::OsStr>,
    shell_var: Option<&std::ffi::OsStr>,
) -> Option<Interpreter> {
    let plain = |program: PathBuf, args: &[&str]| Interpreter {
        program,
        args: args.iter().map(OsString::from).collect(),
    };
    match lang {
        Language::Python => which("python3", path_var)
            .or_else(|| which("python", path_var))
            .map(|p| plain(p, &["-u"])),
        Language::Shell => {
            let user_shell = shell_var.map(PathBuf::from).and_then(|s| {
                let base = s.file_name()?.to_str()?.to_owned();
                let resolved = if s.is_absolute() {
                    is_executable(&s).then_some(s)
                } else {
                    which(&base, path_var)
                }?;
                Some((base, resolved))
            });
            match user_shell {
                Some((base, path)) if base == "zsh" => Some(plain(path, &["-f"])),
                Some((base, path)) if base == "bash" => {
                    Some(plain(path, &["--noprofile", "--norc"]))
                }
                _ => which("bash", path_var).map(|p| plain(p, &["--noprofile", "--norc"])),
            }
        }
        Language::JavaScript => which("node", path_var)
            .or_else(|| which("nodejs", path_var))
            .map(|p| plain(p, &[])),
        Language::R => which("Rscript", path_var).map(|p| plain(p, &["--no-save"])),
        Language::Ruby => which("ruby", path_var).map(|p| plain(p, &[])),
        Language::Perl => which("perl", path_var).map(|p| plain(p, &[])),
        Language::Java => {
            // jshell marks a JDK (a JRE has `java` alone); the driver uses the JShell API
            // through the `java` launcher that sits beside it.
            let jshell = which("jshell", path_var)?;
            let real = std::fs::canonicalize(&jshell).unwrap_or(jshell);
            let java = real.parent().map(|dir| dir.join("java"))?;
            is_executable(&java).then(|| plain(java, &["--add-modules", "jdk.jshell"]))
        }
        Language::PowerShell => which("pwsh", path_var)
            .map(|p| plain(p, &["-NoLogo", "-NoProfile", "-NonInteractive", "-File"])),
        Language::Html => None,
    }
}

/// Looks `program` up in a `PATH`-style list, like the shell does.
pub(crate) fn which(program: &str, path_var: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_aliases_case_insensitively() {
        assert_eq!(Language::parse("Python"), Some(Language::Python));
        assert_eq!(Language::parse(" PY3 "), None);
        assert_eq!(Language::parse("python3"), Some(Language::Python));
        assert_eq!(Language::parse("ZSH"), Some(Language::Shell));
        assert_eq!(Language::parse("Node"), Some(Language::JavaScript));
        assert_eq!(Language::parse("r"), Some(Language::R));
        assert_eq!(Language::parse("RB"), Some(Language::Ruby));
        assert_eq!(Language::parse("pl"), Some(Language::Perl));
        assert_eq!(Language::parse("Java"), Some(Language::Java));
        assert_eq!(Language::parse("ps1"), Some(Language::PowerShell));
        assert_eq!(Language::parse("HTML"), Some(Language::Html));
        assert_eq!(Language::parse("cobol"), None);
    }

    #[test]
    fn every_name_round_trips() {
        for lang in Language::ALL {
            assert_eq!(Language::parse(lang.name()), Some(lang));
            for alias in lang.aliases() {
                assert_eq!(Language::parse(alias), Some(lang), "{alias}");
            }
        }
    }

    #[test]
    fn which_finds_nothing_on_an_empty_path() {
        assert_eq!(which("sh", Some(std::ffi::OsStr::new(""))), None);
        assert_eq!(which("sh", None), None);
    }
}
