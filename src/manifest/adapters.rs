//! Tool definitions in each vendor's function-calling format, from the
//! manifest, shaped for the vendor's strict schema rules:
//!
//! - OpenAI (`strict: true`) and Anthropic (`strict: true`): every object closed
//!   (`additionalProperties: false`) with every property required, optional ones
//!   made nullable instead; no `default`; only the `format`s they accept;
//!   `oneOf` as `anyOf`, `const` as a one-value `enum`.
//! - Gemini: the OpenAPI subset of `FunctionDeclaration.parameters`: references
//!   inlined, upper-case types, `nullable` instead of `null` types, no
//!   `additionalProperties`, `$defs` or unknown `format`s.

use serde_json::{Map, Value, json};

use super::sorted;

/// A vendor's function-calling format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// OpenAI function tools (Chat Completions and Responses).
    Openai,
    /// Anthropic Messages API tools.
    Anthropic,
    /// Gemini function declarations.
    Gemini,
}

/// The manifest's tools in `format`.
pub fn adapters(manifest: &Value, format: Format) -> Value {
    let tools = manifest["tools"].as_array().cloned().unwrap_or_default();
    let definitions: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let name = tool["name"].clone();
            let description = tool["description"].clone();
            let schema = &tool["input_schema"];
            match format {
                Format::Openai => json!({
                    "type": "function",
                    "function": { "name": name, "description": description, "parameters": strict(schema), "strict": true },
                }),
                Format::Anthropic => json!({
                    "name": name, "description": description, "input_schema": strict(schema), "strict": true,
                }),
                Format::Gemini => json!({ "name": name, "description": description, "parameters": gemini(schema) }),
            }
        })
        .collect();
    sorted(match format {
        Format::Gemini => json!([{ "functionDeclarations": definitions }]),
        _ => Value::Array(definitions),
    })
}

/// String formats OpenAI's strict mode accepts.
const STRICT_FORMATS: &[&str] = &[
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

/// The schema under strict rules (see the module docs).
fn strict(schema: &Value) -> Value {
    let mut out = strict_node(schema);
    if let Value::Object(map) = &mut out {
        map.remove("$schema");
        map.remove("title");
    }
    out
}

fn strict_node(node: &Value) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "default" | "examples" => {}
            "format" if !value.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)) => {}
            "const" => {
                out.insert("enum".into(), json!([value]));
            }
            "oneOf" => {
                out.insert("anyOf".into(), strict_node(value));
            }
            "properties" | "$defs" => {
                let children: Map<String, Value> = value
                    .as_object()
                    .map(|m| m.iter().map(|(k, v)| (k.clone(), strict_node(v))).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(children));
            }
            _ => {
                let value = match value {
                    Value::Array(items) => Value::Array(items.iter().map(strict_node).collect()),
                    Value::Object(_) => strict_node(value),
                    other => other.clone(),
                };
                out.insert(key.clone(), value);
            }
        }
    }
    if let Some(Value::Object(properties)) = out.get("properties").cloned() {
        let required: Vec<String> = out
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let mut closed = Map::new();
        for (name, property) in properties {
            let property = if required.contains(&name) {
                property
            } else {
                nullable(property)
            };
            closed.insert(name, property);
        }
        let all: Vec<Value> = closed.keys().map(|k| Value::String(k.clone())).collect();
        out.insert("properties".into(), Value::Object(closed));
        out.insert("required".into(), Value::Array(all));
        out.insert("additionalProperties".into(), Value::Bool(false));
    } else if out.get("type") == Some(&Value::String("object".into())) {
        out.insert("additionalProperties".into(), Value::Bool(false));
        out.entry("properties").or_insert_with(|| json!({}));
        out.entry("required").or_insert_with(|| json!([]));
    }
    out.into()
}

/// A schema that also admits `null`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let admits_null = |t: &Value| t == "null" || t.as_array().is_some_and(|a| a.iter().any(|x| x == "null"));
    if let Some(kind) = map.get("type").cloned() {
        if !admits_null(&kind) {
            let mut types = match kind {
                Value::Array(items) => items,
                single => vec![single],
            };
            types.push(Value::String("null".into()));
            map.insert("type".into(), Value::Array(types));
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return Value::Object(map);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches.iter().any(|b| b.get("type").is_some_and(admits_null)) {
            branches.push(json!({ "type": "null" }));
        }
        return Value::Object(map);
    }
    // A `$ref` (or anything else): wrap it.
    let description = map.remove("description");
    let mut wrapped = Map::new();
    if let Some(description) = description {
        wrapped.insert("description".into(), description);
    }
    wrapped.insert("anyOf".into(), json!([Value::Object(map), { "type": "null" }]));
    Value::Object(wrapped)
}

/// Keys Gemini's schema object accepts.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minimum",
    "maximum",
    "items",
    "anyOf",
];

/// The schema in Gemini's OpenAPI subset (references inlined from `$defs`).
fn gemini(schema: &Value) -> Value {
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    gemini_node(schema, &defs, 0)
}

fn gemini_node(node: &Value, defs: &Value, depth: usize) -> Value {
    let Value::Object(map) = node else {
        return node.clone();
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str)
        && depth < 32
    {
        let name = target.rsplit('/').next().unwrap_or_default();
        let mut resolved = gemini_node(&defs[name], defs, depth + 1);
        if let (Some(description), Value::Object(r)) = (map.get("description"), &mut resolved) {
            r.insert("description".into(), description.clone());
        }
        return resolved;
    }
    let mut out = Map::new();
    let mut nullable = false;
    for (key, value) in map {
        match key.as_str() {
            "type" => match value {
                Value::Array(types) => {
                    nullable |= types.iter().any(|t| t == "null");
                    if let Some(kind) = types.iter().find(|t| *t != "null") {
                        out.insert("type".into(), upper(kind));
                    }
                }
                single => {
                    out.insert("type".into(), upper(single));
                }
            },
            "const" => {
                out.insert("enum".into(), json!([value]));
            }
            "oneOf" | "anyOf" => {
                let branches: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| {
                        let null = b.get("type").is_some_and(|t| t == "null");
                        nullable |= null;
                        !null
                    })
                    .map(|b| gemini_node(b, defs, depth + 1))
                    .collect();
                match branches.len() {
                    1 => {
                        if let Value::Object(only) = &branches[0] {
                            for (k, v) in only {
                                out.entry(k.clone()).or_insert(v.clone());
                            }
                        }
                    }
                    _ => {
                        out.insert("anyOf".into(), Value::Array(branches));
                    }
                }
            }
            "format" => {
                let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
                let ok = matches!(
                    (kind, value.as_str().unwrap_or_default()),
                    ("string", "date-time" | "enum") | ("integer", "int32" | "int64") | ("number", "float" | "double")
                );
                if ok {
                    out.insert("format".into(), value.clone());
                }
            }
            "enum" => {
                let values: Vec<Value> = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|v| !v.is_null())
                    .cloned()
                    .collect();
                out.insert("enum".into(), Value::Array(values));
            }
            "properties" => {
                let children: Map<String, Value> = value
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), gemini_node(v, defs, depth + 1)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert("properties".into(), Value::Object(children));
            }
            "items" => {
                out.insert("items".into(), gemini_node(value, defs, depth + 1));
            }
            key if GEMINI_KEYS.contains(&key) => {
                out.insert(key.to_string(), value.clone());
            }
            _ => {}
        }
    }
    if out.get("enum").is_some() && !out.contains_key("type") {
        out.insert("type".into(), Value::String("STRING".into()));
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    Value::Object(out)
}

fn upper(kind: &Value) -> Value {
    Value::String(kind.as_str().unwrap_or("string").to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every object schema below `node`, with its path.
    fn objects<'v>(node: &'v Value, path: String, out: &mut Vec<(String, &'v Map<String, Value>)>) {
        match node {
            Value::Object(map) => {
                if map.contains_key("properties") || map.get("type") == Some(&Value::from("object")) {
                    out.push((path.clone(), map));
                }
                for (k, v) in map {
                    objects(v, format!("{path}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    objects(v, format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    fn keys(node: &Value, out: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                for (k, v) in map {
                    out.push(k.clone());
                    if k != "properties" {
                        keys(v, out);
                    } else if let Value::Object(props) = v {
                        props.values().for_each(|p| keys(p, out));
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }

    #[test]
    fn openai_and_anthropic_schemas_are_strict() {
        let manifest = super::super::manifest();
        for format in [Format::Openai, Format::Anthropic] {
            let out = adapters(&manifest, format);
            let tools = out.as_array().unwrap();
            assert_eq!(tools.len(), manifest["tools"].as_array().unwrap().len());
            for tool in tools {
                let parameters = match format {
                    Format::Openai => &tool["function"]["parameters"],
                    _ => &tool["input_schema"],
                };
                assert_eq!(parameters["type"], "object", "{tool}");
                let mut found = Vec::new();
                objects(parameters, String::new(), &mut found);
                for (path, object) in found {
                    assert_eq!(
                        object.get("additionalProperties"),
                        Some(&Value::Bool(false)),
                        "{path} {tool}"
                    );
                    let properties: Vec<&String> = object["properties"].as_object().unwrap().keys().collect();
                    let required: Vec<&str> = object["required"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r.as_str().unwrap())
                        .collect();
                    assert_eq!(properties.len(), required.len(), "every property required at {path}");
                }
                let mut all = Vec::new();
                keys(parameters, &mut all);
                assert!(
                    !all.iter().any(|k| k == "default" || k == "oneOf" || k == "$schema"),
                    "{tool}"
                );
            }
        }
    }

    #[test]
    fn optional_fields_become_nullable() {
        let schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "format": "uint32", "minimum": 0, "default": 20},
                "kind": {"$ref": "#/$defs/Kind", "description": "Kind"},
                "tag": {"type": ["string", "null"]},
            },
            "required": ["query"],
            "$defs": {"Kind": {"type": "string", "enum": ["a", "b"]}},
        });
        let strict = strict(&schema);
        assert_eq!(strict["properties"]["query"], json!({"type": "string"}));
        assert_eq!(
            strict["properties"]["limit"],
            json!({"type": ["integer", "null"], "minimum": 0})
        );
        assert_eq!(
            strict["properties"]["kind"],
            json!({"description": "Kind", "anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}]})
        );
        assert_eq!(strict["properties"]["tag"], json!({"type": ["string", "null"]}));
        assert_eq!(strict["required"], json!(["query", "limit", "kind", "tag"]));

        let gemini = gemini(&schema);
        assert_eq!(gemini["type"], "OBJECT");
        assert_eq!(
            gemini["properties"]["kind"],
            json!({"type": "STRING", "enum": ["a", "b"], "description": "Kind"})
        );
        assert_eq!(gemini["properties"]["tag"], json!({"type": "STRING", "nullable": true}));
        assert_eq!(gemini["properties"]["limit"], json!({"type": "INTEGER", "minimum": 0}));
        assert!(gemini.get("$defs").is_none() && gemini.get("additionalProperties").is_none());
    }
}
