//! `aam_catalog_check`: the catalog's health checks (see `health`), changing nothing.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::Result;
use crate::health::{HealthReport, catalog_checks};
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_catalog_check`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckInput {
    /// Run the complete checks (seconds on a large catalog): SQLite's integrity check, which also compares every index with its table, instead of the quick check (which is skipped while the catalog is unchanged since a check that passed), and the passes over every row (foreign keys, artifact rows).
    #[serde(default)]
    pub full: bool,
}

/// Checks the catalog, the index and the caches.
pub struct Check;

impl Tool for Check {
    const NAME: &'static str = "aam_catalog_check";
    const TITLE: &'static str = "Check the catalog";
    const DESCRIPTION: &'static str = "Check the catalog without changing anything: SQLite integrity (a quick check, skipped while the catalog is unchanged since one passed; `full` for the complete one, with foreign keys and artifact rows without file rows or text), migrations current, the search index readable and at the catalog's generation, each source's indexed commit present in its git cache, stored originals of installed files (missing or unused), and caches no source uses or restored commits no lock file names any more. Each check passes, warns or fails with a suggestion. Next: `aam_catalog_repair` fixes the index and the caches.";
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
