//! Which variables are secrets, by their shape: a name holding a secret word, or a value
//! holding a URL with a password (`postgres://user:password@host/db`), whatever its name.
//!
//! Words are matched anywhere in the name, in any case (`PGPASSWORD`, `npm_config__authToken`):
//! a secret let through costs more than an ordinary variable held back, which the person can
//! let through with `[env] pass`. A few common names hold a word without being secrets; they
//! are listed in `NOT_SECRETS`, each with its reason.

/// Words that mark a name as a secret's. `PASS` covers `PASSWORD` and `PASSWD` (and
/// `DB_PASS`, `SMTP_PASS`); `AUTH` covers `SSH_AUTH_SOCK` (the SSH agent's socket: whoever
/// has it can log in as the person), `HTTP_AUTHORIZATION` and `OAUTH_*`.
///
/// Held back too, deliberately: the askpass programs (`SSH_ASKPASS`, `GIT_ASKPASS`,
/// `SUDO_ASKPASS`), which answer password prompts for the person (an editor's terminal
/// points `GIT_ASKPASS` at its credential store); without them `ssh` and `git` ask in the
/// block's terminal, where the person sees the question. Names that hold `PASS` by chance
/// (`PASSENGER_*`, `*_BYPASS`) are held back as well: rare, and `[env] pass` lets one through.
const SECRET_WORDS: &[&str] = &[
    "KEY",
    "SECRET",
    "TOKEN",
    "PASS",
    "CREDENTIAL",
    "AUTH",
    "COOKIE",
    "WEBHOOK",
    "JWT",
    "SALT",
    "PRIVATE",
    "BEARER",
];

/// Short words that mark a name as a secret's only as a whole part of it (between `_`s or
/// at an end: `MYSQL_PWD`, `GH_PAT`, `SMTP_PW`, `SENTRY_DSN`), since as mere letters they
/// are in ordinary names (`PATH`, `PWRAP`). `PWD` alone, the working directory, is none.
const SECRET_PARTS: &[&str] = &["PWD", "PW", "PAT", "DSN"];

/// Parts of names that hold a secret word without naming a secret, each with the
/// continuations that make it one after all. These parts are blanked out before the words
/// are looked for, so that the rest of the name still counts (`PASSWORD_STORE_KEY` holds
/// `KEY`).
const NOT_SECRETS: &[(&str, &[&str])] = &[
    // `AUTHOR`: who wrote a commit (`GIT_AUTHOR_NAME`, `GIT_AUTHOR_EMAIL`), and
    // `AUTHORITY`: `XAUTHORITY` and `ICEAUTHORITY` name the file of X11's cookies, which
    // every X11 program needs to open a window (and which blocks can read anyway).
    // `AUTHORIZATION` and `AUTHORISATION` are secrets.
    ("AUTHOR", &["IZ", "IS"]),
    // The settings of `pass`, the password manager (`PASSWORD_STORE_DIR`, its store of
    // encrypted files, which blocks can find at its default place anyway).
    ("PASSWORD_STORE_", &[]),
    // Cookiecutter's settings (`COOKIECUTTER_CONFIG`), a project template tool.
    ("COOKIECUTTER", &[]),
];

/// Whether a variable's name marks it as a secret.
pub fn is_secret_name(name: &str) -> bool {
    let mut upper = name.to_ascii_uppercase();
    for (part, unless) in NOT_SECRETS {
        let starts: Vec<usize> = upper
            .match_indices(part)
            .map(|(at, _)| at)
            .filter(|at| {
                let rest = &upper[at + part.len()..];
                !unless.iter().any(|u| rest.starts_with(u))
            })
            .collect();
        for at in starts {
            // The parts are ASCII, so these are character boundaries.
            upper.replace_range(at..at + part.len(), &"_".repeat(part.len()));
        }
    }
    SECRET_WORDS.iter().any(|w| upper.contains(w))
        || (upper != "PWD"
            && upper
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|part| SECRET_PARTS.contains(&part)))
}

/// Whether a variable is a secret: by its name, by a password in a URL of its value, or by
/// a secret's shape in its value (see `shaped_secrets`).
pub fn is_secret(name: &str, value: &str) -> bool {
    is_secret_name(name) || !url_passwords(value).is_empty() || !shaped_secrets(value).is_empty()
}

/// What to redact of a variable: its whole value when it is a secret, and each password of
/// a URL in it, as written and percent-decoded (as a program that uses it has it).
pub fn secret_values(name: &str, value: &str) -> Vec<String> {
    let passwords = url_passwords(value);
    let shaped = shaped_secrets(value);
    if passwords.is_empty() && shaped.is_empty() && !is_secret_name(name) {
        return Vec::new();
    }
    let mut out = vec![value.to_string()];
    for piece in shaped {
        if piece != value {
            out.push(piece.to_string());
        }
    }
    for password in passwords {
        let decoded = percent_decoded(password);
        if decoded != password {
            out.push(decoded);
        }
        out.push(password.to_string());
    }
    out
}

/// The passwords, as written, of the URLs in `value` that have one in their userinfo:
/// `scheme://user:password@host…` (the user may be empty, as in `redis://:pw@host`). The
/// authority ends at the first `/`, `?`, `#` or white space, as RFC 3986 has it, so an `@`
/// or a `:` in the path (`https://host:8080/@scope`) is no password; a password holding a
/// raw `/` is not valid in a URL and is not recognised.
pub fn url_passwords(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = value[from..].find("://") {
        let at = from + found;
        from = at + 3;
        if !has_scheme(&value[..at]) {
            continue;
        }
        let rest = &value[from..];
        let end = rest
            .find(|c: char| matches!(c, '/' | '?' | '#') || c.is_whitespace())
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        // The last `@`: a password may hold a raw `@` (`u:p@ss@host`), a host cannot.
        let Some((userinfo, _host)) = authority.rsplit_once('@') else {
            continue;
        };
        if let Some((_user, password)) = userinfo.split_once(':')
            && !password.is_empty()
        {
            out.push(password);
        }
    }
    out
}

/// The secrets in `value` by their shape, whatever the variable's name: well-known token
/// formats (GitHub's `ghp_…` and `github_pat_…`, Slack's `xoxb-…`, an AWS key id `AKIA…`, a
/// JWT `eyJ….eyJ….…`), a PEM private key, a `Password=` or `Pwd=` of a connection string, and
/// the credentials of an `Authorization:` header (as `GIT_CONFIG_VALUE_0` or
/// `GIT_CONFIG_PARAMETERS` give git `http.extraHeader`). Each as written in `value`.
/// Keys known by their prefix: OpenAI's and Anthropic's (`sk-…`), Stripe's (`sk_live_…`,
/// `rk_live_…`), GitLab's (`glpat-…`), Google's (`AIza…`), Hugging Face's (`hf_…`), PyPI's and
/// npm's upload tokens; each with the fewest characters that follow it.
const VENDOR_PREFIXES: &[(&str, usize)] = &[
    ("sk-", 20),
    ("sk_live_", 16),
    ("sk_test_", 16),
    ("rk_live_", 16),
    ("glpat-", 20),
    ("AIza", 30),
    ("hf_", 30),
    ("pypi-", 40),
    ("npm_", 30),
];

pub fn shaped_secrets(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let lower = value.to_ascii_lowercase();
    let token_char = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
    // Where a token may start: not inside a word.
    let starts_word = |at: usize| at == 0 || !token_char(value.as_bytes()[at - 1]);
    let run = |from: usize, ok: &dyn Fn(u8) -> bool| {
        value.as_bytes()[from..]
            .iter()
            .take_while(|&&c| ok(c))
            .count()
    };
    for prefix in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"] {
        for (at, _) in value
            .match_indices(prefix)
            .filter(|(at, _)| starts_word(*at))
        {
            let len = run(at + prefix.len(), &|c| c.is_ascii_alphanumeric());
            if len >= 30 {
                push(&mut out, &value[at..at + prefix.len() + len]);
            }
        }
    }
    // Other services' keys by their prefix, with the fewest characters that follow one.
    for (prefix, least) in VENDOR_PREFIXES {
        for (at, _) in value
            .match_indices(prefix)
            .filter(|(at, _)| starts_word(*at))
        {
            let len = run(at + prefix.len(), &|c| token_char(c));
            if len >= *least {
                push(&mut out, &value[at..at + prefix.len() + len]);
            }
        }
    }
    for (at, _) in value
        .match_indices("github_pat_")
        .filter(|(at, _)| starts_word(*at))
    {
        let len = run(at + 11, &|c| c.is_ascii_alphanumeric() || c == b'_');
        if len >= 22 {
            push(&mut out, &value[at..at + 11 + len]);
        }
    }
    for (at, _) in value
        .match_indices("xox")
        .filter(|(at, _)| starts_word(*at))
    {
        let bytes = &value.as_bytes()[at..];
        if bytes.len() > 5 && b"abposr".contains(&bytes[3]) && bytes[4] == b'-' {
            let len = run(at + 5, &|c| c.is_ascii_alphanumeric() || c == b'-');
            if len >= 10 {
                push(&mut out, &value[at..at + 5 + len]);
            }
        }
    }
    for prefix in ["AKIA", "ASIA"] {
        for (at, _) in value
            .match_indices(prefix)
            .filter(|(at, _)| starts_word(*at))
        {
            let len = run(at + 4, &|c| c.is_ascii_uppercase() || c.is_ascii_digit());
            let after = value.as_bytes().get(at + 4 + len).copied();
            if len == 16 && !after.is_some_and(token_char) {
                push(&mut out, &value[at..at + 20]);
            }
        }
    }
    for (at, _) in value
        .match_indices("eyJ")
        .filter(|(at, _)| starts_word(*at))
    {
        let part = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'-';
        let header = 3 + run(at + 3, &part);
        if value[at + header..].starts_with(".eyJ") {
            let payload = header + 4 + run(at + header + 4, &part);
            if value[at + payload..].starts_with('.') {
                let signature = payload + 1 + run(at + payload + 1, &part);
                push(&mut out, &value[at..at + signature]);
            }
        }
    }
    for (at, _) in value.match_indices("-----BEGIN ") {
        let rest = &value[at + 11..];
        let Some(label_end) = rest.find("-----") else {
            continue;
        };
        if rest[..label_end].ends_with("PRIVATE KEY") {
            let end = rest[label_end + 5..]
                .find("-----END ")
                .and_then(|e| {
                    let from = label_end + 5 + e + 9;
                    rest[from..].find("-----").map(|f| from + f + 5)
                })
                .unwrap_or(rest.len());
            push(&mut out, &value[at..at + 11 + end]);
        }
    }
    for key in ["password=", "pwd="] {
        for (at, _) in lower.match_indices(key) {
            let before = lower.as_bytes()[..at].last().copied();
            if !before.is_none_or(|c| c == b';' || c.is_ascii_whitespace()) {
                continue;
            }
            let from = at + key.len();
            let len = run(from, &|c| c != b';' && !c.is_ascii_whitespace());
            push(&mut out, &value[from..from + len]);
        }
    }
    for (at, _) in lower.match_indices("authorization:") {
        let after = &value[at + 14..];
        let scheme_at = after.len() - after.trim_start().len();
        let scheme = after[scheme_at..]
            .bytes()
            .take_while(u8::is_ascii_alphabetic)
            .count();
        let rest = &after[scheme_at + scheme..];
        let gap = rest.len() - rest.trim_start().len();
        if scheme == 0 || gap == 0 {
            continue;
        }
        let credentials: &str = &rest[gap..];
        let len = credentials
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ';' | ','))
            .unwrap_or(credentials.len());
        push(&mut out, &credentials[..len]);
    }
    out
}

/// Adds a piece of a value, once (trimmed; an empty one is no secret).
fn push<'a>(out: &mut Vec<&'a str>, piece: &'a str) {
    let piece = piece.trim();
    if !piece.is_empty() && !out.contains(&piece) {
        out.push(piece);
    }
}

/// Whether `before` ends with a URL scheme: a letter, then letters, digits, `+`, `-`, `.`.
fn has_scheme(before: &str) -> bool {
    let scheme: Vec<u8> = before
        .bytes()
        .rev()
        .take_while(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
        .collect();
    scheme.last().is_some_and(u8::is_ascii_alphabetic)
}

/// `text` with its `%XX` escapes decoded (those that are not valid escapes, or would not
/// make UTF-8, are kept as written).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            // Two hex digits make at most 255.
            out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'%'));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_found_where_userinfo_has_one() {
        let cases: &[(&str, &[&str])] = &[
            ("postgres://u:pw@host/db", &["pw"]),
            ("redis://:pw@host:6379/0", &["pw"]),
            ("mysql+pymysql://u:p@ss@host", &["p@ss"]),
            ("amqp://u:p%2Fw@host", &["p%2Fw"]),
            ("a,redis://:one@h1,redis://:two@h2", &["one", "two"]),
            ("--db=postgres://u:pw@h --cache=http://h", &["pw"]),
            ("postgres://u@host/db", &[]),
            ("postgres://u:@host/db", &[]),
            ("https://host:8080/@scope/pkg", &[]),
            ("https://example.org/x:y@z", &[]),
            ("https://host/?next=a:b@c", &[]),
            ("://u:pw@host", &[]),
            ("1://u:pw@host", &[]),
            ("no url at all: a:b@c", &[]),
            ("", &[]),
        ];
        for (value, want) in cases {
            assert_eq!(url_passwords(value), *want, "{value}");
        }
    }

    #[test]
    fn values_to_redact() {
        assert_eq!(
            secret_values("ANY", "amqp://u:p%2Fw0rd@host"),
            ["amqp://u:p%2Fw0rd@host", "p/w0rd", "p%2Fw0rd"]
        );
        assert_eq!(secret_values("DB_PASS", "plain"), ["plain"]);
        assert!(secret_values("HOME", "/home/a").is_empty());
        assert!(is_secret("ANY", "postgres://u:pw@h"));
        assert!(!is_secret("ANY", "postgres://u@h"));
        assert_eq!(percent_decoded("a%41%zz%"), "aA%zz%");
        assert_eq!(percent_decoded("%ff"), "%ff");
    }

    #[test]
    fn values_shaped_like_secrets_are_secrets_whatever_the_name() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
        let cases: &[(&str, bool)] = &[
            ("ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", true),
            ("gho_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789", true),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123",
                true,
            ),
            ("xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", true),
            ("xoxp-1234567890-0987654321-AbCdEf", true),
            ("AKIAIOSFODNN7EXAMPLE", true),
            ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123", true),
            ("sk_live_51AbCdEfGhIjKlMnOp", true),
            ("glpat-AbCdEfGhIjKlMnOpQrSt", true),
            ("AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz0123456", true),
            ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", true),
            ("token=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", true),
            ("risk-assessment-for-the-whole-team", false),
            ("ask-me-anything", false),
            ("hf_short", false),
            ("id=AKIAIOSFODNN7EXAMPLE,region=x", true),
            (jwt, true),
            ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", true),
            (pem, true),
            ("-----BEGIN RSA PRIVATE KEY-----", true),
            ("-----BEGIN PRIVATE KEY-----\nMIIE", true),
            ("Server=db;Database=app;User Id=sa;Password=Hunter2!;", true),
            ("Driver={x};Server=h;Uid=u;Pwd=s3cret", true),
            ("host=h password=pw", true),
            ("Authorization: Bearer 9f8e7d6c5b4a", true),
            (
                "'http.extraheader'='AUTHORIZATION: basic dXNlcjpwYXNz'",
                true,
            ),
            ("authorization:Bearer abc", true),
            // Negatives: ordinary values.
            ("/usr/local/bin:/usr/bin:/bin", false),
            ("/home/a/project", false),
            ("xterm-256color", false),
            ("en_US.UTF-8", false),
            ("ghp_short", false),
            ("the ghp_ prefix", false),
            ("xoxb-", false),
            ("AKIA", false),
            ("AKIAIOSFODNN7EXAMPLEX", false),
            ("eyJhbGciOiJIUzI1NiJ9", false),
            ("-----BEGIN CERTIFICATE-----\nMIIB", false),
            ("-----BEGIN PUBLIC KEY-----", false),
            ("Server=db;Database=app;Trusted_Connection=yes", false),
            ("--password-file=/run/pw", false),
            ("PasswordAuthentication=no", false),
            ("Authorization", false),
            ("http.extraHeader", false),
            ("", false),
        ];
        for (value, secret) in cases {
            assert_eq!(is_secret("ANY", value), *secret, "{value:?}");
            assert_eq!(
                !secret_values("ANY", value).is_empty(),
                *secret,
                "{value:?}"
            );
        }
        // The token itself is redacted too, wherever it stands.
        let values = secret_values("ANY", "id=AKIAIOSFODNN7EXAMPLE,region=x");
        assert!(
            values.iter().any(|v| v == "AKIAIOSFODNN7EXAMPLE"),
            "{values:?}"
        );
        let values = secret_values("ANY", "Server=h;Password=Hunter2!;Db=x");
        assert!(values.iter().any(|v| v == "Hunter2!"), "{values:?}");
    }
}
