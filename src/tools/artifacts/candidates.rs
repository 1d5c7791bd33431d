//! `aam_source_candidates`: artifacts no package holds yet, the project's own first.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Cursor, check_limit, default_page, source_ids};
use crate::catalog::{Keyset, ListFilter, ProjectArtifactRow, ProjectFilter};
use crate::error::{ErrorCode, Result};
use crate::project;
use crate::scan::ArtifactKind;
use crate::tools::{Context, Example, Expect, Risk, Tool};

// ---------------------------------------------------------------- candidates

/// The pseudo-source name of the current project's own artifacts.
pub const PROJECT_SOURCE: &str = "local";

/// Input of `aam_source_candidates`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidatesInput {
    /// Only this source (`local` for the current project's own artifacts).
    #[serde(default)]
    pub source: Option<String>,
    /// Only this type.
    #[serde(default, rename = "type")]
    pub kind: Option<ArtifactKind>,
    /// Page size, 1 to 1000.
    #[serde(default = "default_page")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: u32,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Index the project folder even when it is a disk root, the home folder or
    /// holds more than a million files and folders.
    #[serde(default)]
    pub large_project: bool,
}

/// Where a candidate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    /// A registered git source.
    RemoteGit,
    /// The current project's working tree.
    LocalProject,
}

/// An artifact no package holds yet.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// Source name (`local` for the project).
    pub source: String,
    /// Where it comes from.
    pub source_type: SourceType,
    /// Display name.
    pub name: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Path in the repository or project.
    pub path: String,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
}

/// Output of `aam_source_candidates`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CandidatesOutput {
    /// This page: the project's own artifacts first, then each source's.
    pub candidates: Vec<Candidate>,
    /// Every candidate matching the filters.
    pub total: u64,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// Lists artifacts that no package holds yet.
pub struct SourceCandidates;

impl Tool for SourceCandidates {
    const NAME: &'static str = "aam_source_candidates";
    const TITLE: &'static str = "List packaging candidates";
    const DESCRIPTION: &'static str = "List artifacts that no package holds yet: the current project's own (source `local`, source_type `local_project`; kept in the catalog and refreshed from file stat data, so only changed files are read) and every registered source's (source_type `remote_git`), in a stable order with keyset pagination (`next_cursor`). Next: create a package from some of them.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::SourceNotFound,
        ErrorCode::ProjectTooLarge,
        ErrorCode::IoError,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "`limit` is 1 to 1000",
        "a project folder that is a disk root, the home folder or holds over a million entries needs `large_project`",
    ];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "agents no package holds yet",
        input: r#"{"source": "sample", "type": "agent"}"#,
        expect: Expect::Output(
            r#"{"candidates": [{"source": "sample", "name": "test-planner", "type": "agent", "path": "agents/test-planner.md"}], "total": 1}"#,
        ),
    }];
    type Input = CandidatesInput;
    type Output = CandidatesOutput;

    fn run(ctx: &Context, input: CandidatesInput) -> Result<CandidatesOutput> {
        let limit = check_limit(input.limit)?;
        let mut catalog = ctx.catalog()?;
        let only_project = input.source.as_deref() == Some(PROJECT_SOURCE);
        let filter = ListFilter {
            source_ids: match &input.source {
                Some(name) if !only_project => source_ids(&catalog, std::slice::from_ref(name))?,
                _ => Vec::new(),
            },
            kinds: input.kind.into_iter().collect(),
            exclude_packaged: true,
        };
        let with_project = input.source.is_none() || only_project;
        let cursor = input.cursor.as_deref().map(Cursor::decode).transpose()?;
        let project_root = ctx.project_root();
        let packaged_root = project_root.to_string_lossy().into_owned();
        let (project_id, shadow_sources) = if with_project {
            ctx.cancel.check()?;
            let id = ctx.current_project(&mut catalog, &project_root, input.large_project)?;
            let url = format!("file://{}", project::key(&project_root));
            (Some(id), catalog.local_sources_at(&url)?)
        } else {
            (None, Vec::new())
        };
        let project_filter = ProjectFilter {
            kind: input.kind,
            packaged_root: Some(&packaged_root),
            shadow_sources: &shadow_sources,
            installed_root: Some(&packaged_root),
        };

        // One more item than asked for tells whether another page follows.
        let mut items: Vec<(Cursor, Candidate)> = Vec::new();
        let after_catalog = match &cursor {
            Some(Cursor::Catalog(keyset)) => Some(keyset),
            _ => {
                let after = match &cursor {
                    Some(Cursor::Project { kind, path }) => Some((*kind, path.as_str())),
                    _ => None,
                };
                if let Some(id) = project_id {
                    let rows = catalog.project_page(id, &project_filter, after, limit + 1)?;
                    items.extend(rows.into_iter().map(|a| {
                        let at = Cursor::Project {
                            kind: a.kind,
                            path: a.path.clone(),
                        };
                        (at, project_candidate(a))
                    }));
                }
                None
            }
        };
        if items.len() <= limit && !only_project {
            let rows = catalog.list_page(&filter, after_catalog, limit + 1 - items.len())?;
            items.extend(rows.into_iter().map(|r| {
                let at = Cursor::Catalog(Keyset {
                    source_id: r.source_id,
                    kind: r.kind,
                    path: r.path.clone(),
                });
                let candidate = Candidate {
                    source: r.source,
                    source_type: SourceType::RemoteGit,
                    name: r.name,
                    kind: r.kind,
                    path: r.path,
                    has_vendor_agent: r.has_vendor_agent,
                };
                (at, candidate)
            }));
        }
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|(at, _)| at.encode())
        } else {
            None
        };
        let catalog_total = if only_project {
            0
        } else {
            catalog.count_listed(&filter)?
        };
        let project_total = match project_id {
            Some(id) => catalog.project_count(id, &project_filter)?,
            None => 0,
        };
        Ok(CandidatesOutput {
            candidates: items.into_iter().map(|(_, c)| c).collect(),
            total: project_total + catalog_total,
            next_cursor: next,
        })
    }
}

fn project_candidate(a: ProjectArtifactRow) -> Candidate {
    Candidate {
        source: PROJECT_SOURCE.to_string(),
        source_type: SourceType::LocalProject,
        name: a.name,
        kind: a.kind,
        path: a.path,
        has_vendor_agent: a.has_vendor_agent,
    }
}
