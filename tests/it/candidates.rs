//! `aam source candidates` and `aam list --available`: keyset pages over the
//! catalog plus the project's own artifacts.

use std::collections::BTreeSet;

use aam::catalog::{Catalog, NewPackage, PackageMember};
use aam::scan::ArtifactKind;
use serde_json::{Value, json};

use crate::support::{TestEnv, skill};

/// A home with two sources and a project that has its own artifacts.
fn setup() -> (TestEnv, std::path::PathBuf) {
    let env = TestEnv::new();
    let one = env.repo("one");
    one.write("skills/a/SKILL.md", skill("a", "A"))
        .write("skills/b/SKILL.md", skill("b", "B"))
        .write("skills/b/agents/openai.yaml", "x: 1\n")
        .write("agents/c.md", "---\nname: c\n---\n");
    one.commit("c1");
    let two = env.repo("two");
    two.write("prompts/d.md", "# D\n")
        .write("instructions/e.instructions.md", "# E\n");
    two.commit("c1");
    env.json(&["source", "add", one.path()]);
    env.json(&["source", "add", two.path()]);
    let project = env.repo("project");
    project
        .write(".cursor/rules/style.mdc", "---\ndescription: Style\n---\n")
        .write(".claude/agents/helper.md", "---\nname: helper\n---\n")
        .write("src/main.rs", "fn main() {}\n");
    (env, project.dir.clone())
}

fn rows(page: &Value) -> Vec<String> {
    page["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c["source"].as_str().unwrap(),
                c["type"].as_str().unwrap(),
                c["path"].as_str().unwrap()
            )
        })
        .collect()
}

/// `aam --json ARGS` run successfully in `project`.
fn json_in(env: &TestEnv, project: &std::path::Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.aam_in(project, &all).ok_json()
}

fn candidates(env: &TestEnv, project: &std::path::Path, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "source", "candidates"];
    args.extend_from_slice(extra);
    env.aam_in(project, &args).ok_json()
}

#[test]
fn project_and_source_artifacts_with_stable_keyset_pages() {
    let (env, project) = setup();
    let all = candidates(&env, &project, &[]);
    assert_eq!(
        rows(&all),
        [
            "local agent .claude/agents/helper.md",
            "local instruction .cursor/rules/style.mdc",
            "one agent agents/c.md",
            "one skill skills/a",
            "one skill skills/b",
            "two instruction instructions/e.instructions.md",
            "two prompt prompts/d.md",
        ]
    );
    assert_eq!(all["total"], 7);
    assert_eq!(all["next_cursor"], Value::Null);
    assert_eq!(all["candidates"][0]["source_type"], "local_project");
    assert_eq!(all["candidates"][2]["source_type"], "remote_git");
    assert_eq!(all["candidates"][4]["has_vendor_agent"], true);

    for limit in 1..=7 {
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let limit = limit.to_string();
            let mut args = vec!["--limit", limit.as_str()];
            if let Some(c) = &cursor {
                args.extend(["--cursor", c.as_str()]);
            }
            let page = candidates(&env, &project, &args);
            assert_eq!(page["total"], 7);
            seen.extend(rows(&page));
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_string()),
                None => break,
            }
        }
        assert_eq!(seen, rows(&all), "limit {limit}: no gaps, no repeats");
    }
}

#[test]
fn pages_stay_consistent_while_the_catalog_changes() {
    let (env, project) = setup();
    let first = candidates(&env, &project, &["--limit", "3"]);
    let cursor = first["next_cursor"].as_str().unwrap().to_string();
    // A source added between pages shows up after the existing ones.
    let late = env.repo("late");
    late.write("skills/z/SKILL.md", skill("z", "Z"));
    late.commit("c1");
    env.json(&["source", "add", late.path()]);
    let mut seen = rows(&first);
    let mut next = Some(cursor);
    while let Some(c) = next {
        let page = candidates(&env, &project, &["--limit", "3", "--cursor", &c]);
        seen.extend(rows(&page));
        next = page["next_cursor"].as_str().map(str::to_string);
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no repeats: {seen:?}");
    assert_eq!(seen.last().unwrap(), "late skill skills/z");
    assert_eq!(seen.len(), 8);
}

#[test]
fn packaged_artifacts_stop_being_candidates() {
    let (env, project) = setup();
    let mut catalog = Catalog::open(&env.home().join("catalog.db")).unwrap();
    let taken = catalog.artifacts_named(None, "a").unwrap();
    assert_eq!(taken.len(), 1);
    let project_root = project.canonicalize().unwrap();
    catalog
        .record_package(
            &NewPackage {
                name: "kit",
                version: "1.0.0",
                description: Some("Test kit"),
                manifest_json: "{}",
                origin: "source",
                provenance_json: None,
                archive_blake3: None,
            },
            &[
                PackageMember {
                    artifact_id: Some(taken[0].id),
                    project_root: None,
                    kind: ArtifactKind::Skill,
                    name: "a",
                    path: "skills/a",
                },
                PackageMember {
                    artifact_id: None,
                    project_root: Some(project_root.to_str().unwrap()),
                    kind: ArtifactKind::Instruction,
                    name: "style",
                    path: ".cursor/rules/style.mdc",
                },
            ],
        )
        .unwrap();
    drop(catalog);
    let after = candidates(&env, &project, &[]);
    assert_eq!(after["total"], 5);
    let remaining = rows(&after);
    assert!(!remaining.contains(&"one skill skills/a".to_string()));
    assert!(!remaining.contains(&"local instruction .cursor/rules/style.mdc".to_string()));
    // Filters narrow both the page and the total.
    let skills = candidates(&env, &project, &["--type", "skill"]);
    assert_eq!(rows(&skills), ["one skill skills/b"]);
    assert_eq!(skills["total"], 1);
    let one = candidates(&env, &project, &["--source", "one"]);
    assert_eq!(one["total"], 2);
    let local = candidates(&env, &project, &["--source", "local"]);
    assert_eq!(rows(&local), ["local agent .claude/agents/helper.md"]);
    assert_eq!(local["total"], 1);
    env.assert_counts_consistent();

    // The packaged skill leaves upstream and comes back: counts follow.
    let one = crate::support::Repo { dir: env.path("one") };
    one.remove("skills/a");
    one.commit("drop a");
    env.json(&["source", "update", "one"]);
    env.assert_counts_consistent();
    assert_eq!(candidates(&env, &project, &[])["total"], 5);
    one.write("skills/a/SKILL.md", skill("a", "A again"));
    one.commit("a is back");
    env.json(&["source", "update", "one"]);
    env.assert_counts_consistent();
    let back = candidates(&env, &project, &[]);
    assert_eq!(back["total"], 5, "still packaged, so still not a candidate");
    assert!(!rows(&back).contains(&"one skill skills/a".to_string()));
}

/// What aam deployed into the project is a copy of a package, not a
/// candidate for one, in the page and in the total alike.
#[test]
fn deployed_copies_are_not_candidates() {
    let (env, project) = setup();
    let before = candidates(&env, &project, &["--source", "local"]);
    env.aam_in(
        &project,
        &[
            "--json",
            "install",
            "one/b",
            "--platform",
            "claude",
            "--platform",
            "codex",
        ],
    )
    .ok_json();
    assert!(project.join(".claude/skills/b/SKILL.md").exists());
    let after = candidates(&env, &project, &["--source", "local"]);
    assert_eq!(rows(&after), rows(&before), "{after}");
    assert_eq!(after["total"], before["total"]);
    let skills = candidates(&env, &project, &["--type", "skill"]);
    assert!(rows(&skills).iter().all(|r| !r.starts_with("local")), "{skills}");
}

#[test]
fn bad_candidate_arguments() {
    let (env, project) = setup();
    let run = env.aam_in(&project, &["--json", "source", "candidates", "--source", "nope"]);
    let body = run.err("AAM_SOURCE_NOT_FOUND");
    assert!(body["hint"].as_str().unwrap().contains("`one`"), "{body}");
    let run = env.aam_in(
        &project,
        &["--json", "source", "candidates", "--cursor", "not-a-cursor"],
    );
    run.err("AAM_INVALID_ARGUMENT");
    let run = env.aam_in(&project, &["--json", "source", "candidates", "--limit", "0"]);
    run.err("AAM_INVALID_ARGUMENT");
}

#[test]
fn list_available_groups_by_source_and_pages() {
    let (env, _) = setup();
    let all = env.json(&["list", "--available"]);
    assert_eq!(all["total"], 5);
    let groups: Vec<(String, usize)> = all["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["source"].as_str().unwrap().to_string(),
                g["artifacts"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(groups, [("one".to_string(), 3), ("two".to_string(), 2)]);
    let first = env.json(&["list", "--available", "--limit", "2"]);
    assert_eq!(first["sources"][0]["artifacts"].as_array().unwrap().len(), 2);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = env.json(&["list", "--available", "--limit", "2", "--cursor", cursor]);
    assert_eq!(second["sources"][0]["source"], "one");
    assert_eq!(second["sources"][1]["source"], "two");
    let only = env.json(&["list", "--available", "--source", "two", "--type", "prompt"]);
    assert_eq!(only["total"], 1);
    assert_eq!(only["sources"][0]["artifacts"][0]["name"], "d");
    assert_eq!(only["next_cursor"], json!(null));
    let human = env.aam(&["list", "--available", "--limit", "2"]);
    assert!(
        human
            .stdout
            .contains("next page: aam list --available --limit 2 --cursor"),
        "{}",
        human.stdout
    );
}

/// A package made with `pkg create` from a source, published, then installed
/// and uninstalled: its artifacts stay packaged throughout. The install
/// recorded the registry's copy under the same name and version with members
/// known by name only, and they became candidates again (found by a user helper).
#[test]
fn installing_a_created_package_keeps_its_artifacts_packaged() {
    let (env, project) = setup();
    let p = project.to_str().unwrap();
    let run = |args: &[&str]| json_in(&env, &project, args);
    run(&[
        "pkg",
        "create",
        "--from-source",
        "one",
        "--artifacts",
        "a,c",
        "--name",
        "kit",
    ]);
    let created = candidates(&env, &project, &["--source", "one"]);
    assert_eq!(rows(&created), ["one skill skills/b"], "{created}");
    run(&["pkg", "pack", &format!("{p}/kit")]);
    run(&["registry", "init", env.path("reg").to_str().unwrap(), "--default"]);
    run(&["pkg", "publish", &format!("{p}/kit")]);
    run(&["install", "kit", "--platform", "claude"]);
    let installed = candidates(&env, &project, &["--source", "one"]);
    assert_eq!(rows(&installed), rows(&created), "{installed}");
    assert_eq!(installed["total"], created["total"]);
    run(&["uninstall", "kit"]);
    assert_eq!(rows(&candidates(&env, &project, &["--source", "one"])), rows(&created));
    env.assert_counts_consistent();
}

/// A skill at the root of its source has the path "": candidates and
/// `list --available` list it, as `total` counts it (they gave an empty page
/// with `total: 1`; found by an MCP helper).
#[test]
fn a_skill_at_the_root_of_its_source_is_listed() {
    let env = TestEnv::new();
    let repo = env.repo("solo");
    repo.write("SKILL.md", skill("solo", "A skill at the root"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "solo"]);
    let project = env.repo("project");
    let page = candidates(&env, &project.dir, &["--source", "solo"]);
    assert_eq!(page["total"], 1, "{page}");
    assert_eq!(rows(&page), ["solo skill "], "{page}");
    let available = env
        .aam_in(&project.dir, &["--json", "list", "--available", "--source", "solo"])
        .ok_json();
    assert_eq!(available["total"], 1, "{available}");
    assert_eq!(available["sources"][0]["artifacts"][0]["name"], "solo", "{available}");
}

/// Another package of the same name and version (another author's `kit`
/// 0.1.0) inherits nothing `pkg create` recorded: installing it does not make
/// the source's artifact installed here (found by a review helper).
#[test]
fn another_package_of_the_same_name_and_version_inherits_no_links() {
    let (env, project) = setup();
    let p = project.to_str().unwrap();
    let run = |args: &[&str]| json_in(&env, &project, args);
    run(&[
        "pkg",
        "create",
        "--from-source",
        "one",
        "--artifacts",
        "a",
        "--name",
        "kit",
    ]);
    let theirs = env.path("theirs");
    std::fs::create_dir_all(theirs.join("skills/a")).unwrap();
    std::fs::write(
        theirs.join("aam.yaml"),
        "name: kit\nversion: 0.1.0\ndescription: Another kit\nartifacts:\n  skills:\n  - name: a\n    path: skills/a\n    description: Theirs\n",
    )
    .unwrap();
    std::fs::write(theirs.join("skills/a/SKILL.md"), skill("a", "Their own a")).unwrap();
    run(&["registry", "init", env.path("reg").to_str().unwrap(), "--default"]);
    run(&["pkg", "publish", theirs.to_str().unwrap()]);
    run(&["install", "kit", "--platform", "claude"]);
    assert!(
        std::fs::read_to_string(project.join(".claude/skills/a/SKILL.md"))
            .unwrap()
            .contains("Their own a")
    );
    let found = run(&["search", "a", "--source", "one"]);
    let a = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "a")
        .cloned();
    assert_eq!(a.map(|a| a["installed"].clone()), Some(json!(false)), "{found} ({p})");
}

/// Each available artifact carries the name `info` and `install` take, as
/// search gives it: `source/name`, or `source/path` for a name its source
/// holds twice.
#[test]
fn list_available_gives_the_name_to_type() {
    let env = TestEnv::new();
    let repo = env.repo("kit");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF"))
        .write("skills/one/SKILL.md", skill("twin", "One twin"))
        .write("extra/two/SKILL.md", skill("twin", "Another twin"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    let listed = env.json(&["list", "--available"]);
    let names: BTreeSet<String> = listed["sources"][0]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["qualified_name"].as_str().unwrap().to_string())
        .collect();
    let expected: BTreeSet<String> = ["kit/pdf", "kit/skills/one", "kit/extra/two"].map(String::from).into();
    assert_eq!(names, expected, "{listed}");
    for name in &names {
        let info = env.json(&["info", name]);
        assert_eq!(info["qualified_name"], *name, "{info}");
    }
}
