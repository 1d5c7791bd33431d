//! `aam_list_available`: available artifacts by source, keyset-paged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Cursor, catalog_page, check_limit, default_page, invalid_cursor, source_ids};
use crate::catalog::ListFilter;
use crate::error::{ErrorCode, Result};
use crate::scan::ArtifactKind;
use crate::tools::{Context, Example, Expect, Risk, Tool, qualified_name};

// ---------------------------------------------------------------- list --available

/// Input of `aam_list`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListInput {
    /// Only these sources.
    #[serde(default)]
    pub source: Vec<String>,
    /// Only these types.
    #[serde(default, rename = "type")]
    pub types: Vec<ArtifactKind>,
    /// Page size, 1 to 1000.
    #[serde(default = "default_page")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// An available artifact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AvailableArtifact {
    /// What `aam_info` and `aam_install` take, as search gives it: `source/name`,
    /// or `source/path` where its source holds that name more than once.
    pub qualified_name: String,
    /// Display name.
    pub name: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// Content-audit findings in its files (`aam_audit` lists them).
    pub findings: u64,
    /// The highest severity among them: `info`, `warn` or `high`.
    pub max_severity: Option<crate::audit::Severity>,
}

/// Available artifacts of one source.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceGroup {
    /// Source name.
    pub source: String,
    /// Its artifacts on this page, by type then path.
    pub artifacts: Vec<AvailableArtifact>,
}

/// Output of `aam_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListOutput {
    /// This page, grouped by source.
    pub sources: Vec<SourceGroup>,
    /// Every available artifact matching the filters.
    pub total: u64,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
    /// Registered sources never fetched (`aam source update` indexes them): none of their artifacts is listed yet.
    pub unfetched_sources: Vec<String>,
}

/// Lists available artifacts by source, paged.
pub struct ListAvailable;

impl Tool for ListAvailable {
    const NAME: &'static str = "aam_list_available";
    const TITLE: &'static str = "List available artifacts";
    const DESCRIPTION: &'static str = "List the artifacts available from every source (or the given ones), grouped by source, in a stable order with keyset pagination: pass `next_cursor` back as `cursor` for the next page. Next: `aam_info` on one of them.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::SourceNotFound];
    const CONSTRAINTS: &'static [&'static str] = &["`limit` is 1 to 1000"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "one source's skills",
        input: r#"{"source": ["sample"], "type": ["skill"]}"#,
        expect: Expect::Output(
            r#"{"sources": [{"source": "sample", "artifacts": [{"name": "changelog-audit"}, {"name": "code-review"}, {"name": "release-notes"}]}], "total": 3}"#,
        ),
    }];
    type Input = ListInput;
    type Output = ListOutput;

    fn run(ctx: &Context, input: ListInput) -> Result<ListOutput> {
        let limit = check_limit(input.limit)?;
        let catalog = ctx.catalog()?;
        let filter = ListFilter {
            source_ids: source_ids(&catalog, &input.source)?,
            kinds: input.types,
            exclude_packaged: false,
        };
        let after = match input.cursor.as_deref().map(Cursor::decode).transpose()? {
            Some(Cursor::Catalog(keyset)) => Some(keyset),
            Some(Cursor::Project { .. }) => return Err(invalid_cursor(input.cursor.as_deref().unwrap_or_default())),
            None => None,
        };
        let (rows, next) = catalog_page(&catalog, &filter, after.as_ref(), limit)?;
        let ids: Vec<_> = rows.iter().map(|r| r.id).collect();
        let finding_counts = catalog.finding_counts(&ids)?;
        let ambiguous = catalog.sharing_a_name(&ids)?;
        let mut sources: Vec<SourceGroup> = Vec::new();
        for row in rows {
            let counts = finding_counts.get(&row.id);
            let artifact = AvailableArtifact {
                qualified_name: match ambiguous.contains(&row.id) {
                    true => qualified_name(&row.source, &row.path),
                    false => qualified_name(&row.source, &row.name),
                },
                name: row.name,
                kind: row.kind,
                path: row.path,
                description: row.description,
                findings: counts.map_or(0, |c| c.total()),
                max_severity: counts.and_then(|c| c.highest()),
            };
            match sources.last_mut() {
                Some(group) if group.source == row.source => group.artifacts.push(artifact),
                _ => sources.push(SourceGroup {
                    source: row.source,
                    artifacts: vec![artifact],
                }),
            }
        }
        Ok(ListOutput {
            sources,
            total: catalog.count_listed(&filter)?,
            next_cursor: next.map(|k| Cursor::Catalog(k).encode()),
            unfetched_sources: catalog.unfetched_source_names()?,
        })
    }
}
