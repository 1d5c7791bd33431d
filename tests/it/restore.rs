//! Restoring from the lock file: `aam install` with no arguments on a project
//! whose installed files are gone, in a fresh `AAM_HOME` (caches and catalog
//! gone), with `--frozen` and `--offline`, and through `aam tool call`.

use std::path::{Path, PathBuf};

use crate::install::{lock, package, project, run_in, text, tree};
use crate::support::{Repo, Run, TestEnv, skill};

/// A source repository `upstream` with two skills (one with an executable
/// script) and an agent, added as source `upstream`.
fn upstream(env: &TestEnv) -> Repo {
    let repo = upstream_repo(env);
    env.json(&["source", "add", repo.path(), "--name", "upstream"]);
    repo
}

/// A smart-HTTP server of a test, stopped when this goes.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// [`upstream`], served over smart HTTP from a bare clone and added as source
/// `upstream` by that URL: a lock names it as a CI machine meets it, a
/// repository to fetch (a local repository a lock names is read only where
/// this machine uses it).
fn served_upstream(env: &TestEnv) -> (Repo, Served) {
    let repo = upstream_repo(env);
    let (server, url) = crate::sources::serve_bare_clone(env, &repo, false, &[]);
    env.json(&["source", "add", &url, "--name", "upstream"]);
    (repo, Served(server))
}

/// The repository of [`upstream`], committed, not added.
fn upstream_repo(env: &TestEnv) -> Repo {
    let repo = env.repo("upstream");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDF v1"))
        .write("skills/pdf/scripts/fill.sh", "#!/bin/sh\necho fill\n")
        .write("skills/docx/SKILL.md", skill("docx", "DOCX v1"))
        .write(
            "agents/reviewer.md",
            "---\nname: reviewer\ndescription: Reviews changes\n---\nYou review changes.\n",
        );
    use std::os::unix::fs::PermissionsExt;
    let script = repo.dir.join("skills/pdf/scripts/fill.sh");
    std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.commit("c1");
    repo
}

/// `aam --json <args>` in `dir` with `AAM_HOME` set to `home`.
fn run(env: &TestEnv, home: &Path, dir: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    env.aam_with(dir, &[("AAM_HOME", home.to_str().unwrap())], &all)
}

/// Deletes everything in the project but its git folder and the lock file.
fn keep_only_the_lock(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match name.as_str() {
            ".git" => {}
            ".aam" => {
                for inner in std::fs::read_dir(&path).unwrap() {
                    let inner = inner.unwrap().path();
                    if inner.file_name().unwrap() != "aam-lock.yaml" {
                        remove(&inner);
                    }
                }
            }
            _ => remove(&path),
        }
    }
}

fn remove(path: &Path) {
    if path.is_dir() {
        std::fs::remove_dir_all(path).unwrap();
    } else {
        std::fs::remove_file(path).unwrap();
    }
}

/// Asserts every file below `dir` has the bytes it had in `before`, naming
/// the files that differ. A shared file (`AGENTS.md`, `CLAUDE.md`) that was
/// gone is rebuilt from its sections in the lock file's package order, which
/// need not be the order they were first installed in: those compare as the
/// set of their sections, each byte for byte.
fn same_tree(dir: &Path, before: &std::collections::BTreeMap<String, Vec<u8>>) {
    let sections = |files: std::collections::BTreeMap<String, Vec<u8>>| {
        files
            .into_iter()
            .map(|(key, bytes)| match key.as_str() {
                "AGENTS.md" | "CLAUDE.md" => {
                    let text = String::from_utf8(bytes).unwrap();
                    let mut parts: Vec<&str> = text.split("\n\n").map(|p| p.trim_end_matches('\n')).collect();
                    parts.sort();
                    (key, parts.join("\n\n").into_bytes())
                }
                _ => (key, bytes),
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (before, after) = (&sections(before.clone()), sections(tree(dir)));
    let differ: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| match (before.get(k), after.get(k)) {
            (Some(b), Some(a)) => format!(
                "{k}:\n--- before\n{}\n--- after\n{}",
                String::from_utf8_lossy(b),
                String::from_utf8_lossy(a)
            ),
            (Some(_), None) => format!("{k}: gone"),
            _ => format!("{k}: new"),
        })
        .collect();
    assert!(
        differ.is_empty(),
        "every byte, the lock file included:\n{}",
        differ.join("\n")
    );
}

fn mode(path: PathBuf) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(&path).unwrap().permissions().mode() & 0o777
}

/// A project with two source skills, a source agent and a registry package
/// (every artifact type) for claude and codex; the source is served over HTTP
/// while the guard lives.
fn installed_project(env: &TestEnv) -> (Repo, Served) {
    let (_, served) = served_upstream(env);
    env.json(&["registry", "init", "reg", "--default"]);
    let kit = env.path("kit-src");
    package(&kit, "kit", "1.0.0", &[]);
    env.json(&["pkg", "publish", kit.to_str().unwrap()]);
    let proj = project(env);
    let specs = ["upstream/pdf", "upstream/docx", "upstream/reviewer", "kit@^1"];
    let mut args = vec!["install", "--platform", "claude", "--platform", "codex"];
    args.extend(specs);
    run(env, &env.home(), &proj.dir, &args).ok_json();
    (proj, served)
}

#[test]
fn a_project_with_only_its_lock_is_restored_byte_for_byte_in_a_fresh_home() {
    let env = TestEnv::new();
    let (proj, _served) = installed_project(&env);
    let before = tree(&proj.dir);
    assert!(
        before.contains_key(".claude/skills/pdf/scripts/fill.sh"),
        "{:?}",
        before.keys()
    );
    assert_eq!(mode(proj.dir.join(".claude/skills/pdf/scripts/fill.sh")), 0o755);
    let entry = lock(&proj.dir)["packages"]["pdf"].clone();
    let url = entry["source_url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/repo.git"),
        "{url}"
    );

    keep_only_the_lock(&proj.dir);
    let fresh = env.path("fresh-home");
    // Registries are this machine's settings; the lock names them by name.
    let missing = run(&env, &fresh, &proj.dir, &["install"]).err("AAM_REGISTRY_NOT_FOUND");
    assert!(
        missing["hint"].as_str().unwrap().contains("aam registry add reg"),
        "{missing}"
    );
    assert_eq!(tree(&proj.dir).len(), 1, "a failed restore writes nothing");
    run(
        &env,
        &fresh,
        &proj.dir,
        &["registry", "add", "reg", env.path("reg").to_str().unwrap()],
    )
    .ok_json();
    let restored = run(&env, &fresh, &proj.dir, &["install"]).ok_json();
    assert_eq!(restored["installed"].as_array().unwrap().len(), 4, "{restored}");
    assert_eq!(restored["lock_changes"], serde_json::json!([]), "{restored}");
    same_tree(&proj.dir, &before);
    assert_eq!(mode(proj.dir.join(".claude/skills/pdf/scripts/fill.sh")), 0o755);

    let again = run(&env, &fresh, &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(again["installed"], serde_json::json!([]), "{again}");
    assert_eq!(again["skipped"].as_array().unwrap().len(), 4);
    assert!(
        again["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["reason"] == "already_installed")
    );
    assert_eq!(run(&env, &fresh, &proj.dir, &["verify", "--all"]).code, 0);

    // An edited file is never overwritten: the restore keeps it and exits 0
    // (a team's committed edit made `install --frozen` fail in CI for good),
    // and writes what is missing around it; `--force` restores it.
    let deployed = proj.dir.join(".claude/skills/docx/SKILL.md");
    let pdf = proj.dir.join(".claude/skills/pdf/SKILL.md");
    let script = proj.dir.join(".claude/skills/pdf/scripts/fill.sh");
    std::fs::write(&deployed, "mine\n").unwrap();
    std::fs::write(&pdf, "my pdf notes\n").unwrap();
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::set_permissions(&pdf, std::fs::Permissions::from_mode(0o755)).unwrap();
    let inode = std::fs::metadata(&pdf).unwrap().ino();
    std::fs::remove_file(&script).unwrap();
    let kept = run(&env, &fresh, &proj.dir, &["install", "--frozen"]).ok_json();
    let docx = kept["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "docx")
        .unwrap()
        .clone();
    assert_eq!(docx["reason"], "edits_kept", "{kept}");
    assert_eq!(kept["installed"][0]["name"], "pdf", "{kept}");
    assert_eq!(
        kept["installed"][0]["kept_edits"],
        serde_json::json!([".claude/skills/pdf/SKILL.md"]),
        "{kept}"
    );
    assert_eq!(text(&deployed), "mine\n");
    assert_eq!(text(&pdf), "my pdf notes\n");
    // Left as it is: not written again, its mode kept (a re-test helper saw
    // it rewritten without its executable bit).
    let kept_file = std::fs::metadata(&pdf).unwrap();
    assert_eq!((kept_file.ino(), kept_file.mode() & 0o777), (inode, 0o755));
    assert!(script.is_file(), "the missing file is written around the edit");
    let verified = run(&env, &fresh, &proj.dir, &["verify", "--all"]);
    assert_eq!(verified.code, 1, "verify still reports the edits: {verified:?}");
    run(&env, &fresh, &proj.dir, &["install", "--force"]).ok_json();
    same_tree(&proj.dir, &before);

    // Shared files kept (a clone has them: they hold your text too): every
    // byte, exactly, in a fresh home again.
    let exact = tree(&proj.dir);
    let shared: Vec<(PathBuf, Vec<u8>)> = ["AGENTS.md", "CLAUDE.md"]
        .iter()
        .map(|f| (proj.dir.join(f), std::fs::read(proj.dir.join(f)).unwrap()))
        .collect();
    keep_only_the_lock(&proj.dir);
    for (path, bytes) in &shared {
        std::fs::write(path, bytes).unwrap();
    }
    run(
        &env,
        &env.path("third-home"),
        &proj.dir,
        &["registry", "add", "reg", env.path("reg").to_str().unwrap()],
    )
    .ok_json();
    run(&env, &env.path("third-home"), &proj.dir, &["install", "--frozen"]).ok_json();
    assert!(tree(&proj.dir) == exact, "not byte for byte");
}

/// The lock file's text with `from` replaced by `to` (asserting it was there).
fn edit_lock(dir: &Path, from: &str, to: &str) {
    let path = dir.join(".aam/aam-lock.yaml");
    let original = text(&path);
    assert!(original.contains(from), "{from:?} not in {original}");
    std::fs::write(&path, original.replacen(from, to, 1)).unwrap();
}

/// [`pdf_installed`] from [`served_upstream`], served while the guard lives.
fn pdf_installed_served(env: &TestEnv) -> (Repo, Served) {
    let (_, served) = served_upstream(env);
    let proj = project(env);
    run(
        env,
        &env.home(),
        &proj.dir,
        &["install", "upstream/pdf", "--platform", "claude"],
    )
    .ok_json();
    (proj, served)
}

/// A project with the `pdf` skill of [`upstream`] installed for claude.
fn pdf_installed(env: &TestEnv) -> Repo {
    upstream(env);
    let proj = project(env);
    run(
        env,
        &env.home(),
        &proj.dir,
        &["install", "upstream/pdf", "--platform", "claude"],
    )
    .ok_json();
    proj
}

#[test]
fn frozen_fails_naming_what_differs_and_checksums_are_always_verified() {
    let env = TestEnv::new();
    let proj = pdf_installed(&env);
    let lock_path = proj.dir.join(".aam/aam-lock.yaml");
    let original = text(&lock_path);
    let restore = |args: &[&str]| {
        let mut all = vec!["install"];
        all.extend_from_slice(args);
        run(&env, &env.home(), &proj.dir, &all)
    };

    // A platform added by hand: the restore would deploy and record more.
    keep_only_the_lock(&proj.dir);
    edit_lock(
        &proj.dir,
        "platforms:\n    - claude",
        "platforms:\n    - claude\n    - cursor",
    );
    let err = restore(&["--frozen"]).err("AAM_LOCK_OUTDATED");
    let message = err["message"].as_str().unwrap();
    assert!(
        message.contains("`pdf`: deployment `cursor skill pdf -> .cursor/skills/pdf` is new"),
        "{message}"
    );
    assert_eq!(tree(&proj.dir).len(), 1, "nothing written");
    let updated = restore(&[]).ok_json();
    assert!(!updated["lock_changes"].as_array().unwrap().is_empty(), "{updated}");
    assert!(proj.dir.join(".cursor/skills/pdf/SKILL.md").is_file());

    // A deployed file's checksum changed by hand.
    keep_only_the_lock(&proj.dir);
    std::fs::write(&lock_path, &original).unwrap();
    let deployed_key = ".claude/skills/pdf/scripts/fill.sh: ";
    let at = original.find(deployed_key).unwrap() + deployed_key.len();
    let digest = original[at..].lines().next().unwrap().trim_matches('\'').to_string();
    edit_lock(
        &proj.dir,
        &format!("{deployed_key}{digest}"),
        &format!("{deployed_key}{}", "0".repeat(64)),
    );
    let err = restore(&["--frozen"]).err("AAM_LOCK_OUTDATED");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains(".claude/skills/pdf/scripts/fill.sh"),
        "{err}"
    );
    assert_eq!(tree(&proj.dir).len(), 1);

    // The package copy's checksum (what the origin holds) is verified with or
    // without `--frozen`.
    std::fs::write(&lock_path, &original).unwrap();
    let copy_key = ".aam/packages/pdf/skills/pdf/scripts/fill.sh: ";
    let at = original.find(copy_key).unwrap() + copy_key.len();
    let digest = original[at..].lines().next().unwrap().trim_matches('\'').to_string();
    edit_lock(
        &proj.dir,
        &format!("{copy_key}{digest}"),
        &format!("{copy_key}{}", "0".repeat(64)),
    );
    for args in [&[][..], &["--frozen"][..]] {
        let err = restore(args).err("AAM_CHECKSUM_MISMATCH");
        assert!(
            err["message"]
                .as_str()
                .unwrap()
                .contains(".aam/packages/pdf/skills/pdf/scripts/fill.sh"),
            "{err}"
        );
    }
    std::fs::write(&lock_path, &original).unwrap();
    let checksum = lock(&proj.dir)["packages"]["pdf"]["checksum"]
        .as_str()
        .unwrap()
        .to_string();
    edit_lock(&proj.dir, &checksum, &"1".repeat(64));
    restore(&[]).err("AAM_CHECKSUM_MISMATCH");
    assert_eq!(tree(&proj.dir).len(), 1);

    // Hostile URLs go through the source spec checks; credentials are never echoed.
    std::fs::write(&lock_path, &original).unwrap();
    let url = lock(&proj.dir)["packages"]["pdf"]["source_url"]
        .as_str()
        .unwrap()
        .to_string();
    edit_lock(&proj.dir, &url, "ext::sh -c touch% /tmp/pwned");
    let refused = run(&env, &env.path("other-home"), &proj.dir, &["install"]).err("AAM_LOCK_INVALID");
    assert!(refused["message"].as_str().unwrap().contains("`pdf`"), "{refused}");
    std::fs::write(&lock_path, &original).unwrap();
    edit_lock(&proj.dir, &url, "https://someone:hunter2@example.com/o/r.git");
    let refused = run(&env, &env.path("other-home"), &proj.dir, &["install"]);
    assert!(
        !refused.stdout.contains("hunter2") && !refused.stderr.contains("hunter2"),
        "{refused:?}"
    );
    refused.err("AAM_LOCK_INVALID");

    // `--frozen` restores only: with specs it is refused; a restore takes the
    // platforms the lock records.
    std::fs::write(&lock_path, &original).unwrap();
    restore(&["upstream/docx", "--frozen"]).err("AAM_INVALID_ARGUMENT");
    restore(&["--platform", "cursor"]).err("AAM_INVALID_ARGUMENT");
}

#[test]
fn the_caches_a_restore_fetched_stay_for_the_next_offline_restore() {
    let env = TestEnv::new();
    let (proj, served) = pdf_installed_served(&env);
    let before = tree(&proj.dir);
    keep_only_the_lock(&proj.dir);
    // CI: a fresh home, no sources, a restore that fetches what the lock names.
    let ci = env.path("ci-home");
    run(&env, &ci, &proj.dir, &["install", "--frozen"]).ok_json();

    // Its cache belongs to no source but keeps the locked commit: neither
    // flagged nor deleted.
    let doctor = run(&env, &ci, &proj.dir, &["doctor"]).ok_json();
    let files = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "files")
        .unwrap_or_else(|| panic!("{doctor}"));
    assert_eq!(files["status"], "pass", "{files}");
    run(&env, &ci, &proj.dir, &["catalog", "check", "--repair"]).ok_json();

    // The repository is gone; the next restore is offline.
    drop(served);
    keep_only_the_lock(&proj.dir);
    run(&env, &ci, &proj.dir, &["install", "--frozen", "--offline"]).ok_json();
    same_tree(&proj.dir, &before);

    // Where nothing is cached, the error names the package, and the cache
    // the failed fetch made goes with it.
    keep_only_the_lock(&proj.dir);
    let other = env.path("other-home");
    let failed = run(&env, &other, &proj.dir, &["install", "--frozen"]);
    assert_eq!(failed.code, 1, "{failed:?}");
    assert!(
        failed.json()["error"]["message"].as_str().unwrap().contains("`pdf`"),
        "{failed:?}"
    );
    let left: Vec<_> = std::fs::read_dir(other.join("cache/git"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// The `files` check of `aam catalog check` run in `dir` with `home`.
fn files_check(env: &TestEnv, home: &Path, dir: &Path) -> serde_json::Value {
    let report = env.aam_with(
        dir,
        &[("AAM_HOME", home.to_str().unwrap())],
        &["--json", "catalog", "check"],
    );
    let report: serde_json::Value = serde_json::from_str(&report.stdout).unwrap_or_else(|_| panic!("{report:?}"));
    let files = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "files");
    files.unwrap_or_else(|| panic!("{report}")).clone()
}

#[test]
fn a_restored_commit_is_kept_while_a_lock_file_names_it_and_collected_after() {
    let env = TestEnv::new();
    let (proj, _served) = pdf_installed_served(&env);
    let commit = lock(&proj.dir)["packages"]["pdf"]["source_commit"]
        .as_str()
        .unwrap()
        .to_string();
    // Two projects of one machine restore the commit in a fresh home.
    let twin = env.path("twin");
    std::fs::create_dir_all(twin.join(".git")).unwrap();
    std::fs::create_dir_all(twin.join(".aam")).unwrap();
    std::fs::copy(proj.dir.join(".aam/aam-lock.yaml"), twin.join(".aam/aam-lock.yaml")).unwrap();
    keep_only_the_lock(&proj.dir);
    let ci = env.path("ci-home");
    run(&env, &ci, &proj.dir, &["install", "--frozen"]).ok_json();
    run(&env, &ci, &twin, &["install", "--frozen"]).ok_json();
    let caches: Vec<PathBuf> = std::fs::read_dir(ci.join("cache/git"))
        .unwrap()
        .flat_map(|host| std::fs::read_dir(host.unwrap().path()).unwrap())
        .map(|repo| repo.unwrap().path())
        .collect();
    let [cache] = caches.as_slice() else {
        panic!("one cache: {caches:?}")
    };
    assert!(cache.join("HEAD").is_file(), "{}", cache.display());

    // Kept while either lock file names it, or one cannot be read; a project
    // an install recorded it for counts though no restore is recorded there
    // (an older aam restored it).
    assert_eq!(files_check(&env, &ci, &proj.dir)["status"], "pass");
    let catalog = rusqlite::Connection::open(ci.join("catalog.db")).unwrap();
    let root = proj.dir.to_str().unwrap();
    let forgotten = catalog
        .execute("DELETE FROM restored_commits WHERE project_root = ?1", [root])
        .unwrap();
    assert_eq!(forgotten, 1);
    std::fs::remove_dir_all(&twin).unwrap();
    assert_eq!(files_check(&env, &ci, &proj.dir)["status"], "pass");
    run(&env, &ci, &proj.dir, &["catalog", "check", "--repair"]).ok_json();
    assert!(cache.join("HEAD").is_file());
    // The twin's record went with its project; the one left restores again.
    let rows: i64 = catalog
        .query_row("SELECT COUNT(*) FROM restored_commits", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0, "a gone project's record is forgotten");
    keep_only_the_lock(&proj.dir);
    run(&env, &ci, &proj.dir, &["install", "--frozen", "--offline"]).ok_json();
    let pulled = "0123456789abcdef0123456789abcdef01234567";
    let lock_text = text(proj.dir.join(".aam/aam-lock.yaml"));
    std::fs::write(proj.dir.join(".aam/aam-lock.yaml"), "packages: [unclosed\n").unwrap();
    assert_eq!(
        files_check(&env, &ci, &proj.dir)["status"],
        "pass",
        "an unreadable lock keeps it"
    );
    run(&env, &ci, &proj.dir, &["catalog", "check", "--repair"]).ok_json();
    assert!(cache.join("HEAD").is_file());

    // A teammate's upgrade pulled: no lock file names the commit any more.
    std::fs::write(proj.dir.join(".aam/aam-lock.yaml"), lock_text.replace(&commit, pulled)).unwrap();
    let files = files_check(&env, &ci, &proj.dir);
    assert_eq!(files["status"], "warn", "{files}");
    let message = files["message"].as_str().unwrap();
    assert!(
        message.contains("1 commits restored for lock files that no longer name them")
            && message.contains(&commit[..12]),
        "{files}"
    );
    let repaired = run(&env, &ci, &proj.dir, &["catalog", "check", "--repair"]).ok_json();
    let actions: Vec<&str> = repaired["actions"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|a| assert_eq!(a["ok"], true, "{a}"))
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions.len(), 2, "{repaired}");
    assert!(
        actions[0].contains(&commit) && actions[0].contains("no lock file names it"),
        "{repaired}"
    );
    assert!(actions[1].contains("no source uses"), "{repaired}");
    assert!(!cache.exists(), "the cache that kept only that commit is deleted");
    assert_eq!(files_check(&env, &ci, &proj.dir)["status"], "pass");
}

#[test]
fn offline_uses_only_what_is_in_aam_home() {
    let env = TestEnv::new();
    let (proj, served) = pdf_installed_served(&env);
    let before = tree(&proj.dir);
    keep_only_the_lock(&proj.dir);

    // Without a cache: refused, naming what is missing; nothing written.
    let fresh = env.path("fresh-home");
    let err = run(&env, &fresh, &proj.dir, &["install", "--offline"]).err("AAM_OFFLINE_MISSING");
    assert!(err["message"].as_str().unwrap().contains("`pdf`"), "{err}");
    assert_eq!(tree(&proj.dir).len(), 1);
    assert!(
        !fresh.join("cache").exists()
            || std::fs::read_dir(fresh.join("cache/git"))
                .map(|d| d.count())
                .unwrap_or(0)
                == 0
    );

    // With the cache: restored without reading the repository, which is
    // gone now (a fetch would fail).
    drop(served);
    let restored = run(&env, &env.home(), &proj.dir, &["install", "--offline"]).ok_json();
    assert_eq!(restored["installed"][0]["name"], "pdf", "{restored}");
    same_tree(&proj.dir, &before);
    // Online, the same restore in a fresh home cannot fetch the commit.
    keep_only_the_lock(&proj.dir);
    let failed = run(&env, &fresh, &proj.dir, &["install"]);
    assert_ne!(failed.code, 0, "{failed:?}");
    assert_eq!(tree(&proj.dir).len(), 1);
}

#[test]
fn the_restore_is_a_tool_call_like_any_other() {
    let env = TestEnv::new();
    let proj = pdf_installed(&env);
    let before = tree(&proj.dir);
    keep_only_the_lock(&proj.dir);
    let called = env.aam_in(
        &proj.dir,
        &[
            "tool",
            "call",
            "aam_install",
            r#"{"specs": [], "frozen": true, "offline": true}"#,
        ],
    );
    assert_eq!(called.code, 0, "{called:?}");
    assert_eq!(called.json()["installed"][0]["name"], "pdf", "{called:?}");
    same_tree(&proj.dir, &before);
    // No specs at all is a restore too, as the schema says (`{}` was refused).
    let called = env.aam_in(&proj.dir, &["tool", "call", "aam_install", "{}"]);
    assert_eq!(called.code, 0, "{called:?}");
    same_tree(&proj.dir, &before);
    // An empty lock: nothing to restore, and the error says what `install` wants.
    let empty = project_without_lock(&env);
    let err = run(&env, &env.home(), &empty, &["install"]).err("AAM_INVALID_ARGUMENT");
    assert!(err["hint"].as_str().unwrap().contains("aam-lock.yaml"), "{err}");
    // It says there is no lock file (it said the lock file recorded no packages).
    assert!(err["message"].as_str().unwrap().contains("no lock file"), "{err}");
    assert!(!empty.join(".aam").exists(), "nothing made (it left `.aam/lock`)");
    // A lock file that records no packages (the last one uninstalled) restores
    // by doing nothing: a CI restore stays green (it failed).
    std::fs::create_dir_all(empty.join(".aam")).unwrap();
    std::fs::write(empty.join(".aam/aam-lock.yaml"), "lockfile_version: 1\npackages: {}\n").unwrap();
    let restored = run(&env, &env.home(), &empty, &["install", "--frozen"]).ok_json();
    assert_eq!(restored["installed"], serde_json::json!([]), "{restored}");
}

#[test]
fn an_entry_without_checksums_is_made_again_not_found_intact() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    run(
        &env,
        &env.home(),
        &proj.dir,
        &["install", "upstream/reviewer", "--platform", "claude"],
    )
    .ok_json();
    let lock_file = proj.dir.join(".aam/aam-lock.yaml");
    let text = std::fs::read_to_string(&lock_file).unwrap();
    // The `file_checksums:` line and the lines below it, indented deeper.
    let mut in_checksums = false;
    let stripped: String = text
        .lines()
        .filter(|line| {
            if *line == "    file_checksums:" {
                in_checksums = true;
            } else if !line.starts_with("      ") {
                in_checksums = false;
            }
            !in_checksums
        })
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(!stripped.contains("file_checksums"), "{stripped}");
    std::fs::write(&lock_file, &stripped).unwrap();
    keep_only_the_lock(&proj.dir);

    // Nothing vouches for its files: verify is not clean, a frozen restore
    // fails (the lock gains them), a restore makes the package again.
    let fresh = env.path("fresh-home");
    let upstream = env.path("upstream");
    run(&env, &fresh, &proj.dir, &["source", "add", upstream.to_str().unwrap()]).ok_json();
    assert_eq!(run(&env, &fresh, &proj.dir, &["verify"]).code, 1);
    run(&env, &fresh, &proj.dir, &["install", "--frozen"]).err("AAM_LOCK_OUTDATED");
    let restored = run(&env, &fresh, &proj.dir, &["install"]).ok_json();
    assert_eq!(restored["installed"][0]["name"], "reviewer", "{restored}");
    assert!(proj.dir.join(".claude/agents/reviewer.md").is_file());
    assert!(lock(&proj.dir)["packages"]["reviewer"]["file_checksums"].is_mapping());
    run(&env, &fresh, &proj.dir, &["verify"]).ok_json();
}

/// A repository moved since the lock was written: once added again from its
/// new place, the restore reads the recorded commit from that source's cache
/// (a commit id names its content), with nothing fetched from the old place
/// (it failed package after package).
#[test]
fn a_moved_repository_added_again_restores_from_its_new_place() {
    let env = TestEnv::new();
    let repo = upstream(&env);
    let proj = project(&env);
    run(
        &env,
        &env.home(),
        &proj.dir,
        &["install", "upstream/pdf", "upstream/reviewer", "--platform", "claude"],
    )
    .ok_json();
    let before = tree(&proj.dir);
    keep_only_the_lock(&proj.dir);
    let moved = env.path("moved-upstream");
    std::fs::rename(&repo.dir, &moved).unwrap();

    let fresh = env.path("fresh-home");
    let unknown = run(&env, &fresh, &proj.dir, &["install", "--frozen"]).err("AAM_UNSAFE_PATH");
    let message = unknown["message"].as_str().unwrap();
    assert!(message.contains("which no install on this machine used"), "{unknown}");
    assert!(
        unknown["hint"].as_str().unwrap().contains("aam source add"),
        "{unknown}"
    );
    // Both packages are named in one run (it stopped at the first).
    assert!(
        message.contains("`pdf`") && message.contains("`reviewer`") && message.contains("; also: AAM_UNSAFE_PATH: "),
        "{unknown}"
    );
    run(
        &env,
        &fresh,
        &proj.dir,
        &["source", "add", moved.to_str().unwrap(), "--name", "upstream"],
    )
    .ok_json();
    run(&env, &fresh, &proj.dir, &["install", "--frozen"]).ok_json();
    same_tree(&proj.dir, &before);
    // The lock still records where it was: nothing was rewritten.
    assert_eq!(
        lock(&proj.dir)["packages"]["pdf"]["source_url"].as_str(),
        Some(format!("file://{}", env.path("upstream").display()).as_str())
    );
}

fn project_without_lock(env: &TestEnv) -> PathBuf {
    env.repo("empty").dir.clone()
}

#[test]
fn a_scoped_source_and_a_linked_skill_file_restore_alike() {
    let env = TestEnv::new();
    // Inside `vendor/` (a folder detection skips unless it is the scope), with
    // a `SKILL.md` that is a link to a file elsewhere in the repository.
    let repo = env.repo("vendored");
    repo.write("vendor/shared/tool.md", skill("tool", "A linked tool"))
        .symlink("vendor/skills/tool/SKILL.md", "../../shared/tool.md")
        .write("vendor/skills/tool/notes.txt", "notes\n");
    repo.commit("c1");
    env.json(&["source", "add", repo.path(), "--path", "vendor", "--name", "scoped"]);
    let proj = project(&env);
    run(
        &env,
        &env.home(),
        &proj.dir,
        &["install", "scoped/tool", "--platform", "claude"],
    )
    .ok_json();
    let before = tree(&proj.dir);
    assert_eq!(
        before.get(".claude/skills/tool/SKILL.md").map(Vec::as_slice),
        Some(skill("tool", "A linked tool").as_bytes())
    );
    keep_only_the_lock(&proj.dir);
    let fresh = env.path("fresh-home");
    let add = ["source", "add", repo.path(), "--path", "vendor", "--name", "scoped"];
    run(&env, &fresh, &proj.dir, &add).ok_json();
    run(&env, &fresh, &proj.dir, &["install", "--frozen"]).ok_json();
    same_tree(&proj.dir, &before);
}

#[test]
fn a_teammates_committed_install_is_uninstalled_once_its_origin_makes_those_files() {
    let env = TestEnv::new();
    let (proj, _served) = pdf_installed_served(&env);
    let fresh = env.path("fresh-home");
    // A clone whose files are there as committed: the restore writes nothing.
    run(&env, &fresh, &proj.dir, &["install"]).ok_json();
    // One file edited by hand is kept; the others are what the recorded origin
    // makes, so they go though this machine never wrote them.
    proj.write(".claude/skills/pdf/SKILL.md", "my notes\n");
    // Offline, the origin is not on this machine: nothing changes, nothing is fetched.
    let before = tree(&proj.dir);
    let offline = run(&env, &fresh, &proj.dir, &["uninstall", "pdf", "--offline"]).err("AAM_OFFLINE_MISSING");
    assert!(
        offline["message"].as_str().unwrap().contains("never wrote"),
        "{offline}"
    );
    assert!(
        offline["hint"].as_str().unwrap().contains("without `--offline`"),
        "{offline}"
    );
    same_tree(&proj.dir, &before);
    assert!(!fresh.join("cache").exists() || std::fs::read_dir(fresh.join("cache")).unwrap().next().is_none());
    // Once the origin is in this machine's git cache, offline is enough.
    let origin = lock(&proj.dir)["packages"]["pdf"]["source_url"]
        .as_str()
        .unwrap()
        .to_string();
    run(&env, &fresh, &proj.dir, &["source", "add", &origin]).ok_json();
    let removed = run(&env, &fresh, &proj.dir, &["uninstall", "pdf", "--offline"]).ok_json();
    assert_eq!(
        removed["kept_modified"],
        serde_json::json!([".claude/skills/pdf/SKILL.md"]),
        "{removed}"
    );
    assert!(!proj.dir.join(".claude/skills/pdf/scripts/fill.sh").exists());
    assert!(!proj.dir.join(".aam/packages/pdf").exists());
    assert_eq!(text(proj.dir.join(".claude/skills/pdf/SKILL.md")), "my notes\n");
}

#[test]
fn a_teammates_upgrade_removes_what_the_new_version_drops_once_proven() {
    let env = TestEnv::new();
    let upstream = upstream(&env);
    let proj = project(&env);
    run(
        &env,
        &env.home(),
        &proj.dir,
        &["install", "upstream/pdf", "--platform", "claude"],
    )
    .ok_json();
    // A clone in a fresh home, with the same source; upstream then drops the script.
    let fresh = env.path("fresh-home");
    run(
        &env,
        &fresh,
        &proj.dir,
        &["source", "add", upstream.path(), "--name", "upstream"],
    )
    .ok_json();
    upstream
        .remove("skills/pdf/scripts/fill.sh")
        .write("skills/pdf/SKILL.md", skill("pdf", "PDF v2"));
    upstream.commit("c2");
    run(&env, &fresh, &proj.dir, &["source", "update", "upstream"]).ok_json();
    let upgraded = run(&env, &fresh, &proj.dir, &["upgrade", "pdf"]).ok_json();
    assert_eq!(upgraded["packages"][0]["status"], "upgraded", "{upgraded}");
    assert!(text(proj.dir.join(".claude/skills/pdf/SKILL.md")).contains("PDF v2"));
    assert!(
        !proj.dir.join(".claude/skills/pdf/scripts/fill.sh").exists(),
        "left behind, no longer in the lock"
    );
}

/// A restore leaves the lock file as it is when it deploys the same things,
/// whatever order the install listed platforms in (a frozen restore of an
/// install made with `--platform cursor --platform claude` rewrote it, the
/// deployments reordered, and exited 0; found by a re-test helper).
#[test]
fn a_frozen_restore_keeps_the_lock_byte_for_byte() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    let install = [
        "install",
        "upstream/pdf",
        "--platform",
        "cursor",
        "--platform",
        "claude",
    ];
    run(&env, &env.home(), &proj.dir, &install).ok_json();
    let lock = proj.dir.join(".aam/aam-lock.yaml");
    let before = text(&lock);
    std::fs::remove_dir_all(proj.dir.join(".cursor")).unwrap();
    run(&env, &env.home(), &proj.dir, &["install", "--frozen"]).ok_json();
    assert_eq!(text(&lock), before);
    assert!(proj.dir.join(".cursor/skills/pdf/SKILL.md").exists());
}

/// The team loop: Alice upgrades and commits the lock file; Bob pulls and
/// restores with `--frozen`. The files aam wrote on Bob's machine for the
/// earlier lock (his ignored agent folder, and the Codex prompt in his home
/// folder, which git never holds) are out of date, not edits: they are
/// updated. A restore said "files were edited since install" and exited 1
/// on every teammate's machine (found by a review helper). A real edit of
/// Bob's is still kept.
#[test]
fn a_pulled_upgrade_updates_what_aam_wrote_for_the_earlier_lock() {
    let env = TestEnv::new();
    let upstream = upstream(&env);
    upstream.write("prompts/summarize.md", "# Summarize v1\n");
    upstream.commit("c1b");
    env.json(&["source", "update", "upstream"]);
    let alice = project(&env);
    alice.write(".gitignore", ".claude/\n");
    let install = [
        "install",
        "upstream/pdf",
        "upstream/docx",
        "upstream/summarize",
        "--platform",
        "claude",
        "--platform",
        "codex",
    ];
    run(&env, &env.home(), &alice.dir, &install).ok_json();
    alice.git(&["add", "-A"]);
    alice.commit("install");

    let bob = env.path("bob");
    alice.git(&["clone", "-q", alice.dir.to_str().unwrap(), bob.to_str().unwrap()]);
    let (bob_home, bob_user) = (env.path("bob-aam"), env.path("bob-user"));
    let as_bob = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        env.aam_with(
            &bob,
            &[
                ("AAM_HOME", bob_home.to_str().unwrap()),
                ("HOME", bob_user.to_str().unwrap()),
            ],
            &all,
        )
    };
    as_bob(&["source", "add", upstream.path(), "--name", "upstream"]).ok_json();
    as_bob(&["install", "--frozen"]).ok_json();
    let bob_prompt = bob_user.join(".codex/prompts/summarize.md");
    assert_eq!(text(&bob_prompt), "# Summarize v1\n");

    upstream
        .write("skills/pdf/SKILL.md", skill("pdf", "PDF v2"))
        .write("skills/docx/SKILL.md", skill("docx", "DOCX v2"))
        .write("prompts/summarize.md", "# Summarize v2\n");
    upstream.commit("c2");
    run(&env, &env.home(), &alice.dir, &["source", "update", "upstream"]).ok_json();
    run(&env, &env.home(), &alice.dir, &["upgrade"]).ok_json();
    alice.commit("upgrade");

    let bob_repo = Repo { dir: bob.clone() };
    bob_repo.git(&["pull", "-q"]);
    // Bob's own edit of docx stays his; made to v1, it lacks v2's changes:
    // said so, exit 1 (it said "your edits kept" as if docx were v2).
    let bob_docx = bob.join(".claude/skills/docx/SKILL.md");
    std::fs::write(&bob_docx, "Bob's notes\n").unwrap();
    let run_restore = as_bob(&["install", "--frozen"]);
    assert_eq!(run_restore.code, 1, "{run_restore:?}");
    let restored = run_restore.json();
    let skipped: Vec<&str> = restored["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["reason"] == "edits_on_another_version")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(skipped, ["docx"], "{restored}");
    assert_eq!(text(&bob_docx), "Bob's notes\n");
    let human = env.aam_with(
        &bob,
        &[
            ("AAM_HOME", bob_home.to_str().unwrap()),
            ("HOME", bob_user.to_str().unwrap()),
        ],
        &["install", "--frozen"],
    );
    assert!(
        human.stdout.contains("without this version's changes"),
        "{}",
        human.stdout
    );
    assert!(
        text(bob.join(".claude/skills/pdf/SKILL.md")).contains("PDF v2"),
        "{restored}"
    );
    assert_eq!(text(&bob_prompt), "# Summarize v2\n");
    // Once Bob's edit is put back, everything is as the lock records.
    std::fs::remove_file(&bob_docx).unwrap();
    as_bob(&["install", "--frozen"]).ok_json();
    assert!(text(&bob_docx).contains("DOCX v2"));
    assert_eq!(as_bob(&["verify", "--all"]).ok_json()["is_clean"], true);

    // Pulled again, Bob installs the package by name instead: the same holds.
    upstream.write("skills/pdf/SKILL.md", skill("pdf", "PDF v3"));
    upstream.commit("c3");
    run(&env, &env.home(), &alice.dir, &["source", "update", "upstream"]).ok_json();
    run(&env, &env.home(), &alice.dir, &["upgrade"]).ok_json();
    alice.commit("upgrade again");
    bob_repo.git(&["pull", "-q"]);
    as_bob(&["source", "update", "upstream"]).ok_json();
    let installed = as_bob(&["install", "upstream/pdf"]).ok_json();
    assert_eq!(installed["skipped"], serde_json::json!([]), "{installed}");
    assert!(
        text(bob.join(".claude/skills/pdf/SKILL.md")).contains("PDF v3"),
        "{installed}"
    );
}

/// A package folder inside the project is recorded relative to it, so a
/// teammate's clone elsewhere restores it (the lock held the absolute path of
/// the first machine, and a clone failed with `AAM_PACKAGE_NOT_FOUND`; found
/// by a review helper). An older lock's absolute path is kept as written.
#[test]
fn a_package_folder_inside_the_project_restores_in_any_clone() {
    let env = TestEnv::new();
    let alice = project(&env);
    package(&alice.dir.join("team-kit"), "team-kit", "1.0.0", &[]);
    let installed = run(
        &env,
        &env.home(),
        &alice.dir,
        &["install", "./team-kit", "--platform", "claude"],
    )
    .ok_json();
    assert_eq!(installed["installed"][0]["source_name"], "./team-kit", "{installed}");
    let lock_text = text(alice.dir.join(".aam/aam-lock.yaml"));
    assert!(!lock_text.contains(alice.dir.to_str().unwrap()), "{lock_text}");
    alice.commit("install");

    let bob = env.path("elsewhere/bob");
    alice.git(&["clone", "-q", alice.dir.to_str().unwrap(), bob.to_str().unwrap()]);
    let bob_home = env.path("bob-aam");
    run(&env, &bob_home, &bob, &["install", "--frozen"]).ok_json();
    assert!(bob.join(".claude").is_dir());
    assert_eq!(
        run(&env, &bob_home, &bob, &["verify", "--all"]).ok_json()["is_clean"],
        true
    );

    // A lock an older aam wrote, with the absolute path: a restore keeps it.
    let absolute = lock_text.replace(
        "source_name: ./team-kit",
        &format!("source_name: {}/team-kit", bob.display()),
    );
    std::fs::write(bob.join(".aam/aam-lock.yaml"), &absolute).unwrap();
    std::fs::remove_dir_all(bob.join(".claude")).unwrap();
    run(&env, &bob_home, &bob, &["install", "--frozen"]).ok_json();
    assert_eq!(text(bob.join(".aam/aam-lock.yaml")), absolute);
    // A place of the project's own is never taken for one this machine
    // installs from: a pull could make it a link, and another project's lock
    // naming it would be read through that link.
    let catalog = rusqlite::Connection::open(bob_home.join("catalog.db")).unwrap();
    let places: i64 = catalog
        .query_row("SELECT COUNT(*) FROM install_places", [], |r| r.get(0))
        .unwrap();
    assert_eq!(places, 0);

    // A `./` path that climbs out is refused before anything is read (a
    // forged lock read a sibling folder and named what it held; found by a
    // re-test helper).
    package(&env.path("elsewhere/private-kit"), "private-kit", "9.9.9", &[]);
    let climbing = lock_text.replace("source_name: ./team-kit", "source_name: ./../private-kit");
    std::fs::write(bob.join(".aam/aam-lock.yaml"), &climbing).unwrap();
    std::fs::remove_dir_all(bob.join(".claude")).unwrap();
    let refused = run(&env, &bob_home, &bob, &["install", "--frozen"]).err("AAM_LOCK_INVALID");
    assert!(!refused.to_string().contains("9.9.9"), "{refused}");
    // So is a committed link in the folder's place that leads out.
    std::fs::write(bob.join(".aam/aam-lock.yaml"), &lock_text).unwrap();
    std::fs::remove_dir_all(bob.join("team-kit")).unwrap();
    std::os::unix::fs::symlink("../private-kit", bob.join("team-kit")).unwrap();
    let refused = run(&env, &bob_home, &bob, &["install", "--frozen"]).err("AAM_LOCK_INVALID");
    assert!(!refused.to_string().contains("9.9.9"), "{refused}");
}

/// Installs made on two branches merge without a conflict in the lock file
/// when their entries do not meet: it has no timestamp (its `resolved_at`
/// line conflicted in every such merge; found by a review helper).
#[test]
fn installs_on_two_branches_merge_cleanly() {
    let env = TestEnv::new();
    upstream(&env);
    let proj = project(&env);
    let install = |what: &str| {
        run(&env, &env.home(), &proj.dir, &["install", what, "--platform", "claude"]).ok_json();
    };
    install("upstream/pdf");
    proj.commit("pdf");
    assert!(!text(proj.dir.join(".aam/aam-lock.yaml")).contains("resolved_at"));
    proj.git(&["checkout", "-q", "-b", "alice"]);
    install("upstream/docx");
    proj.commit("docx");
    proj.git(&["checkout", "-q", "main"]);
    proj.git(&["checkout", "-q", "-b", "bob"]);
    install("upstream/reviewer");
    proj.commit("reviewer");
    proj.git(&["merge", "-q", "--no-edit", "alice"]);
    let verified = run(&env, &env.home(), &proj.dir, &["verify", "--all"]).ok_json();
    assert_eq!(verified["is_clean"], true, "{verified}");
    let listed = run(&env, &env.home(), &proj.dir, &["list"]).ok_json();
    assert_eq!(listed["packages"].as_array().map(Vec::len), Some(3), "{listed}");
}

/// A restore took the repository `outer/inner` (nested in another one) from
/// a cache inside the folder `outer`'s cache takes: adding `outer` as a
/// source afterwards makes its cache around the inner one, which stays for
/// the next offline restore.
#[test]
fn a_source_added_after_a_restore_of_a_repository_inside_it_keeps_both_caches() {
    let env = TestEnv::new();
    let outer = env.repo("outer");
    outer.write("skills/outer-skill/SKILL.md", skill("outer-skill", "Outer"));
    outer.commit("outer");
    let inner = env.repo("outer/inner");
    inner.write("skills/pdf/SKILL.md", skill("pdf", "PDF"));
    inner.commit("inner");
    env.json(&["source", "add", inner.path(), "--name", "inner"]);
    let proj = project(&env);
    run(
        &env,
        &env.home(),
        &proj.dir,
        &["install", "inner/pdf", "--platform", "claude"],
    )
    .ok_json();
    let before = tree(&proj.dir);

    let ci = env.path("ci-home");
    keep_only_the_lock(&proj.dir);
    run(
        &env,
        &ci,
        &proj.dir,
        &["source", "add", inner.path(), "--name", "inner"],
    )
    .ok_json();
    run(&env, &ci, &proj.dir, &["install", "--frozen"]).ok_json();
    let added = run(
        &env,
        &ci,
        &proj.dir,
        &["source", "add", outer.path(), "--name", "outer"],
    )
    .ok_json();
    assert_eq!(added["name"], "outer", "{added}");
    let found = run(&env, &ci, &proj.dir, &["info", "outer/outer-skill"]).ok_json();
    assert_eq!(found["name"], "outer-skill", "{found}");

    std::fs::remove_dir_all(env.path("outer")).unwrap();
    keep_only_the_lock(&proj.dir);
    run(&env, &ci, &proj.dir, &["install", "--frozen", "--offline"]).ok_json();
    same_tree(&proj.dir, &before);
}

/// A restore that cannot make a folder package again says which lock entry
/// it was restoring and where the lock file says it comes from.
#[test]
fn a_restore_names_the_package_whose_folder_fails() {
    let env = TestEnv::new();
    let proj = crate::install::project_with_kit(&env);
    let recorded = lock(&proj.dir)["packages"]["kit"]["source_name"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(env.path("kit/aam.yaml")).unwrap();
    std::fs::remove_dir_all(proj.dir.join(".claude/skills/kit-skill")).unwrap();
    let failed = run_in(&env, &proj.dir, &["install"]).err("AAM_MANIFEST_INVALID");
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("restoring `kit` from local `{recorded}`")),
        "{failed}"
    );
    assert!(
        failed["hint"]
            .as_str()
            .unwrap()
            .contains("aam install <folder or archive>"),
        "{failed}"
    );
}

/// A lock file comes with the project, written by whoever committed it: a
/// restore reads a package folder, an archive or a local repository outside
/// the project only where this machine installed from or registered it (a
/// forged lock had aam pack `/etc` or any folder of the user's, fetch any
/// repository of theirs into the cache, and print what it found).
#[test]
fn a_lock_names_no_place_outside_the_project_this_machine_never_used() {
    let env = TestEnv::new();
    let proj = crate::install::project_with_kit(&env);
    let kit = lock(&proj.dir)["packages"]["kit"].clone();
    let recorded = kit["source_name"].as_str().unwrap().to_string();
    let private = package(&env.path("private-kit"), "kit", "1.0.0", &[]);
    let private_text = private.canonicalize().unwrap().display().to_string();
    // The private folder makes exactly what the lock records: only its place
    // stops the restore.
    let lock_text = text(proj.dir.join(".aam/aam-lock.yaml"));
    for (place, what) in [("/etc", "package folder"), (private_text.as_str(), "package folder")] {
        edit_lock(
            &proj.dir,
            &format!("source_name: {recorded}"),
            &format!("source_name: {place}"),
        );
        std::fs::remove_dir_all(proj.dir.join(".claude/skills/kit-skill")).unwrap();
        let refused = run_in(&env, &proj.dir, &["install"]).err("AAM_UNSAFE_PATH");
        let message = refused["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("from the {what} `{place}`, outside the project")),
            "{refused}"
        );
        assert!(
            refused["hint"]
                .as_str()
                .unwrap()
                .contains(&format!("`aam install {place}`")),
            "{refused}"
        );
        assert!(!proj.dir.join(".claude/skills/kit-skill").exists());
        std::fs::write(proj.dir.join(".aam/aam-lock.yaml"), &lock_text).unwrap();
        run_in(&env, &proj.dir, &["install"]).ok_json();
    }
    // Installed from once, the place is this machine's: restored from there.
    run_in(&env, &proj.dir, &["install", &private_text, "--force"]).ok_json();
    std::fs::remove_dir_all(proj.dir.join(".claude/skills/kit-skill")).unwrap();
    let restored = run_in(&env, &proj.dir, &["install"]).ok_json();
    assert_eq!(restored["installed"][0]["name"], "kit", "{restored}");
    // A link put in its place leads elsewhere: refused, and where it leads
    // is never taken for a place this machine uses (a restore that followed
    // it recorded the link's target).
    let elsewhere = package(&env.path("elsewhere-kit"), "kit", "1.0.0", &[]);
    std::fs::rename(&private, env.path("private-kit.real")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &private).unwrap();
    std::fs::remove_dir_all(proj.dir.join(".claude/skills/kit-skill")).unwrap();
    let linked = run_in(&env, &proj.dir, &["install"]).err("AAM_UNSAFE_PATH");
    assert!(
        linked["message"]
            .as_str()
            .unwrap()
            .contains("now leads to another place through a link"),
        "{linked}"
    );
    let places = env.query("SELECT path || ' ' || kind FROM install_places ORDER BY path", &[]);
    assert_eq!(
        places,
        [
            format!("{} folder", env.path("kit").canonicalize().unwrap().display()),
            format!("{private_text} folder")
        ],
        "{places:?}"
    );
    std::fs::remove_file(&private).unwrap();
    std::fs::rename(env.path("private-kit.real"), &private).unwrap();
    run_in(&env, &proj.dir, &["install"]).ok_json();

    // A local repository: refused before anything is fetched from it, in a
    // home that never used it; its cache is never made.
    let repo = upstream_repo(&env);
    run_in(&env, &proj.dir, &["source", "add", repo.path(), "--name", "upstream"]).ok_json();
    run_in(&env, &proj.dir, &["install", "upstream/pdf", "--platform", "claude"]).ok_json();
    let fresh = env.path("fresh-home");
    std::fs::remove_dir_all(proj.dir.join(".claude/skills/pdf")).unwrap();
    let refused = run(&env, &fresh, &proj.dir, &["install", "--frozen"]).err("AAM_UNSAFE_PATH");
    assert!(
        refused["message"].as_str().unwrap().contains(&format!(
            "from the local repository `{}`, outside the project",
            repo.path()
        )),
        "{refused}"
    );
    assert!(!fresh.join("cache/git/_local").exists(), "nothing fetched");
    let offline = run(&env, &fresh, &proj.dir, &["install", "--frozen", "--offline"]);
    assert_eq!(
        offline.json()["error"]["code"],
        "AAM_UNSAFE_PATH",
        "the blocker, not a fetch to make"
    );
    assert!(!proj.dir.join(".claude/skills/pdf").exists());
    // Registered there, it restores.
    run(&env, &fresh, &proj.dir, &["source", "add", repo.path()]).ok_json();
    run(&env, &fresh, &proj.dir, &["install", "--frozen"]).ok_json();
    assert!(proj.dir.join(".claude/skills/pdf/SKILL.md").is_file());
    // A repository installed from is no package folder: read as one, its
    // uncommitted files would be taken.
    let lock_text = text(proj.dir.join(".aam/aam-lock.yaml"));
    edit_lock(
        &proj.dir,
        &format!("source_name: {private_text}"),
        &format!("source_name: {}", repo.path()),
    );
    std::fs::remove_dir_all(proj.dir.join(".claude/skills/kit-skill")).unwrap();
    let as_folder = run_in(&env, &proj.dir, &["install"]).err("AAM_UNSAFE_PATH");
    assert!(
        as_folder["message"].as_str().unwrap().contains("package folder"),
        "{as_folder}"
    );
    std::fs::write(proj.dir.join(".aam/aam-lock.yaml"), lock_text).unwrap();
}
