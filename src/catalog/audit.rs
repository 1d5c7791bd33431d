//! Audits of the catalog itself: consistent exports (a SQLite snapshot, or
//! records streamed from one read transaction), statistics and health checks.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rusqlite::params;
use serde::Serialize;
use serde_json::Value;

use super::{Catalog, LATEST_MIGRATION, db_error};
use crate::error::{Error, Result};
use crate::progress::Progress;

/// The tables that grow with the artifacts, largest first (pages with their
/// indexes at 100,000 artifacts: 22k, 21k, 8k, 5k, 3k, 2k of 60k).
const LARGEST_TABLES: [&str; 6] = [
    "artifacts",
    "artifact_texts",
    "artifact_files",
    "artifact_version_files",
    "artifact_versions",
    "artifact_events",
];

/// The lines a checking pragma returns on `conn`, without its `ok`.
fn pragma_lines(conn: &rusqlite::Connection, pragma: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(pragma).map_err(db_error)?;
    let lines = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(db_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_error)?;
    Ok(lines.into_iter().filter(|l| l != "ok").collect())
}

/// One exported record, tagged with its kind in a `record` field.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "record", rename_all = "lowercase")]
pub enum ExportRecord {
    /// A live artifact, self-contained: where it came from and every file.
    Artifact(ExportArtifact),
    /// A registered source.
    Source(ExportSource),
    /// A commit a source was indexed at.
    Commit(ExportCommit),
    /// A package made from artifacts.
    Package(ExportPackage),
    /// A package installed in a project, with its platforms and the files it wrote.
    Install(ExportInstall),
}

/// A live artifact as exported.
#[derive(Debug, Clone, Serialize)]
pub struct ExportArtifact {
    /// Source name.
    pub source: String,
    /// The source's credential-free URL.
    pub source_url: String,
    /// The ref the source follows, as resolved at its last fetch.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// The commit the source is indexed at.
    pub commit: Option<String>,
    /// Repository path (a folder for skills).
    pub path: String,
    /// `skill`, `agent`, `prompt` or `instruction`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Platform its location implies.
    pub platform: Option<String>,
    /// The file it is read from.
    pub main_file: String,
    /// blake3 over its (path, mode, blob id) list.
    pub content_digest: String,
    /// The commit that last changed it.
    pub last_changed_commit: Option<String>,
    /// Its files.
    pub files: Vec<ExportFile>,
    /// What the content audit found in its files (`docs/audit.md`).
    pub findings: Vec<ExportFinding>,
}

/// One content-audit finding of an exported artifact.
#[derive(Debug, Clone, Serialize)]
pub struct ExportFinding {
    /// Repository path of the file.
    pub path: String,
    /// Rule id.
    pub rule: String,
    /// `info`, `warn` or `high`.
    pub severity: String,
    /// 1-based line; `null` for whole-file findings.
    pub line: Option<i64>,
    /// Excerpt, invisible characters made visible.
    pub excerpt: String,
}

/// One file of an exported artifact.
#[derive(Debug, Clone, Serialize)]
pub struct ExportFile {
    /// Repository path.
    pub path: String,
    /// `file`, `executable` or `symlink`.
    pub mode: String,
    /// Size in bytes.
    pub size: i64,
    /// blake3 of the bytes.
    pub blake3: String,
    /// Git blob id.
    pub git_blob: String,
}

/// A source as exported.
#[derive(Debug, Clone, Serialize)]
pub struct ExportSource {
    /// Name.
    pub name: String,
    /// `git` or `local`.
    pub kind: crate::sources::spec::SourceKind,
    /// Credential-free URL.
    pub url: String,
    /// Requested ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// What the ref resolved to.
    pub resolved_ref: Option<String>,
    /// Scope folder (`""` = whole tree).
    pub scope_path: String,
    /// Indexed commit.
    pub commit: Option<String>,
    /// When it was registered.
    pub added_at: String,
    /// When it was last fetched.
    pub fetched_at: Option<String>,
}

/// A commit as exported.
#[derive(Debug, Clone, Serialize)]
pub struct ExportCommit {
    /// Source name.
    pub source: String,
    /// Commit id.
    pub sha: String,
    /// Tree of the scanned folder.
    pub tree_sha: String,
    /// Commit time.
    pub committed_at: Option<String>,
    /// When it was indexed.
    pub indexed_at: String,
}

/// A package as exported.
#[derive(Debug, Clone, Serialize)]
pub struct ExportPackage {
    /// Name.
    pub name: String,
    /// Version.
    pub version: String,
    /// `project`, `source` or `registry`.
    pub origin: String,
    /// Where its artifacts came from.
    pub provenance: Option<Value>,
    /// blake3 of its archive, once packed.
    pub archive_blake3: Option<String>,
    /// When it was recorded.
    pub created_at: String,
}

/// A package installed in a project (on one or more platforms) as exported.
#[derive(Debug, Clone, Serialize)]
pub struct ExportInstall {
    /// Project (or home) root.
    pub project_root: String,
    /// Package name.
    pub package: String,
    /// Installed version.
    pub version: String,
    /// Platforms deployed to.
    pub platforms: Vec<String>,
    /// Source commit its artifacts came from, when from a source.
    pub source_commit: Option<String>,
    /// When it was installed.
    pub installed_at: String,
    /// Files (and `FILE#name type` sections) it wrote, with their blake3.
    pub files: Vec<InstalledFile>,
}

/// A file an install wrote.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledFile {
    /// Lock key: project-relative path, `~/...`, or `FILE#name type`.
    pub path: String,
    /// blake3 of what was written.
    pub blake3: String,
}

/// How many records of each kind an export held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ExportCounts {
    /// Artifacts.
    pub artifacts: u64,
    /// Sources.
    pub sources: u64,
    /// Commits.
    pub commits: u64,
    /// Packages.
    pub packages: u64,
    /// Installs.
    pub installs: u64,
    /// Content-audit findings of the artifacts.
    pub findings: u64,
}

/// Per-source numbers for statistics.
#[derive(Debug, Clone)]
pub struct SourceStats {
    /// Name.
    pub name: String,
    /// Folder under `cache/git/`.
    pub cache_key: String,
    /// Indexed commit.
    pub commit: Option<String>,
    /// When it was last fetched.
    pub fetched_at: Option<String>,
    /// Live skills, agents, prompts and instructions.
    pub counts: [i64; 4],
}

/// Whole-catalog numbers for statistics.
#[derive(Debug, Clone)]
pub struct CatalogStats {
    /// Every source.
    pub sources: Vec<SourceStats>,
    /// Artifacts ever seen, live or removed.
    pub artifacts_ever: i64,
    /// Indexed commits.
    pub commits: i64,
    /// Packages recorded.
    pub packages: i64,
    /// Installed packages, over every project.
    pub installs: i64,
    /// Packages of configured registries.
    pub registry_packages: i64,
    /// Generation counter.
    pub generation: u64,
    /// When anything was last indexed.
    pub last_indexed_at: Option<String>,
}

/// A row the catalog holds without what it points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// Which table.
    pub table: &'static str,
    /// Human reference to the row (`source:path`).
    pub row: String,
    /// What it lacks.
    pub lacks: &'static str,
}

impl Catalog {
    /// Writes a consistent copy of the catalog into the empty or missing file
    /// `dest` (SQLite's `VACUUM INTO`: one read transaction, so writers that
    /// commit meanwhile are not in it), as a plain rollback-journal database
    /// whose header carries `application_id`. Returns what the copy holds.
    pub fn snapshot_into(&self, dest: &Path, application_id: i32) -> Result<ExportCounts> {
        let target = dest.to_str().ok_or_else(|| {
            Error::invalid_argument(format!("`{}` is not a UTF-8 path", dest.display()))
                .with_hint("export to a path made of UTF-8 characters")
        })?;
        self.conn.execute("VACUUM INTO ?1", params![target]).map_err(db_error)?;
        let copy = rusqlite::Connection::open(dest).map_err(db_error)?;
        copy.query_row("PRAGMA journal_mode = DELETE", [], |_| Ok(()))
            .map_err(db_error)?;
        copy.execute_batch(&format!("PRAGMA application_id = {application_id}"))
            .map_err(db_error)?;
        copy.query_row(
            "SELECT (SELECT COUNT(*) FROM artifacts WHERE removed_commit_id IS NULL), (SELECT COUNT(*) FROM sources),
                    (SELECT COUNT(*) FROM commits), (SELECT COUNT(*) FROM packages),
                    (SELECT COUNT(*) FROM (SELECT DISTINCT project_root, package_id FROM installs)),
                    (SELECT COUNT(*) FROM artifact_findings f JOIN artifacts a ON a.id = f.artifact_id
                     WHERE a.removed_commit_id IS NULL)",
            [],
            |r| {
                Ok(ExportCounts {
                    artifacts: r.get::<_, i64>(0)? as u64,
                    sources: r.get::<_, i64>(1)? as u64,
                    commits: r.get::<_, i64>(2)? as u64,
                    packages: r.get::<_, i64>(3)? as u64,
                    installs: r.get::<_, i64>(4)? as u64,
                    findings: r.get::<_, i64>(5)? as u64,
                })
            },
        )
        .map_err(db_error)
    }

    /// Streams every record to `visit` from one read transaction (a consistent
    /// snapshot): artifacts by source, type and path, then sources, commits,
    /// packages and installs. `progress` advances per artifact.
    pub fn export_records(
        &self,
        progress: &dyn Progress,
        visit: &mut dyn FnMut(ExportRecord) -> Result<()>,
    ) -> Result<ExportCounts> {
        let tx = self.conn.unchecked_transaction().map_err(db_error)?;
        let mut counts = ExportCounts::default();
        let total: i64 = tx
            .query_row(
                "SELECT COUNT(*) FROM artifacts WHERE removed_commit_id IS NULL",
                [],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        progress.start("exporting artifacts", Some(total as u64));
        let mut stmt = tx
            .prepare(
                "SELECT a.id, s.name, s.url, COALESCE(s.resolved_ref, s.ref_name), hc.sha, a.path, a.kind, a.name,
                        a.description, a.platform, a.main_file, a.content_digest, lc.sha,
                        f.path, f.mode, f.size, f.blake3, f.git_blob
                 FROM artifacts a
                 JOIN sources s ON s.id = a.source_id
                 LEFT JOIN commits hc ON hc.id = s.head_commit_id
                 LEFT JOIN commits lc ON lc.id = a.last_changed_commit_id
                 LEFT JOIN artifact_files f ON f.artifact_id = a.id
                 WHERE a.removed_commit_id IS NULL
                 ORDER BY s.name, a.kind, a.path, f.path",
            )
            .map_err(db_error)?;
        let mut findings = tx
            .prepare(
                "SELECT path, rule, severity, line, excerpt FROM artifact_findings WHERE artifact_id = ?1
                 ORDER BY path, line, rule",
            )
            .map_err(db_error)?;
        let mut with_findings = |id: i64, mut artifact: ExportArtifact| -> Result<ExportArtifact> {
            let rows = findings
                .query_map([id], |r| {
                    Ok(ExportFinding {
                        path: r.get(0)?,
                        rule: r.get(1)?,
                        severity: r.get(2)?,
                        line: r.get(3)?,
                        excerpt: r.get(4)?,
                    })
                })
                .map_err(db_error)?;
            artifact.findings = rows.collect::<rusqlite::Result<_>>().map_err(db_error)?;
            Ok(artifact)
        };
        let mut rows = stmt.query([]).map_err(db_error)?;
        let mut current: Option<(i64, ExportArtifact)> = None;
        while let Some(row) = rows.next().map_err(db_error)? {
            let id: i64 = row.get(0).map_err(db_error)?;
            if current.as_ref().is_none_or(|(open, _)| *open != id) {
                if let Some((done_id, done)) = current.take() {
                    let done = with_findings(done_id, done)?;
                    counts.findings += done.findings.len() as u64;
                    visit(ExportRecord::Artifact(done))?;
                    counts.artifacts += 1;
                    progress.advance(1);
                }
                let artifact = ExportArtifact {
                    source: row.get(1).map_err(db_error)?,
                    source_url: row.get(2).map_err(db_error)?,
                    git_ref: row.get(3).map_err(db_error)?,
                    commit: row.get(4).map_err(db_error)?,
                    path: row.get(5).map_err(db_error)?,
                    kind: row.get(6).map_err(db_error)?,
                    name: row.get(7).map_err(db_error)?,
                    description: row.get(8).map_err(db_error)?,
                    platform: row.get(9).map_err(db_error)?,
                    main_file: row.get(10).map_err(db_error)?,
                    content_digest: row.get(11).map_err(db_error)?,
                    last_changed_commit: row.get(12).map_err(db_error)?,
                    files: Vec::new(),
                    findings: Vec::new(),
                };
                current = Some((id, artifact));
            }
            let file_path: Option<String> = row.get(13).map_err(db_error)?;
            if let (Some(path), Some((_, artifact))) = (file_path, current.as_mut()) {
                artifact.files.push(ExportFile {
                    path,
                    mode: row.get(14).map_err(db_error)?,
                    size: row.get(15).map_err(db_error)?,
                    blake3: row.get(16).map_err(db_error)?,
                    git_blob: row.get(17).map_err(db_error)?,
                });
            }
        }
        if let Some((done_id, done)) = current.take() {
            let done = with_findings(done_id, done)?;
            counts.findings += done.findings.len() as u64;
            visit(ExportRecord::Artifact(done))?;
            counts.artifacts += 1;
            progress.advance(1);
        }
        drop(rows);
        drop(stmt);
        drop(findings);
        progress.finish();

        let mut stmt = tx
            .prepare(
                "SELECT s.name, s.kind, s.url, s.ref_name, s.resolved_ref, s.scope_path, c.sha, s.added_at, s.fetched_at
                 FROM sources s LEFT JOIN commits c ON c.id = s.head_commit_id ORDER BY s.name",
            )
            .map_err(db_error)?;
        let sources = stmt
            .query_map([], |r| {
                Ok(ExportSource {
                    name: r.get(0)?,
                    kind: r.get(1)?,
                    url: r.get(2)?,
                    git_ref: r.get(3)?,
                    resolved_ref: r.get(4)?,
                    scope_path: r.get(5)?,
                    commit: r.get(6)?,
                    added_at: r.get(7)?,
                    fetched_at: r.get(8)?,
                })
            })
            .map_err(db_error)?;
        for source in sources {
            visit(ExportRecord::Source(source.map_err(db_error)?))?;
            counts.sources += 1;
        }

        let mut stmt = tx
            .prepare(
                "SELECT s.name, c.sha, c.tree_sha, c.committed_at, c.indexed_at
                 FROM commits c JOIN sources s ON s.id = c.source_id ORDER BY s.name, c.indexed_at, c.id",
            )
            .map_err(db_error)?;
        let commits = stmt
            .query_map([], |r| {
                Ok(ExportCommit {
                    source: r.get(0)?,
                    sha: r.get(1)?,
                    tree_sha: r.get(2)?,
                    committed_at: r.get(3)?,
                    indexed_at: r.get(4)?,
                })
            })
            .map_err(db_error)?;
        for commit in commits {
            visit(ExportRecord::Commit(commit.map_err(db_error)?))?;
            counts.commits += 1;
        }

        let mut stmt = tx
            .prepare(
                "SELECT name, version, origin, provenance_json, archive_blake3, created_at
                 FROM packages ORDER BY name, version",
            )
            .map_err(db_error)?;
        let packages = stmt
            .query_map([], |r| {
                let provenance: Option<String> = r.get(3)?;
                Ok(ExportPackage {
                    name: r.get(0)?,
                    version: r.get(1)?,
                    origin: r.get(2)?,
                    provenance: provenance.and_then(|p| serde_json::from_str(&p).ok()),
                    archive_blake3: r.get(4)?,
                    created_at: r.get(5)?,
                })
            })
            .map_err(db_error)?;
        for package in packages {
            visit(ExportRecord::Package(package.map_err(db_error)?))?;
            counts.packages += 1;
        }

        let mut files = tx
            .prepare("SELECT path, blake3 FROM install_files WHERE project_root = ?1 AND package = ?2 ORDER BY path")
            .map_err(db_error)?;
        let mut stmt = tx
            .prepare(
                "SELECT i.project_root, p.name, p.version, group_concat(i.platform, ','), MAX(i.source_commit),
                        MAX(i.installed_at)
                 FROM installs i JOIN packages p ON p.id = i.package_id
                 GROUP BY i.project_root, p.id
                 ORDER BY i.project_root, p.name",
            )
            .map_err(db_error)?;
        let installs = stmt
            .query_map([], |r| {
                Ok(ExportInstall {
                    project_root: r.get(0)?,
                    package: r.get(1)?,
                    version: r.get(2)?,
                    platforms: {
                        let joined: String = r.get(3)?;
                        let mut platforms: Vec<String> = joined.split(',').map(str::to_string).collect();
                        platforms.sort();
                        platforms
                    },
                    source_commit: r.get(4)?,
                    installed_at: r.get(5)?,
                    files: Vec::new(),
                })
            })
            .map_err(db_error)?;
        for install in installs {
            let mut install = install.map_err(db_error)?;
            install.files = files
                .query_map(params![install.project_root, install.package], |r| {
                    Ok(InstalledFile {
                        path: r.get(0)?,
                        blake3: r.get(1)?,
                    })
                })
                .map_err(db_error)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_error)?;
            visit(ExportRecord::Install(install))?;
            counts.installs += 1;
        }
        Ok(counts)
    }

    /// Numbers for `aam catalog stats`.
    pub fn stats(&self) -> Result<CatalogStats> {
        let tx = self.conn.unchecked_transaction().map_err(db_error)?;
        let mut stmt = tx
            .prepare(
                "SELECT s.name, s.cache_key, c.sha, s.fetched_at,
                        s.skill_count, s.agent_count, s.prompt_count, s.instruction_count
                 FROM sources s LEFT JOIN commits c ON c.id = s.head_commit_id ORDER BY s.name",
            )
            .map_err(db_error)?;
        let sources = stmt
            .query_map([], |r| {
                Ok(SourceStats {
                    name: r.get(0)?,
                    cache_key: r.get(1)?,
                    commit: r.get(2)?,
                    fetched_at: r.get(3)?,
                    counts: [r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?],
                })
            })
            .map_err(db_error)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_error)?;
        let generation = self.generation()?;
        tx.query_row(
            "SELECT (SELECT COALESCE(SUM(artifact_rows), 0) FROM sources), (SELECT COUNT(*) FROM commits),
                    (SELECT COUNT(*) FROM packages),
                    (SELECT COUNT(*) FROM (SELECT DISTINCT project_root, package_id FROM installs)),
                    (SELECT COUNT(*) FROM registry_packages), (SELECT MAX(indexed_at) FROM commits)",
            [],
            |r| {
                Ok(CatalogStats {
                    sources: Vec::new(),
                    artifacts_ever: r.get(0)?,
                    commits: r.get(1)?,
                    packages: r.get(2)?,
                    installs: r.get(3)?,
                    registry_packages: r.get(4)?,
                    generation,
                    last_indexed_at: r.get(5)?,
                })
            },
        )
        .map(|stats| CatalogStats { sources, ..stats })
        .map_err(db_error)
    }

    /// SQLite's own integrity check: the problems it reports (none when sound).
    /// `full`: `PRAGMA integrity_check`, everything SQLite checks. Otherwise the
    /// quick check of each table with its indexes (`PRAGMA quick_check(table)`),
    /// tables taken in turn by two read-only connections on two threads (a
    /// catalog of 100,000 artifacts: 0.45 s on one, 0.24 s on two), without
    /// evaluating CHECK constraints. It reads every page of every table and index
    /// (the b-trees, each record's format, NOT NULL columns). It does not compare
    /// an index with its table or evaluate a `kind IN (...)` (SQLite builds each
    /// constraint's list again for every row: a third of the quick check's time),
    /// nor account for the file's pages as a whole (the free list, a page no
    /// table uses, a page two tables claim): damage aam's own writes cannot
    /// leave, which `full` looks for.
    pub fn integrity_problems(&self, full: bool) -> Result<Vec<String>> {
        if full {
            return pragma_lines(&self.conn, "PRAGMA integrity_check");
        }
        let tables = self.tables_largest_first()?;
        let (Ok(first), Ok(second)) = (self.check_connection(), self.check_connection()) else {
            // The file cannot be opened again (moved aside while this handle stays
            // open): it is checked whole through this handle.
            self.conn
                .execute_batch("PRAGMA ignore_check_constraints = ON")
                .map_err(db_error)?;
            let lines = pragma_lines(&self.conn, "PRAGMA quick_check");
            // The connection is pooled: writes through it must check constraints again.
            self.conn
                .execute_batch("PRAGMA ignore_check_constraints = OFF")
                .map_err(db_error)?;
            return lines;
        };
        let next = AtomicUsize::new(0);
        let check_tables = |conn: rusqlite::Connection| -> Result<Vec<String>> {
            let mut problems = Vec::new();
            while let Some(table) = tables.get(next.fetch_add(1, Ordering::Relaxed)) {
                let quoted = table.replace('"', "\"\"");
                match pragma_lines(&conn, &format!("PRAGMA quick_check(\"{quoted}\")")) {
                    Ok(lines) => problems.extend(lines),
                    Err(e) => {
                        // The other connection stops at its next table.
                        next.store(tables.len(), Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            Ok(problems)
        };
        std::thread::scope(|scope| {
            let other = scope.spawn(|| check_tables(second));
            let mut problems = check_tables(first)?;
            problems.extend(other.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?);
            Ok(problems)
        })
    }

    /// A read-only connection to the catalog's file for the quick check, CHECK
    /// constraints left out.
    fn check_connection(&self) -> Result<rusqlite::Connection> {
        let path = self
            .conn
            .path()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| Error::internal("the catalog has no file to check"))?;
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(db_error)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(db_error)?;
        conn.execute_batch("PRAGMA ignore_check_constraints = ON")
            .map_err(db_error)?;
        Ok(conn)
    }

    /// The catalog's tables: `sqlite_schema`, then the ones that grow with the
    /// artifacts in the order of their size at 100,000 artifacts (so that two
    /// connections taking them in turn finish together), then the others.
    fn tables_largest_first(&self) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .map_err(db_error)?;
        let mut tables: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)?;
        let rank = |table: &String| {
            LARGEST_TABLES
                .iter()
                .position(|t| t == table)
                .unwrap_or(LARGEST_TABLES.len())
        };
        tables.sort_by_key(rank);
        // The schema's own b-tree, listed nowhere: checked first, its root page 1
        // has SQLite check the free list too.
        tables.insert(0, "sqlite_schema".to_string());
        Ok(tables)
    }

    /// Rows whose foreign key points at nothing, as `table (row N) -> parent`.
    pub fn foreign_key_violations(&self) -> Result<Vec<String>> {
        let mut stmt = self.conn.prepare("PRAGMA foreign_key_check").map_err(db_error)?;
        stmt.query_map([], |r| {
            let table: String = r.get(0)?;
            let row: Option<i64> = r.get(1)?;
            let parent: String = r.get(2)?;
            Ok(match row {
                Some(row) => format!("{table} (row {row}) -> {parent}"),
                None => format!("{table} -> {parent}"),
            })
        })
        .map_err(db_error)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_error)
    }

    /// The applied migration version and the newest this build knows.
    pub fn schema_versions(&self) -> Result<(i64, i64)> {
        let applied: i64 = self
            .conn
            .query_row(
                "SELECT COALESCE(MAX(version), 0) FROM refinery_schema_history",
                [],
                |r| r.get(0),
            )
            .map_err(db_error)?;
        Ok((applied, LATEST_MIGRATION))
    }

    /// The blake3 of every file any install wrote (their originals are kept in `objects/`).
    pub fn installed_digests(&self) -> Result<std::collections::BTreeSet<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT DISTINCT blake3 FROM install_files")
            .map_err(db_error)?;
        stmt.query_map([], |r| r.get(0))
            .map_err(db_error)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_error)
    }

    /// Live artifacts without file rows or without the text search is rebuilt from.
    pub fn orphan_rows(&self) -> Result<Vec<Orphan>> {
        let mut orphans = Vec::new();
        for (lacks, sql) in [
            (
                "file rows",
                "SELECT s.name || ':' || a.path FROM artifacts a JOIN sources s ON s.id = a.source_id
                 WHERE a.removed_commit_id IS NULL
                   AND NOT EXISTS (SELECT 1 FROM artifact_files f WHERE f.artifact_id = a.id)
                 ORDER BY 1",
            ),
            (
                "its text",
                "SELECT s.name || ':' || a.path FROM artifacts a JOIN sources s ON s.id = a.source_id
                 WHERE a.removed_commit_id IS NULL
                   AND NOT EXISTS (SELECT 1 FROM artifact_texts t WHERE t.artifact_id = a.id)
                 ORDER BY 1",
            ),
        ] {
            let mut stmt = self.conn.prepare(sql).map_err(db_error)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(db_error)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(db_error)?;
            orphans.extend(rows.into_iter().map(|row| Orphan {
                table: "artifacts",
                row,
                lacks,
            }));
        }
        Ok(orphans)
    }
}

#[cfg(test)]
mod tests {
    use super::super::Catalog;
    use super::LARGEST_TABLES;

    #[test]
    fn the_quick_check_takes_every_table_the_largest_first() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        let tables = catalog.tables_largest_first().unwrap();
        assert_eq!(tables[0], "sqlite_schema");
        assert_eq!(
            tables[1..=LARGEST_TABLES.len()],
            LARGEST_TABLES,
            "each is a table of the schema"
        );
        let count: i64 = catalog
            .conn
            .query_row("SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(tables.len() as i64, count + 1);
    }

    /// Writes `bytes` at `offset` of the catalog file at `path` (closed).
    fn damage(path: &std::path::Path, offset: u64, bytes: &[u8]) {
        use std::os::unix::fs::FileExt;
        let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        file.write_at(bytes, offset).unwrap();
    }

    #[test]
    fn the_quick_check_finds_a_damaged_index_and_a_damaged_free_list() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.db");
        let (index_page, page_size) = {
            let catalog = Catalog::open(&path).unwrap();
            catalog
                .conn
                .execute_batch(
                    "INSERT INTO sources (name, kind, url, cache_key, added_at) VALUES ('s', 'git', 'u', 'k', 'now');
                     CREATE TABLE scratch (x);",
                )
                .unwrap();
            for _ in 0..20 {
                catalog
                    .conn
                    .execute("INSERT INTO scratch VALUES (randomblob(3000))", [])
                    .unwrap();
            }
            catalog.conn.execute_batch("DROP TABLE scratch").unwrap();
            let free: i64 = catalog
                .conn
                .query_row("PRAGMA freelist_count", [], |r| r.get(0))
                .unwrap();
            assert!(free > 0, "the dropped table left free pages");
            assert!(catalog.integrity_problems(false).unwrap().is_empty());
            catalog
                .conn
                .query_row(
                    "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_schema
                     WHERE tbl_name = 'sources' AND type = 'index' ORDER BY rootpage LIMIT 1",
                    [],
                    |r| Ok((r.get::<_, u32>(0)?, r.get::<_, u32>(1)?)),
                )
                .unwrap()
        };
        let pristine = std::fs::read(&path).unwrap();
        // A page of an index overwritten in place: no table is damaged.
        damage(&path, u64::from(index_page - 1) * u64::from(page_size), &[0xA5; 64]);
        let problems = Catalog::open(&path).and_then(|c| c.integrity_problems(false));
        assert!(problems.as_ref().is_ok_and(|p| !p.is_empty()), "{problems:?}");
        // The free list's first trunk page (the file header at offset 32) past the file's end.
        std::fs::write(&path, &pristine).unwrap();
        damage(&path, 32, &0x7fff_0000_u32.to_be_bytes());
        let problems = Catalog::open(&path).and_then(|c| c.integrity_problems(false));
        assert!(problems.as_ref().is_ok_and(|p| !p.is_empty()), "{problems:?}");
    }

    #[test]
    fn the_quick_check_leaves_check_constraints_to_the_full_one() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.db")).unwrap();
        catalog
            .conn
            .execute_batch(
                "PRAGMA ignore_check_constraints = ON;
                 INSERT INTO sources (name, kind, url, cache_key, added_at) VALUES ('s', 'svn', 'u', 'k', 'now');
                 PRAGMA ignore_check_constraints = OFF;",
            )
            .unwrap();
        assert_eq!(catalog.integrity_problems(false).unwrap(), Vec::<String>::new());
        let full = catalog.integrity_problems(true).unwrap();
        assert!(
            full.iter().any(|p| p.contains("CHECK constraint failed in sources")),
            "{full:?}"
        );
    }
}
