//! `aam_catalog_stats`: numbers about the catalog, the index and the sizes on disk.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{dir_size, file_size};
use crate::error::{ErrorCode, Result};
use crate::search::{INDEX_DIR, IndexState, SearchIndex};
use crate::tools::{Context, Example, Expect, Risk, Tool};

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
            // Settings that do not read are doctor's to report: counted with the defaults.
            mcp_skills: crate::skills::census(&catalog, &ctx.serving_audit_policy().unwrap_or_default())?,
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
