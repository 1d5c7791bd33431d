//! Contract tests of the tool registry: every tool's examples run against the
//! fixture world with outputs checked against the output schema and golden
//! files; invalid inputs name their field; the MCP tool list is the manifest's;
//! the generated manifest, skill doc and adapters are the committed bytes.

use std::collections::BTreeSet;
use std::path::PathBuf;

use aam::error::ErrorCode;
use aam::manifest::adapters::{Format, adapters};
use aam::manifest::skill_doc::skill_doc;
use aam::manifest::{manifest, to_text};
use aam::mcp::{AamServer, ServerOptions};
use aam::tools::{Context, Expect, Risk, ToolSpec, registry};
use rmcp::ServiceExt;
use serde_json::{Value, json};

use crate::support::{TestEnv, copy_tree, normalize};

/// The world the examples are written against (see `aam::tools::Example`).
fn fixture_world() -> TestEnv {
    let env = TestEnv::new();
    let repo = env.repo("sample-repo");
    copy_tree(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/sample"),
        &repo.dir,
    );
    repo.commit("sample artifacts");
    env.json(&["source", "add", "./sample-repo", "--name", "sample"]);
    env.json(&["registry", "init", "registry", "--name", "local", "--default"]);
    env.json(&[
        "pkg",
        "create",
        "--from-source",
        "sample",
        "--artifacts",
        "code-review",
        "--name",
        "review-kit",
        "--version",
        "1.0.0",
    ]);
    env.json(&["pkg", "publish", "review-kit"]);
    env.json(&["install", "review-kit@^1.0", "--platform", "claude"]);
    let manifest = env.path("review-kit/aam.yaml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("version: 1.0.0", "version: 1.1.0");
    std::fs::write(&manifest, text).unwrap();
    env.json(&["pkg", "publish", "review-kit"]);
    env.json(&["pkg", "init", "team-rules", "--yes"]);
    env.json(&["registry", "init", "extra-registry"]);
    // A registry folder no name is configured for.
    env.json(&["registry", "init", "spare-registry"]);
    env.json(&["registry", "remove", "spare-registry"]);
    env
}

/// A context like the machine front ends': the world root, sandboxed.
fn context(env: &TestEnv) -> Context {
    let root = env.root.path().canonicalize().unwrap();
    env.context(&root)
}

/// The order examples run in: reads, then writes, then destructive tools.
fn in_run_order(mut tools: Vec<ToolSpec>) -> Vec<ToolSpec> {
    let rank = |risk: Risk| match risk {
        Risk::Read => 0,
        Risk::Write => 1,
        Risk::Destructive => 2,
    };
    tools.sort_by_key(|t| (rank(t.risk), t.name));
    tools
}

/// Whether `actual` has everything `expected` has (see `aam::tools::Expect`).
fn contains(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|x| contains(x, v))),
        (Value::Array(a), Value::Array(e)) => {
            (e.is_empty() && a.is_empty())
                || (!e.is_empty() && e.len() <= a.len() && e.iter().zip(a).all(|(x, y)| contains(y, x)))
        }
        (a, e) => a == e,
    }
}

#[test]
fn every_example_runs_and_matches_its_schema_and_golden_file() {
    let env = fixture_world();
    // No integrity check can be recorded (a folder stands where the record would),
    // so each check runs and says so, whatever time passed since the last write.
    std::fs::create_dir(env.home().join("catalog-check.json")).unwrap();
    let ctx = context(&env);
    let mut failures = Vec::new();
    for spec in in_run_order(registry()) {
        if spec.examples.is_empty() {
            failures.push(format!("{} has no example", spec.name));
        }
        let output_schema = serde_json::to_value((spec.output_schema)()).unwrap();
        let validator = jsonschema::validator_for(&output_schema).unwrap();
        for (n, example) in spec.examples.iter().enumerate() {
            let input: Value = serde_json::from_str(example.input).unwrap();
            let what = format!("{} `{}`", spec.name, example.title);
            match (&example.expect, (spec.call)(&ctx, input)) {
                (Expect::Output(part), Ok(output)) => {
                    if let Err(problem) = validator.validate(&output) {
                        failures.push(format!("{what}: output breaks its schema: {problem}"));
                    }
                    let expected: Value = serde_json::from_str(part).unwrap();
                    if !contains(&output, &expected) {
                        failures.push(format!("{what}: expected at least {expected}\ngot {output}"));
                    }
                    insta::assert_json_snapshot!(format!("{}-{n}", spec.name), normalize(output, &env));
                }
                (Expect::Output(_), Err(e)) => failures.push(format!("{what}: {}: {}", e.code(), e.message())),
                (Expect::Error(code), Err(e)) => {
                    if e.code() != *code {
                        failures.push(format!("{what}: {} instead of {code:?}: {}", e.code(), e.message()));
                    }
                    if !spec.errors.contains(code) && !aam::tools::COMMON_ERRORS.contains(code) {
                        failures.push(format!("{what}: {code:?} is not among its documented errors"));
                    }
                }
                (Expect::Error(code), Ok(output)) => {
                    failures.push(format!("{what}: succeeded, expected {code:?}: {output}"))
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A JSON value of the wrong type for `schema`.
/// What a strict-mode model sends: every property of the adapter's schema,
/// `null` where the example leaves it out. Read tools answer it as they answer
/// the example.
#[test]
fn strict_adapter_inputs_are_accepted() {
    let env = fixture_world();
    let ctx = context(&env);
    let definitions = adapters(&manifest(), Format::Openai);
    let mut checked = 0;
    for spec in registry().into_iter().filter(|s| s.risk == Risk::Read) {
        let definition = definitions
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["function"]["name"] == spec.name)
            .unwrap();
        let properties = definition["function"]["parameters"]["properties"].as_object().unwrap();
        for example in spec.examples.iter().filter(|e| matches!(e.expect, Expect::Output(_))) {
            let plain: Value = serde_json::from_str(example.input).unwrap();
            let mut strict = plain.clone();
            for name in properties.keys() {
                strict
                    .as_object_mut()
                    .unwrap()
                    .entry(name.clone())
                    .or_insert(Value::Null);
            }
            let expected = (spec.call)(&ctx, plain).map(|o| normalize(o, &env));
            let got = (spec.call)(&ctx, strict.clone()).map(|o| normalize(o, &env));
            match (expected, got) {
                (Ok(expected), Ok(got)) => assert_eq!(got, expected, "{} with {strict}", spec.name),
                (_, Err(e)) => panic!("{} refuses {strict}: {}", spec.name, e.message()),
                (Err(e), _) => panic!("{}: {}", spec.name, e.message()),
            }
            checked += 1;
        }
    }
    assert!(checked >= 15, "{checked}");
}

fn wrong_type(schema: &Value, defs: &Value) -> Value {
    if let Some(target) = schema["$ref"].as_str() {
        return wrong_type(&defs[target.rsplit('/').next().unwrap()], defs);
    }
    let kind = match &schema["type"] {
        Value::Array(types) => types.iter().find(|t| *t != "null").cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    match kind.as_str() {
        Some("string") | None => json!({"not": "text"}),
        _ => json!("text"),
    }
}

#[test]
fn invalid_input_names_the_field() {
    let env = TestEnv::new();
    let ctx = context(&env);
    let invalid = |spec: &ToolSpec, input: Value, field: &str| {
        let error = (spec.call)(&ctx, input.clone())
            .err()
            .unwrap_or_else(|| panic!("{} accepted {input}", spec.name));
        assert_eq!(
            error.code(),
            ErrorCode::InvalidArgument,
            "{} {input}: {}",
            spec.name,
            error.message()
        );
        assert_eq!(error.category(), aam::error::Category::InvalidInput);
        assert!(
            error.message().contains(&format!("`{field}`")),
            "{} {input}: `{}` does not name `{field}`",
            spec.name,
            error.message()
        );
    };
    for spec in registry() {
        let schema = serde_json::to_value((spec.input_schema)()).unwrap();
        let example: Value = serde_json::from_str(spec.examples[0].input).unwrap();
        // Unknown field.
        let mut unknown = example.clone();
        unknown["no_such_field"] = json!(1);
        invalid(&spec, unknown, "no_such_field");
        // Missing field, for each required one.
        for field in schema["required"].as_array().into_iter().flatten() {
            let field = field.as_str().unwrap();
            let mut missing = example.clone();
            missing.as_object_mut().unwrap().remove(field);
            invalid(&spec, missing, field);
        }
        // Wrong type, for each field.
        for (field, property) in schema["properties"].as_object().into_iter().flatten() {
            let mut wrong = example.clone();
            wrong[field.as_str()] = wrong_type(property, &schema["$defs"]);
            invalid(&spec, wrong, field);
        }
    }
    // Out of range.
    for (tool, input) in [
        ("aam_search", json!({"query": "x", "limit": 0})),
        ("aam_search", json!({"query": "x", "limit": 1001})),
        ("aam_list_available", json!({"limit": 0})),
        ("aam_source_candidates", json!({"limit": 5000})),
    ] {
        invalid(&aam::tools::find(tool).unwrap(), input, "limit");
    }
}

#[test]
fn schemas_are_strict() {
    fn check(node: &Value, path: &str, tool: &str) {
        match node {
            Value::Object(map) => {
                if map.contains_key("properties") {
                    assert_eq!(
                        map.get("additionalProperties"),
                        Some(&Value::Bool(false)),
                        "{tool}: open object at {path}"
                    );
                    let properties: BTreeSet<&String> = map["properties"].as_object().unwrap().keys().collect();
                    for required in map.get("required").and_then(Value::as_array).into_iter().flatten() {
                        assert!(
                            properties.contains(&required.as_str().unwrap().to_string()),
                            "{tool}: {path}"
                        );
                    }
                }
                for (key, value) in map {
                    check(value, &format!("{path}/{key}"), tool);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| check(v, path, tool)),
            _ => {}
        }
    }
    for spec in registry() {
        for (side, schema) in [("input", (spec.input_schema)()), ("output", (spec.output_schema)())] {
            let schema = serde_json::to_value(schema).unwrap();
            assert_eq!(schema["type"], "object", "{} {side}", spec.name);
            check(&schema, side, spec.name);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_tool_list_is_the_manifest() {
    let env = TestEnv::new();
    let root = env.root.path().canonicalize().unwrap();
    let ctx = env.context(&root);
    let options = ServerOptions {
        allow_write: true,
        read_only: false,
        timeout: std::time::Duration::from_secs(60),
        transport: "stdio",
    };
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = AamServer::new(ctx, options).serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.unwrap();
    let listed = client.list_all_tools().await.unwrap();
    let manifest = manifest();
    let tools = manifest["tools"].as_array().unwrap();
    assert_eq!(listed.len(), tools.len());
    for (mcp, entry) in listed.iter().zip(tools) {
        assert_eq!(mcp.name, entry["name"].as_str().unwrap());
        assert_eq!(mcp.title.as_deref(), entry["title"].as_str());
        assert_eq!(mcp.description.as_deref(), entry["description"].as_str());
        let hints = mcp.annotations.clone().unwrap();
        assert_eq!(hints.read_only_hint, Some(entry["risk"] == "read"));
        assert_eq!(hints.destructive_hint, Some(entry["risk"] == "destructive"));
        assert_eq!(hints.idempotent_hint, entry["idempotent"].as_bool());
        let input = aam::manifest::sorted(Value::Object((*mcp.input_schema).clone()));
        // The same schemas, less the non-standard `format`s MCP clients warn about.
        let advertised = |schema: &Value| aam::manifest::sorted(aam::mcp::advertised_schema(schema.clone()));
        assert_eq!(input, advertised(&entry["input_schema"]), "{}", mcp.name);
        let output = aam::manifest::sorted(Value::Object((*mcp.output_schema.clone().unwrap()).clone()));
        assert_eq!(output, advertised(&entry["output_schema"]), "{}", mcp.name);
    }
    client.cancel().await.unwrap();
}

/// The committed copy of a generated file.
fn committed(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/tools").join(rel);
    std::fs::read_to_string(&path).unwrap_or_default()
}

#[test]
fn generated_files_are_the_committed_bytes() {
    let manifest = manifest();
    let mut generated = vec![
        ("manifest.json", to_text(&manifest)),
        ("aam/SKILL.md", skill_doc(&manifest)),
    ];
    for (file, format) in [
        ("adapters/openai.json", Format::Openai),
        ("adapters/anthropic.json", Format::Anthropic),
        ("adapters/gemini.json", Format::Gemini),
    ] {
        generated.push((file, to_text(&adapters(&manifest, format))));
    }
    let update = std::env::var("AAM_UPDATE_GENERATED").is_ok_and(|v| v == "1");
    let mut stale = Vec::new();
    for (file, text) in &generated {
        assert_eq!(*text, regenerate(file), "{file} is not deterministic");
        if committed(file) != *text {
            if update {
                let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/tools").join(file);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            } else {
                stale.push(*file);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "docs/tools/{stale:?} differ from what the registry generates; regenerate with `AAM_UPDATE_GENERATED=1 cargo test generated_files`"
    );
}

/// The same file, generated again by the binary.
fn regenerate(file: &str) -> String {
    let out = |args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    match file {
        "manifest.json" => out(&["tools", "manifest"]),
        "aam/SKILL.md" => out(&["tools", "skill-doc"]),
        adapter => {
            let format = adapter.trim_start_matches("adapters/").trim_end_matches(".json");
            out(&["tools", "adapters", "--format", format])
        }
    }
}
