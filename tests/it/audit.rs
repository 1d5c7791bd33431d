//! Offline audit and health on the real binary: catalog export (consistent
//! while a writer runs; jsonl and csv round-trip every artifact), stats, check
//! and repair against real damage, doctor, init, config and completions.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;

use aam::search::INDEX_DIR;
use serde_json::Value;

use crate::support::{TestEnv, skill};

/// The live artifacts as the catalog holds them: (source, type, path, name,
/// description, files as `path size blake3`).
fn catalog_artifacts(env: &TestEnv) -> BTreeSet<String> {
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT s.name, a.kind, a.path, a.name, COALESCE(a.description, ''),
                    (SELECT group_concat(f.path || ' ' || f.size || ' ' || f.blake3, '|')
                     FROM (SELECT * FROM artifact_files WHERE artifact_id = a.id ORDER BY path) f)
             FROM artifacts a JOIN sources s ON s.id = a.source_id WHERE a.removed_commit_id IS NULL",
        )
        .unwrap();
    stmt.query_map([], |r| {
        let cells: Vec<String> = (0..6).map(|i| r.get::<_, String>(i)).collect::<Result<_, _>>()?;
        Ok(cells.join("\t"))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn files_key(files: &Value) -> String {
    files
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f["path"].as_str().unwrap(),
                f["size"],
                f["blake3"].as_str().unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// A home with a source whose names and descriptions need quoting in CSV and JSON.
fn awkward_world() -> TestEnv {
    let env = TestEnv::new();
    let repo = env.repo("team");
    repo.write(
        "skills/quoting/SKILL.md",
        "---\nname: quoting\ndescription: \"Commas, \\\"quotes\\\" and\\nnew lines; ünïcödé\"\n---\nBody\n",
    );
    repo.write("skills/plain/SKILL.md", skill("plain", "A plain skill"));
    repo.write("skills/plain/scripts/run.sh", "#!/bin/sh\necho hi\n");
    repo.write(
        "agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews, carefully\n---\n",
    );
    repo.write(
        ".cursor/rules/style.mdc",
        "---\ndescription: Style rules\n---\nUse tabs.\n",
    );
    repo.commit("artifacts");
    env.json(&["source", "add", "./team", "--name", "team"]);
    env
}

#[test]
fn jsonl_and_csv_round_trip_every_artifact() {
    let env = awkward_world();
    env.json(&["install", "team/plain", "--platform", "claude"]);
    let expected = catalog_artifacts(&env);
    assert_eq!(expected.len(), 4, "{expected:?}");

    let out = env.json(&[
        "catalog",
        "export",
        "--format",
        "jsonl",
        "--output",
        "out/catalog.jsonl",
    ]);
    assert_eq!(out["records"]["artifacts"], 4, "{out}");
    let text = std::fs::read_to_string(env.path("out/catalog.jsonl")).unwrap();
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let kinds: Vec<&str> = records.iter().map(|r| r["record"].as_str().unwrap()).collect();
    let artifacts: BTreeSet<String> = records
        .iter()
        .filter(|r| r["record"] == "artifact")
        .map(|r| {
            assert_eq!(
                r["source_url"].as_str().unwrap(),
                format!("file://{}", env.path("team").display())
            );
            assert_eq!(r["commit"].as_str().unwrap().len(), 40, "{r}");
            assert_eq!(r["ref"], "main");
            [
                r["source"].as_str().unwrap().to_string(),
                r["type"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                r["description"].as_str().unwrap_or_default().to_string(),
                files_key(&r["files"]),
            ]
            .join("\t")
        })
        .collect();
    assert_eq!(artifacts, expected);
    for kind in ["source", "commit", "package", "install"] {
        assert!(kinds.contains(&kind), "no {kind} record: {kinds:?}");
    }
    let install = records.iter().find(|r| r["record"] == "install").unwrap();
    assert_eq!(install["package"], "plain", "{install}");
    assert_eq!(install["platforms"], serde_json::json!(["claude"]), "{install}");
    assert!(
        install["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["path"] == ".claude/skills/plain/SKILL.md"),
        "{install}"
    );

    // aam's own files are never replaced.
    let catalog = env.home().join("catalog.db");
    let before = std::fs::read(&catalog).unwrap();
    let body = env.json_err(
        &["catalog", "export", "--output", catalog.to_str().unwrap()],
        "AAM_FORBIDDEN",
    );
    assert!(body["hint"].as_str().unwrap().contains("exports"), "{body}");
    assert_eq!(std::fs::read(&catalog).unwrap(), before);

    // `-` streams to stdout, byte for byte the same as the file.
    let piped = env.aam(&["catalog", "export", "--format", "jsonl", "--output", "-"]);
    assert_eq!(piped.code, 0, "{piped:?}");
    assert_eq!(piped.stdout, text);

    env.json(&["catalog", "export", "--format", "csv", "--output", "out/catalog.csv"]);
    // Without `--format`, the extension says it (a database was written to `.csv`).
    for (file, format) in [
        ("out/by-name.csv", "csv"),
        ("out/by-name.ndjson", "jsonl"),
        ("out/by-name.x", "sqlite"),
    ] {
        assert_eq!(
            env.json(&["catalog", "export", "--output", file])["format"],
            format,
            "{file}"
        );
    }
    assert_eq!(
        std::fs::read(env.path("out/by-name.csv")).unwrap(),
        std::fs::read(env.path("out/catalog.csv")).unwrap()
    );
    let mut reader = csv::Reader::from_path(env.path("out/catalog.csv")).unwrap();
    let headers = reader.headers().unwrap().clone();
    assert_eq!(&headers[0], "source");
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let rows: BTreeSet<String> = reader
        .records()
        .map(|row| {
            let row = row.unwrap();
            let files: Value = serde_json::from_str(&row[column("files")]).unwrap();
            assert_eq!(row[column("file_count")], files.as_array().unwrap().len().to_string());
            assert_eq!(
                row[column("source_url")],
                format!("file://{}", env.path("team").display())
            );
            assert_eq!(&row[column("ref")], "main");
            assert_eq!(row[column("commit")].len(), 40);
            ["source", "type", "path", "name", "description"]
                .iter()
                .map(|c| row[column(c)].to_string())
                .chain([files_key(&files)])
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    assert_eq!(rows, expected);
}

#[test]
fn a_sqlite_export_is_consistent_while_a_writer_runs() {
    let env = TestEnv::new();
    let repo = env.repo("big");
    repo.write_skills((0..200).map(|i| format!("s{i:03}")), "Base skill");
    repo.commit("base");
    env.json(&["source", "add", "./big", "--name", "big"]);

    let seen = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for round in 1..=6 {
                for i in 0..25 {
                    repo.write(
                        &format!("skills/r{round}-{i:02}/SKILL.md"),
                        skill(&format!("r{round}-{i:02}"), "Added while exporting"),
                    );
                }
                repo.commit(&format!("round {round}"));
                env.json(&["source", "update", "big"]);
            }
        });
        let mut seen = Vec::new();
        let mut n = 0;
        let mut last_round = false;
        while !last_round {
            // One more export after the writer is done.
            last_round = writer.is_finished();
            n += 1;
            let file = format!("snap-{n}.db");
            let out = env.json(&["catalog", "export", "--output", &file]);
            let conn = rusqlite::Connection::open(env.path(&file)).unwrap();
            let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
            assert_eq!(ok, "ok");
            let (live, counted, fileless): (i64, i64, i64) = conn
                .query_row(
                    "SELECT (SELECT COUNT(*) FROM artifacts WHERE removed_commit_id IS NULL),
                            (SELECT SUM(skill_count) FROM sources),
                            (SELECT COUNT(*) FROM artifacts a WHERE NOT EXISTS
                               (SELECT 1 FROM artifact_files f WHERE f.artifact_id = a.id))",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            assert_eq!(live, counted, "the snapshot is between two writes");
            assert_eq!(fileless, 0);
            assert_eq!((live - 200) % 25, 0, "a half-applied update: {live}");
            assert_eq!(out["records"]["artifacts"], live);
            let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
            assert_eq!(journal, "delete", "opens without -wal files");
            seen.push(live);
        }
        writer.join().unwrap();
        seen
    });
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&350));
    assert!(
        seen.first() < seen.last(),
        "the exports ran while the writer wrote: {seen:?}"
    );
    let leftovers: Vec<_> = std::fs::read_dir(env.root.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn stats_count_per_source_and_type() {
    let env = awkward_world();
    let stats = env.json(&["catalog", "stats"]);
    assert_eq!(stats["artifacts"]["skill"], 2, "{stats}");
    assert_eq!(stats["artifacts"]["agent"], 1);
    assert_eq!(stats["artifacts"]["instruction"], 1);
    assert_eq!(stats["artifacts"]["total"], 4);
    assert_eq!(stats["sources"][0]["name"], "team");
    assert!(stats["sources"][0]["cache_bytes"].as_u64().unwrap() > 0);
    assert!(stats["disk"]["catalog"].as_u64().unwrap() > 0);
    assert_eq!(stats["commits"], 1);
    assert!(stats["last_fetched_at"].is_string());
    // The index is built by the first search; stats say so and never build it.
    assert_eq!(stats["index"]["status"], "current", "source add builds it: {stats}");
    let human = env.aam(&["catalog", "stats"]);
    assert!(human.stdout.contains("team"), "{}", human.stdout);
}

fn check_named<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

#[test]
fn check_finds_damage_and_repair_fixes_the_index_and_caches() {
    let env = awkward_world();
    env.json(&["install", "team/plain", "--platform", "claude"]);
    let clean = env.json(&["catalog", "check"]);
    assert_eq!(clean["healthy"], true, "{clean}");
    assert_eq!(check_named(&clean, "objects")["status"], "pass", "{clean}");
    // Originals an uninstall just left are no finding: a repair keeps them for
    // ten minutes (an install may still be recording them).
    env.json(&["uninstall", "plain"]);
    let fresh = env.json(&["catalog", "check"]);
    let objects = check_named(&fresh, "objects");
    assert_eq!(objects["status"], "pass", "{fresh}");
    assert!(
        objects["message"]
            .as_str()
            .unwrap()
            .contains("stored in the last ten minutes"),
        "{objects}"
    );
    // Originals of an uninstalled package, stored long enough ago to be pruned.
    let objects = env.home().join("objects");
    let status = std::process::Command::new("find")
        .arg(&objects)
        .args(["-type", "f", "-exec", "touch", "-d", "2 hours ago", "{}", "+"])
        .status()
        .unwrap();
    assert!(status.success());

    // Damage: a corrupt index, a deleted cache, an artifact row without files,
    // a file row pointing at no artifact, and a digest lookup with a row of a
    // version that is gone and without a row of a version that is there.
    std::fs::write(env.home().join(INDEX_DIR).join("meta.json"), "garbage").unwrap();
    std::fs::remove_dir_all(env.home().join("cache/git")).unwrap();
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute_batch(
        "PRAGMA foreign_keys = OFF;
         DELETE FROM artifact_files WHERE artifact_id = (SELECT id FROM artifacts WHERE name = 'reviewer');
         INSERT INTO artifact_files (artifact_id, path, mode, git_blob, blake3, size) VALUES (9999, 'x', 'file', 'b', 'h', 1);
         DELETE FROM artifact_texts WHERE artifact_id = (SELECT id FROM artifacts WHERE name = 'quoting');
         INSERT INTO artifact_version_files (blake3, version_id) VALUES ('00', 424242);
         DELETE FROM artifact_version_files WHERE version_id = (SELECT MIN(version_id) FROM artifact_version_files);",
    )
    .unwrap();
    drop(conn);
    let stray = env.home().join("cache/git/example.com/gone/repo");
    std::fs::create_dir_all(stray.join("objects")).unwrap();
    std::fs::write(stray.join("HEAD"), "ref: refs/heads/main\n").unwrap();

    // The default check reads no row twice: rows and references wait for `--full`.
    let run = env.aam(&["--json", "catalog", "check"]);
    assert_eq!(run.code, 1, "{run:?}");
    let quick = run.json();
    for name in ["index", "caches"] {
        assert_eq!(check_named(&quick, name)["status"], "fail", "{quick}");
    }
    for name in ["rows", "foreign_keys", "versions"] {
        assert!(
            quick["checks"].as_array().unwrap().iter().all(|c| c["name"] != name),
            "{quick}"
        );
    }
    let run = env.aam(&["--json", "catalog", "check", "--full"]);
    assert_eq!(run.code, 1, "{run:?}");
    let report = run.json();
    assert_eq!(report["healthy"], false);
    for name in ["index", "caches", "rows", "foreign_keys", "versions"] {
        let check = check_named(&report, name);
        assert_eq!(check["status"], "fail", "{check}");
        assert!(check["suggestion"].is_string(), "{check}");
    }
    let rows = check_named(&report, "rows")["message"].as_str().unwrap();
    assert!(rows.contains("team:agents/reviewer.md lacks file rows"), "{rows}");
    assert!(rows.contains("team:skills/quoting lacks its text"), "{rows}");
    let versions = check_named(&report, "versions")["message"].as_str().unwrap();
    assert!(versions.contains("rows of versions that are gone: 1;"), "{versions}");
    assert!(versions.contains("424242"), "{versions}");
    let stored = check_named(&report, "objects");
    assert_eq!(stored["status"], "warn", "{stored}");
    assert!(
        stored["message"].as_str().unwrap().contains("belong to no install"),
        "{stored}"
    );
    let files = check_named(&report, "files");
    assert_eq!(files["status"], "warn", "{files}");
    assert!(
        files["message"].as_str().unwrap().contains("example.com/gone/repo"),
        "{files}"
    );
    assert!(
        check_named(&report, "caches")["message"]
            .as_str()
            .unwrap()
            .contains("team")
    );
    assert!(
        check_named(&report, "foreign_keys")["message"]
            .as_str()
            .unwrap()
            .contains("artifact_files")
    );
    assert_eq!(check_named(&report, "integrity")["status"], "pass");

    let run = env.aam(&["--json", "catalog", "check", "--repair", "--full"]);
    assert_eq!(run.code, 1, "rows stay broken: {run:?}");
    let repaired = run.json();
    let actions: Vec<&str> = repaired["actions"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|a| assert_eq!(a["ok"], true, "{a}"))
        .map(|a| a["check"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["caches", "objects", "files", "versions", "index"]);
    assert_eq!(check_named(&repaired, "versions")["status"], "pass");
    assert!(!stray.exists(), "a cache no source uses is deleted");
    assert_eq!(check_named(&repaired, "files")["status"], "pass");
    assert_eq!(check_named(&repaired, "objects")["status"], "pass");
    assert_eq!(
        std::fs::read_dir(&objects)
            .unwrap()
            .flatten()
            .flat_map(|d| std::fs::read_dir(d.path()).unwrap())
            .count(),
        0
    );
    assert_eq!(check_named(&repaired, "index")["status"], "pass");
    assert_eq!(check_named(&repaired, "caches")["status"], "pass");
    assert_eq!(check_named(&repaired, "rows")["status"], "fail");
    let found = env.json(&["search", "plain"]);
    assert_eq!(found["results"][0]["name"], "plain", "{found}");
    let diff = env.json(&["source", "diff", "team"]);
    assert_eq!(diff["has_changes"], false, "{diff}");
}

/// A version whose own digests are damaged is named, and a repair changes
/// nothing and says so: its lookup rows are all that is left of what it held.
#[test]
fn a_version_with_damaged_digests_is_named_and_not_repaired() {
    let env = awkward_world();
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    let (version, rows): (i64, i64) = conn
        .query_row(
            "SELECT v.id, (SELECT count(*) FROM artifact_version_files f WHERE f.version_id = v.id)
             FROM artifact_versions v WHERE v.file_count > 0 ORDER BY v.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    conn.execute("UPDATE artifact_versions SET digests = '[]' WHERE id = ?1", [version])
        .unwrap();
    drop(conn);
    let run = env.aam(&["--json", "catalog", "check", "--full", "--repair"]);
    assert_eq!(run.code, 1, "{run:?}");
    let repaired = run.json();
    let action = repaired["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["check"] == "versions")
        .unwrap();
    assert_eq!(action["ok"], false, "{action}");
    assert!(action["error"].is_null(), "{action}");
    let check = check_named(&repaired, "versions");
    assert_eq!(check["status"], "fail", "{check}");
    let message = check["message"].as_str().unwrap();
    assert!(message.contains("1 versions keep damaged digests"), "{message}");
    assert!(message.contains(&format!("versions {version}")), "{message}");
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    let left: i64 = conn
        .query_row(
            "SELECT count(*) FROM artifact_version_files WHERE version_id = ?1",
            [version],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, rows, "its lookup rows are kept");
}

#[test]
fn the_default_check_skips_an_unchanged_catalog_but_finds_damage_written_since() {
    let env = awkward_world();
    let integrity = |args: &[&str]| {
        let run = env.aam(args);
        let report = run.json();
        (run.code, check_named(&report, "integrity").clone())
    };
    let record = env.home().join("catalog-check.json");
    // Just written: checked (recorded only once the write is 2 s old, as a write
    // in the same clock tick could leave the same stamps).
    let (code, check) = integrity(&["--json", "catalog", "check"]);
    assert_eq!((code, check["status"].as_str()), (0, Some("pass")), "{check}");
    assert!(
        check["message"].as_str().unwrap().contains("quick check passed"),
        "{check}"
    );
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let (_, check) = integrity(&["--json", "catalog", "check"]);
    assert_eq!(check["status"], "pass", "{check}");
    assert!(record.exists());
    for args in [&["--json", "catalog", "check"][..], &["--json", "doctor"]] {
        let (_, check) = integrity(args);
        assert_eq!(check["status"], "pass", "{check}");
        assert!(
            check["message"]
                .as_str()
                .unwrap()
                .contains("unchanged since SQLite's quick check at"),
            "{args:?}: {check}"
        );
    }
    let (_, check) = integrity(&["--json", "catalog", "check", "--full"]);
    assert_eq!(check["message"], "SQLite's complete integrity check passed", "{check}");

    // Damage: the first page of the artifacts' texts overwritten in place, the
    // file's size unchanged.
    let db = env.home().join("catalog.db");
    let (page, size): (u32, u32) = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.query_row(
            "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_schema WHERE name = 'artifact_texts'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let length = std::fs::metadata(&db).unwrap().len();
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .unwrap()
        .write_at(&[0xA5; 64], u64::from(page - 1) * u64::from(size))
        .unwrap();
    assert_eq!(std::fs::metadata(&db).unwrap().len(), length);
    for args in [
        &["--json", "catalog", "check"][..],
        &["--json", "catalog", "check"],
        &["--json", "doctor"],
        &["--json", "catalog", "check", "--full"],
    ] {
        let (code, check) = integrity(args);
        assert_eq!(code, 1, "{args:?}: {check}");
        assert_eq!(check["status"], "fail", "{args:?}: {check}");
        let message = check["message"].as_str().unwrap();
        assert!(
            message.contains("SQLite reports damage")
                || message.contains("integrity check could not finish: the catalog file is damaged"),
            "{args:?}: {check}"
        );
        assert!(!record.exists(), "a failure leaves no record behind");
    }
}

#[test]
fn an_index_left_behind_by_a_killed_writer_warns_and_catches_up() {
    let env = awkward_world();
    let index = env.home().join(INDEX_DIR);
    // What a kill -9 between a source write's catalog commit and its index commit
    // leaves: the catalog one generation ahead, and tantivy's temporaries.
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'",
        [],
    )
    .unwrap();
    drop(conn);
    let dead = index.join(".tmpDead01");
    std::fs::write(&dead, "{}").unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&dead)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
    // A temporary a live writer may be about to rename.
    let live = index.join(".tmpLive01");
    std::fs::write(&live, "{}").unwrap();

    for args in [&["--json", "catalog", "check"][..], &["--json", "doctor"]] {
        let run = env.aam(args);
        let report = run.json();
        let check = check_named(&report, "index");
        assert_eq!(check["status"], "warn", "{args:?}: {report:#}");
        let message = check["message"].as_str().unwrap();
        assert!(
            message.contains("the next search or source command brings it up to date"),
            "{message}"
        );
        if args[1] == "catalog" {
            assert_eq!(run.code, 0, "{run:?}");
            assert_eq!(report["healthy"], true, "{report:#}");
        }
    }
    // Checks change nothing; the next search catches up and clears the dead temporary.
    assert!(dead.exists());
    env.json(&["search", "plain"]);
    let after = env.json(&["catalog", "check"]);
    assert_eq!(check_named(&after, "index")["status"], "pass", "{after:#}");
    assert!(!dead.exists(), "the dead writer's temporary is still there");
    assert!(live.exists(), "a recent temporary was deleted");

    // So does a source update that finds nothing new, as the check says.
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'",
        [],
    )
    .unwrap();
    drop(conn);
    let update = env.json(&["source", "update", "team"]);
    assert_eq!(update["sources"][0]["status"], "up_to_date", "{update}");
    let after = env.json(&["catalog", "check"]);
    assert_eq!(check_named(&after, "index")["status"], "pass", "{after:#}");
}

#[test]
fn doctor_on_a_healthy_and_a_broken_home() {
    let env = awkward_world();
    std::fs::write(env.path("CLAUDE.md"), "# Project\n").unwrap();
    env.json(&["install", "team/plain", "--platform", "claude"]);
    let token = env.home().join("mcp-token");
    std::fs::write(&token, "secret\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();

    let healthy = env.json(&["doctor"]);
    assert_eq!(healthy["healthy"], true, "{healthy:#}");
    for check in healthy["checks"].as_array().unwrap() {
        assert_eq!(check["status"], "pass", "{check}");
    }
    assert!(healthy["summary"].as_str().unwrap().contains("0 failed"));
    // Sources registered but never fetched (defaults on an offline machine)
    // are named: their artifacts are not searched yet.
    env.json(&["source", "enable-defaults"]);
    let caches = check_named(&env.json(&["doctor"]), "caches").clone();
    assert_eq!(caches["status"], "pass", "{caches}");
    assert!(
        caches["message"].as_str().unwrap().contains("never fetched"),
        "{caches}"
    );
    assert!(
        caches["message"].as_str().unwrap().contains("anthropics/skills"),
        "{caches}"
    );
    // A local source whose folder is gone still serves its cache, but its next
    // update fails: doctor warns, naming it (it passed).
    std::fs::rename(env.path("team"), env.path("team-moved")).unwrap();
    let gone = check_named(&env.json(&["doctor"]), "caches").clone();
    assert_eq!(gone["status"], "warn", "{gone}");
    assert!(gone["message"].as_str().unwrap().contains("`team`"), "{gone}");
    assert!(gone["suggestion"].as_str().unwrap().contains("source remove"), "{gone}");
    std::fs::rename(env.path("team-moved"), env.path("team")).unwrap();

    // A file added to a deployed skill folder fails verify: doctor says so too
    // (it said every file was as installed; found by a user helper).
    std::fs::write(env.path(".claude/skills/plain/notes.md"), "mine\n").unwrap();
    assert_eq!(env.aam(&["verify", "--all"]).code, 1);
    let added = check_named(&env.json(&["doctor"]), "installs").clone();
    assert_eq!(added["status"], "warn", "{added}");
    assert!(added["message"].as_str().unwrap().contains("added in plain"), "{added}");
    std::fs::remove_file(env.path(".claude/skills/plain/notes.md")).unwrap();

    std::fs::write(env.home().join("config.yaml"), "default_platforms: [unclosed").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::remove_file(env.path(".claude/skills/plain/SKILL.md")).unwrap();
    std::fs::write(env.home().join(INDEX_DIR).join("meta.json"), "garbage").unwrap();
    let run = env.aam(&["--json", "doctor"]);
    assert_eq!(run.code, 1, "{run:?}");
    let broken = run.json();
    assert_eq!(broken["healthy"], false);
    for name in ["settings", "index", "installs", "mcp_token"] {
        assert_eq!(check_named(&broken, name)["status"], "fail", "{name}: {broken:#}");
    }
    let human = env.aam(&["doctor"]);
    assert!(human.stdout.contains("FAIL  mcp_token"), "{}", human.stdout);
    assert!(human.stdout.contains("chmod 600"), "{}", human.stdout);
}

#[test]
fn init_detects_platforms_and_settings_are_validated() {
    let env = TestEnv::new();
    // A `.github` of workflows alone is no sign of Copilot.
    std::fs::create_dir_all(env.path(".github/workflows")).unwrap();
    std::fs::write(env.path("AGENTS.md"), "# Agents\n").unwrap();
    let out = env.json(&["init"]);
    assert_eq!(out["default_platforms"], serde_json::json!(["codex"]), "{out}");
    std::fs::write(env.path(".github/copilot-instructions.md"), "Be brief.\n").unwrap();
    std::fs::remove_file(env.path(".aam/config.yaml")).unwrap(); // else init keeps what it saved
    let out = env.json(&["init"]);
    assert_eq!(
        out["default_platforms"],
        serde_json::json!(["codex", "copilot"]),
        "{out}"
    );
    assert_eq!(out["detected"][0]["marker"], ".github/copilot-instructions.md", "{out}");
    assert_eq!(out["default_sources_added"], serde_json::json!([]));
    assert!(env.home().join("catalog.db").is_file());

    let out = env.json(&["init", "--platform", "cursor", "--yes"]);
    assert_eq!(out["default_platforms"], serde_json::json!(["cursor"]));
    assert!(!out["default_sources_added"].as_array().unwrap().is_empty(), "{out}");
    let sources = env.json(&["source", "list"]);
    assert!(
        sources["sources"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["last_commit"].is_null())
    );
    // Searching and listing say those sources are not indexed yet, and how to fetch them.
    let unfetched = env.json(&["list", "--available"])["unfetched_sources"].clone();
    assert_eq!(
        unfetched.as_array().unwrap().len(),
        sources["sources"].as_array().unwrap().len()
    );
    let listed = env.aam(&["list", "--available"]);
    assert!(listed.stdout.contains("Not indexed yet: "), "{}", listed.stdout);
    assert!(listed.stdout.contains("aam source update --all"), "{}", listed.stdout);
    let searched = env.json(&["search", "pdf"]);
    assert!(
        searched["warnings"][0].as_str().unwrap().contains("not indexed yet"),
        "{searched}"
    );

    let project = std::fs::read_to_string(env.path(".aam/config.yaml")).unwrap();
    assert!(project.contains("cursor"), "{project}");
    // Run again without platforms (a teammate's `aam init --yes` on a clone):
    // the project's setting stays (it was replaced by what was detected).
    let again = env.json(&["init", "--yes"]);
    assert_eq!(again["default_platforms"], serde_json::json!(["cursor"]), "{again}");
    assert_eq!(std::fs::read_to_string(env.path(".aam/config.yaml")).unwrap(), project);

    // The project's setting wins over the home's, which wins over detection.
    env.json(&["config", "set", "default_platforms", "claude"]);
    // `config get` shows the value in effect here: the project's, and says so.
    let value = env.aam(&["config", "get", "default_platforms"]);
    assert_eq!(value.stdout, "cursor\n");
    assert!(value.stderr.contains("origin: project: "), "{value:?}");
    let repo = env.repo("team");
    repo.write("skills/pdf/SKILL.md", skill("pdf", "PDFs"));
    repo.commit("one");
    env.json(&["source", "add", "./team", "--name", "team"]);
    env.json(&["install", "team/pdf"]);
    assert!(env.path(".cursor/skills/pdf/SKILL.md").is_file());
    assert!(!env.path(".claude/skills/pdf").exists());
    let listed = env.json(&["config", "list"]);
    assert_eq!(listed["settings"][0]["key"], "default_platforms");
    let body = env.json_err(&["config", "set", "default_platforms", "emacs"], "AAM_INVALID_ARGUMENT");
    assert!(body["hint"].as_str().unwrap().contains("cursor, claude"), "{body}");
    let body = env.json_err(&["config", "get", "colour"], "AAM_INVALID_ARGUMENT");
    assert!(body["hint"].as_str().unwrap().contains("`default_platforms`"), "{body}");
    let run = env.aam(&["init", "--platform", "emacs"]);
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn completions_for_every_shell() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let run = env.aam(&["completions", shell]);
        assert_eq!(run.code, 0, "{shell}: {run:?}");
        assert!(
            run.stdout.contains("doctor") && run.stdout.contains("export"),
            "{shell}"
        );
    }
    assert_eq!(env.aam(&["completions", "tcsh"]).code, 2);
}

#[test]
fn the_documented_queries_run_on_an_export() {
    let env = awkward_world();
    env.json(&["install", "team/plain", "--platform", "claude"]);
    let repo = crate::support::Repo { dir: env.path("team") };
    repo.write(
        "skills/plain/SKILL.md",
        skill("plain", "A plain skill, changed upstream"),
    );
    repo.commit("change plain");
    env.json(&["source", "update", "team"]);
    let mirror = env.repo("mirror");
    mirror.write(
        "skills/plain/SKILL.md",
        skill("plain", "A plain skill, changed upstream"),
    );
    mirror.commit("copy");
    env.json(&["source", "add", "./mirror", "--name", "mirror"]);
    env.json(&["catalog", "export", "--output", "audit.db"]);

    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/catalog.md")).unwrap();
    let queries: Vec<&str> = docs
        .split("```sql\n")
        .skip(1)
        .map(|block| block.split("```").next().unwrap())
        .collect();
    assert!(queries.len() >= 5, "{queries:?}");
    let conn = rusqlite::Connection::open(env.path("audit.db")).unwrap();
    let run = |sql: &str| -> Vec<Vec<String>> {
        let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{e}: {sql}"));
        let width = stmt.column_count();
        stmt.query_map([], |r| {
            (0..width)
                .map(|i| {
                    Ok(match r.get_ref(i)? {
                        rusqlite::types::ValueRef::Null => String::new(),
                        rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                        other => String::from_utf8_lossy(other.as_bytes().unwrap_or_default()).into_owned(),
                    })
                })
                .collect()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let shas: Vec<String> = run("SELECT sha FROM commits ORDER BY id")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    let (first, second) = (shas[0].as_str(), shas[1].as_str());
    let mut checked = 0;
    for sql in &queries {
        let bound = sql
            .replace(":from", &format!("'{first}'"))
            .replace(":to", &format!("'{second}'"))
            .replace(":package", "'plain'");
        let rows = run(&bound);
        let has = |row: &[&str]| {
            rows.iter()
                .any(|r| r.iter().map(String::as_str).eq(row.iter().copied()))
        };
        if sql.contains("came from which commit") {
            assert!(has(&[first, "skill", "skills/plain", "added"]), "{rows:?}");
            assert!(has(&[second, "skill", "skills/plain", "modified"]), "{rows:?}");
        } else if sql.contains("differ from their source") {
            let paths: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
            assert!(paths.contains(&".claude/skills/plain/SKILL.md"), "{rows:?}");
            assert_eq!((rows[0][3].as_str(), rows[0][4].as_str()), (first, second), "{rows:?}");
        } else if sql.contains("between two updates") {
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert_eq!((rows[0][2].as_str(), rows[0][4].as_str()), ("modified", "skills/plain"));
        } else if sql.contains("which version of a package") {
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert_eq!(rows[0][2], "claude", "{rows:?}");
        } else if sql.contains("several sources") {
            assert_eq!(rows.len(), 1, "{rows:?}");
            assert!(rows[0][1].contains("mirror:skills/plain/SKILL.md"), "{rows:?}");
        } else if sql.contains("share of artifacts") {
            // Content audit: every source with live artifacts is ranked.
            assert!(rows.iter().any(|r| r[0] == "mirror"), "{rows:?}");
        } else if sql.contains("artifact_findings") {
            // The other content-audit queries run; what they find is tested in audit_findings.
        } else {
            // Artifacts indexed with warnings: none here.
            assert!(rows.is_empty(), "{sql}: {rows:?}");
        }
        checked += 1;
    }
    assert_eq!(checked, 10);
}

#[test]
fn a_catalog_from_a_newer_aam_fails_the_migrations_check() {
    let env = awkward_world();
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (99, 'future', 'later', '0')",
        [],
    )
    .unwrap();
    drop(conn);
    for args in [&["--json", "catalog", "check"][..], &["--json", "doctor"][..]] {
        let run = env.aam(args);
        assert_eq!(run.code, 1, "{run:?}");
        let check = check_named(&run.json(), "migrations").clone();
        assert_eq!(check["status"], "fail", "{check}");
        assert!(check["message"].as_str().unwrap().contains("newer"), "{check}");
    }
}
