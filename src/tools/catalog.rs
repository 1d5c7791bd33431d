//! Catalog maintenance tools: reindex, export, statistics, check and repair.

use std::io::Write;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool};
use crate::catalog::{ExportCounts, ExportRecord};
use crate::error::{Error, ErrorCode, Result};
use crate::health::{
    CACHES_CHECK, CheckStatus, HealthCheck, HealthReport, INDEX_CHECK, OBJECTS_CHECK, catalog_checks, originals,
};
use crate::packages::store::ObjectStore;
use crate::paths::resolve_links;
use crate::search::{INDEX_DIR, IndexState, SearchIndex};

/// Input of `aam_catalog_reindex`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReindexInput {}

/// Output of `aam_catalog_reindex`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReindexOutput {
    /// Documents in the rebuilt index (one per live artifact).
    pub documents: u64,
    /// Catalog generation the index now reflects.
    pub generation: u64,
    /// Wall time of the rebuild in milliseconds.
    pub elapsed_ms: u64,
}

/// Rebuilds the search index from the catalog.
pub struct Reindex;

impl Tool for Reindex {
    const NAME: &'static str = "aam_catalog_reindex";
    const TITLE: &'static str = "Rebuild the search index";
    const DESCRIPTION: &'static str = "Rebuild the full-text search index from the catalog (never from git), after bringing the catalog's query statistics up to date. Searches rebuild a missing or stale index by themselves; use this after suspected damage. Returns the document count, the catalog generation it reflects and the time taken.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::IndexError, ErrorCode::Conflict];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "rebuild the search index",
        input: r#"{}"#,
        expect: Expect::Output(r#"{"documents": 9}"#),
    }];
    type Input = ReindexInput;
    type Output = ReindexOutput;

    fn run(ctx: &Context, _input: ReindexInput) -> Result<ReindexOutput> {
        let started = std::time::Instant::now();
        let catalog = ctx.catalog()?;
        catalog.refresh_statistics();
        let index = ctx.search_index()?;
        let stats = index
            .writer()?
            .rebuild_unless_cancelled(&catalog, ctx.progress.as_ref(), &ctx.cancel)?;
        Ok(ReindexOutput {
            documents: stats.documents,
            generation: stats.generation,
            elapsed_ms: started.elapsed().as_millis() as u64,
        })
    }
}

// ---------------------------------------------------------------- export

/// Formats `aam_catalog_export` writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A SQLite database: the whole catalog, every table.
    #[default]
    Sqlite,
    /// JSON lines: one self-contained record per artifact, then sources, commits, packages and installs.
    Jsonl,
    /// A flat table of artifacts with a header row.
    Csv,
}

impl ExportFormat {
    /// The format's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
        }
    }

    /// The file extension of the format.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Sqlite => "db",
            Self::Jsonl => "jsonl",
            Self::Csv => "csv",
        }
    }
}

/// Input of `aam_catalog_export`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportInput {
    /// Format (default `sqlite`).
    #[serde(default)]
    pub format: ExportFormat,
    /// File to write (default `aam-catalog.<db|jsonl|csv>` in the current folder); replaced atomically.
    #[serde(default)]
    pub output: Option<String>,
}

/// Output of `aam_catalog_export`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExportOutput {
    /// Format written.
    pub format: ExportFormat,
    /// File written.
    pub path: String,
    /// Records of each kind in the export.
    pub records: ExportCounts,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Wall time in milliseconds.
    pub elapsed_ms: u64,
}

/// The columns of the CSV export, in order.
pub const CSV_COLUMNS: [&str; 17] = [
    "source",
    "source_url",
    "ref",
    "commit",
    "type",
    "name",
    "path",
    "description",
    "platform",
    "main_file",
    "content_digest",
    "file_count",
    "total_size",
    "files",
    "finding_count",
    "max_severity",
    "findings",
];

/// Exports the catalog for offline audits.
pub struct Export;

impl Tool for Export {
    const NAME: &'static str = "aam_catalog_export";
    const TITLE: &'static str = "Export the catalog";
    const DESCRIPTION: &'static str = "Write the catalog to one file for offline audits, as a consistent snapshot even while other aam processes write: `sqlite` (every table; open it with any SQLite tool), `jsonl` (one self-contained record per artifact with source URL, ref, commit, path, type, name, description and every file's size and blake3 and its content-audit findings, then sources, commits, packages and installs; each record names its kind in `record`) or `csv` (a flat artifacts table with finding count, highest severity and findings as JSON). Returns the path, record counts and size.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::IoError, ErrorCode::CatalogError, ErrorCode::Forbidden];
    const CONSTRAINTS: &'static [&'static str] = &[
        "`output` must lie inside the project or AAM_HOME when called over MCP or `aam tool call`",
        "inside AAM_HOME, `output` may only be under `exports/`: aam's own files are never replaced",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "export every artifact as JSON lines",
            input: r#"{"format": "jsonl", "output": "audit/catalog.jsonl"}"#,
            expect: Expect::Output(
                r#"{"format": "jsonl", "records": {"artifacts": 8, "sources": 1, "packages": 1, "installs": 1}}"#,
            ),
        },
        Example {
            title: "a SQLite snapshot for any SQLite tool",
            input: r#"{"format": "sqlite", "output": "audit/catalog.db"}"#,
            expect: Expect::Output(r#"{"format": "sqlite", "records": {"artifacts": 8}}"#),
        },
        Example {
            title: "a format that does not exist",
            input: r#"{"format": "xml"}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = ExportInput;
    type Output = ExportOutput;

    fn run(ctx: &Context, input: ExportInput) -> Result<ExportOutput> {
        let started = std::time::Instant::now();
        let given = input
            .output
            .unwrap_or_else(|| format!("aam-catalog.{}", input.format.extension()));
        let path = ctx.path(&given)?;
        refuse_home_files(ctx, &path)?;
        let catalog = ctx.catalog()?;
        let records = crate::atomic::write_with(&path, |temp| match input.format {
            ExportFormat::Sqlite => {
                ctx.progress.start("writing a snapshot of the catalog", None);
                let counts = catalog.snapshot_into(temp);
                ctx.progress.finish();
                counts
            }
            ExportFormat::Jsonl => {
                let mut out = std::io::BufWriter::new(create(temp)?);
                let counts = catalog.export_records(ctx.progress.as_ref(), &mut |record| {
                    ctx.cancel.check()?;
                    serde_json::to_writer(&mut out, &record).map_err(|e| write_error(temp, e.into()))?;
                    out.write_all(b"\n").map_err(|e| write_error(temp, e))
                })?;
                out.flush().map_err(|e| write_error(temp, e))?;
                Ok(counts)
            }
            ExportFormat::Csv => {
                let mut out = csv::Writer::from_writer(std::io::BufWriter::new(create(temp)?));
                out.write_record(CSV_COLUMNS).map_err(|e| write_error(temp, e.into()))?;
                let counts = catalog.export_records(ctx.progress.as_ref(), &mut |record| {
                    ctx.cancel.check()?;
                    let ExportRecord::Artifact(a) = record else {
                        return Ok(());
                    };
                    let files = serde_json::to_string(&a.files).unwrap_or_default();
                    let findings = serde_json::to_string(&a.findings).unwrap_or_default();
                    let max_severity = ["high", "warn", "info"]
                        .into_iter()
                        .find(|s| a.findings.iter().any(|f| f.severity == *s))
                        .unwrap_or_default();
                    let size: i64 = a.files.iter().map(|f| f.size).sum();
                    out.write_record([
                        a.source.as_str(),
                        &a.source_url,
                        a.git_ref.as_deref().unwrap_or_default(),
                        a.commit.as_deref().unwrap_or_default(),
                        &a.kind,
                        &a.name,
                        &a.path,
                        a.description.as_deref().unwrap_or_default(),
                        a.platform.as_deref().unwrap_or_default(),
                        &a.main_file,
                        &a.content_digest,
                        &a.files.len().to_string(),
                        &size.to_string(),
                        &files,
                        &a.findings.len().to_string(),
                        max_severity,
                        &findings,
                    ])
                    .map_err(|e| write_error(temp, e.into()))
                })?;
                out.flush().map_err(|e| write_error(temp, e))?;
                Ok(ExportCounts {
                    artifacts: counts.artifacts,
                    findings: counts.findings,
                    ..ExportCounts::default()
                })
            }
        })?;
        let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Ok(ExportOutput {
            format: input.format,
            path: path.display().to_string(),
            records,
            bytes,
            elapsed_ms: started.elapsed().as_millis() as u64,
        })
    }
}

/// An export never replaces aam's own files: inside `AAM_HOME` it may only
/// land under `exports/`.
fn refuse_home_files(ctx: &Context, path: &Path) -> Result<()> {
    let home = resolve_links(ctx.home.root()).unwrap_or_else(|| ctx.home.root().to_path_buf());
    let target = resolve_links(path).unwrap_or_else(|| path.to_path_buf());
    if target.starts_with(&home) && !target.starts_with(home.join("exports")) {
        return Err(Error::new(
            ErrorCode::Forbidden,
            format!("`{}` is inside AAM_HOME, where aam keeps its own files", path.display()),
        )
        .with_hint(format!(
            "export into the project or another folder, or under {}",
            home.join("exports").display()
        )));
    }
    Ok(())
}

fn create(path: &Path) -> Result<std::fs::File> {
    std::fs::File::create(path).map_err(|e| write_error(path, e))
}

fn write_error(path: &Path, e: std::io::Error) -> Error {
    Error::io("write", path, e)
}

// ---------------------------------------------------------------- stats

/// Input of `aam_catalog_stats`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsInput {}

/// Live artifacts by type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TypeCounts {
    /// Skills.
    pub skill: i64,
    /// Agents.
    pub agent: i64,
    /// Prompts.
    pub prompt: i64,
    /// Instructions.
    pub instruction: i64,
    /// All of them.
    pub total: i64,
}

impl TypeCounts {
    fn of(counts: [i64; 4]) -> Self {
        let [skill, agent, prompt, instruction] = counts;
        Self {
            skill,
            agent,
            prompt,
            instruction,
            total: counts.iter().sum(),
        }
    }
}

/// One source in the statistics.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceStat {
    /// Source name.
    pub name: String,
    /// Live artifacts by type.
    pub artifacts: TypeCounts,
    /// Indexed commit.
    pub commit: Option<String>,
    /// Last fetch (RFC 3339).
    pub fetched_at: Option<String>,
    /// Size of its git cache in bytes (shared caches count for each source).
    pub cache_bytes: u64,
}

/// Sizes on disk, in bytes.
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiskUsage {
    /// `catalog.db` with its write-ahead log.
    pub catalog: u64,
    /// The search index.
    pub index: u64,
    /// Every git cache.
    pub caches: u64,
    /// Installed originals kept for `aam diff`.
    pub objects: u64,
}

/// The search index's state.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexStat {
    /// `current`, `stale`, `missing` or `unreadable`.
    pub status: String,
    /// Catalog generation it reflects.
    pub generation: Option<u64>,
    /// Documents it holds.
    pub documents: Option<u64>,
}

/// Output of `aam_catalog_stats`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatsOutput {
    /// `AAM_HOME`.
    pub home: String,
    /// Applied catalog schema version.
    pub schema_version: i64,
    /// Catalog generation (bumped by every write).
    pub generation: u64,
    /// Live artifacts by type, over every source.
    pub artifacts: TypeCounts,
    /// Artifacts ever indexed, including removed ones.
    pub artifacts_ever: i64,
    /// Indexed commits.
    pub commits: i64,
    /// Packages recorded.
    pub packages: i64,
    /// Packages of configured registries.
    pub registry_packages: i64,
    /// Installed packages, over every project.
    pub installs: i64,
    /// Each source.
    pub sources: Vec<SourceStat>,
    /// The search index.
    pub index: IndexStat,
    /// Live skills Skills over MCP serves, and those left out with the reason.
    pub mcp_skills: crate::skills::Census,
    /// Sizes on disk.
    pub disk: DiskUsage,
    /// Last fetch of any source.
    pub last_fetched_at: Option<String>,
    /// Last index of any commit.
    pub last_indexed_at: Option<String>,
}

/// Reports what the catalog holds.
pub struct Stats;

impl Tool for Stats {
    const NAME: &'static str = "aam_catalog_stats";
    const TITLE: &'static str = "Catalog statistics";
    const DESCRIPTION: &'static str = "Numbers about the catalog: live artifacts per source and type, skills served over MCP and those left out (with the naming rule they break), artifacts ever seen, commits, packages and installs, sizes on disk (catalog, index, caches, installed originals), the search index's generation against the catalog's, and the last fetch and index times. Next: `aam_catalog_check` when something looks off.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::CatalogError];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "what the catalog holds",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"artifacts": {"total": 8}, "sources": [{"name": "sample", "artifacts": {"total": 8}}], "index": {"status": "current"}}"#,
        ),
    }];
    type Input = StatsInput;
    type Output = StatsOutput;

    fn run(ctx: &Context, _input: StatsInput) -> Result<StatsOutput> {
        let catalog = ctx.catalog()?;
        let stats = catalog.stats()?;
        let (schema_version, _) = catalog.schema_versions()?;
        let mut totals = [0i64; 4];
        let sources: Vec<SourceStat> = stats
            .sources
            .iter()
            .map(|s| {
                for (total, n) in totals.iter_mut().zip(s.counts) {
                    *total += n;
                }
                SourceStat {
                    name: s.name.clone(),
                    artifacts: TypeCounts::of(s.counts),
                    commit: s.commit.clone(),
                    fetched_at: s.fetched_at.clone(),
                    cache_bytes: dir_size(&ctx.home.git_cache_dir().join(&s.cache_key)),
                }
            })
            .collect();
        let catalog_path = ctx.home.catalog_path();
        let wal = catalog_path.with_extension("db-wal");
        let root = ctx.home.root();
        Ok(StatsOutput {
            home: root.display().to_string(),
            schema_version,
            generation: stats.generation,
            artifacts: TypeCounts::of(totals),
            artifacts_ever: stats.artifacts_ever,
            commits: stats.commits,
            packages: stats.packages,
            registry_packages: stats.registry_packages,
            installs: stats.installs,
            last_fetched_at: sources.iter().filter_map(|s| s.fetched_at.clone()).max(),
            last_indexed_at: stats.last_indexed_at,
            sources,
            index: index_stat(ctx, stats.generation),
            mcp_skills: crate::skills::census(&catalog)?,
            disk: DiskUsage {
                catalog: file_size(&catalog_path) + file_size(&wal),
                index: dir_size(&root.join(INDEX_DIR)),
                caches: dir_size(&ctx.home.git_cache_dir()),
                objects: dir_size(&root.join("objects")),
            },
        })
    }
}

fn index_stat(ctx: &Context, generation: u64) -> IndexStat {
    match SearchIndex::inspect(&ctx.home) {
        IndexState::Missing => IndexStat {
            status: "missing".into(),
            generation: None,
            documents: None,
        },
        IndexState::Unreadable(_) => IndexStat {
            status: "unreadable".into(),
            generation: None,
            documents: None,
        },
        IndexState::Readable {
            generation: indexed,
            documents,
        } => IndexStat {
            status: if indexed == Some(generation) {
                "current"
            } else {
                "stale"
            }
            .into(),
            generation: indexed,
            documents: Some(documents),
        },
    }
}

fn file_size(path: &Path) -> u64 {
    std::fs::symlink_metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Bytes of every file under `dir` (links not followed); 0 when missing.
fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => dir_size(&entry.path()),
            Ok(_) => entry.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

// ---------------------------------------------------------------- check and repair

/// Input of `aam_catalog_check`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckInput {
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check, and the passes over every row (foreign keys, artifact rows).
    #[serde(default)]
    pub full: bool,
}

/// Checks the catalog, the index and the caches.
pub struct Check;

impl Tool for Check {
    const NAME: &'static str = "aam_catalog_check";
    const TITLE: &'static str = "Check the catalog";
    const DESCRIPTION: &'static str = "Check the catalog without changing anything: SQLite integrity (a quick check; `full` for the complete one, with foreign keys and artifact rows without file rows or text), migrations current, the search index readable and at the catalog's generation, each source's indexed commit present in its git cache, stored originals of installed files (missing or unused), and caches no source uses. Each check passes, warns or fails with a suggestion. Next: `aam_catalog_repair` fixes the index and the caches.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const EXAMPLES: &'static [Example] = &[Example {
        title: "a healthy catalog",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"healthy": true, "checks": [{"name": "integrity", "status": "pass"}, {"name": "migrations", "status": "pass"}]}"#,
        ),
    }];
    type Input = CheckInput;
    type Output = HealthReport;

    fn run(ctx: &Context, input: CheckInput) -> Result<HealthReport> {
        Ok(HealthReport::of(catalog_checks(
            &ctx.home,
            ctx.catalog().as_deref(),
            input.full,
        )))
    }
}

/// Input of `aam_catalog_repair`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairInput {
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check, and the passes over every row (foreign keys, artifact rows).
    #[serde(default)]
    pub full: bool,
}

/// One thing a repair did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairAction {
    /// The check it answers.
    pub check: String,
    /// What was done.
    pub action: String,
    /// Whether it worked.
    pub ok: bool,
    /// Why not, when it did not.
    pub error: Option<String>,
}

/// Output of `aam_catalog_repair`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairOutput {
    /// What was done.
    pub actions: Vec<RepairAction>,
    /// Whether no check fails after the repair.
    pub healthy: bool,
    /// Every check, after the repair.
    pub checks: Vec<HealthCheck>,
    /// One line, after the repair.
    pub summary: String,
}

/// Repairs what can be repaired.
pub struct Repair;

impl Tool for Repair {
    const NAME: &'static str = "aam_catalog_repair";
    const TITLE: &'static str = "Repair the catalog";
    const DESCRIPTION: &'static str = "Run the catalog checks and fix what can be fixed without losing anything: rebuild a damaged or stale search index from the catalog, fetch each source's indexed commit again into a missing or damaged git cache, and delete stored originals no install uses (older than ten minutes). Says what it did and checks again. Damaged catalog rows are reported (with `full`), not repaired.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const OPEN_WORLD: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::IndexError, ErrorCode::Conflict];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "nothing to repair",
        input: r#"{}"#,
        expect: Expect::Output(r#"{"actions": [], "healthy": true}"#),
    }];
    type Input = RepairInput;
    type Output = RepairOutput;

    fn run(ctx: &Context, input: RepairInput) -> Result<RepairOutput> {
        let before = catalog_checks(&ctx.home, ctx.catalog().as_deref(), input.full);
        let failing = |name: &str| before.iter().any(|c| c.name == name && c.status != CheckStatus::Pass);
        let mut actions = Vec::new();
        if failing(CACHES_CHECK) {
            let catalog = ctx.catalog()?;
            let limits = ctx.fetch_limits()?;
            for source in catalog.list_sources()? {
                if crate::sources::cache::holds_head(&ctx.home.git_cache_dir(), &source) != Some(false) {
                    continue;
                }
                let outcome =
                    crate::sources::cache::restore(&ctx.home.git_cache_dir(), &source, limits, ctx.progress.as_ref());
                actions.push(RepairAction {
                    check: CACHES_CHECK.to_string(),
                    action: format!(
                        "fetched commit {} of `{}` again",
                        source.head_commit.as_deref().unwrap_or_default(),
                        source.name
                    ),
                    ok: outcome.is_ok(),
                    error: outcome.err().map(|e| e.message().to_string()),
                });
            }
        }
        if failing(OBJECTS_CHECK) {
            let catalog = ctx.catalog()?;
            let outcome = ObjectStore::new(ctx.home.root().join("objects")).retain(&catalog.installed_digests()?);
            actions.push(RepairAction {
                check: OBJECTS_CHECK.to_string(),
                action: match &outcome {
                    Ok((n, 0)) => format!("deleted {} no install uses", originals(*n)),
                    Ok((n, kept)) => format!(
                        "deleted {} no install uses; kept {} stored in the last ten minutes (an install may still be recording them): run again later to delete them",
                        originals(*n),
                        originals(*kept)
                    ),
                    Err(_) => "deleted originals no install uses".to_string(),
                },
                ok: outcome.is_ok(),
                error: outcome.err().map(|e| e.message().to_string()),
            });
        }
        if failing(INDEX_CHECK) {
            let outcome = rebuild_index(ctx);
            actions.push(RepairAction {
                check: INDEX_CHECK.to_string(),
                action: "rebuilt the search index from the catalog".to_string(),
                ok: outcome.is_ok(),
                error: outcome.err().map(|e| e.message().to_string()),
            });
        }
        let after = HealthReport::of(catalog_checks(&ctx.home, ctx.catalog().as_deref(), input.full));
        Ok(RepairOutput {
            actions,
            healthy: after.healthy,
            checks: after.checks,
            summary: after.summary,
        })
    }
}

/// Rebuilds the index, first discarding it when it cannot be read.
fn rebuild_index(ctx: &Context) -> Result<()> {
    if matches!(SearchIndex::inspect(&ctx.home), IndexState::Unreadable(_)) {
        SearchIndex::discard(&ctx.home)?;
    }
    let catalog = ctx.catalog()?;
    ctx.search_index()?.writer()?.rebuild(&catalog, ctx.progress.as_ref())?;
    Ok(())
}
