//! The evasion families a hostile tester used to run a denied program (`rm`, under the
//! fixed rules of `policy.rs`): a spawn function reached through a name or an expression,
//! identifiers the language normalises, line ends the language splits on, bash arithmetic
//! evaluating array subscripts, options of ordinary tools that run commands, and modules
//! of the workspace imported by a block. Each row either follows the code to the denied
//! command or says "cannot tell" (possibly denied, so the block asks); none is read-only
//! or allowed. The rows join the tables of `policy.rs`, whose tests also judge every
//! prefix of each row.

use oi_tui::policy::{Decision, Policy, RiskClass, RuleLists, RuleSource, Rules};

use super::policy::{Row, check};

use Decision::{Allow, Ask, Deny};
use RiskClass::*;

/// Bash evaluates a variable's value as arithmetic, and an array subscript in it runs its
/// command substitutions: a string holding one is code waiting for such a context.
pub(crate) const ARITHMETIC: &[Row] = &[
    ("x='a[$(rm v)]'; echo $(( x ))", CannotTell, Ask, true),
    ("x='a[$(rm v)]'; [[ $x -eq 0 ]]", CannotTell, Ask, true),
    ("x='a[$(rm v)]'; test $x -eq 0", CannotTell, Ask, true),
    ("printf -v 'a[$(rm v)]' x", CannotTell, Ask, true),
    ("declare 'a[$(rm v)]=1'", CannotTell, Ask, true),
    ("read 'a[$(rm v)]' <<< 1", CannotTell, Ask, true),
    ("let 'a[$(rm v)]'", CannotTell, Ask, true),
    ("test -v 'a[$(rm v)]'", CannotTell, Ask, true),
    ("[ -v 'a[$(rm v)]' ]", CannotTell, Ask, true),
    ("unset 'a[$(rm v)]'", CannotTell, Ask, true),
    ("x=a[\\$\\(rm\\ v\\)]; echo $((x))", CannotTell, Ask, true),
    ("x=\"a[\\$(rm v)]\"; echo $((x))", CannotTell, Ask, true),
    ("x=$'a[\\x24(rm v)]'; echo $((x))", CannotTell, Ask, true),
    ("x='a[`rm v`]'; echo $((x))", CannotTell, Ask, true),
    (
        "read x <<'EOF'\na[$(rm v)]\nEOF\necho $((x))",
        CannotTell,
        Ask,
        true,
    ),
    ("declare -i n; n='a[$(rm v)]'", CannotTell, Ask, true),
    // Text that is no subscript, and a substitution that runs where it is written.
    ("echo '$(rm v)'", ReadOnly, Allow, false),
    ("echo \"[$(ls)]\"", ReadOnly, Allow, false),
    ("echo 'a[1]'", ReadOnly, Allow, false),
];

/// Options of ordinary tools that run a command (or a file of code).
pub(crate) const TOOL_OPTIONS: &[Row] = &[
    (
        "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec='rm v' f",
        Deletes,
        Deny,
        false,
    ),
    ("tar -xf a.tar --to-command='rm v'", Deletes, Deny, false),
    ("tar -I 'rm v' -cf a.tar f", Deletes, Deny, false),
    (
        "tar --use-compress-program=rm -cf a.tar f",
        Deletes,
        Deny,
        false,
    ),
    ("tar -cf a.tar -F ./next.sh f", CannotTell, Ask, true),
    ("tar -czf a.tar.gz src", WritesFiles, Ask, false),
    ("zip -T -TT 'rm v' a.zip f", Deletes, Deny, false),
    (
        "zip --unzip-command='rm v' -T a.zip f",
        Deletes,
        Deny,
        false,
    ),
    (
        "install -s --strip-program=/bin/rm f out",
        Deletes,
        Deny,
        false,
    ),
    (
        "git config core.fsmonitor 'rm v'; git status",
        Deletes,
        Deny,
        false,
    ),
    ("git config alias.x '!rm v'; git x", Deletes, Deny, false),
    (
        "git config --global core.pager 'rm v'",
        Deletes,
        Deny,
        false,
    ),
    ("git config include.path ../cfg", CannotTell, Ask, true),
    ("git config user.name Ada", WritesFiles, Ask, false),
    ("git config --get user.name", ReadOnly, Ask, false),
    ("git -c core.fsmonitor='rm v' status", Deletes, Deny, false),
    ("git -c alias.s='!rm v' s", Deletes, Deny, false),
    ("git -c color.ui=never status", ReadOnly, Ask, false),
    ("git --config-env=core.pager=P log", CannotTell, Ask, true),
    ("git --exec-path=./bin status", CannotTell, Ask, true),
    ("git rebase --exec 'rm v' HEAD~2", Deletes, Deny, false),
    ("git rebase -x 'rm v' main", Deletes, Deny, false),
    ("git bisect run rm v", Deletes, Deny, false),
    ("git submodule foreach 'rm v'", Deletes, Deny, false),
    (
        "git grep --open-files-in-pager='rm v' x",
        Deletes,
        Deny,
        false,
    ),
    ("git grep -O'rm v' x", Deletes, Deny, false),
    ("git difftool -x 'rm v'", Deletes, Deny, false),
    (
        "git filter-branch --tree-filter 'rm v' HEAD",
        Deletes,
        Deny,
        false,
    ),
    (
        "git fetch --upload-pack='rm v' origin",
        Deletes,
        Deny,
        false,
    ),
    ("git clone -u 'rm v' host:r", Deletes, Deny, false),
    (
        "git push --receive-pack='rm v' origin",
        Deletes,
        Deny,
        false,
    ),
    (
        "git send-email --to-cmd='rm v' p.patch",
        Deletes,
        Deny,
        false,
    ),
    ("man -P 'rm v' ls", Deletes, Deny, false),
    ("man --pager='rm v' ls", Deletes, Deny, false),
    ("man -H'rm v' ls", Deletes, Deny, false),
    ("man ls", ReadOnly, Ask, false),
    ("npm install", CannotTell, Ask, true),
    ("npm ci", CannotTell, Ask, true),
    ("pip install .", CannotTell, Ask, true),
    ("rsync -e 'rm v' a host:b", Deletes, Deny, false),
    ("rsync --rsh='rm v' a host:b", Deletes, Deny, false),
    ("ssh -o ProxyCommand='rm v' host", Deletes, Deny, false),
    ("ssh -oProxyCommand='rm v' host", Deletes, Deny, false),
    ("scp -o 'ProxyCommand rm v' a host:b", Deletes, Deny, false),
    (
        "ssh -o PermitLocalCommand=yes -o LocalCommand='rm v' host",
        Deletes,
        Deny,
        false,
    ),
    ("ssh -F ./cfg host", CannotTell, Ask, true),
    ("scp -S rm a host:b", Deletes, Deny, false),
    ("less '+!rm v' f", CannotTell, Ask, true),
    ("more '+!rm v' f", CannotTell, Ask, true),
    ("LESSOPEN='|rm v %s' less f", CannotTell, Ask, true),
    ("awk -f prog.awk data", CannotTell, Ask, true),
    ("awk -v x=1 '{system(\"rm v\")}' f", CannotTell, Ask, true),
    ("awk -F ':' '{system(\"rm v\")}' f", CannotTell, Ask, true),
    ("awk '@include \"x.awk\"' f", CannotTell, Ask, true),
    ("awk -F: '{print $1}' f", ReadOnly, Ask, false),
    ("vim -c '!rm v'", CannotTell, Ask, true),
    ("find . -execdir rm {} +", Deletes, Deny, false),
    ("find . -ok rm {} \\;", Deletes, Deny, false),
    ("xargs -0 rm < list", DeletesOutsideWorkspace, Deny, false),
    ("env -S 'rm v'", CannotTell, Ask, true),
    ("nice -5 rm v", Deletes, Deny, false),
    ("timeout --foreground 5 rm v", Deletes, Deny, false),
    ("stdbuf -oL rm v", Deletes, Deny, false),
    ("watch -n1 rm v", Deletes, Deny, false),
    ("sed -n '1e rm v' f", CannotTell, Ask, true),
    ("printf -v PATH /tmp/x; ls", CannotTell, Ask, true),
    ("read -r PATH <<< /tmp/x", CannotTell, Ask, true),
];

/// (language, code, highest class, decision, possibly denied)
pub(crate) type ScriptRow = (&'static str, &'static str, RiskClass, Decision, bool);

pub(crate) const SCRIPTS: &[ScriptRow] = &[
    // A spawn function reached through a name or an expression.
    (
        "python",
        "import subprocess\ns = subprocess.run\ns(['rm', 'v'])",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "import os\n(os.system)('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "import os\nos.__dict__['system']('rm v')",
        CannotTell,
        Deny,
        false,
    ),
    (
        "python",
        "import os\nvars(os)['system']('rm v')",
        Deletes,
        Deny,
        false,
    ),
    (
        "python",
        "import os\ngetattr(os, 'system')('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "import subprocess as sp\ngetattr(sp, 'run')(['rm', 'v'])",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "import os\nlist(map(os.system, ['rm v']))",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "from os import system as s\nf = s\nf('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "import os\nos.system.__call__('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "import subprocess\nsubprocess.run(['ls'])",
        ReadOnly,
        Ask,
        false,
    ),
    (
        "js",
        "const {execSync: e} = require('child_process');\ne('rm v');",
        CannotTell,
        Ask,
        true,
    ),
    (
        "js",
        "const cp = require('child_process');\nconst e = cp.execSync;\ne('rm v');",
        CannotTell,
        Ask,
        true,
    ),
    (
        "js",
        "require('child_process').execSync.call(null, 'rm v');",
        CannotTell,
        Ask,
        true,
    ),
    (
        "js",
        "require('child_process')['execSync']('rm v');",
        Deletes,
        Deny,
        false,
    ),
    ("r", "f <- system\nf('rm v')", CannotTell, Ask, true),
    ("r", "match.fun('system')('rm v')", CannotTell, Ask, true),
    (
        "r",
        "do.call('system', list('rm v'))",
        CannotTell,
        Ask,
        true,
    ),
    ("r", "pipe('rm v')", Deletes, Deny, false),
    ("r", "print(system.time(1))", ReadOnly, Ask, false),
    (
        "ruby",
        "method(:system).call('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "ruby",
        "method(:\"system\").call('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "ruby",
        "Kernel.method('system').call('rm v')",
        CannotTell,
        Ask,
        true,
    ),
    (
        "perl",
        "system { \"rm\" } \"rm\", \"v\";",
        CannotTell,
        Ask,
        true,
    ),
    (
        "perl",
        "my $f = \\&CORE::system; $f->('rm v');",
        CannotTell,
        Ask,
        true,
    ),
    ("perl", "readpipe('rm v');", Deletes, Deny, false),
    // Identifiers the language normalises.
    (
        "python",
        "import os\nos.ｓｙｓｔｅｍ('rm v')",
        Deletes,
        Deny,
        false,
    ),
    (
        "python",
        "import os\nos.𝐬𝐲𝐬𝐭𝐞𝐦('rm v')",
        Deletes,
        Deny,
        false,
    ),
    (
        "python",
        "import subprocess\nsubprocess.ｒｕｎ(['rm', 'v'])",
        Deletes,
        Deny,
        false,
    ),
    (
        "js",
        "require('child_process').ex\\u0065cSync('rm v');",
        Deletes,
        Deny,
        false,
    ),
    (
        "js",
        "require('child_process').\\u{65}xecSync('rm v');",
        Deletes,
        Deny,
        false,
    ),
    // Line ends the language splits on: the deny rule decides, and the hidden line end is
    // the block's class (it outranks what the command does).
    (
        "python",
        "import os\n# x\ros.system('rm v')",
        HiddenCharacters,
        Deny,
        false,
    ),
    (
        "js",
        "// x\rrequire('child_process').execSync('rm v');",
        HiddenCharacters,
        Deny,
        false,
    ),
    (
        "js",
        "// x\u{2028}require('child_process').execSync('rm v');",
        HiddenCharacters,
        Deny,
        false,
    ),
    (
        "js",
        "// x\u{2029}require('child_process').execSync('rm v');",
        HiddenCharacters,
        Deny,
        false,
    ),
    ("python", "# comment\r\nprint(1)", ReadOnly, Ask, false),
    // Modules of the workspace (an earlier block may have written them).
    (
        "python",
        "import helper\nhelper.run()",
        CannotTell,
        Ask,
        true,
    ),
    (
        "python",
        "from helper import run\nrun()",
        CannotTell,
        Ask,
        true,
    ),
    ("python", "from . import helper", CannotTell, Ask, true),
    (
        "python",
        "import os.path, json\nimport numpy as np",
        ReadOnly,
        Ask,
        false,
    ),
    (
        "python",
        "from collections import Counter",
        ReadOnly,
        Ask,
        false,
    ),
    (
        "js",
        "const h = require('./helper');\nh.run();",
        CannotTell,
        Ask,
        true,
    ),
    (
        "js",
        "import { run } from './helper.js';\nrun();",
        CannotTell,
        Ask,
        true,
    ),
    ("js", "const fs = require('fs');", ReadOnly, Ask, false),
    ("ruby", "require_relative 'helper'", CannotTell, Ask, true),
    ("ruby", "load 'helper.rb'", CannotTell, Ask, true),
    ("ruby", "require './helper'", CannotTell, Ask, true),
    ("ruby", "require 'json'", ReadOnly, Ask, false),
    ("perl", "require './helper.pl';", CannotTell, Ask, true),
    ("perl", "do './helper.pl';", CannotTell, Ask, true),
];

/// Every row of the tables (of `policy.rs` and these), as (language, code): the tests of
/// `policy.rs` judge every prefix of each.
pub(crate) fn all_rows() -> impl Iterator<Item = (&'static str, &'static str)> {
    use super::policy as base;
    let shell = base::SHELL.iter().chain(ARITHMETIC).chain(TOOL_OPTIONS);
    let scripts = base::SCRIPTS.iter().chain(SCRIPTS);
    shell
        .map(|r| ("bash", r.0))
        .chain(scripts.map(|r| (r.0, r.1)))
}

#[test]
fn arithmetic_table_under_fixed_rules() {
    let failures: Vec<String> = ARITHMETIC
        .iter()
        .filter_map(|(code, class, d, pd)| check("bash", code, *class, *d, *pd))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn tool_options_table_under_fixed_rules() {
    let failures: Vec<String> = TOOL_OPTIONS
        .iter()
        .filter_map(|(code, class, d, pd)| check("bash", code, *class, *d, *pd))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn script_evasion_table_under_fixed_rules() {
    let failures: Vec<String> = SCRIPTS
        .iter()
        .filter_map(|(lang, code, class, d, pd)| check(lang, code, *class, *d, *pd))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Under `--approval rules` with `echo` and `test` allowed, a subscript that runs a
/// command is never "allowed by rule": the block asks, possibly denied.
#[test]
fn arithmetic_subscripts_are_never_allowed_by_rule() {
    let mut rules = Rules::new();
    let errors = rules.add_lists(
        &RuleLists {
            allow: ["echo", "test", "printf", "read", "let", "declare", "unset"]
                .map(String::from)
                .to_vec(),
            ask: vec![],
            deny: vec!["rm".into()],
        },
        RuleSource::User,
    );
    assert!(errors.is_empty(), "{errors:?}");
    let p = Policy::new(rules, super::policy::ROOT);
    for (code, class, ..) in ARITHMETIC.iter().filter(|r| r.3) {
        let v = p.judge("bash", code);
        assert_ne!(v.decision, Allow, "{code:?}: {}", v.decision_reason());
        assert!(v.possibly_denied, "{code:?}");
        assert_eq!(v.highest, *class, "{code:?}");
    }
    // The same commands without a subscript in their text are allowed.
    for code in ["x=1; echo $(( x ))", "printf -v y x", "let 'a[1]'"] {
        assert_eq!(p.judge("bash", code).decision, Allow, "{code:?}");
    }
}
