//! Inventory and adoption: skills copied by hand from a source (an old commit
//! and the current one) into several agents' folders are listed with their
//! origin and commit, and once adopted, verify, outdated and upgrade work on
//! them; an edited copy is adopted as the version it was modified from and
//! verify reports the edit.

use std::path::Path;

use serde_json::Value;

use crate::install::{lock, project, run_in};
use crate::support::{Repo, TestEnv, skill};

/// Copies every file of `from` into `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// The inventory row at `location`.
fn row<'v>(inventory: &'v Value, location: &str) -> &'v Value {
    inventory["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["location"] == location)
        .unwrap_or_else(|| panic!("no artifact at {location}: {inventory:#}"))
}

/// Source `upstream` at three commits: pdf v1 (c1), pdf v2 (c2), docx and
/// xlsx changed (c3). Returns the repository and the commits.
fn upstream(env: &TestEnv) -> (Repo, [String; 3]) {
    let repo = env.repo("upstream");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v1"))
        .write("skills/pdf/scripts/fill.sh", "#!/bin/sh\necho fill\n")
        .write("skills/docx/SKILL.md", skill("docx", "DOCX v1"))
        .write("skills/xlsx/SKILL.md", skill("xlsx", "XLSX v1"))
        .write("skills/xlsx/reference.md", "# Formulas\n\nSUM, AVERAGE.\n");
    let c1 = repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "upstream"]);
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v2"));
    let c2 = repo.commit("c2");
    env.json(&["source", "update", "upstream"]);
    repo.write("skills/docx/SKILL.md", skill("docx", "DOCX v2"))
        .write("skills/xlsx/SKILL.md", skill("xlsx", "XLSX v2"));
    let c3 = repo.commit("c3");
    env.json(&["source", "update", "upstream"]);
    (repo, [c1, c2, c3])
}

/// A copy sharing less than half of a version's files is given no origin:
/// adopting it wrote the whole version (a private skill's other files)
/// into the project's package copy (found by an attacker helper).
#[test]
fn a_copy_sharing_one_file_of_three_has_no_origin() {
    let env = TestEnv::new();
    let private = env.repo("private");
    private
        .write("skills/secret/SKILL.md", skill("secret", "Private"))
        .write("skills/secret/config.env", "API_TOKEN=not-for-you\n")
        .write("skills/secret/helper.py", "print('help')\n");
    private.commit("c1");
    env.json(&["source", "add", private.path(), "--name", "priv"]);
    let proj = project(&env);
    let planted = proj.dir.join(".claude/skills/secret");
    std::fs::create_dir_all(&planted).unwrap();
    std::fs::write(planted.join("SKILL.md"), skill("secret", "Planted")).unwrap();
    std::fs::copy(private.dir.join("skills/secret/helper.py"), planted.join("helper.py")).unwrap();

    let inventory = run_in(&env, &proj.dir, &["inventory"]).ok_json();
    assert_eq!(
        row(&inventory, ".claude/skills/secret")["origin"],
        Value::Null,
        "{inventory:#}"
    );
    let adopted = run_in(&env, &proj.dir, &["adopt", "--all"]).ok_json();
    assert_eq!(adopted["adopted"], serde_json::json!([]), "{adopted:#}");
    assert!(!proj.dir.join(".aam/packages/secret").exists());
}

#[test]
fn copies_made_by_hand_are_identified_adopted_and_verified() {
    let env = TestEnv::new();
    let (repo, [c1, _c2, c3]) = upstream(&env);
    let skills = repo.dir.join("skills");
    // pdf as it was at c1 (the history keeps it after the update replaced it).
    let old_pdf = env.path("old-pdf");
    copy_dir(&skills.join("pdf"), &old_pdf);
    std::fs::write(old_pdf.join("SKILL.md"), skill("pdf", "PDF v1")).unwrap();

    let proj = project(&env);
    let dir = proj.dir.clone();
    copy_dir(&old_pdf, &dir.join(".claude/skills/pdf"));
    copy_dir(&skills.join("docx"), &dir.join(".claude/skills/docx"));
    copy_dir(&skills.join("docx"), &dir.join(".agents/skills/docx"));
    copy_dir(&skills.join("xlsx"), &dir.join(".cursor/skills/xlsx"));
    std::fs::write(
        dir.join(".cursor/skills/xlsx/SKILL.md"),
        skill("xlsx", "XLSX v2, edited here"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join(".claude/skills/mine")).unwrap();
    std::fs::write(dir.join(".claude/skills/mine/SKILL.md"), skill("mine", "Mine")).unwrap();

    let inventory = run_in(&env, &dir, &["inventory"]).ok_json();
    assert_eq!(inventory["truncated"], false);
    let pdf = row(&inventory, ".claude/skills/pdf");
    assert_eq!(pdf["status"], "untracked");
    assert_eq!(pdf["origin"]["artifact"], "upstream/skills/pdf");
    assert_eq!(pdf["origin"]["commit"], c1.as_str());
    assert_eq!(pdf["origin"]["match"], "exact");
    assert_eq!(pdf["origin"]["current"], false);
    assert_eq!(pdf["origin"]["behind_commits"], 2, "{pdf:#}");
    for location in [".claude/skills/docx", ".agents/skills/docx"] {
        let docx = row(&inventory, location);
        assert_eq!(docx["origin"]["artifact"], "upstream/skills/docx");
        assert_eq!(docx["origin"]["commit"], c3.as_str());
        assert_eq!(docx["origin"]["match"], "exact");
        assert_eq!(docx["origin"]["current"], true);
        assert_eq!(docx["origin"]["behind_commits"], 0);
    }
    assert!(
        row(&inventory, ".agents/skills/docx")["platforms"]
            .as_array()
            .unwrap()
            .len()
            > 1,
        "the shared folder is read by several agents"
    );
    let xlsx = row(&inventory, ".cursor/skills/xlsx");
    assert_eq!(xlsx["origin"]["artifact"], "upstream/skills/xlsx");
    assert_eq!(xlsx["origin"]["match"], "modified");
    assert_eq!(xlsx["origin"]["shared_files"], 1);
    assert_eq!(xlsx["origin"]["commit"], c3.as_str(), "the current version on a tie");
    let mine = row(&inventory, ".claude/skills/mine");
    assert_eq!(
        (&mine["status"], &mine["origin"]),
        (&Value::from("untracked"), &Value::Null)
    );

    // The human table names the origins too.
    let table = env.aam_in(&dir, &["inventory"]);
    assert_eq!(table.code, 0, "{table:?}");
    assert!(table.stdout.contains("upstream/skills/pdf @ "), "{}", table.stdout);
    assert!(table.stdout.contains("2 commits behind"), "{}", table.stdout);
    assert!(
        table.stdout.contains("modified from upstream/skills/xlsx"),
        "{}",
        table.stdout
    );

    let before: Vec<u8> = std::fs::read(dir.join(".claude/skills/pdf/SKILL.md")).unwrap();
    let adopted = run_in(&env, &dir, &["adopt", "pdf", "docx"]).ok_json();
    let packages: Vec<&str> = adopted["adopted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["package"].as_str().unwrap())
        .collect();
    assert_eq!(packages, ["docx", "pdf"], "{adopted:#}");
    let docx = &adopted["adopted"][0];
    assert_eq!(
        docx["locations"],
        serde_json::json!([".agents/skills/docx", ".claude/skills/docx"])
    );
    assert_eq!(std::fs::read(dir.join(".claude/skills/pdf/SKILL.md")).unwrap(), before);
    for package in ["pdf", "docx"] {
        let verify = run_in(&env, &dir, &["verify", package]).ok_json();
        assert_eq!(verify["is_clean"], true, "{verify:#}");
    }
    let recorded = lock(&dir);
    assert_eq!(recorded["packages"]["pdf"]["source_commit"].as_str(), Some(c1.as_str()));
    assert_eq!(
        recorded["packages"]["pdf"]["requested"].as_str(),
        Some("upstream/skills/pdf")
    );

    // The lock entry is the one an install of the artifact writes.
    let other = env.repo("other");
    run_in(
        &env,
        &other.dir,
        &["install", "upstream/skills/docx", "--platform", "claude"],
    )
    .ok_json();
    let installed = &lock(&other.dir)["packages"]["docx"];
    for field in [
        "version",
        "checksum",
        "source",
        "source_name",
        "source_commit",
        "source_url",
        "artifacts",
        "requested",
    ] {
        assert_eq!(recorded["packages"]["docx"][field], installed[field], "{field}");
    }

    // Installed now: the inventory says so.
    let inventory = run_in(&env, &dir, &["inventory"]).ok_json();
    let pdf = row(&inventory, ".claude/skills/pdf");
    assert_eq!(
        (&pdf["status"], &pdf["package"]),
        (&Value::from("installed"), &Value::from("pdf"))
    );

    // Outdated and upgrade work on the adopted old version.
    let outdated = run_in(&env, &dir, &["outdated"]).ok_json();
    let names: Vec<&str> = outdated["packages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["outdated"] == true)
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["pdf"], "{outdated:#}");
    run_in(&env, &dir, &["upgrade", "pdf"]).ok_json();
    assert!(
        std::fs::read_to_string(dir.join(".claude/skills/pdf/SKILL.md"))
            .unwrap()
            .contains("PDF v2")
    );

    // The edited copy is adopted as the version it came from; verify shows the edit.
    let adopted = run_in(&env, &dir, &["adopt", ".cursor/skills/xlsx"]).ok_json();
    assert_eq!(adopted["adopted"][0]["match"], "modified", "{adopted:#}");
    let verify = run_in(&env, &dir, &["verify", "xlsx"]);
    assert_eq!(verify.code, 1, "{verify:?}");
    assert_eq!(
        verify.json()["modified_files"],
        serde_json::json!([".cursor/skills/xlsx/SKILL.md"])
    );

    // Nothing left to adopt but the unknown one, which is reported, not adopted.
    let rest = run_in(&env, &dir, &["adopt", "--all"]).ok_json();
    assert_eq!(rest["adopted"], serde_json::json!([]));
    assert_eq!(rest["skipped"][0]["reason"], "no_origin", "{rest:#}");
    // Named, it is a request refused: exit 1 (it exited 0 having adopted nothing).
    let named = run_in(&env, &dir, &["adopt", "mine"]);
    assert_eq!(named.code, 1, "{named:?}");
    assert_eq!(named.json()["skipped"][0]["reason"], "no_origin", "{named:?}");
    run_in(&env, &dir, &["adopt", "ghost"]).err("AAM_ARTIFACT_NOT_FOUND");
}

#[test]
fn adopt_and_inventory_work_through_tool_call() {
    let env = TestEnv::new();
    let (repo, _) = upstream(&env);
    let proj = project(&env);
    copy_dir(&repo.dir.join("skills/docx"), &proj.dir.join(".claude/skills/docx"));
    let inventory = run_in(&env, &proj.dir, &["tool", "call", "aam_inventory", "{}"]).ok_json();
    assert_eq!(row(&inventory, ".claude/skills/docx")["origin"]["match"], "exact");
    let adopted = run_in(&env, &proj.dir, &["tool", "call", "aam_adopt", r#"{"all": true}"#]).ok_json();
    assert_eq!(adopted["adopted"][0]["package"], "docx", "{adopted:#}");
    let verify = run_in(&env, &proj.dir, &["verify", "docx"]).ok_json();
    assert_eq!(verify["is_clean"], true, "{verify:#}");
}

/// A Cursor rule and a Claude agent whose frontmatter already holds what their
/// agent reads are deployed byte for byte, so a copy made by hand is adopted as
/// installed (it was adopted as edited); a lock file an older aam wrote, which
/// records the frontmatter written again, still restores as it records.
#[test]
fn rules_and_agents_that_need_no_change_are_deployed_as_written() {
    use crate::install::text;
    let env = TestEnv::new();
    let repo = env.repo("rules");
    let rule = "---\ndescription: \"Next.js rules\"\nglobs: **/*.tsx, **/*.ts\nalwaysApply: false\n---\n# Next.js\n\nUse the app router.\n";
    let agent = "---\nname: sql-pro\ndescription: 'Writes SQL'\ntools: Read, Grep\n---\nYou write SQL.\n";
    repo.write("rules/nextjs.mdc", rule).write("agents/sql-pro.md", agent);
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--name", "rules"]);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "rules/nextjs", "--platform", "cursor"]).ok_json();
    run_in(&env, &proj.dir, &["install", "rules/sql-pro", "--platform", "claude"]).ok_json();
    assert_eq!(text(proj.dir.join(".cursor/rules/nextjs.mdc")), rule);
    assert_eq!(text(proj.dir.join(".claude/agents/sql-pro.md")), agent);

    // Copied by hand into another project: adopted, then as installed.
    let other = env.repo("other");
    other.write(".cursor/rules/nextjs.mdc", rule);
    let adopted = run_in(&env, &other.dir, &["adopt", "--all"]).ok_json();
    assert_eq!(adopted["adopted"][0]["match"], "exact", "{adopted}");
    let verified = run_in(&env, &other.dir, &["verify", "--all"]).ok_json();
    assert_eq!(verified["is_clean"], true, "{verified}");

    // A lock an older aam wrote: the rule's frontmatter written again.
    let old = aam::deploy::render_rewritten(aam::agents::Format::CursorRule, "nextjs", None, rule);
    assert_ne!(old, rule);
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let key = ".cursor/rules/nextjs.mdc";
    let new_sum = blake3::hash(rule.as_bytes()).to_hex().to_string();
    let old_sum = blake3::hash(old.as_bytes()).to_hex().to_string();
    let recorded: Vec<String> = text(&lock_path)
        .lines()
        .map(|line| match line.contains(key) {
            true => line.replace(&new_sum, &old_sum),
            false => line.to_string(),
        })
        .collect();
    assert!(recorded.iter().any(|line| line.contains(&old_sum)));
    std::fs::write(&lock_path, recorded.join("\n") + "\n").unwrap();
    std::fs::remove_file(proj.dir.join(key)).unwrap();
    let before = text(&lock_path);
    run_in(&env, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(text(proj.dir.join(key)), old);
    assert_eq!(text(&lock_path), before);
    // Installed again, it keeps what the lock records; nothing is edited.
    run_in(&env, &proj.dir, &["install", "rules/nextjs", "--platform", "cursor"]).ok_json();
    assert_eq!(text(proj.dir.join(key)), old);
    let verified = run_in(&env, &proj.dir, &["verify", "--all"]).ok_json();
    assert_eq!(verified["is_clean"], true, "{verified}");
}

/// A lock file lost (a bad merge resolution, deleted) leaves the package
/// copies under `.aam/packages/`: adopting the deployed skills again replaces
/// those stale copies, aam's own folder, instead of refusing them as "a file
/// of yours" with a hint naming flags adopt does not take (found by a review
/// helper).
#[test]
fn adopting_after_the_lock_file_was_lost_replaces_the_stale_package_copies() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    run_in(&env, &proj.dir, &["install", "upstream/docx", "--platform", "claude"]).ok_json();
    std::fs::remove_file(proj.dir.join(".aam/aam-lock.yaml")).unwrap();
    let inventory = run_in(&env, &proj.dir, &["inventory"]).ok_json();
    assert_eq!(
        row(&inventory, ".claude/skills/docx")["status"],
        "untracked",
        "{inventory}"
    );
    let adopted = run_in(&env, &proj.dir, &["adopt", "--all"]).ok_json();
    assert_eq!(adopted["adopted"].as_array().map(Vec::len), Some(1), "{adopted}");
    assert!(lock(&proj.dir)["packages"]["docx"].is_mapping());
    assert_eq!(run_in(&env, &proj.dir, &["verify", "docx"]).ok_json()["is_clean"], true);
}

/// A Codex prompt one project installed lies in `~/.codex/prompts`, where every
/// project's inventory finds it: another project lists it as installed
/// elsewhere, naming the install, and `adopt --all` leaves it to that install.
/// It adopted it, so the second project's lock made every clone's restore
/// write it too (found by a user helper).
#[test]
fn a_home_folder_prompt_another_project_installed_is_not_adopted() {
    let env = TestEnv::new();
    let (_, a, b) = crate::install::prompt_source_and_two_projects(&env);
    run_in(&env, &a.dir, &["install", "p/summarize", "--platform", "codex"]).ok_json();

    let inventory = run_in(&env, &b.dir, &["inventory"]).ok_json();
    let prompt = row(&inventory, "~/.codex/prompts/summarize.md");
    assert_eq!(prompt["status"], "elsewhere", "{inventory:#}");
    let whose = prompt["installed_elsewhere"][0].as_str().unwrap();
    assert!(whose.contains("summarize") && whose.contains(a.path()), "{whose}");
    let human = env.aam_in(&b.dir, &["inventory"]);
    assert!(human.stdout.contains("installed by `summarize` in"), "{}", human.stdout);

    let adopted = run_in(&env, &b.dir, &["adopt", "--all"]).ok_json();
    assert_eq!(adopted["adopted"], serde_json::json!([]), "{adopted}");
    assert_eq!(adopted["skipped"][0]["reason"], "installed_elsewhere", "{adopted}");
    assert!(!b.dir.join(".aam/aam-lock.yaml").exists(), "b records nothing");

    // Once no install records it, it is a copy like any other.
    run_in(&env, &a.dir, &["uninstall", "summarize", "--force"]).ok_json();
    std::fs::create_dir_all(env.user_home().join(".codex/prompts")).unwrap();
    std::fs::write(
        env.user_home().join(".codex/prompts/summarize.md"),
        "# Summarize the change\n",
    )
    .unwrap();
    let inventory = run_in(&env, &b.dir, &["inventory"]).ok_json();
    assert_eq!(row(&inventory, "~/.codex/prompts/summarize.md")["status"], "untracked");
}

/// A prompt copied into the home folder by hand and adopted in a project is
/// still the user's copy: aam never wrote it. That project's uninstall keeps
/// it, and a lock another repository brings, naming it with its checksum,
/// cannot remove it (adopting recorded it as written by aam, and both deleted
/// it: found by an attacker helper).
#[test]
fn an_adopted_home_folder_copy_stays_the_users() {
    let env = TestEnv::new();
    let (_, a, b) = crate::install::prompt_source_and_two_projects(&env);
    let prompt = env.user_home().join(".codex/prompts/summarize.md");
    std::fs::create_dir_all(prompt.parent().unwrap()).unwrap();
    std::fs::write(&prompt, "# Summarize the change\n").unwrap();
    let adopted = run_in(&env, &a.dir, &["adopt", "--all"]).ok_json();
    assert_eq!(adopted["adopted"][0]["package"], "summarize", "{adopted}");
    run_in(&env, &a.dir, &["verify", "summarize"]).ok_json();

    let removed = run_in(&env, &a.dir, &["uninstall", "summarize"]).ok_json();
    assert_eq!(
        removed["kept_unrecorded"],
        serde_json::json!(["~/.codex/prompts/summarize.md"]),
        "{removed}"
    );
    assert!(prompt.is_file(), "the hand-made copy is kept");

    let digest = blake3::hash(b"# Summarize the change\n").to_hex().to_string();
    std::fs::create_dir_all(b.dir.join(".aam")).unwrap();
    std::fs::write(
        b.dir.join(".aam/aam-lock.yaml"),
        format!(
            "lockfile_version: 1\npackages:\n  anything:\n    version: 1.0.0\n    source: local\n    source_name: ./nowhere\n    checksum: '{}'\n    platforms: [codex]\n    deployed:\n    - {{platform: codex, type: prompt, name: summarize, target: ~/.codex/prompts/summarize.md}}\n    file_checksums:\n      ~/.codex/prompts/summarize.md: {digest}\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let kept = run_in(&env, &b.dir, &["uninstall", "anything"]).ok_json();
    assert_eq!(kept["kept_unrecorded"][0], "~/.codex/prompts/summarize.md", "{kept}");
    assert!(prompt.is_file(), "a forged lock removed the user's copy");
}
