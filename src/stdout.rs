//! Standard output that may be a pipe someone closes (`oi-tui sessions show 3 | head -1`):
//! a closed pipe ends oi-tui quietly with status 141, as other tools do (kernels stopped,
//! the terminal restored), instead of a panic or a run that goes on printing to nobody. Any
//! other write error (`> /dev/full`) is said on stderr and ends oi-tui with status 1.

use std::io::Write;

/// Writes the bytes and flushes them; a closed pipe ends the program.
pub fn write(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        drop(out);
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            crate::shutdown::exit(141);
        }
        // Any other failure (a full disk under a log file): nothing may go on unseen.
        eprintln!("oi-tui: error: cannot write to standard output: {e}; stopping");
        crate::shutdown::exit(1);
    }
}

/// Writes the text.
pub fn print(text: &str) {
    write(text.as_bytes());
}

/// Writes the text and a newline.
pub fn println(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    write(line.as_bytes());
}

/// Says on standard output, if it still can, that standard error could not be written.
pub fn report_unwritable_stderr() {
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "oi-tui: error: cannot write to standard error; stopping"
    );
    let _ = out.flush();
}
