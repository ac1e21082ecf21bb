//! "Always allow" proposals (`Policy::suggest_allow`) against the policy's shell table:
//! for every row that is neither opaque nor denied, adding the proposed prefixes as allow
//! rules makes the block allowed; the rows for which nothing is proposed are exactly the
//! ones command rules cannot (or should not) allow, each with its reason.

use oi_tui::policy::{Decision, Policy, RuleSource, Suggestion};

use super::policy::{SHELL, policy};

/// Rows of the table for which no prefix is proposed, and a word of the reason.
const NOT_PROPOSED: &[(&str, &str)] = &[
    ("echo x >> ~/.bashrc", "writes outside the workspace"),
    ("echo x > /etc/hosts", "writes outside the workspace"),
    ("ls &> /etc/log", "writes outside the workspace"),
    // `[` cannot be written as a rule (it is shell syntax to the rule checker).
    ("if [ -f x ]; then cat x; fi", "cannot be allowed by a rule"),
    // A rule for these would allow any code they are given.
    ("ssh host ls", "\"ssh\" would let anything"),
    (
        "python -c 'import shutil; shutil.rmtree(\"x\")'",
        "\"python\" would let anything",
    ),
    (
        "python3 - <<'EOF'\nimport shutil\nshutil.rmtree('/')\nEOF\n",
        "\"python3\" would let anything",
    ),
    // A writing redirection is more than the program: no rule for the program covers it.
    ("echo hi > out.txt", "through a redirection"),
    ("ls >| out", "through a redirection"),
    ("cat <<EOF > f.txt\nhello\nEOF\n", "through a redirection"),
    ("ls > f4", "through a redirection"),
    // Programs whose effect depends wholly on their arguments.
    (
        "find . -name '*.o' -delete",
        "find can delete and run commands",
    ),
    ("find / -name x -delete", "find can delete and run commands"),
    ("find . -name x", "find can delete and run commands"),
    (
        "sed -i s/a/b/ f",
        "sed can edit files in place and run commands",
    ),
    (
        "sed -n 's/hello/there/p' x",
        "sed can edit files in place and run commands",
    ),
    ("wget http://example.com/x", "wget can download to any file"),
    ("mkfs.ext4 /dev/sdb1", "formats any device"),
    ("dd if=/dev/zero of=/dev/sda", "dd can overwrite any file"),
    ("shred secret", "shred can overwrite any file"),
    ("mv ~/x ./trash", "mv can overwrite any file"),
    ("mv a.txt b.txt", "mv can overwrite any file"),
    ("crontab -e", "crontab changes the system"),
    ("iptables -F", "iptables changes the system"),
    ("chown -R user /", "chown changes the permissions"),
    ("hash -r; ls", "hash changes or runs other commands"),
];

#[test]
fn suggested_prefixes_allow_every_row_that_rules_can_allow() {
    let p = policy();
    let mut failures = Vec::new();
    let mut impossible = Vec::new();
    let mut proposed = 0;
    for (code, _, decision, possibly_denied) in SHELL {
        if *decision == Decision::Deny || *possibly_denied {
            continue;
        }
        match p.suggest_allow("bash", code) {
            Suggestion::Prefixes(prefixes) => {
                proposed += 1;
                let mut rules = p.rules().clone();
                for prefix in &prefixes {
                    rules
                        .add(Decision::Allow, prefix, RuleSource::User)
                        .unwrap_or_else(|e| panic!("{code:?}: {prefix:?}: {e}"));
                }
                let v = Policy::new(rules, "/home/ada/proj").judge("bash", code);
                if v.decision != Decision::Allow {
                    failures.push(format!(
                        "{code:?}: {prefixes:?} leave it {:?}: {}",
                        v.decision,
                        v.decision_reason()
                    ));
                }
            }
            Suggestion::AlreadyAllowed => {
                if p.judge("bash", code).decision != Decision::Allow {
                    failures.push(format!("{code:?}: said to be allowed already"));
                }
            }
            Suggestion::Impossible(reason) => impossible.push((code.to_string(), reason)),
        }
    }
    for (code, reason) in &impossible {
        match NOT_PROPOSED.iter().find(|(c, _)| c == code) {
            Some((_, word)) if reason.contains(word) => {}
            _ => failures.push(format!("{code:?}: nothing proposed: {reason}")),
        }
    }
    for (code, _) in NOT_PROPOSED {
        if !impossible.iter().any(|(c, _)| c == code) {
            failures.push(format!("{code:?}: a proposal was expected to be refused"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(proposed >= 20, "only {proposed} rows got a proposal");
}
