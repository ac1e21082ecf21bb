//! The tools the engine offers, defined once: `execute {language, code}` as the model gets it
//! and as an MCP client gets it (with `timeout_secs`), and reading a call's finished
//! arguments (while they stream, `llm::args_stream` reads them).

use serde_json::{Value, json};

use crate::exec::Language;
use crate::protocol::ToolDef;

pub const TOOL_NAME: &str = "execute";

const FOR_MODEL: &str = "Run code on the user's machine, in a persistent kernel for the language (variables, imports and the working directory persist between calls). The user sees each block and approves, edits or skips it before it runs. Returns the output (long output is cut in the middle) and the exit status.";

const FOR_CALLER: &str = "Run code on this machine in a persistent kernel for the language: variables, imports, functions and the working directory persist between calls for as long as this MCP connection lives (`reset` starts a kernel afresh). Every block passes oi-tui's policy first: a block its rules deny never runs, and one that needs a person's approval is shown to the user, who may approve, edit or decline it (if edited, the result says so and shows the code that ran). Returns the output (a long output keeps its head and tail, with the middle cut), the exit status or signal, the duration, and whether kernel state was lost, and the images the code made (figures it showed, image files it wrote). Prefer several short blocks to one long one; print what you need to see.";

/// Who the `execute` tool is offered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The model inside oi-tui.
    Model,
    /// A caller outside, over MCP: it may also set a timeout.
    Caller,
}

/// The `execute` tool, for the model or for a caller over MCP: one definition.
pub fn execute_tool(audience: Audience) -> ToolDef {
    ToolDef {
        name: TOOL_NAME.to_string(),
        description: match audience {
            Audience::Model => FOR_MODEL,
            Audience::Caller => FOR_CALLER,
        }
        .to_string(),
        parameters: parameters_schema(audience),
    }
}

impl super::Engine {
    /// The tools offered to the model now: `execute`, then the tools of the user's MCP
    /// servers that are up; none when it proposes fenced blocks.
    pub(super) fn offered_tools(&self) -> Vec<ToolDef> {
        if !self.tools {
            return Vec::new();
        }
        let mut tools = vec![execute_tool(Audience::Model)];
        if let Some(host) = &self.config.tool_host {
            tools.extend(
                host.tools()
                    .into_iter()
                    .filter(|t| t.def.name != TOOL_NAME)
                    .map(|t| t.def),
            );
        }
        tools
    }
}

/// The tool's JSON schema for its parameters: language (one of the kernels') and code, and
/// for a caller a timeout.
fn parameters_schema(audience: Audience) -> Value {
    let languages: Vec<&str> = Language::ALL.iter().map(|l| l.name()).collect();
    let mut schema = json!({
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
    });
    if audience == Audience::Caller {
        schema["properties"]["timeout_secs"] = json!({
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Stop the block after this many seconds (it is interrupted; the kernel survives when it can). Default: oi-tui's block timeout, if any."
        });
    }
    schema
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
    crate::llm::shorten(s, 120)
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
        let schema = execute_tool(Audience::Model).parameters;
        let langs = schema["properties"]["language"]["enum"].as_array().unwrap();
        assert_eq!(langs.len(), Language::ALL.len());
        assert!(langs.iter().any(|l| l == "python"));
        assert!(schema["properties"].get("timeout_secs").is_none());
    }

    #[test]
    fn a_caller_gets_the_same_tool_with_a_timeout() {
        let model = execute_tool(Audience::Model);
        let caller = execute_tool(Audience::Caller);
        assert_eq!(model.name, caller.name);
        assert_eq!(
            model.parameters["properties"]["code"],
            caller.parameters["properties"]["code"]
        );
        assert_eq!(
            caller.parameters["properties"]["timeout_secs"]["type"],
            "number"
        );
        assert_eq!(caller.parameters["required"], model.parameters["required"]);
    }
}
