//! The registry's command-line front ends on the real binary: `aam tool call`
//! (validation, read-only rule, confinement, logs, exit codes) and
//! `aam tools manifest|skill-doc|adapters` (deterministic files; the skill
//! installs with aam itself).

use serde_json::{Value, json};

use crate::support::{TestEnv, skill};

/// A home with one source `team` holding the skill `code-review`.
fn world() -> TestEnv {
    let env = TestEnv::new();
    let repo = env.repo("team-repo");
    repo.write(
        "skills/code-review/SKILL.md",
        skill("code-review", "Review a diff for bugs"),
    );
    repo.commit("one skill");
    env.json(&["source", "add", "./team-repo", "--name", "team"]);
    env
}

fn call(env: &TestEnv, vars: &[(&str, &str)], name: &str, input: &str) -> crate::support::Run {
    env.aam_with(env.root.path(), vars, &["-v", "tool", "call", name, input])
}

#[test]
fn a_call_prints_the_output_and_logs_it() {
    let env = world();
    let run = call(&env, &[], "aam_search", r#"{"query": "review"}"#);
    let output = run.ok_json();
    assert_eq!(output["results"][0]["name"], "code-review", "{output}");
    for field in [
        "tool call",
        "request_id=",
        "tool=\"aam_search\"",
        "duration_ms=",
        "status=\"ok\"",
    ] {
        assert!(run.stderr.contains(field), "log lacks {field}: {}", run.stderr);
    }

    // The same input from a file, and no input at all (`{}`).
    std::fs::write(env.path("input.json"), r#"{"query": "review", "limit": 1}"#).unwrap();
    let from_file = env
        .aam(&["tool", "call", "aam_search", "--input", "input.json"])
        .ok_json();
    assert_eq!(from_file["results"], json!([output["results"][0]]));
    let sources = env.aam(&["tool", "call", "aam_source_list"]).ok_json();
    assert_eq!(sources["sources"][0]["name"], "team");
}

#[test]
fn a_tool_error_exits_1_with_its_code_and_is_logged() {
    let env = world();
    let run = call(&env, &[], "aam_info", r#"{"name": "team/nope"}"#);
    run.err("AAM_ARTIFACT_NOT_FOUND");
    for field in [
        "status=\"error\"",
        "code=\"AAM_ARTIFACT_NOT_FOUND\"",
        "tool=\"aam_info\"",
    ] {
        assert!(run.stderr.contains(field), "log lacks {field}: {}", run.stderr);
    }
}

/// `aam tool call aam_info` makes the package-or-artifact choice `aam info`
/// shows: a package of that name wins over an artifact of the same name, a
/// `source/artifact` form is always the artifact.
#[test]
fn info_answers_a_package_name_with_the_package() {
    let env = world();
    env.json(&["registry", "init", "registry", "--name", "local", "--default"]);
    env.json(&[
        "pkg",
        "create",
        "--from-source",
        "team",
        "--artifacts",
        "code-review",
        "--name",
        "code-review",
        "--version",
        "1.0.0",
    ]);
    env.json(&["pkg", "publish", "code-review"]);
    let package = call(&env, &[], "aam_info", r#"{"name": "code-review"}"#).ok_json();
    assert_eq!(package["versions"], json!(["1.0.0"]), "{package}");
    assert_eq!(package["registry"], "local", "{package}");
    assert_eq!(package["artifacts"], json!(["skill/code-review"]), "{package}");
    assert_eq!(
        package,
        env.json(&["info", "code-review"]),
        "the CLI shows what the tool answers"
    );
    let artifact = call(&env, &[], "aam_info", r#"{"name": "team/code-review"}"#).ok_json();
    assert_eq!(artifact["qualified_name"], "team/code-review", "{artifact}");
    assert_eq!(artifact, env.json(&["info", "team/code-review"]));
}

#[test]
fn invalid_input_names_the_field() {
    let env = world();
    for (input, field) in [
        (r#"{"query": "x", "limit": "ten"}"#, "`limit`"),
        (r#"{"query": "x", "colour": 1}"#, "`colour`"),
        (r#"{"query": "x", "limit": 0}"#, "`limit`"),
    ] {
        let body = call(&env, &[], "aam_search", input).err("AAM_INVALID_ARGUMENT");
        let message = body["message"].as_str().unwrap();
        assert!(message.contains(field), "{input}: {message}");
    }
    let body = call(&env, &[], "aam_source_remove", "{}").err("AAM_INVALID_ARGUMENT");
    assert!(body["message"].as_str().unwrap().contains("`name`"), "{body}");

    let body = call(&env, &[], "aam_search", "{query").err("AAM_INVALID_ARGUMENT");
    assert!(body["message"].as_str().unwrap().contains("not JSON"), "{body}");
    for list in ["[]", r#"["review"]"#, "7"] {
        let body = call(&env, &[], "aam_search", list).err("AAM_INVALID_ARGUMENT");
        assert!(
            body["message"].as_str().unwrap().contains("not a JSON object"),
            "{body}"
        );
    }
    let run = env.aam(&["tool", "call", "aam_search", "--input", "/dev/zero"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("larger than"), "{run:?}");

    let body = call(&env, &[], "aam_serch", "{}").err("AAM_INVALID_ARGUMENT");
    assert!(body["hint"].as_str().unwrap().contains("`aam_search`"), "{body}");
}

#[test]
fn read_only_mode_refuses_writes_and_changes_nothing() {
    let env = world();
    let before = env.state();
    for (name, input) in [
        ("aam_source_remove", r#"{"name": "team", "purge_cache": true}"#),
        ("aam_source_update", r#"{"all": true}"#),
        ("aam_catalog_reindex", "{}"),
        ("aam_catalog_repair", "{}"),
        ("aam_catalog_export", r#"{"output": "audit.db"}"#),
        ("aam_init", r#"{"platforms": ["claude"]}"#),
    ] {
        let run = call(&env, &[("AAM_READ_ONLY", "1")], name, input);
        let body = run.err("AAM_FORBIDDEN");
        assert!(body["message"].as_str().unwrap().contains(name), "{body}");
        assert!(run.stderr.contains("code=\"AAM_FORBIDDEN\""), "{}", run.stderr);
    }
    assert_eq!(env.state(), before, "read-only mode changed the home");
    assert!(!env.path("audit.db").exists() && !env.path(".aam").exists());
    // Reads still work, and the same write goes through without the setting.
    call(&env, &[("AAM_READ_ONLY", "1")], "aam_source_list", "{}").ok_json();
    call(&env, &[], "aam_source_remove", r#"{"name": "team"}"#).ok_json();
    assert!(env.artifacts("team").is_empty());
}

#[test]
fn paths_outside_the_folder_and_home_are_forbidden() {
    let env = world();
    let outside = tempfile::tempdir().unwrap();
    let input = json!({ "path": outside.path() }).to_string();
    let body = call(&env, &[], "aam_validate", &input).err("AAM_FORBIDDEN");
    assert!(
        body["message"].as_str().unwrap().contains("outside the project"),
        "{body}"
    );
}

/// A repository in a folder of its own, outside every test's folder, holding
/// the skill `secret`.
fn repository_outside() -> tempfile::TempDir {
    let outside = tempfile::tempdir().unwrap();
    let secret = crate::support::Repo {
        dir: outside.path().to_path_buf(),
    };
    secret.git(&["init", "-q", "-b", "main"]);
    secret
        .write("skills/secret/SKILL.md", skill("secret", "Outside the project"))
        .commit("outside");
    outside
}

#[test]
fn a_local_source_whose_git_folder_lies_outside_is_forbidden() {
    let env = world();
    // A repository outside the folder the call is confined to, reached from
    // inside through a `.git` link and through a `gitdir:` file.
    let outside = repository_outside();
    std::fs::create_dir_all(env.path("linked")).unwrap();
    std::os::unix::fs::symlink(outside.path().join(".git"), env.path("linked/.git")).unwrap();
    std::fs::create_dir_all(env.path("pointer")).unwrap();
    std::fs::write(
        env.path("pointer/.git"),
        format!("gitdir: {}\n", outside.path().join(".git").display()),
    )
    .unwrap();
    // A git folder of its own inside, whose objects and refs are links to the
    // repository outside (found by an attacker helper: it was indexed).
    let own = crate::support::Repo { dir: env.path("own") };
    std::fs::create_dir_all(&own.dir).unwrap();
    own.git(&["init", "-q", "-b", "main"]);
    for part in ["objects", "refs"] {
        std::fs::remove_dir_all(own.dir.join(".git").join(part)).unwrap();
        std::os::unix::fs::symlink(outside.path().join(".git").join(part), own.dir.join(".git").join(part)).unwrap();
    }
    for spec in ["./linked", "./pointer", "./own"] {
        let input = json!({ "spec": spec, "name": "stolen" }).to_string();
        let body = call(&env, &[], "aam_source_add", &input).err("AAM_FORBIDDEN");
        assert!(body["message"].as_str().unwrap().contains(spec), "{body}");
    }
    assert!(env.artifacts("stolen").is_empty());
    // Linked out after a clean add: the next update is refused too.
    let clean = env.repo("clean");
    clean
        .write("skills/mine/SKILL.md", skill("mine", "Inside"))
        .commit("c1");
    let input = json!({ "spec": "./clean", "name": "clean" }).to_string();
    call(&env, &[], "aam_source_add", &input).ok_json();
    let objects = clean.dir.join(".git/objects");
    std::fs::rename(&objects, env.path("clean-objects")).unwrap();
    std::os::unix::fs::symlink(outside.path().join(".git/objects"), &objects).unwrap();
    // Every call that fetches from it is refused: an update, and a diff (a
    // read tool: it read the repository outside and named its artifacts).
    let input = json!({ "name": "clean" }).to_string();
    let refused = |env: &TestEnv| {
        for tool in ["aam_source_update", "aam_source_diff"] {
            call(env, &[], tool, &input).err("AAM_FORBIDDEN");
        }
    };
    refused(&env);
    // The repository folder itself swapped for a link out (it skipped the check).
    std::fs::remove_file(&objects).unwrap();
    std::fs::rename(env.path("clean-objects"), &objects).unwrap();
    call(&env, &[], "aam_source_update", &input).ok_json();
    std::fs::rename(&clean.dir, env.path("clean-moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &clean.dir).unwrap();
    refused(&env);
    // A repair fetching its lost cache again is refused too.
    std::fs::remove_dir_all(env.home().join("cache/git")).unwrap();
    let repaired = call(&env, &[], "aam_catalog_repair", "{}").ok_json();
    let refetch = repaired["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"].as_str().unwrap().ends_with("of `clean` again"))
        .unwrap_or_else(|| panic!("{repaired}"));
    assert_eq!(refetch["ok"], false, "{repaired}");
    assert!(
        refetch["error"].as_str().unwrap().contains("outside the project"),
        "{repaired}"
    );
    assert!(
        env.artifacts("clean").iter().all(|a| !a.contains("secret")),
        "{:?}",
        env.artifacts("clean")
    );
    // The CLI itself is not confined: the user may add any repository.
    env.json(&["source", "add", "./pointer", "--name", "mine"]);
    assert!(!env.artifacts("mine").is_empty());
}

/// A restore confined to a project never reads a lock's `file://` repository
/// outside it (it fetched the locked commit from anywhere the lock named).
#[test]
fn a_confined_restore_reads_no_repository_outside() {
    let env = TestEnv::new();
    let outside = repository_outside();
    env.json(&["source", "add", outside.path().to_str().unwrap(), "--name", "out"]);
    let first = env.repo("first");
    env.aam_in(&first.dir, &["--json", "install", "out/secret", "--platform", "claude"])
        .ok_json();
    env.json(&["source", "remove", "out", "--purge-cache"]);
    let second = env.repo("second");
    std::fs::create_dir_all(second.dir.join(".aam")).unwrap();
    std::fs::copy(
        first.dir.join(".aam/aam-lock.yaml"),
        second.dir.join(".aam/aam-lock.yaml"),
    )
    .unwrap();
    let run = env.aam_with(&second.dir, &[], &["tool", "call", "aam_install", "{}"]);
    let body = run.err("AAM_FORBIDDEN");
    assert!(
        body["message"].as_str().unwrap().contains("outside the project"),
        "{body}"
    );
    assert!(!second.dir.join(".claude").exists());
    // The CLI itself is not confined: the user may restore from anywhere.
    env.aam_in(&second.dir, &["--json", "install"]).ok_json();
    assert!(second.dir.join(".claude/skills/secret/SKILL.md").is_file());
}

/// Confined to a folder inside a repository (`aam tool call` run there, as
/// `aam mcp serve --root` naming it), the project is that folder: the
/// repository's other files are outside (a package was made of them and
/// candidates listed them), and an install lands in the folder (it failed
/// with AAM_FORBIDDEN naming a path of the project above).
#[test]
fn a_folder_inside_a_repository_is_the_project_of_calls_confined_to_it() {
    let env = world();
    let parent = env.repo("parent");
    parent
        .write("hidden/s/SKILL.md", skill("s", "Parent secret"))
        .write("CLAUDE.md", "Parent secret\n")
        .commit("c1");
    let sub = parent.dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let in_sub = |name: &str, input: &str| env.aam_with(&sub, &[], &["tool", "call", name, input]);
    for artifacts in [r#"["hidden/s"]"#, r#"["CLAUDE.md"]"#] {
        let input = format!(r#"{{"artifacts": {artifacts}, "name": "leak", "output_dir": "leak"}}"#);
        let run = in_sub("aam_create_package", &input);
        assert_eq!(run.code, 1, "{run:?}");
    }
    assert!(!sub.join("leak").exists());
    let candidates = in_sub("aam_source_candidates", "{}").ok_json();
    let own: Vec<&Value> = candidates["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source_type"] == "local_project")
        .collect();
    assert!(own.is_empty(), "{candidates}");
    let install = r#"{"specs": ["team/code-review"], "platforms": ["claude"]}"#;
    in_sub("aam_install", install).ok_json();
    assert!(sub.join(".claude/skills/code-review/SKILL.md").is_file());
    assert!(!parent.dir.join(".claude").exists());
}

/// Exports, archives and new packages never land where aam keeps its own
/// files: the catalog and settings in AAM_HOME, the lock file, an installed
/// file with its edit. A package folder holding AAM_HOME (its MCP token) is
/// never packed, and `pkg init` replaces nothing and writes through no link.
#[test]
fn outputs_never_replace_what_aam_keeps_or_installed() {
    let env = world();
    env.json(&["install", "team/code-review", "--platform", "claude"]);
    let installed = env.path(".claude/skills/code-review/SKILL.md");
    std::fs::write(&installed, "my edit\n").unwrap();
    let lock = std::fs::read(env.path(".aam/aam-lock.yaml")).unwrap();
    let catalog = env.home().join("catalog.db");
    let catalog_bytes = std::fs::read(&catalog).unwrap();
    call(&env, &[], "aam_init_package", r#"{"name": "kit", "dir": "kit"}"#).ok_json();
    let refused = [
        catalog.display().to_string(),
        env.home().join("mcp-token").display().to_string(),
        ".aam/aam-lock.yaml".to_string(),
        ".claude/skills/code-review/SKILL.md".to_string(),
        // Where agents read settings or instructions, in any case (they were written).
        ".AAM/x.db".to_string(),
        ".Claude/Skills/x.csv".to_string(),
        ".claude/settings.json".to_string(),
        ".cursorrules".to_string(),
        ".github/copilot-instructions.md".to_string(),
        "docs/CLAUDE.md".to_string(),
    ];
    for output in &refused {
        let export = json!({ "format": "jsonl", "output": output }).to_string();
        call(&env, &[], "aam_catalog_export", &export).err("AAM_FORBIDDEN");
        let pack = json!({ "path": "kit", "output": output }).to_string();
        call(&env, &[], "aam_pack", &pack).err("AAM_FORBIDDEN");
    }
    let run = env.aam(&["catalog", "export", "--format", "csv", "--output", ".aam/aam-lock.yaml"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("AAM_FORBIDDEN"), "{run:?}");
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), "my edit\n");
    assert_eq!(std::fs::read(env.path(".aam/aam-lock.yaml")).unwrap(), lock);
    assert_eq!(std::fs::read(&catalog).unwrap(), catalog_bytes);
    // Exports may still go under AAM_HOME's `exports/`.
    let export = json!({ "format": "csv", "output": env.home().join("exports/a.csv") }).to_string();
    call(&env, &[], "aam_catalog_export", &export).ok_json();
    // An export replaces an earlier export of its format, never a file of the
    // user's, another database, a link or a folder.
    std::fs::write(env.path("NOTES.md"), "my notes\n").unwrap();
    std::fs::write(env.path(".mcp.json"), "{\"mcpServers\": {}}\n").unwrap();
    let other_db = rusqlite::Connection::open(env.path("app.db")).unwrap();
    other_db
        .execute_batch("CREATE TABLE t (x); PRAGMA application_id = 7;")
        .unwrap();
    drop(other_db);
    std::os::unix::fs::symlink(env.path("NOTES.md"), env.path("notes.csv")).unwrap();
    for (format, output) in [
        ("csv", "NOTES.md"),
        ("jsonl", ".mcp.json"),
        ("sqlite", "app.db"),
        ("csv", "notes.csv"),
    ] {
        let export = json!({ "format": format, "output": output }).to_string();
        let body = call(&env, &[], "aam_catalog_export", &export).err("AAM_CONFLICT");
        assert!(body["message"].as_str().unwrap().contains("not an earlier"), "{body}");
    }
    assert_eq!(std::fs::read_to_string(env.path("NOTES.md")).unwrap(), "my notes\n");
    assert!(std::fs::symlink_metadata(env.path("notes.csv")).unwrap().is_symlink());
    let run = env.aam(&["catalog", "export", "--format", "jsonl", "--output", ".mcp.json"]);
    assert!(run.stderr.contains("AAM_CONFLICT"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(env.path(".mcp.json")).unwrap(),
        "{\"mcpServers\": {}}\n"
    );
    for format in ["csv", "jsonl", "sqlite"] {
        let export = json!({ "format": format, "output": format!("audit/again.{format}") }).to_string();
        call(&env, &[], "aam_catalog_export", &export).ok_json();
        call(&env, &[], "aam_catalog_export", &export).ok_json();
        // ...but not one of another format.
        let other = if format == "csv" { "jsonl" } else { "csv" };
        let export = json!({ "format": other, "output": format!("audit/again.{format}") }).to_string();
        call(&env, &[], "aam_catalog_export", &export).err("AAM_CONFLICT");
    }
    std::os::unix::fs::symlink(env.path("nowhere/x.csv"), env.path("dangling.csv")).unwrap();
    let body = call(
        &env,
        &[],
        "aam_catalog_export",
        r#"{"format": "csv", "output": "dangling.csv"}"#,
    )
    .err("AAM_FORBIDDEN");
    assert!(
        body["message"].as_str().unwrap().contains("a link that points nowhere"),
        "{body}"
    );
    for output in ["audit", "", "-"] {
        let export = json!({ "format": "csv", "output": output }).to_string();
        call(&env, &[], "aam_catalog_export", &export).err("AAM_INVALID_ARGUMENT");
    }
    assert!(!env.path("-").exists());

    let home = json!({ "path": env.home() }).to_string();
    call(&env, &[], "aam_pack", &home).err("AAM_FORBIDDEN");
    let holding = json!({ "path": env.root.path() }).to_string();
    let body = call(&env, &[], "aam_pack", &holding).err("AAM_FORBIDDEN");
    assert!(body["message"].as_str().unwrap().contains("AAM_HOME"), "{body}");
    std::fs::copy(env.path("kit/aam.yaml"), env.path("aam.yaml")).unwrap();
    let publish = json!({ "archive": env.root.path() }).to_string();
    call(&env, &[], "aam_publish", &publish).err("AAM_FORBIDDEN");
    call(&env, &[], "aam_install", r#"{"specs": ["."], "platforms": ["claude"]}"#).err("AAM_FORBIDDEN");
    std::fs::remove_file(env.path("aam.yaml")).unwrap();

    std::fs::create_dir_all(env.path("mine/skills/mine")).unwrap();
    std::fs::write(env.path("mine/skills/mine/SKILL.md"), "my own skill\n").unwrap();
    call(&env, &[], "aam_init_package", r#"{"name": "mine", "dir": "mine"}"#).err("AAM_CONFLICT");
    assert_eq!(
        std::fs::read_to_string(env.path("mine/skills/mine/SKILL.md")).unwrap(),
        "my own skill\n"
    );
    assert!(!env.path("mine/aam.yaml").exists());
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(env.path("linked/skills")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), env.path("linked/skills/linked")).unwrap();
    call(&env, &[], "aam_init_package", r#"{"name": "linked", "dir": "linked"}"#).err("AAM_FORBIDDEN");
    let run = env.aam(&["pkg", "init", "linked", "--yes", "--dir", "linked"]);
    assert!(run.stderr.contains("AAM_UNSAFE_PATH"), "{run:?}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

/// The checks hold where an output lands, however it is written: through
/// `..` and folders that do not exist yet, in a project below the working
/// folder, in the home folder's agent folders. A package folder is still
/// made anywhere else, the project root included.
#[test]
fn outputs_are_checked_where_they_land() {
    let env = world();
    let refused = |run: crate::support::Run| {
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("AAM_FORBIDDEN"), "{run:?}");
    };
    env.json(&["install", "team/code-review", "--platform", "claude"]);
    let lock = std::fs::read(env.path(".aam/aam-lock.yaml")).unwrap();
    refused(env.aam(&[
        "catalog",
        "export",
        "--format",
        "csv",
        "-o",
        "nope/../.aam/aam-lock.yaml",
    ]));
    let catalog = env.home().join("exports/../catalog.db");
    refused(env.aam(&["catalog", "export", "--format", "csv", "-o", catalog.to_str().unwrap()]));
    assert_eq!(std::fs::read(env.path(".aam/aam-lock.yaml")).unwrap(), lock);

    let nested = env.path("nested");
    std::fs::create_dir_all(&nested).unwrap();
    env.aam_in(
        &nested,
        &["--json", "install", "team/code-review", "--platform", "claude"],
    )
    .ok_json();
    let export = json!({ "format": "jsonl", "output": "nested/.aam/aam-lock.yaml" }).to_string();
    call(&env, &[], "aam_catalog_export", &export).err("AAM_FORBIDDEN");
    refused(env.aam(&["catalog", "export", "-o", "nested/.claude/skills/code-review/SKILL.md"]));

    env.json(&["install", "-g", "team/code-review", "--platform", "claude"]);
    let global = env.user_home().join(".claude/skills/code-review/SKILL.md");
    let installed = std::fs::read(&global).unwrap();
    refused(env.aam(&["catalog", "export", "-o", global.to_str().unwrap()]));
    assert_eq!(std::fs::read(&global).unwrap(), installed);

    // A package made in an agent's folder would put its skills where that
    // agent reads them, past the install's audit and with no lock entry.
    for dir in [".cursor", ".agents", ".github", ".claude"] {
        let create =
            json!({ "artifacts": ["team-repo/skills/code-review"], "name": "planted", "output_dir": dir }).to_string();
        if dir != ".claude" {
            // An agent's own folder is refused as a whole; in `.github`, which
            // holds more, where the skill would land is.
            let body = call(&env, &[], "aam_create_package", &create).err("AAM_FORBIDDEN");
            let named = match dir {
                ".github" => "/skills/code-review",
                _ => dir,
            };
            assert!(body["message"].as_str().unwrap().contains(named), "{body}");
        }
        call(
            &env,
            &[],
            "aam_init_package",
            &json!({ "name": "planted", "dir": dir }).to_string(),
        )
        .err("AAM_FORBIDDEN");
        assert!(!env.path(dir).join("skills/planted").exists() && !env.path(dir).join("aam.yaml").exists());
    }
    assert!(!env.path(".cursor").exists() && !env.path(".agents").exists());
    refused(env.aam(&["pkg", "init", "planted", "--yes", "--dir", ".agents"]));
    // Nor does a marker of a project inside the agent's folder make it a
    // package's own root, and a folder outside any repository is no exception.
    std::fs::create_dir_all(env.path(".claude/.aam")).unwrap();
    call(&env, &[], "aam_init_package", r#"{"name": "kit", "dir": ".claude"}"#).err("AAM_FORBIDDEN");
    let bare = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bare.path().join(".claude")).unwrap();
    refused(env.aam_in(
        &bare.path().join(".claude"),
        &["pkg", "init", "planted", "--yes", "--dir", "."],
    ));
    assert!(!bare.path().join(".claude/skills").exists() && !env.path(".claude/skills/kit").exists());

    let fresh = env.path("fresh");
    std::fs::create_dir_all(&fresh).unwrap();
    env.aam_in(&fresh, &["--json", "pkg", "init", "--yes"]).ok_json();
    assert!(fresh.join("skills/fresh/SKILL.md").exists());
}

#[test]
fn exports_are_deterministic_and_the_skill_installs_with_aam() {
    let env = TestEnv::new();
    let manifest = env.aam(&["tools", "manifest"]);
    assert_eq!(manifest.code, 0, "{manifest:?}");
    env.aam(&["tools", "manifest", "--output", "out/manifest.json"]);
    let written = std::fs::read_to_string(env.path("out/manifest.json")).unwrap();
    assert_eq!(written, manifest.stdout, "stdout and --output differ");
    assert_eq!(
        env.aam(&["tools", "manifest"]).stdout,
        manifest.stdout,
        "not deterministic"
    );
    let tools: Value = serde_json::from_str(&manifest.stdout).unwrap();
    assert_eq!(tools["schema_version"], 1);

    for format in ["openai", "anthropic", "gemini"] {
        let run = env.aam(&["tools", "adapters", "--format", format]);
        assert_eq!(run.code, 0, "{run:?}");
        let definitions: Value = serde_json::from_str(&run.stdout).unwrap();
        // Gemini wraps its declarations in one `Tool` object.
        let definitions = match format {
            "gemini" => definitions[0]["functionDeclarations"].clone(),
            _ => definitions,
        };
        assert_eq!(
            definitions.as_array().map(Vec::len),
            tools["tools"].as_array().map(Vec::len),
            "{format}"
        );
    }
    let run = env.aam(&["tools", "adapters", "--format", "llama"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("openai"), "{}", run.stderr);

    let doc = env.aam(&["tools", "skill-doc"]).stdout;
    assert!(doc.starts_with("---\nname: aam\ndescription: "), "{doc}");
    env.aam(&["tools", "skill-doc", "--output", "doc"]);
    assert_eq!(std::fs::read_to_string(env.path("doc/SKILL.md")).unwrap(), doc);

    // The skill as a package, deployed by aam itself.
    let run = env.aam(&["tools", "skill-doc", "--package", "aam-skill"]);
    assert_eq!(run.code, 0, "{run:?}");
    let valid = env.json(&["pkg", "validate", "aam-skill"]);
    assert_eq!(valid["valid"], true, "{valid}");
    env.json(&["install", "./aam-skill", "--platform", "claude"]);
    let deployed = std::fs::read_to_string(env.path(".claude/skills/aam/SKILL.md")).unwrap();
    assert_eq!(deployed, doc);
    let verified = env.json(&["verify", "--all"]);
    assert_eq!(verified["packages"][0]["package_name"], "aam-skill", "{verified}");
    assert_eq!(verified["is_clean"], true, "{verified}");
}

/// An unknown tool name is answered with the tools a typo or two away, and
/// with none for a word that only shares letters (`aam_nope` suggested `aam_adopt`).
#[test]
fn an_unknown_tool_suggests_only_close_names() {
    let env = TestEnv::new();
    let typo = env
        .aam(&["--json", "tool", "call", "aam_serch", "{}"])
        .err("AAM_INVALID_ARGUMENT");
    assert_eq!(typo["hint"], "did you mean `aam_search`?");
    let unlike = env
        .aam(&["--json", "tool", "call", "aam_nope", "{}"])
        .err("AAM_INVALID_ARGUMENT");
    assert_eq!(unlike["hint"], "list the tools with `aam tools manifest`");
}
