//! The state gathered while one block is read: findings, simple commands with the rule
//! that decided each, whether anything was opaque, and the working directory the block is
//! believed to be in (for judging whether a delete lands inside the workspace).

use std::path::{Component, Path, PathBuf};

use super::rules::Rules;
use super::verdict::{Finding, RiskClass, Rule, SimpleCommand};

/// Where a piece of code sits inside the block: nested code (`bash -c '…'`, `$(…)`, a
/// string passed to `os.system`) is parsed on its own, so its line numbers are offset and
/// its quotes may not occur verbatim in the block (after unescaping); then the enclosing
/// text is quoted instead.
#[derive(Clone, Debug, Default)]
pub(crate) struct Frame {
    /// Added to a line number inside this code to get the block's line (0 at top level).
    pub line_base: usize,
    /// Nesting depth.
    pub depth: usize,
    /// The enclosing text and its line, quoted when a nested quote is not in the block.
    pub fallback: Option<(String, usize)>,
}

impl Frame {
    /// The block's line for a 1-based line inside this frame's code.
    pub fn line(&self, l: usize) -> usize {
        self.line_base + l.max(1)
    }

    /// A frame for code nested in `quoted` (at block line `line`), starting at that line.
    /// The fallback quote is always verbatim text of the block: `quoted` itself when it is
    /// (top level, or inside the enclosing fallback), else the enclosing fallback.
    pub fn nested(&self, quoted: &str, line: usize) -> Frame {
        let fallback = match &self.fallback {
            None if self.depth == 0 => Some((quoted.to_string(), line)),
            Some((q, _)) if !quoted.is_empty() && q.contains(quoted) => {
                Some((quoted.to_string(), line))
            }
            other => other.clone(),
        };
        Frame {
            line_base: line.saturating_sub(1),
            depth: self.depth + 1,
            fallback,
        }
    }
}

/// The working directory the analysis believes the block to be in.
#[derive(Clone, Debug)]
pub(crate) enum Cwd {
    Known(PathBuf),
    /// After `cd ~`, `cd $X`, `cd -`: somewhere unknown (assumed outside the workspace).
    Unknown,
}

pub(crate) struct Analysis<'a> {
    pub rules: &'a Rules,
    pub root: &'a Path,
    pub code: &'a str,
    pub findings: Vec<Finding>,
    pub commands: Vec<SimpleCommand>,
    /// Parallel to `commands`: whether that command must be allowed for the block to be.
    pub gating: Vec<bool>,
    /// Something could not be seen through: never allowed by a rule.
    pub opaque: bool,
    /// The finding that made the block opaque (the first one), for explanations.
    pub opaque_at: Option<usize>,
    /// Parallel to `commands`: the views the rules judged (the command as written and each
    /// command it runs, with whether that view must itself be allowed), for suggestions.
    /// Filled only when `keep_views` is set (suggestions), so that verdicts stay lean.
    pub views: Vec<Vec<(Vec<String>, bool)>>,
    pub keep_views: bool,
    /// The finding behind `unallowable` (the first one), for explanations.
    pub unallowable_at: Option<usize>,
    /// Functions defined in the block (their bodies are judged where they are defined).
    pub functions: std::collections::HashSet<String>,
    /// Variables set to literal values in the block (`X=rm`).
    pub vars: std::collections::HashMap<String, String>,
    /// Set by the command table when the last command classified was unknown.
    pub unknown_program: bool,
    /// Read-only commands were seen.
    pub read_only: bool,
    /// Something visible but not covered by command rules (a write redirected outside the
    /// workspace): the block asks, but it is not opaque.
    pub unallowable: bool,
    pub cwd: Cwd,
    /// Symbolic links the block made to somewhere outside the workspace (`ln -s ~ hm`):
    /// a path through one of them (`hm/x`) lies outside.
    pub links: Vec<String>,
    /// The finding of the first redirection that writes a file (`ls > f`): the command is
    /// then more than its program does, so an allow rule for the program cannot allow it.
    pub redirect_write_at: Option<usize>,
    /// The first finding about characters that hide or reorder text: never allowed.
    pub hidden_at: Option<usize>,
    /// The workspace root, normalised, when it is absolute UTF-8 text.
    root_str: Option<String>,
    /// Read shell with the full parser only (no fast reader): the reference that the
    /// fast reader is checked against.
    pub full_parser_only: bool,
}

impl<'a> Analysis<'a> {
    pub fn new(rules: &'a Rules, root: &'a Path, code: &'a str) -> Self {
        Analysis {
            rules,
            root,
            code,
            // (Sized for the block, so that long blocks do not grow them step by step.)
            findings: Vec::with_capacity(code.len() / 64),
            commands: Vec::with_capacity(code.len() / 24),
            gating: Vec::with_capacity(code.len() / 24),
            opaque: false,
            opaque_at: None,
            views: Vec::new(),
            keep_views: false,
            unallowable_at: None,
            read_only: false,
            functions: Default::default(),
            vars: Default::default(),
            unknown_program: false,
            unallowable: false,
            // (Normalised: every use of it normalises what it builds anyway.)
            cwd: Cwd::Known(normalise(root)),
            links: Vec::new(),
            redirect_write_at: None,
            hidden_at: None,
            full_parser_only: false,
            root_str: root
                .to_str()
                .filter(|r| r.starts_with('/'))
                .map(|r| normalise_str("", r)),
        }
    }

    /// Adds the findings about characters in the whole block that hide or reorder text
    /// (after the rest is read: the earlier findings keep their places).
    pub fn hidden_text(&mut self) {
        let found = super::hidden::findings(self.code);
        if !found.is_empty() {
            self.hidden_at = Some(self.findings.len());
            self.findings.extend(found);
        }
    }

    /// Makes sure a quote is text of the block: nested code quotes its enclosing text
    /// when its own text does not occur verbatim there (it was unescaped on the way).
    fn fix_quote(&self, quoted: &str, line: usize, frame: &Frame) -> (String, usize) {
        match &frame.fallback {
            None if frame.depth == 0 => (quoted.to_string(), line),
            Some((q, _)) if !quoted.is_empty() && q.contains(quoted) => (quoted.to_string(), line),
            Some((q, l)) => (q.clone(), *l),
            None => {
                let l = self
                    .code
                    .lines()
                    .nth(line.saturating_sub(1))
                    .map(str::trim)
                    .unwrap_or("");
                (l.to_string(), line)
            }
        }
    }

    pub fn finding(
        &mut self,
        class: RiskClass,
        expl: &str,
        quoted: &str,
        line: usize,
        frame: &Frame,
    ) {
        let (quoted, line) = self.fix_quote(quoted, line, frame);
        self.findings.push(Finding {
            class,
            explanation: expl.to_string(),
            quoted,
            line,
        });
    }

    /// Something the policy cannot see through: cannot tell, and never allowed by rules.
    pub fn opaque(&mut self, expl: &str, quoted: &str, line: usize, frame: &Frame) {
        self.opaque = true;
        self.opaque_at.get_or_insert(self.findings.len());
        self.finding(RiskClass::CannotTell, expl, quoted, line, frame);
    }

    /// Records a simple command and the rule decision for it (the quote is taken by
    /// value: no copy when it is block text as is).
    pub fn command(
        &mut self,
        words: Vec<String>,
        quoted: String,
        line: usize,
        frame: &Frame,
        rule: Option<Rule>,
        gating: bool,
    ) {
        let verbatim = match &frame.fallback {
            None => frame.depth == 0,
            Some((q, _)) => !quoted.is_empty() && q.contains(quoted.as_str()),
        };
        let (quoted, line) = if verbatim {
            (quoted, line)
        } else {
            self.fix_quote(&quoted, line, frame)
        };
        self.commands.push(SimpleCommand {
            words,
            quoted,
            line,
            rule,
        });
        self.gating.push(gating);
    }

    /// Whether a path (as the shell would see it) lies strictly inside the workspace.
    /// Paths known only at run time, home directories and anything relative to an
    /// unknown directory are outside.
    pub fn inside_workspace(&self, text: &str, dynamic: bool, tilde: bool) -> bool {
        self.within(text, dynamic, tilde, false)
    }

    /// Like `inside_workspace`, but the workspace root itself counts (for `find ROOT
    /// -delete`, which deletes what is under its start path).
    pub fn within(&self, text: &str, dynamic: bool, tilde: bool, root_ok: bool) -> bool {
        if dynamic || tilde {
            return false;
        }
        if !self.links.is_empty() {
            let t = text.trim_start_matches("./");
            if self.links.iter().any(|l| {
                t.strip_prefix(l.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            }) {
                return false;
            }
        }
        // The same lexical rule on strings, without building paths (the common case).
        if let Some(root) = &self.root_str {
            // A relative path without `.` or `..` lies one or more levels below the
            // current directory: inside exactly when that directory is the root or
            // inside it.
            if let (Cwd::Known(c), true) = (&self.cwd, plain_relative(text))
                && let Some(c) = c.to_str()
            {
                return c == root
                    || (c.starts_with(root.as_str())
                        && (root.ends_with('/') || c.as_bytes().get(root.len()) == Some(&b'/')));
            }
            let base = if text.starts_with('/') {
                Some("")
            } else {
                match &self.cwd {
                    Cwd::Known(c) => c.to_str(),
                    Cwd::Unknown => return false,
                }
            };
            if let Some(base) = base {
                let norm = normalise_str(base, text);
                return if norm.len() == root.len() {
                    root_ok && norm == *root
                } else {
                    norm.starts_with(root.as_str())
                        && (root.ends_with('/') || norm.as_bytes().get(root.len()) == Some(&b'/'))
                };
            }
        }
        let p = Path::new(text);
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            match &self.cwd {
                Cwd::Known(c) => c.join(p),
                Cwd::Unknown => return false,
            }
        };
        let norm = normalise(&full);
        (root_ok || norm != normalise(self.root)) && norm.starts_with(normalise(self.root))
    }

    /// Follows a `cd`.
    pub fn change_dir(&mut self, target: Option<(&str, bool, bool)>) {
        if let (Some((t, false, false)), Cwd::Known(c)) = (target, &self.cwd)
            && t != "-"
            && let Some(c) = c.to_str()
            && (c.starts_with('/') || t.starts_with('/'))
        {
            // `cd sub`: one level down, nothing to normalise.
            let simple = plain_relative(t) && !t.contains("//") && !t.ends_with('/');
            let next = if simple && c.starts_with('/') {
                let mut n = String::with_capacity(c.len() + 1 + t.len());
                n.push_str(c);
                if !c.ends_with('/') {
                    n.push('/');
                }
                n.push_str(t);
                n
            } else {
                normalise_str(c, t)
            };
            self.cwd = Cwd::Known(PathBuf::from(next));
            return;
        }
        self.cwd = match target {
            Some((t, false, false)) if t != "-" => {
                let p = Path::new(t);
                if p.is_absolute() {
                    Cwd::Known(normalise(p))
                } else {
                    match &self.cwd {
                        Cwd::Known(c) => Cwd::Known(normalise(&c.join(p))),
                        Cwd::Unknown => Cwd::Unknown,
                    }
                }
            }
            _ => Cwd::Unknown,
        };
    }
}

/// Lexical normalisation: drops `.`, resolves `..` (never above the root).
pub(crate) fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A relative path with at least one component and none that is `.` or `..`.
fn plain_relative(t: &str) -> bool {
    if t.starts_with('/') {
        return false;
    }
    let mut named = false;
    for c in t.split('/') {
        match c {
            "." | ".." => return false,
            "" => {}
            _ => named = true,
        }
    }
    named
}

/// `normalise(base.join(rel))` on UTF-8 text (`rel` replaces `base` when absolute), in
/// the form `Path` would print: `/a/b`, `/`, `a/b`, or empty.
pub(crate) fn normalise_str(base: &str, rel: &str) -> String {
    let absolute = if rel.starts_with('/') {
        true
    } else {
        base.starts_with('/')
    };
    let base = if rel.starts_with('/') { "" } else { base };
    // Components are appended to `out` as they come; `..` cuts back to the last `/`.
    let mut out = String::with_capacity(base.len() + rel.len() + 1);
    if absolute {
        out.push('/');
    }
    let floor = out.len();
    for c in base.split('/').chain(rel.split('/')) {
        match c {
            "" | "." => {}
            ".." => {
                let cut = out[floor..].rfind('/').map(|k| floor + k).unwrap_or(floor);
                out.truncate(cut);
            }
            c => {
                if out.len() > floor {
                    out.push('/');
                }
                out.push_str(c);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_containment_is_lexical_and_strict() {
        let rules = Rules::new();
        let root = Path::new("/w/proj");
        let mut an = Analysis::new(&rules, root, "");
        assert!(an.inside_workspace("build", false, false));
        assert!(an.inside_workspace("/w/proj/a/../b", false, false));
        assert!(!an.inside_workspace("/w/proj", false, false));
        assert!(an.within("/w/proj", false, false, true));
        assert!(!an.inside_workspace("../other", false, false));
        assert!(!an.inside_workspace("x", true, false));
        assert!(!an.inside_workspace("~/x", false, true));
        an.change_dir(Some(("sub", false, false)));
        assert!(an.inside_workspace("*", false, false));
        an.change_dir(Some(("$D", true, false)));
        assert!(!an.inside_workspace("x", false, false));
    }

    #[test]
    fn string_normalisation_equals_path_normalisation() {
        let cases = [
            ("/w/proj", "build"),
            ("/w/proj", "build/"),
            ("/w/proj", "./a//b/./c/"),
            ("/w/proj", "../other"),
            ("/w/proj", "../../../../x"),
            ("/w/proj", "/"),
            ("/w/proj", "//etc/passwd"),
            ("/w/proj", "/w/proj/a/../b"),
            ("/w/proj", "."),
            ("/w/proj", ".."),
            ("/", "a"),
            ("", "a/./b/../c"),
            ("", "../x"),
            ("", "/etc/"),
            ("/w", "a..b/.x/..."),
        ];
        for (base, rel) in cases {
            let want = normalise(&Path::new(base).join(rel));
            assert_eq!(
                normalise_str(base, rel),
                want.to_string_lossy(),
                "{base} + {rel}"
            );
        }
    }

    #[test]
    fn cd_on_strings_equals_cd_on_paths() {
        let rules = Rules::new();
        let mut an = Analysis::new(&rules, Path::new("/w/proj"), "");
        let mut want = PathBuf::from("/w/proj");
        for t in [
            "sub",
            "a/b",
            "a//b/",
            "../x",
            "/",
            "y",
            "/etc/./z/..",
            ".",
            "q",
        ] {
            an.change_dir(Some((t, false, false)));
            want = normalise(&want.join(t));
            match &an.cwd {
                Cwd::Known(c) => assert_eq!(c, &want, "cd {t}"),
                Cwd::Unknown => panic!("cd {t} lost the directory"),
            }
        }
    }

    #[test]
    fn containment_on_strings_equals_containment_on_paths() {
        let rules = Rules::new();
        for root in ["/w/proj", "/w/proj/", "/", "/w//proj/."] {
            let mut an = Analysis::new(&rules, Path::new(root), "");
            for cd in [None, Some("sub"), Some("/w"), Some("..")] {
                if let Some(d) = cd {
                    an.change_dir(Some((d, false, false)));
                }
                for t in [
                    "x",
                    "",
                    ".",
                    "..",
                    "/w/proj",
                    "/w/proj/",
                    "/w/projx",
                    "/w/proj/a",
                    "../proj/a",
                    "/",
                ] {
                    for root_ok in [false, true] {
                        let fast = an.within(t, false, false, root_ok);
                        let slow = {
                            let full = match &an.cwd {
                                Cwd::Known(c) => c.join(t),
                                Cwd::Unknown => unreachable!(),
                            };
                            let norm = normalise(&full);
                            (root_ok || norm != normalise(an.root))
                                && norm.starts_with(normalise(an.root))
                        };
                        assert_eq!(fast, slow, "root {root} cwd {cd:?} path {t:?} {root_ok}");
                    }
                }
            }
        }
    }

    #[test]
    fn nested_quotes_fall_back_to_block_text() {
        let rules = Rules::new();
        let code = "bash -c \"echo \\\"hi\\\"\"";
        let mut an = Analysis::new(&rules, Path::new("/w"), code);
        let f = Frame::default().nested(code, 1);
        an.finding(RiskClass::WritesFiles, "x", "echo \"hi\"", 1, &f);
        assert_eq!(an.findings[0].quoted, code);
        an.finding(RiskClass::WritesFiles, "x", "echo", 1, &f);
        assert_eq!(an.findings[1].quoted, "echo");
    }
}
