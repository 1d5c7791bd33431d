//! `aam source ...` end to end against real git repositories.

use serde_json::{Value, json};

use std::path::PathBuf;

use crate::support::{Repo, TestEnv, self_signed_cert, skill};

/// A repository with one artifact in every layout the scanner knows, plus oddities.
fn layouts_repo(env: &TestEnv) -> Repo {
    let repo = env.repo("layouts");
    repo.write("skills/alpha/SKILL.md", skill("alpha", "First skill"))
        .write("skills/alpha/scripts/run.sh", "#!/bin/sh\necho hi\n")
        .write("skills/alpha/agents/openai.yaml", "interface: {}\n")
        .write("skills/.curated/beta/SKILL.md", skill("beta", "Curated skill"))
        .write("skills/.system/gamma/SKILL.md", "# Gamma Heading\n\nNo frontmatter.\n")
        .write("plugins/p/skills/delta/SKILL.md", skill("delta", "Plugin skill"))
        .write(
            "plugins/p/agents/reviewer.md",
            "---\nname: reviewer\ndescription: Reviews\n---\n",
        )
        .write("plugins/p/commands/ship.md", "# Ship it\n")
        .write(".claude/skills/eps/SKILL.md", skill("eps", "Claude skill"))
        .write(".claude/agents/helper.md", "---\ndescription: Helps\n---\n")
        .write(".claude/commands/deploy.md", "# Deploy\n")
        .write(".github/skills/zeta/SKILL.md", skill("zeta", "Copilot skill"))
        .write(".github/agents/planner.agent.md", "---\ndescription: Plans\n---\n")
        .write(
            ".github/prompts/review.prompt.md",
            "---\ndescription: Reviews code\n---\n",
        )
        .write(
            ".github/instructions/style.instructions.md",
            "---\napplyTo: \"**/*.rs\"\n---\n# Style\n",
        )
        .write(".github/copilot-instructions.md", "# Copilot rules\n")
        .write(
            ".cursor/rules/rule.mdc",
            "---\ndescription: Cursor rule\nglobs: **/*.ts\n---\nbody\n",
        )
        .write(".cursorrules", "be nice\n")
        .write("agents/solo.md", "---\nname: solo\ndescription: Solo agent\n---\n")
        .write("prompts/fix.md", "# Fix things\n")
        .write("instructions/team.md", "# Team rules\n")
        .write("chatmodes/expert.chatmode.md", "---\ndescription: Expert mode\n---\n")
        .write("AGENTS.md", "# Agents guide\n")
        .symlink("CLAUDE.md", "AGENTS.md")
        .write("node_modules/pkg/agents/ignored.md", "# ignored\n")
        .write("README.md", "# Readme\n");
    repo.commit("layouts");
    repo
}

#[test]
fn add_indexes_every_layout_and_scan_answers_from_the_catalog() {
    let env = TestEnv::new();
    let repo = layouts_repo(&env);
    let added = env.json(&["source", "add", repo.path()]);
    assert_eq!(added["name"], "layouts");
    assert_eq!(added["ref"], "main");
    assert_eq!(added["path"], "");
    assert_eq!(
        added["url"],
        format!("file://{}", repo.dir.canonicalize().unwrap().display())
    );
    assert_eq!(added["commit"], repo.git(&["rev-parse", "HEAD"]));
    assert_eq!(
        added["artifacts_by_type"],
        json!({"skills": 6, "agents": 5, "prompts": 4, "instructions": 7})
    );
    assert_eq!(added["artifact_count"], 22);

    let scan = env.json(&["source", "scan", "layouts"]);
    assert_eq!(scan["total"], 22);
    assert_eq!(scan["commit"], added["commit"]);
    let names = |kind: &str| -> Vec<String> {
        scan["artifacts"][kind]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{} {}", a["name"].as_str().unwrap(), a["path"].as_str().unwrap()))
            .collect()
    };
    assert_eq!(
        names("skills"),
        [
            "eps .claude/skills/eps",
            "zeta .github/skills/zeta",
            "delta plugins/p/skills/delta",
            "beta skills/.curated/beta",
            "gamma skills/.system/gamma",
            "alpha skills/alpha",
        ]
    );
    assert_eq!(
        names("agents"),
        [
            "helper .claude/agents/helper.md",
            "planner .github/agents/planner.agent.md",
            "solo agents/solo.md",
            "expert chatmodes/expert.chatmode.md",
            "reviewer plugins/p/agents/reviewer.md",
        ]
    );
    assert_eq!(
        names("prompts"),
        [
            "deploy .claude/commands/deploy.md",
            "review .github/prompts/review.prompt.md",
            "ship plugins/p/commands/ship.md",
            "fix prompts/fix.md",
        ]
    );
    assert_eq!(
        names("instructions"),
        [
            "rule .cursor/rules/rule.mdc",
            "cursorrules .cursorrules",
            "copilot-instructions .github/copilot-instructions.md",
            "style .github/instructions/style.instructions.md",
            "codex-instructions AGENTS.md",
            "claude-instructions CLAUDE.md",
            "team instructions/team.md",
        ]
    );
    let alpha = &scan["artifacts"]["skills"][5];
    assert_eq!(alpha["has_vendor_agent"], true);
    assert_eq!(alpha["description"], "First skill");
    assert_eq!(scan["artifacts"]["skills"][4]["description"], "Gamma Heading");

    // Only one kind.
    let agents = env.json(&["source", "scan", "layouts", "--type", "agent"]);
    assert_eq!(agents["total"], 5);
    assert_eq!(agents["artifacts"]["skills"], json!([]));

    // Every file of a skill is recorded with its blob id, blake3 and size.
    let files = env.query(
        "SELECT f.path || ' ' || f.mode || ' ' || f.size FROM artifact_files f JOIN artifacts a ON a.id = f.artifact_id
         WHERE a.path = 'skills/alpha' ORDER BY f.path",
        &[],
    );
    let expected = [
        format!("skills/alpha/SKILL.md file {}", skill("alpha", "First skill").len()),
        "skills/alpha/agents/openai.yaml file 14".to_string(),
        "skills/alpha/scripts/run.sh file 18".to_string(),
    ];
    assert_eq!(files, expected);
    // The symlinked CLAUDE.md reads AGENTS.md's text.
    let claude = env.query(
        "SELECT a.content_path || ' ' || t.body FROM artifacts a JOIN artifact_texts t ON t.artifact_id = a.id
         WHERE a.path = 'CLAUDE.md'",
        &[],
    );
    assert_eq!(claude, ["AGENTS.md # Agents guide\n"]);
}

#[test]
fn human_output_is_readable_and_progress_stays_off_pipes() {
    let env = TestEnv::new();
    let repo = layouts_repo(&env);
    let run = env.aam(&["source", "add", repo.path(), "--name", "demo"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("Added source `demo`"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("Indexed 22 artifacts: 6 skills, 5 agents, 4 prompts, 7 instructions")
    );
    assert_eq!(run.stderr, "", "no progress bars or logs in a pipe");
    let list = env.aam(&["source", "list"]);
    assert!(list.stdout.starts_with("NAME"), "{}", list.stdout);
    assert!(list.stdout.contains("demo"));
    let scan = env.aam(&["source", "scan", "demo"]);
    assert!(scan.stdout.contains("Skills (6)"), "{}", scan.stdout);
    assert!(scan.stdout.contains("alpha [+agent]"), "{}", scan.stdout);
}

#[test]
fn oddities_are_indexed_with_warnings() {
    let env = TestEnv::new();
    let repo = env.repo("odd");
    let mut huge = skill("huge", "Big one").into_bytes();
    huge.extend(std::iter::repeat_n(b'x', 300 * 1024));
    repo.write(
        "skills/bad-yaml/SKILL.md",
        "---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n",
    )
    .write(
        "skills/bom/SKILL.md",
        b"\xEF\xBB\xBF---\nname: bom\ndescription: With BOM\n---\n".as_slice(),
    )
    .write(
        "skills/crlf/SKILL.md",
        "---\r\nname: crlf\r\ndescription: Windows\r\n---\r\nbody\r\n",
    )
    .write(
        "skills/latin1/SKILL.md",
        b"---\nname: latin1\ndescription: caf\xe9\n---\n".as_slice(),
    )
    .write("skills/empty/SKILL.md", "")
    .write(
        "skills/deep/SKILL.md",
        format!(
            "---\nname: deep\ndescription: Nested\ntools: {}\n---\nbody\n",
            "[".repeat(60_000)
        ),
    )
    .write("skills/huge/SKILL.md", huge)
    .write("skills/-dash/SKILL.md", skill("Not Kebab", "Odd name"))
    .write("skills/dup1/SKILL.md", skill("same", "One"))
    .write("skills/dup2/SKILL.md", skill("same", "Two"))
    .write("skills/outer/SKILL.md", skill("outer", "Outer"))
    .write("skills/outer/inner/SKILL.md", skill("inner", "Nested"))
    .write("rules/glob.mdc", "---\ndescription: Globs\nglobs: **/*\n---\nrule\n")
    .symlink("agents/escape.md", "../../outside.md")
    .symlink("agents/dangling.md", "missing.md");
    repo.commit("oddities");
    env.json(&["source", "add", repo.path()]);
    let rows = env.artifacts("odd");
    let find = |path: &str| -> String {
        rows.iter()
            .find(|r| r.split(' ').nth(1) == Some(path))
            .unwrap_or_else(|| panic!("{path} missing from {rows:#?}"))
            .clone()
    };
    assert!(find("skills/bad-yaml").contains("not valid YAML"));
    assert!(find("skills/bom").contains(" bom With BOM "), "{}", find("skills/bom"));
    assert!(find("skills/bom").contains("byte-order mark"), "{}", find("skills/bom"));
    assert!(find("skills/crlf").contains(" crlf Windows "));
    assert!(find("skills/crlf").contains("CRLF line endings"));
    assert!(find("skills/latin1").contains("not valid UTF-8"));
    assert!(find("skills/empty").contains("file is empty"));
    // Handed to the YAML parser, 60,000 nested `[` would take libyaml about a minute.
    assert!(find("skills/deep").contains(" deep Nested "), "{}", find("skills/deep"));
    assert!(find("skills/deep").contains("nests deeper than 64 levels"));
    assert!(find("skills/huge").contains("only the first 256 KiB"));
    assert!(find("skills/-dash").contains(" Not Kebab Odd name "));
    assert!(find("skills/dup1").contains(" same One "));
    assert!(find("skills/dup2").contains(" same Two "));
    assert!(find("skills/outer/inner").contains(" inner Nested "));
    assert!(find("rules/glob.mdc").contains(" glob Globs "));
    assert!(find("rules/glob.mdc").contains("not valid YAML"));
    assert!(find("agents/escape.md").contains("points outside the repository"));
    assert!(find("agents/dangling.md").contains("not a file here"));
    let huge_size = env.query(
        "SELECT CAST(main_size AS TEXT) FROM artifacts WHERE path = 'skills/huge'",
        &[],
    );
    assert_eq!(huge_size, [(skill("huge", "Big one").len() + 300 * 1024).to_string()]);
}

#[test]
fn update_records_adds_modifications_removals_and_renames_incrementally() {
    let env = TestEnv::new();
    let repo = env.repo("up");
    repo.write("skills/keep/SKILL.md", skill("keep", "Unchanged"))
        .write("skills/edit/SKILL.md", skill("edit", "Edited later"))
        .write("skills/helper/SKILL.md", skill("helper", "Has a helper file"))
        .write("skills/helper/notes.md", "v1\n")
        .write("agents/gone.md", "---\nname: gone\n---\n")
        .write("prompts/old-name.md", "# Prompt\n")
        .write("AGENTS.md", "# Guide v1\n")
        .symlink("CLAUDE.md", "AGENTS.md");
    let c1 = repo.commit("c1");
    env.json(&["source", "add", repo.path()]);

    // Nothing upstream: up to date.
    let same = env.json(&["source", "update", "up"]);
    assert_eq!(same["sources"][0]["status"], "up_to_date");

    repo.write("skills/new/SKILL.md", skill("new", "Added"))
        .write("skills/edit/SKILL.md", skill("edit", "Edited now"))
        .write("skills/helper/notes.md", "v2\n")
        .remove("agents/gone.md")
        .write("AGENTS.md", "# Guide v2\n")
        .write("README.md", "not an artifact\n");
    repo.git(&["mv", "prompts/old-name.md", "prompts/new-name.md"]);
    let c2 = repo.commit("c2");

    let diff = env.json(&["source", "diff", "up"]);
    assert_eq!(diff["old_commit"], c1);
    assert_eq!(diff["new_commit"], c2);
    assert_eq!(diff["has_changes"], true);
    let refs = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| format!("{} {}", a["type"].as_str().unwrap(), a["path"].as_str().unwrap()))
            .collect()
    };
    assert_eq!(
        refs(&diff["new_artifacts"]),
        ["skill skills/new", "prompt prompts/new-name.md"]
    );
    assert_eq!(
        refs(&diff["modified_artifacts"]),
        [
            "skill skills/edit",
            "skill skills/helper",
            "instruction AGENTS.md",
            "instruction CLAUDE.md"
        ]
    );
    assert_eq!(
        refs(&diff["removed_artifacts"]),
        ["agent agents/gone.md", "prompt prompts/old-name.md"]
    );
    assert_eq!(diff["unchanged_count"], 1);

    let updated = env.json(&["source", "update", "up"]);
    let report = &updated["sources"][0];
    assert_eq!(report["status"], "updated");
    assert_eq!(
        (report["old_commit"].clone(), report["new_commit"].clone()),
        (json!(c1), json!(c2))
    );
    assert_eq!(
        (
            report["new_count"].clone(),
            report["modified_count"].clone(),
            report["removed_count"].clone()
        ),
        (json!(2), json!(4), json!(2))
    );
    assert_eq!(updated["total_new"], 2);
    assert_eq!(updated["total_modified"], 4);

    // One event per changed artifact, on the new commit.
    let events = env.query(
        "SELECT e.change || ' ' || a.path FROM artifact_events e JOIN artifacts a ON a.id = e.artifact_id
         JOIN commits c ON c.id = e.commit_id WHERE c.sha = ?1 ORDER BY a.path",
        &[&c2],
    );
    assert_eq!(
        events,
        [
            "modified AGENTS.md",
            "modified CLAUDE.md",
            "removed agents/gone.md",
            "added prompts/new-name.md",
            "removed prompts/old-name.md",
            "modified skills/edit",
            "modified skills/helper",
            "added skills/new",
        ]
    );

    // The incremental result equals a fresh index of the same commit.
    env.json(&["source", "add", repo.path(), "--name", "fresh"]);
    assert_eq!(env.artifacts("up"), env.artifacts("fresh"));

    // Back to c1 (a force-push): the removed artifacts come back at their paths.
    repo.git(&["reset", "-q", "--hard", &c1]);
    let back = env.json(&["source", "update", "up"]);
    assert_eq!(back["sources"][0]["new_count"], 2);
    assert_eq!(back["sources"][0]["removed_count"], 2);
    env.json(&["source", "remove", "fresh"]);
    env.json(&["source", "add", repo.path(), "--name", "fresh"]);
    assert_eq!(env.artifacts("up"), env.artifacts("fresh"));
    env.assert_counts_consistent();
}

#[test]
fn skill_files_appearing_and_disappearing_move_ownership() {
    let env = TestEnv::new();
    let repo = env.repo("own");
    repo.write("kit/agents/a.md", "---\nname: a\n---\n")
        .write("kit/README.md", "kit\n");
    repo.commit("plain agents");
    env.json(&["source", "add", repo.path()]);
    assert_eq!(
        env.json(&["source", "scan", "own"])["artifacts"]["agents"][0]["path"],
        "kit/agents/a.md"
    );

    // A SKILL.md appears above the agent: the folder is now a skill that owns it.
    repo.write("kit/SKILL.md", skill("kit", "Now a skill"));
    repo.commit("kit becomes a skill");
    let update = env.json(&["source", "update", "own"]);
    assert_eq!(update["sources"][0]["new_count"], 1);
    assert_eq!(update["sources"][0]["removed_count"], 1);
    env.json(&["source", "add", repo.path(), "--name", "fresh"]);
    assert_eq!(env.artifacts("own"), env.artifacts("fresh"));

    // A nested skill takes its files away from the outer one.
    repo.write("kit/sub/SKILL.md", skill("sub", "Nested"));
    repo.commit("nested");
    let update = env.json(&["source", "update", "own"]);
    assert_eq!(update["sources"][0]["new_count"], 1);
    assert_eq!(
        update["sources"][0]["modified_count"], 0,
        "the outer skill's files did not change"
    );
    repo.write("kit/sub/extra.md", "x\n");
    repo.commit("file in nested skill");
    let update = env.json(&["source", "update", "own"]);
    assert_eq!(update["sources"][0]["modified_count"], 1);

    // Removing the skill file turns the folder back into loose artifacts.
    repo.remove("kit/SKILL.md");
    repo.commit("no longer a skill");
    let update = env.json(&["source", "update", "own"]);
    assert_eq!(update["sources"][0]["new_count"], 1, "{update}");
    assert_eq!(update["sources"][0]["removed_count"], 1);
    env.json(&["source", "remove", "fresh"]);
    env.json(&["source", "add", repo.path(), "--name", "fresh"]);
    assert_eq!(env.artifacts("own"), env.artifacts("fresh"));
    env.assert_counts_consistent();
}

#[test]
fn two_sources_on_one_repository_share_objects_but_not_refs() {
    let env = TestEnv::new();
    let repo = env.repo("shared");
    repo.write("skills/one/SKILL.md", skill("one", "One"));
    let c1 = repo.commit("c1");
    repo.git(&["branch", "stable"]);
    env.json(&["source", "add", repo.path(), "--name", "tip"]);
    env.json(&["source", "add", repo.path(), "--name", "stable", "--ref", "stable"]);
    let caches = std::fs::read_dir(env.home().join("cache/git/_local")).unwrap().count();
    assert_eq!(caches, 1);

    repo.write("skills/two/SKILL.md", skill("two", "Two"));
    let c2 = repo.commit("c2");
    let updated = env.json(&["source", "update", "tip"]);
    assert_eq!(updated["sources"][0]["new_commit"], c2);
    let list = env.json(&["source", "list"]);
    let commit_of = |name: &str| {
        list["sources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["last_commit"]
            .clone()
    };
    assert_eq!(commit_of("tip"), json!(c2));
    assert_eq!(
        commit_of("stable"),
        json!(c1),
        "updating one source never moves another"
    );
    let stable = env.json(&["source", "update", "stable"]);
    assert_eq!(stable["sources"][0]["status"], "up_to_date");

    // Removing one with --purge-cache keeps the cache the other still uses.
    let removed = env.json(&["source", "remove", "tip", "--purge-cache"]);
    assert_eq!(
        removed,
        json!({"removed": "tip", "cache_purged": false, "was_default": false, "installed_from": []})
    );
    assert_eq!(env.json(&["source", "scan", "stable"])["total"], 1);
    let removed = env.json(&["source", "remove", "stable", "--purge-cache"]);
    assert_eq!(removed["cache_purged"], true);
    assert!(
        !env.home()
            .join("cache/git/_local")
            .join(repo.dir.canonicalize().unwrap().strip_prefix("/").unwrap())
            .exists()
    );
}

#[test]
fn adds_of_one_repository_at_the_same_moment_take_turns_and_all_land() {
    let env = TestEnv::new();
    let repo = env.repo("busy");
    repo.write_skills((0..300).map(|i| format!("skill-{i}")), "Busy");
    repo.commit("c1");
    // Separate processes, started together: each must see the cache another
    // one is creating as it is, never half-made (that was AAM_CACHE_CORRUPTED).
    let runs: Vec<_> = std::thread::scope(|scope| {
        let adds: Vec<_> = (0..4)
            .map(|i| {
                let env = &env;
                let repo = &repo;
                scope.spawn(move || env.aam(&["--json", "source", "add", repo.path(), "--name", &format!("busy-{i}")]))
            })
            .collect();
        adds.into_iter().map(|add| add.join().unwrap()).collect()
    });
    for run in &runs {
        assert_eq!(run.code, 0, "{run:?}");
    }
    for i in 0..4 {
        assert_eq!(env.artifacts(&format!("busy-{i}")).len(), 300);
    }
    assert_eq!(
        std::fs::read_dir(env.home().join("cache/git/_local")).unwrap().count(),
        1
    );
}

#[test]
fn path_scoped_sources_see_only_their_folder() {
    let env = TestEnv::new();
    let repo = env.repo("scoped");
    repo.write("skills/.curated/a/SKILL.md", skill("a", "A"))
        .write("skills/.curated/b/SKILL.md", skill("b", "B"))
        .write("skills/.system/c/SKILL.md", skill("c", "C"))
        .write("agents/x.md", "---\nname: x\n---\n");
    repo.commit("c1");
    let added = env.json(&["source", "add", repo.path(), "--path", "skills/.curated"]);
    assert_eq!(added["name"], "scoped:.curated");
    assert_eq!(added["path"], "skills/.curated");
    assert_eq!(added["artifact_count"], 2);
    let scan = env.json(&["source", "scan", "scoped:.curated"]);
    assert_eq!(scan["scan_path"], "skills/.curated");

    // Changes outside the scope move the commit but change nothing.
    repo.write("skills/.system/c/SKILL.md", skill("c", "C2"))
        .write("agents/y.md", "# y\n");
    repo.commit("outside");
    let update = env.json(&["source", "update", "scoped:.curated"]);
    let report = &update["sources"][0];
    assert_eq!(report["status"], "updated");
    assert_eq!(
        (report["new_count"].clone(), report["modified_count"].clone()),
        (json!(0), json!(0))
    );

    repo.write("skills/.curated/b/SKILL.md", skill("b", "B2"))
        .write("skills/.curated/d/SKILL.md", skill("d", "D"));
    repo.commit("inside");
    let update = env.json(&["source", "update", "scoped:.curated"]);
    assert_eq!(update["sources"][0]["new_count"], 1);
    assert_eq!(update["sources"][0]["modified_count"], 1);

    // A GitHub-style tree URL carries the ref and path (through a file URL here).
    let url_scoped = env.json(&[
        "source",
        "add",
        &format!("file://{}", repo.path()),
        "--path",
        "skills/.system",
        "--ref",
        "main",
    ]);
    assert_eq!(url_scoped["name"], "scoped:.system");
    assert_eq!(url_scoped["artifact_count"], 1);
}

#[test]
fn branches_tags_and_commits_as_refs() {
    let env = TestEnv::new();
    let repo = env.repo("refs");
    repo.write("skills/v1/SKILL.md", skill("v1", "First"));
    let c1 = repo.commit("c1");
    repo.git(&["tag", "-a", "v1.0", "-m", "annotated"]);
    repo.git(&["tag", "light", &c1]);
    repo.write("skills/v2/SKILL.md", skill("v2", "Second"));
    let c2 = repo.commit("c2");
    repo.git(&["checkout", "-q", "-b", "dev"]);
    repo.write("skills/dev/SKILL.md", skill("dev", "Dev only"));
    let c3 = repo.commit("c3");
    repo.git(&["checkout", "-q", "main"]);

    let cases = [
        ("tag", "v1.0", &c1, 1),
        ("light", "light", &c1, 1),
        ("branch", "dev", &c3, 3),
        ("full", c1.as_str(), &c1, 1),
        ("short", &c2[..10], &c2, 2),
    ];
    for (name, git_ref, commit, count) in cases {
        let added = env.json(&["source", "add", repo.path(), "--ref", git_ref, "--name", name]);
        assert_eq!(added["commit"], json!(commit), "{name}");
        assert_eq!(added["artifact_count"], count, "{name}");
    }
    let default = env.json(&["source", "add", repo.path(), "--name", "default"]);
    assert_eq!(
        (default["ref"].clone(), default["commit"].clone()),
        (json!("main"), json!(c2))
    );

    // The branch follows new commits; tags and commits stay put.
    repo.git(&["checkout", "-q", "dev"]);
    repo.write("skills/dev2/SKILL.md", skill("dev2", "More dev"));
    repo.commit("c4");
    repo.git(&["checkout", "-q", "main"]);
    let all = env.json(&["source", "update", "--all"]);
    let status: Vec<String> = all["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| format!("{} {}", s["name"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        [
            "branch updated",
            "default up_to_date",
            "full up_to_date",
            "light up_to_date",
            "short up_to_date",
            "tag up_to_date"
        ]
    );
}

/// A source whose branch is gone upstream is pointed at another with
/// `source update NAME --ref`: it keeps its name, so what was installed from
/// it still upgrades from it; a ref that is not there changes nothing.
#[test]
fn an_update_can_track_another_ref() {
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v1"));
    repo.commit("c1");
    repo.git(&["checkout", "-q", "-b", "feature"]);
    repo.write("skills/feature/SKILL.md", skill("feature", "Feature"));
    repo.commit("c2");
    env.json(&["source", "add", repo.path(), "--ref", "feature", "--name", "team"]);
    repo.git(&["checkout", "-q", "main"]);
    repo.git(&["branch", "-q", "-D", "feature"]);
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v2"));
    let c3 = repo.commit("c3");

    let gone = env.aam(&["--json", "source", "update", "team"]);
    let body = gone.err("AAM_GIT_REF_NOT_FOUND");
    assert!(body["hint"].as_str().unwrap().contains("--ref"), "{body}");
    let missing = env.aam(&["--json", "source", "update", "team", "--ref", "nope"]);
    missing.err("AAM_GIT_REF_NOT_FOUND");
    let listed = env.json(&["source", "list"]);
    assert_eq!(listed["sources"][0]["ref"], "feature", "{listed}");

    let dry = env.json(&["source", "update", "team", "--ref", "main", "--dry-run"]);
    assert_eq!(dry["sources"][0]["status"], "would_update", "{dry}");
    assert_eq!(env.json(&["source", "list"])["sources"][0]["ref"], "feature");
    let moved = env.json(&["source", "update", "team", "--ref", "main"]);
    assert_eq!(moved["sources"][0]["new_commit"], json!(c3), "{moved}");
    assert_eq!(moved["sources"][0]["removed_count"], 1, "{moved}");
    assert_eq!(env.json(&["source", "list"])["sources"][0]["ref"], "main");
    assert_eq!(env.json(&["info", "team/pdf"])["description"], "PDF v2");
    // It follows the new branch from now on.
    assert_eq!(
        env.json(&["source", "update", "team"])["sources"][0]["status"],
        "up_to_date"
    );

    let everywhere = env.aam(&["--json", "source", "update", "--all", "--ref", "main"]);
    assert_ne!(everywhere.code, 0, "{everywhere:?}");
}

#[test]
fn update_all_goes_on_past_a_failing_source() {
    let env = TestEnv::new();
    let good = env.repo("good");
    good.write("skills/a/SKILL.md", skill("a", "A"));
    good.commit("c1");
    let doomed = env.repo("doomed");
    doomed.write("skills/b/SKILL.md", skill("b", "B"));
    doomed.commit("c1");
    env.json(&["source", "add", good.path()]);
    env.json(&["source", "add", doomed.path()]);
    std::fs::remove_dir_all(&doomed.dir).unwrap();
    good.write("skills/c/SKILL.md", skill("c", "C"));
    good.commit("c2");

    let run = env.aam(&["--json", "source", "update", "--all"]);
    assert_eq!(run.code, 1, "a failed source makes the run fail: {run:?}");
    let out = run.json();
    assert_eq!(out["sources"][0]["name"], "doomed");
    assert_eq!(out["sources"][0]["status"], "failed");
    assert_eq!(out["sources"][0]["error"]["code"], "AAM_GIT_FETCH_FAILED");
    assert_eq!(out["sources"][1]["status"], "updated");
    assert_eq!(out["total_new"], 1);
    // The table gives the failure's hint too, under its line.
    let hint = out["sources"][0]["error"]["hint"].as_str().unwrap().to_string();
    let human = env.aam(&["source", "update", "--all"]);
    assert!(
        human.stdout.contains("doomed: failed: [AAM_GIT_FETCH_FAILED]")
            && human.stdout.contains(&format!("\n  hint: {hint}\n")),
        "{human:?}"
    );
    // The failed source still answers from the catalog.
    assert_eq!(env.json(&["source", "scan", "doomed"])["total"], 1);
}

#[test]
fn dry_run_and_diff_change_nothing() {
    let env = TestEnv::new();
    let repo = env.repo("dry");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    repo.write("skills/b/SKILL.md", skill("b", "B"));
    let c2 = repo.commit("c2");
    let before = env.state();
    let dry = env.json(&["source", "update", "dry", "--dry-run"]);
    assert_eq!(dry["sources"][0]["status"], "would_update");
    assert_eq!(dry["sources"][0]["new_count"], 1);
    let diff = env.json(&["source", "diff", "dry"]);
    assert_eq!(diff["new_commit"], c2);
    let after = env.state();
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, _)| k)
        .filter(|k| k.starts_with("table"))
        .collect();
    assert!(changed.is_empty(), "catalog changed: {changed:?}");
    assert_eq!(env.json(&["source", "scan", "dry"])["total"], 1);
}

#[test]
fn defaults_are_registered_unfetched_and_removal_is_remembered() {
    let env = TestEnv::new();
    let enabled = env.json(&["source", "enable-defaults"]);
    assert_eq!(
        enabled["added"],
        json!([
            "github/awesome-copilot",
            "openai/skills:.curated",
            "anthropics/skills",
            "microsoft/skills"
        ])
    );
    let list = env.json(&["source", "list"]);
    let rows: Vec<String> = list["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {} {}",
                s["name"].as_str().unwrap(),
                s["url"].as_str().unwrap(),
                s["path"].as_str().unwrap(),
                s["default"]
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "anthropics/skills https://github.com/anthropics/skills.git skills true",
            "github/awesome-copilot https://github.com/github/awesome-copilot.git skills true",
            "microsoft/skills https://github.com/microsoft/skills.git .github/skills true",
            "openai/skills:.curated https://github.com/openai/skills.git skills/.curated true",
        ]
    );
    assert!(
        list["sources"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["last_fetched"].is_null() && s["last_commit"].is_null())
    );
    assert!(!env.home().join("cache").exists(), "nothing fetched");

    let err = env.json_err(&["source", "scan", "anthropics/skills"], "AAM_SOURCE_NOT_INDEXED");
    assert!(
        err["hint"]
            .as_str()
            .unwrap()
            .contains("aam source update anthropics/skills")
    );
    // Asking for one of its artifacts says the same, not "no artifact".
    for command in [
        &["info", "anthropics/skills/pdf"][..],
        &["audit", "anthropics/skills/pdf"],
    ] {
        let err = env.json_err(command, "AAM_SOURCE_NOT_INDEXED");
        assert!(
            err["hint"]
                .as_str()
                .unwrap()
                .contains("aam source update anthropics/skills")
        );
    }

    let removed = env.json(&["source", "remove", "anthropics/skills"]);
    assert_eq!(removed["was_default"], true);
    let again = env.json(&["source", "enable-defaults"]);
    assert_eq!(again["added"], json!([]));
    assert_eq!(again["dismissed"], json!(["anthropics/skills"]));
    assert_eq!(again["already_present"].as_array().unwrap().len(), 3);
    let restored = env.json(&["source", "enable-defaults", "--restore"]);
    assert_eq!(restored["added"], json!(["anthropics/skills"]));
}

#[test]
fn cache_damage_is_reported_and_update_repairs_it() {
    let env = TestEnv::new();
    let repo = env.repo("fragile");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    let cache = env
        .home()
        .join("cache/git/_local")
        .join(repo.dir.canonicalize().unwrap().strip_prefix("/").unwrap());
    std::fs::remove_dir_all(cache.join("objects")).unwrap();
    std::fs::remove_dir_all(cache.join("refs")).unwrap();

    let before = env.state();
    let err = env.json_err(&["source", "diff", "fragile"], "AAM_CACHE_CORRUPTED");
    assert!(err["hint"].as_str().unwrap().contains("aam source update"));
    assert_eq!(before, env.state());

    let repaired = env.json(&["source", "update", "fragile"]);
    assert_eq!(repaired["sources"][0]["status"], "up_to_date");
    let diff = env.json(&["source", "diff", "fragile"]);
    assert_eq!(diff["has_changes"], false);
    assert_eq!(diff["unchanged_count"], 1);

    // A cache deleted outright is rebuilt the same way.
    std::fs::remove_dir_all(&cache).unwrap();
    env.json_err(&["source", "diff", "fragile"], "AAM_CACHE_CORRUPTED");
    repo.write("skills/b/SKILL.md", skill("b", "B"));
    repo.commit("c2");
    let repaired = env.json(&["source", "update", "fragile"]);
    assert_eq!(repaired["sources"][0]["new_count"], 1);
}

#[test]
fn symlink_chains_and_late_targets_follow_updates() {
    let env = TestEnv::new();
    let repo = env.repo("links");
    repo.write("docs/one.md", "# one\n")
        .write("docs/two.md", "# two\n")
        .symlink("AGENTS.md", "docs/one.md")
        .symlink("CLAUDE.md", "AGENTS.md")
        .symlink("agents/later.md", "../docs/later.md");
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    let description = |env: &TestEnv, path: &str| {
        env.query(
            "SELECT COALESCE(description, '-') FROM artifacts WHERE path = ?1 AND removed_commit_id IS NULL",
            &[path],
        )
    };
    assert_eq!(description(&env, "CLAUDE.md"), ["one"]);
    assert_eq!(description(&env, "agents/later.md"), ["-"]);

    // Retarget the middle of the chain, and create the missing target.
    repo.remove("AGENTS.md")
        .symlink("AGENTS.md", "docs/two.md")
        .write("docs/later.md", "# now here\n");
    repo.commit("c2");
    let update = env.json(&["source", "update", "links"]);
    assert_eq!(update["sources"][0]["modified_count"], 3, "{update}");
    assert_eq!(description(&env, "CLAUDE.md"), ["two"]);
    assert_eq!(description(&env, "agents/later.md"), ["now here"]);
    env.json(&["source", "add", repo.path(), "--name", "fresh"]);
    assert_eq!(env.artifacts("links"), env.artifacts("fresh"));
}

#[test]
fn updates_reuse_what_they_already_read() {
    let env = TestEnv::new();
    let repo = env.repo("reuse");
    repo.write("skills/kit/SKILL.md", skill("kit", "v1"))
        .write("skills/kit/scripts/run.sh", "echo run\n");
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    // Mark the recorded digest of the file that will not change: an update that
    // re-read it would overwrite the mark.
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "UPDATE artifact_files SET blake3 = 'kept' WHERE path = 'skills/kit/scripts/run.sh'",
        [],
    )
    .unwrap();
    drop(conn);
    repo.write("skills/kit/SKILL.md", skill("kit", "v2"));
    repo.commit("c2");
    env.json(&["source", "update", "reuse"]);
    let digests = env.query("SELECT path || ' ' || blake3 FROM artifact_files ORDER BY path", &[]);
    assert_eq!(
        digests[1], "skills/kit/scripts/run.sh kept",
        "unchanged blob not re-read"
    );
    assert_eq!(
        digests[0],
        format!(
            "skills/kit/SKILL.md {}",
            blake3::hash(skill("kit", "v2").as_bytes()).to_hex()
        ),
        "changed blob read"
    );
}

#[test]
fn a_scope_folder_that_disappears_is_reported() {
    let env = TestEnv::new();
    let repo = env.repo("vanish");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--path", "skills"]);
    repo.git(&["mv", "skills", "moved"]);
    repo.commit("c2");
    let run = env.aam(&["--json", "source", "update", "vanish:skills"]);
    assert_eq!(run.json()["sources"][0]["removed_count"], 1);
    assert!(
        run.stderr
            .contains("warning: `skills` no longer exists in `vanish:skills`"),
        "{}",
        run.stderr
    );
}

#[test]
fn adding_a_tracked_repository_names_its_source_and_if_missing_accepts_it() {
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write("skills/one/SKILL.md", skill("one", "One"));
    let c1 = repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "tip"]);

    // The same URL, ref and path under its default name says which source has it.
    let err = env.json_err(&["source", "add", repo.path()], "AAM_SOURCE_ALREADY_EXISTS");
    assert!(
        err["message"].as_str().unwrap().contains("source `tip` already tracks"),
        "{err}"
    );
    assert!(err["hint"].as_str().unwrap().contains("--if-missing"), "{err}");
    // `--if-missing` accepts it as is, also when the ref is the branch it follows.
    for args in [
        vec!["source", "add", repo.path(), "--if-missing"],
        vec![
            "source",
            "add",
            repo.path(),
            "--ref",
            "main",
            "--name",
            "x",
            "--if-missing",
        ],
    ] {
        let same = env.json(&args);
        assert_eq!(same["name"], "tip");
        assert_eq!(same["already_registered"], true);
        assert_eq!(same["commit"], c1);
        assert_eq!(same["artifact_count"], 1);
        assert_eq!(same["artifacts_by_type"]["skills"], 1);
    }
    // Another ref under its name is not it (it was accepted, at the branch).
    env.json_err(
        &[
            "source",
            "add",
            repo.path(),
            "--ref",
            &c1,
            "--name",
            "tip",
            "--if-missing",
        ],
        "AAM_SOURCE_ALREADY_EXISTS",
    );
    let text = env.aam(&["source", "add", repo.path(), "--if-missing"]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(text.stdout.contains("Source `tip` already tracks"), "{text:?}");
    assert!(text.stdout.contains("1 artifact)"), "{text:?}");
    // A second copy under a name of its own is deliberate: added, with a warning.
    let copy = env.aam(&["--json", "source", "add", repo.path(), "--name", "copy"]);
    assert_eq!(copy.json()["already_registered"], false, "{copy:?}");
    assert!(copy.stderr.contains("warning: source `tip` already tracks"), "{copy:?}");
    env.json(&["source", "remove", "copy"]);
    // Another path is another source.
    let scoped = env.json(&["source", "add", repo.path(), "--path", "skills", "--if-missing"]);
    assert_eq!(scoped["already_registered"], false);
    assert_eq!(env.json(&["source", "list"])["sources"].as_array().unwrap().len(), 2);
}

#[test]
fn defaults_are_matched_by_url_ref_and_path_not_only_by_name() {
    let env = TestEnv::new();
    env.json(&["source", "enable-defaults"]);
    // `anthropics/skills --path skills` is the default `anthropics/skills`: no fetch, no second source.
    let err = env.json_err(
        &["source", "add", "anthropics/skills", "--path", "skills"],
        "AAM_SOURCE_ALREADY_EXISTS",
    );
    assert!(
        err["message"].as_str().unwrap().contains("`anthropics/skills`"),
        "{err}"
    );
    let same = env.json(&["source", "add", "anthropics/skills", "--path", "skills", "--if-missing"]);
    assert_eq!(same["name"], "anthropics/skills");
    assert_eq!(same["already_registered"], true);
    assert!(same["commit"].is_null() && same["ref"].is_null(), "{same}");
    // The README's folder URL of a default not fetched yet: its name and
    // repository are the default's (it failed, saying to pass `--name`).
    let folder = env.json(&[
        "source",
        "add",
        "https://github.com/openai/skills/tree/main/skills/.curated",
        "--if-missing",
    ]);
    assert_eq!(folder["already_registered"], true, "{folder}");
    assert!(!env.home().join("cache").exists(), "nothing fetched");
    // Another folder of it under that name is not the same source.
    env.json_err(
        &[
            "source",
            "add",
            "openai/skills",
            "--path",
            "skills/.system",
            "--name",
            "openai/skills:.curated",
            "--if-missing",
        ],
        "AAM_SOURCE_ALREADY_EXISTS",
    );
    // Another repository under a name in use: the error names what it tracks.
    let err = env.json_err(
        &[
            "source",
            "add",
            "someone/else",
            "--name",
            "anthropics/skills",
            "--if-missing",
        ],
        "AAM_SOURCE_ALREADY_EXISTS",
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("github.com/anthropics/skills"),
        "{err}"
    );
    assert!(err["hint"].as_str().unwrap().contains("--name"), "{err}");

    // A source registered under another name before the defaults is not registered twice.
    let env = TestEnv::new();
    env.json(&["source", "list"]);
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "INSERT INTO sources (name, kind, url, cache_key, ref_name, scope_path, is_default, added_at)
         VALUES ('anthropics/skills:skills', 'git', 'https://github.com/anthropics/skills.git',
                 'github.com/anthropics/skills', NULL, 'skills', 0, '2026-01-01T00:00:00Z')",
        [],
    )
    .unwrap();
    drop(conn);
    let enabled = env.json(&["source", "enable-defaults"]);
    assert_eq!(enabled["already_present"], json!(["anthropics/skills:skills"]));
    assert_eq!(enabled["added"].as_array().unwrap().len(), 3);
    let names: Vec<String> = env.json(&["source", "list"])["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert!(!names.contains(&"anthropics/skills".to_string()), "{names:?}");
}

/// Serves, over smart HTTP, a repository holding a blob just over the 16 MiB aam reads
/// beside a skill, with or without the server's permission to filter blobs; returns
/// the server, the URL, the large blob's id and the work repository.
fn large_blob_server(env: &TestEnv, allow_filter: bool) -> (std::process::Child, String, String, Repo) {
    let work = env.repo("work");
    // Zeros: over the limit by size, a few KiB once compressed, so the test stays fast.
    work.write("skills/demo/SKILL.md", skill("demo", "A demo"))
        .write("assets/model.bin", vec![0u8; 17 * 1024 * 1024])
        .commit("skills and a large blob");
    let big = work.git(&["rev-parse", "HEAD:assets/model.bin"]);
    let (server, url) = serve_bare_clone(env, &work, allow_filter, &[]);
    (server, url, big, work)
}

/// Serves a bare clone of `work` over smart HTTP, with or without the server's
/// permission to filter blobs, the server started with `vars` (see
/// [`http_backend`]); returns the server and the URL.
pub(crate) fn serve_bare_clone(
    env: &TestEnv,
    work: &Repo,
    allow_filter: bool,
    vars: &[(&str, &str)],
) -> (std::process::Child, String) {
    let served = env.path("served");
    std::fs::create_dir_all(&served).unwrap();
    let bare = served.join("repo.git");
    work.git(&["clone", "-q", "--bare", work.path(), bare.to_str().unwrap()]);
    let allow = if allow_filter { "true" } else { "false" };
    work.git(&["-C", bare.to_str().unwrap(), "config", "uploadpack.allowFilter", allow]);
    let (server, port) = http_backend(&served, None, vars)
        .expect("this test needs `python3` on PATH (every machine of this project has it)");
    (server, format!("http://127.0.0.1:{port}/repo.git"))
}

/// The bare cache folders under `AAM_HOME`.
fn git_caches(env: &TestEnv) -> Vec<PathBuf> {
    let root = env.home().join("cache/git");
    let mut found = Vec::new();
    for host in std::fs::read_dir(&root).unwrap() {
        for repo in std::fs::read_dir(host.unwrap().path()).unwrap() {
            found.push(repo.unwrap().path());
        }
    }
    found
}

#[test]
fn a_large_blob_beside_skills_stays_on_a_server_that_filters_and_comes_from_one_that_does_not() {
    for allow_filter in [true, false] {
        let env = TestEnv::new();
        let (mut server, url, big, work) = large_blob_server(&env, allow_filter);
        let added = env.json(&["source", "add", &url, "--name", "big"]);
        assert_eq!(added["artifact_count"], 1, "{added}");
        let caches = git_caches(&env);
        assert_eq!(caches.len(), 1, "{caches:?}");
        let cache = caches[0].to_str().unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(["-C", cache])
                .args(args)
                // A partial clone's `git` would fetch a missing blob from its promisor remote.
                .env("GIT_NO_LAZY_FETCH", "1")
                .output()
                .unwrap()
        };
        let missing = |id: &str| {
            let listed = git(&["rev-list", "--objects", "--missing=print", "--all"]);
            String::from_utf8_lossy(&listed.stdout)
                .lines()
                .any(|l| l == format!("?{id}"))
        };
        let has_big = git(&["cat-file", "-e", &big]).status.success();
        assert_eq!(missing(&big), allow_filter);
        let partial = git(&["config", "extensions.partialClone"]).status.success();
        assert_eq!(
            has_big, !allow_filter,
            "the large blob is fetched only when the server cannot filter"
        );
        assert_eq!(
            partial, allow_filter,
            "only a filtered fetch marks the cache as a partial clone"
        );
        // `git` itself reads the cache as sound: the missing blob is a promised one.
        let fsck = git(&["fsck", "--no-dangling"]);
        assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stderr));

        // The skill installs, and an update after a push fetches only what is new.
        let proj = env.repo("proj");
        let installed = env.aam_in(
            std::path::Path::new(proj.path()),
            &["--json", "install", "big/demo", "--platform", "claude"],
        );
        installed.ok_json();
        let skill_md = std::fs::read_to_string(std::path::Path::new(proj.path()).join(".claude/skills/demo/SKILL.md"));
        assert_eq!(skill_md.unwrap(), skill("demo", "A demo"));
        work.write("skills/more/SKILL.md", skill("more", "More")).commit("two");
        work.git(&["push", "-q", env.path("served/repo.git").to_str().unwrap(), "main"]);
        let updated = env.json(&["source", "update", "big"]);
        assert_eq!(updated["sources"][0]["new_count"], 1, "{updated}");
        assert_eq!(missing(&big), allow_filter);
        let _ = server.kill();
        let _ = server.wait();
    }
}

/// A server that cannot filter sends every blob whole. Resolving the pack refuses an
/// object over 1 GiB before allocating it (it would have taken 1 GiB of memory), the
/// add fails as too large, and no source or cache is left behind.
#[test]
fn a_fetch_refuses_an_object_over_a_gigabyte_before_allocating_it() {
    use std::io::Write;
    let env = TestEnv::new();
    let work = env.repo("work");
    work.write("skills/demo/SKILL.md", skill("demo", "A demo"))
        .commit("a skill");
    // 1 GiB and one byte of zeros, streamed into git: about a megabyte compressed.
    let mut hash = std::process::Command::new("git")
        .args(["hash-object", "-w", "--stdin"])
        .current_dir(work.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = hash.stdin.take().unwrap();
    let chunk = vec![0u8; 1024 * 1024];
    for _ in 0..1024 {
        stdin.write_all(&chunk).unwrap();
    }
    stdin.write_all(&[0]).unwrap();
    drop(stdin);
    let output = hash.wait_with_output().unwrap();
    assert!(output.status.success());
    let huge = String::from_utf8(output.stdout).unwrap();
    work.git(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{},assets/huge.bin", huge.trim()),
    ]);
    work.git(&["commit", "-q", "-m", "a file over a gigabyte, outside the skills"]);
    let (mut server, url) = serve_bare_clone(&env, &work, false, &[]);

    let refused = env
        .aam(&["--json", "source", "add", &url, "--name", "huge"])
        .err("AAM_SOURCE_FILE_TOO_LARGE");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("more than 1024 MiB"),
        "{refused}"
    );
    assert_eq!(env.json(&["source", "list"])["sources"], serde_json::json!([]));
    let caches = env.home().join("cache/git");
    assert!(!caches.exists() || git_caches(&env).is_empty(), "{caches:?}");
    let _ = server.kill();
    let _ = server.wait();
}

/// A skill holding a file over the limit is left out of the catalog with a
/// warning naming the file, whether or not the server filters large blobs:
/// the rest of the source is indexed (one large file used to stop the add).
/// An update that brings such a file removes the skill it is in.
#[test]
fn a_skill_holding_a_file_over_the_limit_is_left_out_whether_or_not_the_server_filters() {
    for allow_filter in [true, false] {
        let env = TestEnv::new();
        let work = env.repo("work");
        work.write("skills/heavy/SKILL.md", skill("heavy", "Heavy"))
            .write("skills/heavy/weights.bin", vec![0u8; 17 * 1024 * 1024])
            .write("skills/light/SKILL.md", skill("light", "Light"))
            .commit("a skill with a large file");
        let (mut server, url) = serve_bare_clone(&env, &work, allow_filter, &[]);
        let added = env.aam(&["--json", "source", "add", &url, "--name", "work"]);
        assert_eq!(added.code, 0, "{added:?}");
        assert!(
            added.stderr.contains("`skills/heavy` is left out of the catalog")
                && added.stderr.contains("skills/heavy/weights.bin"),
            "{added:?}"
        );
        let indexed = env.artifacts("work");
        assert!(
            indexed.len() == 1 && indexed[0].starts_with("skill skills/light "),
            "{indexed:?}"
        );
        let _ = server.kill();
        let _ = server.wait();
    }
    let env = TestEnv::new();
    let work = env.repo("work");
    work.write("skills/light/SKILL.md", skill("light", "Light"))
        .commit("c1");
    env.json(&["source", "add", work.path(), "--name", "work"]);
    work.write("skills/light/model.bin", vec![0u8; 17 * 1024 * 1024])
        .commit("c2");
    let updated = env.json(&["source", "update", "work"]);
    assert_eq!(updated["sources"][0]["removed_count"], 1, "{updated}");
    assert!(env.artifacts("work").is_empty());

    // So is a skill of more files than an artifact may hold (a 30,000-file
    // skill made `aam info` and a skills/get answer of many megabytes).
    let many = env.repo("many");
    many.write("skills/ok/SKILL.md", skill("ok", "Fine"))
        .write("skills/huge/SKILL.md", skill("huge", "Huge"));
    for i in 0..1000 {
        many.write(&format!("skills/huge/data/{i}.txt"), "x\n");
    }
    many.commit("c1");
    let added = env.aam(&["--json", "source", "add", many.path(), "--name", "many"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        added
            .stderr
            .contains("`skills/huge` is left out of the catalog: it holds 1001 files"),
        "{added:?}"
    );
    let indexed = env.artifacts("many");
    assert!(
        indexed.len() == 1 && indexed[0].starts_with("skill skills/ok "),
        "{indexed:?}"
    );
}

/// `git http-backend` behind a small Python server on 127.0.0.1, serving the bare
/// repositories under `root`; `None` without python3.
fn http_backend(
    root: &std::path::Path,
    tls: Option<&(PathBuf, PathBuf)>,
    vars: &[(&str, &str)],
) -> Option<(std::process::Child, u16)> {
    use std::io::BufRead;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/http_backend.py");
    let mut server = std::process::Command::new("python3")
        .arg(script)
        .envs(vars.iter().copied())
        .arg(root)
        .args(tls.iter().flat_map(|(cert, key)| [cert, key]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    Some((server, line.trim().parse().ok()?))
}

#[test]
fn a_smart_http_server_with_a_one_level_path_is_fetched_and_updated() {
    let env = TestEnv::new();
    let work = env.repo("work");
    work.write("skills/demo/SKILL.md", skill("demo", "A demo"))
        .commit("one");
    let served = env.path("served");
    let (mut server, url) = serve_bare_clone(&env, &work, false, &[]);
    let port = url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/repo.git");
    let added = env.json(&["source", "add", &url]);
    assert_eq!(added["name"], format!("127.0.0.1_{port}/repo"), "{added}");
    assert_eq!(added["ref"], "main");
    assert_eq!(added["artifact_count"], 1);

    work.write("skills/more/SKILL.md", skill("more", "More")).commit("two");
    work.git(&["push", "-q", served.join("repo.git").to_str().unwrap(), "main"]);
    let name = format!("127.0.0.1_{port}/repo");
    let updated = env.json(&["source", "update", &name]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(updated["sources"][0]["new_count"], 1, "{updated}");
}

#[test]
fn a_smart_https_server_with_a_private_certificate_authority_is_fetched() {
    let env = TestEnv::new();
    let work = env.repo("work");
    work.write("skills/demo/SKILL.md", skill("demo", "A demo"))
        .commit("one");
    let served = env.path("served");
    std::fs::create_dir_all(served.join("team")).unwrap();
    std::fs::create_dir_all(served.join("private")).unwrap();
    let bare = served.join("team/repo.git");
    work.git(&["clone", "-q", "--bare", work.path(), bare.to_str().unwrap()]);
    let private = served.join("private/repo.git");
    work.git(&["clone", "-q", "--bare", work.path(), private.to_str().unwrap()]);
    let tls = self_signed_cert(&env).expect("this test needs `openssl` on PATH (every machine of this project has it)");
    let token = "s3cret-token-value";
    let (mut server, port) = http_backend(&served, Some(&tls), &[("PRIVATE_TOKEN", token)])
        .expect("this test needs `python3` on PATH (every machine of this project has it)");
    let url = format!("https://127.0.0.1:{port}/team/repo.git");
    let untrusted = env.aam(&["--json", "source", "add", &url]);
    untrusted.err("AAM_TLS_CERTIFICATE");
    let cert = tls.0.to_str().unwrap();
    let trusted = |extra: &[(&str, &str)], args: &[&str]| {
        let mut vars = vec![("SSL_CERT_FILE", cert)];
        vars.extend_from_slice(extra);
        env.aam_with(&env.path(""), &vars, args)
    };
    let added = trusted(&[], &["--json", "source", "add", &url]).ok_json();
    assert_eq!(added["name"], "team/repo", "{added}");
    assert_eq!(added["artifact_count"], 1);

    // An update after a push fetches the new commit over TLS.
    work.write("skills/more/SKILL.md", skill("more", "More")).commit("two");
    work.git(&["push", "-q", bare.to_str().unwrap(), "main"]);
    let updated = trusted(&[], &["--json", "source", "update", "team/repo"]).ok_json();
    assert_eq!(updated["sources"][0]["new_count"], 1, "{updated}");

    // A missing repository is not found; a private one wants this host's token.
    let missing = trusted(
        &[],
        &[
            "--json",
            "source",
            "add",
            &format!("https://127.0.0.1:{port}/team/nothing.git"),
        ],
    );
    let missing = missing.err("AAM_GIT_CLONE_FAILED");
    assert!(
        missing["message"].as_str().unwrap().contains("repository not found"),
        "{missing}"
    );
    let private_url = format!("https://127.0.0.1:{port}/private/repo.git");
    let refused = trusted(&[], &["--json", "source", "add", &private_url]);
    let refused = refused.err("AAM_GIT_AUTH_FAILED");
    assert!(
        refused["hint"].as_str().unwrap().contains("AAM_GIT_TOKEN_127_0_0_1"),
        "{refused}"
    );
    let wrong = trusted(
        &[("AAM_GIT_TOKEN_127_0_0_1", "not-the-token")],
        &["--json", "source", "add", &private_url],
    );
    wrong.err("AAM_GIT_AUTH_FAILED");
    let with_token = trusted(
        &[("AAM_GIT_TOKEN_127_0_0_1", token)],
        &["-v", "--json", "source", "add", &private_url],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        !with_token.stdout.contains(token) && !with_token.stderr.contains(token),
        "the token is never echoed: {with_token:?}"
    );
    assert_eq!(with_token.ok_json()["name"], "private/repo");
}

/// Ctrl-C asks a running command to stop at its next safe point: it ends with
/// `AAM_CANCELLED` and keeps nothing, instead of dying where it stood. The add
/// is held at its first step by the repository's cache lock, taken here, so
/// the signal lands while it runs.
#[test]
fn ctrl_c_stops_a_command_at_a_safe_point_and_keeps_nothing() {
    use std::io::{BufRead, BufReader};
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write("skills/a/SKILL.md", skill("a", "A")).commit("one skill");
    let spec = aam::sources::spec::SourceSpec::parse(repo.path(), env.root.path()).unwrap();
    let held = aam::sources::cache::lock(
        &env.home().join("locks"),
        &env.home().join("cache/git"),
        &spec.cache_key(),
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
        .args(["-v", "source", "add", repo.path(), "--name", "team"])
        .current_dir(env.root.path())
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env_remove("AAM_LOG")
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("waiting for another aam command") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the add ended early: {seen}");
        seen.push_str(&line);
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    // The add stops once it can move again, at its next safe point.
    std::thread::sleep(std::time::Duration::from_millis(200));
    drop(held);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(status.code(), Some(1), "{seen}{rest}");
    assert!(rest.contains("AAM_CANCELLED"), "{seen}{rest}");
    assert!(env.artifacts("team").is_empty());
    assert!(!env.home().join("cache/git").join(spec.cache_key()).exists());
}

/// A local repository inside another keeps its cache inside the outer one's
/// folder: neither a purge nor a repair of the outer cache takes it.
#[test]
fn a_cache_nested_in_another_survives_its_purge_and_repair() {
    let env = TestEnv::new();
    let outer = env.repo("outer");
    outer.write("skills/a/SKILL.md", skill("a", "A"));
    outer.write(".git/info/exclude", "inner/\n");
    outer.commit("outer");
    let inner = env.repo("outer/inner");
    inner.write("skills/b/SKILL.md", skill("b", "B")).commit("inner");
    env.json(&["source", "add", outer.path(), "--name", "outer"]);
    env.json(&["source", "add", inner.path(), "--name", "inner"]);
    let removed = env.json(&["source", "remove", "outer", "--purge-cache"]);
    assert_eq!(removed["cache_purged"], false, "{removed}");
    env.json(&["catalog", "check", "--repair"]);
    let check = env.json(&["catalog", "check"]);
    let caches = check["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "caches")
        .unwrap();
    assert_eq!(caches["status"], "pass", "{check}");
    assert_eq!(env.json(&["source", "diff", "inner"])["has_changes"], false);
}

#[test]
fn an_edit_made_while_uninstall_checks_the_origin_is_kept() {
    let env = TestEnv::new();
    let work = env.repo("work");
    work.write("skills/demo/SKILL.md", skill("demo", "A demo"))
        .write("skills/demo/notes.md", "notes\n")
        .write("skills/other/SKILL.md", skill("other", "Another"))
        .commit("one");
    // Every pack request waits: the uninstalls below fetch the origin for a while.
    let (mut server, url) = serve_bare_clone(&env, &work, false, &[("DELAY_POST", "2")]);
    env.json(&["source", "add", &url, "--name", "web"]);
    let proj = crate::install::project(&env);
    env.aam_in(
        &proj.dir,
        &["--json", "install", "web/demo", "web/other", "--platform", "claude"],
    )
    .ok_json();
    let pulled = env.path("pulled");
    crate::support::copy_tree(&proj.dir, &pulled);
    // A clone's uninstall in a fresh home checks the files against the origin;
    // meanwhile `change` happens in `dir`.
    let uninstall_while = |dir: &std::path::Path, home: &str, change: &dyn Fn()| {
        let fresh = env.path(home);
        std::thread::scope(|scope| {
            let uninstall = scope.spawn(|| {
                env.aam_with(
                    dir,
                    &[("AAM_HOME", fresh.to_str().unwrap())],
                    &["--json", "uninstall", "demo"],
                )
            });
            std::thread::sleep(std::time::Duration::from_millis(1000));
            change();
            uninstall.join().unwrap()
        })
    };
    // The user edits a file: it is kept.
    let notes = proj.dir.join(".claude/skills/demo/notes.md");
    let removed = uninstall_while(&proj.dir, "fresh-home", &|| {
        std::fs::write(&notes, "my edit\n").unwrap()
    })
    .ok_json();
    assert_eq!(
        removed["kept_modified"],
        json!([".claude/skills/demo/notes.md"]),
        "{removed}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my edit\n");
    // A pull changes another package's entry: the change stays.
    let lock = pulled.join(".aam/aam-lock.yaml");
    let pull = || {
        let mut recorded: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(&lock).unwrap()).unwrap();
        recorded["packages"]["other"]["requested"] = "web/skills/other@pulled".into();
        std::fs::write(&lock, serde_yaml_ng::to_string(&recorded).unwrap()).unwrap();
    };
    uninstall_while(&pulled, "fresh-home-2", &pull).ok_json();
    let _ = server.kill();
    let _ = server.wait();
    let after = std::fs::read_to_string(&lock).unwrap();
    assert!(after.contains("web/skills/other@pulled"), "{after}");
    assert!(!after.contains("demo"), "{after}");
}

/// A clone of a bundle has only `origin/main` and an unborn branch: the error
/// names the refs it has (it said to commit first), and `--ref origin/main`
/// is taken (it was not a branch, tag or commit).
#[test]
fn a_repository_on_an_unborn_branch_names_the_refs_it_has() {
    let env = TestEnv::new();
    let repo = env.repo("bundled");
    repo.write("skills/one/SKILL.md", skill("one", "One"));
    let commit = repo.commit("c1");
    repo.git(&["update-ref", "refs/remotes/origin/main", &commit]);
    repo.git(&["symbolic-ref", "HEAD", "refs/heads/master"]);
    repo.git(&["update-ref", "-d", "refs/heads/main"]);
    let err = env.json_err(&["source", "add", repo.path()], "AAM_GIT_REF_NOT_FOUND");
    assert!(err["message"].as_str().unwrap().contains("`master`"), "{err}");
    assert!(err["hint"].as_str().unwrap().contains("`origin/main`"), "{err}");
    let added = env.json(&["source", "add", repo.path(), "--ref", "origin/main"]);
    assert_eq!(added["commit"], commit.as_str(), "{added}");
    assert_eq!(added["artifact_count"], 1);
}

/// A command killed while gix held a ref's lock file leaves it in the cache,
/// and every later add or update there failed with "failed to update refs"
/// and a hint about `AAM_HOME` being writable (found by a kill -9 helper
/// round). A command holding the cache's lock removes such files first: no
/// live aam command can own them then.
#[test]
fn git_lock_files_a_killed_command_left_in_the_cache_are_cleared() {
    let env = TestEnv::new();
    let repo = env.repo("up");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v1"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    // The cache is the one folder under the home's git cache with a `refs/aam`.
    let mut cache = env.home().join("cache/git");
    while !cache.join("refs/aam").is_dir() {
        let next = std::fs::read_dir(&cache).unwrap().next().unwrap().unwrap().path();
        cache = next;
    }
    let namespace = std::fs::read_dir(cache.join("refs/aam"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("head").exists())
        .unwrap();
    let left = [namespace.join("head.lock"), cache.join("packed-refs.lock")];
    for file in &left {
        std::fs::write(file, "").unwrap();
    }
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v2"));
    repo.commit("c2");
    let updated = env.json(&["source", "update", "up"]);
    assert_eq!(updated["total_modified"], 1, "{updated}");
    for file in &left {
        assert!(!file.exists(), "{}", file.display());
    }
    // Another name on the same repository shares the cache: its add works too.
    std::fs::write(namespace.join("head.lock"), "").unwrap();
    env.json(&["source", "add", repo.path(), "--name", "again"]);
    // A `refs` that is a link is never walked: lock files where it leads stay
    // (a re-test helper's `yarn.lock` outside AAM_HOME was deleted).
    let outside = env.path("outside");
    std::fs::create_dir_all(outside.join("sub")).unwrap();
    std::fs::write(outside.join("yarn.lock"), "keep\n").unwrap();
    std::fs::write(outside.join("sub/Cargo.lock"), "keep\n").unwrap();
    std::fs::rename(cache.join("refs"), cache.join("refs.real")).unwrap();
    std::os::unix::fs::symlink(&outside, cache.join("refs")).unwrap();
    let _ = env.aam(&["source", "update", "up"]);
    assert_eq!(std::fs::read_to_string(outside.join("yarn.lock")).unwrap(), "keep\n");
    assert_eq!(
        std::fs::read_to_string(outside.join("sub/Cargo.lock")).unwrap(),
        "keep\n"
    );
}

/// A `source add` killed after its fetch wrote the new source's ref into a
/// cache another source shares, and before the catalog took the source,
/// leaves that ref (and every object it keeps): the next command writing into
/// that cache deletes it.
#[test]
fn a_ref_a_killed_add_left_in_a_shared_cache_goes_with_the_next_update() {
    let env = TestEnv::new();
    let repo = env.repo("shared");
    repo.write_skills((0..1500).map(|i| format!("s-{i:04}")), "A skill of many");
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "first"]);
    let cache = env
        .home()
        .join("cache/git/_local")
        .join(repo.path().trim_start_matches('/'));
    let namespaces = || -> Vec<String> {
        let listed = repo.git(&[
            "--git-dir",
            cache.to_str().unwrap(),
            "for-each-ref",
            "--format=%(refname)",
            "refs/aam/",
        ]);
        listed
            .lines()
            .map(|line| line.rsplit_once('/').unwrap().0.to_string())
            .collect()
    };
    assert_eq!(namespaces().len(), 1);
    let mut landed = false;
    for _ in 0..20 {
        let mut add = std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
            .args(["source", "add", repo.path(), "--name", "second"])
            .env("AAM_HOME", env.home())
            .env("HOME", env.user_home())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        while namespaces().len() < 2 && add.try_wait().unwrap().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        add.kill().unwrap();
        add.wait().unwrap();
        let registered = env.json(&["source", "list"]).to_string().contains("\"second\"");
        if registered {
            env.json(&["source", "remove", "second"]);
            continue;
        }
        landed = namespaces().len() == 2;
        if landed {
            break;
        }
    }
    assert!(landed, "no kill landed between the fetch and the catalog write");
    repo.write("skills/extra/SKILL.md", skill("extra", "One more"));
    repo.commit("c2");
    env.json(&["source", "update", "first"]);
    assert_eq!(namespaces().len(), 1, "the killed add's ref is gone");
    let added = env.json(&["source", "add", repo.path(), "--name", "second"]);
    assert_eq!(added["artifact_count"], 1501, "{added}");
    assert_eq!(namespaces().len(), 2);
}

/// A tree written by hand naming one entry twice (side by side, or apart in a
/// folder out of git's order) or an entry with an empty name is read with
/// those entries left out and a warning, on add and on update alike: it ended
/// in AAM_CATALOG_ERROR (a UNIQUE constraint), pointing at a sound catalog.
#[test]
fn hand_made_trees_with_repeated_or_empty_names_are_read_without_them() {
    let env = TestEnv::new();
    let repo = env.repo("hand-made");
    repo.write("seed.txt", "x").commit("c1");
    let blob = |text: &str| {
        repo.write("blob.tmp", text);
        repo.git(&["hash-object", "-w", "blob.tmp"])
    };
    // `git mktree` refuses these: the tree's bytes are written as they are.
    let tree = |entries: &[(&str, &str, &str)]| {
        let mut bytes = Vec::new();
        for (mode, name, id) in entries {
            bytes.extend_from_slice(format!("{mode} {name}\0").as_bytes());
            bytes.extend(
                (0..id.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&id[i..i + 2], 16).unwrap()),
            );
        }
        std::fs::write(repo.dir.join("tree.tmp"), bytes).unwrap();
        repo.git(&["hash-object", "-t", "tree", "-w", "--literally", "tree.tmp"])
    };
    let skill_md = blob(&skill("ok", "Kept once"));
    let other_md = blob(&skill("ok", "The repeated folder"));
    let reference = blob("x");
    let kept = tree(&[
        ("100644", "SKILL.md", &skill_md),
        ("100644", "ref.txt", &reference),
        ("100644", "ref.txt", &reference),
    ]);
    let repeated = tree(&[("100644", "SKILL.md", &other_md), ("100644", "extra.txt", &reference)]);
    let zz = tree(&[("100644", "SKILL.md", &blob(&skill("zz", "Between")))]);
    let skills = tree(&[("40000", "ok", &kept), ("40000", "zz", &zz), ("40000", "ok", &repeated)]);
    let empty = tree(&[("100644", "SKILL.md", &blob(&skill("empty", "Under an empty name")))]);
    let root = tree(&[
        ("40000", "", &empty),
        ("100644", "SKILL.md", &blob(&skill("root", "Root"))),
        ("40000", "skills", &skills),
    ]);
    let commit = |tree: &str| {
        let id = repo.git(&["commit-tree", tree, "-m", "hand-made"]);
        repo.git(&["update-ref", "refs/heads/main", &id]);
    };
    let indexed = |env: &TestEnv| -> Vec<String> {
        let root = env.json(&["info", "hand/root"]);
        assert_eq!(root["description"], "Root", "{root}");
        let listed = env.json(&["info", "hand/ok"]);
        let files = listed["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_string());
        let mut paths: Vec<String> = env.query("SELECT path FROM artifacts ORDER BY path", &[]);
        paths.extend(files);
        paths
    };
    commit(&root);
    let added = env.aam(&["source", "add", repo.path(), "--name", "hand"]);
    assert_eq!(added.code, 0, "{added:?}");
    for why in ["its name is empty", "an entry of that name comes before it"] {
        assert!(added.stderr.contains(why), "{why}: {added:?}");
    }
    let expected = ["", "skills/ok", "skills/zz", "skills/ok/SKILL.md", "skills/ok/ref.txt"];
    assert_eq!(indexed(&env), expected);
    env.json(&["catalog", "check", "--full"]);

    // The same commit reached by an update: the same artifacts.
    env.json(&["source", "remove", "hand"]);
    repo.git(&["update-ref", "refs/heads/main", &repo.git(&["rev-parse", "HEAD@{1}"])]);
    env.json(&["source", "add", repo.path(), "--name", "hand"]);
    commit(&root);
    let updated = env.aam(&["source", "update", "hand"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert_eq!(indexed(&env), expected);
    env.json(&["catalog", "check", "--full"]);
}
