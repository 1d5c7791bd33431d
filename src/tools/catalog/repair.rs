//! `aam_catalog_repair`: fix what the checks find and can be fixed without losing
//! anything (index, git caches, restored commits no lock file names, caches no source uses, unused originals, the
//! digest lookup of versions).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, Result};
use crate::health::{
    CACHES_CHECK, CheckStatus, FILES_CHECK, HealthCheck, HealthReport, INDEX_CHECK, OBJECTS_CHECK, VERSIONS_CHECK,
    catalog_checks, originals, review_restores, unused_caches,
};
use crate::packages::store::ObjectStore;
use crate::search::{IndexState, SearchIndex};
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_catalog_repair`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairInput {
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check (which is skipped while the catalog is unchanged since a check that passed), and the passes over every row (foreign keys, artifact rows).
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
    /// Whether it worked (false, without an `error`, for what can only be done later).
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
    const DESCRIPTION: &'static str = "Run the catalog checks and fix what can be fixed without losing anything: rebuild a damaged or stale search index from the catalog, fetch each source's indexed commit again into a missing or damaged git cache, delete the commits restores kept in the git cache that no lock file names any more, then git caches no source uses (a killed add or purge leaves one; a command still using one is waited for), delete stored originals no install uses (older than ten minutes), and (with `full`) bring the lookup of file digests to versions back in step with the digests each version keeps (a version whose own digests are damaged keeps its lookup rows). Says what it did and checks again. Other damaged catalog rows are reported (with `full`), not repaired.";
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
                let outcome = ctx.local_fetch_bounds(&source).and_then(|bounds| {
                    crate::sources::cache::restore(
                        &ctx.home.git_cache_dir(),
                        &ctx.home.locks_dir(),
                        &source,
                        bounds,
                        limits,
                        ctx.progress.as_ref(),
                        &ctx.cancel,
                    )
                });
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
                    // Nothing deleted is no repair: say when one will be.
                    Ok((0, kept)) => format!(
                        "deleted nothing yet: the {} no install uses were stored in the last ten minutes (an install may still be recording them); run it again after that",
                        originals(*kept)
                    ),
                    Ok((n, kept)) => format!(
                        "deleted {} no install uses; kept {} stored in the last ten minutes (an install may still be recording them): run again later to delete them",
                        originals(*n),
                        originals(*kept)
                    ),
                    Err(_) => "deleted originals no install uses".to_string(),
                },
                // Nothing deleted yet is no repair (found by a user helper).
                ok: matches!(outcome, Ok((n, kept)) if n > 0 || kept == 0),
                error: outcome.err().map(|e| e.message().to_string()),
            });
        }
        // Records of restores no lock file wants any more (of commits kept for
        // other projects, or gone from the cache) are bookkeeping no check
        // reports: forgotten at every repair.
        let review = review_restores(&ctx.home, &*ctx.catalog()?)?;
        for row in &review.stale {
            ctx.catalog()?.forget_restored_row(row)?;
        }
        if failing(FILES_CHECK) {
            let catalog = ctx.catalog()?;
            let caches = ctx.home.git_cache_dir();
            for restore in review.unused {
                // Asked again under the cache's lock: a restore may have taken it meanwhile.
                let outcome = crate::sources::cache::remove_locked_commit(
                    &caches,
                    &ctx.home.locks_dir(),
                    &restore.cache_key,
                    &restore.commit,
                    || Ok(!review_restores(&ctx.home, &catalog)?.unused.contains(&restore)),
                )
                .and_then(|removed| {
                    if removed {
                        catalog.forget_restored_commit(&restore.cache_key, &restore.commit)?;
                    }
                    Ok(removed)
                });
                if matches!(outcome, Ok(false)) {
                    continue;
                }
                actions.push(RepairAction {
                    check: FILES_CHECK.to_string(),
                    action: format!(
                        "deleted commit {} of `{}` from the git cache: no lock file names it any more",
                        restore.commit, restore.cache_key
                    ),
                    ok: outcome.is_ok(),
                    error: outcome.err().map(|e| e.message().to_string()),
                });
            }
            let used =
                || -> Result<Vec<String>> { Ok(catalog.list_sources()?.into_iter().map(|s| s.cache_key).collect()) };
            for key in unused_caches(&ctx.home, &used()?) {
                // A cache nested in this one's folder (a local repository inside
                // another) goes with it: kept while a source uses either.
                let nested = format!("{key}/");
                // Checked again under the cache's lock: a restore may have fetched meanwhile.
                let outcome = crate::sources::cache::remove_unused(&caches, &ctx.home.locks_dir(), &key, || {
                    Ok(used()?.iter().any(|u| *u == key || u.starts_with(&nested))
                        || crate::sources::cache::keeps_locked_commits(&caches.join(&key)))
                });
                if matches!(outcome, Ok(false)) {
                    continue;
                }
                actions.push(RepairAction {
                    check: FILES_CHECK.to_string(),
                    action: format!("deleted the cache of `{key}`, which no source uses"),
                    ok: outcome.is_ok(),
                    error: outcome.err().map(|e| e.message().to_string()),
                });
            }
        }
        if failing(VERSIONS_CHECK) {
            let outcome = ctx.catalog()?.rebuild_digest_rows();
            actions.push(RepairAction {
                check: VERSIONS_CHECK.to_string(),
                action: match &outcome {
                    // What is left is versions whose digests are damaged, which no repair mends.
                    Ok((0, 0)) => "changed nothing: the damaged versions named need their sources added again".to_string(),
                    Ok((deleted, added)) => format!(
                        "brought the digest lookup back in step with the versions' digests: deleted {deleted} rows, added {added}"
                    ),
                    Err(_) => "brought the digest lookup back in step with the versions' digests".to_string(),
                },
                ok: matches!(outcome, Ok((deleted, added)) if deleted + added > 0),
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
