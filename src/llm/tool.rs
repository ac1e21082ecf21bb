//! The one tool models get, `execute {language, code}`, and reading its arguments, including
//! while they are still streaming, so that a block's code shows as it is written.

use serde_json::{Value, json};

use crate::exec::Language;

pub const TOOL_NAME: &str = "execute";

const DESCRIPTION: &str = "Run code on the user's machine, in a persistent kernel for the language (variables, imports and the working directory persist between calls). The user sees each block and approves, edits or skips it before it runs. Returns the output (long output is cut in the middle) and the exit status.";

/// The tool's JSON schema for its parameters: language (one of the kernels') and code.
pub fn parameters_schema() -> Value {
    let languages: Vec<&str> = Language::ALL.iter().map(|l| l.name()).collect();
    json!({
        "type": "object",
        "properties": {
            "language": {
                "type": "string",
                "enum": languages,
                "description": "The language of the code."
            },
            "code": {
                "type": "string",
                "description": "The code to run."
            }
        },
        "required": ["language", "code"]
    })
}

pub fn description() -> &'static str {
    DESCRIPTION
}

/// The tool list in the OpenAI shape, which Ollama shares.
pub fn function_tools() -> Value {
    json!([{
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": DESCRIPTION,
            "parameters": parameters_schema(),
        }
    }])
}

/// The arguments of a finished call: language and code. Lenient about what models send:
/// a missing language with code present, `lang` for `language`, arguments wrapped in a
/// string.
pub fn parse_arguments(arguments: &str) -> Result<(String, String), String> {
    let value: Value = serde_json::from_str(arguments.trim()).map_err(|e| {
        format!(
            "the arguments are not valid JSON ({e}): {}",
            short(arguments)
        )
    })?;
    let value = match value {
        Value::String(inner) => serde_json::from_str(&inner).unwrap_or(Value::String(inner)),
        other => other,
    };
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| value.get(n).and_then(Value::as_str).map(str::to_string))
    };
    let code = field(&["code", "source", "script"])
        .ok_or_else(|| format!("the arguments have no `code`: {}", short(arguments)))?;
    let language = field(&["language", "lang"]).unwrap_or_else(|| "python".to_string());
    Ok((language, code))
}

fn short(s: &str) -> String {
    super::error::shorten(s, 120)
}

/// Reads a string field from JSON that may still be incomplete (`{"code": "print(1`),
/// decoding the escapes seen so far. None until the field's value has begun.
pub fn partial_string_field(json: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\"");
    let mut search = 0;
    let start = loop {
        let at = search + json[search..].find(&key)?;
        let rest = json[at + key.len()..].trim_start();
        if let Some(after_colon) = rest.strip_prefix(':') {
            let value = after_colon.trim_start();
            if let Some(body) = value.strip_prefix('"') {
                break json.len() - body.len();
            }
            return None;
        }
        search = at + key.len();
    };
    let mut out = String::new();
    let mut chars = json[start..].chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return Some(out),
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('b') => out.push('\u{8}'),
                Some('f') => out.push('\u{c}'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    if hex.len() < 4 {
                        return Some(out);
                    }
                    match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        Some(ch) => out.push(ch),
                        // A surrogate pair: decoded properly once the JSON is complete.
                        None => out.push('\u{fffd}'),
                    }
                }
                Some(other) => out.push(other),
                None => return Some(out),
            },
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_fields_decode_as_they_stream() {
        let full = r#"{"language": "python", "code": "print(\"hi\")\nx = 1\u00e9"}"#;
        for cut in 0..full.len() {
            if !full.is_char_boundary(cut) {
                continue;
            }
            let part = &full[..cut];
            if let Some(code) = partial_string_field(part, "code") {
                assert!(
                    "print(\"hi\")\nx = 1é".starts_with(&code),
                    "{part:?} -> {code:?}"
                );
            }
        }
        assert_eq!(
            partial_string_field(full, "code").as_deref(),
            Some("print(\"hi\")\nx = 1é")
        );
        assert_eq!(
            partial_string_field(full, "language").as_deref(),
            Some("python")
        );
        assert_eq!(partial_string_field(r#"{"lang"#, "language"), None);
    }

    #[test]
    fn arguments_parse_leniently() {
        assert_eq!(
            parse_arguments(r#"{"language":"bash","code":"ls"}"#).unwrap(),
            ("bash".to_string(), "ls".to_string())
        );
        assert_eq!(
            parse_arguments(r#""{\"lang\":\"r\",\"code\":\"1\"}""#).unwrap(),
            ("r".to_string(), "1".to_string())
        );
        assert!(parse_arguments("{").unwrap_err().contains("not valid JSON"));
        assert!(
            parse_arguments(r#"{"language":"python"}"#)
                .unwrap_err()
                .contains("no `code`")
        );
    }

    #[test]
    fn the_schema_enumerates_every_language() {
        let schema = parameters_schema();
        let langs = schema["properties"]["language"]["enum"].as_array().unwrap();
        assert_eq!(langs.len(), Language::ALL.len());
        assert!(langs.iter().any(|l| l == "python"));
    }
}
