//! Offering MCP tools to model APIs: names and schemas they accept.
//!
//! Names: MCP tool names SHOULD be `[A-Za-z0-9._-]{1,128}` but servers send anything;
//! OpenAI takes `^[a-zA-Z0-9_-]{1,64}$`, Anthropic `^[a-zA-Z0-9_-]{1,128}$`. A tool is
//! offered as `SERVER__tool` with every other character made `_`; a name too long or
//! already taken is cut and given a stable 8-digit hash. The way back is the map, never
//! splitting on `__` (server and tool names may hold it).
//!
//! Schemas: what providers reject is fixed, the rest passed through (see
//! `sanitize_input_schema`).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// The longest name every provider takes.
pub const MAX_NAME: usize = 64;

/// Model-facing names and the (server, tool) each stands for.
#[derive(Debug, Default, Clone)]
pub struct ToolNames {
    by_name: HashMap<String, (String, String)>,
}

impl ToolNames {
    /// The name the model sees for a server's tool (unique within this map).
    pub fn insert(&mut self, server: &str, tool: &str) -> String {
        let base = format!("{}__{}", clean(server), clean(tool));
        let mut name = base.clone();
        let mut salt = 0u32;
        while name.len() > MAX_NAME || self.by_name.contains_key(&name) {
            let hash = fnv1a(&format!("{server}\u{0}{tool}\u{0}{salt}"));
            // `base` is ASCII (cleaned), so cutting by bytes is cutting by characters.
            let head = &base[..base.len().min(MAX_NAME - 9)];
            name = format!("{head}_{hash:08x}");
            salt += 1;
        }
        self.by_name
            .insert(name.clone(), (server.to_string(), tool.to_string()));
        name
    }

    /// The (server, tool) a model-facing name stands for.
    pub fn resolve(&self, name: &str) -> Option<&(String, String)> {
        self.by_name.get(name)
    }
}

fn clean(s: &str) -> String {
    let cleaned: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_string()
    } else {
        cleaned
    }
}

fn fnv1a(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Keywords no provider needs and some reject.
const DROP_KEYS: &[&str] = &["$schema", "$id", "$comment"];
/// `format` values OpenAI accepts; others move into the description.
const OK_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Keywords whose value maps names to schemas (the names are not keywords).
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];

/// Cleans one schema and the schemas inside it.
fn scrub(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            for k in DROP_KEYS {
                m.remove(*k);
            }
            if let Some(Value::String(f)) = m.get("format").cloned()
                && !OK_FORMATS.contains(&f.as_str())
            {
                m.remove("format");
                let d = match m.get("description").and_then(Value::as_str) {
                    Some(d) => format!("{d} (format: {f})"),
                    None => format!("format: {f}"),
                };
                m.insert("description".into(), Value::String(d));
            }
            for (key, child) in m.iter_mut() {
                if SCHEMA_MAPS.contains(&key.as_str()) {
                    if let Value::Object(named) = child {
                        named.values_mut().for_each(scrub);
                    }
                } else if matches!(key.as_str(), "enum" | "const" | "default" | "examples") {
                    // Values, not schemas.
                } else {
                    scrub(child);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(scrub),
        _ => {}
    }
}

/// Merges a top-level `anyOf`/`oneOf`/`allOf` of object schemas into one object (OpenAI
/// takes none at the top): the union of the properties; `required` is what every branch
/// requires (anyOf, oneOf) or any branch does (allOf).
fn flatten_top(m: &mut Map<String, Value>) {
    for key in ["anyOf", "oneOf", "allOf"] {
        let Some(Value::Array(branches)) = m.remove(key) else {
            continue;
        };
        let mut props = m
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut required: Option<Vec<Value>> = None;
        for branch in &branches {
            if let Some(p) = branch.get("properties").and_then(Value::as_object) {
                for (k, s) in p {
                    props.entry(k.clone()).or_insert_with(|| s.clone());
                }
            }
            let r: Vec<Value> = branch
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            required = Some(match required {
                None => r,
                Some(mut all) if key == "allOf" => {
                    for x in r {
                        if !all.contains(&x) {
                            all.push(x);
                        }
                    }
                    all
                }
                Some(prev) => prev.into_iter().filter(|x| r.contains(x)).collect(),
            });
        }
        m.insert("properties".into(), Value::Object(props));
        if let Some(r) = required.filter(|r| !r.is_empty()) {
            let mut all = m
                .get("required")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for x in r {
                if !all.contains(&x) {
                    all.push(x);
                }
            }
            m.insert("required".into(), Value::Array(all));
        }
    }
}

/// An MCP `inputSchema` made acceptable to OpenAI (not strict), Anthropic and Ollama, and
/// whether the arguments are wrapped: a schema that is not an object's is offered as
/// `{"value": <schema>}`, and the call sends `value` alone.
pub fn sanitize_input_schema(schema: &Value) -> (Value, bool) {
    let mut s = schema.clone();
    scrub(&mut s);
    let Value::Object(mut m) = s else {
        return (json!({"type": "object", "properties": {}}), false);
    };
    let non_object = match m.get("type") {
        Some(Value::String(t)) => t != "object",
        Some(Value::Array(ts)) => !ts.iter().any(|t| t == "object"),
        _ => false,
    };
    if non_object || m.contains_key("enum") || m.contains_key("not") {
        return (
            json!({"type": "object", "properties": {"value": Value::Object(m)}, "required": ["value"]}),
            true,
        );
    }
    // `["object", "null"]` becomes `"object"` (Ollama wants a plain string at the top).
    m.insert("type".into(), Value::String("object".into()));
    flatten_top(&mut m);
    if !m.get("properties").is_some_and(Value::is_object) {
        m.insert("properties".into(), json!({}));
    }
    // `required` may only name properties that exist (OpenAI refuses the tool otherwise).
    let known: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(r) = m.get("required") {
        let kept: Vec<Value> = r
            .as_array()
            .into_iter()
            .flatten()
            .filter(|x| x.as_str().is_some_and(|k| known.iter().any(|n| n == k)))
            .cloned()
            .collect();
        if kept.is_empty() {
            m.remove("required");
        } else {
            m.insert("required".into(), Value::Array(kept));
        }
    }
    (Value::Object(m), false)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn names_are_valid_unique_and_reversible() {
        let mut names = ToolNames::default();
        let a = names.insert("fs", "read.file");
        let b = names.insert("fs", "read_file");
        let c = names.insert("fs", &"x".repeat(200));
        let d = names.insert("srv", "weird/name with spaces");
        let e = names.insert("a__b", "c");
        let f = names.insert("a", "b__c");
        let g = names.insert("fs", "");
        assert_eq!(a, "fs__read_file");
        assert_eq!(d, "srv__weird_name_with_spaces");
        for n in [&a, &b, &c, &d, &e, &f, &g] {
            assert!(valid(n), "{n}");
        }
        let all = [&a, &b, &c, &d, &e, &f, &g];
        for (i, x) in all.iter().enumerate() {
            for y in &all[i + 1..] {
                assert_ne!(x, y);
            }
        }
        assert_eq!(names.resolve(&a), Some(&("fs".into(), "read.file".into())));
        assert_eq!(names.resolve(&b), Some(&("fs".into(), "read_file".into())));
        assert_eq!(names.resolve(&c).map(|x| x.1.len()), Some(200));
        assert_eq!(names.resolve(&f), Some(&("a".into(), "b__c".into())));
        assert!(names.resolve("fs__nothing").is_none());
        // Stable: the same inserts give the same names.
        let mut again = ToolNames::default();
        again.insert("fs", "read.file");
        assert_eq!(again.insert("fs", "read_file"), b);
    }

    #[test]
    fn schemas_are_fixed_for_providers() {
        let (s, wrapped) = sanitize_input_schema(&json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {
                "when": {"type": "string", "format": "date-time"},
                "u": {"type": "string", "format": "uri", "description": "a link"},
                "$id": {"type": "string"}
            },
            "required": ["when", "ghost"]
        }));
        assert!(!wrapped);
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none());
        assert_eq!(s["required"], json!(["when"]));
        assert_eq!(s["properties"]["when"]["format"], "date-time");
        assert!(s["properties"]["u"].get("format").is_none());
        assert_eq!(s["properties"]["u"]["description"], "a link (format: uri)");
        // A property named like a keyword is a property.
        assert!(s["properties"].get("$id").is_some());

        let (s, _) = sanitize_input_schema(&json!({"oneOf": [
            {"type": "object", "properties": {"a": {"type": "string"}, "c": {}}, "required": ["a", "c"]},
            {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b", "c"]}]}));
        assert!(s.get("oneOf").is_none());
        assert_eq!(s["properties"].as_object().map(|m| m.len()), Some(3));
        assert_eq!(s["required"], json!(["c"]));

        let (s, wrapped) = sanitize_input_schema(&json!({"type": "string"}));
        assert!(wrapped);
        assert_eq!(s["required"], json!(["value"]));
        assert_eq!(s["properties"]["value"]["type"], "string");

        let (s, _) = sanitize_input_schema(&json!({"type": ["object", "null"]}));
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"], json!({}));
        let (s, _) = sanitize_input_schema(&json!(true));
        assert_eq!(s, json!({"type": "object", "properties": {}}));
        // Nested unions and enum values pass through unchanged.
        let nested = json!({"type": "object", "properties": {"m": {"oneOf": [{"const": "a"}, {"const": "b"}]}, "k": {"enum": [{"$id": 1}]}}});
        assert_eq!(sanitize_input_schema(&nested).0, nested);
    }
}
