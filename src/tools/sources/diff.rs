//! `aam_source_diff`: what an update of a source would add, change and remove, without
//! writing anything.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ArtifactRef;
use crate::error::{ErrorCode, Result};
use crate::scan::ArtifactKind;
use crate::sources::cache;
use crate::sources::git::GitCache;
use crate::sources::update;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_source_diff`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceDiffInput {
    /// Source name.
    pub name: String,
}

/// Output of `aam_source_diff`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceDiffOutput {
    /// Source name.
    pub source_name: String,
    /// Commit the catalog reflects (`null` if never indexed).
    pub old_commit: Option<String>,
    /// Newest commit upstream.
    pub new_commit: String,
    /// Artifacts that would appear.
    pub new_artifacts: Vec<ArtifactRef>,
    /// Artifacts whose files changed.
    pub modified_artifacts: Vec<ArtifactRef>,
    /// Artifacts that would disappear.
    pub removed_artifacts: Vec<ArtifactRef>,
    /// Live artifacts left as they are.
    pub unchanged_count: u64,
    /// Whether anything would change.
    pub has_changes: bool,
    /// Nothing would change, and the source is a local repository with files
    /// not committed yet: only commits are indexed.
    pub uncommitted_changes: bool,
}

/// Shows what changed upstream without changing the catalog.
pub struct SourceDiff;

impl Tool for SourceDiff {
    const NAME: &'static str = "aam_source_diff";
    const TITLE: &'static str = "Diff a source against upstream";
    const DESCRIPTION: &'static str = "Fetch a source's ref into a temporary ref and list the artifacts that are new, modified or removed compared with the indexed commit, without changing the catalog. Next: `aam_source_update` to apply the changes.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const OPEN_WORLD: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::SourceNotFound,
        ErrorCode::SourceNotIndexed,
        ErrorCode::GitFetchFailed,
        ErrorCode::GitAuthFailed,
        ErrorCode::GitRefNotFound,
        ErrorCode::NetworkError,
        ErrorCode::TlsCertificate,
        ErrorCode::Timeout,
        ErrorCode::CacheCorrupted,
        ErrorCode::SourceFileTooLarge,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "nothing changed upstream",
            input: r#"{"name": "sample"}"#,
            expect: Expect::Output(
                r#"{"source_name": "sample", "has_changes": false, "new_artifacts": [], "modified_artifacts": [], "removed_artifacts": []}"#,
            ),
        },
        Example {
            title: "an unknown source",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::SourceNotFound),
        },
    ];
    type Input = SourceDiffInput;
    type Output = SourceDiffOutput;

    fn run(ctx: &Context, input: SourceDiffInput) -> Result<SourceDiffOutput> {
        let catalog = ctx.catalog()?;
        let source = catalog.source_named(&input.name)?;
        let bounds = ctx.local_fetch_bounds(&source)?;
        let limits = ctx.fetch_limits()?;
        let cache_dir = cache::dir(&ctx.home.git_cache_dir(), &source);
        // It fetches into the cache like an update: they take turns.
        let _cache_lock = cache::lock(&ctx.home.locks_dir(), &ctx.home.git_cache_dir(), &source.cache_key)?;
        let (cache, created) = match source.head_commit {
            Some(_) => (
                GitCache::open(&cache_dir)
                    .map_err(|e| e.with_hint(format!("run `aam source update {}` to fetch it again", source.name)))?,
                false,
            ),
            None => GitCache::open_or_create(&cache_dir)?,
        };
        let cache = cache.reading_local_within(bounds);
        let mut cleanup = cache::Cleanup::new(ctx.home.root(), &cache, &cache_dir, created, Vec::new());
        let pending = cache::pending_ref(&source.name);
        let plan = update::plan(
            &catalog,
            &cache,
            &source,
            &pending,
            limits,
            ctx.progress.as_ref(),
            &ctx.cancel,
        );
        cache.delete_ref(&pending)?;
        let plan = plan?;
        cleanup.disarm();
        let changes = plan.changes.unwrap_or_default();
        let new_artifacts = artifact_refs(changes.added.iter().map(|a| (a.kind, &a.name, &a.path)));
        let modified_artifacts = artifact_refs(changes.modified.iter().map(|(_, a)| (a.kind, &a.name, &a.path)));
        let removed_artifacts = artifact_refs(changes.removed.iter().map(|a| (a.kind, &a.name, &a.path)));
        let touched = (modified_artifacts.len() + removed_artifacts.len()) as u64;
        let has_changes = !(new_artifacts.is_empty() && modified_artifacts.is_empty() && removed_artifacts.is_empty());
        Ok(SourceDiffOutput {
            uncommitted_changes: !has_changes && crate::sources::head::has_uncommitted_files(&source),
            source_name: source.name,
            old_commit: source.head_commit,
            new_commit: plan.commit.sha,
            has_changes,
            unchanged_count: (source.artifact_count as u64).saturating_sub(touched),
            new_artifacts,
            modified_artifacts,
            removed_artifacts,
        })
    }
}

/// Change-report entries sorted by kind, then path.
fn artifact_refs<'a>(artifacts: impl Iterator<Item = (ArtifactKind, &'a String, &'a String)>) -> Vec<ArtifactRef> {
    let mut list: Vec<ArtifactRef> = artifacts
        .map(|(kind, name, path)| ArtifactRef {
            name: name.clone(),
            kind,
            path: path.clone(),
        })
        .collect();
    list.sort_by(|a, b| (a.kind, &a.path).cmp(&(b.kind, &b.path)));
    list
}
