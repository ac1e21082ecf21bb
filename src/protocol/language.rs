//! The languages a block can be written in: their names and aliases, as the engine, the
//! faces and the store speak of them. Where each interpreter is found is `exec`'s business.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A language a block can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    Shell,
    JavaScript,
    R,
    Ruby,
    Perl,
    Java,
    PowerShell,
    Html,
}

impl Language {
    /// Every language, in the order they are listed to the user and the model.
    pub const ALL: [Language; 9] = [
        Language::Python,
        Language::Shell,
        Language::JavaScript,
        Language::R,
        Language::Ruby,
        Language::Perl,
        Language::Java,
        Language::PowerShell,
        Language::Html,
    ];

    /// The canonical name, as used in tool schemas and in results.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Shell => "shell",
            Language::JavaScript => "javascript",
            Language::R => "r",
            Language::Ruby => "ruby",
            Language::Perl => "perl",
            Language::Java => "java",
            Language::PowerShell => "powershell",
            Language::Html => "html",
        }
    }

    /// Other names the language is known by (fence tags, file extensions).
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Language::Python => &["py", "python3"],
            Language::Shell => &["bash", "sh", "zsh", "shell-session", "console"],
            Language::JavaScript => &["js", "node", "nodejs"],
            Language::R => &["rscript"],
            Language::Ruby => &["rb"],
            Language::Perl => &["pl"],
            Language::Java => &["jshell"],
            Language::PowerShell => &["pwsh", "ps1", "ps"],
            Language::Html => &["htm"],
        }
    }

    /// Parses a language name or alias, ignoring case and surrounding space.
    pub fn parse(name: &str) -> Option<Language> {
        let name = name.trim();
        Language::ALL.into_iter().find(|lang| {
            lang.name().eq_ignore_ascii_case(name)
                || lang.aliases().iter().any(|a| a.eq_ignore_ascii_case(name))
        })
    }

    /// The program looked for on `PATH`, as named to the user when it is missing.
    pub fn program_label(self) -> &'static str {
        match self {
            Language::Python => "python3",
            Language::Shell => "bash",
            Language::JavaScript => "node",
            Language::R => "Rscript",
            Language::Ruby => "ruby",
            Language::Perl => "perl",
            Language::Java => "jshell",
            Language::PowerShell => "pwsh",
            Language::Html => "(none)",
        }
    }

    /// How to install the interpreter, in one sentence.
    pub fn install_hint(self) -> &'static str {
        match self {
            Language::Python => {
                "install Python 3 (Debian/Ubuntu: `sudo apt install python3`; macOS: `brew install python`)"
            }
            Language::Shell => {
                "install bash (Debian/Ubuntu: `sudo apt install bash`; macOS: `brew install bash`)"
            }
            Language::JavaScript => {
                "install Node.js (Debian/Ubuntu: `sudo apt install nodejs`; macOS: `brew install node`)"
            }
            Language::R => {
                "install R (Debian/Ubuntu: `sudo apt install r-base-core`; macOS: `brew install r`)"
            }
            Language::Ruby => {
                "install Ruby (Debian/Ubuntu: `sudo apt install ruby`; macOS: `brew install ruby`)"
            }
            Language::Perl => {
                "install Perl (Debian/Ubuntu: `sudo apt install perl`; macOS: `brew install perl`)"
            }
            Language::Java => {
                "install a JDK 11 or newer, which brings jshell (Debian/Ubuntu: `sudo apt install default-jdk-headless`; macOS: `brew install openjdk`)"
            }
            Language::PowerShell => {
                "install PowerShell 7 (`pwsh`); see Microsoft's PowerShell install guide for your system"
            }
            Language::Html => "nothing to install",
        }
    }

    /// Whether blocks of this language run in a kernel (HTML is only written to a file).
    pub fn runs_in_kernel(self) -> bool {
        self != Language::Html
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
