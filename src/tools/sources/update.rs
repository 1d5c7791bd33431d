//! `aam_source_update`: fetch sources again and apply only what changed between the
//! indexed commit and the new one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{ArtifactId, Catalog, SourceRecord};
use crate::error::{Error, ErrorBody, ErrorCode, Result};
use crate::search::IndexChange;
use crate::sources::cache;
use crate::sources::update;
use crate::tools::{Context, Example, Expect, Risk, Tool, streamed_write};

/// Input of `aam_source_update`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdateInput {
    /// Source to update; omit it (or set the `all` flag) to update every source.
    #[serde(default)]
    pub name: Option<String>,
    /// Update every source, going on past failures.
    #[serde(default)]
    pub all: bool,
    /// Fetch and report what would change without changing the catalog.
    #[serde(default)]
    pub dry_run: bool,
    /// Track this branch, tag or commit from now on (one named source only):
    /// the source is fetched at it, and keeps its name and the installs made from it.
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
}

/// How one source's update went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpdateStatus {
    /// Moved to a new commit.
    Updated,
    /// Already at the newest commit.
    UpToDate,
    /// Dry run: would move to a new commit.
    WouldUpdate,
    /// Failed; see `error`.
    Failed,
}

/// One source's update report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdateReport {
    /// Source name.
    pub name: String,
    /// Commit before the update (`null` if never indexed).
    pub old_commit: Option<String>,
    /// Commit after the update (`null` when it failed).
    pub new_commit: Option<String>,
    /// Artifacts that appeared.
    pub new_count: u64,
    /// Artifacts whose files changed.
    pub modified_count: u64,
    /// Artifacts that disappeared.
    pub removed_count: u64,
    /// Outcome.
    pub status: UpdateStatus,
    /// A local source found up to date whose work tree has files not committed at
    /// its `HEAD` (only commits are indexed: commit them, then update again).
    pub uncommitted_changes: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// Output of `aam_source_update`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdateOutput {
    /// One report per source.
    pub sources: Vec<SourceUpdateReport>,
    /// New artifacts across sources.
    pub total_new: u64,
    /// Modified artifacts across sources.
    pub total_modified: u64,
    /// Removed artifacts across sources.
    pub total_removed: u64,
}

/// Fetches sources and records what changed.
pub struct SourceUpdate;

impl Tool for SourceUpdate {
    const NAME: &'static str = "aam_source_update";
    const TITLE: &'static str = "Update sources";
    const DESCRIPTION: &'static str = "Fetch one source (or all) and record the new commit: only the files that changed are re-read, and one change event is stored per new, modified or removed artifact. Returns per-source counts and status; with `all`, a failing source is reported and the others still update. Also repairs a missing or damaged cache. Use `dry_run` (or `aam_source_diff`) to preview.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const OPEN_WORLD: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::SourceNotFound,
        ErrorCode::GitFetchFailed,
        ErrorCode::GitAuthFailed,
        ErrorCode::GitRefNotFound,
        ErrorCode::NetworkError,
        ErrorCode::TlsCertificate,
        ErrorCode::Timeout,
        ErrorCode::Conflict,
        ErrorCode::SourceFileTooLarge,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a source already at its upstream commit",
            input: r#"{"name": "sample"}"#,
            expect: Expect::Output(r#"{"sources": [{"name": "sample", "status": "up_to_date", "new_count": 0}]}"#),
        },
        Example {
            title: "an unknown source",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::SourceNotFound),
        },
    ];
    type Input = SourceUpdateInput;
    type Output = SourceUpdateOutput;

    fn run(ctx: &Context, input: SourceUpdateInput) -> Result<SourceUpdateOutput> {
        let mut catalog = ctx.catalog()?;
        let targets = match (&input.name, input.all) {
            (Some(_), true) => {
                return Err(Error::invalid_argument("give a source `name` or `all`, not both"));
            }
            (Some(name), false) => vec![catalog.source_named(name)?],
            (None, _) if input.git_ref.is_some() => {
                return Err(Error::invalid_argument("`ref` changes what one source tracks: name it")
                    .with_hint("pass the source's name with the new ref: `aam source update NAME --ref BRANCH`"));
            }
            (None, _) => catalog.list_sources()?,
        };
        let single = input.name.is_some();
        let mut reports = Vec::with_capacity(targets.len());
        for source in targets {
            match update_one(ctx, &mut catalog, &source, input.dry_run, input.git_ref.as_deref()) {
                Ok(report) => reports.push(report),
                // A cancelled call stops here: the sources not yet updated stay as they were.
                Err(e) if single || e.code() == ErrorCode::Cancelled => return Err(e),
                Err(e) => {
                    // The report carries the error; the log keeps it for debugging.
                    tracing::debug!("updating `{}` failed: {e}", source.name);
                    reports.push(SourceUpdateReport {
                        name: source.name.clone(),
                        old_commit: source.head_commit.clone(),
                        new_commit: None,
                        new_count: 0,
                        modified_count: 0,
                        removed_count: 0,
                        status: UpdateStatus::Failed,
                        uncommitted_changes: false,
                        error: Some(e.to_body()),
                    });
                }
            }
        }
        // An index a killed write left behind is brought up to date here too,
        // as the check's suggestion promises, when nothing moved to do it.
        if !input.dry_run
            && let Err(e) = ctx
                .search_index()
                .and_then(|index| index.ensure_current(&catalog, ctx.progress.as_ref()))
        {
            tracing::warn!("could not bring the search index up to date: {}", e.message());
        }
        Ok(SourceUpdateOutput {
            total_new: reports.iter().map(|r| r.new_count).sum(),
            total_modified: reports.iter().map(|r| r.modified_count).sum(),
            total_removed: reports.iter().map(|r| r.removed_count).sum(),
            sources: reports,
        })
    }
}

/// Updates one source; with `new_ref`, fetched at that branch, tag or commit,
/// which it tracks from then on (recorded once the fetch found it, before the
/// new commit's rows: a write cut short is finished by the next update).
fn update_one(
    ctx: &Context,
    catalog: &mut Catalog,
    source: &SourceRecord,
    dry_run: bool,
    new_ref: Option<&str>,
) -> Result<SourceUpdateReport> {
    let retargeted;
    let source = match new_ref {
        Some(git_ref) => {
            crate::sources::spec::validate_ref(git_ref)?;
            retargeted = SourceRecord {
                ref_name: Some(git_ref.to_string()),
                ..source.clone()
            };
            &retargeted
        }
        None => source,
    };
    let bounds = ctx.local_fetch_bounds(source)?;
    let limits = ctx.fetch_limits()?;
    let _cache_lock = cache::lock(&ctx.home.locks_dir(), &ctx.home.git_cache_dir(), &source.cache_key)?;
    let (cache, fresh) = cache::open_repairing(&ctx.home.git_cache_dir(), source)?;
    cache::forget_unregistered(&cache, catalog, &source.cache_key);
    let cache = cache.reading_local_within(bounds);
    let target = if dry_run {
        cache::pending_ref(&source.name)
    } else {
        cache::head_ref(&source.name)
    };
    let mut cleanup = cache::Cleanup::new(
        ctx.home.root(),
        &cache,
        &cache::dir(&ctx.home.git_cache_dir(), source),
        fresh,
        Vec::new(),
    );
    let plan = update::plan(
        catalog,
        &cache,
        source,
        &target,
        limits,
        ctx.progress.as_ref(),
        &ctx.cancel,
    );
    if dry_run {
        cache.delete_ref(&target)?;
    }
    let plan = plan?;
    cleanup.disarm();
    if let (Some(git_ref), false) = (new_ref, dry_run) {
        catalog.set_tracked_ref(source.id, git_ref)?;
    }
    let status = match (&plan.changes, dry_run) {
        (None, false) => {
            catalog.touch_fetched(source.id, Some(&plan.fetched.resolved_ref))?;
            UpdateStatus::UpToDate
        }
        (None, true) => UpdateStatus::UpToDate,
        (Some(_), true) => UpdateStatus::WouldUpdate,
        (Some(changes), false) => {
            // The documents of what changes go; the new ones come as they are written.
            let replacing: Vec<ArtifactId> = changes
                .modified
                .iter()
                .map(|(id, _)| *id)
                .chain(changes.removed.iter().map(|a| a.id))
                .collect();
            streamed_write(ctx, catalog, &replacing, |catalog, on_row| {
                let outcome = catalog.record_update(
                    source.id,
                    source.head_commit.as_deref(),
                    Some(&plan.fetched.resolved_ref),
                    &plan.commit,
                    changes,
                    on_row,
                )?;
                let change = IndexChange::Artifacts {
                    written: outcome.written,
                    removed: outcome.removed,
                };
                Ok(((), change, outcome.generation))
            })?;
            UpdateStatus::Updated
        }
    };
    let changes = plan.changes.as_ref();
    Ok(SourceUpdateReport {
        name: source.name.clone(),
        old_commit: source.head_commit.clone(),
        new_commit: Some(plan.commit.sha.clone()),
        new_count: changes.map_or(0, |c| c.added.len() as u64),
        modified_count: changes.map_or(0, |c| c.modified.len() as u64),
        removed_count: changes.map_or(0, |c| c.removed.len() as u64),
        status,
        // The hint answers "why did my edit not show up?": only asked when
        // nothing moved, of a source following a branch (committing moves a
        // pinned tag or commit nowhere).
        uncommitted_changes: status == UpdateStatus::UpToDate && crate::sources::head::has_uncommitted_files(source),
        error: None,
    })
}
