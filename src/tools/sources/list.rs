//! `aam_source_list`: the registered sources with their commits and artifact counts,
//! from the catalog.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_source_list`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceListInput {}

/// One registered source.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceListEntry {
    /// Unique name.
    pub name: String,
    /// `git` for remotes, `local` for repositories on this machine.
    #[serde(rename = "type")]
    pub kind: crate::sources::spec::SourceKind,
    /// Credential-free URL.
    pub url: String,
    /// The branch, tag or commit it follows (`null` until first fetched when following the default branch).
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Scope folder (`""` = whole repository).
    pub path: String,
    /// Live artifacts indexed from it.
    pub artifact_count: u64,
    /// Last fetch time (RFC 3339), `null` when never fetched.
    pub last_fetched: Option<String>,
    /// Commit the catalog reflects, `null` when never fetched.
    pub last_commit: Option<String>,
    /// One of the built-in default sources.
    pub default: bool,
}

/// Output of `aam_source_list`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceListOutput {
    /// Every registered source, by name.
    pub sources: Vec<SourceListEntry>,
}

/// Lists every registered source.
pub struct SourceList;

impl Tool for SourceList {
    const NAME: &'static str = "aam_source_list";
    const TITLE: &'static str = "List sources";
    const DESCRIPTION: &'static str = "List every registered source with its URL, ref, scope path, artifact count, last fetch time and indexed commit, from the catalog (no network). Next: `aam_source_scan` for one source's artifacts, `aam_source_diff` to see what changed upstream.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const EXAMPLES: &'static [Example] = &[Example {
        title: "every registered source",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"sources": [{"name": "sample", "type": "local", "ref": "main", "artifact_count": 8}]}"#,
        ),
    }];
    type Input = SourceListInput;
    type Output = SourceListOutput;

    fn run(ctx: &Context, _input: SourceListInput) -> Result<SourceListOutput> {
        let sources = ctx.catalog()?.list_sources()?;
        Ok(SourceListOutput {
            sources: sources
                .into_iter()
                .map(|s| SourceListEntry {
                    git_ref: s.ref_name.clone().or(s.resolved_ref.clone()),
                    name: s.name,
                    kind: s.kind,
                    url: s.url,
                    path: s.scope_path,
                    artifact_count: s.artifact_count as u64,
                    last_fetched: s.fetched_at,
                    last_commit: s.head_commit,
                    default: s.is_default,
                })
                .collect(),
        })
    }
}
