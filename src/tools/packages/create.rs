//! `aam_pkg_create`: build a package folder from a project's or a source's artifacts
//! (see `packages::build`).

use std::collections::BTreeSet;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DEFAULT_VERSION;
use crate::catalog::{NewPackage, PackageMember};
use crate::error::{Error, ErrorCode, Result};
use crate::packages::build::IncludedArtifact;
use crate::packages::build::{
    Built, Selection, assemble, gather_from_project, gather_from_source, not_empty, write_package_dir,
};
use crate::packages::manifest::{MANIFEST_FILE, Provenance, check_package_name};
use crate::scan::{ArtifactKind, Platform};
use crate::tools::{Context, Example, Expect, Risk, Tool};

/// Input of `aam_create_package`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgCreateInput {
    /// Project folder to take artifacts from (default: the current project).
    #[serde(default)]
    pub path: Option<String>,
    /// Take artifacts from this registered source instead of the project.
    #[serde(default)]
    pub from_source: Option<String>,
    /// Names (or paths) of the artifacts to include.
    #[serde(default)]
    pub artifacts: Vec<String>,
    /// Include every artifact found.
    #[serde(default)]
    pub all: bool,
    /// Include every artifact of these types.
    #[serde(default, rename = "type")]
    pub types: Vec<ArtifactKind>,
    /// Platforms the package is meant for.
    #[serde(default)]
    pub platforms: Vec<Platform>,
    /// Package name (default: from the project folder or the source).
    #[serde(default)]
    pub name: Option<String>,
    /// Version (default `0.1.0`).
    #[serde(default)]
    pub version: Option<String>,
    /// Description (default: generated from the contents).
    #[serde(default)]
    pub description: Option<String>,
    /// Folder to write the package to (default: `./<name>`); must not exist or be empty.
    #[serde(default)]
    pub output_dir: Option<String>,
    /// Package a project's files even when its last commit does not hold them as
    /// they are (the provenance then names no commit).
    #[serde(default)]
    pub allow_dirty: bool,
    /// Work out everything, write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Output of `aam_create_package`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PkgCreateOutput {
    /// The manifest written (or that would be, on a dry run).
    pub manifest_path: String,
    /// Package name.
    pub package_name: String,
    /// Version.
    pub version: String,
    /// What went in.
    pub artifacts_included: Vec<IncludedArtifact>,
    /// Where it came from.
    pub provenance: Provenance,
    /// Whether nothing was written.
    pub dry_run: bool,
}

/// Turns artifacts into a package.
pub struct PkgCreate;

impl Tool for PkgCreate {
    const NAME: &'static str = "aam_create_package";
    const TITLE: &'static str = "Create a package";
    const DESCRIPTION: &'static str = "Create a package from artifacts: the current project's own (detected like sources), or with `from_source` a registered source's, read from its cached git objects at the indexed commit. Copies them into the package layout, writes `aam.yaml` with provenance and blake3 checksums, and records the package so its artifacts stop being candidates. Choose with `artifacts`, `type` or `all`. Next: `aam_validate`, then pack and `aam_publish`.";
    const RISK: Risk = Risk::Write;
    const IDEMPOTENT: bool = false;
    const ERRORS: &'static [ErrorCode] = &[
        ErrorCode::SourceNotFound,
        ErrorCode::ArtifactNotFound,
        ErrorCode::ArtifactAmbiguous,
        ErrorCode::ManifestInvalid,
        ErrorCode::Conflict,
        ErrorCode::CacheCorrupted,
        ErrorCode::SourceFileTooLarge,
        ErrorCode::UncommittedChanges,
    ];
    const CONSTRAINTS: &'static [&'static str] = &[
        "the output folder must not exist or be empty",
        "the output folder is never inside AAM_HOME (but under `exports/`) or `.aam/`, and no file of the package lands in an agent's folder (a package made in `.claude` would put its skills in `.claude/skills`)",
    ];
    const EXAMPLES: &'static [Example] = &[
        Example {
            title: "a package from a source's artifact",
            input: r#"{"from_source": "sample", "artifacts": ["release-notes"], "name": "notes-kit"}"#,
            expect: Expect::Output(
                r#"{"package_name": "notes-kit", "version": "0.1.0", "artifacts_included": [{"name": "release-notes", "type": "skill"}]}"#,
            ),
        },
        Example {
            title: "an artifact the source does not have",
            input: r#"{"from_source": "sample", "artifacts": ["ghost"], "name": "ghost-kit"}"#,
            expect: Expect::Error(ErrorCode::ArtifactNotFound),
        },
    ];
    type Input = PkgCreateInput;
    type Output = PkgCreateOutput;

    fn run(ctx: &Context, input: PkgCreateInput) -> Result<PkgCreateOutput> {
        if !input.all && input.artifacts.is_empty() && input.types.is_empty() {
            return Err(Error::invalid_argument("no artifacts chosen")
                .with_hint("pass `--all`, `--type <type>` or `--artifacts <names>`"));
        }
        let mut catalog = ctx.catalog()?;
        let gathered = match &input.from_source {
            Some(source) => gather_from_source(&catalog, &ctx.home.git_cache_dir(), source, &Selection::from(&input))?,
            None => {
                let root = match &input.path {
                    Some(path) => ctx.path(path)?,
                    None => ctx.project_root(),
                };
                let root = root.canonicalize().map_err(|e| Error::io("read", &root, e))?;
                gather_from_project(
                    &root,
                    &Selection::from(&input),
                    &deployed_files(ctx, &root),
                    input.allow_dirty,
                )?
            }
        };
        let name = input.name.clone().unwrap_or_else(|| gathered.default_name.clone());
        check_package_name(&name).map_err(invalid_manifest_field)?;
        let version = input.version.clone().unwrap_or_else(|| DEFAULT_VERSION.to_string());
        let bare = name.rsplit('/').next().unwrap_or(&name).to_string();
        let output_dir = ctx.output_path(input.output_dir.as_deref().unwrap_or(&bare))?;
        let occupied = match std::fs::metadata(&output_dir) {
            Ok(meta) if meta.is_dir() => std::fs::read_dir(&output_dir).is_ok_and(|mut d| d.next().is_some()),
            // A file (or anything else) there is not replaced either.
            Ok(_) => true,
            Err(_) => false,
        };
        if occupied {
            return Err(not_empty(&output_dir));
        }

        let Built {
            manifest,
            files,
            included,
        } = assemble(
            &gathered,
            &name,
            &version,
            input.description.clone(),
            input.platforms.iter().map(|p| p.as_str().to_string()).collect(),
        )?;
        ctx.refuse_managed_files(&output_dir, files.keys().map(String::as_str).chain([MANIFEST_FILE]))?;
        // Gathering read the sources; the last point to stop before writing.
        ctx.cancel.check()?;
        let manifest_path = output_dir.join(MANIFEST_FILE);
        if !input.dry_run {
            write_package_dir(&output_dir, &manifest, &files)?;
            let manifest_json = serde_json::to_string(&manifest).unwrap_or_default();
            let provenance_json = serde_json::to_string(&gathered.provenance).ok();
            let members: Vec<PackageMember> = gathered
                .chosen
                .iter()
                .map(|c| PackageMember {
                    artifact_id: c.artifact_id,
                    project_root: gathered.project_root.as_deref(),
                    kind: c.kind,
                    name: &c.name,
                    path: &c.source_path,
                })
                .collect();
            catalog.record_package(
                &NewPackage {
                    name: &name,
                    version: &version,
                    description: Some(&manifest.description),
                    manifest_json: &manifest_json,
                    origin: if input.from_source.is_some() {
                        "source"
                    } else {
                        "project"
                    },
                    provenance_json: provenance_json.as_deref(),
                    archive_blake3: None,
                },
                &members,
            )?;
        }
        Ok(PkgCreateOutput {
            manifest_path: manifest_path.display().to_string(),
            package_name: name,
            version,
            artifacts_included: included,
            provenance: gathered.provenance,
            dry_run: input.dry_run,
        })
    }
}

impl From<&PkgCreateInput> for Selection {
    fn from(input: &PkgCreateInput) -> Self {
        Self {
            all: input.all,
            types: input.types.clone(),
            artifacts: input.artifacts.clone(),
        }
    }
}

/// A package name the manifest rules refuse, from `pkg create --name` or
/// `pkg init NAME` (or the folder's name).
pub(super) fn invalid_manifest_field(message: String) -> Error {
    Error::new(ErrorCode::ManifestInvalid, message)
        .with_hint("choose a name like `my-kit`: `aam pkg init my-kit`, or `aam pkg create --name my-kit`")
}

/// The files aam installed into the project at `root` (canonical) from other
/// packages, as its lock file records them: none when `root` is not the
/// project's root, or its lock is absent or unreadable (then logged).
fn deployed_files(ctx: &Context, root: &Path) -> BTreeSet<String> {
    if ctx.project_root().canonicalize().ok().as_deref() != Some(root) {
        return BTreeSet::new();
    }
    let Ok(roots) = ctx.install_roots(false) else {
        return BTreeSet::new();
    };
    match roots.read_lock() {
        Ok(lock) => lock
            .packages
            .values()
            .flat_map(|entry| entry.file_checksums.keys().cloned())
            .collect(),
        Err(e) => {
            tracing::warn!(
                "the lock file is unreadable ({}); installed copies may be packaged",
                e.message()
            );
            BTreeSet::new()
        }
    }
}
