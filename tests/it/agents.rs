//! The agent table: every agent id takes one skill, one agent, one prompt and
//! one rule exactly where the table says (project and home folder), nothing
//! else is written, agents sharing `.agents/skills` get one copy recorded once,
//! and `aam agents` lists them with what is detected here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::install::{lock, package, text, tree};
use crate::support::TestEnv;

/// Where a project install puts `kit-skill`, `kit-agent`, `kit-prompt` and
/// `kit-rules` for each agent id: `{n}` is the artifact's name, `FILE#` a
/// section of FILE, `~/` the home folder, `-` nothing. One row per agent: a
/// table row without a test row fails [`every_agent_has_a_test_row`].
#[rustfmt::skip]
const ROWS: &[(&str, &str, &str, &str, &str)] = &[
    ("cursor", ".cursor/skills/{n}", ".cursor/agents/{n}.md", ".cursor/commands/{n}.md", ".cursor/rules/{n}.mdc"),
    ("claude-code", ".claude/skills/{n}", ".claude/agents/{n}.md", ".claude/commands/{n}.md", "CLAUDE.md#"),
    ("github-copilot", ".github/skills/{n}", ".github/agents/{n}.agent.md", ".github/prompts/{n}.prompt.md", ".github/instructions/{n}.instructions.md"),
    ("codex", ".agents/skills/{n}", ".codex/agents/{n}.toml", "~/.codex/prompts/{n}.md", "AGENTS.md#"),
    ("adal", ".adal/skills/{n}", "-", "-", "-"),
    ("amp", ".agents/skills/{n}", "-", "-", "AGENTS.md#"),
    ("antigravity", ".agent/skills/{n}", "-", "-", "-"),
    ("augment", ".augment/skills/{n}", ".augment/agents/{n}.md", ".augment/commands/{n}.md", ".augment/rules/{n}.md"),
    ("cline", ".cline/skills/{n}", "-", ".clinerules/workflows/{n}.md", ".clinerules/{n}.md"),
    ("codebuddy", ".codebuddy/skills/{n}", "-", "-", "-"),
    ("command-code", ".commandcode/skills/{n}", "-", "-", "-"),
    ("continue", ".continue/skills/{n}", "-", "-", ".continue/rules/{n}.md"),
    ("crush", ".crush/skills/{n}", "-", "-", "-"),
    ("devin", ".devin/skills/{n}", "-", "-", "AGENTS.md#"),
    ("droid", ".factory/skills/{n}", ".factory/droids/{n}.md", ".factory/commands/{n}.md", "AGENTS.md#"),
    ("gemini-cli", ".agents/skills/{n}", ".gemini/agents/{n}.md", ".gemini/commands/{n}.toml", "GEMINI.md#"),
    ("goose", ".goose/skills/{n}", "-", "-", ".goosehints#"),
    ("grok-cli", ".grok/skills/{n}", ".grok/agents/{n}.md", ".grok/commands/{n}.md", ".grok/rules/{n}.md"),
    ("iflow-cli", ".iflow/skills/{n}", "-", "-", "-"),
    ("jetbrains-ai", ".agents/skills/{n}", "-", "-", ".aiassistant/rules/{n}.md"),
    ("junie", ".junie/skills/{n}", ".junie/agents/{n}.md", ".junie/commands/{n}.md", ".junie/guidelines.md#"),
    ("kilo", ".kilocode/skills/{n}", "-", ".kilocode/workflows/{n}.md", ".kilocode/rules/{n}.md"),
    ("kimi-cli", ".agents/skills/{n}", "-", "-", "AGENTS.md#"),
    ("kiro-cli", ".kiro/skills/{n}", ".kiro/agents/{n}.md", ".kiro/prompts/{n}.md", ".kiro/steering/{n}.md"),
    ("kode", ".kode/skills/{n}", "-", "-", "-"),
    ("mcpjam", ".mcpjam/skills/{n}", "-", "-", "-"),
    ("mistral-vibe", ".vibe/skills/{n}", "-", "-", "AGENTS.md#"),
    ("mux", ".mux/skills/{n}", "-", "-", "-"),
    ("neovate", ".neovate/skills/{n}", "-", "-", "-"),
    ("openclaw", "skills/{n}", "-", "-", "-"),
    ("opencode", ".agents/skills/{n}", ".opencode/agents/{n}.md", ".opencode/commands/{n}.md", "AGENTS.md#"),
    ("openhands", ".openhands/skills/{n}", "-", "-", ".openhands/microagents/{n}.md"),
    ("pi", ".pi/skills/{n}", "-", ".pi/prompts/{n}.md", "AGENTS.md#"),
    ("pochi", ".pochi/skills/{n}", "-", "-", "-"),
    ("qoder", ".qoder/skills/{n}", "-", "-", "-"),
    ("qwen-code", ".qwen/skills/{n}", ".qwen/agents/{n}.md", ".qwen/commands/{n}.md", "QWEN.md#"),
    ("replit", ".agents/skills/{n}", "-", "-", "replit.md#"),
    ("roo", ".roo/skills/{n}", "-", ".roo/commands/{n}.md", ".roo/rules/{n}.md"),
    ("trae", ".trae/skills/{n}", "-", "-", ".trae/rules/{n}.md"),
    ("trae-cn", ".trae/skills/{n}", "-", "-", ".trae/rules/{n}.md"),
    ("warp", ".warp/skills/{n}", "-", "-", "AGENTS.md#"),
    ("windsurf", ".windsurf/skills/{n}", "-", ".windsurf/workflows/{n}.md", ".windsurf/rules/{n}.md"),
    ("zed", ".agents/skills/{n}", "-", "-", ".rules#"),
    ("zencoder", ".zencoder/skills/{n}", "-", "-", "-"),
];

/// What a deployed artifact holds, to tell it landed (not just that a file exists).
const BODIES: [(&str, &str, &str); 4] = [
    ("skill", "kit-skill", "Body of kit-skill."),
    ("agent", "kit-agent", "You are the kit agent"),
    ("prompt", "kit-prompt", "Summarize the change"),
    ("instruction", "kit-rules", "Prefer small functions"),
];

/// One expected place: `(key as the lock records it, the file to read, whether a section)`.
fn expected(pattern: &str, name: &str, kind: &str) -> Option<(String, String, bool)> {
    if pattern == "-" {
        return None;
    }
    if let Some(file) = pattern.strip_suffix('#') {
        return Some((format!("{file}#{name} {kind}"), file.to_string(), true));
    }
    let key = pattern.replace("{n}", name);
    let file = if kind == "skill" {
        format!("{key}/SKILL.md")
    } else {
        key.clone()
    };
    Some((key, file, false))
}

/// The path `key` names under the project or (with `~/`) the home folder.
fn on_disk(key: &str, project: &Path, home: &Path) -> std::path::PathBuf {
    match key.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => project.join(key),
    }
}

/// Every `target` the lock records for `package`.
fn deployed(root: &Path, package: &str) -> Vec<String> {
    let lock = lock(root);
    let mut out: Vec<String> = lock["packages"][package]["deployed"]
        .as_sequence()
        .unwrap_or_else(|| panic!("no deployments of {package}: {lock:?}"))
        .iter()
        .map(|d| d["target"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn every_agent_has_a_test_row() {
    let env = TestEnv::new();
    let listed = env.json(&["agents"]);
    let ids: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    let rows: Vec<&str> = ROWS.iter().map(|r| r.0).collect();
    assert_eq!(ids, rows, "one test row per agent, in table order");
    assert!(ids.len() >= 40, "{} agents", ids.len());
}

#[test]
fn every_agent_id_takes_each_type_where_the_table_says() {
    let env = TestEnv::new();
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let listed = env.json(&["agents"]);
    let table: BTreeMap<&str, &Value> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["id"].as_str().unwrap(), a))
        .collect();
    for &(id, skill, agent, prompt, rule) in ROWS {
        // Project install, with the id spelled as the `skills` CLI spells it.
        let proj = env.repo(&format!("proj-{id}"));
        let home = env.path(&format!("home-{id}"));
        std::fs::create_dir_all(&home).unwrap();
        let home_var = home.to_str().unwrap().to_string();
        let vars = [("HOME", home_var.as_str())];
        let before = tree(&proj.dir);
        let mut args = vec!["--json", "install", kit.to_str().unwrap(), "--platform", id];
        let run = env.aam_with(&proj.dir, &vars, &args);
        assert_eq!(run.code, 0, "{id}: {run:?}");
        let mut keys = Vec::new();
        let mut files = BTreeSet::new();
        for ((kind, name, body), pattern) in BODIES.into_iter().zip([skill, agent, prompt, rule]) {
            let Some((key, file, section)) = expected(pattern, name, kind) else {
                continue;
            };
            let content = text(on_disk(&file, &proj.dir, &home));
            assert!(content.contains(body), "{id}: {file} holds {name}: {content}");
            if section {
                assert!(
                    content.contains(&format!("<!-- BEGIN AAM: {name} {kind} -->")),
                    "{id}: {content}"
                );
            }
            if kind == "skill" {
                let script = on_disk(&format!("{key}/scripts/run.sh"), &proj.dir, &home);
                assert!(script.is_file(), "{id}: the whole skill folder: {}", script.display());
                files.insert(format!("{key}/scripts/run.sh"));
            }
            files.insert(file);
            keys.push(key);
        }
        keys.sort();
        assert_eq!(
            deployed(&proj.dir, "kit"),
            keys,
            "{id}: the lock records each place once"
        );
        // Nothing but the deployed files (and aam's own folder) appeared.
        let written: BTreeSet<String> = tree(&proj.dir)
            .into_keys()
            .filter(|k| !before.contains_key(k) && !k.starts_with(".aam/"))
            .collect();
        let in_project: BTreeSet<String> = files.iter().filter(|f| !f.starts_with("~/")).cloned().collect();
        assert_eq!(written, in_project, "{id}: only where the table says");
        // The table's own patterns agree with the row.
        let places = table[id]["places"].as_array().unwrap();
        let takes: Vec<&str> = table[id]["takes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        let row_takes: Vec<&str> = BODIES
            .iter()
            .zip([skill, agent, prompt, rule])
            .filter(|(_, p)| *p != "-")
            .map(|((kind, _, _), _)| *kind)
            .collect();
        assert_eq!(takes, row_takes, "{id}");
        env.aam_with(&proj.dir, &vars, &["--json", "verify", "--all"]).ok_json();
        let run = env.aam_with(&proj.dir, &vars, &["--json", "uninstall", "kit"]);
        assert_eq!(run.code, 0, "{id}: {run:?}");
        let after: BTreeSet<String> = tree(&proj.dir)
            .into_keys()
            .filter(|k| !k.starts_with(".aam/"))
            .collect();
        let before_keys: BTreeSet<String> = before.into_keys().filter(|k| !k.starts_with(".aam/")).collect();
        assert_eq!(after, before_keys, "{id}: uninstall removes exactly what install wrote");

        // Global install: every home pattern the table gives.
        args = vec!["--json", "install", kit.to_str().unwrap(), "--platform", id, "-g"];
        let run = env.aam_with(&proj.dir, &vars, &args);
        let home_places: Vec<(&str, &str)> = places
            .iter()
            .filter_map(|p| Some((p["type"].as_str().unwrap(), p["home"].as_str()?)))
            .collect();
        assert_eq!(run.code, 0, "{id} -g: {run:?}");
        if home_places.is_empty() {
            let lock = lock(&home);
            assert!(
                lock["packages"]["kit"]["deployed"].is_null(),
                "{id}: nothing to deploy at home: {lock:?}"
            );
            env.aam_with(&proj.dir, &vars, &["--json", "uninstall", "kit", "-g"])
                .ok_json();
            continue;
        }
        let mut keys = Vec::new();
        for (kind, pattern) in home_places {
            let (_, name, body) = BODIES.iter().find(|b| b.0 == kind).unwrap();
            let (key, file) = match pattern.strip_suffix(" (section)") {
                Some(file) => (format!("{file}#{name} {kind}"), file.to_string()),
                None => {
                    let key = pattern.replace("<name>", name).trim_end_matches('/').to_string();
                    let file = if kind == "skill" {
                        format!("{key}/SKILL.md")
                    } else {
                        key.clone()
                    };
                    (key, file)
                }
            };
            assert!(key.starts_with("~/"), "{id}: {key}");
            let content = text(on_disk(&file, &proj.dir, &home));
            assert!(content.contains(body), "{id} -g: {file}: {content}");
            keys.push(key);
        }
        keys.sort();
        keys.dedup();
        assert_eq!(deployed(&home, "kit"), keys, "{id} -g");
        let run = env.aam_with(&proj.dir, &vars, &["--json", "uninstall", "kit", "-g"]);
        assert_eq!(run.code, 0, "{id}: {run:?}");
    }
}

#[test]
fn agents_sharing_agents_skills_get_one_copy_recorded_once() {
    let env = TestEnv::new();
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let proj = env.repo("proj");
    let shared = ["amp", "gemini-cli", "opencode", "kimi-cli", "replit", "zed"];
    let mut args = vec!["--json", "install", kit.to_str().unwrap()];
    for id in shared {
        args.extend(["--platform", id]);
    }
    let out = env.aam_in(&proj.dir, &args).ok_json();
    let platforms = &out["installed"][0]["platforms"];
    assert_eq!(platforms.as_array().unwrap().len(), shared.len(), "{out}");
    let targets = deployed(&proj.dir, "kit");
    let skill_targets: Vec<&String> = targets.iter().filter(|t| t.contains("kit-skill")).collect();
    assert_eq!(skill_targets, [".agents/skills/kit-skill"], "one copy, recorded once");
    let agents_md: Vec<&String> = targets.iter().filter(|t| t.starts_with("AGENTS.md#")).collect();
    assert_eq!(
        agents_md,
        ["AGENTS.md#kit-rules instruction"],
        "one section for amp, opencode, kimi-cli"
    );
    assert_eq!(text(proj.dir.join("AGENTS.md")).matches("BEGIN AAM").count(), 1);
    let checksums = lock(&proj.dir)["packages"]["kit"]["file_checksums"].clone();
    let copies = checksums
        .as_mapping()
        .unwrap()
        .keys()
        .filter(|k| k.as_str().unwrap().ends_with("kit-skill/SKILL.md") && !k.as_str().unwrap().starts_with(".aam/"))
        .count();
    assert_eq!(copies, 1, "{checksums:?}");

    // The home folder's shared `~/.agents/skills` likewise.
    env.aam_in(
        &proj.dir,
        &[
            "--json",
            "install",
            kit.to_str().unwrap(),
            "-g",
            "--platform",
            "gemini-cli",
            "--platform",
            "opencode",
        ],
    )
    .ok_json();
    let targets = deployed(&env.user_home(), "kit");
    let skill_targets: Vec<&String> = targets.iter().filter(|t| t.contains("kit-skill")).collect();
    assert_eq!(skill_targets, ["~/.agents/skills/kit-skill"]);
    assert!(env.user_home().join(".agents/skills/kit-skill/SKILL.md").is_file());

    // Upgrading keeps one copy; uninstalling removes it.
    let v2 = package(&env.path("kit2"), "kit", "2.0.0", &[]);
    env.aam_in(&proj.dir, &["--json", "install", v2.to_str().unwrap()])
        .ok_json();
    assert!(text(proj.dir.join(".agents/skills/kit-skill/SKILL.md")).contains("kit skill 2.0.0"));
    assert_eq!(
        deployed(&proj.dir, "kit")
            .iter()
            .filter(|t| t.contains("kit-skill"))
            .count(),
        1
    );
    env.aam_in(&proj.dir, &["--json", "verify", "--all"]).ok_json();
    // Leaving out agents that shared the folder keeps the one copy for the rest.
    let out = env
        .aam_in(
            &proj.dir,
            &["--json", "install", v2.to_str().unwrap(), "--platform", "gemini-cli"],
        )
        .ok_json();
    let undeployed = out["installed"][0]["undeployed"].to_string();
    assert!(
        undeployed.contains("AGENTS.md#kit-rules") && !undeployed.contains(".agents/skills"),
        "{out}"
    );
    assert!(proj.dir.join(".agents/skills/kit-skill/SKILL.md").is_file());
    assert!(
        !proj.dir.join("AGENTS.md").exists(),
        "the section file aam created is gone"
    );
    env.aam_in(&proj.dir, &["--json", "verify", "--all"]).ok_json();
    env.aam_in(&proj.dir, &["--json", "uninstall", "kit"]).ok_json();
    assert!(!proj.dir.join(".agents").exists(), "the folders it created are gone");
}

/// Of agents sharing a folder, the first by name records the one copy,
/// whatever order `--platform` names them in, so `--frozen` restores the
/// lock file an install wrote; a lock that records it under another of them
/// (an older aam followed the order asked for) restores as it is too.
#[test]
fn a_shared_copy_is_recorded_under_one_agent_and_restores_frozen() {
    let env = TestEnv::new();
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let proj = env.repo("proj");
    let install = [
        "--json",
        "install",
        kit.to_str().unwrap(),
        "--platform",
        "zed",
        "--platform",
        "amp",
    ];
    env.aam_in(&proj.dir, &install).ok_json();
    let owner = |dir: &Path| -> Vec<String> {
        lock(dir)["packages"]["kit"]["deployed"]
            .as_sequence()
            .unwrap()
            .iter()
            .filter(|d| d["target"].as_str() == Some(".agents/skills/kit-skill"))
            .map(|d| d["platform"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(owner(&proj.dir), ["amp"], "the first by name");
    std::fs::remove_dir_all(proj.dir.join(".agents")).unwrap();
    env.aam_in(&proj.dir, &["--json", "install", "--frozen"]).ok_json();
    assert!(proj.dir.join(".agents/skills/kit-skill/SKILL.md").is_file());

    // A lock recording it under the other one.
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    for deployment in locked["packages"]["kit"]["deployed"].as_sequence_mut().unwrap() {
        if deployment["target"].as_str() == Some(".agents/skills/kit-skill") {
            deployment["platform"] = "zed".into();
        }
    }
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    let recorded = text(&lock_path);
    std::fs::remove_dir_all(proj.dir.join(".agents")).unwrap();
    env.aam_in(&proj.dir, &["--json", "install", "--frozen"]).ok_json();
    assert!(proj.dir.join(".agents/skills/kit-skill/SKILL.md").is_file());
    assert_eq!(text(&lock_path), recorded);
}

#[test]
fn agents_lists_ids_aliases_and_what_is_detected() {
    let env = TestEnv::new();
    let proj = env.repo("proj");
    proj.write(".windsurf/rules/mine.md", "mine\n")
        .write("GEMINI.md", "# notes\n");
    std::fs::create_dir_all(env.user_home().join(".config/goose")).unwrap();
    let out = env.aam_in(&proj.dir, &["--json", "agents"]).ok_json();
    let agent = |id: &str| {
        out["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
            .clone()
    };
    assert_eq!(agent("windsurf")["detected"], ".windsurf");
    assert_eq!(agent("gemini-cli")["detected"], "GEMINI.md");
    assert_eq!(agent("gemini-cli")["shared_skills"], true);
    assert_eq!(agent("goose")["installed"], "~/.config/goose");
    assert_eq!(agent("cursor")["detected"], Value::Null);
    assert_eq!(agent("claude-code")["platform"], "claude");
    assert_eq!(
        agent("claude-code")["names"],
        serde_json::json!(["claude-code", "claude"])
    );
    assert_eq!(agent("adal")["takes"], serde_json::json!(["skill"]));
    let detected = env.aam_in(&proj.dir, &["--json", "agents", "--detected"]).ok_json();
    let ids: Vec<&str> = detected["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["gemini-cli", "goose", "windsurf"]);
    // The same tool through `aam tool call`, and the table for people.
    let called = env.aam_in(&proj.dir, &["tool", "call", "aam_agents", r#"{"detected": true}"#]);
    assert_eq!(called.code, 0, "{called:?}");
    assert_eq!(serde_json::from_str::<Value>(&called.stdout).unwrap(), detected);
    let human = env.aam_in(&proj.dir, &["agents"]);
    assert!(
        human.stdout.contains("claude-code, claude") && human.stdout.contains("project (.windsurf)"),
        "{human:?}"
    );

    // Detection drives installs that name no platform, and `init`.
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let init = env.aam_in(&proj.dir, &["--json", "init", "--yes"]).ok_json();
    assert_eq!(init["default_platforms"], serde_json::json!(["gemini-cli", "windsurf"]));
    env.aam_in(&proj.dir, &["--json", "install", kit.to_str().unwrap()])
        .ok_json();
    assert!(proj.dir.join(".windsurf/skills/kit-skill/SKILL.md").is_file());
    assert!(proj.dir.join(".agents/skills/kit-skill/SKILL.md").is_file());
    assert!(text(proj.dir.join(".gemini/commands/kit-prompt.toml")).starts_with("description = \"Prompt\"\n"));
}

#[test]
fn platform_names_old_and_new_are_accepted_and_unknown_ones_refused() {
    let env = TestEnv::new();
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let proj = env.repo("proj");
    let out = env
        .aam_in(
            &proj.dir,
            &[
                "--json",
                "install",
                kit.to_str().unwrap(),
                "--platform",
                "claude-code",
                "--platform",
                "copilot",
            ],
        )
        .ok_json();
    assert_eq!(
        out["installed"][0]["platforms"],
        serde_json::json!(["claude", "copilot"])
    );
    let lock_text = text(proj.dir.join(".aam/aam-lock.yaml"));
    assert!(
        lock_text.contains("- claude\n") && !lock_text.contains("claude-code"),
        "{lock_text}"
    );
    let run = env.aam_in(&proj.dir, &["install", kit.to_str().unwrap(), "--platform", "emacs"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("aam agents"), "{run:?}");
    let body = env.json_err(
        &["config", "set", "default_platforms", "kiro-cli,emacs"],
        "AAM_INVALID_ARGUMENT",
    );
    assert!(body["hint"].as_str().unwrap().contains("aam agents"), "{body}");
    let set = env.json(&["config", "set", "default_platforms", "kiro-cli,github-copilot"]);
    assert_eq!(set["value"], serde_json::json!(["copilot", "kiro-cli"]), "{set}");
}
