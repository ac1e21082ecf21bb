//! Differential tests of the fast shell reader: on every snippet here (the forms it reads,
//! the forms it must give up on, and the benchmark blocks), the verdict with the fast
//! reader equals the verdict with the full parser alone, field by field.
#![allow(clippy::unwrap_used)]

use brush_parser::ParserOptions;

use super::fast;
use super::words::{fast_word, parse_word_full};
use crate::policy::samples::{PYTHON_LINES, SHELL_LINES, block};
use crate::policy::{Policy, RuleLists, RuleSource, Rules};

fn policy() -> Policy {
    let mut rules = Rules::new();
    rules.add_lists(
        &RuleLists {
            allow: ["ls", "git status", "pip list", "cat", "echo"]
                .map(String::from)
                .to_vec(),
            ask: vec!["make".into()],
            deny: ["git push", "rm -rf /", "rm"].map(String::from).to_vec(),
        },
        RuleSource::User,
    );
    Policy::new(rules, "/home/ada/proj")
}

/// Snippets the fast reader reads (checked below that it does).
const READ: &[&str] = &[
    "ls -la",
    "ls\necho ok\n",
    "ls; echo ok",
    "ls && cat x || echo no &",
    "cat a | grep b | wc -l > out.txt 2>&1",
    "cat a |\n  grep b &&\n  echo ok",
    "cd / && rm -rf x",
    "cd ~ && rm -rf *",
    "(cd /tmp && rm -rf cache)",
    "(cd sub; ls)",
    "{ ls; rm x; } > log 2>/dev/null",
    "{ ls;}",
    "true; rm x",
    "X=rm; $X -rf y",
    "X=rm Y+=2 ls",
    "FOO=bar",
    "A=\"$(rm x)\"",
    "echo \"$(rm -rf /)\"",
    "echo \"today is $(date +%F)\" ${HOME} $1 $@ $? $$",
    "echo 'single $X' \"double $X\" \\$X pl\\ain a\\ b",
    "echo \"a\\\"b\\\\c\\$d\\n\" ''",
    "bash -c 'rm -rf x'",
    "sh -c \"cd / && rm -rf x\"",
    "bash -c 'bash -c \"rm y\"'",
    "sudo rm -rf /var/x",
    "sudo -u nobody env FOO=1 nice -n 5 ls",
    "env PATH=/tmp ls",
    "PATH=/tmp ls",
    "timeout 5 rm x",
    "xargs rm < list.txt",
    "find . -name '*.o' -exec rm {} \\;",
    "find . -delete",
    "for f in *.txt; do echo \"$f\"; done",
    "for f in a b c\ndo\n  rm \"$f\"\ndone > log",
    "if [ -d build ]; then rm -rf build/; fi",
    "if true; then ls; elif false; then rm x; else echo; fi",
    "while true; do sleep 1; done &",
    "until ls; do rm x; done",
    "ls # rm -rf /\n# comment\necho a#b",
    "echo done if then fi } { !",
    "cat <in.txt >>out.txt &>all.txt &>>more.txt >|clobber",
    "echo hi >&2; ls 2>&- 1>&2",
    "echo > /etc/passwd",
    "echo > $OUT",
    "curl -s https://example.com/x.json | jq .name",
    "git -C sub push",
    "git status --short",
    "pip install requests",
    "python -c 'import os; os.remove(\"x\")'",
    "eval rm x",
    "$(echo rm) x",
    "\"$CMD\" x",
    "r''m x",
    "echo ~/x && rm -rf ~",
    "\"rm\" x",
    "\\rm x",
    "/bin/rm x",
    "./rm x",
    "echo {a,b} {} *.txt [ab] x=y",
    "{rm,-rf,x}",
    "/bin/r? x",
    "echo $(date)$(whoami) \"$(ls\nfoo)\"",
    "echo \"multi\nline\" && rm \"a\nb\"",
    "",
    "   \n\n  # only a comment\n",
];

/// Snippets it must give up on (the full parser reads them; the verdicts still agree).
const GIVE_UP: &[&str] = &[
    "cat <<EOF\nrm x\nEOF",
    "bash <<< 'rm x'",
    "f() { rm x; }; f",
    "function f { rm x; }",
    "case $x in a) rm x;; esac",
    "[[ -f x ]] && rm x",
    "(( x = 1 ))",
    "echo `rm x`",
    "rm \\\n -rf x",
    "echo héllo",
    "echo $'\\x72m'",
    "echo \"${X:-$(rm x)}\"",
    "echo $((1+2))",
    "diff <(ls a) <(ls b)",
    "! rm x",
    "time rm x",
    "ls |& cat",
    "echo hi>out",
    "X=(a b); rm x",
    "if true; then fi",
    "{ ls }",
    "ls &;",
    "; ls",
    "echo (",
    "echo \"unterminated",
    "echo 'unterminated",
    "for f; do ls; done",
    "ls;;",
    "echo $(cat \"x\")",
    "exec 3>&file",
    "{ ls; } foo",
    "a\rb",
];

fn agree(code: &str) {
    let p = policy();
    let fast = p.judge("bash", code);
    let full = p.judge_with_full_parser("bash", code);
    assert_eq!(fast, full, "verdicts differ for {code:?}");
}

#[test]
fn the_fast_reader_reads_the_common_forms_and_agrees() {
    for code in READ {
        assert!(fast::parse(code).is_ok(), "gave up on {code:?}");
        agree(code);
    }
}

#[test]
fn the_fast_reader_gives_up_on_the_rest_and_the_verdict_agrees() {
    for code in GIVE_UP {
        assert!(fast::parse(code).is_err(), "did not give up on {code:?}");
        agree(code);
    }
}

#[test]
fn every_prefix_of_every_snippet_agrees() {
    for code in READ.iter().chain(GIVE_UP) {
        for (i, _) in code.char_indices().skip(1) {
            agree(&code[..i]);
        }
    }
}

#[test]
fn the_benchmark_blocks_are_read_fast_and_agree() {
    let shell = block(SHELL_LINES, 1000);
    assert!(fast::parse(&shell).is_ok());
    agree(&shell);
    for line in SHELL_LINES {
        agree(line);
    }
    // Python runs shell through os.system: the same reader.
    let p = policy();
    let py = block(PYTHON_LINES, 100);
    assert_eq!(
        p.judge("python", &py),
        p.judge_with_full_parser("python", &py)
    );
}

#[test]
fn fast_words_equal_the_full_word_parser() {
    let words = [
        "ls",
        "-la",
        "src/main.rs",
        "a=b",
        "*.txt",
        "x,y",
        "100%",
        "{}",
        "{a,b}",
        "[ab]",
        "\\;",
        "'*.o'",
        "\"$f\"",
        "\"a $(rm -rf x) b\"",
        "\"today is $(date +%F)\"",
        "$(date +%F)",
        "a$(b)c$(d e)",
        "${HOME}/x",
        "$HOME/x",
        "$1$2",
        "$10",
        "$@",
        "$?x",
        "$$",
        "$!",
        "$-",
        "$#",
        "$0",
        "$*",
        "$_x",
        "''",
        "\"\"",
        "r''m",
        "\"rm\"",
        "\\rm",
        "r\\m",
        "'r'\"m\"",
        "\"a\\\"b\"",
        "\"a\\\\b\"",
        "\"a\\$b\"",
        "\"a\\`b\"",
        "\"a\\nb\"",
        "\"a\\\nb\"",
        "a\\\nb",
        "\"multi\nline\"",
        "'multi\nline'",
        "\"$(ls\nfoo)\"",
        "X=\"a b\"",
        "X+=1",
        "#not-comment",
        "a#b",
        "!x",
        "@x",
        "+x",
        "x=",
        "=x",
        ":x",
        "a:b",
        "\"${X}\"",
        "\"${X}y$Z\"",
        "a'b'\"c\"d",
    ];
    let opts = ParserOptions::default();
    for raw in words {
        let Some(fast) = fast_word(raw) else {
            panic!("the fast word reader gave up on {raw:?}");
        };
        let full = parse_word_full(raw, &opts);
        assert_eq!(fast.arg, full.arg, "{raw:?}");
        assert_eq!(fast.opaque, full.opaque, "{raw:?}");
        let subs = |w: &super::words::ParsedWord| {
            w.substitutions
                .iter()
                .map(|s| (s.code.clone(), s.offset))
                .collect::<Vec<_>>()
        };
        assert_eq!(subs(&fast), subs(&full), "{raw:?}");
    }
    for raw in [
        "~/x", "`ls`", "$'x'", "$\"x\"", "$", "\"$\"", "${X:-y}", "$((1))", "@(a|b)", "é",
    ] {
        assert!(fast_word(raw).is_none(), "{raw:?}");
    }
}

#[test]
fn literal_words_are_their_own_value_for_the_full_word_parser() {
    let opts = ParserOptions::default();
    let shell = block(SHELL_LINES, 10);
    let mut seen = 0;
    for code in READ.iter().copied().chain([shell.as_str()]) {
        let script = fast::parse(code).unwrap();
        let toks = script.items.iter().map(|it| match it {
            fast::Item::Word(t) | fast::Item::Assign(t, _) => *t,
            fast::Item::Redirect(r) => r.target,
        });
        for t in toks.filter(|t| t.literal) {
            let full = parse_word_full(t.raw, &opts);
            assert_eq!(full.arg, super::words::Arg::literal(t.raw), "{:?}", t.raw);
            assert!(full.substitutions.is_empty() && full.opaque.is_none());
            seen += 1;
        }
    }
    assert!(seen > 100);
}
