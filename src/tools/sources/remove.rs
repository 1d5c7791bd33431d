//! `aam_source_remove`: unregister a source, its artifacts and its cache.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, Result};
use crate::search::IndexChange;
use crate::sources::cache;
use crate::sources::git::GitCache;
use crate::tools::{Context, Example, Expect, Risk, Tool, indexed_write};

/// Input of `aam_source_remove`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRemoveInput {
    /// Source name.
    pub name: String,
    /// Also delete the cached repository, when no other source uses it.
    #[serde(default)]
    pub purge_cache: bool,
}

/// Output of `aam_source_remove`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceRemoveOutput {
    /// Name of the removed source.
    pub removed: String,
    /// Whether its cached repository was deleted.
    pub cache_purged: bool,
    /// Whether it was a built-in default (it will not be re-added by `enable-defaults`).
    pub was_default: bool,
    /// Installs on this machine made from its artifacts (`package` in `project`): they stay as they are, and `aam_outdated` shows them as unknown until the source is added again.
    pub installed_from: Vec<String>,
}

/// Removes a source and its catalog records.
pub struct SourceRemove;

impl Tool for SourceRemove {
    const NAME: &'static str = "aam_source_remove";
    const TITLE: &'static str = "Remove a source";
    const DESCRIPTION: &'static str = "Remove a source and every artifact, commit and change event recorded for it. With `purge_cache`, also delete its cached git repository unless another source shares it. A removed default source is remembered and not re-added by `aam_source_enable_defaults`.";
    const RISK: Risk = Risk::Destructive;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::SourceNotFound];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "remove a source",
        input: r#"{"name": "sample"}"#,
        expect: Expect::Output(r#"{"removed": "sample"}"#),
    }];
    type Input = SourceRemoveInput;
    type Output = SourceRemoveOutput;

    fn run(ctx: &Context, input: SourceRemoveInput) -> Result<SourceRemoveOutput> {
        let mut catalog = ctx.catalog()?;
        let source = catalog.source_named(&input.name)?;
        let shared = catalog.cache_shared(&source.cache_key, source.id)?;
        let installed_from = catalog
            .installs_from_source(source.id)?
            .into_iter()
            .map(|(root, package)| format!("`{package}` in `{root}`"))
            .collect();
        indexed_write(ctx, &mut catalog, |catalog| {
            let generation = catalog.remove_source(source.id)?;
            Ok(((), IndexChange::SourceRemoved(source.id), generation))
        })?;
        let dir = cache::dir(&ctx.home.git_cache_dir(), &source);
        let _cache_lock = cache::lock(&ctx.home.locks_dir(), &ctx.home.git_cache_dir(), &source.cache_key)?;
        let mut cache_purged = false;
        if input.purge_cache && !shared {
            cache::remove_dir(&dir, ctx.home.root())?;
            cache_purged = true;
        } else {
            if input.purge_cache {
                tracing::warn!("kept the cache `{}`: other sources use it", dir.display());
            }
            if let Ok(cache) = GitCache::open(&dir) {
                cache.delete_ref(&cache::head_ref(&source.name))?;
            }
        }
        Ok(SourceRemoveOutput {
            removed: source.name,
            cache_purged,
            was_default: source.is_default,
            installed_from,
        })
    }
}
