//! Snapshots of every `--json` shape, so any change to an output contract shows
//! up in review. Commit ids, times and temporary paths are normalized.

use serde_json::Value;

use crate::support::{TestEnv, skill};

/// Replaces values that differ between runs: commit ids, blake3 digests, times,
/// temporary paths, and archive sizes (their compressed bytes include times).
fn normalize(value: Value, env: &TestEnv) -> Value {
    match value {
        Value::String(s) => {
            let tmp = env.root.path().canonicalize().unwrap().display().to_string();
            let s = s.replace(&tmp, "<tmp>");
            let hex = s.chars().all(|c| c.is_ascii_hexdigit());
            let is_time = s.len() == 20 && s.ends_with('Z') && s.as_bytes().get(10) == Some(&b'T');
            Value::String(match s.len() {
                40 if hex => "<sha>".into(),
                64 if hex => "<blake3>".into(),
                _ if is_time => "<time>".into(),
                _ => s,
            })
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalize(v, env)).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if k == "size" {
                        Value::from("<size>")
                    } else {
                        normalize(v, env)
                    };
                    (k, v)
                })
                .collect(),
        ),
        other => other,
    }
}

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
