//! Source tools: add, list, scan, update, diff, remove and enable-defaults.
//!
//! Reads (`list`, `scan`) are catalog queries. Writes fetch with gix, index the
//! commit, and record the result in one catalog transaction; on failure they
//! leave the catalog untouched and remove any cache state they created.

use crate::sources::short_id;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Context, Example, Expect, Risk, Tool, indexed_write, streamed_write};
use crate::catalog::{Catalog, CommitInfo, NewSource, SourceRecord};
use crate::error::{Error, ErrorBody, ErrorCode, Result};
use crate::scan::ArtifactKind;
use crate::search::IndexChange;
use crate::sources::cache;
use crate::sources::git::{Fetched, GitCache, RefWant, is_repository};
use crate::sources::index::Snapshot;
use crate::sources::spec::{SourceKind, SourceSpec, validate_name};
use crate::sources::update::{self, root_name};

// ---------------------------------------------------------------- shared types

/// Artifact counts by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CountsByType {
    /// Skills.
    pub skills: u64,
    /// Agents.
    pub agents: u64,
    /// Prompts.
    pub prompts: u64,
    /// Instructions.
    pub instructions: u64,
}

/// An artifact named in a change report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRef {
    /// Display name.
    pub name: String,
    /// Kind.
    #[serde(rename = "type")]
    pub kind: ArtifactKind,
    /// Repository path.
    pub path: String,
}

// ---------------------------------------------------------------- add

/// Input of `aam_source_add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceAddInput {
    /// `owner/repo[@ref|#sha]`, an https/ssh/git+https URL, `file:///abs/path` or a local path.
    pub spec: String,
    /// Branch, tag or full commit id to follow (default: the remote's default branch).
    #[serde(default, rename = "ref")]
    pub git_ref: Option<String>,
    /// Folder inside the repository to limit the scan to.
    #[serde(default)]
    pub path: Option<String>,
    /// Name for the source (default: `owner/repo`, `owner/repo:<folder>` when scoped, or the local folder name).
    #[serde(default)]
    pub name: Option<String>,
    /// When a source already tracks the same URL, ref and path, return it and change nothing instead of failing.
    #[serde(default)]
    pub if_missing: bool,
}

/// Output of `aam_source_add`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceAddOutput {
    /// Name of the new source (or, with `if_missing`, of the one already tracking the repository).
    pub name: String,
    /// Credential-free URL.
    pub url: String,
    /// The branch, tag or commit it follows (`null` for a registered source following the default branch that was never fetched).
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    /// Scope folder (`""` = whole repository).
    pub path: String,
    /// Commit indexed (`null` for a registered source that was never fetched).
    pub commit: Option<String>,
    /// The source was already registered (`if_missing`): nothing was fetched or changed.
    pub already_registered: bool,
    /// Artifacts found.
    pub artifact_count: u64,
    /// Artifacts found, by kind.
    pub artifacts_by_type: CountsByType,
}

/// Registers a git repository as a source and indexes it.
pub struct SourceAdd;

impl Tool for SourceAdd {
    const NAME: &'static str = "aam_source_add";
    const TITLE: &'static str = "Add a source";
    const DESCRIPTION: &'static str = "Register a git repository (GitHub shorthand, https/ssh URL or local path) as an artifact source, fetch it and index every skill, agent, prompt and instruction in it. Returns the source name, the commit indexed and counts per type. Next: `aam_source_scan` to see the artifacts, `aam_search` to find one.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const OPEN_WORLD: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::SourceUrlInvalid,
        ErrorCode::SourceAlreadyExists,
        ErrorCode::SourcePathNotFound,
        ErrorCode::GitCloneFailed,
        ErrorCode::SourceFileTooLarge,
        ErrorCode::GitAuthFailed,
        ErrorCode::GitRefNotFound,
        ErrorCode::NetworkError,
        ErrorCode::TlsCertificate,
        ErrorCode::Timeout,
        ErrorCode::Conflict,
        ErrorCode::Forbidden,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "credentials in URLs are never stored",
        "local paths must be inside the project or AAM_HOME when called by a machine front end",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a local repository scoped to a folder",
            input: r#"{"spec": "./sample-repo", "path": "skills", "name": "sample-skills"}"#,
            expect: Expect::Output(
                r#"{"name": "sample-skills", "path": "skills", "artifact_count": 3, "artifacts_by_type": {"skills": 3}}"#,
            ),
        },
        Example {
            title: "a name that is taken",
            input: r#"{"spec": "./sample-repo", "name": "sample"}"#,
            expect: Expect::Error(ErrorCode::SourceAlreadyExists),
        },
        Example {
            title: "a transport aam refuses",
            input: r#"{"spec": "http://example.com/o/r.git"}"#,
            expect: Expect::Error(ErrorCode::SourceUrlInvalid),
        },
        Example {
            title: "a repository already tracked, accepted as is",
            input: r#"{"spec": "./sample-repo", "name": "again", "if_missing": true}"#,
            expect: Expect::Output(r#"{"name": "sample", "already_registered": true, "artifact_count": 8}"#),
        },
    ];
    type Input = SourceAddInput;
    type Output = SourceAddOutput;

    fn run(ctx: &Context, input: SourceAddInput) -> Result<SourceAddOutput> {
        let spec = SourceSpec::parse(&input.spec, &ctx.cwd)?
            .with_overrides(input.git_ref.as_deref(), input.path.as_deref())?;
        if spec.kind == SourceKind::Local {
            ctx.check_path(Path::new(&spec.repo_path), &input.spec)?;
        }
        if spec.had_credentials {
            tracing::warn!(
                "credentials in the URL were ignored and not stored; set a token (`GH_TOKEN` for github.com, `AAM_GIT_TOKEN_<HOST>` elsewhere) or use an ssh URL for private repositories"
            );
        }
        let explicit_name = input.name.is_some();
        let name = input.name.unwrap_or_else(|| spec.default_name());
        validate_name(&name)?;
        let mut catalog = ctx.catalog()?;
        if let Some(existing) = same_repository(&catalog, &spec)? {
            if input.if_missing {
                return already_registered(&catalog, existing);
            }
            if existing.name == name {
                return Err(Error::new(
                    ErrorCode::SourceAlreadyExists,
                    format!("a source named `{name}` already exists"),
                )
                .with_hint(format!(
                    "run `aam source update {name}` to fetch it again, or pass `--if-missing` (`if_missing`) to accept it as is"
                )));
            }
            // A second name for the same repository is deliberate only when named.
            if explicit_name {
                tracing::warn!(
                    "source `{}` already tracks {}{}; `{name}` will be a second copy of it",
                    existing.name,
                    existing.url,
                    describe_scope(&existing)
                );
            } else {
                let message = format!(
                    "source `{}` already tracks {}{}",
                    existing.name,
                    existing.url,
                    describe_scope(&existing)
                );
                return Err(Error::new(ErrorCode::SourceAlreadyExists, message).with_hint(format!(
                    "use `{}` (`aam source update {}` fetches it again), pass `--if-missing` (`if_missing`) to accept it as is, or `--name` to track it twice",
                    existing.name, existing.name
                )));
            }
        }
        if catalog.find_source(&name)?.is_some() {
            return Err(Error::new(
                ErrorCode::SourceAlreadyExists,
                format!("a source named `{name}` already exists"),
            )
            .with_hint(format!(
                "run `aam source update {name}` to fetch it again, or pass `--name` to add it under another name"
            )));
        }
        if spec.kind == SourceKind::Local {
            ensure_git_repository(Path::new(&spec.repo_path))?;
        }
        let limits = ctx.fetch_limits()?;
        let cache_dir = ctx.home.git_cache_dir().join(spec.cache_key());
        let (cache, created) = GitCache::open_or_create(&cache_dir)?;
        let head = cache::head_ref(&name);
        let mut cleanup = cache::Cleanup::new(ctx.home.root(), &cache, &cache_dir, created, vec![head.clone()]);
        ctx.progress.start(&format!("fetching {}", spec.url), None);
        let fetched = cache.fetch(
            &spec.url,
            &RefWant::from_ref(spec.git_ref.as_deref()),
            &head,
            created,
            limits,
        );
        ctx.progress.finish();
        let fetched = fetched?;
        let (root_tree, committed_at) = cache.commit_tree(fetched.commit)?;
        let snapshot = Snapshot::new(&cache, root_tree, &spec.scope, &root_name(&spec.url, &spec.scope));
        let Some(scope_tree) = snapshot.scope_tree()? else {
            return Err(path_not_found(&spec.scope, &fetched));
        };
        let detection = snapshot.detect(std::slice::from_ref(&spec.scope))?;
        let commit = CommitInfo {
            sha: fetched.commit.to_string(),
            tree_sha: scope_tree.to_string(),
            committed_at,
        };
        let new_source = NewSource {
            name: &name,
            kind: spec.kind.as_str(),
            url: &spec.url,
            cache_key: &spec.cache_key(),
            ref_name: spec.git_ref.as_deref(),
            scope_path: &spec.scope,
            is_default: false,
        };
        let outcome = streamed_write(ctx, &mut catalog, |catalog, on_row| {
            let (_, outcome) = std::thread::scope(|scope| {
                let artifacts = snapshot.read_on_thread(scope, &detection, ctx.progress.as_ref(), &ctx.cancel);
                catalog.add_indexed_source(&new_source, Some(&fetched.resolved_ref), &commit, artifacts, on_row)
            })?;
            let change = IndexChange::Artifacts {
                written: outcome.written.clone(),
                removed: Vec::new(),
            };
            let generation = outcome.generation;
            Ok((outcome, change, generation))
        });
        ctx.progress.finish();
        let outcome = outcome?;
        cleanup.disarm();
        let [skills, agents, prompts, instructions] = outcome.added_by_kind;
        let counts = CountsByType {
            skills,
            agents,
            prompts,
            instructions,
        };
        Ok(SourceAddOutput {
            name,
            url: spec.url,
            git_ref: Some(fetched.resolved_ref),
            path: spec.scope,
            commit: Some(commit.sha),
            already_registered: false,
            artifact_count: skills + agents + prompts + instructions,
            artifacts_by_type: counts,
        })
    }
}

/// The registered source that fetches the same URL at the same ref and scope as
/// `spec`, if any. A source following the default branch matches a request for the
/// branch it resolved to.
fn same_repository(catalog: &Catalog, spec: &SourceSpec) -> Result<Option<SourceRecord>> {
    Ok(catalog.list_sources()?.into_iter().find(|s| {
        let same_ref = s.ref_name == spec.git_ref
            || (s.ref_name.is_none() && spec.git_ref.is_some() && s.resolved_ref == spec.git_ref);
        s.url == spec.url && s.scope_path == spec.scope && same_ref
    }))
}

/// ` (ref `r`, path `p`)` for a message about `source`.
fn describe_scope(source: &SourceRecord) -> String {
    let mut parts = Vec::new();
    if let Some(r) = source.ref_name.as_ref().or(source.resolved_ref.as_ref()) {
        parts.push(format!("ref `{r}`"));
    }
    if !source.scope_path.is_empty() {
        parts.push(format!("path `{}`", source.scope_path));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The output of `aam_source_add` for a source that is already registered.
fn already_registered(catalog: &Catalog, existing: SourceRecord) -> Result<SourceAddOutput> {
    let [skills, agents, prompts, instructions] = catalog.source_counts_by_kind(existing.id)?;
    Ok(SourceAddOutput {
        git_ref: existing.ref_name.or(existing.resolved_ref),
        name: existing.name,
        url: existing.url,
        path: existing.scope_path,
        commit: existing.head_commit,
        already_registered: true,
        artifact_count: skills + agents + prompts + instructions,
        artifacts_by_type: CountsByType {
            skills,
            agents,
            prompts,
            instructions,
        },
    })
}

// ---------------------------------------------------------------- list

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
    pub kind: String,
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

// ---------------------------------------------------------------- scan

/// Input of `aam_source_scan`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceScanInput {
    /// Source name.
    pub name: String,
    /// Only artifacts of this kind.
    #[serde(default, rename = "type")]
    pub kind: Option<ArtifactKind>,
}

/// One artifact in a scan.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScannedArtifact {
    /// Display name.
    pub name: String,
    /// Repository path: the folder of a skill, the file otherwise.
    pub path: String,
    /// One-line description.
    pub description: Option<String>,
    /// A skill with companion vendor agent metadata (`agents/*.yaml`).
    pub has_vendor_agent: bool,
}

/// Artifacts grouped by kind.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactsByType {
    /// Skills.
    pub skills: Vec<ScannedArtifact>,
    /// Agents.
    pub agents: Vec<ScannedArtifact>,
    /// Prompts.
    pub prompts: Vec<ScannedArtifact>,
    /// Instructions.
    pub instructions: Vec<ScannedArtifact>,
}

/// Output of `aam_source_scan`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceScanOutput {
    /// Source name.
    pub source_name: String,
    /// Commit the artifacts were indexed at.
    pub commit: String,
    /// Scope folder (`""` = whole repository).
    pub scan_path: String,
    /// Artifacts by kind, each sorted by path.
    pub artifacts: ArtifactsByType,
    /// Number of artifacts listed.
    pub total: u64,
}

/// Lists a source's indexed artifacts.
pub struct SourceScan;

impl Tool for SourceScan {
    const NAME: &'static str = "aam_source_scan";
    const TITLE: &'static str = "Scan a source";
    const DESCRIPTION: &'static str = "List the artifacts indexed from one source, grouped by type (skills, agents, prompts, instructions) with path, description and whether a skill has vendor agent metadata. Answered from the catalog at the source's indexed commit; no network. Next: `aam_info` for one artifact, `aam_source_update` to refresh.";
    const RISK: Risk = Risk::Read;
    const IDEMPOTENT: bool = true;
    const ERRORS: &'static [ErrorCode] = &[ErrorCode::SourceNotFound, ErrorCode::SourceNotIndexed];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "one source's skills",
        input: r#"{"name": "sample", "type": "skill"}"#,
        expect: Expect::Output(
            r#"{"source_name": "sample", "total": 3, "artifacts": {"skills": [{"name": "changelog-audit"}, {"name": "code-review"}, {"name": "release-notes"}]}}"#,
        ),
    }];
    type Input = SourceScanInput;
    type Output = SourceScanOutput;

    fn run(ctx: &Context, input: SourceScanInput) -> Result<SourceScanOutput> {
        let catalog = ctx.catalog()?;
        let source = catalog.source_named(&input.name)?;
        let Some(commit) = source.head_commit.clone() else {
            return Err(crate::sources::not_indexed(&source.name));
        };
        let mut artifacts = ArtifactsByType::default();
        let rows = catalog.scan_source(source.id, input.kind)?;
        let total = rows.len() as u64;
        for row in rows {
            let group = match row.kind {
                ArtifactKind::Skill => &mut artifacts.skills,
                ArtifactKind::Agent => &mut artifacts.agents,
                ArtifactKind::Prompt => &mut artifacts.prompts,
                ArtifactKind::Instruction => &mut artifacts.instructions,
            };
            group.push(ScannedArtifact {
                name: row.name,
                path: row.path,
                description: row.description,
                has_vendor_agent: row.has_vendor_agent,
            });
        }
        Ok(SourceScanOutput {
            source_name: source.name,
            commit,
            scan_path: source.scope_path,
            artifacts,
            total,
        })
    }
}

// ---------------------------------------------------------------- update

/// Input of `aam_source_update`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdateInput {
    /// Source to update; omit (or set `all`) to update every source.
    #[serde(default)]
    pub name: Option<String>,
    /// Update every source, going on past failures.
    #[serde(default)]
    pub all: bool,
    /// Fetch and report what would change without changing the catalog.
    #[serde(default)]
    pub dry_run: bool,
}

/// How one source's update went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UpdateStatus {
    /// Moved to a new commit.
    Updated,
    /// Already at the newest commit.
    UpToDate,
    /// Dry run: would move to a new commit.
    WouldUpdate,
    /// Failed; see `error`.
    Failed,
}

/// One source's update report.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdateReport {
    /// Source name.
    pub name: String,
    /// Commit before the update (`null` if never indexed).
    pub old_commit: Option<String>,
    /// Commit after the update (`null` when it failed).
    pub new_commit: Option<String>,
    /// Artifacts that appeared.
    pub new_count: u64,
    /// Artifacts whose files changed.
    pub modified_count: u64,
    /// Artifacts that disappeared.
    pub removed_count: u64,
    /// Outcome.
    pub status: UpdateStatus,
    /// A local source found up to date whose work tree has files not committed at
    /// its `HEAD` (only commits are indexed: commit them, then update again).
    pub uncommitted_changes: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorBody>,
}

/// Output of `aam_source_update`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceUpdateOutput {
    /// One report per source.
    pub sources: Vec<SourceUpdateReport>,
    /// New artifacts across sources.
    pub total_new: u64,
    /// Modified artifacts across sources.
    pub total_modified: u64,
    /// Removed artifacts across sources.
    pub total_removed: u64,
}

/// Fetches sources and records what changed.
pub struct SourceUpdate;

impl Tool for SourceUpdate {
    const NAME: &'static str = "aam_source_update";
    const TITLE: &'static str = "Update sources";
    const DESCRIPTION: &'static str = "Fetch one source (or all) and record the new commit: only the files that changed are re-read, and one change event is stored per new, modified or removed artifact. Returns per-source counts and status; with `all`, a failing source is reported and the others still update. Also repairs a missing or damaged cache. Use `dry_run` (or `aam_source_diff`) to preview.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const OPEN_WORLD: bool = true;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::SourceNotFound,
        ErrorCode::GitFetchFailed,
        ErrorCode::SourceFileTooLarge,
        ErrorCode::GitAuthFailed,
        ErrorCode::GitRefNotFound,
        ErrorCode::NetworkError,
        ErrorCode::TlsCertificate,
        ErrorCode::Timeout,
        ErrorCode::Conflict,
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a source already at its upstream commit",
            input: r#"{"name": "sample"}"#,
            expect: Expect::Output(r#"{"sources": [{"name": "sample", "status": "up_to_date", "new_count": 0}]}"#),
        },
        Example {
            title: "an unknown source",
            input: r#"{"name": "ghost"}"#,
            expect: Expect::Error(ErrorCode::SourceNotFound),
        },
    ];
    type Input = SourceUpdateInput;
    type Output = SourceUpdateOutput;

    fn run(ctx: &Context, input: SourceUpdateInput) -> Result<SourceUpdateOutput> {
        let mut catalog = ctx.catalog()?;
        let targets = match (&input.name, input.all) {
            (Some(_), true) => {
                return Err(Error::invalid_argument("give a source `name` or `all`, not both"));
            }
            (Some(name), false) => vec![catalog.source_named(name)?],
            (None, _) => catalog.list_sources()?,
        };
        let single = input.name.is_some();
        let mut reports = Vec::with_capacity(targets.len());
        for source in targets {
            match update_one(ctx, &mut catalog, &source, input.dry_run) {
                Ok(report) => reports.push(report),
                // A cancelled call stops here: the sources not yet updated stay as they were.
                Err(e) if single || e.code() == ErrorCode::Cancelled => return Err(e),
                Err(e) => {
                    tracing::warn!("updating `{}` failed: {e}", source.name);
                    reports.push(SourceUpdateReport {
                        name: source.name.clone(),
                        old_commit: source.head_commit.clone(),
                        new_commit: None,
                        new_count: 0,
                        modified_count: 0,
                        removed_count: 0,
                        status: UpdateStatus::Failed,
                        uncommitted_changes: false,
                        error: Some(e.to_body()),
                    });
                }
            }
        }
        Ok(SourceUpdateOutput {
            total_new: reports.iter().map(|r| r.new_count).sum(),
            total_modified: reports.iter().map(|r| r.modified_count).sum(),
            total_removed: reports.iter().map(|r| r.removed_count).sum(),
            sources: reports,
        })
    }
}

fn update_one(
    ctx: &Context,
    catalog: &mut Catalog,
    source: &SourceRecord,
    dry_run: bool,
) -> Result<SourceUpdateReport> {
    let limits = ctx.fetch_limits()?;
    let (cache, fresh) = cache::open_repairing(&ctx.home.git_cache_dir(), source)?;
    let target = if dry_run {
        cache::pending_ref(&source.name)
    } else {
        cache::head_ref(&source.name)
    };
    let mut cleanup = cache::Cleanup::new(
        ctx.home.root(),
        &cache,
        &cache::dir(&ctx.home.git_cache_dir(), source),
        fresh,
        Vec::new(),
    );
    let plan = update::plan(
        catalog,
        &cache,
        source,
        &target,
        limits,
        ctx.progress.as_ref(),
        &ctx.cancel,
    );
    if dry_run {
        cache.delete_ref(&target)?;
    }
    let plan = plan?;
    cleanup.disarm();
    let status = match (&plan.changes, dry_run) {
        (None, false) => {
            catalog.touch_fetched(source.id, Some(&plan.fetched.resolved_ref))?;
            UpdateStatus::UpToDate
        }
        (None, true) => UpdateStatus::UpToDate,
        (Some(_), true) => UpdateStatus::WouldUpdate,
        (Some(changes), false) => {
            indexed_write(ctx, catalog, |catalog| {
                let outcome = catalog.record_update(
                    source.id,
                    source.head_commit.as_deref(),
                    Some(&plan.fetched.resolved_ref),
                    &plan.commit,
                    changes,
                )?;
                let change = IndexChange::Artifacts {
                    written: outcome.written,
                    removed: outcome.removed,
                };
                Ok(((), change, outcome.generation))
            })?;
            UpdateStatus::Updated
        }
    };
    let changes = plan.changes.as_ref();
    Ok(SourceUpdateReport {
        name: source.name.clone(),
        old_commit: source.head_commit.clone(),
        new_commit: Some(plan.commit.sha.clone()),
        new_count: changes.map_or(0, |c| c.added.len() as u64),
        modified_count: changes.map_or(0, |c| c.modified.len() as u64),
        removed_count: changes.map_or(0, |c| c.removed.len() as u64),
        status,
        // The hint answers "why did my edit not show up?": only asked when nothing moved.
        uncommitted_changes: status == UpdateStatus::UpToDate
            && source.kind == SourceKind::Local.as_str()
            && source.url.strip_prefix("file://").is_some_and(|path| {
                crate::sources::git::uncommitted_changes(Path::new(path), &source.scope_path) == Some(true)
            }),
        error: None,
    })
}

// ---------------------------------------------------------------- diff

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
        let limits = ctx.fetch_limits()?;
        let cache_dir = cache::dir(&ctx.home.git_cache_dir(), &source);
        let (cache, created) = match source.head_commit {
            Some(_) => (
                GitCache::open(&cache_dir)
                    .map_err(|e| e.with_hint(format!("run `aam source update {}` to fetch it again", source.name)))?,
                false,
            ),
            None => GitCache::open_or_create(&cache_dir)?,
        };
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
        Ok(SourceDiffOutput {
            source_name: source.name,
            old_commit: source.head_commit,
            new_commit: plan.commit.sha,
            has_changes: !(new_artifacts.is_empty() && modified_artifacts.is_empty() && removed_artifacts.is_empty()),
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

// ---------------------------------------------------------------- remove

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
        indexed_write(ctx, &mut catalog, |catalog| {
            let generation = catalog.remove_source(source.id)?;
            Ok(((), IndexChange::SourceRemoved(source.id), generation))
        })?;
        let dir = cache::dir(&ctx.home.git_cache_dir(), &source);
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
        })
    }
}

// ---------------------------------------------------------------- enable-defaults

/// The built-in default sources: name, GitHub repository, scope.
pub const DEFAULT_SOURCES: [(&str, &str, &str); 4] = [
    ("github/awesome-copilot", "github/awesome-copilot", "skills"),
    ("openai/skills:.curated", "openai/skills", "skills/.curated"),
    ("anthropics/skills", "anthropics/skills", "skills"),
    ("microsoft/skills", "microsoft/skills", ".github/skills"),
];

/// Input of `aam_source_enable_defaults`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceEnableDefaultsInput {
    /// Also re-add defaults the user removed earlier.
    #[serde(default)]
    pub restore: bool,
}

/// Output of `aam_source_enable_defaults`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceEnableDefaultsOutput {
    /// Defaults registered now (not fetched yet).
    pub added: Vec<String>,
    /// Defaults already registered, by the name of the source tracking them (a source with the same URL, ref and path counts).
    pub already_present: Vec<String>,
    /// Defaults left out because the user removed them (pass `restore` to re-add).
    pub dismissed: Vec<String>,
}

/// Registers the built-in default sources.
pub struct SourceEnableDefaults;

impl Tool for SourceEnableDefaults {
    const NAME: &'static str = "aam_source_enable_defaults";
    const TITLE: &'static str = "Enable default sources";
    const DESCRIPTION: &'static str = "Register the built-in default sources (github/awesome-copilot, openai/skills:.curated, anthropics/skills, microsoft/skills) without fetching them. Defaults the user removed are skipped unless `restore` is set. Next: `aam_source_update` with `all` to fetch and index them.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = true;
    const CONSTRAINTS: &'static [&'static str] = &["registers without fetching; `aam_source_update` fetches"];
    const EXAMPLES: &'static [Example] = &[Example {
        title: "register the default sources",
        input: r#"{}"#,
        expect: Expect::Output(
            r#"{"added": ["github/awesome-copilot", "openai/skills:.curated", "anthropics/skills", "microsoft/skills"]}"#,
        ),
    }];
    type Input = SourceEnableDefaultsInput;
    type Output = SourceEnableDefaultsOutput;

    fn run(ctx: &Context, input: SourceEnableDefaultsInput) -> Result<SourceEnableDefaultsOutput> {
        let mut catalog = ctx.catalog()?;
        let dismissed_names = catalog.dismissed_defaults()?;
        let mut out = SourceEnableDefaultsOutput {
            added: Vec::new(),
            already_present: Vec::new(),
            dismissed: Vec::new(),
        };
        for (name, repo, scope) in DEFAULT_SOURCES {
            let spec = SourceSpec::parse(repo, &ctx.cwd)?.with_overrides(None, Some(scope))?;
            // The same repository, ref and folder under another name counts as present.
            if let Some(existing) = same_repository(&catalog, &spec)? {
                out.already_present.push(existing.name);
                continue;
            }
            if catalog.find_source(name)?.is_some() {
                out.already_present.push(name.to_string());
                continue;
            }
            if dismissed_names.iter().any(|d| d == name) && !input.restore {
                out.dismissed.push(name.to_string());
                continue;
            }
            catalog.insert_unfetched_source(&NewSource {
                name,
                kind: spec.kind.as_str(),
                url: &spec.url,
                cache_key: &spec.cache_key(),
                ref_name: None,
                scope_path: &spec.scope,
                is_default: true,
            })?;
            out.added.push(name.to_string());
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------- helpers

fn path_not_found(scope: &str, fetched: &Fetched) -> Error {
    Error::new(
        ErrorCode::SourcePathNotFound,
        format!(
            "`{scope}` is not a folder at `{}` ({})",
            fetched.resolved_ref,
            short_id(&fetched.commit.to_string())
        ),
    )
    .with_hint("check the folder name; paths are case-sensitive and relative to the repository root")
}

fn ensure_git_repository(path: &Path) -> Result<()> {
    if !is_repository(path) {
        return Err(Error::new(
            ErrorCode::SourceUrlInvalid,
            format!("`{}` is not a git repository", path.display()),
        )
        .with_hint("pass the root folder of a git repository (one with a `.git` folder), or run `git init` there"));
    }
    Ok(())
}
