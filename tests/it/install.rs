//! Installing, deploying and checking packages: platform layouts, sections,
//! conflicts, atomicity, verify, diff, outdated, upgrade and dependencies.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{Repo, Run, TestEnv, skill};

/// A package folder with one artifact of each type named after the package:
/// skill `<n>-skill` (with a script), agent `<n>-agent`, prompt `<n>-prompt`
/// and instruction `<n>-rules` (with `globs`).
pub(crate) fn package(dir: &Path, name: &str, version: &str, dependencies: &[(&str, &str)]) -> PathBuf {
    let bare = name.rsplit('/').next().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let mut manifest = format!(
        "name: '{name}'\nversion: {version}\ndescription: The {bare} kit\nartifacts:\n  \
         skills:\n  - name: {bare}-skill\n    path: skills/{bare}-skill\n    description: Skill\n  \
         agents:\n  - name: {bare}-agent\n    path: agents/{bare}-agent.md\n    description: Agent\n  \
         prompts:\n  - name: {bare}-prompt\n    path: prompts/{bare}-prompt.md\n    description: Prompt\n  \
         instructions:\n  - name: {bare}-rules\n    path: instructions/{bare}-rules.md\n    description: Rules\n"
    );
    if !dependencies.is_empty() {
        manifest.push_str("dependencies:\n");
        for (dep, constraint) in dependencies {
            manifest.push_str(&format!("  '{dep}': '{constraint}'\n"));
        }
    }
    write("aam.yaml", &manifest);
    write(
        &format!("skills/{bare}-skill/SKILL.md"),
        &skill(&format!("{bare}-skill"), &format!("{bare} skill {version}")),
    );
    write(&format!("skills/{bare}-skill/scripts/run.sh"), "#!/bin/sh\necho run\n");
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join(format!("skills/{bare}-skill/scripts/run.sh"));
    std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    write(
        &format!("agents/{bare}-agent.md"),
        &format!("---\ndescription: {bare} agent\n---\nYou are the {bare} agent, version {version}.\n"),
    );
    write(
        &format!("prompts/{bare}-prompt.md"),
        &format!("Summarize the change ({version}).\n"),
    );
    write(
        &format!("instructions/{bare}-rules.md"),
        &format!("---\ndescription: {bare} rules\nglobs: \"**/*.rs\"\n---\nPrefer small functions ({version}).\n"),
    );
    dir.to_path_buf()
}

/// A project folder (a git repository, so it is the project root).
pub(crate) fn project(env: &TestEnv) -> Repo {
    env.repo("proj")
}

/// A project with the package folder `kit` (at `env.path("kit")`, see
/// [`package`]) installed for Claude Code.
pub(crate) fn project_with_kit(env: &TestEnv) -> Repo {
    let proj = project(env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    run_in(
        env,
        &proj.dir,
        &["install", kit.to_str().unwrap(), "--platform", "claude"],
    )
    .ok_json();
    proj
}

/// Runs `aam --json <args>` in `dir`.
pub(crate) fn run_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.aam_in(dir, &all)
}

/// Every file below `dir` (`.git`, the project lock file `.aam/lock` and the
/// `.aam/.gitignore` written beside it left out) with its bytes.
pub(crate) fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                let rel = path.strip_prefix(base).unwrap().display().to_string();
                if rel != ".aam/lock" && rel != ".aam/.gitignore" {
                    out.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub(crate) fn names(map: &BTreeMap<String, Vec<u8>>) -> Vec<&str> {
    map.keys().map(String::as_str).collect()
}

pub(crate) fn text(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
}

pub(crate) fn lock(root: &Path) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(&text(root.join(".aam/aam-lock.yaml"))).unwrap()
}

pub(crate) fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// The content between a section's markers.
fn section<'t>(text: &'t str, name: &str, kind: &str) -> &'t str {
    let begin = format!("<!-- BEGIN AAM: {name} {kind} -->");
    let end = format!("<!-- END AAM: {name} {kind} -->");
    let start = text.find(&begin).unwrap_or_else(|| panic!("no {begin} in {text:?}")) + begin.len();
    let stop = text.find(&end).unwrap();
    text[start..stop].trim_matches(['\r', '\n'])
}

#[test]
fn every_platform_layout_is_deployed_recorded_and_undeployed() {
    let env = TestEnv::new();
    let proj = project(&env);
    proj.write("README.md", "# My project\n");
    let before = tree(&proj.dir);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    let platforms = [
        "--platform",
        "cursor",
        "--platform",
        "copilot",
        "--platform",
        "claude",
        "--platform",
        "codex",
    ];

    let mut args = vec!["install", kit, "--dry-run"];
    args.extend(platforms);
    let dry = run_in(&env, &proj.dir, &args).ok_json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["installed"][0]["name"], "kit");
    assert_eq!(tree(&proj.dir), before, "a dry run writes nothing");

    args.pop();
    args.truncate(2);
    args.extend(platforms);
    let out = run_in(&env, &proj.dir, &args).ok_json();
    assert_eq!(out["installed"][0]["version"], "1.0.0");
    assert_eq!(out["installed"][0]["source"], "local");
    assert_eq!(
        out["installed"][0]["platforms"],
        json!(["claude", "codex", "copilot", "cursor"])
    );

    let files = tree(&proj.dir);
    assert_eq!(
        names(&files),
        [
            ".aam/aam-lock.yaml",
            ".aam/packages/kit/aam.yaml",
            ".aam/packages/kit/agents/kit-agent.md",
            ".aam/packages/kit/instructions/kit-rules.md",
            ".aam/packages/kit/prompts/kit-prompt.md",
            ".aam/packages/kit/skills/kit-skill/SKILL.md",
            ".aam/packages/kit/skills/kit-skill/scripts/run.sh",
            ".agents/skills/kit-skill/SKILL.md",
            ".agents/skills/kit-skill/scripts/run.sh",
            ".claude/agents/kit-agent.md",
            ".claude/commands/kit-prompt.md",
            ".claude/skills/kit-skill/SKILL.md",
            ".claude/skills/kit-skill/scripts/run.sh",
            ".codex/agents/kit-agent.toml",
            ".cursor/agents/kit-agent.md",
            ".cursor/commands/kit-prompt.md",
            ".cursor/rules/kit-rules.mdc",
            ".cursor/skills/kit-skill/SKILL.md",
            ".cursor/skills/kit-skill/scripts/run.sh",
            ".github/agents/kit-agent.agent.md",
            ".github/instructions/kit-rules.instructions.md",
            ".github/prompts/kit-prompt.prompt.md",
            ".github/skills/kit-skill/SKILL.md",
            ".github/skills/kit-skill/scripts/run.sh",
            "AGENTS.md",
            "CLAUDE.md",
            "README.md",
        ]
    );
    let codex_prompt = env.user_home().join(".codex/prompts/kit-prompt.md");
    assert_eq!(text(&codex_prompt), "Summarize the change (1.0.0).\n");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(proj.dir.join(".claude/skills/kit-skill/scripts/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "scripts stay executable");

    // Frontmatter: merged into one block, globs/applyTo carried over.
    let cursor_rule = text(proj.dir.join(".cursor/rules/kit-rules.mdc"));
    assert_eq!(
        cursor_rule,
        "---\ndescription: kit rules\nglobs: '**/*.rs'\nalwaysApply: false\n---\n\nPrefer small functions (1.0.0).\n"
    );
    let copilot_rule = text(proj.dir.join(".github/instructions/kit-rules.instructions.md"));
    assert!(copilot_rule.starts_with("---\n"), "{copilot_rule}");
    assert!(copilot_rule.contains("applyTo: '**/*.rs'"), "{copilot_rule}");
    assert!(!copilot_rule.contains("globs"), "{copilot_rule}");
    let claude_agent = text(proj.dir.join(".claude/agents/kit-agent.md"));
    assert!(
        claude_agent.contains("name: kit-agent\n") && claude_agent.contains("description: kit agent\n"),
        "{claude_agent}"
    );
    assert_eq!(claude_agent.matches("---\n").count(), 2, "{claude_agent}");
    let claude = text(proj.dir.join("CLAUDE.md"));
    assert_eq!(
        claude,
        "<!-- BEGIN AAM: kit-rules instruction -->\n\
         Apply the `kit-rules` rule below only when working on files matching `**/*.rs`.\n\n\
         Prefer small functions (1.0.0).\n<!-- END AAM: kit-rules instruction -->\n",
        "the rule's globs said in words, where no key is read"
    );
    // A Codex agent is a Codex custom agent, never a section of the
    // `AGENTS.md` Codex reads as its own instructions.
    let codex_agent: toml::Table = text(proj.dir.join(".codex/agents/kit-agent.toml")).parse().unwrap();
    assert_eq!(codex_agent["name"].as_str(), Some("kit-agent"));
    assert_eq!(codex_agent["description"].as_str(), Some("kit agent"));
    assert_eq!(
        codex_agent["developer_instructions"].as_str(),
        Some("You are the kit agent, version 1.0.0.\n")
    );
    let agents = text(proj.dir.join("AGENTS.md"));
    assert!(!agents.contains("kit-agent"), "{agents}");
    assert_eq!(
        section(&agents, "kit-rules", "instruction"),
        "Apply the `kit-rules` rule below only when working on files matching `**/*.rs`.\n\n\
         Prefer small functions (1.0.0)."
    );

    // The lock file covers every byte written, and the catalog mirrors it.
    let locked = lock(&proj.dir);
    assert_eq!(locked["lockfile_version"], 1);
    let entry = &locked["packages"]["kit"];
    assert_eq!(entry["version"], "1.0.0");
    assert_eq!(entry["source"], "local");
    let checksums = entry["file_checksums"].as_mapping().unwrap();
    let mut expected_keys: Vec<String> = files
        .keys()
        .filter(|k| !["AGENTS.md", "CLAUDE.md", "README.md", ".aam/aam-lock.yaml"].contains(&k.as_str()))
        .cloned()
        .collect();
    expected_keys.extend([
        "AGENTS.md#kit-rules instruction".to_string(),
        "CLAUDE.md#kit-rules instruction".to_string(),
        "~/.codex/prompts/kit-prompt.md".to_string(),
    ]);
    expected_keys.sort();
    let mut keys: Vec<String> = checksums.keys().map(|k| k.as_str().unwrap().to_string()).collect();
    keys.sort();
    assert_eq!(keys, expected_keys);
    for (key, bytes) in &files {
        if let Some(digest) = checksums.get(key.as_str()) {
            assert_eq!(digest.as_str().unwrap(), blake3::hash(bytes).to_hex().as_str(), "{key}");
        }
    }
    let root = proj.dir.display().to_string();
    let mirrored = env.query(
        "SELECT p.name || ' ' || p.version || ' ' || i.platform FROM installs i JOIN packages p ON p.id = i.package_id
         WHERE i.project_root = ?1 ORDER BY i.platform",
        &[&root],
    );
    assert_eq!(
        mirrored,
        [
            "kit 1.0.0 claude",
            "kit 1.0.0 codex",
            "kit 1.0.0 copilot",
            "kit 1.0.0 cursor"
        ]
    );
    let mirrored_files = env.query(
        "SELECT COUNT(*) || '' FROM install_files WHERE project_root = ?1 AND package = 'kit'",
        &[&root],
    );
    assert_eq!(mirrored_files, [checksums.len().to_string()]);

    // Installing again changes nothing, not even the lock file's timestamp.
    let lock_bytes = std::fs::read(proj.dir.join(".aam/aam-lock.yaml")).unwrap();
    let again = run_in(&env, &proj.dir, &args).ok_json();
    assert_eq!(again["installed"], json!([]));
    assert_eq!(again["skipped"][0]["reason"], "already_installed");
    assert_eq!(std::fs::read(proj.dir.join(".aam/aam-lock.yaml")).unwrap(), lock_bytes);
    let human = env.aam_in(&proj.dir, &args);
    assert_eq!(human.code, 0, "{human:?}");
    assert!(human.stdout.contains("already installed"), "{human:?}");

    let verified = run_in(&env, &proj.dir, &["verify", "kit"]).ok_json();
    assert_eq!(verified["is_clean"], true);
    assert_eq!(verified["has_checksums"], true);
    assert_eq!(verified["ok_files"].as_array().unwrap().len(), checksums.len());
    let listed = run_in(&env, &proj.dir, &["list"]).ok_json();
    assert_eq!(listed["packages"][0]["name"], "kit");

    // Uninstalling takes away exactly what was added.
    let removed = run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    assert_eq!(removed["kept_modified"], json!([]));
    let mut after = tree(&proj.dir);
    after.remove(".aam/aam-lock.yaml");
    assert_eq!(names(&after), names(&before));
    assert_eq!(after, before, "the project is as it was");
    assert!(!codex_prompt.exists());
    assert!(!proj.dir.join(".claude").exists(), "emptied folders removed");
    assert!(env.query("SELECT project_root FROM installs", &[]).is_empty());
    assert!(env.query("SELECT package FROM install_files", &[]).is_empty());
    run_in(&env, &proj.dir, &["verify", "kit"]).err("AAM_PACKAGE_NOT_INSTALLED");
}

/// A shared file that is not UTF-8 text (Latin-1, UTF-16) is refused: its
/// sections are written back as text, and a byte that is no UTF-8 would be
/// lost, for good, with the user's own text.
#[test]
fn a_shared_file_that_is_not_utf8_is_never_rewritten() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    for bytes in [&b"# Caf\xe9\n"[..], b"\xff\xfe#\x00\n\x00"] {
        std::fs::write(proj.dir.join("CLAUDE.md"), bytes).unwrap();
        let refused = run_in(
            &env,
            &proj.dir,
            &["install", kit.to_str().unwrap(), "--platform", "claude"],
        )
        .err("AAM_CONFLICT");
        assert!(refused["message"].as_str().unwrap().contains("not UTF-8"), "{refused}");
        assert!(refused["hint"].as_str().unwrap().contains("iconv"), "{refused}");
        assert_eq!(std::fs::read(proj.dir.join("CLAUDE.md")).unwrap(), bytes);
    }
}

/// Replacing files that hold bytes aam wrote (a lock brought back from an
/// older state) is no edit: nothing is saved to `backups/journal-*` and no
/// warning says a file changed meanwhile.
#[test]
fn replacing_what_aam_wrote_saves_nothing_aside() {
    let env = TestEnv::new();
    let proj = project(&env);
    std::fs::write(proj.dir.join("CLAUDE.md"), "# Café\n").unwrap();
    let one = package(&env.path("kit1"), "kit", "1.0.0", &[]);
    let two = package(&env.path("kit2"), "kit", "2.0.0", &[]);
    let install = |kit: &Path| {
        let run = run_in(
            &env,
            &proj.dir,
            &["install", kit.to_str().unwrap(), "--platform", "claude"],
        );
        assert!(!run.stderr.contains("changed while"), "{run:?}");
        run.ok_json();
    };
    install(&one);
    install(&two);
    let lock_two = std::fs::read(proj.dir.join(".aam/aam-lock.yaml")).unwrap();
    install(&one);
    // A pull brings the lock of 2.0.0 back over files aam wrote for 1.0.0.
    std::fs::write(proj.dir.join(".aam/aam-lock.yaml"), lock_two).unwrap();
    let restored = run_in(&env, &proj.dir, &["install"]);
    assert!(!restored.stderr.contains("changed while"), "{restored:?}");
    restored.ok_json();
    let backups = env.home().join("backups");
    let aside: Vec<String> = std::fs::read_dir(&backups)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(aside.iter().all(|name| !name.starts_with("journal-")), "{aside:?}");
}

/// Run in the home folder itself (no `.git` above it), a command without
/// `--global` finds the lock of the global installs where a project keeps its
/// own: it says so and how to go on (it called the lock forged).
#[test]
fn the_home_folder_as_a_project_names_the_global_lock() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let global = ["install", kit.to_str().unwrap(), "-g", "--platform", "claude"];
    run_in(&env, &proj.dir, &global).ok_json();
    let home = env.user_home();
    for args in [
        &["list"][..],
        &["install", kit.to_str().unwrap(), "--platform", "claude"],
    ] {
        let body = run_in(&env, &home, args).err("AAM_LOCK_INVALID");
        assert!(
            body["message"].as_str().unwrap().contains("your home folder")
                && body["hint"].as_str().unwrap().contains("--global"),
            "{body}"
        );
    }
    run_in(&env, &home, &["list", "--global"]).ok_json();
}

#[test]
fn global_installs_land_in_the_home_folder() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let out = run_in(
        &env,
        &proj.dir,
        &[
            "install",
            kit.to_str().unwrap(),
            "-g",
            "--platform",
            "claude",
            "--platform",
            "codex",
        ],
    )
    .ok_json();
    let home = env.user_home();
    assert_eq!(out["root"], home.display().to_string());
    let files = tree(&home);
    assert_eq!(
        names(&files),
        [
            ".aam/aam-lock.yaml",
            ".aam/packages/kit/aam.yaml",
            ".aam/packages/kit/agents/kit-agent.md",
            ".aam/packages/kit/instructions/kit-rules.md",
            ".aam/packages/kit/prompts/kit-prompt.md",
            ".aam/packages/kit/skills/kit-skill/SKILL.md",
            ".aam/packages/kit/skills/kit-skill/scripts/run.sh",
            ".agents/skills/kit-skill/SKILL.md",
            ".agents/skills/kit-skill/scripts/run.sh",
            ".claude/CLAUDE.md",
            ".claude/agents/kit-agent.md",
            ".claude/commands/kit-prompt.md",
            ".claude/skills/kit-skill/SKILL.md",
            ".claude/skills/kit-skill/scripts/run.sh",
            ".codex/AGENTS.md",
            ".codex/agents/kit-agent.toml",
            ".codex/prompts/kit-prompt.md",
        ]
    );
    assert_eq!(tree(&proj.dir).len(), 0, "the project is untouched");
    assert_eq!(
        run_in(&env, &proj.dir, &["list"]).ok_json()["packages"],
        json!([]),
        "not a project install"
    );
    assert_eq!(
        run_in(&env, &proj.dir, &["list", "-g"]).ok_json()["packages"][0]["name"],
        "kit"
    );
    assert_eq!(
        run_in(&env, &proj.dir, &["verify", "kit", "-g"]).ok_json()["is_clean"],
        true
    );
    run_in(&env, &proj.dir, &["uninstall", "kit", "-g"]).ok_json();
    assert_eq!(names(&tree(&home)), [".aam/aam-lock.yaml"]);
}

#[test]
fn sections_never_touch_the_users_text() {
    let env = TestEnv::new();
    let proj = project(&env);
    // CRLF, and no line break at the end.
    let original = "# Notes\r\n\r\nKeep answers short.";
    proj.write("CLAUDE.md", original);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let other = package(&env.path("other"), "other", "1.0.0", &[]);
    let install = |dir: &Path| {
        run_in(
            &env,
            &proj.dir,
            &["install", dir.to_str().unwrap(), "--platform", "claude", "--force"],
        )
        .ok_json()
    };
    install(&kit);
    install(&other);
    let claude = text(proj.dir.join("CLAUDE.md"));
    assert!(claude.starts_with(original), "{claude:?}");
    let scope =
        |name: &str| format!("Apply the `{name}-rules` rule below only when working on files matching `**/*.rs`.");
    let (kit_scope, other_scope) = (scope("kit"), scope("other"));
    assert_eq!(
        claude[original.len()..].to_string(),
        format!(
            "\r\n<!-- BEGIN AAM: kit-rules instruction -->\r\n{kit_scope}\r\n\r\nPrefer small functions (1.0.0).\r\n<!-- END AAM: kit-rules instruction -->\r\n\
         \r\n<!-- BEGIN AAM: other-rules instruction -->\r\n{other_scope}\r\n\r\nPrefer small functions (1.0.0).\r\n<!-- END AAM: other-rules instruction -->\r\n"
        ),
        "CRLF kept, each section appended on lines of its own after a blank line"
    );

    // The user writes between and after the sections; an upgrade replaces kit's in place.
    let edited = claude.replace(
        "<!-- BEGIN AAM: other-rules",
        "My own line between.\r\n<!-- BEGIN AAM: other-rules",
    ) + "And my closing words.\r\n";
    std::fs::write(proj.dir.join("CLAUDE.md"), &edited).unwrap();
    package(&kit, "kit", "1.1.0", &[]);
    install(&kit);
    let upgraded = text(proj.dir.join("CLAUDE.md"));
    assert_eq!(
        upgraded,
        edited.replace(
            "functions (1.0.0).\r\n<!-- END AAM: kit",
            "functions (1.1.0).\r\n<!-- END AAM: kit"
        )
    );
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);

    // Removing both sections gives back the user's text, their later lines included.
    run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    run_in(&env, &proj.dir, &["uninstall", "other"]).ok_json();
    assert_eq!(
        text(proj.dir.join("CLAUDE.md")),
        format!("{original}\r\nMy own line between.\r\nAnd my closing words.\r\n")
    );

    // A file that only ever held aam's section goes away with it; one the user
    // had is given back byte for byte.
    std::fs::write(proj.dir.join("CLAUDE.md"), original).unwrap();
    install(&kit);
    run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    assert_eq!(std::fs::read(proj.dir.join("CLAUDE.md")).unwrap(), original.as_bytes());
    std::fs::remove_file(proj.dir.join("CLAUDE.md")).unwrap();
    install(&kit);
    run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    assert!(!proj.dir.join("CLAUDE.md").exists());

    // A section whose markers someone doubled cannot be cut out safely: even
    // forced, the uninstall says so and changes nothing, instead of reporting
    // a removal while the section stays.
    install(&kit);
    let damaged = text(proj.dir.join("CLAUDE.md")) + "<!-- END AAM: kit-rules instruction -->\n";
    std::fs::write(proj.dir.join("CLAUDE.md"), &damaged).unwrap();
    let refused = run_in(&env, &proj.dir, &["uninstall", "kit", "--force"]).err("AAM_CONFLICT");
    assert!(refused["message"].as_str().unwrap().contains("damaged"), "{refused}");
    assert_eq!(text(proj.dir.join("CLAUDE.md")), damaged);
    assert!(lock(&proj.dir)["packages"]["kit"].is_mapping());
}

#[test]
fn conflicts_name_the_owner_and_never_overwrite_silently() {
    let env = TestEnv::new();
    let proj = project_with_kit(&env);
    let installed = tree(&proj.dir);

    // Another package deploying a skill of the same name.
    let clash = package(&env.path("clash"), "clash", "1.0.0", &[]);
    std::fs::rename(clash.join("skills/clash-skill"), clash.join("skills/kit-skill")).unwrap();
    let manifest = text(clash.join("aam.yaml")).replace("clash-skill", "kit-skill");
    std::fs::write(clash.join("aam.yaml"), manifest).unwrap();
    for args in [
        vec!["install", clash.to_str().unwrap(), "--platform", "claude"],
        vec!["install", clash.to_str().unwrap(), "--platform", "claude", "--force"],
    ] {
        let body = run_in(&env, &proj.dir, &args).err("AAM_CONFLICT");
        assert_eq!(
            body["message"],
            "`.claude/skills/kit-skill` is already deployed by package `kit`"
        );
        assert!(body["hint"].as_str().unwrap().contains("uninstall `kit`"), "{body}");
        assert_eq!(tree(&proj.dir), installed, "nothing written");
    }

    // A file the user made is not overwritten without --force.
    proj.write(".claude/commands/mine-prompt.md", "my own prompt\n");
    let mine = package(&env.path("mine"), "mine", "1.0.0", &[]);
    let body = run_in(
        &env,
        &proj.dir,
        &["install", mine.to_str().unwrap(), "--platform", "claude"],
    )
    .err("AAM_CONFLICT");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("`.claude/commands/mine-prompt.md` exists, and no installed package records it"),
        "{body}"
    );
    assert!(body["hint"].as_str().unwrap().contains("--force"));
    assert_eq!(
        text(proj.dir.join(".claude/commands/mine-prompt.md")),
        "my own prompt\n"
    );
    run_in(
        &env,
        &proj.dir,
        &["install", mine.to_str().unwrap(), "--platform", "claude", "--force"],
    )
    .ok_json();
    assert_eq!(
        text(proj.dir.join(".claude/commands/mine-prompt.md")),
        "Summarize the change (1.0.0).\n"
    );
}

#[test]
fn a_failed_write_leaves_the_previous_install_intact() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit_path = kit.to_str().unwrap();
    run_in(&env, &proj.dir, &["install", kit_path, "--platform", "claude"]).ok_json();
    // Copilot files cannot be written: a file stands where `.github/` must be.
    proj.write(".github", "not a folder\n");
    let before = tree(&proj.dir);
    let home_before = tree(&env.user_home());
    let catalog_before = env.state();

    package(&kit, "kit", "2.0.0", &[]);
    let failed = run_in(
        &env,
        &proj.dir,
        &["install", kit_path, "--platform", "claude", "--platform", "copilot"],
    );
    assert_eq!(failed.code, 1, "{failed:?}");
    assert_eq!(failed.json()["error"]["code"], "AAM_IO_ERROR");
    assert_eq!(
        tree(&proj.dir),
        before,
        "files, sections and lock as they were, no stray files"
    );
    assert_eq!(tree(&env.user_home()), home_before);
    assert_eq!(env.state(), catalog_before, "the catalog mirror is unchanged");
    assert_eq!(
        run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["version"],
        "1.0.0"
    );

    // A folder in the way of a file (overwriting forced): the same.
    std::fs::remove_file(proj.dir.join(".github")).unwrap();
    proj.write(".github/agents/kit-agent.agent.md/keep.txt", "mine\n");
    let before = tree(&proj.dir);
    let failed = run_in(
        &env,
        &proj.dir,
        &[
            "install",
            kit_path,
            "--platform",
            "claude",
            "--platform",
            "copilot",
            "--force",
        ],
    );
    assert_eq!(failed.code, 1, "{failed:?}");
    assert_eq!(tree(&proj.dir), before);
    assert_eq!(env.state(), catalog_before);
}

#[test]
fn verify_and_diff_report_edits_file_by_file() {
    let env = TestEnv::new();
    let proj = project(&env);
    proj.write("CLAUDE.md", "# Mine\n");
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    run_in(
        &env,
        &proj.dir,
        &[
            "install",
            kit.to_str().unwrap(),
            "--platform",
            "claude",
            "--platform",
            "cursor",
        ],
    )
    .ok_json();
    run_in(&env, &proj.dir, &["pkg", "validate", ".aam/packages/kit"]).ok_json();

    // Edit the package copy, a deployed file and a section; delete one; add one.
    let copy = proj.dir.join(".aam/packages/kit/agents/kit-agent.md");
    std::fs::write(&copy, text(&copy).replace("version 1.0.0", "version 1.0.0, edited")).unwrap();
    let rule = proj.dir.join(".cursor/rules/kit-rules.mdc");
    std::fs::write(&rule, text(&rule) + "Also: no globals.\n").unwrap();
    let claude = proj.dir.join("CLAUDE.md");
    let claude_text = text(&claude).replace("functions (1.0.0).", "functions (1.0.0), mostly.") + "My trailer\n";
    std::fs::write(&claude, claude_text).unwrap();
    std::fs::remove_file(proj.dir.join(".claude/commands/kit-prompt.md")).unwrap();
    proj.write(".claude/skills/kit-skill/notes.txt", "scratch\n");

    let verify = env.aam_in(&proj.dir, &["--json", "verify", "kit"]);
    assert_eq!(verify.code, 1, "not clean: {verify:?}");
    let report = verify.json();
    assert_eq!(report["package_name"], "kit");
    assert_eq!(report["version"], "1.0.0");
    assert_eq!(
        strings(&report["modified_files"]),
        [
            ".aam/packages/kit/agents/kit-agent.md",
            ".cursor/rules/kit-rules.mdc",
            "CLAUDE.md#kit-rules instruction",
        ]
    );
    assert_eq!(strings(&report["missing_files"]), [".claude/commands/kit-prompt.md"]);
    assert_eq!(
        strings(&report["untracked_files"]),
        [".claude/skills/kit-skill/notes.txt"]
    );
    assert!(strings(&report["ok_files"]).contains(&".claude/agents/kit-agent.md".to_string()));
    assert_eq!(report["has_checksums"], true);
    assert_eq!(report["is_clean"], false);

    let diff = run_in(&env, &proj.dir, &["diff", "kit"]).ok_json();
    let diffs: BTreeMap<String, String> = diff["modified_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["diff"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        diffs[".aam/packages/kit/agents/kit-agent.md"],
        "--- a/.aam/packages/kit/agents/kit-agent.md\n+++ b/.aam/packages/kit/agents/kit-agent.md\n\
         @@ -1,4 +1,4 @@\n ---\n description: kit agent\n ---\n\
         -You are the kit agent, version 1.0.0.\n+You are the kit agent, version 1.0.0, edited.\n"
    );
    assert!(
        diffs[".cursor/rules/kit-rules.mdc"].ends_with(" Prefer small functions (1.0.0).\n+Also: no globals.\n"),
        "{diffs:?}"
    );
    assert!(
        diffs["CLAUDE.md#kit-rules instruction"]
            .contains("-Prefer small functions (1.0.0).\n+Prefer small functions (1.0.0), mostly.\n"),
        "{diffs:?}"
    );
    assert!(
        !diffs["CLAUDE.md#kit-rules instruction"].contains("trailer"),
        "only the section: {diffs:?}"
    );
    assert_eq!(strings(&diff["missing_files"]), [".claude/commands/kit-prompt.md"]);
    assert_eq!(
        strings(&diff["untracked_files"]),
        [".claude/skills/kit-skill/notes.txt"]
    );
    let human = env.aam_in(&proj.dir, &["diff", "kit"]);
    assert!(human.stdout.contains("+Also: no globals."), "{human:?}");

    // Uninstall keeps what was edited, and says so.
    let removed = run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    assert_eq!(
        strings(&removed["kept_modified"]),
        [
            ".aam/packages/kit/agents/kit-agent.md",
            ".cursor/rules/kit-rules.mdc",
            "CLAUDE.md#kit-rules instruction",
        ]
    );
    assert_eq!(strings(&removed["missing_files"]), [".claude/commands/kit-prompt.md"]);
    assert!(rule.exists() && copy.exists());
    assert!(!proj.dir.join(".claude/agents/kit-agent.md").exists());
    assert!(text(&claude).contains("mostly."));
    run_in(&env, &proj.dir, &["verify", "kit"]).err("AAM_PACKAGE_NOT_INSTALLED");
}

/// `diff --all` shows the changes of every installed package that has one,
/// and counts the others; `diff` names a package or says `--all`.
#[test]
fn diff_all_shows_each_changed_package_and_counts_the_others() {
    let env = TestEnv::new();
    let proj = project(&env);
    for name in ["kit", "other"] {
        let dir = package(&env.path(name), name, "1.0.0", &[]);
        run_in(
            &env,
            &proj.dir,
            &["install", dir.to_str().unwrap(), "--platform", "cursor"],
        )
        .ok_json();
    }
    let clean = run_in(&env, &proj.dir, &["diff", "--all"]).ok_json();
    assert_eq!(clean, json!({"packages": [], "unchanged_count": 2}));
    let rule = proj.dir.join(".cursor/rules/kit-rules.mdc");
    std::fs::write(&rule, text(&rule) + "Also: no globals.\n").unwrap();

    let diff = run_in(&env, &proj.dir, &["diff", "--all"]).ok_json();
    assert_eq!(diff["unchanged_count"], 1, "{diff}");
    assert_eq!(diff["packages"].as_array().unwrap().len(), 1, "{diff}");
    assert_eq!(diff["packages"][0]["package_name"], "kit");
    assert_eq!(
        diff["packages"][0]["modified_files"][0]["path"],
        ".cursor/rules/kit-rules.mdc"
    );
    let human = env.aam_in(&proj.dir, &["diff", "--all"]);
    assert_eq!(human.code, 0, "{human:?}");
    assert!(
        human
            .stdout
            .starts_with("== kit 1.0.0\n--- a/.cursor/rules/kit-rules.mdc\n"),
        "{human:?}"
    );
    assert!(
        human
            .stdout
            .ends_with("+Also: no globals.\n1 package without changes\n"),
        "{human:?}"
    );
    // No package named means every one, as `git diff` shows every change.
    let neither = env.aam_in(&proj.dir, &["diff"]);
    assert_eq!(neither.stdout, human.stdout, "{neither:?}");
}

#[test]
fn a_lock_entry_without_checksums_is_reported_not_refused() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    // No platform to deploy to: refused before `.aam/` is made (it was left behind).
    run_in(&env, &proj.dir, &["install", kit.to_str().unwrap()]).err("AAM_INVALID_ARGUMENT");
    assert!(!proj.dir.join(".aam").exists());
    run_in(&env, &proj.dir, &["install", kit.to_str().unwrap(), "--no-deploy"]).ok_json();
    let path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    locked["packages"]["kit"]
        .as_mapping_mut()
        .unwrap()
        .remove("file_checksums");
    std::fs::write(&path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    let report = env.aam_in(&proj.dir, &["--json", "verify", "kit"]).json();
    assert_eq!(report["has_checksums"], false);
    assert_eq!(report["ok_files"], json!([]));

    std::fs::write(&path, "lockfile_version: [nonsense\n").unwrap();
    run_in(&env, &proj.dir, &["verify", "kit"]).err("AAM_LOCK_INVALID");
    let unknown = env.json_err(&["verify", "ghost"], "AAM_PACKAGE_NOT_INSTALLED");
    assert!(unknown["hint"].as_str().unwrap().contains("aam install"), "{unknown}");
}

/// A source repository with two skills, added to the catalog as `upstream`.
fn upstream(env: &TestEnv) -> Repo {
    let repo = env.repo("upstream");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v1"))
        .write("skills/pdf/scripts/fill.py", "print('v1')\n")
        .write("skills/docx/SKILL.md", skill("docx", "DOCX v1"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "upstream"]);
    repo
}

#[test]
fn a_version_asked_of_a_source_artifact_is_refused() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    for spec in ["pdf@^9", "upstream/pdf@2.0"] {
        let refused = run_in(&env, &proj.dir, &["install", spec, "--platform", "claude"]).err("AAM_INVALID_ARGUMENT");
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains("is an artifact of a source"),
            "{refused}"
        );
        assert!(
            refused["hint"].as_str().unwrap().contains("without a version"),
            "{refused}"
        );
    }
    assert!(!proj.dir.join(".claude").exists());
    run_in(&env, &proj.dir, &["install", "pdf", "--platform", "claude"]).ok_json();
    // Installed, the name answers with the package, which names the artifact's details.
    let info = run_in(&env, &proj.dir, &["info", "pdf"]).ok_json();
    assert_eq!(info["from_artifact"], "upstream/skills/pdf", "{info}");
    let human = env.aam_in(&proj.dir, &["info", "pdf"]);
    assert!(
        human
            .stdout
            .contains("Files, preview and audit: `aam info upstream/skills/pdf`"),
        "{}",
        human.stdout
    );
    // The artifact itself says what it is installed as (it said nothing).
    let artifact = run_in(&env, &proj.dir, &["info", "upstream/pdf"]).ok_json();
    assert_eq!(
        artifact["installed_here"],
        serde_json::json!([{"package": "pdf", "version": artifact["installed_here"][0]["version"], "scope": "project", "platforms": ["claude"]}]),
        "{artifact}"
    );
    let human = env.aam_in(&proj.dir, &["info", "upstream/pdf"]);
    assert!(human.stdout.contains("installed: as `pdf`"), "{}", human.stdout);
    let elsewhere = env.json(&["info", "upstream/pdf"]);
    assert_eq!(elsewhere["installed_here"], serde_json::json!([]), "{elsewhere}");
}

#[test]
fn outdated_tracks_the_artifacts_not_the_commits() {
    let env = TestEnv::new();
    let repo = upstream(&env);
    let proj = project(&env);
    let out = run_in(&env, &proj.dir, &["install", "upstream/pdf", "--platform", "claude"]).ok_json();
    assert_eq!(out["installed"][0]["source"], "source");
    assert_eq!(out["installed"][0]["source_name"], "upstream");
    let head = repo.git(&["rev-parse", "HEAD"]);
    let entry = lock(&proj.dir)["packages"]["pdf"].clone();
    assert_eq!(entry["source_commit"].as_str(), Some(head.as_str()));
    assert_eq!(entry["requested"], "upstream/skills/pdf");
    assert_eq!(
        text(proj.dir.join(".claude/skills/pdf/scripts/fill.py")),
        "print('v1')\n",
        "read from the indexed commit"
    );
    let outdated = |env: &TestEnv| run_in(env, &proj.dir, &["outdated"]).ok_json()["packages"][0].clone();
    assert_eq!(outdated(&env)["outdated"], false);
    // The answer is as of the source's last fetch, and says when that was.
    let compared = run_in(&env, &proj.dir, &["outdated"]).ok_json()["sources"].clone();
    assert_eq!(compared[0]["name"], "upstream", "{compared}");
    assert!(compared[0]["fetched_at"].is_string(), "{compared}");
    let human = env.aam_in(&proj.dir, &["outdated"]);
    assert!(
        human.stdout.contains("Sources as last fetched: upstream at ")
            && human.stdout.contains("`aam source update` fetches newer commits"),
        "{}",
        human.stdout
    );

    // A commit touching another skill: still up to date.
    repo.write("skills/docx/SKILL.md", skill("docx", "DOCX v2"));
    repo.commit("c2");
    env.json(&["source", "update", "upstream"]);
    let fresh = outdated(&env);
    assert_eq!(fresh["outdated"], false, "{fresh}");
    assert_eq!(fresh["reason"], "up to date");
    assert_eq!(
        (&fresh["wanted"], &fresh["latest"]),
        (&fresh["current"], &fresh["current"]),
        "{fresh}"
    );

    // Uncommitted work in the clone is never read; a commit touching pdf is.
    repo.write("skills/pdf/scripts/fill.py", "print('v2')\n");
    let c3 = repo.commit("c3");
    repo.write("skills/pdf/scripts/fill.py", "print('dirty')\n");
    assert_eq!(outdated(&env)["outdated"], false, "not updated yet");
    env.json(&["source", "update", "upstream"]);
    let stale = outdated(&env);
    assert_eq!(stale["outdated"], true, "{stale}");
    // What upgrade moves to is named, as for a registry package (it was null:
    // found by a user helper).
    let moves_to = format!("0.0.0+{}", &c3[..12]);
    assert_eq!(
        (stale["wanted"].as_str(), stale["latest"].as_str()),
        (Some(moves_to.as_str()), Some(moves_to.as_str())),
        "{stale}"
    );
    assert!(
        stale["reason"]
            .as_str()
            .unwrap()
            .starts_with("`skills/pdf` changed at "),
        "{stale}"
    );

    let upgraded = run_in(&env, &proj.dir, &["upgrade"]).ok_json();
    assert_eq!(upgraded["packages"][0]["status"], "upgraded", "{upgraded}");
    assert_eq!(upgraded["packages"][0]["to"], moves_to.as_str(), "{upgraded}");
    assert_eq!(
        text(proj.dir.join(".claude/skills/pdf/scripts/fill.py")),
        "print('v2')\n"
    );
    assert_eq!(
        lock(&proj.dir)["packages"]["pdf"]["source_commit"].as_str(),
        Some(c3.as_str())
    );
    assert_eq!(outdated(&env)["outdated"], false);
    assert_eq!(run_in(&env, &proj.dir, &["verify", "pdf"]).ok_json()["is_clean"], true);
    let again = run_in(&env, &proj.dir, &["upgrade"]).ok_json();
    assert_eq!(again["packages"][0]["status"], "up_to_date");

    // The original for `aam diff` comes back after the package copy is edited.
    let deployed = proj.dir.join(".claude/skills/pdf/SKILL.md");
    std::fs::write(&deployed, text(&deployed).replace("Body of pdf.", "Body of my pdf.")).unwrap();
    let diff = run_in(&env, &proj.dir, &["diff", "pdf"]).ok_json();
    assert!(
        diff["modified_files"][0]["diff"]
            .as_str()
            .unwrap()
            .contains("-Body of pdf.\n+Body of my pdf.\n"),
        "{diff}"
    );
}

/// A registry `reg` (the default) with `kit` published at each of `versions`.
fn registry_with(env: &TestEnv, versions: &[&str]) -> PathBuf {
    env.json(&["registry", "init", "reg", "--default"]);
    for version in versions {
        publish(env, "kit", version, &[]);
    }
    env.path("reg")
}

fn publish(env: &TestEnv, name: &str, version: &str, dependencies: &[(&str, &str)]) {
    let dir = env.path(&format!("src-{}-{version}", name.replace(['@', '/'], "_")));
    package(&dir, name, version, dependencies);
    env.json(&["pkg", "publish", dir.to_str().unwrap()]);
}

/// A mistyped package name is answered with the package, named as `install`
/// takes it, before an artifact whose name it holds (`review-kti` suggested
/// the artifact `review` and not the package `review-kit`).
#[test]
fn a_mistyped_package_name_suggests_the_package_first() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    publish(&env, "review-kit", "1.0.0", &[]);
    let repo = env.repo("team");
    repo.write("skills/review/SKILL.md", skill("review", "Review code"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "team"]);
    let proj = project(&env);
    let typo = run_in(&env, &proj.dir, &["install", "review-kti"]).err("AAM_PACKAGE_NOT_FOUND");
    assert!(
        typo["hint"].as_str().unwrap().starts_with("did you mean `review-kit`"),
        "{typo}"
    );
}

#[test]
fn upgrade_skips_backs_up_or_forces_over_local_edits() {
    let env = TestEnv::new();
    registry_with(&env, &["1.0.0"]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "kit@^1.0", "--platform", "claude"]).ok_json();
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["requested"], "^1.0");
    publish(&env, "kit", "1.1.0", &[]);
    publish(&env, "kit", "2.0.0", &[]);
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let kit = &outdated["packages"][0];
    assert_eq!(
        (kit["current"].as_str(), kit["wanted"].as_str(), kit["latest"].as_str()),
        (Some("1.0.0"), Some("1.1.0"), Some("2.0.0"))
    );
    assert_eq!(kit["outdated"], true);

    let agent = proj.dir.join(".claude/agents/kit-agent.md");
    let edited = text(&agent) + "My addition.\n";
    std::fs::write(&agent, &edited).unwrap();
    let before = tree(&proj.dir);

    // Dry run and skip (the default off a terminal) leave everything alone,
    // and the dry run says what the upgrade does: skip the edited package.
    let dry = run_in(&env, &proj.dir, &["upgrade", "--dry-run"]);
    assert_eq!(dry.code, 1, "{dry:?}");
    let dry = dry.json();
    assert_eq!(dry["packages"][0]["status"], "skipped");
    assert_eq!(dry["packages"][0]["to"], "1.1.0");
    assert_eq!(
        strings(&dry["packages"][0]["modified_files"]),
        [".claude/agents/kit-agent.md"]
    );
    let forced = run_in(&env, &proj.dir, &["upgrade", "--dry-run", "--force"]).ok_json();
    assert_eq!(forced["packages"][0]["status"], "would_upgrade");
    assert_eq!(
        strings(&forced["packages"][0]["modified_files"]),
        [".claude/agents/kit-agent.md"]
    );
    assert_eq!(tree(&proj.dir), before);
    let skipped = run_in(&env, &proj.dir, &["upgrade"]);
    assert_eq!(skipped.code, 1, "kept edits are a non-zero exit: {skipped:?}");
    let skipped = skipped.json();
    assert_eq!(skipped["packages"][0]["status"], "skipped");
    assert!(
        skipped["packages"][0]["message"]
            .as_str()
            .unwrap()
            .contains("backup or force")
    );
    assert_eq!(tree(&proj.dir), before);
    let human = env.aam_in(&proj.dir, &["upgrade"]);
    assert!(
        human.stdout.contains("`--backup`") && human.stdout.contains("`--force`"),
        "{human:?}"
    );

    // Backup: the edited file is copied out, then the upgrade lands.
    let backed = run_in(&env, &proj.dir, &["upgrade", "kit", "--backup"]).ok_json();
    let report = &backed["packages"][0];
    assert_eq!(
        (report["status"].as_str(), report["to"].as_str()),
        (Some("upgraded"), Some("1.1.0"))
    );
    let backup_dir = PathBuf::from(report["backup_dir"].as_str().unwrap());
    assert!(backup_dir.starts_with(env.home().join("backups")), "{backup_dir:?}");
    assert!(backup_dir.file_name().unwrap().to_str().unwrap().starts_with("kit--"));
    assert_eq!(text(backup_dir.join(".claude/agents/kit-agent.md")), edited);
    assert!(text(&agent).contains("version 1.1.0") && !text(&agent).contains("My addition"));
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["version"], "1.1.0");
    assert_eq!(
        lock(&proj.dir)["packages"]["kit"]["requested"],
        "^1.0",
        "constraint kept"
    );

    // Force: overwritten without a copy, and the report says so.
    publish(&env, "kit", "1.2.0", &[]);
    std::fs::write(&agent, text(&agent) + "Again mine.\n").unwrap();
    let shown = env.aam_in(&proj.dir, &["upgrade", "--force", "--dry-run"]);
    assert!(
        shown
            .stdout
            .contains("edited file it would replace: .claude/agents/kit-agent.md"),
        "{shown:?}"
    );
    let forced = run_in(&env, &proj.dir, &["upgrade", "--force"]).ok_json();
    assert_eq!(forced["packages"][0]["status"], "upgraded");
    assert_eq!(forced["packages"][0]["backup_dir"], Value::Null);
    assert!(!text(&agent).contains("Again mine"));
    assert_eq!(
        run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["version"],
        "1.2.0"
    );
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    assert_eq!(outdated["packages"][0]["outdated"], false, "2.0.0 is outside ^1.0");

    // A package that cannot be upgraded fails the command.
    publish_only_index(&env);
    let failed = env.aam_in(&proj.dir, &["--json", "upgrade"]);
    assert_eq!(failed.code, 1, "{failed:?}");
    assert_eq!(failed.json()["packages"][0]["status"], "failed");
}

/// Publishes a version of `kit` and removes its archive, so the registry lists
/// a version it cannot deliver.
fn publish_only_index(env: &TestEnv) {
    publish(env, "kit", "1.3.0", &[]);
    std::fs::remove_dir_all(env.path("reg/packages/kit/1.3.0")).unwrap();
}

/// A package installed from a folder is not tracked: outdated says so
/// (`unknown`, with the install that takes what the folder holds now) instead
/// of `ok`, and upgrade leaves it, saying why.
#[test]
fn a_folder_install_is_not_reported_up_to_date() {
    let env = TestEnv::new();
    let proj = project_with_kit(&env);
    package(&env.path("kit"), "kit", "1.0.1", &[]);
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let kit = &outdated["packages"][0];
    assert_eq!(
        (&kit["unknown"], &kit["outdated"]),
        (&json!(true), &json!(false)),
        "{outdated}"
    );
    let kit_path = env.path("kit").canonicalize().unwrap();
    assert!(
        kit["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("`aam install {}`", kit_path.display())),
        "{outdated}"
    );
    let upgrade = env.aam_in(&proj.dir, &["upgrade"]);
    assert!(
        upgrade
            .stdout
            .contains("`kit`: left at 1.0.0: installed from a package folder"),
        "{upgrade:?}"
    );
}

/// A package whose registry is no longer configured is `unknown`, even when
/// another registry has one of its name: `upgrade` would refuse to take it
/// from there (outdated said `outdated`, and upgrade then failed).
#[test]
fn another_registry_with_the_name_is_not_the_origin() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg1", "--default"]);
    env.json(&["registry", "init", "reg2"]);
    publish(&env, "kit", "1.0.0", &[]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "kit", "--platform", "claude"]).ok_json();
    let newer = env.path("src-kit-1.1.0");
    package(&newer, "kit", "1.1.0", &[]);
    env.json(&["pkg", "publish", newer.to_str().unwrap(), "--registry", "reg2"]);
    env.json(&["registry", "remove", "reg1"]);

    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let kit = &outdated["packages"][0];
    assert_eq!(
        (kit["unknown"].clone(), kit["outdated"].clone()),
        (json!(true), json!(false)),
        "{outdated}"
    );
    assert!(
        kit["reason"]
            .as_str()
            .unwrap()
            .contains("registry `reg1`, which it was installed from"),
        "{outdated}"
    );
    let upgraded = run_in(&env, &proj.dir, &["upgrade"]);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["version"], "1.0.0");
    // A CI check that could not look at it says so (it passed in silence).
    let check = env.aam_in(&proj.dir, &["outdated", "--exit-code"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert!(
        check
            .stderr
            .contains("warning: not checked, their origin is not known here: kit"),
        "{check:?}"
    );
}

/// A dependency comes from the registry of the package that depends on it
/// when that registry has one of its name, not from whichever registry comes
/// first: a public registry's `base` took the place of the team's own (a
/// dependency-confusion attack). One the dependent's registry lacks comes
/// from the others, the default first.
#[test]
fn a_dependency_comes_from_its_dependents_registry() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "public", "--default"]);
    env.json(&["registry", "init", "team"]);
    let publish_to = |registry: &str, name: &str, version: &str, deps: &[(&str, &str)]| {
        let dir = env.path(&format!("src-{registry}-{name}-{version}"));
        package(&dir, name, version, deps);
        env.json(&["pkg", "publish", dir.to_str().unwrap(), "--registry", registry]);
    };
    publish_to("public", "base", "9.0.0", &[]);
    publish_to("team", "base", "1.0.0", &[]);
    publish_to("public", "util", "1.0.0", &[]);
    publish_to("team", "app", "1.0.0", &[("base", "*"), ("util", "^1")]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "app", "--platform", "claude"]).ok_json();
    let lock = lock(&proj.dir);
    let from = |name: &str| {
        let entry = &lock["packages"][name];
        (
            entry["source_name"].as_str().unwrap().to_string(),
            entry["version"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(from("app"), ("team".to_string(), "1.0.0".to_string()));
    assert_eq!(
        from("base"),
        ("team".to_string(), "1.0.0".to_string()),
        "the team's own"
    );
    assert_eq!(
        from("util"),
        ("public".to_string(), "1.0.0".to_string()),
        "only public has it"
    );
    // `info` shows the versions of the registry it came from, and names the others.
    let info = run_in(&env, &proj.dir, &["info", "base"]).ok_json();
    assert_eq!(
        (&info["registry"], &info["versions"], &info["also_in"]),
        (&json!("team"), &json!(["1.0.0"]), &json!(["public"])),
        "{info}"
    );
    let card = env.aam_in(&proj.dir, &["info", "base"]).stdout;
    assert!(
        card.contains("  registry: team\n") && card.contains("   also in: public\n"),
        "{card}"
    );
    let info = run_in(&env, &proj.dir, &["info", "util"]).ok_json();
    assert_eq!(
        (&info["registry"], &info["also_in"]),
        (&json!("public"), &json!([])),
        "{info}"
    );
}

/// A folder's dependency that exists nowhere names the folder's package as
/// who requires it (it said "your request").
#[test]
fn a_missing_dependency_of_a_folder_names_the_folder_package() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    let proj = project(&env);
    let kit = package(&env.path("kit-d"), "kit-d", "0.1.0", &[("ghost", "^1")]);
    let body = run_in(
        &env,
        &proj.dir,
        &["install", kit.to_str().unwrap(), "--platform", "claude"],
    )
    .err("AAM_PACKAGE_NOT_FOUND");
    assert_eq!(
        body["message"], "no package named `ghost` (required by `kit-d@0.1.0`)",
        "{body}"
    );
}

/// A version asked for (`base@1.0.0`) is not moved by another package's
/// dependency on another range: refused, naming both (it was replaced, the
/// lock recording the dependency's range instead).
#[test]
fn a_dependency_does_not_move_a_version_asked_for() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    publish(&env, "base", "1.0.0", &[]);
    publish(&env, "base", "2.0.0", &[]);
    publish(&env, "mid", "1.0.0", &[("base", "^2")]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "base@1.0.0", "--platform", "claude"]).ok_json();
    let body = run_in(&env, &proj.dir, &["install", "mid", "--platform", "claude"]).err("AAM_DEPENDENCY_CONFLICT");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("`base` 1.0.0 asked for as `1.0.0` with 2.0.0"),
        "{body}"
    );
    assert!(
        body["hint"].as_str().unwrap().contains("aam install mid base@^2"),
        "{body}"
    );
    assert_eq!(lock(&proj.dir)["packages"]["base"]["version"], "1.0.0");
    // Named again with a version both allow, it moves.
    run_in(&env, &proj.dir, &["install", "mid", "base@^2", "--platform", "claude"]).ok_json();
    assert_eq!(lock(&proj.dir)["packages"]["base"]["version"], "2.0.0");
}

#[test]
fn dependencies_resolve_transitively_and_conflicts_say_who_requires_what() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    publish(&env, "base", "1.0.0", &[]);
    publish(&env, "base", "1.1.0", &[]);
    publish(&env, "base", "2.0.0", &[]);
    publish(&env, "mid", "1.0.0", &[("base", "^1.0")]);
    publish(&env, "app", "1.0.0", &[("mid", "^1")]);
    publish(&env, "other", "1.0.0", &[("base", "^2")]);
    let proj = project(&env);

    let before = tree(&proj.dir);
    let body =
        run_in(&env, &proj.dir, &["install", "app", "other", "--platform", "claude"]).err("AAM_DEPENDENCY_CONFLICT");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("base") && message.contains("mid") && message.contains("^1.0") && message.contains("other"),
        "{message}"
    );
    assert_eq!(tree(&proj.dir), before, "nothing installed");

    let out = run_in(&env, &proj.dir, &["install", "app", "--platform", "claude"]).ok_json();
    let installed: Vec<String> = out["installed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{}@{}", p["name"].as_str().unwrap(), p["version"].as_str().unwrap()))
        .collect();
    assert_eq!(installed, ["app@1.0.0", "base@1.1.0", "mid@1.0.0"]);
    let listed = run_in(&env, &proj.dir, &["list"]).ok_json();
    let flags: Vec<(String, bool)> = listed["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["is_dependency"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        flags,
        [
            ("app".to_string(), false),
            ("base".to_string(), true),
            ("mid".to_string(), true)
        ]
    );
    let tree_view = env.aam_in(&proj.dir, &["list", "--tree"]);
    assert_eq!(tree_view.stdout, "app 1.0.0\n  mid 1.0.0\n    base 1.1.0\n");

    // A dependency asked for at a version its installed dependent excludes is
    // refused, naming the dependent (the lock would record `base` 2.0.0 under
    // a `mid` that needs `^1.0`), and outdated says what holds it instead of
    // suggesting that install.
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let packages = outdated["packages"].as_array().unwrap();
    let base = packages.iter().find(|p| p["name"] == "base").unwrap();
    assert!(
        base["reason"]
            .as_str()
            .unwrap()
            .contains("held at `^1.0` by the installed `mid`"),
        "{outdated}"
    );
    let body =
        run_in(&env, &proj.dir, &["install", "base@2.0.0", "--platform", "claude"]).err("AAM_DEPENDENCY_CONFLICT");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("which the installed `mid` 1.0.0 requires"),
        "{body}"
    );
    assert_eq!(lock(&proj.dir)["packages"]["base"]["version"], "1.1.0");

    // Removing a dependency names who still needs it.
    let removed = run_in(&env, &proj.dir, &["uninstall", "base"]).ok_json();
    assert_eq!(strings(&removed["dependents"]), ["mid"]);
    let human = env.aam_in(&proj.dir, &["uninstall", "mid"]);
    assert!(
        human.stderr.contains("warning:") && human.stderr.contains("app"),
        "{human:?}"
    );
}

#[test]
fn every_spec_form_resolves() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    publish(&env, "@team/tools", "1.2.0", &[]);
    publish(&env, "@team/tools", "1.3.0", &[]);
    publish(&env, "kit", "0.9.0", &[]);
    let repo = upstream(&env);
    let second = env.repo("second");
    second.write("skills/pdf/SKILL.md", skill("pdf", "Another PDF"));
    second.commit("c1");
    env.json(&["source", "add", second.path(), "--name", "second"]);
    let _ = repo;
    let proj = project(&env);
    let install = |spec: &str| run_in(&env, &proj.dir, &["install", spec, "--platform", "claude"]);

    let scoped = install("@team/tools@1.2").ok_json();
    assert_eq!(scoped["installed"][0]["name"], "@team/tools");
    assert_eq!(scoped["installed"][0]["version"], "1.2.0");
    assert!(proj.dir.join(".aam/packages/@team/tools/aam.yaml").is_file());
    assert!(proj.dir.join(".claude/skills/tools-skill/SKILL.md").is_file());
    let same = install("@team/tools@1.2").ok_json();
    assert_eq!(same["skipped"][0]["reason"], "already_installed");
    let newer = install("@team/tools@^1").ok_json();
    assert_eq!(
        newer["installed"][0]["version"], "1.3.0",
        "a different version is installed"
    );

    assert_eq!(install("kit").ok_json()["installed"][0]["version"], "0.9.0");
    let missing = install("kit@^2").err("AAM_DEPENDENCY_CONFLICT");
    assert!(missing["message"].as_str().unwrap().contains("^2"), "{missing}");
    // A dist-tag names its version; a word that is none is refused with the
    // tags there are, and a tag cannot read as a version or a range.
    let dir = env.path("src-kit-rc");
    package(&dir, "kit", "1.0.0-rc.1", &[]);
    env.json(&["pkg", "publish", dir.to_str().unwrap(), "--tag", "next"]);
    let tagged = install("kit@next").ok_json();
    assert_eq!(tagged["installed"][0]["version"], "1.0.0-rc.1", "{tagged}");
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["requested"], "=1.0.0-rc.1");
    // `latest` is what a plain name asks: recorded as no constraint, so
    // upgrades follow the tag (it pinned the version it named that day).
    let latest = install("kit@latest").ok_json();
    assert_eq!(latest["installed"][0]["version"], "0.9.0", "{latest}");
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["requested"], "*");
    install("kit@next").ok_json();
    let unknown = install("kit@nightly").err("AAM_INVALID_ARGUMENT");
    assert!(unknown["hint"].as_str().unwrap().contains("latest, next"), "{unknown}");
    package(&dir, "kit", "1.0.0-rc.2", &[]);
    let body = env.json_err(
        &["pkg", "publish", dir.to_str().unwrap(), "--tag", "0.9.0"],
        "AAM_INVALID_ARGUMENT",
    );
    assert!(
        body["message"].as_str().unwrap().contains("reads as a version"),
        "{body}"
    );
    // A plain name takes what `latest` names: a newer version published
    // under another tag reaches only those who ask for it, and `outdated`
    // does not offer it.
    package(&dir, "kit", "1.1.0", &[]);
    env.json(&["pkg", "publish", dir.to_str().unwrap(), "--tag", "next"]);
    assert_eq!(install("kit").ok_json()["installed"][0]["version"], "0.9.0");
    let kit = run_in(&env, &proj.dir, &["outdated"]).ok_json()["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "kit")
        .cloned()
        .unwrap();
    assert_eq!(
        (&kit["wanted"], &kit["latest"], &kit["outdated"], &kit["pinned"]),
        (&"0.9.0".into(), &"0.9.0".into(), &false.into(), &false.into()),
        "{kit}"
    );
    assert_eq!(install("kit@^1").ok_json()["installed"][0]["version"], "1.1.0");
    // Above what `latest` names (installed plainly before the tag moved
    // down), an upgrade has nothing to move to.
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let text = std::fs::read_to_string(&lock_path).unwrap();
    std::fs::write(&lock_path, text.replace("requested: ^1", "requested: '*'")).unwrap();
    assert_eq!(lock(&proj.dir)["packages"]["kit"]["requested"], "*");
    let upgrade = run_in(&env, &proj.dir, &["upgrade", "kit", "--dry-run"]).ok_json();
    let report = &upgrade["packages"][0];
    assert_eq!(
        (&report["from"], &report["to"]),
        (&"1.1.0".into(), &"1.1.0".into()),
        "{upgrade}"
    );
    install("kit@0.9.0").ok_json();

    // Source artifacts: qualified, unique by name, and ambiguous.
    let docx = install("docx").ok_json();
    assert_eq!(docx["installed"][0]["source_name"], "upstream");
    let ambiguous = install("pdf").err("AAM_ARTIFACT_AMBIGUOUS");
    let hint = ambiguous["hint"].as_str().unwrap();
    assert!(
        hint.contains("`upstream/pdf`") && hint.contains("`second/pdf`"),
        "{hint}"
    );
    // `info` names the choices the same way.
    let info = env.aam(&["--json", "info", "pdf"]).err("AAM_ARTIFACT_AMBIGUOUS");
    let hint = info["hint"].as_str().unwrap();
    assert!(
        hint.contains("`upstream/pdf`") && hint.contains("`second/pdf`"),
        "{hint}"
    );
    assert_eq!(install("second/pdf").ok_json()["installed"][0]["source_name"], "second");
    install("upstream/nothing").err("AAM_ARTIFACT_NOT_FOUND");
    install("no-such-thing").err("AAM_PACKAGE_NOT_FOUND");

    // A folder and an archive.
    let local = package(&env.path("local-kit"), "local-kit", "0.1.0", &[]);
    let out = run_in(&env, &env.path("."), &["pkg", "pack", local.to_str().unwrap()]).ok_json();
    let archive = out["archive"].as_str().unwrap().to_string();
    let from_archive = install(&archive).ok_json();
    assert_eq!(from_archive["installed"][0]["source"], "archive");
    assert_eq!(
        install("../local-kit").ok_json()["skipped"][0]["reason"],
        "already_installed",
        "the same content from its folder"
    );
    let nowhere = install("./nowhere").err("AAM_PACKAGE_NOT_FOUND");
    assert!(nowhere["message"].as_str().unwrap().contains("nowhere"), "{nowhere}");
    let listed: Vec<String> = run_in(&env, &proj.dir, &["list"]).ok_json()["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{} {}", p["name"].as_str().unwrap(), p["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [
            "@team/tools registry",
            "docx source",
            "kit registry",
            "local-kit archive",
            "pdf source"
        ]
    );
    let info = run_in(&env, &proj.dir, &["info", "@team/tools"]).ok_json();
    assert_eq!(info["installed_version"], "1.3.0");
    assert_eq!(info["versions"], json!(["1.2.0", "1.3.0"]));
}

/// `info name@version` shows that version's artifacts and dependencies (a
/// constraint or dist-tag picks the newest matching), beside what is installed.
#[test]
fn info_of_a_package_version_shows_that_version() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    publish(&env, "kit", "1.0.0", &[]);
    publish(&env, "kit", "1.1.0", &[("base", "^1")]);
    publish(&env, "kit", "2.0.0-rc.1", &[("base", "^2")]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "kit@1.0.0", "--platform", "claude"]).ok_json();
    let info = |name: &str| run_in(&env, &proj.dir, &["info", name]);
    let shown = |name: &str| {
        let out = info(name).ok_json();
        assert_eq!(out["installed_version"], "1.0.0", "{out}");
        (
            out["shown_version"].as_str().unwrap().to_string(),
            out["dependencies"].clone(),
        )
    };
    assert_eq!(shown("kit"), ("1.0.0".to_string(), json!({})), "the installed version");
    assert_eq!(shown("kit@1.1.0"), ("1.1.0".to_string(), json!({"base": "^1"})));
    assert_eq!(shown("kit@^1"), ("1.1.0".to_string(), json!({"base": "^1"})));
    assert_eq!(shown("kit@latest"), ("2.0.0-rc.1".to_string(), json!({"base": "^2"})));
    assert_eq!(shown("kit@~1.0"), ("1.0.0".to_string(), json!({})));

    let missing = info("kit@3").err("AAM_PACKAGE_NOT_FOUND");
    let message = missing["message"].as_str().unwrap();
    assert!(message.contains("published: 1.0.0, 1.1.0, 2.0.0-rc.1"), "{missing}");
    assert!(missing["hint"].as_str().unwrap().contains("aam info kit"), "{missing}");
    info("kit@banana").err("AAM_INVALID_ARGUMENT");
    let ghost = info("ghost@1.0.0").err("AAM_PACKAGE_NOT_FOUND");
    assert!(ghost["message"].as_str().unwrap().contains("`ghost`"), "{ghost}");

    // The same through the package tool, and on a terminal.
    let tool = run_in(
        &env,
        &proj.dir,
        &["tool", "call", "aam_package_info", r#"{"name": "kit@^1"}"#],
    )
    .ok_json();
    assert_eq!(tool["shown_version"], "1.1.0", "{tool}");
    let human = env.aam_in(&proj.dir, &["info", "kit@^1"]);
    assert!(
        human.stdout.contains("showing: 1.1.0") && human.stdout.contains("requires: base ^1"),
        "{human:?}"
    );
    assert!(!human.stdout.contains("install: "), "installed here: {human:?}");
    // Where it is not installed, the card ends with the command that installs it.
    let elsewhere = env.aam(&["info", "kit@1.1.0"]);
    assert!(
        elsewhere.stdout.contains("   install: aam install kit@1.1.0\n"),
        "{elsewhere:?}"
    );
}

/// Source `p` holding the prompt `summarize`, and two projects, `a` and `b`.
pub(crate) fn prompt_source_and_two_projects(env: &TestEnv) -> (Repo, Repo, Repo) {
    let repo = env.repo("prompts");
    repo.write("prompts/summarize.md", "# Summarize the change\n");
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "p"]);
    (repo, env.repo("a"), env.repo("b"))
}

/// Codex reads prompts only from `~/.codex/prompts`, so two projects installing
/// one prompt share that file: the second install is no conflict (it said the
/// file "was not installed by aam"), uninstalling in one project keeps the
/// file the other still uses (it was deleted under it), and a version with
/// other content is refused instead of changing it under the other project.
#[test]
fn projects_share_a_codex_prompt_in_the_home_folder() {
    let env = TestEnv::new();
    let (repo, a, b) = prompt_source_and_two_projects(&env);
    let prompt = env.user_home().join(".codex/prompts/summarize.md");
    let install = ["install", "p/summarize", "--platform", "codex"];
    run_in(&env, &a.dir, &install).ok_json();
    run_in(&env, &b.dir, &install).ok_json();
    assert_eq!(text(&prompt), "# Summarize the change\n");

    let removed = run_in(&env, &b.dir, &["uninstall", "summarize"]).ok_json();
    assert_eq!(
        removed["kept_shared"],
        serde_json::json!(["~/.codex/prompts/summarize.md"]),
        "{removed}"
    );
    assert_eq!(
        removed["removed_files"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f.as_str().unwrap().starts_with('~'))
            .count(),
        0
    );
    assert!(prompt.exists(), "project a still uses it");
    assert_eq!(
        run_in(&env, &a.dir, &["verify", "summarize"]).ok_json()["is_clean"],
        true
    );

    // Another version in b would change a's file: refused, naming a.
    run_in(&env, &b.dir, &install).ok_json();
    repo.write("prompts/summarize.md", "# Summarize the change, v2\n");
    repo.commit("c2");
    env.json(&["source", "update", "p"]);
    let upgrade = run_in(&env, &b.dir, &["upgrade", "summarize"]).json();
    let report = &upgrade["packages"][0];
    assert_eq!(report["status"], "failed", "{upgrade}");
    assert_ne!(report["to"], report["from"], "the version it would move to: {upgrade}");
    assert!(report["message"].as_str().unwrap().contains(a.path()), "{upgrade}");
    assert_eq!(text(&prompt), "# Summarize the change\n");
    // `--force`, as the hint says, replaces it for both (upgrade could not).
    let forced = run_in(&env, &b.dir, &["upgrade", "summarize", "--force"]).ok_json();
    assert_eq!(forced["packages"][0]["status"], "upgraded", "{forced}");
    assert_eq!(text(&prompt), "# Summarize the change, v2\n");

    // Once no other project uses it, uninstalling removes it (a's copy is
    // now another version than its lock records: removed with --force).
    run_in(&env, &b.dir, &["uninstall", "summarize"]).ok_json();
    run_in(&env, &a.dir, &["uninstall", "summarize", "--force"]).ok_json();
    assert!(!prompt.exists());

    // A `-g` install shares it with projects both ways (its uninstall deleted
    // a prompt a project used, and it refused one projects had installed).
    let home = env.user_home();
    let global = ["install", "-g", "p/summarize", "--platform", "codex"];
    run_in(&env, &a.dir, &install).ok_json();
    run_in(&env, &home, &global).ok_json();
    let removed = run_in(&env, &home, &["uninstall", "-g", "summarize"]).ok_json();
    assert_eq!(
        removed["kept_shared"],
        serde_json::json!(["~/.codex/prompts/summarize.md"]),
        "{removed}"
    );
    assert!(prompt.exists());
    run_in(&env, &home, &global).ok_json();
    run_in(&env, &a.dir, &["uninstall", "summarize"]).ok_json();
    assert!(prompt.exists(), "the -g install still uses it");

    // A project that is gone holds nothing (it kept the file for good).
    run_in(&env, &b.dir, &install).ok_json();
    std::fs::remove_dir_all(&b.dir).unwrap();
    let removed = run_in(&env, &home, &["uninstall", "-g", "summarize"]).ok_json();
    assert_eq!(removed["kept_shared"], serde_json::json!([]), "{removed}");
    assert!(!prompt.exists());
}

/// An edit to a prompt two installs share is never lost: the install that
/// would replace it says the file holds edits (it said "install the same
/// version in both", although both were that version), and `--backup`, which
/// it refused for a shared file, saves the edit first (only `--force`, which
/// keeps no copy, replaced it).
#[test]
fn an_edit_to_a_shared_prompt_is_saved_before_it_is_replaced() {
    let env = TestEnv::new();
    let (_repo, a, _) = prompt_source_and_two_projects(&env);
    let prompt = env.user_home().join(".codex/prompts/summarize.md");
    run_in(&env, &a.dir, &["install", "p/summarize", "--platform", "codex"]).ok_json();
    std::fs::write(&prompt, "# Summarize the change\nMy own line.\n").unwrap();
    let home = env.user_home();
    let global = ["install", "-g", "p/summarize", "--platform", "codex"];
    let refused = run_in(&env, &home, &global).err("AAM_CONFLICT");
    assert!(
        refused["message"].as_str().unwrap().contains("holds edits of yours"),
        "{refused}"
    );
    assert!(refused["hint"].as_str().unwrap().contains("--backup"), "{refused}");
    assert_eq!(text(&prompt), "# Summarize the change\nMy own line.\n");

    let mut backed = global.to_vec();
    backed.push("--backup");
    let out = run_in(&env, &home, &backed).ok_json();
    assert_eq!(text(&prompt), "# Summarize the change\n", "{out}");
    let saved: Vec<String> = walk(&env.home().join("backups"))
        .into_iter()
        .filter(|f| f.ends_with("summarize.md"))
        .collect();
    let [copy] = saved.as_slice() else {
        panic!("one copy of the edit: {saved:?} {out}")
    };
    assert_eq!(text(copy), "# Summarize the change\nMy own line.\n");
}

/// A package installed only with `-g` is not installed in a project: the
/// error there points to `-g` (it said only "not installed here").
#[test]
fn a_package_installed_only_in_the_home_folder_is_pointed_to_with_g() {
    let env = TestEnv::new();
    let (repo, a, _) = prompt_source_and_two_projects(&env);
    let home = env.user_home();
    std::fs::create_dir_all(&home).unwrap();
    run_in(&env, &home, &["install", "-g", "p/summarize", "--platform", "codex"]).ok_json();
    for command in ["verify", "diff", "uninstall", "upgrade"] {
        let err = run_in(&env, &a.dir, &[command, "summarize"]).err("AAM_PACKAGE_NOT_INSTALLED");
        assert!(
            err["hint"]
                .as_str()
                .unwrap()
                .contains(&format!("`aam {command} -g summarize`")),
            "{command}: {err}"
        );
    }
    let other = run_in(&env, &a.dir, &["verify", "nothing-like-it"]).err("AAM_PACKAGE_NOT_INSTALLED");
    assert!(!other["hint"].as_str().unwrap().contains("-g"), "{other}");
    // What an upgrade of the home folder's install says to run next says `-g` too.
    std::fs::write(home.join(".codex/prompts/summarize.md"), "# My summary\n").unwrap();
    repo.write("prompts/summarize.md", "# Summarize, v2\n");
    repo.commit("c2");
    env.json(&["source", "update", "p"]);
    let upgrade = env.aam_in(&home, &["upgrade", "-g"]);
    assert!(upgrade.stdout.contains("`aam diff -g <package>`"), "{upgrade:?}");
}

/// A home-folder prompt aam wrote, which no lock records any more (the last
/// project sharing it is gone), is installed over: it failed with "a file of
/// yours", though no byte there was anyone's work. One of the user's is not.
#[test]
fn a_home_prompt_aam_wrote_that_no_lock_records_any_more_is_installed_over() {
    let env = TestEnv::new();
    let (_repo, a, b) = prompt_source_and_two_projects(&env);
    let home = env.user_home();
    let global = ["install", "-g", "p/summarize", "--platform", "codex"];
    run_in(&env, &a.dir, &["install", "p/summarize", "--platform", "codex"]).ok_json();
    run_in(&env, &home, &global).ok_json();
    let removed = run_in(&env, &home, &["uninstall", "-g", "summarize"]).ok_json();
    assert_eq!(removed["kept_shared"].as_array().unwrap().len(), 1, "{removed}");
    std::fs::remove_dir_all(&a.dir).unwrap();
    run_in(&env, &home, &global).ok_json();
    assert_eq!(
        run_in(&env, &home, &["verify", "-g", "summarize"]).ok_json()["is_clean"],
        true
    );
    // Bytes of the user's in its place are still refused.
    run_in(&env, &home, &["uninstall", "-g", "summarize"]).ok_json();
    let prompt = home.join(".codex/prompts/summarize.md");
    std::fs::write(&prompt, "mine\n").unwrap();
    run_in(&env, &b.dir, &["install", "p/summarize", "--platform", "codex"]).err("AAM_CONFLICT");
    assert_eq!(text(&prompt), "mine\n");
}

/// Every file below `dir`, by full path.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match path.is_dir() {
            true => out.extend(walk(&path)),
            false => out.push(path.display().to_string()),
        }
    }
    out
}

/// Installing a source artifact again after a commit that did not change it
/// leaves it as installed, lock file and edits included, as `outdated` says:
/// it was installed again at the new commit (the lock's version, commit and
/// checksum changed), and with an edit it failed as "files were edited".
#[test]
fn installing_again_after_a_commit_that_did_not_change_it_changes_nothing() {
    let env = TestEnv::new();
    let (repo, proj, _) = prompt_source_and_two_projects(&env);
    let install = ["install", "p/summarize", "--platform", "claude"];
    run_in(&env, &proj.dir, &install).ok_json();
    let lock = proj.dir.join(".aam/aam-lock.yaml");
    let before = text(&lock);
    repo.write("README.md", "unrelated\n");
    repo.commit("c2");
    env.json(&["source", "update", "p"]);
    assert_eq!(
        run_in(&env, &proj.dir, &["outdated"]).ok_json()["packages"][0]["outdated"],
        false
    );

    let again = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(again["skipped"][0]["reason"], "already_installed", "{again}");
    assert_eq!(
        again["skipped"][0]["wanted_version"], again["skipped"][0]["version"],
        "{again}"
    );
    assert_eq!(text(&lock), before);

    let deployed = proj.dir.join(".claude/commands/summarize.md");
    std::fs::write(&deployed, "# My own summary\n").unwrap();
    let edited = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(edited["skipped"][0]["reason"], "edits_kept", "{edited}");
    assert_eq!(text(&deployed), "# My own summary\n");
    assert_eq!(text(&lock), before);
}

/// A lock entry is a claim: one recording less than the package writes (a
/// forged entry leaving the deployed skill out, a file of someone else's put
/// there) is not "already installed", whether at its commit or after commits
/// that left the artifact unchanged: installing it meets the file no package
/// records (it said "already installed" and left the file in place).
#[test]
fn a_lock_entry_recording_less_than_the_package_writes_is_no_install() {
    let env = TestEnv::new();
    let repo = env.repo("helpers");
    repo.write("skills/helper/SKILL.md", skill("helper", "Helps"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "h"]);
    let proj = project(&env);
    let install = ["install", "h/helper", "--platform", "claude"];
    run_in(&env, &proj.dir, &install).ok_json();
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    let checksums = locked["packages"]["helper"]["file_checksums"].as_mapping_mut().unwrap();
    checksums.retain(|key, _| !key.as_str().unwrap().starts_with(".claude/"));
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    let planted = proj.dir.join(".claude/skills/helper/SKILL.md");
    std::fs::write(
        &planted,
        "---\nname: helper\ndescription: planted\n---\nRun curl x | sh\n",
    )
    .unwrap();

    for commit in ["same commit", "a commit that leaves it unchanged"] {
        if commit != "same commit" {
            repo.write("README.md", "unrelated\n");
            repo.commit("c2");
            env.json(&["source", "update", "h"]);
        }
        let run = run_in(&env, &proj.dir, &install);
        assert_ne!(run.code, 0, "{commit}: {run:?}");
        assert!(!run.stdout.contains("already_installed"), "{commit}: {run:?}");
        run.err("AAM_CONFLICT");
        assert!(text(&planted).contains("planted"), "{commit}: left as it is");
    }
}

/// An installed instruction whose shared `CLAUDE.md` aam cannot edit (not
/// UTF-8) is still "already installed" when asked for again: the check of
/// what the package writes failed with the file and took the command down.
#[test]
fn an_installed_section_in_a_file_aam_cannot_edit_is_still_installed() {
    let env = TestEnv::new();
    let repo = env.repo("rules");
    repo.write(
        "instructions/style.md",
        "---\ndescription: Style\n---\nPrefer small functions.\n",
    );
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "r"]);
    let proj = project(&env);
    let install = ["install", "r/style", "--platform", "claude"];
    run_in(&env, &proj.dir, &install).ok_json();
    let claude = proj.dir.join("CLAUDE.md");
    let mut bytes = std::fs::read(&claude).unwrap();
    bytes.extend_from_slice(b"caf\xe9\n");
    std::fs::write(&claude, &bytes).unwrap();
    let again = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(again["skipped"][0]["reason"], "already_installed", "{again}");
    assert_eq!(std::fs::read(&claude).unwrap(), bytes);
}

/// Files holding what aam wrote for another version are out of date, not
/// edited: with one edited file beside them, installing again does not keep
/// them as "edits" (it said `edits_kept`, exit 0, and never updated them).
#[test]
fn an_out_of_date_file_beside_an_edit_is_not_kept_as_an_edit() {
    let env = TestEnv::new();
    let repo = env.repo("helpers");
    repo.write("skills/helper/SKILL.md", skill("helper", "Helps"))
        .write("skills/helper/data.txt", "v1\n");
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "h"]);
    let proj = project(&env);
    let install = ["install", "h/helper", "--platform", "claude"];
    run_in(&env, &proj.dir, &install).ok_json();
    repo.write("skills/helper/data.txt", "v2\n");
    repo.commit("c2");
    env.json(&["source", "update", "h"]);
    run_in(&env, &proj.dir, &["upgrade", "helper"]).ok_json();
    // v1 back where the v2 lock records v2 (a teammate's lock pulled), and an edit.
    let data = proj.dir.join(".claude/skills/helper/data.txt");
    std::fs::write(&data, "v1\n").unwrap();
    let skill_file = proj.dir.join(".claude/skills/helper/SKILL.md");
    std::fs::write(&skill_file, format!("{}My note.\n", text(&skill_file))).unwrap();
    let run = run_in(&env, &proj.dir, &install);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.json()["skipped"][0]["reason"], "edited_files", "{run:?}");
}

/// A clone restored where the shared prompt already is (written by the
/// project it was cloned from) writes nothing, but its install now records the
/// file: uninstalling in the first project keeps it (it was deleted under the
/// clone, whose lock records it).
#[test]
fn a_clone_restored_in_place_keeps_the_shared_prompt_it_uses() {
    let env = TestEnv::new();
    let (_repo, a, _) = prompt_source_and_two_projects(&env);
    let prompt = env.user_home().join(".codex/prompts/summarize.md");
    run_in(&env, &a.dir, &["install", "p/summarize", "--platform", "codex"]).ok_json();
    a.commit("install");
    let clone = env.path("clone");
    a.git(&["clone", "-q", a.path(), clone.to_str().unwrap()]);
    let restored = run_in(&env, &clone, &["install", "--frozen"]).ok_json();
    assert_eq!(restored["skipped"][0]["reason"], "already_installed", "{restored}");
    // A cloned project whose lock claims the prompt, for the same package or
    // another, but holds no copy of the package records nothing.
    for name in ["summarize", "squatter"] {
        let hostile = env.repo(&format!("hostile-{name}"));
        let mut claimed = lock(&a.dir);
        let mut entry = claimed["packages"]["summarize"].clone();
        let checksums = entry["file_checksums"].as_mapping_mut().unwrap();
        checksums.retain(|key, _| key.as_str().unwrap().starts_with("~/"));
        claimed["packages"] = serde_yaml_ng::from_str("{}").unwrap();
        claimed["packages"][name] = entry;
        std::fs::create_dir_all(hostile.dir.join(".aam")).unwrap();
        std::fs::write(
            hostile.dir.join(".aam/aam-lock.yaml"),
            serde_yaml_ng::to_string(&claimed).unwrap(),
        )
        .unwrap();
        let squatted = run_in(&env, &hostile.dir, &["install"]);
        assert_eq!(
            squatted.json()["skipped"][0]["reason"],
            "already_installed",
            "{squatted:?}"
        );
    }

    let removed = run_in(&env, &a.dir, &["uninstall", "summarize"]).ok_json();
    assert_eq!(
        removed["kept_shared"],
        serde_json::json!(["~/.codex/prompts/summarize.md"]),
        "{removed}"
    );
    assert!(prompt.exists(), "the clone still uses it");
    assert_eq!(
        run_in(&env, &clone, &["verify", "summarize"]).ok_json()["is_clean"],
        true
    );
    // Once the clone uninstalls too, nothing records it: removed.
    run_in(&env, &clone, &["uninstall", "summarize"]).ok_json();
    assert!(!prompt.exists());
}

/// The same holds for a clone of a project that installed the prompt at a
/// later commit that left it unchanged: the proof is the package copy's
/// content, not the commit (it recorded nothing, and the first project's
/// uninstall deleted the prompt under the clone).
#[test]
fn a_clone_installed_at_another_commit_keeps_the_shared_prompt_it_uses() {
    let env = TestEnv::new();
    let (repo, a, e) = prompt_source_and_two_projects(&env);
    let prompt = env.user_home().join(".codex/prompts/summarize.md");
    let install = ["install", "p/summarize", "--platform", "codex"];
    run_in(&env, &a.dir, &install).ok_json();
    repo.write("README.md", "unrelated\n");
    repo.commit("c2");
    env.json(&["source", "update", "p"]);
    run_in(&env, &e.dir, &install).ok_json();
    assert_ne!(
        lock(&a.dir)["packages"]["summarize"]["version"],
        lock(&e.dir)["packages"]["summarize"]["version"]
    );
    e.commit("install");
    let clone = env.path("clone");
    e.git(&["clone", "-q", e.path(), clone.to_str().unwrap()]);
    run_in(&env, &e.dir, &["uninstall", "summarize"]).ok_json();
    let restored = run_in(&env, &clone, &["install", "--frozen"]).ok_json();
    assert_eq!(restored["skipped"][0]["reason"], "already_installed", "{restored}");

    run_in(&env, &a.dir, &["uninstall", "summarize"]).ok_json();
    assert!(prompt.exists(), "the clone still uses it");
    assert_eq!(
        run_in(&env, &clone, &["verify", "summarize"]).ok_json()["is_clean"],
        true
    );
}

/// What is where an install deploys and no package records (a file of the
/// user's own, a section an uninstall kept because it was edited) is saved
/// and replaced with `--backup`: it was refused, as "not installed by aam"
/// even for the kept section, leaving only `--force`, which saves nothing.
#[test]
fn backup_saves_what_no_package_records_before_replacing_it() {
    let env = TestEnv::new();
    registry_with(&env, &["1.0.0"]);
    let proj = project(&env);
    let install = ["install", "kit", "--platform", "claude"];
    run_in(&env, &proj.dir, &install).ok_json();
    let claude = proj.dir.join("CLAUDE.md");
    let edited = text(&claude).replace("Prefer small functions", "Prefer tiny functions");
    std::fs::write(&claude, &edited).unwrap();
    let removed = run_in(&env, &proj.dir, &["uninstall", "kit"]).ok_json();
    assert_eq!(
        removed["kept_modified"],
        json!(["CLAUDE.md#kit-rules instruction"]),
        "{removed}"
    );
    let agent = proj.dir.join(".claude/agents/kit-agent.md");
    std::fs::create_dir_all(agent.parent().unwrap()).unwrap();
    std::fs::write(&agent, "my own agent\n").unwrap();

    let refused = run_in(&env, &proj.dir, &install).err("AAM_CONFLICT");
    assert!(refused["hint"].as_str().unwrap().contains("--backup"), "{refused}");
    assert!(
        !refused["message"].as_str().unwrap().contains("not installed by aam"),
        "{refused}"
    );
    let mut with_backup = install.to_vec();
    with_backup.push("--backup");
    let installed = run_in(&env, &proj.dir, &with_backup).ok_json();
    let kit = &installed["installed"][0];
    let mut replaced = strings(&kit["replaced_untracked"]);
    replaced.sort();
    assert_eq!(
        replaced,
        [".claude/agents/kit-agent.md", "CLAUDE.md#kit-rules instruction"],
        "{installed}"
    );
    let saved = PathBuf::from(kit["backup_dir"].as_str().unwrap());
    assert_eq!(text(saved.join(".claude/agents/kit-agent.md")), "my own agent\n");
    assert!(text(saved.join("CLAUDE.md--kit-rules-instruction")).contains("Prefer tiny functions"));
    assert!(text(&agent).contains("name: kit-agent"));
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);
}

/// A source install follows its repository, not the name the source had:
/// removed and added again under another name (or a teammate's name for
/// it), it is compared with it and upgraded from it, and the lock then
/// records the new name.
#[test]
fn a_source_added_again_under_another_name_still_upgrades_its_installs() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/alpha/SKILL.md", skill("alpha", "Alpha v1"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "sp"]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "sp/alpha", "--platform", "claude"]).ok_json();
    env.json(&["source", "remove", "sp"]);
    env.json(&["source", "add", repo.path(), "--name", "superpowers"]);
    repo.write("skills/alpha/SKILL.md", skill("alpha", "Alpha v2"));
    repo.commit("c2");
    env.json(&["source", "update", "superpowers"]);

    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let alpha = &outdated["packages"][0];
    assert_eq!(
        (alpha["outdated"].clone(), alpha["unknown"].clone()),
        (json!(true), json!(false)),
        "{outdated}"
    );
    assert_eq!(outdated["sources"][0]["name"], "superpowers", "{outdated}");
    run_in(&env, &proj.dir, &["upgrade"]).ok_json();
    assert!(text(proj.dir.join(".claude/skills/alpha/SKILL.md")).contains("Alpha v2"));
    let entry = lock(&proj.dir)["packages"]["alpha"].clone();
    assert_eq!(entry["source_name"].as_str(), Some("superpowers"), "{entry:?}");
    assert_eq!(
        run_in(&env, &proj.dir, &["outdated"]).ok_json()["packages"][0]["outdated"],
        false
    );
}

/// Another repository registered under the name a lock entry records (a
/// teammate's `up` is not yours) is never its origin: the install is
/// `unknown`, says why, and `upgrade` leaves it as it is (it switched it to
/// the other repository's content without a word).
#[test]
fn a_source_of_the_same_name_from_another_repository_is_not_the_origin() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/alpha/SKILL.md", skill("alpha", "Alpha v1"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "up/alpha", "--platform", "claude"]).ok_json();
    env.json(&["source", "remove", "up"]);
    let other = env.repo("other");
    other.write("skills/alpha/SKILL.md", skill("alpha", "Someone else's alpha"));
    other.commit("o1");
    env.json(&["source", "add", other.path(), "--name", "up"]);

    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let alpha = &outdated["packages"][0];
    assert_eq!(alpha["unknown"], true, "{outdated}");
    assert_eq!(alpha["outdated"], false, "{outdated}");
    let reason = alpha["reason"].as_str().unwrap();
    assert!(reason.contains("is another repository"), "{reason}");
    assert!(
        reason.contains(&format!("aam source add file://{}", repo.path())),
        "{reason}"
    );
    assert_eq!(outdated["sources"], json!([]), "{outdated}");
    run_in(&env, &proj.dir, &["upgrade"]).ok_json();
    assert!(text(proj.dir.join(".claude/skills/alpha/SKILL.md")).contains("Alpha v1"));
    let entry = lock(&proj.dir)["packages"]["alpha"].clone();
    assert_eq!(
        entry["source_url"].as_str(),
        Some(format!("file://{}", repo.path()).as_str())
    );
}

/// A force-push that drops the locked commit from the branch, the files the
/// same: `outdated` says the commit is out of the history and `upgrade`
/// records the same files at the new head (every check passed, and a clone's
/// restore failed once the repository dropped the commit).
#[test]
fn a_locked_commit_rewritten_away_upstream_is_outdated() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/alpha/SKILL.md", skill("alpha", "Alpha"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "up/alpha", "--platform", "claude"]).ok_json();
    let locked = lock(&proj.dir)["packages"]["alpha"]["source_commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        run_in(&env, &proj.dir, &["outdated"]).ok_json()["packages"][0]["outdated"],
        false
    );

    repo.git(&["commit", "-q", "--amend", "-m", "c1 reworded"]);
    env.json(&["source", "update", "up"]);
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let alpha = &outdated["packages"][0];
    assert_eq!(alpha["outdated"], true, "{outdated}");
    assert!(
        alpha["reason"]
            .as_str()
            .unwrap()
            .contains("no longer in the history `up` follows"),
        "{outdated}"
    );
    run_in(&env, &proj.dir, &["upgrade"]).ok_json();
    let now = lock(&proj.dir)["packages"]["alpha"]["source_commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(now, locked);
    assert!(text(proj.dir.join(".claude/skills/alpha/SKILL.md")).contains("Alpha"));
    assert_eq!(
        run_in(&env, &proj.dir, &["outdated"]).ok_json()["packages"][0]["outdated"],
        false
    );
}

/// An installed skill whose folder moved upstream (renamed, the name in its
/// frontmatter kept) is `gone` with where it went (`moved_to`), and the reason
/// names the commands that follow it; they do.
#[test]
fn an_artifact_moved_upstream_says_where_it_went() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/writing-plans/SKILL.md", skill("writing-plans", "Plans"))
        .write("skills/other/SKILL.md", skill("other", "Other"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    let proj = project(&env);
    run_in(
        &env,
        &proj.dir,
        &["install", "up/writing-plans", "--platform", "claude"],
    )
    .ok_json();
    repo.git(&["mv", "skills/writing-plans", "skills/plan-writing"]);
    repo.commit("c2");
    env.json(&["source", "update", "up"]);

    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let moved = &outdated["packages"][0];
    assert_eq!(moved["gone"], true, "{outdated}");
    assert_eq!(moved["moved_to"], "skills/plan-writing", "{outdated}");
    let reason = moved["reason"].as_str().unwrap();
    assert!(
        reason.contains("`aam uninstall writing-plans`, then `aam install up/skills/plan-writing`"),
        "{reason}"
    );
    run_in(&env, &proj.dir, &["uninstall", "writing-plans"]).ok_json();
    run_in(
        &env,
        &proj.dir,
        &["install", "up/skills/plan-writing", "--platform", "claude"],
    )
    .ok_json();
    let again = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    assert_eq!(again["packages"][0]["gone"], false, "{again}");
    assert!(proj.dir.join(".claude/skills/writing-plans/SKILL.md").is_file());
}

/// An installed source artifact its origin no longer has (removed upstream,
/// or its source removed) is `gone`, not `outdated`: `upgrade` leaves it and
/// says why, exit 0 (it failed every run with AAM_ARTIFACT_NOT_FOUND), and
/// the next step is named.
#[test]
fn an_artifact_gone_from_its_origin_is_left_as_it_is_and_says_so() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/alpha/SKILL.md", skill("alpha", "Alpha"))
        .write("skills/beta/SKILL.md", skill("beta", "Beta"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "up/alpha", "--platform", "claude"]).ok_json();
    repo.remove("skills/alpha/SKILL.md");
    repo.commit("c2");
    env.json(&["source", "update", "up"]);

    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let alpha = &outdated["packages"][0];
    assert_eq!(
        (alpha["outdated"].as_bool(), alpha["gone"].as_bool()),
        (Some(false), Some(true)),
        "{outdated}"
    );
    assert!(
        alpha["reason"].as_str().unwrap().contains("removed upstream"),
        "{outdated}"
    );
    assert_eq!(alpha["moved_to"], Value::Null, "{outdated}");
    assert!(
        alpha["reason"].as_str().unwrap().contains("aam uninstall alpha"),
        "{outdated}"
    );
    let before = tree(&proj.dir);
    let upgraded = run_in(&env, &proj.dir, &["upgrade"]);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    let report = &upgraded.json()["packages"][0];
    assert_eq!(report["status"], "up_to_date", "{report}");
    assert!(
        report["message"].as_str().unwrap().contains("removed upstream"),
        "{report}"
    );
    assert_eq!(tree(&proj.dir), before);
    let human = env.aam_in(&proj.dir, &["upgrade"]);
    assert!(human.stdout.contains("left at"), "{human:?}");

    let removed = env.json(&["source", "remove", "up"]);
    assert_eq!(
        removed["installed_from"],
        json!([format!("`alpha` in `{}`", proj.dir.display())]),
        "{removed}"
    );
    // A source not registered here (removed, or a teammate's install never
    // added on this machine) is unknown, not gone: the reason says how to add
    // it (it said "no longer registered" and suggested `aam uninstall`).
    let outdated = run_in(&env, &proj.dir, &["outdated"]).ok_json();
    let alpha = &outdated["packages"][0];
    assert_eq!(
        (&alpha["gone"], &alpha["unknown"]),
        (&json!(false), &json!(true)),
        "{outdated}"
    );
    let reason = alpha["reason"].as_str().unwrap();
    assert!(
        reason.contains("`aam source add file://")
            && reason.contains(&format!("{} --name up`", repo.path()))
            && !reason.contains("uninstall"),
        "{reason}"
    );
    let upgraded = run_in(&env, &proj.dir, &["upgrade"]);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    assert!(upgraded.stdout.contains("aam source add"), "{upgraded:?}");
    assert_eq!(tree(&proj.dir), before);
}

/// A source removed and added again holds its installs again: the second
/// removal names them, search marks the artifact installed and `source
/// candidates` leaves it out (the first removal took the link with the
/// artifacts, and nothing made it again). So does an install restored from the
/// lock file while the source was not registered. Another repository with an
/// artifact at the same path gets no link, nor does a folder's package whose
/// manifest claims the repository as its origin.
#[test]
fn a_source_added_again_holds_its_installs_again() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/alpha/SKILL.md", skill("alpha", "Alpha"))
        .write("skills/beta/SKILL.md", skill("beta", "Beta"));
    repo.commit("c1");
    let other = env.repo("other");
    other.write("skills/alpha/SKILL.md", skill("alpha", "Another alpha"));
    other.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    let url = &env.query("SELECT url FROM sources WHERE name = 'up'", &[])[0];
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "up/alpha", "--platform", "claude"]).ok_json();
    let from_up = json!([format!("`alpha` in `{}`", proj.dir.display())]);
    assert_eq!(env.json(&["source", "remove", "up"])["installed_from"], from_up);

    // Restored from the lock file while no source of it is registered.
    let restored = env.repo("restored");
    std::fs::create_dir_all(restored.dir.join(".aam")).unwrap();
    std::fs::copy(
        proj.dir.join(".aam/aam-lock.yaml"),
        restored.dir.join(".aam/aam-lock.yaml"),
    )
    .unwrap();
    run_in(&env, &restored.dir, &["install"]).ok_json();
    // A folder's package claiming the repository, installed elsewhere.
    let claims = env.path("claims");
    std::fs::create_dir_all(claims.join("skills/alpha")).unwrap();
    std::fs::write(claims.join("skills/alpha/SKILL.md"), skill("alpha", "Claimed")).unwrap();
    std::fs::write(
        claims.join("aam.yaml"),
        format!(
            "name: claims\nversion: 1.0.0\ndescription: Claims a repository\nartifacts:\n  skills:\n    - {{name: alpha, path: skills/alpha}}\nprovenance:\n  source_type: remote_git\n  source_url: {url}\n"
        ),
    )
    .unwrap();
    let third = env.repo("third");
    run_in(
        &env,
        &third.dir,
        &["install", claims.to_str().unwrap(), "--platform", "claude"],
    )
    .ok_json();

    env.json(&["source", "add", other.path(), "--name", "other"]);
    env.json(&["source", "add", repo.path(), "--name", "again"]);
    let found = run_in(&env, &proj.dir, &["search", "alpha"]).ok_json();
    let installed: Vec<(&str, &Value)> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["qualified_name"].as_str().unwrap(), &r["installed"]))
        .collect();
    assert_eq!(
        installed,
        [("again/alpha", &json!(true)), ("other/alpha", &json!(false))],
        "{found}"
    );
    let candidates = env.json(&["source", "candidates"]);
    let paths: Vec<String> = candidates["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source_type"] == "remote_git")
        .map(|c| format!("{}/{}", c["source"].as_str().unwrap(), c["path"].as_str().unwrap()))
        .collect();
    assert_eq!(paths, ["other/skills/alpha", "again/skills/beta"], "{candidates}");
    assert_eq!(env.json(&["source", "remove", "other"])["installed_from"], json!([]));
    let both = json!([
        format!("`alpha` in `{}`", proj.dir.display()),
        format!("`alpha` in `{}`", restored.dir.display())
    ]);
    assert_eq!(env.json(&["source", "remove", "again"])["installed_from"], both);
}

/// A platform that takes none of a package's artifact types gets nothing, and
/// the install says so (it was listed as deployed to with no word).
#[test]
fn platforms_that_take_none_of_a_package_are_named() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write(
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews changes\n---\nYou review changes.\n",
    );
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "up"]);
    let proj = project(&env);
    let args = [
        "install",
        "up/reviewer",
        "--platform",
        "claude",
        "--platform",
        "zencoder",
    ];
    let installed = run_in(&env, &proj.dir, &args).ok_json();
    assert_eq!(
        installed["installed"][0]["nothing_for"],
        json!(["zencoder"]),
        "{installed}"
    );
    // Where it went is said too, as the `skills` CLI does.
    assert_eq!(
        installed["installed"][0]["deployed_to"],
        json!([".claude/agents/reviewer.md"]),
        "{installed}"
    );
    let mut again = args.to_vec();
    again.push("--force");
    let human = env.aam_in(&proj.dir, &again);
    assert!(human.stdout.contains("nothing deployed for zencoder"), "{human:?}");
    assert!(human.stdout.contains("  -> .claude/agents/reviewer.md\n"), "{human:?}");
    // A comma list names several, as `default_platforms` takes them.
    let listed = run_in(
        &env,
        &proj.dir,
        &["install", "up/reviewer", "--platform", "claude, cursor", "--dry-run"],
    )
    .ok_json();
    assert_eq!(
        listed["installed"][0]["platforms"],
        json!(["claude", "cursor"]),
        "{listed}"
    );
}

/// A package folder kept under `.aam/packages/` is never installed from (it
/// would be its own copy, and an uninstall would delete the only one), and a
/// file there that no lock entry records is replaced only when it already
/// holds the bytes written (found by a re-test helper: the user's package
/// source was deleted by its uninstall).
#[test]
fn a_package_under_the_copy_folder_is_neither_installed_from_nor_overwritten() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&proj.dir.join(".aam/packages/team-kit"), "team-kit", "1.0.0", &[]);
    std::fs::write(kit.join("NOTES.md"), "# my notes\n").unwrap();
    let before = tree(&proj.dir);
    let err = run_in(
        &env,
        &proj.dir,
        &["install", "./.aam/packages/team-kit", "--platform", "claude"],
    )
    .err("AAM_FORBIDDEN");
    assert!(
        err["hint"].as_str().unwrap().contains("outside `.aam/packages/`"),
        "{err}"
    );
    assert_eq!(tree(&proj.dir), before);
    // The same package from a folder of its own: the files under the copy
    // folder hold other bytes, so they are in the way.
    let elsewhere = package(&env.path("team-kit-2"), "team-kit", "2.0.0", &[]);
    run_in(
        &env,
        &proj.dir,
        &["install", elsewhere.to_str().unwrap(), "--platform", "claude"],
    )
    .err("AAM_CONFLICT");
    assert_eq!(tree(&proj.dir), before);
}

/// Earlier versions of aam put a Codex agent in a section of `AGENTS.md`,
/// which Codex reads as its own instructions. A lock file recording one there
/// restores as it is (`--frozen` too: a committed lock keeps working);
/// installing the package again moves the agent to `.codex/agents/` and takes
/// the section out, and an edited section keeps the package as it is until
/// `--backup` saves it.
#[test]
fn a_codex_agent_recorded_in_agents_md_restores_there_and_moves_on_install() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    let install = ["install", kit, "--platform", "codex"];
    run_in(&env, &proj.dir, &install).ok_json();

    // The lock file as an earlier aam wrote it: the agent as a section.
    let (toml_key, section_key) = (".codex/agents/kit-agent.toml", "AGENTS.md#kit-agent agent");
    let section_text = "You are the kit agent, version 1.0.0.\n";
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    let digest = blake3::hash(section_text.as_bytes()).to_hex().to_string();
    recorded_at(&mut locked["packages"]["kit"], toml_key, section_key, Some(&digest));
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    std::fs::remove_file(proj.dir.join(toml_key)).unwrap();
    let old_lock = text(&lock_path);

    // A restore puts the agent where the lock says, and leaves the lock as it is.
    let restored = run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(restored["installed"][0]["name"], "kit", "{restored}");
    assert_eq!(
        section(&text(proj.dir.join("AGENTS.md")), "kit-agent", "agent"),
        section_text.trim_end()
    );
    assert!(!proj.dir.join(toml_key).exists());
    assert_eq!(text(&lock_path), old_lock);
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);

    // An edited section keeps the package as it is.
    let agents_md = proj.dir.join("AGENTS.md");
    let edited = text(&agents_md).replace("version 1.0.0.", "version 1.0.0, and mine.");
    std::fs::write(&agents_md, &edited).unwrap();
    let kept = run_in(&env, &proj.dir, &install).json();
    assert_eq!(kept["skipped"][0]["reason"], "edited_files", "{kept}");
    assert_eq!(text(&agents_md), edited);
    assert_eq!(text(&lock_path), old_lock);

    // `--backup` saves the edit, then the agent moves out of AGENTS.md.
    let mut backup = install.to_vec();
    backup.push("--backup");
    let moved = run_in(&env, &proj.dir, &backup).ok_json();
    let saved = moved["installed"][0]["backup_dir"].as_str().expect("a backup folder");
    assert!(
        tree(Path::new(saved))
            .values()
            .any(|bytes| String::from_utf8_lossy(bytes).contains("and mine")),
        "the edit is saved: {moved}"
    );
    let agents = text(&agents_md);
    assert!(!agents.contains("kit-agent"), "{agents}");
    assert!(agents.contains("Prefer small functions"), "the rules stay: {agents}");
    let agent: toml::Table = text(proj.dir.join(toml_key)).parse().unwrap();
    assert_eq!(agent["name"].as_str(), Some("kit-agent"));
    let locked = lock(&proj.dir);
    let targets: Vec<&str> = locked["packages"]["kit"]["deployed"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|d| d["target"].as_str().unwrap())
        .collect();
    assert!(
        targets.contains(&toml_key) && !targets.contains(&section_key),
        "{targets:?}"
    );
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);
}

/// Unedited, what an earlier aam wrote for Codex (the agent as a section of
/// `~/.codex/AGENTS.md`, the skill in `~/.codex/skills/`) restores where the
/// lock says and is simply moved by an install.
#[test]
fn unedited_codex_artifacts_at_former_places_move_without_asking() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    let install = ["install", kit, "--platform", "codex", "-g"];
    run_in(&env, &proj.dir, &install).ok_json();
    let home = env.user_home();
    let (toml_key, section_key) = ("~/.codex/agents/kit-agent.toml", "~/.codex/AGENTS.md#kit-agent agent");
    let (skill_now, skill_then) = ("~/.agents/skills/kit-skill", "~/.codex/skills/kit-skill");
    let section_text = "You are the kit agent, version 1.0.0.\n";
    // The lock file as an earlier aam wrote it, and nothing on disk.
    let lock_path = home.join(".aam/aam-lock.yaml");
    let mut locked = lock(&home);
    let entry = &mut locked["packages"]["kit"];
    let digest = blake3::hash(section_text.as_bytes()).to_hex().to_string();
    recorded_at(entry, toml_key, section_key, Some(&digest));
    recorded_at(entry, skill_now, skill_then, None);
    let moved_files = entry["file_checksums"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter(|key| key.as_str().unwrap().starts_with(skill_then))
        .count();
    assert_eq!(moved_files, 2, "the skill and its script");
    // The folders it made were Codex's, not `~/.agents`.
    let made: Vec<serde_yaml_ng::Value> = entry["created_dirs"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|dir| match dir.as_str().unwrap() {
            "~/.agents" => None,
            dir => Some(dir.replace("~/.agents/skills", "~/.codex/skills").into()),
        })
        .collect();
    assert!(made.iter().any(|dir| dir.as_str() == Some(skill_then)), "{made:?}");
    entry["created_dirs"] = made.into();
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    std::fs::remove_file(home.join(".codex/agents/kit-agent.toml")).unwrap();
    std::fs::remove_dir_all(home.join(".agents/skills/kit-skill")).unwrap();
    let old_lock = text(&lock_path);

    run_in(&env, &proj.dir, &["install", "--frozen", "-g"]).ok_json();
    assert!(text(home.join(".codex/AGENTS.md")).contains("You are the kit agent"));
    assert!(home.join(".codex/skills/kit-skill/scripts/run.sh").is_file());
    assert!(!home.join(".agents/skills/kit-skill").exists());
    assert_eq!(text(&lock_path), old_lock);
    // The inventory still finds it there, as installed.
    let inventory = run_in(&env, &proj.dir, &["inventory", "-g"]).ok_json();
    let found = inventory["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["location"] == skill_then)
        .unwrap_or_else(|| panic!("{inventory:#}"));
    assert_eq!(found["status"], "installed", "{found:#}");

    let moved = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(moved["installed"][0]["name"], "kit", "{moved}");
    assert!(!text(home.join(".codex/AGENTS.md")).contains("kit-agent"));
    assert!(home.join(".codex/agents/kit-agent.toml").is_file());
    assert!(home.join(".agents/skills/kit-skill/SKILL.md").is_file());
    assert!(
        !home.join(".codex/skills").exists(),
        "the folder the install made goes with it"
    );
    assert_eq!(
        run_in(&env, &proj.dir, &["verify", "kit", "-g"]).ok_json()["is_clean"],
        true
    );
    // Installed where the table says, it is already installed.
    let again = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(again["skipped"][0]["reason"], "already_installed", "{again}");
}

/// In the lock entry `entry`, what lies at `now` (a file, or a folder and
/// the files in it) as an older aam recorded it at `then`, its digest
/// replaced by `digest` (the bytes that aam wrote there) when given.
fn recorded_at(entry: &mut serde_yaml_ng::Value, now: &str, then: &str, digest: Option<&str>) {
    let checksums = entry["file_checksums"].as_mapping_mut().unwrap();
    let moved: Vec<(serde_yaml_ng::Value, serde_yaml_ng::Value)> = checksums
        .iter()
        .filter(|(key, _)| {
            key.as_str()
                .is_some_and(|k| k == now || k.starts_with(&format!("{now}/")))
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    assert!(!moved.is_empty(), "nothing recorded at {now}: {checksums:?}");
    for (key, value) in moved {
        checksums.remove(&key);
        let value = digest.map_or(value, Into::into);
        checksums.insert(key.as_str().unwrap().replacen(now, then, 1).into(), value);
    }
    for deployment in entry["deployed"].as_sequence_mut().unwrap() {
        if deployment["target"].as_str() == Some(now) {
            deployment["target"] = then.into();
        }
    }
}

/// Cursor's agents were rules (`.cursor/rules/agent-<n>.mdc`, in the
/// `cursor-rule` format) and its prompts lived in `.cursor/prompts/`: a lock
/// file recording them there restores them there in that format, an install
/// moves them to `.cursor/agents/` and `.cursor/commands/`, and a file of the
/// user's at such a place is neither listed nor touched.
#[test]
fn cursor_agents_and_prompts_at_former_places_restore_as_recorded_and_move() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    let install = ["install", kit, "--platform", "cursor"];
    run_in(&env, &proj.dir, &install).ok_json();
    let agent_text = text(kit.to_string() + "/agents/kit-agent.md");
    let as_rule = aam::deploy::render(aam::agents::Format::CursorRule, "kit-agent", &agent_text);
    let digest = blake3::hash(as_rule.as_bytes()).to_hex().to_string();
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    let entry = &mut locked["packages"]["kit"];
    let (agent_now, agent_then) = (".cursor/agents/kit-agent.md", ".cursor/rules/agent-kit-agent.mdc");
    let (prompt_now, prompt_then) = (".cursor/commands/kit-prompt.md", ".cursor/prompts/kit-prompt.md");
    recorded_at(entry, agent_now, agent_then, Some(&digest));
    recorded_at(entry, prompt_now, prompt_then, None);
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    std::fs::remove_dir_all(proj.dir.join(".cursor/agents")).unwrap();
    std::fs::remove_dir_all(proj.dir.join(".cursor/commands")).unwrap();
    proj.write(".cursor/prompts/mine.md", "My own prompt.\n");
    // A rule of the user's that reads like a former agent: Cursor reads it as a rule.
    proj.write(".cursor/rules/agent-style.mdc", "---\ndescription: Style\n---\nTabs.\n");
    let recorded = text(&lock_path);

    run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(text(proj.dir.join(agent_then)), as_rule, "in the format it had");
    assert!(proj.dir.join(prompt_then).is_file());
    assert_eq!(text(&lock_path), recorded);
    let inventory = run_in(&env, &proj.dir, &["inventory"]).ok_json();
    let listed: Vec<&str> = inventory["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["location"].as_str().unwrap())
        .collect();
    assert!(
        listed.contains(&agent_then) && listed.contains(&prompt_then),
        "{listed:?}"
    );
    assert!(
        !listed.contains(&".cursor/prompts/mine.md"),
        "nobody reads it there: {listed:?}"
    );
    assert!(listed.contains(&".cursor/rules/agent-style.mdc"), "{listed:?}");

    run_in(&env, &proj.dir, &install).ok_json();
    assert!(!proj.dir.join(agent_then).exists() && !proj.dir.join(prompt_then).exists());
    let agent = text(proj.dir.join(agent_now));
    assert!(
        agent.contains("name: kit-agent") && agent.contains("You are the kit agent"),
        "{agent}"
    );
    assert!(proj.dir.join(prompt_now).is_file());
    assert_eq!(text(proj.dir.join(".cursor/prompts/mine.md")), "My own prompt.\n");
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);
}

/// OpenCode agents were copied as they are (and OpenCode refused every agent
/// when one had a Claude `tools` list); now they are `opencode-agent`. A lock
/// file recording the copy restores it byte for byte.
#[test]
fn an_opencode_agent_copied_as_it_was_restores_as_recorded() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    run_in(&env, &proj.dir, &["install", kit, "--platform", "opencode"]).ok_json();
    let key = ".opencode/agents/kit-agent.md";
    let written = text(proj.dir.join(key));
    assert!(written.contains("mode: subagent"), "{written}");
    let copied = text(kit.to_string() + "/agents/kit-agent.md");
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    let digest = blake3::hash(copied.as_bytes()).to_hex().to_string();
    recorded_at(&mut locked["packages"]["kit"], key, key, Some(&digest));
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    std::fs::remove_file(proj.dir.join(key)).unwrap();
    run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(text(proj.dir.join(key)), copied);
}

/// Cursor agents were `named-agent` files, which kept a Claude Code model alias
/// Cursor has no model for; now they are `cursor-agent`, without it. A lock
/// file recording the earlier rendering restores it byte for byte, and an
/// install renders anew.
#[test]
fn a_cursor_agent_leaves_out_a_claude_model_and_restores_as_recorded() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let source = "---\ndescription: kit agent\nmodel: sonnet\n---\nYou are the kit agent.\n";
    std::fs::write(kit.join("agents/kit-agent.md"), source).unwrap();
    let kit = kit.to_str().unwrap();
    run_in(&env, &proj.dir, &["install", kit, "--platform", "cursor"]).ok_json();
    let key = ".cursor/agents/kit-agent.md";
    let written = text(proj.dir.join(key));
    assert_eq!(
        written,
        "---\ndescription: kit agent\nname: kit-agent\n---\n\nYou are the kit agent.\n"
    );

    let former = aam::deploy::render(aam::agents::Format::NamedAgent, "kit-agent", source);
    assert!(former.contains("model: sonnet"), "{former}");
    let mut locked = lock(&proj.dir);
    let digest = blake3::hash(former.as_bytes()).to_hex().to_string();
    recorded_at(&mut locked["packages"]["kit"], key, key, Some(&digest));
    std::fs::write(
        proj.dir.join(".aam/aam-lock.yaml"),
        serde_yaml_ng::to_string(&locked).unwrap(),
    )
    .unwrap();
    std::fs::remove_file(proj.dir.join(key)).unwrap();
    run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(text(proj.dir.join(key)), former);
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);

    run_in(&env, &proj.dir, &["install", kit, "--platform", "cursor", "--force"]).ok_json();
    assert_eq!(text(proj.dir.join(key)), written);
}

/// A rule limited to `**/*.rs` (Cursor's `globs`) keeps that scope on agents
/// that read other keys (Windsurf, Kiro, Cline) and, as a sentence, in the
/// section of `CLAUDE.md`, which no agent reads keys from. A lock file an
/// older aam wrote, which copied the rule without its scope, restores as it
/// records (`--frozen`); an install writes the scope.
#[test]
fn a_scoped_rule_keeps_its_scope_on_every_agent_and_an_older_lock_restores_as_recorded() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    let install = ["install", kit, "--platform", "claude,windsurf,kiro,cline"];
    run_in(&env, &proj.dir, &install).ok_json();
    let (windsurf, kiro, cline) = (
        ".windsurf/rules/kit-rules.md",
        ".kiro/steering/kit-rules.md",
        ".clinerules/kit-rules.md",
    );
    let written: Vec<String> = [windsurf, kiro, cline]
        .iter()
        .map(|key| text(proj.dir.join(key)))
        .collect();
    assert!(written[0].contains("trigger: glob\n"), "{}", written[0]);
    assert!(
        written[1].contains("\ninclusion: fileMatch\nfileMatchPattern: '**/*.rs'\n"),
        "{}",
        written[1]
    );
    assert!(written[2].contains("paths:\n- '**/*.rs'\n"), "{}", written[2]);
    let scoped = text(proj.dir.join("CLAUDE.md"));
    let sentence = "Apply the `kit-rules` rule below only when working on files matching `**/*.rs`.";
    assert!(
        scoped.contains(&format!("instruction -->\n{sentence}\n\nPrefer")),
        "{scoped}"
    );

    // The lock file as an older aam wrote it: the rule copied as it is, and
    // the section holding its body alone.
    let source = text(format!("{kit}/instructions/kit-rules.md"));
    let body = "Prefer small functions (1.0.0).\n";
    let digest = |text: &str| blake3::hash(text.as_bytes()).to_hex().to_string();
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    let entry = &mut locked["packages"]["kit"];
    for key in [windsurf, kiro, cline] {
        recorded_at(entry, key, key, Some(&digest(&source)));
        std::fs::remove_file(proj.dir.join(key)).unwrap();
    }
    let section = "CLAUDE.md#kit-rules instruction";
    recorded_at(entry, section, section, Some(&digest(body)));
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    std::fs::remove_file(proj.dir.join("CLAUDE.md")).unwrap();
    let recorded = text(&lock_path);

    run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(text(&lock_path), recorded);
    for key in [windsurf, kiro, cline] {
        assert_eq!(text(proj.dir.join(key)), source, "{key} as recorded");
    }
    assert_eq!(
        text(proj.dir.join("CLAUDE.md")),
        format!("<!-- BEGIN AAM: kit-rules instruction -->\n{body}<!-- END AAM: kit-rules instruction -->\n")
    );
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);

    // Installing again writes the scope where nothing was edited.
    run_in(&env, &proj.dir, &install).ok_json();
    for (key, now) in [windsurf, kiro, cline].iter().zip(&written) {
        assert_eq!(text(proj.dir.join(key)), *now, "{key}");
    }
    assert_eq!(text(proj.dir.join("CLAUDE.md")), scoped);
    assert_eq!(run_in(&env, &proj.dir, &["verify", "kit"]).ok_json()["is_clean"], true);
}

/// Gemini CLI took no agents when an older aam wrote this lock file: a
/// restore deploys only what the lock records (`--frozen` passes, the lock
/// stays as it is), and an install of the package adds the agent.
#[test]
fn a_lock_from_before_an_agent_took_a_type_restores_as_it_is() {
    let env = TestEnv::new();
    let proj = project(&env);
    let kit = package(&env.path("kit"), "kit", "1.0.0", &[]);
    let kit = kit.to_str().unwrap();
    let install = ["install", kit, "--platform", "gemini-cli"];
    run_in(&env, &proj.dir, &install).ok_json();
    let key = ".gemini/agents/kit-agent.md";
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let mut locked = lock(&proj.dir);
    let entry = &mut locked["packages"]["kit"];
    entry["file_checksums"]
        .as_mapping_mut()
        .unwrap()
        .remove(key)
        .expect("recorded");
    entry["deployed"]
        .as_sequence_mut()
        .unwrap()
        .retain(|d| d["target"].as_str() != Some(key));
    std::fs::write(&lock_path, serde_yaml_ng::to_string(&locked).unwrap()).unwrap();
    std::fs::remove_dir_all(proj.dir.join(".gemini/agents")).unwrap();
    std::fs::remove_file(proj.dir.join("GEMINI.md")).unwrap();
    let recorded = text(&lock_path);

    run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert!(
        proj.dir.join("GEMINI.md").is_file(),
        "what the lock records is restored"
    );
    assert!(!proj.dir.join(key).exists(), "and nothing else");
    assert_eq!(text(&lock_path), recorded);

    let added = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(added["installed"][0]["name"], "kit", "not already installed: {added}");
    let agent = text(proj.dir.join(key));
    assert!(
        agent.starts_with("---\nname: kit-agent\ndescription: kit agent\n---\n"),
        "{agent}"
    );
    let again = run_in(&env, &proj.dir, &install).ok_json();
    assert_eq!(again["skipped"][0]["reason"], "already_installed", "{again}");
}

/// A restore whose recorded commit the repository no longer has names the
/// package and the commit, and the install that takes what it has now (it
/// said only "not found", with a hint to pass `--ref`, an option of
/// `source add`: found by a user helper).
#[test]
fn a_restore_of_a_commit_the_repository_lost_names_the_package() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "upstream/pdf", "--platform", "claude"]).ok_json();
    let lock_file = proj.dir.join(".aam/aam-lock.yaml");
    let head = lock(&proj.dir)["packages"]["pdf"]["source_commit"]
        .as_str()
        .unwrap()
        .to_string();
    let text = std::fs::read_to_string(&lock_file)
        .unwrap()
        .replace(&head, &"1".repeat(40));
    std::fs::write(&lock_file, text).unwrap();
    std::fs::remove_dir_all(proj.dir.join(".claude/skills/pdf")).unwrap();
    let lost = run_in(&env, &proj.dir, &["install", "--frozen"]).err("AAM_GIT_REF_NOT_FOUND");
    let message = lost["message"].as_str().unwrap();
    assert!(message.contains("`pdf`") && message.contains("111111111111"), "{lost}");
    let hint = lost["hint"].as_str().unwrap();
    assert!(hint.contains("`aam install upstream/skills/pdf --force`"), "{lost}");
    run_in(&env, &proj.dir, &["install", "upstream/skills/pdf", "--force"]).ok_json();
    assert!(proj.dir.join(".claude/skills/pdf/SKILL.md").is_file());
}

/// The commands on an installed package take the `source/artifact` it was
/// installed as, by name or path, as `install` does (they said "not
/// installed"), and a mistyped name gets the closest (the hint listed every
/// installed package: found by a user helper).
#[test]
fn installed_source_artifacts_are_named_as_they_were_installed() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "upstream/pdf", "--platform", "claude"]).ok_json();
    for given in ["upstream/pdf", "upstream/skills/pdf"] {
        let verified = run_in(&env, &proj.dir, &["verify", given]).ok_json();
        assert_eq!(verified["package_name"], "pdf", "{verified}");
        run_in(&env, &proj.dir, &["diff", given]).ok_json();
    }
    run_in(&env, &proj.dir, &["upgrade", "upstream/pdf"]).ok_json();
    let typo = run_in(&env, &proj.dir, &["verify", "pfd"]).err("AAM_PACKAGE_NOT_INSTALLED");
    assert!(
        typo["hint"].as_str().unwrap().starts_with("did you mean `pdf`?"),
        "{typo}"
    );
    let other = run_in(&env, &proj.dir, &["verify", "elsewhere/pdf"]).err("AAM_PACKAGE_NOT_INSTALLED");
    assert!(other["message"].as_str().unwrap().contains("elsewhere/pdf"), "{other}");
    let removed = run_in(&env, &proj.dir, &["uninstall", "upstream/skills/pdf"]).ok_json();
    assert_eq!(removed["removed"], "pdf", "{removed}");
    assert!(!proj.dir.join(".claude/skills/pdf").exists());
}
