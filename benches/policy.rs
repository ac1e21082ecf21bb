//! Policy verdict figures: a 1,000-line shell block and a 1,000-line Python block, judged
//! under a small rule set. Target: under 1 ms each (release build).
//!
//! Every timed verdict is cold: no verdict is cached anywhere, and each iteration changes
//! one line of the block (a different file name), so that nothing keyed on the text —
//! such as the full shell parser's own small word cache — can hold the answer.
//!
//! Run with `cargo bench --bench policy`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use oi_tui::policy::samples::{PYTHON_LINES, SHELL_LINES, block};
use oi_tui::policy::{Policy, RuleLists, RuleSource, Rules};

mod support;
use support::{median, ms};

const RUNS: usize = 30;

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
    for (name, lang, lines) in [
        ("shell", "bash", SHELL_LINES),
        ("python", "python", PYTHON_LINES),
    ] {
        let code = block(lines, 1000);
        // One block per run, made before timing starts: one line of the mix gets its own
        // text in each (same line count, same kind of line).
        let first = if lang == "bash" { lines[0] } else { lines[2] };
        let vary = |i: usize| match lang {
            "bash" => format!("ls -la src/run{i}/"),
            _ => format!("print(f\"value {{data[0]}} run {i}\")"),
        };
        let blocks: Vec<String> = (0..RUNS + 1)
            .map(|i| {
                let b = code.replacen(first, &vary(i), 1);
                assert_ne!(b, code);
                assert_eq!(b.lines().count(), 1000);
                b
            })
            .collect();
        let v = policy.judge(lang, &blocks[RUNS]);
        if name == "shell" {
            let mut t_parse = Vec::new();
            for b in blocks.iter().take(10) {
                let t = Instant::now();
                let opts = brush_parser::ParserOptions::default();
                let mut p = brush_parser::Parser::new(std::io::Cursor::new(b.as_bytes()), &opts);
                let _ = p.parse_program();
                t_parse.push(t.elapsed());
            }
            println!(
                "  for comparison, the full shell parser alone: {:.3} ms",
                ms(median(t_parse))
            );
        }
        let mut times = Vec::new();
        for b in blocks.iter().take(RUNS) {
            let t = Instant::now();
            let v2 = policy.judge(lang, b);
            times.push(t.elapsed());
            assert_eq!(v2.findings.len(), v.findings.len());
            assert_eq!(v2.commands.len(), v.commands.len());
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
