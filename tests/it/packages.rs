//! Package authoring and the local registry: create, validate, pack, publish.

use std::io::Read;
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{TestEnv, skill};

/// Every file of an archive with its bytes.
fn archive_files(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut out = Vec::new();
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        let mut data = Vec::new();
        entry.read_to_end(&mut data).unwrap();
        out.push((path, data));
    }
    out
}

fn digest(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[test]
fn init_validate_pack_publish_and_read_back() {
    let env = TestEnv::new();
    let init_args = [
        "pkg",
        "init",
        "review-kit",
        "--yes",
        "--description",
        "Review helpers",
        "--license",
        "MIT",
    ];
    let init = env.json(&init_args);
    assert_eq!(init["package_name"], "review-kit");
    assert_eq!(init["files"], json!(["aam.yaml", "skills/review-kit/SKILL.md"]));
    // Killed between its two writes: the next init finishes it; an example
    // skill the user edited is theirs.
    let manifest = std::fs::read(env.path("review-kit/aam.yaml")).unwrap();
    std::fs::remove_file(env.path("review-kit/aam.yaml")).unwrap();
    env.json(&init_args);
    assert_eq!(std::fs::read(env.path("review-kit/aam.yaml")).unwrap(), manifest);
    std::fs::remove_file(env.path("review-kit/aam.yaml")).unwrap();
    let skill = env.path("review-kit/skills/review-kit/SKILL.md");
    let example = std::fs::read(&skill).unwrap();
    std::fs::write(&skill, "mine\n").unwrap();
    env.json_err(&["pkg", "init", "review-kit", "--yes"], "AAM_CONFLICT");
    assert_eq!(std::fs::read_to_string(&skill).unwrap(), "mine\n");
    assert!(!env.path("review-kit/aam.yaml").exists());
    std::fs::write(env.path("review-kit/aam.yaml"), manifest).unwrap();
    std::fs::write(&skill, example).unwrap();
    let valid = env.json(&["pkg", "validate", "review-kit"]);
    assert_eq!(valid["valid"], true);
    assert_eq!(valid["artifact_count"], 1);
    // The skill's placeholder `init` wrote is valid, and pointed out.
    let warned = valid["warnings"].to_string();
    assert!(
        warned.contains("`description` is still the placeholder `aam pkg init` wrote"),
        "{valid}"
    );

    // Pack twice, a second apart with the files touched: identical bytes.
    let first = env.json(&["pkg", "pack", "review-kit"]);
    let archive = first["archive"].as_str().unwrap().to_string();
    assert!(archive.ends_with("review-kit/dist/review-kit-0.1.0.aam"), "{archive}");
    let bytes = std::fs::read(&archive).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let skill_file = env.path("review-kit/skills/review-kit/SKILL.md");
    std::fs::write(&skill_file, std::fs::read(&skill_file).unwrap()).unwrap();
    let second = env.json(&["pkg", "pack", "review-kit", "--output", "again.aam"]);
    assert_eq!(
        std::fs::read(env.path("again.aam")).unwrap(),
        bytes,
        "same input, same bytes"
    );
    assert_eq!(first["blake3"], second["blake3"]);
    assert_eq!(first["blake3"], digest(&bytes));
    assert_eq!(first["size"], bytes.len());

    // The checksums cover exactly what the archive holds, the manifest excepted.
    let files = archive_files(&bytes);
    let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        names,
        ["aam.yaml", "skills/review-kit/SKILL.md"],
        "dist/ and earlier archives left out"
    );
    let manifest: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&files[0].1).unwrap();
    let recorded = manifest["file_checksums"]["files"].as_mapping().unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(
        recorded.get("skills/review-kit/SKILL.md").unwrap().as_str().unwrap(),
        digest(&files[1].1)
    );
    assert_eq!(env.json(&["pkg", "validate", &archive])["valid"], true);

    env.json(&["registry", "init", "registry", "--default"]);
    let published = env.json(&["pkg", "publish", &archive]);
    assert_eq!(published["package_name"], "review-kit");
    assert_eq!(published["tag"], "latest");
    assert_eq!(published["artifact_types"], json!(["skill"]));
    assert_eq!(published["checksum"], digest(&bytes));
    let stored = env.path("registry").join(published["archive"].as_str().unwrap());
    assert_eq!(
        std::fs::read(stored).unwrap(),
        bytes,
        "the registry keeps the archive byte for byte"
    );
    let index: Value = serde_json::from_slice(&std::fs::read(env.path("registry/index.json")).unwrap()).unwrap();
    let entry = &index["packages"]["review-kit"];
    assert_eq!(entry["dist_tags"]["latest"], "0.1.0");
    assert_eq!(entry["versions"]["0.1.0"]["size"], bytes.len());
    assert_eq!(entry["versions"]["0.1.0"]["artifact_types"], json!(["skill"]));
    let metadata: Value =
        serde_json::from_slice(&std::fs::read(env.path("registry/packages/review-kit/0.1.0/metadata.json")).unwrap())
            .unwrap();
    assert_eq!(metadata["entry"]["checksum"], digest(&bytes));

    // Search finds the package next to source artifacts, with its artifact types.
    let found = env.json(&["search", "review-kit", "--type", "package"]);
    assert_eq!(found["results"][0]["type"], "package");
    assert_eq!(found["results"][0]["artifact_types"], json!(["skill"]));
    assert_eq!(found["results"][0]["path"], "review-kit@0.1.0");
    assert_eq!(env.json(&["registry", "list"])["registries"][0]["package_count"], 1);
}

#[test]
fn versions_are_immutable_and_tags_move() {
    let env = TestEnv::new();
    env.json(&["pkg", "init", "kit", "--yes"]);
    // Without `--description`, the package's placeholder is pointed out too.
    let fields: Vec<String> = env.json(&["pkg", "validate", "kit"])["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["field"].as_str().unwrap().to_string())
        .collect();
    assert!(fields.contains(&"description".to_string()), "{fields:?}");
    env.json(&["registry", "init", "reg", "--default"]);
    env.json(&["pkg", "publish", "kit"]);
    let before = std::fs::read(env.path("reg/index.json")).unwrap();
    let body = env.json_err(&["pkg", "publish", "kit"], "AAM_VERSION_EXISTS");
    assert!(body["hint"].as_str().unwrap().contains("bump `version`"));
    assert_eq!(
        std::fs::read(env.path("reg/index.json")).unwrap(),
        before,
        "index untouched"
    );

    let manifest = env.path("kit/aam.yaml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap()
        .replace("version: 0.1.0", "version: 0.2.0-beta.1");
    std::fs::write(&manifest, text).unwrap();
    let dry = env.json(&["pkg", "publish", "kit", "--tag", "beta", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        std::fs::read(env.path("reg/index.json")).unwrap(),
        before,
        "a dry run writes nothing"
    );
    env.json(&["pkg", "publish", "kit", "--tag", "beta"]);
    let index: Value = serde_json::from_slice(&std::fs::read(env.path("reg/index.json")).unwrap()).unwrap();
    assert_eq!(
        index["packages"]["kit"]["dist_tags"],
        json!({"latest": "0.1.0", "beta": "0.2.0-beta.1"})
    );
}

/// What another AAM_HOME (a teammate, CI) publishes to a shared registry is
/// seen here without re-adding it: info, outdated, install and registry list
/// mirror a registry again once its index changed. So are packages whose
/// mirror concurrent publishes raced (the last mirror to commit had read an
/// older index).
#[test]
fn a_registry_changed_elsewhere_is_mirrored_again() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "shared", "--default"]);
    env.json(&["pkg", "init", "rk", "--yes"]);
    env.json(&["pkg", "publish", "rk"]);
    let proj = env.repo("proj");
    proj.write(".claude/.keep", "");
    env.aam_in(&proj.dir, &["--json", "install", "rk", "--platform", "claude"])
        .ok_json();
    let teammate = env.path("teammate-home");
    let as_teammate = |args: &[&str]| env.aam_with(env.root.path(), &[("AAM_HOME", teammate.to_str().unwrap())], args);
    let registry = env.path("shared").display().to_string();
    as_teammate(&["--json", "registry", "add", "shared", &registry, "--default"]).ok_json();
    let manifest = env.path("rk/aam.yaml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("version: 0.1.0", "version: 0.2.0")).unwrap();
    as_teammate(&["--json", "pkg", "publish", "rk"]).ok_json();

    let info = env.json(&["info", "rk@0.2.0"]);
    assert_eq!(info["shown_version"], "0.2.0", "{info}");
    let outdated = env.aam_in(&proj.dir, &["--json", "outdated"]).ok_json();
    assert_eq!(outdated["packages"][0]["latest"], "0.2.0", "{outdated}");
    let upgraded = env.aam_in(&proj.dir, &["--json", "upgrade"]).ok_json();
    assert_eq!(upgraded["packages"][0]["to"], "0.2.0", "{upgraded}");

    // Eight packages published at once: each publish mirrors the index it
    // read, and the last to commit may have read an older one.
    for i in 1..=8 {
        env.json(&["pkg", "init", &format!("p{i}"), "--yes"]);
    }
    let publishes: Vec<_> = (1..=8)
        .map(|i| {
            std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
                .args(["--json", "pkg", "publish", &format!("p{i}")])
                .current_dir(env.root.path())
                .env("AAM_HOME", env.home())
                .env("HOME", env.user_home())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut publish in publishes {
        assert!(publish.wait().unwrap().success());
    }
    let listed = env.json(&["registry", "list"]);
    assert_eq!(listed["registries"][0]["package_count"], 9, "{listed}");
    env.aam_in(&proj.dir, &["--json", "install", "p5", "--platform", "claude"])
        .ok_json();
}

#[test]
fn pack_replaces_only_an_earlier_archive() {
    let env = TestEnv::new();
    env.json(&["pkg", "init", "kit", "--yes"]);
    let manifest = std::fs::read(env.path("kit/aam.yaml")).unwrap();
    // The package's own manifest, a file of the user's, a folder, a link: all kept.
    env.json_err(&["pkg", "pack", "kit", "--output", "kit/aam.yaml"], "AAM_CONFLICT");
    assert_eq!(std::fs::read(env.path("kit/aam.yaml")).unwrap(), manifest);
    std::fs::write(env.path("notes.txt"), "mine\n").unwrap();
    env.json_err(&["pkg", "pack", "kit", "--output", "notes.txt"], "AAM_CONFLICT");
    assert_eq!(std::fs::read_to_string(env.path("notes.txt")).unwrap(), "mine\n");
    std::fs::create_dir(env.path("out")).unwrap();
    env.json_err(&["pkg", "pack", "kit", "--output", "out"], "AAM_INVALID_ARGUMENT");
    std::os::unix::fs::symlink(env.path("notes.txt"), env.path("link.aam")).unwrap();
    env.json_err(&["pkg", "pack", "kit", "--output", "link.aam"], "AAM_CONFLICT");
    assert_eq!(std::fs::read_to_string(env.path("notes.txt")).unwrap(), "mine\n");
    // An earlier archive and an empty file are replaced.
    let first = env.json(&["pkg", "pack", "kit", "--output", "kit.aam"]);
    env.json(&["pkg", "pack", "kit", "--output", "kit.aam"]);
    std::fs::write(env.path("empty.aam"), "").unwrap();
    let again = env.json(&["pkg", "pack", "kit", "--output", "empty.aam"]);
    assert_eq!(again["blake3"], first["blake3"]);

    // A `dist` the package ships as a link is not followed.
    std::fs::create_dir(env.path("elsewhere")).unwrap();
    std::os::unix::fs::symlink(env.path("elsewhere"), env.path("kit/dist")).unwrap();
    env.json_err(&["pkg", "pack", "kit"], "AAM_UNSAFE_PATH");
    assert_eq!(std::fs::read_dir(env.path("elsewhere")).unwrap().count(), 0);
}

#[test]
fn publishes_at_once_all_reach_the_catalog_mirror() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "registry", "--default"]);
    let names: Vec<String> = (0..8).map(|n| format!("rush-{n}")).collect();
    for name in &names {
        env.json(&["pkg", "init", name, "--yes", "--description", "Rush hour kit"]);
    }
    std::thread::scope(|scope| {
        for name in &names {
            let env = &env;
            scope.spawn(move || env.json(&["pkg", "publish", name]));
        }
    });
    // Search reads the mirror as it is: every published package must be in it.
    let found = env.json(&["search", "rush", "--type", "package", "--limit", "50"]);
    let mut hits: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["name"].as_str().unwrap())
        .collect();
    hits.sort();
    assert_eq!(hits, names.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn outdated_asks_the_registry_a_package_came_from() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "pub", "--default"]);
    env.json(&["registry", "init", "team"]);
    env.json(&["pkg", "init", "rk", "--yes"]);
    let manifest = env.path("rk/aam.yaml");
    let version = |v: &str| {
        let text = std::fs::read_to_string(&manifest).unwrap();
        let line = text.lines().find(|l| l.starts_with("version:")).unwrap().to_string();
        std::fs::write(&manifest, text.replace(&line, &format!("version: {v}"))).unwrap();
    };
    env.json(&["pkg", "publish", "rk", "--registry", "team"]);
    let proj = env.repo("proj");
    proj.write(".claude/.keep", "");
    env.aam_in(&proj.dir, &["--json", "install", "rk", "--platform", "claude"])
        .ok_json();
    version("0.2.0");
    env.json(&["pkg", "publish", "rk", "--registry", "pub"]);
    version("0.1.1");
    env.json(&["pkg", "publish", "rk", "--registry", "team"]);
    let outdated = env.aam_in(&proj.dir, &["--json", "outdated"]).ok_json();
    assert_eq!(outdated["packages"][0]["wanted"], "0.1.1", "{outdated}");
    // A CI check: `--exit-code` exits 1 while something is outdated.
    assert_eq!(env.aam_in(&proj.dir, &["outdated", "--exit-code"]).code, 1);
    // The upgrade stays with that registry too, though the default one has a
    // package of the same name.
    let upgraded = env.aam_in(&proj.dir, &["--json", "upgrade"]).ok_json();
    assert_eq!(upgraded["packages"][0]["status"], "upgraded", "{upgraded}");
    assert_eq!(env.aam_in(&proj.dir, &["outdated", "--exit-code"]).code, 0);
    assert_eq!(upgraded["packages"][0]["to"], "0.1.1", "{upgraded}");
    let listed = env.aam_in(&proj.dir, &["--json", "list"]).ok_json();
    let rk = &listed["packages"][0];
    assert_eq!(
        (rk["version"].as_str(), rk["source_name"].as_str()),
        (Some("0.1.1"), Some("team")),
        "{listed}"
    );
    // What the user asks for by name is looked up afresh, not where the lock
    // file says: the default registry's package is another one.
    env.aam_in(&proj.dir, &["--json", "install", "rk", "--platform", "claude"])
        .err("AAM_CONFLICT");
    // A lock edited to name another registry than the one the installed
    // version came from is not followed by upgrades.
    version("0.1.2");
    env.json(&["pkg", "publish", "rk", "--registry", "team"]);
    env.json(&["registry", "init", "other"]);
    version("0.1.3");
    env.json(&["pkg", "publish", "rk", "--registry", "other"]);
    let lock = proj.dir.join(".aam/aam-lock.yaml");
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(text.contains("source_name: team"), "{text}");
    std::fs::write(&lock, text.replace("source_name: team", "source_name: other")).unwrap();
    let outdated = env.aam_in(&proj.dir, &["--json", "outdated"]).ok_json();
    assert_eq!(outdated["packages"][0]["wanted"], "0.2.0", "{outdated}");
    let upgraded = env.aam_in(&proj.dir, &["--json", "upgrade"]);
    assert!(upgraded.stdout.contains("AAM_CONFLICT"), "{}", upgraded.stdout);
    let listed = env.aam_in(&proj.dir, &["--json", "list"]).ok_json();
    assert_eq!(listed["packages"][0]["version"], "0.1.1", "{listed}");
    // A teammate's machine without the registry cannot tell: `unknown`, with
    // the command that adds it (it said "up to date").
    std::fs::write(&lock, text).unwrap();
    let fresh = env.path("teammate-home");
    let elsewhere = env
        .aam_with(
            &proj.dir,
            &[("AAM_HOME", fresh.to_str().unwrap())],
            &["--json", "outdated"],
        )
        .ok_json();
    let rk = &elsewhere["packages"][0];
    assert_eq!(
        (&rk["unknown"], &rk["outdated"]),
        (&json!(true), &json!(false)),
        "{elsewhere}"
    );
    assert!(
        rk["reason"].as_str().unwrap().contains("`aam registry add team <url>`"),
        "{elsewhere}"
    );
}

#[test]
fn registries_are_configured_listed_and_removed() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.path("empty")).unwrap();
    env.json_err(&["pkg", "publish", "empty"], "AAM_MANIFEST_INVALID");
    // The scratch folder holds AAM_HOME: never packed.
    env.json_err(&["pkg", "publish", "."], "AAM_FORBIDDEN");
    env.json(&["pkg", "init", "kit", "--yes"]);
    let none = env.json_err(&["pkg", "publish", "kit"], "AAM_REGISTRY_NOT_FOUND");
    assert!(none["hint"].as_str().unwrap().contains("aam registry init"));
    std::fs::create_dir_all(env.path("not-a-registry")).unwrap();
    std::fs::write(env.path("not-a-registry/file"), "x").unwrap();
    env.json_err(&["registry", "add", "x", "./not-a-registry"], "AAM_REGISTRY_INVALID");
    env.json_err(&["registry", "init", "not-a-registry"], "AAM_REGISTRY_INVALID");
    env.json_err(
        &["registry", "add", "web", "https://example.com/registry"],
        "AAM_INVALID_ARGUMENT",
    );

    env.json(&["registry", "init", "one"]);
    env.json(&["registry", "init", "two"]);
    let ambiguous = env.json_err(&["pkg", "publish", "kit"], "AAM_REGISTRY_NOT_FOUND");
    assert!(
        ambiguous["hint"].as_str().unwrap().contains("`one`, `two`"),
        "{ambiguous}"
    );
    env.json(&["pkg", "publish", "kit", "--registry", "two"]);
    env.json_err(
        &["registry", "init", "elsewhere", "--name", "two"],
        "AAM_REGISTRY_EXISTS",
    );
    // One folder under a second name would mirror its packages twice.
    let twice = env.json_err(&["registry", "add", "again", "./two"], "AAM_REGISTRY_EXISTS");
    assert!(twice["message"].as_str().unwrap().contains("as `two`"), "{twice}");

    // Removed, the folder can be configured again under another name.
    env.json(&["registry", "remove", "two"]);
    let other = env.json(&[
        "registry",
        "add",
        "copy",
        &format!("file://{}", env.path("two").display()),
        "--default",
    ]);
    assert_eq!(other["package_count"], 1);
    assert_eq!(other["default"], true);
    let list = env.json(&["registry", "list"]);
    let names: Vec<(&str, bool)> = list["registries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["default"].as_bool().unwrap()))
        .collect();
    assert_eq!(names, [("one", false), ("copy", true)]);
    assert_eq!(env.json(&["search", "kit", "--type", "package"])["total"], 1);
    // The SOURCE column's registry name filters as a source's does (it was unknown).
    assert_eq!(env.json(&["search", "kit", "--source", "copy"])["total"], 1);
    assert_eq!(env.json(&["search", "kit", "--source", "one"])["total"], 0);
    let removed = env.json(&["registry", "remove", "copy"]);
    assert_eq!(removed, json!({"removed": "copy", "was_default": true}));
    assert_eq!(env.json(&["search", "kit", "--type", "package"])["total"], 0);
    assert!(env.path("two/index.json").exists(), "the folder is left alone");
    env.json(&["registry", "add", "two", "./two"]);
    let gone = env.json_err(&["registry", "remove", "copy"], "AAM_REGISTRY_NOT_FOUND");
    // The names to pass, not flags `remove` does not take.
    assert_eq!(gone["hint"], "configured registries: `one`, `two`");
}

/// A project with artifacts in several platform layouts.
fn project(env: &TestEnv) -> crate::support::Repo {
    let repo = env.repo("proj");
    repo.write(
        ".cursor/rules/style.mdc",
        "---\ndescription: Style rules\nglobs: \"**/*.ts\"\n---\nBe consistent.\n",
    )
    .write(".github/copilot-instructions.md", "# Copilot\n")
    .write(
        ".claude/agents/helper.md",
        "---\nname: helper\ndescription: Helps\n---\nYou help.\n",
    )
    .write(".github/agents/planner.agent.md", "---\ndescription: Plans\n---\n")
    .write("CLAUDE.md", "# Claude notes\n")
    .write("AGENTS.md", "# Agents notes\n")
    .write("skills/deploy/SKILL.md", skill("deploy", "Deploys"))
    .write("skills/deploy/run.sh", "#!/bin/sh\n");
    repo
}

/// What aam installed into the project from other packages is theirs: packing
/// the project's own artifacts leaves those copies out.
#[test]
fn a_project_package_leaves_out_what_aam_installed() {
    let env = TestEnv::new();
    let source = env.repo("team");
    source.write("skills/lint/SKILL.md", skill("lint", "Lint the code"));
    source.commit("lint");
    env.json(&["source", "add", source.path(), "--name", "team"]);
    let project = env.repo("project");
    project.write("skills/mine/SKILL.md", skill("mine", "My own skill"));
    project.commit("mine");
    env.aam_in(
        &project.dir,
        &["--json", "install", "team/lint", "--platform", "claude"],
    )
    .ok_json();
    assert!(project.dir.join(".claude/skills/lint/SKILL.md").exists());
    let dry = env
        .aam_in(&project.dir, &["--json", "pkg", "create", "--all", "--dry-run"])
        .ok_json();
    let sources: Vec<&str> = dry["artifacts_included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["source_path"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["skills/mine"], "{dry}");
}

/// The sections aam wrote into `AGENTS.md` and `CLAUDE.md` are other packages':
/// a file holding nothing else is left out, and a file with the user's own text
/// is packaged without them (an install would refuse their markers). A section
/// `uninstall` kept for its edits is the user's: its text is packaged, without
/// its marker lines.
#[test]
fn a_project_package_leaves_out_the_sections_aam_wrote_into_shared_files() {
    let env = TestEnv::new();
    let source = env.repo("team");
    source
        .write(
            "agents/reviewer.md",
            "---\nname: reviewer\ndescription: Reviews code\n---\nYou review code.\n",
        )
        .write(
            ".cursor/rules/style.mdc",
            "---\ndescription: Style\n---\nBe consistent.\n",
        )
        .write(
            ".cursor/rules/naming.mdc",
            "---\ndescription: Naming\n---\nName things well.\n",
        );
    source.commit("c1");
    env.json(&["source", "add", source.path(), "--name", "team"]);
    let project = env.repo("project");
    // A skill that shows aam's markers is the project's as it is.
    let guide = format!(
        "{}Sections look like this:\n<!-- BEGIN AAM: example instruction -->\nText\n<!-- END AAM: example instruction -->\n",
        skill("aam-guide", "Explains aam sections")
    );
    project.write("CLAUDE.md", "# My notes\n\nKeep tests green.\n");
    project.write("skills/aam-guide/SKILL.md", &guide);
    project.commit("notes");
    for spec in ["team/reviewer", "team/style", "team/naming"] {
        let args = ["--json", "install", spec, "--platform", "codex,claude"];
        env.aam_in(&project.dir, &args).ok_json();
    }
    let agents_md = std::fs::read_to_string(project.dir.join("AGENTS.md")).unwrap();
    assert!(agents_md.contains("BEGIN AAM: style instruction"), "{agents_md}");
    // An edited section `uninstall` keeps.
    let claude_path = project.dir.join("CLAUDE.md");
    let claude_md = std::fs::read_to_string(&claude_path).unwrap();
    assert!(claude_md.contains("BEGIN AAM: style instruction"), "{claude_md}");
    std::fs::write(
        &claude_path,
        claude_md.replace("Name things well.", "Name things very well."),
    )
    .unwrap();
    env.aam_in(&project.dir, &["--json", "uninstall", "naming"]).ok_json();
    project.commit("installed");

    let kit = env.path("kit");
    let create = [
        "--json",
        "pkg",
        "create",
        "--all",
        "--name",
        "notes-kit",
        "--output-dir",
        kit.to_str().unwrap(),
    ];
    env.aam_in(&project.dir, &create).ok_json();
    let packaged: Vec<String> = std::fs::read_dir(kit.join("instructions"))
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    assert_eq!(
        packaged,
        ["# My notes\n\nKeep tests green.\n\nName things very well.\n"],
        "AGENTS.md left out, CLAUDE.md without the sections of installed packages"
    );
    assert_eq!(
        std::fs::read_to_string(kit.join("skills/aam-guide/SKILL.md")).unwrap(),
        guide
    );
    let other = env.repo("other");
    let args = ["--json", "install", kit.to_str().unwrap(), "--platform", "claude"];
    env.aam_in(&other.dir, &args).ok_json();
}

/// A project package names the commit it was made from only when that commit
/// holds every packaged file as it is, compared as `git status` compares (line
/// endings converted as `.gitattributes` says, the executable bit counted): a
/// file changed, new or gone from a skill's folder since is refused, unless
/// `--allow-dirty` packages the files as they are and names no commit. Edits to
/// files the package does not take change nothing.
#[test]
fn a_project_package_names_its_commit_only_when_it_holds_its_files() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let project = env.repo("project");
    let crlf = |text: String| text.replace('\n', "\r\n");
    project
        .write(".gitattributes", "*.md text eol=crlf\n")
        .write("skills/mine/SKILL.md", crlf(skill("mine", "My own skill")))
        .write("skills/mine/guide.md", "Read me.\r\n")
        .write("skills/mine/run.sh", "#!/bin/sh\n")
        .write(".claude/agents/helper.md", crlf(skill("helper", "Helps")))
        .write("README.md", "# Project\n");
    let executable = |mode: u32| {
        let run = project.dir.join("skills/mine/run.sh");
        std::fs::set_permissions(run, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    executable(0o755);
    let c1 = project.commit("mine");
    let blob = project.git(&["rev-parse", "HEAD:skills/mine/SKILL.md"]);
    let stored = project.git(&["cat-file", "-p", &blob]);
    assert!(!stored.contains('\r'), "git stores the skill with LF endings");
    let create = |extra: &[&str]| {
        let mut args = vec!["--json", "pkg", "create", "--all", "--name", "mine-kit"];
        args.extend_from_slice(extra);
        env.aam_in(&project.dir, &args)
    };
    project.write("README.md", "# Project, edited\n");
    let clean = create(&["--dry-run"]).ok_json();
    assert_eq!(clean["provenance"]["source_commit"], c1, "{clean}");

    project
        .write(
            ".claude/agents/helper.md",
            crlf(skill("helper", "Edited, not committed")),
        )
        .write("skills/mine/notes.md", "new\n")
        .remove("skills/mine/guide.md");
    executable(0o644);
    let refused = create(&[]).err("AAM_UNCOMMITTED_CHANGES");
    assert_eq!(
        refused["message"],
        "4 files to package differ from the last commit: `.claude/agents/helper.md` (changed), \
         `skills/mine/guide.md` (deleted), `skills/mine/notes.md` (new), `skills/mine/run.sh` (changed)"
    );
    assert!(refused["hint"].as_str().unwrap().contains("--allow-dirty"), "{refused}");
    assert!(!project.dir.join("mine-kit").exists(), "nothing written on error");

    let dirty = create(&["--allow-dirty"]).ok_json();
    assert!(dirty["provenance"].get("source_commit").is_none(), "{dirty}");
    let packaged = std::fs::read_to_string(project.dir.join("mine-kit/agents/helper.md")).unwrap();
    assert!(
        packaged.contains("Edited, not committed"),
        "the files as they are: {packaged}"
    );
    let manifest = std::fs::read_to_string(project.dir.join("mine-kit/aam.yaml")).unwrap();
    assert!(!manifest.contains("source_commit"), "{manifest}");

    std::fs::remove_dir_all(project.dir.join("mine-kit")).unwrap();
    let c2 = project.commit("edits");
    let committed = create(&["--version", "0.2.0"]).ok_json();
    assert_eq!(committed["provenance"]["source_commit"], c2, "{committed}");
}

/// What `git status` calls unchanged, a project package does too: a file
/// committed with CRLF endings before `text=auto` was set, an executable bit
/// under `core.fileMode=false`, a file gone from a folder the package never
/// takes. And a filter driver of the repository's config is never run.
#[test]
fn a_project_package_compares_files_as_git_status_does() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let project = env.repo("project");
    project
        .write("skills/a/SKILL.md", skill("a", "Windows endings").replace('\n', "\r\n"))
        .write("skills/a/build/out.txt", "built\n")
        .write("skills/a/nested/SKILL.md", skill("nested", "Its own skill"));
    project.commit("crlf");
    project.write(".gitattributes", "* text=auto\n");
    let c2 = project.commit("attributes");
    project.git(&["config", "core.fileMode", "false"]);
    let skill_file = project.dir.join("skills/a/SKILL.md");
    std::fs::set_permissions(&skill_file, std::fs::Permissions::from_mode(0o755)).unwrap();
    project
        .remove("skills/a/build/out.txt")
        .remove("skills/a/nested/SKILL.md");
    assert_eq!(project.git(&["status", "--porcelain", "--", "skills/a/SKILL.md"]), "");
    let marker = env.path("driver-ran");
    project.git(&["config", "filter.mark.clean", &format!("touch {}", marker.display())]);
    project.write(".gitattributes", "* text=auto\n*.md filter=mark\n");

    let created = env
        .aam_in(
            &project.dir,
            &["--json", "pkg", "create", "--artifacts", "a", "--dry-run"],
        )
        .ok_json();
    assert_eq!(created["provenance"]["source_commit"], c2, "{created}");
    assert!(!marker.exists(), "the filter driver was run");
}

#[test]
fn create_from_a_project() {
    let env = TestEnv::new();
    let repo = project(&env);
    let dir = repo.dir.clone();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("skills/deploy/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        env.aam_in(&dir, &all)
    };
    let none = run(&["pkg", "create"]).err("AAM_INVALID_ARGUMENT");
    assert!(none["hint"].as_str().unwrap().contains("--all"));
    let unknown = run(&["pkg", "create", "--artifacts", "helper,ghost,phantom"]).err("AAM_ARTIFACT_NOT_FOUND");
    assert_eq!(
        unknown["message"],
        format!(
            "no artifact named `ghost`, `phantom` in `{}`",
            dir.canonicalize().unwrap().display()
        )
    );
    assert!(!dir.join("proj").exists(), "nothing written on error");

    let dry = run(&["pkg", "create", "--all", "--dry-run"]).ok_json();
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["artifacts_included"].as_array().unwrap().len(), 7);
    assert!(!dir.join("proj").exists(), "a dry run writes nothing");

    let created = run(&[
        "pkg",
        "create",
        "--type",
        "instruction",
        "--type",
        "agent",
        "--platform",
        "cursor",
        "--name",
        "team-rules",
    ])
    .ok_json();
    let included: Vec<String> = created["artifacts_included"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            format!(
                "{} {} <- {}",
                a["type"].as_str().unwrap(),
                a["path"].as_str().unwrap(),
                a["source_path"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        included,
        [
            "agent agents/helper.md <- .claude/agents/helper.md",
            "agent agents/planner.md <- .github/agents/planner.agent.md",
            "instruction instructions/style.md <- .cursor/rules/style.mdc",
            "instruction instructions/copilot-instructions.md <- .github/copilot-instructions.md",
            "instruction instructions/codex-instructions.md <- AGENTS.md",
            "instruction instructions/claude-instructions.md <- CLAUDE.md",
        ]
    );
    assert_eq!(created["provenance"]["source_type"], "local_project");
    let package = dir.join("team-rules");
    let style = std::fs::read_to_string(package.join("instructions/style.md")).unwrap();
    assert!(style.contains("globs: \"**/*.ts\""), "frontmatter kept: {style}");
    assert_eq!(env.json(&["pkg", "validate", package.to_str().unwrap()])["valid"], true);

    // Those artifacts stop being candidates; the package's own copies never are.
    let candidates = env
        .aam_in(&dir, &["--json", "source", "candidates", "--source", "local"])
        .ok_json();
    let left: Vec<&str> = candidates["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["skills/deploy"]);

    let taken = run(&["pkg", "create", "--all", "--name", "team-rules"]).err("AAM_CONFLICT");
    assert!(taken["hint"].as_str().unwrap().contains("--output-dir"));
    let skill_pkg = run(&[
        "pkg",
        "create",
        "--artifacts",
        "deploy",
        "--output-dir",
        "out/deploy-kit",
    ])
    .ok_json();
    assert_eq!(skill_pkg["package_name"], "proj");
    let mode = std::fs::metadata(dir.join("out/deploy-kit/skills/deploy/run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "executable bit kept");
}

#[test]
fn create_from_a_source_at_its_commit() {
    let env = TestEnv::new();
    let repo = env.repo("upstream");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v1"))
        .write("skills/pdf/scripts/fill.py", "print('v1')\n")
        .write("agents/reviewer.md", "---\nname: reviewer\ndescription: Reviews\n---\n")
        .write("AGENTS.md", "# Guide\n")
        .symlink("CLAUDE.md", "AGENTS.md");
    let c1 = repo.commit("c1");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v2"));
    repo.commit("c2");
    env.json(&["source", "add", repo.path(), "--ref", &c1, "--name", "up"]);

    let before = env.state();
    let missing = env.json_err(
        &["pkg", "create", "--from-source", "nope", "--all"],
        "AAM_SOURCE_NOT_FOUND",
    );
    assert!(missing["hint"].as_str().unwrap().contains("`up`"));
    let unknown = env.json_err(
        &[
            "pkg",
            "create",
            "--from-source",
            "up",
            "--artifacts",
            "pdf",
            "--artifacts",
            "ghost",
        ],
        "AAM_ARTIFACT_NOT_FOUND",
    );
    assert!(unknown["message"].as_str().unwrap().contains("`ghost`"));
    assert_eq!(before, env.state(), "nothing written on error");
    assert!(!env.path("up").exists());

    let created = env.json(&[
        "pkg",
        "create",
        "--from-source",
        "up",
        "--artifacts",
        "pdf,claude-instructions",
        "--name",
        "pdf-kit",
    ]);
    let provenance = &created["provenance"];
    assert_eq!(provenance["source_type"], "remote_git");
    assert_eq!(provenance["source_commit"], c1);
    assert_eq!(provenance["source_ref"], c1);
    assert_eq!(
        provenance["source_url"],
        format!("file://{}", repo.dir.canonicalize().unwrap().display())
    );
    assert!(provenance["fetched_at"].as_str().is_some());

    // Files come from the indexed commit's blobs, not from the work tree (which is at c2).
    let package = env.path("pdf-kit");
    let manifest: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(&std::fs::read(package.join("aam.yaml")).unwrap()).unwrap();
    let checksums = manifest["file_checksums"]["files"].as_mapping().unwrap();
    for (inside, upstream) in [
        ("skills/pdf/SKILL.md", "skills/pdf/SKILL.md"),
        ("skills/pdf/scripts/fill.py", "skills/pdf/scripts/fill.py"),
        ("instructions/claude-instructions.md", "AGENTS.md"),
    ] {
        let blob = std::process::Command::new("git")
            .args(["show", &format!("{c1}:{upstream}")])
            .current_dir(&repo.dir)
            .output()
            .unwrap()
            .stdout;
        assert_eq!(std::fs::read(package.join(inside)).unwrap(), blob, "{inside}");
        assert_eq!(
            checksums.get(inside).unwrap().as_str().unwrap(),
            digest(&blob),
            "{inside}"
        );
    }
    assert!(
        std::fs::read_to_string(package.join("skills/pdf/SKILL.md"))
            .unwrap()
            .contains("PDF v1")
    );
    let candidates = env.json(&["source", "candidates", "--source", "up"]);
    let left: Vec<&str> = candidates["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["reviewer", "codex-instructions"]);

    // Into the empty working directory: filled where it is.
    let here = env.path("here");
    std::fs::create_dir(&here).unwrap();
    let args = ["--json", "pkg", "create", "--from-source", "up", "--artifacts", "pdf"];
    let created = env
        .aam_in(&here, &[&args[..], &["--output-dir", "."]].concat())
        .ok_json();
    assert_eq!(
        created["manifest_path"],
        here.join("aam.yaml").display().to_string(),
        "{created}"
    );
    assert!(here.join("skills/pdf/SKILL.md").is_file());
    let taken = env
        .aam_in(&here, &[&args[..], &["--output-dir", "."]].concat())
        .err("AAM_CONFLICT");
    assert!(taken["message"].as_str().unwrap().contains("is not empty"), "{taken}");
    let file = env
        .aam_in(&here, &[&args[..], &["--output-dir", "aam.yaml"]].concat())
        .err("AAM_CONFLICT");
    assert!(file["message"].as_str().unwrap().contains("is not a folder"), "{file}");
}

#[test]
fn invalid_manifests_report_every_problem_with_its_field() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.path("bad/skills/a")).unwrap();
    std::fs::write(
        env.path("bad/aam.yaml"),
        "name: My_Pkg\nversion: one\ndescription: ''\nartifacts:\n  skills:\n    - name: a\n      path: ../escape\n    - name: b\n      path: skills/missing\n  widgets: []\ndependencies:\n  other: 'bogus'\nplatforms: [emacs]\nsurprise: 1\n",
    )
    .unwrap();
    let run = env.aam(&["--json", "pkg", "validate", "bad"]);
    assert_eq!(run.code, 1, "{run:?}");
    let out = run.json();
    assert_eq!(out["valid"], false);
    let fields: Vec<&str> = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    for field in [
        "name",
        "version",
        "description",
        "artifacts.skills[0].path",
        "artifacts.widgets",
        "dependencies.other",
        "platforms[0]",
    ] {
        assert!(fields.contains(&field), "{field} missing from {fields:?}");
    }
    let name_error = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["field"] == "name")
        .unwrap();
    assert!(
        name_error["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `my-pkg`")
    );
    assert_eq!(out["warnings"][0]["field"], "surprise");
    assert_eq!(out["package_name"], "My_Pkg");
    let human = env.aam(&["pkg", "validate", "bad"]);
    assert!(
        human
            .stdout
            .contains("error: name: `My_Pkg` is not a valid package name"),
        "{}",
        human.stdout
    );
    let pack = env.json_err(&["pkg", "pack", "bad"], "AAM_MANIFEST_INVALID");
    assert!(pack["message"].as_str().unwrap().contains("more problems"));
    assert!(!env.path("bad/dist").exists());
}

/// An archive holding `aam.yaml` plus one crafted entry.
fn hostile_archive(path: &Path, name: &str, kind: tar::EntryType, link: Option<&str>) {
    let gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut builder = tar::Builder::new(gzip);
    let manifest =
        "name: evil\nversion: 1.0.0\ndescription: Evil\nartifacts:\n  skills:\n    - name: a\n      path: skills/a\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(manifest.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    builder
        .append_data(&mut header, "aam.yaml", manifest.as_bytes())
        .unwrap();
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(0);
    header.set_mode(0o644);
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    if let Some(target) = link {
        header.set_link_name(target).unwrap();
    }
    header.set_cksum();
    builder.append(&header, &[][..]).unwrap();
    std::fs::write(path, builder.into_inner().unwrap().finish().unwrap()).unwrap();
}

#[test]
fn hostile_archives_are_refused_naming_the_entry() {
    let env = TestEnv::new();
    env.json(&["registry", "init", "reg", "--default"]);
    let cases = [
        ("abs.aam", "/etc/passwd", tar::EntryType::Regular, None),
        ("dots.aam", "../../escape", tar::EntryType::Regular, None),
        (
            "link.aam",
            "skills/a/SKILL.md",
            tar::EntryType::Symlink,
            Some("/etc/passwd"),
        ),
    ];
    for (file, entry, kind, link) in cases {
        let path = env.path(file);
        hostile_archive(&path, entry, kind, link);
        let before = env.state();
        let body = env.json_err(&["pkg", "publish", path.to_str().unwrap()], "AAM_ARCHIVE_INVALID");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains(&format!("archive entry `{entry}`")),
            "{body}"
        );
        assert_eq!(before, env.state());
        env.json_err(&["pkg", "validate", path.to_str().unwrap()], "AAM_ARCHIVE_INVALID");
    }
    let index: Value = serde_json::from_slice(&std::fs::read(env.path("reg/index.json")).unwrap()).unwrap();
    assert_eq!(index["packages"], json!({}));
}

/// A registry URL written by hand with credentials is used as written but
/// never shown: not by `registry list` (text or JSON), nor by the settings
/// reads an MCP client gets (`aam://registries` and `aam://config` are these
/// tools' answers).
#[test]
fn a_registry_url_with_credentials_is_never_shown() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("config.yaml"),
        "registries:\n- name: corp\n  url: https://deploy:ghp_SECRETREGTOKEN@registry.example.com/aam\n  default: true\n- name: local\n  url: file:///srv/node@18/reg\n",
    )
    .unwrap();
    let listed = env.json(&["registry", "list"]);
    assert_eq!(listed["registries"][0]["url"], "https://***@registry.example.com/aam");
    // A local path is no credential, whatever it holds.
    assert_eq!(listed["registries"][1]["url"], "file:///srv/node@18/reg");
    let text = env.aam(&["registry", "list"]);
    assert_eq!(text.code, 0, "{text:?}");
    let shown = [
        text.stdout,
        env.json(&["config", "get", "registries"]).to_string(),
        env.json(&["config", "list"]).to_string(),
        env.json(&["tool", "call", "aam_registry_list", "{}"]).to_string(),
    ];
    for text in shown {
        assert!(text.contains("registry.example.com"), "{text}");
        assert!(!text.contains("SECRETREGTOKEN") && !text.contains("deploy:"), "{text}");
    }
}
