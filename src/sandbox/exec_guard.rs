//! Deny rules enforced when a program starts, whatever spelled it.
//!
//! The reader judges a block's code before it runs, and code can always out-spell a reader
//! (`s = subprocess.run; s(...)`, a copy of the binary, `ld.so /bin/rm`). So when deny rules
//! exist, the sandbox's trampoline does not become the kernel: it forks it and stays as its
//! tracer (ptrace, seized with `PTRACE_O_TRACEEXEC` and the fork, vfork and clone events, so
//! that every process the kernel starts is traced too). After each `execve`, once the kernel
//! has loaded the new image and before its first instruction (`PTRACE_EVENT_EXEC`), the
//! tracer reads what now runs, from `/proc/PID/exe` and the final argv in
//! `/proc/PID/cmdline`, never the syscall's arguments, which another thread could change
//! under a check. A process that a deny rule names is killed there, and the tracer says so on
//! the terminal, naming the rule: the block's output carries it to the model.
//!
//! A program is the rule's program when any of these holds:
//! - it is the same file (its real path, or device and inode: a hard link);
//! - it has the same content (a copy; compared byte for byte when the sizes are equal);
//! - its file name is the rule's program name (`./rm`);
//! - it is the dynamic loader given a program to run (whatever the program: the loader
//!   opens it only after the check, when a link may name another file), while any deny
//!   rule exists (`--list` and `--verify`, which `ldd` uses, still run);
//! - it is busybox or toybox, while any deny rule exists, whatever it runs: their applets
//!   and their shells run programs inside themselves, where no check at an exec sees them;
//! - it is a multi-call binary (coreutils) and the applet is the rule's name.
//!
//! The loader and busybox are known by name and by content (`Known`: the loaders that common
//! programs name as their interpreter and the `ld-*.so*` in `/lib64` and `/lib`, the busybox
//! and toybox binaries on `$PATH`; found once when the tracer starts, by metadata only: a
//! started file's bytes are compared only when its size is one of theirs), so a renamed copy
//! or another `argv[0]` changes nothing.
//!
//! and the arguments after the program begin with the rule's other words (literally: `deny =
//! ["git push"]` stops `git push`, not `git -C . push`; the reader judges those).
//!
//! What this cannot stop: a program that does the same job itself (Python's `os.remove`
//! where `rm` is denied), a changed copy of a binary, and programs that run without an
//! `execve` (an interpreter's own builtins). The workspace boundary is the answer there.
//! Tracing costs nothing while no program starts (no system call stops but `execve`'s
//! event, forks and signals); a tracer cannot be traced, so `strace` and `gdb` fail inside
//! while deny rules exist; and what a kernel started ends with it.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Directories searched for a rule's program besides `$PATH`.
const STANDARD_DIRS: &[&str] = &[
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
];

/// Multi-call binaries, whose applet is named by `argv[0]` (or by `argv[1]` after their own
/// name).
const MULTI_CALL: &[&str] = &["busybox", "toybox", "coreutils"];

/// Options of glibc's dynamic loader that take a value.
const LOADER_VALUE_OPTIONS: &[&str] = &[
    "--inhibit-rpath",
    "--library-path",
    "--preload",
    "--audit",
    "--argv0",
    "--glibc-hwcaps-prepend",
    "--glibc-hwcaps-mask",
];

/// One deny rule, with the files its program is.
#[derive(Debug)]
pub(super) struct Denied {
    /// The rule as written (`git push`).
    text: String,
    /// The program's name (the last part of its first word).
    name: String,
    /// The rule's other words.
    args: Vec<String>,
    /// The files that are the program: real path, device and inode, size.
    files: Vec<(PathBuf, (u64, u64), u64)>,
}

impl Denied {
    /// A rule (`rm`, `/usr/bin/rm -rf`, `git push`), with the files its program is found
    /// as on `path` and in the standard directories.
    pub(super) fn new(text: &str, path: Option<&std::ffi::OsStr>) -> Option<Denied> {
        let mut words = text.split_whitespace().map(str::to_string);
        let program = words.next()?;
        let name = program.rsplit('/').next().unwrap_or(&program).to_string();
        let mut candidates: Vec<PathBuf> = Vec::new();
        if program.contains('/') {
            candidates.push(PathBuf::from(&program));
        } else {
            let dirs = path.map(|p| std::env::split_paths(p).collect::<Vec<_>>());
            for dir in dirs
                .unwrap_or_default()
                .into_iter()
                .chain(STANDARD_DIRS.iter().map(PathBuf::from))
            {
                candidates.push(dir.join(&program));
            }
        }
        let mut files = Vec::new();
        for candidate in candidates {
            let (Ok(real), Ok(meta)) = (
                std::fs::canonicalize(&candidate),
                std::fs::metadata(&candidate),
            ) else {
                continue;
            };
            if meta.is_file() && !files.iter().any(|(p, _, _)| p == &real) {
                files.push((real, (meta.dev(), meta.ino()), meta.len()));
            }
        }
        Some(Denied {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            name,
            args: words.collect(),
            files,
        })
    }
}

/// Busybox's names: a multi-call binary with a shell of its own (toybox too).
const BUSYBOX: &[&str] = &["busybox", "toybox"];

/// A file known by its content: its real path, device and inode, size.
#[derive(Debug)]
struct KnownFile {
    path: PathBuf,
    id: (u64, u64),
    size: u64,
}

/// The programs recognised by content whatever their name, found when the tracer starts:
/// the system's dynamic loaders and its busybox binaries.
#[derive(Debug, Default)]
pub(super) struct Known {
    loaders: Vec<KnownFile>,
    busyboxes: Vec<KnownFile>,
}

impl Known {
    /// The loaders named by the `PT_INTERP` of common programs (and of this one), and the
    /// `ld-*.so*` in `/lib64` and `/lib`; busybox and toybox on `path` and in the standard
    /// directories. Only metadata is read here: contents are compared when a file of the
    /// same size starts.
    pub(super) fn find(path: Option<&std::ffi::OsStr>) -> Known {
        let mut loaders = Vec::new();
        for program in ["/proc/self/exe", "/bin/sh", "/usr/bin/env", "/bin/bash"] {
            if let Some(interp) = elf_interpreter(Path::new(program)) {
                add_known(&mut loaders, &interp);
            }
        }
        for dir in ["/lib64", "/lib", "/usr/lib64"] {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if is_loader(&entry.file_name().to_string_lossy()) {
                    add_known(&mut loaders, &entry.path());
                }
            }
        }
        let mut busyboxes = Vec::new();
        let dirs = path.map(|p| std::env::split_paths(p).collect::<Vec<_>>());
        for dir in dirs
            .unwrap_or_default()
            .into_iter()
            .chain(STANDARD_DIRS.iter().map(PathBuf::from))
        {
            for name in BUSYBOX {
                add_known(&mut busyboxes, &dir.join(name));
            }
        }
        Known { loaders, busyboxes }
    }
}

/// Adds the regular file at `path` (through links) to `files`, once.
fn add_known(files: &mut Vec<KnownFile>, path: &Path) {
    let (Ok(real), Ok(meta)) = (std::fs::canonicalize(path), std::fs::metadata(path)) else {
        return;
    };
    if meta.is_file() && !files.iter().any(|k| k.path == real) {
        files.push(KnownFile {
            path: real,
            id: (meta.dev(), meta.ino()),
            size: meta.len(),
        });
    }
}

/// The program interpreter (`PT_INTERP`) a little-endian ELF file names, if any.
fn elf_interpreter(path: &Path) -> Option<PathBuf> {
    use std::io::Read;
    use std::os::unix::ffi::OsStrExt;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(8192)
        .read_to_end(&mut head)
        .ok()?;
    if head.get(..4)? != b"\x7fELF" || *head.get(5)? != 1 {
        return None;
    }
    let wide = *head.get(4)? == 2;
    let num = |at: usize, len: usize| -> Option<usize> {
        let bytes = head.get(at..at + len)?;
        let mut value = 0usize;
        for (i, b) in bytes.iter().enumerate() {
            value |= usize::from(*b).checked_shl(8 * u32::try_from(i).ok()?)?;
        }
        Some(value)
    };
    let (phoff, phentsize, phnum) = if wide {
        (num(32, 8)?, num(54, 2)?, num(56, 2)?)
    } else {
        (num(28, 4)?, num(42, 2)?, num(44, 2)?)
    };
    for i in 0..phnum {
        let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
        if num(at, 4)? != 3 {
            continue;
        }
        let (offset, size) = if wide {
            (num(at + 8, 8)?, num(at + 32, 8)?)
        } else {
            (num(at + 4, 4)?, num(at + 16, 4)?)
        };
        let bytes = head.get(offset..offset.checked_add(size)?)?;
        let bytes = bytes.split(|&b| b == 0).next()?;
        return Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)));
    }
    None
}

/// What a process turned out to be, once its new image is loaded.
#[derive(Debug)]
pub(super) struct Started {
    /// `/proc/PID/exe`, opened (it stays the file that runs, even if it was removed).
    pub exe: Option<std::fs::File>,
    /// The link's target: the file's path.
    pub exe_path: PathBuf,
    /// The final argv.
    pub argv: Vec<String>,
}

impl Started {
    /// Reads what process `pid` runs now.
    pub(super) fn of(pid: i32) -> Started {
        let proc = PathBuf::from(format!("/proc/{pid}"));
        let argv = std::fs::read(proc.join("cmdline"))
            .map(|bytes| {
                bytes
                    .split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect()
            })
            .unwrap_or_default();
        Started {
            exe: std::fs::File::open(proc.join("exe")).ok(),
            exe_path: std::fs::read_link(proc.join("exe")).unwrap_or_default(),
            argv,
        }
    }
}

/// A program as one view of a started process sees it, with the arguments after it.
enum Program<'a> {
    /// A file that runs (or that the loader was given).
    File {
        path: PathBuf,
        open: Option<&'a std::fs::File>,
    },
    /// An applet of a multi-call binary, by name.
    Applet(String),
}

/// The rule that forbids what `started` runs, if one does: its text, and the program as
/// the person would name it.
pub(super) fn forbidding<'a>(
    denied: &'a [Denied],
    known: &Known,
    started: &Started,
) -> Option<(&'a str, String)> {
    let args: Vec<&str> = started.argv.iter().map(String::as_str).collect();
    let mut views: Vec<(Program<'_>, &[&str])> = vec![(
        Program::File {
            path: started.exe_path.clone(),
            open: started.exe.as_ref(),
        },
        args.get(1..).unwrap_or_default(),
    )];
    let exe_name = file_name(&started.exe_path);
    let meta = match &started.exe {
        Some(file) => file.metadata().ok(),
        None => std::fs::metadata(&started.exe_path).ok(),
    };
    let is = |files: &[KnownFile]| {
        meta.as_ref()
            .is_some_and(|m| is_known(files, &started.exe_path, started.exe.as_ref(), m))
    };
    if let Some(rule) = denied.first()
        && (BUSYBOX.contains(&exe_name.as_str()) || is(&known.busyboxes))
    {
        // Its applets (`busybox rm`, a copy run as `rm`) and its shell (`busybox sh -c 'rm
        // x'`) run programs inside itself, without an exec to check.
        return Some((
            rule.text.as_str(),
            format!(
                "{} (busybox: its applets and its shell run programs inside itself, where no check as a program starts can see them, so it does not run while deny rules exist)",
                started.exe_path.display()
            ),
        ));
    }
    if (is_loader(&exe_name) || is(&known.loaders))
        && let Some(program) = loader_program(&args)
        && let Some(rule) = denied.first()
    {
        // The loader opens its program only after this check, and what the path names
        // then may differ (a link switched meanwhile): a program run through the loader
        // cannot be checked, so it does not run while deny rules exist.
        return Some((
            rule.text.as_str(),
            format!(
                "{} {program} (a program run through the dynamic loader, which cannot be checked)",
                started.exe_path.display()
            ),
        ));
    }
    if MULTI_CALL.contains(&exe_name.as_str())
        && let Some((applet, rest)) = applet(&args)
    {
        views.push((Program::Applet(applet), rest));
    }
    for rule in denied {
        for (program, rest) in &views {
            let same = match program {
                Program::File { path, open } => is_program(rule, path, *open),
                Program::Applet(name) => name == &rule.name,
            };
            let args_match = rule.args.len() <= rest.len()
                && rule.args.iter().zip(rest.iter()).all(|(a, b)| a == b);
            if same && args_match {
                let shown = match program {
                    Program::File { path, .. } => path.display().to_string(),
                    Program::Applet(name) => format!("{} {name}", started.exe_path.display()),
                };
                return Some((rule.text.as_str(), shown));
            }
        }
    }
    None
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Whether a file name is the dynamic loader's (`ld-linux-x86-64.so.2`, `ld.so`,
/// `ld-musl-x86_64.so.1`).
fn is_loader(name: &str) -> bool {
    name == "ld.so" || (name.starts_with("ld-") && name.contains(".so"))
}

/// The program the loader was given to run: its first argument that is not one of its
/// options (None for `--list`, `--verify`, `--help`, `--version`, which run nothing).
fn loader_program<'a>(argv: &[&'a str]) -> Option<&'a str> {
    let mut i = 1;
    while i < argv.len() {
        let arg = argv[i];
        if matches!(arg, "--list" | "--verify" | "--help" | "--version") {
            return None;
        }
        if LOADER_VALUE_OPTIONS.contains(&arg) {
            i += 2;
        } else if arg.starts_with("--") {
            i += 1;
        } else {
            return Some(arg);
        }
    }
    None
}

/// The applet a multi-call binary runs: `argv[0]`'s name, or after the binary's own name
/// `argv[1]` (or `--coreutils-prog=NAME`), with the arguments after it.
fn applet<'a>(argv: &'a [&'a str]) -> Option<(String, &'a [&'a str])> {
    let first = file_name(Path::new(argv.first()?));
    if !MULTI_CALL.contains(&first.as_str()) {
        return Some((first, &argv[1..]));
    }
    let second = argv.get(1)?;
    if let Some(name) = second.strip_prefix("--coreutils-prog=") {
        return Some((name.to_string(), &argv[2..]));
    }
    Some((file_name(Path::new(second)), &argv[2..]))
}

/// Whether `path` (with `open`, the file that runs, when known) is the rule's program.
fn is_program(rule: &Denied, path: &Path, open: Option<&std::fs::File>) -> bool {
    if file_name(path) == rule.name {
        return true;
    }
    let meta = match open {
        Some(file) => file.metadata(),
        None => std::fs::metadata(path),
    };
    let Ok(meta) = meta else {
        return false;
    };
    let real = std::fs::canonicalize(path).ok();
    rule.files.iter().any(|(file, id, size)| {
        real.as_ref() == Some(file)
            || *id == (meta.dev(), meta.ino())
            || (*size == meta.len() && same_content(file, path, open))
    })
}

/// Whether the file that runs (`path`, `open`, with its metadata) is one of `files`: the same
/// file, or a copy (same size, then the same bytes).
fn is_known(
    files: &[KnownFile],
    path: &Path,
    open: Option<&std::fs::File>,
    meta: &std::fs::Metadata,
) -> bool {
    files.iter().any(|known| {
        known.id == (meta.dev(), meta.ino())
            || (known.size == meta.len() && same_content(&known.path, path, open))
    })
}

/// Whether two files hold the same bytes (read in pieces; sizes already equal).
fn same_content(a: &Path, b: &Path, open_b: Option<&std::fs::File>) -> bool {
    use std::io::Read;
    let Ok(mut fa) = std::fs::File::open(a) else {
        return false;
    };
    let mut fb = match open_b.map(std::fs::File::try_clone) {
        Some(Ok(file)) => file,
        _ => match std::fs::File::open(b) {
            Ok(file) => file,
            Err(_) => return false,
        },
    };
    // Read from the start, whatever the shared offset of a cloned descriptor.
    use std::io::Seek;
    if fb.seek(std::io::SeekFrom::Start(0)).is_err() {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let (Ok(na), Ok(nb)) = (read_full(&mut fa, &mut ba), read_full(&mut fb, &mut bb)) else {
            return false;
        };
        if na != nb || ba[..na] != bb[..nb] {
            return false;
        }
        if na == 0 {
            return true;
        }
    }

    fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
}

/// The trampoline's arguments for these deny rules (`--deny RULE` each).
pub(super) fn args(rules: &[String]) -> Vec<OsString> {
    rules
        .iter()
        .flat_map(|r| ["--deny".into(), OsString::from(r)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(exe: &str, argv: &[&str]) -> Started {
        Started {
            exe: None,
            exe_path: PathBuf::from(exe),
            argv: argv.iter().map(|a| a.to_string()).collect(),
        }
    }

    #[test]
    fn a_rule_finds_its_program_and_matches_its_spellings() {
        let rm = Denied::new("rm", Some("/usr/bin:/bin".as_ref())).unwrap_or_else(|| panic!());
        assert!(!rm.files.is_empty(), "rm is installed here: {rm:?}");
        let denied = [rm];
        let real = denied[0].files[0].0.display().to_string();
        assert!(forbidding(&denied, &Known::default(), &started(&real, &["rm", "x"])).is_some());
        // Through the loader, with its options.
        let via_loader = started(
            "/lib64/ld-linux-x86-64.so.2",
            &["/lib64/ld-linux-x86-64.so.2", "--argv0", "x", &real, "v"],
        );
        assert!(forbidding(&denied, &Known::default(), &via_loader).is_some());
        // Any program through the loader: what it opens cannot be checked.
        let other = started(
            "/lib64/ld-linux-x86-64.so.2",
            &["/lib64/ld-linux-x86-64.so.2", "/bin/true"],
        );
        assert!(forbidding(&denied, &Known::default(), &other).is_some());
        let list = started(
            "/lib64/ld-linux-x86-64.so.2",
            &["/lib64/ld-linux-x86-64.so.2", "--list", "/bin/true"],
        );
        assert!(forbidding(&denied, &Known::default(), &list).is_none());
        // As a busybox applet, either way.
        assert!(
            forbidding(
                &denied,
                &Known::default(),
                &started("/bin/busybox", &["rm", "v"])
            )
            .is_some()
        );
        assert!(
            forbidding(
                &denied,
                &Known::default(),
                &started("/bin/busybox", &["busybox", "rm", "v"])
            )
            .is_some()
        );
        // Busybox does not run at all: its shell runs its applets inside itself.
        let why = forbidding(
            &denied,
            &Known::default(),
            &started("/bin/busybox", &["busybox", "ls"]),
        );
        assert!(why.is_some_and(|(_, shown)| shown.contains("inside itself")));
        // Another program is not.
        assert!(
            forbidding(
                &denied,
                &Known::default(),
                &started("/usr/bin/true", &["true"])
            )
            .is_none()
        );
    }

    #[test]
    fn a_copy_is_the_program_and_the_rules_words_must_follow_it() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let copy = dir.path().join("innocent");
        std::fs::copy("/bin/true", &copy).unwrap_or_else(|e| panic!("{e}"));
        let denied = [Denied::new("/bin/true now", None).unwrap_or_else(|| panic!())];
        let copy_text = copy.display().to_string();
        assert!(
            forbidding(
                &denied,
                &Known::default(),
                &started(&copy_text, &["innocent", "now", "x"])
            )
            .is_some()
        );
        assert!(
            forbidding(
                &denied,
                &Known::default(),
                &started(&copy_text, &["innocent", "later"])
            )
            .is_none()
        );
        // A file of the same size but other content is not.
        let other = dir.path().join("other");
        let mut bytes = std::fs::read("/bin/true").unwrap_or_default();
        if let Some(last) = bytes.last_mut() {
            *last ^= 0xff;
        }
        std::fs::write(&other, bytes).unwrap_or_else(|e| panic!("{e}"));
        let other_text = other.display().to_string();
        assert!(
            forbidding(
                &denied,
                &Known::default(),
                &started(&other_text, &["other", "now"])
            )
            .is_none()
        );
    }

    #[test]
    fn the_loader_and_busybox_are_known_by_content_whatever_their_name() {
        let known = Known::find(Some("/usr/bin:/bin".as_ref()));
        assert!(!known.loaders.is_empty(), "a loader is found: {known:?}");
        let denied =
            [Denied::new("rm", Some("/usr/bin:/bin".as_ref())).unwrap_or_else(|| panic!())];
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let copy = dir.path().join("x");
        std::fs::copy(&known.loaders[0].path, &copy).unwrap_or_else(|e| panic!("{e}"));
        let open = std::fs::File::open(&copy).ok();
        let run = |argv: &[&str]| Started {
            exe: open.as_ref().and_then(|f| f.try_clone().ok()),
            exe_path: copy.clone(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
        };
        let why = forbidding(&denied, &known, &run(&["x", "/bin/true"]));
        assert!(why.is_some_and(|(_, shown)| shown.contains("dynamic loader")));
        assert!(forbidding(&denied, &known, &run(&["x", "--list", "/bin/true"])).is_none());
        // Without knowing the loaders, only its name would tell.
        assert!(forbidding(&denied, &Known::default(), &run(&["x", "/bin/true"])).is_none());
        // A copy of busybox, run as anything.
        if let Some(busybox) = known.busyboxes.first() {
            let bb = dir.path().join("bb");
            std::fs::copy(&busybox.path, &bb).unwrap_or_else(|e| panic!("{e}"));
            let started = Started {
                exe: std::fs::File::open(&bb).ok(),
                exe_path: bb.clone(),
                argv: vec!["ls".into()],
            };
            let why = forbidding(&denied, &known, &started);
            assert!(why.is_some_and(|(_, shown)| shown.contains("busybox")));
        }
        // Another program, copied and renamed, is not.
        let other = dir.path().join("ld-other.bin");
        std::fs::copy("/bin/true", &other).unwrap_or_else(|e| panic!("{e}"));
        let started = Started {
            exe: std::fs::File::open(&other).ok(),
            exe_path: other.clone(),
            argv: vec!["other".into(), "/bin/true".into()],
        };
        assert!(forbidding(&denied, &known, &started).is_none());
    }
}
