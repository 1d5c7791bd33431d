//! The MCP server: an in-process client over a duplex for every tool, resource
//! and prompt; the real binary over stdio; the real binary over Streamable HTTP.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use aam::mcp::{AamServer, ServerOptions};
use aam::tools::{Context, registry};
use rmcp::model::{CallToolRequestParams, CallToolResult, GetPromptRequestParams, ReadResourceRequestParams};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceExt};
use serde_json::{Value, json};

use crate::support::{TestEnv, skill};

type Client = RunningService<RoleClient, ()>;

/// A home with a source (`upstream`: skills `pdf` and `docx`), a default
/// registry (`reg`, holding `kit` 1.0.0) and the test root as the project.
pub(crate) fn world() -> TestEnv {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "Fill PDF forms"))
        .write("skills/docx/SKILL.md", skill("docx", "Edit Word files"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "upstream"]);
    env.json(&["registry", "init", "reg", "--default"]);
    env.json(&["pkg", "init", "kit", "--yes"]);
    env.json(&["pkg", "publish", "kit"]);
    env
}

pub(crate) fn options(allow_write: bool) -> ServerOptions {
    ServerOptions {
        allow_write,
        read_only: false,
        timeout: Duration::from_secs(60),
        transport: "stdio",
    }
}

/// A client connected in-process to a server over `env`'s home, serving its root.
async fn connect(env: &TestEnv, options: ServerOptions) -> Client {
    connect_at(env, env.root.path(), options).await
}

/// A client connected in-process to a server over `env`'s home, serving `root`.
pub(crate) async fn connect_at(env: &TestEnv, root: &Path, options: ServerOptions) -> Client {
    let root = root.canonicalize().unwrap();
    serve(env.context(&root), options).await
}

/// A client connected in-process to a server calling tools in `ctx`.
async fn serve(ctx: Context, options: ServerOptions) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = AamServer::new(ctx, options);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("client connects")
}

/// Calls `tool`, checking the result the way the TypeScript SDK does: any
/// `structuredContent` (errors included) must match the tool's advertised
/// output schema.
async fn call(client: &Peer<RoleClient>, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: protocol error {e}"));
    if let Some(structured) = &result.structured_content {
        let tools = client.list_all_tools().await.unwrap();
        let listed = tools
            .iter()
            .find(|t| t.name == tool)
            .expect("the called tool is listed");
        let schema = Value::Object(listed.output_schema.as_deref().cloned().expect("an output schema"));
        let validator = jsonschema::validator_for(&schema).unwrap();
        if let Err(problem) = validator.validate(structured) {
            panic!("{tool}: structuredContent breaks the output schema ({problem}): {structured}");
        }
    }
    result
}

/// The structured output of a successful call.
pub(crate) async fn ok(client: &Peer<RoleClient>, tool: &str, arguments: Value) -> Value {
    let result = call(client, tool, arguments.clone()).await;
    assert_ne!(result.is_error, Some(true), "{tool} {arguments}: {result:?}");
    let value = result.structured_content.clone().expect("structured content");
    let text = result.content[0].as_text().expect("a text block").text.clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        value,
        "text mirrors the structure"
    );
    value
}

/// The error body of a failed call (in `_meta["aam/error"]`, never in
/// `structuredContent`), checking its text form.
async fn fails(client: &Peer<RoleClient>, tool: &str, arguments: Value, code: &str) -> Value {
    let result = call(client, tool, arguments.clone()).await;
    assert_eq!(result.is_error, Some(true), "{tool} {arguments}: {result:?}");
    assert_eq!(
        result.structured_content, None,
        "{tool}: errors carry no structuredContent"
    );
    let meta = result.meta.as_ref().expect("errors carry `_meta`");
    let body = meta.0.get("aam/error").cloned().expect("`_meta` holds `aam/error`");
    assert_eq!(body["code"], code, "{tool}: {body}");
    let categories = [
        "INVALID_INPUT",
        "NOT_FOUND",
        "CONFLICT",
        "UNAUTHORIZED",
        "FORBIDDEN",
        "TIMEOUT",
        "RATE_LIMITED",
        "UPSTREAM_ERROR",
        "INTERNAL_ERROR",
    ];
    assert!(categories.contains(&body["category"].as_str().unwrap()), "{body}");
    let text = &result.content[0].as_text().unwrap().text;
    assert!(text.starts_with(&format!("[{code}] ")), "{text}");
    assert!(text.contains(body["message"].as_str().unwrap()), "{text}");
    if let Some(hint) = body["hint"].as_str() {
        assert!(text.contains(&format!("\nhint: {hint}")), "{text}");
    }
    body
}

async fn read(client: &Peer<RoleClient>, uri: &str) -> String {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap_or_else(|e| panic!("{uri}: {e}"));
    match serde_json::to_value(&result.contents[0]).unwrap() {
        Value::Object(map) => map["text"].as_str().unwrap().to_string(),
        other => panic!("{other}"),
    }
}

async fn read_json(client: &Peer<RoleClient>, uri: &str) -> Value {
    serde_json::from_str(&read(client, uri).await).unwrap()
}

/// A valid call of every registered tool, in an order that works.
fn valid_calls(env: &TestEnv) -> Vec<(&'static str, Value)> {
    let second = env.repo("second");
    second.write(
        "agents/helper.md",
        "---\nname: helper\ndescription: Helps\n---\nYou help.\n",
    );
    second.commit("c1");
    vec![
        ("aam_source_list", json!({})),
        ("aam_source_scan", json!({"name": "upstream"})),
        ("aam_source_diff", json!({"name": "upstream"})),
        ("aam_source_update", json!({"name": "upstream"})),
        ("aam_source_add", json!({"spec": "./second"})),
        ("aam_source_candidates", json!({"source": "upstream"})),
        ("aam_search", json!({"query": "pdf"})),
        ("aam_info", json!({"name": "upstream/pdf"})),
        ("aam_audit", json!({"target": "upstream", "min_severity": "warn"})),
        ("aam_list_available", json!({})),
        ("aam_catalog_reindex", json!({})),
        ("aam_catalog_stats", json!({})),
        ("aam_catalog_check", json!({})),
        ("aam_catalog_repair", json!({})),
        (
            "aam_catalog_export",
            json!({"format": "jsonl", "output": "audit.jsonl"}),
        ),
        ("aam_doctor", json!({})),
        ("aam_agents", json!({"detected": true})),
        (
            "aam_create_package",
            json!({"from_source": "upstream", "artifacts": ["pdf"], "name": "pdf-kit"}),
        ),
        ("aam_validate", json!({"path": "pdf-kit"})),
        ("aam_pack", json!({"path": "pdf-kit"})),
        ("aam_publish", json!({"archive": "pdf-kit"})),
        ("aam_init_package", json!({"name": "fresh"})),
        ("aam_registry_list", json!({})),
        ("aam_registry_init", json!({"path": "reg2", "name": "reg2"})),
        ("aam_registry_remove", json!({"name": "reg2"})),
        ("aam_registry_add", json!({"name": "again", "url": "reg2"})),
        ("aam_config_set", json!({"key": "default_platforms", "value": "claude"})),
        ("aam_config_get", json!({})),
        ("aam_init", json!({"platforms": ["claude"]})),
        ("aam_install", json!({"specs": ["kit"]})),
        ("aam_list", json!({})),
        ("aam_package_info", json!({"name": "kit"})),
        ("aam_verify", json!({"package": "kit"})),
        ("aam_verify_all", json!({})),
        ("aam_diff_all", json!({})),
        ("aam_diff", json!({"package": "kit"})),
        ("aam_outdated", json!({})),
        ("aam_inventory", json!({})),
        ("aam_adopt", json!({"all": true})),
        ("aam_upgrade", json!({})),
        ("aam_uninstall", json!({"package": "kit"})),
        ("aam_source_remove", json!({"name": "second"})),
        ("aam_source_enable_defaults", json!({})),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_answers_valid_and_invalid_input() {
    let env = world();
    let client = connect(&env, options(true)).await;
    let listed: BTreeSet<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let registered: BTreeSet<String> = registry().iter().map(|t| t.name.to_string()).collect();
    assert_eq!(
        listed, registered,
        "with --allow-write every registered tool is offered"
    );

    let calls = valid_calls(&env);
    let covered: BTreeSet<String> = calls.iter().map(|(name, _)| name.to_string()).collect();
    assert_eq!(covered, registered, "every registered tool has a call here");
    for (tool, arguments) in calls {
        let output = ok(&client, tool, arguments).await;
        assert!(output.is_object(), "{tool}: {output}");
        // Invalid input names the field.
        let body = fails(&client, tool, json!({"no_such_field": 1}), "AAM_INVALID_ARGUMENT").await;
        assert!(
            body["message"].as_str().unwrap().contains("no_such_field"),
            "{tool}: {body}"
        );
    }
    // A wrong type and a missing field name theirs too.
    let body = fails(
        &client,
        "aam_search",
        json!({"query": "x", "limit": "many"}),
        "AAM_INVALID_ARGUMENT",
    )
    .await;
    assert!(body["message"].as_str().unwrap().contains("`limit`"), "{body}");
    let body = fails(&client, "aam_source_scan", json!({}), "AAM_INVALID_ARGUMENT").await;
    assert!(body["message"].as_str().unwrap().contains("`name`"), "{body}");
    // Domain errors are results with their code, never protocol errors.
    let body = fails(
        &client,
        "aam_source_scan",
        json!({"name": "ghost"}),
        "AAM_SOURCE_NOT_FOUND",
    )
    .await;
    assert_eq!(body["category"], "NOT_FOUND");
    assert!(body["hint"].is_string());
    client.cancel().await.unwrap();
}

/// `aam_info` answers a package name with the package (as `aam info` does),
/// and `source/artifact` with the artifact, both matching its output schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_answers_a_package_name_with_the_package() {
    let env = world();
    let client = connect(&env, options(false)).await;
    let package = ok(&client, "aam_info", json!({"name": "kit"})).await;
    assert_eq!(package["name"], "kit", "{package}");
    assert_eq!(package["registry"], "reg", "{package}");
    assert_eq!(package["versions"], json!(["0.1.0"]), "{package}");
    assert_eq!(package["installed_version"], Value::Null, "{package}");
    assert!(package.get("qualified_name").is_none(), "{package}");
    assert_eq!(package, ok(&client, "aam_package_info", json!({"name": "kit"})).await);
    let artifact = ok(&client, "aam_info", json!({"name": "pdf"})).await;
    assert_eq!(artifact["qualified_name"], "upstream/pdf", "{artifact}");
    fails(&client, "aam_info", json!({"name": "ghost"}), "AAM_ARTIFACT_NOT_FOUND").await;
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_tools_are_hidden_refused_and_confined() {
    let env = world();
    let before = env.state();

    // Without --allow-write: only read tools, and the others are unknown.
    let reader = connect(&env, options(false)).await;
    let tools = reader.list_all_tools().await.unwrap();
    for tool in &tools {
        let hints = tool.annotations.clone().unwrap();
        assert_eq!(hints.read_only_hint, Some(true), "{}", tool.name);
        assert!(tool.output_schema.is_some(), "{}", tool.name);
    }
    let names: BTreeSet<String> = tools.iter().map(|t| t.name.to_string()).collect();
    for read in [
        "aam_search",
        "aam_info",
        "aam_list",
        "aam_validate",
        "aam_verify",
        "aam_diff",
        "aam_outdated",
        "aam_source_list",
        "aam_source_scan",
        "aam_source_candidates",
        "aam_source_diff",
        "aam_registry_list",
        "aam_config_get",
    ] {
        assert!(names.contains(read), "{read} is offered");
    }
    for write in [
        "aam_source_add",
        "aam_install",
        "aam_publish",
        "aam_config_set",
        "aam_uninstall",
    ] {
        assert!(!names.contains(write), "{write} is hidden");
        let arguments = json!({"specs": ["kit"]}).as_object().unwrap().clone();
        let err = reader
            .call_tool(CallToolRequestParams::new(write).with_arguments(arguments))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("tool not found"), "{write}: {err}");
        assert!(err.to_string().contains("--allow-write"), "says how to get it: {err}");
    }
    let err = reader
        .call_tool(CallToolRequestParams::new("aam_no_such_tool"))
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("--allow-write"), "{err}");
    // A name of a megabyte is quoted cut short.
    let err = reader
        .call_tool(CallToolRequestParams::new("x".repeat(1 << 20)))
        .await
        .unwrap_err();
    assert!(err.to_string().len() < 2000, "{}", err.to_string().len());
    reader.cancel().await.unwrap();

    // Read-only mode refuses every write, even with --allow-write.
    let mut locked = options(true);
    locked.read_only = true;
    let client = connect(&env, locked).await;
    let body = fails(
        &client,
        "aam_install",
        json!({"specs": ["kit"], "platforms": ["claude"]}),
        "AAM_FORBIDDEN",
    )
    .await;
    assert_eq!(body["category"], "FORBIDDEN");
    fails(
        &client,
        "aam_source_remove",
        json!({"name": "upstream"}),
        "AAM_FORBIDDEN",
    )
    .await;
    assert_eq!(
        ok(&client, "aam_source_list", json!({})).await["sources"][0]["name"],
        "upstream"
    );
    client.cancel().await.unwrap();
    assert_eq!(env.state(), before, "nothing changed");

    // Paths outside the project and AAM_HOME are refused, after following
    // links, the user's home folder (for a global install) among them.
    let user_home = tempfile::tempdir().unwrap();
    let root = env.root.path().canonicalize().unwrap();
    let client = serve(
        env.context(&root).with_user_home(user_home.path().to_path_buf()),
        options(true),
    )
    .await;
    std::os::unix::fs::symlink("/tmp", env.path("escape")).unwrap();
    for (tool, arguments) in [
        ("aam_validate", json!({"path": "/etc"})),
        ("aam_registry_init", json!({"path": "../outside-registry"})),
        ("aam_pack", json!({"path": "kit", "output": "escape/kit.aam"})),
        (
            "aam_install",
            json!({"specs": ["kit"], "platforms": ["claude"], "global": true}),
        ),
        ("aam_source_add", json!({"spec": "/etc"})),
    ] {
        let body = fails(&client, tool, arguments.clone(), "AAM_FORBIDDEN").await;
        let message = body["message"].as_str().unwrap();
        assert!(
            message.contains("outside the project and AAM_HOME"),
            "{tool} {arguments}: {message}"
        );
    }
    assert!(!env.root.path().parent().unwrap().join("outside-registry").exists());
    assert!(!Path::new("/tmp/kit.aam").exists());
    // Nor is anything made in a repository's own folder (`HEAD`, `config`, hooks).
    for (tool, arguments) in [
        ("aam_pack", json!({"path": "kit", "output": ".git/HEAD"})),
        (
            "aam_catalog_export",
            json!({"format": "jsonl", "output": ".GIT/config"}),
        ),
        ("aam_registry_init", json!({"path": "kit/.git/rg"})),
        ("aam_init_package", json!({"dir": ".git"})),
    ] {
        let body = fails(&client, tool, arguments.clone(), "AAM_FORBIDDEN").await;
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("`.git` folder"), "{tool} {arguments}: {message}");
    }
    assert!(!env.root.path().join(".git/HEAD").exists() && !env.root.path().join(".GIT").exists());
    // An agent may make the audit stricter, never laxer (a skill's text may ask it to).
    let stricter = ok(
        &client,
        "aam_config_set",
        json!({"key": "audit.block", "value": "warn"}),
    )
    .await;
    assert_eq!(stricter["value"], "warn");
    for (key, value) in [("audit.block", "off"), ("audit.block", "high"), ("audit.warn", "off")] {
        let body = fails(
            &client,
            "aam_config_set",
            json!({"key": key, "value": value}),
            "AAM_FORBIDDEN",
        )
        .await;
        assert!(body["hint"].as_str().unwrap().contains("in a terminal"), "{body}");
    }
    assert_eq!(
        env.json(&["config", "get", "audit.block"])["settings"][0]["value"],
        "warn"
    );
    env.json(&["config", "set", "audit.block", ""]);
    client.cancel().await.unwrap();

    // A call over its time limit returns TIMEOUT.
    let mut hurried = options(true);
    hurried.timeout = Duration::from_millis(1);
    let client = connect(&env, hurried).await;
    // A call that completes before it can stop (an update with nothing to
    // fetch has no point to stop at) answers with its result: an AAM_TIMEOUT
    // saying it kept no change was not always true.
    let updated = ok(&client, "aam_source_update", json!({"all": true})).await;
    assert_eq!(updated["sources"][0]["status"], "up_to_date", "{updated}");

    // A write over its time limit stops at its next safe point and keeps nothing.
    let project = || project_files(env.root.path());
    let before = project();
    let body = fails(
        &client,
        "aam_install",
        json!({"specs": ["kit"], "platforms": ["claude"]}),
        "AAM_TIMEOUT",
    )
    .await;
    assert_eq!(body["category"], "TIMEOUT");
    assert!(body["hint"].as_str().unwrap().contains("kept no change"), "{body}");
    // The stopped call takes the project lock first thing and lets go of it
    // once it has undone its work.
    let started = std::time::Instant::now();
    while !env.path(".aam/lock").exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "the install never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(env.path(".aam/lock"))
        .unwrap();
    lock.lock().unwrap();
    assert_eq!(project(), before, "the timed-out install kept nothing");
    drop(lock);
    client.cancel().await.unwrap();
}

/// Every file under the served project but aam's home and the project lock with its `.gitignore`.
fn project_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            if rel == "home" || rel == ".aam/lock" || rel == ".aam/.gitignore" || rel.starts_with(".git") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_and_prompts() {
    let env = world();
    let client = connect(&env, options(false)).await;
    let listed: Vec<String> = client
        .list_all_resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri.clone())
        .collect();
    for uri in [
        "aam://sources",
        "aam://installed",
        "aam://registries",
        "aam://config",
        "aam://manifest",
        "aam://server/info",
        "aam://sources/upstream",
    ] {
        assert!(listed.contains(&uri.to_string()), "{uri} in {listed:?}");
    }
    let templates: Vec<String> = client
        .list_all_resource_templates()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.uri_template.clone())
        .collect();
    assert_eq!(
        templates,
        [
            "aam://sources/{name}",
            "aam://sources/{name}/candidates",
            "aam://packages/{name}",
            "aam://artifacts/{source}/{name}"
        ]
    );

    assert_eq!(
        read_json(&client, "aam://sources").await["sources"][0]["name"],
        "upstream"
    );
    let scan = read_json(&client, "aam://sources/upstream").await;
    assert_eq!(scan["artifacts"]["skills"].as_array().unwrap().len(), 2, "{scan}");
    let candidates = read_json(&client, "aam://sources/upstream/candidates").await;
    assert_eq!(candidates["total"], 2);
    assert_eq!(read_json(&client, "aam://installed").await["packages"], json!([]));
    // No fixed resource hides a package: one named `installed` has its URI.
    env.json(&["pkg", "init", "installed", "--yes"]);
    env.json(&["pkg", "publish", "installed"]);
    let package = read_json(&client, "aam://packages/installed").await;
    assert_eq!(package["name"], "installed", "{package}");
    assert_eq!(package["versions"], json!(["0.1.0"]), "{package}");
    assert_eq!(
        read_json(&client, "aam://packages/kit").await["versions"],
        json!(["0.1.0"])
    );
    assert_eq!(
        read_json(&client, "aam://registries").await["registries"][0]["name"],
        "reg"
    );
    assert!(read_json(&client, "aam://config").await["settings"].is_array());
    let manifest = read_json(&client, "aam://manifest").await;
    assert_eq!(manifest["tools"].as_array().unwrap().len(), registry().len());
    let info = read_json(&client, "aam://server/info").await;
    assert_eq!(info["read_only"], true);
    assert_eq!(info["transport"], "stdio");
    assert_eq!(info["counts"]["sources"], 1);
    assert_eq!(info["counts"]["artifacts"], 2);
    assert!(info["schema_version"].as_i64().unwrap() >= 6);
    let text = read(&client, "aam://artifacts/upstream/pdf").await;
    assert!(text.contains("description: Fill PDF forms"), "{text}");

    // Names with `/` are percent-encoded.
    env.json(&[
        "source",
        "add",
        env.path("upstream").to_str().unwrap(),
        "--name",
        "team/tools",
    ]);
    let scan = read_json(&client, "aam://sources/team%2Ftools").await;
    assert_eq!(scan["source_name"], "team/tools", "{scan}");
    let text = read(&client, "aam://artifacts/team%2Ftools/docx").await;
    assert!(text.contains("Edit Word files"));

    // A main file that is a link out of the repository has no text: said so,
    // as `aam info` says it, not served as an empty text.
    let linked = env.repo("linked");
    linked.symlink("skills/linkout/SKILL.md", "/etc/hostname");
    linked.commit("c1");
    env.json(&["source", "add", linked.path(), "--name", "linked"]);
    let err = client
        .read_resource(ReadResourceRequestParams::new("aam://artifacts/linked/linkout"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("-32002") && err.contains("has no text to read"), "{err}");

    for missing in [
        "aam://nope",
        "aam://sources/ghost",
        "aam://artifacts/upstream/ghost",
        "https://x",
    ] {
        let err = client
            .read_resource(ReadResourceRequestParams::new(missing))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("-32002") || text.contains("-32602"), "{missing}: {text}");
    }

    let prompts: Vec<String> = client
        .list_all_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(prompts, ["find_artifacts", "package_from_source", "audit_installed"]);
    let mut arguments = serde_json::Map::new();
    arguments.insert("task".into(), json!("fill in tax forms"));
    let prompt = client
        .get_prompt(GetPromptRequestParams::new("find_artifacts").with_arguments(arguments))
        .await
        .unwrap();
    let message = serde_json::to_value(&prompt.messages[0]).unwrap();
    let text = message["content"]["text"].as_str().unwrap();
    assert!(text.contains("fill in tax forms") && text.contains("aam_search") && text.contains("read-only"));
    let missing = client
        .get_prompt(GetPromptRequestParams::new("package_from_source"))
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("source"), "{missing}");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_list_snapshot() {
    let env = TestEnv::new();
    let client = connect(&env, options(true)).await;
    let tools = client.list_all_tools().await.unwrap();
    insta::assert_json_snapshot!("mcp_tools", tools);
    client.cancel().await.unwrap();
}

/// SIGTERM stops a stdio server whose client keeps stdin open (clients send
/// it after closing stdin): as the end of input does, with exit code 0 and the
/// project's command socket removed (it died of the signal and left it).
#[test]
fn sigterm_stops_a_stdio_server() {
    use std::io::{BufRead, Write};
    let env = TestEnv::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
        .args(["mcp", "serve"])
        .current_dir(env.root.path())
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Serving (the signal is handled from then on).
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", initialize()).unwrap();
    let mut reply = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut reply)
        .unwrap();
    assert!(reply.contains("\"serverInfo\""), "{reply}");
    let sockets = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(env.home().join("run"))
            .map(|dir| {
                dir.map(|e| e.unwrap().path())
                    .filter(|p| p.extension().is_some_and(|x| x == "sock"))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(sockets().len(), 1, "the server answers the project's commands");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "the server outlived SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(sockets(), Vec::<std::path::PathBuf>::new());
    drop(stdin);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_over_stdio() {
    let env = world();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_aam"));
    command
        .args(["mcp", "serve", "--log-format", "json"])
        .current_dir(env.root.path())
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env_remove("AAM_READ_ONLY")
        .env_remove("READ_ONLY");
    let transport = rmcp::transport::TokioChildProcess::new(command).unwrap();
    let client = ().serve(transport).await.expect("the server answers on stdout");
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "aam");
    assert_eq!(info.server_info.as_ref().unwrap().version, env!("CARGO_PKG_VERSION"));
    let tools = client.list_all_tools().await.unwrap();
    assert!(
        tools
            .iter()
            .all(|t| t.annotations.as_ref().unwrap().read_only_hint == Some(true))
    );
    let found = ok(&client, "aam_search", json!({"query": "pdf"})).await;
    assert_eq!(found["results"][0]["qualified_name"], "upstream/pdf");
    let candidates = read_json(&client, "aam://sources/upstream/candidates").await;
    assert_eq!(candidates["total"], 2);
    client.cancel().await.unwrap();
}

/// A running `aam mcp serve --transport http`, killed when dropped.
pub(crate) struct HttpServer {
    child: Child,
    /// `http://HOST:PORT/mcp`, as the server printed it.
    pub(crate) url: String,
}

impl HttpServer {
    /// `HOST:PORT` the server listens on.
    pub(crate) fn address(&self) -> String {
        self.url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap()
            .to_string()
    }

    /// Sends SIGTERM and waits for the server to exit.
    pub(crate) fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) const TOKEN: &str = "test-token-0123456789abcdef-0123456789";

fn start_http(env: &TestEnv) -> HttpServer {
    start_http_with(env, &[])
}

/// Starts the HTTP server on a free port with `extra` arguments.
pub(crate) fn start_http_with(env: &TestEnv, extra: &[&str]) -> HttpServer {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aam"))
        .args(["mcp", "serve", "--transport", "http", "--port", "0"])
        .args(extra)
        .current_dir(env.root.path())
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env("AAM_MCP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("the server prints where it listens").unwrap();
        if let Some(rest) = line.strip_prefix("aam MCP server listening on ") {
            assert!(rest.contains("AAM_MCP_TOKEN"), "{line}");
            assert!(!rest.contains(TOKEN), "the token itself is never printed");
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    HttpServer { child, url }
}

#[test]
fn a_guessable_token_is_refused_before_listening() {
    let env = world();
    let run = env.aam_with(
        env.root.path(),
        &[("AAM_MCP_TOKEN", "hunter2")],
        &["mcp", "serve", "--transport", "http", "--port", "0"],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("AAM_INVALID_ARGUMENT"), "{}", run.stderr);
    assert!(run.stderr.contains("openssl rand -hex 32"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("hunter2"),
        "the token is never printed: {}",
        run.stderr
    );
}

pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_binary_over_http() {
    let env = world();
    let server = start_http(&env);
    let http = reqwest::Client::new();
    let post = |token: Option<&str>, origin: Option<&str>, body: Vec<u8>| {
        let mut request = http
            .post(&server.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let body = || serde_json::to_vec(&initialize()).unwrap();

    let none = post(None, None, body()).await.unwrap();
    assert_eq!(none.status(), 401);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    assert_eq!(post(Some("wrong-token"), None, body()).await.unwrap().status(), 401);
    let foreign = post(Some(TOKEN), Some("http://evil.example"), body()).await.unwrap();
    assert_eq!(foreign.status(), 403);
    assert!(
        foreign.headers().get("access-control-allow-origin").is_none(),
        "no CORS"
    );
    let mut huge = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"".to_vec();
    // Just over the 1 MiB limit, so the whole body is sent before the server answers.
    huge.extend(std::iter::repeat_n(b'x', (1 << 20) + 1024));
    huge.extend(b"\"}}");
    assert_eq!(post(Some(TOKEN), None, huge).await.unwrap().status(), 413);
    let good = post(Some(TOKEN), None, body()).await.unwrap();
    assert_eq!(good.status(), 200);
    let reply: Value = good.json().await.unwrap();
    assert_eq!(reply["result"]["serverInfo"]["name"], "aam", "{reply}");
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25");
    let same_origin = post(Some(TOKEN), Some(&server.url.replace("/mcp", "")), body())
        .await
        .unwrap();
    assert_eq!(same_origin.status(), 200);
    // A 2025-11-25 client goes on without a session (the server is stateless).
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let listed = post(Some(TOKEN), None, serde_json::to_vec(&list).unwrap())
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let listed: Value = listed.json().await.unwrap();
    assert!(listed["result"]["tools"].as_array().unwrap().len() > 10, "{listed}");

    // Eight MCP clients (rmcp's, speaking the newest, stateless revision) at
    // once while the CLI adds and updates a source.
    let mut clients = Vec::new();
    for _ in 0..8 {
        let config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(server.url.clone())
                .auth_header(TOKEN);
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        clients.push(().serve(transport).await.expect("connects over HTTP"));
    }
    let second = env.repo("second");
    second.write("skills/slides/SKILL.md", skill("slides", "Make slide decks"));
    second.commit("c1");
    let home = env.home();
    let root = env.root.path().to_path_buf();
    let writer = tokio::task::spawn_blocking(move || {
        for args in [
            vec!["source", "add", "./second", "--name", "second"],
            vec!["source", "update", "--all"],
        ] {
            let status = Command::new(env!("CARGO_BIN_EXE_aam"))
                .args(&args)
                .current_dir(&root)
                .env("AAM_HOME", &home)
                .output()
                .unwrap();
            assert!(status.status.success(), "{args:?}: {status:?}");
        }
    });
    let mut readers = Vec::new();
    for client in &clients {
        readers.push(async move {
            for _ in 0..10 {
                let found = ok(client, "aam_search", json!({"query": "pdf"})).await;
                assert_eq!(found["results"][0]["name"], "pdf");
                ok(client, "aam_source_list", json!({})).await;
            }
        });
    }
    futures::future::join_all(readers).await;
    writer.await.unwrap();
    // The next call sees what the CLI wrote.
    let sources = ok(&clients[0], "aam_source_list", json!({})).await;
    let names: Vec<&str> = sources["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["second", "upstream"]);
    let found = ok(&clients[7], "aam_search", json!({"query": "slides"})).await;
    assert_eq!(found["results"][0]["qualified_name"], "second/slides");
    for client in clients {
        client.cancel().await.unwrap();
    }
}

/// A client that records the notifications it gets.
#[derive(Clone, Default)]
struct Recorder {
    progress: std::sync::Arc<std::sync::Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
    list_changed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    async fn on_resource_list_changed(&self, _context: rmcp::service::NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_resource_list_changes_are_notified() {
    let env = world();
    let root = env.root.path().canonicalize().unwrap();
    let ctx = env.context(&root);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = AamServer::new(ctx, options(true));
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let recorder = Recorder::default();
    let client = recorder.clone().serve(client_io).await.unwrap();
    let capabilities = client.peer_info().unwrap().capabilities.clone();
    assert_eq!(capabilities.resources.as_ref().and_then(|r| r.list_changed), Some(true));

    // rmcp's client asks for progress on every call (its own token);
    // calls without a token are checked over raw stdio (mcp_protocol.rs).
    let result = client
        .call_tool(CallToolRequestParams::new("aam_catalog_reindex"))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let seen = eventually(|| {
        let seen = recorder.progress.lock().unwrap().clone();
        (seen.len() >= 2).then_some(seen)
    })
    .await;
    let token = &seen[0].progress_token;
    assert!(seen.iter().all(|p| &p.progress_token == token), "{seen:?}");
    assert!(
        seen.windows(2).all(|w| w[0].progress < w[1].progress),
        "growing: {seen:?}"
    );
    assert!(
        seen.iter().any(|p| p.message.as_deref() == Some("indexing")),
        "phases are named: {seen:?}"
    );
    for p in &seen {
        if let Some(total) = p.total {
            assert!(p.progress <= total, "{p:?}");
        }
    }

    // Adding and removing a source changes the resource list.
    let changes = || recorder.list_changed.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(changes(), 0);
    let second = env.repo("second");
    second.write("skills/slides/SKILL.md", skill("slides", "Make slide decks"));
    second.commit("c1");
    ok(&client, "aam_source_add", json!({"spec": "./second"})).await;
    ok(&client, "aam_source_remove", json!({"name": "second"})).await;
    eventually(|| (changes() == 2).then_some(())).await;
    fails(
        &client,
        "aam_source_remove",
        json!({"name": "second"}),
        "AAM_SOURCE_NOT_FOUND",
    )
    .await;
    ok(&client, "aam_source_list", json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        changes(),
        2,
        "one notice per successful change, none for failures or reads"
    );
    client.cancel().await.unwrap();
}

/// Waits (up to 10 s) until `check` gives a value.
async fn eventually<T>(mut check: impl FnMut() -> Option<T>) -> T {
    for _ in 0..200 {
        if let Some(value) = check() {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the notification never came");
}

/// A git project `served/` holding the skill `alpha`.
fn served_project(env: &TestEnv) -> std::path::PathBuf {
    let project = env.path("served");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    write_in(&project, "skills/alpha/SKILL.md", &skill("alpha", "First"));
    project
}

/// Writes `text` at `rel` under `dir`, making folders on the way.
fn write_in(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `aam mcp serve --root <project>` over stdio, logging at debug level to `log`.
async fn serve_project(
    env: &TestEnv,
    project: &Path,
    log: &Path,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_aam"));
    command
        .args(["mcp", "serve", "--root"])
        .arg(project)
        .current_dir(env.root.path())
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env("AAM_LOG", "aam=debug")
        .env_remove("AAM_PROJECT_WATCH");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    ().serve(transport).await.expect("the server answers on stdout")
}

/// A command run in a project that a server watches asks the server instead of
/// checking every recorded file: each answer holds every change made before the
/// command started (no sleep), and once the server is gone the command checks
/// the files itself, a socket left behind or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_ask_the_server_watching_their_project() {
    let env = TestEnv::new();
    let project = served_project(&env);
    let write = |rel: &str, text: &str| write_in(&project, rel, text);
    let client = serve_project(&env, &project, &env.path("server.log")).await;
    let candidates = |dir: &Path| {
        let run = env.aam_with(dir, &[("AAM_LOG", "aam=debug")], &["--json", "source", "candidates"]);
        let listed: Vec<String> = run.ok_json()["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{} {}", c["path"].as_str().unwrap(), c["name"].as_str().unwrap()))
            .collect();
        (listed, run.stderr.contains("vouches for its record"))
    };
    assert_eq!(candidates(&project), (vec!["skills/alpha alpha".to_string()], true));

    write("skills/alpha/SKILL.md", &skill("renamed", "Edited in place"));
    write("skills/beta/SKILL.md", &skill("beta", "Added"));
    // From a folder inside the project too: the project is the same.
    assert_eq!(
        candidates(&project.join("skills")),
        (
            vec!["skills/alpha renamed".to_string(), "skills/beta beta".to_string()],
            true
        )
    );
    std::fs::remove_dir_all(project.join("skills/alpha")).unwrap();
    assert_eq!(candidates(&project), (vec!["skills/beta beta".to_string()], true));

    // A project the server does not serve is checked by the command itself.
    let other = env.path("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::create_dir_all(other.join("skills/delta")).unwrap();
    std::fs::write(other.join("skills/delta/SKILL.md"), skill("delta", "Elsewhere")).unwrap();
    assert_eq!(candidates(&other), (vec!["skills/delta delta".to_string()], false));

    let socket = std::fs::read_dir(env.home().join("run")).unwrap().count();
    assert_eq!(socket, 1, "one socket, for the served project");
    client.cancel().await.unwrap();
    write("skills/beta/SKILL.md", &skill("unserved", "Edited with no server"));
    let after = eventually(|| {
        let (listed, vouched) = candidates(&project);
        (!vouched).then_some(listed)
    })
    .await;
    assert_eq!(after, ["skills/beta unserved"]);
}

/// The server over stdio watches the project it serves (`--root`): after each
/// change, made by another process while the server runs, the next
/// `aam_source_candidates` call answers it, with no sleep; a call with nothing
/// changed answers from the watches without checking the files.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_watches_its_project() {
    let env = TestEnv::new();
    let project = served_project(&env);
    let write = |rel: &str, text: &str| write_in(&project, rel, text);
    write("skills/beta/SKILL.md", &skill("beta", "Second"));
    let log = env.path("server.log");
    let client = serve_project(&env, &project, &log).await;
    let quiet = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .matches("project unchanged since its last refresh (watched)")
            .count()
    };
    let listed = async || -> Vec<String> {
        let page = ok(&client, "aam_source_candidates", json!({"source": "local"})).await;
        page["candidates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| format!("{} {}", c["path"].as_str().unwrap(), c["name"].as_str().unwrap()))
            .collect()
    };
    assert_eq!(listed().await, ["skills/alpha alpha", "skills/beta beta"]);
    let before = quiet();
    assert_eq!(listed().await, ["skills/alpha alpha", "skills/beta beta"]);
    assert_eq!(quiet(), before + 1, "nothing changed: answered from the watches");

    // The descriptions come from the catalog the call refreshed.
    let described = |env: &TestEnv| {
        env.query(
            "SELECT a.path || ' ' || coalesce(a.description, '') FROM project_artifacts a ORDER BY a.path",
            &[],
        )
    };
    write("skills/alpha/SKILL.md", &skill("alpha", "Edited in place"));
    assert_eq!(listed().await, ["skills/alpha alpha", "skills/beta beta"]);
    assert_eq!(described(&env), ["skills/alpha Edited in place", "skills/beta Second"]);

    write("skills/gamma/SKILL.md", &skill("gamma", "Added"));
    assert_eq!(
        listed().await,
        ["skills/alpha alpha", "skills/beta beta", "skills/gamma gamma"]
    );

    std::fs::remove_dir_all(project.join("skills/beta")).unwrap();
    assert_eq!(listed().await, ["skills/alpha alpha", "skills/gamma gamma"]);

    write(".gitignore", "skills/gamma/\n");
    assert_eq!(listed().await, ["skills/alpha alpha"]);

    write("skills/gamma/SKILL.md", &skill("gamma", "Ignored, edited"));
    write("skills/alpha/SKILL.md", &skill("alpha", "Edited again"));
    assert_eq!(listed().await, ["skills/alpha alpha"]);
    assert_eq!(described(&env), ["skills/alpha Edited again"]);

    let before = quiet();
    assert_eq!(listed().await, ["skills/alpha alpha"]);
    assert_eq!(quiet(), before + 1, "quiet again once the changes are read");
    client.cancel().await.unwrap();
}
