//! `aam_source_add`: register a repository (or a local folder), fetch it and index its
//! artifacts in one catalog transaction.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::CountsByType;
use crate::catalog::{Catalog, CommitInfo, NewSource, SourceRecord};
use crate::error::{Error, ErrorCode, Result};
use crate::search::IndexChange;
use crate::sources::cache;
use crate::sources::defaults::same_repository;
use crate::sources::git::{GitCache, RefWant};
use crate::sources::index::Snapshot;
use crate::sources::spec::{SourceKind, SourceSpec, validate_name};
use crate::sources::update::root_name;
use crate::sources::{ensure_git_repository, path_not_found};
use crate::tools::{Context, Example, Expect, Risk, Tool, streamed_write};

/// Input of `aam_source_add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceAddInput {
    /// `owner/repo[@ref|#sha]`, an https/ssh/git+https URL, `file:///abs/path` or a local path.
    pub spec: String,
    /// Branch, tag or commit id (full, or abbreviated when unambiguous) to follow (default: the remote's default branch).
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
        ErrorCode::GitAuthFailed,
        ErrorCode::GitRefNotFound,
        ErrorCode::NetworkError,
        ErrorCode::TlsCertificate,
        ErrorCode::Timeout,
        ErrorCode::Conflict,
        ErrorCode::Forbidden,
        ErrorCode::SourceFileTooLarge,
        ErrorCode::CacheCorrupted,
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
        SourceSpec::refuse_ambiguous_shorthand(&input.spec, &ctx.cwd)?;
        let spec = SourceSpec::parse(&input.spec, &ctx.cwd)?
            .with_overrides(input.git_ref.as_deref(), input.path.as_deref())?;
        if spec.kind == SourceKind::Local {
            ctx.check_repository(Path::new(&spec.repo_path), &input.spec)?;
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
        if let Some(existing) = catalog.find_source(&name)? {
            // The same repository and folder under this name, at the same ref
            // or at a default branch not resolved yet (a default never
            // fetched): nothing to add.
            let unresolved = existing.ref_name.is_none() && existing.head_commit.is_none();
            let same_ref = existing.ref_name == spec.git_ref || unresolved;
            if input.if_missing && existing.url == spec.url && existing.scope_path == spec.scope && same_ref {
                return already_registered(&catalog, existing);
            }
            let hint = match existing.url == spec.url {
                true if input.if_missing => format!(
                    "`{name}` tracks it at another ref or folder ({}{}); pass `--name` to track this one too",
                    existing.ref_name.as_deref().unwrap_or("the default branch"),
                    match existing.scope_path.as_str() {
                        "" => String::new(),
                        scope => format!(", path `{scope}`"),
                    }
                ),
                true => format!(
                    "run `aam source update {name}` to fetch it again, pass `--if-missing` (`if_missing`) to accept it as is, or `--name` to track it twice"
                ),
                false => {
                    "pass `--name` to add this repository under another name (`aam source list` shows the names in use)"
                        .to_string()
                }
            };
            return Err(Error::new(
                ErrorCode::SourceAlreadyExists,
                format!(
                    "a source named `{name}` already exists, tracking {}",
                    crate::sources::spec::redact(&existing.url)
                ),
            )
            .with_hint(hint));
        }
        if spec.kind == SourceKind::Local {
            ensure_git_repository(Path::new(&spec.repo_path), |dir| ctx.check_path(dir, "").is_ok())?;
        }
        let limits = ctx.fetch_limits()?;
        let cache_dir = ctx.home.git_cache_dir().join(spec.cache_key());
        let _cache_lock = cache::lock(&ctx.home.locks_dir(), &ctx.home.git_cache_dir(), &spec.cache_key())?;
        let (cache, created) = GitCache::open_or_create(&cache_dir)?;
        cache::forget_unregistered(&cache, &catalog, &spec.cache_key());
        // What is read must lie inside too, not only the path checked before.
        let cache = cache.reading_local_within(ctx.sandbox_folders());
        let head = cache::head_ref(&name);
        let mut cleanup = cache::Cleanup::new(ctx.home.root(), &cache, &cache_dir, created, vec![head.clone()]);
        ctx.progress.start(&format!("fetching {}", spec.url), None);
        let fetched = cache.fetch(
            &spec.url,
            &RefWant::from_ref(spec.git_ref.as_deref()),
            &head,
            created,
            limits,
            &ctx.cancel,
        );
        ctx.progress.finish();
        let fetched = fetched?;
        let (root_tree, committed_at) = cache.commit_tree(fetched.commit)?;
        let snapshot = Snapshot::new(&cache, root_tree, &spec.scope, &root_name(&spec.url, &spec.scope));
        let Some(scope_tree) = snapshot.scope_tree()? else {
            return Err(path_not_found(&spec.scope, &fetched));
        };
        let detection = snapshot.detect_apart(std::slice::from_ref(&spec.scope))?;
        let commit = CommitInfo {
            sha: fetched.commit.to_string(),
            tree_sha: scope_tree.to_string(),
            committed_at,
        };
        let new_source = NewSource {
            name: &name,
            kind: spec.kind,
            url: &spec.url,
            cache_key: &spec.cache_key(),
            ref_name: spec.git_ref.as_deref(),
            scope_path: &spec.scope,
            is_default: false,
        };
        let outcome = streamed_write(ctx, &mut catalog, &[], |catalog, on_row| {
            let (_, outcome) = std::thread::scope(|scope| {
                let artifacts = snapshot.read_on_thread(scope, detection, ctx.progress.as_ref(), &ctx.cancel);
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
