//! Upgrades that merge local edits (`aam upgrade --merge`): real registry
//! packages, real installs and upgrades, edits made on disk between them.

use std::path::Path;

use serde_json::Value;

use crate::install::{lock, project, run_in, strings, text, tree};
use crate::support::{TestEnv, skill};

const AGENT: &str = ".claude/agents/kit-agent.md";
const NOTES: &str = ".claude/skills/kit-skill/notes.md";
const SECTION: &str = "CLAUDE.md#kit-rules instruction";

/// Ten numbered lines, with `changes` (line number, new text) applied.
fn lines(changes: &[(usize, &str)]) -> String {
    (1..=10)
        .map(|n| match changes.iter().find(|(at, _)| *at == n) {
            Some((_, text)) => format!("{text}\n"),
            None => format!("Line {n} of the body.\n"),
        })
        .collect()
}

/// Publishes `kit` at `version` to the default registry: an agent and an
/// instruction whose bodies are `agent` and `rules`, and a skill holding
/// `files` (path in the skill folder, text) besides its SKILL.md.
fn publish(env: &TestEnv, version: &str, agent: &str, rules: &str, files: &[(&str, &str)]) {
    let dir = env.path(&format!("kit-{version}"));
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "aam.yaml",
        &format!(
            "name: kit\nversion: {version}\ndescription: The kit\nartifacts:\n  \
             skills:\n  - name: kit-skill\n    path: skills/kit-skill\n    description: Skill\n  \
             agents:\n  - name: kit-agent\n    path: agents/kit-agent.md\n    description: Agent\n  \
             instructions:\n  - name: kit-rules\n    path: instructions/kit-rules.md\n    description: Rules\n"
        ),
    );
    write("skills/kit-skill/SKILL.md", &skill("kit-skill", "kit skill"));
    for (rel, text) in files {
        write(&format!("skills/kit-skill/{rel}"), text);
    }
    write(
        "agents/kit-agent.md",
        &format!("---\ndescription: kit agent\n---\n{agent}"),
    );
    write(
        "instructions/kit-rules.md",
        &format!("---\ndescription: kit rules\n---\n{rules}"),
    );
    env.json(&["pkg", "publish", dir.to_str().unwrap()]);
}

/// A project with `kit` 1.0.0 (bodies `lines(&[])`, a skill note) installed for claude.
fn installed(env: &TestEnv) -> crate::support::Repo {
    env.json(&["registry", "init", "reg", "--default"]);
    publish(env, "1.0.0", &lines(&[]), &lines(&[]), &[("notes.md", &lines(&[]))]);
    let proj = project(env);
    proj.write("CLAUDE.md", "# My project\n");
    run_in(env, &proj.dir, &["install", "kit@^1", "--platform", "claude"]).ok_json();
    proj
}

fn edit(root: &Path, key: &str, from: &str, to: &str) {
    let path = root.join(key);
    let before = text(&path);
    assert!(before.contains(from), "{key} holds no `{from}`: {before}");
    std::fs::write(&path, before.replace(from, to)).unwrap();
}

fn upgrade(env: &TestEnv, root: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["upgrade", "kit"];
    all.extend_from_slice(args);
    let run = run_in(env, root, &all);
    (run.code, run.json()["packages"][0].clone())
}

#[test]
fn edits_in_other_hunks_merge_and_stay_edits_on_the_new_version() {
    let env = TestEnv::new();
    let proj = installed(&env);
    edit(&proj.dir, AGENT, "Line 2 of the body.", "Line 2, as I like it.");
    edit(&proj.dir, "CLAUDE.md", "Line 3 of the body.", "Line 3, my rule.");
    // 1.1.0 changes other lines, and adds a file to the skill.
    let upstream = lines(&[(9, "Line 9, improved upstream.")]);
    publish(
        &env,
        "1.1.0",
        &upstream,
        &upstream,
        &[("notes.md", &lines(&[])), ("extra.md", "New.\n")],
    );

    // Without a choice the package is skipped, and the hint names the merge.
    let (code, skipped) = upgrade(&env, &proj.dir, &[]);
    assert_eq!((code, skipped["status"].as_str()), (1, Some("skipped")));
    assert!(skipped["message"].as_str().unwrap().contains("merge"), "{skipped}");

    // A dry run says what would merge and writes nothing.
    let before = tree(&proj.dir);
    let (code, dry) = upgrade(&env, &proj.dir, &["--merge", "--dry-run"]);
    assert_eq!((code, dry["status"].as_str()), (0, Some("would_upgrade")), "{dry}");
    assert_eq!(strings(&dry["merged_files"]), [AGENT, SECTION]);
    assert_eq!(tree(&proj.dir), before);

    let (code, report) = upgrade(&env, &proj.dir, &["--merge"]);
    assert_eq!((code, report["status"].as_str()), (0, Some("upgraded")), "{report}");
    assert_eq!(strings(&report["merged_files"]), [AGENT, SECTION]);
    assert_eq!(report["conflicts"], serde_json::json!([]));
    let agent = text(proj.dir.join(AGENT));
    assert!(
        agent.contains("Line 2, as I like it.\n") && agent.contains("Line 9, improved upstream.\n"),
        "{agent}"
    );
    let claude = text(proj.dir.join("CLAUDE.md"));
    assert!(claude.starts_with("# My project\n"), "{claude}");
    assert!(
        claude.contains("Line 3, my rule.\n") && claude.contains("Line 9, improved upstream.\n"),
        "{claude}"
    );
    assert_eq!(text(proj.dir.join(".claude/skills/kit-skill/extra.md")), "New.\n");
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["version"], "1.1.0");

    // The lock holds the new version: the merged files are the user's edits on top of it.
    let verify = run_in(&env, &proj.dir, &["verify", "kit"]).json();
    assert_eq!(
        (verify["version"].as_str(), verify["is_clean"].as_bool()),
        (Some("1.1.0"), Some(false))
    );
    assert_eq!(strings(&verify["modified_files"]), [AGENT, SECTION]);
    let diff = run_in(&env, &proj.dir, &["diff", "kit"]).ok_json();
    let agent_diff = diff["modified_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == AGENT)
        .unwrap()["diff"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        agent_diff.contains("-Line 2 of the body.\n+Line 2, as I like it.\n") && !agent_diff.contains("Line 9"),
        "only the user's edit: {agent_diff}"
    );
}

#[test]
fn overlapping_edits_are_listed_and_nothing_is_written_unless_markers_are_asked_for() {
    let env = TestEnv::new();
    let proj = installed(&env);
    edit(&proj.dir, AGENT, "Line 5 of the body.", "Line 5, mine.");
    // The section merges cleanly, but one conflict keeps the whole package.
    edit(&proj.dir, "CLAUDE.md", "Line 1 of the body.", "Line 1, my rule.");
    let upstream = lines(&[(5, "Line 5, theirs."), (9, "Line 9, theirs.")]);
    publish(&env, "1.1.0", &upstream, &upstream, &[("notes.md", &lines(&[]))]);
    let before = tree(&proj.dir);

    let (code, report) = upgrade(&env, &proj.dir, &["--merge"]);
    assert_eq!((code, report["status"].as_str()), (1, Some("skipped")), "{report}");
    let conflicts = report["conflicts"].as_array().unwrap();
    assert_eq!(conflicts.len(), 1, "{report}");
    assert_eq!(
        (conflicts[0]["key"].as_str(), conflicts[0]["kind"].as_str()),
        (Some(AGENT), Some("overlapping"))
    );
    let hunk = &conflicts[0]["hunks"][0];
    assert_eq!(
        (hunk["yours"].as_str(), hunk["upstream"].as_str()),
        (Some("Line 5, mine.\n"), Some("Line 5, theirs.\n"))
    );
    assert_eq!(tree(&proj.dir), before, "nothing of the package is written");

    // People see each conflict with both sides.
    let human = env.aam_in(&proj.dir, &["upgrade", "kit", "--merge"]);
    assert_eq!(human.code, 1, "{human:?}");
    assert!(
        human.stdout.contains(&format!("conflict: {AGENT}"))
            && human.stdout.contains("Line 5, mine.")
            && human.stdout.contains("Line 5, theirs."),
        "{human:?}"
    );
    // The way on is the markers, not the `--merge` just run (found by a review helper).
    assert!(
        human.stdout.contains("`--merge=markers` to write both sides")
            && !human.stdout.contains("with `--merge` to merge"),
        "{}",
        human.stdout
    );

    // A dry run says what markers would do, and writes none (it said they were
    // written: found by a review helper).
    let dry = env.aam_in(&proj.dir, &["upgrade", "kit", "--merge=markers", "--dry-run"]);
    assert!(
        dry.stdout.contains("Conflict markers would be written") && !dry.stdout.contains("were written"),
        "{}",
        dry.stdout
    );
    assert_eq!(tree(&proj.dir), before, "a dry run writes nothing");

    // With markers the package is upgraded, and the command exits 1 as `git merge`
    // does: a script must not commit the markers (found by a user helper).
    let (code, report) = upgrade(&env, &proj.dir, &["--merge=markers"]);
    assert_eq!((code, report["status"].as_str()), (1, Some("upgraded")), "{report}");
    assert_eq!(strings(&report["conflict_markers"]), [AGENT]);
    assert_eq!(strings(&report["merged_files"]), [SECTION]);
    let agent = text(proj.dir.join(AGENT));
    assert!(
        agent.contains("<<<<<<< yours\nLine 5, mine.\n=======\nLine 5, theirs.\n>>>>>>> upstream\n")
            && agent.contains("Line 9, theirs.\n"),
        "{agent}"
    );
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["version"], "1.1.0");

    // Until resolved, the file is a conflict, not an edit: `verify` and
    // `doctor` say so and a CI restore fails (all three took it for an edit
    // and `install --frozen` passed: found by a user helper).
    let verified = env.aam_in(&proj.dir, &["--json", "verify", "kit"]).json();
    assert_eq!(strings(&verified["conflicted_files"]), [AGENT], "{verified}");
    let human = env.aam_in(&proj.dir, &["verify", "kit"]);
    assert!(human.stdout.contains(&format!("conflict  {AGENT}")), "{}", human.stdout);
    let doctor = env.aam_in(&proj.dir, &["--json", "doctor"]).json();
    let installs = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "installs")
        .unwrap();
    assert_eq!(installs["status"], "fail", "{installs}");
    assert!(
        installs["message"].as_str().unwrap().contains("conflict markers"),
        "{installs}"
    );
    let frozen = env
        .aam_in(&proj.dir, &["--json", "install", "--frozen"])
        .err("AAM_CONFLICT");
    assert!(frozen["message"].as_str().unwrap().contains(AGENT), "{frozen}");
    // Resolved, it is the user's edit.
    std::fs::write(
        proj.dir.join(AGENT),
        agent
            .replace("<<<<<<< yours\n", "")
            .replace("=======\nLine 5, theirs.\n>>>>>>> upstream\n", ""),
    )
    .unwrap();
    let verified = env.aam_in(&proj.dir, &["--json", "verify", "kit"]).json();
    assert!(strings(&verified["conflicted_files"]).is_empty(), "{verified}");
    assert!(
        strings(&verified["modified_files"]).contains(&AGENT.to_string()),
        "{verified}"
    );
    env.aam_in(&proj.dir, &["--json", "install", "--frozen"]).ok_json();
}

#[test]
fn a_file_edited_here_and_deleted_upstream_is_a_conflict_never_deleted() {
    let env = TestEnv::new();
    let proj = installed(&env);
    edit(&proj.dir, NOTES, "Line 4 of the body.", "Line 4, my note.");
    publish(&env, "1.1.0", &lines(&[(9, "Line 9, new.")]), &lines(&[]), &[]);
    let before = tree(&proj.dir);
    for mode in ["--merge", "--merge=markers"] {
        let (code, report) = upgrade(&env, &proj.dir, &[mode]);
        assert_eq!(
            (code, report["status"].as_str()),
            (1, Some("skipped")),
            "{mode}: {report}"
        );
        assert_eq!(report["conflicts"][0]["key"], NOTES);
        assert_eq!(report["conflicts"][0]["kind"], "deleted_upstream");
        assert!(
            !report["message"].as_str().unwrap().contains("merge_markers"),
            "{report}"
        );
        assert_eq!(tree(&proj.dir), before, "{mode}");
    }
    // Markers cannot be written for it, so they are not offered (they were, in a loop).
    let human = env.aam_in(&proj.dir, &["upgrade", "kit", "--merge"]);
    assert_eq!(human.code, 1, "{human:?}");
    assert!(
        human.stdout.contains("`--backup`") && !human.stdout.contains("upgrade with `--merge=markers`"),
        "{}",
        human.stdout
    );
    // Unedited, the same file goes with the upgrade.
    std::fs::write(proj.dir.join(NOTES), lines(&[])).unwrap();
    let (code, report) = upgrade(&env, &proj.dir, &["--merge"]);
    assert_eq!((code, report["status"].as_str()), (0, Some("upgraded")), "{report}");
    assert!(!proj.dir.join(NOTES).exists());
}

#[test]
fn a_crlf_edit_merges_and_keeps_its_line_ends() {
    let env = TestEnv::new();
    let proj = installed(&env);
    // The user's editor saved the agent with CRLF and one line changed.
    let path = proj.dir.join(AGENT);
    let crlf = text(&path)
        .replace("Line 2 of the body.", "Line 2, mine.")
        .replace('\n', "\r\n");
    std::fs::write(&path, &crlf).unwrap();
    publish(
        &env,
        "1.1.0",
        &lines(&[(8, "Line 8, theirs.")]),
        &lines(&[]),
        &[("notes.md", &lines(&[]))],
    );

    let (code, report) = upgrade(&env, &proj.dir, &["--merge"]);
    assert_eq!((code, report["status"].as_str()), (0, Some("upgraded")), "{report}");
    assert_eq!(strings(&report["merged_files"]), [AGENT]);
    let merged = text(&path);
    assert_eq!(
        merged,
        crlf.replace("Line 8 of the body.", "Line 8, theirs."),
        "the upstream change lands in the user's CRLF file"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merge_choice_over_mcp_reports_conflicts_in_its_schema() {
    let env = TestEnv::new();
    let proj = installed(&env);
    edit(&proj.dir, AGENT, "Line 5 of the body.", "Line 5, mine.");
    edit(&proj.dir, "CLAUDE.md", "Line 1 of the body.", "Line 1, my rule.");
    let upstream = lines(&[(5, "Line 5, theirs.")]);
    publish(
        &env,
        "1.1.0",
        &upstream,
        &lines(&[(9, "Line 9, theirs.")]),
        &[("notes.md", &lines(&[]))],
    );
    let before = tree(&proj.dir);

    let client = crate::mcp::connect_at(&env, &proj.dir, crate::mcp::options(true)).await;
    // `ok` checks the structured output against the advertised output schema.
    let merge = serde_json::json!({"package": "kit", "on_edited": "merge"});
    let report = crate::mcp::ok(&client, "aam_upgrade", merge).await["packages"][0].clone();
    assert_eq!(report["status"], "skipped", "{report}");
    assert_eq!(report["conflicts"][0]["key"], AGENT);
    assert_eq!(report["conflicts"][0]["hunks"][0]["upstream"], "Line 5, theirs.\n");
    assert_eq!(tree(&proj.dir), before);

    let markers = serde_json::json!({"package": "kit", "on_edited": "merge_markers"});
    let report = crate::mcp::ok(&client, "aam_upgrade", markers).await["packages"][0].clone();
    assert_eq!(report["status"], "upgraded", "{report}");
    assert_eq!(strings(&report["merged_files"]), [SECTION]);
    let claude = text(proj.dir.join("CLAUDE.md"));
    assert!(
        claude.contains("Line 1, my rule.\n") && claude.contains("Line 9, theirs.\n"),
        "{claude}"
    );
    client.cancel().await.unwrap();
}

/// A teammate's committed edit merges on another machine: the installed
/// original comes from the package's copy under `.aam/packages/` when this
/// machine never stored it (it was "not kept on this machine", so team edits
/// could only be merged where they were made; found by a review helper).
#[test]
fn a_teammates_committed_edit_merges_from_the_package_copy() {
    let env = TestEnv::new();
    let alice = installed(&env);
    edit(&alice.dir, NOTES, "Line 2 of the body.", "Line 2, the team's way.");
    alice.commit("kit, our way");
    let upstream = lines(&[(9, "Line 9, improved upstream.")]);
    publish(&env, "1.1.0", &lines(&[]), &lines(&[]), &[("notes.md", &upstream)]);

    let bob = env.path("bob");
    alice.git(&["clone", "-q", alice.dir.to_str().unwrap(), bob.to_str().unwrap()]);
    let fresh = env.path("bob-home");
    let as_bob = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        env.aam_with(&bob, &[("AAM_HOME", fresh.to_str().unwrap())], &all)
    };
    as_bob(&["registry", "add", "reg", env.path("reg").to_str().unwrap(), "--default"]).ok_json();
    let diff = as_bob(&["diff", "kit"]).ok_json();
    assert!(diff.to_string().contains("Line 2, the team's way."), "{diff}");
    let upgraded = as_bob(&["upgrade", "kit", "--merge"]);
    let report = &upgraded.json()["packages"][0];
    assert_eq!(report["status"], "upgraded", "{report}");
    let notes = text(bob.join(NOTES));
    assert!(
        notes.contains("Line 2, the team's way.\n") && notes.contains("Line 9, improved upstream.\n"),
        "{notes}"
    );
}

/// A new version that brings a file where you keep one of your own replaces
/// it only with `--backup`, and the report names it, as `install --backup`
/// does (upgrade named only the backup folder: found by a user helper).
#[test]
fn an_upgrade_names_the_files_of_yours_it_backed_up_and_replaced() {
    let env = TestEnv::new();
    let proj = installed(&env);
    let mine = ".claude/skills/kit-skill/extra.md";
    std::fs::write(proj.dir.join(mine), "My own notes.\n").unwrap();
    publish(
        &env,
        "1.1.0",
        &lines(&[]),
        &lines(&[]),
        &[("notes.md", &lines(&[])), ("extra.md", "Upstream extra.\n")],
    );
    let (code, report) = upgrade(&env, &proj.dir, &["--backup"]);
    assert_eq!((code, report["status"].as_str()), (0, Some("upgraded")), "{report}");
    assert_eq!(strings(&report["replaced_untracked"]), [mine], "{report}");
    let backup = Path::new(report["backup_dir"].as_str().unwrap());
    assert_eq!(text(backup.join(mine)), "My own notes.\n");
    assert_eq!(text(proj.dir.join(mine)), "Upstream extra.\n");
}
