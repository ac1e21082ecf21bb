//! The one tool models get, `execute {language, code}`, and reading its finished arguments
//! (while they stream, [`super::args_stream`] reads them).

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

#[cfg(test)]
mod tests {
    use super::*;

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
