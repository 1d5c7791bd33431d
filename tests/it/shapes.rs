//! Snapshots of every `--json` shape, so any change to an output contract shows
//! up in review. Commit ids, times and temporary paths are normalized.

use crate::support::{TestEnv, normalize, skill};

#[test]
fn json_output_contracts() {
    let env = TestEnv::new();
    let repo = env.repo("shapes");
    repo.write("skills/a/SKILL.md", skill("a", "A"))
        .write("agents/b.md", "---\nname: b\n---\n");
    repo.commit("c1");
    let snap = |name: &str, args: &[&str]| {
        insta::assert_json_snapshot!(name, normalize(env.json(args), &env));
    };
    snap("add", &["source", "add", repo.path()]);
    snap("list", &["source", "list"]);
    snap("scan", &["source", "scan", "shapes"]);
    repo.write("skills/c/SKILL.md", skill("c", "C")).remove("agents/b.md");
    repo.commit("c2");
    snap("diff", &["source", "diff", "shapes"]);
    snap("update_dry_run", &["source", "update", "--dry-run"]);
    snap("update", &["source", "update", "shapes"]);
    snap("search", &["search", "a"]);
    snap("info", &["info", "shapes/a"]);
    snap("list_available", &["list", "--available"]);
    snap("candidates", &["source", "candidates", "--source", "shapes"]);
    let mut reindex = env.json(&["catalog", "reindex"]);
    reindex["elapsed_ms"] = 0.into();
    insta::assert_json_snapshot!("reindex", reindex);
    snap(
        "pkg_create",
        &[
            "pkg",
            "create",
            "--from-source",
            "shapes",
            "--all",
            "--name",
            "shapes-kit",
        ],
    );
    snap("pkg_validate", &["pkg", "validate", "shapes-kit"]);
    snap("pkg_pack", &["pkg", "pack", "shapes-kit"]);
    snap("registry_init", &["registry", "init", "reg", "--default"]);
    snap("pkg_publish", &["pkg", "publish", "shapes-kit"]);
    snap("registry_list", &["registry", "list"]);
    snap("install", &["install", "shapes-kit", "--platform", "claude"]);
    snap("list_installed", &["list"]);
    std::fs::write(env.path(".claude/skills/a/SKILL.md"), "edited\n").unwrap();
    let verify = env.aam(&["--json", "verify", "shapes-kit"]);
    insta::assert_json_snapshot!("verify", normalize(verify.json(), &env));
    snap("diff_installed", &["diff", "shapes-kit"]);
    snap("outdated", &["outdated"]);
    snap("upgrade", &["upgrade"]);
    snap("package_info", &["info", "shapes-kit"]);
    snap("uninstall", &["uninstall", "shapes-kit"]);
    snap("pkg_init", &["pkg", "init", "fresh", "--yes"]);
    snap("registry_remove", &["registry", "remove", "reg"]);
    snap("enable_defaults", &["source", "enable-defaults"]);
    snap("remove", &["source", "remove", "shapes", "--purge-cache"]);
    insta::assert_json_snapshot!("error", env.aam(&["--json", "source", "scan", "nope"]).json());
}

/// Key sets of every object any output schema (or `aam mcp config`'s) describes.
fn schema_key_sets() -> std::collections::BTreeSet<Vec<String>> {
    fn walk(value: &serde_json::Value, out: &mut std::collections::BTreeSet<Vec<String>>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(serde_json::Value::Object(properties)) = map.get("properties") {
                    let mut keys: Vec<String> = properties.keys().cloned().collect();
                    keys.sort();
                    out.insert(keys);
                }
                map.values().for_each(|v| walk(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    for tool in aam::tools::registry() {
        walk(&serde_json::to_value((tool.output_schema)()).unwrap(), &mut out);
    }
    let client_config = schemars::schema_for!(aam::mcp::clients::ClientConfig);
    walk(&serde_json::to_value(client_config).unwrap(), &mut out);
    out
}

/// The top-level keys of every `{...}` in `text` (`key?` is optional `key`;
/// nested braces and brackets are skipped), for texts made only of keys.
fn brace_key_sets(text: &str) -> Vec<Vec<String>> {
    let mut bodies = Vec::new();
    let mut open = Vec::new();
    for (i, c) in text.char_indices() {
        match c {
            '{' => open.push(i),
            '}' => {
                if let Some(start) = open.pop() {
                    bodies.push(&text[start + 1..i]);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for body in bodies {
        let (mut depth, mut flat) = (0, String::new());
        for c in body.chars() {
            match c {
                '{' | '[' => depth += 1,
                '}' | ']' => depth -= 1,
                c if depth == 0 => flat.push(c),
                _ => {}
            }
        }
        let keys: Option<Vec<String>> = flat
            .split(',')
            .map(|part| {
                let key = part.trim().trim_end_matches(':').trim().trim_end_matches('?');
                let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_');
                plain.then(|| key.to_string())
            })
            .collect();
        if let Some(mut keys) = keys.filter(|k| k.len() > 1) {
            keys.sort();
            keys.dedup();
            out.push(keys);
        }
    }
    out
}

/// Key sets of every object in a JSON value.
fn json_key_sets(value: &serde_json::Value, out: &mut Vec<Vec<String>>) {
    match value {
        serde_json::Value::Object(map) => {
            out.push(map.keys().cloned().collect());
            map.values().for_each(|v| json_key_sets(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_key_sets(v, out)),
        _ => {}
    }
}

#[test]
fn every_json_shape_in_the_docs_is_an_output_schema() {
    let mut known = schema_key_sets();
    // The MCP error result (docs/mcp.md) is the protocol's envelope, not a tool's output.
    for envelope in [&["_meta", "content", "isError"][..], &["text", "type"], &["aam/error"]] {
        known.insert(envelope.iter().map(|k| k.to_string()).collect());
    }
    let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut drift = Vec::new();
    for entry in std::fs::read_dir(&docs).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        // tools.md describes the manifest's own format, not an operation's output.
        if !name.ends_with(".md") || name == "tools.md" {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut shapes = Vec::new();
        // Inline shapes: `{key, key: [...], key?}`.
        for (i, _) in text.match_indices("`{") {
            let Some(end) = text[i + 1..].find('`') else { continue };
            shapes.extend(brace_key_sets(&text[i + 1..i + 1 + end]));
        }
        // JSON examples (JSONL export records are files, not outputs).
        let mut rest = text.as_str();
        while let Some(start) = rest.find("```json\n") {
            let before = &rest[..start];
            let block = &rest[start + 8..];
            let end = block.find("```").unwrap();
            let record = before[before.len().saturating_sub(300)..].contains("JSONL");
            if !record {
                let value: serde_json::Value = serde_json::from_str(&block[..end])
                    .unwrap_or_else(|e| panic!("{name}: a ```json block is not JSON ({e})"));
                json_key_sets(&value, &mut shapes);
            }
            rest = &block[end + 3..];
        }
        for mut keys in shapes {
            keys.sort();
            if !known.contains(&keys) {
                drift.push(format!("{name}: {{{}}}", keys.join(", ")));
            }
        }
    }
    assert!(
        drift.is_empty(),
        "documented JSON shapes no output schema has:\n{}",
        drift.join("\n")
    );
}
