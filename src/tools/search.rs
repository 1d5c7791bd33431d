//! `aam_search`: ranked full-text search over every indexed artifact.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, qualified_name, split_qualified};
use crate::catalog::ArtifactId;
use crate::error::{Error, ErrorCode, Result};
use crate::scan::{ArtifactKind, Platform};
use crate::search::{ResultKind, SearchRequest, SortOrder};

/// Result order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchSort {
    /// Exact name, name prefix, name contains, description, body; BM25 inside each; then name.
    #[default]
    Relevance,
    /// By name.
    Name,
    /// Most recently changed first.
    Recent,
}

/// Input of `aam_search`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchInput {
    /// Literal text (no query syntax); empty browses everything. `source/name` ranks that artifact first.
    #[serde(default)]
    pub query: String,
    /// Only these types (`skill`, `agent`, `prompt`, `instruction`, `package`); unknown ones are ignored with a warning, and `AAM_INVALID_ARGUMENT` when none is known.
    #[serde(default, rename = "type")]
    pub types: Vec<String>,
    /// Only these sources (a registry's name filters its packages); unknown ones are ignored with a warning, and `AAM_INVALID_ARGUMENT` when none is known.
    #[serde(default)]
    pub source: Vec<String>,
    /// Only artifacts for this platform (an agent id `aam agents` lists, such as `cursor`, `claude-code`, `codex`) and platform-neutral ones; an unknown one is `AAM_INVALID_ARGUMENT`.
    #[serde(default)]
    pub platform: Option<String>,
    /// Page size, 1 to 1000.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// Results to skip.
    #[serde(default)]
    pub offset: u32,
    /// Order of results.
    #[serde(default)]
    pub sort: SearchSort,
}

fn default_limit() -> u32 {
    20
}

/// One search result.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchResult {
    /// Display name.
    pub name: String,
    /// `source/name` for artifacts (accepted by `aam_info`); the package name for packages.
    pub qualified_name: String,
    /// Artifact type, or `package` for a package published to a registry.
    #[serde(rename = "type")]
    pub kind: ResultKind,
    /// Source name, or registry name for a package.
    pub source: String,
    /// Repository path, or `name@version` for a package.
    pub path: String,
    /// For a package: the artifact types it holds (empty for artifacts).
    pub artifact_types: Vec<ArtifactKind>,
    /// One-line description.
    pub description: Option<String>,
    /// Relevance (higher is better; tiers are 1000 apart); 0 for other orders.
    pub score: f32,
    /// Whether a package installed in the current project holds it.
    pub installed: bool,
    /// Content-audit findings in its files (`aam_audit` lists them); 0 for packages.
    pub findings: u64,
    /// The highest severity among them: `info`, `warn` or `high`.
    pub max_severity: Option<crate::audit::Severity>,
}

/// Output of `aam_search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchOutput {
    /// The query as given.
    pub query: String,
    /// This page of results.
    pub results: Vec<SearchResult>,
    /// Every match, not just this page.
    pub total: u64,
    /// Filters that were ignored, and why.
    pub warnings: Vec<String>,
    /// When nothing matched: up to three close names, or the query with unknown words corrected.
    pub suggestions: Vec<String>,
}

/// Ranked full-text search.
pub struct Search;

impl Tool for Search {
    const NAME: &'static str = "aam_search";
    const TITLE: &'static str = "Search artifacts";
    const DESCRIPTION: &'static str = "Search every indexed skill, agent, prompt and instruction by literal text, ranked exact name > name prefix > name contains > name words > description > body; words match in any form (`audit` finds `auditor`). Filter by type, source and platform; page with limit/offset. Returns results with qualified names, the total match count, warnings for ignored filters and 'did you mean' suggestions when nothing matched. Next: `aam_info` with a qualified_name for details.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::IndexError];
    const CONSTRAINTS: &'static [&'static str] = &["`limit` is 1 to 1000", "the query is literal text: no operators"];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a name prefix ranks above a name that only contains the word",
            input: r#"{"query": "review"}"#,
            expect: Expect::Output(
                r#"{"results": [{"qualified_name": "review-kit", "type": "package"}, {"qualified_name": "sample/code-review", "type": "skill"}], "total": 3}"#,
            ),
        },
        Example {
            title: "a typo gets suggestions",
            input: r#"{"query": "reveiw"}"#,
            expect: Expect::Output(r#"{"results": [], "total": 0, "suggestions": ["review-kit"]}"#),
        },
        Example {
            title: "a limit out of range",
            input: r#"{"query": "review", "limit": 0}"#,
            expect: Expect::Error(ErrorCode::InvalidArgument),
        },
    ];
    type Input = SearchInput;
    type Output = SearchOutput;

    fn run(ctx: &Context, input: SearchInput) -> Result<SearchOutput> {
        if !(1..=1000).contains(&input.limit) {
            return Err(Error::invalid_argument(format!(
                "`--limit` (`limit`) must be between 1 and 1000, not {}",
                input.limit
            ))
            .with_hint("pass a `limit` (`--limit`) from 1 to 1000; page with `offset` (`--offset`)"));
        }
        crate::search::check_query(&input.query)?;
        let catalog = ctx.catalog()?;
        let source_names = catalog.source_names()?;
        // A package's source is its registry: its name filters as a source's
        // does (settings are read only when a source is asked for).
        let registry_names: Vec<String> = match input.source.is_empty() {
            true => Vec::new(),
            false => ctx
                .home
                .load_settings()?
                .registries
                .into_iter()
                .map(|r| r.name)
                .collect(),
        };
        let mut warnings = Vec::new();
        let unfetched = catalog.unfetched_source_names()?;
        if !unfetched.is_empty() {
            warnings.push(format!(
                "{} not indexed yet, so none of {} artifacts is searched: `aam source update --all` fetches {}",
                match unfetched.len() {
                    1 => format!("source `{}` is registered but", unfetched[0]),
                    n => format!("{n} registered sources ({}) are", unfetched.join(", ")),
                },
                if unfetched.len() == 1 { "its" } else { "their" },
                if unfetched.len() == 1 { "it" } else { "them" },
            ));
        }
        let kinds = known(&input.types, ResultKind::parse, &mut warnings, "type", || {
            "skill, agent, prompt, instruction (rules), package".to_string()
        })?;
        let sources = known(
            &input.source,
            |s| source_names.iter().chain(&registry_names).find(|n| *n == s).cloned(),
            &mut warnings,
            "source",
            || {
                let names: Vec<&str> = source_names.iter().chain(&registry_names).map(String::as_str).collect();
                match names.is_empty() {
                    true => "none registered".to_string(),
                    false => names.join(", "),
                }
            },
        )?;
        let platform = match input.platform.as_deref() {
            None => None,
            Some(p) => Some(Platform::parse(p).ok_or_else(|| {
                Error::invalid_argument(format!("unknown platform `{}`", crate::error::quoted(p))).with_hint(
                    "pass an agent id `aam agents` lists (cursor, claude-code, github-copilot, codex, gemini-cli, ...)",
                )
            })?),
        };
        let index = ctx.search_index()?;
        index.ensure_current(&catalog, ctx.progress.as_ref())?;
        let query = input.query.trim();
        let request = SearchRequest {
            query,
            qualified: split_qualified(query, &source_names),
            kinds: &kinds,
            sources: &sources,
            platform,
            limit: input.limit as usize,
            offset: input.offset as usize,
            sort: match input.sort {
                SearchSort::Relevance => SortOrder::Relevance,
                SearchSort::Name => SortOrder::Name,
                SearchSort::Recent => SortOrder::Recent,
            },
        };
        let found = index.search(&request)?;
        let project = ctx.project_root().to_string_lossy().into_owned();
        let artifact_ids: Vec<ArtifactId> = found
            .hits
            .iter()
            .filter(|h| h.kind != ResultKind::Package)
            .map(|h| ArtifactId(h.id))
            .collect();
        let installed_artifacts = catalog.installed_among(&project, &artifact_ids)?;
        let installed_packages = catalog.installed_package_names(&project)?;
        let finding_counts = catalog.finding_counts(&artifact_ids)?;
        let ambiguous = catalog.sharing_a_name(&artifact_ids)?;
        Ok(SearchOutput {
            query: input.query,
            results: found
                .hits
                .into_iter()
                .map(|hit| SearchResult {
                    findings: match hit.kind {
                        ResultKind::Package => 0,
                        _ => finding_counts.get(&ArtifactId(hit.id)).map_or(0, |c| c.total()),
                    },
                    max_severity: match hit.kind {
                        ResultKind::Package => None,
                        _ => finding_counts.get(&ArtifactId(hit.id)).and_then(|c| c.highest()),
                    },
                    qualified_name: match hit.kind {
                        ResultKind::Package => hit.name.clone(),
                        _ if ambiguous.contains(&ArtifactId(hit.id)) && !hit.path.is_empty() => {
                            qualified_name(&hit.source, &hit.path)
                        }
                        _ => qualified_name(&hit.source, &hit.name),
                    },
                    installed: match hit.kind {
                        ResultKind::Package => installed_packages.contains(&hit.name),
                        _ => installed_artifacts.contains(&ArtifactId(hit.id)),
                    },
                    name: hit.name,
                    kind: hit.kind,
                    artifact_types: hit.artifact_types,
                    source: hit.source,
                    path: hit.path,
                    description: hit.description,
                    score: hit.score,
                })
                .collect(),
            total: found.total,
            warnings,
            suggestions: found.suggestions,
        })
    }
}

/// The values of a filter that are known, warning about the others.
fn known<T>(
    values: &[String],
    parse: impl Fn(&str) -> Option<T>,
    warnings: &mut Vec<String>,
    what: &str,
    valid: impl Fn() -> String,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for value in values {
        match parse(value) {
            Some(v) => out.push(v),
            None => warnings.push(format!(
                "unknown {what} `{}` ignored; valid {what}s: {}",
                crate::error::quoted(value),
                valid()
            )),
        }
    }
    // Ignoring every value would search everything: the opposite of the ask.
    if out.is_empty()
        && let Some(value) = values.first()
    {
        return Err(
            Error::invalid_argument(format!("unknown {what} `{}`", crate::error::quoted(value)))
                .with_hint(format!("valid {what}s: {}", valid())),
        );
    }
    Ok(out)
}
