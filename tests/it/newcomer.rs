//! What a newcomer trips on (#18): hints that lead somewhere, status that shows
//! news, settings that say where they come from, and small defects.

use std::path::Path;

use serde_json::json;

use crate::install::{package, project, run_in};
use crate::support::{TestEnv, skill};

/// A source `composio` with `n` skills `tool-0` ... and three named ones.
fn composio(env: &TestEnv, n: usize) {
    let repo = env.repo("composio");
    repo.write_skills((0..n).map(|i| format!("tool-{i}")), "A tool");
    for name in ["notion", "slack", "github"] {
        repo.write(&format!("skills/{name}/SKILL.md"), skill(name, "An app"));
    }
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "composio"]);
}

#[test]
fn page_footers_give_the_exact_next_command() {
    let env = TestEnv::new();
    composio(&env, 25);
    let first = env.aam(&["search", "tool", "--type", "skill"]);
    assert_eq!(first.code, 0, "{first:?}");
    let footer = "showing 20 of 25; next page: aam search tool --type skill --offset 20\n";
    assert!(first.stdout.ends_with(footer), "{first:?}");
    let next = env.aam(&["search", "tool", "--type", "skill", "--offset", "20"]);
    assert!(next.stdout.ends_with("showing 21-25 of 25\n"), "{next:?}");

    let listed = env.aam(&["list", "--available", "--limit", "10", "--source", "composio"]);
    let last = listed.stdout.lines().last().unwrap().to_string();
    assert!(
        last.starts_with("showing 10 of 28; next page: aam list --available --source composio --limit 10 --cursor "),
        "{listed:?}"
    );
    let cursor = last.rsplit(' ').next().unwrap();
    let page = env.json(&[
        "list",
        "--available",
        "--source",
        "composio",
        "--limit",
        "10",
        "--cursor",
        cursor,
    ]);
    assert_eq!(page["sources"][0]["artifacts"].as_array().unwrap().len(), 10);

    // A page size out of range says what range, not "a smaller page size".
    for args in [
        &["search", "tool", "--limit", "0"][..],
        &["list", "--available", "--limit", "0"],
    ] {
        let err = env.json_err(args, "AAM_INVALID_ARGUMENT");
        let hint = err["hint"].as_str().unwrap();
        assert!(hint.contains("from 1 to 1000") && !hint.contains("smaller"), "{err}");
    }
}

#[test]
fn unknown_names_get_close_names_and_unknown_sources_the_real_ones() {
    let env = TestEnv::new();
    composio(&env, 25);
    let proj = project(&env);
    let err = run_in(
        &env,
        &proj.dir,
        &["install", "composio/nothing", "--platform", "claude"],
    )
    .err("AAM_ARTIFACT_NOT_FOUND");
    let hint = err["hint"].as_str().unwrap();
    assert!(hint.contains("`notion`"), "{err}");
    assert!(!hint.contains("`slack`") && !hint.contains("`tool-0`"), "{err}");

    let err = env.json_err(&["info", "nope/xyz"], "AAM_SOURCE_NOT_FOUND");
    assert!(
        err["message"].as_str().unwrap().contains("no source is named `nope`"),
        "{err}"
    );
    assert_eq!(err["hint"], "registered sources: `composio`");
    let err = run_in(&env, &proj.dir, &["install", "nope/xyz", "--platform", "claude"]).err("AAM_ARTIFACT_NOT_FOUND");
    assert!(
        err["message"].as_str().unwrap().contains("no source is named `nope`"),
        "{err}"
    );
    assert_eq!(err["hint"], "registered sources: `composio`");
}

#[test]
fn an_exact_pin_with_a_newer_version_shows_as_pinned() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    for version in ["0.1.0", "0.2.0"] {
        let dir = env.path(&format!("kit-{version}"));
        package(&dir, "kit", version, &[]);
        env.json(&["pkg", "publish", dir.to_str().unwrap()]);
    }
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "kit@0.1.0", "--platform", "claude"]).ok_json();
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let kit = &outdated["packages"][0];
    assert_eq!(
        (kit["outdated"].as_bool(), kit["pinned"].as_bool()),
        (Some(false), Some(true)),
        "{kit}"
    );
    assert_eq!(kit["latest"], "0.2.0");
    assert!(kit["reason"].as_str().unwrap().contains("0.2.0 is available"), "{kit}");
    let text = env.aam_in(&proj.dir, &["outdated"]);
    assert!(
        text.stdout.contains("pinned") && !text.stdout.contains(" ok "),
        "{text:?}"
    );
}

#[test]
fn update_totals_count_removed_artifacts() {
    let env = TestEnv::new();
    let one = env.repo("one");
    one.write("skills/a/SKILL.md", skill("a", "A"))
        .write("skills/b/SKILL.md", skill("b", "B"));
    one.commit("c1");
    let two = env.repo("two");
    two.write("skills/c/SKILL.md", skill("c", "C"));
    two.commit("c1");
    env.json(&["source", "add", one.path()]);
    env.json(&["source", "add", two.path()]);
    one.remove("skills/b");
    one.commit("c2");
    two.write("skills/d/SKILL.md", skill("d", "D"));
    two.commit("c2");
    let dry = env.json(&["source", "update", "--dry-run"]);
    assert_eq!(
        (dry["total_new"].as_u64(), dry["total_removed"].as_u64()),
        (Some(1), Some(1)),
        "{dry}"
    );
    let text = env.aam(&["source", "update"]);
    assert!(
        text.stdout.ends_with("1 new, 0 modified, 1 removed in total\n"),
        "{text:?}"
    );
}

#[test]
fn settings_say_where_they_come_from() {
    let env = TestEnv::new();
    let proj = project(&env);
    let get = |dir: &std::path::Path| {
        run_in(&env, dir, &["config", "get", "default_platforms"]).ok_json()["settings"][0].clone()
    };
    let setting = get(&proj.dir);
    assert_eq!(
        (setting["origin"].as_str(), setting["origin_path"].as_str()),
        (Some("default"), None)
    );

    let set = run_in(&env, &proj.dir, &["config", "set", "default_platforms", "cursor"]).ok_json();
    assert!(set["shadowed_by"].is_null(), "{set}");
    let setting = get(&proj.dir);
    assert_eq!(setting["origin"], "home");
    assert_eq!(setting["value"], json!(["cursor"]));

    run_in(&env, &proj.dir, &["init", "--platform", "claude"]).ok_json();
    let setting = get(&proj.dir);
    assert_eq!(
        (setting["origin"].as_str(), setting["value"].clone()),
        (Some("project"), json!(["claude"]))
    );
    assert!(
        setting["origin_path"].as_str().unwrap().ends_with(".aam/config.yaml"),
        "{setting}"
    );
    let text = env.aam_in(&proj.dir, &["config", "get", "default_platforms"]);
    assert_eq!(text.stdout, "claude\n");
    assert!(text.stderr.contains("origin: project: "), "{text:?}");

    // Setting the home's value while the project's wins warns.
    let set = run_in(&env, &proj.dir, &["config", "set", "default_platforms", "codex"]).ok_json();
    assert!(
        set["shadowed_by"].as_str().unwrap().ends_with(".aam/config.yaml"),
        "{set}"
    );
    let text = env.aam_in(&proj.dir, &["config", "set", "default_platforms", "codex"]);
    assert!(
        text.stderr.contains("warning: ") && text.stderr.contains("wins here"),
        "{text:?}"
    );
    // Elsewhere the home's value is the one in effect.
    assert_eq!(get(&env.path("")).get("origin").unwrap(), "home");
}

#[test]
fn cursor_rules_take_the_manifest_description_when_the_file_has_none() {
    let env = TestEnv::new();
    let dir = env.path("kit");
    package(&dir, "kit", "1.0.0", &[]);
    std::fs::write(dir.join("instructions/kit-rules.md"), "Prefer small functions.\n").unwrap();
    let proj = project(&env);
    run_in(
        &env,
        &proj.dir,
        &["install", dir.to_str().unwrap(), "--platform", "cursor"],
    )
    .ok_json();
    let rule = std::fs::read_to_string(proj.dir.join(".cursor/rules/kit-rules.mdc")).unwrap();
    assert!(rule.contains("description: Rules\n"), "{rule}");
}

/// Originals an uninstall just left are no finding (a repair keeps them ten
/// minutes: it answered "not yet" to the repair the check asked for); once
/// some are older, the repair deletes those and says which it kept.
#[test]
fn repair_says_when_it_keeps_recent_originals() {
    let env = TestEnv::new();
    let dir = env.path("kit");
    package(&dir, "kit", "1.0.0", &[]);
    let proj = project(&env);
    run_in(
        &env,
        &proj.dir,
        &["install", dir.to_str().unwrap(), "--platform", "claude"],
    )
    .ok_json();
    run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    let repaired = env.json(&["catalog", "check", "--repair"]);
    let originals = |report: &serde_json::Value| {
        report["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["action"].as_str().unwrap().contains("originals"))
            .cloned()
    };
    assert_eq!(originals(&repaired), None, "{repaired}");

    // One original an hour old: deleted, the others kept and said so.
    let objects = env.home().join("objects");
    let old = std::fs::read_dir(&objects)
        .unwrap()
        .flat_map(|fan| std::fs::read_dir(fan.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().path())
        .next()
        .unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    let repaired = env.json(&["catalog", "check", "--repair"]);
    let action = originals(&repaired).unwrap_or_else(|| panic!("no originals action: {repaired}"));
    let text = action["action"].as_str().unwrap();
    assert!(
        text.starts_with("deleted 1 original no install uses; kept") && text.contains("ten minutes"),
        "{action}"
    );
    assert!(!old.exists());
}

#[test]
fn usage_errors_under_json_are_json() {
    let env = TestEnv::new();
    for args in [
        &["--json", "source", "add"][..],
        &["source", "scan", "--json", "--bogus", "x"],
    ] {
        let run = env.aam(args);
        assert_eq!(run.code, 2, "{run:?}");
        let body = run.json()["error"].clone();
        assert_eq!(body["code"], "AAM_INVALID_ARGUMENT", "{run:?}");
        assert!(
            !body["message"].as_str().unwrap().is_empty() && body["hint"].as_str().unwrap().contains("usage"),
            "{body}"
        );
        // stderr tells it as without `--json`: the code first, then clap's usage.
        assert!(run.stderr.starts_with("error[AAM_INVALID_ARGUMENT]: "), "{run:?}");
        assert!(run.stderr.contains("Usage: aam"), "{run:?}");
    }
    let plain = env.aam(&["source", "add"]);
    assert_eq!((plain.code, plain.stdout.as_str()), (2, ""), "{plain:?}");
    // `--json` after `--` is a value, not the flag.
    let value = env.aam(&["search", "--bogus", "--", "--json"]);
    assert_eq!(value.stdout, "", "{value:?}");
}

/// `--client` takes the ids `aam agents` lists, so the agent a user installs
/// for is the client they configure.
#[test]
fn mcp_config_takes_the_agent_ids() {
    let env = TestEnv::new();
    for (id, client, file) in [
        ("claude-code", "claude", ".mcp.json"),
        ("github-copilot", "vscode", ".vscode/mcp.json"),
        ("gemini-cli", "gemini", ".gemini/settings.json"),
    ] {
        let config = env.json(&["mcp", "config", "--client", id]);
        assert_eq!(config["client"], client, "{config}");
        assert!(config["file"].as_str().unwrap().starts_with(file), "{config}");
    }
    let unknown = env.aam(&["mcp", "config", "--client", "emacs"]);
    assert_eq!(unknown.code, 2, "{unknown:?}");
    assert!(unknown.stderr.contains("gemini"), "lists the clients: {unknown:?}");
}

#[test]
fn mcp_config_carries_a_non_default_home() {
    let env = TestEnv::new();
    let config = env.json(&["mcp", "config", "--client", "cursor"]);
    let snippet: serde_json::Value = serde_json::from_str(config["snippet"].as_str().unwrap()).unwrap();
    assert_eq!(
        snippet["mcpServers"]["aam"]["env"]["AAM_HOME"],
        env.home().to_str().unwrap()
    );
    let default_home = env.user_home().join(".aam");
    let run = env.aam_with(
        env.root.path(),
        &[("AAM_HOME", default_home.to_str().unwrap())],
        &["--json", "mcp", "config", "--client", "cursor"],
    );
    let snippet: serde_json::Value = serde_json::from_str(run.ok_json()["snippet"].as_str().unwrap()).unwrap();
    assert!(snippet["mcpServers"]["aam"].get("env").is_none(), "{snippet}");
}

#[test]
fn one_is_singular() {
    let env = TestEnv::new();
    let repo = env.repo("single");
    repo.write("skills/a/SKILL.md", skill("a", "A"));
    repo.commit("c1");
    let added = env.aam(&["source", "add", repo.path()]);
    assert!(added.stdout.contains("Indexed 1 artifact:"), "{added:?}");
    assert!(!added.stdout.contains("No artifacts found"), "{added:?}");
    let scan = env.aam(&["source", "scan", "single"]);
    assert!(scan.stdout.contains(": 1 artifact\n"), "{scan:?}");
}

#[test]
fn a_repository_with_no_artifacts_says_where_aam_looks() {
    let env = TestEnv::new();
    let repo = env.repo("plain");
    repo.write("README.md", "# Nothing for agents here\n");
    repo.commit("c1");
    let added = env.aam(&["source", "add", repo.path()]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(added.stdout.contains("No artifacts found"), "{added:?}");
    assert!(added.stdout.contains("--path"), "{added:?}");
}

#[test]
fn uncommitted_files_of_a_local_source_get_a_hint() {
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write("skills/a/SKILL.md", skill("a", "A"))
        .write(".gitignore", "scratch/\n");
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "team"]);
    // Ignored files are not news.
    repo.write("scratch/notes.md", "draft\n");
    let clean = env.json(&["source", "update", "team"]);
    assert_eq!(clean["sources"][0]["uncommitted_changes"], false, "{clean}");

    // A `.gitignore` above the repository, which git does not apply, is not
    // read either (here it would hide every new file).
    std::fs::write(Path::new(repo.path()).parent().unwrap().join(".gitignore"), "*\n").unwrap();
    repo.write("skills/b/SKILL.md", skill("b", "B"));
    let run = env.aam(&["source", "update", "team"]);
    assert!(run.stdout.contains("team: up to date"), "{run:?}");
    assert!(
        run.stdout
            .contains("hint: `team` has uncommitted files; only commits are indexed"),
        "{run:?}"
    );
    assert_eq!(
        env.json(&["source", "update", "team"])["sources"][0]["uncommitted_changes"],
        true
    );
    // `source diff` says the same where it finds nothing to show.
    assert_eq!(env.json(&["source", "diff", "team"])["uncommitted_changes"], true);
    let diff = env.aam(&["source", "diff", "team"]);
    assert!(
        diff.stdout.contains("No artifact changes") && diff.stdout.contains("hint: `team` has uncommitted files"),
        "{diff:?}"
    );
    repo.commit("c2");
    assert_eq!(
        env.json(&["source", "update", "team"])["sources"][0]["uncommitted_changes"],
        false
    );
    // An edited, committed file counts too.
    repo.write("skills/a/SKILL.md", skill("a", "A, edited"));
    assert_eq!(
        env.json(&["source", "update", "team"])["sources"][0]["uncommitted_changes"],
        true
    );
    // A source pinned to a tag or a commit never moves: committing would not
    // help, so there is no hint.
    repo.git(&["tag", "v1"]);
    let head = repo.git(&["rev-parse", "--short", "HEAD"]);
    env.json(&["source", "add", repo.path(), "--ref", "v1", "--name", "tagged"]);
    env.json(&["source", "add", repo.path(), "--ref", head.trim(), "--name", "pinned"]);
    for pinned in ["tagged", "pinned"] {
        let update = env.json(&["source", "update", pinned]);
        assert_eq!(update["sources"][0]["uncommitted_changes"], false, "{update}");
    }
}

#[test]
fn backups_have_no_spaces_and_conflicts_name_the_flag() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    let publish = |version: &str| {
        let dir = env.path(&format!("kit-{version}"));
        package(&dir, "kit", version, &[]);
        std::fs::write(dir.join("skills/kit-skill/my notes.md"), format!("notes {version}\n")).unwrap();
        env.json(&["pkg", "publish", dir.to_str().unwrap()]);
    };
    publish("1.0.0");
    let proj = project(&env);
    // A file aam did not write is a conflict whose hint names the flag as typed.
    std::fs::create_dir_all(proj.dir.join(".claude/agents")).unwrap();
    std::fs::write(proj.dir.join(".claude/agents/kit-agent.md"), "mine\n").unwrap();
    let err = run_in(&env, &proj.dir, &["install", "kit@1.0.0", "--platform", "claude"]).err("AAM_CONFLICT");
    let hint = err["hint"].as_str().unwrap();
    assert!(
        hint.contains("`--force`") && !hint.contains("`force` (`--force`)"),
        "{err}"
    );
    std::fs::remove_file(proj.dir.join(".claude/agents/kit-agent.md")).unwrap();

    run_in(&env, &proj.dir, &["install", "kit@^1.0.0", "--platform", "claude"]).ok_json();
    let notes = proj.dir.join(".claude/skills/kit-skill/my notes.md");
    std::fs::write(&notes, "my edit\n").unwrap();
    publish("1.1.0");
    let upgraded = run_in(&env, &proj.dir, &["upgrade", "kit", "--backup"]).ok_json();
    let dir = std::path::PathBuf::from(upgraded["packages"][0]["backup_dir"].as_str().unwrap());
    let mut names = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            names.push(path.strip_prefix(&dir).unwrap().display().to_string());
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    assert!(!names.is_empty() && names.iter().all(|n| !n.contains(' ')), "{names:?}");
    assert!(!dir.display().to_string().contains(' '), "{dir:?}");
}

#[test]
fn git_status_shows_what_to_commit_and_not_the_runtime_lock() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    let dir = env.path("kit");
    package(&dir, "kit", "1.0.0", &[]);
    env.json(&["pkg", "publish", dir.to_str().unwrap()]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "kit@1.0.0", "--platform", "claude"]).ok_json();
    let status = proj.git(&["status", "--porcelain", "--untracked-files=all"]);
    let listed: Vec<&str> = status.lines().map(|line| &line[3..]).collect();
    for commit in [".aam/.gitignore", ".aam/aam-lock.yaml", ".aam/packages/kit/aam.yaml"] {
        assert!(listed.contains(&commit), "{commit} in {status}");
    }
    assert!(!listed.contains(&".aam/lock"), "{status}");
}

/// `aam` or `aam source` alone shows the help on stdout, as `--help` does,
/// not as an error; the exit code (2) still says nothing ran. With `--json`
/// it is the usual JSON error.
#[test]
fn a_command_group_alone_shows_its_help() {
    let env = TestEnv::new();
    for (args, usage) in [
        (&[][..], "Usage: aam [OPTIONS] <COMMAND>"),
        (&["source"][..], "Usage: aam source"),
    ] {
        let run = env.aam(args);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stdout.contains(usage), "{run:?}");
        assert!(run.stdout.contains("Commands:"), "{run:?}");
        assert!(!run.stdout.contains("error"), "{run:?}");
    }
    let json = env.aam(&["--json", "source"]);
    assert_eq!(json.code, 2, "{json:?}");
    assert_eq!(json.json()["error"]["code"], "AAM_INVALID_ARGUMENT", "{json:?}");
}
