//! `aam search`, `aam info`, `aam catalog reindex` and the index kept in step
//! with the catalog.

use aam::search::INDEX_DIR;
use serde_json::{Value, json};

use crate::support::{Repo, TestEnv, skill};

/// A repository where one word, `review`, lands in every ranking tier.
fn ranking_repo(env: &TestEnv) -> Repo {
    let repo = env.repo("rank");
    repo.write("skills/review/SKILL.md", skill("review", "Exact name"))
        .write("skills/review-b/SKILL.md", skill("Review-B", "Prefix, second by name"))
        .write("skills/review-a/SKILL.md", skill("review-a", "Prefix, first by name"))
        .write("skills/code-reviewer/SKILL.md", skill("code-reviewer", "Contains"))
        .write(
            "agents/auditor.md",
            "---\nname: auditor\ndescription: Does a careful review of diffs\n---\nChecks.\n",
        )
        .write(
            "prompts/triage.md",
            "---\nname: triage\ndescription: Sorts incoming issues\n---\nThen review them.\n",
        )
        .write("skills/unrelated/SKILL.md", skill("unrelated", "Nothing to see"))
        .write("skills/cpp/SKILL.md", skill("c++ guide", "Templates (and *pointers*)"))
        .write(
            ".claude/agents/claude-only.md",
            "---\nname: claude-only\ndescription: For claude\n---\n",
        )
        .write(".cursor/rules/cursor-only.mdc", "---\ndescription: For cursor\n---\n");
    repo.commit("c1");
    repo
}

fn names(result: &Value) -> Vec<String> {
    result["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ranking_tiers_exact_prefix_contains_description_body() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    let found = env.json(&["search", "review"]);
    assert_eq!(
        names(&found),
        ["review", "review-a", "Review-B", "code-reviewer", "auditor", "triage"]
    );
    assert_eq!(found["total"], 6);
    assert_eq!(found["query"], "review");
    let first = &found["results"][0];
    assert_eq!(first["qualified_name"], "rank/review");
    assert_eq!(first["type"], "skill");
    assert_eq!(first["source"], "rank");
    assert_eq!(first["path"], "skills/review");
    assert_eq!(first["installed"], false);
    let scores: Vec<f64> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "scores descend: {scores:?}");

    // Case-insensitive, same order.
    assert_eq!(names(&env.json(&["search", "REVIEW"])), names(&found));
    // A qualified name comes first even when it would rank last.
    assert_eq!(names(&env.json(&["search", "rank/triage"]))[0], "triage");
    // Sort by name instead of relevance.
    let by_name = env.json(&["search", "review", "--sort", "name"]);
    assert_eq!(
        names(&by_name),
        ["auditor", "code-reviewer", "review", "review-a", "Review-B", "triage"]
    );
}

/// A name holds a query of two or three letters anywhere: at its start, in its
/// middle, at its very end, or as the whole name.
#[test]
fn short_queries_meet_names_that_hold_them_anywhere() {
    let env = TestEnv::new();
    let repo = env.repo("short");
    for name in ["xq", "xqstart", "mid-xq-dle", "tailxq", "x-q", "qx"] {
        repo.write(&format!("skills/{name}/SKILL.md"), skill(name, "Plain"));
    }
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    let mut found = names(&env.json(&["search", "xq"]));
    found.sort();
    assert_eq!(found, ["mid-xq-dle", "tailxq", "xq", "xqstart"]);
    assert_eq!(names(&env.json(&["search", "lxq"])), ["tailxq"]);
    assert_eq!(names(&env.json(&["search", "IlX"])), ["tailxq"], "case-insensitive");
}

#[test]
fn queries_are_literal_text() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    for query in [
        "\"",
        ":",
        "(",
        "*",
        "-",
        "AND",
        "\"unbalanced",
        "review AND",
        "name:review",
        "(review",
        "a\\b",
        "~1^2",
    ] {
        let run = env.aam(&["--json", "search", "--", query]);
        assert_eq!(run.code, 0, "{query}: {run:?}");
        run.json();
    }
    assert_eq!(names(&env.json(&["search", "c++"]))[0], "c++ guide");
    assert_eq!(names(&env.json(&["search", "*pointers*"])), ["c++ guide"]);
    assert_eq!(
        env.json(&["search", "--", "-review"])["total"],
        6,
        "punctuation is not an operator"
    );
}

#[test]
fn empty_query_browses_and_limits_are_checked() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    let all = env.json(&["search"]);
    assert_eq!(all["total"], 10);
    assert_eq!(all["results"].as_array().unwrap().len(), 10);
    let two = env.json(&["search", "--limit", "2"]);
    assert_eq!(two["results"].as_array().unwrap().len(), 2);
    assert_eq!(two["total"], 10);
    for bad in ["0", "1001"] {
        let body = env.json_err(&["search", "review", "--limit", bad], "AAM_INVALID_ARGUMENT");
        assert!(
            body["message"].as_str().unwrap().contains("between 1 and 1000"),
            "{body}"
        );
    }
    let human = env.aam(&["search", "review", "--limit", "3"]);
    assert!(human.stdout.contains("showing 3 of 6"), "{}", human.stdout);
}

#[test]
fn pages_never_overlap_or_skip() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    for query in ["review", ""] {
        let whole = names(&env.json(&["search", query, "--limit", "100"]));
        let mut paged = Vec::new();
        for offset in (0..whole.len()).step_by(2) {
            let page = env.json(&["search", query, "--limit", "2", "--offset", &offset.to_string()]);
            paged.extend(names(&page));
        }
        assert_eq!(paged, whole, "query `{query}`");
    }
    let beyond = env.json(&["search", "review", "--offset", "50"]);
    assert_eq!(beyond["results"], json!([]));
    assert_eq!(beyond["total"], 6);
}

#[test]
fn typos_get_suggestions() {
    let env = TestEnv::new();
    let repo = env.repo("typos");
    repo.write("skills/kubernetes-helper/SKILL.md", skill("kubernetes-helper", "Helps"))
        .write("skills/terraform-planner/SKILL.md", skill("terraform-planner", "Plans"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    for typo in [
        "kubernetes-helpr",
        "kubernetes-hellper",
        "kubernetse-helper",
        "terraform-planer",
        "kuberntes",
    ] {
        let found = env.json(&["search", typo]);
        assert_eq!(found["total"], 0, "{typo}");
        let suggestions = found["suggestions"].as_array().unwrap();
        assert!(!suggestions.is_empty() && suggestions.len() <= 3, "{typo}: {found}");
        let expected = if typo.starts_with('t') {
            "terraform-planner"
        } else {
            "kubernetes-helper"
        };
        assert_eq!(suggestions[0], expected, "{typo}");
    }
    let human = env.aam(&["search", "kubernetes-helpr"]);
    assert!(
        human.stdout.contains("Did you mean: kubernetes-helper?"),
        "{}",
        human.stdout
    );
    assert_eq!(env.json(&["search", "xylophonist"])["suggestions"], json!([]));
}

/// Names, descriptions and bodies in the words people use, and other forms of them.
fn word_forms_repo(env: &TestEnv) -> Repo {
    let repo = env.repo("forms");
    repo.write(
        "agents/security-auditor.md",
        "---\nname: security-auditor\ndescription: Reviews code for vulnerabilities\n---\nFinds injection flaws.\n",
    )
    .write(
        "skills/go-fuzzer/SKILL.md",
        skill("go-fuzzer", "Generates inputs for Go"),
    )
    .write(
        "skills/browser-tests/SKILL.md",
        "---\nname: browser-tests\ndescription: End-to-end checks\n---\nDrives Chromium with Playwright.\n",
    )
    .write("skills/security/SKILL.md", skill("security", "Threat models"))
    .write("skills/audit-log/SKILL.md", skill("audit-log", "Keeps a trail"))
    .write("skills/flaky/SKILL.md", skill("flaky", "Retry flaky requests"))
    .write(
        "agents/csharp-pro.md",
        "---\nname: csharp-pro\ndescription: Writes C# code\n---\n",
    )
    .write(
        "agents/cpp-pro.md",
        "---\nname: cpp-pro\ndescription: Writes C++ code\n---\n",
    )
    .write("agents/c-pro.md", "---\nname: c-pro\ndescription: Writes C code\n---\n");
    repo.commit("c1");
    repo
}

#[test]
fn word_forms_meet_and_hyphenated_names_match_word_by_word() {
    let env = TestEnv::new();
    let repo = word_forms_repo(&env);
    env.json(&["source", "add", repo.path()]);
    // `security audit` names no artifact literally; the agent's name has both words.
    let found = env.json(&["search", "security audit"]);
    assert_eq!(names(&found)[0], "security-auditor", "{found:#}");
    assert_eq!(found["total"], 1, "{found:#}");
    // One word finds longer forms of itself in names, descriptions and bodies.
    assert_eq!(names(&env.json(&["search", "fuzzing"])), ["go-fuzzer"]);
    assert_eq!(
        names(&env.json(&["search", "auditing"])),
        ["audit-log", "security-auditor"]
    );
    assert_eq!(names(&env.json(&["search", "vulnerability"])), ["security-auditor"]);
    assert_eq!(names(&env.json(&["search", "drive playwright"])), ["browser-tests"]);
    // A stem need not be the start of every form: `retries` and `retry` share `retri`.
    assert_eq!(names(&env.json(&["search", "retries"])), ["flaky"]);
    // Word order and hyphens do not matter, and an exact name still comes first.
    assert_eq!(names(&env.json(&["search", "auditor-security"])), ["security-auditor"]);
    assert_eq!(names(&env.json(&["search", "security"]))[0], "security");
    // Short words match only exactly: `go` is not the start of every `good`.
    assert_eq!(names(&env.json(&["search", "inputs go"])), ["go-fuzzer"]);
    // Languages written with symbols are told apart (all three read as `c`).
    assert_eq!(names(&env.json(&["search", "c#"])), ["csharp-pro"]);
    assert_eq!(names(&env.json(&["search", "C++ code"])), ["cpp-pro"]);
}

#[test]
fn typos_of_any_indexed_word_get_suggestions() {
    let env = TestEnv::new();
    let repo = word_forms_repo(&env);
    env.json(&["source", "add", repo.path()]);
    // `playwright` and `chromium` appear only in a body; `vulnerabilities` only in a description.
    for (typo, expected) in [
        ("playwrite", "playwright"),
        ("playwrigt", "playwright"),
        ("chromuim", "chromium"),
        ("vulnerabilites", "vulnerabilities"),
        ("drives playwrite", "drives playwright"),
        ("securty auditor", "security-auditor"),
    ] {
        let found = env.json(&["search", typo]);
        assert_eq!(found["total"], 0, "{typo}: {found:#}");
        assert!(
            found["suggestions"].as_array().unwrap().contains(&json!(expected)),
            "{typo}: {found:#}"
        );
        let corrected = env.json(&["search", expected]);
        assert!(corrected["total"].as_u64().unwrap() > 0, "{expected}: {corrected:#}");
    }
    let human = env.aam(&["search", "playwrite"]);
    assert!(human.stdout.contains("Did you mean: playwright?"), "{}", human.stdout);
    // A word nothing resembles gets no suggestion.
    assert_eq!(env.json(&["search", "playwrite xylophonist"])["suggestions"], json!([]));
    // A phrase is meant whole: its correction comes before names a word of it resembles.
    assert_eq!(
        env.json(&["search", "drives playwrite"])["suggestions"][0],
        "drives playwright"
    );
}

#[test]
fn a_question_searches_for_its_words_not_its_phrasing() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    // `how`, `do`, `i`, `a`, `of` are in no artifact: a question of the words
    // finds what the words alone find.
    let asked = names(&env.json(&["search", "how do I sort incoming issues"]));
    assert_eq!(asked, names(&env.json(&["search", "sort incoming issues"])));
    assert_eq!(asked, ["triage"]);
    assert_eq!(
        names(&env.json(&["search", "I need a careful review of diffs"])),
        ["auditor"]
    );
    // A query of such words only is searched as it is.
    let to = names(&env.json(&["search", "to"]));
    assert!(to.contains(&"unrelated".to_string()), "`Nothing to see`: {to:?}");
}

#[test]
fn filters_and_warnings() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    assert_eq!(names(&env.json(&["search", "review", "--type", "agent"])), ["auditor"]);
    assert_eq!(
        names(&env.json(&["search", "review", "--type", "agent", "--type", "prompt"])),
        ["auditor", "triage"]
    );
    // A comma list is the same filter (`--platform` took one; `--type` did not).
    assert_eq!(
        names(&env.json(&["search", "review", "--type", "agent,prompt"])),
        ["auditor", "triage"]
    );

    // An unknown value beside a known one is ignored with a warning; a filter
    // of unknown values only would search everything, and is refused.
    let warned = env.json(&[
        "search", "review", "--type", "widget", "--type", "agent", "--source", "nope", "--source", "rank",
    ]);
    assert_eq!(names(&warned), ["auditor"]);
    let warnings = warned["warnings"].as_array().unwrap();
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("valid types: skill, agent, prompt, instruction")
    );
    assert!(warnings[1].as_str().unwrap().contains("valid sources: rank"));
    let human = env.aam(&["search", "review", "--source", "nope", "--source", "rank"]);
    assert!(
        human.stderr.contains("warning: unknown source `nope` ignored"),
        "{}",
        human.stderr
    );
    for filter in [["--type", "tool"], ["--source", "nope"], ["--platform", "word"]] {
        let refused = env.json_err(&["search", "review", filter[0], filter[1]], "AAM_INVALID_ARGUMENT");
        assert!(refused["message"].as_str().unwrap().contains(filter[1]), "{refused}");
    }

    let claude = names(&env.json(&["search", "--platform", "claude", "--limit", "100"]));
    assert!(claude.contains(&"claude-only".to_string()));
    assert!(!claude.contains(&"cursor-only".to_string()));
    assert!(
        claude.contains(&"review".to_string()),
        "platform-neutral artifacts stay"
    );
    let bad_platform = env.json_err(&["search", "--platform", "emacs"], "AAM_INVALID_ARGUMENT");
    assert!(
        bad_platform["hint"].as_str().unwrap().contains("aam agents"),
        "{bad_platform}"
    );

    repo.write("skills/review-c/SKILL.md", skill("review-c", "Another"));
    repo.commit("c2");
    env.json(&["source", "add", repo.path(), "--name", "other"]);
    let only_other = env.json(&["search", "review-c", "--source", "other"]);
    assert_eq!(only_other["total"], 1);
    assert_eq!(only_other["results"][0]["source"], "other");
}

#[test]
fn the_index_follows_add_update_and_remove() {
    let env = TestEnv::new();
    let repo = env.repo("follow");
    repo.write("skills/first/SKILL.md", skill("first", "One"));
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    assert_eq!(env.json(&["search", "first"])["total"], 1);

    repo.write("skills/second/SKILL.md", skill("second", "Two"))
        .write("skills/first/SKILL.md", skill("first", "Renamed words zebra"));
    repo.commit("c2");
    env.json(&["source", "update", "follow"]);
    assert_eq!(env.json(&["search", "second"])["total"], 1);
    assert_eq!(env.json(&["search", "zebra"])["total"], 1);
    assert_eq!(
        env.json(&["search", ""])["total"],
        2,
        "the modified artifact was replaced, not duplicated"
    );

    repo.remove("skills/second");
    repo.commit("c3");
    env.json(&["source", "update", "follow"]);
    assert_eq!(env.json(&["search", "second"])["total"], 0);

    env.json(&["source", "remove", "follow"]);
    assert_eq!(env.json(&["search", ""])["total"], 0);
    assert_eq!(index_generation(&env), catalog_generation(&env));
}

#[test]
fn a_source_add_indexes_what_a_reindex_would() {
    let env = TestEnv::new();
    let first = ranking_repo(&env);
    let second = env.repo("second");
    let long_body = format!("{}\nreview {}", "ünïcode words ".repeat(3000), "tail ".repeat(10));
    second
        .write(
            "skills/long/SKILL.md",
            format!("---\nname: long\ndescription: A long review body\n---\n{long_body}"),
        )
        .write(
            ".claude/agents/reviewer.md",
            "---\nname: reviewer\n---\nNo description.\n",
        )
        .write("skills/plain/SKILL.md", skill("plain", "Nothing to review here"));
    second.commit("c1");
    env.json(&["source", "add", first.path()]);
    env.json(&["source", "add", second.path()]);
    assert_eq!(index_generation(&env), catalog_generation(&env));
    let queries = ["review", "", "unicode", "tail", "words", "claude"];
    let results = |env: &TestEnv| -> Vec<Value> {
        queries
            .iter()
            .map(|q| env.json(&["search", q, "--limit", "100"]))
            .collect()
    };
    let after_add = results(&env);
    assert_eq!(
        after_add[1]["total"], 13,
        "every artifact of both sources is indexed once"
    );
    env.aam(&["--json", "catalog", "reindex"]).ok_json();
    assert_eq!(results(&env), after_add, "a rebuild finds the same documents");
}

/// A frontmatter's keys are no words of its body: `applyTo` or `tools` do not
/// find every rule or agent that sets them, but its values are still found (the
/// rule for `*.kt` files, the agent with WebFetch), and so is a block scalar's
/// `Mockingbird: sings` whole. A block that never closes is text like any other,
/// and a rebuild indexes what the add did.
#[test]
fn the_body_is_indexed_without_its_frontmatter_keys() {
    let env = TestEnv::new();
    let repo = env.repo("keys");
    repo.write(
        ".github/instructions/kotlin.instructions.md",
        "---\ndescription: House style\napplyTo: \"**/*.kt\"\n---\nPrefer data classes.\n",
    )
    .write(
        "agents/fetcher.md",
        "---\nname: fetcher\ndescription: Reads pages\ntools: WebFetch, Grep\nexamples: |\n  Mockingbird: sings\n---\nSummarize them.\n",
    )
    .write(
        "agents/toolsmith.md",
        "---\nname: smith\ndescription: Sharpens things\n---\nPicks the tools for a job.\n",
    )
    .write(
        "prompts/open.prompt.md",
        "---\nmode: agent\nnever closed, so this is text: applyTo\n",
    );
    repo.commit("c1");
    env.json(&["source", "add", repo.path()]);
    let searches = |env: &TestEnv| -> Vec<Vec<String>> {
        ["applyTo", "tools", "mode", "kt", "webfetch", "classes", "mockingbird"]
            .iter()
            .map(|q| {
                let mut found = names(&env.json(&["search", q]));
                found.sort();
                found
            })
            .collect()
    };
    let after_add = searches(&env);
    assert_eq!(
        after_add,
        [
            vec!["open"],
            vec!["smith"],
            vec!["open"],
            vec!["kotlin"],
            vec!["fetcher"],
            vec!["kotlin"],
            vec!["fetcher"]
        ]
    );
    env.aam(&["--json", "catalog", "reindex"]).ok_json();
    assert_eq!(searches(&env), after_add, "a rebuild indexes the same text");
}

#[test]
fn a_source_add_killed_at_any_instant_leaves_the_index_and_catalog_in_step() {
    // Kills at fixed instants, then kills aimed at the moment the add's rollback journal exists
    // (a fixed delay alone can miss that window on a faster or slower machine).
    let kill_at = [0, 10, 30, 60, 100, 150, 250, 400, 700, 1200]
        .map(KillAt::After)
        .into_iter()
        .chain([0, 5, 20].map(KillAt::JournalPlus));
    let outcomes = kill_adds(400, kill_at);
    // A kill that landed after the add finished says nothing; at least one must land mid-way.
    assert!(
        outcomes.totals.contains(&3),
        "no kill landed before the add committed: {outcomes:?}"
    );
    assert!(
        outcomes.mid_write > 0,
        "no kill landed while the add's rollback journal existed"
    );
}

#[test]
fn a_large_source_add_killed_while_its_pages_go_to_disk_leaves_the_index_and_catalog_in_step() {
    // 2,100 artifacts: past the 2,048 after which a new source's pages are handed to the
    // file and to the disk before its commit (its last rows in, SQLite's cache is flushed).
    let kill_at = [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1500].map(KillAt::JournalPlus);
    let outcomes = kill_adds(2_100, kill_at.into_iter());
    assert!(
        outcomes.mid_write > 0,
        "no kill landed while the add's rollback journal existed: {outcomes:?}"
    );
}

/// What the kills of [`kill_adds`] left: the documents found after each, and how
/// many landed while the add's rollback journal existed.
#[derive(Debug, Default)]
struct KillOutcomes {
    totals: std::collections::BTreeSet<u64>,
    mid_write: usize,
}

/// Kills `source add` of a repository of `artifacts` skills at each instant, after
/// adding a source of three; each time the next command finds the three or all,
/// in step in the catalog and the index, and a full check passes.
fn kill_adds(artifacts: usize, kill_at: impl Iterator<Item = KillAt>) -> KillOutcomes {
    let env = TestEnv::new();
    // A source already there: a kill mid-way through the next add leaves its rows as they were.
    let kept = env.repo("kept");
    kept.write_skills((0..3).map(|i| format!("k-{i}")), "Kept skill");
    kept.commit("c1");
    let repo = env.repo("many");
    for i in 0..artifacts {
        repo.write(
            &format!("skills/s-{i:04}/SKILL.md"),
            skill(
                &format!("s-{i:04}"),
                &format!("Skill number {i} {}", "filler ".repeat(50)),
            ),
        );
    }
    repo.commit("c1");
    let all = 3 + artifacts as u64;
    let mut outcomes = KillOutcomes::default();
    for when in kill_at {
        let _ = std::fs::remove_dir_all(env.home());
        env.json(&["source", "add", kept.path()]);
        let journal = env.home().join("catalog.db-journal");
        let mut add = std::process::Command::new(env!("CARGO_BIN_EXE_aam"))
            .args(["source", "add", repo.path()])
            .env("AAM_HOME", env.home())
            .env("HOME", env.user_home())
            .env_remove("AAM_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        match when {
            KillAt::After(ms) => std::thread::sleep(std::time::Duration::from_millis(ms)),
            KillAt::JournalPlus(ms) => {
                while !journal.exists() && add.try_wait().unwrap().is_none() {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
        }
        let _ = add.kill();
        add.wait().unwrap();
        if journal.exists() {
            outcomes.mid_write += 1;
        }
        // The next search repairs what the kill left; it finds the old catalog or the new one.
        let total = env.json(&["search", "", "--limit", "1"])["total"].as_u64().unwrap();
        assert!(total == 3 || total == all, "killed {when:?}: {total} documents");
        let rows = env.query(
            "SELECT CAST(COUNT(*) AS TEXT) FROM artifacts WHERE removed_commit_id IS NULL",
            &[],
        );
        assert_eq!(rows, [total.to_string()], "killed {when:?}");
        // A kill inside the add's rollback-journal write left the catalog out of WAL; the next open put it back.
        assert_eq!(env.query("PRAGMA journal_mode", &[]), ["wal"], "killed {when:?}");
        assert_eq!(index_generation(&env), catalog_generation(&env), "killed {when:?}");
        let check = env.aam(&["--json", "catalog", "check", "--full"]);
        assert_eq!(check.code, 0, "killed {when:?}: {check:?}");
        assert_eq!(env.artifacts("kept").len(), 3, "killed {when:?}");
        outcomes.totals.insert(total);
    }
    outcomes
}

/// When the kill test stops an add: after a fixed delay, or a delay after its rollback journal appears.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    After(u64),
    JournalPlus(u64),
}

fn index_generation(env: &TestEnv) -> String {
    let meta = std::fs::read_to_string(env.home().join(INDEX_DIR).join("meta.json")).unwrap();
    let meta: Value = serde_json::from_str(&meta).unwrap();
    meta["payload"].as_str().unwrap().to_string()
}

fn catalog_generation(env: &TestEnv) -> String {
    env.query("SELECT value FROM meta WHERE key = 'generation'", &[])[0].clone()
}

#[test]
fn a_missing_corrupt_or_stale_index_is_rebuilt_from_the_catalog() {
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    let expected = names(&env.json(&["search", "review"]));

    std::fs::remove_dir_all(env.home().join(INDEX_DIR)).unwrap();
    assert_eq!(
        names(&env.json(&["search", "review"])),
        expected,
        "rebuilt after deletion"
    );

    std::fs::write(env.home().join(INDEX_DIR).join("meta.json"), "{ not json").unwrap();
    assert_eq!(
        names(&env.json(&["search", "review"])),
        expected,
        "rebuilt after corruption"
    );

    // A damaged segment file: the search rebuilds, as for a damaged segment list.
    let damage_segments = |extension: &str| {
        for entry in std::fs::read_dir(env.home().join(INDEX_DIR)).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == extension) {
                std::fs::write(&path, b"").unwrap();
            }
        }
    };
    damage_segments("term");
    assert_eq!(
        names(&env.json(&["search", "review"])),
        expected,
        "rebuilt after a damaged segment"
    );

    // Something else in the index folder's place: a file, then a link to a file
    // outside (the link goes, the file it points to stays).
    std::fs::remove_dir_all(env.home().join(INDEX_DIR)).unwrap();
    std::fs::write(env.home().join(INDEX_DIR), "not a folder").unwrap();
    assert_eq!(names(&env.json(&["search", "review"])), expected, "a file in its place");
    let outside = env.home().parent().unwrap().join("outside.txt");
    std::fs::write(&outside, "kept").unwrap();
    std::fs::remove_dir_all(env.home().join(INDEX_DIR)).unwrap();
    std::os::unix::fs::symlink(&outside, env.home().join(INDEX_DIR)).unwrap();
    assert_eq!(names(&env.json(&["search", "review"])), expected, "a link in its place");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept");

    damage_segments("store");
    let run = env.aam(&["--json", "catalog", "reindex"]);
    let reindexed = run.ok_json();
    assert_eq!(reindexed["documents"], 10);
    assert_eq!(names(&env.json(&["search", "review"])), expected, "rebuilt by reindex");

    // A write that reached the catalog but not the index (a crash between the two).
    let conn = rusqlite::Connection::open(env.home().join("catalog.db")).unwrap();
    conn.execute(
        "UPDATE artifacts SET name = 'renamed-behind-its-back' WHERE path = 'skills/unrelated'",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'",
        [],
    )
    .unwrap();
    drop(conn);
    assert_eq!(
        env.json(&["search", "renamed-behind-its-back"])["total"],
        1,
        "stale index rebuilt"
    );
    assert_eq!(index_generation(&env), catalog_generation(&env));
}

#[test]
fn searches_run_while_another_process_updates() {
    let env = TestEnv::new();
    let repo = env.repo("busy");
    repo.write("skills/base/SKILL.md", skill("base", "Always there"));
    repo.commit("c0");
    env.json(&["source", "add", repo.path()]);
    std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            for _ in 0..15 {
                let found = env.json(&["search", "base"]);
                assert_eq!(found["total"], 1);
            }
        });
        for i in 1..=5 {
            repo.write(
                &format!("skills/extra-{i}/SKILL.md"),
                skill(&format!("extra-{i}"), "More"),
            );
            repo.commit(&format!("c{i}"));
            env.json(&["source", "update", "busy"]);
        }
        reader.join().unwrap();
    });
    assert_eq!(env.json(&["search", "extra"])["total"], 5);
}

#[test]
fn info_shows_everything_recorded_about_an_artifact() {
    let env = TestEnv::new();
    let repo = env.repo("inf");
    repo.write(
        "skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Work with PDFs\nlicense: MIT\n---\n# PDF\n",
    )
    .write("skills/pdf/scripts/fill.py", "print('fill')\n")
    .write("skills/dup-one/SKILL.md", skill("dup", "First"))
    .write("skills/dup-two/SKILL.md", skill("dup", "Second"))
    .write("rules/bad.mdc", "---\ndescription: Bad\nglobs: **/*\n---\nrule\n");
    let commit = repo.commit("c1");
    env.json(&["source", "add", repo.path()]);

    let info = env.json(&["info", "inf/pdf"]);
    assert_eq!(info["qualified_name"], "inf/pdf");
    assert_eq!(info["type"], "skill");
    assert_eq!(info["commit"], commit);
    assert_eq!(
        info["frontmatter"],
        json!({"name": "pdf", "description": "Work with PDFs", "license": "MIT"})
    );
    assert_eq!(info["files"].as_array().unwrap().len(), 2);
    assert_eq!(info["files"][1]["path"], "skills/pdf/scripts/fill.py");
    assert_eq!(info["files"][1]["size"], 14);
    assert_eq!(
        info["files"][1]["blake3"],
        blake3::hash(b"print('fill')\n").to_hex().to_string()
    );
    assert!(info["preview"].as_str().unwrap().contains("# PDF"));
    assert_eq!(info["install_command"], "aam install inf/pdf");
    assert_eq!(
        env.json(&["info", "pdf"])["qualified_name"],
        "inf/pdf",
        "a unique bare name works"
    );
    assert_eq!(
        env.json(&["info", "inf/skills/dup-two"])["description"],
        "Second",
        "source/path works"
    );

    let bad = env.json(&["info", "inf/bad"]);
    assert!(bad["warnings"][0].as_str().unwrap().contains("not valid YAML"));

    // Same-named artifacts of one source are named by their paths, which
    // `info` and `install` take; others keep `source/name`.
    let dup_two = env.json(&["info", "inf/skills/dup-two"]);
    assert_eq!(dup_two["qualified_name"], "inf/skills/dup-two");
    assert_eq!(dup_two["install_command"], "aam install inf/skills/dup-two");
    let found = env.json(&["search", "dup"]);
    let mut names: Vec<&str> = found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["qualified_name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["inf/skills/dup-one", "inf/skills/dup-two"], "{found}");
    // The table tells them apart by the path their qualified names hold.
    let table = env.aam(&["search", "dup"]);
    assert!(
        table.stdout.contains("(skills/dup-one)") && table.stdout.contains("(skills/dup-two)"),
        "{}",
        table.stdout
    );
    for name in names {
        env.json(&["info", name]);
    }
    let ambiguous = env.json_err(&["info", "inf/dup"], "AAM_ARTIFACT_AMBIGUOUS");
    assert!(
        ambiguous["hint"].as_str().unwrap().contains("`inf/skills/dup-one`"),
        "{ambiguous}"
    );
    let missing = env.json_err(&["info", "inf/pfd"], "AAM_ARTIFACT_NOT_FOUND");
    assert!(missing["hint"].as_str().unwrap().contains("inf/pdf"), "{missing}");
    // A name no artifact's name is like gets no suggestion, though a word of it
    // is in one's text (`pdf` says "Work with PDFs"; it was suggested).
    let unlike = env.json_err(&["info", "inf/work"], "AAM_ARTIFACT_NOT_FOUND");
    assert!(!unlike["hint"].as_str().unwrap().contains("did you mean"), "{unlike}");
    // `install` of a mistyped bare name suggests the same way.
    let mistyped = env.json_err(&["install", "pfd"], "AAM_PACKAGE_NOT_FOUND");
    assert!(
        mistyped["hint"].as_str().unwrap().starts_with("did you mean `inf/pdf`"),
        "{mistyped}"
    );
    let unknown = env.json_err(&["install", "xqzwv"], "AAM_PACKAGE_NOT_FOUND");
    assert!(unknown["hint"].as_str().unwrap().contains("aam search"), "{unknown}");

    let human = env.aam(&["info", "inf/pdf"]);
    assert!(
        human.stdout.contains("install: aam install inf/pdf"),
        "{}",
        human.stdout
    );
}

/// A name of any length asked for gets its answer in bounded memory: the typo
/// suggestions for a name of 100,000 characters took 1.7 GB (an MCP message
/// may be 1 MiB). The run is held to 512 MiB of data, and the error quotes
/// the name cut.
#[test]
fn a_huge_name_is_not_found_in_bounded_memory() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    let repo = ranking_repo(&env);
    env.json(&["source", "add", repo.path()]);
    let name = "review".repeat(20_000);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aam"));
    command
        .args(["--json", "info", &name])
        .current_dir(env.path(""))
        .env("AAM_HOME", env.home())
        .env("HOME", env.user_home())
        .env_remove("AAM_LOG");
    // SAFETY: only an async-signal-safe system call runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let limit = rustix::process::Rlimit {
                current: Some(512 << 20),
                maximum: Some(512 << 20),
            };
            rustix::process::setrlimit(rustix::process::Resource::Data, limit).map_err(std::io::Error::from)
        });
    }
    let output = command.output().unwrap();
    // A search that long is refused before any work is done for it.
    let long = "a".repeat(1025);
    let refused = env.json_err(&["search", &long], "AAM_INVALID_ARGUMENT");
    assert!(
        refused["message"].as_str().unwrap().contains("1024 characters"),
        "{refused}"
    );
    let body: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no JSON ({e}): {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(body["error"]["code"], "AAM_ARTIFACT_NOT_FOUND", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.len() < 400 && message.ends_with("…`"), "{message}");
}
