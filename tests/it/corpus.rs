//! Real public artifact repositories from `../shared/corpus/` (git bundles), cloned
//! at test time. The corpus sits beside the checkout on every developer machine
//! and in CI; a missing bundle fails the test (it never passes without its data).

use std::path::PathBuf;

use crate::support::{Repo, TestEnv};

fn bundle(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus")
        .join(format!("{name}.bundle"));
    assert!(
        path.exists(),
        "corpus bundle {} is absent: these tests need ../shared/corpus beside the checkout",
        path.display()
    );
    path
}

/// Clones a bundle into the test's scratch folder with `main` checked out.
pub(crate) fn clone(env: &TestEnv, name: &str) -> Repo {
    let bundle = bundle(name);
    let repo = env.repo(name);
    repo.git(&["fetch", "-q", bundle.to_str().unwrap(), "main:refs/remotes/origin/main"]);
    repo.git(&["checkout", "-q", "-B", "main", "origin/main"]);
    repo
}

fn counts(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    env.json(args)["artifacts_by_type"].clone()
}

#[test]
fn plugin_marketplace_layout() {
    let env = TestEnv::new();
    let repo = clone(&env, "wshobson+agents");
    let by_type = counts(&env, &["source", "add", repo.path(), "--name", "wshobson"]);
    assert!(by_type["skills"].as_u64().unwrap() >= 150, "{by_type}");
    assert!(by_type["agents"].as_u64().unwrap() >= 150, "{by_type}");
    assert!(by_type["prompts"].as_u64().unwrap() >= 50, "{by_type}");
    // CLAUDE.md is a symlink to AGENTS.md: both are indexed with AGENTS.md's text.
    let linked = env.query("SELECT content_path FROM artifacts WHERE path = 'CLAUDE.md'", &[]);
    assert_eq!(linked, ["AGENTS.md"]);
}

#[test]
fn invalid_mdc_frontmatter_is_indexed_with_warnings() {
    let env = TestEnv::new();
    let repo = clone(&env, "PatrickJS+awesome-cursorrules");
    let by_type = counts(&env, &["source", "add", repo.path(), "--name", "rules"]);
    assert!(by_type["instructions"].as_u64().unwrap() >= 200, "{by_type}");
    let warned = env.query(
        "SELECT CAST(COUNT(*) AS TEXT) FROM artifacts WHERE warnings_json LIKE '%not valid YAML%'",
        &[],
    );
    assert!(warned[0].parse::<u64>().unwrap() >= 100, "{warned:?}");
    let described = env.query(
        "SELECT CAST(COUNT(*) AS TEXT) FROM artifacts WHERE description IS NOT NULL",
        &[],
    );
    assert!(
        described[0].parse::<u64>().unwrap() >= 200,
        "descriptions survive bad YAML: {described:?}"
    );
}

#[test]
fn agents_outside_agents_folders_are_reached() {
    let env = TestEnv::new();
    let repo = clone(&env, "VoltAgent+awesome-claude-code-subagents");
    let whole = counts(&env, &["source", "add", repo.path(), "--name", "volt"]);
    assert!(
        whole["agents"].as_u64().unwrap() >= 150,
        "plugin manifests list them: {whole}"
    );
    let scoped = env.json(&["source", "add", repo.path(), "--path", "categories/01-core-development"]);
    assert_eq!(
        scoped["name"],
        "VoltAgent+awesome-claude-code-subagents:01-core-development"
    );
    assert!(
        scoped["artifacts_by_type"]["agents"].as_u64().unwrap() >= 10,
        "{scoped}"
    );
}

/// Walks a real history forward in steps; after every update the catalog must equal
/// a fresh index of the same commit.
fn incremental_matches_fresh(name: &str, steps: &[usize]) {
    let env = TestEnv::new();
    let repo = clone(&env, name);
    let tip = repo.git(&["rev-parse", "HEAD"]);
    let start = steps[0];
    repo.git(&["reset", "-q", "--hard", &format!("{tip}~{start}")]);
    env.json(&["source", "add", repo.path(), "--name", "moving"]);
    for &back in &steps[1..] {
        repo.git(&["reset", "-q", "--hard", &format!("{tip}~{back}")]);
        let update = env.json(&["source", "update", "moving"]);
        assert_eq!(update["sources"][0]["status"], "updated", "{name} ~{back}");
        let fresh = format!("fresh-{back}");
        env.json(&["source", "add", repo.path(), "--name", &fresh]);
        assert_eq!(env.artifacts("moving"), env.artifacts(&fresh), "{name} at ~{back}");
        env.assert_counts_consistent();
        env.json(&["source", "remove", &fresh]);
    }
}

#[test]
fn incremental_updates_match_fresh_indexes_on_real_history() {
    incremental_matches_fresh("obra+superpowers", &[400, 250, 120, 40, 0]);
    incremental_matches_fresh("wshobson+agents", &[300, 150, 60, 0]);
}
