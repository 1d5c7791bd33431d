//! Exports of the tool registry: the manifest (JSON), a skill doc that teaches
//! an agent to use aam, and function-calling definitions for other vendors.
//!
//! Everything is generated from [`crate::tools::registry`] through [`manifest`],
//! so the CLI, the MCP server and these files cannot drift apart. Outputs are
//! deterministic: the same binary writes the same bytes (object keys and tools
//! sorted).

pub mod adapters;
pub mod skill_doc;

use serde_json::{Map, Value, json};

use crate::error::ErrorCode;
use crate::tools::{COMMON_ERRORS, Expect, ToolSpec, registry};

/// Layout version of the manifest.
pub const SCHEMA_VERSION: u32 = 1;

/// The manifest: every tool with its title, description, risk, idempotency,
/// error codes, constraints, examples and strict input/output JSON Schemas,
/// plus every error code with its category and meaning.
pub fn manifest() -> Value {
    let tools: Vec<Value> = registry().iter().map(tool_entry).collect();
    let codes: Map<String, Value> = ErrorCode::ALL
        .iter()
        .map(|code| {
            (
                code.as_str().to_string(),
                json!({ "category": code.category(), "description": code.description() }),
            )
        })
        .collect();
    sorted(json!({
        "schema_version": SCHEMA_VERSION,
        "name": env!("CARGO_PKG_NAME"),
        "version": env!("CARGO_PKG_VERSION"),
        "common_errors": COMMON_ERRORS.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "error_codes": codes,
        "tools": tools,
    }))
}

fn tool_entry(spec: &ToolSpec) -> Value {
    let examples: Vec<Value> = spec
        .examples
        .iter()
        .map(|example| {
            let input: Value = serde_json::from_str(example.input).unwrap_or(Value::Null);
            match &example.expect {
                Expect::Output(part) => json!({
                    "title": example.title,
                    "input": input,
                    "output": serde_json::from_str::<Value>(part).unwrap_or(Value::Null),
                }),
                Expect::Error(code) => json!({ "title": example.title, "input": input, "error": code.as_str() }),
            }
        })
        .collect();
    json!({
        "name": spec.name,
        "title": spec.title,
        "description": spec.description,
        "risk": spec.risk,
        "idempotent": spec.idempotent,
        "open_world": spec.open_world,
        "errors": spec.errors.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "constraints": spec.constraints,
        "examples": examples,
        "input_schema": (spec.input_schema)(),
        "output_schema": (spec.output_schema)(),
    })
}

/// `value` with every object's keys in sorted order.
pub fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Pretty JSON with a final line break.
pub fn to_text(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_sorted() {
        let first = to_text(&manifest());
        assert_eq!(first, to_text(&manifest()), "same binary, same bytes");
        let value: Value = serde_json::from_str(&first).unwrap();
        let names: Vec<&str> = value["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        let mut ordered = names.clone();
        ordered.sort();
        assert_eq!(names, ordered);
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
        assert_eq!(value["schema_version"], SCHEMA_VERSION);
        assert_eq!(
            value["error_codes"]["AAM_FORBIDDEN"]["category"], "FORBIDDEN",
            "every code with its category"
        );
    }
}
