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
];

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
}

/// Whether a variable is a secret: by its name, or by a password in a URL of its value.
pub fn is_secret(name: &str, value: &str) -> bool {
    is_secret_name(name) || !url_passwords(value).is_empty()
}

/// What to redact of a variable: its whole value when it is a secret, and each password of
/// a URL in it, as written and percent-decoded (as a program that uses it has it).
pub fn secret_values(name: &str, value: &str) -> Vec<String> {
    let passwords = url_passwords(value);
    if passwords.is_empty() && !is_secret_name(name) {
        return Vec::new();
    }
    let mut out = vec![value.to_string()];
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
}
