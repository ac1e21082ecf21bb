//! GNU sed is more than a stream editor: its `e` command and the `e` flag of `s` run shell
//! commands, `w` writes files, and `-f` reads a script the policy cannot see. This reads a
//! sed command line and its scripts far enough to tell.

use super::super::analysis::{Analysis, Frame};
use super::super::verdict::RiskClass;
use super::commands::Cmd;
use super::words::Arg;

/// GNU sed runs commands with its `e` command and the `e` flag of `s`, and writes files
/// with `w` (and the `w` flag): read the script far enough to see them.
pub(super) fn sed(an: &mut Analysis<'_>, cmd: &Cmd, args: &[Arg], frame: &Frame) {
    let q = cmd.quoted.as_str();
    if args.iter().any(|a| a.text == "--sandbox") {
        return;
    }
    let mut scripts: Vec<&Arg> = Vec::new();
    let mut from_file = false;
    let mut k = 0;
    let mut explicit = false;
    let mut first_plain: Option<&Arg> = None;
    while let Some(a) = args.get(k) {
        let t = a.text.as_str();
        if t == "-e" || t == "--expression" {
            explicit = true;
            if let Some(s) = args.get(k + 1) {
                scripts.push(s);
            }
            k += 2;
            continue;
        }
        if t == "-f"
            || t == "--file"
            || t.starts_with("--file=")
            || (t.starts_with("-f") && t.len() > 2)
        {
            explicit = true;
            from_file = true;
            k += if t == "-f" || t == "--file" { 2 } else { 1 };
            continue;
        }
        if t.starts_with("--expression=")
            || (t.starts_with("-e") && t.len() > 2 && !t.starts_with("--"))
        {
            explicit = true;
            scripts.push(a);
            k += 1;
            continue;
        }
        if t == "-l" || t == "--line-length" {
            k += 2;
            continue;
        }
        if !t.starts_with('-') && first_plain.is_none() {
            first_plain = Some(a);
        }
        k += 1;
    }
    if !explicit && let Some(a) = first_plain {
        scripts.push(a);
    }
    if from_file {
        an.opaque(
            "sed reads its script from a file the policy cannot read (it may run commands)",
            q,
            cmd.line,
            frame,
        );
        return;
    }
    let mut writes = false;
    for s in scripts {
        // (`--expression=X` and `-eX` carry the script in the same word.)
        let text = s
            .text
            .strip_prefix("--expression=")
            .or_else(|| s.text.strip_prefix("-e"))
            .unwrap_or(&s.text);
        match sed_effects(text) {
            SedEffect::Runs => {
                an.opaque(
                    "a sed script that runs commands (the e command or flag)",
                    q,
                    cmd.line,
                    frame,
                );
                return;
            }
            SedEffect::Writes => writes = true,
            SedEffect::None => {}
        }
        if s.dynamic {
            an.finding(
                RiskClass::CannotTell,
                "a sed script built at run time may run commands (e) or write files (w)",
                q,
                cmd.line,
                frame,
            );
            return;
        }
    }
    if writes {
        an.finding(
            RiskClass::WritesFiles,
            "a sed script that writes files (w)",
            q,
            cmd.line,
            frame,
        );
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum SedEffect {
    None,
    Writes,
    Runs,
}

/// What a sed script may do besides printing. Anything it cannot follow counts as running
/// commands.
pub(super) fn sed_effects(script: &str) -> SedEffect {
    let b = script.as_bytes();
    let mut i = 0;
    let mut writes = false;
    let to_eol = |i: &mut usize| {
        while *i < b.len() && b[*i] != b'\n' {
            *i += if b[*i] == b'\\' { 2 } else { 1 };
        }
    };
    // Skips a delimited field starting after its opening delimiter; false if unterminated.
    let field = |i: &mut usize, d: u8| -> bool {
        while *i < b.len() {
            if b[*i] == b'\\' {
                *i += 2;
                continue;
            }
            if b[*i] == d {
                *i += 1;
                return true;
            }
            if b[*i] == b'\n' {
                return false;
            }
            *i += 1;
        }
        false
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' | b';' | b'{' | b'}' | b'!' | b',' | b'$' | b'~' | b'+' => {
                i += 1;
            }
            b'0'..=b'9' => i += 1,
            b'/' => {
                i += 1;
                if !field(&mut i, b'/') {
                    return SedEffect::Runs;
                }
                // Address flags `I` and `M`.
                while i < b.len() && matches!(b[i], b'I' | b'M') {
                    i += 1;
                }
            }
            b'\\' => {
                let Some(&d) = b.get(i + 1) else {
                    return SedEffect::Runs;
                };
                i += 2;
                if !field(&mut i, d) {
                    return SedEffect::Runs;
                }
            }
            b'e' => return SedEffect::Runs,
            b'w' | b'W' => {
                writes = true;
                to_eol(&mut i);
            }
            b'r' | b'R' | b'a' | b'i' | b'c' | b':' | b'#' => to_eol(&mut i),
            b'b' | b't' | b'T' => {
                while i < b.len() && !matches!(b[i], b'\n' | b';' | b'}') {
                    i += 1;
                }
            }
            b's' | b'y' => {
                let Some(&d) = b.get(i + 1) else {
                    return SedEffect::Runs;
                };
                if d == b'\n' || d == b'\\' {
                    return SedEffect::Runs;
                }
                i += 2;
                if !field(&mut i, d) || !field(&mut i, d) {
                    return SedEffect::Runs;
                }
                if c == b's' {
                    while i < b.len() && !matches!(b[i], b'\n' | b';' | b'}') {
                        match b[i] {
                            b'e' => return SedEffect::Runs,
                            b'w' => {
                                writes = true;
                                to_eol(&mut i);
                            }
                            _ => i += 1,
                        }
                    }
                }
            }
            c if c.is_ascii_alphabetic() || c == b'=' => i += 1,
            _ => return SedEffect::Runs,
        }
    }
    if writes {
        SedEffect::Writes
    } else {
        SedEffect::None
    }
}

#[cfg(test)]
mod sed_tests {
    use super::{SedEffect, sed_effects};

    #[test]
    fn sed_scripts_that_run_or_write_are_seen() {
        for s in [
            "1e rm f",
            "s/x/rm f/e",
            "s|x|y|ge",
            "e",
            "/a/e echo",
            "s/x/y",
            "1{e rm\n}",
        ] {
            assert_eq!(sed_effects(s), SedEffect::Runs, "{s}");
        }
        for s in ["s/x/y/w out", "w out", "/x/w f"] {
            assert_eq!(sed_effects(s), SedEffect::Writes, "{s}");
        }
        for s in [
            "s/hello/there/g",
            "s/e/E/",
            "1d;$d",
            "/^#/d",
            "y/abc/xyz/",
            "s/a\\/b/c/2",
            "/start/,/end/p",
            "a\\\nappended",
            "$!N;P;D",
            "s/x/y/I",
        ] {
            assert_eq!(sed_effects(s), SedEffect::None, "{s}");
        }
    }
}
