//! Policy verdict figures: a 1,000-line shell block and a 1,000-line Python block, judged
//! under a small rule set. Target: under 1 ms each (release build).
//!
//! Run with `cargo bench --bench policy`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use oi_tui::policy::{Policy, RuleLists, RuleSource, Rules};

mod support;
use support::{median, ms};

const SHELL_LINES: &[&str] = &[
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

const PYTHON_LINES: &[&str] = &[
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

fn block(lines: &[&str], n: usize) -> String {
    (0..n)
        .map(|i| lines[i % lines.len()])
        .collect::<Vec<_>>()
        .join("\n")
}

fn main() {
    let mut rules = Rules::new();
    rules.add_lists(
        &RuleLists {
            allow: ["ls", "git status", "pip list", "cat", "echo"]
                .map(String::from)
                .to_vec(),
            ask: vec![],
            deny: ["git push", "rm -rf /", "rm"].map(String::from).to_vec(),
        },
        RuleSource::User,
    );
    let policy = Policy::new(rules, "/home/ada/proj");
    for (name, lang, code) in [
        ("shell", "bash", block(SHELL_LINES, 1000)),
        ("python", "python", block(PYTHON_LINES, 1000)),
    ] {
        let v = policy.judge(lang, &code);
        if name == "shell" {
            let mut t_parse = Vec::new();
            for _ in 0..10 {
                let t = Instant::now();
                let opts = brush_parser::ParserOptions::default();
                let mut p = brush_parser::Parser::new(std::io::Cursor::new(code.as_bytes()), &opts);
                let _ = p.parse_program();
                t_parse.push(t.elapsed());
            }
            println!(
                "  of which the shell parser alone: {:.3} ms",
                ms(median(t_parse))
            );
        }
        let mut times = Vec::new();
        for _ in 0..30 {
            let t = Instant::now();
            let v2 = policy.judge(lang, &code);
            times.push(t.elapsed());
            assert_eq!(v2.findings.len(), v.findings.len());
        }
        println!(
            "policy verdict, 1,000-line {name} block: {:.3} ms median ({} commands, {} findings, highest {:?})",
            ms(median(times)),
            v.commands.len(),
            v.findings.len(),
            v.highest
        );
    }
}
