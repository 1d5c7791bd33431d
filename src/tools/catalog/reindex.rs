//! `aam_catalog_reindex`: rebuild the search index from the catalog.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{ErrorCode, Result};
use crate::tools::{Context, Example, Expect, Risk, Tool};

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
