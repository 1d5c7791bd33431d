//! Artifact tools: `aam_info` (one artifact in full), `aam_list` (available
//! artifacts by source, paged) and `aam_source_candidates` (artifacts no package
//! holds yet, paged), all answered from the catalog.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, qualified_name};
use crate::audit::report::{AuditFinding, SeverityCounts, finding};
use crate::catalog::{Catalog, FindingFilter, Keyset, ListFilter, ListedArtifact, ProjectArtifactRow, ProjectFilter};
use crate::error::{Error, ErrorCode, Result};
use crate::project;
use crate::scan::ArtifactKind;
use crate::search::{artifact_not_found, resolve_artifact};

/// Characters of the main file shown as a preview.
const PREVIEW_CHARS: usize = 2000;

// ---------------------------------------------------------------- info

/// Input of `aam_info`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfoInput {
    /// `source/name`, `source/path`, or a name that only one source has.
    pub name: String,
    /// Return the whole main file as `preview`, not just its beginning.
    #[serde(default)]
    pub full: bool,
}

/// One file of an artifact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfoFile {
    /// Repository path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// blake3 of the bytes (hex).
    pub blake3: String,
}

/// Output of `aam_info`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InfoOutput {
    /// Display name.
    pub name: String,
    /// `source/name`.
    pub qualified_name: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Source name.
    pub source: String,
    /// Source URL.
    pub source_url: String,
    /// Commit the artifact was last changed at in the catalog.
    pub commit: Option<String>,
    /// Repository path.
    pub path: String,
    /// The file its name and text come from.
    pub main_file: String,
    /// One-line description.
    pub description: Option<String>,
    /// Platform its location implies.
    pub platform: Option<String>,
    /// A skill with vendor agent metadata.
    pub has_vendor_agent: bool,
    /// YAML frontmatter as JSON.
    pub frontmatter: Option<serde_json::Value>,
    /// Every file, with size and blake3.
    pub files: Vec<InfoFile>,
    /// The start of the main file.
    pub preview: String,
    /// Whether the preview is shorter than the file.
    pub preview_truncated: bool,
    /// Problems recorded when it was indexed.
    pub warnings: Vec<String>,
    /// Content-audit findings, counted by severity.
    pub finding_counts: SeverityCounts,
    /// The content-audit findings themselves (first 50; `aam_audit` lists all).
    pub findings: Vec<AuditFinding>,
    /// The command that installs it.
    pub install_command: String,
}

/// Shows one artifact in full.
pub struct Info;

impl Tool for Info {
    const NAME: &'static str = "aam_info";
    const TITLE: &'static str = "Show an artifact";
    const DESCRIPTION: &'static str = "Show one artifact: type, source and commit, frontmatter, every file with size and blake3, a preview of its main file, warnings recorded when it was indexed, and the command that installs it. Accepts `source/name`, `source/path`, or a name only one source has. Next: install it, or `aam_search` for similar ones.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::ArtifactNotFound,
        ErrorCode::ArtifactAmbiguous,
        ErrorCode::SourceNotFound,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a skill by qualified name",
            input: r#"{"name": "sample/code-review"}"#,
            expect: Expect::Output(
                r#"{"name": "code-review", "type": "skill", "source": "sample", "path": "skills/code-review"}"#,
            ),
        },
        Example {
            title: "a name no source has",
            input: r#"{"name": "sample/ghost"}"#,
            expect: Expect::Error(ErrorCode::ArtifactNotFound),
        },
    ];
    type Input = InfoInput;
    type Output = InfoOutput;

    fn run(ctx: &Context, input: InfoInput) -> Result<InfoOutput> {
        let catalog = ctx.catalog()?;
        let found = resolve_artifact(&catalog, &input.name, || ctx.search_index(), ctx.progress.as_ref())?;
        let detail = catalog
            .artifact_detail(found.id)?
            .ok_or_else(|| artifact_not_found(&input.name, Vec::new()))?;
        let rows = catalog.findings(&FindingFilter {
            artifact_ids: Some(vec![found.id]),
            ..Default::default()
        })?;
        let mut finding_counts = SeverityCounts::default();
        for row in &rows {
            finding_counts.add(row.severity);
        }
        let findings = rows.into_iter().take(50).map(finding).collect();
        let preview_end = match input.full {
            true => None,
            false => detail.body.char_indices().nth(PREVIEW_CHARS).map(|(i, _)| i),
        };
        let qualified = qualified_name(&detail.source, &detail.name);
        Ok(InfoOutput {
            finding_counts,
            findings,
            install_command: format!("aam install {}", shell_word(&qualified)),
            qualified_name: qualified,
            preview: detail.body[..preview_end.unwrap_or(detail.body.len())].to_string(),
            preview_truncated: preview_end.is_some() || detail.truncated,
            warnings: detail
                .warnings_json
                .as_deref()
                .and_then(|w| serde_json::from_str(w).ok())
                .unwrap_or_default(),
            frontmatter: detail
                .frontmatter_json
                .as_deref()
                .and_then(|f| serde_json::from_str(f).ok()),
            files: detail
                .files
                .into_iter()
                .map(|(path, size, blake3)| InfoFile { path, size, blake3 })
                .collect(),
            name: detail.name,
            kind: detail.kind,
            source: detail.source,
            source_url: detail.source_url,
            commit: detail.commit,
            path: detail.path,
            main_file: detail.main_file,
            description: detail.description,
            platform: detail.platform,
            has_vendor_agent: detail.has_vendor_agent,
        })
    }
}

/// Quotes a word for a shell when it needs it.
pub fn shell_word(text: &str) -> String {
    let plain = text.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@+".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

// ---------------------------------------------------------------- paging

/// Where the next page starts: in the project's own artifacts, or in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cursor {
    Project { kind: ArtifactKind, path: String },
    Catalog(Keyset),
}

impl Cursor {
    fn encode(&self) -> String {
        let text = match self {
            Cursor::Project { kind, path } => format!("p\t{}\t{path}", kind.as_str()),
            Cursor::Catalog(k) => format!("c\t{}\t{}\t{}", k.source_id, k.kind.as_str(), k.path),
        };
        text.bytes().map(|b| format!("{b:02x}")).collect()
    }

    fn decode(text: &str) -> Result<Self> {
        let invalid = || invalid_cursor(text);
        if !text.len().is_multiple_of(2) || !text.is_ascii() {
            return Err(invalid());
        }
        let bytes: Vec<u8> = (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|_| invalid()))
            .collect::<Result<_>>()?;
        let decoded = String::from_utf8(bytes).map_err(|_| invalid())?;
        let (tag, rest) = decoded.split_once('\t').ok_or_else(invalid)?;
        let parts: Vec<&str> = rest.splitn(if tag == "c" { 3 } else { 2 }, '\t').collect();
        match (tag, parts.as_slice()) {
            ("p", [kind, path]) => Ok(Cursor::Project {
                kind: ArtifactKind::parse(kind).ok_or_else(invalid)?,
                path: path.to_string(),
            }),
            ("c", [source_id, kind, path]) => Ok(Cursor::Catalog(Keyset {
                source_id: source_id.parse().map_err(|_| invalid())?,
                kind: ArtifactKind::parse(kind).ok_or_else(invalid)?,
                path: path.to_string(),
            })),
            _ => Err(invalid()),
        }
    }
}

/// The cursor that continues a catalog listing right after `keyset`.
pub fn cursor_after(keyset: &Keyset) -> String {
    Cursor::Catalog(keyset.clone()).encode()
}

fn invalid_cursor(text: &str) -> Error {
    Error::invalid_argument(format!("`{text}` is not a cursor from this command"))
        .with_hint("pass the `next_cursor` of the previous page, or no cursor for the first page")
}

fn check_limit(limit: u32) -> Result<usize> {
    if (1..=1000).contains(&limit) {
        Ok(limit as usize)
    } else {
        Err(
            Error::invalid_argument(format!("`limit` must be between 1 and 1000, not {limit}"))
                .with_hint("pass a `limit` (`--limit`) from 1 to 1000; page with `cursor` (`--cursor`) set to the previous `next_cursor`"),
        )
    }
}

fn default_page() -> u32 {
    50
}

/// The ids of the named sources; an unknown name is an error listing the known ones.
fn source_ids(catalog: &Catalog, names: &[String]) -> Result<Vec<i64>> {
    let sources = catalog.list_sources()?;
    names
        .iter()
        .map(|name| {
            sources.iter().find(|s| &s.name == name).map(|s| s.id).ok_or_else(|| {
                let known: Vec<String> = sources.iter().map(|s| s.name.clone()).collect();
                Error::new(ErrorCode::SourceNotFound, format!("no source named `{name}`"))
                    .with_hint(super::registered_sources_hint(&known))
            })
        })
        .collect()
}

/// One catalog page after `after`, plus the cursor of the next page when there is one.
fn catalog_page(
    catalog: &Catalog,
    filter: &ListFilter,
    after: Option<&Keyset>,
    limit: usize,
) -> Result<(Vec<ListedArtifact>, Option<Keyset>)> {
    let mut rows = catalog.list_page(filter, after, limit + 1)?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = more.then(|| {
        rows.last().map(|r| Keyset {
            source_id: r.source_id,
            kind: r.kind,
            path: r.path.clone(),
        })
    });
    Ok((rows, next.flatten()))
}

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
    pub limit: u32,
    /// `next_cursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
}

/// An available artifact.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AvailableArtifact {
    /// Display name.
    pub name: String,
    /// Artifact type.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
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
        let mut sources: Vec<SourceGroup> = Vec::new();
        for row in rows {
            let artifact = AvailableArtifact {
                name: row.name,
                kind: row.kind,
                path: row.path,
                description: row.description,
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
        })
    }
}

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
        let project_root = project::root(&ctx.cwd);
        let packaged_root = project_root.to_string_lossy().into_owned();
        let (project_id, shadow_sources) = if with_project {
            ctx.cancel.check()?;
            let id = project::current(&mut catalog, &project_root, input.large_project)?;
            let url = format!("file://{}", project::key(&project_root));
            (Some(id), catalog.local_sources_at(&url)?)
        } else {
            (None, Vec::new())
        };
        let project_filter = ProjectFilter {
            kind: input.kind,
            packaged_root: Some(&packaged_root),
            shadow_sources: &shadow_sources,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let cursors = [
            Cursor::Project {
                kind: ArtifactKind::Skill,
                path: "skills/a b\tc".into(),
            },
            Cursor::Catalog(Keyset {
                source_id: 42,
                kind: ArtifactKind::Prompt,
                path: "prompts/é.md".into(),
            }),
        ];
        for cursor in cursors {
            assert_eq!(Cursor::decode(&cursor.encode()).unwrap(), cursor);
        }
        for bad in ["", "zz", "abc", "7009", &"x".repeat(10)] {
            assert_eq!(
                Cursor::decode(bad).unwrap_err().code(),
                ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
    }

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("o/r:skills/pdf"), "o/r:skills/pdf");
        assert_eq!(shell_word("o/r/it's"), r"'o/r/it'\''s'");
    }
}
