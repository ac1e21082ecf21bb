//! The blocks the policy benchmark judges (`benches/policy.rs`), kept here so that the
//! fast shell reader's differential tests check exactly what the benchmark measures. Not
//! for use by the faces.

/// Ten lines of shell in the benchmark's mix: pipes, a redirect, a loop, a conditional
/// delete, `find -exec`, a command substitution, wrappers, `bash -c`, network.
pub const SHELL_LINES: &[&str] = &[
    "ls -la src/",
    "git status --short",
    "cat README.md | grep -n policy > notes.txt",
    "for f in *.txt; do echo \"$f\"; done",
    "if [ -d build ]; then rm -rf build/; fi",
    "find . -name '*.o' -exec rm {} \\;",
    "echo \"today is $(date +%F)\"",
    "sudo -u nobody env FOO=1 nice -n 5 ls",
    "bash -c 'cd sub && make -j2'",
    "curl -s https://example.com/x.json | jq .name",
];

/// Ten lines of Python in the benchmark's mix.
pub const PYTHON_LINES: &[&str] = &[
    "import os, subprocess, shutil",
    "data = [x * 2 for x in range(10)]  # os.remove('x')",
    "print(f\"value {data[0]}\")",
    "subprocess.run(['git', 'status'])",
    "with open('out.txt', 'w') as fh:",
    "    fh.write('''multi",
    "    line''')",
    "shutil.rmtree('build')",
    "os.system('ls -la')",
    "total = sum(d for d in data if d > 3)",
];

/// `n` lines cycling through `lines`, joined by newlines.
pub fn block(lines: &[&str], n: usize) -> String {
    (0..n)
        .map(|i| lines[i % lines.len()])
        .collect::<Vec<_>>()
        .join("\n")
}
